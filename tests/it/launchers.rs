//! Programs a launcher that is no file of the tree starts (`python -m trainer.distribute
//! --script recipes/train.py`), and files a program loads by path (a config's `_base_`,
//! `runpy.run_path`): who starts what, and where the header goes.

use std::path::Path;

use crate::common::{file_in, gh, rule_codes as codes, run, tree, write};

const GPU_SCRIPT: &str = "import torch\n\n\ndef main():\n    model = torch.nn.Linear(4, 4).cuda()\n    print(model)\n\n\nif __name__ == \"__main__\":\n    main()\n";

fn scan(root: &Path) -> serde_json::Value {
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// From a trial on coqui-tts: `python3 -m trainer.distribute --script recipes/train.py` (a
/// launcher module of another package) starts the script, one rank per card it sees: the
/// command's mask is checked (GH016, GH203), and without one the number of processes is
/// unknown (GH207), never one process with the header written.
#[test]
fn a_launcher_outside_the_tree_starts_the_script_it_is_handed() {
    let dir = tree();
    let root = dir.path();
    for script in ["train_hifigan", "train_glowtts", "train_vits", "bench"] {
        write(root, &format!("recipes/{script}.py"), GPU_SCRIPT);
    }
    write(
        root,
        "docs/README.md",
        "# recipes\n\n```bash\nCUDA_VISIBLE_DEVICES=\"0,1\" python3 -m trainer.distribute --script recipes/train_hifigan.py\npython3 -m trainer.distribute --script=recipes/train_glowtts.py --config_path x.json\ntrainer-run --script recipes/train_vits.py\n```\n",
    );
    let doc = scan(root);
    let hifigan = file_in(&doc, "recipes/train_hifigan.py");
    assert_eq!(hifigan["status"], "non_compliant", "{hifigan}");
    let found = codes(&hifigan);
    assert!(
        found.contains(&"GH016".to_string()) && found.contains(&"GH203".to_string()),
        "{hifigan}"
    );
    for script in ["recipes/train_glowtts.py", "recipes/train_vits.py"] {
        let f = file_in(&doc, script);
        assert!(codes(&f).contains(&"GH207".to_string()), "{f}");
        assert_ne!(f["status"], "compliant", "{f}");
        assert!(
            f["evidence"].as_str().unwrap().contains("docs/README.md"),
            "{f}"
        );
    }
    // Not started by any command: a plain program, as before.
    let bench = file_in(&doc, "recipes/bench.py");
    assert_eq!(codes(&bench), vec!["GH001".to_string()], "{bench}");
    // The header is held back where the command decides the cards.
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    for script in ["train_hifigan", "train_glowtts", "train_vits"] {
        let text = std::fs::read_to_string(root.join(format!("recipes/{script}.py"))).unwrap();
        assert_eq!(text, GPU_SCRIPT, "{script}");
    }
}

/// A runner of one process given the command's mask (`CUDA_VISIBLE_DEVICES=0 python -m pdb
/// x.py`) starts the script as one process with that mask: GH016, no count to review.
#[test]
fn a_single_process_runner_gives_the_script_its_commands_mask() {
    let dir = tree();
    let root = dir.path();
    write(root, "tools/masked.py", GPU_SCRIPT);
    write(
        root,
        "run.sh",
        "#!/bin/sh\nCUDA_VISIBLE_DEVICES=0 python -m pdb tools/masked.py\n",
    );
    let masked = file_in(&scan(root), "tools/masked.py");
    assert!(codes(&masked).contains(&"GH016".to_string()), "{masked}");
    assert!(!codes(&masked).contains(&"GH207".to_string()), "{masked}");
}

/// What was right stays: a runner of one process (`python -m cProfile`, `coverage run`)
/// leaves a plain program; a tool that reads files (`python -m black`, `pytest`) starts
/// nothing; a module of the tree run with `-m` is the program, not the file it is handed; a
/// program that reads its config from the command line (`Config.fromfile(args.config)`)
/// with no config tree gets the header at its top.
#[test]
fn runners_file_tools_tree_modules_and_config_readers_are_as_before() {
    let dir = tree();
    let root = dir.path();
    for script in ["profiled", "covered", "formatted", "handed"] {
        write(root, &format!("tools/{script}.py"), GPU_SCRIPT);
    }
    write(root, "app/__init__.py", "");
    write(
        root,
        "app/run.py",
        "import runpy\nimport sys\n\nif __name__ == \"__main__\":\n    runpy.run_path(sys.argv[-1], run_name=\"__main__\")\n",
    );
    write(
        root,
        "train.py",
        "import argparse\n\nimport torch\nfrom mmengine.config import Config\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"config\")\n    cfg = Config.fromfile(parser.parse_args().config)\n    print(cfg, torch.zeros(1).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    write(
        root,
        "run.sh",
        "#!/bin/sh\npython -m cProfile -o out.prof tools/profiled.py\ncoverage run tools/covered.py\npython -m black tools/formatted.py\npytest tools/formatted.py\npython -m app.run --script tools/handed.py\n",
    );
    let doc = scan(root);
    for script in [
        "tools/profiled.py",
        "tools/covered.py",
        "tools/formatted.py",
        "tools/handed.py",
        "train.py",
    ] {
        let f = file_in(&doc, script);
        assert_eq!(codes(&f), vec!["GH001".to_string()], "{f}");
    }
    let module = file_in(&doc, "app/run.py");
    assert!(
        module["evidence"]
            .as_str()
            .unwrap()
            .contains("python -m app.run"),
        "{module}"
    );
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    let train = std::fs::read_to_string(root.join("train.py")).unwrap();
    assert!(train.starts_with("import argparse\nimport os\n"), "{train}");
}

const NET_CONFIG: &str = "from mypkg.models import build_classifier\n\nmodel = dict(type=\"Net\", width=8)\n\nif __name__ == \"__main__\":\n    model = build_classifier(model)\n    print(model)\n";

/// From a trial on mmpretrain: a config another config inherits (`_base_`) and the tools load
/// with `Config.fromfile(args.config)` runs in every process that loads it; its `__main__`
/// self-test made it a program with the header at its top. It is program and library: the
/// header goes in its `__main__` block only. A file run by a literal path
/// (`runpy.run_path`) is its loader's library code.
#[test]
fn a_file_loaded_by_path_is_library_code_of_its_loader() {
    let dir = tree();
    let root = dir.path();
    write(root, "mypkg/__init__.py", "");
    write(
        root,
        "mypkg/models.py",
        "import torch\n\n\ndef build_classifier(cfg):\n    return torch.nn.Linear(cfg[\"width\"], 2).cuda()\n",
    );
    write(root, "configs/_base_/models/net.py", NET_CONFIG);
    write(
        root,
        "configs/net/net_8xb32.py",
        "_base_ = [\"../_base_/models/net.py\"]\n\noptim = dict(lr=0.1)\n",
    );
    write(
        root,
        "configs/net/net_selftest.py",
        "_base_ = \"../_base_/models/net.py\"\n\nif __name__ == \"__main__\":\n    print(_base_)\n",
    );
    write(
        root,
        "tools/train.py",
        "import argparse\n\nfrom mmengine.config import Config\nfrom mmengine.runner import Runner\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"config\")\n    cfg = Config.fromfile(parser.parse_args().config)\n    Runner.from_cfg(cfg).train()\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    // Its code at import uses the card: that runs in the loader's process.
    write(
        root,
        "plugins/tool.py",
        "import torch\n\nmodel = torch.nn.Linear(4, 4).cuda()\n\nif __name__ == \"__main__\":\n    print(model)\n",
    );
    write(
        root,
        "host.py",
        "import runpy\n\n\ndef main():\n    runpy.run_path(\"plugins/tool.py\")\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    let doc = scan(root);
    let evidence = |rel: &str| file_in(&doc, rel)["evidence"].as_str().unwrap().to_string();
    let base = evidence("configs/_base_/models/net.py");
    assert!(
        base.starts_with("program and library") && base.contains("configs/net/net_8xb32.py"),
        "{base}"
    );
    assert!(
        evidence("configs/net/net_selftest.py").starts_with("program and library"),
        "{}",
        evidence("configs/net/net_selftest.py")
    );
    let tool = evidence("plugins/tool.py");
    assert!(
        tool.starts_with("program and library") && tool.contains("loaded by path by `host.py`"),
        "{tool}"
    );
    assert!(
        evidence("host.py").starts_with("program:"),
        "{}",
        evidence("host.py")
    );
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    let text = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    // The config's top is as written; the header is the first thing its self-test runs.
    let config = text("configs/_base_/models/net.py");
    assert!(
        config.starts_with(NET_CONFIG.split("if __name__").next().unwrap()),
        "{config}"
    );
    assert!(
        config.contains("if __name__ == \"__main__\":\n    import os\n"),
        "{config}"
    );
    // A program that loads nothing by path gets the header at its top, as before.
    assert!(text("tools/train.py").starts_with("import argparse\nimport os\n"));
    assert!(
        text("host.py").starts_with("import os\nimport runpy\n"),
        "{}",
        text("host.py")
    );
}

/// A launcher of ranks (MPI, Slurm, Horovod) starts the command after its options as several
/// processes: `mpirun -np 4 python train.py` asks for four cards (GH203), a count it does not
/// write (`-np $NP`, or none: one per slot, or the job's allocation) is unknown (GH207); the
/// header is held back either way. `srun -n 1` is one process: the plain fix.
#[test]
fn mpi_slurm_and_horovod_launchers_start_their_command_as_ranks() {
    let dir = tree();
    let root = dir.path();
    let commands = [
        ("four", "mpirun -np 4 python four.py", "GH203"),
        (
            "tasks",
            "srun --ntasks=8 --gres=gpu:8 python3 tasks.py --epochs 1",
            "GH203",
        ),
        (
            "horovod",
            "horovodrun -np 2 -H localhost:2 python horovod.py",
            "GH203",
        ),
        ("ranks", "mpiexec -n $NP python ranks.py", "GH207"),
        (
            "slots",
            "mpirun --hostfile hosts --bind-to none python slots.py",
            "GH207",
        ),
        ("alloc", "srun python alloc.py", "GH207"),
    ];
    let mut script = String::from("#!/bin/bash\nset -e\n");
    for (name, command, _) in &commands {
        write(root, &format!("{name}.py"), GPU_SCRIPT);
        script.push_str(command);
        script.push('\n');
    }
    write(root, "one.py", GPU_SCRIPT);
    script.push_str("srun -n 1 python one.py\n");
    write(root, "jobs/run.sh", &script);
    let doc = scan(root);
    for (name, command, code) in &commands {
        let f = file_in(&doc, &format!("{name}.py"));
        assert!(codes(&f).contains(&code.to_string()), "{command}: {f}");
        assert_ne!(f["status"], "compliant", "{f}");
    }
    let four = file_in(&doc, "four.py");
    assert!(
        four.to_string().contains("`mpirun -np 4`"),
        "the finding names what asks: {four}"
    );
    let one = file_in(&doc, "one.py");
    assert_eq!(codes(&one), vec!["GH001".to_string()], "{one}");
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    for (name, ..) in &commands {
        let text = std::fs::read_to_string(root.join(format!("{name}.py"))).unwrap();
        assert_eq!(text, GPU_SCRIPT, "{name}: the header is held back");
    }
    let one = std::fs::read_to_string(root.join("one.py")).unwrap();
    assert!(one.contains("CUDA_VISIBLE_DEVICES"), "{one}");
}

/// Trial 60 (ultralytics' `tests/test_cli.py`): `run(f"yolo train … device=0,1")`, a command
/// line written as one string with `key=value` arguments, asks the tree's `yolo` console
/// script for two cards: GH203, not "without GPU code". One card asked is fine.
#[test]
fn a_key_value_device_list_given_to_a_console_script_asks_for_those_cards() {
    let dir = tree();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[project]\nname = \"ultra\"\nversion = \"0.1\"\n[project.scripts]\nyolo = \"ultra.cli:entrypoint\"\n",
    );
    write(root, "ultra/__init__.py", "");
    write(
        root,
        "ultra/cli.py",
        "import sys\n\nimport torch\n\n\ndef entrypoint():\n    torch.zeros(1).to(\"cuda:\" + sys.argv[-1].split(\"=\")[-1])\n",
    );
    write(
        root,
        "tests/test_cli.py",
        "import subprocess\n\n\ndef run(cmd):\n    subprocess.run(cmd.split(), check=True)\n\n\ndef test_one(task=\"detect\"):\n    run(f\"yolo train {task} model=yolo.pt epochs=1 device=0\")\n\n\ndef test_two(task=\"detect\"):\n    run(f\"yolo train {task} model=yolo.pt epochs=1 device=0,1\")\n",
    );
    let doc = scan(root);
    let cli = file_in(&doc, "tests/test_cli.py");
    assert_eq!(cli["status"], "non_compliant", "{cli}");
    assert_eq!(codes(&cli), ["GH001", "GH203"], "{cli}");
    let gh203 = &cli["findings"][1];
    assert!(
        gh203["message"]
            .as_str()
            .unwrap()
            .contains("`yolo` (a console script of this tree) for `device=0,1`"),
        "{cli}"
    );
    assert_eq!(gh203["line"], 13, "{cli}");
}
