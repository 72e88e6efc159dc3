//! Reciprocal rank fusion: each list adds 1 / (k + rank); `k` (default 60) dampens the first ranks.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::FusionMethod;
use crate::error::Result;
use crate::grid::{float, Bad, Combo};
use crate::retrieve::fusion::Fuse;
use crate::retrieve::hits::Hit;
use crate::retrieve::source::Side;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rrf {
    pub k: f64,
}

impl FusionMethod for Rrf {
    const NAME: &'static str = "rrf";
    const KEYS: &'static [&'static str] = &["k"];
    const COLUMNS: &'static [&'static str] = &["rrf_k"];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Self> {
        let k = float(combo, "k", 60.0, bad)?;
        if k <= 0.0 {
            return Err(bad(combo.span_of("k"), "`k` must be positive".into()));
        }
        Ok(Rrf { k })
    }

    fn values(&self) -> Vec<String> {
        vec![(self.k as f32).to_string()]
    }
}

impl Fuse for Rrf {
    fn contributions(&self, hits: &[Hit], _: Side, _: usize) -> Vec<f32> {
        let k = self.k as f32;
        (0..hits.len()).map(|r| 1.0 / (k + r as f32 + 1.0)).collect()
    }
}

impl fmt::Display for Rrf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rrf(k={})", self.k as f32)
    }
}
