//! Judgments (SPEC §9): what people said about units the cells returned that no label named.
//!
//! They live beside the golden set in `judgments.jsonl`, one judgment per line, appended and
//! never edited in place (the last line about a case's unit wins), so a judging session that
//! stops at any point has lost nothing. A run reads them as labels: grade > 0 adds the unit to the
//! case's relevant set, grade 0 marks it judged not relevant. The golden file is never touched.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Location, Result};
use crate::input::corpus::{Corpus, Target};
use crate::input::golden::{GoldenCase, GoldenSource, Label};
use crate::vocab::Unit;

/// The file name beside the golden set.
pub const FILE_NAME: &str = "judgments.jsonl";

/// The highest grade a judgment may give (the golden set's own grades are 0..=this too).
pub const MAX_GRADE: u32 = 2;

/// A judgments file larger than this is refused: no judging effort reaches it.
const MAX_BYTES: u64 = 256 << 20;
/// The longest note (or judge's name) a judgment may carry.
pub const MAX_NOTE_CHARS: usize = 4096;

/// One line of `judgments.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgment {
    pub case: String,
    /// A document id or a section id (`DOC#SECTION`): never a chunk.
    pub id: String,
    pub grade: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Who judged (a name the person chose; `$USER` by default).
    #[serde(default)]
    pub who: String,
    /// When, as UTC `YYYY-MM-DDTHH:MM:SSZ`.
    #[serde(default)]
    pub when: String,
}

/// What a run read from the judgments file, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgmentsInfo {
    pub path: PathBuf,
    /// blake3 of the judgments in effect (case, unit, grade; the last line of each), 16 hex digits.
    pub hash: String,
    /// Units judged, and how many of them relevant (grade > 0).
    pub judged: usize,
    pub relevant: usize,
    /// The (case, unit) pairs judged: their labels came from judgments, not the golden set.
    #[serde(skip)]
    pub units: std::collections::BTreeSet<(String, String)>,
}

/// The judgments file of a golden set: the one the experiment names, else `judgments.jsonl`
/// beside the golden file (inside a BEIR folder).
pub fn path_for(golden: &GoldenSource, configured: Option<&Path>) -> PathBuf {
    if let Some(p) = configured {
        return p.to_path_buf();
    }
    if golden.path.is_dir() {
        return golden.path.join(FILE_NAME);
    }
    golden.path.parent().unwrap_or(Path::new(".")).join(FILE_NAME)
}

