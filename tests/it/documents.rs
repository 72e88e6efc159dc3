//! A documentation folder as real sites write it (MyST/Hugo front matter, fences inside list
//! items, reStructuredText pages) goes through init → labels → validate → run without editing
//! a document; `sections` lists the ids labels may name, and an unknown label gets a
//! "did you mean".

use crate::common;

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn ragsweep(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("ragsweep").unwrap();
    cmd.current_dir(dir).env("RAGSWEEP_MODELS", common::repo().join("models"));
    cmd
}

const INSTALL: &str = r#"---
hide-toc: true
myst:
  html_meta:
    description: Installing the tool
sidebar_position: 2
tags: [install, setup]
---
# Installation

Installing the command line tool takes one command on every platform. The package is published
on the usual package index, and the installer checks the Python version before it starts.

1. Create a virtual environment first:
   - ```bash
     python -m venv .venv
     # this comment is not a heading
     ```
2. Then install the package with pip and check the version it prints at the end.

## Upgrading

To upgrade the tool, run the installer again with the upgrade flag; your configuration files in
the home folder are kept, and the cache is rebuilt on the first run after the upgrade.

## Uninstalling

Removing the tool deletes the executable and the cache folder but never your project files, so a
later installation picks up the existing configuration without asking any question again.
"#;

const CONFIG: &str = "+++\ntitle = \"Configuration\"\nweight = 3\ndraft = false\n+++\n# Configuration\n\n\
Contents:\n\n- [Files](#files)\n- [Variables](#variables)\n\n## Files\n\n\
The configuration lives in a file named tool.toml at the project root, read at every start; a \
missing file means the defaults, and an unknown key in it stops the tool with the line number.\n\n\
## Variables\n\nEnvironment variables override the file: TOOL_CACHE moves the cache folder, and \
TOOL_COLOR turns colours off when set to never, which scripts and continuous integration prefer.\n";

const FAQ: &str = "Frequently asked questions\n==========================\n\nWhy is the first run slow?\n\
--------------------------\n\nThe first run builds the cache for every project it sees, reading each \
file once and storing what it learns; later runs reuse that work and start in well under a second.\n\n\
Can I use it offline?\n---------------------\n\nYes: after installation nothing is downloaded, \
every model ships with the package, and the tool never opens a network connection on its own.\n";

