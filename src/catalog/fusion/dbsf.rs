//! Distribution-based score fusion: each list mapped by (s − (μ − 3σ)) / 6σ, then summed.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::FusionMethod;
use crate::error::Result;
use crate::grid::{Bad, Combo};
use crate::retrieve::fusion::{mean_std, Fuse};
use crate::retrieve::hits::Hit;
use crate::retrieve::source::Side;

/// Braced, so that it is recorded as `{}` beside its method's name.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dbsf {}

impl FusionMethod for Dbsf {
    const NAME: &'static str = "dbsf";
    const KEYS: &'static [&'static str] = &[];
    const COLUMNS: &'static [&'static str] = &[];

    fn parse(_: &Combo<'_>, _: Bad<'_>) -> Result<Self> {
        Ok(Dbsf {})
    }

    fn values(&self) -> Vec<String> {
        Vec::new()
    }
}

impl Fuse for Dbsf {
    fn contributions(&self, hits: &[Hit], _: Side, _: usize) -> Vec<f32> {
        if hits.is_empty() {
            return Vec::new();
        }
        let (mean, std) = mean_std(hits);
        let lo = mean - 3.0 * std;
        hits.iter().map(|h| if std > 0.0 { (h.score - lo) / (6.0 * std) } else { 0.5 }).collect()
    }
}

impl fmt::Display for Dbsf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dbsf")
    }
}
