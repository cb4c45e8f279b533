//! The rules: facts, the effective env and the configuration blocks in, findings out.

mod ranks;

use super::effective::Effective;
use super::facts::{DeviceUseKind, EnvEffect, EnvKey, EnvOp, Facts, MultiKind, RunTimeRead, Val};
use super::header::PythonHeader;
use super::rules::*;
use crate::base::edit::Edit;
use crate::lang::python::index::{EntryWhy, Role};
use crate::model::finding::Finding;
use crate::model::policy::{EnvVar, Policy, Remap};

pub struct RuleContext<'a> {
    pub policy: &'a Policy,
    pub header: &'a PythonHeader,
    /// GPU code or declared in a mission phase: its env must be the policy's.
    pub in_scope: bool,
    pub is_init: bool,
    /// What the file is to the processes that run it (`None`: every GPU file is judged alone).
    pub role: Option<&'a Role>,
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

/// Left as written: CPU-only on purpose, or a mask that lists several cards (GH203 on the
/// write itself is the finding about the file's env). Multi-GPU *code* (GH203, GH204) hides
/// nothing: the file's other findings stand beside it, and the plan waits while it is open.
pub fn hands_off(facts: &Facts, eff: &Effective, policy: &Policy) -> bool {
    cpu_only(facts, eff)
        || eff
            .executed
            .iter()
            .any(|&i| is_multi_mask(&facts.effects[i]) && !own_mask(&facts.effects[i], policy))
}

/// A mask that is the policy's own (a policy may allow several cards).
fn own_mask(e: &EnvEffect, policy: &Policy) -> bool {
    matches!(&e.op, EnvOp::Set(Val::Lit(v)) | EnvOp::SetDefault(Val::Lit(v)) if v.trim() == policy.visible_devices)
}

/// One piece of multi-GPU code judged against the policy's cards.
struct MultiVerdict<'f> {
    at: &'f std::ops::Range<usize>,
    message: String,
    violates: bool,
    rank: bool,
}

/// The command of the tree that starts the program says how many ranks it starts: within the
/// policy's cards, one GPU per rank is one of the policy's cards.
fn launched_within(role: Option<&Role>, allowed: u64) -> Option<String> {
    match role {
        Some(
            Role::Program {
                why: EntryWhy::Launched(l),
                ..
            }
            | Role::Both {
                why: EntryWhy::Launched(l),
                ..
            },
        ) => l
            .cards
            .as_ref()
            .filter(|(n, _)| *n as u64 <= allowed)
            .map(|(n, _)| {
                format!(
                    "`{}` starts {n} process{}",
                    l.command,
                    if *n == 1 { "" } else { "es" }
                )
            }),
        _ => None,
    }
}

/// A program whose process runs another module's code that needs more cards than the policy
/// allows (a pool worker taking its card from its rank, indices used together, a device list):
/// its header would leave that code one card, so it is judged as that code is, in the program
/// (GH203/GH204), and left as written.
fn needs_findings(facts: &Facts, role: Option<&Role>, policy: &Policy, out: &mut Vec<Finding>) {
    let Some(Role::Program {
        why,
        needs: Some((chain, need)),
        ..
    }) = role
    else {
        return;
    };
    // A test session runs each test apart: a test that needs two cards is its own file's
    // finding, not the whole session's.
    if matches!(why, EntryWhy::TestSession | EntryWhy::Test { .. }) {
        return;
    }
    let allowed = policy.visible_count() as u64;
    let mask = &policy.visible_devices;
    let at = main_block_start(facts);
    // The code itself; the whole chain is the evidence's (`scan --verbose`).
    let chain = chain.rsplit(" → ").next().unwrap_or(chain);
    let help = "under the header it gets one card: make that code use the policy's cards (or start one process per allowed card), or allow more cards in the policy";
    match need {
        // A rank-derived card in a library is one card per process: it takes several only
        // where the program (or the module that takes it) starts worker processes (a pool,
        // `spawn`) and is not launched within the policy's cards; a single process is rank 0.
        crate::lang::python::Need::Ranks | crate::lang::python::Need::RanksForked
            if (facts.forks.is_some() || *need == crate::lang::python::Need::RanksForked)
                && !facts.spawns_per_visible_gpu
                && launched_within(role, allowed).is_none() =>
        {
            out.push(
                Finding::new(
                    &MULTI_GPU_PER_RANK,
                    at,
                    format!("its process runs {chain}, which takes its card from the process rank: more than {allowed} rank(s) leave mask '{mask}'"),
                )
                .with_help(help),
            );
        }
        crate::lang::python::Need::Launcher => out.push(launcher_finding(
            at,
            &format!("its process runs {chain}, which starts as many processes as its arguments say (`--nproc_per_node`)"),
            policy,
        )),
        crate::lang::python::Need::Cards(n) if *n > allowed => out.push(
            Finding::new(
                &MULTI_GPU_CARDS,
                at,
                format!("its process runs {chain}, which needs {n} cards: mask '{mask}' allows {allowed}"),
            )
            .with_help(help),
        ),
        _ => {}
    }
}

