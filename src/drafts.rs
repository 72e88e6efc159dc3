//! Questions drafted by a team's chat model ([`crate::chat`]), checked by code where code can
//! check, and kept apart from the golden set until a person keeps them (`ragsweep review`).
//!
//! Sections are chosen as `init` spreads its stubs (every folder with 2 % of the sections gets
//! its share). For each, the model is asked for questions a user would type and a verbatim
//! quote of the section that answers each. A draft is dropped, and counted, when its quote is
//! not in the section (whitespace- and case-normalised, then also with Markdown emphasis and
//! link syntax removed), when the quote is too short to show anything, or when the question
//! nearly repeats an earlier one (or a golden question). A question that repeats its answer's
//! rare words verbatim is kept but flagged: it flatters BM25.
//!
//! Sections of restricted documents are never sent unless asked (`include_restricted`): their
//! text would leave for the endpoint. Drafts of them carry the document's groups, so a kept
//! case asks as a user who may see its answer.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::analyze::normalize;
use crate::chat::ChatModel;
use crate::error::{Error, Result};
use crate::input::corpus::Corpus;

/// The prompt a section is sent in unless the user gives their own (`{title}`, `{heading}`,
/// `{text}` and `{n}` are replaced).
pub const DEFAULT_PROMPT: &str = "You write test questions for a search system over a team's documents.\n\
Below is one section of a page. Write {n} different questions that a user of these documents \
would type into the search box and that this section answers. Ask as a user who has not read \
the section would: use the words such a user knows, not the section's rare terms unless a user \
would type them. Write in the language of the section. For each question, copy a quote from \
the section, word for word (one or two sentences), that answers it.\n\
Answer with JSON only: {\"questions\": [{\"question\": \"…\", \"quote\": \"…\"}]}\n\n\
Page: {title}\nSection: {heading}\n\n{text}";

/// The most characters of a section sent in one prompt.
const MAX_SECTION_CHARS: usize = 8_000;
/// Words a quote needs to show where an answer is.
const MIN_QUOTE_WORDS: usize = 3;
/// Word-set overlap (Jaccard) from which two questions are the same question.
const DUPLICATE_OVERLAP: f64 = 0.7;

/// One drafted question, as `drafts.jsonl` holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Draft {
    pub id: String,
    pub question: String,
    /// The model's quote, found in the section.
    pub quote: String,
    /// The section (or document) that answers: the kept case's label.
    pub relevant: String,
    /// The quote's document, when the quote is in its text as written (so it can be an evidence
    /// span); `None` when it was found only once markup was set aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_doc: Option<String>,
    pub page: String,
    pub heading: String,
    /// The groups of the label's document (a restricted page), for the kept case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_hash: Option<String>,
    /// `model:NAME`.
    pub by: String,
    /// What code noticed: `repeats_rare_answer_words`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// `pending`, `kept`, `edited` or `dropped` (by a person, in `review`).
    pub status: String,
}

/// Why drafts were not kept, and what the model cost.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DraftReport {
    pub sections: usize,
    /// Restricted documents whose sections were not offered to the model.
    pub restricted_skipped: usize,
    pub drafted: usize,
    pub quote_not_found: usize,
    pub quote_too_short: usize,
    pub duplicates: usize,
    /// Items without a question or a quote.
    pub malformed: usize,
    /// Sections whose answer held no readable JSON.
    pub unreadable: usize,
    pub flagged: usize,
    /// Drafts already in the drafts file (kept as they are).
    pub already: usize,
    pub usage: crate::chat::ChatUsage,
}

