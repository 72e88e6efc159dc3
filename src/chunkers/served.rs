//! The chunks of an index a team already serves: the rows of its table or collection, each
//! found in its document as the corpus reads it, so that labels (document, section, evidence
//! span) judge them exactly as they judge ragsweep's own chunkers.
//!
//! A row names its document (`id_field`) and holds its text (`text_field`); the text is
//! located in that document with white space compared loosely (a pipeline that joined lines or
//! trimmed blanks still matches). A row whose document is not in the corpus, or whose text is
//! not in its document, stops the run: a row that cannot be judged would be scored as a miss.

use std::collections::HashMap;
use std::ops::Range;

pub use crate::vocab::ServedRows;

/// Text with every run of white space as one blank, and the byte offset in the original of
/// each of its bytes (one past the end appended).
pub struct Collapsed {
    pub text: String,
    offsets: Vec<usize>,
}

impl Collapsed {
    pub fn of(text: &str) -> Collapsed {
        let mut out =
            Collapsed { text: String::with_capacity(text.len()), offsets: Vec::with_capacity(text.len() + 1) };
        let mut blank = false;
        for (at, c) in text.char_indices() {
            if c.is_whitespace() {
                blank = true;
                continue;
            }
            if blank && !out.text.is_empty() {
                out.text.push(' ');
                out.offsets.push(at);
            }
            blank = false;
            out.text.push(c);
            out.offsets.extend(std::iter::repeat_n(at, c.len_utf8()));
        }
        out.offsets.push(text.len());
        out
    }

    /// The original span of the collapsed bytes `r` (its last byte's char included whole).
    fn original(&self, r: Range<usize>, text: &str) -> Range<usize> {
        let start = self.offsets[r.start];
        let last = self.offsets[r.end - 1];
        let end = last + text[last..].chars().next().map_or(0, char::len_utf8);
        start..end
    }
}

/// `row`'s span in `doc` (its collapsed form, given): the first place its text occurs with
/// white space compared loosely; `None` when it does not occur or is blank.
pub fn locate(doc: &str, collapsed: &Collapsed, row: &str) -> Option<Range<usize>> {
    let needle = Collapsed::of(row).text;
    if needle.is_empty() {
        return None;
    }
    let at = collapsed.text.find(&needle)?;
    Some(collapsed.original(at..at + needle.len(), doc))
}

/// Which chunk a row of a served index is: by its document and its text, as the chunk set
/// placed it; with `whole_document_when_not_found`, a row its document does not hold is that
/// document's whole-document chunk.
pub struct RowChunks {
    by_text: HashMap<(String, String), u32>,
    whole: Option<HashMap<String, u32>>,
}

impl RowChunks {
    /// `chunks`: each chunk's document id, text, and whether it spans its whole document, in
    /// ordinal order.
    pub fn new(chunks: &[(String, String, bool)], whole_document_when_not_found: bool) -> RowChunks {
        let by_text =
            chunks.iter().enumerate().map(|(i, (doc, text, _))| ((doc.clone(), Collapsed::of(text).text), i as u32));
        let whole = chunks.iter().enumerate().filter(|(_, c)| c.2).map(|(i, (doc, _, _))| (doc.clone(), i as u32));
        RowChunks { by_text: by_text.collect(), whole: whole_document_when_not_found.then(|| whole.collect()) }
    }

    /// The chunk of the row of document `doc` holding `text`; `None` when the chunk set has none
    /// (the index changed since it was read).
    pub fn get(&self, doc: &str, text: &str) -> Option<u32> {
        let placed = self.by_text.get(&(doc.to_string(), Collapsed::of(text).text)).copied();
        placed.or_else(|| self.whole.as_ref()?.get(doc).copied())
    }
    /// The chunks of a search's rows (document id, text, score) in the order the engine returned
    /// them, each chunk once, at its first (best) row; `Err` names the document of a row the run
    /// did not read (the index changed during the run).
    pub fn ranked(&self, rows: impl IntoIterator<Item = (String, String, f32)>) -> Result<Vec<(u32, f32)>, String> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for (doc, text, score) in rows {
            let chunk = self.get(&doc, &text).ok_or(doc)?;
            if seen.insert(chunk) {
                out.push((chunk, score));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_found_with_white_space_compared_loosely() {
        let doc = "Art. 5º  Para os fins\ndesta Lei, considera-se:\n\n I - dado pessoal";
        let c = Collapsed::of(doc);
        let span = locate(doc, &c, "Para os fins desta Lei,").unwrap();
        assert_eq!(&doc[span], "Para os fins\ndesta Lei,");
        let span = locate(doc, &c, "  considera-se: I - dado pessoal \n").unwrap();
        assert_eq!(&doc[span], "considera-se:\n\n I - dado pessoal");
        assert_eq!(locate(doc, &c, "dados sensíveis"), None);
        assert_eq!(locate(doc, &c, " \n "), None);
    }
}