/// A program whose process runs another module's code that writes a GPU variable against the
/// policy (a `select_device(device)` helper that sets `CUDA_VISIBLE_DEVICES` from its
/// argument): whatever its own header sets, the card is that code's. The write is that
/// module's finding (GH006 there); here the program is held until it is gone.
fn overrides_findings(facts: &Facts, role: &Role, out: &mut Vec<Finding>) {
    let (Role::Program {
        overrides: Some((chain, what)),
        ..
    }
    | Role::Both {
        overrides: Some((chain, what)),
        gpu: true,
        ..
    }) = role
    else {
        return;
    };
    let at = main_block_start(facts);
    let code = chain.rsplit(" → ").next().unwrap_or(chain);
    out.push(
        Finding::new(
            &ENV_WRITE_IN_FUNCTION,
            at,
            format!("its process runs {code}, which {what}: the header's value does not hold after it"),
        )
        .with_help("take the write out of that code, or make it write the policy's value (the finding there, GH006, says whether `fix --unsafe-fixes` can), then `fix` this file"),
    );
}

/// A program Python runs after package code that starts CUDA at import (`python -m pkg` runs
/// `pkg/__init__.py` first): CUDA has read the env before its header runs.
fn package_first_findings(facts: &Facts, role: &Role, out: &mut Vec<Finding>) {
    let Role::Program {
        package_first: Some((init, chain)),
        ..
    } = role
    else {
        return;
    };
    let at = main_block_start(facts);
    out.push(
        Finding::new(
            &CUDA_BEFORE_PROGRAM,
            at,
            format!("`{init}` runs before this file and starts CUDA at import: a header here comes too late"),
        )
        .with_help(format!("it starts there: {chain}; make that package start nothing at import (ask for the cards in a function), or set the env where the process starts (its launcher, a wrapper script)")),
    );
}

fn multi_gpu<'f>(facts: &'f Facts, policy: &Policy, role: Option<&Role>) -> Vec<MultiVerdict<'f>> {
    let allowed = policy.visible_count() as u64;
    let launched_within = launched_within(role, allowed);
    let mask = &policy.visible_devices;
    let cards = |n: u64| {
        if n == 1 {
            "1 card".to_string()
        } else {
            format!("{n} cards")
        }
    };
    // A program whose process reaches no GPU code (its own or an imported module's) runs its
    // torch.distributed group on the CPU (gloo): its ranks pick no card.
    let no_card = matches!(
        role,
        Some(Role::Program { gpu: false, .. } | Role::Both { gpu: false, .. })
    ) && !crate::lang::python::uses_card(facts);
    // A program that runs a launcher in-process imports torch.distributed for it: the ranks
    // are the processes it starts, not this one.
    let launches = facts
        .multi_gpu
        .iter()
        .any(|(_, _, kind)| *kind == MultiKind::Launcher);
    facts
        .multi_gpu
        .iter()
        .filter(|(_, _, kind)| !matches!(kind, MultiKind::Launcher | MultiKind::CardsAtRunTime))
        .filter(|(_, _, kind)| !(launches && *kind == MultiKind::Distributed))
        .map(|(at, what, kind)| {
            // A script run under a launcher (a `__main__` block) that imports torch.distributed
            // is one process per GPU; a library module's collectives are not a device choice.
            let per_rank = matches!(kind, MultiKind::Rank)
                || matches!(kind, MultiKind::Distributed) && facts.main_block.is_some() && !no_card;
            let (violates, rank, message) = match (kind, &launched_within) {
                (_, Some(launch)) if per_rank => (false, false, format!("{what}; {launch}")),
                _ if per_rank && !facts.spawns_per_visible_gpu => (true, true, format!(
                    "{what}: more than {} rank(s) leave mask '{mask}' ({})",
                    allowed, cards(allowed)
                )),
                (MultiKind::Cards(n), _) if *n > allowed => (true, false, format!(
                    "{what}: needs {}, mask '{mask}' allows {}",
                    cards(*n), cards(allowed)
                )),
                _ if per_rank => (false, false, format!(
                    "{what}; it starts one process per visible GPU, so under the header it runs {} (world size {allowed})",
                    cards(allowed)
                )),
                (MultiKind::Distributed, _) if no_card => (false, false,
                    "torch.distributed in a program that reaches no GPU code: its ranks run on the CPU".to_string()
                ),
                (MultiKind::Distributed, _) => (false, false, format!(
                    "torch.distributed in a library; {allowed} process(es) under mask '{mask}'"
                )),
                (MultiKind::Cards(_) | MultiKind::Adaptive | MultiKind::Rank | MultiKind::Launcher | MultiKind::CardsAtRunTime, _) => (false, false, format!(
                    "{what}; sees {} under mask '{mask}'",
                    cards(allowed)
                )),
            };
            MultiVerdict { at, message, violates, rank }
        })
        .collect()
}

