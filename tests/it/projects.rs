//! A tree that holds several projects: each is judged as it would be alone. A project's imports
//! resolve within it before the rest of the tree, and a Rust group of packages (those path
//! dependencies join) still reads the modules and targets a `#[path]` or a `path` puts outside
//! its directories.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{file_in, gh, run, shown, statuses, write};

/// `fix` on the tree (no GPU check, no journal), as its JSON report.
fn fix_report(root: &Path) -> serde_json::Value {
    let out = run(gh(root).args([
        "fix",
        "--gpu",
        "off",
        "--no-journal",
        "--format",
        "json",
        ".",
    ]));
    serde_json::from_str(&out.stdout).unwrap()
}

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
        out.stdout.contains(&format!(
            "{}:4:1: GH502 [*] fn main does not set CUDA_VISIBLE_DEVICES",
            shown("tools/runner.rs")
        )),
        "{}",
        out.stdout
    );
}

/// GPU reach follows code that runs: a module's import-time code runs in every program that
/// imports it, its functions only in the programs that use them (directly, through a class,
/// through another module's function). A downloader that imports the helper's config reader is
/// no GPU program because the same helper loads a model on the GPU in another function.
#[test]
fn gpu_reach_follows_the_functions_a_program_uses() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "helper.py",
        "import json\n\n\ndef load_model():\n    import torch\n\n    return torch.nn.Linear(2, 2).cuda()\n\n\nclass Speaker:\n    def speak(self):\n        import whisper\n\n        return whisper.load_model(\"base\")\n\n\ndef read_config(path):\n    with open(path) as f:\n        return json.load(f)\n",
    );
    write(
        root,
        "pipeline.py",
        "from helper import load_model, read_config\n\n\ndef run():\n    return load_model()\n\n\ndef settings():\n    return read_config(\"c.json\")\n",
    );
    write(
        root,
        "gpu_at_import.py",
        "import torch\n\nMODEL = torch.zeros(1).cuda()\n\n\ndef name():\n    return \"m\"\n",
    );
    let main = |body: &str| format!("{body}\n\nif __name__ == \"__main__\":\n    main()\n");
    write(
        root,
        "download.py",
        &main(
            "from helper import read_config\n\n\ndef main():\n    print(read_config(\"c.json\"))",
        ),
    );
    write(
        root,
        "train.py",
        &main("from helper import load_model\n\n\ndef main():\n    load_model()"),
    );
    write(
        root,
        "cli.py",
        &main("import helper\n\n\ndef main():\n    helper.load_model()"),
    );
    write(
        root,
        "api.py",
        &main("import helper\n\n\ndef main():\n    print(helper.read_config(\"c.json\"))"),
    );
    write(
        root,
        "talk.py",
        &main("from helper import Speaker\n\n\ndef main():\n    Speaker().speak()"),
    );
    write(
        root,
        "batch.py",
        &main("from pipeline import run\n\n\ndef main():\n    run()"),
    );
    write(
        root,
        "show.py",
        &main("from pipeline import settings\n\n\ndef main():\n    print(settings())"),
    );
    write(
        root,
        "names.py",
        &main("from gpu_at_import import name\n\n\ndef main():\n    print(name())"),
    );
    let status = status_of(root);
    for program in ["train.py", "cli.py", "talk.py", "batch.py", "names.py"] {
        assert_eq!(status[program], "non_compliant", "{program}: {status:?}");
    }
    for program in ["download.py", "api.py", "show.py"] {
        assert_eq!(status[program], "no_gpu_code", "{program}: {status:?}");
    }
}

/// A module an application loads by name — `importlib.import_module(f"plugins.{name}")` over a
/// folder with no `__init__.py`, or the `extensions/*/script.py` files a web UI scans and
/// executes — runs in the application's process: library code, never a program of its own (no
/// header in it); the application carries the header. `scan --format json` says for each file
/// why it is a program or a library.
#[test]
fn a_module_loaded_by_name_is_library_code_of_its_loader() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    write(
        root,
        "app.py",
        "import importlib\nimport os\n\n\ndef load_plugins():\n    for name in os.listdir(\"plugins\"):\n        if name.endswith(\".py\"):\n            importlib.import_module(f\"plugins.{name[:-3]}\").run()\n\n\nif __name__ == \"__main__\":\n    load_plugins()\n",
    );
    write(
        root,
        "plugins/echo.py",
        "import torch\n\n\ndef run():\n    return torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "webui.py",
        "import glob\nimport importlib.util\n\n\ndef load_extensions():\n    for path in glob.glob(\"extensions/*/script.py\"):\n        spec = importlib.util.spec_from_file_location(\"ext\", path)\n        module = importlib.util.module_from_spec(spec)\n        spec.loader.exec_module(module)\n        module.setup()\n\n\nif __name__ == \"__main__\":\n    load_extensions()\n",
    );
    write(
        root,
        "extensions/tts/script.py",
        "import torch\n\nmodel = None\n\n\ndef setup():\n    global model\n    model = torch.nn.Linear(2, 2).cuda()\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let evidence = |path: &str| {
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .and_then(|f| f["evidence"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(evidence("app.py").starts_with("program"), "{}", out.stdout);
    assert!(
        evidence("plugins/echo.py").starts_with("library")
            && evidence("plugins/echo.py").contains("app.py"),
        "{}",
        out.stdout
    );
    assert!(
        evidence("extensions/tts/script.py").starts_with("library")
            && evidence("extensions/tts/script.py").contains("webui.py"),
        "{}",
        out.stdout
    );
    let fix = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache"]));
    let has_header = |rel: &str| {
        std::fs::read_to_string(root.join(rel))
            .unwrap()
            .contains("CUDA_VISIBLE_DEVICES")
    };
    for program in ["app.py", "webui.py"] {
        assert!(
            has_header(program),
            "{program}: {}{}",
            fix.stdout,
            fix.stderr
        );
    }
    for plugin in ["plugins/echo.py", "extensions/tts/script.py"] {
        assert!(
            !has_header(plugin),
            "{plugin}: {}{}",
            fix.stdout,
            fix.stderr
        );
    }
}

/// From a trial on sahi: a module loaded by name inside a function (`import_model_class(kind)`
/// does `__import__(f"sahi.models.{kind}")`) runs when that function does, not whenever its
/// loader is imported: the dataset converters and the tests that import `sahi.utils.file` for
/// its path helpers reached every model's GPU code, got the header and were held by GH006.
#[test]
fn a_module_a_function_loads_by_name_runs_when_that_function_does() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/file.py",
        "def increment_path(p):\n    return p + \"2\"\n\n\ndef import_model_class(kind, name):\n    module = __import__(f\"pkg.models.{kind}\", fromlist=[name])\n    return getattr(module, name)\n",
    );
    write(root, "pkg/models/__init__.py", "");
    write(
        root,
        "pkg/models/yolo.py",
        "import torch\n\n\nclass Yolo:\n    def __init__(self):\n        self.w = torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "convert.py",
        "from pkg.file import increment_path\n\nif __name__ == \"__main__\":\n    print(increment_path(\"runs/exp\"))\n",
    );
    write(
        root,
        "predict.py",
        "from pkg.file import import_model_class\n\nif __name__ == \"__main__\":\n    print(import_model_class(\"yolo\", \"Yolo\")().w)\n",
    );
    let status = status_of(root);
    assert_eq!(status["convert.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["predict.py"], "non_compliant", "{status:?}");
}

/// A module imported inside a function runs only when that function does: a CLI client that
/// names a package's client class (exported lazily by the package's `__getattr__`, RealtimeSTT's
/// pattern) does not run the package's GPU recorder module.
#[test]
fn a_module_imported_in_a_function_runs_when_the_function_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pkg/__init__.py", "def __getattr__(name):\n    if name == \"Client\":\n        from .client import Client\n\n        return Client\n    if name == \"Recorder\":\n        from .recorder import Recorder\n\n        return Recorder\n    raise AttributeError(name)\n");
    write(
        root,
        "pkg/client.py",
        "import json\n\n\nclass Client:\n    def send(self, x):\n        return json.dumps(x)\n",
    );
    write(
        root,
        "pkg/recorder.py",
        "import torch\n\nMODEL = torch.nn.Linear(2, 2).cuda()\n\n\nclass Recorder:\n    pass\n",
    );
    write(root, "lazy.py", "def later():\n    import pkg.recorder\n\n    return pkg.recorder.Recorder()\n\n\ndef now():\n    return 1\n");
    let main = |body: &str| format!("{body}\n\nif __name__ == \"__main__\":\n    main()\n");
    write(
        root,
        "cli_client.py",
        &main("from pkg import Client\n\n\ndef main():\n    print(Client().send(1))"),
    );
    write(
        root,
        "record.py",
        &main("from pkg import Recorder\n\n\ndef main():\n    Recorder()"),
    );
    write(
        root,
        "quick.py",
        &main("from lazy import now\n\n\ndef main():\n    print(now())"),
    );
    write(
        root,
        "slow.py",
        &main("from lazy import later\n\n\ndef main():\n    later()"),
    );
    let status = status_of(root);
    for program in ["record.py", "slow.py"] {
        assert_eq!(status[program], "non_compliant", "{program}: {status:?}");
    }
    for program in ["cli_client.py", "quick.py"] {
        assert_eq!(status[program], "no_gpu_code", "{program}: {status:?}");
    }
}

/// From the trial (whisper-ctranslate2): a leftover module with relative imports that nothing
/// imports is no script (`python live_old.py` fails on its first import): no header.
#[test]
fn a_file_with_relative_imports_is_no_standalone_script() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "app/transcribe.py",
        "import torch\n\nMODEL = torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "app/live_old.py",
        "from .transcribe import MODEL\n\nprint(MODEL)\n",
    );
    write(
        root,
        "app/live.py",
        "from .transcribe import MODEL\n\nif __name__ == \"__main__\":\n    print(MODEL)\n",
    );
    let status = status_of(root);
    assert_eq!(status["app/live.py"], "non_compliant", "{status:?}");
    assert_ne!(status["app/live_old.py"], "non_compliant", "{status:?}");
}

/// What setuptools ships decides what is a module of an installable package: a web UI next
/// to the one package a `setup.py` names, a `tests` package `find_packages` excludes and a
/// folder `[tool.setuptools.packages.find]` does not include are programs (they get the
/// header); a module of a shipped package is both, and its GH205 names the setting.
#[test]
fn setuptools_package_discovery_decides_what_an_installable_package_ships() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let gpu_main = "import torch\n\n\ndef main():\n    print(torch.zeros(1).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(
        root,
        "named/setup.py",
        "from setuptools import setup\n\nsetup(name=\"core\", packages=[\"core\"])\n",
    );
    for pkg in [
        "named/core",
        "named/webui",
        "found/app",
        "found/tests",
        "toml/pkg",
        "toml/tools",
    ] {
        write(root, &format!("{pkg}/__init__.py"), "");
    }
    write(root, "named/core/cli.py", gpu_main);
    write(root, "named/webui/app.py", gpu_main);
    write(
        root,
        "found/setup.py",
        "import setuptools\n\nsetuptools.setup(\n    name=\"app\",\n    packages=setuptools.find_packages(exclude=[\"tests\", \"tests.*\"]),\n)\n",
    );
    write(root, "found/app/serve.py", gpu_main);
    write(root, "found/tests/bench.py", gpu_main);
    write(
        root,
        "toml/pyproject.toml",
        "[project]\nname = \"pkg\"\n\n[tool.setuptools.packages.find]\ninclude = [\"pkg*\"]\n",
    );
    write(root, "toml/pkg/run.py", gpu_main);
    write(root, "toml/tools/train.py", gpu_main);
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let file = |path: &str| {
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("{path}: {}", out.stdout))
    };
    for program in [
        "named/webui/app.py",
        "found/tests/bench.py",
        "toml/tools/train.py",
    ] {
        let f = file(program);
        assert_eq!(f["status"], "non_compliant", "{program}: {f}");
        assert!(
            f["evidence"].as_str().unwrap().starts_with("program:"),
            "{program}: {f}"
        );
    }
    for (library, setting) in [
        ("named/core/cli.py", "`named/setup.py` (`packages=[\"core\"]`)"),
        (
            "found/app/serve.py",
            "`found/setup.py` (`packages=setuptools.find_packages(exclude=[\"tests\", \"tests.*\"])`)",
        ),
        (
            "toml/pkg/run.py",
            "`toml/pyproject.toml` (`[tool.setuptools.packages.find]`)",
        ),
    ] {
        let f = file(library);
        // Its `__main__` block can take the env (GH206): the library's reason is the same.
        assert_eq!(f["status"], "non_compliant", "{library}: {f}");
        let message = f["findings"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(setting), "{library}: {message}");
        assert!(
            f["evidence"].as_str().unwrap().contains(setting),
            "{library}: {f}"
        );
    }
}

/// A command in the tree that runs a file makes it a program, whatever its folder: a module
/// of a package with no `__main__` block that a shell script starts under `torchrun`, one a
/// README runs with `python -m`, one a Dockerfile's `CMD` runs by its path in the container.
/// The evidence names the file and line; a command asking for more cards than the policy
/// allows (`--nproc_per_node 2`, `CUDA_VISIBLE_DEVICES=0,1`) is GH203 in the program it starts.
#[test]
fn a_command_in_the_tree_that_runs_a_file_makes_it_a_program() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    let gpu = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\nprint(model(torch.zeros(1, 2).cuda()))\n";
    for pkg in ["train", "tools", "serve"] {
        write(root, &format!("{pkg}/__init__.py"), "");
    }
    write(root, "train/main.py", gpu);
    write(root, "tools/demo.py", gpu);
    write(root, "serve/web.py", gpu);
    write(root, "tools/unused.py", gpu);
    write(
        root,
        "scripts/train.sh",
        "#!/bin/sh\nset -e\nCUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 \\\n    train/main.py --epochs 3\n",
    );
    write(
        root,
        "README.md",
        "# Demo\n\nRun the demo:\n\n```bash\n$ python -m tools.demo\n```\n",
    );
    write(
        root,
        "Dockerfile",
        "FROM python:3.11\nCOPY . /app\nWORKDIR /app\nCMD [\"python\", \"/app/serve/web.py\"]\n",
    );
    // A workflow that links out of the tree is never read (a warning names it).
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("ci.yml"),
        "steps:\n  - run: python tools/unused.py\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        outside.path().join("ci.yml"),
        root.join(".github/workflows/ci.yml"),
    )
    .unwrap();
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    #[cfg(unix)]
    assert!(
        out.stderr.contains(".github/workflows/ci.yml") && out.stderr.contains("symbolic link"),
        "{}",
        out.stderr
    );
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let file = |path: &str| {
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("{path}: {}", out.stdout))
    };
    for (program, by) in [
        ("train/main.py", "(scripts/train.sh, line 3)"),
        (
            "tools/demo.py",
            "the command `$ python -m tools.demo` (README.md, line 6)",
        ),
        ("serve/web.py", "(Dockerfile, line 4)"),
    ] {
        let f = file(program);
        let evidence = f["evidence"].as_str().unwrap();
        assert!(
            evidence.starts_with("program:") && evidence.contains(by),
            "{program}: {f}"
        );
        assert_eq!(f["status"], "non_compliant", "{program}: {f}");
    }
    let train = file("train/main.py");
    let codes: Vec<&str> = train["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(codes.contains(&"GH203"), "{train}");
    assert!(
        file("tools/unused.py")["evidence"]
            .as_str()
            .unwrap()
            .starts_with("library"),
        "{}",
        out.stdout
    );
    // The README's and the Dockerfile's programs get the header; the one whose command asks
    // for two cards is left as written until the command changes.
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache"]));
    let text = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    assert!(text("tools/demo.py").contains("CUDA_VISIBLE_DEVICES"));
    assert!(text("serve/web.py").contains("CUDA_VISIBLE_DEVICES"));
    assert_eq!(text("train/main.py"), gpu);
    assert!(!text("tools/unused.py").contains("CUDA_VISIBLE_DEVICES"));
}

