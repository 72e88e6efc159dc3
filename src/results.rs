//! The result schema: what a run writes and what `compare`, `check` and `merge` read back.
//!
//! Every type here is `Serialize + Deserialize`, so the writer and the readers share one
//! definition and nothing travels to disk as untyped JSON. Maps keep their order on disk
//! ([`Ordered`]), so a row read back and written again is byte-identical.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::catalog::RetrieverSpec;
use crate::chunkers::ChunkerSpec;
use crate::input::golden::Split;
use crate::vocab::{
    BudgetMiss, EmbedStats, ExactTerm, Filter, Interval, Mean, MetricAt, Miss, MissingAcl, Prices, Rates, SyntheticAcl,
};
pub use crate::vocab::{CUT_COLUMNS, ROW_COLUMNS};

/// A map that keeps its insertion order on disk and when read back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<V> Ordered<V> {
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The i-th value.
    pub fn at(&self, i: usize) -> &V {
        &self.0[i].1
    }

    /// `{"@k": value}` for each cut-off.
    pub fn at_k(ks: &[usize], values: impl IntoIterator<Item = V>) -> Self {
        Ordered(ks.iter().map(|k| format!("@{k}")).zip(values).collect())
    }

    /// `{key: value}` for each key (`@5`, `@1024t`: an experiment's `cut_keys`).
    pub fn of_keys(keys: &[String], values: impl IntoIterator<Item = V>) -> Self {
        Ordered(keys.iter().cloned().zip(values).collect())
    }
}

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered<V>, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(Entries(PhantomData))
    }
}

/// Per-case latency of a cell's whole retrieval call, in milliseconds (SPEC §8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub n: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    /// Views of `stages_ms`: query embedding, every index search, fusion.
    pub embed_ms: f64,
    pub search_ms: f64,
    pub fuse_ms: f64,
    /// Mean milliseconds of each named stage of the call, in call order: `embed`, `search
    /// <source>` per ranking source, `fuse`, and `judge` (the rest of the call: deepening,
    /// the late filter, judging and packing the lists).
    #[serde(default)]
    pub stages_ms: Ordered<f64>,
    /// What the timed call could not include (a model whose vectors were made elsewhere has
    /// no embedder to time): such a latency is never compared to find the fastest cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves_out: Option<String>,
    /// Timed calls made again because an endpoint retried inside them (its backoff is not
    /// the served system's latency); `n` counts only the calls kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: usize,
    /// Of the `n` timed calls, those whose list at the largest k equals the list scored for the
    /// same question (`stable@k`): fewer than `n` when the engine's lists move between calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<usize>,
    /// The cases of the timed calls whose list was not the scored one (at most
    /// [`MAX_MOVED_LISTED`]), so a rerun or a merge can say which questions moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<String>,
}

/// Cases a row's `latency.moved` names at most.
pub const MAX_MOVED_LISTED: usize = 20;

fn is_nothing(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The nearest-rank percentile `p` (0..1) of ascending `sorted` values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    sorted[((n as f64 * p).ceil() as usize).clamp(1, n) - 1]
}

/// The stage of a call that is not embedding, searching or fusing.
pub const JUDGE_STAGE: &str = "judge";

impl Latency {
    /// From each case's total seconds and its seconds per named stage; the time the stages do
    /// not account for is the `judge` stage.
    pub fn of(timings: &[(f64, Vec<(String, f64)>)]) -> Latency {
        let mut totals: Vec<f64> = timings.iter().map(|t| t.0 * 1e3).collect();
        totals.sort_by(f64::total_cmp);
        let n = totals.len();
        let mut stages: Vec<(String, f64)> = Vec::new();
        for (total, parts) in timings {
            let rest = total - parts.iter().map(|p| p.1).sum::<f64>();
            for (name, seconds) in parts.iter().map(|(n, s)| (n.as_str(), *s)).chain([(JUDGE_STAGE, rest.max(0.0))]) {
                match stages.iter_mut().find(|(k, _)| k == name) {
                    Some((_, sum)) => *sum += seconds,
                    None => stages.push((name.to_string(), seconds)),
                }
            }
        }
        let stages_ms = Ordered(stages.into_iter().map(|(k, s)| (k, s * 1e3 / n as f64)).collect());
        // From +0.0: an empty float `sum` is -0.0, which a cell without the stage would print.
        let sum = |keep: &dyn Fn(&str) -> bool| {
            stages_ms.0.iter().filter(|(k, _)| keep(k)).map(|(_, v)| v).fold(0.0, |a, b| a + b)
        };
        Latency {
            n,
            p50_ms: percentile(&totals, 0.50),
            p95_ms: percentile(&totals, 0.95),
            p99_ms: percentile(&totals, 0.99),
            mean_ms: totals.iter().sum::<f64>() / n as f64,
            embed_ms: sum(&|k| k == "embed"),
            search_ms: sum(&|k| k.starts_with("search ")),
            fuse_ms: sum(&|k| k == "fuse"),
            stages_ms,
            leaves_out: None,
            retried: 0,
            stable: None,
            moved: Vec::new(),
        }
    }
}

