//! Includes, as documentation sites render them: a page that pulls another file into itself
//! (Hugo `{{< readfile file="…" >}}` and `{{% include "…" %}}`, MkDocs snippets `--8<-- "…"`,
//! MyST ```` ```{include} … ```` ````) is read with that file's text in place, so its answer is
//! found under the page a reader sees, not only under the included file's own id. So is a Hugo
//! shortcode whose template (`layouts/shortcodes/NAME.html`, a theme's too) ranges over the
//! pages of one section (`.Site.GetPage "glossary"`, `where … "Section" "glossary"`): each of
//! its pages in place, under a heading of its title, as a glossary page shows its terms; and a
//! section's list page (`_index.md`) whose list template renders its pages' content.
//!
//! Paths resolve as the site generator resolves them: a relative path from the including
//! file's folder; a `/`-rooted one from the site's content root, then its project root (Hugo's
//! `content/` beside `hugo.toml` or `config.*`, MkDocs' `docs_dir` beside `mkdocs.yml`, a
//! Docusaurus `docs/`, the folder of Sphinx's `conf.py`), the nearest site at or above the page
//! and inside the corpus first; then from the corpus folder, as before sites were found.
//!
//! Bounded: an included path must stay inside the corpus folder, a file is read at most
//! [`MAX_INCLUDE_BYTES`], includes nest at most [`MAX_DEPTH`] deep, and a file that includes
//! itself (directly or not) is not read again. Fail closed: an included file whose front matter
//! declares an access list is an error — the page would carry its text to whoever may see the
//! page.

use std::path::{Path, PathBuf};

use crate::error::{Error, Location, Result};
use crate::input::access_key::AccessKey;
use crate::input::text::fence_marker;

/// Bytes of one included file read at most.
pub const MAX_INCLUDE_BYTES: u64 = 1 << 20;

/// Includes inside includes, at most.
pub const MAX_DEPTH: usize = 3;

/// What resolving a page's includes did.
#[derive(Debug, Default, PartialEq)]
pub struct Resolved {
    pub text: String,
    /// The files read in place (canonical), once per include.
    pub included: Vec<PathBuf>,
    /// Include targets that could not be read, each with why.
    pub unresolved: Vec<Unresolved>,
}

/// An include that was not read in place.
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    /// The path as the directive wrote it.
    pub target: String,
    pub why: Missed,
}

/// Why an include was not read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Missed {
    NotFound,
    OutsideCorpus,
    TooLarge,
    /// The file is already being read further up the chain.
    Cycle,
    TooDeep,
    Unreadable,
    /// A section's pages asked for inside a page a section's shortcode shows.
    ShownAgain,
}

impl Missed {
    pub fn as_str(self) -> &'static str {
        match self {
            Missed::NotFound => "not found",
            Missed::OutsideCorpus => "outside the corpus folder",
            Missed::TooLarge => "over the 1 MiB an included file may hold",
            Missed::Cycle => "a cycle: it includes itself",
            Missed::TooDeep => "nested deeper than 3 includes",
            Missed::Unreadable => "not readable as text",
            Missed::ShownAgain => "a section shown inside a page a section shows",
        }
    }
}

/// An include a line names: the byte range of the directive in the line, the target, and how
/// its text goes in.
#[derive(Debug, PartialEq)]
struct Directive {
    start: usize,
    end: usize,
    target: String,
    how: Placed,
}

/// How an included file's text is placed.
#[derive(Debug, Clone, PartialEq)]
enum Placed {
    /// As written (its front matter left out, its own includes read).
    Text,
    /// Only what lies between two markers of it (MkDocs include-markdown's `start` and `end`).
    Between(Option<String>, Option<String>),
    /// As a literal block (Sphinx `literalinclude`): code the page shows.
    Literal,
}

/// The first quoted string of `s`.
fn quoted(s: &str) -> Option<String> {
    let open = s.find(['"', '\''])?;
    let q = s[open..].chars().next()?;
    let rest = &s[open + 1..];
    let close = rest.find(q)?;
    Some(rest[..close].to_string())
}

