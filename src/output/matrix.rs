//! The result matrix in every format, from one column table: CSV writes every column,
//! Markdown picks columns from the same table by name, JSON is the typed [`Matrix`]. A
//! header and its values are defined together, so they cannot disagree.

use std::io::{self, Write};

use crate::evaluate::metrics::{Metric, MetricAt};
use crate::results::{Matrix, Row, RunResult, Selection};
use crate::retrieve::access::Filter;

/// One value of a matrix cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    Text(String),
    Int(u64),
    /// A number with its decimals; `None` is empty.
    Num(Option<f64>, usize),
}

impl Field {
    fn render(&self) -> String {
        match self {
            Field::Text(s) => s.clone(),
            Field::Int(n) => n.to_string(),
            Field::Num(Some(v), d) => format!("{v:.d$}"),
            Field::Num(None, _) => String::new(),
        }
    }

    fn num(&self) -> Option<f64> {
        match *self {
            Field::Num(v, _) => v,
            Field::Int(n) => Some(n as f64),
            Field::Text(_) => None,
        }
    }
}

/// A column: its header and how a row fills it.
pub struct Column {
    pub name: String,
    value: Box<dyn Fn(&Row) -> Field>,
}

impl Column {
    fn new(name: impl Into<String>, value: impl Fn(&Row) -> Field + 'static) -> Column {
        Column { name: name.into(), value: Box::new(value) }
    }

    pub fn value(&self, row: &Row) -> Field {
        (self.value)(row)
    }
}

/// Timing columns: they differ between runs.
pub const LATENCY_COLUMNS: [&str; 7] = ["p50_ms", "p95_ms", "p99_ms", "mean_ms", "embed_ms", "search_ms", "fuse_ms"];

