//! Grades a team's chat model suggests for pooled units: a help to the person judging, never a
//! judgment. They live apart, in `suggestions.jsonl` beside the judgments file (one line per
//! unit, `who = "model:NAME"`, the model's one-line reason as the note), and no run reads them
//! as labels. `judge` shows the suggestion beside the unit (`y` takes it, as the person's own
//! answer); how often people and the model agree is reported as a weighted Cohen's κ with its
//! confusion matrix, so a team sees what the model's grades are worth before leaning on them.
//!
//! The prompt follows UMBRELA (Upadhyay et al., TREC RAG 2024): the model grades on its 0–3
//! scale, mapped to ours as 3 → 2 (highly relevant), 2 → 1 (relevant), 1 and 0 → 0.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::chat::ChatModel;
use crate::error::{Error, Result};
use crate::input::corpus::Corpus;
use crate::input::judgments::{self, Judgment};

use super::PoolItem;

/// The file beside the judgments file.
pub const FILE_NAME: &str = "suggestions.jsonl";

/// Characters of a unit a prompt carries (its window around the question's rarest words).
const PROMPT_CHARS: usize = 6_000;

/// The prompt a unit is sent in unless the user gives their own (`{question}` and `{passage}`
/// are replaced).
pub const DEFAULT_PROMPT: &str = "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:\n\
0 = represent that the passage has nothing to do with the query,\n\
1 = represents that the passage seems related to the query but does not answer it,\n\
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information and\n\
3 = represents that the passage is dedicated to the query and contains the exact answer.\n\
Answer with JSON only: {\"score\": 0, \"reason\": \"one short line\"}\n\n\
Query: {question}\nPassage: {passage}";

/// The suggestions file beside `judgments` (the judgments file).
pub fn path_beside(judgments: &Path) -> PathBuf {
    judgments.parent().unwrap_or(Path::new(".")).join(FILE_NAME)
}

/// A suggested grade and the model's reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub grade: u32,
    pub reason: String,
    /// `model:NAME`.
    pub who: String,
}

/// Suggestions by (case, unit).
pub type Suggestions = HashMap<(String, String), Suggestion>;

/// The suggestions of a file, by (case, unit): the last line of each.
pub fn read(path: &Path) -> Result<Suggestions> {
    Ok(judgments::effective(judgments::read(path)?)
        .into_iter()
        .map(|(_, j)| ((j.case, j.id), Suggestion { grade: j.grade, reason: j.note.unwrap_or_default(), who: j.who }))
        .collect())
}

/// What asking for suggestions did.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Suggested {
    /// Units that got a suggestion now.
    pub new: usize,
    /// Units that had one already (from this model).
    pub already: usize,
    /// Answers without a readable score.
    pub unreadable: usize,
    pub usage: crate::chat::ChatUsage,
}

/// Asks `chat` to grade every unit of `pool` it has not graded yet, `concurrency` at a time, and
/// appends the suggestions to `path` (an interrupted run loses nothing: the answers are cached).
pub fn suggest(
    pool: &[PoolItem],
    corpus: &Corpus,
    chat: &ChatModel,
    path: &Path,
    prompt: &str,
) -> Result<(Suggestions, Suggested)> {
    for key in ["{question}", "{passage}"] {
        if !prompt.contains(key) {
            return Err(Error::Chat(format!("the grading prompt has no {key}")));
        }
    }
    let who = format!("model:{}", chat.spec.id);
    let mut known = read(path)?;
    known.retain(|_, s| s.who == who);
    let todo: Vec<&PoolItem> = pool.iter().filter(|p| !known.contains_key(&(p.case.clone(), p.id.clone()))).collect();
    let mut report = Suggested { already: pool.len() - todo.len(), ..Suggested::default() };
    // Units whose text the corpus no longer holds are not asked about.
    let asked: Vec<(&PoolItem, String)> = todo
        .into_iter()
        .filter_map(|item| {
            let (_, _, text) = super::unit_text(corpus, &item.id)?;
            let window = super::passage(text, &item.question, PROMPT_CHARS);
            Some((item, prompt.replace("{question}", &item.question).replace("{passage}", window.text.trim())))
        })
        .collect();
    let prompts: Vec<String> = asked.iter().map(|(_, p)| p.clone()).collect();
    let answers = chat.complete_all(&prompts, "grading")?;
    let mut found = Vec::new();
    for ((item, _), answer) in asked.iter().zip(answers) {
        let Some((grade, reason)) = read_score(&answer) else {
            report.unreadable += 1;
            continue;
        };
        let note = Some(reason);
        found.push(Judgment {
            case: item.case.clone(),
            id: item.id.clone(),
            grade,
            note,
            who: who.clone(),
            when: super::now(),
        });
    }
    if !found.is_empty() {
        judgments::append(path, &found)?;
    }
    report.new = found.len();
    report.usage = chat.usage();
    for j in found {
        known.insert((j.case, j.id), Suggestion { grade: j.grade, reason: j.note.unwrap_or_default(), who: j.who });
    }
    Ok((known, report))
}

