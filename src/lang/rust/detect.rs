//! The Rust rules: facts in, findings out (with the edits that fix each).

use std::ops::Range;

use super::effective;
use super::facts::{Arg, Binding, DeviceSink, EnvEffect, EnvOp, Facts, Hidden, Place};
use super::fix;
use super::graph::FileRole;
use super::krate::{CrateInfo, Role};
use super::rules::*;
use super::{RustHeader, Safety};
use crate::base::edit::Edit;
use crate::model::finding::{line_column, Finding};
use crate::model::policy::Policy;

pub struct Context<'a> {
    pub source: &'a str,
    pub policy: &'a Policy,
    pub header: &'a RustHeader,
    pub krate: &'a CrateInfo,
    pub newline: &'a str,
    /// What the tree's index says about the file (`None`: judged on its own).
    pub role: Option<&'a super::graph::FileRole>,
}

impl Context<'_> {
    /// Whether the program links libtorch, the only reader of PYTORCH_CUDA_ALLOC_CONF (a file
    /// the index does not know as a program is assumed to).
    pub fn torch(&self) -> bool {
        !matches!(self.role, Some(FileRole::Program { torch: false, .. }))
    }

    /// Whether the policy's value of `var` matters to this program.
    pub fn reads(&self, var: crate::model::policy::EnvVar) -> bool {
        var != crate::model::policy::EnvVar::AllocConf || self.torch()
    }
}

/// What the file is for the env: the entry point of a GPU binary, and whether its main can
/// set the env.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// Not a GPU binary's entry point (a library module, a build script, a CPU binary).
    No,
    /// A sync main that can set the env as its first statements.
    Settable,
    /// `async fn main`: runtime threads already run.
    Async,
    /// Edition 2024 and the crate forbids unsafe code: `set_var` cannot be called.
    UnsafeForbidden,
    /// A sync main under an attribute that may run it off the process's first thread
    /// (`#[show_image::main]`, an unknown macro): no env block can be said sound.
    Foreign,
}

pub fn binary(facts: &Facts, ctx: &Context) -> Binary {
    let entry = matches!(ctx.krate.role, Role::Entry | Role::Standalone);
    let gpu = match ctx.role {
        // A CPU program is left alone, whatever GPU crate it links.
        Some(FileRole::Program { cpu: Some(_), .. }) => false,
        // It reaches CUDA through its modules, its library or a wrapper crate.
        Some(FileRole::Program { cuda: Some(_), .. }) => true,
        // A program of the tree that reaches no CUDA crate: GPU code only if it builds a
        // device or writes the env itself (naming tch for CPU tensors is not).
        Some(FileRole::Program { cuda: None, .. }) => {
            !facts.env.is_empty() || !facts.sinks.is_empty()
        }
        _ => facts.uses_gpu_crate || !facts.env.is_empty() || !facts.sinks.is_empty(),
    };
    match &facts.main {
        Some(main) if entry && gpu => {
            if main.is_async {
                Binary::Async
            } else if ctx.krate.edition >= 2024
                && (facts.forbids_unsafe || ctx.krate.lints_forbid_unsafe)
            {
                Binary::UnsafeForbidden
            } else if main.foreign.is_some() {
                Binary::Foreign
            } else {
                Binary::Settable
            }
        }
        _ => Binary::No,
    }
}

/// Where the header pieces are, when they are in place.
pub struct Sites {
    pub comment: Option<Range<usize>>,
    /// The env block at the top of a sync `fn main`.
    pub main_env: Option<Range<usize>>,
    /// The other mains the GPU build may compile (`facts.alt_mains`) that lack the env block.
    pub alt_mains_missing: Vec<usize>,
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
    // The block as this version writes it, or as earlier ones did (no `// SAFETY:` line, the
    // allocator variable in every program): a block already there is never written twice.
    let main_env = facts
        .main
        .as_ref()
        .filter(|m| !m.is_async)
        .and_then(|m| env_block(ctx, m));
    // A stub main (it only prints or exits) starts nothing on a card: it needs no env.
    let alt_mains_missing = (0..facts.alt_mains.len())
        .filter(|&i| !facts.alt_mains[i].stub && env_block(ctx, &facts.alt_mains[i]).is_none())
        .collect();
    Sites {
        comment: comment.map(|i| i..i + comment_text.len()),
        main_env,
        alt_mains_missing,
    }
}

/// The env block at the top of `m`, as this version writes it or as earlier ones did.
fn env_block(ctx: &Context, m: &super::facts::MainFn) -> Option<Range<usize>> {
    let safeties = [Safety::Lines, Safety::OneLine, Safety::Omitted];
    let respects = match super::Respect::of(ctx.policy) {
        super::Respect::No => vec![super::Respect::No],
        _ => vec![super::Respect::Block, super::Respect::OneLine],
    };
    safeties
        .into_iter()
        .flat_map(|safety| [(ctx.torch(), safety), (true, safety)])
        .flat_map(|(alloc, safety)| respects.iter().map(move |r| (alloc, safety, *r)))
        .find_map(|(alloc, safety, respect)| {
            let text = ctx.header.main_env_text(
                ctx.krate.edition,
                fix::line_indent(ctx.source, m.sig.start),
                &fix::main_unit(ctx.source, m),
                ctx.newline,
                super::EnvText {
                    alloc,
                    safety,
                    respect,
                },
            );
            let at = fix::env_at(ctx.source, m.body_start);
            ctx.source[at..]
                .starts_with(&text)
                .then(|| at..at + text.len())
        })
}