/// Every judgment of the file, with the line it is on; none when the file does not exist.
pub fn read(path: &Path) -> Result<Vec<(usize, Judgment)>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    if meta.len() > MAX_BYTES {
        return Err(Error::input(
            Location::file(path),
            format!("{} bytes, more than the {MAX_BYTES} a judgments file may hold", meta.len()),
        ));
    }
    let text = crate::input::text::read(path)?;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Judgment>(line) {
            Ok(j) => out.push((i + 1, j)),
            Err(e) => errors.push(Error::input(
                Location { path: path.to_path_buf(), line: i + 1, column: e.column() },
                e.to_string(),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(Error::many(errors, crate::input::corpus::ERRORS_LISTED));
    }
    Ok(out)
}

/// Why a judgment cannot stand for `case`, if it cannot: an unknown unit, one the case's user
/// may not see (that is a leak, not an answer), one the golden set labels already (`judged`:
/// whether a label of `case.relevant` came from a judgment instead), a grade out of range, or a
/// case that is not answerable.
pub fn problem(j: &Judgment, case: &GoldenCase, corpus: &Corpus, judged: &dyn Fn(&str) -> bool) -> Option<String> {
    if !case.answerable {
        return Some(format!(
            "case {:?} is not answerable: judging adds answers only to answerable cases (edit the golden set)",
            case.id
        ));
    }
    if j.grade > MAX_GRADE {
        return Some(format!("grade {} is above the highest grade, {MAX_GRADE}", j.grade));
    }
    if let Some(long) =
        [j.note.as_deref(), Some(j.who.as_str())].into_iter().flatten().find(|t| t.chars().count() > MAX_NOTE_CHARS)
    {
        return Some(format!("a note or name of {} characters: at most {MAX_NOTE_CHARS}", long.chars().count()));
    }
    let doc = match corpus.target(&j.id) {
        Some(Target::Doc(d)) | Some(Target::Section { doc: d, .. }) => d,
        None => return Some(format!("{:?} is neither a document nor a section of the corpus", j.id)),
    };
    let groups = case.user_groups();
    if !corpus.docs[doc].acl.as_ref().is_none_or(|acl| acl.iter().any(|g| groups.contains(g))) {
        return Some(format!(
            "{:?} is not visible to case {:?}'s groups {:?}: a unit its user may not see cannot be its answer",
            j.id,
            case.id,
            case.user_groups()
        ));
    }
    if case.relevant.iter().any(|l| l.id == j.id && !judged(&l.id)) {
        return Some(format!(
            "the golden set labels {:?} for case {:?} already: edit the golden set to change it",
            j.id, case.id
        ));
    }
    None
}

/// The judgments in effect: the last line about each (case, unit), in file order of first mention.
pub fn effective(lines: Vec<(usize, Judgment)>) -> Vec<(usize, Judgment)> {
    let mut at: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut out: Vec<(usize, Judgment)> = Vec::new();
    for (line, j) in lines {
        match at.get(&(j.case.clone(), j.id.clone())) {
            Some(&i) => out[i] = (line, j),
            None => {
                at.insert((j.case.clone(), j.id.clone()), out.len());
                out.push((line, j));
            }
        }
    }
    out
}

/// Reads `path` and adds its judgments to `cases` as labels (SPEC §9). Every judgment that
/// cannot stand is an error at its line, all listed: a run never scores half its judgments.
/// Under the doc unit a grade-0 judgment of a section says nothing about the rest of its
/// document and is left out.
pub fn apply(path: &Path, unit: Unit, cases: &mut [GoldenCase], corpus: &Corpus) -> Result<Option<JudgmentsInfo>> {
    let lines = effective(read(path)?);
    if lines.is_empty() {
        return Ok(None);
    }
    let by_id: BTreeMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
    let mut errors = Vec::new();
    let mut accepted: Vec<(usize, Label)> = Vec::new();
    let mut hasher = blake3::Hasher::new();
    let (mut judged, mut relevant) = (0, 0);
    let mut units = std::collections::BTreeSet::new();
    for (line, j) in &lines {
        let at = Location { path: path.to_path_buf(), line: *line, column: 0 };
        let Some(&ci) = by_id.get(j.case.as_str()) else {
            errors.push(Error::input(at, format!("no case {:?} in the golden set", j.case)));
            continue;
        };
        if let Some(why) = problem(j, &cases[ci], corpus, &|_| false) {
            errors.push(Error::input(at, why));
            continue;
        }
        for part in [j.case.as_bytes(), b"\0", j.id.as_bytes(), b"\0", &j.grade.to_le_bytes()] {
            hasher.update(part);
        }
        judged += 1;
        relevant += usize::from(j.grade > 0);
        units.insert((j.case.clone(), j.id.clone()));
        let section_of_doc = matches!(corpus.target(&j.id), Some(Target::Section { .. }));
        if unit == Unit::Doc && j.grade == 0 && section_of_doc {
            continue;
        }
        accepted.push((ci, Label { id: j.id.clone(), grade: j.grade, own: true }));
    }
    if !errors.is_empty() {
        return Err(Error::many(errors, crate::input::corpus::ERRORS_LISTED));
    }
    for (ci, label) in accepted {
        cases[ci].relevant.push(label);
    }
    let hash = hasher.finalize().to_hex()[..16].to_string();
    Ok(Some(JudgmentsInfo { path: path.to_path_buf(), hash, judged, relevant, units }))
}

/// Appends judgments to `path` and flushes them to disk before returning: a judging session
/// killed after an answer keeps it.
pub fn append(path: &Path, judgments: &[Judgment]) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let mut out = Vec::new();
    for j in judgments {
        serde_json::to_writer(&mut out, j).expect("json");
        out.push(b'\n');
    }
    // What every later run would refuse is refused here, before anything is written.
    let before = std::fs::metadata(path).map_or(0, |m| m.len());
    if before + out.len() as u64 > MAX_BYTES {
        return Err(Error::input(
            Location::file(path),
            format!(
                "adding {} bytes would make it {} bytes, more than the {MAX_BYTES} a judgments file may hold: nothing was added",
                out.len(),
                before + out.len() as u64
            ),
        ));
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| Error::io(path, e))?;
    file.write_all(&out).map_err(|e| Error::io(path, e))?;
    file.sync_data().map_err(|e| Error::io(path, e))
}
