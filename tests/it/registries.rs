//! Issue 35 ("programs by evidence"): a class a decorator registers (`@register("adam")`) runs
//! in a program that reads the registry it was stored in, not in every program that imports its
//! module. fairseq's CPU tools (`fairseq-score`, `get_bitext.py`) import the package, which
//! loads its registries of optimizers and tasks, and were taken as GPU programs.

use std::path::Path;

use crate::common::{file_in, gh, run, write};

/// `scan` on the tree, as its JSON report.
fn scan(root: &Path) -> serde_json::Value {
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The first finding's rule of `rel`, and its status.
fn judged(report: &serde_json::Value, rel: &str) -> (String, String) {
    let file = file_in(report, rel);
    let rule = file["findings"][0]["rule"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (file["status"].as_str().unwrap().to_string(), rule)
}

const OPTIM: &str = "import torch\n\nREGISTRY = {}\n\n\ndef register(name):\n    def deco(cls):\n        REGISTRY[name] = cls\n        return cls\n\n    return deco\n\n\ndef build(name, params):\n    return REGISTRY[name](params)\n\n\n@register(\"adam\")\nclass Adam:\n    def __init__(self, params):\n        self.state = torch.zeros(1).cuda()\n";

/// The repro of the issue (r1): a script that lower-cases stdin imports a package whose
/// module registers an optimizer that uses the GPU when made. Nothing of the script makes one:
/// no GPU code, no header.
#[test]
fn a_script_that_imports_a_registry_runs_none_of_its_items() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "lib/__init__.py",
        "from lib import optim  # noqa: F401\n",
    );
    write(root, "lib/optim.py", OPTIM);
    let script = "import sys\n\nimport lib  # noqa: F401\n\n\ndef main():\n    for line in sys.stdin:\n        print(line.lower(), end=\"\")\n\n    print(\"adam\" in lib.optim.REGISTRY, len(lib.optim.REGISTRY))\n\n\nif __name__ == \"__main__\":\n    main()\n";
    write(root, "tokenize_text.py", script);
    let report = scan(root);
    let file = file_in(&report, "tokenize_text.py");
    assert_eq!(file["status"], "no_gpu_code", "{file}");
    assert_eq!(
        file["evidence"],
        "program: an `if __name__ == \"__main__\"` block; its process reaches no GPU code"
    );
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(root.join("tokenize_text.py")).unwrap(),
        script
    );
}

/// The same package with programs that read the registry (`REGISTRY["adam"](…)`) or call the
/// function of its module that does (`build("adam", …)`): they make the optimizer, and are
/// GPU programs that get the header.
#[test]
fn a_program_that_reads_the_registry_runs_its_items() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "lib/__init__.py",
        "from lib import optim  # noqa: F401\n",
    );
    write(root, "lib/optim.py", OPTIM);
    write(
        root,
        "train.py",
        "from lib.optim import REGISTRY\n\nif __name__ == \"__main__\":\n    opt = REGISTRY[\"adam\"]([])\n",
    );
    write(
        root,
        "tune.py",
        "import lib.optim\n\nif __name__ == \"__main__\":\n    opt = lib.optim.build(\"adam\", [])\n",
    );
    write(
        root,
        "every.py",
        "from lib import optim\n\nif __name__ == \"__main__\":\n    opts = [cls([]) for cls in optim.REGISTRY.values()]\n",
    );
    let report = scan(root);
    for rel in ["train.py", "tune.py", "every.py"] {
        assert_eq!(
            judged(&report, rel),
            ("non_compliant".to_string(), "GH001".to_string()),
            "{rel}: {}",
            file_in(&report, rel)
        );
    }
    let evidence = file_in(&report, "tune.py")["evidence"].clone();
    assert_eq!(
        evidence,
        "program: an `if __name__ == \"__main__\"` block; its process reaches GPU code: `tune.py` → `lib/optim.py` (`Adam`)"
    );
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}", out.stdout);
    for rel in ["train.py", "tune.py", "every.py"] {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        assert!(text.contains("CUDA_VISIBLE_DEVICES"), "{rel}: {text}");
    }
}

