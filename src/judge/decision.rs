//! Judging in decision order (SPEC §9): the grid's decision is what judging serves, so the units
//! asked first are those whose grade can move it most, and judging stops when no grade left can.
//!
//! After Carterette, Allan and Sitaraman's minimal test collections (SIGIR 2006), adapted to
//! the decision rule of SPEC §7: the decision is the selected cell (the best eligible cell when
//! the experiment selects none) with every eligible cell's standing against the best, on the
//! tuning split. A unit's value is how far its grade would move the difference between the pick
//! and each cell that could still become it. The decision is scored again under outcomes of the
//! units left: none relevant (today's labels), all relevant, and completions drawn from the
//! grades so far. A unit's chance of relevance is estimated from units like it: as many cells
//! returned it, as high (TREC pools: a unit most systems rank high is far more often relevant
//! than one a single system found). Each completion draws, per such class, a rate from its
//! posterior (Beta over the grades of its units, shrunk to the rate of all grades), then each
//! unit at its class's rate. Classes, not cells, because decision order judges first where
//! cells disagree: a cell's judged units are a biased sample of its list, a class's are not.
//!
//! When every outcome picks the same cell the decision is **settled** (SPEC §9's bound). When
//! the bound is open only because every unit left would have to be relevant (no completion and
//! not "none relevant" changes the pick) the decision is **confident**: the MTC paper's
//! probabilistic stop, where judging on is unlikely to change the pick. When the cells the
//! outcomes pick stay within reach of each other (never shown worse) in every outcome, judging
//! cannot separate them and only more questions can.

use std::collections::{BTreeSet, HashMap};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::Result;
use crate::evaluate::metrics::Grading;
use crate::experiment::Experiment;
use crate::input::golden::{GoldenCase, Label, Split};
use crate::judge::PoolItem;
use crate::runner::rescore::{Recorded, Scope, Scored};
use crate::runner::Prepared;
use crate::vocab::VsBest;

/// What the grid decides on tuning under one set of labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The selected cell, or the best eligible one when the experiment selects none; none
    /// when no cell is eligible.
    pub pick: Option<String>,
    /// Each eligible cell's standing against the best on tuning, in grid order.
    pub standing: Vec<(String, VsBest)>,
}

impl Decision {
    /// The cells not shown worse than the best (the best, equivalent and undecided ones).
    pub fn not_worse(&self) -> Vec<&str> {
        self.standing.iter().filter(|(_, s)| *s != VsBest::Worse).map(|(c, _)| c.as_str()).collect()
    }

    /// `c03 (c05 undecided, c01 equivalent)`, or `no eligible cell`.
    pub fn describe(&self) -> String {
        let Some(pick) = &self.pick else { return "no eligible cell".into() };
        let others: Vec<String> = self
            .standing
            .iter()
            .filter(|(c, s)| c != pick && *s != VsBest::Worse)
            .map(|(c, s)| format!("{c} {}", s.as_str()))
            .collect();
        if others.is_empty() {
            pick.clone()
        } else {
            format!("{pick} ({})", others.join(", "))
        }
    }
}

