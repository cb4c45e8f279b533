//! The effective env of a Rust file: what the managed variables hold when the chosen `fn main`
//! has run its body. Top-level statements of main replace a value; changes under a branch, a
//! loop, a closure or a macro in main may run (joined); changes anywhere else (other functions,
//! closures, static initialisers) may run at any time, so they are joined at the end.

use std::collections::BTreeSet;

use super::facts::{EnvOp, Facts, Place};
use crate::model::policy::{EnvVar, Policy};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// Whatever the process was started with.
    Inherited,
    Unset,
    Lit(String),
    /// This value unless the process was started with one (`if var_os(K).is_none()`).
    DefaultTo(String),
    Computed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env([BTreeSet<State>; 3]);

fn index(var: EnvVar) -> usize {
    match var {
        EnvVar::VisibleDevices => 0,
        EnvVar::DeviceOrder => 1,
        EnvVar::AllocConf => 2,
    }
}

impl Env {
    pub fn get(&self, var: EnvVar) -> &BTreeSet<State> {
        &self.0[index(var)]
    }

    /// The value the variable surely holds, when it holds a known one.
    pub fn value(&self, var: EnvVar) -> Option<&str> {
        match self.get(var).iter().collect::<Vec<_>>().as_slice() {
            [State::Lit(v) | State::DefaultTo(v)] => Some(v),
            _ => None,
        }
    }

    /// The variables whose end value is not the policy's, each with what it may hold.
    pub fn problems(&self, policy: &Policy) -> Vec<(EnvVar, String)> {
        EnvVar::ALL
            .into_iter()
            .filter_map(|var| {
                let want = policy.env_value(var)?;
                // Under `respect_scheduler` the policy's value is a default; otherwise it is
                // forced, and a default would keep a launcher's mask.
                let wanted = if policy.respect_scheduler {
                    State::DefaultTo(want.to_string())
                } else {
                    State::Lit(want.to_string())
                };
                let states = self.get(var);
                let ok = states.len() == 1 && states.contains(&wanted);
                (!ok).then(|| (var, describe(states)))
            })
            .collect()
    }
}

fn describe(states: &BTreeSet<State>) -> String {
    let each: Vec<String> = states
        .iter()
        .map(|s| match s {
            State::Inherited => "inherited from the launcher".to_string(),
            State::Unset => "unset".to_string(),
            State::Lit(v) => format!("\"{v}\""),
            State::DefaultTo(v) => format!("\"{v}\" unless the launcher set it"),
            State::Computed => "a computed value".to_string(),
        })
        .collect();
    each.join(" or ")
}

/// The env at the end of the chosen main (for a file without one: after any of its changes).
pub fn at_end(facts: &Facts) -> Env {
    let mut env = Env(std::array::from_fn(|_| BTreeSet::from([State::Inherited])));
    let mut effects: Vec<_> = facts.env.iter().collect();
    effects.sort_by_key(|e| (e.place == Place::Elsewhere, e.at.start));
    for e in effects {
        let slot = &mut env.0[index(e.var)];
        if let EnvOp::SetDefault(v) = &e.op {
            // Only what the process was started with is replaced.
            let default = v.clone().map_or(State::Computed, State::DefaultTo);
            if slot.remove(&State::Inherited) {
                slot.insert(default);
            }
            continue;
        }
        let state = match &e.op {
            EnvOp::Set(Some(v)) => State::Lit(v.clone()),
            EnvOp::Set(None) | EnvOp::SetDefault(_) => State::Computed,
            EnvOp::Remove => State::Unset,
        };
        if e.place == Place::MainTop {
            slot.clear();
        }
        slot.insert(state);
    }
    env
}