/// The include a line names: Hugo's include shortcodes, MkDocs snippets (`--8<-- "…"`) and the
/// include-markdown plugin (`{% include-markdown "…" start="…" end="…" %}`, `{% include "….md" %}`),
/// reStructuredText's `.. include::` and `.. literalinclude::`.
fn directive(line: &str) -> Option<Directive> {
    for (open, close) in SHORTCODE_MARKS {
        if let Some((start, end, name, inner)) = shortcode_call(line, open, close) {
            if INCLUDE_SHORTCODES.contains(&name) {
                return Some(Directive { start, end, target: quoted(inner)?, how: Placed::Text });
            }
        }
    }
    let trimmed = line.trim();
    let start = line.len() - line.trim_start().len();
    let end = line.trim_end().len();
    if let Some(rest) = trimmed.strip_prefix("--8<--") {
        return Some(Directive { start, end, target: quoted(rest)?, how: Placed::Text });
    }
    if let Some((start, end, name, inner)) = shortcode_call(line, "{%", "%}") {
        let args = inner[name.len()..].trim_start();
        let target = quoted(args)?;
        let option = |key: &str| args.split(&format!("{key}=")).nth(1).and_then(quoted);
        return match name {
            "include-markdown" => {
                Some(Directive { start, end, target, how: Placed::Between(option("start"), option("end")) })
            }
            // `{% include %}` is also other template languages': only a Markdown file is one.
            "include" if target.ends_with(".md") => Some(Directive { start, end, target, how: Placed::Text }),
            _ => None,
        };
    }
    for (marker, how) in [(".. include::", Placed::Text), (".. literalinclude::", Placed::Literal)] {
        if let Some(target) = trimmed.strip_prefix(marker).map(str::trim).filter(|t| !t.is_empty()) {
            // `<isonum.txt>`: one of Docutils' own files, not the project's.
            if target.starts_with('<') {
                return None;
            }
            return Some(Directive { start, end, target: target.to_string(), how });
        }
    }
    None
}

/// A Docusaurus MDX import of a Markdown partial (`import Shared from './_shared.mdx';`): the
/// component's name and the path (`@site/` is the project's root).
fn mdx_import(line: &str) -> Option<(String, String)> {
    let rest = line.trim().strip_prefix("import ")?;
    let (name, from) = rest.split_once(" from ")?;
    let name = name.trim();
    let path = quoted(from)?;
    let markdown = path.ends_with(".md") || path.ends_with(".mdx");
    let component = name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (markdown && component).then(|| (name.to_string(), path.strip_prefix("@site").map_or(path.clone(), str::to_string)))
}