pub fn findings(facts: &Facts, eff: &Effective, ctx: &RuleContext) -> Vec<Finding> {
    let mut out = Vec::new();
    let cpu = hands_off(facts, eff, ctx.policy);
    for e in &facts.effects {
        special_effect(e, ctx.policy, &mut out);
    }
    options_findings(facts, eff, ctx, cpu, &mut out);
    if !cpu {
        // A module that is also a library gets its program's env in its `__main__` block
        // (GH206) where it can, never at its top, even when a phase names it.
        if ctx.in_scope && !ctx.is_init && !also_a_library(ctx) {
            env_findings(facts, eff, ctx.policy, &mut out);
            env_check_findings(facts, eff, ctx.policy, &mut out);
        }
        untimed_findings(facts, eff, ctx.policy, &mut out);
        let held = together_findings(facts, eff, ctx.policy, &mut out);
        device_findings(facts, ctx.policy, &held, &mut out);
        untraced_literals(facts, ctx.policy, &mut out);
        nvml_findings(facts, ctx.policy, &mut out);
        for (at, what, config) in &facts.config_devices {
            out.push(
                Finding::new(
                    &DEVICE_FROM_CONFIG,
                    at.clone(),
                    format!("{what} takes its device from {config}, which the tool does not read"),
                )
                .with_help(format!("under CUDA_VISIBLE_DEVICES='{}' the policy's card is `cuda:0` (index 0): check the value there, then mark this `# noqa: GH111`", ctx.policy.visible_devices)),
            );
        }
        for (at, what, read) in &facts.cli_devices {
            let (from, read, passes, it) = match read {
                RunTimeRead::Option(r) => ("the command line", r, "passes", "option"),
                RunTimeRead::Env(r) => ("the environment", r, "sets", "variable"),
            };
            out.push(
                Finding::new(
                    &DEVICE_FROM_COMMAND_LINE,
                    at.clone(),
                    format!("{what} takes its card index from {from} (`{read}`, no default)"),
                )
                .with_help(format!("under CUDA_VISIBLE_DEVICES='{}' only index 0 exists: a launch script that {passes} the old number selects no device; make the {it} choose among the policy's cards (or drop it), then mark this `# noqa: GH112`", ctx.policy.visible_devices)),
            );
        }
        if ctx.in_scope {
            for o in &facts.idle_options {
                out.push(
                    Finding::new(
                        &IDLE_DEVICE_OPTION,
                        o.at.clone(),
                        format!("`{}` selects no card: its value (`.{}`) is never used, or only printed", o.option, o.dest),
                    )
                    .with_help("the policy's header decides the card: remove the option (and its echo), or make it choose among the policy's cards, then mark it `# noqa: GH014`"),
                );
            }
        }
        if let Some(role) = ctx.role {
            program_findings(facts, eff, role, ctx, &mut out);
            launch_findings(facts, role, ctx.policy, &mut out);
            needs_findings(facts, Some(role), ctx.policy, &mut out);
            overrides_findings(facts, role, &mut out);
            package_first_findings(facts, role, &mut out);
        }
    }
    for e in facts
        .effects
        .iter()
        .filter(|e| !e.child && is_multi_mask(e) && !own_mask(e, ctx.policy))
    {
        out.push(Finding::new(
            &MULTI_GPU_CARDS,
            e.at.clone(),
            format!(
                "CUDA_VISIBLE_DEVICES lists several cards; the policy's mask is '{}'",
                ctx.policy.visible_devices
            ),
        ));
    }
    for (at, what, _) in facts
        .multi_gpu
        .iter()
        .filter(|(_, _, kind)| *kind == MultiKind::Launcher)
    {
        out.push(launcher_finding(at.clone(), what, ctx.policy));
    }
    for (at, what, _) in facts
        .multi_gpu
        .iter()
        .filter(|(_, _, kind)| *kind == MultiKind::CardsAtRunTime)
    {
        out.push(launcher_finding(at.clone(), what, ctx.policy));
    }
    for m in multi_gpu(facts, ctx.policy, ctx.role) {
        let rule = match (m.violates, m.rank) {
            (true, true) => &MULTI_GPU_PER_RANK,
            (true, false) => &MULTI_GPU_CARDS,
            (false, _) => &MULTI_GPU_ASSUMPTION,
        };
        out.push(Finding::new(rule, m.at.clone(), m.message));
    }
    if !cpu {
        ranks::spawn_findings(facts, ctx.role, ctx.policy, &mut out);
        ranks::rank_launch_findings(facts, ctx.role, ctx.policy, &mut out);
    }
    touchpoints(facts, ctx.is_init, &mut out);
    out.sort_by_key(|f| (f.range.start, f.rule.code));
    out.dedup_by(|a, b| a.rule.code == b.rule.code && a.range == b.range && a.message == b.message);
    out
}

/// The command of the tree that starts this program asks for more cards than the policy
/// allows (`torchrun --nproc_per_node 2`, `--gpu_ids 0,1`, `CUDA_VISIBLE_DEVICES=0,1`), or
/// gives it a card the policy forbids: the command is what to change (the tool never rewrites
/// it), reported in the program it starts.
fn launch_findings(facts: &Facts, role: &Role, policy: &Policy, out: &mut Vec<Finding>) {
    let (Role::Program { why, .. } | Role::Both { why, .. }) = role else {
        return;
    };
    let crate::lang::python::index::EntryWhy::Launched(l) = why else {
        return;
    };
    let at = main_block_start(facts);
    let allowed = policy.visible_count();
    let place = format!("`{}` ({}, line {})", l.command, l.file, l.line);
    if let Some((n, what)) = l.cards.as_ref().filter(|(n, _)| *n > allowed) {
        let count = if *n == usize::MAX {
            "every visible card".to_string()
        } else {
            format!("{n} cards")
        };
        out.push(
            Finding::new(
                &MULTI_GPU_CARDS,
                at.clone(),
                format!("started by {place}, which asks for {count} ({what}); mask '{}' allows {allowed}", policy.visible_devices),
            )
            .with_help("a second process or card gets an invalid device ordinal (or, unmasked, the forbidden card): change the command to use the policy's cards, or allow more cards in the policy"),
        );
    } else if let Some(what) = &l.unknown {
        out.push(
            Finding::new(
                &LAUNCH_COUNT_UNKNOWN,
                at.clone(),
                format!("started by {place}: {what} processes, unknown here; mask '{}' allows {allowed}", policy.visible_devices),
            )
            .with_help("the header is held back: make the command start as many processes as the policy allows cards, or allow more cards in the policy; where it always starts one, mark this `# noqa: GH207`"),
        );
    }
    let allowed: Vec<&str> = policy.visible_devices.split(',').map(str::trim).collect();
    let forbidden: Vec<&str> = l
        .mask
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|c| c.parse::<u64>().is_ok() && !allowed.contains(c))
        .collect();
    if !forbidden.is_empty() {
        out.push(
            Finding::new(
                &CHILD_PROCESS_CARD,
                at,
                format!("started by {place} with CUDA_VISIBLE_DEVICES={}: card {} is not the policy's ('{}')", l.mask.as_deref().unwrap_or(""), forbidden.join(", "), policy.visible_devices),
            )
            .with_help("change the command to the policy's mask, or drop it"),
        );
    }
}

