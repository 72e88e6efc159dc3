//! Permission filters (SPEC §5): who may see which chunk, and where the filter applies.
//!
//! `in_query` passes the user's allowed set into the index search itself, so the top k are
//! drawn from what the user may see; `post` retrieves unfiltered and drops what the user may
//! not see afterwards (the late filter, kept to measure what it costs); `none` applies no
//! filter and shows what would leak.

use std::fmt;

use crate::input::corpus::{Corpus, Document};
use crate::input::golden::GoldenCase;
use crate::retrieve::hits::Allowed;
use crate::retrieve::source::Restriction;
pub use crate::vocab::{Filter, MissingAcl, SyntheticAcl};

impl Filter {
    pub fn as_str(self) -> &'static str {
        match self {
            Filter::None => "none",
            Filter::InQuery => "in_query",
            Filter::Post => "post",
        }
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a cell's filter applies to one query, with the user's allowed set (SPEC §5). The
/// one place the filter modes are told apart: [`crate::retrieve::cell::retrieve`] reads it.
#[derive(Debug, Clone, Copy)]
pub enum Access<'a> {
    /// No filter: what the retriever returns is the list (leaks are counted, not prevented).
    Open,
    /// The restriction is part of the index search.
    InQuery(Restriction<'a>),
    /// The unfiltered list at each cut-off, minus what the user may not see, never refilled.
    Post(Restriction<'a>),
}

impl<'a> Access<'a> {
    /// The access of a cell with filter `filter` for a user in `groups` who may see `allowed`
    /// (`None`: the corpus has no ACLs, so everything is visible and every mode is open).
    pub fn of(filter: Filter, allowed: Option<&'a Allowed>, groups: &'a [String]) -> Access<'a> {
        match (filter, allowed) {
            (Filter::InQuery, Some(allowed)) => Access::InQuery(Restriction { allowed, groups }),
            (Filter::Post, Some(allowed)) => Access::Post(Restriction { allowed, groups }),
            _ => Access::Open,
        }
    }

    /// The restriction the index search itself receives.
    pub fn in_query(&self) -> Option<Restriction<'a>> {
        match *self {
            Access::InQuery(r) => Some(r),
            _ => None,
        }
    }
}

/// A document with no ACL is public; one with an ACL is visible to members of any of its groups.
pub fn visible(doc: &Document, groups: &[String]) -> bool {
    doc.acl.as_ref().is_none_or(|acl| acl.iter().any(|g| groups.contains(g)))
}

/// The first label of a case that its own user may see (a restricted-answer case must have
/// none), as the golden set names it.
pub fn visible_label(corpus: &Corpus, case: &GoldenCase) -> Option<String> {
    let groups = case.user_groups();
    let doc_visible = |d: usize| visible(&corpus.docs[d], groups);
    for label in case.relevant.iter().filter(|l| l.grade > 0) {
        let doc = match corpus.target(&label.id)? {
            crate::input::corpus::Target::Doc(d) | crate::input::corpus::Target::Section { doc: d, .. } => d,
        };
        if doc_visible(doc) {
            return Some(label.id.clone());
        }
    }
    for evidence in &case.evidence {
        let needle = crate::analyze::normalize(&evidence.text);
        let seen = match &evidence.doc {
            Some(id) => corpus.doc_index(id).is_some_and(doc_visible),
            None => (0..corpus.docs.len())
                .any(|d| doc_visible(d) && crate::analyze::normalize(&corpus.docs[d].text).contains(&needle)),
        };
        if seen {
            return Some(evidence.text.clone());
        }
    }
    None
}

fn unit_hash(seed: u64, text: &str) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(text.as_bytes());
    u64::from_le_bytes(h.finalize().as_bytes()[..8].try_into().expect("8 bytes"))
}

impl MissingAcl {
    pub fn apply(self, corpus: &mut Corpus) {
        if self == MissingAcl::Deny {
            for doc in corpus.docs.iter_mut().filter(|d| d.acl.is_none()) {
                doc.acl = Some(Vec::new());
            }
        }
    }
}

impl SyntheticAcl {
    pub fn apply(&self, corpus: &mut Corpus, cases: &mut [GoldenCase]) {
        for doc in &mut corpus.docs {
            if doc.acl.is_none() {
                doc.acl = Some(vec![format!("g{}", unit_hash(self.seed, &doc.id) % self.groups as u64)]);
            }
        }
        for case in cases.iter_mut().filter(|c| c.groups.is_none()) {
            let mut groups: Vec<String> =
                case.relevant
                    .iter()
                    .filter(|l| l.grade > 0)
                    .filter_map(|l| corpus.target(&l.id))
                    .filter_map(|t| {
                        let d = match t {
                            crate::input::corpus::Target::Doc(d)
                            | crate::input::corpus::Target::Section { doc: d, .. } => d,
                        };
                        corpus.docs[d].acl.clone()
                    })
                    .flatten()
                    .collect();
            if groups.is_empty() {
                groups.push(format!("g{}", unit_hash(self.seed, &case.id) % self.groups as u64));
            }
            groups.sort();
            groups.dedup();
            case.groups = Some(groups);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::corpus::Document;
    use crate::input::golden::Label;

    fn doc(id: &str, acl: Option<&[&str]>) -> Document {
        Document {
            id: id.into(),
            title: None,
            text: "x".into(),
            meta: Default::default(),
            acl: acl.map(|a| a.iter().map(|s| s.to_string()).collect()),
            sections: vec![],
        }
    }

    #[test]
    fn visibility_rules() {
        let rh = ["rh".to_string()];
        assert!(visible(&doc("a", None), &[]));
        assert!(!visible(&doc("a", Some(&["rh"])), &[]));
        assert!(visible(&doc("a", Some(&["financeiro", "rh"])), &rh));
        assert!(!visible(&doc("a", Some(&[])), &rh));
    }

    #[test]
    fn synthetic_acls_split_the_corpus_and_let_users_see_their_answers() {
        let docs = (0..1000).map(|i| doc(&format!("d{i}"), None)).collect();
        let mut corpus = Corpus::from_docs(docs, "m".into()).unwrap();
        let mut cases = vec![GoldenCase {
            id: "q".into(),
            question: "?".into(),
            split: None,
            answerable: true,
            groups: None,
            relevant: vec![Label { id: "d7".into(), grade: 1, own: false }],
            evidence: vec![],
            tags: vec![],
            meta: None,
            label_hash: None,
        }];
        SyntheticAcl { groups: 10, seed: 3 }.apply(&mut corpus, &mut cases);
        let seen = corpus.docs.iter().filter(|d| visible(d, cases[0].user_groups())).count();
        assert!((60..140).contains(&seen), "a one-group user sees about 10%: {seen}");
        assert!(visible(&corpus.docs[7], cases[0].user_groups()));
    }
}
