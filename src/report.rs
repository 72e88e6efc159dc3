//! The result matrix, its exporters (one trait, one file format each) and the run
//! directory that holds them.
//!
//! A run is written into a hidden staging directory, every file through a temporary
//! name, and the directory is renamed into place at the end: a crashed or failed run
//! leaves no half-written results behind.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::experiment::Experiment;
use crate::metrics::Mean;
use crate::metrics::MetricAt;
use crate::runner::{headline, CaseResult, RunResult};
use crate::selection::{select, Selection};

/// A matrix format.
pub trait Exporter {
    /// File name under the run directory.
    fn file_name(&self) -> &'static str;
    fn write(&self, exp: &Experiment, run: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

pub struct Csv;
pub struct Json;
pub struct Markdown {
    /// Only the headline columns (nDCG, recall, MRR) when true.
    pub compact: bool,
}

/// Timing columns: they differ between runs.
pub const LATENCY_COLUMNS: [&str; 7] = ["p50_ms", "p95_ms", "p99_ms", "mean_ms", "embed_ms", "search_ms", "fuse_ms"];

/// Build cost columns; `embed_s`, `index_s` and `reused_texts` depend on the run (and the cache).
pub const BUILD_COST_COLUMNS: [&str; 9] = [
    "chunks",
    "tokens_embedded",
    "usd_index",
    "embed_s",
    "index_s",
    "index_bytes",
    "reused_texts",
    "shared_embeddings",
    "shared_index",
];

fn config_names(run: &RunResult) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for row in &run.rows {
        for (k, _) in &row.config {
            if !names.contains(k) {
                names.push(k);
            }
        }
    }
    names
}

/// `{"@k": value}` for each cut-off.
fn at_k<T: serde::Serialize>(ks: &[usize], values: &[T]) -> Value {
    Value::Object(ks.iter().zip(values).map(|(k, v)| (format!("@{k}"), json!(v))).collect())
}

fn fmt_value(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// The CSV headers of a mean's fields (see [`mean_fields`]).
fn mean_header(c: &MetricAt) -> [String; 4] {
    [c.to_string(), format!("{c}_n"), format!("{c}_lo"), format!("{c}_hi")]
}

/// A mean's CSV fields: value, n, interval low and high.
fn mean_fields(m: &Mean) -> [String; 4] {
    [fmt_value(m.value), m.n.to_string(), fmt_value(m.ci.map(|c| c.lo)), fmt_value(m.ci.map(|c| c.hi))]
}

/// A mean for JSON: value, n and its 95% bootstrap interval.
fn mean_json(m: &Mean) -> Value {
    json!({ "value": m.value, "n": m.n, "ci": m.ci })
}

/// Abstention columns (SPEC §4): the floor and both rates, empty when a cell has no floor.
pub const ABSTAIN_COLUMNS: [&str; 3] = ["abstain_floor", "abstain_ok", "abstain_wrong"];

/// `slices.csv`: each cell × split × slice of cases (exact-term cases, the others, each tag)
/// with every metric's mean, n and interval.
pub fn slices_csv(run: &RunResult) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["cell", "split", "slice", "cases"].map(String::from).to_vec();
    for c in &run.columns {
        header.extend(mean_header(c));
    }
    w.write_record(&header).expect("memory");
    for s in &run.slices {
        let mut rec = vec![s.cell.clone(), s.split.as_str().to_string(), s.slice.clone(), s.cases.to_string()];
        for m in &s.means {
            rec.extend(mean_fields(m));
        }
        w.write_record(&rec).expect("memory");
    }
    w.into_inner().expect("memory")
}

/// `cases.jsonl`: each case once, with its question and exact terms.
pub fn cases_jsonl(run: &RunResult) -> Vec<u8> {
    let mut out = Vec::new();
    for c in &run.case_info {
        serde_json::to_writer(&mut out, c).expect("json");
        out.push(b'\n');
    }
    out
}

impl Exporter for Csv {
    fn file_name(&self) -> &'static str {
        "matrix.csv"
    }

