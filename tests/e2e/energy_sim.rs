//! An energy SLO on the simulator: the shipped space `demo-sim-energy.yaml` checks, and a short
//! study of it measures every probed trial's energy per output token from the power the
//! simulator serves, and judges the SLO on it.

use crate::kit::e2e_sim_common::{records, tune};
use assert_cmd::Command;
use infertune::record::{Outcome, Violation};
use std::time::Duration;

#[test]
fn an_energy_per_token_slo_checks_and_tunes_on_the_simulator() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("search-spaces/demo-sim-energy.yaml")).unwrap();
    assert!(
        text.contains("port: 8220"),
        "the space no longer states its port"
    );
    let tmp = tempfile::tempdir().unwrap();
    let space = tmp.path().join("energy.yaml");
    let port = crate::kit::children::free_port();
    std::fs::write(&space, text.replace("port: 8220", &format!("port: {port}"))).unwrap();
    Command::cargo_bin("infertune")
        .unwrap()
        .args(["check", "--space"])
        .arg(&space)
        .args(["--samples", "200"])
        .assert()
        .success();
    let run = Command::from_std(tune(&space, tmp.path(), &["--trials", "3", "--no-prune"]))
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let all = records(&tmp.path().join("demo-sim-energy"));
    let probed: Vec<_> = all
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Feasible | Outcome::Infeasible))
        .collect();
    assert!(!probed.is_empty(), "{all:#?}");
    for r in probed {
        let energy = r.metrics["energy_per_token"];
        let power = r.metrics["power_mean_w"];
        assert!(
            energy > 0.0 && power > 0.0,
            "trial {}: {energy} J/token, {power} W",
            r.id.number
        );
        // In the modelled engine's terms: an H100 draws at most its 700 W board power, though
        // the simulator runs ten times faster than the engine it models.
        let cards = r
            .params
            .get("tensor_parallel_size")
            .and_then(|v| v.as_f64())
            .unwrap_or(1.0);
        assert!(
            power <= 700.0 * cards,
            "trial {}: {power} W on {cards} H100",
            r.id.number
        );
        let server = r.server.as_ref().expect("a server section");
        assert_eq!(
            server.sources["energy_j"],
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
        );
        let broken = r
            .violations
            .iter()
            .any(|v| matches!(v, Violation::Slo { slo, .. } if slo.metric == "energy_per_token"));
        assert_eq!(
            broken,
            energy > 0.5,
            "trial {}: {energy} J/token",
            r.id.number
        );
    }
}
