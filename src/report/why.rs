//! "Why the winner wins": the server's own figures for the winner, the baseline and the other
//! finalists side by side, and one sentence per notable difference between winner and
//! baseline.

use crate::export::Block;
use crate::record::{ServerStats, TrialRecord};

fn count(v: f64) -> String {
    format!("{v:.0}")
}

fn percent(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

fn decimal(v: f64) -> String {
    format!("{v:.1}")
}

/// A row of the side-by-side table: its label, how to read the figure from a server section,
/// and how to print it.
type Figure = (
    &'static str,
    fn(&ServerStats) -> Option<f64>,
    fn(f64) -> String,
);

/// The rows of the side-by-side table.
const FIGURES: [Figure; 9] = [
    ("preemptions", |s| s.preemptions, count),
    ("KV-cache usage, peak", |s| s.kv_cache_usage_peak, percent),
    ("KV-cache usage, mean", |s| s.kv_cache_usage_mean, percent),
    ("requests waiting, peak", |s| s.waiting_peak, count),
    ("requests running, mean", |s| s.running_mean, decimal),
    (
        "prefix-cache hit rate",
        |s| s.prefix_cache_hit_rate,
        percent,
    ),
    ("output tokens (server)", |s| s.output_tokens, count),
    ("accelerator power, mean (W)", |s| s.power_mean_w, decimal),
    ("accelerator energy (J)", |s| s.energy_j, decimal),
];

/// The section's blocks, or `None` when neither the winner nor the baseline has a server
/// section. `finalists` are the other re-validated trials.
pub(crate) fn blocks(
    winner: &TrialRecord,
    baseline: Option<&TrialRecord>,
    finalists: &[&TrialRecord],
) -> Option<Vec<Block>> {
    let baseline = baseline.filter(|b| b.id.number != winner.id.number);
    let mut columns: Vec<(String, &TrialRecord)> =
        vec![(format!("winner (trial {})", winner.id.number), winner)];
    if let Some(b) = baseline {
        columns.push((format!("baseline (trial {})", b.id.number), b));
    }
    for f in finalists.iter().filter(|f| {
        f.id.number != winner.id.number && Some(f.id.number) != baseline.map(|b| b.id.number)
    }) {
        columns.push((format!("finalist (trial {})", f.id.number), f));
    }
    if columns.iter().all(|(_, r)| r.server.is_none()) {
        return None;
    }
    let rows: Vec<Vec<String>> = FIGURES
        .iter()
        .filter_map(|(label, read, show)| {
            let cells: Vec<String> = columns
                .iter()
                .map(|(_, r)| {
                    r.server
                        .as_ref()
                        .and_then(read)
                        .map_or_else(|| "—".to_string(), show)
                })
                .collect();
            cells
                .iter()
                .any(|c| *c != "—")
                .then(|| std::iter::once(label.to_string()).chain(cells).collect())
        })
        .collect();
    let mut header = vec!["server figure".to_string()];
    header.extend(columns.iter().map(|(name, _)| name.clone()));
    let mut out = vec![Block::Table { header, rows }];
    let sentences = match (
        winner.server.as_ref(),
        baseline.and_then(|b| b.server.as_ref()),
    ) {
        (Some(w), Some(b)) => differences(w, b),
        _ => Vec::new(),
    };
    out.push(Block::Para(if sentences.is_empty() {
        "The server's figures show no notable difference between the winner and the baseline."
            .into()
    } else {
        sentences.join(" ")
    }));
    Some(out)
}

/// One sentence per notable difference between the winner's figures `w` and the baseline's `b`.
pub(crate) fn differences(w: &ServerStats, b: &ServerStats) -> Vec<String> {
    let mut out = Vec::new();
    let times = |n: f64| {
        if n == 1.0 {
            "once".to_string()
        } else {
            format!("{} times", thousands(n))
        }
    };
    if let (Some(wp), Some(bp)) = (w.preemptions, b.preemptions) {
        if bp > 0.0 && wp == 0.0 {
            out.push(format!(
                "The defaults preempted {}; the winner never did.",
                times(bp)
            ));
        } else if wp > 0.0 && bp == 0.0 {
            out.push(format!(
                "The winner preempted {}; the defaults never did.",
                times(wp)
            ));
        } else if bp >= 2.0 * wp && bp - wp >= 10.0 {
            out.push(format!(
                "The defaults preempted {}, the winner {}.",
                times(bp),
                times(wp)
            ));
        }
    }
    if let (Some(wk), Some(bk)) = (w.kv_cache_usage_peak, b.kv_cache_usage_peak) {
        if (wk - bk).abs() >= 0.15 {
            out.push(format!(
                "The KV cache peaked at {} with the winner against {} with the defaults.",
                percent(wk),
                percent(bk)
            ));
        }
    }
    if let (Some(wq), Some(bq)) = (w.waiting_peak, b.waiting_peak) {
        if (wq - bq).abs() >= 4.0 && (wq.max(bq) >= 2.0 * wq.min(bq)) {
            out.push(format!(
                "Up to {} requests queued with the winner, {} with the defaults.",
                count(wq),
                count(bq)
            ));
        }
    }
    if let (Some(wr), Some(br)) = (w.running_mean, b.running_mean) {
        if wr.max(br) >= 1.25 * wr.min(br) && (wr - br).abs() >= 1.0 {
            out.push(format!(
                "The winner ran {} requests at once on average, the defaults {}.",
                decimal(wr),
                decimal(br)
            ));
        }
    }
    if let (Some(wh), Some(bh)) = (w.prefix_cache_hit_rate, b.prefix_cache_hit_rate) {
        if (wh - bh).abs() >= 0.1 {
            out.push(format!(
                "The prefix cache served {} of prompt tokens for the winner, {} for the defaults.",
                percent(wh),
                percent(bh)
            ));
        }
    }
    if let (Some(wp), Some(bp)) = (w.power_mean_w, b.power_mean_w) {
        if wp.max(bp) >= 1.1 * wp.min(bp) {
            out.push(format!(
                "The accelerators drew {} W on average with the winner, {} W with the defaults.",
                decimal(wp),
                decimal(bp)
            ));
        }
    }
    out
}

fn thousands(n: f64) -> String {
    crate::space::error::thousands(n.round() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    fn stats(preemptions: f64, kv: f64, running: f64) -> ServerStats {
        ServerStats {
            preemptions: Some(preemptions),
            kv_cache_usage_peak: Some(kv),
            running_mean: Some(running),
            waiting_peak: Some(3.0),
            ..ServerStats::default()
        }
    }

    #[test]
    fn notable_differences_get_a_sentence_each_and_small_ones_none() {
        let said = differences(&stats(0.0, 0.62, 40.0), &stats(1234.0, 1.0, 22.0));
        assert_eq!(said.len(), 3, "{said:?}");
        assert_eq!(
            said[0],
            "The defaults preempted 1,234 times; the winner never did."
        );
        assert!(
            said[1].contains("62%") && said[1].contains("100%"),
            "{}",
            said[1]
        );
        assert!(
            said[2].contains("40.0") && said[2].contains("22.0"),
            "{}",
            said[2]
        );
        assert!(differences(&stats(0.0, 0.5, 20.0), &stats(0.0, 0.55, 21.0)).is_empty());
    }

    #[test]
    fn the_table_has_a_column_per_trial_and_skips_figures_nobody_has() {
        let record = |n: u32, s: Option<ServerStats>| TrialRecord {
            server: s,
            ..TrialRecord::new(n, Default::default(), Outcome::Feasible)
        };
        let (w, b, f) = (
            record(5, Some(stats(0.0, 0.6, 30.0))),
            record(0, Some(stats(10.0, 1.0, 20.0))),
            record(3, None),
        );
        let blocks = blocks(&w, Some(&b), &[&f, &w]).unwrap();
        let Block::Table { header, rows } = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(header.len(), 4, "{header:?}");
        assert!(
            rows.iter().all(|r| r[0] != "prefix-cache hit rate"),
            "{rows:?}"
        );
        assert_eq!(rows[0], ["preemptions", "0", "10", "—"]);
        assert!(super::blocks(&record(1, None), None, &[]).is_none());
    }
}
