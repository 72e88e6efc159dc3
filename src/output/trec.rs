//! TREC run files (`qid Q0 item rank score tag`): exactly six whitespace-separated fields,
//! so ids that contain white space (section ids such as `politicas/ferias#Direito a férias`)
//! are percent-encoded there, reversibly: `%` → `%25`, each white-space character → its
//! UTF-8 bytes as `%XX`. `per_query.jsonl` keeps the readable ids.

use std::io::Write;

use crate::results::CaseResult;

/// `id` as one TREC token.
pub fn encode_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c == '%' || c.is_whitespace() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The id [`encode_id`] encoded.
pub fn decode_id(token: &str) -> String {
    let bytes = token.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()))
            .flatten();
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One cell's judged lists as a TREC run.
///
/// trec_eval ignores the rank column and re-sorts tied scores by item id, descending, while
/// ragsweep breaks ties by chunk id, ascending. So within a run of tied scores the written
/// score steps down by at most 1e-6 (staying above the next lower score), and any
/// trec_eval-compatible tool scores exactly the ranking ragsweep scored.
pub fn trec_run(results: &[CaseResult]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in results {
        let scores: Vec<f64> = c.ranking.iter().map(|(_, s)| f64::from(*s)).collect();
        let case = encode_id(&c.case);
        for (rank, ((key, _), score)) in c.ranking.iter().zip(tie_ordered(&scores)).enumerate() {
            writeln!(out, "{case} Q0 {} {} {score} ragsweep-{}", encode_id(key), rank + 1, c.cell).expect("memory");
        }
    }
    out
}

/// `scores` (descending) with tied runs made strictly decreasing, by steps of at most 1e-6.
fn tie_ordered(scores: &[f64]) -> Vec<f64> {
    let mut out = scores.to_vec();
    let mut i = 0;
    while i < scores.len() {
        let mut j = i + 1;
        while j < scores.len() && scores[j] == scores[i] {
            j += 1;
        }
        if j - i > 1 {
            let next = scores.get(j).copied().unwrap_or(scores[i] - 1.0);
            let step = ((scores[i] - next) / (j - i) as f64).min(1e-6);
            for (t, slot) in out[i..j].iter_mut().enumerate() {
                *slot = scores[i] - t as f64 * step;
            }
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tied_scores_become_strictly_decreasing_without_passing_the_next_score() {
        let out = tie_ordered(&[3.0, 2.0, 2.0, 2.0, 1.999_999_5, 1.0, 1.0]);
        assert!(out.windows(2).all(|w| w[0] > w[1]), "{out:?}");
        assert_eq!(out[0], 3.0);
        assert_eq!(out[1], 2.0);
        assert!(out[3] > 1.999_999_5);
        assert_eq!(out[5], 1.0);
        assert!((out[6] - (1.0 - 1e-6)).abs() < 1e-12);
    }

    #[test]
    fn ids_become_single_tokens_and_come_back() {
        for id in ["politicas/ferias#Direito a férias", "a%20b", "tab\there", "plain", "nbsp\u{a0}x", "%", "50%"] {
            let token = encode_id(id);
            assert!(!token.chars().any(char::is_whitespace), "{token}");
            assert_eq!(decode_id(&token), id);
        }
        assert_eq!(encode_id("a b%"), "a%20b%25");
    }
}
