//! Grid expansion, shared by the experiment's sections and the catalog's kinds: a
//! `[[chunkers]]` or `[[retrievers]]` table whose array values are axes becomes one combination
//! per point of their product, each value keeping where it was written; and the typed readers
//! of one value (integer, float, choice, flag) that point their errors there.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use toml::{Spanned, Value};

use crate::error::{Error, Location, Result};

/// A `[[chunkers]]` or `[[retrievers]]` table as read: every key and value with where it was written.
pub type GridTable = BTreeMap<Spanned<String>, Spanned<Value>>;

/// One combination of a grid table's axes: parameter name → (value, where it was written).
pub struct Combo<'a> {
    pub values: BTreeMap<&'a str, (&'a Value, Range<usize>)>,
    pub kind: (&'a str, Range<usize>),
    /// The experiment's folder, which paths in it are relative to.
    pub dir: &'a Path,
}

/// The error maker of a combination: a message at a span of the experiment file.
pub type Bad<'a> = &'a dyn Fn(Range<usize>, String) -> Error;

impl<'a> Combo<'a> {
    /// The combination without `keys`, which the caller reads itself.
    pub fn without(&self, keys: &[&str]) -> Combo<'a> {
        let mut values = self.values.clone();
        values.retain(|k, _| !keys.contains(k));
        Combo { values, kind: self.kind.clone(), dir: self.dir }
    }

    pub fn get(&self, key: &str) -> Option<(&Value, Range<usize>)> {
        self.values.get(key).map(|(v, s)| (*v, s.clone()))
    }

    /// Where `key` is written, or the table's `kind` when it is not.
    pub fn span_of(&self, key: &str) -> Range<usize> {
        self.get(key).map_or(self.kind.1.clone(), |g| g.1)
    }
}

pub type Builder<T> = fn(&Combo<'_>, Bad<'_>) -> Result<T>;

/// Each table's combinations; `lists` are keys whose value is a list (a list of lists is their
/// axis).
pub fn expand_all<T>(
    tables: &[GridTable],
    section: &str,
    lists: &[&str],
    text: &str,
    path: &Path,
    build: Builder<T>,
) -> Result<Vec<T>> {
    let bad = |span: Range<usize>, msg: String| Error::input(Location::at_offset(path, text, span.start), msg);
    if tables.is_empty() {
        return Err(Error::input(Location::file(path), format!("declare at least one [[{section}]] table")));
    }
    let mut out = Vec::new();
    for table in tables {
        let table_start = table.keys().map(|k| k.span().start).min().unwrap_or(0);
        let table_span = table_start..table_start;
        let kind = table
            .iter()
            .find(|(k, _)| k.get_ref() == "kind")
            .ok_or_else(|| bad(table_span.clone(), format!("a [[{section}]] table needs `kind`")))?;
        let kind_str = kind.1.get_ref().as_str().ok_or_else(|| bad(kind.1.span(), "`kind` must be a string".into()))?;
        let mut axes: Vec<(&str, Vec<&Value>, Range<usize>)> = Vec::new();
        for (key, value) in table.iter().filter(|(k, _)| k.get_ref() != "kind") {
            let is_list = lists.contains(&key.get_ref().as_str());
            let values: Vec<&Value> = match value.get_ref() {
                Value::Array(items) if items.is_empty() => {
                    return Err(bad(value.span(), format!("`{}` is an empty list", key.get_ref())))
                }
                Value::Array(items) if is_list && !items.iter().all(Value::is_array) => vec![value.get_ref()],
                Value::Array(items) => items.iter().collect(),
                v => vec![v],
            };
            axes.push((key.get_ref().as_str(), values, value.span()));
        }
        let mut combos: Vec<BTreeMap<&str, (&Value, Range<usize>)>> = vec![BTreeMap::new()];
        for (key, values, span) in &axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(*key, (*v, span.clone()));
                        c
                    })
                })
                .collect();
        }
        for values in combos {
            let combo = Combo { values, kind: (kind_str, kind.1.span()), dir: path.parent().unwrap_or(Path::new(".")) };
            out.push(build(&combo, &bad)?);
        }
    }
    Ok(out)
}

/// An error at the first of `keys` given, as "`key` {why}".
pub fn forbid(combo: &Combo<'_>, keys: &[&str], why: &str, bad: Bad<'_>) -> Result<()> {
    match keys.iter().find_map(|key| combo.get(key).map(|(_, span)| (key, span))) {
        Some((key, span)) => Err(bad(span, format!("`{key}` {why}"))),
        None => Ok(()),
    }
}

/// Checks that the combo only uses `allowed` keys.
pub fn only(combo: &Combo<'_>, allowed: &[&str], bad: Bad<'_>) -> Result<()> {
    for (key, (_, span)) in &combo.values {
        if !allowed.contains(key) {
            return Err(bad(
                span.clone(),
                format!(
                    "unknown parameter `{key}` for kind {:?} (expected one of: {})",
                    combo.kind.0,
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

pub fn int(combo: &Combo<'_>, key: &str, default: Option<usize>, bad: Bad<'_>) -> Result<usize> {
    match combo.get(key) {
        Some((Value::Integer(i), _)) if *i >= 0 => Ok(*i as usize),
        Some((v, span)) => Err(bad(
            span,
            format!("`{key}` must be a non-negative integer (or a list of them), found {}", v.type_str()),
        )),
        None => default.ok_or_else(|| bad(combo.kind.1.clone(), format!("kind {:?} needs `{key}`", combo.kind.0))),
    }
}

/// A count of at least 1 when `key` is given; `None` when it is not.
pub fn positive(combo: &Combo<'_>, key: &str, bad: Bad<'_>) -> Result<Option<usize>> {
    match combo.get(key) {
        None => Ok(None),
        Some((_, span)) => match int(combo, key, None, bad)? {
            0 => Err(bad(span, format!("`{key}` must be at least 1"))),
            n => Ok(Some(n)),
        },
    }
}

pub fn float(combo: &Combo<'_>, key: &str, default: f64, bad: Bad<'_>) -> Result<f64> {
    match combo.get(key) {
        Some((Value::Float(f), span)) if !f.is_finite() => {
            Err(bad(span, format!("`{key}` must be a finite number, found {f}")))
        }
        Some((Value::Float(f), _)) => Ok(*f),
        Some((Value::Integer(i), _)) => Ok(*i as f64),
        Some((v, span)) => {
            Err(bad(span, format!("`{key}` must be a number (or a list of them), found {}", v.type_str())))
        }
        None => Ok(default),
    }
}

/// One of a fixed set of named values, `default` when absent.
pub fn choice<T: Copy>(combo: &Combo<'_>, key: &str, default: T, options: &[(&str, T)], bad: Bad<'_>) -> Result<T> {
    let names = || options.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    match combo.get(key) {
        None => Ok(default),
        Some((Value::String(s), span)) => options
            .iter()
            .find(|(n, _)| n == s)
            .map(|&(_, v)| v)
            .ok_or_else(|| bad(span, format!("unknown {key} {s:?} (expected {})", names()))),
        Some((v, span)) => Err(bad(span, format!("`{key}` must be one of {}, found {}", names(), v.type_str()))),
    }
}

pub fn boolean(combo: &Combo<'_>, key: &str, bad: Bad<'_>) -> Result<bool> {
    match combo.get(key) {
        Some((Value::Boolean(b), _)) => Ok(*b),
        Some((v, span)) => Err(bad(span, format!("`{key}` must be true or false, found {}", v.type_str()))),
        None => Ok(false),
    }
}
