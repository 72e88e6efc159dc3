//! The fusion methods of a hybrid retriever, each with its name, the settings it takes and how
//! they are read: `fusion_from` dispatches by name, refuses another method's settings and names
//! the methods in its messages from this one table. How each scores its lists is
//! `retrieve::fusion` (an exhaustive match: a method without scores does not compile).

use crate::error::Result;
use crate::grid::{choice, float, Bad, Combo};
use crate::vocab::{Fusion, Norm};

/// A fusion method as an experiment names it.
pub struct FusionKind {
    pub name: &'static str,
    /// The settings it reads from a `[[retrievers]]` table.
    pub keys: &'static [&'static str],
    pub parse: fn(&Combo<'_>, Bad<'_>) -> Result<Fusion>,
}

/// Every fusion method.
pub const METHODS: [FusionKind; 3] = [
    FusionKind { name: "rrf", keys: &["k"], parse: rrf },
    FusionKind { name: "convex", keys: &["alpha", "norm"], parse: convex },
    FusionKind { name: "dbsf", keys: &[], parse: |_, _| Ok(Fusion::Dbsf) },
];

impl Fusion {
    /// The method's name ([`METHODS`]).
    pub fn name(self) -> &'static str {
        match self {
            Fusion::Rrf { .. } => "rrf",
            Fusion::Convex { .. } => "convex",
            Fusion::Dbsf => "dbsf",
        }
    }
}

/// Reciprocal rank fusion: `k` (default 60) dampens the first ranks.
fn rrf(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Fusion> {
    let k = float(combo, "k", 60.0, bad)?;
    if k <= 0.0 {
        return Err(bad(combo.span_of("k"), "`k` must be positive".into()));
    }
    Ok(Fusion::Rrf { k: k as f32 })
}

/// `alpha · dense + (1 − alpha) · lexical` over lists normalised by `norm`.
fn convex(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Fusion> {
    let alpha = float(combo, "alpha", 0.5, bad)?;
    if !(0.0..=1.0).contains(&alpha) {
        return Err(bad(combo.span_of("alpha"), "`alpha` must be between 0 and 1".into()));
    }
    let norm = choice(combo, "norm", Norm::MinMax, &Norm::ALL, bad)?;
    Ok(Fusion::Convex { alpha: alpha as f32, norm })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_is_listed_under_its_own_name() {
        for kind in &METHODS {
            let sample = match kind.name {
                "rrf" => Fusion::Rrf { k: 60.0 },
                "convex" => Fusion::Convex { alpha: 0.5, norm: Norm::MinMax },
                _ => Fusion::Dbsf,
            };
            assert_eq!(sample.name(), kind.name);
        }
        let names: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), names.iter().collect::<std::collections::BTreeSet<_>>().len());
    }
}
