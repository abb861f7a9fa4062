//! The winner as a server to run elsewhere: what the engine config files, the `docker run` line
//! and the Kubernetes manifests are built from, and which of them apply to which engine.

use super::{gain_text, mean_text, Best};
use crate::launch::{ContainerImage, LaunchSpec};
use crate::space::secrets::{Piece, Secrets};
use crate::space::EngineKind;
use anyhow::bail;
use std::collections::BTreeMap;

/// The winner's launch as it runs elsewhere, with the accelerators and NUMA binding its trial
/// had: handed in by the study, which knows the host.
#[derive(Clone, Debug)]
pub struct WinnerLaunch {
    /// The winner's launch with the engine's own command (no `launch.command` override), no
    /// numactl prefix and no device variables: what runs inside a container.
    pub launch: LaunchSpec,
    /// The accelerators the winner's trial was given (empty: none, or the engine's default).
    pub devices: Vec<u32>,
    /// The winner's NUMA binding, when it had one.
    pub pinning: Option<Pinning>,
    /// The engine's own program and leading arguments (`vllm serve`); empty when it has none.
    pub own_command: &'static [&'static str],
    /// The engine's usual container image on the study's platform, when it has one.
    pub image: Option<ContainerImage>,
    /// Servers the Kubernetes Deployment runs (1 for a study's winner; a plan's replicas).
    pub replicas: u32,
}

/// A numactl binding as cgroup cpusets (`docker run --cpuset-cpus/--cpuset-mems`).
#[derive(Clone, Debug, PartialEq)]
pub struct Pinning {
    /// The numactl arguments, e.g. `-N 0 -m 0`.
    pub numactl: String,
    /// CPUs it runs on, e.g. `0-15`; `None` when it restricts none.
    pub cpus: Option<String>,
    /// Memory nodes it allocates from, e.g. `0`; `None` when it restricts none.
    pub mems: Option<String>,
}

/// A deployment format of `infertune export --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// vLLM: `vllm-config.yaml` for `vllm serve --config` and `vllm.env`.
    VllmConfig,
    /// `docker-run.sh`: the engine's usual image with devices, port, NUMA cpusets and env.
    Docker,
    /// `kubernetes.yaml`: a WinnerLaunch and a Service.
    Kubernetes,
    /// SGLang: `sglang-config.yaml` for `sglang.launch_server --config` and `sglang.env`.
    Sglang,
}

impl Format {
    /// Every format, in the order `--format all` writes them.
    pub const ALL: [Format; 4] = [
        Format::VllmConfig,
        Format::Docker,
        Format::Kubernetes,
        Format::Sglang,
    ];

    /// True when the format can express a launch of `engine`, which has a usual container
    /// image or not (`has_image`).
    pub fn applies_to(self, engine: EngineKind, has_image: bool) -> bool {
        match self {
            Format::VllmConfig => engine == EngineKind::Vllm,
            Format::Sglang => engine == EngineKind::Sglang,
            Format::Docker | Format::Kubernetes => has_image,
        }
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::VllmConfig => "vllm-config",
            Format::Docker => "docker",
            Format::Kubernetes => "kubernetes",
            Format::Sglang => "sglang",
        }
    }
}

/// Accelerator devices as a container runtime and a scheduler name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Accelerator {
    /// NVIDIA GPUs (`--gpus`, `nvidia.com/gpu`).
    Nvidia,
    /// Huawei Ascend NPUs (`/dev/davinciN`, `huawei.com/Ascend910`).
    Ascend,
    /// AMD GPUs (`/dev/kfd`, `/dev/dri`, `amd.com/gpu`).
    Amd,
}

/// The winner's server, split as the deployment formats need it.
pub(crate) struct Server<'a> {
    /// The study's best.
    pub best: &'a Best<'a>,
    /// How it ran.
    pub deployment: &'a WinnerLaunch,
    /// The engine's leading arguments after its program (`serve` for vLLM).
    pub leading: Vec<String>,
    /// The engine's arguments after the leading ones.
    pub args: Vec<String>,
}

impl<'a> Server<'a> {
    /// The server of `best` deployed as `deployment`; fails when the launch is not the engine's
    /// own command.
    pub fn new(best: &'a Best<'a>, deployment: &'a WinnerLaunch) -> anyhow::Result<Server<'a>> {
        let engine = best.space.engine.kind;
        let command = deployment.own_command;
        let launch = &deployment.launch;
        let words: Vec<&str> = std::iter::once(launch.program.as_str())
            .chain(launch.args.iter().map(String::as_str))
            .collect();
        if command.is_empty() || !words.starts_with(command) {
            bail!(
                "the winner's launch `{}` does not start with {}'s own command `{}`",
                words.join(" "),
                engine,
                command.join(" ")
            );
        }
        Ok(Server {
            best,
            deployment,
            leading: command[1..].iter().map(|s| s.to_string()).collect(),
            args: launch.args[command.len() - 1..].to_vec(),
        })
    }

    /// The space's secrets.
    pub fn secrets(&self) -> &'a Secrets {
        &self.best.space.secrets
    }

