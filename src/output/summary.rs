//! The summary of a run that fits a terminal (100 columns) and a pull-request comment
//! (`summary.md`): the top cells on the decision metric with intervals, latency and cost,
//! the selection, and where the full table and the report are. The full matrix stays in
//! `matrix.md`.

use std::path::Path;

use crate::evaluate::metrics::Mean;
use crate::input::golden::Split;
use crate::output::labels;
use crate::output::matrix::selection_summary;
use crate::results::{Manifest, Matrix, Row};
use crate::vocab::INDEX_UNUSED;
use crate::words;

/// Cells listed in a summary.
pub const TOP: usize = 10;
/// Printed lines are at most this wide.
pub const WIDTH: usize = 100;

/// One listed cell, its values rendered once for both formats.
struct Line<'a> {
    cell: &'a str,
    /// The values that vary in the grid (see `labels`).
    label: String,
    tuning: Option<&'a Mean>,
    reserved: Option<&'a Mean>,
    /// Best, equivalent, undecided, worse, or ineligible (leaked, or failed a `require`).
    standing: &'static str,
    p50: String,
    usd: String,
}

fn decision(m: &Matrix) -> String {
    m.decision_metric.clone().or_else(|| m.columns.first().cloned()).unwrap_or_default()
}

/// The top cells by tuning score on the decision metric (reserved when there is no tuning).
fn top<'a>(m: &'a Matrix, metric: &str) -> (Vec<Line<'a>>, usize) {
    let k = metric.split_once('@').map_or("", |(_, k)| k);
    let row = |cell: &str, split: Split| m.rows.iter().find(|r| r.cell == cell && r.split == split);
    let mut cells: Vec<&Row> = Vec::new();
    for r in &m.rows {
        if !cells.iter().any(|c| c.cell == r.cell) {
            cells.push(r);
        }
    }
    let total = cells.len();
    let score = |cell: &str| {
        let on = |s: Split| row(cell, s).and_then(|r| r.metrics.get(metric)?.value);
        on(Split::Tuning).or_else(|| on(Split::Reserved)).unwrap_or(f64::NEG_INFINITY)
    };
    cells.sort_by(|a, b| score(&b.cell).total_cmp(&score(&a.cell)));
    let mut labels = labels::varying_labels(&m.rows);
    let lines = cells
        .into_iter()
        .take(TOP)
        .map(|r| {
            let tuning = row(&r.cell, Split::Tuning);
            let main = tuning.or(row(&r.cell, Split::Reserved)).unwrap_or(r);
            Line {
                cell: &r.cell,
                label: labels.remove(&r.cell).unwrap_or_else(|| r.label.clone()),
                tuning: tuning.and_then(|t| t.metrics.get(metric)),
                reserved: row(&r.cell, Split::Reserved).and_then(|t| t.metrics.get(metric)),
                standing: standing(main, m),
                p50: main.latency.as_ref().map_or("–".into(), |l| ms(l.p50_ms)),
                usd: main.usd_per_1k_queries.get(&format!("@{k}")).map_or("–".into(), |v| format!("{v:.4}")),
            }
        })
        .collect();
    (lines, total)
}

/// A table column: title, one value per line, right-aligned unless `left`.
struct Column {
    title: String,
    values: Vec<String>,
    left: bool,
}

impl Column {
    fn width(&self) -> usize {
        self.values.iter().chain([&self.title]).map(|v| v.chars().count()).max().unwrap_or(0)
    }
}

