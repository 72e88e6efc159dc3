//! Each section of the experiment file checked on its own, its errors located at the value
//! that broke a rule: [`super::Experiment::parse`] dispatches to these and assembles what they
//! return. A new key belongs to its section's function here (or to its kind's catalog file for
//! `[[chunkers]]` and `[[retrievers]]`), never to the dispatcher.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::{Spanned, Value};

use crate::engine::registry::ServerSpec;
use crate::error::{Error, Location, Result};
use crate::input::access_key::AccessKey;
use crate::input::corpus::FolderRules;
use crate::input::golden::GoldenSource;
use crate::vocab::{EngineKind, Filter, Metric, MetricAt, Prices, Requirement, SyntheticAcl, Unit};

use super::schema::*;
use super::{Abstain, Cell, ChunkerSpec, RetrieverSpec, MAX_CUTOFF};

/// The experiment file being read: where an error points.
pub(super) struct Source<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
}

impl Source<'_> {
    pub(super) fn at(&self, span: Range<usize>) -> Location {
        Location::at_offset(self.path, self.text, span.start)
    }

    pub(super) fn bad(&self, span: Range<usize>, msg: impl Into<String>) -> Error {
        Error::input(self.at(span), msg.into())
    }

    pub(super) fn file(&self) -> Location {
        Location::file(self.path)
    }
}

/// `k`, `budget` and `reserved_fraction`: the cut-offs, sorted and without repeats.
pub(super) struct Cutoffs {
    pub(super) k: Vec<usize>,
    pub(super) budget: Vec<usize>,
    pub(super) reserved_fraction: f64,
}

pub(super) fn cutoffs(src: &Source<'_>, raw: &RawExperiment) -> Result<Cutoffs> {
    let mut k = raw.k.get_ref().clone();
    if k.is_empty() || k.contains(&0) {
        return Err(src.bad(raw.k.span(), "`k` needs at least one cut-off, each at least 1"));
    }
    if let Some(big) = k.iter().find(|&&k| k > MAX_CUTOFF) {
        return Err(src.bad(
            raw.k.span(),
            format!("k = {big} is larger than any list a retriever returns (at most {MAX_CUTOFF}); a cut-off above the corpus size reads the whole corpus"),
        ));
    }
    k.sort_unstable();
    k.dedup();
    let reserved_fraction = match &raw.reserved_fraction {
        Some(f) if !(0.0..=1.0).contains(f.get_ref()) => {
            return Err(src.bad(f.span(), "`reserved_fraction` must be between 0 and 1"))
        }
        Some(f) => *f.get_ref(),
        None => 0.3,
    };
    let mut budget = match &raw.budget {
        Some(b) if b.get_ref().contains(&0) => {
            return Err(src.bad(b.span(), "`budget` takes token counts, each at least 1"))
        }
        Some(b) if b.get_ref().iter().any(|&b| b > MAX_CUTOFF) => {
            return Err(src.bad(b.span(), format!("`budget` takes token counts of at most {MAX_CUTOFF}")))
        }
        Some(b) => b.get_ref().clone(),
        None => Vec::new(),
    };
    budget.sort_unstable();
    budget.dedup();
    Ok(Cutoffs { k, budget, reserved_fraction })
}

/// `metrics`, `select`, `margin` and `require`: what is measured and what decides.
pub(super) struct Decision {
    pub(super) metrics: Vec<Metric>,
    pub(super) select: Option<MetricAt>,
    pub(super) margin: f64,
    pub(super) require: Vec<Requirement>,
}

