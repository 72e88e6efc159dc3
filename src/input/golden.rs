//! Golden cases (questions with labels saying where the answer is) and their readers.
//!
//! Labels name documents, sections or evidence spans, never chunks (SPEC §1). Every
//! label is checked against the corpus when loaded, so a typo in a golden set is an
//! error with its file and line, not a silently unwinnable question.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::analyze::normalize;
use crate::error::{Error, Location, Result};
use crate::input::corpus::{parse_json_line, Corpus, JsonId};
use crate::input::text;

/// A case's split; a case that names none is a tuning case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    #[default]
    Tuning,
    Reserved,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Tuning => "tuning",
            Split::Reserved => "reserved",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub id: String,
    pub grade: u32,
    /// A judged section: its own text, without its subsections (SPEC §9); a golden label on a
    /// section names the whole of it.
    pub own: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub text: String,
    pub doc: Option<String>,
    /// Where it is in its document, when the golden set says (`start`, `end` in characters):
    /// as byte offsets, checked to hold `text` exactly. Without it, every place the text occurs.
    pub span: Option<(usize, usize)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GoldenCase {
    pub id: String,
    pub question: String,
    pub split: Option<Split>,
    pub answerable: bool,
    /// The asking user's groups; `None` when the case names none (the experiment's
    /// default or synthetic groups then apply; an explicit `[]` is a user in no group).
    pub groups: Option<Vec<String>>,
    pub relevant: Vec<Label>,
    pub evidence: Vec<Evidence>,
    /// The golden set's own slice names.
    pub tags: Vec<String>,
    /// Free data for the golden set's authors, carried to `cases.jsonl`.
    pub meta: Option<serde_json::Value>,
    /// The hash of the first label's text when the case was written (`init`, `sections --json`):
    /// `validate` warns when that text has changed since.
    pub label_hash: Option<String>,
}

impl GoldenCase {
    /// What the case's relevant labels are (unit, grade, own text only; a unit judged not
    /// relevant is none), as 16 hex digits of blake3 over them in order: a run records it beside
    /// each case's result, so a rescore knows whose relevant units changed since.
    pub fn labels_key(&self) -> String {
        let mut labels: Vec<(&str, u32, bool)> =
            self.relevant.iter().filter(|l| l.grade > 0).map(|l| (l.id.as_str(), l.grade, l.own)).collect();
        labels.sort_unstable();
        let mut hasher = blake3::Hasher::new();
        for (id, grade, own) in labels {
            hasher.update(id.as_bytes()).update(&[0]).update(&grade.to_le_bytes()).update(&[u8::from(own)]);
        }
        hasher.finalize().to_hex()[..16].to_string()
    }

    /// Labelled, yet unanswerable: the answer exists, but not for this user (SPEC §1).
    pub fn is_restricted(&self) -> bool {
        !self.answerable && self.has_labels()
    }

    /// The asking user's groups, once the experiment's defaults are applied.
    pub fn user_groups(&self) -> &[String] {
        self.groups.as_deref().unwrap_or(&[])
    }

    pub fn has_labels(&self) -> bool {
        self.relevant.iter().any(|l| l.grade > 0) || !self.evidence.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GoldenFormat {
    Beir,
    Json,
    /// Chroma's chunking evaluation (`questions_df.csv`: question, references, corpus_id).
    Chroma,
}

/// How complete a golden set's labels are (SPEC §9): `pooled` when the items the cells return
/// were judged (a team's own set, grown with `judge`), `sparse` when each question labels one or
/// a few items and the rest were never judged (BEIR and TREC imports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Labels {
    #[default]
    Pooled,
    Sparse,
}

/// How to read a golden set; BEIR folders need to know which qrels files make which split.
#[derive(Debug, Clone, Default)]
pub struct GoldenSource {
    pub path: PathBuf,
    pub format: Option<GoldenFormat>,
    /// BEIR qrels names (`qrels/<name>.tsv`) whose queries are tuning cases.
    pub tuning: Vec<String>,
    /// BEIR qrels names whose queries are reserved cases.
    pub reserved: Vec<String>,
    /// `[golden] labels`, when the experiment says.
    pub labels: Option<Labels>,
}

impl GoldenSource {
    /// The format the set is read in: as declared, else BEIR for a folder, Chroma's for a CSV
    /// file, JSON for any other file.
    pub fn format(&self) -> GoldenFormat {
        match self.format {
            Some(f) => f,
            None if self.path.is_dir() => GoldenFormat::Beir,
            None if self.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) => GoldenFormat::Chroma,
            None => GoldenFormat::Json,
        }
    }