/// GH205 says why a program is a library, truly: the importer and the line of its import, or
/// the loader and how it loads the module by name.
#[test]
fn a_program_that_is_a_library_says_which_import_or_load_makes_it_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let gpu_main = "import torch\n\n\ndef main():\n    print(torch.zeros(1).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(
        root,
        "app/__init__.py",
        "\"\"\"The app.\"\"\"\nfrom . import cli\n",
    );
    write(root, "app/cli.py", gpu_main);
    write(root, "plugins/tool.py", gpu_main);
    write(
        root,
        "host.py",
        "import importlib\n\n\ndef load():\n    return importlib.import_module(\"plugins.tool\")\n\n\nif __name__ == \"__main__\":\n    load().main()\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let message = |path: &str| {
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .and_then(|f| {
                f["findings"]
                    .as_array()?
                    .iter()
                    .find(|x| x["rule"] == "GH205" || x["rule"] == "GH206")
                    .cloned()
            })
            .and_then(|x| x["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("{path}: {}", out.stdout))
    };
    let cli = message("app/cli.py");
    assert!(
        cli.contains("imported by `app/__init__.py` (line 2)"),
        "{cli}"
    );
    let tool = message("plugins/tool.py");
    assert!(
        tool.contains("loaded by name by `host.py` (`import_module(\"plugins.tool\")`)"),
        "{tool}"
    );
}

/// Issue 34: a finding is one line; the evidence holds the whole reason. A program that three
/// modules import says the first importer and how many more (demucs's `train.py` listed
/// three importers and "and 3 more" in each output); the JSON `evidence` lists them.
#[test]
fn gh205_names_the_first_importer_and_the_evidence_all_of_them() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "train.py", "import torch\n\n\ndef main():\n    return torch.zeros(1).cuda()\n\n\nif __name__ == \"__main__\":\n    main()\n");
    for name in ["a.py", "b.py", "c.py"] {
        write(
            root,
            name,
            "from train import main\n\nif __name__ == \"__main__\":\n    main()\n",
        );
    }
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let train = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "train.py")
        .unwrap();
    assert_eq!(
        train["findings"][0]["message"],
        "module runs as a program but is also a library: imported by `a.py` (line 1) and 2 more; its `__main__` block does not set the GPU env",
        "{}",
        out.stdout
    );
    let evidence = train["evidence"].as_str().unwrap();
    for importer in ["a.py", "b.py", "c.py"] {
        assert!(
            evidence.contains(&format!("imported by `{importer}` (line 1)")),
            "{evidence}"
        );
    }
}

/// From a trial on whisperx 3.8.6: its `__init__.py` loads submodules through a private helper,
/// `_lazy_import("asr")` → `import_module(f"whisperx.{name}")`, and the package's `__main__.py`
/// (the `whisperx` script) was taken for a module it may load, so left for review (GH205)
/// instead of getting its header. Every call of a private loader in its module passes a
/// literal: those are the modules it loads. A public loader (others may call it with any
/// name), or one called with a computed name, still loads any module under its prefix.
#[test]
fn a_private_loader_called_with_literals_loads_those_modules_only() {
    let loader = |name: &str, calls: &str| {
        format!("import importlib\n\n\ndef {name}(name):\n    return importlib.import_module(f\"pkg.{{name}}\")\n\n\ndef load_model(*args):\n    return {name}(\"asr\").load_model(*args)\n{calls}")
    };
    let main = "import argparse\n\nimport torch\n\n\ndef cli():\n    argparse.ArgumentParser().parse_args()\n    return torch.zeros(1).cuda()\n\n\nif __name__ == \"__main__\":\n    cli()\n";
    let asr = "import torch\n\n\ndef load_model():\n    return torch.nn.Linear(2, 2).cuda()\n";
    for (init, main_status) in [
        (loader("_lazy_import", ""), "non_compliant"),
        (
            loader(
                "_lazy_import",
                "\n\ndef other(n):\n    return _lazy_import(n)\n",
            ),
            "needs_review",
        ),
        (loader("lazy_import", ""), "needs_review"),
    ] {
        let dir = crate::common::tree();
        let root = dir.path();
        write(root, "pkg/__init__.py", &init);
        write(root, "pkg/__main__.py", main);
        write(root, "pkg/asr.py", asr);
        write(
            root,
            "pyproject.toml",
            "[project]\nname = \"pkg\"\n[project.scripts]\npkg = \"pkg.__main__:cli\"\n",
        );
        let status = status_of(root);
        assert_eq!(status["pkg/__main__.py"], main_status, "{init}");
        assert_eq!(status["pkg/asr.py"], "compliant", "{init}");
    }
}

/// From the trial (rvc-python): a README's `python -m pkg [-h] {cli,api}` runs the package's
/// `__main__.py`, never its `__init__.py`; a file outside any package that only defines
/// classes and functions (`lib/infer_pack/onnx_inference.py`, loaded by its library) is no
/// script: running it would do nothing, so it gets no header.
#[test]
fn a_package_run_with_dash_m_is_its_main_and_a_file_that_only_defines_is_no_script() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    write(
        root,
        "README.md",
        "Usage:\n\n```\npython -m rvc [-h] {cli,api} ...\n```\n",
    );
    write(root, "rvc/__init__.py", "from .infer import Infer\n");
    write(
        root,
        "rvc/infer.py",
        "import torch\n\n\nclass Infer:\n    def run(self):\n        return torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "rvc/__main__.py",
        "from rvc.infer import Infer\n\nInfer().run()\n",
    );
    write(
        root,
        "lib/onnx_inference.py",
        "\"\"\"ONNX inference.\"\"\"\nimport onnxruntime\n\nPROVIDERS = [\"CUDAExecutionProvider\"]\n\n\nclass Model:\n    def __init__(self, path):\n        self.session = onnxruntime.InferenceSession(path, providers=PROVIDERS)\n",
    );
    write(
        root,
        "tools/warm.py",
        "import torch\n\nBUFFER = torch.zeros(1).cuda()\n\n\ndef size():\n    return BUFFER.numel()\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let evidence = |path: &str| {
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .and_then(|f| f["evidence"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        evidence("rvc/__main__.py").starts_with("program"),
        "{}",
        out.stdout
    );
    assert!(
        !evidence("rvc/__init__.py").starts_with("program"),
        "{}",
        out.stdout
    );
    assert!(
        !evidence("lib/onnx_inference.py").starts_with("program"),
        "{}",
        out.stdout
    );
    // The evidence says how the program reaches GPU code: entry, module, the class it uses.
    assert!(
        evidence("rvc/__main__.py").ends_with(
            "its process reaches GPU code: `rvc/__main__.py` → `rvc/infer.py` (`Infer`)"
        ),
        "{}",
        evidence("rvc/__main__.py")
    );
    // A file that defines and also takes a card when run is a script all the same.
    assert_eq!(
        evidence("tools/warm.py"),
        "program: a script no module imports; its process reaches GPU code: `tools/warm.py`",
        "{}",
        out.stdout
    );
}

/// From the trial (whisperlivekit): `pkg/test_harness.py` defines `class TestHarness` with an
/// `__init__` (pytest collects no such class) and the package imports it: a library module,
/// never a test file with a header.
#[test]
fn a_test_named_helper_with_an_init_is_library_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    write(
        root,
        "pkg/__init__.py",
        "from .test_harness import TestHarness\n",
    );
    write(
        root,
        "pkg/test_harness.py",
        "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\nclass TestState:\n    n: int = 0\n\n\nclass TestHarness:\n    def __init__(self):\n        self.x = torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "run.py",
        "from pkg import TestHarness\n\nif __name__ == \"__main__\":\n    TestHarness()\n",
    );
    let status = status_of(root);
    assert_eq!(status["run.py"], "non_compliant", "{status:?}");
    assert_ne!(status["pkg/test_harness.py"], "non_compliant", "{status:?}");
}

/// From a trial (f5-tts 1.1.22): a framework that takes a GPU unasked (accelerate) takes it where
/// its names are used, not where a library module imports it. `tools/count.py` imports the
/// package's `count` helper from the module whose `Trainer` builds an `Accelerator`: it runs on
/// the CPU and gets no header; `tools/fit.py` builds the `Trainer` and is a GPU program, its
/// evidence naming the chain to the class.
#[test]
fn a_framework_imported_by_a_library_takes_a_gpu_only_where_its_names_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/train.py",
        "from accelerate import Accelerator\n\n\nclass Trainer:\n    def __init__(self):\n        self.acc = Accelerator()\n\n\ndef count(model):\n    return sum(p.numel() for p in model.parameters())\n",
    );
    write(
        root,
        "tools/count.py",
        "import torch\n\nfrom pkg.train import count\n\nprint(count(torch.nn.Linear(2, 2)))\n",
    );
    write(
        root,
        "tools/fit.py",
        "from pkg.train import Trainer\n\nTrainer()\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let file = |path: &str| {
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        file("tools/count.py")["evidence"],
        "program: a script no module imports; its process reaches no GPU code",
        "{}",
        out.stdout
    );
    assert_eq!(file("tools/count.py")["status"], "no_gpu_code");
    assert_eq!(
        file("tools/fit.py")["evidence"],
        "program: a script no module imports; its process reaches GPU code: `tools/fit.py` → `pkg/train.py` (`Trainer`)",
        "{}",
        out.stdout
    );
    assert_eq!(file("tools/fit.py")["status"], "non_compliant");
}

/// From a trial on funasr (its tests build ModelScope pipelines), coqui-tts (its recipes train
/// through coqui's `trainer`), rl-zoo3 (Stable-Baselines3) and a probe on faster-whisper:
/// - ModelScope's `pipeline(task, model)` runs on its default `device="gpu"`: the seven test
///   files that build one were "without GPU code"; its hub's downloads touch no card.
/// - A program whose only GPU framework is asked for the CPU where it is used
///   (`WhisperModel("small", device="cpu")`) reaches no card: the index said so, and the
///   file still got the header for importing the framework.
#[test]
fn a_framework_that_takes_a_gpu_unasked_takes_it_where_used_unless_told_the_cpu() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "test_asr.py",
        "from modelscope.pipelines import pipeline\n\n\ndef test_asr():\n    asr = pipeline(task=\"auto-speech-recognition\", model=\"damo/paraformer\")\n    assert asr(\"a.wav\")\n",
    );
    write(
        root,
        "test_asr_cpu.py",
        "from modelscope.pipelines import pipeline\n\n\ndef test_asr():\n    asr = pipeline(task=\"auto-speech-recognition\", model=\"damo/paraformer\", device=\"cpu\")\n    assert asr(\"a.wav\")\n",
    );
    write(
        root,
        "fetch.py",
        "from modelscope.hub.snapshot_download import snapshot_download\n\nif __name__ == \"__main__\":\n    print(snapshot_download(\"damo/paraformer\"))\n",
    );
    let transcribe = "from faster_whisper import WhisperModel\n\nif __name__ == \"__main__\":\n    model = WhisperModel(\"small\", device=\"cpu\")\n    print(model.transcribe(\"a.wav\"))\n";
    write(root, "transcribe.py", transcribe);
    // coqui's trainer (trial: twelve coqui-tts vocoder recipes were "without GPU code"):
    // `Trainer(…).fit()` puts the model on the card; its config class does not.
    write(
        root,
        "train_vocoder.py",
        "from trainer import Trainer, TrainerArgs\n\n\ndef main(model, config):\n    Trainer(TrainerArgs(), config, \"out\", model=model).fit()\n\n\nif __name__ == \"__main__\":\n    main(None, None)\n",
    );
    write(
        root,
        "make_config.py",
        "from trainer import TrainerConfig\n\nif __name__ == \"__main__\":\n    print(TrainerConfig())\n",
    );
    // Stable-Baselines3 (trial: rl-zoo3's train/enjoy scripts were "without GPU code"): an
    // algorithm takes `device="auto"`, CUDA when a card is visible; its environment helpers
    // touch none, and an algorithm told the CPU takes none.
    write(
        root,
        "train_ppo.py",
        "from stable_baselines3 import PPO\n\nif __name__ == \"__main__\":\n    model = PPO(\"MlpPolicy\", \"CartPole-v1\")\n    model.learn(1000)\n",
    );
    write(
        root,
        "train_ppo_cpu.py",
        "from stable_baselines3 import PPO\n\nif __name__ == \"__main__\":\n    model = PPO(\"MlpPolicy\", \"CartPole-v1\", device=\"cpu\")\n    model.learn(1000)\n",
    );
    write(
        root,
        "make_envs.py",
        "from stable_baselines3.common.env_util import make_vec_env\n\nif __name__ == \"__main__\":\n    print(make_vec_env(\"CartPole-v1\"))\n",
    );
    let status = status_of(root);
    assert_eq!(status["train_ppo.py"], "non_compliant", "{status:?}");
    assert_eq!(status["train_ppo_cpu.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["make_envs.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["train_vocoder.py"], "non_compliant", "{status:?}");
    assert_eq!(status["make_config.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["test_asr.py"], "non_compliant", "{status:?}");
    assert_eq!(status["test_asr_cpu.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["fetch.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["transcribe.py"], "no_gpu_code", "{status:?}");
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(
        std::fs::read_to_string(root.join("transcribe.py")).unwrap(),
        transcribe
    );
}

/// From a trial on openai-whisper's own sdist: its tests import the package `whisper` the tree
/// ships, which shares the name of a framework that takes a GPU unasked; the tests of its text
/// normalizer and tokenizer got headers as if they loaded a model. A package a project ships is
/// the project's code for the project's files: followed like any module of the tree. A copy
/// that no project ships (a folder of stubs) is not what an import finds.
#[test]
fn a_package_the_project_ships_under_a_frameworks_name_is_its_own_code() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "setup.py",
        "from setuptools import setup, find_packages\n\nsetup(name=\"openai-whisper\", packages=find_packages(exclude=[\"tests*\"]))\n",
    );
    write(
        root,
        "whisper/__init__.py",
        "import torch\n\n\ndef load_model(name):\n    return torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "whisper/normalizers.py",
        "def normalize(text):\n    return text.lower()\n",
    );
    write(
        root,
        "tests/test_normalizer.py",
        "from whisper.normalizers import normalize\n\n\ndef test_lower():\n    assert normalize(\"A\") == \"a\"\n",
    );
    write(
        root,
        "tests/test_model.py",
        "import whisper\n\n\ndef test_load():\n    assert whisper.load_model(\"tiny\") is not None\n",
    );
    let stubbed = crate::common::tree();
    write(
        stubbed.path(),
        "stubs/whisper/__init__.py",
        "def load_model(name):\n    return name\n",
    );
    write(
        stubbed.path(),
        "transcribe.py",
        "import whisper\n\nif __name__ == \"__main__\":\n    print(whisper.load_model(\"tiny\"))\n",
    );
    let status = status_of(root);
    assert_eq!(
        status["tests/test_normalizer.py"], "no_gpu_code",
        "{status:?}"
    );
    assert_eq!(status["tests/test_model.py"], "non_compliant", "{status:?}");
    let status = status_of(stubbed.path());
    assert_eq!(status["transcribe.py"], "non_compliant", "{status:?}");
}

/// From a trial on DeepFilterNet, tortoise-tts, pyannote and LLaMA-Factory: 61 modules that run
/// as programs (`python -m pkg.tool`) and ship in their package were left for review (GH205),
/// and stayed so when the user did what its help said (the env set at the start of the
/// `__main__` block). Only the program runs that block: the env there is its own, before CUDA
/// starts, unless the module's code at import (or what it imports) already runs GPU code, or
/// asks the driver for its cards (which reads the env once for the process).
#[test]
fn a_program_that_is_also_a_library_gets_the_env_in_its_main_block() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "setup.py",
        "from setuptools import setup\n\nsetup(name=\"pkg\", packages=[\"pkg\"])\n",
    );
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/export.py",
        "import torch\n\n\ndef export():\n    return torch.zeros(1).cuda()\n\n\nif __name__ == \"__main__\":\n    export()\n",
    );
    write(
        root,
        "pkg/models.py",
        "import torch\n\nMODEL = torch.nn.Linear(2, 2).cuda()\n",
    );
    let eager = "from pkg.models import MODEL\n\nif __name__ == \"__main__\":\n    print(MODEL)\n";
    write(root, "pkg/eager.py", eager);
    // A registry that loads a plugin by name in a function (DeepFilterNet's `df.model`): the
    // plugin's code runs at import only when code at import calls that function.
    write(
        root,
        "pkg/registry.py",
        "from importlib import import_module\n\n\ndef load(name):\n    return import_module(\"pkg.plugins.\" + name)\n",
    );
    write(root, "pkg/plugins/__init__.py", "");
    write(
        root,
        "pkg/plugins/big.py",
        "import torch\n\nWEIGHTS = torch.zeros(2).cuda()\n",
    );
    write(
        root,
        "pkg/tool.py",
        "from pkg.registry import load\n\nif __name__ == \"__main__\":\n    print(load(\"big\"))\n",
    );
    write(
        root,
        "pkg/kinds.py",
        "import enum\n\n\nclass DeviceType(str, enum.Enum):\n    CPU = \"cpu\"\n    CUDA = \"cuda\"\n",
    );
    write(
        root,
        "pkg/kinds_tool.py",
        "import torch\n\nfrom pkg.kinds import DeviceType\n\nPROVIDERS = [\"CUDAExecutionProvider\", \"CPUExecutionProvider\"]\nDEFAULT = DeviceType.CUDA\n\nif __name__ == \"__main__\":\n    print(torch.zeros(1).to(DEFAULT.value), PROVIDERS)\n",
    );
    write(
        root,
        "pkg/eager_tool.py",
        "from pkg.registry import load\n\nPLUGIN = load(\"big\")\n\nif __name__ == \"__main__\":\n    print(PLUGIN)\n",
    );
    // Asking CUDA at import whether it is there (coqui-tts' `extract_tts_spectrograms.py`)
    // makes the driver read the env then: an env set in the block would come too late.
    write(
        root,
        "pkg/query.py",
        "import torch\n\nuse_cuda = torch.cuda.is_available()\n\n\ndef main():\n    x = torch.zeros(3)\n    if use_cuda:\n        x = x.cuda()\n    print(x)\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    // A block that runs none of the module's GPU code (melotts' `chinese_bert.py` prints a
    // demo of its text functions) is a program with no GPU: no env in it.
    write(
        root,
        "pkg/bert.py",
        "import torch\n\n\ndef feature(x, device=None):\n    return torch.tensor(x).to(device or \"cuda\")\n\n\nif __name__ == \"__main__\":\n    print(torch.rand(4, 8).repeat(2, 1).shape)\n",
    );
    write(
        root,
        "pkg/text.py",
        "from pkg.bert import feature\n\nFEATURES = [feature]\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let bert = file_in(&report, "pkg/bert.py");
    assert_eq!(bert["status"], "compliant", "{bert}");
    assert_eq!(bert["findings"].as_array().unwrap().len(), 0, "{bert}");
    let query = file_in(&report, "pkg/query.py");
    assert_eq!(query["status"], "needs_review", "{query}");
    assert!(
        query["findings"][0]["help"]
            .as_str()
            .unwrap()
            .contains("its code at import reaches CUDA before the `__main__` block (`pkg/query.py` (at import))"),
        "{query}"
    );
    let export = file_in(&report, "pkg/export.py");
    assert_eq!(export["status"], "non_compliant", "{export}");
    assert_eq!(export["findings"][0]["rule"], "GH206", "{export}");
    assert_eq!(
        file_in(&report, "pkg/tool.py")["findings"][0]["rule"],
        "GH206",
        "{}",
        out.stdout
    );
    // Constants that name a device, read at import (LLaMA-Factory's `DeviceType` enum,
    // DeepFilterNet's provider lists), start nothing on a card.
    assert_eq!(
        file_in(&report, "pkg/kinds_tool.py")["findings"][0]["rule"],
        "GH206",
        "{}",
        out.stdout
    );
    assert_eq!(
        file_in(&report, "pkg/eager_tool.py")["findings"][0]["rule"],
        "GH205",
        "{}",
        out.stdout
    );
    let early = file_in(&report, "pkg/eager.py");
    assert_eq!(early["status"], "needs_review", "{early}");
    assert_eq!(early["findings"][0]["rule"], "GH205", "{early}");
    assert!(
        early["findings"][0]["help"]
            .as_str()
            .unwrap()
            .contains("its code at import reaches CUDA before the `__main__` block (`pkg/eager.py` → `pkg/models.py` (at import))"),
        "{early}"
    );
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    let fixed = std::fs::read_to_string(root.join("pkg/export.py")).unwrap();
    assert!(
        fixed.starts_with("import torch\n\n\ndef export():"),
        "no header at its top: {fixed}"
    );
    assert!(
        fixed.contains("if __name__ == \"__main__\":\n    import os\n\n    # GPU selection"),
        "{fixed}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/eager.py")).unwrap(),
        eager
    );
    let status = status_of(root);
    assert_eq!(status["pkg/export.py"], "compliant", "{status:?}");
    // A mission phase that names it asks for no header at its top as well.
    write(
        root,
        "gpu-homogenize.toml",
        "[[phase]]\nname = \"Tools\"\nfiles = [\"pkg/export.py\", \"pkg/query.py\", \"pkg/ordered.py\"]\n",
    );
    // Nor at the top of one whose env cannot go in its block, whether it writes a GPU
    // variable at import already or not (whisper-timestamped's `transcribe.py`, named by the
    // phase `init` proposed, got the whole header at its top): both stay as they are, for
    // review, with no header finding of their own.
    let ordered = "import os\n\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"PCI_BUS_ID\"\n\nimport torch\n\n\ndef run(x):\n    return torch.tensor(x).cuda()\n\n\nif __name__ == \"__main__\":\n    print(run([1.0]))\n";
    write(root, "pkg/ordered.py", ordered);
    write(
        root,
        "pkg/uses.py",
        "from pkg.ordered import run\n\nRUN = run\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(file_in(&report, "pkg/export.py")["status"], "compliant");
    for rel in ["pkg/query.py", "pkg/ordered.py"] {
        let file = file_in(&report, rel);
        let rules: Vec<&str> = file["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["rule"].as_str())
            .collect();
        assert!(
            rules.contains(&"GH205") && !rules.iter().any(|r| ["GH001", "GH002"].contains(r)),
            "{rel}: {rules:?}"
        );
    }
    let query = std::fs::read_to_string(root.join("pkg/query.py")).unwrap();
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/ordered.py")).unwrap(),
        ordered
    );
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/export.py")).unwrap(),
        fixed
    );
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/query.py")).unwrap(),
        query
    );
}

