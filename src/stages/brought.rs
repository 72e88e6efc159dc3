//! Vectors a team already has (`kind = "vectors"`): the passage and query vectors of a model
//! ragsweep cannot run (a provider's batch job, a fine-tune served elsewhere), read from the
//! model's folder instead of embedded.
//!
//! Each side is `passages.jsonl` / `queries.jsonl` (one `{"id": …, "vector": […]}` per line)
//! or `passages.npy` + `passages.ids` / `queries.npy` + `queries.ids` (row i of the array is
//! named by line i of the ids), as `ragsweep vectors` writes them. A passage's id is its chunk
//! id (`doc@start-end`), its document's id when the chunker made one chunk of it (chunker
//! `none`), or `sha256:` and the hex SHA-256 of its indexed text; a question's id is its id in
//! the golden set, or `sha256:` of its text. Vectors are made for one chunking: every chunk of
//! every chunk set the model's cells use must have a vector, and every vector must name one of
//! them; either failure is an error at the file (and line) that says so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::error::{Error, Location, Result};
use crate::input::corpus::Corpus;
use crate::input::golden::GoldenCase;
use crate::stages::chunk::ChunkSet;
use crate::stages::embed::{normalize, Role, MIN_NORM};

/// Prefix of an id that names a text by its SHA-256.
const SHA256: &str = "sha256:";

/// The files holding one side's vectors in a model folder: a JSONL file, or an array and its
/// ids (in that order of preference when both exist, which [`files`] refuses).
pub fn files(dir: &Path, role: Role) -> Result<Vec<PathBuf>> {
    let stem = side(role);
    let jsonl = dir.join(format!("{stem}.jsonl"));
    let (npy, ids) = (dir.join(format!("{stem}.npy")), dir.join(format!("{stem}.ids")));
    // Present is enough here: what is not a regular file is refused when it is read.
    let present = |p: &Path| std::fs::metadata(p).is_ok_and(|m| !m.is_dir());
    match (present(&jsonl), present(&npy), present(&ids)) {
        (true, false, false) => Ok(vec![jsonl]),
        (false, true, true) => Ok(vec![npy, ids]),
        (true, _, _) => Err(Error::ModelFailed(format!(
            "{}: both {stem}.jsonl and {stem}.npy or .ids are here: keep one form",
            dir.display()
        ))),
        (false, true, false) => Err(Error::ModelFailed(format!(
            "{}: {stem}.npy has no {stem}.ids (one id per line, row i named by line i)",
            dir.display()
        ))),
        (false, false, _) => Err(Error::ModelFailed(format!(
            "{}: no {stem}.jsonl, and no {stem}.npy with {stem}.ids: a vectors model holds both passages and queries",
            dir.display()
        ))),
    }
}

fn side(role: Role) -> &'static str {
    match role {
        Role::Passage => "passages",
        Role::Query => "queries",
    }
}

/// One side's vectors as read: ids, where each is named, and the unit vectors in id order.
struct Table {
    dim: usize,
    ids: Vec<String>,
    /// The file naming the ids and each id's line in it.
    named_in: PathBuf,
    lines: Vec<usize>,
    vectors: Vec<f32>,
}

impl Table {
    /// Reads one side of a vectors model's folder, refusing (at the file and line) vectors of
    /// another dimension than `dim` (any, when `dim` is 0) and vectors that are not finite or
    /// whose norm is under [`MIN_NORM`] (zero, or denormals no cosine can rank). Repeated ids
    /// are refused by [`Lookup::new`].
    fn read(dir: &Path, role: Role, dim: usize) -> Result<Table> {
        let files = files(dir, role)?;
        let mut table = match &files[..] {
            [jsonl] => read_jsonl(jsonl, dim)?,
            [npy, ids] => read_npy(npy, ids, dim)?,
            _ => unreachable!("one file or two"),
        };
        for (row, v) in table.vectors.chunks_exact_mut(table.dim).enumerate() {
            let norm = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            if v.iter().any(|x| !x.is_finite()) || norm < MIN_NORM {
                return Err(Error::input(
                    Location::line(&table.named_in, table.lines[row]),
                    format!(
                        "the vector of {:?} is zero, not finite or too short to rank (norm {norm:e}, at least {MIN_NORM:e})",
                        table.ids[row]
                    ),
                ));
            }
            normalize(v);
        }
        Ok(table)
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[row * self.dim..(row + 1) * self.dim]
    }
}