/// What the units left in the pool can do to the decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Some outcome of the units left picks another cell, and judging can tell them apart.
    Open,
    /// Every outcome of the units left makes the same pick; `open`: the cells those outcomes
    /// disagree on, shown worse in some and not in others.
    Settled { pick: Option<String>, open: Vec<String> },
    /// Every outcome but "all relevant" makes the same pick: `against` is what that one picks;
    /// `open` as for `Settled`, over those outcomes.
    Confident { pick: Option<String>, against: Option<String>, open: Vec<String> },
    /// The outcomes pick different cells, but these stay not shown worse than each other in
    /// every outcome (`likely`: in every outcome but "all relevant"): only more questions can
    /// separate them.
    CannotDecide { cells: Vec<String>, likely: bool },
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Open => "open",
            Verdict::Settled { .. } => "settled",
            Verdict::Confident { .. } => "confident",
            Verdict::CannotDecide { .. } => "cannot_decide",
        }
    }

    /// The line a person reads about decision `now`; `left` units are still unjudged, `run` is
    /// the run's folder.
    pub fn message(&self, now: &Decision, left: usize, run: &std::path::Path) -> Option<String> {
        let units = crate::words::count(left, "unit");
        let plan = format!("more questions would (`ragsweep plan {}` says how many)", run.display());
        let open: &[String] = match self {
            Verdict::Settled { open, .. } | Verdict::Confident { open, .. } => open,
            _ => &[],
        };
        let undecided: Vec<&str> = now
            .standing
            .iter()
            .filter(|(c, s)| *s == VsBest::Undecided && !open.contains(c))
            .map(|(c, _)| c.as_str())
            .collect();
        let mut rivals = if undecided.is_empty() {
            String::new()
        } else {
            format!("; {} undecided against it: {plan}", undecided.join(", "))
        };
        if !open.is_empty() {
            rivals.push_str(&format!(
                "; the outcomes differ on whether {} {} shown worse: judging on (`--whole-pool`) or more questions would tell",
                open.join(", "),
                if open.len() == 1 { "is" } else { "are" }
            ));
        }
        match self {
            Verdict::Open => None,
            Verdict::Settled { pick: Some(pick), .. } => {
                Some(format!("settled: the {units} left cannot change the decision ({pick}){rivals}"))
            }
            Verdict::Settled { pick: None, .. } => {
                Some(format!("settled: no cell is eligible whatever the {units} left say"))
            }
            Verdict::Confident { pick, against, .. } => {
                let pick = pick.as_deref().unwrap_or("no eligible cell");
                let against = against.as_deref().unwrap_or("no eligible cell");
                Some(format!(
                    "confident: the decision ({pick}) holds in all {COMPLETIONS} completions of the {units} left drawn from the grades so far; \
                     only if nearly all of them were relevant (all relevant: {against}) would it change{rivals}"
                ))
            }
            Verdict::CannotDecide { cells, likely } => Some(format!(
                "judging cannot decide between {}: {}, none of them is shown worse than another; {plan}",
                cells.join(" and "),
                if *likely {
                    format!("in all {COMPLETIONS} completions of the {units} left drawn from the grades so far")
                } else {
                    format!("whatever the {units} left say")
                },
            )),
        }
    }
}

/// The grid's decision under any labels, from a run's recorded lists.
pub struct Decider<'a> {
    exp: &'a Experiment,
    prepared: &'a Prepared,
    recorded: Recorded,
    /// The tuning cases: the only ones the decision reads.
    tuning: Vec<GoldenCase>,
    /// Per (cell, case) under the current labels: the rank of the first relevant item.
    first_relevant: HashMap<(String, String), u32>,
    /// The decision under the current labels.
    now: Decision,
    /// Per (case, unit) graded: its class ([`class`]) and whether relevant; a grade given again
    /// replaces the first.
    given: HashMap<(String, String), ((u8, u8), bool)>,
    /// A chat model's suggested grade per (case, unit) ([`super::suggest`]): units it grades
    /// alike share a class, whose rate people's grades calibrate.
    suggested: HashMap<(String, String), u32>,
}

/// Completions of the units left drawn from the grades' posterior, beside the two extremes
/// (none relevant, all relevant): the decision is settled when all agree, confident when all but
/// "all relevant" do.
const COMPLETIONS: usize = 32;

/// The class a unit's relevance rate is estimated in: how many cells returned it (1, 2, 3, 4 or
/// more) and the band of its best rank (1–3, 4–10, deeper).
fn class(item: &PoolItem) -> (u8, u8) {
    let best = item.cells.iter().map(|c| c.1).min().unwrap_or(u32::MAX);
    let band = match best {
        0..=3 => 0,
        4..=10 => 1,
        _ => 2,
    };
    (item.cells.len().min(4) as u8, band)
}

/// The first class of units a model graded ([`Decider::suggest`]), apart from [`class`]'s.
const SUGGESTED: u8 = 10;

/// How many grades the rate of all grades counts for in a class's prior.
const PRIOR_WEIGHT: f64 = 2.0;

