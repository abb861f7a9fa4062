//! Interprets an OpenAI streaming chunk (or a whole non-streamed response) without allocating:
//! does it carry tokens, usage, or an error?

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// Token counts reported by the server.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
pub(crate) struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Generated tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

/// What one event says.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ChunkInfo {
    /// Non-empty `content`, `text`, `reasoning_content`/`reasoning` or `tool_calls`.
    pub token: bool,
    /// A choice carries a `finish_reason`: its generation ended.
    pub finished: bool,
    /// `usage`, when present and not null.
    pub usage: Option<Usage>,
    /// An `error` object sent in the stream.
    pub error: Option<String>,
}

/// One SSE event.
#[derive(Debug, PartialEq)]
pub enum Event {
    /// `data: [DONE]`.
    Done,
    /// A JSON chunk.
    Chunk(ChunkInfo),
}

/// Classifies an event's data; `Err` holds a short description of malformed JSON.
pub(crate) fn classify(data: &[u8]) -> Result<Event, String> {
    if data.trim_ascii() == b"[DONE]" {
        return Ok(Event::Done);
    }
    parse(data).map(Event::Chunk)
}

/// Parses a chunk or a complete (non-streamed) response body.
pub(crate) fn parse(data: &[u8]) -> Result<ChunkInfo, String> {
    let raw: RawChunk = serde_json::from_slice(data)
        .map_err(|e| format!("malformed JSON ({e}): {}", excerpt(data)))?;
    Ok(ChunkInfo {
        token: raw.choices.token,
        finished: raw.choices.finished,
        usage: raw.usage,
        error: raw.error.map(|e| excerpt(e.to_string().as_bytes())),
    })
}

/// The generated text in a chunk or response (content, reasoning and completion text).
pub(crate) fn text_of(data: &[u8], out: &mut String) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let choices = value.get("choices").and_then(|c| c.as_array());
    for choice in choices.into_iter().flatten() {
        for part in ["delta", "message"] {
            if let Some(delta) = choice.get(part) {
                for key in ["reasoning_content", "reasoning", "content"] {
                    if let Some(text) = delta.get(key).and_then(|t| t.as_str()) {
                        out.push_str(text);
                    }
                }
            }
        }
        if let Some(text) = choice.get("text").and_then(|t| t.as_str()) {
            out.push_str(text);
        }
    }
}

/// At most 200 characters of `bytes`, lossily decoded.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
    text.trim().to_string()
}

#[derive(Deserialize)]
struct RawChunk {
    #[serde(default)]
    choices: Choices,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawChoice {
    #[serde(default)]
    delta: Option<RawDelta>,
    #[serde(default)]
    message: Option<RawDelta>,
    #[serde(default)]
    text: Option<NonEmpty>,
    #[serde(default)]
    finish_reason: Option<NonEmpty>,
}

#[derive(Deserialize)]
struct RawDelta {
    #[serde(default)]
    content: Option<NonEmpty>,
    #[serde(default)]
    reasoning_content: Option<NonEmpty>,
    #[serde(default)]
    reasoning: Option<NonEmpty>,
    #[serde(default)]
    tool_calls: Option<NonEmpty>,
}

impl RawDelta {
    fn token(&self) -> bool {
        [
            &self.content,
            &self.reasoning_content,
            &self.reasoning,
            &self.tool_calls,
        ]
        .iter()
        .any(|field| matches!(field, Some(NonEmpty(true))))
    }
}

/// Whether any choice of a `choices` list carries tokens, and whether any has finished (no
/// allocation).
#[derive(Default)]
struct Choices {
    token: bool,
    finished: bool,
}

impl<'de> Deserialize<'de> for Choices {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChoicesVisitor;
        impl<'de> Visitor<'de> for ChoicesVisitor {
            type Value = Choices;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Choices, E> {
                Ok(Choices::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Choices, A::Error> {
                let mut choices = Choices::default();
                while let Some(choice) = seq.next_element::<RawChoice>()? {
                    let delta = choice.delta.as_ref().is_some_and(RawDelta::token);
                    let message = choice.message.as_ref().is_some_and(RawDelta::token);
                    choices.token |=
                        delta || message || matches!(choice.text, Some(NonEmpty(true)));
                    choices.finished |= matches!(choice.finish_reason, Some(NonEmpty(true)));
                }
                Ok(choices)
            }
        }
        deserializer.deserialize_any(ChoicesVisitor)
    }
}

/// Whether a string (or list) is non-empty, read without copying it.
struct NonEmpty(bool);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NonEmptyVisitor;
        impl<'de> Visitor<'de> for NonEmptyVisitor {
            type Value = NonEmpty;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<NonEmpty, E> {
                Ok(NonEmpty(!text.is_empty()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<NonEmpty, E> {
                Ok(NonEmpty(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NonEmpty, A::Error> {
                let mut any = false;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    any = true;
                }
                Ok(NonEmpty(any))
            }
        }
        deserializer.deserialize_any(NonEmptyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(json: &str) -> bool {
        match classify(json.as_bytes()).unwrap() {
            Event::Chunk(info) => info.token,
            Event::Done => panic!("not a chunk"),
        }
    }

    #[test]
    fn only_non_empty_generated_fields_bear_tokens() {
        assert!(!token(
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#
        ));
        assert!(!token(r#"{"choices":[{"delta":{"role":"assistant"}}]}"#));
        assert!(!token(
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#
        ));
        assert!(!token(r#"{"choices":[],"usage":{"completion_tokens":3}}"#));
        assert!(!token(
            r#"{"choices":[{"delta":{"content":null,"tool_calls":[]}}]}"#
        ));
        assert!(token(r#"{"choices":[{"delta":{"content":"hi"}}]}"#));
        assert!(token(
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#
        ));
        assert!(token(
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"1"}]}}]}"#
        ));
        assert!(token(r#"{"choices":[{"text":"x","index":0}]}"#));
        assert!(token(
            r#"{"choices":[{"message":{"content":"full answer"}}]}"#
        ));
    }

    #[test]
    fn a_finish_reason_ends_the_generation_and_a_null_one_does_not() {
        let finished = |json: &str| parse(json.as_bytes()).unwrap().finished;
        assert!(finished(
            r#"{"choices":[{"text":"","index":0,"finish_reason":"stop"}]}"#
        ));
        assert!(finished(
            r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#
        ));
        assert!(!finished(
            r#"{"choices":[{"delta":{"content":"a"},"finish_reason":null}]}"#
        ));
        assert!(!finished(r#"{"choices":[{"text":"a"}]}"#));
    }

    #[test]
    fn usage_done_errors_and_malformed_json() {
        let info =
            parse(br#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#).unwrap();
        assert_eq!(info.usage.unwrap().completion_tokens, Some(7));
        assert_eq!(classify(b"[DONE]").unwrap(), Event::Done);
        let error = parse(br#"{"error":{"message":"boom"}}"#)
            .unwrap()
            .error
            .unwrap();
        assert!(error.contains("boom"));
        assert!(classify(b"{\"choices\":[")
            .unwrap_err()
            .contains("malformed JSON"));
    }

    #[test]
    fn text_is_collected_from_all_generated_fields() {
        let mut text = String::new();
        text_of(
            br#"{"choices":[{"delta":{"reasoning_content":"a","content":"b"}}]}"#,
            &mut text,
        );
        text_of(br#"{"choices":[{"text":"c"}]}"#, &mut text);
        assert_eq!(text, "abc");
    }
}
