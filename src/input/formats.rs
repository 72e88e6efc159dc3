//! Text and headings out of the documents people have: Markdown, plain text,
//! reStructuredText, HTML, DOCX and PDF. Each reader yields the document's text and its
//! headings as byte offsets into that text, so every format makes sections by the same rule
//! (a heading spans to the next heading of the same or a higher level) and evidence spans are
//! found in the extracted text. A file in no known format is listed as skipped, never dropped.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::error::{Error, Location, Result};
use crate::input::text::fence_marker;

/// The formats a corpus folder may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    Markdown,
    Text,
    Rst,
    Html,
    Docx,
    Pdf,
}

impl Format {
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "md" | "markdown" | "mdx" => Format::Markdown,
            "txt" | "text" => Format::Text,
            "rst" => Format::Rst,
            "html" | "htm" => Format::Html,
            "docx" => Format::Docx,
            "pdf" => Format::Pdf,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => ".md",
            Format::Text => ".txt",
            Format::Rst => ".rst",
            Format::Html => ".html",
            Format::Docx => ".docx",
            Format::Pdf => ".pdf",
        }
    }
}

/// The file suffixes the Sphinx project holding `dir` reads as sources (its `conf.py`'s
/// `source_suffix`: a string, a list or a mapping of them), the nearest `conf.py` at or above
/// `dir` and at most two folders above the corpus `root`; none without one.
pub fn sphinx_source_suffixes(dir: &Path, root: &Path) -> Vec<String> {
    let highest = root.ancestors().nth(2).unwrap_or(root);
    let Some(text) = dir
        .ancestors()
        .take_while(|d| d.starts_with(highest))
        .find_map(|d| crate::input::text::site_config(&d.join("conf.py")))
    else {
        return Vec::new();
    };
    let Some(value) =
        text.lines().find_map(|l| l.trim_start().strip_prefix("source_suffix")?.trim_start().strip_prefix('='))
    else {
        return Vec::new();
    };
    value
        .split(['"', '\''])
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with('.') && s.len() > 1)
        .map(str::to_string)
        .collect()
}

/// A heading of extracted text: (byte offset of its line, level 1–6, label).
pub type Heading = (usize, u8, String);

/// A document's text as read from its file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    pub text: String,
    pub headings: Vec<Heading>,
    /// A title the file declares (HTML `<title>`, DOCX `Title` style).
    pub title: Option<String>,
    /// For a PDF: the byte offset where each page starts (pages are sections `doc#pN`).
    pub pages: Vec<usize>,
    /// HTML `<meta name="…">` names: a reader refuses one that could declare an access list.
    pub meta_names: Vec<String>,
    /// For a PDF: running heads and footers dropped (lines repeated at one height on most pages).
    pub dropped_lines: usize,
    /// For Markdown: the files read in place (canonical), and the targets that could not be read.
    pub included: Vec<std::path::PathBuf>,
    pub unresolved: Vec<crate::input::includes::Unresolved>,
}

/// reStructuredText section titles: a text line underlined (and optionally overlined) by a
/// run of one punctuation character at least as long as the text. Levels follow the order in
/// which the adornment styles first appear, as docutils assigns them.
pub fn rst_headings(text: &str) -> Vec<Heading> {
    let lines: Vec<(usize, &str)> = {
        let mut offset = 0;
        text.split_inclusive('\n')
            .map(|l| {
                let at = offset;
                offset += l.len();
                (at, l.trim_end_matches(['\n', '\r']))
            })
            .collect()
    };
    let adornment = |l: &str| -> Option<char> {
        let c = l.chars().next()?;
        (l.chars().count() >= 2 && c.is_ascii_punctuation() && l.chars().all(|x| x == c)).then_some(c)
    };
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let (at, line) = lines[i];
        let title = line.trim();
        let over = i > 0 && adornment(lines[i - 1].1).is_some();
        match adornment(lines[i + 1].1) {
            Some(c)
                if !title.is_empty()
                    && adornment(line).is_none()
                    && lines[i + 1].1.chars().count() >= title.chars().count() =>
            {
                let overlined = over && adornment(lines[i - 1].1) == Some(c);
                let style = (c, overlined);
                let level = match styles.iter().position(|s| *s == style) {
                    Some(p) => p + 1,
                    None => {
                        styles.push(style);
                        styles.len()
                    }
                };
                let start = if overlined { lines[i - 1].0 } else { at };
                if level <= 6 {
                    out.push((start, level as u8, title.to_string()));
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    out
}

/// Elements whose text is not the document's (scripts, styles, navigation, chrome).
const HTML_SKIPPED: [&str; 9] = ["script", "style", "noscript", "template", "nav", "header", "footer", "aside", "head"];
/// Classes of navigation a documentation generator writes into every page (texinfo's
/// `nav-panel` and `header`, Sphinx's `headerlink` and `related` bars, DocBook's `navheader`,
/// Javadoc's `top-nav`, permalink anchors): not the page's text.
const HTML_NAVIGATION_CLASSES: [&str; 16] = [
    "nav-panel",
    "header",
    "headerlink",
    "related",
    "sphinxsidebar",
    "navheader",
    "navfooter",
    "top-nav",
    "sub-nav",
    "breadcrumb",
    "breadcrumbs",
    "hash-link",
    "anchorjs-link",
    "permalink",
    "copy-link",
    "copiable-link",
];

/// Elements that start a new line of text.
const HTML_BLOCKS: [&str; 24] = [
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "table",
    "tr",
    "br",
    "pre",
    "blockquote",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "dt",
    "dd",
    "figcaption",
    "hr",
    "td",
];

/// Compatibility ligatures (U+FB00–FB06: ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) as the letters a reader sees.
/// `line` without the HTML comments in it; `open` says whether a comment is open at its start
/// and is left saying whether one is open at its end. Code spans are kept as written.
fn without_comments(line: &str, open: &mut bool) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        if *open {
            match rest.find("-->") {
                Some(end) => {
                    rest = &rest[end + 3..];
                    *open = false;
                }
                None => {
                    // The line's break stays: a comment never joins two paragraphs.
                    out.push_str(if rest.ends_with('\n') { "\n" } else { "" });
                    return out;
                }
            }
        } else {
            match rest.find("<!--") {
                // Inside a code span (an odd number of backticks before it on this line).
                Some(start) if (out.matches('`').count() + rest[..start].matches('`').count()).is_multiple_of(2) => {
                    out.push_str(&rest[..start]);
                    rest = &rest[start + 4..];
                    *open = true;
                }
                Some(start) => {
                    out.push_str(&rest[..start + 4]);
                    rest = &rest[start + 4..];
                }
                None => {
                    out.push_str(rest);
                    rest = "";
                }
            }
        }
    }
    out
}

/// How the text element at `next` continues the one at `previous` ((top, left, right, height)
/// as pdftohtml gives them) when both are pieces of one printed line: `""` when they touch (a
/// ligature or a change of font inside a word: `bene`, `fi`, `ted`), `" "` across a word's
/// space; `None` when `next` starts another line or another column.
fn same_line(previous: (i64, i64, i64, i64), next: (i64, i64, i64, i64)) -> Option<&'static str> {
    let (top, _, right, height) = previous;
    let (next_top, left, _, next_height) = next;
    let gap = left - right;
    let one_line = (top - next_top).abs() <= 1 && (height - next_height).abs() <= height.max(1) / 2;
    match gap {
        _ if !one_line => None,
        -2..=1 => Some(""),
        g if g > 1 && g < height.max(1) => Some(" "),
        _ => None,
    }
}

