//! Latency per named stage through the binary: a hybrid cell's matrix.json row carries the mean
//! milliseconds of each stage of its retrieval call in call order (the query embedding, each
//! source's search, the fusion, the rest of the call), and the fixed columns are views of it.

use crate::common;

#[test]
fn a_hybrid_cell_reports_each_stage_and_the_columns_are_views_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::ragsweep()
        .arg("synth")
        .arg(root.join("corpus"))
        .args(["--documents", "200", "--questions", "30", "--vocabulary", "2000"])
        .assert()
        .success();
    std::fs::create_dir_all(root.join("models/random-64")).unwrap();
    std::fs::write(root.join("models/random-64/model.toml"), "id = \"random-64\"\nkind = \"random\"\ndim = 64\n")
        .unwrap();
    std::fs::write(
        root.join("hybrid.toml"),
        "name = \"hybrid\"\nunit = \"doc\"\nk = [10]\n[corpus]\npath = \"corpus\"\n[golden]\npath = \"corpus\"\n\
         reserved = [\"test\"]\n[[chunkers]]\nkind = \"none\"\n\
         [[retrievers]]\nkind = \"hybrid\"\nmodel = \"random-64\"\nfusion = \"rrf\"\n\
         [[retrievers]]\nkind = \"bm25\"\n",
    )
    .unwrap();
    common::ragsweep()
        .current_dir(root)
        .args(["run", "-q", "hybrid.toml", "--models", "models", "--out", "results", "--cache", "cache"])
        .assert()
        .success();
    let text = std::fs::read_to_string(root.join("results/hybrid/latest/matrix.json")).unwrap();
    let matrix: serde_json::Value = serde_json::from_str(&text).unwrap();
    let latency = &matrix["rows"][0]["latency"];
    let stages = latency["stages_ms"].as_object().unwrap();
    // The file keeps the call's order (a JSON value here sorts its keys).
    let mut names: Vec<&str> = stages.keys().map(String::as_str).collect();
    let block = &text[text.find("\"stages_ms\"").unwrap()..];
    names.sort_by_key(|n| block.find(&format!("\"{n}\"")).unwrap());
    assert_eq!(names.len(), 5, "{names:?}");
    assert_eq!(names[0], "embed");
    // Each search is named by its source's label, as the cell's label names it.
    assert_eq!(names[1], "search bm25(en,k1=0.9,b=0.4)", "{names:?}");
    assert_eq!(names[2], "search dense(random-64,exact)");
    assert_eq!(&names[3..], ["fuse", "judge"]);
    let ms = |name: &str| stages[name].as_f64().unwrap();
    assert!(names.iter().all(|n| ms(n) >= 0.0));
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert!(close(latency["embed_ms"].as_f64().unwrap(), ms("embed")));
    assert!(close(latency["search_ms"].as_f64().unwrap(), ms(names[1]) + ms(names[2])));
    assert!(close(latency["fuse_ms"].as_f64().unwrap(), ms("fuse")));
    let all: f64 = names.iter().map(|n| ms(n)).sum();
    assert!(close(latency["mean_ms"].as_f64().unwrap(), all), "the stages add up to the call: {latency}");
    // A BM25 cell embeds and fuses nothing: zero, never a negative zero.
    let bm25 =
        &matrix["rows"].as_array().unwrap().iter().find(|r| !r["label"].as_str().unwrap().contains("dense(")).unwrap()
            ["latency"];
    for column in ["embed_ms", "fuse_ms"] {
        assert!(bm25[column].as_f64().unwrap().to_bits() == 0, "{column}: {bm25}");
    }
    // Asked again in the timed pass, an in-process cell returns the list it was scored with.
    for row in matrix["rows"].as_array().unwrap() {
        assert_eq!(row["latency"]["stable"], row["latency"]["n"], "{}", row["latency"]);
    }
    for file in ["matrix.json", "matrix.csv", "matrix.md"] {
        let text = std::fs::read_to_string(root.join("results/hybrid/latest").join(file)).unwrap();
        assert!(!text.contains("-0.0") && !text.contains(",-0,"), "{file}: a negative zero");
    }
}