pub fn findings(facts: &Facts, ctx: &Context, sites: &Sites) -> Vec<Finding> {
    let kind = binary(facts, ctx);
    let mut out = Vec::new();
    header_findings(facts, ctx, sites, kind, &mut out);
    for effect in &facts.env {
        if let Some(f) = env_finding(ctx, sites, kind, effect) {
            out.push(f);
        }
    }
    if kind == Binary::Settable && !out.iter().any(|f| f.is_violation()) {
        effective_finding(facts, ctx, &mut out);
    }
    child_env_findings(facts, ctx, &mut out);
    device_findings(facts, ctx, &mut out);
    let allowed: Vec<u64> = ctx
        .policy
        .visible_devices
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    // NVML numbers cards by PCI bus: the policy's own card is fine.
    for (r, n) in facts
        .nvml_indices
        .iter()
        .filter(|(_, n)| !allowed.contains(n))
    {
        out.push(
            Finding::new(
                &NVML_INDEX,
                r.clone(),
                format!("device_by_index({n}) is NVML's PCI-order index, not remapped by CUDA_VISIBLE_DEVICES"),
            )
            .with_help("select the card by UUID or PCI bus id (device_by_uuid / device_by_pci_bus_id)"),
        );
    }
    for (at, what) in &facts.computed_indices {
        out.push(
            Finding::new(
                &MULTI_GPU,
                at.clone(),
                format!("{what}: several cards by design, left as written"),
            )
            .with_help(format!("with CUDA_VISIBLE_DEVICES='{}' only device 0 exists, so any other index it computes is an invalid ordinal", ctx.policy.visible_devices)),
        );
    }
    // An option that selects several cards, in the code of a GPU program (`--devices` is an
    // audio device list in a CPU tool).
    let gpu_code = match ctx.role {
        Some(FileRole::Program { cuda, cpu, .. }) => cuda.is_some() && cpu.is_none(),
        Some(FileRole::Module { programs, .. }) => !programs.is_empty(),
        None => facts.uses_gpu_crate || !facts.sinks.is_empty(),
    };
    // A card chosen through another API, beside CUDA, by the program's own code: the mask
    // does not reach it. A library's backend (custos's wgpu device) is its caller's choice.
    let program = match ctx.role {
        Some(FileRole::Program { cuda, cpu, .. }) => cuda.is_some() && cpu.is_none(),
        Some(_) => false,
        None => facts.uses_gpu_crate,
    };
    for (at, row) in facts.foreign_choices.iter().filter(|_| program) {
        let choice = &crate::knowledge::rust::FOREIGN_CHOICES[*row];
        out.push(
            Finding::new(
                &FOREIGN_DEVICE,
                at.clone(),
                format!(
                    "`{}` chooses a card through {}, which CUDA_VISIBLE_DEVICES does not filter",
                    choice.call, choice.api
                ),
            )
            .with_help(choice.help),
        );
    }
    for (at, what) in facts.multi_gpu_options.iter().filter(|_| gpu_code) {
        out.push(
            Finding::new(
                &MULTI_GPU,
                at.clone(),
                format!("{what}: several cards by design, left as written"),
            )
            .with_help(format!("with CUDA_VISIBLE_DEVICES='{}' only device 0 exists, so a second card it is given is an invalid ordinal", ctx.policy.visible_devices)),
        );
    }
    library_indices(facts, ctx, kind, &mut out);
    // The file's unit tests are a GPU program of their own (`cargo test`): libtest writes its
    // `main`, so nothing the fix does to a `main` masks it.
    if let Some(why) = ctx.role.and_then(FileRole::unit_tests) {
        // At the test module's line (`mod tests {`), where its code starts.
        let at = facts.test_code.first().map_or(0..0, |r| {
            let at = first_word_of_line(ctx.source, r.start);
            at..at
        });
        out.push(
            Finding::new(
                &MACRO_MAIN,
                at,
                "`#[test]` functions here run on CUDA under the `main` libtest writes: no place for the env",
            )
            .with_help(format!("they reach CUDA through {why}; set CUDA_VISIBLE_DEVICES='{}' and CUDA_DEVICE_ORDER={} in the environment `cargo test` runs in", ctx.policy.visible_devices, ctx.policy.device_order)),
        );
    }
    // Its doc examples are programs too (`cargo test --doc`), each in a `main` rustdoc writes.
    if let Some(FileRole::Module {
        doc_tests: Some((line, count, why)),
        ..
    }) = ctx.role
    {
        let start = crate::base::line_index::LineIndex::new(ctx.source)
            .offset_of_line(*line as usize)
            .unwrap_or(0);
        let at = first_word_of_line(ctx.source, start);
        let (what, them) = if *count == 1 {
            ("a doc example of this file runs".to_string(), "it")
        } else {
            (format!("{count} doc examples of this file run"), "them")
        };
        out.push(
            Finding::new(
                &MACRO_MAIN,
                at..at,
                format!("{what} on CUDA under the `main` rustdoc writes: no place for the env in {them}"),
            )
            .with_help(format!("the first, here, reaches CUDA through {why}; set CUDA_VISIBLE_DEVICES='{}' and CUDA_DEVICE_ORDER={} in the environment `cargo test` runs in, or mark an example that needs no run `no_run`", ctx.policy.visible_devices, ctx.policy.device_order)),
        );
    }
    // The touchpoint map: where programs reach CUDA and where devices are built.
    if let Some(FileRole::Program {
        cuda: Some(why),
        cpu: None,
        ..
    }) = ctx.role
    {
        out.push(Finding::new(
            &GPU_PROGRAM,
            0..0,
            format!("this program reaches CUDA through {why}"),
        ));
    }
    for sink in &facts.sinks {
        out.push(Finding::new(
            &DEVICE_CONSTRUCTOR,
            sink_range(sink),
            format!("{} builds a CUDA device", sink.what),
        ));
    }
    out.sort_by_key(|f| (f.range.start, f.rule.code));
    out
}

