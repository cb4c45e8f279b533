//! A tree from a stranger (a pull request CI scans): its file names, source strings, phase names
//! and journal are printed by every format, and none of them may reach a terminal or a GitHub
//! Actions log as anything but text: no escape sequence, no bidi or zero-width character, no line
//! the runner reads as a workflow command (`::` first on a line, `##[` anywhere), and every name
//! still recognisable in its escaped form.

use crate::common::{gh, run, write, Run};
use std::path::Path;

const BAD: &str = "import os\nimport torch\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\nx = torch.device(\"cuda:1\")\n";

/// A device option the rules quote (GH014): a newline, a forged command, an ANSI colour, a bidi
/// override and a v1 command in its name.
const OPTION: &str = "import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument(\"--gpu\\n::error::forged\x1b[31m\u{202E} ##[error]v1\", type=int, default=0)\nargs = p.parse_args()\nx = torch.zeros(1).cuda()\n";

/// The hostile names, and how the text output shows each.
const NAMES: [(&str, &str); 5] = [
    (
        "a\u{202E}b\u{200B}.py",
        "\"a\\342\\200\\256b\\342\\200\\213.py\"",
    ),
    (
        "::error file=x::pwned.py",
        "\"\\072:error file=x::pwned.py\"",
    ),
    ("n\n::error::nl.py", "\"n\\n::error::nl.py\""),
    ("h##[error]v1.py", "\"h\\043#[error]v1.py\""),
    ("e\x1b[31mred.py", "\"e\\033[31mred.py\""),
];

/// The hostile names this platform's file system can hold: on Windows no name holds `:` or a
/// control character (`Invalid name.`), so there the names with bidi and zero-width characters
/// and the v1 command are made; the newline, the ANSI escape and the `::` command still come
/// from the tree through the option, the phase name, the config and the journal.
fn names() -> Vec<(&'static str, &'static str)> {
    NAMES
        .into_iter()
        .filter(|(name, _)| !cfg!(windows) || !name.chars().any(|c| c == ':' || c.is_control()))
        .collect()
}

/// The hostile name the assertions on one name quote, as text shows it: the forged `::`
/// command where it can be made, the v1 command on Windows.
fn headline() -> &'static str {
    let (_, shown) = names()
        .into_iter()
        .find(|(name, _)| name.starts_with("::"))
        .unwrap_or(NAMES[3]);
    shown
}

/// The annotations of the tree in `--format github` (20 with every name): three per file with
/// the bad source, two for the option.
fn annotations() -> usize {
    3 * (names().len() + 1) + 2
}

/// The phase name from the config, as text shows it.
const PHASE_SHOWN: &str = "Core\\n::error::forged \\033[31m\\342\\200\\256 \\043#[warning]x";

fn stranger() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    write(
        root,
        "gpu-homogenize.toml",
        "[policy]\nvisible_devices = \"1\"\n\n[[phase]]\nname = \"Core\\n::error::forged \\u001b[31m\\u202e ##[warning]x\"\nfiles = [\"opt.py\", \"src.py\"]\n",
    );
    write(root, "opt.py", OPTION);
    write(root, "src.py", BAD);
    for (name, _) in names() {
        std::fs::write(root.join(name), BAD).unwrap();
    }
    dir
}

