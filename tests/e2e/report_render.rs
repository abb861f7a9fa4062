//! The HTML reports as a browser draws them: headless Chromium renders a study's `report.html`
//! (a short simulator study of `search-spaces/demo-sim.yaml`) and a bench sweep's page to PNG and
//! to its DOM, and every plot must have data in it, so a page that renders empty fails.
//!
//! It needs Chromium, so it is ignored in the fast tier; scripts/test.sh and
//! scripts/screenshot-check.sh install it and run it (see `kit::provisioned`).
//! `INFERTUNE_SCREENSHOT_DIR` keeps the PNGs there.

use crate::kit::{provisioned, support};

use assert_cmd::cargo::cargo_bin;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::{FakeConfig, FakeServer};

/// What the DOM of one `<svg>` holds: data points, lines and bars (legend marks left out), and
/// dashed threshold lines.
#[derive(Debug)]
struct Plot {
    title: String,
    points: usize,
    lines: usize,
    bars: usize,
    thresholds: usize,
}

#[test]
#[ignore = "needs headless Chromium: run scripts/test.sh, which provisions it"]
fn a_study_report_and_a_sweep_page_render_with_data_in_every_plot() {
    let Some((chromium, tmp, out)) = chromium_and_folders() else {
        return;
    };

    let study = study_report(tmp.path());
    let plots = render(&chromium, &study, &out.join("study-report.png"));
    assert!(plots.len() >= 2, "{plots:?}");
    for plot in &plots {
        assert!(
            plot.points + plot.lines + plot.bars > 0,
            "an empty plot: {plot:?}"
        );
    }
    assert_eq!(plots[0].title, "Best output_throughput so far");
    let latency = plots
        .iter()
        .find(|p| p.title.ends_with("vs output throughput"));
    assert!(
        latency.is_some_and(|p| p.thresholds == 1),
        "the latency plot draws its SLO bound: {plots:?}"
    );
    let importance = plots
        .iter()
        .find(|p| p.title.starts_with("Parameter importance"));
    assert!(
        importance.is_some_and(|p| p.bars >= 2),
        "an importance bar per varied parameter: {plots:?}"
    );
    let dom = std::fs::read_to_string(&study).unwrap();
    let why = dom
        .split("Why the winner wins")
        .nth(1)
        .expect("the report has a \"Why the winner wins\" section");
    let table = why.split("</table>").next().unwrap_or_default();
    for figure in [
        "KV-cache usage, peak",
        "requests running, mean",
        "accelerator power, mean (W)",
    ] {
        assert!(
            table.contains(figure),
            "the why table lacks {figure}: {table}"
        );
    }

    let sweep = sweep_report(tmp.path());
    let plots = render(&chromium, &sweep, &out.join("sweep-report.png"));
    let titles: Vec<&str> = plots.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Output throughput",
            "Request throughput",
            "Time to first token",
            "Time per output token",
            "End-to-end latency",
            "Failed requests"
        ]
    );
    // One point per concurrency for each series: p50 and p99 of the latencies.
    let points: Vec<usize> = plots.iter().map(|p| p.points).collect();
    assert_eq!(points, [3, 3, 6, 6, 6, 3], "{plots:?}");
    assert!(plots.iter().all(|p| p.lines >= 1), "{plots:?}");
}

#[test]
#[ignore = "needs headless Chromium: run scripts/test.sh, which provisions it"]
fn the_comparison_of_two_studies_renders_with_data() {
    let Some((chromium, tmp, out)) = chromium_and_folders() else {
        return;
    };
    let a = laid_out_study(tmp.path(), "vllm-h100", "vllm", [100.0, 150.0, 160.0]);
    let b = laid_out_study(tmp.path(), "sglang-h100", "sglang", [120.0, 130.0, 128.0]);
    let page = tmp.path().join("compare");
    let run = Command::new(cargo_bin("infertune"))
        .arg("compare")
        .args([&a, &b])
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("vllm-h100") && stdout.contains("+55.0%") && stdout.contains("sglang"),
        "the terminal table shows both studies and the gain:\n{stdout}"
    );
    let plots = render(
        &chromium,
        &page.join("report.html"),
        &out.join("compare.png"),
    );
    let titles: Vec<&str> = plots.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["Winner and engine defaults"]);
    assert_eq!(
        plots[0].points, 4,
        "a winner and an engine-defaults point a study: {plots:?}"
    );
}

#[test]
#[ignore = "needs headless Chromium: run scripts/test.sh, which provisions it"]
fn a_plan_report_renders_its_pareto_front() {
    let Some((chromium, tmp, out)) = chromium_and_folders() else {
        return;
    };
    let plan = crate::plan_sim::exported_plan(tmp.path());
    let plots = render(
        &chromium,
        &plan.join("report.html"),
        &out.join("plan-report.png"),
    );
    assert_eq!(plots.len(), 1, "{plots:?}");
    assert_eq!(plots[0].title, "Tokens/s per GPU against tokens/s per user");
    // Every served plan as a point, and the front through the best of them.
    assert!(plots[0].points >= 2 && plots[0].lines == 1, "{plots:?}");
}

