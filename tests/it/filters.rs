//! Filtering inside the query never leaks and never leaves a short list. (`post` goes
//! through the runner: tests/it/runner_rules.rs.)
//!
//! Random corpora, ACLs, user groups and queries; every retriever (BM25, exact, HNSW) and
//! every fusion. 2,000 generated corpora × 6 retrievers = 12,000 checked cases (the
//! HNSW graph path is checked on its own as well).

use proptest::prelude::*;

use ragsweep::analyze::{Analyzer, AnalyzerKind};
use ragsweep::experiment::Fusion;
use ragsweep::retrieve::fusion::fuse;
use ragsweep::retrieve::source::Side;
use ragsweep::retrieve::{Allowed, Bm25Index, Bm25Params, ExactIndex, FilteredSearch, Hit, HnswIndex, HnswParams};

const WORDS: &[&str] = &["prazo", "multa", "sensor", "gateway", "contrato", "férias", "senha", "api", "plano", "erro"];
const GROUPS: &[&str] = &["rh", "financeiro", "juridico"];

/// A document: word ids, ACL group ids (`None` = public), unit vector.
type Doc = (Vec<usize>, Option<Vec<usize>>, Vec<f32>);

#[derive(Debug, Clone)]
struct World {
    docs: Vec<Doc>,
    user: Vec<usize>,
    query: Vec<usize>,
    query_vec: Vec<f32>,
    k: usize,
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.into_iter().map(|x| x / n).collect()
}

fn world() -> impl Strategy<Value = World> {
    let doc = (
        prop::collection::vec(0..WORDS.len(), 1..6),
        prop::option::of(prop::collection::vec(0..GROUPS.len(), 0..3)),
        prop::collection::vec(-1.0f32..1.0, 8),
    );
    (
        prop::collection::vec(doc, 1..40),
        prop::collection::vec(0..GROUPS.len(), 0..3),
        prop::collection::vec(0..WORDS.len(), 1..4),
        prop::collection::vec(-1.0f32..1.0, 8),
        1usize..12,
    )
        .prop_map(|(docs, user, query, query_vec, k)| World {
            docs: docs.into_iter().map(|(w, acl, v)| (w, acl, unit(v))).collect(),
            user,
            query,
            query_vec: unit(query_vec),
            k,
        })
}

fn check(
    hits: &[Hit],
    allowed: &Allowed,
    k: usize,
    expected_len: Option<usize>,
    what: &str,
) -> Result<(), TestCaseError> {
    prop_assert!(hits.len() <= k, "{what}: {} > k = {k}", hits.len());
    for h in hits {
        prop_assert!(allowed.contains(h.chunk), "{what}: leaked chunk {}", h.chunk);
    }
    if let Some(n) = expected_len {
        prop_assert_eq!(hits.len(), n, "{}: short list", what);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn in_query_never_leaks_and_is_never_short(w in world()) {
        let n = w.docs.len();
        let visible = |i: usize| w.docs[i].1.as_ref().is_none_or(|acl| acl.iter().any(|g| w.user.contains(g)));
        let allowed = Allowed::from_fn(n, visible);
        let texts = w.docs.iter().map(|(words, _, _)| words.iter().map(|&i| WORDS[i]).collect::<Vec<_>>().join(" "));
        let bm25 = Bm25Index::build(&Analyzer::new(AnalyzerKind::Pt), texts).unwrap();
        let vectors: Vec<f32> = w.docs.iter().flat_map(|(_, _, v)| v.clone()).collect();
        let exact = ExactIndex::new(8, vectors);
        let hnsw = HnswIndex::build(exact.clone(), HnswParams { m: 4, ef_construction: 16 });
        let query = w.query.iter().map(|&i| WORDS[i]).collect::<Vec<_>>().join(" ");
        let k = w.k;
        let matching = (0..n).filter(|&i| visible(i) && w.query.iter().any(|q| w.docs[i].0.contains(q))).count();
        let visible_count = allowed.count();
        let params = Bm25Params::default();

        // in_query: the filter is part of the search.
        let lex = bm25.search(&query, params, k, Some(&allowed)).unwrap();
        check(&lex, &allowed, k, Some(k.min(matching)), "bm25 in_query")?;
        let den = exact.search(&w.query_vec, k, Some(&allowed));
        check(&den, &allowed, k, Some(k.min(visible_count)), "exact in_query")?;
        let ann = hnsw.search(&w.query_vec, k, 8, Some(&allowed));
        check(&ann, &allowed, k, Some(k.min(visible_count)), "hnsw in_query")?;
        // Small indexes always take the scan; check the filtered graph path (and its fallback) too.
        let graph = hnsw.search_with(&w.query_vec, k, 8, Some(&allowed), FilteredSearch::Graph);
        check(&graph, &allowed, k, Some(k.min(visible_count)), "hnsw graph in_query")?;
        for recorded in [r#"{"method":"rrf","k":60.0}"#, r#"{"method":"convex","alpha":0.5,"norm":"minmax"}"#, r#"{"method":"dbsf"}"#] {
            let fusion = serde_json::from_str::<Fusion>(recorded).unwrap();
            let fused = fuse(&[(&lex, Side::Lexical), (&den, Side::Dense)], fusion.fuse().as_ref(), k);
            check(&fused, &allowed, k, Some(k.min(visible_count)), &format!("{fusion} in_query"))?;
        }
    }
}
