//! `report --format md`: the bundle a coordinator pastes or commits — the tables of the
//! hand-written bundles (seed 000), generated from the scan and the journal.

use std::fmt::Write;

use super::coordinator::{Alert, AlertKind, PhaseReport, Reason, Remaining, Report};
use super::progress::{format_percent, percent, Counts, Status};
use crate::policy::OTHER_PHASE;

pub fn render(r: &Report) -> String {
    let mut out = String::new();
    header(&mut out, r);
    if urgent(r) {
        alerts(&mut out, &r.alerts);
    }
    phase_table(&mut out, r);
    metrics(&mut out, r);
    policy(&mut out, r);
    gpu(&mut out, r);
    files(&mut out, r);
    review(&mut out, r);
    burndown(&mut out, r);
    if !urgent(r) {
        alerts(&mut out, &r.alerts);
    }
    if !r.warnings.is_empty() {
        out.push_str("## Journal warnings\n\n");
        for w in &r.warnings {
            let _ = writeln!(out, "- {w}");
        }
        out.push('\n');
    }
    out
}

/// Failing, leaking or drifting: the alerts come first, before any good news.
pub fn urgent(r: &Report) -> bool {
    r.alerts.iter().any(|a| {
        matches!(
            a.kind,
            AlertKind::Failing | AlertKind::Leak | AlertKind::Drift | AlertKind::Regressed
        )
    })
}

pub fn badge(status: Status) -> String {
    let icon = match status {
        Status::Empty => "➖",
        Status::NotStarted => "⏳",
        Status::InProgress => "🔄",
        Status::Done => "✅",
        Status::Attention => "⚠️",
    };
    format!("{icon} {}", status.label())
}

fn header(out: &mut String, r: &Report) {
    let name = r.root.rsplit(['/', '\\']).next().unwrap_or(&r.root);
    let m = &r.mission;
    let _ = writeln!(out, "# GPU homogenization report: {name}\n");
    let _ = writeln!(
        out,
        "Generated {} by gpu-homogenize {} from a fresh scan of `{}` and its journal ({} run{}).\n",
        r.generated_at,
        r.version,
        r.root,
        r.runs.len(),
        if r.runs.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "**{}: {}/{} files compliant ({})** — {}\n",
        r.mission_label(),
        m.compliant,
        m.total,
        format_percent(m.percent),
        badge(m.status)
    );
    let other = r.phases.iter().find(|p| p.name == OTHER_PHASE);
    if let Some(other) = other.filter(|_| r.has_declared_phases()) {
        let _ = writeln!(
            out,
            "Outside the declared phases (\"Other\"): {} file{} with GPU code, {} compliant.\n",
            other.counts.total,
            if other.counts.total == 1 { "" } else { "s" },
            other.counts.compliant
        );
    }
}

fn phase_table(out: &mut String, r: &Report) {
    out.push_str("## Progress by phase\n\n");
    out.push_str("| Phase | Files | Compliant | % | Fixed by tool | CPU-validated | GPU-validated | Leaks | Errors | Regressed | Status |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for p in &r.phases {
        phase_row(out, &cell(&p.name), &p.counts, false);
    }
    phase_row(out, "Overall", &r.overall, true);
    out.push('\n');
}

fn phase_row(out: &mut String, name: &str, c: &Counts, bold: bool) {
    let b = if bold { "**" } else { "" };
    let _ = writeln!(
        out,
        "| {b}{name}{b} | {b}{}{b} | {b}{}{b} | {b}{}{b} | {} | {} | {} | {} | {} | {} | {} |",
        c.total,
        c.compliant,
        format_percent(c.percent),
        c.fixed,
        c.cpu_validated,
        c.gpu_validated,
        c.leaks,
        c.errors,
        c.regressed,
        badge(c.status)
    );
}

