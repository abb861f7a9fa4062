//! Inputs a model sees beside the parameters' own coordinates, derived from how the engine forms
//! its batch under the probe.
//!
//! - The *effective batch*, `min(batch cap, clients)`: a cap above the probe's client count never
//!   fills, so every such config batches alike, while below it each step of the cap matters.
//!   A stationary kernel over the cap alone sees neither the plateau nor the steep part.
//! - The *prefill room* of a step, `step tokens − effective batch`, where decodes and prefill
//!   chunks share one token budget (vLLM's chunked prefill): the tokens of prompt a step adds on
//!   top of the running decodes, which set the time per output token. The best configs of a
//!   latency-bound chat trade a larger batch for a small room, a corner the raw parameters
//!   place on a thin diagonal.

use crate::record::{Params, Value};
use crate::space::{Batching, ParamDef, ParamKind};

/// Unit range of a derived input: twice a parameter's, so the models' length scales, chosen for
/// the parameters' unit ranges, resolve its effect at half the scale.
const SPAN: f64 = 2.0;
/// Fewest prompt tokens a step is counted as having room for.
const MIN_PREFILL_ROOM: f64 = 16.0;

/// The derived inputs of one space.
pub(crate) struct BatchInputs {
    cap: String,
    cap_low: f64,
    clients: f64,
    /// The step-token parameter and the top of its range.
    step_tokens: Option<(String, f64)>,
}

impl BatchInputs {
    /// The inputs of `batching` over the searched parameters `defs`; `None` when the client count
    /// is within the cap's lowest value (the batch never varies below it).
    pub(crate) fn of(batching: &Batching, defs: &[&ParamDef]) -> Option<Self> {
        let int_range = |name: &str| {
            defs.iter()
                .find(|d| d.name == name)
                .and_then(|d| match d.kind {
                    ParamKind::Int { low, high, .. } if low >= 1 => Some((low as f64, high as f64)),
                    _ => None,
                })
        };
        let (cap_low, _) = int_range(&batching.batch_cap)?;
        let clients = f64::from(batching.clients);
        if clients <= cap_low {
            return None;
        }
        let step_tokens = batching.step_tokens.as_ref().and_then(|name| {
            let (_, high) = int_range(name)?;
            (high > MIN_PREFILL_ROOM).then(|| (name.clone(), high))
        });
        Some(BatchInputs {
            cap: batching.batch_cap.clone(),
            cap_low,
            clients,
            step_tokens,
        })
    }

    /// Number of derived inputs.
    pub(crate) fn count(&self) -> usize {
        1 + usize::from(self.step_tokens.is_some())
    }

    /// Appends the derived inputs of `params` to `x` (NaN where a parameter is absent).
    pub(crate) fn encode(&self, params: &Params, x: &mut Vec<f64>) {
        let int = |name: &str| params.get(name).and_then(Value::as_i64).map(|v| v as f64);
        let batch = int(&self.cap).map(|cap| cap.min(self.clients).max(self.cap_low));
        x.push(batch.map_or(f64::NAN, |b| log_unit(b, self.cap_low, self.clients)));
        if let Some((name, high)) = &self.step_tokens {
            let room = match (int(name), batch) {
                (Some(tokens), Some(b)) => (tokens - b).max(MIN_PREFILL_ROOM),
                _ => f64::NAN,
            };
            x.push(log_unit(room, MIN_PREFILL_ROOM, *high));
        }
    }
}

/// `v` on a log scale from `low` (0) to `high` (`SPAN`).
fn log_unit(v: f64, low: f64, high: f64) -> f64 {
    SPAN * (v / low).ln() / (high / low).ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::ParamKind;

    fn int(name: &str, low: i64, high: i64) -> ParamDef {
        ParamDef::new(
            name,
            ParamKind::Int {
                low,
                high,
                step: None,
                log: true,
            },
        )
    }

    fn config(seqs: i64, tokens: i64) -> Params {
        Params::from([
            ("max_num_seqs".into(), Value::Int(seqs)),
            ("max_num_batched_tokens".into(), Value::Int(tokens)),
        ])
    }

    fn vllm(clients: u32) -> Batching {
        Batching {
            batch_cap: "max_num_seqs".into(),
            step_tokens: Some("max_num_batched_tokens".into()),
            clients,
        }
    }

    #[test]
    fn a_cap_above_the_clients_batches_like_the_client_count() {
        let (seqs, tokens) = (
            int("max_num_seqs", 8, 1024),
            int("max_num_batched_tokens", 256, 32768),
        );
        let inputs = BatchInputs::of(&vllm(128), &[&seqs, &tokens]).unwrap();
        assert_eq!(inputs.count(), 2);
        let encoded = |s, t| {
            let mut x = Vec::new();
            inputs.encode(&config(s, t), &mut x);
            x
        };
        assert_eq!(encoded(128, 2048), encoded(1024, 2048));
        assert!((encoded(128, 2048)[0] - SPAN).abs() < 1e-12);
        assert_eq!(encoded(8, 2048)[0], 0.0);
        assert!(encoded(64, 2048)[0] < encoded(100, 2048)[0]);
        // The room left for prompt tokens shrinks as the batch takes more of the step.
        assert!(encoded(120, 450)[1] < encoded(100, 450)[1]);
        assert!(encoded(120, 450)[1] < encoded(120, 8192)[1]);
        assert_eq!(encoded(300, 100)[1], 0.0);
    }

    #[test]
    fn absent_parameters_and_caps_the_clients_never_exceed_give_no_input() {
        let seqs = int("max_num_seqs", 8, 1024);
        assert!(BatchInputs::of(&vllm(8), &[&seqs]).is_none());
        let inputs = BatchInputs::of(&vllm(64), &[&seqs]).unwrap();
        assert_eq!(inputs.count(), 1, "the token budget is not searched");
        let mut x = Vec::new();
        inputs.encode(&Params::new(), &mut x);
        assert!(x[0].is_nan());
    }
}
