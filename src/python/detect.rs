//! The rules: facts, the effective env and the configuration blocks in, findings out.

use super::effective::Effective;
use super::facts::{DeviceUseKind, EnvEffect, EnvKey, EnvOp, Facts, Val};
use super::header::PythonHeader;
use super::rules::*;
use crate::edit::Edit;
use crate::finding::Finding;
use crate::policy::{EnvVar, Policy, Remap};

pub struct RuleContext<'a> {
    pub policy: &'a Policy,
    pub header: &'a PythonHeader,
    /// GPU code or declared in a mission phase: its env must be the policy's.
    pub in_scope: bool,
    pub is_init: bool,
}

/// `CUDA_VISIBLE_DEVICES` set to hide every GPU: a deliberate CPU-only choice.
pub fn is_cpu_mask(e: &EnvEffect) -> bool {
    e.var() == Some(EnvVar::VisibleDevices)
        && matches!(&e.op, EnvOp::Set(Val::Lit(v)) | EnvOp::SetDefault(Val::Lit(v))
            if matches!(v.trim(), "" | "-1" | "NoDevFiles"))
}

/// The file runs CPU-only on purpose: its module code hides every GPU.
pub fn cpu_only(facts: &Facts, eff: &Effective) -> bool {
    eff.executed.iter().any(|&i| is_cpu_mask(&facts.effects[i]))
}

/// An effect that leaves its variable at the policy's value (or is harmless to it).
pub fn agrees(e: &EnvEffect, policy: &Policy) -> bool {
    let Some(var) = e.var() else { return false };
    let expected = policy.env_value(var);
    match (&e.op, expected) {
        (EnvOp::Set(Val::Lit(v)), Some(x)) => v == x && !policy.respect_scheduler,
        (EnvOp::SetDefault(Val::Lit(v)), Some(x)) => v == x,
        _ => false,
    }
}

/// What the fix must take out: every managed write that runs at import (the header replaces
/// them), and untimed writes that disagree with the policy.
pub fn to_remove(facts: &Facts, eff: &Effective, policy: &Policy, env_fix: bool) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let managed = |i: &usize| {
        let e = &facts.effects[*i];
        e.var().is_some() && !e.child && !is_cpu_mask(e)
    };
    if env_fix {
        out.extend(eff.executed.iter().copied().filter(managed));
    }
    out.extend(
        eff.untimed
            .iter()
            .copied()
            .filter(managed)
            .filter(|i| !agrees(&facts.effects[*i], policy)),
    );
    out.sort_unstable();
    out.dedup();
    out
}

/// `CUDA_VISIBLE_DEVICES` listing several cards: the file means to use them all.
fn is_multi_mask(e: &EnvEffect) -> bool {
    e.var() == Some(EnvVar::VisibleDevices)
        && matches!(&e.op, EnvOp::Set(Val::Lit(v)) | EnvOp::SetDefault(Val::Lit(v))
            if v.split(',').filter(|p| !p.trim().is_empty()).count() > 1)
}

/// Left as written, for review: CPU-only on purpose, or several GPUs by design.
pub fn hands_off(facts: &Facts, eff: &Effective) -> bool {
    cpu_only(facts, eff)
        || facts.multi_gpu_by_design()
        || eff
            .executed
            .iter()
            .any(|&i| is_multi_mask(&facts.effects[i]))
}

