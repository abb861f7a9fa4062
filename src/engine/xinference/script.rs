//! The launch script: XInference's three start-up steps as the plain commands a user runs by
//! hand (`xinference-local`, `xinference register`, `xinference launch`), with the gate's
//! checks between them. The trial runs it, and `best.sh` writes and runs the same script.

use crate::launch::quote;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;

/// What the script starts and where.
pub(super) struct Steps<'a> {
    /// The server's argv before `--host` (`xinference-local` and any leading args).
    pub server: &'a [String],
    /// The client program (`xinference`).
    pub client: &'a str,
    /// The interpreter that runs the gate.
    pub python: &'a str,
    /// Address and port the server listens on.
    pub host: &'a str,
    /// Serving port.
    pub port: u16,
    /// Port of the worker's metrics exporter (random unless given).
    pub metrics_port: Option<u16>,
    /// `launch.extra_args`, added to the server's command line.
    pub server_args: &'a [String],
    /// The registration file.
    pub family: &'a Path,
    /// `xinference launch` options and settings after the endpoint.
    pub launch: &'a [String],
    /// The served model (model uid).
    pub uid: &'a str,
    /// Replicas to wait for.
    pub replicas: i64,
    /// Settings the engine must have applied.
    pub settings: &'a [String],
    /// The gate script.
    pub gate: &'a Path,
    /// The file the gate writes once every replica is READY.
    pub ready_file: &'a Path,
    /// Notes printed into the log before the launch.
    pub warnings: &'a [String],
}

/// The script's text.
pub(super) fn render(s: &Steps<'_>) -> Result<String> {
    let words = |items: &[&str]| -> Result<String> {
        Ok(items
            .iter()
            .map(|w| quote(w))
            .collect::<Result<Vec<_>>>()?
            .join(" "))
    };
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let endpoint = format!("http://{}", crate::launch::port::authority(s.host, s.port));
    let mut server: Vec<&str> = s.server.iter().map(String::as_str).collect();
    let port = s.port.to_string();
    server.extend(["--host", s.host, "--port", port.as_str()]);
    let metrics = s.metrics_port.map(|p| p.to_string());
    if let Some(m) = &metrics {
        server.extend(["--metrics-exporter-port", m.as_str()]);
    }
    server.extend(s.server_args.iter().map(String::as_str));
    let mut launch: Vec<&str> = vec![s.client, "launch", "-e", endpoint.as_str()];
    launch.extend(s.launch.iter().map(String::as_str));
    let (gate, ready_file, family) = (path(s.gate), path(s.ready_file), path(s.family));
    let replicas = s.replicas.to_string();
    let mut ready: Vec<&str> = vec![s.python, gate.as_str(), "ready", endpoint.as_str()];
    ready.extend([s.uid, replicas.as_str(), ready_file.as_str()]);
    ready.extend(s.settings.iter().map(String::as_str));

    let mut out = String::from(
        "#!/usr/bin/env bash\n\
         # XInference in three steps: start the server, register the local model, launch it.\n\
         set -euo pipefail\n",
    );
    writeln!(out, "{} &", words(&server)?)?;
    out.push_str(
        "server=$!\n\
         # Stop the server with this script (its model replicas are its children).\n\
         trap 'kill -TERM \"$server\" 2>/dev/null; wait \"$server\"' EXIT\n\
         trap 'exit 143' TERM INT\n",
    );
    writeln!(
        out,
        "{}",
        words(&[
            s.python,
            gate.as_str(),
            "status",
            endpoint.as_str(),
            "$server"
        ])?
        .replace("'$server'", "\"$server\"")
    )?;
    writeln!(
        out,
        "{}",
        words(&[
            s.client,
            "register",
            "-e",
            endpoint.as_str(),
            "-t",
            "LLM",
            "-f",
            family.as_str()
        ])?
    )?;
    out.push_str(
        "# The model's cache link, made once: replicas started together race to make it.\n",
    );
    writeln!(
        out,
        "{}",
        words(&[s.python, gate.as_str(), "link", family.as_str()])?
    )?;
    for warning in s.warnings {
        writeln!(out, "echo {}", quote(&format!("warning: {warning}"))?)?;
    }
    writeln!(out, "{}", words(&launch)?)?;
    out.push_str(
        "# Every replica READY and every setting applied (XInference only logs one it drops).\n",
    );
    writeln!(out, "{}", words(&ready)?)?;
    out.push_str("wait \"$server\"\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_the_three_commands_in_order_with_the_gates_between() {
        let server = vec!["/v/bin/xinference-local".to_string()];
        let launch: Vec<String> = ["-n", "m", "--replica", "2", "--n_ctx", "2048"]
            .map(String::from)
            .to_vec();
        let settings = vec!["n_ctx".to_string()];
        let text = render(&Steps {
            server: &server,
            client: "/v/bin/xinference",
            python: "/v/bin/python",
            host: "127.0.0.1",
            port: 9000,
            metrics_port: Some(9001),
            server_args: &["--log-level".into(), "debug".into()],
            family: Path::new("/t/model.json"),
            launch: &launch,
            uid: "tiny",
            replicas: 2,
            settings: &settings,
            gate: Path::new("/t/gate.py"),
            ready_file: Path::new("/t/ready"),
            warnings: &["past 10".into()],
        })
        .unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        let at = |prefix: &str| {
            lines
                .iter()
                .position(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no line {prefix}: {text}"))
        };
        assert_eq!(
            lines[at("/v/bin/xinference-local")],
            "/v/bin/xinference-local --host 127.0.0.1 --port 9000 --metrics-exporter-port 9001 \
             --log-level debug &"
        );
        assert_eq!(
            lines[at("/v/bin/python /t/gate.py status")],
            "/v/bin/python /t/gate.py status http://127.0.0.1:9000 \"$server\""
        );
        let register = at("/v/bin/xinference register");
        let link = at("/v/bin/python /t/gate.py link /t/model.json");
        let launch = at("/v/bin/xinference launch");
        let ready = at("/v/bin/python /t/gate.py ready");
        assert!(register < link && link < launch && launch < ready, "{text}");
        assert_eq!(
            lines[launch],
            "/v/bin/xinference launch -e http://127.0.0.1:9000 -n m --replica 2 --n_ctx 2048"
        );
        assert_eq!(
            lines[ready],
            "/v/bin/python /t/gate.py ready http://127.0.0.1:9000 tiny 2 /t/ready n_ctx"
        );
        assert!(text.contains("echo 'warning: past 10'\n"), "{text}");
        assert!(text.ends_with("wait \"$server\"\n"), "{text}");
    }
}
