//! `report --format md`: the bundle a coordinator pastes or commits — the tables of the
//! hand-written bundles (seed 000), generated from the scan and the journal.

use std::fmt::Write;

use super::coordinator::{Alert, AlertKind, PhaseReport, Reason, Remaining, Report};
use super::progress::{format_percent, percent, Counts, Status};
use crate::base::escape::printable;
use crate::model::policy::OTHER_PHASE;

pub fn render(r: &Report) -> String {
    let mut out = String::new();
    header(&mut out, r);
    // The answer first (the mission's status, then the phases); failures, leaks and drift are
    // named in one line under the status and listed right after the phase table.
    if urgent(r) {
        let n = r.alerts.len();
        let _ = writeln!(
            out,
            "**{n} alert{} need{} attention** (failures, leaks or regressions): listed after the phase table.\n",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" }
        );
    }
    phase_table(&mut out, r);
    if urgent(r) {
        alerts(&mut out, &r.alerts);
    }
    metrics(&mut out, r);
    policy(&mut out, r);
    gpu(&mut out, r);
    hosts(&mut out, r);
    files(&mut out, r);
    review(&mut out, r);
    burndown(&mut out, r);
    if !urgent(r) {
        alerts(&mut out, &r.alerts);
    }
    if !r.warnings.is_empty() {
        out.push_str("## Journal warnings\n\n");
        for w in &r.warnings {
            let _ = writeln!(out, "- {}", message(w));
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
    let name = text(r.root.rsplit(['/', '\\']).next().unwrap_or(&r.root));
    let m = &r.mission;
    let _ = writeln!(out, "# GPU homogenization report: {name}\n");
    let _ = writeln!(
        out,
        "Generated {} by gpu-homogenize {} from a fresh scan of {} and its journal ({} run{}).\n",
        r.generated_at,
        r.version,
        code(&r.root),
        r.journalled_runs(),
        if r.journalled_runs() == 1 { "" } else { "s" }
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
        phase_row(out, &text(&p.name), &p.counts, false);
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
        let _ = writeln!(out, "| {} | {} |", cell(&code(var)), cell(&code(value)));
    }
    let _ = writeln!(out, "| Target card | {} |", text(&card(&p.target)));
    let forbidden: Vec<String> = p.forbidden.iter().map(card).collect();
    let forbidden = if forbidden.is_empty() {
        "none".to_string()
    } else {
        forbidden.join("; ")
    };
    let _ = writeln!(out, "| Forbidden cards | {} |", text(&forbidden));
    let _ = writeln!(
        out,
        "| Leak limits | alert above {:.0} MiB for one check; fail above {:.0} MiB in all |\n",
        p.leak_alert_mib, p.leak_fail_mib
    );
}

pub fn card(c: &crate::model::policy::CardSelector) -> String {
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
            "- Checks ran on {}: {files} file{}",
            text(device),
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

/// The checks per host, when journals of several hosts were merged: each host's cards, counts
/// and failures apart.
fn hosts(out: &mut String, r: &Report) {
    if r.hosts.is_empty() {
        return;
    }
    out.push_str(
        "## GPU checks per host

| Host | Cards (UUID) | Checked | Passed | Failed | Leaks | Last check |
|---|---|---:|---:|---:|---:|---|
",
    );
    for h in &r.hosts {
        let cards: Vec<String> = h
            .cards
            .iter()
            .map(|(uuid, name)| format!("{} {}", text(name), code(uuid)))
            .collect();
        let status = if h.failed + h.leaks > 0 { "❌ " } else { "" };
        let _ = writeln!(
            out,
            "| {status}{} | {} | {} | {} | {} | {} | {} |",
            text(&h.host),
            cards.join("<br>"),
            h.checked,
            h.passed,
            h.failed,
            h.leaks,
            text(&h.last_at)
        );
    }
    out.push('\n');
    for h in &r.hosts {
        let _ = writeln!(
            out,
            "<details><summary>Processes per program on {} ({} checks)</summary>\n",
            text(&h.host),
            h.checks.len()
        );
        for c in &h.checks {
            let _ = writeln!(
                out,
                "- {} ({}) on {}",
                code(&c.path),
                kind(c.status),
                text(&c.device)
            );
            for p in &c.processes {
                let _ = writeln!(out, "  - {}", message(&super::hosts::process_line(p)));
            }
            if let Some(why) = &c.processes_unlisted {
                let _ = writeln!(out, "  - processes not attributed: {}", message(why));
            }
            if c.foreign > 0 {
                let _ = writeln!(
                    out,
                    "  - {} foreign process(es) on the cards meanwhile",
                    c.foreign
                );
            }
        }
        out.push_str("\n</details>\n\n");
    }
    for h in r.hosts.iter().filter(|h| !h.failures.is_empty()) {
        let _ = writeln!(out, "Failed on {}:\n", text(&h.host));
        for f in &h.failures {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                code(&f.path),
                kind(f.status),
                message(&f.message)
            );
        }
        out.push('\n');
    }
}

fn kind(status: crate::model::outcome::CheckStatus) -> &'static str {
    use crate::model::outcome::CheckStatus;
    match status {
        CheckStatus::Passed => "passed",
        CheckStatus::Failed => "failed",
        CheckStatus::Leak => "leak",
        CheckStatus::Skipped => "skipped",
        CheckStatus::Error => "error",
    }
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
        text(&p.name),
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
        let _ = writeln!(
            out,
            "{}. {}{mark}: {}",
            i + 1,
            code(&f.path),
            message(&why(f))
        );
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
            "- {} {}: {}",
            code(&format!("{}:{}", item.path, item.line)),
            text(&item.rule),
            message(&item.message)
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
    let mut number = 0;
    for run in &r.runs {
        let command = if run.dry_run {
            format!("{} --dry-run", run.command)
        } else {
            run.command.clone()
        };
        let (label, command) = if run.as_found {
            (
                "start".to_string(),
                format!("as {} found it", cell(&code(&command))),
            )
        } else {
            number += 1;
            (number.to_string(), cell(&code(&command)))
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {command} | {} | {} | {} |",
            text(&run.at),
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
    // By kind, most urgent first, a few of each shown and the rest folded (GitHub renders
    // `<details>` in a comment or a job summary): the page leads with numbers, not a wall.
    for group in crate::report::coordinator::alert_groups(alerts) {
        let kind = group[0].kind;
        let _ = writeln!(out, "**{}** ({}):\n", kind_label(kind), group.len());
        let shown = group.len().min(crate::report::coordinator::ALERTS_SHOWN);
        let (first, folded) = group.split_at(shown);
        first.iter().for_each(|a| alert(out, a));
        if !folded.is_empty() {
            let _ = writeln!(
                out,
                "\n<details><summary>{} more {} alert{}</summary>\n",
                folded.len(),
                kind_label(kind),
                if folded.len() == 1 { "" } else { "s" }
            );
            folded.iter().for_each(|a| alert(out, a));
            out.push_str("\n</details>\n");
        }
        out.push('\n');
    }
}

fn alert(out: &mut String, a: &Alert) {
    let path = a
        .path
        .as_deref()
        .map_or(String::new(), |p| format!(" {}", code(p)));
    let _ = writeln!(
        out,
        "- ⚠️ **{}**{path}: {}",
        kind_label(a.kind),
        message(&a.message)
    );
    if let (Some(run), None) = (&a.run, &a.path) {
        let _ = writeln!(out, "  ({})", message(run));
    }
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

/// Text from the tree (a phase name, a config value, a journal line) in Markdown prose or a table
/// cell: [`printable`], then every character that would make markup of it (a cell's end, a code
/// span, raw HTML, a link, an entity such as `&#8238;`) backslash-escaped.
fn text(s: &str) -> String {
    let s = printable(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | '`' | '|' | '<' | '[' | ']' | '&') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Text from the tree as a code span, [`printable`]: fenced by one backtick more than its longest
/// run of them (CommonMark), so that none of it ends the span; nothing in a span is markup.
fn code(s: &str) -> String {
    let s = printable(s);
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// A code span in a table cell: GFM ends a cell at a `|` even inside a span, unless escaped.
fn cell(code: &str) -> String {
    code.replace('|', "\\|")
}

/// A message (the tool's words around what it quotes from the tree): [`printable`], its
/// `code` spans kept as they are, the text between them escaped as [`text`]; with an unpaired
/// backtick, all of it escaped.
fn message(s: &str) -> String {
    let s = printable(s);
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return text(&s);
    }
    let mut out = String::with_capacity(s.len());
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 {
            out.push('`');
            out.push_str(part);
            out.push('`');
        } else {
            out.push_str(&text(part));
        }
    }
    out
}
