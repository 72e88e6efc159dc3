//! `ragsweep init`: a starting experiment for a user's own documents. It reads the corpus
//! (detecting its format), guesses the language for BM25, and writes `experiment.toml` with
//! a small grid and `golden.jsonl` with stub cases spread across documents and sections, for
//! the user to fill with questions typed the way their users type them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::analyze::AnalyzerKind;
use crate::error::{Error, Result};
use crate::input::corpus::Corpus;

/// Stub cases written by default (`--stubs`), of which a tenth (at least one) are unanswerable.
pub const STUBS: usize = 40;

/// Unanswerable stubs among `stubs`.
pub fn unanswerable_stubs(stubs: usize) -> usize {
    (stubs / 10).max(1).min(stubs)
}

const PT_WORDS: [&str; 12] = ["de", "que", "não", "para", "com", "uma", "os", "do", "da", "em", "é", "são"];
const EN_WORDS: [&str; 12] = ["the", "of", "and", "to", "is", "in", "that", "for", "with", "are", "this", "be"];

/// Portuguese or English, by which language's common words the corpus uses more.
pub fn language(corpus: &Corpus) -> AnalyzerKind {
    language_mix(corpus).0
}

/// The corpus's main language and whether the other one is a large share too (a quarter or
/// more of the common words counted): mixed text needs a multilingual model.
pub fn language_mix(corpus: &Corpus) -> (AnalyzerKind, bool) {
    let (mut pt, mut en) = (0usize, 0usize);
    for doc in corpus.docs.iter().take(500) {
        for word in doc.text.split(|c: char| !c.is_alphanumeric()).take(2000) {
            let w = word.to_lowercase();
            pt += usize::from(PT_WORDS.contains(&w.as_str()));
            en += usize::from(EN_WORDS.contains(&w.as_str()));
        }
    }
    let mixed = pt.min(en) * 4 >= pt.max(en) && pt.max(en) > 0;
    (if pt > en { AnalyzerKind::Pt } else { AnalyzerKind::En }, mixed)
}

/// The embedding model `init` puts in the grid: the fastest installed one that fits the text.
/// English: MiniLM int8 first; Portuguese or mixed: multilingual e5-small int8 first (int8 is
/// measured 1.6–2.3× faster than fp32 at the same ranking on this project's corpora; BENCHMARKS.md).
pub fn default_model(models_dir: &Path, lang: AnalyzerKind, mixed: bool) -> &'static str {
    let english = lang == AnalyzerKind::En && !mixed;
    let order: &[&'static str] = if english {
        &["minilm-l6-int8", "minilm-l6", "e5-small-int8", "e5-small"]
    } else {
        &["e5-small-int8", "e5-small", "e5-small-fused"]
    };
    order.iter().copied().find(|id| crate::stages::embed::find_model(models_dir, id).is_ok()).unwrap_or(order[0])
}

/// What `init` wrote and found.
pub struct Initialised {
    pub experiment: PathBuf,
    pub golden: PathBuf,
    pub documents: usize,
    pub sections: usize,
    pub language: AnalyzerKind,
    /// The embedding model of the grid's dense and hybrid cells.
    pub model: &'static str,
    pub stubs: usize,
    /// What was read per format and what was skipped.
    pub read: String,
    /// Metadata keys the documents carry (front matter and fields kept as meta), with counts.
    pub metadata: Vec<(String, usize)>,
    /// Sections left without a stub: too short to hold an answer, a list of links, or the whole
    /// document.
    pub skipped_sections: usize,
}

fn snippet(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = flat.chars().take(160).collect();
    if flat.chars().count() > 160 {
        out.push('…');
    }
    out
}

