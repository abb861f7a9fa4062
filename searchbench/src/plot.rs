//! Regret-vs-trials plot as a hand-written SVG: one panel per scenario, one median curve per
//! sampler, log-scaled regret axis with the 3% line.

use super::report::{median_curve, TOLERANCE};
use super::ScenarioResult;
use std::fmt::Write as _;

const PANEL_W: f64 = 460.0;
const PANEL_H: f64 = 300.0;
const MARGIN: f64 = 50.0;
const COLUMNS: usize = 2;
/// Regret axis range (log scale); smaller regrets are drawn at the bottom.
const REGRET_FLOOR: f64 = 1e-3;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// The SVG document for `results` with curves for `samplers`.
pub fn svg(results: &[ScenarioResult], samplers: &[String]) -> String {
    let rows = results.len().div_ceil(COLUMNS).max(1);
    let width = COLUMNS as f64 * (PANEL_W + MARGIN) + MARGIN;
    let height = rows as f64 * (PANEL_H + 2.0 * MARGIN) + MARGIN;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
"#
    );
    for (i, result) in results.iter().enumerate() {
        let x0 = MARGIN + (i % COLUMNS) as f64 * (PANEL_W + MARGIN);
        let y0 = MARGIN + (i / COLUMNS) as f64 * (PANEL_H + 2.0 * MARGIN);
        panel(&mut out, result, samplers, x0, y0);
    }
    out.push_str("</svg>\n");
    out
}

fn panel(out: &mut String, result: &ScenarioResult, samplers: &[String], x0: f64, y0: f64) {
    let curves: Vec<Vec<f64>> = samplers.iter().map(|s| median_curve(result, s)).collect();
    let trials = curves.iter().map(Vec::len).max().unwrap_or(1).max(2);
    let x = |t: usize| x0 + (t - 1) as f64 / (trials - 1) as f64 * PANEL_W;
    let y = |r: f64| {
        let r = r.clamp(REGRET_FLOOR, 1.0);
        y0 + r.log10() / REGRET_FLOOR.log10() * PANEL_H
    };
    let _ = writeln!(
        out,
        r##"<text x="{x0}" y="{}" font-size="13" font-weight="bold">{} (optimum {:.1})</text>
<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#888"/>"##,
        y0 - 8.0,
        result.name,
        result.optimum
    );
    for (label, r) in [("100%", 1.0), ("10%", 0.1), ("1%", 0.01), ("0.1%", 0.001)] {
        let _ = writeln!(
            out,
            r##"<line x1="{x0}" x2="{}" y1="{yy}" y2="{yy}" stroke="#eee"/><text x="{}" y="{}" text-anchor="end">{label}</text>"##,
            x0 + PANEL_W,
            x0 - 4.0,
            y(r) + 4.0,
            yy = y(r)
        );
    }
    let tol = y(TOLERANCE);
    let _ = writeln!(
        out,
        r##"<line x1="{x0}" x2="{}" y1="{tol}" y2="{tol}" stroke="#444" stroke-dasharray="4 3"/>"##,
        x0 + PANEL_W
    );
    for t in (0..=trials)
        .step_by((trials / 5).max(1))
        .filter(|&t| t >= 1)
    {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{t}</text>"#,
            x(t),
            y0 + PANEL_H + 14.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">trials (median regret over seeds)</text>"#,
        x0 + PANEL_W / 2.0,
        y0 + PANEL_H + 30.0
    );
    for (k, (sampler, curve)) in samplers.iter().zip(&curves).enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let points: Vec<String> = curve
            .iter()
            .enumerate()
            .map(|(t, r)| format!("{:.1},{:.1}", x(t + 1), y(*r)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>
<text x="{}" y="{}" fill="{colour}">{sampler}</text>"#,
            points.join(" "),
            x0 + PANEL_W - 60.0,
            y0 + 16.0 + 14.0 * k as f64
        );
    }
}
