//! Prediction-powered inference (Angelopoulos et al., Science 2023), as ARES uses it for RAG
//! evaluation, in its finite-population form (the survey regression estimator): what a mean
//! over these questions would be had people judged every pooled unit, estimated from a chat
//! model's grades on every question, corrected by people's on a random sample of them, so that
//! the interval carries the model's errors. Uncertainty over which questions were asked is the
//! bootstrap's business elsewhere; this interval is about the labels people have not given.
//!
//! Questions with nothing to judge count with their known values, and so do those people judged
//! through; the rest with the model's values corrected by the sample's mean correction. It is
//! unbiased only when the judged questions are a random draw of those with something to judge
//! (`judge --order sample`).

use super::stats::t_quantile;

pub use crate::results::Estimate;

/// Cases judged through below which a normal interval is not to be trusted.
pub const FEW_JUDGED: usize = 10;

fn mean(xs: impl Iterator<Item = f64>) -> (f64, usize) {
    let (mut sum, mut n) = (0.0, 0);
    for x in xs {
        sum += x;
        n += 1;
    }
    (if n == 0 { 0.0 } else { sum / n as f64 }, n)
}

/// Sample variance (n − 1); 0 below two values.
fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let (m, n) = mean(xs.iter().copied());
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64
}

fn covariance(xs: &[f64], ys: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let (mx, n) = mean(xs.iter().copied());
    let (my, _) = mean(ys.iter().copied());
    xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum::<f64>() / (n - 1) as f64
}