/// The build cost of a cell: its chunk set, embeddings and indexes (SPEC §8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellCost {
    pub chunks: usize,
    /// Passage tokens embedded for the cell's vectors (model tokenizer, truncated as the model does).
    pub tokens_embedded: u64,
    /// `tokens_embedded` at the declared embedding price.
    pub usd_index: f64,
    pub embed_s: f64,
    pub index_s: f64,
    pub index_bytes: u64,
    /// Texts whose vectors came from the cache (or repeated) instead of being embedded now.
    pub reused_texts: usize,
    /// The first earlier cell that uses the same indexes (work shared, not redone).
    pub shared_index: Option<String>,
    /// The first earlier cell that uses the same embeddings (work shared, not redone).
    pub shared_embeddings: Option<String>,
    /// Mean tokens of an embedded query (dense retrieval).
    pub query_tokens: f64,
    /// What one query costs: embedding it, and the hosted rerankers' usage, at each model's price.
    #[serde(default)]
    pub usd_per_query: f64,
    /// Tokens a question's reranking read, as hosted rerankers' answers report them (mean).
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub rerank_tokens: f64,
    /// Search units a question's reranking was billed (Cohere), mean.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub rerank_searches: f64,
    /// Share of the cell's chunks longer than its embedding model reads (`max_length`).
    #[serde(default)]
    pub truncated_chunks: Option<f64>,
    /// Share of the chunks' tokens the embedding model never saw.
    #[serde(default)]
    pub truncated_tokens: Option<f64>,
}

/// A cell's abstention on one split (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AbstainRow {
    /// The floor used; calibrated on the tuning split when `calibrated`.
    pub floor: f64,
    pub calibrated: bool,
    pub rates: Rates,
}

/// One row of the result matrix: a cell on one split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub label: String,
    /// Named configuration values (chunker, retriever, filter, …), in a fixed order.
    pub config: Ordered<String>,
    pub filter: Filter,
    pub split: Split,
    pub cases: usize,
    pub unanswerable: usize,
    /// Returned chunks the asking users may not see, summed over cases.
    pub leaks: usize,
    /// Restricted-answer cases (SPEC §1) whose list held a labelled unit the user may not see.
    pub restricted_hits: usize,
    /// Section unit: of the relevant items at the largest k, the share placed by chunks that
    /// span several labelled sections (credited for each of them); `None` without such items.
    #[serde(default)]
    pub spanning_hits: Option<f64>,
    pub latency: Option<Latency>,
    pub cost: CellCost,
    /// Per cut-off: mean tokens of the top k chunks a model would be sent.
    pub ctx_tokens: Ordered<f64>,
    /// Per cut-off: context sent to the model plus the query embedding, per 1,000 queries.
    pub usd_per_1k_queries: Ordered<f64>,
    /// Per cut-off: cases that got fewer than k results.
    pub short_lists: Ordered<usize>,
    /// Per k, for cells with an approximate or engine source: cases whose list was shorter
    /// than the oracle's (SPEC §5); empty for other cells.
    #[serde(default, skip_serializing_if = "Ordered::is_empty")]
    pub under_return: Ordered<usize>,
    /// Per k: mean share of the oracle's top k the cell returned (cases where the oracle
    /// found something); empty for cells without an oracle.
    #[serde(default, skip_serializing_if = "Ordered::is_empty")]
    pub recall_vs_oracle: Ordered<Option<f64>>,
    /// Per k, for cells served by an engine: the plan the engine chose for a list of k
    /// (`vector index`, `sequential scan (index unused)`), read with `EXPLAIN` once per k.
    #[serde(default, skip_serializing_if = "Ordered::is_empty")]
    pub engine_plan: Ordered<String>,
    pub abstain: Option<AbstainRow>,
    /// Every metric column's mean, n and interval, in column order.
    pub metrics: Ordered<Mean>,
    /// Holm-adjusted p-value of the paired test against the best eligible cell of this split
    /// on the decision metric (SPEC §7); 1 for the best cell itself.
    #[serde(default)]
    pub p_vs_best: Option<f64>,
    /// Best, equivalent (within ±margin), undecided or worse against the best eligible cell of
    /// this split (SPEC §7); none for cells that may not be selected.
    #[serde(default)]
    pub vs_best: Option<crate::vocab::VsBest>,
    /// 95% bootstrap interval of the paired difference best − this cell on the decision metric.
    #[serde(default)]
    pub diff_vs_best: Option<Interval>,
    /// Per cut-off (`@k`): missed answerable cases by first cause (`evaluate::causes`).
    #[serde(default)]
    pub misses: Ordered<Ordered<usize>>,
    /// Unjudged units ranked above the first relevant item (or within the cut when none is),
    /// summed over answerable cases, at [`crate::vocab::judged_k`], and the cases with any.
    #[serde(default)]
    pub unjudged_above: (usize, usize),
}

