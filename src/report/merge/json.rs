//! Merging `--output-format json`: the files of every shard in the walk's order, each object
//! byte for byte as its shard wrote it, and the summary counted again over all of them.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{path_order, twice, Input, Verdict};
use crate::outcome::FileOutcome;
use crate::summary::{GpuSummary, Summary};

#[derive(Deserialize)]
struct Doc<'a> {
    version: String,
    command: String,
    root: String,
    repository: String,
    #[serde(borrow)]
    policy: &'a RawValue,
    #[serde(borrow)]
    files: Vec<&'a RawValue>,
    summary: RunState,
}

/// What the summary holds beyond counts over the files.
#[derive(Deserialize)]
struct RunState {
    #[serde(default)]
    gpu: Option<GpuSummary>,
    #[serde(default)]
    interrupted: bool,
}

/// `report/json.rs`'s document, less the shard (the merge is the whole tree).
#[derive(Serialize)]
struct Out<'a> {
    version: &'a str,
    command: &'a str,
    root: &'a str,
    repository: &'a str,
    policy: &'a RawValue,
    files: Vec<&'a RawValue>,
    summary: &'a Summary,
}

pub(super) fn merge(inputs: &[&Input]) -> anyhow::Result<(String, Verdict)> {
    let docs: Vec<Doc> = inputs
        .iter()
        .map(|input| {
            serde_json::from_str(&input.text).map_err(|e| {
                anyhow::anyhow!("{}: not the JSON output of scan or check: {e}", input.name)
            })
        })
        .collect::<Result<_, _>>()?;
    // (path, shard, the object as written, the outcome it says)
    let mut files: Vec<(String, usize, &RawValue, FileOutcome)> = Vec::new();
    for (at, doc) in docs.iter().enumerate() {
        for raw in &doc.files {
            let outcome: FileOutcome = serde_json::from_str(raw.get()).map_err(|e| {
                anyhow::anyhow!(
                    "{}: a file entry is not one scan writes: {e}",
                    inputs[at].name
                )
            })?;
            files.push((outcome.path.clone(), at, raw, outcome));
        }
    }
    files.sort_by(|a, b| path_order(&a.0, &b.0));
    if let Some(pair) = files.windows(2).find(|w| w[0].0 == w[1].0) {
        let (a, b) = (&inputs[pair[0].1].name, &inputs[pair[1].1].name);
        return Err(twice(&pair[0].0, a, b));
    }
    let gpu = merge_gpu(docs.iter().filter_map(|d| d.summary.gpu.clone()));
    let interrupted = docs.iter().any(|d| d.summary.interrupted);
    let outcomes: Vec<FileOutcome> = files.iter().map(|f| f.3.clone()).collect();
    let summary = Summary::of(&outcomes, gpu, interrupted);
    let first = &docs[0];
    let out = Out {
        version: &first.version,
        command: &first.command,
        root: &first.root,
        repository: &first.repository,
        policy: first.policy,
        files: files.iter().map(|f| f.2).collect(),
        summary: &summary,
    };
    let mut text = serde_json::to_string_pretty(&out)?;
    text.push('\n');
    let verdict = Verdict::Run {
        command: first.command.clone(),
        summary: Box::new(summary),
    };
    Ok((text, verdict))
}

/// The GPU stage over every shard: counts and drift summed, failed when the summed drift passes
/// the limit (as one run's ledger would).
fn merge_gpu(parts: impl Iterator<Item = GpuSummary>) -> Option<GpuSummary> {
    parts.reduce(|mut all, part| {
        if all.state != "ran" && part.state == "ran" {
            all.state = part.state;
            all.reason = part.reason;
        }
        all.checks += part.checks;
        all.passed += part.passed;
        all.failed += part.failed;
        all.leaks += part.leaks;
        all.errors += part.errors;
        all.skipped += part.skipped;
        all.drift_mib += part.drift_mib;
        all.drift_failed |= part.drift_failed || all.drift_mib > all.leak_fail_mib;
        all.device = all.device.or(part.device);
        all
    })
}
