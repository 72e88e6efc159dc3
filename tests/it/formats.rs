//! The documents people have: the same three documents as Markdown, HTML, DOCX,
//! reStructuredText and PDF (made by pandoc and Chromium: tests/fixtures/formats/README.md),
//! the same 10 section labels and evidence spans resolve in every format, and retrieval
//! finds them. Files in no known format are listed as skipped, never dropped silently.

use crate::common;

use std::path::Path;

use crate::common::repo;
use assert_cmd::Command;
use predicates::prelude::*;

fn experiment(dir: &Path, format: &str, unit: &str) {
    let fixtures = repo().join("tests/fixtures/formats");
    let toml = format!(
        "name = \"formats-{format}\"\nunit = \"{unit}\"\nk = [1, 5]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
         [corpus]\npath = {:?}\n[golden]\npath = {:?}\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
        fixtures.join(format).display().to_string(),
        fixtures.join("golden.jsonl").display().to_string()
    );
    std::fs::write(dir.join(format!("{format}-{unit}.toml")), toml).unwrap();
}

/// A chunk's words: its letters and digits, up to white space, punctuation and markup (heading
/// marks, pandoc's “ ” for ", a list number's `a)` or `a.`).
fn words(s: &str) -> String {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

fn hit_at_5(dir: &Path, format: &str, unit: &str) -> f64 {
    let out = dir.join("out");
    let assert = Command::cargo_bin("ragsweep")
        .unwrap()
        .current_dir(dir)
        .args(["run", "-q", "--cache"])
        .arg(dir.join("cache"))
        .arg("--out")
        .arg(&out)
        .arg(format!("{format}-{unit}.toml"))
        .assert()
        .success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    let ext = if format == "md" { ".md".to_string() } else { format!(".{format}") };
    assert!(stderr.contains(&format!("corpus: read 3 {ext}")), "{stderr}");
    let run = std::fs::read_dir(out.join(format!("formats-{format}"))).unwrap().next().unwrap().unwrap().path();
    let m = common::matrix(&run);
    m["rows"][0]["metrics"]["hit@5"]["value"].as_f64().unwrap()
}

#[test]
fn the_same_labels_resolve_and_are_found_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = Vec::new();
    for format in ["md", "html", "docx", "rst", "pdf"] {
        for unit in ["section", "evidence"] {
            experiment(dir.path(), format, unit);
            let hit = hit_at_5(dir.path(), format, unit);
            report.push(format!("{format} {unit} hit@5 = {hit:.2}"));
            assert!(hit >= 0.8, "{format} {unit}: hit@5 = {hit}");
        }
    }
    println!("{}", report.join("\n"));
}

#[test]
fn unknown_files_are_listed_and_a_pdf_without_text_is_reported() {
    let f = common::Fixture::new(
        &[("a.md", "# A\nTexto sobre férias.\n"), ("notes.xyz", "?"), ("image.png", "png")],
        r#"[{"id": "q1", "question": "férias", "relevant": ["a"]}]"#,
        "name = \"skip\"\nunit = \"doc\"\nk = [1]\nreserved_fraction = 0.0\nlatency_cases = 0\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    // A PDF page with no text: an empty page printed by Chromium.
    let blank = f.path().join("blank.html");
    std::fs::write(&blank, "<html><body></body></html>").unwrap();
    let status = std::process::Command::new("chromium")
        .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .arg("--no-pdf-header-footer")
        .arg(format!("--user-data-dir={}", f.path().join("profile").display()))
        .arg(format!("--print-to-pdf={}", f.path().join("docs/scan.pdf").display()))
        .arg(format!("file://{}", blank.display()))
        .output()
        .expect("chromium (scripts/install-test-tools.sh)");
    assert!(status.status.success());
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("corpus: read 1 .md; skipped 3:"))
        .stdout(predicate::str::contains("image.png (.png: not a known format)"))
        .stdout(predicate::str::contains("notes.xyz (.xyz: not a known format)"))
        .stdout(predicate::str::contains("scan.pdf (no extractable text: a scan?)"));
}

