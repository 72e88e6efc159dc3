//! Case-by-case comparison of two cells, of one run or of two runs (SPEC §7): the questions
//! a change fixed and broke, the paired randomisation test, bootstrap intervals, and what
//! a handful of questions would have said. `diff`, `check` and `misses` are built on it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::analyze::Analyzer;
use crate::catalog::RetrieverSpec;
use crate::error::{Error, Result};
use crate::evaluate::stats::{self, Interval, SubsetRange};
use crate::input::golden::Split;
use crate::input::text::{json, jsonl};
use crate::results::{CaseInfo, CaseLine, Manifest, Matrix};
use crate::stages::cost::Counter;
use crate::words::{fixed, signed};

pub mod gate;
pub mod merge;
pub mod power;

/// A cell of a run, as its manifest describes it.
#[derive(Debug, Clone)]
pub struct CellInfo {
    pub id: String,
    pub label: String,
    /// The values that vary in the run's grid (`bm25 analyzer=pt b=0.4`).
    pub varying: String,
    /// The retriever as the manifest recorded it.
    pub retriever: Option<RetrieverSpec>,
}

/// A finished run directory, read back.
pub struct RunData {
    pub dir: PathBuf,
    pub cells: Vec<CellInfo>,
    pub records: Vec<CaseLine>,
    pub cases: HashMap<String, CaseInfo>,
    /// The cell chosen by the experiment's `select`, if any.
    pub selected: Option<String>,
    /// Why the experiment's `select` chose no cell, when it chose none.
    pub no_selection: Option<crate::results::NoSelection>,
    pub golden_hash: String,
    /// The golden set the run read (drafts waiting for review live beside it).
    pub golden_path: PathBuf,
    /// Golden cases left out as unreviewed drafts: questions waiting for a person.
    pub drafts_waiting: usize,
    /// The hash of the judgments the run scored with (SPEC §9), if any.
    pub judgments_hash: Option<String>,
    /// The experiment's `select` metric: what `diff`, `check` and `plan` compare by default.
    pub decision_metric: String,
}

/// The metric compared when a run names none (older runs without a decision metric).
pub const DEFAULT_METRIC: &str = "ndcg@10";

impl RunData {
    pub fn load(dir: &Path) -> Result<RunData> {
        let manifest: Manifest = json(&dir.join("manifest.json"), "run manifest")?;
        let matrix: Matrix = json(&dir.join("matrix.json"), "matrix")?;
        let varying = crate::output::labels::varying_labels(&matrix.rows);
        let cells = manifest
            .cells
            .iter()
            .map(|c| CellInfo {
                id: c.cell.clone(),
                label: c.label.clone(),
                varying: varying.get(&c.cell).cloned().unwrap_or_else(|| c.label.clone()),
                retriever: Some(c.retriever.clone()),
            })
            .collect();
        let cases_path = dir.join("cases.jsonl");
        let cases: Vec<CaseInfo> = if cases_path.exists() { jsonl(&cases_path)? } else { Vec::new() };
        let records: Vec<CaseLine> = jsonl(&dir.join("per_query.jsonl"))?;
        let mut counts: HashMap<(&str, Split), usize> = HashMap::new();
        for r in &records {
            *counts.entry((r.cell.as_str(), r.split)).or_default() += 1;
        }
        for row in &matrix.rows {
            let found = counts.get(&(row.cell.as_str(), row.split)).copied().unwrap_or(0);
            if found != row.cases {
                return Err(Error::Comparison(format!(
                    "{}: per_query.jsonl has {found} cases of cell {} on {}, matrix.json says {}: the run is incomplete or edited",
                    dir.display(),
                    row.cell,
                    row.split.as_str(),
                    row.cases
                )));
            }
        }
        Ok(RunData {
            dir: dir.to_path_buf(),
            cells,
            records,
            cases: cases.into_iter().map(|c| (c.case.clone(), c)).collect(),
            selected: matrix.selection.map(|s| s.cell),
            no_selection: matrix.no_selection,
            judgments_hash: manifest.golden.judgments.map(|j| j.hash),
            drafts_waiting: manifest.golden.drafts_waiting,
            golden_hash: manifest.golden.hash,
            golden_path: manifest.golden.path,
            decision_metric: matrix.decision_metric.unwrap_or_else(|| DEFAULT_METRIC.into()),
        })
    }