fn read_jsonl(path: &Path, dim: usize) -> Result<Table> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Row {
        id: String,
        vector: Vec<f32>,
    }
    let text = crate::input::text::read(path)?;
    let mut table =
        Table { dim, ids: Vec::new(), named_in: path.to_path_buf(), lines: Vec::new(), vectors: Vec::new() };
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = Location::line(path, i + 1);
        let row: Row = serde_json::from_str(line).map_err(|e| {
            // Python's json writes non-finite floats as bare NaN / Infinity, which JSON has not.
            let numbers = line.split_once("\"vector\"").map_or("", |(_, v)| v);
            if ["NaN", "Infinity"].iter().any(|t| numbers.contains(t)) {
                return Error::input(at.clone(), "the vector holds NaN or Infinity: a vector is finite numbers");
            }
            Error::input(at.clone(), format!("{e}: each line is {{\"id\": \"…\", \"vector\": [numbers]}}"))
        })?;
        if table.dim == 0 {
            table.dim = row.vector.len();
        }
        if row.vector.len() != table.dim || table.dim == 0 {
            return Err(Error::input(
                at,
                format!(
                    "the vector of {:?} has {} numbers; the model's vectors have {}",
                    row.id,
                    row.vector.len(),
                    table.dim
                ),
            ));
        }
        table.ids.push(row.id);
        table.lines.push(i + 1);
        table.vectors.extend(row.vector);
    }
    if table.ids.is_empty() {
        return Err(Error::input(Location::file(path), "holds no vectors"));
    }
    Ok(table)
}

fn read_npy(npy: &Path, ids: &Path, dim: usize) -> Result<Table> {
    let text = crate::input::text::read(ids)?;
    let named: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r'))).collect();
    if let Some((line, _)) = named.iter().find(|(_, id)| id.trim().is_empty()) {
        return Err(Error::input(Location::line(ids, *line), "an empty id"));
    }
    // The header is checked against the ids and the model before the data is read.
    let array = crate::npy::Npy::open(npy)?;
    let (rows, cols) = (array.rows, array.cols);
    if dim != 0 && cols != dim {
        return Err(Error::input(Location::file(npy), format!("{cols} columns; the model's vectors have {dim}")));
    }
    if !crate::stages::embed::DIM_RANGE.contains(&cols) {
        return Err(Error::input(
            Location::file(npy),
            format!("{cols} columns: {}", crate::stages::embed::dim_range_said()),
        ));
    }
    if named.len() != rows {
        return Err(Error::input(
            Location::file(ids),
            format!("{} ids for the {rows} rows of {}: line i names row i", named.len(), npy.display()),
        ));
    }
    let vectors = array.values()?;
    Ok(Table {
        dim: cols,
        ids: named.iter().map(|(_, id)| id.to_string()).collect(),
        named_in: ids.to_path_buf(),
        lines: named.iter().map(|&(line, _)| line).collect(),
        vectors,
    })
}

/// `sha256:` and the hex SHA-256 of `text`: the id that names a text by its content.
fn text_id(text: &str) -> String {
    format!("{SHA256}{:x}", sha2::Sha256::digest(text.as_bytes()))
}

/// Looks items up in a table by the ids that may name them, keeping which rows were used.
struct Lookup<'t> {
    table: &'t Table,
    rows: HashMap<&'t str, usize>,
    by_content: bool,
    used: Vec<bool>,
}

impl<'t> Lookup<'t> {
    /// The table's rows by id, refusing an id named twice at its second line; a `sha256:` id
    /// may repeat with the same vector (two questions of one text, each written out).
    fn new(table: &'t Table) -> Result<Self> {
        let mut rows: HashMap<&str, usize> = HashMap::with_capacity(table.len());
        let mut used = vec![false; table.len()];
        for (row, id) in table.ids.iter().enumerate() {
            if let Some(&first) = rows.get(id.as_str()) {
                if id.starts_with(SHA256) && table.vector(first) == table.vector(row) {
                    used[row] = true;
                    continue;
                }
                return Err(Error::input(
                    Location::line(&table.named_in, table.lines[row]),
                    format!("id {id:?} is named twice (first at line {})", table.lines[first]),
                ));
            }
            rows.insert(id, row);
        }
        let by_content = table.ids.iter().any(|id| id.starts_with(SHA256));
        Ok(Lookup { table, rows, by_content, used })
    }