/// A device index in a library means what the mask of the program running it makes it: it is
/// remapped only when every GPU program of the tree that runs the library sets the policy's
/// mask in its main; otherwise it is for review, naming the programs that do not.
fn library_indices(facts: &Facts, ctx: &Context, kind: Binary, out: &mut [Finding]) {
    // Unit tests (`#[cfg(test)]`) run in libtest's process, which no `main` masks.
    for f in out.iter_mut().filter(|f| {
        f.rule.code == DEVICE_INDEX.code
            && facts
                .test_code
                .iter()
                .any(|t| t.start <= f.range.start && f.range.end <= t.end)
    }) {
        f.rule = &DEVICE_INDEX_IN_LIBRARY;
        f.fixable = false;
        f.edits.clear();
        f.message = format!(
            "{}; but this is test code, run in a process no `main` masks",
            f.message
        );
        f.add_help("the card it selects is the test runner's environment's choice: set the mask there, then remap by hand or accept it");
    }
    let programs: &[(String, bool)] = match ctx.role {
        Some(FileRole::Module { programs, .. }) => programs,
        // A test binary (libtest writes its main): nothing sets the mask there.
        Some(FileRole::Program { .. }) if facts.main.is_none() => &[],
        // A program whose fix sets the mask: the remap is part of the same plan, and the
        // plan is proven on its result (withheld whole when the env would not be the policy's).
        Some(FileRole::Program { .. })
            if matches!(
                kind,
                Binary::Settable | Binary::Async | Binary::UnsafeForbidden
            ) =>
        {
            return
        }
        // A program judged CPU, or whose main cannot get the env: an index moved there would
        // be moved without its mask.
        Some(FileRole::Program { cpu, .. }) => {
            let why = match (cpu, kind) {
                (Some(cpu), _) => {
                    format!("this program is judged a CPU program ({cpu}), so no mask is set in it")
                }
                (None, Binary::Foreign) => {
                    let name = facts
                        .main
                        .as_ref()
                        .and_then(|m| m.foreign.as_ref())
                        .map_or("", |(n, _)| n.as_str());
                    format!("`main` runs under `#[{name}]`, so no mask is set in it (GH509)")
                }
                _ => "no mask is set in this program's `main`".to_string(),
            };
            unmasked_index(out, &why);
            return;
        }
        // A file with no `main` that no target of the tree reaches (an orphan module, a lone
        // library file): no program is known to set its mask.
        None if facts.main.is_none() && ctx.krate.role != Role::BuildScript => &[],
        None => return,
    };
    let list = |names: &[&str]| {
        let mut shown: Vec<String> = names.iter().take(3).map(|n| format!("`{n}`")).collect();
        if names.len() > 3 {
            shown.push(format!("{} more", names.len() - 3));
        }
        shown.join(", ")
    };
    let unmasked: Vec<&str> = programs
        .iter()
        .filter(|(_, masks)| !masks)
        .map(|(p, _)| p.as_str())
        .collect();
    let all: Vec<&str> = programs.iter().map(|(p, _)| p.as_str()).collect();
    for f in out.iter_mut().filter(|f| f.rule.code == DEVICE_INDEX.code) {
        if !programs.is_empty() && unmasked.is_empty() {
            if f.fixable {
                f.add_help(&format!(
                    "every program of the tree that runs this library sets the mask in its main (an async one once `fix --unsafe-fixes` makes it sync): {}",
                    list(&all)
                ));
                if ctx.role.is_some_and(FileRole::made_sync) {
                    f.applicability = crate::model::finding::Applicability::Unsafe;
                }
            }
            continue;
        }
        let (why, more) = if programs.is_empty() {
            (
                "no GPU program of this tree runs this library".to_string(),
                "the card it selects is the mask of whoever calls it",
            )
        } else {
            (
                format!("{} run(s) this library without a mask", list(&unmasked)),
                "its fix sets none there (an async or macro-generated main, a test, unsafe code forbidden in edition 2024, an attribute on `main`, a withheld fix)",
            )
        };
        f.rule = &DEVICE_INDEX_IN_LIBRARY;
        f.fixable = false;
        f.edits.clear();
        f.message = format!("{}; not remapped", f.message);
        f.add_help(&format!(
            "{why}; {more}: check the callers, then remap by hand or accept it"
        ));
    }
}

