//! Engine versions: a tiny dotted-number comparison that tolerates suffixes
//! (`0.32.0+cpu`, `0.6.3.post1`, `2.0.RC1`, llama.cpp build numbers like `b4792`).

use std::cmp::Ordering;

/// A parsed version: its leading numeric components (missing ones count as 0: `1.0` = `1.0.0`).
#[derive(Clone, Debug)]
pub struct Version(Vec<u64>);

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

impl Version {
    /// Parses the leading dotted numbers of `text`; `None` when it starts with no number.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim().trim_start_matches(['v', 'V', 'b']);
        let mut parts = Vec::new();
        for piece in text.split('.') {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                break;
            }
            parts.push(digits.parse().ok()?);
            if digits.len() != piece.len() {
                break;
            }
        }
        (!parts.is_empty()).then_some(Version(parts))
    }

    fn component(&self, i: usize) -> u64 {
        self.0.get(i).copied().unwrap_or(0)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.0.len().max(other.0.len());
        (0..n)
            .map(|i| self.component(i).cmp(&other.component(i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

/// Versions a rule holds for: `since` inclusive, `until` exclusive; `None` = unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionRange {
    /// First version the rule holds for.
    pub since: Option<&'static str>,
    /// First version it no longer holds for.
    pub until: Option<&'static str>,
}

impl VersionRange {
    /// Every version.
    pub(crate) const ALL: VersionRange = VersionRange {
        since: None,
        until: None,
    };

    /// Whether the rule holds for `version`; an unknown version means the newest release.
    pub fn contains(&self, version: Option<&Version>) -> bool {
        let bound = |b: Option<&str>| b.and_then(Version::parse);
        match version {
            None => self.until.is_none(),
            Some(v) => {
                bound(self.since).is_none_or(|s| *v >= s)
                    && bound(self.until).is_none_or(|u| *v < u)
            }
        }
    }

    /// Human form, e.g. `>=0.11.0`, `<0.8.0`, `all versions`.
    pub(crate) fn describe(&self) -> String {
        match (self.since, self.until) {
            (None, None) => "all versions".into(),
            (Some(s), None) => format!(">={s}"),
            (None, Some(u)) => format!("<{u}"),
            (Some(s), Some(u)) => format!(">={s}, <{u}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn parses_suffixed_versions() {
        assert_eq!(v("0.32.0+cpu"), v("0.32.0"));
        assert_eq!(v("0.6.3.post1"), v("0.6.3"));
        assert_eq!(v("v0.11"), v("0.11.0"));
        assert_eq!(v("b4792"), v("4792"));
        assert_eq!(v("2.0.RC1"), v("2.0"));
        assert_eq!(Version::parse("latest"), None);
    }

    #[test]
    fn orders_numerically_not_lexically() {
        assert!(v("0.10.0") > v("0.9.2"));
        assert!(v("0.6.3") < v("0.8"));
        assert!(v("1.0") == v("1.0.0"));
    }

    #[test]
    fn ranges_are_half_open_and_unknown_means_newest() {
        let old = VersionRange {
            since: None,
            until: Some("0.8.0"),
        };
        let new = VersionRange {
            since: Some("0.8.0"),
            until: None,
        };
        assert!(old.contains(Some(&v("0.6.3"))) && !old.contains(Some(&v("0.8.0"))));
        assert!(new.contains(Some(&v("0.8.0"))) && new.contains(Some(&v("0.32.0+cpu"))));
        assert!(!old.contains(None) && new.contains(None));
        assert_eq!(old.describe(), "<0.8.0");
    }
}
