//! `best.json`: the winner's params, metrics (its trial's run, and over all its runs), statistics
//! (`ci95` is null from a single run), engine version, card and host facts; its command and
//! environment with the space's secrets masked.

use super::Best;
use crate::space::redact;
use serde_json::{json, Value as Json};

/// The facts of `best`.
pub fn render(best: &Best<'_>) -> Json {
    let (o, w, engine) = (best.study.objective, best.winner, &best.space.engine);
    let launch = redact::launch(best.launch, &best.space.secrets);
    let mut command = vec![launch.program.clone()];
    command.extend(launch.args.iter().cloned());
    json!({
        "study": best.study.name,
        "warm_start": best.study.warm_start,
        "trial": w.record.id.number,
        "params": w.record.params,
        "objective": {
            "direction": o.direction,
            "metric": o.metric,
            "subject_to": o.subject_to,
            "mean": w.mean,
            "ci95": w.ci95,
            "runs": w.runs,
            "values": w.values,
        },
        "baseline": w.baseline.as_ref().map(|b| json!({
            "trial": b.trial, "mean": b.mean, "ci95": b.ci95, "runs": b.runs,
            "gain_pct": w.gain_pct, "gain_ci95": w.gain_ci95,
        })),
        "metrics": w.record.metrics,
        "metrics_source": {
            "trial": w.record.id.number,
            "runs": 1,
            "note": "`metrics`: this trial's run alone; `revalidated`: means and 95% CIs over all runs",
        },
        "revalidated": {
            "trials": w.trials,
            "metrics": w.metrics.iter().map(|(name, s)| {
                (name.clone(), json!({"mean": s.mean, "ci95": s.ci95, "runs": s.runs}))
            }).collect::<serde_json::Map<_, _>>(),
        },
        "engine": {
            "kind": engine.kind,
            "model": engine.model,
            "version": best.version,
        },
        "command": command,
        "env": launch.env,
        "card": engine.card,
        "host": host_facts(),
    })
}

/// Host name, OS, CPU and memory of this machine (best effort).
fn host_facts() -> Json {
    use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};
    let refresh = RefreshKind::nothing()
        .with_cpu(CpuRefreshKind::nothing())
        .with_memory(MemoryRefreshKind::nothing().with_ram());
    let system = System::new_with_specifics(refresh).ok();
    json!({
        "hostname": System::host_name().ok(),
        "os": System::long_os_version().ok(),
        "kernel": System::kernel_version().ok(),
        "arch": System::cpu_arch(),
        "cpu": system.as_ref().and_then(|s| s.cpus().first().map(|c| c.brand().to_string())),
        "logical_cpus": system.as_ref().map(|s| s.cpus().len()),
        "physical_cores": System::physical_core_count().ok(),
        "memory_bytes": system.as_ref().map(|s| s.total_memory()),
    })
}