/// Every device index of `out` becomes a finding for review with no edit: `why` no mask is
/// set where it runs.
fn unmasked_index(out: &mut [Finding], why: &str) {
    for f in out.iter_mut().filter(|f| f.rule.code == DEVICE_INDEX.code) {
        f.rule = &DEVICE_INDEX_IN_LIBRARY;
        f.fixable = false;
        f.edits.clear();
        f.message = format!("{}; not remapped", f.message);
        f.add_help(&format!("{why}: an index moved without the mask would select the forbidden card; check how it runs, then remap by hand or accept it"));
    }
}

fn header_findings(
    facts: &Facts,
    ctx: &Context,
    sites: &Sites,
    kind: Binary,
    out: &mut Vec<Finding>,
) {
    let Some(main) = &facts.main else {
        // A GPU program whose main a macro generates (`criterion_main!`): nowhere to put the
        // env by a byte edit.
        // A program that reaches no crate the tool models but builds a CUDA device in its own
        // code (a constructor of a crate outside the table) is GPU code all the same.
        let own = facts
            .sinks
            .first()
            .map(|s| format!("its own {}", s.what.trim_end_matches(',')));
        if let Some((FileRole::Program { test, .. }, why)) = ctx.role.and_then(|r| match r {
            FileRole::Program {
                cuda: Some(why),
                cpu: None,
                ..
            } => Some((r, why.clone())),
            FileRole::Program {
                cuda: None,
                cpu: None,
                ..
            } => own.map(|why| (r, why)),
            _ => None,
        }) {
            let (at, from) = match (&facts.macro_main, test) {
                (Some((at, name)), _) => (at.clone(), format!("`{name}!`")),
                (None, true) => (0..0, "libtest (a test binary)".to_string()),
                (None, false) => return,
            };
            out.push(
                Finding::new(
                    &MACRO_MAIN,
                    at,
                    format!("this GPU program gets its `main` from {from}: the env cannot go into it"),
                )
                .with_help(format!("it reaches CUDA through {why}; set CUDA_VISIBLE_DEVICES='{}' and CUDA_DEVICE_ORDER={} in the environment it runs in (or a hand-written `fn main` that calls the generated one)", ctx.policy.visible_devices, ctx.policy.device_order)),
            );
        }
        return;
    };
    let launcher = format!(
        "set the env before the process starts instead (a launcher script or the service's environment: `CUDA_VISIBLE_DEVICES={} CUDA_DEVICE_ORDER={} <binary>`)",
        ctx.policy.visible_devices, ctx.policy.device_order
    );
    match kind {
        Binary::No => {}
        Binary::Async => {
            let finding = Finding::new(
                &ENV_IN_ASYNC_MAIN,
                main.sig.clone(),
                "async main: the GPU env cannot be set safely once the runtime's threads run",
            );
            out.push(match async_fix(facts, ctx, sites, main) {
                Some(edits) => finding.with_edits(edits).unsafe_fix().with_help(format!("the fix (unsafe: `--unsafe-fixes`) makes `main` sync, sets the env first and builds the same runtime to run the body; by hand, or {launcher}")),
                None => Finding {
                    message: "async main: the GPU env cannot be set safely once the runtime's threads run, and the fix does not know its runtime attribute's options".to_string(),
                    ..finding
                }
                .with_help(format!("set the env in a sync main before building the runtime, or {launcher}")),
            });
            alt_mains(facts, sites, &launcher, out);
        }
        Binary::Foreign => {
            let (name, at) = main.foreign.clone().unwrap_or_default();
            out.push(
                Finding::new(
                    &MAIN_ATTRIBUTE,
                    at,
                    format!("`main` runs under `#[{name}]`, maybe not on the first thread: no env block is inserted"),
                )
                .with_help(format!("an env block could race other threads there (and in edition 2024 its `unsafe` would be unsound): {launcher}, or write a plain `main` that sets the env first and then calls the attributed one")),
            );
        }
        Binary::UnsafeForbidden => out.push(
            Finding::new(
                &ENV_UNSAFE_FORBIDDEN,
                main.sig.clone(),
                "`set_var` is unsafe in edition 2024 and the crate forbids unsafe: no env block",
            )
            .with_help(launcher),
        ),
        Binary::Settable => {
            if sites.comment.is_none() {
                out.push(
                    Finding::new(
                        &HEADER_MISSING,
                        0..0,
                        "GPU binary without the standard GPU comment header",
                    )
                    .fixed_by_plan(),
                );
            }
            if sites.main_env.is_none() {
                let finding = Finding::new(
                    &MAIN_ENV_MISSING,
                    main.sig.clone(),
                    "fn main does not set CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER first",
                )
                .fixed_by_plan();
                out.push(if ctx.krate.edition >= 2024 {
                    finding.with_help("edition 2024: the env block goes in an `unsafe` block, before any thread starts")
                } else {
                    finding
                });
            }
            alt_mains(facts, sites, &launcher, out);
        }
    }
}

