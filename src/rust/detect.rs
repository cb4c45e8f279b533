//! The Rust rules: facts in, findings out (with the edits that fix each).

use std::ops::Range;

use super::facts::{EnvWrite, Facts};
use super::fix;
use super::rules::*;
use super::RustHeader;
use crate::edit::Edit;
use crate::finding::Finding;
use crate::policy::Policy;

pub struct Context<'a> {
    pub source: &'a str,
    pub policy: &'a Policy,
    pub header: &'a RustHeader,
    pub edition: u32,
    pub newline: &'a str,
    pub in_phase: bool,
}

/// Where the header pieces are, when they are in place.
pub struct Sites {
    pub comment: Option<Range<usize>>,
    /// The env block at the top of a sync `fn main`.
    pub main_env: Option<Range<usize>>,
}

pub fn locate(facts: &Facts, ctx: &Context) -> Sites {
    let comment_text = ctx.header.comment_text(ctx.newline);
    let comment = ctx
        .source
        .match_indices(comment_text.as_str())
        .map(|(i, _)| i)
        .find(|&i| {
            let at_line_start = i == 0 || ctx.source[..i].ends_with('\n');
            let after_attrs = facts.inner_attrs_end.is_none_or(|end| i >= end);
            let before_items = facts.first_item.is_none_or(|first| i <= first);
            at_line_start && after_attrs && before_items
        });
    let main_env = facts.main.as_ref().filter(|m| !m.is_async).and_then(|m| {
        let text =
            ctx.header
                .main_env_text(ctx.edition, &fix::indent_unit(ctx.source), ctx.newline);
        ctx.source[m.body_start..]
            .starts_with(&text)
            .then(|| m.body_start..m.body_start + text.len())
    });
    Sites {
        comment: comment.map(|i| i..i + comment_text.len()),
        main_env,
    }
}

pub fn findings_and_edits(facts: &Facts, ctx: &Context) -> (Vec<Finding>, Vec<Edit>) {
    let gpu_code = facts.uses_gpu_crate
        || !facts.env_writes.is_empty()
        || !facts.device_indices.is_empty()
        || !facts.nvml_indices.is_empty();
    let sites = locate(facts, ctx);
    let mut out = Vec::new();
    if gpu_code || ctx.in_phase {
        header_findings(facts, ctx, &sites, &mut out);
    }
    for write in &facts.env_writes {
        if let Some(f) = env_finding(facts, ctx, &sites, write) {
            out.push(f);
        }
    }
    for d in &facts.device_indices {
        out.push(
            Finding::new(
                &DEVICE_INDEX,
                d.digits.clone(),
                format!(
                    "{} selects device {}: with CUDA_VISIBLE_DEVICES='{}' the target card is device 0",
                    d.what, d.index, ctx.policy.visible_devices
                ),
            )
            .with_edits(vec![Edit::replace(d.digits.clone(), "0")]),
        );
    }
    for (r, n) in &facts.nvml_indices {
        out.push(Finding::new(
            &NVML_INDEX,
            r.clone(),
            format!("device_by_index({n}) is NVML's physical PCI-order index, not remapped by CUDA_VISIBLE_DEVICES: select the card by UUID or PCI bus id (device_by_uuid / device_by_pci_bus_id)"),
        ));
    }
    out.sort_by_key(|f| (f.range.start, f.rule.code));
    let edits = if out.iter().any(|f| f.is_violation() && f.fixable) {
        fix::plan(facts, ctx, &sites, &out)
    } else {
        Vec::new()
    };
    (out, edits)
}

fn header_findings(facts: &Facts, ctx: &Context, sites: &Sites, out: &mut Vec<Finding>) {
    if sites.comment.is_none() {
        out.push(
            Finding::new(
                &HEADER_MISSING,
                0..0,
                "GPU code without the standard GPU comment header",
            )
            .fixed_by_plan(),
        );
    }
    let Some(main) = &facts.main else { return };
    if main.is_async {
        let has_env = facts.env_writes.iter().any(|w| w.in_main.is_some());
        if !has_env {
            out.push(Finding::new(
                &ENV_IN_ASYNC_MAIN,
                main.sig.clone(),
                "async main: the GPU env cannot be set safely here (runtime threads already run); set it in a sync main before building the runtime, or in the launcher",
            ));
        }
        return;
    }
    if sites.main_env.is_none() {
        let unsafe_note = if ctx.edition >= 2024 {
            " (in an `unsafe` block: edition 2024)"
        } else {
            ""
        };
        out.push(
            Finding::new(
                &MAIN_ENV_MISSING,
                main.sig.clone(),
                format!("fn main must set CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as its first statements{unsafe_note}"),
            )
            .fixed_by_plan(),
        );
    }
}

fn in_site(site: &Option<Range<usize>>, r: &Range<usize>) -> bool {
    site.as_ref()
        .is_some_and(|s| s.start <= r.start && r.end <= s.end)
}

/// Whether the plan removes this write: every write in a sync main outside the header
/// block, and elsewhere the writes that contradict the policy.
pub fn removes(facts: &Facts, ctx: &Context, sites: &Sites, w: &EnvWrite) -> bool {
    if in_site(&sites.main_env, &w.stmt) {
        return false;
    }
    let async_main = facts.main.as_ref().is_some_and(|m| m.is_async);
    match w.in_main {
        Some(_) => !async_main,
        None => w.value.as_deref() != ctx.policy.env_value(w.var),
    }
}

fn env_finding(facts: &Facts, ctx: &Context, sites: &Sites, w: &EnvWrite) -> Option<Finding> {
    let name = w.var.name();
    let shown = w
        .value
        .as_deref()
        .map_or("a computed value".to_string(), |v| format!("\"{v}\""));
    if w.in_main.is_some() && facts.main.as_ref().is_some_and(|m| m.is_async) {
        return Some(Finding::new(
            &ENV_IN_ASYNC_MAIN,
            w.at.clone(),
            format!("{name} is set inside an async main, where runtime threads already run (unsound): move it before the runtime starts"),
        ));
    }
    if !removes(facts, ctx, sites, w) {
        return None;
    }
    let message = match w.in_main {
        Some(_) => format!(
            "{name} is set to {shown} in main outside the GPU header: the header sets it first"
        ),
        None => format!(
            "{name} is set to {shown}, which contradicts the policy's {}",
            ctx.policy
                .env_value(w.var)
                .map_or("(unset)".to_string(), |v| format!("\"{v}\""))
        ),
    };
    let finding = Finding::new(&ENV_WRITE, w.at.clone(), message);
    Some(
        match crate::removal::remove_line(ctx.source, w.stmt.clone(), None, "//") {
            Some(edit) => finding.with_edits(vec![edit]),
            None => finding,
        },
    )
}
