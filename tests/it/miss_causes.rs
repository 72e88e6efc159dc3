//! Miss attribution through the binary: one constructed corpus per cause, asserting on the
//! `misses.csv`, `miss_causes.csv` and slices the run writes, and on `ragsweep explain`.

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use crate::common::{matrix, Fixture};
use serde_json::Value;

#[derive(Debug, Clone)]
struct MissRow {
    cell: String,
    case: String,
    k: usize,
    /// The pipeline's cause (`pipeline_cause`, equal to `cause` since unjudged items above the
    /// cut became a flag, `unjudged_above`, which tests/it/judging.rs checks).
    cause: String,
    rank: Option<u32>,
    evidence: String,
}

fn misses(run: &Path) -> Vec<MissRow> {
    let mut r = csv::Reader::from_path(run.join("misses.csv")).unwrap();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            MissRow {
                cell: rec[0].to_string(),
                case: rec[2].to_string(),
                k: rec[3].parse().unwrap(),
                cause: rec[7].to_string(),
                rank: rec[5].parse().ok(),
                evidence: rec[6].to_string(),
            }
        })
        .collect()
}

/// The cell id of the row whose label contains `label`.
fn cell(m: &Value, label: &str) -> String {
    let row = m["rows"].as_array().unwrap().iter().find(|r| r["label"].as_str().unwrap().contains(label));
    row.unwrap_or_else(|| panic!("no cell labelled {label}: {}", m["rows"]))["cell"].as_str().unwrap().into()
}

fn only_miss<'m>(all: &'m [MissRow], cell: &str, case: &str, k: usize) -> &'m MissRow {
    let found: Vec<&MissRow> = all.iter().filter(|m| m.cell == cell && m.case == case && m.k == k).collect();
    assert_eq!(found.len(), 1, "one miss of {case} in {cell} at k = {k}: {all:#?}");
    found[0]
}

