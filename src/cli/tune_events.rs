//! `infertune tune --events jsonl`: the study as one JSON object a line on stdout, for programs
//! that drive a study. The schema (each event's `event` name and fields) is documented in
//! docs/machine-interface.md; fields are only ever added.

use crate::exec::TrialObserver;
use crate::record::{Outcome, Params, TrialId, TrialKind};
use crate::study::observer::{EarlyEnd, Phase, StudyObserver, TrialProgress};
use serde_json::{json, Value as Json};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Writes each event of a study as a JSON line on stdout.
#[derive(Default)]
pub(crate) struct TuneEvents {
    /// The phase of the last trial started, to tell when a new one begins.
    phase: Mutex<Option<Phase>>,
    /// Set once `study_finished` is out (the study and the command both say it).
    done: AtomicBool,
}

impl TuneEvents {
    /// Write `event` as one line and flush it, so a reader sees it at once.
    pub(crate) fn emit(&self, event: Json) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{event}");
        let _ = out.flush();
    }

    /// A `phase` event when `phase` differs from the last trial's.
    fn enter(&self, phase: Phase) {
        let mut last = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if *last != Some(phase) {
            *last = Some(phase);
            self.emit(json!({"event": "phase", "phase": phase_name(phase)}));
        }
    }
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Search => "search",
        Phase::Revalidation => "revalidation",
    }
}

impl TrialObserver for TuneEvents {
    fn note(&self, text: &str) {
        self.emit(json!({"event": "note", "text": text}));
    }

    fn warning(&self, text: &str) {
        self.emit(json!({"event": "warning", "text": text}));
    }
}

impl StudyObserver for TuneEvents {
    fn started(&self, planned: u32, done: u32) {
        self.emit(json!({"event": "study_started", "planned": planned, "done": done}));
    }

    fn trial_started(&self, id: TrialId, params: &Params) {
        self.enter(match id.kind {
            TrialKind::Repeat { .. } => Phase::Revalidation,
            _ => Phase::Search,
        });
        self.emit(json!({"event": "trial_started", "trial": id, "params": params}));
    }

    fn trial(&self, progress: &TrialProgress<'_>) {
        let r = progress.record;
        let event = if matches!(r.outcome, Outcome::Pruned { .. }) {
            "trial_pruned"
        } else {
            "trial_finished"
        };
        self.emit(json!({
            "event": event,
            "trial": r.id,
            "params": r.params,
            "outcome": r.outcome,
            "value": r.value,
            "metrics": r.metrics,
            "violations": r.violations,
            "best": progress.best,
            "budget_left_s": progress.budget_left.map(|d| d.as_secs_f64()),
        }));
    }

    fn ended_early(&self, why: &EarlyEnd) {
        self.emit(match why {
            EarlyEnd::BudgetSpent(phase) => {
                json!({"event": "ended_early", "reason": "budget_spent", "phase": phase_name(*phase)})
            }
            EarlyEnd::SamplerFailed(message) => {
                json!({"event": "ended_early", "reason": "sampler_failed", "message": message})
            }
        });
    }

    fn finished(&self) {
        if !self.done.swap(true, Ordering::SeqCst) {
            self.emit(json!({"event": "study_finished"}));
        }
    }
}