    /// Whether both runs scored the same truth: the same golden set and the same judgments.
    pub fn same_golden(&self, other: &RunData) -> bool {
        self.golden_hash == other.golden_hash && self.judgments_hash == other.judgments_hash
    }

    /// How this run's golden set differs from `other`'s, in words (hashes, and judgments when
    /// those differ: a run before and after judging scores a different truth).
    pub fn golden_difference(&self, other: &RunData) -> String {
        let mut words = format!("hash {} vs {}", self.golden_hash, other.golden_hash);
        if self.judgments_hash != other.judgments_hash {
            let name = |h: &Option<String>| h.clone().unwrap_or_else(|| "none".into());
            words += &format!(
                "; judgments {} vs {}: rescore both with the same judgments (ragsweep rescore) to compare them",
                name(&self.judgments_hash),
                name(&other.judgments_hash)
            );
        }
        words
    }

    /// A cell by id (`c03`) or by its exact label.
    pub fn cell(&self, name: &str) -> Result<&CellInfo> {
        self.cells.iter().find(|c| c.id == name || c.label == name).ok_or_else(|| {
            let known: Vec<String> = self.cells.iter().map(|c| format!("{} ({})", c.id, c.label)).collect();
            Error::UnknownCell { cell: name.to_string(), source_of: self.dir.clone(), known }
        })
    }

    /// The named cell, or when none is named the selected cell, or the only one.
    pub fn cell_or_default(&self, name: Option<&str>) -> Result<&CellInfo> {
        if let Some(name) = name {
            return self.cell(name);
        }
        if let Some(none) = &self.no_selection {
            return Err(Error::Comparison(format!(
                "{}: {}; name a cell with --cell",
                self.dir.display(),
                none.summary()
            )));
        }
        match (&self.selected, self.cells.as_slice()) {
            (Some(id), _) => self.cell(id),
            (None, [only]) => Ok(only),
            _ => Err(Error::Comparison(format!(
                "{}: {} cells and no selection; name one with --cell",
                self.dir.display(),
                self.cells.len()
            ))),
        }
    }

    /// The cell to compare with `other` (a cell of another run): the named one, else the one
    /// with the same configuration (label), whatever its id. Only when `other` is itself the
    /// other run's default (its selected or only cell, `other_named` false) and no cell here
    /// has its configuration are the two runs' selected cells compared. Never another
    /// configuration by position: a named cell with no counterpart is an error naming the
    /// candidates.
    pub fn counterpart(&self, other: &CellInfo, name: Option<&str>, other_named: bool) -> Result<&CellInfo> {
        if let Some(name) = name {
            return self.cell(name);
        }
        if let Some(same) = self.cells.iter().find(|c| c.label == other.label) {
            return Ok(same);
        }
        if !other_named {
            return self.cell_or_default(None);
        }
        let known: Vec<String> = self.cells.iter().map(|c| format!("{} ({})", c.id, c.label)).collect();
        Err(Error::Comparison(format!(
            "{}: no cell has the configuration of {} ({}); name the one to compare with \
             (--baseline-cell) among: {}",
            self.dir.display(),
            other.id,
            other.label,
            known.join(", ")
        )))
    }

