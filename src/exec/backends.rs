//! The side effects a trial drives, each behind a trait so tests can substitute fakes, and
//! what a trial tells its caller while it runs.

use super::prober::Prober;
use crate::engine::Engine;
use crate::launch::Launcher;
use crate::space::Feasibility;

/// What a trial tells its caller: notes and warnings. Never written to the terminal here; every
/// method has a no-op default.
pub trait TrialObserver: Sync {
    /// Something worth knowing, e.g. a server a killed earlier run left behind was stopped.
    fn note(&self, _text: &str) {}

    /// Something went wrong and the work goes on, e.g. a teardown left processes behind.
    fn warning(&self, _text: &str) {}
}

/// An observer that ignores everything (tests, library callers, a trial inside a Slurm job).
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl TrialObserver for Silent {}

/// The side effects of trials: config checks, launches, servers, probes, and the observer
/// `O` that hears of them (a study's observer, which is also a [`TrialObserver`]).
pub struct Backends<'a, O: ?Sized + 'a = dyn TrialObserver + 'a> {
    /// Completes and checks configs (constraints, derived values, engine rules).
    pub check: &'a dyn Feasibility,
    /// Renders configs into launches.
    pub engine: &'a dyn Engine,
    /// Starts servers.
    pub launcher: &'a dyn Launcher,
    /// Probes servers.
    pub prober: &'a dyn Prober,
    /// Hears of progress, notes and warnings.
    pub observer: &'a O,
}

impl<'a, O: ?Sized + 'a> Clone for Backends<'a, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<'a, O: ?Sized + 'a> Copy for Backends<'a, O> {}

impl<'a, O: ?Sized + 'a> Backends<'a, O> {
    /// The same side effects, heard by `observer` instead.
    pub fn with_observer<P: ?Sized + 'a>(self, observer: &'a P) -> Backends<'a, P> {
        Backends {
            check: self.check,
            engine: self.engine,
            launcher: self.launcher,
            prober: self.prober,
            observer,
        }
    }
}
