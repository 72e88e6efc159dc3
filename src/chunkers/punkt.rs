//! NLTK's Punkt sentence tokenizer as LlamaIndex's `SentenceSplitter` runs it: untrained
//! (`PunktSentenceTokenizer()`, nltk 3.10.4), so with no abbreviations, collocations, sentence
//! starters or orthographic counts. What is left of the algorithm:
//!
//! - a candidate break is `.`, `?` or `!` followed by a closing or inner punctuation mark, or by
//!   white space and a token;
//! - the candidate's context (the word before it, the mark, what follows) is split into Punkt's
//!   word tokens, and it breaks when a token other than the last one is a break: a token that
//!   is `.`, `?` or `!`, or ends in one period (not `..`), unless it is an initial (`J.`) or a
//!   number (`3.`) followed by a lowercase word or a punctuation mark, or an initial followed
//!   by a capitalised word;
//! - closing quotes and brackets after a break move to the sentence before it.
//!
//! Offsets are bytes; every rule's character classes are the `regex` module's (Unicode White_Space
//! for `\s`), except where NLTK calls Python's `str.strip` or `string.whitespace`.

use std::sync::LazyLock;

use regex::Regex;

use super::langchain::py_space;

/// `_re_non_word_chars`: characters that cannot be inside a word.
fn non_word(c: char) -> bool {
    matches!(
        c,
        ')' | '"'
            | ';'
            | '}'
            | ']'
            | '*'
            | ':'
            | '@'
            | '\''
            | '('
            | '{'
            | '['
            | '\u{2018}'
            | '\u{2019}'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{ab}'
            | '\u{bb}'
            | '?'
            | '!'
    )
}

/// `_re_word_start`: characters a word token may start with (beside not being white space).
fn word_start(c: char) -> bool {
    !matches!(c, '(' | '"' | '`' | '{' | '[' | ':' | ';' | '&' | '#' | '*' | '@' | ')' | '}' | ']' | '-' | ',')
}

/// `re_boundary_realignment`'s characters: closing quotes and brackets.
fn closing(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | ']' | '}' | '\u{2018}' | '\u{2019}' | '\u{201c}' | '\u{201d}' | '\u{ab}' | '\u{bb}')
}

fn first(s: &str) -> Option<char> {
    s.chars().next()
}

/// `_re_multi_char_punct` at the start of `s`: `--…`, `..…` or `. . .`; its length.
fn multi_char(s: &str) -> Option<usize> {
    if s.starts_with("--") {
        return Some(s.len() - s.trim_start_matches('-').len());
    }
    if s.starts_with("..") {
        return Some(s.len() - s.trim_start_matches('.').len());
    }
    // `(?:\.\s){2,}\.`, greedy: the ends of each `.` + white space repetition.
    let mut ends = Vec::new();
    let mut at = 0;
    while s[at..].starts_with('.') {
        match first(&s[at + 1..]) {
            Some(w) if w.is_whitespace() => at += 1 + w.len_utf8(),
            _ => break,
        }
        ends.push(at);
    }
    if ends.len() >= 2 && s[at..].starts_with('.') {
        return Some(at + 1);
    }
    // One repetition fewer: the next one starts with the period it needs.
    (ends.len() >= 3).then(|| ends[ends.len() - 2] + 1)
}

/// The lookahead that ends a word: white space, the end, a non-word character, multi-character
/// punctuation, or a comma followed by one of those.
fn word_ends(rest: &str) -> bool {
    match first(rest) {
        None => true,
        Some(c) if c.is_whitespace() || non_word(c) => true,
        Some(',') => {
            let after = &rest[1..];
            first(after).is_none_or(|c| c.is_whitespace() || non_word(c)) || multi_char(after).is_some()
        }
        Some(_) => multi_char(rest).is_some(),
    }
}

/// `PunktLanguageVars.word_tokenize`: the word tokens of a line (punctuation other than a
/// word's final period split off).
fn word_tokens(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(c) = first(&line[i..]) {
        let end = if let Some(n) = multi_char(&line[i..]) {
            i + n
        } else if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        } else if word_start(c) {
            let mut j = i + c.len_utf8();
            while !word_ends(&line[j..]) {
                j += first(&line[j..]).map_or(1, char::len_utf8);
            }
            j
        } else {
            i + c.len_utf8()
        };
        out.push(&line[i..end]);
        i = end;
    }
    out
}

static NUMERIC: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^-?[\.,]?\d[\d,\.-]*\.?$").expect("valid regex"));
static INITIAL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[^\W\d]\.$").expect("valid regex"));

/// `text_contains_sentbreak`: whether a token other than the last one of `context` ends a
/// sentence after both annotation passes.
fn contains_break(context: &str) -> bool {
    let tokens: Vec<&str> =
        context.split('\n').filter(|line| !line.trim_matches(py_space).is_empty()).flat_map(word_tokens).collect();
    tokens.windows(2).any(|pair| {
        let (tok, next) = (pair[0], pair[1]);
        let first_pass = matches!(tok, "." | "?" | "!") || (tok.ends_with('.') && !tok.ends_with(".."));
        if !first_pass || !tok.ends_with('.') {
            return first_pass;
        }
        let initial = INITIAL.is_match(tok);
        if !initial && !NUMERIC.is_match(tok) {
            return true;
        }
        // The orthographic heuristic without counts: punctuation and lowercase words do not
        // start sentences; anything else is unknown.
        let next_first = first(next).unwrap_or(' ');
        let not_a_starter = matches!(next, ";" | ":" | "," | "." | "!" | "?") || next_first.is_lowercase();
        !(not_a_starter || (initial && next_first.is_uppercase()))
    })
}