impl<'a> Decider<'a> {
    pub fn new(exp: &'a Experiment, prepared: &'a Prepared, recorded: Recorded) -> Result<Decider<'a>> {
        let tuning: Vec<GoldenCase> =
            prepared.cases.iter().filter(|c| c.split.unwrap_or(Split::Tuning) == Split::Tuning).cloned().collect();
        let mut d = Decider {
            exp,
            prepared,
            recorded,
            tuning,
            first_relevant: HashMap::new(),
            now: Decision { pick: None, standing: Vec::new() },
            given: HashMap::new(),
            suggested: HashMap::new(),
        };
        d.rescore()?;
        Ok(d)
    }

    pub fn now(&self) -> &Decision {
        &self.now
    }

    /// Lets a chat model's suggested grades (never a judgment) class the units left: the
    /// completions then draw each unit at the rate people's grades give units the model graded
    /// alike, so a model that agrees with people lets the stop rule speak sooner, and one that
    /// does not is calibrated away. Call before [`Decider::seed`].
    pub fn suggest(&mut self, suggestions: &super::suggest::Suggestions) {
        self.suggested = suggestions.iter().map(|(k, s)| (k.clone(), s.grade)).collect();
    }

    /// The class a unit's rate is drawn in: the model's suggested grade when it gave one, else
    /// [`class`].
    fn class(&self, item: &PoolItem) -> (u8, u8) {
        match self.suggested.get(&(item.case.clone(), item.id.clone())) {
            Some(&grade) => (SUGGESTED + grade.min(2) as u8, 0),
            None => class(item),
        }
    }

    /// Adds a grade for `(case, unit)` to the labels (replacing one given earlier in this
    /// session) and scores the decision again.
    pub fn grade(&mut self, item: &PoolItem, grade: u32) -> Result<()> {
        self.learn(item, grade);
        if let Some(c) = self.tuning.iter_mut().find(|c| c.id == item.case) {
            c.relevant.retain(|l| l.id != item.id);
            c.relevant.push(Label { id: item.id.clone(), grade, own: true });
            self.rescore()?;
        }
        Ok(())
    }

    /// Counts grades given before this session to units the cells returned (an earlier session
    /// or an import: their labels are already in the golden set) towards the relevance rates.
    pub fn seed(&mut self, judged: &[(PoolItem, u32)]) {
        for (item, grade) in judged {
            self.learn(item, *grade);
        }
    }

    fn learn(&mut self, item: &PoolItem, grade: u32) {
        self.given.insert((item.case.clone(), item.id.clone()), (self.class(item), grade > 0));
    }

    fn rescore(&mut self) -> Result<()> {
        let mut first = HashMap::new();
        let decision = self.decide(&self.tuning.clone(), &mut |r| {
            if let Some(f) = r.first_relevant {
                first.insert((r.cell.clone(), r.case.clone()), f);
            }
        })?;
        self.first_relevant = first;
        self.now = decision;
        Ok(())
    }

    fn decide(&self, cases: &[GoldenCase], each: &mut dyn FnMut(&crate::results::CaseResult)) -> Result<Decision> {
        let mut on_cell = |results: &[crate::results::CaseResult]| {
            results.iter().for_each(&mut *each);
            Ok(())
        };
        let Scored { rows, slices } =
            self.recorded.score(self.exp, self.prepared, cases, Scope::Estimate, &mut on_cell)?;
        let (selection, _) = crate::evaluate::selection::select_for(self.exp, &rows, &slices);
        let tuning = rows.iter().filter(|r| r.split == Split::Tuning);
        let standing: Vec<(String, VsBest)> = tuning.filter_map(|r| Some((r.cell.clone(), r.vs_best?))).collect();
        let pick = match selection {
            Some(s) => Some(s.cell),
            None if self.exp.select.is_some() => None,
            None => standing.iter().find(|(_, s)| *s == VsBest::Best).map(|(c, _)| c.clone()),
        };
        Ok(Decision { pick, standing })
    }

    /// The decision when the units of `pool` whose position `relevant` names are relevant
    /// (grade 1) and the rest keep today's labels (a grade 0 moves no metric).
    fn decide_if(&self, pool: &[&PoolItem], relevant: &dyn Fn(usize) -> bool) -> Result<Decision> {
        let mut cases = self.tuning.clone();
        let at: HashMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
        let mut added = Vec::new();
        for (_, item) in pool.iter().enumerate().filter(|(i, _)| relevant(*i)) {
            if let Some(&i) = at.get(item.case.as_str()) {
                added.push((i, Label { id: item.id.clone(), grade: 1, own: true }));
            }
        }
        if added.is_empty() {
            return Ok(self.now.clone());
        }
        for (i, label) in added {
            cases[i].relevant.push(label);
        }
        self.decide(&cases, &mut |_| {})
    }

    /// The tuning units of `pool`: the only ones that can move the decision.
    fn deciding<'p>(&self, pool: &'p [PoolItem]) -> Vec<&'p PoolItem> {
        let tuning: BTreeSet<&str> = self.tuning.iter().map(|c| c.id.as_str()).collect();
        pool.iter().filter(|p| tuning.contains(p.case.as_str())).collect()
    }

    /// What the units left in `pool` can do to the decision, and the cells that could become
    /// the pick in one of their outcomes.
    pub fn verdict(&self, pool: &[PoolItem]) -> Result<(Verdict, Vec<(String, f64)>)> {
        let pool = self.deciding(pool);
        let mut outcomes = vec![self.now.clone(), self.decide_if(&pool, &|_| true)?];
        let mut rng = ChaCha8Rng::seed_from_u64(crate::evaluate::stats::SEED);
        let graded = self.per_class();
        let prior = prior(&graded);
        for _ in 0..COMPLETIONS {
            let mut rates: HashMap<(u8, u8), f64> = HashMap::new();
            let relevant: Vec<bool> = pool
                .iter()
                .map(|p| {
                    let k = self.class(p);
                    let rate = *rates.entry(k).or_insert_with(|| draw_rate(&graded, k, prior, &mut rng));
                    rng.random::<f64>() < rate
                })
                .collect();
            outcomes.push(self.decide_if(&pool, &|i| relevant[i])?);
        }
        // A contender weighs as often as the outcomes pick it; one only ever not shown worse,
        // as one outcome would.
        let mut contenders: Vec<(String, f64)> = Vec::new();
        for d in &outcomes {
            for c in d.not_worse().into_iter().chain(d.pick.as_deref()) {
                if self.now.pick.as_deref() != Some(c) && !contenders.iter().any(|(k, _)| k == c) {
                    let picked = outcomes.iter().filter(|o| o.pick.as_deref() == Some(c)).count();
                    contenders.push((c.to_string(), picked.max(1) as f64 / outcomes.len() as f64));
                }
            }
        }
        // Outcome 1 is "all relevant": the bound; the others are what the grades make likely.
        let likely: Vec<&Decision> = outcomes.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, d)| d).collect();
        let all: Vec<&Decision> = outcomes.iter().collect();
        let verdict = if let [pick] = &picks(&all)[..] {
            Verdict::Settled { pick: pick.clone(), open: open_standing(&all) }
        } else if let Some(cells) = within_reach(&all) {
            Verdict::CannotDecide { cells, likely: false }
        } else if let [pick] = &picks(&likely)[..] {
            Verdict::Confident { pick: pick.clone(), against: outcomes[1].pick.clone(), open: open_standing(&likely) }
        } else if let Some(cells) = within_reach(&likely) {
            Verdict::CannotDecide { cells, likely: true }
        } else {
            Verdict::Open
        };
        Ok((verdict, contenders))
    }

    /// Per class of unit: units graded, and how many relevant.
    fn per_class(&self) -> HashMap<(u8, u8), (usize, usize)> {
        let mut graded: HashMap<(u8, u8), (usize, usize)> = HashMap::new();
        for (class, relevant) in self.given.values() {
            let (j, r) = graded.entry(*class).or_default();
            *j += 1;
            *r += usize::from(*relevant);
        }
        graded
    }

    /// How far grading each unit of `pool` relevant would move the difference between the pick
    /// and each of `contenders` on the decision metric, weighted by how often the outcomes pick
    /// that contender (0 for units no decision reads): the comparison nearest to flipping is
    /// judged first.
    pub fn values(&self, pool: &[PoolItem], contenders: &[(String, f64)]) -> Vec<f64> {
        let Some(pick) = &self.now.pick else { return vec![0.0; pool.len()] };
        let tuning: BTreeSet<&str> = self.tuning.iter().map(|c| c.id.as_str()).collect();
        let decision = self.exp.decision_metric();
        let (metric, depth) = (decision.metric, (!decision.budget).then_some(decision.k as u32));
        let effect = |item: &PoolItem, cell: &str| -> f64 {
            let Some(&(_, rank)) = item.cells.iter().find(|(c, _)| c == cell) else { return 0.0 };
            let first = self.first_relevant.get(&(cell.to_string(), item.case.clone())).copied();
            metric.measure().grading_effect(&Grading { rank, first, depth })
        };
        pool.iter()
            .map(|item| {
                if !tuning.contains(item.case.as_str()) {
                    return 0.0;
                }
                let mine = effect(item, pick);
                contenders.iter().map(|(c, w)| w * (mine - effect(item, c)).abs()).sum()
            })
            .collect()
    }
}

