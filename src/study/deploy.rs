//! The winner as the deployment exports take it: its launch with the engine's own command, no
//! numactl prefix and no device variables (what runs in a container), the accelerators its
//! trial was given, and its NUMA binding as cpusets of this host.

use crate::engine::{Engine, Slot};
use crate::export::{Pinning, WinnerLaunch};
use crate::record::{TrialRecord, Value};
use crate::space::{ParamKind, StudySpec};
use anyhow::Context as _;
use std::path::PathBuf;

/// The deployment of `record`, whose launch `engine` builds from `space`, in `workdir`.
pub(crate) fn deployment(
    space: &StudySpec,
    engine: &dyn Engine,
    record: &TrialRecord,
    workdir: PathBuf,
) -> anyhow::Result<WinnerLaunch> {
    let mut own = space.clone();
    own.launch.command = None;
    let mut params = record.params.clone();
    let mut binding = None;
    for def in &space.parameters {
        if matches!(def.kind, ParamKind::Numa { .. }) {
            if let Some(value) = params.insert(def.name.clone(), Value::Str("none".into())) {
                let text = value.to_string();
                if text.trim() != "none" {
                    binding = Some(text.trim().to_string());
                }
            }
        }
    }
    let slot = Slot {
        port: space.launch.port,
        devices: Vec::new(),
        extra_ports: Vec::new(),
        workdir,
    };
    let launch = engine
        .launch_spec(&own, &params, &slot)
        .with_context(|| format!("cannot rebuild the launch of trial {}", record.id.number))?;
    let pinning = match binding {
        Some(numactl) => {
            let sets = crate::topo::host_cpusets(&numactl).with_context(|| {
                format!("cannot map the binding `numactl {numactl}` to cpusets")
            })?;
            Some(Pinning {
                numactl,
                cpus: sets.cpus,
                mems: sets.mems,
            })
        }
        None => None,
    };
    Ok(WinnerLaunch {
        launch,
        devices: record.devices.clone(),
        pinning,
        own_command: engine.own_command(),
        image: engine.image(space.rules.platform.as_deref()),
        replicas: 1,
    })
}
