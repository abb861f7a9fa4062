//! `docker-run.sh`: the winner in the engine's usual image, one `docker run` line with its
//! accelerators, port, NUMA binding (`--cpuset-cpus`/`--cpuset-mems`) and environment. A secret
//! is never in the file: the container takes it from the variable of the same name (`-e NAME`),
//! or the line references its variable, which must be set when the script runs.

use super::best_sh::word;
use super::deploy::{comment, header, Accelerator, Server};
use crate::launch::quote;
use crate::space::secrets::Piece;

/// The script's name.
pub const FILE: &str = "docker-run.sh";

/// The script of `server`.
pub(crate) fn render(server: &Server<'_>) -> anyhow::Result<String> {
    let secrets = server.secrets();
    let (image, program) = server.image()?;
    let name = server.name();
    let mut words: Vec<String> = ["docker", "run", "--rm", "--name", &name, "--ipc=host"]
        .map(String::from)
        .to_vec();
    let flag = |words: &mut Vec<String>, f: &str, v: &str| -> anyhow::Result<()> {
        words.push(f.to_string());
        words.push(quote(v)?);
        Ok(())
    };
    if let Some((kind, devices)) = server.accelerators() {
        let list: Vec<String> = devices.iter().map(u32::to_string).collect();
        match kind {
            Accelerator::Nvidia => flag(
                &mut words,
                "--gpus",
                &format!("\"device={}\"", list.join(",")),
            )?,
            Accelerator::Ascend => {
                for d in devices {
                    flag(&mut words, "--device", &format!("/dev/davinci{d}"))?;
                }
                for dev in ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"] {
                    flag(&mut words, "--device", dev)?;
                }
                let driver = "/usr/local/Ascend/driver";
                flag(&mut words, "-v", &format!("{driver}:{driver}:ro"))?;
            }
            Accelerator::Amd => {
                flag(&mut words, "--device", "/dev/kfd")?;
                flag(&mut words, "--device", "/dev/dri")?;
                flag(
                    &mut words,
                    "-e",
                    &format!("HIP_VISIBLE_DEVICES={}", list.join(",")),
                )?;
            }
        }
    }
    let port = server.port();
    flag(&mut words, "-p", &format!("{port}:{port}"))?;
    if let Some(pin) = &server.deployment.pinning {
        if let Some(cpus) = &pin.cpus {
            flag(&mut words, "--cpuset-cpus", cpus)?;
        }
        if let Some(mems) = &pin.mems {
            flag(&mut words, "--cpuset-mems", mems)?;
        }
    }
    for (key, value) in server.env() {
        words.push("-e".into());
        match secrets.split(value).as_slice() {
            [Piece::Secret(s)] if s.variable == *key => words.push(quote(key)?),
            _ => words.push(word(&format!("{key}={value}"), secrets)?),
        }
    }
    if let Some(model) = server.model_path() {
        flag(&mut words, "-v", &format!("{model}:{model}:ro"))?;
    }
    flag(&mut words, "--entrypoint", program)?;
    words.push(quote(&image)?);
    for arg in server
        .leading
        .iter()
        .chain(&server.args_listening_everywhere())
    {
        words.push(word(arg, secrets)?);
    }
    let mut lines = header(server.best);
    if let Some(pin) = &server.deployment.pinning {
        lines.push(format!(
            "NUMA binding of the winner: numactl {}",
            pin.numactl
        ));
    }
    let variables = server.secret_variables();
    if !variables.is_empty() {
        lines.push(format!(
            "Secrets come from the environment: {}",
            variables.join(", ")
        ));
    }
    let mut out = String::from("#!/usr/bin/env bash\n");
    out.push_str(&comment(&lines));
    out.push_str("set -euo pipefail\n");
    for v in &variables {
        out.push_str(&format!(": \"${{{v}:?set {v}}}\"\n"));
    }
    out.push_str(&format!("exec {}\n", words.join(" ")));
    Ok(out)
}
