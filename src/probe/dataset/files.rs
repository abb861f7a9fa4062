//! Prompts read from files: JSON Lines and ShareGPT.

use super::{word_count, Entry, Prompt};
use crate::probe::workload::Api;
use crate::util::files::read_limited;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::Path;

const JSONL_FIELDS: [&str; 3] = ["question", "prompt", "messages"];

/// Reads a JSON Lines file: each line an object holding the prompt in `field` (or the first
/// of `question`, `prompt`, `messages`).
pub(crate) fn load_jsonl(
    path: &Path,
    field: Option<&str>,
    api: Api,
    max_tokens: u32,
) -> Result<Vec<Entry>> {
    let text = read(path)?;
    let mut entries = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), number + 1);
        if line.trim().is_empty() {
            continue;
        }
        let object: Value =
            serde_json::from_str(line).with_context(|| format!("{at}: not a JSON object"))?;
        let name = match field {
            Some(name) => name,
            None => JSONL_FIELDS
                .into_iter()
                .find(|name| object.get(name).is_some())
                .with_context(|| {
                    format!(
                        "{at}: no `question`, `prompt` or `messages` field; \
                         name the prompt field with --prompt-field"
                    )
                })?,
        };
        let value = object
            .get(name)
            .with_context(|| format!("{at}: no field `{name}`"))?;
        let prompt = match value {
            Value::String(text) => Prompt::Text(text.clone()),
            Value::Array(messages) if api == Api::Chat => {
                Prompt::Messages(Value::Array(messages.clone()))
            }
            Value::Array(_) => bail!(
                "{at}: field `{name}` holds chat messages; use --api chat or pick a text field \
                 with --prompt-field"
            ),
            other => bail!("{at}: field `{name}` must be a string or a message list, got {other}"),
        };
        let input_tokens = match &prompt {
            Prompt::Text(text) => word_count(text),
            Prompt::Messages(messages) => messages_words(messages),
            Prompt::Tokens(ids) => u32::try_from(ids.len()).unwrap_or(u32::MAX),
        };
        entries.push(Entry {
            prompt,
            input_tokens,
            max_tokens,
        });
    }
    if entries.is_empty() {
        bail!("{}: no prompts (the file is empty)", path.display());
    }
    Ok(entries)
}

/// Reads a ShareGPT file: `[{"conversations": [{"from": "human", "value": …}, {"from": "gpt",
/// "value": …}, …]}, …]`. Conversations with fewer than two non-empty turns are skipped.
pub(crate) fn load_sharegpt(path: &Path, max_tokens: Option<u32>) -> Result<Vec<Entry>> {
    let text = read(path)?;
    let items: Vec<Value> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not ShareGPT JSON (expected a list of {{\"conversations\": [...]}})",
            path.display()
        )
    })?;
    let entries: Vec<Entry> = items
        .iter()
        .filter_map(|item| {
            let turns = item
                .get("conversations")
                .or_else(|| item.get("conversation"))?
                .as_array()?;
            let prompt = turns.first()?.get("value")?.as_str()?;
            let reply = turns.get(1)?.get("value")?.as_str()?;
            let reply_len = word_count(reply);
            if prompt.trim().is_empty() || reply_len == 0 {
                return None;
            }
            Some(Entry {
                prompt: Prompt::Text(prompt.to_string()),
                input_tokens: word_count(prompt),
                max_tokens: max_tokens.unwrap_or(reply_len),
            })
        })
        .collect();
    if entries.is_empty() {
        bail!(
            "{}: no usable conversation (each needs a prompt and a non-empty reply)",
            path.display()
        );
    }
    Ok(entries)
}

/// The largest dataset file read (ShareGPT's full dump is about 650 MiB).
const MAX_DATASET_BYTES: u64 = 2 * 1024 * 1024 * 1024;

fn read(path: &Path) -> Result<String> {
    read_limited(path, MAX_DATASET_BYTES)
        .with_context(|| format!("cannot read dataset file {}", path.display()))
}

fn messages_words(messages: &Value) -> u32 {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .map(word_count)
        .sum()
}