    /// Adds the scored answers (`answers.jsonl`, from `ragsweep answers`) to the records of the
    /// cell their contexts came from, as metric columns, so `diff` and `check` compare them
    /// like retrieval metrics; returns that cell's id.
    pub fn add_answers(&mut self) -> Result<String> {
        let contexts: Vec<crate::results::ContextLine> = jsonl(&self.dir.join("contexts.jsonl"))?;
        let scored: Vec<crate::evaluate::answers::ScoredAnswer> = jsonl(&self.dir.join("answers.jsonl"))?;
        let cell = contexts
            .first()
            .map(|c| c.cell.clone())
            .ok_or_else(|| Error::Comparison(format!("{}: contexts.jsonl is empty", self.dir.display())))?;
        let by_case: HashMap<&str, &crate::evaluate::answers::ScoredAnswer> =
            scored.iter().map(|a| (a.case.as_str(), a)).collect();
        for r in self.records.iter_mut().filter(|r| r.cell == cell) {
            for column in crate::evaluate::answers::COLUMNS {
                let value = by_case.get(r.case.as_str()).and_then(|a| a.values.get(column).copied().flatten());
                r.metrics.0.push((column.to_string(), value));
            }
        }
        Ok(cell)
    }

    /// The split a gate compares when none is named: reserved when the run has reserved
    /// cases, else all of them.
    pub fn default_split(&self) -> Option<Split> {
        self.records.iter().any(|r| r.split == Split::Reserved).then_some(Split::Reserved)
    }

    /// The tuning split when the run has tuning cases (where selection decides), else all.
    pub fn tuning_split(&self) -> Option<Split> {
        self.records.iter().any(|r| r.split == Split::Tuning).then_some(Split::Tuning)
    }

    pub fn records_of<'r>(&'r self, cell: &'r str, split: Option<Split>) -> impl Iterator<Item = &'r CaseLine> {
        self.records.iter().filter(move |r| r.cell == cell && split.is_none_or(|s| r.split == s))
    }

    pub fn question(&self, case: &str) -> &str {
        self.cases.get(case).map_or("", |c| c.question.as_str())
    }
}

/// One side of a comparison: a cell of a run.
pub struct Side<'r> {
    pub run: &'r RunData,
    pub cell: &'r CellInfo,
}

/// A case whose value changed between the two sides.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub case: String,
    pub before: f64,
    pub after: f64,
    /// Rank of the first relevant item in each side's list (deepest k).
    pub rank_before: Option<u32>,
    pub rank_after: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct Comparison {
    pub metric: String,
    pub split: Option<Split>,
    /// Cases scored by both sides.
    pub n: usize,
    /// Cases only side A (B) has on the compared split: the sides are not comparable.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub mean_a: f64,
    pub mean_b: f64,
    pub ci_a: Option<Interval>,
    pub ci_b: Option<Interval>,
    /// Interval of the mean per-case difference B − A.
    pub ci_diff: Option<Interval>,
    pub p_value: f64,
    /// Miss → hit (value 0 in A, above 0 in B).
    pub fixed: Vec<Change>,
    /// Hit → miss.
    pub broke: Vec<Change>,
    /// Cases with a higher / lower value in B (fixed and broke included), largest change first.
    pub better: Vec<Change>,
    pub worse: Vec<Change>,
    pub subsets_a: Vec<SubsetRange>,
    pub subsets_b: Vec<SubsetRange>,
}

/// Subset sizes of the sample-size view.
pub const SUBSET_SIZES: [usize; 3] = [5, 10, 20];
pub const SUBSET_DRAWS: usize = 1000;

/// `--require COLUMN=VALUE` on a column of the case lines (`leaks=0`, `restricted_hits=0`,
/// `under_return@10=0`, `recall_vs_oracle@10=0.95`) for one cell: a defect column is met only
/// when no case exceeds the value, the others by their mean. `None` when the column is none of
/// these (an answer column).
pub fn line_requirement(side: &Side<'_>, spec: &str) -> Option<Result<(String, bool)>> {
    let (name, want) = spec.split_once('=')?;
    let name = name.trim();
    let column = crate::evaluate::columns::column(name).filter(|c| LINE_COLUMNS.contains(&c.name))?;
    Some(check_line_requirement(side, spec, name, column, want))
}

/// Columns a case line keeps outside its metrics ([`line_value`]).
const LINE_COLUMNS: [&str; 4] = ["leaks", "restricted_hits", "under_return", "recall_vs_oracle"];

