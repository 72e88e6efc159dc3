//! `ragsweep judge`: grow the golden set by judging what the cells returned (SPEC §9).
//!
//! The pool of a run is, per case, the union of the units nobody judged in the top k (or the
//! packed budget) of the chosen cells, most-returned first: what TREC pools and what a person
//! can judge in minutes. Every answer is appended to the judgments file before the next item
//! is shown, so quitting, a crash or a closed terminal loses nothing, and the next session
//! resumes with what is left (a unit judged, at any grade, is never pooled again).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Location, Result};
use crate::experiment::Experiment;
use crate::input::corpus::{Corpus, Target};
use crate::input::golden::GoldenCase;
use crate::input::judgments::{self, Judgment};
use crate::results::CaseLine;
use crate::vocab::Cut;

pub mod decision;
pub mod estimate;
pub mod suggest;

/// One unit to judge for one case, and which cells returned it at which rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolItem {
    pub case: String,
    pub question: String,
    pub id: String,
    /// `(cell, rank)`: each chosen cell that returned the unit within the cut.
    pub cells: Vec<(String, u32)>,
}

/// What the pool is drawn from.
pub struct PoolOptions<'a> {
    /// Cells by id; every cell when empty.
    pub cells: &'a [String],
    pub cut: Cut,
    /// Case ids; every answerable case when empty.
    pub cases: &'a [String],
}

/// A run's pool, and what was judged of it since the run.
pub struct Pooled {
    /// The units to judge.
    pub unjudged: Vec<PoolItem>,
    /// Units the run saw unjudged that now carry a judgment, with its grade: what judging
    /// learned so far of units like those left.
    pub judged: Vec<(PoolItem, u32)>,
}

/// The pool of a run's `per_query.jsonl` against the current labels of `cases` (golden labels
/// and judgments): per case in golden order, the unjudged units the chosen cells placed within
/// the cut, by how many cells returned each, then by best rank.
pub fn pool(run: &Path, exp: &Experiment, cases: &[GoldenCase], opts: &PoolOptions<'_>) -> Result<Pooled> {
    pool_of(exp, cases, opts, &mut |add| crate::output::each_case_line(&run.join("per_query.jsonl"), add))
}

/// Feeds case lines, one at a time, to the function it is given.
pub type CaseLines<'a> = dyn FnMut(&mut dyn FnMut(CaseLine)) -> Result<()> + 'a;

/// The pool of the case lines `lines` feeds to its argument, as [`pool`] takes it.
pub fn pool_of(
    exp: &Experiment,
    cases: &[GoldenCase],
    opts: &PoolOptions<'_>,
    lines: &mut CaseLines<'_>,
) -> Result<Pooled> {
    if let Some(cell) = opts.cells.iter().find(|c| !exp.cells.iter().any(|k| &k.id == *c)) {
        let known = exp.cells.iter().map(|c| c.id.clone()).collect();
        return Err(Error::UnknownCell { cell: cell.clone(), source_of: exp.file.clone(), known });
    }
    let case_index: HashMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
    let missing: Vec<String> = opts.cases.iter().filter(|c| !case_index.contains_key(c.as_str())).cloned().collect();
    if !missing.is_empty() {
        return Err(Error::UnknownCase { cases: missing, golden: exp.golden.path.clone() });
    }
    exp.cut_position(opts.cut)?;
    // (case, unit) → cells with ranks.
    let mut found: BTreeMap<(usize, String), Vec<(String, u32)>> = BTreeMap::new();
    lines(&mut |line: CaseLine| {
        if !opts.cells.is_empty() && !opts.cells.contains(&line.cell) {
            return;
        }
        if !opts.cases.is_empty() && !opts.cases.contains(&line.case) {
            return;
        }
        let Some(&ci) = case_index.get(line.case.as_str()) else { return };
        let case = &cases[ci];
        if !case.answerable {
            return;
        }
        let depth = match opts.cut {
            Cut::K(k) => k as u32,
            Cut::Budget(b) => line.packed_items.get(&format!("@{b}t")).copied().unwrap_or(0) as u32,
        };
        for u in line.unjudged.iter().filter(|u| u.rank <= depth) {
            found.entry((ci, u.id.clone())).or_default().push((line.cell.clone(), u.rank));
        }
    })?;
    let mut items: Vec<(usize, PoolItem)> = Vec::new();
    let mut judged = Vec::new();
    for ((ci, id), mut cells) in found {
        cells.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        let item = PoolItem { case: cases[ci].id.clone(), question: cases[ci].question.clone(), id, cells };
        match cases[ci].relevant.iter().find(|l| l.id == item.id) {
            Some(label) => judged.push((item, label.grade)),
            None => items.push((ci, item)),
        }
    }
    let best = |p: &PoolItem| p.cells.iter().map(|c| c.1).min().unwrap_or(u32::MAX);
    items.sort_by(|(ca, a), (cb, b)| {
        ca.cmp(cb).then(b.cells.len().cmp(&a.cells.len())).then(best(a).cmp(&best(b))).then(a.id.cmp(&b.id))
    });
    Ok(Pooled { unjudged: items.into_iter().map(|(_, p)| p).collect(), judged })
}

