//! Clearer YAML errors. The parser reports where it noticed a problem, which is often after the
//! line that is wrong; reading the text around that spot finds the line to fix.

use crate::space::error::Pos;

/// For a syntax error inside a flow mapping or sequence: the `{` or `[` still open where the
/// parser gave up, and how to close it.
pub(super) fn unclosed(text: &str, at: Pos, message: &str) -> Option<(Pos, String)> {
    let (opened, bracket) = open_bracket(text, at)?;
    let close = if bracket == '{' { '}' } else { ']' };
    let end = (opened.line..at.line)
        .rev()
        .find(|&n| is_content(line(text, n)))
        .unwrap_or(opened.line);
    let message = format!(
        "a `{bracket}` opened at line {} is not closed: add the missing `{close}`, probably at \
         the end of line {end} (the YAML parser noticed at {}:{}: {message})",
        opened.line, at.line, at.column
    );
    Some((opened, message))
}

/// For a value of the wrong shape: the key it belongs to, what it must be (`shape`), and the
/// line that is wrong when indentation made YAML read the value differently.
pub(super) fn wrong_shape(text: &str, at: Pos, shape: &str) -> Option<(Pos, String)> {
    let here = line(text, at.line);
    let (key, key_column) = key_before(here, at.column)?;
    let last = text.lines().count() as u64;
    let next = (at.line + 1..=last).find(|&n| is_content(line(text, n)));
    let block_key = indent(here) == key_column;
    let after_key = here[key_column + key.len()..]
        .trim_start_matches(['"', '\''])
        .trim_start_matches(':');
    let value_here = is_content(after_key);
    if let Some(n) = next.filter(|_| block_key) {
        let next_indent = indent(line(text, n));
        let pos = Pos {
            line: n,
            column: next_indent as u64 + 1,
        };
        if value_here && next_indent > key_column {
            return Some((
                pos,
                format!(
                    "this line is indented deeper than `{key}` (line {}), so YAML reads it as \
                     part of the value of `{key}`, which must be {shape}: indent it like `{key}`",
                    at.line
                ),
            ));
        }
        if !value_here && next_indent <= key_column {
            return Some((
                pos,
                format!(
                    "`{key}` (line {}) has no value, but must be {shape}: indent the lines that \
                     belong to it under it, starting with this one",
                    at.line
                ),
            ));
        }
    }
    Some((at, format!("`{key}` must be {shape} here")))
}

/// The key of the value at `at`, or the key `at` points at: `  port: 8200` gives `port` at
/// the `8` and at the `p`.
pub(super) fn key_at(text: &str, at: Pos) -> Option<String> {
    let here = line(text, at.line);
    if let Some((key, _)) = key_before(here, at.column) {
        return Some(key.to_string());
    }
    let rest = here.trim_start().trim_start_matches("- ");
    let (key, _) = rest.split_once(':')?;
    let key = key.trim().trim_matches(['"', '\'']);
    (!key.is_empty() && !key.contains([' ', '{', '['])).then(|| key.to_string())
}

/// The line of an earlier `name:` in the mapping that holds line `at.line`: that line when it
/// holds the key twice (a flow mapping), else a line above it at the same indentation with no
/// line less indented between.
pub(super) fn earlier_key(text: &str, at: Pos, name: &str) -> Option<u64> {
    let here = line(text, at.line);
    let spelled = [
        format!("{name}:"),
        format!("\"{name}\":"),
        format!("'{name}':"),
    ];
    let on_this_line: usize = spelled
        .iter()
        .map(|s| here.matches(s.as_str()).count())
        .sum();
    if on_this_line >= 2 {
        return Some(at.line);
    }
    let depth = indent(here);
    for n in (1..at.line).rev() {
        let l = line(text, n);
        if !is_content(l) {
            continue;
        }
        if indent(l) < depth {
            return None;
        }
        let key = l.trim_start().trim_start_matches("- ");
        if indent(l) == depth && spelled.iter().any(|s| key.starts_with(s.as_str())) {
            return Some(n);
        }
    }
    None
}

/// The innermost `{` or `[` still open at `at`, outside quotes and comments.
fn open_bracket(text: &str, at: Pos) -> Option<(Pos, char)> {
    let mut open = Vec::new();
    for (n, text_line) in (1..=at.line).zip(text.lines()) {
        let mut quote = None;
        let mut previous = ' ';
        for (column, c) in (1..).zip(text_line.chars()) {
            if n == at.line && column >= at.column {
                break;
            }
            match (quote, c) {
                (Some(q), _) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '#') if previous.is_whitespace() => break,
                (None, '{' | '[') => open.push((Pos { line: n, column }, c)),
                (None, '}' | ']') => {
                    open.pop();
                }
                _ => {}
            }
            previous = c;
        }
    }
    open.pop()
}

/// The key whose value starts at `column` of `line` and the byte offset where the key starts:
/// `  port: 8200` at the `8` gives `port`; a key followed by nothing is found at its colon.
fn key_before(line: &str, column: u64) -> Option<(&str, usize)> {
    let cut = line
        .char_indices()
        .nth(column.saturating_sub(1) as usize)
        .map_or(line.len(), |(i, _)| i);
    let (head, tail) = line.split_at(cut);
    let head = head.trim_end();
    let head = match head.strip_suffix(':') {
        Some(h) => h,
        None if tail.starts_with(':') => head,
        None => return None,
    };
    let head = head.trim_end_matches(['"', '\'']);
    let start = head
        .rfind(|c: char| c.is_whitespace() || matches!(c, '{' | ',' | '"' | '\''))
        .map_or(0, |i| i + 1);
    let key = &head[start..];
    (!key.is_empty() && !key.starts_with('-')).then_some((key, start))
}

/// Line `n` (1-based) of `text`, empty past the end.
pub(super) fn line(text: &str, n: u64) -> &str {
    text.lines()
        .nth(n.saturating_sub(1) as usize)
        .unwrap_or_default()
}

/// The blanks `text` starts with.
pub(super) fn indent(text: &str) -> usize {
    text.len() - text.trim_start().len()
}

/// True when `text` holds more than blanks and a comment.
pub(super) fn is_content(text: &str) -> bool {
    let t = text.trim_start();
    !t.is_empty() && !t.starts_with('#')
}
