//! Build stages shared between cells: chunk sets, embeddings, token counts, and the
//! content-keyed on-disk cache that keeps them across runs.

pub(crate) mod brought;
pub(crate) mod cache;
pub mod chunk;
pub mod cost;
pub mod cross_encoder;
pub mod embed;
pub mod endpoint;
pub(crate) mod http_embed;
pub(crate) mod http_rerank;
pub(crate) mod onnx_graph;