    /// How complete the labels are: as declared, else `sparse` for a BEIR import.
    pub fn labels(&self) -> Labels {
        self.labels.unwrap_or(if self.format() == GoldenFormat::Beir { Labels::Sparse } else { Labels::Pooled })
    }
}

pub fn load(source: &GoldenSource, corpus: &Corpus) -> Result<Vec<GoldenCase>> {
    let format = source.format();
    let cases = match format {
        GoldenFormat::Beir => read_beir(source, corpus)?,
        GoldenFormat::Json => check_cases(read_json(&source.path)?, corpus)?,
        GoldenFormat::Chroma => check_cases(read_chroma(&source.path)?, corpus)?,
    };
    if cases.is_empty() {
        return Err(Error::input(Location::file(&source.path), "the golden set has no cases"));
    }
    Ok(cases)
}

#[derive(Deserialize)]
struct BeirQuery {
    #[serde(rename = "_id", alias = "id")]
    id: JsonId,
    text: String,
}

fn read_beir(source: &GoldenSource, corpus: &Corpus) -> Result<Vec<GoldenCase>> {
    let root = &source.path;
    if source.tuning.is_empty() && source.reserved.is_empty() {
        return Err(Error::input(
            Location::file(root),
            "a BEIR golden set needs `tuning` and/or `reserved` qrels names (e.g. reserved = [\"test\"])",
        ));
    }
    // query id -> (split, labels)
    let mut judged: BTreeMap<String, (Split, Vec<Label>)> = BTreeMap::new();
    let named =
        source.tuning.iter().map(|n| (n, Split::Tuning)).chain(source.reserved.iter().map(|n| (n, Split::Reserved)));
    for (name, split) in named {
        let path = root.join("qrels").join(format!("{name}.tsv"));
        for line in text::lines(&path)? {
            let (line_no, line) = line?;
            let at = || Location::line(&path, line_no);
            let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
            if line.trim().is_empty() || (line_no == 1 && fields.first() == Some(&"query-id")) {
                continue;
            }
            // BEIR: qid doc score; TREC: qid 0 doc score.
            let (qid, doc, grade) = match fields.as_slice() {
                [q, d, g] => (*q, *d, *g),
                [q, _, d, g] => (*q, *d, *g),
                _ => return Err(Error::input(at(), "expected `query-id<TAB>corpus-id<TAB>score`")),
            };
            let grade: i64 =
                grade.parse().map_err(|_| Error::input(at(), format!("score {grade:?} is not an integer")))?;
            crate::input::corpus::check_id(qid).map_err(|e| Error::input(at(), format!("query id: {e}")))?;
            if corpus.target(doc).is_none() {
                return Err(Error::input(at(), format!("unknown document {doc:?}")));
            }
            let entry = judged.entry(qid.to_string()).or_insert((split, Vec::new()));
            if entry.0 != split {
                return Err(Error::input(at(), format!("query {qid:?} is in both tuning and reserved qrels")));
            }
            entry.1.push(Label { id: doc.to_string(), grade: grade.max(0) as u32, own: false });
        }
    }
    let queries_path = root.join("queries.jsonl");
    let mut cases = Vec::with_capacity(judged.len());
    for line in text::lines(&queries_path)? {
        let (line_no, line) = line?;
        if line.trim().is_empty() {
            continue;
        }
        let q: BeirQuery = parse_json_line(&queries_path, line_no, &line)?;
        let id = q.id.into_string();
        if let Some((split, relevant)) = judged.remove(&id) {
            let answerable = relevant.iter().any(|l| l.grade > 0);
            cases.push(GoldenCase {
                id,
                question: crate::input::text::without_nul(q.text),
                split: Some(split),
                answerable,
                groups: None,
                relevant,
                evidence: Vec::new(),
                tags: Vec::new(),
                meta: None,
                label_hash: None,
            });
        }
    }
    if let Some(missing) = judged.keys().next() {
        return Err(Error::input(
            Location::file(&queries_path),
            format!("qrels name query {missing:?}, which is not in queries.jsonl"),
        ));
    }
    Ok(cases)
}

