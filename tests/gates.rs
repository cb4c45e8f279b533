//! A rewrite passes the project's own gates: each fixture project declares its formatter and
//! linters, is fixed, and the real tools (when installed: `pip install ruff black isort flake8`)
//! report nothing the original did not have.

mod common;

use std::path::Path;
use std::process::Command;

use common::{gh, run};

const PROGRAM: &str = "\"\"\"Train a model.\"\"\"\n\nimport argparse\nimport sys\n\nimport torch\n\n\ndef main() -> int:\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--epochs\", type=int, default=1)\n    args = parser.parse_args()\n    model = torch.nn.Linear(4, 4).to(\"cuda:1\")\n    print(args.epochs, model, file=sys.stderr)\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main())\n";

/// The problems a tool reports on `dir` (its exit status and output), `None` when it is not
/// installed.
fn gate(dir: &Path, tool: &str, args: &[&str]) -> Option<(i32, String)> {
    let out = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Some((out.status.code().unwrap_or(-1), text))
}

/// A tool and its arguments.
type Tool<'a> = (&'a str, &'a [&'a str]);

/// A case: its name, its config file and text, its program, and its gates.
type Case<'a> = (&'a str, (&'a str, &'a str), String, &'a [Tool<'a>]);

fn project(config: (&str, &str), program: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(config.0), config.1).unwrap();
    std::fs::write(dir.path().join("train.py"), program).unwrap();
    dir
}

#[test]
fn fixed_projects_pass_their_own_formatters_and_linters() {
    let single =
        PROGRAM
            .replace('"', "'")
            .replacen("'''Train a model.'''", "\"\"\"Train a model.\"\"\"", 1);
    let cases: [Case; 3] = [
        (
            "black + isort (profile black)",
            ("pyproject.toml", "[tool.black]\nline-length = 88\n[tool.isort]\nprofile = \"black\"\n"),
            PROGRAM.to_string(),
            &[("black", &["--check", "-q", "."]), ("isort", &["--check-only", "-q", "."])],
        ),
        (
            "flake8 (setup.cfg)",
            ("setup.cfg", "[flake8]\nmax-line-length = 88\n"),
            PROGRAM.to_string(),
            &[("flake8", &["."])],
        ),
        (
            "ruff with single quotes",
            ("ruff.toml", "line-length = 88\n[lint]\nselect = [\"E\", \"F\", \"I\", \"W\", \"Q\"]\n[lint.flake8-quotes]\ninline-quotes = \"single\"\n[format]\nquote-style = \"single\"\n"),
            single,
            &[("ruff", &["check", "-q", "."]), ("ruff", &["format", "--check", "-q", "."])],
        ),
    ];
    for (name, config, program, tools) in cases {
        let dir = project(config, &program);
        let before: Vec<_> = tools.iter().map(|(t, a)| gate(dir.path(), t, a)).collect();
        let out = run(gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
        assert_eq!(out.code, 0, "{name}: {}{}", out.stdout, out.stderr);
        assert!(
            std::fs::read_to_string(dir.path().join("train.py"))
                .unwrap()
                .contains("CUDA_VISIBLE_DEVICES"),
            "{name}: not fixed"
        );
        for ((tool, args), before) in tools.iter().zip(before) {
            let (Some((code_before, _)), Some((code_after, text))) =
                (before, gate(dir.path(), tool, args))
            else {
                continue; // not installed here
            };
            assert_eq!(
                code_before, 0,
                "{name}: {tool} {args:?} fails on the original"
            );
            assert_eq!(code_after, 0, "{name}: {tool} {args:?} after fix:\n{text}");
        }
    }
}
