//! Merging the outputs of sharded runs (`ragsweep run --shard i/n`) into the run directory an
//! unsharded run of the same experiment would write, so a grid can be spread over any batch
//! scheduler. Every cell's row depends only on its own cases, so rows are taken as they are;
//! the files of each cell are concatenated in grid order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Location, Result};
use crate::experiment::Experiment;
use crate::golden::Split;
use crate::metrics::Mean;
use crate::report::RunWriter;
use crate::runner::{CaseInfo, CellCost, Latency, Row, RunResult, SliceRow, StageReport};

fn read_json(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| Error::input(Location::file(path), format!("invalid JSON: {e}")))
}

/// Reads shard run directories of `exp`, streams each cell's per-case files into `out` in
/// grid order, and returns the merged result.
pub fn merge(exp: &Experiment, shards: &[PathBuf], out: &mut RunWriter) -> Result<RunResult> {
    let bad = |path: &Path, msg: String| Error::input(Location::file(path), msg);
    let columns = exp.columns();
    let mut rows_by_cell: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    let mut per_query_by_cell: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut trec_by_cell: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut slices_by_cell: BTreeMap<String, Vec<SliceRow>> = BTreeMap::new();
    let mut case_info: Vec<CaseInfo> = Vec::new();
    let mut first_manifest: Option<Value> = None;
    let mut wall_seconds: f64 = 0.0;
    let mut stages: Vec<StageReport> = Vec::new();
    for dir in shards {
        let manifest_path = dir.join("manifest.json");
        let manifest = read_json(&manifest_path)?;
        if manifest["experiment"]["config_hash"] != exp.config_hash.as_str() {
            return Err(bad(
                &manifest_path,
                format!("this shard ran a different experiment file than {}", exp.file.display()),
            ));
        }
        if manifest["shard"].is_null() {
            return Err(bad(&manifest_path, "not a shard (run with --shard i/n)".into()));
        }
        wall_seconds = wall_seconds.max(manifest["wall_seconds"].as_f64().unwrap_or(0.0));
        let shard_stages: Vec<StageReport> = serde_json::from_value(manifest["stages"].clone())
            .map_err(|e| bad(&manifest_path, format!("stages: {e}")))?;
        stages.extend(shard_stages.into_iter().map(|mut s| {
            s.key = format!("{} (shard {})", s.key, manifest["shard"]["index"]);
            s
        }));
        let matrix_path = dir.join("matrix.json");
        let matrix = read_json(&matrix_path)?;
        for r in matrix["rows"].as_array().into_iter().flatten() {
            let id = r["cell"].as_str().unwrap_or_default();
            let cell = exp
                .cells
                .iter()
                .find(|c| c.id == id)
                .ok_or_else(|| bad(&matrix_path, format!("cell {id:?} is not in the experiment")))?;
            let split = match r["split"].as_str() {
                Some("tuning") => Split::Tuning,
                Some("reserved") => Split::Reserved,
                other => return Err(bad(&matrix_path, format!("unknown split {other:?}"))),
            };
            let means = columns
                .iter()
                .map(|c| {
                    let m = &r["metrics"][c.to_string()];
                    Mean {
                        value: m["value"].as_f64(),
                        n: m["n"].as_u64().unwrap_or(0) as usize,
                        ci: serde_json::from_value(m["ci"].clone()).ok(),
                    }
                })
                .collect();
            let at_k =
                |field: &str| -> Vec<Value> { exp.k.iter().map(|k| r[field][format!("@{k}")].clone()).collect() };
            let row = Row {
                cell: cell.id.clone(),
                label: cell.label(),
                config: cell.config(),
                split,
                cases: r["cases"].as_u64().unwrap_or(0) as usize,
                unanswerable: r["unanswerable"].as_u64().unwrap_or(0) as usize,
                means,
                leaks: r["leaks"].as_u64().unwrap_or(0) as usize,
                short_lists: at_k("short_lists").iter().map(|v| v.as_u64().unwrap_or(0) as usize).collect(),
                latency: serde_json::from_value::<Option<Latency>>(r["latency"].clone()).ok().flatten(),
                ctx_tokens: at_k("ctx_tokens").iter().map(|v| v.as_f64().unwrap_or(0.0)).collect(),
                cost: serde_json::from_value::<CellCost>(r["cost"].clone())
                    .map_err(|e| bad(&matrix_path, format!("cell {id}: cost: {e}")))?,
                abstain: serde_json::from_value(r["abstain"].clone())
                    .map_err(|e| bad(&matrix_path, format!("cell {id}: abstain: {e}")))?,
            };
            rows_by_cell.entry(cell.id.clone()).or_default().push(row);
        }
        for v in matrix["slices"].as_array().into_iter().flatten() {
            let mut v = v.clone();
            let metrics = v["metrics"].take();
            v["means"] = Value::Array(columns.iter().map(|c| metrics[c.to_string()].clone()).collect());
            let slice: SliceRow = serde_json::from_value(v).map_err(|e| bad(&matrix_path, format!("slices: {e}")))?;
            slices_by_cell.entry(slice.cell.clone()).or_default().push(slice);
        }
        if case_info.is_empty() {
            let path = dir.join("cases.jsonl");
            let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
            for (i, line) in text.lines().enumerate() {
                case_info.push(serde_json::from_str(line).map_err(|e| bad(&path, format!("line {}: {e}", i + 1)))?);
            }
        }
        let per_query_path = dir.join("per_query.jsonl");
        let text = std::fs::read_to_string(&per_query_path).map_err(|e| Error::io(&per_query_path, e))?;
        for line in text.lines() {
            let cell = serde_json::from_str::<Value>(line).ok().and_then(|v| v["cell"].as_str().map(str::to_string));
            let cell = cell.ok_or_else(|| bad(&per_query_path, "a line without a cell".into()))?;
            let buf = per_query_by_cell.entry(cell).or_default();
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
        }
        for entry in std::fs::read_dir(dir.join("runs")).map_err(|e| Error::io(&dir.join("runs"), e))? {
            let path = entry.map_err(|e| Error::io(dir, e))?.path();
            let cell = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            trec_by_cell.insert(cell, path);
        }
        first_manifest.get_or_insert(manifest);
    }
    let manifest = first_manifest.ok_or_else(|| Error::Other("no shards to merge".into()))?;
    let mut rows = Vec::new();
    let mut slices = Vec::new();
    for cell in &exp.cells {
        let cell_rows = rows_by_cell.remove(&cell.id).ok_or_else(|| {
            Error::Other(format!("no shard has cell {} ({}): merge needs every shard", cell.id, cell.label()))
        })?;
        rows.extend(cell_rows);
        slices.extend(slices_by_cell.remove(&cell.id).unwrap_or_default());
        let trec = match trec_by_cell.remove(&cell.id) {
            Some(path) => std::fs::read(&path).map_err(|e| Error::io(&path, e))?,
            None => Vec::new(),
        };
        out.add_raw(&cell.id, &per_query_by_cell.remove(&cell.id).unwrap_or_default(), &trec)?;
    }
    let golden = &manifest["golden"];
    let run = RunResult {
        columns,
        rows,
        slices,
        case_info,
        stages,
        corpus_hash: manifest["corpus"]["hash"].as_str().unwrap_or_default().to_string(),
        corpus_docs: manifest["corpus"]["documents"].as_u64().unwrap_or(0) as usize,
        golden_hash: golden["hash"].as_str().unwrap_or_default().to_string(),
        split_counts: golden["cases_per_split"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (if k == "reserved" { "reserved" } else { "tuning" }, v.as_u64().unwrap_or(0) as usize))
            .collect(),
        models: Vec::new(),
        counter: manifest["cost"]["counting_tokenizer"].as_str().unwrap_or_default().to_string(),
        wall_seconds,
    };
    Ok(run)
}
