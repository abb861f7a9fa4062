//! Engine adapters: a config → the exact launch of that engine.
//!
//! Each engine has a folder (`vllm/`, `sglang/`, `mindie/`, `llamacpp/`, `xinference/`,
//! `custom/`, `sim/`) holding what infertune knows of it; [`describe`] is the one place that
//! lists them. The files beside the folders are the mechanism the engines share.

mod assemble;
pub mod catalogue;
pub mod expert;
mod flag_cli;
mod numa;
mod render;

mod custom;
mod llamacpp;
mod mindie;
mod sglang;
mod sim;
mod vllm;
mod weights;
mod xinference;

use crate::launch::classify::LogPatterns;
use crate::launch::{ContainerImage, LaunchSpec};
use crate::record::Params;
use crate::space::rules::RulePack;
use crate::space::{EngineKind, StudySpec};
use std::path::PathBuf;
use std::sync::LazyLock;

/// Resources allocated to one trial (port, devices, folder), so several can later run at once.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// Port the server must listen on.
    pub port: u16,
    /// Accelerator indices this trial may use (empty = engine default).
    pub devices: Vec<u32>,
    /// The trial's folder (logs, generated config files).
    pub workdir: PathBuf,
    /// Further ports reserved for the server ([`Engine::extra_ports`] of them), e.g. MindIE's
    /// inter-process communication port.
    pub extra_ports: Vec<u16>,
}

/// Renders a config into a launch for one engine.
pub trait Engine: Sync {
    /// Build the launch for `params` (a resolved config of `space`) in `slot`.
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec>;

    /// The Prometheus counter (on the server's `/metrics`) of output tokens the engine
    /// generated, when it has one; trials record its increase over the probe.
    fn output_token_counter(&self) -> Option<&'static str> {
        None
    }

    /// Ports the server needs besides its serving port, so trials in flight never share one.
    fn extra_ports(&self) -> usize {
        0
    }

    /// The engine's own program and leading arguments (`vllm serve`), as the deployment
    /// exports start it; empty for an engine without one.
    fn own_command(&self) -> &'static [&'static str] {
        &[]
    }

    /// Its usual container image on `platform` (`rules.platform`), when it has one.
    fn image(&self, _platform: Option<&str>) -> Option<ContainerImage> {
        None
    }
}

/// What infertune knows of one engine, gathered from its folder.
pub struct Description {
    /// How a config becomes the engine's launch.
    pub launch: &'static dyn Engine,
    /// The checks the engine applies at start-up.
    pub rules: &'static RulePack,
    /// What marks a failure in the engine's log.
    pub log: &'static LogPatterns,
    /// The flag catalogues shipped in its folder: file name and text (embedded in the binary).
    pub catalogues: &'static [(&'static str, &'static str)],
    /// The settings an expert tries first, each with its source (lists of them: the simulator
    /// reads the names of more than one engine).
    pub expert: &'static [&'static [expert::Setting]],
}

/// The description of `kind`: the one registration of every engine (with `KINDS`).
pub fn describe(kind: EngineKind) -> &'static Description {
    match kind {
        EngineKind::Vllm => &vllm::ENGINE,
        EngineKind::Sglang => &sglang::ENGINE,
        EngineKind::Mindie => &mindie::ENGINE,
        EngineKind::Llamacpp => &llamacpp::ENGINE,
        EngineKind::Xinference => &xinference::ENGINE,
        EngineKind::Custom => &custom::ENGINE,
        EngineKind::Sim => &sim::ENGINE,
    }
}

/// Every engine kind, in the order [`log_patterns`] lists them.
const KINDS: [EngineKind; 7] = [
    EngineKind::Vllm,
    EngineKind::Sglang,
    EngineKind::Mindie,
    EngineKind::Llamacpp,
    EngineKind::Xinference,
    EngineKind::Custom,
    EngineKind::Sim,
];

/// Every engine's log patterns, for the supervisor: a failed server's log is read with all of
/// them, since a custom command may run any engine.
pub fn log_patterns() -> &'static [&'static LogPatterns] {
    static ALL: LazyLock<Vec<&'static LogPatterns>> =
        LazyLock::new(|| KINDS.iter().map(|k| describe(*k).log).collect());
    &ALL
}

/// The rule pack of `kind`; the [`crate::space::rules::RuleBook`] spaces are loaded with.
pub fn rule_pack(kind: EngineKind) -> &'static RulePack {
    describe(kind).rules
}

/// The expert config of `spec` (its engine's [`expert::Setting`]s projected into it, checked
/// by `check`) for a trial holding `share` of the host, or why there is none.
pub fn expert_config(
    spec: &StudySpec,
    check: &dyn crate::space::Feasibility,
    share: &crate::topo::SlotShare,
) -> Result<expert::ExpertConfig, expert::NoExpert> {
    if spec.search.prior == crate::space::Prior::None {
        return Err(expert::NoExpert::Off);
    }
    let settings: Vec<expert::Setting> = describe(spec.engine.kind)
        .expert
        .iter()
        .flat_map(|list| list.iter().copied())
        .collect();
    expert::config(&settings, spec, check, &expert::Context::of(spec, share))
}

/// The adapter for an engine kind.
pub fn for_kind(kind: EngineKind) -> &'static dyn Engine {
    describe(kind).launch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_names_its_image_and_own_command_for_the_exports() {
        let image = |kind, platform, version| {
            describe(kind)
                .launch
                .image(platform)
                .map(|i| i.reference(version))
        };
        assert_eq!(
            image(EngineKind::Vllm, None, Some("0.32.0+cpu")).as_deref(),
            Some("vllm/vllm-openai:v0.32.0")
        );
        assert_eq!(
            image(EngineKind::Vllm, Some("npu"), None).as_deref(),
            Some("quay.io/ascend/vllm-ascend:latest")
        );
        assert_eq!(
            image(EngineKind::Llamacpp, None, Some("b4000")).as_deref(),
            Some("ghcr.io/ggml-org/llama.cpp:server")
        );
        assert_eq!(
            image(EngineKind::Sglang, None, Some("0.5.2")).as_deref(),
            Some("lmsysorg/sglang:v0.5.2")
        );
        for kind in [
            EngineKind::Mindie,
            EngineKind::Xinference,
            EngineKind::Custom,
        ] {
            assert!(image(kind, None, None).is_none(), "{kind}");
            assert!(describe(kind).launch.own_command().is_empty(), "{kind}");
        }
        assert_eq!(
            describe(EngineKind::Vllm).launch.own_command(),
            ["vllm", "serve"]
        );
    }
}