/// Writes `experiment.toml` and `golden.jsonl` into `out` for the corpus at `corpus_path`;
/// never overwrites a file.
pub fn init(corpus_path: &Path, out: &Path, stubs: usize, models_dir: &Path) -> Result<Initialised> {
    let corpus = Corpus::load(corpus_path, None, &crate::input::access_key::AccessKey::default())?;
    let experiment = out.join("experiment.toml");
    let golden = out.join("golden.jsonl");
    for f in [&experiment, &golden] {
        if f.exists() {
            return Err(Error::Output {
                path: f.clone(),
                why: "exists: init never overwrites (remove it or pick another folder)".into(),
            });
        }
    }
    let sections: usize = corpus.docs.iter().map(|d| d.sections.len()).sum();
    let by_section = sections >= corpus.docs.len();
    let unanswerable = unanswerable_stubs(stubs);
    let wanted = stubs - unanswerable;
    // Sections that can hold an answer: enough words of their own, not a table of contents.
    // When too few sections are that long, short ones (not link lists) are labelled too.
    let pick = |min_words: usize| -> Vec<Vec<usize>> {
        // A label over (nearly) the whole document says nothing of where the answer is when
        // the document has sections that say more (`validate` warns about such labels).
        let whole = |d: &crate::input::corpus::Document, i: usize| {
            let s = &d.sections[i];
            let headed = d.sections.iter().filter(|s| !s.page).count();
            headed > 1 && 20 * (s.end - s.start) >= 19 * d.text.trim_end().len()
        };
        let doc_sections = |d: &crate::input::corpus::Document| -> Vec<usize> {
            (0..d.sections.len())
                .filter(|&i| !d.sections[i].page && !whole(d, i) && answerable_section(d, i, min_words))
                .collect()
        };
        corpus.docs.iter().map(doc_sections).collect()
    };
    let mut usable = pick(MIN_STUB_WORDS);
    if usable.iter().map(Vec::len).sum::<usize>() < wanted {
        usable = pick(0);
    }
    let skipped = sections - usable.iter().map(Vec::len).sum::<usize>();
    let (lang, mixed) = language_mix(&corpus);
    let model = default_model(models_dir, lang, mixed);
    let targets: Vec<(usize, Option<usize>)> = stratified(&corpus, &usable, by_section, wanted);
    let rarity = crate::evaluate::exact_terms::Rarity::of(corpus.docs.iter().map(|d| d.text.as_str()));
    let (generic, terms) =
        (generic_headings(&corpus), TermRarity::of(&corpus, common_words(models_dir, lang, mixed), lang));
    let mut lines = String::new();
    // Exact terms already proposed for an earlier stub (text included in many pages repeats).
    let mut used = std::collections::HashSet::new();
    for (i, &(d, section)) in targets.iter().enumerate() {
        let doc = &corpus.docs[d];
        let title = page_title(doc);
        let (label, heading, text) = match section {
            Some(j) => {
                let s = &doc.sections[j];
                (s.id.clone(), s.label.clone(), own_text(doc, j))
            }
            None => (doc.id.clone(), title.clone(), doc.text.as_str()),
        };
        let place = Place { title: &title, heading: &heading, generic: &generic };
        let case = json!({"id": format!("q{:02}", i + 1), "question": "", "relevant": [label],
            "label_hash": corpus.label_hash(&label),
            "meta": {"snippet": snippet(text), "draft": true, "drafts": drafts(&place, text, lang, &rarity, &terms, &mut used)}});
        let _ = writeln!(lines, "{case}");
    }
    for i in 0..unanswerable {
        let case = json!({"id": format!("u{:02}", i + 1), "question": "", "answerable": false,
            "meta": {"hint": "a question your users ask that these documents do not answer"}});
        let _ = writeln!(lines, "{case}");
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let corpus_ref = pathdiff(corpus_path, out);
    let unit = if by_section { "section" } else { "doc" };
    let chunker = if by_section {
        "[[chunkers]]\nkind = \"markdown\"\ntitle = true\nheadings = true\n\n[[chunkers]]\nkind = \"recursive\"\nsize = 800\noverlap = 100\ntitle = true\n"
    } else {
        "[[chunkers]]\nkind = \"none\"\ntitle = true\n\n[[chunkers]]\nkind = \"recursive\"\nsize = 800\noverlap = 100\ntitle = true\n"
    };
    let analyzer = match lang {
        AnalyzerKind::Pt => "pt",
        _ => "en",
    };
    let toml = format!(
        "# Written by `ragsweep init` for {corpus} ({docs} documents, {sections} sections).\n\
         # Fill golden.jsonl with questions, then: ragsweep validate experiment.toml && ragsweep run experiment.toml\n\
         name = \"my-retrieval\"\nunit = \"{unit}\"\nk = [1, 3, 5, 10]\nselect = \"ndcg@10\"\nreserved_fraction = 0.3\n\n\
         [corpus]\npath = {corpus_toml}\n\n[golden]\npath = \"golden.jsonl\"\n\n{chunker}\n\
         [[retrievers]]\nkind = \"bm25\"\nanalyzer = \"{analyzer}\"\n\n\
         # {model}: the fastest installed model for {text} text. For Portuguese or mixed text use\n\
         # e5-small-int8 (multilingual), for English minilm-l6-int8; `ragsweep models list` shows what is\n\
         # installed, and `ragsweep validate` estimates how long the first run embeds.\n\
         [[retrievers]]\nkind = \"dense\"\nmodel = \"{model}\"\n\n\
         [[retrievers]]\nkind = \"hybrid\"\nanalyzer = \"{analyzer}\"\nmodel = \"{model}\"\nfusion = \"rrf\"\n",
        text = if mixed { "mixed Portuguese and English" } else if lang == AnalyzerKind::Pt { "Portuguese" } else { "English" },
        corpus = corpus_path.display(),
        docs = corpus.docs.len(),
        corpus_toml = toml::Value::String(corpus_ref.display().to_string()),
    );
    crate::atomic::write_atomic(&experiment, toml.as_bytes())?;
    crate::atomic::write_atomic(&golden, lines.as_bytes())?;
    Ok(Initialised {
        experiment,
        golden,
        documents: corpus.docs.len(),
        sections,
        language: lang,
        model,
        stubs: targets.len() + unanswerable,
        read: corpus.report.summary(),
        metadata: {
            let mut keys: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
            for k in corpus.docs.iter().flat_map(|d| d.meta.keys()) {
                *keys.entry(k.clone()).or_insert(0) += 1;
            }
            keys.into_iter().collect()
        },
        skipped_sections: if by_section { skipped } else { 0 },
    })
}

/// The stubs' labels, stratified by content: each folder (the first below the trunk that holds
/// nearly every document: `guide` for `guide/a.md` and `guide/deep/b.md`) holding at least 2 %
/// of the candidates gets a share of the stubs in proportion to its candidates (at least one
/// each while there are stubs for all, the largest first; the Sainte-Laguë divisors), and only
/// stubs those folders cannot hold go to the smaller folders.
/// Within a folder, a document's usable sections are spread evenly over the folder's order from
/// a pseudo-random offset (a hash of the id, so a rerun picks the same ones), so a manual of 150
/// sections gets its share beside one-section pages. Folders take turns in the output, so the
/// first stubs already cover the corpus. `(document, section)`; no section without headings.
pub(crate) fn stratified(
    corpus: &Corpus,
    usable: &[Vec<usize>],
    by_section: bool,
    wanted: usize,
) -> Vec<(usize, Option<usize>)> {
    let paths: Vec<Vec<&str>> = corpus
        .docs
        .iter()
        .map(|doc| doc.id.rsplit_once('/').map_or(Vec::new(), |(f, _)| f.split('/').collect()))
        .collect();
    // A folder is one a reader sees at the top of the site: below the trunk, the folder holding
    // 90 % of the documents or more (`content/en` of a Hugo checkout beside its README), the
    // first folder (`content/en/functions`, not each function's own subfolder).
    let mut trunk: Vec<&str> = Vec::new();
    loop {
        let under: Vec<&Vec<&str>> = paths.iter().filter(|p| p.starts_with(&trunk)).collect();
        let mut children: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for p in under.iter().filter(|p| p.len() > trunk.len()) {
            *children.entry(p[trunk.len()]).or_default() += 1;
        }
        match children.into_iter().max_by_key(|&(name, n)| (n, std::cmp::Reverse(name))) {
            Some((child, n)) if 10 * n >= 9 * under.len() => trunk.push(child),
            _ => break,
        }
    }
    let mut folders: std::collections::BTreeMap<String, Vec<usize>> = std::collections::BTreeMap::new();
    for (d, parts) in paths.iter().enumerate() {
        let depth = if parts.starts_with(&trunk) { trunk.len() + 1 } else { 1 };
        folders.entry(parts[..parts.len().min(depth)].join("/")).or_default().push(d);
    }
    let order = |d: &usize| blake3::hash(corpus.docs[*d].id.as_bytes());
    // Per folder, its candidates in the order it offers them.
    let mut queues: Vec<std::collections::VecDeque<(usize, Option<usize>)>> = folders
        .into_values()
        .map(|mut docs| {
            docs.sort_by_cached_key(|d| *order(d).as_bytes());
            if !by_section {
                return docs.into_iter().map(|d| (d, None)).collect();
            }
            let offset =
                |d: usize| f64::from(u16::from_le_bytes([order(&d).as_bytes()[0], order(&d).as_bytes()[1]])) / 65536.0;
            let mut spread: Vec<(f64, usize, usize)> = docs
                .iter()
                .flat_map(|&d| {
                    let n = usable[d].len() as f64;
                    usable[d].iter().enumerate().map(move |(r, &j)| ((r as f64 + offset(d)) / n, d, j))
                })
                .collect();
            spread.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            spread.into_iter().map(|(_, d, j)| (d, Some(j))).collect()
        })
        .collect();
    // Largest folders first (ties in name order): they take their turns first.
    queues.sort_by_key(|q| std::cmp::Reverse(q.len()));
    let sizes: Vec<usize> = queues.iter().map(|q| q.len()).collect();
    let shares = shares(wanted, &sizes);
    let mut out = Vec::with_capacity(wanted);
    let mut round = 0;
    while out.len() < wanted && shares.iter().any(|&s| s > round) {
        for (q, &share) in queues.iter_mut().zip(&shares) {
            if share > round {
                out.extend(q.pop_front());
            }
        }
        round += 1;
    }
    // What the shares could not place (folders with fewer candidates than their share).
    while out.len() < wanted && queues.iter().any(|q| !q.is_empty()) {
        for q in &mut queues {
            if out.len() < wanted {
                out.extend(q.pop_front());
            }
        }
    }
    out
}

/// Each folder's share of `wanted` stubs by its candidates (`sizes`, largest first): folders
/// with at least 2 % of all candidates share the stubs (all folders when none has), one each
/// first, then by the Sainte-Laguë divisors, never more than a folder holds.
fn shares(wanted: usize, sizes: &[usize]) -> Vec<usize> {
    let total: usize = sizes.iter().sum();
    let mut pool: Vec<usize> = (0..sizes.len()).filter(|&f| sizes[f] > 0 && 50 * sizes[f] >= total).collect();
    if pool.is_empty() {
        pool = (0..sizes.len()).filter(|&f| sizes[f] > 0).collect();
    }
    let mut share = vec![0; sizes.len()];
    for &f in pool.iter().take(wanted) {
        share[f] = 1;
    }
    let mut given = pool.len().min(wanted);
    while given < wanted {
        let quotient = |f: usize| sizes[f] as f64 / (2 * share[f] + 1) as f64;
        let Some(&next) = pool
            .iter()
            .filter(|&&f| share[f] < sizes[f])
            .max_by(|&&a, &&b| quotient(a).total_cmp(&quotient(b)).then(b.cmp(&a)))
        else {
            break;
        };
        share[next] += 1;
        given += 1;
    }
    share
}

/// Where a stub's label is: its page's title and its section's heading, and the headings the
/// corpus repeats (`Overview`, `Examples`: a question about one says nothing).
pub struct Place<'a> {
    pub title: &'a str,
    pub heading: &'a str,
    pub generic: &'a std::collections::HashSet<String>,
}