/// One item or a list of them, as JSON.
fn items(value: Option<Value>) -> Vec<Value> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(one) => vec![one],
    }
}

/// A label: `"DOC"`, `"DOC#section"` or `{"id": …, "grade": n}` with n a non-negative integer.
fn label(value: Value) -> Result<Label, String> {
    match value {
        Value::String(id) => Ok(Label { id, grade: 1, own: false }),
        Value::Object(mut map) => {
            let id = match map.remove("id") {
                Some(Value::String(id)) => id,
                _ => return Err("a graded label needs a string `id`".into()),
            };
            let grade = match map.remove("grade") {
                None => 1,
                Some(g) => g
                    .as_u64()
                    .and_then(|g| u32::try_from(g).ok())
                    .ok_or_else(|| format!("the grade of {id:?} must be a non-negative integer, found {g}"))?,
            };
            if let Some(key) = map.keys().next() {
                return Err(format!("label {id:?} has unknown field `{key}` (a label has `id` and `grade`)"));
            }
            Ok(Label { id, grade, own: false })
        }
        other => Err(format!("a label is a document or section id, or {{\"id\", \"grade\"}}; found {other}")),
    }
}

/// An evidence span: its text, or `{"text": …, "doc": …}`, with `start` and `end` (characters)
/// where its document holds it.
fn evidence(value: Value, default_doc: &Option<String>) -> Result<Evidence, String> {
    match value {
        Value::String(text) => Ok(Evidence { text, doc: default_doc.clone(), span: None }),
        Value::Object(mut map) => {
            let text = match map.remove("text").or_else(|| map.remove("trecho")) {
                Some(Value::String(t)) => t,
                _ => return Err("an evidence span needs a string `text`".into()),
            };
            let doc = match map.remove("doc").or_else(|| map.remove("documento")) {
                None | Some(Value::Null) => default_doc.clone(),
                Some(Value::String(d)) => Some(d),
                Some(other) => return Err(format!("an evidence span's `doc` must be a string, found {other}")),
            };
            let offset = |map: &mut serde_json::Map<String, Value>, key: &str| match map.remove(key) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(|n| Some(n as usize))
                    .ok_or_else(|| format!("an evidence span's `{key}` must be a character offset, found {v}")),
            };
            let span = match (offset(&mut map, "start")?, offset(&mut map, "end")?) {
                (None, None) => None,
                (Some(s), Some(e)) if s < e && doc.is_some() => Some((s, e)),
                (Some(_), Some(_)) if doc.is_some() => {
                    return Err("an evidence span's `start` must be before its `end`".into())
                }
                (Some(_), Some(_)) => return Err("an evidence span placed by `start` and `end` needs its `doc`".into()),
                _ => return Err("an evidence span takes both `start` and `end`, or neither".into()),
            };
            if let Some(key) = map.keys().next() {
                return Err(format!("evidence has unknown field `{key}` (it has `text`, `doc`, `start` and `end`)"));
            }
            Ok(Evidence { text, doc, span })
        }
        other => Err(format!("evidence is a text, or {{\"text\", \"doc\"}}; found {other}")),
    }
}