/// The component a line renders alone (`<Shared />`), if it is one.
fn component_line(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix('<')?.strip_suffix("/>")?.trim();
    (!inner.is_empty() && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(inner)
}

/// A template tag opened on one line and closed on a later one (`{%` … `%}`, as
/// include-markdown's options are often written): the lines up to the close joined with
/// spaces, and how many lines it took; within [`SHORTCODE_LINES`].
fn joined_tag(lines: &[&str], at: usize) -> Option<(String, usize)> {
    let first = lines[at];
    if !first.contains("{%") || first.contains("%}") {
        return None;
    }
    let mut joined = first.trim_end().to_string();
    for (n, line) in lines.iter().enumerate().skip(at + 1).take(SHORTCODE_LINES) {
        joined.push(' ');
        joined.push_str(line.trim());
        if line.contains("%}") {
            return Some((joined, n - at + 1));
        }
    }
    None
}

/// Lines a template tag may span.
const SHORTCODE_LINES: usize = 12;

/// `target` as a file inside `root` (canonical), read from `dir` (the including file's folder):
/// a relative path from `dir`, then, like a rooted one, from the sites at or above `dir`
/// ([`site_bases`]) and from `root`.
fn locate(target: &str, dir: &Path, root: &Path) -> std::result::Result<PathBuf, Missed> {
    let relative = target.trim_start_matches('/');
    let own = (!target.starts_with('/')).then(|| dir.join(relative));
    let bases = site_bases(dir, root).into_iter().chain([root.to_path_buf()]);
    let mut missed = Missed::NotFound;
    for candidate in own.into_iter().chain(bases.map(|b| b.join(relative))) {
        let Ok(found) = candidate.canonicalize() else { continue };
        if !found.starts_with(root) {
            missed = Missed::OutsideCorpus;
        } else if found.is_file() {
            return Ok(found);
        }
    }
    Err(missed)
}

/// The folders a site generator resolves a `/`-rooted include from, nearest site first: for
/// each folder from `dir` up to `root`, a Hugo project's `content/` and the project, an MkDocs
/// project's `docs_dir` and the project, a Docusaurus project's `docs/` and the project, a
/// Sphinx source folder (`conf.py`).
fn site_bases(dir: &Path, root: &Path) -> Vec<PathBuf> {
    let mut bases = Vec::new();
    let mut folder = Some(dir);
    while let Some(f) = folder.filter(|f| f.starts_with(root)) {
        let has = |name: &str| f.join(name).is_file();
        let mounts = hugo_content_mounts(f);
        if HUGO_CONFIGS.iter().any(|n| has(n)) && (f.join("content").is_dir() || !mounts.is_empty()) {
            // A multilingual site maps `content/en` (or `contentDir`) to its content.
            bases.extend(mounts.into_iter().chain([f.join("content"), f.to_path_buf()]));
        } else if let Some(config) = ["mkdocs.yml", "mkdocs.yaml"].iter().find(|n| has(n)) {
            let text = crate::input::text::site_config(&f.join(config)).unwrap_or_default();
            bases.extend([f.join(mkdocs_docs_dir(&text)), f.to_path_buf()]);
        } else if ["docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs"].iter().any(|n| has(n)) {
            bases.extend([f.join("docs"), f.to_path_buf()]);
        } else if has("conf.py") {
            bases.push(f.to_path_buf());
        }
        folder = f.parent();
    }
    bases
}

/// The folders a Hugo project at `project` (its `hugo.toml` or `config.toml`) mounts as its
/// content: `[[module.mounts]]` with `target = "content"`, and `contentDir` (top level or per
/// language); only folders inside the project.
fn hugo_content_mounts(project: &Path) -> Vec<PathBuf> {
    let Some(text) =
        ["hugo.toml", "config.toml"].iter().find_map(|n| crate::input::text::site_config(&project.join(n)))
    else {
        return Vec::new();
    };
    let Ok(config) = text.parse::<toml::Table>() else { return Vec::new() };
    let mut folders: Vec<&str> = Vec::new();
    let mounts = config.get("module").and_then(|m| m.get("mounts")).and_then(|m| m.as_array());
    for mount in mounts.into_iter().flatten() {
        if mount.get("target").and_then(|t| t.as_str()) == Some("content") {
            folders.extend(mount.get("source").and_then(|s| s.as_str()));
        }
    }
    folders.extend(config.get("contentDir").and_then(|c| c.as_str()));
    let languages = config.get("languages").and_then(|l| l.as_table());
    folders.extend(languages.into_iter().flat_map(|l| l.values()).filter_map(|l| l.get("contentDir")?.as_str()));
    folders
        .into_iter()
        .filter(|f| !f.is_empty() && !f.split(['/', '\\']).any(|part| part == "..") && !f.starts_with('/'))
        .map(|f| project.join(f))
        .filter(|f| f.is_dir())
        .collect()
}

/// `docs_dir` of an `mkdocs.yml`'s `text` (a top-level `docs_dir: path` line), `docs` by default.
pub(crate) fn mkdocs_docs_dir(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("docs_dir:"))
        .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
        .filter(|v| !v.is_empty() && !v.contains(".."))
        .unwrap_or_else(|| "docs".into())
}

/// `body` (the page at `file` after its front matter; `raw` is the whole file) with its
/// includes replaced by the included files' text (their front matter left out). `root` is the
/// corpus folder, canonical.
pub fn resolve(raw: &str, body: &str, file: &Path, root: &Path, rules: &AccessKey) -> Result<Resolved> {
    let mut out = Resolved::default();
    let page = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let dir = page.parent().unwrap_or(root).to_path_buf();
    let shown = listed_section(&page, root);
    let mut walk = Walk { root, rules, chain: vec![page], shortcodes: Default::default(), showing: false };
    out.text = walk.expand(body, first_line(raw, body), &dir, &mut out)?;
    if shown {
        // The list template renders the section's pages after the page's own content.
        let at = Location { path: walk.chain[0].clone(), line: first_line(raw, body), column: 1 };
        let pages = walk.section_pages(&dir, at, &mut out)?;
        out.text.push_str(&pages);
    }
    Ok(out)
}