/// A distributed launcher the program runs in-process (`torch.distributed.run.run(args)`), or
/// a number of cards read at run time (Lightning's `devices=int(os.environ[…])`): the number
/// of processes is unknown here.
fn launcher_finding(at: std::ops::Range<usize>, what: &str, policy: &Policy) -> Finding {
    Finding::new(
        &LAUNCH_COUNT_UNKNOWN,
        at,
        format!(
            "{what}: perhaps more than mask '{}' allows",
            policy.visible_devices
        ),
    )
    .with_help("the header is held back: its mask would reach every process the launch starts; start as many processes as the policy allows cards, or allow more cards in the policy; where it always starts one, mark this `# noqa: GH207`")
}

/// A mask read from the command line (`-g 0`) is a choice of card the user makes, whatever
/// else the file does: reported on its own. Where the header's plan replaces the write (it
/// runs at import, in a file the header is for) the plan fixes it; a write in a function goes
/// as GH006's does (unsafe); a file left as written keeps it, reported.
fn options_findings(
    facts: &Facts,
    eff: &Effective,
    ctx: &RuleContext,
    hands_off: bool,
    out: &mut Vec<Finding>,
) {
    let mask = &ctx.policy.visible_devices;
    for (i, e) in facts.effects.iter().enumerate() {
        let (Some(read), Some(EnvVar::VisibleDevices), false) = (&e.from_option, e.var(), e.child)
        else {
            continue;
        };
        let finding = Finding::new(
            &MASK_FROM_OPTION,
            e.at.clone(),
            format!(
                "CUDA_VISIBLE_DEVICES from the command line (`{read}`), not the policy's '{mask}'"
            ),
        );
        out.push(if hands_off {
            finding
        } else if eff.executed.contains(&i) && ctx.in_scope && !ctx.is_init {
            finding.fixed_by_plan()
        } else if eff.untimed.contains(&i) {
            match &e.removal {
                Some(edits) => finding.with_edits(edits.clone()).unsafe_fix(),
                None => finding,
            }
        } else {
            finding
        });
    }
}

/// What an env effect does, for a message.
fn shown_op(op: &EnvOp) -> String {
    match op {
        EnvOp::Set(v) => format!("to {}", shown(v)),
        EnvOp::SetDefault(v) => format!("by default to {}", shown(v)),
        EnvOp::Unset => "removes it".into(),
        EnvOp::Clobber => "through a whole-environment change".into(),
    }
}