/// Every column of the matrix, in order.
pub fn columns(run: &RunResult) -> Vec<Column> {
    // Each k, then each budget (`@1024t`), as the rows key them.
    let cuts: Vec<String> = run.rows.first().map_or_else(Vec::new, |r| r.ctx_tokens.keys().map(String::from).collect());
    let mut names: Vec<String> = Vec::new();
    for row in &run.rows {
        for key in row.config.keys() {
            if !names.iter().any(|n| n == key) {
                names.push(key.to_string());
            }
        }
    }
    let text = |s: &str| Field::Text(s.to_string());
    let mut cols = vec![Column::new("cell", move |r| text(&r.cell)), Column::new("label", move |r| text(&r.label))];
    for name in names {
        let key = name.clone();
        cols.push(Column::new(name, move |r| text(r.config.get(&key).map_or("", String::as_str))));
    }
    cols.push(Column::new("split", move |r| text(r.split.as_str())));
    cols.push(Column::new("cases", |r| Field::Int(r.cases as u64)));
    cols.push(Column::new("unanswerable", |r| Field::Int(r.unanswerable as u64)));
    cols.push(Column::new("leaks", |r| Field::Int(r.leaks as u64)));
    cols.push(Column::new("restricted_hits", |r| Field::Int(r.restricted_hits as u64)));
    cols.push(Column::new("spanning_hits", |r| Field::Num(r.spanning_hits, 4)));
    for (i, cut) in cuts.iter().enumerate() {
        cols.push(Column::new(format!("short_lists{cut}"), move |r| Field::Int(*r.short_lists.at(i) as u64)));
    }
    // Filter parity (cells with an approximate or engine source; empty for the others).
    if let Some(keys) = run.rows.iter().find(|r| !r.under_return.is_empty()).map(|r| r.under_return.keys()) {
        let keys: Vec<String> = keys.map(String::from).collect();
        for cut in keys {
            let key = cut.clone();
            cols.push(Column::new(format!("under_return{cut}"), move |r| match r.under_return.get(&key) {
                Some(&n) => Field::Int(n as u64),
                None => Field::Text(String::new()),
            }));
            let key = cut.clone();
            cols.push(Column::new(format!("recall_vs_oracle{cut}"), move |r| {
                Field::Num(r.recall_vs_oracle.get(&key).copied().flatten(), 6)
            }));
        }
    }
    // The plan an engine chose per k (cells served by an engine; empty for the others).
    if let Some(keys) = run.rows.iter().find(|r| !r.engine_plan.is_empty()).map(|r| r.engine_plan.keys()) {
        for cut in keys.map(String::from).collect::<Vec<_>>() {
            let key = cut.clone();
            cols.push(Column::new(format!("plan{cut}"), move |r| {
                Field::Text(r.engine_plan.get(&key).cloned().unwrap_or_default())
            }));
        }
    }
    for (i, c) in run.columns.iter().enumerate() {
        cols.push(Column::new(c.to_string(), move |r| Field::Num(r.metrics.at(i).value, 6)));
        cols.push(Column::new(format!("{c}_n"), move |r| Field::Int(r.metrics.at(i).n as u64)));
        cols.push(Column::new(format!("{c}_lo"), move |r| Field::Num(r.metrics.at(i).ci.map(|c| c.lo), 6)));
        cols.push(Column::new(format!("{c}_hi"), move |r| Field::Num(r.metrics.at(i).ci.map(|c| c.hi), 6)));
    }
    cols.push(Column::new("p_vs_best", |r| Field::Num(r.p_vs_best, 6)));
    cols.push(Column::new("vs_best", move |r| text(r.vs_best.map_or("", |v| v.as_str()))));
    cols.push(Column::new("diff_vs_best_lo", |r| Field::Num(r.diff_vs_best.map(|c| c.lo), 6)));
    cols.push(Column::new("diff_vs_best_hi", |r| Field::Num(r.diff_vs_best.map(|c| c.hi), 6)));
    cols.push(Column::new("abstain_floor", |r| Field::Num(r.abstain.map(|a| a.floor), 6)));
    cols.push(Column::new("abstain_ok", |r| Field::Num(r.abstain.and_then(|a| a.rates.ok), 6)));
    cols.push(Column::new("abstain_wrong", |r| Field::Num(r.abstain.and_then(|a| a.rates.wrong), 6)));
    let latency: [fn(&crate::results::Latency) -> f64; 7] =
        [|l| l.p50_ms, |l| l.p95_ms, |l| l.p99_ms, |l| l.mean_ms, |l| l.embed_ms, |l| l.search_ms, |l| l.fuse_ms];
    for (name, get) in LATENCY_COLUMNS.iter().zip(latency) {
        cols.push(Column::new(*name, move |r| Field::Num(r.latency.as_ref().map(get), 3)));
    }
    cols.push(Column::new("chunks", |r| Field::Int(r.cost.chunks as u64)));
    cols.push(Column::new("tokens_embedded", |r| Field::Int(r.cost.tokens_embedded)));
    cols.push(Column::new("usd_index", |r| Field::Num(Some(r.cost.usd_index), 6)));
    cols.push(Column::new("embed_s", |r| Field::Num(Some(r.cost.embed_s), 3)));
    cols.push(Column::new("index_s", |r| Field::Num(Some(r.cost.index_s), 3)));
    cols.push(Column::new("index_bytes", |r| Field::Int(r.cost.index_bytes)));
    cols.push(Column::new("truncated_chunks", |r| Field::Num(r.cost.truncated_chunks, 4)));
    cols.push(Column::new("truncated_tokens", |r| Field::Num(r.cost.truncated_tokens, 4)));
    cols.push(Column::new("reused_texts", |r| Field::Int(r.cost.reused_texts as u64)));
    cols.push(Column::new("shared_embeddings", move |r| text(r.cost.shared_embeddings.as_deref().unwrap_or(""))));
    cols.push(Column::new("shared_index", move |r| text(r.cost.shared_index.as_deref().unwrap_or(""))));
    for (i, cut) in cuts.iter().enumerate() {
        cols.push(Column::new(format!("ctx_tokens{cut}"), move |r| Field::Num(Some(*r.ctx_tokens.at(i)), 1)));
        cols.push(Column::new(format!("usd_per_1k_queries{cut}"), move |r| {
            Field::Num(Some(*r.usd_per_1k_queries.at(i)), 6)
        }));
    }
    cols
}

/// Metric columns shown by default in printed tables: nDCG, recall and MRR when present.
pub fn headline(columns: &[MetricAt]) -> Vec<usize> {
    let preferred = [Metric::Ndcg, Metric::Recall, Metric::Mrr];
    let picked: Vec<usize> = (0..columns.len()).filter(|&i| preferred.contains(&columns[i].metric)).collect();
    if picked.is_empty() {
        (0..columns.len()).collect()
    } else {
        picked
    }
}

/// A matrix format.
pub trait Exporter {
    /// File name under the run directory.
    fn file_name(&self) -> &'static str;
    fn write(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

pub struct Csv;
pub struct Json;
pub struct Markdown {
    /// Only the headline columns (nDCG, recall, MRR) when true.
    pub compact: bool,
}

impl Exporter for Csv {
    fn file_name(&self) -> &'static str {
        "matrix.csv"
    }

    fn write(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let cols = columns(run);
        let mut w = csv::Writer::from_writer(out);
        w.write_record(cols.iter().map(|c| c.name.as_str()))?;
        for row in &run.rows {
            w.write_record(cols.iter().map(|c| c.value(row).render()))?;
        }
        w.flush()
    }
}

/// The typed `matrix.json` document of a run.
pub fn matrix(run: &RunResult) -> Matrix {
    Matrix {
        experiment: run.manifest.experiment.name.clone(),
        unit: run.manifest.experiment.unit.clone(),
        decision_metric: Some(run.decision_metric.to_string()),
        selection: run.selection.clone(),
        no_selection: run.no_selection.clone(),
        columns: run.columns.iter().map(MetricAt::to_string).collect(),
        rows: run.rows.clone(),
        slices: run.slices.clone(),
        failed: run.manifest.failed_cells.clone(),
        suggested: run.suggested.clone(),
    }
}

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "matrix.json"
    }

    fn write(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &matrix(run))?;
        writeln!(out)
    }
}

