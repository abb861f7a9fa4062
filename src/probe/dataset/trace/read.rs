//! Reads a trace file one line at a time; every error names the file and line.

use crate::probe::workload::TraceFormat;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// One request of a trace.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TraceRow {
    /// Line of the file (1-based).
    pub line: usize,
    /// Seconds after the trace's first request.
    pub at: f64,
    /// Prompt tokens.
    pub input: u32,
    /// Generated tokens.
    pub output: u32,
    /// Ids of the prompt's 512-token blocks (Mooncake), empty when the trace has none.
    pub blocks: Vec<u64>,
}

/// The rows of a trace file, streamed in order.
pub(crate) struct TraceRows {
    reader: BufReader<File>,
    path: PathBuf,
    format: TraceFormat,
    line: usize,
    origin: Option<f64>,
    last: f64,
    buf: String,
}

const AZURE_HEADER: &str = "TIMESTAMP,ContextTokens,GeneratedTokens";

/// A JSONL row; Mooncake's timestamp is in ms, the generic format's in seconds.
#[derive(Deserialize)]
struct JsonRow {
    timestamp: f64,
    input_length: u32,
    output_length: u32,
    #[serde(default)]
    hash_ids: Option<Vec<u64>>,
}

impl TraceRows {
    /// Opens `path`; an Azure CSV must start with its header.
    pub fn open(path: &Path, format: TraceFormat) -> Result<Self> {
        let file = File::open(path)
            .with_context(|| format!("cannot open trace file {}", path.display()))?;
        let mut rows = TraceRows {
            reader: BufReader::new(file),
            path: path.to_path_buf(),
            format,
            line: 0,
            origin: None,
            last: 0.0,
            buf: String::new(),
        };
        if format == TraceFormat::Azure {
            match rows.read_line()? {
                Some(header) if header.trim() == AZURE_HEADER => {}
                _ => bail!(
                    "{}:1: an Azure trace starts with the header `{AZURE_HEADER}` (is this the \
                     right --trace-format?)",
                    path.display()
                ),
            }
        }
        Ok(rows)
    }

    /// The next line, without its end; `None` at the end of the file.
    fn read_line(&mut self) -> Result<Option<String>> {
        self.buf.clear();
        let n = self
            .reader
            .read_line(&mut self.buf)
            .with_context(|| format!("{}:{}: cannot read", self.path.display(), self.line + 1))?;
        self.line += 1;
        Ok((n > 0).then(|| self.buf.trim_end_matches(['\n', '\r']).to_string()))
    }

    fn parse(&self, text: &str) -> Result<(f64, u32, u32, Vec<u64>), String> {
        match self.format {
            TraceFormat::Azure => parse_azure(text),
            TraceFormat::Mooncake | TraceFormat::Jsonl => {
                let row: JsonRow = serde_json::from_str(text).map_err(|e| {
                    format!(
                        "not a trace row ({e}); expected {{\"timestamp\", \"input_length\", \
                         \"output_length\"{}}}",
                        if self.format == TraceFormat::Mooncake {
                            ", \"hash_ids\""
                        } else {
                            ""
                        }
                    )
                })?;
                let seconds = match self.format {
                    TraceFormat::Mooncake => row.timestamp / 1000.0,
                    _ => row.timestamp,
                };
                let blocks = match (row.hash_ids, self.format) {
                    (Some(ids), _) => ids,
                    (None, TraceFormat::Mooncake) => {
                        return Err("a Mooncake row needs `hash_ids`".into())
                    }
                    (None, _) => Vec::new(),
                };
                Ok((seconds, row.input_length, row.output_length, blocks))
            }
        }
    }
}

