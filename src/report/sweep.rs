//! What a load sweep's report says (`infertune bench --report DIR`): one table of the runs,
//! written as `sweep.csv` and into `report.md`/`report.html`, and plots of throughput, latency
//! and failures against the load.

use crate::export::{Block, Chart, Series};
use crate::record::{metric, Latency, MetricMap, Slo};
use crate::util::atomic::{write_atomic, Access};
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// The sweep's table, one row per run.
pub(crate) const TABLE_CSV: &str = "sweep.csv";

const LINE: &str = "#1f77b4";
const P99: &str = "#ff7f0e";
const BAD: &str = "#d62728";

/// Metric columns of the table, after the load: the metric and its heading for reading.
const COLUMNS: [(&str, &str); 10] = [
    (metric::COMPLETED, "completed"),
    (metric::FAILED, "failed"),
    (metric::REQUEST_THROUGHPUT, "req/s"),
    (metric::OUTPUT_THROUGHPUT, "output tok/s"),
    ("p50_ttft_ms", "TTFT p50 ms"),
    ("p99_ttft_ms", "TTFT p99 ms"),
    ("p50_tpot_ms", "TPOT p50 ms"),
    ("p99_tpot_ms", "TPOT p99 ms"),
    ("p50_e2el_ms", "E2E p50 ms"),
    ("p99_e2el_ms", "E2E p99 ms"),
];

/// One run of a sweep.
#[derive(Clone, Debug)]
pub struct SweepPoint {
    /// The load it ran at: a concurrency, or a rate in requests/s.
    pub load: f64,
    /// Its summary metrics.
    pub metrics: MetricMap,
    /// The SLOs it broke, as text (empty when it held them all).
    pub violations: Vec<String>,
}

/// Everything a sweep's report shows.
#[derive(Clone, Debug)]
pub struct SweepView<'a> {
    /// Page title, e.g. the model and the server.
    pub title: String,
    /// The load's name on axes and in the table: `concurrency` or `rate`.
    pub knob: &'a str,
    /// The runs, in any order.
    pub points: &'a [SweepPoint],
    /// The SLOs each run was held to.
    pub slos: &'a [Slo],
    /// The highest load found to hold every SLO, when a search looked for it.
    pub knee: Option<f64>,
}

/// Write `sweep.csv`, `report.md`, `report.html` and `plots/*.svg` of `view` into `dir` (readable
/// as the umask allows: they hold no secret); returns the path of `report.html`.
pub fn write(dir: &Path, view: &SweepView<'_>) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (header, rows) = table(view, false);
    let mut csv = csv::Writer::from_writer(Vec::new());
    csv.write_record(&header)?;
    for row in &rows {
        csv.write_record(row)?;
    }
    let text = String::from_utf8(csv.into_inner()?)?;
    write_atomic(&dir.join(TABLE_CSV), &text, Access::Shared)?;
    let (_, html) = crate::export::write_report(dir, &view.title, &blocks(view), Access::Shared)?;
    Ok(html)
}

/// The runs sorted by load.
fn sorted<'a>(view: &SweepView<'a>) -> Vec<&'a SweepPoint> {
    let mut points: Vec<&SweepPoint> = view.points.iter().collect();
    points.sort_by(|a, b| a.load.total_cmp(&b.load));
    points
}

/// The table of `view`: its header and one row per run by load. For reading, headings are short
/// and numbers rounded; otherwise columns are metric names and numbers exact.
pub fn table(view: &SweepView<'_>, for_reading: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header: Vec<String> = std::iter::once(view.knob)
        .chain(COLUMNS.map(|(key, heading)| if for_reading { heading } else { key }))
        .map(str::to_string)
        .collect();
    if !view.slos.is_empty() {
        header.push(
            if for_reading {
                "SLOs broken"
            } else {
                "slo_violations"
            }
            .into(),
        );
    }
    let number = |v: f64| {
        if for_reading {
            rounded(v)
        } else {
            v.to_string()
        }
    };
    let rows = sorted(view)
        .into_iter()
        .map(|p| {
            let mut row = vec![p.load.to_string()];
            row.extend(
                COLUMNS
                    .iter()
                    .map(|(key, _)| p.metrics.get(*key).map_or(String::new(), |v| number(*v))),
            );
            if !view.slos.is_empty() {
                row.push(p.violations.join("; "));
            }
            row
        })
        .collect();
    (header, rows)
}

