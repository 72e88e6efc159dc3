//! A bi-encoder reranker: `rerank = "<model>"` on any retriever reorders the first
//! `rerank_candidates` chunks of its list (100 by default; at least the asked depth) by the
//! cosine of the question's and each chunk's vectors under that model, in process, after any
//! filter in the query: lexical candidates reordered by meaning, or a small model's candidates
//! by a larger one. A dense list is already in its own model's cosine order, so reranking it by
//! that same model is refused.

use std::sync::Arc;

use toml::Value;

use super::exact::Exact;
use super::RetrieverSpec;
use super::{Bad, BuiltIndex, Config, IndexIdentity, IndexInput, SourceKind};
use crate::engine::servers::Engines;
use crate::error::Result;
use crate::grid::{int, Combo};
use crate::retrieve::source::RankingSource;

/// The keys a reranker adds to any retriever kind.
pub const KEYS: [&str; 2] = ["rerank", "rerank_candidates"];

/// Chunks reordered when `rerank_candidates` is absent.
pub const CANDIDATES: usize = 100;

/// The reranker's source: its model's exact vectors, shared with any exact index of the model.
#[derive(Debug)]
pub struct Rerank {
    pub model: String,
}

impl Rerank {
    fn exact(&self) -> Exact {
        Exact { model: self.model.clone() }
    }
}

impl SourceKind for Rerank {
    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn label(&self) -> String {
        format!("rerank({})", self.model)
    }

    fn config(&self, out: &mut Config) {
        out.push(("rerank", self.model.clone()));
    }

    fn index_identity(&self) -> IndexIdentity {
        self.exact().index_identity()
    }

    fn index_name(&self) -> String {
        self.exact().index_name()
    }

    fn build(&self, input: &IndexInput<'_>) -> Result<BuiltIndex> {
        self.exact().build(input)
    }

    fn source<'a>(&self, index: &'a BuiltIndex, engines: &'a Engines) -> Arc<dyn RankingSource + 'a> {
        self.exact().source(index, engines)
    }
}

/// A reranker as a combination declares it.
pub struct Declared {
    model: String,
    candidates: usize,
    at: std::ops::Range<usize>,
}

/// The combination without the reranker's keys, and the reranker they declare (`None` for
/// no `rerank` or `rerank = "none"`).
pub fn take<'a>(combo: &Combo<'a>, bad: Bad<'_>) -> Result<(Combo<'a>, Option<Declared>)> {
    let rest = combo.without(&KEYS);
    let model = match combo.get("rerank") {
        None => None,
        Some((Value::String(s), _)) if s == "none" => None,
        Some((Value::String(s), span)) => Some((s.clone(), span)),
        Some((v, span)) => {
            return Err(bad(span, format!("`rerank` takes a model name or \"none\", found {}", v.type_str())))
        }
    };
    let Some((model, at)) = model else {
        if let Some((_, span)) = combo.get("rerank_candidates") {
            return Err(bad(span, "`rerank_candidates` needs a reranker (`rerank = \"<model>\"`)".into()));
        }
        return Ok((rest, None));
    };
    let candidates = int(combo, "rerank_candidates", Some(CANDIDATES), bad)?;
    if candidates == 0 {
        return Err(bad(combo.span_of("rerank_candidates"), "`rerank_candidates` must be at least 1".into()));
    }
    Ok((rest, Some(Declared { model, candidates, at })))
}

/// `first` reranked as declared.
pub fn wrap(first: RetrieverSpec, declared: Option<Declared>, bad: Bad<'_>) -> Result<RetrieverSpec> {
    let Some(Declared { model, candidates, at }) = declared else { return Ok(first) };
    if first.family() == "dense" && first.model() == Some(&model) {
        return Err(bad(
            at,
            format!("a dense list is already in {model:?}'s cosine order: rerank it with another model"),
        ));
    }
    Ok(RetrieverSpec::Rerank { first: Box::new(first), model, candidates })
}
