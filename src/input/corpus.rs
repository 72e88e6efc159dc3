//! Documents and their labelled sections, and the readers that load them (SPEC §1).
//!
//! Readers stream their input and report bad lines with file and line. A corpus is
//! identified by a content hash, so every later stage can be keyed by it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Location, Result};
use crate::input::access_key::{AccessKey, Field};
use crate::input::formats::{self, Extracted, Format};
use crate::input::frontmatter::FrontMatter;
use crate::input::includes::Missed;
use crate::input::{frontmatter, text};

#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub id: String,
    pub title: Option<String>,
    pub text: String,
    pub meta: BTreeMap<String, String>,
    /// `None`: visible to everyone. `Some(groups)`: visible to members of any group.
    pub acl: Option<Vec<String>>,
    pub sections: Vec<Section>,
}

impl Document {
    /// Section `section`'s own span: from its start to its first subsection's (its whole span
    /// when it has none, and for a page).
    pub fn own_span(&self, section: usize) -> (usize, usize) {
        let s = &self.sections[section];
        let first_child = self
            .sections
            .iter()
            .filter(|o| !s.page && !o.page && o.level > s.level && o.start > s.start && o.start < s.end)
            .map(|o| o.start)
            .min();
        (s.start, first_child.unwrap_or(s.end))
    }
}

/// A labelled span `[start, end)` of a document's text, from a Markdown heading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// `DOC#label`.
    pub id: String,
    pub label: String,
    pub level: u8,
    pub start: usize,
    pub end: usize,
    /// A PDF page (`DOC#p3`) rather than a heading's section: pages are labels, not structure
    /// a chunker splits on.
    pub page: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CorpusFormat {
    Beir,
    Jsonl,
    Folder,
}

/// What a reader read, per format, and what it skipped and why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadReport {
    pub read: BTreeMap<Format, usize>,
    pub skipped: Vec<(PathBuf, String)>,
    /// PDFs whose running heads and footers were dropped, with how many lines.
    pub dropped_lines: Vec<(PathBuf, usize)>,
    /// Files left out by `[corpus] exclude`.
    pub excluded: Vec<PathBuf>,
    /// Pages with includes: how many were read in place, and the targets that could not be,
    /// each with why (and the closest file when it was not found).
    pub includes: Vec<(PathBuf, usize, Vec<String>)>,
    /// Files whose front matter was not YAML this reader parses and declared nothing about
    /// access: read for their plain keys, with why.
    pub lenient: Vec<(PathBuf, String)>,
    /// Files that only restricted pages include and that declare no access list themselves:
    /// public under their own id (with the pages that include them).
    pub public_fragments: Vec<(PathBuf, Vec<PathBuf>)>,
    /// Pages the site does not publish (drafts, headless or unrendered pages, partials), left
    /// out of the corpus, each with why.
    pub unpublished: Vec<(PathBuf, String)>,
    /// The ids of documents left out on purpose (unpublished, excluded) with why and what
    /// keeps them: a label naming one is told so, not that the id is unknown.
    pub left_out: Vec<(String, String)>,
    /// Pages the site does not publish on their own, kept by `[corpus] publish_also`.
    pub published_also: usize,
}

impl ReadReport {
    /// `read 12 .md, 3 .pdf, 49 .rst; skipped 2: a.png (.png: not a known format), …`.
    pub fn summary(&self) -> String {
        let mut out = self.read_counts();
        let with_why = |(p, why): &(PathBuf, String)| format!("{} ({why})", file_name(p));
        if !self.skipped.is_empty() {
            out.push_str(&format!("; skipped {}: {}", self.skipped.len(), listed(self.skipped.iter().map(with_why))));
        }
        if !self.unpublished.is_empty() {
            out.push_str(&format!(
                "; left out {} the site does not publish ([corpus] publish_also or publish = \"all\" keeps them): {}",
                self.unpublished.len(),
                listed(self.unpublished.iter().map(with_why))
            ));
        }
        if !self.excluded.is_empty() {
            let names = self.excluded.iter().map(|p| file_name(p));
            out.push_str(&format!("; excluded {} by [corpus] exclude: {}", self.excluded.len(), listed(names)));
        }
        if self.published_also > 0 {
            out.push_str(&format!("; kept {} unpublished by [corpus] publish_also", self.published_also));
        }
        if !self.lenient.is_empty() {
            let files = listed(self.lenient.iter().map(with_why));
            out.push_str(&format!("; front matter read line by line (not YAML, no access key in it): {files}"));
        }
        if !self.includes.is_empty() {
            let read: usize = self.includes.iter().map(|i| i.1).sum();
            let missing: Vec<String> = self
                .includes
                .iter()
                .flat_map(|(p, _, targets)| targets.iter().map(move |t| format!("{} → {t}", file_name(p))))
                .collect();
            out.push_str(&format!("; read {} in place", crate::words::count(read, "include")));
            if !missing.is_empty() {
                out.push_str(&format!(", {} not: {}", missing.len(), listed(missing.into_iter())));
            }
        }
        if !self.public_fragments.is_empty() {
            let files = self.public_fragments_listed();
            out.push_str(&format!(
                "; WARNING: only restricted pages include these, yet they declare no access list and are public under their own id (give them the pages' access list, or exclude them): {files}"
            ));
        }
        if !self.dropped_lines.is_empty() {
            let total: usize = self.dropped_lines.iter().map(|d| d.1).sum();
            let files = listed(self.dropped_lines.iter().map(|(p, n)| format!("{} {n}", file_name(p))));
            out.push_str(&format!(
                "; dropped {total} running head and footer lines (repeated at one height on most pages): {files}"
            ));
        }
        out
    }
}

