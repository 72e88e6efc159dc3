//! The summary of a run that fits a terminal (100 columns) and a pull-request comment
//! (`summary.md`): the top cells on the decision metric with intervals, latency and cost,
//! the selection, and where the full table and the report are. The full matrix stays in
//! `matrix.md`.

use std::path::Path;

use crate::evaluate::metrics::Mean;
use crate::input::golden::Split;
use crate::output::matrix::selection_summary;
use crate::results::{Manifest, Matrix, Row};

/// Cells listed in a summary.
pub const TOP: usize = 10;
/// Printed lines are at most this wide.
pub const WIDTH: usize = 100;

/// One listed cell, its values rendered once for both formats: tuning and reserved means,
/// tied with the best, p50 ms, $ per 1k queries.
struct Line<'a> {
    cell: &'a str,
    label: &'a str,
    values: [String; 5],
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
    let lines = cells
        .into_iter()
        .take(TOP)
        .map(|r| {
            let tuning = row(&r.cell, Split::Tuning);
            let main = tuning.or(row(&r.cell, Split::Reserved)).unwrap_or(r);
            Line {
                cell: &r.cell,
                label: &r.label,
                values: [
                    mean(tuning.and_then(|t| t.metrics.get(metric))),
                    mean(row(&r.cell, Split::Reserved).and_then(|t| t.metrics.get(metric))),
                    tied(main.tied_with_best).to_string(),
                    main.latency.as_ref().map_or("–".into(), |l| ms(l.p50_ms)),
                    main.usd_per_1k_queries.get(&format!("@{k}")).map_or("–".into(), |v| format!("{v:.4}")),
                ],
            }
        })
        .collect();
    (lines, total)
}

fn mean(m: Option<&Mean>) -> String {
    match m {
        Some(Mean { value: Some(v), ci: Some(ci), .. }) => format!("{v:.4} ({:.2}–{:.2})", ci.lo, ci.hi),
        Some(Mean { value: Some(v), .. }) => format!("{v:.4}"),
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

fn tied(t: Option<bool>) -> &'static str {
    match t {
        Some(true) => "yes",
        Some(false) => "no",
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
        1 => format!("1 miss: {}", causes.join(" · ")),
        n => format!("{n} misses: {}", causes.join(" · ")),
    };
    Some(format!("{cell} at {k} ({}): {what} (each with its evidence in misses.csv)", row.split.as_str()))
}

fn header(m: &Matrix, manifest: &Manifest, metric: &str, total: usize) -> String {
    let splits: Vec<String> =
        manifest.golden.cases_per_split.iter().map(|(s, n)| format!("{} {n}", s.as_str())).collect();
    let cells = if total == 1 { "1 cell".to_string() } else { format!("{total} cells") };
    format!("{}: {cells} · {} · ranked by {metric} on tuning", m.experiment, splits.join(" / "))
}

/// The plain-language warning when the reserved split cannot separate the top cells: the
/// selected cell's 95% interval overlaps the next best one's.
pub fn reserved_warning(m: &Matrix) -> Option<String> {
    let metric = m.selection.as_ref()?.metric.clone();
    let mut reserved: Vec<(&str, f64, f64, f64)> = m
        .rows
        .iter()
        .filter(|r| r.split == Split::Reserved)
        .filter_map(|r| {
            let mean = r.metrics.get(&metric)?;
            let ci = mean.ci?;
            Some((r.cell.as_str(), mean.value?, ci.lo, ci.hi))
        })
        .collect();
    reserved.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (a, b) = (reserved.first()?, reserved.get(1)?);
    (a.2 <= b.3).then(|| {
        format!(
            "The reserved split is too small to separate the top cells: {} ({:.3}, 95% interval {:.3}–{:.3}) and {} ({:.3}, {:.3}–{:.3}) overlap. Treat their order as unknown.",
            a.0, a.1, a.2, a.3, b.0, b.1, b.2, b.3
        )
    })
}

/// What a reader of the matrix could be misled by, one line each: truncation by an embedding
/// model, chunks credited for several labelled sections, a k or budget that reaches everything a
/// cell can return, short lists of the selected cell, a reserved split too small to separate
/// the top cells.
pub fn warnings(m: &Matrix, manifest: &Manifest) -> Vec<String> {
    let mut out = Vec::new();
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
        out.push(format!("{}: {what}; the dense side is credited for text it never saw", cells.join(", ")));
    }
    let spanning: Vec<String> = first_rows
        .iter()
        .filter_map(|r| r.spanning_hits.filter(|&s| s >= SPANNING_WARNING).map(|s| format!("{} {}", r.cell, pct(s))))
        .collect();
    if !spanning.is_empty() {
        out.push(format!(
            "relevant items placed by chunks that span several labelled sections (each counts for every one it covers): {}; compare chunkers at a budget (metric@Bt), not only at k",
            spanning.join(", ")
        ));
    }
    let max_k = manifest.experiment.k.last().copied().unwrap_or(0);
    let mut reaching: Vec<&str> =
        first_rows.iter().filter(|r| r.cost.chunks > 0 && max_k >= r.cost.chunks).map(|r| r.cell.as_str()).collect();
    if m.unit == "doc" && max_k >= manifest.corpus.documents {
        reaching = first_rows.iter().map(|r| r.cell.as_str()).collect();
    }
    if !reaching.is_empty() {
        out.push(format!(
            "k = {max_k} reaches everything {} can return (their whole chunk set, or every document): their scores at that k say little",
            reaching.join(", ")
        ));
    }
    for &b in &manifest.experiment.budget {
        let key = format!("@{b}t");
        let exhausted: Vec<&str> = first_rows
            .iter()
            .filter(|r| r.short_lists.get(&key).is_some_and(|&n| n > 0 && n == r.cases))
            .map(|r| r.cell.as_str())
            .collect();
        if !exhausted.is_empty() {
            out.push(format!(
                "budget {b}: every list of {} ran out before filling it: the budget holds all the cell returns",
                exhausted.join(", ")
            ));
        }
    }
    if let Some(s) = &m.selection {
        let cut = s.metric.split_once('@').map(|(_, c)| format!("@{c}")).unwrap_or_default();
        if let Some(r) = m.rows.iter().find(|r| r.cell == s.cell && r.split == Split::Tuning) {
            if let Some(&short) = r.short_lists.get(&cut).filter(|&&n| n > 0) {
                out.push(format!(
                    "the selected cell {} returned short lists at {cut} for {short} of {} tuning cases (filter {})",
                    s.cell, r.cases, r.filter
                ));
            }
        }
    }
    out.extend(reserved_warning(m));
    out
}