/// `first_relevant` of each case of `cell` in per_query.jsonl.
fn first_relevant(run: &Path, cell: &str) -> HashMap<String, Option<u64>> {
    std::fs::read_to_string(run.join("per_query.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["cell"] == cell)
        .map(|v| (v["case"].as_str().unwrap().to_string(), v["first_relevant"].as_u64()))
        .collect()
}

#[test]
fn evidence_cut_by_a_fixed_size_chunker_is_a_chunking_miss() {
    let doc = "# Prazos\nO titular pode pedir a correção dos dados. O prazo de resposta é de quinze dias corridos, contados do pedido. Outras regras seguem.\n";
    let golden = r#"[{"id": "q1", "question": "qual o prazo de resposta ao titular", "evidence": [{"text": "O prazo de resposta é de quinze dias corridos", "doc": "prazos"}]}]"#;
    let f = Fixture::new(
        &[("prazos.md", doc), ("outro.md", "# Outro\nNada a ver com o assunto.\n")],
        golden,
        "name = \"cut\"\nunit = \"evidence\"\nk = [1, 3]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[chunkers]]\nkind = \"fixed\"\nsize = 40\noverlap = 0\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let m = matrix(&run);
    let (whole, fixed) = (cell(&m, "none"), cell(&m, "fixed(40"));
    let all = misses(&run);
    assert!(all.iter().all(|x| x.cell != whole), "the whole document holds the span: {all:#?}");
    for k in [1, 3] {
        let miss = only_miss(&all, &fixed, "q1", k);
        assert_eq!(miss.cause, "chunking", "{miss:?}");
        assert!(miss.evidence.contains("document prazos") && miss.evidence.contains("prazos@"), "{miss:?}");
    }
    let mut counts = csv::Reader::from_path(run.join("miss_causes.csv")).unwrap();
    let chunking = counts.headers().unwrap().iter().position(|h| h == "chunking").unwrap();
    let rows: Vec<csv::StringRecord> = counts.records().map(Result::unwrap).collect();
    let line = rows.iter().find(|r| r[0] == *fixed && &r[2] == "tuning" && &r[3] == "1").unwrap();
    assert_eq!((&line[4], &line[chunking]), ("1", "1"), "{line:?}");
}

const SALARY_DOCS: [(&str, &str); 2] = [
    (
        "salarios.md",
        "---\ntitle: Salários\nacl: [rh]\n---\nA tabela de salários e o reajuste de salários da diretoria.\n",
    ),
    ("beneficios.md", "---\ntitle: Benefícios\n---\nO reajuste anual dos benefícios segue a tabela de salários.\n"),
];

#[test]
fn an_answer_only_other_groups_may_see_is_not_visible() {
    let golden = r#"[{"id": "q1", "question": "tabela de salários da diretoria", "relevant": ["salarios"], "groups": ["vendas"]}]"#;
    let f = Fixture::new(
        &SALARY_DOCS,
        golden,
        "name = \"hidden\"\nunit = \"doc\"\nk = [1]\nfilter = [\"none\", \"in_query\"]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let m = matrix(&run);
    let all = misses(&run);
    let miss = only_miss(&all, &cell(&m, "filter=in_query"), "q1", 1);
    assert_eq!(miss.cause, "not_visible");
    assert!(miss.evidence.contains("salarios") && miss.evidence.contains("rh") && miss.evidence.contains("vendas"));
    let open = m["rows"].as_array().unwrap().iter().find(|r| r["filter"] == "none").unwrap()["cell"].as_str().unwrap();
    assert!(all.iter().all(|x| x.cell != open), "the open cell finds it: {all:#?}");
}

#[test]
fn post_filtering_that_empties_the_list_is_filter_late() {
    let golden = r#"[{"id": "q1", "question": "tabela de salários reajuste salários", "relevant": ["beneficios"], "groups": ["vendas"]}]"#;
    let f = Fixture::new(
        &SALARY_DOCS,
        golden,
        "name = \"late\"\nunit = \"doc\"\nk = [1]\nfilter = [\"in_query\", \"post\"]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let m = matrix(&run);
    let all = misses(&run);
    assert!(all.iter().all(|x| x.cell != cell(&m, "filter=in_query")), "{all:#?}");
    let miss = only_miss(&all, &cell(&m, "filter=post"), "q1", 1);
    assert_eq!((miss.cause.as_str(), miss.rank), ("filter_late", Some(1)), "{miss:?}");
    assert!(miss.evidence.contains("left 0 of 1"), "{miss:?}");
}

#[test]
fn bm25_with_no_shared_term_is_a_lexical_mismatch_and_a_lower_rank_a_cutoff() {
    let docs = [
        ("vale.md", "# Vale\nO vale-refeição é de R$ 1.100,00 por mês.\n"),
        ("ferias.md", "# Férias\nQuanto às férias, o pedido é feito com trinta dias.\n"),
        ("pedido.md", "# Pedido\nO pedido de férias, o pedido de reembolso e o pedido de compra.\n"),
    ];
    let golden = r#"[{"id": "vr", "question": "quanto é o VR?", "relevant": ["vale"]},
                     {"id": "pedido", "question": "pedido de férias", "relevant": ["ferias"]}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"lexical\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let all = misses(&run);
    let vr = only_miss(&all, "c01", "vr", 1);
    assert_eq!(vr.cause, "lexical_mismatch");
    assert!(vr.evidence.contains("[quant, vr]") && vr.evidence.contains("refeica"), "{vr:?}");
    let pedido = only_miss(&all, "c01", "pedido", 1);
    assert_eq!((pedido.cause.as_str(), pedido.rank), ("cutoff", Some(2)), "{pedido:?}");

    // explain: the winner's and the relevant document's BM25 terms add up to their scores.
    let out = f.explain(&run, &["--cell", "c01", "--case", "pedido", "--json"]);
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = e["items"].as_array().unwrap();
    assert_eq!(items[0]["role"], "top");
    assert_eq!(items[0]["key"], "pedido");
    assert_eq!(items[1]["role"], "best relevant");
    // Below k = 1 it is not in the cell's list (nor its TREC run); the deeper search the miss
    // diagnosis makes ranks it 2, as misses.csv says.
    assert_eq!((items[1]["key"].as_str(), items[1]["rank"].as_u64()), (Some("ferias"), None));
    assert_eq!(items[1]["deeper_rank"], 2);
    for item in items {
        let b = &item["bm25"];
        let sum: f64 = b["terms"].as_array().unwrap().iter().map(|t| t["contribution"].as_f64().unwrap()).sum();
        assert!((sum - b["score"].as_f64().unwrap()).abs() < 1e-5, "{item}");
        if !item["score"].is_null() {
            assert_eq!(b["score"], item["score"], "the explained score is the ranked score");
        }
    }
    let pedido_tf = |item: &Value| {
        item["bm25"]["terms"].as_array().unwrap().iter().find(|t| t["term"] == "ped").unwrap()["tf"].as_u64().unwrap()
    };
    assert_eq!((pedido_tf(&items[0]), pedido_tf(&items[1])), (4, 1), "the winner repeats the common word");
    // An unlabelled item ranks above the answer: the pipeline's cause, the unjudged item a flag.
    assert_eq!(
        (e["misses"][0]["cause"].as_str(), e["misses"][0]["pipeline"].as_str(), e["misses"][0]["unjudged"].as_u64()),
        (Some("cutoff"), None, Some(1))
    );
    let text = f.explain(&run, &["--cell", "c01", "--case", "vr"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("no relevant item in the first 100") && text.contains("lexical_mismatch"), "{text}");
}

#[test]
fn more_than_the_diagnostic_depth_above_the_answer_is_a_ranking_miss() {
    let mut docs: Vec<(String, String)> =
        (0..110).map(|i| (format!("d{i:03}.md"), format!("# Doc {i}\nalfa beta gama número {i}.\n"))).collect();
    docs.push(("resposta.md".into(), format!("# Resposta\nalfa {}\n", "texto longo sem relação ".repeat(40))));
    let docs: Vec<(&str, &str)> = docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let golden = r#"[{"id": "q1", "question": "alfa beta gama", "relevant": ["resposta"]}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"deep\"\nunit = \"doc\"\nk = [5]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let miss = only_miss(&misses(&run), "c01", "q1", 5).clone();
    assert_eq!((miss.cause.as_str(), miss.rank), ("ranking", None), "{miss:?}");
    assert!(miss.evidence.contains("first 100 items"), "{miss:?}");
}

/// On a corpus smaller than the diagnostic depth every relevant item is found somewhere:
/// only one just past k is `cutoff`; one deeper is `ranking`, with its rank.
#[test]
fn on_a_small_corpus_a_deep_answer_is_ranking_and_a_near_one_cutoff() {
    let mut docs: Vec<(String, String)> =
        (0..30).map(|i| (format!("d{i:02}.md"), format!("# Doc {i}\nalfa beta gama número {i}.\n"))).collect();
    docs.push(("resposta.md".into(), format!("# Resposta\nalfa {}\n", "texto longo sem relação ".repeat(40))));
    docs.push(("perto.md".into(), "# Perto\ndelta épsilon zeta eta teta.\n".into()));
    docs.push(("outro.md".into(), "# Outro\ndelta épsilon zeta eta teta iota kapa.\n".into()));
    docs.push(("mais.md".into(), "# Mais\ndelta épsilon zeta.\n".into()));
    let docs: Vec<(&str, &str)> = docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let golden = r#"[{"id": "deep", "question": "alfa beta gama", "relevant": ["resposta"]},
        {"id": "near", "question": "delta épsilon zeta eta teta iota kapa", "relevant": ["perto"]}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"small\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\nreserved_fraction = 0.0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let all = misses(&run);
    let deep = only_miss(&all, "c01", "deep", 1);
    assert_eq!(deep.cause, "ranking", "{deep:?}");
    assert!(deep.rank.is_some_and(|r| r > 11), "its rank is given: {deep:?}");
    assert!(deep.evidence.contains("more than 10 ranks below k = 1"), "{deep:?}");
    let near = only_miss(&all, "c01", "near", 1);
    assert_eq!((near.cause.as_str(), near.rank), ("cutoff", Some(2)), "{near:?}");
}

#[test]
fn a_graph_search_that_misses_what_the_exact_scan_finds_is_approximation() {
    // 300 short distinct documents, a question per tenth of them, and a graph built and
    // searched as poorly as hnsw_rs allows (m = 2, ef_construction = 2, ef_search = 1).
    let topics = ["rio", "montanha", "cidade", "floresta", "praia", "deserto", "ilha", "vale", "lago", "campo"];
    let things = ["casa", "ponte", "escola", "igreja", "mercado", "hospital", "fazenda", "porto", "museu", "parque"];
    let colours = ["azul", "verde", "vermelho"];
    let mut docs = Vec::new();
    let mut cases = Vec::new();
    for (i, ((t, th), c)) in topics
        .iter()
        .flat_map(|t| things.iter().map(move |th| (t, th)))
        .flat_map(|p| colours.iter().map(move |c| (p, c)))
        .enumerate()
    {
        docs.push((format!("d{i:03}.md"), format!("# {t}\nA {th} {c} perto do {t}, número {i}.\n")));
        if i % 10 == 0 {
            cases.push(format!(r#"{{"id": "q{i}", "question": "{th} {c} no {t}", "relevant": ["d{i:03}"]}}"#));
        }
    }
    let docs: Vec<(&str, &str)> = docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let f = Fixture::new(
        &docs,
        &format!("[{}]", cases.join(",")),
        "name = \"ann\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\nindex = \"exact\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"minilm-l6\"\nindex = \"hnsw\"\nm = 2\nef_construction = 2\nef_search = 1\n",
    );
    let run = f.run();
    let m = matrix(&run);
    let (exact, hnsw) = (cell(&m, "exact"), cell(&m, "hnsw"));
    let all = misses(&run);
    let exact_first = first_relevant(&run, &exact);
    let approximations: Vec<&MissRow> = all.iter().filter(|x| x.cell == hnsw && x.cause == "approximation").collect();
    assert!(!approximations.is_empty(), "the crippled graph misses something the scan finds: {all:#?}");
    for a in &approximations {
        assert_eq!(exact_first[&a.case], Some(1), "the exact cell itself ranks it first: {a:?}");
        assert_eq!(a.rank, Some(1));
    }
    for x in all.iter().filter(|x| x.cell == hnsw && x.cause != "approximation") {
        assert_ne!(exact_first[&x.case], Some(1), "a miss the scan would not have made is approximation: {x:?}");
    }
}

#[test]
fn a_hybrid_that_loses_what_one_side_ranked_first_is_a_fusion_miss() {
    let docs = [
        ("clausula.md", "# Cláusula\nA cláusula 55-J trata do estacionamento e das vagas da garagem.\n"),
        ("ferias.md", "# Férias\nCada pessoa tem trinta dias de férias por ano, marcados com o gestor.\n"),
        ("viagem.md", "# Viagem\nDescanso, viagem e tempo livre nas férias de verão com a família.\n"),
        ("carro.md", "# Carro\nOnde deixo o carro quando chego ao escritório pela manhã?\n"),
    ];
    let golden = r#"[{"id": "q1", "question": "55-J férias", "relevant": ["clausula"]},
        {"id": "q2", "question": "onde estacionar o automóvel", "relevant": ["clausula"]},
        {"id": "q3", "question": "regra 55-J descanso viagem", "relevant": ["clausula"]},
        {"id": "q4", "question": "quantos dias de folga remunerada tenho", "relevant": ["ferias"]},
        {"id": "q5", "question": "vagas para veículos dos funcionários", "relevant": ["clausula"]}]"#;
    // alpha = 0 fuses into the lexical ranking, alpha = 1 into the dense one: where the two
    // sides disagree at rank 1, one of the hybrids loses what the other side ranked first.
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"fusion\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n[[retrievers]]\nkind = \"dense\"\nmodel = \"e5-small\"\n[[retrievers]]\nkind = \"hybrid\"\nanalyzer = \"pt\"\nmodel = \"e5-small\"\nfusion = \"convex\"\nalpha = [0.0, 1.0]\n",
    );
    let run = f.run();
    let m = matrix(&run);
    let (bm25, dense) = (first_relevant(&run, &cell(&m, " bm25(")), first_relevant(&run, &cell(&m, " dense(")));
    let all = misses(&run);
    for (alpha, other_side, side_name) in [("alpha=0,", &dense, "dense"), ("alpha=1,", &bm25, "lexical")] {
        let hybrid = cell(&m, alpha);
        let found: Vec<&MissRow> = all.iter().filter(|x| x.cell == hybrid).collect();
        assert!(!found.is_empty(), "precondition: the sides disagree on some case for {alpha}: {all:#?}");
        for miss in found {
            assert_eq!(other_side[&miss.case], Some(1), "{miss:?}");
            assert_eq!((miss.cause.as_str(), miss.rank), ("fusion", Some(1)), "{miss:?}");
            assert!(miss.evidence.contains(&format!("{side_name} side alone: rank 1")), "{miss:?}");
        }
    }

    let hybrid = cell(&m, "alpha=1,");
    let out = f.explain(&run, &["--cell", &hybrid, "--case", "q5", "--json"]);
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = e["items"].as_array().unwrap();
    let relevant = items.iter().find(|i| i["role"] == "best relevant").unwrap();
    assert_eq!(relevant["hybrid"]["lexical"]["rank"], 1);
    assert_eq!(relevant["hybrid"]["lexical"]["fused_part"], 0.0, "alpha = 1 gives the lexical side no weight");
    for item in items.iter().filter(|i| !i["score"].is_null()) {
        let fused = item["hybrid"]["fused"].as_f64().unwrap();
        assert!((fused - item["score"].as_f64().unwrap()).abs() < 1e-6, "the fused score is the ranked score: {item}");
    }
    assert_eq!(items[0]["hybrid"]["dense"]["rank"], 1, "{items:?}");
}

#[test]
fn slices_group_every_cell_by_the_best_cells_miss_causes() {
    let docs = [
        ("vale.md", "# Vale\nO vale-refeição é de R$ 1.100,00 por mês.\n"),
        ("ferias.md", "# Férias\nQuanto às férias, o pedido é feito com trinta dias.\n"),
        ("pedido.md", "# Pedido\nO pedido de férias, o pedido de reembolso e o pedido de compra.\n"),
    ];
    let golden = r#"[{"id": "vr", "question": "quanto é o VR?", "relevant": ["vale"], "split": "tuning"},
                     {"id": "pedido", "question": "pedido de férias", "relevant": ["ferias"], "split": "tuning"},
                     {"id": "compra", "question": "pedido de compra", "relevant": ["pedido"], "split": "tuning"}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"slices\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = [\"pt\", \"simple\"]\n",
    );
    let run = f.run();
    let m = matrix(&run);
    let slices = std::fs::read_to_string(run.join("slices.csv")).unwrap();
    for c in ["c01", "c02"] {
        assert!(slices.contains(&format!("{c},tuning,miss:lexical_mismatch,1,")), "{slices}");
        assert!(slices.contains(&format!("{c},tuning,miss:cutoff,1,")), "{slices}");
    }
    let in_json: Vec<&Value> =
        m["slices"].as_array().unwrap().iter().filter(|s| s["slice"].as_str().unwrap().starts_with("miss:")).collect();
    assert_eq!(in_json.len(), 4, "two causes × two cells");
}

#[test]
fn documents_whose_chunk_ids_sort_out_of_document_order_are_found() {
    // Documents load as a, a0 (by path); their chunk ids sort as a0@…, a@… ('0' < '@').
    let docs = [
        ("a.md", "# A\nO prazo de entrega é curto.\n\nOutro parágrafo sobre entrega.\n"),
        ("a0.md", "# A0\nEntrega, entrega e entrega: o prazo de entrega.\n\nMais texto.\n"),
    ];
    let golden = r#"[{"id": "q1", "question": "prazo de entrega", "relevant": ["a"]}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"order\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"recursive\"\nsize = 30\noverlap = 0\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let miss = only_miss(&misses(&run), "c01", "q1", 1).clone();
    assert_eq!((miss.cause.as_str(), miss.rank), ("cutoff", Some(2)), "{miss:?}");
    assert!(miss.evidence.contains("of a search to depth 100"), "the scored list held 1 item: {miss:?}");
}

#[test]
fn explain_refuses_an_unknown_case_cell_or_document_and_writes_nothing() {
    let docs = [("vale.md", "# Vale\nO vale-refeição é de R$ 1.100,00 por mês.\n")];
    let golden = r#"[{"id": "vr", "question": "vale-refeição", "relevant": ["vale"]}]"#;
    let f = Fixture::new(
        &docs,
        golden,
        "name = \"bad\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
    );
    let run = f.run();
    let before = common::walk(&run);
    let cases: [(&[&str], &str); 3] = [
        (&["--cell", "c01", "--case", "nope"], "no case \"nope\""),
        (&["--cell", "c09", "--case", "vr"], "no cell \"c09\""),
        (&["--cell", "c01", "--case", "vr", "--doc", "ghost"], "no document or section \"ghost\""),
    ];
    for (args, message) in cases {
        let out =
            f.cmd().arg("explain").arg(&run).args(args).arg("--cache").arg(f.path().join("cache")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{args:?}: {stderr}");
    }
    assert_eq!(common::walk(&run), before, "explain writes nothing into the run");
}
