//! Screening at low fidelity: successive halving over the probe length with ASHA's
//! asynchronous promotion rule. Every new config first runs a short probe (`fraction` of the
//! full one); when it lands, it goes on to the full probe only if it ranks among the best
//! `keep` share of every screening run so far. Only full-probe runs can win.

use crate::probe::{LoadSpec, WorkloadSpec};
use crate::record::{TrialRecord, Violation};
use crate::space::ScreeningSettings;
use std::time::Duration;

/// How far (log-ratio, about 5%) a screening run may miss an SLO and still go on: a short
/// probe's tail percentiles are noisy, and the full probe judges it.
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

/// True when the screening run `screened` goes on to the full probe: it served, met its SLOs
/// (or nearly), and ranks within the best `keep` share of the screening runs in `records` that
/// served (itself included), ranked as the study ranks them (SLOs met first, then score).
pub fn promotes(
    settings: &ScreeningSettings,
    screened: &TrialRecord,
    records: &[TrialRecord],
) -> bool {
    let Some(own) = rank_key(screened).filter(|(near, _)| *near) else {
        return false;
    };
    let rung: Vec<(bool, f64)> = records
        .iter()
        .filter(|r| !r.is_full_probe() && r.number != screened.number)
        .filter_map(rank_key)
        .chain(std::iter::once(own))
        .collect();
    let places = (settings.keep * rung.len() as f64).ceil() as usize;
    let ahead = rung
        .iter()
        .filter(|other| ranks_above(**other, own))
        .count();
    ahead < places.max(1)
}

/// Screening runs of `records` that passed screening but have not run the full probe yet.
pub fn awaiting_promotion<'r>(
    settings: &ScreeningSettings,
    records: &'r [TrialRecord],
) -> Vec<&'r TrialRecord> {
    records
        .iter()
        .filter(|r| !r.is_full_probe() && r.repeat_of.is_none())
        .filter(|r| !records.iter().any(|p| p.promoted_from == Some(r.number)))
        .filter(|r| promotes(settings, r, records))
        .collect()
}

/// Whether a run served and (nearly) met its SLOs, and its score; `None` when it did not serve.
fn rank_key(record: &TrialRecord) -> Option<(bool, f64)> {
    let score = record.score.filter(|s| s.is_finite())?;
    let shortfall: f64 = record.violations.iter().map(Violation::shortfall).sum();
    Some((shortfall <= NEAR_MISS, score))
}

fn ranks_above(a: (bool, f64), b: (bool, f64)) -> bool {
    a.0 && !b.0 || a.0 == b.0 && a.1 > b.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Params};

    fn screened(number: u32, score: Option<f64>, tpot_ms: Option<f64>) -> TrialRecord {
        let mut r = TrialRecord::new(number, Params::new(), Outcome::Feasible);
        r.fidelity = Some(0.25);
        r.score = score;
        if let Some(ms) = tpot_ms.filter(|ms| *ms > 50.0) {
            r.outcome = Outcome::Infeasible;
            r.violations = vec![Violation::Slo {
                slo: "tpot:p99<=50ms".parse().unwrap(),
                measured: Some(ms),
            }];
        }
        r
    }

    const HALF: ScreeningSettings = ScreeningSettings {
        fraction: 0.25,
        keep: 0.5,
    };

    #[test]
    fn only_the_best_share_of_the_rung_goes_on() {
        let mut rung: Vec<TrialRecord> = Vec::new();
        let mut promoted = Vec::new();
        for (i, score) in [10.0, 5.0, 20.0, 1.0, 30.0, 2.0, 3.0, 4.0, 25.0]
            .into_iter()
            .enumerate()
        {
            let r = screened(i as u32, Some(score), None);
            rung.push(r.clone());
            if promotes(&HALF, &r, &rung) {
                promoted.push(score);
            }
        }
        // The first always goes on; afterwards a run goes on while it ranks in the best half.
        assert_eq!(promoted, [10.0, 20.0, 30.0, 25.0]);
    }

    #[test]
    fn slo_breaches_and_failures_stay_behind_but_count_in_the_rung() {
        let fast_but_slow_tokens = screened(0, Some(100.0), Some(80.0));
        assert!(!promotes(
            &HALF,
            &fast_but_slow_tokens,
            std::slice::from_ref(&fast_but_slow_tokens)
        ));
        let near_miss = screened(1, Some(50.0), Some(51.0));
        let rung = [fast_but_slow_tokens, near_miss.clone()];
        assert!(promotes(&HALF, &near_miss, &rung));
        let failed = TrialRecord {
            fidelity: Some(0.25),
            ..TrialRecord::new(2, Params::new(), Outcome::Feasible)
        };
        assert!(!promotes(&HALF, &failed, std::slice::from_ref(&failed)));
    }

    #[test]
    fn a_promoted_run_no_longer_awaits_promotion() {
        let first = screened(0, Some(10.0), None);
        let mut records = vec![first.clone()];
        assert_eq!(awaiting_promotion(&HALF, &records).len(), 1);
        records.push(TrialRecord {
            promoted_from: Some(0),
            fidelity: None,
            ..first
        });
        assert!(awaiting_promotion(&HALF, &records).is_empty());
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
