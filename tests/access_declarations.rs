//! One access declaration per document (SPEC §5), through the binary: every other way a file
//! could declare an access list — a second YAML document in the front matter, a TOML line after
//! a mistyped fence, a key nested in another map or list or reached through a merge key, a reST
//! field list, an HTML `<meta>`, a look-alike key in any script — stops `validate` and `run` with
//! the file and line, before anything is indexed; group names in ragsweep's own namespace or
//! with control characters are refused in documents, cases and the experiment.

mod common;

use common::Fixture;
use predicates::prelude::*;

const PUBLIC: &str = "# Público\nTexto aberto sobre férias.\n";

/// A fixture whose corpus holds `name` with `text` beside a public document, one BM25 cell.
fn corpus_with(name: &str, text: &str, golden: &str, extra: &str) -> Fixture {
    Fixture::new(
        &[("public.md", PUBLIC), (name, text)],
        golden,
        &format!(
            "name = \"acl\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n{extra}\
             [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n"
        ),
    )
}

const GOLDEN: &str = r#"[{"id": "q1", "question": "férias", "relevant": ["public"]}]"#;

#[test]
fn every_other_way_to_declare_an_access_list_is_a_located_error() {
    for (name, text, at) in [
        // A second YAML document inside the fences.
        ("two.md", "---\ntitle: x\n--- # perms\nacl: [rh]\n---\nSegredo.\n", "two.md:3"),
        (
            "flow.md",
            "---\ntitle: x\n--- {acl: [rh]}\n---\nSegredo.\n",
            "flow.md:3: front matter holds 2 YAML documents",
        ),
        ("end.md", "---\ntitle: x\n... # end\nacl: [rh]\n---\nSegredo.\n", "end.md:3"),
        // A mistyped TOML fence leaves the access list in the body.
        (
            "toml.md",
            "+++\ntitle = \"x\"\n+++\nacl = [\"rh\"]\n+++\nSegredo.\n",
            "toml.md:4: `acl =` after the front matter",
        ),
        // Nested in another map, in a list of maps, through a merge key.
        (
            "hugo.md",
            "---\ntitle: x\nparams:\n  acl: [rh]\n---\nSegredo.\n",
            "`params.acl` could declare an access list",
        ),
        ("list.md", "---\nblocks:\n  - kind: a\n    acl: [rh]\n---\nSegredo.\n", "`blocks[0].acl`"),
        ("merge.md", "---\nbase: &b\n  note: x\nother:\n  <<: *b\n  acl: [rh]\n---\nSegredo.\n", "`other.acl`"),
        // Look-alikes, in other scripts too.
        ("groups.md", "---\nuser_groups: [rh]\n---\nSegredo.\n", "groups.md:2"),
        ("visible.md", "---\nvisible_to: [rh]\n---\nSegredo.\n", "visible.md:2"),
        ("wide.md", "---\nａｃｌ: [rh]\n---\nSegredo.\n", "wide.md:2"),
        // Other formats' own declarations.
        ("field.rst", "Título\n======\n\n:acl: rh\n\nSegredo.\n", "field.rst:4: `:acl:`"),
        (
            "meta.html",
            "<html><head>\n<meta name=\"acl\" content=\"rh\">\n</head><body><p>Segredo.</p></body></html>\n",
            "meta.html:2",
        ),
        // Group names that are not plain data.
        ("marker.md", "---\nacl: [\"ragsweep:public\"]\n---\nSegredo.\n", "ragsweep's own namespace"),
        ("nul.md", "---\nacl: [\"r\\0h\"]\n---\nSegredo.\n", "control character U+0000"),
    ] {
        let f = corpus_with(name, text, GOLDEN, "");
        for args in [&["validate", "exp.toml"][..], &["run", "--out", "out", "--cache", "cache", "exp.toml"]] {
            f.cmd().args(args).assert().code(2).stderr(predicate::str::contains(at));
            assert!(!f.path().join("out").exists(), "{name}: {args:?} wrote a run");
        }
    }
}

#[test]
fn jsonl_cases_and_the_experiment_refuse_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "corpus.jsonl",
        "{\"id\": \"a\", \"text\": \"férias abertas\"}\n{\"id\": \"b\", \"text\": \"férias fechadas\", \"params\": {\"acl\": [\"rh\"]}}\n",
    );
    write("golden.json", GOLDEN.replace("public", "a").as_str());
    let exp = |extra: &str| {
        format!(
            "name = \"j\"\nunit = \"doc\"\nk = [1]\n{extra}[corpus]\npath = \"corpus.jsonl\"\n[golden]\npath = \"golden.json\"\n\
             [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n"
        )
    };
    write("exp.toml", &exp(""));
    let validate = || {
        let mut cmd = common::ragsweep();
        cmd.current_dir(dir.path()).args(["validate", "exp.toml"]);
        cmd.assert()
    };
    validate().code(2).stderr(predicate::str::contains("corpus.jsonl:2").and(predicate::str::contains("`params.acl`")));
    write("corpus.jsonl", "{\"id\": \"a\", \"text\": \"férias abertas\"}\n");
    validate().success();
    write("golden.json", r#"[{"id": "q1", "question": "férias", "relevant": ["a"], "groups": ["ragsweep:public"]}]"#);
    validate().code(2).stderr(predicate::str::contains("`groups`: the group name \"ragsweep:public\""));
    write("golden.json", GOLDEN.replace("public", "a").as_str());
    write("exp.toml", &exp("[permissions]\nacl_key = \"title\"\n"));
    validate().code(2).stderr(
        predicate::str::is_match(r#"exp\.toml:5:\d+: `acl_key = "title"` names a field that never holds"#).unwrap(),
    );
    write("exp.toml", &exp("[permissions]\ndefault_groups = [\"ragsweep:public\"]\n"));
    validate().code(2).stderr(predicate::str::contains("`permissions.default_groups`"));
}

#[test]
fn hidden_html_is_not_indexed() {
    let page = "<html><body><p>Texto visível.</p><div hidden><p>férias secretas</p></div>\
                <p style=\"display: none\">férias escondidas</p></body></html>\n";
    let f = corpus_with("page.html", page, GOLDEN, "");
    f.cmd()
        .args(["sections", "docs", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Texto visível").and(predicate::str::contains("secretas").not()))
        .stdout(predicate::str::contains("escondidas").not());
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let docs: Vec<(String, String)> =
        (0..4000).map(|i| (format!("d{i:04}.md"), format!("# Título {i}\n## Seção {i}\nTexto {i}.\n"))).collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let f = Fixture::new(
        &docs,
        GOLDEN,
        "name = \"p\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ragsweep"))
        .current_dir(f.path())
        .args(["sections", "docs"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then close the pipe, as `head -1` does: the listing (over 64 KiB, a
    // pipe's buffer) is still being written.
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn ids_that_two_documents_claim_and_blank_ids_are_refused() {
    let golden = r#"[{"id": "q1", "question": "preços", "relevant": ["faq#Precos"]}]"#;
    let f = Fixture::new(
        &[("faq.md", "# FAQ\n## Precos\nOs preços mudam.\n"), ("faq#Precos.md", "# Preços\nTabela de preços.\n")],
        golden,
        "name = \"ids\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(predicate::str::contains(
        "the id \"faq#Precos\" names a section of document \"faq\" and also the document \"faq#Precos\"",
    ));
    let f = Fixture::new(
        &[(" .md", "# Sem nome\nTexto.\n"), ("a.md", PUBLIC)],
        GOLDEN.replace("public", "a").as_str(),
        "name = \"ids\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(predicate::str::contains(" .md: empty id"));
}
