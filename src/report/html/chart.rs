//! The burndown as an inline SVG line chart: compliant files after each journalled run, then
//! now (the fresh scan), against the target.

use std::fmt::Write;

use super::esc;
use crate::report::coordinator::Report;

const W: f64 = 760.0;
const H: f64 = 300.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 80.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 64.0;

struct Point {
    label: String,
    value: usize,
}

fn points(r: &Report) -> Vec<Point> {
    let mut points: Vec<Point> = r
        .runs
        .iter()
        .enumerate()
        .map(|(i, run)| Point {
            label: format!(
                "#{} {}{}",
                i + 1,
                run.command,
                if run.dry_run { " (dry)" } else { "" }
            ),
            value: run.compliant,
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
        "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"Burndown: compliant files after each run\">"
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
    for (i, p) in points.iter().enumerate() {
        dot(&mut svg, x(i), y(p.value), p);
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" fill=\"#1f2328\">compliant files after each journalled run</text>\n</svg>",
        LEFT + pw / 2.0,
        H - 6.0
    );
    svg
}

fn dot(svg: &mut String, x: f64, y: f64, p: &Point) {
    let _ = writeln!(
        svg,
        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"#2da44e\"/><text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#1f2328\">{}</text>",
        y - 8.0,
        p.value
    );
    let _ = writeln!(
        svg,
        "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#57606a\">{}</text>",
        H - BOTTOM + 18.0,
        esc(&p.label)
    );
}
