//! Invariants that must hold for any input.

use proptest::prelude::*;

use ragsweep::chunkers::ChunkerKind;
use ragsweep::evaluate::label::{Item, Judged};
use ragsweep::evaluate::metrics::Metric;
use ragsweep::input::access_key::AccessKey;
use ragsweep::input::corpus::{markdown_sections, Corpus, Document};
use ragsweep::stages::chunk::{ChunkSet, ChunkerSpec};

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
            .map(|(i, &g)| Item { key: i.to_string(), score: 0.0, gain: g, new: u32::from(g > 0.0), chunk: 0, judged: true })
            .collect();
        let mut ideal: Vec<f64> = gains.iter().copied().filter(|&g| g > 0.0).collect();
        ideal.extend(std::iter::repeat_n(1.0, extra_relevant));
        ideal.sort_by(|a, b| b.total_cmp(a));
        let j = Judged { items, relevant: ideal.len(), ideal, returned: Vec::new() };
        for m in Metric::defaults() {
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

/// One front matter line (or block) and the groups it names if it is an access list.
fn front_matter_entry() -> impl Strategy<Value = (String, Option<Vec<String>>)> {
    let groups = prop::sample::subsequence(vec!["rh", "ti", "dpo", "vendas"], 1..=3)
        .prop_map(|g| g.into_iter().map(String::from).collect::<Vec<String>>());
    let comment = prop_oneof![Just(String::new()), Just(" # nota".to_string()), Just("  #x".to_string())];
    let acl_key = prop_oneof![Just("acl"), Just("ACL"), Just("acls"), Just("Acl"), Just("groups"), Just("permissions")];
    let acl =
        (acl_key, groups, 0..4u8, comment.clone(), any::<bool>()).prop_map(|(key, groups, form, comment, quoted)| {
            let q = |g: &String| if quoted { format!("'{g}'") } else { g.clone() };
            let text = match form {
                0 => format!("{key}: [{}]{comment}", groups.iter().map(q).collect::<Vec<_>>().join(", ")),
                1 => format!(
                    "{key}:{comment}\n{}",
                    groups.iter().map(|g| format!("  - {}{comment}", q(g))).collect::<Vec<_>>().join("\n")
                ),
                2 => format!("{key}: {}{comment}", q(&groups[0])),
                _ => format!("{key}: {}", groups.join(", ")),
            };
            let named = if form == 2 { vec![groups[0].clone()] } else { groups };
            (text, Some(named))
        });
    prop_oneof![
        acl,
        comment.prop_map(|c| (format!("title: Título qualquer{c}"), None)),
        Just(("meta:\n  area: rh\n  dono: ti".to_string(), None)),
        Just(("# só um comentário".to_string(), None)),
        Just(("".to_string(), None)),
        Just(("autor: ana".to_string(), None)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A document is visible only to the groups its access lines name, or its file is
    /// rejected; front matter never becomes text, and a document without any access line
    /// is public.
    #[test]
    fn front_matter_never_opens_a_document(
        blank_before in 0..3usize,
        open in prop_oneof![Just("---"), Just("--- "), Just("---\t"), Just("---  ")],
        close in prop_oneof![Just("---"), Just("..."), Just("--- "), Just("")],
        crlf in any::<bool>(),
        entries in prop::collection::vec(front_matter_entry(), 0..4),
        user in prop::sample::subsequence(vec!["rh", "ti", "dpo", "vendas", "outro"], 0..=3),
    ) {
        let mut text = "\n".repeat(blank_before);
        text.push_str(open);
        text.push('\n');
        for (line, _) in &entries {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(close);
        text.push_str("\nCorpo do documento.\n");
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("doc.md"), &text).unwrap();
        let named: Option<Vec<String>> = entries.iter().filter_map(|(_, g)| g.clone()).reduce(|mut a, b| {
            a.extend(b);
            a
        });
        let user: Vec<String> = user.into_iter().map(String::from).collect();
        match Corpus::load(dir.path(), None, &AccessKey::default()) {
            Err(e) => prop_assert!(e.to_string().contains("doc.md:"), "an error without a line: {e}"),
            Ok(corpus) => {
                let doc = &corpus.docs[0];
                prop_assert!(!close.is_empty(), "an unclosed front matter was accepted: {text:?}");
                prop_assert!(!doc.text.contains("---") && !doc.text.contains(": "), "front matter in the text: {:?}", doc.text);
                let visible = ragsweep::retrieve::access::visible(doc, &user);
                match &named {
                    None => prop_assert!(visible && doc.acl.is_none(), "{text:?}"),
                    Some(groups) if entries.iter().filter(|e| e.1.is_some()).count() == 1 => {
                        prop_assert_eq!(doc.acl.as_ref(), Some(groups), "{:?}", text);
                    }
                    Some(groups) => {
                        prop_assert!(doc.acl.is_some(), "an access line was ignored: {text:?}");
                        if visible {
                            prop_assert!(user.iter().any(|u| groups.contains(u)), "{text:?} visible to {user:?}");
                        }
                    }
                }
            }
        }
    }
}

/// A JSON value an access list might be given as, and the groups it names if it is a valid one.
fn acl_value() -> impl Strategy<Value = (serde_json::Value, Option<Vec<String>>)> {
    prop_oneof![
        prop::sample::subsequence(vec!["rh", "ti", "dpo"], 0..=3).prop_map(|g| {
            let groups: Vec<String> = g.into_iter().map(String::from).collect();
            (serde_json::json!(groups), Some(groups))
        }),
        Just((serde_json::Value::Null, None)),
        Just((serde_json::json!("rh"), None)),
        Just((serde_json::json!(""), None)),
        Just((serde_json::json!(3), None)),
        Just((serde_json::json!([""]), None)),
        Just((serde_json::json!({"rh": true}), None)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// In every reader the same rules hold: a document whose fields include something that is
    /// or could be an access list is refused with its file and line, or visible exactly to the
    /// groups of its access key; plain metadata keys never make it public or private.
    #[test]
    fn every_reader_applies_the_access_key_rules(
        key in prop_oneof![Just("acl"), Just("ACL"), Just("acls"), Just("Acl"), Just("groups"), Just("roles"),
            Just("allowed"), Just("access_level"), Just("owner"), Just("visibility"), Just("tags"), Just("autor")],
        (value, groups) in acl_value(),
        nested in any::<bool>(),
        folder in any::<bool>(),
        user in prop::sample::subsequence(vec!["rh", "ti", "dpo", "vendas"], 0..=2),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = if folder {
            let yaml = serde_json::to_string(&value).unwrap();
            let front = if nested { format!("meta:\n  {key}: {yaml}\n") } else { format!("{key}: {yaml}\n") };
            std::fs::write(dir.path().join("doc.md"), format!("---\ntitle: T\n{front}---\nTexto.\n")).unwrap();
            dir.path().to_path_buf()
        } else {
            let mut doc = serde_json::json!({"id": "d", "text": "Texto."});
            if nested {
                doc["metadata"] = serde_json::json!({ key: value });
            } else {
                doc[key] = value.clone();
            }
            let path = dir.path().join("corpus.jsonl");
            std::fs::write(&path, format!("{doc}\n")).unwrap();
            path
        };
        let user: Vec<String> = user.into_iter().map(String::from).collect();
        match Corpus::load(&path, None, &AccessKey::default()) {
            Err(e) => {
                let at = if folder { "doc.md:" } else { "corpus.jsonl:1" };
                prop_assert!(e.to_string().contains(at), "an error without its place: {e}");
                prop_assert!(key != "tags" && key != "autor", "plain metadata refused: {key} = {value}: {e}");
            }
            Ok(corpus) => {
                let doc = &corpus.docs[0];
                let visible = ragsweep::retrieve::access::visible(doc, &user);
                if key == "acl" {
                    let groups = groups.clone();
                    prop_assert!(groups.is_some(), "an invalid access list was accepted: {value}");
                    prop_assert_eq!(doc.acl.clone(), groups.clone());
                    let g = groups.unwrap();
                    prop_assert_eq!(visible, user.iter().any(|u| g.contains(u)));
                } else {
                    prop_assert!(key == "tags" || key == "autor", "{key} = {value} accepted (folder {folder}, nested {nested})");
                    prop_assert!(doc.acl.is_none() && visible, "metadata changed visibility");
                }
            }
        }
    }
}
