//! Continuous-batching scheduler: which sequences run in each step, under `max_num_seqs`, the
//! token budget and the KV-cache blocks; preemption with recompute; a prefix cache of blocks
//! named by their content (see [`super::cache`]).

use super::cache::{Content, PrefixCache};
use super::config::EngineConfig;
use super::cost::StepShape;
use super::memory::KvCapacity;
use super::profiles::Scheduling;
use std::collections::VecDeque;

/// What a step produced for one request (tokens appear when the step ends).
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// One output token; `first` for the request's first token.
    Token { id: u64, first: bool },
    /// The request generated all its tokens.
    Finished { id: u64 },
    /// The engine gave up on the request (it can never fit).
    Rejected { id: u64, reason: String },
}

/// Scheduler gauges, as `/metrics` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Gauges {
    /// Requests in the running batch.
    pub running: usize,
    /// Requests queued.
    pub waiting: usize,
    /// Fraction of KV blocks in use.
    pub kv_usage: f64,
    /// Preemptions so far.
    pub preemptions: u64,
}

/// The prefix cache's counters, as vLLM's `prefix_cache_queries` and `prefix_cache_hits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PrefixCounters {
    /// Prompt tokens looked up in the prefix cache when requests were admitted.
    pub queries: u64,
    /// Of those, the tokens found cached.
    pub hits: u64,
}

#[derive(Debug)]
struct Seq {
    id: u64,
    prompt: u32,
    output: u32,
    /// Names of the prompt's full blocks (none without prefix caching).
    hashes: Vec<u64>,
    /// First step the request may join (async scheduling plans one step ahead).
    ready_at: u64,
    generated: u32,
    computed: u32,
    /// Blocks of its own, not in the cache.
    own_blocks: u32,
    /// Leading blocks held in the prefix cache (`hashes[..held]`).
    held: u32,
    scheduled: u32,
}

impl Seq {
    fn remaining(&self) -> u32 {
        self.prompt + self.generated - self.computed
    }

    fn extra_blocks(&self, tokens: u32, block_size: u32) -> u32 {
        (self.computed + tokens)
            .div_ceil(block_size)
            .saturating_sub(self.own_blocks + self.held)
    }

    fn held_hashes(&self) -> &[u64] {
        &self.hashes[..self.held as usize]
    }
}

/// The scheduler state of one engine.
#[derive(Debug)]
pub struct Scheduler {
    max_num_seqs: usize,
    budget: u32,
    max_prefill_seqs: u32,
    block_size: u32,
    chunked: bool,
    prefix_caching: bool,
    scheduling: Scheduling,
    total_blocks: u32,
    /// Blocks no request holds, idle cached blocks included.
    free_blocks: u32,
    watermark_blocks: u32,
    cache: PrefixCache,
    prefix: PrefixCounters,
    running: Vec<Seq>,
    waiting: VecDeque<Seq>,
    preemptions: u64,
    /// Steps planned so far.
    steps: u64,
    /// Steps already planned when a request arrives (1 with async scheduling).
    lookahead: u64,
}

impl Scheduler {
    /// An empty scheduler for `cfg` with a cache of `kv` blocks.
    pub fn new(cfg: &EngineConfig, kv: &KvCapacity) -> Scheduler {
        Scheduler {
            max_num_seqs: cfg.max_num_seqs as usize,
            budget: cfg.max_num_batched_tokens,
            max_prefill_seqs: cfg.max_prefill_seqs,
            block_size: cfg.block_size,
            chunked: cfg.chunked_prefill,
            prefix_caching: cfg.prefix_caching,
            scheduling: cfg.scheduling,
            total_blocks: kv.blocks,
            free_blocks: kv.blocks,
            watermark_blocks: match cfg.scheduling {
                Scheduling::PrefillFirst => kv.blocks / 100,
                Scheduling::Mixed => 0,
            },
            cache: PrefixCache::default(),
            prefix: PrefixCounters::default(),
            running: Vec::new(),
            waiting: VecDeque::new(),
            preemptions: 0,
            steps: 0,
            lookahead: u64::from(cfg.engine.async_scheduling),
        }
    }

