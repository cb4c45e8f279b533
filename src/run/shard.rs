//! The `--shard I/N` a run writes into its JSON and SARIF (`crate::shard`), from its settings.

use super::Setup;
use crate::cli::InputArgs;
use crate::process::Engine;
use crate::shard::{Drift, Shard};

/// The shard this run covers, when it covers one, with what its summary says beyond counts.
pub fn of(
    setup: &Setup,
    engine: &Engine,
    input: &InputArgs,
    summary: &crate::summary::Summary,
) -> Option<Shard> {
    let (index, count) = input.shard?;
    let baseline = input.lint.baseline.as_ref().map(|path| {
        std::fs::read(path)
            .map(|b| crate::source::content_key(&b))
            .ok()
    });
    // Not the binary's identity (the cache's key has it): each CI runner has its own build.
    let text = format!(
        "{} {}\n{:?} touchpoints={} unsafe={} max={} baseline={baseline:?}\n{}\n{}\n{}",
        env!("CARGO_PKG_VERSION"),
        // SARIF names only the repository: two trees of one repository differ here.
        setup.root.display(),
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
