//! `ragsweep init` on a folder of documents that is not the demo: it writes a starting
//! experiment and golden stubs, `validate` lists the stubs still empty, and once the stubs are
//! filled the experiment runs end to end.

use crate::common;

use crate::common::{ragsweep, repo};
use predicates::prelude::*;
use serde_json::Value;

const TOPICS: [(&str, [&str; 3]); 6] = [
    (
        "emprestimo",
        [
            "Prazo de devolução é de quinze dias corridos",
            "Renovação pode ser feita pelo site duas vezes",
            "Multa diária de um real por livro atrasado",
        ],
    ),
    (
        "cadastro",
        [
            "Documento com foto e comprovante de residência",
            "Menores de idade precisam de um responsável",
            "A carteirinha fica pronta em sete dias",
        ],
    ),
    (
        "acervo",
        [
            "São quarenta mil livros e três mil periódicos",
            "Obras raras ficam na sala de consulta local",
            "Doações passam por uma triagem da equipe",
        ],
    ),
    (
        "horarios",
        [
            "Abre de segunda a sexta das oito às vinte",
            "Aos sábados funciona das nove às treze",
            "Fecha nos feriados municipais e nacionais",
        ],
    ),
    (
        "eventos",
        [
            "Clube de leitura toda primeira quarta do mês",
            "Oficinas de escrita para adolescentes em julho",
            "Contação de histórias aos domingos pela manhã",
        ],
    ),
    (
        "digital",
        [
            "O catálogo online mostra a disponibilidade",
            "Livros digitais podem ser emprestados por sete dias",
            "O wifi da biblioteca é gratuito para sócios",
        ],
    ),
];

