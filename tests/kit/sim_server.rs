//! `infertune sim serve` as a child process on a free port: the fake of an engine for tests that
//! need one speaking the OpenAI API over real HTTP with an engine's batching, metrics and
//! refusals (the in-process [`super::support::FakeServer`] injects timings and faults instead).

use assert_cmd::cargo::cargo_bin;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `sim serve`, killed when dropped.
pub struct SimServer {
    child: Child,
    /// The port it serves on (127.0.0.1).
    pub port: u16,
    /// Its base URL, e.g. `http://127.0.0.1:41234`.
    pub url: String,
}

impl SimServer {
    /// Starts `infertune sim serve` with `args` (card, model, time scale, …; the port is
    /// added) and waits up to 30 s for `GET /health` to answer 200.
    pub fn start(args: &[&str]) -> SimServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(cargo_bin("infertune"))
            .args(["sim", "serve"])
            .args(args)
            .args(["--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = SimServer {
            child,
            port,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&format!("127.0.0.1:{port}"), "/health").is_none_or(|r| !is_ok(&r)) {
            assert!(
                Instant::now() < deadline,
                "sim serve did not become healthy on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// One HTTP/1.1 request line `head` with the JSON `body`; the whole raw response.
    pub fn request(&self, head: &str, body: &str) -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        write!(
            stream,
            "{head}\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        Ok(String::from_utf8_lossy(&raw).into_owned())
    }

    /// `GET path`: the whole raw response.
    pub fn get(&self, path: &str) -> std::io::Result<String> {
        self.request(&format!("GET {path} HTTP/1.1"), "")
    }

    /// `POST path` with `body`: the whole raw response.
    pub fn post(&self, path: &str, body: &serde_json::Value) -> String {
        self.request(&format!("POST {path} HTTP/1.1"), &body.to_string())
            .unwrap()
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        // The test started this child; stop it by its own pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when the raw `response` is a `200 OK`.
pub fn is_ok(response: &str) -> bool {
    response.starts_with("HTTP/1.1 200")
}

/// A plain HTTP/1.1 `GET path` of the server at `authority` (`host:port`), within 2 s; the whole
/// raw response, or `None` when nothing answers.
pub fn get(authority: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}
