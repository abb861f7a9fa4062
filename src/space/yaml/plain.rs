//! The YAML library's messages in the space's terms: what is wrong in the file and how to fix
//! it, never a Rust type or one of the library's options.

use super::hint;
use crate::space::error::Pos;
use serde_saphyr::Error as YamlError;

/// The message for the errors the library words in its own terms; `None` for the others.
pub(super) fn explain(err: &YamlError, text: &str, at: Pos) -> Option<(Pos, String)> {
    let key = || hint::key_at(text, at);
    let message = match err {
        YamlError::DuplicateMappingKey { key: name, .. } => {
            let name = name.clone().or_else(key).unwrap_or_else(|| "a key".into());
            return Some((at, duplicate(text, at, &name)));
        }
        YamlError::NullIntoString { .. } => match key() {
            Some(k) => {
                format!("`{k}` has no value: write its text after `{k}:` or remove the line")
            }
            None => "a text value is missing here: write one or remove the entry".into(),
        },
        YamlError::RecursiveReferencesRequireWeakTypes { .. } => {
            "an anchor may not refer to itself: the alias `*name` inside the node marked `&name` \
             makes it endless; write the values out instead of the alias"
                .into()
        }
        YamlError::NonFiniteFloat { value, .. } => format!(
            "`{value}` is not a finite number: write a number such as 0.5 (`.nan` and `.inf` \
             are not accepted)"
        ),
        YamlError::Message { msg, .. } if msg.contains("untagged enum") => match key() {
            Some(k) => format!(
                "`{k}` must be one value here (true or false, a number or a text), not a list, \
                 a mapping or nothing"
            ),
            None => "a single value belongs here (true or false, a number or a text), not a list, \
                     a mapping or nothing"
                .into(),
        },
        YamlError::SerdeInvalidType {
            unexpected,
            expected,
            ..
        } => format!(
            "this is {}, but {} belongs here",
            found(unexpected),
            shape(expected)
        ),
        YamlError::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        } => format!(
            "{} is out of place: {} belongs here",
            found(unexpected),
            shape(expected)
        ),
        _ => return None,
    };
    Some((at, message))
}

/// A key written twice: where its first occurrence in the same mapping is.
fn duplicate(text: &str, at: Pos, name: &str) -> String {
    match hint::earlier_key(text, at, name) {
        Some(first) => format!(
            "`{name}` is written twice in the same mapping (first at line {first}): keep one, \
             or merge what the two say"
        ),
        None => format!("`{name}` is written twice in the same mapping: keep one"),
    }
}

/// What serde says it found, in YAML's words.
fn found(unexpected: &str) -> String {
    let (kind, rest) = unexpected.split_once(' ').unwrap_or((unexpected, ""));
    let what = match kind {
        "sequence" => "a list",
        "map" => "a mapping",
        "unit" => "nothing (an empty value)",
        "string" | "char" => "a text",
        "boolean" => "true or false",
        "integer" | "floating" => "a number",
        _ => return format!("`{unexpected}`"),
    };
    if rest.is_empty() || kind == "floating" && rest == "point" {
        what.to_string()
    } else {
        format!("{what} {}", rest.trim_start_matches("point "))
    }
}

/// What serde expected (a Rust type or a description), in YAML's words.
pub(super) fn shape(expected: &str) -> String {
    let e = expected.trim_start_matches("a ").trim_start_matches("an ");
    let words = match e {
        "bool" | "boolean" => "true or false",
        "u8" => "a whole number from 0 to 255",
        "u16" => "a whole number from 0 to 65535",
        "u32" => "a whole number from 0 to 4294967295",
        "u64" | "usize" => "a whole number from 0",
        "i8" | "i16" | "i32" | "i64" | "isize" | "integer" => "a whole number",
        "f32" | "f64" | "number" | "float" => "a number",
        "string" | "str" | "String" | "char" | "borrowed string" => "a text",
        "sequence" | "seq" | "Vec" => "a list (`- item` lines, or `[a, b]`)",
        "map" | "mapping" => "a mapping (`key: value` lines indented under it)",
        "option" => "a value",
        "unit" => "nothing",
        _ if e.starts_with("struct ") || e.starts_with("map ") => {
            "a mapping (`key: value` lines indented under it)"
        }
        _ if e.starts_with("sequence") => "a list (`- item` lines, or `[a, b]`)",
        _ if e.contains("duration") => "a duration such as 30s or 10m",
        _ if e.starts_with("enum ") || e.starts_with("variant") => "one of the names listed for it",
        _ => return format!("`{e}`"),
    };
    words.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_types_become_what_the_file_should_hold() {
        assert_eq!(shape("u16"), "a whole number from 0 to 65535");
        assert_eq!(shape("a boolean"), "true or false");
        assert!(shape("struct RawSearch").starts_with("a mapping"));
        assert_eq!(found("sequence"), "a list");
        assert_eq!(found("string \"x\""), "a text \"x\"");
        for text in [shape("u32"), shape("f64"), found("unit")] {
            assert!(!text.contains("u32") && !text.contains("f64") && !text.contains("unit"));
        }
    }
}
