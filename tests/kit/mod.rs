//! The test kit every integration test binary shares: fake servers, fake study back ends,
//! child-program launches and simulator helpers.

#![allow(dead_code)]

pub mod children;
pub mod e2e_sim_common;
pub mod provisioned;
pub mod sim_common;
pub mod sim_server;
pub mod study_fakes;
pub mod support;
