//! Duration of one engine step: a roofline of the card (compute vs HBM traffic), the
//! tensor-parallel all-reduces, kernel launches, and the host's per-step work.

use super::config::EngineConfig;
use super::numa;
use super::profiles::ModelProfile;

/// What one step computes, as the scheduler planned it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepShape {
    /// Sequences in the step.
    pub seqs: u32,
    /// Tokens computed (prefill chunk tokens + one per decode).
    pub tokens: u32,
    /// Sum of the context lengths of the decoding sequences (their KV reads and attention).
    pub decode_context: f64,
    /// Sum over prefill chunks of the context they end at (their KV reads).
    pub prefill_context: f64,
    /// Sum over prefill chunks of `n × (start + n / 2)`: query×key pairs of the chunks.
    pub prefill_attention: f64,
}

/// Precomputed constants of the step-time formula for one configuration.
#[derive(Clone, Debug)]
pub(crate) struct CostModel {
    flops_per_token: f64,
    attention_flops_per_pair: f64,
    flops_per_second: f64,
    model: &'static ModelProfile,
    tp: f64,
    kv_bytes_per_token: f64,
    bytes_per_second: f64,
    launch_s: f64,
    allreduce_count: f64,
    allreduce_latency_s: f64,
    allreduce_bytes_per_token: f64,
    link_bytes_per_second: f64,
    host_base_s: f64,
    host_per_seq_s: f64,
    host_per_token_s: f64,
}

impl CostModel {
    /// Build the model for `cfg` (per card: weights and heads are split `tp` ways).
    pub fn new(cfg: &EngineConfig) -> CostModel {
        let m = cfg.model;
        let e = cfg.engine;
        let tp = f64::from(cfg.tp);
        // Small hidden sizes keep matrix units under-used.
        let shape_efficiency = f64::from(m.hidden) / (f64::from(m.hidden) + 1024.0);
        let host_scale = cfg.card.host_factor
            * numa::host_factor(&cfg.numa, &cfg.card.host)
            * (1.0 + e.host_per_tp_worker * (tp - 1.0));
        let link_hops = 2.0 * (tp - 1.0);
        CostModel {
            flops_per_token: 2.0 * m.active_params_b() * 1e9 / tp,
            attention_flops_per_pair: 4.0 * f64::from(m.layers) * f64::from(m.heads * m.head_dim)
                / tp,
            flops_per_second: cfg.card.tflops
                * 1e12
                * e.mfu
                * shape_efficiency
                * cfg.card.efficiency,
            model: m,
            tp,
            kv_bytes_per_token: cfg.kv_bytes_per_token_per_card(),
            bytes_per_second: cfg.card.hbm_gbps * 1e9 * e.bw_efficiency * cfg.card.efficiency,
            launch_s: f64::from(m.layers)
                * if cfg.enforce_eager {
                    e.eager_layer_launch_us
                } else {
                    e.layer_launch_us
                }
                * 1e-6,
            allreduce_count: if cfg.tp > 1 {
                2.0 * f64::from(m.layers)
            } else {
                0.0
            },
            allreduce_latency_s: link_hops * cfg.card.link.latency_us * 1e-6,
            allreduce_bytes_per_token: link_hops / tp * f64::from(m.hidden) * 2.0,
            link_bytes_per_second: cfg.card.link.gbps * 1e9,
            host_base_s: e.host_base_ms * 1e-3 * host_scale,
            host_per_seq_s: e.host_per_seq_ms * 1e-3 * host_scale,
            host_per_token_s: e.host_per_token_us * 1e-6 * host_scale,
        }
    }

    /// Seconds one step of `shape` takes (before noise).
    pub(crate) fn step_seconds(&self, shape: &StepShape) -> f64 {
        let tokens = f64::from(shape.tokens);
        let flops = self.flops_per_token * tokens
            + self.attention_flops_per_pair * (shape.prefill_attention + shape.decode_context);
        // A mixture of experts reads only the experts this step's tokens are routed to.
        let bytes = self.model.weight_bytes_read(tokens) / self.tp
            + self.kv_bytes_per_token * (shape.decode_context + shape.prefill_context);
        let device = (flops / self.flops_per_second).max(bytes / self.bytes_per_second);
        let comm = self.allreduce_count
            * (self.allreduce_latency_s
                + self.allreduce_bytes_per_token * tokens / self.link_bytes_per_second);
        let host = self.host_base_s
            + self.host_per_seq_s * f64::from(shape.seqs)
            + self.host_per_token_s * tokens;
        device + self.launch_s + comm + host
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Params;
    use crate::sim::config::Deployment;

    fn cost(card: &str, model: &str, tp: u32) -> CostModel {
        let d = Deployment::vllm(card, model, tp);
        CostModel::new(&EngineConfig::resolve(&d, &Params::new()).unwrap())
    }

    fn decode(seqs: u32, ctx: f64) -> StepShape {
        StepShape {
            seqs,
            tokens: seqs,
            decode_context: f64::from(seqs) * ctx,
            ..StepShape::default()
        }
    }

    #[test]
    fn bigger_batches_cost_more_per_step_but_less_per_token() {
        let c = cost("H100", "Qwen2.5-7B", 1);
        let one = c.step_seconds(&decode(1, 1000.0));
        let many = c.step_seconds(&decode(128, 1000.0));
        assert!(many > one && many / 128.0 < one / 4.0, "{one} {many}");
    }

    #[test]
    fn a_mixture_of_experts_reads_the_experts_its_tokens_touch() {
        let m = cost("H100", "Mixtral-8x7B", 2).model;
        let (one, many) = (m.weight_bytes_read(1.0), m.weight_bytes_read(64.0));
        assert!(one < 0.4 * many, "{one} {many}");
        assert!((many / m.weight_bytes() - 1.0).abs() < 0.01, "{many}");
    }

    #[test]
    fn faster_memory_means_faster_decode_and_tp_adds_communication() {
        let h100 = cost("H100", "Qwen2.5-7B", 1).step_seconds(&decode(8, 500.0));
        let a100 = cost("A100-80", "Qwen2.5-7B", 1).step_seconds(&decode(8, 500.0));
        assert!(h100 < a100, "{h100} {a100}");
        let t4 = cost("T4", "Qwen2-7B", 4);
        assert!(t4.allreduce_count > 0.0);
        let prefill = StepShape {
            seqs: 1,
            tokens: 2048,
            prefill_context: 2048.0,
            prefill_attention: 2048.0 * 1024.0,
            ..StepShape::default()
        };
        assert!(t4.step_seconds(&prefill) > t4.step_seconds(&decode(1, 2048.0)));
    }
}
