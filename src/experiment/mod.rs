//! The experiment file: TOML schema, validation with file/line/column, grid expansion.
//!
//! Grid sections (`[[chunkers]]`, `[[retrievers]]`) take a `kind` and parameters; any
//! parameter given as an array is a grid axis, and each entry expands to the cartesian
//! product of its axes. Paths are relative to the experiment file.

mod schema;
mod sections;
pub mod shard;
mod validation;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use crate::catalog::fusion::Fusion;
pub use crate::catalog::RetrieverSpec;
use crate::engine::registry::ServerSpec;
use crate::error::{Error, Location, Result};
use crate::input::access_key::AccessKey;
use crate::input::corpus::{CorpusFormat, FolderRules};
use crate::input::golden::GoldenSource;
use crate::vocab::{
    EngineKind, Filter, Metric, MetricAt, MissingAcl, Prices, SyntheticAcl, Unit, DEFAULT_COST_TOKENIZER,
};

use self::schema::*;
use self::validation::retriever_cell_from;
use crate::chunkers::ChunkerSpec;
use crate::grid::expand_all;

/// The largest cut-off or budget an experiment may ask for: every input has bounded cost.
pub const MAX_CUTOFF: usize = 1_000_000;

/// Default number of cases in each cell's timed latency pass.
pub const LATENCY_CASES: usize = 100;

/// One cell of the grid: everything that determines one ranking per case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// `c01`, `c02`, … in grid order.
    pub id: String,
    pub chunker: ChunkerSpec,
    pub retriever: RetrieverSpec,
    pub filter: Filter,
    /// The score floor below which a case abstains (SPEC §4), if any.
    pub abstain: Option<Abstain>,
}

/// A cell's abstention floor: fixed, or calibrated on the tuning split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Abstain {
    Below(f64),
    Calibrate,
}

impl Serialize for Abstain {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Abstain::Below(floor) => s.serialize_f64(*floor),
            Abstain::Calibrate => s.serialize_str("calibrate"),
        }
    }
}

impl fmt::Display for Abstain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Abstain::Below(floor) => write!(f, "{floor}"),
            Abstain::Calibrate => write!(f, "calibrate"),
        }
    }
}

impl Cell {
    /// What the cell's indexes are built from (query-time parameters left out): cells with
    /// equal identities share their indexes.
    pub fn index_identity(&self) -> (String, Vec<crate::catalog::IndexIdentity>) {
        (self.chunker.to_string(), self.retriever.index_identity())
    }

    /// The embedding model the cell needs, if any.
    pub fn model(&self) -> Option<&str> {
        self.retriever.model()
    }

    pub fn label(&self) -> String {
        let mut label = format!("{} {}", self.chunker, self.retriever);
        if self.filter != Filter::None {
            label.push_str(&format!(" filter={}", self.filter));
        }
        if let Some(a) = self.abstain {
            label.push_str(&format!(" abstain_below={a}"));
        }
        label
    }

    /// Named configuration values, for the matrix's configuration columns.
    pub fn config(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let c = &self.chunker;
        let (kind, size, overlap) = c.kind.columns();
        let opt = |v: Option<usize>| v.map(|v| v.to_string()).unwrap_or_default();
        out.push(("chunker", kind.to_string()));
        out.push(("chunk_size", opt(size)));
        out.push(("chunk_overlap", opt(overlap)));
        out.push(("title", c.title.to_string()));
        out.push(("headings", c.headings.to_string()));
        self.retriever.config(&mut out);
        out.push(("filter", self.filter.to_string()));
        out.push(("abstain_below", self.abstain.map(|a| a.to_string()).unwrap_or_default()));
        out
    }
}

