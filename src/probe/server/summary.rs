//! A probe's scrapes of `/metrics` and accelerator readings, summarised into the record's
//! `server` section.

use super::accel::Reading;
use super::catalogue as names;
use super::exposition::Exposition;
use crate::record::ServerStats;

/// One scrape of `/metrics`, `at` seconds after the first.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    /// Seconds since the first scrape.
    pub at: f64,
    /// What it served.
    pub exposition: Exposition,
}

/// The summary of `scrapes` (the first taken before the probe, the last after it, the
/// others during it) and of the accelerator `readings` taken meanwhile.
pub(crate) fn summarise(scrapes: &[Snapshot], readings: &[Reading]) -> ServerStats {
    let mut stats = ServerStats {
        scrapes: scrapes.len() as u32,
        ..ServerStats::default()
    };
    if let (Some(first), Some(last)) = (scrapes.first(), scrapes.last()) {
        counters(&mut stats, &first.exposition, &last.exposition);
        gauges(&mut stats, scrapes);
        served_power(&mut stats, scrapes);
    }
    if stats.power_mean_w.is_none() {
        tool_power(&mut stats, readings);
    }
    stats
}

/// The first of `candidates` that `e` serves.
fn pick<'a>(e: &Exposition, candidates: &[&'a str]) -> Option<&'a str> {
    candidates.iter().copied().find(|name| e.has(name))
}

fn delta(first: &Exposition, last: &Exposition, name: &str) -> Option<f64> {
    Some(last.value(name)? - first.value(name)?)
}

fn counters(stats: &mut ServerStats, first: &Exposition, last: &Exposition) {
    let mut counted = |candidates: &[&str], field: &str| {
        let name = pick(last, candidates)?;
        let value = delta(first, last, name)?;
        stats.sources.insert(field.into(), name.into());
        Some(value)
    };
    stats.preemptions = counted(names::PREEMPTIONS, "preemptions");
    stats.output_tokens = counted(names::OUTPUT_TOKENS, "output_tokens");
    stats.prompt_tokens = counted(names::PROMPT_TOKENS, "prompt_tokens");
    let (hits, queries) = names::PREFIX_HITS_QUERIES;
    let rate = |hit: f64, asked: f64| (asked > 0.0).then(|| hit / asked);
    if let (Some(h), Some(q)) = (delta(first, last, hits), delta(first, last, queries)) {
        stats.prefix_cache_hit_rate = rate(h, q);
        stats.sources.insert(
            "prefix_cache_hit_rate".into(),
            format!("{hits} / {queries}"),
        );
    } else if let (Some(cached), Some(fresh)) = (
        delta(first, last, names::PROMPT_TOKENS_CACHED),
        delta(first, last, names::PROMPT_TOKENS[2]),
    ) {
        stats.prefix_cache_hit_rate = rate(cached, cached + fresh);
        stats.sources.insert(
            "prefix_cache_hit_rate".into(),
            format!(
                "{c} / ({c} + {p})",
                c = names::PROMPT_TOKENS_CACHED,
                p = names::PROMPT_TOKENS[2]
            ),
        );
    }
}

/// Peaks over every scrape; means over those taken during the probe (all of them when none
/// was).
fn gauges(stats: &mut ServerStats, scrapes: &[Snapshot]) {
    let during = if scrapes.len() > 2 {
        &scrapes[1..scrapes.len() - 1]
    } else {
        scrapes
    };
    let series = |name: &str, of: &[Snapshot]| -> Vec<f64> {
        of.iter().filter_map(|s| s.exposition.mean(name)).collect()
    };
    let last = &scrapes[scrapes.len() - 1].exposition;
    if let Some(name) = pick(last, names::KV_USAGE) {
        stats.kv_cache_usage_peak = max(&series(name, scrapes));
        stats.kv_cache_usage_mean = mean(&series(name, during));
        stats.sources.insert("kv_cache_usage".into(), name.into());
    }
    if let Some(name) = pick(last, names::WAITING) {
        stats.waiting_peak = max(&series(name, scrapes));
        stats.sources.insert("waiting_peak".into(), name.into());
    }
    if let Some(name) = pick(last, names::RUNNING) {
        stats.running_mean = mean(&series(name, during));
        stats.sources.insert("running_mean".into(), name.into());
    }
    if stats.prefix_cache_hit_rate.is_none() && last.has(names::CACHE_HIT_RATE) {
        stats.prefix_cache_hit_rate = mean(&series(names::CACHE_HIT_RATE, during));
        stats
            .sources
            .insert("prefix_cache_hit_rate".into(), names::CACHE_HIT_RATE.into());
    }
}