fn check_line_requirement(
    side: &Side<'_>,
    spec: &str,
    name: &str,
    column: &crate::evaluate::columns::Column,
    want: &str,
) -> Result<(String, bool)> {
    let want: f64 = want
        .trim()
        .parse()
        .ok()
        .filter(|v| column.check_value(*v).is_ok())
        .ok_or_else(|| Error::Comparison(format!("--require {spec}: {want:?} is not a value of {name}")))?;
    let values = case_values(side, name, None)?;
    if values.is_empty() {
        return Err(Error::Comparison(format!(
            "--require {spec}: no case of cell {} has a value for {name}",
            side.cell.id
        )));
    }
    let (value, what) = if column.defect {
        (values.values().map(|v| v.0).fold(0.0, f64::max), "the worst case")
    } else {
        (values.values().map(|v| v.0).sum::<f64>() / values.len() as f64, "the mean")
    };
    let met = column.meets(value, want);
    let line = format!(
        "{}: {name} of cell {}: {what} is {value} over {} cases, required {} {want}",
        if met { "PASS" } else { "FAIL" },
        side.cell.id,
        values.len(),
        column.requirement_sign()
    );
    Ok((line, met))
}

/// A per-case value a line keeps outside its metrics: `leaks`, `restricted_hits` (0 or 1), and
/// for cells with an oracle `under_return@k` (0 or 1) and `recall_vs_oracle@k`. `None` when the
/// line has no such column; `Some(None)` when it is undefined for the case.
fn line_value(r: &CaseLine, column: &str) -> Option<Option<f64>> {
    match column.split_once('@') {
        None if column == "leaks" => Some(Some(r.leaks as f64)),
        None if column == "restricted_hits" => Some(Some(f64::from(u8::from(r.restricted_hit)))),
        Some(("under_return", k)) => r.parity.get(&format!("@{k}")).map(|p| Some(f64::from(u8::from(p.under_return)))),
        Some(("recall_vs_oracle", k)) => r.parity.get(&format!("@{k}")).map(|p| p.recall_vs_oracle),
        _ => None,
    }
}

/// Compares `metric` (e.g. `hit@3`) between A and B over the cases both score on `split`
/// (all splits when `None`).
/// Each scored case's value of `metric` on a side (and the rank of its first relevant item).
pub fn case_values<'r>(
    side: &Side<'r>,
    metric: &str,
    split: Option<Split>,
) -> Result<HashMap<&'r str, (f64, Option<u32>)>> {
    let mut out = HashMap::new();
    let mut seen_metric = false;
    for r in side.run.records_of(&side.cell.id, split) {
        let Some(v) = r.metrics.get(metric).copied().or_else(|| line_value(r, metric)) else { continue };
        seen_metric = true;
        if let Some(v) = v {
            out.insert(r.case.as_str(), (v, r.first_relevant));
        }
    }
    if !seen_metric {
        let mut known: Vec<&str> = side.run.records.first().map(|r| r.metrics.keys().collect()).unwrap_or_default();
        known.sort();
        return Err(Error::Comparison(format!(
            "{}: cell {} has no metric {metric:?} on this split (metrics: {})",
            side.run.dir.display(),
            side.cell.id,
            known.join(", ")
        )));
    }
    Ok(out)
}