/// Headings (lower case) that at least three documents and 2 % of them use: generic, not a
/// topic.
fn generic_headings(corpus: &Corpus) -> std::collections::HashSet<String> {
    let mut docs: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for doc in &corpus.docs {
        let own: std::collections::HashSet<String> = doc
            .sections
            .iter()
            .filter(|s| !s.page)
            .map(|s| s.label.trim().trim_start_matches('#').trim().to_lowercase())
            .collect();
        for label in own {
            *docs.entry(label).or_insert(0) += 1;
        }
    }
    let least = (corpus.docs.len() / 50).max(3);
    docs.into_iter().filter(|(_, n)| *n >= least).map(|(label, _)| label).collect()
}

/// A page's title for a question's context: its declared title, else its first heading, else
/// its file name.
pub(crate) fn page_title(doc: &crate::input::corpus::Document) -> String {
    let heading = || doc.sections.iter().find(|s| !s.page).map(|s| s.label.trim_start_matches('#').trim().to_string());
    let title = doc.title.clone().filter(|t| !t.trim().is_empty()).or_else(heading).unwrap_or_else(|| {
        let name = doc.id.rsplit('/').next().unwrap_or(&doc.id);
        name.rsplit_once('.').map_or(name, |(stem, _)| stem).to_string()
    });
    short_title(&title).to_string()
}

/// A title as a person would name the page in a question: a long title's first part before a
/// separator (`LGPD - Capítulo IX: Da Autoridade …` → `LGPD`, `Install | Docs` → `Install`).
fn short_title(title: &str) -> &str {
    if title.split_whitespace().count() <= 6 {
        return title;
    }
    [" - ", " | ", " — ", " – ", ": "]
        .iter()
        .filter_map(|sep| title.split_once(sep).map(|(head, _)| head.trim()))
        .filter(|head| words(head))
        .min_by_key(|head| head.len())
        .unwrap_or(title)
}

/// Candidate phrasings of a stub's question from its section's own text (SPEC §9's drafts),
/// each naming the page it is about as a user would: the heading as a topic, the first
/// sentence as a stem, and the section's rarest exact terms (flags, field names, codes,
/// numbers) not proposed for an earlier stub (`used`); never a term that is markup
/// (punctuation, a table rule, a link reference, a code block). Drafts to edit: a question
/// copied from the text makes retrieval look easier than users make it.
pub fn drafts(
    place: &Place<'_>,
    text: &str,
    lang: AnalyzerKind,
    rarity: &crate::evaluate::exact_terms::Rarity,
    terms: &TermRarity,
    used: &mut std::collections::HashSet<String>,
) -> Vec<String> {
    let pt = lang == AnalyzerKind::Pt;
    let mut out = Vec::new();
    // What the reader sees: markup reduced to its words, code blocks and link targets left out.
    let source = text;
    let text = &crate::input::prose::prose(text);
    let shown = |s: &str| crate::input::prose::inline(s).replace('`', "");
    let heading = shown(place.heading.trim().trim_start_matches('#').trim());
    let heading = heading.trim().trim_end_matches('?');
    let title = shown(place.title.trim());
    let title = title.trim();
    let about = |topic: &str| match (pt, title.is_empty() || title == topic) {
        (true, true) => format!("O que diz {topic}?"),
        (true, false) => format!("O que {title} diz sobre {topic}?"),
        (false, true) => format!("What does {topic} say?"),
        (false, false) => format!("What does {title} say about {topic}?"),
    };
    // A heading that only repeats the page's title (`Settings` in `All settings`) adds no topic.
    let title_words = title.to_lowercase();
    let in_page_title = heading.to_lowercase() != title_words
        && heading.split_whitespace().all(|w| title_words.split_whitespace().any(|t| t == w.to_lowercase()));
    if words(heading) && !place.generic.contains(&heading.to_lowercase()) && !vague(heading) && !in_page_title {
        out.push(about(heading));
    }
    // A sentence two pages share (`Hugo is available in several editions`) is drafted once.
    if let Some(sentence) = first_sentence(text).filter(|s| used.insert(format!("\0{s}"))) {
        out.push(if pt { format!("É verdade que {sentence}?") } else { format!("Is it true that {sentence}?") });
    }
    let in_title = |q: String| {
        if title.is_empty() {
            format!("{q}?")
        } else if pt {
            format!("{q} em {title}?")
        } else {
            format!("{q} in {title}?")
        }
    };
    for term in exact_terms(text, source, rarity, terms)
        .into_iter()
        .filter(|t| one_name(t, title) && !heading.contains(t.as_str()) && used.insert(t.clone()))
        .take(3)
    {
        let command = term.starts_with('-') || term.starts_with('`');
        // A number or a code without a word in it (`13.853`, `55-A`) is asked about, not defined.
        let number = term.chars().filter(|c| c.is_alphabetic()).count() < 2;
        out.push(match (pt, command, number) {
            (_, false, true) => about(&term),
            (true, true, _) => in_title(format!("O que faz {term}")),
            (true, false, _) => in_title(format!("O que é {term}")),
            (false, true, _) => in_title(format!("What does {term} do")),
            (false, false, _) => in_title(format!("What is {term}")),
        });
    }
    out
}

/// Whether `text` reads as words: two letters or digits at least, and no table rule, link
/// reference or code fence.
fn words(text: &str) -> bool {
    let text = text.trim();
    let markup = ["|", "```", "][", "\n"].iter().any(|m| text.contains(m));
    let link_reference = text.starts_with('[') && text.ends_with(']');
    text.chars().filter(|c| c.is_alphanumeric()).count() >= 2 && !markup && !link_reference
}

