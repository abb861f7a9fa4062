//! Journals written before violations were typed store each one as its display text
//! (`ttft:p99<=2000ms (was 3120ms)`). They are read back once, here, so old studies resume;
//! nothing else ever parses a violation's text.

use super::{Slo, Violation};
use serde::{Deserialize, Deserializer};

/// A stored violation: the typed form, or the text of an older journal.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Typed(Violation),
    Text(String),
}

/// Reads a record's violations in either form.
pub(super) fn violations<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Violation>, D::Error> {
    let stored = Vec::<Stored>::deserialize(d)?;
    Ok(stored
        .into_iter()
        .map(|v| match v {
            Stored::Typed(v) => v,
            Stored::Text(text) => from_text(&text),
        })
        .collect())
}

fn from_text(text: &str) -> Violation {
    if let Some(message) = text.strip_prefix("objective: ") {
        return Violation::Objective {
            message: message.to_string(),
        };
    }
    match text {
        "no request completed" => return Violation::NothingCompleted,
        "pending" => return Violation::Pending,
        _ => {}
    }
    let (slo_text, detail) = match text.split_once(" (") {
        Some((slo, rest)) => (slo, rest.strip_suffix(')')),
        None => (text, None),
    };
    match slo_text.parse::<Slo>() {
        Ok(slo) => {
            let measured = detail
                .and_then(|d| d.strip_prefix("was "))
                .and_then(|d| measured_in_unit(&slo, d));
            Violation::Slo { slo, measured }
        }
        Err(_) => Violation::Pruned {
            reason: text.to_string(),
        },
    }
}

/// Inverse of [`Slo::format_value`].
fn measured_in_unit(slo: &Slo, text: &str) -> Option<f64> {
    if slo.is_latency() {
        text.strip_suffix("ms")?.parse().ok()
    } else if slo.metric == "error_rate" {
        text.strip_suffix('%')?
            .parse::<f64>()
            .ok()
            .map(|p| p / 100.0)
    } else {
        text.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_texts_become_typed_violations() {
        let v = from_text("tpot:p99<=50ms (was 52.5ms)");
        assert_eq!(
            v,
            Violation::Slo {
                slo: "tpot:p99<=50ms".parse().unwrap(),
                measured: Some(52.5)
            }
        );
        assert_eq!(v.to_string(), "tpot:p99<=50ms (was 52.5ms)");
        let rate = from_text("error_rate<=1% (was 12.5%)");
        assert_eq!(rate.to_string(), "error_rate<=1% (was 12.5%)");
        for text in [
            "ttft:p99<=2000ms (not measured)",
            "objective: no metric `x`",
            "no request completed",
            "ttft:p99<=2000ms certainly broken: 3 of at most 8 requests already above 2000ms",
        ] {
            assert_eq!(from_text(text).to_string(), text);
        }
        assert!(matches!(
            from_text("ttft:p99<=2000ms certainly broken: 3 of 8"),
            Violation::Pruned { .. }
        ));
    }
}