/// Whether `page` is a Hugo section's list page (`_index.md` below the content root) whose
/// list template renders its pages' content (ranges over `.Pages` or `.RegularPages` and shows
/// `.Content`), as a glossary's list page shows its terms.
fn listed_section(page: &Path, root: &Path) -> bool {
    if page.file_stem().is_none_or(|s| s != "_index") {
        return false;
    }
    let Some(dir) = page.parent() else { return false };
    let Some(project) = hugo_project(dir, root) else { return false };
    let bases = hugo_content_mounts(&project).into_iter().chain([project.join("content")]);
    let Some(section) = bases.filter_map(|b| b.canonicalize().ok()).find_map(|b| {
        dir.strip_prefix(&b).ok()?.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned())
    }) else {
        return false;
    };
    list_template(&project, &section).is_some_and(|t| renders_pages(&t))
}

/// The template Hugo renders section `section`'s list page with, in its lookup order (the
/// project's layouts, then its themes'; the classic and the v0.146 template systems).
fn list_template(project: &Path, section: &str) -> Option<String> {
    let names = [
        format!("{section}/section.html"),
        format!("{section}/list.html"),
        format!("section/{section}.html"),
        "section/section.html".into(),
        "section/list.html".into(),
        "_default/section.html".into(),
        "_default/list.html".into(),
        "section.html".into(),
        "list.html".into(),
    ];
    let layouts = layout_folders(project);
    names.iter().find_map(|name| layouts.iter().find_map(|l| crate::input::text::site_config(&l.join(name))))
}

/// Where a Hugo project's templates are, in the order Hugo looks: its own `layouts`, then each
/// theme's (by name).
fn layout_folders(project: &Path) -> Vec<PathBuf> {
    let mut themes: Vec<PathBuf> = std::fs::read_dir(project.join("themes"))
        .map(|t| t.flatten().map(|t| t.path().join("layouts")).collect())
        .unwrap_or_default();
    themes.sort();
    std::iter::once(project.join("layouts")).chain(themes).collect()
}

/// Whether a list template shows its pages' content: a `range` over the section's pages
/// followed by `.Content` before any other `range`.
fn renders_pages(template: &str) -> bool {
    template.split("range").skip(1).any(|after| {
        let (head, body) = after.split_once("}}").unwrap_or((after, ""));
        [".Pages", ".RegularPages", ".Data.Pages"].iter().any(|p| head.contains(p)) && body.contains(".Content")
    })
}

/// The line of `raw` that `body`, its tail, starts on.
fn first_line(raw: &str, body: &str) -> usize {
    let head = raw.strip_suffix(body).unwrap_or("");
    head.matches('\n').count() + 1
}

/// A fenced block being read, by the marker that closes it: code (kept as written, includes in
/// it are examples) or a MyST include directive (replaced by the file it names).
enum Fence {
    Code(String),
    Include(String),
}

/// The files being expanded, outermost first, and what they are read with.
struct Walk<'a> {
    root: &'a Path,
    rules: &'a AccessKey,
    chain: Vec<PathBuf>,
    /// The section folder each shortcode shows, by the folder of the page calling it.
    shortcodes: std::collections::HashMap<(PathBuf, String), Option<PathBuf>>,
    /// Whether a section's pages are being read in place.
    showing: bool,
}

