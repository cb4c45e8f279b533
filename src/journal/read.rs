//! Reading the journal back: every readable line counts, every unreadable one is a warning,
//! none is fatal (a report from most of the history beats no report).

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{FileLine, RunLine, SCHEMA};

/// The journal as far as it could be read, in the order it was written.
#[derive(Debug, Default)]
pub struct Journal {
    pub files: Vec<FileLine>,
    pub runs: Vec<RunLine>,
    /// One line each, naming the journal file and the line, for stderr and the report.
    pub warnings: Vec<String>,
}

impl Journal {
    /// The journal of the tree at `root`; a missing or unreadable one is empty, with a warning.
    pub fn read(root: &Path) -> Journal {
        let path = super::path(root);
        let rel = Path::new(super::JOURNAL_DIR).join(super::JOURNAL_FILE);
        match crate::fs::tree_file::read(root, &rel, crate::fs::tree_file::JOURNAL_LIMIT) {
            Ok(Some(bytes)) => Journal::parse(
                &String::from_utf8_lossy(&bytes),
                &crate::model::outcome::display_path(&path),
            ),
            Ok(None) => Journal {
                warnings: vec![format!(
                    "{}: no journal yet (no `fix` or `check` recorded here); the report shows the current scan only",
                    crate::model::outcome::display_path(&path)
                )],
                ..Journal::default()
            },
            Err(e) => Journal {
                warnings: vec![format!(
                    "cannot read the journal ({e}); the report shows the current scan only"
                )],
                ..Journal::default()
            },
        }
    }

    /// Add the journal of another host at `path` (read like any named input: no special file,
    /// bounded size); what cannot be read is a warning.
    pub fn add(&mut self, path: &Path) {
        let name = crate::model::outcome::display_path(path);
        match crate::fs::tree_file::read_named(path, crate::fs::tree_file::JOURNAL_LIMIT) {
            Ok(text) => {
                let other = Journal::parse(&text, &name);
                self.files.extend(other.files);
                self.runs.extend(other.runs);
                self.warnings.extend(other.warnings);
            }
            Err(e) => self
                .warnings
                .push(format!("{name}: cannot read this journal ({e}); left out")),
        }
    }