#[cfg(test)]
impl Row {
    /// A row with one metric's mean over `n` cases and nothing else, for tests.
    pub(crate) fn of_mean(cell: &str, split: Split, metric: &str, value: f64, n: usize) -> Row {
        Row {
            cell: cell.into(),
            label: format!("label {cell}"),
            config: Ordered::default(),
            filter: Filter::None,
            split,
            cases: n,
            unanswerable: 0,
            leaks: 0,
            restricted_hits: 0,
            spanning_hits: None,
            latency: None,
            cost: Default::default(),
            ctx_tokens: Ordered::default(),
            usd_per_1k_queries: Ordered::default(),
            short_lists: Ordered::default(),
            under_return: Ordered::default(),
            recall_vs_oracle: Ordered::default(),
            engine_plan: Ordered::default(),
            abstain: None,
            metrics: Ordered(vec![(metric.into(), Mean { value: Some(value), n, ci: None })]),
            p_vs_best: None,
            vs_best: None,
            diff_vs_best: None,
            misses: Ordered::default(),
            unjudged_above: (0, 0),
        }
    }
}

impl Row {
    /// The value of a named column (a metric column such as `hit@10`, one of [`ROW_COLUMNS`] or
    /// [`CUT_COLUMNS`] at a cut); `None` when the row has no value there (not measured,
    /// undefined, or no such column).
    pub fn value(&self, column: &str) -> Option<f64> {
        if let Some(m) = self.metrics.get(column) {
            return m.value;
        }
        if let Some((name, cut)) = column.split_once('@') {
            let cut = format!("@{cut}");
            return match name {
                "short_lists" => self.short_lists.get(&cut).map(|&n| n as f64),
                "under_return" => self.under_return.get(&cut).map(|&n| n as f64),
                "recall_vs_oracle" => self.recall_vs_oracle.get(&cut).copied().flatten(),
                "ctx_tokens" => self.ctx_tokens.get(&cut).copied(),
                "usd_per_1k_queries" => self.usd_per_1k_queries.get(&cut).copied(),
                _ => None,
            };
        }
        let latency = self.latency.as_ref();
        let cost = &self.cost;
        match column {
            "cases" => Some(self.cases as f64),
            "unanswerable" => Some(self.unanswerable as f64),
            "leaks" => Some(self.leaks as f64),
            "restricted_hits" => Some(self.restricted_hits as f64),
            "spanning_hits" => self.spanning_hits,
            "p50_ms" => latency.map(|l| l.p50_ms),
            "p95_ms" => latency.map(|l| l.p95_ms),
            "p99_ms" => latency.map(|l| l.p99_ms),
            "mean_ms" => latency.map(|l| l.mean_ms),
            "embed_ms" => latency.map(|l| l.embed_ms),
            "search_ms" => latency.map(|l| l.search_ms),
            "fuse_ms" => latency.map(|l| l.fuse_ms),
            "chunks" => Some(cost.chunks as f64),
            "tokens_embedded" => Some(cost.tokens_embedded as f64),
            "usd_index" => Some(cost.usd_index),
            "embed_s" => Some(cost.embed_s),
            "index_s" => Some(cost.index_s),
            "index_bytes" => Some(cost.index_bytes as f64),
            "truncated_chunks" => cost.truncated_chunks,
            "truncated_tokens" => cost.truncated_tokens,
            "abstain_ok" => self.abstain.and_then(|a| a.rates.ok),
            "abstain_wrong" => self.abstain.and_then(|a| a.rates.wrong),
            _ => None,
        }
    }
}

/// Means of one slice of a cell's cases on one split (exact-term cases, a golden tag, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceRow {
    pub cell: String,
    pub split: Split,
    pub slice: String,
    pub cases: usize,
    pub metrics: Ordered<Mean>,
}