#[test]
fn a_real_documentation_folder_goes_through_init_labels_validate_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    fs::create_dir_all(docs.join("guide")).unwrap();
    fs::write(docs.join("guide/install.md"), INSTALL).unwrap();
    fs::write(docs.join("guide/config.md"), CONFIG).unwrap();
    fs::write(docs.join("faq.rst"), FAQ).unwrap();
    fs::write(docs.join("logo.svg"), "<svg/>").unwrap();
    let project = dir.path().join("project");
    ragsweep(dir.path())
        .args(["init", "docs", "--out", "project"])
        .assert()
        .success()
        .stdout(predicate::str::contains("read 2 .md, 1 .rst; skipped 1: logo.svg (.svg: not a known format)"))
        .stdout(predicate::str::is_match(r"\d+ without a stub: link lists").unwrap())
        .stdout(predicate::str::contains("document metadata (front matter and fields kept as meta): "))
        .stdout(predicate::str::contains("hide-toc ×1").and(predicate::str::contains("weight ×1")));
    // The fence inside the list item hides its comment; the headings after it are sections.
    ragsweep(dir.path())
        .args(["sections", "docs", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains(r#""id":"guide/install#Uninstalling""#))
        .stdout(predicate::str::contains(r#""id":"faq#Can I use it offline?""#))
        .stdout(
            predicate::str::contains("this comment is not a heading")
                .not()
                .or(predicate::str::contains("#this comment").not()),
        );
    let golden = fs::read_to_string(project.join("golden.jsonl")).unwrap();
    assert!(!golden.contains("guide/config#Configuration\""), "a table of contents gets no stub: {golden}");
    // Fill the stubs the way a person would: a question for each labelled section.
    let questions = [
        ("guide/install#Installation", "how do I install the command line tool"),
        ("guide/install#Upgrading", "will an upgrade keep my configuration files"),
        ("guide/install#Uninstalling", "does removing it delete my project files"),
        ("guide/config#Files", "where does the configuration file live"),
        ("guide/config#Variables", "how do I turn colours off in CI"),
        ("faq#Why is the first run slow?", "why is the first run slow"),
        ("faq#Can I use it offline?", "does it work offline without network"),
    ];
    let mut filled = String::new();
    for line in golden.lines() {
        let mut case: serde_json::Value = serde_json::from_str(line).unwrap();
        let label = case["relevant"][0].as_str().unwrap_or("").to_string();
        match questions.iter().find(|(l, _)| *l == label) {
            Some((_, q)) => case["question"] = (*q).into(),
            None if case["answerable"] == false => case["question"] = "what is the price of the enterprise plan".into(),
            None => continue,
        }
        filled.push_str(&format!("{case}\n"));
    }
    fs::write(project.join("golden.jsonl"), &filled).unwrap();
    ragsweep(&project).args(["validate", "experiment.toml"]).assert().success();
    let exp = fs::read_to_string(project.join("experiment.toml")).unwrap();
    // BM25 only: the dense models are not needed to check the path.
    let bm25_only = exp.split("[[retrievers]]\nkind = \"dense\"").next().unwrap().to_string();
    fs::write(project.join("experiment.toml"), bm25_only).unwrap();
    ragsweep(&project).args(["run", "-q", "experiment.toml", "--out", "out", "--cache", "cache"]).assert().success();
    let run = fs::read_dir(project.join("out/my-retrieval")).unwrap().next().unwrap().unwrap().path();
    let m = common::matrix(&run);
    let best = m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["metrics"]["hit@5"]["value"].as_f64())
        .fold(0.0, f64::max);
    assert!(best >= 0.7, "BM25 finds the labelled sections: hit@5 = {best}");

    // A label edited into something that is not there: located, with the closest ids.
    fs::write(project.join("golden.jsonl"), filled.replacen("guide/install#Upgrading", "guide/install#Upgrade", 1))
        .unwrap();
    ragsweep(&project).args(["validate", "experiment.toml"]).assert().code(2).stderr(predicate::str::contains(
        "names unknown document or section \"guide/install#Upgrade\"; did you mean \"guide/install#Upgrading\"",
    ));
    // The text a label points at changed since init wrote its hash: validate warns.
    fs::write(project.join("golden.jsonl"), &filled).unwrap();
    fs::write(docs.join("guide/install.md"), INSTALL.replace("upgrade flag", "--upgrade option")).unwrap();
    ragsweep(&project)
        .args(["validate", "experiment.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("labels point at text that changed since the case was written"))
        .stdout(predicate::str::contains("guide/install#Upgrading"));
}

#[test]
fn sections_lists_ids_sizes_and_first_words_and_greps() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("docs")).unwrap();
    fs::write(dir.path().join("docs/faq.rst"), FAQ).unwrap();
    ragsweep(dir.path())
        .args(["sections", "docs", "--grep", "offline"])
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"faq#Can I use it offline\? +\d+ tokens  Can I use it offline\?").unwrap())
        .stdout(predicate::str::contains("faq#Why is the first run slow?").not());
}

/// A documentation site as its generator renders it: shortcodes, template tags and MDX
/// components are not indexed, heading anchors are not part of section ids, hidden and empty
/// files are listed as skipped and `[corpus] exclude` leaves files out, listed as excluded.
#[test]
fn a_documentation_site_is_read_as_rendered() {
    let f = common::Fixture::new(
        &[
            (
                "guia.md",
                "---\ntitle: Guia\nweight: 3\n---\nimport Tabs from '@theme/Tabs';\n# Guia\n## Instalação {#install} ¶\n\
                 {{< note >}}Instale o cliente TúnelSeguro.{{< /note >}}\n<Tabs>\n<TabItem value=\"linux\">No Linux use o pacote.</TabItem>\n</Tabs>\n\
                 {% include \"rodape.md\" %}\n",
            ),
            (".rascunho.md", "# Oculto\nTexto oculto.\n"),
            // A flow sequence closed at column 0: Hugo and PyYAML read it.
            ("hugo.md", "---\ntitle: Hugo\nkeywords: [\"a\", \"b\",\n]\n---\n# Hugo\nTexto do Hugo.\n"),
            ("vazio.html", ""),
            ("wip/novo.md", "# Novo\nAinda não publicado.\n"),
        ],
        r#"[{"id": "q1", "question": "instalar o cliente", "relevant": ["guia#Instalação"]}]"#,
        "name = \"site\"\nunit = \"section\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(
        f.path().join("exp.toml"),
        exp.replace("path = \"docs\"\n", "path = \"docs\"\nexclude = [\"wip/**\"]\n"),
    )
    .unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains(".rascunho.md (a hidden file)"))
        .stdout(predicate::str::contains("vazio.html (no text: an empty document)"))
        .stdout(predicate::str::contains("excluded 1 by [corpus] exclude: novo.md"))
        .stdout(predicate::str::contains(
            "front matter read line by line (not YAML, no access key in it): hugo.md (line 4",
        ));
    let out = f.cmd().args(["sections", "exp.toml", "--json"]).output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("\"guia#Instalação\""), "{listing}");
    for markup in ["{{", "{%", "<Tabs", "TabItem", "import Tabs", "{#install}", "¶"] {
        assert!(!listing.contains(markup), "{markup} in {listing}");
    }
    assert!(!listing.contains("wip/novo"), "{listing}");
    let run = f.run();
    let m = common::matrix(&run);
    assert_eq!(m["rows"][0]["metrics"]["hit@1"]["value"], 1.0);
}

/// A golden set with several bad cases lists them all, each with its line.
#[test]
fn every_bad_label_is_listed_at_once() {
    let golden = "{\"id\": \"q1\", \"question\": \"a\", \"relevant\": [\"guia#Nada\"]}\n\
                  {\"id\": \"q2\", \"question\": \"b\", \"relevant\": [\"guia#Instalacao\"]}\n\
                  {\"id\": \"q3\", \"question\": \"c\", \"evidence\": [\"não está no texto\"]}\n\
                  {\"id\": \"q4\", \"question\": \"d\", \"relevant\": [\"guia\"]}\n";
    let f = common::Fixture::new(
        &[("guia.md", "# Guia\n## Instalação\nInstale o cliente.\n")],
        "[]",
        "name = \"bad\"\nunit = \"section\"\nk = [1]\n[[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    std::fs::write(f.path().join("golden.jsonl"), golden).unwrap();
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("golden.json\"", "golden.jsonl\"")).unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("golden.jsonl:1").and(predicate::str::contains("\"guia#Nada\"")))
        .stderr(predicate::str::contains("golden.jsonl:2").and(predicate::str::contains("guia#Instalação")))
        .stderr(predicate::str::contains("golden.jsonl:3").and(predicate::str::contains("does not occur")));
}