/// How a Markdown column shows fields of the column table (by position).
enum Show {
    Plain(usize),
    /// A number with its decimals, `–` when empty.
    Number(usize, usize),
    /// A mean with its interval: value, low, high.
    Mean(usize, usize, usize),
    /// The largest of several counts.
    MaxOf(Vec<usize>),
}

impl Show {
    fn render(&self, fields: &[Field]) -> String {
        let number = |i: usize, decimals: usize| fields[i].num().map_or("–".into(), |v| format!("{v:.decimals$}"));
        match self {
            Show::Plain(i) => fields[*i].render(),
            Show::Number(i, decimals) => number(*i, *decimals),
            Show::Mean(v, lo, hi) => match (fields[*v].num(), fields[*lo].num(), fields[*hi].num()) {
                (Some(v), Some(lo), Some(hi)) => format!("{v:.4} ({lo:.2}–{hi:.2})"),
                (Some(v), _, _) => format!("{v:.4}"),
                (None, _, _) => "–".into(),
            },
            Show::MaxOf(ids) => {
                let count = |i: usize| if let Field::Int(n) = fields[i] { n } else { 0 };
                ids.iter().map(|&i| count(i)).max().unwrap_or(0).to_string()
            }
        }
    }
}

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "matrix.md"
    }

    fn write(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let table = columns(run);
        let at = |name: &str| table.iter().position(|c| c.name == name).expect("a column of the table");
        let max_k = run.manifest.experiment.k.last().copied().unwrap_or(0);
        let any = |f: fn(&Row) -> bool| run.rows.iter().any(f);
        let metrics: Vec<String> = if self.compact {
            headline(&run.columns).into_iter().map(|i| run.columns[i].to_string()).collect()
        } else {
            run.columns.iter().map(MetricAt::to_string).collect()
        };
        // (header, what it shows, right-aligned)
        let mut shown: Vec<(String, Show, bool)> = vec![
            ("cell".into(), Show::Plain(at("cell")), false),
            ("configuration".into(), Show::Plain(at("label")), false),
            ("split".into(), Show::Plain(at("split")), false),
            ("n".into(), Show::MaxOf(metrics.iter().map(|m| at(&format!("{m}_n"))).collect()), true),
        ];
        if any(|r| r.filter != Filter::None) {
            shown.push(("leaks".into(), Show::Plain(at("leaks")), true));
            shown.push((format!("short@{max_k}"), Show::Plain(at(&format!("short_lists@{max_k}"))), true));
        }
        if any(|r| r.restricted_hits > 0) {
            shown.push(("restricted hits".into(), Show::Plain(at("restricted_hits")), true));
        }
        if any(|r| !r.under_return.is_empty()) {
            let k = crate::vocab::headline_k(&run.manifest.experiment.k);
            shown.push((format!("under_return@{k}"), Show::Plain(at(&format!("under_return@{k}"))), true));
            shown.push((format!("recall_vs_oracle@{k}"), Show::Number(at(&format!("recall_vs_oracle@{k}")), 4), true));
        }
        for m in &metrics {
            let mean = Show::Mean(at(m), at(&format!("{m}_lo")), at(&format!("{m}_hi")));
            shown.push((m.clone(), mean, true));
        }
        if any(|r| r.p_vs_best.is_some()) {
            shown.push(("vs best".into(), Show::Plain(at("vs_best")), false));
            shown.push(("p vs best".into(), Show::Number(at("p_vs_best"), 3), true));
        }
        if any(|r| r.abstain.is_some()) {
            shown.push(("abstain floor".into(), Show::Number(at("abstain_floor"), 4), true));
            shown.push(("abstain ok".into(), Show::Number(at("abstain_ok"), 2), true));
            shown.push(("abstain wrong".into(), Show::Number(at("abstain_wrong"), 2), true));
        }
        if any(|r| r.latency.is_some()) {
            shown.push(("p50 ms".into(), Show::Number(at("p50_ms"), 2), true));
            shown.push(("p95 ms".into(), Show::Number(at("p95_ms"), 2), true));
        }
        let line = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
        writeln!(out, "{}", line(shown.iter().map(|(h, _, _)| h.clone()).collect()))?;
        let align: Vec<&str> = shown.iter().map(|(_, _, right)| if *right { "---:" } else { "---" }).collect();
        writeln!(out, "|{}|", align.join("|"))?;
        for row in &run.rows {
            let fields: Vec<Field> = table.iter().map(|c| c.value(row)).collect();
            writeln!(out, "{}", line(shown.iter().map(|(_, show, _)| show.render(&fields)).collect()))?;
        }
        Ok(())
    }
}