impl Iterator for TraceRows {
    type Item = Result<TraceRow>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let text = match self.read_line() {
                Ok(Some(text)) => text,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            if text.trim().is_empty() {
                continue;
            }
            let at = |m: String| anyhow::anyhow!("{}:{}: {m}", self.path.display(), self.line);
            let (time, input, output, blocks) = match self.parse(&text) {
                Ok(row) => row,
                Err(m) => return Some(Err(at(m))),
            };
            if !time.is_finite() {
                return Some(Err(at(format!("timestamp {time} is not a number"))));
            }
            let origin = *self.origin.get_or_insert(time);
            let offset = time - origin;
            if offset < self.last {
                return Some(Err(at(format!(
                    "timestamps must not decrease ({offset:.3} s after the first request comes \
                     after {:.3} s); sort the trace by time",
                    self.last
                ))));
            }
            if input == 0 || output == 0 {
                return Some(Err(at(
                    "input and output lengths must be at least 1 token".into()
                )));
            }
            self.last = offset;
            return Some(Ok(TraceRow {
                line: self.line,
                at: offset,
                input,
                output,
                blocks,
            }));
        }
    }
}

/// `2023-11-16 18:15:46.6805900,374,44` → (seconds since 1970, input, output).
fn parse_azure(text: &str) -> Result<(f64, u32, u32, Vec<u64>), String> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    let [time, input, output] = fields[..] else {
        return Err(format!(
            "expected 3 fields `{AZURE_HEADER}`, got {}",
            fields.len()
        ));
    };
    let number = |name: &str, v: &str| {
        v.parse::<u32>()
            .map_err(|_| format!("{name} must be a whole number of tokens, got `{v}`"))
    };
    let seconds = azure_time(time).ok_or_else(|| {
        format!("TIMESTAMP must look like `2023-11-16 18:15:46.6805900`, got `{time}`")
    })?;
    Ok((
        seconds,
        number("ContextTokens", input)?,
        number("GeneratedTokens", output)?,
        Vec::new(),
    ))
}

/// Seconds since 1970-01-01 of `YYYY-MM-DD HH:MM:SS[.fraction]` (UTC).
fn azure_time(text: &str) -> Option<f64> {
    let (date, time) = text.split_once(' ')?;
    let mut ymd = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let mut hms = time.split(':');
    let h: i64 = hms.next()?.parse().ok()?;
    let min: i64 = hms.next()?.parse().ok()?;
    let s: f64 = hms.next()?.parse().ok()?;
    let valid = (1..=12).contains(&m) && (1..=31).contains(&d) && h < 24 && min < 60 && s < 61.0;
    valid.then(|| (days_from_civil(y, m, d) * 86_400 + h * 3600 + min * 60) as f64 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn azure_rows_are_seconds_after_the_first() {
        let f = file(&format!(
            "{AZURE_HEADER}\n2023-11-16 23:59:59.5,10,2\n2023-11-17 00:00:01.0,20,3\n"
        ));
        let rows: Vec<TraceRow> = TraceRows::open(f.path(), TraceFormat::Azure)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), 2);
        assert!((rows[1].at - 1.5).abs() < 1e-9, "{}", rows[1].at);
        assert_eq!((rows[1].input, rows[1].output, rows[1].line), (20, 3, 3));
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn a_malformed_line_is_named_by_file_and_line() {
        let f = file(&format!(
            "{AZURE_HEADER}\n2023-11-16 18:15:46.1,10,2\n2023-11-16 18:15:47.1,ten,2\n"
        ));
        let mut rows = TraceRows::open(f.path(), TraceFormat::Azure).unwrap();
        assert!(rows.next().unwrap().is_ok());
        let error = rows.next().unwrap().unwrap_err().to_string();
        assert!(
            error.contains(&format!("{}:3:", f.path().display())),
            "{error}"
        );
        assert!(error.contains("ContextTokens"), "{error}");
        let moon = file("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n");
        let error = TraceRows::open(moon.path(), TraceFormat::Mooncake)
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(":1:") && error.contains("hash_ids"),
            "{error}"
        );
        let backwards = file(
            "{\"timestamp\": 2, \"input_length\": 5, \"output_length\": 1}\n\
             {\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1}\n",
        );
        let error = TraceRows::open(backwards.path(), TraceFormat::Jsonl)
            .unwrap()
            .nth(1)
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(":2:") && error.contains("decrease"),
            "{error}"
        );
    }

    #[test]
    fn a_csv_without_the_header_is_refused() {
        let f = file("2023-11-16 18:15:46.1,10,2\n");
        let error = TraceRows::open(f.path(), TraceFormat::Azure)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains(":1:") && error.contains("header"), "{error}");
    }
}
