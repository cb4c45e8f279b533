//! Programs and their cards: more cards than the policy allows, one per rank, a program that is also a library.

use crate::model::finding::{FixSafety, Rule, RuleEdits, Severity};

pub static MULTI_GPU_ASSUMPTION: Rule = Rule {
    code: "GH201",
    name: "multi-gpu-assumption",
    severity: Severity::Info,
    summary: "code adapts to the visible GPUs (or uses no more than the policy allows): under the header it sees the policy's cards",
    why: "Code that adapts to the visible GPUs (a loop over device_count(), a branch on the count, one worker per visible GPU) or uses no more cards than the policy allows: under the header it runs on the policy's cards.",
    example: "for i in range(torch.cuda.device_count()): ...",
    fix: FixSafety::None,
    fix_why: "Information only.",
    ..Rule::DEFAULT
};

pub static VALIDATION_NOT_CALLED: Rule = Rule {
    code: "GH202",
    name: "validation-not-called",
    severity: Severity::Info,
    summary: "the validation call is not added: the file starts worker processes after it",
    why: "The validation call is not added where the file forks workers after it: CUDA in the parent breaks forked workers.",
    example: "mp.Process(target=work).start()",
    fix: FixSafety::None,
    fix_why: "Information only.",
    ..Rule::DEFAULT
};

pub static MULTI_GPU_CARDS: Rule = Rule {
    code: "GH203",
    name: "multi-gpu-cards",
    severity: Severity::Violation,
    summary: "code needs more GPUs than the policy allows (literal indices, a device list, a multi-card mask): it would fail with an invalid device ordinal",
    why: "Code that needs more cards than the policy allows (DataParallel(device_ids=[0, 1]), `cuda:0` and `cuda:1` used together in one function, max_memory or device_map over two indices, a '0,1' mask, a launch command such as torchrun --nproc_per_node 2) fails with an invalid device ordinal under the header, or runs on the forbidden card without it.",
    example: "nn.DataParallel(model, device_ids=[0, 1])",
    fix: FixSafety::None,
    fix_why: "Display only: make it use the policy's cards, or allow more cards in the policy (visible_devices = \"1,2\").",
    ..Rule::DEFAULT
};

pub static MULTI_GPU_PER_RANK: Rule = Rule {
    code: "GH204",
    name: "multi-gpu-per-rank",
    severity: Severity::Violation,
    summary: "one process per GPU, each picking its card from its rank: a launcher starting more processes than the policy has cards breaks it",
    why: "One process per GPU, each taking cuda:LOCAL_RANK: a launcher that starts more processes than the policy has cards gives rank 1 an invalid ordinal (or, unmasked, the forbidden card). The same for ranks a program starts itself (`mp.spawn(fn, nprocs=4)`, or a helper of the tree given the count, `spawn(fn, 4)`) when each takes a card of its own (its card from its rank, an NCCL group, which refuses two ranks on one card), and for a GPU program built to be one rank of a distributed launch (a `--local_rank` option, `LOCAL_RANK` written to its env, a `--launcher` offering `pytorch`/`slurm`/`mpi`), whose framework takes `cuda:LOCAL_RANK`.",
    example: "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
    fix: FixSafety::None,
    fix_why: "Display only: launch one process per allowed card (under the header rank 0's `cuda:0` is the policy's card), or start one worker per visible GPU (`nprocs=torch.cuda.device_count()`).",
    ..Rule::DEFAULT
};

pub static PROGRAM_IN_LIBRARY_ENV: Rule = Rule {
    code: "GH206",
    name: "program-in-library-env",
    severity: Severity::Violation,
    summary: "a module run as a program and imported as a library does not set the policy's env at the start of its `__main__` block",
    why: "A module with a `__main__` block that other modules import (or that an installable package ships) cannot carry the header at its top: that would set the env of every program that imports it. Only its own program runs the `__main__` block: the env set at its start, when nothing the module runs at import has touched a GPU, is that program's alone, before CUDA starts.",
    example: "# pkg/export.py, shipped by setup.py\nimport torch\n\nif __name__ == '__main__':\n    main()",
    fix: FixSafety::Safe,
    fix_why: "The header's env block goes in as the first statements of the `__main__` block (after an `import os` there when the module binds no `os`); a module that imports it never runs them. Offered only when nothing the module runs at import reaches GPU code and it writes no GPU variable anywhere else; otherwise the file is GH205, for review.",
    rewrite: "the header's env block as the first statements of the `__main__` block",
    edits: RuleEdits::SetsEnv,
    env: true,
    ..Rule::DEFAULT
};