/// The selection summary as Markdown lines, with the cells that were not eligible.
fn preference(p: crate::experiment::Prefer) -> &'static str {
    match p {
        crate::experiment::Prefer::Quality => "best scoring",
        crate::experiment::Prefer::Latency => "fastest",
        crate::experiment::Prefer::Cost => "cheapest",
    }
}

pub fn selection_summary(s: &Selection) -> String {
    let f = |v: Option<f64>| v.map_or("–".to_string(), |v| crate::words::fixed(v, 4));
    let by = match &s.grades_by {
        Some(model) => format!("PPI {} ({model}'s grades corrected by people's)", s.metric),
        None => s.metric.clone(),
    };
    let mut out = match s.reserved {
        Some(_) => format!(
            "Selected on tuning by {}: {} ({})\n  tuning {:.4} · reserved {} (rank {} of {} eligible on reserved) · optimism (tuning − reserved) {} · Kendall tau (tuning vs reserved ranking) {}\n",
            by,
            s.cell,
            s.label,
            s.tuning,
            f(s.reserved),
            s.reserved_rank.map_or("–".into(), |r| r.to_string()),
            s.cells,
            f(s.optimism),
            f(s.kendall_tau),
        ),
        None => format!(
            "Selected on tuning by {}: {} ({})\n  tuning {:.4} · no reserved cases: the choice is not checked on questions it was not made on\n",
            by, s.cell, s.label, s.tuning
        ),
    };
    let others = s.equivalent.iter().filter(|c| **c != s.best).count();
    let worse = s.cells.saturating_sub(1 + others + s.undecided.len());
    let (interval, test) = match s.grades_by {
        Some(_) => ("PPI 95% interval of the difference", "its interval below 0"),
        None => ("95% interval of the paired difference", "Holm-corrected paired test, α = 0.05"),
    };
    out.push_str(&format!(
        "  against the best ({}) on tuning: {others} equivalent ({interval} within ±{}), {} undecided, {worse} worse ({test}){}\n",
        s.best,
        s.margin,
        s.undecided.len(),
        // When the best is chosen under a preference, the rule below says why.
        match (s.prefer, s.cell == s.best) {
            (crate::experiment::Prefer::Quality, _) | (_, true) => String::new(),
            (p, false) => format!("; {} is the {} equivalent cell", s.cell, preference(p)),
        }
    ));
    if let Some(rule) = &s.rule {
        out.push_str(&format!("  {rule}\n"));
    }
    if s.undecided.len() * 2 > s.cells {
        out.push_str("  undecided: not significantly worse is not equal; the tuning cases cannot tell most of the grid from the best (`ragsweep plan` says how many would)\n");
    }
    if let Some(p) = s.optimism_percentile.filter(|&p| p > 0.9 && s.optimism.is_some_and(|o| o > 0.0)) {
        out.push_str(&format!(
            "  warning: the selected cell's optimism is larger than {:.0}% of cells': its tuning score is likely inflated by selection\n",
            100.0 * p
        ));
    }
    if !s.excluded.is_empty() {
        let list: Vec<String> = s.excluded.iter().map(|(c, why)| format!("{c} ({why})")).collect();
        out.push_str(&format!(
            "  {} eligible cells; not eligible (leaked beside filtered cells, or failed a `require` on tuning): {}\n",
            s.cells,
            list.join(", ")
        ));
    }
    out
}

/// `slices.csv`: each cell × split × slice of cases (exact-term cases, the others, each tag)
/// with every metric's mean, n and interval.
pub fn slices_csv(run: &RunResult) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["cell", "split", "slice", "cases"].map(String::from).to_vec();
    for c in &run.columns {
        header.extend([c.to_string(), format!("{c}_n"), format!("{c}_lo"), format!("{c}_hi")]);
    }
    w.write_record(&header).expect("memory");
    let num = |v: Option<f64>| Field::Num(v, 6).render();
    for s in &run.slices {
        let mut rec = vec![s.cell.clone(), s.split.as_str().to_string(), s.slice.clone(), s.cases.to_string()];
        for m in s.metrics.values() {
            rec.extend([num(m.value), m.n.to_string(), num(m.ci.map(|c| c.lo)), num(m.ci.map(|c| c.hi))]);
        }
        w.write_record(&rec).expect("memory");
    }
    w.into_inner().expect("memory")
}
