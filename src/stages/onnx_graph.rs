//! What an encoder's ONNX graph can read, found in the graph itself: the rows of its position
//! table. A `max_length` past them is not an error ONNX Runtime reliably raises (the fused
//! `EmbedLayerNormalization` kernel reads past its table), so it is refused before a text is
//! embedded. Only the few protobuf fields needed are decoded; tensor data is skipped.

/// The largest graph read: 2 GiB, protobuf's own limit (larger weights live in external data).
pub const MAX_GRAPH_BYTES: u64 = 2 << 30;

/// `onnx.ModelProto`, its graph only.
#[derive(Clone, PartialEq, prost::Message)]
struct Model {
    #[prost(message, optional, tag = "7")]
    graph: Option<Graph>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Graph {
    #[prost(message, repeated, tag = "1")]
    node: Vec<Node>,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<Tensor>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Node {
    #[prost(string, repeated, tag = "1")]
    input: Vec<String>,
    #[prost(string, tag = "4")]
    op_type: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Tensor {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(string, tag = "8")]
    name: String,
}

/// The positions the graph's encoder embeds: the rows of the table a fused
/// `EmbedLayerNormalization` node takes as its position embedding, else of the 2-D initializer
/// named as Hugging Face exports (`…position_embeddings…`) and ragsweep's converters (`emb.pos`)
/// name it; `None` when the graph has neither (or is not ONNX), so nothing is known to refuse.
pub fn positions(graph: &[u8]) -> Option<usize> {
    let graph = <Model as prost::Message>::decode(graph).ok()?.graph?;
    let rows = |name: &str| {
        graph
            .initializer
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.dims.first())
            .and_then(|&d| usize::try_from(d).ok())
    };
    let fused = graph.node.iter().find(|n| n.op_type == "EmbedLayerNormalization").and_then(|n| n.input.get(3));
    fused.and_then(|name| rows(name)).or_else(|| {
        graph
            .initializer
            .iter()
            .filter(|t| (t.name.contains("position_embeddings") || t.name.ends_with(".pos")) && t.dims.len() == 2)
            .find_map(|t| usize::try_from(t.dims[0]).ok())
    })
}

/// Refuses a `max_length` past the graph's position table, at the line of `settings` (the
/// model's `model.toml`) that sets it.
pub fn check_max_length(graph: &[u8], max_length: usize, settings: &std::path::Path) -> crate::error::Result<()> {
    let Some(positions) = positions(graph).filter(|&p| max_length > p) else { return Ok(()) };
    let line = crate::input::text::read(settings)
        .ok()
        .and_then(|t| t.lines().position(|l| l.trim_start().starts_with("max_length")))
        .map_or(1, |i| i + 1);
    Err(crate::error::Error::input(
        crate::error::Location::line(settings, line),
        format!(
            "`max_length = {max_length}`, but the graph's position table holds {positions} positions: a longer text would be read past it; set max_length to at most {positions}"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn tensor(name: &str, dims: &[i64]) -> Tensor {
        Tensor { dims: dims.to_vec(), name: name.into() }
    }

    #[test]
    fn the_fused_node_names_the_table_else_its_name_does() {
        let fused = Model {
            graph: Some(Graph {
                node: vec![Node {
                    input: ["ids", "segments", "words", "pos_table"].map(String::from).to_vec(),
                    op_type: "EmbedLayerNormalization".into(),
                }],
                initializer: vec![tensor("words", &[30522, 384]), tensor("pos_table", &[512, 384])],
            }),
        };
        assert_eq!(positions(&fused.encode_to_vec()), Some(512));
        let plain = Model {
            graph: Some(Graph {
                node: vec![],
                initializer: vec![tensor("embeddings.position_embeddings.weight", &[514, 768])],
            }),
        };
        assert_eq!(positions(&plain.encode_to_vec()), Some(514));
        assert_eq!(positions(&Model { graph: Some(Graph::default()) }.encode_to_vec()), None);
        assert_eq!(positions(b"not a graph \xff\xff"), None);
    }
}