/// From a trial on funasr and kokoro: scripts that never touch a card got the header.
/// - An import that is itself GPU code touches no card: the names it binds do, where they are
///   used. A program that imports the module for another function reaches no GPU code through
///   it; nor does one that asks `torch.distributed` for its rank (trial: nerfstudio).
/// - A function defined in a module-level `if`/`try` (a compatibility shim) runs when it is
///   called, like one at the top; the condition runs at import.
/// - A call that names the CPU as its device (`Model(device="cpu")`, `use_gpu=False`) runs
///   nothing on a card through the callee.
#[test]
fn an_import_counts_where_its_names_are_used_and_a_call_naming_the_cpu_reaches_no_card() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/dist.py",
        "import torch\nimport torch.distributed as dist\n\n\ndef rank():\n    return dist.get_rank()\n\n\ndef load(x):\n    return torch.as_tensor(x)\n",
    );
    write(
        root,
        "pkg/amp.py",
        "import torch\n\nif hasattr(torch, \"amp\"):\n\n    def autocast(enabled=True):\n        return torch.amp.autocast(\"cuda\", enabled=enabled)\n\nelse:\n    from torch.cuda.amp import autocast\n\n\ndef scale(x):\n    return x * 2\n",
    );
    write(
        root,
        "pkg/model.py",
        "import torch\n\n\nclass Model:\n    def __init__(self, device=None, use_gpu=True):\n        self.device = device or (\"cuda\" if torch.cuda.is_available() else \"cpu\")\n",
    );
    let script = |body: &str| format!("{body}\n\nif __name__ == \"__main__\":\n    main()\n");
    write(
        root,
        "load_only.py",
        &script("from pkg.amp import scale\nfrom pkg.dist import load\n\n\ndef main():\n    print(load([1]), scale(2))"),
    );
    write(
        root,
        "ranks.py",
        &script("from pkg.dist import rank\n\n\ndef main():\n    print(rank())"),
    );
    write(
        root,
        "mixed.py",
        &script(
            "from pkg.amp import autocast\n\n\ndef main():\n    with autocast():\n        pass",
        ),
    );
    write(
        root,
        "on_cpu.py",
        &script("from pkg.model import Model\n\n\ndef main():\n    Model(device=\"cpu\")\n    Model(use_gpu=False)"),
    );
    write(
        root,
        "auto.py",
        &script("from pkg.model import Model\n\n\ndef main():\n    Model()"),
    );
    let status = status_of(root);
    assert_eq!(status["load_only.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["on_cpu.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["ranks.py"], "no_gpu_code", "{status:?}");
    for program in ["mixed.py", "auto.py"] {
        assert_eq!(status[program], "non_compliant", "{program}: {status:?}");
    }
}

/// From a trial on f5-tts: `accelerate launch train.py` in a README, with no `--num_processes`
/// and no config file, starts one process per card the launcher sees (two on the mission's
/// machine): rank 1 would get an invalid ordinal under the header. The program is GH203 on
/// that command and left as written; the same program documented with `--num_processes 1`
/// gets its header.
#[test]
fn a_launcher_that_starts_a_process_per_visible_card_is_more_cards_than_the_policy() {
    let dir = crate::common::tree();
    let root = dir.path();
    let train = "import torch\nfrom accelerate import Accelerator\n\n\ndef main():\n    model = Accelerator().prepare(torch.nn.Linear(4, 4))\n    print(model)\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(root, "train.py", train);
    write(root, "tune.py", train);
    write(
        root,
        "README.md",
        "```bash\naccelerate launch train.py\naccelerate launch --num_processes 1 tune.py\n```\n",
    );
    let report = fix_report(root);
    let f = file_in(&report, "train.py");
    assert_eq!(f["status"], "non_compliant", "{f}");
    let gh203 = f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["rule"] == "GH203")
        .expect("GH203");
    assert_eq!(
        gh203["message"],
        "started by `accelerate launch train.py` (README.md, line 2), which asks for every visible card (`accelerate launch` without `--num_processes`); mask '1' allows 1"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("train.py")).unwrap(),
        train
    );
    assert_eq!(file_in(&report, "tune.py")["status"], "fixed");
}

/// From a trial on demucs: `tools/bench.py`, beside a `tools/__init__.py`, has no `__main__`
/// block and reads `sys.argv` as it runs its benchmark on the GPU; nothing imports it. It was
/// "library: no program of this tree imports or loads it" and compliant, with no header: a
/// module that reads its command line at module level is a script. A package module that
/// only keeps `sys.argv` in a name, or acts without reading it, stays library code.
#[test]
fn a_package_module_that_reads_its_command_line_as_it_runs_is_a_program() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "tools/__init__.py", "");
    write(
        root,
        "tools/bench.py",
        "import sys\n\nimport torch\n\nmodel = torch.nn.Linear(8, 8).cuda()\nprint(sys.argv[1], model(torch.randn(2, 8, device=\"cuda\")).sum().item())\n",
    );
    write(
        root,
        "tools/keep.py",
        "import sys\n\nimport torch\n\nARGS = sys.argv\n\n\ndef run():\n    return torch.zeros(1).cuda()\n",
    );
    let status = status_of(root);
    assert_eq!(status["tools/bench.py"], "non_compliant", "{status:?}");
    assert_eq!(status["tools/keep.py"], "compliant", "{status:?}");
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let bench = std::fs::read_to_string(root.join("tools/bench.py")).unwrap();
    assert!(
        bench.contains("os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\""),
        "{bench}"
    );
}

/// From a trial on demucs: a program that reads an attribute of a library's function
/// (`lib.main.describe()`, `train.main.get_xp(argv)`) does not run the function: its GPU code
/// is not the program's, and a script with no other GPU reach gets no header. Calling it, or
/// running it through a task wrapper (`lib.main.remote()`), does. Nor does importing a module
/// run its `@hydra.main` or `@click.command()` function (demucs's `train.main`).
#[test]
fn reading_an_attribute_of_a_function_does_not_run_it() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "lib.py",
        "import torch\n\n\ndef main():\n    torch.zeros(1).cuda()\n\n\nmain.describe = lambda: \"entry point\"\n\n\ndef get_model():\n    return torch.nn.Linear(2, 2)\n",
    );
    write(
        root,
        "prog.py",
        "import lib\n\nif __name__ == \"__main__\":\n    print(lib.main.describe(), lib.get_model())\n",
    );
    write(
        root,
        "task.py",
        "from lib import main\n\nif __name__ == \"__main__\":\n    main.remote()\n",
    );
    // A command-line entry point made of a function (`@hydra.main(…)`, `@click.command()`)
    // runs when it is called, not when its module is imported.
    write(
        root,
        "train.py",
        "import click\nimport hydra\nimport torch\n\n\n@hydra.main(config_path=\"conf\")\ndef main(cfg):\n    torch.zeros(1).cuda()\n\n\n@click.command()\n@click.option(\"--n\")\ndef cli(n):\n    torch.zeros(1).cuda()\n\n\ndef describe():\n    return \"trainer\"\n",
    );
    write(
        root,
        "info.py",
        "from train import describe\n\nif __name__ == \"__main__\":\n    print(describe())\n",
    );
    let status = status_of(root);
    assert_eq!(status["prog.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["task.py"], "non_compliant", "{status:?}");
    assert_eq!(status["info.py"], "no_gpu_code", "{status:?}");
}

/// From a trial on f5-tts: an evaluation program starts a pool of workers, and each worker,
/// in a helper module, takes `cuda:{rank}`. The helper was GH204, but the program got the
/// header and was called compliant: under it ranks 1 to 7 get an invalid ordinal. A program
/// whose process runs another module's code that needs several cards is judged as that code
/// is (GH204 here, GH203 for indices used together), and left as written; so is one that
/// calls a helper which starts the workers itself (`launch()` of a module that runs
/// `mp.spawn(worker, nprocs=num_gpus)` with `num_gpus=2` by default, each worker on
/// `cuda:{rank}`: it was compliant). A program that starts no worker process runs such a
/// rank-derived card as rank 0, and a test session runs each test apart: both keep their
/// header.
#[test]
fn a_program_whose_workers_take_their_card_from_their_rank_is_left_as_written() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "worker.py",
        "import torch\n\n\ndef run(rank):\n    return torch.ones(1).cuda(f\"cuda:{rank}\").item()\n\n\ndef pair():\n    a = torch.zeros(1, device=\"cuda:0\")\n    b = torch.zeros(1, device=\"cuda:1\")\n    return a, b\n",
    );
    let pool = "import multiprocessing as mp\n\nfrom worker import run\n\nif __name__ == \"__main__\":\n    with mp.Pool(8) as pool:\n        print(pool.map(run, range(8)))\n";
    write(root, "evalall.py", pool);
    let both = "from worker import pair\n\nif __name__ == \"__main__\":\n    print(pair())\n";
    write(root, "both.py", both);
    write(
        root,
        "single.py",
        "from worker import run\n\nif __name__ == \"__main__\":\n    print(run(0))\n",
    );
    write(
        root,
        "spawner.py",
        "import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank):\n    torch.cuda.set_device(rank)\n\n\ndef launch(num_gpus=2):\n    mp.spawn(worker, nprocs=num_gpus)\n",
    );
    let launcher = "from spawner import launch\n\nif __name__ == \"__main__\":\n    launch()\n";
    write(root, "launcher.py", launcher);
    let report = fix_report(root);
    let rules = |rel: &str| -> Vec<String> {
        file_in(&report, rel)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(file_in(&report, "evalall.py")["status"], "non_compliant");
    assert!(
        rules("evalall.py").contains(&"GH204".to_string()),
        "{:?}",
        rules("evalall.py")
    );
    assert_eq!(
        std::fs::read_to_string(root.join("evalall.py")).unwrap(),
        pool
    );
    assert_eq!(file_in(&report, "both.py")["status"], "non_compliant");
    assert!(
        rules("both.py").contains(&"GH203".to_string()),
        "{:?}",
        rules("both.py")
    );
    assert_eq!(std::fs::read_to_string(root.join("both.py")).unwrap(), both);
    assert_eq!(file_in(&report, "launcher.py")["status"], "non_compliant");
    assert!(
        rules("launcher.py").contains(&"GH204".to_string()),
        "{:?}",
        rules("launcher.py")
    );
    assert_eq!(
        std::fs::read_to_string(root.join("launcher.py")).unwrap(),
        launcher
    );
    assert_eq!(file_in(&report, "single.py")["status"], "fixed");
}

/// `scan --verbose` says, file by file, why a Python file is a program or a library and how a
/// program reaches GPU code: the JSON's `evidence`, as text after the findings.
#[test]
fn scan_verbose_gives_each_files_evidence_as_text() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "model.py",
        "import torch\n\n\ndef load():\n    return torch.nn.Linear(2, 2).cuda()\n",
    );
    write(
        root,
        "app.py",
        "from model import load\n\nif __name__ == \"__main__\":\n    print(load())\n",
    );
    let out = run(gh(root).args(["scan", "--verbose", "."]));
    let text = crate::common::unix_locations(&out.stdout);
    assert!(
        text.contains("Why each file is what it is:\n- app.py (non_compliant): program: an `if __name__ == \"__main__\"` block; its process reaches GPU code: `app.py` → `model.py` (`load`)\n- model.py (compliant): library: runs in the process of `app.py` (imported, or loaded by name)\n"),
        "{text}"
    );
    let json = run(gh(root).args(["scan", "--verbose", "--format", "json", "."]));
    assert_eq!(json.code, 2, "{}", json.stderr);
}