/// The prediction-powered mean of these questions had people judged every pooled unit, at
/// confidence `1 − alpha`: `known` values of the questions with nothing to judge, `labelled`
/// (people, model) pairs of those judged through, `model_only` values of the rest. The judged
/// and known questions count with their own values; each of the rest with `λ·model + r̄`, r̄ the
/// mean correction `people − λ·model` over the judged (the survey regression estimator, λ its
/// slope clipped to [0, 1]). Its error is the difference between the judged questions' mean
/// correction and the rest's, scaled to the questions corrected; the interval uses Student's t
/// at n − 1 degrees of freedom, clipped to `bounds`. Values lie within `bounds` (0 to 1 for a metric, −1 to 1 for a
/// difference). `None` when fewer than two questions were judged through while some are valued
/// by the model only.
pub fn mean_of(
    known: &[f64],
    labelled: &[(f64, f64)],
    model_only: &[f64],
    bounds: (f64, f64),
    alpha: f64,
) -> Option<Estimate> {
    let (k, n, u) = (known.len() as f64, labelled.len() as f64, model_only.len() as f64);
    let total = k + n + u;
    if total == 0.0 || (u > 0.0 && n < 2.0) {
        return None;
    }
    let people: Vec<f64> = labelled.iter().map(|p| p.0).collect();
    let model_judged: Vec<f64> = labelled.iter().map(|p| p.1).collect();
    let exact: f64 = known.iter().sum::<f64>() + people.iter().sum::<f64>();
    if u == 0.0 {
        let mean = exact / total;
        return Some(Estimate { mean, lo: mean, hi: mean, lambda: 0.0 });
    }
    let var_model = variance(&model_judged);
    // A sample whose model values never vary cannot measure the slope: classic PPI's λ = 1
    // (the model's values, shifted by the mean correction) keeps what the model says of the rest.
    let lambda = if var_model > 0.0 { (covariance(&people, &model_judged) / var_model).clamp(0.0, 1.0) } else { 1.0 };
    let rectifier: Vec<f64> = people.iter().zip(&model_judged).map(|(y, f)| y - lambda * f).collect();
    let (r_mean, _) = mean(rectifier.iter().copied());
    let corrected: f64 = model_only.iter().map(|f| lambda * f + r_mean).sum();
    let mean = (exact + corrected) / total;
    // The error is u/N·(r̄ of the judged − r̄ of the rest): two disjoint random parts. A few
    // judged questions on which the model happened to be right say little of how often it is
    // wrong: one pseudo-question whose correction varies as much as its bounds allow keeps the
    // spread from collapsing to 0 (thirteen judged questions the model got right, or all at 1,
    // say little of the others); its weight fades as judged questions grow.
    let widest = ((bounds.1 - bounds.0) * (1.0 + lambda) / 2.0).powi(2);
    let spread = ((n - 1.0) * variance(&rectifier) + widest) / n;
    let var = (u / total).powi(2) * spread * (1.0 / n + 1.0 / u);
    let half = t_quantile(1.0 - alpha / 2.0, (n - 1.0) as usize) * var.max(0.0).sqrt();
    // The mean lies within the values' bounds whatever the model: so does the interval.
    Some(Estimate { mean, lo: (mean - half).max(bounds.0), hi: (mean + half).min(bounds.1), lambda })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Questions whose true value is a Bernoulli(0.6) hit, a model that flips a fifth of them,
    /// people judging a random 40 of 200: the 95 % interval covers the 200 questions' true mean
    /// in about 95 % of draws, and narrows as the model's values agree with people's.
    #[test]
    fn intervals_cover_the_true_mean_and_the_model_narrows_them() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (draws, mut covered, mut narrower) = (400, 0, 0);
        for _ in 0..draws {
            let truth: Vec<f64> = (0..200).map(|_| f64::from(u8::from(rng.random::<f64>() < 0.6))).collect();
            let model: Vec<f64> = truth.iter().map(|&t| if rng.random::<f64>() < 0.2 { 1.0 - t } else { t }).collect();
            let true_mean = truth.iter().sum::<f64>() / truth.len() as f64;
            let labelled: Vec<(f64, f64)> = (0..40).map(|i| (truth[i], model[i])).collect();
            let e = mean_of(&[], &labelled, &model[40..], (0.0, 1.0), 0.05).unwrap();
            covered += usize::from(e.lo <= true_mean && true_mean <= e.hi);
            // A model that says nothing of the truth: its interval is the people's alone.
            let noise: Vec<f64> = (0..200).map(|_| f64::from(u8::from(rng.random::<f64>() < 0.5))).collect();
            let blind: Vec<(f64, f64)> = (0..40).map(|i| (truth[i], noise[i])).collect();
            let alone = mean_of(&[], &blind, &noise[40..], (0.0, 1.0), 0.05).unwrap();
            narrower += usize::from(e.hi - e.lo < alone.hi - alone.lo);
        }
        let coverage = covered as f64 / draws as f64;
        assert!((0.92..=0.98).contains(&coverage), "coverage {coverage}");
        assert!(narrower as f64 > 0.9 * draws as f64, "{narrower} of {draws} narrower");
    }

    /// 26 questions, a few judged at random (6 or 13), a model wrong on one in ten (many samples
    /// hold no correction at all) or three in ten: the interval still covers the true mean in 95 %
    /// of draws (at least 93 % of 400, two standard errors below), and is never of width 0.
    #[test]
    fn a_handful_of_judged_questions_without_a_correction_still_covers() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for (judged, base, wrong) in [(6, 0.8, 0.1), (13, 0.8, 0.1), (6, 0.5, 0.3), (13, 0.5, 0.3)] {
            let (draws, mut covered) = (400, 0);
            for _ in 0..draws {
                let truth: Vec<f64> = (0..26).map(|_| f64::from(u8::from(rng.random::<f64>() < base))).collect();
                let model: Vec<f64> =
                    truth.iter().map(|&t| if rng.random::<f64>() < wrong { 1.0 - t } else { t }).collect();
                let true_mean = truth.iter().sum::<f64>() / 26.0;
                let labelled: Vec<(f64, f64)> = (0..judged).map(|i| (truth[i], model[i])).collect();
                let e = mean_of(&[], &labelled, &model[judged..], (0.0, 1.0), 0.05).unwrap();
                assert!(e.hi > e.lo, "{e:?}");
                covered += usize::from(e.lo <= true_mean && true_mean <= e.hi);
            }
            let coverage = covered as f64 / draws as f64;
            assert!(coverage >= 0.93, "{judged} judged, {wrong} wrong: coverage {coverage}");
        }
    }

    #[test]
    fn a_useless_model_is_not_trusted_and_known_questions_are_exact() {
        let labelled: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i % 2), f64::from(u8::from(i % 7 == 0)))).collect();
        let e = mean_of(&[], &labelled, &[1.0; 100], (0.0, 1.0), 0.05).unwrap();
        assert!(e.lambda < 0.2, "{e:?}");
        let known = mean_of(&[0.5, 0.5], &[], &[], (0.0, 1.0), 0.05).unwrap();
        assert_eq!((known.mean, known.lo, known.hi), (0.5, 0.5, 0.5));
        assert!(
            mean_of(&[], &[(1.0, 1.0)], &[0.0], (0.0, 1.0), 0.05).is_none(),
            "one judged question tells no variance"
        );
    }
}
