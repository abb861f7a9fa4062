//! The probe's timing accuracy against a fake server, alone in its binary: its bounds are a few
//! milliseconds, so no other test may load the machine while it runs.

#[path = "../kit/mod.rs"]
mod kit;

mod probe;