impl ReadReport {
    /// Every file the summary counts or shortens, one line each with its path and why
    /// (`validate --verbose`).
    pub fn full_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut each = |what: &str, items: &mut dyn Iterator<Item = String>| {
            out.extend(items.map(|item| format!("{what}: {item}")));
        };
        let why = |(p, why): &(PathBuf, String)| format!("{} ({why})", p.display());
        each("skipped", &mut self.skipped.iter().map(why));
        each("left out (not published)", &mut self.unpublished.iter().map(why));
        each("excluded", &mut self.excluded.iter().map(|p| p.display().to_string()));
        each("front matter read line by line", &mut self.lenient.iter().map(why));
        each(
            "include not read",
            &mut self
                .includes
                .iter()
                .flat_map(|(p, _, targets)| targets.iter().map(move |t| format!("{} → {t}", p.display()))),
        );
        each(
            "public fragment",
            &mut self.public_fragments.iter().map(|(f, pages)| {
                let by: Vec<String> = pages.iter().map(|p| p.display().to_string()).collect();
                format!("{} (included by {})", f.display(), by.join(", "))
            }),
        );
        each(
            "running heads and footers dropped",
            &mut self.dropped_lines.iter().map(|(p, n)| format!("{} ({n} lines)", p.display())),
        );
        out
    }

    /// The public fragments only restricted pages include, each with the pages that do.
    fn public_fragments_listed(&self) -> String {
        listed(self.public_fragments.iter().map(|(f, pages)| {
            let by: Vec<String> = pages.iter().map(|p| file_name(p)).collect();
            format!("{} (included by {})", file_name(f), by.join(", "))
        }))
    }

    /// `read 12 .md, 3 .pdf` (or `read nothing`).
    fn read_counts(&self) -> String {
        let read: Vec<String> = self.read.iter().map(|(f, n)| format!("{n} {}", f.name())).collect();
        format!("read {}", if read.is_empty() { "nothing".into() } else { read.join(", ") })
    }

    /// [`ReadReport::summary`] in counts, for the one line a run prints before its decision:
    /// `read 722 .md, 4 .pdf; skipped 3; left out 156 unpublished; …`.
    pub fn headline(&self) -> String {
        let mut out = self.read_counts();
        let mut part = |n: usize, what: String| {
            if n > 0 {
                out.push_str(&format!("; {what}"));
            }
        };
        part(self.skipped.len(), format!("skipped {}", self.skipped.len()));
        part(self.unpublished.len(), format!("left out {} unpublished", self.unpublished.len()));
        part(self.published_also, format!("kept {} unpublished by publish_also", self.published_also));
        part(self.excluded.len(), format!("excluded {}", self.excluded.len()));
        part(self.lenient.len(), format!("{} front matters read line by line", self.lenient.len()));
        let (read, missing) = self.includes.iter().fold((0, 0), |(r, m), (_, n, targets)| (r + n, m + targets.len()));
        part(read + missing, format!("{} read in place, {missing} not", crate::words::count(read, "include")));
        // A warning about access is never shortened to a count.
        let public = self.public_fragments_listed();
        part(self.public_fragments.len(), format!("WARNING: public fragments only restricted pages include: {public}"));
        part(self.dropped_lines.len(), format!("running heads dropped in {} PDFs", self.dropped_lines.len()));
        if out.contains(';') {
            out.push_str(" (each named by `ragsweep validate` and in manifest.json)");
        }
        out
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The first ten of `items`, comma-separated, then `and N more`.
fn listed(items: impl Iterator<Item = String>) -> String {
    crate::words::first_of(&items.collect::<Vec<_>>(), 10)
}

#[derive(Debug)]
pub struct Corpus {
    pub docs: Vec<Document>,
    /// What was read per format and what was skipped (folders; empty for JSONL corpora).
    pub report: ReadReport,
    pub source: PathBuf,
    /// blake3 over every document's content, in order.
    pub hash: String,
    by_id: HashMap<String, usize>,
    sections: HashMap<String, (usize, usize)>,
    /// Metadata keys whose value is indexed with a document's title (the first one a document
    /// has): `[corpus] index_meta`, by default [`INDEX_META`].
    pub index_meta: Vec<String>,
}

/// The front-matter keys that summarise a page on documentation sites (Hugo, Jekyll, MkDocs,
/// Docusaurus): indexed with the title unless `[corpus] index_meta` says otherwise.
pub const INDEX_META: [&str; 2] = ["description", "summary"];

/// What a label names: a whole document, or one of its sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Doc(usize),
    Section { doc: usize, section: usize },
}

impl Corpus {
    pub fn from_docs(mut docs: Vec<Document>, source: PathBuf) -> Result<Self> {
        // PostgreSQL's text refuses U+0000: it is a space for every engine and the in-process
        // index alike, so their numbers stay comparable (offsets do not move).
        for doc in &mut docs {
            doc.text = text::without_nul(std::mem::take(&mut doc.text));
            doc.title = doc.title.take().map(text::without_nul);
        }
        let mut by_id = HashMap::with_capacity(docs.len());
        let mut sections = HashMap::new();
        let mut hasher = blake3::Hasher::new();
        for (i, doc) in docs.iter().enumerate() {
            if by_id.insert(doc.id.clone(), i).is_some() {
                return Err(Error::input(Location::file(&source), format!("duplicate document id {:?}", doc.id)));
            }
            for (j, s) in doc.sections.iter().enumerate() {
                let (first, _) = *sections.entry(s.id.clone()).or_insert((i, j));
                if first != i {
                    return Err(ambiguous(&source, &s.id, &docs[first].id, &doc.id));
                }
            }
            hash_doc(&mut hasher, doc);
        }
        // `faq#Precos.md` beside `faq.md` with `## Precos`: a label `faq#Precos` must not
        // silently mean one of them.
        for (id, &(doc, _)) in &sections {
            if let Some(&other) = by_id.get(id) {
                return Err(ambiguous(&source, id, &docs[doc].id, &docs[other].id));
            }
        }
        Ok(Corpus {
            docs,
            report: ReadReport::default(),
            source,
            hash: hasher.finalize().to_hex()[..16].to_string(),
            by_id,
            sections,
            index_meta: INDEX_META.iter().map(|k| k.to_string()).collect(),
        })
    }

    /// Loads a corpus, detecting its format when `format` is `None`:
    /// a folder holding `corpus.jsonl` is BEIR, a file is JSONL, any other folder is
    /// a folder of `.md`/`.txt` documents.
    pub fn load(path: &Path, format: Option<CorpusFormat>, rules: &AccessKey) -> Result<Self> {
        Corpus::load_with(path, format, rules, &FolderRules::default())
    }

    /// [`Corpus::load`] reading a folder by `folder`'s rules: the files it leaves out on
    /// purpose (each listed as excluded) and the size a document may have.
    pub fn load_with(
        path: &Path,
        format: Option<CorpusFormat>,
        rules: &AccessKey,
        folder: &FolderRules,
    ) -> Result<Self> {
        let format = match format {
            Some(f) => f,
            None => detect_format(path)?,
        };
        let (docs, report) = match format {
            CorpusFormat::Beir => (read_jsonl(&path.join("corpus.jsonl"), rules)?, ReadReport::default()),
            CorpusFormat::Jsonl => (read_jsonl(path, rules)?, ReadReport::default()),
            CorpusFormat::Folder => read_folder(path, rules, folder)?,
        };
        let mut corpus = Corpus::from_docs(docs, path.to_path_buf())?;
        corpus.report = report;
        Ok(corpus)
    }

