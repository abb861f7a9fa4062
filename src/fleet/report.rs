//! The plan's report (`report.md`, `report.html`, `plots/pareto.svg`): the ranked plans, the
//! Pareto front of tokens/s per GPU against tokens/s per user, what the twin left out, and the
//! verified plans with the twin's error on each.

use super::figures::{Plan, Ranking};
use super::search::{PlanRequest, Planned};
use super::verify::Verified;
use crate::export::{Block, Chart, Series};
use crate::space::StudySpec;
use std::path::{Path, PathBuf};

/// Plans listed in the report's table.
const LISTED: usize = 20;

/// Write the report of `planned` (for `request` on `space`) and of the `verified` plans into
/// `dir`; returns the paths of `report.md` and `report.html`.
pub fn write_report(
    dir: &Path,
    space: &StudySpec,
    request: &PlanRequest,
    planned: &Planned,
    verified: &[Verified],
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let mut blocks = vec![
        Block::Heading(1, format!("Deployment plan: {}", space.name)),
        Block::Para(format!(
            "{} on {} GPUs ({}), load {:?}, ranked by {}. Figures are the twin's (infertune's \
             simulator), not measurements: {} candidate deployments, {} server runs simulated.",
            space.engine.model,
            request.gpus,
            space.engine.card.as_deref().unwrap_or("no card"),
            request.load,
            ranking_text(request.ranking),
            planned.plans.len(),
            planned.simulated,
        )),
        Block::Heading(2, "Ranked plans".into()),
        plan_table(planned.plans.iter().take(LISTED), request.ranking),
        Block::Plot {
            caption: "Each served plan (grey) and the Pareto front (blue): no other plan gives \
                      more tokens/s per GPU at as many tokens/s per user"
                .into(),
            file: "pareto.svg".into(),
            svg: pareto_chart(&planned.plans).render(),
        },
    ];
    if !planned.left_out.is_empty() {
        blocks.push(Block::Heading(2, "Left out".into()));
        blocks.extend(planned.left_out.iter().map(|l| Block::Para(l.clone())));
    }
    if !verified.is_empty() {
        blocks.push(Block::Heading(2, "Verified on the engine".into()));
        blocks.push(verified_table(verified));
    }
    crate::export::write_report(dir, "infertune plan", &blocks, space.file_access())
}

fn ranking_text(ranking: Ranking) -> String {
    match ranking {
        Ranking::GoodputPerGpu => "output tokens/s per GPU among plans meeting the SLOs".into(),
        Ranking::FewestGpus => "fewest GPUs among plans meeting the SLOs".into(),
        Ranking::CostPerMillion { per_gpu_hour } => {
            format!("cost per million output tokens at {per_gpu_hour} per GPU-hour")
        }
    }
}

fn plan_table<'a>(plans: impl Iterator<Item = &'a Plan>, ranking: Ranking) -> Block {
    let rows = plans
        .enumerate()
        .map(|(i, p)| plan_row(i + 1, p, ranking))
        .collect();
    Block::Table {
        header: [
            "rank",
            "tp",
            "replicas",
            "GPUs",
            "tok/s per GPU",
            "tok/s per user",
            "p99 TTFT ms",
            "cost per M",
            "meets",
            "knobs",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// One plan as a row of the ranked table (the terminal prints the same).
pub fn plan_row(rank: usize, p: &Plan, ranking: Ranking) -> Vec<String> {
    let s = &p.shape;
    let (per_gpu, per_user, ttft) = match &p.figures {
        Ok(f) => (
            format!("{:.0}", f.per_gpu),
            format!("{:.1}", f.per_user),
            format!("{:.0}", f.ttft_p99_ms),
        ),
        Err(_) => ("-".into(), "-".into(), "-".into()),
    };
    let cost = match ranking {
        Ranking::CostPerMillion { per_gpu_hour } => p
            .cost_per_million(per_gpu_hour)
            .map_or("-".into(), |c| format!("{c:.3}")),
        _ => "-".into(),
    };
    let meets = match (&p.figures, p.broken.is_empty()) {
        (Err(why), _) => format!("no: {why}"),
        (Ok(_), true) => "yes".into(),
        (Ok(_), false) => format!("no: {}", p.broken.join("; ")),
    };
    let knobs = s
        .knobs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        rank.to_string(),
        s.tp.to_string(),
        s.replicas.to_string(),
        s.gpus().to_string(),
        per_gpu,
        per_user,
        ttft,
        cost,
        meets,
        knobs,
    ]
}

/// The served plans' (tokens/s per user, tokens/s per GPU) and their Pareto front.
fn pareto_chart(plans: &[Plan]) -> Chart {
    let points: Vec<(f64, f64)> = plans
        .iter()
        .filter_map(|p| p.figures.as_ref().ok())
        .map(|f| (f.per_user, f.per_gpu))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    Chart {
        title: "Tokens/s per GPU against tokens/s per user".into(),
        x_label: "output tokens/s per user".into(),
        y_label: "output tokens/s per GPU".into(),
        series: vec![
            Series {
                name: "plans".into(),
                color: "#9ca3af",
                points: points.clone(),
                line: false,
                hollow: true,
            },
            Series {
                name: "Pareto front".into(),
                color: "#2563eb",
                points: pareto_front(&points),
                line: true,
                hollow: false,
            },
        ],
        x_categories: Vec::new(),
        thresholds: Vec::new(),
        bars: false,
    }
}

/// The points no other point beats on both coordinates (both higher is better), by x.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)));
    let mut front: Vec<(f64, f64)> = Vec::new();
    for p in sorted {
        if front.last().is_none_or(|last| p.1 > last.1) {
            front.push(p);
        }
    }
    front.reverse();
    front
}

fn verified_table(verified: &[Verified]) -> Block {
    let pct = |e: Option<f64>| e.map_or("-".into(), |e| format!("{e:+.1}%"));
    let rows = verified
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let m = v.measured.figures.as_ref();
            let errors = v.errors_pct();
            vec![
                (i + 1).to_string(),
                v.twin_rank.to_string(),
                v.measured.shape.tp.to_string(),
                v.measured.shape.replicas.to_string(),
                m.map_or("-".into(), |f| format!("{:.0}", f.per_gpu)),
                m.map_or("-".into(), |f| format!("{:.1}", f.per_user)),
                if v.measured.meets() { "yes" } else { "no" }.into(),
                pct(errors[0].1),
                pct(errors[1].1),
                pct(errors[2].1),
            ]
        })
        .collect();
    Block::Table {
        header: [
            "measured rank",
            "twin rank",
            "tp",
            "replicas",
            "tok/s per GPU",
            "tok/s per user",
            "meets",
            "twin error per GPU",
            "per user",
            "p99 TTFT",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pareto_front_keeps_the_points_nothing_beats_on_both() {
        let points = [
            (10.0, 100.0),
            (20.0, 80.0),
            (15.0, 70.0),
            (30.0, 20.0),
            (5.0, 90.0),
        ];
        assert_eq!(
            pareto_front(&points),
            [(10.0, 100.0), (20.0, 80.0), (30.0, 20.0)]
        );
    }
}