/// A program that starts a GPU program as its child (trial: trl's `vllm_serve.py` `os.execve`s
/// `python -m vllm.entrypoints.cli.main serve …`, and was "without GPU code") uses a GPU
/// through it: the child inherits its env, so it carries the header like any GPU program. A
/// child that is no GPU program (`pip`, `ls`, `ps` filtered by the word "cuda") is no GPU use.
#[test]
fn a_program_that_starts_a_gpu_program_as_its_child_is_a_gpu_program() {
    let dir = crate::common::tree();
    let root = dir.path();
    let gpu = [
        ("execve.py", "import os\nimport sys\n\nif __name__ == \"__main__\":\n    os.execve(sys.executable, [sys.executable, \"-m\", \"vllm.entrypoints.cli.main\", \"serve\", \"m\"], os.environ)\n"),
        ("run.py", "import subprocess\n\nif __name__ == \"__main__\":\n    subprocess.run([\"torchrun\", \"--nproc_per_node\", \"1\", \"train.py\"])\n"),
        ("system.py", "import os\n\nif __name__ == \"__main__\":\n    os.system(\"accelerate launch --num_processes 1 train.py\")\n"),
        ("shell.py", "import subprocess\n\nMODEL = \"m\"\n\nif __name__ == \"__main__\":\n    subprocess.run(f\"vllm serve {MODEL}\", shell=True)\n"),
    ];
    let cpu = [
        ("pip.py", "import subprocess\nimport sys\n\nif __name__ == \"__main__\":\n    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"torch\"])\n"),
        ("ls.py", "import os\n\nif __name__ == \"__main__\":\n    os.system(\"ls -m vllm\")\n"),
        // A word list written in place, only compared (trial: sglang's `killall.py` filters
        // `ps` output by `["sglang", "python", "cuda", "gpu"]`): no GPU use.
        ("killall.py", "import subprocess\n\n\ndef main():\n    out = subprocess.run([\"ps\", \"aux\"], capture_output=True, text=True).stdout\n    for line in out.splitlines():\n        if any(k in line.lower() for k in [\"python\", \"cuda\"]):\n            print(line)\n\n\nif __name__ == \"__main__\":\n    main()\n"),
    ];
    for (rel, text) in gpu.iter().chain(cpu.iter()) {
        write(root, rel, text);
    }
    let status = status_of(root);
    for (rel, _) in gpu {
        assert_eq!(status[rel], "non_compliant", "{rel}: {status:?}");
    }
    for (rel, _) in cpu {
        assert_eq!(status[rel], "no_gpu_code", "{rel}: {status:?}");
    }
}

/// From a trial on f5-tts and sglang: setuptools ships the folders of a namespace package (no
/// `__init__.py`) under `src/` by its automatic discovery, and under
/// `[tool.setuptools.packages.find]` (namespaces by default). A program there is also a library
/// (GH205), and a module there that acts as it is imported (a plugin registering itself, loaded
/// by name) is no script of its own.
#[test]
fn a_namespace_package_a_project_ships_is_library_code() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "src_layout/pyproject.toml",
        "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"pkg\"\n",
    );
    write(
        root,
        "src_layout/src/pkg/eval_x.py",
        "import torch\n\n\ndef main():\n    print(torch.zeros(1).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    write(
        root,
        "plugins/pyproject.toml",
        "[project]\nname = \"app\"\n\n[tool.setuptools.packages.find]\nexclude = [\"tests*\"]\n",
    );
    write(
        root,
        "plugins/app/models/fancy.py",
        "import torch\n\nREGISTRY = {}\nfor name in (\"flashinfer\", \"triton\"):\n    REGISTRY[name] = name.upper()\n\n\nclass Fancy(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.stream = torch.cuda.Stream()\n",
    );
    let status = status_of(root);
    assert_eq!(
        status["src_layout/src/pkg/eval_x.py"], "non_compliant",
        "{status:?}"
    );
    assert_eq!(
        status["plugins/app/models/fancy.py"], "compliant",
        "{status:?}"
    );
}

/// From a trial on peft: a test file whose `TestCase` is defined only when a dependency is
/// there (`if is_megatron_available():`) is a test file of its suite like its siblings, not
/// "library code no program imports".
#[test]
fn a_test_class_defined_under_a_module_level_if_is_a_test_of_its_suite() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/model.py",
        "import torch\n\n\ndef load():\n    return torch.nn.Linear(2, 2).cuda()\n",
    );
    let guarded = "import importlib.util\nimport unittest\n\nfrom pkg.model import load\n\nif importlib.util.find_spec(\"megatron\"):\n\n    class LoadCase(unittest.TestCase):\n        def test_load(self):\n            self.assertIsNotNone(load())\n";
    let plain = "from pkg.model import load\n\n\ndef test_load():\n    assert load() is not None\n";
    write(root, "tests/test_guarded.py", guarded);
    write(root, "tests/test_plain.py", plain);
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let help = |rel: &str| {
        let f = file_in(&report, rel);
        assert_eq!(f["status"], "non_compliant", "{f}");
        f["findings"][0]["help"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(help("tests/test_plain.py").contains("tests/conftest.py"));
    assert_eq!(help("tests/test_guarded.py"), help("tests/test_plain.py"));
}

/// From a trial on funasr (30 test files, no `conftest.py`): pytest runs a suite in one
/// process, so its header goes once in the `conftest.py` pytest imports first, never as a copy
/// per test file. A test file with no conftest.py above it is left as it is, with a finding
/// that names the file to create; a `unittest.TestCase` whose `__main__` block runs
/// `unittest.main()` is such a test file, whatever the class is called. A test file whose fix
/// renumbers a device keeps the header beside its index.
#[test]
fn a_pytest_suite_without_conftest_gets_one_header_there_not_one_per_test_file() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/model.py",
        "import torch\n\n\ndef load():\n    return torch.nn.Linear(2, 2).cuda()\n",
    );
    let uses = "from pkg.model import load\n\n\ndef test_load():\n    assert load() is not None\n";
    let case = "import unittest\n\nfrom pkg.model import load\n\n\nclass LoadCase(unittest.TestCase):\n    def test_load(self):\n        self.assertIsNotNone(load())\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
    let own = "import torch\n\n\ndef test_second_card():\n    x = torch.zeros(1, device=\"cuda:1\")\n    assert x is not None\n";
    write(root, "tests/unit/test_load.py", uses);
    write(root, "tests/test_case.py", case);
    write(root, "tests/test_own.py", own);
    // A configuration written by hand (the wrong card) is repaired where it is.
    let hand = "import os\n\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\n\nfrom pkg.model import load\n\n\ndef test_load():\n    assert load() is not None\n";
    write(root, "tests/test_hand.py", hand);
    let report = fix_report(root);
    let file = |rel: &str| file_in(&report, rel);
    for (rel, text) in [
        ("tests/unit/test_load.py", uses),
        ("tests/test_case.py", case),
    ] {
        let f = file(rel);
        assert_eq!(f["status"], "non_compliant", "{f}");
        assert_eq!(f["findings"][0]["rule"], "GH001", "{f}");
        assert_eq!(f["findings"][0]["fixable"], false, "{f}");
        assert!(
            f["findings"][0]["help"].as_str().unwrap().ends_with(
                "not fixed automatically: pytest runs `tests/` in one process: the header goes \
                 once in `tests/conftest.py` (create it, then run `fix`)"
            ),
            "{f}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(rel)).unwrap(),
            text,
            "{rel}"
        );
    }
    assert_eq!(file("tests/test_own.py")["status"], "fixed");
    assert_eq!(file("tests/test_hand.py")["status"], "fixed");
    let hand_fixed = std::fs::read_to_string(root.join("tests/test_hand.py")).unwrap();
    assert!(
        hand_fixed.contains("os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\""),
        "{hand_fixed}"
    );
    let own_fixed = std::fs::read_to_string(root.join("tests/test_own.py")).unwrap();
    assert!(own_fixed.contains("CUDA_VISIBLE_DEVICES"), "{own_fixed}");
    assert!(own_fixed.contains("\"cuda:0\""), "{own_fixed}");

    // As the finding says: an empty conftest.py, then `fix`.
    write(root, "tests/conftest.py", "");
    let out = run(gh(root).args([
        "fix",
        "--gpu",
        "off",
        "--no-journal",
        "--format",
        "json",
        ".",
    ]));
    let status = statuses(&out.stdout);
    assert_eq!(status["tests/conftest.py"], "fixed", "{}", out.stdout);
    for rel in ["tests/unit/test_load.py", "tests/test_case.py"] {
        assert_eq!(status[rel], "no_gpu_code", "{rel}: {}", out.stdout);
    }
    let conftest = std::fs::read_to_string(root.join("tests/conftest.py")).unwrap();
    assert!(conftest.contains("CUDA_VISIBLE_DEVICES"), "{conftest}");
}

/// From a trial on invokeai: a repository copied into a package (`efficientnet_repo/`, with
/// its own `setup.py`) is shipped by the outer project's package discovery too. Its
/// `validate.py` script is a module of the installed package, so it cannot carry a header
/// (GH205, for review, naming the outer project's setting), where asking only the nearest
/// project (the copy's `setup.py`, which ships no such module) made it a program to rewrite.
#[test]
fn a_project_copied_into_a_package_is_shipped_by_the_outer_project() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"app\"\n\n[tool.setuptools.packages.find]\nwhere = [\".\"]\ninclude = [\"app*\"]\n",
    );
    write(root, "app/__init__.py", "");
    write(root, "app/vendor/__init__.py", "");
    write(root, "app/vendor/effnet/__init__.py", "");
    write(
        root,
        "app/vendor/effnet/setup.py",
        "from setuptools import find_packages, setup\n\nsetup(name=\"geffnet\", packages=find_packages(exclude=[\"tests\"]))\n",
    );
    write(
        root,
        "app/vendor/effnet/validate.py",
        "import torch\n\n\ndef main():\n    print(torch.zeros(1).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let file = file_in(&report, "app/vendor/effnet/validate.py");
    // The env goes in its `__main__` block (GH206), never a header at its top (GH001).
    assert_eq!(file["status"], "non_compliant", "{file}");
    let codes: Vec<&str> = file["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(
        codes.contains(&"GH206") && !codes.contains(&"GH001"),
        "{file}"
    );
    assert!(
        file["evidence"]
            .as_str()
            .unwrap()
            .contains("its package `app.vendor.effnet` is shipped by `pyproject.toml`"),
        "{file}"
    );
}

/// From a trial on funasr and wyoming-faster-whisper: a console script that its own tests
/// import (`from pkg.cli import main` in `tests/test_cli.py`) was left for review (GH205,
/// "imported by `tests/test_cli.py`"), though its header would only set, in pytest's session,
/// the policy's env that the session's own header sets. Only an importer that is not a test
/// makes a program a library; the header goes in, and the test file is judged as before.
#[test]
fn a_program_its_tests_import_is_still_a_program() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"pkg\"\n[project.scripts]\npkg = \"pkg.cli:main\"\nother = \"pkg.serve:main\"\n",
    );
    write(root, "pkg/__init__.py", "");
    let cli = "import torch\n\n\ndef main():\n    print(torch.zeros(1).cuda())\n";
    write(root, "pkg/cli.py", cli);
    write(root, "pkg/serve.py", cli);
    write(root, "pkg/app.py", "from pkg.serve import main\n\nmain()\n");
    write(
        root,
        "tests/test_cli.py",
        "from pkg.cli import main\nfrom pkg.serve import main as serve\n\n\ndef test_main():\n    assert main and serve\n",
    );
    let status = status_of(root);
    assert_eq!(status["pkg/cli.py"], "non_compliant", "{status:?}");
    // Imported by a module that is no test: a library too, for review.
    assert_eq!(status["pkg/serve.py"], "needs_review", "{status:?}");
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_ne!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let fixed = std::fs::read_to_string(root.join("pkg/cli.py")).unwrap();
    assert!(fixed.contains("CUDA_VISIBLE_DEVICES"), "{fixed}");
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/serve.py")).unwrap(),
        cli
    );
}

/// From a trial on lmdeploy: its console script `lmdeploy = "lmdeploy.cli:run"` calls `run`,
/// which `lmdeploy/cli/__init__.py` only re-exports (`from .entrypoint import run`). The script
/// was judged by the package's import-time code alone: "without GPU code", a false green. The
/// function a script calls now runs in its process wherever its module takes it from: the
/// script's `__init__.py` is a GPU program that cannot carry a header (GH205); a script whose
/// module defines a CPU `run` beside a re-exported GPU helper it never calls stays CPU.
#[test]
fn a_console_script_runs_the_function_it_names_where_its_module_takes_it_from() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"pkg\"\n[project.scripts]\npkg = \"pkg.cli:run\"\ntool = \"pkg.tool:run [extra]\"\n",
    );
    write(root, "pkg/__init__.py", "");
    write(root, "pkg/cli/__init__.py", "from .entrypoint import run\n");
    let gpu = "import torch\n\n\ndef run():\n    torch.zeros(1).cuda()\n\n\ndef helper():\n    torch.zeros(1).cuda()\n";
    write(root, "pkg/cli/entrypoint.py", gpu);
    write(
        root,
        "pkg/tool/__init__.py",
        "from pkg.cli.entrypoint import helper\n\n\ndef run():\n    print('cpu')\n",
    );
    let status = status_of(root);
    assert_eq!(status["pkg/cli/__init__.py"], "needs_review", "{status:?}");
    assert_eq!(status["pkg/tool/__init__.py"], "no_gpu_code", "{status:?}");
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    assert!(out.stdout.contains("GH205"), "{}", out.stdout);
}

/// From a trial on coqui-tts: its server's README starts it plainly, then with
/// `CUDA_VISIBLE_DEVICES="0"`, and a console script starts it too. Only the first way to start
/// it was read: the forbidden card was missed and the header went in, overriding the documented
/// mask. The command that asks the most of a program (cards, then a mask) is what the rules
/// check, whatever else starts it; the program stays a console script's (no GH205).
#[test]
fn a_command_that_masks_a_program_is_checked_whatever_else_starts_it() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"pkg\"\n[project.scripts]\npkg-server = \"pkg.server:main\"\n",
    );
    write(root, "pkg/__init__.py", "");
    let server = "import torch\n\n\ndef main():\n    torch.zeros(1).cuda()\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(root, "pkg/server.py", server);
    write(
        root,
        "README.md",
        "```bash\npython pkg/server.py --list\n```\n\n```bash\nCUDA_VISIBLE_DEVICES=\"0\" python pkg/server.py --serve\n```\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let server_json = file_in(&report, "pkg/server.py");
    let codes: Vec<&str> = server_json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"GH016"), "{codes:?}");
    assert!(!codes.contains(&"GH205"), "{codes:?}");
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/server.py")).unwrap(),
        server,
        "left as written while its command gives it a forbidden card"
    );
}