    /// The metadata value indexed with `doc`'s title (`index_meta`), if it has one.
    pub fn summary<'d>(&self, doc: &'d Document) -> Option<&'d str> {
        self.index_meta.iter().find_map(|k| doc.meta.get(k)).map(|s| s.trim()).filter(|s| !s.is_empty())
    }

    /// blake3 over every document's sections (span, level, label, page or heading) and the
    /// summary indexed with its title: what chunk sets are made from that the content hash
    /// does not cover.
    pub fn structure_hash(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        for doc in &self.docs {
            let summary = self.summary(doc).unwrap_or("");
            hasher.update(&(summary.len() as u64).to_le_bytes());
            hasher.update(summary.as_bytes());
            hasher.update(&(doc.sections.len() as u64).to_le_bytes());
            for s in &doc.sections {
                for n in [s.start as u64, s.end as u64, u64::from(s.level), u64::from(s.page), s.label.len() as u64] {
                    hasher.update(&n.to_le_bytes());
                }
                hasher.update(s.label.as_bytes());
            }
        }
        hasher.finalize().to_hex()[..16].to_string()
    }

    pub fn doc_index(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// The text a label names: a whole document or one of its sections.
    /// The text a person judges for unit `id`: a document's text, a section's own text (up to
    /// its first subsection: each subsection is a unit of its own, SPEC §9).
    pub fn unit_text(&self, id: &str) -> Option<&str> {
        Some(match self.target(id)? {
            Target::Doc(d) => &self.docs[d].text,
            Target::Section { doc, section } => {
                let (start, end) = self.docs[doc].own_span(section);
                &self.docs[doc].text[start..end]
            }
        })
    }

    pub fn label_text(&self, id: &str) -> Option<&str> {
        Some(match self.target(id)? {
            Target::Doc(d) => &self.docs[d].text,
            Target::Section { doc, section } => {
                let s = &self.docs[doc].sections[section];
                &self.docs[doc].text[s.start..s.end]
            }
        })
    }

    /// A short hash of a label's text (normalised), recorded in golden cases so `validate` can
    /// tell when the text a label points at has changed.
    pub fn label_hash(&self, id: &str) -> Option<String> {
        let text = crate::analyze::normalize(self.label_text(id)?);
        Some(blake3::hash(text.as_bytes()).to_hex()[..12].to_string())
    }

    /// Every id a label may name: each document, then its sections.
    pub fn label_ids(&self) -> impl Iterator<Item = &str> {
        self.docs.iter().flat_map(|d| std::iter::once(d.id.as_str()).chain(d.sections.iter().map(|s| s.id.as_str())))
    }

    /// The ids closest to an unknown label: by edit distance, and by words shared with it.
    pub fn did_you_mean(&self, unknown: &str) -> Vec<String> {
        let words = |s: &str| -> std::collections::HashSet<String> {
            crate::analyze::normalize(s)
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 1)
                .map(String::from)
                .collect()
        };
        let wanted = words(unknown);
        let lower = unknown.to_lowercase();
        let mut scored: Vec<(usize, usize, &str)> = self
            .label_ids()
            .map(|id| {
                let shared = words(id).intersection(&wanted).count();
                (crate::analyze::edit_distance(&id.to_lowercase(), &lower), shared, id)
            })
            .collect();
        let mut out: Vec<String> = Vec::new();
        scored.sort_by_key(|&(d, _, id)| (d, id));
        out.extend(scored.iter().take(3).filter(|s| s.0 <= unknown.chars().count() / 2 + 2).map(|s| s.2.to_string()));
        scored.sort_by_key(|&(d, shared, id)| (std::cmp::Reverse(shared), d, id));
        for s in scored.iter().filter(|s| s.1 > 0).take(3) {
            if !out.iter().any(|o| o == s.2) {
                out.push(s.2.to_string());
            }
        }
        out
    }

    /// Resolves a label id: a document id, or a section id `DOC#label`.
    pub fn target(&self, id: &str) -> Option<Target> {
        if let Some(d) = self.doc_index(id) {
            return Some(Target::Doc(d));
        }
        self.sections.get(id).map(|&(doc, section)| Target::Section { doc, section })
    }
}

fn hash_doc(hasher: &mut blake3::Hasher, doc: &Document) {
    for part in [doc.id.as_str(), doc.title.as_deref().unwrap_or(""), &doc.text] {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    if let Some(acl) = &doc.acl {
        hasher.update(b"acl");
        for g in acl {
            hasher.update(g.as_bytes());
            hasher.update(b"\0");
        }
    }
    for (k, v) in &doc.meta {
        hasher.update(k.as_bytes());
        hasher.update(b"=");
        hasher.update(v.as_bytes());
        hasher.update(b"\0");
    }
}

fn detect_format(path: &Path) -> Result<CorpusFormat> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    Ok(if meta.is_file() {
        CorpusFormat::Jsonl
    } else if path.join("corpus.jsonl").is_file() {
        CorpusFormat::Beir
    } else {
        CorpusFormat::Folder
    })
}

/// A JSON id may be a string or a number (BEIR ids are sometimes written as numbers). An
/// empty id, or one with control characters, is refused where it is read.
#[derive(Deserialize)]
#[serde(try_from = "RawJsonId")]
pub(crate) enum JsonId {
    Str(String),
    Int(i64),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawJsonId {
    Str(String),
    Int(i64),
}

impl TryFrom<RawJsonId> for JsonId {
    type Error = String;

