//! Invariants that must hold for any input.

use proptest::prelude::*;

use ragsweep::evaluate::label::{Item, Judged};
use ragsweep::evaluate::metrics::Metric;
use ragsweep::input::corpus::{markdown_sections, Corpus, Document};
use ragsweep::stages::chunk::{ChunkSet, ChunkerKind, ChunkerSpec};

fn text_strategy() -> impl Strategy<Value = String> {
    // Words, accents, punctuation, headings, blank lines and multi-byte characters.
    prop::collection::vec(
        prop_oneof![
            "[a-zçãé]{1,12}",
            Just(" ".to_string()),
            Just(". ".to_string()),
            Just("\n\n".to_string()),
            Just("\n## Título\n".to_string()),
            Just("Dr. ".to_string()),
            Just("§4.2 ".to_string()),
            Just("日本 ".to_string()),
        ],
        0..80,
    )
    .prop_map(|parts| parts.concat())
}

fn kind_strategy() -> impl Strategy<Value = ChunkerKind> {
    prop_oneof![
        Just(ChunkerKind::None),
        (1usize..60, 0usize..30).prop_map(|(s, o)| ChunkerKind::Fixed { size: s + o, overlap: o }),
        (1usize..80, 0usize..3).prop_map(|(m, o)| ChunkerKind::Sentence { max_chars: m, overlap: o }),
        (2usize..80, 0usize..20).prop_map(|(s, o)| ChunkerKind::Recursive { size: s, overlap: o.min(s - 1) }),
        prop::option::of(5usize..80).prop_map(|m| ChunkerKind::Markdown { max_chars: m }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn chunks_are_valid_sorted_spans_covering_all_text(text in text_strategy(), kind in kind_strategy()) {
        let doc = Document {
            id: "d".into(),
            title: None,
            sections: markdown_sections("d", &text),
            text: text.clone(),
            meta: Default::default(),
            acl: None,
        };
        let corpus = Corpus::from_docs(vec![doc], "mem".into()).unwrap();
        let set = ChunkSet::build(&corpus, &ChunkerSpec { kind: kind.clone(), title: false, headings: false });
        let mut covered = vec![false; text.len()];
        for (i, c) in set.chunks.iter().enumerate() {
            prop_assert!(c.start < c.end && c.end as usize <= text.len());
            prop_assert!(text.is_char_boundary(c.start as usize) && text.is_char_boundary(c.end as usize));
            prop_assert_eq!(&c.id, &format!("d@{}-{}", c.start, c.end));
            prop_assert!(!set.text(&corpus, i).trim().is_empty());
            if i > 0 {
                prop_assert!(set.chunks[i - 1].id < c.id);
            }
            for b in covered[c.span()].iter_mut() {
                *b = true;
            }
        }
        for (i, ch) in text.char_indices() {
            prop_assert!(ch.is_whitespace() || covered[i], "byte {} ({:?}) of {:?} is in no chunk of {:?}", i, ch, text, kind);
        }
        for c in &set.chunks {
            let len = text[c.span()].chars().count();
            match kind {
                ChunkerKind::Fixed { size, .. } | ChunkerKind::Recursive { size, .. } => prop_assert!(len <= size),
                ChunkerKind::Sentence { max_chars, .. } => prop_assert!(len <= max_chars),
                _ => {}
            }
        }
    }

    #[test]
    fn metrics_are_bounded_and_monotone_in_k(
        gains in prop::collection::vec(prop_oneof![Just(0.0), Just(1.0), Just(2.0)], 0..30),
        extra_relevant in 0usize..5,
    ) {
        let items: Vec<Item> = gains
            .iter()
            .enumerate()
            .map(|(i, &g)| Item { key: i.to_string(), score: 0.0, gain: g, new: u32::from(g > 0.0) })
            .collect();
        let mut ideal: Vec<f64> = gains.iter().copied().filter(|&g| g > 0.0).collect();
        ideal.extend(std::iter::repeat_n(1.0, extra_relevant));
        ideal.sort_by(|a, b| b.total_cmp(a));
        let j = Judged { items, relevant: ideal.len(), ideal, returned: Vec::new() };
        for m in Metric::ALL {
            let mut last: Option<f64> = None;
            for k in 1..=32 {
                let v = m.at(&j, k);
                if j.relevant == 0 && m != Metric::Precision {
                    prop_assert_eq!(v, None);
                    continue;
                }
                let v = v.unwrap();
                prop_assert!((0.0..=1.0 + 1e-12).contains(&v), "{} @{} = {}", m, k, v);
                if matches!(m, Metric::Hit | Metric::Recall | Metric::Mrr | Metric::Ap) {
                    prop_assert!(last.is_none_or(|l| v >= l - 1e-12), "{} not monotone", m);
                }
                last = Some(v);
            }
        }
    }
}
