//! The runner driven with a fake embedder (hashed words, no model files): it embeds each
//! text once per model, reuses its cache, fails whole on an embedding error, and keeps
//! restricted chunks out of filtered dense and hybrid cells.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::error::Error;
use crate::retrieve::access::Filter;

const DIM: usize = 32;

/// Bag of words hashed into `DIM` buckets, L2-normalised; counts what it embeds.
#[derive(Default)]
struct FakeEmbedder {
    passages: AtomicUsize,
    queries: AtomicUsize,
    fail: bool,
}

impl Embedding for FakeEmbedder {
    fn embed_batch(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<f32>>> {
        if self.fail {
            return Err(Error::ModelFailed("fake embedder failed".into()));
        }
        let counter = if role == Role::Query { &self.queries } else { &self.passages };
        counter.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; DIM];
                for w in t.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                    v[blake3::hash(w.as_bytes()).as_bytes()[0] as usize % DIM] += 1.0;
                }
                embed::normalize(&mut v);
                v
            })
            .collect())
    }
}

/// A model directory holding only a word-level tokenizer (embedding cost counts its tokens).
fn fake_model(dir: &Path) -> ModelInfo {
    std::fs::write(
        dir.join("tokenizer.json"),
        r#"{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [], "normalizer": null,
            "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}"#,
    )
    .unwrap();
    ModelInfo {
        id: "fake".into(),
        description: None,
        dir: dir.to_path_buf(),
        kind: crate::stages::embed::ModelKind::Onnx {
            file: dir.join("model.onnx"),
            pooling: crate::stages::embed::Pool::Mean,
            output: None,
        },
        max_length: 128,
        dim: DIM,
        query_prefix: String::new(),
        passage_prefix: String::new(),
        file_hash: "0000000000000000".into(),
        tokenizer_hash: String::new(),
        usd_per_1m_tokens: None,
        usd_per_1k_searches: None,
    }
}

struct Setup {
    dir: tempfile::TempDir,
    exp: Experiment,
    prepared: Prepared,
}

impl Setup {
    fn new(grid: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("ferias.md"), "# Férias\nFérias de trinta dias por ano de trabalho.\n").unwrap();
        std::fs::write(docs.join("frota.md"), "# Frota\nCaminhões elétricos rodam na frota urbana.\n").unwrap();
        std::fs::write(
            docs.join("salarios.md"),
            "---\nacl: [rh]\n---\n# Salários\nSalários da diretoria e bônus anual.\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("golden.json"),
            r#"[{"id": "q1", "question": "férias trinta dias", "relevant": ["ferias"], "groups": ["vendas"]},
                {"id": "q2", "question": "caminhões elétricos frota", "relevant": ["frota"], "groups": ["vendas"]},
                {"id": "q3", "question": "salários diretoria bônus", "answerable": false, "groups": ["vendas"]}]"#,
        )
        .unwrap();
        let (top, grids) = grid.split_once("[[").expect("a grid");
        let text = format!(
            "name = \"fake\"\nunit = \"doc\"\nk = [1, 3]\nmetrics = [\"hit\"]\nreserved_fraction = 0.0\nlatency_cases = 2\n{top}\
             [corpus]\npath = \"docs\"\n[golden]\npath = \"golden.json\"\n[[{grids}"
        );
        let path = dir.path().join("exp.toml");
        std::fs::write(&path, &text).unwrap();
        let exp = Experiment::parse(&path, &text).unwrap();
        let plan = Plan::new(&exp);
        let corpus = Corpus::load(&exp.corpus_path, exp.corpus_format, &exp.access_key).unwrap();
        let mut cases = golden::load(&exp.golden, &corpus).unwrap();
        golden::assign_splits(&mut cases, exp.seed, exp.reserved_fraction);
        let models = vec![fake_model(dir.path())];
        let prepared = Prepared {
            plan,
            corpus,
            cases,
            drafts: Vec::new(),
            judgments: None,
            models,
            cross_encoders: Vec::new(),
            counter: Counter::Words,
            servers: Vec::new(),
        };
        Setup { dir, exp, prepared }
    }

    fn run(&self, fake: &FakeEmbedder) -> (Result<Outcome>, Vec<CaseResult>) {
        let opts = RunOptions {
            progress: false,
            models_dir: self.dir.path().into(),
            cache_dir: self.dir.path().join("cache"),
            engines_dir: self.dir.path().join("engines"),
        };
        let embedder = |_: ModelId| -> Result<&dyn Embedding> { Ok(fake as &dyn Embedding) };
        let mut written = Vec::new();
        let outcome = run_with(&self.exp, &self.prepared, &opts, &embedder, &mut |results| {
            written.extend_from_slice(results);
            Ok(())
        });
        (outcome, written)
    }
}