/// Whether a heading names no topic of its own: only words any page could head a section with
/// (`Overview`, `Quick example`, `Other guides`, `Uso`, `Exemplos`).
fn vague(heading: &str) -> bool {
    const FILLER: &[&str] = &[
        "a", "an", "the", "of", "and", "other", "quick", "basic", "more", "some", "further", "general", "o", "os",
        "as", "de", "do", "da", "dos", "das", "e", "outros", "outras", "mais", "rápido", "básico",
    ];
    const GENERIC: &[&str] = &[
        "overview",
        "introduction",
        "example",
        "examples",
        "usage",
        "guide",
        "guides",
        "notes",
        "summary",
        "details",
        "information",
        "reference",
        "background",
        "structure",
        "visão",
        "geral",
        "introdução",
        "exemplo",
        "exemplos",
        "uso",
        "guia",
        "guias",
        "notas",
        "resumo",
        "detalhes",
        "informações",
        "referência",
    ];
    let lower = heading.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty() && !FILLER.contains(w)).collect();
    !words.is_empty() && words.iter().all(|w| GENERIC.contains(w))
}

/// Words by which a sentence points at the text around it (English and Portuguese), matched
/// between spaces once punctuation is spaces.
const POINTING: &[&str] = &[
    " following ",
    " below ",
    " above ",
    " here's ",
    " here is ",
    " this section ",
    " this page ",
    " this document ",
    " this guide ",
    " this tutorial ",
    " this chapter ",
    " this is an overview ",
    " this is an introduction ",
    " see ",
    " refer to ",
    " a seguir ",
    " abaixo ",
    " acima ",
    " seguinte ",
    " seguintes ",
    " esta seção ",
    " este documento ",
    " esta página ",
    " este guia ",
    " este capítulo ",
    " esta é uma visão geral ",
    " veja ",
    " consulte ",
];

/// Words that open a sentence by pointing back at the text before it, or continuing it.
const REFERRING: &[&str] = &[
    "this",
    "these",
    "that",
    "those",
    "it",
    "they",
    "and",
    "but",
    "or",
    "so",
    "also",
    "however",
    "now",
    "then",
    "next",
    "finally",
    "fortunately",
    "unfortunately",
    "here",
    "isso",
    "isto",
    "este",
    "esta",
    "estes",
    "estas",
    "ele",
    "ela",
    "eles",
    "elas",
    "e",
    "mas",
    "ou",
    "porém",
    "também",
    "agora",
    "então",
    "depois",
    "finalmente",
    "aqui",
];

/// Phrases that open a sentence by pointing back at what the text before it named.
const REFERRING_PHRASES: &[&str] = &[
    " for the latter ",
    " for the former ",
    " the latter ",
    " the former ",
    " in this case ",
    " neste caso ",
    " nesse caso ",
];

/// Verbs that open an instruction (`Create the flaskr directory`), which states nothing.
const IMPERATIVE: &[&str] = &[
    "access",
    "add",
    "adhere",
    "avoid",
    "be",
    "build",
    "call",
    "change",
    "check",
    "click",
    "configure",
    "consider",
    "copy",
    "create",
    "define",
    "disable",
    "display",
    "do",
    "don't",
    "download",
    "edit",
    "enable",
    "ensure",
    "enter",
    "follow",
    "generate",
    "go",
    "import",
    "insert",
    "install",
    "let's",
    "lets",
    "make",
    "note",
    "omit",
    "open",
    "place",
    "prefer",
    "print",
    "provide",
    "put",
    "read",
    "register",
    "remove",
    "replace",
    "resize",
    "run",
    "save",
    "select",
    "set",
    "specify",
    "start",
    "stop",
    "try",
    "type",
    "update",
    "use",
    "visit",
    "write",
    "abra",
    "adicione",
    "baixe",
    "clique",
    "copie",
    "crie",
    "defina",
    "digite",
    "especifique",
    "evite",
    "execute",
    "forneça",
    "instale",
    "leia",
    "salve",
    "selecione",
    "siga",
];

/// Words that open a sentence without being its verb: a subject (`Each section has`), a
/// preposition or conjunction opening a phrase (`Among the settings, …`), an adverb.
const NOT_A_VERB: &[&str] = &[
    "a",
    "an",
    "the",
    "all",
    "both",
    "each",
    "every",
    "any",
    "some",
    "most",
    "many",
    "few",
    "no",
    "none",
    "only",
    "even",
    "just",
    "often",
    "sometimes",
    "usually",
    "always",
    "never",
    "here",
    "there",
    "among",
    "in",
    "on",
    "at",
    "by",
    "for",
    "from",
    "with",
    "within",
    "without",
    "after",
    "before",
    "during",
    "under",
    "over",
    "unlike",
    "like",
    "as",
    "since",
    "when",
    "while",
    "if",
    "unless",
    "although",
    "because",
    "once",
    "to",
    "of",
    "about",
    "you",
    "we",
    "i",
    "he",
    "she",
    "one",
    "our",
    "your",
    "its",
    "their",
    "his",
    "her",
    "my",
    "what",
    "which",
    "who",
];

/// Words that begin what a verb acts on (`Generate the …`, `Returns a …`, `Adhere to …`).
const OBJECT_OPENERS: &[&str] = &[
    "a", "an", "the", "this", "these", "those", "one", "all", "each", "every", "your", "its", "their", "any", "to",
    "it", "them",
];

/// Whether a sentence opens with its verb, without a subject: an instruction (`Generate the
/// autocompletion script`, `Print a module graph`) or a function's description (`Returns the
/// …`), which claims nothing a question could ask back. English only: the second word begins
/// what the first acts on.
fn opens_with_its_verb(words: &[&str]) -> bool {
    let word =
        |i: usize| words.get(i).map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'').to_lowercase());
    let (Some(first), Some(second)) = (word(0), word(1)) else { return false };
    // `Internally, a …`: an opening word set apart, or an adverb, is not the verb.
    let set_apart = words[0].ends_with(',');
    !set_apart
        && !first.ends_with("ly")
        && first.chars().all(|c| c.is_ascii_alphabetic())
        && first.len() > 2
        && !NOT_A_VERB.contains(&first.as_str())
        && OBJECT_OPENERS.contains(&second.as_str())
}

/// Abbreviations in lower case that a period follows inside a sentence.
const LOWER_ABBREVIATIONS: &[&str] = &["p", "pp", "ex", "cf", "vs", "etc", "no", "nº", "al", "fig", "ed", "vol", "art"];