/// What an experiment file can name, from each registry: chunker and retriever kinds, fusion
/// methods and metrics (for `--help`).
pub fn kinds() -> Vec<(&'static str, String)> {
    fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
        names.collect::<Vec<_>>().join(", ")
    }
    let metrics = |family: Vec<Metric>| list(family.into_iter().map(Metric::name));
    vec![
        ("[[chunkers]] kind", list(crate::chunkers::kind_names())),
        ("[[retrievers]] kind", crate::catalog::retriever_kind_list()),
        ("fusion", list(crate::catalog::fusion::METHODS.iter().map(|m| m.name))),
        ("served indexes (kind = \"dense\" with engine = …, read only)", crate::catalog::served::help()),
        ("metrics", metrics(Metric::defaults())),
        ("metrics (section and evidence units)", metrics(Metric::token_level())),
    ]
}

/// The metric columns of an experiment (see [`Experiment::columns`]).
fn columns_of(metrics: &[Metric], k: &[usize], budget: &[usize], unit: Unit) -> Vec<MetricAt> {
    let mut out: Vec<MetricAt> = metrics.iter().flat_map(|&m| k.iter().map(move |&k| MetricAt::at_k(m, k))).collect();
    let rank_metrics = metrics.iter().filter(|m| !m.is_token_level());
    out.extend(rank_metrics.flat_map(|&m| budget.iter().map(move |&b| MetricAt::at_budget(m, b))));
    if unit != Unit::Doc {
        out.extend(
            Metric::token_level().into_iter().flat_map(|m| budget.iter().map(move |&b| MetricAt::at_budget(m, b))),
        );
    }
    // Label completeness (SPEC §9); the evidence unit's text rule leaves nothing unjudged.
    if unit != Unit::Evidence {
        out.extend(k.iter().map(|&k| MetricAt::at_k(Metric::Judged, k)));
        out.extend(budget.iter().map(|&b| MetricAt::at_budget(Metric::Judged, b)));
    }
    out
}

pub use crate::vocab::Prefer;

#[derive(Debug, Clone)]
pub struct Experiment {
    pub name: String,
    pub description: Option<String>,
    pub file: PathBuf,
    /// blake3 of the experiment file's bytes.
    pub config_hash: String,
    pub unit: Unit,
    /// Cut-offs, ascending, without duplicates.
    pub k: Vec<usize>,
    /// Context budgets in tokens, ascending (SPEC §3); empty when none.
    pub budget: Vec<usize>,
    pub metrics: Vec<Metric>,
    pub seed: u64,
    pub reserved_fraction: f64,
    /// The metric that picks the best cell on the tuning split.
    pub select: Option<MetricAt>,
    /// Among the cells equivalent to the best on tuning, which one to select.
    pub prefer: Prefer,
    /// A cell is equivalent to the best when the 95% interval of their paired difference on
    /// the decision metric lies inside ±margin (SPEC §7).
    pub margin: f64,
    /// Constraints every eligible cell meets on tuning (SPEC §7).
    pub require: Vec<crate::vocab::Requirement>,
    /// Cases in each cell's timed latency pass (0: no timed pass).
    pub latency_cases: usize,
    pub corpus_path: PathBuf,
    /// Where `corpus.path` and `golden.path` are written, for errors about them.
    pub corpus_path_at: Location,
    pub golden_path_at: Location,
    pub corpus_format: Option<CorpusFormat>,
    /// `[corpus] exclude` and `max_document_mib`: a folder's files left out on purpose, and
    /// the size a document may have.
    pub corpus_folder: FolderRules,
    /// `[corpus] index_meta`: metadata keys indexed with the title (`None`: the default keys).
    pub index_meta: Option<Vec<String>>,
    /// Which document field holds the access list, and which look-alikes are metadata.
    pub access_key: AccessKey,
    pub golden: GoldenSource,
    /// The judgments file the run reads (SPEC §9).
    pub judgments: PathBuf,
    /// `[golden] suggestions`: the chat model whose suggested grades (`suggestions.jsonl` beside
    /// the judgments) the decision leans on, by prediction-powered inference; `None`: people's
    /// labels alone decide.
    pub suggestions: Option<String>,
    pub default_groups: Vec<String>,
    pub synthetic_acl: Option<SyntheticAcl>,
    /// Where `synthetic_groups` is set, for errors about it.
    pub synthetic_acl_at: Location,
    pub missing_acl: MissingAcl,
    pub prices: Prices,
    /// Counts the context tokens sent to a model: `"words"` or an installed model id.
    pub cost_tokenizer: String,
    pub cells: Vec<Cell>,
    /// Per cell id: the first earlier cell of the whole grid sharing its embeddings, its indexes.
    pub shared: HashMap<String, (Option<String>, Option<String>)>,
    /// `(i, n)` when this run covers shard i of n.
    pub shard: Option<(usize, usize)>,
    /// `[engines.NAME]`: the user's own server of each engine that has one; the others run
    /// private servers.
    pub servers: BTreeMap<EngineKind, ServerSpec>,
}

