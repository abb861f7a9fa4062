//! Service-level objectives written as `metric[:stat]<=threshold`, e.g. `ttft:p99<=2s`,
//! `tpot:p99<=50ms`, `error_rate<=1%`, `output_throughput>=500`.

use super::Latency;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Comparison of an SLO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SloOp {
    /// `<=`
    Le,
    /// `>=`
    Ge,
}

/// One SLO. Latency thresholds are stored in milliseconds, rates as fractions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Slo {
    /// `ttft`, `tpot`, `itl`, `e2el` (ms), `error_rate` (fraction) or any metric name.
    pub metric: String,
    /// `p50`, `p90`, `p95`, `p99`, `mean`, `median`, `max`; `None` for whole-run metrics.
    pub stat: Option<String>,
    /// Comparison.
    pub op: SloOp,
    /// Threshold: milliseconds for latencies, a fraction for `error_rate`, else as written.
    pub threshold: f64,
}

const STATS: [&str; 8] = ["mean", "median", "min", "max", "p50", "p90", "p95", "p99"];

impl Slo {
    /// The latency this SLO bounds, if its metric is one.
    pub fn latency(&self) -> Option<Latency> {
        Latency::from_name(&self.metric)
    }

    /// True for latency metrics (thresholds in ms).
    pub(crate) fn is_latency(&self) -> bool {
        self.latency().is_some()
    }

    /// The summary metric this SLO reads, e.g. `p99_ttft_ms`, `error_rate`.
    pub(crate) fn metric_key(&self) -> String {
        match (&self.stat, self.latency()) {
            (Some(stat), Some(latency)) => latency.key(stat),
            (Some(stat), None) => format!("{stat}_{}", self.metric),
            (None, _) => self.metric.clone(),
        }
    }

    /// The log-ratio by which `value` misses this SLO (0 when it holds), linear where a side
    /// is not positive.
    pub(crate) fn miss(&self, value: f64) -> f64 {
        let (over, under) = match self.op {
            SloOp::Le => (value, self.threshold),
            SloOp::Ge => (self.threshold, value),
        };
        if over <= under {
            return 0.0;
        }
        if over > 0.0 && under > 0.0 {
            (over / under).ln()
        } else {
            (over - under) / under.abs().max(over.abs()).max(f64::MIN_POSITIVE)
        }
    }

    /// `value` (in the metric's unit) written in the unit this SLO is written in.
    pub(crate) fn format_value(&self, value: f64) -> String {
        if self.is_latency() {
            format!("{}ms", round_sig(value))
        } else if self.metric == super::metric::ERROR_RATE {
            format!("{}%", round_sig(value * 100.0))
        } else {
            round_sig(value).to_string()
        }
    }

    /// Whether `value` (in the metric's unit) meets the SLO.
    pub fn holds(&self, value: f64) -> bool {
        match self.op {
            SloOp::Le => value <= self.threshold,
            SloOp::Ge => value >= self.threshold,
        }
    }
}

/// A malformed SLO string.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("invalid SLO `{text}`: {why} (expected e.g. `ttft:p99<=2s`, `tpot:p99<=50ms`, `error_rate<=1%`)")]
pub struct SloParseError {
    text: String,
    why: String,
}