/// Deliberate masks, child-process env and AMD masks: reported, never rewritten.
fn special_effect(e: &EnvEffect, policy: &Policy, out: &mut Vec<Finding>) {
    if e.child {
        if let (Some(var), EnvOp::Unset) = (e.var(), &e.op) {
            child_env_removed(e, var, policy, out);
            return;
        }
        if let (Some(var), EnvOp::Set(val)) = (e.var(), &e.op) {
            // A mask of card numbers that the policy's mask does not hold: the child runs on a
            // card it must not use (CUDA_DEVICE_ORDER is inherited).
            let allowed: Vec<&str> = policy.visible_devices.split(',').map(str::trim).collect();
            let forbidden = match val {
                Val::Lit(v) if var == EnvVar::VisibleDevices => v
                    .split(',')
                    .map(str::trim)
                    .filter(|c| c.parse::<u64>().is_ok() && !allowed.contains(c))
                    .collect::<Vec<_>>(),
                _ => Vec::new(),
            };
            if !forbidden.is_empty() {
                out.push(
                    Finding::new(
                        &CHILD_PROCESS_CARD,
                        e.at.clone(),
                        format!("a child process gets CUDA_VISIBLE_DEVICES={}: card {} is not the policy's ('{}')", shown(val), forbidden.join(", "), policy.visible_devices),
                    )
                    .with_help("give the child the policy's mask, or let it inherit the parent's"),
                );
                return;
            }
            if !matches!(val, Val::Lit(v) if Some(v.as_str()) == policy.env_value(var)) {
                out.push(
                    Finding::new(
                        &CHILD_ENV,
                        e.at.clone(),
                        format!(
                            "a child process gets {}={}: the policy's value is {}",
                            var.name(),
                            shown(val),
                            policy
                                .env_value(var)
                                .map_or("unset".into(), |v| format!("'{v}'"))
                        ),
                    )
                    .with_help("pass the parent's env or the policy's value"),
                );
            }
        }
        return;
    }
    if is_cpu_mask(e) {
        out.push(Finding::new(
            &DELIBERATE_CPU_MASK,
            e.at.clone(),
            "CUDA_VISIBLE_DEVICES hides every GPU here (a deliberate CPU-only choice): left as is",
        )
        .with_help("confirm it is meant"));
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

/// A child env built without a variable the policy sets (`env.pop("CUDA_VISIBLE_DEVICES")`,
/// a comprehension that leaves it out): the child does not inherit the header's value, and
/// without the mask it sees every card, the forbidden ones too.
fn child_env_removed(e: &EnvEffect, var: EnvVar, policy: &Policy, out: &mut Vec<Finding>) {
    let Some(want) = policy.env_value(var) else {
        return;
    };
    let finding = if var == EnvVar::VisibleDevices {
        Finding::new(
            &CHILD_PROCESS_CARD,
            e.at.clone(),
            format!("a child process is started without CUDA_VISIBLE_DEVICES: it sees every card, not only the policy's ('{want}')"),
        )
        .with_help("keep the mask in the child's env (copy the parent's), or give it the policy's value")
    } else {
        Finding::new(
            &CHILD_ENV,
            e.at.clone(),
            format!(
                "a child process is started without {}: the policy's value is '{want}'",
                var.name()
            ),
        )
        .with_help("keep the parent's value in the child's env")
    };
    out.push(finding);
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
                // Nothing writes a GPU variable: every one is inherited, which the name says.
                "GPU header missing".to_string(),
            )
            .fixed_by_plan(),
        ),
        Some(first) => {
            let finding = Finding::new(
                &HEADER_INCOMPLETE,
                first.at.clone(),
                format!("GPU env: {}", detail.join("; ")),
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
                        format!("{} set after the GPU import", var.name()),
                    )
                    .fixed_by_plan(),
                );
            }
        }
    }
}

/// Writes in functions the module does not call at import: they may run before CUDA starts.
/// The file checks a managed variable against the value it writes itself, which the header
/// replaces with the policy's: the check's literal follows (see GH018).
fn env_check_findings(facts: &Facts, eff: &Effective, policy: &Policy, out: &mut Vec<Finding>) {
    for (var, at, value, inner) in &facts.env_checks {
        let Some(want) = policy.env_value(*var) else {
            continue;
        };
        if value == want {
            continue;
        }
        let own = eff.executed.iter().any(|&i| {
            let e = &facts.effects[i];
            !e.child
                && e.var() == Some(*var)
                && matches!(&e.op, EnvOp::Set(Val::Lit(v)) | EnvOp::SetDefault(Val::Lit(v)) if v == value)
        });
        if !own {
            continue;
        }
        let finding = Finding::new(
            &ENV_CHECK_OWN_VALUE,
            at.clone(),
            format!(
                "checks {} against '{value}'; the header sets '{want}'",
                var.name()
            ),
        );
        let plain = !want.contains(['\'', '"', '\\', '\n', '\r']);
        out.push(match inner {
            Some(inner) if plain => {
                finding.with_edits(vec![Edit::replace(inner.clone(), want.to_string())])
            }
            _ => finding,
        });
    }
}

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
            .map_or("unset".to_string(), |v| format!("'{v}'"));
        let finding = Finding::new(
            &ENV_WRITE_IN_FUNCTION,
            e.at.clone(),
            format!("a function {what} (policy: {policy_value}) and may run before CUDA starts"),
        );
        // Removing the write changes what the function does when it is called.
        out.push(match &e.removal {
            Some(edits) => finding.with_edits(edits.clone()).unsafe_fix(),
            None => finding,
        });
    }
}

/// Device uses of different indices that run together, when they are more cards than the
/// policy allows: GH203 on each use past the first, and none of them remapped (the remap would
/// merge the cards). A file whose own mask already leaves one card at its GPU import never had
/// two: its `cuda:1` is the invalid ordinal of a half-done migration, which the remap repairs.
fn together_findings(
    facts: &Facts,
    eff: &Effective,
    policy: &Policy,
    out: &mut Vec<Finding>,
) -> Vec<usize> {
    let one_card = eff
        .at_import
        .as_ref()
        .and_then(|(_, env)| env.value(EnvVar::VisibleDevices))
        .is_some_and(|mask| mask.split(',').filter(|c| !c.trim().is_empty()).count() == 1);
    let allowed = policy.visible_count() as u64;
    let mut held = Vec::new();
    for (group, line) in facts
        .together
        .iter()
        .filter(|(g, _)| !one_card && g.len() as u64 > allowed)
    {
        let first = &facts.devices[group[0]];
        for &i in &group[1..] {
            let d = &facts.devices[i];
            out.push(Finding::new(
                &MULTI_GPU_CARDS,
                d.at.clone(),
                format!(
                    "{} selects device {} where line {} selects device {}: needs {} cards, mask '{}' allows {allowed} card{}",
                    d.what, d.index, line, first.index, group.len(), policy.visible_devices,
                    if allowed == 1 { "" } else { "s" }
                ),
            )
            .with_help("the program uses these cards together: make it use the policy's cards, or allow more cards in the policy"));
        }
        held.extend(group.iter().copied());
    }
    held
}