impl Experiment {
    /// What a run of the experiment reads, by what it is: no output may be written over one
    /// (`atomic::refuse_overwriting`).
    pub fn inputs(&self) -> [(&'static str, &Path); 4] {
        [
            ("experiment", self.file.as_path()),
            ("golden set", self.golden.path.as_path()),
            ("judgments", self.judgments.as_path()),
            ("corpus", self.corpus_path.as_path()),
        ]
    }

    /// For each cell, the first earlier cell of the whole grid whose embeddings and whose
    /// indexes it shares (work done once, not redone). Depends only on the grid, so sharded and
    /// unsharded runs report the same.
    fn shared_stages(cells: &[Cell]) -> HashMap<String, (Option<String>, Option<String>)> {
        cells
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                let earlier = &cells[..i];
                let embeddings = cell.model().and_then(|m| {
                    earlier.iter().find(|c| c.chunker == cell.chunker && c.model() == Some(m)).map(|c| c.id.clone())
                });
                let identity = cell.index_identity();
                let index = earlier.iter().find(|c| c.index_identity() == identity).map(|c| c.id.clone());
                (cell.id.clone(), (embeddings, index))
            })
            .collect()
    }

    /// Keeps the cells of shard `i` of `n` (1-based): every n-th cell, by grid order. A shard
    /// that would hold no cell is an error: a task that ran nothing must not pass as done.
    pub fn keep_shard(&mut self, i: usize, n: usize) -> Result<()> {
        let cells = self.cells.len();
        if i == 0 || n == 0 || i > n {
            return Err(Error::Shards(format!("shard {i} of {n}: the shard must be between 1 and {n}")));
        }
        if i > cells {
            return Err(Error::Shards(format!(
                "shard {i} of {n} holds no cell: the grid has {} (use at most {cells} shards)",
                crate::words::count(cells, "cell")
            )));
        }
        let mut ordinal = 0;
        self.cells.retain(|_| {
            ordinal += 1;
            (ordinal - 1) % n == i - 1
        });
        self.shard = Some((i, n));
        Ok(())
    }

    /// The matrix's metric columns: every metric at every k.
    /// Every metric column: each metric at each k, then each metric at each budget, then the
    /// token-level measures at each budget (section and evidence units).
    pub fn columns(&self) -> Vec<MetricAt> {
        columns_of(&self.metrics, &self.k, &self.budget, self.unit)
    }

    /// The metric cells are compared on: `select`; else, with budgets and the section unit,
    /// `tok_recall` at the headline budget (SPEC §3: a fragment of a long section counts for
    /// it, so `recall@Bt` would reward fragments); else the first metric at k = 10 (the largest
    /// k when 10 is not one).
    pub fn decision_metric(&self) -> MetricAt {
        match self.select {
            Some(m) => m,
            None if self.unit == Unit::Section && !self.budget.is_empty() => {
                MetricAt::at_budget(Metric::TokRecall, crate::vocab::headline_budget(&self.budget))
            }
            None => MetricAt::at_k(self.metrics[0], crate::vocab::headline_k(&self.k)),
        }
    }

    /// The keys of per-cut-off values: `@k` for each k, then `@Bt` for each budget.
    pub fn cut_keys(&self) -> Vec<String> {
        let ks = self.k.iter().map(|k| format!("@{k}"));
        ks.chain(self.budget.iter().map(|b| format!("@{b}t"))).collect()
    }

    /// The position of `cut` among the experiment's cut-offs (a k) or budgets; an error naming
    /// them when it is none of them.
    pub fn cut_position(&self, cut: crate::vocab::Cut) -> Result<usize> {
        let (list, what) = match cut {
            crate::vocab::Cut::K(_) => (&self.k, "cut-offs"),
            crate::vocab::Cut::Budget(_) => (&self.budget, "budgets"),
        };
        let (crate::vocab::Cut::K(v) | crate::vocab::Cut::Budget(v)) = cut;
        list.iter()
            .position(|&x| x == v)
            .ok_or_else(|| Error::Comparison(format!("{cut} is not one of the experiment's {what} {list:?}")))
    }

    pub fn max_k(&self) -> usize {
        *self.k.last().expect("k is validated non-empty")
    }

    pub fn load(path: &Path) -> Result<Experiment> {
        let text = crate::input::text::read(path)?;
        Experiment::parse(path, &text)
    }

    /// The experiment written in `text` (read from `path`): each section checked by its own
    /// function ([`sections`]), grid sections by their kinds' catalogs.
    pub fn parse(path: &Path, text: &str) -> Result<Experiment> {
        let src = sections::Source { path, text };
        let raw: RawExperiment = toml::from_str(text).map_err(|e| {
            let loc = e.span().map_or_else(|| src.file(), |span| src.at(span));
            Error::input(loc, e.message().to_string())
        })?;
        let name = raw.name.get_ref().trim().to_string();
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(src.bad(raw.name.span(), "`name` must be non-empty, without slashes or a leading dot"));
        }
        let cut = sections::cutoffs(&src, &raw)?;
        let decision = sections::decision(&src, &raw, &cut)?;
        let retrievers = expand_all(&raw.retrievers, "retrievers", &[], text, path, retriever_cell_from)?;
        // A served index's chunks are its rows: with served retrievers alone, no chunker is needed.
        let all_served = retrievers.iter().all(|(r, _)| r.served_rows().is_some());
        let chunkers = if raw.chunkers.is_empty() && all_served {
            Vec::new()
        } else {
            expand_all(&raw.chunkers, "chunkers", &crate::chunkers::LIST_KEYS, text, path, crate::chunkers::parse)?
        };
        let servers = sections::servers(&src, &raw)?;
        let filters = sections::filters(&src, &raw)?;
        let prices = sections::prices(&src, &raw.cost)?;
        let corpus_folder = sections::corpus_folder(&src, &raw.corpus)?;
        let access = sections::access(&src, &raw)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let golden = sections::golden(&src, &raw.golden, base)?;
        let cells = sections::cells(&src, &raw, &chunkers, &retrievers, &filters, &servers)?;
        Ok(Experiment {
            name,
            description: raw.description,
            file: path.to_path_buf(),
            config_hash: blake3::hash(text.as_bytes()).to_hex()[..16].to_string(),
            unit: raw.unit,
            k: cut.k,
            budget: cut.budget,
            metrics: decision.metrics,
            seed: raw.seed,
            reserved_fraction: cut.reserved_fraction,
            select: decision.select,
            prefer: raw.prefer,
            margin: decision.margin,
            require: decision.require,
            latency_cases: raw.latency_cases.unwrap_or(LATENCY_CASES),
            corpus_path: base.join(raw.corpus.path.get_ref()),
            corpus_path_at: src.at(raw.corpus.path.span()),
            golden_path_at: src.at(raw.golden.path.span()),
            corpus_format: raw.corpus.format,
            corpus_folder,
            index_meta: raw.corpus.index_meta,
            access_key: access.access_key,
            judgments: golden.judgments,
            suggestions: golden.suggestions,
            golden: golden.golden,
            default_groups: access.default_groups,
            synthetic_acl: access.synthetic_acl,
            synthetic_acl_at: access.synthetic_acl_at,
            missing_acl: raw.permissions.missing_acl,
            prices,
            cost_tokenizer: raw.cost.tokenizer.unwrap_or_else(|| DEFAULT_COST_TOKENIZER.into()),
            shared: Experiment::shared_stages(&cells),
            shard: None,
            servers,
            cells,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
name = "t"
k = [10, 1, 10]
[corpus]
path = "c"
[golden]
path = "g.json"
"#;

    fn parse(extra: &str) -> Result<Experiment> {
        Experiment::parse(Path::new("exp.toml"), &format!("{BASE}{extra}"))
    }

    #[test]
    fn engine_retrievers_parse_label_and_read_back_from_json_as_the_types_that_wrote_them() {
        let e = parse(
            "[[chunkers]]\nkind = \"none\"\n\
             [[retrievers]]\nkind = \"bm25\"\n\
             [[retrievers]]\nkind = \"fulltext\"\nengine = \"pg\"\nanalyzer = \"pt\"\nterms = [\"any\", \"all\"]\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"m\"\nindex = \"ivfflat\"\nlists = 20\nprobes = [1, 4]\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"m\"\nindex = \"hnsw\"\nm = 8\nef_construction = 32\niterative_scan = \"strict_order\"\n\
             [[retrievers]]\nkind = \"hybrid\"\nengine = \"pg\"\nmodel = \"m\"\nfusion = \"rrf\"\n",
        )
        .unwrap();
        assert_eq!(e.cells.len(), 7);
        let labels: Vec<String> = e.cells.iter().map(Cell::label).collect();
        assert_eq!(labels[1], "none pg fulltext(pt,any)");
        assert_eq!(labels[4], "none dense(m,pg ivfflat,lists=20,probes=4,iterative_scan=off)");
        assert_eq!(labels[5], "none dense(m,pg hnsw,m=8,efc=32,ef=128,iterative_scan=strict_order)");
        assert_eq!(labels[6], "none hybrid(rrf(k=60),n=100; pg fulltext(en,any) + dense(m,pg exact))");
        for cell in &e.cells {
            let json = serde_json::to_string(&cell.retriever).unwrap();
            let back: RetrieverSpec = serde_json::from_str(&json).unwrap();
            assert_eq!(back, cell.retriever, "{json}");
        }
    }

    /// Each kind owns its parameters; a manifest written when they were variants of one enum
    /// (key order as serde wrote it then) reads back as the spec the same TOML parses into.
    #[test]
    fn every_kind_reads_back_from_manifests_written_before_it_owned_its_spec() {
        let e = parse(
            "[[chunkers]]\nkind = \"none\"\n\
             [[retrievers]]\nkind = \"dense\"\nmodel = \"m\"\n\
             [[retrievers]]\nkind = \"dense\"\nmodel = \"m\"\nindex = \"hnsw\"\nm = 8\nef_construction = 32\nef_search = 64\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"m\"\nindex = \"ivfflat\"\nlists = 20\nprobes = 4\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"milvus\"\nmodel = \"m\"\nindex = \"hnsw\"\nm = 8\nef_construction = 32\nef_search = 64\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"chroma\"\nmodel = \"m\"\nm = 8\nef_construction = 32\nef_search = 64\n\
             [[retrievers]]\nkind = \"hybrid\"\nmodel = \"m\"\nfusion = \"rrf\"\nindex = \"hnsw\"\n",
        )
        .unwrap();
        let written_before = [
            r#"{"kind":"dense","model":"m","index":{"type":"exact"}}"#,
            r#"{"kind":"dense","model":"m","index":{"type":"hnsw","m":8,"ef_construction":32,"ef_search":64}}"#,
            r#"{"kind":"dense","model":"m","index":{"type":"pg","index":{"type":"ivfflat","lists":20,"probes":4},"iterative_scan":"off","force_index":false}}"#,
            r#"{"kind":"dense","model":"m","index":{"type":"milvus","index":{"type":"hnsw","m":8,"ef_construction":32,"ef_search":64}}}"#,
            r#"{"kind":"dense","model":"m","index":{"type":"chroma","m":8,"ef_construction":32,"ef_search":64}}"#,
            r#"{"kind":"hybrid","lexical":{"analyzer":"en","k1":0.9,"b":0.4},"dense":{"model":"m","index":{"type":"hnsw","m":16,"ef_construction":200,"ef_search":128}},"fusion":{"method":"rrf","k":60.0},"candidates":100}"#,
        ];
        assert_eq!(e.cells.len(), written_before.len());
        for (cell, json) in e.cells.iter().zip(written_before) {
            let read: RetrieverSpec = serde_json::from_str(json).unwrap();
            assert_eq!(read, cell.retriever, "{json}");
            let again: RetrieverSpec = serde_json::from_str(&serde_json::to_string(&read).unwrap()).unwrap();
            assert_eq!(again, read);
        }
        let lexical = parse(
            "[[chunkers]]\nkind = \"none\"\n\
             [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\nk1 = 1.2\n\
             [[retrievers]]\nkind = \"fulltext\"\nengine = \"pg\"\nterms = \"all\"\n\
             [engines.pg]\nurl = \"postgresql://u@localhost:5432/db\"\n\
             [[retrievers]]\nkind = \"dense\"\nengine = \"pg\"\nmodel = \"m\"\ntable = \"t\"\nid_field = \"doc\"\ntext_field = \"body\"\nvector_field = \"v\"\nacl_field = \"groups\"\n",
        )
        .unwrap();
        let written_before = [
            r#"{"kind":"bm25","analyzer":"pt","k1":1.2,"b":0.4}"#,
            r#"{"kind":"fulltext","analyzer":"en","terms":"all"}"#,
            r#"{"kind":"served","model":"m","index":{"engine":"pg","source":"t","id_field":"doc","text_field":"body","whole_document_when_not_found":false,"vector_field":"v","acl_field":"groups","public_group":null,"distance":null,"ef_search":null,"probes":null,"force_index":false}}"#,
        ];
        assert_eq!(lexical.cells.len(), written_before.len());
        for (cell, json) in lexical.cells.iter().zip(written_before) {
            let read: RetrieverSpec = serde_json::from_str(json).unwrap();
            assert_eq!(read, cell.retriever, "{json}");
            let written: serde_json::Value = serde_json::from_str(&serde_json::to_string(&read).unwrap()).unwrap();
            assert_eq!(written, serde_json::from_str::<serde_json::Value>(json).unwrap());
        }
        let unknown = r#"{"kind":"dense","model":"m","index":{"type":"qdrant"}}"#;
        let err = serde_json::from_str::<RetrieverSpec>(unknown).unwrap_err().to_string();
        assert!(err.contains("unknown dense index type \"qdrant\""), "{err}");
        let wrong = r#"{"kind":"dense","model":"m","index":{"type":"hnsw","m":8}}"#;
        assert!(serde_json::from_str::<RetrieverSpec>(wrong).is_err());
    }

    #[test]
    fn engine_settings_outside_their_engine_or_index_are_located_errors() {
        let err = |retriever: &str| {
            parse(&format!("[[chunkers]]\nkind = \"none\"\n[[retrievers]]\n{retriever}")).unwrap_err().to_string()
        };
        assert!(err("kind = \"fulltext\"\n").contains("add engine = \"pg\""));
        assert!(err("kind = \"bm25\"\nengine = \"pg\"\n").contains("PostgreSQL has no BM25"));
        let e = err("kind = \"dense\"\nmodel = \"m\"\niterative_scan = \"off\"\n");
        assert!(e.starts_with("exp.toml:") && e.contains("needs engine = \"pg\""), "{e}");
        assert!(err("kind = \"dense\"\nmodel = \"m\"\nindex = \"ivfflat\"\n").contains("add engine = \"pg\""));
        let e = err("kind = \"dense\"\nengine = \"pg\"\nmodel = \"m\"\nindex = \"ivfflat\"\niterative_scan = \"strict_order\"\n");
        assert!(e.contains("no strict_order"), "{e}");
        let e = err("kind = \"dense\"\nengine = \"pg\"\nmodel = \"m\"\nindex = \"hnsw\"\nm = 200\n");
        assert!(e.contains("between 2 and 100"), "{e}");
        assert!(err("kind = \"dense\"\nengine = \"pg\"\nmodel = \"m\"\nlists = 4\n")
            .contains("only applies to index = \"ivfflat\""));
    }

    #[test]
    fn lists_expand_to_a_grid() {
        let e = parse(
            "[[chunkers]]\nkind = \"none\"\n[[chunkers]]\nkind = \"fixed\"\nsize = 200\noverlap = 20\n\
             [[retrievers]]\nkind = \"bm25\"\nk1 = [0.6, 0.9, 1.2]\nb = [0.4, 0.75]\n",
        )
        .unwrap();
        assert_eq!(e.cells.len(), 12);
        assert_eq!(e.k, [1, 10]);
        assert_eq!(e.cells[0].id, "c01");
        assert_eq!(e.cells[11].label(), "fixed(200,20) bm25(en,k1=1.2,b=0.75)");
        assert_eq!(e.corpus_path, Path::new("c"));
    }

    #[test]
    fn unknown_top_level_key_has_line_and_column() {
        let err =
            Experiment::parse(Path::new("exp.toml"), "name = \"t\"\nk = [1]\nbogus = 3\n").unwrap_err().to_string();
        assert!(err.starts_with("exp.toml:3:1"), "{err}");
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn wrong_type_in_grid_points_at_the_value() {
        let err = parse("[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nk1 = [0.9, \"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("exp.toml:12:6"), "{err}");
        assert!(err.contains("`k1` must be a number"), "{err}");
    }

    #[test]
    fn dense_retrievers_take_model_and_index_parameters() {
        let e = parse(
            "[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\n\
             [[retrievers]]\nkind = \"dense\"\nmodel = \"e5-small\"\nindex = \"hnsw\"\nef_search = [32, 256]\n",
        )
        .unwrap();
        let labels: Vec<_> = e.cells.iter().map(|c| c.retriever.to_string()).collect();
        assert_eq!(
            labels,
            [
                "dense(minilm-l6,exact)",
                "dense(e5-small,hnsw,m=16,efc=200,ef=32)",
                "dense(e5-small,hnsw,m=16,efc=200,ef=256)"
            ]
        );
        let err = parse("[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"x\"\nm = 8\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("only applies to index = \"hnsw\""), "{err}");
    }

    #[test]
    fn hybrid_and_filter_axes() {
        let text = format!(
            "filter = [\"none\", \"in_query\", \"post\"]\n{BASE}[permissions]\nsynthetic_groups = 10\n\
             [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"hybrid\"\nmodel = \"minilm-l6\"\n\
             fusion = \"convex\"\nalpha = [0.3, 0.7]\n[[retrievers]]\nkind = \"hybrid\"\nmodel = \"m\"\nfusion = \"rrf\"\nk = 10\n"
        );
        let e = Experiment::parse(Path::new("exp.toml"), &text);
        let e = e.unwrap();
        assert_eq!(e.cells.len(), 3 * 3);
        assert_eq!(e.synthetic_acl.unwrap().groups, 10);
        assert_eq!(
            e.cells[0].label(),
            "none hybrid(convex(alpha=0.3,minmax),n=100; bm25(en,k1=0.9,b=0.4) + dense(minilm-l6,exact))"
        );
        assert!(e.cells[1].label().ends_with("filter=in_query"));
        let err = parse("[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"hybrid\"\nmodel = \"m\"\nfusion = \"rrf\"\nalpha = 0.5\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`alpha` does not apply to fusion = \"rrf\""), "{err}");
    }

    #[test]
    fn unknown_grid_parameter_is_named() {
        let err = parse("[[chunkers]]\nkind = \"fixed\"\nsize = 10\nsise = 3\n[[retrievers]]\nkind = \"bm25\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("exp.toml:11:8") && err.contains("unknown parameter `sise`"), "{err}");
    }
}
