//! Where a figure's spread comes from: runs on one live server against starts of the server.
//! Runs are grouped by start; a one-way analysis of variance on the log of the figure splits
//! the spread into the part between runs on one server (within a start) and the part that a
//! new start adds (between starts), each as a relative standard deviation.

use std::fmt;

/// The spread of a figure measured over several starts, several runs each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Runs in all.
    pub runs: usize,
    /// Starts (groups of runs).
    pub starts: usize,
    /// Mean of every run's figure.
    pub mean: f64,
    /// Relative standard deviation between runs on one server (pooled within starts); `None`
    /// when no start had two runs.
    pub within: Option<f64>,
    /// Relative standard deviation a new start adds beyond `within` (the between-starts
    /// component, 0 when the starts differ no more than runs do); `None` with one start.
    pub between: Option<f64>,
    /// Relative standard deviation of all runs together, ignoring starts.
    pub total: Option<f64>,
}

impl Spread {
    /// The spread of `starts`, each the figures of one start's runs (non-positive figures and
    /// empty starts are left out).
    pub fn of(starts: &[Vec<f64>]) -> Spread {
        let logs: Vec<Vec<f64>> = starts
            .iter()
            .map(|runs| runs.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect())
            .filter(|runs: &Vec<f64>| !runs.is_empty())
            .collect();
        let all: Vec<f64> = logs.iter().flatten().copied().collect();
        let runs = all.len();
        let mean_of = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (mut squares, mut freedom) = (0.0, 0usize);
        for group in &logs {
            let m = mean_of(group);
            squares += group.iter().map(|l| (l - m).powi(2)).sum::<f64>();
            freedom += group.len() - 1;
        }
        let within_var = (freedom > 0).then(|| squares / freedom as f64);
        let between = (logs.len() > 1).then(|| {
            // Variance of the start means, less what the runs' own spread puts in them.
            let means: Vec<f64> = logs.iter().map(|g| mean_of(g)).collect();
            let grand = mean_of(&means);
            let var_means =
                means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (means.len() - 1) as f64;
            let per_start =
                logs.len() as f64 / logs.iter().map(|g| 1.0 / g.len() as f64).sum::<f64>();
            (var_means - within_var.unwrap_or(0.0) / per_start)
                .max(0.0)
                .sqrt()
        });
        let total = (runs > 1).then(|| {
            let m = mean_of(&all);
            (all.iter().map(|l| (l - m).powi(2)).sum::<f64>() / (runs - 1) as f64).sqrt()
        });
        let figures: Vec<f64> = starts
            .iter()
            .flatten()
            .filter(|v| **v > 0.0)
            .copied()
            .collect();
        Spread {
            runs,
            starts: logs.len(),
            mean: if figures.is_empty() {
                f64::NAN
            } else {
                mean_of(&figures)
            },
            within: within_var.map(f64::sqrt),
            between,
            total,
        }
    }
}

impl fmt::Display for Spread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{:.1}%", 100.0 * v));
        write!(
            f,
            "{} runs over {} start(s): mean {:.2}; spread (relative sd) between runs on one server {}, added by a new start {}, all runs {}",
            self.runs,
            self.starts,
            self.mean,
            pct(self.within),
            pct(self.between),
            pct(self.total)
        )?;
        match (self.within, self.between) {
            (Some(w), Some(b)) if b > w => write!(f, "; the starts dominate"),
            (Some(_), Some(_)) => write!(f, "; runs on one server dominate"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_runs_on_starts_that_differ_put_the_spread_between_starts() {
        let s = Spread::of(&[vec![28.2, 28.0, 27.4, 27.8], vec![49.2, 50.6, 53.4, 54.5]]);
        assert_eq!((s.runs, s.starts), (8, 2));
        assert!(s.within.unwrap() < 0.05, "{s}");
        assert!(s.between.unwrap() > 0.3, "{s}");
        assert!(s.to_string().ends_with("the starts dominate"), "{s}");
    }

    #[test]
    fn starts_that_agree_leave_the_spread_to_the_runs() {
        let s = Spread::of(&[vec![90.0, 110.0], vec![110.0, 90.0], vec![100.0, 100.0]]);
        assert_eq!(s.between, Some(0.0));
        assert!(s.within.unwrap() > 0.1);
        assert!(
            s.to_string().ends_with("runs on one server dominate"),
            "{s}"
        );
        let one = Spread::of(&[vec![5.0]]);
        assert_eq!((one.within, one.between, one.total), (None, None, None));
    }
}
