//! Includes, as documentation sites render them: a page that pulls another file into itself
//! (Hugo `{{< readfile file="…" >}}` and `{{% include "…" %}}`, MkDocs snippets `--8<-- "…"`,
//! MyST ```` ```{include} … ```` ````) is read with that file's text in place, so its answer is
//! found under the page a reader sees, not only under the included file's own id.
//!
//! Bounded: an included path must stay inside the corpus folder, a file is read at most
//! [`MAX_INCLUDE_BYTES`], includes nest at most [`MAX_DEPTH`] deep, and a file that includes
//! itself (directly or not) is not read again. Fail closed: an included file whose front matter
//! declares an access list is an error — the page would carry its text to whoever may see the
//! page.

use std::path::{Path, PathBuf};

use crate::error::{Error, Location, Result};
use crate::input::access_key::AccessKey;
use crate::input::formats::fence_marker;

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
    /// Include targets that could not be read (missing, outside the corpus, too large, a cycle).
    pub unresolved: Vec<String>,
}

/// The include target a line names, with the byte range of the directive in the line.
fn directive(line: &str) -> Option<(usize, usize, String)> {
    let quoted = |s: &str| -> Option<String> {
        let open = s.find(['"', '\''])?;
        let q = s[open..].chars().next()?;
        let rest = &s[open + 1..];
        let close = rest.find(q)?;
        Some(rest[..close].to_string())
    };
    for (open, close) in [("{{<", ">}}"), ("{{%", "%}}")] {
        if let Some(start) = line.find(open) {
            let end = start + line[start..].find(close)? + close.len();
            let inner = line[start + open.len()..end - close.len()].trim();
            let name = inner.split_whitespace().next().unwrap_or("");
            if name == "readfile" || name == "include" {
                return Some((start, end, quoted(inner)?));
            }
        }
    }
    let trimmed = line.trim();
    if let Some(rest) = trimmed.strip_prefix("--8<--") {
        let start = line.find("--8<--")?;
        return Some((start, line.trim_end().len(), quoted(rest)?));
    }
    None
}

/// `target` as a file inside `root`: relative to `dir` (the including file's folder), else to
/// `root`; `None` when it resolves outside `root` or to nothing.
fn locate(target: &str, dir: &Path, root: &Path) -> Option<PathBuf> {
    let candidates = [dir.join(target.trim_start_matches('/')), root.join(target.trim_start_matches('/'))];
    candidates.iter().filter_map(|c| c.canonicalize().ok()).find(|c| c.starts_with(root) && c.is_file())
}

/// `body` (the page at `file` after its front matter; `raw` is the whole file) with its
/// includes replaced by the included files' text (their front matter left out). `root` is the
/// corpus folder, canonical.
pub fn resolve(raw: &str, body: &str, file: &Path, root: &Path, rules: &AccessKey) -> Result<Resolved> {
    let mut out = Resolved::default();
    let mut walk = Walk { root, rules, chain: vec![file.canonicalize().unwrap_or_else(|_| file.to_path_buf())] };
    out.text = walk.expand(body, first_line(raw, body), file.parent().unwrap_or(root), &mut out)?;
    Ok(out)
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
}

impl Walk<'_> {
    /// `text` with its includes read in place; `first` is the line of its file `text` starts on.
    fn expand(&mut self, text: &str, first: usize, dir: &Path, done: &mut Resolved) -> Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut fence: Option<Fence> = None;
        for (number, line) in text.split_inclusive('\n').enumerate() {
            let at = |column: usize| Location {
                path: self.chain[self.chain.len() - 1].clone(),
                line: first + number,
                column,
            };
            let trimmed = line.trim_start();
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
                    out.push_str(&self.include(target.trim(), dir, at, done)?);
                    fence = Some(Fence::Include(marker.to_string()));
                } else {
                    out.push_str(line);
                    fence = Some(Fence::Code(marker.to_string()));
                }
                continue;
            }
            match directive(line) {
                Some((start, end, target)) => {
                    out.push_str(&line[..start]);
                    let at = at(line[..start].chars().count() + 1);
                    out.push_str(&self.include(&target, dir, at, done)?);
                    out.push_str(&line[end..]);
                }
                None => out.push_str(line),
            }
        }
        Ok(out)
    }

    /// The text of the file `target` names, included at `at`.
    fn include(&mut self, target: &str, dir: &Path, at: Location, done: &mut Resolved) -> Result<String> {
        let chain = &self.chain;
        let found = locate(target, dir, self.root).filter(|p| !chain.contains(p) && chain.len() <= MAX_DEPTH);
        let text = found.as_ref().and_then(|p| {
            let small = std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_INCLUDE_BYTES);
            small.then(|| crate::input::text::document(p).ok()).flatten()
        });
        let (Some(path), Some(text)) = (found, text) else {
            done.unresolved.push(target.to_string());
            return Ok(String::new());
        };
        let (front, body) = crate::input::frontmatter::split(&path, &text, self.rules)?;
        if front.acl.is_some() {
            let page = match self.chain.len() {
                1 => "the page".to_string(),
                _ => format!("the page {}", self.chain[0].display()),
            };
            let why = format!("which declares its own access list: {page} would show its text to whoever may see the page (give the page that access list and drop it from the included file, or stop including it)");
            return Err(Error::input(at, format!("includes {}, {why}", path.display())));
        }
        done.included.push(path.clone());
        self.chain.push(path.clone());
        let expanded = self.expand(body, first_line(&text, body), path.parent().unwrap_or(self.root), done)?;
        self.chain.pop();
        let mut expanded = expanded.trim_end().to_string();
        expanded.push('\n');
        Ok(expanded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(r.unresolved, ["../../outside-ragsweep-test.md", "loop.md"]);
        std::fs::write(root.join("docs/shared/rh.md"), "---\nacl: [rh]\n---\nsalários\n").unwrap();
        let raw = "---\ntitle: p\n---\n# Page\n  {{< readfile file=\"shared/rh.md\" >}}\n";
        let err = resolve(raw, &raw[17..], &page, &root, &AccessKey::default()).unwrap_err();
        assert!(err.to_string().contains("page.md:5:3: includes"), "{err}");
        assert!(err.to_string().contains("declares its own access list"), "{err}");
    }
}
