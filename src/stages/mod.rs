//! Build stages shared between cells: chunk sets, embeddings, token counts, and the
//! content-keyed on-disk cache that keeps them across runs.

pub mod brought;
pub mod cache;
pub mod chunk;
pub mod cost;
pub mod cross_encoder;
pub mod embed;
pub mod endpoint;
pub mod http_embed;
pub mod http_rerank;
pub mod onnx_graph;
