//! Uncertainty over cases (SPEC §7): percentile bootstrap intervals, the paired
//! randomisation (sign-flip) test, and what small samples would have said.
//!
//! Every procedure takes its seed explicitly and uses ChaCha8, whose stream is fixed by
//! its specification, so a number computed today is the number computed next year.

pub use crate::vocab::Interval;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Bootstrap resamples per interval (SPEC §7).
pub const BOOTSTRAP_RESAMPLES: usize = 1000;
/// Bootstrap resamples of a paired difference with the best, which decides `equivalent`
/// (SPEC §7): more than a displayed interval needs, so that the label does not hang on the seed.
/// Measured by `scripts/bench-seed-stability.sh` (BENCHMARKS.md): over 20 seeds an interval end
/// of NFCorpus's 323 test questions moves by at most 0.0028 at B = 1000, 0.0013 at 5,000.
pub const VS_BEST_RESAMPLES: usize = 5000;
/// Sign flips per randomisation test (SPEC §7).
pub const SIGN_FLIPS: usize = 10_000;
/// The seed of every interval and test in reports.
pub const SEED: u64 = 0x5EED_0007;

/// The `p`-quantile of sorted values by nearest rank: the ⌈p·n⌉-th smallest.
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    sorted[rank_index(sorted.len(), p)]
}