/// What a case is, once per run: its question, the exact terms it hinges on, its tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseInfo {
    pub case: String,
    pub question: String,
    pub split: Split,
    pub answerable: bool,
    /// A restricted-answer case: labelled, but invisible to its user (SPEC §1).
    #[serde(default)]
    pub restricted: bool,
    pub exact_terms: Vec<ExactTerm>,
    /// The golden set's own tags (slices beside the exact-term tags).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The golden case's free `meta` object, carried as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

/// What one case got in one cell, in memory.
#[derive(Debug, Clone, Default)]
pub struct CaseResult {
    pub cell: String,
    pub case: String,
    pub split: Split,
    pub answerable: bool,
    /// One value per metric column; `None` when undefined or unanswerable.
    pub values: Vec<Option<f64>>,
    /// The judged list's items (keys and scores), up to the deepest k, or as deep as the
    /// largest budget's packing read when that is deeper (SPEC §3: a budget decision is
    /// auditable from the exported list).
    pub ranking: Vec<(String, f32)>,
    /// Per budget: the items its packed context holds (the first of `ranking`).
    pub packed_items: Vec<usize>,
    /// The ranked chunks of the case's last search call (id, score), unfiltered under `post`:
    /// what `rescore` judges again with new labels. `None` for a cell that searches each k
    /// with its own call (an engine).
    pub hits: Option<Vec<(String, f32)>>,
    /// The units a person could judge (SPEC §9): each unjudged item of `ranking` the case's user
    /// may see, as the unit it would be judged as, with its 1-based rank (first rank per unit).
    pub unjudged: Vec<(String, u32)>,
    /// The lists of the cut-offs whose list is not the first k of `ranking` (an engine cell
    /// asks each k with its own query, whose plan can differ), as `(cut key, item keys)`.
    pub top_at: Vec<(String, Vec<String>)>,
    /// Per cut-off (each k, then each budget): whether the case got fewer than k results (at a
    /// budget: whether the list ran out before the budget was filled).
    pub short: Vec<bool>,
    /// Returned chunks the asking user may not see.
    pub leaks: usize,
    /// A restricted-answer case whose list held a labelled unit.
    pub restricted_hit: bool,
    /// Relevant items at the largest k, and how many came from chunks spanning several
    /// labelled sections (section unit).
    pub spanning: (u32, u32),
    /// Per cut-off (each k, then each budget): tokens of the context a model would be sent.
    pub ctx_tokens: Vec<u32>,
    /// 1-based rank of the first relevant item in the judged list (deepest k), if any.
    pub first_relevant: Option<u32>,
    /// The score of the list's first item, which abstention compares with its floor.
    pub top_score: Option<f32>,
    /// Chunks fetched by the last search call of the deepest list (what latency times too).
    pub depth: usize,
    /// Each cut-off at which the case (answerable) had no relevant item, with its cause.
    pub misses: Vec<Miss>,
    /// Each context budget whose packed context held no relevant item, with its cause.
    pub budget_misses: Vec<BudgetMiss>,
    /// Per cut-off k, for a cell with an approximate or engine source: its list against the
    /// oracle's (the same cell with exact in-process search in place of those sources).
    pub parity: Vec<Parity>,
    /// The case's labels as scored ([`crate::input::golden::GoldenCase::labels_key`]).
    pub labels: String,
}

impl CaseResult {
    /// The list scored at cut-off `k`: its own (`top_at`) or the first k of the ranking.
    pub fn list_at(&self, k: usize) -> Vec<&str> {
        let cut = format!("@{k}");
        match self.top_at.iter().find(|(c, _)| *c == cut) {
            Some((_, own)) => own.iter().map(String::as_str).collect(),
            None => self.ranking.iter().take(k).map(|(key, _)| key.as_str()).collect(),
        }
    }
}

/// One case's list at one k against the oracle's list (SPEC §5 filter parity).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Parity {
    /// Fewer items than k although the oracle, under the same access, found more.
    pub under_return: bool,
    /// Share of the oracle's top k that the list holds; `None` when the oracle found nothing.
    pub recall_vs_oracle: Option<f64>,
}

impl Parity {
    /// A list (best first, cut at k) against the oracle's list of the same query and access.
    pub fn of<T: PartialEq>(list: &[T], oracle: &[T]) -> Parity {
        let found = oracle.iter().filter(|item| list.contains(item)).count();
        Parity {
            under_return: list.len() < oracle.len(),
            recall_vs_oracle: (!oracle.is_empty()).then(|| found as f64 / oracle.len() as f64),
        }
    }
}

/// Items listed per case in `per_query.jsonl`.
pub const PER_QUERY_TOP: usize = 10;

/// A unit nobody has judged for a case, at the first rank a cell's list placed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnjudgedUnit {
    pub id: String,
    pub rank: u32,
}

