//! What a documentation site publishes. A checkout holds pages readers never see: drafts,
//! pages and bundles the generator renders nowhere, partials that exist only to be included.
//! Indexing them measures retrieval over text no user can be sent to, and gives them stubs and
//! judgments; so they are left out of the corpus and listed (their text still reaches the pages
//! that include them), unless `[corpus] publish = "all"`.
//!
//! Read from front matter (Hugo: `draft: true`, `headless: true`, `build.render: never`,
//! `_build.render: false`, and the same under a section's `cascade`) and from file names
//! (Docusaurus leaves out files and folders whose names start with `_`), and from MkDocs'
//! `exclude_docs` and `draft_docs` (gitignore-style patterns under `docs_dir`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a page with this front matter is not published, if it is not.
pub fn own(meta: &BTreeMap<String, String>) -> Option<&'static str> {
    let fields: serde_json::Map<String, serde_json::Value> =
        meta.iter().map(|(k, v)| (k.clone(), serde_json::from_str(v).unwrap_or(serde_json::json!(v)))).collect();
    unpublished(&fields, "")
}

/// Why the pages below a section with this front matter are not published (its `cascade`).
pub fn cascaded(meta: &BTreeMap<String, String>) -> Option<&'static str> {
    let cascade: serde_json::Value = serde_json::from_str(meta.get("cascade")?).ok()?;
    let targets = match cascade {
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    targets.iter().filter_map(|t| t.as_object()).find_map(|t| unpublished(t, "cascade: "))
}

/// Whether `page` (a path below `site`, a Docusaurus project) is a partial: a file or folder
/// on its way from `site` starting with `_`.
pub fn docusaurus_partial(page: &Path, site: &Path) -> bool {
    let Ok(relative) = page.strip_prefix(site) else { return false };
    relative.iter().any(|part| part.to_string_lossy().starts_with('_'))
}

/// An MkDocs project's rules for pages its build leaves out.
pub struct MkDocsSite {
    docs: PathBuf,
    /// In order (the last that matches decides): the pattern, whether it is a `!` exception,
    /// and the key it came from.
    rules: Vec<(globset::GlobMatcher, bool, &'static str)>,
}

impl MkDocsSite {
    /// The rules of the project whose `mkdocs.yml` is `config`; `None` when it has none.
    pub fn read(config: &Path) -> Option<MkDocsSite> {
        let text = crate::input::text::site_config(config)?;
        let project = config.parent()?;
        let docs = project.join(crate::input::includes::mkdocs_docs_dir(&text));
        let mut rules = Vec::new();
        for key in ["exclude_docs", "draft_docs"] {
            for pattern in block_lines(&text, key) {
                let (negated, pattern) = match pattern.strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, pattern),
                };
                let dir_only = pattern.ends_with('/');
                let pattern = pattern.trim_end_matches('/');
                let anchored = pattern.contains('/');
                let pattern = pattern.trim_start_matches('/');
                let glob = if anchored { pattern.to_string() } else { format!("**/{pattern}") };
                for glob in [(!dir_only).then(|| glob.clone()), Some(format!("{glob}/**"))].into_iter().flatten() {
                    if let Ok(g) = globset::GlobBuilder::new(&glob).literal_separator(true).build() {
                        rules.push((g.compile_matcher(), negated, key));
                    }
                }
            }
        }
        (!rules.is_empty()).then_some(MkDocsSite { docs, rules })
    }

    /// Why the build leaves `page` out, if it does.
    pub fn leaves_out(&self, page: &Path) -> Option<String> {
        let relative = page.strip_prefix(&self.docs).ok()?;
        let (_, negated, key) = self.rules.iter().rev().find(|(glob, _, _)| glob.is_match(relative))?;
        (!negated).then(|| format!("{key} in mkdocs.yml"))
    }
}

