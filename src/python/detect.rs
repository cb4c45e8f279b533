//! The rules: facts of a file (facts.rs) in, findings out.

use std::ops::Range;

use super::facts::{DeviceIndexKind, EnvWrite, Facts, TopKind};
use super::header::PythonHeader;
use super::rules::*;
use crate::edit::Edit;
use crate::finding::Finding;
use crate::policy::{EnvVar, Policy};

/// Where the verbatim header block sits, and whether that place is right.
#[derive(Debug, Clone)]
pub struct HeaderSite {
    pub range: Range<usize>,
    pub valid: bool,
}

/// Find the first verbatim copy of the header block at the start of a line.
pub fn locate_header(source: &str, header: &PythonHeader, newline: &str) -> Option<Range<usize>> {
    let block = header.block_text(newline);
    let mut from = 0;
    while let Some(i) = source[from..].find(&block) {
        let start = from + i;
        let at_line_start = start == 0 || source[..start].ends_with('\n');
        if at_line_start {
            return Some(start..start + block.len());
        }
        from = start + 1;
    }
    None
}

/// The header is in place when only the docstring, `from __future__` and `import os` come
/// before it, and `import os` does.
pub fn header_is_placed(facts: &Facts, block: &Range<usize>) -> bool {
    let before: Vec<TopKind> = facts
        .top
        .iter()
        .filter(|(r, _)| r.start < block.start)
        .map(|(_, k)| *k)
        .collect();
    before.iter().all(|k| *k != TopKind::Other) && before.contains(&TopKind::ImportOs)
}

pub struct RuleContext<'a> {
    pub policy: &'a Policy,
    pub header: &'a PythonHeader,
    pub site: Option<HeaderSite>,
    /// GPU code or declared in a mission phase: must carry the header.
    pub in_scope: bool,
    pub is_init: bool,
}

pub fn findings(facts: &Facts, ctx: &RuleContext) -> Vec<Finding> {
    let mut out = Vec::new();
    if ctx.in_scope {
        header_findings(facts, ctx, &mut out);
        docstring_finding(facts, ctx, &mut out);
        validation_findings(facts, ctx, &mut out);
    }
    for write in &facts.env_writes {
        if let Some(f) = env_write_finding(facts, ctx, write) {
            out.push(f);
        }
    }
    device_findings(facts, ctx.policy, &mut out);
    for (range, what) in &facts.multi_gpu {
        out.push(Finding::new(
            &MULTI_GPU_ASSUMPTION,
            range.clone(),
            format!("{what}; once CUDA_VISIBLE_DEVICES='{}' is set only one GPU is visible: review by hand", ctx.policy.visible_devices),
        ));
    }
    touchpoints(facts, ctx.is_init, &mut out);
    out.sort_by_key(|f| (f.range.start, f.rule.code));
    out
}

fn in_header(ctx: &RuleContext, r: &Range<usize>) -> bool {
    ctx.site
        .as_ref()
        .is_some_and(|s| s.range.start <= r.start && r.end <= s.range.end)
}

fn header_findings(facts: &Facts, ctx: &RuleContext, out: &mut Vec<Finding>) {
    if let Some(site) = &ctx.site {
        if !site.valid {
            out.push(Finding::new(
                &HEADER_MISPLACED,
                site.range.clone(),
                "the GPU header must come right after the docstring and `from __future__` imports, after `import os` and before every other import",
            ).fixed_by_plan());
        }
        return;
    }
    let writes: Vec<&EnvWrite> = facts.env_writes.iter().filter(|w| w.module_level).collect();
    if writes.is_empty() {
        out.push(Finding::new(
            &HEADER_MISSING,
            0..0,
            "GPU code without the standard GPU header (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER set before any GPU import)",
        ).fixed_by_plan());
        return;
    }
    let mut problems = Vec::new();
    for var in EnvVar::ALL {
        let Some(expected) = ctx.policy.env_value(var) else {
            continue;
        };
        let of_var: Vec<_> = writes.iter().filter(|w| w.var == var).collect();
        match of_var.first() {
            None => problems.push(format!("{} missing", var.name())),
            Some(w) if w.value.as_deref() != Some(expected) => problems.push(format!(
                "{}={} (policy: '{expected}')",
                var.name(),
                w.value
                    .as_deref()
                    .map_or("<not a literal>".to_string(), |v| format!("'{v}'"))
            )),
            Some(_) => {}
        }
    }
    let detail = if problems.is_empty() {
        "not the standard header".to_string()
    } else {
        problems.join(", ")
    };
    out.push(
        Finding::new(
            &HEADER_INCOMPLETE,
            writes[0].at.clone(),
            format!("GPU env set by hand, not with the standard header: {detail}"),
        )
        .fixed_by_plan(),
    );
}

fn docstring_finding(facts: &Facts, ctx: &RuleContext, out: &mut Vec<Finding>) {
    let marker = &ctx.header.docstring_marker;
    match (&facts.docstring, &facts.docstring_text) {
        (Some(range), Some(text)) if !text.contains(marker.as_str()) => out.push(
            Finding::new(
                &DOCSTRING_MARKER_MISSING,
                range.clone(),
                format!("the module docstring lacks the line `{marker}`"),
            )
            .fixed_by_plan(),
        ),
        (None, _) => out.push(
            Finding::new(
                &DOCSTRING_MARKER_MISSING,
                0..0,
                format!("no module docstring carrying `{marker}`"),
            )
            .fixed_by_plan(),
        ),
        _ => {}
    }
}