/// A document a section chunker cannot split (no headings) and that stays far larger than a
/// prompt is named with its size, in the run's output and its summary.
#[test]
fn documents_left_whole_by_a_splitting_chunker_are_named() {
    let big =
        format!("<html><body><p>{}</p></body></html>", "texto corrido sem títulos sobre férias e prazos. ".repeat(900));
    let f = common::Fixture::new(
        &[("manual.html", big.as_str()), ("guia.md", "# Guia\n## Férias\nO prazo é de 30 dias.\n")],
        r#"[{"id": "q1", "question": "prazo de férias", "relevant": ["guia"]}]"#,
        "name = \"big\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\n[[chunkers]]\nkind = \"markdown\"\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let out = f.run_cmd().output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: chunk markdown: 1 document kept in chunks over 32 KB: manual (44 KB)"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning: chunk none"), "whole documents are what `none` means: {stderr}");
    let runs = common::runs_in(&f.path().join("out/big"));
    let summary = std::fs::read_to_string(runs[0].join("summary.md")).unwrap();
    assert!(summary.contains("manual (44 KB)"), "{summary}");
}

/// A page's `description` front matter is indexed with its title and found by `sections --grep`;
/// `[corpus] index_meta = []` turns it off.
#[test]
fn a_page_description_is_indexed_with_its_title() {
    let f = common::Fixture::new(
        &[
            ("rede.md", "---\ntitle: Rede\ndescription: Configurar o roteador wifi do escritório\n---\n# Rede\nPasso a passo da configuração.\n"),
            ("ferias.md", "# Férias\nO prazo é de 30 dias.\n"),
        ],
        r#"[{"id": "q1", "question": "roteador wifi", "relevant": ["rede"]}]"#,
        "name = \"desc\"\nunit = \"doc\"\nk = [1]\nlatency_cases = 0\nreserved_fraction = 0.0\n[[chunkers]]\nkind = \"markdown\"\ntitle = true\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    f.cmd()
        .args(["sections", "exp.toml", "--grep", "roteador"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("rede "));
    let first = f.run();
    let m = common::matrix(&first);
    assert_eq!(m["rows"][0]["metrics"]["hit@1"]["value"], 1.0, "found by its description");
    let exp = std::fs::read_to_string(f.path().join("exp.toml")).unwrap();
    std::fs::write(f.path().join("exp.toml"), exp.replace("path = \"docs\"\n", "path = \"docs\"\nindex_meta = []\n"))
        .unwrap();
    f.run_cmd().assert().success();
    // Run ids start with the second they began: take the other run, not the last by name.
    let second = common::runs_in(&f.path().join("out/desc")).into_iter().find(|r| *r != first).unwrap();
    let m = common::matrix(&second);
    assert_eq!(m["rows"][0]["metrics"]["hit@1"]["value"], 0.0, "not indexed: nothing matches");
}

/// `sections --grep` matches whole words by default (`--substring` for parts of words) and takes
/// a pattern that starts with `-`.
#[test]
fn sections_grep_matches_whole_words_and_takes_patterns_with_a_dash() {
    let f = common::Fixture::new(
        &[
            ("gc.md", "# Coleta\nRode com --gc para limpar o cache.\n"),
            ("prazos.md", "# Prazos\nOs prazos mudam todo ano.\n"),
        ],
        "[]",
        "name = \"g\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let grep = |args: &[&str]| {
        let out = f.cmd().args(["sections", "docs"]).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(grep(&["--grep", "--gc"]), ["gc", "gc#Coleta"]);
    assert!(grep(&["--grep", "prazo"]).is_empty(), "whole words: prazo is not prazos");
    assert_eq!(grep(&["--grep", "prazo", "--substring"]), ["prazos", "prazos#Prazos"]);
    assert_eq!(grep(&["--grep", "PRAZOS"]), ["prazos", "prazos#Prazos"]);
}

/// A site checked out in a subfolder of the corpus resolves its includes as its generator does:
/// Hugo's `/`-rooted paths from `content/` beside `hugo.toml`, MkDocs snippets from the project
/// beside `mkdocs.yml`; an include not read says why, and a missing one names the closest file.
#[test]
fn includes_resolve_from_the_site_root_and_unread_ones_say_why() {
    let f = common::Fixture::new(
        &[
            ("site/hugo.toml", "title = \"Site\"\n"),
            ("site/content/_common/purge.md", "The --purge-cache flag removes every cached wheel.\n"),
            (
                "site/content/guide/install.md",
                "# Install\n\nRun the installer.\n\n{{% include \"/_common/purge.md\" %}}\n{{< readfile file=\"/common/purge.md\" >}}\n",
            ),
            ("manual/mkdocs.yml", "site_name: Manual\ndocs_dir: src\n"),
            ("manual/src/snippets/rotate.md", "Logs rotate every night at midnight.\n"),
            ("manual/src/ops/logs.md", "# Logs\n\n--8<-- \"src/snippets/rotate.md\"\n--8<-- \"../../../../etc/hostname\"\n"),
        ],
        r#"[{"id": "q1", "question": "which flag removes cached wheels", "relevant": ["site/content/guide/install"]},
            {"id": "q2", "question": "when do logs rotate", "relevant": ["manual/src/ops/logs"]}]"#,
        "name = \"sites\"\nunit = \"doc\"\nk = [3]\nmetrics = [\"hit\"]\nlatency_cases = 1\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\n",
    );
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("read 2 includes in place, 2 not:"))
        .stdout(predicate::str::contains(
            "install.md → /common/purge.md (not found; closest file: site/content/_common/purge.md)",
        ))
        .stdout(predicate::str::contains("logs.md → ../../../../etc/hostname (outside the corpus folder)"));
    // Each page is found by words only its included text gives it (the fragments, documents of
    // their own, rank too).
    let run = f.run();
    let lines = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    assert_eq!(lines.matches("\"hit@3\":1.0").count(), 2, "{lines}");
}

/// Includes as Sphinx, MkDocs' include-markdown plugin and Docusaurus write them, each in a
/// project laid out as theirs are: `.. include::` (its options not read as text) and
/// `.. literalinclude::` (the file as code) from the source folder; `{% include-markdown %}`
/// over several lines, only what lies between its `start` and `end` markers; an MDX partial
/// imported and rendered as a component. Each page is found by the words its includes give it.
#[test]
fn sphinx_include_markdown_and_mdx_partials_are_read_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("docs/README.rst", "Readme\n======\n\nintro\n\nThe xylorest text comes from the readme.\n"),
        ("docs/sphinx/conf.py", "project = 'demo'\n"),
        (
            "docs/sphinx/index.rst",
            "Project\n=======\n\n.. include:: ../README.rst\n   :start-after: intro\n\nUsage\n-----\n\nRun it so:\n\n.. literalinclude:: /examples/run.py\n   :language: python\n",
        ),
        ("docs/sphinx/examples/run.py", "xylorun = start()\n"),
        ("docs/mk/mkdocs.yml", "site_name: Demo\ndocs_dir: docs\n"),
        (
            "docs/mk/docs/index.md",
            "# Home\n\n{%\n   include-markdown \"../README.md\"\n   start=\"<!--intro-start-->\"\n   end=\"<!--intro-end-->\"\n%}\n",
        ),
        (
            "docs/mk/README.md",
            "# Readme\n\nBadges xylobadge\n<!--intro-start-->\nThe xylointro explains the tool.\n<!--intro-end-->\nFooter xylofoot\n",
        ),
        ("docs/dc/docusaurus.config.js", "module.exports = {};\n"),
        ("docs/dc/docs/intro.mdx", "---\ntitle: Intro\n---\nimport Shared from './_shared.mdx';\n\n# Intro\n\n<Shared />\n"),
        ("docs/dc/docs/_shared.mdx", "The xyloshared text of every page.\n"),
    ];
    for (name, text) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let found = |word: &str| -> Vec<String> {
        let out = ragsweep(dir.path()).args(["sections", "docs", "--grep", word]).assert().success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        let mut ids: Vec<String> = stdout
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(|id| id.split('#').next().unwrap().to_string())
            .collect();
        ids.dedup();
        ids
    };
    assert_eq!(found("xylorest"), ["README", "sphinx/index"]);
    assert_eq!(found("xylorun"), ["sphinx/index"]);
    assert_eq!(found("xylointro"), ["mk/README", "mk/docs/index"]);
    assert_eq!(found("xylobadge"), ["mk/README"], "outside the markers");
    assert_eq!(found("xyloshared"), ["dc/docs/intro"], "the partial is no page of its own");
    let out = ragsweep(dir.path()).args(["sections", "docs", "--grep", "language"]).assert().success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).trim().is_empty(), "an include's options are not text");
    let out = ragsweep(dir.path()).args(["sections", "docs"]).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("read 4 includes in place") && !stderr.contains(" not:"), "{stderr}");
}

