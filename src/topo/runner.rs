//! External tools (`nvidia-smi`, `npu-smi`, `mx-smi`, `numactl`) behind a small trait, so
//! discovery runs against the real host or against captured outputs.

use crate::util::process::{find_on_path, run_with_timeout};
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What running a tool gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolOutput {
    /// The program is not installed.
    Missing,
    /// It ran but failed (non-zero exit, timeout); the text says how.
    Failed(String),
    /// Its standard output.
    Stdout(String),
}

/// Runs external programs and finds them on the search path.
pub trait CommandRunner {
    /// Runs `program` with `args` and returns its standard output.
    fn run(&self, program: &str, args: &[&str]) -> ToolOutput;
    /// Where `program` is installed, if it is.
    fn locate(&self, program: &str) -> Option<PathBuf>;
}

/// Runs real programs found on `PATH`, each with a time limit (a wedged driver can hang `nvidia-smi`).
#[derive(Clone, Debug)]
pub(crate) struct SystemRunner {
    /// Longest a tool may run before it is killed.
    pub timeout: Duration,
}

impl Default for SystemRunner {
    fn default() -> Self {
        SystemRunner {
            timeout: Duration::from_secs(15),
        }
    }
}

impl CommandRunner for SystemRunner {
    fn run(&self, program: &str, args: &[&str]) -> ToolOutput {
        let Some(path) = self.locate(program) else {
            return ToolOutput::Missing;
        };
        match run_with_timeout(&path, args, self.timeout) {
            Ok(out) if out.status.success() => ToolOutput::Stdout(out.stdout),
            Ok(out) => {
                let reason = out
                    .stderr
                    .lines()
                    .chain(out.stdout.lines())
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                ToolOutput::Failed(format!("{}: {}", out.status, reason.trim()))
            }
            Err(e) => ToolOutput::Failed(e.to_string()),
        }
    }

    fn locate(&self, program: &str) -> Option<PathBuf> {
        find_on_path(program, std::env::var_os("PATH").as_deref())
    }
}

/// Captured tool outputs instead of real programs (tests, `infertune topo --root`).
///
/// A fixture folder holds transcripts: `*.txt` files whose first line is `$ <command line>`
/// and whose remaining lines are that command's output; an optional `installed.txt` lists
/// further programs present on the captured host (one a line), e.g. `numactl`.
#[derive(Clone, Debug, Default)]
pub struct FixtureRunner {
    outputs: BTreeMap<String, String>,
    installed: BTreeSet<String>,
}

impl FixtureRunner {
    /// A host with no tools at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the output of `command_line` (e.g. `mx-smi topo -m`); its program counts as installed.
    pub(crate) fn with_output(mut self, command_line: &str, stdout: &str) -> Self {
        let key = normalize(command_line);
        if let Some(program) = key.split(' ').next() {
            self.installed.insert(program.to_string());
        }
        self.outputs.insert(key, stdout.to_string());
        self
    }

    /// Marks `program` as installed without any captured output.
    pub fn with_program(mut self, program: &str) -> Self {
        self.installed.insert(program.to_string());
        self
    }

    /// Loads the transcripts of a fixture folder (see the type's documentation).
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let mut runner = Self::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("listing fixture folder {}", dir.display()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension() == Some(OsStr::new("txt")))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            if file.file_name() == Some(OsStr::new("installed.txt")) {
                for program in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    runner = runner.with_program(program);
                }
                continue;
            }
            let (first, rest) = text.split_once('\n').unwrap_or((text.as_str(), ""));
            let Some(command_line) = first.strip_prefix("$ ") else {
                bail!(
                    "{}: the first line must be `$ <command line>` naming the captured command",
                    file.display()
                );
            };
            runner = runner.with_output(command_line, rest);
        }
        Ok(runner)
    }
}

fn normalize(command_line: &str) -> String {
    command_line
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl CommandRunner for FixtureRunner {
    fn run(&self, program: &str, args: &[&str]) -> ToolOutput {
        let key = normalize(&format!("{program} {}", args.join(" ")));
        match self.outputs.get(&key) {
            Some(out) => ToolOutput::Stdout(out.clone()),
            None if self.installed.contains(program) => {
                ToolOutput::Failed(format!("no captured output for `{key}`"))
            }
            None => ToolOutput::Missing,
        }
    }

    fn locate(&self, program: &str) -> Option<PathBuf> {
        self.installed
            .contains(program)
            .then(|| Path::new("/usr/bin").join(program))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_runner_answers_by_command_line() {
        let runner = FixtureRunner::new().with_output("mx-smi topo  -m", "matrix\n");
        assert_eq!(
            runner.run("mx-smi", &["topo", "-m"]),
            ToolOutput::Stdout("matrix\n".into())
        );
        assert!(matches!(
            runner.run("mx-smi", &["--json"]),
            ToolOutput::Failed(_)
        ));
        assert_eq!(runner.run("npu-smi", &["info"]), ToolOutput::Missing);
        assert!(runner.locate("mx-smi").is_some());
        assert!(runner.locate("numactl").is_none());
    }

    #[test]
    fn system_runner_reports_missing_failed_and_output() {
        let runner = SystemRunner::default();
        assert_eq!(
            runner.run("surely-not-installed-xyz", &[]),
            ToolOutput::Missing
        );
        assert_eq!(
            runner.run("echo", &["hi"]),
            ToolOutput::Stdout("hi\n".into())
        );
        match runner.run("sh", &["-c", "echo broken >&2; exit 3"]) {
            ToolOutput::Failed(why) => assert!(why.contains("broken"), "{why}"),
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn system_runner_kills_a_hung_tool() {
        let runner = SystemRunner {
            timeout: Duration::from_millis(200),
        };
        match runner.run("sleep", &["30"]) {
            ToolOutput::Failed(why) => assert!(why.contains("timed out"), "{why}"),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    #[test]
    fn path_search_needs_an_executable_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tool"), "").unwrap();
        assert_eq!(find_on_path("tool", Some(dir.path().as_os_str())), None);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.path().join("tool"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_eq!(
            find_on_path("tool", Some(dir.path().as_os_str())),
            Some(dir.path().join("tool"))
        );
    }
}
