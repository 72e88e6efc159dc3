//! Front matter of documents as sites write it: YAML between `---` fences (read by
//! `yaml-rust2`, a maintained pure-Rust YAML 1.2 parser with line numbers in its errors) or
//! TOML between `+++` fences (the `toml` crate). `title` and the access key (`acl` unless
//! `[permissions] acl_key` says otherwise) are read; `meta` is flattened into the document's
//! metadata, and every other key is kept there too. A key that could be an access list is an
//! error naming its line (see `access_key`), never ignored: a misspelt access list read as
//! metadata would make a restricted document public.

use std::collections::BTreeMap;
use std::path::Path;

use yaml_rust2::Yaml;

use crate::error::{Error, Location, Result};
use crate::input::access_key::{AccessKey, Field, NoDuplicateKeys};

#[derive(Debug, Default, PartialEq)]
pub struct FrontMatter {
    pub title: Option<String>,
    pub acl: Option<Vec<String>>,
    pub meta: BTreeMap<String, String>,
    /// Set when the block is not YAML this parser reads but declares nothing about access: it
    /// was read line by line for its plain `key: value` pairs, and why.
    pub lenient: Option<String>,
}

/// A front matter value, from YAML or TOML.
enum Value {
    Null,
    Text(String),
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl Value {
    fn from_yaml(y: &Yaml) -> Value {
        match y {
            Yaml::Null | Yaml::BadValue => Value::Null,
            Yaml::String(s) | Yaml::Real(s) => Value::Text(s.clone()),
            Yaml::Integer(i) => Value::Text(i.to_string()),
            Yaml::Boolean(b) => Value::Text(b.to_string()),
            Yaml::Array(items) => Value::List(items.iter().map(Value::from_yaml).collect()),
            Yaml::Hash(map) => Value::Map(map.iter().map(|(k, v)| (yaml_key(k), Value::from_yaml(v))).collect()),
            Yaml::Alias(_) => Value::Null,
        }
    }

    fn from_json(j: &serde_json::Value) -> Value {
        match j {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::String(s) => Value::Text(s.clone()),
            serde_json::Value::Array(items) => Value::List(items.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(map) => {
                Value::Map(map.iter().map(|(k, v)| (k.clone(), Value::from_json(v))).collect())
            }
            other => Value::Text(other.to_string()),
        }
    }

    fn from_toml(t: &toml::Value) -> Value {
        match t {
            toml::Value::String(s) => Value::Text(s.clone()),
            toml::Value::Array(items) => Value::List(items.iter().map(Value::from_toml).collect()),
            toml::Value::Table(map) => Value::Map(map.iter().map(|(k, v)| (k.clone(), Value::from_toml(v))).collect()),
            other => Value::Text(other.to_string()),
        }
    }

    /// The value as one metadata string: text as is, anything else as JSON.
    fn flat(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            other => other.json().to_string(),
        }
    }

    fn json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Text(s) => serde_json::Value::String(s.clone()),
            Value::List(items) => serde_json::Value::Array(items.iter().map(Value::json).collect()),
            Value::Map(pairs) => serde_json::Value::Object(pairs.iter().map(|(k, v)| (k.clone(), v.json())).collect()),
        }
    }
}

fn yaml_key(k: &Yaml) -> String {
    match k {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        _ => String::new(),
    }
}

/// A line of the text that starts like an access list (`acl:` in YAML, `acl =` in TOML) was
/// meant for front matter (a fence mistyped, or closed too early); read as text, it would leave
/// the document public.
pub fn starts_like_acl(line: &str, rules: &AccessKey) -> bool {
    // A reStructuredText field list (`:acl: rh`) declares fields as well. An indented one is a
    // directive's options (`.. autoclass:: Flask` then `   :members:`), never the document's
    // fields: only the access key itself, in any form, is refused there.
    if let Some(field) = line.trim_start().strip_prefix(':').and_then(|rest| rest.split_once(':')).map(|(k, _)| k) {
        if !field.is_empty() && !field.contains(char::is_whitespace) {
            let option = line.starts_with(char::is_whitespace);
            match rules.classify(field) {
                Field::Meta => {}
                Field::Suspicious(_) if option && !rules.is_key_form(field) => {}
                _ => return true,
            }
        }
    }
    let Some(at) = line.find([':', '=']) else { return false };
    let key = &line[..at];
    let key =
        key.trim_start_matches(|c: char| !c.is_alphanumeric()).trim_end().trim_end_matches(['"', '\'']).to_lowercase();
    let access = rules.key.to_lowercase();
    key == access || key == format!("{access}s")
}

