//! Probe benchmark: drives a lean fake streaming server (`probe_fake`: raw TCP, one scheduler
//! loop, so the server costs little next to the probe) running in another process (this
//! binary re-executed in server mode) and reports token events/s, % of ideal throughput at 1,000
//! and 2,000 concurrent streams, client CPU per event (getrusage), and the TTFT error (mean and
//! p99) two ways: against the TTFTs the server actually delivered (it logs each request's
//! arrival and first and last token writes, so its own lateness under load is not charged to
//! the probe) and against the injected 150 ms, with a concurrency-1 baseline from the same
//! invocation. Throughput lost against the ideal is split into the server's own lateness and
//! the client's turnaround between a response's last token and the next request.
//!
//! `cargo bench --bench probe` (release). Scenarios can be picked: `cargo bench --bench probe
//! -- baseline c1000 c2000 peak`.

#[path = "probe_fake/mod.rs"]
mod fake;

use fake::ServedSummary;
use infertune::probe::{self, ProbeReport, RunOptions, Target, WorkloadSpec};
use nix::sys::resource::{getrusage, UsageWho};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const SERVE: &str = "serve";
/// Asks the server process what it delivered: `served SKIP`.
const SERVED_QUERY: &str = "served";
/// Measured requests per stream at 1,000 and 2,000 streams (after one warmup request each):
/// about 12.5 s of steady state per scenario, so the ramp-down of the last round (streams
/// that drifted apart finish at different times) weighs little.
const REQUESTS_PER_STREAM: u32 = 16;
/// One request's ideal cycle at the paced server: TTFT plus 63 gaps between 64 tokens.
const IDEAL_CYCLE_MS: f64 = 150.0 + 63.0 * 10.0;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some(SERVE) {
        serve(&args[1..]);
        return;
    }
    let wanted = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    let mut paced = Server::spawn(150, 10, 64);
    println!(
        "fake server: TTFT 150 ms, 10 ms between tokens, 64 tokens, in process {}",
        paced.child.id()
    );
    let mut baseline_ttft = None;
    if wanted("baseline") {
        let result = measure(&mut paced, 1, 20, 1);
        baseline_ttft = Some(result.mean_ttft);
        result.print("concurrency 1 (baseline)", Some(None));
    }
    for (name, concurrency) in [("c1000", 1000), ("c2000", 2000)] {
        if wanted(name) {
            let result = measure(
                &mut paced,
                concurrency,
                concurrency * REQUESTS_PER_STREAM,
                concurrency,
            );
            result.print(&format!("concurrency {concurrency}"), Some(baseline_ttft));
        }
    }
    drop(paced);
    if wanted("peak") {
        let mut burst = Server::spawn(0, 0, 256);
        println!(
            "fake server: no delays, 256 tokens per response, in process {}",
            burst.child.id()
        );
        for concurrency in [64, 256] {
            let result = measure(&mut burst, concurrency, concurrency * 8, concurrency);
            result.print(&format!("peak, concurrency {concurrency}"), None);
        }
    }
}

/// A fake server in a child process, killed on drop.
struct Server {
    child: Child,
    url: String,
    replies: BufReader<ChildStdout>,
}

