//! Constrained Bayesian optimisation: a Gaussian-process surrogate of the score, a second one
//! of how far a config misses its SLOs, and the kernel classifier of start-up failures.
//!
//! The proposal maximises `EI(x) · P(SLOs met | x) · (1 − P_fail(x))^w` (expected improvement
//! over the best feasible score, as in SCOOT's constrained BO; each SLO's probability is raised
//! to a power where the model expects a breach); while nothing feasible is known
//! it maximises the probability of feasibility alone. The score model learns from every trial
//! that served (an SLO-breaking trial still measured its throughput), the SLO model from the
//! shortfall of each breach (feasible trials sit just below zero), so the search is drawn
//! towards the edge of the feasible region where the best configs lie. The models see each
//! config as its parameters' coordinates, a choice of increasing numbers (tensor-parallel sizes)
//! as ordered, plus inputs derived from the engine's batch cap and the probe's client count
//! (see [`super::batch_inputs`]). The acquisition is maximised over a seeded random and local
//! candidate set (the closest around the best trial, and copies of it with one numeric
//! parameter redrawn across its range), then refined by rounds of shrinking perturbations
//! around the leading candidates.

use super::gp::{log_cdf, log_expected_improvement, Gp};
use super::history::{Observation, Tier};
use super::kernel::{failure_probability, reflect, squared_distance, with_failure};
use super::prior::{
    kendall_tau, refresh_point, Prior, PriorCheck, Source, Trust, TRUST_CHECK_TRIALS,
};
use super::propose::{accept, call_rng, first_acceptable, Dims, Rejections, Tried, MAX_ATTEMPTS};
use super::qmc::{check_dims, sobol_point};
use super::Sampler;
use crate::record::{Params, Slo, SloOp, TrialRecord, Violation};
use crate::space::Feasibility;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Informative trials before the models take over (earlier ones follow a Sobol sequence).
const STARTUP_TRIALS: usize = 5;
/// Uniform candidates per proposal.
const GLOBAL_CANDIDATES: usize = 512;
/// Candidates around the best trials per proposal.
const ANCHORED_CANDIDATES: usize = 384;
/// Trials the anchored candidates are drawn around.
const ANCHORS: usize = 3;
/// Leading candidates refined further, and perturbations of each per round.
const REFINED: usize = 3;
const REFINE_DRAWS: usize = 32;
/// Perturbation widths (unit-cube scale) of the anchored candidates and of the refinement rounds.
const ANCHOR_WIDTHS: [f64; 3] = [0.02, 0.06, 0.15];
const REFINE_WIDTHS: [f64; 3] = [0.05, 0.02, 0.008];
/// Candidates close around the best trial per proposal, and their widths: the best configs sit
/// on the edge of the SLO region, so the last few per cent are found in a small neighbourhood.
const INCUMBENT_CANDIDATES: usize = 128;
const INCUMBENT_WIDTHS: [f64; 3] = [0.005, 0.015, 0.04];
/// Candidates that redraw one numeric parameter of the best trial across its whole range (the
/// others moved slightly) per proposal, and the widths of that slight move: a better corner may
/// lie far along one axis (a small token budget beside a larger batch), where neither local
/// perturbations nor uniform draws in every dimension reach.
const AXIS_CANDIDATES: usize = 128;
const AXIS_WIDTHS: [f64; 3] = [0.01, 0.03, 0.08];
/// SLO-model margin of a met bound with no log-ratio (e.g. `error_rate<=0%` at 0), and the
/// largest margin learnt either way (a breach without a measurement counts as this far).
const FEASIBLE_MARGIN: f64 = -0.1;
const MAX_SHORTFALL: f64 = 2.0;
/// Weight of `log P(SLO met)` where the SLO model expects a breach. Configs that just miss a
/// bound score higher than any feasible one, and the margin model stays unsure between trials
/// on a plateau of such configs (a batch capped by the client count), so the plain product
/// keeps proposing them; raising the probability to this power where a breach is more likely
/// than not keeps the search on the feasible side without shying from uncertain regions the
/// model expects to be feasible.
const BREACH_WEIGHT: f64 = 8.0;
/// Floor of `log P(SLOs met)`, less the log of how much surer than their priors the SLO models
/// are: a model sure of a breach everywhere it has seen one (readings that agree closely, fitted
/// with long length scales) is sure of it almost everywhere else too, by margins that differ by
/// millions in log space and would outweigh the failure model. Below the floor candidates
/// breach alike but for how little the models know of them, so the search moves away from its
/// breaches, and the failure model keeps it off its failures: the floor, weighted as a breach,
/// stays above [`super::kernel::LIKELY_FAILURE_PENALTY`].
const SURE_BREACH_LOG: f64 = -100.0;
/// Most points a surrogate is fitted on: an exact fit costs the cube of its points, and a long
/// study (hundreds of fast trials) would otherwise spend longer proposing than probing.
const MAX_FIT_POINTS: usize = 160;

/// Constrained BO with learned SLO and start-up-failure regions.
pub(crate) struct BoSampler {
    seed: u64,
    prior: Prior,
    /// The run-to-run spread of the objective (relative), once measured.
    noise: Option<f64>,
    /// The [`refresh_point`] the prior's trials were last recomputed at.
    refreshed_at: Option<usize>,
}

