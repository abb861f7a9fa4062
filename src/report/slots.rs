//! Per-slot spread: whether one slot (a slow card, a busy NUMA node) measures differently from
//! the others. Each run of a re-validated config is compared with the mean of all its runs, and
//! the deviations are averaged per slot.

use crate::export::Block;
use crate::record::TrialRecord;
use std::collections::{BTreeMap, BTreeSet};

/// The slots table, when trials ran on more than one slot.
pub fn spread(records: &[TrialRecord]) -> Option<Block> {
    let slots: BTreeSet<u32> = records.iter().filter_map(|r| r.slot).collect();
    if slots.len() < 2 {
        return None;
    }
    let mut runs: BTreeMap<u32, Vec<&TrialRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.value.is_some()) {
        runs.entry(r.repeat_of().unwrap_or(r.id.number))
            .or_default()
            .push(r);
    }
    let mut deviations: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for group in runs.values().filter(|g| g.len() >= 2) {
        let values: Vec<f64> = group.iter().filter_map(|r| r.value).collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        if mean == 0.0 {
            continue;
        }
        for r in group {
            if let (Some(slot), Some(value)) = (r.slot, r.value) {
                deviations
                    .entry(slot)
                    .or_default()
                    .push(100.0 * (value / mean - 1.0));
            }
        }
    }
    let rows = slots
        .iter()
        .map(|slot| {
            let on_slot: Vec<&TrialRecord> =
                records.iter().filter(|r| r.slot == Some(*slot)).collect();
            let devices: BTreeSet<u32> = on_slot.iter().flat_map(|r| r.devices.clone()).collect();
            let devices: Vec<String> = devices.iter().map(u32::to_string).collect();
            let found = deviations.get(slot).map_or(&[][..], Vec::as_slice);
            let mean = (!found.is_empty()).then(|| found.iter().sum::<f64>() / found.len() as f64);
            vec![
                slot.to_string(),
                devices.join(","),
                on_slot.len().to_string(),
                found.len().to_string(),
                mean.map(|m| format!("{m:+.2} %")).unwrap_or_default(),
            ]
        })
        .collect();
    Some(Block::Table {
        header: [
            "slot",
            "devices",
            "trials",
            "runs of re-validated configs",
            "mean deviation from their config's mean",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, TrialId, TrialKind};

    fn run(number: u32, repeat_of: Option<u32>, slot: u32, value: f64) -> TrialRecord {
        TrialRecord {
            id: TrialId {
                number,
                kind: repeat_of.map_or(TrialKind::Search, |of| TrialKind::Repeat { of }),
            },
            slot: Some(slot),
            devices: vec![slot],
            value: Some(value),
            ..TrialRecord::new(number, Default::default(), Outcome::Feasible)
        }
    }

    #[test]
    fn a_slow_slot_shows_below_the_mean() {
        let records = [
            run(0, None, 0, 100.0),
            run(1, Some(0), 1, 90.0),
            run(2, None, 1, 50.0),
        ];
        let Some(Block::Table { rows, .. }) = spread(&records) else {
            panic!("two slots make a table");
        };
        assert_eq!(rows[0], ["0", "0", "1", "1", "+5.26 %"]);
        assert_eq!(rows[1], ["1", "1", "2", "1", "-5.26 %"]);
    }

    #[test]
    fn one_slot_has_no_table() {
        assert!(spread(&[run(0, None, 0, 1.0), run(1, Some(0), 0, 1.0)]).is_none());
    }
}
