//! A section's prose as its reader sees it, for writing questions about it: the source's
//! markup reduced to the words the rendered page shows, and what a reader does not read as
//! prose left out. Indexing keeps the text as written; this is for drafts, whose exact terms
//! must be terms a user types, never a link label, a role's name or an example's data.
//!
//! reStructuredText (Sphinx): a role naming code (`:class:`~a.Form``) is that name as a code
//! span; a cross-reference (`:ref:`label``, `:doc:`) shows its text (`text <label>`), or a
//! title the source does not hold, so it is dropped; ``literals`` are code spans; hyperlink
//! references (`` `text <url>`_ ``, `` `text`_ ``) are their text; escapes are resolved;
//! targets (`.. _label:`), comments, directive lines and their options (`:synopsis: …`), and
//! the content of code directives, `seealso` (a pointer, not a statement) and literal blocks
//! (after `::`) are left out. Markdown: links are their text, fenced code is
//! left out.

use std::sync::LazyLock;

use regex::Regex;

/// Roles whose content is prose the page shows as it is written.
const TEXT_ROLES: &[&str] = &["term", "abbr", "dfn", "guilabel", "menuselection", "title", "emphasis", "strong"];
/// Roles that point at another page or section, shown by its title.
const REFERENCE_ROLES: &[&str] = &["ref", "doc", "numref", "any", "download"];
/// Directives whose content is not read as prose: code, and `seealso` (it points elsewhere).
const UNREAD_DIRECTIVES: &[&str] = &[
    "code-block",
    "code",
    "sourcecode",
    "literalinclude",
    "console",
    "doctest",
    "testcode",
    "highlight",
    "math",
    "seealso",
];
static OPTION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^:[\w.+-]+:(\s|$)").expect("regex"));

static ROLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r":([A-Za-z][\w.+-]*(?::[\w.+-]+)?):`([^`]+)`").expect("regex"));
/// A hyperlink reference: its text neither starts nor ends with white space, so the end of one
/// code span and the start of a later one (`` `a` … `__init__` ``) are not one.
static HYPERLINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`<\s](?:[^`<]*?[^`<\s])?)(?:\s*<[^>`]*>)?`__?").expect("regex"));
static LITERAL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"``([^`]+)``").expect("regex"));
/// A code span glued to the letters after it (``` ``QuerySet``\s ``` shows `QuerySets`).
static GLUED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\s]+)`(\w)").expect("regex"));
static MD_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])").expect("regex"));

/// `text` with its markup reduced to what a reader sees, code blocks and targets left out.
pub fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // The indentation a literal or code block's lines are deeper than, while in one.
    let mut skipping: Option<usize> = None;
    let mut literal_next = false;
    let mut fence: Option<String> = None;
    // The indentation of the directive whose option lines may follow.
    let mut options_of: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) {
                fence = None;
            }
            continue;
        }
        if let Some(marker) = crate::input::text::fence_marker(trimmed) {
            fence = Some(marker.to_string());
            continue;
        }
        if let Some(base) = skipping {
            if trimmed.is_empty() || indent > base {
                continue;
            }
            skipping = None;
        }
        if let Some(base) = options_of.take() {
            if indent > base && OPTION.is_match(trimmed) {
                options_of = Some(base);
                continue;
            }
        }
        if std::mem::take(&mut literal_next) && trimmed.is_empty() {
            // The block starts after the blank line that follows `::`.
            skipping = Some(indent_of_paragraph(&out));
            out.push('\n');
            continue;
        }
        if let Some(directive) = trimmed.strip_prefix(".. ") {
            // A target, a comment or a directive line: none is prose. A code directive's
            // content, or a comment's, is left out with it.
            let name = directive.split_once("::").map(|(n, _)| n.trim());
            if name.is_none_or(|n| UNREAD_DIRECTIVES.contains(&n)) && !directive.starts_with('_') {
                skipping = Some(indent);
            } else if name.is_some() {
                options_of = Some(indent);
            }
            continue;
        }
        let mut shown = trimmed.to_string();
        if shown == "::" {
            literal_next = true;
            continue;
        }
        if let Some(stripped) = shown.strip_suffix("::") {
            // `Text::` shows `Text:`, and a literal block follows.
            shown = format!("{}:", stripped.trim_end());
            literal_next = true;
        }
        out.push_str(&" ".repeat(indent));
        out.push_str(&shown);
        out.push('\n');
    }
    // Inline markup may span lines (a role's text, then its target on the next line).
    inline(&out)
}

/// Inline markup reduced to what a reader sees.
pub fn inline(text: &str) -> String {
    let text = ROLE.replace_all(text, |c: &regex::Captures<'_>| {
        let role = c[1].rsplit(':').next().unwrap_or(&c[1]);
        let content = c[2].trim();
        let (shown, target) = match content.rsplit_once('<') {
            Some((shown, target)) if target.ends_with('>') && !shown.trim().is_empty() => (shown.trim(), true),
            _ => (content, false),
        };
        if REFERENCE_ROLES.contains(&role) {
            return if target { shown.to_string() } else { String::new() };
        }
        if TEXT_ROLES.contains(&role) || target {
            return shown.to_string();
        }
        // A name of code: `~a.b.C` shows `C`, `!name` shows `name`, a call its name.
        // `.a.B` (Sphinx's search for the name) shows `a.B`.
        let name = shown.trim_start_matches('!');
        let name = match name.strip_prefix('~') {
            Some(path) => path.rsplit('.').next().unwrap_or(path),
            None => name.trim_start_matches('.'),
        };
        format!("`{}`", name.trim_end_matches("()"))
    });
    let text = LITERAL.replace_all(&text, "`$1`");
    // A hyperlink reference ends in `_`; a backquoted name without one stays a code span.
    let text = HYPERLINK.replace_all(&text, "$1");
    let text = MD_LINK.replace_all(&text, "$1");
    let text = unescape(&text);
    GLUED.replace_all(&text, "$1$2").into_owned()
}

/// reST escapes resolved: `\ ` joins, `\x` is `x`.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(' ')) => {
                chars.next();
            }
            ('\\', Some(&next)) if next.is_ascii_punctuation() || next.is_alphabetic() => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

fn indent_of_paragraph(out: &str) -> usize {
    out.lines().rev().find(|l| !l.trim().is_empty()).map_or(0, |l| l.len() - l.trim_start().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_markup_is_what_the_page_shows_and_code_is_left_out() {
        let source = ".. _target:\n\nUse :meth:`~a.Form.clean()` and ``full_clean``\\s, see :ref:`the guide <guide>`\n\
                      or :ref:`label-only`, and the `Django site`_::\n\n    example_data = 1\n\nBack to prose.\n\n\
                      .. code-block:: python\n\n    more_data = 2\n\n.. note::\n\n    A note is prose.\n";
        let shown = prose(source);
        assert_eq!(
            shown.split_whitespace().collect::<Vec<_>>().join(" "),
            "Use `clean` and full_cleans, see the guide or , and the Django site: Back to prose. A note is prose."
        );
        assert_eq!(inline("[the docs](https://x.y) and ![img](a.png)"), "the docs and img");
    }

    #[test]
    fn directive_options_and_see_also_are_not_prose_and_code_spans_stay_apart() {
        let source = ".. module:: a.signals\n   :synopsis: Signals sent by the model system.\n\n\
                      The :mod:`a.signals` module sends signals like\n``__init__()`` or :meth:`~a.Model.save`.\n\n\
                      .. seealso::\n\n    The `aggregator`_, where we aggregate content.\n\nEnd.\n";
        assert_eq!(
            prose(source).split_whitespace().collect::<Vec<_>>().join(" "),
            "The `a.signals` module sends signals like `__init__()` or `save`. End."
        );
    }
}