impl BoSampler {
    /// A Bayesian sampler seeded with `seed`, its models seeded with the trials of `prior`.
    pub fn new(seed: u64, prior: Prior) -> Self {
        BoSampler {
            seed,
            prior,
            noise: None,
            refreshed_at: None,
        }
    }

    /// Recompute a refreshable prior from the measured trials of `trials` when their count
    /// reaches the next [`refresh_point`].
    fn refresh(&mut self, trials: &[TrialRecord]) {
        let Some(refresh) = self.prior.refresh.clone() else {
            return;
        };
        let measured: Vec<TrialRecord> = trials
            .iter()
            .filter(|t| t.value.is_some() && !t.metrics.is_empty())
            .cloned()
            .collect();
        let Some(point) = refresh_point(measured.len()) else {
            return;
        };
        if self.refreshed_at == Some(point) {
            return;
        }
        self.refreshed_at = Some(point);
        if let Some(trials) = (refresh.0)(&measured[..point]) {
            self.prior.trials = trials;
        }
    }
}

impl Sampler for BoSampler {
    fn prior_check(&self, space: &dyn Feasibility, trials: &[TrialRecord]) -> Option<PriorCheck> {
        (!self.prior.trials.is_empty()).then(|| check_prior(space, trials, &self.prior))
    }

    fn observe_noise(&mut self, relative: Option<f64>) {
        self.noise = relative;
    }

    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        self.refresh(trials);
        let dims = Dims::for_model(space);
        check_dims(dims.len())?;
        let tried = Tried::of(trials);
        let categories = dims.categories();
        let own = Source::of(&dims, trials, 0.0);
        let prior = checked_prior(&dims, &own, &self.prior, &categories);
        let sources = [own, prior];
        let informative = sources[0].observed.len() + sources[1].observed.len();
        if informative < STARTUP_TRIALS || dims.is_empty() {
            return first_acceptable(space, &tried, MAX_ATTEMPTS, |attempt| {
                dims.decode(&sobol_point(self.seed, trials.len() + attempt, dims.len()))
            });
        }
        let anchors = anchors(&sources);
        let centre = anchors.first().map(Vec::as_slice);
        let model = Model::fit(&sources, &categories, centre, self.noise);
        let mut rng = call_rng(self.seed, trials.len(), 5);
        let mut search = Search {
            space,
            dims: &dims,
            tried: &tried,
            model: &model,
            scored: Vec::new(),
            rejections: Rejections::default(),
        };
        for _ in 0..GLOBAL_CANDIDATES {
            let u: Vec<f64> = (0..dims.len()).map(|_| rng.random()).collect();
            search.consider(&u);
        }
        for i in 0..ANCHORED_CANDIDATES {
            if let Some(anchor) = anchors.get(i % anchors.len().max(1)) {
                let width = ANCHOR_WIDTHS[i % ANCHOR_WIDTHS.len()];
                search.consider(&perturb(anchor, width, &categories, &mut rng));
            }
        }
        if let Some(best) = anchors.first() {
            for i in 0..INCUMBENT_CANDIDATES {
                let width = INCUMBENT_WIDTHS[i % INCUMBENT_WIDTHS.len()];
                search.consider(&perturb(best, width, &categories, &mut rng));
            }
            for u in category_switches(best, &categories) {
                search.consider(&u);
            }
            let numeric: Vec<usize> = (0..dims.len())
                .filter(|&d| categories[d].is_none())
                .collect();
            for i in 0..AXIS_CANDIDATES {
                let width = AXIS_WIDTHS[i % AXIS_WIDTHS.len()];
                if let Some(u) = axis_move(best, &numeric, width, &categories, &mut rng) {
                    search.consider(&u);
                }
            }
        }
        for width in REFINE_WIDTHS {
            for lead in search.leaders() {
                for _ in 0..REFINE_DRAWS {
                    search.consider(&perturb(&lead, width, &categories, &mut rng));
                }
            }
        }
        let mut attempt = 0;
        while search.scored.is_empty() && attempt < MAX_ATTEMPTS {
            let u: Vec<f64> = (0..dims.len()).map(|_| rng.random()).collect();
            search.consider(&u);
            attempt += 1;
        }
        let Search {
            scored, rejections, ..
        } = search;
        scored
            .into_iter()
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, _, params)| params)
            .ok_or_else(|| rejections.into_error(MAX_ATTEMPTS))
    }
}

/// The candidates of one proposal, scored.
struct Search<'a> {
    space: &'a dyn Feasibility,
    dims: &'a Dims<'a>,
    tried: &'a Tried,
    model: &'a Model,
    /// Acquisition, coordinates and resolved config of every accepted candidate.
    scored: Vec<(f64, Vec<f64>, Params)>,
    rejections: Rejections,
}

impl Search<'_> {
    /// Resolves the candidate at `u` and scores it when the space accepts it.
    fn consider(&mut self, u: &[f64]) {
        match accept(self.space, self.tried, &self.dims.decode(u)) {
            Ok(params) => {
                let x = self.dims.encode(&params);
                self.scored.push((self.model.acquisition(&x), x, params));
            }
            Err(why) => self.rejections.count(why),
        }
    }

    /// Coordinates of the best-scored candidates so far.
    fn leaders(&self) -> Vec<Vec<f64>> {
        let mut order: Vec<&(f64, Vec<f64>, Params)> = self.scored.iter().collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0));
        order
            .into_iter()
            .take(REFINED)
            .map(|(_, x, _)| x.clone())
            .collect()
    }
}