fn metrics(out: &mut String, r: &Report) {
    let o = &r.overall;
    out.push_str(
        "## Metrics\n\n| Metric | Target | Actual | % | Status |\n|---|---:|---:|---:|---|\n",
    );
    let share = |out: &mut String, name: &str, actual: usize| {
        let p = percent(actual, o.total);
        let status = match actual {
            _ if o.total == 0 => Status::Empty,
            a if a == o.total => Status::Done,
            0 => Status::NotStarted,
            _ => Status::InProgress,
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {actual} | {} | {} |",
            o.total,
            format_percent(p),
            badge(status)
        );
    };
    share(out, "Files compliant", o.compliant);
    share(out, "CPU-validated (current content)", o.cpu_validated);
    share(out, "GPU-validated (current content)", o.gpu_validated);
    let _ = writeln!(out, "| Fixed by the tool | — | {} | — | — |", o.fixed);
    for (name, n) in [
        ("Leaks", o.leaks),
        ("Errors", o.errors),
        ("Regressions", o.regressed),
    ] {
        let status = if n == 0 { "✅ none" } else { "⚠️ act now" };
        let _ = writeln!(out, "| {name} | 0 | {n} | — | {status} |");
    }
    let drift = if r.gpu.drift_failed {
        "⚠️ act now"
    } else {
        "✅ under the limit"
    };
    let _ = writeln!(
        out,
        "| Leak drift (MiB) | ≤ {:.0} | {:.0} | — | {drift} |",
        r.gpu.leak_fail_mib, r.gpu.drift_mib
    );
    let _ = writeln!(out, "| Review items | — | {} | — | — |", o.review);
    let _ = writeln!(
        out,
        "| Accepted by a person (noqa, baseline) | — | {} | — | — |",
        o.accepted
    );
    out.push('\n');
}

fn policy(out: &mut String, r: &Report) {
    let p = &r.policy.policy;
    out.push_str("## Policy\n\n| Setting | Value |\n|---|---|\n");
    for (var, value) in &r.policy.env {
        let _ = writeln!(out, "| `{var}` | `{}` |", cell(value));
    }
    let _ = writeln!(out, "| Target card | {} |", cell(&card(&p.target)));
    let forbidden: Vec<String> = p.forbidden.iter().map(card).collect();
    let forbidden = if forbidden.is_empty() {
        "none".to_string()
    } else {
        forbidden.join("; ")
    };
    let _ = writeln!(out, "| Forbidden cards | {} |", cell(&forbidden));
    let _ = writeln!(
        out,
        "| Leak limits | alert above {:.0} MiB for one check; fail above {:.0} MiB in all |\n",
        p.leak_alert_mib, p.leak_fail_mib
    );
}

pub fn card(c: &crate::policy::CardSelector) -> String {
    let mut parts = vec![c.label()];
    if let Some(gib) = c.min_memory_gib {
        parts.push(format!("at least {gib} GiB"));
    }
    if let (Some(bus), true) = (&c.pci_bus_id, c.name.is_some() || c.uuid.is_some()) {
        parts.push(format!("PCI {bus}"));
    }
    parts.join(", ")
}

fn gpu(out: &mut String, r: &Report) {
    let g = &r.gpu;
    out.push_str("## GPU\n\n");
    if g.devices.is_empty() {
        out.push_str("- No GPU check on record yet.\n");
    }
    for (device, files) in &g.devices {
        let _ = writeln!(
            out,
            "- Checks ran on {device}: {files} file{}",
            if *files == 1 { "" } else { "s" }
        );
    }
    let verdict = if g.drift_mib > g.leak_fail_mib {
        "⚠️ over the limit"
    } else {
        "✅ within the limit"
    };
    let _ = writeln!(
        out,
        "- Leak drift: {:.0} MiB in all (limit {:.0} MiB) {verdict}\n",
        g.drift_mib, g.leak_fail_mib
    );
}

fn files(out: &mut String, r: &Report) {
    out.push_str("## Files\n\n");
    for p in &r.phases {
        phase_files(out, p);
    }
}