impl Walk<'_> {
    /// `text` with its includes read in place; `first` is the line of its file `text` starts on.
    fn expand(&mut self, text: &str, first: usize, dir: &Path, done: &mut Resolved) -> Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut fence: Option<Fence> = None;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        // Docusaurus partials imported so far, by component name.
        let mut imports: std::collections::HashMap<String, String> = Default::default();
        // After a reStructuredText include, its indented `:option:` lines.
        let mut options = false;
        let mut number = 0;
        while number < lines.len() {
            let line = lines[number];
            number += 1;
            let file = &self.chain[self.chain.len() - 1];
            let line_number = first + number - 1;
            let at = |column: usize| Location { path: file.clone(), line: line_number, column };
            let trimmed = line.trim_start();
            if std::mem::take(&mut options) && line.starts_with([' ', '\t']) && trimmed.starts_with(':') {
                options = true;
                continue;
            }
            match &fence {
                Some(Fence::Include(marker)) => {
                    if trimmed.starts_with(marker.as_str()) {
                        fence = None;
                    }
                    continue;
                }
                Some(Fence::Code(marker)) => {
                    if trimmed.starts_with(marker.as_str()) {
                        fence = None;
                    }
                    out.push_str(line);
                    continue;
                }
                None => {}
            }
            if let Some(marker) = fence_marker(trimmed) {
                // MyST's include directive is a fence of its own: ```{include} path
                if let Some(target) = trimmed[marker.len()..].trim().strip_prefix("{include}") {
                    let at = at(line.len() - trimmed.len() + 1);
                    out.push_str(&self.include(target.trim(), &Placed::Text, dir, at, done)?);
                    fence = Some(Fence::Include(marker.to_string()));
                } else {
                    out.push_str(line);
                    fence = Some(Fence::Code(marker.to_string()));
                }
                continue;
            }
            if let Some((name, path)) = mdx_import(line) {
                imports.insert(name, path);
            }
            if let Some(target) = component_line(line).and_then(|c| imports.get(c)).cloned() {
                let at = at(line.len() - trimmed.len() + 1);
                out.push_str(&self.include(&target, &Placed::Text, dir, at, done)?);
                continue;
            }
            // An include-markdown tag written over several lines is read as one.
            let joined = joined_tag(&lines, number - 1);
            let found = match &joined {
                Some((tag, _)) => directive(tag).map(|d| Directive { start: 0, end: tag.len(), ..d }),
                None => directive(line),
            };
            match found {
                Some(d) => {
                    let line = joined.as_ref().map_or(line, |(tag, taken)| {
                        number += taken - 1;
                        tag.as_str()
                    });
                    out.push_str(&line[..d.start]);
                    let at = at(line[..d.start].chars().count() + 1);
                    out.push_str(&self.include(&d.target, &d.how, dir, at, done)?);
                    out.push_str(&line[d.end..]);
                    if joined.is_some() {
                        out.push('\n');
                    }
                    options = trimmed.starts_with(".. ");
                }
                None => match shortcode(line)
                    .and_then(|(start, end, name)| Some((start, end, self.section_of(name, dir)?)))
                {
                    Some((start, end, section)) => {
                        out.push_str(&line[..start]);
                        // `at` borrows the chain, which reading the section's pages extends.
                        let column = line[..start].chars().count() + 1;
                        let at = Location { path: self.chain[self.chain.len() - 1].clone(), line: line_number, column };
                        out.push_str(&self.section_pages(&section, at, done)?);
                        out.push_str(&line[end..]);
                    }
                    None => out.push_str(line),
                },
            }
        }
        Ok(out)
    }

    /// The text of the file `target` names, placed `how`, included at `at`.
    fn include(&mut self, target: &str, how: &Placed, dir: &Path, at: Location, done: &mut Resolved) -> Result<String> {
        let read = locate(target, dir, self.root).and_then(|path| {
            if self.chain.contains(&path) {
                Err(Missed::Cycle)
            } else if self.chain.len() > MAX_DEPTH {
                Err(Missed::TooDeep)
            } else if !std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_INCLUDE_BYTES) {
                Err(Missed::TooLarge)
            } else {
                let text = crate::input::text::document(&path).map_err(|_| Missed::Unreadable)?;
                Ok((path, text))
            }
        });
        let (path, text) = match read {
            Ok(read) => read,
            Err(why) => {
                done.unresolved.push(Unresolved { target: target.to_string(), why });
                return Ok(String::new());
            }
        };
        if *how == Placed::Literal {
            // Code shown as written: no front matter, no includes of its own.
            done.included.push(path);
            let mut block = String::from("\n.. code-block::\n\n");
            for line in text.lines() {
                block.push_str(&format!("    {line}\n"));
            }
            return Ok(block);
        }
        let (front, body) = crate::input::frontmatter::split(&path, &text, self.rules)?;
        if front.acl.is_some() {
            let page = match self.chain.len() {
                1 => "the page".to_string(),
                _ => format!("the page {}", self.chain[0].display()),
            };
            let why = format!("which declares its own access list: {page} would show its text to whoever may see the page (give the page that access list and drop it from the included file, or stop including it)");
            return Err(Error::input(at, format!("includes {}, {why}", path.display())));
        }
        let body = match how {
            Placed::Between(start, end) => {
                let from = start.as_deref().and_then(|m| body.find(m).map(|i| i + m.len())).unwrap_or(0);
                let to = end.as_deref().and_then(|m| body[from..].find(m).map(|i| from + i)).unwrap_or(body.len());
                &body[from..to]
            }
            _ => body,
        };
        done.included.push(path.clone());
        self.chain.push(path.clone());
        // `body` lies inside `text`: the line it starts on.
        let first = text[..body.as_ptr() as usize - text.as_ptr() as usize].matches('\n').count() + 1;
        let expanded = self.expand(body, first, path.parent().unwrap_or(self.root), done)?;
        self.chain.pop();
        let mut expanded = expanded.trim_end().to_string();
        expanded.push('\n');
        Ok(expanded)
    }

    /// The section folder the site's shortcode `name` ranges over, for a page in `dir`; `None`
    /// when the shortcode is not one that shows a section's pages.
    fn section_of(&mut self, name: &str, dir: &Path) -> Option<PathBuf> {
        let key = (dir.to_path_buf(), name.to_string());
        if let Some(known) = self.shortcodes.get(&key) {
            return known.clone();
        }
        let found = hugo_project(dir, self.root).and_then(|project| {
            let section = shortcode_section(&project, name)?;
            let bases = hugo_content_mounts(&project).into_iter().chain([project.join("content")]);
            let folder = bases.map(|b| b.join(&section)).find(|f| f.is_dir())?.canonicalize().ok()?;
            // The pages shown must be the corpus's own.
            folder.starts_with(self.root).then_some(folder)
        });
        self.shortcodes.insert(key, found.clone());
        found
    }

    /// The pages of the section folder `section` (not its `_index`), in the site's default order
    /// (weight, then title), each under a heading of its title, their includes read; at `at`.
    fn section_pages(&mut self, section: &Path, at: Location, done: &mut Resolved) -> Result<String> {
        // A page shown by a section's shortcode that shows a section again is not expanded:
        // its pages would repeat one another, as many times over as there are pages.
        let refused = if self.showing {
            Some(Missed::ShownAgain)
        } else {
            (self.chain.len() > MAX_DEPTH).then_some(Missed::TooDeep)
        };
        if let Some(why) = refused {
            done.unresolved.push(Unresolved { target: section.display().to_string(), why });
            return Ok(String::new());
        }
        let Ok(entries) = std::fs::read_dir(section) else { return Ok(String::new()) };
        let mut pages = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let page = if path.is_dir() { path.join("index.md") } else { path };
            let markdown = page.extension().is_some_and(|e| e == "md");
            let regular = std::fs::symlink_metadata(&page).is_ok_and(|m| m.is_file() && m.len() <= MAX_INCLUDE_BYTES);
            if !markdown || !regular || page.file_stem().is_some_and(|s| s == "_index") || self.chain.contains(&page) {
                continue;
            }
            let text = crate::input::text::document(&page)?;
            let (front, body) = crate::input::frontmatter::split(&page, &text, self.rules)?;
            if front.acl.is_some() {
                return Err(Error::input(
                    at,
                    format!(
                        "shows the page {}, which declares its own access list: the page showing it would give its text to whoever may see that page",
                        page.display()
                    ),
                ));
            }
            let weight = front.meta.get("weight").and_then(|w| w.parse::<i64>().ok()).unwrap_or(0);
            let title =
                front.title.clone().unwrap_or_else(|| page.file_stem().unwrap_or_default().to_string_lossy().into());
            let first = first_line(&text, body);
            pages.push((weight, title, page, body.to_string(), first));
        }
        pages.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));
        let mut out = String::new();
        // An error ends the page's whole walk: the flag needs no resetting on it.
        self.showing = true;
        for (_, title, page, body, first) in pages {
            done.included.push(page.clone());
            self.chain.push(page.clone());
            let expanded = self.expand(&body, first, page.parent().unwrap_or(self.root), done)?;
            self.chain.pop();
            out.push_str(&format!("\n## {title}\n\n{}\n", expanded.trim()));
        }
        self.showing = false;
        Ok(out)
    }
}

