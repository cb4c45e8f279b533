//! SARIF 2.1.0 for `--format sarif`, so code hosts can show findings inline: artifact URIs
//! are percent-encoded and relative to the repository under the `%SRCROOT%` base, every
//! rule has a full description and a help URI, and `check`'s GPU verdicts are results too.

use std::path::Path;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};

use crate::base::escape::printable;
use crate::model::finding::{Rule, Severity};
use crate::model::outcome::{CheckStatus, FileOutcome};

/// Bytes kept as they are in a URI path: RFC 3986's unreserved characters and `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The base every artifact URI is relative to.
pub const SRCROOT: &str = "%SRCROOT%";

/// The id of the SARIF-only rule that carries GPU check verdicts (GitLab's issues use it too).
pub(crate) const GPU_CHECK: &str = "GH900";

/// The id of the SARIF-only rule of a file the tool could not process (a syntax error, an
/// encoding it refuses, an unreadable file): a result, so code hosts show it inline, on top of
/// the tool-execution notification. GitLab's issues use it too.
pub(crate) const FILE_ERROR: &str = "GH901";

/// Where a rule's documentation lives: the package homepage when it has one, else a URN.
pub fn help_uri(code: &str) -> String {
    match option_env!("CARGO_PKG_HOMEPAGE").filter(|h| !h.is_empty()) {
        Some(home) => format!("{home}#{}", code.to_ascii_lowercase()),
        None => format!("urn:gpu-homogenize:rule:{code}"),
    }
}

pub use crate::model::outcome::source_root;

/// The `file:` URI of a directory, ending in `/`: `file:///home/me/tree/` on unix;
/// `file:///C:/Dev/tree/` on Windows (RFC 8089: the drive letter and its colon kept, `\`
/// written `/`), as SARIF viewers resolve it.
pub fn file_uri_of_dir(dir: &std::path::Path) -> String {
    let text = dir.to_string_lossy();
    #[cfg(windows)]
    let text = {
        let slashed = text.replace('\\', "/");
        // `\\?\C:\…` names the same directory as `C:\…`.
        let slashed = slashed.strip_prefix("//?/").unwrap_or(&slashed).to_string();
        match slashed.split_once(':') {
            Some((drive, rest)) if drive.len() == 1 => {
                format!("/{drive}:{}", relative_uri(rest))
            }
            _ => relative_uri(&slashed),
        }
    };
    #[cfg(not(windows))]
    let text = relative_uri(&text);
    format!("file://{}/", text.trim_end_matches('/'))
}

/// A relative path as a percent-encoded relative URI.
pub fn relative_uri(rel: &str) -> String {
    utf8_percent_encode(rel, PATH).to_string()
}

/// What `gpu-homogenize rule GH900|GH901` says of the ids only SARIF results and GitLab Code
/// Quality issues carry.
pub fn result_only(code: &str) -> Option<String> {
    let code = code.to_ascii_uppercase();
    let text = match code.as_str() {
        GPU_CHECK => "GH900 (gpu-check): a SARIF result and a GitLab Code Quality issue only, the verdict of a file's GPU check (`check`, `fix`): device 0 must be the target card, the forbidden cards invisible, memory back to its baseline. Not a rule of the scan: it cannot be selected or suppressed.\n",
        FILE_ERROR => "GH901 (file-not-processed): a SARIF result and a GitLab Code Quality issue only, for a file the tool could not read, decode or parse (a syntax error, an encoding it refuses, an unreadable or oversized file); nothing about it was checked and the run exits 2. Fix what the message names, then run again. Not a rule of the scan: it cannot be selected or suppressed.\n",
        _ => return None,
    };
    Some(text.to_string())
}

fn rule_descriptor(rule: &Rule) -> Value {
    let level = level(rule.severity);
    json!({
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": crate::model::rules::explain(rule)},
        "help": {"text": crate::model::rules::explain(rule)},
        "helpUri": help_uri(rule.code),
        "defaultConfiguration": {"level": level},
    })
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Violation => "error",
        Severity::Review => "warning",
        Severity::Info => "note",
    }
}

fn location(uri: &str, line: usize, column: usize) -> Value {
    json!([{"physicalLocation": {
        "artifactLocation": {"uri": uri, "uriBaseId": SRCROOT},
        "region": {"startLine": line.max(1), "startColumn": column.max(1)}
    }}])
}