/// The section chunker splits on the document's own headings in every format: the three
/// documents give the same section chunks as Markdown, HTML, DOCX, reStructuredText and PDF
/// (same number, through the binary; the same words, list numbers included).
#[test]
fn the_section_chunker_follows_the_headings_of_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let chunks_of = |format: &str| -> u64 {
        experiment(dir.path(), format, "section");
        hit_at_5(dir.path(), format, "section");
        let run = std::fs::read_dir(dir.path().join("out").join(format!("formats-{format}")))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.join("manifest.json").is_file())
            .unwrap();
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
        let stage = manifest["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "chunk").unwrap().clone();
        stage["chunks"].as_u64().unwrap()
    };
    let markdown = chunks_of("md");
    assert!(markdown > 3, "more than one chunk per document: {markdown}");
    for format in ["html", "docx", "rst", "pdf"] {
        assert_eq!(chunks_of(format), markdown, "{format}: one chunk per section, as in Markdown");
    }

    let texts = |format: &str| -> Vec<String> {
        let corpus = ragsweep::input::corpus::Corpus::load(
            &repo().join("tests/fixtures/formats").join(format),
            None,
            &Default::default(),
        )
        .unwrap();
        let spec = ragsweep::chunkers::ChunkerSpec {
            kind: ragsweep::chunkers::ChunkerKind::Markdown { max_chars: None },
            title: false,
            headings: false,
        };
        let set = ragsweep::stages::chunk::ChunkSet::build(&corpus, &spec);
        // Chunk sets are ordered by id (`doc@start-end`, offsets of each format's own text).
        let mut texts: Vec<String> = (0..set.len()).map(|i| words(set.text(&corpus, i))).collect();
        texts.sort();
        texts
    };
    let markdown = texts("md");
    for format in ["html", "docx", "rst", "pdf"] {
        assert_eq!(texts(format), markdown, "{format}");
    }
    // reST title underlines are layout, not text.
    let rst =
        ragsweep::input::corpus::Corpus::load(&repo().join("tests/fixtures/formats/rst"), None, &Default::default())
            .unwrap();
    assert!(rst.docs.iter().all(|d| !d.text.contains("===") && !d.text.contains("---")), "{:?}", rst.docs[0].text);
}

/// A browser-printed PDF with a running head and footer on every page: they are dropped from the
/// text (and counted in what the reader says), the body stays.
#[test]
fn running_heads_and_footers_of_a_printed_pdf_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for page in 1..=4 {
        body.push_str(&format!(
            "<h2>Capítulo {page}</h2><p>O capítulo {page} trata do prazo número {page} e da regra {}.</p><div style=\"break-after: page\"></div>",
            page * 7
        ));
    }
    let html = format!(
        "<html lang=\"pt\"><head><meta charset=\"utf-8\"><style>.head {{ position: fixed; top: 0; }} .foot {{ position: fixed; bottom: 0; }} body {{ margin-top: 40px; }}</style></head>\
         <body><div class=\"head\">Relatório Interno Sigiloso</div><div class=\"foot\">Documento controlado pela Qualidade</div><h1>Norma</h1>{body}</body></html>"
    );
    std::fs::write(dir.path().join("norma.html"), html).unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    common::print_pdf(&dir.path().join("norma.html"), &dir.path().join("docs/norma.pdf"), &dir.path().join("profile"));
    let sections = |grep: &str| sections_matching(dir.path(), grep);
    sections("Sigiloso").stdout(predicate::str::is_empty());
    sections("Qualidade").stdout(predicate::str::is_empty());
    sections("prazo").stdout(predicate::str::contains("norma#Capítulo 3")).stderr(
        predicate::str::contains("dropped 8 running head and footer lines")
            .and(predicate::str::contains("norma.pdf 8")),
    );
}

/// `ragsweep sections docs --grep GREP` in `dir`, asserted to succeed.
fn sections_matching(dir: &std::path::Path, grep: &str) -> assert_cmd::assert::Assert {
    Command::cargo_bin("ragsweep")
        .unwrap()
        .current_dir(dir)
        .args(["sections", "docs", "--grep", grep])
        .assert()
        .success()
}

/// Words a PDF prints as pieces (a ligature or a letter in another font: pdftohtml gives
/// `bene`, `ﬁ`, `ted` as three text elements on one line) are read as printed: `sections`
/// finds `benefited` and `significant`, and no line breaks inside them.
#[test]
fn a_word_printed_in_pieces_is_read_as_one_word() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    let sans = "<span style=\"font-family: 'DejaVu Sans'\">fi</span>";
    let html = format!(
        "<html><head><meta charset=\"utf-8\"></head><body style=\"font-family: 'DejaVu Serif', serif; font-size: 14px\">\
         <h1>Results</h1><p>The patients bene{sans}ted from it; signi{sans}cant results followed in every group.</p></body></html>"
    );
    std::fs::write(dir.path().join("paper.html"), html).unwrap();
    common::print_pdf(&dir.path().join("paper.html"), &dir.path().join("docs/paper.pdf"), &dir.path().join("profile"));
    let sections = |grep: &str| sections_matching(dir.path(), grep);
    for word in ["benefited", "significant"] {
        sections(word).stdout(predicate::str::contains("paper"));
    }
    sections("bene").stdout(predicate::str::is_empty());
}

