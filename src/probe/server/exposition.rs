//! The Prometheus text exposition format (what `/metrics` serves), read into metric name →
//! the values of its series.
//!
//! Hand-written: the most used parser crate (`prometheus-parse` 0.2) matches names with `\w+`,
//! so it drops every sample named with a colon (all of vLLM's `vllm:…`, SGLang's `sglang:…`
//! and llama.cpp's `llamacpp:…`); the OpenMetrics parser crate is LGPL-3.0; the rest have one
//! release. The format's sample line is small: `name{label="v",…} value [timestamp]`.

use std::collections::BTreeMap;

/// One scrape: each metric's series values, in order of appearance. Histogram and summary
/// series appear under their sample names (`x_bucket`, `x_sum`, `x_count`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Exposition {
    series: BTreeMap<String, Vec<f64>>,
}

/// A sample line that cannot be read.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("/metrics line {line}: {why} in `{text}` (expected `name{{label=\"value\"}} number`)")]
pub(crate) struct ExpositionError {
    line: usize,
    why: &'static str,
    text: String,
}

impl Exposition {
    /// Parse a text exposition; comments (`# HELP`, `# TYPE`, `# EOF`) and blank lines are
    /// skipped.
    pub(crate) fn parse(text: &str) -> Result<Exposition, ExpositionError> {
        let mut series: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |why| ExpositionError {
                line: index + 1,
                why,
                text: line.chars().take(120).collect(),
            };
            let name_end = line
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(line.len());
            if name_end == 0 {
                return Err(fail("no metric name"));
            }
            let rest = &line[name_end..];
            let rest = if rest.starts_with('{') {
                &rest[labels_end(rest).ok_or_else(|| fail("unclosed `{`"))?..]
            } else {
                rest
            };
            let value = rest
                .split_whitespace()
                .next()
                .ok_or_else(|| fail("no value"))?;
            let value = parse_value(value).ok_or_else(|| fail("the value is not a number"))?;
            series
                .entry(line[..name_end].to_string())
                .or_default()
                .push(value);
        }
        Ok(Exposition { series })
    }

    /// The sum over `name`'s series (counters and counts add up across engines or models);
    /// `None` when it has no sample.
    pub(crate) fn value(&self, name: &str) -> Option<f64> {
        self.series.get(name).map(|values| values.iter().sum())
    }

    /// The mean over `name`'s series (for fractions such as a cache usage).
    pub(crate) fn mean(&self, name: &str) -> Option<f64> {
        let values = self.series.get(name)?;
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }

    /// True when the exposition has a sample of `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.series.contains_key(name)
    }
}

/// The byte just past the `}` closing the label set `rest` starts with, skipping quoted
/// values (which may hold `}` and escaped quotes).
fn labels_end(rest: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(i + 1),
            _ => {}
        }
    }
    None
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_series_are_summed_and_lookalike_names_kept_apart() {
        let text = "\
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine=\"0\",model_name=\"tiny\"} 30.0
vllm:generation_tokens_created{engine=\"0\",model_name=\"tiny\"} 1.7e9
vllm:generation_tokens_total{engine=\"1\",model_name=\"a}b \\\"q\\\"\"} 12.0
plain_total 5 1700000000000
plain_total_created 9
gauge_inf +Inf
";
        let e = Exposition::parse(text).unwrap();
        assert_eq!(e.value("vllm:generation_tokens_total"), Some(42.0));
        assert_eq!(e.mean("vllm:generation_tokens_total"), Some(21.0));
        assert_eq!(e.value("plain_total"), Some(5.0));
        assert_eq!(e.value("gauge_inf"), Some(f64::INFINITY));
        assert_eq!(e.value("vllm:prompt_tokens_total"), None);
        assert!(!e.has("plain"));
    }

    #[test]
    fn a_malformed_sample_names_its_line() {
        let err = Exposition::parse("# ok\nx 1\ny{a=\"1\" 2\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.to_string().contains("line 3: unclosed `{`"), "{err}");
        let err = Exposition::parse("x one\n").unwrap_err();
        assert!(err.to_string().contains("not a number"), "{err}");
        let err = Exposition::parse("x\n").unwrap_err();
        assert!(err.to_string().contains("no value"), "{err}");
    }
}
