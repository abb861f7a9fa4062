//! Per-request CSV rows for `infertune bench --csv`.

use super::RequestRecord;
use anyhow::{Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const HEADER: [&str; 16] = [
    "run",
    "index",
    "ok",
    "error_kind",
    "http_status",
    "error",
    "start_s",
    "input_tokens",
    "output_tokens",
    "output_tokens_source",
    "token_events",
    "ttft_ms",
    "ttft_queued_ms",
    "tpot_ms",
    "itl_max_ms",
    "e2el_ms",
];

/// A CSV file being written; the first write error is kept and reported by `finish`.
pub(crate) struct CsvOut {
    path: PathBuf,
    writer: csv::Writer<File>,
    error: Option<csv::Error>,
}

impl CsvOut {
    /// Creates `path` and writes the header.
    pub fn create(path: &Path) -> Result<Self> {
        let mut writer = csv::Writer::from_path(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        writer
            .write_record(HEADER)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(CsvOut {
            path: path.to_path_buf(),
            writer,
            error: None,
        })
    }

    /// Appends one request of run `run`; `epoch` is the run's start.
    pub fn row(&mut self, run: &str, epoch: Instant, r: &RequestRecord) {
        if self.error.is_some() {
            return;
        }
        let ms = |d: Option<Duration>| {
            d.map(|d| format!("{:.3}", d.as_secs_f64() * 1000.0))
                .unwrap_or_default()
        };
        let error = r.error.as_ref();
        let row = [
            run.to_string(),
            r.index.to_string(),
            r.ok().to_string(),
            error.map(|e| e.kind.name().to_string()).unwrap_or_default(),
            error
                .and_then(|e| e.status)
                .map(|s| s.to_string())
                .unwrap_or_default(),
            error.map(|e| e.message.clone()).unwrap_or_default(),
            format!(
                "{:.6}",
                r.start.saturating_duration_since(epoch).as_secs_f64()
            ),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.output_source.name().to_string(),
            r.token_events.to_string(),
            ms(r.ttft()),
            ms(r.ttft_queued()),
            ms(r.tpot()),
            ms(r.itl.iter().max().copied()),
            ms(Some(r.e2el())),
        ];
        if let Err(e) = self.writer.write_record(&row) {
            self.error = Some(e);
        }
    }

    /// Flushes the file; reports the first error.
    pub fn finish(mut self) -> Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e).with_context(|| format!("cannot write {}", self.path.display()));
        }
        self.writer
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}
