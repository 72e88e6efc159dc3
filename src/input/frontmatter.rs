//! Front matter of Markdown/text documents: a `---` fenced block of flat YAML.
//!
//! Only the subset documents need is read: `key: value` scalars (plain or quoted),
//! flow lists `[a, b]`, block lists (`- a` lines), `# comments`, and one nested map level
//! under `meta:`. The keys are `title`, `acl` and `meta`; any other key is an error, since
//! a misspelt `acl` ignored would make a restricted document public.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Location, Result};

#[derive(Debug, Default, PartialEq)]
pub struct FrontMatter {
    pub title: Option<String>,
    pub acl: Option<Vec<String>>,
    pub meta: BTreeMap<String, String>,
}

enum Value {
    Scalar(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

/// The keys front matter may have (SPEC §1); anything else is refused, never ignored.
pub const KEYS: [&str; 3] = ["title", "acl", "meta"];

/// A field name that is probably a misspelt `acl` (`ACL`, `acls`, `groups`, …).
pub fn looks_like_acl(key: &str) -> bool {
    let k = key.to_lowercase();
    key != "acl" && (k.contains("acl") || k.contains("group") || k.contains("permission"))
}

/// Splits `raw` into its front matter and the document text after it.
///
/// The first line that is not blank decides: a `---` fence (trailing whitespace allowed)
/// opens front matter, which must close with `---` or `...`. Front matter is never body
/// text: a misspelt key or an unclosed fence is an error, so a typo cannot make a
/// restricted document public.
pub fn split<'a>(path: &Path, raw: &'a str) -> Result<(FrontMatter, &'a str)> {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let mut lines = raw.split_inclusive('\n').enumerate().skip_while(|(_, l)| l.trim().is_empty());
    let Some((open_index, open)) = lines.next() else {
        return Ok((FrontMatter::default(), raw));
    };
    match open.trim_end() {
        "---" => {}
        "+++" => {
            return Err(Error::input(
                Location::line(path, open_index + 1),
                "TOML front matter (+++) is not read: write YAML between --- fences",
            ))
        }
        _ => {
            check_no_acl_in_text(path, 1, raw)?;
            return Ok((FrontMatter::default(), raw));
        }
    }
    let mut offset: usize = raw.split_inclusive('\n').take(open_index + 1).map(str::len).sum();
    let mut body: Vec<&str> = Vec::new();
    for (_, line) in lines {
        offset += line.len();
        let l = line.trim_end();
        if l == "---" || l == "..." {
            if body.iter().all(|l: &&str| strip_comment(l).trim().is_empty()) {
                return Err(Error::input(
                    Location::line(path, open_index + 1),
                    "empty front matter: put `title`, `acl` or `meta` between the --- lines, or remove them",
                ));
            }
            let text = &raw[offset..];
            check_no_acl_in_text(path, open_index + body.len() + 3, text)?;
            return Ok((parse(path, open_index + 2, &body)?, text));
        }
        body.push(l);
    }
    Err(Error::input(Location::line(path, open_index + 1), "front matter opened with --- is never closed"))
}

/// A line of the text that starts like an access list (`acl:`) was meant for front matter
/// (a fence mistyped, or closed too early); read as text, it would leave the document public.
fn check_no_acl_in_text(path: &Path, first_line: usize, text: &str) -> Result<()> {
    for (i, line) in text.lines().enumerate() {
        if starts_like_acl(line) {
            let key = line.split(':').next().unwrap_or("").trim();
            return Err(Error::input(
                Location::line(path, first_line + i),
                format!("`{key}:` after the front matter has closed: access lists go between the --- lines"),
            ));
        }
    }
    Ok(())
}

/// `acl:` or `acls:` (any case), after any punctuation or spaces: a line meant for front matter.
pub fn starts_like_acl(line: &str) -> bool {
    let Some((key, _)) = line.split_once(':') else { return false };
    let key = key.trim_start_matches(|c: char| !c.is_alphanumeric()).trim_end();
    matches!(key.to_lowercase().as_str(), "acl" | "acls")
}

/// `line` without a YAML comment: `#` at the start or after whitespace, outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && prev_space => return line[..i].trim_end(),
            None => {}
        }
        prev_space = c.is_whitespace();
    }
    line
}