impl Server {
    fn spawn(ttft_ms: u64, itl_ms: u64, tokens: u32) -> Server {
        let exe = std::env::current_exe().expect("own path");
        let mut child = Command::new(exe)
            .args([
                SERVE,
                &ttft_ms.to_string(),
                &itl_ms.to_string(),
                &tokens.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the fake server process");
        let mut replies = BufReader::new(child.stdout.take().expect("server stdout"));
        let mut url = String::new();
        replies.read_line(&mut url).expect("server address");
        Server {
            child,
            url: url.trim().to_string(),
            replies,
        }
    }

    /// What the server delivered since the last call, leaving out the first `skip`
    /// requests to arrive (the warmup).
    fn served(&mut self, skip: u32) -> ServedSummary {
        let stdin = self.child.stdin.as_mut().expect("server stdin");
        writeln!(stdin, "{SERVED_QUERY} {skip}").expect("ask the server");
        let mut line = String::new();
        self.replies.read_line(&mut line).expect("server reply");
        let numbers: Vec<f64> = line
            .split_whitespace()
            .map(|n| n.parse().expect("server reply: numbers"))
            .collect();
        ServedSummary {
            ttft_mean: numbers[0],
            ttft_p99: numbers[1],
            e2e_mean: numbers[2],
            turnaround_mean: numbers[3],
            turnaround_p99: numbers[4],
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Server mode: serve until stdin closes.
fn serve(args: &[String]) {
    let number = |i: usize| {
        args.get(i)
            .and_then(|a| a.parse::<u64>().ok())
            .expect("serve TTFT_MS ITL_MS TOKENS")
    };
    let pacing = fake::Pacing {
        ttft: Duration::from_millis(number(0)),
        itl: Duration::from_millis(number(1)),
        tokens: number(2) as u32,
    };
    let log = fake::ServedLog::default();
    let address = fake::start(pacing, log.clone()).expect("start the fake server");
    println!("http://{address}");
    std::io::stdout().flush().expect("flush");
    for line in std::io::stdin().lines().map_while(Result::ok) {
        let Some(skip) = line.strip_prefix(SERVED_QUERY) else {
            continue;
        };
        let s = log.take_summary(skip.trim().parse().unwrap_or(0));
        println!(
            "{} {} {} {} {}",
            s.ttft_mean, s.ttft_p99, s.e2e_mean, s.turnaround_mean, s.turnaround_p99
        );
        std::io::stdout().flush().expect("flush");
    }
}

struct Measured {
    report: ProbeReport,
    concurrency: u32,
    cpu: Duration,
    server_cpu: Duration,
    wall: Duration,
    mean_ttft: f64,
    served: ServedSummary,
}

/// CPU time used so far by process `pid` (from /proc, in clock ticks of 10 ms).
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn measure(server: &mut Server, concurrency: u32, requests: u32, warmup: u32) -> Measured {
    let workload = WorkloadSpec {
        warmup: Some(warmup),
        timeout: Duration::from_secs(60),
        ..WorkloadSpec::closed_random(16, 64, concurrency, requests)
    };
    let target = Target {
        base_url: server.url.clone(),
        model: "fake".into(),
        api_key: None,
    };
    // The same runtime `infertune bench` uses.
    let runtime = probe::runtime().expect("runtime");
    let cpu_before = cpu_time();
    let server_before = process_cpu(server.child.id());
    let started = Instant::now();
    let report = runtime
        .block_on(probe::run(&target, &workload, RunOptions::default()))
        .expect("probe run");
    let wall = started.elapsed();
    let cpu = cpu_time() - cpu_before;
    let server_cpu = process_cpu(server.child.id()) - server_before;
    let mean_ttft = report
        .metrics
        .get("mean_ttft_ms")
        .copied()
        .unwrap_or(f64::NAN);
    Measured {
        report,
        concurrency,
        cpu,
        server_cpu,
        wall,
        mean_ttft,
        served: server.served(warmup),
    }
}

fn cpu_time() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let micros = |t: nix::sys::time::TimeVal| {
        Duration::from_micros((t.tv_sec() * 1_000_000 + t.tv_usec()) as u64)
    };
    micros(usage.user_time()) + micros(usage.system_time())
}

impl Measured {
    /// `paced` is `Some(baseline TTFT)` for runs against the paced server (TTFT 150 ms).
    fn print(&self, title: &str, paced: Option<Option<f64>>) {
        let m = &self.report.metrics;
        let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
        let tokens = get("total_output_tokens");
        let duration = get("duration_s");
        let events_per_s = tokens / duration;
        // Includes warmup and the bench's own work: an upper bound on the probe's cost.
        let warmup_tokens = tokens / get("completed") * f64::from(self.concurrency);
        let cpu_per_event = self.cpu.as_secs_f64() * 1e6 / (tokens + warmup_tokens);
        println!("== {title}");
        println!(
            "  completed {} failed {}, duration {duration:.3} s (wall incl. warmup {:.2} s)",
            get("completed"),
            get("failed"),
            self.wall.as_secs_f64()
        );
        println!(
            "  token events/s {events_per_s:.0}, client CPU {:.2} µs/event ({:.2} s CPU; server process {:.2} s CPU)",
            cpu_per_event,
            self.cpu.as_secs_f64(),
            self.server_cpu.as_secs_f64()
        );
        if let Some(baseline_ttft) = paced {
            let ideal = f64::from(self.concurrency) * 64.0 / (IDEAL_CYCLE_MS / 1000.0);
            println!(
                "  output throughput {:.0} tok/s = {:.1}% of ideal {ideal:.0}",
                get("output_throughput"),
                100.0 * get("output_throughput") / ideal
            );
            let (mean, p99) = (get("mean_ttft_ms"), get("p99_ttft_ms"));
            let served = &self.served;
            println!(
                "  per request cycle beyond the ideal {IDEAL_CYCLE_MS:.0} ms: the server's lateness {:+.2} ms (arrival to last token {:.2} ms); the client's turnaround (last token to next request's arrival) {:.2} ms mean, {:.2} ms p99",
                served.e2e_mean - IDEAL_CYCLE_MS,
                served.e2e_mean,
                served.turnaround_mean,
                served.turnaround_p99
            );
            println!(
                "  TTFT mean {mean:.2} ms, p99 {p99:.2} ms; the server's actual TTFT mean {:.2} ms, p99 {:.2} ms",
                served.ttft_mean, served.ttft_p99
            );
            println!(
                "  TTFT error against the server's actual: mean {:+.2} ms, p99 {:+.2} ms; against the injected 150 ms: mean {:+.2} ms, p99 {:+.2} ms",
                mean - served.ttft_mean,
                p99 - served.ttft_p99,
                mean - 150.0,
                p99 - 150.0
            );
            if let Some(base) = baseline_ttft {
                println!(
                    "  TTFT mean vs concurrency-1 baseline: {:+.2} ms",
                    mean - base
                );
            }
            println!(
                "  TPOT mean {:.3} ms, p99 {:.3} ms; ITL p99 {:.3} ms",
                get("mean_tpot_ms"),
                get("p99_tpot_ms"),
                get("p99_itl_ms")
            );
        }
    }
}
