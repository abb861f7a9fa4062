//! The per-request latency metrics, one list for the whole crate.

use std::fmt;

/// A per-request latency, in milliseconds. JSON and metric names use [`Latency::name`]
/// (`mean_ttft_ms`, `p99_tpot_ms`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Latency {
    /// Time to first token from the request write.
    Ttft,
    /// Time to first token from the request's scheduled send time.
    TtftQueued,
    /// Time per output token after the first.
    Tpot,
    /// Gaps between token-bearing events, pooled.
    Itl,
    /// End-to-end latency.
    E2el,
}

impl Latency {
    /// Every latency, in report order.
    pub(crate) const ALL: [Latency; 5] = [
        Latency::Ttft,
        Latency::TtftQueued,
        Latency::Tpot,
        Latency::Itl,
        Latency::E2el,
    ];

    /// The metric's name: `ttft`, `ttft_queued`, `tpot`, `itl`, `e2el`.
    pub fn name(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::TtftQueued => "ttft_queued",
            Latency::Tpot => "tpot",
            Latency::Itl => "itl",
            Latency::E2el => "e2el",
        }
    }

    /// The latency called `name`, if it is one.
    pub(crate) fn from_name(name: &str) -> Option<Latency> {
        Latency::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Whether a request contributes one value to this latency's statistics; `itl` pools every
    /// gap, so its sample count is not bounded by the number of requests.
    pub(crate) fn per_request(self) -> bool {
        self != Latency::Itl
    }

    /// The summary metric of `stat` over this latency, e.g. `p99_ttft_ms`.
    pub fn key(self, stat: &str) -> String {
        format!("{stat}_{}_ms", self.name())
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_keys_follow_vllm_bench() {
        for l in Latency::ALL {
            assert_eq!(Latency::from_name(l.name()), Some(l));
        }
        assert_eq!(Latency::from_name("error_rate"), None);
        assert_eq!(Latency::TtftQueued.key("p99"), "p99_ttft_queued_ms");
        assert!(Latency::E2el.per_request() && !Latency::Itl.per_request());
    }
}
