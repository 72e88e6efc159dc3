//! The shared vocabulary: the data types that several layers name (units, metrics, filters,
//! chunker and retriever parameters, prices, judged lists, misses). It imports nothing of the
//! crate, so every folder can use it without importing the folders that compute with it; the
//! behaviour of each type stays with the module that owns it (`impl` blocks there).

use serde::{Deserialize, Serialize};

/// Appended to an engine cell's `plan@k` when it was planned without its approximate index
/// (the engine writes it, the summary warns on it).
pub const INDEX_UNUSED: &str = " (index unused)";

/// The k whose `judged@k` says how complete the labels are: the largest cut-off up to 10.
pub fn judged_k(ks: &[usize]) -> Option<usize> {
    ks.iter().copied().filter(|&k| k <= 10).max()
}

/// The cut-off headline figures are read at when nothing else is chosen: 10 when the grid has
/// it, else its largest.
pub fn headline_k(ks: &[usize]) -> usize {
    if ks.contains(&10) {
        10
    } else {
        ks.iter().copied().max().unwrap_or(10)
    }
}

/// The budget headline figures are read at when nothing else is chosen: 1024 tokens when the
/// grid has it, else its largest.
pub fn headline_budget(budgets: &[usize]) -> usize {
    if budgets.contains(&1024) {
        1024
    } else {
        budgets.iter().copied().max().unwrap_or(1024)
    }
}

/// Where a list is cut: at k items, or at a context budget of B tokens (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    K(usize),
    Budget(usize),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::K(k) => write!(f, "k = {k}"),
            Cut::Budget(b) => write!(f, "budget {b}t"),
        }
    }
}

/// The tokenizer that counts context tokens when an experiment names none.
pub const DEFAULT_COST_TOKENIZER: &str = "o200k_base";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    #[default]
    Doc,
    Section,
    Evidence,
}

/// One item of the judged list L.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// A doc id, section id or chunk id, depending on the unit.
    pub key: String,
    pub score: f32,
    /// The item's grade (0 for non-relevant).
    pub gain: f64,
    /// How many members of R this item adds to |R ∩ L| (for recall).
    pub new: u32,
    /// The chunk that placed the item (its best-ranked chunk).
    pub chunk: u32,
    /// Whether the item carries a judgment: a labelled unit of any grade, 0 included (SPEC §9).
    pub judged: bool,
}

/// The judged list of one case, and what it is judged against.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Judged {
    pub items: Vec<Item>,
    /// |R|.
    pub relevant: usize,
    /// Grades of R, highest first (for the ideal DCG).
    pub ideal: Vec<f64>,
    /// The ranked chunks read to build `items` (what was returned), by ordinal.
    pub returned: Vec<u32>,
}

/// Every metric, in column order: its variant, its name (and the names it is also read by) and
/// what measures it, an expression of `evaluate::metrics`, which alone reads it. The one list a
/// new metric joins: it hands the list to `$then`, so the enum here and the registry of measures
/// there are made from the same lines and cannot drift apart.
macro_rules! metric_list {
    ($then:ident) => {
        $then! {
            Ndcg = "ndcg" => ndcg::Ndcg,
            Recall = "recall" => recall::Recall,
            Hit = "hit" => hit::Hit,
            Mrr = "mrr" => mrr::Mrr,
            Ap = "ap" => ap::Ap,
            Precision = "precision" => precision::Precision,
            /// Token-level measures of a packed context (or the top k chunks) against the
            /// relevant text (SPEC §3).
            TokRecall = "tok_recall" | "tokrecall" => tokens::Tokens(Overlap::recall),
            TokPrecision = "tok_precision" | "tokprecision" => tokens::Tokens(Overlap::precision),
            TokIou = "tok_iou" | "tokiou" => tokens::Tokens(Overlap::iou),
            /// Share of the list's items that carry a judgment (SPEC §9): how complete the
            /// labels are.
            Judged = "judged" => judged::Judged,
        }
    };
}
pub(crate) use metric_list;

/// The metrics' enum from [`metric_list`]: its serde names and [`Metric::name`].
macro_rules! metric_names {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal $(| $alias:literal)* => $measure:expr,)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Metric {
            $($(#[doc = $doc])* #[serde(rename = $name $(, alias = $alias)*)] $variant,)*
        }

        impl Metric {
            /// Every metric, in column order.
            pub const NAMED: [Metric; [$($name),*].len()] = [$(Metric::$variant),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Metric::$variant => $name,)*
                }
            }
        }
    };
}

metric_list!(metric_names);

/// `ndcg@10`-style name of a metric at a cut-off, or `recall@1024t` at a token budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetricAt {
    pub metric: Metric,
    /// The cut-off k, or the budget in tokens when `budget`.
    pub k: usize,
    pub budget: bool,
}

