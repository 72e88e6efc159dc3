//! Scoring generated answers against the context actually sent (no model needed): citations
//! that point outside the context, citations of irrelevant items, refusals right and wrong,
//! answers given without evidence, and the share of person-labelled claims that are
//! supported. Every column is per case first, then a mean with its interval per split and tag.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Location, Result};
use crate::evaluate::metrics::Mean;
use crate::evaluate::stats;
use crate::input::golden::Split;
use crate::input::text;
use crate::results::{ContextItem, ContextLine};

/// Phrases that mark a refusal when an answer does not say `refused` (lower-cased match).
pub const REFUSAL_PHRASES: [&str; 12] = [
    "não sei",
    "não encontrei",
    "não há informação",
    "não é possível responder",
    "não tenho informação",
    "não consta",
    "i don't know",
    "i do not know",
    "cannot answer",
    "can't answer",
    "no information",
    "not enough information",
];

/// The columns, in order (their directions are in `evaluate::columns`).
pub const COLUMNS: [&str; 7] = [
    "citation_valid",
    "citation_relevant",
    "refusal_ok",
    "refusal_wrong",
    "answered_without_evidence",
    "faithfulness_manual",
    "cited_restricted",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    supported: Option<bool>,
    #[serde(default)]
    cites: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    id: String,
    #[serde(default)]
    answer: String,
    #[serde(default)]
    citations: Vec<String>,
    #[serde(default)]
    refused: Option<bool>,
    #[serde(default)]
    claims: Vec<RawClaim>,
}

/// One scored answer (`answers.jsonl`), with the reasons behind its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredAnswer {
    pub case: String,
    pub split: Split,
    pub answerable: bool,
    pub refused: bool,
    /// Whether the context held a relevant item.
    pub evidence_in_context: bool,
    /// Citations that name nothing in the context sent.
    pub invalid_citations: Vec<String>,
    /// Each column's value for this answer, `None` where its denominator is empty.
    pub values: BTreeMap<String, Option<f64>>,
}

/// Aggregates over the answers of a split and slice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerRow {
    pub split: String,
    pub slice: String,
    pub answers: usize,
    pub columns: BTreeMap<String, Mean>,
}

/// Which context item a citation names: a chunk, unit or document id, or a marker `[n]`.
fn resolve<'c>(citation: &str, context: &'c ContextLine) -> Result<Option<&'c ContextItem>, String> {
    let c = citation.trim();
    if let Some(inner) = c.strip_prefix('[') {
        let n: usize = inner
            .strip_suffix(']')
            .and_then(|n| n.trim().parse().ok())
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("citation {citation:?} is not a marker [n] with n ≥ 1"))?;
        return Ok(context.items.get(n - 1));
    }
    Ok(context.items.iter().find(|i| i.chunk == c || i.unit == c || i.doc == c))
}

fn refused(raw: &RawAnswer, phrases: &[String]) -> bool {
    raw.refused.unwrap_or_else(|| {
        let answer = raw.answer.to_lowercase();
        phrases.iter().any(|p| answer.contains(p.as_str()))
    })
}

