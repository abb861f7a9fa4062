//! Whether screening still pays. A screened config costs a screening run and, when it goes on,
//! a promotion: a full probe, less the screening run's requests when it went on from the
//! screening run's checkpoint on the same server; a config probed in full costs one full probe.
//! Where promotions run the full probe anew, screening costs more than it saves once the search
//! has closed in on good configs and most of them go on: every config that goes on paid for a
//! screening run it did not need. The next new config is screened only while the probe seconds
//! a screened config costs on average stay below those of a full probe (the full-probe
//! equivalents screening is there to save; start-ups are not weighed), judged on the study's
//! own recent configs. Where promotions go on from the checkpoint, that always holds. A config probed
//! in full still joins the rung (its full-probe score moved back by the median gap), so the
//! share that would go on stays measured and screening comes back once it filters again.

use super::Rung;
use crate::record::{added_probe_seconds, middle, Slo, TrialRecord};
use crate::space::ScreeningSettings;

/// Recent new configs whose share passing screening decides whether it pays.
const WINDOW: usize = 12;

/// Promoted configs before the gap between the two probes is known well enough to rank a
/// config probed in full among screening runs.
const MIN_PROMOTIONS: usize = 3;

/// True when the next new config should run a screening run first: always until the study has
/// three promoted configs and twelve new configs that served; after that, while a screening
/// run's median probe seconds plus the share of the last twelve new configs that pass
/// screening (as the rung stands now) times a promotion's median probe seconds stays below a
/// full probe's.
pub fn screening_pays(settings: &ScreeningSettings, slos: &[Slo], records: &[TrialRecord]) -> bool {
    let promotions = records.iter().filter(|r| r.promoted_from.is_some()).count();
    if promotions < MIN_PROMOTIONS {
        return true;
    }
    let rung = Rung::of(settings, slos, records);
    let recent: Vec<&TrialRecord> = records
        .iter()
        .rev()
        .filter(|r| r.is_launched_search_config() && rung.key(r).is_some())
        .take(WINDOW)
        .collect();
    if recent.len() < WINDOW {
        return true;
    }
    let passing = recent.iter().filter(|r| rung.passes(r)).count() as f64 / WINDOW as f64;
    match (
        median_probe_seconds(records, false),
        median_probe_seconds(records, true),
        median_promotion_seconds(records),
    ) {
        (Some(screening), Some(full), Some(promotion)) => screening + passing * promotion < full,
        _ => true,
    }
}

/// Median probe seconds a promotion in `records` added to its screening run: its full probe's,
/// less the screening run's where it went on from that run's checkpoint.
fn median_promotion_seconds(records: &[TrialRecord]) -> Option<f64> {
    let added: Vec<f64> = records
        .iter()
        .filter(|r| r.promoted_from.is_some() && r.score.is_some())
        .filter_map(|full| added_probe_seconds(full, records))
        .collect();
    (!added.is_empty()).then(|| middle(added))
}

