//! In-process BM25 (tantivy): `kind = "bm25"`, and the lexical side of an in-process hybrid.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::LexicalSpec;
use super::{analyzer_from, Bad, BuiltIndex, Config, IndexIdentity, IndexInput, SourceKind};
use crate::analyze::{Analyzer, AnalyzerKind};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{float, Combo};
use crate::retrieve::source::{Bm25Source, RankingSource};
use crate::retrieve::Bm25Index;
use crate::stages::cache;
use crate::vocab::Bm25Params;

/// Its keys in a `[[retrievers]]` table.
pub const KEYS: [&str; 3] = ["analyzer", "k1", "b"];

/// In-process BM25 over the analyzer's terms; what the manifest records of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bm25 {
    pub analyzer: AnalyzerKind,
    #[serde(flatten)]
    pub params: Bm25Params,
}

/// `analyzer`, `k1` (0.9) and `b` (0.4).
pub fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<LexicalSpec> {
    let analyzer = analyzer_from(combo, bad)?;
    Ok(LexicalSpec { analyzer, params: params(combo, Bm25Params { k1: 0.9, b: 0.4 }, bad)?, full_text: None })
}

/// `k1` (non-negative) and `b` (between 0 and 1), `default` where absent.
pub fn params(combo: &Combo<'_>, default: Bm25Params, bad: Bad<'_>) -> Result<Bm25Params> {
    let k1 = float(combo, "k1", default.k1.into(), bad)?;
    let b = float(combo, "b", default.b.into(), bad)?;
    if k1 < 0.0 {
        return Err(bad(combo.span_of("k1"), "`k1` must be non-negative".into()));
    }
    if !(0.0..=1.0).contains(&b) {
        return Err(bad(combo.span_of("b"), "`b` must be between 0 and 1".into()));
    }
    Ok(Bm25Params { k1: k1 as f32, b: b as f32 })
}

impl SourceKind for Bm25 {
    fn label(&self) -> String {
        format!("bm25({},k1={},b={})", self.analyzer, self.params.k1, self.params.b)
    }

    fn config(&self, out: &mut Config) {
        out.push(("analyzer", self.analyzer.to_string()));
        out.push(("k1", self.params.k1.to_string()));
        out.push(("b", self.params.b.to_string()));
    }

    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<Bm25Index>(self.analyzer)
    }

    fn index_name(&self) -> String {
        format!("bm25({})", self.analyzer)
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let analyzer = Analyzer::new(self.analyzer);
        let key = cache::key("bm25", &[format!("{analyzer:?}").as_bytes(), input.text_key]);
        let built = input.store.get_or_build(
            "bm25",
            &key,
            |dir| Bm25Index::write(dir, &analyzer, (0..input.chunks).map(input.text)),
            |dir| Bm25Index::open(dir, &analyzer),
        )?;
        let (index, record) = built.into_parts();
        Ok(BuiltIndex { bytes: index.size_bytes(), index: Box::new(index), record: Some(record) })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, _: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        Arc::new(Bm25Source { index: index.get::<Bm25Index>(), params: self.params })
    }
}
