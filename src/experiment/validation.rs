//! Each grid combination checked and read into its typed spec: chunkers here, retrievers by
//! the catalog (each kind reads its own keys), every error located at the key that caused it.

use toml::Value;

use crate::error::Result;
use crate::grid::{boolean, int, only, Bad, Combo};
use crate::vocab::{ChunkerKind, ChunkerSpec, RetrieverSpec};

use super::Abstain;

pub(super) fn chunker_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ChunkerSpec> {
    let sized = |size_key: &str| -> Result<(usize, usize)> {
        only(combo, &[size_key, "overlap", "title", "headings"], bad)?;
        let size = int(combo, size_key, None, bad)?;
        let overlap = int(combo, "overlap", Some(0), bad)?;
        if size == 0 {
            return Err(bad(combo.get(size_key).unwrap().1, format!("`{size_key}` must be at least 1")));
        }
        Ok((size, overlap))
    };
    let kind = match combo.kind.0 {
        "none" => {
            only(combo, &["title", "headings"], bad)?;
            ChunkerKind::None
        }
        "fixed" => {
            let (size, overlap) = sized("size")?;
            if overlap >= size {
                return Err(bad(combo.get("overlap").unwrap().1, "`overlap` must be smaller than `size`".into()));
            }
            ChunkerKind::Fixed { size, overlap }
        }
        "sentence" => {
            let (max_chars, overlap) = sized("max_chars")?;
            ChunkerKind::Sentence { max_chars, overlap }
        }
        "recursive" => {
            let (size, overlap) = sized("size")?;
            if overlap >= size {
                return Err(bad(combo.get("overlap").unwrap().1, "`overlap` must be smaller than `size`".into()));
            }
            ChunkerKind::Recursive { size, overlap }
        }
        "markdown" => {
            only(combo, &["max_chars", "title", "headings"], bad)?;
            let max_chars = combo.get("max_chars").map(|_| int(combo, "max_chars", None, bad)).transpose()?;
            if max_chars == Some(0) {
                return Err(bad(combo.get("max_chars").unwrap().1, "`max_chars` must be at least 1".into()));
            }
            ChunkerKind::Markdown { max_chars }
        }
        other => {
            return Err(bad(
                combo.kind.1.clone(),
                format!("unknown chunker kind {other:?} (expected none, fixed, sentence, recursive, markdown)"),
            ))
        }
    };
    Ok(ChunkerSpec { kind, title: boolean(combo, "title", bad)?, headings: boolean(combo, "headings", bad)? })
}

/// A retriever and its `abstain_below` floor (a number or `"calibrate"`), which any
/// retriever kind may sweep.
pub(super) fn retriever_cell_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<(RetrieverSpec, Option<Abstain>)> {
    let abstain = match combo.get("abstain_below") {
        None => None,
        Some((Value::Float(f), span)) if !f.is_finite() => {
            return Err(bad(span, format!("`abstain_below` must be a finite score, found {f}")));
        }
        Some((Value::Float(f), _)) => Some(Abstain::Below(*f)),
        Some((Value::Integer(i), _)) => Some(Abstain::Below(*i as f64)),
        Some((Value::String(s), _)) if s == "calibrate" => Some(Abstain::Calibrate),
        Some((v, span)) => {
            return Err(bad(span, format!("`abstain_below` takes a score or \"calibrate\", found {v}")));
        }
    };
    Ok((crate::catalog::retriever_from(&combo.without(&["abstain_below"]), bad)?, abstain))
}