/// How a Hugo shortcode call opens and closes (`{{< name >}}`, `{{% name %}}`).
const SHORTCODE_MARKS: [(&str, &str); 2] = [("{{<", ">}}"), ("{{%", "%}}")];
/// The shortcodes that include a file.
const INCLUDE_SHORTCODES: [&str; 2] = ["readfile", "include"];

/// The first shortcode call on `line` opened by `open`: its byte range, its name and what is
/// inside its marks.
fn shortcode_call<'l>(line: &'l str, open: &str, close: &str) -> Option<(usize, usize, &'l str, &'l str)> {
    let start = line.find(open)?;
    let end = start + line[start..].find(close)? + close.len();
    let inner = line[start + open.len()..end - close.len()].trim();
    Some((start, end, inner.split_whitespace().next().unwrap_or(""), inner))
}

/// A Hugo shortcode call on `line` other than an include: its byte range and name.
fn shortcode(line: &str) -> Option<(usize, usize, &str)> {
    SHORTCODE_MARKS.into_iter().find_map(|(open, close)| {
        let (start, end, name, _) = shortcode_call(line, open, close)?;
        (!name.is_empty() && !name.starts_with('/') && !INCLUDE_SHORTCODES.contains(&name))
            .then_some((start, end, name))
    })
}

