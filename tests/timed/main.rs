//! Studies whose verdict rests on timed runs of the real-time simulator: a gain that other
//! tests' load on the same cores can erase, so they live in a binary of their own,
//! which the suite runs with nothing beside it.

mod numa_study;