/// Where the line holding `offset` starts once its indentation is past.
fn first_word_of_line(source: &str, offset: usize) -> usize {
    crate::base::lines::line_start(source, offset) + fix::line_indent(source, offset).len()
}

/// Which main the build compiles depends on features the tool cannot judge: each needs the
/// env, or the one that runs may leave every card visible.
fn alt_mains(facts: &Facts, sites: &Sites, launcher: &str, out: &mut Vec<Finding>) {
    for &i in &sites.alt_mains_missing {
        let alt = &facts.alt_mains[i];
        let finding = Finding::new(
            &MAIN_ENV_MISSING,
            alt.sig.clone(),
            "this `fn main`, compiled instead of the other under some features, does not set the GPU env first",
        );
        out.push(if alt.is_async || alt.foreign.is_some() {
            finding.with_help(format!(
                "it is async or runs under an attribute: no env block is inserted; {launcher}"
            ))
        } else {
            finding.fixed_by_plan()
        });
    }
}

/// The edits that make an async main sync: the comment header when it is missing, the env
/// first, then the attribute's runtime running the body (see `async_main`).
fn async_fix(
    facts: &Facts,
    ctx: &Context,
    sites: &Sites,
    main: &super::facts::MainFn,
) -> Option<Vec<Edit>> {
    if ctx.krate.edition >= 2024 && (facts.forbids_unsafe || ctx.krate.lints_forbid_unsafe) {
        return None;
    }
    let base = fix::line_indent(ctx.source, main.sig.start);
    let unit = fix::main_unit(ctx.source, main);
    let env = ctx.header.main_env_text(
        ctx.krate.edition,
        base,
        &unit,
        ctx.newline,
        super::EnvText {
            alloc: ctx.torch(),
            safety: super::Safety::Lines,
            respect: super::Respect::of(ctx.policy),
        },
    );
    let mut edits =
        super::async_main::sync_main_edits(ctx.source, main, &env, base, &unit, ctx.newline)?;
    edits.extend(super::async_main::body_env_removals(ctx, &facts.env));
    if sites.comment.is_none() {
        edits.push(fix::comment_edit(facts, ctx));
    }
    Some(edits)
}

fn in_site(site: &Option<Range<usize>>, r: &Range<usize>) -> bool {
    site.as_ref()
        .is_some_and(|s| s.start <= r.start && r.end <= s.end)
}

/// An env change the policy does not allow: in a settable main, every change outside the
/// header block; anywhere, a change to a value other than the policy's.
fn env_finding(ctx: &Context, sites: &Sites, kind: Binary, w: &EnvEffect) -> Option<Finding> {
    if !ctx.reads(w.var) {
        return None;
    }
    let expected = ctx.policy.env_value(w.var)?;
    if in_site(&sites.main_env, &w.at) {
        return None;
    }
    let in_main = w.place != Place::Elsewhere && kind == Binary::Settable;
    let policy_op = if ctx.policy.respect_scheduler {
        EnvOp::SetDefault(Some(expected.to_string()))
    } else {
        EnvOp::Set(Some(expected.to_string()))
    };
    if !in_main && w.op == policy_op {
        return None;
    }
    let name = w.var.name();
    let (rule, what) = match &w.op {
        EnvOp::Set(Some(v)) => (&ENV_WRITE, format!("{name} is set to \"{v}\"")),
        EnvOp::Set(None) => (&ENV_WRITE, format!("{name} is set to a computed value")),
        EnvOp::SetDefault(Some(v)) => (
            &ENV_WRITE,
            format!("{name} defaults to \"{v}\" (kept when the launcher set it)"),
        ),
        EnvOp::SetDefault(None) => (&ENV_WRITE, format!("{name} defaults to a computed value")),
        EnvOp::Remove => (&ENV_REMOVE, format!("{name} is removed")),
    };
    let message = if in_main {
        format!("{what} in main outside the GPU header")
    } else {
        format!("{what}, which contradicts the policy's \"{expected}\"")
    };
    let removal = w
        .stmt
        .as_ref()
        .and_then(|s| crate::lang::removal::remove_line(ctx.source, s.clone(), None, "//"));
    Some(match removal {
        Some(edit) => Finding::new(rule, w.at.clone(), message).with_edits(vec![edit]),
        None => Finding::new(rule, w.at.clone(), message).with_help(
            "not removed automatically (part of a larger expression, a closure body or a macro): remove it by hand",
        ),
    })
}

/// A settable main whose effective env is still not the policy's, though no single change
/// explains it: the GPU check would run with the wrong env.
fn effective_finding(facts: &Facts, ctx: &Context, out: &mut Vec<Finding>) {
    let Some(main) = &facts.main else { return };
    let env = effective::at_end(facts);
    for (var, held) in env
        .problems(ctx.policy)
        .into_iter()
        .filter(|(var, _)| ctx.reads(*var))
    {
        out.push(Finding::new(
            &ENV_WRITE,
            main.sig.clone(),
            format!("main ends with {} = {held}, not the policy's", var.name()),
        ));
    }
}