#[test]
fn init_then_filled_stubs_then_run_works_on_a_new_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    for (name, sections) in TOPICS {
        let mut text = format!("# Biblioteca: {name}\n\nRegras da biblioteca municipal sobre {name}.\n");
        for (i, s) in sections.iter().enumerate() {
            text.push_str(&format!("\n## Regra {}\n\n{s}, conforme o regulamento de 2024 que não mudou.\n", i + 1));
        }
        std::fs::write(docs.join(format!("{name}.md")), text).unwrap();
    }
    let project = dir.path().join("projeto");
    let cmd = |args: &[&str]| {
        let mut c = ragsweep();
        c.current_dir(dir.path()).args(args);
        c
    };
    cmd(&["init", "docs", "--out", "projeto"])
        .assert()
        .success()
        .stdout(predicate::str::contains("for 6 documents (24 sections, 6 without a stub"))
        .stdout(predicate::str::contains("BM25 analyzer pt"))
        .stdout(predicate::str::contains("Why so many"));
    let toml = std::fs::read_to_string(project.join("experiment.toml")).unwrap();
    assert!(
        toml.contains("analyzer = \"pt\"")
            && toml.contains("path = \"../docs\"")
            && toml.contains("unit = \"section\""),
        "{toml}"
    );
    let stubs: Vec<Value> = std::fs::read_to_string(project.join("golden.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stubs.len(), 18 + 4, "every section but the whole-document ones, and 4 unanswerable stubs");
    let labelled_docs: std::collections::BTreeSet<String> = stubs
        .iter()
        .filter_map(|s| s["relevant"][0].as_str())
        .map(|l| l.split('#').next().unwrap().to_string())
        .collect();
    assert_eq!(labelled_docs.len(), 6, "stubs spread over every document");

    let models = repo().join("models");
    let validate = || {
        let mut c = cmd(&["validate", "--models"]);
        c.arg(&models).arg("projeto/experiment.toml");
        c.assert()
    };
    validate().code(2).stderr(predicate::str::contains("case \"q01\" has an empty question, and 21 more: q02,"));
    // Fill the stubs as a user would: a few words of the labelled text; unanswerable ones by hand.
    let filled: Vec<String> = stubs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            let question = match s["meta"]["snippet"].as_str() {
                Some(snippet) => {
                    snippet.split_whitespace().skip(1).take(6).collect::<Vec<_>>().join(" ").to_lowercase()
                }
                None => {
                    ["tem estacionamento?", "vende café?", "aceita cartão de crédito?", "qual o telefone do prefeito?"]
                        [i % 4]
                        .to_string()
                }
            };
            s["question"] = Value::String(question);
            s.to_string()
        })
        .collect();
    std::fs::write(project.join("golden.jsonl"), filled.join("\n") + "\n").unwrap();
    validate().success().stdout(predicate::str::contains("22 cases (4 unanswerable)"));
    let mut run = cmd(&["run", "-q", "--models"]);
    run.arg(&models)
        .arg("--cache")
        .arg(dir.path().join("cache"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("projeto/experiment.toml");
    run.assert().success().stdout(predicate::str::contains("Selected on tuning by ndcg@10"));
    let out = common::run_dir(&dir.path().join("out"), "my-retrieval");
    let matrix: Value = serde_json::from_str(&std::fs::read_to_string(out.join("matrix.json")).unwrap()).unwrap();
    assert_eq!(matrix["rows"].as_array().unwrap().len(), 12, "2 chunkers × 3 retrievers × 2 splits");

    cmd(&["init", "docs", "--out", "projeto"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("init never overwrites"));
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    ragsweep()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(predicate::str::contains("contexts"))
        .stdout(predicate::str::contains("--fail-on"));
    ragsweep().args(["completions", "zsh"]).assert().success().stdout(predicate::str::contains("#compdef ragsweep"));
    ragsweep().arg("man").assert().success().stdout(predicate::str::contains(".TH ragsweep 1"));
}

#[test]
fn models_list_shows_what_is_installed_and_install_refuses_unknown_models() {
    ragsweep()
        .args(["models", "list", "--check", "--models"])
        .arg(repo().join("models"))
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"minilm-l6\s+\d+\.\d MB  ok  Apache-2\.0").unwrap())
        .stdout(predicate::str::is_match(r"e5-small\s+\d+\.\d MB  ok  MIT").unwrap())
        .stdout(predicate::str::is_match(r"e5-small-int8\s+\d+\.\d MB  ok  MIT").unwrap())
        .stdout(predicate::str::is_match(r"minilm-l6-fp32\s+\d+\.\d MB  ok  Apache-2\.0").unwrap())
        .stdout(predicate::str::is_match(r"onnxruntime\s+\d+\.\d MB  ok  MIT").unwrap());
    let empty = tempfile::tempdir().unwrap();
    ragsweep()
        .args(["models", "list", "--models"])
        .arg(empty.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("nothing installed"));
    ragsweep()
        .args(["models", "install", "bert", "--models"])
        .arg(empty.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown model \"bert\": the models are minilm-l6, e5-small, minilm-l6-fp32, minilm-l6-int8, e5-small-fused, e5-small-int8"));
}

/// `init` on a folder with PDFs (pages listed after headings) writes its stubs, no panic.
#[test]
fn init_reads_a_folder_of_pdfs() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for entry in std::fs::read_dir(common::repo().join("tests/fixtures/formats/pdf")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, docs.join(path.file_name().unwrap())).unwrap();
    }
    common::ragsweep().current_dir(dir.path()).args(["init", "docs", "--out", "."]).assert().success();
    assert!(dir.path().join("golden.jsonl").is_file());
}

/// Writes `pages` pages into `dir/docs/folder`, each with a setting section naming its own flag
/// and a caveats section.
fn setting_pages(dir: &std::path::Path, folder: &str, pages: usize) {
    std::fs::create_dir_all(dir.join("docs").join(folder)).unwrap();
    for i in 0..pages {
        let text = format!(
            "# Page {i} of the {folder}\n\n## Setting {i}\n\nThe `--opt-{folder}-{i}` flag controls how the builder treats page {i}. \
             It is read once at start-up and applies to every page of the site, including drafts and archived \
             pages, unless a page overrides it in its own front matter.\n\n## Caveats {i}\n\nOlder releases ignored the \
             flag when the cache was warm, so clear the cache after changing it; the log then shows which pages \
             were built again and which were reused from the previous build.\n"
        );
        std::fs::write(dir.join("docs").join(folder).join(format!("p{i:03}.md")), text).unwrap();
    }
}