/// A PDF's sections come from its outline (bookmarks) when it has one, even where its headings
/// look like body text; without an outline, a bold line at body size that is numbered
/// (`5.4. Command Substitution`) is a heading at its number's depth. The section chunker and
/// `sections` follow them.
#[test]
fn pdf_sections_come_from_the_outline_then_from_bold_numbered_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    let plain = "h2 { font-size: 1em; font-weight: normal; margin: 0 }";
    let outlined = format!(
        "<html><head><meta charset=\"utf-8\"><style>{plain}</style></head><body><h1>Shell Manual</h1>\
         <p>An introduction to the shell and how it reads commands from the terminal.</p>\
         <h2>Quoting Rules</h2><p>Quoting removes the special meaning of characters to the shell.</p>\
         <h2>Variables</h2><p>Variables hold values the shell expands when a command runs.</p></body></html>"
    );
    std::fs::write(dir.path().join("outlined.html"), outlined).unwrap();
    common::print_pdf_with_outline(
        &dir.path().join("outlined.html"),
        &dir.path().join("docs/manual.pdf"),
        &dir.path().join("p1"),
    );
    let numbered = "<html><head><meta charset=\"utf-8\"></head><body><p>Bash reference, printed from a word processor.</p>\
         <p><b>5. Expansions</b></p><p>The shell performs several expansions on each command line it reads.</p>\
         <p><b>5.4. Command Substitution</b></p><p>Command substitution runs a command and puts its output in place.</p>\
         <p><b>A bold remark that is not numbered</b></p><p>Some closing words of the page here.</p></body></html>";
    std::fs::write(dir.path().join("numbered.html"), numbered).unwrap();
    common::print_pdf(&dir.path().join("numbered.html"), &dir.path().join("docs/bash.pdf"), &dir.path().join("p2"));
    let out = Command::cargo_bin("ragsweep")
        .unwrap()
        .current_dir(dir.path())
        .args(["sections", "docs", "--json"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    for id in [
        "manual#Shell Manual\"",
        "manual#Quoting Rules\"",
        "manual#Variables\"",
        "bash#5. Expansions\"",
        "bash#5.4. Command Substitution\"",
    ] {
        assert!(listed.contains(id), "{id} in {listed}");
    }
    assert!(!listed.contains("A bold remark"), "an unnumbered bold line is text: {listed}");
    // The section chunker splits on them.
    std::fs::write(
        dir.path().join("golden.json"),
        r#"[{"id": "q1", "question": "command substitution output", "relevant": ["bash#5.4. Command Substitution"]}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("exp.toml"),
        "name = \"pdf\"\nk = [1]\nmetrics = [\"hit\"]\nlatency_cases = 1\n[corpus]\npath = \"docs\"\n[golden]\npath = \"golden.json\"\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\n",
    )
    .unwrap();
    Command::cargo_bin("ragsweep")
        .unwrap()
        .current_dir(dir.path())
        .args(["run", "-q", "--out", "out", "exp.toml"])
        .assert()
        .success();
    let per_query =
        std::fs::read_to_string(common::run_dir(&dir.path().join("out"), "pdf").join("per_query.jsonl")).unwrap();
    assert!(per_query.contains("\"hit@1\":1.0"), "{per_query}");
}

/// Runs a converter and panics with what it printed when it fails.
fn convert(cmd: &mut std::process::Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e} (scripts/install-test-tools.sh installs it)"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The statute (../shared/corpora/lgpd, ten chapters with a title in front matter and one
/// heading per article) exported as users export it: pandoc's standalone HTML, DOCX and
/// reStructuredText (the title as a title block), and that HTML printed to PDF by Chromium. Every format lists the same 80
/// section ids (a PDF's pages aside), the section chunker gives the same chunks (same sections,
/// same words), and BM25's recall@10 on the statute's golden set is within 0.02 of Markdown's.
#[test]
fn the_statute_gives_the_same_sections_chunks_and_recall_in_five_formats_and_an_outlined_pdf() {
    let dir = tempfile::tempdir().unwrap();
    let source = repo().join("../shared/corpora/lgpd/corpus");
    for format in ["md", "html", "docx", "rst", "pdf", "pdf-outline"] {
        std::fs::create_dir_all(dir.path().join(format)).unwrap();
    }
    let mut chapters: Vec<_> = std::fs::read_dir(&source).unwrap().map(|e| e.unwrap().path()).collect();
    chapters.sort();
    assert_eq!(chapters.len(), 10, "{}", source.display());
    for chapter in &chapters {
        let name = chapter.file_stem().unwrap().to_str().unwrap();
        let md = dir.path().join("md").join(format!("{name}.md"));
        std::fs::copy(chapter, &md).unwrap();
        for (format, extra) in
            [("html", vec!["-s", "-t", "html5"]), ("docx", vec!["-t", "docx"]), ("rst", vec!["-s", "-t", "rst"])]
        {
            convert(
                std::process::Command::new("pandoc")
                    .args(["-f", "markdown"])
                    .args(extra)
                    .arg(&md)
                    .arg("-o")
                    .arg(dir.path().join(format).join(format!("{name}.{format}"))),
            );
        }
        common::print_pdf(
            &dir.path().join("html").join(format!("{name}.html")),
            &dir.path().join("pdf").join(format!("{name}.pdf")),
            &dir.path().join("profile"),
        );
        common::print_pdf_with_outline(
            &dir.path().join("html").join(format!("{name}.html")),
            &dir.path().join("pdf-outline").join(format!("{name}.pdf")),
            &dir.path().join("profile"),
        );
    }

    let section_ids = |format: &str| -> Vec<String> {
        let out = Command::cargo_bin("ragsweep")
            .unwrap()
            .args(["sections", "--json"])
            .arg(dir.path().join(format))
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_string())
            .filter(|id| id.rsplit_once("#p").is_none_or(|(_, n)| n.parse::<u32>().is_err()))
            .collect()
    };
    let markdown = section_ids("md");
    assert_eq!(markdown.iter().filter(|id| id.contains('#')).count(), 80, "the 80 articles: {markdown:?}");
    for format in ["html", "docx", "rst", "pdf", "pdf-outline"] {
        assert_eq!(section_ids(format), markdown, "{format}: the section ids of the Markdown");
    }

    // Each section chunk as (the section it starts in, its words).
    let chunks = |format: &str| -> Vec<(String, String)> {
        let corpus =
            ragsweep::input::corpus::Corpus::load(&dir.path().join(format), None, &Default::default()).unwrap();
        let spec = ragsweep::chunkers::ChunkerSpec {
            kind: ragsweep::chunkers::ChunkerKind::Markdown { max_chars: None },
            title: false,
            headings: false,
        };
        let set = ragsweep::stages::chunk::ChunkSet::build(&corpus, &spec);
        let mut chunks: Vec<(String, String)> = set
            .chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let doc = &corpus.docs[c.doc as usize];
                let section = doc
                    .sections
                    .iter()
                    .filter(|s| !s.page && s.start <= c.start as usize && (c.start as usize) < s.end)
                    .max_by_key(|s| s.start)
                    .map_or_else(|| doc.id.clone(), |s| s.id.clone());
                (section, words(set.text(&corpus, i)))
            })
            .collect();
        chunks.sort();
        chunks
    };
    let markdown = chunks("md");
    assert!(markdown.len() >= 90, "{}", markdown.len());
    for format in ["html", "docx", "rst", "pdf", "pdf-outline"] {
        let other = chunks(format);
        let only_markdown: Vec<_> = markdown.iter().filter(|c| !other.contains(c)).take(3).collect();
        let only_other: Vec<_> = other.iter().filter(|c| !markdown.contains(c)).take(3).collect();
        assert!(
            only_markdown.is_empty() && only_other.is_empty() && other.len() == markdown.len(),
            "{format}: {} chunks, Markdown {}; only in Markdown {only_markdown:#?}, only in {format} {only_other:#?}",
            other.len(),
            markdown.len()
        );
    }

    let recall = |format: &str| -> f64 {
        let toml = format!(
            "name = \"statute-{format}\"\nunit = \"section\"\nk = [10]\nreserved_fraction = 0.0\nlatency_cases = 0\n\
             [corpus]\npath = {:?}\n[golden]\npath = {:?}\n\
             [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"pt\"\n",
            dir.path().join(format).display().to_string(),
            repo().join("experiments/lgpd/golden.jsonl").display().to_string()
        );
        std::fs::write(dir.path().join(format!("{format}.toml")), toml).unwrap();
        Command::cargo_bin("ragsweep")
            .unwrap()
            .current_dir(dir.path())
            .args(["run", "-q", "--cache"])
            .arg(dir.path().join("cache"))
            .arg("--out")
            .arg(dir.path().join("out"))
            .arg(format!("{format}.toml"))
            .assert()
            .success();
        let run = common::runs_in(&dir.path().join("out").join(format!("statute-{format}"))).pop().unwrap();
        common::matrix(&run)["rows"][0]["metrics"]["recall@10"]["value"].as_f64().unwrap()
    };
    let markdown = recall("md");
    for format in ["html", "docx", "rst", "pdf", "pdf-outline"] {
        let r = recall(format);
        println!("{format}: recall@10 {r:.3} (Markdown {markdown:.3})");
        assert!((r - markdown).abs() <= 0.02, "{format}: recall@10 {r} against Markdown's {markdown}");
    }
}
