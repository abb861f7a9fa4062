//! Tensor parallelism inside `tune`: a space whose trials take `tensor_parallel_size`
//! accelerators (`launch.devices_per_trial`) and whose objective is per accelerator
//! (`output_throughput / devices`), on the simulator's real servers.

use crate::kit::e2e_sim_common::{finish, records, tune, FIXTURE, STUDY};
use std::path::{Path, PathBuf};

/// The e2e fixture on four pretend devices, tensor-parallel 1 or 2 per trial, judged per device.
fn space(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let text = text
        .replace("port: 18300", "port: 18660")
        .replace(
            "  stop_grace: 2s\n",
            "  stop_grace: 2s\n  devices: [0, 1, 2, 3]\n  devices_per_trial: tensor_parallel_size\n",
        )
        .replace(
            "parameters:\n",
            "parameters:\n  tensor_parallel_size:   {type: choice, values: [1, 2], default: 1}\n",
        )
        .replace(
            "  metric: output_throughput\n",
            "  metric: output_throughput / devices\n",
        )
        .replace("  enqueue:\n", "  enqueue:\n    - {tensor_parallel_size: 2}\n");
    assert!(
        text.contains("output_throughput / devices"),
        "the fixture changed"
    );
    let path = dir.join("per-device.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_per_device_objective_divides_each_trial_by_the_accelerators_it_took() {
    let tmp = tempfile::tempdir().unwrap();
    finish(tune(&space(tmp.path()), tmp.path(), &["--trials", "6"]));
    let study = tmp.path().join(STUDY);
    let scored: Vec<_> = records(&study)
        .into_iter()
        .filter(|r| r.value.is_some())
        .collect();
    let sizes: std::collections::BTreeSet<i64> = scored
        .iter()
        .map(|r| r.params["tensor_parallel_size"].as_i64().unwrap())
        .collect();
    assert_eq!(sizes.len(), 2, "both sizes scored: {scored:#?}");
    for r in &scored {
        let tp = r.params["tensor_parallel_size"].as_i64().unwrap() as f64;
        assert_eq!(r.devices.len() as f64, tp, "trial {}", r.id.number);
        assert_eq!(r.metrics["devices"], tp, "trial {}", r.id.number);
        let per_device = r.metrics["output_throughput"] / tp;
        assert!(
            (r.value.unwrap() - per_device).abs() < 1e-9 * per_device,
            "trial {}: {:?} against {per_device}",
            r.id.number,
            r.value
        );
    }
    let report = std::fs::read_to_string(study.join("report.md")).unwrap();
    assert!(
        report.contains("output_throughput / devices (per accelerator"),
        "{report}"
    );
}
