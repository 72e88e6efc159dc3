//! The exact scan in process: `kind = "dense"` with `index = "exact"` (the default). Every
//! vector is compared; the oracle every approximate kind is measured against.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    exact_of, Bad, BuiltIndex, Config, DenseIndexKind, DenseIndexSpec, IndexIdentity, IndexInput, SourceKind, HNSW_KEYS,
};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{forbid, Combo};
use crate::retrieve::source::{ExactSource, RankingSource};
use crate::retrieve::ExactIndex;
use crate::vocab::EngineKind;

#[derive(Debug)]
pub struct Exact {
    pub model: String,
}

/// The exact scan has no parameters of its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExactSpec {}

impl DenseIndexKind for ExactSpec {
    const TYPE: &'static str = "exact";
    const ENGINE: Option<EngineKind> = None;
    const KEYS: &'static [&'static str] = &[];

    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<ExactSpec> {
        forbid(combo, &HNSW_KEYS, "only applies to index = \"hnsw\"", bad)?;
        Ok(ExactSpec {})
    }
}

impl DenseIndexSpec for ExactSpec {
    fn kind(&self, model: &str) -> Box<dyn SourceKind> {
        Box::new(Exact { model: model.into() })
    }
}

impl SourceKind for Exact {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn label(&self) -> String {
        format!("dense({},exact)", self.model)
    }

    fn config(&self, out: &mut Config) {
        out.push(("model", self.model.clone()));
        out.push(("index", "exact".into()));
    }

    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<ExactIndex>(self.model.clone())
    }

    fn index_name(&self) -> String {
        format!("exact({})", self.model)
    }

    fn builds_nothing(&self) -> bool {
        true
    }

    /// The vectors themselves: nothing to build.
    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let index = exact_of(input);
        Ok(BuiltIndex { bytes: index.size_bytes(), index: Box::new(index), record: None })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, _: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        Arc::new(ExactSource { index: index.get::<ExactIndex>() })
    }
}