pub(super) fn decision(src: &Source<'_>, raw: &RawExperiment, cut: &Cutoffs) -> Result<Decision> {
    let mut metrics = raw.metrics.clone().unwrap_or_else(Metric::defaults);
    metrics.dedup();
    if metrics.is_empty() {
        return Err(Error::input(src.file(), "`metrics` is an empty list: name at least one metric"));
    }
    if let Some(m) = metrics.iter().find(|m| m.is_token_level()).filter(|_| raw.unit == Unit::Doc) {
        return Err(Error::input(
            src.file(),
            format!("`metrics` lists {m}: token-level measures need `unit = \"section\"` or `\"evidence\"`"),
        ));
    }
    let columns = super::columns_of(&metrics, &cut.k, &cut.budget, raw.unit);
    let select = match &raw.select {
        None => None,
        Some(s) => {
            let m: MetricAt = s.get_ref().parse().map_err(|e: String| src.bad(s.span(), e))?;
            if !columns.contains(&m) {
                let need = if m.budget { "`budget`" } else { "`k`" };
                let token = if m.metric.is_token_level() { " (token-level: unit section or evidence)" } else { "" };
                return Err(src.bad(
                    s.span(),
                    format!("`select = \"{m}\"` needs {} in `metrics`{token} and {} in {need}", m.metric, m.k),
                ));
            }
            Some(m)
        }
    };
    let margin = match &raw.margin {
        None => crate::vocab::DEFAULT_MARGIN,
        Some(m) if m.get_ref().is_finite() && *m.get_ref() > 0.0 => *m.get_ref(),
        Some(m) => {
            return Err(src.bad(m.span(), "`margin` is a positive number on the decision metric's scale (default 0.02)"))
        }
    };
    let cut_keys: Vec<String> =
        cut.k.iter().map(|k| format!("@{k}")).chain(cut.budget.iter().map(|b| format!("@{b}t"))).collect();
    let require = raw
        .require
        .iter()
        .map(|r| crate::vocab::parse_requirement(r.get_ref(), &columns, &cut_keys).map_err(|e| src.bad(r.span(), e)))
        .collect::<Result<Vec<_>>>()?;
    if let (Some(first), None) = (raw.require.first(), select) {
        let suggested = MetricAt::at_k(metrics[0], crate::vocab::headline_k(&cut.k));
        return Err(src.bad(
            first.span(),
            format!(
                "`require` constrains the selection, and there is none without `select`: \
                 add `select = \"{suggested}\"` (or the metric that decides)"
            ),
        ));
    }
    Ok(Decision { metrics, select, margin, require })
}

/// `[engines.NAME]`: the team's own server of each engine that has one, with the one secret
/// variable its engine declares.
pub(super) fn servers(src: &Source<'_>, raw: &RawExperiment) -> Result<BTreeMap<EngineKind, ServerSpec>> {
    let mut servers = BTreeMap::new();
    for (name, section) in &raw.engines {
        let unknown = || {
            let known = crate::engine::servers::engine_names().join(", ");
            src.bad(section.span(), format!("[engines.{name}]: unknown engine {name:?} (known: {known})"))
        };
        let kind = crate::engine::servers::engine_named(name).ok_or_else(unknown)?;
        let engine = crate::engine::servers::serving(kind);
        let keys = engine.secret_keys();
        if keys.is_empty() {
            return Err(src.bad(
                section.span(),
                format!("[engines.{name}]: ragsweep runs {name} itself; it takes no server of yours"),
            ));
        }
        let key_list = keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" or ");
        let text_of =
            |key: &Spanned<String>, value: &Spanned<Value>| {
                value.get_ref().as_str().map(str::to_string).ok_or_else(|| {
                    src.bad(value.span(), format!("[engines.{name}] `{}` must be a string", key.get_ref()))
                })
            };
        let (mut url, mut secret_env) = (None, None);
        for (written, value) in section.get_ref() {
            let k = written.get_ref().as_str();
            match (k, keys.iter().find(|key| **key == k)) {
                ("url", _) => url = Some((text_of(written, value)?, value.span())),
                (_, Some(key)) => {
                    let var = text_of(written, value)?;
                    if var.is_empty() || var.contains('=') {
                        return Err(src.bad(value.span(), format!("`{key}` names an environment variable")));
                    }
                    if let Some((other, _)) = secret_env {
                        let why = format!("[engines.{name}] takes one secret: `{other}` is given already");
                        return Err(src.bad(written.span(), why));
                    }
                    secret_env = Some((*key, var));
                }
                (k, None) if k.ends_with("_env") => {
                    let why = format!("[engines.{name}] names the variable with its secret {key_list}, not `{k}`");
                    return Err(src.bad(written.span(), why));
                }
                (k, None) => {
                    return Err(src.bad(
                        written.span(),
                        format!("[engines.{name}]: unknown key `{k}` (it takes `url` and {key_list})"),
                    ))
                }
            }
        }
        let Some((url, url_span)) = url else {
            return Err(src.bad(section.span(), format!("[engines.{name}] needs `url`: the address of your server")));
        };
        let url = engine.server_url(&url).map_err(|e| src.bad(url_span.clone(), e))?;
        servers.insert(kind, ServerSpec { url, secret_env, at: src.at(url_span) });
    }
    Ok(servers)
}