/// `init --stubs 40` on 300 documents in three folders: 36 answerable stubs spread evenly over
/// the folders and over 36 documents, each with drafts from its own text (heading, first
/// sentence, its flag); the English text gets the English int8 model; a question left equal to
/// a draft is not counted, and `validate` says so.
#[test]
fn init_stratifies_forty_stubs_with_drafts_and_validate_leaves_out_unedited_drafts() {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["guide", "reference", "tutorial"] {
        setting_pages(dir.path(), folder, 100);
    }
    let cmd = |args: &[&str]| {
        let mut c = ragsweep();
        c.current_dir(dir.path()).args(args);
        c
    };
    cmd(&["init", "docs", "--out", "project", "--stubs", "40"])
        .assert()
        .success()
        .stdout(predicate::str::contains("(40 stubs) for 300 documents"))
        .stdout(predicate::str::contains("embedding model minilm-l6-int8"));
    let toml = std::fs::read_to_string(dir.path().join("project/experiment.toml")).unwrap();
    assert!(toml.contains("model = \"minilm-l6-int8\"") && toml.contains("e5-small-int8 (multilingual)"), "{toml}");
    let golden = dir.path().join("project/golden.jsonl");
    let stubs: Vec<Value> =
        std::fs::read_to_string(&golden).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(stubs.len(), 40);
    let labels: Vec<&str> = stubs.iter().filter_map(|s| s["relevant"][0].as_str()).collect();
    assert_eq!(labels.len(), 36, "a tenth unanswerable");
    for folder in ["guide", "reference", "tutorial"] {
        assert_eq!(labels.iter().filter(|l| l.starts_with(&format!("{folder}/"))).count(), 12, "{labels:?}");
    }
    let docs: std::collections::BTreeSet<&str> = labels.iter().map(|l| l.split('#').next().unwrap()).collect();
    assert_eq!(docs.len(), 36, "a document's second section waits until every document had one");
    let first = &stubs[0];
    let drafts: Vec<&str> = first["meta"]["drafts"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    let n =
        first["relevant"][0].as_str().unwrap().split('#').nth(1).unwrap().trim_start_matches("Setting ").to_string();
    assert_eq!(first["meta"]["draft"], true);
    // Each draft names the page it is about, as a user of the documentation would.
    assert!(drafts.iter().any(|d| d.starts_with("What does Page ") && d.contains(" say about Setting ")), "{drafts:?}");
    assert!(drafts.iter().any(|d| d.starts_with("Is it true that The `--opt-")), "{drafts:?}");
    assert!(drafts.iter().any(|d| d.contains(&format!("-{n}` do in Page {n} of the "))), "{drafts:?}");

    // q01 keeps a draft as its question; every other stub gets a question of its own.
    let filled: Vec<String> = stubs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            s["question"] =
                Value::String(if i == 0 { drafts[0].to_string() } else { format!("how do I set option number {i}") });
            s.to_string()
        })
        .collect();
    std::fs::write(&golden, filled.join("\n") + "\n").unwrap();
    cmd(&["validate", "project/experiment.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("39 cases (4 unanswerable)"))
        .stdout(predicate::str::contains("1 unedited draft left out"))
        .stdout(predicate::str::contains("q01"))
        // The estimate says how sure it is: the rounds' spread and the range it gives.
        .stdout(
            predicate::str::is_match(
                r"cold run: minilm-l6-int8 embeds \d+ passages at about \d+/s \(\d+–\d+/s over \d+ rounds? of a [\d.]+ s probe on \d+ threads\): about .+ \(between .+ and .+\)",
            )
            .unwrap(),
        );
}

/// The labels of the answerable stubs `init --out project` wrote in `dir`, in their order.
fn stub_labels(dir: &std::path::Path) -> Vec<String> {
    let golden = std::fs::read_to_string(dir.join("project/golden.jsonl")).unwrap();
    golden
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).unwrap()["relevant"][0].as_str().map(String::from))
        .collect()
}

