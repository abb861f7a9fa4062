//! The YAML parser's messages about a line that does not fit the file's layout (a line that is
//! no `key: value`, a key indented under a value, a second document, a list or a mapping where
//! one value belongs), said in the file's terms: which line, and what to write instead.

use super::hint::{indent, is_content, key_at, line};
use crate::space::error::Pos;

/// The longest part of a line quoted in a message.
const QUOTED: usize = 40;

/// For "simple key expected" and "expected mapping start" where no key is at `at`: line
/// `at.line` sits among `key: value` lines but is not one.
pub(super) fn not_a_key(text: &str, at: Pos) -> (Pos, String) {
    let here = line(text, at.line);
    let pos = Pos {
        line: at.line,
        column: indent(here) as u64 + 1,
    };
    let among = match parent(text, at.line) {
        Some((key, n)) => format!("it sits among the keys of `{key}` (line {n})"),
        None => "the top level of the file holds only `key: value` lines".into(),
    };
    let message = format!(
        "line {} (`{}`) is not a `key: value` line, but {among}: write it as `name: value` \
         (a space after the colon), or make it a comment by starting it with `#`",
        at.line,
        quoted(here)
    );
    (pos, message)
}

/// For "mapping values are not allowed": the `:` at `at` makes a key where YAML reads a value,
/// because the line is indented under a key that already has one or the value holds a `:`.
pub(super) fn key_inside_a_value(text: &str, at: Pos) -> (Pos, String) {
    let here = line(text, at.line);
    let start = Pos {
        line: at.line,
        column: indent(here) as u64 + 1,
    };
    let before: String = here
        .chars()
        .take(at.column.saturating_sub(1) as usize)
        .collect();
    if let Some(key) = key_at(text, start).filter(|_| before.contains(": ")) {
        let value = before.split_once(": ").map_or("", |(_, v)| v).trim();
        let rest = here[before.len()..].trim_end();
        let message = format!(
            "the value of `{key}` holds a `:` that YAML reads as a second key on the line: put \
             the value in quotes, as in `{key}: \"{}{}\"`, or remove the `:`",
            quoted(value),
            quoted(rest)
        );
        return (at, message);
    }
    let above = (1..at.line)
        .rev()
        .find(|&n| is_content(line(text, n)))
        .filter(|&n| indent(line(text, n)) < indent(here));
    let key = key_at(text, start).unwrap_or_else(|| quoted(here));
    let message = match above.and_then(|n| Some((key_at(text, first_of(text, n))?, n))) {
        Some((owner, n)) => format!(
            "`{key}:` is indented deeper than `{owner}` (line {n}), which already has a value, \
             so YAML reads this line as more of that value: indent `{key}` like `{owner}`, or \
             move it under the section it belongs to"
        ),
        None => format!(
            "`{key}:` cannot start here: YAML reads this line as more of the value above it; \
             indent it like the keys beside it"
        ),
    };
    (start, message)
}

/// For "multiple YAML documents": the `---` (or text after a `...`) that starts a second one.
pub(super) fn second_document(text: &str, at: Pos) -> (Pos, String) {
    let first_content = (1..=at.line).find(|&n| is_content(line(text, n)));
    let marker = (1..=at.line.max(1)).rev().find(|&n| {
        let l = line(text, n);
        (l.starts_with("---") || l.starts_with("...")) && first_content.is_some_and(|f| n > f)
    });
    let n = marker.unwrap_or(at.line);
    let written = marker.map_or(String::new(), |m| format!(" (`{}`)", quoted(line(text, m))));
    let message = format!(
        "a second YAML document starts at line {n}{written}: the file holds one document; \
         remove the `---` or `...` line, or split the file in two"
    );
    (Pos { line: n, column: 1 }, message)
}

/// For "expected string scalar": a list or a mapping at `at` where one value belongs.
pub(super) fn one_value(text: &str, at: Pos) -> (Pos, String) {
    let here = line(text, at.line);
    let first = here
        .chars()
        .nth(at.column.saturating_sub(1) as usize)
        .unwrap_or(' ');
    let found = match first {
        '[' | '-' => "a list",
        '{' => "a mapping",
        _ => "a list or a mapping",
    };
    let message = match key_at(text, at) {
        Some(key) => format!(
            "`{key}:` takes one value here (a number, a word or true/false), not {found}: write \
             a single value after `{key}:` on the same line, or remove the line"
        ),
        None => format!(
            "one value belongs here (a number, a word or true/false), not {found}: write a \
             single value instead"
        ),
    };
    (at, message)
}

/// The key that holds line `n`: the nearest content line above it, indented less, and its line.
fn parent(text: &str, n: u64) -> Option<(String, u64)> {
    let depth = indent(line(text, n));
    let above = (1..n).rev().find(|&m| {
        let l = line(text, m);
        is_content(l) && indent(l) < depth
    })?;
    Some((key_at(text, first_of(text, above))?, above))
}

/// The first character of line `n` that is not a blank.
fn first_of(text: &str, n: u64) -> Pos {
    Pos {
        line: n,
        column: indent(line(text, n)) as u64 + 1,
    }
}

/// `text` trimmed, cut to [`QUOTED`] characters.
fn quoted(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(QUOTED) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
