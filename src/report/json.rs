//! `--format json`: one document on stdout, with field names scripts can rely on.

use serde::Serialize;

use crate::model::outcome::FileOutcome;
use crate::model::policy::Policy;
use crate::model::summary::Summary;

#[derive(Serialize)]
struct Document<'a> {
    version: &'static str,
    command: &'a str,
    /// `--shard I/N` only: which part of the tree this document covers (`report --merge`).
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<&'a crate::base::shard::Shard>,
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
    let prefix = crate::model::outcome::repository_prefix(root);
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
        repository: crate::model::outcome::source_root(root)
            .display()
            .to_string(),
        policy,
        files,
        summary,
    };
    crate::base::escape::write_json(&mut *out, &doc)?;
    out.write_all(b"\n")
}

/// The same document, written as the run hands on its files (`scan`, `check` and `fix` without
/// `--shard`): the text before the files, each file, then the rest with the summary. Byte for
/// byte what [`write`] writes for the same outcomes.
pub struct Streamed<'a> {
    command: &'a str,
    root: &'a std::path::Path,
    policy: &'a Policy,
    prefix: String,
    files: usize,
}

/// Where the top-level `files` array sits in a document written with no files (keys of nested
/// objects are indented further, and no string holds a raw newline).
const NO_FILES: &str = "\n  \"files\": []";

impl<'a> Streamed<'a> {
    pub fn new(command: &'a str, root: &'a std::path::Path, policy: &'a Policy) -> Streamed<'a> {
        Streamed {
            command,
            root,
            policy,
            prefix: crate::model::outcome::repository_prefix(root),
            files: 0,
        }
    }

    /// The document with no files, split where they go.
    fn around(&self, summary: &Summary) -> (String, String) {
        let text = render(self.command, self.root, self.policy, &[], summary);
        match text.find(NO_FILES) {
            Some(at) => {
                let (head, tail) = text.split_at(at + NO_FILES.len() - 1);
                (head.to_string(), tail[1..].to_string())
            }
            None => (text, String::new()),
        }
    }

    /// The text before the first file.
    pub fn begin(&self) -> String {
        self.around(&Summary::default()).0
    }

    /// One file's object, with what comes before it.
    pub fn file(&mut self, outcome: &FileOutcome) -> String {
        let placed;
        let outcome = if self.prefix.is_empty() {
            outcome
        } else {
            placed = FileOutcome {
                path: format!("{}{}", self.prefix, outcome.path),
                ..outcome.clone()
            };
            &placed
        };
        let text = crate::base::escape::json(outcome)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        let before = if self.files == 0 { "\n    " } else { ",\n    " };
        self.files += 1;
        format!("{before}{}", text.replace('\n', "\n    "))
    }

    /// The text after the last file: the end of the array, the summary.
    pub fn end(&self, summary: &Summary) -> String {
        let close = if self.files == 0 { "]" } else { "\n  ]" };
        format!("{close}{}", self.around(summary).1)
    }
}