/// Stubs are spread by content: on folders of 60, 25 and 5 pages beside eight one-page folders,
/// each folder with at least 2 % of the sections gets its share, the largest the most, and the
/// one-page folders none (in alphabetical turns they took 8 of 18).
#[test]
fn stubs_go_to_folders_in_proportion_to_their_sections() {
    let dir = tempfile::tempdir().unwrap();
    let mut folders: Vec<(String, usize)> = vec![("reference".into(), 60), ("guide".into(), 25), ("faq".into(), 5)];
    folders.extend((0..8).map(|i| (format!("a{i}"), 1)));
    for (folder, pages) in &folders {
        setting_pages(dir.path(), folder, *pages);
    }
    ragsweep().current_dir(dir.path()).args(["init", "docs", "--out", "project", "--stubs", "20"]).assert().success();
    let labels = stub_labels(dir.path());
    let count = |folder: &str| labels.iter().filter(|l| l.starts_with(&format!("{folder}/"))).count();
    assert_eq!(labels.len(), 18);
    assert_eq!((count("reference"), count("guide"), count("faq")), (12, 5, 1), "{labels:?}");
    // The first three stubs already cover the three folders.
    let first: std::collections::BTreeSet<&str> = labels[..3].iter().map(|l| l.split('/').next().unwrap()).collect();
    assert_eq!(first.len(), 3, "{labels:?}");
}

/// A site checked out whole (a README beside `content/en`, each section's pages in subfolders
/// of their own): the folders shared are those under the trunk that holds nearly every page, so
/// `reference`, 60 pages in thirty subfolders of two, gets its share as one folder, as it does
/// when laid flat (taken folder by subfolder it got 16 of 18 and `guide` 1), and the README none.
#[test]
fn stubs_go_to_the_folders_a_reader_sees_in_a_checked_out_site() {
    let dir = tempfile::tempdir().unwrap();
    let mut folders: Vec<(String, usize)> =
        (0..30).map(|i| (format!("site/content/en/reference/r{i:02}"), 2)).collect();
    folders.extend([("site/content/en/guide".to_string(), 25), ("site/content/en/faq".to_string(), 5)]);
    folders.extend((0..8).map(|i| (format!("site/content/en/a{i}"), 1)));
    for (folder, pages) in &folders {
        setting_pages(dir.path(), folder, *pages);
    }
    std::fs::write(dir.path().join("docs/site/README.md"), "# Site\n\nHow to build this site locally.\n").unwrap();
    ragsweep().current_dir(dir.path()).args(["init", "docs", "--out", "project", "--stubs", "20"]).assert().success();
    let labels = stub_labels(dir.path());
    let count = |folder: &str| labels.iter().filter(|l| l.starts_with(&format!("site/content/en/{folder}/"))).count();
    assert_eq!((count("reference"), count("guide"), count("faq")), (12, 5, 1), "{labels:?}");
    assert!(!labels.iter().any(|l| l.starts_with("site/README")), "{labels:?}");
}