/// `filter`: one mode or a list of them, a grid axis.
pub(super) fn filters(src: &Source<'_>, raw: &RawExperiment) -> Result<Vec<Filter>> {
    let Some(v) = &raw.filter else { return Ok(vec![Filter::None]) };
    let items: Vec<&Value> = match v.get_ref() {
        Value::Array(a) if a.is_empty() => {
            return Err(
                src.bad(v.span(), "`filter` is an empty list: name at least one of \"none\", \"in_query\", \"post\"")
            )
        }
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    items
        .into_iter()
        .map(|item| match item.as_str() {
            Some("none") => Ok(Filter::None),
            Some("in_query") => Ok(Filter::InQuery),
            Some("post") => Ok(Filter::Post),
            _ => Err(src.bad(v.span(), format!("`filter` takes \"none\", \"in_query\" or \"post\", found {item}"))),
        })
        .collect()
}

/// `[cost]`: the prices declared (0 where none is).
pub(super) fn prices(src: &Source<'_>, cost: &RawCost) -> Result<Prices> {
    let price = |value: &Option<Spanned<f64>>, key: &str| -> Result<f64> {
        match value {
            None => Ok(0.0),
            Some(v) if v.get_ref().is_finite() && *v.get_ref() >= 0.0 => Ok(*v.get_ref()),
            Some(v) => {
                Err(src.bad(v.span(), format!("`cost.{key}` must be a finite number ≥ 0, found {}", v.get_ref())))
            }
        }
    };
    Ok(Prices {
        embedding_usd_per_1m_tokens: price(&cost.embedding_usd_per_1m_tokens, "embedding_usd_per_1m_tokens")?,
        llm_usd_per_1m_input_tokens: price(&cost.llm_usd_per_1m_input_tokens, "llm_usd_per_1m_input_tokens")?,
    })
}

/// `[corpus]`'s folder rules: files left out on purpose, the largest document, what is published.
pub(super) fn corpus_folder(src: &Source<'_>, corpus: &RawCorpus) -> Result<FolderRules> {
    let max_bytes = match &corpus.max_document_mib {
        None => crate::input::corpus::DEFAULT_MAX_DOCUMENT_BYTES,
        Some(m) if (1..=1 << 20).contains(m.get_ref()) => *m.get_ref() << 20,
        Some(m) => {
            return Err(src
                .bad(m.span(), format!("`max_document_mib` must be between 1 and {}, found {}", 1 << 20, m.get_ref())))
        }
    };
    let patterns: Vec<String> = corpus.exclude.iter().map(|p| p.get_ref().clone()).collect();
    let mut rules = FolderRules::new(&patterns, max_bytes).map_err(|(i, why)| {
        let span = corpus.exclude.get(i).map_or(0..0, |p| p.span());
        src.bad(span, format!("`[corpus] exclude`: {why}"))
    })?;
    let also: Vec<String> = corpus.publish_also.iter().map(|p| p.get_ref().clone()).collect();
    rules.publish_also(&also).map_err(|(i, why)| {
        let span = corpus.publish_also.get(i).map_or(0..0, |p| p.span());
        src.bad(span, format!("`[corpus] publish_also`: {why}"))
    })?;
    rules.publish_all = match &corpus.publish {
        None => false,
        Some(p) if p.get_ref() == "published" => false,
        Some(p) if p.get_ref() == "all" => true,
        Some(p) => {
            return Err(src.bad(
                p.span(),
                format!("`publish` is \"published\" (the default) or \"all\", found {:?}", p.get_ref()),
            ))
        }
    };
    Ok(rules)
}

/// `[permissions]` (and `[corpus] not_access`): who may see what.
pub(super) struct Access {
    pub(super) access_key: AccessKey,
    pub(super) default_groups: Vec<String>,
    pub(super) synthetic_acl: Option<SyntheticAcl>,
    pub(super) synthetic_acl_at: Location,
}

pub(super) fn access(src: &Source<'_>, raw: &RawExperiment) -> Result<Access> {
    let permissions = &raw.permissions;
    let not_access = raw.corpus.not_access.clone();
    let access_key = match &permissions.acl_key {
        Some(k) if k.get_ref().trim().is_empty() => {
            return Err(src.bad(k.span(), "`acl_key` names the field that holds access lists: it cannot be empty"))
        }
        Some(k)
            if crate::input::access_key::NOT_AN_ACCESS_KEY.contains(&k.get_ref().trim().to_lowercase().as_str()) =>
        {
            return Err(src.bad(
                k.span(),
                format!(
                    "`acl_key = \"{}\"` names a field that never holds an access list ({}): name the field your documents keep their groups in",
                    k.get_ref().trim(),
                    crate::input::access_key::NOT_AN_ACCESS_KEY.join(", ")
                ),
            ))
        }
        Some(k) => AccessKey { key: k.get_ref().trim().to_string(), not_access },
        None => AccessKey { not_access, ..AccessKey::default() },
    };
    let default_groups = permissions
        .default_groups
        .iter()
        .map(|g| {
            crate::input::access_key::check_group(g)
                .map_err(|e| Error::input(src.file(), format!("`permissions.default_groups`: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let synthetic_acl_at = permissions.synthetic_groups.as_ref().map_or_else(|| src.file(), |g| src.at(g.span()));
    let synthetic_acl = match permissions.synthetic_groups.as_ref().map(|g| *g.get_ref()) {
        Some(0) => return Err(Error::input(synthetic_acl_at, "`permissions.synthetic_groups` must be at least 1")),
        Some(groups) => Some(SyntheticAcl { groups, seed: permissions.synthetic_seed }),
        None => None,
    };
    Ok(Access { access_key, default_groups, synthetic_acl, synthetic_acl_at })
}

/// `[golden]`: the golden set, the judgments file beside it and the chat model whose
/// suggestions the decision leans on.
pub(super) struct Golden {
    pub(super) golden: GoldenSource,
    pub(super) judgments: PathBuf,
    pub(super) suggestions: Option<String>,
}

pub(super) fn golden(src: &Source<'_>, raw: &RawGolden, base: &Path) -> Result<Golden> {
    let golden = GoldenSource {
        path: base.join(raw.path.get_ref()),
        format: raw.format,
        tuning: raw.tuning.clone(),
        reserved: raw.reserved.clone(),
        labels: raw.labels,
    };
    let judgments = crate::input::judgments::path_for(&golden, raw.judgments.as_ref().map(|p| base.join(p)).as_deref());
    let suggestions = match &raw.suggestions {
        Some(name) => {
            crate::own_models::check_name(name.get_ref())
                .map_err(|e| src.bad(name.span(), format!("`golden.suggestions`: {e}")))?;
            Some(name.get_ref().clone())
        }
        None => None,
    };
    Ok(Golden { golden, judgments, suggestions })
}

/// The grid's cells, numbered `c01…` in order: every chunker × every retriever × every filter,
/// and a served index's own rows once per filter (never crossed with chunkers).
pub(super) fn cells(
    src: &Source<'_>,
    raw: &RawExperiment,
    chunkers: &[ChunkerSpec],
    retrievers: &[(RetrieverSpec, Option<Abstain>)],
    filters: &[Filter],
    servers: &BTreeMap<EngineKind, ServerSpec>,
) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for c in chunkers {
        for r in retrievers.iter().filter(|(r, _)| r.served_rows().is_none()) {
            for &filter in filters {
                let (retriever, abstain) = r.clone();
                cells.push(Cell { id: String::new(), chunker: c.clone(), retriever, filter, abstain });
            }
        }
    }
    let served_at = raw
        .retrievers
        .iter()
        .flat_map(|t| t.iter())
        .find(|(k, _)| crate::catalog::served::source_keys().any(|s| s == k.get_ref()))
        .map_or_else(|| src.file(), |(k, _)| src.at(k.span()));
    for (retriever, abstain) in retrievers {
        let Some(rows) = retriever.served_rows() else { continue };
        if let Some(what) = crate::catalog::served::without_server(rows, servers) {
            return Err(Error::input(
                served_at,
                format!(
                    "{what} {:?} is read on the team's own server: declare it in [engines.{}] (its url)",
                    rows.source, rows.engine
                ),
            ));
        }
        if rows.whole_document_when_not_found && raw.unit != Unit::Doc {
            return Err(Error::input(
                served_at,
                format!(
                    "unplaced = \"document\" counts a row of {:?} its document does not hold as that whole document: labels can only judge it at document level (unit = \"doc\")",
                    rows.source
                ),
            ));
        }
        for &filter in filters {
            if filter == Filter::InQuery && retriever.served_acl() == Some(None) {
                let at_filter = raw.filter.as_ref().map_or_else(|| src.file(), |f| src.at(f.span()));
                return Err(Error::input(
                    at_filter,
                    format!(
                        "filter = \"in_query\" searches {:?} with its groups: name the field that holds them (acl_field)",
                        rows.source
                    ),
                ));
            }
            let chunker = ChunkerSpec::served(rows.clone());
            cells.push(Cell { id: String::new(), chunker, retriever: retriever.clone(), filter, abstain: *abstain });
        }
    }
    if cells.is_empty() {
        return Err(Error::input(src.file(), "the grid is empty: declare [[chunkers]] and [[retrievers]]"));
    }
    let width = cells.len().to_string().len().max(2);
    for (i, cell) in cells.iter_mut().enumerate() {
        cell.id = format!("c{:0width$}", i + 1);
    }
    Ok(cells)
}