/// `pool` with its cases in a random order drawn from `seed`, each case's units together and in
/// the pool's order: judged from the front, the cases judged through are a random sample.
pub fn by_random_case(pool: Vec<PoolItem>, seed: u64) -> Vec<PoolItem> {
    use rand::seq::SliceRandom;
    let mut seen = BTreeSet::new();
    let mut cases: Vec<String> = pool.iter().filter(|p| seen.insert(&p.case)).map(|p| p.case.clone()).collect();
    cases.shuffle(&mut <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed));
    let order: HashMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
    let mut pool = pool;
    pool.sort_by_key(|p| order[p.case.as_str()]);
    pool
}

/// The text a person reads to judge unit `id`: the section's span, else the whole document,
/// with the heading path above it (`Capítulo III › Art. 18`).
pub fn unit_text<'c>(corpus: &'c Corpus, id: &str) -> Option<(&'c str, String, &'c str)> {
    let text = corpus.unit_text(id)?;
    Some(match corpus.target(id)? {
        Target::Doc(d) => (corpus.docs[d].id.as_str(), corpus.docs[d].title.clone().unwrap_or_default(), text),
        Target::Section { doc, section } => {
            let doc = &corpus.docs[doc];
            let s = &doc.sections[section];
            let enclosing =
                doc.sections.iter().filter(|o| !o.page && o.level < s.level && o.start <= s.start && s.end <= o.end);
            let path: Vec<&str> = enclosing.map(|o| o.label.as_str()).chain([s.label.as_str()]).collect();
            (doc.id.as_str(), path.join(" › "), text)
        }
    })
}

/// Characters of a unit's text shown while judging; the rest is named, not shown.
pub const SHOWN_CHARS: usize = 2400;

/// `text` with the question's words (3 letters or more) marked: bold on a terminal, else «…».
fn highlighted(text: &str, question: &str, terminal: bool) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    let fold = |w: &str| crate::analyze::normalize(w);
    let terms: BTreeSet<String> = question.unicode_words().filter(|w| w.chars().count() >= 3).map(fold).collect();
    let (open, close) = if terminal { ("\x1b[1;33m", "\x1b[0m") } else { ("«", "»") };
    let mut out = String::with_capacity(text.len() + 64);
    for piece in text.split_word_bounds() {
        if terms.contains(&fold(piece)) {
            out.push_str(open);
            out.push_str(piece);
            out.push_str(close);
        } else {
            out.push_str(piece);
        }
    }
    out
}

/// What a judging session did.
#[derive(Debug, Default)]
pub struct SessionReport {
    pub answered: usize,
    pub skipped: usize,
    pub left: usize,
    /// Per case: the units newly judged relevant.
    pub relevant: BTreeMap<String, Vec<String>>,
    /// What the units left could do to the decision when the session ended (decision order).
    pub verdict: Option<decision::Verdict>,
}

/// One answer: a grade with an optional note, or a move.
#[derive(Debug, PartialEq)]
pub enum Answer {
    Grade(u32, Option<String>),
    Skip,
    Back,
    Quit,
}

fn parse_answer(line: &str) -> Option<Answer> {
    let line = line.trim();
    let (key, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let note = (!rest.trim().is_empty()).then(|| rest.trim().to_string());
    Some(match key {
        "0" | "1" | "2" => Answer::Grade(key.parse().expect("a digit"), note),
        "s" | "" => Answer::Skip,
        "b" => Answer::Back,
        "q" => Answer::Quit,
        _ => return None,
    })
}

/// Where a session's answers come from.
pub trait Answers {
    /// The answer for `item`, the `n`-th unit asked with `left` more in the pool; `again` is
    /// the grade it got earlier in this session.
    fn ask(&mut self, item: &PoolItem, n: usize, left: usize, again: Option<u32>) -> Result<Answer>;
    /// A line for whoever answers.
    fn say(&mut self, line: &str) -> Result<()>;
}

/// A person at a terminal: the question, the unit's text with the question's words marked, its
/// document and heading path and the cells that returned it; one answer per line (`2`, `1`,
/// `0`, each with an optional note after a space; `s` skip, `b` back, `q` quit; end of input
/// quits).
pub struct Person<'io> {
    pub corpus: &'io Corpus,
    pub input: &'io mut dyn BufRead,
    pub out: &'io mut dyn Write,
    pub terminal: bool,
    /// A chat model's suggested grades by (case, unit), shown beside the unit (`y` takes one).
    pub suggestions: &'io suggest::Suggestions,
}

fn io(e: std::io::Error) -> Error {
    Error::Judging(format!("judging: {e}"))
}

