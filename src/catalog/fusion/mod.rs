//! The fusion methods of a hybrid retriever. A method is its file here: its name, the settings
//! it reads and how, its configuration columns, how a manifest records it, and what each hit of
//! a list adds to the fused score ([`Fuse`]). [`METHODS`] lists them once; `fusion_from`
//! dispatches by name and refuses another method's settings by construction, and the keys,
//! columns and help that name methods are read from the list.

mod convex;
mod dbsf;
mod rrf;

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::Result;
use crate::grid::{Bad, Combo};
use crate::retrieve::fusion::Fuse;

/// A fusion method as its file declares it.
pub trait FusionMethod: Fuse + Clone + Serialize + DeserializeOwned + 'static {
    /// Its `fusion = "…"` name, and its `method` in a manifest.
    const NAME: &'static str;
    /// The settings it reads from a `[[retrievers]]` table.
    const KEYS: &'static [&'static str];
    /// Its configuration columns, in the order [`FusionMethod::values`] gives their values.
    const COLUMNS: &'static [&'static str];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Self>;
    fn values(&self) -> Vec<String>;
}

/// What a recorded method can do, whatever its type: written once for every [`FusionMethod`].
trait Method: Fuse {
    fn name(&self) -> &'static str;
    fn fields(&self) -> Value;
    /// Its own configuration columns with their values.
    fn own_columns(&self) -> Vec<(&'static str, String)>;
}

impl<T: FusionMethod> Method for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn fields(&self) -> Value {
        serde_json::to_value(self).expect("a fusion method's settings serialize")
    }

    fn own_columns(&self) -> Vec<(&'static str, String)> {
        T::COLUMNS.iter().copied().zip(self.values()).collect()
    }
}

/// A hybrid's fusion: one method with its settings.
#[derive(Clone)]
pub struct Fusion(Arc<dyn Method>);

impl Fusion {
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// The method as a cell's retriever scores with it.
    pub fn fuse(&self) -> Arc<dyn Fuse> {
        self.0.clone()
    }

    /// Every method's columns ([`columns`]), this one's values filled in and the others' empty.
    pub fn columns(&self) -> Vec<(&'static str, String)> {
        let own = self.0.own_columns();
        let value = |c: &str| own.iter().find(|(name, _)| *name == c).map(|(_, v)| v.clone()).unwrap_or_default();
        columns().into_iter().map(|c| (c, value(c))).collect()
    }
}

impl fmt::Display for Fusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Fusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fusion({self})")
    }
}

impl PartialEq for Fusion {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && self.0.fields() == other.0.fields()
    }
}

/// `{"method": its name, its settings…}`.
impl Serialize for Fusion {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        super::record::write_tagged(serializer, "method", self.name(), self.0.fields())
    }
}

impl<'de> Deserialize<'de> for Fusion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        super::record::read_tagged(deserializer, "method", "fusion", |name, fields| {
            METHODS.iter().find(|k| k.name == name).map(|kind| (kind.read)(fields))
        })
    }
}

/// A fusion method's entry in [`METHODS`].
pub struct FusionKind {
    pub name: &'static str,
    pub keys: &'static [&'static str],
    columns: &'static [&'static str],
    parse: fn(&Combo<'_>, Bad<'_>) -> Result<Fusion>,
    read: fn(Value) -> serde_json::Result<Fusion>,
}

impl FusionKind {
    pub const fn of<T: FusionMethod>() -> FusionKind {
        FusionKind {
            name: T::NAME,
            keys: T::KEYS,
            columns: T::COLUMNS,
            parse: parse_shared::<T>,
            read: read_shared::<T>,
        }
    }
}

