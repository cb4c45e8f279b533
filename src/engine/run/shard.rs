//! The `--shard I/N` a run writes into its JSON and SARIF (`crate::base::shard`), from its settings.

use super::RunInput;
use super::Setup;
use crate::base::shard::{Drift, Shard};
use crate::engine::process::Engine;

/// The shard this run covers, when it covers one, with what its summary says beyond counts.
pub fn of(
    setup: &Setup,
    engine: &Engine,
    input: &RunInput,
    summary: &crate::model::summary::Summary,
) -> Option<Shard> {
    let (index, count) = input.shard?;
    // Not the binary's identity (the cache's key has it): each CI runner has its own build.
    // SARIF names only the repository: two trees of one repository differ by their root here.
    let text = format!(
        "{} {}\n{}",
        env!("CARGO_PKG_VERSION"),
        setup.root.display(),
        super::verdict_settings(setup, engine, input)
    );
    Some(Shard {
        index,
        count,
        settings: format!("{:016x}", crate::fs::source::content_key(text.as_bytes())),
        interrupted: summary.interrupted,
        drift: summary
            .gpu
            .as_ref()
            .filter(|g| g.state == "ran")
            .map(|g| Drift {
                mib: g.drift_mib,
                fail_above_mib: g.leak_fail_mib,
            }),
    })
}