/// The drafts' rubric on a documentation-like corpus: pages whose prose holds the markup, code,
/// example data and generic flags real documentation holds (`w-40`, `\u0026`, `[]any`,
/// `post1.md`, `[context][]`, `**Actions**`, `--version` on every page) under a heading every
/// page repeats (`Overview`): no draft uses any of them, and every stub still has a draft
/// asking about its own rare flag.
#[test]
fn drafts_never_use_markup_example_data_generic_flags_or_generic_headings() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..40 {
        let folder = ["content", "functions", "templates", "hosting"][i % 4];
        std::fs::create_dir_all(dir.path().join("docs").join(folder)).unwrap();
        let text = format!(
            "---\ntitle: Feature {i}\n---\n# Feature {i}\n\n## Overview\n\nRun `hugo --version` first. The grid uses the `w-40` class, \
             the escape `\\u0026` and the type `[]any`; the example site has `post1.md` and a `[context][]` link, and the \
             **Actions** menu. Then the `--feature-{i}-mode` flag selects how feature {i} renders its pages when the \
             site is built for production.\n\n## Deploying feature {i}\n\nThe `--feature-{i}-target` flag names where \
             feature {i} is deployed; the builder reads it once and writes every page of the site there, \
             replacing what an earlier build left, unless a page says otherwise in its own front matter. {ordinary}\n",
            ordinary = if i == 0 { "Its ownership stages are fairly simple." } else { "" }
        );
        std::fs::write(dir.path().join("docs").join(folder).join(format!("f{i:02}.md")), text).unwrap();
    }
    ragsweep().current_dir(dir.path()).args(["init", "docs", "--out", "project", "--stubs", "30"]).assert().success();
    let golden = std::fs::read_to_string(dir.path().join("project/golden.jsonl")).unwrap();
    let stubs: Vec<Value> = golden.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Ordinary words on one page only are rare by document frequency, never exact terms.
    let junk = [
        "w-40",
        "u0026",
        "[]any",
        "post1.md",
        "[context]",
        "**",
        "--version",
        "about Overview",
        "say about Overview",
        "is ownership",
        "is fairly",
        "is stages",
    ];
    let (mut drafts, mut own_flag) = (0, 0);
    for stub in stubs.iter().filter(|s| s["answerable"] != false) {
        let page = stub["relevant"][0].as_str().unwrap().split('#').next().unwrap().rsplit('/').next().unwrap();
        let n: usize = page.trim_start_matches('f').parse().unwrap();
        let all: Vec<&str> = stub["meta"]["drafts"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
        for d in &all {
            assert!(!junk.iter().any(|j| d.contains(j)), "junk in a draft: {d}");
            drafts += 1;
        }
        own_flag += usize::from(all.iter().any(|d| d.contains(&format!("--feature-{n}-"))));
    }
    assert!(drafts >= 27, "{drafts} drafts for 27 stubs");
    assert_eq!(own_flag, 27, "every stub asks about a flag of its own page");
}