/// The first sentence of the text below its heading (at most 25 words): the first paragraph
/// holding a sentence end, cut there. A period after a short capitalised word or a number
/// (`Art. 5.`, `Dr.`) does not end a sentence; a colon does (a list follows).
fn first_sentence(text: &str) -> Option<String> {
    for paragraph in text.split("\n\n").skip(1) {
        let words: Vec<&str> = paragraph.split_whitespace().collect();
        // Prose only: not a heading, a table, a code block, a list of links or markup.
        if words.len() < 6 || words[0].starts_with(['#', '|', '`', '<', '[', '!', '{']) {
            continue;
        }
        let wordy = words.iter().filter(|w| w.chars().any(char::is_alphabetic)).count();
        if 5 * wordy < 4 * words.len() {
            continue;
        }
        // A list (`- P1: …`, `1. …`, `a) …`): its items are fragments of what introduced it.
        let enumerator = |w: &str| {
            w.strip_suffix(['.', ')']).is_some_and(|n| {
                !n.is_empty() && (n.chars().all(|c| c.is_ascii_digit()) || n.chars().count() == 1 && w.ends_with(')'))
            })
        };
        if ["-", "*", "+", "•"].contains(&words[0]) || enumerator(words[0]) {
            continue;
        }
        // A number's period ends a sentence unless an abbreviation precedes it (`Art. 5.`); no
        // period does before a word in lower case (`Tecnologia Ltda. é uma empresa`).
        let ends = |i: usize| {
            let w = words[i];
            let bare = w.trim_end_matches(['.', '?', '!', ':']);
            let period_only = w.ends_with('.') && !w.ends_with("..");
            let number = bare.chars().all(|c| c.is_ascii_digit());
            let after_abbreviation = i > 0 && words[i - 1].ends_with('.');
            let lower_next = words.get(i + 1).is_some_and(|n| n.starts_with(char::is_lowercase));
            // A short word in lower case (`come in.`) is no abbreviation but for the known ones.
            let short_word = bare.starts_with(char::is_lowercase)
                && bare.chars().all(char::is_alphabetic)
                && !LOWER_ABBREVIATIONS.contains(&bare);
            bare.len() < w.len()
                && !(period_only && lower_next)
                && (!period_only || bare.chars().count() > 3 && !number || number && !after_abbreviation || short_word)
        };
        // A "sentence" under six words is a label (`Art. 55-A.`, `Note:`): the next one is read.
        let mut start = 0;
        while let Some(end) = (start..words.len()).find(|&i| ends(i)) {
            let length = end + 1 - start;
            if length > 25 {
                break;
            }
            let sentence = words[start..=end].join(" ");
            // Prose a user could have written: no emphasis, links, escapes, and code spans only
            // of names a user types.
            let code_spans_typed = sentence.split('`').skip(1).step_by(2).all(typed_term);
            let markup = !code_spans_typed || ["**", "[", "\\", "{{", "<"].iter().any(|m| sentence.contains(m));
            // A bracket closed that the sentence did not open (or the reverse) cuts a sentence.
            let unbalanced = sentence.matches('(').count() != sentence.matches(')').count();
            let markup = markup || unbalanced;
            // A sentence that introduces what follows (a list, an example) or points at the page
            // around it says nothing a question could ask of it alone.
            let lower: String = sentence
                .to_lowercase()
                .chars()
                .map(|c| if c.is_alphanumeric() || c == '\'' { c } else { ' ' })
                .collect();
            let lower = format!(" {} ", lower.split_whitespace().collect::<Vec<_>>().join(" "));
            // A sentence that opens with a word pointing back or an instruction, or that uses
            // `this` as a whole thing (`To use this, …`), needs the text before it; one that
            // opens in lower case is the tail of another.
            let opening = lower.split_whitespace().next().unwrap_or("");
            // `this` anywhere (`for this setup to take effect`, `specify this value`) names what the
            // text before it set up.
            let bare_this = sentence
                .to_lowercase()
                .split_whitespace()
                .any(|w| ["this,", "this.", "this:", "this;", "isso,", "isto,"].contains(&w))
                || [" this ", " these "].iter().any(|p| lower.contains(p));
            let tail = words[start].starts_with(char::is_lowercase);
            // A demonstrative after a preposition early in the sentence (`The reverse of that
            // function`, `In this dictionary`) points back too; `routines that check` does not.
            let early: Vec<&str> = lower.split_whitespace().take(5).collect();
            let early_demonstrative = early.windows(2).any(|pair| {
                ["of", "in", "on", "with", "for", "from", "by", "at", "de", "em", "com", "para", "por"]
                    .contains(&pair[0])
                    && ["this", "that", "these", "those", "esse", "essa", "este", "esta", "isso", "isto"]
                        .contains(&pair[1])
            });
            let example =
                [" for example ", " for instance ", " e g ", " por exemplo "].iter().any(|p| lower.starts_with(p));
            let referring = REFERRING.contains(&opening)
                || REFERRING_PHRASES.iter().any(|p| lower.starts_with(p))
                || early_demonstrative
                || example
                || IMPERATIVE.contains(&opening)
                || opens_with_its_verb(&words[start..=end])
                || bare_this
                || tail;
            let pointing = sentence.ends_with(':') || referring || POINTING.iter().any(|p| lower.contains(p));
            // An item of an enumeration (`VII - os direitos …`, `a) …`) is a fragment of the
            // sentence that introduced the list.
            let first = words[start];
            let numeral = first.chars().all(|c| "IVXLCDM".contains(c));
            let bullet = ["*", "-", "+", "•"].contains(&first);
            let item = bullet
                || numeral && words.get(start + 1).is_some_and(|w| ["-", "–", "—"].contains(w))
                || first.ends_with(')');
            let pointing = pointing || item;
            // A question is no claim to ask about.
            let question = words[end].ends_with('?');
            if length >= 6 && !markup && !pointing && !question {
                return Some(sentence.trim_end_matches(['.', '?', '!', ':']).to_string());
            }
            start = end + 1;
        }
    }
    None
}

/// The section's exact terms a user would type verbatim, most distinctive first: command-line
/// flags and `code spans`, then codes, identifiers and numbers, then rare words; within each,
/// the fewest documents first.
fn exact_terms(
    text: &str,
    source: &str,
    rarity: &crate::evaluate::exact_terms::Rarity,
    terms: &TermRarity,
) -> Vec<String> {
    use crate::evaluate::exact_terms::Tag;
    let mut found: Vec<(u8, u32, String)> = Vec::new();
    // `--flag`, --flag and flag are one term, and so are a method and its class's (`as_view`,
    // `View.as_view`).
    let bare = |t: &str| t.trim_matches('`').trim_start_matches('-').to_lowercase();
    let same = |a: &str, b: &str| {
        let (a, b) = (bare(a), bare(b));
        a == b || a.ends_with(&format!(".{b}")) || b.ends_with(&format!(".{a}"))
    };
    // A flag's value in a code span (`--app hello:app2`) is an example's: no part of it is a term.
    let values: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.trim_start().starts_with('-'))
        .flat_map(|span| span.split_whitespace().skip(1))
        .collect();
    let mut push = |rank: u8, term: &str| {
        let term = term.trim();
        let bare_term = term.trim_matches('`');
        if typed_term(bare_term)
            && !values.iter().any(|v| v.contains(bare_term))
            && terms.rare(&bare_term.to_lowercase())
            && !((given_as_example(text, bare_term) || defined_in(source, bare_term))
                && terms.in_one_document(&bare_term.to_lowercase()))
            && term.chars().count() <= 40
            && !found.iter().any(|(_, _, t)| same(t, term))
        {
            found.push((rank, rarity.df(term.trim_matches('`')), term.to_string()));
        }
    };
    for (i, span) in text.split('`').enumerate() {
        let flag_and_value = span.trim_start().starts_with('-') && span.split_whitespace().nth(1).is_some();
        if i % 2 == 1 && !span.contains('\n') && !flag_and_value {
            push(0, &format!("`{span}`"));
        }
    }
    for word in text.split_whitespace() {
        let w = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_');
        if w.starts_with("--") && w.len() > 3
            || w.starts_with('-') && w.len() == 2 && w[1..].chars().all(char::is_alphabetic)
        {
            push(0, w);
        }
    }
    let roman = |t: &str| t.chars().all(|c| "IVXLCDM".contains(c));
    for t in crate::evaluate::exact_terms::tag(text, rarity, "") {
        if t.text.chars().count() < 3 || roman(&t.text) {
            continue;
        }
        // An acronym (`CSV`, `SHA1`), not a name written in capitals (`X-CSRFTOKEN`).
        let acronym_only = t.tags.contains(&Tag::AllCaps)
            && !t.tags.iter().any(|g| matches!(g, Tag::Code | Tag::CamelCase))
            && t.text.chars().all(char::is_alphanumeric);
        if acronym_only && !expanded_in(text, &t.text) {
            continue;
        }
        let rank = if t.tags.iter().any(|g| matches!(g, Tag::Code | Tag::CamelCase | Tag::AllCaps)) {
            1
        } else if t.tags.contains(&Tag::Rare) && !terms.common(&t.text.to_lowercase()) && proper_noun(text, &t.text) {
            2
        } else {
            continue;
        };
        push(rank, &t.text);
    }
    found.sort_by_key(|(rank, df, _)| (*rank, *df));
    found.into_iter().map(|(_, _, t)| t).collect()
}

