//! Per-case retrieval metrics over a judged list (SPEC §3), and their means.
//!
//! An undefined value is `None` (R empty), never 0, and is left out of the mean.

use std::fmt;
use std::str::FromStr;

use crate::evaluate::label::Judged;
pub use crate::vocab::{Mean, Metric, MetricAt};

impl Metric {
    /// The metrics of a judged list, at a cut-off k or a token budget.
    pub const ALL: [Metric; 6] =
        [Metric::Ndcg, Metric::Recall, Metric::Hit, Metric::Mrr, Metric::Ap, Metric::Precision];
    /// The token-level measures (section and evidence units): at every token budget, and at k
    /// when `metrics` lists them.
    pub const TOKEN: [Metric; 3] = [Metric::TokRecall, Metric::TokPrecision, Metric::TokIou];
    /// Every metric: the registry names, parsing, columns and messages read.
    pub const EVERY: [Metric; 10] = [
        Metric::Ndcg,
        Metric::Recall,
        Metric::Hit,
        Metric::Mrr,
        Metric::Ap,
        Metric::Precision,
        Metric::TokRecall,
        Metric::TokPrecision,
        Metric::TokIou,
        Metric::Judged,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Hit => "hit",
            Metric::Recall => "recall",
            Metric::Precision => "precision",
            Metric::Mrr => "mrr",
            Metric::Ndcg => "ndcg",
            Metric::Ap => "ap",
            Metric::TokRecall => "tok_recall",
            Metric::TokPrecision => "tok_precision",
            Metric::TokIou => "tok_iou",
            Metric::Judged => "judged",
        }
    }

    pub fn is_token_level(self) -> bool {
        Metric::TOKEN.contains(&self)
    }

    /// The metric's value at cut-off `k`.
    pub fn at(self, j: &Judged, k: usize) -> Option<f64> {
        let top = &j.items[..k.min(j.items.len())];
        if self == Metric::Judged {
            // As ir_measures' Judged@k: over k places, a short or empty list's missing places
            // unjudged.
            return Some(top.iter().filter(|i| i.judged).count() as f64 / k.max(1) as f64);
        }
        if self == Metric::Precision {
            return Some(top.iter().filter(|i| i.gain > 0.0).count() as f64 / k as f64);
        }
        if j.relevant == 0 {
            return None;
        }
        let r = j.relevant as f64;
        let first = top.iter().position(|i| i.gain > 0.0);
        Some(match self {
            Metric::Hit => f64::from(u8::from(first.is_some())),
            Metric::Mrr => first.map_or(0.0, |p| 1.0 / (p + 1) as f64),
            // Sums fold from +0.0: `Sum` of an empty iterator is -0.0, which would be written.
            Metric::Recall => top.iter().map(|i| f64::from(i.new)).fold(0.0, |a, b| a + b) / r,
            Metric::Ndcg => {
                let dcg =
                    top.iter().enumerate().map(|(i, it)| it.gain / (i as f64 + 2.0).log2()).fold(0.0, |a, b| a + b);
                let idcg: f64 = j.ideal.iter().take(k).enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).sum();
                if idcg > 0.0 {
                    dcg / idcg
                } else {
                    0.0
                }
            }
            Metric::Ap => {
                let mut hits = 0.0;
                let mut sum = 0.0;
                for (i, it) in top.iter().enumerate() {
                    if it.gain > 0.0 {
                        hits += 1.0;
                        sum += hits / (i + 1) as f64;
                    }
                }
                sum / r
            }
            Metric::Precision | Metric::Judged | Metric::TokRecall | Metric::TokPrecision | Metric::TokIou => {
                unreachable!("precision and judged return above; token-level measures are not list metrics")
            }
        })
    }
}

/// `ndcg@Bt` of a packed context (SPEC §3): its DCG over every packed item divided by the DCG
/// of the ideal packed context, R's best `ideal_items` grades; at most 1 (fragments of several
/// sections can hold more relevant items than their whole spans would); undefined when R is.
pub fn ndcg_packed(j: &Judged, ideal_items: usize) -> Option<f64> {
    if j.relevant == 0 {
        return None;
    }
    let dcg = j.items.iter().enumerate().map(|(i, it)| it.gain / (i as f64 + 2.0).log2()).fold(0.0, |a, b| a + b);
    let idcg: f64 = j.ideal.iter().take(ideal_items.max(1)).enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).sum();
    Some(if idcg > 0.0 { (dcg / idcg).min(1.0) } else { 0.0 })
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let names = |metrics: &[Metric]| metrics.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ");
        Metric::ALL.into_iter().chain(Metric::TOKEN).find(|m| m.name() == s).ok_or_else(|| {
            format!(
                "unknown metric {s:?} (known: {}, and for section and evidence units {})",
                names(&Metric::ALL),
                names(&Metric::TOKEN)
            )
        })
    }
}

impl MetricAt {
    pub fn at_k(metric: Metric, k: usize) -> MetricAt {
        MetricAt { metric, k, budget: false }
    }

    pub fn at_budget(metric: Metric, tokens: usize) -> MetricAt {
        MetricAt { metric, k: tokens, budget: true }
    }

    /// Where the metric is read: the top k, or the context packed into the budget.
    pub fn at(&self) -> crate::vocab::Cut {
        if self.budget {
            crate::vocab::Cut::Budget(self.k)
        } else {
            crate::vocab::Cut::K(self.k)
        }
    }

    /// `@10` or `@1024t`: the key of per-cut-off maps (`ctx_tokens`, `short_lists`, …).
    pub fn cut(&self) -> String {
        if self.budget {
            format!("@{}t", self.k)
        } else {
            format!("@{}", self.k)
        }
    }
}

