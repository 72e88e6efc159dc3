//! The run report: one self-contained HTML page per run (`report.html`) and the summary for
//! pull requests (`summary.md`), both built from the files of a finished run directory, so a
//! run, a merge and `ragsweep report` on an old run take the same path.
//!
//! The page inlines its data (JSON), style and script: it opens from `file://` and makes no
//! network request (its Content-Security-Policy forbids any, and runs only the page's own
//! script, by its sha256). The data is escaped so that no text in it can end or reopen a script.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use crate::atomic::write_atomic;
use crate::compare::{self, RunData, Side};
use crate::error::Result;
use crate::input::text;
use crate::output::{labels, summary};
use crate::results::{CaseInfo, CaseLine, Manifest, Matrix, Row};

const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// The JSON lines of `path`, none when the file does not exist (older runs lack some).
fn lines_if_any<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    if path.exists() {
        text::jsonl(path)
    } else {
        Ok(Vec::new())
    }
}

/// A number rounded for the page (4 decimals).
fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// A mean as `[value, lo, hi]` (nulls where missing), rounded for the page.
fn triple(m: &crate::evaluate::metrics::Mean) -> Value {
    json!([m.value.map(round4), m.ci.map(|c| round4(c.lo)), m.ci.map(|c| round4(c.hi))])
}

/// Every metric column as `name: [value, lo, hi]`.
fn triples(metrics: &crate::results::Ordered<crate::evaluate::metrics::Mean>) -> serde_json::Map<String, Value> {
    metrics.0.iter().map(|(k, m)| (k.clone(), triple(m))).collect()
}

fn row_data(r: &Row) -> Value {
    let metrics = triples(&r.metrics);
    json!({
        "cell": r.cell,
        "split": r.split.as_str(),
        "filter": r.filter.to_string(),
        "cases": r.cases,
        "leaks": r.leaks,
        "restricted_hits": r.restricted_hits,
        "short": r.short_lists,
        "under_return": r.under_return,
        "recall_vs_oracle": r.recall_vs_oracle,
        "metrics": metrics,
        "p50": r.latency.as_ref().map(|l| l.p50_ms),
        "p95": r.latency.as_ref().map(|l| l.p95_ms),
        "usd": r.usd_per_1k_queries,
        "vs_best": r.vs_best,
        "p": r.p_vs_best,
        "misses": r.misses,
    })
}

/// The page's data: everything the script draws.
#[derive(Serialize)]
struct Data {
    experiment: String,
    unit: String,
    run_id: String,
    corpus: Value,
    golden_hash: String,
    /// The cut-off the report's pool of unjudged units is drawn at.
    pool_k: usize,
    cases_per_split: Value,
    decision: String,
    columns: Vec<String>,
    ks: Vec<usize>,
    /// The cut-offs the page can pick: each k, then each budget (`1024t`).
    cuts: Vec<String>,
    selection: Value,
    no_selection: Value,
    health: Vec<String>,
    /// The configuration keys that vary in the grid (each cell's `config` has them).
    varying: Vec<String>,
    /// Whether any price was declared (without one every cost is 0).
    priced: bool,
    /// The run's warnings by what they threaten, most decisive first: `{about, warnings}`.
    warnings: Vec<Value>,
    cells: Vec<Value>,
    rows: Vec<Value>,
    slices: Vec<Value>,
    cases: Vec<Value>,
    /// Per cell (in `cells` order), per case (in `cases` order): the rank of the first
    /// relevant item in the judged list, 0 when none; -1 for an unanswerable case, -2 for a
    /// restricted-answer case whose list held nothing restricted, -3 when it did.
    first: Vec<Vec<i64>>,
    /// Per budget cut (`1024t`), per cell, per case: 1 hit, 0 miss, -1 not scored.
    budget_hits: BTreeMap<String, Vec<Vec<i8>>>,
    vs: Option<Value>,
}

/// Another run to compare a report with.
#[derive(Debug, Clone, Copy)]
pub struct Vs<'a> {
    pub run: &'a Path,
    /// Compare even when the runs used different golden sets (the page then says so).
    pub allow_different_golden: bool,
}

