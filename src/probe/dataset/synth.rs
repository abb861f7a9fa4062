//! Synthesised prompt content: runs of tokens named by a key, the same wherever the key
//! appears, so requests that share keys share a prefix. With the completions API a token is
//! an id (exact length on any engine); with the chat API a word (one token each for the
//! simulator, approximate for a real tokenizer).

use super::random::WORDS;
use super::Prompt;
use crate::probe::workload::Api;

/// Token ids are drawn from `FIRST_ID..FIRST_ID + ID_SPAN`, clear of the special tokens at
/// either end of common vocabularies.
const FIRST_ID: u32 = 1000;
const ID_SPAN: u32 = 8000;

/// `len` token hashes of the run named `key`.
pub(super) fn run(key: u64, len: u32) -> impl Iterator<Item = u64> {
    (0..len).map(move |position| mix(key, u64::from(position)))
}

/// Kinds of synthesised runs, in one list so that no two datasets' runs share a key.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// A Mooncake block of a replayed trace.
    Block = 1,
    /// A trace row's own tokens.
    Row = 2,
    /// A shared-prefix group's system prompt.
    System = 3,
    /// A shared-prefix user's question, resent each turn.
    Question = 4,
    /// A shared-prefix question asked once.
    FreshQuestion = 5,
}

/// The key of item `id` of a kind of run.
pub(super) fn key(kind: Kind, id: u64) -> u64 {
    mix(kind as u64, 0) ^ id.rotate_left(17)
}

/// A prompt of the given token hashes, for `api`.
pub(super) fn prompt(tokens: impl Iterator<Item = u64>, api: Api) -> Prompt {
    match api {
        Api::Completions => Prompt::Tokens(
            tokens
                .map(|h| FIRST_ID + (h % u64::from(ID_SPAN)) as u32)
                .collect(),
        ),
        Api::Chat => {
            let words: Vec<&str> = tokens
                .map(|h| WORDS[(h % WORDS.len() as u64) as usize])
                .collect();
            Prompt::Text(words.join(" "))
        }
    }
}

/// A well-mixed 64-bit hash of `key` and a position (splitmix64).
pub(crate) fn mix(key: u64, position: u64) -> u64 {
    let mut z = key
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(position)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