pub fn findings(facts: &Facts, eff: &Effective, ctx: &RuleContext) -> Vec<Finding> {
    let mut out = Vec::new();
    let cpu = hands_off(facts, eff);
    for e in &facts.effects {
        special_effect(e, ctx.policy, &mut out);
    }
    if !cpu {
        if ctx.in_scope && !ctx.is_init {
            env_findings(facts, eff, ctx.policy, &mut out);
        }
        untimed_findings(facts, eff, ctx.policy, &mut out);
        device_findings(facts, ctx.policy, &mut out);
    }
    for e in facts
        .effects
        .iter()
        .filter(|e| !e.child && is_multi_mask(e))
    {
        out.push(Finding::new(
            &MULTI_GPU_ASSUMPTION,
            e.at.clone(),
            "CUDA_VISIBLE_DEVICES lists several cards: the file is multi-GPU by design and is left as written; review by hand",
        ));
    }
    let design = facts.multi_gpu_by_design();
    for (range, what, _) in &facts.multi_gpu {
        let consequence = if design {
            "the file is multi-GPU by design and is left as written"
        } else {
            "only the policy's card is visible once the header runs"
        };
        out.push(Finding::new(
            &MULTI_GPU_ASSUMPTION,
            range.clone(),
            format!(
                "{what}; {consequence} (CUDA_VISIBLE_DEVICES='{}'): review by hand",
                ctx.policy.visible_devices
            ),
        ));
    }
    touchpoints(facts, ctx.is_init, &mut out);
    out.sort_by_key(|f| (f.range.start, f.rule.code));
    out.dedup_by(|a, b| a.rule.code == b.rule.code && a.range == b.range && a.message == b.message);
    out
}

/// Deliberate masks, child-process env and AMD masks: reported, never rewritten.
fn special_effect(e: &EnvEffect, policy: &Policy, out: &mut Vec<Finding>) {
    if e.child {
        if let (Some(var), EnvOp::Set(val)) = (e.var(), &e.op) {
            if !matches!(val, Val::Lit(v) if Some(v.as_str()) == policy.env_value(var)) {
                out.push(Finding::new(
                    &CHILD_ENV,
                    e.at.clone(),
                    format!("a child process gets {}={}: the policy's value is {}; pass the parent's env or the policy's value", var.name(), shown(val), policy.env_value(var).map_or("unset".into(), |v| format!("'{v}'"))),
                ));
            }
        }
        return;
    }
    if is_cpu_mask(e) {
        out.push(Finding::new(
            &DELIBERATE_CPU_MASK,
            e.at.clone(),
            "CUDA_VISIBLE_DEVICES hides every GPU here (a deliberate CPU-only choice): left as is; confirm it is meant",
        ));
    }
    if let (Some(EnvKey::Amd(name)), EnvOp::Set(Val::Lit(v))) = (e.key, &e.op) {
        if v != &policy.visible_devices {
            out.push(Finding::new(
                &AMD_MASK,
                e.at.clone(),
                format!(
                    "{name}='{v}' contradicts the policy's mask '{}'",
                    policy.visible_devices
                ),
            ));
        }
    }
}

fn shown(v: &Val) -> String {
    match v {
        Val::Lit(s) => format!("'{s}'"),
        Val::Computed => "a computed value".into(),
    }
}

fn env_findings(facts: &Facts, eff: &Effective, policy: &Policy, out: &mut Vec<Finding>) {
    let problems = eff.problems(policy);
    if problems.is_empty() {
        return;
    }
    let writes: Vec<&EnvEffect> = eff
        .executed
        .iter()
        .map(|&i| &facts.effects[i])
        .filter(|e| e.var().is_some())
        .collect();
    let detail = problems;
    match writes.first() {
        None => out.push(
            Finding::new(
                &HEADER_MISSING,
                0..0,
                format!(
                    "GPU code without the GPU configuration: {}",
                    detail.join("; ")
                ),
            )
            .fixed_by_plan(),
        ),
        Some(first) => {
            let finding = Finding::new(
                &HEADER_INCOMPLETE,
                first.at.clone(),
                format!(
                    "the GPU configuration is not the policy's: {}",
                    detail.join("; ")
                ),
            )
            .fixed_by_plan();
            // An assignment in place of `setdefault` overrides a scheduler's mask.
            let defaults = writes.iter().any(|e| matches!(e.op, EnvOp::SetDefault(_)));
            out.push(if defaults && !policy.respect_scheduler {
                finding.unsafe_fix()
            } else {
                finding
            });
        }
    }
    for &i in &eff.late {
        let e = &facts.effects[i];
        if let Some(var) = e.var() {
            if !is_cpu_mask(e) {
                out.push(
                    Finding::new(
                        &ENV_AFTER_GPU_IMPORT,
                        e.at.clone(),
                        format!("{} is changed after a GPU framework is imported: CUDA may already be initialised", var.name()),
                    )
                    .fixed_by_plan(),
                );
            }
        }
    }
}