/// Control characters, bidi controls, zero-width and other invisible characters (the test's own
/// list, not the tool's).
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{00AD}' | '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}')
        || matches!(c, '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

/// Whether the runner would read `line` as a workflow command (actions/runner ActionCommand.cs).
fn command_in(line: &str) -> bool {
    line.trim_start().starts_with("::") || line.contains("##[")
}

/// `out` (stdout or stderr of `what`) prints nothing a terminal or a log would act on; in
/// `--format github`, every command line is one of the tool's own annotations, whole.
fn assert_inert(what: &str, out: &str, annotations: bool) {
    for c in out.chars() {
        let hidden = invisible(c) && !matches!(c, '\n' | '\t');
        assert!(!hidden, "{what}: raw U+{:04X} in:\n{out}", c as u32);
    }
    for line in out.lines() {
        if annotations && line.starts_with("::") {
            assert_own_annotation(what, line);
        } else {
            assert!(!command_in(line), "{what}: a workflow command:\n{line}");
        }
    }
}

/// `line` is one annotation of the tool, as the runner parses it: its command, its title, a
/// `file=` naming one of the tree's files as the text shows it; nothing in it starts another.
fn assert_own_annotation(what: &str, line: &str) {
    let rest = &line[2..];
    let end = rest.find("::").expect("a command has data");
    let (info, data) = (&rest[..end], &rest[end + 2..]);
    let (command, properties) = info.split_once(' ').unwrap();
    assert!(
        matches!(command, "error" | "warning" | "notice"),
        "{what}: {line}"
    );
    let mut title = "";
    let mut file = String::new();
    for pair in properties.split(',') {
        let (key, value) = pair.split_once('=').unwrap();
        let value = value
            .replace("%3A", ":")
            .replace("%2C", ",")
            .replace("%0A", "\n")
            .replace("%0D", "\r")
            .replace("%25", "%");
        match key {
            "title" => {
                title = if value.starts_with("gpu-homogenize (") {
                    "ok"
                } else {
                    ""
                }
            }
            "file" => file = value,
            "line" | "col" => assert!(value.parse::<usize>().is_ok(), "{what}: {line}"),
            other => panic!("{what}: property {other} in {line}"),
        }
    }
    assert_eq!(title, "ok", "{what}: {line}");
    let shown = |name: &str| name.trim_matches('"').replace("\\\\", "\\");
    let known = ["opt.py", "src.py"].iter().any(|n| file == *n)
        || names().iter().any(|(_, text)| file == shown(text));
    assert!(known, "{what}: file={file:?} in {line}");
    assert!(
        !data.contains('\n') && !data.contains("##["),
        "{what}: {line}"
    );
}

fn tool(root: &Path, args: &[&str]) -> Run {
    let out = run(gh(root).args(args));
    let what = args.join(" ");
    assert!(out.code != 101 && out.code != -1, "{what}: {}", out.stderr);
    let github = args.contains(&"github");
    assert_inert(&format!("{what} (stdout)"), &out.stdout, github);
    assert_inert(&format!("{what} (stderr)"), &out.stderr, false);
    out
}

/// The names and the quoted option show in text, escaped.
fn assert_recognisable(what: &str, text: &str) {
    for (_, shown) in names() {
        assert!(text.contains(shown), "{what}: no {shown} in:\n{text}");
    }
}

#[test]
fn scan_prints_the_names_and_the_source_escaped() {
    let tree = stranger();
    let out = tool(tree.path(), &["scan", "."]);
    assert_recognisable("scan", &out.stdout);
    assert!(
        out.stdout.contains(
            "opt.py:4:1: GH014 [review] `--gpu\\n::error::forged\\033[31m\\342\\200\\256 \\043#[error]v1` selects no card"
        ),
        "{}",
        out.stdout
    );
    let out = tool(tree.path(), &["scan", ".", "--show-fixes"]);
    assert!(
        out.stdout.contains(&format!("- {}:\n", headline())),
        "{}",
        out.stdout
    );
    tool(tree.path(), &["scan", ".", "--statistics"]);
}

#[test]
fn check_and_fix_print_the_phase_name_escaped() {
    let tree = stranger();
    let out = tool(tree.path(), &["check", "--gpu", "off", "."]);
    assert_recognisable("check", &out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "{PHASE_SHOWN}: 0/2 compliant (0%), 2 non-compliant\n"
        )),
        "{}",
        out.stdout
    );
    let out = tool(tree.path(), &["fix", "--dry-run", "--gpu", "off", "."]);
    let name = headline().trim_matches('"');
    assert!(
        out.stdout.contains(&format!("--- \"a/{name}\"\n")),
        "{}",
        out.stdout
    );
    // The diff's context shows the option's line escaped.
    assert!(
        out.stdout
            .contains("--gpu\\n::error::forged\\033[31m\\342\\200\\256 \\043#[error]v1"),
        "{}",
        out.stdout
    );
    let out = tool(tree.path(), &["fix", "--gpu", "off", "."]);
    assert!(
        out.stdout.contains(&format!("{PHASE_SHOWN}: ")),
        "{}",
        out.stdout
    );
}