impl FromStr for Slo {
    type Err = SloParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |why: &str| SloParseError {
            text: text.to_string(),
            why: why.to_string(),
        };
        let compact: String = text.split_whitespace().collect();
        let (lhs, op, rhs) = if let Some((l, r)) = compact.split_once("<=") {
            (l, SloOp::Le, r)
        } else if let Some((l, r)) = compact.split_once(">=") {
            (l, SloOp::Ge, r)
        } else {
            return Err(fail("no `<=` or `>=`"));
        };
        let (metric, stat) = match lhs.split_once(':') {
            Some((m, s)) => (m, Some(s)),
            None => (lhs, None),
        };
        if metric.is_empty() {
            return Err(fail("missing metric name"));
        }
        if let Some(s) = stat {
            if !STATS.contains(&s) {
                return Err(fail(&format!(
                    "unknown statistic `{s}` (use one of {})",
                    STATS.join(", ")
                )));
            }
        }
        let is_latency = Latency::from_name(metric).is_some();
        if is_latency && stat.is_none() {
            return Err(fail("a latency SLO needs a statistic, e.g. `ttft:p99`"));
        }
        let threshold = if is_latency {
            parse_millis(rhs)
                .ok_or_else(|| fail("threshold must be a duration like `2s` or `50ms`"))?
        } else if let Some(pct) = rhs.strip_suffix('%') {
            pct.parse::<f64>().map_err(|_| fail("bad percentage"))? / 100.0
        } else {
            rhs.parse::<f64>()
                .map_err(|_| fail("threshold must be a number"))?
        };
        Ok(Slo {
            metric: metric.to_string(),
            stat: stat.map(str::to_string),
            op,
            threshold,
        })
    }
}

fn round_sig(v: f64) -> f64 {
    if v.abs() >= 100.0 {
        v.round()
    } else {
        (v * 100.0).round() / 100.0
    }
}

fn parse_millis(text: &str) -> Option<f64> {
    if let Ok(d) = humantime::parse_duration(text) {
        return Some(d.as_secs_f64() * 1000.0);
    }
    // humantime takes no fractions ("1.5s"); accept them for s and ms.
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse().ok();
    }
    text.strip_suffix('s')
        .and_then(|s| s.parse::<f64>().ok())
        .map(|s| s * 1000.0)
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.metric)?;
        if let Some(stat) = &self.stat {
            write!(f, ":{stat}")?;
        }
        f.write_str(match self.op {
            SloOp::Le => "<=",
            SloOp::Ge => ">=",
        })?;
        if self.is_latency() {
            write!(f, "{}ms", self.threshold)
        } else if self.metric == super::metric::ERROR_RATE {
            write!(f, "{}%", self.threshold * 100.0)
        } else {
            write!(f, "{}", self.threshold)
        }
    }
}

impl TryFrom<String> for Slo {
    type Error = SloParseError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Slo> for String {
    fn from(s: Slo) -> String {
        s.to_string()
    }
}

/// Parse a comma-separated SLO list, e.g. `ttft:p99<=2s,tpot:p99<=50ms`.
pub fn parse_list(text: &str) -> Result<Vec<Slo>, SloParseError> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(str::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_latency_and_rate_slos() {
        let v = parse_list("ttft:p99<=2s, tpot:p99<=50ms,e2el:p99<=1.5s,error_rate<=1%").unwrap();
        assert_eq!(v[0].metric_key(), "p99_ttft_ms");
        assert_eq!(v[0].threshold, 2000.0);
        assert_eq!(v[1].threshold, 50.0);
        assert_eq!(v[2].threshold, 1500.0);
        assert_eq!(v[3].metric_key(), "error_rate");
        assert!((v[3].threshold - 0.01).abs() < 1e-12);
        assert!(v[0].holds(1999.0) && !v[0].holds(2001.0));
    }

    #[test]
    fn ge_and_round_trip() {
        let s: Slo = "output_throughput>=500".parse().unwrap();
        assert_eq!(s.op, SloOp::Ge);
        assert!(s.holds(600.0) && !s.holds(400.0));
        let back: Slo = s.to_string().parse().unwrap();
        assert_eq!(back, s);
        let t: Slo = "ttft:p99<=2s".parse().unwrap();
        assert_eq!(t.to_string().parse::<Slo>().unwrap(), t);
    }

    #[test]
    fn rejects_bad_input_with_a_hint() {
        for bad in [
            "ttft<=2s",
            "ttft:p42<=2s",
            "ttft:p99=2s",
            "ttft:p99<=fast",
            ":p99<=1",
        ] {
            let e = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(e.contains("expected e.g."), "{bad}: {e}");
        }
    }
}