fn phase_files(out: &mut String, p: &PhaseReport) {
    let c = &p.counts;
    let _ = writeln!(
        out,
        "### {}: {}/{} compliant ({}) {}\n",
        p.name,
        c.compliant,
        c.total,
        format_percent(c.percent),
        badge(c.status)
    );
    if p.remaining.is_empty() {
        let _ = writeln!(out, "All files compliant.\n");
        return;
    }
    let _ = writeln!(out, "Remaining ({}):\n", p.remaining.len());
    for (i, f) in p.remaining.iter().enumerate() {
        let mark = if f.regressed { " **regressed**" } else { "" };
        let _ = writeln!(out, "{}. `{}`{mark}: {}", i + 1, f.path, why(f));
    }
    out.push('\n');
}

/// `breaks GH101 device-string-index`, `rewrite refused: … (`fix` run … on …)`.
pub fn why(f: &Remaining) -> String {
    let mut what = f.reason.label().to_string();
    if f.reason == Reason::Rules {
        what = format!("{what} {}", f.labels.join(", "));
    } else if let Some(error) = &f.error {
        what = format!("{what}: {error}");
    }
    if let Some(run) = &f.run {
        what = format!("{what} ({run})");
    }
    if f.reason != Reason::Rules && !f.labels.is_empty() {
        what = format!("{what}; breaks {}", f.labels.join(", "));
    }
    what
}

fn review(out: &mut String, r: &Report) {
    out.push_str("## Review items\n\n");
    if r.review.is_empty() {
        out.push_str("None: nothing is left for a person to decide.\n\n");
        return;
    }
    for item in &r.review {
        let _ = writeln!(
            out,
            "- `{}:{}` {}: {}",
            item.path, item.line, item.rule, item.message
        );
    }
    out.push('\n');
}

fn burndown(out: &mut String, r: &Report) {
    out.push_str("## Burndown\n\n");
    if r.runs.is_empty() {
        let _ = writeln!(
            out,
            "No run journalled yet. Now: {}/{} compliant.\n",
            r.overall.compliant, r.overall.total
        );
        return;
    }
    out.push_str("| # | When (UTC) | Command | Files in run | Compliant after | |\n|---:|---|---|---:|---:|---|\n");
    let total = r.overall.total.max(1);
    for (i, run) in r.runs.iter().enumerate() {
        let command = if run.dry_run {
            format!("{} --dry-run", run.command)
        } else {
            run.command.clone()
        };
        let _ = writeln!(
            out,
            "| {} | {} | `{command}` | {} | {} | {} |",
            i + 1,
            run.at,
            run.files,
            run.compliant,
            bar(run.compliant, total)
        );
    }
    let _ = writeln!(
        out,
        "| now | this report | scan | {} | {} | {} |\n",
        r.overall.total,
        r.overall.compliant,
        bar(r.overall.compliant, total)
    );
}

/// A 20-cell text bar, for a table that must read well as plain text.
fn bar(part: usize, total: usize) -> String {
    // Rounded down, so a bar is full only when every file is compliant.
    let filled = part.min(total) * 20 / total;
    format!("{}{}", "█".repeat(filled), "░".repeat(20 - filled))
}

fn alerts(out: &mut String, alerts: &[Alert]) {
    out.push_str("## Alerts\n\n");
    if alerts.is_empty() {
        out.push_str("No alerts.\n\n");
        return;
    }
    for a in alerts {
        let path = a
            .path
            .as_deref()
            .map_or(String::new(), |p| format!(" `{p}`"));
        let _ = writeln!(out, "- ⚠️ **{}**{path}: {}", kind_label(a.kind), a.message);
        if let (Some(run), None) = (&a.run, &a.path) {
            let _ = writeln!(out, "  ({run})");
        }
    }
    out.push('\n');
}

pub fn kind_label(kind: AlertKind) -> &'static str {
    match kind {
        AlertKind::Failing => "failing",
        AlertKind::Regressed => "regressed",
        AlertKind::Leak => "leak",
        AlertKind::Drift => "leak drift",
        AlertKind::Changed => "changed by hand",
        AlertKind::Missing => "missing",
    }
}

/// Text safe inside a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