    /// Parse the text of a journal; `name` is what warnings call the file.
    pub fn parse(text: &str, name: &str) -> Journal {
        let mut journal = Journal::default();
        let mut foreign: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let torn = !text.is_empty() && !text.ends_with('\n');
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let last = i + 1 == lines.len();
            match journal.take(line) {
                Ok(Some(version)) => foreign.entry(version).or_default().push(i + 1),
                Ok(None) => {}
                Err(_) if last && torn => journal.warnings.push(format!(
                    "{name}:{}: incomplete last line (a run was cut off while writing it); ignored",
                    i + 1
                )),
                Err(why) => journal
                    .warnings
                    .push(format!("{name}:{}: unreadable line skipped: {why}", i + 1)),
            }
        }
        journal.note_open_runs(name);
        for (version, at) in foreign {
            journal.warnings.push(format!(
                "{name}: {} line{} (from line {}) written by gpu-homogenize {version}, this is {}; read as far as understood",
                at.len(),
                if at.len() == 1 { "" } else { "s" },
                at[0],
                env!("CARGO_PKG_VERSION")
            ));
        }
        journal
    }

    /// A run appends each file's line as the file is done and its totals last: file lines with
    /// no totals are a run cut short (killed, or the machine stopped), or one still running.
    fn note_open_runs(&mut self, name: &str) {
        let closed: std::collections::HashSet<&str> =
            self.runs.iter().map(|r| r.stamp.run_id.as_str()).collect();
        let mut open: Vec<(&FileLine, usize)> = Vec::new();
        for line in &self.files {
            if closed.contains(line.stamp.run_id.as_str()) {
                continue;
            }
            match open
                .iter_mut()
                .find(|(first, _)| first.stamp.run_id == line.stamp.run_id)
            {
                Some((_, count)) => *count += 1,
                None => open.push((line, 1)),
            }
        }
        let notes: Vec<String> = open
            .iter()
            .map(|(first, count)| {
                format!(
                    "{name}: the `{}` run begun at {} (run {}) journalled {count} file{} and no totals: it was cut short (killed, or the machine stopped) or is still running; its files count, the burn-down has no point for it",
                    first.stamp.command,
                    first.stamp.at,
                    first.stamp.run_id,
                    if *count == 1 { "" } else { "s" },
                )
            })
            .collect();
        self.warnings.extend(notes);
    }

    /// Keep one line; `Ok(Some(version))` when another tool version wrote it.
    fn take(&mut self, line: &str) -> Result<Option<String>, String> {
        let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
        let schema = value.get("schema").and_then(Value::as_u64);
        if schema != Some(u64::from(SCHEMA)) {
            return Err(format!(
                "journal schema {} is not schema {SCHEMA}, the one this version reads",
                schema.map_or("(none)".to_string(), |s| s.to_string())
            ));
        }
        let version = value
            .get("tool_version")
            .and_then(Value::as_str)
            .unwrap_or("(unknown)")
            .to_string();
        let foreign = version != env!("CARGO_PKG_VERSION");
        let kept = match value.get("type").and_then(Value::as_str) {
            Some("file") => decode(value).map(|line| self.files.push(line)),
            Some("run") => decode(value).map(|line| self.runs.push(line)),
            other => Err(format!("unknown line type {other:?}")),
        };
        match kept {
            Err(why) if foreign => Err(format!("{why} (written by gpu-homogenize {version})")),
            Err(why) => Err(why),
            Ok(()) => Ok(foreign.then_some(version)),
        }
    }
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str, run: &str, version: &str, path: &str) -> String {
        format!(
            r#"{{"type":"{kind}","schema":1,"run_id":"{run}","at":"2025-01-12T09:30:00.000Z","tool_version":"{version}","command":"fix","path":"{path}","status":"fixed"}}"#
        )
    }

    fn ours(kind: &str, run: &str, path: &str) -> String {
        line(kind, run, env!("CARGO_PKG_VERSION"), path)
    }

    #[test]
    fn a_corrupted_line_in_the_middle_is_skipped_and_named() {
        let text = format!(
            "{}\n{{\"type\": garbage\n{}\n",
            ours("file", "r1", "a.py"),
            ours("run", "r1", "")
        );
        let j = Journal::parse(&text, "J");
        assert_eq!((j.files.len(), j.runs.len()), (1, 1));
        assert_eq!(j.warnings.len(), 1);
        assert!(
            j.warnings[0].starts_with("J:2: unreadable line skipped: not JSON"),
            "{:?}",
            j.warnings
        );
    }

    #[test]
    fn a_torn_last_line_is_ignored_with_its_own_warning() {
        let text = format!(
            "{}\n{}",
            ours("file", "r1", "a.py"),
            &ours("run", "r1", "")[..40]
        );
        let j = Journal::parse(&text, "J");
        assert_eq!((j.files.len(), j.runs.len()), (1, 0));
        assert_eq!(
            j.warnings[0],
            "J:2: incomplete last line (a run was cut off while writing it); ignored"
        );
        assert!(
            j.warnings[1].contains("(run r1) journalled 1 file and no totals"),
            "{:?}",
            j.warnings
        );
        assert_eq!(j.warnings.len(), 2);
    }

    #[test]
    fn lines_of_another_version_are_read_with_one_warning() {
        let text = format!(
            "{}\n{}\n{}\n{}\n",
            line("file", "r0", "0.0.9", "a.py"),
            line("run", "r0", "0.0.9", ""),
            ours("file", "r1", "b.py"),
            ours("run", "r1", "")
        );
        let j = Journal::parse(&text, "J");
        assert_eq!((j.files.len(), j.runs.len()), (2, 2));
        assert_eq!(j.warnings.len(), 1);
        assert!(
            j.warnings[0].starts_with("J: 2 lines (from line 1) written by gpu-homogenize 0.0.9")
        );
    }

    #[test]
    fn lines_of_another_schema_or_shape_are_skipped() {
        let future = ours("file", "r2", "a.py").replace("\"schema\":1", "\"schema\":2");
        let unknown_status = ours("file", "r3", "b.py").replace("fixed", "quarantined");
        let j = Journal::parse(&format!("{future}\n{unknown_status}\n"), "J");
        assert!(j.files.is_empty());
        assert!(
            j.warnings[0].contains("journal schema 2 is not schema 1"),
            "{:?}",
            j.warnings
        );
        assert!(j.warnings[1].contains("quarantined"), "{:?}", j.warnings);
    }

    #[test]
    fn a_run_with_file_lines_and_no_totals_is_named_as_cut_short() {
        let text = format!(
            "{}\n{}\n{}\n{}\n",
            ours("file", "r1", "a.py"),
            ours("file", "r2", "b.py"),
            ours("run", "r1", ""),
            ours("file", "r2", "c.py"),
        );
        let j = Journal::parse(&text, "J");
        assert_eq!((j.files.len(), j.runs.len()), (3, 1), "every line counts");
        assert_eq!(
            j.warnings,
            ["J: the `fix` run begun at 2025-01-12T09:30:00.000Z (run r2) journalled 2 files and no totals: it was cut short (killed, or the machine stopped) or is still running; its files count, the burn-down has no point for it"]
        );
    }

    #[test]
    fn a_missing_journal_is_an_empty_one_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::read(dir.path());
        assert!(j.files.is_empty() && j.runs.is_empty());
        assert!(j.warnings[0].contains("no journal yet"), "{:?}", j.warnings);
    }
}
