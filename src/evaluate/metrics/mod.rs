//! Per-case retrieval metrics over a judged list (SPEC §3), and their means.
//!
//! Each metric is a [`Measure`] in its own file (the token-level ratios of an `Overlap` share
//! `tokens.rs`), listed once with its name in `vocab::metric_list`, in the order columns and the
//! default `metrics` list them, from which [`REGISTRY`] is made: a new metric is its file and its
//! line there. An undefined value is `None` (R empty), never 0, and is left out of the mean.

mod ap;
mod hit;
mod judged;
mod mrr;
mod ndcg;
mod precision;
mod recall;
mod tokens;

use std::fmt;
use std::str::FromStr;

use crate::evaluate::context::Overlap;
use crate::evaluate::label::Judged;
pub use crate::vocab::{Mean, Metric, MetricAt};

/// The registry from [`crate::vocab::metric_list`]: each metric's measure, in column order.
macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal $(| $alias:literal)* => $measure:expr,)*) => {
        /// Every metric and what measures it, in column order.
        const REGISTRY: &[(Metric, &dyn Measure)] = &[$((Metric::$variant, &$measure)),*];
    };
}

crate::vocab::metric_list!(registry);

/// What a metric reads, which decides where an experiment measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The ranked list's grades: at every cut-off k and token budget; the default `metrics`.
    Rank,
    /// The relevant text's tokens in the context: for section and evidence units, at every
    /// budget, and at k when `metrics` lists them.
    Token,
    /// How complete the labels are (SPEC §9): at every cut-off and budget, never selected on.
    Completeness,
}

/// One case's list as a metric reads it.
pub struct Case<'a> {
    pub judged: &'a Judged,
    /// The cut-off; for a packed context, its length.
    pub k: usize,
    /// For a packed context: how many of R's grades its ideal holds.
    pub packed_ideal: Option<usize>,
    /// Token counts of the relevant text and the context, where the unit has text.
    pub overlap: Option<Overlap>,
}

impl Case<'_> {
    /// The top k items.
    pub fn top(&self) -> &[crate::vocab::Item] {
        &self.judged.items[..self.k.min(self.judged.items.len())]
    }
}

/// Where a unit not yet graded sits in a cell's list of a case, for judging in decision order.
pub struct Grading {
    /// Its 1-based rank.
    pub rank: u32,
    /// The rank of the case's first relevant unit, if any.
    pub first: Option<u32>,
    /// The decision metric's cut-off (none for a token budget).
    pub depth: Option<u32>,
}

impl Grading {
    /// A relevant unit already ranks above this one.
    pub fn after_first(&self) -> bool {
        self.first.is_some_and(|f| f < self.rank)
    }
}

/// A retrieval metric.
pub trait Measure: Sync {
    fn family(&self) -> Family {
        Family::Rank
    }

    /// The case's value; `None` where it is undefined.
    fn value(&self, case: &Case<'_>) -> Option<f64>;

    /// How far grading the unit relevant can move the case's value: by default the gain of
    /// its rank, as a relevant unit moves most measures by less the deeper it is ranked.
    fn grading_effect(&self, g: &Grading) -> f64 {
        1.0 / (f64::from(g.rank) + 1.0).log2()
    }
}

/// The DCG of grades in rank order. Sums fold from +0.0: `Sum` of an empty iterator is -0.0,
/// which would be written.
fn dcg(gains: impl Iterator<Item = f64>) -> f64 {
    gains.enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).fold(0.0, |a, b| a + b)
}

fn sum(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |a, b| a + b)
}

impl Metric {
    /// Every metric, in column order.
    pub fn every() -> impl Iterator<Item = Metric> {
        REGISTRY.iter().map(|(m, _)| *m)
    }

    /// The metrics of a family, in column order.
    pub fn of(family: Family) -> Vec<Metric> {
        Metric::every().filter(|m| m.family() == family).collect()
    }

    /// The rank metrics: what `metrics` holds unless the experiment says.
    pub fn defaults() -> Vec<Metric> {
        Metric::of(Family::Rank)
    }

    /// The token-level metrics, measured at every budget of section and evidence units.
    pub fn token_level() -> Vec<Metric> {
        Metric::of(Family::Token)
    }

    pub fn measure(self) -> &'static dyn Measure {
        REGISTRY.iter().find(|(m, _)| *m == self).map(|(_, measure)| *measure).expect("every metric is in REGISTRY")
    }

    pub fn family(self) -> Family {
        self.measure().family()
    }

    pub fn is_token_level(self) -> bool {
        self.family() == Family::Token
    }

    /// The metric's value at cut-off `k` of a ranked list.
    pub fn at(self, j: &Judged, k: usize) -> Option<f64> {
        self.measure().value(&Case { judged: j, k, packed_ideal: None, overlap: None })
    }
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
        let (rank, token) = (Metric::of(Family::Rank), Metric::of(Family::Token));
        rank.iter().chain(&token).copied().find(|m| m.name() == s).ok_or_else(|| {
            format!(
                "unknown metric {s:?} (known: {}, and for section and evidence units {})",
                names(&rank),
                names(&token)
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

    /// Every metric of the list has its measure, in the list's order, and a column.
    #[test]
    fn every_metric_is_in_the_registry_with_a_column() {
        let registered: Vec<Metric> = REGISTRY.iter().map(|(m, _)| *m).collect();
        assert_eq!(registered, Metric::NAMED);
        for m in Metric::NAMED {
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
