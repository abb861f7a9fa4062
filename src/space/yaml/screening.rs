//! `search.screening`: `true`, `false`, or `{fraction, keep, promote_in_place}` (any may be left
//! out).

use crate::space::error::Pos;
use crate::space::ScreeningSettings;
use serde_json::Value;
use serde_saphyr::Spanned;

/// The screening settings `raw` asks for (`None`: off), or where and why it is wrong.
pub(super) fn screening(
    raw: Option<Spanned<Value>>,
) -> Result<Option<ScreeningSettings>, (Pos, String)> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let at = Pos::of(&raw.referenced);
    let fields = match raw.value {
        Value::Bool(false) | Value::Null => return Ok(None),
        Value::Bool(true) => return Ok(Some(ScreeningSettings::default())),
        Value::Object(fields) => fields,
        other => {
            return Err((
                at,
                format!(
                    "search.screening: `{other}` is not a setting; write `true` (a quarter of the \
                     probe, the best third go on) or e.g. `{{fraction: 0.25, keep: 0.34}}`"
                ),
            ))
        }
    };
    let mut settings = ScreeningSettings::default();
    for (key, value) in fields {
        if key == "promote_in_place" {
            settings.in_place = value.as_bool().ok_or_else(|| {
                (
                    at,
                    format!("search.screening.promote_in_place is `{value}`; write true or false"),
                )
            })?;
            continue;
        }
        // A screening run shorter than the probe; at least one config kept.
        let (slot, one_allowed) = match key.as_str() {
            "fraction" => (&mut settings.fraction, false),
            "keep" => (&mut settings.keep, true),
            other => {
                return Err((
                    at,
                    format!(
                        "search.screening: unknown key `{other}`; the keys are `fraction` (share \
                         of the probe a screening run sends), `keep` (share of screened configs \
                         that run the full probe) and `promote_in_place` (true: they go on to it \
                         on the screening run's server)"
                    ),
                ))
            }
        };
        let v = value
            .as_f64()
            .filter(|v| *v > 0.0 && (*v < 1.0 || (one_allowed && *v == 1.0)));
        let Some(v) = v else {
            let range = if one_allowed { "(0, 1]" } else { "(0, 1)" };
            return Err((
                at,
                format!("search.screening.{key} is `{value}`; it must be a number in {range}"),
            ));
        };
        *slot = v;
    }
    Ok(Some(settings))
}