/// Drafts on pages made of tables, link references, code blocks and prose: every draft is a
/// question in words naming its page, none is built from markup; no stub's label covers its
/// whole document.
#[test]
fn drafts_are_questions_a_user_would_ask_never_markup() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    let prose = "The builder reads the configuration once at start-up and applies it to every page of the site, \
                 unless a page overrides a value in its own front matter, which wins for that page only.";
    for i in 0..12 {
        let text = format!(
            "---\ntitle: Builder guide {i}\n---\n# Builder guide {i}\n\n## Options {i}\n\n{prose} Use `--drafts-{i}` to build drafts.\n\n\
             ## Table {i}\n\n| Name | Value |\n|--|:--|\n| `a` | 1 |\n| `b` | 2 |\n| `c` | 3 |\n| `d` | 4 |\n| `e` | 5 |\n| `f` | 6 |\n| `g` | 7 |\n| `h` | 8 |\n| `i` | 9 |\n\n\
             ## Links {i}\n\nSee [Multiplatform][] and [Other][] and [More][] for the details of every platform and every release we support today.\n\n\
             [Multiplatform]: https://example.com/m\n[Other]: https://example.com/o\n\n\
             ## Tree {i}\n\n```tree\ncontent/\n├── books/\n│   ├── a.md\n│   └── b.md\n└── films/\n    └── c.md with many more words to pass the minimum length of a section here\n```\n\n\
             ## Empty code {i}\n\nThe shortcode is written `{{{{</* myshortcode */>}}}}` and shown as `` in the page; {prose}\n"
        );
        std::fs::write(dir.path().join("docs").join(format!("g{i:02}.md")), text).unwrap();
    }
    ragsweep().current_dir(dir.path()).args(["init", "docs", "--out", "project", "--stubs", "30"]).assert().success();
    let golden = std::fs::read_to_string(dir.path().join("project/golden.jsonl")).unwrap();
    let stubs: Vec<Value> = golden.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut all = Vec::new();
    for stub in stubs.iter().filter(|s| s["answerable"] != false) {
        let label = stub["relevant"][0].as_str().unwrap();
        assert!(label.contains('#'), "a section, never the whole document: {label}");
        let page = label.split('#').next().unwrap().trim_start_matches('g').parse::<usize>().unwrap();
        for d in stub["meta"]["drafts"].as_array().unwrap() {
            let d = d.as_str().unwrap().to_string();
            assert!(d.ends_with('?'), "{d}");
            assert!(!d.contains("``") && !d.contains('|') && !d.contains("][") && !d.contains("```"), "markup: {d}");
            assert!(!d.contains("What is `") && !d.contains("? ?"), "{d}");
            if !d.starts_with("Is it true") {
                assert!(d.contains(&format!("Builder guide {page}")), "names its page: {d}");
            }
            all.push(d);
        }
    }
    assert!(
        all.iter().any(|d| d == &format!("What does `--drafts-{}` do in Builder guide {}?", 0, 0))
            || all.iter().any(|d| d.contains("` do in Builder guide ")),
        "{all:?}"
    );
}

/// Asserts that no draft holds any of `junk`.
fn assert_no_draft_holds(drafts: &[String], junk: &[&str]) {
    for d in drafts {
        for j in junk {
            assert!(!d.contains(j), "{j:?} in {d}");
        }
    }
}

/// The drafts `init --stubs 10` writes for twelve reStructuredText pages `NAME00.rst`… whose
/// text `page(i)` gives.
fn drafts_of_rest_pages(name: &str, page: impl Fn(usize) -> String) -> Vec<String> {
    drafts_of_pages(&format!("{name}{{}}.rst"), "10", page)
}

/// The drafts `init --stubs STUBS` writes for twelve pages named by `file` (its `{}` the page's
/// two-digit number) whose text `page(i)` gives.
fn drafts_of_pages(file: &str, stubs: &str, page: impl Fn(usize) -> String) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    for i in 0..12 {
        std::fs::write(dir.path().join("docs").join(file.replace("{}", &format!("{i:02}"))), page(i)).unwrap();
    }
    ragsweep().current_dir(dir.path()).args(["init", "docs", "--out", "project", "--stubs", stubs]).assert().success();
    let golden = std::fs::read_to_string(dir.path().join("project/golden.jsonl")).unwrap();
    golden
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .flat_map(|s| s["meta"]["drafts"].as_array().cloned().unwrap_or_default())
        .map(|d| d.as_str().unwrap().to_string())
        .collect()
}