/// A mean over the cases where a value is defined, with its count and (once computed) its
/// 95% bootstrap interval over cases.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mean {
    pub value: Option<f64>,
    pub n: usize,
    pub ci: Option<Interval>,
}

/// A 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Items nobody judged sit above the cut: one of them may be the answer (SPEC §9).
    Unjudged,
    /// No chunk of the cell's chunker counts as a relevant unit: the evidence was cut.
    Chunking,
    /// Every relevant unit is invisible to the case's groups.
    NotVisible,
    /// BM25: no query term, after the cell's analyzer, occurs in the relevant text.
    LexicalMismatch,
    /// HNSW: the exact scan over the same vectors ranks a relevant unit within k.
    Approximation,
    /// Hybrid: a component ranks a relevant unit within k, the fused list does not.
    Fusion,
    /// A reranker: the list it reorders ranks a relevant unit within k, its reordering does not.
    Rerank,
    /// `post`: the in-query filter ranks a relevant unit within k; dropping invisible items
    /// from the unfiltered list left the list short of it.
    FilterLate,
    /// A relevant unit is retrieved just below k: at most [`CUTOFF_MARGIN`] ranks past it.
    Cutoff,
    /// No relevant unit within k + [`CUTOFF_MARGIN`], for none of the reasons above (the
    /// evidence gives its rank when the diagnostic search found it deeper).
    Ranking,
    /// The evidence cannot decide: an evidence span found in none of the documents its
    /// labels name (the golden-set loader makes this rare).
    Undecided,
    /// At a context budget only: the ranking holds a relevant unit, but the budget's tokens
    /// ran out before it (or cut its chunk before the relevant text).
    Budget,
}

/// One miss of one case in one cell at cut-off `k`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Miss {
    pub k: usize,
    pub cause: Cause,
    /// The rank that decided the cause (of the relevant unit in the list the evidence names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// What decided it, in words a user can check against the text.
    pub evidence: String,
    /// In runs written before `unjudged` became a flag: the pipeline's cause under the cause
    /// `unjudged` (`evidence` is then that cause's evidence). New runs leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Cause>,
    /// Items above the cut that carry no judgment (SPEC §9).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unjudged: u32,
}

/// A case missed at a context budget (no relevant item in the packed context): the budget in
/// tokens, and the miss (its `k` is the largest cut-off, the ranking the budget packs from).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetMiss {
    pub budget: usize,
    #[serde(flatten)]
    pub miss: Miss,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Miss {
    /// A miss with its pipeline cause.
    pub fn new(k: usize, cause: Cause, rank: Option<u32>, evidence: String) -> Miss {
        Miss { k, cause, rank, evidence, pipeline: None, unjudged: 0 }
    }

    /// The evidence in words, with how many unjudged items rank above the cut when some do
    /// (runs before the flag recorded `unjudged` as the cause and the pipeline's beside it).
    pub fn explained(&self) -> String {
        match self.pipeline {
            Some(p) if self.cause == Cause::Unjudged => format!(
                "{} of the top {} unjudged (ragsweep judge); if none is relevant: {p} — {}",
                self.unjudged, self.k, self.evidence
            ),
            _ if self.unjudged > 0 => format!(
                "{} ({} of the top {} unjudged: it may not be a miss; ragsweep judge)",
                self.evidence, self.unjudged, self.k
            ),
            _ => self.evidence.clone(),
        }
    }
}

/// Abstention rates at a floor.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Abstaining unanswerable / all unanswerable (`None` when there are none).
    pub ok: Option<f64>,
    /// Abstaining answerable / all answerable (`None` when there are none).
    pub wrong: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tag {
    /// Only digits (and digit-group separators): `429`, `2019`.
    Number,
    /// Digits mixed with letters, dashes, dots, slashes or `§`: `§14.2`, `SKU-123`, `7.3`.
    Code,
    /// Two or more capitals and no lower-case letter: `HTTP`, `LGPD`.
    AllCaps,
    /// A capital after a lower-case letter inside a word: `iPhone`, `PostgreSQL`.
    CamelCase,
    /// Text between quotes.
    Quoted,
    /// A word found in few documents of the corpus (high IDF).
    Rare,
}

/// One exact term of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExactTerm {
    pub text: String,
    pub tags: Vec<Tag>,
    /// Whether the term occurs (case and accent folded) in the text of the case's relevant
    /// documents, sections or evidence.
    pub in_evidence: bool,
}

/// Prices declared in an experiment's `[cost]` table, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// What a hosted embedding API would charge for the tokens embedded.
    pub embedding_usd_per_1m_tokens: f64,
    /// What a model charges for the context sent to it.
    pub llm_usd_per_1m_input_tokens: f64,
}