fn unligature(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if ('\u{FB00}'..='\u{FB06}').contains(&c) {
            out.extend(std::iter::once(c).nfkc());
        } else {
            out.push(c);
        }
    }
    out
}

/// Drops running heads and footers: a line no larger than the body text, in the top or bottom
/// tenth of the page (heights in thousandths of the page), that recurs at the same height on at
/// least 60% of the pages of a document of two pages or more (both pages of a two-page one: a
/// browser prints its date, title, address and page number on every page) — as is, or, for a line of at
/// most five words, with its digits read as one placeholder (so "Página 3 de 10" and
/// "Página 4 de 10" match). Headings and body text stay, however repetitive.
fn without_running_lines<X>(lines: Vec<(usize, u32, String, i64, X)>) -> Vec<(usize, u32, String, X)> {
    let pages = lines.iter().map(|l| l.0).max().unwrap_or(0);
    let body = body_size(lines.iter().map(|l| (l.1, l.2.as_str())));
    let shape = |text: &str| -> String {
        if text.split_whitespace().count() > 5 {
            return text.to_string();
        }
        let mut s = String::with_capacity(text.len());
        for c in text.chars() {
            let c = if c.is_ascii_digit() { '#' } else { c };
            if !(c == '#' && s.ends_with('#')) {
                s.push(c);
            }
        }
        s
    };
    let candidate = |size: u32, top: i64| size <= body && !(100..900).contains(&top);
    let mut on_pages: std::collections::HashMap<(String, i64), std::collections::BTreeSet<usize>> =
        std::collections::HashMap::new();
    if pages >= 2 {
        for (page, _, text, top, _) in lines.iter().filter(|l| candidate(l.1, l.3)) {
            on_pages.entry((shape(text), top / 4)).or_default().insert(*page);
        }
    }
    let running = |size: u32, text: &str, top: i64| {
        candidate(size, top) && on_pages.get(&(shape(text), top / 4)).is_some_and(|p| p.len() * 10 >= pages * 6)
    };
    lines
        .into_iter()
        .filter(|(_, size, text, top, _)| !running(*size, text, *top))
        .map(|(p, s, t, _, x)| (p, s, t, x))
        .collect()
}

/// The font size most of the text is set in (ties: the smaller size).
fn body_size<'a>(lines: impl Iterator<Item = (u32, &'a str)>) -> u32 {
    let mut chars: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for (size, text) in lines {
        *chars.entry(size).or_insert(0) += text.chars().count();
    }
    chars.iter().max_by_key(|(size, n)| (**n, std::cmp::Reverse(**size))).map_or(0, |(s, _)| *s)
}

/// Markdown as a documentation site renders it, for reading: Hugo shortcodes (`{{< … >}}`,
/// `{{% … %}}`, their closing tags too), Jinja/Liquid/MkDocs tags and variables (`{% … %}`,
/// `{{ … }}`), MDX `import`/`export` lines and JSX component tags (`<Tabs>`, `</TabItem>`: a
/// capitalised name), and MyST roles (`` {ref}`text` `` → `text`) are removed, keeping the text
/// between paired tags; fenced code is left as written (documentation shows markup there).
pub fn without_site_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    let mut in_comment = false;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let uncommented;
        let mut line = lines[i];
        i += 1;
        // An HTML comment is not shown on the page: left out, over as many lines as it spans
        // (never inside a code block or a code span, where it is an example).
        if fence.is_none() && (in_comment || line.contains("<!--")) {
            uncommented = without_comments(line, &mut in_comment);
            line = &uncommented;
        }
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            out.push_str(line);
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            fence = Some(marker.to_string());
            out.push_str(line);
            continue;
        }
        // A shortcode written over several lines (`{{< img\n  src="…" >}}`) is one.
        if let Some(end) = shortcode_continues(&lines, i - 1) {
            let joined: String = lines[i - 1..=end].concat();
            out.push_str(&strip_inline_markup(&joined));
            i = end + 1;
            continue;
        }
        let is_mdx_module = (trimmed.starts_with("import ") && (trimmed.contains(" from ") || trimmed.contains('\'')))
            || trimmed.starts_with("export ");
        if is_mdx_module {
            out.push_str(if line.ends_with('\n') { "\n" } else { "" });
            continue;
        }
        let line = strip_inline_markup(line);
        // A heading's anchor attribute and permalink mark (`## Install {#install} ¶`).
        if trimmed.starts_with('#') {
            let (body, end) = line.split_at(line.trim_end().len());
            let mut body = body.trim_end_matches('¶').trim_end();
            if let Some(open) = body.rfind(" {").filter(|_| body.ends_with('}')) {
                if body[open + 2..].starts_with(['#', '.']) {
                    body = body[..open].trim_end();
                }
            }
            out.push_str(body);
            out.push_str(end);
            continue;
        }
        out.push_str(&line);
    }
    out
}

/// Lines a shortcode may span.
const SHORTCODE_LINES: usize = 20;

/// The line that closes a shortcode opened but not closed on line `at`, within
/// [`SHORTCODE_LINES`] and before any fence or other shortcode opens.
fn shortcode_continues(lines: &[&str], at: usize) -> Option<usize> {
    let line = lines[at];
    let (open, close) = [("{{<", ">}}"), ("{{%", "%}}")]
        .into_iter()
        .filter_map(|(o, c)| line.rfind(o).map(|p| (p, c)))
        .max_by_key(|(p, _)| *p)?;
    if line[open..].contains(close) {
        return None;
    }
    for (j, next) in lines.iter().enumerate().skip(at + 1).take(SHORTCODE_LINES) {
        if fence_marker(next.trim_start()).is_some() {
            return None;
        }
        if let Some(p) = next.find(close) {
            let opens_again = next[..p].contains("{{<") || next[..p].contains("{{%");
            return (!opens_again).then_some(j);
        }
        if next.contains("{{<") || next.contains("{{%") {
            return None;
        }
    }
    None
}

/// One line without template tags, shortcodes, JSX component tags and MyST role markers.
///
/// Each closing mark's places in the line are found once, so an opening mark finds its close by
/// a binary search: a line of 200,000 unclosed `{{<` takes time linear in its length, not
/// quadratic.
fn strip_inline_markup(line: &str) -> String {
    /// The places of `mark` in `line`, ascending.
    fn places(line: &str, mark: &str) -> Vec<usize> {
        line.match_indices(mark).map(|(i, _)| i).collect()
    }
    /// The first place at or after `from`.
    fn next(places: &[usize], from: usize) -> Option<usize> {
        places.get(places.partition_point(|&p| p < from)).copied()
    }
    let pairs: [(&str, &str); 4] = [("{{<", ">}}"), ("{{%", "%}}"), ("{%", "%}"), ("{{", "}}")];
    let closes: Vec<Vec<usize>> = pairs.iter().map(|(_, close)| places(line, close)).collect();
    // Hugo's notation for showing a shortcode, rendered as the shortcode's text.
    let shown: [(&str, &str, &str, &str); 2] = [("{{</*", "*/>}}", "{{<", ">}}"), ("{{%/*", "*/%}}", "{{%", "%}}")];
    let shown_closes: Vec<Vec<usize>> = shown.iter().map(|(_, close, _, _)| places(line, close)).collect();
    let (angles, role_ends) = (places(line, ">"), places(line, "}`"));
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    'scan: while at < line.len() {
        let rest = &line[at..];
        for ((open, close, as_open, as_close), found) in shown.iter().zip(&shown_closes) {
            if rest.starts_with(open) {
                if let Some(end) = next(found, at) {
                    out.push_str(as_open);
                    out.push_str(&line[at + open.len()..end]);
                    out.push_str(as_close);
                    at = end + close.len();
                    continue 'scan;
                }
            }
        }
        for ((open, close), found) in pairs.iter().zip(&closes) {
            if rest.starts_with(open) {
                if let Some(end) = next(found, at) {
                    at = end + close.len();
                    continue 'scan;
                }
                break;
            }
        }
        // `<Tabs …>`, `</TabItem>`, `<Admonition type="note">`: a JSX component.
        if let Some(name) = rest.strip_prefix('<') {
            if name.trim_start_matches('/').starts_with(|c: char| c.is_ascii_uppercase()) {
                if let Some(end) = next(&angles, at) {
                    at = end + 1;
                    continue;
                }
            }
        }
        // MyST roles: {ref}`text` → `text`.
        if rest.starts_with('{') {
            if let Some(end) = next(&role_ends, at) {
                let role = &line[at + 1..end];
                if !role.is_empty() && role.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':') {
                    at = end + 1;
                    continue;
                }
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        at += c.len_utf8();
    }
    out
}

