//! `--shard I/N`: which part of the tree a run covered, written into its JSON and SARIF so that
//! `report --merge` can check it was handed every part once, from runs that judged alike.

use serde::{Deserialize, Serialize};

use super::Setup;
use crate::cli::InputArgs;
use crate::process::Engine;

/// Shard `index` of `count` (1-based), and a key of every setting a verdict depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    /// xxh3 of the mode, the config (policy, rules, phases) and the flags that change verdicts:
    /// shards that differ here judged by different rules and cannot be merged.
    pub settings: String,
}

impl Shard {
    pub fn of(setup: &Setup, engine: &Engine, input: &InputArgs) -> Option<Shard> {
        let (index, count) = input.shard?;
        let baseline = input.lint.baseline.as_ref().map(|path| {
            std::fs::read(path)
                .map(|b| crate::source::content_key(&b))
                .ok()
        });
        // Not the binary's identity (the cache's key has it): each CI runner has its own build.
        let text = format!(
            "{}\n{:?} touchpoints={} unsafe={} max={} baseline={baseline:?}\n{}\n{}\n{}",
            env!("CARGO_PKG_VERSION"),
            engine.mode,
            engine.touchpoints,
            engine.unsafe_fixes,
            engine.max_file_size,
            serde_json::to_string(&setup.config).unwrap_or_default(),
            engine.python.settings(),
            engine.rust.settings(),
        );
        Some(Shard {
            index,
            count,
            settings: format!("{:016x}", crate::source::content_key(text.as_bytes())),
        })
    }
}