/// The grade (ours, 0–2) and reason of an answer: `{"score": 0..3, "reason"}` anywhere in it.
fn read_score(answer: &str) -> Option<(u32, String)> {
    let value: serde_json::Value = serde_json::from_str(crate::chat::json_object(answer)?).ok()?;
    let score = value.get("score").or_else(|| value.get("grade"))?.as_u64().filter(|s| *s <= 3)?;
    let grade = match score {
        3 => 2,
        2 => 1,
        _ => 0,
    };
    let reason: String = value.get("reason").and_then(|r| r.as_str()).unwrap_or_default().chars().take(300).collect();
    Some((grade, reason.split_whitespace().collect::<Vec<_>>().join(" ")))
}

pub use crate::results::Agreement;

/// People's last grade of each unit (`judgments`) against the model's suggestion.
pub fn agreement(judged: &[(usize, Judgment)], suggested: &Suggestions) -> Agreement {
    let mut confusion = [[0usize; 3]; 3];
    for (_, j) in judged.iter().filter(|(_, j)| !j.who.starts_with("model:")) {
        if let Some(s) = suggested.get(&(j.case.clone(), j.id.clone())) {
            confusion[(j.grade as usize).min(2)][(s.grade as usize).min(2)] += 1;
        }
    }
    let units: usize = confusion.iter().flatten().sum();
    let n = units as f64;
    let rows: Vec<f64> = (0..3).map(|i| confusion[i].iter().sum::<usize>() as f64).collect();
    let cols: Vec<f64> = (0..3).map(|j| (0..3).map(|i| confusion[i][j]).sum::<usize>() as f64).collect();
    let weight = |i: usize, j: usize| ((i as f64 - j as f64) / 2.0).powi(2);
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..3 {
        for j in 0..3 {
            observed += weight(i, j) * confusion[i][j] as f64;
            expected += weight(i, j) * rows[i] * cols[j] / n.max(1.0);
        }
    }
    let kappa = (units > 0 && expected > 0.0).then(|| 1.0 - observed / expected);
    Agreement { units, confusion, kappa }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn umbrela_scores_map_to_our_grades_and_prose_is_no_score() {
        assert_eq!(read_score("{\"score\": 3, \"reason\": \"exact\"}"), Some((2, "exact".into())));
        assert_eq!(read_score("Sure: ```{\"score\": 2}```").map(|s| s.0), Some(1));
        assert_eq!(read_score("{\"score\": 1}").map(|s| s.0), Some(0));
        assert_eq!(read_score("{\"score\": 7}"), None);
        assert_eq!(read_score("relevant"), None);
    }

    #[test]
    fn weighted_kappa_is_one_on_agreement_and_zero_at_chance() {
        let j = |case: &str, grade: u32| {
            (
                1,
                Judgment {
                    case: case.into(),
                    id: "u".into(),
                    grade,
                    note: None,
                    who: "ana".into(),
                    when: String::new(),
                },
            )
        };
        let s = |grade: u32| Suggestion { grade, reason: String::new(), who: "model:m".into() };
        let judged = vec![j("a", 0), j("b", 1), j("c", 2), j("d", 0)];
        let same: HashMap<_, _> = judged.iter().map(|(_, j)| ((j.case.clone(), j.id.clone()), s(j.grade))).collect();
        assert_eq!(agreement(&judged, &same).kappa, Some(1.0));
        // Independent marginals: the model says 0 to half of each person's grade.
        let judged = vec![j("a", 0), j("b", 0), j("c", 2), j("d", 2)];
        let half: HashMap<_, _> = [("a", 0), ("b", 2), ("c", 0), ("d", 2)]
            .into_iter()
            .map(|(c, g)| ((c.to_string(), "u".to_string()), s(g)))
            .collect();
        assert!(agreement(&judged, &half).kappa.unwrap().abs() < 1e-12);
    }
}