/// Whether `raw` opens (after a byte-order mark and blank lines) with front matter as [`split`]
/// reads it: a `---` or `+++` fence, or the `{` of a JSON object.
pub fn opens_with_fence(raw: &str) -> bool {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    raw.lines().find(|l| !l.trim().is_empty()).is_some_and(|l| matches!(l.trim_end(), "---" | "+++") || opens_json(l))
}

/// A line that opens JSON front matter, as Hugo reads it: a `{` first, then a key's quote or
/// the line's end (not a `{{` shortcode, nor a `{%` or `{#` template tag).
fn opens_json(line: &str) -> bool {
    line.trim_start().strip_prefix('{').is_some_and(|rest| {
        let rest = rest.trim_start();
        rest.is_empty() || rest.starts_with('"') || rest.starts_with('}')
    })
}

/// Splits `raw` into its front matter and the document text after it.
///
/// The first line that is not blank decides: a `---` fence (trailing whitespace allowed)
/// opens YAML front matter, closed by `---` or `...`; a `+++` fence opens TOML, closed by
/// `+++`. Front matter is never body text: an unparsable block, an unclosed fence or a key
/// that could be an access list is an error with file and line.
pub fn split<'a>(path: &Path, raw: &'a str, rules: &AccessKey) -> Result<(FrontMatter, &'a str)> {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let mut lines = raw.split_inclusive('\n').enumerate().skip_while(|(_, l)| l.trim().is_empty());
    let Some((open_index, open)) = lines.next() else {
        return Ok((FrontMatter::default(), raw));
    };
    let (toml, closes): (bool, &[&str]) = match open.trim_end() {
        "---" => (false, &["---", "..."]),
        "+++" => (true, &["+++"]),
        _ if opens_json(open) => return split_json(path, raw, open_index, rules),
        _ => {
            check_no_acl_in_text(path, 1, raw, rules)?;
            return Ok((FrontMatter::default(), raw));
        }
    };
    let mut offset: usize = raw.split_inclusive('\n').take(open_index + 1).map(str::len).sum();
    let block_start = offset;
    let first_line = open_index + 2;
    for (i, line) in lines {
        if closes.contains(&line.trim_end()) {
            let block = &raw[block_start..offset];
            let text = &raw[offset + line.len()..];
            check_no_acl_in_text(path, i + 2, text, rules)?;
            let fm = parse(path, first_line, block, toml, rules)?;
            return Ok((fm, text));
        }
        offset += line.len();
    }
    Err(Error::input(Location::line(path, open_index + 1), "front matter opened with a fence is never closed"))
}

/// JSON front matter (Hugo's): one object from the line `open_index`, read whole by serde_json
/// (a key given twice anywhere is an error, see [`crate::input::access_key::no_duplicate_keys`]);
/// the text starts after the line that closes it.
fn split_json<'a>(path: &Path, raw: &'a str, open_index: usize, rules: &AccessKey) -> Result<(FrontMatter, &'a str)> {
    let start: usize = raw.split_inclusive('\n').take(open_index).map(str::len).sum();
    let first_line = open_index + 1;
    let located = |e: serde_json::Error| {
        Error::input(
            Location { path: path.to_path_buf(), line: first_line + e.line().saturating_sub(1), column: e.column() },
            format!("JSON front matter: {e}"),
        )
    };
    let mut objects = serde_json::Deserializer::from_str(&raw[start..]).into_iter::<NoDuplicateKeys>();
    if let Some(Err(e)) = objects.next() {
        return Err(located(e));
    }
    let end = start + objects.byte_offset();
    let block = &raw[start..end];
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(block).map_err(located)?;
    let rest = &raw[end..];
    let text = match rest.split_once('\n') {
        Some((line, after)) if line.trim().is_empty() => after,
        None if rest.trim().is_empty() => "",
        _ => rest,
    };
    let text_line = 1 + raw[..raw.len() - text.len()].matches('\n').count();
    check_no_acl_in_text(path, text_line, text, rules)?;
    let entries = object.into_iter().map(|(k, v)| (k, Value::from_json(&v))).collect();
    let line_of = |key: &str| {
        let quoted = format!("\"{key}\"");
        block
            .lines()
            .position(|l| l.find(&quoted).is_some_and(|at| l[at + quoted.len()..].trim_start().starts_with(':')))
            .map_or(first_line, |i| first_line + i)
    };
    let fm = from_entries(path, entries, &line_of, rules)?;
    Ok((fm, text))
}

