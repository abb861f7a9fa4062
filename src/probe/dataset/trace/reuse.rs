//! The prefix reuse a trace implies: the share of its prompt tokens that lie in blocks an
//! earlier request of the window already sent, counting each request's leading run of seen
//! block ids (a Mooncake id names a block together with everything before it, as the
//! engines' prefix caches key theirs). A cache that kept every block would serve this share;
//! the server's own hit rate is compared against it.

use super::read::TraceRows;
use super::Window;
use crate::probe::workload::TraceFormat;
use anyhow::Result;
use std::collections::HashSet;
use std::path::Path;

/// Reused prompt tokens over all prompt tokens of the window's requests, with lengths scaled
/// by `factor` and blocks of `block_len` tokens; `None` when the trace names no blocks.
pub(super) fn implied_reuse(
    path: &Path,
    format: TraceFormat,
    window: Window,
    factor: f64,
    block_len: u32,
) -> Result<Option<f64>> {
    let mut seen: HashSet<u64> = HashSet::new();
    let (mut reused, mut total, mut taken, mut named) = (0u64, 0u64, 0u32, false);
    for row in TraceRows::open(path, format)? {
        let row = row?;
        if row.at < window.start {
            continue;
        }
        if window.ends_at(row.at, taken) {
            break;
        }
        taken += 1;
        named |= !row.blocks.is_empty();
        let input = ((f64::from(row.input) * factor).floor() as u32).max(1);
        let leading = row.blocks.iter().take_while(|id| seen.contains(id)).count() as u64;
        reused += (leading * u64::from(block_len)).min(u64::from(input));
        total += u64::from(input);
        seen.extend(row.blocks);
    }
    Ok((named && total > 0).then(|| reused as f64 / total as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_seen_blocks_count_and_a_new_block_ends_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 10, \"input_length\": 1500, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n\
             {\"timestamp\": 20, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [9, 2]}\n",
        )
        .unwrap();
        let all = Window {
            start: 0.0,
            end: None,
            limit: None,
        };
        let reuse = implied_reuse(&path, TraceFormat::Mooncake, all, 1.0, 512).unwrap();
        // Only the second request reuses: blocks 1 and 2, 1024 of its 1500 tokens.
        assert_eq!(reuse, Some(1024.0 / (1024.0 + 1500.0 + 1024.0)));
        let halved = implied_reuse(&path, TraceFormat::Mooncake, all, 0.5, 256).unwrap();
        assert_eq!(halved, Some(512.0 / (512.0 + 750.0 + 512.0)));
        let first_two = Window {
            limit: Some(2),
            ..all
        };
        let reuse = implied_reuse(&path, TraceFormat::Mooncake, first_two, 1.0, 512).unwrap();
        assert_eq!(reuse, Some(1024.0 / 2524.0));
    }
}
