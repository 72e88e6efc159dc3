//! Merging the outputs of sharded runs (`ragsweep run --shard i/n`) into the run directory an
//! unsharded run of the same experiment writes, so a grid can be spread over any batch
//! scheduler. Every cell's row depends only on its own cases, so rows are taken as they are
//! (through the same typed schema the run wrote them with); the per-case files of each cell
//! are concatenated in grid order. Shards that do not belong together are refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Location, Result};
use crate::evaluate::ties::{self, CellValues};
use crate::experiment::Experiment;
use crate::input::text::{json, jsonl};
use crate::output::RunWriter;
use crate::plan::Plan;
use crate::results::{CaseInfo, CaseLine, Manifest, Matrix, ModelEntry, Row, RunResult, SliceRow};

/// Reads shard run directories of `exp`, streams each cell's per-case files into `out` in
/// grid order, and returns the merged result.
pub fn merge(exp: &Experiment, shards: &[PathBuf], out: &mut RunWriter) -> Result<RunResult> {
    let bad = |path: &Path, msg: String| Error::input(Location::file(path), msg);
    let mut rows_by_cell: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    let mut slices_by_cell: BTreeMap<String, Vec<SliceRow>> = BTreeMap::new();
    let mut per_query_by_cell: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut trec_by_cell: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut case_info: Vec<CaseInfo> = Vec::new();
    let mut manifests: Vec<Manifest> = Vec::new();
    let mut seen_shards: BTreeMap<usize, PathBuf> = BTreeMap::new();
    for dir in shards {
        let manifest_path = dir.join("manifest.json");
        let manifest: Manifest = json(&manifest_path, "run manifest")?;
        if manifest.experiment.config_hash != exp.config_hash {
            return Err(bad(
                &manifest_path,
                format!("this shard ran a different experiment file than {}", exp.file.display()),
            ));
        }
        let Some(shard) = manifest.shard else {
            return Err(bad(&manifest_path, "not a shard (run with --shard i/n)".into()));
        };
        if let Some(first) = manifests.first() {
            let of = first.shard.map_or(0, |s| s.of);
            if shard.of != of {
                return Err(bad(&manifest_path, format!("shard {}/{} beside shards of {of}", shard.index, shard.of)));
            }
            if manifest.corpus.hash != first.corpus.hash {
                return Err(bad(&manifest_path, "this shard ran on another corpus (its hash differs)".into()));
            }
            if manifest.golden.hash != first.golden.hash {
                return Err(bad(&manifest_path, "this shard ran on another golden set (its hash differs)".into()));
            }
        }
        if let Some(other) = seen_shards.insert(shard.index, dir.clone()) {
            return Err(bad(
                &manifest_path,
                format!("shard {} is given twice (also {})", shard.index, other.display()),
            ));
        }
        let matrix_path = dir.join("matrix.json");
        let matrix: Matrix = json(&matrix_path, "matrix")?;
        for row in matrix.rows {
            if !exp.cells.iter().any(|c| c.id == row.cell) {
                return Err(bad(&matrix_path, format!("cell {:?} is not in the experiment", row.cell)));
            }
            rows_by_cell.entry(row.cell.clone()).or_default().push(row);
        }
        for slice in matrix.slices {
            slices_by_cell.entry(slice.cell.clone()).or_default().push(slice);
        }
        if case_info.is_empty() {
            case_info = jsonl(&dir.join("cases.jsonl"))?;
        }
        // Each line is checked against the schema and kept as written, byte for byte.
        let path = dir.join("per_query.jsonl");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let record: CaseLine =
                serde_json::from_str(line).map_err(|e| Error::input(Location::line(&path, i + 1), e.to_string()))?;
            let buf = per_query_by_cell.entry(record.cell).or_default();
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
        }
        let runs = dir.join("runs");
        for entry in std::fs::read_dir(&runs).map_err(|e| Error::io(&runs, e))? {
            let path = entry.map_err(|e| Error::io(&runs, e))?.path();
            let cell = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            trec_by_cell.insert(cell, path);
        }
        manifests.push(manifest);
    }
    let first = manifests.first().ok_or_else(|| Error::Other("no shards to merge".into()))?;
    let of = first.shard.map_or(0, |s| s.of);
    if let Some(missing) = (1..=of).find(|i| !seen_shards.contains_key(i)) {
        return Err(Error::Other(format!("shard {missing} of {of} is missing: merge needs every shard")));
    }
    let mut rows = Vec::new();
    let mut slices = Vec::new();
    let decision = exp.decision_metric().to_string();
    let mut decision_values = Vec::with_capacity(exp.cells.len());
    for cell in &exp.cells {
        let cell_rows = rows_by_cell.remove(&cell.id).ok_or_else(|| {
            Error::Other(format!("no shard has cell {} ({}): merge needs every shard", cell.id, cell.label()))
        })?;
        rows.extend(cell_rows);
        slices.extend(slices_by_cell.remove(&cell.id).unwrap_or_default());
        let trec_path = trec_by_cell.remove(&cell.id).ok_or_else(|| {
            Error::Other(format!("no shard has the TREC run of cell {} (runs/{}.trec)", cell.id, cell.id))
        })?;
        let trec = std::fs::read(&trec_path).map_err(|e| Error::io(&trec_path, e))?;
        let per_query = per_query_by_cell.remove(&cell.id).unwrap_or_default();
        let mut values = Vec::new();
        for line in per_query.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let line: CaseLine = serde_json::from_slice(line)
                .map_err(|e| Error::Other(format!("cell {}: a per_query.jsonl line cannot be read: {e}", cell.id)))?;
            values.push((line.split, line.metrics.get(&decision).copied().flatten()));
        }
        decision_values.push(CellValues { cell: cell.id.clone(), values });
        out.add_raw(&cell.id, &per_query, &trec)?;
    }
    // Models in the order an unsharded run lists them: the whole grid's plan order.
    let models: Vec<ModelEntry> = Plan::new(exp)
        .models
        .iter()
        .filter_map(|id| manifests.iter().flat_map(|m| &m.models).find(|m| &m.id == id).cloned())
        .collect();
    let mut manifest = first.clone();
    manifest.shard = None;
    manifest.models = models;
    manifest.cells = crate::output::cell_entries(exp);
    manifest.wall_seconds = manifests.iter().map(|m| m.wall_seconds).fold(0.0, f64::max);
    manifest.stages = manifests
        .iter()
        .flat_map(|m| {
            let index = m.shard.map_or(0, |s| s.index);
            m.stages.iter().cloned().map(move |mut s| {
                s.key = format!("{} (shard {index})", s.key);
                s
            })
        })
        .collect();
    for (split, n) in manifests.iter().flat_map(|m| &m.golden.cases_per_split) {
        let merged = manifest.golden.cases_per_split.entry(*split).or_insert(*n);
        *merged = (*merged).max(*n);
    }
    ties::mark(&mut rows, &decision_values, &decision);
    let selection = crate::evaluate::selection::select_for(exp, &rows);
    Ok(RunResult {
        columns: exp.columns(),
        decision_metric: exp.decision_metric(),
        rows,
        slices,
        case_info,
        selection,
        manifest,
    })
}
