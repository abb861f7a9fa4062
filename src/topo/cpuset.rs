//! Linux CPU/node list syntax (`0-3,8,10-11`), as used by sysfs `cpulist` files,
//! `/proc/self/status` and numactl.

use std::collections::BTreeSet;

/// Parses a list such as `0-3,8,10-11` into its members (sorted, deduplicated).
/// An empty or blank string is the empty set (memory-only nodes have an empty `cpulist`).
pub(crate) fn parse_list(text: &str) -> Result<BTreeSet<u32>, String> {
    let mut out = BTreeSet::new();
    for item in text
        .trim()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (low, high) = match item.split_once('-') {
            Some((a, b)) => (parse_id(a, item)?, parse_id(b, item)?),
            None => {
                let id = parse_id(item, item)?;
                (id, id)
            }
        };
        if low > high {
            return Err(format!("range `{item}` runs backwards"));
        }
        out.extend(low..=high);
    }
    Ok(out)
}

fn parse_id(text: &str, item: &str) -> Result<u32, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{item}` is not a number or a range like `0-15`"))
}

/// Formats members back into the compact range syntax, e.g. `[0,1,2,3,8]` → `0-3,8`.
pub(crate) fn format_list<'a>(ids: impl IntoIterator<Item = &'a u32>) -> String {
    let mut sorted: Vec<u32> = ids.into_iter().copied().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut iter = sorted.into_iter().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_singles_and_blanks() {
        let set = parse_list("0-3, 8,10-11\n").unwrap();
        assert_eq!(
            set.into_iter().collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert!(parse_list("\n").unwrap().is_empty());
    }

    #[test]
    fn rejects_garbage_and_backward_ranges() {
        assert!(parse_list("0-x").unwrap_err().contains("0-x"));
        assert!(parse_list("5-2").unwrap_err().contains("backwards"));
    }

    #[test]
    fn formats_compact_ranges() {
        assert_eq!(format_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_list(&[5]), "5");
        assert_eq!(format_list(&[]), "");
    }

    #[test]
    fn round_trips() {
        let text = "0-23,48-71";
        assert_eq!(format_list(&parse_list(text).unwrap()), text);
    }
}