pub fn compare<'r>(a: &Side<'r>, b: &Side<'r>, metric: &str, split: Option<Split>) -> Result<Comparison> {
    let direction = crate::evaluate::columns::column(metric).ok_or_else(|| {
        Error::Comparison(format!(
            "{metric:?} is not a column that can be compared (columns: {})",
            crate::evaluate::columns::names().join(", ")
        ))
    })?;
    let values = |side: &Side<'r>| case_values(side, metric, split);
    let (va, vb) = (values(a)?, values(b)?);
    let listed = |side: &Side<'r>| -> Vec<&'r str> {
        side.run.records_of(&side.cell.id, split).map(|r| r.case.as_str()).collect()
    };
    let (listed_a, listed_b) = (listed(a), listed(b));
    let only = |mine: &[&str], theirs: &[&str]| -> Vec<String> {
        let theirs: std::collections::HashSet<&str> = theirs.iter().copied().collect();
        let mut out: Vec<String> = mine.iter().filter(|c| !theirs.contains(*c)).map(|c| c.to_string()).collect();
        out.sort();
        out
    };
    let (only_a, only_b) = (only(&listed_a, &listed_b), only(&listed_b, &listed_a));
    let mut cases: Vec<&str> = va.keys().filter(|c| vb.contains_key(*c)).copied().collect();
    cases.sort();
    if cases.is_empty() {
        return Err(Error::Comparison("the two cells share no scored case".into()));
    }
    let pairs: Vec<(f64, f64)> = cases.iter().map(|c| (va[c].0, vb[c].0)).collect();
    let change = |c: &str| Change {
        case: c.to_string(),
        before: va[c].0,
        after: vb[c].0,
        rank_before: va[c].1,
        rank_after: vb[c].1,
    };
    let a_values: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let b_values: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let diffs: Vec<f64> = pairs.iter().map(|(x, y)| y - x).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Ok(Comparison {
        metric: metric.to_string(),
        split,
        n: cases.len(),
        only_a,
        only_b,
        mean_a: mean(&a_values),
        mean_b: mean(&b_values),
        ci_a: stats::bootstrap_mean(&a_values, stats::BOOTSTRAP_RESAMPLES, stats::SEED),
        ci_b: stats::bootstrap_mean(&b_values, stats::BOOTSTRAP_RESAMPLES, stats::SEED),
        ci_diff: stats::bootstrap_mean(&diffs, stats::VS_BEST_RESAMPLES, stats::SEED),
        p_value: stats::paired_randomization(&diffs, stats::SIGN_FLIPS, stats::SEED),
        fixed: cases
            .iter()
            .filter(|c| direction.is_worst(va[*c].0) && !direction.is_worst(vb[*c].0))
            .map(|c| change(c))
            .collect(),
        broke: cases
            .iter()
            .filter(|c| !direction.is_worst(va[*c].0) && direction.is_worst(vb[*c].0))
            .map(|c| change(c))
            .collect(),
        better: by_change(cases.iter().filter(|c| direction.improved(va[*c].0, vb[*c].0)).map(|c| change(c)).collect()),
        worse: by_change(cases.iter().filter(|c| direction.improved(vb[*c].0, va[*c].0)).map(|c| change(c)).collect()),
        subsets_a: stats::subset_ranges(&a_values, &SUBSET_SIZES, SUBSET_DRAWS, stats::SEED),
        subsets_b: stats::subset_ranges(&b_values, &SUBSET_SIZES, SUBSET_DRAWS, stats::SEED),
    })
}

/// Largest change first; ties by case id.
fn by_change(mut changes: Vec<Change>) -> Vec<Change> {
    changes.sort_by(|x, y| (y.after - y.before).abs().total_cmp(&(x.after - x.before).abs()).then(x.case.cmp(&y.case)));
    changes
}

/// Changed cases listed beyond the fixed and broke lists (graded metrics).
const LISTED_CHANGES: usize = 10;

fn rank(r: Option<u32>) -> String {
    r.map_or("–".into(), |r| r.to_string())
}

fn ci(c: Option<Interval>) -> String {
    c.map_or("–".into(), |c| format!("[{}, {}]", fixed(c.lo, 4), fixed(c.hi, 4)))
}

