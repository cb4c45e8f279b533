//! Programs that run as several ranks, each on a card of its own: the ranks a program starts
//! itself (`mp.spawn(fn, nprocs=4)`, a helper of the tree given the count), and a program built
//! to be one rank of a distributed launch. From a user trial (colossalai's tests, mmpretrain's
//! `kfold-cross-valid.py`): both were fixed to "compliant", and the ranks then meet on one card.

use std::path::Path;

use crate::common::{file_in, fix_json as fix_report, write};

/// Each finding of `rel` as `RULE: message`.
fn findings(report: &serde_json::Value, rel: &str) -> Vec<String> {
    file_in(report, rel)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}: {}",
                f["rule"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// A library of the tree: an NCCL group joined by each rank, and colossalai's `spawn(func, n)`
/// helper, which hands its count to `mp.spawn` through its parameter.
fn ranks_library(root: &Path) {
    write(root, "mypkg/__init__.py", "");
    write(
        root,
        "mypkg/launch.py",
        "import torch.distributed as dist\n\n\ndef launch(rank, world_size, port):\n    dist.init_process_group(\n        rank=rank, world_size=world_size, init_method=f\"tcp://localhost:{port}\", backend=\"nccl\"\n    )\n",
    );
    write(
        root,
        "mypkg/testing.py",
        "from functools import partial\n\nimport torch.multiprocessing as mp\n\n\ndef spawn(func, nprocs=1, **kwargs):\n    wrapped_func = partial(func, world_size=nprocs, port=29500, **kwargs)\n    mp.spawn(wrapped_func, nprocs=nprocs)\n",
    );
}

/// A program whose `__main__` block is `main`, with a rank function that joins the group and
/// uses CUDA.
fn ranks_program(imports: &str, main: &str) -> String {
    format!(
        "import torch\n{imports}\nfrom mypkg.launch import launch\n\n\ndef check(rank, world_size, port):\n    launch(rank, world_size, port)\n    print(rank, torch.ones(4).cuda().sum())\n\n\nif __name__ == \"__main__\":\n    {main}\n"
    )
}

/// Four ranks of an NCCL group need four cards, whether the program starts them with
/// `torch.multiprocessing.spawn(…, nprocs=4)` or through the tree's helper (`spawn(check, 4)`,
/// the count followed into `mp.spawn` through the helper's parameter, in another module):
/// GH204, and the file is left as written. A count read at run time is GH207, for review; one
/// rank (`nprocs=1`, the helper's default) is one card, and the program is fixed.
#[test]
fn ranks_a_program_starts_need_as_many_cards_as_it_starts() {
    let dir = crate::common::tree();
    let root = dir.path();
    ranks_library(root);
    let direct = ranks_program(
        "import torch.multiprocessing as mp\n",
        "mp.spawn(check, args=(4, 29500), nprocs=4)",
    );
    write(root, "run_direct.py", &direct);
    let wrapped = ranks_program("\nfrom mypkg.testing import spawn\n", "spawn(check, 4)");
    write(root, "run_wrapped.py", &wrapped);
    let cli = ranks_program(
        "import argparse\n\nimport torch.multiprocessing as mp\n",
        "parser = argparse.ArgumentParser()\n    parser.add_argument(\"--world-size\", type=int)\n    args = parser.parse_args()\n    mp.spawn(check, args=(args.world_size, 29500), nprocs=args.world_size)",
    );
    write(root, "run_cli.py", &cli);
    let one = ranks_program(
        "import torch.multiprocessing as mp\n",
        "mp.spawn(check, args=(1, 29500), nprocs=1)",
    );
    write(root, "run_one.py", &one);
    let default = ranks_program("\nfrom mypkg.testing import spawn\n", "spawn(check)");
    write(root, "run_default.py", &default);
    let (report, code) = fix_report(root);
    assert_eq!(code, 1, "{report}");
    assert!(
        findings(&report, "run_direct.py").contains(&"GH204: `torch.multiprocessing.spawn(…)` (`nprocs=4`) starts 4 ranks, each on a card of its own: they need 4 cards, mask '1' allows 1".to_string()),
        "{report}"
    );
    assert!(
        findings(&report, "run_wrapped.py").contains(
            &"GH204: `spawn(…)` (`nprocs=4`) starts 4 ranks, each on a card of its own: they need 4 cards, mask '1' allows 1".to_string()
        ),
        "{report}"
    );
    let help = file_in(&report, "run_wrapped.py")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "GH204")
        .map(|f| f["help"].as_str().unwrap().to_string())
        .unwrap();
    assert!(
        help.contains("`mypkg/launch.py` (`launch`)") && help.contains("start at most 1 rank(s)"),
        "{help}"
    );
    assert!(
        findings(&report, "run_cli.py").contains(
            &"GH207: `torch.multiprocessing.spawn(…)` (`nprocs=args.world_size`) starts that many ranks, each on a card of its own: perhaps more than mask '1' allows".to_string()
        ),
        "{report}"
    );
    for (rel, text) in [
        ("run_direct.py", &direct),
        ("run_wrapped.py", &wrapped),
        ("run_cli.py", &cli),
    ] {
        assert_eq!(
            file_in(&report, rel)["status"],
            "non_compliant",
            "{rel}: {report}"
        );
        assert_eq!(&std::fs::read_to_string(root.join(rel)).unwrap(), text);
    }
    for rel in ["run_one.py", "run_default.py"] {
        assert_eq!(file_in(&report, rel)["status"], "fixed", "{rel}: {report}");
    }
}

