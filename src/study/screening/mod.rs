//! Screening at low fidelity: successive halving over the probe length with ASHA's
//! asynchronous promotion rule. Every new config first runs a short probe (`fraction` of the
//! full one); when it lands, it goes on to the full probe only if it ranks among the best
//! `keep` share of every screening run so far. Only full-probe runs can win. While most new
//! configs would go on, screening pauses ([`screening_pays`]).
//!
//! A short probe reads latencies systematically lower (or higher) than the full one: a
//! closed loop's batch drains sooner, fewer waves of prefills interfere, a p99 over fewer
//! requests reaches less deep into the tail. Whether a screening run met its SLOs is therefore
//! judged on the full probe's scale: each SLO's measurement is moved by the median gap between
//! the full and the screening run of the configs promoted so far.
//!
//! Nor can a short probe rank configs finer than the gap in score varies from config to config:
//! two configs a screening run reads 0.01% apart may read 0.01% apart the other way on the full
//! probe. A run within that resolution of the bar (the gap's median absolute deviation over the
//! promoted configs, on a log scale) ties with it and goes on, so a search that has closed in on
//! the optimum does not turn its best configs away on a coin toss.

use crate::probe::{LoadSpec, WorkloadSpec};
use crate::record::{
    promotion_gap, promotion_gap_spread, squash, unsquash, Slo, TrialRecord, Violation,
};
use crate::space::{ScreeningSettings, StudySpec};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

mod payoff;

pub use payoff::screening_pays;

/// How far (log-ratio, about 5%) a screening run may miss an SLO, on the full probe's scale,
/// and still go on: the gap varies from config to config, and the full probe judges.
const NEAR_MISS: f64 = 0.05;

/// The probe of a screening run: `fraction` of the full probe's measured requests (or
/// duration), and at least one wave of a closed loop (its concurrency) where the full probe
/// has that many, so the run reaches the full batch; warm-up and everything else as in the
/// full probe.
pub fn screening_workload(full: &WorkloadSpec, fraction: f64) -> WorkloadSpec {
    let share = |n: Option<u32>, floor: u32| {
        n.map(|n| {
            let scaled = (f64::from(n) * fraction).ceil() as u32;
            scaled.max(floor.min(n)).max(1)
        })
    };
    let shorter = |d: Option<Duration>| d.map(|d| d.mul_f64(fraction));
    let load = match &full.load {
        LoadSpec::Closed {
            concurrency,
            requests,
            duration,
        } => LoadSpec::Closed {
            concurrency: *concurrency,
            requests: share(*requests, *concurrency),
            duration: shorter(*duration),
        },
        LoadSpec::Open {
            rate,
            burstiness,
            max_concurrency,
            requests,
            duration,
        } => LoadSpec::Open {
            rate: *rate,
            burstiness: *burstiness,
            max_concurrency: *max_concurrency,
            requests: share(*requests, 1),
            duration: shorter(*duration),
        },
    };
    WorkloadSpec {
        load,
        ..full.clone()
    }
}

/// The share of the full probe `full` that a screening run of `fraction` sends: more than
/// `fraction` where a closed loop's run must send a whole wave of its concurrency; `fraction`
/// for a probe bounded by a duration.
pub fn sent_share(full: &WorkloadSpec, fraction: f64) -> f64 {
    let requests = |w: &WorkloadSpec| match w.load {
        LoadSpec::Closed { requests, .. } | LoadSpec::Open { requests, .. } => requests,
    };
    match (
        requests(full),
        requests(&screening_workload(full, fraction)),
    ) {
        (Some(all), Some(sent)) if all > 0 => f64::from(sent) / f64::from(all),
        _ => fraction,
    }
}

/// The warning of [`short_probe_warning`] for the probe and screening of `space`, if any.
pub(crate) fn probe_warning(space: &StudySpec) -> Option<String> {
    let settings = space.search.screening?;
    short_probe_warning(&space.probe, &settings)
}