/// A key that is present, `null` included (`Some(None)`), as opposed to left out (`None`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> std::result::Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    #[serde(default, alias = "_id")]
    id: Option<JsonId>,
    #[serde(alias = "pergunta")]
    question: String,
    #[serde(default)]
    split: Option<Split>,
    #[serde(default, alias = "respondivel")]
    answerable: Option<bool>,
    /// Left out: the default groups; `null` is refused (as `acl: null` on a document).
    #[serde(default, alias = "grupos", deserialize_with = "present")]
    groups: Option<Option<Vec<String>>>,
    #[serde(default, alias = "relevantes")]
    relevant: Option<Value>,
    #[serde(default, alias = "trecho", alias = "trechos")]
    evidence: Option<Value>,
    /// Default document for evidence spans that do not name one.
    #[serde(default, alias = "documento")]
    doc: Option<String>,
    /// Free text for the golden set's authors; read so it is accepted, never used.
    #[serde(default, rename = "notes", alias = "notas")]
    _notes: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    meta: Option<serde_json::Value>,
    #[serde(default)]
    label_hash: Option<String>,
}

/// Adds to serde's "unknown field" message where extra fields belong.
fn hint_meta(message: String) -> String {
    if message.contains("unknown field") {
        format!("{message}; put fields of your own under `meta`")
    } else {
        message
    }
}

/// Reads a JSON array (or JSONL) of cases, each with where it was written.
fn read_json(path: &Path) -> Result<Vec<(Location, RawCase)>> {
    let text = text::read(path)?;
    let mut located: Vec<(Location, RawCase)> = Vec::new();
    if text.trim_start().starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(&text).map_err(|e| {
            Error::input(
                Location { path: path.to_path_buf(), line: e.line(), column: e.column() },
                format!("invalid JSON: {e}"),
            )
        })?;
        for raw in items {
            let offset = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            let at = Location::at_offset(path, &text, offset);
            let case = serde_json::from_str(raw.get())
                .map_err(|e| Error::input(at.clone(), hint_meta(format!("invalid case: {e}"))))?;
            located.push((at, case));
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            if !line.trim().is_empty() {
                let case = parse_json_line(path, i + 1, line).map_err(|e| match e {
                    Error::Input { at, message } => Error::Input { at, message: hint_meta(message) },
                    other => other,
                })?;
                located.push((Location::line(path, i + 1), case));
            }
        }
    }
    Ok(located)
}