/// `text` with each reStructuredText adornment line (one punctuation character repeated at
/// least three times: title underlines and overlines, transitions) turned into spaces of the
/// same length, so byte offsets are unchanged.
pub fn without_adornments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let first = body.chars().next();
        let adornment = body.len() >= 3
            && first.is_some_and(|c| c.is_ascii_punctuation())
            && body.chars().all(|c| Some(c) == first);
        if adornment {
            out.push_str(&" ".repeat(body.len()));
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// A title block is the document's title, not a section: when the first heading opens the
/// document (nothing but white space before it) and `is_title_block` says it is set as one (an
/// overlined lone reST title, as pandoc writes a title block and docutils promotes it; a PDF line
/// that repeats the title the file declares), it becomes the title and its line is blanked in
/// place (offsets unchanged), as a title block is not body text in HTML or DOCX either.
pub fn promote_title_block(extracted: &mut Extracted, is_title_block: impl FnOnce(&Extracted) -> bool) {
    let Some(&(start, _, ref title)) = extracted.headings.first() else { return };
    if !extracted.text[..start].trim().is_empty() || !is_title_block(extracted) {
        return;
    }
    let title = title.clone();
    let end = extracted.text[start..]
        .find(title.as_str())
        .map(|at| start + at + title.len())
        .map_or(start, |after| extracted.text[after..].find('\n').map_or(extracted.text.len(), |n| after + n));
    // Spaces of each character's byte length, so every later offset stays where it was.
    let blank: String = extracted.text[start..end]
        .chars()
        .map(|c| if c == '\n' { "\n".into() } else { " ".repeat(c.len_utf8()) })
        .collect();
    extracted.text.replace_range(start..end, &blank);
    extracted.headings.remove(0);
    extracted.title.get_or_insert(title);
}

/// For reST text with its adornments blanked: the first title is overlined (its heading starts
/// at a blank line, the overline's) and no other title is at its level or above.
pub fn rst_title_block(extracted: &Extracted) -> bool {
    let Some(&(start, level, _)) = extracted.headings.first() else { return false };
    extracted.headings[1..].iter().all(|h| h.1 > level)
        && extracted.text[start..].lines().next().is_some_and(|l| l.trim().is_empty())
}

/// Seconds `pdftohtml` may take on one file.
pub const PDF_SECONDS: u64 = 120;

/// Runs `cmd` with its output captured, killing it after `seconds`: `None` then.
fn run_with_timeout(cmd: &mut Command, seconds: u64) -> std::io::Result<Option<std::process::Output>> {
    use std::process::Stdio;
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // Read both pipes on threads so a full pipe never blocks the child.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut b);
        b
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed().as_secs() >= seconds {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok(Some(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }))
}

/// Bytes a DOCX part may unpack to, and its largest compression ratio (text XML compresses
/// about 10:1; a zip bomb, thousands to one).
pub const MAX_DOCX_ENTRY_BYTES: u64 = 64 << 20;
pub const MAX_DOCX_RATIO: u64 = 200;

/// Element nesting an HTML page may reach: the HTML5 parser's scope checks are quadratic in it
/// and a recursive walk would overflow the stack; real pages nest a few dozen deep.
pub const MAX_HTML_DEPTH: usize = 1000;

/// Elements whose end tag HTML lets authors leave out, and void elements: not counted as nesting.
const HTML_NOT_NESTING: [&str; 31] = [
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot", "colgroup", "rp", "rt",
    "html", "head", "body", "br", "img", "meta", "link", "input", "hr", "area", "base", "col", "embed", "param",
    "source", "wbr",
];

/// How deep the elements of `source` nest, counted from its tags without parsing (an upper
/// bound of what the parser builds, cheap on any input).
pub fn html_depth(source: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for tag in source.split('<').skip(1) {
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() || HTML_NOT_NESTING.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else if !tag.split('>').next().unwrap_or("").ends_with('/') {
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    deepest
}

/// The main text of an HTML page (entities decoded by the HTML5 parser), its `h1`–`h6`
/// headings and its `<title>`. Callers check [`html_depth`] first.
pub fn html(source: &str) -> Extracted {
    use scraper::{Html, Node};
    let page = Html::parse_document(source);
    let mut out = Extracted::default();
    // `marker`: an ordered list item's number, written before the item's first text as a
    // browser shows it (`a. `), since the number is rendered, not in the page's text.
    fn walk(node: ego_tree::NodeRef<'_, Node>, out: &mut Extracted, marker: &mut Option<String>) {
        match node.value() {
            Node::Text(t) => {
                let text: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
                if !text.is_empty() {
                    if !out.text.is_empty() && !out.text.ends_with(['\n', ' ']) && t.starts_with(char::is_whitespace) {
                        out.text.push(' ');
                    }
                    if let Some(m) = marker.take() {
                        out.text.push_str(&m);
                        out.text.push(' ');
                    }
                    out.text.push_str(&text);
                    if t.ends_with(char::is_whitespace) {
                        out.text.push(' ');
                    }
                }
            }
            Node::Element(e) => {
                let name = e.name();
                let style = e.attr("style").unwrap_or("").to_ascii_lowercase().replace(char::is_whitespace, "");
                let navigation =
                    e.attr("role") == Some("navigation") || e.classes().any(|c| HTML_NAVIGATION_CLASSES.contains(&c));
                if HTML_SKIPPED.contains(&name)
                    || navigation
                    || e.attr("hidden").is_some()
                    || style.contains("display:none")
                {
                    return;
                }
                let block = HTML_BLOCKS.contains(&name);
                let heading = name.len() == 2 && name.starts_with('h') && name.as_bytes()[1].is_ascii_digit();
                if block {
                    newline(&mut out.text);
                }
                let start = out.text.len();
                if name == "ol" {
                    let style = e.attr("type").unwrap_or("1");
                    let mut n: i64 = e.attr("start").and_then(|v| v.trim().parse().ok()).unwrap_or(1);
                    for child in node.children() {
                        if let Some(li) = child.value().as_element().filter(|c| c.name() == "li") {
                            n = li.attr("value").and_then(|v| v.trim().parse().ok()).unwrap_or(n);
                            *marker = Some(format!("{}.", list_number(n, style)));
                            n = n.saturating_add(1);
                        }
                        walk(child, out, marker);
                        // An item without text leaves no number behind for the next one.
                        *marker = None;
                    }
                } else {
                    for child in node.children() {
                        walk(child, out, marker);
                    }
                }
                if heading {
                    let label = out.text[start..].trim().to_string();
                    if !label.is_empty() {
                        out.headings.push((start, name.as_bytes()[1] - b'0', label));
                    }
                }
                if block {
                    newline(&mut out.text);
                }
            }
            _ => {
                for child in node.children() {
                    walk(child, out, marker);
                }
            }
        }
    }
    fn newline(text: &mut String) {
        let trimmed = text.trim_end_matches(' ').len();
        text.truncate(trimmed);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let title = scraper::Selector::parse("title")
        .ok()
        .and_then(|s| page.select(&s).next())
        .map(|t| t.text().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" "));
    let body = scraper::Selector::parse("body").ok().and_then(|s| page.select(&s).next());
    match body {
        Some(body) => walk(*body, &mut out, &mut None),
        None => walk(page.tree.root(), &mut out, &mut None),
    }
    newline(&mut out.text);
    out.title = title.filter(|t| !t.is_empty());
    if let Ok(metas) = scraper::Selector::parse("meta[name]") {
        out.meta_names = page.select(&metas).filter_map(|m| m.value().attr("name")).map(str::to_string).collect();
    }
    out
}

/// A list item's number in a list style: `a`/`A` letters (`z`, `aa`, …), `i`/`I` Roman
/// numerals, else decimal (also for numbers below 1, as browsers show them).
fn list_number(n: i64, style: &str) -> String {
    match style {
        "a" | "A" if n >= 1 => {
            let (mut n, mut letters) = (n, Vec::new());
            while n > 0 {
                n -= 1;
                letters.push(b'a' + (n % 26) as u8);
                n /= 26;
            }
            letters.reverse();
            let text = String::from_utf8(letters).unwrap_or_default();
            if style == "A" {
                text.to_uppercase()
            } else {
                text
            }
        }
        "i" | "I" if (1..4000).contains(&n) => {
            const ROMAN: [(i64, &str); 13] = [
                (1000, "m"),
                (900, "cm"),
                (500, "d"),
                (400, "cd"),
                (100, "c"),
                (90, "xc"),
                (50, "l"),
                (40, "xl"),
                (10, "x"),
                (9, "ix"),
                (5, "v"),
                (4, "iv"),
                (1, "i"),
            ];
            let (mut n, mut text) = (n, String::new());
            for (value, digits) in ROMAN {
                while n >= value {
                    text.push_str(digits);
                    n -= value;
                }
            }
            if style == "I" {
                text.to_uppercase()
            } else {
                text
            }
        }
        _ => n.to_string(),
    }
}

/// The paragraphs of a DOCX file (a zip of OOXML), one per line; paragraphs in a heading
/// style (`Heading 1`–`6`, by the style's name in `styles.xml`, whatever its id or language)
/// are headings, the `Title` style the title.
pub fn docx(path: &Path) -> Result<Extracted> {
    use quick_xml::events::Event;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let bad = |msg: String| Error::input(Location::file(path), msg);
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(format!("not a DOCX (zip) file: {e}")))?;
    let mut read = |name: &str| -> Result<Option<String>> {
        let Ok(entry) = zip.by_name(name) else { return Ok(None) };
        let (packed, declared) = (entry.compressed_size().max(1), entry.size());
        if declared > MAX_DOCX_ENTRY_BYTES || declared / packed > MAX_DOCX_RATIO {
            return Err(bad(format!(
                "{name} unpacks to {declared} bytes from {packed} ({}:1): refused as a zip bomb (at most {MAX_DOCX_ENTRY_BYTES} bytes and {MAX_DOCX_RATIO}:1)",
                declared / packed
            )));
        }
        // The declared size can lie: never read more than the limit, whatever it says.
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(entry, MAX_DOCX_ENTRY_BYTES + 1), &mut text)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        if text.len() as u64 > MAX_DOCX_ENTRY_BYTES {
            return Err(bad(format!("{name} unpacks to more than {MAX_DOCX_ENTRY_BYTES} bytes: refused")));
        }
        Ok(Some(text))
    };
    let document = read("word/document.xml")?.ok_or_else(|| bad("no word/document.xml: not a Word document".into()))?;
    let styles = read("word/styles.xml")?.unwrap_or_default();
    // style id → heading level (0 for Title)
    let mut levels: std::collections::HashMap<String, u8> = std::collections::HashMap::new();
    {
        let mut reader = quick_xml::Reader::from_str(&styles);
        let mut current: Option<String> = None;
        loop {
            match reader.read_event() {
                Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                    b"style" => {
                        current = attr(&e, b"styleId");
                    }
                    b"name" => {
                        if let (Some(id), Some(name)) = (&current, attr(&e, b"val")) {
                            let name = name.to_lowercase();
                            if name == "title" {
                                levels.insert(id.clone(), 0);
                            } else if let Some(n) =
                                name.strip_prefix("heading ").and_then(|n| n.trim().parse::<u8>().ok())
                            {
                                if (1..=6).contains(&n) {
                                    levels.insert(id.clone(), n);
                                }
                            }
                        }
                    }
                    _ => {}
                },
                Ok(Event::Eof) => break,
                Err(e) => return Err(bad(format!("word/styles.xml: {e}"))),
                _ => {}
            }
        }
    }
    let mut numbering = ListNumbering::read(&read("word/numbering.xml")?.unwrap_or_default())
        .map_err(|e| bad(format!("word/numbering.xml: {e}")))?;
    let mut out = Extracted::default();
    let mut reader = quick_xml::Reader::from_str(&document);
    let (mut paragraph, mut style, mut in_text) = (String::new(), None::<String>, false);
    let (mut list, mut list_level) = (None::<String>, 0u8);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => match e.local_name().as_ref() {
                b"p" => {
                    paragraph.clear();
                    style = None;
                    list = None;
                    list_level = 0;
                }
                b"t" => in_text = true,
                _ => {}
            },
            Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                b"pStyle" => style = attr(&e, b"val"),
                b"numId" => list = attr(&e, b"val"),
                b"ilvl" => list_level = attr(&e, b"val").and_then(|v| v.parse().ok()).unwrap_or(0),
                b"tab" => paragraph.push('\t'),
                b"br" | b"cr" => paragraph.push('\n'),
                _ => {}
            },
            Ok(Event::Text(t)) if in_text => {
                paragraph.push_str(&t.decode().map_err(|e| bad(format!("word/document.xml: {e}")))?);
            }
            Ok(Event::GeneralRef(r)) if in_text => {
                let name = r.decode().map_err(|e| bad(format!("word/document.xml: {e}")))?;
                match r.resolve_char_ref() {
                    Ok(Some(c)) => paragraph.push(c),
                    _ => paragraph.push_str(quick_xml::escape::resolve_xml_entity(&name).unwrap_or("")),
                }
            }
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                b"t" => in_text = false,
                b"p" => {
                    let text = paragraph.trim();
                    let heading = style.as_ref().and_then(|s| levels.get(s));
                    // A numbered item's number, as Word shows it (`a)`); headings keep their text as is.
                    let number =
                        list.as_ref().and_then(|id| numbering.next(id, list_level)).filter(|_| heading.is_none());
                    if !text.is_empty() {
                        match heading {
                            // The title (pandoc's title block, Word's Title style) is not body text.
                            Some(0) if out.title.is_none() => {
                                out.title = Some(text.to_string());
                                continue;
                            }
                            Some(&level) if level > 0 => out.headings.push((out.text.len(), level, text.to_string())),
                            _ => {}
                        }
                        if let Some(number) = number {
                            out.text.push_str(&number);
                            out.text.push(' ');
                        }
                        out.text.push_str(text);
                        out.text.push('\n');
                    }
                }
                _ => {}
            },
            Ok(Event::Eof) => break,
            Err(e) => return Err(bad(format!("word/document.xml: {e}"))),
            _ => {}
        }
    }
    Ok(out)
}

