//! The run directory: what a run writes, where, and how (atomically, streamed per cell).
//!
//! A run is written into a hidden staging directory, every file through a temporary
//! name, and the directory is renamed into place at the end: a crashed or failed run
//! leaves no half-written results behind.

pub(crate) mod labels;
pub mod matrix;
pub(crate) mod misses;
pub mod suggested;
pub mod summary;
pub mod trec;

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::atomic::write_atomic;
use crate::error::{Error, Result};
use crate::evaluate::metrics::MetricAt;
use crate::experiment::Experiment;
use crate::results::{
    CaseLine, CaseResult, CellEntry, CorpusInfo, CostInfo, ExperimentInfo, GoldenInfo, Manifest, ModelEntry, RunResult,
    ShardInfo,
};
use crate::runner::{Outcome, Prepared};
use matrix::Exporter;

/// `cases.jsonl`: each case once, with its question, exact terms, tags and meta.
pub fn cases_jsonl(run: &RunResult) -> Vec<u8> {
    let mut out = Vec::new();
    for c in &run.case_info {
        serde_json::to_writer(&mut out, c).expect("json");
        out.push(b'\n');
    }
    out
}

fn render(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> Vec<u8> {
    let mut buf = Vec::new();
    f(&mut buf).expect("writing to memory cannot fail");
    buf
}

/// The manifest of a finished run of `exp`.
pub fn manifest(exp: &Experiment, prepared: &Prepared, outcome: &Outcome, run_id: &str) -> Manifest {
    Manifest {
        ragsweep_version: env!("CARGO_PKG_VERSION").into(),
        run_id: run_id.into(),
        shard: exp.shard.map(|(index, of)| ShardInfo { index, of }),
        experiment: experiment_info(exp),
        corpus: CorpusInfo {
            path: exp.corpus_path.clone(),
            hash: prepared.corpus.hash.clone(),
            documents: prepared.corpus.docs.len(),
            public_documents: prepared.public_documents(),
            read: prepared.corpus.report.summary(),
        },
        golden: GoldenInfo {
            path: exp.golden.path.clone(),
            hash: crate::input::golden::golden_hash(&prepared.cases),
            tuning_qrels: exp.golden.tuning.clone(),
            reserved_qrels: exp.golden.reserved.clone(),
            default_groups: exp.default_groups.clone(),
            synthetic_acl: exp.synthetic_acl,
            missing_acl: exp.missing_acl,
            cases_per_split: outcome.split_counts.clone(),
            health: prepared.health().warnings,
            judgments: prepared.judgments.clone(),
            labels: exp.golden.labels(),
            drafts_waiting: prepared.drafts.len(),
        },
        models: prepared
            .models
            .iter()
            .map(|m| ModelEntry {
                id: m.id.clone(),
                description: m.description.clone(),
                file_hash: m.file_hash.clone(),
                key: m.key(),
                dim: m.dim,
                max_length: m.max_length,
                query_prefix: m.query_prefix.clone(),
                passage_prefix: m.passage_prefix.clone(),
                made_elsewhere: m.kind == crate::stages::embed::ModelKind::Vectors,
            })
            .collect(),
        cells: cell_entries(exp),
        cost: CostInfo { prices: exp.prices, counting_tokenizer: prepared.counter.name() },
        stages: outcome.stages.clone(),
        wall_seconds: outcome.wall_seconds,
        models_dir: None,
        cache_dir: None,
        failed_cells: outcome.failed.clone(),
        rescored_from: None,
        per_query_blake3: None,
    }
}

pub fn experiment_info(exp: &Experiment) -> ExperimentInfo {
    ExperimentInfo {
        name: exp.name.clone(),
        description: exp.description.clone(),
        file: std::path::absolute(&exp.file).unwrap_or_else(|_| exp.file.clone()),
        file_from_run: None,
        config_hash: exp.config_hash.clone(),
        unit: exp.unit.as_str().into(),
        k: exp.k.clone(),
        budget: exp.budget.clone(),
        metrics: exp.metrics.iter().map(|m| m.to_string()).collect(),
        seed: exp.seed,
        reserved_fraction: exp.reserved_fraction,
        select: exp.select.map(|m| m.to_string()),
        margin: exp.margin,
        require: exp.require.clone(),
    }
}

pub fn cell_entries(exp: &Experiment) -> Vec<CellEntry> {
    exp.cells
        .iter()
        .map(|c| CellEntry {
            cell: c.id.clone(),
            label: c.label(),
            chunker: c.chunker.clone(),
            retriever: c.retriever.clone(),
        })
        .collect()
}

/// A finished run, ready to write.
pub fn result(exp: &Experiment, prepared: &Prepared, outcome: Outcome, run_id: &str) -> RunResult {
    let manifest = manifest(exp, prepared, &outcome, run_id);
    let (selection, no_selection) = crate::evaluate::selection::select_for(exp, &outcome.rows, &outcome.slices);
    RunResult {
        columns: exp.columns(),
        decision_metric: exp.decision_metric(),
        selection,
        no_selection,
        rows: outcome.rows,
        slices: outcome.slices,
        case_info: outcome.case_info,
        suggested: None,
        manifest,
    }
}

/// The directory a run writes to: `<out>/<name>/<run-id>`.
pub fn run_dir(out: &Path, exp: &Experiment, run_id: &str) -> PathBuf {
    out.join(&exp.name).join(run_id)
}

/// A run identifier: UTC time of the run and the experiment's config hash.
///
/// `STAMP-CONFIG-UNIQUE`: the UTC second, the experiment file's hash, and 6 hex digits of
/// this process and instant, so two runs started in the same second never share an id.
pub fn run_id(exp: &Experiment, now: std::time::SystemTime) -> String {
    let since = now.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let mut unique = blake3::Hasher::new();
    unique.update(&std::process::id().to_le_bytes());
    unique.update(&since.as_nanos().to_le_bytes());
    format!("{}-{}-{}", utc_stamp(since.as_secs()), &exp.config_hash[..8], &unique.finalize().to_hex()[..6])
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
    removed_stale: Vec<PathBuf>,
    /// The `<out>/<name>/` folder, when this run created it: removed again if the run fails
    /// and leaves it empty.
    created_parent: Option<PathBuf>,
}

/// Staging directories (`.NAME.partial`) are stale once untouched for this long.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Removes the staging directories in `parent` that no run has touched for a day.
fn remove_stale_staging(parent: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(parent).map_err(|e| Error::io(parent, e))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with('.') && name.ends_with(".partial")) {
            continue;
        }
        let path = entry.path();
        // A live run touches its per-query file and runs/ folder as each cell finishes.
        let touched = [path.clone(), path.join("runs"), path.join("per_query.jsonl")]
            .iter()
            .filter_map(|p| fs::metadata(p).and_then(|m| m.modified()).ok())
            .max();
        if touched.and_then(|t| t.elapsed().ok()).is_some_and(|age| age > STALE_AFTER) {
            fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))?;
            removed.push(path);
        }
    }
    Ok(removed)
}