fn parse(path: &Path, first_line: usize, lines: &[&str]) -> Result<FrontMatter> {
    let mut entries: Vec<(String, Value, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let line_no = first_line + i;
        let line = strip_comment(line);
        if line.trim().is_empty() {
            continue;
        }
        let bad = |msg: &str| Error::input(Location::line(path, line_no), msg.to_string());
        if line.starts_with([' ', '\t']) {
            let item = line.trim();
            let Some((_, value, _)) = entries.last_mut() else {
                return Err(bad("indented line without a key above it"));
            };
            if let Some(rest) = item.strip_prefix("- ").or(if item == "-" { Some("") } else { None }) {
                match value {
                    Value::List(items) => items.push(unquote(rest.trim())),
                    Value::Scalar(s) if s.is_empty() => *value = Value::List(vec![unquote(rest.trim())]),
                    _ => return Err(bad("list item under a key that already has a value")),
                }
            } else if let Some((k, v)) = item.split_once(':') {
                match value {
                    Value::Map(pairs) => pairs.push((k.trim().to_string(), unquote(v.trim()))),
                    Value::Scalar(s) if s.is_empty() => {
                        *value = Value::Map(vec![(k.trim().to_string(), unquote(v.trim()))])
                    }
                    _ => return Err(bad("nested key under a key that already has a value")),
                }
            } else {
                return Err(bad("expected `- item` or `key: value`"));
            }
            continue;
        }
        let (key, value) = line.split_once(':').ok_or_else(|| bad("expected `key: value`"))?;
        let key = unquote(key.trim());
        if !KEYS.contains(&key.as_str()) {
            return Err(bad(&format!(
                "unknown front matter key `{key}`: the keys are `title`, `acl` and `meta` \
                 (other fields go under `meta:`){}",
                if looks_like_acl(&key) { "; access lists are written `acl: [group, ...]`" } else { "" }
            )));
        }
        if let Some((_, _, first)) = entries.iter().find(|(k, _, _)| *k == key) {
            return Err(bad(&format!("`{key}` is given twice (first on line {first})")));
        }
        let value = value.trim();
        let parsed = if let Some(inner) = value.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| bad("a list opened with [ must close with ] on the same line"))?;
            Value::List(inner.split(',').map(|s| unquote(s.trim())).filter(|s| !s.is_empty()).collect())
        } else {
            Value::Scalar(unquote(value))
        };
        entries.push((key, parsed, line_no));
    }

    let mut fm = FrontMatter::default();
    for (key, value, line_no) in entries {
        let bad = |msg: String| Error::input(Location::line(path, line_no), msg);
        match (key.as_str(), value) {
            ("title", Value::Scalar(s)) => fm.title = Some(s).filter(|s| !s.is_empty()),
            ("acl", Value::List(groups)) => fm.acl = Some(groups),
            ("acl", Value::Scalar(g)) if !g.is_empty() && !g.contains(',') => fm.acl = Some(vec![g]),
            ("meta", Value::Map(pairs)) => fm.meta.extend(pairs),
            ("meta", Value::Scalar(s)) if s.is_empty() => {}
            ("acl", _) => {
                return Err(bad("`acl` takes a group or a list of groups: `acl: [rh]` or `- rh` lines".into()))
            }
            _ => return Err(bad(format!("`{key}` has the wrong shape"))),
        }
    }
    Ok(fm)
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            let inner = &s[1..s.len() - 1];
            return if q == '"' { inner.replace("\\\"", "\"") } else { inner.replace("''", "'") };
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(text: &str) -> Result<FrontMatter> {
        split(Path::new("d.md"), text).map(|(f, _)| f)
    }

    #[test]
    fn reads_scalars_lists_and_meta() {
        let f = fm(
            "---\ntitle: \"LGPD: Cap. I\"\nacl:\n  - rh\n  - 'dpo'\nmeta:\n  area: jurídico\n  versao: 2\n---\nbody",
        )
        .unwrap();
        assert_eq!(f.title.as_deref(), Some("LGPD: Cap. I"));
        assert_eq!(f.acl, Some(vec!["rh".into(), "dpo".into()]));
        assert_eq!(f.meta.get("area").unwrap(), "jurídico");
        assert_eq!(f.meta.get("versao").unwrap(), "2");
    }

    #[test]
    fn no_front_matter_leaves_text_alone() {
        let (f, body) = split(Path::new("d.md"), "# T\n---\n").unwrap();
        assert_eq!(f, FrontMatter::default());
        assert_eq!(body, "# T\n---\n");
    }

    #[test]
    fn errors_name_the_line() {
        let err = fm("---\ntitle: x\nacl: [rh\n---\n").unwrap_err().to_string();
        assert!(err.starts_with("d.md:3:"), "{err}");
        assert!(fm("---\ntitle: x\n").unwrap_err().to_string().contains("never closed"));
    }

    #[test]
    fn unknown_or_repeated_keys_are_located_errors() {
        for (text, line) in [
            ("---\nACL: [rh]\n---\n", 2),
            ("---\ntitle: x\nacls: [rh]\n---\n", 3),
            ("\n\n---\ngroups: [rh]\n---\n", 4),
            ("---\nacl: [rh]\nacl: [ti]\n---\n", 3),
            ("---\nacl: rh, ti\n---\n", 2),
            ("---\nacl:\n---\n", 2),
        ] {
            let err = fm(text).unwrap_err().to_string();
            assert!(err.starts_with(&format!("d.md:{line}:")), "{text:?}: {err}");
        }
        assert!(fm("---\nACL: [rh]\n---\n").unwrap_err().to_string().contains("`acl: [group, ...]`"));
        // Found by fuzzing: a doubled or mistyped fence leaves the access list in the text.
        for (text, at) in [
            ("---\n---\ntitle: x\nacl: [rh]\n---\nTexto\n", "d.md:1: empty front matter"),
            ("---\ntitle: x\n---\nacl: [rh]\n---\nTexto\n", "d.md:4: `acl:` after the front matter"),
            ("--\ntitle: x\nacl: [rh]\n---\nTexto\n", "d.md:3: `acl:` after the front matter"),
            ("[\n---\n [acls: rh\n---\n", "d.md:3: `[acls:` after the front matter"),
        ] {
            let err = fm(text).unwrap_err().to_string();
            assert!(err.starts_with(at), "{text:?}: {err}");
        }
        assert!(fm("+++\nacl = [\"rh\"]\n+++\n").unwrap_err().to_string().contains("TOML front matter"));
    }

    #[test]
    fn blank_lines_fence_whitespace_and_comments_are_tolerated() {
        let (f, body) =
            split(Path::new("d.md"), "\n  \n---  \r\nacl: [rh] # só RH\n# nota\ntitle: 'A # B'\n--- \nTexto\n")
                .unwrap();
        assert_eq!(f.acl, Some(vec!["rh".to_string()]));
        assert_eq!(f.title.as_deref(), Some("A # B"));
        assert_eq!(body, "Texto\n");
        assert_eq!(fm("---\nacl:\n  - rh  # comentário\n---\n").unwrap().acl, Some(vec!["rh".to_string()]));
        assert_eq!(fm("---\nacl: []\n---\n").unwrap().acl, Some(vec![]), "an empty list: visible to no one");
    }
}