/// Truncation above this share of chunks or tokens is warned about.
pub const TRUNCATION_WARNING: f64 = 0.05;
/// Relevant items from chunks spanning several labelled sections above this share are warned about.
pub const SPANNING_WARNING: f64 = 0.25;

/// The terminal summary; every line fits [`WIDTH`] columns.
pub fn terminal(m: &Matrix, manifest: &Manifest, dir: &Path) -> String {
    let metric = decision(m);
    let (lines, total) = top(m, &metric);
    let mut out = wrap(&header(m, manifest, &metric, total), WIDTH, 2);
    // cell 5, tuning/reserved 18, tied 4, p50 8, $/1k 9, spaces 7: the label gets the rest.
    let label_width = WIDTH - (3 + 5 + 18 + 18 + 4 + 8 + 9 + 8);
    out.push_str(&format!(
        "{:<3}{:<5} {:<label_width$} {:>18} {:>18} {:>4} {:>8} {:>9}\n",
        "#", "cell", "configuration", "tuning", "reserved", "tied", "p50 ms", "$/1k q"
    ));
    for (i, l) in lines.iter().enumerate() {
        let [tuning, reserved, tied, p50, usd] = &l.values;
        out.push_str(&format!(
            "{:<3}{:<5} {:<label_width$} {tuning:>18} {reserved:>18} {tied:>4} {p50:>8} {usd:>9}\n",
            i + 1,
            truncate(l.cell, 5),
            truncate(l.label, label_width),
        ));
    }
    if total > lines.len() {
        out.push_str(&format!("… and {} more cells\n", total - lines.len()));
    }
    if let Some(line) = lines.first().and_then(|l| misses_line(m, &metric, l.cell)) {
        out.push_str(&wrap(&line, WIDTH, 2));
    }
    if let Some(s) = &m.selection {
        out.push('\n');
        out.push_str(&wrap(&selection_summary(s), WIDTH, 4));
    }
    for w in warnings(m, manifest) {
        out.push_str(&wrap(&format!("warning: {w}"), WIDTH, 2));
    }
    out.push('\n');
    out.push_str(&wrap(
        &format!("full table: {} · report: {}", dir.join("matrix.md").display(), dir.join("report.html").display()),
        WIDTH,
        2,
    ));
    out
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
pub fn markdown(m: &Matrix, manifest: &Manifest) -> String {
    let metric = decision(m);
    let (lines, total) = top(m, &metric);
    let mut out = format!("### {}\n\n", md(&header(m, manifest, &metric, total)));
    let metric_md = md(&metric);
    out.push_str(&format!(
        "| # | cell | configuration | {metric_md} tuning | {metric_md} reserved | tied with best | p50 ms | $ / 1k queries |\n"
    ));
    out.push_str("|---:|---|---|---:|---:|---|---:|---:|\n");
    for (i, l) in lines.iter().enumerate() {
        out.push_str(&format!("| {} | {} | {} | {} |\n", i + 1, md(l.cell), md(l.label), l.values.join(" | ")));
    }
    if total > lines.len() {
        out.push_str(&format!("\n… and {} more cells (`matrix.md` has them all).\n", total - lines.len()));
    }
    if let Some(line) = lines.first().and_then(|l| misses_line(m, &metric, l.cell)) {
        out.push_str(&format!("\n{}\n", md(&line)));
    }
    if let Some(s) = &m.selection {
        let text = crate::output::terminal_safe(&selection_summary(s));
        let fence = fence(&text);
        out.push_str(&format!("\n{fence}\n{text}{fence}\n"));
    }
    let warnings = warnings(m, manifest);
    if !warnings.is_empty() {
        out.push_str("\nWarnings:\n");
        for w in &warnings {
            out.push_str(&format!("- {}\n", md(w)));
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