/// The surrogates of one proposal.
struct Model {
    score: Option<Gp>,
    /// One model per SLO some trial broke: its signed log-ratio margin (positive = missed).
    slos: Vec<Gp>,
    failed: Vec<Vec<f64>>,
    started: Vec<Vec<f64>>,
    /// Best transformed score among feasible trials.
    incumbent: Option<f64>,
}

impl Model {
    /// The models of the trials of `sources` (the study's own first), each fitted on the
    /// trials closest to `centre` (the best trial) when there are too many; the score model
    /// trusts each trial no more than its own measured noise allows, or the study's run-to-run
    /// spread `noise` where it has none (see [`with_measured_noise`]).
    fn fit(
        sources: &[Source],
        categories: &[Option<usize>],
        centre: Option<&[f64]>,
        noise: Option<f64>,
    ) -> Self {
        let served: Vec<(&Source, &Observation)> = sources
            .iter()
            .flat_map(|s| s.observed.iter().map(move |o| (s, o)))
            .filter(|(_, o)| o.tier != Tier::ConfigFailure)
            .collect();
        let slos = broken_slos(&served)
            .iter()
            .filter_map(|slo| {
                let measure = |t: &TrialRecord| margin(slo, t);
                let rows = aligned_rows(sources, |_, s, o| {
                    let served = o.tier != Tier::ConfigFailure;
                    let margin = measure(&s.trials[o.index]).filter(|_| served)?;
                    Some((margin, None))
                });
                fit_rows(
                    rows.into_iter().map(|(row, _)| row).collect(),
                    categories,
                    centre,
                )
            })
            .collect();
        let rows = aligned_rows(sources, |_, s, o| {
            let scored = o.tier != Tier::ConfigFailure && o.score.is_finite();
            scored.then(|| (s.log_score(o), s.trials[o.index].relative_error()))
        });
        let score = fit_rows(with_measured_noise(rows, noise), categories, centre);
        let own = &sources[0];
        let incumbent = own
            .observed
            .iter()
            .filter(|o| o.tier == Tier::Feasible && o.score.is_finite())
            .map(|o| own.log_score(o))
            .reduce(f64::max);
        let (failed, started) = sources
            .iter()
            .flat_map(|s| &s.observed)
            .partition::<Vec<&Observation>, _>(|o| o.tier == Tier::ConfigFailure);
        Model {
            score,
            slos,
            failed: failed.into_iter().map(|o| o.x.clone()).collect(),
            started: started.into_iter().map(|o| o.x.clone()).collect(),
            incumbent,
        }
    }

    /// Weighted `log P(SLOs met)` at `x`, no lower than [`SURE_BREACH_LOG`] (weighted as a
    /// breach) less how much surer than their priors the SLO models are there, on average.
    fn log_slos_met(&self, x: &[f64]) -> f64 {
        let (mut met, mut unsure) = (0.0, 0.0);
        for gp in &self.slos {
            let (mean, sd) = gp.predict(x);
            let z = -mean / sd;
            let weight = if z < 0.0 { BREACH_WEIGHT } else { 1.0 };
            met += weight * log_cdf(z);
            unsure += (sd / gp.prior_sd()).ln() / self.slos.len() as f64;
        }
        met.max(BREACH_WEIGHT * (SURE_BREACH_LOG + unsure))
    }

    /// Log of the acquisition at `x`; higher is more promising.
    fn acquisition(&self, x: &[f64]) -> f64 {
        let failed: Vec<&[f64]> = self.failed.iter().map(Vec::as_slice).collect();
        let started: Vec<&[f64]> = self.started.iter().map(Vec::as_slice).collect();
        let p_fail = failure_probability(x, &failed, &started);
        let feasible = self.log_slos_met(x);
        let improvement = match (&self.score, self.incumbent) {
            (Some(gp), Some(best)) => {
                let (mean, sd) = gp.predict(x);
                log_expected_improvement(mean, sd, best)
            }
            _ => 0.0,
        };
        with_failure(improvement + feasible, p_fail)
    }
}

/// The trials of `prior` as the study's own trials bear them out (see [`check`]): set aside,
/// kept at their weight or confirmed.
fn checked_prior<'a>(
    dims: &Dims,
    own: &Source,
    prior: &'a Prior,
    categories: &[Option<usize>],
) -> Source<'a> {
    let mut unchecked = Source::of(dims, &prior.trials, prior.extra_noise());
    match check(own, &unchecked, categories)
        .trust
        .noise(unchecked.extra_noise)
    {
        Some(noise) => {
            unchecked.extra_noise = noise;
            unchecked
        }
        None => Source::of(dims, &[], 0.0),
    }
}

/// How the trials of `prior` stand against the study's `trials` in the space `space`, as `bo`
/// weighs them at its next proposal.
pub fn check_prior(space: &dyn Feasibility, trials: &[TrialRecord], prior: &Prior) -> PriorCheck {
    let dims = Dims::for_model(space);
    let own = Source::of(&dims, trials, 0.0);
    let unchecked = Source::of(&dims, &prior.trials, prior.extra_noise());
    check(&own, &unchecked, &dims.categories())
}

