//! No module imports a module that imports it back: the source tree is read, every
//! `crate::…` and `super::…` path is resolved to the module file that defines it, and the
//! graph of those edges must have no cycle. Data flows one way. And only the catalog asks
//! which kind a retriever is: no other file names a kind's variant.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`retrieve::bm25`) of every source file of the library.
fn modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let name = if prefix.is_empty() { stem.clone() } else { format!("{prefix}::{stem}") };
        if path.is_dir() {
            modules(&path, &name, out);
        } else if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
            let module = if stem == "mod" {
                prefix.to_string()
            } else if stem == "lib" {
                String::new()
            } else {
                name
            };
            out.insert(module, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The longest known module that `segments` starts with.
fn resolve(known: &BTreeMap<String, String>, segments: &[&str]) -> Option<String> {
    (1..=segments.len()).rev().map(|n| segments[..n].join("::")).find(|m| known.contains_key(m))
}

/// `text` without its `#[cfg(test)] mod … { … }` blocks (and `#[cfg(test)] mod …;` lines): test
/// code may import anything, but an item marked `#[cfg(test)]` elsewhere (an `impl`, a
/// function) is only the attribute, and the code after it is still read.
fn without_test_modules(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let item = after.trim_start();
        if !(item.starts_with("mod ") || item.starts_with("pub mod ") || item.starts_with("pub(crate) mod ")) {
            rest = after;
            continue;
        }
        let head_end = item.find(['{', ';']).unwrap_or(item.len());
        if item[head_end..].starts_with(';') {
            rest = &item[head_end + 1..];
            continue;
        }
        // Skip to the brace that closes the module (braces in strings and comments are rare
        // enough in this code base that counting them is exact).
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices().skip(head_end) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn edges(known: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in known {
        let code: String = without_test_modules(text)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (start, _) in code.match_indices("crate::").chain(code.match_indices("super::")) {
            let rest = &code[start..];
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            let mut segments: Vec<&str> = rest[..end].split("::").filter(|s| !s.is_empty()).collect();
            let base: Vec<&str> = if segments[0] == "super" {
                segments.remove(0);
                let mut parent: Vec<&str> = module.split("::").collect();
                parent.pop();
                parent
            } else {
                segments.remove(0);
                Vec::new()
            };
            let full: Vec<&str> = base.into_iter().chain(segments).collect();
            if let Some(target) = resolve(known, &full) {
                if !target.is_empty() && &target != module {
                    out.entry(module.clone()).or_default().insert(target);
                }
            }
        }
    }
    out
}

/// The first cycle of `graph` found by a depth-first search, as the path that closes it.
fn first_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit<'g>(
        node: &'g str,
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'g str>,
        done: &mut BTreeSet<&'g str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            return Some(path[at..].iter().map(|s| s.to_string()).chain([node.to_string()]).collect());
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// The graph of top-level folders (`retrieve`, `evaluate`, …): an edge where any module of one
/// imports any module of the other.
fn folders(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").next().unwrap().to_string();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in graph {
        for to in targets.iter().filter(|t| top(t) != top(from)) {
            out.entry(top(from)).or_default().insert(top(to));
        }
    }
    out
}

fn library_graph() -> (BTreeMap<String, String>, BTreeMap<String, BTreeSet<String>>) {
    let mut known = BTreeMap::new();
    modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), "", &mut known);
    assert!(known.contains_key("retrieve::cell") && known.contains_key("runner"), "{:?}", known.keys());
    let graph = edges(&known);
    (known, graph)
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let (_, graph) = library_graph();
    if let Some(cycle) = first_cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" → "));
    }
}

/// The check reads whole files: in planted sources, a cycle (experiment → engine::connect →
/// results → experiment) that closes only after a `#[cfg(test)]` item that is not a test
/// module (an `impl` kept for tests, which hid 430 lines of `results.rs` from an earlier
/// version) is found; imports inside a `mod tests` block are not edges.
#[test]
fn planted_cycles_are_found_in_whole_files() {
    let sources = |b: &str| -> BTreeMap<String, String> {
        [
            ("experiment".to_string(), "use crate::engine::connect::Endpoint;\n".to_string()),
            ("engine".to_string(), "pub mod connect;\n".to_string()),
            ("engine::connect".to_string(), "use super::install;\nuse crate::results::Row;\n".to_string()),
            ("engine::install".to_string(), String::new()),
            ("results".to_string(), b.to_string()),
        ]
        .into()
    };
    let behind_test_impl =
        "pub struct Row;\n#[cfg(test)]\nimpl Row {\n    fn t() {}\n}\n\nfn prefer(p: crate::experiment::Prefer) {}\n";
    let cycle = first_cycle(&edges(&sources(behind_test_impl))).expect("the cycle behind a #[cfg(test)] impl");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&"results".to_string()) && cycle.contains(&"experiment".to_string()), "{cycle:?}");
    let in_tests = "pub struct Row;\n#[cfg(test)]\nmod tests {\n    use crate::experiment::Prefer;\n}\n";
    assert!(first_cycle(&edges(&sources(in_tests))).is_none(), "a test module's imports are not the module's");
}