/// Reference pages as a site generator's docs write them state little in their first sentences:
/// instructions and function descriptions without a subject (`Generate the …`, `Returns the
/// …`), sentences that need the one before (`for this setup`), examples (`For example, …`).
/// None is drafted as a claim, nor is a command line or a type in words (`git clone`, `map or
/// string`), a name an example makes up (`myDate`) or a marker the markup left (`--more--`)
/// drafted as an exact term; a command its page names is (`hugo server` on "Hugo server").
#[test]
fn drafts_leave_out_instructions_descriptions_and_command_lines() {
    let drafts = drafts_of_pages("server{}.md", "12", |i| {
        format!(
            "---\ntitle: Hugo server {i}\n---\n# Hugo server {i}\n\n## Live reload {i}\n\n\
             Generate the completion script for the zsh shell of release {i} and every later one.\n\n\
             Returns the list of pages of section {i}, sorted by their weight and title.\n\n\
             You need to start a new shell for this setup to take effect in release {i}.\n\n\
             For example, create a main menu for the header and a second one for the footer of site {i}.\n\n\
             The `options{i}` argument takes a `map or string` value, and `git clone` fetches the \
             `myDate{i}` folder and the `<!--more-->` divider, while `hugo server` serves release {i}.\n\n\
             The development server rebuilds site {i} whenever a watched file changes on disk.\n\n\
             ## Ports {i}\n\nThe server listens on port 1313 unless the configuration of site {i} names another.\n"
        )
    });
    assert!(drafts.len() >= 12, "{drafts:?}");
    assert_no_draft_holds(
        &drafts,
        &[
            "Generate the",
            "Returns the",
            "this setup",
            "For example",
            "map or string",
            "git clone",
            "myDate",
            "--more--",
        ],
    );
    assert!(drafts.iter().any(|d| d.contains("`hugo server`")), "{drafts:?}");
}

/// What a page shows but does not state is no draft: a directive's options (a module's
/// synopsis), a `seealso` pointer, a name made up for an example ("For instance, you might have
/// a `BlogComment` model"), a sentence that opens by pointing back ("This module is …"); and a
/// role's code span stays whole beside a later literal.
#[test]
fn drafts_leave_out_what_a_page_shows_but_does_not_state() {
    let drafts = drafts_of_rest_pages("signals", |i| {
        format!(
            "=================\nSignals guide {i}\n=================\n\n\
             Model signals {i}\n=================\n\n\
             .. module:: app.signals{i}\n   :synopsis: Signals sent by the model system.\n\n\
             This module is plain Python code and maps every signal to its receivers.\n\n\
             The :mod:`app.signals{i}` module defines a set of signals sent by the model system when\n\
             ``__init__`` or :meth:`~app.Model.save` runs.\n\n\
             .. seealso::\n\n    The `community aggregator`_, where we aggregate content from everywhere.\n\n\
             Receivers of ``post_save_hook{i}`` run after every save of the model instance. For instance,\n\
             you might have a ``BlogComment{i}`` model whose receivers send mail.\n\n\
             .. _community aggregator: https://example.org/\n"
        )
    });
    assert!(drafts.len() >= 10, "{drafts:?}");
    assert_no_draft_holds(&drafts, &["Is it true that Signals sent", "aggregat", "BlogComment", "This module"]);
    for d in &drafts {
        assert_eq!(d.matches('`').count() % 2, 0, "a code span cut open: {d}");
    }
    assert!(
        drafts.iter().any(|d| d.starts_with("Is it true that The `app.signals") && d.contains("` module defines")),
        "{drafts:?}"
    );
    assert!(drafts.iter().any(|d| d.contains("`post_save_hook")), "a name the product has stays a term: {drafts:?}");
}