/// What the site does not publish stays out of the corpus and is listed: a Hugo section whose
/// cascade renders nothing (its fragments still reach the pages that include them), a draft, a
/// headless bundle, a Docusaurus `_` partial; `init` puts no stub on them, and `[corpus]
/// publish = "all"` keeps them.
#[test]
fn what_the_site_does_not_publish_is_left_out_and_listed() {
    let docs = [
        ("site/hugo.toml", "title = \"Site\"\n"),
        ("site/content/_common/_index.md", "---\ncascade:\n  build:\n    list: never\n    render: never\n---\n"),
        (
            "site/content/_common/purge.md",
            "The --purge-cache flag removes every cached wheel before installing anything.\n",
        ),
        (
            "site/content/guide/install.md",
            "# Install\n\nRun the installer as the first step.\n\n{{% include \"/_common/purge.md\" %}}\n",
        ),
        (
            "site/content/guide/wip.md",
            "+++\ndraft = true\n+++\n# Upcoming\n\nThe --purge-cache flag will also remove logs.\n",
        ),
        ("site/content/bundle/index.md", "---\nheadless: true\n---\n# Bundle\n\nShared text about cached wheels.\n"),
        ("site/content/bundle/part.md", "# Part\n\nMore shared text about the cached wheels.\n"),
        ("portal/docusaurus.config.js", "module.exports = {};\n"),
        ("portal/docs/_partials/wheels.md", "# Wheels\n\nCached wheels live in the wheel folder.\n"),
        ("portal/docs/start.md", "# Start\n\nOpen the portal and sign in with your account.\n"),
        (
            "book/mkdocs.yml",
            "site_name: Book\ndocs_dir: pages\nexclude_docs: |\n  /internal/\ndraft_docs: |\n  *.draft.md\n",
        ),
        ("book/pages/internal/notes.md", "# Notes\n\nInternal notes on cached wheels.\n"),
        ("book/pages/next.draft.md", "# Next\n\nA draft on the next cached wheels release.\n"),
    ];
    let exp = "name = \"published\"\nunit = \"doc\"\nk = [1]\nmetrics = [\"hit\"]\nlatency_cases = 1\n\
               [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\n";
    let golden =
        r#"[{"id": "q1", "question": "which flag removes cached wheels", "relevant": ["site/content/guide/install"]}]"#;
    let f = common::Fixture::new(&docs, golden, exp);
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("1 cells, 2 documents"))
        .stdout(predicate::str::contains("notes.md (exclude_docs in mkdocs.yml)"))
        .stdout(predicate::str::contains("next.draft.md (draft_docs in mkdocs.yml)"))
        .stdout(predicate::str::contains(
            "left out 7 the site does not publish ([corpus] publish_also or publish = \"all\" keeps them):",
        ))
        .stdout(predicate::str::contains("purge.md (cascade: build.render: never in _index.md)"))
        .stdout(predicate::str::contains("wip.md (draft: true)"))
        .stdout(predicate::str::contains("index.md (headless: true)"))
        .stdout(predicate::str::contains("part.md (in a headless bundle (index.md))"))
        .stdout(predicate::str::contains("wheels.md (a partial: Docusaurus leaves out names starting with _)"))
        .stdout(predicate::str::contains("read 1 include in place"));
    // The page is found by its included text; nothing unpublished is in the index to outrank it.
    let run = f.run();
    let line = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    assert!(line.contains("\"hit@1\":1.0"), "{line}");
    let sections = f.cmd().args(["sections", "exp.toml"]).output().unwrap();
    let listed = String::from_utf8_lossy(&sections.stdout);
    assert!(!listed.contains("_common") && !listed.contains("wip") && !listed.contains("bundle"), "{listed}");
    // init puts stubs on published pages only.
    f.cmd().args(["init", "docs", "--out", "project", "--stubs", "10"]).assert().success();
    let stubs = std::fs::read_to_string(f.path().join("project/golden.jsonl")).unwrap();
    assert!(stubs.contains("guide/install") || stubs.contains("portal/docs/start"), "{stubs}");
    for unpublished in ["_common", "wip", "bundle", "_partials", "internal", "next.draft"] {
        assert!(!stubs.contains(unpublished), "a stub on {unpublished}: {stubs}");
    }
    // publish = "all" keeps them; any other value is a located error.
    let all = std::fs::read_to_string(f.path().join("exp.toml"))
        .unwrap()
        .replace("[corpus]\n", "[corpus]\npublish = \"all\"\n");
    std::fs::write(f.path().join("exp.toml"), &all).unwrap();
    f.cmd().args(["validate", "exp.toml"]).assert().success().stdout(predicate::str::contains("1 cells, 9 documents"));
    std::fs::write(f.path().join("exp.toml"), all.replace("publish = \"all\"", "publish = \"drafts\"")).unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("exp.toml:").and(predicate::str::contains("`publish` is \"published\"")));
}