impl Answers for Person<'_> {
    fn ask(&mut self, item: &PoolItem, n: usize, left: usize, again: Option<u32>) -> Result<Answer> {
        let out = &mut *self.out;
        let Some((doc, heading, text)) = unit_text(self.corpus, &item.id) else { return Ok(Answer::Skip) };
        let window = passage(text, &item.question, SHOWN_CHARS);
        let cells: Vec<String> = item.cells.iter().map(|(c, r)| format!("{c} #{r}")).collect();
        writeln!(out, "\n[{n}, {left} left] case {} · returned by {}", item.case, cells.join(", ")).map_err(io)?;
        writeln!(out, "question: {}", item.question).map_err(io)?;
        let heading = if heading.is_empty() { String::new() } else { format!(" · {heading}") };
        writeln!(out, "unit: {} · document {doc}{heading}", item.id).map_err(io)?;
        if let Some(g) = again {
            writeln!(out, "(judged {g} in this session)").map_err(io)?;
        }
        writeln!(out, "----\n{}", highlighted(window.text.trim(), &item.question, self.terminal)).map_err(io)?;
        // A unit longer than the window is read in parts (its PDF pages, else paragraph groups).
        let pieces = if window.left_out > 0 { parts(self.corpus, &item.id, text, SHOWN_CHARS) } else { Vec::new() };
        if pieces.len() > 1 {
            writeln!(out, "----\n{}", where_words_are(text, &pieces, &window.matches)).map_err(io)?;
        }
        let suggested = self.suggestions.get(&(item.case.clone(), item.id.clone()));
        if let Some(s) = suggested {
            writeln!(out, "----\n{} suggests {}: {} (y takes it)", s.who, s.grade, s.reason).map_err(io)?;
        }
        let paging = if pieces.len() > 1 { " · n/p next/previous part, #N part N" } else { "" };
        write!(
            out,
            "----\nrelevant? {GRADE_SCALE} (a note may follow: `1 cites §2`) · s skip · b back · q quit{paging}\n> "
        )
        .map_err(io)?;
        out.flush().map_err(io)?;
        let mut shown: Option<usize> = None;
        loop {
            let mut line = String::new();
            if self.input.read_line(&mut line).map_err(io)? == 0 {
                return Ok(Answer::Quit);
            }
            if let Some(s) = suggested.filter(|_| line.trim() == "y") {
                return Ok(Answer::Grade(s.grade, Some(format!("as {} suggested", s.who))));
            }
            let asked = match line.trim() {
                "n" => Some(shown.map_or(0, |i| i + 1)),
                "p" => Some(shown.map_or(0, |i| i.saturating_sub(1))),
                other => other.strip_prefix('#').and_then(|n| n.parse::<usize>().ok()).map(|n| n.saturating_sub(1)),
            };
            if let Some(i) = asked.filter(|_| pieces.len() > 1) {
                let i = i.min(pieces.len() - 1);
                shown = Some(i);
                let (page, range) = &pieces[i];
                let piece = passage(&text[range.clone()], &item.question, SHOWN_CHARS);
                let page = page.as_ref().map_or(String::new(), |p| format!(" · {p}"));
                writeln!(self.out, "---- part {} of {}{page}", i + 1, pieces.len()).map_err(io)?;
                writeln!(self.out, "{}", highlighted(piece.text.trim(), &item.question, self.terminal)).map_err(io)?;
                write!(self.out, "----\nrelevant? 2, 1, 0 · s · b · q{paging}\n> ").map_err(io)?;
                self.out.flush().map_err(io)?;
                continue;
            }
            match parse_answer(&line) {
                Some(answer) => return Ok(answer),
                None => write!(self.out, "? answer 2, 1, 0, s, b or q{paging}\n> ").map_err(io)?,
            }
        }
    }

    fn say(&mut self, line: &str) -> Result<()> {
        writeln!(self.out, "{line}").map_err(io)
    }
}

/// One line on a long unit: how many parts, and which parts hold each of the question's words
/// (rarest first), so the person can turn to them.
fn where_words_are(text: &str, pieces: &[(Option<String>, std::ops::Range<usize>)], matches: &[Matches]) -> String {
    // Each part's end as a char offset into the unit's text.
    let mut ends = Vec::with_capacity(pieces.len());
    let mut chars = 0;
    for (_, range) in pieces {
        chars += text[range.clone()].chars().count();
        ends.push(chars);
    }
    let name = |i: usize| pieces[i].0.clone().unwrap_or_else(|| format!("#{}", i + 1));
    let words: Vec<String> = matches
        .iter()
        .take(5)
        .map(|m| {
            let mut at: Vec<usize> =
                m.at.iter().map(|&c| ends.iter().position(|&e| c < e).unwrap_or(ends.len() - 1)).collect();
            at.dedup();
            let listed: Vec<String> = at.iter().take(6).map(|&i| name(i)).collect();
            let more = if at.len() > 6 { ", …" } else { "" };
            format!("{} ×{} in {}{more}", m.term, m.count, listed.join(", "))
        })
        .collect();
    let parts = match pieces.first().and_then(|p| p.0.as_ref()) {
        Some(_) => "pages",
        None => "parts",
    };
    let found = if words.is_empty() { "none of the question's words occur in it".into() } else { words.join("; ") };
    format!("a long unit: {} characters in {} {parts}; {found}", chars, pieces.len())
}