#[test]
fn no_folder_imports_a_folder_that_imports_it_back() {
    let (_, graph) = library_graph();
    if let Some(cycle) = first_cycle(&folders(&graph)) {
        panic!("folder import cycle: {}", cycle.join(" → "));
    }
    // The check sees a cycle through two folders even when no module imports its importer.
    let planted: BTreeMap<String, BTreeSet<String>> = [
        ("stages::build".to_string(), BTreeSet::from(["retrieve::cell".to_string()])),
        ("retrieve::access".to_string(), BTreeSet::from(["stages::chunk".to_string()])),
    ]
    .into();
    assert!(first_cycle(&planted).is_none());
    assert_eq!(first_cycle(&folders(&planted)).unwrap(), ["retrieve", "stages", "retrieve"]);
}

#[test]
fn the_vocabulary_imports_nothing_of_the_crate() {
    let (known, graph) = library_graph();
    assert!(known.contains_key("vocab"));
    assert!(graph.get("vocab").is_none_or(BTreeSet::is_empty), "vocab imports {:?}", graph.get("vocab"));
}

/// The enums whose variants are retriever, index, chunker and fusion kinds, an engine's own
/// name for itself (`pgvector::ENGINE`), and the field that picks a lexical kind: only the
/// catalogs (`catalog/`, `chunkers/`) and `engine/servers.rs`, which lists the engines, may
/// name them.
const KIND_PATHS: [&str; 7] =
    ["RetrieverSpec::", "PgVectorIndex::", "MilvusIndex::", "::ENGINE", "ChunkerKind::", "Fusion::", ".full_text"];

/// Whether `module` is where kinds are told apart: a catalog or the engine registry.
fn tells_kinds_apart(module: &str) -> bool {
    let top = module.split("::").next().unwrap_or_default();
    top == "catalog" || top == "chunkers" || module == "engine::servers"
}

/// Where a module outside the catalog names a kind's variant: `module: line`.
fn kinds_named_outside_the_catalog(known: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (module, text) in known {
        if tells_kinds_apart(module) {
            continue;
        }
        for line in without_test_modules(text).lines().filter(|l| !l.trim_start().starts_with("//")) {
            // The list of every engine is not one engine.
            if KIND_PATHS.iter().any(|p| line.replace("::ENGINES", "").contains(p)) {
                out.push(format!("{module}: {}", line.trim()));
            }
        }
    }
    out
}

/// The names of retriever, index, chunker, fusion and engine kinds (the engines' from their registry).
fn kind_names() -> Vec<String> {
    let kinds = [
        "bm25",
        "dense",
        "hybrid",
        "exact",
        "hnsw",
        "flat",
        "ivf_flat",
        "ivfflat",
        "none",
        "fixed",
        "sentence",
        "recursive",
        "markdown",
        "rrf",
        "convex",
        "dbsf",
    ];
    kinds
        .iter()
        .map(|k| k.to_string())
        .chain(ragsweep::engine::servers::engine_names().into_iter().map(String::from))
        .collect()
}

/// Where a module outside the catalog and the engine registry tells kinds apart by their
/// names as strings (`"pg" =>`, `== "hnsw"`, `starts_with("exact")`): `module: line`. A match on
/// a string falls through to `_` for the kind nobody listed. A kind's own folder is exempt.
fn kinds_dispatched_by_name(known: &BTreeMap<String, String>, names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (module, text) in known {
        if tells_kinds_apart(module) {
            continue;
        }
        for line in without_test_modules(text).lines().filter(|l| !l.trim_start().starts_with("//")) {
            // A kind's own folder (`engine::milvus::server`) may say its own name.
            let own = |n: &&String| module.split("::").any(|segment| segment == n.as_str());
            let dispatches = names.iter().filter(|n| !own(n)).any(|n| {
                [format!("\"{n}\" =>"), format!("== \"{n}\""), format!("!= \"{n}\"")].iter().any(|p| line.contains(p))
                    || ["starts_with", "ends_with", "contains", "wanted", "eq"]
                        .iter()
                        .any(|call| line.contains(&format!("{call}(\"{n}")))
            });
            if dispatches {
                out.push(format!("{module}: {}", line.trim()));
            }
        }
    }
    out
}

