//! From one cell's case results to its matrix rows (one per split) and slice rows: means
//! with bootstrap intervals, leaks, short lists, restricted hits, context tokens and
//! abstention at the cell's floor.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::evaluate::abstention::{self, Outcome};
use crate::evaluate::causes::{Cause, Miss};
use crate::evaluate::exact_terms::{self, Rarity, Tag};
use crate::evaluate::metrics::{Mean, MetricAt};
use crate::evaluate::stats;
use crate::experiment::{Abstain, Cell, Experiment};
use crate::input::corpus::Corpus;
use crate::input::golden::{GoldenCase, Split};
use crate::results::{AbstainRow, CaseInfo, CaseResult, CellCost, Ordered, Row, SliceRow};
use crate::stages::cost::usd;

/// Each case's question, exact terms (tagged against the corpus's document frequencies)
/// and golden tags.
pub fn case_info(cases: &[GoldenCase], corpus: &Corpus) -> Vec<CaseInfo> {
    case_info_with(cases, corpus, &Rarity::of(corpus.docs.iter().map(|d| d.text.as_str())))
}

/// [`case_info`] with the corpus's word rarity computed once.
pub fn case_info_with(cases: &[GoldenCase], corpus: &Corpus, rarity: &Rarity) -> Vec<CaseInfo> {
    cases
        .par_iter()
        .map(|c| CaseInfo {
            case: c.id.clone(),
            question: c.question.clone(),
            split: c.split.unwrap_or(Split::Tuning),
            answerable: c.answerable,
            restricted: c.is_restricted(),
            exact_terms: exact_terms::tag(&c.question, rarity, &exact_terms::relevant_text(c, corpus)),
            tags: c.tags.clone(),
            meta: c.meta.clone(),
        })
        .collect()
}

/// Each case's slices: its distinct exact-term tags, then its golden tags.
pub fn case_slices(info: &[CaseInfo]) -> HashMap<String, (Vec<Tag>, Vec<String>)> {
    info.iter()
        .map(|c| {
            let mut tags: Vec<Tag> = c.exact_terms.iter().flat_map(|t| t.tags.iter().copied()).collect();
            tags.sort();
            tags.dedup();
            (c.case.clone(), (tags, c.tags.clone()))
        })
        .collect()
}

/// Every golden tag of a run, sorted.
pub fn golden_tags(info: &[CaseInfo]) -> Vec<String> {
    let mut tags: Vec<String> = info.iter().flat_map(|c| c.tags.iter().cloned()).collect();
    tags.sort();
    tags.dedup();
    tags
}

/// Per cut-off (`@k`), the cell's misses on one split by cause (every cause, in order).
pub fn miss_counts<'m>(ks: &[usize], misses: impl Iterator<Item = &'m Miss>) -> Ordered<Ordered<usize>> {
    let mut n: HashMap<(usize, Cause), usize> = HashMap::new();
    for m in misses {
        *n.entry((m.k, m.cause)).or_insert(0) += 1;
    }
    Ordered::at_k(
        ks,
        ks.iter().map(|&k| {
            Ordered(
                Cause::ALL.iter().map(|c| (c.as_str().to_string(), n.get(&(k, *c)).copied().unwrap_or(0))).collect(),
            )
        }),
    )
}

/// Each column's mean with its bootstrap interval, from the column's per-case values.
pub fn means(names: &[String], values: &[Vec<Option<f64>>]) -> Ordered<Mean> {
    let cis = stats::bootstrap_means(values, stats::BOOTSTRAP_RESAMPLES, stats::SEED);
    Ordered(
        names
            .iter()
            .cloned()
            .zip(values.iter().zip(cis).map(|(c, ci)| Mean { ci, ..Mean::of(c.iter().copied()) }))
            .collect(),
    )
}

/// A cell's matrix rows (one per split) and slice rows; latency is filled in after the timed pass.
/// Per k: the cases whose list was shorter than the oracle's, and the mean share of the
/// oracle's top k returned; empty for a cell without an oracle.
fn parity_of(keys: &[String], mine: &[&CaseResult]) -> (Ordered<usize>, Ordered<Option<f64>>) {
    if mine.iter().all(|r| r.parity.is_empty()) {
        return (Ordered::default(), Ordered::default());
    }
    let under =
        (0..keys.len()).map(|i| mine.iter().filter(|r| r.parity.get(i).is_some_and(|p| p.under_return)).count());
    let recall = (0..keys.len()).map(|i| {
        let values: Vec<f64> = mine.iter().filter_map(|r| r.parity.get(i)?.recall_vs_oracle).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    });
    (Ordered::of_keys(keys, under), Ordered::of_keys(keys, recall))
}

/// What a run measured of a cell beside its case results: its cost, its latency and the plan
/// its engine chose. A run measures it; `rescore` and `merge` carry the written row's as is, so
/// the one function that makes a row ([`aggregate_cell`]) makes the same row in all three.
#[derive(Debug, Clone)]
pub struct Measured {
    pub cost: CellCost,
    pub latency: Option<crate::results::Latency>,
    pub engine_plan: Ordered<String>,
}

impl Measured {
    /// What `row` (a row a run wrote) says was measured.
    pub fn of(row: &Row) -> Measured {
        Measured { cost: row.cost.clone(), latency: row.latency.clone(), engine_plan: row.engine_plan.clone() }
    }
}