/// Reads `answers` (JSONL) against the contexts sent; every problem is located, nothing is
/// scored until all lines read.
pub fn score(answers: &Path, contexts: &[ContextLine], phrases: &[String]) -> Result<Vec<ScoredAnswer>> {
    let by_case: HashMap<&str, &ContextLine> = contexts.iter().map(|c| (c.case.as_str(), c)).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for line in text::lines(answers)? {
        let (line_no, line) = line?;
        if line.trim().is_empty() {
            continue;
        }
        let at = Location::line(answers, line_no);
        let bad = |msg: String| Error::input(at.clone(), msg);
        let raw: RawAnswer = crate::input::corpus::parse_json_line(answers, line_no, &line)?;
        if let Some(first) = seen.insert(raw.id.clone(), line_no) {
            return Err(bad(format!("case {:?} is answered twice (first on line {first})", raw.id)));
        }
        let context =
            by_case.get(raw.id.as_str()).ok_or_else(|| bad(format!("case {:?} is not in the contexts", raw.id)))?;
        let mut invalid = Vec::new();
        let (mut relevant_cited, mut restricted_cited) = (0usize, 0usize);
        for c in &raw.citations {
            match resolve(c, context).map_err(&bad)? {
                Some(item) if !item.visible_to_user => {
                    restricted_cited += 1;
                    invalid.push(format!("{c} (restricted: the user may not see it)"));
                }
                Some(item) => relevant_cited += usize::from(item.relevant),
                None => invalid.push(c.clone()),
            }
        }
        let (mut labelled, mut supported) = (0usize, 0usize);
        for (i, claim) in raw.claims.iter().enumerate() {
            if claim.text.as_deref().is_none_or(|t| t.trim().is_empty()) {
                return Err(bad(format!("case {:?}: claim {} has no text", raw.id, i + 1)));
            }
            for c in &claim.cites {
                resolve(c, context).map_err(&bad)?;
            }
            if let Some(s) = claim.supported {
                labelled += 1;
                supported += usize::from(s);
            }
        }
        let is_refused = refused(&raw, phrases);
        let evidence = context.items.iter().any(|i| i.relevant);
        let flag = |b: bool| Some(if b { 1.0 } else { 0.0 });
        let n = raw.citations.len();
        let values: BTreeMap<String, Option<f64>> = [
            ("citation_valid", flag(invalid.is_empty())),
            ("citation_relevant", (n > 0).then(|| relevant_cited as f64 / n as f64)),
            ("refusal_ok", if context.answerable { None } else { flag(is_refused) }),
            ("refusal_wrong", if context.answerable && evidence { flag(is_refused) } else { None }),
            ("answered_without_evidence", if context.answerable && !evidence { flag(!is_refused) } else { None }),
            ("faithfulness_manual", (labelled > 0).then(|| supported as f64 / labelled as f64)),
            ("cited_restricted", flag(restricted_cited > 0)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        out.push(ScoredAnswer {
            case: raw.id,
            split: context.split,
            answerable: context.answerable,
            refused: is_refused,
            evidence_in_context: evidence,
            invalid_citations: invalid,
            values,
        });
    }
    if out.is_empty() {
        return Err(Error::input(Location::file(answers), "no answers"));
    }
    Ok(out)
}

/// Means with intervals per split (and `all`), and per golden tag within each split.
pub fn aggregate(scored: &[ScoredAnswer], tags: &HashMap<String, Vec<String>>) -> Vec<AnswerRow> {
    let mut groups: BTreeMap<(String, String), Vec<&ScoredAnswer>> = BTreeMap::new();
    for a in scored {
        for split in [a.split.as_str(), "all"] {
            groups.entry((split.to_string(), "all".to_string())).or_default().push(a);
            for t in tags.get(&a.case).into_iter().flatten() {
                groups.entry((split.to_string(), format!("tag:{t}"))).or_default().push(a);
            }
        }
    }
    groups
        .into_iter()
        .map(|((split, slice), answers)| {
            let columns = COLUMNS
                .iter()
                .map(|&c| {
                    let values: Vec<f64> = answers.iter().filter_map(|a| a.values[c]).collect();
                    let mean = Mean {
                        value: (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64),
                        n: values.len(),
                        ci: stats::bootstrap_mean(&values, stats::BOOTSTRAP_RESAMPLES, stats::SEED),
                    };
                    (c.to_string(), mean)
                })
                .collect();
            AnswerRow { split, slice, answers: answers.len(), columns }
        })
        .collect()
}

/// Scores `answers` against the run's contexts (`contexts` or `RUN/contexts.jsonl`), then
/// writes `RUN/answers.jsonl` and `RUN/answers.csv`; nothing is written when a line is bad.
pub fn score_run(run: &Path, answers: &Path, contexts: Option<&Path>, phrases: &[String]) -> Result<Vec<AnswerRow>> {
    let contexts_path = contexts.map_or_else(|| run.join("contexts.jsonl"), Path::to_path_buf);
    if !contexts_path.is_file() {
        return Err(Error::MissingContexts { path: contexts_path });
    }
    let contexts: Vec<ContextLine> = text::jsonl(&contexts_path)?;
    let scored = score(answers, &contexts, phrases)?;
    let cases: Vec<crate::results::CaseInfo> =
        if run.join("cases.jsonl").is_file() { text::jsonl(&run.join("cases.jsonl"))? } else { Vec::new() };
    let tags: HashMap<String, Vec<String>> = cases.into_iter().map(|c| (c.case, c.tags)).collect();
    let rows = aggregate(&scored, &tags);
    let mut jsonl = Vec::new();
    for a in &scored {
        serde_json::to_writer(&mut jsonl, a).expect("json");
        jsonl.push(b'\n');
    }
    crate::atomic::write_atomic(&run.join("answers.jsonl"), &jsonl)?;
    crate::atomic::write_atomic(&run.join("answers.csv"), &csv(&rows))?;
    Ok(rows)
}

/// A hard requirement `COLUMN=VALUE` on the run's scored answers: a line saying whether the
/// column's mean reaches the value in the column's direction (at least it for higher-is-better
/// columns, at most it for lower-is-better ones), listing the cases on the wrong side.
pub fn requirement(run: &Path, spec: &str) -> Result<(String, bool)> {
    let (column, want) = spec
        .split_once('=')
        .ok_or_else(|| Error::AnswerGate(format!("--require {spec}: expected COLUMN=VALUE, e.g. citation_valid=1")))?;
    let column = column.trim();
    let Some(direction) = crate::evaluate::columns::column(column).filter(|_| COLUMNS.contains(&column)) else {
        return Err(Error::AnswerGate(format!(
            "--require: unknown column {column:?} (columns: {})",
            COLUMNS.join(", ")
        )));
    };
    let want: f64 =
        want.trim().parse().map_err(|_| Error::AnswerGate(format!("--require {spec}: {want:?} is not a number")))?;
    direction.check_value(want).map_err(|e| Error::AnswerGate(format!("--require {spec}: {e}")))?;
    let path = run.join("answers.jsonl");
    if !path.is_file() {
        return Err(Error::AnswerGate(format!("{} is missing: score answers with `ragsweep answers`", path.display())));
    }
    let scored: Vec<ScoredAnswer> = text::jsonl(&path)?;
    let values: Vec<(&ScoredAnswer, f64)> =
        scored.iter().filter_map(|a| Some((a, a.values.get(column).copied().flatten()?))).collect();
    if values.is_empty() {
        return Err(Error::AnswerGate(format!(
            "--require {spec}: no answer has a value for {column} (its denominator is empty): nothing to require"
        )));
    }
    let mean = values.iter().map(|v| v.1).sum::<f64>() / values.len() as f64;
    let sign = direction.requirement_sign();
    let below: Vec<String> = values
        .iter()
        .filter(|v| !direction.meets(v.1, want))
        .map(|(a, v)| {
            if column == "citation_valid" {
                format!("{} ({})", a.case, a.invalid_citations.join(", "))
            } else {
                format!("{} ({v:.3})", a.case)
            }
        })
        .collect();
    Ok(if direction.meets(mean, want) {
        (format!("PASS: {column} = {mean:.4} {sign} {want} over {} answers", values.len()), true)
    } else {
        (
            format!(
                "FAIL: {column} = {mean:.4}, required {sign} {want} ({}), over {} answers; on the wrong side: {}",
                direction.direction(),
                values.len(),
                below.join("; ")
            ),
            false,
        )
    })
}

/// `answers.csv`: one row per split × slice, each column's mean, n and interval.
pub fn csv(rows: &[AnswerRow]) -> Vec<u8> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header = vec!["split".to_string(), "slice".to_string(), "answers".to_string()];
    for c in COLUMNS {
        header.extend([c.to_string(), format!("{c}_n"), format!("{c}_lo"), format!("{c}_hi")]);
    }
    w.write_record(&header).expect("memory");
    let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
    for r in rows {
        let mut rec = vec![r.split.clone(), r.slice.clone(), r.answers.to_string()];
        for c in COLUMNS {
            let m = &r.columns[c];
            rec.extend([num(m.value), m.n.to_string(), num(m.ci.map(|c| c.lo)), num(m.ci.map(|c| c.hi))]);
        }
        w.write_record(&rec).expect("memory");
    }
    w.into_inner().expect("memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(rank: usize, chunk: &str, relevant: bool) -> ContextItem {
        ContextItem {
            rank,
            chunk: chunk.into(),
            doc: chunk.split('@').next().unwrap().into(),
            unit: chunk.split('@').next().unwrap().into(),
            relevant,
            visible_to_user: true,
            score: 1.0,
            text: String::new(),
        }
    }

    fn context(case: &str, answerable: bool, items: Vec<ContextItem>) -> ContextLine {
        ContextLine {
            case: case.into(),
            question: "q".into(),
            split: Split::Tuning,
            answerable,
            cell: "c01".into(),
            k: 3,
            budget: None,
            items,
        }
    }

    fn scored(lines: &str) -> Result<Vec<ScoredAnswer>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        std::fs::write(&path, lines).unwrap();
        let contexts = vec![
            context("a", true, vec![item(1, "d1@0-10", true), item(2, "d2@0-10", false)]),
            context("b", true, vec![item(1, "d3@0-10", false)]),
            context("u", false, vec![item(1, "d4@0-10", false)]),
        ];
        let phrases: Vec<String> = REFUSAL_PHRASES.iter().map(|p| p.to_string()).collect();
        score(&path, &contexts, &phrases)
    }

    #[test]
    fn columns_by_hand_with_markers_and_empty_denominators() {
        let s = scored(concat!(
            r#"{"id": "a", "answer": "x", "citations": ["[1]", "d2@0-10", "[7]"], "claims": [{"text": "c1", "supported": true}, {"text": "c2", "supported": false}, {"text": "c3"}]}"#,
            "\n",
            r#"{"id": "b", "answer": "Segundo o texto, sim."}"#,
            "\n",
            r#"{"id": "u", "answer": "Não sei responder com o contexto."}"#,
            "\n"
        ))
        .unwrap();
        let v = |i: usize, c: &str| s[i].values[c];
        // a: [7] is outside a 2-item context; [1] is relevant, d2 is not: 1 of 3 relevant.
        assert_eq!(v(0, "citation_valid"), Some(0.0));
        assert_eq!(s[0].invalid_citations, ["[7]"]);
        assert!((v(0, "citation_relevant").unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(v(0, "refusal_wrong"), Some(0.0), "evidence in context, answered");
        assert_eq!(v(0, "answered_without_evidence"), None);
        assert_eq!(v(0, "faithfulness_manual"), Some(0.5), "1 of 2 labelled claims");
        // b: no citations (valid, relevance undefined), no evidence in context but answered.
        assert_eq!(v(1, "citation_valid"), Some(1.0));
        assert_eq!(v(1, "citation_relevant"), None);
        assert_eq!(v(1, "answered_without_evidence"), Some(1.0));
        assert_eq!(v(1, "faithfulness_manual"), None);
        // u: unanswerable, refusal detected from the phrase.
        assert!(s[2].refused);
        assert_eq!(v(2, "refusal_ok"), Some(1.0));
        assert_eq!(v(2, "refusal_wrong"), None);
        let rows = aggregate(&s, &HashMap::new());
        let all = rows.iter().find(|r| r.split == "all" && r.slice == "all").unwrap();
        assert_eq!(all.columns["citation_valid"].value, Some(2.0 / 3.0));
        assert_eq!(all.columns["citation_relevant"].n, 1);
        assert_eq!(all.columns["refusal_ok"].value, Some(1.0));
        // Without unanswerable cases, citations or claims the columns are undefined, not 0.
        let only_b = aggregate(&s[1..2], &HashMap::from([("b".to_string(), vec!["x".to_string()])]));
        let tag = only_b.iter().find(|r| r.slice == "tag:x" && r.split == "tuning").unwrap();
        for column in ["refusal_ok", "citation_relevant", "faithfulness_manual", "refusal_wrong"] {
            assert_eq!((tag.columns[column].value, tag.columns[column].n), (None, 0), "{column}");
        }
        assert_eq!(tag.columns["answered_without_evidence"].value, Some(1.0));
    }

    #[test]
    fn bad_lines_are_located() {
        let err = |text: &str| scored(text).unwrap_err().to_string();
        assert!(err(r#"{"id": "zz", "answer": "x"}"#).contains("answers.jsonl:1: case \"zz\" is not in the contexts"));
        assert!(
            err(r#"{"id": "a", "citations": ["[x]"]}"#).contains("answers.jsonl:1: citation \"[x]\" is not a marker")
        );
        assert!(err(r#"{"id": "a", "citations": ["[0]"]}"#).contains("is not a marker [n] with n ≥ 1"));
        assert!(err(r#"{"id": "a", "claims": [{"supported": true}]}"#)
            .contains("answers.jsonl:1: case \"a\": claim 1 has no text"));
        assert!(err("{\"id\": \"a\"}\n{\"id\": \"a\"}\n").contains("answers.jsonl:2: case \"a\" is answered twice"));
    }
}
