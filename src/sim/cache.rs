//! The prefix cache: KV blocks named by the content they hold, shared by every running
//! request whose prompt starts with that content, and kept after their requests end until
//! their room is needed, least recently used first (vLLM's automatic prefix caching).
//!
//! A prompt's content is a list of [`Segment`]s: stretches of tokens named by a key, equal
//! keys meaning identical tokens (a system prompt, a Mooncake block, a user's earlier turn).
//! Tokens past the last segment are the request's own. A full block of the prompt is named by
//! a hash of everything up to its end, so two prompts share a block only when they agree on
//! every token before it.

use crate::probe::dataset::mix;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A stretch of prompt tokens named by its content: equal keys, identical tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Names the tokens (equal keys, equal tokens).
    pub key: u64,
    /// Tokens in the stretch.
    pub len: u32,
}

impl Segment {
    /// `len` tokens of item `id` of a kind of content (`kind` keeps kinds apart).
    pub fn named(kind: u64, id: u64, len: u32) -> Segment {
        Segment {
            key: mix(mix(kind, 0x5EED), id),
            len,
        }
    }
}

/// What a prompt is made of, from its first token; tokens after the segments are unique to
/// the request. The default is a prompt shared with no other.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Content(Arc<[Segment]>);

impl Content {
    /// A prompt that starts with `segments`.
    pub fn new(segments: Vec<Segment>) -> Content {
        Content(segments.into())
    }

    /// A prompt of these tokens, each named by its key (a token id, a word's hash).
    pub fn of_tokens(keys: impl IntoIterator<Item = u64>) -> Content {
        Content::new(
            keys.into_iter()
                .map(|key| Segment { key, len: 1 })
                .collect(),
        )
    }

    /// The names of the full `block_size`-token blocks among the first `prompt` tokens that
    /// lie within the segments, each a hash of the content up to the block's end.
    pub(crate) fn block_hashes(&self, prompt: u32, block_size: u32) -> Vec<u64> {
        let named: u32 = self.0.iter().map(|s| s.len).sum();
        let blocks = named.min(prompt) / block_size;
        let mut hashes = Vec::with_capacity(blocks as usize);
        let mut hash = 0;
        let (mut segment, mut offset) = (0, 0);
        for _ in 0..blocks {
            let mut left = block_size;
            while left > 0 {
                let s = self.0[segment];
                let take = (s.len - offset).min(left);
                hash = mix(mix(hash, s.key), u64::from(offset) << 32 | u64::from(take));
                left -= take;
                offset += take;
                if offset == s.len {
                    (segment, offset) = (segment + 1, 0);
                }
            }
            hashes.push(hash);
        }
        hashes
    }
}

/// One cached block: how many running requests hold it, and when it was last released.
#[derive(Clone, Copy, Debug)]
struct Cached {
    refs: u32,
    released: u64,
}

/// The blocks held in the cache by name. Blocks no request holds are idle: they count as free
/// and are evicted, least recently released first, when free blocks are taken.
#[derive(Debug, Default)]
pub(crate) struct PrefixCache {
    blocks: HashMap<u64, Cached>,
    /// Idle blocks by release time.
    idle: BTreeMap<u64, u64>,
    clock: u64,
}

impl PrefixCache {
    /// How many leading `hashes` are cached, and how many of those are idle.
    pub fn lookup(&self, hashes: &[u64]) -> (u32, u32) {
        let mut idle = 0;
        let hits = hashes
            .iter()
            .map_while(|h| self.blocks.get(h))
            .inspect(|c| idle += u32::from(c.refs == 0))
            .count();
        (hits as u32, idle)
    }

    /// Holds the cached block `hash`; returns whether it was idle (it no longer counts as
    /// free), `None` when it is not cached.
    pub fn acquire(&mut self, hash: u64) -> Option<bool> {
        let cached = self.blocks.get_mut(&hash)?;
        let was_idle = cached.refs == 0;
        if was_idle {
            self.idle.remove(&cached.released);
        }
        cached.refs += 1;
        Some(was_idle)
    }

    /// Names a block a request has just filled and holds: cached from now on.
    pub fn insert(&mut self, hash: u64) {
        self.blocks.insert(
            hash,
            Cached {
                refs: 1,
                released: 0,
            },
        );
    }

    /// Lets go of held blocks, the last first (so a prompt's tail is evicted before its
    /// head); returns how many became idle (free).
    pub fn release(&mut self, hashes: &[u64]) -> u32 {
        let mut freed = 0;
        for hash in hashes.iter().rev() {
            let cached = self.blocks.get_mut(hash).expect("a held block is cached");
            cached.refs -= 1;
            if cached.refs == 0 {
                self.clock += 1;
                cached.released = self.clock;
                self.idle.insert(self.clock, *hash);
                freed += 1;
            }
        }
        freed
    }

    /// Idle blocks (they count as free).
    pub fn idle(&self) -> u32 {
        self.idle.len() as u32
    }

    /// Evicts idle blocks, least recently released first, until at most `keep` are idle.
    pub fn evict_to(&mut self, keep: u32) {
        while self.idle() > keep {
            let (_, hash) = self.idle.pop_first().expect("more idle than kept");
            self.blocks.remove(&hash);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(segments: &[(u64, u32)]) -> Content {
        Content::new(
            segments
                .iter()
                .map(|&(id, len)| Segment::named(1, id, len))
                .collect(),
        )
    }

    #[test]
    fn blocks_are_named_by_everything_before_their_end() {
        let a = content(&[(1, 40), (2, 30)]).block_hashes(100, 16);
        let b = content(&[(1, 40), (3, 30)]).block_hashes(100, 16);
        let c = content(&[(9, 40), (2, 30)]).block_hashes(100, 16);
        // 70 named tokens hold 4 full blocks; the first two lie within segment 1 alone.
        assert_eq!((a.len(), b.len()), (4, 4));
        assert_eq!(a[..2], b[..2]);
        assert_ne!(a[2], b[2]);
        // The same second segment after another first one shares nothing.
        assert!(a.iter().zip(&c).all(|(x, y)| x != y));
        // A shorter prompt names fewer blocks; the same split differently is another prompt.
        assert_eq!(content(&[(1, 40), (2, 30)]).block_hashes(50, 16), a[..3]);
        assert_ne!(content(&[(1, 20), (1, 20)]).block_hashes(40, 16), a[..2]);
        assert!(Content::default().block_hashes(1000, 16).is_empty());
    }

    #[test]
    fn idle_blocks_are_evicted_least_recently_released_first() {
        let mut cache = PrefixCache::default();
        let (a, b) = ([1, 2, 3], [4, 5]);
        a.iter().chain(&b).for_each(|h| cache.insert(*h));
        assert_eq!(cache.lookup(&[1, 2, 9, 3]), (2, 0));
        assert_eq!(cache.release(&a), 3);
        assert_eq!(cache.release(&b), 2);
        assert_eq!(cache.lookup(&a), (3, 3));
        // Held again: no longer idle, so eviction passes it by.
        assert_eq!(cache.acquire(1), Some(true));
        assert_eq!(cache.acquire(1), Some(false));
        cache.evict_to(3);
        // a's tail went first (released in reverse); b stays.
        assert_eq!(cache.lookup(&a), (2, 1));
        assert_eq!(cache.lookup(&b), (2, 2));
        cache.evict_to(0);
        assert_eq!(cache.lookup(&a), (1, 0));
        assert_eq!(cache.lookup(&b), (0, 0));
        assert_eq!(cache.acquire(5), None);
    }
}