/// The lines of a top-level YAML key's value: a block scalar (`key: |` and the indented lines
/// below it) or one value on the key's line; comments and blank lines left out.
fn block_lines<'t>(text: &'t str, key: &str) -> Vec<&'t str> {
    let mut lines = text.lines();
    let Some(value) = lines.by_ref().find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':'))) else {
        return Vec::new();
    };
    let value = value.trim();
    if !value.starts_with(['|', '>']) {
        let one = value.trim_matches(['"', '\'']);
        return if one.is_empty() || one.starts_with('#') { Vec::new() } else { vec![one] };
    }
    lines
        .take_while(|l| l.trim().is_empty() || l.starts_with([' ', '\t']))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

fn unpublished(fields: &serde_json::Map<String, serde_json::Value>, via: &str) -> Option<&'static str> {
    let yes = |v: Option<&serde_json::Value>| match v {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    };
    let never = |v: Option<&serde_json::Value>| match v {
        Some(serde_json::Value::Bool(b)) => !*b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("never") || s.eq_ignore_ascii_case("false"),
        _ => false,
    };
    let render = |key: &str| fields.get(key).and_then(|b| b.as_object()).and_then(|b| b.get("render"));
    if yes(fields.get("draft")) {
        Some(if via.is_empty() { "draft: true" } else { "cascade: draft: true" })
    } else if yes(fields.get("headless")) {
        Some(if via.is_empty() { "headless: true" } else { "cascade: headless: true" })
    } else if never(render("build")) || never(render("_build")) {
        Some(if via.is_empty() { "build.render: never" } else { "cascade: build.render: never" })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn drafts_headless_and_unrendered_pages_are_not_published() {
        assert_eq!(own(&meta(&[("draft", "true")])), Some("draft: true"));
        assert_eq!(own(&meta(&[("draft", "false")])), None);
        assert_eq!(own(&meta(&[("headless", "true")])), Some("headless: true"));
        assert_eq!(own(&meta(&[("build", r#"{"render":"never","list":"never"}"#)])), Some("build.render: never"));
        assert_eq!(own(&meta(&[("_build", r#"{"render":"false"}"#)])), Some("build.render: never"));
        assert_eq!(own(&meta(&[("build", r#"{"render":"always"}"#)])), None);
        assert_eq!(own(&meta(&[("title", "x")])), None);
        let cascade = meta(&[("cascade", r#"{"build":{"render":"never","list":"never"}}"#)]);
        assert_eq!(cascaded(&cascade), Some("cascade: build.render: never"));
        assert_eq!(own(&cascade), None, "a cascade says nothing of the section page's own");
        assert_eq!(cascaded(&meta(&[("cascade", r#"[{"draft":true}]"#)])), Some("cascade: draft: true"));
        assert_eq!(cascaded(&meta(&[("cascade", r#"{"params":{"x":1}}"#)])), None);
        assert!(docusaurus_partial(Path::new("/s/docs/_shared/a.md"), Path::new("/s")));
        assert!(!docusaurus_partial(Path::new("/s/docs/shared/a.md"), Path::new("/s")));
    }

    #[test]
    fn mkdocs_excluded_and_draft_docs_are_not_published() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mkdocs.yml");
        std::fs::write(
            &config,
            "site_name: x\ndocs_dir: src\nexclude_docs: |\n  # internal\n  *.tmp.md\n  /internal/\n  !/internal/keep.md\n\ndraft_docs: |\n  drafts/\nnav:\n  - a.md\n",
        )
        .unwrap();
        let site = MkDocsSite::read(&config).unwrap();
        let page = |p: &str| site.leaves_out(&dir.path().join("src").join(p));
        assert_eq!(page("a.md"), None);
        assert_eq!(page("notes/b.tmp.md").as_deref(), Some("exclude_docs in mkdocs.yml"));
        assert_eq!(page("internal/x.md").as_deref(), Some("exclude_docs in mkdocs.yml"));
        assert_eq!(page("internal/keep.md"), None, "an exception");
        assert_eq!(page("guide/drafts/y.md").as_deref(), Some("draft_docs in mkdocs.yml"));
        assert_eq!(page("drafts.md"), None, "a folder pattern");
    }
}
