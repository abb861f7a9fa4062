//! Where a search starts before its own trials say anything: the digital twin's evaluation of
//! the space under the study's probe (its best feasible configs run first and all it evaluated
//! seeds the sampler), recalibrated to the card from the study's trials, and its honesty
//! against them.

pub mod twin;