/// One line of `per_query.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseLine {
    pub cell: String,
    pub case: String,
    pub split: Split,
    pub answerable: bool,
    pub metrics: Ordered<Option<f64>>,
    #[serde(default)]
    pub first_relevant: Option<u32>,
    #[serde(default)]
    pub top_score: Option<f32>,
    /// The list's items, at least the first ten and as many as the largest budget packed.
    #[serde(default)]
    pub top: Vec<String>,
    /// Per budget: how many of `top`'s items its packed context holds.
    #[serde(default, skip_serializing_if = "Ordered::is_empty")]
    pub packed_items: Ordered<usize>,
    /// The unjudged units of the ranking the user may see, with their first rank (SPEC §9):
    /// what `judge` pools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<UnjudgedUnit>,
    /// The chunks of the case's last search call with their scores (`CaseResult::hits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hits: Option<Vec<(String, f32)>>,
    /// Per k whose list is not the first k of `top` (an engine cell asks each k with its own
    /// query): that k's list, so every metric is recomputable from this file.
    #[serde(default, skip_serializing_if = "Ordered::is_empty")]
    pub top_at: Ordered<Vec<String>>,
    #[serde(default)]
    pub leaks: usize,
    #[serde(default)]
    pub restricted_hit: bool,
    /// Relevant items at the largest k and how many came from chunks spanning several labelled
    /// sections.
    #[serde(default)]
    pub spanning: (u32, u32),
    #[serde(default)]
    pub depth: usize,
    /// The cut-offs at which the case was missed, each with its cause (`evaluate::causes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<Miss>,
    /// The context budgets at which the case was missed, each with its cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_misses: Vec<BudgetMiss>,
    /// Per cut-off: tokens of the top k returned chunks.
    #[serde(default)]
    pub ctx_tokens: Ordered<u32>,
    /// Per cut-off: whether the case got fewer than k results.
    #[serde(default)]
    pub short: Ordered<bool>,
    /// Per k: the list against the oracle's, for cells with an approximate or engine source.
    #[serde(default, skip_serializing_if = "Ordered::is_empty")]
    pub parity: Ordered<Parity>,
    /// The case's labels as scored (16 hex digits): `rescore` keeps a miss's cause only for a
    /// case whose labels are still these.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub labels: String,
}

impl CaseLine {
    pub fn of(columns: &[MetricAt], cuts: &[String], r: &CaseResult) -> CaseLine {
        CaseLine {
            cell: r.cell.clone(),
            case: r.case.clone(),
            split: r.split,
            answerable: r.answerable,
            metrics: Ordered(columns.iter().map(|c| c.to_string()).zip(r.values.iter().copied()).collect()),
            first_relevant: r.first_relevant,
            top_score: r.top_score,
            top: {
                let depth = r.packed_items.iter().copied().max().unwrap_or(0).max(PER_QUERY_TOP);
                r.ranking.iter().take(depth).map(|(k, _)| k.clone()).collect()
            },
            packed_items: Ordered(
                cuts.iter().filter(|c| c.ends_with('t')).cloned().zip(r.packed_items.iter().copied()).collect(),
            ),
            unjudged: r.unjudged.iter().map(|(id, rank)| UnjudgedUnit { id: id.clone(), rank: *rank }).collect(),
            hits: r.hits.clone(),
            top_at: Ordered(r.top_at.clone()),
            leaks: r.leaks,
            restricted_hit: r.restricted_hit,
            spanning: r.spanning,
            depth: r.depth,
            misses: r.misses.clone(),
            budget_misses: r.budget_misses.clone(),
            ctx_tokens: Ordered::of_keys(cuts, r.ctx_tokens.iter().copied()),
            short: Ordered::of_keys(cuts, r.short.iter().copied()),
            parity: Ordered::of_keys(cuts, r.parity.iter().copied()),
            labels: r.labels.clone(),
        }
    }

    /// The list the matrix scored at cut-off `k`: its own (`top_at`) or the first k of `top`.
    pub fn list_at(&self, k: usize) -> &[String] {
        match self.top_at.get(&format!("@{k}")) {
            Some(own) => own,
            None => &self.top[..k.min(self.top.len())],
        }
    }