/// Word's list numbering (`word/numbering.xml`): each list instance (`numId`) points at an
/// abstract definition whose levels give a start, a number format and a text such as `%1)`;
/// instances of one definition share its counters unless they override a level's start.
#[derive(Default)]
struct ListNumbering {
    /// abstractNumId → level → (start, format, text)
    definitions: HashMap<String, HashMap<u8, (i64, String, String)>>,
    /// numId → (abstractNumId, level → start override)
    instances: HashMap<String, (String, HashMap<u8, i64>)>,
    counters: HashMap<String, [Option<i64>; 9]>,
    started: std::collections::HashSet<String>,
}

impl ListNumbering {
    fn read(xml: &str) -> std::result::Result<ListNumbering, quick_xml::Error> {
        use quick_xml::events::Event;
        let mut out = ListNumbering::default();
        let mut reader = quick_xml::Reader::from_str(xml);
        let (mut abstract_id, mut num_id, mut level) = (None::<String>, None::<String>, 0u8);
        loop {
            match reader.read_event()? {
                Event::Start(e) | Event::Empty(e) => {
                    let val = || attr(&e, b"val");
                    match e.local_name().as_ref() {
                        b"abstractNum" => (abstract_id, num_id) = (attr(&e, b"abstractNumId"), None),
                        b"num" => (num_id, abstract_id) = (attr(&e, b"numId"), None),
                        b"lvl" | b"lvlOverride" => level = attr(&e, b"ilvl").and_then(|v| v.parse().ok()).unwrap_or(0),
                        b"abstractNumId" => {
                            if let (Some(num), Some(id)) = (&num_id, val()) {
                                out.instances.entry(num.clone()).or_default().0 = id;
                            }
                        }
                        b"startOverride" => {
                            if let (Some(num), Some(start)) = (&num_id, val().and_then(|v| v.parse().ok())) {
                                out.instances.entry(num.clone()).or_default().1.insert(level, start);
                            }
                        }
                        name @ (b"start" | b"numFmt" | b"lvlText") => {
                            if let (Some(id), Some(v)) = (&abstract_id, val()) {
                                let lvl = out.definitions.entry(id.clone()).or_default().entry(level).or_insert((
                                    1,
                                    "decimal".into(),
                                    String::new(),
                                ));
                                match name {
                                    b"start" => lvl.0 = v.parse().unwrap_or(1),
                                    b"numFmt" => lvl.1 = v,
                                    _ => lvl.2 = v,
                                }
                            }
                        }
                        _ => {}
                    }
                }
                Event::Eof => return Ok(out),
                _ => {}
            }
        }
    }

