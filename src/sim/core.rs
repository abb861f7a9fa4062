//! The simulated engine: configuration checks, memory, scheduler and step costs with seeded
//! noise. Both `sim eval` (virtual time) and `sim serve` (real time) drive this one core.

use super::cache::Content;
use super::config::{Deployment, EngineConfig, SimFailure};
use super::cost::CostModel;
use super::memory::{self, KvCapacity};
use super::power::PowerModel;
use super::scheduler::{Event, Gauges, PrefixCounters, Scheduler};
use crate::record::Params;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// Run-to-run spread of the whole run's speed (relative standard deviation).
const RUN_NOISE: f64 = 0.02;
/// Step-to-step jitter (relative standard deviation).
const STEP_NOISE: f64 = 0.03;

/// A started engine.
pub(crate) struct SimEngine {
    config: EngineConfig,
    kv: KvCapacity,
    scheduler: Scheduler,
    cost: CostModel,
    rng: ChaCha8Rng,
    run_factor: f64,
    step_noise: Normal<f64>,
    power: PowerModel,
    busy_energy_j: f64,
}

impl SimEngine {
    /// Start the engine for `deployment` with `params`, or fail as the engine would at start.
    pub fn start(
        deployment: &Deployment,
        params: &Params,
        seed: u64,
    ) -> Result<SimEngine, SimFailure> {
        let config = EngineConfig::resolve(deployment, params)?;
        let kv = memory::kv_capacity(&config)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let run_noise = Normal::new(1.0, RUN_NOISE).expect("constant deviation is valid");
        let run_factor = run_noise.sample(&mut rng).clamp(0.9, 1.1);
        let power = PowerModel::of(&config);
        Ok(SimEngine {
            scheduler: Scheduler::new(&config, &kv),
            cost: CostModel::new(&config),
            kv,
            config,
            rng,
            run_factor,
            step_noise: Normal::new(1.0, STEP_NOISE).expect("constant deviation is valid"),
            power,
            busy_energy_j: 0.0,
        })
    }

    /// The resolved configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The KV cache the engine allocated.
    pub(crate) fn kv_capacity(&self) -> KvCapacity {
        self.kv
    }

    /// Modelled start-up seconds.
    pub(crate) fn startup_seconds(&self) -> f64 {
        memory::startup_seconds(&self.config)
    }

    /// Accept a request or refuse it as the engine's API does (HTTP 400 text).
    /// `content` names what the prompt is made of, so that prompts sharing content share
    /// cached blocks.
    pub fn add(
        &mut self,
        id: u64,
        prompt: u32,
        output: u32,
        content: &Content,
    ) -> Result<(), String> {
        let output = self.config.check_request(prompt, output)?;
        self.scheduler.add(id, prompt, output, content);
        Ok(())
    }

    /// Drop a request whose client went away.
    pub(crate) fn abort(&mut self, id: u64) -> bool {
        self.scheduler.abort(id)
    }

    /// True when nothing is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        self.scheduler.is_idle()
    }

    /// Joules the cards drew during steps so far (modelled time; idle time not included).
    pub(crate) fn busy_energy_j(&self) -> f64 {
        self.busy_energy_j
    }

    /// The cards' power model.
    pub(crate) fn power(&self) -> PowerModel {
        self.power
    }

    /// Scheduler gauges.
    pub(crate) fn gauges(&self) -> Gauges {
        self.scheduler.gauges()
    }

    /// The prefix cache's counters.
    pub(crate) fn prefix_counters(&self) -> PrefixCounters {
        self.scheduler.prefix_counters()
    }

    /// Run one step: returns its modelled duration in seconds, with the tokens it produced
    /// appended to `events` (they appear at the end of the step). `None` when idle; requests
    /// rejected while planning are still reported in `events`.
    pub fn step(&mut self, events: &mut Vec<Event>) -> Option<f64> {
        let shape = self.scheduler.plan(events)?;
        let jitter = self.step_noise.sample(&mut self.rng).clamp(0.85, 1.15);
        let seconds = self.cost.step_seconds(&shape) * self.run_factor * jitter;
        self.busy_energy_j += seconds * self.power.step_watts(shape.tokens);
        self.scheduler.commit(events);
        Some(seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Value;
    use crate::sim::cache::Segment;

    fn engine(params: &[(&str, Value)]) -> SimEngine {
        let d = Deployment::vllm("A100-80", "Qwen2.5-0.5B", 1);
        let p: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        SimEngine::start(&d, &p, 7).unwrap()
    }

    fn run_to_end(e: &mut SimEngine) -> (f64, Vec<Event>) {
        let mut all = Vec::new();
        let mut time = 0.0;
        while let Some(dt) = e.step(&mut all) {
            time += dt;
        }
        (time, all)
    }

    #[test]
    fn every_request_gets_its_tokens_then_finishes() {
        let mut e = engine(&[]);
        for id in 0..20 {
            e.add(id, 300, 50, &Content::default()).unwrap();
        }
        let (time, events) = run_to_end(&mut e);
        let tokens = events
            .iter()
            .filter(|x| matches!(x, Event::Token { .. }))
            .count();
        let firsts = events
            .iter()
            .filter(|x| matches!(x, Event::Token { first: true, .. }))
            .count();
        let done = events
            .iter()
            .filter(|x| matches!(x, Event::Finished { .. }))
            .count();
        assert_eq!((tokens, firsts, done), (1000, 20, 20));
        assert!(time > 0.1 && time < 10.0, "{time}");
        assert_eq!(e.gauges().kv_usage, 0.0);
    }

    #[test]
    fn too_long_requests_are_refused() {
        let mut e = engine(&[("max_model_len", Value::Int(1024))]);
        let err = e.add(1, 1000, 100, &Content::default()).unwrap_err();
        assert!(
            err.contains("maximum context length is 1024 tokens"),
            "{err}"
        );
    }

    #[test]
    fn a_small_cache_preempts_and_still_finishes() {
        let mut e = engine(&[
            ("gpu_memory_utilization", Value::Float(0.06)),
            ("max_model_len", Value::Int(4096)),
        ]);
        let capacity = e.kv_capacity().tokens;
        let n = capacity / 1000 + 8;
        for id in 0..n {
            e.add(id, 500, 500, &Content::default()).unwrap();
        }
        let (_, events) = run_to_end(&mut e);
        let done = events
            .iter()
            .filter(|x| matches!(x, Event::Finished { .. }))
            .count();
        assert_eq!(done as u64, n);
        assert!(e.gauges().preemptions > 0, "capacity {capacity}");
    }

    #[test]
    fn the_shared_prefix_is_computed_once() {
        let prefix = Content::new(vec![Segment::named(1, 0, 3800)]);
        let time_with = |caching: bool| {
            let mut e = engine(&[("enable_prefix_caching", Value::Bool(caching))]);
            for id in 0..64 {
                e.add(id, 4000, 4, &prefix).unwrap();
            }
            run_to_end(&mut e).0
        };
        assert!(time_with(true) < 0.6 * time_with(false));
        let mut e = engine(&[]);
        for id in 0..64 {
            e.add(id, 4000, 4, &prefix).unwrap();
        }
        run_to_end(&mut e);
        let c = e.prefix_counters();
        // The first request computes the 237 full blocks of the prefix, the others find them
        // (those admitted while it still computes them, part of them).
        assert_eq!(c.queries, 64 * 4000);
        assert!(c.hits > 60 * 3792 && c.hits <= 63 * 3792, "{c:?}");
        // Finished requests leave the prefix cached but idle: the cache counts as free.
        assert_eq!(e.gauges().kv_usage, 0.0);
    }
}
