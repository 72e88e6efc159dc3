//! Exact-term tagging: the tokens of a question that a retriever must match literally
//! (clause numbers, product codes, acronyms, names), which embeddings tend to miss and BM25
//! tends to find. Tags let the matrix split scores into `exact_term` cases and the rest,
//! and let `misses` explain a miss token by token.

use std::collections::{HashMap, HashSet};

use unicode_normalization::UnicodeNormalization;

use crate::analyze::fold_accents;
use crate::input::corpus::{Corpus, Target};
use crate::input::golden::GoldenCase;
pub use crate::vocab::{ExactTerm, Tag};

impl Tag {
    pub const ALL: [Tag; 6] = [Tag::Number, Tag::Code, Tag::AllCaps, Tag::CamelCase, Tag::Quoted, Tag::Rare];

    pub fn as_str(self) -> &'static str {
        match self {
            Tag::Number => "number",
            Tag::Code => "code",
            Tag::AllCaps => "all_caps",
            Tag::CamelCase => "camel_case",
            Tag::Quoted => "quoted",
            Tag::Rare => "rare",
        }
    }
}

/// Document frequencies of folded words, for the `rare` tag.
pub struct Rarity {
    df: HashMap<String, u32>,
    docs: usize,
}

/// A word is rare when at most this fraction of documents holds it, or a single document
/// when that fraction is under one (and at least one does).
pub const RARE_MAX_DF_FRACTION: f64 = 0.005;

/// Below this many documents no word is called rare: one document in a handful says nothing.
pub const RARE_MIN_DOCS: usize = 20;

fn fold(word: &str) -> String {
    fold_accents(&word.nfc().collect::<String>().to_lowercase())
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    unicode_segmentation::UnicodeSegmentation::unicode_words(text)
}

impl Rarity {
    pub fn of<'t>(texts: impl Iterator<Item = &'t str>) -> Rarity {
        let mut df: HashMap<String, u32> = HashMap::new();
        let mut docs = 0;
        for text in texts {
            docs += 1;
            let seen: HashSet<String> = words(text).map(fold).collect();
            for w in seen {
                *df.entry(w).or_insert(0) += 1;
            }
        }
        Rarity { df, docs }
    }

    /// Documents holding `word` (folded).
    pub fn df(&self, word: &str) -> u32 {
        self.df.get(&fold(word)).copied().unwrap_or(0)
    }

    pub fn is_rare(&self, word: &str) -> bool {
        let df = self.df.get(&fold(word)).copied().unwrap_or(0);
        let max_df = (self.docs as f64 * RARE_MAX_DF_FRACTION).max(1.0);
        self.docs >= RARE_MIN_DOCS && df > 0 && f64::from(df) <= max_df
    }
}

const QUOTES: [(char, char); 4] = [('"', '"'), ('“', '”'), ('«', '»'), ('\'', '\'')];
/// Characters that hold a code together: `§14.2`, `NV-S310-X`, `v2/3`.
const CODE_JOINERS: [char; 6] = ['-', '.', '/', '§', '_', ':'];

/// The tags of one whitespace-separated token (outer punctuation already stripped).
fn token_tags(token: &str) -> Vec<Tag> {
    let mut tags = Vec::new();
    let digits = token.chars().filter(char::is_ascii_digit).count();
    let letters = token.chars().filter(|c| c.is_alphabetic()).count();
    if digits > 0 {
        let only_number = token.chars().all(|c| c.is_ascii_digit() || c == ',');
        tags.push(if only_number && !token.starts_with(',') { Tag::Number } else { Tag::Code });
    } else if token.starts_with('§') && token.len() > '§'.len_utf8() {
        tags.push(Tag::Code);
    }
    let upper = token.chars().filter(|c| c.is_uppercase()).count();
    let lower = token.chars().filter(|c| c.is_lowercase()).count();
    if upper >= 2 && lower == 0 && letters == upper {
        tags.push(Tag::AllCaps);
    }
    let chars: Vec<char> = token.chars().collect();
    if chars.windows(2).any(|w| w[0].is_lowercase() && w[1].is_uppercase()) {
        tags.push(Tag::CamelCase);
    }
    tags
}