/// Power the server serves itself (DCGM names): energy from the energy counter's increase
/// when there is one, else the power gauge integrated over the scrapes. A time-scaled
/// simulator's figures are in the modelled engine's terms: its span is the modelled one.
fn served_power(stats: &mut ServerStats, scrapes: &[Snapshot]) {
    let (first, last) = (&scrapes[0], &scrapes[scrapes.len() - 1]);
    let scale = last
        .exposition
        .value(names::TIME_SCALE)
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1.0);
    let span = (last.at - first.at) / scale;
    if let Some(mj) = delta(&first.exposition, &last.exposition, names::ENERGY_MJ) {
        if span > 0.0 {
            stats.energy_j = Some(mj / 1000.0);
            stats.power_mean_w = Some(mj / 1000.0 / span);
            stats
                .sources
                .insert("energy_j".into(), names::ENERGY_MJ.into());
        }
    } else {
        let points: Vec<(f64, f64)> = scrapes
            .iter()
            .filter_map(|s| Some((s.at, s.exposition.value(names::POWER_W)?)))
            .collect();
        if let Some((energy, mean_w)) = integrate(&points) {
            stats.energy_j = Some(energy / scale);
            stats.power_mean_w = Some(mean_w);
            stats
                .sources
                .insert("energy_j".into(), names::POWER_W.into());
        }
    }
    let memory: Vec<f64> = scrapes
        .iter()
        .filter_map(|s| s.exposition.value(names::MEMORY_USED_MIB))
        .collect();
    stats.accel_memory_used_peak_mib = max(&memory);
    let util: Vec<f64> = scrapes
        .iter()
        .filter_map(|s| s.exposition.mean(names::UTILIZATION_PCT))
        .collect();
    stats.accel_utilization_mean = mean(&util).map(|pct| pct / 100.0);
}

/// Power, memory and utilisation from the platform tool's readings.
fn tool_power(stats: &mut ServerStats, readings: &[Reading]) {
    let points: Vec<(f64, f64)> = readings
        .iter()
        .filter_map(|r| Some((r.at, r.power_w?)))
        .collect();
    if let Some((energy, mean_w)) = integrate(&points) {
        stats.energy_j = Some(energy);
        stats.power_mean_w = Some(mean_w);
        if let Some(tool) = readings.first().map(|r| r.tool) {
            stats.sources.insert("energy_j".into(), tool.into());
        }
    }
    let memory: Vec<f64> = readings.iter().filter_map(|r| r.memory_used_mib).collect();
    stats.accel_memory_used_peak_mib = stats.accel_memory_used_peak_mib.or(max(&memory));
    let util: Vec<f64> = readings.iter().filter_map(|r| r.utilization).collect();
    stats.accel_utilization_mean = stats.accel_utilization_mean.or(mean(&util));
}

/// Trapezoidal energy (J) under `(seconds, watts)` points and the mean power over their
/// span; `None` with fewer than two points or no span.
fn integrate(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let span = points.last()?.0 - points.first()?.0;
    if points.len() < 2 || span <= 0.0 {
        return None;
    }
    let energy: f64 = points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum();
    Some((energy, energy / span))
}