/// A warning when a screening run of `full` must send more than `settings.fraction` of it: a
/// closed loop's run sends at least one wave of its concurrency, so on a probe of only a few
/// waves every screened config costs a large share of a full probe and screening saves little.
fn short_probe_warning(full: &WorkloadSpec, settings: &ScreeningSettings) -> Option<String> {
    let LoadSpec::Closed {
        concurrency,
        requests: Some(requests),
        ..
    } = &full.load
    else {
        return None;
    };
    let LoadSpec::Closed {
        requests: Some(screened),
        ..
    } = screening_workload(full, settings.fraction).load
    else {
        return None;
    };
    let asked = (f64::from(*requests) * settings.fraction).ceil() as u32;
    if screened <= asked {
        return None;
    }
    let wanted = (f64::from(*concurrency) / settings.fraction).ceil() as u32;
    Some(format!(
        "search.screening: a screening run sends {screened} of the probe's {requests} requests \
         ({:.0}%, one wave of its concurrency {concurrency}), not the {:.0}% asked, so screening \
         saves little here; set probe.load.requests to at least {wanted} for screening to pay, \
         or leave screening off",
        100.0 * f64::from(screened) / f64::from(*requests),
        100.0 * settings.fraction,
    ))
}

/// True when the screening run `screened` goes on to the full probe: it served, met `slos`
/// (or nearly) on the full probe's scale, and ranks within the best `keep` share of the
/// screening runs in `records` that served (itself included), ranked as the study ranks them
/// (SLOs met first, then score).
pub fn promotes(
    settings: &ScreeningSettings,
    slos: &[Slo],
    screened: &TrialRecord,
    records: &[TrialRecord],
) -> bool {
    Rung::of(settings, slos, records).passes(screened)
}

/// The score a new screening run must beat to go on, given the screening runs in `records`:
/// as many of them as the best `keep` share of the rung (the new run included) holds must
/// rank above it to keep it back, so the bar is the score of the last of those places among
/// the runs that (nearly) met their SLOs, less the resolution within which a run ties with it;
/// `None` while fewer met them.
pub fn promotion_bar(
    settings: &ScreeningSettings,
    slos: &[Slo],
    records: &[TrialRecord],
) -> Option<f64> {
    Rung::of(settings, slos, records).bar()
}

/// What a screening run must pass to go on, fixed when it starts: the rung as it stood then.
/// A screening run that is the first part of the full probe checks it at its checkpoint
/// ([`checkpoint_after`]) and goes on there on the same server, or stops.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// The score to beat ([`promotion_bar`]); `None`: every run that (nearly) met the SLOs
    /// goes on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bar: Option<f64>,
    /// Each SLO's gap (log-ratio) from a screening run's reading to the full probe's.
    #[serde(default)]
    pub slo_gaps: Vec<f64>,
}

impl Gate {
    /// The gate of the rung of `records`.
    pub fn of(settings: &ScreeningSettings, slos: &[Slo], records: &[TrialRecord]) -> Gate {
        let rung = Rung::of(settings, slos, records);
        Gate {
            bar: rung.bar(),
            slo_gaps: rung.gaps,
        }
    }

    /// Whether the screening run `screened`, not in the rung, goes on: it (nearly) met `slos`
    /// on the full probe's scale and beats the bar ([`promotes`] with the rung of the gate).
    pub fn passes(&self, slos: &[Slo], screened: &TrialRecord) -> bool {
        match rank_key(screened, slos, &self.slo_gaps) {
            Some((true, score)) => self.bar.is_none_or(|bar| score >= bar),
            _ => false,
        }
    }
}

/// Measured requests after which a screening run of `fraction` that is the first part of the
/// full probe `full` reaches its checkpoint: as many as [`screening_workload`] sends; `None`
/// for a probe bounded by a duration.
pub fn checkpoint_after(full: &WorkloadSpec, fraction: f64) -> Option<u64> {
    match screening_workload(full, fraction).load {
        LoadSpec::Closed {
            requests: Some(n),
            duration: None,
            ..
        }
        | LoadSpec::Open {
            requests: Some(n),
            duration: None,
            ..
        } => Some(u64::from(n)),
        _ => None,
    }
}