    /// The case result this line was written from, as far as aggregation reads it (the ranking
    /// beyond `top` is not kept). `None` when the line lacks a column or a cut-off of `columns`.
    pub fn to_result(&self, columns: &[MetricAt], cuts: &[String]) -> Option<CaseResult> {
        let values = columns.iter().map(|c| self.metrics.get(&c.to_string()).copied()).collect::<Option<Vec<_>>>()?;
        Some(CaseResult {
            cell: self.cell.clone(),
            case: self.case.clone(),
            split: self.split,
            answerable: self.answerable,
            values,
            ranking: Vec::new(),
            packed_items: self.packed_items.values().copied().collect(),
            unjudged: self.unjudged.iter().map(|u| (u.id.clone(), u.rank)).collect(),
            hits: self.hits.clone(),
            top_at: self.top_at.0.clone(),
            short: cuts.iter().map(|k| self.short.get(k).copied()).collect::<Option<_>>()?,
            leaks: self.leaks,
            restricted_hit: self.restricted_hit,
            spanning: self.spanning,
            ctx_tokens: cuts.iter().map(|k| self.ctx_tokens.get(k).copied()).collect::<Option<_>>()?,
            first_relevant: self.first_relevant,
            top_score: self.top_score,
            depth: self.depth,
            misses: self.misses.clone(),
            budget_misses: self.budget_misses.clone(),
            parity: self.parity.values().copied().collect(),
            labels: self.labels.clone(),
        })
    }
}

/// The configuration chosen on the tuning split and how it did on the reserved one (SPEC §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    pub metric: String,
    /// The eligible cell with the best tuning score (ties: the first cell).
    pub cell: String,
    pub label: String,
    pub tuning: f64,
    pub reserved: Option<f64>,
    /// 1-based rank of the selected cell among the eligible cells by reserved score.
    pub reserved_rank: Option<usize>,
    /// Eligible cells with a tuning score.
    pub cells: usize,
    /// Tuning minus reserved score of the selected cell.
    pub optimism: Option<f64>,
    /// Kendall's tau-b between the eligible cells' tuning and reserved scores.
    pub kendall_tau: Option<f64>,
    /// Cells that could not be selected, and why.
    #[serde(default)]
    pub excluded: Vec<(String, String)>,
    /// What chose among the cells equivalent to the best.
    #[serde(default)]
    pub prefer: crate::vocab::Prefer,
    /// The cell with the best tuning score (the selected one unless `prefer` chose another).
    #[serde(default)]
    pub best: String,
    /// The best cell and the eligible cells equivalent to it on tuning (SPEC §7), best first.
    #[serde(default)]
    pub equivalent: Vec<String>,
    /// Eligible cells the tuning data cannot place: neither worse nor equivalent.
    #[serde(default)]
    pub undecided: Vec<String>,
    /// The equivalence margin on the decision metric's scale.
    #[serde(default)]
    pub margin: f64,
    /// Share of eligible cells whose optimism is below the selected cell's.
    #[serde(default)]
    pub optimism_percentile: Option<f64>,
    /// With `prefer`: the rule that chose the cell among those equivalent to the best, in words.
    #[serde(default)]
    pub rule: Option<String>,
    /// `model:NAME` when the scores and standings chosen on are prediction-powered means
    /// leaning on that chat model's suggested grades (`[golden] suggestions`), not people's
    /// labels alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grades_by: Option<String>,
}

impl Selection {
    /// Whether `cell` was left out of the selection (leaked, or failed a `require`).
    pub fn excludes(&self, cell: &str) -> bool {
        self.excluded.iter().any(|(c, _)| c == cell)
    }
}

/// A mean with its two-sided interval, and how much a model's values were trusted (λ):
/// a prediction-powered estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    pub lambda: f64,
}

/// How people's grades and a model's agree on the units both graded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub units: usize,
    /// `confusion[person][model]`.
    pub confusion: [[usize; 3]; 3],
    /// Cohen's κ with quadratic weights (0 = chance, 1 = always the same grade); `None` when
    /// chance alone explains every grade (one grade only).
    pub kappa: Option<f64>,
}

/// One cell's decision metric on a split three ways: people's labels only (unjudged units not
/// relevant, as a run counts them), the model's grade on every pooled unit, and by PPI; and
/// its standing against the best PPI estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpiCell {
    pub cell: String,
    pub people_only: f64,
    pub model_only: f64,
    /// `None` when fewer than two cases were judged through while the model values others.
    pub ppi: Option<Estimate>,
    /// The difference to the best cell's estimate, by PPI on per-case differences.
    pub vs_best: Option<Estimate>,
    /// Where the cell stands against the best by that difference (eligible cells only).
    pub standing: Option<crate::vocab::VsBest>,
}

/// A split's cases by what their pools (the units the cells returned within the decision's
/// cut that the golden set does not label) hold, and every cell's estimates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpiSplit {
    pub split: Split,
    /// Cases whose value is known: nothing pooled.
    pub nothing_pooled: usize,
    /// Cases whose every pooled unit people judged: the sample that corrects the model.
    pub judged_through: usize,
    /// Cases valued from the model's grades, corrected.
    pub model_graded: usize,
    /// Pooled units the model graded.
    pub model_units: usize,
    /// The eligible cell with the best PPI estimate.
    pub best: Option<String>,
    pub cells: Vec<PpiCell>,
}