/// Pages read as published, without what a generator adds around the text: texinfo's
/// navigation panel (`Next: … [Contents][Index]`), Sphinx's `¶` permalinks and related bars, a
/// Markdown heading's trailing permalink; Hugo's shortcode notation shown as the shortcode's
/// text, and a shortcode written over several lines removed whole.
#[test]
fn navigation_permalinks_and_shortcodes_are_read_as_published() {
    let texinfo = "<html><body><div class=\"nav-panel\"><p>Next: <a href=\"b.html\">Builtins</a>, Up: <a>Top</a> \
                   [<a>Contents</a>][<a>Index</a>]</p></div>\n<h3 class=\"section\">4.3.1 Some Builtin<a class=\"copiable-link\" href=\"#x\"> ¶</a></h3>\n\
                   <p>The set builtin changes shell options.</p></body></html>\n";
    let sphinx = "<html><body><div class=\"related\" role=\"navigation\"><a>index</a> | <a>next</a></div>\n\
                  <h1>Install<a class=\"headerlink\" href=\"#install\">¶</a></h1><p>Run the installer once per machine.</p></body></html>\n";
    let hugo = "# Shortcodes 🔗\n\nWrite `{{</* myshortcode */>}}` to call it.\n\n{{< img\n  src=\"a.png\"\n  alt=\"diagram\" >}}\n\nThe end of the page.\n";
    let f = common::Fixture::new(
        &[("manual/ref.html", texinfo), ("guide/install.html", sphinx), ("site/codes.md", hugo)],
        r#"[{"id": "q1", "question": "set builtin", "relevant": ["manual/ref"]}]"#,
        "name = \"published\"\nunit = \"doc\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let out = f.cmd().args(["sections", "docs", "--json"]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    for id in ["manual/ref#4.3.1 Some Builtin\"", "guide/install#Install\"", "site/codes#Shortcodes\""] {
        assert!(listed.contains(id), "{id} in {listed}");
    }
    assert!(!listed.contains('¶') && !listed.contains("Contents") && !listed.contains("next"), "{listed}");
    let grep = |word: &str| {
        let out = f.cmd().args(["sections", "docs", "--grep", word]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(grep("myshortcode").contains("site/codes"), "the shown shortcode is text");
    assert!(!grep("diagram").contains("site/codes"), "a multi-line shortcode is not text");
    assert!(!grep("Index").contains("manual/ref"), "the navigation panel is not text");
}

/// A documentation page that includes another file (Hugo `readfile`, MkDocs snippets) is read
/// with that file's text in place, so its answer is found under the page; an included file
/// with its own access list stops the run at the include directive (file:line:col).
#[test]
fn includes_are_read_in_place_and_an_included_access_list_is_refused() {
    let f = common::Fixture::new(
        &[
            ("guide/install.md", "# Install\n\nRun the installer.\n\n{{< readfile file=\"shared/flags.md\" >}}\n"),
            ("shared/flags.md", "The --purge-cache flag removes every cached wheel before installing.\n"),
            ("guide/other.md", "# Other\n\nNothing about caches here.\n--8<-- \"shared/missing.md\"\n"),
        ],
        r#"[{"id": "q1", "question": "which flag removes cached wheels", "relevant": ["guide/install"]}]"#,
        "name = \"includes\"\nunit = \"doc\"\nk = [1, 3]\nmetrics = [\"hit\"]\nlatency_cases = 1\n\
         [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\n",
    );
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("read 1 include in place, 1 not"))
        .stdout(predicate::str::contains("other.md → shared/missing.md"));
    let run = f.run();
    let line = std::fs::read_to_string(run.join("per_query.jsonl")).unwrap();
    // The included file ranks too (it is a document of its own); the page is found by words
    // that only the included text gives it.
    assert!(line.contains("\"hit@3\":1.0") && line.contains("\"guide/install\""), "{line}");

    std::fs::write(f.path().join("docs/shared/flags.md"), "---\nacl: [ops]\n---\nThe --purge-cache flag.\n").unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("install.md:5:1: includes"))
        .stderr(predicate::str::contains("declares its own access list"));
}