    fn try_from(raw: RawJsonId) -> Result<Self, String> {
        match raw {
            RawJsonId::Str(s) => check_id(&s).map(|()| JsonId::Str(s)),
            RawJsonId::Int(i) => Ok(JsonId::Int(i)),
        }
    }
}

/// The error for a label id that two documents claim (a section of one, the id of another).
fn ambiguous(source: &Path, id: &str, a: &str, b: &str) -> Error {
    Error::input(
        Location::file(source),
        format!(
            "the id {id:?} names a section of document {a:?} and also {}: a label naming it would be ambiguous; rename one of them",
            if id == b { format!("the document {b:?}") } else { format!("a section of document {b:?}") }
        ),
    )
}

/// An id must hold a visible character and no control character (ids reach TREC files,
/// terminals and pages).
pub(crate) fn check_id(id: &str) -> Result<(), String> {
    if id.trim().is_empty() {
        return Err(format!("empty id {id:?}: every document and case needs a non-empty id"));
    }
    if id.chars().any(char::is_control) {
        return Err(format!("id {id:?} contains a control character"));
    }
    Ok(())
}

impl JsonId {
    pub(crate) fn into_string(self) -> String {
        match self {
            JsonId::Str(s) => s,
            JsonId::Int(i) => i.to_string(),
        }
    }
}

#[derive(Deserialize)]
struct JsonDoc {
    #[serde(alias = "_id")]
    id: JsonId,
    #[serde(default)]
    title: Option<String>,
    #[serde(alias = "contents", alias = "body")]
    text: String,
    #[serde(default, alias = "metadata")]
    meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// Every other field: the access key, metadata, or (refused) something that could be an
    /// access list.
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

/// A document's access list (if any) and its metadata.
type AclAndMeta = (Option<Vec<String>>, BTreeMap<String, String>);

/// A JSON document's access list and metadata, from its other fields and its `meta` /
/// `metadata` object, by the access-key rules.
fn json_fields(
    raw_meta: Option<serde_json::Map<String, serde_json::Value>>,
    other: serde_json::Map<String, serde_json::Value>,
    rules: &AccessKey,
) -> std::result::Result<AclAndMeta, String> {
    let mut acl: Option<Vec<String>> = None;
    let mut meta = BTreeMap::new();
    let nested = raw_meta.unwrap_or_default().into_iter().map(|f| (f, "metadata "));
    for ((key, value), inside) in other.into_iter().map(|f| (f, "")).chain(nested) {
        match rules.classify(&key) {
            Field::Access => {
                if acl.is_some() {
                    return Err(format!("the access list `{key}` is given twice"));
                }
                acl = Some(rules.groups_from_json(&value)?);
            }
            Field::Suspicious(why) => return Err(format!("{inside}field {why}")),
            Field::Meta => {
                if let Some(path) = rules.nested_in_json(&key, &value) {
                    return Err(rules.nested_error(&path));
                }
                let flat = match value {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                meta.insert(key, flat);
            }
        }
    }
    Ok((acl, meta))
}

/// Parses one JSON line, turning a syntax error into a located input error.
pub(crate) fn parse_json_line<T: serde::de::DeserializeOwned>(path: &Path, line_no: usize, line: &str) -> Result<T> {
    serde_json::from_str(line).map_err(|e| {
        Error::input(
            Location { path: path.to_path_buf(), line: line_no, column: e.column() },
            format!("invalid JSON: {e}"),
        )
    })
}

fn read_jsonl(path: &Path, rules: &AccessKey) -> Result<Vec<Document>> {
    let mut docs = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for line in text::lines(path)? {
        let (line_no, line) = line?;
        if line.trim().is_empty() {
            continue;
        }
        crate::input::access_key::no_duplicate_keys(&line).map_err(|e| {
            Error::input(Location { path: path.to_path_buf(), line: line_no, column: e.column() }, e.to_string())
        })?;
        let raw: JsonDoc = parse_json_line(path, line_no, &line)?;
        let (acl, meta) =
            json_fields(raw.meta, raw.other, rules).map_err(|e| Error::input(Location::line(path, line_no), e))?;
        refuse_access_in_text(path, line_no, &raw.text, rules)?;
        let id = raw.id.into_string();
        if let Some(first) = first_line.insert(id.clone(), line_no) {
            return Err(Error::input(
                Location::line(path, line_no),
                format!("duplicate document id {id:?} (first on line {first})"),
            ));
        }
        let title = raw.title.filter(|t| !t.is_empty());
        let sections = markdown_sections(&id, &raw.text);
        docs.push(Document { id, title, text: raw.text, meta, acl, sections });
    }
    if docs.is_empty() {
        return Err(Error::input(Location::file(path), "the corpus has no documents"));
    }
    Ok(docs)
}

/// A record's text that opens with front matter (a whole Markdown file pasted into `text`):
/// its access list would be read as text and the record left public, so one that declares or
/// could declare access is refused at the record's line.
fn refuse_access_in_text(path: &Path, line_no: usize, text: &str, rules: &AccessKey) -> Result<()> {
    if !frontmatter::opens_with_fence(text) {
        return Ok(());
    }
    let inner = Path::new("text");
    let declared = match frontmatter::split(inner, text, rules) {
        Ok((front, _)) => front.acl.is_some(),
        Err(_) => text.lines().any(|l| frontmatter::starts_like_acl(l, rules)),
    };
    if declared {
        return Err(Error::input(
            Location::line(path, line_no),
            format!(
                "the record's `text` opens with front matter that declares or could declare access: give the access list as the record's `{}` field",
                rules.key
            ),
        ));
    }
    Ok(())
}

/// Errors listed at once before a reader gives up.
pub const ERRORS_LISTED: usize = 20;

/// Why a file is skipped rather than read (reported, never indexed empty).
type Skipped = String;

/// A document's front matter and extracted text from its file, or why it is skipped.
fn extract(
    path: &Path,
    format: Format,
    rules: &AccessKey,
    root: &Path,
) -> Result<std::result::Result<(FrontMatter, Extracted), Skipped>> {
    let text_file = |headings: fn(&str) -> Vec<formats::Heading>| -> Result<(FrontMatter, Extracted)> {
        let raw = text::document(path)?;
        let (front, body) = frontmatter::split(path, &raw, rules)?;
        // Site generators' markup (shortcodes, template tags, MDX imports and components) is
        // not text a reader sees.
        let (text, included, unresolved) = match format {
            Format::Markdown | Format::Rst => {
                let r = crate::input::includes::resolve(&raw, body, path, root, rules)?;
                let text = if format == Format::Markdown { formats::without_site_markup(&r.text) } else { r.text };
                (text, r.included, r.unresolved)
            }
            _ => (body.to_string(), Vec::new(), Vec::new()),
        };
        let headings = headings(&text);
        // reST adornment lines (`=======` under a title) are layout, not text: blanked in place,
        // so every offset (and so every section span) stays where the headings put it.
        let text = if format == Format::Rst { formats::without_adornments(&text) } else { text };
        let mut extracted = Extracted { headings, text, included, unresolved, ..Default::default() };
        if format == Format::Rst {
            formats::promote_title_block(&mut extracted, formats::rst_title_block);
        }
        Ok((front, extracted))
    };
    let declared = |e: Extracted| (FrontMatter { title: e.title.clone(), ..Default::default() }, e);
    Ok(Ok(match format {
        Format::Markdown => {
            text_file(|t| markdown_headings(t).into_iter().map(|(a, l, s)| (a, l, s.to_string())).collect())?
        }
        Format::Text => text_file(|_| Vec::new())?,
        Format::Rst => text_file(formats::rst_headings)?,
        Format::Html => {
            let whole = text::document(path)?;
            // Static-site sources often open an HTML page with front matter: it is read with
            // the same rules as Markdown's, so an access list there is never left public, and
            // one that is not front matter (an indented fence, a comment) is refused as there.
            let fenced = frontmatter::opens_with_fence(&whole);
            let (front, source) = frontmatter::split(path, &whole, rules)?;
            let front = fenced.then_some(front);
            let depth = formats::html_depth(source);
            if depth > formats::MAX_HTML_DEPTH {
                return Err(Error::input(
                    Location::file(path),
                    format!(
                        "elements nest {depth} deep (at most {}): refused, as no page people read does",
                        formats::MAX_HTML_DEPTH
                    ),
                ));
            }
            let page = formats::html(source);
            // An HTML page has no access list of its own: a `<meta>` that could declare one
            // would leave it public.
            if let Some(name) = page.meta_names.iter().find(|n| rules.classify(n) != Field::Meta) {
                let line =
                    source.lines().position(|l| l.contains("<meta") && l.contains(name.as_str())).map_or(1, |i| i + 1);
                return Err(Error::input(
                    Location::line(path, line),
                    format!(
                        "`<meta name=\"{name}\">` could declare an access list, which HTML pages cannot carry here: put the page in a JSONL corpus with `{}`, or name it in `[corpus] not_access` if it is plain metadata",
                        rules.key
                    ),
                ));
            }
            match front {
                Some(front) => {
                    (FrontMatter { title: front.title.clone().or_else(|| page.title.clone()), ..front }, page)
                }
                None => declared(page),
            }
        }
        Format::Docx => declared(formats::docx(path)?),
        Format::Pdf if !formats::pdf_reader_available() => {
            return Ok(Err("pdftohtml is not installed: apt install poppler-utils".into()))
        }
        Format::Pdf => match formats::pdf(path) {
            Ok(e) => declared(e),
            Err(Error::Input { message, .. }) if message.starts_with("no extractable text") => {
                return Ok(Err("no extractable text: a scan?".into()))
            }
            Err(e) => return Err(e),
        },
    }))
}

/// The corpus file an include's `target` most likely meant (`by_name`: the files by name): the
/// same file name, with the most trailing path parts in common; shown relative to `root`.
fn closest_file(target: &str, by_name: &HashMap<String, Vec<&PathBuf>>, root: &Path) -> Option<String> {
    let wanted: Vec<&str> = target.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    let name = *wanted.last()?;
    let common = |f: &Path| {
        let parts: Vec<String> = f.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        parts.iter().rev().zip(wanted.iter().rev()).take_while(|(a, b)| a == *b).count()
    };
    by_name
        .get(name)?
        .iter()
        .max_by_key(|f| (common(f), std::cmp::Reverse(f.as_os_str().len())))
        .map(|f| f.strip_prefix(root).unwrap_or(f).to_string_lossy().replace('\\', "/"))
}

fn read_folder(root: &Path, rules: &AccessKey, folder: &FolderRules) -> Result<(Vec<Document>, ReadReport)> {
    let mut files = Vec::new();
    let canonical = root.canonicalize().map_err(|e| Error::io(root, e))?;
    let mut seen_dirs = std::collections::HashSet::from([canonical.clone()]);
    let mut not_files = Vec::new();
    collect_files(&canonical, root, &mut seen_dirs, &mut files, &mut not_files)?;
    files.sort();
    not_files.sort();
    let all_files = files.clone();
    // Files by name, for the closest file to an include not found (one lookup per include).
    let mut by_name: HashMap<String, Vec<&PathBuf>> = HashMap::new();
    for f in &all_files {
        if let Some(name) = f.file_name() {
            by_name.entry(name.to_string_lossy().into_owned()).or_default().push(f);
        }
    }
    // Docusaurus projects in the corpus: their `_` partials are not pages.
    let docusaurus: Vec<PathBuf> = all_files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("docusaurus.config.")))
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect();
    let mkdocs: Vec<crate::input::publish::MkDocsSite> = all_files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "mkdocs.yml" || n == "mkdocs.yaml"))
        .filter_map(|f| crate::input::publish::MkDocsSite::read(f))
        .collect();
    // Per document: its file and why the site does not publish it; folders whose pages a
    // section's cascade or a headless bundle leaves out.
    let mut read_from: Vec<(PathBuf, Option<String>)> = Vec::new();
    let mut unpublished_below: Vec<(PathBuf, String)> = Vec::new();
    let mut docs = Vec::with_capacity(files.len());
    let mut first_file: HashMap<String, PathBuf> = HashMap::new();
    let mut sphinx_suffixes: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut included_by: HashMap<PathBuf, Vec<(PathBuf, bool)>> = HashMap::new();
    let mut errors: Vec<Error> = Vec::new();
    let mut report = ReadReport::default();
    report.skipped.extend(not_files);
    for path in files {
        let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        if folder.excludes(&relative) {
            let id = id_of(path.strip_prefix(root).unwrap_or(&path));
            report.left_out.push((id, "[corpus] exclude leaves it out".into()));
            report.excluded.push(path);
            continue;
        }
        let bytes = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?.len();
        if bytes > folder.max_document_bytes {
            report.skipped.push((
                path,
                format!(
                    "{bytes} bytes, over the {} MiB a document may hold ([corpus] max_document_mib)",
                    folder.max_document_bytes >> 20
                ),
            ));
            continue;
        }
        let Some(format) = Format::of(&path) else {
            let ext = path.extension().map_or_else(|| "no extension".into(), |e| format!(".{}", e.to_string_lossy()));
            report.skipped.push((path, format!("{ext}: not a known format")));
            continue;
        };
        // A Sphinx project whose `source_suffix` names `.txt` writes its pages in reST there.
        let format = match (format, path.parent()) {
            (Format::Text, Some(dir)) => {
                let suffixes = sphinx_suffixes
                    .entry(dir.to_path_buf())
                    .or_insert_with(|| crate::input::formats::sphinx_source_suffixes(dir, root));
                if suffixes.iter().any(|s| s == ".txt") {
                    Format::Rst
                } else {
                    Format::Text
                }
            }
            (format, _) => format,
        };
        let id = id_of(path.strip_prefix(root).unwrap_or(&path));
        if let Err(why) = check_id(&id).and_then(|()| {
            id.split('/')
                .all(|part| !part.trim().is_empty())
                .then_some(())
                .ok_or_else(|| format!("the path gives the id {id:?}, with a blank part: rename the file or folder"))
        }) {
            errors.push(Error::input(Location::file(&path), why));
            continue;
        }
        if let Some(first) = first_file.insert(id.clone(), path.clone()) {
            return Err(Error::input(
                Location::file(&path),
                format!("document id {id:?} is also the id of {} (ids are paths without extension)", first.display()),
            ));
        }
        let (front, extracted) = match extract(&path, format, rules, &canonical) {
            Ok(Ok(read)) => read,
            Ok(Err(why)) => {
                report.skipped.push((path, why));
                continue;
            }
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if let Some(why) = &front.lenient {
            report.lenient.push((path.clone(), why.clone()));
        }
        // A section page's cascade applies below it even when the page itself holds no text.
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let own = crate::input::publish::own(&front.meta);
        let folder_of_page = path.parent().unwrap_or(root).to_path_buf();
        if stem == "_index" {
            if let Some(why) = crate::input::publish::cascaded(&front.meta) {
                unpublished_below.push((folder_of_page.clone(), format!("{why} in {}", file_name(&path))));
            }
        } else if stem == "index" && own == Some("headless: true") {
            unpublished_below.push((folder_of_page, format!("in a headless bundle ({})", file_name(&path))));
        }
        if extracted.text.trim().is_empty() {
            report.skipped.push((path, "no text: an empty document".into()));
            continue;
        }
        *report.read.entry(format).or_insert(0) += 1;
        if extracted.dropped_lines > 0 {
            report.dropped_lines.push((path.clone(), extracted.dropped_lines));
        }
        if !extracted.included.is_empty() || !extracted.unresolved.is_empty() {
            let missed = extracted.unresolved.iter().map(|u| {
                let closest = (u.why == Missed::NotFound).then(|| closest_file(&u.target, &by_name, root)).flatten();
                match closest {
                    Some(c) => format!("{} ({}; closest file: {c})", u.target, u.why.as_str()),
                    None => format!("{} ({})", u.target, u.why.as_str()),
                }
            });
            report.includes.push((path.clone(), extracted.included.len(), missed.collect()));
        }
        for fragment in &extracted.included {
            included_by.entry(fragment.clone()).or_default().push((path.clone(), front.acl.is_some()));
        }

        let partial = docusaurus.iter().any(|site| crate::input::publish::docusaurus_partial(&path, site));
        let why = own
            .map(String::from)
            .or_else(|| partial.then(|| "a partial: Docusaurus leaves out names starting with _".to_string()))
            .or_else(|| mkdocs.iter().find_map(|site| site.leaves_out(&path)));
        read_from.push((path.clone(), why));

        let mut sections = sections_from(&id, &extracted.text, &extracted.headings);
        sections.extend(page_sections(&id, &extracted.text, &extracted.pages));
        let title = front.title.or(extracted.title);
        docs.push(Document { id, title, text: extracted.text, meta: front.meta, acl: front.acl, sections });
    }
    if !errors.is_empty() {
        return Err(Error::many(errors, ERRORS_LISTED));
    }
    if !folder.publish_all {
        let mut kept = Vec::with_capacity(docs.len());
        for (doc, (path, own)) in docs.into_iter().zip(read_from) {
            let below = || {
                unpublished_below
                    .iter()
                    .find(|(dir, _)| {
                        let the_section_page =
                            path.parent() == Some(dir.as_path()) && path.file_stem().is_some_and(|s| s == "_index");
                        path.starts_with(dir) && !the_section_page
                    })
                    .map(|(_, why)| why.clone())
            };
            let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            match own.or_else(below) {
                Some(_) if folder.publish_also.matches(&relative) => {
                    report.published_also += 1;
                    kept.push(doc);
                }
                Some(why) => {
                    let also = match relative.rsplit_once('/') {
                        Some((dir, _)) => format!("{dir}/**"),
                        None => relative.clone(),
                    };
                    let keeps = format!(
                        "[corpus] publish_also = [\"{also}\"] keeps it (publish = \"all\" keeps every such page)"
                    );
                    let canonical_path = path.canonicalize().unwrap_or_else(|_| path.clone());
                    let shown = match included_by.get(&canonical_path).and_then(|pages| pages.first()) {
                        Some((page, _)) => {
                            let page =
                                page.strip_prefix(root).or_else(|_| page.strip_prefix(&canonical)).unwrap_or(page);
                            format!("; its text is read where {} shows it", id_of(page))
                        }
                        None => String::new(),
                    };
                    report
                        .left_out
                        .push((doc.id.clone(), format!("the site does not publish it ({why}){shown}; {keeps}")));
                    report.unpublished.push((path, why));
                }
                None => kept.push(doc),
            }
        }
        docs = kept;
    }
    if docs.is_empty() {
        return Err(Error::input(Location::file(root), format!("no documents in this folder ({})", report.summary())));
    }
    // A fragment only restricted pages include, with no access list of its own, is still a
    // public document under its own id: say so.
    // Included files are canonical; documents are read below the canonical root without links.
    let by_id: HashMap<&str, usize> = docs.iter().enumerate().map(|(i, d)| (d.id.as_str(), i)).collect();
    let mut public_fragments = Vec::new();
    for (fragment, pages) in included_by {
        let doc = fragment.strip_prefix(&canonical).ok().and_then(|rel| by_id.get(id_of(rel).as_str()).copied());
        let public = doc.is_some_and(|d| docs[d].acl.is_none());
        if public && pages.iter().all(|(_, restricted)| *restricted) {
            let pages: Vec<PathBuf> = pages.into_iter().map(|(p, _)| p).collect();
            public_fragments.push((fragment, pages));
        }
    }
    public_fragments.sort();
    report.public_fragments = public_fragments;
    Ok((docs, report))
}