/// What an embedding pass did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbedStats {
    pub texts: usize,
    /// Texts whose vector was already cached, or repeated earlier in this pass.
    pub reused: usize,
    pub embedded: usize,
    pub seconds: f64,
    /// Tokens of the embedded texts (special tokens included, truncated as the model does).
    #[serde(default)]
    pub tokens: u64,
    /// Tokens the model ran on: each batch is padded to its longest text.
    #[serde(default)]
    pub padded_tokens: u64,
    /// The tokens an endpoint billed for this pass (its answers' `usage`), when every answer
    /// reported them and no text came from the cache: the whole set's price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Filter {
    None,
    InQuery,
    Post,
}

/// What a document without an ACL means: visible to everyone (`public`, the default) or
/// to no one (`deny`, for corpora where every document must name its readers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MissingAcl {
    #[default]
    Public,
    Deny,
}

/// Synthetic ACLs for corpora that have none: every document joins one of `groups` groups
/// (`g0`, `g1`, …) by a stable hash of its id, so a user in one group sees about
/// 1/`groups` of the corpus. Each case without groups is asked by a user in the groups of
/// its relevant documents, so the answer is always visible to the asker.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SyntheticAcl {
    pub groups: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnalyzerKind {
    En,
    Pt,
    Simple,
}

/// PostgreSQL full text: whether a chunk must match any or all of the question's terms
/// (`plainto_tsquery` ANDs them; `any` ORs the same lexemes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Terms {
    Any,
    All,
}

/// pgvector's iterative index scans (0.8): `off` stops after one pass of the index however
/// few rows the filter left; the other two keep scanning until the LIMIT is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterativeScan {
    Off,
    RelaxedOrder,
    StrictOrder,
}

impl IterativeScan {
    pub const ALL: [IterativeScan; 3] = [IterativeScan::Off, IterativeScan::RelaxedOrder, IterativeScan::StrictOrder];

    pub fn as_str(self) -> &'static str {
        match self {
            IterativeScan::Off => "off",
            IterativeScan::RelaxedOrder => "relaxed_order",
            IterativeScan::StrictOrder => "strict_order",
        }
    }
}

/// A serving engine, by the name experiments (`engine = "…"`) and commands give it. Each
/// engine's module names its own (`engine::pgvector::ENGINE`) and `engine::servers::ENGINES`
/// lists them; where a retriever has none, ragsweep's own indexes serve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EngineKind(&'static str);

impl EngineKind {
    pub const fn named(name: &'static str) -> EngineKind {
        EngineKind(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

/// Where the served rows are and which fields say what each row is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServedRows {
    /// The engine that serves them, by its name (`pg`, `milvus`).
    pub engine: String,
    /// The table (`schema.table` or `table`) or collection.
    pub source: String,
    /// The field holding each row's document id (the corpus's id of the document).
    pub id_field: String,
    /// The field holding each row's text.
    pub text_field: String,
    /// A row whose text its document does not hold counts as that whole document (labels at
    /// document level only), instead of stopping the run.
    #[serde(default)]
    pub whole_document_when_not_found: bool,
}

/// How a vector search measures distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distance {
    Cosine,
    L2,
    Ip,
}

impl Distance {
    pub const NAMES: [(&'static str, Distance); 3] =
        [("cosine", Distance::Cosine), ("l2", Distance::L2), ("ip", Distance::Ip)];

    pub fn as_str(self) -> &'static str {
        Distance::NAMES.iter().find(|(_, d)| *d == self).map(|(n, _)| *n).expect("every distance is named")
    }
}

/// Where an eligible cell stands against the best eligible cell of its split on the decision
/// metric (SPEC §7). Not significantly worse is not equal: only `Equivalent` cells may replace
/// the best under a preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VsBest {
    Best,
    /// The 95% interval of the paired difference lies inside ±margin.
    Equivalent,
    /// Neither significantly worse nor shown equivalent: the data cannot decide.
    Undecided,
    /// Significantly worse after Holm's correction, and not equivalent.
    Worse,
}

impl VsBest {
    pub fn as_str(self) -> &'static str {
        match self {
            VsBest::Best => "best",
            VsBest::Equivalent => "equivalent",
            VsBest::Undecided => "undecided",
            VsBest::Worse => "worse",
        }
    }
}

/// A comparison in a `require` constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    #[serde(rename = ">=")]
    AtLeast,
    #[serde(rename = "<=")]
    AtMost,
    #[serde(rename = ">")]
    Above,
    #[serde(rename = "<")]
    Below,
    #[serde(rename = "==")]
    Equal,
}

