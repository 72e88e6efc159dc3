//! Text analyzers shared by BM25 indexing, query parsing and exact-term diagnosis.
//!
//! One code path turns text into terms, so "why did this token not match" is answered
//! by the same code that indexed it ([`Analyzer::trace`]). Words are Unicode word
//! segments (UAX #29, as Lucene's StandardTokenizer).
//!
//! - `en`: possessive `'s` removed, lowercase, Lucene's English stop words, Snowball English stemmer.
//! - `pt`: lowercase, accents folded, Portuguese stop words, Snowball Portuguese stemmer.
//!   Folding runs before stemming so a query typed without accents ("informacao")
//!   meets the same term as the accented text ("informação").
//! - `simple`: lowercase only.

use std::fmt;
use std::sync::Arc;

pub use crate::vocab::AnalyzerKind;
use rust_stemmers::{Algorithm, Stemmer};
use serde::Serialize;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

impl AnalyzerKind {
    pub fn name(self) -> &'static str {
        match self {
            AnalyzerKind::En => "en",
            AnalyzerKind::Pt => "pt",
            AnalyzerKind::Simple => "simple",
        }
    }
}

impl fmt::Display for AnalyzerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`.
const EN_STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Snowball's Portuguese stop list, accent-folded (the analyzer folds before stopping).
const PT_STOP: &[&str] = &[
    "a",
    "ao",
    "aos",
    "aquela",
    "aquelas",
    "aquele",
    "aqueles",
    "aquilo",
    "as",
    "ate",
    "com",
    "como",
    "da",
    "das",
    "de",
    "dela",
    "delas",
    "dele",
    "deles",
    "depois",
    "do",
    "dos",
    "e",
    "ela",
    "elas",
    "ele",
    "eles",
    "em",
    "entre",
    "era",
    "eram",
    "eramos",
    "essa",
    "essas",
    "esse",
    "esses",
    "esta",
    "estamos",
    "estao",
    "estas",
    "estava",
    "estavam",
    "estavamos",
    "este",
    "esteja",
    "estejam",
    "estejamos",
    "estes",
    "esteve",
    "estive",
    "estivemos",
    "estiver",
    "estivera",
    "estiveram",
    "estiveramos",
    "estiverem",
    "estivermos",
    "estivesse",
    "estivessem",
    "estivessemos",
    "estou",
    "eu",
    "foi",
    "fomos",
    "for",
    "fora",
    "foram",
    "foramos",
    "forem",
    "formos",
    "fosse",
    "fossem",
    "fossemos",
    "fui",
    "ha",
    "haja",
    "hajam",
    "hajamos",
    "hao",
    "havemos",
    "havia",
    "hei",
    "houve",
    "houvemos",
    "houver",
    "houvera",
    "houveram",
    "houveramos",
    "houverao",
    "houverei",
    "houverem",
    "houveremos",
    "houveria",
    "houveriam",
    "houveriamos",
    "houvermos",
    "houvesse",
    "houvessem",
    "houvessemos",
    "isso",
    "isto",
    "ja",
    "lhe",
    "lhes",
    "mais",
    "mas",
    "me",
    "mesmo",
    "meu",
    "meus",
    "minha",
    "minhas",
    "muito",
    "na",
    "nao",
    "nas",
    "nem",
    "no",
    "nos",
    "nossa",
    "nossas",
    "nosso",
    "nossos",
    "num",
    "numa",
    "o",
    "os",
    "ou",
    "para",
    "pela",
    "pelas",
    "pelo",
    "pelos",
    "por",
    "qual",
    "quando",
    "que",
    "quem",
    "sao",
    "se",
    "seja",
    "sejam",
    "sejamos",
    "sem",
    "ser",
    "sera",
    "serao",
    "serei",
    "seremos",
    "seria",
    "seriam",
    "seriamos",
    "seu",
    "seus",
    "so",
    "somos",
    "sou",
    "sua",
    "suas",
    "tambem",
    "te",
    "tem",
    "temos",
    "tenha",
    "tenham",
    "tenhamos",
    "tenho",
    "tera",
    "terao",
    "terei",
    "teremos",
    "teria",
    "teriam",
    "teriamos",
    "teu",
    "teus",
    "teve",
    "tinha",
    "tinham",
    "tinhamos",
    "tive",
    "tivemos",
    "tiver",
    "tivera",
    "tiveram",
    "tiveramos",
    "tiverem",
    "tivermos",
    "tivesse",
    "tivessem",
    "tivessemos",
    "tu",
    "tua",
    "tuas",
    "um",
    "uma",
    "voce",
    "voces",
    "vos",
];

/// Tokens longer than this are dropped, as Lucene's StandardTokenizer does.
const MAX_TOKEN_BYTES: usize = 255;

/// One analysed token: its byte span in the input, its position, and the indexed term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub text: String,
    pub from: usize,
    pub to: usize,
    pub position: usize,
}

/// What happened to one word on its way to the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceStep {
    pub word: String,
    pub from: usize,
    pub to: usize,
    /// After lowercasing, possessive removal and accent folding.
    pub normalized: String,
    /// Why the word produced no term (`stop word`, `too long`), if it did not.
    pub dropped: Option<&'static str>,
    /// The indexed term, when kept.
    pub term: Option<String>,
}

#[derive(Clone)]
pub struct Analyzer {
    kind: AnalyzerKind,
    stemmer: Option<Arc<Stemmer>>,
}

impl fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Analyzer({})", self.kind)
    }
}

impl Analyzer {
    pub fn new(kind: AnalyzerKind) -> Self {
        let stemmer = match kind {
            AnalyzerKind::En => Some(Stemmer::create(Algorithm::English)),
            AnalyzerKind::Pt => Some(Stemmer::create(Algorithm::Portuguese)),
            AnalyzerKind::Simple => None,
        };
        Analyzer { kind, stemmer: stemmer.map(Arc::new) }
    }

    pub fn kind(&self) -> AnalyzerKind {
        self.kind
    }

    /// Every word of `text` and what became of it.
    pub fn trace(&self, text: &str) -> Vec<TraceStep> {
        words(text).map(|(from, word)| self.trace_word(from, word)).collect()
    }

    /// The indexed terms of `text`, in order, with their positions.
    pub fn analyze(&self, text: &str) -> Vec<Term> {
        let mut out = Vec::new();
        self.for_each_term(text, |t| out.push(t));
        out
    }

    pub fn for_each_term(&self, text: &str, mut sink: impl FnMut(Term)) {
        for (position, (from, word)) in words(text).enumerate() {
            let step = self.trace_word(from, word);
            if let Some(term) = step.term {
                sink(Term { text: term, from: step.from, to: step.to, position });
            }
        }
    }

    fn trace_word(&self, from: usize, word: &str) -> TraceStep {
        let to = from + word.len();
        let mut normalized = word.to_lowercase();
        let mut dropped = None;
        match self.kind {
            AnalyzerKind::En => {
                for suffix in ["'s", "’s"] {
                    if let Some(stripped) = normalized.strip_suffix(suffix) {
                        normalized.truncate(stripped.len());
                    }
                }
                if EN_STOP.contains(&normalized.as_str()) {
                    dropped = Some("stop word");
                }
            }
            AnalyzerKind::Pt => {
                normalized = fold_accents(&normalized);
                if PT_STOP.binary_search(&normalized.as_str()).is_ok() {
                    dropped = Some("stop word");
                }
            }
            AnalyzerKind::Simple => {}
        }
        if word.len() > MAX_TOKEN_BYTES {
            dropped = Some("too long");
        }
        let term = match (dropped, &self.stemmer) {
            (Some(_), _) => None,
            (None, Some(stemmer)) => Some(stemmer.stem(&normalized).into_owned()),
            (None, None) => Some(normalized.clone()),
        };
        TraceStep { word: word.to_string(), from, to, normalized, dropped, term }
    }
}

/// Unicode words (UAX #29 segments holding a letter or digit), with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_word_bound_indices().filter(|(_, w)| w.chars().any(char::is_alphanumeric))
}

/// Removes combining marks after canonical decomposition: "ação" → "acao".
pub fn fold_accents(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    s.nfd().filter(|c| !is_combining_mark(*c)).nfc().collect()
}

/// Adapter so tantivy indexes exactly the terms [`Analyzer::analyze`] produces.
#[derive(Clone)]
pub struct TantivyTokenizer(pub Analyzer);

pub struct TermStream {
    tokens: Vec<tantivy::tokenizer::Token>,
    next: usize,
}

impl tantivy::tokenizer::Tokenizer for TantivyTokenizer {
    type TokenStream<'a> = TermStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TermStream {
        let mut tokens = Vec::new();
        self.0.for_each_term(text, |t| {
            tokens.push(tantivy::tokenizer::Token {
                offset_from: t.from,
                offset_to: t.to,
                position: t.position,
                text: t.text,
                position_length: 1,
            })
        });
        TermStream { tokens, next: 0 }
    }
}

impl tantivy::tokenizer::TokenStream for TermStream {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &tantivy::tokenizer::Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut tantivy::tokenizer::Token {
        &mut self.tokens[self.next - 1]
    }
}

/// Evidence normalisation: Unicode NFC, case fold, runs of white space as one space.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.nfc().flat_map(char::to_lowercase) {
        if c.is_whitespace() {
            space = !out.is_empty();
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    out
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            row[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
}

/// Normalised text, and for each of its bytes the source byte range it came from.
pub type Mapped = (String, Vec<(u32, u32)>);

/// [`normalize`] with, for each byte of the result, the byte range of `text` it came from, so
/// a span found in normalised text can be located in the original. Canonical composition
/// works within a starter and the combining marks after it, so each such cluster is
/// normalised on its own and its output bytes map to the whole cluster.
pub fn normalize_mapped(text: &str) -> Mapped {
    use unicode_normalization::char::canonical_combining_class;
    let mut out = String::with_capacity(text.len());
    let mut map: Vec<(u32, u32)> = Vec::with_capacity(text.len());
    let mut space: Option<(u32, u32)> = None;
    let mut starts: Vec<usize> =
        text.char_indices().filter(|(_, c)| canonical_combining_class(*c) == 0).map(|(i, _)| i).collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    starts.push(text.len());
    for w in starts.windows(2) {
        let (a, b) = (w[0], w[1]);
        if a == b {
            continue;
        }
        let from = (a as u32, b as u32);
        for c in text[a..b].nfc().flat_map(char::to_lowercase) {
            if c.is_whitespace() {
                if !out.is_empty() && space.is_none() {
                    space = Some(from);
                }
            } else {
                if let Some(at) = space.take() {
                    out.push(' ');
                    map.push(at);
                }
                let mut buf = [0u8; 4];
                out.push_str(c.encode_utf8(&mut buf));
                map.extend(std::iter::repeat_n(from, c.len_utf8()));
            }
        }
    }
    (out, map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_normalisation_equals_normalise_and_points_back() {
        for text in ["  Prazo  de\n30\tDIAS ", "ac\u{0327}a\u{0303}o e AÇÃO", "Art. 7º, § 1º — dados", "", "   "]
        {
            let (norm, map) = normalize_mapped(text);
            assert_eq!(norm, normalize(text), "{text:?}");
            assert_eq!(map.len(), norm.len());
        }
        let text = "O PRAZO  é de 30 dias.";
        let (norm, map) = normalize_mapped(text);
        let at = norm.find("prazo é de").unwrap();
        let end = at + "prazo é de".len();
        assert_eq!(&text[map[at].0 as usize..map[end - 1].1 as usize], "PRAZO  é de");
    }

    fn terms(kind: AnalyzerKind, text: &str) -> Vec<String> {
        Analyzer::new(kind).analyze(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn pt_stop_list_is_sorted_for_binary_search() {
        assert!(PT_STOP.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn english_stems_and_drops_stop_words() {
        assert_eq!(terms(AnalyzerKind::En, "The patient's cells were RUNNING"), ["patient", "cell", "were", "run"]);
    }

    #[test]
    fn portuguese_folds_accents_before_stemming() {
        assert_eq!(terms(AnalyzerKind::Pt, "informação"), terms(AnalyzerKind::Pt, "informacao"));
        assert_eq!(terms(AnalyzerKind::Pt, "Não é possível"), terms(AnalyzerKind::Pt, "nao e possivel"));
        assert!(terms(AnalyzerKind::Pt, "o de da").is_empty());
    }

    #[test]
    fn numbers_and_codes_survive_as_words() {
        assert_eq!(terms(AnalyzerKind::Simple, "§4.2 SKU-123 v2.0"), ["4.2", "sku", "123", "v2.0"]);
    }

    #[test]
    fn trace_explains_dropped_words() {
        let t = Analyzer::new(AnalyzerKind::En).trace("the Rats");
        assert_eq!(t[0].dropped, Some("stop word"));
        assert_eq!(t[1].term.as_deref(), Some("rat"));
        assert_eq!((t[1].from, t[1].to), (4, 8));
    }
}