    /// The number of the next item of list `num_id` at `level` (`a)`, `iv.`), or `None` for a
    /// bullet, an unnumbered level or an unknown list.
    fn next(&mut self, num_id: &str, level: u8) -> Option<String> {
        let (abstract_id, overrides) = self.instances.get(num_id)?;
        let definition = self.definitions.get(abstract_id)?;
        let level = level.min(8);
        let counters = self.counters.entry(abstract_id.clone()).or_default();
        if self.started.insert(num_id.to_string()) && !overrides.is_empty() {
            for l in overrides.keys() {
                counters[(*l).min(8) as usize] = None;
            }
        }
        let start = |l: u8| overrides.get(&l).or(definition.get(&l).map(|d| &d.0)).copied().unwrap_or(1);
        let n = counters[level as usize].map_or(start(level), |n| n.saturating_add(1));
        counters[level as usize] = Some(n);
        counters[level as usize + 1..].iter_mut().for_each(|c| *c = None);
        let (_, format, text) = definition.get(&level)?;
        if matches!(format.as_str(), "bullet" | "none") || text.trim().is_empty() {
            return None;
        }
        let mut number = text.clone();
        for l in 0..=level {
            let value = counters[l as usize].unwrap_or(start(l));
            let format = definition.get(&l).map_or("decimal", |d| d.1.as_str());
            let style = match format {
                "lowerLetter" => "a",
                "upperLetter" => "A",
                "lowerRoman" => "i",
                "upperRoman" => "I",
                _ => "1",
            };
            number = number.replace(&format!("%{}", l + 1), &list_number(value, style));
        }
        Some(number)
    }
}

fn attr(e: &quick_xml::events::BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .map(|a| String::from_utf8_lossy(&a.value).into_owned())
}

/// Whether poppler's `pdftohtml` (Debian's `poppler-utils`) is on the PATH.
pub fn pdf_reader_available() -> bool {
    Command::new("pdftohtml").arg("-v").output().is_ok()
}

