//! Shared-prefix chat, as inference-perf's `shared_prefix` generator sent it in the public H100
//! measurements (`shared/data/sim-truth`).
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

use super::{synth, Entry};
use crate::probe::workload::{Api, DatasetSpec};
use anyhow::{bail, Context, Result};

const SYSTEM_KIND: u64 = 3;
const QUESTION_KIND: u64 = 4;
const FRESH_QUESTION_KIND: u64 = 5;

/// Why shared-prefix chat of these sizes cannot be sent, naming the field.
pub fn check(
    num_groups: u32,
    prompts_per_group: u32,
    question_len: u32,
    output_len: u32,
) -> Result<(), String> {
    let positive = [
        ("num_groups", num_groups),
        ("prompts_per_group", prompts_per_group),
        ("question_len", question_len),
        ("output_len", output_len),
    ];
    match positive.iter().find(|(_, v)| *v == 0) {
        Some((name, _)) => Err(format!("shared-prefix chat: `{name}` must be at least 1")),
        None => Ok(()),
    }
}

/// The requests of a shared-prefix chat workload, in order.
pub(crate) struct SharedPrefixChat {
    groups: u32,
    per_group: u32,
    system_len: u32,
    question_len: u32,
    output_len: u32,
    multi_turn: bool,
    api: Api,
    next: u64,
}

impl SharedPrefixChat {
    /// Checks the lengths of `spec`, which must be a shared-prefix dataset.
    pub fn new(spec: &DatasetSpec, api: Api) -> Result<Self> {
        let DatasetSpec::SharedPrefix {
            num_groups,
            prompts_per_group,
            system_prompt_len,
            question_len,
            output_len,
            multi_turn,
        } = spec
        else {
            bail!("not a shared-prefix dataset");
        };
        check(*num_groups, *prompts_per_group, *question_len, *output_len)
            .map_err(anyhow::Error::msg)?;
        Ok(SharedPrefixChat {
            groups: *num_groups,
            per_group: *prompts_per_group,
            system_len: *system_prompt_len,
            question_len: *question_len,
            output_len: *output_len,
            multi_turn: *multi_turn,
            api,
            next: 0,
        })
    }

    /// The next request.
    pub(crate) fn next_entry(&mut self) -> Result<Entry> {
        let users = u64::from(self.groups) * u64::from(self.per_group);
        let (index, user) = (self.next, self.next % users);
        self.next += 1;
        let group = user / u64::from(self.per_group);
        let question = match self.multi_turn {
            true => synth::key(QUESTION_KIND, user),
            false => synth::key(FRESH_QUESTION_KIND, index),
        };
        let tokens = synth::run(synth::key(SYSTEM_KIND, group), self.system_len)
            .chain(synth::run(question, self.question_len));
        let len = u64::from(self.system_len) + u64::from(self.question_len);
        Ok(Entry {
            prompt: synth::prompt(tokens, self.api),
            input_tokens: u32::try_from(len).context("a prompt of more than 2^32 tokens")?,
            max_tokens: self.output_len,
        })
    }
}