/// Once the study has [`TRUST_CHECK_TRIALS`] scored trials, a score model of the earlier
/// trials (`prior`) alone ranks them, and the rank agreement decides the trust.
fn check(own: &Source, prior: &Source, categories: &[Option<usize>]) -> PriorCheck {
    let scored = |s: &Source| -> Vec<Row> {
        s.observed
            .iter()
            .filter(|o| o.tier != Tier::ConfigFailure && o.score.is_finite())
            .map(|o| (o.x.clone(), s.log_score(o), 0.0))
            .collect()
    };
    let own_rows = scored(own);
    let unchecked = PriorCheck {
        own_trials: own_rows.len(),
        tau: None,
        trust: Trust::Unchecked,
    };
    if own_rows.len() < TRUST_CHECK_TRIALS || prior.observed.is_empty() {
        return unchecked;
    }
    let Some(model) = fit_rows(scored(prior), categories, None) else {
        return unchecked;
    };
    let predicted: Vec<f64> = own_rows
        .iter()
        .map(|(x, _, _)| model.predict(x).0)
        .collect();
    let actual: Vec<f64> = own_rows.iter().map(|(_, y, _)| *y).collect();
    let tau = kendall_tau(&predicted, &actual);
    PriorCheck {
        tau: Some(tau),
        trust: Trust::of(tau),
        ..unchecked
    }
}

/// The `(point, value, extra noise)` rows of every source's observations that `value` (given
/// the source's index) measures, each with the relative noise `value` gives it; an earlier
/// study's values are moved so that their median matches the study's own once each has three
/// (another card or model reads higher or lower throughout).
fn aligned_rows(
    sources: &[Source],
    value: impl Fn(usize, &Source, &Observation) -> Option<(f64, Option<f64>)>,
) -> Vec<(Row, Option<f64>)> {
    let values: Vec<Vec<(&Observation, f64, Option<f64>)>> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.observed
                .iter()
                .filter_map(|o| {
                    let (x, noise) = value(i, s, o)?;
                    Some((o, x, noise))
                })
                .collect()
        })
        .collect();
    let median = |v: &[(&Observation, f64, Option<f64>)]| {
        let mut sorted: Vec<f64> = v.iter().map(|(_, x, _)| *x).collect();
        sorted.sort_by(f64::total_cmp);
        (sorted.len() >= 3).then(|| sorted[sorted.len() / 2])
    };
    let own = values.first().and_then(|v| median(v));
    values
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            let shift = match (i, own, median(v)) {
                (1.., Some(a), Some(b)) => a - b,
                _ => 0.0,
            };
            v.iter().map(move |(o, x, noise)| {
                ((o.x.clone(), x + shift, sources[i].extra_noise), *noise)
            })
        })
        .collect()
}

/// `rows` of log scores, each with its own relative noise (the standard error of the log of
/// its score, from its runs; see `ConfigRuns::relative_error`) or else `fallback` (the study's
/// run-to-run spread), added to its noise in the standardised units the process is fitted in.
/// The scores are `±ln(1 + |score|)`, so a relative error `e` moves a row by
/// `e·|score|/(1 + |score|)`: small scores (a minimised latency in seconds) are held to it as
/// well as large ones. Rows are returned as they are when none has a noise.
fn with_measured_noise(rows: Vec<(Row, Option<f64>)>, fallback: Option<f64>) -> Vec<Row> {
    let usable = |s: &f64| s.is_finite() && *s > 0.0;
    let fallback = fallback.filter(usable);
    let n = rows.len() as f64;
    let mean = rows.iter().map(|(r, _)| r.1).sum::<f64>() / n;
    let variance = rows.iter().map(|(r, _)| (r.1 - mean).powi(2)).sum::<f64>() / n;
    rows.into_iter()
        .map(|(mut row, own)| {
            let relative = own.filter(|e| e.is_finite() && *e >= 0.0).or(fallback);
            if let Some(e) = relative.filter(|_| variance > 0.0) {
                let sd = e * (1.0 - (-row.1.abs()).exp());
                row.2 += sd * sd / variance;
            }
            row
        })
        .collect()
}

/// One observation a surrogate is fitted on: point, target, extra noise.
type Row = (Vec<f64>, f64, f64);

/// A process through `rows`, thinned around `centre` (see [`thinned`]).
fn fit_rows(rows: Vec<Row>, categories: &[Option<usize>], centre: Option<&[f64]>) -> Option<Gp> {
    let rows = thinned(rows, centre);
    let mut points = Vec::with_capacity(rows.len());
    let (mut y, mut noise) = (
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
    );
    for (x, target, extra) in rows {
        points.push(x);
        y.push(target);
        noise.push(extra);
    }
    Gp::fit(points, &y, &noise, categories)
}

/// At most [`MAX_FIT_POINTS`] of `rows`: half of them the closest to `centre` (the best trial,
/// where the last per cent is found), the rest spread evenly over the others in trial order.
fn thinned(rows: Vec<Row>, centre: Option<&[f64]>) -> Vec<Row> {
    if rows.len() <= MAX_FIT_POINTS {
        return rows;
    }
    let mut near: Vec<usize> = (0..rows.len()).collect();
    if let Some(centre) = centre {
        near.sort_by(|&a, &b| {
            squared_distance(&rows[a].0, centre).total_cmp(&squared_distance(&rows[b].0, centre))
        });
    }
    let mut keep = vec![false; rows.len()];
    for &i in near.iter().take(MAX_FIT_POINTS / 2) {
        keep[i] = true;
    }
    let others: Vec<usize> = (0..rows.len()).filter(|&i| !keep[i]).collect();
    let wanted = MAX_FIT_POINTS - MAX_FIT_POINTS / 2;
    for k in 0..wanted {
        keep[others[k * others.len() / wanted]] = true;
    }
    rows.into_iter()
        .zip(keep)
        .filter_map(|(row, kept)| kept.then_some(row))
        .collect()
}

