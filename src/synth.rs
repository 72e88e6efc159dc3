//! Synthetic corpora for scaling benchmarks: any number of documents in BEIR layout, with a
//! golden set, so a grid can be timed at sizes no real labelled corpus reaches.
//!
//! Words are drawn from a Zipfian vocabulary of pronounceable pseudo-words; title and body
//! lengths are log-normal, by default fitted to SciFact (body words: median 200, log-sd
//! 0.40; title words: median 12.6, log-sd 0.41; SciFact's word frequencies fall with
//! rank^-1.17 between ranks 10 and 10,000). Each question takes 5 to 15 words, most from
//! one document's distinct words and the rest from the vocabulary, and that document is its
//! only relevant one; half the questions are `train` (tuning), half `test` (reserved).
//! Every document and question is a pure function of the seed and its number, so the same
//! parameters always write the same bytes. Pair the corpus with a `kind = "random"` model
//! for dense cells that need no embedding.

use std::fs;
use std::io::Write;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Zipf};
use rayon::prelude::*;

use crate::atomic::{write_atomic, write_atomic_with};
use crate::error::{Error, Result};

/// What to generate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SynthParams {
    pub documents: usize,
    pub questions: usize,
    /// Distinct words the vocabulary can draw from.
    pub vocabulary: usize,
    /// Zipf exponent of word frequencies by rank.
    pub zipf_exponent: f64,
    /// Median and log-standard deviation of body lengths, in words.
    pub body_median: f64,
    pub body_log_sd: f64,
    pub title_median: f64,
    pub title_log_sd: f64,
    pub seed: u64,
}

impl Default for SynthParams {
    fn default() -> Self {
        SynthParams {
            documents: 10_000,
            questions: 500,
            vocabulary: 1_000_000,
            zipf_exponent: 1.17,
            body_median: 196.0,
            body_log_sd: 0.40,
            title_median: 12.6,
            title_log_sd: 0.41,
            seed: 0,
        }
    }
}

/// What the corpus file holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthSummary {
    pub words: u64,
    pub bytes: u64,
}

/// Bodies are never shorter than this, titles never shorter than one word.
const MIN_BODY_WORDS: usize = 20;
/// Documents generated in parallel before they are written in order.
const BLOCK: usize = 8192;

struct Generator {
    params: SynthParams,
    zipf: Zipf<f64>,
    body: LogNormal<f64>,
    title: LogNormal<f64>,
}

impl Generator {
    fn new(params: &SynthParams) -> Result<Self> {
        let bad = |what: &str, e: &dyn std::fmt::Display| Error::Synth(format!("{what}: {e}"));
        if params.documents == 0 || params.vocabulary == 0 {
            return Err(Error::Synth("documents and vocabulary must be at least 1".into()));
        }
        Ok(Generator {
            zipf: Zipf::new(params.vocabulary as f64, params.zipf_exponent).map_err(|e| bad("zipf exponent", &e))?,
            body: LogNormal::new(params.body_median.ln(), params.body_log_sd).map_err(|e| bad("body lengths", &e))?,
            title: LogNormal::new(params.title_median.ln(), params.title_log_sd)
                .map_err(|e| bad("title lengths", &e))?,
            params: params.clone(),
        })
    }

    fn rng(&self, stream: u64, n: usize) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.params.seed);
        rng.set_stream(stream);
        rng.set_word_pos((n as u128) << 32);
        rng
    }

    fn rank(&self, rng: &mut ChaCha8Rng) -> u64 {
        self.zipf.sample(rng) as u64
    }

    /// Document `n`: (title ranks, body ranks).
    fn document(&self, n: usize) -> (Vec<u64>, Vec<u64>) {
        let mut rng = self.rng(1, n);
        let title_len = (self.title.sample(&mut rng).round() as usize).max(1);
        let body_len = (self.body.sample(&mut rng).round() as usize).max(MIN_BODY_WORDS);
        let title = (0..title_len).map(|_| self.rank(&mut rng)).collect();
        let body = (0..body_len).map(|_| self.rank(&mut rng)).collect();
        (title, body)
    }

    /// Question `n`: its relevant document and its words.
    fn question(&self, n: usize) -> (usize, Vec<u64>) {
        let mut rng = self.rng(2, n);
        let doc = rng.random_range(0..self.params.documents);
        let (title, body) = self.document(doc);
        let mut distinct: Vec<u64> = title.into_iter().chain(body).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let len = rng.random_range(5..=15);
        let words =
            (0..len)
                .map(|_| {
                    if rng.random_bool(0.7) {
                        distinct[rng.random_range(0..distinct.len())]
                    } else {
                        self.rank(&mut rng)
                    }
                })
                .collect();
        (doc, words)
    }
}