fn check_no_acl_in_text(path: &Path, first_line: usize, text: &str, rules: &AccessKey) -> Result<()> {
    for (i, line) in text.lines().enumerate() {
        if starts_like_acl(line, rules) {
            let trimmed = line.trim();
            let declaration = match trimmed.strip_prefix(':').and_then(|r| r.split_once(':')) {
                Some((field, _)) => format!(":{field}:"),
                None => {
                    let at = trimmed.find([':', '=']).unwrap_or(trimmed.len());
                    format!("{}{}", trimmed[..at].trim_end(), if trimmed[at..].starts_with('=') { " =" } else { ":" })
                }
            };
            return Err(Error::input(
                Location::line(path, first_line + i),
                format!("`{declaration}` after the front matter has closed: access lists go between the fences"),
            ));
        }
    }
    Ok(())
}

/// Nodes front matter may expand to, aliases counted as the nodes they repeat: a few hundred
/// bytes of nested aliases (a "billion laughs") would otherwise take gigabytes.
pub const MAX_YAML_NODES: u64 = 100_000;
/// Nesting front matter may reach (deeper would overflow the stack of a recursive reader).
pub const MAX_YAML_DEPTH: usize = 64;

/// Walks `block`'s YAML events without building anything: its size with every alias expanded
/// and its depth stay within bounds, and no value is `!!binary` (readers that decode it, as
/// Hugo's does, see a key or group this reader would not: `!!binary YWNs` is `acl`); else the
/// 0-based line where that failed and why. A syntax error is left to the loader, which locates it.
fn check_yaml_events(block: &str) -> std::result::Result<(), (usize, String)> {
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(block);
    let mut anchors: std::collections::HashMap<usize, u64> = std::collections::HashMap::new();
    // Open containers: (anchor id, nodes so far).
    let mut open: Vec<(usize, u64)> = Vec::new();
    let mut total: u64 = 0;
    loop {
        let Ok((event, mark)) = parser.next_token() else { return Ok(()) };
        let line = mark.line().saturating_sub(1);
        let mut add = |nodes: u64, open: &mut Vec<(usize, u64)>| {
            total = total.saturating_add(nodes);
            if let Some(parent) = open.last_mut() {
                parent.1 = parent.1.saturating_add(nodes);
            }
        };
        match event {
            Event::StreamEnd => return Ok(()),
            Event::Scalar(_, _, anchor, tag) => {
                if tag.is_some_and(|t| format!("{}{}", t.handle, t.suffix) == "tag:yaml.org,2002:binary") {
                    return Err((line, "a `!!binary` value; front matter is read as text, so write it as text".into()));
                }
                add(1, &mut open);
                if anchor > 0 {
                    anchors.insert(anchor, 1);
                }
            }
            Event::Alias(anchor) => add(anchors.get(&anchor).copied().unwrap_or(1), &mut open),
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                open.push((anchor, 1));
                total = total.saturating_add(1);
                if open.len() > MAX_YAML_DEPTH {
                    return Err((line, format!("nested deeper than {MAX_YAML_DEPTH} levels")));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, nodes)) = open.pop() {
                    if anchor > 0 {
                        anchors.insert(anchor, nodes);
                    }
                    if let Some(parent) = open.last_mut() {
                        parent.1 = parent.1.saturating_add(nodes);
                    }
                }
            }
            _ => {}
        }
        if total > MAX_YAML_NODES {
            return Err((line, format!("more than {MAX_YAML_NODES} values once its aliases are expanded")));
        }
    }
}