impl Comparison {
    /// The comparison as plain text: summary, then the broke and fixed lists with each
    /// question and the rank of its first relevant item before → after.
    pub fn render(&self, a: &Side<'_>, b: &Side<'_>) -> String {
        let mut out = String::new();
        let split = self.split.map_or("all splits".to_string(), |s| format!("{} split", s.as_str()));
        let _ = writeln!(out, "{} on {} ({} scored by both)", self.metric, split, crate::words::count(self.n, "case"));
        for (side, name) in [(a, "A"), (b, "B")] {
            let _ = writeln!(out, "  {name}  {} {}  ({})", side.cell.id, side.cell.varying, side.run.dir.display());
            if side.cell.varying != side.cell.label {
                let _ = writeln!(out, "       {}", side.cell.label);
            }
        }
        let _ = writeln!(
            out,
            "  mean A {:.4} {}   mean B {:.4} {}",
            self.mean_a,
            ci(self.ci_a),
            self.mean_b,
            ci(self.ci_b)
        );
        let _ = writeln!(
            out,
            "  B − A {} {} (95% bootstrap, B = {}), paired randomisation p = {:.4} ({} sign flips)",
            signed(self.mean_b - self.mean_a, 4),
            ci(self.ci_diff),
            stats::VS_BEST_RESAMPLES,
            self.p_value,
            stats::SIGN_FLIPS
        );
        let _ = writeln!(
            out,
            "  fixed {} · broke {} · better {} · worse {} · unchanged {}",
            self.fixed.len(),
            self.broke.len(),
            self.better.len(),
            self.worse.len(),
            self.n - self.better.len() - self.worse.len()
        );
        let question =
            |case: &str| Some(a.run.question(case)).filter(|q| !q.is_empty()).unwrap_or(b.run.question(case));
        let still = |list: &[Change]| -> Vec<Change> {
            list.iter().filter(|c| c.before > 0.0 && c.after > 0.0).take(LISTED_CHANGES).cloned().collect()
        };
        let (worse, better) = (still(&self.worse), still(&self.better));
        let mut lists = vec![("broke (hit → miss)", &self.broke), ("fixed (miss → hit)", &self.fixed)];
        if !worse.is_empty() {
            lists.push(("worse but still found (largest drops)", &worse));
        }
        if !better.is_empty() {
            lists.push(("better, found before too (largest gains)", &better));
        }
        for (title, list) in lists {
            let _ = writeln!(out, "\n{title}: {}", list.len());
            for c in list {
                let _ = writeln!(
                    out,
                    "  {:<12} rank {:>2} → {:<2}  {:.3} → {:.3}  {}",
                    c.case,
                    rank(c.rank_before),
                    rank(c.rank_after),
                    c.before,
                    c.after,
                    question(&c.case)
                );
            }
        }
        let _ = writeln!(
            out,
            "\nWhat {} random questions would have said ({} subsets each, range and middle 95%):",
            SUBSET_SIZES.map(|s| s.to_string()).join(", "),
            SUBSET_DRAWS
        );
        for (name, ranges) in [("A", &self.subsets_a), ("B", &self.subsets_b)] {
            for r in ranges.iter() {
                let _ = writeln!(
                    out,
                    "  {name} n={:<3} {:.3} … {:.3}  (middle 95%: {:.3} … {:.3})",
                    r.size, r.min, r.max, r.p2_5, r.p97_5
                );
            }
        }
        out
    }
}

/// How the tokenizers of the compared cells see a term: one line per BM25 analyzer
/// (word → indexed term, or why it was dropped) and one per embedding model (its tokens).
pub struct Tokenizers {
    analyzers: Vec<Analyzer>,
    models: Vec<(String, Counter)>,
}

impl Tokenizers {
    /// The analyzers and models named in the cells' retriever configurations. Models are
    /// read from `models_dir`; a model that is not installed is named and skipped.
    pub fn of(cells: &[&CellInfo], models_dir: &Path) -> (Tokenizers, Vec<String>) {
        let mut analyzers: Vec<Analyzer> = Vec::new();
        let mut models: Vec<(String, Counter)> = Vec::new();
        let mut missing = Vec::new();
        for cell in cells {
            let Some(retriever) = &cell.retriever else { continue };
            if let Some(kind) = retriever.analyzer().filter(|k| !analyzers.iter().any(|a| a.kind() == *k)) {
                analyzers.push(Analyzer::new(kind));
            }
            if let Some(id) = retriever.model().map(str::to_string) {
                if models.iter().any(|(m, _)| *m == id) || missing.contains(&id) {
                    continue;
                }
                match crate::stages::embed::find_model(models_dir, &id).and_then(|info| Counter::for_model(&info)) {
                    Ok(counter) => models.push((id, counter)),
                    Err(_) => missing.push(id),
                }
            }
        }
        (Tokenizers { analyzers, models }, missing)
    }