/// From a trial on nerfstudio: a dataset downloader reached `comms.get_rank()` (through a
/// decorator's wrapper), whose module imports `torch.distributed` to ask `is_initialized()` and
/// `get_rank()`; it got a header. Asking for the rank touches no card: such a module is no GPU
/// code for the programs that run it, while a process group over NCCL is.
#[test]
fn asking_for_the_process_rank_is_no_gpu_use_and_an_nccl_group_is() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "comms.py",
        "import torch.distributed as dist\n\n\ndef get_rank():\n    if not dist.is_initialized():\n        return 0\n    return dist.get_rank()\n",
    );
    write(
        root,
        "group.py",
        "import torch.distributed as dist\n\n\ndef setup():\n    dist.init_process_group(backend=\"nccl\")\n",
    );
    write(
        root,
        "download.py",
        "from comms import get_rank\n\nif __name__ == \"__main__\":\n    print(get_rank())\n",
    );
    write(
        root,
        "train.py",
        "from group import setup\n\nif __name__ == \"__main__\":\n    setup()\n",
    );
    let status = status_of(root);
    assert_eq!(status["download.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["train.py"], "non_compliant", "{status:?}");
}

/// From a trial on funasr: its data converters (`funasr-jsonl2scp`, `scp2len.py`…) import
/// `torch.distributed` to ask the rank and wait at a barrier, and touch no card: the import
/// alone made them GH204 ("each process picks its GPU from its rank") and the console scripts
/// GH001, and `fix` refused them on every run. A program whose process reaches no GPU code
/// runs its process group on the CPU: no GPU code, with the import told as information. The
/// same import in a training script that reaches a card stays GH204.
#[test]
fn a_process_group_of_a_program_that_reaches_no_card_runs_on_the_cpu() {
    let dir = crate::common::tree();
    let root = dir.path();
    let convert = "import json\n\nimport torch.distributed as dist\n\n\ndef main():\n    try:\n        rank = dist.get_rank()\n    except Exception:\n        rank = 0\n    if rank == 0:\n        print(json.dumps({}))\n    dist.barrier()\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(root, "convert.py", convert);
    write(root, "pkg/__init__.py", "");
    write(root, "pkg/count.py", convert);
    write(
        root,
        "setup.py",
        "from setuptools import setup\n\nsetup(name=\"pkg\", packages=[\"pkg\"])\n",
    );
    write(
        root,
        "train.py",
        "import torch\nimport torch.distributed as dist\n\n\ndef main():\n    dist.init_process_group()\n    torch.zeros(1).cuda()\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for path in ["convert.py", "pkg/count.py"] {
        let file = file_in(&report, path);
        assert_eq!(file["status"], "no_gpu_code", "{file}");
        let codes: Vec<_> = file["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["rule"].as_str().unwrap(), f["severity"].as_str().unwrap()))
            .collect();
        assert_eq!(codes, [("GH201", "info")], "{file}");
    }
    let train = file_in(&report, "train.py");
    assert_eq!(train["status"], "non_compliant", "{train}");
    assert!(
        train["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "GH204"),
        "{train}"
    );
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(
        std::fs::read_to_string(root.join("convert.py")).unwrap(),
        convert
    );
}

/// From a trial on coqui-tts: `hubconf.py` is what `torch.hub.load(repo, "tts")` imports into
/// its caller's process; its `__main__` block is a smoke test. It got a header, which would set
/// the caller's env. It is a library of whoever loads it: with a `__main__` block a program
/// that cannot carry a header (GH205), without one no program at all.
#[test]
fn a_torch_hub_entry_file_is_loaded_into_its_callers_process() {
    let dir = crate::common::tree();
    let root = dir.path();
    let hub = "dependencies = [\"torch\"]\nimport torch\n\n\ndef tts(use_cuda=True):\n    return torch.zeros(1).cuda()\n";
    write(
        root,
        "hubconf.py",
        &format!("{hub}\n\nif __name__ == \"__main__\":\n    tts()\n"),
    );
    write(root, "other/hubconf.py", hub);
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let main = file_in(&report, "hubconf.py");
    // Its smoke test gets the env in its `__main__` block (GH206), which a caller never runs.
    assert_eq!(main["status"], "non_compliant", "{main}");
    assert_eq!(main["findings"][0]["rule"], "GH206", "{main}");
    assert!(
        main["evidence"]
            .as_str()
            .unwrap()
            .contains("torch.hub.load"),
        "{main}"
    );
    let plain = file_in(&report, "other/hubconf.py");
    assert_ne!(plain["status"], "non_compliant", "{plain}");
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(
        std::fs::read_to_string(root.join("other/hubconf.py")).unwrap(),
        hub
    );
    let fixed = std::fs::read_to_string(root.join("hubconf.py")).unwrap();
    assert!(fixed.starts_with(hub), "{fixed}");
    assert!(
        fixed.ends_with("if __name__ == \"__main__\":\n    import os\n\n    # GPU selection (gpu-homogenize): the RTX 3090 only.\n    # Never the RTX 5060 Ti.\n    # PCI bus order, then the mask: the RTX 3090 becomes cuda:0.\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\n    os.environ[\"CUDA_DEVICE_ORDER\"] = \"PCI_BUS_ID\"\n    os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"max_split_size_mb:1024\"\n\n    tts()\n"),
        "{fixed}"
    );
}

/// A device string handed to a function of the file is GPU code only when the function does
/// something with it: a build helper's `validate("cuda")` that only compares its `kind` (from a
/// trial on easyocr's `compile_dbnet_dcn.py`) uses no card; a loader's `load("cuda")` that
/// moves a tensor there does.
#[test]
fn a_device_string_a_function_of_the_file_only_compares_is_no_gpu_use() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "build_ops.py",
        "import glob\nimport torch\n\n\ndef validate(path, kind):\n    if kind == \"cpu\":\n        return glob.glob(path + \"/*_cpu.so\")\n    elif kind == \"cuda\":\n        return glob.glob(path + \"/*_cuda.so\")\n    raise ValueError(kind == \"cpu\")\n\n\nif __name__ == \"__main__\":\n    ok = validate(\"ops\", \"cpu\") and validate(\"ops\", kind=\"cuda\")\n",
    );
    write(
        root,
        "load.py",
        "import torch\n\n\ndef load(kind):\n    return torch.zeros(1).to(kind)\n\n\nif __name__ == \"__main__\":\n    x = load(\"cuda\")\n",
    );
    // A parameter of two functions, or also bound another way, is not followed: it stays GPU
    // code as written.
    write(
        root,
        "twice.py",
        "import torch\n\n\ndef check(kind):\n    return kind == \"cuda\"\n\n\ndef move(kind):\n    return torch.zeros(1).to(kind)\n\n\nif __name__ == \"__main__\":\n    check(\"cuda\")\n",
    );
    let status = status_of(root);
    assert_eq!(status["build_ops.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["load.py"], "non_compliant", "{status:?}");
    assert_eq!(status["twice.py"], "non_compliant", "{status:?}");
}

/// A package installed in the tree (a vendored `site-packages`, an unpacked wheel) has no
/// `setup.py` or `pyproject.toml`: its `NAME.dist-info` says what it ships (`RECORD`, else
/// `top_level.txt`) and its console scripts (`entry_points.txt`). A module of it with a
/// `__main__` block is a library that also runs (GH205), not a program to give a header
/// (trial: easyocr's and iopaint's wheels); its console script's target is a program.
#[test]
fn a_package_installed_in_the_tree_is_shipped_by_its_dist_info() {
    let dir = crate::common::tree();
    let root = dir.path();
    let gpu = "import torch\n\n\ndef main():\n    print(torch.zeros(1).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(root, "vendor/ocr/__init__.py", "");
    write(root, "vendor/ocr/cli.py", gpu);
    write(root, "vendor/ocr/export.py", gpu);
    write(
        root,
        "vendor/ocr-1.7.2.dist-info/RECORD",
        "ocr/__init__.py,sha256=x,0\nocr/cli.py,sha256=x,10\nocr/export.py,sha256=x,10\nocr-1.7.2.dist-info/RECORD,,\n",
    );
    write(
        root,
        "vendor/ocr-1.7.2.dist-info/entry_points.txt",
        "[console_scripts]\nocr = ocr.cli:main\n",
    );
    // The same files with no metadata beside them: scripts of the tree.
    write(root, "loose/export.py", gpu);
    let out = run(gh(root).args(["scan", "--no-cache"]));
    assert!(
        crate::common::unix_locations(&out.stdout).contains("vendor/ocr/export.py:8:1: GH206 [*] module runs as a program but is also a library: its package `ocr` is shipped by `vendor/ocr-1.7.2.dist-info` (installed in the tree); its `__main__` block does not set the GPU env\n  help: `fix` sets it at the start of the `__main__` block"),
        "{}",
        out.stdout
    );
    let status = status_of(root);
    assert_eq!(status["vendor/ocr/cli.py"], "non_compliant", "{status:?}");
    assert_eq!(
        status["vendor/ocr/export.py"], "non_compliant",
        "{status:?}"
    );
    assert_eq!(status["loose/export.py"], "non_compliant", "{status:?}");
    let report: serde_json::Value = serde_json::from_str(
        &run(gh(root).args(["scan", "--no-cache", "--format", "json"])).stdout,
    )
    .unwrap();
    let cli = file_in(&report, "vendor/ocr/cli.py");
    assert!(
        cli["evidence"]
            .as_str()
            .unwrap()
            .starts_with("program: the `ocr` script"),
        "{cli}"
    );
}

/// A script whose target is a function of a package's `__init__.py` (`pkg = "pkg:main"`) runs
/// the GPU program there; a header at the top of that file would run on every import of the
/// package. It was called compliant with no header anywhere (trial: iopaint's
/// `iopaint = iopaint:entry_point`): it is left for review with the reason.
#[test]
fn a_script_in_a_packages_init_is_left_for_review_not_called_compliant() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"pkg\"\n[project.scripts]\npkg = \"pkg:main\"\n",
    );
    let init = "def main():\n    from pkg.cli import run\n\n    run()\n";
    write(root, "pkg/__init__.py", init);
    write(
        root,
        "pkg/cli.py",
        "import torch\n\n\ndef run():\n    print(torch.zeros(1).cuda())\n",
    );
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        crate::common::unix_locations(&out.stdout).contains("pkg/__init__.py:1:1: GH205 [review] module runs as a program but is also a library: a package's `__init__.py`, run by every import of `pkg` or a module in it\n  help: it runs as the `pkg` script: a header here"),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/__init__.py")).unwrap(),
        init
    );
    assert_eq!(status_of(root)["pkg/__init__.py"], "needs_review");
}

/// A package of a `src/` layout is named as it is imported (`pkg`, not `src.pkg`) whatever the
/// build backend (trial: open-clip-torch, built with pdm).
#[test]
fn a_src_layout_package_is_named_as_imported_under_any_backend() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"pkg\"\n[build-system]\nrequires = [\"pdm-backend\"]\nbuild-backend = \"pdm.backend\"\n",
    );
    write(root, "src/pkg/__init__.py", "");
    write(
        root,
        "src/pkg/profile.py",
        "import torch\n\nif __name__ == \"__main__\":\n    print(torch.zeros(1).cuda())\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache"]));
    assert!(
        out.stdout.contains("but is also a library: its package `pkg` is shipped by `pyproject.toml` (build backend `pdm.backend`: every package counted)"),
        "{}",
        out.stdout
    );
    // A `setup.py` whose settings come from a dict (trial: lightning-fabric's
    // `setuptools.setup(**setup_args)`) over the same layout: `pkg`, not `src.pkg`.
    std::fs::remove_file(root.join("pyproject.toml")).unwrap();
    write(
        root,
        "setup.py",
        "import setuptools\n\nsetup_args = dict(name=\"pkg\")\nsetuptools.setup(**setup_args)\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache"]));
    assert!(
        out.stdout.contains("its package `pkg` is shipped by `setup.py` (its `setup()` takes its settings from a dict: every package counted)"),
        "{}",
        out.stdout
    );
}

/// A process that hides every card before it runs anything uses none: a test helper that sets
/// `CUDA_VISIBLE_DEVICES = ""` when it is imported (open-clip's `tests/util_test.py`) makes the
/// tests importing it CPU programs, not ones to give a header. Only an unconditional write at
/// import counts: one in a function, a branch, or a `setdefault` leaves the card to the caller.
#[test]
fn a_process_that_hides_every_card_at_its_start_is_no_gpu_program() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "tests/util_test.py",
        "import os\n\nimport torch\n\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"\"\n\n\ndef device():\n    return \"cuda\" if torch.cuda.is_available() else \"cpu\"\n",
    );
    write(
        root,
        "tests/maybe_cpu.py",
        "import os\nimport sys\n\nif \"--cpu\" in sys.argv:\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"\"\n\n\ndef force_cpu():\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"\"\n",
    );
    let test = |helper: &str| {
        format!("import torch\n\nfrom {helper} import *\n\n\ndef test_zeros():\n    x = torch.zeros(1).to(\"cuda\")\n    assert x.sum() == 0\n")
    };
    write(root, "tests/test_hidden.py", &test("util_test"));
    write(root, "tests/test_maybe.py", &test("maybe_cpu"));
    let status = status_of(root);
    assert_eq!(status["tests/test_hidden.py"], "no_gpu_code", "{status:?}");
    assert_eq!(status["tests/test_maybe.py"], "non_compliant", "{status:?}");
    // The helper itself says what it does, for review.
    assert_eq!(status["tests/util_test.py"], "needs_review", "{status:?}");
}

/// What a comparison computes is not compared: a test asserting on a tensor it puts on a card
/// (`assert x.to("cuda").sum() == 0`, `torch.zeros(2, device="cuda")`) uses the GPU, and was
/// called "without GPU code". A device string only compared, or handed to a parser
/// (`parse("cuda:1") == 1`), stays test data.
#[test]
fn a_device_placement_inside_a_comparison_is_gpu_use() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "test_to.py",
        "import torch\n\n\ndef test_to():\n    assert torch.zeros(2).to(\"cuda\").sum() == 0\n",
    );
    write(
        root,
        "test_device.py",
        "import torch\n\n\ndef test_device():\n    assert torch.zeros(2, device=\"cuda\").sum() == 0\n",
    );
    write(
        root,
        "test_parse.py",
        "from parse import parse\n\n\ndef test_parse():\n    assert parse(\"cuda:1\") == 1\n    assert \"cuda\" != \"cpu\"\n",
    );
    write(
        root,
        "parse.py",
        "def parse(s):\n    return int(s.split(\":\")[1])\n",
    );
    let status = status_of(root);
    assert_eq!(status["test_to.py"], "non_compliant", "{status:?}");
    assert_eq!(status["test_device.py"], "non_compliant", "{status:?}");
    assert_eq!(status["test_parse.py"], "no_gpu_code", "{status:?}");
}

/// A module named like a test that application code imports is its library, not a test file
/// to configure (trial: controlnet_aux's `options/test_options.py`, a `TestOptions` class its
/// package imports, was told to get a `conftest.py` inside the installed package).
#[test]
fn a_module_named_like_a_test_that_the_application_imports_is_library_code() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pyproject.toml", "[project]\nname = \"pkg\"\n");
    write(
        root,
        "pkg/__init__.py",
        "from pkg.options.test_options import TestOptions\n",
    );
    write(root, "pkg/options/__init__.py", "");
    write(
        root,
        "pkg/options/test_options.py",
        "import torch\n\n\nclass BaseOptions:\n    pass\n\n\nclass TestOptions(BaseOptions):\n    def device(self):\n        return torch.zeros(1).cuda()\n",
    );
    // A real test of the same shape is still a test, also when a helper of its suite imports
    // it.
    write(
        root,
        "tests/test_model.py",
        "import torch\n\n\ndef test_zeros():\n    x = torch.zeros(1).cuda()\n    assert x.sum() == 0\n",
    );
    write(
        root,
        "tests/helpers.py",
        "from test_model import test_zeros\n",
    );
    let status = status_of(root);
    assert_ne!(
        status["pkg/options/test_options.py"], "non_compliant",
        "{status:?}"
    );
    let report: serde_json::Value = serde_json::from_str(
        &run(gh(root).args(["scan", "--no-cache", "--format", "json"])).stdout,
    )
    .unwrap();
    let options = file_in(&report, "pkg/options/test_options.py");
    assert!(
        options["evidence"]
            .as_str()
            .unwrap()
            .starts_with("library:"),
        "{options}"
    );
    assert_eq!(status["tests/test_model.py"], "non_compliant", "{status:?}");
}

/// From a trial on xtuner: 563 mmengine config files (imports, `with read_base():` of other
/// configs, names bound to `dict(type=Model, lr=lr)`, an `if` on a setting) got a header as
/// "a script no module imports", though running one does nothing: `Config.fromfile` reads them.
/// A file of data only is no script; a one-file script that calls something still is.
#[test]
fn a_config_file_of_data_only_is_no_script() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "xt/model.py",
        "import torch\n\n\nclass Finetune:\n    def fit(self):\n        return torch.zeros(1).cuda()\n",
    );
    write(root, "xt/__init__.py", "");
    write(
        root,
        "configs/_base_/runtime.py",
        "default_scope = \"xt\"\nenv_cfg = dict(cudnn_benchmark=False, dist_cfg=dict(backend=\"nccl\"))\n",
    );
    write(
        root,
        "configs/llama/qlora.py",
        "# Copyright (c) OpenMMLab.\nimport torch\nfrom mmengine.config import read_base\n\n\
         from xt.model import Finetune\n\nwith read_base():\n    from configs._base_.runtime import *\n\n\
         lr = 2e-4\nmax_epochs = 3\naccumulative_counts = 16\naccumulative_counts *= 2\nmax_length = int(2048 - (336 / 14) ** 2)\n\
         model = dict(type=Finetune, lr=lr, dtype=torch.float16, layers=[1, 2] + [3])\n\
         if max_epochs > 1:\n    lr = lr / 2\nelse:\n    lr = None\n\
         train_cfg = dict(by_epoch=True, max_epochs=max_epochs, device=\"cuda\" if lr else \"cpu\")\n",
    );
    write(
        root,
        "scripts/train.py",
        "from xt.model import Finetune\n\nFinetune().fit()\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let evidence = |path: &str| {
        file_in(&doc, path)["evidence"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        !evidence("configs/llama/qlora.py").starts_with("program"),
        "{}",
        out.stdout
    );
    assert!(
        evidence("scripts/train.py").starts_with("program"),
        "{}",
        out.stdout
    );
    let fixed = run(gh(root).args(["fix", "--no-cache"]));
    assert!(
        !std::fs::read_to_string(root.join("configs/llama/qlora.py"))
            .unwrap()
            .contains("CUDA_VISIBLE_DEVICES"),
        "{}",
        fixed.stdout
    );
    assert!(std::fs::read_to_string(root.join("scripts/train.py"))
        .unwrap()
        .contains("CUDA_VISIBLE_DEVICES"));
}

