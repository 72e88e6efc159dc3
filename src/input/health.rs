//! Golden-set health (`validate` and every run): what the set holds per split and tag, and
//! what makes its numbers weak — too few answerable or unanswerable cases for an interval to
//! mean much, repeated questions, labels so long they say little about where the answer is.

use std::collections::BTreeMap;

use crate::analyze::normalize;
use crate::input::corpus::{Corpus, Target};
use crate::input::golden::{GoldenCase, Split};

/// Below these, a split's numbers are too uncertain to decide on.
pub const MIN_ANSWERABLE: usize = 30;
pub const MIN_UNANSWERABLE: usize = 5;
/// A section label covering more than this share of its document is flagged.
pub const LONG_LABEL: f64 = 1.0 / 3.0;
/// Examples listed per finding.
const EXAMPLES: usize = 5;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Health {
    pub lines: Vec<String>,
    pub warnings: Vec<String>,
}

/// Cases' splits must be assigned. `judged(case, unit)` says a label came from a judgment, not the golden set: warnings about
/// how labels were written are about the golden set's own.
pub fn health(cases: &[GoldenCase], corpus: &Corpus, judged: &dyn Fn(&str, &str) -> bool) -> Health {
    let mut h = Health::default();
    let mut per_split: BTreeMap<Split, (usize, usize)> = BTreeMap::new();
    for c in cases {
        let e = per_split.entry(c.split.unwrap_or(Split::Tuning)).or_default();
        if c.answerable {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    let splits: Vec<String> = per_split
        .iter()
        .map(|(s, (a, u))| format!("{} {} ({a} answerable, {u} unanswerable)", s.as_str(), a + u))
        .collect();
    h.lines.push(format!("golden set: {}: {}", crate::words::count(cases.len(), "case"), splits.join(" · ")));
    for (split, (answerable, unanswerable)) in &per_split {
        if *answerable == 0 {
            h.warnings.push(format!("{}: no answerable cases: its retrieval metrics are undefined", split.as_str()));
        } else if *answerable < MIN_ANSWERABLE {
            // Worst case for a metric in [0, 1]: standard deviation 0.5.
            let half = 1.96 * 0.5 / (*answerable as f64).sqrt();
            h.warnings.push(format!(
                "{}: {answerable} answerable cases (fewer than {MIN_ANSWERABLE}): a mean's 95% interval can be ±{half:.2} wide",
                split.as_str()
            ));
        }
        if *unanswerable < MIN_UNANSWERABLE {
            h.warnings.push(format!(
                "{}: {unanswerable} unanswerable cases (fewer than {MIN_UNANSWERABLE}): abstention is barely measured",
                split.as_str()
            ));
        }
    }
    let mut tags: BTreeMap<&str, usize> = BTreeMap::new();
    for t in cases.iter().flat_map(|c| &c.tags) {
        *tags.entry(t).or_default() += 1;
    }
    if !tags.is_empty() {
        let list: Vec<String> = tags.iter().map(|(t, n)| format!("{t} {n}")).collect();
        h.lines.push(format!("cases per tag: {}", list.join(", ")));
    }
    let mut by_text: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for c in cases {
        let key: String =
            normalize(&c.question).chars().filter(|ch| ch.is_alphanumeric() || *ch == ' ').collect::<String>();
        by_text.entry(key.split_whitespace().collect::<Vec<_>>().join(" ")).or_default().push(&c.id);
    }
    let repeated: Vec<String> = by_text.values().filter(|ids| ids.len() > 1).map(|ids| ids.join(" = ")).collect();
    if !repeated.is_empty() {
        h.warnings.push(format!(
            "{} questions asked more than once (same text once lower-cased and without punctuation): {}",
            repeated.len(),
            examples(&repeated)
        ));
    }
    let mut long: Vec<String> = Vec::new();
    for c in cases {
        for label in c.relevant.iter().filter(|l| l.grade > 0 && !judged(&c.id, &l.id)) {
            if let Some(Target::Section { doc, section }) = corpus.target(&label.id) {
                let d = &corpus.docs[doc];
                let s = &d.sections[section];
                let share = (s.end - s.start) as f64 / d.text.len().max(1) as f64;
                if share > LONG_LABEL && d.sections.len() > 1 {
                    long.push(format!("{} → {} ({:.0}% of its document)", c.id, label.id, 100.0 * share));
                }
            }
        }
    }
    if !long.is_empty() {
        h.warnings.push(format!(
            "{} labels cover more than a third of their document, saying little about where the answer is: {}",
            long.len(),
            examples(&long)
        ));
    }
    let changed: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let recorded = c.label_hash.as_deref()?;
            let label = &c.relevant.first()?.id;
            (corpus.label_hash(label).as_deref() != Some(recorded)).then(|| format!("{} → {label}", c.id))
        })
        .collect();
    if !changed.is_empty() {
        h.warnings.push(format!(
            "{} labels point at text that changed since the case was written (its label_hash): check they still hold the answer: {}",
            changed.len(),
            examples(&changed)
        ));
    }
    h
}

fn examples(items: &[String]) -> String {
    let mut shown = items.iter().take(EXAMPLES).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > EXAMPLES {
        shown.push_str(&format!("; and {} more", items.len() - EXAMPLES));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::corpus::{markdown_sections, Document};
    use crate::input::golden::Label;

    fn case(id: &str, question: &str, split: Split, label: Option<&str>) -> GoldenCase {
        GoldenCase {
            id: id.into(),
            question: question.into(),
            split: Some(split),
            answerable: label.is_some(),
            groups: None,
            relevant: label.map(|l| vec![Label { id: l.into(), grade: 1, own: false }]).unwrap_or_default(),
            evidence: vec![],
            tags: vec!["preço".into()],
            meta: None,
            label_hash: None,
        }
    }

    #[test]
    fn counts_splits_and_flags_small_splits_repeats_and_long_labels() {
        let text = "# A\nlong long long long long long long long long long\n# B\nshort\n";
        let doc = Document {
            id: "d".into(),
            title: None,
            text: text.into(),
            meta: Default::default(),
            acl: None,
            sections: markdown_sections("d", text),
        };
        let corpus = Corpus::from_docs(vec![doc], "c".into()).unwrap();
        let cases = vec![
            case("q1", "Qual o preço?", Split::Tuning, Some("d#A")),
            case("q2", "qual o  PREÇO", Split::Tuning, Some("d#B")),
            case("q3", "nada", Split::Reserved, None),
        ];
        let h = health(&cases, &corpus, &|_, _| false);
        assert_eq!(
            h.lines[0],
            "golden set: 3 cases: tuning 2 (2 answerable, 0 unanswerable) · reserved 1 (0 answerable, 1 unanswerable)"
        );
        assert_eq!(h.lines[1], "cases per tag: preço 3");
        let all = h.warnings.join("\n");
        assert!(
            all.contains("tuning: 2 answerable cases (fewer than 30): a mean's 95% interval can be ±0.69 wide"),
            "{all}"
        );
        assert!(all.contains("reserved: 1 unanswerable cases"), "{all}");
        assert!(
            all.contains(
                "1 questions asked more than once (same text once lower-cased and without punctuation): q1 = q2"
            ),
            "{all}"
        );
        assert!(all.contains("q1 → d#A (84% of its document)"), "{all}");
        assert!(!all.contains("d#B"), "{all}");
    }
}