    /// The vectors of items named by `names(i)` (then, if the table names texts by content,
    /// by `sha256:` of `text(i)`), flat, or an error naming how many have none and the first.
    fn vectors(
        &mut self,
        items: usize,
        names: impl Fn(usize) -> Vec<String>,
        text: impl Fn(usize) -> String,
        what: &str,
        naming: &str,
    ) -> Result<Vec<f32>> {
        let mut out = Vec::with_capacity(items * self.table.dim);
        let mut missing: Vec<String> = Vec::new();
        for i in 0..items {
            let mut row = names(i).iter().find_map(|n| self.rows.get(n.as_str()).copied());
            if row.is_none() && self.by_content {
                row = self.rows.get(text_id(&text(i)).as_str()).copied();
            }
            match row {
                Some(row) => {
                    self.used[row] = true;
                    out.extend_from_slice(self.table.vector(row));
                }
                None => missing.push(names(i).remove(0)),
            }
        }
        if let Some(first) = missing.first() {
            return Err(Error::input(
                Location::file(&self.table.named_in),
                format!(
                    "no vector for {} of the {items} {what} (the first: {first:?}); an id names {naming}",
                    missing.len()
                ),
            ));
        }
        Ok(out)
    }

    /// Refuses vectors that named nothing looked up, at the first one's line.
    fn all_used(&self, what: &str) -> Result<()> {
        let unused: Vec<usize> = (0..self.table.len()).filter(|&r| !self.used[r]).collect();
        match unused.first() {
            None => Ok(()),
            Some(&row) => Err(Error::input(
                Location::line(&self.table.named_in, self.table.lines[row]),
                format!(
                    "{:?} names none of {what} ({} such ids of {}): vectors are made for one chunking and one golden set",
                    self.table.ids[row],
                    unused.len(),
                    self.table.len()
                ),
            )),
        }
    }
}

const QUESTION_IDS: &str = "a question by its id in the golden set, or `sha256:` of its text";
const CHUNK_IDS: &str = "a chunk (`doc@start-end`, as `ragsweep vectors` writes them), a document the chunker made one chunk of (chunker `none`), or `sha256:` of the chunk's indexed text";

/// Reads and checks one side of the vectors in `dir` as [`resolve`] would (values, dimension
/// `dim` or any when 0, ids named once), without matching ids to chunks; returns the dimension.
pub fn check(dir: &Path, role: Role, dim: usize) -> Result<usize> {
    let table = Table::read(dir, role, dim)?;
    Lookup::new(&table)?;
    Ok(table.dim)
}

/// A vectors model's query vectors (in `cases` order) and passage vectors (per chunk set, in
/// chunk order), every id checked both ways.
pub struct Brought {
    pub queries: Vec<f32>,
    pub passages: Vec<Vec<f32>>,
}

/// Reads the vectors in `dir` (of dimension `dim`) for `cases` and every chunk of `sets`.
pub fn resolve(dir: &Path, dim: usize, corpus: &Corpus, cases: &[GoldenCase], sets: &[&ChunkSet]) -> Result<Brought> {
    let table = Table::read(dir, Role::Query, dim)?;
    let mut lookup = Lookup::new(&table)?;
    let queries = lookup.vectors(
        cases.len(),
        |i| vec![cases[i].id.clone()],
        |i| cases[i].question.clone(),
        "questions",
        QUESTION_IDS,
    )?;
    lookup.all_used("the golden set's questions")?;
    let table = Table::read(dir, Role::Passage, dim)?;
    let mut lookup = Lookup::new(&table)?;
    let mut passages = Vec::with_capacity(sets.len());
    for set in sets {
        let mut per_doc = vec![0usize; corpus.docs.len()];
        set.chunks.iter().for_each(|c| per_doc[c.doc as usize] += 1);
        // A document's id names its chunk when the chunker made one of it.
        let names = |i: usize| {
            let chunk = &set.chunks[i];
            let mut names = vec![chunk.id.clone()];
            if per_doc[chunk.doc as usize] == 1 {
                names.push(corpus.docs[chunk.doc as usize].id.clone());
            }
            names
        };
        let what = format!("chunks of {}", set.spec);
        passages.push(lookup.vectors(set.len(), names, |i| set.indexed_text(corpus, i), &what, CHUNK_IDS)?);
    }
    let specs: Vec<String> = sets.iter().map(|s| s.spec.to_string()).collect();
    lookup.all_used(&format!("the chunks of {}", specs.join(", ")))?;
    Ok(Brought { queries, passages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_id_is_the_hex_sha256_of_its_utf8() {
        // printf 'férias' | sha256sum
        assert_eq!(text_id("férias"), format!("sha256:{:x}", sha2::Sha256::digest("férias".as_bytes())));
        assert_eq!(text_id("").len(), SHA256.len() + 64);
        assert_eq!(text_id(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