impl DraftReport {
    pub fn summary(&self, model: &str) -> String {
        let u = &self.usage;
        let mut out = format!(
            "{} sections sent to {model} ({} answers reused from the cache, {} requests, {} retried; {} prompt + {} completion tokens)\n\
             {} new drafts wait for review; dropped: {} quotes not in their section, {} quotes too short, {} near-duplicates, {} malformed; {} answers unreadable\n",
            self.sections,
            u.reused,
            u.sent,
            u.retries,
            u.prompt_tokens,
            u.completion_tokens,
            self.drafted,
            self.quote_not_found,
            self.quote_too_short,
            self.duplicates,
            self.malformed,
            self.unreadable,
        );
        if self.flagged > 0 {
            out.push_str(&format!(
                "{} drafts repeat their answer's rare words verbatim (flagged: such questions flatter BM25)\n",
                self.flagged
            ));
        }
        if self.restricted_skipped > 0 {
            out.push_str(&format!(
                "sections of {} restricted documents were not sent to the model (--include-restricted sends them)\n",
                self.restricted_skipped
            ));
        }
        if self.already > 0 {
            out.push_str(&format!("{} drafts of earlier runs kept as they were\n", self.already));
        }
        out
    }
}

/// What to draft.
pub struct DraftOptions<'a> {
    pub sections: usize,
    pub per_section: usize,
    pub prompt: &'a str,
    pub include_restricted: bool,
    pub models_dir: &'a Path,
}

/// Reads a drafts file (none: no drafts).
pub fn read(path: &Path) -> Result<Vec<Draft>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text = crate::input::text::read(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let draft: Draft = serde_json::from_str(line)
            .map_err(|e| Error::input(crate::error::Location::line(path, i + 1), format!("not a draft: {e}")))?;
        out.push(draft);
    }
    Ok(out)
}

/// The questions of the golden set, so a draft does not repeat one: every non-empty
/// `question` of a JSONL set (stubs `init` wrote are still being filled), else of the set as
/// read for a run.
pub fn golden_questions(golden: &crate::input::golden::GoldenSource, corpus: &Corpus) -> Result<Vec<String>> {
    let path = &golden.path;
    if !path.exists() {
        return Ok(Vec::new());
    }
    if !(path.is_file() && path.extension().is_some_and(|e| e == "jsonl")) {
        return Ok(crate::input::golden::load(golden, corpus)?.into_iter().map(|c| c.question).collect());
    }
    let mut out = Vec::new();
    for case in golden_lines(path)? {
        let question = case.get("question").or_else(|| case.get("pergunta")).and_then(|q| q.as_str());
        out.extend(question.map(str::trim).filter(|q| !q.is_empty()).map(String::from));
    }
    Ok(out)
}

/// The cases of a JSONL golden set as written (stubs with empty questions included).
fn golden_lines(path: &Path) -> Result<Vec<serde_json::Value>> {
    let text = crate::input::text::read(path)?;
    let lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    lines
        .map(|(n, line)| {
            serde_json::from_str(line)
                .map_err(|e| Error::input(crate::error::Location::line(path, n + 1), format!("not JSON: {e}")))
        })
        .collect()
}

/// Where an experiment's drafts live unless told: drafts.jsonl beside its golden set.
pub fn default_path(golden: &Path) -> std::path::PathBuf {
    let dir = if golden.is_dir() { golden } else { golden.parent().unwrap_or(Path::new(".")) };
    dir.join("drafts.jsonl")
}

/// Drafts waiting for review beside the golden set `golden` (0 when there is no drafts file
/// or it cannot be read).
pub fn pending_beside(golden: &Path) -> usize {
    read(&default_path(golden)).map_or(0, |d| d.iter().filter(|d| d.status == "pending").count())
}

/// Writes `drafts` as JSONL, atomically.
pub fn write(path: &Path, drafts: &[Draft]) -> Result<()> {
    let mut text = String::new();
    for d in drafts {
        text.push_str(&serde_json::to_string(d).expect("a draft serialises"));
        text.push('\n');
    }
    crate::atomic::write_atomic(path, text.as_bytes())
}

/// A section to draft for: its document and section (`None`: the whole document).
struct Target {
    doc: usize,
    section: Option<usize>,
}