    fn write(&self, exp: &Experiment, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let names = config_names(run);
        let mut w = csv::Writer::from_writer(out);
        let mut header: Vec<String> = vec!["cell".into(), "label".into()];
        header.extend(names.iter().map(|s| s.to_string()));
        header.extend(["split", "cases", "unanswerable", "leaks"].map(String::from));
        header.extend(exp.k.iter().map(|k| format!("short_lists@{k}")));
        for c in &run.columns {
            header.extend(mean_header(c));
        }
        header.extend(ABSTAIN_COLUMNS.map(String::from));
        header.extend(LATENCY_COLUMNS.map(String::from));
        header.extend(BUILD_COST_COLUMNS.map(String::from));
        for k in &exp.k {
            header.push(format!("ctx_tokens@{k}"));
            header.push(format!("usd_per_1k_queries@{k}"));
        }
        w.write_record(&header)?;
        for row in &run.rows {
            let mut rec: Vec<String> = vec![row.cell.clone(), row.label.clone()];
            for n in &names {
                rec.push(row.config.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap_or_default());
            }
            rec.extend([
                row.split.as_str().to_string(),
                row.cases.to_string(),
                row.unanswerable.to_string(),
                row.leaks.to_string(),
            ]);
            rec.extend(row.short_lists.iter().map(|n| n.to_string()));
            for m in &row.means {
                rec.extend(mean_fields(m));
            }
            match &row.abstain {
                Some(a) => rec.extend([format!("{:.6}", a.floor), fmt_value(a.rates.ok), fmt_value(a.rates.wrong)]),
                None => rec.extend(ABSTAIN_COLUMNS.map(|_| String::new())),
            }
            match &row.latency {
                Some(l) => rec.extend(
                    [l.p50_ms, l.p95_ms, l.p99_ms, l.mean_ms, l.embed_ms, l.search_ms, l.fuse_ms]
                        .map(|v| format!("{v:.3}")),
                ),
                None => rec.extend(LATENCY_COLUMNS.map(|_| String::new())),
            }
            let c = &row.cost;
            rec.extend([
                c.chunks.to_string(),
                c.tokens_embedded.to_string(),
                format!("{:.6}", c.usd_index),
                format!("{:.3}", c.embed_s),
                format!("{:.3}", c.index_s),
                c.index_bytes.to_string(),
                c.reused_texts.to_string(),
                c.shared_embeddings.clone().unwrap_or_default(),
                c.shared_index.clone().unwrap_or_default(),
            ]);
            for i in 0..exp.k.len() {
                rec.push(format!("{:.1}", row.ctx_tokens[i]));
                rec.push(format!("{:.6}", row.usd_per_1k_queries(i, &exp.prices)));
            }
            w.write_record(&rec)?;
        }
        w.flush()
    }
}

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "matrix.json"
    }

    fn write(&self, exp: &Experiment, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let rows: Vec<Value> = run
            .rows
            .iter()
            .map(|row| {
                let config: serde_json::Map<String, Value> =
                    row.config.iter().map(|(k, v)| (k.to_string(), Value::String(v.clone()))).collect();
                let metrics: serde_json::Map<String, Value> = run
                    .columns
                    .iter()
                    .zip(&row.means)
                    .map(|(c, m)| (c.to_string(), mean_json(m)))
                    .collect();
                json!({
                    "cell": row.cell,
                    "label": row.label,
                    "config": config,
                    "split": row.split.as_str(),
                    "cases": row.cases,
                    "unanswerable": row.unanswerable,
                    "leaks": row.leaks,
                    "latency": row.latency,
                    "cost": row.cost,
                    "ctx_tokens": at_k(&exp.k, &row.ctx_tokens),
                    "usd_per_1k_queries": at_k(&exp.k, &(0..exp.k.len()).map(|i| row.usd_per_1k_queries(i, &exp.prices)).collect::<Vec<_>>()),
                    "short_lists": at_k(&exp.k, &row.short_lists),
                    "abstain": row.abstain,
                    "metrics": metrics,
                })
            })
            .collect();
        let slices: Vec<Value> = run
            .slices
            .iter()
            .map(|s| {
                let metrics: serde_json::Map<String, Value> =
                    run.columns.iter().zip(&s.means).map(|(c, m)| (c.to_string(), mean_json(m))).collect();
                json!({ "cell": s.cell, "split": s.split.as_str(), "slice": s.slice, "cases": s.cases, "metrics": metrics })
            })
            .collect();
        let doc = json!({
            "experiment": exp.name,
            "unit": exp.unit.as_str(),
            "selection": exp.select.and_then(|m| select(&run.rows, &run.columns, m)),
            "columns": run.columns.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
            "rows": rows,
            "slices": slices,
        });
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)
    }
}

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "matrix.md"
    }

    fn write(&self, exp: &Experiment, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let filtered = exp.cells.iter().any(|c| c.filter != crate::permissions::Filter::None);
        let timed = run.rows.iter().any(|r| r.latency.is_some());
        let abstains = run.rows.iter().any(|r| r.abstain.is_some());
        let cols: Vec<usize> = if self.compact { headline(&run.columns) } else { (0..run.columns.len()).collect() };
        write!(out, "| cell | configuration | split | n |")?;
        if filtered {
            write!(out, " leaks | short@{} |", exp.max_k())?;
        }
        for &i in &cols {
            write!(out, " {} |", run.columns[i])?;
        }
        if abstains {
            write!(out, " abstain floor | abstain ok | abstain wrong |")?;
        }
        if timed {
            write!(out, " p50 ms | p95 ms |")?;
        }
        writeln!(out)?;
        write!(out, "|---|---|---|---:|")?;
        if filtered {
            write!(out, "---:|---:|")?;
        }
        for _ in &cols {
            write!(out, "---:|")?;
        }
        if abstains {
            write!(out, "---:|---:|---:|")?;
        }
        if timed {
            write!(out, "---:|---:|")?;
        }
        writeln!(out)?;
        for row in &run.rows {
            let n = cols.iter().map(|&i| row.means[i].n).max().unwrap_or(0);
            write!(out, "| {} | {} | {} | {} |", row.cell, row.label, row.split.as_str(), n)?;
            if filtered {
                write!(out, " {} | {} |", row.leaks, row.short_lists.last().copied().unwrap_or(0))?;
            }
            for &i in &cols {
                let m = &row.means[i];
                let v = match (m.value, m.ci) {
                    (Some(v), Some(ci)) => format!("{v:.4} ({:.2}–{:.2})", ci.lo, ci.hi),
                    (Some(v), None) => format!("{v:.4}"),
                    (None, _) => "–".into(),
                };
                write!(out, " {v} |")?;
            }
            let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
            match &row.abstain {
                Some(a) => write!(out, " {:.4} | {} | {} |", a.floor, f(a.rates.ok), f(a.rates.wrong))?,
                None if abstains => write!(out, " – | – | – |")?,
                None => {}
            }
            if let Some(l) = &row.latency {
                write!(out, " {:.2} | {:.2} |", l.p50_ms, l.p95_ms)?;
            } else if timed {
                write!(out, " – | – |")?;
            }
            writeln!(out)?;
        }
        Ok(())
    }
}

