//! Each grid combination checked and read into its typed spec: chunkers by `crate::chunkers`,
//! retrievers by the catalog (each kind reads its own keys), every error located at the key
//! that caused it.

use toml::Value;

use crate::catalog::RetrieverSpec;
use crate::error::Result;
use crate::grid::{Bad, Combo};

use super::Abstain;

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