/// Tags the exact terms of `question`. `relevant_text` is the text the case's labels point
/// at (folded before matching).
pub fn tag(question: &str, rarity: &Rarity, relevant_text: &str) -> Vec<ExactTerm> {
    let haystack = fold(relevant_text);
    let mut terms: Vec<ExactTerm> = Vec::new();
    let mut push = |text: &str, tags: Vec<Tag>| {
        if let Some(t) = terms.iter_mut().find(|t| t.text == text) {
            for tag in tags {
                if !t.tags.contains(&tag) {
                    t.tags.push(tag);
                }
            }
            return;
        }
        let in_evidence = haystack.contains(&fold(text));
        terms.push(ExactTerm { text: text.to_string(), tags, in_evidence });
    };
    for (open, close) in QUOTES {
        let mut rest = question;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            // An apostrophe inside a word (d'água) is not a quote.
            let prev = rest[..start].chars().next_back();
            if open == '\'' && prev.is_some_and(char::is_alphanumeric) {
                rest = after;
                continue;
            }
            let Some(end) = after.find(close) else { break };
            let inner = after[..end].trim();
            if !inner.is_empty() && inner.chars().count() <= 80 {
                push(inner, vec![Tag::Quoted]);
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    for raw in question.split_whitespace() {
        let token =
            raw.trim_matches(|c: char| !c.is_alphanumeric() && !CODE_JOINERS.contains(&c) || c == '.' || c == ':');
        let token = token.trim_start_matches(['-', '/', '_']).trim_end_matches(['-', '/', '_']);
        if token.is_empty() {
            continue;
        }
        let mut tags = token_tags(token);
        if tags.is_empty() && token.chars().count() >= 4 && rarity.is_rare(token) {
            tags.push(Tag::Rare);
        }
        if !tags.is_empty() {
            push(token, tags);
        }
    }
    terms
}

/// The text a case's labels point at: its relevant documents (title and text) or sections,
/// and its evidence spans.
pub fn relevant_text(case: &GoldenCase, corpus: &Corpus) -> String {
    let mut out = String::new();
    for label in &case.relevant {
        match corpus.target(&label.id) {
            Some(Target::Doc(d)) => {
                let doc = &corpus.docs[d];
                out.push_str(doc.title.as_deref().unwrap_or(""));
                out.push('\n');
                out.push_str(&doc.text);
            }
            Some(Target::Section { doc, section }) => {
                let doc = &corpus.docs[doc];
                let s = &doc.sections[section];
                out.push_str(&doc.text[s.start..s.end]);
            }
            None => {}
        }
        out.push('\n');
    }
    for e in &case.evidence {
        out.push_str(&e.text);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags_of(question: &str) -> Vec<(String, Vec<Tag>)> {
        let rarity = Rarity::of(["plain words only"].into_iter());
        tag(question, &rarity, "").into_iter().map(|t| (t.text, t.tags)).collect()
    }

    fn pair(text: &str, tags: &[Tag]) -> (String, Vec<Tag>) {
        (text.to_string(), tags.to_vec())
    }

    #[test]
    fn numbers_codes_caps_and_camel_case() {
        assert_eq!(
            tags_of("o que diz o §4.2 e a cláusula 7.3 sobre o erro HTTP 429?"),
            [
                pair("§4.2", &[Tag::Code]),
                pair("7.3", &[Tag::Code]),
                pair("HTTP", &[Tag::AllCaps]),
                pair("429", &[Tag::Number])
            ]
        );
        assert_eq!(
            tags_of("Is the NV-S310-X like an iPhone, per SKU-123 (2019)?"),
            [
                pair("NV-S310-X", &[Tag::Code, Tag::AllCaps]),
                pair("iPhone", &[Tag::CamelCase]),
                pair("SKU-123", &[Tag::Code, Tag::AllCaps]),
                pair("2019", &[Tag::Number])
            ]
        );
        assert!(tags_of("A simple Question about Things.").is_empty(), "a capitalised word is not all-caps");
    }

    #[test]
    fn quoted_strings_but_not_apostrophes() {
        assert_eq!(tags_of("what does “fair use” mean in d'água?"), [pair("fair use", &[Tag::Quoted])]);
        assert_eq!(tags_of("the 'LGPD' rule"), [pair("LGPD", &[Tag::Quoted, Tag::AllCaps])]);
    }

    #[test]
    fn rare_words_by_document_frequency() {
        // 400 documents: a word in 2 of them (0.5%) is rare, one in 3 is not.
        let mut docs: Vec<String> = (0..400).map(|i| format!("common filler text {i}")).collect();
        docs[0].push_str(" osteopontin");
        docs[1].push_str(" Osteopontin");
        for d in &mut docs[2..5] {
            d.push_str(" macrophage");
        }
        let rarity = Rarity::of(docs.iter().map(String::as_str));
        assert!(rarity.is_rare("osteopontin"));
        assert!(!rarity.is_rare("macrophage"));
        assert!(!rarity.is_rare("unseen"), "a word in no document cannot be matched and is not tagged");
        let terms = tag("does osteopontin recruit macrophage cells", &rarity, "Osteopontin recruits");
        assert_eq!(terms, [ExactTerm { text: "osteopontin".into(), tags: vec![Tag::Rare], in_evidence: true }]);
    }

    #[test]
    fn rare_words_on_small_corpora_are_those_of_one_document() {
        let mut docs: Vec<String> = (0..24).map(|i| format!("política de férias {i}")).collect();
        docs[3].push_str(" teletrabalho");
        docs[4].push_str(" reembolso");
        docs[5].push_str(" reembolso");
        let rarity = Rarity::of(docs.iter().map(String::as_str));
        assert!(rarity.is_rare("teletrabalho"), "in 1 of 24 documents");
        assert!(!rarity.is_rare("reembolso"), "in 2 of 24 documents");
        assert!(!rarity.is_rare("férias"));
        let few = Rarity::of(docs[..10].iter().map(String::as_str));
        assert!(!few.is_rare("teletrabalho"), "under 20 documents nothing is rare");
    }

    #[test]
    fn in_evidence_folds_case_and_accents() {
        let rarity = Rarity::of(std::iter::empty());
        let terms = tag("prazo do DESP-03/07?", &rarity, "o Despacho desp-03/07 define");
        assert_eq!(terms[0].text, "DESP-03/07");
        assert!(terms[0].in_evidence);
        assert!(!tag("erro E-1042", &rarity, "erro E-1043")[0].in_evidence);
    }
}
