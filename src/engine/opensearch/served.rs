//! An OpenSearch index the team serves, read as it is: its documents read once through a scroll
//! (`id_field` and `text_field` of each `_source`) to make the cells' chunks, then searched with
//! the team's own query template, the question placed in it as a JSON string value (never as
//! JSON text), and the groups filter a `terms` filter on `acl_field` inside a `bool` query.
//! Nothing is created, written or refreshed there.

use serde_json::{json, Value};

use super::{fail, OpenSearchEngine};
use crate::chunkers::served::{RowChunks, ServedRows};
use crate::error::Result;
use crate::retrieve::hits::Hit;
use crate::retrieve::source::{Query, RankingSource, Restriction, Side, SourceScore};

/// Documents read per scroll page.
const PAGE: usize = 1000;

/// The placeholder of the question in a query template.
pub const PLACEHOLDER: &str = "{{query}}";

/// Each hit's (document id, text) from its `_source`; a hit without them stops the run.
fn hit_rows<'h>(
    index: &'h str,
    rows: &'h ServedRows,
    hits: &'h [Value],
) -> impl Iterator<Item = Result<(String, String, f32)>> + 'h {
    hits.iter().map(move |h| {
        let source = &h["_source"];
        let doc = crate::engine::field_text(source, &rows.id_field);
        let text = crate::engine::field_text(source, &rows.text_field);
        match (doc, text) {
            (Some(doc), Some(text)) => Ok((doc, text, h["_score"].as_f64().unwrap_or(f64::NAN) as f32)),
            _ => Err(fail(format!(
                "index {index}: document {} has no `{}` or no `{}` in its _source",
                h["_id"], rows.id_field, rows.text_field
            ))),
        }
    })
}

impl OpenSearchEngine {
    /// Every document of the served index as (document id, text), in index order, through a
    /// scroll that is released at the end.
    pub fn served_rows(&self, rows: &ServedRows) -> Result<Vec<(String, String)>> {
        let index = &rows.source;
        let fields = [&rows.id_field, &rows.text_field];
        let body = json!({"size": PAGE, "sort": ["_doc"], "_source": fields, "query": {"match_all": {}}});
        let mut page = self.request("POST", &format!("/{index}/_search?scroll=2m"), Some(&body))?;
        let mut out = Vec::new();
        let mut scroll = None;
        loop {
            scroll = page["_scroll_id"].as_str().map(str::to_string).or(scroll);
            let Value::Array(hits) = page["hits"]["hits"].take() else {
                return Err(fail(format!("index {index}: a scroll page without hits")));
            };
            for row in hit_rows(index, rows, &hits) {
                let (doc, text, _) = row?;
                out.push((doc, text));
            }
            let Some(id) = scroll.as_ref().filter(|_| !hits.is_empty()) else { break };
            page = self.request("POST", "/_search/scroll", Some(&json!({"scroll": "2m", "scroll_id": id})))?;
        }
        if let Some(id) = scroll {
            let _ = self.request("DELETE", "/_search/scroll", Some(&json!({"scroll_id": id})));
        }
        Ok(out)
    }
}

/// The team's query template with the question in each string that holds the placeholder.
pub fn fill(template: &Value, question: &str) -> Value {
    match template {
        Value::String(s) if s.contains(PLACEHOLDER) => Value::String(s.replace(PLACEHOLDER, question)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, question)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), fill(v, question))).collect()),
        other => other.clone(),
    }
}

/// A served index's search: the team's query, filtered in it on `acl_field` when asked.
pub struct OpenSearchServedSource<'a> {
    pub engine: &'a OpenSearchEngine,
    pub rows: &'a ServedRows,
    pub template: &'a Value,
    pub acl_field: Option<&'a str>,
    pub public_group: Option<&'a str>,
    pub chunk_of: &'a RowChunks,
    pub bytes: u64,
}

impl OpenSearchServedSource<'_> {
    fn query(&self, question: &str, restrict: Option<&Restriction<'_>>) -> Result<Value> {
        let query = fill(self.template, question);
        let Some(restrict) = restrict else { return Ok(query) };
        let field = self.acl_field.ok_or_else(|| fail("a filtered search of a served index needs its acl_field"))?;
        let groups: Vec<&str> = restrict.groups.iter().map(String::as_str).chain(self.public_group).collect();
        Ok(json!({"bool": {"must": [query], "filter": [{"terms": {field: groups}}]}}))
    }

    /// The index's hits for `query` as ranked chunks, each once.
    fn ranked(&self, query: Value, size: usize) -> Result<Vec<Hit>> {
        let index = &self.rows.source;
        let fields = json!([&self.rows.id_field, &self.rows.text_field]);
        let hits = self.engine.hits(index, query, size.min(super::MAX_WINDOW), fields)?;
        let rows = hit_rows(index, self.rows, &hits).collect::<Result<Vec<_>>>()?;
        let ranked = self.chunk_of.ranked(rows).map_err(|doc| {
            fail(format!(
                "index {index} returned a document of {doc:?} the run did not read: it changed during the run"
            ))
        })?;
        Ok(ranked.into_iter().map(|(chunk, score)| Hit { chunk, score }).collect())
    }
}

impl RankingSource for OpenSearchServedSource<'_> {
    fn search(&self, query: &Query<'_>, depth: usize, restrict: Option<&Restriction<'_>>) -> Result<Vec<Hit>> {
        self.ranked(self.query(query.text, restrict)?, depth)
    }

    /// The chunk's score in the served index's own ranking (its rows searched deep enough to
    /// find it, up to the window), without the index's explanation: a served chunk may be
    /// several documents.
    fn explain(&self, query: &Query<'_>, chunk: u32) -> Result<SourceScore> {
        let score = self.rescore(query, &[chunk])?[0];
        Ok(SourceScore { score: score.is_finite().then_some(score), parts: Vec::new(), bm25: None })
    }

    fn rescore(&self, query: &Query<'_>, chunks: &[u32]) -> Result<Vec<f32>> {
        let hits = self.ranked(self.query(query.text, None)?, super::MAX_WINDOW)?;
        let score_of = |c: u32| hits.iter().find(|h| h.chunk == c).map_or(f32::NEG_INFINITY, |h| h.score);
        Ok(chunks.iter().map(|&c| score_of(c)).collect())
    }

    fn size_bytes(&self) -> u64 {
        self.bytes
    }

    fn side(&self) -> Side {
        Side::Lexical
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A question is a JSON string where the placeholder was, never JSON text.
    #[test]
    fn the_question_fills_the_template_as_a_string_value() {
        let template = json!({"multi_match": {"query": "{{query}}", "fields": ["title^2", "body"]}});
        let question = "\"}, \"match_all\": {\"";
        let filled = fill(&template, question);
        assert_eq!(filled["multi_match"]["query"], json!(question));
        assert_eq!(filled["multi_match"]["fields"], template["multi_match"]["fields"]);
        assert_eq!(filled.as_object().unwrap().len(), 1);
    }
}