const CONSONANTS: &[u8] = b"bcdfghjklmnprstvz";
const VOWELS: &[u8] = b"aeiou";

/// The pseudo-word of vocabulary rank `rank` (1-based): consonant-vowel syllables, a
/// bijective numbering so every rank has its own word.
pub fn word(rank: u64) -> String {
    let base = (CONSONANTS.len() * VOWELS.len()) as u64;
    let mut n = rank;
    let mut out = Vec::new();
    while n > 0 {
        n -= 1;
        let s = (n % base) as usize;
        out.push(VOWELS[s % VOWELS.len()]);
        out.push(CONSONANTS[s / VOWELS.len()]);
        n /= base;
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII")
}

fn sentence(ranks: &[u64]) -> String {
    ranks.iter().map(|&r| word(r)).collect::<Vec<_>>().join(" ")
}

/// Writes `dir/corpus.jsonl`, `dir/queries.jsonl`, `dir/qrels/{train,test}.tsv` and
/// `dir/SOURCE.txt`, each through a temporary file renamed into place.
pub fn write(dir: &Path, params: &SynthParams, progress: &(dyn Fn(usize) + Sync)) -> Result<SynthSummary> {
    let generator = Generator::new(params)?;
    fs::create_dir_all(dir.join("qrels")).map_err(|e| Error::io(dir, e))?;
    let mut summary = SynthSummary { words: 0, bytes: 0 };
    write_atomic_with(&dir.join("corpus.jsonl"), |out| {
        for start in (0..params.documents).step_by(BLOCK) {
            let end = (start + BLOCK).min(params.documents);
            let lines: Vec<(String, u64)> = (start..end)
                .into_par_iter()
                .map(|n| {
                    let (title, body) = generator.document(n);
                    let line =
                        serde_json::json!({"_id": format!("d{n}"), "title": sentence(&title), "text": sentence(&body)});
                    (format!("{line}\n"), (title.len() + body.len()) as u64)
                })
                .collect();
            for (line, words) in lines {
                out.write_all(line.as_bytes())?;
                summary.words += words;
                summary.bytes += line.len() as u64;
            }
            progress(end);
        }
        Ok(())
    })?;
    let questions: Vec<(usize, Vec<u64>)> =
        (0..params.questions).into_par_iter().map(|n| generator.question(n)).collect();
    write_atomic_with(&dir.join("queries.jsonl"), |out| {
        for (n, (_, words)) in questions.iter().enumerate() {
            writeln!(out, "{}", serde_json::json!({"_id": format!("q{n}"), "text": sentence(words)}))?;
        }
        Ok(())
    })?;
    for (split, parity) in [("train", 0), ("test", 1)] {
        write_atomic_with(&dir.join("qrels").join(format!("{split}.tsv")), |out| {
            writeln!(out, "query-id\tcorpus-id\tscore")?;
            for (n, (doc, _)) in questions.iter().enumerate().filter(|(n, _)| n % 2 == parity) {
                writeln!(out, "q{n}\td{doc}\t1")?;
            }
            Ok(())
        })?;
    }
    let source = format!(
        "Synthetic corpus written by `ragsweep synth` {} (see src/synth.rs).\nNo real text: \
         pseudo-words from a Zipfian vocabulary.\n\n{}\n",
        env!("CARGO_PKG_VERSION"),
        toml::to_string(params).expect("parameters serialize")
    );
    write_atomic(&dir.join("SOURCE.txt"), source.as_bytes())?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_has_its_own_word() {
        let words: std::collections::HashSet<String> = (1..=20_000).map(word).collect();
        assert_eq!(words.len(), 20_000);
        assert_eq!(word(1), "ba");
        assert_eq!(word(86), "baba");
    }

    #[test]
    fn lengths_and_frequencies_follow_the_parameters() {
        let g = Generator::new(&SynthParams { documents: 2000, ..Default::default() }).unwrap();
        let mut lengths: Vec<usize> = (0..2000).map(|n| g.document(n).1.len()).collect();
        lengths.sort_unstable();
        let median = lengths[1000] as f64;
        assert!((median - 196.0).abs() < 15.0, "median body length {median}");
        let mut counts = std::collections::HashMap::<u64, u64>::new();
        for n in 0..2000 {
            for r in g.document(n).1 {
                *counts.entry(r).or_default() += 1;
            }
        }
        let ratio = counts[&1] as f64 / counts[&10] as f64;
        assert!((ratio.log10() - 1.17).abs() < 0.15, "rank 1 / rank 10 frequency {ratio}");
        assert_eq!(g.document(7), g.document(7), "a document depends on its number only");
        let (doc, words) = g.question(3);
        assert!(doc < 2000 && (5..=15).contains(&words.len()));
    }
}
