//! Merging `--output-format json`: the files of every shard in the walk's order, each object
//! byte for byte as its shard wrote it, and the summary counted again over all of them.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{path_order, twice, Input, Verdict};
use crate::model::outcome::FileOutcome;
use crate::model::policy::Policy;
use crate::model::summary::{GpuSummary, Summary};

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
    let first = &docs[0];
    let policy: Policy = serde_json::from_str(first.policy.get()).map_err(|e| {
        anyhow::anyhow!(
            "{}: its policy is not one gpu-homogenize writes: {e}",
            inputs[0].name
        )
    })?;
    let outcomes: Vec<FileOutcome> = files.iter().map(|f| f.3.clone()).collect();
    let parts = docs.iter().filter_map(|d| d.summary.gpu.clone()).collect();
    let gpu = merge_gpu(parts, &outcomes, &policy);
    let interrupted = docs.iter().any(|d| d.summary.interrupted);
    let summary = Summary::of(&outcomes, gpu, interrupted);
    let out = Out {
        version: &first.version,
        command: &first.command,
        root: &first.root,
        repository: &first.repository,
        policy: first.policy,
        files: files.iter().map(|f| f.2).collect(),
        summary: &summary,
    };
    let mut text = crate::base::escape::json(&out)?;
    text.push('\n');
    let verdict = Verdict::Run {
        command: first.command.clone(),
        summary: Box::new(summary),
    };
    Ok((text, verdict))
}

/// The GPU stage over every file, as one run's ledger counts it (the drift summed in the walk's
/// order, so the float is the unsharded run's); shards that all skipped it: their skips summed.
fn merge_gpu(
    parts: Vec<GpuSummary>,
    outcomes: &[FileOutcome],
    policy: &Policy,
) -> Option<GpuSummary> {
    if let Some(ran) = parts.iter().find(|p| p.state == "ran") {
        return Some(GpuSummary::ran(outcomes, ran.device.clone(), policy));
    }
    parts.into_iter().reduce(|mut all, part| {
        all.skipped += part.skipped;
        all
    })
}