/// A folder document's id: its path below the corpus folder, without extension, `/`-separated.
fn id_of(relative: &Path) -> String {
    relative.with_extension("").components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// The regular files under `dir`, and what was skipped with why. Only regular files inside the
/// corpus are read: a link whose target is inside it is skipped (the target is read under its
/// own path); a link that leaves the corpus, a broken link or a link loop, a FIFO, a socket and a
/// device are listed as skipped without being opened. A directory is entered once, so a link
/// loop cannot repeat documents or hang.
fn collect_files(
    root: &Path,
    dir: &Path,
    seen_dirs: &mut std::collections::HashSet<PathBuf>,
    out: &mut Vec<PathBuf>,
    skipped: &mut Vec<(PathBuf, String)>,
) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let file_type = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if name.starts_with('.') {
            // Hidden files are not read, and are listed as skipped (folders such as `.git` are
            // left out without a line).
            if !file_type.is_dir() {
                skipped.push((path, "a hidden file".into()));
            }
            continue;
        }
        if file_type.is_symlink() {
            match path.canonicalize() {
                Ok(target) if target.starts_with(root) => {}
                Ok(_) => skipped.push((path, "a link to outside the corpus folder".into())),
                Err(_) => skipped.push((path, "a broken link or a link loop".into())),
            }
            continue;
        }
        if file_type.is_dir() {
            if crate::input::includes::HUGO_NON_CONTENT.contains(&name.as_str())
                && crate::input::includes::is_hugo_project(dir)
            {
                skipped.push((path, "a Hugo project's folder of templates or site files, not pages".into()));
                continue;
            }
            let canonical = path.canonicalize().map_err(|e| Error::io(&path, e))?;
            if seen_dirs.insert(canonical) {
                collect_files(root, &path, seen_dirs, out, skipped)?;
            }
        } else if file_type.is_file() {
            out.push(path);
        } else {
            let what = if file_type.is_fifo() {
                "a FIFO"
            } else if file_type.is_socket() {
                "a socket"
            } else if file_type.is_block_device() || file_type.is_char_device() {
                "a device"
            } else {
                "not a regular file"
            };
            skipped.push((path, format!("{what}, not a document")));
        }
    }
    Ok(())
}

