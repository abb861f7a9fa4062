//! Screening in the search loop (`search.screening`): which fidelity a new trial runs at, the
//! bar it must beat to go on (its probe stops once it cannot, see [`super::outrank`]), and the
//! promotions of screening runs that passed to the full probe. A promotion runs as soon as
//! its screening run passes [`super::screening::promotes`] (before the sampler is asked again),
//! takes the next free slot, and does not count against `search.trials`.

use super::dispatch::Study;
use super::screening::{awaiting_promotion, screening_pays, Gate};
use super::select::counts_as_config;
use super::trial::TrialId;
use crate::record::Params;

impl Study<'_> {
    /// Share of the full probe that a new search trial sends: the screening fraction, except for
    /// the baseline, which always runs the full probe, and while screening does not pay
    /// ([`screening_pays`]); `None` (the full probe) without screening. The observer is told
    /// when screening pauses or resumes.
    pub(super) fn new_trial_fidelity(&self, baseline: bool) -> Option<f64> {
        let screening = self.space.search.screening.as_ref()?;
        if baseline {
            return None;
        }
        let pays = screening_pays(screening, self.runner.objective.slos(), &self.records);
        if self
            .last_config_screened()
            .is_some_and(|screened| screened != pays)
        {
            self.backends.observer.note(if pays {
                "screening resumed: most new configs would stop at the screening probe again"
            } else {
                "screening paused: most new configs would go on to the full probe, so a \
                 screening run costs more probe time than it saves; new configs run the full \
                 probe until screening filters again"
            });
        }
        pays.then_some(screening.fraction)
    }

    /// Whether the search config started last (journaled or in flight) was screened; `None`
    /// before any.
    fn last_config_screened(&self) -> Option<bool> {
        let journaled = self
            .records
            .iter()
            .filter(|r| r.is_launched_search_config())
            .map(|r| (r.number, r.fidelity.is_some()));
        let flying = self
            .flights
            .flying()
            .iter()
            .filter(|f| !f.id.baseline && f.id.repeat_of.is_none())
            .filter(|f| f.id.promoted_from.is_none())
            .map(|f| (f.id.number, f.id.fidelity.is_some()));
        journaled
            .chain(flying)
            .max_by_key(|(number, _)| *number)
            .map(|(_, screened)| screened)
    }

    /// What a screening run started now must pass to go on, as the rung stands; `None`
    /// without screening.
    pub(super) fn gate(&self) -> Option<Gate> {
        let settings = self.space.search.screening.as_ref()?;
        Some(Gate::of(
            settings,
            self.runner.objective.slos(),
            &self.records,
        ))
    }

    /// True when configs that pass screening go on to the full probe in place: asked for, and
    /// trials run on this host (a Slurm job writes one record).
    pub(super) fn promotes_in_place(&self) -> bool {
        let asked = self.space.search.screening.is_some_and(|s| s.in_place);
        asked && !self.flights.on_slurm()
    }

    /// Configs started so far, journaled or in flight: what `search.trials` counts (neither
    /// re-validation repeats nor promotions count).
    pub(super) fn configs_started(&self) -> usize {
        let journaled = self.records.iter().filter(|r| counts_as_config(r));
        let flying = self
            .flights
            .flying()
            .iter()
            .filter(|f| f.id.repeat_of.is_none() && f.id.promoted_from.is_none());
        journaled.count() + flying.count()
    }

    /// The full-probe run of the first screening run that passed and whose promotion neither
    /// ran, flies, nor waits to run again; `None` without screening.
    pub(super) fn next_promotion(&self) -> Option<(TrialId, Params)> {
        let settings = self.space.search.screening.as_ref()?;
        let started: Vec<u32> = self
            .flights
            .flying()
            .iter()
            .filter_map(|f| f.id.promoted_from)
            .chain(self.reruns.iter().filter_map(|p| p.promoted_from))
            .collect();
        let slos = self.runner.objective.slos();
        let screened = awaiting_promotion(settings, slos, &self.records)
            .into_iter()
            .find(|r| !started.contains(&r.number))?;
        let id = TrialId {
            promoted_from: Some(screened.number),
            ..TrialId::full(self.next_number(), false, None)
        };
        Some((id, screened.params.clone()))
    }

    /// True while a promotion may still come: a screening run flies, or one that passed waits
    /// for its promotion (the search goes on for these once its configs are all started).
    pub(super) fn promotions_to_come(&self) -> bool {
        let screening_flies = self
            .flights
            .flying()
            .iter()
            .any(|f| f.id.fidelity.is_some());
        let rerun_waits = self.reruns.iter().any(|p| p.promoted_from.is_some());
        screening_flies || rerun_waits || self.next_promotion().is_some()
    }
}