pub fn render(
    root: &Path,
    files: &[FileOutcome],
    rules: &[&Rule],
    shard: Option<&crate::base::shard::Shard>,
) -> String {
    let src = source_root(root);
    let prefix = crate::model::outcome::repository_prefix(root);
    let mut descriptors: Vec<Value> = rules.iter().map(|r| rule_descriptor(r)).collect();
    descriptors.push(json!({
        "id": GPU_CHECK,
        "name": "gpu-check",
        "shortDescription": {"text": "the file's GPU check: device 0 must be the target card, the forbidden cards invisible, memory back to its baseline"},
        "fullDescription": {"text": "gpu-homogenize check runs each file's effective environment in a child process that initialises CUDA and reports the card it lands on; a failed check means the file, as written, would not run on the intended card (or leaked device memory)."},
        "help": {"text": "Run `gpu-homogenize check FILE` to see the card the file lands on; `gpu-homogenize doctor` shows how the driver orders the cards."},
        "helpUri": help_uri(GPU_CHECK),
        "defaultConfiguration": {"level": "error"},
    }));
    descriptors.push(json!({
        "id": FILE_ERROR,
        "name": "file-not-processed",
        "shortDescription": {"text": "a file the tool could not read, decode or parse: it was not checked"},
        "fullDescription": {"text": "gpu-homogenize could not process this file (a syntax error, an encoding it cannot decode or write back, an unreadable or oversized file), so nothing about it was checked and the run exits 2; the message says why and where."},
        "help": {"text": "Fix what the message names (the syntax error at its line and column, the file's encoding, its permissions or size), then run gpu-homogenize again."},
        "helpUri": help_uri(FILE_ERROR),
        "defaultConfiguration": {"level": "error"},
    }));
    let mut results = Vec::new();
    // Files the tool could not process: tool execution notifications, and an unsuccessful run.
    let mut notifications = Vec::new();
    for file in files {
        let uri = relative_uri(&format!("{prefix}{}", file.path));
        if let Some(error) = &file.error {
            // Messages are shown to a person by the code host: printable, as in the text output.
            let text = format!("{prefix}{}: {}", file.path, printable(error));
            notifications.push(json!({
                "level": "error",
                "message": {"text": text},
                "locations": location(&uri, 1, 1),
            }));
            let (line, column) = crate::model::outcome::error_position(error);
            results.push(json!({
                "ruleId": FILE_ERROR,
                "level": "error",
                "message": {"text": text},
                "locations": location(&uri, line, column),
            }));
        }
        for f in &file.findings {
            let level = match f.severity.as_str() {
                "violation" => "error",
                "review" => "warning",
                _ => "note",
            };
            results.push(json!({
                "ruleId": f.rule,
                "level": level,
                "message": {"text": with_help(&f.message, f.help.as_deref())},
                "locations": location(&uri, f.line, f.column),
            }));
        }
        if let Some(result) = file.gpu_check.as_ref().and_then(|g| gpu_result(g, &uri)) {
            results.push(result);
        }
    }
    let base = file_uri_of_dir(src);
    let mut doc = json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {
                "name": "gpu-homogenize",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": help_uri("readme"),
                "rules": descriptors
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": base}},
            "columnKind": "unicodeCodePoints",
            "invocations": [{
                "executionSuccessful": notifications.is_empty(),
                "toolExecutionNotifications": notifications
            }],
            "results": results
        }]
    });
    // `--shard I/N` only, in the run's property bag: which part of the tree (`report --merge`).
    if let (Some(shard), Some(run)) = (shard, doc["runs"][0].as_object_mut()) {
        run.insert("properties".into(), json!({ "shard": shard }));
    }
    let mut out = crate::base::escape::json(&doc).unwrap_or_default();
    out.push('\n');
    out
}

fn gpu_result(check: &crate::model::outcome::GpuCheck, uri: &str) -> Option<Value> {
    let status = check.status?;
    let device = printable(check.device_name.as_deref().unwrap_or("no device"));
    let message = printable(check.message.as_deref().unwrap_or(""));
    let (kind, level, text) = match status {
        CheckStatus::Skipped => return None,
        CheckStatus::Passed => ("pass", "none", format!("GPU check passed on {device}")),
        CheckStatus::Failed => (
            "fail",
            "error",
            format!("GPU check failed on {device}: {message}"),
        ),
        CheckStatus::Leak => (
            "fail",
            "error",
            format!("GPU check leaked memory on {device}: {message}"),
        ),
        CheckStatus::Error => (
            "fail",
            "error",
            format!("GPU check could not run: {message}"),
        ),
    };
    Some(json!({
        "ruleId": GPU_CHECK,
        "kind": kind,
        "level": level,
        "message": {"text": text.trim_end_matches(": ")},
        "locations": location(uri, 1, 1),
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_become_percent_encoded_relative_uris() {
        assert_eq!(
            super::relative_uri("docs de café/a b#1.py"),
            "docs%20de%20caf%C3%A9/a%20b%231.py"
        );
    }
}

#[cfg(test)]
mod uri_tests {
    use super::file_uri_of_dir;
    use std::path::Path;

    #[cfg(not(windows))]
    #[test]
    fn a_directory_is_a_file_uri() {
        assert_eq!(
            file_uri_of_dir(Path::new("/tmp/a b/")),
            "file:///tmp/a%20b/"
        );
        assert_eq!(file_uri_of_dir(Path::new("/")), "file:///");
    }

    /// Windows: found by the Linux/Wine comparison (`file://Z%3A%5Ctmp…` before).
    #[cfg(windows)]
    #[test]
    fn a_windows_directory_is_a_file_uri_with_its_drive() {
        assert_eq!(
            file_uri_of_dir(Path::new(r"C:\Dev\My Tree")),
            "file:///C:/Dev/My%20Tree/"
        );
        assert_eq!(
            file_uri_of_dir(Path::new(r"\\?\C:\Dev\x\")),
            "file:///C:/Dev/x/"
        );
    }
}

/// A finding's message and, on a line of its own, its help: SARIF's result has one message.
fn with_help(message: &str, help: Option<&str>) -> String {
    match help {
        Some(help) => format!("{}\nhelp: {}", printable(message), printable(help)),
        None => printable(message).into_owned(),
    }
}
