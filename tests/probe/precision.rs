//! A probe that runs until its figure is known: it stops on its interval when the noise
//! averages out, runs to its ceiling when it never settles, and lockstep rounds do not move
//! its steady-state figure.

use super::errors::run;
use crate::kit::support;

use infertune::probe::{LoadSpec, Precision, WorkloadSpec};
use std::time::Duration;
use support::{FakeConfig, Pace};

fn closed(
    concurrency: u32,
    duration: Option<Duration>,
    precision: Option<Precision>,
) -> WorkloadSpec {
    WorkloadSpec {
        load: LoadSpec::Closed {
            concurrency,
            requests: None,
            duration,
        },
        warmup: None,
        precision,
        ..WorkloadSpec::closed_random(8, 200, concurrency, 1)
    }
}

fn paced(pace: Pace, ttft_ms: u64, itl_ms: u64, tokens: u32) -> FakeConfig {
    FakeConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        tokens: Some(tokens),
        pace,
        ..FakeConfig::default()
    }
}

#[test]
fn the_probe_stops_once_its_interval_is_within_the_target() {
    let precision = Precision {
        half_width: 0.05,
        min: Duration::from_secs(6),
        max: Duration::from_secs(60),
    };
    let report = run(
        paced(Pace::Jitter(0.5), 20, 4, 25),
        &closed(4, None, Some(precision)),
    );
    let m = &report.metrics;
    assert_eq!(m["precision_reached"], 1.0, "{m:?}");
    let window = m["steady_window_s"];
    assert!(
        (6.0..20.0).contains(&window),
        "stopped after {window} s: {m:?}"
    );
    let (figure, half) = (m["output_throughput"], m["output_throughput_hw95"]);
    assert!(half / figure <= 0.05, "{half} of {figure}");
    assert_eq!(figure, m["steady_output_throughput"]);
}

#[test]
fn a_figure_that_never_settles_runs_to_the_ceiling_with_its_interval() {
    let precision = Precision {
        half_width: 0.05,
        min: Duration::from_secs(2),
        max: Duration::from_secs(8),
    };
    let report = run(
        paced(Pace::Slowing(0.5), 20, 4, 25),
        &closed(4, None, Some(precision)),
    );
    let m = &report.metrics;
    assert_eq!(m["precision_reached"], 0.0, "{m:?}");
    assert!(m["steady_window_s"] >= 6.0, "{m:?}");
    let relative = m["output_throughput_hw95"] / m["output_throughput"];
    assert!(relative > 0.05, "the interval stays wide: {relative}");
}

#[test]
fn lockstep_rounds_do_not_move_the_steady_figure() {
    // Eight requests start together, prefill for 300 ms and decode 30 tokens: rounds of about
    // 0.6 s in lockstep. Runs cut after different fractions of a round measure the same rate.
    let lockstep = || paced(Pace::Steady, 300, 10, 30);
    let figure = |seconds: f64| {
        let report = run(
            lockstep(),
            &closed(8, Some(Duration::from_secs_f64(seconds)), None),
        );
        let m = report.metrics;
        let round_s = m["mean_e2el_ms"] / 1000.0;
        (m["steady_output_throughput"], 8.0 * 30.0 / round_s)
    };
    let (short, expected) = figure(3.1);
    let (long, _) = figure(4.8);
    assert!((short / long - 1.0).abs() < 0.03, "{short} against {long}");
    assert!(
        (long / expected - 1.0).abs() < 0.08,
        "{long} against {expected}"
    );
}

#[test]
fn tokens_the_stream_shows_as_empty_text_still_count() {
    // Every other response streams its 30 tokens as empty text (vLLM does so for a random-weight
    // model's undecodable tokens) and only its usage counts them: the steady figure is still
    // the server's whole output rate, not the share of it that arrived as visible text.
    let config = FakeConfig {
        silent_every: 2,
        ..paced(Pace::Steady, 200, 10, 30)
    };
    let report = run(config, &closed(8, Some(Duration::from_secs(4)), None));
    let m = report.metrics;
    let expected = 8.0 * 30.0 / (m["mean_e2el_ms"] / 1000.0);
    let steady = m["steady_output_throughput"];
    assert!(
        (steady / expected - 1.0).abs() < 0.08,
        "{steady} tok/s against {expected}: {m:?}"
    );
}
