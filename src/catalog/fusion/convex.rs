//! Convex combination: `alpha · dense + (1 − alpha) · lexical`, each list normalised by `norm`
//! first; the weight of a side is shared equally by its lists.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::FusionMethod;
use crate::error::Result;
use crate::grid::{choice, float, Bad, Combo};
use crate::retrieve::fusion::{mean_std, Fuse};
use crate::retrieve::hits::Hit;
use crate::retrieve::source::Side;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Convex {
    pub alpha: f64,
    pub norm: Norm,
}

/// How a list's scores are put on one scale before they are weighed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Norm {
    MinMax,
    ZScore,
    None,
}

impl Norm {
    /// Every normalisation by the name an experiment and a result give it (serde's too).
    const ALL: [(&'static str, Norm); 3] = [("minmax", Norm::MinMax), ("zscore", Norm::ZScore), ("none", Norm::None)];

    fn name(self) -> &'static str {
        Norm::ALL.iter().find(|(_, n)| *n == self).map(|(name, _)| *name).expect("every norm is listed")
    }

    /// The list's scores mapped by this normalisation.
    fn apply(self, hits: &[Hit]) -> Vec<f32> {
        if hits.is_empty() {
            return Vec::new();
        }
        match self {
            Norm::None => hits.iter().map(|h| h.score).collect(),
            Norm::MinMax => {
                let max = hits.iter().map(|h| h.score).fold(f32::NEG_INFINITY, f32::max);
                let min = hits.iter().map(|h| h.score).fold(f32::INFINITY, f32::min);
                let range = max - min;
                hits.iter().map(|h| if range > 0.0 { (h.score - min) / range } else { 1.0 }).collect()
            }
            Norm::ZScore => {
                let (mean, std) = mean_std(hits);
                hits.iter().map(|h| if std > 0.0 { (h.score - mean) / std } else { 0.0 }).collect()
            }
        }
    }
}

impl FusionMethod for Convex {
    const NAME: &'static str = "convex";
    const KEYS: &'static [&'static str] = &["alpha", "norm"];
    const COLUMNS: &'static [&'static str] = &["alpha", "norm"];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Self> {
        let alpha = float(combo, "alpha", 0.5, bad)?;
        if !(0.0..=1.0).contains(&alpha) {
            return Err(bad(combo.span_of("alpha"), "`alpha` must be between 0 and 1".into()));
        }
        let norm = choice(combo, "norm", Norm::MinMax, &Norm::ALL, bad)?;
        Ok(Convex { alpha, norm })
    }

    fn values(&self) -> Vec<String> {
        vec![(self.alpha as f32).to_string(), self.norm.name().into()]
    }
}

impl Fuse for Convex {
    fn contributions(&self, hits: &[Hit], side: Side, lists_on_side: usize) -> Vec<f32> {
        let alpha = self.alpha as f32;
        let weight = if side == Side::Dense { alpha } else { 1.0 - alpha } / lists_on_side.max(1) as f32;
        self.norm.apply(hits).iter().map(|s| weight * s).collect()
    }
}

impl fmt::Display for Convex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "convex(alpha={},{})", self.alpha as f32, self.norm.name())
    }
}