/// The decision an experiment leaning on a chat model's suggested grades asks for
/// (`[golden] suggestions`): each cell's decision metric by prediction-powered inference per
/// split, and what the model's grades are worth beside people's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuggestedGrades {
    /// `model:NAME`.
    pub model: String,
    pub metric: String,
    /// 1 − the intervals' confidence.
    pub alpha: f64,
    pub agreement: Agreement,
    pub splits: Vec<PpiSplit>,
    /// Why the selection stayed on people's labels, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_used: Option<String>,
}

/// `matrix.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub experiment: String,
    pub unit: String,
    /// The metric cells are compared on (`select`, else the first metric at k = 10 or the largest k).
    #[serde(default)]
    pub decision_metric: Option<String>,
    pub selection: Option<Selection>,
    /// Why an experiment that asked for a selection has none (no cell was eligible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_selection: Option<NoSelection>,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    pub slices: Vec<SliceRow>,
    /// Cells that failed, with why (they have no rows): the run is incomplete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<(String, String)>,
    /// The decision by PPI when the experiment leans on a chat model's grades.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested: Option<SuggestedGrades>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    pub stage: String,
    pub key: String,
    pub seconds: f64,
    pub chunks: usize,
    pub bytes: u64,
    /// True when the stage was read from the on-disk stage cache instead of built.
    #[serde(default)]
    pub reused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbedStats>,
    /// What a reader should know about what the stage made (documents a chunker left whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// An index stage whose index is its input as it is (an exact scan): not said as work.
    #[serde(skip)]
    pub builds_nothing: bool,
}

