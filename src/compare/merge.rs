//! Merging the outputs of sharded runs (`ragsweep run --shard i/n`) into the run directory an
//! unsharded run of the same experiment writes, so a grid can be spread over any batch
//! scheduler.
//!
//! Nothing a shard says is taken on trust. Every row and slice is recomputed from the shard's
//! `per_query.jsonl` by the aggregation the run itself uses, and must equal what the shard's
//! `matrix.json` says (so an edited number, a deleted row or deleted case lines are refused);
//! only measurements that no per-case line records (latency, build cost, an engine's plans)
//! come from the rows.
//! Shards must share the ragsweep version, experiment, corpus, golden set and model keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Location, Result};
use crate::evaluate::aggregate;
use crate::evaluate::ties::CellValues;
use crate::experiment::Experiment;
use crate::input::text::{json, jsonl};
use crate::output::RunWriter;
use crate::plan::Plan;
use crate::results::{CaseInfo, CaseLine, CaseResult, Manifest, Matrix, ModelEntry, Row, RunResult, SliceRow};

/// One shard directory, read and checked against the experiment.
struct Shard {
    dir: PathBuf,
    manifest: Manifest,
    rows: Vec<Row>,
    slices: Vec<SliceRow>,
    /// Per cell: its `per_query.jsonl` lines as written, and parsed.
    lines: BTreeMap<String, (Vec<u8>, Vec<CaseLine>)>,
}

/// A TREC run at cut-off `k` must list, per case, the list its case line holds at k
/// (`output::trec::trec_runs`): a run file edited apart from `per_query.jsonl` is refused.
fn check_trec(path: &Path, trec: &[u8], lines: &[CaseLine], k: usize) -> Result<()> {
    let text = String::from_utf8_lossy(trec);
    let mut ranked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [case, _, item, _, _, _] = fields[..] else {
            return Err(Error::input(Location::line(path, i + 1), "a TREC line has six fields"));
        };
        ranked.entry(crate::output::trec::decode_id(case)).or_default().push(crate::output::trec::decode_id(item));
    }
    for l in lines {
        let items = ranked.get(&l.case).map_or(&[][..], Vec::as_slice);
        let listed = l.list_at(k);
        // `top` holds at least the first ten of a list; the rest of a deeper one is in the run
        // file alone.
        let whole =
            l.top_at.get(&format!("@{k}")).is_some() || l.top.len() >= k || l.top.len() < crate::results::PER_QUERY_TOP;
        let agrees = if whole { items == listed } else { items.starts_with(listed) && items.len() <= k };
        if !agrees {
            return Err(bad(
                path,
                format!("case {:?}: the run file's ranking is not the case line's list at @{k}", l.case),
            ));
        }
    }
    Ok(())
}

/// Every case a shard scored is in the run's `cases.jsonl`, with the same split.
fn check_cases(path: &Path, cases: &[CaseInfo], lines: &[CaseLine]) -> Result<()> {
    let theirs: Vec<CaseInfo> = jsonl(path)?;
    for l in lines {
        let known = |list: &[CaseInfo]| list.iter().find(|c| c.case == l.case).map(|c| c.split);
        if known(cases) != Some(l.split) || known(&theirs) != Some(l.split) {
            return Err(bad(
                path,
                format!("case {:?} of the case lines is not in cases.jsonl with split {}", l.case, l.split.as_str()),
            ));
        }
    }
    Ok(())
}

fn bad(path: &Path, msg: String) -> Error {
    Error::input(Location::file(path), msg)
}