/// Where the nearest-rank `p`-quantile of `n` sorted values sits.
fn rank_index(n: usize, p: f64) -> usize {
    ((p * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// The 2.5 % and 97.5 % nearest-rank quantiles, each selected in place: the values a sort gives,
/// without sorting.
fn interval(mut means: Vec<f64>) -> Option<Interval> {
    if means.is_empty() {
        return None;
    }
    let (lo, hi) = (rank_index(means.len(), 0.025), rank_index(means.len(), 0.975));
    let hi_value = *means.select_nth_unstable_by(hi, f64::total_cmp).1;
    let lo_value = *means[..=hi].select_nth_unstable_by(lo, f64::total_cmp).1;
    Some(Interval { lo: lo_value, hi: hi_value })
}

/// 95% percentile bootstrap intervals of several columns' means over the same cases.
/// `columns[c][i]` is case i's value in column c (`None` when undefined, left out of the
/// mean as in the matrix). Cases are resampled once per round and shared by all columns.
pub fn bootstrap_means(columns: &[Vec<Option<f64>>], resamples: usize, seed: u64) -> Vec<Option<Interval>> {
    let n = columns.first().map_or(0, Vec::len);
    if n == 0 {
        return columns.iter().map(|_| None).collect();
    }
    // Cases as rows of a flat table (defined values beside): one draw adds a row to every
    // column's sum, in draw order as before. Columns defined for every case come first: their
    // sums need no check and their counts are the draws.
    let partly: Vec<bool> = columns.iter().map(|column| column.iter().any(Option::is_none)).collect();
    let mut order: Vec<usize> = (0..columns.len()).collect();
    order.sort_by_key(|&c| partly[c]);
    let whole = partly.iter().filter(|&&p| !p).count();
    let width = columns.len();
    let mut values = vec![0.0; n * width];
    let mut defined = vec![false; n * width];
    for (at, &c) in order.iter().enumerate() {
        for (i, v) in columns[c].iter().enumerate() {
            if let Some(v) = v {
                values[i * width + at] = *v;
                defined[i * width + at] = true;
            }
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<Vec<f64>> = columns.iter().map(|_| Vec::with_capacity(resamples)).collect();
    let (mut sums, mut counts) = (vec![0.0; width], vec![0usize; width]);
    // Plain loops over slices: the test suite runs the unoptimised build, where every iterator
    // step and `Vec` index is a function call.
    let (values, defined, sums, counts) = (&values[..], &defined[..], &mut sums[..], &mut counts[..]);
    for _ in 0..resamples {
        sums.fill(0.0);
        counts.fill(0);
        let mut draw = 0;
        while draw < n {
            let row = rng.random_range(0..n) * width;
            let mut c = 0;
            while c < whole {
                sums[c] += values[row + c];
                c += 1;
            }
            while c < width {
                if defined[row + c] {
                    sums[c] += values[row + c];
                    counts[c] += 1;
                }
                c += 1;
            }
            draw += 1;
        }
        counts[..whole].fill(n);
        for (at, &c) in order.iter().enumerate() {
            if counts[at] > 0 {
                means[c].push(sums[at] / counts[at] as f64);
            }
        }
    }
    // A column defined nowhere has no means, so no interval.
    means.into_iter().map(interval).collect()
}

/// 95% percentile bootstrap interval of the mean of `values`.
pub fn bootstrap_mean(values: &[f64], resamples: usize, seed: u64) -> Option<Interval> {
    let column: Vec<Option<f64>> = values.iter().copied().map(Some).collect();
    bootstrap_means(&[column], resamples, seed).pop().flatten()
}

/// Two-sided p-value of the paired randomisation test on per-case differences: how often
/// flipping each difference's sign at random gives a mean at least as far from 0 as the
/// observed one. Counts the observed arrangement, so p is never 0: (hits + 1) / (flips + 1).
pub fn paired_randomization(diffs: &[f64], flips: usize, seed: u64) -> f64 {
    if diffs.is_empty() {
        return 1.0;
    }
    let observed = diffs.iter().sum::<f64>().abs();
    let tolerance = 1e-9 * diffs.iter().map(|d| d.abs()).sum::<f64>().max(1.0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at_least = 0usize;
    for _ in 0..flips {
        // One random bit per difference, 64 at a time.
        let (mut sum, mut i, mut bits) = (0.0, 0, 0u64);
        while i < diffs.len() {
            if i % 64 == 0 {
                bits = rng.random();
            }
            let d = diffs[i];
            sum += if bits >> (i % 64) & 1 == 1 { d } else { -d };
            i += 1;
        }
        if sum.abs() >= observed - tolerance {
            at_least += 1;
        }
    }
    (at_least + 1) as f64 / (flips + 1) as f64
}

/// Holm–Bonferroni adjusted p-values, in the input's order: the i-th smallest p becomes
/// max over j ≤ i of min(1, (m − j + 1)·p_(j)). Reject at α where the adjusted p ≤ α.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (j, &i) in order.iter().enumerate() {
        running = running.max(((m - j) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// P(|T| <= t) for Student's t with `df` (integer) degrees of freedom, by the closed forms of
/// Abramowitz and Stegun 26.7.3-4.
fn t_central(t: f64, df: usize) -> f64 {
    let theta = (t / (df as f64).sqrt()).atan();
    let (s, c2) = (theta.sin(), theta.cos().powi(2));
    if df % 2 == 1 {
        let (mut term, mut sum) = (theta.cos(), 0.0);
        if df > 1 {
            sum = term;
            for k in (3..df).step_by(2) {
                term *= c2 * (k - 1) as f64 / k as f64;
                sum += term;
            }
        }
        2.0 / std::f64::consts::PI * (theta + s * sum)
    } else {
        let (mut term, mut sum) = (1.0, 1.0);
        for k in (2..df).step_by(2) {
            term *= c2 * (k - 1) as f64 / k as f64;
            sum += term;
        }
        s * sum
    }
}

/// Student's t quantile (`0.5 < p < 1`) with `df` degrees of freedom, by bisection on its
/// distribution function.
pub fn t_quantile(p: f64, df: usize) -> f64 {
    assert!(p > 0.5 && p < 1.0 && df >= 1, "a t quantile needs 0.5 < p < 1 and df >= 1");
    let target = 2.0 * p - 1.0;
    let (mut lo, mut hi) = (0.0, 1e6);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_central(mid, df) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "a quantile needs 0 < p < 1");
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Cases needed to detect a mean paired difference of `delta` with a two-sided test at
/// `alpha` and the given power, when paired differences have standard deviation `sd`:
/// n = ⌈((z₁₋α/₂ + z_power)·sd/δ)²⌉ (the normal approximation).
pub fn cases_needed(sd: f64, delta: f64, alpha: f64, power: f64) -> Option<usize> {
    let z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power);
    let n = ((z * sd / delta).powi(2)).ceil().max(1.0);
    (n <= CASES_REACHABLE as f64).then_some(n as usize)
}

/// Golden sets larger than this are not a plan anyone can follow: `cases_needed` says so
/// instead of printing a count.
pub const CASES_REACHABLE: usize = 1_000_000;

/// Sample standard deviation (n − 1); 0 for fewer than two values.
pub fn sd(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
}

/// What a metric's mean looked like on random subsets of a few questions.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SubsetRange {
    pub size: usize,
    pub min: f64,
    /// The middle 95% of subset means.
    pub p2_5: f64,
    pub p97_5: f64,
    pub max: f64,
}

/// Means of `draws` random subsets (without replacement) of each size in `sizes`.
/// Sizes larger than the number of values are skipped.
pub fn subset_ranges(values: &[f64], sizes: &[usize], draws: usize, seed: u64) -> Vec<SubsetRange> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for &size in sizes.iter().filter(|&&s| s > 0 && s <= values.len()) {
        let mut means: Vec<f64> = (0..draws)
            .map(|_| {
                let picked = rand::seq::index::sample(&mut rng, values.len(), size);
                picked.iter().map(|i| values[i]).sum::<f64>() / size as f64
            })
            .collect();
        means.sort_by(f64::total_cmp);
        out.push(SubsetRange {
            size,
            min: means[0],
            p2_5: nearest_rank(&means, 0.025),
            p97_5: nearest_rank(&means, 0.975),
            max: means[means.len() - 1],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_by_hand() {
        // m = 4: sorted 0.01, 0.02, 0.03, 0.5 → 0.04, max(0.04, 0.06), max(0.06, 0.06), max(0.06, 0.5).
        let adjusted = holm(&[0.03, 0.5, 0.01, 0.02]);
        let want = [0.06, 0.5, 0.04, 0.06];
        for (a, w) in adjusted.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adjusted:?}");
        }
        assert_eq!(holm(&[0.4, 0.3]), vec![0.6, 0.6]);
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, expected) in
            [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (5, 2.5706), (10, 2.2281), (30, 2.0423)]
        {
            assert!((t_quantile(0.975, df) - expected).abs() < 1e-4, "df {df}: {}", t_quantile(0.975, df));
        }
        assert!((t_quantile(0.95, 7) - 1.8946).abs() < 1e-4);
    }

    #[test]
    fn normal_quantiles_and_the_textbook_sample_size() {
        assert!((normal_quantile(0.975) - 1.959_963_985).abs() < 1e-8);
        assert!((normal_quantile(0.8) - 0.841_621_234).abs() < 1e-8);
        assert!((normal_quantile(0.01) + 2.326_347_874).abs() < 1e-8);
        // Chow, Shao & Wang, Sample Size Calculations in Clinical Research, §3.1 (one-sample
        // mean, two-sided α = 0.05, power 80%, effect δ/σ = 0.5): n = (1.96 + 0.84)² / 0.25 ≈ 31.4 → 32.
        assert_eq!(cases_needed(1.0, 0.5, 0.05, 0.8), Some(32));
        assert_eq!(cases_needed(0.5, 1e-12, 0.05, 0.8), None, "a tiny delta is not reachable");
        assert_eq!(cases_needed(0.2, 0.02, 0.05, 0.8), Some(785));
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.025), 25.0);
        assert_eq!(nearest_rank(&v, 0.975), 975.0);
        assert_eq!(nearest_rank(&[3.0], 0.5), 3.0);
    }

    #[test]
    fn an_interval_selects_the_quantiles_sorting_gives() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for n in [1, 2, 39, 40, 41, 1000, 5000] {
            // Few distinct values: ties at the quantiles, and -0.0 beside 0.0.
            let mut values: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(-3..20)) / 7.0).collect();
            values[0] = -0.0;
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let got = interval(values).unwrap();
            assert_eq!(
                (got.lo.to_bits(), got.hi.to_bits()),
                (nearest_rank(&sorted, 0.025).to_bits(), nearest_rank(&sorted, 0.975).to_bits()),
                "{n} values"
            );
        }
    }

    #[test]
    fn bootstrap_of_constant_values_is_a_point() {
        let ci = bootstrap_mean(&[0.5; 7], 1000, SEED).unwrap();
        assert_eq!(ci, Interval { lo: 0.5, hi: 0.5 });
    }

    #[test]
    fn bootstrap_of_two_values_spans_both() {
        // Resample means of {0, 1} are 0, ½, 1 with probabilities ¼, ½, ¼: the 2.5% and
        // 97.5% quantiles of 1,000 draws are 0 and 1.
        assert_eq!(bootstrap_mean(&[0.0, 1.0], 1000, SEED).unwrap(), Interval { lo: 0.0, hi: 1.0 });
    }

    #[test]
    fn bootstrap_of_hits_matches_the_normal_approximation() {
        // 30 hits in 100 cases: the interval is about 0.30 ± 1.96·√(0.3·0.7/100) = [0.21, 0.39].
        let values: Vec<f64> = (0..100).map(|i| if i < 30 { 1.0 } else { 0.0 }).collect();
        let ci = bootstrap_mean(&values, 1000, SEED).unwrap();
        assert!((ci.lo - 0.21).abs() <= 0.02 && (ci.hi - 0.39).abs() <= 0.02, "{ci:?}");
    }

    #[test]
    fn bootstrap_leaves_undefined_values_out_and_is_deterministic() {
        let columns = vec![vec![Some(1.0), None, Some(1.0)], vec![None, None, None]];
        let cis = bootstrap_means(&columns, 200, 1);
        assert_eq!(cis[0], Some(Interval { lo: 1.0, hi: 1.0 }));
        assert_eq!(cis[1], None);
        let column = vec![(0..50).map(|i| Some(f64::from(i % 7))).collect::<Vec<_>>()];
        assert_eq!(bootstrap_means(&column, 1000, 9), bootstrap_means(&column, 1000, 9));
    }

    /// Columns share the draws, so each column's interval is the one it has alone, whatever
    /// the order of partly and wholly defined columns.
    #[test]
    fn each_column_gets_the_interval_it_has_alone() {
        let partly: Vec<Option<f64>> = (0..40).map(|i| (i % 3 != 0).then(|| f64::from(i % 5) / 4.0)).collect();
        let whole: Vec<Option<f64>> = (0..40).map(|i| Some(f64::from(i % 7) / 6.0)).collect();
        let empty = vec![None; 40];
        let together = bootstrap_means(&[partly.clone(), whole.clone(), empty.clone(), partly.clone()], 500, 4);
        let alone: Vec<Option<Interval>> =
            [partly.clone(), whole, empty, partly].into_iter().map(|c| bootstrap_means(&[c], 500, 4)[0]).collect();
        assert_eq!(together, alone);
    }

    #[test]
    fn randomization_p_values_match_exact_enumeration() {
        // Five cases all fixed (+1): of the 2⁵ sign patterns only all-plus and all-minus
        // reach |sum| = 5, so the exact p is 2/32 = 0.0625.
        let p = paired_randomization(&[1.0; 5], SIGN_FLIPS, SEED);
        assert!((p - 0.0625).abs() < 0.008, "{p}");
        // +1, +1, −1: |sum| ≥ 1 for every pattern, so p = 1.
        assert_eq!(paired_randomization(&[1.0, 1.0, -1.0], SIGN_FLIPS, SEED), 1.0);
        // No differences: p = 1.
        assert_eq!(paired_randomization(&[0.0; 4], SIGN_FLIPS, SEED), 1.0);
        // 12 fixed, none broke: exact p = 2/4096; the +1 correction bounds it below by 1/10001.
        let p = paired_randomization(&[1.0; 12], SIGN_FLIPS, SEED);
        assert!((1.0 / 10_001.0..0.002).contains(&p), "{p}");
    }

    #[test]
    fn small_subsets_range_widely() {
        // Half the cases hit: a five-question subset can score anything from 0 to 1.
        let values: Vec<f64> = (0..100).map(|i| f64::from(i % 2)).collect();
        let ranges = subset_ranges(&values, &[5, 10, 20, 1000], 1000, SEED);
        assert_eq!(ranges.len(), 3, "a size above the number of cases is skipped");
        assert_eq!((ranges[0].min, ranges[0].max), (0.0, 1.0));
        assert!(ranges[2].p97_5 - ranges[2].p2_5 < ranges[0].p97_5 - ranges[0].p2_5);
        let constant = subset_ranges(&[1.0; 30], &[5], 100, SEED);
        assert_eq!((constant[0].min, constant[0].max), (1.0, 1.0));
    }
}
