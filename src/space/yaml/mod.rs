//! Reading a space file: YAML → raw structs (serde-saphyr, with locations) → a validated [`StudySpec`].

mod convert;
mod expand;
mod hint;
mod lines;
mod param;
mod plain;
mod raw;
mod secrets;
mod validate;

use super::error::{Pos, SpaceError};
use super::rules::RuleBook;
use super::StudySpec;
use crate::probe::WorkloadSpec;
use crate::util::did_you_mean;
use crate::util::files::read_limited;
use serde_saphyr::{DefaultMessageFormatter, Error as YamlError, MessageFormatter, Spanned};
use std::path::Path;

/// The largest space or workload file read; real ones are a few KiB.
const MAX_SPACE_BYTES: u64 = 1024 * 1024;

/// Reads, converts and validates the space file at `path`, its rules from `book`.
pub fn load(path: &Path, book: RuleBook) -> Result<StudySpec, SpaceError> {
    let file = path.display().to_string();
    let text = read_limited(path, MAX_SPACE_BYTES).map_err(|e| {
        SpaceError::at(
            &file,
            Pos { line: 0, column: 0 },
            format!("cannot read the space file: {e}"),
        )
    })?;
    let raw: raw::RawSpace =
        serde_saphyr::from_str(&text).map_err(|e| yaml_error(&file, &text, &e))?;
    let (space, spots) = convert::convert(&file, path, raw, book)?;
    validate::validate(&space, &spots)
        .map_err(|(pos, message)| SpaceError::at(&file, pos, message))?;
    Ok(space)
}

/// Reads the workload file at `path` (a space's `probe:` section on its own) as a space's
/// probe is read: the same parser messages and the same `${NAME}` expansion of its paths.
pub fn load_workload(path: &Path) -> Result<WorkloadSpec, SpaceError> {
    let file = path.display().to_string();
    let text = read_limited(path, MAX_SPACE_BYTES).map_err(|e| {
        SpaceError::at(
            &file,
            Pos::default(),
            format!("cannot read the workload file: {e}"),
        )
    })?;
    let raw: Spanned<WorkloadSpec> =
        serde_saphyr::from_str(&text).map_err(|e| yaml_error(&file, &text, &e))?;
    expand::probe_paths(raw, "").map_err(|(pos, message)| SpaceError::at(&file, pos, message))
}

/// Where each parameter of the space file at `path` is declared (its name), by name; empty
/// when the file cannot be read again.
pub(crate) fn parameter_positions(path: &Path) -> Vec<(String, Pos)> {
    let Ok(text) = read_limited(path, MAX_SPACE_BYTES) else {
        return Vec::new();
    };
    let Ok(raw) = serde_saphyr::from_str::<raw::RawSpace>(&text) else {
        return Vec::new();
    };
    raw.parameters
        .value
        .0
        .iter()
        .map(|(name, _)| (name.value.clone(), Pos::of(&name.referenced)))
        .collect()
}

/// Locations of the nodes that validation after conversion may point at.
#[derive(Default)]
pub(crate) struct Spots {
    /// The `parameters:` section.
    pub parameters: Pos,
    /// Each parameter's name.
    pub params: Vec<Pos>,
    /// Each parameter's `expr` (derived) or `when`, if any.
    pub param_exprs: Vec<Option<Pos>>,
    /// Each constraint's `expr`.
    pub constraints: Vec<Pos>,
    /// The `probe:` section.
    pub probe: Pos,
    /// The `objective:` section.
    pub objective: Pos,
}

fn yaml_error(file: &str, text: &str, err: &YamlError) -> SpaceError {
    let inner = err.without_snippet();
    let pos = inner.location().map(|l| Pos::of(&l)).unwrap_or_default();
    if let Some((pos, message)) = plain::explain(inner, text, pos) {
        return SpaceError::at(file, pos, message);
    }
    let mut message = DefaultMessageFormatter.format_message(inner).into_owned();
    let suggestion = match inner {
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => did_you_mean(field, expected),
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => did_you_mean(variant, expected),
        _ => None,
    };
    let explained = match inner {
        YamlError::InvalidScalar { ty, .. } => hint::wrong_shape(text, pos, &scalar_shape(ty)),
        YamlError::Unexpected {
            expected: "string scalar",
            ..
        } => Some(lines::one_value(text, pos)),
        YamlError::Unexpected { expected, .. } => {
            hint::wrong_shape(text, pos, &container_shape(expected))
                .or_else(|| (*expected == "mapping start").then(|| lines::not_a_key(text, pos)))
        }
        YamlError::MultipleDocuments { .. } => Some(lines::second_document(text, pos)),
        _ if message.starts_with("simple key expected") => Some(lines::not_a_key(text, pos)),
        _ if message.starts_with("mapping values are not allowed") => {
            Some(lines::key_inside_a_value(text, pos))
        }
        _ if message.contains("flow mapping") || message.contains("flow sequence") => {
            hint::unclosed(text, pos, &message)
        }
        _ => None,
    };
    if let Some(h) = suggestion {
        message.push_str(&format!("; did you mean `{h}`?"));
    } else if let Some((pos, message)) = explained {
        return SpaceError::at(file, pos, message);
    } else if let Some(ty) = message.strip_prefix("invalid ") {
        message = format!("invalid value: expected {} here", plain::shape(ty));
    }
    SpaceError::at(file, pos, message)
}

/// What a scalar of Rust type `ty` looks like in YAML.
fn scalar_shape(ty: &str) -> String {
    match ty {
        "char" => "one character".into(),
        _ => plain::shape(ty),
    }
}

/// What the parser's expected token (`mapping start`, `sequence start`) means in YAML.
fn container_shape(expected: &str) -> String {
    match expected {
        "mapping start" => "a mapping (`key: value` lines indented under it)".into(),
        "sequence start" => "a list (`- item` lines, or `[a, b]`)".into(),
        other => format!("a {other}"),
    }
}