/// Markdown headings, as a CommonMark parser (`pulldown-cmark`) finds them: ATX and setext
/// headings, also inside lists and block quotes; nothing inside fenced (backticks or tildes of
/// any length, in lists too) or indented code, or HTML blocks. Each as (start of its first
/// line, level, label), the label being the heading's source text without its `#` marks or
/// setext underline, trimmed (so section ids read as the file does).
pub fn markdown_headings(text: &str) -> Vec<(usize, u8, &str)> {
    use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag};
    let mut out = Vec::new();
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        let Event::Start(Tag::Heading { level, .. }) = event else { continue };
        let level = match level {
            HeadingLevel::H1 => 1,
            HeadingLevel::H2 => 2,
            HeadingLevel::H3 => 3,
            HeadingLevel::H4 => 4,
            HeadingLevel::H5 => 5,
            HeadingLevel::H6 => 6,
        };
        let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
        let source = &text[range.start..range.end];
        let label = without_anchor(heading_label(source));
        if !label.is_empty() {
            out.push((line_start, level, label));
        }
    }
    out
}

/// The most patterns `[corpus] exclude` may hold, and the longest one.
pub const MAX_EXCLUDE_PATTERNS: usize = 1000;
pub const MAX_EXCLUDE_PATTERN_CHARS: usize = 1024;
/// The size a document may have unless `[corpus] max_document_mib` says otherwise.
pub const DEFAULT_MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// How a folder corpus is read beyond its formats: the files left out on purpose
/// (`[corpus] exclude`) and the size a document may have (`[corpus] max_document_mib`).
///
/// Patterns are globs: `*` and `?` within a path segment, `**` across segments (`drafts/**`,
/// `**/wip/*.md`); a pattern without `/` matches a file name anywhere. They compile to one
/// automaton (`globset`, regular expressions without backtracking), so matching takes time
/// linear in the path whatever the pattern.
#[derive(Debug, Clone)]
pub struct FolderRules {
    exclude: Globs,
    /// `[corpus] publish_also`: pages kept although the site does not publish them on their own
    /// (a glossary's terms shown through the glossary page).
    publish_also: Globs,
    pub max_document_bytes: u64,
    /// `[corpus] publish = "all"`: keep what the site does not publish.
    pub publish_all: bool,
}