/// Grades given elsewhere (a filled export, another judge's file), answered in the order the
/// session asks; a unit the file does not grade is skipped.
pub struct Replayed<'io> {
    pub grades: HashMap<(String, String), (u32, Option<String>)>,
    pub out: &'io mut dyn Write,
}

impl Replayed<'_> {
    /// The graded lines of a pool file as `--import` reads them (located errors, nothing kept
    /// when a line cannot stand).
    pub fn read<'o>(
        file: &Path,
        cases: &[GoldenCase],
        corpus: &Corpus,
        out: &'o mut dyn Write,
    ) -> Result<Replayed<'o>> {
        let graded = read_graded(file, cases, corpus, None, "")?;
        let grades = graded.into_iter().map(|j| ((j.case, j.id), (j.grade, j.note))).collect();
        Ok(Replayed { grades, out })
    }
}

impl Answers for Replayed<'_> {
    fn ask(&mut self, item: &PoolItem, _: usize, _: usize, _: Option<u32>) -> Result<Answer> {
        Ok(match self.grades.get(&(item.case.clone(), item.id.clone())) {
            Some((grade, note)) => Answer::Grade(*grade, note.clone()),
            None => Answer::Skip,
        })
    }

    fn say(&mut self, line: &str) -> Result<()> {
        writeln!(self.out, "{line}").map_err(io)
    }
}

/// How a session orders its pool and when it stops.
pub struct SessionOptions<'a, 'd> {
    /// The judgments file answers are appended to.
    pub path: &'a Path,
    pub who: &'a str,
    /// Scores the decision after every answer (for the trace, and for decision order).
    pub decider: Option<&'a mut decision::Decider<'d>>,
    /// Decision order: the units that can move the decision first, the order recomputed after
    /// every answer, stopping when the decision is settled or judging cannot decide it.
    /// Otherwise the pool's own order, to the end.
    pub decision_order: bool,
    /// Judge on after the stop rule speaks (complete the labels).
    pub whole_pool: bool,
    /// One JSON line per answer: what was judged and the decision after it.
    pub trace: Option<&'a mut dyn Write>,
    /// The run's folder (named in the stop rule's advice).
    pub run: &'a Path,
    /// Ask at most this many units.
    pub limit: Option<usize>,
}

/// One line of a session's trace.
#[derive(Debug, Serialize, Deserialize)]
pub struct TraceLine {
    /// Units judged so far in this session.
    pub judged: usize,
    pub case: Option<String>,
    pub id: Option<String>,
    pub grade: Option<u32>,
    pub pick: Option<String>,
    pub not_worse: Vec<String>,
    /// `open`, `settled`, `confident` or `cannot_decide` in decision order until the stop rule speaks;
    /// none after it and in the pool's own order.
    pub verdict: Option<String>,
    /// The cells judging cannot separate (`cannot_decide`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub between: Vec<String>,
    /// The cells whose standing the outcomes disagree on (`settled`, `confident`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<String>,
    /// Units still unjudged in the pool.
    pub left: usize,
}

