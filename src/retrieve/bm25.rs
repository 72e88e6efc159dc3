//! BM25 on tantivy postings with sweepable `k1` and `b`.
//!
//! tantivy's own scorer fixes k1 = 1.2 and b = 0.75, so scores are computed here from its
//! postings, document frequencies and (Lucene-compatible, one-byte) field norms. The index
//! depends only on the chunk set and analyzer; k1 and b are query-time parameters, so a
//! sweep over them reuses one index. Query terms repeated in a query count once per
//! repetition (Anserini's bag-of-words query).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::Postings;
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED};
use tantivy::{DocSet, Index, IndexReader, Searcher, TantivyDocument, Term, TERMINATED};

use crate::analyze::{Analyzer, TantivyTokenizer};
use crate::error::Result;
use crate::retrieve::hits::{top_hits, Allowed, Hit};
pub use crate::vocab::Bm25Params;

impl Default for Bm25Params {
    /// Anserini's BEIR settings.
    fn default() -> Self {
        Bm25Params { k1: 0.9, b: 0.4 }
    }
}

/// `ln(1 + (N − df + 0.5) / (df + 0.5))`, as Lucene and Anserini compute it.
fn idf(total_docs: u64, doc_freq: u64) -> f32 {
    (1.0 + ((total_docs - doc_freq) as f32 + 0.5) / (doc_freq as f32 + 0.5)).ln()
}

/// One query term's part of a chunk's BM25 score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermScore {
    pub term: String,
    /// Times the term occurs in the query (each occurrence counts).
    pub query_count: u32,
    /// Chunks that contain the term.
    pub doc_freq: u64,
    pub idf: f32,
    /// Occurrences in the chunk.
    pub tf: u32,
    /// `query_count · idf · (k1 + 1) · tf / (tf + k1 · (1 − b + b · length / avg_length))`.
    pub contribution: f32,
}

/// Why a chunk scored what it scored under BM25.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bm25Explanation {
    pub k1: f32,
    pub b: f32,
    pub avg_length: f32,
    /// The chunk's length in terms as the index stores it (Lucene's one-byte norm).
    pub length: u32,
    pub terms: Vec<TermScore>,
    /// The sum of the contributions: the chunk's score.
    pub score: f32,
}

pub struct Bm25Index {
    analyzer: Analyzer,
    /// Keeps the (in-memory) index alive and serves searchers.
    reader: IndexReader,
    text: Field,
    /// Per segment, tantivy doc id → chunk ordinal.
    ordinals: Vec<Vec<u32>>,
    num_chunks: usize,
}

const TOKENIZER: &str = "ragsweep";

fn schema() -> Schema {
    let mut schema = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER)
        .set_index_option(IndexRecordOption::WithFreqs)
        .set_fieldnorms(true);
    schema.add_text_field("text", TextOptions::default().set_indexing_options(indexing));
    schema.add_u64_field("ord", INDEXED | FAST);
    schema.build()
}

fn register(index: &Index, analyzer: &Analyzer) {
    index.tokenizers().register(TOKENIZER, tantivy::tokenizer::TextAnalyzer::from(TantivyTokenizer(analyzer.clone())));
}

/// The memory a writer sizes its term table for, for `bytes` of text: 40 times the text, at
/// least 1 MB and at most 200 MB. The table is allocated up front, so a small corpus (or a
/// test's) does not pay 200 MB per index; the writer grows past it as it needs.
fn writer_budget(bytes: usize) -> usize {
    bytes.saturating_mul(40).clamp(1 << 20, 200_000_000)
}

impl Bm25Index {
    /// Indexes `texts` (one per chunk, in ordinal order) in memory.
    pub fn build(analyzer: &Analyzer, texts: impl Iterator<Item = String>) -> Result<Self> {
        let index = Index::create_in_ram(schema());
        Self::fill(&index, analyzer, texts)?;
        Self::from_index(index, analyzer)
    }

    /// Indexes `texts` into the (empty) directory `dir`, for [`Bm25Index::open`].
    pub fn write(dir: &Path, analyzer: &Analyzer, texts: impl Iterator<Item = String>) -> Result<()> {
        let index = Index::create_in_dir(dir, schema())?;
        Self::fill(&index, analyzer, texts)
    }

    /// Opens an index written by [`Bm25Index::write`] with the same analyzer.
    pub fn open(dir: &Path, analyzer: &Analyzer) -> Result<Self> {
        Self::from_index(Index::open_in_dir(dir)?, analyzer)
    }

