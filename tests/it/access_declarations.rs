//! One access declaration per document (SPEC §5), through the binary: every other way a file
//! could declare an access list — a second YAML document in the front matter, a TOML line after
//! a mistyped fence, a key nested in another map or list or reached through a merge key, a reST
//! field list, an HTML `<meta>`, a look-alike key in any script — stops `validate` and `run` with
//! the file and line, before anything is indexed; group names in ragsweep's own namespace or
//! with control characters are refused in documents, cases and the experiment.

use crate::common;

use crate::common::Fixture;
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
        ("groups.rst", "Título\n======\n\n:groups: rh\n\nSegredo.\n", "groups.rst:4: `:groups:`"),
        // A directive's option named as the access key is refused too.
        ("option.rst", "Título\n======\n\n.. meta::\n   :ACL: rh\n\nSegredo.\n", "option.rst:5: `:ACL:`"),
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

/// A directive's options are not the document's fields: Sphinx's `autoclass` with `:members:`
/// (a name other tools keep access lists under) is read, on a page that is public.
#[test]
fn a_directives_options_are_not_access_declarations() {
    let page = "API\n===\n\n.. autoclass:: Flask\n   :members:\n   :inherited-members:\n\n\
                The application object holds férias and everything else.\n";
    let f = corpus_with("api.rst", page, GOLDEN, "");
    f.cmd().args(["validate", "exp.toml"]).assert().success();
    f.cmd()
        .args(["sections", "docs", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("The application object holds"));
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

/// One access declaration, written in one of the ways a file can carry it.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Yaml,
    SecondYamlDocument,
    Nested,
    ListOfMaps,
    MergeKey,
    LookAlike(&'static str),
    YamlAfterFence,
    Toml,
    TomlAfterFence,
    RstYaml,
    RstField,
    HtmlMeta,
    HtmlFrontMatter,
    ExplicitKey,
    EscapedKey,
    FlowMap,
    Anchor,
    /// A Hugo-style break the strict parser rejects, after a declaration in `the form given`.
    Lenient(&'static str),
    Jsonl,
    JsonlNested,
    /// Hugo's JSON front matter: on many lines, on one, in an HTML page; a key given twice.
    Json,
    JsonOneLine,
    JsonHtml,
    JsonTwice,
    /// A complex key only a parser reads as the access key.
    ComplexKey,
    /// A JSONL record naming the access key twice, or holding a whole file's front matter.
    JsonlTwice,
    JsonlTextFrontMatter,
    /// A key the YAML parser resolves to the access key: through a tag or an alias.
    Resolved(&'static str),
    /// A `!!binary` key: `acl` to a reader that decodes it.
    BinaryKey,
}

impl Shape {
    /// Whether this is the one declaration the readers take (SPEC §5).
    fn declares(self) -> bool {
        matches!(
            self,
            Shape::Yaml
                | Shape::Toml
                | Shape::RstYaml
                | Shape::Jsonl
                | Shape::HtmlFrontMatter
                | Shape::ExplicitKey
                | Shape::EscapedKey
                | Shape::Json
                | Shape::JsonOneLine
                | Shape::JsonHtml
                | Shape::Resolved(_)
        )
    }

    /// The file name and its bytes, declaring `group` for a document about a zebra.
    fn file(self, group: &str) -> (&'static str, String) {
        let yaml = format!("\"{}\"", group.replace('\\', "\\\\").replace('"', "\\\"").replace('\0', "\\0"));
        let toml = format!("\"{}\"", group.replace('\\', "\\\\").replace('"', "\\\"").replace('\0', "\\u0000"));
        let json = serde_json::to_string(&[group]).unwrap();
        let body = "# Segredo\nO segredo da zebra listrada.\n";
        match self {
            Shape::Yaml => ("secret.md", format!("---\nacl: [{yaml}]\n---\n{body}")),
            Shape::SecondYamlDocument => ("secret.md", format!("---\ntitle: x\n--- # p\nacl: [{yaml}]\n---\n{body}")),
            Shape::Nested => ("secret.md", format!("---\nparams:\n  acl: [{yaml}]\n---\n{body}")),
            Shape::ListOfMaps => ("secret.md", format!("---\nblocks:\n  - acl: [{yaml}]\n---\n{body}")),
            Shape::MergeKey => ("secret.md", format!("---\nbase: &b\n  acl: [{yaml}]\nother:\n  <<: *b\n---\n{body}")),
            Shape::LookAlike(key) => ("secret.md", format!("---\n{key}: [{yaml}]\n---\n{body}")),
            Shape::YamlAfterFence => ("secret.md", format!("---\ntitle: x\n---\nacl: [{yaml}]\n{body}")),
            Shape::Toml => ("secret.md", format!("+++\nacl = [{toml}]\n+++\n{body}")),
            Shape::TomlAfterFence => ("secret.md", format!("+++\ntitle = \"x\"\n+++\nacl = [{toml}]\n{body}")),
            Shape::RstYaml => ("secret.rst", format!("---\nacl: [{yaml}]\n---\nSegredo\n=======\n\nO segredo da zebra listrada.\n")),
            Shape::RstField => ("secret.rst", format!("Segredo\n=======\n\n:acl: {group}\n\nO segredo da zebra listrada.\n")),
            Shape::HtmlMeta => (
                "secret.html",
                format!("<html><head><meta name=\"acl\" content={}></head><body><p>O segredo da zebra listrada.</p></body></html>\n", serde_json::to_string(group).unwrap()),
            ),
            Shape::HtmlFrontMatter => (
                "secret.html",
                format!("---\nacl: [{yaml}]\n---\n<html><body><p>O segredo da zebra listrada.</p></body></html>\n"),
            ),
            Shape::ExplicitKey => ("secret.md", format!("---\n? acl\n: [{yaml}]\n---\n{body}")),
            Shape::EscapedKey => ("secret.md", format!("---\n\"\\x61cl\": [{yaml}]\n---\n{body}")),
            Shape::FlowMap => ("secret.md", format!("---\nparams: {{x: 1, acl: [{yaml}]}}\n---\n{body}")),
            Shape::Anchor => ("secret.md", format!("---\nbase: &b {{acl: [{yaml}]}}\n---\n{body}")),
            Shape::Lenient(form) => (
                "secret.md",
                format!("---\ntitle: x\n{}\nkeywords: [\"a\", \"b\",\n]\n---\n{body}", form.replace("GROUP", &yaml)),
            ),
            Shape::Jsonl => ("corpus.jsonl", format!("{{\"id\": \"secret\", \"text\": \"O segredo da zebra listrada.\", \"acl\": {json}}}\n")),
            Shape::JsonlNested => (
                "corpus.jsonl",
                format!("{{\"id\": \"secret\", \"text\": \"O segredo da zebra listrada.\", \"meta\": {{\"params\": {{\"acl\": {json}}}}}}}\n"),
            ),
            Shape::Json => ("secret.md", format!("{{\n  \"title\": \"Segredo\",\n  \"acl\": {json}\n}}\n{body}")),
            Shape::JsonOneLine => ("secret.md", format!("{{\"acl\": {json}}}\n{body}")),
            Shape::JsonHtml => (
                "secret.html",
                format!("{{\"acl\": {json}}}\n<html><body><p>O segredo da zebra listrada.</p></body></html>\n"),
            ),
            Shape::JsonTwice => ("secret.md", format!("{{\"acl\": {json}, \"acl\": []}}\n{body}")),
            Shape::ComplexKey => ("secret.md", format!("---\n? [acl]\n: [{yaml}]\n---\n{body}")),
            Shape::JsonlTwice => (
                "corpus.jsonl",
                format!("{{\"id\": \"secret\", \"text\": \"O segredo da zebra listrada.\", \"acl\": {json}, \"acl\": []}}\n"),
            ),
            Shape::Resolved(form) => ("secret.md", format!("---\n{}\n---\n{body}", form.replace("GROUP", &yaml))),
            Shape::BinaryKey => ("secret.md", format!("---\n!!binary YWNs: [{yaml}]\n---\n{body}")),
            Shape::JsonlTextFrontMatter => (
                "corpus.jsonl",
                format!(
                    "{{\"id\": \"secret\", \"text\": {}}}\n",
                    serde_json::to_string(&format!("---\nacl: [{yaml}]\n---\nO segredo da zebra listrada.")).unwrap()
                ),
            ),
        }
    }
}

fn shapes() -> impl proptest::strategy::Strategy<Value = Shape> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Shape::Yaml),
        Just(Shape::SecondYamlDocument),
        Just(Shape::Nested),
        Just(Shape::ListOfMaps),
        Just(Shape::MergeKey),
        prop::sample::select(vec![
            "user_groups",
            "visible_to",
            "shared_with",
            "Acl",
            "acls",
            "ａｃｌ",
            "tenants",
            "readers"
        ])
        .prop_map(Shape::LookAlike),
        Just(Shape::YamlAfterFence),
        Just(Shape::Toml),
        Just(Shape::TomlAfterFence),
        Just(Shape::RstYaml),
        Just(Shape::RstField),
        Just(Shape::HtmlMeta),
        Just(Shape::HtmlFrontMatter),
        Just(Shape::ExplicitKey),
        Just(Shape::EscapedKey),
        Just(Shape::FlowMap),
        Just(Shape::Anchor),
        prop::sample::select(vec![
            "acl: [GROUP]",
            "? acl\n: [GROUP]",
            "\"\\u0061cl\": [GROUP]",
            "params: {acl: [GROUP]}",
            "blocks: [{acl: [GROUP]}]",
            "base: &b {acl: [GROUP]}",
            "!!str acl: [GROUP]",
            "!<tag:yaml.org,2002:str> acl: [GROUP]",
            "name: &k acl\n*k : [GROUP]",
            "\"a\\\n  cl\": [GROUP]",
        ])
        .prop_map(Shape::Lenient),
        Just(Shape::Jsonl),
        Just(Shape::JsonlNested),
        Just(Shape::Json),
        Just(Shape::JsonOneLine),
        Just(Shape::JsonHtml),
        Just(Shape::JsonTwice),
        Just(Shape::ComplexKey),
        Just(Shape::JsonlTwice),
        Just(Shape::JsonlTextFrontMatter),
        prop::sample::select(vec![
            "!!str acl: [GROUP]",
            "!<tag:yaml.org,2002:str> acl: [GROUP]",
            "!custom acl: [GROUP]",
            "name: &k acl\n*k : [GROUP]",
            "keywords: &g [GROUP]\nacl: *g",
        ])
        .prop_map(Shape::Resolved),
        Just(Shape::BinaryKey),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, failure_persistence: None, ..Default::default() })]

    /// Whatever the reader and the way a file declares its access list, a run either refuses
    /// with the file and line, or filters exactly as the declared list says: a user in `ti`
    /// never gets the document restricted to another group. Read through a chain of includes
    /// (a public page including it, directly or through another page, by any include syntax),
    /// the run refuses at one of the chain's files: its text would reach whoever sees the page.
    #[test]
    fn every_reader_refuses_with_a_location_or_filters_as_declared(
        shape in shapes(),
        group in proptest::sample::select(vec!["rh", "a\"b", "a\\b", "x y", "r&d, lab", "ragsweep:public", "r\0h", "RAGSWEEP:x"]),
        ending in proptest::sample::select(vec!["\n", "\r\n", "\r"]),
        chain in 0usize..3,
        directive in proptest::sample::select(vec!["{{< readfile file=\"FILE\" >}}", "{{% include \"FILE\" %}}", "--8<-- \"FILE\"", "```{include} FILE\n```"]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (name, text) = shape.file(group);
        // Files keep the line ends their system writes (JSON Lines are read line by line).
        let text = if name.ends_with(".jsonl") { text } else { text.replace('\n', ending) };
        let corpus = if name == "corpus.jsonl" {
            std::fs::write(root.join("corpus.jsonl"), format!("{text}{{\"id\": \"public\", \"text\": \"Texto comum sobre férias.\"}}\n")).unwrap();
            "corpus.jsonl"
        } else {
            std::fs::create_dir_all(root.join("docs")).unwrap();
            std::fs::write(root.join("docs").join(name), text).unwrap();
            std::fs::write(root.join("docs/public.md"), "# Público\nTexto comum sobre férias.\n").unwrap();
            let mut included = name.to_string();
            for page in (1..=chain).map(|i| format!("page{i}.md")) {
                let text = format!("# Página\n\n{}\n", directive.replace("FILE", &included));
                std::fs::write(root.join("docs").join(&page), text.replace('\n', ending)).unwrap();
                included = page;
            }
            "docs"
        };
        let chain = if corpus == "docs" { chain } else { 0 };
        std::fs::write(root.join("golden.json"), r#"[{"id": "q1", "question": "segredo da zebra", "relevant": ["public"], "groups": ["ti"]}]"#).unwrap();
        std::fs::write(
            root.join("exp.toml"),
            format!("name = \"p\"\nunit = \"doc\"\nk = [2]\nlatency_cases = 0\nreserved_fraction = 0.0\nfilter = \"in_query\"\n\
                     [corpus]\npath = \"{corpus}\"\n[golden]\npath = \"golden.json\"\n\
                     [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n"),
        ).unwrap();
        let out = common::ragsweep().current_dir(root).args(["run", "--out", "out", "--cache", "cache", "exp.toml"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let valid_group = !group.to_lowercase().starts_with("ragsweep:") && !group.contains('\0');
        if out.status.success() {
            proptest::prop_assert!(chain == 0, "{shape:?} {group:?} {ending:?} read through {chain} includes ({directive}): {stderr}");
            proptest::prop_assert!(shape.declares() && valid_group, "{shape:?} {group:?} {ending:?} was read: {stderr}");
            let per_query = std::fs::read_to_string(root.join("out/p/latest/per_query.jsonl")).unwrap();
            proptest::prop_assert!(!per_query.contains("\"secret\""), "{shape:?} {group:?}: the user in ti got it: {per_query}");
            proptest::prop_assert!(per_query.contains("\"leaks\":0"), "{per_query}");
        } else {
            proptest::prop_assert_eq!(out.status.code(), Some(2), "{}", stderr);
            let located = std::iter::once(name.to_string())
                .chain((1..=chain).map(|i| format!("page{i}.md")))
                .any(|file| regex_lite(&stderr, &file));
            proptest::prop_assert!(located, "{shape:?} {group:?}: refused without file:line: {stderr}");
            proptest::prop_assert!(chain > 0 || !shape.declares() || !valid_group, "{shape:?} {group:?} refused: {stderr}");
            proptest::prop_assert!(!root.join("out/p").exists());
        }
    }
}

/// Whether `text` names `file` followed by `:LINE`.
fn regex_lite(text: &str, file: &str) -> bool {
    text.split(&format!("{file}:")).skip(1).any(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// Front matter the strict YAML parser rejects (a flow sequence closed at column 0, as Hugo
/// accepts) is read line by line only when nothing in it could declare access, however it is
/// written: an explicit key, an escaped key, a flow mapping or list, an anchor, or an access
/// line before the line that breaks. Each is refused at its file, also through an include.
#[test]
fn the_lenient_reader_never_decides_access() {
    let broken = "keywords: [\"a\", \"b\",\n]\n";
    for (name, declaration) in [
        ("explicit.md", "? acl\n: [rh]\n"),
        ("hex.md", "\"\\x61cl\": [rh]\n"),
        ("unicode.md", "\"\\u0061cl\": [rh]\n"),
        ("flow.md", "params: {acl: [rh]}\n"),
        ("flow2.md", "params: {x: 1, acl: [rh]}\n"),
        ("list.md", "blocks: [{acl: [rh]}]\n"),
        ("anchor.md", "base: &b {acl: [rh]}\n"),
        ("before.md", "acl: [rh]\n"),
    ] {
        for text in [
            format!("---\ntitle: x\n{declaration}{broken}---\nSegredo.\n"),
            format!("---\ntitle: x\n{broken}{declaration}---\nSegredo.\n"),
        ] {
            let f = corpus_with(name, &text, GOLDEN, "");
            f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(
                predicate::str::contains(format!("{name}:")).and(predicate::str::contains("YAML front matter")),
            );
            // Included by a page: the page is refused too, never public.
            let f = corpus_with("page.md", "# Página\n{{< readfile file=\"frag.md\" >}}\n", GOLDEN, "");
            std::fs::write(f.path().join("docs/frag.md"), &text).unwrap();
            f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(predicate::str::contains("frag.md:"));
        }
    }
    // Without any access declaration it is still read, line by line.
    let f = corpus_with("hugo.md", &format!("---\ntitle: Hugo\n{broken}---\n# Hugo\nTexto.\n"), GOLDEN, "");
    f.cmd().args(["validate", "exp.toml"]).assert().success();
}

/// The sixth pass's shapes: access written where only a YAML parser sees it (a tag, an alias,
/// a merge key, an escaped line break, beside the quirk that sends a reader to its lenient
/// path), complex keys, a quoted `"acl":` line in the text, and JSONL records with two access
/// lists or a whole file's front matter in `text`: refused at their line, nothing written.
#[test]
fn access_only_a_parser_can_see_is_refused_at_its_line() {
    // A flow list closed at column 0: the quirk Hugo accepts and YAML 1.2 does not.
    let quirk = "keywords: [\"a\", \"b\",\n]\n";
    for (name, text, at) in [
        ("tag.md", format!("---\ntitle: x\n!<tag:yaml.org,2002:str> acl: [rh]\n{quirk}---\nSegredo.\n"), "tag.md:"),
        ("tag-after.md", format!("---\ntitle: x\n{quirk}!!str acl: [rh]\n---\nSegredo.\n"), "tag-after.md:"),
        ("alias.md", format!("---\nname: &k acl\n*k : [rh]\n{quirk}---\nSegredo.\n"), "alias.md:"),
        ("merge.md", format!("---\nbase: &b {{\"\\x61cl\": [rh]}}\n<<: *b\n{quirk}---\nSegredo.\n"), "merge.md:"),
        ("escaped.md", format!("---\n\"a\\\n  cl\": [rh]\n{quirk}---\nSegredo.\n"), "escaped.md:"),
        ("cr.md", format!("---\rtitle: x\r*k : [rh]\r{}---\rSegredo.\r", quirk.replace('\n', "\r")), "cr.md:"),
        (
            "complex.md",
            "---\n? {acl: [rh]}\n: x\n---\nSegredo.\n".to_string(),
            "complex.md:2: YAML front matter: a key is",
        ),
        (
            "seq-key.md",
            "---\n? [acl]\n: [rh]\n---\nSegredo.\n".to_string(),
            "seq-key.md:2: YAML front matter: a key is",
        ),
        (
            "quoted.md",
            "# Título\n\"acl\": [rh]\nSegredo.\n".to_string(),
            "quoted.md:2: `\"acl\":` after the front matter",
        ),
        ("json-two.md", "{\"acl\": [\"rh\"], \"acl\": []}\nSegredo.\n".to_string(), "json-two.md:1:"),
        // In an HTML page as in Markdown: an indented fence, or an access line in a comment.
        (
            "indented.html",
            "  ---\nacl: [rh]\n  ---\n<html><body><p>Segredo.</p></body></html>\n".to_string(),
            "indented.html:2: `acl:`",
        ),
        ("comment.html", "<!--\nacl: [rh]\n-->\n<p>Segredo.</p>\n".to_string(), "comment.html:2: `acl:`"),
        (
            "binary.md",
            "---\ntitle: x\n!!binary YWNs: [rh]\n---\nSegredo.\n".to_string(),
            "binary.md:3: YAML front matter: a `!!binary` value",
        ),
    ] {
        let f = corpus_with(name, &text, GOLDEN, "");
        for args in [&["validate", "exp.toml"][..], &["run", "--out", "out", "--cache", "cache", "exp.toml"]] {
            f.cmd().args(args).assert().code(2).stderr(predicate::str::contains(at));
            assert!(!f.path().join("out").exists(), "{name}: {args:?} wrote a run");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("golden.json", &GOLDEN.replace("public", "a"));
    write(
        "exp.toml",
        "name = \"j\"\nunit = \"doc\"\nk = [1]\n[corpus]\npath = \"corpus.jsonl\"\n[golden]\npath = \"golden.json\"\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    let a = "{\"id\": \"a\", \"text\": \"férias abertas\"}\n";
    for (record, said) in [
        (r#"{"id": "b", "text": "férias", "acl": ["rh"], "acl": []}"#, "the key `acl` is given twice"),
        (r#"{"id": "b", "text": "férias", "meta": {"acl": ["rh"], "acl": []}}"#, "the key `acl` is given twice"),
        (
            r#"{"id": "b", "text": "---\nacl: [rh]\n---\nférias secretas"}"#,
            "the record's `text` opens with front matter",
        ),
    ] {
        write("corpus.jsonl", &format!("{a}{record}\n"));
        let mut cmd = common::ragsweep();
        cmd.current_dir(dir.path()).args(["validate", "exp.toml"]);
        cmd.assert().code(2).stderr(predicate::str::contains("corpus.jsonl:2").and(predicate::str::contains(said)));
    }
}

/// Hugo's JSON front matter (an object opening the file, on many lines or one, in Markdown and
/// in HTML) declares access as YAML's does: the restricted pages are filtered for a public user.
#[test]
fn json_front_matter_declares_access() {
    let f = Fixture::new(
        &[
            ("public.md", PUBLIC),
            ("many.md", "{\n  \"title\": \"Segredo\",\n  \"acl\": [\"rh\"]\n}\nférias secretas do RH\n"),
            ("one.md", "{ \"title\": \"Outro\", \"acl\": [\"rh\"] }\nférias secretas da diretoria\n"),
            ("page.html", "{\"acl\": [\"rh\"]}\n<html><body><p>férias secretas em HTML</p></body></html>\n"),
        ],
        r#"[{"id": "q1", "question": "férias secretas", "relevant": ["public"]}]"#,
        "name = \"json\"\nunit = \"doc\"\nk = [4]\nlatency_cases = 0\nfilter = \"in_query\"\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"simple\"\n",
    );
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("access: 1 of 4 documents public"));
    let run = f.run();
    let lines = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    assert!(lines.contains("\"top\":[\"public\"]"), "only the public page is returned: {lines}");
    assert!(!lines.contains("segredo") && !lines.contains("\"many\""), "{lines}");
}