/// The best trials that served, best first: the centres of local candidates. The study's own
/// when it has a feasible one, else the best of the prior's first.
fn anchors(sources: &[Source]) -> Vec<Vec<f64>> {
    let ranked = |s: &Source| {
        let mut ranked: Vec<Observation> = s
            .observed
            .iter()
            .filter(|o| o.tier != Tier::ConfigFailure)
            .cloned()
            .collect();
        ranked.sort_by(Observation::better_first);
        ranked
    };
    let own = ranked(&sources[0]);
    let mut out: Vec<Vec<f64>> = Vec::new();
    if own.first().is_none_or(|o| o.tier != Tier::Feasible) {
        out.extend(
            sources[1..]
                .iter()
                .flat_map(|s| ranked(s).into_iter().take(1))
                .map(|o| o.x),
        );
    }
    out.extend(own.into_iter().map(|o| o.x));
    out.truncate(ANCHORS);
    out
}

/// Every SLO some served trial broke with a measurement, each once.
fn broken_slos(served: &[(&Source, &Observation)]) -> Vec<Slo> {
    let mut slos: Vec<Slo> = Vec::new();
    for (source, o) in served {
        for v in &source.trials[o.index].violations {
            if let Violation::Slo { slo, .. } = v {
                if !slos.contains(slo) {
                    slos.push(slo.clone());
                }
            }
        }
    }
    slos
}

/// How far `trial` is from the bound of `slo`: the signed log-ratio of its measurement to the
/// threshold (negative when met, with a fixed margin where a side is not positive), the largest
/// learnt shortfall when it broke its SLOs unmeasured, `None` when it says nothing about this
/// SLO (a pending proposal, whose latencies are not known yet, says nothing about any).
fn margin(slo: &Slo, trial: &TrialRecord) -> Option<f64> {
    if trial.violations.contains(&Violation::Pending) {
        return None;
    }
    let measured = trial.metrics.get(&slo.metric_key()).copied().or_else(|| {
        trial.violations.iter().find_map(|v| match v {
            Violation::Slo {
                slo: broken,
                measured,
            } if broken == slo => *measured,
            _ => None,
        })
    });
    let Some(value) = measured.filter(|v| v.is_finite()) else {
        let unmeasured = trial.violations.iter().any(|v| v.shortfall().is_infinite());
        return unmeasured.then_some(MAX_SHORTFALL);
    };
    let signed = match slo.op {
        SloOp::Le if value > 0.0 && slo.threshold > 0.0 => (value / slo.threshold).ln(),
        SloOp::Ge if value > 0.0 && slo.threshold > 0.0 => (slo.threshold / value).ln(),
        _ if slo.holds(value) => FEASIBLE_MARGIN,
        _ => slo.miss(value),
    };
    Some(signed.clamp(-MAX_SHORTFALL, MAX_SHORTFALL))
}

/// Every copy of `x` with one categorical dimension switched to another category: the
/// neighbours a local perturbation rarely reaches.
fn category_switches(x: &[f64], categories: &[Option<usize>]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for (d, cats) in categories.iter().enumerate() {
        let Some(k) = cats.filter(|k| *k > 1) else {
            continue;
        };
        for cell in 0..k {
            let u = (cell as f64 + 0.5) / k as f64;
            if x[d].is_finite() && ((x[d] * k as f64) as usize).min(k - 1) == cell {
                continue;
            }
            let mut y = x.to_vec();
            y[d] = u;
            out.push(y);
        }
    }
    out
}

/// A copy of `x` perturbed by `width` with one of the `numeric` dimensions drawn uniformly;
/// `None` when there is no numeric dimension.
fn axis_move(
    x: &[f64],
    numeric: &[usize],
    width: f64,
    categories: &[Option<usize>],
    rng: &mut ChaCha8Rng,
) -> Option<Vec<f64>> {
    if numeric.is_empty() {
        return None;
    }
    let mut y = perturb(x, width, categories, rng);
    y[numeric[rng.random_range(0..numeric.len())]] = rng.random();
    Some(y)
}

