//! Summary metrics of a run, with the probe's names and definitions (`vllm bench serve` style).

use crate::record::{MetricMap, Slo};

/// What the client saw of one measured request (times in seconds from the run start).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRecord {
    /// Completed successfully.
    pub ok: bool,
    /// Prompt tokens.
    pub prompt: u32,
    /// Output tokens received.
    pub output: u32,
    /// When the request was sent.
    pub send: f64,
    /// First token-bearing event.
    pub first: Option<f64>,
    /// Last token-bearing event, or the failure time.
    pub end: f64,
}

impl RequestRecord {
    fn ttft(&self) -> Option<f64> {
        self.first.map(|f| f - self.send)
    }

    fn tpot(&self) -> Option<f64> {
        match self.first {
            Some(first) if self.output >= 2 => {
                Some((self.end - first) / f64::from(self.output - 1))
            }
            _ => None,
        }
    }

    fn e2el(&self) -> f64 {
        self.end - self.send
    }
}

/// Summarise measured requests; `itl_s` = pooled inter-token gaps of successful requests.
pub fn summarize(records: &[RequestRecord], mut itl_s: Vec<f64>, slos: &[Slo]) -> MetricMap {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.ok).collect();
    let completed = ok.len() as f64;
    let failed = (records.len() - ok.len()) as f64;
    let start = records.iter().map(|r| r.send).fold(f64::INFINITY, f64::min);
    let end = records
        .iter()
        .map(|r| r.end)
        .fold(f64::NEG_INFINITY, f64::max);
    let duration = if records.is_empty() { 0.0 } else { end - start };
    let per_second = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
    let input: f64 = ok.iter().map(|r| f64::from(r.prompt)).sum();
    let output: f64 = ok.iter().map(|r| f64::from(r.output)).sum();
    let good = ok.iter().filter(|r| meets_slos(r, slos)).count() as f64;
    let mut m = MetricMap::new();
    m.insert("completed".into(), completed);
    m.insert("failed".into(), failed);
    let attempted = completed + failed;
    m.insert(
        "error_rate".into(),
        if attempted > 0.0 {
            failed / attempted
        } else {
            0.0
        },
    );
    m.insert("duration_s".into(), duration);
    m.insert("total_input_tokens".into(), input);
    m.insert("total_output_tokens".into(), output);
    m.insert("request_throughput".into(), per_second(completed));
    m.insert("output_throughput".into(), per_second(output));
    m.insert("total_token_throughput".into(), per_second(input + output));
    m.insert("request_goodput".into(), per_second(good));
    let mut ttft: Vec<f64> = ok.iter().filter_map(|r| r.ttft()).collect();
    let mut tpot: Vec<f64> = ok.iter().filter_map(|r| r.tpot()).collect();
    let mut e2el: Vec<f64> = ok.iter().map(|r| r.e2el()).collect();
    for (name, samples) in [
        ("ttft", &mut ttft),
        ("tpot", &mut tpot),
        ("itl", &mut itl_s),
        ("e2el", &mut e2el),
    ] {
        insert_distribution(&mut m, name, samples);
    }
    m
}

/// Per-request latency SLOs (ttft, tpot, e2el) decide goodput; others are run-level.
fn meets_slos(r: &RequestRecord, slos: &[Slo]) -> bool {
    slos.iter().all(|slo| {
        let value_ms = match slo.metric.as_str() {
            "ttft" => r.ttft(),
            "tpot" => r.tpot(),
            "e2el" => Some(r.e2el()),
            _ => return true,
        };
        value_ms.is_none_or(|v| slo.holds(v * 1000.0))
    })
}

/// `{mean,median,std,min,max,p50,p90,p95,p99}_<name>_ms`; nothing when there are no samples.
fn insert_distribution(m: &mut MetricMap, name: &str, samples: &mut [f64]) {
    if samples.is_empty() {
        return;
    }
    samples.sort_unstable_by(f64::total_cmp);
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let ms = 1000.0;
    let mut put = |stat: &str, v: f64| {
        m.insert(format!("{stat}_{name}_ms"), v * ms);
    };
    put("mean", mean);
    put("std", var.sqrt());
    put("min", samples[0]);
    put("max", samples[samples.len() - 1]);
    put("median", percentile(samples, 50.0));
    for p in [50.0, 90.0, 95.0, 99.0] {
        put(&format!("p{p}"), percentile(samples, p));
    }
}

/// Linear-interpolated percentile of sorted samples (numpy's default).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(send: f64, first: f64, end: f64, output: u32) -> RequestRecord {
        RequestRecord {
            ok: true,
            prompt: 10,
            output,
            send,
            first: Some(first),
            end,
        }
    }

    #[test]
    fn definitions_match_the_probe() {
        let records = vec![
            record(0.0, 0.5, 1.5, 11),
            record(0.0, 1.0, 3.0, 11),
            RequestRecord {
                ok: false,
                prompt: 10,
                output: 0,
                send: 1.0,
                first: None,
                end: 4.0,
            },
        ];
        let slos = vec!["ttft:p99<=800ms".parse().unwrap()];
        let m = summarize(&records, vec![0.1, 0.1, 0.2], &slos);
        assert_eq!(m["completed"], 2.0);
        assert_eq!(m["failed"], 1.0);
        assert!((m["error_rate"] - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(m["duration_s"], 4.0);
        assert_eq!(m["output_throughput"], 22.0 / 4.0);
        assert_eq!(m["request_goodput"], 1.0 / 4.0);
        assert_eq!(m["mean_ttft_ms"], 750.0);
        assert!((m["mean_tpot_ms"] - 150.0).abs() < 1e-9);
        assert!((m["p50_itl_ms"] - 100.0).abs() < 1e-9);
        assert_eq!(m["max_e2el_ms"], 3000.0);
    }

    #[test]
    fn percentiles_interpolate_and_empty_runs_have_no_latencies() {
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.5);
        assert_eq!(percentile(&[5.0], 99.0), 5.0);
        let m = summarize(&[], Vec::new(), &[]);
        assert_eq!(m["completed"], 0.0);
        assert!(!m.contains_key("mean_ttft_ms"));
    }
}
