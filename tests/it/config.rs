//! The config file and the template override, as a user sets them up.

use crate::common::{self, gh};

/// The binary's run, the locations of its text output `/`-joined on Windows too.
fn run(cmd: &mut assert_cmd::Command) -> common::Run {
    let mut out = common::run(cmd);
    out.stdout = common::unix_locations(&out.stdout);
    out
}

#[test]
fn a_custom_template_and_policy_drive_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("gpu-homogenize.toml"),
        "[policy]\nvisible_devices = \"0\"\nalloc_conf = \"\"\npython_template = \"header.tmpl\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("header.tmpl"),
        "@@ docstring_marker\nGPU: {{visible_devices}} only\n@@ header\n# GPU policy\nos.environ['CUDA_VISIBLE_DEVICES'] = '{{visible_devices}}'\nos.environ['CUDA_DEVICE_ORDER'] = '{{device_order}}'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = '{{alloc_conf}}'\n@@ validate_function\ndef check_gpu():\n    pass\n",
    )
    .unwrap();
    std::fs::write(
        root.join("m.py"),
        "import torch\nx = torch.zeros(1, device='cuda:0')\n",
    )
    .unwrap();
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let fixed = std::fs::read_to_string(root.join("m.py")).unwrap();
    assert_eq!(
        fixed,
        "\"\"\"\nGPU: 0 only\n\"\"\"\nimport os\n\n# GPU policy\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\n\nimport torch\nx = torch.zeros(1, device='cuda:0')\n"
    );
}

#[test]
fn a_bad_config_names_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gpu-homogenize.toml"),
        "[policy]\nvisible_device = \"1\"\n",
    )
    .unwrap();
    let out = run(gh(dir.path()).args(["scan"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("gpu-homogenize.toml: invalid config"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("visible_device"), "{}", out.stderr);
}

#[test]
fn touchpoints_map_top_level_lazy_and_init_imports() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(
        pkg.join("__init__.py"),
        "import torch\n\nCUDA = torch.cuda.is_available()\n",
    )
    .unwrap();
    // A package that only imports torch starts nothing: CUDA reads the env at its first use
    // (trial: spandrel's architecture packages were 9 reviews with nothing to review).
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(
        plain.join("__init__.py"),
        "import torch\n\n\ndef gpu():\n    return torch.cuda.is_available()\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("lazy.py"),
        "def load():\n    import tensorflow as tf\n    return tf\n",
    )
    .unwrap();
    let out = run(gh(dir.path()).args(["scan", "--touchpoints"]));
    assert!(
        out.stdout.contains(
            "pkg/__init__.py:1:1: GH303 [review] `torch` imported by a package __init__.py"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("plain/__init__.py:1:1: GH301 [info] `torch` imported at module level"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("pkg/lazy.py:2:5: GH302 [info] `tensorflow` imported inside a function"),
        "{}",
        out.stdout
    );
    let plain = run(gh(dir.path()).args(["scan"]));
    assert!(
        !plain.stdout.contains("[info]"),
        "touchpoints only on request"
    );
}

#[test]
fn phase_files_are_in_scope_without_gpu_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gpu-homogenize.toml"),
        "[[phase]]\nname = \"Core\"\nfiles = [\"plain.py\"]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("plain.py"), "print('hello')\n").unwrap();
    let out = run(gh(dir.path()).args(["scan", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["files"][0]["status"], "non_compliant");
    assert_eq!(doc["files"][0]["phase"], "Core");
    assert_eq!(doc["files"][0]["findings"][0]["rule"], "GH001");
}

/// Policy values that cannot be what the user meant, one per line of a `[policy]` table.
const INVALID_POLICIES: [&str; 9] = [
    "visible_device = \"1\"",
    "device_order = \"PCI_BUS\"",
    "visible_devices = \"banana\"",
    "visible_devices = \"1,1\"",
    "visible_devices = \"\"",
    "alloc_conf = \"max_split_size_mb:1024,expandable_segments:yes\"",
    "forbidden = [{ name = \"RTX\" }]",
    "visible_devices = \"GPU-aa11\"\ntarget = { uuid = \"GPU-bb22\" }",
    "target = { name = \"RTX 3090\", pci_bus_id = \"bus one\" }",
];

/// A place a config is read from: the file, the `--config` argument naming it (if any), and the
/// file's text around one `[policy]` line.
type Source = (&'static str, &'static str, fn(&str) -> String);

/// Each invalid policy value, in each place a config is read from, stops `fix` with exit 2
/// and the line of the value before any source is read or written: the snippet of each.
#[test]
fn an_invalid_policy_stops_every_config_source_before_any_file() {
    let sources: [Source; 3] = [
        ("gpu-homogenize.toml", "", |line| {
            format!("[policy]\n{line}\n")
        }),
        ("pyproject.toml", "", |line| {
            format!("[project]\nname = \"app\"\n\n[tool.gpu-homogenize.policy]\n{line}\n")
        }),
        ("settings/mine.toml", "settings/mine.toml", |line| {
            format!("# the team's policy\n[policy]\n{line}\n")
        }),
    ];
    const BAD: &str = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nimport torch\nx = torch.zeros(1).to('cuda:1')\n";
    for (file, named, config) in sources {
        let mut shown = String::new();
        for line in INVALID_POLICIES {
            let dir = crate::common::tree();
            let root = dir.path();
            crate::common::write(root, file, &config(line));
            crate::common::write(root, "train.py", BAD);
            let mut cmd = gh(root);
            cmd.args(["fix", "--gpu", "off"]);
            if !named.is_empty() {
                cmd.args(["--config", named]);
            }
            let out = run(&mut cmd);
            assert_eq!(out.code, 2, "{file} {line}: {}{}", out.stdout, out.stderr);
            assert_eq!(out.stdout, "", "{file} {line}");
            assert_eq!(std::fs::read_to_string(root.join("train.py")).unwrap(), BAD);
            assert!(!root.join(".gpu-homogenize").exists(), "{file} {line}");
            let root_text = format!("{}{}", root.display(), std::path::MAIN_SEPARATOR);
            shown.push_str(&common::unix_paths(&out.stderr.replace(&root_text, "")));
            shown.push('\n');
        }
        insta::assert_snapshot!(
            format!("invalid_policy_{}", file.replace(['/', '.'], "_")),
            shown
        );
    }
}

/// The values the checks accept: UUIDs and MIG ids, an order and an allocator setting PyTorch
/// reads.
#[test]
fn valid_policies_load() {
    let dir = crate::common::tree();
    let root = dir.path();
    crate::common::write(root, "train.py", "print('cpu')\n");
    for policy in [
        "visible_devices = \"GPU-8f2c11aa,MIG-GPU-8f2c11aa/1/0\"\ntarget = { uuid = \"GPU-8f2c11aa\" }",
        "device_order = \"FASTEST_FIRST\"\nalloc_conf = \"expandable_segments:True,roundup_power2_divisions:[256:1,>:4]\"",
    ] {
        crate::common::write(root, "gpu-homogenize.toml", &format!("[policy]\n{policy}\n"));
        let out = run(gh(root).args(["scan"]));
        assert_eq!(out.code, 0, "{policy}: {}{}", out.stdout, out.stderr);
    }
}