fn parse_shared<T: FusionMethod>(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Fusion> {
    Ok(Fusion(Arc::new(T::parse(combo, bad)?)))
}

fn read_shared<T: FusionMethod>(fields: Value) -> serde_json::Result<Fusion> {
    Ok(Fusion(Arc::new(serde_json::from_value::<T>(fields)?)))
}

/// Every fusion method.
pub const METHODS: [FusionKind; 3] =
    [FusionKind::of::<rrf::Rrf>(), FusionKind::of::<convex::Convex>(), FusionKind::of::<dbsf::Dbsf>()];

/// Every method's settings, each once.
pub fn keys() -> Vec<&'static str> {
    super::distinct(METHODS.iter().flat_map(|m| m.keys.iter().copied()))
}

/// Every method's configuration columns, each once, in the order of [`METHODS`].
fn columns() -> Vec<&'static str> {
    super::distinct(METHODS.iter().flat_map(|m| m.columns.iter().copied()))
}

/// The method `fusion = "…"` names, read with its settings; another method's settings refused.
pub(super) fn fusion_from(combo: &Combo<'_>, bad: Bad<'_>) -> Result<Fusion> {
    let names = || METHODS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ");
    let (method, span) = match combo.get("fusion") {
        Some((toml::Value::String(s), span)) => (s.as_str(), span),
        Some((v, span)) => return Err(bad(span, format!("`fusion` must be a string, found {}", v.type_str()))),
        None => return Err(bad(combo.kind.1.clone(), format!("kind \"hybrid\" needs `fusion` ({})", names()))),
    };
    let Some(kind) = METHODS.iter().find(|m| m.name == method) else {
        return Err(bad(span, format!("unknown fusion {method:?} (expected {})", names())));
    };
    let others: Vec<&str> = keys().into_iter().filter(|k| !kind.keys.contains(k)).collect();
    super::forbid(combo, &others, &format!("does not apply to fusion = {method:?}"), bad)?;
    (kind.parse)(combo, bad)
}

#[cfg(test)]
mod tests {
    use super::convex::{Convex, Norm};
    use super::dbsf::Dbsf;
    use super::rrf::Rrf;
    use super::*;
    use crate::retrieve::fusion::fuse;
    use crate::retrieve::hits::Hit;
    use crate::retrieve::source::Side;

    fn hits(list: &[(u32, f32)]) -> Vec<Hit> {
        list.iter().map(|&(chunk, score)| Hit { chunk, score }).collect()
    }

    fn order(h: &[Hit]) -> Vec<u32> {
        h.iter().map(|h| h.chunk).collect()
    }

    /// A lexical and a dense list fused.
    fn fuse2(lex: &[Hit], den: &[Hit], fusion: &dyn Fuse, depth: usize) -> Vec<Hit> {
        fuse(&[(lex, Side::Lexical), (den, Side::Dense)], fusion, depth)
    }