/// A cell's rows (one per split with cases) and slices, from its case results and what the run
/// measured of it; standing (`vs best`) is left to the selection over every finished row.
pub fn aggregate_cell(
    exp: &Experiment,
    cell: &Cell,
    results: &[CaseResult],
    slices_of: &HashMap<String, (Vec<Tag>, Vec<String>)>,
    golden_tags: &[String],
    measured: &Measured,
) -> (Vec<Row>, Vec<SliceRow>) {
    let cost = &measured.cost;
    let columns = exp.columns();
    let names: Vec<String> = columns.iter().map(MetricAt::to_string).collect();
    let means_of = |mine: &[&CaseResult]| -> Ordered<Mean> {
        means(&names, &(0..columns.len()).map(|i| mine.iter().map(|r| r.values[i]).collect()).collect::<Vec<_>>())
    };
    let outcomes = |split: Split| -> Vec<Outcome> {
        results
            .iter()
            .filter(|r| r.split == split)
            .map(|r| Outcome { top_score: r.top_score, answerable: r.answerable })
            .collect()
    };
    let floor = cell.abstain.map(|a| match a {
        Abstain::Below(floor) => (floor, false),
        Abstain::Calibrate => (abstention::calibrate(&outcomes(Split::Tuning)), true),
    });
    let empty = (Vec::new(), Vec::new());
    let slices_for = |r: &CaseResult| slices_of.get(&r.case).unwrap_or(&empty);
    let ks = &exp.k;
    let cuts = exp.cut_keys();
    let mut rows = Vec::new();
    let mut slices = Vec::new();
    for split in [Split::Tuning, Split::Reserved] {
        let mine: Vec<&CaseResult> = results.iter().filter(|r| r.split == split).collect();
        if mine.is_empty() {
            continue;
        }
        let ctx_tokens: Vec<f64> = (0..cuts.len())
            .map(|i| mine.iter().map(|r| f64::from(r.ctx_tokens[i])).sum::<f64>() / mine.len() as f64)
            .collect();
        let usd_per_1k: Vec<f64> = ctx_tokens
            .iter()
            .map(|&t| 1000.0 * (usd(t, exp.prices.llm_usd_per_1m_input_tokens) + cost.usd_per_query))
            .collect();
        let parity = parity_of(&cuts[..ks.len()], &mine);
        rows.push(Row {
            cell: cell.id.clone(),
            label: cell.label(),
            config: Ordered(cell.config().into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
            filter: cell.filter,
            split,
            cases: mine.len(),
            unanswerable: mine.iter().filter(|r| !r.answerable).count(),
            leaks: mine.iter().map(|r| r.leaks).sum(),
            restricted_hits: mine.iter().filter(|r| r.restricted_hit).count(),
            spanning_hits: {
                let (hits, spanning) = mine.iter().fold((0, 0), |(h, s), r| (h + r.spanning.0, s + r.spanning.1));
                (hits > 0).then(|| f64::from(spanning) / f64::from(hits))
            },
            p_vs_best: None,
            vs_best: None,
            diff_vs_best: None,
            misses: miss_counts(ks, mine.iter().flat_map(|r| &r.misses)),
            unjudged_above: crate::vocab::judged_k(ks).map_or((0, 0), |k| {
                let counts: Vec<usize> = mine
                    .iter()
                    .filter(|r| r.answerable)
                    .map(|r| r.unjudged.iter().filter(|u| u.1 < r.first_relevant.unwrap_or(k as u32 + 1)).count())
                    .collect();
                (counts.iter().sum(), counts.iter().filter(|&&n| n > 0).count())
            }),
            latency: measured.latency.clone(),
            cost: cost.clone(),
            ctx_tokens: Ordered::of_keys(&cuts, ctx_tokens),
            usd_per_1k_queries: Ordered::of_keys(&cuts, usd_per_1k),
            short_lists: Ordered::of_keys(&cuts, (0..cuts.len()).map(|i| mine.iter().filter(|r| r.short[i]).count())),
            under_return: parity.0,
            recall_vs_oracle: parity.1,
            engine_plan: measured.engine_plan.clone(),
            abstain: floor.map(|(floor, calibrated)| AbstainRow {
                floor,
                calibrated,
                rates: abstention::rates(&outcomes(split), floor),
            }),
            metrics: means_of(&mine),
        });
        let mut parts: Vec<(String, Vec<&CaseResult>)> = vec![
            ("exact_term".into(), mine.iter().copied().filter(|r| !slices_for(r).0.is_empty()).collect()),
            ("other".into(), mine.iter().copied().filter(|r| slices_for(r).0.is_empty()).collect()),
        ];
        for tag in Tag::ALL {
            parts
                .push((tag.as_str().into(), mine.iter().copied().filter(|r| slices_for(r).0.contains(&tag)).collect()));
        }
        for tag in golden_tags {
            parts
                .push((format!("tag:{tag}"), mine.iter().copied().filter(|r| slices_for(r).1.contains(tag)).collect()));
        }
        for (slice, members) in parts.into_iter().filter(|(_, m)| !m.is_empty()) {
            slices.push(SliceRow {
                cell: cell.id.clone(),
                split,
                slice,
                cases: members.len(),
                metrics: means_of(&members),
            });
        }
    }
    (rows, slices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn miss(k: usize, cause: Cause) -> Miss {
        Miss::new(k, cause, None, String::new())
    }

    #[test]
    fn miss_counts_list_every_cause_at_every_cut_off() {
        let misses = [miss(1, Cause::Cutoff), miss(1, Cause::Cutoff), miss(5, Cause::Ranking)];
        let c = miss_counts(&[1, 5], misses.iter());
        assert_eq!(c.get("@1").unwrap().get("cutoff"), Some(&2));
        assert_eq!(c.get("@5").unwrap().get("ranking"), Some(&1));
        assert_eq!(c.get("@5").unwrap().0.len(), Cause::ALL.len());
    }
}