/// The rate of all grades so far (`graded` per class), what a class with few grades is shrunk to.
fn prior(graded: &HashMap<(u8, u8), (usize, usize)>) -> f64 {
    let (judged, relevant) = graded.values().fold((0, 0), |(j, r), (a, b)| (j + a, r + b));
    (relevant as f64 + 1.0) / (judged as f64 + 2.0)
}

/// A class's relevance rate in one completion, drawn from Beta over its grades with
/// [`PRIOR_WEIGHT`] grades at the rate of all.
fn draw_rate(graded: &HashMap<(u8, u8), (usize, usize)>, class: (u8, u8), prior: f64, rng: &mut ChaCha8Rng) -> f64 {
    let (judged, relevant) = graded.get(&class).copied().unwrap_or((0, 0));
    let alpha = relevant as f64 + PRIOR_WEIGHT * prior;
    let beta = (judged - relevant) as f64 + PRIOR_WEIGHT * (1.0 - prior);
    rng.sample(rand_distr::Beta::new(alpha, beta).expect("positive shape parameters"))
}

/// The distinct picks of `outcomes`.
fn picks(outcomes: &[&Decision]) -> Vec<Option<String>> {
    let mut picks: Vec<Option<String>> = Vec::new();
    for d in outcomes {
        if !picks.contains(&d.pick) {
            picks.push(d.pick.clone());
        }
    }
    picks
}

