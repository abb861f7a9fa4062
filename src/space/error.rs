//! Load errors of a space file: one message with the file, line and column it is about.

use std::fmt;

/// A position in a space file (1-based line and column; 0 when unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line.
    pub line: u64,
    /// 1-based column.
    pub column: u64,
}

impl Pos {
    /// The position a YAML node was read from.
    pub fn of(location: &serde_saphyr::Location) -> Pos {
        Pos {
            line: location.line(),
            column: location.column(),
        }
    }
}

/// Why a space file was refused: what is wrong, where, and (in the message) how to fix it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct SpaceError {
    /// The file, as given.
    pub file: String,
    /// Where in the file.
    pub pos: Pos,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for SpaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.pos.line, self.pos.column, self.message
        )
    }
}

impl SpaceError {
    /// An error at `pos` of `file`.
    pub fn at(file: &str, pos: Pos, message: impl Into<String>) -> SpaceError {
        SpaceError {
            file: file.to_string(),
            pos,
            message: message.into(),
        }
    }
}

/// Formats a count with thousands separators: `10000` → `10,000`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_and_separators() {
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