/// Whether the section spells `acronym` out beside it ("Web Server Gateway Interface (WSGI)",
/// "WSGI (Web Server Gateway Interface)"): an acronym it only uses (`CSV` data, the Python `SDK`)
/// is a word everyone knows, not a term the section explains.
fn expanded_in(text: &str, acronym: &str) -> bool {
    const SMALL: [&str; 12] = ["of", "the", "and", "for", "to", "a", "de", "da", "do", "das", "dos", "e"];
    let letters: Vec<char> = acronym.chars().filter(|c| c.is_alphabetic()).flat_map(char::to_lowercase).collect();
    let small = |w: &str| SMALL.contains(&w.to_lowercase().as_str());
    // Whether the initials of `words`, small words aside, are the acronym's letters.
    let spells = |words: &[&str]| {
        let initials: Vec<char> = words
            .iter()
            .filter(|w| !small(w))
            .filter_map(|w| w.chars().find(|c| c.is_alphabetic()))
            .flat_map(char::to_lowercase)
            .collect();
        initials == letters
    };
    let spelt_before = text.match_indices(&format!("({acronym})")).any(|(at, _)| {
        let words: Vec<&str> = text[..at].split_whitespace().collect();
        let (mut start, mut kept) = (words.len(), 0);
        while start > 0 && kept < letters.len() {
            start -= 1;
            kept += usize::from(!small(words[start]));
        }
        spells(&words[start..])
    });
    let spelt_after = text.match_indices(acronym).any(|(at, _)| {
        let rest = text[at + acronym.len()..].trim_start_matches(' ');
        rest.strip_prefix('(')
            .and_then(|r| r.split_once(')'))
            .is_some_and(|(inside, _)| spells(&inside.split_whitespace().collect::<Vec<_>>()))
    });
    spelt_before || spelt_after
}

/// Whether `word` is written in `text` as a name is: capitalised inside a sentence (`Pantanal`,
/// `Koziarski`), not only where any word is (a sentence's or a line's start). A plain word
/// rare in the corpus is still a word a reader paraphrases, not a term typed verbatim.
fn proper_noun(text: &str, word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
        && text.match_indices(word).any(|(at, _)| {
            let before = text[..at].trim_end_matches([' ', '\t', '"', '\'', '(', '*', '_', '`']);
            let boundary = !text[at + word.len()..].starts_with(char::is_alphanumeric);
            boundary && before.chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == ',')
        })
}

/// Words that make a sentence an example or a pattern rather than a statement of the product.
const EXAMPLE_MARKERS: &[&str] =
    &["for instance", "example", "e.g.", "pattern", "suppose", "imagine", "exemplo", "p. ex.", "suponha", "padrão"];

/// Whether every sentence of `text` that holds `term` gives an example or a pattern ("For
/// instance, you might have a `BlogComment` model", "follow the pattern `applabel.X001`", "Here
/// are some example names:" and its list): a name made up for the example, not one the product
/// has (with [`TermRarity::in_one_document`]).
fn given_as_example(text: &str, term: &str) -> bool {
    // A sentence ends at `.`, `?` or `!` before white space, or at a blank line unless it ends
    // in a colon: a list it introduces is part of it.
    let ends_at = |i: usize, c: char| {
        let rest = &text[i + c.len_utf8()..];
        match c {
            '.' | '?' | '!' => rest.starts_with(char::is_whitespace),
            '\n' => {
                rest.trim_start_matches([' ', '\t']).starts_with('\n')
                    && !text[..i].trim_end_matches([' ', '\t']).ends_with(':')
            }
            _ => false,
        }
    };
    let mut found = false;
    for (at, _) in text.match_indices(term) {
        let start = text[..at].char_indices().rev().find(|&(i, c)| ends_at(i, c)).map_or(0, |(i, _)| i);
        let after = at + term.len();
        let end =
            text[after..].char_indices().find(|&(i, c)| ends_at(after + i, c)).map_or(text.len(), |(i, _)| after + i);
        let sentence = text[start..end].to_lowercase();
        if !EXAMPLE_MARKERS.iter().any(|m| sentence.contains(m)) {
            return false;
        }
        found = true;
    }
    found
}

/// Whether the section's `source` defines `term` (`def test_hello`, `class BlogComment`,
/// `g.lang_code = …`, `test_config=None`): a name an example makes up, not one the product has
/// (with [`TermRarity::in_one_document`]).
fn defined_in(source: &str, term: &str) -> bool {
    source.match_indices(term).any(|(at, _)| {
        let before = source[..at].trim_end_matches(|c: char| c == '.' || c.is_alphanumeric() || c == '_');
        let after = source[at + term.len()..].trim_start_matches([' ', '\t']);
        let whole = !source[at + term.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
        whole
            && (before.ends_with("def ")
                || before.ends_with("class ")
                || after.starts_with('=') && !after.starts_with("=="))
    })
}

/// Whether a typed term is one name an exact term of the page `title` can be: no marker the
/// page's markup left (`--more--`), no name an example makes up (`myDate`), and one token, or a
/// command of two whose page names it (`celery worker` on "Background Tasks with Celery"; not
/// `git clone` on "Documentation", nor `map or string`, a type described in words).
fn one_name(term: &str, title: &str) -> bool {
    let term = term.trim_matches('`');
    let made_up = term.strip_prefix("my").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()));
    let tokens: Vec<String> = term.split_whitespace().map(str::to_lowercase).collect();
    let title: Vec<String> =
        title.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let command = tokens.len() == 2 && tokens.iter().any(|t| title.contains(t));
    (tokens.len() == 1 || command) && !(term.starts_with("--") && term.ends_with("--")) && !made_up
}