/// The terminal table of `lines` in at most [`WIDTH`] columns: optional columns are dropped
/// (cost; then p50 unless latency decided; then intervals) before the configuration is ever
/// cut; a configuration that still does not fit goes on its own line under its row. `vs best`
/// (where each cell stands, or that it is ineligible) is the decision: it always stays.
fn table(lines: &[Line<'_>], metric: &str, with_usd: bool, keep_p50: bool) -> String {
    let column = |title: &str, left: bool, f: &dyn Fn(&Line<'_>) -> String| Column {
        title: title.into(),
        values: lines.iter().map(f).collect(),
        left,
    };
    let mut intervals = true;
    // Dropped first to last; the p50 stays when latency decided the selection.
    let mut optional = vec!["p50 ms"];
    if with_usd {
        optional.insert(0, "$/1k q");
    }
    if keep_p50 {
        optional.retain(|o| *o != "p50 ms");
    }
    loop {
        let show = |m: Option<&Mean>| if intervals { mean(m) } else { mean_only(m) };
        let mut columns = vec![
            column("#", true, &|_| String::new()),
            column("cell", true, &|l| l.cell.to_string()),
            column("configuration", true, &|l| l.label.clone()),
            column(&format!("{metric} tuning"), false, &|l| show(l.tuning)),
        ];
        if lines.iter().any(|l| l.reserved.is_some()) {
            columns.push(column("reserved", false, &|l| show(l.reserved)));
        }
        columns[0].values = (1..=lines.len()).map(|i| i.to_string()).collect();
        columns.push(column("vs best", true, &|l| l.standing.to_string()));
        if optional.contains(&"p50 ms") || keep_p50 {
            columns.push(column("p50 ms", false, &|l| l.p50.clone()));
        }
        if optional.contains(&"$/1k q") {
            columns.push(column("$/1k q", false, &|l| l.usd.clone()));
        }
        let total: usize = columns.iter().map(|c| c.width() + 1).sum::<usize>() - 1;
        let label_alone = total > WIDTH && !intervals && optional.is_empty();
        if total <= WIDTH || label_alone {
            return render_table(&columns, label_alone);
        }
        if optional.is_empty() {
            intervals = false;
        } else {
            optional.remove(0);
        }
    }
}

fn render_table(columns: &[Column], label_alone: bool) -> String {
    let shown: Vec<&Column> = columns.iter().filter(|c| !(label_alone && c.title == "configuration")).collect();
    let cell = |c: &Column, v: &str| {
        let w = c.width();
        if c.left {
            format!("{v:<w$}")
        } else {
            format!("{v:>w$}")
        }
    };
    let mut out = String::new();
    let line = |values: Vec<String>| values.join(" ").trim_end().to_string() + "\n";
    out.push_str(&line(shown.iter().map(|c| cell(c, &c.title)).collect()));
    let labels = columns.iter().find(|c| c.title == "configuration").expect("a configuration column");
    for i in 0..columns[0].values.len() {
        out.push_str(&line(shown.iter().map(|c| cell(c, &c.values[i])).collect()));
        if label_alone {
            out.push_str(&wrap(&format!("   {}", labels.values[i]), WIDTH, 2));
        }
    }
    out
}

/// `1 more cell`, `5 more cells`.
fn more_cells(n: usize) -> String {
    format!("{n} more {}", if n == 1 { "cell" } else { "cells" })
}

fn mean_only(m: Option<&Mean>) -> String {
    m.and_then(|m| m.value).map_or("–".into(), |v| words::fixed(v, 4))
}

fn mean(m: Option<&Mean>) -> String {
    match m {
        Some(Mean { value: Some(v), ci: Some(ci), .. }) => {
            format!("{} ({}–{})", words::fixed(*v, 4), words::fixed(ci.lo, 2), words::fixed(ci.hi, 2))
        }
        Some(Mean { value: Some(v), .. }) => words::fixed(*v, 4),
        _ => "–".into(),
    }
}

/// Milliseconds with three significant digits (BM25 answers in microseconds).
fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn standing(row: &Row, m: &Matrix) -> &'static str {
    match row.vs_best {
        Some(v) => v.as_str(),
        None if m.selection.as_ref().is_some_and(|s| s.excludes(&row.cell))
            || m.no_selection.as_ref().is_some_and(|n| n.excluded.iter().any(|(c, _)| *c == row.cell)) =>
        {
            "ineligible"
        }
        None => "",
    }
}

fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` wrapped at `width` columns, continuation lines indented by `indent` spaces.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    for para in text.lines() {
        let lead = para.len() - para.trim_start().len();
        let mut line = para[..lead].to_string();
        for word in para.split_whitespace() {
            let len = line.chars().count();
            if len > lead && len + 1 + word.chars().count() > width {
                out.push_str(line.trim_end());
                out.push('\n');
                line = " ".repeat(lead + indent);
            } else if len > lead {
                line.push(' ');
            }
            line.push_str(&truncate(word, width - lead - indent));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The first-listed cell's misses at the decision metric's k by cause (tuning, else reserved).
fn misses_line(m: &Matrix, metric: &str, cell: &str) -> Option<String> {
    let k = metric.split_once('@').map(|(_, k)| format!("@{k}"))?;
    let row = [Split::Tuning, Split::Reserved]
        .iter()
        .find_map(|&s| m.rows.iter().find(|r| r.cell == cell && r.split == s && r.misses.get(&k).is_some()))?;
    let counts = row.misses.get(&k)?;
    let total: usize = counts.values().sum();
    let causes: Vec<String> = {
        let mut c: Vec<(&str, usize)> =
            counts.0.iter().filter(|(_, n)| *n > 0).map(|(c, n)| (c.as_str(), *n)).collect();
        c.sort_by_key(|x| std::cmp::Reverse(x.1));
        c.into_iter().map(|(c, n)| format!("{c} {n}")).collect()
    };
    let what = match total {
        0 => "no misses".to_string(),
        n => {
            format!("{}: {} (each with its evidence in misses.csv)", crate::words::count(n, "miss"), causes.join(" · "))
        }
    };
    let cut = k.trim_start_matches('@');
    let at = if cut.ends_with('t') { format!("budget {cut}") } else { format!("k = {cut}") };
    Some(format!("{cell} at {at} ({}): {what}", row.split.as_str()))
}

/// How complete the labels are under the cells shown (SPEC §9): `judged@k` on tuning at the
/// largest k up to 10.
fn judged_line(m: &Matrix, manifest: &Manifest, cells: &[&str]) -> Option<String> {
    let k = crate::vocab::judged_k(&manifest.experiment.k)?;
    let column = format!("judged@{k}");
    let values: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            let row = m.rows.iter().find(|r| r.cell == *c && r.split == Split::Tuning)?;
            Some(format!("{c} {:.2}", row.metrics.get(&column)?.value?))
        })
        .collect();
    (!values.is_empty()).then(|| {
        format!("labels: {column} on tuning (share of the top {k} that carries a judgment): {}", values.join(" · "))
    })
}

fn header(m: &Matrix, manifest: &Manifest, metric: &str, total: usize) -> String {
    let splits: Vec<String> =
        manifest.golden.cases_per_split.iter().map(|(s, n)| format!("{} {n}", s.as_str())).collect();
    let cells = if total == 1 { "1 cell".to_string() } else { format!("{total} cells") };
    format!("{}: {cells} · {} · ranked by {metric} on tuning", m.experiment, splits.join(" / "))
}

/// The plain-language warning when the reserved split cannot separate the top cells: the
/// selected cell's 95% interval overlaps the next best one's.
fn reserved_warning(m: &Matrix) -> Option<String> {
    let s = m.selection.as_ref()?;
    let eligible = |cell: &str| !s.excludes(cell);
    let reserved = |cell: &str| {
        let r = m.rows.iter().find(|r| r.cell == cell && r.split == Split::Reserved)?;
        let mean = r.metrics.get(&s.metric)?;
        Some((mean.value?, mean.ci?))
    };
    let (mine, ci) = reserved(&s.cell)?;
    let mut overlapping: Vec<(&str, f64, f64, f64)> = m
        .rows
        .iter()
        .filter(|r| r.split == Split::Reserved && r.cell != s.cell && eligible(&r.cell))
        .filter_map(|r| reserved(&r.cell).map(|(v, c)| (r.cell.as_str(), v, c.lo, c.hi)))
        .filter(|&(_, _, lo, hi)| lo <= ci.hi && ci.lo <= hi)
        // Two cells with no spread on reserved are simply equal or apart there.
        .filter(|&(_, _, lo, hi)| lo < hi || ci.lo < ci.hi)
        .collect();
    overlapping.sort_by(|a, b| (a.1 - mine).abs().total_cmp(&(b.1 - mine).abs()));
    let (near, v, lo, hi) = *overlapping.first()?;
    Some(format!(
        "On reserved, the split is too small to separate the selected cell {} ({mine:.3}, 95% interval {:.3}–{:.3}) from {} other eligible {}: the nearest, {near} ({v:.3}, {lo:.3}–{hi:.3}), overlaps it. Treat their order on reserved as unknown.",
        s.cell,
        ci.lo,
        ci.hi,
        overlapping.len(),
        if overlapping.len() == 1 { "cell" } else { "cells" },
    ))
}

/// With the section unit, `recall@Bt` credits a fragment of a section as the whole of it: the
/// budgets at which it and `tok_recall@Bt` put different chunkers first on tuning.
fn fragment_warning(m: &Matrix, manifest: &Manifest) -> Vec<String> {
    if m.unit != "section" {
        return Vec::new();
    }
    let excluded = |cell: &str| m.selection.as_ref().is_some_and(|s| s.excludes(cell));
    // The chunker's label, as every other line shows it (`recursive(500,100)+title`).
    let chunker = |r: &Row| {
        manifest.cells.iter().find(|c| c.cell == r.cell).map_or_else(
            || labels::CHUNKER_KEYS.iter().filter_map(|k| r.config.get(k)).cloned().collect::<Vec<_>>().join(" "),
            |c| c.chunker.to_string(),
        )
    };
    let best_by = |metric: &str| {
        m.rows
            .iter()
            .filter(|r| r.split == Split::Tuning && !excluded(&r.cell))
            .filter_map(|r| Some((r, r.metrics.get(metric)?.value?)))
            .fold(None::<(&Row, f64)>, |best, (r, v)| match best {
                Some((_, b)) if b >= v => best,
                _ => Some((r, v)),
            })
    };
    let mut out = Vec::new();
    for b in &manifest.experiment.budget {
        let (Some((by_recall, _)), Some((by_tokens, _))) =
            (best_by(&format!("recall@{b}t")), best_by(&format!("tok_recall@{b}t")))
        else {
            continue;
        };
        if chunker(by_recall) != chunker(by_tokens) {
            out.push(format!(
                "budget {b}: recall@{b}t and tok_recall@{b}t put different chunkers first ({} by {}, {} by {}): recall@{b}t counts a fragment of a section as the whole section; tok_recall@{b}t measures how much of the labelled text reached the prompt",
                chunker(by_recall),
                by_recall.cell,
                chunker(by_tokens),
                by_tokens.cell
            ));
        }
    }
    out
}

/// What a warning threatens, most decisive first: how warnings are grouped and ordered in the
/// terminal, summary.md and the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Threat {
    /// The pick or a comparison of cells may be wrong.
    Decision,
    /// The labels may not say what is right.
    Labels,
    /// The corpus as read, or a model or engine, is not what was meant.
    Corpus,
}

impl Threat {
    pub const ALL: [Threat; 3] = [Threat::Decision, Threat::Labels, Threat::Corpus];

    pub fn name(self) -> &'static str {
        match self {
            Threat::Decision => "the decision",
            Threat::Labels => "the labels",
            Threat::Corpus => "the corpus and models",
        }
    }
}

/// One warning of a run and what it threatens.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub threat: Threat,
    pub text: String,
}

impl Warning {
    fn new(threat: Threat, text: String) -> Self {
        Warning { threat, text }
    }
}

/// The groups of `warnings` (ordered by [`Threat`]) as `(threat, its warnings)`, empty ones left out.
pub fn grouped(warnings: &[Warning]) -> Vec<(Threat, Vec<&str>)> {
    Threat::ALL
        .iter()
        .map(|&t| (t, warnings.iter().filter(|w| w.threat == t).map(|w| w.text.as_str()).collect::<Vec<_>>()))
        .filter(|(_, ws)| !ws.is_empty())
        .collect()
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// One line counting `warnings` by what they threaten.
fn warning_counts(warnings: &[Warning]) -> String {
    let groups: Vec<String> =
        grouped(warnings).iter().map(|(t, ws)| format!("{} about {}", ws.len(), t.name())).collect();
    format!("warnings: {} ({})", warnings.len(), groups.join(" · "))
}

/// What a reader of the matrix could be misled by, one line each: truncation by an embedding
/// model, chunks credited for several labelled sections, a k or budget that reaches everything a
/// cell can return, short lists of the selected cell, a reserved split too small to separate
/// the top cells.
/// `shown`: the run's path as commands should name it (`RUN` when unknown, as in the report
/// written before the run moves into place).
pub fn warnings(m: &Matrix, manifest: &Manifest, shown: Option<&Path>) -> Vec<Warning> {
    let mut out = Vec::new();
    out.extend(thin_labels(m, manifest, shown).map(|t| Warning::new(Threat::Labels, t)));
    // One note per chunk set: a rescored run's manifest holds the run's stages and its own.
    let mut chunk_sets = std::collections::HashSet::new();
    for stage in manifest.stages.iter().filter(|s| s.stage == "chunk" && chunk_sets.insert(&s.key)) {
        if let Some(note) = &stage.note {
            out.push(Warning::new(Threat::Corpus, format!("chunk {}: {note}", stage.key)));
        }
    }
    for model in manifest.models.iter().filter(|m| m.made_elsewhere) {
        out.push(Warning::new(Threat::Decision, format!(
            "model {}: its vectors were made elsewhere, so its cells' latency leaves out embedding the question, and its cost counts words at the price it declares",
            model.id
        )));
    }
    for (cell, why) in &m.failed {
        out.push(Warning::new(Threat::Decision, format!(
            "INCOMPLETE: cell {cell} failed ({why}); it has no rows, the other cells' results are whole, and any selection is among the cells that finished"
        )));
    }
    let first_rows: Vec<&Row> = {
        let mut seen: Vec<&Row> = Vec::new();
        for r in &m.rows {
            if !seen.iter().any(|s| s.cell == r.cell) {
                seen.push(r);
            }
        }
        seen
    };
    let pct = |v: f64| format!("{:.0}%", 100.0 * v);
    let mut truncated: Vec<(String, Vec<&str>)> = Vec::new();
    for r in &first_rows {
        if let (Some(chunks), Some(tokens)) = (r.cost.truncated_chunks, r.cost.truncated_tokens) {
            if chunks > TRUNCATION_WARNING || tokens > TRUNCATION_WARNING {
                let what = format!(
                    "{} of the chunks are longer than the embedding model reads and {} of their tokens are never embedded",
                    pct(chunks),
                    pct(tokens)
                );
                match truncated.iter_mut().find(|(w, _)| *w == what) {
                    Some((_, cells)) => cells.push(&r.cell),
                    None => truncated.push((what, vec![&r.cell])),
                }
            }
        }
    }
    for (what, cells) in truncated {
        out.push(Warning::new(
            Threat::Corpus,
            format!("{}: {what}; the dense side is credited for text it never saw", cells.join(", ")),
        ));
    }
    let spanning: Vec<String> = first_rows
        .iter()
        .filter_map(|r| r.spanning_hits.filter(|&s| s >= SPANNING_WARNING).map(|s| format!("{} {}", r.cell, pct(s))))
        .collect();
    if !spanning.is_empty() {
        out.push(Warning::new(Threat::Decision, format!(
            "relevant items placed by chunks that span several labelled sections (each counts for every one it covers): {}; compare chunkers at a budget (metric@Bt), not only at k",
            spanning.join(", ")
        )));
    }
    let max_k = manifest.experiment.k.last().copied().unwrap_or(0);
    let mut reaching: Vec<&str> =
        first_rows.iter().filter(|r| r.cost.chunks > 0 && max_k >= r.cost.chunks).map(|r| r.cell.as_str()).collect();
    if m.unit == "doc" && max_k >= manifest.corpus.documents {
        reaching = first_rows.iter().map(|r| r.cell.as_str()).collect();
    }
    if !reaching.is_empty() {
        out.push(Warning::new(Threat::Decision, format!(
            "k = {max_k} reaches everything {} can return (their whole chunk set, or every document): their scores at that k say little",
            reaching.join(", ")
        )));
    }
    for &b in &manifest.experiment.budget {
        let key = format!("@{b}t");
        let exhausted: Vec<&str> = first_rows
            .iter()
            .filter(|r| r.short_lists.get(&key).is_some_and(|&n| n > 0 && n == r.cases))
            .map(|r| r.cell.as_str())
            .collect();
        if !exhausted.is_empty() {
            out.push(Warning::new(
                Threat::Decision,
                format!(
                    "budget {b}: every list of {} ran out before filling it: the budget holds all the cell returns",
                    exhausted.join(", ")
                ),
            ));
        }
    }
    let cut = format!("@{}", crate::vocab::headline_k(&manifest.experiment.k));
    let under: Vec<String> = first_rows
        .iter()
        .filter_map(|first| {
            let rows = m.rows.iter().filter(|r| r.cell == first.cell);
            let (n, cases) =
                rows.fold((0, 0), |(n, c), r| (n + r.under_return.get(&cut).copied().unwrap_or(0), c + r.cases));
            (n > 0).then(|| format!("{} ({n} of {cases})", first.cell))
        })
        .collect();
    if !under.is_empty() {
        out.push(Warning::new(Threat::Decision, format!(
            "under-return at {cut}: {} returned fewer items than the exact search of the same data under the same filter (under_return{cut}): the filtered search stopped before filling the list",
            under.join(", ")
        )));
    }
    let unused_rows: Vec<&&Row> = first_rows
        .iter()
        .filter(|r| !r.engine_plan.is_empty() && r.engine_plan.0.iter().all(|(_, p)| p.ends_with(INDEX_UNUSED)))
        .collect();
    if !unused_rows.is_empty() {
        let unused: Vec<String> = unused_rows
            .iter()
            .map(|r| format!("{} ({})", r.cell, r.engine_plan.0[0].1.strip_suffix(INDEX_UNUSED).unwrap_or_default()))
            .collect();
        // Each engine's own advice, once.
        let mut advice: Vec<&str> = unused_rows
            .iter()
            .filter_map(|r| r.config.get("engine").and_then(|e| crate::engine::servers::index_unused_advice(e)))
            .collect();
        advice.sort_unstable();
        advice.dedup();
        let advice: String = advice.iter().map(|a| format!("; {a}")).collect();
        out.push(Warning::new(Threat::Corpus, format!(
            "index unused: the engine planned {} without its approximate index at every k (plan@k): their numbers are an exact search's, not the index's{advice}",
            unused.join(", ")
        )));
    }
    let moved: Vec<String> = first_rows
        .iter()
        .filter_map(|r| {
            let l = r.latency.as_ref()?;
            let cases = match l.moved.len() {
                0 => String::new(),
                n if n <= 3 => format!(": {}", l.moved.join(", ")),
                _ => format!(": {}, …", l.moved[..3].join(", ")),
            };
            l.stable.filter(|&s| s < l.n).map(|s| format!("{} ({} of {}{cases})", r.cell, l.n - s, l.n))
        })
        .collect();
    if !moved.is_empty() {
        out.push(Warning::new(Threat::Decision, format!(
            "unstable lists: asked again in the timed pass, {} returned another list than it was scored with (latency.stable): the engine's lists move between calls, so reruns and shards of these cells need not repeat their numbers (the cases: latency.moved)",
            moved.join(", ")
        )));
    }
    let retried: Vec<String> = first_rows
        .iter()
        .filter_map(|r| r.latency.as_ref().filter(|l| l.retried > 0).map(|l| format!("{} ({})", r.cell, l.retried)))
        .collect();
    if !retried.is_empty() {
        out.push(Warning::new(Threat::Decision, format!(
            "latency: an endpoint retried inside timed calls of {}: those calls were made again and left out of p50/p95/p99 (the endpoint was throttling or failing while it was timed)",
            retried.join(", ")
        )));
    }
    if let Some(s) = &m.selection {
        let cut = s.metric.split_once('@').map(|(_, c)| format!("@{c}")).unwrap_or_default();
        if let Some(r) = m.rows.iter().find(|r| r.cell == s.cell && r.split == Split::Tuning) {
            if let Some(&short) = r.short_lists.get(&cut).filter(|&&n| n > 0) {
                out.push(Warning::new(
                    Threat::Decision,
                    format!(
                        "the selected cell {} returned short lists at {cut} for {short} of {} tuning cases (filter {})",
                        s.cell, r.cases, r.filter
                    ),
                ));
            }
        }
    }
    out.extend(fragment_warning(m, manifest).into_iter().map(|t| Warning::new(Threat::Decision, t)));
    out.extend(reserved_warning(m).map(|t| Warning::new(Threat::Decision, t)));
    // Most decisive first, each said once.
    out.sort_by_key(|w| w.threat);
    let mut seen = std::collections::HashSet::new();
    out.retain(|w| seen.insert(w.text.clone()));
    out
}

/// Truncation above this share of chunks or tokens is warned about.
pub const TRUNCATION_WARNING: f64 = 0.05;
/// Relevant items from chunks spanning several labelled sections above this share are warned about.
pub const SPANNING_WARNING: f64 = 0.25;

/// The terminal summary; every line fits [`WIDTH`] columns. `dir` is the run directory.
pub fn terminal(m: &Matrix, manifest: &Manifest, dir: &Path) -> String {
    let metric = decision(m);
    let (lines, total) = top(m, &metric);
    let mut out = wrap(&header(m, manifest, &metric, total), WIDTH, 2);
    let latency_decided = m.selection.as_ref().is_some_and(|s| s.prefer == crate::experiment::Prefer::Latency);
    out.push_str(&table(&lines, &metric, manifest.cost.prices.any(), latency_decided));
    if total > lines.len() {
        out.push_str(&format!("… and {} (matrix.md has them all)\n", more_cells(total - lines.len())));
    }
    if !manifest.cost.prices.any() {
        out.push_str("no prices declared ([cost] in the experiment): cost columns are left out\n");
    }
    if let Some(line) = lines.first().and_then(|l| misses_line(m, &metric, l.cell)) {
        out.push_str(&wrap(&line, WIDTH, 2));
    }
    if let Some(line) = judged_line(m, manifest, &lines.iter().map(|l| l.cell).collect::<Vec<_>>()) {
        out.push_str(&wrap(&line, WIDTH, 2));
    }
    if let Some(s) = &m.selection {
        out.push('\n');
        out.push_str(&wrap(&selection_summary(s), WIDTH, 4));
    }
    if let Some(none) = &m.no_selection {
        out.push('\n');
        out.push_str(&wrap(&none.summary(), WIDTH, 4));
    }
    if let Some(g) = &m.suggested {
        out.push('\n');
        out.push_str(&crate::output::suggested::terminal(g));
    }
    let warned = warnings(m, manifest, Some(dir));
    if !warned.is_empty() {
        out.push_str(&wrap(&warning_counts(&warned), WIDTH, 2));
        for (threat, ws) in grouped(&warned) {
            out.push_str(&format!("  about {}:\n", threat.name()));
            for w in ws {
                out.push_str(&wrap(&format!("    warning: {w}"), WIDTH, 6));
            }
        }
    }
    out.push('\n');
    out.push_str(&wrap(
        &format!("full table: {} · report: {}", dir.join("matrix.md").display(), dir.join("report.html").display()),
        WIDTH,
        2,
    ));
    let cells: Vec<&str> = lines.iter().map(|l| l.cell).collect();
    let next = next_commands(m, &cells, dir, dir);
    if !next.is_empty() {
        out.push_str("\nnext:\n");
        for (command, why) in &next {
            out.push_str(&wrap(&format!("  {command}\n      {why}"), WIDTH, 6));
        }
    }
    out
}

/// The two or three most useful commands after this run, filled with its path `run` (as
/// shown), cell ids and a case the selected (or best) cell missed (read from `files`, where the
/// run's files are now): `(command, what it shows)`.
fn next_commands(m: &Matrix, cells: &[&str], run: &Path, files: &Path) -> Vec<(String, String)> {
    let metric = decision(m);
    let Some(&first) = cells.first() else { return Vec::new() };
    let chosen = m.selection.as_ref().map_or(first, |s| s.cell.as_str());
    let run = shell_word(&run.display().to_string());
    let mut out = Vec::new();
    let cut = metric.split_once('@').map_or("", |(_, k)| k);
    // A decision at a budget is diagnosed at that budget.
    let budget = cut.strip_suffix('t').filter(|b| b.parse::<usize>().is_ok());
    let at_budget = budget.map_or_else(String::new, |b| format!(" --budget {b}"));
    match budget {
        Some(b) => {
            if let Some(case) = first_budget_miss(files, chosen, &metric) {
                out.push((
                    format!("ragsweep explain {run} --cell {chosen} --case {}{at_budget}", shell_word(&case)),
                    format!("why {chosen} scored 0 on {metric} for {case}: the context packed into {b} tokens, rank by rank"),
                ));
            }
        }
        None => {
            if let Some((case, k, cause)) = first_miss(files, chosen, cut) {
                out.push((
                    format!("ragsweep explain {run} --cell {chosen} --case {}", shell_word(&case)),
                    format!("why {chosen} missed {case} at k = {k} ({cause}): every rank and score of that search"),
                ));
            }
        }
    }
    let family = |cell: &str| m.rows.iter().find(|r| r.cell == cell).and_then(|r| r.config.get("retriever"));
    let other = cells
        .iter()
        .find(|c| **c != chosen && family(c) != family(chosen))
        .or_else(|| cells.iter().find(|c| **c != chosen));
    if let Some(other) = other {
        out.push((
            format!("ragsweep misses {run} --cell {other} --vs {chosen}{at_budget}"),
            format!("the questions {other} missed and {chosen} found, with their exact terms"),
        ));
    }
    if m.selection.as_ref().is_some_and(|s| !s.undecided.is_empty()) {
        out.push((
            format!("ragsweep plan {run}"),
            "how many questions it takes to decide the cells the data cannot place against the best".into(),
        ));
    }
    out
}

/// A case on which `cell` scored 0 on `metric` (a budget metric), from `per_query.jsonl`;
/// tuning cases first.
fn first_budget_miss(dir: &Path, cell: &str, metric: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("per_query.jsonl")).ok()?;
    let mut found: Option<(bool, String)> = None;
    for line in text.lines() {
        let Ok(l) = serde_json::from_str::<crate::results::CaseLine>(line) else { continue };
        if l.cell == cell && l.metrics.get(metric).copied().flatten() == Some(0.0) {
            let tuning = l.split == Split::Tuning;
            if found.as_ref().is_none_or(|(t, _)| tuning && !t) {
                found = Some((tuning, l.case));
            }
        }
    }
    found.map(|(_, case)| case)
}

/// Below this share of judged items in the selected cell's top 10 on tuning, its misses may
/// be answers nobody labelled (SPEC §9; TREC pools aim far higher).
pub const JUDGED_FLOOR: f64 = 0.7;

/// The warning that the selected cell's labels are too thin to trust its misses: its
/// `judged@k` ([`crate::vocab::judged_k`]) on tuning under [`JUDGED_FLOOR`], with how many
/// unjudged units sit above its first relevant item.
fn thin_labels(m: &Matrix, manifest: &Manifest, shown: Option<&Path>) -> Option<String> {
    let s = m.selection.as_ref()?;
    let k = crate::vocab::judged_k(&manifest.experiment.k)?;
    let row = m.rows.iter().find(|r| r.cell == s.cell && r.split == Split::Tuning)?;
    let judged = row.metrics.get(&format!("judged@{k}"))?.value?;
    if judged >= JUDGED_FLOOR {
        return None;
    }
    let (above, cases) = row.unjudged_above;
    if manifest.golden.labels == crate::input::golden::Labels::Sparse {
        // A benchmark labels one or a few items per question: judged@k is low by design.
        return Some(format!(
            "labels are sparse ([golden] labels = \"sparse\"): judged@{k} ({judged:.2} for {}) measures how many returned items the benchmark labelled, not quality; a miss's `unjudged_above` says when unlabelled items outrank the cut",
            s.cell
        ));
    }
    if above == 0 {
        return Some(format!(
            "labels are thin: the selected cell {}'s judged@{k} on tuning is {judged:.2} (below {JUDGED_FLOOR}), though no unjudged unit sits above its first relevant item in any case",
            s.cell
        ));
    }
    Some(format!(
        "labels are thin: the selected cell {}'s judged@{k} on tuning is {judged:.2} (below {JUDGED_FLOOR}); {} sit above its first relevant item in {}: some of its misses may be answers nobody labelled; judge the pool in decision order (`ragsweep judge {}`), then `ragsweep rescore`",
        s.cell,
        crate::words::count(above, "unjudged unit"),
        crate::words::count(cases, "case"),
        shown.map_or_else(|| "RUN".into(), |p| shell_word(&p.display().to_string())),
    ))
}

/// A case `cell` missed, from `misses.csv`: at cut-off `cut` when it is a k, else at the
/// largest k it missed one; tuning cases first. `(case, k, cause)`.
fn first_miss(dir: &Path, cell: &str, cut: &str) -> Option<(String, String, String)> {
    let mut reader = csv::Reader::from_path(dir.join("misses.csv")).ok()?;
    // (at the asked cut-off, a tuning case, k): larger is preferred.
    type Rank = (bool, bool, usize);
    let mut best: Option<(Rank, (String, String, String))> = None;
    for record in reader.records().flatten() {
        let (Some(c), Some(split), Some(case), Some(k), Some(cause)) =
            (record.get(0), record.get(1), record.get(2), record.get(3), record.get(4))
        else {
            continue;
        };
        if c != cell {
            continue;
        }
        let rank = (k == cut, split == "tuning", k.parse::<usize>().unwrap_or(0));
        if best.as_ref().is_none_or(|(r, _)| rank > *r) {
            best = Some((rank, (case.to_string(), k.to_string(), cause.to_string())));
        }
    }
    best.map(|(_, found)| found)
}

/// `word` quoted for a POSIX shell when it holds anything but safe characters.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Text from the data (names, ids, labels, headings) as inert Markdown: HTML-significant
/// characters become entities and Markdown punctuation is backslash-escaped, so a pull-request
/// comment shows it as written and runs or links nothing. Line breaks become spaces.
pub fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// A code fence longer than any run of backticks in `text`, so `text` cannot close it.
pub fn fence(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// `summary.md`: the same content as Markdown, for a pull-request comment.
/// `run` is the run directory as shown, `files` where its files are now (a staging folder).
pub fn markdown(m: &Matrix, manifest: &Manifest, run: &Path, files: &Path) -> String {
    let metric = decision(m);
    let (lines, total) = top(m, &metric);
    let mut out = format!("### {}\n\n", md(&header(m, manifest, &metric, total)));
    let metric_md = md(&metric);
    let with_usd = manifest.cost.prices.any();
    out.push_str(&format!(
        "| # | cell | configuration | {metric_md} tuning | {metric_md} reserved | vs best | p50 ms |{}\n",
        if with_usd { " $ / 1k queries |" } else { "" }
    ));
    out.push_str(if with_usd {
        "|---:|---|---|---:|---:|---|---:|---:|\n"
    } else {
        "|---:|---|---|---:|---:|---|---:|\n"
    });
    for (i, l) in lines.iter().enumerate() {
        let mut values = vec![mean(l.tuning), mean(l.reserved), l.standing.to_string(), l.p50.clone()];
        if with_usd {
            values.push(l.usd.clone());
        }
        out.push_str(&format!("| {} | {} | {} | {} |\n", i + 1, md(l.cell), md(&l.label), values.join(" | ")));
    }
    if total > lines.len() {
        out.push_str(&format!("\n… and {} (`matrix.md` has them all).\n", more_cells(total - lines.len())));
    }
    if !with_usd {
        out.push_str("\nNo prices declared (`[cost]` in the experiment): cost columns are left out.\n");
    }
    if let Some(line) = lines.first().and_then(|l| misses_line(m, &metric, l.cell)) {
        out.push_str(&format!("\n{}\n", md(&line)));
    }
    if let Some(line) = judged_line(m, manifest, &lines.iter().map(|l| l.cell).collect::<Vec<_>>()) {
        out.push_str(&format!("\n{}\n", md(&line)));
    }
    if let Some(s) = &m.selection {
        let text = crate::output::terminal_safe(&selection_summary(s));
        let fence = fence(&text);
        out.push_str(&format!("\n{fence}\n{text}{fence}\n"));
    }
    if let Some(none) = &m.no_selection {
        out.push_str(&format!("\n**{}**\n", md(&none.summary())));
    }
    if let Some(g) = &m.suggested {
        out.push_str(&suggested_markdown(g));
    }
    let warnings = warnings(m, manifest, Some(run));
    if !warnings.is_empty() {
        // One line per group; the first (the most decisive) open.
        out.push_str(&format!("\n{}\n", md(&capitalised(&warning_counts(&warnings)))));
        for (i, (threat, ws)) in grouped(&warnings).into_iter().enumerate() {
            let open = if i == 0 { " open" } else { "" };
            out.push_str(&format!("\n<details{open}><summary>About {} ({})</summary>\n\n", threat.name(), ws.len()));
            for w in ws {
                out.push_str(&format!("- {}\n", md(w)));
            }
            out.push_str("\n</details>\n");
        }
    }
    let cells: Vec<&str> = lines.iter().map(|l| l.cell).collect();
    let next = next_commands(m, &cells, run, files);
    if !next.is_empty() {
        out.push_str("\nNext:\n");
        for (command, why) in &next {
            // A code span shows `<` as written, but no markup may reach the comment at all.
            let shown = if command.contains(['<', '>', '&', '`']) { md(command) } else { format!("`{command}`") };
            out.push_str(&format!("- {shown}: {}\n", md(why)));
        }
    }
    if !manifest.golden.health.is_empty() {
        out.push_str("\nGolden set:\n");
        for w in &manifest.golden.health {
            out.push_str(&format!("- {}\n", md(w)));
        }
    }
    out
}

