//! Continuous-batching scheduler: which sequences run in each step, under `max_num_seqs`, the
//! token budget and the KV-cache blocks; preemption with recompute; a shared-prefix cache.

use super::config::EngineConfig;
use super::cost::StepShape;
use super::memory::KvCapacity;
use super::profiles::Scheduling;
use std::collections::{HashMap, VecDeque};

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

/// The leading prompt tokens a request shares with others of its group (a system prompt).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedPrefix {
    /// Shared tokens at the start of the prompt.
    pub tokens: u32,
    /// Requests of the same group share the same prefix.
    pub group: u32,
}

#[derive(Debug)]
struct Seq {
    id: u64,
    prompt: u32,
    output: u32,
    prefix: SharedPrefix,
    /// First step the request may join (async scheduling plans one step ahead).
    ready_at: u64,
    generated: u32,
    computed: u32,
    own_blocks: u32,
    shared_blocks: u32,
    scheduled: u32,
}

impl Seq {
    fn remaining(&self) -> u32 {
        self.prompt + self.generated - self.computed
    }

    fn extra_blocks(&self, tokens: u32, block_size: u32) -> u32 {
        (self.computed + tokens)
            .div_ceil(block_size)
            .saturating_sub(self.own_blocks + self.shared_blocks)
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
    free_blocks: u32,
    watermark_blocks: u32,
    /// Blocks of each group's prefix held in the cache.
    cached_prefix_blocks: HashMap<u32, u32>,
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
            cached_prefix_blocks: HashMap::new(),
            running: Vec::new(),
            waiting: VecDeque::new(),
            preemptions: 0,
            steps: 0,
            lookahead: u64::from(cfg.engine.async_scheduling),
        }
    }

    /// Queue a request of `prompt` tokens (the first `prefix.tokens` shared with its group) that
    /// will generate `output` tokens (at least one).
    pub fn add(&mut self, id: u64, prompt: u32, output: u32, prefix: SharedPrefix) {
        self.waiting.push_back(Seq {
            id,
            prompt: prompt.max(1),
            output: output.max(1),
            prefix: SharedPrefix {
                tokens: prefix.tokens.min(prompt),
                group: prefix.group,
            },
            ready_at: self.steps + self.lookahead,
            generated: 0,
            computed: 0,
            own_blocks: 0,
            shared_blocks: 0,
            scheduled: 0,
        });
    }

    /// Drop a request (client gone); returns whether it was there.
    pub(crate) fn abort(&mut self, id: u64) -> bool {
        if let Some(i) = self.running.iter().position(|s| s.id == id) {
            let seq = self.running.remove(i);
            self.free_blocks += seq.own_blocks;
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
                self.free_blocks -= extra;
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
        self.free_blocks += seq.own_blocks;
        seq.own_blocks = 0;
        seq.shared_blocks = 0;
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
            let cached = (self.cached_prefix_blocks.get(&seq.prefix.group))
                .copied()
                .unwrap_or(0);
            let hit_blocks = if self.prefix_caching && seq.prefix.tokens >= cached * self.block_size
            {
                cached.min((seq.prompt + seq.generated - 1) / self.block_size)
            } else {
                0
            };
            let hit = hit_blocks * self.block_size;
            let need = seq.prompt + seq.generated - hit;
            let n = if self.chunked {
                need.min(*budget)
            } else {
                need
            };
            let extra = (hit + n).div_ceil(self.block_size) - hit_blocks;
            if n > *budget || extra + reserve > self.free_blocks {
                break;
            }
            seq.computed = hit;
            seq.shared_blocks = hit_blocks;
            seq.own_blocks = extra;
            seq.scheduled = n;
            self.free_blocks -= extra;
            *budget -= n;
            admitted += 1;
            let seq = self.waiting.pop_front().expect("front exists");
            self.running.push(seq);
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
            let seq = &mut self.running[i];
            if seq.scheduled == 0 {
                i += 1;
                continue;
            }
            seq.computed += seq.scheduled;
            seq.scheduled = 0;
            if self.prefix_caching && !self.cached_prefix_blocks.contains_key(&seq.prefix.group) {
                let blocks = seq.prefix.tokens / self.block_size;
                if blocks > 0 && seq.computed >= blocks * self.block_size {
                    self.cached_prefix_blocks.insert(seq.prefix.group, blocks);
                    seq.own_blocks -= blocks;
                    seq.shared_blocks = blocks;
                }
            }
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
                self.free_blocks += seq.own_blocks;
                self.running.remove(i);
            } else {
                i += 1;
            }
        }
    }
}