/// Whether `term` is something a user types to find a page: letters (three at least) with the
/// joiners of names, flags, paths and versions, never markup (brackets, emphasis, escapes,
/// operators), a placeholder or an example's data (`post1.md`, `foo`, `example.com`).
fn typed_term(term: &str) -> bool {
    const MARKUP: &[char] = &[
        '[', ']', '{', '}', '(', ')', '<', '>', '*', '\\', '"', '\'', '=', '&', '|', '!', '$', '^', '~', '#', '@', '%',
        ';', ',', '+',
    ];
    const EXAMPLE: &[&str] = &[
        "example",
        "foo",
        "bar",
        "baz",
        "qux",
        "lorem",
        "ipsum",
        "xxx",
        "your",
        "placeholder",
        "my",
        "myapp",
        "mysite",
        "myproject",
        "appname",
        "modelname",
        "fieldname",
    ];
    let letters = term.chars().filter(|c| c.is_alphabetic()).count();
    let parts: Vec<String> =
        term.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()).map(str::to_lowercase).collect();
    // A file of an example: a stem with a digit or under three letters (`post1.md`, `a.md`).
    let example_file = term.rsplit_once('.').is_some_and(|(stem, ext)| {
        (1..=4).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphabetic())
            && (stem.chars().any(|c| c.is_ascii_digit()) || stem.chars().filter(|c| c.is_alphabetic()).count() < 3)
    });
    words(term)
        && letters >= 3
        && !term.contains(MARKUP)
        && !term.contains("  ")
        && !example_file
        && !parts.iter().any(|p| EXAMPLE.contains(&p.as_str()) || p.starts_with("your"))
}

/// The corpus's documents in lower case, to count the documents holding a term as written.
/// How rare a term is to a person: the corpus's documents in lower case (to count the
/// documents holding a term as written) and the language's common words (whole words of an
/// installed model's vocabulary: `fairly`, `stages`, `ownership` are words, not exact terms,
/// however few pages hold them).
pub struct TermRarity {
    documents: Vec<String>,
    common: std::collections::HashSet<String>,
    /// The stems of the common words, and the language's stemmer and word prefixes: an
    /// inflection (`weightings`, `disallows`) or a prefixed form (`unevaluated`) of a common
    /// word is a word too.
    stems: std::collections::HashSet<String>,
    stemmer: rust_stemmers::Stemmer,
    prefixes: &'static [&'static str],
}

impl TermRarity {
    pub fn of(corpus: &Corpus, common: std::collections::HashSet<String>, lang: AnalyzerKind) -> TermRarity {
        TermRarity::with(corpus.docs.iter().map(|d| d.text.to_lowercase()).collect(), common, lang)
    }

    /// From the documents in lower case and the language's common words.
    fn with(documents: Vec<String>, common: std::collections::HashSet<String>, lang: AnalyzerKind) -> TermRarity {
        let (algorithm, prefixes): (_, &'static [&'static str]) = match lang {
            AnalyzerKind::Pt => {
                (rust_stemmers::Algorithm::Portuguese, &["des", "in", "im", "re", "pre", "sub", "anti"])
            }
            _ => (
                rust_stemmers::Algorithm::English,
                &["un", "re", "non", "dis", "in", "im", "pre", "mis", "over", "under", "sub", "anti", "co"],
            ),
        };
        let stemmer = rust_stemmers::Stemmer::create(algorithm);
        let stems = common.iter().map(|w| stemmer.stem(w).into_owned()).collect();
        TermRarity { documents, common, stems, stemmer, prefixes }
    }

    /// Whether `word` (lower case) is a common word of the corpus's language, or an inflected
    /// or prefixed form of one.
    pub(crate) fn common(&self, word: &str) -> bool {
        let known = |w: &str| self.common.contains(w) || self.stems.contains(self.stemmer.stem(w).as_ref());
        known(word)
            || self
                .prefixes
                .iter()
                .any(|p| word.strip_prefix(p).is_some_and(|rest| rest.chars().count() >= 4 && known(rest)))
    }

    /// Whether `term` (lower case) occurs as a whole word in one document at most (`test_hello`
    /// is not in `test_hello_command`).
    pub(crate) fn in_one_document(&self, term: &str) -> bool {
        let letter = |c: char| c.is_alphanumeric() || c == '_';
        let word = |doc: &String| {
            doc.match_indices(term)
                .any(|(at, _)| !doc[..at].ends_with(letter) && !doc[at + term.len()..].starts_with(letter))
        };
        self.documents.iter().filter(|d| word(d)).take(2).count() <= 1
    }

    /// Whether `term` (lower case) is rare enough to be an exact term: in at most 0.5 % of the
    /// documents (two at least), as written (a generic flag such as `--version`, or a command
    /// holding it, is on every page of a tool); any term on a corpus too small to tell.
    pub(crate) fn rare(&self, term: &str) -> bool {
        use crate::evaluate::exact_terms::{RARE_MAX_DF_FRACTION, RARE_MIN_DOCS};
        let docs = &self.documents;
        let max_df = ((docs.len() as f64 * RARE_MAX_DF_FRACTION) as usize).max(2);
        docs.len() < RARE_MIN_DOCS || docs.iter().filter(|t| t.contains(term)).take(max_df + 1).count() <= max_df
    }
}

/// The whole words of the installed vocabularies of the corpus's language: the English
/// MiniLM's WordPiece vocabulary (30k entries), the multilingual e5's pieces that start a word
/// (English and Portuguese); empty when neither model is installed.
pub(crate) fn common_words(models_dir: &Path, lang: AnalyzerKind, mixed: bool) -> std::collections::HashSet<String> {
    let english = lang != AnalyzerKind::Pt || mixed;
    let read = |model: &str| -> Option<serde_json::Value> {
        let path = models_dir.join(model).join("tokenizer.json");
        serde_json::from_slice(&crate::input::text::read_bytes(&path, 64 << 20).ok()?).ok()
    };
    let mut words = std::collections::HashSet::new();
    let whole = |w: &str| w.chars().count() >= 3 && w.chars().all(char::is_alphabetic);
    if english {
        if let Some(vocab) = read("minilm-l6").as_ref().and_then(|t| t["model"]["vocab"].as_object()) {
            words.extend(vocab.keys().filter(|w| whole(w)).cloned());
        }
    }
    if !english || mixed {
        if let Some(pieces) = read("e5-small").as_ref().and_then(|t| t["model"]["vocab"].as_array()) {
            let starts = pieces.iter().filter_map(|p| p[0].as_str()?.strip_prefix('\u{2581}'));
            words.extend(starts.filter(|w| whole(w)).map(str::to_lowercase));
        }
    }
    words
}

/// Words a section needs of its own text (to its first subsection) to be a stub's label.
pub const MIN_STUB_WORDS: usize = 30;

/// Section `i`'s own text, to its first subsection.
pub(crate) fn own_text(doc: &crate::input::corpus::Document, i: usize) -> &str {
    let (start, end) = doc.own_span(i);
    &doc.text[start..end]
}

/// Whether section `i` of `doc` can hold an answer: at least `min_words` words before its
/// first subsection, and not mostly links (a table of contents, a link list).
pub(crate) fn answerable_section(doc: &crate::input::corpus::Document, i: usize, min_words: usize) -> bool {
    let own = own_text(doc, i);
    let body: Vec<&str> = own.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
    let links =
        body.iter().filter(|l| l.contains("](") || l.trim_start().starts_with(['-', '*']) && l.contains('[')).count();
    let words = own.split_whitespace().count();
    words >= min_words && links * 2 <= body.len()
}