    /// Queue a request of `prompt` tokens made of `content` that will generate `output`
    /// tokens (at least one).
    pub fn add(&mut self, id: u64, prompt: u32, output: u32, content: &Content) {
        let prompt = prompt.max(1);
        let hashes = match self.prefix_caching {
            true => content.block_hashes(prompt, self.block_size),
            false => Vec::new(),
        };
        self.waiting.push_back(Seq {
            id,
            prompt,
            output: output.max(1),
            hashes,
            ready_at: self.steps + self.lookahead,
            generated: 0,
            computed: 0,
            own_blocks: 0,
            held: 0,
            scheduled: 0,
        });
    }

    /// Drop a request (client gone); returns whether it was there.
    pub(crate) fn abort(&mut self, id: u64) -> bool {
        if let Some(i) = self.running.iter().position(|s| s.id == id) {
            let mut seq = self.running.remove(i);
            self.release(&mut seq);
            return true;
        }
        match self.waiting.iter().position(|s| s.id == id) {
            Some(i) => {
                self.waiting.remove(i);
                true
            }
            None => false,
        }
    }

    /// True when no request is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty()
    }

    /// Current gauges.
    pub(crate) fn gauges(&self) -> Gauges {
        Gauges {
            running: self.running.len(),
            waiting: self.waiting.len(),
            kv_usage: f64::from(self.total_blocks - self.free_blocks)
                / f64::from(self.total_blocks),
            preemptions: self.preemptions,
        }
    }

    /// The prefix cache's counters so far.
    pub(crate) fn prefix_counters(&self) -> PrefixCounters {
        self.prefix
    }

    /// Plan the next step; requests that can never be scheduled are rejected into `events`.
    /// Returns `None` when there is nothing to run.
    pub fn plan(&mut self, events: &mut Vec<Event>) -> Option<StepShape> {
        loop {
            if self.is_idle() {
                return None;
            }
            let preemptions = self.preemptions;
            let shape = match self.scheduling {
                Scheduling::Mixed => self.plan_mixed(),
                Scheduling::PrefillFirst => self.plan_prefill_first(),
            };
            if shape.seqs > 0 {
                self.steps += 1;
                return Some(shape);
            }
            // Nothing fits although nothing was freed: the head of the queue never will.
            if self.preemptions == preemptions && !self.reject_head(events) {
                return None;
            }
        }
    }

    /// Decodes and running prefill chunks first, then new prompts in the leftover budget.
    fn plan_mixed(&mut self) -> StepShape {
        let mut budget = self.budget;
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let need = self.running[i].remaining();
            let n = if self.chunked { need.min(budget) } else { need };
            if n > budget {
                i += 1;
                continue;
            }
            preempted |= self.reserve_running(i, n);
            if i < self.running.len() {
                budget -= n;
                i += 1;
            }
        }
        if !preempted {
            self.admit(&mut budget, self.max_num_seqs, 0);
        }
        self.shape()
    }

    /// A step of whole new prompts when any can be admitted, else a decode step for all.
    fn plan_prefill_first(&mut self) -> StepShape {
        let mut budget = self.budget;
        let before = self.running.len();
        self.admit(
            &mut budget,
            self.max_prefill_seqs as usize,
            self.watermark_blocks,
        );
        if self.running.len() > before {
            return self.shape();
        }
        let mut i = 0;
        while i < self.running.len() {
            self.reserve_running(i, 1);
            i += 1;
        }
        self.shape()
    }

    /// Reserve blocks for `n` tokens of running sequence `i`, preempting from the back of the
    /// batch when the cache is full. Returns whether anything was preempted.
    fn reserve_running(&mut self, i: usize, n: u32) -> bool {
        let mut preempted = false;
        loop {
            let extra = self.running[i].extra_blocks(n, self.block_size);
            if extra <= self.free_blocks {
                self.take_free(extra);
                self.running[i].own_blocks += extra;
                self.running[i].scheduled = n;
                return preempted;
            }
            let victim = self.running.len() - 1;
            self.preempt(victim);
            preempted = true;
            if victim == i {
                return true;
            }
        }
    }

    fn preempt(&mut self, index: usize) {
        let mut seq = self.running.remove(index);
        self.release(&mut seq);
        seq.computed = 0;
        seq.scheduled = 0;
        self.preemptions += 1;
        self.waiting.push_front(seq);
    }

    /// Move waiting requests into the batch while the budget, the batch size and the free
    /// blocks (above `reserve`) allow; whole prompts unless chunked prefill is on.
    fn admit(&mut self, budget: &mut u32, max_new: usize, reserve: u32) {
        let mut admitted = 0;
        while *budget > 0 && self.running.len() < self.max_num_seqs && admitted < max_new {
            let Some(seq) = self.waiting.front_mut() else {
                break;
            };
            // Arrivals wait for the steps already planned (none when the engine is idle).
            if seq.ready_at > self.steps && !self.running.is_empty() {
                break;
            }
            // The last token is always computed, so at most the blocks before it are hits.
            let tokens = seq.prompt + seq.generated;
            let usable = ((tokens - 1) / self.block_size).min(seq.hashes.len() as u32);
            let (hit_blocks, idle_hits) = self.cache.lookup(&seq.hashes[..usable as usize]);
            let hit = hit_blocks * self.block_size;
            let need = tokens - hit;
            let n = if self.chunked {
                need.min(*budget)
            } else {
                need
            };
            let extra = (hit + n).div_ceil(self.block_size) - hit_blocks;
            if n > *budget || extra + idle_hits + reserve > self.free_blocks {
                break;
            }
            for hash in &seq.hashes[..hit_blocks as usize] {
                let was_idle = self.cache.acquire(*hash).expect("looked up");
                self.free_blocks -= u32::from(was_idle);
            }
            self.prefix.queries += u64::from(seq.prompt);
            self.prefix.hits += u64::from(hit.min(seq.prompt));
            seq.computed = hit;
            seq.held = hit_blocks;
            seq.own_blocks = extra;
            seq.scheduled = n;
            self.take_free(extra);
            *budget -= n;
            admitted += 1;
            let seq = self.waiting.pop_front().expect("front exists");
            self.running.push(seq);
        }
    }

    /// Takes `n` free blocks, evicting idle cached blocks when no empty ones are left.
    fn take_free(&mut self, n: u32) {
        self.free_blocks -= n;
        self.cache.evict_to(self.free_blocks);
    }

    /// Gives back every block `seq` holds; its cached blocks stay cached, idle.
    fn release(&mut self, seq: &mut Seq) {
        self.free_blocks += seq.own_blocks + self.cache.release(seq.held_hashes());
        seq.own_blocks = 0;
        seq.held = 0;
    }

    /// Puts the blocks `seq` has filled since its last step into the cache (sharing a block
    /// another request filled meanwhile, and freeing its own copy).
    fn cache_filled(&mut self, i: usize) {
        let seq = &mut self.running[i];
        let filled = (seq.computed / self.block_size).min(seq.hashes.len() as u32);
        while seq.held < filled {
            let hash = seq.hashes[seq.held as usize];
            match self.cache.acquire(hash) {
                Some(was_idle) => {
                    self.free_blocks = self.free_blocks + 1 - u32::from(was_idle);
                }
                None => self.cache.insert(hash),
            }
            seq.own_blocks -= 1;
            seq.held += 1;
        }
    }

    fn reject_head(&mut self, events: &mut Vec<Event>) -> bool {
        let Some(seq) = self.waiting.pop_front() else {
            return false;
        };
        let blocks = (seq.prompt + seq.generated).div_ceil(self.block_size);
        events.push(Event::Rejected {
            id: seq.id,
            reason: format!(
                "Input prompt ({} tokens) needs {blocks} KV-cache blocks but the cache has \
                 {} free of {}",
                seq.prompt, self.free_blocks, self.total_blocks
            ),
        });
        true
    }

    fn shape(&self) -> StepShape {
        let mut shape = StepShape::default();
        for seq in self.running.iter().filter(|s| s.scheduled > 0) {
            let n = seq.scheduled;
            let end = f64::from(seq.computed + n);
            shape.seqs += 1;
            shape.tokens += n;
            if seq.remaining() == 1 && seq.generated > 0 {
                shape.decode_context += end;
            } else {
                shape.prefill_context += end;
                shape.prefill_attention +=
                    f64::from(n) * (f64::from(seq.computed) + f64::from(n) / 2.0);
            }
        }
        shape
    }

    /// Apply the planned step: advance computed tokens, emit tokens, retire finished requests.
    pub(crate) fn commit(&mut self, events: &mut Vec<Event>) {
        let mut i = 0;
        while i < self.running.len() {
            if self.running[i].scheduled == 0 {
                i += 1;
                continue;
            }
            let seq = &mut self.running[i];
            seq.computed += seq.scheduled;
            seq.scheduled = 0;
            self.cache_filled(i);
            let seq = &mut self.running[i];
            if seq.computed < seq.prompt + seq.generated {
                i += 1;
                continue;
            }
            seq.generated += 1;
            events.push(Event::Token {
                id: seq.id,
                first: seq.generated == 1,
            });
            if seq.generated >= seq.output {
                events.push(Event::Finished { id: seq.id });
                let mut seq = self.running.remove(i);
                self.release(&mut seq);
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::cache::Segment;
    use crate::sim::config::Deployment;

    /// A vLLM scheduler (16-token blocks) with a cache of `blocks` blocks.
    fn scheduler(blocks: u32) -> Scheduler {
        let d = Deployment::vllm("H100", "Qwen2.5-0.5B", 1);
        let cfg = EngineConfig::resolve(&d, &Default::default()).unwrap();
        let kv = KvCapacity {
            blocks,
            tokens: u64::from(blocks) * 16,
            gib_per_card: 1.0,
        };
        Scheduler::new(&cfg, &kv)
    }

    /// Runs one request of a 3000-token document and 100 tokens of its own to the end;
    /// returns the prompt tokens it found cached.
    fn read(s: &mut Scheduler, id: u64, document: u64) -> u64 {
        let before = s.prefix_counters().hits;
        let doc = Content::new(vec![Segment::named(2, document, 3000)]);
        s.add(id, 3100, 2, &doc);
        let mut events = Vec::new();
        while s.plan(&mut events).is_some() {
            s.commit(&mut events);
        }
        assert!(events.contains(&Event::Finished { id }), "{events:?}");
        s.prefix_counters().hits - before
    }

    #[test]
    fn a_full_cache_evicts_the_least_recently_used_blocks_tail_first() {
        // 450 blocks: a request takes 194, a document's 187 full blocks stay cached after it.
        let mut s = scheduler(450);
        let hits: Vec<u64> = [0, 1, 0, 2, 0, 1]
            .iter()
            .enumerate()
            .map(|(id, doc)| read(&mut s, id as u64, *doc))
            .collect();
        // Documents 0 and 1 are computed, 0 is found again; 2 needs room, which comes from
        // the least recently used document (1), its tail first: 374 idle blocks must come
        // down to the 256 left free, so 118 of document 1's blocks go and 69 stay.
        assert_eq!(hits, [0, 0, 187 * 16, 0, 187 * 16, 69 * 16]);
        assert_eq!(s.gauges().kv_usage, 0.0);
    }

    #[test]
    fn without_prefix_caching_nothing_is_found() {
        let mut s = scheduler(450);
        s.prefix_caching = false;
        assert_eq!(read(&mut s, 0, 0) + read(&mut s, 1, 0), 0);
    }
}