/// An `mkdocs.yml` that is a link (here to a file outside the corpus, as a 2 GiB file could be)
/// is not read: its `exclude_docs` leaves nothing out, and its target is never opened.
#[test]
fn a_site_config_that_links_out_of_the_corpus_is_not_read() {
    let docs = [
        ("book/pages/internal/notes.md", "# Notes\n\nInternal notes on cached wheels.\n"),
        ("book/pages/start.md", "# Start\n\nOpen the portal and sign in.\n"),
    ];
    let exp = "name = \"linked\"\nunit = \"doc\"\nk = [1]\nmetrics = [\"hit\"]\nlatency_cases = 0\n\
               [[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\nanalyzer = \"en\"\n";
    let golden = r#"[{"id": "q1", "question": "portal sign in", "relevant": ["book/pages/start"]}]"#;
    let f = common::Fixture::new(&docs, golden, exp);
    let outside = f.path().join("outside.yml");
    std::fs::write(&outside, "site_name: Book\ndocs_dir: pages\nexclude_docs: |\n  /internal/\n").unwrap();
    std::os::unix::fs::symlink(&outside, f.path().join("docs/book/mkdocs.yml")).unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("1 cells, 2 documents"))
        .stdout(predicate::str::contains("exclude_docs in mkdocs.yml").not());
    // The same file in place is read: its rule leaves the internal notes out.
    std::fs::remove_file(f.path().join("docs/book/mkdocs.yml")).unwrap();
    std::fs::copy(&outside, f.path().join("docs/book/mkdocs.yml")).unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("1 cells, 1 documents").or(predicate::str::contains("1 cells, 1 document")))
        .stdout(predicate::str::contains("notes.md (exclude_docs in mkdocs.yml)"));
}

/// An HTML comment in a Markdown page is not shown on the page, so it is not indexed (over one
/// line or several); one inside a code span or a code block is an example, and stays.
#[test]
fn html_comments_of_a_markdown_page_are_not_indexed() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("docs")).unwrap();
    fs::write(
        dir.path().join("docs/page.md"),
        "# Page\n\nVisible text.\n\n<!-- TODO xyzzy: ask legal\nbefore publishing -->\n\nMore <!-- plugh --> text and `<!-- frobnicate -->` shown.\n",
    )
    .unwrap();
    let grep = |word: &str| ragsweep(dir.path()).args(["sections", "docs", "--grep", word]).assert().success();
    for hidden in ["xyzzy", "publishing", "plugh"] {
        grep(hidden).stdout(predicate::str::is_empty());
    }
    grep("frobnicate").stdout(predicate::str::contains("page#Page"));
}

/// A label on a page the corpus left out on purpose (a draft the site does not publish, a file
/// `[corpus] exclude` names) says so, why, and what keeps it, instead of "unknown document".
#[test]
fn a_label_on_a_left_out_page_says_why_and_what_keeps_it() {
    let docs = [
        ("guide.md", "# Guide\nThe guide explains the builder.\n"),
        ("draft.md", "---\ntitle: Draft\ndraft: true\n---\n# Draft\nNot published yet.\n"),
        ("notes.md", "# Notes\nInternal notes.\n"),
    ];
    for (label, says) in [("draft", "the site does not publish it"), ("notes", "[corpus] exclude leaves it out")] {
        let golden = format!(r#"[{{"id": "q1", "question": "builder", "relevant": ["{label}"]}}]"#);
        let f = common::Fixture::new(
            &docs,
            &golden,
            "name = \"left\"\nunit = \"doc\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
        );
        let exp = fs::read_to_string(f.path().join("exp.toml")).unwrap();
        fs::write(
            f.path().join("exp.toml"),
            exp.replace("path = \"docs\"\n", "path = \"docs\"\nexclude = [\"notes.md\"]\n"),
        )
        .unwrap();
        f.cmd()
            .args(["validate", "exp.toml"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("names \"{label}\", a page the corpus left out: {says}")));
    }
}

/// A multilingual Hugo site keeps its content in `content/en`, mounted as the site's content by
/// `[[module.mounts]]` in `hugo.toml`: a `/_common/…` include resolves there, pointed at the
/// checkout (it resolved nowhere: "not found").
#[test]
fn includes_resolve_through_a_hugo_sites_content_mounts() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    fs::create_dir_all(site.join("content/en/_common")).unwrap();
    fs::create_dir_all(site.join("content/en/guide")).unwrap();
    fs::write(
        site.join("hugo.toml"),
        "title = \"Docs\"\n[[module.mounts]]\nsource = \"content/en\"\ntarget = \"content\"\nlang = \"en\"\n",
    )
    .unwrap();
    fs::write(site.join("content/en/_common/locale.md"), "The locale setting picks the xylograph format.\n").unwrap();
    fs::write(
        site.join("content/en/guide/config.md"),
        "---\ntitle: Configure\n---\n# Configure\n\n{{% include \"/_common/locale.md\" %}}\n",
    )
    .unwrap();
    let out = ragsweep(dir.path()).args(["sections", "site", "--grep", "xylograph"]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stdout.contains("content/en/guide/config"), "the page holds the included text: {stdout}");
    assert!(stderr.contains("read 1 include in place") && !stderr.contains("not found"), "{stderr}");
}

