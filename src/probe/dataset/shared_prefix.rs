//! Shared-prefix chat, as inference-perf's `shared_prefix` generator sent it in the public H100
//! measurements (`data/sim-truth`).
//!
//! `num_groups` system prompts of `system_prompt_len` tokens, `prompts_per_group` users in each
//! group, each request `system prompt + question` with a question of `question_len` tokens and
//! `output_len` tokens asked for. Request `i` belongs to user `i mod users` (users in order,
//! group by group), so a constant rate visits every user in turn:
//!
//! * single turn: each request's question is new, so requests share only their group's
//!   system prompt;
//! * multi-turn: a user's every turn resends its conversation, the system prompt and its
//!   question, so from its second turn on the whole prompt is a prefix the server has seen.
//!
//! The measured runs' mean prompt stayed at about `system_prompt_len + question_len` (591.6
//! tokens for 100 + 466), so a turn does not append the previous reply here; inference-perf's
//! current source appends it (the conversation grows turn by turn), which this does not model.

use super::synth::{self, Kind};
use super::Entry;
use crate::probe::workload::{Api, SharedPrefix};
use anyhow::{Context, Result};

/// The requests of a shared-prefix chat workload, in order.
pub(crate) struct SharedPrefixChat {
    sizes: SharedPrefix,
    api: Api,
    next: u64,
}

impl SharedPrefixChat {
    /// Checks `sizes`.
    pub fn new(sizes: &SharedPrefix, api: Api) -> Result<Self> {
        sizes.check().map_err(anyhow::Error::msg)?;
        Ok(SharedPrefixChat {
            sizes: *sizes,
            api,
            next: 0,
        })
    }

    /// The next request.
    pub(crate) fn next_entry(&mut self) -> Result<Entry> {
        let sizes = &self.sizes;
        let (index, user) = (self.next, self.next % sizes.users());
        self.next += 1;
        let group = user / u64::from(sizes.prompts_per_group);
        let question = match sizes.multi_turn {
            true => synth::key(Kind::Question, user),
            false => synth::key(Kind::FreshQuestion, index),
        };
        let tokens = synth::run(synth::key(Kind::System, group), sizes.system_prompt_len)
            .chain(synth::run(question, sizes.question_len));
        let len = u64::from(sizes.system_prompt_len) + u64::from(sizes.question_len);
        Ok(Entry {
            prompt: synth::prompt(tokens, self.api),
            input_tokens: u32::try_from(len).context("a prompt of more than 2^32 tokens")?,
            max_tokens: sizes.output_len,
        })
    }
}