    /// The engine's arguments with the listening address set to every interface, as a server
    /// in a container must listen.
    pub fn args_listening_everywhere(&self) -> Vec<String> {
        let mut args = self.args.clone();
        if let Some(i) = args.iter().position(|a| a == "--host") {
            if let Some(host) = args.get_mut(i + 1) {
                *host = "0.0.0.0".into();
            }
        }
        args
    }

    /// The server's environment.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.deployment.launch.env
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.deployment.launch.port
    }

    /// The accelerators of the winner's trial and their kind (none without devices).
    pub fn accelerators(&self) -> Option<(Accelerator, &[u32])> {
        let devices = &self.deployment.devices;
        if devices.is_empty() {
            return None;
        }
        let kind = match self.best.space.rules.platform.as_deref() {
            Some("npu") => Accelerator::Ascend,
            Some("rocm") => Accelerator::Amd,
            Some("cpu") => return None,
            _ => Accelerator::Nvidia,
        };
        Some((kind, devices))
    }

    /// The engine's image reference, e.g. `vllm/vllm-openai:v0.32.0`, and its server program.
    pub fn image(&self) -> anyhow::Result<(String, &'static str)> {
        let Some(image) = self.deployment.image else {
            bail!(
                "{} has no usual container image",
                self.best.space.engine.kind
            );
        };
        Ok((image.reference(self.best.version), image.program))
    }

    /// The model, when it is a path on this host (to mount into a container).
    pub fn model_path(&self) -> Option<&'a str> {
        let model = &self.best.space.engine.model;
        model.starts_with('/').then_some(model.as_str())
    }

    /// A name for the deployment: `infertune-` and the study name as a DNS label.
    pub fn name(&self) -> String {
        let mut label: String = format!("infertune-{}", self.best.study.name)
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        label.truncate(63);
        label.trim_end_matches('-').to_string()
    }

    /// The variables that hold the secrets of the server's arguments and environment, in order
    /// of appearance.
    pub fn secret_variables(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let words = self.args.iter().chain(self.env().values());
        for text in words {
            for piece in self.secrets().split(text) {
                if let Piece::Secret(s) = piece {
                    if !out.contains(&s.variable.as_str()) {
                        out.push(&s.variable);
                    }
                }
            }
        }
        out
    }
}

/// Comment lines (without `# `) every deployment file starts with: the study, the winner's
/// measured figure with its CI and gain, and the workload it was measured on.
pub(crate) fn header(best: &Best<'_>) -> Vec<String> {
    let (o, w, space) = (best.study.objective, best.winner, best.space);
    let version = best.version.map(|v| format!(" {v}")).unwrap_or_default();
    let mut lines = vec![format!(
        "Winner of the infertune study `{}` ({}{version}, model {}): trial {}",
        best.study.name,
        space.engine.kind.to_string(),
        space.engine.model,
        w.record.id.number
    )];
    lines.extend(best.tuned_on.map(str::to_string));
    let mut measured = format!(
        "Measured: {} {} = {}",
        o.direction.as_str(),
        o.metric,
        mean_text(w.mean, w.ci95, w.runs)
    );
    if let (Some(b), Some(g)) = (&w.baseline, w.gain_pct) {
        measured.push_str(&format!(
            "; engine defaults {}, gain {}",
            mean_text(b.mean, b.ci95, b.runs),
            gain_text(g, w.gain_ci95)
        ));
    }
    lines.push(measured);
    lines.push(format!(
        "Workload: dataset {}, load {}",
        compact(&space.probe.dataset),
        compact(&space.probe.load)
    ));
    if !o.subject_to.is_empty() {
        let slos: Vec<String> = o.subject_to.iter().map(|s| s.to_string()).collect();
        lines.push(format!("Subject to: {}", slos.join(", ")));
    }
    lines
}

/// `value` as compact JSON, for the header.
fn compact(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("(unprintable: {e})"))
}

/// `lines` as `# ` comments, one a line.
pub(crate) fn comment(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("# {}\n", l.replace('\n', " ")))
        .collect()
}
