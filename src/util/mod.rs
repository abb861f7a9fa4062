//! Small general helpers shared across the crate: typo suggestions and running a helper
//! program with a timeout. Like `record`, it imports nothing of the crate.

pub mod process;
mod suggest;

pub use suggest::did_you_mean;
