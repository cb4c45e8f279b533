//! The burndown as an inline SVG line chart: compliant files after each journalled run, then
//! now (the fresh scan), against the target.

use std::fmt::Write;

use super::esc;
use crate::report::coordinator::Report;

// A wide, short viewBox drawn at the page's width: the chart reads as a strip, not a poster.
const W: f64 = 1000.0;
const H: f64 = 240.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 84.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 46.0;
/// Width of one character of an 11px label, generously: labels are spaced by this estimate.
const CHAR_W: f64 = 7.0;
const GAP: f64 = 10.0;

struct Point {
    label: String,
    value: usize,
}

fn points(r: &Report) -> Vec<Point> {
    let mut number = 0;
    let mut points: Vec<Point> = r
        .runs
        .iter()
        .map(|run| {
            let label = if run.as_found {
                "start".to_string()
            } else {
                number += 1;
                format!(
                    "#{number} {}{}",
                    run.command,
                    if run.dry_run { " (dry)" } else { "" }
                )
            };
            Point {
                label,
                value: run.compliant,
            }
        })
        .collect();
    points.push(Point {
        label: "now".into(),
        value: r.overall.compliant,
    });
    points
}

pub fn burndown(r: &Report) -> String {
    let points = points(r);
    let target = r.overall.total;
    let top = points
        .iter()
        .map(|p| p.value)
        .max()
        .unwrap_or(0)
        .max(target)
        .max(1);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |i: usize| match points.len() {
        1 => LEFT + pw / 2.0,
        n => LEFT + pw * i as f64 / (n - 1) as f64,
    };
    let y = |v: usize| TOP + ph * (1.0 - v as f64 / top as f64);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg class=\"burndown\" width=\"100%\" viewBox=\"0 0 {W} {H}\" preserveAspectRatio=\"xMidYMid meet\" role=\"img\" aria-label=\"Burndown: compliant files after each run\">"
    );
    for k in 0..=4 {
        let v = top * k / 4;
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#eaeef2\"/><text x=\"{2}\" y=\"{3:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#57606a\">{v}</text>",
            y(v),
            W - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0
        );
    }
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#1a7f37\" stroke-dasharray=\"6 4\"/><text x=\"{2}\" y=\"{3:.1}\" font-size=\"11\" fill=\"#1a7f37\">target {target}</text>",
        y(target),
        W - RIGHT,
        W - RIGHT + 8.0,
        y(target) + 4.0
    );
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.value)))
        .collect();
    let area = format!(
        "{:.1},{:.1} {} {:.1},{:.1}",
        x(0),
        y(0),
        line.join(" "),
        x(points.len() - 1),
        y(0)
    );
    let _ = writeln!(
        svg,
        "<polygon points=\"{area}\" fill=\"#2da44e\" fill-opacity=\"0.12\"/>"
    );
    let _ = writeln!(
        svg,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#2da44e\" stroke-width=\"2.5\"/>",
        line.join(" ")
    );
    let xs: Vec<f64> = (0..points.len()).map(x).collect();
    let shown_labels = spaced(&xs, &points, |p| p.label.chars().count());
    let shown_values = spaced(&xs, &points, |p| p.value.to_string().len());
    for (i, p) in points.iter().enumerate() {
        dot(
            &mut svg,
            xs[i],
            y(p.value),
            p,
            shown_values[i],
            shown_labels[i],
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" fill=\"#1f2328\">compliant files after each journalled run</text>\n</svg>",
        LEFT + pw / 2.0,
        H - 6.0
    );
    svg
}

/// Which labels to draw so that no two overlap: the last (now) always, then from the left every
/// label that clears the one drawn before it and the last one.
pub fn spaced<T>(xs: &[f64], items: &[T], chars: impl Fn(&T) -> usize) -> Vec<bool> {
    let half = |i: usize| chars(&items[i]) as f64 * CHAR_W / 2.0;
    let n = xs.len();
    let mut shown = vec![false; n];
    let Some(last) = n.checked_sub(1) else {
        return shown;
    };
    shown[last] = true;
    let mut previous: Option<usize> = None;
    for i in 0..last {
        let clears = |j: usize| (xs[j] - xs[i]).abs() >= half(i) + half(j) + GAP;
        if previous.is_none_or(clears) && clears(last) {
            shown[i] = true;
            previous = Some(i);
        }
    }
    shown
}

fn dot(svg: &mut String, x: f64, y: f64, p: &Point, value: bool, label: bool) {
    let _ = write!(
        svg,
        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"#2da44e\"><title>{}: {}</title></circle>",
        esc(&p.label),
        p.value
    );
    if value {
        let _ = write!(
            svg,
            "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#1f2328\">{}</text>",
            y - 8.0,
            p.value
        );
    }
    svg.push('\n');
    if !label {
        return;
    }
    let _ = writeln!(
        svg,
        "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#57606a\">{}</text>",
        H - BOTTOM + 18.0,
        esc(&p.label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_drawn_never_overlap_and_now_is_always_drawn() {
        let labels: Vec<String> = (0..60).map(|i| format!("#{i} check")).collect();
        let pw = W - LEFT - RIGHT;
        let xs: Vec<f64> = (0..60).map(|i| LEFT + pw * i as f64 / 59.0).collect();
        let shown = spaced(&xs, &labels, |l| l.len());
        assert!(shown[59] && shown[0]);
        let drawn: Vec<usize> = (0..60).filter(|&i| shown[i]).collect();
        assert!(drawn.len() > 3 && drawn.len() < 60);
        for pair in drawn.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let room = (labels[a].len() + labels[b].len()) as f64 * CHAR_W / 2.0;
            assert!(xs[b] - xs[a] >= room, "labels {a} and {b} overlap");
        }
    }
}