/// Where the registry is not the tree's own (Flask's `@app.route`, an mmengine registry whose
/// parents build by scope) or the index cannot tell what the decorator is, the registered
/// function still runs with its module: a program that imports it is a GPU program.
#[test]
fn what_a_registry_of_another_package_holds_runs_with_its_module() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "web/routes.py",
        "import torch\nfrom flask import Flask\n\napp = Flask(__name__)\n\n\n@app.route(\"/\")\ndef index():\n    return str(torch.zeros(1).cuda())\n",
    );
    write(
        root,
        "nets/heads.py",
        "import torch\nfrom mmengine.registry import MODELS\n\n\n@MODELS.register_module()\nclass Head:\n    def __init__(self):\n        self.w = torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "nets/decorators.py",
        "import torch\n\nHOOKS = []\n\n\n@HOOKS[0]\ndef hook():\n    return torch.zeros(1).cuda()\n",
    );
    for (rel, module) in [
        ("serve.py", "web.routes"),
        ("build.py", "nets.heads"),
        ("hooks.py", "nets.decorators"),
    ] {
        write(
            root,
            rel,
            &format!("import {module}  # noqa: F401\n\nif __name__ == \"__main__\":\n    print(\"ok\")\n"),
        );
    }
    let report = scan(root);
    for rel in ["serve.py", "build.py", "hooks.py"] {
        assert_eq!(
            judged(&report, rel),
            ("non_compliant".to_string(), "GH001".to_string()),
            "{rel}: {}",
            file_in(&report, rel)
        );
    }
}

/// fairseq's shapes: `registry.setup_registry` makes each registry in a function and hands
/// back its builder, its decorator and its dict, unpacked at module level; a package
/// `__init__.py` imports every module of its folder by name to register their classes, and
/// reads one static hook of each (`TASK_REGISTRY[name].add_args(parser)`) at import. A CPU tool
/// that imports the package runs none of the registered classes; the training program that
/// sets up its task and builds its optimizer runs them.
#[test]
fn a_registry_a_function_makes_runs_its_items_where_its_builder_is_called() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "setup.py",
        "from setuptools import setup\n\nsetup(name=\"seq\", packages=[\"seq\", \"seq.optim\", \"seq.tasks\"], entry_points={\"console_scripts\": [\"seq-score = seq_cli.score:cli_main\", \"seq-train = seq_cli.train:cli_main\"]})\n",
    );
    write(
        root,
        "seq/__init__.py",
        "import seq.optim  # noqa: F401\nimport seq.tasks  # noqa: F401\n",
    );
    write(
        root,
        "seq/registry.py",
        "REGISTRIES = {}\n\n\ndef setup_registry(registry_name, base_class=None):\n    REGISTRY = {}\n\n    def build_x(cfg, *args):\n        return REGISTRY[cfg[registry_name]](cfg, *args)\n\n    def register_x(name):\n        def register_x_cls(cls):\n            REGISTRY[name] = cls\n            return cls\n\n        return register_x_cls\n\n    REGISTRIES[registry_name] = REGISTRY\n    return build_x, register_x, REGISTRY\n",
    );
    write(
        root,
        "seq/optim/__init__.py",
        "import importlib\nimport os\n\nfrom seq import registry\n\n(\n    _build_optimizer,\n    register_optimizer,\n    OPTIMIZER_REGISTRY,\n) = registry.setup_registry(\"optimizer\")\n\n\ndef build_optimizer(cfg, params):\n    return _build_optimizer(cfg, params)\n\n\nfor file in sorted(os.listdir(os.path.dirname(__file__))):\n    if file.endswith(\".py\") and not file.startswith(\"_\"):\n        importlib.import_module(\"seq.optim.\" + file[:-3])\n",
    );
    write(
        root,
        "seq/optim/adam.py",
        "import torch\n\nfrom seq.optim import register_optimizer\n\n\n@register_optimizer(\"adam\")\nclass Adam:\n    def __init__(self, cfg, params):\n        self.state = torch.zeros(1).cuda()\n",
    );
    write(
        root,
        "seq/tasks/__init__.py",
        "import argparse\n\nTASK_REGISTRY = {}\n\n\ndef setup_task(cfg):\n    return TASK_REGISTRY[cfg[\"task\"]].setup_task(cfg)\n\n\ndef register_task(name):\n    def register_task_cls(cls):\n        if name in TASK_REGISTRY:\n            raise ValueError(name)\n        TASK_REGISTRY[name] = cls\n        return cls\n\n    return register_task_cls\n\n\nfrom seq.tasks import translation  # noqa: E402,F401\n\nfor task_name in [\"translation\"]:\n    if task_name in TASK_REGISTRY:\n        parser = argparse.ArgumentParser()\n        TASK_REGISTRY[task_name].add_args(parser)\n",
    );
    write(
        root,
        "seq/tasks/translation.py",
        "import torch\n\nfrom seq.tasks import register_task\n\n\n@register_task(\"translation\")\nclass TranslationTask:\n    @staticmethod\n    def add_args(parser):\n        parser.add_argument(\"--beam\", type=int)\n\n    @classmethod\n    def setup_task(cls, cfg):\n        return cls()\n\n    def __init__(self):\n        self.model = torch.zeros(1).cuda()\n",
    );
    write(root, "seq_cli/__init__.py", "");
    write(
        root,
        "seq_cli/score.py",
        "import sys\n\nimport seq  # noqa: F401\n\n\ndef cli_main():\n    print(sum(1 for _ in sys.stdin))\n\n\nif __name__ == \"__main__\":\n    cli_main()\n",
    );
    write(
        root,
        "seq_cli/train.py",
        "from seq import optim, tasks\n\n\ndef cli_main():\n    cfg = {\"task\": \"translation\", \"optimizer\": \"adam\"}\n    task = tasks.setup_task(cfg)\n    return task, optim.build_optimizer(cfg, [])\n\n\nif __name__ == \"__main__\":\n    cli_main()\n",
    );
    let report = scan(root);
    assert_eq!(
        judged(&report, "seq_cli/score.py").0,
        "no_gpu_code",
        "{}",
        file_in(&report, "seq_cli/score.py")
    );
    assert_eq!(
        judged(&report, "seq_cli/train.py"),
        ("non_compliant".to_string(), "GH001".to_string()),
        "{}",
        file_in(&report, "seq_cli/train.py")
    );
}

