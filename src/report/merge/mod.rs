//! `report --merge`: the JSON or SARIF documents the jobs of a CI matrix wrote with
//! `--shard I/N`, as the one document an unsharded run prints: the same files and results in the
//! same order, one run, the summary counted over all of them. It refuses (naming the file) what
//! would merge into a lie: a torn document, mixed formats or versions, shards of another tree,
//! split or settings, and a shard missing or given twice.

mod json;
mod sarif;

use serde_json::Value;

use crate::base::shard::Shard;
use crate::model::summary::Summary;

/// One shard's document, as read: the name it is known by (its path) and its text.
pub struct Input {
    pub name: String,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Sarif,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Sarif => "SARIF",
        }
    }
}

/// What the merged run found, for the exit status (the command layer decides it).
pub enum Verdict {
    /// JSON: the command the shards ran and the summary over every file.
    Run {
        command: String,
        summary: Box<Summary>,
    },
    /// SARIF: whether a file could not be processed, and whether a result fails the run.
    Results { errors: bool, findings: bool },
}

pub struct Merged {
    pub format: Format,
    pub text: String,
    pub verdict: Verdict,
}

/// What every shard's document must agree on, read from the document itself.
struct Header<'a> {
    name: &'a str,
    format: Format,
    version: String,
    /// `scan`, `check` (JSON only).
    command: Option<String>,
    /// The tree (JSON: the root and the repository; SARIF: the repository's URI).
    place: String,
    /// JSON only: the policy as written.
    policy: Option<String>,
    shard: Shard,
}

pub fn merge(inputs: &[Input]) -> anyhow::Result<Merged> {
    if inputs.is_empty() {
        anyhow::bail!("--merge needs the documents of the shards");
    }
    let docs: Vec<Value> = inputs.iter().map(parse).collect::<Result<_, _>>()?;
    let headers: Vec<Header> = inputs
        .iter()
        .zip(&docs)
        .map(|(input, doc)| header(&input.name, doc))
        .collect::<Result<_, _>>()?;
    for h in &headers[1..] {
        agree(&headers[0], h)?;
    }
    let order = complete(&headers)?;
    let ordered: Vec<&Input> = order.iter().map(|&i| &inputs[i]).collect();
    match headers[0].format {
        Format::Json => json::merge(&ordered),
        Format::Sarif => {
            let shards: Vec<&Shard> = order.iter().map(|&i| &headers[i].shard).collect();
            sarif::merge(&ordered, order.iter().map(|&i| &docs[i]).collect(), &shards)
        }
    }
    .map(|(text, verdict)| Merged {
        format: headers[0].format,
        text,
        verdict,
    })
}

fn parse(input: &Input) -> anyhow::Result<Value> {
    serde_json::from_str(&input.text).map_err(|e| {
        anyhow::anyhow!(
            "{}: not a whole JSON document ({e}); was the shard's output cut short?",
            input.name
        )
    })
}

fn header<'a>(name: &'a str, doc: &Value) -> anyhow::Result<Header<'a>> {
    let not_ours = || {
        anyhow::anyhow!("{name}: not the JSON or SARIF output of `gpu-homogenize scan` or `check`")
    };
    // `--format gitlab` is not merged: it says no shard, and it needs no merge (each shard job
    // uploads its own `codequality` report and GitLab shows them together; the shards split the
    // files, and every fingerprint is of one file).
    if doc.is_array() {
        anyhow::bail!(
            "{name}: a GitLab Code Quality report, which is not merged: upload each shard's as its job's `codequality` report, or merge the shards' JSON or SARIF"
        );
    }
    let text = |v: &Value| v.as_str().map(str::to_string);
    let (format, version, command, place, policy, shard) = if doc.get("runs").is_some() {
        let runs = doc["runs"].as_array().ok_or_else(not_ours)?;
        let [run] = runs.as_slice() else {
            anyhow::bail!("{name}: holds {} SARIF runs; a shard's has one", runs.len());
        };
        let driver = &run["tool"]["driver"];
        if driver["name"] != "gpu-homogenize" {
            return Err(not_ours());
        }
        let base = &run["originalUriBaseIds"];
        let place = match base["%SRCROOT%"]["uri"].as_str() {
            Some(uri) if base.as_object().is_some_and(|b| b.len() == 1) => uri.to_string(),
            _ => base.to_string(),
        };
        (
            Format::Sarif,
            text(&driver["version"]),
            None,
            place,
            None,
            &run["properties"]["shard"],
        )
    } else if doc.get("files").is_some() && doc.get("summary").is_some() {
        // As text shows a path (on Windows `C:\work\svc`, not JSON's doubled separators).
        let shown = |v: &Value| match v.as_str() {
            Some(path) => crate::model::outcome::display_path(std::path::Path::new(path)),
            None => v.to_string(),
        };
        let place = format!(
            "{} (repository {})",
            shown(&doc["root"]),
            shown(&doc["repository"])
        );
        let policy = Some(doc["policy"].to_string());
        (
            Format::Json,
            text(&doc["version"]),
            text(&doc["command"]),
            place,
            policy,
            &doc["shard"],
        )
    } else {
        return Err(not_ours());
    };
    let version = version.ok_or_else(not_ours)?;
    if let Some(other) = command
        .as_deref()
        .filter(|c| !matches!(*c, "scan" | "check"))
    {
        anyhow::bail!("{name}: the output of `{other}`; only `scan` and `check` shards are merged");
    }
    let ours = env!("CARGO_PKG_VERSION");
    if version != ours {
        anyhow::bail!(
            "{name}: written by gpu-homogenize {version}, and this is {ours}: merge with the version the shards ran"
        );
    }
    let shard: Shard = serde_json::from_value(shard.clone()).map_err(|_| {
        anyhow::anyhow!(
            "{name}: says no shard: it is not the output of a `scan --shard I/N` or `check --shard I/N` job"
        )
    })?;
    if shard.index == 0 || shard.index > shard.count {
        anyhow::bail!(
            "{name}: says shard {}/{}, which no split has",
            shard.index,
            shard.count
        );
    }
    Ok(Header {
        name,
        format,
        version,
        command,
        place,
        policy,
        shard,
    })
}

