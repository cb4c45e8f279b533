//! `--format json`: one document on stdout, with field names scripts can rely on.

use serde::Serialize;

use crate::outcome::FileOutcome;
use crate::policy::Policy;
use crate::summary::Summary;

#[derive(Serialize)]
struct Document<'a> {
    version: &'static str,
    command: &'a str,
    /// `--shard I/N` only: which part of the tree this document covers (`report --merge`).
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<&'a crate::shard::Shard>,
    root: String,
    /// The repository the paths are relative to (the nearest `.git` above the root).
    repository: String,
    policy: &'a Policy,
    files: &'a [FileOutcome],
    summary: &'a Summary,
}

pub fn render(
    command: &str,
    root: &std::path::Path,
    policy: &Policy,
    files: &[FileOutcome],
    summary: &Summary,
) -> String {
    let mut out = Vec::new();
    match write(&mut out, command, root, policy, files, summary) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(e) => format!("{{\"error\": \"{e}\"}}\n"),
    }
}

/// The document written to `out` as it is serialized (one run's outcomes make a document of
/// many megabytes: never held whole in memory).
pub fn write(
    out: &mut impl std::io::Write,
    command: &str,
    root: &std::path::Path,
    policy: &Policy,
    files: &[FileOutcome],
    summary: &Summary,
) -> std::io::Result<()> {
    // Paths relative to the repository, as every other format has them (a config in `svc/`:
    // `svc/app/m.py`).
    let prefix = crate::outcome::repository_prefix(root);
    let placed: Vec<FileOutcome>;
    let files = if prefix.is_empty() {
        files
    } else {
        placed = files
            .iter()
            .map(|f| FileOutcome {
                path: format!("{prefix}{}", f.path),
                ..f.clone()
            })
            .collect();
        &placed
    };
    let doc = Document {
        version: env!("CARGO_PKG_VERSION"),
        command,
        shard: summary.shard.as_ref(),
        root: root.display().to_string(),
        repository: crate::outcome::source_root(root).display().to_string(),
        policy,
        files,
        summary,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    out.write_all(b"\n")
}
