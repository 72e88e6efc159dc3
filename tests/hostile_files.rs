//! Small untrusted files that would take the machine down, through the binary: each is a
//! located error within seconds, never an abort, a stack overflow or gigabytes of memory.

mod common;

use std::time::{Duration, Instant};

use common::Fixture;
use predicates::prelude::*;

const GOLDEN: &str = r#"[{"id": "q1", "question": "férias", "relevant": ["ok"]}]"#;

/// `validate` on a corpus of `name` (written as `bytes`) beside a plain document: exit 2, a
/// message naming the file and holding `says`, within 20 s.
fn refused(name: &str, bytes: &[u8], says: &str) {
    let f = Fixture::new(
        &[("ok.md", "# Ok\nFérias.\n")],
        GOLDEN,
        "name = \"hostile\"\nunit = \"doc\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    std::fs::write(f.path().join("docs").join(name), bytes).unwrap();
    let started = Instant::now();
    f.cmd()
        .args(["validate", "exp.toml"])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(name).and(predicate::str::contains(says)));
    assert!(started.elapsed() < Duration::from_secs(20), "{name} took {:?}", started.elapsed());
}

#[test]
fn a_yaml_alias_bomb_and_deep_nesting_are_refused() {
    let mut bomb =
        String::from("---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (name, prev) in [("b", "a"), ("c", "b"), ("d", "c"), ("e", "d"), ("f", "e"), ("g", "f"), ("h", "g"), ("i", "h")]
    {
        bomb.push_str(&format!(
            "{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    bomb.push_str("---\nTexto.\n");
    assert!(bomb.len() < 1000);
    refused("bomb.md", bomb.as_bytes(), "values once its aliases are expanded");
    let deep = format!("---\nx: {}1{}\n---\nTexto.\n", "[".repeat(40_000), "]".repeat(40_000));
    refused("deep.md", deep.as_bytes(), "deep.md:2:");
    let deep = format!("---\nx: {}1{}\n---\nTexto.\n", "[".repeat(100), "]".repeat(100));
    refused("deep100.md", deep.as_bytes(), "nested deeper than 64 levels");
}

#[test]
fn deeply_nested_html_is_refused() {
    let spans = format!("<html><body>{}texto{}</body></html>", "<span>".repeat(50_000), "</span>".repeat(50_000));
    refused("spans.html", spans.as_bytes(), "elements nest 50000 deep");
    let divs = format!("<html><body>{}texto</body></html>", "<div>".repeat(300_000));
    refused("divs.html", divs.as_bytes(), "elements nest 300000 deep");
    // Unclosed paragraphs and list items are ordinary HTML, not nesting.
    let f = Fixture::new(
        &[("ok.md", "# Ok\nFérias.\n")],
        GOLDEN,
        "name = \"ok\"\nunit = \"doc\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let list = format!("<html><body><ul>{}</ul></body></html>", "<li>item <p>texto".repeat(5_000));
    std::fs::write(f.path().join("docs/list.html"), list).unwrap();
    f.cmd().args(["validate", "exp.toml"]).assert().success();
}

#[test]
fn a_docx_zip_bomb_and_a_broken_pdf_are_refused() {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("word/document.xml", options).unwrap();
    let zeros = vec![b' '; 1 << 20];
    for _ in 0..80 {
        zip.write_all(&zeros).unwrap();
    }
    let bytes = zip.finish().unwrap().into_inner();
    assert!(bytes.len() < 1 << 20, "a small file");
    refused("bomb.docx", &bytes, "refused as a zip bomb");
    refused("broken.pdf", b"%PDF-1.4 not really", "pdftohtml could not read it");
}