/// Walks `answers` through `pool`, appending each grade to the judgments file before the next
/// unit is asked, so quitting or a crash loses nothing.
pub fn session(pool: Vec<PoolItem>, answers: &mut dyn Answers, opts: SessionOptions<'_, '_>) -> Result<SessionReport> {
    let SessionOptions { path, who, mut decider, decision_order, whole_pool, mut trace, run, limit } = opts;
    let mut report = SessionReport::default();
    let mut remaining = pool;
    let (mut skipped, mut history): (Vec<PoolItem>, Vec<(PoolItem, u32)>) = (Vec::new(), Vec::new());
    let mut again: Option<(PoolItem, u32)> = None;
    let mut stopped = false;
    let mut last: Option<(String, String, u32)> = None;
    let mut contenders: Vec<(String, f64)> = Vec::new();
    // A skip leaves the decision and the order as they were: they are computed again (and
    // traced) only after a grade, so a replay that skips most of a large pool stays linear.
    let mut changed = true;
    loop {
        let left = remaining.len() + skipped.len() + usize::from(again.is_some());
        let rescore = std::mem::take(&mut changed);
        if let Some(d) = decider.as_deref_mut().filter(|_| rescore) {
            // After the stop rule spoke (judging on with `whole_pool`), only the decision is traced.
            let verdict = if decision_order && !stopped {
                let unjudged: Vec<PoolItem> =
                    remaining.iter().chain(&skipped).chain(again.as_ref().map(|a| &a.0)).cloned().collect();
                let (verdict, cells) = d.verdict(&unjudged)?;
                contenders = cells;
                Some(verdict)
            } else {
                None
            };
            if let Some(t) = trace.as_deref_mut() {
                let line = TraceLine {
                    judged: report.answered,
                    case: last.as_ref().map(|l| l.0.clone()),
                    id: last.as_ref().map(|l| l.1.clone()),
                    grade: last.as_ref().map(|l| l.2),
                    pick: d.now().pick.clone(),
                    not_worse: d.now().not_worse().into_iter().map(String::from).collect(),
                    verdict: verdict.as_ref().map(|v| v.as_str().to_string()),
                    between: match &verdict {
                        Some(decision::Verdict::CannotDecide { cells, .. }) => cells.clone(),
                        _ => Vec::new(),
                    },
                    open: match &verdict {
                        Some(decision::Verdict::Settled { open, .. } | decision::Verdict::Confident { open, .. }) => {
                            open.clone()
                        }
                        _ => Vec::new(),
                    },
                    left,
                };
                serde_json::to_writer(&mut *t, &line).map_err(|e| Error::Judging(format!("trace: {e}")))?;
                t.write_all(b"\n").map_err(io)?;
            }
            if let Some(verdict) = verdict.filter(|v| *v != decision::Verdict::Open) {
                if let Some(message) = verdict.message(d.now(), left, run) {
                    answers.say(&message)?;
                }
                stopped = true;
                report.verdict = Some(verdict);
                if !whole_pool {
                    break;
                }
            }
            if decision_order {
                let values = d.values(&remaining, &contenders);
                remaining = decision::by_value(std::mem::take(&mut remaining), &values);
            }
        }
        if limit.is_some_and(|l| report.answered + report.skipped >= l) {
            break;
        }
        let (item, earlier) = match again.take() {
            Some((item, grade)) => (item, Some(grade)),
            None if remaining.is_empty() => break,
            None => (remaining.remove(0), None),
        };
        let n = report.answered + report.skipped + 1;
        match answers.ask(&item, n, left - 1, earlier)? {
            Answer::Quit => {
                match earlier {
                    Some(g) => history.push((item, g)),
                    None => remaining.insert(0, item),
                }
                break;
            }
            Answer::Skip => match earlier {
                Some(g) => history.push((item, g)),
                None => {
                    report.skipped += 1;
                    skipped.push(item);
                }
            },
            Answer::Back => {
                changed = true;
                let previous = history.pop();
                match earlier {
                    Some(g) => history.push((item, g)),
                    None => remaining.insert(0, item),
                }
                if let Some(p) = previous {
                    again = Some(p);
                }
            }
            Answer::Grade(grade, note) => {
                let j = Judgment {
                    case: item.case.clone(),
                    id: item.id.clone(),
                    grade,
                    note,
                    who: who.to_string(),
                    when: now(),
                };
                judgments::append(path, std::slice::from_ref(&j))?;
                if let Some(d) = decider.as_deref_mut() {
                    d.grade(&item, grade)?;
                }
                let relevant = report.relevant.entry(item.case.clone()).or_default();
                relevant.retain(|id| *id != item.id);
                if grade > 0 {
                    relevant.push(item.id.clone());
                }
                report.answered += usize::from(earlier.is_none());
                changed = true;
                last = Some((item.case.clone(), item.id.clone(), grade));
                history.push((item, grade));
            }
        }
    }
    report.relevant.retain(|_, ids| !ids.is_empty());
    report.left = remaining.len() + skipped.len() + usize::from(again.is_some());
    Ok(report)
}

/// The current UTC time as `YYYYMMDDTHHMMSSZ`.
pub fn now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    crate::output::utc_stamp(secs)
}

/// How many of the run's misses (chosen cells, every k) a unit judged relevant now would turn
/// into hits when the run is rescored, and how many misses there were.
pub fn misses_fixed(run: &Path, cells: &[String], relevant: &BTreeMap<String, Vec<String>>) -> Result<(usize, usize)> {
    let (mut fixed, mut misses) = (0, 0);
    crate::output::each_case_line(&run.join("per_query.jsonl"), |line: CaseLine| {
        if !cells.is_empty() && !cells.contains(&line.cell) {
            return;
        }
        let new = relevant.get(&line.case);
        for m in &line.misses {
            misses += 1;
            let hit =
                new.is_some_and(|ids| line.unjudged.iter().any(|u| u.rank as usize <= m.k && ids.contains(&u.id)));
            fixed += usize::from(hit);
        }
    })?;
    Ok((fixed, misses))
}

