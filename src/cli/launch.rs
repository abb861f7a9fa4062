//! `infertune launch`: start one config, wait until it serves, keep it up until Ctrl-C.

use crate::engine::{for_kind, Slot};
use crate::launch::{command_line, Launcher, ProcessLauncher};
use crate::space::overrides::config_with_overrides;
use crate::space::redact;
use crate::space::{Feasibility, StudySpec};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

/// Arguments of `infertune launch`.
#[derive(clap::Args, Debug)]
pub(crate) struct LaunchArgs {
    /// Search space file (YAML).
    #[arg(long)]
    pub space: PathBuf,
    /// Set a parameter, NAME=VALUE (repeatable); the others keep their defaults.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Port to serve on (default: the space's launch.port).
    #[arg(long)]
    pub port: Option<u16>,
    /// Folder for the server log and generated config files.
    #[arg(long, default_value = "results/launch")]
    pub workdir: PathBuf,
    /// Print the command line and exit without starting anything.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs `infertune launch`.
pub fn run(args: LaunchArgs) -> Result<i32> {
    let (mut space, _notes) = StudySpec::load_for_host(&args.space, crate::engine::rule_pack)?;
    let flags = super::startup::flags(&mut space)?;
    if let Some(notice) = flags.notice() {
        eprintln!("warning: {notice}");
    }
    let params = config_with_overrides(&space, &args.set)?;
    if let Some(warning) = space.rules_warning() {
        eprintln!("warning: {warning}");
    }
    let params = space
        .resolve(&params)
        .map_err(|r| anyhow::anyhow!("the engine would refuse this config: {r}"))?;
    let engine = &space.engine;
    let slot = Slot {
        port: args.port.unwrap_or(space.launch.port),
        devices: Vec::new(),
        extra_ports: Vec::new(),
        workdir: args.workdir.clone(),
    };
    let spec = for_kind(engine.kind).launch_spec(&space, &params, &slot)?;
    println!("{}", command_line(&redact::launch(&spec, &space.secrets))?);
    if args.dry_run {
        return Ok(0);
    }
    let launcher = ProcessLauncher::new(crate::engine::log_patterns())
        .on_warning(|text| eprintln!("warning: {text}"));
    let interrupted = on_interrupt(launcher.cancel_flag())?;
    let log = args.workdir.join(crate::exec::SERVER_LOG);
    let server = match launcher.start(
        &spec,
        &log,
        space.launch.ready_timeout,
        space.launch.stop_grace,
    ) {
        Ok(server) => server,
        Err(failure) => {
            eprintln!("start failed ({}): {}", failure.kind, failure.message);
            eprintln!("server log: {}", log.display());
            return Ok(1);
        }
    };
    println!(
        "ready after {:.2} s at {} (log: {}); Ctrl-C stops it",
        server.ready_after().as_secs_f64(),
        server.base_url(),
        log.display()
    );
    // A closed channel means the signal thread failed; stop rather than run unsupervised.
    let _ = interrupted.recv();
    server.stop().context("teardown failed")?;
    println!("stopped");
    Ok(0)
}

/// Raise `flag` and send on the returned channel at the first SIGINT or SIGTERM.
fn on_interrupt(flag: Arc<AtomicBool>) -> Result<mpsc::Receiver<()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut int, mut term) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    })?;
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            runtime.block_on(async {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            });
            flag.store(true, Ordering::Relaxed);
            let _ = tx.send(());
        });
    if let Err(e) = spawned {
        bail!("cannot watch for Ctrl-C: {e}");
    }
    Ok(rx)
}