fn child_env_findings(facts: &Facts, ctx: &Context, out: &mut Vec<Finding>) {
    // `env_clear()`: one finding per call, naming every policy variable the child loses. Only
    // in a GPU crate's code, or in code a GPU program of the tree runs (a sandbox crate that
    // starts the GPU workers): build tools and runtimes clear their children's env for other
    // reasons.
    let run_by_gpu_program = match ctx.role {
        Some(FileRole::Module { programs, .. }) => !programs.is_empty(),
        Some(FileRole::Program { cuda, cpu, .. }) => cuda.is_some() && cpu.is_none(),
        None => false,
    };
    let gpu = facts.uses_gpu_crate || ctx.krate.gpu_dependency || run_by_gpu_program;
    let mut cleared: Vec<(&Range<usize>, Vec<&str>)> = Vec::new();
    let clears = facts
        .child_env
        .iter()
        .filter(|c| c.method == "env_clear" && gpu);
    for c in clears {
        if ctx.policy.env_value(c.var).is_none() {
            continue;
        }
        match cleared.iter_mut().find(|(at, _)| **at == c.at) {
            Some((_, names)) => names.push(c.var.name()),
            None => cleared.push((&c.at, vec![c.var.name()])),
        }
    }
    for (at, names) in cleared {
        let listed = match names.as_slice() {
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
            [] => continue,
        };
        out.push(Finding::new(&CHILD_ENV, at.clone(), format!("the child process is started with a cleared env (env_clear) and without {listed}")).with_help("it would not see the policy's values: pass them to it (not fixed automatically)"));
    }
    for c in facts.child_env.iter().filter(|c| c.method != "env_clear") {
        let Some(expected) = ctx.policy.env_value(c.var) else {
            continue;
        };
        let name = c.var.name();
        let finding = match &c.value {
            Some(Some(v)) if v == expected => continue,
            None => Finding::new(&CHILD_ENV, c.at.clone(), format!("child process started without {name} ({}): it won't see the policy's \"{expected}\"", c.method)).with_help("pass it to the child (not fixed automatically)"),
            Some(value) => {
                let shown = value.as_deref().map_or("a computed value".into(), |v| format!("\"{v}\""));
                let f = Finding::new(&CHILD_ENV, c.at.clone(), format!("the child process gets {name} = {shown}, not the policy's \"{expected}\""));
                match &c.value_range {
                    // The child's card changes: it may have needed its own.
                    Some(r) => f.with_edits(vec![Edit::replace(r.clone(), format!("\"{expected}\""))]).unsafe_fix(),
                    None => f,
                }
            }
        };
        out.push(finding);
    }
}

/// The integer literals a device constructor's index can come from, each with the binding it
/// went through; empty when it is not followed (a parameter, a `mut`, an ambiguous name).
pub fn source_of<'a>(
    facts: &'a Facts,
    sink: &DeviceSink,
) -> Vec<(Range<usize>, u64, Option<&'a Binding>)> {
    match &sink.arg {
        Arg::Lit { digits, value } => vec![(digits.clone(), *value, None)],
        Arg::Field { name, .. } => option_default(facts, name)
            .map(|(d, v)| (d, v, None))
            .into_iter()
            .collect(),
        // A name bound to literals, or to a number parsed from an option (its default).
        Arg::Name { .. } => binding_of(facts, sink).map_or(Vec::new(), |b| {
            let parsed = b
                .parsed_from
                .as_deref()
                .and_then(|f| option_default(facts, f));
            b.literals
                .iter()
                .cloned()
                .chain(parsed)
                .map(|(d, v)| (d, v, Some(b)))
                .collect()
        }),
        Arg::Opaque { .. } => Vec::new(),
    }
}

/// A field named as exactly one option with a default: that default's digits and value.
fn option_default(facts: &Facts, field: &str) -> Option<(Range<usize>, u64)> {
    match facts
        .option_defaults
        .iter()
        .filter(|d| d.field == field)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [d] => Some((d.digits.clone(), d.value)),
        _ => None,
    }
}

/// The binding a sink's name refers to: the only one of that name in its function, else the
/// only item of that name; `None` when ambiguous or not a name.
fn binding_of<'a>(facts: &'a Facts, sink: &DeviceSink) -> Option<&'a Binding> {
    let Arg::Name { name, .. } = &sink.arg else {
        return None;
    };
    let named = |b: &&Binding| &b.name == name;
    let local: Vec<&Binding> = facts
        .bindings
        .iter()
        .filter(named)
        .filter(|b| b.scope.is_some() && b.scope == sink.scope)
        .collect();
    let candidates: Vec<&Binding> = if local.is_empty() {
        facts
            .bindings
            .iter()
            .filter(named)
            .filter(|b| b.scope.is_none())
            .collect()
    } else {
        local
    };
    match candidates.as_slice() {
        [b] => Some(b),
        _ => None,
    }
}

