//! The vector cache never hands back vectors that a model with other settings made.

use std::fs;
use std::path::Path;

use crate::common::{repo, Fixture};

const DOCS: &[(&str, &str)] = &[
    ("ferias.md", "# Férias\n\n## Direito\n\nTodo empregado tem direito a trinta dias de férias por ano.\n"),
    ("salario.md", "# Salário\n\n## Pagamento\n\nO salário é pago até o quinto dia útil de cada mês.\n"),
    ("ponto.md", "# Ponto\n\n## Registro\n\nO registro de ponto é feito pelo aplicativo no celular.\n"),
];

const GOLDEN: &str = r#"[
  {"id": "q1", "question": "quantos dias de férias?", "relevant": ["ferias"]},
  {"id": "q2", "question": "quando cai o salário?", "relevant": ["salario"]},
  {"id": "q3", "question": "como bato o ponto?", "relevant": ["ponto"]}
]"#;

const BASE: &str = "id = \"m\"\npooling = \"mean\"\nmax_length = 256\ndim = 384\n";

/// A models folder whose model `m` is MiniLM's files under `model_toml`, ONNX Runtime beside it.
fn models(dir: &Path, model_toml: &str, tokenizer_config: Option<&str>) {
    let installed = repo().join("models");
    let m = dir.join("m");
    fs::create_dir_all(&m).unwrap();
    for name in ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"] {
        let _ = fs::remove_file(m.join(name));
        fs::copy(installed.join("minilm-l6").join(name), m.join(name)).unwrap();
    }
    if let Some(text) = tokenizer_config {
        fs::write(m.join("tokenizer_config.json"), text).unwrap();
    }
    fs::write(m.join("model.toml"), model_toml).unwrap();
    if !dir.join("onnxruntime").exists() {
        std::os::unix::fs::symlink(installed.join("onnxruntime"), dir.join("onnxruntime")).unwrap();
    }
}

/// Runs the fixture with `models` and the fixture's cache; returns (embed lines, model key).
fn run(f: &Fixture, models: &Path) -> (String, String) {
    let out = tempfile::tempdir().unwrap();
    let assert = f
        .cmd()
        .args(["run", "--models"])
        .arg(models)
        .arg("--cache")
        .arg(f.path().join("cache"))
        .arg("--out")
        .arg(out.path())
        .arg("exp.toml")
        .assert()
        .success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    let embed = stderr.lines().filter(|l| l.starts_with("embed ")).collect::<Vec<_>>().join("\n");
    let run = fs::read_dir(out.path().join("keys")).unwrap().next().unwrap().unwrap().path();
    let manifest: serde_json::Value = serde_json::from_slice(&fs::read(run.join("manifest.json")).unwrap()).unwrap();
    (embed, manifest["models"][0]["key"].as_str().unwrap().to_string())
}

#[test]
fn every_embedding_setting_changes_the_cache_key_and_a_warm_cache_reembeds() {
    let f = Fixture::new(
        DOCS,
        GOLDEN,
        "name = \"keys\"\nunit = \"doc\"\nk = [1]\nreserved_fraction = 0.0\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"m\"\nindex = \"exact\"\n",
    );
    let dir = tempfile::tempdir().unwrap();
    models(dir.path(), BASE, None);
    // Queries and passages: 3 texts each.
    let all = |embed: &str, what: &str| embed.lines().count() == 2 && embed.lines().all(|l| l.contains(what));
    let (first, base_key) = run(&f, dir.path());
    assert!(all(&first, "3 texts, 0 reused, 3 embedded"), "{first}");
    let (warm, key) = run(&f, dir.path());
    assert!(all(&warm, "3 texts, 3 reused, 0 embedded"), "an unchanged model reuses everything: {warm}");
    assert_eq!(key, base_key);

    let config = fs::read_to_string(repo().join("models/minilm-l6/tokenizer_config.json")).unwrap();
    let edited_config = config.replacen('{', "{\"ragsweep_test\": 1,", 1);
    let variants: [(&str, String, Option<&str>); 5] = [
        ("max_length", BASE.replace("max_length = 256", "max_length = 8"), None),
        ("query_prefix", format!("{BASE}query_prefix = \"query: \"\n"), None),
        ("passage_prefix", format!("{BASE}passage_prefix = \"passage: \"\n"), None),
        ("pooling", BASE.replace("\"mean\"", "\"cls\""), None),
        ("tokenizer files", BASE.to_string(), Some(&edited_config)),
    ];
    let mut keys = vec![base_key];
    for (setting, toml, tokenizer_config) in variants {
        models(dir.path(), &toml, tokenizer_config);
        let (embed, key) = run(&f, dir.path());
        assert!(
            all(&embed, "3 texts, 0 reused, 3 embedded"),
            "changing {setting} must re-embed every text on a warm cache: {embed}"
        );
        assert!(!keys.contains(&key), "changing {setting} must change the model key ({key})");
        keys.push(key);
    }
}
