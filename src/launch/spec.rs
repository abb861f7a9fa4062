//! What to start, and how to tell that it serves.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Everything needed to start one server, built by an engine adapter from a config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// Program to execute (first argv element; `numactl` when a binding is set).
    pub program: String,
    /// Remaining argv.
    pub args: Vec<String>,
    /// Environment added to the inherited one.
    pub env: BTreeMap<String, String>,
    /// Files written before the spawn (e.g. MindIE's config.json).
    pub files: Vec<FileToWrite>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Address the server listens on.
    pub host: String,
    /// Port the server listens on.
    pub port: u16,
    /// How readiness is checked.
    pub readiness: Readiness,
}

/// A file the launch writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileToWrite {
    /// Destination path.
    pub path: PathBuf,
    /// Full contents.
    pub contents: String,
}

/// Readiness = health 200 AND `/v1/models` lists the model AND a 1-token completion succeeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Readiness {
    /// Health endpoint path, e.g. `/health`.
    pub health_path: String,
    /// Model name that `/v1/models` must list.
    pub served_model: String,
    /// Endpoint used for the 1-token completion.
    pub api: ReadyRequest,
    /// Use https (MindIE with httpsEnabled).
    pub https: bool,
    /// A file the launch itself writes once its own start-up checks pass (a launcher that
    /// starts the server in several steps, e.g. XInference's every model replica loaded);
    /// checked before the three requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_file: Option<PathBuf>,
}

impl Readiness {
    /// Health 200 at `/health`, `/v1/models` listing `served_model`, a 1-token chat
    /// completion, over plain http.
    pub fn chat(served_model: &str) -> Readiness {
        Readiness {
            health_path: "/health".into(),
            served_model: served_model.into(),
            api: ReadyRequest::Chat,
            https: false,
            ready_file: None,
        }
    }
}

/// The endpoint of the 1-token request that proves a server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadyRequest {
    /// `/v1/chat/completions` with one message.
    Chat,
    /// `/v1/completions` with a prompt.
    Completions,
}