#[test]
fn no_kind_is_told_apart_by_its_name_outside_the_catalog() {
    let (mut known, _) = library_graph();
    let main = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs");
    known.insert("main".into(), std::fs::read_to_string(main).unwrap());
    let found = kinds_dispatched_by_name(&known, &kind_names());
    assert!(
        found.is_empty(),
        "kinds told apart by name outside src/catalog/ and the engine registry:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_planted_string_dispatch_is_found() {
    let names = kind_names();
    let planted = [
        "match engine.name.as_str() {\n    \"pg\" => start_pg(),\n    _ => start_milvus(),\n}\n",
        "if stage.key.starts_with(\"exact\") { return; }\n",
        "let graph = spec.index == \"hnsw\";\n",
        "if wanted(\"milvus\") { install() }\n",
        "let whole = chunker.name == \"none\";\n",
    ];
    for text in planted {
        let found = kinds_dispatched_by_name(&[("bench".to_string(), text.to_string())].into(), &names);
        assert_eq!(found.len(), 1, "{text}: {found:?}");
        assert!(kinds_dispatched_by_name(&[("catalog::bm25".to_string(), text.to_string())].into(), &names).is_empty());
    }
    let innocent = "let install = engines.join(\"pg\");\nlet label = format!(\"hnsw(m={m})\");\n";
    assert!(kinds_dispatched_by_name(&[("bench".to_string(), innocent.to_string())].into(), &names).is_empty());
}

/// Where a module outside the catalog and the engine registry keeps a closed list of engines:
/// two engines' names as strings in one line (`["pg", "milvus"]`, `"pg" | "milvus"`), which a
/// new engine would not be in.
fn closed_engine_lists(known: &BTreeMap<String, String>) -> Vec<String> {
    let engines = ragsweep::engine::servers::engine_names();
    let mut out = Vec::new();
    for (module, text) in known {
        if tells_kinds_apart(module) {
            continue;
        }
        for line in without_test_modules(text).lines().filter(|l| !l.trim_start().starts_with("//")) {
            if engines.iter().filter(|e| line.contains(&format!("\"{e}\""))).count() >= 2 {
                out.push(format!("{module}: {}", line.trim()));
            }
        }
    }
    out
}

/// Engines are open, not enumerated: no module outside the registry and the catalogs lists
/// engines by name, and a planted list is found.
#[test]
fn no_closed_list_of_engines_outside_the_registry() {
    let (known, _) = library_graph();
    let found = closed_engine_lists(&known);
    assert!(found.is_empty(), "engines listed by name outside the registry:\n{}", found.join("\n"));
    let planted = [
        "const WITH_SERVERS: [&str; 2] = [\"pg\", \"milvus\"];\n",
        "if matches!(name, \"milvus\" | \"chroma\") { secret() }\n",
    ];
    for text in planted {
        let found = closed_engine_lists(&[("experiment".to_string(), text.to_string())].into());
        assert_eq!(found.len(), 1, "{text}: {found:?}");
        assert!(closed_engine_lists(&[("engine::servers".to_string(), text.to_string())].into()).is_empty());
    }
}

#[test]
fn only_the_catalog_names_a_kind() {
    let (mut known, _) = library_graph();
    let main = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs");
    known.insert("main".into(), std::fs::read_to_string(main).unwrap());
    let found = kinds_named_outside_the_catalog(&known);
    assert!(found.is_empty(), "kinds matched outside src/catalog/:\n{}", found.join("\n"));
}

#[test]
fn a_kind_matched_outside_the_catalog_is_found() {
    let planted = "fn family(r: &RetrieverSpec) -> &str {\n    match r {\n        RetrieverSpec::Bm25 { .. } => \"bm25\",\n        _ => \"other\",\n    }\n}\n";
    let sources = |module: &str| -> BTreeMap<String, String> { [(module.to_string(), planted.to_string())].into() };
    let found = kinds_named_outside_the_catalog(&sources("report"));
    assert_eq!(found, ["report: RetrieverSpec::Bm25 { .. } => \"bm25\","]);
    assert!(kinds_named_outside_the_catalog(&sources("catalog::bm25")).is_empty());
    let in_tests = format!("#[cfg(test)]\nmod tests {{\n{planted}}}\n");
    assert!(kinds_named_outside_the_catalog(&[("report".to_string(), in_tests)].into()).is_empty());
    let fused = "let ranked = matches!(fusion, Fusion::Rrf { .. });\n";
    assert_eq!(kinds_named_outside_the_catalog(&[("runner".to_string(), fused.to_string())].into()).len(), 1);
    assert_eq!(kinds_named_outside_the_catalog(&[("retrieve::fusion".to_string(), fused.to_string())].into()).len(), 1);
    assert!(kinds_named_outside_the_catalog(&[("catalog::fusion".to_string(), fused.to_string())].into()).is_empty());
    let chunker = "let whole = spec.kind == ChunkerKind::None;\n";
    assert_eq!(kinds_named_outside_the_catalog(&[("build".to_string(), chunker.to_string())].into()).len(), 1);
    assert!(kinds_named_outside_the_catalog(&[("chunkers::fixed".to_string(), chunker.to_string())].into()).is_empty());
    let engine = "let milvus = source.engine() == Some(crate::engine::milvus::ENGINE);\n";
    assert_eq!(kinds_named_outside_the_catalog(&[("runner".to_string(), engine.to_string())].into()).len(), 1);
    assert!(kinds_named_outside_the_catalog(&[("catalog::served".to_string(), engine.to_string())].into()).is_empty());
    let picked = "let lexical = if spec.full_text.is_some() { 1 } else { 2 };\n";
    assert_eq!(kinds_named_outside_the_catalog(&[("plan".to_string(), picked.to_string())].into()).len(), 1);
}
