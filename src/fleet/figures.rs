//! What a plan delivers, as a deployment is chosen by: output tokens/s in all and per GPU,
//! tokens/s each user sees, p99 TTFT; whether it meets the SLOs; and how plans rank.

use crate::record::{MetricMap, Params};
use std::cmp::Ordering;

/// A deployment: `replicas` servers, each over `tp` GPUs with tensor parallelism, each launched
/// with `knobs` (the engine's scheduler parameters, tensor-parallel size excluded).
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Tensor-parallel size of each server.
    pub tp: u32,
    /// Servers, each on its own `tp` GPUs, the load split evenly across them.
    pub replicas: u32,
    /// Each server's parameters (names of the space).
    pub knobs: Params,
}

impl Shape {
    /// GPUs the plan uses.
    pub fn gpus(&self) -> u32 {
        self.tp * self.replicas
    }
}

/// What a plan must meet; `None` bounds nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Slos {
    /// Upper bound of the p99 time to first token, ms.
    pub ttft_p99_ms: Option<f64>,
    /// Lower bound of the tokens/s each user sees (1000 / mean TPOT).
    pub min_user_tokens_per_s: Option<f64>,
}

/// The figures of a plan, from the metrics of one of its servers under its share of the load.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// Output tokens/s of all replicas together.
    pub output_tokens_per_s: f64,
    /// The same per GPU.
    pub per_gpu: f64,
    /// Tokens/s a user sees: 1000 / mean TPOT (ms).
    pub per_user: f64,
    /// p99 TTFT of a server, ms.
    pub ttft_p99_ms: f64,
    /// Share of requests that failed.
    pub error_rate: f64,
    /// One server's metrics, as the probe names them.
    pub replica: MetricMap,
}

impl Figures {
    /// The figures of `replicas` servers of `tp` GPUs, each measuring `metrics`.
    pub fn of(metrics: MetricMap, tp: u32, replicas: u32) -> Figures {
        let get = |name: &str| metrics.get(name).copied().unwrap_or(0.0);
        let total = get("output_throughput") * f64::from(replicas);
        let tpot = get("mean_tpot_ms");
        Figures {
            output_tokens_per_s: total,
            per_gpu: total / f64::from((tp * replicas).max(1)),
            per_user: if tpot > 0.0 { 1000.0 / tpot } else { 0.0 },
            ttft_p99_ms: get("p99_ttft_ms"),
            error_rate: get("error_rate"),
            replica: metrics,
        }
    }

    /// The SLOs these figures break, each as `what measured > bound`; empty when all are met.
    pub fn broken(&self, slos: &Slos) -> Vec<String> {
        let mut broken = Vec::new();
        if self.error_rate > 0.0 {
            broken.push(format!(
                "{:.1}% of requests failed",
                self.error_rate * 100.0
            ));
        }
        if let Some(bound) = slos.ttft_p99_ms.filter(|b| self.ttft_p99_ms > *b) {
            broken.push(format!("p99 TTFT {:.0} ms > {bound} ms", self.ttft_p99_ms));
        }
        if let Some(bound) = slos.min_user_tokens_per_s.filter(|b| self.per_user < *b) {
            broken.push(format!("{:.1} tokens/s per user < {bound}", self.per_user));
        }
        broken
    }
}

/// How plans are ranked. Whatever the ranking, a plan that meets the SLOs comes before one that
/// does not, and a plan the twin could not serve comes last.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ranking {
    /// Most output tokens/s per GPU first.
    GoodputPerGpu,
    /// Fewest GPUs first (the GPUs the load needs), then most tokens/s per GPU.
    FewestGpus,
    /// Lowest cost per million output tokens first at this price of a GPU-hour.
    CostPerMillion {
        /// Price of one GPU for an hour.
        per_gpu_hour: f64,
    },
}

/// A shape with what the twin (or a run) says of it.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The deployment.
    pub shape: Shape,
    /// Its figures, or why it could not serve (the engine's start-up failure).
    pub figures: Result<Figures, String>,
    /// The SLOs it breaks (empty when it meets them all or did not serve).
    pub broken: Vec<String>,
}

impl Plan {
    /// A plan of `shape` with `figures`, judged against `slos`.
    pub fn judged(shape: Shape, figures: Result<Figures, String>, slos: &Slos) -> Plan {
        let broken = match &figures {
            Ok(f) => f.broken(slos),
            Err(_) => Vec::new(),
        };
        Plan {
            shape,
            figures,
            broken,
        }
    }

    /// Whether it served and met every SLO.
    pub fn meets(&self) -> bool {
        self.figures.is_ok() && self.broken.is_empty()
    }

    /// Cost of a million output tokens at `per_gpu_hour` per GPU-hour; `None` when it did not
    /// serve or produced nothing.
    pub fn cost_per_million(&self, per_gpu_hour: f64) -> Option<f64> {
        let f = self.figures.as_ref().ok().filter(|f| f.per_gpu > 0.0)?;
        Some(per_gpu_hour / (f.per_gpu * 3600.0) * 1e6)
    }

    /// 0: meets the SLOs, 1: served but breaks one, 2: did not serve.
    fn group(&self) -> u8 {
        match (&self.figures, self.broken.is_empty()) {
            (Ok(_), true) => 0,
            (Ok(_), false) => 1,
            (Err(_), _) => 2,
        }
    }
}