/// The selection summary as Markdown lines.
pub fn selection_summary(s: &Selection) -> String {
    let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.4}"));
    format!(
        "Selected on tuning by {}: {} ({})\n  tuning {:.4} · reserved {} (rank {} of {}) · optimism {} · Kendall tau (tuning vs reserved ranking) {}\n",
        s.metric,
        s.cell,
        s.label,
        s.tuning,
        f(s.reserved),
        s.reserved_rank.map_or("–".into(), |r| r.to_string()),
        s.cells,
        f(s.optimism),
        f(s.kendall_tau),
    )
}

/// Writes `bytes` to `path` through a temporary file in the same directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut f = fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| Error::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

fn render(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> Vec<u8> {
    let mut buf = Vec::new();
    f(&mut buf).expect("writing to memory cannot fail");
    buf
}

/// A run identifier: UTC time of the run and the experiment's config hash.
pub fn run_id(exp: &Experiment, now: std::time::SystemTime) -> String {
    let secs = now.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    format!("{}-{}", utc_stamp(secs), &exp.config_hash[..8])
}

/// `YYYYMMDDTHHMMSSZ` for seconds since the Unix epoch.
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A run directory being written. Per-case files stream in as cells finish
/// (`per_query.jsonl`, `runs/<cell>.trec`), so a run never holds every cell's rankings;
/// the matrices and manifest come last. Everything goes into a hidden staging directory that
/// is renamed into place only when complete, so a crash never leaves a run that looks finished.
pub struct RunWriter {
    dir: PathBuf,
    staging: PathBuf,
    per_query: io::BufWriter<fs::File>,
}

impl RunWriter {
    /// Starts writing the run that will appear at `dir` (which must not exist yet).
    pub fn create(dir: &Path) -> Result<RunWriter> {
        let parent = dir.parent().expect("run dir has a parent");
        let name = dir.file_name().expect("run dir has a name").to_string_lossy();
        let staging = parent.join(format!(".{name}.partial"));
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
        }
        let runs = staging.join("runs");
        fs::create_dir_all(&runs).map_err(|e| Error::io(&runs, e))?;
        let path = staging.join("per_query.jsonl");
        let file = fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
        Ok(RunWriter { dir: dir.to_path_buf(), staging, per_query: io::BufWriter::new(file) })
    }

    /// One cell's case results: their `per_query.jsonl` lines and the cell's TREC run.
    pub fn add_cell(&mut self, columns: &[MetricAt], results: &[CaseResult]) -> Result<()> {
        let Some(first) = results.first() else { return Ok(()) };
        self.add_raw(&first.cell, &per_query(columns, results), &trec_run(results))
    }

    /// A cell's already rendered files (from a shard being merged).
    pub fn add_raw(&mut self, cell: &str, per_query: &[u8], trec: &[u8]) -> Result<()> {
        let path = self.staging.join("per_query.jsonl");
        self.per_query.write_all(per_query).map_err(|e| Error::io(&path, e))?;
        write_atomic(&self.staging.join("runs").join(format!("{cell}.trec")), trec)
    }

    /// Writes the matrices, slices, cases and manifest, and moves the run into place.
    pub fn finish(self, exp: &Experiment, run: &RunResult, run_id: &str) -> Result<PathBuf> {
        let RunWriter { dir, staging, per_query } = self;
        let path = staging.join("per_query.jsonl");
        per_query
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?
            .sync_all()
            .map_err(|e| Error::io(&path, e))?;
        let exporters: [&dyn Exporter; 3] = [&Csv, &Json, &Markdown { compact: false }];
        for e in exporters {
            write_atomic(&staging.join(e.file_name()), &render(|b| e.write(exp, run, b)))?;
        }
        write_atomic(&staging.join("slices.csv"), &slices_csv(run))?;
        write_atomic(&staging.join("cases.jsonl"), &cases_jsonl(run))?;
        let manifest = manifest(exp, run, run_id);
        write_atomic(&staging.join("manifest.json"), &serde_json::to_vec_pretty(&manifest).expect("json"))?;
        fs::rename(&staging, &dir).map_err(|e| Error::io(&dir, e))?;
        Ok(dir)
    }
}

