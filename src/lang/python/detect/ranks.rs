//! Programs that run as several ranks, each on a card of its own: the processes the program
//! starts itself (`mp.spawn(fn, nprocs=4)`), or a program built to be one rank of a distributed
//! launch (`--local_rank`, `LOCAL_RANK`, `--launcher pytorch`). Under the header every rank
//! sees one card: NCCL refuses two ranks on it, and `cuda:LOCAL_RANK` past 0 is no device.

use super::launched_within;
use crate::lang::python::facts::{Facts, MultiKind, SpawnCount};
use crate::lang::python::index::Role;
use crate::lang::python::rules::{LAUNCH_COUNT_UNKNOWN, MULTI_GPU_ASSUMPTION, MULTI_GPU_PER_RANK};
use crate::model::finding::Finding;
use crate::model::policy::Policy;

/// The file already says its ranks leave the mask (its own GH204): one finding is enough.
fn has_per_rank(out: &[Finding]) -> bool {
    out.iter()
        .any(|f| f.rule.code == MULTI_GPU_PER_RANK.code && f.is_violation())
}

/// What makes each rank take a card of its own, in the file or in the code its process runs.
fn per_rank_card(facts: &Facts, role: Option<&Role>) -> Option<String> {
    if let Some((_, what, _)) = facts
        .multi_gpu
        .iter()
        .find(|(_, _, k)| *k == MultiKind::Rank)
    {
        return Some(what.clone());
    }
    if let Some((_, what)) = facts.rank_cards.first() {
        return Some(what.clone());
    }
    match role {
        Some(Role::Program {
            needs: Some((chain, need)),
            ..
        }) if need.per_rank() => {
            let code = chain.rsplit(" → ").next().unwrap_or(chain);
            let does = if *need == crate::lang::python::Need::RankGroup {
                "makes a process group whose ranks each take a card (NCCL)"
            } else {
                "takes its card from the process rank"
            };
            Some(format!("its process runs {code}, which {does}"))
        }
        _ => None,
    }
}

/// Processes the file starts of its own code, one per rank, each taking a card of its own:
/// a count over the policy's cards needs that many (GH204); a count known only at run time
/// may (GH207, the header held back). Ranks that take no card of their own share the policy's.
pub(super) fn spawn_findings(
    facts: &Facts,
    role: Option<&Role>,
    policy: &Policy,
    out: &mut Vec<Finding>,
) {
    if facts.spawns.is_empty() || has_per_rank(out) {
        return;
    }
    let Some(evidence) = per_rank_card(facts, role) else {
        return;
    };
    let allowed = policy.visible_count() as u64;
    let mask = &policy.visible_devices;
    for spawn in &facts.spawns {
        let finding = match &spawn.count {
            SpawnCount::Known(n) if *n > allowed => Finding::new(
                &MULTI_GPU_PER_RANK,
                spawn.at.clone(),
                format!(
                    "{} starts {n} ranks, each on a card of its own: they need {n} cards, mask '{mask}' allows {allowed}",
                    spawn.what
                ),
            )
            .with_help(format!(
                "each rank takes a card: {evidence}; under the header every rank sees one card (NCCL refuses two ranks on it): start at most {allowed} rank(s), or allow more cards in the policy"
            )),
            SpawnCount::Known(_) => continue,
            SpawnCount::Unknown(_) => Finding::new(
                &LAUNCH_COUNT_UNKNOWN,
                spawn.at.clone(),
                format!(
                    "{} starts that many ranks, each on a card of its own: perhaps more than mask '{mask}' allows",
                    spawn.what
                ),
            )
            .with_help(format!(
                "each rank takes a card: {evidence}; the header is held back, as its mask would leave every rank one card: make the count at most {allowed}, or allow more cards in the policy; where it always starts one, mark this `# noqa: GH207`"
            )),
        };
        out.push(finding);
    }
}

/// A GPU program built to run as one of several ranks whose card its rank chooses at run time
/// (a `--local_rank` option, `LOCAL_RANK` written to its env, a `--launcher` naming a
/// distributed launch): judged as `torch.cuda.set_device(args.local_rank)` is (GH204).
pub(super) fn rank_launch_findings(
    facts: &Facts,
    role: Option<&Role>,
    policy: &Policy,
    out: &mut Vec<Finding>,
) {
    let Some((at, _)) = facts.rank_launch.first() else {
        return;
    };
    let gpu = match role {
        Some(Role::Program { gpu, hides, .. }) => *gpu && !*hides,
        Some(Role::Both { gpu, .. }) => *gpu,
        Some(Role::Library { .. }) => false,
        None => crate::lang::python::uses_card(facts),
    };
    if !gpu || facts.spawns_per_visible_gpu || has_per_rank(out) {
        return;
    }
    let whys: Vec<&str> = facts
        .rank_launch
        .iter()
        .map(|(_, what)| what.as_str())
        .collect();
    let why = whys[0];
    let also = if whys.len() > 1 {
        format!(" (also: {})", whys[1..].join("; "))
    } else {
        String::new()
    };
    let allowed = policy.visible_count() as u64;
    let mask = &policy.visible_devices;
    if let Some(launch) = launched_within(role, allowed) {
        out.push(Finding::new(
            &MULTI_GPU_ASSUMPTION,
            at.clone(),
            format!("one rank of a distributed launch ({why}); {launch}"),
        ));
        return;
    }
    out.push(
        Finding::new(
            &MULTI_GPU_PER_RANK,
            at.clone(),
            format!(
                "one rank of a distributed launch, its card chosen by its rank ({why}): more than {allowed} rank(s) leave mask '{mask}'"
            ),
        )
        .with_help(format!(
            "under the header only `cuda:0` exists, so rank 1 gets no device{also}: run it as one process (no distributed launcher, `--launcher none`), or launch at most {allowed} rank(s), or allow more cards in the policy"
        )),
    );
}
