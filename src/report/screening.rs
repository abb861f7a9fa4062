//! The report's screening section: how many configs a short probe screened, how many went on
//! to the full probe, how many were cut short, how many were probed in full straight away while
//! screening did not pay, and the probe seconds spent at each fidelity (a promotion in place
//! counted for the requests it added to its screening run).

use crate::export::Block;
use crate::record::{added_probe_seconds, TrialRecord};
use std::collections::BTreeMap;

/// The screening paragraph of `records`; `None` when no trial was a screening run.
pub(crate) fn section(records: &[TrialRecord]) -> Option<Block> {
    let screened = records.iter().filter(|r| !r.is_full_probe()).count();
    if screened == 0 {
        return None;
    }
    let promoted = records.iter().filter(|r| r.promoted_from.is_some()).count();
    let cut = records.iter().filter(|r| r.was_outranked()).count();
    let skipped = match records.iter().filter(|r| r.skipped_screening()).count() {
        0 => String::new(),
        n => format!(
            "; {n} probed in full straight away, as most screened configs went on then and \
             screening cost more probe time than it saved"
        ),
    };
    let in_place = match records.iter().filter(|r| r.continued).count() {
        0 => String::new(),
        n => format!(" ({n} in place, going on from the screening run on its server)"),
    };
    // Fidelity in per mille, so that equal shares group together.
    let mut seconds: BTreeMap<u32, f64> = BTreeMap::new();
    for r in records {
        let share = r.fidelity.unwrap_or(1.0);
        let added = added_probe_seconds(r, records).unwrap_or(0.0);
        *seconds.entry((share * 1000.0).round() as u32).or_default() += added;
    }
    let spent: Vec<String> = seconds
        .iter()
        .rev()
        .map(|(share, s)| match share {
            1000 => format!("{s:.1} s at the full probe"),
            _ => format!("{s:.1} s at {} of it", percent(*share)),
        })
        .collect();
    Some(Block::Para(format!(
        "{screened} config(s) screened with a short probe ({cut} cut short once they could no \
         longer go on), {promoted} promoted to the full probe{in_place}{skipped}; only full-probe runs \
         can win. Probe time: {}.{}",
        spent.join(", "),
        second_starts(records)
    )))
}

/// What the promotions that started their config's server again spent on it (a screened config
/// that goes on pays a start-up twice unless it goes on in place); empty when none did.
fn second_starts(records: &[TrialRecord]) -> String {
    let starts: Vec<f64> = records
        .iter()
        .filter(|r| r.promoted_from.is_some() && !r.continued)
        .filter_map(|r| r.ready_s)
        .collect();
    match starts.len() {
        0 => String::new(),
        n => format!(
            " Promotions started their server again {n} time(s), {:.1} s of start-up \
             (`search.screening.promote_in_place` goes on on the screening run's server).",
            starts.iter().sum::<f64>()
        ),
    }
}

fn percent(per_mille: u32) -> String {
    let pct = f64::from(per_mille) / 10.0;
    format!("{pct}%")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Params};

    fn run(number: u32, fidelity: Option<f64>, seconds: f64) -> TrialRecord {
        TrialRecord {
            fidelity,
            metrics: [("duration_s".to_string(), seconds)].into(),
            ..TrialRecord::new(number, Params::new(), Outcome::Feasible)
        }
    }

    #[test]
    fn counts_screened_promoted_and_cut_configs_and_sums_probe_seconds_by_fidelity() {
        assert!(section(&[run(0, None, 4.0)]).is_none());
        let promoted = TrialRecord {
            promoted_from: Some(1),
            ready_s: Some(30.3),
            ..run(3, None, 4.5)
        };
        let cut = TrialRecord {
            outcome: Outcome::Pruned {
                reason: "screening run outranked: output_throughput can reach at most 10".into(),
            },
            ..run(4, Some(0.25), 0.5)
        };
        let slo_pruned = TrialRecord {
            outcome: Outcome::Pruned {
                reason: "ttft:p99<=2000ms certainly broken".into(),
            },
            ..run(5, Some(0.25), 0.5)
        };
        let baseline = TrialRecord {
            baseline: true,
            ..run(0, None, 4.0)
        };
        let mut records = vec![
            baseline,
            run(1, Some(0.25), 1.0),
            run(2, Some(0.25), 0.5),
            promoted,
            cut,
            slo_pruned,
        ];
        let Some(Block::Para(text)) = section(&records) else {
            panic!("a screening paragraph")
        };
        assert_eq!(
            text,
            "4 config(s) screened with a short probe (1 cut short once they could no longer go \
             on), 1 promoted to the full probe; only full-probe runs can win. Probe time: 8.5 s \
             at the full probe, 2.5 s at 25% of it. Promotions started their server again 1 \
             time(s), 30.3 s of start-up (`search.screening.promote_in_place` goes on on the \
             screening run's server)."
        );
        records.push(run(6, None, 4.0));
        let Some(Block::Para(text)) = section(&records) else {
            panic!("a screening paragraph")
        };
        assert!(
            text.contains(
                "1 promoted to the full probe; 1 probed in full straight away, as most screened \
                 configs went on then and screening cost more probe time than it saved;"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_promotion_in_place_counts_only_the_requests_it_added() {
        let in_place = TrialRecord {
            promoted_from: Some(1),
            continued: true,
            ..run(2, None, 4.0)
        };
        let records = [run(1, Some(0.25), 1.0), in_place];
        let Some(Block::Para(text)) = section(&records) else {
            panic!("a screening paragraph")
        };
        assert!(
            text.contains("1 promoted to the full probe (1 in place, going on from the screening run on its server);"),
            "{text}"
        );
        assert!(
            text.ends_with("Probe time: 3.0 s at the full probe, 1.0 s at 25% of it."),
            "no second start-up in place: {text}"
        );
    }
}