/// The text of a PDF through poppler (`pdftohtml -xml`: each line of text with its font), page
/// by page: pages are sections `doc#p1`, `doc#p2`, …, and lines set in a font larger than the
/// body text (the size that holds most characters) are headings, the largest size level 1;
/// a heading that wraps over consecutive lines is one heading, and a line broken after a hyphen
/// is joined to the next (the hyphen kept). A PDF whose pages hold no text
/// (a scan) is an error, not an empty document.
pub fn pdf(path: &Path) -> Result<Extracted> {
    use quick_xml::events::Event;
    let bad = |msg: String| Error::input(Location::file(path), msg);
    let output = run_with_timeout(
        Command::new("pdftohtml").args(["-xml", "-i", "-stdout", "-enc", "UTF-8"]).arg(path),
        PDF_SECONDS,
    )
    .map_err(|e| bad(format!("reading a PDF needs pdftohtml (apt install poppler-utils): {e}")))?;
    let Some(output) = output else {
        return Err(bad(format!("pdftohtml did not finish within {PDF_SECONDS} s: refused")));
    };
    let reason =
        String::from_utf8_lossy(&output.stderr).lines().filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("; ");
    if !output.status.success() {
        let reason = if reason.is_empty() { format!("it exited with {}", output.status) } else { reason };
        return Err(bad(format!("pdftohtml could not read it (corrupt, encrypted or not a PDF?): {reason}")));
    }
    let xml = String::from_utf8_lossy(&output.stdout);
    // (page, font size, line text, top position as a share of the page height in thousandths,
    // whether the line is all bold)
    let mut lines: Vec<(usize, u32, String, i64, bool)> = Vec::new();
    // The document's outline (bookmarks): (level, page, title), in document order.
    let mut outline: Vec<(u8, usize, String)> = Vec::new();
    let (mut outline_depth, mut item): (u8, Option<(u8, usize, String)>) = (0, None);
    // Inside a line: the depth of an open `<b>`, and the letters in and out of bold.
    let (mut bold_at, mut bold_chars, mut plain_chars) = (None::<usize>, 0usize, 0usize);
    let (mut top, mut page_height) = (0i64, 0i64);
    // This text element's place (raw top, left, right, height), and the previous one's with its
    // page: pieces of one printed line (a ligature set apart, a change of font) are one line.
    let (mut place, mut last_place) = ((0i64, 0i64, 0i64, 0i64), None::<(usize, (i64, i64, i64, i64))>);
    let mut sizes: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let mut reader = quick_xml::Reader::from_str(&xml);
    reader.config_mut().check_end_names = false;
    let (mut page, mut font, mut depth, mut line) = (0usize, None::<u32>, 0usize, String::new());
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => match e.local_name().as_ref() {
                b"page" => {
                    page += 1;
                    page_height = attr(&e, b"height").and_then(|h| h.parse().ok()).unwrap_or(0);
                }
                b"text" => {
                    font = attr(&e, b"font").and_then(|f| sizes.get(&f).copied());
                    let at: i64 = attr(&e, b"top").and_then(|t| t.parse().ok()).unwrap_or(0);
                    top = if page_height > 0 { at * 1000 / page_height } else { 500 };
                    let number = |name: &[u8]| attr(&e, name).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
                    let (left, width, height) = (number(b"left"), number(b"width"), number(b"height"));
                    place = (at, left, left + width, height);
                    depth = 1;
                    line.clear();
                    (bold_at, bold_chars, plain_chars) = (None, 0, 0);
                }
                b"b" if depth > 0 => {
                    depth += 1;
                    bold_at = bold_at.or(Some(depth));
                }
                _ if depth > 0 => depth += 1,
                b"outline" => outline_depth = outline_depth.saturating_add(1),
                b"item" if outline_depth > 0 => {
                    let on: usize = attr(&e, b"page").and_then(|p| p.parse().ok()).unwrap_or(0);
                    item = Some((outline_depth, on, String::new()));
                }
                _ => {}
            },
            Ok(Event::End(e)) if depth == 0 => match e.local_name().as_ref() {
                b"outline" => outline_depth = outline_depth.saturating_sub(1),
                b"item" => outline.extend(item.take().filter(|(_, _, title)| !title.trim().is_empty())),
                _ => {}
            },
            Ok(Event::Text(t)) if depth == 0 && item.is_some() => {
                if let Some((_, _, title)) = item.as_mut() {
                    title.push_str(&t.decode().unwrap_or_default());
                }
            }
            Ok(Event::Empty(e)) if e.local_name().as_ref() == b"fontspec" => {
                if let (Some(id), Some(size)) = (attr(&e, b"id"), attr(&e, b"size")) {
                    sizes.insert(id, size.parse::<f32>().map_or(0, |s| (s * 10.0).round() as u32));
                }
            }
            Ok(Event::Text(t)) if depth > 0 => {
                let text = t.decode().unwrap_or_default();
                let letters = text.chars().filter(|c| c.is_alphanumeric()).count();
                if bold_at.is_some() {
                    bold_chars += letters;
                } else {
                    plain_chars += letters;
                }
                line.push_str(&text);
            }
            Ok(Event::GeneralRef(r)) if depth > 0 => match r.resolve_char_ref() {
                Ok(Some(c)) => line.push(c),
                _ => {
                    line.push_str(quick_xml::escape::resolve_xml_entity(&r.decode().unwrap_or_default()).unwrap_or(""))
                }
            },
            Ok(Event::End(_)) if depth > 0 => {
                if bold_at == Some(depth) {
                    bold_at = None;
                }
                depth -= 1;
                if depth == 0 {
                    let text = unligature(&line).split_whitespace().collect::<Vec<_>>().join(" ");
                    let bold = bold_chars > 0 && plain_chars == 0;
                    let joined =
                        last_place.filter(|(p, _)| *p == page).and_then(|(_, previous)| same_line(previous, place));
                    if !text.is_empty() {
                        match (joined, lines.last_mut()) {
                            (Some(gap), Some(last)) => {
                                last.2.push_str(gap);
                                last.2.push_str(&text);
                                last.4 &= bold;
                            }
                            _ => lines.push((page, font.unwrap_or(0), text, top, bold)),
                        }
                        last_place = Some((page, place));
                    }
                }
            }
            Ok(Event::Eof) => break,
            Err(e) => return Err(bad(format!("pdftohtml output: {e}"))),
            _ => {}
        }
    }
    if lines.is_empty() {
        return Err(bad("no extractable text (a scanned PDF?): OCR it first".into()));
    }
    let before = lines.len();
    let lines = without_running_lines(lines);
    let dropped_lines = before - lines.len();
    let body = body_size(lines.iter().map(|l| (l.1, l.2.as_str())));
    let mut heading_sizes: Vec<u32> = lines
        .iter()
        .map(|l| l.1)
        .filter(|&s| s * 100 > body * 115)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    heading_sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = Extracted { dropped_lines, ..Default::default() };
    let mut current_page = 0;
    let mut previous_heading: Option<u32> = None;
    let (mut outline_next, mut title_left): (usize, Option<String>) = (0, None);
    let from_outline = !outline.is_empty();
    for (page, size, text, bold) in lines {
        if page != current_page {
            current_page = page;
            out.pages.push(out.text.len());
            previous_heading = None;
        }
        // The outline names the sections: a line is a heading when it is the title of an item
        // not yet found whose page it is on or after (items passed over were not found); the
        // lines that follow it while they continue the title are the same heading.
        if from_outline {
            if let Some(rest) = title_left.as_deref().and_then(|rest| rest.strip_prefix(letters(&text).as_str())) {
                title_left = Some(rest.to_string()).filter(|r| !r.is_empty());
                continue_heading(&mut out, &text);
                continue;
            }
            title_left = None;
            let found = outline[outline_next..]
                .iter()
                .take_while(|(_, on, _)| *on <= page)
                .enumerate()
                .find_map(|(i, (level, _, title))| Some((i, *level, title_after(&text, title)?)));
            if let Some((i, level, rest)) = found {
                outline_next += i + 1;
                title_left = Some(rest).filter(|r| !r.is_empty());
                start_heading(&mut out, level.min(6), text.split_whitespace().collect::<Vec<_>>().join(" "), &text);
                continue;
            }
            push_line(&mut out.text, &text);
            continue;
        }
        let by_size = heading_sizes.iter().position(|&s| s == size).filter(|&p| p < 6);
        // Bold at body size and numbered (`5.4. Command Substitution`): a heading at its
        // number's depth.
        if let Some(depth) = by_size.is_none().then(|| bold.then(|| numbered_heading(&text))).flatten().flatten() {
            previous_heading = None;
            start_heading(&mut out, depth, text.clone(), &text);
            continue;
        }
        match by_size {
            Some(level) if previous_heading == Some(size) => {
                // A heading wrapped over two lines: one heading.
                continue_heading(&mut out, &text);
                if let Some(h) = out.headings.last_mut() {
                    h.1 = level as u8 + 1;
                }
            }
            Some(level) => {
                previous_heading = Some(size);
                start_heading(&mut out, level as u8 + 1, text.clone(), &text);
            }
            None => {
                previous_heading = None;
                push_line(&mut out.text, &text);
            }
        }
    }
    // `pdfinfo` runs only for a PDF whose first line is a heading.
    let same = |a: &str| a.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    promote_title_block(&mut out, |e| pdf_declared_title(path).is_some_and(|d| same(&d) == same(&e.headings[0].2)));
    Ok(out)
}

/// A heading at `level` named `label`, starting at the printed `line`.
fn start_heading(out: &mut Extracted, level: u8, label: String, line: &str) {
    out.headings.push((out.text.len(), level, label));
    out.text.push_str(line);
    out.text.push('\n');
}

/// The printed `line` as the rest of the heading the line before it started (a wrapped title).
fn continue_heading(out: &mut Extracted, line: &str) {
    out.text.pop();
    out.text.push(' ');
    if let Some(h) = out.headings.last_mut() {
        h.2 = format!("{} {line}", h.2);
    }
    push_line(&mut out.text, line);
}