/// Reads Chroma's chunking-evaluation questions (`question`, `references`: a JSON list of
/// `content`, `start_index`, `end_index` in characters, `corpus_id`: the document): one case
/// per row, `q<row>` as Chroma numbers them, each excerpt an evidence span placed where it says.
fn read_chroma(path: &Path) -> Result<Vec<(Location, RawCase)>> {
    #[derive(Deserialize)]
    struct Row {
        question: String,
        references: String,
        corpus_id: String,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Reference {
        content: String,
        start_index: u64,
        end_index: u64,
    }
    let text = text::read(path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut located = Vec::new();
    for (i, row) in reader.deserialize::<Row>().enumerate() {
        let line = |e: &csv::Error| e.position().map_or(i + 2, |p| p.line() as usize);
        let row = row.map_err(|e| Error::input(Location::line(path, line(&e)), format!("invalid row: {e}")))?;
        let at = Location::line(path, i + 2);
        let references: Vec<Reference> = serde_json::from_str(&row.references)
            .map_err(|e| Error::input(at.clone(), format!("`references` is not a list of excerpts: {e}")))?;
        let evidence = references
            .into_iter()
            .map(|r| serde_json::json!({"text": r.content, "doc": row.corpus_id, "start": r.start_index, "end": r.end_index}))
            .collect();
        let case = RawCase {
            id: Some(JsonId::Str(format!("q{i}"))),
            question: row.question,
            split: None,
            answerable: None,
            groups: None,
            relevant: None,
            evidence: Some(Value::Array(evidence)),
            doc: None,
            _notes: None,
            tags: Vec::new(),
            meta: None,
            label_hash: None,
        };
        located.push((at, case));
    }
    Ok(located)
}

/// The cases as read, every label checked against the corpus; every bad case listed.
fn check_cases(located: Vec<(Location, RawCase)>, corpus: &Corpus) -> Result<Vec<GoldenCase>> {
    let mut chars: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut normalized_docs: Option<Vec<String>> = None;
    let mut seen: HashMap<String, Location> = HashMap::new();
    let mut cases = Vec::with_capacity(located.len());
    // Cases without a question (e.g. stubs from `ragsweep init`), all reported at once.
    let mut empty: Vec<(Location, String)> = Vec::new();
    // Every bad case is listed, not only the first (up to ERRORS_LISTED).
    let mut errors: Vec<Error> = Vec::new();
    for (at, raw) in located {
        let check = || -> Result<()> {
            let bad = |msg: String| Error::input(at.clone(), msg);
            let id = match raw.id {
                Some(id) => id.into_string(),
                // Stable across file order: derived from the question itself.
                None => format!("q-{}", &blake3::hash(raw.question.trim().as_bytes()).to_hex()[..10]),
            };
            if let Some(first) = seen.insert(id.clone(), at.clone()) {
                return Err(bad(format!("duplicate case id {id:?} (first at {first})")));
            }
            if raw.question.trim().is_empty() {
                empty.push((at.clone(), id));
                return Ok(());
            }
            let relevant_given = raw.relevant.is_some();
            let relevant: Vec<Label> = items(raw.relevant)
                .into_iter()
                .map(label)
                .collect::<Result<_, String>>()
                .map_err(|e| bad(format!("case {id:?}: {e}")))?;
            for label in &relevant {
                let doc = label.id.split('#').next().unwrap_or(&label.id);
                if let Some((_, why)) = corpus.report.left_out.iter().find(|(left, _)| left == doc) {
                    return Err(bad(format!("case {id:?} names {:?}, a page the corpus left out: {why}", label.id)));
                }
                if corpus.target(&label.id).is_none() {
                    let close = corpus.did_you_mean(&label.id);
                    let hint = if close.is_empty() {
                        " (`ragsweep sections` lists the ids)".to_string()
                    } else {
                        format!(
                            "; did you mean {}? (`ragsweep sections` lists them all)",
                            close.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join(", ")
                        )
                    };
                    return Err(bad(format!("case {id:?} names unknown document or section {:?}{hint}", label.id)));
                }
            }
            let evidence: Vec<Evidence> = items(raw.evidence)
                .into_iter()
                .map(|e| evidence(e, &raw.doc))
                .collect::<Result<_, String>>()
                .map_err(|e| bad(format!("case {id:?}: {e}")))?;
            let mut evidence = evidence;
            for ev in &mut evidence {
                let needle = normalize(&ev.text);
                if needle.is_empty() {
                    return Err(bad(format!("case {id:?} has an empty evidence span")));
                }
                if let (Some((start, end)), Some(doc)) = (ev.span, &ev.doc) {
                    let d = corpus
                        .doc_index(doc)
                        .ok_or_else(|| bad(format!("case {id:?} names unknown document {doc:?}")))?;
                    let text = &corpus.docs[d].text;
                    // Byte offset of every character, and the end.
                    let offsets = chars.entry(d).or_insert_with(|| crate::input::text::char_offsets(text));
                    let held = (end < offsets.len()).then(|| &text[offsets[start]..offsets[end]]);
                    if held != Some(ev.text.as_str()) {
                        let held = held
                            .map_or(format!("ends after the document's {} characters", offsets.len() - 1), |h| {
                                format!("holds {:?}", h.chars().take(80).collect::<String>())
                            });
                        return Err(bad(format!(
                            "case {id:?}: characters {start}..{end} of document {doc:?} do not hold the evidence text: that place {held}"
                        )));
                    }
                    ev.span = Some((offsets[start], offsets[end]));
                    continue;
                }
                let found = match &ev.doc {
                    Some(doc) => {
                        let d = corpus
                            .doc_index(doc)
                            .ok_or_else(|| bad(format!("case {id:?} names unknown document {doc:?}")))?;
                        normalize(&corpus.docs[d].text).contains(&needle)
                    }
                    None => normalized_docs
                        .get_or_insert_with(|| corpus.docs.iter().map(|d| normalize(&d.text)).collect())
                        .iter()
                        .any(|t| t.contains(&needle)),
                };
                if !found {
                    return Err(bad(format!(
                        "case {id:?}: evidence {:?} does not occur in {}",
                        ev.text,
                        ev.doc.as_deref().map_or("the corpus".to_string(), |d| format!("document {d:?}"))
                    )));
                }
            }
            let has_labels = relevant.iter().any(|l| l.grade > 0) || !evidence.is_empty();
            if !has_labels && relevant_given && raw.answerable != Some(false) {
                return Err(bad(format!(
                    "case {id:?} names no relevant document: say `\"answerable\": false` if no answer exists, \
                     or label where the answer is"
                )));
            }
            if !has_labels && raw.answerable == Some(true) {
                return Err(bad(format!("case {id:?} is answerable but names no relevant document or evidence")));
            }
            let answerable = raw.answerable.unwrap_or(has_labels);
            if let Some(meta) = raw.meta.as_ref().filter(|m| !m.is_object()) {
                return Err(bad(format!("case {id:?}: `meta` must be a JSON object, found {meta}")));
            }
            let groups = match raw.groups {
                None => None,
                Some(None) => {
                    return Err(bad(format!(
                        "case {id:?}: `groups` is null: list the user's groups, `[]` for a user in no group, or leave the key out for the experiment's default groups"
                    )))
                }
                Some(Some(groups)) => Some(
                    groups
                        .iter()
                        .map(|g| {
                            crate::input::access_key::check_group(g)
                                .map_err(|e| bad(format!("case {id:?}: `groups`: {e}")))
                        })
                        .collect::<Result<Vec<String>>>()?,
                ),
            };
            cases.push(GoldenCase {
                id,
                question: crate::input::text::without_nul(raw.question),
                split: raw.split,
                answerable,
                groups,
                relevant,
                evidence,
                tags: raw.tags,
                meta: raw.meta,
                label_hash: raw.label_hash,
            });
            Ok(())
        };
        if let Err(e) = check() {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        return Err(Error::many(errors, crate::input::corpus::ERRORS_LISTED));
    }
    if let Some((at, first)) = empty.first() {
        let more = if empty.len() > 1 {
            let rest: Vec<&str> = empty[1..].iter().map(|(_, id)| id.as_str()).collect();
            format!(", and {} more: {}", rest.len(), rest.join(", "))
        } else {
            String::new()
        };
        return Err(Error::input(
            at.clone(),
            format!(
                "case {first:?} has an empty question{more} (write each question the way your users would type it)"
            ),
        ));
    }
    Ok(cases)
}

/// Takes out of `cases` the unedited drafts: a case whose `meta.draft` is true and whose
/// question is still one of the `meta.drafts` that `init` proposed from the labelled text. A
/// question copied from the text is not a question a user asked (SPEC §9): it is not counted
/// until a person edits it or accepts it (`"draft": false`). Returns their ids.
pub fn take_unedited_drafts(cases: &mut Vec<GoldenCase>) -> Vec<String> {
    let unedited = |c: &GoldenCase| {
        let Some(meta) = &c.meta else { return false };
        meta.get("draft").and_then(serde_json::Value::as_bool) == Some(true)
            && meta.get("drafts").and_then(serde_json::Value::as_array).is_some_and(|drafts| {
                drafts.iter().filter_map(serde_json::Value::as_str).any(|d| d.trim() == c.question.trim())
            })
    };
    let ids = cases.iter().filter(|c| unedited(c)).map(|c| c.id.clone()).collect();
    cases.retain(|c| !unedited(c));
    ids
}

/// Gives every case without a split one, by a stable hash of its id and the seed (SPEC §6).
pub fn assign_splits(cases: &mut [GoldenCase], seed: u64, reserved_fraction: f64) {
    for case in cases.iter_mut().filter(|c| c.split.is_none()) {
        let mut h = blake3::Hasher::new();
        h.update(&seed.to_le_bytes());
        h.update(case.id.as_bytes());
        let bytes: [u8; 8] = h.finalize().as_bytes()[..8].try_into().unwrap();
        let u = (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64;
        case.split = Some(if u < reserved_fraction { Split::Reserved } else { Split::Tuning });
    }
}

/// The hash of a golden set's content as a run sees it: ids, questions, labels.
pub fn golden_hash(cases: &[GoldenCase]) -> String {
    let mut h = blake3::Hasher::new();
    for c in cases {
        h.update(c.id.as_bytes());
        h.update(b"\0");
        h.update(c.question.as_bytes());
        h.update(b"\0");
        for l in &c.relevant {
            h.update(l.id.as_bytes());
            h.update(&l.grade.to_le_bytes());
        }
        for e in &c.evidence {
            h.update(e.text.as_bytes());
            h.update(b"\0");
            if let Some((start, end)) = e.span {
                h.update(format!("{start}-{end}\0").as_bytes());
            }
        }
    }
    h.finalize().to_hex()[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::corpus::Document;

    fn corpus() -> Corpus {
        let text = "## Art. 1\nO prazo é de 30 dias.\n## Art. 2\nMulta de 2%.\n".to_string();
        let doc = Document {
            id: "lei".into(),
            title: None,
            sections: crate::input::corpus::markdown_sections("lei", &text),
            text,
            meta: Default::default(),
            acl: None,
        };
        Corpus::from_docs(vec![doc], "mem".into()).unwrap()
    }

    fn load_str(json: &str) -> Result<Vec<GoldenCase>> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.json");
        std::fs::write(&p, json).unwrap();
        check_cases(read_json(&p)?, &corpus())
    }

    #[test]
    fn short_form_and_aliases() {
        let cases = load_str(
            r#"[{"pergunta": "qual o prazo?", "trecho": "prazo é de  30 DIAS"},
            {"id": "u1", "question": "quem é o CEO?", "answerable": false}]"#,
        )
        .unwrap();
        assert_eq!(cases[0].evidence[0].text, "prazo é de  30 DIAS");
        assert!(cases[0].answerable);
        assert!(cases[0].id.starts_with("q-"));
        assert!(!cases[1].answerable);
    }

    #[test]
    fn unknown_label_is_located() {
        let err = load_str("[\n {\"id\": \"a\", \"question\": \"x\", \"relevant\": [\"lei#Art. 1\"]},\n {\"id\": \"b\", \"question\": \"y\", \"relevant\": [\"lei#Art. 9\"]}\n]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("g.json:3:2"), "{err}");
        assert!(err.contains("lei#Art. 9"), "{err}");
    }

    #[test]
    fn evidence_missing_from_its_document_is_an_error() {
        let err = load_str(r#"[{"question": "x", "evidence": {"text": "multa de 3%", "doc": "lei"}}]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not occur"), "{err}");
    }

    #[test]
    fn graded_labels() {
        let c = load_str(r#"[{"question": "x", "relevant": [{"id": "lei", "grade": 2}, "lei#Art. 2"]}]"#).unwrap();
        assert_eq!(
            c[0].relevant,
            vec![
                Label { id: "lei".into(), grade: 2, own: false },
                Label { id: "lei#Art. 2".into(), grade: 1, own: false }
            ]
        );
    }

    #[test]
    fn split_assignment_is_stable_and_order_free() {
        let mk = |id: &str| GoldenCase {
            id: id.into(),
            question: String::new(),
            split: None,
            answerable: true,
            groups: None,
            relevant: vec![],
            evidence: vec![],
            tags: vec![],
            meta: None,
            label_hash: None,
        };
        let mut a: Vec<_> = (0..400).map(|i| mk(&format!("c{i}"))).collect();
        let mut b: Vec<_> = a.iter().rev().cloned().collect();
        assign_splits(&mut a, 7, 0.25);
        assign_splits(&mut b, 7, 0.25);
        b.reverse();
        assert_eq!(a, b);
        let reserved = a.iter().filter(|c| c.split == Some(Split::Reserved)).count();
        assert!((70..130).contains(&reserved), "{reserved}");
        let mut fixed = vec![GoldenCase { split: Some(Split::Tuning), ..mk("x") }];
        assign_splits(&mut fixed, 7, 1.0);
        assert_eq!(fixed[0].split, Some(Split::Tuning));
    }
}
