//! `report --format html`: one self-contained page (inline CSS, inline SVG, no script, no
//! external asset) with a progress bar per phase and the burndown chart. Written as
//! well-formed XML so any parser, or a browser with no network, can read it.

use std::fmt::Write;

use super::coordinator::{PhaseReport, Report};
use super::markdown::{card, kind_label};
use super::progress::{format_percent, Counts};

mod chart;

const STYLE: &str = "
body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px 32px;color:#1f2328;background:#fff;font-size:14px}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
svg.burndown{display:block;width:100%;min-width:720px;max-width:1000px;height:auto}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}.meta{color:#57606a;margin:0 0 16px}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:bold;color:#fff}
.done{background:#1a7f37}.in_progress{background:#0969da}.not_started{background:#6e7781}.attention{background:#cf222e}.empty{background:#afb8c1}
.phase{margin:10px 0 16px}.phase .head{display:flex;justify-content:space-between;margin-bottom:4px}
.bar{height:18px;background:#eaeef2;border-radius:4px;overflow:hidden;display:flex}
.bar.thin{height:7px;margin-top:3px}.seg{height:100%}
.ok{background:#2da44e}.bad{background:#cf222e}.cpu{background:#0969da}.gpu{background:#8250df}
.legend{color:#57606a;font-size:12px;margin-top:3px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left}
th{background:#f6f8fa}td.n{text-align:right}tr.total td{font-weight:bold}
code{font-family:'DejaVu Sans Mono',monospace;font-size:12px;background:#f6f8fa;padding:0 3px;overflow-wrap:anywhere}
th code{overflow-wrap:normal}
details{margin:3px 0 8px}summary{cursor:pointer;color:#0969da}
@media (max-width:640px){body{margin:12px;font-size:13px}h1{font-size:20px}td,th{padding:3px 5px}.phase .head{flex-wrap:wrap;gap:2px 8px}}
ul.alerts li{margin:3px 0}.kind{font-weight:bold;color:#cf222e}.regressed{color:#cf222e;font-weight:bold}
";

pub fn render(r: &Report) -> String {
    let mut out = String::new();
    head(&mut out, r);
    // The answer first (mission status, then the phases); failures, leaks and drift are named
    // in one line under the status and listed right after the phase table.
    let urgent = super::markdown::urgent(r);
    if urgent {
        let _ = writeln!(
            out,
            "<p class=\"urgent\"><a href=\"#alerts\">{} alert{} need{} attention</a> (failures, leaks or regressions): listed after the phase table.</p>",
            r.alerts.len(),
            if r.alerts.len() == 1 { "" } else { "s" },
            if r.alerts.len() == 1 { "s" } else { "" }
        );
    }
    phases(&mut out, r);
    table(&mut out, r);
    if urgent {
        alerts(&mut out, r);
    }
    // Below ~720 px the chart scrolls sideways rather than shrink its labels out of sight.
    out.push_str("<h2>Burndown</h2>\n<div class=\"scroll\">\n");
    out.push_str(&chart::burndown(r));
    out.push_str("</div>\n");
    if !urgent {
        alerts(&mut out, r);
    }
    policy(&mut out, r);
    hosts(&mut out, r);
    remaining(&mut out, r);
    review(&mut out, r);
    if !r.warnings.is_empty() {
        out.push_str("<h2>Journal warnings</h2>\n<ul>\n");
        for w in &r.warnings {
            let _ = writeln!(out, "<li>{}</li>", esc(w));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn head(out: &mut String, r: &Report) {
    let name = esc(r.root.rsplit(['/', '\\']).next().unwrap_or(&r.root));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>GPU homogenization report: {name}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    );
    let _ = writeln!(out, "<h1>GPU homogenization report: {name}</h1>");
    let _ = writeln!(
        out,
        "<p class=\"meta\">Generated {} by gpu-homogenize {} from a fresh scan of <code>{}</code> and its journal ({} run{}).</p>",
        esc(&r.generated_at),
        esc(r.version),
        esc(&r.root),
        r.journalled_runs(),
        if r.journalled_runs() == 1 { "" } else { "s" }
    );
    let m = &r.mission;
    let _ = writeln!(
        out,
        "<p><strong>{}: {}/{} files compliant ({})</strong> {}</p>",
        r.mission_label(),
        m.compliant,
        m.total,
        format_percent(m.percent),
        pill(m)
    );
}

fn pill(c: &Counts) -> String {
    let class = serde_json::to_value(c.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!("<span class=\"pill {class}\">{}</span>", c.status.label())
}

fn phases(out: &mut String, r: &Report) {
    out.push_str("<h2>Progress by phase</h2>\n");
    for p in &r.phases {
        phase_bars(out, &p.name, &p.counts);
    }
    phase_bars(out, "Overall", &r.overall);
}

fn phase_bars(out: &mut String, name: &str, c: &Counts) {
    let w = |n: usize| width(n, c.total);
    let _ = writeln!(
        out,
        "<div class=\"phase\"><div class=\"head\"><span><strong>{}</strong> {}</span><span>{}/{} compliant ({})</span></div>",
        esc(name),
        pill(c),
        c.compliant,
        c.total,
        format_percent(c.percent)
    );
    let _ = writeln!(
        out,
        "<div class=\"bar\"><div class=\"seg ok\" style=\"width:{}\"></div><div class=\"seg bad\" style=\"width:{}\"></div></div>",
        w(c.compliant),
        w(c.regressed.max(c.errors).min(c.total - c.compliant))
    );
    for (class, n) in [("cpu", c.cpu_validated), ("gpu", c.gpu_validated)] {
        let _ = writeln!(
            out,
            "<div class=\"bar thin\"><div class=\"seg {class}\" style=\"width:{}\"></div></div>",
            w(n)
        );
    }
    let _ = writeln!(
        out,
        "<div class=\"legend\">green: compliant, red: regressed or failing; blue: CPU-validated {}/{}; violet: GPU-validated {}/{}</div></div>",
        c.cpu_validated, c.total, c.gpu_validated, c.total
    );
}

fn width(n: usize, total: usize) -> String {
    if total == 0 {
        return "0%".into();
    }
    format!("{:.2}%", n as f64 * 100.0 / total as f64)
}

fn table(out: &mut String, r: &Report) {
    // The status next to the phase, and the table scrolls sideways on a narrow screen: the
    // status column never falls off the page.
    out.push_str("<div class=\"scroll\"><table>\n<tr><th>Phase</th><th>Status</th><th>Files</th><th>Compliant</th><th>%</th><th>Fixed by tool</th><th>CPU-validated</th><th>GPU-validated</th><th>Leaks</th><th>Errors</th><th>Regressed</th></tr>\n");
    for p in &r.phases {
        row(out, &p.name, &p.counts, "");
    }
    row(out, "Overall", &r.overall, " class=\"total\"");
    out.push_str("</table></div>\n");
}

fn row(out: &mut String, name: &str, c: &Counts, class: &str) {
    let _ = write!(out, "<tr{class}><td>{}</td><td>{}</td>", esc(name), pill(c));
    for n in [c.total, c.compliant] {
        let _ = write!(out, "<td class=\"n\">{n}</td>");
    }
    let _ = write!(out, "<td class=\"n\">{}</td>", format_percent(c.percent));
    for n in [
        c.fixed,
        c.cpu_validated,
        c.gpu_validated,
        c.leaks,
        c.errors,
        c.regressed,
    ] {
        let _ = write!(out, "<td class=\"n\">{n}</td>");
    }
    out.push_str("</tr>\n");
}

/// Alerts grouped by kind (most urgent first, as they are sorted), each group showing its first
/// few and folding the rest: mid-mission the page opened with 27 paragraphs before any number.
fn alerts(out: &mut String, r: &Report) {
    out.push_str("<h2 id=\"alerts\">Alerts</h2>\n");
    if r.alerts.is_empty() {
        out.push_str("<p>No alerts.</p>\n");
        return;
    }
    for group in super::coordinator::alert_groups(&r.alerts) {
        let kind = group[0].kind;
        let _ = writeln!(
            out,
            "<h3><span class=\"kind\">{}</span> ({})</h3>\n<ul class=\"alerts\">",
            kind_label(kind),
            group.len()
        );
        let (shown, folded) = group.split_at(group.len().min(super::coordinator::ALERTS_SHOWN));
        shown.iter().for_each(|a| alert(out, a));
        out.push_str("</ul>\n");
        if !folded.is_empty() {
            let _ = writeln!(
                out,
                "<details><summary>{} more {} alert{}</summary>\n<ul class=\"alerts\">",
                folded.len(),
                kind_label(kind),
                if folded.len() == 1 { "" } else { "s" }
            );
            folded.iter().for_each(|a| alert(out, a));
            out.push_str("</ul></details>\n");
        }
    }
}

fn alert(out: &mut String, a: &super::coordinator::Alert) {
    let path = a
        .path
        .as_deref()
        .map_or(String::new(), |p| format!("<code>{}</code>: ", esc(p)));
    let run = match (&a.run, &a.path) {
        (Some(run), None) => format!(" ({run})"),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "<li>{path}{}</li>",
        code_spans(&esc(&format!("{}{run}", a.message)))
    );
}

fn policy(out: &mut String, r: &Report) {
    let p = &r.policy.policy;
    out.push_str("<h2>Policy and GPU</h2>\n<table>\n");
    for (var, value) in &r.policy.env {
        let _ = writeln!(
            out,
            "<tr><th><code>{}</code></th><td><code>{}</code></td></tr>",
            esc(var),
            esc(value)
        );
    }
    let forbidden: Vec<String> = p.forbidden.iter().map(card).collect();
    let devices: Vec<String> = r
        .gpu
        .devices
        .iter()
        .map(|(d, n)| format!("{d}: {n} file{}", if *n == 1 { "" } else { "s" }))
        .collect();
    let rows = [
        ("Target card", card(&p.target)),
        ("Forbidden cards", forbidden.join("; ")),
        (
            "GPU checks ran on",
            if devices.is_empty() {
                "no GPU check on record".into()
            } else {
                devices.join("; ")
            },
        ),
        (
            "Leak drift",
            format!(
                "{:.0} MiB in all (limit {:.0} MiB; alert above {:.0} MiB for one check)",
                r.gpu.drift_mib, p.leak_fail_mib, p.leak_alert_mib
            ),
        ),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    out.push_str("</table>\n");
}

/// The checks per host, when journals of several hosts were merged.
fn hosts(out: &mut String, r: &Report) {
    if r.hosts.is_empty() {
        return;
    }
    out.push_str("<h2>GPU checks per host</h2>\n<div class=\"scroll\"><table>\n<tr><th>Host</th><th>Cards</th><th>Checked</th><th>Passed</th><th>Failed</th><th>Leaks</th></tr>\n");
    for h in &r.hosts {
        let cards: Vec<String> = h
            .cards
            .iter()
            .map(|(uuid, name)| format!("{} <code>{}</code>", esc(name), esc(uuid)))
            .collect();
        let mark = if h.failed + h.leaks > 0 { "❌ " } else { "" };
        let _ = writeln!(
            out,
            "<tr><th>{mark}{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&h.host),
            cards.join("<br>"),
            h.checked,
            h.passed,
            h.failed,
            h.leaks
        );
    }
    out.push_str("</table></div>\n");
    for h in &r.hosts {
        let _ = writeln!(
            out,
            "<details><summary>Processes per program on {} ({} checks)</summary>\n<ul>",
            esc(&h.host),
            h.checks.len()
        );
        for c in &h.checks {
            let _ = writeln!(
                out,
                "<li><code>{}</code> on {}<ul>",
                esc(&c.path),
                esc(&c.device)
            );
            for p in &c.processes {
                let _ = writeln!(out, "<li>{}</li>", esc(&super::hosts::process_line(p)));
            }
            if let Some(why) = &c.processes_unlisted {
                let _ = writeln!(out, "<li>processes not attributed: {}</li>", esc(why));
            }
            out.push_str("</ul></li>\n");
        }
        out.push_str("</ul></details>\n");
    }
    for h in r.hosts.iter().filter(|h| !h.failures.is_empty()) {
        let _ = writeln!(out, "<h3>Failed on {}</h3>\n<ul>", esc(&h.host));
        for f in &h.failures {
            let _ = writeln!(
                out,
                "<li><code>{}</code>: {}</li>",
                esc(&f.path),
                esc(&f.message)
            );
        }
        out.push_str("</ul>\n");
    }
}

fn remaining(out: &mut String, r: &Report) {
    out.push_str("<h2>Remaining files</h2>\n");
    for p in r.phases.iter() {
        phase_remaining(out, p);
    }
}

fn phase_remaining(out: &mut String, p: &PhaseReport) {
    let _ = writeln!(
        out,
        "<h3>{} ({} remaining)</h3>",
        esc(&p.name),
        p.remaining.len()
    );
    if p.remaining.is_empty() {
        out.push_str("<p>All files compliant.</p>\n");
        return;
    }
    out.push_str("<ol>\n");
    for f in &p.remaining {
        let mark = if f.regressed {
            " <span class=\"regressed\">regressed</span>"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<li><code>{}</code>{mark}: {}</li>",
            esc(&f.path),
            code_spans(&esc(&super::markdown::why(f)))
        );
    }
    out.push_str("</ol>\n");
}

fn review(out: &mut String, r: &Report) {
    out.push_str("<h2>Review items</h2>\n");
    if r.review.is_empty() {
        out.push_str("<p>None: nothing is left for a person to decide.</p>\n");
        return;
    }
    out.push_str("<ul>\n");
    for item in &r.review {
        let _ = writeln!(
            out,
            "<li><code>{}:{}</code> {}: {}</li>",
            esc(&item.path),
            item.line,
            esc(&item.rule),
            code_spans(&esc(&item.message))
        );
    }
    out.push_str("</ul>\n");
}

/// Markdown-style `code` in messages (already escaped) as <code> elements.
fn code_spans(escaped: &str) -> String {
    let parts: Vec<&str> = escaped.split('`').collect();
    if parts.len().is_multiple_of(2) {
        // An unpaired backtick: leave the text as it is rather than guess.
        return escaped.to_string();
    }
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

/// Text safe in element content and attribute values: [`crate::base::escape::printable`] (a bidi
/// override would reorder the page as it reorders a terminal), then HTML-escaped.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in crate::base::escape::printable(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