/// The nearest Hugo project at or above `dir`: inside `root`, or up to two folders above it (a
/// corpus pointed at `content/` or `content/en` of a project).
fn hugo_project(dir: &Path, root: &Path) -> Option<PathBuf> {
    let highest = root.ancestors().nth(2).unwrap_or(root);
    dir.ancestors().take_while(|f| f.starts_with(highest)).find(|f| is_hugo_project(f)).map(Path::to_path_buf)
}

/// Whether `folder` is a Hugo project: its configuration beside a `content/` or `layouts/`
/// folder (a `config.toml` alone is too common to say so).
pub(crate) fn is_hugo_project(folder: &Path) -> bool {
    let configured = HUGO_CONFIGS.iter().any(|n| folder.join(n).is_file()) || folder.join("config/_default").is_dir();
    configured && ["content", "layouts", "archetypes"].iter().any(|d| folder.join(d).is_dir())
}

/// The files a Hugo project's configuration may be in.
const HUGO_CONFIGS: [&str; 6] = ["hugo.toml", "hugo.yaml", "hugo.json", "config.toml", "config.yaml", "config.json"];

/// The folders of a Hugo project the site is built from but that hold no pages: templates,
/// themes, static files, data, translations, the built site.
pub(crate) const HUGO_NON_CONTENT: [&str; 9] =
    ["layouts", "themes", "archetypes", "static", "assets", "data", "i18n", "public", "resources"];

