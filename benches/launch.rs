//! Launch benchmark (run by scripts/bench-launch.sh): for a cooperative fake server that starts
//! listening after a random delay, measures how long after the child's own "listening"
//! timestamp the supervisor reports ready, and how long teardown takes. Baseline in the same
//! run: a bare TCP connect loop polling every 1 ms for the same server, the floor for detection.

use infertune::launch::{LaunchSpec, ProcessLauncher, Readiness, Server};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().expect("temp dir");
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/children/fake_openai.py");
    let mut detect = Vec::new();
    let mut floor = Vec::new();
    let mut stop = Vec::new();
    for round in 0..rounds {
        // Listening delays spread over the backoff schedule (0.2 s … 2.1 s).
        let delay = 0.2 + (round % 20) as f64 * 0.1;
        let port = free_port();
        let spec = fake_spec(&fake, port, delay);
        let log = dir.path().join(format!("round-{round}.log"));
        let server = ProcessLauncher::new(infertune::engine::log_patterns())
            .spawn(&spec, &log, Duration::from_secs(30), Duration::from_secs(5))
            .expect("fake server starts");
        let ready_at = now();
        detect.push((ready_at - listening_at(&log)) * 1000.0);
        let started = Instant::now();
        Box::new(server).stop().expect("teardown");
        stop.push(started.elapsed().as_secs_f64() * 1000.0);
        floor.push(connect_floor(&fake, port, delay, dir.path()));
    }
    report("readiness detected after listening (ms)", &mut detect);
    report("baseline: 1 ms TCP connect poll (ms)", &mut floor);
    report("teardown of a cooperative server (ms)", &mut stop);
}

fn fake_spec(fake: &Path, port: u16, delay: f64) -> LaunchSpec {
    LaunchSpec {
        program: fake.to_string_lossy().into_owned(),
        args: [
            "--port".to_string(),
            port.to_string(),
            "--listen-delay".into(),
            format!("{delay}"),
        ]
        .to_vec(),
        env: BTreeMap::new(),
        files: Vec::new(),
        cwd: None,
        host: "127.0.0.1".into(),
        port,
        readiness: Readiness::chat("tiny"),
    }
}

/// Detection gap of a plain 1 ms connect poll against the same fake server.
fn connect_floor(fake: &Path, port: u16, delay: f64, dir: &Path) -> f64 {
    let log = dir.join(format!("floor-{port}.log"));
    let out = std::fs::File::create(&log).expect("log");
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new(fake)
        .args([
            "--port",
            &port.to_string(),
            "--listen-delay",
            &format!("{delay}"),
        ])
        .stdout(out)
        .process_group(0)
        .spawn()
        .expect("spawn fake");
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let seen = now();
    let gap = (seen - listening_at(&log)) * 1000.0;
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    gap
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

fn listening_at(log: &Path) -> f64 {
    let text = std::fs::read_to_string(log).expect("log");
    text.lines()
        .find_map(|l| l.strip_prefix("listening ")?.trim().parse().ok())
        .expect("child logged its listening time")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port()
}

fn report(what: &str, samples: &mut [f64]) {
    samples.sort_by(f64::total_cmp);
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    println!(
        "{what:<45} n={:<3} mean={mean:7.1} p50={:7.1} p90={:7.1} max={:7.1}",
        samples.len(),
        pick(0.5),
        pick(0.9),
        pick(1.0)
    );
}