/// A glossary as a Hugo site shows it: terms with `build.render: never`, a glossary page calling
/// a shortcode whose template ranges over the glossary section (a theme's, with the content
/// mounted from `content/en`). Every term is read under the glossary page, by its title, in the
/// site's order (weight, then title); the terms are left out as pages with where they are shown;
/// the templates are not read as pages; pointed at the content folder, the same sections. A
/// term with an access list is refused where the glossary shows it.
#[test]
fn glossary_terms_are_read_under_the_page_whose_shortcode_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    for folder in ["content/en/glossary", "themes/docsy/layouts/shortcodes", "layouts/partials"] {
        fs::create_dir_all(site.join(folder)).unwrap();
    }
    fs::write(
        site.join("hugo.toml"),
        "title = \"Docs\"\ntheme = \"docsy\"\n[[module.mounts]]\nsource = \"content/en\"\ntarget = \"content\"\n",
    )
    .unwrap();
    fs::write(
        site.join("themes/docsy/layouts/shortcodes/glossary.html"),
        "{{ $terms := where site.RegularPages \"Section\" \"glossary\" }}\n{{ range $terms }}<dt>{{ .Title }}</dt><dd>{{ .Content }}</dd>{{ end }}\n",
    )
    .unwrap();
    fs::write(site.join("layouts/partials/head.html"), "<title>{{ .Title }} xylophone template</title>\n").unwrap();
    fs::write(
        site.join("content/en/glossary/_index.md"),
        "---\ntitle: Glossary\n---\n# Glossary\n\n{{< glossary >}}\n",
    )
    .unwrap();
    for (name, weight, text) in [
        ("taxonomy", 2, "A taxonomy groups pages by a xylotag."),
        ("shortcode", 2, "A shortcode is a xylotemplate called from content."),
        ("archetype", 1, "An archetype is a xylostencil for new pages."),
    ] {
        fs::write(
            site.join(format!("content/en/glossary/{name}.md")),
            format!("---\ntitle: {name}\nweight: {weight}\nbuild:\n  render: never\n---\n{text}\n"),
        )
        .unwrap();
    }
    let sections = |corpus: &str| {
        let out = ragsweep(dir.path()).args(["sections", corpus]).assert().success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        (stdout, stderr)
    };
    let (stdout, stderr) = sections("site");
    let ids: Vec<&str> = stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    let glossary = "content/en/glossary/_index";
    let terms: Vec<String> = ["archetype", "shortcode", "taxonomy"].iter().map(|t| format!("{glossary}#{t}")).collect();
    for term in &terms {
        assert!(ids.contains(&term.as_str()), "{term}: {stdout}");
    }
    let at = |id: &str| ids.iter().position(|i| *i == id).unwrap();
    assert!(at(&terms[0]) < at(&terms[1]) && at(&terms[1]) < at(&terms[2]), "weight, then title: {stdout}");
    assert!(!stdout.contains("xylophone") && !ids.iter().any(|i| i.contains("layouts")), "{stdout}");
    assert!(stderr.contains("read 3 includes in place"), "{stderr}");
    let (inner, _) = sections("site/content/en");
    let strip = |s: &str| {
        s.lines()
            .map(|l| l.replacen("content/en/", "", 1).split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&stdout), strip(&inner), "pointed at the content folder");
    // A label on a term says where the site shows it.
    fs::write(
        dir.path().join("golden.json"),
        r#"[{"id": "q1", "question": "xylotag", "relevant": ["glossary/taxonomy"]}]"#,
    )
    .unwrap();
    fs::write(
        dir.path().join("exp.toml"),
        "name = \"g\"\nunit = \"section\"\nk = [1]\n[corpus]\npath = \"site/content/en\"\n[golden]\npath = \"golden.json\"\n\
         [[chunkers]]\nkind = \"markdown\"\n[[retrievers]]\nkind = \"bm25\"\n",
    )
    .unwrap();
    ragsweep(dir.path())
        .args(["validate", "exp.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("its text is read where glossary/_index shows it"));
    // A term that shows the glossary again is read once, its call named in the summary.
    fs::write(
        site.join("content/en/glossary/loop.md"),
        "---\ntitle: loop\nbuild:\n  render: never\n---\nA xyloloop.\n{{< glossary >}}\n",
    )
    .unwrap();
    let (stdout, stderr) = sections("site");
    let ids: Vec<&str> = stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(ids.iter().filter(|i| i.contains("loop")).count(), 1, "{stdout}");
    assert_eq!(ids.len(), 6, "the page, its title and four terms, each once: {stdout}");
    assert!(stderr.contains("a section shown inside a page a section shows"), "{stderr}");
    // A term with its own access list would reach whoever may see the glossary.
    fs::write(site.join("content/en/glossary/secret.md"), "---\ntitle: secret\nacl: [rh]\n---\nsalários\n").unwrap();
    ragsweep(dir.path()).args(["sections", "site"]).assert().code(2).stderr(
        predicate::str::contains("_index.md:6:1: shows the page")
            .and(predicate::str::contains("declares its own access list")),
    );
}

/// A section whose list template renders its pages' content (`range .Pages` … `.Content`) shows
/// them on its list page: each term is read there, under its title, and left out as a page
/// with where it is read; a list template that shows summaries only reads nothing in place.
#[test]
fn pages_a_list_template_renders_are_read_under_their_section_page() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    for folder in ["content/glossary", "content/blog", "layouts/glossary", "layouts/_default"] {
        fs::create_dir_all(site.join(folder)).unwrap();
    }
    fs::write(site.join("hugo.toml"), "title = \"Docs\"\n").unwrap();
    fs::write(
        site.join("layouts/glossary/list.html"),
        "{{ define \"main\" }}{{ .Content }}\n<dl>{{ range .Pages }}{{ if .Title }}<dt>{{ .Title }}</dt>{{ end }}<dd>{{ .Content }}</dd>{{ end }}</dl>{{ end }}\n",
    )
    .unwrap();
    fs::write(
        site.join("layouts/_default/list.html"),
        "{{ define \"main\" }}{{ .Content }}{{ range .Pages }}<a href=\"{{ .RelPermalink }}\">{{ .Title }}</a> {{ .Summary }}{{ end }}{{ end }}\n",
    )
    .unwrap();
    fs::write(site.join("content/glossary/_index.md"), "---\ntitle: Glossary\n---\nThe terms of the site.\n").unwrap();
    for (name, text) in [("archetype", "An archetype is a xylostencil."), ("taxonomy", "A taxonomy groups by xylotag.")]
    {
        fs::write(
            site.join(format!("content/glossary/{name}.md")),
            format!("---\ntitle: {name}\nbuild:\n  render: never\n---\n{text}\n"),
        )
        .unwrap();
    }
    fs::write(site.join("content/blog/_index.md"), "---\ntitle: Blog\n---\nNews.\n").unwrap();
    fs::write(site.join("content/blog/first.md"), "---\ntitle: First\n---\nThe xylopost of the year.\n").unwrap();
    let out = ragsweep(dir.path()).args(["sections", "site"]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let ids: Vec<&str> = stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for term in ["content/glossary/_index#archetype", "content/glossary/_index#taxonomy"] {
        assert!(ids.contains(&term), "{term}: {stdout}");
    }
    assert!(!ids.iter().any(|i| i.starts_with("content/glossary/archetype")), "left out as a page: {stdout}");
    assert!(
        ids.contains(&"content/blog/first") && !ids.iter().any(|i| i.starts_with("content/blog/_index#")),
        "{stdout}"
    );
    assert!(stderr.contains("read 2 includes in place"), "{stderr}");
    let out = ragsweep(dir.path()).args(["sections", "site", "--grep", "xylotag"]).assert().success();
    let found = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(found.contains("content/glossary/_index#taxonomy"), "{found}");
}

/// Glossary terms a Hugo site renders only through the glossary page (`build.render: never`)
/// are left out, and a label on one names the `publish_also` glob that keeps them; with it,
/// they are documents the label finds.
#[test]
fn publish_also_keeps_pages_the_site_shows_through_another_page() {
    let term = |name: &str, text: &str| {
        (format!("glossary/{name}.md"), format!("---\ntitle: {name}\nbuild:\n  render: never\n---\n{text}\n"))
    };
    let pages = [
        ("guide.md".to_string(), "# Guide\nThe guide explains the builder.\n".to_string()),
        ("glossary/_index.md".to_string(), "---\ntitle: Glossary\n---\n{{% glossary %}}\n".to_string()),
        term("taxonomy", "A taxonomy groups pages by a term such as a tag."),
        term("shortcode", "A shortcode is a template called from content."),
    ];
    let docs: Vec<(&str, &str)> = pages.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let golden = r#"[{"id": "q1", "question": "what groups pages by a tag", "relevant": ["glossary/taxonomy"]}]"#;
    let f = common::Fixture::new(
        &docs,
        golden,
        "name = \"gloss\"\nunit = \"doc\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    f.cmd().args(["validate", "exp.toml"]).assert().code(2).stderr(predicate::str::contains(
        "the site does not publish it (build.render: never); [corpus] publish_also = [\"glossary/**\"] keeps it",
    ));
    let exp = fs::read_to_string(f.path().join("exp.toml")).unwrap();
    fs::write(
        f.path().join("exp.toml"),
        exp.replace("path = \"docs\"\n", "path = \"docs\"\npublish_also = [\"glossary/**\"]\n"),
    )
    .unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("kept 2 unpublished by [corpus] publish_also"));
    let run = f.run();
    let line: serde_json::Value =
        serde_json::from_str(fs::read_to_string(run.join("per_query.jsonl")).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(line["top"][0], "glossary/taxonomy", "{line}");
    // A pattern that is not a glob is an error at its place.
    let exp = fs::read_to_string(f.path().join("exp.toml")).unwrap();
    fs::write(f.path().join("exp.toml"), exp.replace("[\"glossary/**\"]", "[\"glossary/[\"]")).unwrap();
    f.cmd()
        .args(["validate", "exp.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("exp.toml:").and(predicate::str::contains("`[corpus] publish_also`")));
}

/// `validate --verbose` lists every file the corpus line shortens, one line each with its path
/// and why: twelve skipped files where the summary names ten "and 2 more".
#[test]
fn validate_verbose_lists_every_skipped_file_with_why() {
    let mut docs = vec![("a.md".to_string(), "# A\ntexto\n".to_string())];
    docs.extend((0..12).map(|i| (format!("data{i:02}.bin"), "\u{1}\u{2}".to_string())));
    let docs: Vec<(&str, &str)> = docs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let f = crate::common::Fixture::new(
        &docs,
        r#"[{"id": "q1", "question": "texto", "relevant": ["a"]}]"#,
        "name = \"v\"\nk = [1]\n[[chunkers]]\nkind = \"none\"\n[[retrievers]]\nkind = \"bm25\"\n",
    );
    let plain = f.cmd().args(["validate", "exp.toml"]).output().unwrap();
    let said = String::from_utf8_lossy(&plain.stdout).to_string();
    assert!(said.contains("and 2 more"), "{said}");
    let verbose = f.cmd().args(["validate", "exp.toml", "--verbose"]).output().unwrap();
    let said = String::from_utf8_lossy(&verbose.stdout).to_string();
    assert!(verbose.status.success(), "{said}");
    let skipped: Vec<&str> = said.lines().filter(|l| l.trim_start().starts_with("skipped: ")).collect();
    assert_eq!(skipped.len(), 12, "{said}");
    assert!(skipped.iter().all(|l| l.contains("docs/data") && l.contains('(')), "{said}");
}

/// A Sphinx project whose `conf.py` names `.txt` in `source_suffix` (as Django's does) has its
/// `.txt` pages read as reStructuredText, headings and all; a `.txt` file elsewhere stays text.
/// A template opening with `{%` is no JSON front matter.
#[test]
fn a_sphinx_projects_txt_sources_are_read_as_restructured_text() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    fs::create_dir_all(docs.join("ref")).unwrap();
    fs::create_dir_all(docs.join("_theme")).unwrap();
    fs::write(docs.join("conf.py"), "project = 'Demo'\nsource_suffix = {\".txt\": \"restructuredtext\"}\n").unwrap();
    fs::write(
        docs.join("ref/forms.txt"),
        "=====\nForms\n=====\n\nBound forms\n===========\n\nA form is bound when it has xylodata.\n",
    )
    .unwrap();
    fs::write(docs.join("_theme/cover.html"), "{% extends \"base.html\" %}\n<p>Cover page text.</p>\n").unwrap();
    let out = ragsweep(dir.path()).args(["sections", "docs"]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("ref/forms#Bound forms"), "{stdout}");
    assert!(stdout.contains("_theme/cover"), "{stdout}");
    // Without the project's suffix, a .txt file is text.
    fs::remove_file(docs.join("conf.py")).unwrap();
    let out = ragsweep(dir.path()).args(["sections", "docs"]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!stdout.contains("ref/forms#Bound forms"), "{stdout}");
}