impl fmt::Display for MetricAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.metric, self.cut())
    }
}

impl FromStr for MetricAt {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (m, k) = s.split_once('@').ok_or_else(|| format!("expected metric@k or metric@Bt, got {s:?}"))?;
        let (k, budget) = match k.strip_suffix('t') {
            Some(tokens) => (tokens, true),
            None => (k, false),
        };
        let k: usize = k.parse().map_err(|_| format!("bad cut-off in {s:?}"))?;
        if k == 0 {
            return Err(format!("cut-off must be at least 1 in {s:?}"));
        }
        let metric: Metric = m.parse()?;
        Ok(MetricAt { metric, k, budget })
    }
}

impl Mean {
    pub fn of(values: impl Iterator<Item = Option<f64>>) -> Mean {
        let (sum, n) = values.flatten().fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
        Mean { value: (n > 0).then(|| sum / n as f64), n, ci: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry holds every metric once, in place: a new variant does not compile here
    /// until it is placed in [`Metric::EVERY`], and then has a column and a name.
    #[test]
    fn every_metric_is_in_the_registry_with_a_column() {
        let place = |m: Metric| match m {
            Metric::Ndcg => 0,
            Metric::Recall => 1,
            Metric::Hit => 2,
            Metric::Mrr => 3,
            Metric::Ap => 4,
            Metric::Precision => 5,
            Metric::TokRecall => 6,
            Metric::TokPrecision => 7,
            Metric::TokIou => 8,
            Metric::Judged => 9,
        };
        for (i, m) in Metric::EVERY.into_iter().enumerate() {
            assert_eq!(place(m), i, "{m}");
            assert!(crate::evaluate::columns::column(&format!("{m}@10")).is_some(), "{m}");
        }
    }
    use crate::evaluate::label::Item;

    fn judged(gains: &[f64], relevant: usize, ideal: &[f64]) -> Judged {
        Judged {
            items: gains
                .iter()
                .enumerate()
                .map(|(i, &g)| Item {
                    key: format!("d{i}"),
                    score: 0.0,
                    gain: g,
                    new: u32::from(g > 0.0),
                    chunk: 0,
                    judged: true,
                })
                .collect(),
            relevant,
            ideal: ideal.to_vec(),
            returned: Vec::new(),
        }
    }

    fn at(m: Metric, j: &Judged, k: usize) -> f64 {
        m.at(j, k).unwrap()
    }

    #[test]
    fn hand_computed_values() {
        // L = [non, rel, non, rel], |R| = 3.
        let j = judged(&[0.0, 1.0, 0.0, 1.0], 3, &[1.0, 1.0, 1.0]);
        assert_eq!(at(Metric::Hit, &j, 1), 0.0);
        assert_eq!(at(Metric::Hit, &j, 2), 1.0);
        assert_eq!(at(Metric::Mrr, &j, 4), 0.5);
        assert_eq!(at(Metric::Mrr, &j, 1), 0.0);
        assert!((at(Metric::Recall, &j, 4) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(at(Metric::Precision, &j, 4), 0.5);
        // trec_eval P_k: divide by k even when the list is shorter.
        assert_eq!(at(Metric::Precision, &j, 10), 0.2);
        // AP = (1/2 + 2/4) / 3
        assert!((at(Metric::Ap, &j, 4) - (0.5 + 0.5) / 3.0).abs() < 1e-12);
        // nDCG@4 = (1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/2)
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2() + 0.5;
        assert!((at(Metric::Ndcg, &j, 4) - dcg / idcg).abs() < 1e-12);
    }

    #[test]
    fn rule_and_exception_recall_is_half() {
        let j = judged(&[1.0, 0.0], 2, &[1.0, 1.0]);
        assert_eq!(at(Metric::Recall, &j, 2), 0.5);
    }

    #[test]
    fn graded_ndcg_uses_linear_gain() {
        let j = judged(&[1.0, 2.0], 2, &[2.0, 1.0]);
        let expected = (1.0 + 2.0 / 3f64.log2()) / (2.0 + 1.0 / 3f64.log2());
        assert!((at(Metric::Ndcg, &j, 2) - expected).abs() < 1e-12);
    }

    #[test]
    fn empty_relevant_set_is_undefined_except_precision() {
        let j = judged(&[0.0, 0.0], 0, &[]);
        for m in [Metric::Hit, Metric::Recall, Metric::Mrr, Metric::Ndcg, Metric::Ap] {
            assert_eq!(m.at(&j, 2), None, "{m}");
        }
        assert_eq!(Metric::Precision.at(&j, 2), Some(0.0));
    }

    #[test]
    fn means_skip_undefined_and_count_n() {
        let m = Mean::of([Some(1.0), None, Some(0.0)].into_iter());
        assert_eq!(m, Mean { value: Some(0.5), n: 2, ci: None });
        assert_eq!(Mean::of(std::iter::empty()), Mean { value: None, n: 0, ci: None });
    }

    #[test]
    fn parses_metric_at_k() {
        assert_eq!("ndcg@10".parse::<MetricAt>().unwrap(), MetricAt::at_k(Metric::Ndcg, 10));
        assert_eq!("recall@1024t".parse::<MetricAt>().unwrap(), MetricAt::at_budget(Metric::Recall, 1024));
        assert_eq!(MetricAt::at_budget(Metric::TokIou, 512).to_string(), "tok_iou@512t");
        assert_eq!("tok_recall@5".parse::<MetricAt>().unwrap(), MetricAt::at_k(Metric::TokRecall, 5));
        assert!("ndcg@0".parse::<MetricAt>().is_err());
        assert!("foo@3".parse::<MetricAt>().is_err());
    }
}