    #[test]
    fn every_method_is_listed_once_and_records_itself_as_read() {
        let names: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), names.iter().collect::<std::collections::BTreeSet<_>>().len());
        for (json, label) in [
            (r#"{"method":"rrf","k":60.0}"#, "rrf(k=60)"),
            (r#"{"method":"convex","alpha":0.7,"norm":"zscore"}"#, "convex(alpha=0.7,zscore)"),
            (r#"{"method":"dbsf"}"#, "dbsf"),
        ] {
            let fusion: Fusion = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&fusion).unwrap(), json);
            assert_eq!(fusion.to_string(), label);
            assert_eq!(fusion, fusion.clone());
        }
        assert!(serde_json::from_str::<Fusion>(r#"{"method":"nope"}"#).is_err());
    }

    #[test]
    fn rrf_by_hand() {
        // lexical: 1, 2, 3; dense: 3, 1. k = 60.
        let lex = hits(&[(1, 9.0), (2, 5.0), (3, 1.0)]);
        let den = hits(&[(3, 0.9), (1, 0.8)]);
        let f = fuse2(&lex, &den, &Rrf { k: 60.0 }, 10);
        assert_eq!(order(&f), [1, 3, 2]);
        assert!((f[0].score - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-7);
        assert!((f[1].score - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert!((f[2].score - 1.0 / 62.0).abs() < 1e-7);
    }

    #[test]
    fn convex_minmax_by_hand() {
        let lex = hits(&[(1, 10.0), (2, 6.0), (3, 2.0)]); // 1.0, 0.5, 0.0
        let den = hits(&[(3, 0.9), (2, 0.5)]); // 1.0, 0.0
        let f = fuse2(&lex, &den, &Convex { alpha: 0.7, norm: Norm::MinMax }, 10);
        // 1: 0.3·1 = 0.3; 2: 0.3·0.5 + 0.7·0 = 0.15; 3: 0.3·0 + 0.7·1 = 0.7
        assert_eq!(order(&f), [3, 1, 2]);
        assert!((f[0].score - 0.7).abs() < 1e-6 && (f[1].score - 0.3).abs() < 1e-6 && (f[2].score - 0.15).abs() < 1e-6);
        // alpha 0 is the lexical ranking, alpha 1 the dense one (then lexical-only items).
        assert_eq!(order(&fuse2(&lex, &den, &Convex { alpha: 0.0, norm: Norm::MinMax }, 3)), [1, 2, 3]);
        assert_eq!(order(&fuse2(&lex, &den, &Convex { alpha: 1.0, norm: Norm::MinMax }, 2)), [3, 1]);
    }

    #[test]
    fn zscore_and_dbsf_by_hand() {
        let lex = hits(&[(1, 3.0), (2, 1.0)]); // mean 2, std 1: +1, -1
        let den = hits(&[(2, 0.8), (1, 0.4)]); // mean 0.6, std 0.2: +1, -1
        let z = fuse2(&lex, &den, &Convex { alpha: 0.5, norm: Norm::ZScore }, 10);
        assert!(z.iter().all(|h| h.score.abs() < 1e-6), "{z:?}");
        // dbsf: (s - (μ - 3σ)) / 6σ → 4/6 and 2/6 on each side.
        let d = fuse2(&lex, &den, &Dbsf {}, 10);
        assert!(d.iter().all(|h| (h.score - 1.0).abs() < 1e-6), "{d:?}");
    }

    #[test]
    fn empty_sides_and_depth() {
        let lex = hits(&[(4, 2.0), (5, 1.0)]);
        assert_eq!(order(&fuse2(&lex, &[], &Dbsf {}, 1)), [4]);
        assert_eq!(order(&fuse2(&[], &lex, &Rrf { k: 10.0 }, 5)), [4, 5]);
        assert!(fuse2(&[], &[], &Convex { alpha: 0.5, norm: Norm::None }, 5).is_empty());
    }

    #[test]
    fn n_lists_fuse_and_convex_shares_a_side_equally() {
        let a = hits(&[(1, 4.0), (2, 2.0)]);
        let b = hits(&[(2, 9.0), (3, 1.0)]);
        let c = hits(&[(3, 0.9), (1, 0.1)]);
        let lists = [(&a[..], Side::Lexical), (&b[..], Side::Lexical), (&c[..], Side::Dense)];
        // rrf k=0: 1 → 1 + 1/2; 2 → 1/2 + 1; 3 → 1/2 + 1 (ties broken by chunk id).
        assert_eq!(order(&fuse(&lists, &Rrf { k: 0.0 }, 10)), [1, 2, 3]);
        // convex alpha 0.5, minmax: each lexical list weighs 0.25, the dense list 0.5.
        let f = fuse(&lists, &Convex { alpha: 0.5, norm: Norm::MinMax }, 10);
        let score = |chunk: u32| f.iter().find(|h| h.chunk == chunk).unwrap().score;
        assert!((score(1) - 0.25).abs() < 1e-6 && (score(2) - 0.25).abs() < 1e-6 && (score(3) - 0.5).abs() < 1e-6);
        assert_eq!(fuse2(&a, &c, &Dbsf {}, 10).len(), 3);
    }
}