fn device_findings(facts: &Facts, policy: &Policy, held: &[usize], out: &mut Vec<Finding>) {
    for (_, d) in facts
        .devices
        .iter()
        .enumerate()
        .filter(|(i, _)| !held.contains(i))
    {
        let rule = match d.kind {
            DeviceUseKind::String => &DEVICE_STRING_INDEX,
            DeviceUseKind::Call => &DEVICE_CALL_INDEX,
            DeviceUseKind::Keyword => &DEVICE_KEYWORD_INDEX,
            DeviceUseKind::Flow => &DEVICE_MAP_INDEX,
        };
        let mask = &policy.visible_devices;
        match policy.remap_index(d.index) {
            Remap::Keep => {}
            Remap::Invalid => out.push(
                Finding::new(
                    &DEVICE_INDEX_INVALID,
                    d.at.clone(),
                    format!(
                        "{} selects device {}, but mask '{mask}' leaves {} device(s) (indices 0..{})",
                        d.what, d.index, policy.visible_count(), policy.visible_count().saturating_sub(1)
                    ),
                )
                .with_help("no card has that index: choose the device by hand"),
            ),
            Remap::To(new) => {
                if let Some(name) = &d.shared {
                    out.push(
                        Finding::new(
                            &DEVICE_INDEX_SHARED,
                            d.at.clone(),
                            format!("{} selects device {}, device {new} under mask '{mask}', but `{name}` is also used for something else", d.what, d.index),
                        )
                        .with_help("a remap would change the other use too: change it by hand"),
                    );
                    continue;
                }
                let finding = Finding::new(
                    rule,
                    d.at.clone(),
                    format!("{} selects device {}, device {new} under mask '{mask}'", d.what, d.index),
                );
                out.push(match &d.digits {
                    Some(digits) => finding.with_edits(vec![Edit::replace(digits.clone(), new.to_string())]),
                    None => finding,
                });
            }
        }
    }
}

/// NVML numbers cards by PCI bus, whatever CUDA_VISIBLE_DEVICES says: its index of the
/// policy's card is the card's number in the mask (with CUDA_DEVICE_ORDER=PCI_BUS_ID).
fn nvml_findings(facts: &Facts, policy: &Policy, out: &mut Vec<Finding>) {
    let allowed: Vec<u64> = policy
        .visible_devices
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let Some(&card) = allowed.first() else { return };
    for n in &facts.nvml {
        match &n.index {
            Some((index, digits)) if !allowed.contains(index) => out.push(
                Finding::new(
                    &NVML_INDEX,
                    n.at.clone(),
                    format!("{}({index}) reads the card on PCI bus position {index}, not the policy's (NVML index {card})", n.call),
                )
                .with_help("NVML ignores CUDA_VISIBLE_DEVICES; or select the card with nvmlDeviceGetHandleByPciBusId / ByUUID")
                .with_edits(vec![Edit::replace(digits.clone(), card.to_string())])
                .unsafe_fix(),
            ),
            None if n.to_cuda => out.push(
                Finding::new(
                    &NVML_CUDA_INDEX,
                    n.at.clone(),
                    format!("{} is given a card number as NVML and nvidia-smi count cards (all of them, PCI order): CUDA has only device 0 under mask '{}'", n.call, policy.visible_devices),
                )
                .with_help("NVML, nvidia-smi and GPUtil ignore CUDA_VISIBLE_DEVICES: pick among the policy's cards (CUDA device 0), or map the card by PCI bus id or UUID"),
            ),
            None if n.from_cuda => out.push(
                Finding::new(
                    &NVML_CUDA_INDEX,
                    n.at.clone(),
                    format!("{} is given a CUDA device number: the policy's card is NVML index {card}, CUDA device 0", n.call),
                )
                .with_help("NVML ignores CUDA_VISIBLE_DEVICES: map the card by PCI bus id or UUID (`torch.cuda.get_device_properties(i).uuid`)"),
            ),
            _ => {}
        }
    }
}