fn build(dir: &Path, vs: Option<Vs<'_>>) -> Result<(String, String)> {
    let matrix: Matrix = text::json(&dir.join("matrix.json"), "matrix")?;
    let manifest: Manifest = text::json(&dir.join("manifest.json"), "run manifest")?;
    let lines: Vec<CaseLine> = lines_if_any(&dir.join("per_query.jsonl"))?;
    let case_info: Vec<CaseInfo> = lines_if_any(&dir.join("cases.jsonl"))?;

    let mut cases: Vec<Value> = Vec::new();
    let mut case_index: HashMap<&str, usize> = HashMap::new();
    for c in &case_info {
        case_index.insert(&c.case, cases.len());
        let terms: Vec<&str> = c.exact_terms.iter().map(|t| t.text.as_str()).collect();
        cases.push(json!({"id": c.case, "question": c.question, "split": c.split.as_str(), "answerable": c.answerable, "restricted": c.restricted, "terms": terms, "tags": c.tags}));
    }
    for l in &lines {
        if !case_index.contains_key(l.case.as_str()) {
            case_index.insert(&l.case, cases.len());
            cases.push(json!({"id": l.case, "question": "", "split": l.split.as_str(), "answerable": l.answerable, "terms": [], "tags": []}));
        }
    }
    let varying = labels::varying_keys(&matrix.rows);
    let short = labels::varying_labels(&matrix.rows);
    let cells: Vec<Value> = manifest
        .cells
        .iter()
        .map(|c| {
            let family = c.retriever.family();
            let row = matrix.rows.iter().find(|r| r.cell == c.cell);
            let config: serde_json::Map<String, Value> =
                varying.iter().map(|k| (k.clone(), json!(row.map_or("", |r| labels::value_of(r, k))))).collect();
            let short = short.get(&c.cell).cloned().unwrap_or_else(|| c.label.clone());
            json!({"id": c.cell, "label": c.label, "short": short, "family": family, "config": config})
        })
        .collect();
    let cell_index: HashMap<&str, usize> =
        manifest.cells.iter().enumerate().map(|(i, c)| (c.cell.as_str(), i)).collect();
    let restricted: HashMap<&str, bool> = case_info.iter().map(|c| (c.case.as_str(), c.restricted)).collect();
    let budgets: Vec<String> = manifest.experiment.budget.iter().map(|b| format!("{b}t")).collect();
    let mut first = vec![vec![-1i64; cases.len()]; cells.len()];
    let mut budget_hits: BTreeMap<String, Vec<Vec<i8>>> =
        budgets.iter().map(|b| (b.clone(), vec![vec![-1i8; cases.len()]; cells.len()])).collect();
    for l in &lines {
        if let (Some(&c), Some(&k)) = (cell_index.get(l.cell.as_str()), case_index.get(l.case.as_str())) {
            first[c][k] = match (l.answerable, restricted.get(l.case.as_str()).copied().unwrap_or(false)) {
                (_, true) if l.restricted_hit => -3,
                (_, true) => -2,
                (true, false) => l.first_relevant.map_or(0, i64::from),
                (false, false) => -1,
            };
            for (budget, hits) in budget_hits.iter_mut() {
                if let Some(Some(v)) = l.metrics.get(&format!("hit@{budget}")) {
                    hits[c][k] = i8::from(*v > 0.0);
                }
            }
        }
    }
    // Per case, the units nobody judged that the cells ranked within the headline k (SPEC §9).
    let headline = crate::vocab::headline_k(&manifest.experiment.k) as u32;
    let mut pool: Vec<BTreeMap<&str, Vec<&str>>> = vec![BTreeMap::new(); cases.len()];
    for l in &lines {
        if let Some(&k) = case_index.get(l.case.as_str()) {
            for u in l.unjudged.iter().filter(|u| u.rank <= headline) {
                pool[k].entry(u.id.as_str()).or_default().push(l.cell.as_str());
            }
        }
    }
    for (case, units) in cases.iter_mut().zip(&pool) {
        let mut units: Vec<(&&str, &Vec<&str>)> = units.iter().collect();
        units.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
        case["unjudged"] = json!(units.iter().map(|(id, cells)| json!({"id": id, "cells": cells})).collect::<Vec<_>>());
    }
    let vs = match vs {
        None => None,
        Some(Vs { run: other, allow_different_golden }) => {
            let (a, b) = (RunData::load(other)?, RunData::load(dir)?);
            let banner = if a.same_golden(&b) {
                String::new()
            } else if allow_different_golden {
                format!(
                    "WARNING: the two runs used different golden sets ({}): only cases with the same id are compared, and they may not ask the same question.\n\n",
                    a.golden_difference(&b)
                )
            } else {
                return Err(crate::error::Error::Comparison(format!(
                    "not comparable: {} and {} used different golden sets ({}); \
                     pass --allow-different-golden to compare the cases they share anyway",
                    other.display(),
                    dir.display(),
                    a.golden_difference(&b)
                )));
            };
            Some(grid_comparison(&a, &b, other, banner)?)
        }
    };
    let data = Data {
        experiment: matrix.experiment.clone(),
        unit: matrix.unit.clone(),
        run_id: manifest.run_id.clone(),
        pool_k: headline as usize,
        corpus: json!({"path": manifest.corpus.path, "hash": manifest.corpus.hash, "documents": manifest.corpus.documents, "public": manifest.corpus.public_documents}),
        golden_hash: manifest.golden.hash.clone(),
        cases_per_split: serde_json::to_value(&manifest.golden.cases_per_split).expect("json"),
        decision: matrix.decision_metric.clone().or_else(|| matrix.columns.first().cloned()).unwrap_or_default(),
        columns: matrix.columns.clone(),
        ks: manifest.experiment.k.clone(),
        // Each k, then each budget, as the rows key them (`@1024t` → `1024t`).
        cuts: matrix.rows.first().map_or_else(Vec::new, |r| r.ctx_tokens.keys().map(|k| k.trim_start_matches('@').to_string()).collect()),
        selection: serde_json::to_value(&matrix.selection).expect("json"),
        no_selection: serde_json::to_value(&matrix.no_selection).expect("json"),
        varying,
        priced: manifest.cost.prices.any(),
        warnings: summary::grouped(&summary::warnings(&matrix, &manifest, None))
            .into_iter()
            .map(|(threat, warnings)| json!({"about": threat.name(), "warnings": warnings}))
            .collect(),
        health: manifest.golden.health.clone(),
        cells,
        rows: matrix.rows.iter().map(row_data).collect(),
        slices: matrix
            .slices
            .iter()
            .map(|s| {
                let metrics = triples(&s.metrics);
                json!({"cell": s.cell, "split": s.split.as_str(), "slice": s.slice, "cases": s.cases, "metrics": metrics})
            })
            .collect(),
        cases,
        first,
        budget_hits,
        vs,
    };
    let data = script_safe_json(&serde_json::to_string(&data).expect("json"));
    let title = html_escape(&format!("ragsweep · {} · {}", matrix.experiment, manifest.run_id));
    let script_hash = script_hash(SCRIPT);
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src '{script_hash}'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>{STYLE}</style></head>\n\
         <body><div id=\"app\"></div>\n<script id=\"data\" type=\"application/json\">{data}</script>\n<script>{SCRIPT}</script></body></html>\n"
    );
    // A run being written sits in a staging folder: the summary names where it will be.
    let shown = dir.parent().map_or_else(|| dir.to_path_buf(), |p| p.join(&manifest.run_id));
    Ok((html, summary::markdown(&matrix, &manifest, &shown, dir)))
}

