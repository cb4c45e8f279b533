//! Fitting the ecosystem like ruff: suppression comments, rule selection, exclusion, the
//! config in pyproject.toml, CI formats and the other options, as a user runs them.

mod common;

use std::path::Path;

use common::{gh, run};

/// A file whose env is the policy's, with three device strings the mask breaks.
const HEADED: &str = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\nimport torch\nx = torch.device('cuda:1')\ny = torch.device('cuda:1')  # noqa: GH101\nz = torch.device('cuda:1')  # noqa\nw = torch.device('cuda:1')  # noqa: E402\n";

const L6: &str = "GH101 [*] torch.device(…) selects device 1: with CUDA_VISIBLE_DEVICES='1' that card is device 0";

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

#[test]
fn noqa_suppresses_the_named_rule_on_its_line_and_fix_leaves_that_line() {
    let dir = tree(&[("a.py", HEADED)]);
    let out = run(gh(dir.path()).args(["scan"]));
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        format!("a.py:6:18: {L6}\na.py:9:18: {L6}\nFound 2 violations in 1 file (2 fixable with `gpu-homogenize fix`), 0 for review.\n1 file: 1 non-compliant.\n")
    );
    let out = run(gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        read(dir.path(), "a.py"),
        HEADED
            .replacen(
                "x = torch.device('cuda:1')",
                "x = torch.device('cuda:0')",
                1
            )
            .replacen(
                "w = torch.device('cuda:1')",
                "w = torch.device('cuda:0')",
                1
            )
    );
}

#[test]
fn rust_noqa_uses_a_line_comment() {
    let src = "fn pick() {\n    let a = candle_core::Device::new_cuda(1);\n    let b = candle_core::Device::new_cuda(1); // noqa: GH511\n}\n";
    let dir = tree(&[("src/lib.rs", src)]);
    let out = run(gh(dir.path()).args(["scan", "--select", "GH511"]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout.matches("GH511").count(), 1, "{}", out.stdout);
    assert!(out.stdout.starts_with("src/lib.rs:2:"), "{}", out.stdout);
}

#[test]
fn skip_file_leaves_the_file_out() {
    let dir = tree(&[(
        "a.py",
        "# gpu-homogenize: skip-file\nimport torch\nx = torch.device('cuda:1')\n",
    )]);
    let out = run(gh(dir.path()).args(["scan", "--format", "json"]));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["files"][0]["status"], "skipped");
    assert_eq!(
        doc["files"][0]["reason"],
        "`gpu-homogenize: skip-file` comment"
    );
}

#[test]
fn select_ignore_and_exclude_on_the_command_line() {
    let bare = "import torch\nx = torch.device('cuda:1')\n";
    let dir = tree(&[("a.py", bare), ("docs/b.py", bare), ("sandbox/c.py", bare)]);
    let out = run(gh(dir.path()).args([
        "scan",
        "--select",
        "GH1",
        "--exclude",
        "docs",
        "--extend-exclude",
        "sandbox/**",
    ]));
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        "a.py:2:18: GH101 [*] torch.device(…) selects device 1: with CUDA_VISIBLE_DEVICES='1' that card is device 0\nFound 1 violation in 1 file (1 fixable with `gpu-homogenize fix`), 0 for review.\n1 file: 1 non-compliant.\n"
    );
    let out = run(gh(dir.path()).args(["scan", "--ignore", "GH0,GH1", "a.py"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "Found 0 violations in 0 files (0 fixable with `gpu-homogenize fix`), 0 for review.\n1 file: 1 compliant.\n"));
    let out = run(gh(dir.path()).args(["scan", "--select", "XY9"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`XY9` selects no rule"),
        "{}",
        out.stderr
    );
}

#[test]
fn pyproject_tool_table_is_read_and_gpu_homogenize_toml_wins() {
    let bare = "import torch\nx = torch.device('cuda:1')\n";
    let dir = tree(&[
        ("a.py", bare),
        ("docs/b.py", bare),
        (
            "pyproject.toml",
            "[project]\nname = \"x\"\n\n[tool.gpu-homogenize.lint]\nextend-exclude = [\"docs\"]\nper-file-ignores = { \"a.py\" = [\"GH001\"] }\n",
        ),
    ]);
    let out = run(gh(dir.path()).args(["scan"]));
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        "a.py:2:18: GH101 [*] torch.device(…) selects device 1: with CUDA_VISIBLE_DEVICES='1' that card is device 0\nFound 1 violation in 1 file (1 fixable with `gpu-homogenize fix`), 0 for review.\n1 file: 1 non-compliant.\n"
    );
    std::fs::write(
        dir.path().join("gpu-homogenize.toml"),
        "[lint]\nignore = [\"GH\"]\n",
    )
    .unwrap();
    let out = run(gh(dir.path()).args(["scan"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "Found 0 violations in 0 files (0 fixable with `gpu-homogenize fix`), 0 for review.\n2 files: 2 compliant.\n")
    );
}