/// The section whose pages the template of shortcode `name` in `project` (or one of its themes)
/// ranges over: the path it passes to `GetPage`, or the `"Section"` it filters pages by.
fn shortcode_section(project: &Path, name: &str) -> Option<String> {
    let file = format!("{name}.html");
    let text = layout_folders(project).iter().find_map(|layouts| {
        ["shortcodes", "_shortcodes"].iter().find_map(|d| crate::input::text::site_config(&layouts.join(d).join(&file)))
    })?;
    if !text.contains("range") {
        return None;
    }
    // `GetPage "/glossary"`, or `GetPage $path` with `$path := "/glossary"` set before.
    let literal = |rest: &str| -> Option<String> {
        let rest = rest.trim_start().strip_prefix('"')?;
        Some(rest[..rest.find('"')?].to_string())
    };
    let variable = |rest: &str| -> Option<String> {
        let name: String =
            rest.trim_start().chars().take_while(|c| *c == '$' || c.is_alphanumeric() || *c == '_').collect();
        let name = name.strip_prefix('$').filter(|n| !n.is_empty())?;
        text.split(&format!("${name} :=")).nth(1).and_then(literal)
    };
    let quoted_after =
        |marker: &str| text.split(marker).skip(1).find_map(|rest| literal(rest).or_else(|| variable(rest)));
    let section = quoted_after("GetPage").or_else(|| quoted_after("\"Section\""))?;
    let section = section.trim_matches('/');
    (!section.is_empty() && !section.split('/').any(|p| p == ".." || p == ".")).then(|| section.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hugo's own documentation passes the glossary's path through a variable
    /// (`$path := "/quick-reference/glossary"`, `site.GetPage $path`); a list template shows its
    /// pages' content only when it renders `.Content` inside a range over them.
    #[test]
    fn sections_shown_by_templates_are_found_as_hugo_sites_write_them() {
        let project = tempfile::tempdir().unwrap();
        let shortcodes = project.path().join("layouts/_shortcodes");
        std::fs::create_dir_all(&shortcodes).unwrap();
        std::fs::write(
            shortcodes.join("glossary.html"),
            "{{- $path := \"/quick-reference/glossary\" }}\n{{- with site.GetPage $path }}\n{{- range $p := .Pages.ByTitle }}{{ .Content }}{{ end }}{{ end }}\n",
        )
        .unwrap();
        assert_eq!(shortcode_section(project.path(), "glossary").as_deref(), Some("quick-reference/glossary"));
        assert!(renders_pages(
            "{{ .Content }}{{ range .Pages }}{{ if .Draft }}x{{ end }}<dd>{{ .Content }}</dd>{{ end }}"
        ));
        assert!(renders_pages("{{ range .RegularPages.ByWeight }}{{ .Content }}{{ end }}"));
        assert!(!renders_pages("{{ .Content }}{{ range .Pages }}<a>{{ .Title }}</a> {{ .Summary }}{{ end }}"));
        assert!(!renders_pages("{{ range .Site.Menus.main }}{{ .Name }}{{ end }}{{ .Content }}"));
    }

    #[test]
    fn hugo_mkdocs_and_myst_includes_are_read_in_place_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("docs/shared")).unwrap();
        std::fs::write(root.join("docs/shared/fact.md"), "---\ntitle: x\n---\nThe gc flag removes unused files.\n")
            .unwrap();
        std::fs::write(root.join("docs/shared/loop.md"), "{{% include \"loop.md\" %}}\nloop body\n").unwrap();
        std::fs::write(dir.path().parent().unwrap().join("outside-ragsweep-test.md"), "secret").ok();
        let page = root.join("docs/page.md");
        let text = "# Page\n{{< readfile file=\"shared/fact.md\" >}}\n--8<-- \"docs/shared/fact.md\"\n```{include} shared/fact.md\n```\n```sh\n{{< readfile file=\"shared/fact.md\" >}}\n```\n{{% include \"../../outside-ragsweep-test.md\" %}}\n{{% include \"shared/loop.md\" %}}\n";
        let r = resolve(text, text, &page, &root, &AccessKey::default()).unwrap();
        assert_eq!(r.text.matches("The gc flag removes unused files.").count(), 3, "{}", r.text);
        assert!(r.text.contains("```sh\n{{< readfile"), "fenced code stays as written: {}", r.text);
        assert!(!r.text.contains("secret") && !r.text.contains("title: x"), "{}", r.text);
        assert_eq!(r.text.matches("loop body").count(), 1, "a file including itself is read once: {}", r.text);
        assert_eq!(r.included.len(), 4);
        let missed: Vec<(&str, Missed)> = r.unresolved.iter().map(|u| (u.target.as_str(), u.why)).collect();
        assert_eq!(missed, [("../../outside-ragsweep-test.md", Missed::OutsideCorpus), ("loop.md", Missed::Cycle)]);
        std::fs::write(root.join("docs/shared/rh.md"), "---\nacl: [rh]\n---\nsalários\n").unwrap();
        let raw = "---\ntitle: p\n---\n# Page\n  {{< readfile file=\"shared/rh.md\" >}}\n";
        let err = resolve(raw, &raw[17..], &page, &root, &AccessKey::default()).unwrap_err();
        assert!(err.to_string().contains("page.md:5:3: includes"), "{err}");
        assert!(err.to_string().contains("declares its own access list"), "{err}");
    }
}
