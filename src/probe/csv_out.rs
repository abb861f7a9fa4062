//! Per-request CSV rows for `infertune bench --csv`.

use super::RequestRecord;
use crate::record::Latency;
use anyhow::{Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The columns before the latencies, which follow in [`Latency::ALL`] order.
const HEADER: [&str; 11] = [
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
];

/// The column of `latency`: `ttft_ms`, ..., and `itl_max_ms` (a request's largest gap).
fn column(latency: Latency) -> String {
    if latency.per_request() {
        format!("{latency}_ms")
    } else {
        format!("{latency}_max_ms")
    }
}

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
        let header = HEADER
            .map(str::to_string)
            .into_iter()
            .chain(Latency::ALL.map(column));
        writer
            .write_record(header)
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
        let fields = [
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
        ];
        let latencies = Latency::ALL.map(|l| ms(r.latency(l)));
        let row = fields.into_iter().chain(latencies);
        if let Err(e) = self.writer.write_record(row) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_columns_keep_their_names() {
        assert_eq!(
            Latency::ALL.map(column),
            [
                "ttft_ms",
                "ttft_queued_ms",
                "tpot_ms",
                "itl_max_ms",
                "e2el_ms"
            ]
        );
    }
}
