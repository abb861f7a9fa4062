//! Synthetic prompts of exact token lengths.

use super::{Entry, Prompt};
use crate::util::files::read_limited;
use anyhow::{anyhow, bail, Context, Result};
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use tokenizers::Tokenizer;

/// Words used without a tokenizer: each counts as exactly one token.
pub(super) const WORDS: [&str; 32] = [
    "alpha", "bravo", "cargo", "delta", "ember", "fable", "gamma", "harbor", "island", "jungle",
    "kernel", "lemon", "meadow", "nectar", "orbit", "pepper", "quartz", "river", "salmon",
    "timber", "umbra", "velvet", "willow", "xenon", "yonder", "zephyr", "anchor", "beacon",
    "candle", "dune", "eagle", "forest",
];

/// Most single-token words kept from a tokenizer's vocabulary.
const POOL_LIMIT: usize = 4096;

/// How the prompt length is counted.
enum Vocab {
    /// Whitespace words from [`WORDS`].
    Words,
    /// Words that are one token each in `tokenizer`.
    Tokenizer {
        tokenizer: Arc<Tokenizer>,
        pool: Vec<String>,
    },
}

/// Generates prompts of `prefix_len + input_len·(1±r)` tokens.
pub(crate) struct RandomPrompts {
    input_len: u32,
    output_len: u32,
    range_ratio: f64,
    prefix: Vec<String>,
    vocab: Vocab,
}

impl RandomPrompts {
    /// Checks the lengths, loads the tokenizer and draws the shared prefix.
    pub fn new(
        input_len: u32,
        output_len: u32,
        range_ratio: f64,
        prefix_len: u32,
        tokenizer: Option<&Path>,
        rng: &mut ChaCha8Rng,
    ) -> Result<Self> {
        if !(0.0..1.0).contains(&range_ratio) {
            bail!("random dataset: range_ratio must be in [0, 1), got {range_ratio}");
        }
        if input_len == 0 && prefix_len == 0 {
            bail!("random dataset: input_len must be at least 1");
        }
        if output_len == 0 {
            bail!("random dataset: output_len must be at least 1");
        }
        let vocab = match tokenizer {
            None => Vocab::Words,
            Some(path) => load_vocab(path)?,
        };
        let mut prompts = RandomPrompts {
            input_len,
            output_len,
            range_ratio,
            prefix: Vec::new(),
            vocab,
        };
        prompts.prefix = prompts.exact_words(&[], prefix_len as usize, rng)?;
        Ok(prompts)
    }

    /// The next prompt with its lengths.
    pub(crate) fn next_entry(&mut self, rng: &mut ChaCha8Rng) -> Result<Entry> {
        let input = sample_len(self.input_len, self.range_ratio, 0, rng);
        let output = sample_len(self.output_len, self.range_ratio, 1, rng);
        let total = self.prefix.len() + input as usize;
        let words = self.exact_words(&self.prefix, total, rng)?;
        Ok(Entry {
            prompt: Prompt::Text(words.join(" ")),
            input_tokens: u32::try_from(total).context("prompt too long")?,
            max_tokens: output,
        })
    }

    /// The tokenizer, when lengths are counted with one.
    pub fn tokenizer(&self) -> Option<Arc<Tokenizer>> {
        match &self.vocab {
            Vocab::Words => None,
            Vocab::Tokenizer { tokenizer, .. } => Some(tokenizer.clone()),
        }
    }

    /// `prefix` followed by random words, `tokens` tokens long in total.
    fn exact_words(
        &self,
        prefix: &[String],
        tokens: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<String>> {
        let mut words = prefix.to_vec();
        match &self.vocab {
            Vocab::Words => {
                let extra = tokens.saturating_sub(words.len());
                words.extend((0..extra).map(|_| pick(&WORDS, rng).to_string()));
                Ok(words)
            }
            Vocab::Tokenizer { tokenizer, pool } => {
                words.extend((prefix.len()..tokens).map(|_| pick(pool, rng).clone()));
                // Word boundaries rarely merge; adjust until the count is exact.
                for _ in 0..tokens.max(8) * 4 {
                    let count = count_tokens(tokenizer, &words.join(" "))?;
                    if count == tokens {
                        return Ok(words);
                    }
                    if count > tokens && words.len() > prefix.len() {
                        words.pop();
                    } else {
                        words.push(pick(pool, rng).clone());
                    }
                }
                bail!("could not build a prompt of exactly {tokens} tokens with this tokenizer")
            }
        }
    }
}

fn pick<'a, T>(items: &'a [T], rng: &mut ChaCha8Rng) -> &'a T {
    items.choose(rng).expect("word lists are never empty")
}

/// A length drawn uniformly from `[len·(1−r), len·(1+r)]`, at least `min`.
fn sample_len(len: u32, ratio: f64, min: u32, rng: &mut ChaCha8Rng) -> u32 {
    let low = ((f64::from(len) * (1.0 - ratio)).floor() as u32).max(min);
    let high = ((f64::from(len) * (1.0 + ratio)).ceil() as u32).max(low);
    rng.random_range(low..=high)
}

/// Tokens in `text`, without special tokens.
pub(crate) fn count_tokens(tokenizer: &Tokenizer, text: &str) -> Result<usize> {
    let encoding = tokenizer
        .encode(text, false)
        .map_err(|e| anyhow!("tokenizer failed on a prompt: {e}"))?;
    Ok(encoding.get_ids().len())
}

/// The largest tokenizer file read (real ones are a few MiB).
const MAX_TOKENIZER_BYTES: u64 = 256 * 1024 * 1024;

fn load_vocab(path: &Path) -> Result<Vocab> {
    let text = read_limited(path, MAX_TOKENIZER_BYTES)
        .with_context(|| format!("cannot read tokenizer {}", path.display()))?;
    let tokenizer = text.parse::<Tokenizer>().map_err(|e| {
        anyhow!(
            "cannot load tokenizer {}: {e} (pass a local tokenizer.json)",
            path.display()
        )
    })?;
    let mut pool = Vec::new();
    let mut seen = HashSet::new();
    for id in 0..tokenizer.get_vocab_size(true) as u32 {
        let Ok(text) = tokenizer.decode(&[id], true) else {
            continue;
        };
        let word = text.trim();
        let plain = (2..=12).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_lowercase());
        if plain && !seen.contains(word) && count_tokens(&tokenizer, &format!(" {word}"))? == 1 {
            seen.insert(word.to_string());
            pool.push(word.to_string());
            if pool.len() == POOL_LIMIT {
                break;
            }
        }
    }
    if pool.is_empty() {
        bail!(
            "tokenizer {} has no single-token lowercase words to build prompts from",
            path.display()
        );
    }
    Ok(Vocab::Tokenizer {
        tokenizer: Arc::new(tokenizer),
        pool,
    })
}
