//! The HNSW graph in process: `kind = "dense"` with `index = "hnsw"` (`m`, `ef_construction`
//! built into the graph, `ef_search` at query time). Measured against the exact scan.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    exact_of, hnsw_params, Bad, BuiltIndex, Config, DenseIndexKind, DenseIndexSpec, IndexIdentity, IndexInput,
    SourceKind,
};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::Combo;
use crate::retrieve::source::{HnswSource, RankingSource};
use crate::retrieve::{HnswIndex, HnswParams};
use crate::stages::cache;
use crate::vocab::EngineKind;

/// `m`, `ef_construction`, `ef_search` when absent: the graph parameters hnswlib suggests for
/// recall-oriented use.
pub const DEFAULTS: (usize, usize, usize) = (16, 200, 128);

#[derive(Debug)]
pub struct Hnsw {
    pub model: String,
    pub m: usize,
    pub ef_construction: usize,
    pub ef_search: usize,
}

/// The graph's parameters: `m` and `ef_construction` build it, `ef_search` walks it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct HnswSpec {
    pub m: usize,
    pub ef_construction: usize,
    pub ef_search: usize,
}

impl DenseIndexKind for HnswSpec {
    const TYPE: &'static str = "hnsw";
    const ENGINE: Option<EngineKind> = None;
    const KEYS: &'static [&'static str] = &super::HNSW_KEYS;

    /// `m` (2 to 255), `ef_construction`, `ef_search`.
    fn parse(combo: &Combo<'_>, bad: Bad<'_>) -> Result<HnswSpec> {
        let (m, ef_construction, ef_search) = hnsw_params(combo, bad)?;
        if !(2..=255).contains(&m) {
            return Err(bad(combo.span_of("m"), "`m` must be between 2 and 255".into()));
        }
        Ok(HnswSpec { m, ef_construction, ef_search })
    }
}

impl DenseIndexSpec for HnswSpec {
    fn kind(&self, model: &str) -> Box<dyn SourceKind> {
        let HnswSpec { m, ef_construction, ef_search } = *self;
        Box::new(Hnsw { model: model.into(), m, ef_construction, ef_search })
    }
}

/// The columns of an HNSW index, shared by the kinds that build one.
pub(super) fn config(out: &mut Config, m: usize, ef_construction: usize, ef_search: usize) {
    out.push(("index", "hnsw".into()));
    out.push(("m", m.to_string()));
    out.push(("ef_construction", ef_construction.to_string()));
    out.push(("ef_search", ef_search.to_string()));
}

impl SourceKind for Hnsw {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn label(&self) -> String {
        format!("dense({},hnsw,m={},efc={},ef={})", self.model, self.m, self.ef_construction, self.ef_search)
    }

    fn config(&self, out: &mut Config) {
        out.push(("model", self.model.clone()));
        config(out, self.m, self.ef_construction, self.ef_search);
    }

    fn index_identity(&self) -> IndexIdentity {
        IndexIdentity::of::<HnswIndex>((self.model.clone(), self.m, self.ef_construction))
    }

    fn index_name(&self) -> String {
        format!("hnsw({},m={},efc={})", self.model, self.m, self.ef_construction)
    }

    fn graph(&self) -> Option<(usize, usize, usize)> {
        Some((self.m, self.ef_construction, self.ef_search))
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        let (info, _) = input.vectors();
        let exact = exact_of(input);
        let params = HnswParams { m: self.m, ef_construction: self.ef_construction };
        let key = cache::key(
            "hnsw",
            &[
                crate::retrieve::dense::GRAPH_VERSION.as_bytes(),
                info.key().as_bytes(),
                input.text_key,
                &(params.m as u64).to_le_bytes(),
                &(params.ef_construction as u64).to_le_bytes(),
            ],
        );
        let built = input.store.get_or_build(
            "hnsw",
            &key,
            |dir| HnswIndex::build(exact.clone(), params).write(dir),
            |dir| HnswIndex::open(dir, exact.clone()),
        )?;
        let (index, record) = built.into_parts();
        Ok(BuiltIndex { bytes: index.size_bytes(), index: Box::new(index), record: Some(record) })
    }

    fn source<'a>(&self, index: &'a BuiltIndex, _: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        Arc::new(HnswSource { index: index.get::<HnswIndex>(), ef_search: self.ef_search })
    }
}