/// A `"cuda:N"` that the mask renumbers and that no device use accounts for: the tool does
/// not know where it goes (an option's default, an attribute, a call it does not know).
fn untraced_literals(facts: &Facts, policy: &Policy, out: &mut Vec<Finding>) {
    let overlaps =
        |a: &std::ops::Range<usize>, b: &std::ops::Range<usize>| a.start < b.end && b.start < a.end;
    let mask = &policy.visible_devices;
    for lit in &facts.device_literals {
        let at = &lit.at;
        let known = facts.devices.iter().any(|d| {
            overlaps(&d.at, at)
                || d.digits.as_ref().is_some_and(|r| overlaps(r, at))
                || d.literal.as_ref().is_some_and(|r| overlaps(r, at))
        }) || facts.multi_gpu.iter().any(|(r, _, _)| overlaps(r, at));
        if known {
            continue;
        }
        let index = lit.index;
        // Only a card the mask renumbers or removes; an index no card of the policy's machine
        // has (test data such as "cuda:10") says nothing about the mask.
        let highest = policy
            .visible_devices
            .split(',')
            .filter_map(|e| e.trim().parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        if index > highest {
            continue;
        }
        match (policy.remap_index(index), &lit.option_default) {
            (Remap::Keep, _) => {}
            // An option named for a device: its default is a device choice, remapped as one.
            (Remap::To(new), Some((option, digits))) => out.push(
                Finding::new(
                    &DEVICE_KEYWORD_INDEX,
                    at.clone(),
                    format!("default of `{option}` selects device {index}, device {new} under mask '{mask}'"),
                )
                .with_edits(vec![Edit::replace(digits.clone(), new.to_string())]),
            ),
            (remap, _) => {
                let becomes = match remap {
                    Remap::To(new) => format!("`cuda:{new}` under mask '{mask}'"),
                    _ => format!("no card under mask '{mask}'"),
                };
                out.push(
                    Finding::new(
                        &DEVICE_LITERAL_UNTRACED,
                        at.clone(),
                        format!("\"cuda:{index}\" ({becomes}) may select a device the tool cannot follow"),
                    )
                    .with_help("change it by hand if it reaches a device, or mark it `# noqa: GH108`"),
                );
            }
        }
    }
}

/// Why a module that is also a library cannot get its program's env at the start of its
/// `__main__` block (GH205, with this reason), or `None` when it can (GH206): its program must
/// run the block, nothing it runs at import may reach GPU code first, and it may write no GPU
/// variable of its own elsewhere.
fn main_block_refusal(
    facts: &Facts,
    main_env: MainEnv,
    why: &EntryWhy,
    gpu_before_main: Option<&str>,
) -> Option<String> {
    if !matches!(why, EntryWhy::MainGuard | EntryWhy::Launched(_)) {
        // The help already says what runs it.
        Some("what runs it does not run the block".to_string())
    } else if main_env == MainEnv::Other {
        Some("it writes GPU variables of its own".to_string())
    } else if let Some(chain) = gpu_before_main {
        Some(format!(
            "its code at import reaches CUDA before the `__main__` block ({chain})"
        ))
    } else {
        match &facts.main_block {
            // Run by a command (`python -m pkg.tool`) for its module-level code.
            None => Some("it has no `__main__` block".to_string()),
            Some(m) if m.first_stmt.is_none() => {
                Some("its `__main__` block has no statement on a line of its own".to_string())
            }
            Some(_) => None,
        }
    }
}

/// A module that is also a library: no header at its top is due, even when a mission phase
/// names it. Its program gets (or has) the env in its `__main__` block (GH206), or it is left
/// for review with the reason (GH205): a header at its top would set every importer's env.
fn also_a_library(ctx: &RuleContext) -> bool {
    matches!(ctx.role, Some(Role::Both { .. }))
}

/// What the first statements of a `__main__` block do to the GPU env.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MainEnv {
    /// They set every variable the policy names to its value (after an `import os`).
    Policy,
    /// Nothing of the env: no block of it there, and no GPU variable written anywhere else.
    Unset,
    /// The file writes GPU variables otherwise: a block that is not the policy's, or writes
    /// elsewhere.
    Other,
}

/// Whether the `__main__` block starts by setting the policy's env: its first statements are
/// writes of GPU variables and nothing else (an `import os` among them), and every variable
/// the policy names is set there to the policy's value, by none other of the file's writes.
fn main_block_env(facts: &Facts, policy: &Policy) -> MainEnv {
    let own: Vec<&EnvEffect> = facts
        .effects
        .iter()
        .filter(|e| !e.child && (e.key.is_none() || e.var().is_some()))
        .collect();
    if own.is_empty() {
        return MainEnv::Unset;
    }
    let Some(main) = &facts.main_block else {
        return MainEnv::Other;
    };
    let mut prefix: Vec<&EnvEffect> = Vec::new();
    for (stmt, import_os) in &main.stmts {
        let writes: Vec<&EnvEffect> = own.iter().copied().filter(|e| e.stmt == *stmt).collect();
        if *import_os && writes.is_empty() {
            continue;
        }
        if writes.is_empty() || !writes.iter().all(|e| e.pure && e.function.is_none()) {
            break;
        }
        prefix.extend(writes);
    }
    let elsewhere = own.len() > prefix.len();
    let sets = |var: EnvVar, want: &str| {
        prefix.iter().any(|e| {
            e.var() == Some(var)
                && match &e.op {
                    EnvOp::Set(Val::Lit(v)) => v == want,
                    EnvOp::SetDefault(Val::Lit(v)) => policy.respect_scheduler && v == want,
                    _ => false,
                }
        })
    };
    let all = EnvVar::ALL
        .iter()
        .all(|&var| policy.env_value(var).is_none_or(|want| sets(var, want)));
    if all && !elsewhere {
        MainEnv::Policy
    } else {
        MainEnv::Other
    }
}