fn max(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::max)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Exposition {
        let path = format!(
            "{}/tests/fixtures/metrics/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        Exposition::parse(&text).unwrap()
    }

    fn snap(at: f64, text: &str) -> Snapshot {
        Snapshot {
            at,
            exposition: Exposition::parse(text).unwrap(),
        }
    }

    #[test]
    fn vllm_counters_are_deltas_and_gauges_summaries() {
        let before = fixture("vllm-0.32.0-before.prom");
        let after = fixture("vllm-0.32.0-after.prom");
        let during = fixture("vllm-0.32.0-during.prom");
        let scrapes = [
            Snapshot {
                at: 0.0,
                exposition: before.clone(),
            },
            Snapshot {
                at: 1.0,
                exposition: during.clone(),
            },
            Snapshot {
                at: 2.0,
                exposition: after.clone(),
            },
        ];
        let s = summarise(&scrapes, &[]);
        let out = names::OUTPUT_TOKENS[0];
        assert_eq!(
            s.output_tokens,
            Some(after.value(out).unwrap() - before.value(out).unwrap())
        );
        assert!(s.output_tokens.unwrap() > 0.0);
        assert_eq!(s.sources["output_tokens"], out);
        assert_eq!(s.preemptions, Some(0.0));
        assert_eq!(
            s.running_mean,
            during.value("vllm:num_requests_running"),
            "the mean is over the scrape taken during the probe"
        );
        let rate = s.prefix_cache_hit_rate.unwrap();
        assert!((0.0..=1.0).contains(&rate), "{rate}");
        assert_eq!(s.scrapes, 3);
        assert_eq!(s.power_mean_w, None, "a CPU engine serves no power");
    }

    #[test]
    fn llamacpp_hit_rate_counts_cached_over_all_prompt_tokens() {
        let before = snap(0.0, "llamacpp:prompt_tokens_total 0\nllamacpp:prompt_tokens_cached_total 0\nllamacpp:tokens_predicted_total 0\n");
        let after = fixture("llamacpp-0.3.36.prom");
        let s = summarise(
            &[
                before,
                Snapshot {
                    at: 1.0,
                    exposition: after,
                },
            ],
            &[],
        );
        // The fixture: two requests of 10 and 12 prompt tokens, the second reusing 10.
        assert_eq!(s.prefix_cache_hit_rate, Some(10.0 / 22.0));
        assert_eq!(s.output_tokens, Some(16.0));
        assert_eq!(s.prompt_tokens, Some(12.0));
        assert_eq!(s.preemptions, None, "llama.cpp has no preemption counter");
        assert_eq!(s.sources["running_mean"], "llamacpp:requests_processing");
    }

    #[test]
    fn a_time_scaled_simulator_reports_power_over_the_modelled_span() {
        // Ten times faster than modelled: 2 wall seconds are 20 modelled ones.
        let a = snap(
            0.0,
            "infertune_sim_time_scale 0.1\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 0\n",
        );
        let b = snap(
            2.0,
            "infertune_sim_time_scale 0.1\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 8000000\n",
        );
        let s = summarise(&[a, b], &[]);
        assert_eq!(s.energy_j, Some(8000.0));
        assert_eq!(s.power_mean_w, Some(400.0));
        let gauge = |at: f64| {
            snap(
                at,
                "infertune_sim_time_scale 0.1\nDCGM_FI_DEV_POWER_USAGE 400\n",
            )
        };
        let s = summarise(&[gauge(0.0), gauge(2.0)], &[]);
        assert_eq!(s.power_mean_w, Some(400.0));
        assert_eq!(s.energy_j, Some(8000.0), "400 W over 20 modelled seconds");
    }

    #[test]
    fn served_energy_counter_beats_the_power_gauge() {
        let a = snap(
            0.0,
            "DCGM_FI_DEV_POWER_USAGE 100\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 5000\n",
        );
        let b = snap(
            2.0,
            "DCGM_FI_DEV_POWER_USAGE 300\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 805000\n",
        );
        let s = summarise(&[a.clone(), b.clone()], &[]);
        assert_eq!(s.energy_j, Some(800.0));
        assert_eq!(s.power_mean_w, Some(400.0));
        let gauge_only = |s: &Snapshot| {
            snap(
                s.at,
                &format!(
                    "DCGM_FI_DEV_POWER_USAGE {}\n",
                    s.exposition.value(names::POWER_W).unwrap()
                ),
            )
        };
        let s = summarise(&[gauge_only(&a), gauge_only(&b)], &[]);
        assert_eq!(s.energy_j, Some(400.0));
        assert_eq!(s.power_mean_w, Some(200.0));
    }
}