/// Items listed per case in `per_query.jsonl`.
const PER_QUERY_TOP: usize = 10;

fn per_query(columns: &[MetricAt], results: &[CaseResult]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in results {
        let metrics: serde_json::Map<String, Value> =
            columns.iter().zip(&c.values).map(|(col, v)| (col.to_string(), json!(v))).collect();
        let top: Vec<&str> = c.ranking.iter().take(PER_QUERY_TOP).map(|(k, _)| k.as_str()).collect();
        let line = json!({
            "cell": c.cell,
            "case": c.case,
            "split": c.split.as_str(),
            "answerable": c.answerable,
            "metrics": metrics,
            "first_relevant": c.first_relevant,
            "top_score": c.top_score,
            "top": top,
        });
        serde_json::to_writer(&mut out, &line).expect("json");
        out.push(b'\n');
    }
    out
}

/// A TREC run file (`qid Q0 item rank score tag`) of one cell's judged lists.
///
/// trec_eval ignores the rank column and re-sorts tied scores by item id, descending, while
/// ragsweep breaks ties by chunk id, ascending. So within a run of tied scores the written
/// score steps down by at most 1e-6 (staying above the next lower score), and any
/// trec_eval-compatible tool scores exactly the ranking ragsweep scored.
pub fn trec_run(results: &[CaseResult]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in results {
        let scores: Vec<f64> = c.ranking.iter().map(|(_, s)| f64::from(*s)).collect();
        for (rank, ((key, _), score)) in c.ranking.iter().zip(tie_ordered(&scores)).enumerate() {
            writeln!(out, "{} Q0 {} {} {} ragsweep-{}", c.case, key, rank + 1, score, c.cell).expect("memory");
        }
    }
    out
}