/// A file judged through its programs: a library must not set its importers' env, its device
/// indices mean what its programs' mask makes them, and a module run as a program that is also
/// imported cannot carry a header.
fn program_findings(
    facts: &Facts,
    eff: &Effective,
    role: &Role,
    ctx: &RuleContext,
    out: &mut Vec<Finding>,
) {
    let policy = ctx.policy;
    let importers = crate::lang::python::index::listed;
    let (library_of, programs) = match role {
        Role::Program { .. } => return,
        Role::Library { programs, count } => (
            if *count == 0 && !programs.is_empty() {
                format!(
                    "it runs inside the Rust program of `{}`, which embeds it",
                    programs[0]
                )
            } else if *count == 0 {
                "no program of this tree runs it".to_string()
            } else {
                format!("it runs in the programs of {}", importers(programs, *count))
            },
            *count,
        ),
        Role::Both {
            why,
            gpu,
            gpu_before_main,
            ..
        } => {
            let main_env = main_block_env(facts, policy);
            // A GPU program, or one a mission phase names (for a file that is also a library,
            // `in_scope` is the phase's).
            if (*gpu || ctx.in_scope) && main_env != MainEnv::Policy {
                let at = main_block_start(facts);
                let imported = role.library_why_short();
                // Its own mask write, as a program (from `--gpus`, in `main()`): say what it risks.
                let own = eff
                    .executed
                    .iter()
                    .map(|&i| &facts.effects[i])
                    .find(|e| {
                        e.var() == Some(crate::model::policy::EnvVar::VisibleDevices)
                            && !e.child
                            && !is_cpu_mask(e)
                    })
                    .map_or(String::new(), |e| {
                        format!(
                            "; it sets CUDA_VISIBLE_DEVICES itself ({})",
                            shown_op(&e.op)
                        )
                    });
                match main_block_refusal(facts, main_env, why, gpu_before_main.as_deref()) {
                    None => out.push(
                        Finding::new(
                            &PROGRAM_IN_LIBRARY_ENV,
                            at,
                            format!("module runs as a program but is also a library: {imported}; its `__main__` block does not set the GPU env"),
                        )
                        .with_help("`fix` sets it at the start of the `__main__` block, which only its program runs"),
                    ),
                    Some(why_not) => out.push(
                        Finding::new(
                            &PROGRAM_IN_LIBRARY,
                            at,
                            format!("module runs as a program but is also a library: {imported}{own}"),
                        )
                        .with_help(format!(
                            "it runs as {}: a header here would set the env of every program that imports it, and the env cannot go in its `__main__` block: {why_not}; give the program a module of its own, or set the env where it starts",
                            why.describe()
                        )),
                    ),
                }
            }
            (String::new(), 1)
        }
    };
    // Only what runs when the module is imported: not its functions, not its `__main__` block
    // (a module run as a program that sets the mask from its `--gpus` is GH205's business).
    let main_block = facts.main_block.as_ref().and_then(|m| {
        facts
            .top
            .iter()
            .find(|(r, _)| r.start == m.if_start)
            .map(|(r, _)| r.clone())
    });
    for &i in &eff.executed {
        let e = &facts.effects[i];
        let Some(var) = e.var() else { continue };
        let at_import = e.function.is_none()
            && !main_block
                .as_ref()
                .is_some_and(|m| m.start <= e.at.start && e.at.end <= m.end);
        if e.child || is_cpu_mask(e) || !at_import {
            continue;
        }
        let finding = Finding::new(
            &ENV_WRITE_IN_LIBRARY,
            e.at.clone(),
            format!(
                "library module sets {} at import ({})",
                var.name(),
                match (library_of.is_empty(), role.library_why_short()) {
                    (false, _) => library_of.clone(),
                    (true, why) if !why.is_empty() => why,
                    (true, _) => "this module is also imported".to_string(),
                }
            ),
        );
        // Taking it out leaves the programs of this tree on their own header; an importer
        // outside the tree loses the write.
        out.push(match (&e.removal, programs > 0) {
            (Some(edits), true) => finding.with_edits(edits.clone()).unsafe_fix(),
            _ => finding,
        });
    }
    if programs == 0 {
        // No program of the tree masks: what index 1 means depends on the caller.
        for f in out
            .iter_mut()
            .filter(|f| f.rule.subject == crate::model::finding::Subject::DeviceIndex)
        {
            f.rule = &DEVICE_INDEX_IN_LIBRARY;
            f.fixable = false;
            f.edits.clear();
            f.message = format!("{}; but {library_of}", f.message);
            f.add_help("the card it selects depends on the mask of the program that imports it: check the callers, then remap by hand or mark it `# noqa: GH107`");
        }
    }
}

fn touchpoints(facts: &Facts, is_init: bool, out: &mut Vec<Finding>) {
    // A package `__init__.py` starts the GPU stack for its importers when its code at import
    // uses a card or asks the driver for them; importing torch starts nothing (CUDA reads the
    // env at its first use), a framework that takes a GPU unasked may.
    let at_import = |at: usize| {
        !facts.definitions.iter().any(|d| d.contains(&at))
            && facts.main_block.as_ref().is_none_or(|m| at < m.if_start)
    };
    let acts = facts
        .cuda_sites
        .iter()
        .chain(&facts.cuda_queries)
        .any(|&at| at_import(at));
    for import in facts.runtime_gpu_imports() {
        let starts = acts || crate::knowledge::python::gpu_by_default(&import.module);
        let (rule, message) = match (import.lazy, is_init && starts) {
            (false, true) => {
                out.push(
                    Finding::new(
                        &GPU_IMPORT_IN_INIT,
                        import.range.clone(),
                        format!("`{}` imported by a package __init__.py: importing the package starts the GPU stack", import.module),
                    )
                    .with_help("import it lazily where it is used"),
                );
                continue;
            }
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

/// Where a finding about the `__main__` block goes: its `if` (the file's start without one).
fn main_block_start(facts: &Facts) -> std::ops::Range<usize> {
    facts
        .main_block
        .as_ref()
        .map_or(0..0, |m| m.if_start..m.if_start)
}
