//! `--shard I/N`: which part of the tree a run covered, written into its JSON and SARIF so that
//! `report --merge` can check it was handed every part once, from runs that judged alike.

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (1-based), and a key of every setting a verdict depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    /// xxh3 of the version, the mode, the config (policy, rules, phases) and the flags that
    /// change verdicts: shards that differ here judged by different rules and cannot be merged.
    pub settings: String,
    /// The run was interrupted (SARIF has no summary to say it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The GPU checks' leaks summed, and the limit: one run's ledger fails on the drift of all
    /// its checks, which no shard's SARIF shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub mib: f64,
    pub fail_above_mib: f64,
}