/// Drafts on Sphinx pages (reStructuredText) as their readers see them: roles are the names
/// they show, cross-reference labels, targets and hyperlink references are no terms, a term
/// only a code example holds is the example's data, and a sentence that introduces a list or
/// points at the page around it, or an item of a list, is no claim to ask about.
#[test]
fn drafts_on_sphinx_pages_read_the_page_as_rendered() {
    let drafts = drafts_of_rest_pages("forms", |i| {
        format!(
            "==================\nForms reference {i}\n==================\n\n.. _bound-forms-{i}:\n\n\
             Bound and unbound forms {i}\n==========================\n\n\
             The following attributes are available:\n\n\
             * ``is_bound{i}`` tells whether data was given to the form, and every field reads it.\n\n\
             A form instance is bound when :attr:`~django.forms.Form.is_bound{i}` is true, as \
             :ref:`the validation overview <validation-{i}>` explains. The `Django project`_, :ref:`form-labels-{i}` \
             and the :doc:`tutorial </intro/part{i}>` say more, and ``QuerySet``\\s are never evaluated here.\n\n\
             .. code-block:: python\n\n    my_sample_form{i} = ExampleForm{i}(data)\n    assert my_sample_form{i}.is_valid()\n\n\
             For an example, see the :class:`Form` class, which Koziarski{i} documented for every release.\n\n\
             .. _Django project: https://www.djangoproject.com/\n"
        )
    });
    assert!(drafts.len() >= 10, "{drafts:?}");
    assert_no_draft_holds(
        &drafts,
        &[
            ":attr:",
            ":ref:",
            ":doc:",
            ":class:",
            "``",
            "`_",
            "\\s",
            "validation-",
            "form-labels-",
            "bound-forms-",
            "my_sample_form",
            "ExampleForm",
            "following",
            "* ",
            "see the",
            "django.forms",
        ],
    );
    assert!(drafts.iter().any(|d| d.contains("`is_bound")), "the role's name is a term: {drafts:?}");
    assert!(drafts.iter().any(|d| d.starts_with("Is it true that A form instance is bound")), "{drafts:?}");
    assert!(drafts.iter().any(|d| d.contains("say about Bound and unbound forms")), "{drafts:?}");
}

/// Names a page lists after "Here are some example names:", an acronym it only uses (`CSV`),
/// a sentence that points back ("For the latter, …", "The reverse of that function …") and a
/// test function its code defines (mentioned elsewhere only inside a longer name) are no
/// drafts; an acronym the page spells out is one.
#[test]
fn drafts_leave_out_example_lists_undefined_acronyms_and_sentences_pointing_back() {
    const WORDS: [&str; 12] =
        ["Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliet", "Kilo", "Lima"];
    let drafts = drafts_of_rest_pages("extensions", |i| {
        let (word, previous) = (WORDS[i], (i + 9) % 12);
        let acronym = format!("Z{}Q", &word[..1]);
        let section = match i % 3 {
            0 => format!(
                "Naming {i}\n==========\n\n\
                 An extension's install name and its import name are related: the import name is lower case with \
                 underscores, and the install name uses dashes between the words of the name.\n\n\
                 Here are some example install and import names:\n\n\
                 -   ``Flask-Name{i}`` imported as ``flask_name{i}``\n\
                 -   ``Flask-ComboName{i}`` imported as ``flask_comboname{i}``\n"
            ),
            1 => format!(
                "Streaming {i}\n=============\n\n\
                 The streaming view sends a lot of CSV data on the fly to the client as the database produces the \
                 rows, without holding them in memory.\n\n\
                 The Zeta {word} Queue ({acronym}) holds the rows until the client reads them, and the \
                 ``stream_rows{i}`` helper drains it in order.\n"
            ),
            _ => format!(
                "URL processors {i}\n==================\n\n\
                 For the latter, this is where ``url_defaults{i}`` functions come in and fill the values every view \
                 expects.\n\n\
                 The reverse of that function are the processors that run first and pull the values out of the URL.\n\n\
                 .. code-block:: python\n\n    def test_hello{i}(client):\n        assert client.get('/').status_code == 200\n\n\
                 The ``test_hello{i}`` function checks the index page, and ``test_hello{previous}_command`` checks \
                 the command of another guide, whenever the suite runs.\n"
            ),
        };
        format!("===================\nExtension guide {i}\n===================\n\n{section}")
    });
    assert!(drafts.len() >= 10, "{drafts:?}");
    assert_no_draft_holds(&drafts, &["Flask-Name", "ComboName", "What is CSV", "For the latter", "reverse of that"]);
    for d in &drafts {
        let defined_test = d
            .strip_prefix("What does `test_hello")
            .is_some_and(|rest| rest.trim_start_matches(char::is_numeric).starts_with('`'));
        assert!(!defined_test, "a test function an example defines: {d}");
    }
    assert!(drafts.iter().any(|d| d.starts_with("What is Z") && d.contains("Q in Extension guide")), "{drafts:?}");
}
