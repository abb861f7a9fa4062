//! Trials in flight: each one's folder holds its identity and config while it runs, so a study
//! whose tuner was killed re-runs exactly the trials that were in flight.

use super::trial_dir::{TrialDir, PENDING_FILE};
use crate::record::InFlight;
use crate::util::atomic::{write_atomic, Access};
use std::path::Path;

/// Mark `pending` in flight in its folder `trial`.
pub(crate) fn write(trial: &TrialDir, pending: &InFlight) -> anyhow::Result<()> {
    write_atomic(
        &trial.pending(),
        &serde_json::to_string_pretty(pending)?,
        Access::Owner,
    )
}

/// The trial marked in flight in `trial`.
pub(crate) fn read(trial: &TrialDir) -> anyhow::Result<InFlight> {
    let path = trial.pending();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{} is not valid: {e}", path.display()))
}

/// The trial of `trial` is journaled: it is no longer in flight.
pub(crate) fn clear(trial: &TrialDir) {
    let _ = std::fs::remove_file(trial.pending());
}

/// The trials of `study_dir` that were in flight and are not among `journaled` trial numbers,
/// by number.
pub(crate) fn left_in_flight(study_dir: &Path, journaled: &[u32]) -> Vec<InFlight> {
    let Ok(entries) = std::fs::read_dir(study_dir) else {
        return Vec::new();
    };
    let mut found: Vec<InFlight> = entries
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join(PENDING_FILE)).ok())
        .filter_map(|text| serde_json::from_str::<InFlight>(&text).ok())
        .filter(|p| !journaled.contains(&p.id.number))
        .collect();
    found.sort_by_key(|p| p.id.number);
    found
}