/// From trial 60 (ultralytics' `@ThreadingLocked() def _load_migraphx_session`): a decorator of
/// the tree that only wraps the function (an instance whose `__call__` returns a wrapper, a
/// factory's decorator, a function that logs through a module-level logger) registers nothing:
/// the function runs where it is called, and a CPU tool that imports its module gets no
/// header. Read from the decorator's body: one that stores the function in a registry still
/// registers it (a program that reads the registry runs it), and one that calls it while
/// decorating (`f()` in the decorator, or in an instance's `__call__`) runs it at import.
#[test]
fn a_decorator_that_only_wraps_registers_nothing() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(root, "lib/__init__.py", "");
    write(
        root,
        "lib/deco.py",
        "import functools\nimport logging\nimport threading\n\nLOGGER = logging.getLogger(__name__)\nHOOKS = {}\n\n\nclass ThreadingLocked:\n    def __init__(self):\n        self.lock = threading.Lock()\n\n    def __call__(self, f):\n        @functools.wraps(f)\n        def decorated(*args, **kwargs):\n            with self.lock:\n                return f(*args, **kwargs)\n\n        return decorated\n\n\ndef retry(times):\n    def decorator(f):\n        @functools.wraps(f)\n        def wrapped(*args, **kwargs):\n            for _ in range(times - 1):\n                try:\n                    return f(*args, **kwargs)\n                except RuntimeError:\n                    pass\n            return f(*args, **kwargs)\n\n        return wrapped\n\n    return decorator\n\n\ndef timed(f):\n    @functools.wraps(f)\n    def wrapped(*args, **kwargs):\n        out = f(*args, **kwargs)\n        LOGGER.info(\"%s done\", f.__name__)\n        return out\n\n    return wrapped\n\n\ndef register(name):\n    def decorator(f):\n        HOOKS[name] = f\n        return f\n\n    return decorator\n\n\ndef run_now(f):\n    f()\n    return f\n\n\nclass Once:\n    def __call__(self, f):\n        f()\n        return f\n\n\nLOGGER.info(\"loaded\")\n",
    );
    let gpu = |deco: &str| {
        format!("import torch\n\nfrom lib import deco\n\n\n@deco.{deco}\ndef load(index=0):\n    return torch.zeros(1, device=f\"cuda:{{index}}\")\n")
    };
    let tool = |module: &str, body: &str| {
        format!("from lib.{module} import load  # noqa: F401\n\nif __name__ == \"__main__\":\n    {body}\n")
    };
    let cases = [
        ("locked", "ThreadingLocked()", "no_gpu_code"),
        ("retried", "retry(3)", "no_gpu_code"),
        ("timed", "timed", "no_gpu_code"),
        ("hooked", "register(\"load\")", "non_compliant"),
        ("now", "run_now", "non_compliant"),
        ("once", "Once()", "non_compliant"),
    ];
    for (module, deco, _) in cases {
        write(root, &format!("lib/{module}.py"), &gpu(deco));
        let body = if module == "hooked" {
            "from lib.deco import HOOKS\n\n    print([hook() for hook in HOOKS.values()])"
        } else {
            "print(\"assets ready\")"
        };
        write(root, &format!("tool_{module}.py"), &tool(module, body));
    }
    write(root, "gpu_locked.py", &tool("locked", "print(load(0))"));
    let report = scan(root);
    for (module, _, status) in cases {
        let rel = format!("tool_{module}.py");
        assert_eq!(
            judged(&report, &rel).0,
            status,
            "{}",
            file_in(&report, &rel)
        );
    }
    assert_eq!(
        judged(&report, "gpu_locked.py"),
        ("non_compliant".to_string(), "GH001".to_string()),
        "{}",
        file_in(&report, "gpu_locked.py")
    );
}