/// From a trial on ms-swift and lerobot. `swift/cli/sft.py` runs `from swift.pipelines import
/// sft_main; sft_main()`, and `swift/pipelines/__init__.py` is a transformers-style
/// `_LazyModule` whose imports sit under `if TYPE_CHECKING:`: the reach to the trainer was lost
/// and the program was "without GPU code". A name a package declares for type checkers is
/// read from where it says. lerobot's `init_logging(accelerator: Accelerator | None = None)`
/// only names the GPU class in an annotation: the dataset viewer that calls it got a header.
/// An annotation runs nothing.
#[test]
fn a_lazy_packages_names_are_followed_and_annotations_run_nothing() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/pipelines/__init__.py",
        "import sys\nfrom typing import TYPE_CHECKING\n\nfrom pkg.lazy import _LazyModule\n\n\
         if TYPE_CHECKING:\n    from .train import sft_main\nelse:\n    _import_structure = {\"train\": [\"sft_main\"]}\n    \
         sys.modules[__name__] = _LazyModule(__name__, globals()[\"__file__\"], _import_structure)\n",
    );
    write(
        root,
        "pkg/lazy.py",
        "import importlib\nimport types\n\n\nclass _LazyModule(types.ModuleType):\n    \
         def __getattr__(self, name):\n        return getattr(importlib.import_module(\".train\", self.__name__), name)\n",
    );
    write(
        root,
        "pkg/pipelines/train.py",
        "import torch\n\n\ndef sft_main():\n    return torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "pkg/accel.py",
        "import torch\n\n\nclass Accelerator:\n    def __init__(self):\n        self.device = torch.device(\"cuda:0\")\n",
    );
    write(
        root,
        "pkg/log.py",
        "from pkg.accel import Accelerator\n\n\ndef init_logging(accelerator: Accelerator | None = None) -> Accelerator | None:\n    return accelerator\n",
    );
    write(
        root,
        "scripts/sft.py",
        "from pkg.pipelines import sft_main\n\nif __name__ == \"__main__\":\n    sft_main()\n",
    );
    write(
        root,
        "scripts/viz.py",
        "from pkg.log import init_logging\n\nif __name__ == \"__main__\":\n    init_logging()\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let file = |path: &str| file_in(&doc, path);
    assert_eq!(
        file("scripts/sft.py")["status"],
        "non_compliant",
        "{}",
        out.stdout
    );
    assert!(
        file("scripts/sft.py")["evidence"]
            .as_str()
            .unwrap_or_default()
            .ends_with("`scripts/sft.py` → `pkg/pipelines/train.py` (`sft_main`)"),
        "{}",
        out.stdout
    );
    assert_eq!(
        file("scripts/viz.py")["status"],
        "no_gpu_code",
        "{}",
        out.stdout
    );
}

/// From a trial on axolotl and litgpt: tests start the project's own console script with a
/// number of cards (`["axolotl", "train", cfg, "--num-processes", "2"]`, `["litgpt", "serve",
/// path, "--devices", "2"]`); they were compliant, and the header in `conftest.py` would start
/// two ranks on one card. A command of a console script the tree declares asks for the cards
/// its options say: GH203. A subcommand's arguments handed to a test runner (`cli_runner.invoke(
/// cli, ["train", …])`) and another tool's command are not read as such.
#[test]
fn a_command_of_the_trees_own_console_script_asks_for_its_cards() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"axo\"\nversion = \"0.1\"\n\n[project.scripts]\naxo = \"axo.cli:main\"\n",
    );
    write(root, "axo/__init__.py", "");
    write(
        root,
        "axo/cli.py",
        "import torch\n\n\ndef main():\n    torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "tests/test_multi.py",
        "import subprocess\n\n\ndef test_two_ranks(tmp_path):\n    subprocess.run([\"axo\", \"train\", str(tmp_path), \"--num-processes\", \"2\"], check=True)\n",
    );
    write(
        root,
        "tests/test_cli.py",
        "from axo.cli import main\n\n\ndef test_cli(cli_runner):\n    cli_runner.invoke(main, [\"train\", \"cfg.yml\", \"--\", \"--nproc_per_node=2\"])\n\n\n\
         def test_other():\n    import subprocess\n\n    subprocess.run([\"othertool\", \"run\", \"--num-processes\", \"4\"])\n",
    );
    let mut out = run(gh(root).args(["scan", "--no-cache"]));
    out.stdout = crate::common::unix_locations(&out.stdout);
    assert!(
        out.stdout.contains("tests/test_multi.py:5:20: GH203 the command it starts asks `axo` (a console script of this tree) for `--num-processes 2`: needs 2 cards, mask '1' allows 1 card"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout
            .lines()
            .any(|l| l.starts_with("tests/test_cli.py:") && l.contains("GH203")),
        "{}",
        out.stdout
    );
}

/// A program whose process runs a library helper that writes the mask from its argument
/// (yolov5's and sahi's `select_device`) runs on the card that helper picks, whatever its own
/// header says: held with the library's write named (GH006), never green, until the write is
/// gone. A helper that writes the policy's value, or only a default, leaves the header's.
#[test]
fn a_program_whose_helper_writes_the_mask_is_held_until_the_write_is_gone() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "lib/torch_utils.py",
        "import os\n\nimport torch\n\n\ndef select_device(device=\"\"):\n    device = str(device).replace(\"cuda:\", \"\")\n    if device:\n        os.environ[\"CUDA_VISIBLE_DEVICES\"] = device\n    return torch.device(\"cuda:0\")\n\n\ndef policy_device():\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\n    os.environ.setdefault(\"CUDA_DEVICE_ORDER\", \"FASTEST_FIRST\")\n    return torch.device(\"cuda:0\")\n",
    );
    write(root, "lib/__init__.py", "");
    let predict = "import argparse\n\nimport torch\n\nfrom lib.torch_utils import select_device\n\nif __name__ == \"__main__\":\n    p = argparse.ArgumentParser()\n    p.add_argument(\"--device\", default=\"cuda:0\")\n    args = p.parse_args()\n    print(torch.zeros(1, device=select_device(args.device)))\n";
    write(root, "predict.py", predict);
    write(
        root,
        "steady.py",
        "import torch\n\nfrom lib.torch_utils import policy_device\n\nif __name__ == \"__main__\":\n    print(torch.zeros(1, device=policy_device()))\n",
    );
    let report = fix_report(root);
    let predict_report = file_in(&report, "predict.py");
    assert_eq!(
        predict_report["status"], "non_compliant",
        "{predict_report}"
    );
    let held = predict_report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "GH006")
        .unwrap_or_else(|| panic!("{predict_report}"));
    assert_eq!(
        held["message"],
        "its process runs `lib/torch_utils.py` (`select_device`), which sets CUDA_VISIBLE_DEVICES to a computed value: the header's value does not hold after it"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("predict.py")).unwrap(),
        predict
    );
    assert_eq!(file_in(&report, "steady.py")["status"], "fixed");
    // The library's write taken out (an unsafe fix), the program is fixed by the next run.
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--unsafe-fixes", "."]));
    assert_eq!(file_in(&fix_report(root), "predict.py")["status"], "fixed");
    assert_eq!(status_of(root)["predict.py"], "compliant");
}

/// From a trial on yolov5 and voicefixer: programs that are also libraries were refused
/// (GH205, "its code at import reaches CUDA") when nothing of their code at import runs a card.
/// - A function a decorator factory wraps or registers (`@smart_inference_mode()`,
///   `@register("adam")`) runs when whoever holds it calls it, never while the module is
///   imported.
/// - `from m import *` runs `m` at import, not every function of it: a name read from it runs
///   that function only, where it is read.
/// - A name bound to another at import (`Model = DetectionModel`, yolov5's alias kept for old
///   callers; melotts' table of language modules) runs nothing of what it names.
#[test]
fn a_registered_function_and_a_star_import_run_nothing_at_import() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "setup.py",
        "from setuptools import setup\n\nsetup(name=\"pkg\", packages=[\"pkg\"])\n",
    );
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/utils.py",
        "import torch\n\n\ndef wrap():\n    def deco(fn):\n        return torch.no_grad()(fn)\n\n    return deco\n\n\ndef to_gpu(x):\n    return x.cuda()\n\n\ndef warm():\n    return torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "pkg/detect.py",
        "import torch\n\nfrom pkg.utils import wrap\n\n\n@wrap()\ndef run():\n    return torch.zeros(1).cuda()\n\n\nif __name__ == \"__main__\":\n    run()\n",
    );
    write(
        root,
        "pkg/star.py",
        "import torch\n\nfrom pkg.utils import *\n\nif __name__ == \"__main__\":\n    print(to_gpu(torch.zeros(1)))\n",
    );
    write(
        root,
        "pkg/yolo.py",
        "import torch\n\n\nclass DetectionModel:\n    def __init__(self):\n        self.w = torch.zeros(1).cuda()\n\n\nModel = DetectionModel\nMODELS = {\"detect\": DetectionModel}\n\nif __name__ == \"__main__\":\n    print(Model().w)\n",
    );
    write(
        root,
        "pkg/cli.py",
        "import sys\n\nfrom pkg import detect, star, yolo\n\nif __name__ == \"__main__\":\n    detect.run()\n    sys.exit(0)\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for rel in ["pkg/detect.py", "pkg/star.py", "pkg/yolo.py"] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{file}");
        assert_eq!(file["findings"][0]["rule"], "GH206", "{file}");
    }
}

/// From a trial on torchgeo: its console script builds a `LightningCLI`, which trains on every
/// visible card; the whole tree was "without GPU code" and the scan exited 0. The script is a
/// GPU program: it gets the header.
#[test]
fn a_lightning_cli_console_script_is_a_gpu_program() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"mypkg\"\n\n[project.scripts]\nmypkg = \"mypkg.main:main\"\n",
    );
    write(root, "mypkg/__init__.py", "");
    write(
        root,
        "mypkg/task.py",
        "import lightning\n\n\nclass Task(lightning.LightningModule):\n    pass\n",
    );
    write(
        root,
        "mypkg/main.py",
        "from lightning.pytorch.cli import LightningCLI\n\nfrom mypkg.task import Task\n\n\ndef main():\n    LightningCLI(model_class=Task)\n",
    );
    let report = fix_report(root);
    assert_eq!(
        file_in(&report, "mypkg/main.py")["status"],
        "fixed",
        "{report}"
    );
    assert_eq!(status_of(root)["mypkg/main.py"], "compliant");
}

