//! Fitting the ecosystem like ruff: suppression comments, rule selection, exclusion, the
//! config in pyproject.toml, CI formats and the other options, as a user runs them.

use std::path::Path;

use crate::common::{gh, run, shown};

/// A file whose env is the policy's, with three device strings the mask breaks.
const HEADED: &str = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\nimport torch\nx = torch.device('cuda:1')\ny = torch.device('cuda:1')  # noqa: GH101\nz = torch.device('cuda:1')  # noqa\nw = torch.device('cuda:1')  # noqa: E402\n";

const L6: &str = "GH101 [*] torch.device(…) selects device 1, device 0 under mask '1'";

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
        format!("a.py:6:18: {L6}\na.py:9:18: {L6}\nFound 2 violations in 1 file (2 fixable with `gpu-homogenize fix`), 0 left for review, 2 findings accepted by noqa/baseline/ignore.\n1 file: 1 non-compliant.\n")
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
    // A library file no program runs: its indices are for review (GH514).
    let src = "fn pick() {\n    let a = candle_core::Device::new_cuda(1);\n    let b = candle_core::Device::new_cuda(1); // noqa: GH514\n}\n";
    let dir = tree(&[("src/lib.rs", src)]);
    let out = run(gh(dir.path()).args(["scan", "--select", "GH514"]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout.matches("GH514").count(), 1, "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with(&format!("{}:2:", shown("src/lib.rs"))),
        "{}",
        out.stdout
    );
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
        // Without the header (deselected) the index is not fixable: cuda:0 selects the target
        // card only under the policy's mask.
        "a.py:2:18: GH101 torch.device(…) selects device 1, device 0 under mask '1'\nFound 1 violation in 1 file (0 fixable with `gpu-homogenize fix`), 0 left for review, 1 finding accepted by noqa/baseline/ignore.\n1 file: 1 non-compliant.\n"
    );
    let out = run(gh(dir.path()).args(["scan", "--ignore", "GH0,GH1", "a.py"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "Found 0 violations in 0 files (0 fixable with `gpu-homogenize fix`), 0 left for review, 2 findings accepted by noqa/baseline/ignore.\n1 file: 1 accepted by noqa/baseline/ignore.\n"));
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
        // Without the header (deselected) the index is not fixable: cuda:0 selects the target
        // card only under the policy's mask.
        "a.py:2:18: GH101 torch.device(…) selects device 1, device 0 under mask '1'\nFound 1 violation in 1 file (0 fixable with `gpu-homogenize fix`), 0 left for review, 1 finding accepted by noqa/baseline/ignore.\n1 file: 1 non-compliant.\n"
    );
    std::fs::write(
        dir.path().join("gpu-homogenize.toml"),
        "[lint]\nignore = [\"GH\"]\n",
    )
    .unwrap();
    let out = run(gh(dir.path()).args(["scan"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "Found 0 violations in 0 files (0 fixable with `gpu-homogenize fix`), 0 left for review, 4 findings accepted by noqa/baseline/ignore.\n2 files: 2 accepted by noqa/baseline/ignore.\n")
    );
}

const BARE: &str = "import torch\nx = torch.device('cuda:1')\n";
const BARE_101: &str = "GH101 [*] torch.device(…) selects device 1, device 0 under mask '1'";

