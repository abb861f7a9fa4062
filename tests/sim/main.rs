//! Integration tests of `sim`, one module per concern, in one binary (one link).

#[path = "../kit/mod.rs"]
mod kit;

mod calibration;
mod card_fit;
mod cli;
mod serve;
mod surface;
mod validate;