/// One line of a pool exported for judging elsewhere: fill `grade` (and `note`), leave the rest.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExportedItem {
    pub case: String,
    pub id: String,
    pub grade: Option<u32>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub who: Option<String>,
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub document: String,
    #[serde(default)]
    pub heading: String,
    #[serde(default)]
    pub text: String,
    /// Characters of the unit's text not in `text` (0: it is whole).
    #[serde(default)]
    pub left_out: usize,
    /// For a unit cut to fit, or one part of a long unit: where the question's words occur in
    /// its text, rarest first (char offsets into the whole unit's text).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<Matches>,
    /// For a unit too long for one line: which part of it this line is. Its grade is the
    /// unit's: the highest its graded parts get, and 0 only when every part is graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<Part>,
    #[serde(default)]
    pub cells: Vec<(String, u32)>,
    /// What each grade means.
    #[serde(default)]
    pub scale: String,
}

/// One part of a unit too long to export on one line: its place among the unit's parts, the
/// PDF page it is, and where it lies in the unit's text (char offsets, end excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub index: usize,
    pub of: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    pub start: usize,
    pub end: usize,
}

/// A unit's text in parts of at most about `max_chars`, as byte ranges of `text` (the text of
/// unit `id`) with the page each starts on: by the PDF pages it spans, else by groups of its
/// paragraphs; one part when it fits. A page or paragraph longer than `max_chars` stays one part.
fn parts(corpus: &Corpus, id: &str, text: &str, max_chars: usize) -> Vec<(Option<String>, std::ops::Range<usize>)> {
    if text.chars().count() <= max_chars {
        return vec![(None, 0..text.len())];
    }
    let (doc, start) = match corpus.target(id) {
        Some(Target::Doc(d)) => (&corpus.docs[d], 0),
        Some(Target::Section { doc, section }) => (&corpus.docs[doc], corpus.docs[doc].own_span(section).0),
        None => return vec![(None, 0..text.len())],
    };
    let pages: Vec<&crate::input::corpus::Section> = doc.sections.iter().filter(|s| s.page).collect();
    let page_at =
        |at: usize| pages.iter().find(|p| p.start <= start + at && start + at < p.end).map(|p| p.label.clone());
    let mut cuts: Vec<usize> =
        pages.iter().map(|p| p.start).filter(|&s| s > start && s < start + text.len()).map(|s| s - start).collect();
    if cuts.is_empty() {
        // Paragraph groups: a cut at a blank line once the group would pass `max_chars`, but
        // not after a group too small to stand alone (a heading before a long paragraph).
        let (mut group_chars, mut at) = (0, 0);
        for paragraph in text.split_inclusive("\n\n") {
            let chars = paragraph.chars().count();
            if group_chars >= max_chars / 4 && group_chars + chars > max_chars {
                cuts.push(at);
                group_chars = 0;
            }
            group_chars += chars;
            at += paragraph.len();
        }
    }
    let bounds: Vec<usize> = std::iter::once(0).chain(cuts).chain([text.len()]).collect();
    bounds.windows(2).filter(|w| w[0] < w[1]).map(|w| (page_at(w[0]), w[0]..w[1])).collect()
}

/// The grades a person gives, in words (the session, `--help`, the export and the README say
/// the same).
pub const GRADE_SCALE: &str = "0 not relevant, 1 relevant, 2 highly relevant";

/// Characters of a unit's text an exported pool line carries.
const EXPORTED_CHARS: usize = 20_000;

/// A unit's text cut to a reader's window: the part around the first place the question's
/// words occur, marked where it was cut, and how many characters were left out.
pub(crate) struct Window {
    pub(crate) text: String,
    left_out: usize,
    /// When cut: where the question's words occur in the whole text ([`Matches`]).
    matches: Vec<Matches>,
}

/// Where in a text (a char index) the question's words (`hits` of `names`, [`question_hits`])
/// are densest, weighted by how rare each is in the text: a word that occurs once (`pipefail`)
/// says more than one on every line (`does`). The window of `max_chars` starting a quarter before it covers the most weight of
/// distinct question words; 0 when none occurs.
fn densest(names: &[String], hits: &[(usize, usize)], max_chars: usize) -> usize {
    let mut occurrences = vec![0usize; names.len()];
    hits.iter().for_each(|&(_, t)| occurrences[t] += 1);
    let weight = |t: usize| 1.0 / occurrences[t] as f64;
    // Windows anchored a quarter before each occurrence; the best covers the most weight.
    let (mut best, mut best_score) = (0, 0.0);
    let mut in_window = vec![0usize; names.len()];
    let (mut score, mut end) = (0.0, 0);
    for first in 0..hits.len() {
        let start = hits[first].0;
        while end < hits.len() && hits[end].0 < start + max_chars * 3 / 4 {
            let t = hits[end].1;
            in_window[t] += 1;
            if in_window[t] == 1 {
                score += weight(t);
            }
            end += 1;
        }
        if score > best_score + 1e-12 {
            (best, best_score) = (start, score);
        }
        let t = hits[first].1;
        in_window[t] -= 1;
        if in_window[t] == 0 {
            score -= weight(t);
        }
    }
    best
}