impl RunWriter {
    /// Starts writing the run that will appear at `dir` (which must not exist yet).
    ///
    /// The staging directory is created exclusively: a run never writes into, or removes,
    /// another run's. Staging directories left by killed runs more than a day ago are removed
    /// (see [`RunWriter::removed_stale`]).
    pub fn create(dir: &Path) -> Result<RunWriter> {
        let parent = dir.parent().expect("run dir has a parent");
        let name = dir.file_name().expect("run dir has a name").to_string_lossy();
        let created_parent = (!parent.exists()).then(|| parent.to_path_buf());
        fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let removed_stale = remove_stale_staging(parent)?;
        if dir.exists() {
            return Err(Error::RunExists { dir: dir.to_path_buf() });
        }
        let staging = parent.join(format!(".{name}.partial"));
        fs::create_dir(&staging).map_err(|e| Error::io(&staging, e))?;
        let open = || -> Result<fs::File> {
            let runs = staging.join("runs");
            fs::create_dir(&runs).map_err(|e| Error::io(&runs, e))?;
            let path = staging.join("per_query.jsonl");
            fs::File::create_new(&path).map_err(|e| Error::io(&path, e))
        };
        match open() {
            Ok(file) => Ok(RunWriter {
                dir: dir.to_path_buf(),
                staging,
                per_query: io::BufWriter::new(file),
                removed_stale,
                created_parent,
            }),
            Err(e) => {
                let _ = fs::remove_dir_all(&staging);
                if let Some(p) = created_parent {
                    let _ = fs::remove_dir(p);
                }
                Err(e)
            }
        }
    }

    /// Staging directories of killed runs, older than a day, that `create` removed.
    pub fn removed_stale(&self) -> &[PathBuf] {
        &self.removed_stale
    }

    /// One cell's case results: their `per_query.jsonl` lines and the cell's TREC run.
    pub fn add_cell(&mut self, columns: &[MetricAt], cuts: &[String], results: &[CaseResult]) -> Result<()> {
        let Some(first) = results.first() else { return Ok(()) };
        let mut lines = Vec::new();
        for r in results {
            serde_json::to_writer(&mut lines, &CaseLine::of(columns, cuts, r)).expect("json");
            lines.push(b'\n');
        }
        let ks: Vec<usize> = cuts.iter().filter_map(|c| c.trim_start_matches('@').parse::<usize>().ok()).collect();
        self.add_raw(&first.cell, &lines, &trec::trec_runs(results, &ks))
    }