#[test]
fn diff_prints_relative_headers_and_writes_nothing() {
    let dir = tree(&[("pkg/a.py", HEADED)]);
    let abs = dir.path().join("pkg/a.py");
    let out = run(gh(dir.path()).args(["fix", "--diff", abs.to_str().unwrap()]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -3,7 +3,7 @@\n os.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\n os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\n import torch\n-x = torch.device('cuda:1')\n+x = torch.device('cuda:0')\n y = torch.device('cuda:1')  # noqa: GH101\n z = torch.device('cuda:1')  # noqa\n-w = torch.device('cuda:1')  # noqa: E402\n+w = torch.device('cuda:0')  # noqa: E402\n"
    );
    assert_eq!(read(dir.path(), "pkg/a.py"), HEADED);
    // Nothing but the content cache.
    let kept: Vec<_> = std::fs::read_dir(dir.path().join(".gpu-homogenize"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(kept, ["cache"]);
}

#[test]
fn github_format_prints_workflow_annotations() {
    let dir = tree(&[("a b.py", BARE)]);
    let out = run(gh(dir.path()).args(["scan", "--format", "github", "--select", "GH1"]));
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        format!(
            "::error title=gpu-homogenize (GH101),file=a b.py,line=2,col=18::a b.py:2:18: {}\n",
            &BARE_101.replace(" [*]", "")
        )
    );
}

/// A finding's message is one line; what to do by hand is its help, in every format: a line of
/// its own under the finding in text, a field in JSON, the second line of a SARIF message and of
/// a GitHub annotation, GitLab's `content.body`.
#[test]
fn a_findings_help_reaches_every_format_under_its_one_line_message() {
    // A device read from a config key: for review, with what to check there.
    let src = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\nimport torch\nimport yaml\ncfg = yaml.safe_load(open('c.yaml'))\nx = torch.zeros(1).to(cfg['device'])\n";
    let dir = tree(&[("train.py", src)]);
    let message = "train.py:8:23: GH111 [review] .to(…) takes its device from key `device` of `c.yaml`, which the tool does not read";
    let help = "under CUDA_VISIBLE_DEVICES='1' the policy's card is `cuda:0` (index 0): check the value there, then mark this `# noqa: GH111`";
    let text = run(gh(dir.path()).args(["scan", "--no-cache"]));
    assert_eq!(text.code, 1, "{}", text.stderr);
    assert!(
        text.stdout
            .starts_with(&format!("{message}\n  help: {help}\n")),
        "{}",
        text.stdout
    );
    let json = run(gh(dir.path()).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let f = &doc["files"][0]["findings"][0];
    assert_eq!(
        f["message"].as_str(),
        message.split_once("[review] ").map(|m| m.1)
    );
    assert_eq!(f["help"], help);
    // A finding with nothing to do by hand has no `help` at all.
    let bare = tree(&[("a.py", BARE)]);
    let json = run(gh(bare.path()).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(
        doc["files"][0]["findings"][0].get("help").is_none(),
        "{doc}"
    );
    let sarif = run(gh(dir.path()).args(["scan", "--no-cache", "--format", "sarif"]));
    let doc: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let result = &doc["runs"][0]["results"][0];
    assert_eq!(
        result["message"]["text"],
        format!("{}\nhelp: {help}", f["message"].as_str().unwrap())
    );
    let github = run(gh(dir.path()).args(["scan", "--no-cache", "--format", "github"]));
    assert!(
        github
            .stdout
            .starts_with(&format!("::warning title=gpu-homogenize (GH111),file=train.py,line=8,col=23::{}%0Ahelp: {help}\n", message.replace(" [review]", ""))),
        "{}",
        github.stdout
    );
    let gitlab = run(gh(dir.path()).args(["scan", "--no-cache", "--format", "gitlab"]));
    let doc: serde_json::Value = serde_json::from_str(&gitlab.stdout).unwrap();
    assert_eq!(doc[0]["content"]["body"], help);
}

#[test]
fn sarif_uses_percent_encoded_uris_under_srcroot_and_full_rules() {
    let dir = tree(&[("dir with space/café/naïve.py", BARE)]);
    let out = run(gh(dir.path()).args(["scan", "--format", "sarif"]));
    assert_eq!(out.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let run0 = &doc["runs"][0];
    let location = &run0["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(
        location["uri"],
        "dir%20with%20space/caf%C3%A9/na%C3%AFve.py"
    );
    assert_eq!(location["uriBaseId"], "%SRCROOT%");
    let base = run0["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        base.starts_with("file:///") && base.ends_with('/'),
        "{base}"
    );
    for rule in run0["tool"]["driver"]["rules"].as_array().unwrap() {
        assert!(
            rule["fullDescription"]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "{rule}"
        );
        assert!(rule["helpUri"].as_str().is_some(), "{rule}");
    }
    // From a subdirectory of the repository, URIs stay relative to the repository.
    std::fs::write(dir.path().join("dir with space/gpu-homogenize.toml"), "").unwrap();
    let out = run(gh(&dir.path().join("dir with space")).args(["scan", "--format", "sarif"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "dir%20with%20space/caf%C3%A9/na%C3%AFve.py"
    );
}

#[test]
fn statistics_quiet_and_color() {
    let dir = tree(&[("a.py", BARE), ("b.py", BARE)]);
    let out = run(gh(dir.path()).args(["scan", "--statistics", "-q"]));
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        "2\tGH001\t[*]      header-missing\n2\tGH101\t[*]      device-string-index\n"
    );
    let out = run(gh(dir.path()).args(["scan", "--quiet", "--select", "GH101", "a.py"]));
    assert_eq!(
        (out.code, out.stdout),
        (1, format!("a.py:2:18: {}\n", BARE_101.replace(" [*]", "")))
    );
    let out = run(gh(dir.path()).args(["scan", "-q", "--color", "always", "a.py"]));
    assert!(
        out.stdout.contains(
            "\x1b[1ma.py\x1b[0m:2:18: \x1b[1;31mGH101\x1b[0m \x1b[36m[*]\x1b[0m torch.device(…) selects device 1, device 0 under mask '1'\n"
        ),
        "{}",
        out.stdout
    );
    // Piped, `auto` means no colour.
    let out = run(gh(dir.path()).args(["scan", "-q", "--select", "GH101", "a.py"]));
    assert!(!out.stdout.contains('\x1b'));
}

#[test]
fn rule_explains_a_code_and_completions_print_a_script() {
    let dir = tree(&[]);
    let out = run(gh(dir.path()).args(["rule", "GH101"]));
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stdout,
        "GH101 (device-string-index): a device string selects an index that does not exist once CUDA_VISIBLE_DEVICES is applied.\n\nWhy: Once CUDA_VISIBLE_DEVICES='1' is applied only one card is visible and it is device 0: `cuda:1` is then a crash or a silent fallback.\n\nExample:\n    torch.device('cuda:1')  ->  torch.device('cuda:0')\n\nFix safety: Fix is safe. The index is remapped to the one the same physical card has under the mask.\n\nWhat fix writes: `\"cuda:1\"` → `\"cuda:0\"` where it reaches a sink (also `/gpu:N`, `/device:GPU:N`).\n"
    );
    let out = run(gh(dir.path()).args(["rule", "GH999"]));
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `GH999` is not a rule; `gpu-homogenize rule --all` lists them\n"
    );
    let out = run(gh(dir.path()).args(["completions", "bash"]));
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.starts_with("_gpu_homogenize() {"),
        "{}",
        &out.stdout[..40]
    );
    assert!(out.stdout.contains("--unsafe-fixes"));
}

#[test]
fn unsafe_fixes_are_held_back_until_asked_for() {
    let src = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\nimport torch\n\n\ndef setup():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n";
    let dir = tree(&[("a.py", src)]);
    let out = run(gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal", "-q"]));
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "a.py:9:5: GH006 a function sets CUDA_VISIBLE_DEVICES to '0' (policy: '1') and may run before CUDA starts\n");
    assert_eq!(read(dir.path(), "a.py"), src);
    let out = run(gh(dir.path()).args(["scan"]));
    assert!(out.stdout.ends_with("1 file: 1 non-compliant.\n1 unsafe fix held back: `gpu-homogenize fix --unsafe-fixes` applies it (`gpu-homogenize rule CODE` says why each is unsafe); listed below.\n  a.py:9:5: GH006 env-write-in-function (unsafe fix held back)\n"), "{}", out.stdout);
    let out = run(gh(dir.path()).args(["scan", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["files"][0]["findings"][0]["applicability"], "unsafe");
    assert_eq!(doc["summary"]["unsafe_fixes_held"], 1);
    let out = run(gh(dir.path()).args(["fix", "--unsafe-fixes", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(read(dir.path(), "a.py").ends_with("def setup():\n    pass\n"));
}

#[test]
fn baseline_hides_known_findings_by_line_text_not_number() {
    let dir = tree(&[("a.py", BARE)]);
    let out = run(gh(dir.path()).args(["baseline", "--out", "base.json"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "Wrote 2 findings to base.json.\n")
    );
    assert_eq!(
        read(dir.path(), "base.json"),
        "{\n  \"version\": 2,\n  \"findings\": [\n    {\n      \"path\": \"a.py\",\n      \"rule\": \"GH001\",\n      \"line\": \"\",\n      \"whole_file\": true\n    },\n    {\n      \"path\": \"a.py\",\n      \"rule\": \"GH101\",\n      \"line\": \"x = torch.device('cuda:1')\"\n    }\n  ]\n}\n"
    );
    // Lines move and a new finding appears: only the new one is reported.
    std::fs::write(
        dir.path().join("a.py"),
        "import torch\n\n# moved\nx = torch.device('cuda:1')\ny = torch.device('cuda:1')\n",
    )
    .unwrap();
    let out = run(gh(dir.path()).args(["scan", "-q", "--baseline", "base.json"]));
    assert_eq!(out.code, 1);
    // GH001 is known (baselined), so its plan goes, and with it the index fix.
    assert_eq!(
        out.stdout,
        format!("a.py:5:18: {}\n", BARE_101.replace(" [*]", ""))
    );
}

#[test]
fn add_noqa_suppresses_every_finding_with_a_reason_and_never_inside_a_string() {
    let src = "#!/usr/bin/env python3\n\"\"\"Doc\nstring\"\"\"\nimport torch\nx = torch.device('cuda:1')  # noqa: E501\n";
    let dir = tree(&[("a.py", src)]);
    let out = run(gh(dir.path()).args(["scan", "--add-noqa"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "Added 2 noqa directives to 1 file.\n")
    );
    assert_eq!(
        read(dir.path(), "a.py"),
        format!("#!/usr/bin/env python3\n\"\"\"Doc\nstring\"\"\"\nimport torch\nx = torch.device('cuda:1')  # noqa: E501  # noqa: GH101 {r}\n# gpu-homogenize: noqa: GH001 {r}\n", r = gpu_homogenize::lang::add_noqa::REASON)
    );
    let out = run(gh(dir.path()).args(["scan", "-q"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
}

#[test]
fn per_file_ignores_and_extend_select_on_the_command_line() {
    let dir = tree(&[("tests/t.py", BARE), ("a.py", BARE)]);
    let out = run(gh(dir.path()).args([
        "scan",
        "-q",
        "--select",
        "GH0",
        "--extend-select",
        "GH101",
        "--per-file-ignores",
        "tests/*.py:GH0,GH1",
    ]));
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        format!("a.py:1:1: GH001 [*] GPU header missing\na.py:2:18: {BARE_101}\n")
    );
}

#[test]
fn force_exclude_applies_exclude_to_paths_given_by_name() {
    let bare = "import torch\nx = torch.device('cuda:1')\n";
    let dir = tree(&[("a.py", bare), ("docs/b.py", bare)]);
    let named = |extra: &[&str]| {
        let mut args = vec!["scan", "-q", "--select", "GH001", "--exclude", "docs"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["a.py", "docs/b.py"]);
        run(gh(dir.path()).args(args)).stdout
    };
    // As ruff: a file named on the command line is checked, unless --force-exclude.
    assert!(named(&[]).contains(&format!("{}:1:1: GH001", shown("docs/b.py"))));
    let forced = named(&["--force-exclude"]);
    assert!(!forced.contains(&shown("docs/b.py")), "{forced}");
    assert!(forced.contains("a.py:1:1: GH001"), "{forced}");
}

/// As ruff: hidden directories are walked (an mmdet wheel keeps its tools, GPU programs, under
/// `mmdet/.mim/tools/`: the tree was reported compliant with them never read), but for a fixed
/// list (version control, environments, tools' caches, this tool's own state), which
/// `--force-exclude` applies to named paths too.
#[test]
fn hidden_directories_are_walked_but_the_default_excludes() {
    let program = "import torch\n\nx = torch.zeros(1).to('cuda:1')\n";
    let dir = tree(&[
        ("pkg/__init__.py", ""),
        ("pkg/.mim/tools/train.py", program),
        (".venv/lib/site.py", program),
        (".tox/py312/run.py", program),
        (".gpu-homogenize/old.py", program),
    ]);
    let out = run(gh(dir.path()).args(["scan", "--no-cache", "--select", "GH001"]));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        crate::common::unix_locations(&out.stdout),
        "pkg/.mim/tools/train.py:1:1: GH001 [*] GPU header missing\nFound 1 violation in 1 file (1 fixable with `gpu-homogenize fix`), 0 left for review, 1 finding accepted by noqa/baseline/ignore.\n2 files: 1 non-compliant, 1 without GPU code.\n"
    );
    let named = |extra: &[&str]| {
        let mut args = vec!["scan", "-q", "--no-cache", "--select", "GH001"];
        args.extend_from_slice(extra);
        args.push(".venv/lib/site.py");
        run(gh(dir.path()).args(args))
    };
    let out = named(&[]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains(&format!("{}:1:1: GH001", shown(".venv/lib/site.py"))),
        "{}",
        out.stdout
    );
    let out = named(&["--force-exclude"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
}