/// Whether anything in `block` could name, at any depth, a key that is or could be the access
/// list, read as loosely as any YAML reader might: escapes (`"\x61cl"`, `"\u0061cl"`) decoded
/// first, every key of a flow mapping or sequence (`params: {x: 1, acl: [rh]}`,
/// `blocks: [{acl: [rh]}]`), explicit keys (`? acl`), keys behind anchors and tags, on any line.
/// Only front matter the strict parser rejected is read this way, so that the line-by-line
/// reader never decides access.
fn could_declare_access(block: &str, rules: &AccessKey) -> bool {
    let text = unescaped(block);
    text.split(['\n', '{', '}', '[', ']', ',']).any(|segment| {
        let mut t = segment.trim();
        // Sequence dashes, explicit-key marks, anchors and tags before a key.
        loop {
            let before = t;
            t = t.trim_start_matches(['-', '?', ' ', '\t']);
            for mark in ['&', '!', '*'] {
                if let Some(rest) = t.strip_prefix(mark) {
                    t = rest.split_once([' ', '\t']).map_or("", |(_, r)| r);
                }
            }
            if t == before {
                break;
            }
        }
        let key = t.split_once(':').map_or(t, |(key, _)| key).trim().trim_matches(['"', '\'']).trim();
        (!key.is_empty() && rules.classify(key) != Field::Meta) || starts_like_acl(t, rules)
    })
}

/// What, anywhere in `doc`, is a mapping key that is not a plain name (a list or mapping as a
/// complex `? ` key, a binary or otherwise unreadable value, a null).
fn odd_key(doc: &Yaml) -> Option<&'static str> {
    match doc {
        Yaml::Hash(map) => map.iter().find_map(|(k, v)| {
            let what = match k {
                Yaml::String(_) | Yaml::Real(_) | Yaml::Integer(_) | Yaml::Boolean(_) => None,
                Yaml::Array(_) | Yaml::Hash(_) => Some("a list or a mapping (a complex `? ` key)"),
                Yaml::Null => Some("null"),
                Yaml::BadValue | Yaml::Alias(_) => Some("a value this reader cannot resolve (a binary or tagged key)"),
            };
            what.or_else(|| odd_key(v))
        }),
        Yaml::Array(items) => items.iter().find_map(odd_key),
        _ => None,
    }
}

/// The first line (0-based) of `block` that uses a YAML feature by which a key can be written
/// without spelling it on one line: a tag (`!…`), an anchor (`&…`) or alias (`*…`), an explicit
/// key (`?`), a merge key (`<<`), or a double-quoted line continued by `\`; and which.
fn yaml_features(block: &str) -> Option<(usize, &'static str)> {
    block.lines().enumerate().find_map(|(i, line)| {
        if line.trim_end().ends_with('\\') {
            return Some((i, "an escaped line break"));
        }
        line.split(|c: char| c.is_whitespace() || "[]{},".contains(c)).find_map(|token| {
            let what = match token.chars().next()? {
                '!' if token.len() > 1 => "a tag",
                '&' if token.len() > 1 => "an anchor",
                '*' if token.len() > 1 => "an alias",
                '?' if token.len() == 1 => "an explicit key (`?`)",
                '<' if token.starts_with("<<") => "a merge key (`<<`)",
                _ => return None,
            };
            Some((i, what))
        })
    })
}