const DENSE_AND_HYBRID: &str = "filter = [\"none\", \"in_query\"]\n[[chunkers]]\nkind = \"none\"\n\
    [[retrievers]]\nkind = \"dense\"\nmodel = \"fake\"\nindex = \"exact\"\n\
    [[retrievers]]\nkind = \"hybrid\"\nanalyzer = \"pt\"\nmodel = \"fake\"\nfusion = \"rrf\"\n";

#[test]
fn each_text_is_embedded_once_per_model_and_found_by_dense_and_hybrid_cells() {
    let setup = Setup::new(DENSE_AND_HYBRID);
    let fake = FakeEmbedder::default();
    let (outcome, written) = setup.run(&fake);
    let outcome = outcome.unwrap();
    assert_eq!(fake.passages.load(Ordering::SeqCst), 3, "three documents, shared by four cells");
    assert_eq!(
        fake.queries.load(Ordering::SeqCst),
        3 + 4 * (2 + 2),
        "three questions, then per cell 2 warm-up and 2 timed"
    );
    assert_eq!(outcome.rows.len(), 4);
    for row in &outcome.rows {
        assert_eq!(row.metrics.get("hit@1").unwrap().value, Some(1.0), "{}", row.cell);
        assert_eq!(row.latency.as_ref().unwrap().n, 2, "{}", row.cell);
    }
    assert_eq!(written.len(), 4 * 3);
}

#[test]
fn a_second_run_on_the_same_cache_embeds_no_passage() {
    let setup = Setup::new(DENSE_AND_HYBRID);
    setup.run(&FakeEmbedder::default()).0.unwrap();
    let again = FakeEmbedder::default();
    let first_rows = setup.run(&FakeEmbedder::default()).0.unwrap().rows;
    let rows = setup.run(&again).0.unwrap().rows;
    assert_eq!(again.passages.load(Ordering::SeqCst), 0);
    let values = |rows: &[Row]| rows.iter().map(|r| r.metrics.clone()).collect::<Vec<_>>();
    assert_eq!(values(&rows), values(&first_rows));
}

#[test]
fn an_embedding_error_fails_the_run_before_any_cell_is_written() {
    let setup = Setup::new(DENSE_AND_HYBRID);
    let (outcome, written) = setup.run(&FakeEmbedder { fail: true, ..Default::default() });
    let err = outcome.err().expect("the run fails");
    assert!(err.to_string().contains("fake embedder failed"), "{err}");
    assert!(written.is_empty());
}

#[test]
fn filtered_dense_and_hybrid_cells_never_return_a_restricted_document() {
    let setup = Setup::new(DENSE_AND_HYBRID);
    let (outcome, written) = setup.run(&FakeEmbedder::default());
    let outcome = outcome.unwrap();
    for result in &written {
        let returned_salaries = result.ranking.iter().any(|(key, _)| key == "salarios");
        let filtered = outcome.rows.iter().any(|r| r.cell == result.cell && r.filter != Filter::None);
        assert_eq!(result.leaks > 0, returned_salaries, "{} {}", result.cell, result.case);
        if filtered {
            assert!(!returned_salaries, "{} {}", result.cell, result.case);
        }
    }
    let open_leaks: usize = outcome.rows.iter().filter(|r| r.filter == Filter::None).map(|r| r.leaks).sum();
    assert!(open_leaks > 0, "the open cells return the restricted document to the q3 user");
    let open_hits: usize = outcome.rows.iter().filter(|r| r.filter == Filter::None).map(|r| r.restricted_hits).sum();
    assert_eq!(open_hits, 0, "q3 has no label, so it is unanswerable, not restricted-answer");
}
