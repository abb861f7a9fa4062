//! Classify a failed start from how the process ended and what it logged, keeping the
//! root-cause line (the first, innermost error) rather than the wrappers printed after it.
//!
//! What marks a failure in one engine's log is data ([`LogPatterns`]) from that engine's
//! folder under `engine/`; a log is read with every engine's patterns, since a custom command
//! may run any engine.

use super::{Exit, StartFailure};
use crate::record::FailureKind;
use std::fmt;

/// How a server process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exited with this status code.
    Code(i32),
    /// Killed by this signal number.
    Signal(i32),
}

impl From<std::process::ExitStatus> for Ending {
    fn from(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Ending::Code(code),
            (None, Some(signal)) => Ending::Signal(signal),
            (None, None) => Ending::Code(-1),
        }
    }
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Code(code) => write!(f, "exited with status {code}"),
            Ending::Signal(signal) => write!(f, "killed by {}", signal_name(*signal)),
        }
    }
}

/// What one engine's log says when it fails to start.
#[derive(Debug)]
pub struct LogPatterns {
    /// Substrings that mark an out-of-memory failure (accelerator memory or KV-cache room).
    pub oom: &'static [&'static str],
    /// Command-line refusals of the engine's own argument parser, each starting `error: `;
    /// the usage text that follows them is a wrapper.
    pub arg_refusals: &'static [&'static str],
    /// Prefixes of the engine's error lines (as `llama_error` reads them) that refuse the
    /// config.
    pub config_checks: &'static [&'static str],
}

/// Python argparse refusals, whichever engine parses with it. The usage text and "For more
/// information, try '--help'." that follow them are wrappers.
const ARGPARSE_MARKERS: &[&str] = &[
    "error: argument ",
    "error: unrecognized arguments",
    "error: the following arguments are required",
];

/// Substrings that mark a port another process holds (matched ignoring case).
const PORT_BUSY_MARKERS: &[&str] = &["address already in use", "eaddrinuse"];

/// Lines that only wrap an error printed earlier.
const WRAPPERS: &[&str] = &["See root cause above", "initialization failed"];

/// Classify a server that ended before it was ready, reading `log` with `patterns`.
pub fn classify(ending: Ending, log: &str, patterns: &[&LogPatterns]) -> StartFailure {
    if let Some(found) = diagnose(log, patterns) {
        return found;
    }
    let detail = first_exception(log).or_else(|| last_line(log));
    let (kind, mut message) = match ending {
        Ending::Signal(_) => (FailureKind::Crash, ending.to_string()),
        Ending::Code(0) => (
            FailureKind::Unknown,
            format!("{ending} before it was ready"),
        ),
        Ending::Code(_) => (FailureKind::Unknown, ending.to_string()),
    };
    if let Some(detail) = detail {
        message = format!("{message}: {detail}");
    }
    StartFailure { kind, message }
}

/// How a server that had been serving ended: `ending` and the root-cause line of `log`, found
/// as for a failed start (a known failure's message, else the first exception, else the last
/// line).
pub fn exit(ending: Ending, log: &str, patterns: &[&LogPatterns]) -> Exit {
    let cause = diagnose(log, patterns)
        .map(|found| found.message)
        .or_else(|| first_exception(log))
        .or_else(|| last_line(log));
    Exit {
        ending: ending.to_string(),
        cause,
    }
}

/// The first line of `log` that shows an out-of-memory, port-busy or invalid-config failure,
/// as that failure with its message (the error text without log prefixes or pydantic
/// decoration).
pub fn diagnose(log: &str, patterns: &[&LogPatterns]) -> Option<StartFailure> {
    let lines: Vec<&str> = log.lines().collect();
    lines.iter().enumerate().find_map(|(i, line)| {
        let rest = &lines[i + 1..];
        if patterns
            .iter()
            .flat_map(|p| p.oom)
            .any(|m| line.contains(m))
        {
            return Some(failure(FailureKind::Oom, error_text(line, rest)));
        }
        let lower = line.to_ascii_lowercase();
        if PORT_BUSY_MARKERS.iter().any(|m| lower.contains(m)) {
            return Some(failure(FailureKind::PortBusy, error_text(line, rest)));
        }
        invalid_config(line, rest, patterns).map(|m| failure(FailureKind::InvalidConfig, m))
    })
}

fn failure(kind: FailureKind, message: String) -> StartFailure {
    StartFailure { kind, message }
}

fn invalid_config(line: &str, rest: &[&str], patterns: &[&LogPatterns]) -> Option<String> {
    let mut checks = patterns.iter().flat_map(|p| p.config_checks);
    if let Some(msg) = llama_error(line).filter(|m| checks.any(|c| m.starts_with(c))) {
        return Some(msg.to_string());
    }
    if let Some((_, msg)) = line.split_once("Value error, ") {
        return Some(strip_pydantic(msg));
    }
    if line.contains("validation error for ") {
        let mut detail = rest
            .iter()
            .map(|l| strip_log_prefix(l))
            .filter(|l| !l.is_empty());
        let field = detail.next()?;
        if field.starts_with("Value error, ") {
            return Some(strip_pydantic(field));
        }
        let msg = detail.next().map(strip_pydantic).unwrap_or_default();
        return Some(format!("{field}: {msg}"));
    }
    if let Some((name, msg)) = exception(line) {
        if name.ends_with("ValueError") {
            return Some(continued(msg, rest));
        }
    }
    let engines = patterns.iter().flat_map(|p| p.arg_refusals);
    let at = ARGPARSE_MARKERS
        .iter()
        .chain(engines)
        .find_map(|m| line.find(m))?;
    let refusal = line[at + "error: ".len()..].trim();
    // clap follows a misspelt flag with `tip: a similar argument exists: '--x'`.
    let tip = rest
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .filter(|l| l.starts_with("tip: "));
    Some(match tip {
        Some(tip) => format!("{refusal}; {tip}"),
        None => refusal.to_string(),
    })
}