/// A text's letters and digits, lower-cased: how a printed line and an outline title compare
/// (spacing and punctuation aside).
fn letters(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// When a PDF line is an outline item's title, or the first line of it wrapped over several
/// (12 letters or more): the title's letters the line leaves for the next lines.
fn title_after(line: &str, title: &str) -> Option<String> {
    let (line, title) = (letters(line), letters(title));
    let rest = title.strip_prefix(line.as_str()).filter(|_| !line.is_empty())?;
    (rest.is_empty() || line.chars().count() >= 12).then(|| rest.to_string())
}

/// The depth of a numbered heading's number (`5.` → 1, `5.4.` and `5.4` → 2, `Chapter 3` and
/// `Capítulo III` → 1), for a short line that does not end like a sentence.
fn numbered_heading(line: &str) -> Option<u8> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 2 || words.len() > 12 || line.ends_with(['.', ',', ';', ':']) {
        return None;
    }
    let first = words[0].trim_end_matches('.');
    let parts: Vec<&str> = first.split('.').collect();
    if parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.chars().all(|c| c.is_ascii_digit())) {
        return u8::try_from(parts.len()).ok().filter(|&d| d <= 6);
    }
    let chapter =
        ["chapter", "capítulo", "capitulo", "part", "parte", "appendix", "apêndice", "anexo", "section", "seção"];
    let number = |w: &str| {
        let w = w.trim_end_matches(['.', ':']);
        !w.is_empty() && (w.chars().all(|c| c.is_ascii_digit()) || w.chars().all(|c| "IVXLCDM".contains(c)))
    };
    (chapter.contains(&words[0].to_lowercase().as_str()) && number(words[1])).then_some(1)
}

/// The title a PDF declares in its document information (poppler's `pdfinfo`), if any.
fn pdf_declared_title(path: &Path) -> Option<String> {
    let output = run_with_timeout(Command::new("pdfinfo").args(["-enc", "UTF-8"]).arg(path), PDF_SECONDS).ok()??;
    let info = String::from_utf8_lossy(&output.stdout);
    let title = info.lines().find_map(|l| l.strip_prefix("Title:"))?.trim();
    (!title.is_empty()).then(|| title.to_string())
}