/// Drafts questions for `options.sections` sections of `corpus` with `chat`, after the drafts
/// already in `existing` and the golden questions `asked`. Returns every draft (the existing
/// ones first) and the report; nothing is written here.
pub fn draft(
    corpus: &Corpus,
    chat: &ChatModel,
    existing: Vec<Draft>,
    asked: &[String],
    options: &DraftOptions<'_>,
) -> Result<(Vec<Draft>, DraftReport)> {
    for key in ["{text}", "{n}"] {
        if !options.prompt.contains(key) {
            return Err(Error::Chat(format!("the prompt has no {key}: the model would not see what to draft from")));
        }
    }
    let mut report = DraftReport { already: existing.len(), ..DraftReport::default() };
    let by_section = corpus.docs.iter().map(|d| d.sections.len()).sum::<usize>() >= corpus.docs.len();
    let pick = |min_words: usize| -> Vec<Vec<usize>> {
        corpus
            .docs
            .iter()
            .map(|d| {
                if d.acl.is_some() && !options.include_restricted {
                    return Vec::new();
                }
                (0..d.sections.len())
                    .filter(|&i| !d.sections[i].page && crate::init::answerable_section(d, i, min_words))
                    .collect()
            })
            .collect()
    };
    let mut usable = pick(crate::init::MIN_STUB_WORDS);
    if usable.iter().map(Vec::len).sum::<usize>() < options.sections {
        usable = pick(MIN_QUOTE_WORDS * 4);
    }
    let visible = |d: &crate::input::corpus::Document| d.acl.is_none() || options.include_restricted;
    report.restricted_skipped =
        if options.include_restricted { 0 } else { corpus.docs.iter().filter(|d| d.acl.is_some()).count() };
    let targets: Vec<Target> = crate::init::stratified(corpus, &usable, by_section, options.sections)
        .into_iter()
        .filter(|&(d, _)| visible(&corpus.docs[d]))
        .map(|(doc, section)| Target { doc, section })
        .collect();
    report.sections = targets.len();
    let (lang, mixed) = crate::init::language_mix(corpus);
    let rarity = crate::init::TermRarity::of(corpus, crate::init::common_words(options.models_dir, lang, mixed), lang);
    let prompts: Vec<String> = targets.iter().map(|t| prompt_for(corpus, t, options)).collect();
    let answers = chat.complete_all(&prompts, "drafting")?;
    report.usage = chat.usage();
    let mut seen: Vec<HashSet<String>> = existing.iter().map(|d| word_set(&d.question)).collect();
    seen.extend(asked.iter().map(|q| word_set(q)));
    let mut out = existing;
    let mut next = out.len();
    for (target, answer) in targets.iter().zip(answers) {
        let doc = &corpus.docs[target.doc];
        let (label, heading, text) = match target.section {
            Some(j) => (doc.sections[j].id.clone(), doc.sections[j].label.clone(), crate::init::own_text(doc, j)),
            None => (doc.id.clone(), String::new(), doc.text.as_str()),
        };
        let Some(items) = parse_items(&answer) else {
            report.unreadable += 1;
            continue;
        };
        let (as_written, plain) = (normalize(text), normalize(&without_markup(text)));
        for item in items {
            let (Some(question), Some(quote)) = (item.question, item.quote) else {
                report.malformed += 1;
                continue;
            };
            let (question, quote) = (question.trim().to_string(), quote.trim().trim_matches('"').trim().to_string());
            if question.is_empty() || question.chars().count() > 400 || quote.is_empty() {
                report.malformed += 1;
                continue;
            }
            if quote.split_whitespace().count() < MIN_QUOTE_WORDS {
                report.quote_too_short += 1;
                continue;
            }
            let exact = as_written.contains(&normalize(&quote));
            if !exact && !plain.contains(&normalize(&without_markup(&quote))) {
                report.quote_not_found += 1;
                continue;
            }
            let words = word_set(&question);
            if seen.iter().any(|s| overlap(s, &words) >= DUPLICATE_OVERLAP) {
                report.duplicates += 1;
                continue;
            }
            seen.push(words);
            let mut flags = Vec::new();
            if repeats_rare_words(&question, &quote, &rarity) {
                flags.push("repeats_rare_answer_words".to_string());
                report.flagged += 1;
            }
            next += 1;
            report.drafted += 1;
            out.push(Draft {
                id: format!("d{next:04}"),
                question,
                quote,
                relevant: label.clone(),
                evidence_doc: exact.then(|| doc.id.clone()),
                page: crate::init::page_title(doc),
                heading: heading.trim_start_matches('#').trim().to_string(),
                groups: doc.acl.clone(),
                label_hash: corpus.label_hash(&label),
                by: format!("model:{}", chat.spec.id),
                flags,
                status: "pending".into(),
            });
        }
    }
    Ok((out, report))
}

