//! Request bodies for the OpenAI chat and completions endpoints.

use super::{Entry, Prompt};
use crate::probe::workload::{Api, DatasetSpec, WorkloadSpec};
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use serde_json::{json, Map, Value};

/// The request options shared by every body of a workload.
pub(crate) struct BodyTemplate {
    api: Api,
    stream: bool,
    min_tokens: Option<u32>,
    ignore_eos: bool,
    extra: Map<String, Value>,
}

impl BodyTemplate {
    /// Checks the workload's request options.
    pub fn new(workload: &WorkloadSpec) -> Result<Self> {
        let extra = match &workload.extra_body {
            None => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(other) => {
                bail!("extra_body must be a JSON object like {{\"temperature\": 0}}, got `{other}`")
            }
        };
        if extra.contains_key("model") {
            bail!("extra_body must not set `model`; the target's model name is used");
        }
        Ok(BodyTemplate {
            api: workload.api,
            stream: workload.stream,
            min_tokens: workload.min_tokens,
            // A replayed request must generate exactly the trace's output length.
            ignore_eos: workload.ignore_eos
                || matches!(workload.dataset, DatasetSpec::Trace { .. }),
            extra,
        })
    }

    /// The body for one entry, without `model`; keys are sorted, so bytes are reproducible.
    pub fn build(&self, entry: &Entry) -> Result<Bytes> {
        let mut body = Map::new();
        match (&entry.prompt, self.api) {
            (Prompt::Text(text), Api::Chat) => {
                body.insert(
                    "messages".into(),
                    json!([{"role": "user", "content": text}]),
                );
            }
            (Prompt::Messages(messages), Api::Chat) => {
                body.insert("messages".into(), messages.clone());
            }
            (Prompt::Text(text), Api::Completions) => {
                body.insert("prompt".into(), Value::from(text.as_str()));
            }
            (Prompt::Tokens(ids), Api::Completions) => {
                body.insert("prompt".into(), json!(ids));
            }
            (Prompt::Tokens(_), Api::Chat) => {
                bail!("token-id prompts need the completions API (--api completions)")
            }
            (Prompt::Messages(_), Api::Completions) => {
                bail!("the dataset holds chat messages; use the chat API (--api chat)")
            }
        }
        body.insert("max_tokens".into(), entry.max_tokens.into());
        body.insert("stream".into(), self.stream.into());
        if self.stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if let Some(min) = self.min_tokens {
            body.insert("min_tokens".into(), min.into());
        }
        if self.ignore_eos {
            body.insert("ignore_eos".into(), true.into());
        }
        for (key, value) in &self.extra {
            body.insert(key.clone(), value.clone());
        }
        let bytes = serde_json::to_vec(&body).context("serialising a request body")?;
        Ok(Bytes::from(bytes))
    }
}