/// A use of the binding that is not a device index nor only shown (`println!`).
fn other_use(facts: &Facts, b: &Binding) -> Option<Range<usize>> {
    let sink_args: Vec<&Range<usize>> = facts
        .sinks
        .iter()
        .filter_map(|s| match &s.arg {
            Arg::Name { at, .. } => Some(at),
            _ => None,
        })
        .collect();
    facts
        .uses
        .iter()
        .filter(|(name, r, display)| {
            name == &b.name
                && !display
                && *r != b.at
                && !sink_args.contains(&r)
                && b.scope
                    .as_ref()
                    .is_none_or(|s| s.start <= r.start && r.end <= s.end)
        })
        .map(|(_, r, _)| r.clone())
        .next()
}

fn device_findings(facts: &Facts, ctx: &Context, out: &mut Vec<Finding>) {
    let pattern = facts.patterns.first();
    for (r, n) in &facts.patterns {
        out.push(
            Finding::new(
                &DEVICE_PATTERN,
                r.clone(),
                format!("a match pattern compares a device with index {n}, which no device has under mask '{}'", ctx.policy.visible_devices),
            )
            .with_help("change it by hand: the constructors of this file are not rewritten either, so that the arm keeps matching what they build"),
        );
    }
    // A loop over several indices: multi-GPU by design. The loop variable is the one of its
    // name whose loop body holds the sink (names like `i` are reused in one function); a
    // range computed at run time (`0..num_gpus`) is taken to cover several cards. So is a
    // counter the loop increments (`while new_cuda(count).is_ok() { count += 1 }`).
    let mut looped_sinks = Vec::new();
    for sink in &facts.sinks {
        let Arg::Name { name, at } = &sink.arg else {
            continue;
        };
        let looped = facts.bindings.iter().find_map(|b| match &b.iterates {
            Some((n, body))
                if &b.name == name && body.contains(&at.start) && n.is_none_or(|n| n > 1) =>
            {
                Some((b, *n))
            }
            _ => None,
        });
        let counted = facts
            .counters
            .iter()
            .find(|c| &c.name == name && c.scope == sink.scope && c.within.contains(&at.start));
        let message = match (looped, counted) {
            (Some((b, Some(n))), _) => format!("{} is called for each of the {n} indices `{}` takes in a loop: multi-GPU by design, left as written", sink.what, b.name),
            (Some((b, None)), _) => format!("{} is called for each index `{}` takes in a loop over a range computed at run time: multi-GPU by design, left as written", sink.what, b.name),
            (None, Some(c)) => {
                let (line, _) = line_column(ctx.source, c.at.start);
                format!("{} takes `{}`, a counter the loop increments (line {line}): one card per pass, multi-GPU by design, left as written", sink.what, c.name)
            }
            (None, None) => continue,
        };
        looped_sinks.push(sink.expr);
        out.push(
            Finding::new(&MULTI_GPU, sink_range(sink), message)
                .with_help(format!("with CUDA_VISIBLE_DEVICES='{}' only one card is visible: choose the policy's cards by hand", ctx.policy.visible_devices)),
        );
    }
    hidden_findings(facts, ctx, &looped_sinks, out);
    // Several indices in one function: multi-GPU by design (as for Python, left as written).
    // The branches of one index expression (`if cpu { 0 } else { 1 }`, a binding of it) are
    // alternatives, not several cards: a function is multi-GPU when two index expressions can
    // take different sets of indices.
    type Choices = Vec<(usize, Vec<u64>)>;
    let mut per_scope: std::collections::HashMap<Option<usize>, Choices> = Default::default();
    for sink in &facts.sinks {
        let choices = per_scope
            .entry(sink.scope.as_ref().map(|s| s.start))
            .or_default();
        let at = match choices.iter().position(|(e, _)| *e == sink.expr) {
            Some(i) => i,
            None => {
                choices.push((sink.expr, Vec::new()));
                choices.len() - 1
            }
        };
        for (_, index, _) in source_of(facts, sink) {
            if !choices[at].1.contains(&index) {
                choices[at].1.push(index);
            }
        }
    }
    for choices in per_scope.values_mut() {
        choices.retain(|(_, indices)| !indices.is_empty());
        for (_, indices) in choices.iter_mut() {
            indices.sort();
        }
    }
    let probe = |sink: &DeviceSink| {
        facts
            .probes
            .iter()
            .any(|p| p.start <= sink.expr && sink.expr < p.end)
    };
    // `assert!(Device::nth(129).is_err())` expects no card there: so does the mask.
    for sink in facts.sinks.iter().filter(|s| !probe(s)) {
        for (digits, index, binding) in source_of(facts, sink) {
            if index == ctx.policy.masked_index() {
                continue;
            }
            let choices = &per_scope[&sink.scope.as_ref().map(|s| s.start)];
            if choices.iter().any(|(_, other)| other != &choices[0].1) {
                let mut shown: Vec<u64> = choices
                    .iter()
                    .flat_map(|(_, i)| i.iter().copied())
                    .collect();
                shown.sort();
                shown.dedup();
                out.push(
                    Finding::new(
                        &MULTI_GPU,
                        sink_range(sink),
                        format!("{} selects device {index} in a function that selects devices {shown:?}: multi-GPU by design, left as written", sink.what),
                    )
                    .with_help(format!("with CUDA_VISIBLE_DEVICES='{}' only one card is visible: choose the policy's cards by hand", ctx.policy.visible_devices)),
                );
                continue;
            }
            let at = sink_range(sink);
            let through = match (&sink.arg, binding) {
                (_, Some(b)) if !b.literals.iter().any(|(d, _)| *d == digits) => {
                    let (line, _) = line_column(ctx.source, b.at.start);
                    let (option, _) = line_column(ctx.source, digits.start);
                    let field = b.parsed_from.as_deref().unwrap_or_default();
                    format!(" through `{}` (line {line}), parsed from the default of the `{field}` option (line {option})", b.name)
                }
                (_, Some(b)) => {
                    let (line, _) = line_column(ctx.source, b.at.start);
                    format!(" through `{}` (line {line})", b.name)
                }
                (Arg::Field { name, .. }, None) => {
                    let (line, _) = line_column(ctx.source, digits.start);
                    format!(" through the default of the `{name}` option (line {line})")
                }
                _ => String::new(),
            };
            // A card the mask lists is renumbered by its place there; any other is no card.
            let mask = &ctx.policy.visible_devices;
            let place = mask
                .split(',')
                .position(|c| c.trim().parse::<u64>().ok() == Some(index));
            let message = match place {
                Some(p) => format!("{} selects device {index}{through}, device {p} under mask '{mask}'", sink.what),
                None => format!("{} selects device {index}{through}, which is no card under mask '{mask}' (the mask shows only its own cards, from device 0)", sink.what),
            };
            let blocked = if let Some((r, _)) = pattern {
                let (line, _) = line_column(ctx.source, r.start);
                Some(format!("not rewritten: the match pattern on line {line} compares devices with this file's indices"))
            } else {
                binding.and_then(|b| other_use(facts, b)).map(|u| {
                let (line, _) = line_column(ctx.source, u.start);
                format!("not rewritten: `{}` is also used on line {line} for something else than a device", binding.map_or("", |b| b.name.as_str()))
            })
            };
            out.push(match blocked {
                Some(why) => Finding::new(&DEVICE_INDEX, at, message).with_help(why),
                None => Finding::new(&DEVICE_INDEX, at, message)
                    .with_edits(vec![Edit::replace(digits, "0")]),
            });
        }
    }
}