fn prompt_for(corpus: &Corpus, target: &Target, options: &DraftOptions<'_>) -> String {
    let doc = &corpus.docs[target.doc];
    let (heading, text) = match target.section {
        Some(j) => (doc.sections[j].label.trim_start_matches('#').trim().to_string(), crate::init::own_text(doc, j)),
        None => (String::new(), doc.text.as_str()),
    };
    let text: String = text.chars().take(MAX_SECTION_CHARS).collect();
    options
        .prompt
        .replace("{title}", &crate::init::page_title(doc))
        .replace("{heading}", &heading)
        .replace("{n}", &options.per_section.to_string())
        .replace("{text}", &text)
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    question: Option<String>,
    #[serde(default)]
    quote: Option<String>,
}

/// The items of an answer: `{"questions": [...]}` or a bare list, inside a code fence or
/// prose; `None` when no such JSON is there.
fn parse_items(answer: &str) -> Option<Vec<Item>> {
    #[derive(Deserialize)]
    struct Wrapped {
        questions: Vec<Item>,
    }
    if let Some(w) = crate::chat::json_object(answer).and_then(|o| serde_json::from_str::<Wrapped>(o).ok()) {
        return Some(w.questions);
    }
    let list = answer.find('[').zip(answer.rfind(']')).filter(|(a, b)| a < b).map(|(a, b)| &answer[a..=b]);
    list.and_then(|l| serde_json::from_str::<Vec<Item>>(l).ok())
}

/// Markdown's emphasis, code ticks and link syntax set aside (`[text](url)` → `text`): what a
/// reader sees, which is what a model quotes.
fn without_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| after[close..].find(')').map(|end| (close, close + end))) {
            Some((close, end)) if !after[..close].contains('\n') => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.chars().filter(|c| !matches!(c, '*' | '_' | '`')).collect()
}

/// A question's words (normalised, two characters or more).
fn word_set(text: &str) -> HashSet<String> {
    normalize(text).split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 1).map(String::from).collect()
}

fn overlap(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// Whether the question takes two or more of the quote's rare words (not common words of the
/// language, in few documents) as written.
fn repeats_rare_words(question: &str, quote: &str, rarity: &crate::init::TermRarity) -> bool {
    let quoted = word_set(quote);
    let rare: Vec<String> = word_set(question)
        .into_iter()
        .filter(|w| w.chars().count() >= 4 && quoted.contains(w) && !rarity.common(w) && rarity.rare(w))
        .collect();
    rare.len() >= 2
}

/// What a review session did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reviewed {
    pub kept: usize,
    pub edited: usize,
    pub dropped: usize,
    /// Drafts still pending when the session ended.
    pub pending: usize,
}