fn validation_findings(facts: &Facts, ctx: &RuleContext, out: &mut Vec<Finding>) {
    if !facts.uses_torch {
        return;
    }
    let name = &ctx.header.validate_fn_name;
    if !facts.defined_functions.contains(name) {
        out.push(
            Finding::new(
                &VALIDATION_MISSING,
                0..0,
                format!("uses torch but does not define `{name}()`"),
            )
            .fixed_by_plan(),
        );
    }
    if let Some(main) = &facts.main_block {
        if !main.calls.contains(name) {
            out.push(
                Finding::new(
                    &VALIDATION_MISSING,
                    main.if_start..main.if_start,
                    format!("the `__main__` block does not call `{name}()` first"),
                )
                .with_fix(main.first_stmt.is_some()),
            );
        }
    }
}

/// Whether `fix` removes this write (module-level writes outside the header always go;
/// writes in functions go when they contradict the policy).
pub fn removes(write: &EnvWrite, ctx: &RuleContext) -> bool {
    if in_header(ctx, &write.stmt) {
        return false;
    }
    write.module_level || write.value.as_deref() != ctx.policy.env_value(write.var)
}

fn env_write_finding(facts: &Facts, ctx: &RuleContext, w: &EnvWrite) -> Option<Finding> {
    if !removes(w, ctx) {
        return None;
    }
    let expected = ctx.policy.env_value(w.var);
    let shown = w
        .value
        .as_deref()
        .map_or("a computed value".to_string(), |v| format!("'{v}'"));
    let name = w.var.name();
    let after_import = facts
        .first_top_level_gpu_import()
        .is_some_and(|i| i < w.stmt.start);
    let finding = if !w.module_level {
        let why = match expected {
            Some(e) => format!("contradicts the policy's '{e}'"),
            None => "the policy leaves it unset".to_string(),
        };
        let late = if after_import {
            "; a GPU framework is already imported"
        } else {
            ""
        };
        Finding::new(
            &ENV_WRITE_IN_FUNCTION,
            w.at.clone(),
            format!("a function sets {name} to {shown}, which {why}{late}"),
        )
    } else if after_import {
        Finding::new(
            &ENV_AFTER_GPU_IMPORT,
            w.at.clone(),
            format!(
                "{name} is set after a GPU framework is imported: CUDA may already be initialised"
            ),
        )
    } else if w.value.as_deref() != expected {
        let policy = expected.map_or("unset".to_string(), |e| format!("'{e}'"));
        Finding::new(
            &ENV_VALUE_MISMATCH,
            w.at.clone(),
            format!("{name} set to {shown}; the policy says {policy}"),
        )
    } else if ctx.site.is_some() {
        Finding::new(
            &ENV_DUPLICATE,
            w.at.clone(),
            format!("{name} is already set by the GPU header"),
        )
    } else {
        // Part of a hand-written partial header: reported once, as header-incomplete.
        return w.removal.is_none().then(|| unremovable(w));
    };
    Some(match &w.removal {
        Some(edits) => finding.with_edits(edits.clone()),
        None => unremovable(w),
    })
}

fn unremovable(w: &EnvWrite) -> Finding {
    Finding::new(
        &ENV_VALUE_MISMATCH,
        w.at.clone(),
        format!(
            "{} is written on a line shared with other code: remove it by hand",
            w.var.name()
        ),
    )
}

fn device_findings(facts: &Facts, policy: &Policy, out: &mut Vec<Finding>) {
    let masked = policy.masked_index();
    for d in &facts.device_indices {
        let rule = match d.kind {
            DeviceIndexKind::String => &DEVICE_STRING_INDEX,
            DeviceIndexKind::Call => &DEVICE_CALL_INDEX,
            DeviceIndexKind::Keyword => &DEVICE_KEYWORD_INDEX,
            DeviceIndexKind::Map => &DEVICE_MAP_INDEX,
        };
        let message = format!(
            "{} selects device {}: with CUDA_VISIBLE_DEVICES='{}' the target card is device {masked}",
            d.what, d.index, policy.visible_devices
        );
        let finding = Finding::new(rule, d.at.clone(), message);
        out.push(match &d.digits {
            Some(digits) => {
                finding.with_edits(vec![Edit::replace(digits.clone(), masked.to_string())])
            }
            None => finding,
        });
    }
}

fn touchpoints(facts: &Facts, is_init: bool, out: &mut Vec<Finding>) {
    for import in &facts.gpu_imports {
        let (rule, message) = match (import.lazy, is_init) {
            (false, true) => (
                &GPU_IMPORT_IN_INIT,
                format!("`{}` imported by a package __init__.py", import.module),
            ),
            (false, false) => (
                &GPU_IMPORT_TOP_LEVEL,
                format!("`{}` imported at module level", import.module),
            ),
            (true, _) => (
                &GPU_IMPORT_LAZY,
                format!("`{}` imported inside a function", import.module),
            ),
        };
        out.push(Finding::new(rule, import.range.clone(), message));
    }
}