/// The cells some of `outcomes` show worse than the best and others do not, in grid order.
fn open_standing(outcomes: &[&Decision]) -> Vec<String> {
    let Some(first) = outcomes.first() else { return Vec::new() };
    first
        .standing
        .iter()
        .map(|(c, _)| c)
        .filter(|c| {
            let worse = |d: &&Decision| !d.not_worse().contains(&c.as_str());
            outcomes.iter().any(worse) && !outcomes.iter().all(worse)
        })
        .cloned()
        .collect()
}

/// The cells `outcomes` pick when each outcome picks one and none of them is shown worse than
/// another in any outcome.
fn within_reach(outcomes: &[&Decision]) -> Option<Vec<String>> {
    let picks = picks(outcomes);
    let cells: Vec<String> = picks.iter().flatten().cloned().collect();
    let reach = picks.iter().all(Option::is_some)
        && outcomes.iter().all(|d| cells.iter().all(|c| d.not_worse().contains(&c.as_str())));
    reach.then_some(cells)
}

/// `pool` ordered by `values`, highest first; ties keep the pool's order (most returned first).
pub fn by_value(pool: Vec<PoolItem>, values: &[f64]) -> Vec<PoolItem> {
    let mut ranked: Vec<(f64, usize, PoolItem)> =
        pool.into_iter().zip(values).enumerate().map(|(i, (p, &v))| (v, i, p)).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().map(|(_, _, p)| p).collect()
}
