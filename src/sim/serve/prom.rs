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
    out
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
}