/// The question's words (three letters or more, in lower case) that occur in `text`, and each
/// occurrence as (char index, index of its word), in text order.
fn question_hits(text: &str, question: &str) -> (Vec<String>, Vec<(usize, usize)>) {
    let terms: std::collections::HashSet<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect();
    let mut names: Vec<String> = Vec::new();
    let mut hits: Vec<(usize, usize)> = Vec::new();
    let (mut word, mut word_start) = (String::new(), 0);
    for (i, c) in text.chars().chain(std::iter::once(' ')).enumerate() {
        if c.is_alphanumeric() {
            if word.is_empty() {
                word_start = i;
            }
            word.extend(c.to_lowercase());
            continue;
        }
        if terms.contains(&word) {
            let t = names.iter().position(|n| *n == word).unwrap_or_else(|| {
                names.push(word.clone());
                names.len() - 1
            });
            hits.push((word_start, t));
        }
        word.clear();
    }
    (names, hits)
}

/// Where each of the question's words occurs in a unit's text, rarest first: what a person
/// looks for in a unit too long to carry whole.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Matches {
    pub term: String,
    /// Occurrences in the whole unit.
    pub count: usize,
    /// The first [`MATCHES_LISTED`] as char offsets into the unit's whole text.
    pub at: Vec<usize>,
}

/// Occurrences listed per word of the question in an exported unit.
pub const MATCHES_LISTED: usize = 50;

/// The question's words (`hits` of `names`), rarest first, each with its first positions.
fn matches(names: &[String], hits: &[(usize, usize)]) -> Vec<Matches> {
    let mut out: Vec<Matches> =
        names.iter().map(|term| Matches { term: term.clone(), count: 0, at: Vec::new() }).collect();
    for &(at, t) in hits {
        out[t].count += 1;
        if out[t].at.len() < MATCHES_LISTED {
            out[t].at.push(at);
        }
    }
    out.sort_by(|a, b| a.count.cmp(&b.count).then_with(|| a.term.cmp(&b.term)));
    out
}

pub(crate) fn passage(text: &str, question: &str, max_chars: usize) -> Window {
    let total = text.chars().count();
    if total <= max_chars {
        return Window { text: text.to_string(), left_out: 0, matches: Vec::new() };
    }
    let (names, hits) = question_hits(text, question);
    let hit = densest(&names, &hits, max_chars);
    let start = hit.saturating_sub(max_chars / 4).min(total - max_chars);
    let body: String = text.chars().skip(start).take(max_chars).collect();
    let after = total - start - max_chars;
    let mut out = String::new();
    if start > 0 {
        out.push_str(&format!("[… {start} characters before] "));
    }
    out.push_str(&body);
    if after > 0 {
        out.push_str(&format!(" [… {after} characters after]"));
    }
    Window { text: out, left_out: start + after, matches: matches(&names, &hits) }
}

/// The pool as JSONL, one unit per line with its text, for a spreadsheet or another tool; a
/// unit longer than a line carries, one line per part ([`Part`]).
pub fn export(items: &[PoolItem], corpus: &Corpus) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        let (document, heading, text) = unit_text(corpus, &item.id).unwrap_or(("", String::new(), ""));
        let pieces = parts(corpus, &item.id, text, EXPORTED_CHARS);
        let of = pieces.len();
        // The char offset of the piece in the unit's text.
        let mut start = 0;
        for (index, (page, range)) in pieces.into_iter().enumerate() {
            let piece = &text[range];
            let chars = piece.chars().count();
            let mut window = passage(piece, &item.question, EXPORTED_CHARS);
            let part = (of > 1).then(|| {
                if window.matches.is_empty() {
                    let (names, hits) = question_hits(piece, &item.question);
                    window.matches = matches(&names, &hits);
                }
                for m in &mut window.matches {
                    m.at.iter_mut().for_each(|at| *at += start);
                }
                Part { index: index + 1, of, page, start, end: start + chars }
            });
            start += chars;
            let line = ExportedItem {
                case: item.case.clone(),
                id: item.id.clone(),
                grade: None,
                note: None,
                who: None,
                question: item.question.clone(),
                document: document.to_string(),
                heading: heading.clone(),
                matches: window.matches,
                part,
                text: window.text,
                left_out: window.left_out,
                cells: item.cells.clone(),
                scale: GRADE_SCALE.into(),
            };
            serde_json::to_writer(&mut out, &line).expect("json");
            out.push(b'\n');
        }
    }
    out
}

/// Reads a judged pool (lines of `case`, `id`, `grade`; `grade` null or absent = not judged)
/// and appends its judgments to `path` (`earlier`: what it held when `cases` were read). Every
/// line that cannot stand is an error at its line, all listed, and then nothing is written.
pub fn import(
    file: &Path,
    cases: &[GoldenCase],
    corpus: &Corpus,
    earlier: Option<&judgments::JudgmentsInfo>,
    path: &Path,
    who: &str,
) -> Result<Vec<Judgment>> {
    let out = read_graded(file, cases, corpus, earlier, who)?;
    judgments::append(path, &out)?;
    Ok(out)
}

