//! `--format github`: GitHub Actions workflow commands, one annotation per finding and per
//! failed GPU check, as `ruff --output-format github` prints them.

use std::fmt::Write;

use crate::outcome::{CheckStatus, FileOutcome};

/// `prefix`: the tree root's place in the repository (`svc/`), since GitHub resolves `file=`
/// against the repository.
pub fn render(prefix: &str, files: &[FileOutcome]) -> String {
    let mut out = String::new();
    for file in files {
        let path = format!("{prefix}{}", file.path);
        // A file that could not be processed fails the job: it says so where the job shows it.
        if let Some(error) = &file.error {
            let (line, col) = crate::outcome::error_position(error);
            let _ = writeln!(
                out,
                "::error title={},file={},line={line},col={col}::{}",
                property("gpu-homogenize (error)"),
                property(&path),
                data(&format!("{path}: {}", crate::outcome::printable(error)))
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
                    f.line,
                    f.column,
                    f.rule,
                    crate::outcome::printable(&f.message)
                ))
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
                let message = crate::outcome::printable(gpu.message.as_deref().unwrap_or(""));
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

/// The message of a workflow command: `%`, CR and LF escaped.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value: also `:` and `,`.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_as_github_reads_it() {
        assert_eq!(super::property("a,b:c%\n"), "a%2Cb%3Ac%25%0A");
    }
}
