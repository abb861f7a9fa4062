//! `plots/*.svg`: a small SVG chart with axes and ticks, scatter, line or bar series,
//! labelled horizontal threshold lines, and a legend below the plot, clear of the data.

use std::fmt::Write as _;

const W: f64 = 640.0;
const H: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 50.0;
/// Height of one legend row below the plot.
const LEGEND_ROW: f64 = 16.0;

/// One series of points.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    /// Legend label.
    pub name: String,
    /// CSS colour.
    pub color: &'static str,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
    /// Join the points with a line (in the given order).
    pub line: bool,
    /// Draw the points as rings, e.g. for values measured by a probe that was stopped early.
    pub hollow: bool,
}

/// A chart.
#[derive(Clone, Debug)]
pub(crate) struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Series drawn in order.
    pub series: Vec<Series>,
    /// Labels for integer x positions (categorical axes); numeric ticks when empty.
    pub x_categories: Vec<String>,
    /// Horizontal lines across the plot at these y values, each with its label (e.g. an
    /// SLO's bound); the y range always includes them.
    pub thresholds: Vec<(f64, String)>,
    /// Draw every series as bars from 0 instead of markers.
    pub bars: bool,
}

impl Chart {
    /// Render as a standalone SVG document.
    pub fn render(&self) -> String {
        let pts = self.series.iter().flat_map(|s| s.points.iter());
        let finite: Vec<(f64, f64)> = pts
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .copied()
            .collect();
        let (x0, x1) = if self.bars {
            let n = self.x_categories.len().max(1) as f64;
            (-0.6, n - 0.4)
        } else {
            padded(finite.iter().map(|p| p.0))
        };
        let limits = self
            .thresholds
            .iter()
            .map(|t| t.0)
            .filter(|y| y.is_finite());
        let zero = self.bars.then_some(0.0);
        let (y0, y1) = padded(finite.iter().map(|p| p.1).chain(limits).chain(zero));
        let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
        let sy = |y: f64| H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM);
        let legend = self.legend_rows();
        let height = H + 8.0 + LEGEND_ROW * legend.len() as f64;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif" font-size="11">"#
        );
        let _ = write!(s, r#"<rect width="{W}" height="{height}" fill="white"/>"#);
        let _ = write!(
            s,
            r#"<text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
            W / 2.0,
            esc(&self.title)
        );
        let (bx, by) = (H - BOTTOM, LEFT);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{bx}" x2="{}" y2="{bx}" stroke="#333"/>"##,
            W - RIGHT
        );
        let _ = write!(
            s,
            r##"<line x1="{by}" y1="{TOP}" x2="{by}" y2="{bx}" stroke="#333"/>"##
        );
        for (x, label) in self.x_ticks(x0, x1) {
            let px = sx(x);
            let _ = write!(
                s,
                r##"<line x1="{px:.1}" y1="{bx}" x2="{px:.1}" y2="{}" stroke="#333"/><text x="{px:.1}" y="{}" text-anchor="middle">{}</text>"##,
                bx + 4.0,
                bx + 16.0,
                esc(&label)
            );
        }
        for y in ticks(y0, y1) {
            let py = sy(y);
            let _ = write!(
                s,
                r##"<line x1="{}" y1="{py:.1}" x2="{}" y2="{py:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT,
                W - RIGHT,
                LEFT - 6.0,
                py + 4.0,
                number(y)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            (LEFT + W - RIGHT) / 2.0,
            H - 12.0,
            esc(&self.x_label)
        );
        let _ = write!(
            s,
            r#"<text x="14" y="{}" text-anchor="middle" transform="rotate(-90 14 {})">{}</text>"#,
            (TOP + bx) / 2.0,
            (TOP + bx) / 2.0,
            esc(&self.y_label)
        );
        for (y, label) in self.thresholds.iter().filter(|t| t.0.is_finite()) {
            let py = sy(*y);
            let _ = write!(
                s,
                r##"<line x1="{LEFT}" y1="{py:.1}" x2="{}" y2="{py:.1}" stroke="#555" stroke-dasharray="6 4"/><text x="{}" y="{:.1}" text-anchor="end" fill="#555">{}</text>"##,
                W - RIGHT,
                W - RIGHT - 4.0,
                py - 4.0,
                esc(label)
            );
        }
        let width = 0.6 * (W - LEFT - RIGHT) / (x1 - x0) / self.series.len().max(1) as f64;
        for (k, series) in self.series.iter().enumerate() {
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .map(|&(x, y)| (sx(x), sy(y)))
                .collect();
            if series.line && points.len() > 1 {
                let path: Vec<String> = points
                    .iter()
                    .map(|(x, y)| format!("{x:.1},{y:.1}"))
                    .collect();
                let _ = write!(
                    s,
                    r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
                    series.color,
                    path.join(" ")
                );
            }
            for (x, y) in &points {
                if self.bars {
                    let left = x - 0.6 * (W - LEFT - RIGHT) / (x1 - x0) / 2.0 + width * k as f64;
                    let base = sy(0.0);
                    let _ = write!(
                        s,
                        r#"<rect x="{left:.1}" y="{:.1}" width="{width:.1}" height="{:.1}" {}/>"#,
                        y.min(base),
                        (base - y).abs(),
                        paint(series)
                    );
                } else {
                    let _ = write!(
                        s,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" {}/>"#,
                        paint(series)
                    );
                }
            }
        }
        for (row, items) in legend.iter().enumerate() {
            let ly = H + 2.0 + LEGEND_ROW * row as f64;
            for (lx, series) in items {
                let _ = write!(
                    s,
                    r#"<circle cx="{lx:.1}" cy="{ly}" r="4" {}/><text x="{:.1}" y="{}">{}</text>"#,
                    paint(series),
                    lx + 8.0,
                    ly + 4.0,
                    esc(&series.name)
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }

    /// The legend below the plot: the drawn series, laid out left to right in rows that fit
    /// the width, each with its x position.
    fn legend_rows(&self) -> Vec<Vec<(f64, &Series)>> {
        let drawn = self.series.iter().filter(|series| {
            series
                .points
                .iter()
                .any(|(x, y)| x.is_finite() && y.is_finite())
        });
        let mut rows: Vec<Vec<(f64, &Series)>> = Vec::new();
        let mut x = W;
        for series in drawn {
            let width = 24.0 + 6.2 * series.name.chars().count() as f64;
            if x + width > W - RIGHT {
                rows.push(Vec::new());
                x = LEFT;
            }
            if let Some(row) = rows.last_mut() {
                row.push((x, series));
            }
            x += width;
        }
        rows
    }

    fn x_ticks(&self, x0: f64, x1: f64) -> Vec<(f64, String)> {
        if self.x_categories.is_empty() {
            return ticks(x0, x1).into_iter().map(|x| (x, number(x))).collect();
        }
        self.x_categories
            .iter()
            .enumerate()
            .map(|(i, l)| (i as f64, l.clone()))
            .collect()
    }
}

/// The fill (or, for rings, the stroke) of a series' markers.
fn paint(series: &Series) -> String {
    if series.hollow {
        format!(
            r#"fill="white" stroke="{}" stroke-width="1.5""#,
            series.color
        )
    } else {
        format!(r#"fill="{}""#, series.color)
    }
}

/// Data range with 5% padding (a unit range around a single value).
fn padded(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (
            lo - 0.5_f64.max(lo.abs() * 0.1),
            hi + 0.5_f64.max(hi.abs() * 0.1),
        );
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad, hi + pad)
}

/// About five round tick values inside `[lo, hi]`.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let raw = (hi - lo) / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(raw);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

fn number(v: f64) -> String {
    if v.abs() >= 1000.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{}", (v * 1000.0).round() / 1000.0)
    }
}

/// Escape text for XML.
pub(crate) fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_inside() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(103.0, 997.0);
        assert!(
            t.iter().all(|v| (103.0..=997.0).contains(v)) && t.len() >= 4,
            "{t:?}"
        );
    }

    #[test]
    fn renders_points_lines_and_escaped_labels() {
        let c = Chart {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                name: "s".into(),
                color: "red",
                points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, f64::NAN)],
                line: true,
                hollow: false,
            }],
            x_categories: vec![],
            thresholds: vec![],
            bars: false,
        };
        let svg = c.render();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 3); // two points + legend
        assert!(svg.contains("<polyline") && svg.contains("a &lt; b"));
    }

    #[test]
    fn the_legend_names_only_series_that_are_drawn() {
        let series = |name: &str, points: Vec<(f64, f64)>, hollow: bool| Series {
            name: name.into(),
            color: "red",
            points,
            line: false,
            hollow,
        };
        let c = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![
                series("empty", vec![], false),
                series("unmeasured", vec![(1.0, f64::NAN)], false),
                series("pruned", vec![(1.0, 2.0)], true),
            ],
            x_categories: vec![],
            thresholds: vec![],
            bars: false,
        };
        let svg = c.render();
        assert!(
            !svg.contains("empty") && !svg.contains("unmeasured"),
            "{svg}"
        );
        assert_eq!(svg.matches(r#"fill="white" stroke="red""#).count(), 2); // point + legend
        assert!(
            svg.contains(&format!(r#"cy="{}""#, H + 2.0)),
            "first legend row, below the plot: {svg}"
        );
    }

    #[test]
    fn the_legend_sits_below_every_point_and_thresholds_are_drawn_in_range() {
        let c = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                name: "feasible".into(),
                color: "red",
                points: vec![(0.0, 1.0), (10.0, 2.0)],
                line: false,
                hollow: false,
            }],
            x_categories: vec![],
            thresholds: vec![(5.0, "SLO p99 <= 5".into())],
            bars: false,
        };
        let svg = c.render();
        let cys: Vec<f64> = svg
            .split("cy=\"")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap().parse().unwrap())
            .collect();
        let (legend, points) = cys.split_last().unwrap();
        assert!(points.iter().all(|y| y < &(H - BOTTOM + 1.0)), "{cys:?}");
        assert!(*legend > H - BOTTOM, "legend at {legend}");
        assert!(svg.contains("stroke-dasharray") && svg.contains("SLO p99 &lt;= 5"));
        // The threshold (5) is above both points, so the plot reaches up to it.
        let line_y: f64 = svg
            .split("stroke-dasharray")
            .next()
            .unwrap()
            .rsplit("y1=\"")
            .next()
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((TOP..H - BOTTOM).contains(&line_y), "{line_y}");
    }

    #[test]
    fn bars_rise_from_zero() {
        let c = Chart {
            title: "importance".into(),
            x_label: "parameter".into(),
            y_label: "share".into(),
            series: vec![Series {
                name: "share of variance".into(),
                color: "blue",
                points: vec![(0.0, 0.7), (1.0, 0.3)],
                line: false,
                hollow: false,
            }],
            x_categories: vec!["a".into(), "b".into()],
            thresholds: vec![],
            bars: true,
        };
        let svg = c.render();
        assert_eq!(svg.matches("<rect x=").count(), 2, "{svg}");
    }
}