/// Shows each pending draft of `drafts_path` (question, quote, page) and takes one answer a
/// line: `k` keeps it as a case appended to the golden set `golden` (a JSONL file), `e` edits
/// the question first (the new question on the same line after `e `, or on the next), `d`
/// drops it, `s` skips it for now, `q` (or the end of input) stops. Each answer is saved
/// before the next draft is shown, so a session resumes where the last one stopped.
pub fn review(
    drafts_path: &Path,
    golden: &Path,
    input: &mut dyn std::io::BufRead,
    out: &mut dyn std::io::Write,
) -> Result<Reviewed> {
    let io = |e: std::io::Error| Error::Chat(format!("reviewing: {e}"));
    let mut drafts = read(drafts_path)?;
    let mut ids = golden_ids(golden)?;
    let total = drafts.iter().filter(|d| d.status == "pending").count();
    let mut done = Reviewed::default();
    let mut shown = 0;
    for i in 0..drafts.len() {
        if drafts[i].status != "pending" {
            continue;
        }
        shown += 1;
        let d = &drafts[i];
        // Kept by a session that stopped before it could record so.
        if ids.get(&d.id).is_some_and(|from| from.as_deref() == Some(d.id.as_str())) {
            drafts[i].status = "kept".into();
            write(drafts_path, &drafts)?;
            continue;
        }
        writeln!(out, "\n[{shown} of {total}] draft {} · {}", d.id, d.by).map_err(io)?;
        let heading = if d.heading.is_empty() { String::new() } else { format!(" › {}", d.heading) };
        writeln!(out, "page: {}{heading} ({})", d.page, d.relevant).map_err(io)?;
        writeln!(out, "question: {}", d.question).map_err(io)?;
        writeln!(out, "quote: \u{201c}{}\u{201d}", d.quote).map_err(io)?;
        for flag in &d.flags {
            if flag == "repeats_rare_answer_words" {
                writeln!(out, "note: the question repeats the quote's rare words (it flatters BM25; rephrase as a user would ask)").map_err(io)?;
            }
        }
        write!(out, "k keep · e edit · d drop · s skip · q quit\n> ").map_err(io)?;
        out.flush().map_err(io)?;
        let answer = loop {
            let mut line = String::new();
            if input.read_line(&mut line).map_err(io)? == 0 {
                break None;
            }
            let line = line.trim();
            let (key, rest) = line.split_once(char::is_whitespace).map_or((line, ""), |(k, r)| (k, r.trim()));
            match key {
                "k" | "d" | "s" | "q" => break Some((key.to_string(), String::new())),
                "e" if !rest.is_empty() => break Some(("e".into(), rest.to_string())),
                "e" => {
                    write!(out, "new question: ").map_err(io)?;
                    out.flush().map_err(io)?;
                    let mut edited = String::new();
                    if input.read_line(&mut edited).map_err(io)? == 0 {
                        break None;
                    }
                    match edited.trim() {
                        "" => write!(out, "? an empty question is not kept\n> ").map_err(io)?,
                        q => break Some(("e".into(), q.to_string())),
                    }
                }
                _ => write!(out, "? answer k, e, d, s or q\n> ").map_err(io)?,
            }
        };
        let Some((key, edited)) = answer.filter(|(k, _)| k != "q") else { break };
        match key.as_str() {
            "k" | "e" => {
                let id = free_id(&ids, &d.id);
                let case = kept_case(d, &id, (key == "e").then_some(edited.as_str()));
                append_line(golden, &case.to_string())?;
                ids.insert(id, Some(d.id.clone()));
                if key == "e" {
                    done.edited += 1;
                    drafts[i].status = "edited".into();
                } else {
                    done.kept += 1;
                    drafts[i].status = "kept".into();
                }
            }
            "d" => {
                done.dropped += 1;
                drafts[i].status = "dropped".into();
            }
            _ => continue,
        }
        write(drafts_path, &drafts)?;
    }
    done.pending = drafts.iter().filter(|d| d.status == "pending").count();
    Ok(done)
}

