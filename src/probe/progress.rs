//! Watching a run's progress, e.g. to draw a bar on a terminal.

/// Watches the measured phase of a probe run (the warm-up is not shown).
pub trait ProbeObserver: Send + Sync {
    /// The measured phase starts: `planned` requests, or 0 when the run is bound by time.
    fn started(&self, planned: u64);

    /// A measured request finished (successfully or not).
    fn request_done(&self);

    /// The measured phase ended (completed, pruned or failed).
    fn finished(&self);
}
