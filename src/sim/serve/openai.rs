//! OpenAI wire format of `sim serve`: reading requests, writing chunks and responses.

use crate::sim::cache::Content;
use serde_json::{json, Value};
use std::hash::{Hash, Hasher};

/// Which endpoint a request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
}

/// The parts of a request the simulator uses.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationRequest {
    /// `model` field.
    pub model: Option<String>,
    /// Prompt tokens (whitespace-separated words).
    pub prompt_tokens: u32,
    /// The prompt's tokens, so that prompts sharing a prefix share cached blocks.
    pub content: Content,
    /// `max_tokens` / `max_completion_tokens`.
    pub max_tokens: Option<u32>,
    /// `min_tokens` (vLLM extension).
    pub min_tokens: u32,
    /// `ignore_eos` (vLLM extension).
    pub ignore_eos: bool,
    /// `stream`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
}

/// Parse a request body for `endpoint`, or say what is wrong with it.
pub fn parse(endpoint: Endpoint, body: &Value) -> Result<GenerationRequest, String> {
    let obj = body
        .as_object()
        .ok_or("the request body must be a JSON object")?;
    let tokens: Vec<u64> = match endpoint {
        Endpoint::Chat => {
            let messages = obj
                .get("messages")
                .and_then(Value::as_array)
                .ok_or("`messages` must be a list of {role, content} objects")?;
            messages
                .iter()
                .flat_map(|m| words(m.get("content")))
                .collect()
        }
        Endpoint::Completions => match obj.get("prompt") {
            Some(Value::Array(items)) if items.iter().all(Value::is_number) => {
                items.iter().filter_map(Value::as_u64).collect()
            }
            Some(Value::Array(items)) => words(items.first()),
            Some(p @ Value::String(_)) => words(Some(p)),
            _ => return Err("`prompt` must be a string, a list of strings or token ids".into()),
        },
    };
    let prompt_tokens = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
    let uint = |key: &str| -> Result<Option<u32>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or(format!("`{key}` must be a whole number ≥ 0")),
        }
    };
    let flag = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
    let max_tokens = match uint("max_completion_tokens")? {
        Some(n) => Some(n),
        None => uint("max_tokens")?,
    };
    let min_tokens = uint("min_tokens")?.unwrap_or(0);
    if max_tokens == Some(0) {
        return Err("max_tokens must be at least 1, got 0.".into());
    }
    if let Some(max) = max_tokens.filter(|m| min_tokens > *m) {
        return Err(format!(
            "min_tokens must be less than or equal to max_tokens={max}, got {min_tokens}."
        ));
    }
    Ok(GenerationRequest {
        model: obj.get("model").and_then(Value::as_str).map(str::to_string),
        prompt_tokens: prompt_tokens.max(1),
        content: Content::of_tokens(tokens),
        max_tokens,
        min_tokens,
        ignore_eos: flag(obj.get("ignore_eos")),
        stream: flag(obj.get("stream")),
        include_usage: flag(
            obj.get("stream_options")
                .and_then(|o| o.get("include_usage")),
        ),
    })
}

/// The words (tokens) of a message content, each by its hash: a string, or a list of
/// `{type: text, text}` parts.
fn words(content: Option<&Value>) -> Vec<u64> {
    let hash = |word: &str| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        word.hash(&mut h);
        h.finish()
    };
    match content {
        Some(Value::String(s)) => s.split_whitespace().map(hash).collect(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .flat_map(|t| t.split_whitespace().map(hash))
            .collect(),
        _ => Vec::new(),
    }
}

/// The text of output token `index` (one word and a space, so words = tokens).
pub(crate) fn token_text(index: u32) -> &'static str {
    const WORDS: [&str; 8] = [
        "the ",
        "model ",
        "is ",
        "a ",
        "simulated ",
        "engine ",
        "that ",
        "streams ",
    ];
    WORDS[index as usize % WORDS.len()]
}

/// Builds the response objects of one request.
pub(crate) struct Responder {
    /// Endpoint.
    pub endpoint: Endpoint,
    /// Response id.
    pub id: String,
    /// Model name reported.
    pub model: String,
    /// Unix seconds.
    pub created: u64,
}

impl Responder {
    fn envelope(&self, choices: Value) -> Value {
        let object = match self.endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            Endpoint::Completions => "text_completion",
        };
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model, "choices": choices})
    }

    /// First chat chunk: the assistant role, no content.
    pub fn role_chunk(&self) -> Value {
        self.envelope(json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]))
    }

    /// A chunk carrying `text`.
    pub(crate) fn token_chunk(&self, text: &str) -> Value {
        match self.endpoint {
            Endpoint::Chat => self.envelope(json!([{"index": 0, "delta": {"content": text}, "logprobs": null, "finish_reason": null}])),
            Endpoint::Completions => self.envelope(json!([{"index": 0, "text": text, "logprobs": null, "finish_reason": null}])),
        }
    }

    /// The chunk that carries only the finish reason.
    pub(crate) fn finish_chunk(&self, reason: &str) -> Value {
        match self.endpoint {
            Endpoint::Chat => self.envelope(
                json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": reason}]),
            ),
            Endpoint::Completions => self.envelope(
                json!([{"index": 0, "text": "", "logprobs": null, "finish_reason": reason}]),
            ),
        }
    }

    /// The usage-only chunk (`stream_options.include_usage`).
    pub(crate) fn usage_chunk(&self, prompt: u32, completion: u32) -> Value {
        let mut v = self.envelope(json!([]));
        v["usage"] = usage(prompt, completion);
        v
    }

    /// The whole non-streamed response.
    pub fn full(&self, text: &str, reason: &str, prompt: u32, completion: u32) -> Value {
        let (object, choice) = match self.endpoint {
            Endpoint::Chat => (
                "chat.completion",
                json!({"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": reason}),
            ),
            Endpoint::Completions => (
                "text_completion",
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": reason}),
            ),
        };
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model,
               "choices": [choice], "usage": usage(prompt, completion)})
    }
}

fn usage(prompt: u32, completion: u32) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

/// An OpenAI-style error body.
pub(crate) fn error_body(message: &str, kind: &str, code: u16) -> Value {
    json!({"object": "error", "message": message, "type": kind, "param": null, "code": code})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_and_reads_options() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "one two  three"},
            {"role": "user", "content": [{"type": "text", "text": "four five"}]}],
            "max_tokens": 7, "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true});
        let r = parse(Endpoint::Chat, &body).unwrap();
        assert_eq!(
            (
                r.prompt_tokens,
                r.max_tokens,
                r.stream,
                r.include_usage,
                r.ignore_eos
            ),
            (5, Some(7), true, true, true)
        );
        let c = parse(Endpoint::Completions, &json!({"prompt": [1, 2, 3, 4]})).unwrap();
        assert_eq!(c.prompt_tokens, 4);
    }

    #[test]
    fn refuses_malformed_requests() {
        assert!(parse(Endpoint::Chat, &json!({"prompt": "x"}))
            .unwrap_err()
            .contains("`messages`"));
        assert!(parse(
            Endpoint::Completions,
            &json!({"prompt": "x", "max_tokens": -1})
        )
        .unwrap_err()
        .contains("`max_tokens`"));
        let e = parse(
            Endpoint::Completions,
            &json!({"prompt": "x", "max_tokens": 2, "min_tokens": 5}),
        )
        .unwrap_err();
        assert!(e.contains("min_tokens must be less than or equal"), "{e}");
    }
}