pub static PROGRAM_IN_LIBRARY: Rule = Rule {
    code: "GH205",
    name: "program-in-library",
    severity: Severity::Review,
    summary: "a module that runs as a program is also imported as a library: it cannot carry the header",
    why: "A module with a `__main__` block that other modules import or load by path (a config inherited through `_base_` or read by `Config.fromfile`, `runpy.run_path`), or that an installable package ships, is both a program and a library: a header at its top would set the env of every program that imports it.",
    example: "# pkg/transcribe.py, imported by pkg/__init__.py\nif __name__ == '__main__':\n    cli()",
    fix: FixSafety::None,
    fix_why: "Display only: set the env at the start of the `__main__` block, or run it through an entry point with the header.",
    ..Rule::DEFAULT
};

pub static LAUNCH_COUNT_UNKNOWN: Rule = Rule {
    code: "GH207",
    name: "launch-count-unknown",
    severity: Severity::Review,
    summary: "a launcher starts the program as a number of processes the tree does not write (`--nproc_per_node=$GPUS`, an in-process torchrun): perhaps more than the policy's cards",
    why: "A distributed launcher given its process count by a variable (`torchrun --nproc_per_node=$GPUS x.py`, `accelerate launch --num_processes ${N}`), or a launcher of ranks that writes no count (`mpirun -np $NP`, `mpirun` alone: one process per slot; `srun` outside a batch script), or started in-process by the program itself from its own command line (`torch.distributed.run.run(args)`, `elastic_launch`, `start_processes`, torchtune's `tune run --nproc_per_node 4`), or ranks the program starts itself with a count it reads at run time (`mp.spawn(fn, nprocs=args.world_size)`) that each take a card of their own (their card from their rank, an NCCL group), or Lightning's `Trainer(accelerator=\"gpu\", devices=int(os.environ[\"SLURM_NTASKS_PER_NODE\"]))` (one process per card, as many as a value read at run time), may start several processes, each wanting a card: the policy's mask may leave them one. So may a launcher outside the tree that a command hands the program (`python -m trainer.distribute --script recipes/train.py`). The count is known only when it runs.",
    example: "# tools/train.py, started by tools/dist_train.sh: torchrun --nproc_per_node=$GPUS tools/train.py\nif __name__ == '__main__':\n    main()",
    fix: FixSafety::None,
    fix_why: "Display only, and the header is held back: make the command start as many processes as the policy allows cards (or allow more cards in the policy); where it always starts one, mark the finding `# noqa: GH207` and run `fix`.",
    ..Rule::DEFAULT
};

pub static CUDA_BEFORE_PROGRAM: Rule = Rule {
    code: "GH208",
    name: "cuda-before-program",
    severity: Severity::Review,
    summary: "Python runs package code before this program's own code, and that code starts CUDA at import: a header here comes too late",
    why: "`python -m pkg` runs `pkg/__init__.py` before `pkg/__main__.py`; a console script `pkg.cli:main` and `python -m pkg.sub.mod` import the packages above the module first. When the code those packages run at import uses a card or asks the driver for its cards (`torch.cuda.is_available()`), CUDA has read the env before the program's header runs, and the header changes nothing. Importing torch alone starts nothing: CUDA reads the env at its first use.",
    example: "# pkg/__init__.py\nimport torch\n\nHAS_CUDA = torch.cuda.is_available()\n\n# pkg/__main__.py: run as `python -m pkg`\nimport torch",
    fix: FixSafety::None,
    fix_why: "Display only: make the package start nothing at import (ask for the cards in a function), or set the env where the process starts (the launcher, a wrapper script).",
    ..Rule::DEFAULT
};
