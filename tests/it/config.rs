//! The config file and the template override, as a user sets them up.

use crate::common::{gh, run};

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
    std::fs::write(pkg.join("__init__.py"), "import torch\n").unwrap();
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