    /// The `per_query.jsonl` being written, with every line added so far on disk.
    pub fn per_query(&mut self) -> Result<PathBuf> {
        let path = self.staging.join("per_query.jsonl");
        self.per_query.flush().map_err(|e| Error::io(&path, e))?;
        Ok(path)
    }

    /// A cell's already rendered files (from a shard being merged): its case lines and its
    /// TREC runs as (file name suffix, bytes).
    pub fn add_raw(&mut self, cell: &str, per_query: &[u8], trecs: &[(String, Vec<u8>)]) -> Result<()> {
        let path = self.staging.join("per_query.jsonl");
        self.per_query.write_all(per_query).map_err(|e| Error::io(&path, e))?;
        for (suffix, trec) in trecs {
            write_atomic(&self.staging.join("runs").join(format!("{cell}{suffix}.trec")), trec)?;
        }
        Ok(())
    }

    /// Writes the matrices, slices, cases and manifest, and moves the run into place.
    ///
    /// `also` writes what is built from the finished files (the report) into the staging
    /// directory before it moves into place.
    ///
    /// The misses files and the slices by the best cell's miss causes are built from the
    /// finished `per_query.jsonl`, streamed, and added to `run`.
    pub fn finish(mut self, run: &mut RunResult, also: impl FnOnce(&Path) -> Result<()>) -> Result<PathBuf> {
        let (dir, staging) = (self.dir.clone(), self.staging.clone());
        let path = staging.join("per_query.jsonl");
        self.per_query.flush().map_err(|e| Error::io(&path, e))?;
        self.per_query.get_ref().sync_all().map_err(|e| Error::io(&path, e))?;
        run.manifest.per_query_blake3 = Some(crate::stages::cache::file_hash(&path)?);
        write_misses(&staging, run)?;
        run.manifest.experiment.file_from_run = relative_to(&dir, &run.manifest.experiment.file);
        let exporters: [&dyn Exporter; 3] = [&matrix::Csv, &matrix::Json, &matrix::Markdown { compact: false }];
        for e in exporters {
            write_atomic(&staging.join(e.file_name()), &render(|b| e.write(run, b)))?;
        }
        write_atomic(&staging.join("slices.csv"), &matrix::slices_csv(run))?;
        write_atomic(&staging.join("cases.jsonl"), &cases_jsonl(run))?;
        write_atomic(&staging.join("runs").join("queries.txt"), &trec::queries(&run.case_info))?;
        let mut manifest = serde_json::to_vec_pretty(&run.manifest).expect("json");
        manifest.push(b'\n');
        write_atomic(&staging.join("manifest.json"), &manifest)?;
        also(&staging)?;
        fs::rename(&staging, &dir).map_err(|e| Error::io(&dir, e))?;
        if run.manifest.shard.is_none() {
            point_latest(&dir)?;
        }
        Ok(dir)
    }
}

/// The name, beside the run directories of an experiment, that names the newest run.
pub const LATEST: &str = "latest";

/// Makes `<experiment folder>/latest` name `dir`: a relative symbolic link, replaced
/// atomically (a file holding the run id where links are unavailable).
fn point_latest(dir: &Path) -> Result<()> {
    let (Some(parent), Some(id)) = (dir.parent(), dir.file_name()) else { return Ok(()) };
    let latest = parent.join(LATEST);
    let temporary = parent.join(format!(".{LATEST}.tmp-{}", std::process::id()));
    let _ = fs::remove_file(&temporary);
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(id, &temporary);
    #[cfg(not(unix))]
    let made = fs::write(&temporary, id.to_string_lossy().as_bytes());
    made.map_err(|e| Error::io(&temporary, e))?;
    fs::rename(&temporary, &latest).map_err(|e| Error::io(&latest, e))
}

