//! `--format github`: GitHub Actions workflow commands, one annotation per finding and per
//! failed GPU check, as `ruff --output-format github` prints them.

use std::fmt::Write;

use crate::model::outcome::{CheckStatus, FileOutcome};

/// `prefix`: the tree root's place in the repository (`svc/`), since GitHub resolves `file=`
/// against the repository.
pub fn render(prefix: &str, files: &[FileOutcome]) -> String {
    let mut out = String::new();
    for file in files {
        let path = format!("{prefix}{}", file.path);
        // A file that could not be processed fails the job: it says so where the job shows it.
        if let Some(error) = &file.error {
            let (line, col) = crate::model::outcome::error_position(error);
            let _ = writeln!(
                out,
                "::error title={},file={},line={line},col={col}::{}",
                property("gpu-homogenize (error)"),
                property(&path),
                data(&format!("{path}: {error}"))
            );
        }
        for f in &file.findings {
            let level = match f.severity.as_str() {
                "violation" => "error",
                "review" => "warning",
                _ => "notice",
            };
            let _ = writeln!(
                out,
                "::{level} title={},file={},line={},col={}::{}",
                property(&format!("gpu-homogenize ({})", f.rule)),
                property(&path),
                f.line,
                f.column,
                data(&format!(
                    "{path}:{}:{}: {} {}",
                    f.line, f.column, f.rule, f.message
                )) + &f
                    .help
                    .as_deref()
                    .map(|help| format!("%0Ahelp: {}", data(help)))
                    .unwrap_or_default()
            );
        }
        if let Some(gpu) = &file.gpu_check {
            if let Some(status @ (CheckStatus::Failed | CheckStatus::Leak | CheckStatus::Error)) =
                gpu.status
            {
                let what = match status {
                    CheckStatus::Leak => "GPU check: leak",
                    CheckStatus::Error => "GPU check: error",
                    _ => "GPU check failed",
                };
                let message = gpu.message.as_deref().unwrap_or("");
                let _ = writeln!(
                    out,
                    "::error title={},file={},line=1::{}",
                    property(&format!("gpu-homogenize ({what})")),
                    property(&path),
                    data(&format!("{path}: {what}: {message}"))
                );
            }
        }
    }
    out
}

/// The message of a workflow command: the text made printable (no hidden character reaches the
/// annotation, CR and LF included), then `%` escaped; the runner unescapes `%25`, `%0D`, `%0A`
/// in a message and `%3A`, `%2C` too in a property (actions/runner ActionCommand.cs).
fn data(text: &str) -> String {
    crate::base::escape::printable(text).replace('%', "%25")
}

/// A property value: also `:` and `,`.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_as_github_reads_it() {
        assert_eq!(super::property("a,b:c%"), "a%2Cb%3Ac%25");
        assert_eq!(super::data("a\n\u{202E}%0A"), "a\\n\\342\\200\\256%250A");
    }
}