/// `v` for reading: whole numbers as they are, others to two decimals.
fn rounded(v: f64) -> String {
    if v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The blocks of the report of `view`.
fn blocks(view: &SweepView<'_>) -> Vec<Block> {
    let mut out = vec![Block::Heading(1, view.title.clone())];
    out.push(Block::Para(summary(view)));
    let (header, rows) = table(view, true);
    out.push(Block::Table { header, rows });
    out.push(Block::Heading(2, "Plots".into()));
    for (file, chart) in charts(view) {
        out.push(Block::Plot {
            caption: format!("{} against {}", chart.title, view.knob),
            file: file.to_string(),
            svg: chart.render(),
        });
    }
    out
}

/// One sentence on the runs, the SLOs and the knee.
fn summary(view: &SweepView<'_>) -> String {
    let mut text = format!("{} runs over {}.", view.points.len(), view.knob);
    if !view.slos.is_empty() {
        let slos: Vec<String> = view.slos.iter().map(ToString::to_string).collect();
        text.push_str(&format!(" SLOs: {}.", slos.join(", ")));
    }
    match (view.knee, view.slos.is_empty()) {
        (Some(knee), _) => text.push_str(&format!(
            " Highest {} holding every SLO: {knee}.",
            view.knob
        )),
        (None, false) => text.push_str(" No run held every SLO."),
        (None, true) => {}
    }
    text
}

/// The plots, each against the load, with their file names.
fn charts(view: &SweepView<'_>) -> Vec<(&'static str, Chart)> {
    let points = sorted(view);
    let x_categories: Vec<String> = points.iter().map(|p| p.load.to_string()).collect();
    let values = |key: &str| -> Vec<(f64, f64)> {
        points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.metrics.get(key).map(|v| (i as f64, *v)))
            .collect()
    };
    let chart = |title: &str, y_label: &str, series: Vec<Series>| Chart {
        title: title.to_string(),
        x_label: view.knob.to_string(),
        y_label: y_label.to_string(),
        series,
        x_categories: x_categories.clone(),
        thresholds: vec![],
        bars: false,
    };
    let line = |name: &str, color: &'static str, key: &str| Series {
        name: name.to_string(),
        color,
        points: values(key),
        line: true,
        hollow: false,
    };
    let broken: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.violations.is_empty())
        .filter_map(|(i, p)| {
            p.metrics
                .get(metric::OUTPUT_THROUGHPUT)
                .map(|v| (i as f64, *v))
        })
        .collect();
    let mut output = vec![line("output tokens/s", LINE, metric::OUTPUT_THROUGHPUT)];
    if !view.slos.is_empty() {
        output.push(Series {
            name: "breaks an SLO".into(),
            color: BAD,
            points: broken,
            line: false,
            hollow: false,
        });
    }
    let latency = |title: &str, latency: Latency| {
        chart(
            title,
            "ms",
            vec![
                line("p50", LINE, &latency.key("p50")),
                line("p99", P99, &latency.key("p99")),
            ],
        )
    };
    vec![
        (
            "output-throughput.svg",
            chart("Output throughput", "tokens/s", output),
        ),
        (
            "request-throughput.svg",
            chart(
                "Request throughput",
                "requests/s",
                vec![line("requests/s", LINE, metric::REQUEST_THROUGHPUT)],
            ),
        ),
        ("ttft.svg", latency("Time to first token", Latency::Ttft)),
        ("tpot.svg", latency("Time per output token", Latency::Tpot)),
        ("e2el.svg", latency("End-to-end latency", Latency::E2el)),
        (
            "failures.svg",
            chart(
                "Failed requests",
                "requests",
                vec![line("failed", BAD, metric::FAILED)],
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(load: f64, ttft: f64, violations: &[&str]) -> SweepPoint {
        let metrics: MetricMap = [
            ("completed", 10.0),
            ("failed", 0.0),
            ("output_throughput", load * 100.0),
            ("p50_ttft_ms", ttft / 2.0),
            ("p99_ttft_ms", ttft),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        SweepPoint {
            load,
            metrics,
            violations: violations.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn the_table_is_sorted_by_load_and_names_broken_slos() {
        let points = [
            point(8.0, 900.0, &["ttft:p99<=500ms (was 900ms)"]),
            point(1.0, 100.0, &[]),
        ];
        let slos = vec!["ttft:p99<=500ms".parse().unwrap()];
        let view = SweepView {
            title: "t".into(),
            knob: "concurrency",
            points: &points,
            slos: &slos,
            knee: Some(1.0),
        };
        let (header, rows) = table(&view, false);
        assert_eq!(header[0], "concurrency");
        assert_eq!(header.last().unwrap(), "slo_violations");
        assert_eq!(rows[0][0], "1");
        assert_eq!(rows[1].last().unwrap(), "ttft:p99<=500ms (was 900ms)");
        assert!(summary(&view).contains("holding every SLO: 1."));
        let (header, rows) = table(&view, true);
        assert_eq!(header[6], "TTFT p99 ms");
        assert_eq!((rows[0][1].as_str(), rows[0][6].as_str()), ("10", "100"));
        let charts = charts(&view);
        let ttft = charts.iter().find(|(f, _)| *f == "ttft.svg").unwrap();
        assert_eq!(ttft.1.series[1].points, vec![(0.0, 100.0), (1.0, 900.0)]);
        assert_eq!(ttft.1.x_categories, ["1", "8"]);
    }
}
