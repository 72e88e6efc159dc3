//! Cell labels a reader can tell apart: only the configuration values that vary in the grid
//! (`recursive(300,60)+title bm25 analyzer=pt b=0.4`), so a swept parameter is never the part
//! a narrow column cuts off. The full label stays in `label`.

use std::collections::BTreeMap;

use crate::results::Row;

/// Chunker values, shown together as one token (`recursive(300,60)+title`) when any varies.
pub const CHUNKER_KEYS: [&str; 5] = ["chunker", "chunk_size", "chunk_overlap", "title", "headings"];

/// Keys whose absence from a cell's configuration means a value: a cell names an engine only
/// when one serves it.
const IMPLIED: [(&str, &str); 1] = [("engine", "in_process")];

/// A cell's value of configuration key `key` (the implied value when absent).
pub fn value_of<'r>(r: &'r Row, key: &str) -> &'r str {
    let implied = IMPLIED.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| *v);
    r.config.get(key).map_or(implied, String::as_str)
}

/// The configuration keys that vary among the cells of `rows`, in configuration order: keys
/// with at least two distinct non-empty values (a value only some retrievers have, such as
/// `model` when one model is swept beside BM25, is implied by the retriever and left out).
pub fn varying_keys(rows: &[Row]) -> Vec<String> {
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        for k in r.config.keys() {
            if !order.contains(&k) {
                order.push(k);
            }
        }
    }
    let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for &k in &order {
        let seen = values.entry(k).or_default();
        for v in rows.iter().map(|r| value_of(r, k)) {
            if !v.is_empty() && !seen.contains(&v) {
                seen.push(v);
            }
        }
    }
    order.into_iter().filter(|k| values[k].len() > 1).map(str::to_string).collect()
}

/// Each cell's label made of its varying values; the full label when nothing varies.
pub fn varying_labels(rows: &[Row]) -> BTreeMap<String, String> {
    let keys = varying_keys(rows);
    let chunker_varies = keys.iter().any(|k| CHUNKER_KEYS.contains(&k.as_str()));
    let mut out = BTreeMap::new();
    for r in rows {
        if out.contains_key(&r.cell) {
            continue;
        }
        let value = |k: &str| value_of(r, k);
        let mut parts: Vec<String> = Vec::new();
        if chunker_varies {
            parts.push(chunker_token(&value));
        }
        for k in keys.iter().filter(|k| !CHUNKER_KEYS.contains(&k.as_str())) {
            match (k.as_str(), value(k)) {
                (_, "") => {}
                ("retriever", v) => parts.push(v.to_string()),
                (k, v) => parts.push(format!("{k}={v}")),
            }
        }
        let label = if parts.is_empty() { r.label.clone() } else { parts.join(" ") };
        out.insert(r.cell.clone(), label);
    }
    out
}

/// `recursive(300,60)+title`, `markdown+title+headings`, `none`.
fn chunker_token<'a>(value: &impl Fn(&str) -> &'a str) -> String {
    let sizes: Vec<&str> = ["chunk_size", "chunk_overlap"].into_iter().map(value).filter(|v| !v.is_empty()).collect();
    let mut token = value("chunker").to_string();
    if !sizes.is_empty() {
        token.push_str(&format!("({})", sizes.join(",")));
    }
    for flag in ["title", "headings"] {
        if value(flag) == "true" {
            token.push('+');
            token.push_str(flag);
        }
    }
    token
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::golden::Split;
    use crate::results::Ordered;

    fn row(cell: &str, config: &[(&str, &str)]) -> Row {
        let mut r = Row::of_mean(cell, Split::Tuning, "ndcg@10", 0.5, 10);
        r.config = Ordered(config.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        r
    }

    #[test]
    fn labels_name_only_what_varies() {
        let bm25 = |cell, chunker, size, analyzer, b| {
            row(
                cell,
                &[
                    ("chunker", chunker),
                    ("chunk_size", size),
                    ("title", "true"),
                    ("headings", "false"),
                    ("retriever", "bm25"),
                    ("analyzer", analyzer),
                    ("k1", "1.2"),
                    ("b", b),
                    ("model", ""),
                    ("filter", "none"),
                ],
            )
        };
        let dense = row(
            "c05",
            &[
                ("chunker", "fixed"),
                ("chunk_size", "400"),
                ("title", "true"),
                ("headings", "false"),
                ("retriever", "dense"),
                ("analyzer", ""),
                ("k1", ""),
                ("b", ""),
                ("model", "e5-small"),
                ("filter", "none"),
            ],
        );
        let rows = vec![
            bm25("c01", "fixed", "400", "pt", "0.4"),
            bm25("c02", "fixed", "400", "en", "0.75"),
            bm25("c03", "recursive", "300", "pt", "0.4"),
            dense,
        ];
        assert_eq!(varying_keys(&rows), ["chunker", "chunk_size", "retriever", "analyzer", "b"]);
        let labels = varying_labels(&rows);
        assert_eq!(labels["c01"], "fixed(400)+title bm25 analyzer=pt b=0.4");
        assert_eq!(labels["c03"], "recursive(300)+title bm25 analyzer=pt b=0.4");
        assert_eq!(labels["c05"], "fixed(400)+title dense");
        let one = vec![bm25("c01", "fixed", "400", "pt", "0.4")];
        assert_eq!(varying_labels(&one)["c01"], "label c01");
    }
}