/// The graded parts of one long unit in an imported pool: how many parts it has, which were
/// graded, the judgment of its best grade, and the line of its first graded part.
struct GradedParts {
    of: usize,
    graded: BTreeSet<usize>,
    best: Judgment,
    line: usize,
}

/// The graded lines of a judged pool as judgments, each checked against `cases`; every line
/// that cannot stand is an error at its line, all listed.
fn read_graded(
    file: &Path,
    cases: &[GoldenCase],
    corpus: &Corpus,
    earlier: Option<&judgments::JudgmentsInfo>,
    who: &str,
) -> Result<Vec<Judgment>> {
    let text = crate::input::text::read(file)?;
    let by_id: HashMap<&str, &GoldenCase> = cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let mut parted: BTreeMap<(String, String), GradedParts> = BTreeMap::new();
    let when = now();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |column: usize| Location { path: file.to_path_buf(), line: i + 1, column };
        let item: ExportedItem = match serde_json::from_str(line) {
            Ok(item) => item,
            Err(e) => {
                errors.push(Error::input(at(e.column()), e.to_string()));
                continue;
            }
        };
        let Some(grade) = item.grade else { continue };
        let j = Judgment {
            case: item.case,
            id: item.id,
            grade,
            note: item.note.filter(|n| !n.trim().is_empty()),
            who: item.who.filter(|w| !w.trim().is_empty()).unwrap_or_else(|| who.to_string()),
            when: when.clone(),
        };
        let problem = match by_id.get(j.case.as_str()) {
            None => Some(format!("no case {:?} in the golden set", j.case)),
            Some(case) => {
                // `cases` carry the judgments made so far as labels: those may be judged again.
                let judged = |id: &str| earlier.is_some_and(|e| e.units.contains(&(j.case.clone(), id.to_string())));
                judgments::problem(&j, case, corpus, &judged)
            }
        };
        let problem = problem.or_else(|| {
            let part = item.part.as_ref()?;
            (part.index == 0 || part.index > part.of)
                .then(|| format!("part {} of {}: no such part", part.index, part.of))
        });
        match (problem, item.part) {
            (Some(why), _) => errors.push(Error::input(at(0), why)),
            (None, None) => out.push(j),
            (None, Some(part)) => {
                let key = (j.case.clone(), j.id.clone());
                let unit = parted.entry(key).or_insert_with(|| GradedParts {
                    of: part.of,
                    graded: BTreeSet::new(),
                    best: j.clone(),
                    line: i + 1,
                });
                unit.graded.insert(part.index);
                if j.grade > unit.best.grade {
                    unit.best = j;
                }
            }
        }
    }
    for ((case, id), GradedParts { of, graded, best, line }) in parted {
        if best.grade == 0 && graded.len() < of {
            let at = Location { path: file.to_path_buf(), line, column: 0 };
            errors.push(Error::input(
                at,
                format!(
                    "unit {id:?} of case {case:?}: {} of its {of} parts graded, all 0: it is not relevant only when every \
                     part is read; grade the others, or leave every part's grade empty",
                    graded.len()
                ),
            ));
        } else {
            out.push(best);
        }
    }
    if !errors.is_empty() {
        return Err(Error::many(errors, crate::input::corpus::ERRORS_LISTED));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_section_is_shown_where_its_rarest_question_words_are() {
        // "does" on every line of a 28-page section; "pipefail" once, near its end.
        let mut text: String =
            (0..2000).map(|i| format!("Line {i} says what the shell does with a command. ")).collect();
        text.push_str("With set -o pipefail the exit status of a pipeline is the last nonzero one. ");
        text.push_str(&"More text that does not matter here. ".repeat(200));
        let window = passage(&text, "What does pipefail do to the exit status?", 2400);
        assert!(window.text.contains("set -o pipefail"), "{}", &window.text[..200]);
        assert!(window.left_out > 0);
        // No question word in the text: the start.
        assert!(passage(&text, "xyzzy plugh", 2400).text.starts_with("Line 0 says"));
    }

    #[test]
    fn answers_are_a_key_and_an_optional_note() {
        assert_eq!(parse_answer("1 cites §2\n"), Some(Answer::Grade(1, Some("cites §2".into()))));
        assert_eq!(parse_answer("0"), Some(Answer::Grade(0, None)));
        assert_eq!(parse_answer("\n"), Some(Answer::Skip));
        assert_eq!(parse_answer("b"), Some(Answer::Back));
        assert_eq!(parse_answer("yes"), None);
    }

    #[test]
    fn question_words_are_marked_whole_and_case_folded() {
        let got = highlighted("O Prazo de prazos: prazo.", "Qual o prazo?", false);
        assert_eq!(got, "O «Prazo» de prazos: «prazo».");
    }
}