fn sink_range(sink: &DeviceSink) -> Range<usize> {
    match &sink.arg {
        Arg::Lit { digits, .. } => digits.clone(),
        Arg::Name { at, .. } | Arg::Field { at, .. } | Arg::Opaque { at, .. } => at.clone(),
    }
}

/// What a sink's index hides when no literal of it is followed and it is not read at run
/// time (see [`Hidden`]): a struct literal's field, a function's return, a parsed string, a
/// method's or closure's parameter, a call the tool does not know.
fn hidden_index(facts: &Facts, sink: &DeviceSink) -> Option<Hidden> {
    match &sink.arg {
        Arg::Lit { .. } => None,
        Arg::Opaque { hidden, .. } => Some(hidden.clone()),
        Arg::Name { .. } => binding_of(facts, sink)
            .filter(|b| b.literals.is_empty() && b.iterates.is_none())
            .and_then(|b| b.hidden.clone()),
        // A field no option of this file sets: the literal a struct literal gives it.
        Arg::Field { name, .. } => {
            let option = facts.option_defaults.iter().any(|d| &d.field == name);
            let set: Vec<_> = facts
                .field_lits
                .iter()
                .filter(|(f, _, _)| f == name)
                .collect();
            let (_, at, value) = set.iter().find(|(_, _, v)| *v != 0).filter(|_| !option)?;
            Some(Hidden::Field {
                name: name.clone(),
                at: at.clone(),
                value: *value,
            })
        }
    }
}

/// A device index the tool follows to no card it can remap (a literal behind a struct's field
/// or a function, a parsed string, a parameter whose calls are not followed, a call it does
/// not know): for review, never silently taken for the mask's card.
fn hidden_findings(facts: &Facts, ctx: &Context, skip: &[usize], out: &mut Vec<Finding>) {
    let masked = ctx.policy.masked_index();
    for sink in facts.sinks.iter().filter(|s| !skip.contains(&s.expr)) {
        if facts
            .probes
            .iter()
            .any(|p| p.start <= sink.expr && sink.expr < p.end)
        {
            continue;
        }
        let Some(hidden) = hidden_index(facts, sink) else {
            continue;
        };
        if hidden.value() == Some(masked) {
            continue;
        }
        let what = sink.what.trim_end_matches(',');
        out.push(
            Finding::new(
                &DEVICE_INDEX_IN_LIBRARY,
                sink_range(sink),
                format!(
                    "{what} takes {}: under mask '{}' only device {masked} exists; not remapped",
                    hidden.describe(ctx.source),
                    ctx.policy.visible_devices
                ),
            )
            .with_help("check which card it selects: write the index where the tool can follow it (a literal, a `const`, a command-line option or env variable read with `unwrap_or(…)`) and run `fix` again, or remap it by hand, or accept it"),
        );
    }
}