/// `text` with YAML's double-quoted escapes (`\xHH`, `\uHHHH`, `\UHHHHHHHH`) decoded wherever
/// they appear.
fn unescaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = match after.chars().next() {
            Some('x') => 2,
            Some('u') => 4,
            Some('U') => 8,
            _ => 0,
        };
        let decoded = (digits > 0)
            .then(|| after.get(1..1 + digits))
            .flatten()
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .and_then(char::from_u32);
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[1 + digits..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Front matter this parser does not read, taken line by line: `title` and the other plain
/// `key: value` pairs at the top level; nested or continued lines are left out.
fn lenient(block: &str, why: String) -> FrontMatter {
    let mut fm = FrontMatter { lenient: Some(why), ..Default::default() };
    for line in block.lines().filter(|l| !l.starts_with([' ', '\t', '-', '#', ']', '}'])) {
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim().trim_matches(['"', '\'']).to_string();
        if value.is_empty() || value.starts_with(['[', '{']) {
            continue;
        }
        match key.trim() {
            "title" => fm.title = Some(value),
            key => {
                fm.meta.insert(key.to_string(), value);
            }
        }
    }
    fm
}

/// The line (1-based, in the file) where top-level `key` is written in `block`.
fn key_line(block: &str, first_line: usize, key: &str) -> usize {
    block
        .lines()
        .position(|l| {
            let l = l.trim_start_matches(['"', '\'']);
            !l.starts_with([' ', '\t'])
                && l.starts_with(key)
                && l[key.len()..].trim_start_matches(['"', '\'']).trim_start().starts_with([':', '='])
        })
        .map_or(first_line, |i| first_line + i)
}

fn parse(path: &Path, first_line: usize, block: &str, toml: bool, rules: &AccessKey) -> Result<FrontMatter> {
    let at = |line: usize| Location::line(path, line);
    let entries: Vec<(String, Value)> = if toml {
        let table: toml::Table = toml::from_str(block).map_err(|e| {
            let line = e.span().map_or(0, |s| block[..s.start.min(block.len())].matches('\n').count());
            Error::input(at(first_line + line), format!("TOML front matter: {}", e.message()))
        })?;
        table.iter().map(|(k, v)| (k.clone(), Value::from_toml(v))).collect()
    } else {
        if let Err((line, why)) = check_yaml_events(block) {
            return Err(Error::input(at(first_line + line), format!("YAML front matter: {why}")));
        }
        let docs = match yaml_rust2::YamlLoader::load_from_str(block) {
            Ok(docs) => docs,
            Err(e) => {
                let m = e.marker();
                let line = first_line + m.line().saturating_sub(1);
                // What Hugo and PyYAML accept (a `]` at column 0 closing a flow sequence: an
                // indentation error here) is read for its plain keys, unless anything in it could
                // declare access: that stays strict, an error with its line, as does any other
                // error (a recursion limit, broken quoting).
                if !e.info().contains("indentation") || could_declare_access(block, rules) {
                    return Err(Error::input(
                        Location { path: path.to_path_buf(), line, column: m.col() },
                        format!("YAML front matter: {}", e.info()),
                    ));
                }
                // Tags, anchors, aliases, merge and explicit keys and escaped line breaks can
                // make a key `acl` that no line spells: only a parser decides those.
                if let Some((at_line, feature)) = yaml_features(block) {
                    return Err(Error::input(
                        Location { path: path.to_path_buf(), line, column: m.col() },
                        format!(
                            "YAML front matter: {} (and line {} uses {feature}, which only a YAML parser can read: fix the error so it can)",
                            e.info(),
                            first_line + at_line
                        ),
                    ));
                }
                return Ok(lenient(block, format!("line {line}: {}", e.info())));
            }
        };
        if docs.len() > 1 {
            // `--- # note`, `--- {acl: [rh]}` or `... # end` inside the fences start a second
            // YAML document; reading only the first would drop what the second declares.
            let line = block
                .lines()
                .position(|l| {
                    let t = l.trim_end();
                    ["---", "..."]
                        .iter()
                        .any(|m| t.strip_prefix(m).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t'])))
                })
                .map_or(first_line, |i| first_line + i);
            return Err(Error::input(
                at(line),
                format!(
                    "front matter holds {} YAML documents (a `---` or `...` line inside the fences): it must be one mapping of `key: value` lines",
                    docs.len()
                ),
            ));
        }
        if let Some(what) = docs.first().and_then(odd_key) {
            let line = block
                .lines()
                .position(|l| l.trim_start().starts_with('?') || l.contains("!!binary"))
                .map_or(first_line, |i| first_line + i);
            return Err(Error::input(
                at(line),
                format!("YAML front matter: a key is {what}; keys must be plain names, so access is never hidden behind one"),
            ));
        }
        match docs.first() {
            None | Some(Yaml::Null) => Vec::new(),
            Some(Yaml::Hash(map)) => map.iter().map(|(k, v)| (yaml_key(k), Value::from_yaml(v))).collect(),
            Some(_) => return Err(Error::input(at(first_line), "front matter must be `key: value` lines")),
        }
    };
    from_entries(path, entries, &|key: &str| key_line(block, first_line, key), rules)
}

/// Front matter from its top-level entries, whatever language they were written in; `line_of`
/// locates a top-level key for errors.
fn from_entries(
    path: &Path,
    entries: Vec<(String, Value)>,
    line_of: &dyn Fn(&str) -> usize,
    rules: &AccessKey,
) -> Result<FrontMatter> {
    let at = |line: usize| Location::line(path, line);
    let mut fm = FrontMatter::default();
    // Top-level keys, then those under `meta:`, by the same rules (as BEIR `metadata` is read).
    let mut fields: Vec<(String, Value, String)> = Vec::new();
    for (key, value) in entries {
        match (key.as_str(), value) {
            ("meta", Value::Map(pairs)) => fields.extend(pairs.into_iter().map(|(k, v)| (k, v, key.clone()))),
            ("meta", Value::Null) => {}
            ("meta", _) => return Err(Error::input(at(line_of("meta")), "`meta` must be a map of `key: value`")),
            (_, value) => fields.push((key.clone(), value, key)),
        }
    }
    for (key, value, top) in fields {
        let bad = |msg: String| Error::input(at(line_of(&top)), msg);
        match (rules.classify(&key), key.as_str()) {
            (Field::Access, _) if fm.acl.is_some() => {
                return Err(bad(format!("the access list `{key}` is given twice")));
            }
            (Field::Access, _) => fm.acl = Some(groups(&value, &rules.key).map_err(bad)?),
            (Field::Suspicious(why), _) => return Err(bad(format!("front matter key {why}"))),
            (Field::Meta, "title") if top == "title" => fm.title = Some(value.flat()).filter(|t| !t.trim().is_empty()),
            (Field::Meta, _) => {
                // `params: {acl: [...]}`, a list of maps, a YAML merge key (`<<: *b`).
                if let Some(path) = rules.nested_in_json(&key, &value.json()) {
                    return Err(bad(rules.nested_error(&path)));
                }
                fm.meta.insert(key, value.flat());
            }
        }
    }
    Ok(fm)
}

/// The groups of an access list value: a list of non-empty names; `[]` is no one.
fn groups(value: &Value, key: &str) -> std::result::Result<Vec<String>, String> {
    match value {
        Value::List(items) => items
            .iter()
            .map(|g| match g {
                Value::Text(s) => crate::input::access_key::check_group(s).map_err(|e| format!("`{key}`: {e}")),
                _ => Err(format!("`{key}` must list group names, e.g. `{key}: [rh]`")),
            })
            .collect(),
        Value::Null => Err(format!("`{key}` is empty or null: write `{key}: [group, ...]`, or `{key}: []` for no one")),
        _ => Err(format!("`{key}` takes a list of groups: `{key}: [rh]` or `- rh` lines")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(text: &str) -> Result<FrontMatter> {
        split(Path::new("d.md"), text, &AccessKey::default()).map(|(f, _)| f)
    }

    #[test]
    fn reads_scalars_lists_meta_and_keeps_other_keys() {
        let f = fm(
            "---\ntitle: \"LGPD: Cap. I\"\nacl:\n  - rh\n  - 'dpo'\nmeta:\n  area: jurídico\n  versao: 2\nhide-toc: true\ntags: [a, b]\n---\nbody",
        )
        .unwrap();
        assert_eq!(f.title.as_deref(), Some("LGPD: Cap. I"));
        assert_eq!(f.acl, Some(vec!["rh".into(), "dpo".into()]));
        assert_eq!(f.meta.get("area").unwrap(), "jurídico");
        assert_eq!(f.meta.get("versao").unwrap(), "2");
        assert_eq!(f.meta.get("hide-toc").unwrap(), "true");
        assert_eq!(f.meta.get("tags").unwrap(), r#"["a","b"]"#);
        let toml = fm("+++\ntitle = \"T\"\nacl = [\"rh\"]\nweight = 3\n+++\nbody").unwrap();
        assert_eq!((toml.title.as_deref(), toml.acl), (Some("T"), Some(vec!["rh".to_string()])));
        assert_eq!(toml.meta.get("weight").unwrap(), "3");
    }

    #[test]
    fn no_front_matter_leaves_text_alone() {
        let (f, body) = split(Path::new("d.md"), "# T\n---\n", &AccessKey::default()).unwrap();
        assert_eq!(f, FrontMatter::default());
        assert_eq!(body, "# T\n---\n");
    }

    #[test]
    fn errors_name_the_line() {
        let err = fm("---\ntitle: x\nacl: [rh\n---\n").unwrap_err().to_string();
        assert!(err.starts_with("d.md:"), "{err}");
        assert!(fm("---\ntitle: x\n").unwrap_err().to_string().contains("never closed"));
    }

    #[test]
    fn access_lists_that_are_not_lists_or_could_be_misspelt_are_located_errors() {
        for (text, line) in [
            ("---\nACL: [rh]\n---\n", 2),
            ("---\ntitle: x\nacls: [rh]\n---\n", 3),
            ("\n\n---\ngroups: [rh]\n---\n", 4),
            ("---\nacl: rh, ti\n---\n", 2),
            ("---\nacl:\n---\n", 2),
            ("---\nacl: null\n---\n", 2),
            ("---\nacl: ''\n---\n", 2),
            ("---\ntitle: x\nroles: [admin]\n---\n", 3),
            ("---\nmeta:\n  audience: interno\n---\n", 2),
        ] {
            let err = fm(text).unwrap_err().to_string();
            assert!(err.starts_with(&format!("d.md:{line}:")), "{text:?}: {err}");
        }
        assert!(fm("---\nacl: [rh]\nacl: [ti]\n---\n").is_err(), "a key given twice");
        assert!(fm("---\nACL: [rh]\n---\n").unwrap_err().to_string().contains("acl_key"));
        // Found by fuzzing: a doubled or mistyped fence leaves the access list in the text.
        for (text, at) in [
            ("---\n---\ntitle: x\nacl: [rh]\n---\nTexto\n", "d.md:4: `acl:` after the front matter"),
            ("---\ntitle: x\n---\nacl: [rh]\n---\nTexto\n", "d.md:4: `acl:` after the front matter"),
            ("--\ntitle: x\nacl: [rh]\n---\nTexto\n", "d.md:3: `acl:` after the front matter"),
            ("[\n---\n [acls: rh\n---\n", "d.md:3: `[acls:` after the front matter"),
        ] {
            let err = fm(text).unwrap_err().to_string();
            assert!(err.starts_with(at), "{text:?}: {err}");
        }
        let custom = AccessKey { key: "groups".into(), not_access: vec!["roles".into()] };
        let (f, _) = split(Path::new("d.md"), "---\ngroups: [rh]\nroles: [x]\n---\n", &custom).unwrap();
        assert_eq!(f.acl, Some(vec!["rh".to_string()]));
        assert_eq!(f.meta.get("roles").unwrap(), r#"["x"]"#);
    }

    #[test]
    fn front_matter_yaml_cannot_read_is_read_for_its_plain_keys_unless_it_could_declare_access() {
        // Hugo and PyYAML accept a flow sequence closed at column 0.
        let f = fm("---\ntitle: Guia\ndescription: Como instalar\nkeywords: [\"a\", \"b\",\n]\nweight: 3\n---\nTexto")
            .unwrap();
        assert_eq!(f.title.as_deref(), Some("Guia"));
        assert_eq!(f.meta.get("description").map(String::as_str), Some("Como instalar"));
        assert!(f.lenient.as_deref().is_some_and(|w| w.starts_with("line ")), "{:?}", f.lenient);
        assert_eq!(f.acl, None);
        // The same quirk beside an access list, or a look-alike, stays an error with its line.
        for text in [
            "---\ntitle: Guia\nacl: [rh]\nkeywords: [\"a\", \"b\",\n]\n---\nTexto",
            "---\ntitle: Guia\nparams:\n  user_groups: [rh]\nkeywords: [\"a\", \"b\",\n]\n---\nTexto",
        ] {
            assert!(fm(text).unwrap_err().to_string().starts_with("d.md:"), "{text}");
        }
    }

    #[test]
    fn blank_lines_fence_whitespace_and_comments_are_tolerated() {
        let (f, body) = split(
            Path::new("d.md"),
            "\n  \n---  \r\nacl: [rh] # só RH\n# nota\ntitle: 'A # B'\n--- \nTexto\n",
            &AccessKey::default(),
        )
        .unwrap();
        assert_eq!(f.acl, Some(vec!["rh".to_string()]));
        assert_eq!(f.title.as_deref(), Some("A # B"));
        assert_eq!(body, "Texto\n");
        assert_eq!(fm("---\nacl:\n  - rh  # comentário\n---\n").unwrap().acl, Some(vec!["rh".to_string()]));
        assert_eq!(fm("---\nacl: []\n---\n").unwrap().acl, Some(vec![]), "an empty list: visible to no one");
    }
}