/// `Value error, X [type=value_error, …]` → `X`.
fn strip_pydantic(msg: &str) -> String {
    let msg = msg.trim();
    let msg = msg.strip_prefix("Value error, ").unwrap_or(msg);
    msg.split(" [type=")
        .next()
        .unwrap_or(msg)
        .trim()
        .to_string()
}

/// The message of an exception line, or the line without its log prefix.
fn error_text(line: &str, rest: &[&str]) -> String {
    match exception(line) {
        Some((_, msg)) => continued(msg, rest),
        None => strip_log_prefix(line).to_string(),
    }
}

/// An empty exception message continues on the next non-empty line.
fn continued(msg: &str, rest: &[&str]) -> String {
    if !msg.trim().is_empty() {
        return msg.trim().to_string();
    }
    rest.iter()
        .map(|l| strip_log_prefix(l))
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

/// `… ValueError: msg` → `("ValueError", "msg")`; the name may be dotted
/// (`torch.OutOfMemoryError`). Matches `…Error: ` and `…Exception: `.
fn exception(line: &str) -> Option<(&str, &str)> {
    let mut search = 0;
    while let Some(at) = line[search..].find(':').map(|i| i + search) {
        let head = &line[..at];
        let start = head
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |i| i + 1);
        let name = &head[start..];
        let after = &line[at + 1..];
        let named = (name.ends_with("Error") || name.ends_with("Exception"))
            && name.starts_with(|c: char| c.is_alphabetic());
        if named && (after.is_empty() || after.starts_with(' ')) {
            return Some((name, after.trim_start()));
        }
        search = at + 1;
    }
    None
}

/// Drop vLLM-style prefixes: `(EngineCore pid=1) ERROR 11-22 10:00:00 [core.py:700] msg` → `msg`.
fn strip_log_prefix(line: &str) -> &str {
    let mut trimmed = line.trim();
    if trimmed.starts_with('(') {
        if let Some(end) = trimmed
            .find(") ")
            .filter(|&e| trimmed[..e].contains("pid="))
        {
            trimmed = trimmed[end + 2..].trim();
        }
    }
    if let Some(src) = trimmed.find(".py:") {
        if let Some(end) = trimmed[src..].find("] ") {
            return trimmed[src + end + 2..].trim();
        }
    }
    trimmed
}

/// The first error line: an exception, a llama.cpp error (`0.00.031.750 E func: msg`) or a
/// native abort (`…/llama-context.cpp:2273: GGML_ASSERT(…) failed`).
fn first_exception(log: &str) -> Option<String> {
    log.lines()
        .filter(|l| !WRAPPERS.iter().any(|w| l.contains(w)))
        .find_map(|l| {
            exception(l)
                .map(|_| strip_log_prefix(l))
                .or_else(|| llama_error(l))
                .or_else(|| native_abort(l))
                .map(str::to_string)
        })
}

/// `0.00.031.750 E llama_init_from_model: msg` or `0.00.038.293 E cmn  common_init_: msg` (a
/// llama.cpp error line: timestamp, level `E`, an optional component tag) → from the
/// function name on.
fn llama_error(line: &str) -> Option<&str> {
    let (stamp, rest) = line.split_once(' ')?;
    let is_stamp = !stamp.is_empty() && stamp.chars().all(|c| c.is_ascii_digit() || c == '.');
    let rest = rest.strip_prefix("E ")?;
    if !is_stamp {
        return None;
    }
    let rest = rest.trim_start();
    let message = match rest.split_once(' ') {
        Some((tag, after)) if !tag.ends_with(':') && tag.len() <= 4 => after.trim_start(),
        _ => rest,
    };
    Some(message.trim_end())
}

/// `/src/llama-context.cpp:2273: GGML_ASSERT(x) failed` (a C or C++ abort: source file, line,
/// message) → the message.
fn native_abort(line: &str) -> Option<&str> {
    [".cpp:", ".c:", ".h:"].iter().find_map(|ext| {
        let at = line.find(ext)? + ext.len();
        let (digits, message) = line[at..].split_once(": ")?;
        let numbered = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit());
        (numbered && !message.trim().is_empty()).then(|| message.trim())
    })
}

fn last_line(log: &str) -> Option<String> {
    log.lines()
        .rev()
        .map(strip_log_prefix)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

fn signal_name(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(s) => format!("{} ({signal})", s.as_str()),
        Err(_) => format!("signal {signal}"),
    }
}