    pub fn explain(&self, term: &str) -> Vec<String> {
        let mut lines = Vec::new();
        for a in &self.analyzers {
            let steps: Vec<String> = a
                .trace(term)
                .into_iter()
                .map(|s| match (&s.term, s.dropped) {
                    (Some(t), _) => format!("{t:?}"),
                    (None, why) => format!("({:?} dropped: {})", s.word, why.unwrap_or("no term")),
                })
                .collect();
            let shown = if steps.is_empty() {
                format!("{term:?} → no words: nothing to match")
            } else {
                format!("{term:?} → {}", steps.join(", "))
            };
            lines.push(format!("bm25 analyzer {}: {shown}", a.kind()));
        }
        for (id, counter) in &self.models {
            let tokens = counter.tokens(term).map(|t| t.join(" ")).unwrap_or_else(|e| e.to_string());
            lines.push(format!("{id} tokens: {tokens}"));
        }
        lines
    }
}

/// The cases X missed and Y found on `metric` (value 0 in X, above 0 in Y), exact-term cases
/// first: the question, each exact term, whether it occurs in the relevant text, how each
/// tokenizer sees it, and the rank of the first relevant item in each cell.
pub fn misses(
    x: &Side<'_>,
    y: &Side<'_>,
    metric: &str,
    split: Option<Split>,
    tokenizers: &Tokenizers,
) -> Result<String> {
    let c = compare(x, y, metric, split)?;
    let mut found = c.fixed.clone();
    let terms = |case: &str| x.run.cases.get(case).map(|i| i.exact_terms.as_slice()).unwrap_or_default();
    found.sort_by_key(|ch| (terms(&ch.case).is_empty(), ch.case.clone()));
    let mut out = String::new();
    let with_terms = found.iter().filter(|ch| !terms(&ch.case).is_empty()).count();
    let _ = writeln!(
        out,
        "{} missed {} that {} found on {metric} ({} of them with exact terms); {} compared",
        x.cell.id,
        crate::words::count(found.len(), "case"),
        y.cell.id,
        with_terms,
        crate::words::count(c.n, "case")
    );
    let _ = writeln!(out, "  X  {} {}  ({})", x.cell.id, x.cell.varying, x.cell.label);
    let _ = writeln!(out, "  Y  {} {}  ({})", y.cell.id, y.cell.varying, y.cell.label);
    for ch in &found {
        let _ = writeln!(out, "\n{}  {}", ch.case, x.run.question(&ch.case));
        let _ = writeln!(
            out,
            "  first relevant item: rank {} in X, rank {} in Y ({metric}: {:.3} → {:.3})",
            rank(ch.rank_before),
            rank(ch.rank_after),
            ch.before,
            ch.after
        );
        let t = terms(&ch.case);
        if t.is_empty() {
            let _ = writeln!(out, "  no exact terms");
        }
        for term in t {
            let tags: Vec<&str> = term.tags.iter().map(|t| t.as_str()).collect();
            let _ = writeln!(
                out,
                "  term {:?} [{}]: {} the relevant text",
                term.text,
                tags.join(", "),
                if term.in_evidence { "occurs in" } else { "does not occur in" }
            );
            for line in tokenizers.explain(&term.text) {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cell: &str, values: &[(&str, Option<f64>, Option<u32>)]) -> RunData {
        RunData {
            dir: PathBuf::from(format!("run-{cell}")),
            cells: vec![CellInfo {
                id: cell.into(),
                label: format!("label {cell}"),
                varying: format!("label {cell}"),
                retriever: None,
            }],
            records: values
                .iter()
                .map(|(case, v, rank)| CaseLine {
                    cell: cell.into(),
                    case: (*case).into(),
                    split: Split::Reserved,
                    answerable: v.is_some(),
                    metrics: crate::results::Ordered(vec![("hit@3".to_string(), *v)]),
                    first_relevant: *rank,
                    top_score: None,
                    top: Vec::new(),
                    packed_items: crate::results::Ordered::default(),
                    unjudged: vec![],
                    hits: None,
                    top_at: crate::results::Ordered::default(),
                    leaks: 0,
                    restricted_hit: false,
                    spanning: (0, 0),
                    depth: 0,
                    misses: Vec::new(),
                    budget_misses: Vec::new(),
                    ctx_tokens: crate::results::Ordered::default(),
                    short: crate::results::Ordered::default(),
                    parity: crate::results::Ordered::default(),
                    labels: String::new(),
                })
                .collect(),
            cases: HashMap::new(),
            selected: None,
            no_selection: None,
            golden_hash: String::new(),
            golden_path: PathBuf::new(),
            drafts_waiting: 0,
            judgments_hash: None,
            decision_metric: "hit@1".into(),
        }
    }

    #[test]
    fn fixed_and_broke_lists_by_hand() {
        let a = run(
            "a",
            &[
                ("q1", Some(0.0), None),
                ("q2", Some(1.0), Some(2)),
                ("q3", Some(1.0), Some(1)),
                ("q4", Some(0.0), Some(7)),
                ("q5", None, None),
            ],
        );
        let b = run(
            "b",
            &[
                ("q1", Some(1.0), Some(3)),
                ("q2", Some(0.0), Some(5)),
                ("q3", Some(1.0), Some(1)),
                ("q4", Some(1.0), Some(1)),
                ("q5", None, None),
            ],
        );
        let (sa, sb) = (Side { run: &a, cell: &a.cells[0] }, Side { run: &b, cell: &b.cells[0] });
        let c = compare(&sa, &sb, "hit@3", Some(Split::Reserved)).unwrap();
        assert_eq!(c.n, 4, "the unanswerable q5 is scored by neither");
        assert_eq!(c.fixed.iter().map(|c| c.case.as_str()).collect::<Vec<_>>(), ["q1", "q4"]);
        assert_eq!(
            c.broke,
            [Change { case: "q2".into(), before: 1.0, after: 0.0, rank_before: Some(2), rank_after: Some(5) }]
        );
        assert_eq!((c.mean_a, c.mean_b, c.better.len(), c.worse.len()), (0.5, 0.75, 2, 1));
        // Differences +1, −1, 0, +1: every sign pattern of three ±1 has |sum| ≥ 1 = |observed|,
        // so p = 1: two fixed and one broke prove nothing.
        assert_eq!(c.p_value, 1.0);
        let text = c.render(&sa, &sb);
        assert!(text.contains("fixed 2 · broke 1 · better 2 · worse 1 · unchanged 1"), "{text}");
        assert!(text.contains("q2           rank  2 → 5"), "{text}");
        assert!(compare(&sa, &sb, "ndcg@3", None).unwrap_err().to_string().contains("no metric \"ndcg@3\""));
    }

    #[test]
    fn graded_drops_that_stay_found_are_listed_largest_first() {
        let a = run("a", &[("q1", Some(1.0), Some(1)), ("q2", Some(0.6), Some(2)), ("q3", Some(0.5), Some(3))]);
        let b = run("b", &[("q1", Some(0.4), Some(3)), ("q2", Some(0.5), Some(2)), ("q3", Some(0.0), None)]);
        let (sa, sb) = (Side { run: &a, cell: &a.cells[0] }, Side { run: &b, cell: &b.cells[0] });
        let c = compare(&sa, &sb, "hit@3", None).unwrap();
        assert_eq!(c.worse.iter().map(|c| c.case.as_str()).collect::<Vec<_>>(), ["q1", "q3", "q2"]);
        assert_eq!(c.broke.len(), 1);
        let text = c.render(&sa, &sb);
        let listed = text.split("worse but still found (largest drops): 2\n").nth(1).expect("the list");
        assert!(listed.starts_with("  q1           rank  1 → 3   1.000 → 0.400"), "{text}");
        assert!(listed.lines().nth(1).unwrap().starts_with("  q2 "), "{text}");
    }
}