/// Screening runs of `records` that passed screening but have not run the full probe yet.
pub fn awaiting_promotion<'r>(
    settings: &ScreeningSettings,
    slos: &[Slo],
    records: &'r [TrialRecord],
) -> Vec<&'r TrialRecord> {
    let promoted: HashSet<u32> = records.iter().filter_map(|r| r.promoted_from).collect();
    let rung = Rung::of(settings, slos, records);
    records
        .iter()
        .filter(|r| !r.is_full_probe() && r.repeat_of.is_none())
        .filter(|r| !promoted.contains(&r.number) && rung.passes(r))
        .collect()
}

/// The screening runs of a study that served, ranked on the full probe's scale.
struct Rung<'a> {
    keep: f64,
    slos: &'a [Slo],
    /// Each SLO's gap from a screening run's reading to the full probe's.
    gaps: Vec<f64>,
    /// Score gap (squashed) from a screening run's reading to the full probe's.
    score_gap: f64,
    /// Trial number and rank key of each screening run that served (and of each new config
    /// that went straight to the full probe, see [`Rung::key`]).
    ranked: Vec<(u32, (bool, f64))>,
    /// Difference of squashed scores within which two screening runs rank alike.
    tie: f64,
}

impl<'a> Rung<'a> {
    fn of(settings: &ScreeningSettings, slos: &'a [Slo], records: &[TrialRecord]) -> Self {
        let mut rung = Rung {
            keep: settings.keep,
            slos,
            gaps: slos
                .iter()
                .map(|slo| full_probe_gap(slo, records))
                .collect(),
            score_gap: promotion_gap(records, |r| r.score.map(squash)),
            ranked: Vec::new(),
            tie: promotion_gap_spread(records, |r| r.score.map(squash)),
        };
        rung.ranked = records
            .iter()
            .filter(|r| !r.is_full_probe() || r.skipped_screening())
            .filter_map(|r| Some((r.number, rung.key(r)?)))
            .collect();
        rung
    }

    /// Whether `record` (nearly) met the SLOs on the full probe's scale, and its score on the
    /// screening scale: a new config that went straight to the full probe ranks by its full
    /// probe moved back by the median gap, as if it had been screened; `None` when it did not
    /// serve.
    fn key(&self, record: &TrialRecord) -> Option<(bool, f64)> {
        if !record.is_full_probe() {
            return rank_key(record, self.slos, &self.gaps);
        }
        let (near, score) = rank_key(record, self.slos, &vec![0.0; self.slos.len()])?;
        Some((near, unsquash(squash(score) - self.score_gap)))
    }

    /// See [`promotion_bar`].
    fn bar(&self) -> Option<f64> {
        let places = self.places(self.ranked.len());
        let mut near: Vec<f64> = self
            .ranked
            .iter()
            .filter(|(_, (near, _))| *near)
            .map(|(_, (_, score))| *score)
            .collect();
        near.sort_by(|a, b| b.total_cmp(a));
        near.get(places - 1)
            .map(|bar| unsquash(squash(*bar) - self.tie))
    }

    /// Places in the best `keep` share of a rung of `others` runs and one more.
    fn places(&self, others: usize) -> usize {
        ((self.keep * (others + 1) as f64).ceil() as usize).max(1)
    }

    /// Whether `screened` (near-)meets the SLOs and ranks within the best `keep` share of the
    /// rung, itself included, or ties with the last place in it.
    fn passes(&self, screened: &TrialRecord) -> bool {
        let Some((_, score)) = self.key(screened).filter(|(near, _)| *near) else {
            return false;
        };
        let own = (true, unsquash(squash(score) + self.tie));
        let others: Vec<(bool, f64)> = self
            .ranked
            .iter()
            .filter(|(number, _)| *number != screened.number)
            .map(|(_, key)| *key)
            .collect();
        let ahead = others
            .iter()
            .filter(|other| ranks_above(**other, own))
            .count();
        ahead < self.places(others.len())
    }
}