impl Default for FolderRules {
    fn default() -> Self {
        FolderRules {
            exclude: Globs::default(),
            publish_also: Globs::default(),
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
            publish_all: false,
        }
    }
}

/// Path globs: a pattern with `/` matches the relative path, one without a file name anywhere.
#[derive(Debug, Clone)]
struct Globs {
    by_path: globset::GlobSet,
    by_name: globset::GlobSet,
}

impl Default for Globs {
    fn default() -> Self {
        Globs { by_path: globset::GlobSet::empty(), by_name: globset::GlobSet::empty() }
    }
}

impl Globs {
    /// The globs of `patterns`, or why the pattern at that index cannot be one.
    fn new(patterns: &[String]) -> std::result::Result<Globs, (usize, String)> {
        if patterns.len() > MAX_EXCLUDE_PATTERNS {
            return Err((MAX_EXCLUDE_PATTERNS, format!("{} patterns: at most {MAX_EXCLUDE_PATTERNS}", patterns.len())));
        }
        let (mut by_path, mut by_name) = (globset::GlobSetBuilder::new(), globset::GlobSetBuilder::new());
        for (i, pattern) in patterns.iter().enumerate() {
            if pattern.chars().count() > MAX_EXCLUDE_PATTERN_CHARS {
                return Err((
                    i,
                    format!("a pattern of {} characters: at most {MAX_EXCLUDE_PATTERN_CHARS}", pattern.chars().count()),
                ));
            }
            let pattern = pattern.trim().trim_start_matches("./");
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| (i, format!("{pattern:?} is not a glob: {}", e.kind())))?;
            if pattern.contains('/') {
                by_path.add(glob)
            } else {
                by_name.add(glob)
            };
        }
        let build = |b: globset::GlobSetBuilder| b.build().map_err(|e| (0, e.to_string()));
        Ok(Globs { by_path: build(by_path)?, by_name: build(by_name)? })
    }

    fn matches(&self, path: &str) -> bool {
        self.by_path.is_match(path) || self.by_name.is_match(path.rsplit('/').next().unwrap_or(path))
    }
}

impl FolderRules {
    /// The rules for `patterns` (`exclude`), or why the pattern at that index cannot be one.
    pub fn new(patterns: &[String], max_document_bytes: u64) -> std::result::Result<Self, (usize, String)> {
        Ok(FolderRules { exclude: Globs::new(patterns)?, max_document_bytes, ..FolderRules::default() })
    }

    /// Keeps the unpublished pages `patterns` match (`publish_also`), or says why the pattern at
    /// that index cannot be one.
    pub fn publish_also(&mut self, patterns: &[String]) -> std::result::Result<(), (usize, String)> {
        self.publish_also = Globs::new(patterns)?;
        Ok(())
    }

    /// Whether `path` (relative, `/`-separated) is left out.
    pub fn excludes(&self, path: &str) -> bool {
        self.exclude.matches(path)
    }
}

/// A heading label without what site generators add to it: a trailing attribute block
/// (`{#anchor}`, `{#id .class}`, Pandoc/MkDocs/Hugo) and a permalink mark `¶`.
fn without_anchor(label: &str) -> &str {
    let mut label = label.trim().trim_end_matches(['¶', '🔗']).trim_end();
    // A permalink `#` after the heading's words (`Install #`), never a heading that is one.
    if let Some(words) = label.strip_suffix(" #") {
        label = words.trim_end();
    }
    if label.ends_with('}') {
        if let Some(open) = label.rfind('{') {
            let inner = &label[open + 1..label.len() - 1];
            if inner.starts_with(['#', '.']) && !inner.contains('{') {
                label = label[..open].trim_end();
            }
        }
    }
    label
}

/// The text of a heading's source: an ATX line without its opening and closing `#` runs, or
/// a setext heading's first line without its underline.
fn heading_label(source: &str) -> &str {
    let first = source.lines().next().unwrap_or("").trim();
    let body = first.trim_start_matches(['>', ' ']);
    let hashes = body.bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&hashes) && (body.len() == hashes || body[hashes..].starts_with([' ', '\t'])) {
        let rest = body[hashes..].trim();
        // A closing sequence is `#`s preceded by a space (or the whole rest).
        let trimmed = rest.trim_end_matches('#');
        return if trimmed.is_empty() || trimmed.ends_with([' ', '\t']) { trimmed.trim() } else { rest };
    }
    first
}