/// Median probe seconds of the runs in `records` that served, full-probe ones or screening ones.
fn median_probe_seconds(records: &[TrialRecord], full: bool) -> Option<f64> {
    let seconds: Vec<f64> = records
        .iter()
        .filter(|r| r.is_full_probe() == full && r.score.is_some())
        .filter_map(|r| r.metrics.get("duration_s").copied())
        .collect();
    (!seconds.is_empty()).then(|| middle(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Params, Value};

    const HALF: ScreeningSettings = ScreeningSettings {
        fraction: 0.25,
        keep: 0.5,
        in_place: false,
    };

    /// A run of config `config` scoring `score` over `seconds` of probe.
    fn run(number: u32, config: i64, score: f64, seconds: f64) -> TrialRecord {
        let params = Params::from([("x".to_string(), Value::Int(config))]);
        TrialRecord {
            score: Some(score),
            metrics: [("duration_s".to_string(), seconds)].into(),
            ..TrialRecord::new(number, params, Outcome::Feasible)
        }
    }

    /// Three configs screened in `screening_s` and promoted to 4 s full runs reading 10%
    /// higher, then twelve more screened configs, better and better (the best eight of the
    /// rung's fifteen pass as it stands).
    fn study(screening_s: f64) -> Vec<TrialRecord> {
        let screened = |number: u32, score: f64| TrialRecord {
            fidelity: Some(0.25),
            ..run(number, i64::from(number), score, screening_s)
        };
        let mut records: Vec<TrialRecord> = (0..3)
            .map(|n| screened(n, 100.0 * f64::from(n + 1)))
            .collect();
        for from in 0..3 {
            let score = 110.0 * f64::from(from + 1);
            let promoted = TrialRecord {
                promoted_from: Some(from),
                ..run(3 + from, i64::from(from), score, 4.0)
            };
            records.push(promoted);
        }
        for n in 6..18 {
            records.push(screened(n, 100.0 * f64::from(n - 2)));
        }
        records
    }

    #[test]
    fn screening_pays_while_a_screened_config_costs_less_than_a_full_run() {
        // Two thirds of the last twelve pass: a screened config costs 1 + 2/3 × 4 < 4 s...
        assert!(screening_pays(&HALF, &[], &study(1.0)));
        // ...but 2 + 2/3 × 4 > 4 s once a screening run costs half a full one.
        assert!(!screening_pays(&HALF, &[], &study(2.0)));
    }

    #[test]
    fn screening_always_pays_once_promotions_go_on_from_the_checkpoint() {
        let mut records = study(2.0);
        assert!(!screening_pays(&HALF, &[], &records));
        for r in records.iter_mut().filter(|r| r.promoted_from.is_some()) {
            r.continued = true;
        }
        // 2 + 2/3 × (4 − 2) < 4 s: only the configs that stop save, and none costs more.
        assert!(screening_pays(&HALF, &[], &records));
    }

    #[test]
    fn screening_goes_on_until_the_gap_and_the_recent_share_are_known() {
        let records = study(2.0);
        // Twelve new configs but only two promotions.
        let two_promoted: Vec<TrialRecord> = records
            .iter()
            .filter(|r| r.promoted_from != Some(2))
            .cloned()
            .collect();
        assert!(screening_pays(&HALF, &[], &two_promoted));
        // Three promotions but only eleven new configs (six of which would pass).
        assert!(screening_pays(&HALF, &[], &records[..14]));
    }

    #[test]
    fn configs_probed_in_full_rank_as_screened_and_bring_screening_back_once_it_filters() {
        let probed_in_full = |records: &mut Vec<TrialRecord>, score: f64| {
            for _ in 0..WINDOW {
                let n = records.len() as u32;
                records.push(run(n, i64::from(n), score, 4.0));
            }
        };
        let mut records = study(2.0);
        // Better than every screening run, moved back by the 10% gap: all would pass.
        probed_in_full(&mut records, 3000.0);
        assert!(!screening_pays(&HALF, &[], &records));
        // Worse than most screening runs: none of the last twelve would pass.
        probed_in_full(&mut records, 150.0);
        assert!(screening_pays(&HALF, &[], &records));
    }

    #[test]
    fn only_configs_the_sampler_proposed_count_as_probed_in_full_for_want_of_screening() {
        let config = run(7, 7, 10.0, 4.0);
        assert!(config.skipped_screening());
        let baseline = TrialRecord {
            baseline: true,
            ..config.clone()
        };
        let repeat = TrialRecord {
            repeat_of: Some(3),
            ..config.clone()
        };
        let promotion = TrialRecord {
            promoted_from: Some(3),
            ..config.clone()
        };
        let screened = TrialRecord {
            fidelity: Some(0.25),
            ..config
        };
        for r in [baseline, repeat, promotion, screened] {
            assert!(!r.skipped_screening(), "{r:?}");
        }
    }
}