/// Sort `plans` best first by `ranking`.
pub fn rank(plans: &mut [Plan], ranking: Ranking) {
    plans.sort_by(|a, b| compare(a, b, ranking));
}

/// How `a` ranks against `b` by `ranking` (`Less`: `a` is better).
pub(crate) fn compare(a: &Plan, b: &Plan, ranking: Ranking) -> Ordering {
    let per_gpu = |p: &Plan| p.figures.as_ref().map_or(0.0, |f| f.per_gpu);
    let by_per_gpu = per_gpu(b).total_cmp(&per_gpu(a));
    a.group().cmp(&b.group()).then_with(|| match ranking {
        Ranking::FewestGpus => a.shape.gpus().cmp(&b.shape.gpus()).then(by_per_gpu),
        Ranking::GoodputPerGpu => by_per_gpu,
        Ranking::CostPerMillion { per_gpu_hour } => {
            let cost = |p: &Plan| p.cost_per_million(per_gpu_hour).unwrap_or(f64::INFINITY);
            cost(a).total_cmp(&cost(b))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(tp: u32, replicas: u32, tokens: f64, tpot: f64, ttft_p99: f64, slos: &Slos) -> Plan {
        let metrics: MetricMap = [
            ("output_throughput".to_string(), tokens),
            ("mean_tpot_ms".to_string(), tpot),
            ("p99_ttft_ms".to_string(), ttft_p99),
        ]
        .into();
        let shape = Shape {
            tp,
            replicas,
            knobs: Params::new(),
        };
        Plan::judged(shape, Ok(Figures::of(metrics, tp, replicas)), slos)
    }

    #[test]
    fn a_plan_meeting_the_slos_beats_one_that_does_not_whatever_its_throughput() {
        let slos = Slos {
            ttft_p99_ms: Some(1000.0),
            min_user_tokens_per_s: Some(20.0),
        };
        // Ten times the tokens per GPU, but users see 1000/80 = 12.5 tokens/s.
        let fast = plan(1, 1, 10_000.0, 80.0, 500.0, &slos);
        let slow_ttft = plan(1, 1, 20_000.0, 10.0, 5000.0, &slos);
        let meets = plan(1, 1, 1_000.0, 20.0, 900.0, &slos);
        let failed = Plan::judged(
            Shape {
                tp: 1,
                replicas: 1,
                knobs: Params::new(),
            },
            Err("out of memory".into()),
            &slos,
        );
        assert!(meets.meets() && !fast.meets() && !slow_ttft.meets());
        assert_eq!(fast.broken, ["12.5 tokens/s per user < 20"]);
        assert_eq!(slow_ttft.broken, ["p99 TTFT 5000 ms > 1000 ms"]);
        let rankings = [
            Ranking::GoodputPerGpu,
            Ranking::FewestGpus,
            Ranking::CostPerMillion { per_gpu_hour: 2.0 },
        ];
        for ranking in rankings {
            let mut plans = vec![
                failed.clone(),
                fast.clone(),
                slow_ttft.clone(),
                meets.clone(),
            ];
            rank(&mut plans, ranking);
            let order: Vec<f64> = plans
                .iter()
                .map(|p| p.figures.as_ref().map_or(-1.0, |f| f.output_tokens_per_s))
                .collect();
            assert_eq!(order, [1_000.0, 20_000.0, 10_000.0, -1.0], "{ranking:?}");
        }
    }

    #[test]
    fn the_rankings_order_meeting_plans_by_their_own_measure() {
        let slos = Slos::default();
        // 2 x tp2: 4 GPUs, 1500 tokens/s per GPU; 1 x tp4: 4 GPUs, 1000; 1 x tp2: 2 GPUs, 1200.
        let two_by_two = plan(2, 2, 3000.0, 20.0, 100.0, &slos);
        let one_by_four = plan(4, 1, 4000.0, 20.0, 100.0, &slos);
        let one_by_two = plan(2, 1, 2400.0, 20.0, 100.0, &slos);
        let gpus = |plans: &[Plan]| -> Vec<(u32, u32)> {
            plans
                .iter()
                .map(|p| (p.shape.tp, p.shape.replicas))
                .collect()
        };
        let mut plans = vec![one_by_four.clone(), one_by_two.clone(), two_by_two.clone()];
        rank(&mut plans, Ranking::GoodputPerGpu);
        assert_eq!(gpus(&plans), [(2, 2), (2, 1), (4, 1)]);
        rank(&mut plans, Ranking::FewestGpus);
        assert_eq!(gpus(&plans), [(2, 1), (2, 2), (4, 1)]);
        rank(&mut plans, Ranking::CostPerMillion { per_gpu_hour: 3.6 });
        assert_eq!(gpus(&plans), [(2, 2), (2, 1), (4, 1)]);
        // 3.6 per GPU-hour at 1500 tokens/s per GPU: 3.6 / (1500 x 3600) x 1e6.
        let cost = plans[0].cost_per_million(3.6).unwrap();
        assert!((cost - 0.6667).abs() < 1e-3, "{cost}");
    }
}