impl StageReport {
    pub fn new(stage: &str, key: String, seconds: f64) -> Self {
        StageReport {
            stage: stage.into(),
            key,
            seconds,
            chunks: 0,
            bytes: 0,
            reused: false,
            embedding: None,
            note: None,
            builds_nothing: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: usize,
    pub of: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentInfo {
    pub name: String,
    pub description: Option<String>,
    /// The experiment file, absolute.
    pub file: std::path::PathBuf,
    /// The experiment file relative to the run directory, so a run moved together with its
    /// experiment and corpus still finds them.
    #[serde(default)]
    pub file_from_run: Option<std::path::PathBuf>,
    pub config_hash: String,
    pub unit: String,
    pub k: Vec<usize>,
    /// Context budgets in tokens (SPEC §3).
    #[serde(default)]
    pub budget: Vec<usize>,
    pub metrics: Vec<String>,
    pub seed: u64,
    pub reserved_fraction: f64,
    /// The metric `select` picks the configuration by, if any.
    #[serde(default)]
    pub select: Option<String>,
    /// The equivalence margin (SPEC §7).
    #[serde(default = "default_margin")]
    pub margin: f64,
    /// `require` constraints, as parsed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require: Vec<crate::vocab::Requirement>,
}

fn default_margin() -> f64 {
    crate::vocab::DEFAULT_MARGIN
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusInfo {
    pub path: std::path::PathBuf,
    pub hash: String,
    pub documents: usize,
    /// Documents visible to everyone (no ACL).
    #[serde(default)]
    pub public_documents: usize,
    /// What the readers read, skipped and left out, and why (`ReadReport::summary`).
    #[serde(default)]
    pub read: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenInfo {
    pub path: std::path::PathBuf,
    pub hash: String,
    pub tuning_qrels: Vec<String>,
    pub reserved_qrels: Vec<String>,
    pub default_groups: Vec<String>,
    pub synthetic_acl: Option<SyntheticAcl>,
    /// What a document without an ACL meant in this run.
    #[serde(default)]
    pub missing_acl: MissingAcl,
    pub cases_per_split: BTreeMap<Split, usize>,
    /// Golden-set health warnings (too few cases, repeated questions, long labels).
    #[serde(default)]
    pub health: Vec<String>,
    /// The judgments the run scored with (SPEC §9); `hash` above covers them too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgments: Option<crate::input::judgments::JudgmentsInfo>,
    /// How complete the golden set's labels are (`[golden] labels`).
    #[serde(default)]
    pub labels: crate::input::golden::Labels,
    /// Cases left out as drafts nobody has reviewed yet (`init`'s questions, unedited).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drafts_waiting: usize,
}

/// A model as the manifest records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    pub id: String,
    pub description: Option<String>,
    pub file_hash: String,
    /// The vector-cache key: a hash of the model files and every embedding setting.
    #[serde(default)]
    pub key: String,
    pub dim: usize,
    pub max_length: usize,
    pub query_prefix: String,
    pub passage_prefix: String,
    /// Its vectors were read from files (`kind = "vectors"`), not embedded by ragsweep.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub made_elsewhere: bool,
}

/// A cell as the manifest records it; chunker and retriever as the experiment spelled them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellEntry {
    pub cell: String,
    pub label: String,
    pub chunker: ChunkerSpec,
    pub retriever: RetrieverSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostInfo {
    pub prices: Prices,
    pub counting_tokenizer: String,
}

/// `manifest.json`: what was run, on what, and what each stage cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub ragsweep_version: String,
    pub run_id: String,
    pub shard: Option<ShardInfo>,
    pub experiment: ExperimentInfo,
    pub corpus: CorpusInfo,
    pub golden: GoldenInfo,
    pub models: Vec<ModelEntry>,
    pub cells: Vec<CellEntry>,
    pub cost: CostInfo,
    pub stages: Vec<StageReport>,
    pub wall_seconds: f64,
    /// The models folder and cache the run read (absolute), so that commands on the run
    /// (`explain`, `contexts`, `misses`) find them without `--models` and `--cache`.
    #[serde(default)]
    pub models_dir: Option<std::path::PathBuf>,
    #[serde(default)]
    pub cache_dir: Option<std::path::PathBuf>,
    /// Cells that failed, with why: the run is incomplete (its other cells are whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_cells: Vec<(String, String)>,
    /// The run this one rescored with newer judgments (`ragsweep rescore`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescored_from: Option<String>,
    /// blake3 of `per_query.jsonl` as the run wrote it: `rescore` reads recorded rankings only
    /// when they are what was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_query_blake3: Option<String>,
}

/// One context item a generator would receive: a returned chunk, in rank order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextItem {
    /// 1-based position in the context (what inline markers like `[1]` name).
    pub rank: usize,
    pub chunk: String,
    pub doc: String,
    /// The unit the chunk is judged as (document, section or chunk id), and whether that
    /// unit is labelled relevant for the case. Evaluation data: not for the generator.
    pub unit: String,
    pub relevant: bool,
    /// Whether the asking user may see the chunk. False only in a `filter = none` cell, where
    /// restricted text reaches the context: an answer citing it is not a valid citation.
    pub visible_to_user: bool,
    pub score: f32,
    pub text: String,
}

/// `contexts.jsonl`: per case, what a cell sends a generator at cut-off `k`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextLine {
    pub case: String,
    pub question: String,
    pub split: Split,
    pub answerable: bool,
    pub cell: String,
    /// The cut-off, or with `budget` the number of pieces packed.
    pub k: usize,
    /// The context budget in tokens the pieces were packed into (`contexts --budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
    pub items: Vec<ContextItem>,
}

/// Everything a run produced apart from the streamed per-case files: the matrix, slices,
/// cases and manifest, ready to write (by a run or by `merge`).
#[derive(Debug, Clone)]
pub struct RunResult {
    pub columns: Vec<MetricAt>,
    /// The metric cells are compared on.
    pub decision_metric: MetricAt,
    pub rows: Vec<Row>,
    pub slices: Vec<SliceRow>,
    pub case_info: Vec<CaseInfo>,
    /// The configuration `select` chose (none for a shard, which sees part of the grid).
    pub selection: Option<Selection>,
    /// Why there is no selection when one was asked for.
    pub no_selection: Option<NoSelection>,
    /// The decision by PPI when the experiment leans on a chat model's grades.
    pub suggested: Option<SuggestedGrades>,
    pub manifest: Manifest,
}

/// Why a run that asked for a selection has none: every cell broke a rule (SPEC §5, §7), or no
/// eligible cell has a tuning score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoSelection {
    pub metric: String,
    /// Each rule that left cells out, with the best any cell came to it (`leaks == 0`:
    /// "fewest: c03, 4 leaked chunks").
    pub rules: Vec<(String, String)>,
    /// Every cell left out, and why.
    pub excluded: Vec<(String, String)>,
}

impl NoSelection {
    /// One line: `no cell is eligible on ndcg@10: leaks == 0 (fewest: c03, 4); …`.
    pub fn summary(&self) -> String {
        let rules: Vec<String> = self.rules.iter().map(|(rule, best)| format!("{rule} ({best})")).collect();
        format!("no selection: no cell is eligible on {}: {}", self.metric, rules.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_maps_keep_their_order_through_json() {
        let m = Ordered(vec![("z".to_string(), 1), ("a".to_string(), 2), ("@10".to_string(), 3)]);
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(text, r#"{"z":1,"a":2,"@10":3}"#);
        let back: Ordered<i32> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.95), 95.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
    }
}
