//! A digital twin of a serving engine: `sim eval` (virtual time) and `sim serve` (HTTP, real time).

pub mod cli;
