//! Merging `--output-format sarif`: one run, its results and tool notifications grouped by file
//! and put in the walk's order, the run successful only if every shard's was.

use serde_json::Value;

use super::{path_order, twice, Input, Verdict};
use crate::base::shard::Shard;

/// The ids of the SARIF-only results: a GPU verdict, a file not processed.
const GPU_CHECK: &str = "GH900";
const FILE_ERROR: &str = "GH901";

pub(super) fn merge(
    inputs: &[&Input],
    docs: Vec<&Value>,
    shards: &[&Shard],
) -> anyhow::Result<(String, Verdict)> {
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for (at, doc) in docs.iter().enumerate() {
        let run = &doc["runs"][0];
        results.extend(by_file(&run["results"], at));
        notifications.extend(by_file(
            &run["invocations"][0]["toolExecutionNotifications"],
            at,
        ));
    }
    let results = in_walk_order(results, inputs)?;
    let notifications = in_walk_order(notifications, inputs)?;
    // The ledger of one run: the leaks of every shard's checks against the limit.
    let drift: Vec<_> = shards.iter().filter_map(|s| s.drift).collect();
    let drift_failed = drift
        .first()
        .is_some_and(|d| drift.iter().map(|d| d.mib).sum::<f64>() > d.fail_above_mib);
    let verdict = Verdict::Results {
        errors: !notifications.is_empty()
            || results.iter().any(|r| r["ruleId"] == FILE_ERROR)
            || shards.iter().any(|s| s.interrupted),
        findings: results.iter().any(fails) || drift_failed,
    };
    let mut merged = docs[0].clone();
    let run = &mut merged["runs"][0];
    if let Some(bag) = run.get_mut("properties").and_then(Value::as_object_mut) {
        bag.remove("shard");
        if bag.is_empty() {
            run.as_object_mut().map(|r| r.remove("properties"));
        }
    }
    let invocation = &mut run["invocations"][0];
    invocation["executionSuccessful"] = Value::Bool(notifications.is_empty());
    invocation["toolExecutionNotifications"] = Value::Array(notifications);
    run["results"] = Value::Array(results);
    let mut text = crate::base::escape::json(&merged)?;
    text.push('\n');
    Ok((text, verdict))
}

/// A result the run fails on (exit 1): a violation or a review finding, or a failed GPU check.
fn fails(result: &Value) -> bool {
    match result["ruleId"].as_str() {
        Some(GPU_CHECK) => result["kind"] == "fail",
        Some(FILE_ERROR) => false,
        _ => matches!(result["level"].as_str(), Some("error" | "warning")),
    }
}

/// One file's entries, in the order its shard wrote them.
struct Group {
    path: String,
    shard: usize,
    entries: Vec<Value>,
}

/// The entries of one array, grouped by the file they are about (a shard writes each file's
/// together).
fn by_file(array: &Value, shard: usize) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for entry in array.as_array().into_iter().flatten() {
        let uri = entry["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap_or_default();
        let path = percent_encoding::percent_decode_str(uri)
            .decode_utf8_lossy()
            .into_owned();
        match groups.last_mut() {
            Some(group) if group.path == path => group.entries.push(entry.clone()),
            _ => groups.push(Group {
                path,
                shard,
                entries: vec![entry.clone()],
            }),
        }
    }
    groups
}

fn in_walk_order(mut groups: Vec<Group>, inputs: &[&Input]) -> anyhow::Result<Vec<Value>> {
    groups.sort_by(|a, b| path_order(&a.path, &b.path));
    if let Some(pair) = groups.windows(2).find(|w| w[0].path == w[1].path) {
        let (a, b) = (&inputs[pair[0].shard].name, &inputs[pair[1].shard].name);
        return Err(twice(&pair[0].path, a, b));
    }
    Ok(groups.into_iter().flat_map(|g| g.entries).collect())
}