    fn fill(index: &Index, analyzer: &Analyzer, texts: impl Iterator<Item = String>) -> Result<()> {
        register(index, analyzer);
        let schema = index.schema();
        let (text, ord) = (schema.get_field("text")?, schema.get_field("ord")?);
        let texts: Vec<String> = texts.collect();
        let bytes = texts.iter().map(String::len).sum::<usize>();
        // One segment whatever the size (chunk ordinals in insertion order), without the
        // indexing threads and channels an IndexWriter starts for each index.
        let mut writer = tantivy::SingleSegmentIndexWriter::new(index.clone(), writer_budget(bytes))?;
        for (i, t) in texts.into_iter().enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(text, &t);
            doc.add_u64(ord, i as u64);
            writer.add_document(doc)?;
        }
        writer.finalize()?;
        Ok(())
    }

    fn from_index(index: Index, analyzer: &Analyzer) -> Result<Self> {
        register(&index, analyzer);
        let text = index.schema().get_field("text")?;
        let reader = index.reader_builder().reload_policy(tantivy::ReloadPolicy::Manual).try_into()?;
        let searcher = reader.searcher();
        let mut ordinals = Vec::new();
        for seg in searcher.segment_readers() {
            let col = seg.fast_fields().u64("ord")?;
            ordinals.push((0..seg.max_doc()).map(|d| col.first(d).unwrap_or(0) as u32).collect::<Vec<u32>>());
        }
        let num_chunks = ordinals.iter().map(Vec::len).sum();
        Ok(Bm25Index { analyzer: analyzer.clone(), reader, text, ordinals, num_chunks })
    }

    /// The analyzer the index was built and is queried with.
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    pub fn num_chunks(&self) -> usize {
        self.num_chunks
    }

    /// Bytes the index occupies.
    pub fn size_bytes(&self) -> u64 {
        let searcher = self.reader.searcher();
        searcher.space_usage().map(|u| u.total().get_bytes()).unwrap_or(0)
    }

    /// The query's terms with their repetition counts, in term order.
    pub fn query_terms(&self, query: &str) -> BTreeMap<String, u32> {
        let mut terms = BTreeMap::new();
        self.analyzer.for_each_term(query, |t| *terms.entry(t.text).or_insert(0) += 1);
        terms
    }

    /// The best `depth` chunks for `query`; with `allowed`, only those chunks compete.
    pub fn search(&self, query: &str, params: Bm25Params, depth: usize, allowed: Option<&Allowed>) -> Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let terms = self.query_terms(query);
        let mut scores = vec![0f32; self.num_chunks];
        let mut touched: Vec<u32> = Vec::new();
        self.accumulate(&searcher, &terms, params, allowed, |ord, s| {
            let slot = &mut scores[ord as usize];
            if *slot == 0.0 {
                touched.push(ord);
            }
            *slot += s;
        })?;
        let hits = touched.into_iter().map(|c| Hit { chunk: c, score: scores[c as usize] }).collect();
        Ok(top_hits(hits, depth))
    }

    fn accumulate(
        &self,
        searcher: &Searcher,
        terms: &BTreeMap<String, u32>,
        params: Bm25Params,
        allowed: Option<&Allowed>,
        mut add: impl FnMut(u32, f32),
    ) -> Result<()> {
        let Some((total_docs, _, norms)) = self.collection(searcher, params)? else { return Ok(()) };
        for (term_text, &count) in terms {
            let term = Term::from_field_text(self.text, term_text);
            let doc_freq = searcher.doc_freq(&term)?;
            if doc_freq == 0 {
                continue;
            }
            let weight = count as f32 * idf(total_docs, doc_freq) * (1.0 + params.k1);
            for (s, seg) in searcher.segment_readers().iter().enumerate() {
                let inverted = seg.inverted_index(self.text)?;
                let Some(mut postings) =
                    inverted.read_postings(&term, IndexRecordOption::WithFreqs).map_err(tantivy::TantivyError::from)?
                else {
                    continue;
                };
                let field_norms = seg.get_fieldnorms_reader(self.text)?;
                let ords = &self.ordinals[s];
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let ord = ords[doc as usize];
                    if allowed.is_none_or(|a| a.contains(ord)) {
                        let tf = postings.term_freq() as f32;
                        add(ord, weight * tf / (tf + norms[field_norms.fieldnorm_id(doc) as usize]));
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(())
    }

    /// The number of chunks, their average length, and per one-byte field norm the length
    /// term `k1 · (1 − b + b · len / avg_len)`; `None` for an empty index.
    fn collection(&self, searcher: &Searcher, params: Bm25Params) -> Result<Option<(u64, f32, [f32; 256])>> {
        let mut total_docs = 0u64;
        let mut total_tokens = 0u64;
        for seg in searcher.segment_readers() {
            total_docs += u64::from(seg.max_doc());
            total_tokens += seg.inverted_index(self.text)?.total_num_tokens();
        }
        if total_docs == 0 {
            return Ok(None);
        }
        let avg_len = total_tokens as f32 / total_docs as f32;
        let mut norms = [0f32; 256];
        for (id, slot) in norms.iter_mut().enumerate() {
            let len = FieldNormReader::id_to_fieldnorm(id as u8) as f32;
            *slot = params.k1 * (1.0 - params.b + params.b * len / avg_len);
        }
        Ok(Some((total_docs, avg_len, norms)))
    }

    /// Each query term's share of chunk `chunk`'s score, computed as [`Bm25Index::search`]
    /// computes it (same order of additions, so `score` equals the ranked score exactly).
    pub fn explain(&self, query: &str, params: Bm25Params, chunk: u32) -> Result<Bm25Explanation> {
        let searcher = self.reader.searcher();
        let (s, doc) = self
            .ordinals
            .iter()
            .enumerate()
            .find_map(|(s, ords)| ords.iter().position(|&o| o == chunk).map(|d| (s, d as u32)))
            .ok_or_else(|| crate::error::Error::NotFound(format!("chunk {chunk} is not in the index")))?;
        let seg = &searcher.segment_readers()[s];
        let field_norms = seg.get_fieldnorms_reader(self.text)?;
        let norm_id = field_norms.fieldnorm_id(doc);
        let (total_docs, avg_length, norms) = self.collection(&searcher, params)?.expect("the index holds the chunk");
        let inverted = seg.inverted_index(self.text)?;
        let mut terms = Vec::new();
        let mut score = 0f32;
        for (text, count) in self.query_terms(query) {
            let term = Term::from_field_text(self.text, &text);
            let doc_freq = searcher.doc_freq(&term)?;
            let mut tf = 0;
            if let Some(mut postings) =
                inverted.read_postings(&term, IndexRecordOption::WithFreqs).map_err(tantivy::TantivyError::from)?
            {
                if postings.doc() <= doc && postings.seek(doc) == doc {
                    tf = postings.term_freq();
                }
            }
            let idf = if doc_freq == 0 { 0.0 } else { idf(total_docs, doc_freq) };
            let mut contribution = 0f32;
            if tf > 0 {
                let weight = count as f32 * idf * (1.0 + params.k1);
                let tf = tf as f32;
                contribution = weight * tf / (tf + norms[norm_id as usize]);
                score += contribution;
            }
            terms.push(TermScore { term: text, query_count: count, doc_freq, idf, tf, contribution });
        }
        Ok(Bm25Explanation {
            k1: params.k1,
            b: params.b,
            avg_length,
            length: FieldNormReader::id_to_fieldnorm(norm_id),
            terms,
            score,
        })
    }

    /// tantivy's own BM25 (k1 = 1.2, b = 0.75) for the same query, to check this scorer.
    pub fn tantivy_reference(&self, query: &str, depth: usize) -> Result<Vec<Hit>> {
        use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
        let searcher = self.reader.searcher();
        let clauses: Vec<(Occur, Box<dyn Query>)> = self
            .query_terms(query)
            .into_iter()
            .map(|(t, n)| {
                let q = TermQuery::new(Term::from_field_text(self.text, &t), IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(BoostQuery::new(Box::new(q), n as f32)) as Box<dyn Query>)
            })
            .collect();
        let top =
            searcher.search(&BooleanQuery::new(clauses), &tantivy::collector::TopDocs::with_limit(depth.max(1)))?;
        Ok(top
            .into_iter()
            .map(|(score, addr)| Hit { chunk: self.ordinals[addr.segment_ord as usize][addr.doc_id as usize], score })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::AnalyzerKind;

    fn index(texts: &[&str]) -> Bm25Index {
        Bm25Index::build(&Analyzer::new(AnalyzerKind::En), texts.iter().map(|s| s.to_string())).unwrap()
    }

    const DOCS: &[&str] = &[
        "Vitamin D deficiency is associated with bone loss in older adults.",
        "Bone density scans measure bone mineral content.",
        "Vitamin C and the common cold: a randomized trial of vitamin supplements.",
        "Deficiency of iron causes anemia; iron supplements restore hemoglobin.",
        "The cold weather study found no effect on bone health.",
    ];

    #[test]
    fn equals_tantivy_scorer_at_its_fixed_parameters() {
        let idx = index(DOCS);
        for q in ["vitamin deficiency bone", "iron iron supplements", "cold", "bone bone density trial"] {
            let ours = idx.search(q, Bm25Params { k1: 1.2, b: 0.75 }, 10, None).unwrap();
            let theirs = idx.tantivy_reference(q, 10).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{q}");
            for t in &theirs {
                let o = ours.iter().find(|o| o.chunk == t.chunk).expect("same hits");
                assert!((o.score - t.score).abs() <= 1e-5 * t.score.abs().max(1.0), "{q}: {o:?} vs {t:?}");
            }
        }
    }

    #[test]
    fn hand_computed_score() {
        // One term in one of two docs: idf = ln(1 + (2 - 1 + 0.5) / 1.5) = ln 2.
        let idx = index(&["alpha beta", "gamma delta epsilon zeta"]);
        let p = Bm25Params { k1: 0.9, b: 0.4 };
        let hits = idx.search("alpha", p, 10, None).unwrap();
        let avg = 3.0f32;
        let expected = 2f32.ln() * 1.9 * 1.0 / (1.0 + 0.9 * (1.0 - 0.4 + 0.4 * 2.0 / avg));
        assert_eq!(hits.len(), 1);
        assert!((hits[0].score - expected).abs() < 1e-6, "{hits:?} vs {expected}");
    }

    #[test]
    fn explanations_add_up_to_the_ranked_scores_exactly() {
        let idx = index(DOCS);
        let p = Bm25Params { k1: 0.9, b: 0.4 };
        for q in ["vitamin deficiency bone", "iron iron supplements", "bone bone density trial", "nothing"] {
            for hit in idx.search(q, p, 10, None).unwrap() {
                let e = idx.explain(q, p, hit.chunk).unwrap();
                assert_eq!(e.score, hit.score, "{q}: chunk {}", hit.chunk);
                assert_eq!(e.terms.len(), idx.query_terms(q).len());
            }
        }
        let e = idx.explain("iron iron bone", p, 3).unwrap();
        let iron = e.terms.iter().find(|t| t.term == "iron").unwrap();
        assert_eq!((iron.query_count, iron.tf, iron.doc_freq), (2, 2, 1));
        let bone = e.terms.iter().find(|t| t.term == "bone").unwrap();
        assert_eq!((bone.tf, bone.contribution), (0, 0.0));
    }

    #[test]
    fn k1_and_b_change_scores_without_rebuilding() {
        let idx = index(DOCS);
        let a = idx.search("bone", Bm25Params { k1: 0.6, b: 0.4 }, 3, None).unwrap();
        let b = idx.search("bone", Bm25Params { k1: 1.2, b: 0.75 }, 3, None).unwrap();
        assert_ne!(a[0].score, b[0].score);
    }

    #[test]
    fn allowed_chunks_compete_inside_the_search() {
        let idx = index(DOCS);
        let allowed = Allowed::from_fn(DOCS.len(), |i| i == 4 || i == 2);
        let hits = idx.search("bone vitamin", Bm25Params::default(), 3, Some(&allowed)).unwrap();
        let ords: Vec<_> = hits.iter().map(|h| h.chunk).collect();
        assert_eq!(ords.len(), 2);
        assert!(ords.iter().all(|&o| o == 2 || o == 4));
    }

    #[test]
    fn a_written_index_reopens_with_the_same_scores() {
        let texts = ["cat sat on the mat", "dog ate the cat", "birds sing"];
        let analyzer = Analyzer::new(AnalyzerKind::En);
        let dir = tempfile::tempdir().unwrap();
        Bm25Index::write(dir.path(), &analyzer, texts.iter().map(|t| t.to_string())).unwrap();
        let opened = Bm25Index::open(dir.path(), &analyzer).unwrap();
        let params = Bm25Params::default();
        assert_eq!(opened.num_chunks(), 3);
        assert_eq!(
            opened.search("cat", params, 3, None).unwrap(),
            index(&texts).search("cat", params, 3, None).unwrap()
        );
    }
}
