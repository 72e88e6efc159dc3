//! Which way is better for every per-case column a gate, a requirement or a view reads, and
//! the range its values take. `check`, `--require`, `--fail-on`, `diff`'s fixed/broke lists,
//! the report and the summary all read this one table, so no reader can invert a column.

use crate::evaluate::metrics::Metric;

/// The direction in which a column improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// A gateable column: its name (before any `@k`), direction and the range of its values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub name: &'static str,
    pub better: Better,
    pub min: f64,
    pub max: f64,
    /// A defect, not a statistic: a gate fails on any worsening beyond its margin, significant
    /// or not (one leaked document is one too many).
    pub defect: bool,
}

const fn col(name: &'static str, better: Better) -> Column {
    Column { name, better, min: 0.0, max: 1.0, defect: false }
}

const fn defect(name: &'static str, max: f64) -> Column {
    Column { name, better: Better::Lower, min: 0.0, max, defect: true }
}

/// Every per-case column besides the retrieval metrics (each a share, higher better: [`METRICS`]):
/// the answer columns, then what filters and engines are checked on (leaks, restricted hits,
/// filter parity).
pub const TABLE: [Column; 11] = [
    col("citation_valid", Better::Higher),
    col("citation_relevant", Better::Higher),
    col("refusal_ok", Better::Higher),
    col("refusal_wrong", Better::Lower),
    col("answered_without_evidence", Better::Lower),
    col("faithfulness_manual", Better::Higher),
    col("cited_restricted", Better::Lower),
    defect("leaks", f64::MAX),
    defect("restricted_hits", 1.0),
    defect("under_return", 1.0),
    col("recall_vs_oracle", Better::Higher),
];

/// The retrieval metrics' columns, from the metrics' own registry ([`Metric::every`]).
static METRICS: std::sync::LazyLock<Vec<Column>> =
    std::sync::LazyLock::new(|| Metric::every().map(|m| col(m.name(), Better::Higher)).collect());

/// The column a name refers to (`ndcg@10`, `recall@1024t` and `refusal_wrong` alike).
pub fn column(name: &str) -> Option<&'static Column> {
    let base = name.split('@').next().unwrap_or(name).trim();
    METRICS.iter().chain(&TABLE).find(|c| c.name == base)
}

/// Every column's name, metrics first.
pub fn names() -> Vec<&'static str> {
    METRICS.iter().chain(&TABLE).map(|c| c.name).collect()
}

impl Column {
    /// True when `after` is better than `before`.
    pub fn improved(&self, before: f64, after: f64) -> bool {
        match self.better {
            Better::Higher => after > before,
            Better::Lower => after < before,
        }
    }

    /// How much worse `after` is than `before` (negative when it is better).
    pub fn worsening(&self, before: f64, after: f64) -> f64 {
        match self.better {
            Better::Higher => before - after,
            Better::Lower => after - before,
        }
    }

    /// Whether a value at the worst end of the range (a miss, a wrong refusal) is `v`'s state.
    pub fn is_worst(&self, v: f64) -> bool {
        match self.better {
            Better::Higher => v <= self.min,
            Better::Lower => v >= self.max,
        }
    }

    /// Whether `mean` meets a requirement of `want` (at least for higher-is-better columns,
    /// at most for lower-is-better ones).
    pub fn meets(&self, mean: f64, want: f64) -> bool {
        match self.better {
            Better::Higher => mean >= want,
            Better::Lower => mean <= want,
        }
    }

    /// `≥` or `≤`: how a requirement reads for this column.
    pub fn requirement_sign(&self) -> &'static str {
        match self.better {
            Better::Higher => "≥",
            Better::Lower => "≤",
        }
    }

    /// A threshold (a required value) must be a finite number inside the column's range.
    pub fn check_value(&self, v: f64) -> Result<(), String> {
        if v.is_finite() && (self.min..=self.max).contains(&v) {
            Ok(())
        } else {
            Err(format!("{v} is outside {}'s range [{}, {}]", self.name, self.min, self.max))
        }
    }

    /// A margin (a tolerated worsening) must be finite, ≥ 0 and no wider than the range.
    pub fn check_margin(&self, m: f64) -> Result<(), String> {
        if m.is_finite() && m >= 0.0 && m <= self.max - self.min {
            Ok(())
        } else {
            Err(format!("margin {m} must be a finite number in [0, {}] for {}", self.max - self.min, self.name))
        }
    }

    pub fn direction(&self) -> &'static str {
        match self.better {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_column_and_metric_has_a_direction() {
        for name in crate::evaluate::answers::COLUMNS {
            assert!(column(name).is_some(), "{name}");
        }
        assert_eq!(column("ndcg@10").unwrap().better, Better::Higher);
        assert_eq!(column("recall@1024t").unwrap().better, Better::Higher);
        assert_eq!(column("refusal_wrong").unwrap().better, Better::Lower);
        assert!(column("bogus@3").is_none());
    }

    #[test]
    fn worsening_follows_the_direction() {
        let wrong = column("refusal_wrong").unwrap();
        assert_eq!(wrong.worsening(0.0, 1.0), 1.0, "a rise in wrong refusals is a worsening");
        assert!(column("hit").unwrap().worsening(0.0, 1.0) < 0.0);
        assert!(wrong.meets(0.0, 0.0) && !wrong.meets(0.5, 0.0));
        assert!(wrong.check_value(f64::NAN).is_err() && wrong.check_value(-1.0).is_err());
        assert!(wrong.check_margin(0.05).is_ok() && wrong.check_margin(2.0).is_err());
    }
}