/// `path` as seen from `base` (absolute when they share nothing).
fn pathdiff(path: &Path, base: &Path) -> PathBuf {
    match (path.canonicalize(), base.canonicalize()) {
        (Ok(p), Ok(b)) => {
            let common = p.components().zip(b.components()).take_while(|(x, y)| x == y).count();
            if common <= 1 {
                return p;
            }
            let mut rel = PathBuf::new();
            for _ in b.components().skip(common) {
                rel.push("..");
            }
            for c in p.components().skip(common) {
                rel.push(c);
            }
            rel
        }
        _ => path.to_path_buf(),
    }
}

/// The guide printed after `init`.
pub fn guide(i: &Initialised) -> String {
    format!(
        "{}\ndocument metadata (front matter and fields kept as meta): {}\nwrote {} and {} ({} stubs) for {} documents ({} sections, {} without a stub: link lists, sections spanning their whole document, or under {MIN_STUB_WORDS} words of their own when longer ones sufficed), BM25 analyzer {}, embedding model {} (experiment.toml says how to switch)\n\n\
         Next:\n\
         1. Fill each stub's \"question\" in golden.jsonl. Write it the way your users type it (short, misspelt,\n\
         \x20  without the document's words), not the way the document phrases it. Its label says where the\n\
         \x20  answer is (meta.snippet shows the text); keep it, or point it at the right section.\n\
         2. The u* stubs are unanswerable: questions users ask that your documents do not answer. They measure\n\
         \x20  whether retrieval (and your model) knows when to say nothing.\n\
         3. Each stub's meta.drafts proposes phrasings from its section's text (heading, first sentence, exact\n\
         \x20  terms): start from one, but rewrite it as a user would ask. A question left equal to a draft while\n\
         \x20  meta.draft is true is not counted (validate lists them); set \"draft\": false to accept one as is.\n\
         4. Why so many: below about 30 answerable cases a mean's 95% interval is wider than ±0.18, too wide\n\
         \x20  to tell configurations apart; add more where you can (see `ragsweep plan` after a first run).\n\
         5. ragsweep validate experiment.toml   (it lists the stubs still empty)\n\
         6. ragsweep run experiment.toml, then `ragsweep judge` what the cells returned that no label names\n",
        i.read,
        if i.metadata.is_empty() {
            "none".to_string()
        } else {
            i.metadata.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", ")
        },
        i.experiment.display(),
        i.golden.display(),
        i.stubs,
        i.documents,
        i.sections,
        i.skipped_sections,
        i.language,
        i.model
    )
}

/// A document or section id a label may name, for `ragsweep sections`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SectionEntry {
    pub id: String,
    pub doc: String,
    /// Cost-tokenizer tokens of its text.
    pub tokens: usize,
    pub first_words: String,
    pub label_hash: String,
}

/// Every document and its sections, in corpus order, each with its size and first words;
/// with `grep`, those whose id or text contains it (any case).
/// A `sections --grep` pattern: any case, as whole words unless `whole_words` is false.
pub struct Grep {
    pub pattern: String,
    pub whole_words: bool,
}

impl Grep {
    /// Whether `text` holds the pattern (any case), bounded by non-alphanumeric characters or
    /// the text's ends when whole words are asked for.
    pub fn finds(&self, text: &str) -> bool {
        let (text, pattern) = (text.to_lowercase(), self.pattern.to_lowercase());
        if pattern.is_empty() {
            return true;
        }
        text.match_indices(pattern.as_str()).any(|(at, found)| {
            !self.whole_words || {
                let before = text[..at].chars().next_back();
                let after = text[at + found.len()..].chars().next();
                let edge = |c: Option<char>, inner: Option<char>| {
                    c.is_none_or(|c| !c.is_alphanumeric()) || inner.is_none_or(|i| !i.is_alphanumeric())
                };
                edge(before, pattern.chars().next()) && edge(after, pattern.chars().next_back())
            }
        })
    }
}

pub fn sections(
    corpus: &Corpus,
    counter: &crate::stages::cost::Counter,
    grep: Option<&Grep>,
) -> Result<Vec<SectionEntry>> {
    let mut out = Vec::new();
    for id in corpus.label_ids() {
        let text = corpus.label_text(id).unwrap_or("");
        if let Some(g) = grep {
            // A document's entry is found by its indexed description too.
            let summary = corpus.doc_index(id).and_then(|d| corpus.summary(&corpus.docs[d])).unwrap_or("");
            if ![id, text, summary].iter().any(|s| g.finds(s)) {
                continue;
            }
        }
        let first: String = text.split_whitespace().take(12).collect::<Vec<_>>().join(" ");
        out.push(SectionEntry {
            id: id.to_string(),
            doc: id.split('#').next().unwrap_or(id).to_string(),
            tokens: counter.count(&[text.to_string()])?[0] as usize,
            first_words: first,
            label_hash: corpus.label_hash(id).unwrap_or_default(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_any_page_could_have_name_no_topic() {
        for heading in ["Overview", "Quick example", "Other guides", "Usage", "Visão geral", "Exemplos de uso"] {
            assert!(vague(heading), "{heading}");
        }
        for heading in ["Bound and unbound forms", "The Commands", "Usage of --gc", "Guia de férias"] {
            assert!(!vague(heading), "{heading}");
        }
    }

    #[test]
    fn an_ordinary_word_is_no_exact_term_however_few_pages_hold_it() {
        let texts: Vec<String> = (0..30).map(|i| format!("Page {i} covers the builder and its output.")).collect();
        let text = "Its Ownership stages are fairly simple; the Xylograph renderer does the rest of the rendering.";
        let docs: Vec<&str> = texts.iter().map(String::as_str).chain([text]).collect();
        let rarity = crate::evaluate::exact_terms::Rarity::of(docs.iter().copied());
        let rarity_of = |common: &[&str]| {
            let documents = docs.iter().map(|d| d.to_lowercase()).collect();
            TermRarity::with(documents, common.iter().map(|w| w.to_string()).collect(), AnalyzerKind::En)
        };
        let without_vocabulary = exact_terms(text, text, &rarity, &rarity_of(&[]));
        assert!(without_vocabulary.iter().any(|t| t == "Ownership"), "{without_vocabulary:?}");
        let common = ["ownership", "stages", "fairly", "simple", "renderer", "does", "rest"];
        let terms = exact_terms(text, text, &rarity, &rarity_of(&common));
        assert_eq!(terms, ["Xylograph"], "a name, not the words around it");
        // A plain word that no vocabulary holds is still a word, not a name.
        let plain = "Its ownership stages are fairly simple; the xylograph renderer does the rest of the rendering.";
        assert!(exact_terms(plain, plain, &rarity, &rarity_of(&[])).is_empty());
        // An inflected or prefixed form of a common word is a word too; a name is not.
        let words = rarity_of(&["weighting", "evaluated", "toolkit", "disallow"]);
        for word in ["weightings", "unevaluated", "toolkits", "disallows"] {
            assert!(words.common(word), "{word}");
        }
        assert!(!words.common("xylograph") && !words.common("pipefail"));
    }
}