#[test]
fn machine_formats_keep_the_data_and_print_nothing_raw() {
    let tree = stranger();
    let out = tool(tree.path(), &["scan", ".", "--format", "github"]);
    for (_, shown) in names() {
        let data = shown.trim_matches('"');
        assert!(out.stdout.contains(data), "no {data} in:\n{}", out.stdout);
    }
    assert_eq!(
        out.stdout.lines().filter(|l| l.starts_with("::")).count(),
        annotations()
    );
    let out = tool(tree.path(), &["scan", ".", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let option = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "opt.py")
        .unwrap();
    // JSON escapes, and keeps the data.
    let message = option["findings"][1]["message"].as_str().unwrap();
    assert!(
        message.contains("--gpu\n::error::forged\x1b[31m\u{202E} ##[error]v1"),
        "{message}"
    );
    let out = tool(tree.path(), &["scan", ".", "--format", "sarif"]);
    let sarif: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let texts: Vec<&str> = results
        .iter()
        .filter_map(|r| r["message"]["text"].as_str())
        .collect();
    assert_eq!(texts.len(), annotations());
    // Shown to a person by the code host: printable, as the text output.
    assert!(
        texts
            .iter()
            .any(|t| t.contains("--gpu\\n::error::forged\\033[31m\\342\\200\\256 \\043#[error]v1")),
        "{texts:?}"
    );
}

/// GitLab shows each issue's path and description in the merge request: the names as the other
/// formats show them (escaped, recognisable), the quoted option printable, nothing raw.
#[test]
fn the_gitlab_report_keeps_the_names_recognisable_and_prints_nothing_raw() {
    let tree = stranger();
    let out = tool(tree.path(), &["scan", ".", "--format", "gitlab"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let issues: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(issues.len(), annotations());
    let paths: Vec<&str> = issues
        .iter()
        .map(|i| i["location"]["path"].as_str().unwrap())
        .collect();
    for (_, shown) in names() {
        let name = shown.trim_matches('"').replace("\\\\", "\\");
        assert!(paths.contains(&name.as_str()), "no {name} in {paths:?}");
    }
    assert!(
        issues.iter().any(|i| i["description"]
            .as_str()
            .unwrap()
            .contains("--gpu\\n::error::forged\\033[31m\\342\\200\\256 \\043#[error]v1")),
        "{}",
        out.stdout
    );
    // The whole report with every name (the names Windows can hold are checked above).
    if cfg!(unix) {
        insta::assert_snapshot!("gitlab_hostile", out.stdout);
    }
}

#[test]
fn the_report_escapes_the_tree_and_its_journal() {
    let tree = stranger();
    let root = tree.path();
    tool(root, &["check", "--gpu", "off", "."]);
    // A journal is committed with the tree: a stranger writes it too.
    let journal = root.join(".gpu-homogenize/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let forged = text.replace(
        "\"command\":\"check\"",
        "\"command\":\"check\\n::error::journal\\u001b[31m\\u202e ##[error]j\"",
    );
    std::fs::write(&journal, forged).unwrap();
    let md = tool(root, &["report"]);
    // Markdown escapes the backslashes of the escapes and the brackets: it renders as text does.
    let phase = PHASE_SHOWN
        .replace('\\', "\\\\")
        .replace('[', "\\[")
        .replace(']', "\\]");
    assert!(
        md.stdout.contains(&format!("### {phase}: 0/2 compliant")),
        "{}",
        md.stdout
    );
    let name = headline().trim_matches('"');
    assert!(md.stdout.contains(&format!("`{name}`")), "{}", md.stdout);
    assert!(
        md.stdout
            .contains("`check\\n::error::journal\\033[31m\\342\\200\\256 \\043#[error]j`"),
        "{}",
        md.stdout
    );
    let html = tool(root, &["report", "--format", "html"]);
    assert!(
        html.stdout.contains("Core\\n::error::forged"),
        "{}",
        html.stdout
    );
    tool(root, &["report", "--format", "json"]);
}

#[test]
fn an_error_quoting_the_config_is_printed_escaped() {
    let tree = stranger();
    write(
        tree.path(),
        "gpu-homogenize.toml",
        "[policy]\n[x\u{1b}[31m\u{202E}::error::y\n",
    );
    let out = tool(tree.path(), &["scan", "."]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    // The position, then a short excerpt of the line, escaped, the carets under the place.
    assert!(
        out.stderr.contains(
            "line 2, column 4: unclosed table, expected `]`\n  |\n2 | [x\\033[31m\\342\\200\\256::error::y\n  |       ^\n"
        ),
        "{}",
        out.stderr
    );
}