/// `scores` (descending) with tied runs made strictly decreasing, by steps of at most 1e-6.
fn tie_ordered(scores: &[f64]) -> Vec<f64> {
    let mut out = scores.to_vec();
    let mut i = 0;
    while i < scores.len() {
        let mut j = i + 1;
        while j < scores.len() && scores[j] == scores[i] {
            j += 1;
        }
        if j - i > 1 {
            let next = scores.get(j).copied().unwrap_or(scores[i] - 1.0);
            let step = ((scores[i] - next) / (j - i) as f64).min(1e-6);
            for (t, slot) in out[i..j].iter_mut().enumerate() {
                *slot = scores[i] - t as f64 * step;
            }
        }
        i = j;
    }
    out
}

fn manifest(exp: &Experiment, run: &RunResult, run_id: &str) -> Value {
    let cells: Vec<Value> = exp
        .cells
        .iter()
        .map(|c| json!({ "cell": c.id, "label": c.label(), "chunker": c.chunker, "retriever": c.retriever }))
        .collect();
    json!({
        "ragsweep_version": env!("CARGO_PKG_VERSION"),
        "run_id": run_id,
        "shard": exp.shard.map(|(i, n)| json!({ "index": i, "of": n })),
        "experiment": {
            "name": exp.name,
            "description": exp.description,
            "file": exp.file,
            "config_hash": exp.config_hash,
            "unit": exp.unit.as_str(),
            "k": exp.k,
            "metrics": exp.metrics,
            "seed": exp.seed,
            "reserved_fraction": exp.reserved_fraction,
        },
        "corpus": { "path": exp.corpus_path, "hash": run.corpus_hash, "documents": run.corpus_docs },
        "golden": {
            "path": exp.golden.path,
            "hash": run.golden_hash,
            "tuning_qrels": exp.golden.tuning,
            "reserved_qrels": exp.golden.reserved,
            "default_groups": exp.default_groups,
            "synthetic_acl": exp.synthetic_acl,
            "cases_per_split": run.split_counts,
        },
        "models": run.models.iter().map(|m| json!({
            "id": m.id, "description": m.description, "file_hash": m.file_hash, "dim": m.dim,
            "max_length": m.max_length, "query_prefix": m.query_prefix, "passage_prefix": m.passage_prefix,
        })).collect::<Vec<_>>(),
        "cells": cells,
        "cost": { "prices": exp.prices, "counting_tokenizer": run.counter },
        "stages": run.stages,
        "wall_seconds": run.wall_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tied_scores_become_strictly_decreasing_without_passing_the_next_score() {
        let out = tie_ordered(&[3.0, 2.0, 2.0, 2.0, 1.999_999_5, 1.0, 1.0]);
        assert!(out.windows(2).all(|w| w[0] > w[1]), "{out:?}");
        assert_eq!(out[0], 3.0);
        assert_eq!(out[1], 2.0);
        assert!(out[3] > 1.999_999_5);
        assert_eq!(out[5], 1.0);
        assert!((out[6] - (1.0 - 1e-6)).abs() < 1e-12);
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_795_964_461), "20261129T150101Z");
    }
}