/// A candidate break: the mark's offset, and where the token after the white space starts
/// (none when punctuation follows) and ends.
struct Candidate {
    at: usize,
    next_token: Option<usize>,
    context_end: usize,
}

/// `period_context_re().finditer`.
fn candidates(text: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (at, c) in text.char_indices() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        let rest = &text[at + 1..];
        match first(rest) {
            Some(n) if non_word(n) => out.push(Candidate { at, next_token: None, context_end: at + 1 + n.len_utf8() }),
            Some(n) if n.is_whitespace() => {
                let Some(token) = rest.find(|c: char| !c.is_whitespace()) else { continue };
                let end = rest[token..].find(char::is_whitespace).map_or(rest.len(), |e| token + e);
                out.push(Candidate { at, next_token: Some(at + 1 + token), context_end: at + 1 + end });
            }
            _ => {}
        }
    }
    out
}

/// `_match_potential_end_contexts`: each candidate with the start of the word before it,
/// dropping a candidate whose word overlaps the next one's (`acting!!!` is one context).
fn contexts(text: &str) -> Vec<(Candidate, usize)> {
    let mut out = Vec::new();
    // The previous candidate and the word before it.
    let mut previous: Option<Candidate> = None;
    let mut word = 0..0;
    for candidate in candidates(text) {
        let before = &text[word.end..candidate.at];
        // `_get_last_whitespace_index`: ASCII white space only, and 0 when it is the first
        // character too.
        let start = match before.rfind([' ', '\t', '\n', '\r', '\x0b', '\x0c']) {
            Some(i) if i > 0 => word.end + i + 1,
            _ => word.start,
        };
        if let Some(p) = previous.take().filter(|_| word.end <= start) {
            out.push((p, word.start));
        }
        word = start..candidate.at;
        previous = Some(candidate);
    }
    out.extend(previous.map(|p| (p, word.start)));
    out
}

/// `re_boundary_realignment.match` on a sentence: the closing marks it starts with when white
/// space, `--` or the end follows them, and the end of that white space.
fn realignment(sentence: &str) -> Option<(usize, usize)> {
    let mut n = 0;
    while let Some(c) = first(&sentence[n..]).filter(|&c| closing(c)) {
        n += c.len_utf8();
        let rest = &sentence[n..];
        if rest.is_empty() || rest.starts_with("--") {
            return Some((n, n));
        }
        let white = rest.len() - rest.trim_start_matches(char::is_whitespace).len();
        if white > 0 {
            return Some((n, n + white));
        }
    }
    None
}

/// `span_tokenize(text)`'s spans' starts (LlamaIndex keeps only those: each sentence runs to
/// the next one's start).
pub(super) fn sentence_starts(text: &str) -> Vec<usize> {
    let mut slices = Vec::new();
    let mut last_break = 0;
    for (candidate, word) in contexts(text) {
        if contains_break(&text[word..candidate.context_end]) {
            slices.push(last_break..candidate.at + 1);
            last_break = candidate.next_token.unwrap_or(candidate.at + 1);
        }
    }
    slices.push(last_break..text.trim_end_matches(py_space).len());

    // `_realign_boundaries`.
    let mut starts = Vec::new();
    let mut realign = 0;
    for (i, slice) in slices.iter().enumerate() {
        let start = slice.start + realign;
        match slices.get(i + 1) {
            Some(next) if next.start < next.end => match realignment(&text[next.clone()]) {
                Some((_, end)) => {
                    starts.push(start);
                    realign = end;
                    continue;
                }
                None => realign = 0,
            },
            Some(_) => realign = 0,
            None => {}
        }
        if start < slice.end {
            starts.push(start);
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(text: &str) -> Vec<&str> {
        let starts = sentence_starts(text);
        let ends = starts.iter().skip(1).copied().chain([text.len()]);
        starts.iter().zip(ends).map(|(&s, e)| &text[s..e]).collect()
    }

    // The outputs are nltk 3.10.4's (`PunktSentenceTokenizer().span_tokenize`, starts to the
    // next start, as LlamaIndex cuts them).
    #[test]
    fn splits_as_untrained_punkt_splits() {
        let t = "He said \"Stop.\" Then he left. Mr. Smith arrived at 3 p.m. today... Really? Yes! \
                 (It was late.) J. R. R. Tolkien wrote 3. books.\n\n\n\nNew para. Another one.";
        assert_eq!(
            sentences(t),
            [
                "He said \"Stop.\" ",
                "Then he left. ",
                "Mr. ",
                "Smith arrived at 3 p.m. ",
                "today... Really? ",
                "Yes! ",
                "(It was late.) ",
                "J. R. R. Tolkien wrote 3. books.\n\n\n\n",
                "New para. ",
                "Another one."
            ]
        );
    }

    #[test]
    fn multi_character_punctuation() {
        assert_eq!(multi_char("--x"), Some(2));
        assert_eq!(multi_char("...x"), Some(3));
        assert_eq!(multi_char(". . . x"), Some(5));
        assert_eq!(multi_char(". . .. x"), Some(5));
        assert_eq!(multi_char(". x"), None);
        assert_eq!(
            word_tokens("acting!!! I (no), yes--ok"),
            ["acting", "!", "!", "!", "I", "(", "no", ")", ",", "yes", "--", "ok"]
        );
    }
}