/// Every cell of run `b` against the cell of run `a` with the same configuration, on `b`'s
/// decision metric and default split: means, the change with its interval and p-value, and
/// the cases it fixed and broke (with their questions).
fn grid_comparison(a: &RunData, b: &RunData, a_dir: &Path, banner: String) -> Result<Value> {
    let metric = b.decision_metric.clone();
    let split = b.default_split();
    let mut compared = Vec::new();
    let mut unmatched = Vec::new();
    for cell in &b.cells {
        let Some(other) = a.cells.iter().find(|c| c.label == cell.label) else {
            unmatched.push(json!({"cell": cell.id, "label": cell.varying}));
            continue;
        };
        let (sa, sb) = (Side { run: a, cell: other }, Side { run: b, cell });
        let c = compare::compare(&sa, &sb, &metric, split)?;
        let cases = |list: &[compare::Change]| -> Vec<Value> {
            list.iter().map(|ch| json!([ch.case, b.question(&ch.case), ch.rank_before, ch.rank_after])).collect()
        };
        compared.push(json!({
            "cell": cell.id, "other": other.id, "label": cell.varying, "n": c.n,
            "a": round4(c.mean_a), "b": round4(c.mean_b), "change": round4(c.mean_b - c.mean_a),
            "lo": c.ci_diff.map(|i| round4(i.lo)), "hi": c.ci_diff.map(|i| round4(i.hi)), "p": round4(c.p_value),
            "fixed": cases(&c.fixed), "broke": cases(&c.broke),
            "not_comparable": !c.only_a.is_empty() || !c.only_b.is_empty(),
        }));
    }
    Ok(json!({
        "other": a_dir.display().to_string(), "banner": banner, "metric": metric,
        "split": split.map_or("all", |s| s.as_str()), "cells": compared, "unmatched": unmatched,
    }))
}

/// JSON that no byte sequence can take out of a `<script>` element: `<`, `>` and `&` (which
/// start `</script>`, `<!--` and the parser's escaped-script states) and the line separators
/// U+2028/U+2029 become `\u` escapes, which the JSON parser reads back unchanged.
fn script_safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The Content-Security-Policy source that allows exactly this inline script.
fn script_hash(script: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    format!("sha256-{}", base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script.as_bytes())))
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Writes `report.html` and `summary.md` into the run directory `dir` (comparing with the
/// run `vs` when given; runs on different golden sets are refused unless allowed).
pub fn write(dir: &Path, vs: Option<Vs<'_>>) -> Result<()> {
    let (html, summary) = build(dir, vs)?;
    write_atomic(&dir.join("report.html"), html.as_bytes())?;
    write_atomic(&dir.join("summary.md"), summary.as_bytes())
}