/// The fields two shards of one run must agree on, with their values for `m`.
fn identity(m: &Manifest) -> [(&'static str, String); 6] {
    [
        ("ragsweep_version", m.ragsweep_version.clone()),
        ("experiment config hash", m.experiment.config_hash.clone()),
        ("corpus hash", m.corpus.hash.clone()),
        ("golden set hash", m.golden.hash.clone()),
        ("judgments hash", m.golden.judgments.as_ref().map_or_else(String::new, |j| j.hash.clone())),
        ("shard count", m.shard.map_or(0, |s| s.of).to_string()),
    ]
}

fn read_shard(exp: &Experiment, dir: &Path) -> Result<Shard> {
    let manifest_path = dir.join("manifest.json");
    let manifest: Manifest = json(&manifest_path, "run manifest")?;
    if manifest.experiment.config_hash != exp.config_hash {
        return Err(bad(
            &manifest_path,
            format!("this shard ran a different experiment file than {}", exp.file.display()),
        ));
    }
    if manifest.shard.is_none() {
        return Err(bad(&manifest_path, "not a shard (run with --shard i/n)".into()));
    }
    let this_version = env!("CARGO_PKG_VERSION");
    if manifest.ragsweep_version != this_version {
        return Err(bad(
            &manifest_path,
            format!(
                "ragsweep_version differs: this shard {:?}, this ragsweep {this_version:?}",
                manifest.ragsweep_version
            ),
        ));
    }
    let matrix_path = dir.join("matrix.json");
    let matrix: Matrix = json(&matrix_path, "matrix")?;
    for row in &matrix.rows {
        if !exp.cells.iter().any(|c| c.id == row.cell) {
            return Err(bad(&matrix_path, format!("cell {:?} is not in the experiment", row.cell)));
        }
    }
    let path = dir.join("per_query.jsonl");
    let text = crate::input::text::read(&path)?;
    let mut lines: BTreeMap<String, (Vec<u8>, Vec<CaseLine>)> = BTreeMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let record: CaseLine =
            serde_json::from_str(line).map_err(|e| Error::input(Location::line(&path, i + 1), e.to_string()))?;
        if !matrix.rows.iter().any(|r| r.cell == record.cell) {
            return Err(Error::input(
                Location::line(&path, i + 1),
                format!("cell {:?} has case lines but no row in {}", record.cell, matrix_path.display()),
            ));
        }
        let (raw, parsed) = lines.entry(record.cell.clone()).or_default();
        raw.extend_from_slice(line.as_bytes());
        raw.push(b'\n');
        parsed.push(record);
    }
    Ok(Shard { dir: dir.to_path_buf(), manifest, rows: matrix.rows, slices: matrix.slices, lines })
}