/// Ranks that take no card of their own (no NCCL group, no card from the rank) share the
/// policy's card: four of them are no finding, and the program is fixed.
#[test]
fn ranks_that_share_the_policys_card_need_no_more() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "run_gloo.py",
        "import torch\nimport torch.multiprocessing as mp\n\n\ndef check(rank):\n    print(rank, torch.ones(4).cuda().sum())\n\n\nif __name__ == \"__main__\":\n    mp.spawn(check, nprocs=4)\n",
    );
    let (report, code) = fix_report(root);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        file_in(&report, "run_gloo.py")["status"],
        "fixed",
        "{report}"
    );
}

/// mmpretrain's `tools/kfold-cross-valid.py`: `--launcher {none,pytorch,slurm,mpi}` and
/// `--local_rank`, written to `LOCAL_RANK`, handed to mmengine's `Runner`, which takes
/// `cuda:LOCAL_RANK` under a distributed launch. Each of the three says the program is one rank
/// of several, as `torch.cuda.set_device(args.local_rank)` does: GH204, left as written. The
/// same program with no launcher option is one process, and fixed; a CPU program with
/// `--local-rank` has no GPU code.
#[test]
fn a_program_built_as_one_rank_of_a_distributed_launch_is_per_rank() {
    let dir = crate::common::tree();
    let root = dir.path();
    let program = |options: &str, env: &str| {
        format!(
            "import argparse\nimport os\n\nfrom mmengine.config import Config\nfrom mmengine.runner import Runner\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"config\")\n{options}    args = parser.parse_args()\n{env}    cfg = Config.fromfile(args.config)\n    Runner.from_cfg(cfg).train()\n\n\nif __name__ == \"__main__\":\n    main()\n"
        )
    };
    let launcher = program(
        "    parser.add_argument(\"--launcher\", choices=[\"none\", \"pytorch\", \"slurm\", \"mpi\"], default=\"none\")\n",
        "",
    );
    write(root, "tools/launcher.py", &launcher);
    let local_rank = program(
        "    parser.add_argument(\"--local_rank\", type=int, default=0)\n",
        "",
    );
    write(root, "tools/local_rank.py", &local_rank);
    let env = program(
        "    parser.add_argument(\"--rank\", type=int, default=0)\n",
        "    os.environ[\"LOCAL_RANK\"] = str(args.rank)\n",
    );
    write(root, "tools/env.py", &env);
    let single = program(
        "    parser.add_argument(\"--launcher\", choices=[\"none\"], default=\"none\")\n",
        "",
    );
    write(root, "tools/single.py", &single);
    write(
        root,
        "tools/cpu.py",
        "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"--local-rank\", type=int, default=0)\nprint(parser.parse_args().local_rank)\n",
    );
    let (report, code) = fix_report(root);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report, "tools/launcher.py"),
        [
            "GH001: GPU header missing",
            "GH204: one rank of a distributed launch, its card chosen by its rank (`--launcher` offers `pytorch`, `slurm`, `mpi`): more than 1 rank(s) leave mask '1'",
        ],
        "{report}"
    );
    let help = file_in(&report, "tools/launcher.py")["findings"][1]["help"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(help.contains("run it as one process"), "{help}");
    assert!(
        findings(&report, "tools/local_rank.py").contains(&"GH204: one rank of a distributed launch, its card chosen by its rank (`--local_rank`, which a distributed launcher passes each rank): more than 1 rank(s) leave mask '1'".to_string()),
        "{report}"
    );
    assert!(
        findings(&report, "tools/env.py").contains(&"GH204: one rank of a distributed launch, its card chosen by its rank (writes `LOCAL_RANK`, from which the code it runs picks its card): more than 1 rank(s) leave mask '1'".to_string()),
        "{report}"
    );
    for (rel, text) in [
        ("tools/launcher.py", &launcher),
        ("tools/local_rank.py", &local_rank),
        ("tools/env.py", &env),
    ] {
        assert_eq!(
            file_in(&report, rel)["status"],
            "non_compliant",
            "{rel}: {report}"
        );
        assert_eq!(&std::fs::read_to_string(root.join(rel)).unwrap(), text);
    }
    assert_eq!(
        file_in(&report, "tools/single.py")["status"],
        "fixed",
        "{report}"
    );
    assert_eq!(
        file_in(&report, "tools/cpu.py")["status"],
        "no_gpu_code",
        "{report}"
    );
}

