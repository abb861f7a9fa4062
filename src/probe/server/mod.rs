//! What the server itself reports: its Prometheus `/metrics` (scraped before, during and
//! after a probe), the accelerators' power, memory and utilisation from the platform's tool,
//! their summary for the trial record, and the server signals that stop a probe early.

pub(crate) mod accel;
mod catalogue;
pub(crate) mod exposition;
mod scrape;
pub(crate) mod signals;
pub(crate) mod summary;

pub(crate) use catalogue::TIME_SCALE;
pub(crate) use scrape::metrics_text;