/// How much further the full probe reads `slo` past its bound than a screening run of the same
/// config (log-ratio): the median over the promoted configs of `records`; 0 before any.
pub fn full_probe_gap(slo: &Slo, records: &[TrialRecord]) -> f64 {
    promotion_gap(records, |r| {
        slo.log_margin(*r.metrics.get(&slo.metric_key())?)
    })
}

/// Whether a screening run served and (nearly) met `slos` once moved by `gaps`, and its score;
/// `None` when it did not serve. A run pruned on an SLO, or missing an SLO's measurement while
/// it broke something, is not near.
fn rank_key(record: &TrialRecord, slos: &[Slo], gaps: &[f64]) -> Option<(bool, f64)> {
    let score = record.score.filter(|s| s.is_finite())?;
    // A run cut short as outranked ranks by what it measured: the cut changes no verdict.
    let cut = record.was_outranked();
    let only_slos = record.violations.iter().all(|v| {
        matches!(v, Violation::Slo { .. }) || cut && matches!(v, Violation::Pruned { .. })
    });
    let near = only_slos
        && slos
            .iter()
            .zip(gaps)
            .all(|(slo, gap)| match record.metrics.get(&slo.metric_key()) {
                Some(&value) => match slo.log_margin(value) {
                    Some(margin) => margin + gap <= NEAR_MISS,
                    None => slo.holds(value),
                },
                None => record.violations.is_empty(),
            });
    Some((near, score))
}