/// A rank that takes `rank % torch.cuda.device_count()` takes a card of its own wherever there
/// are enough, and shares one under a one-card mask: two such ranks need two cards (GH204),
/// whatever their process group's backend.
#[test]
fn ranks_that_take_their_rank_modulo_the_count_need_a_card_each() {
    let dir = crate::common::tree();
    let root = dir.path();
    write(
        root,
        "run_mod.py",
        "import torch\nimport torch.multiprocessing as mp\n\n\ndef check(rank):\n    torch.cuda.set_device(rank % torch.cuda.device_count())\n    print(rank, torch.ones(4).cuda().sum())\n\n\nif __name__ == \"__main__\":\n    mp.spawn(check, nprocs=2)\n",
    );
    let (report, code) = fix_report(root);
    assert_eq!(code, 1, "{report}");
    assert!(
        findings(&report, "run_mod.py").contains(
            &"GH204: `torch.multiprocessing.spawn(…)` (`nprocs=2`) starts 2 ranks, each on a card of its own: they need 2 cards, mask '1' allows 1".to_string()
        ),
        "{report}"
    );
    assert_eq!(file_in(&report, "run_mod.py")["status"], "non_compliant");
}

/// Trial 60 (WhisperSpeech's `train_multi.py`): Lightning's `devices=` read from the
/// scheduler's env (`SLURM_NTASKS_PER_NODE`) is a number of cards known only when it runs,
/// like a launcher's `--nproc_per_node=$GPUS`: GH207, the header held back, never "fixed"
/// to one card. A literal count is GH203; a written count of one is fine.
#[test]
fn lightning_devices_read_at_run_time_are_an_unknown_count() {
    let dir = crate::common::tree();
    let root = dir.path();
    let trainer = |devices: &str| {
        format!("import os\n\nimport lightning.pytorch as pl\n\ntrainer = pl.Trainer(\n    strategy=\"ddp\",\n    accelerator=\"gpu\",\n    devices={devices},\n)\ntrainer.fit(None)\n")
    };
    let slurm = trainer("int(os.environ.get(\"SLURM_NTASKS_PER_NODE\", 1))");
    write(root, "slurm.py", &slurm);
    write(root, "four.py", &trainer("4"));
    write(root, "one.py", &trainer("1"));
    let (report, code) = fix_report(root);
    assert_eq!(code, 1);
    let found = findings(&report, "slurm.py");
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("GH207: ") && f.contains("SLURM_NTASKS_PER_NODE")),
        "{found:?}"
    );
    assert_eq!(file_in(&report, "slurm.py")["status"], "non_compliant");
    assert_eq!(
        std::fs::read_to_string(root.join("slurm.py")).unwrap(),
        slurm
    );
    assert!(findings(&report, "four.py")
        .iter()
        .any(|f| f.starts_with("GH203: ")));
    assert_eq!(file_in(&report, "one.py")["status"], "fixed");
}