/// A copy of `x` moved by a Gaussian of width `width` in numeric dimensions; each categorical
/// dimension switches to another category with probability `width`, scaled up so narrow
/// perturbations still try neighbours now and then.
fn perturb(x: &[f64], width: f64, categories: &[Option<usize>], rng: &mut ChaCha8Rng) -> Vec<f64> {
    x.iter()
        .zip(categories)
        .map(|(&c, cats)| match cats {
            _ if !c.is_finite() => rng.random(),
            Some(k) if *k > 1 => {
                if rng.random::<f64>() < (2.0 * width).min(0.3) {
                    let cell = ((c * *k as f64) as usize).min(k - 1);
                    ((cell + rng.random_range(1..*k)) % k) as f64 / *k as f64 + 0.5 / *k as f64
                } else {
                    c
                }
            }
            _ => {
                let z: f64 = StandardNormal.sample(rng);
                reflect(c + width * z)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use crate::sampler::testkit::{feasible, oom, plane, point, record, x_of};

    /// Runs `n` trials of a problem where the score rises with `x` but configs beyond
    /// `edge` break an SLO (or fail to start), returning the best feasible `x`.
    fn best_x(seed: u64, n: usize, edge: f64, fail: bool) -> f64 {
        let space = plane();
        let mut sampler = BoSampler::new(seed, Prior::default());
        let mut trials: Vec<TrialRecord> = Vec::new();
        for _ in 0..n {
            let p = sampler.ask(&space, &trials).unwrap();
            let x = x_of(&p);
            let score = 100.0 * (1.0 + x) - 10.0 * (p["y"].as_f64().unwrap() - 0.5).powi(2);
            let slo: Slo = "tpot:p99<=50ms".parse().unwrap();
            let tpot = 50.0 * (1.0 + (x - edge) * 4.0);
            let mut t = match (x > edge, fail) {
                (true, true) => oom(p),
                (false, _) => feasible(p, score),
                (true, false) => {
                    let mut t = record(p, Outcome::Infeasible, Some(score));
                    t.violations = vec![Violation::Slo {
                        slo: slo.clone(),
                        measured: Some(tpot),
                    }];
                    t
                }
            };
            if !fail {
                t.metrics.insert(slo.metric_key(), tpot);
            }
            trials.push(t);
        }
        trials
            .iter()
            .filter(|t| t.is_feasible())
            .map(|t| x_of(&t.params))
            .fold(0.0, f64::max)
    }

    #[test]
    fn each_row_is_held_to_its_own_noise_else_the_studys() {
        let row = |y: f64, own| ((vec![y], y, 0.0), own);
        let rows = vec![row(3.0, Some(0.01)), row(5.0, Some(0.2)), row(7.0, None)];
        let extra = |fallback| -> Vec<f64> {
            let noisy = with_measured_noise(rows.clone(), fallback);
            noisy.iter().map(|r| r.2).collect()
        };
        let variance = 8.0 / 3.0;
        let expected = |e: f64, y: f64| (e * (1.0 - (-y).exp())).powi(2) / variance;
        let held = extra(Some(0.05));
        for (got, want) in
            held.iter()
                .zip([expected(0.01, 3.0), expected(0.2, 5.0), expected(0.05, 7.0)])
        {
            assert!((got - want).abs() < 1e-12, "{held:?}");
        }
        assert_eq!(extra(None)[2], 0.0, "no noise known for the third row");
        let bare = vec![row(3.0, None), row(5.0, None)];
        let untouched: Vec<f64> = with_measured_noise(bare, None)
            .iter()
            .map(|r| r.2)
            .collect();
        assert_eq!(
            untouched,
            [0.0, 0.0],
            "rows without noise stay as they were"
        );
    }

    #[test]
    fn a_moved_mean_moves_the_modelled_value_of_its_config() {
        let space = plane();
        let dims = Dims::for_model(&space);
        let mut trials: Vec<TrialRecord> = (0..8)
            .map(|i| {
                let x = i as f64 / 8.0;
                feasible(point(x, 0.5), 100.0 * (1.0 + x))
            })
            .collect();
        let fitted = |trials: &[TrialRecord]| {
            let sources = [Source::of(&dims, trials, 0.0), Source::of(&dims, &[], 0.0)];
            let model = Model::fit(&sources, &dims.categories(), None, None);
            let x = dims.encode(&trials[3].params);
            model.score.expect("a score model").predict(&x).0
        };
        let once = fitted(&trials);
        trials[3].score = Some(trials[3].score.unwrap() * 1.3);
        let averaged = fitted(&trials);
        assert!(averaged > once + 0.05, "{once} -> {averaged}");
    }

    #[test]
    fn a_pending_proposal_is_not_learnt_as_an_slo_breach() {
        let slo: Slo = "tpot:p99<=50ms".parse().unwrap();
        let pending = &crate::sampler::with_pending(&[], &[point(0.5, 0.5)])[0];
        assert_eq!(margin(&slo, pending), None);
        let mut unmeasured = record(point(0.5, 0.5), Outcome::Infeasible, Some(1.0));
        unmeasured.violations = vec![Violation::Slo {
            slo: slo.clone(),
            measured: None,
        }];
        assert_eq!(margin(&slo, &unmeasured), Some(MAX_SHORTFALL));
    }

    #[test]
    fn finds_the_edge_of_the_slo_region() {
        for seed in 0..3 {
            let x = best_x(seed, 25, 0.6, false);
            assert!(x > 0.57, "seed {seed}: best feasible x {x}");
        }
    }

    #[test]
    fn finds_the_edge_of_the_failure_region() {
        for seed in 0..3 {
            let x = best_x(seed, 25, 0.6, true);
            assert!(x > 0.55, "seed {seed}: best feasible x {x}");
        }
    }

    /// Proposals of a 25-trial study beyond `x = 0.6`, where the score is highest but the
    /// latency sits on a plateau 5% over its bound (a batch capped by the client count).
    fn plateau_proposals(seed: u64) -> usize {
        let space = plane();
        let slo: Slo = "tpot:p99<=50ms".parse().unwrap();
        let mut sampler = BoSampler::new(seed, Prior::default());
        let mut trials: Vec<TrialRecord> = Vec::new();
        for _ in 0..25 {
            let p = sampler.ask(&space, &trials).unwrap();
            let x = x_of(&p);
            let tpot = if x > 0.6 { 52.5 } else { 40.0 + 16.0 * x };
            let mut t = if x > 0.6 {
                let mut t = record(p, Outcome::Infeasible, Some(200.0));
                t.violations = vec![Violation::Slo {
                    slo: slo.clone(),
                    measured: Some(tpot),
                }];
                t
            } else {
                feasible(p, 100.0 * (1.0 + x))
            };
            t.metrics.insert(slo.metric_key(), tpot);
            trials.push(t);
        }
        trials.iter().filter(|t| x_of(&t.params) > 0.6).count()
    }

    /// A study that starts with two SLO breaches reading exactly alike at `x = 0.1` (a latency
    /// cap no setting there moves) and three start-up failures beyond `x = 0.7`: the proposal
    /// that first finds a feasible config (between the two) within 12, if one does, and how many
    /// of the proposals failed to start.
    fn search_from_equal_breaches(seed: u64) -> (Option<usize>, usize) {
        let space = plane();
        let slo: Slo = "tpot:p99<=50ms".parse().unwrap();
        let run = |p: Params| {
            let x = x_of(&p);
            if x > 0.7 {
                return oom(p);
            }
            let tpot = if x < 0.3 { 120.0 } else { 40.0 };
            let mut t = if x < 0.3 {
                let mut t = record(p, Outcome::Infeasible, Some(50.0));
                t.violations = vec![Violation::Slo {
                    slo: slo.clone(),
                    measured: Some(tpot),
                }];
                t
            } else {
                feasible(p, 100.0)
            };
            t.metrics.insert(slo.metric_key(), tpot);
            t
        };
        let start = [(0.1, 0.2), (0.1, 0.8), (0.8, 0.5), (0.9, 0.1), (0.95, 0.9)];
        let mut trials: Vec<TrialRecord> =
            start.into_iter().map(|(x, y)| run(point(x, y))).collect();
        let mut sampler = BoSampler::new(seed, Prior::default());
        let mut found = None;
        for asked in 1..=12 {
            let t = run(sampler.ask(&space, &trials).unwrap());
            found = found.or(t.is_feasible().then_some(asked));
            trials.push(t);
            if found.is_some() {
                break;
            }
        }
        let failed = trials[start.len()..]
            .iter()
            .filter(|t| t.score.is_none())
            .count();
        (found, failed)
    }

    #[test]
    fn breaches_that_read_alike_do_not_send_the_search_into_known_failures() {
        for seed in 0..3 {
            let (found, failed) = search_from_equal_breaches(seed);
            assert!(
                found.is_some_and(|asked| asked <= 6) && failed <= 1,
                "seed {seed}: feasible at proposal {found:?}, {failed} failed to start"
            );
        }
    }

    /// An unweighted `EI · P(met)` puts 25 of 75 proposals there; the weighted breach 17.
    #[test]
    fn a_plateau_just_over_a_bound_does_not_hold_the_search() {
        let on_plateau: usize = (0..3).map(plateau_proposals).sum();
        assert!(
            on_plateau <= 21,
            "{on_plateau} of 75 proposals on the plateau"
        );
    }

    /// Proposals among the first `n` of a fresh study well inside the region beyond `x = 0.6`
    /// where `prior` failed (the prior's trials are 1/30 apart, so its edge is that blurred).
    fn blind_failures(prior: &Prior, n: usize) -> usize {
        let space = plane();
        (0..3)
            .map(|seed| {
                let mut sampler = BoSampler::new(seed, prior.clone());
                let mut trials: Vec<TrialRecord> = Vec::new();
                for _ in 0..n {
                    let p = sampler.ask(&space, &trials).unwrap();
                    let x = x_of(&p);
                    trials.push(if x > 0.6 {
                        oom(p)
                    } else {
                        feasible(p, 100.0 * x)
                    });
                }
                trials.iter().filter(|t| x_of(&t.params) > 0.7).count()
            })
            .sum()
    }

    #[test]
    fn a_failure_region_learnt_in_an_earlier_study_is_not_tried_blind() {
        let prior = Prior {
            trials: (0..30)
                .map(|i| {
                    let x = (i as f64 + 0.5) / 30.0;
                    let p = point(x, ((i * 7) % 30) as f64 / 30.0);
                    if x > 0.6 {
                        oom(p)
                    } else {
                        feasible(p, 50.0 * x)
                    }
                })
                .collect(),
            weight: 0.5,
            refresh: None,
        };
        let warm = blind_failures(&prior, 8);
        assert!(
            warm <= 1,
            "{warm} of 24 warm proposals in the failure region"
        );
        let cold = blind_failures(&Prior::default(), 8);
        assert!(
            cold >= 3,
            "control: cold start tried the region only {cold} times"
        );
    }

    #[test]
    fn a_long_study_is_fitted_on_the_rows_near_its_best_and_a_spread_of_the_rest() {
        let rows: Vec<Row> = (0..400)
            .map(|i| (vec![i as f64 / 400.0], i as f64, 0.0))
            .collect();
        let kept = thinned(rows, Some(&[0.9]));
        assert_eq!(kept.len(), MAX_FIT_POINTS);
        let near = kept.iter().filter(|r| (r.0[0] - 0.9).abs() < 0.1).count();
        assert!(near >= MAX_FIT_POINTS / 2, "{near} rows near the best");
        let early = kept.iter().filter(|r| r.0[0] < 0.5).count();
        assert!(
            early >= MAX_FIT_POINTS / 4,
            "{early} rows of the first half"
        );
        let short: Vec<Row> = (0..10).map(|i| (vec![i as f64], 0.0, 0.0)).collect();
        assert_eq!(thinned(short, None).len(), 10);
    }

    #[test]
    fn a_refreshable_prior_is_recomputed_at_three_six_and_ten_measured_trials() {
        use std::sync::{Arc, Mutex};
        let calls: Arc<Mutex<Vec<usize>>> = Arc::default();
        let seen = calls.clone();
        let prior = Prior {
            trials: Vec::new(),
            weight: 0.5,
            refresh: Some(super::super::Refresh(Arc::new(move |measured| {
                seen.lock().unwrap().push(measured.len());
                Some(measured.to_vec())
            }))),
        };
        let mut sampler = BoSampler::new(3, prior);
        let space = plane();
        let mut trials: Vec<TrialRecord> = Vec::new();
        for i in 0..12 {
            let mut trial = feasible(point(i as f64 / 12.0, 0.3), i as f64);
            trial.metrics.insert("output_throughput".into(), i as f64);
            // A proposal still pending counts for nothing.
            let pending = crate::sampler::with_pending(&trials, &[point(0.9, 0.9)]);
            sampler.ask(&space, &pending).unwrap();
            trials.push(trial);
        }
        assert_eq!(*calls.lock().unwrap(), vec![3, 6, 10]);
        assert_eq!(sampler.prior.trials.len(), 10);
    }

    #[test]
    fn proposals_replay_from_the_trial_list() {
        let trials: Vec<TrialRecord> = (0..8)
            .map(|i| feasible(point(i as f64 / 8.0, 0.5), i as f64))
            .collect();
        let a = BoSampler::new(4, Prior::default())
            .ask(&plane(), &trials)
            .unwrap();
        let b = BoSampler::new(4, Prior::default())
            .ask(&plane(), &trials)
            .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn an_axis_move_redraws_one_numeric_dimension() {
        let categories = [None, Some(2), None, None];
        let x = [0.5, 0.25, 0.5, 0.5];
        let mut rng = call_rng(1, 0, 0);
        let mut redrawn = [0usize; 4];
        for _ in 0..200 {
            let y = axis_move(&x, &[0, 2, 3], 0.0, &categories, &mut rng).unwrap();
            assert_eq!(y[1], x[1], "a categorical dimension stays");
            let moved: Vec<usize> = (0..4).filter(|&d| y[d] != x[d]).collect();
            assert_eq!(moved.len(), 1, "{y:?}");
            redrawn[moved[0]] += 1;
        }
        assert!(
            redrawn[0] > 40 && redrawn[2] > 40 && redrawn[3] > 40,
            "{redrawn:?}"
        );
        assert_eq!(axis_move(&x, &[], 0.0, &categories, &mut rng), None);
    }

    #[test]
    fn a_prior_that_ranks_the_studys_trials_wrongly_is_set_aside() {
        let space = plane();
        let dims = Dims::for_model(&space);
        let categories = dims.categories();
        let scored = |n: usize, score: fn(f64) -> f64| -> Vec<TrialRecord> {
            (0..n)
                .map(|i| {
                    let x = (i as f64 + 0.5) / n as f64;
                    feasible(point(x, 0.5), score(x))
                })
                .collect()
        };
        let own = scored(TRUST_CHECK_TRIALS, |x| 100.0 + 50.0 * x);
        let own = Source::of(&dims, &own, 0.0);
        let prior = |score: fn(f64) -> f64| Prior {
            trials: scored(12, score),
            weight: 0.5,
            refresh: None,
        };
        let (alike, unlike) = (prior(|x| 300.0 + 90.0 * x), prior(|x| 400.0 - 90.0 * x));
        let kept = checked_prior(&dims, &own, &alike, &categories);
        assert_eq!(kept.observed.len(), 12);
        assert!(
            kept.extra_noise < alike.extra_noise(),
            "confirmed: trusted more"
        );
        let dropped = checked_prior(&dims, &own, &unlike, &categories);
        assert!(dropped.observed.is_empty());
        let early = Source::of(&dims, &[], 0.0);
        let unchecked = checked_prior(&dims, &early, &unlike, &categories);
        assert_eq!(unchecked.observed.len(), 12, "too early to judge");
        assert_eq!(unchecked.extra_noise, unlike.extra_noise());

        // What a report says of it: the same check, from the space and the trial lists.
        let own_trials = scored(TRUST_CHECK_TRIALS, |x| 100.0 + 50.0 * x);
        let confirmed = check_prior(&space, &own_trials, &alike);
        assert_eq!(confirmed.trust, Trust::Confirmed);
        assert_eq!(confirmed.own_trials, TRUST_CHECK_TRIALS);
        assert!(confirmed.tau.is_some_and(|tau| tau > 0.5), "{confirmed:?}");
        let set_aside = check_prior(&space, &own_trials, &unlike);
        assert_eq!(set_aside.trust, Trust::SetAside);
        assert!(set_aside.tau.is_some_and(|tau| tau < 0.2), "{set_aside:?}");
        let too_early = check_prior(&space, &own_trials[..2], &unlike);
        assert_eq!((too_early.trust, too_early.tau), (Trust::Unchecked, None));
    }
}
