//! Small untrusted files that would take the machine down, through the binary: each is a
//! located error within seconds, never an abort, a stack overflow or gigabytes of memory.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::Fixture;
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

/// A corpus is regular files inside its folder: links that leave it (to `/etc/passwd`, to
/// `/proc/self/environ` while a password variable is set, to `/dev/zero`), a FIFO, a link loop
/// and a document over `max_document_mib` are listed as skipped with why, `validate` and `run`
/// finish in seconds, and no output holds the environment.
#[test]
fn files_that_are_not_files_are_skipped_and_nothing_of_the_process_reaches_an_output() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new(
        &[("ok.md", "# Ok\nFérias.\n")],
        GOLDEN,
        "name = \"hostile\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let docs = f.path().join("docs");
    symlink("/etc/passwd", docs.join("passwd.txt")).unwrap();
    symlink("/proc/self/environ", docs.join("env.txt")).unwrap();
    symlink("/dev/zero", docs.join("zero.md")).unwrap();
    symlink(docs.join("loop-b.md"), docs.join("loop-a.md")).unwrap();
    symlink(docs.join("loop-a.md"), docs.join("loop-b.md")).unwrap();
    let fifo = docs.join("pipe.md");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::write(docs.join("big.md"), format!("# Big\n{}\n", "férias ".repeat(200_000))).unwrap();
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(
        f.path().join("exp.toml"),
        exp.replace("path = \"docs\"\n", "path = \"docs\"\nmax_document_mib = 1\n"),
    )
    .unwrap();
    let secret = "Sekr3t-ragsweep-environ";
    let started = Instant::now();
    let validate = f
        .cmd()
        .env("RAGSWEEP_TEST_PASSWORD", secret)
        .args(["validate", "exp.toml"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&validate.stdout).to_string() + &String::from_utf8_lossy(&validate.stderr);
    assert!(validate.status.success(), "{text}");
    for listed in [
        "passwd.txt (a link to outside the corpus folder)",
        "env.txt (a link to outside the corpus folder)",
        "zero.md (a link to outside the corpus folder)",
        "loop-a.md (a broken link or a link loop)",
        "pipe.md (a FIFO, not a document)",
        "big.md (1600007 bytes, over the 1 MiB a document may hold",
    ] {
        assert!(text.contains(listed), "{listed} in {text}");
    }
    f.run_cmd().env("RAGSWEEP_TEST_PASSWORD", secret).timeout(Duration::from_secs(120)).assert().success();
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
    let written = [f.path().join("out"), f.path().join("cache")];
    for file in written.iter().flat_map(|d| common::walk(d)) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(secret) && !text.contains("root:x:0:0"), "{} holds the environment", file.display());
    }
}

/// `[corpus] exclude` matches in time linear in the path whatever the pattern (25 stars against
/// a 203-character name, twelve `**/` against a deep path), still means what it says, and a
/// pattern past the cap or not a glob is an error at its place in the experiment.
#[test]
fn exclude_patterns_take_linear_time_and_are_bounded() {
    let long_name = format!("{}.md", "a".repeat(200));
    let deep = format!("{}x.md", "d/".repeat(30));
    let f = Fixture::new(
        &[("ok.md", "# Ok\nFérias.\n"), (&long_name, "# A\nFérias.\n"), (&deep, "# X\nFérias.\n"), ("wip/no.md", "# No\nx\n")],
        GOLDEN,
        "name = \"hostile\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    let with_exclude = |patterns: &str| {
        std::fs::write(
            f.path().join("exp.toml"),
            exp.replace("path = \"docs\"\n", &format!("path = \"docs\"\nexclude = {patterns}\n")),
        )
        .unwrap();
    };
    let stars = format!("{}b", "*a".repeat(25));
    let globstars = format!("{}y.md", "**/".repeat(12));
    with_exclude(&format!("[{stars:?}, {globstars:?}, \"wip/**\"]"));
    let started = Instant::now();
    f.cmd().args(["validate", "exp.toml"]).timeout(Duration::from_secs(60)).assert().success().stdout(
        predicate::str::contains("read 3 .md").and(predicate::str::contains("excluded 1 by [corpus] exclude: no.md")),
    );
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    with_exclude(&format!("[\"wip/**\", {:?}]", "a".repeat(2000)));
    f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(
        predicate::str::is_match(
            r"exp\.toml:\d+:\d+: `\[corpus\] exclude`: a pattern of 2000 characters: at most 1024",
        )
        .unwrap(),
    );
    with_exclude("[\"wip/[a\"]");
    f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(predicate::str::contains("is not a glob"));
}

/// Small files that used to take quadratic time: 200,000 unclosed shortcodes and template tags
/// on a line, and 200,000 headings under the section chunker with heading paths. `validate`
/// and `run` finish in seconds.
#[test]
fn unclosed_markup_and_many_headings_take_linear_time() {
    let f = Fixture::new(
        &[
            ("ok.md", "# Ok\nFérias.\n"),
            ("shortcodes.md", &format!("# Marcas\n{}\n{}\n{}\n", "{{< ".repeat(200_000), "{{ ".repeat(100_000), "{% ".repeat(100_000))),
            ("headings.md", &"## h\nx\n".repeat(200_000)),
        ],
        GOLDEN,
        "name = \"hostile\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"markdown\"\nheadings = true\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let started = Instant::now();
    f.cmd().args(["validate", "exp.toml"]).timeout(Duration::from_secs(120)).assert().success();
    let validated = started.elapsed();
    f.run_cmd().timeout(Duration::from_secs(300)).assert().success();
    assert!(validated < Duration::from_secs(20), "validate took {validated:?}");
    assert!(started.elapsed() < Duration::from_secs(120), "validate and run took {:?}", started.elapsed());
}
