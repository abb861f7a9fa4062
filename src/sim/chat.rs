//! Shared-prefix chat traffic as inference-perf's `shared_prefix` generator sends it: `num_groups`
//! system prompts, `prompts_per_group` users per group, each request one user's system prompt
//! followed by a question, at a constant request rate.

use super::config::{Deployment, SimFailure};
use crate::probe::WorkloadSpec;
use crate::record::{MetricMap, Params};
use std::time::Duration;

use crate::probe::SharedPrefix;

/// Simulate `chat` sent at a constant `rate` per second for `duration` against `deployment`
/// configured with `params`; deterministic by `seed`. Returns the probe's metrics.
pub fn eval_chat(
    deployment: &Deployment,
    params: &Params,
    chat: &SharedPrefix,
    rate: f64,
    duration: Duration,
    seed: u64,
) -> Result<MetricMap, SimFailure> {
    chat.check().map_err(SimFailure::invalid)?;
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(SimFailure::invalid(format!(
            "shared-prefix chat: rate must be a positive number of requests per second, got {rate}"
        )));
    }
    let mut workload = WorkloadSpec::closed_random(chat.question_len, chat.output_len, 1, 1);
    workload.load = crate::probe::LoadSpec::Open {
        rate,
        burstiness: 1.0,
        max_concurrency: None,
        requests: None,
        duration: Some(duration),
    };
    workload.ignore_eos = true;
    let evaluation = super::eval::eval_traffic(deployment, params, &workload, seed, |source| {
        source.into_chat(*chat, rate)
    })?;
    Ok(evaluation.metrics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::requests::chat_request;

    fn chat() -> SharedPrefix {
        SharedPrefix {
            num_groups: 3,
            prompts_per_group: 2,
            system_prompt_len: 100,
            question_len: 400,
            output_len: 50,
            multi_turn: false,
        }
    }

    #[test]
    fn users_take_turns_and_share_their_groups_prefix() {
        let c = chat();
        // 16-token blocks: the 100-token system prompt fills 6 blocks, the first 4 of which
        // lie within the prompt's first 64 tokens.
        let blocks = |chat: &SharedPrefix, i| chat_request(chat, i).content.block_hashes(500, 16);
        let system: Vec<u64> = (0..7).map(|i| blocks(&c, i)[0]).collect();
        assert_eq!(system[0], system[1]);
        assert_ne!(system[1], system[2]);
        assert_eq!(system[6], system[0]);
        assert_eq!(blocks(&c, 3).len(), 6);
        assert_eq!(chat_request(&c, 5).prompt, 500);
        let returning = SharedPrefix {
            multi_turn: true,
            ..chat()
        };
        // A returning user resends its whole conversation: every full block is the same.
        assert_eq!(blocks(&returning, 7).len(), 31);
        assert_eq!(blocks(&returning, 7), blocks(&returning, 1));
        assert_ne!(blocks(&returning, 7)[6..], blocks(&returning, 0)[6..]);
        assert_eq!(blocks(&returning, 7)[..6], blocks(&c, 7)[..]);
        let mut bad = chat();
        bad.prompts_per_group = 0;
        assert!(bad.check().unwrap_err().contains("`prompts_per_group`"));
    }

    #[test]
    fn a_constant_rate_sends_rate_times_duration_requests() {
        let d = Deployment::vllm("H100", "Llama-3-8B", 1);
        let m = eval_chat(&d, &Params::new(), &chat(), 4.0, Duration::from_secs(30), 1).unwrap();
        assert_eq!(m["completed"], 120.0);
        assert!(
            m["mean_ttft_ms"] > 0.0 && m["mean_ttft_ms"] < 1000.0,
            "{m:?}"
        );
    }
}