/// `b` may be merged with `a`: the same format, version, command, tree, policy, split and
/// settings. The message names `b` first: that is the file to look at.
fn agree(a: &Header, b: &Header) -> anyhow::Result<()> {
    let (an, bn) = (a.name, b.name);
    if a.format != b.format {
        anyhow::bail!(
            "{bn}: a {} document, but {an} is {}: merge the shards of one format",
            b.format.name(),
            a.format.name()
        );
    }
    if a.version != b.version {
        anyhow::bail!(
            "{bn}: written by version {}, but {an} by {}",
            b.version,
            a.version
        );
    }
    if a.command != b.command {
        anyhow::bail!(
            "{bn}: the output of `{}`, but {an} of `{}`: merge the shards of one command",
            b.command.as_deref().unwrap_or("?"),
            a.command.as_deref().unwrap_or("?")
        );
    }
    if a.place != b.place {
        anyhow::bail!(
            "{bn}: ran on the tree at {}, but {an} on {}: shards of one tree only",
            b.place,
            a.place
        );
    }
    if a.policy != b.policy {
        anyhow::bail!("{bn}: its policy differs from {an}'s: shards of one config only");
    }
    if a.shard.count != b.shard.count {
        anyhow::bail!(
            "{bn}: shard {}/{}, but {an} is {}/{}: shards of one split only",
            b.shard.index,
            b.shard.count,
            a.shard.index,
            a.shard.count
        );
    }
    if a.shard.settings != b.shard.settings {
        anyhow::bail!(
            "{bn}: judged with other settings than {an} (tree root, config, rule selection, --unsafe-fixes, --baseline or --max-file-size differ): run every shard on the same tree with the same config and flags"
        );
    }
    Ok(())
}

/// Every shard of the split once: the inputs' positions in shard order.
fn complete(headers: &[Header]) -> anyhow::Result<Vec<usize>> {
    let count = headers[0].shard.count;
    let mut by_index: Vec<Option<usize>> = vec![None; count as usize];
    for (at, h) in headers.iter().enumerate() {
        let slot = &mut by_index[h.shard.index as usize - 1];
        if let Some(before) = *slot {
            anyhow::bail!(
                "{} and {} are both shard {}/{count}: give each shard once",
                headers[before].name,
                h.name,
                h.shard.index
            );
        }
        *slot = Some(at);
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| by_index[*i as usize - 1].is_none())
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "shard{} {} missing: give the output of every shard (the merge of a part of the tree would pass files never checked)",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ") + if missing.len() == 1 { " is" } else { " are" }
        );
    }
    Ok(by_index.into_iter().flatten().collect())
}

/// The order an unsharded run lists files in: the walk's, by path component.
fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    std::path::Path::new(a).cmp(std::path::Path::new(b))
}

/// The same file in two shards: the documents are not shards of one split.
fn twice(path: &str, a: &str, b: &str) -> anyhow::Error {
    anyhow::anyhow!("{path} is in both {a} and {b}: they are not shards of one split")
}