fn ranks_above(a: (bool, f64), b: (bool, f64)) -> bool {
    a.0 && !b.0 || a.0 == b.0 && a.1 > b.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Params, Value};

    fn tpot() -> Slo {
        "tpot:p99<=50ms".parse().unwrap()
    }

    #[test]
    fn a_probe_too_short_for_its_fraction_is_warned_of_with_the_length_that_pays() {
        let settings = ScreeningSettings::default();
        let warning =
            short_probe_warning(&WorkloadSpec::closed_random(64, 16, 192, 384), &settings).unwrap();
        assert!(
            warning.contains("sends 192 of the probe's 384 requests (50%"),
            "{warning}"
        );
        assert!(warning.contains("at least 768"), "{warning}");
        assert_eq!(
            short_probe_warning(&WorkloadSpec::closed_random(64, 16, 16, 384), &settings),
            None
        );
        // A probe of a single wave is screened in full: screening only adds runs.
        let one_wave = WorkloadSpec::closed_random(64, 16, 192, 384);
        assert_eq!(sent_share(&one_wave, settings.fraction), 0.5);
        let long = WorkloadSpec::closed_random(64, 16, 16, 384);
        assert_eq!(sent_share(&long, settings.fraction), 0.25);
        let whole = short_probe_warning(&WorkloadSpec::closed_random(64, 16, 384, 384), &settings);
        assert!(whole
            .unwrap()
            .contains("sends 384 of the probe's 384 requests (100%"));
    }

    /// A screening run of config `config` scoring `score` with `tpot_ms` p99 TPOT.
    fn run(
        number: u32,
        config: i64,
        score: f64,
        tpot_ms: f64,
        fidelity: Option<f64>,
    ) -> TrialRecord {
        let params = Params::from([("x".to_string(), Value::Int(config))]);
        let mut r = TrialRecord::new(number, params, Outcome::Feasible);
        r.fidelity = fidelity;
        r.score = Some(score);
        r.metrics.insert(tpot().metric_key(), tpot_ms);
        if tpot_ms > 50.0 {
            r.outcome = Outcome::Infeasible;
            r.violations = vec![Violation::Slo {
                slo: tpot(),
                measured: Some(tpot_ms),
            }];
        }
        r
    }

    fn screened(number: u32, score: f64, tpot_ms: f64) -> TrialRecord {
        run(number, i64::from(number), score, tpot_ms, Some(0.25))
    }

    const HALF: ScreeningSettings = ScreeningSettings {
        fraction: 0.25,
        keep: 0.5,
        in_place: false,
    };

    #[test]
    fn only_the_best_share_of_the_rung_goes_on() {
        let mut rung: Vec<TrialRecord> = Vec::new();
        let mut promoted = Vec::new();
        for (i, score) in [10.0, 5.0, 20.0, 1.0, 30.0, 2.0, 3.0, 4.0, 25.0]
            .into_iter()
            .enumerate()
        {
            let r = screened(i as u32, score, 40.0);
            rung.push(r.clone());
            if promotes(&HALF, &[tpot()], &r, &rung) {
                promoted.push(score);
            }
        }
        // The first always goes on; afterwards a run goes on while it ranks in the best half.
        assert_eq!(promoted, [10.0, 20.0, 30.0, 25.0]);
    }

    #[test]
    fn the_bar_is_the_score_a_new_run_must_beat_to_go_on() {
        let slos = [tpot()];
        let mut rung: Vec<TrialRecord> = [10.0, 5.0, 20.0, 1.0]
            .into_iter()
            .enumerate()
            .map(|(i, score)| screened(i as u32, score, 40.0))
            .collect();
        // A breach counts in the rung (four others and the new run: three places) but sets
        // no bar.
        rung.push(screened(4, 50.0, 80.0));
        assert_eq!(promotion_bar(&HALF, &slos, &rung), Some(5.0));
        for (score, goes_on) in [(4.9, false), (5.1, true)] {
            let mut with = rung.clone();
            with.push(screened(5, score, 40.0));
            assert_eq!(promotes(&HALF, &slos, &with[5], &with), goes_on, "{score}");
        }
        assert_eq!(
            promotion_bar(&HALF, &slos, &rung[4..]),
            None,
            "none met the SLO"
        );
    }

    #[test]
    fn slo_breaches_and_failures_stay_behind_but_count_in_the_rung() {
        let slos = [tpot()];
        let fast_but_slow_tokens = screened(0, 100.0, 80.0);
        assert!(!promotes(
            &HALF,
            &slos,
            &fast_but_slow_tokens,
            std::slice::from_ref(&fast_but_slow_tokens)
        ));
        let near_miss = screened(1, 50.0, 50.5);
        let rung = [fast_but_slow_tokens, near_miss.clone()];
        assert!(promotes(&HALF, &slos, &near_miss, &rung));
        let failed = TrialRecord {
            fidelity: Some(0.25),
            ..TrialRecord::new(2, Params::new(), Outcome::Feasible)
        };
        assert!(!promotes(
            &HALF,
            &slos,
            &failed,
            std::slice::from_ref(&failed)
        ));
    }

    #[test]
    fn slos_are_judged_on_the_full_probes_scale_once_a_gap_is_known() {
        let slos = [tpot()];
        // Config 0 read 40 ms screened and 48 ms in full: the full probe reads 20% higher.
        let mut records = vec![screened(0, 100.0, 40.0), run(1, 0, 95.0, 48.0, None)];
        records[1].promoted_from = Some(0);
        assert!((full_probe_gap(&tpot(), &records) - 1.2f64.ln()).abs() < 1e-9);
        // 44 ms screened is about 53 ms in full: a miss, though the short probe met the SLO.
        let optimistic = screened(2, 120.0, 44.0);
        records.push(optimistic.clone());
        assert!(!promotes(&HALF, &slos, &optimistic, &records));
        let safe = screened(3, 90.0, 38.0);
        records.push(safe.clone());
        assert!(promotes(&HALF, &slos, &safe, &records));
    }

    #[test]
    fn a_run_within_the_screening_resolution_of_the_bar_ties_with_it_and_goes_on() {
        let slos = [tpot()];
        let mut records: Vec<TrialRecord> = [100.0, 200.0, 300.0]
            .into_iter()
            .enumerate()
            .map(|(i, score)| screened(i as u32, score, 40.0))
            .collect();
        let runs_before_any_promotion = records.clone();
        // The full probe reads these configs 9–10% higher, the gap varying by about 0.85%.
        for (from, full) in [(0, 110.0), (1, 222.0), (2, 327.0)] {
            let mut promoted = run(3 + from, i64::from(from), full, 45.0, None);
            promoted.promoted_from = Some(from);
            records.push(promoted);
        }
        // Three screening runs and a new one: two places, the second held by 200.
        let bar = promotion_bar(&HALF, &slos, &records).unwrap();
        assert!(
            (bar - (201.0 * (-0.0085f64).exp() - 1.0)).abs() < 0.1,
            "{bar}"
        );
        for (score, goes_on) in [(199.0, true), (195.0, false)] {
            let mut with = records.clone();
            with.push(screened(6, score, 40.0));
            assert_eq!(promotes(&HALF, &slos, &with[6], &with), goes_on, "{score}");
        }
        // Before the resolution is known, 199 ranks below 200 and stays behind.
        let mut unresolved = runs_before_any_promotion;
        unresolved.push(screened(6, 199.0, 40.0));
        assert!(!promotes(&HALF, &slos, &unresolved[3], &unresolved));
    }

    #[test]
    fn the_gate_fixed_at_the_start_lets_on_what_the_rung_would_promote_at_the_end() {
        let slos = [tpot()];
        // Config 0 read 40 ms screened and 48 ms in full; four more screening runs.
        let mut records = vec![screened(0, 100.0, 40.0), run(1, 0, 95.0, 48.0, None)];
        records[1].promoted_from = Some(0);
        for (i, score) in [(2, 80.0), (3, 120.0), (4, 60.0), (5, 150.0)] {
            records.push(screened(i, score, 38.0));
        }
        let gate = Gate::of(&HALF, &slos, &records);
        for (score, tpot_ms) in [(90.0, 38.0), (110.0, 38.0), (130.0, 44.0), (200.0, 30.0)] {
            let new = screened(6, score, tpot_ms);
            let mut with = records.clone();
            with.push(new.clone());
            let promoted = promotes(&HALF, &slos, &new, &with);
            assert_eq!(
                gate.passes(&slos, &new),
                promoted,
                "{score} at {tpot_ms} ms"
            );
        }
        assert!(gate.passes(&slos, &screened(6, 200.0, 30.0)));
        assert!(
            !gate.passes(&slos, &screened(6, 130.0, 44.0)),
            "53 ms in full"
        );
    }

    #[test]
    fn a_promoted_run_no_longer_awaits_promotion() {
        let first = screened(0, 10.0, 40.0);
        let mut records = vec![first.clone()];
        assert_eq!(awaiting_promotion(&HALF, &[tpot()], &records).len(), 1);
        records.push(TrialRecord {
            promoted_from: Some(0),
            fidelity: None,
            ..first
        });
        assert!(awaiting_promotion(&HALF, &[tpot()], &records).is_empty());
    }

    #[test]
    fn only_a_probe_of_counted_requests_has_a_checkpoint() {
        let full = WorkloadSpec::closed_random(64, 64, 32, 400);
        assert_eq!(checkpoint_after(&full, 0.25), Some(100));
        let mut timed = full.clone();
        timed.load = LoadSpec::Closed {
            concurrency: 32,
            requests: Some(400),
            duration: Some(Duration::from_secs(600)),
        };
        assert_eq!(checkpoint_after(&timed, 0.25), None);
    }

    #[test]
    fn a_screening_probe_is_a_share_of_the_full_one_but_at_least_a_wave() {
        let full = WorkloadSpec::closed_random(64, 64, 32, 400);
        let LoadSpec::Closed { requests, .. } = screening_workload(&full, 0.25).load else {
            panic!("closed stays closed")
        };
        assert_eq!(requests, Some(100));
        let LoadSpec::Closed { requests, .. } = screening_workload(&full, 0.05).load else {
            panic!("closed stays closed")
        };
        assert_eq!(requests, Some(32));
    }
}