/// The `summary.md` section of a run that leans on a chat model's grades.
fn suggested_markdown(g: &crate::results::SuggestedGrades) -> String {
    use crate::output::suggested::{agreement, caption, note, table};
    let mut out = format!("\n#### Grades suggested by {} (`[golden] suggestions`)\n\n", md(&g.model));
    out.push_str(&match &g.not_used {
        Some(why) => format!("The selection is on people's labels alone: {}\n", md(why)),
        None => "The selection is on the PPI means: the model's grades on every pooled unit, corrected by the cases people judged through (standing: the PPI interval of the difference to the best within the margin, below 0, or neither).\n".into(),
    });
    for s in &g.splits {
        out.push_str(&format!("\n{}\n\n{}", md(&caption(s, &g.metric, &g.model)), table(s)));
        if let Some(n) = note(s) {
            out.push_str(&format!("\n{}\n", md(&n)));
        }
    }
    let text = crate::output::terminal_safe(&agreement(&g.agreement, &g.model));
    let fence = fence(&text);
    out.push_str(&format!("\n{fence}\n{text}{fence}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_line_within_the_width() {
        let text = "Selected on tuning by ndcg@10: c01 (markdown+title+headings bm25(pt,k1=1.2,b=0.4) abstain_below=calibrate)\n  tuning 0.9423 · reserved 0.8895";
        let wrapped = wrap(text, 40, 4);
        assert!(wrapped.lines().all(|l| l.chars().count() <= 40), "{wrapped}");
        assert!(wrapped.lines().nth(1).unwrap().starts_with("    "), "{wrapped}");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }

    #[test]
    fn markdown_text_is_inert() {
        assert_eq!(md("<!--<script>x</script>"), "&lt;!--&lt;script&gt;x&lt;/script&gt;");
        assert_eq!(md("a|b `c` [d](e)"), "a\\|b \\`c\\` \\[d\\](e)");
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("a ```` b"), "`````");
    }
}
