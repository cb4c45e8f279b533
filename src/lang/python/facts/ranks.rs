//! Programs that run as several ranks: the processes a call starts of the program's own code
//! (`mp.spawn(fn, nprocs=4)`, its count followed through the parameters of the tree's helpers),
//! what makes each rank take a card of its own (an NCCL group, `rank % device_count()`), and
//! what says a program is built to be one rank of a distributed launch (`--local_rank`,
//! `LOCAL_RANK` written to its env, `--launcher {pytorch,slurm,mpi}`).

use std::ops::Range;

use ruff_python_ast::{Expr, ExprCall, Stmt};

use super::{range, FactVisitor, ParamTakes};
use crate::knowledge::python::{
    DISTRIBUTED_LAUNCHERS, RANK_OPTIONS, RANK_SPAWN_CALLS, RANK_VARIABLES,
};

/// A call that starts processes of the program's own code, one per rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn {
    pub at: Range<usize>,
    pub count: SpawnCount,
    /// The call and its count as written: "`torch.multiprocessing.spawn(…)` (`nprocs=4`)".
    pub what: String,
}

/// How many processes a [`Spawn`] starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnCount {
    /// A number the code writes (a literal, a name bound to literals, an option's default).
    Known(u64),
    /// A number known only when it runs (an option with no default, a computed value): the
    /// count as written.
    Unknown(String),
}

impl<'s> FactVisitor<'s> {
    /// The rank facts of one call (`name`: its dotted name).
    pub(super) fn rank_call(&mut self, call: &'s ExprCall, name: &str) {
        if let Some((api, position, keyword)) = RANK_SPAWN_CALLS.iter().find(|(n, _, _)| *n == name)
        {
            if let Some((count, _)) = super::devices::argument(call, keyword, Some(*position)) {
                let what = format!("`{api}(…)`");
                self.spawn_count(count, range(call), &what, keyword);
            }
        }
        self.nccl_group(call, name);
        if matches!(call.func.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "add_argument") {
            self.rank_option(call);
        }
        // `os.environ.setdefault("LOCAL_RANK", …)`.
        if name == "os.environ.setdefault" {
            if let Some(Expr::StringLiteral(k)) = call.arguments.args.first() {
                self.rank_variable(k.value.to_str(), range(call));
            }
        }
    }

    /// The number of processes a spawn call starts, passed at `at`: a number written here, a
    /// parameter of the file's function (its callers' arguments are the count, in this module
    /// or another of the tree), else a count known only at run time.
    pub(super) fn spawn_count(
        &mut self,
        count: &'s Expr,
        at: Range<usize>,
        what: &str,
        param: &str,
    ) {
        // One process per visible card: under the mask, as many as the policy allows.
        if self.counts_visible(count, 0) {
            self.facts.spawns_per_visible_gpu = true;
            return;
        }
        let scope = self.scopes().scope_at(range(count).start);
        if let Expr::Name(n) = count {
            if let Some(f) = self.scopes().param_of(n.id.as_str(), scope) {
                if self.scopes().functions[f].top {
                    let param = n.id.to_string();
                    if !self
                        .param_sinks
                        .iter()
                        .any(|(g, p, _)| *g == f && *p == param)
                    {
                        self.param_sinks.push((f, param, ParamTakes::Processes));
                    }
                    return;
                }
            }
        }
        let shown = &self.source[range(count)];
        let count = match self.count_of(count) {
            Some(n) if n <= 1 => return,
            Some(n) => SpawnCount::Known(n),
            None => SpawnCount::Unknown(shown.to_string()),
        };
        self.facts.spawns.push(Spawn {
            at,
            count,
            what: format!("{what} (`{param}={shown}`)"),
        });
    }

    /// `init_process_group("nccl")`, `launch(…, backend="nccl")`: a process group whose ranks
    /// each need a card of their own.
    fn nccl_group(&mut self, call: &'s ExprCall, name: &str) {
        let nccl = |e: &Expr| matches!(e, Expr::StringLiteral(s) if s.value.to_str().to_ascii_lowercase().contains("nccl"));
        let keyword = call.arguments.keywords.iter().find(|k| {
            k.arg
                .as_ref()
                .is_some_and(|a| matches!(a.as_str(), "backend" | "dist_backend"))
                && nccl(&k.value)
        });
        let positional =
            name.ends_with("init_process_group") && call.arguments.args.first().is_some_and(nccl);
        if keyword.is_some() || positional {
            self.facts.rank_cards.push((
                range(call),
                "an NCCL process group (NCCL gives each rank a card of its own)".into(),
            ));
        }
    }

    /// `parser.add_argument("--local_rank", …)`, `add_argument("--launcher", choices=["none",
    /// "pytorch", "slurm", "mpi"])`.
    fn rank_option(&mut self, call: &'s ExprCall) {
        let flags: Vec<&str> = call
            .arguments
            .args
            .iter()
            .filter_map(|a| match a {
                Expr::StringLiteral(s) => Some(s.value.to_str()),
                _ => None,
            })
            .collect();
        if let Some(flag) = flags.iter().find(|f| RANK_OPTIONS.contains(f)) {
            self.facts.rank_launch.push((
                range(call),
                format!("`{flag}`, which a distributed launcher passes each rank"),
            ));
            return;
        }
        if !flags.contains(&"--launcher") {
            return;
        }
        let Some(choices) = call
            .arguments
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "choices"))
        else {
            return;
        };
        let elts = match &choices.value {
            Expr::List(l) => &l.elts,
            Expr::Tuple(t) => &t.elts,
            _ => return,
        };
        let distributed: Vec<&str> = elts
            .iter()
            .filter_map(|e| match e {
                Expr::StringLiteral(s) if DISTRIBUTED_LAUNCHERS.contains(&s.value.to_str()) => {
                    Some(s.value.to_str())
                }
                _ => None,
            })
            .collect();
        if !distributed.is_empty() {
            self.facts.rank_launch.push((
                range(call),
                format!("`--launcher` offers `{}`", distributed.join("`, `")),
            ));
        }
    }

    /// `os.environ["LOCAL_RANK"] = …`: the program hands its rank to the code that picks its
    /// card.
    pub(super) fn rank_env_write(&mut self, stmt: &'s Stmt) {
        let Stmt::Assign(assign) = stmt else { return };
        for target in &assign.targets {
            if let Expr::Subscript(sub) = target {
                if self.bindings.is(&sub.value, "os.environ") {
                    if let Expr::StringLiteral(k) = sub.slice.as_ref() {
                        self.rank_variable(k.value.to_str(), range(stmt));
                    }
                }
            }
        }
    }

    fn rank_variable(&mut self, var: &str, at: Range<usize>) {
        if RANK_VARIABLES.contains(&var) {
            self.facts.rank_launch.push((
                at,
                format!("writes `{var}`, from which the code it runs picks its card"),
            ));
        }
    }

    /// `rank % torch.cuda.device_count()` reached a device sink: each rank takes a card, the
    /// same one for all under a one-card mask.
    pub(super) fn rank_modulo_card(&mut self, at: Range<usize>, what: &str) {
        self.facts.rank_cards.push((
            at,
            format!("{what} takes its card from the process rank modulo the visible count"),
        ));
    }
}