/// Writes in functions the module does not call at import: they may run before CUDA starts.
fn untimed_findings(facts: &Facts, eff: &Effective, policy: &Policy, out: &mut Vec<Finding>) {
    for &i in &eff.untimed {
        let e = &facts.effects[i];
        let Some(var) = e.var() else { continue };
        if e.child || is_cpu_mask(e) || agrees(e, policy) {
            continue;
        }
        let what = match &e.op {
            EnvOp::Set(v) | EnvOp::SetDefault(v) => format!("sets {} to {}", var.name(), shown(v)),
            EnvOp::Unset => format!("removes {}", var.name()),
            EnvOp::Clobber => continue,
        };
        let policy_value = policy
            .env_value(var)
            .map_or("leaves it unset".to_string(), |v| format!("says '{v}'"));
        let finding = Finding::new(
            &ENV_WRITE_IN_FUNCTION,
            e.at.clone(),
            format!("a function {what}; the policy {policy_value}, and the function may run before CUDA starts"),
        );
        // Removing the write changes what the function does when it is called.
        out.push(match &e.removal {
            Some(edits) => finding.with_edits(edits.clone()).unsafe_fix(),
            None => finding,
        });
    }
}

fn device_findings(facts: &Facts, policy: &Policy, out: &mut Vec<Finding>) {
    for d in &facts.devices {
        let rule = match d.kind {
            DeviceUseKind::String => &DEVICE_STRING_INDEX,
            DeviceUseKind::Call => &DEVICE_CALL_INDEX,
            DeviceUseKind::Keyword => &DEVICE_KEYWORD_INDEX,
            DeviceUseKind::Flow => &DEVICE_MAP_INDEX,
        };
        let mask = &policy.visible_devices;
        match policy.remap_index(d.index) {
            Remap::Keep => {}
            Remap::Invalid => out.push(Finding::new(
                &DEVICE_INDEX_INVALID,
                d.at.clone(),
                format!(
                    "{} selects device {}, but with CUDA_VISIBLE_DEVICES='{mask}' only {} device(s) are visible (indices 0..{}): no card has that index; choose the device by hand",
                    d.what, d.index, policy.visible_count(), policy.visible_count().saturating_sub(1)
                ),
            )),
            Remap::To(new) => {
                if let Some(name) = &d.shared {
                    out.push(Finding::new(
                        &DEVICE_INDEX_SHARED,
                        d.at.clone(),
                        format!("{} selects device {} (device {new} once CUDA_VISIBLE_DEVICES='{mask}' is set), but `{name}` is also used for something else: change it by hand", d.what, d.index),
                    ));
                    continue;
                }
                let finding = Finding::new(
                    rule,
                    d.at.clone(),
                    format!("{} selects device {}: with CUDA_VISIBLE_DEVICES='{mask}' that card is device {new}", d.what, d.index),
                );
                out.push(match &d.digits {
                    Some(digits) => finding.with_edits(vec![Edit::replace(digits.clone(), new.to_string())]),
                    None => finding,
                });
            }
        }
    }
}

fn touchpoints(facts: &Facts, is_init: bool, out: &mut Vec<Finding>) {
    for import in facts.runtime_gpu_imports() {
        let (rule, message) = match (import.lazy, is_init) {
            (false, true) => (
                &GPU_IMPORT_IN_INIT,
                format!("`{}` imported by a package __init__.py: importing the package starts the GPU stack; import it lazily where it is used", import.module),
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
