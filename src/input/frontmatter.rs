//! Front matter of Markdown/text documents: a `---` fenced block of flat YAML.
//!
//! Only the subset documents need is read: `key: value` scalars (plain or quoted),
//! flow lists `[a, b]`, block lists (`- a` lines), and one nested map level under
//! `meta:`. `title` and `acl` have their own meaning; every other key lands in `meta`.

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

/// Splits `raw` into its front matter and the document text after it.
pub fn split<'a>(path: &Path, raw: &'a str) -> Result<(FrontMatter, &'a str)> {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let Some(after_open) = raw.strip_prefix("---\n").or_else(|| raw.strip_prefix("---\r\n")) else {
        return Ok((FrontMatter::default(), raw));
    };
    let mut offset = raw.len() - after_open.len();
    let mut lines = Vec::new();
    let mut body_start = None;
    for line in after_open.split_inclusive('\n') {
        offset += line.len();
        let l = line.trim_end_matches(['\n', '\r']);
        if l == "---" || l == "..." {
            body_start = Some(offset);
            break;
        }
        lines.push(l);
    }
    let body_start = body_start
        .ok_or_else(|| Error::input(Location::line(path, 1), "front matter opened with --- is never closed"))?;
    Ok((parse(path, &lines)?, &raw[body_start..]))
}

fn parse(path: &Path, lines: &[&str]) -> Result<FrontMatter> {
    let mut entries: Vec<(String, Value, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let line_no = i + 2;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
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
        let value = value.trim();
        let parsed = if let Some(inner) = value.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| bad("a list opened with [ must close with ] on the same line"))?;
            Value::List(inner.split(',').map(|s| unquote(s.trim())).filter(|s| !s.is_empty()).collect())
        } else {
            Value::Scalar(unquote(value))
        };
        entries.push((key.trim().to_string(), parsed, line_no));
    }

    let mut fm = FrontMatter::default();
    for (key, value, line_no) in entries {
        let bad = |msg: String| Error::input(Location::line(path, line_no), msg);
        match (key.as_str(), value) {
            ("title", Value::Scalar(s)) => fm.title = Some(s).filter(|s| !s.is_empty()),
            ("acl", Value::List(groups)) => fm.acl = Some(groups),
            ("acl", Value::Scalar(g)) if !g.is_empty() => fm.acl = Some(vec![g]),
            ("title" | "acl", _) => return Err(bad(format!("`{key}` has the wrong shape"))),
            ("meta", Value::Map(pairs)) => fm.meta.extend(pairs),
            (_, Value::Scalar(s)) => {
                fm.meta.insert(key, s);
            }
            (_, Value::List(items)) => {
                fm.meta.insert(key, items.join(","));
            }
            (_, Value::Map(_)) => return Err(bad(format!("nested maps are only read under `meta`, not `{key}`"))),
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
        let f =
            fm("---\ntitle: \"LGPD: Cap. I\"\nacl:\n  - rh\n  - 'dpo'\nmeta:\n  area: jurídico\nversao: 2\n---\nbody")
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
}
