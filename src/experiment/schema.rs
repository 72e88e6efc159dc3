//! The experiment file's TOML as read: every table and key with where it was written, before
//! any value is checked (`deny_unknown_fields` catches a misspelt key at its line).

use std::path::PathBuf;

use serde::Deserialize;
use toml::{Spanned, Value};

use crate::grid::GridTable;
use crate::input::corpus::CorpusFormat;
use crate::input::golden::GoldenFormat;
use crate::vocab::Prefer;
use crate::vocab::{Metric, MissingAcl, Unit};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExperiment {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) unit: Unit,
    pub(super) k: Spanned<Vec<usize>>,
    /// Context budgets in cost-tokenizer tokens (SPEC §3).
    #[serde(default)]
    pub(super) budget: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub(super) metrics: Option<Vec<Metric>>,
    #[serde(default)]
    pub(super) seed: u64,
    #[serde(default)]
    pub(super) reserved_fraction: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) select: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) prefer: Prefer,
    /// Equivalence margin on the decision metric's scale (SPEC §7).
    #[serde(default)]
    pub(super) margin: Option<Spanned<f64>>,
    /// Constraints a cell must meet on tuning to be eligible (SPEC §7).
    #[serde(default)]
    pub(super) require: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) latency_cases: Option<usize>,
    #[serde(default)]
    pub(super) filter: Option<Spanned<Value>>,
    #[serde(default)]
    pub(super) permissions: RawPermissions,
    #[serde(default)]
    pub(super) engines: std::collections::BTreeMap<String, Spanned<RawServer>>,
    #[serde(default)]
    pub(super) cost: RawCost,
    pub(super) corpus: RawCorpus,
    pub(super) golden: RawGolden,
    /// Absent only when every retriever reads a served index (whose rows are its chunks).
    #[serde(default)]
    pub(super) chunkers: Vec<GridTable>,
    pub(super) retrievers: Vec<GridTable>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCost {
    #[serde(default)]
    pub(super) embedding_usd_per_1m_tokens: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) llm_usd_per_1m_input_tokens: Option<Spanned<f64>>,
    /// The tokenizer context tokens are counted in: `o200k_base` (default), `cl100k_base`, an
    /// LLM model id, `"words"`, or an installed model id.
    #[serde(default)]
    pub(super) tokenizer: Option<String>,
}

/// `[engines.NAME]`: the user's own server of engine NAME instead of a private one: its `url`
/// and the keys its engine declares (the variable holding its login secret), each with where it
/// was written.
pub(super) type RawServer = std::collections::BTreeMap<Spanned<String>, Spanned<toml::Value>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPermissions {
    /// Groups of the asking user for cases that name none.
    #[serde(default)]
    pub(super) default_groups: Vec<String>,
    /// The one document field that holds its access list (default `acl`).
    #[serde(default)]
    pub(super) acl_key: Option<Spanned<String>>,
    /// Synthetic ACLs for corpora without any: each document in one of this many groups.
    #[serde(default)]
    pub(super) synthetic_groups: Option<Spanned<usize>>,
    /// What a document without an ACL means.
    #[serde(default)]
    pub(super) missing_acl: MissingAcl,
    #[serde(default)]
    pub(super) synthetic_seed: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCorpus {
    pub(super) path: Spanned<PathBuf>,
    #[serde(default)]
    pub(super) format: Option<CorpusFormat>,
    /// Fields that look like access lists but are plain metadata in this corpus.
    #[serde(default)]
    pub(super) not_access: Vec<String>,
    /// Files of a folder left out on purpose (globs), each listed as excluded.
    #[serde(default)]
    pub(super) exclude: Vec<Spanned<String>>,
    /// The largest document a folder may hold, in MiB (default 64); larger ones are skipped.
    #[serde(default)]
    pub(super) max_document_mib: Option<Spanned<u64>>,
    /// `published` (default): what the site does not publish is left out; `all` keeps it.
    #[serde(default)]
    pub(super) publish: Option<Spanned<String>>,
    /// Pages kept although the site does not publish them on their own (globs, as `exclude`).
    #[serde(default)]
    pub(super) publish_also: Vec<Spanned<String>>,
    /// Metadata keys indexed with a document's title (default: description, summary).
    #[serde(default)]
    pub(super) index_meta: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGolden {
    pub(super) path: Spanned<PathBuf>,
    #[serde(default)]
    pub(super) format: Option<GoldenFormat>,
    #[serde(default)]
    pub(super) tuning: Vec<String>,
    #[serde(default)]
    pub(super) reserved: Vec<String>,
    /// Where judgments are kept (default: `judgments.jsonl` beside the golden set).
    #[serde(default)]
    pub(super) judgments: Option<PathBuf>,
    /// How complete the labels are: `pooled` or `sparse` (default: sparse for BEIR).
    #[serde(default)]
    pub(super) labels: Option<crate::input::golden::Labels>,
    /// The chat model whose suggested grades (`judge --suggest`) the decision leans on, by PPI.
    #[serde(default)]
    pub(super) suggestions: Option<Spanned<String>>,
}