/// Appends a PDF line to `text`, joining a word broken at the previous line's end: after a soft
/// hyphen (U+00AD) or the Unicode hyphen U+2010 that browsers print ("trata‐" / "mento"),
/// without the hyphen; after an ASCII hyphen ("quintas-" / "feiras"), with it (compound words
/// keep theirs). Only before a lower-case letter.
fn push_line(text: &mut String, line: &str) {
    if line.starts_with(char::is_lowercase) {
        let trimmed = text.trim_end_matches(['\n', ' ']);
        if trimmed.ends_with(['\u{AD}', '\u{2010}']) {
            let cut = trimmed.trim_end_matches(['\u{AD}', '\u{2010}']).trim_end().len();
            text.truncate(cut);
        } else if text.ends_with("-\n") {
            text.pop();
        }
    }
    text.push_str(line);
    text.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outline_titles_and_numbered_headings() {
        assert_eq!(title_after("Art. 1", "Art. 1").as_deref(), Some(""));
        assert_eq!(title_after("Art. 1", "Art. 10"), None, "a short line is the whole title or not it");
        assert_eq!(
            title_after("LGPD (Lei nº 13.709) - Capítulo I:", "LGPD (Lei nº 13.709) - Capítulo I:Disposições")
                .as_deref(),
            Some("disposições")
        );
        assert_eq!(title_after("", "Art. 1"), None);
        assert_eq!(numbered_heading("5.4. Command Substitution"), Some(2));
        assert_eq!(numbered_heading("Capítulo III Das Sanções"), Some(1));
        assert_eq!(numbered_heading("5. The shell reads this line."), None);
        assert_eq!(numbered_heading("2024 was a year"), None);
    }

    #[test]
    fn site_markup_is_removed_outside_code() {
        let page = "import Tabs from '@theme/Tabs';\n# Instalação {#install}\n{{< note >}}Use a VPN.{{< /note >}}\n\
                    {{% alert title=\"x\" %}}Texto{{% /alert %}} e {{ site.title }} com {% raw %}macro{% endraw %}\n\
                    <Tabs>\n<TabItem value=\"a\">Linux</TabItem>\n</Tabs>\nVeja {ref}`a seção` e 2 < 3.\n\
                    ```go\n{{< code >}}\n```\n";
        assert_eq!(
            without_site_markup(page),
            "\n# Instalação\nUse a VPN.\nTexto e  com macro\n\nLinux\n\nVeja `a seção` e 2 < 3.\n```go\n{{< code >}}\n```\n"
        );
    }

    #[test]
    fn shown_shortcodes_are_text_and_multi_line_ones_are_removed() {
        let page = "The shortcode is written `{{</* myshortcode */>}}` or `{{%/* note */%}}` in a page.\n\
                    {{< img\n  src=\"a.png\"\n  alt=\"x\" >}}\nAfter.\n{{< open\nnever closed\n";
        assert_eq!(
            without_site_markup(page),
            "The shortcode is written `{{< myshortcode >}}` or `{{% note %}}` in a page.\n\nAfter.\n{{< open\nnever closed\n"
        );
    }

    #[test]
    fn html_comments_are_left_out_but_not_in_code() {
        let text = "# Page\n\nSeen <!-- hidden --> too.\n\n<!-- a note\nover lines -->\nAfter.\n\n`<!-- kept -->` here.\n\n```html\n<!-- example -->\n```\n";
        let out = without_site_markup(text);
        assert!(!out.contains("hidden") && !out.contains("a note") && !out.contains("over lines"), "{out}");
        assert!(out.contains("Seen  too.") && out.contains("After."), "{out}");
        assert!(out.contains("`<!-- kept -->`") && out.contains("<!-- example -->"), "{out}");
    }

    #[test]
    fn pieces_of_one_printed_line_join_and_columns_do_not() {
        // pdftohtml's pieces of "benefited" (a ligature in another font), as printed.
        assert_eq!(same_line((51, 51, 195, 18), (51, 194, 204, 18)), Some(""));
        assert_eq!(same_line((51, 194, 204, 18), (51, 204, 338, 18)), Some(""));
        assert_eq!(same_line((51, 51, 195, 18), (51, 200, 260, 18)), Some(" "), "a word's space");
        assert_eq!(same_line((51, 51, 300, 18), (51, 340, 600, 18)), None, "another column");
        assert_eq!(same_line((51, 51, 195, 18), (72, 51, 195, 18)), None, "the next line");
    }

    #[test]
    fn pdf_lines_join_broken_words_and_fold_ligatures() {
        let mut text = String::new();
        for line in [
            "o trata\u{2010}",
            "mento de dados",
            "às quintas-",
            "feiras e sábados",
            "um co\u{AD}",
            "mando",
            "Fim -",
            "Novo",
        ] {
            push_line(&mut text, line);
        }
        assert_eq!(text, "o tratamento de dados\nàs quintas-feiras e sábados\num comando\nFim -\nNovo\n");
        assert_eq!(unligature("os \u{FB01}ns e a\u{FB00}eto \u{FB02}uxo"), "os fins e affeto fluxo");
    }

    #[test]
    fn running_heads_and_footers_repeated_on_most_pages_are_dropped() {
        let mut lines = Vec::new();
        for page in 1..=4 {
            lines.push((page, 10, "Relatório Interno".to_string(), 20));
            lines.push((page, 14, format!("Capítulo {page}"), 40));
            lines.push((page, 10, format!("O capítulo {page} trata do prazo número {page} e da regra."), 60));
            lines.push((page, 10, format!("corpo da página {page}"), 200 + page as i64 * 37));
            lines.push((page, 10, "texto que se repete".to_string(), 500));
            lines.push((page, 10, format!("Página {page} de 4"), 960));
        }
        let plain = |lines: Vec<(usize, u32, String, i64)>| -> Vec<(usize, u32, String, i64, ())> {
            lines.into_iter().map(|(p, s, t, top)| (p, s, t, top, ())).collect()
        };
        let kept = without_running_lines(plain(lines.clone()));
        assert_eq!(kept.len(), 16, "headings, body lines and numbered body lines at the top stay: {kept:?}");
        assert!(!kept.iter().any(|l| l.2 == "Relatório Interno" || l.2.starts_with("Página")), "{kept:?}");
        // A browser prints its head and foot on both pages of a two-page document too; a line
        // at the top of one page only stays.
        let mut two: Vec<_> = lines.into_iter().filter(|l| l.0 <= 2).collect();
        two.push((2, 10, "Anexo".to_string(), 30));
        let kept = without_running_lines(plain(two));
        assert_eq!(kept.len(), 9, "{kept:?}");
        assert!(kept.iter().any(|l| l.2 == "Anexo") && !kept.iter().any(|l| l.2 == "Relatório Interno"), "{kept:?}");
        // One page says nothing about what runs.
        assert_eq!(without_running_lines(plain(vec![(1, 10, "Relatório Interno".to_string(), 20)])).len(), 1);
    }

    #[test]
    fn rst_titles_by_adornment_order() {
        let text = "======\nTítulo\n======\n\nIntro.\n\nSeção um\n--------\n\nTexto.\n\nSub\n~~~\n\nMais.\n\nSeção dois\n----------\n";
        let h: Vec<(u8, String)> = rst_headings(text).into_iter().map(|(_, l, s)| (l, s)).collect();
        assert_eq!(h, [(1, "Título".into()), (2, "Seção um".into()), (3, "Sub".into()), (2, "Seção dois".into())]);
        assert_eq!(rst_headings(text)[0].0, 0, "an overlined title starts at its overline");
    }

    #[test]
    fn navigation_and_permalinks_are_not_text() {
        let page = "<html><body><div class=\"nav-panel\"><p>Next: <a href=\"b.html\">Builtins</a>, Up: <a>Top</a> \
            [<a>Contents</a>][<a>Index</a>]</p></div><h3 class=\"section\">4.3.1 Some Builtin<a class=\"copiable-link\" href=\"#x\"> ¶</a>\
            <a class=\"headerlink\" href=\"#y\">¶</a></h3><p>The set builtin.</p><div role=\"navigation\">Previous</div></body></html>";
        let e = html(page);
        assert!(
            !e.text.contains("Contents") && !e.text.contains("Next:") && !e.text.contains("Previous"),
            "{:?}",
            e.text
        );
        assert!(e.text.contains("The set builtin."), "{:?}", e.text);
        assert_eq!(e.headings.len(), 1);
        assert!(e.headings[0].2.starts_with("4.3.1 Some Builtin"), "{:?}", e.headings);
    }

    #[test]
    fn html_main_text_headings_and_entities() {
        let page = "<html><head><title>Férias &amp; folgas</title><style>p{}</style></head><body><nav>menu</nav>\
            <h1>Férias</h1><p>Trinta&nbsp;dias &lt;corridos&gt;.</p><script>alert(1)</script><h2>Saldo</h2><p>No <b>portal</b>.</p></body></html>";
        let e = html(page);
        assert_eq!(e.title.as_deref(), Some("Férias & folgas"));
        assert!(!e.text.contains("menu") && !e.text.contains("alert"), "{:?}", e.text);
        assert!(
            e.text.contains("Trinta\u{a0}dias <corridos>.") || e.text.contains("Trinta dias <corridos>."),
            "{:?}",
            e.text
        );
        assert!(e.text.contains("No portal."), "{:?}", e.text);
        let labels: Vec<(u8, &str)> = e.headings.iter().map(|(_, l, s)| (*l, s.as_str())).collect();
        assert_eq!(labels, [(1, "Férias"), (2, "Saldo")]);
        let (at, _, label) = &e.headings[1];
        assert!(e.text[*at..].starts_with(label.as_str()));
    }

    #[test]
    fn ordered_list_numbers_are_text_as_a_browser_and_word_show_them() {
        let e = html("<body><p>Casos:</p><ol type=\"a\"><li><p>um;</p></li><li>dois</li></ol><ol start=\"4\" type=\"I\"><li>quatro</li><li value=\"9\">nove</li></ol><ul><li>sem número</li></ul></body>");
        assert_eq!(e.text.trim(), "Casos:\na. um;\nb. dois\nIV. quatro\nIX. nove\nsem número");
        assert_eq!(
            (list_number(28, "a"), list_number(1994, "i"), list_number(0, "a")),
            ("ab".into(), "mcmxciv".into(), "0".into())
        );
        // A hostile start is a number, not an overflow.
        let e = html(&format!("<ol start=\"{}\"><li>x</li><li>y</li></ol>", i64::MAX));
        assert!(e.text.contains(&format!("{}. y", i64::MAX)), "{:?}", e.text);

        let numbering = r#"<w:numbering xmlns:w="w"><w:abstractNum w:abstractNumId="7"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%1)"/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerRoman"/><w:lvlText w:val="%1.%2"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="8"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="7"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="7"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num><w:num w:numId="3"><w:abstractNumId w:val="8"/></w:num></w:numbering>"#;
        let mut lists = ListNumbering::read(numbering).unwrap();
        let numbers: Vec<Option<String>> =
            [("1", 0), ("1", 1), ("1", 1), ("1", 0), ("2", 0), ("1", 0), ("3", 0), ("9", 0)]
                .iter()
                .map(|(id, l)| lists.next(id, *l))
                .collect();
        let expected = ["a)", "a.i", "a.ii", "b)", "a)", "b)"].map(|s| Some(s.to_string()));
        let huge = numbering
            .replace(r#"<w:startOverride w:val="1"/>"#, &format!(r#"<w:startOverride w:val="{}"/>"#, i64::MAX));
        let mut overflowing = ListNumbering::read(&huge).unwrap();
        assert!((0..3).all(|_| overflowing.next("2", 0).is_some()), "a start at i64::MAX counts on without overflow");
        assert_eq!(
            numbers[..6],
            expected,
            "a list restarted by an override, then the first one going on with the shared counter"
        );
        assert_eq!(numbers[6..], [None, None], "bullets and unknown lists have no number");
    }

    #[test]
    fn a_title_block_opening_the_document_is_its_title_not_a_section() {
        let text = "==========\nLei Ótima\n==========\n\nPreâmbulo.\n\nArt. 1\n------\n\nTexto.\n";
        let read = |text: &str| {
            let mut e =
                Extracted { headings: rst_headings(text), text: without_adornments(text), ..Default::default() };
            promote_title_block(&mut e, rst_title_block);
            e
        };
        let e = read(text);
        assert_eq!(e.title.as_deref(), Some("Lei Ótima"));
        assert_eq!(e.headings.iter().map(|h| h.2.as_str()).collect::<Vec<_>>(), ["Art. 1"]);
        assert_eq!(e.text.len(), text.len(), "blanked in place");
        assert!(e.text[e.headings[0].0..].starts_with("Art. 1") && !e.text.contains("Ótima"), "{:?}", e.text);
        // Underlined only, or followed by another title of its level: a section, as written.
        for text in ["Lei\n===\n\nArt. 1\n------\n", "===\nLei\n===\n\n=====\nOutra\n=====\n"] {
            let e = read(text);
            assert_eq!(e.title, None, "{text}");
            assert!(e.headings.iter().any(|h| h.2 == "Lei"), "{text}");
        }
    }
}