/// The messages of a file's findings of one rule.
fn messages(report: &serde_json::Value, rel: &str, rule: &str) -> Vec<String> {
    file_in(report, rel)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

/// From a trial on mmdet: `tools/dist_train.sh` starts `$(dirname "$0")/train.py`, a path
/// from the script's own folder; the command was dropped, and train.py got the header as one
/// process. Each way a shell script names its folder (`"$(dirname "$0")"`, `${0%/*}`,
/// `$(cd "$(dirname "$0")" && pwd)`, a variable set to one) is read from there.
#[test]
fn a_launch_of_a_script_beside_the_shell_script_is_read_from_its_folder() {
    let dir = crate::common::tree();
    let root = dir.path();
    let gpu = "import torch\n\n\ndef main():\n    print(torch.nn.Linear(2, 2).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n";
    for name in ["train", "a", "b", "c", "d"] {
        write(root, &format!("tools/{name}.py"), gpu);
    }
    write(
        root,
        "tools/dist_train.sh",
        "#!/usr/bin/env bash\nSCRIPT_DIR=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\npython -m torch.distributed.launch --nproc_per_node=2 $(dirname \"$0\")/train.py --launcher pytorch\ntorchrun --nproc_per_node 2 \"$(dirname \"$0\")\"/a.py\ntorchrun --nproc_per_node 2 ${0%/*}/b.py\ntorchrun --nproc_per_node 2 $(cd \"$(dirname \"$0\")\" && pwd)/c.py\ntorchrun --nproc_per_node 2 \"$SCRIPT_DIR/d.py\"\n",
    );
    let report = fix_report(root);
    assert_eq!(
        messages(&report, "tools/train.py", "GH203"),
        ["started by `python -m torch.distributed.launch --nproc_per_node=2 $(dirname \"$0\")/train.py --launcher pytorch` (tools/dist_train.sh, line 3), which asks for 2 cards (`--nproc_per_node 2`); mask '1' allows 1"]
    );
    for (name, line) in [("a", 4), ("b", 5), ("c", 6), ("d", 7)] {
        let rel = format!("tools/{name}.py");
        let f = file_in(&report, &rel);
        assert_eq!(f["status"], "non_compliant", "{f}");
        let gh203 = messages(&report, &rel, "GH203");
        assert!(
            gh203.len() == 1 && gh203[0].contains(&format!("(tools/dist_train.sh, line {line})")),
            "{f}"
        );
        assert_eq!(std::fs::read_to_string(root.join(&rel)).unwrap(), gpu);
    }
}

/// From a trial on mmdet: `torchrun --nproc_per_node=$GPUS` gives a count the tree does not
/// write; it was taken as no count (one process) and the program got the header. A count from
/// a variable is GH207, for review, and the header is held back; a variable's default of more
/// than one is that many cards (GH203).
#[test]
fn a_launch_count_from_a_variable_is_for_review() {
    let dir = crate::common::tree();
    let root = dir.path();
    let gpu = "import torch\n\n\ndef main():\n    print(torch.nn.Linear(2, 2).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n";
    for name in ["train", "one", "eight"] {
        write(root, &format!("tools/{name}.py"), gpu);
    }
    write(
        root,
        "tools/dist_train.sh",
        "#!/usr/bin/env bash\nCONFIG=$1\nGPUS=$2\ntorchrun --nproc_per_node=$GPUS tools/train.py $CONFIG --launcher pytorch\naccelerate launch --num_processes ${NGPU:-1} tools/one.py\naccelerate launch --num_processes ${NGPU:-8} tools/eight.py\n",
    );
    let report = fix_report(root);
    assert_eq!(
        messages(&report, "tools/train.py", "GH207"),
        ["started by `torchrun --nproc_per_node=$GPUS tools/train.py $CONFIG --launcher pytorch` (tools/dist_train.sh, line 4): `--nproc_per_node $GPUS` processes, unknown here; mask '1' allows 1"]
    );
    assert_eq!(
        messages(&report, "tools/one.py", "GH207").len(),
        1,
        "{report}"
    );
    assert_eq!(
        messages(&report, "tools/eight.py", "GH203"),
        ["started by `accelerate launch --num_processes ${NGPU:-8} tools/eight.py` (tools/dist_train.sh, line 6), which asks for 8 cards (`--num_processes ${NGPU:-8}`, its default); mask '1' allows 1"]
    );
    for name in ["train", "one", "eight"] {
        let rel = format!("tools/{name}.py");
        assert_ne!(file_in(&report, &rel)["status"], "fixed", "{report}");
        assert_eq!(std::fs::read_to_string(root.join(&rel)).unwrap(), gpu);
    }
    let status = status_of(root);
    assert_eq!(status["tools/train.py"], "non_compliant", "{status:?}");
}

/// From a trial on f5-tts: a Gradio app starts `accelerate launch "{file_train}" …` through
/// `subprocess.Popen(cmd, shell=True)`; the same command in a README is GH203 (one process
/// per visible card), from the code it was nothing and the trainer got the header. A command
/// a program's code runs (a string, an f-string with its names read, a list, `os.system`)
/// launches what it starts as a shell script's would.
#[test]
fn a_launch_command_run_by_python_code_launches_its_script() {
    let dir = crate::common::tree();
    let root = dir.path();
    let gpu = "import torch\n\n\ndef main():\n    print(torch.nn.Linear(2, 2).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n";
    for name in ["train", "listed", "system"] {
        write(root, &format!("{name}.py"), gpu);
    }
    write(root, "pkg/__init__.py", "");
    write(root, "pkg/train/__init__.py", "");
    write(root, "pkg/train/finetune_cli.py", gpu);
    write(
        root,
        "app.py",
        "import os\nimport subprocess\nfrom importlib.resources import files\n\nFILE_TRAIN = \"train.py\"\nFINETUNE = str(files(\"pkg\").joinpath(\"train/finetune_cli.py\"))\n\n\ndef start(lr, mp):\n    fp16 = f\"--mixed_precision={mp}\" if mp != \"none\" else \"\"\n    cmd = f'accelerate launch \"{FILE_TRAIN}\" --lr {lr}'\n    subprocess.Popen(cmd, shell=True)\n    subprocess.run([\"torchrun\", \"--nproc_per_node\", \"2\", \"listed.py\"])\n    os.system(\"torchrun --nproc_per_node=$N system.py\")\n    subprocess.Popen(f'accelerate launch {fp16} \"{FINETUNE}\" --epochs 1', shell=True)\n\n\nif __name__ == \"__main__\":\n    start(1e-3, \"none\")\n",
    );
    let report = fix_report(root);
    assert_eq!(
        messages(&report, "train.py", "GH203"),
        ["started by `accelerate launch \"train.py\" --lr ${lr}` (app.py, line 12), which asks for every visible card (`accelerate launch` without `--num_processes`); mask '1' allows 1"]
    );
    assert_eq!(
        messages(&report, "listed.py", "GH203"),
        ["started by `torchrun --nproc_per_node 2 listed.py` (app.py, line 13), which asks for 2 cards (`--nproc_per_node 2`); mask '1' allows 1"]
    );
    assert_eq!(messages(&report, "system.py", "GH207").len(), 1, "{report}");
    assert_eq!(
        messages(&report, "pkg/train/finetune_cli.py", "GH203").len(),
        1,
        "{report}"
    );
    for rel in [
        "train.py",
        "listed.py",
        "system.py",
        "pkg/train/finetune_cli.py",
    ] {
        assert_eq!(
            std::fs::read_to_string(root.join(rel)).unwrap(),
            gpu,
            "{rel}"
        );
    }
}

/// From a trial on torchtune: `tune run --nproc_per_node 4 recipe` runs torchrun in its own
/// process (`torch.distributed.run.run(args)`), as many ranks as its command line says; the
/// launcher was a CPU program, and `tune` got the header as one process. A program that runs a
/// distributed launcher in-process, itself or through a module it runs, is GH207, for review,
/// and keeps no header.
#[test]
fn a_program_that_runs_a_distributed_launcher_in_process_is_for_review() {
    let dir = crate::common::tree();
    let root = dir.path();
    let launch = "from torch.distributed.run import get_args_parser, run\n\n\ndef main():\n    args = get_args_parser().parse_args()\n    run(args)\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(root, "launch.py", launch);
    write(root, "cli/__init__.py", "");
    write(
        root,
        "cli/run.py",
        "import torch.distributed.run\n\n\ndef run_distributed(args):\n    torch.distributed.run.run(args)\n",
    );
    let tune = "import sys\n\nfrom cli.run import run_distributed\n\n\ndef main():\n    run_distributed(sys.argv[1:])\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(root, "cli/tune.py", tune);
    let report = fix_report(root);
    assert_eq!(
        messages(&report, "launch.py", "GH207"),
        ["`torch.distributed.run.run` starts as many processes as its arguments say (`--nproc_per_node`): perhaps more than mask '1' allows"]
    );
    let tune_gh207 = messages(&report, "cli/tune.py", "GH207");
    assert!(
        tune_gh207.len() == 1 && tune_gh207[0].starts_with("its process runs `cli/run.py`"),
        "{report}"
    );
    for (rel, text) in [("launch.py", launch), ("cli/tune.py", tune)] {
        assert_ne!(file_in(&report, rel)["status"], "fixed", "{report}");
        assert_eq!(std::fs::read_to_string(root.join(rel)).unwrap(), text);
    }
}

/// From a trial on litgpt and torchtune: `python -m pkg` runs `pkg/__init__.py` before
/// `pkg/__main__.py`, a console script imports its module's packages first, and `python -m
/// pkg.sub.mod` imports `pkg` and `pkg.sub` first. Where that package code starts CUDA at
/// import (asks the driver for its cards, uses a card), the header of the program comes too
/// late: it is left for review (GH208), naming the chain, never called compliant. A package
/// that only imports torch starts nothing (CUDA reads the env at its first use).
#[test]
fn a_program_its_package_starts_cuda_before_is_left_for_review() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "app/pyproject.toml",
        "[project]\nname = \"mypkg\"\nversion = \"0\"\n\n[project.scripts]\nmypkg = \"mypkg.__main__:main\"\n",
    );
    write(
        root,
        "app/mypkg/__init__.py",
        "import torch\n\nfrom mypkg.model import build\n\nHAS_CUDA = torch.cuda.is_available()\n",
    );
    write(
        root,
        "app/mypkg/model.py",
        "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2).cuda()\n",
    );
    write(
        root,
        "app/mypkg/__main__.py",
        "import torch\n\nfrom mypkg import build\n\n\ndef main():\n    print(build(), torch.cuda.is_available())\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    // `python -m tool.sub.serve` (no project ships `tool`): `tool/sub/__init__.py` imports a
    // module that uses a card.
    write(root, "run.sh", "#!/bin/sh\npython -m tool.sub.serve\n");
    write(root, "tool/__init__.py", "");
    write(root, "tool/sub/__init__.py", "from tool.sub import warm\n");
    write(
        root,
        "tool/sub/warm.py",
        "import torch\n\nWARM = torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "tool/sub/serve.py",
        "import torch\n\nif __name__ == \"__main__\":\n    print(torch.zeros(1).cuda())\n",
    );
    // Only `import torch` in the package: the header comes in time.
    write(root, "quiet/__init__.py", "import torch\n");
    write(
        root,
        "quiet/__main__.py",
        "import torch\n\nif __name__ == \"__main__\":\n    print(torch.zeros(1).cuda())\n",
    );
    let report = fix_report(root);
    let main = file_in(&report, "app/mypkg/__main__.py");
    assert_eq!(main["status"], "needs_review", "{main}");
    let late = |file: &serde_json::Value| {
        file["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == "GH208")
            .map(|f| {
                format!(
                    "{} | {}",
                    f["message"].as_str().unwrap(),
                    f["help"].as_str().unwrap()
                )
            })
            .unwrap_or_else(|| panic!("{file}"))
    };
    assert_eq!(
        late(&main),
        "`app/mypkg/__init__.py` runs before this file and starts CUDA at import: a header here comes too late | it starts there: `app/mypkg/__init__.py` (at import); make that package start nothing at import (ask for the cards in a function), or set the env where the process starts (its launcher, a wrapper script)"
    );
    let serve = file_in(&report, "tool/sub/serve.py");
    assert_eq!(serve["status"], "needs_review", "{serve}");
    assert_eq!(
        late(&serve),
        "`tool/sub/__init__.py` runs before this file and starts CUDA at import: a header here comes too late | it starts there: `tool/sub/__init__.py` → `tool/sub/warm.py` (at import); make that package start nothing at import (ask for the cards in a function), or set the env where the process starts (its launcher, a wrapper script)"
    );
    assert_eq!(file_in(&report, "quiet/__main__.py")["status"], "fixed");
    let status = status_of(root);
    assert_eq!(
        status["app/mypkg/__main__.py"], "needs_review",
        "{status:?}"
    );
    assert_eq!(status["quiet/__main__.py"], "compliant", "{status:?}");
}

/// From a trial on mmdet: `AvoidCUDAOOM = AvoidOOM()` in `mmdet/utils/memory.py` made every
/// method of the class run wherever the module was imported, and nine CPU tools got the
/// header. Making an instance runs the class's construction (`__init__` and the methods it
/// calls on the instance), not its other methods: those run where the instance or the class is
/// read (`@AvoidCUDAOOM.retry`). A class whose construction uses a card is still GPU code at
/// import, and mmengine's `Runner`, which puts the model on a visible card unasked, is GPU use.
#[test]
fn a_class_made_at_import_runs_its_construction_not_every_method() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/memory.py",
        "import torch\n\n\nclass AvoidOOM:\n    def __init__(self, to_cpu=True):\n        self.to_cpu = to_cpu\n\n    def retry(self, func):\n        def wrapped(*a):\n            torch.cuda.empty_cache()\n            return func(*a)\n\n        return wrapped\n\n\nAvoidCUDAOOM = AvoidOOM()\n",
    );
    write(
        root,
        "pkg/warm.py",
        "import torch\n\n\nclass Warm:\n    def __init__(self):\n        self.setup()\n\n    def setup(self):\n        self.x = torch.zeros(1).cuda()\n\n    def other(self):\n        return 1\n\n\nWARM = Warm()\n",
    );
    let main = "\n\nif __name__ == \"__main__\":\n    main()\n";
    write(
        root,
        "tools/print_config.py",
        &format!("from pkg.memory import AvoidCUDAOOM  # noqa: F401\n\n\ndef main():\n    print(\"cfg\"){main}"),
    );
    write(
        root,
        "tools/retry.py",
        &format!("from pkg.memory import AvoidCUDAOOM\n\n\n@AvoidCUDAOOM.retry\ndef main():\n    return 1{main}"),
    );
    write(
        root,
        "tools/warm.py",
        &format!("import pkg.warm  # noqa: F401\n\n\ndef main():\n    print(\"x\"){main}"),
    );
    write(
        root,
        "tools/train.py",
        &format!("from mmengine.runner import Runner\n\nfrom pkg.memory import AvoidCUDAOOM  # noqa: F401\n\n\ndef main():\n    Runner.from_cfg({{}}).train(){main}"),
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let print_config = file_in(&report, "tools/print_config.py");
    assert_eq!(print_config["status"], "no_gpu_code", "{print_config}");
    for rel in ["tools/retry.py", "tools/warm.py", "tools/train.py"] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{file}");
        assert_eq!(file["findings"][0]["rule"], "GH001", "{file}");
    }
    assert_eq!(
        file_in(&report, "tools/warm.py")["evidence"],
        "program: an `if __name__ == \"__main__\"` block; its process reaches GPU code: `tools/warm.py` → `pkg/warm.py` (`Warm()`)"
    );
}

/// From trial 59 (pyannote.audio's `speaker_verification.py`, mmdet's CPU tools): an instance
/// made in a function or a `__main__` block (`f = Foo(width=8); print(f.width)`, an
/// `nn.Module` whose parameters are only counted) ran every method of its class, and the CPU
/// programs got the header for a `.cuda()` in a method nobody calls. Making an instance runs
/// the class's construction, and a method runs where the instance's attribute of its name is
/// read; an instance called (`net(x)` runs `forward`), handed on, returned or read as a global,
/// or an attribute a framework base may implement (`generate`), runs the whole class.
#[test]
fn an_instance_made_in_a_function_runs_only_the_methods_read() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/m.py",
        "import torch\n\n\nclass Foo:\n    def __init__(self, width=4):\n        self.width = width\n\n    def run(self, x):\n        return x.cuda()\n\n    def twice(self, x):\n        return self.run(x)\n\n\nclass Net(torch.nn.Module):\n    def __init__(self, width=4):\n        super().__init__()\n        self.fc = torch.nn.Linear(width, width)\n\n    def forward(self, x):\n        return self.fc(x.cuda())\n",
    );
    let program = |rel: &str, body: &str| {
        write(
            root,
            rel,
            &format!("from pkg.m import Foo, Net\n\n\ndef main():\n{body}\n\n\nif __name__ == \"__main__\":\n    main()\n"),
        );
    };
    program("cpu_plain.py", "    f = Foo(width=8)\n    print(f.width)");
    program(
        "cpu_module.py",
        "    m = Net(width=8)\n    m.eval()\n    print(sum(p.numel() for p in m.parameters()))",
    );
    program("gpu_method.py", "    f = Foo()\n    return f.twice(1)");
    program("gpu_called.py", "    net = Net()\n    return net(1)");
    program("gpu_handed.py", "    f = Foo()\n    helper(f)");
    program("gpu_returned.py", "    net = Net()\n    return net");
    program("gpu_base.py", "    net = Net()\n    net.generate(1)");
    // A base of the tree's construction may call a method the class overrides.
    write(
        root,
        "pkg/base.py",
        "class Head:\n    def __init__(self):\n        self._init_layers()\n\n    def _init_layers(self):\n        pass\n",
    );
    write(
        root,
        "pkg/kid.py",
        "import torch\n\nfrom pkg.base import Head\n\n\nclass Kid(Head):\n    def __init__(self):\n        super().__init__()\n\n    def _init_layers(self):\n        self.x = torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "gpu_override.py",
        "from pkg.kid import Kid\n\n\nif __name__ == \"__main__\":\n    k = Kid()\n    print(k.x)\n",
    );
    write(
        root,
        "gpu_global.py",
        "from pkg.m import Foo\n\n\ndef use():\n    f.run(1)\n\n\nif __name__ == \"__main__\":\n    f = Foo()\n    use()\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for rel in ["cpu_plain.py", "cpu_module.py"] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "no_gpu_code", "{file}");
    }
    for rel in [
        "gpu_method.py",
        "gpu_called.py",
        "gpu_handed.py",
        "gpu_returned.py",
        "gpu_base.py",
        "gpu_global.py",
        "gpu_override.py",
    ] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{file}");
        assert_eq!(crate::common::rule_codes(&file), ["GH001"], "{file}");
    }
    assert_eq!(
        file_in(&report, "gpu_method.py")["evidence"],
        "program: an `if __name__ == \"__main__\"` block; its process reaches GPU code: `gpu_method.py` (`main`) → `pkg/m.py` (`Foo().run`)"
    );
}

/// From trial 59 (mmpretrain's `get_flops.py`): `get_model(args.config)` calls a function that
/// dispatches the model to a card only `if device_map is not None:`, and the FLOPs counter got
/// the header. A branch guarded by a parameter whose default is `None` (`P is not None`, `P`,
/// `P and …`), which the function never rebinds, runs only where a call passes it: a call of
/// the tree that gives neither its position nor its keyword, nor `*args`/`**kwargs`, runs the
/// function without it. A call that passes it, a spread, the function handed on as a value, a
/// decorated function or a parameter rebound keeps the branch.
#[test]
fn a_branch_on_an_argument_no_caller_passes_does_not_run() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "mypkg/__init__.py", "");
    write(
        root,
        "mypkg/api.py",
        "import torch\n\n\ndef dispatch_model(model, device_map):\n    return model.to(f\"cuda:{device_map}\")\n\n\ndef get_model(width, device=None, device_map=None):\n    model = torch.nn.Linear(width, width)\n    if device_map is not None:\n        model = dispatch_model(model, device_map)\n    elif device is not None:\n        model = model.to(device)\n    return model\n\n\ndef rebound(width, device_map=None):\n    device_map = device_map or 0\n    if device_map is not None:\n        return dispatch_model(width, device_map)\n    return width\n",
    );
    let program = |rel: &str, body: &str| {
        write(
            root,
            rel,
            &format!("import sys\n\nfrom mypkg.api import get_model, rebound\n\n\ndef main():\n{body}\n\n\nif __name__ == \"__main__\":\n    main()\n"),
        );
    };
    program(
        "get_flops.py",
        "    model = get_model(int(sys.argv[1]))\n    print(sum(p.numel() for p in model.parameters()))",
    );
    program("gpu_keyword.py", "    get_model(8, device_map=0)");
    program("gpu_positional.py", "    get_model(8, None, 0)");
    program("gpu_spread.py", "    get_model(8, **dict(device_map=0))");
    program("gpu_handed.py", "    list(map(get_model, [8]))");
    program("gpu_rebound.py", "    rebound(8)");
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let file = file_in(&report, "get_flops.py");
    assert_eq!(file["status"], "no_gpu_code", "{file}");
    for rel in [
        "gpu_keyword.py",
        "gpu_positional.py",
        "gpu_spread.py",
        "gpu_handed.py",
        "gpu_rebound.py",
    ] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{file}");
        assert_eq!(crate::common::rule_codes(&file), ["GH001"], "{file}");
    }
}

