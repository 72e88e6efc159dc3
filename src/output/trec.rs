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

/// One cell's TREC runs, as (file name suffix, bytes): `""` for the lists at the largest
/// cut-off, and `@k` for each smaller k at which some case's list is its own (a late filter
/// keeps what the user may see of the top k, which is not the first k of a longer list; an
/// engine plans each k), so that `trec_eval -m ndcg_cut.K` on the file of K reads exactly the
/// lists the matrix scored at K. Never the deeper list a budget packed.
pub fn trec_runs(results: &[CaseResult], ks: &[usize]) -> Vec<(String, Vec<u8>)> {
    let Some((&max_k, smaller)) = ks.split_last() else { return Vec::new() };
    let mut out = vec![(String::new(), trec_run(results, max_k))];
    for &k in smaller {
        let cut = format!("@{k}");
        if results.iter().any(|r| r.top_at.iter().any(|(c, _)| *c == cut)) {
            out.push((cut, trec_run(results, k)));
        }
    }
    out
}

/// One cell's judged lists at cut-off `k` as a TREC run: that k's own list (`top_at`) or the
/// first k of the ranking.
///
/// The score column encodes the rank: a list of n items scores n, n − 1, …, 1, whole numbers
/// that every scorer reads the same (trec_eval stores scores as 32-bit floats and breaks ties
/// by item id, so real scores that tie, or differ by less than a float32 step, would be
/// re-ordered). The real scores are in `per_query.jsonl`. A case with an empty list has no
/// line: `queries.txt` lists every evaluated case.
fn trec_run(results: &[CaseResult], k: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for c in results {
        let case = encode_id(&c.case);
        let list = c.list_at(k);
        let n = list.len();
        for (rank, key) in list.into_iter().enumerate() {
            writeln!(out, "{case} Q0 {} {} {} ragsweep-{}", encode_id(key), rank + 1, n - rank, c.cell)
                .expect("memory");
        }
    }
    out
}

/// `runs/queries.txt`: every evaluated case, `case split answerable` a line (ids encoded as in
/// the run files), so a scorer can count the cases whose list was empty.
pub fn queries(cases: &[crate::results::CaseInfo]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cases {
        writeln!(out, "{} {} {}", encode_id(&c.case), c.split.as_str(), u8::from(c.answerable)).expect("memory");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