/// One `require` constraint (SPEC §7): a column of a cell's tuning row, or `slice:metric`,
/// compared with a number, e.g. `exact_term:hit@10 >= 0.9`, `leaks == 0`, `p95_ms <= 50`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requirement {
    /// As written, for messages.
    pub text: String,
    pub slice: Option<String>,
    pub column: String,
    pub op: Comparison,
    pub value: f64,
}

/// The equivalence margin when an experiment sets none, on the decision metric's scale.
pub const DEFAULT_MARGIN: f64 = 0.02;

/// Columns of a matrix row that hold one number, besides the metric columns and the per-cut-off
/// ones ([`CUT_COLUMNS`]): what `require` constraints may name.
pub const ROW_COLUMNS: [&str; 22] = [
    "cases",
    "unanswerable",
    "leaks",
    "restricted_hits",
    "spanning_hits",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "mean_ms",
    "embed_ms",
    "search_ms",
    "fuse_ms",
    "chunks",
    "tokens_embedded",
    "usd_index",
    "embed_s",
    "index_s",
    "index_bytes",
    "truncated_chunks",
    "truncated_tokens",
    "abstain_ok",
    "abstain_wrong",
];

/// Per cut-off columns (`short_lists@10`, `ctx_tokens@1024t`, …).
pub const CUT_COLUMNS: [&str; 5] =
    ["short_lists", "under_return", "recall_vs_oracle", "ctx_tokens", "usd_per_1k_queries"];

impl Comparison {
    const ALL: [(&'static str, Comparison); 5] = [
        (">=", Comparison::AtLeast),
        ("<=", Comparison::AtMost),
        ("==", Comparison::Equal),
        (">", Comparison::Above),
        ("<", Comparison::Below),
    ];

    pub fn holds(self, value: f64, want: f64) -> bool {
        match self {
            Comparison::AtLeast => value >= want,
            Comparison::AtMost => value <= want,
            Comparison::Above => value > want,
            Comparison::Below => value < want,
            Comparison::Equal => value == want,
        }
    }
}

/// Parses `[slice:]column OP number`. `metric_columns` are the experiment's metric columns
/// and `cuts` its cut-off keys (`@10`, `@1024t`), so a column that no row can have is refused
/// here rather than failing every cell later.
pub fn parse_requirement(text: &str, metric_columns: &[MetricAt], cuts: &[String]) -> Result<Requirement, String> {
    let usage = "expected `[slice:]column OP number` with OP one of >=, <=, ==, >, < (e.g. \"exact_term:hit@10 >= 0.9\", \"leaks == 0\", \"p95_ms <= 50\")";
    let (at, op, symbol) = Comparison::ALL
        .iter()
        .filter_map(|&(symbol, op)| text.find(symbol).map(|at| (at, op, symbol)))
        .min_by_key(|&(at, _, symbol)| (at, std::cmp::Reverse(symbol.len())))
        .ok_or_else(|| format!("`{text}`: {usage}"))?;
    let (left, right) = (text[..at].trim(), text[at + symbol.len()..].trim());
    let value: f64 = right
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("`{text}`: `{right}` is not a number; {usage}"))?;
    let (slice, column) = match left.rsplit_once(':') {
        Some((slice, column)) => (Some(slice.trim().to_string()), column.trim().to_string()),
        None => (None, left.to_string()),
    };
    if slice.as_deref().is_some_and(str::is_empty) {
        return Err(format!("`{text}`: the slice name before `:` is empty"));
    }
    let is_metric = metric_columns.iter().any(|m| m.to_string() == column);
    let is_row_column = slice.is_none()
        && (ROW_COLUMNS.contains(&column.as_str())
            || column
                .split_once('@')
                .is_some_and(|(name, cut)| CUT_COLUMNS.contains(&name) && cuts.iter().any(|c| c[1..] == *cut)));
    if !is_metric && !is_row_column {
        let metrics: Vec<String> = metric_columns.iter().map(ToString::to_string).collect();
        let what = if slice.is_some() { "a slice constraint names a metric column" } else { "no such column" };
        return Err(format!(
            "`{text}`: {what}: `{column}` is none of the experiment's metric columns ({}) nor of {} or {}@k",
            metrics.join(", "),
            ROW_COLUMNS.join(", "),
            CUT_COLUMNS.join("@k, ")
        ));
    }
    Ok(Requirement { text: text.trim().to_string(), slice, column, op, value })
}

/// Which cell of those equivalent to the best on tuning the selection names (SPEC §7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prefer {
    /// The best tuning score.
    #[default]
    Quality,
    /// The lowest median latency.
    Latency,
    /// The lowest cost per 1,000 queries at the selection's k.
    Cost,
}