/// The first field (as a JSON path) where `recomputed` and `written` differ, with both values.
fn first_difference<T: Serialize>(recomputed: &T, written: &T) -> Option<(String, String, String)> {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<(String, String, String)> {
        use serde_json::Value::Object;
        match (a, b) {
            (Object(x), Object(y)) => {
                for key in x.keys().chain(y.keys()) {
                    let null = serde_json::Value::Null;
                    let found = walk(x.get(key).unwrap_or(&null), y.get(key).unwrap_or(&null), format!("{at}.{key}"));
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            _ if a == b => None,
            _ => Some((at.trim_start_matches('.').to_string(), a.to_string(), b.to_string())),
        }
    }
    walk(&serde_json::to_value(recomputed).expect("json"), &serde_json::to_value(written).expect("json"), String::new())
}

/// Reads shard run directories of `exp`, checks them, streams each cell's per-case files into
/// `out` in grid order, and returns the merged result, recomputed from the per-case lines.
pub fn merge(exp: &Experiment, shards: &[PathBuf], out: &mut RunWriter) -> Result<RunResult> {
    let mut read: Vec<Shard> = Vec::new();
    let mut seen: BTreeMap<usize, PathBuf> = BTreeMap::new();
    for dir in shards {
        let shard = read_shard(exp, dir)?;
        let manifest_path = dir.join("manifest.json");
        for other in &read {
            let differs = |field: &str, mine: &str, theirs: &str| {
                bad(&manifest_path, format!("{field} differs: {mine:?} here, {theirs:?} in {}", other.dir.display()))
            };
            for ((field, mine), (_, theirs)) in identity(&shard.manifest).into_iter().zip(identity(&other.manifest)) {
                if mine != theirs {
                    return Err(differs(field, &mine, &theirs));
                }
            }
            for mine in &shard.manifest.models {
                if let Some(theirs) = other.manifest.models.iter().find(|m| m.id == mine.id && m.key != mine.key) {
                    return Err(differs(&format!("model {} key", mine.id), &mine.key, &theirs.key));
                }
            }
        }
        let index = shard.manifest.shard.map_or(0, |s| s.index);
        if let Some(other) = seen.insert(index, dir.clone()) {
            return Err(bad(&manifest_path, format!("shard {index} is given twice (also {})", other.display())));
        }
        read.push(shard);
    }
    let first = read.first().ok_or_else(|| Error::Shards("no shards to merge".into()))?;
    let of = first.manifest.shard.map_or(0, |s| s.of);
    if let Some(missing) = (1..=of).find(|i| !seen.contains_key(i)) {
        return Err(Error::Shards(format!("shard {missing} of {of} is missing: merge needs every shard")));
    }
    let case_info: Vec<CaseInfo> = jsonl(&first.dir.join("cases.jsonl"))?;
    let slices_of = aggregate::case_slices(&case_info);
    let golden_tags = aggregate::golden_tags(&case_info);
    let columns = exp.columns();
    let cuts = exp.cut_keys();
    let decision = exp.decision_metric();
    let decision_column = columns.iter().position(|c| *c == decision).expect("the decision metric is a column");
    let mut rows = Vec::new();
    let mut slices = Vec::new();
    let mut decision_values = Vec::with_capacity(exp.cells.len());
    for cell in &exp.cells {
        let shard = read.iter().find(|s| s.rows.iter().any(|r| r.cell == cell.id)).ok_or_else(|| {
            Error::Shards(format!("no shard has cell {} ({}): merge needs every shard", cell.id, cell.label()))
        })?;
        let matrix_path = shard.dir.join("matrix.json");
        let written: Vec<&Row> = shard.rows.iter().filter(|r| r.cell == cell.id).collect();
        let (raw, lines) = shard.lines.get(&cell.id).ok_or_else(|| {
            bad(&shard.dir.join("per_query.jsonl"), format!("cell {} has a row but no case lines", cell.id))
        })?;
        let results: Vec<CaseResult> = lines
            .iter()
            .map(|l| {
                l.to_result(&columns, &cuts).ok_or_else(|| {
                    bad(
                        &shard.dir.join("per_query.jsonl"),
                        format!("case {:?} of cell {} lacks a column of the experiment", l.case, cell.id),
                    )
                })
            })
            .collect::<Result<_>>()?;
        let measured = aggregate::Measured::of(written[0]);
        let (recomputed, recomputed_slices) =
            aggregate::aggregate_cell(exp, cell, &results, &slices_of, &golden_tags, &measured);
        if recomputed.len() != written.len() {
            return Err(bad(
                &matrix_path,
                format!(
                    "cell {} has {} rows here but its case lines give {} (splits)",
                    cell.id,
                    written.len(),
                    recomputed.len()
                ),
            ));
        }
        for row in &recomputed {
            let theirs = written.iter().find(|r| r.split == row.split).ok_or_else(|| {
                bad(
                    &matrix_path,
                    format!("cell {} has case lines of split {} but no row for it", cell.id, row.split.as_str()),
                )
            })?;
            if let Some((field, mine, theirs)) = first_difference(row, theirs) {
                return Err(bad(
                    &matrix_path,
                    format!(
                        "cell {} ({}): `{field}` is {theirs} here but {mine} from its per_query.jsonl: \
                         the shard was altered or is incomplete",
                        cell.id,
                        row.split.as_str()
                    ),
                ));
            }
        }
        let written_slices: Vec<&SliceRow> = shard.slices.iter().filter(|s| s.cell == cell.id).collect();
        let recomputed_refs: Vec<&SliceRow> = recomputed_slices.iter().collect();
        if let Some((field, mine, theirs)) = first_difference(&recomputed_refs, &written_slices) {
            return Err(bad(
                &matrix_path,
                format!("cell {}: slice `{field}` is {theirs} here but {mine} from its per_query.jsonl", cell.id),
            ));
        }
        // The run at the largest k, then one per smaller k at which a case's list is its own.
        let mut trecs = Vec::new();
        for (i, &k) in exp.k.iter().enumerate().rev() {
            let suffix = if i + 1 == exp.k.len() { String::new() } else { format!("@{k}") };
            let path = shard.dir.join("runs").join(format!("{}{suffix}.trec", cell.id));
            let own = lines.iter().any(|l| l.top_at.get(&format!("@{k}")).is_some());
            if !suffix.is_empty() && !own {
                continue;
            }
            let trec = crate::input::text::read_bytes(&path, u64::MAX)?;
            check_trec(&path, &trec, lines, k)?;
            trecs.push((suffix, trec));
        }
        for shard in &read {
            check_cases(&shard.dir.join("cases.jsonl"), &case_info, lines)?;
        }
        decision_values.push(CellValues {
            cell: cell.id.clone(),
            values: results.iter().map(|r| (r.split, r.values[decision_column])).collect(),
        });
        out.add_raw(&cell.id, raw, &trecs)?;
        rows.extend(recomputed);
        slices.extend(recomputed_slices);
    }
    let manifests: Vec<&Manifest> = read.iter().map(|s| &s.manifest).collect();
    // Models in the order an unsharded run lists them: the whole grid's plan order.
    let models: Vec<ModelEntry> = Plan::new(exp)
        .models
        .iter()
        .filter_map(|id| manifests.iter().flat_map(|m| &m.models).find(|m| &m.id == id).cloned())
        .collect();
    let mut manifest = first.manifest.clone();
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
    crate::evaluate::selection::mark_standing(exp, &mut rows, &slices, &decision_values);
    let (selection, no_selection) = crate::evaluate::selection::select_for(exp, &rows, &slices);
    Ok(RunResult {
        columns,
        decision_metric: decision,
        rows,
        slices,
        case_info,
        selection,
        no_selection,
        suggested: None,
        manifest,
    })
}