/// From a trial on mmdet: `TrackSampleList = List[TrackDataSample]` at import, and
/// `isinstance(results[key], BaseBoxes)` in a registered transform, made five CPU tools get the
/// header, as if reading a class's name ran every method of it (their GPU code is a `def
/// cuda(self)` nobody calls). A class read only as a type runs nothing of it: a typing
/// subscript, an annotation, `isinstance`'s class, `except C`, a name compared (`type(x) is
/// C`). A class called, or a class field's annotation (a config parser builds what it names),
/// still runs its code, and so does a type alias read as code (nerfstudio's `tyro.cli(Commands)`
/// with `Commands = Union[Annotated[VideoToNerfstudioDataset, …], …]`).
#[test]
fn a_class_read_only_as_a_type_runs_nothing_of_it() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/boxes.py",
        "import torch\n\n\nclass Boxes:\n    def __init__(self, data):\n        self.data = data\n\n    def cuda(self):\n        return Boxes(self.data.cuda())\n\n\nclass BoxError(Exception):\n    def report(self):\n        torch.cuda.empty_cache()\n",
    );
    let modules = [
        ("alias", "from typing import List, Optional\n\nfrom pkg.boxes import Boxes\n\nBoxList = List[Boxes]\nMaybeBoxes = Optional[\"Boxes\"]\n\n\ndef run(x):\n    return x\n"),
        ("check", "from pkg.boxes import Boxes\n\n\ndef run(x):\n    return isinstance(x, Boxes) or issubclass(type(x), (Boxes, int))\n"),
        ("annotated", "from typing import Optional\n\nfrom pkg.boxes import Boxes\n\nLAST: Optional[Boxes] = None\n\n\ndef run(x):\n    kept: Boxes = x\n    return kept\n"),
        ("caught", "from pkg.boxes import BoxError\n\n\ndef run(x):\n    try:\n        return x[0]\n    except BoxError:\n        return None\n"),
        ("compared", "from pkg import boxes\nfrom pkg.boxes import Boxes\n\n\ndef run(x):\n    return type(x) is Boxes or x == boxes.Boxes\n"),
    ];
    let main = "\n\nif __name__ == \"__main__\":\n    main()\n";
    for (module, code) in modules {
        write(root, &format!("pkg/{module}.py"), code);
        write(
            root,
            &format!("tools/{module}.py"),
            &format!("from pkg.{module} import run\n\n\ndef main():\n    print(run([1])){main}"),
        );
    }
    // The same shapes where the class's code runs.
    write(
        root,
        "tools/to_gpu.py",
        &format!("from pkg.alias import BoxList, run\nfrom pkg.boxes import Boxes\n\n\ndef main():\n    boxes: BoxList = [Boxes([1])]\n    print(run(boxes)){main}"),
    );
    // A type alias read as code: a command-line parser builds the classes it names.
    write(
        root,
        "tools/cli.py",
        &format!("import tyro\n\nfrom pkg.alias import BoxList\n\n\ndef main():\n    print(tyro.cli(BoxList)){main}"),
    );
    write(
        root,
        "tools/report.py",
        &format!("from pkg.boxes import BoxError\n\n\ndef main():\n    try:\n        raise BoxError()\n    except BoxError as e:\n        e.report(){main}"),
    );
    write(
        root,
        "pkg/config.py",
        "from typing import List\n\nfrom pkg.boxes import Boxes\n\n\nclass Config:\n    boxes: List[Boxes]\n",
    );
    write(
        root,
        "tools/parse_config.py",
        &format!("from pkg.config import Config\n\n\ndef main():\n    print(Config){main}"),
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for (module, _) in modules {
        let file = file_in(&report, &format!("tools/{module}.py"));
        assert_eq!(file["status"], "no_gpu_code", "{file}");
    }
    for rel in [
        "tools/to_gpu.py",
        "tools/cli.py",
        "tools/report.py",
        "tools/parse_config.py",
    ] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{file}");
        assert_eq!(file["findings"][0]["rule"], "GH001", "{file}");
    }
    assert_eq!(
        file_in(&report, "tools/to_gpu.py")["evidence"],
        "program: an `if __name__ == \"__main__\"` block; its process reaches GPU code: `tools/to_gpu.py` (`main`) → `pkg/boxes.py` (`Boxes`)"
    );
    assert_eq!(
        file_in(&report, "tools/cli.py")["evidence"],
        "program: an `if __name__ == \"__main__\"` block; its process reaches GPU code: `tools/cli.py` (`main`) → `pkg/alias.py` (`BoxList`) → `pkg/boxes.py` (`Boxes`)"
    );
    assert_eq!(
        file_in(&report, "tools/parse_config.py")["evidence"],
        "program: an `if __name__ == \"__main__\"` block; its process reaches GPU code: `tools/parse_config.py` (`main`) → `pkg/config.py` (`Config`) → `pkg/boxes.py` (`Boxes`)"
    );
}

/// Trial 60 (WhisperSpeech): `@call_parse` CLIs run as `python -m pkg.tool` were "library" of a
/// module that loads `"pkg." + name`, without GPU code or compliant, and ran unmasked. A
/// decorator that runs its function when the module is `__main__` makes the module a program,
/// and the function's code is what its process runs; an import only wraps it.
#[test]
fn a_decorator_that_runs_its_function_as_main_makes_a_program() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"wsp\"\nversion = \"0.1\"\n",
    );
    write(root, "wsp/__init__.py", "");
    write(
        root,
        "wsp/inference.py",
        "import torch\n\n\ndef get_compute_device():\n    return \"cuda\" if torch.cuda.is_available() else \"cpu\"\n",
    );
    let tool = "import torch\nfrom fastcore.script import *\n\nfrom .inference import get_compute_device\n\n\n@call_parse\ndef prepare(input: str, batch_size: int = 16):\n    x = torch.zeros(batch_size).to(get_compute_device())\n    print(input, x.sum())\n";
    write(root, "wsp/extract_stoks.py", tool);
    // Not the table's decorator: a plain wrapper, run by nothing.
    write(
        root,
        "wsp/helper.py",
        "import torch\nfrom other.script import call_parse\n\n\n@call_parse\ndef helper():\n    torch.zeros(1).cuda()\n",
    );
    // The same class: a function run with the command line at module level.
    write(
        root,
        "wsp/fire_tool.py",
        "import fire\nimport torch\n\n\ndef main(n: int = 1):\n    torch.zeros(n).cuda()\n\n\nfire.Fire(main)\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let fire_tool = file_in(&report, "wsp/fire_tool.py");
    assert_eq!(
        crate::common::rule_codes(&fire_tool),
        ["GH001"],
        "{fire_tool}"
    );
    assert!(
        fire_tool["evidence"]
            .as_str()
            .unwrap()
            .starts_with("program"),
        "{fire_tool}"
    );
    let tool_file = file_in(&report, "wsp/extract_stoks.py");
    assert_eq!(tool_file["status"], "non_compliant", "{tool_file}");
    assert_eq!(
        crate::common::rule_codes(&tool_file),
        ["GH001"],
        "{tool_file}"
    );
    assert!(
        tool_file["evidence"]
            .as_str()
            .unwrap()
            .contains("`@call_parse` on `prepare`"),
        "{tool_file}"
    );
    let helper = file_in(&report, "wsp/helper.py");
    assert!(
        helper["evidence"].as_str().unwrap().starts_with("library"),
        "{helper}"
    );
    // `fix` gives the program its header at the top.
    let fixed = fix_report(root);
    assert_eq!(file_in(&fixed, "wsp/extract_stoks.py")["status"], "fixed");
    let text = std::fs::read_to_string(root.join("wsp/extract_stoks.py")).unwrap();
    assert!(
        text.contains("os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\""),
        "{text}"
    );
    assert!(text.ends_with(tool), "{text}");
}

/// From trial 60 (insightface's `config_reference.py`, a docs generator): a module that only
/// binds a constant naming a device (`DEFAULT_PROVIDER_PRIORITY = ("CUDAExecutionProvider",
/// …)`) made every program importing it "reach GPU code at import". Such a constant runs
/// nothing: it is GPU code where running code reads it (a program that hands it to a session,
/// a function that returns it). A module whose code at import uses a card (a session made,
/// `torch.cuda.set_device`, a model moved) still counts for every importer.
#[test]
fn a_device_constant_is_gpu_code_only_where_code_reads_it() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/ort_utils.py",
        "from typing import Sequence\n\nDEFAULT_PROVIDER_PRIORITY = (\n    \"CUDAExecutionProvider\",\n    \"CPUExecutionProvider\",\n)\nPROVIDERS: list = [\"CUDAExecutionProvider\"]\n\n\ndef get_default_providers(available: Sequence[str]):\n    return [p for p in DEFAULT_PROVIDER_PRIORITY if p in available]\n",
    );
    write(
        root,
        "pkg/config.py",
        "from .ort_utils import get_default_providers  # noqa: F401\n\nSCHEMA = {\"blur\": \"bool\"}\n",
    );
    write(
        root,
        "pkg/session.py",
        "import onnxruntime as ort\n\nPROVIDERS = [\"CUDAExecutionProvider\"]\nSESSION = ort.InferenceSession(\"m.onnx\", providers=PROVIDERS)\n",
    );
    write(
        root,
        "pkg/warm.py",
        "import torch\n\nDEVICE = \"cuda\"\ntorch.cuda.set_device(0)\n",
    );
    write(
        root,
        "pkg/net.py",
        "import torch\n\nMODEL = torch.nn.Linear(2, 2).cuda()\n",
    );
    let program = |rel: &str, head: &str, body: &str| {
        write(
            root,
            rel,
            &format!("{head}\n\n\ndef main():\n    {body}\n\n\nif __name__ == \"__main__\":\n    main()\n"),
        );
    };
    program(
        "docs.py",
        "import json\n\nfrom pkg.config import SCHEMA",
        "print(json.dumps(SCHEMA))",
    );
    program(
        "gpu_reads.py",
        "import onnxruntime as ort\n\nfrom pkg.ort_utils import PROVIDERS",
        "print(ort.InferenceSession(\"m.onnx\", providers=PROVIDERS))",
    );
    program(
        "gpu_function.py",
        "from pkg.ort_utils import get_default_providers",
        "print(get_default_providers([\"CPUExecutionProvider\"]))",
    );
    program(
        "gpu_session.py",
        "from pkg import session",
        "print(session)",
    );
    program("gpu_warm.py", "import pkg.warm", "print(pkg.warm)");
    program("gpu_net.py", "from pkg.net import MODEL", "print(MODEL)");
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let docs = file_in(&report, "docs.py");
    assert_eq!(docs["status"], "no_gpu_code", "{docs}");
    for rel in [
        "gpu_reads.py",
        "gpu_function.py",
        "gpu_session.py",
        "gpu_warm.py",
        "gpu_net.py",
    ] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{file}");
        assert_eq!(crate::common::rule_codes(&file), ["GH001"], "{file}");
    }
    let reads = file_in(&report, "gpu_reads.py");
    assert!(
        reads["evidence"]
            .as_str()
            .unwrap()
            .ends_with("`pkg/ort_utils.py` (`PROVIDERS`)"),
        "{reads}"
    );
}

/// From trial 60 (ultralytics' `utils/tqdm.py`, a stdlib-only demo): `SETTINGS =
/// SettingsManager()` at import runs `torch_distributed_zero_first`, whose only GPU code is a
/// barrier `if initialized and local_rank not in {-1, 0}` (`initialized =
/// dist.is_available() and dist.is_initialized()`). A process no distributed launcher starts
/// and whose code never starts a group has none initialised: it never takes such a branch. A
/// program that calls `init_process_group`, or a command that starts it with `torchrun`,
/// takes it; so does a test the function rebinds.
#[test]
fn a_branch_for_a_distributed_group_does_not_run_in_a_lone_process() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "yl/__init__.py", "");
    write(
        root,
        "yl/utils/__init__.py",
        "import os\n\nWORLD_SIZE = int(os.getenv(\"WORLD_SIZE\", \"1\"))\nLOCAL_RANK = int(os.getenv(\"LOCAL_RANK\", \"-1\")) if WORLD_SIZE > 1 else -1\n\n\nclass Settings(dict):\n    def __init__(self):\n        super().__init__()\n        from yl.utils.torch_utils import zero_first, synced\n\n        with zero_first(LOCAL_RANK):\n            self[\"datasets_dir\"] = \"datasets\"\n        self[\"synced\"] = synced()\n\n\nSETTINGS = Settings()\n",
    );
    write(
        root,
        "yl/utils/torch_utils.py",
        "from contextlib import contextmanager\n\nimport torch\nimport torch.distributed as dist\n\n\n@contextmanager\ndef zero_first(local_rank: int):\n    initialized = dist.is_available() and dist.is_initialized()\n    if initialized and local_rank not in {-1, 0}:\n        dist.barrier(device_ids=[torch.cuda.current_device()])\n    yield\n    if initialized and local_rank == 0:\n        dist.barrier(device_ids=[torch.cuda.current_device()])\n\n\ndef synced():\n    if torch.distributed.is_initialized():\n        torch.cuda.synchronize()\n    return True\n",
    );
    let program = |rel: &str, head: &str, body: &str| {
        write(
            root,
            rel,
            &format!("{head}from yl.utils import SETTINGS\n\n\ndef main():\n    {body}print(SETTINGS)\n\n\nif __name__ == \"__main__\":\n    main()\n"),
        );
    };
    program("show.py", "", "");
    program(
        "gpu_init.py",
        "import torch.distributed as dist\n\n",
        "dist.init_process_group(\"gloo\")\n    ",
    );
    program("gpu_launched.py", "", "");
    write(
        root,
        "run.sh",
        "#!/bin/sh\ntorchrun --nproc_per_node 2 gpu_launched.py\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let show = file_in(&report, "show.py");
    assert_eq!(show["status"], "no_gpu_code", "{show}");
    for rel in ["gpu_init.py", "gpu_launched.py"] {
        let file = file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{file}");
        assert!(
            crate::common::rule_codes(&file).contains(&"GH001".to_string()),
            "{file}"
        );
    }
    // A test the function may rebind is no question of the group: the branch runs.
    std::fs::write(
        root.join("yl/utils/torch_utils.py"),
        "import torch\nimport torch.distributed as dist\n\n\ndef zero_first(local_rank: int):\n    ready = local_rank > 0\n    ready = dist.is_initialized()\n    if ready:\n        torch.cuda.synchronize()\n    return open(\"x\")\n\n\ndef synced():\n    return True\n",
    )
    .unwrap();
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let show = file_in(&report, "show.py");
    assert_eq!(show["status"], "non_compliant", "{show}");
}

/// A file named alone (pre-commit's file list) in a tree with no `.git` and no config is judged
/// in its project, the nearest directory with a `pyproject.toml` (ruff's root), as a scan of the
/// whole tree judges it: its imports still resolve, so its GPU code is found.
#[test]
fn a_file_named_alone_is_judged_in_its_project_as_in_a_whole_tree_scan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"pkg\"\nversion = \"0\"\n",
    );
    write(root, "pkg/__init__.py", "");
    write(
        root,
        "pkg/model.py",
        "import torch\n\n\ndef run():\n    return torch.zeros(1).to(\"cuda\")\n",
    );
    write(root, "pkg/tools/__init__.py", "");
    write(
        root,
        "pkg/tools/run.py",
        "from pkg.model import run\n\nif __name__ == \"__main__\":\n    run()\n",
    );
    let whole = status_of(root);
    assert_eq!(whole["pkg/tools/run.py"], "non_compliant", "{whole:?}");
    for cwd in [root.to_path_buf(), root.join("pkg/tools")] {
        let arg = root.join("pkg/tools/run.py");
        let out = run(gh(&cwd).args(["scan", "--format", "json"]).arg(&arg));
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert_eq!(
            statuses(&out.stdout),
            BTreeMap::from([("pkg/tools/run.py".to_string(), "non_compliant".to_string())]),
            "from {}",
            cwd.display()
        );
    }
}

/// A crate of a cargo workspace named alone is judged from the workspace's root (cargo's own
/// search: the nearest `Cargo.toml` above with `[workspace]`), where its manifest inherits.
#[test]
fn a_workspace_members_directory_named_alone_keeps_the_workspace_as_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[workspace]\nmembers = [\"app\"]\n");
    write(
        root,
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    write(root, "app/src/main.rs", "fn main() {}\n");
    let out = run(gh(&root.join("app")).args(["scan", "--format", "json", "."]));
    assert_eq!(
        statuses(&out.stdout).into_keys().collect::<Vec<_>>(),
        ["app/src/main.rs"],
        "{}",
        out.stderr
    );
}
