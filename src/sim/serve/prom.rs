//! `/metrics` of `sim serve`, with vLLM's Prometheus metric names.

use crate::sim::scheduler::Gauges;
use std::fmt::Write;

/// Counters and gauges the engine task keeps up to date.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    /// Latest scheduler gauges.
    pub gauges: Gauges,
    /// Prompt tokens accepted.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub generation_tokens: u64,
    /// Requests finished successfully.
    pub finished: u64,
    /// Requests dropped because their client left.
    pub aborted: u64,
    /// The cards' power and energy.
    pub power: Power,
}

/// The cards' modelled power, served under NVIDIA DCGM exporter's names, in the modelled
/// engine's terms: watts and joules of the modelled card, whatever the time scale, which is
/// served beside them so a client divides energy by the modelled span.
#[derive(Clone, Debug, Default)]
pub(crate) struct Power {
    /// Cards of the deployment (one series each).
    pub cards: u32,
    /// Joules drawn up to `since` (or up to now while busy).
    pub energy_j: f64,
    /// Watts now (all cards together).
    pub watts: f64,
    /// While idle: when the idle stretch began, the idle watts and the time scale, so a
    /// scrape counts idle energy up to the moment it is served.
    pub idle: Option<(std::time::Instant, f64, f64)>,
    /// Wall seconds per modelled second (0 until the engine runs).
    pub time_scale: f64,
}

impl Power {
    /// Joules drawn up to now.
    fn energy_now(&self) -> f64 {
        self.energy_j
            + self.idle.map_or(0.0, |(since, watts, scale)| {
                watts * since.elapsed().as_secs_f64() / scale
            })
    }
}

/// Render the Prometheus text exposition for `model`.
pub fn render(c: &Counters, model: &str) -> String {
    let label = format!("{{model_name=\"{}\"}}", model.replace('"', "'"));
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{label} {value}"
        );
    };
    let g = c.gauges;
    metric(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        g.running as f64,
    );
    metric(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        g.waiting as f64,
    );
    metric(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        g.kv_usage,
    );
    metric(
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "GPU KV-cache usage. 1 means 100 percent usage.",
        g.kv_usage,
    );
    metric(
        "vllm:num_preemptions_total",
        "counter",
        "Cumulative number of preemptions.",
        g.preemptions as f64,
    );
    metric(
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        c.prompt_tokens as f64,
    );
    metric(
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        c.generation_tokens as f64,
    );
    metric(
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        c.finished as f64,
    );
    metric(
        "vllm:request_abort_total",
        "counter",
        "Count of requests aborted by their client.",
        c.aborted as f64,
    );
    render_power(&mut out, &c.power);
    out
}

/// The cards' power (W), total energy (mJ) and utilisation (%), one series per card.
fn render_power(out: &mut String, p: &Power) {
    if p.time_scale > 0.0 {
        let name = crate::probe::server::TIME_SCALE;
        let _ = writeln!(
            out,
            "# HELP {name} Wall seconds per modelled second.\n# TYPE {name} gauge\n{name} {}",
            p.time_scale
        );
    }
    let cards = p.cards.max(1);
    let share = 1.0 / f64::from(cards);
    let busy = if p.idle.is_some() { 0.0 } else { 100.0 };
    let energy_mj = p.energy_now() * 1000.0;
    for (name, kind, help, value) in [
        (
            "DCGM_FI_DEV_POWER_USAGE",
            "gauge",
            "Power draw (in W).",
            p.watts * share,
        ),
        (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "counter",
            "Total energy consumption since boot (in mJ).",
            energy_mj * share,
        ),
        (
            "DCGM_FI_DEV_GPU_UTIL",
            "gauge",
            "GPU utilization (in %).",
            busy,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for gpu in 0..cards {
            let _ = writeln!(out, "{name}{{gpu=\"{gpu}\"}} {value}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_vllm_names_with_the_model_label() {
        let c = Counters {
            gauges: Gauges {
                running: 3,
                waiting: 2,
                kv_usage: 0.25,
                preemptions: 1,
            },
            generation_tokens: 42,
            ..Counters::default()
        };
        let text = render(&c, "qwen");
        assert!(text.contains("vllm:num_requests_running{model_name=\"qwen\"} 3\n"));
        assert!(text.contains("vllm:kv_cache_usage_perc{model_name=\"qwen\"} 0.25\n"));
        assert!(text.contains("vllm:generation_tokens_total{model_name=\"qwen\"} 42\n"));
        assert!(text.contains("# TYPE vllm:num_requests_waiting gauge"));
    }

    #[test]
    fn power_is_served_per_card_and_idle_energy_accrues_until_the_scrape() {
        let since = std::time::Instant::now() - std::time::Duration::from_millis(100);
        let c = Counters {
            power: Power {
                cards: 2,
                energy_j: 10.0,
                watts: 140.0,
                idle: Some((since, 140.0, 0.1)),
                time_scale: 0.1,
            },
            ..Counters::default()
        };
        let e = crate::probe::server::exposition::Exposition::parse(&render(&c, "m")).unwrap();
        assert_eq!(e.value(crate::probe::server::TIME_SCALE), Some(0.1));
        assert_eq!(e.value("DCGM_FI_DEV_POWER_USAGE"), Some(140.0));
        assert_eq!(e.mean("DCGM_FI_DEV_POWER_USAGE"), Some(70.0));
        // 10 J so far plus at least 0.1 s / 0.1 scale × 140 W of idle.
        let mj = e.value("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").unwrap();
        assert!((150_000.0 - 1e-6..300_000.0).contains(&mj), "{mj}");
        assert_eq!(e.value("DCGM_FI_DEV_GPU_UTIL"), Some(0.0));
    }
}