/// The golden case a kept draft becomes: the question (the person's when edited), the
/// section as its label, the quote as an evidence span where it is in the text as written,
/// the page's groups, and where it came from in `meta`.
fn kept_case(d: &Draft, id: &str, edited: Option<&str>) -> serde_json::Value {
    let mut case = serde_json::json!({"id": id, "question": edited.unwrap_or(&d.question), "relevant": [d.relevant]});
    if let Some(doc) = &d.evidence_doc {
        case["evidence"] = serde_json::json!([{"text": d.quote, "doc": doc}]);
    }
    if let Some(groups) = &d.groups {
        case["groups"] = serde_json::json!(groups);
    }
    if let Some(hash) = &d.label_hash {
        case["label_hash"] = hash.as_str().into();
    }
    let mut meta = serde_json::json!({"drafted_by": d.by, "draft_id": d.id, "quote": d.quote});
    if edited.is_some() {
        meta["drafted_question"] = d.question.as_str().into();
    }
    case["meta"] = meta;
    case
}

/// The golden set's case ids, each with the draft it was kept from (`meta.draft_id`).
fn golden_ids(golden: &Path) -> Result<std::collections::HashMap<String, Option<String>>> {
    let is_jsonl = golden.extension().is_some_and(|e| e == "jsonl") && (golden.is_file() || !golden.exists());
    if !is_jsonl {
        return Err(Error::Chat(format!(
            "{}: review appends kept drafts to a JSONL golden set (golden.path = \"….jsonl\")",
            golden.display()
        )));
    }
    let mut ids = std::collections::HashMap::new();
    if !golden.exists() {
        return Ok(ids);
    }
    for case in golden_lines(golden)? {
        let id = case["id"].as_str().unwrap_or_default().to_string();
        ids.insert(id, case["meta"]["draft_id"].as_str().map(String::from));
    }
    Ok(ids)
}

/// `wanted`, or `wanted.2`, `wanted.3`… when the golden set already has a case of that id.
fn free_id(ids: &std::collections::HashMap<String, Option<String>>, wanted: &str) -> String {
    (1..)
        .map(|n| if n == 1 { wanted.to_string() } else { format!("{wanted}.{n}") })
        .find(|id| !ids.contains_key(id))
        .expect("an unused id")
}

/// Appends `line` to `path`, on a line of its own, synced before the draft is marked.
fn append_line(path: &Path, line: &str) -> Result<()> {
    use std::io::Write as _;
    let ends_open = std::fs::File::open(path).ok().is_some_and(|mut f| {
        use std::io::{Read as _, Seek as _};
        let mut last = [b'\n'];
        f.seek(std::io::SeekFrom::End(-1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] != b'\n'
    });
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| Error::io(path, e))?;
    let text = if ends_open { format!("\n{line}\n") } else { format!("{line}\n") };
    file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_fences_prose_and_bare_lists() {
        let fenced = "Sure!\n```json\n{\"questions\": [{\"question\": \"q?\", \"quote\": \"a b c\"}]}\n```";
        assert_eq!(parse_items(fenced).unwrap().len(), 1);
        assert_eq!(parse_items("[{\"question\": \"q?\", \"quote\": \"x\"}]").unwrap().len(), 1);
        assert!(parse_items("{\"questions\": [{\"question\": \"q?\", \"quo").is_none());
    }

    #[test]
    fn markup_is_set_aside_as_a_reader_sees_the_text() {
        assert_eq!(
            without_markup("Use **`ragsweep run`** and [the guide](g.md) [x]."),
            "Use ragsweep run and the guide [x]."
        );
    }

    #[test]
    fn near_duplicate_questions_overlap() {
        let a = word_set("How do I reset my password?");
        let b = word_set("how do I reset my password");
        assert!(overlap(&a, &b) >= DUPLICATE_OVERLAP);
        assert!(overlap(&a, &word_set("Where is the invoice archive kept?")) < DUPLICATE_OVERLAP);
    }
}