pub fn markdown_sections(doc_id: &str, text: &str) -> Vec<Section> {
    let headings: Vec<formats::Heading> =
        markdown_headings(text).into_iter().map(|(a, l, s)| (a, l, s.to_string())).collect();
    sections_from(doc_id, text, &headings)
}

/// Sections from headings of any format: each from its heading's line to the next heading of
/// the same or a higher level (SPEC §1).
pub fn sections_from(doc_id: &str, text: &str, headings: &[formats::Heading]) -> Vec<Section> {
    // Each section's end in one pass: a heading closes every open one of its level or deeper.
    let mut ends = vec![text.len(); headings.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, (start, level, _)) in headings.iter().enumerate() {
        while let Some(&j) = open.last().filter(|&&j| headings[j].1 >= *level) {
            ends[j] = *start;
            open.pop();
        }
        open.push(i);
    }
    headings
        .iter()
        .zip(ends)
        .map(|((start, level, label), end)| Section {
            id: format!("{doc_id}#{label}"),
            label: label.clone(),
            level: *level,
            start: *start,
            end,
            page: false,
        })
        .collect()
}

/// A PDF's pages as sections `DOC#p1`, `DOC#p2`, … (SPEC §1).
fn page_sections(doc_id: &str, text: &str, pages: &[usize]) -> Vec<Section> {
    pages
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = pages.get(i + 1).copied().unwrap_or(text.len());
            Section {
                id: format!("{doc_id}#p{}", i + 1),
                label: format!("p{}", i + 1),
                level: 1,
                start,
                end,
                page: true,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_end_at_same_or_higher_heading() {
        let text = "intro\n## Art. 1\nuno\n### § 1\nsub\n## Art. 2\ndos\n";
        let s = markdown_sections("lei", text);
        let ids: Vec<_> = s.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["lei#Art. 1", "lei#§ 1", "lei#Art. 2"]);
        assert_eq!(&text[s[0].start..s[0].end], "## Art. 1\nuno\n### § 1\nsub\n");
        assert_eq!(&text[s[1].start..s[1].end], "### § 1\nsub\n");
        assert_eq!(&text[s[2].start..s[2].end], "## Art. 2\ndos\n");
    }

    #[test]
    fn headings_inside_code_fences_are_ignored() {
        let text = "```\n# not a heading\n```\n# Real\n";
        let s = markdown_sections("d", text);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].id, "d#Real");
    }

    #[test]
    fn broken_json_line_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(&p, "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\": \"b\", \"text\": }\n").unwrap();
        let err = Corpus::load(&p, None, &AccessKey::default()).unwrap_err().to_string();
        assert!(err.contains("c.jsonl:2:"), "{err}");
    }

    #[test]
    fn numeric_ids_and_duplicate_ids() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(&p, "{\"_id\":7,\"title\":\"\",\"text\":\"x\"}\n").unwrap();
        let c = Corpus::load(&p, None, &AccessKey::default()).unwrap();
        assert_eq!(c.docs[0].id, "7");
        assert_eq!(c.docs[0].title, None);
        std::fs::write(&p, "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"y\"}\n").unwrap();
        assert!(Corpus::load(&p, None, &AccessKey::default()).unwrap_err().to_string().contains("duplicate"));
    }

    #[test]
    fn a_jsonl_field_that_looks_like_an_acl_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"a\",\"text\":\"x\",\"url\":\"u\"}\n{\"id\":\"b\",\"text\":\"y\",\"ACL\":[\"rh\"]}\n",
        )
        .unwrap();
        let err = Corpus::load(&p, None, &AccessKey::default()).unwrap_err().to_string();
        assert!(err.contains("c.jsonl:2: field `ACL` could be an access list"), "{err}");
    }

    #[test]
    fn headings_follow_commonmark_fences_setext_indented_code_and_html_blocks() {
        let labels = |text: &str| -> Vec<(u8, String)> {
            markdown_headings(text).into_iter().map(|(_, l, s)| (l, s.to_string())).collect()
        };
        let h = |l: u8, s: &str| (l, s.to_string());
        // A fence opened inside a list item closes inside it; the heading after it is real.
        assert_eq!(labels("- ```bash\n  # not a heading\n  ```\n\n# Real\n"), [h(1, "Real")]);
        assert_eq!(labels("~~~~\n# no\n~~~~\n## Yes\n"), [h(2, "Yes")]);
        assert_eq!(labels("````\n```\n# no\n````\n# Yes\n"), [h(1, "Yes")], "a shorter fence does not close");
        assert_eq!(labels("Title\n=====\ntext\n\nSub\n---\n"), [h(1, "Title"), h(2, "Sub")]);
        assert_eq!(labels("    # indented code\n\n# Yes\n"), [h(1, "Yes")]);
        assert_eq!(labels("<div>\n# inside html\n</div>\n\n# After #\n"), [h(1, "After")]);
        assert_eq!(labels("#NoSpace\n# C#\n### Art. 18 ###\n"), [h(1, "C#"), h(3, "Art. 18")]);
        assert_eq!(labels("> ## Quoted\n"), [h(2, "Quoted")]);
        // Sections run to the next heading of the same or a higher level, from the line start.
        let text = "# A\nx\n## B\ny\n# C\n";
        let s = markdown_sections("d", text);
        assert_eq!((s[0].start, s[0].end, s[1].start, s[1].end), (0, 13, 6, 13));
    }

    #[test]
    fn folder_ids_are_relative_paths_and_front_matter_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("rh")).unwrap();
        std::fs::write(
            dir.path().join("rh/ferias.md"),
            "---\ntitle: Férias\nacl: [rh, diretoria]\nmeta:\n  area: pessoas\n---\n# Férias\ntexto\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("a.txt"), "plain").unwrap();
        let c = Corpus::load(dir.path(), None, &AccessKey::default()).unwrap();
        let ids: Vec<_> = c.docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["a", "rh/ferias"]);
        let d = &c.docs[1];
        assert_eq!(d.title.as_deref(), Some("Férias"));
        assert_eq!(d.acl.as_deref(), Some(&["rh".to_string(), "diretoria".to_string()][..]));
        assert_eq!(d.meta.get("area").map(String::as_str), Some("pessoas"));
        assert_eq!(d.text, "# Férias\ntexto\n");
        assert_eq!(c.target("rh/ferias#Férias"), Some(Target::Section { doc: 1, section: 0 }));
    }
}