/// A study folder `name` of `engine` laid out by hand: its baseline, winner and the winner's
/// repeat measured `values`.
fn laid_out_study(dir: &Path, name: &str, engine: &str, values: [f64; 3]) -> PathBuf {
    let study = dir.join(name);
    std::fs::create_dir_all(&study).unwrap();
    let meta = serde_json::json!({
        "format": infertune::study::journal::STUDY_FORMAT, "name": name,
        "space_origin": "by-hand.yaml", "space_fingerprint": "by-hand", "seed": 1,
        "sampler": "tpe", "engine": engine, "objective": {"metric": "output_throughput"},
    });
    std::fs::write(study.join("study.json"), meta.to_string()).unwrap();
    let kinds = [
        serde_json::json!({"kind": "baseline"}),
        serde_json::json!({"kind": "search"}),
        serde_json::json!({"kind": "repeat", "of": 1}),
    ];
    let lines: Vec<String> = values
        .iter()
        .zip(kinds)
        .enumerate()
        .map(|(i, (v, kind))| {
            let seqs = if i == 0 { 256 } else { 64 };
            let mut r = serde_json::json!({
                "number": i, "params": {"max_num_seqs": seqs}, "outcome": {"status": "feasible"},
                "metrics": {"output_throughput": v}, "value": v, "score": v, "wall_s": 30.0,
            });
            r.as_object_mut()
                .unwrap()
                .extend(kind.as_object().unwrap().clone());
            r.to_string()
        })
        .collect();
    std::fs::write(study.join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
    study
}

/// Chromium (or `None` after the notice that it is missing), a temporary folder and the folder
/// the PNGs go to (`INFERTUNE_SCREENSHOT_DIR`, else one in the temporary folder).
fn chromium_and_folders() -> Option<(PathBuf, tempfile::TempDir, PathBuf)> {
    let chromium = provisioned::or_skip(
        chromium(),
        "INFERTUNE_REQUIRE_CHROMIUM",
        "run scripts/provision-chromium.sh or scripts/screenshot-check.sh",
    )?;
    let tmp = tempfile::tempdir().unwrap();
    let out = std::env::var_os("INFERTUNE_SCREENSHOT_DIR")
        .map_or_else(|| tmp.path().join("png"), PathBuf::from);
    std::fs::create_dir_all(&out).unwrap();
    Some((chromium, tmp, out))
}

/// `chromium` on PATH, or why there is none.
fn chromium() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromium"))
        .find(|p| p.is_file())
        .ok_or_else(|| "no `chromium` is on PATH".to_string())
}

/// An eight-trial study of the simulator demo space, probes run to the end (enough trials
/// with a value for parameter importances); returns its `report.html`.
fn study_report(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("search-spaces/demo-sim.yaml")).unwrap();
    assert!(
        text.contains("port: 8200"),
        "demo-sim.yaml no longer holds `port: 8200`"
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let space = dir.join("demo-sim.yaml");
    std::fs::write(&space, text.replace("port: 8200", &format!("port: {port}"))).unwrap();
    let results = dir.join("results");
    let run = Command::new(cargo_bin("infertune"))
        .arg("tune")
        .arg("--space")
        .arg(&space)
        .arg("--results")
        .arg(&results)
        // Every probe to its end, so enough trials have a value for the importances.
        .args(["--trials", "8", "--no-prune"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    results.join("demo-sim/report.html")
}

/// A bench over three concurrencies of the fake server; returns its `report.html`.
fn sweep_report(dir: &Path) -> PathBuf {
    let server = FakeServer::start(FakeConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        tokens: Some(8),
        ..FakeConfig::default()
    });
    let report = dir.join("sweep");
    let run = Command::new(cargo_bin("infertune"))
        .args([
            "bench",
            "--url",
            &server.url,
            "--model",
            "m",
            "--input-len",
            "8",
        ])
        .args(["--concurrency", "1,2,4", "--requests", "4,8,16", "--report"])
        .arg(&report)
        .env_remove("INFERTUNE_API_KEY")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    report.join("report.html")
}

/// Renders `page` to `png` and returns the plots of its DOM.
fn render(chromium: &Path, page: &Path, png: &Path) -> Vec<Plot> {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let shot = headless(
        chromium,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,2000",
            &url,
        ],
    );
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "{} bytes",
        bytes.len()
    );
    let dom = headless(chromium, &["--dump-dom", &url]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let plots = plots(&String::from_utf8_lossy(&dom.stdout));
    println!(
        "{}: {} bytes of PNG; plots {plots:?}",
        page.display(),
        bytes.len()
    );
    plots
}

/// Runs headless Chromium with a fresh profile, within a minute.
fn headless(chromium: &Path, args: &[&str]) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    Command::new("timeout")
        .arg("60")
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .output()
        .unwrap()
}

/// The `<svg>` elements of `dom`: each one's title (its first text) and its data marks, which
/// are the points (`r="3.5"`; legend marks are larger) and the lines.
fn plots(dom: &str) -> Vec<Plot> {
    dom.split("<svg")
        .skip(1)
        .map(|rest| {
            let svg = rest.split("</svg>").next().unwrap_or_default();
            let title = svg
                .split("<text")
                .nth(1)
                .and_then(|t| t.split('>').nth(1))
                .and_then(|t| t.split('<').next())
                .unwrap_or_default()
                .to_string();
            Plot {
                title,
                points: svg
                    .split("<circle")
                    .skip(1)
                    .filter(|c| {
                        c.split('>')
                            .next()
                            .unwrap_or_default()
                            .contains(r#" r="3.5""#)
                    })
                    .count(),
                lines: svg.matches("<polyline").count(),
                bars: svg.matches("<rect x=").count(),
                thresholds: svg.matches("stroke-dasharray").count(),
            }
        })
        .collect()
}