/// The run directory a command was given: a run directory, `<experiment folder>/latest`, or
/// a prefix of a run id (`results/demo/20261201T17`) that names exactly one run.
pub fn resolve_run(given: &Path) -> Result<PathBuf> {
    // `results/demo/latest/` (a shell completes a link to a folder so) is `results/demo/latest`.
    let given = &given.components().collect::<PathBuf>();
    let bad = |why: String| Error::NotFound(format!("{}: {why}", given.display()));
    let parent = given.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = given.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name == LATEST {
        // Name the run itself, not the pointer that will move on.
        let id = match fs::read_link(given) {
            Ok(target) => target.to_string_lossy().into_owned(),
            Err(_) if given.is_file() => fs::read_to_string(given).map_err(|e| Error::io(given, e))?,
            Err(_) => return Err(bad("no run has finished here yet".into())),
        };
        // `latest` names a run id beside it, never a path elsewhere (a planted link could make a
        // command read, or write contexts into, another folder).
        let id = id.trim();
        if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
            return Err(bad(format!("`{LATEST}` points at {id:?}, which is not a run id beside it: refused")));
        }
        return resolve_run(&parent.join(id));
    }
    if given.join("manifest.json").is_file() {
        return Ok(given.to_path_buf());
    }
    if given.is_dir() {
        if given.join(LATEST).exists() {
            return resolve_run(&given.join(LATEST));
        }
        return Err(bad("not a run directory (no manifest.json)".into()));
    }
    let runs: Vec<String> = fs::read_dir(parent)
        .map_err(|_| bad("no such run directory".into()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("manifest.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|id| !id.starts_with('.') && id != LATEST)
        .collect();
    let mut matching: Vec<&String> = runs.iter().filter(|id| id.starts_with(&name)).collect();
    matching.sort();
    match matching.as_slice() {
        [one] => Ok(parent.join(one)),
        [] if runs.is_empty() => Err(bad("no such run directory".into())),
        [] => Err(bad(format!("no run id starts with {name:?}; runs in {}: {}", parent.display(), runs.join(", ")))),
        many => Err(bad(format!(
            "{} runs start with {name:?}: {}; give more of the id",
            many.len(),
            many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Calls `f` with each line of a `per_query.jsonl`, in order.
pub fn each_case_line(path: &Path, mut f: impl FnMut(CaseLine)) -> Result<()> {
    for line in crate::input::text::lines(path)? {
        let (n, line) = line?;
        if !line.trim().is_empty() {
            f(serde_json::from_str(&line).map_err(|e| Error::input(crate::Location::line(path, n), e.to_string()))?);
        }
    }
    Ok(())
}

/// Writes `misses.csv` and `miss_causes.csv`, and adds to `run` the slices of every cell by
/// the causes of the best cell's misses (on tuning, by the decision metric) at the decision
/// metric's k. A shard sees part of the grid, so it has no best cell.
fn write_misses(staging: &Path, run: &mut RunResult) -> Result<()> {
    let path = staging.join("per_query.jsonl");
    let best = match run.manifest.shard {
        Some(_) => None,
        None => {
            let info = &run.manifest.experiment;
            let excluded = crate::evaluate::selection::excluded(&run.rows, &run.slices, &info.require);
            crate::evaluate::selection::select(
                &run.rows,
                run.decision_metric,
                Default::default(),
                excluded,
                info.margin,
            )
            .map(|s| s.best)
        }
    };
    let k = run.decision_metric.k;
    let mut csv = misses::MissesCsv::default();
    let mut best_causes = HashMap::new();
    each_case_line(&path, |line| {
        csv.add(&line);
        if best.as_ref() == Some(&line.cell) {
            if let Some(m) = line.misses.iter().find(|m| m.k == k) {
                best_causes.insert(line.case.clone(), m.pipeline.unwrap_or(m.cause));
            }
        }
    })?;
    write_atomic(&staging.join("misses.csv"), &csv.finish())?;
    write_atomic(&staging.join("miss_causes.csv"), &misses::causes_csv(&run.rows))?;
    if best_causes.is_empty() {
        return Ok(());
    }
    let mut cell: Vec<CaseLine> = Vec::new();
    let mut slices = Vec::new();
    each_case_line(&path, |line| {
        if cell.last().is_some_and(|l| l.cell != line.cell) {
            slices.extend(misses::cause_slices(&cell, &best_causes));
            cell.clear();
        }
        cell.push(line);
    })?;
    slices.extend(misses::cause_slices(&cell, &best_causes));
    run.slices.extend(slices);
    Ok(())
}

/// A run or merge that failed before `finish` leaves no staging directory behind.
/// `text` with every control character but line ends and tabs shown as `\u{..}`: ids,
/// questions and headings come from user data and must not move a terminal's cursor or colour.
pub fn terminal_safe(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\n' && c != '\t' { c.escape_unicode().to_string() } else { c.to_string() })
        .collect()
}

/// `target` as a path relative to the directory `from` (both made absolute), if they share a root.
fn relative_to(from: &Path, target: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let (from, target) = (std::path::absolute(from).ok()?, std::path::absolute(target).ok()?);
    fn normal(p: &Path) -> Vec<Component<'_>> {
        p.components().filter(|c| *c != Component::CurDir).collect()
    }
    let (a, b) = (normal(&from), normal(&target));
    let shared = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if shared == 0 {
        return None;
    }
    let mut out = PathBuf::new();
    for _ in shared..a.len() {
        out.push("..");
    }
    for c in &b[shared..] {
        out.push(c.as_os_str());
    }
    Some(out)
}

impl Drop for RunWriter {
    fn drop(&mut self) {
        if self.staging.exists() {
            let _ = fs::remove_dir_all(&self.staging);
            if let Some(parent) = &self.created_parent {
                // Only when empty: another run may have started beside this one.
                let _ = fs::remove_dir(parent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_795_964_461), "20261129T150101Z");
    }
}
