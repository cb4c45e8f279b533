//! A tree that holds several projects: each is judged as it would be alone. A project's imports
//! resolve within it before the rest of the tree, and a Rust group of packages (those path
//! dependencies join) still reads the modules and targets a `#[path]` or a `path` puts outside
//! its directories.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{gh, run, statuses, write};

fn status_of(root: &Path) -> BTreeMap<String, String> {
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    statuses(&out.stdout)
}

/// Two projects ship a package of the same name; each one's tests import its own (`src/`
/// layout: the tests' `sys.path` entry holds no candidate, the project does).
#[test]
fn a_project_imports_its_own_package_not_another_projects_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let test = "from pkg.model import load\n\n\ndef test_load():\n    assert load() is not None\n";
    for project in ["cpu", "gpu"] {
        write(
            root,
            &format!("{project}/setup.py"),
            "from setuptools import setup\n\nsetup(name=\"pkg\")\n",
        );
        write(root, &format!("{project}/src/pkg/__init__.py"), "");
        write(root, &format!("{project}/tests/test_model.py"), test);
    }
    write(
        root,
        "cpu/src/pkg/model.py",
        "def load():\n    return [0.0]\n",
    );
    write(
        root,
        "gpu/src/pkg/model.py",
        "import torch\n\n\ndef load():\n    return torch.zeros(1).to(\"cuda\")\n",
    );
    let status = status_of(root);
    assert_eq!(
        status["gpu/tests/test_model.py"], "non_compliant",
        "{status:?}"
    );
    // It would be a GPU program too if it ran the other project's `pkg.model`.
    assert_eq!(
        status["cpu/tests/test_model.py"], "no_gpu_code",
        "{status:?}"
    );
}

/// A binary whose `[[bin]] path` leaves its package's directory, and a module a `#[path]`
/// takes from a directory no package holds: both are part of the program.
#[test]
fn targets_and_modules_outside_their_package_directory_are_part_of_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"runner\"\npath = \"../tools/runner.rs\"\n\n[dependencies]\ncust = \"0.3\"\n",
    );
    write(
        root,
        "app/src/lib.rs",
        "pub fn version() -> u32 {\n    1\n}\n",
    );
    write(
        root,
        "tools/runner.rs",
        "#[path = \"../shared/gpu.rs\"]\nmod gpu;\n\nfn main() {\n    gpu::start();\n}\n",
    );
    write(
        root,
        "shared/gpu.rs",
        "use cust::device::Device;\n\npub fn start() {\n    let _d = Device::get_device(0);\n}\n",
    );
    let status = status_of(root);
    assert_eq!(status["tools/runner.rs"], "non_compliant", "{status:?}");
    let out = run(gh(root).args(["scan", "."]));
    assert!(
        out.stdout
            .contains("tools/runner.rs:4:1: GH502 [*] fn main must set CUDA_VISIBLE_DEVICES"),
        "{}",
        out.stdout
    );
}
