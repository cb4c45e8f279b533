//! What Python's GPU frameworks and APIs are, as data: the frameworks (and which take a GPU
//! unasked), the calls and keywords that choose a device, and the calls that start a child
//! process. The facts, the project index and the prefilter read them from here; the tests
//! below check that the pieces agree.

/// A GPU framework: a module whose import makes GPU code.
#[derive(Debug)]
pub struct Framework {
    pub module: &'static str,
    /// Whether importing it takes a GPU without being told to: torch, transformers,
    /// diffusers… stay on the CPU unless the code asks for CUDA, which the facts see.
    pub unasked: Unasked,
}

/// Whether a framework's import takes a GPU unasked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unasked {
    No,
    /// The framework and every submodule of it.
    Yes,
    /// Only these submodules (`numba.cuda`).
    Only(&'static [&'static str]),
}

const fn framework(module: &'static str) -> Framework {
    Framework {
        module,
        unasked: Unasked::No,
    }
}

const fn by_default(module: &'static str) -> Framework {
    Framework {
        module,
        unasked: Unasked::Yes,
    }
}

/// The GPU frameworks. A new one is a row here and a case in `tests/it/python_rules.rs`.
pub const FRAMEWORKS: &[Framework] = &[
    framework("torch"),
    framework("torchaudio"),
    framework("torchvision"),
    by_default("tensorflow"),
    by_default("jax"),
    by_default("jaxlib"),
    by_default("cupy"),
    Framework {
        module: "numba",
        unasked: Unasked::Only(&["numba.cuda"]),
    },
    by_default("pycuda"),
    framework("transformers"),
    by_default("faster_whisper"),
    by_default("whisper"),
    framework("TTS"),
    framework("llama_cpp"),
    framework("onnxruntime"),
    by_default("accelerate"),
    // coqui-tts-trainer: `Trainer(…).fit()` puts the model on the visible cards unasked; its
    // configs, I/O and logging helpers (`TrainerConfig`, `trainer.io`) touch none.
    Framework {
        module: "trainer",
        unasked: Unasked::Only(&["trainer.Trainer"]),
    },
    framework("ctranslate2"),
    framework("diffusers"),
    by_default("sentence_transformers"),
    by_default("vllm"),
    by_default("tensorrt"),
    // ModelScope's `pipeline(…)` runs on `device="gpu"` unless told otherwise; its hub (model
    // downloads) and the rest of the package touch no card.
    Framework {
        module: "modelscope",
        unasked: Unasked::Only(&["modelscope.pipelines"]),
    },
    // Stable-Baselines3 and its contrib package: an algorithm (`PPO("MlpPolicy", env)`) takes
    // `device="auto"`, CUDA whenever a card is visible; its environments, wrappers and
    // callbacks touch none.
    Framework {
        module: "stable_baselines3",
        unasked: Unasked::Only(&[
            "stable_baselines3.A2C",
            "stable_baselines3.DDPG",
            "stable_baselines3.DQN",
            "stable_baselines3.PPO",
            "stable_baselines3.SAC",
            "stable_baselines3.TD3",
            "stable_baselines3.a2c",
            "stable_baselines3.ddpg",
            "stable_baselines3.dqn",
            "stable_baselines3.ppo",
            "stable_baselines3.sac",
            "stable_baselines3.td3",
        ]),
    },
    Framework {
        module: "sb3_contrib",
        unasked: Unasked::Only(&[
            "sb3_contrib.ARS",
            "sb3_contrib.CrossQ",
            "sb3_contrib.MaskablePPO",
            "sb3_contrib.QRDQN",
            "sb3_contrib.RecurrentPPO",
            "sb3_contrib.TQC",
            "sb3_contrib.TRPO",
            "sb3_contrib.ars",
            "sb3_contrib.crossq",
            "sb3_contrib.ppo_mask",
            "sb3_contrib.ppo_recurrent",
            "sb3_contrib.qrdqn",
            "sb3_contrib.tqc",
            "sb3_contrib.trpo",
        ]),
    },
    // faiss-gpu: the CPU indexes stay on the CPU; `index_cpu_to_gpu` and `StandardGpuResources`
    // take a card, which the facts see.
    framework("faiss"),
];

/// The frameworks' modules (`GPU_FRAMEWORKS`), in the table's order.
pub fn gpu_frameworks() -> impl Iterator<Item = &'static str> {
    FRAMEWORKS.iter().map(|f| f.module)
}

/// Whether importing `module` takes a GPU unasked (a framework's module or a submodule of one).
pub fn gpu_by_default(module: &str) -> bool {
    let within = |m: &str| {
        module == m
            || module
                .strip_prefix(m)
                .is_some_and(|rest| rest.starts_with('.'))
    };
    FRAMEWORKS.iter().any(|f| match f.unasked {
        Unasked::No => false,
        Unasked::Yes => within(f.module),
        Unasked::Only(modules) => modules.iter().any(|m| within(m)),
    })
}

/// APIs of a framework that takes a GPU unasked that create no device: TensorFlow maps every
/// visible card when its runtime makes its devices (the first op, `tf.config`, a model built),
/// not at import, and its checkpoint readers and file API make none. Code whose only uses of
/// such a framework are these reaches no card through it.
pub const DEVICE_FREE: &[&str] = &[
    "tensorflow.train.load_checkpoint",
    "tensorflow.train.list_variables",
    "tensorflow.train.NewCheckpointReader",
    "tensorflow.compat.v1.train.load_checkpoint",
    "tensorflow.compat.v1.train.list_variables",
    "tensorflow.compat.v1.train.NewCheckpointReader",
    "tensorflow.python.training.py_checkpoint_reader",
    "tensorflow.python.training.checkpoint_utils.load_checkpoint",
    "tensorflow.python.training.checkpoint_utils.list_variables",
    "tensorflow.python.pywrap_tensorflow.NewCheckpointReader",
    "tensorflow.io.gfile",
    "tensorflow.gfile",
    "tensorflow.compat.v1.gfile",
];

/// Whether `name` (dotted, from the framework's module: `tensorflow.io.gfile.exists`) is one
/// of the [`DEVICE_FREE`] APIs or inside one.
pub fn device_free(name: &str) -> bool {
    DEVICE_FREE.iter().any(|api| {
        name.strip_prefix(api)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
}

/// Methods of a framework's base class (PyTorch's `nn.Module`) that call no method a subclass
/// defines: reading one on an instance (`model.parameters()`) runs nothing of the subclass but
/// its construction. Any other attribute a class does not define may be its base's code that
/// calls the subclass back (`model.generate()` calls `forward`), so the whole class runs.
pub const BASE_METHODS_CALLING_NONE: &[&str] = &[
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "children",
    "named_children",
    "modules",
    "named_modules",
    "eval",
    "train",
    "training",
    "requires_grad_",
    "zero_grad",
];

/// Calls that take a bare CUDA device index, by qualified name, with the position of that
/// argument (and its keyword name, when it has one).
pub const INDEX_CALLS: &[(&str, usize, Option<&str>)] = &[
    ("cupy.cuda.Device", 0, Some("device")),
    ("cupy.cuda.runtime.setDevice", 0, None),
    ("numba.cuda.select_device", 0, None),
    ("pycuda.driver.Device", 0, None),
    ("torch.cuda.device_of", 0, None),
    // `index_cpu_to_gpu(resources, device, index)`: SWIG takes no keywords.
    ("faiss.index_cpu_to_gpu", 1, None),
];

/// `torch.cuda` functions whose first argument (or `device=`) is a device.
pub const TORCH_CUDA_DEVICE_FUNCS: &[&str] = &[
    "set_device",
    "device",
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "memory_allocated",
    "memory_reserved",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_stats",
    "memory_summary",
    "reset_peak_memory_stats",
    "synchronize",
    "stream",
    "current_stream",
    "default_stream",
    "set_per_process_memory_fraction",
];

/// Keywords of GPU libraries that take a device index.
pub const INDEX_KEYWORDS: &[&str] = &[
    "device_index",
    "device_id",
    "gpu_id",
    "gpu_index",
    "main_gpu",
    "cuda_device",
    "gpu_device",
    "output_device",
];

/// Calls that only keep their keywords as data (argparse's and `types`' namespaces, `dict`,
/// unittest's mocks): a `device="cuda:1"` there chooses no card until the value reaches a device
/// API, and a test that asserts the same string back holds it as data.
pub const DATA_CONTAINERS: &[&str] = &[
    "argparse.Namespace",
    "types.SimpleNamespace",
    "dict",
    "builtins.dict",
    "unittest.mock.Mock",
    "unittest.mock.MagicMock",
    "unittest.mock.NonCallableMock",
    "unittest.mock.NonCallableMagicMock",
    "mock.Mock",
    "mock.MagicMock",
];

/// Keywords of GPU frameworks that put work on a GPU unless they are `0` (llama.cpp's
/// `n_gpu_layers=-1` offloads every layer): such a call is CUDA use.
pub const OFFLOAD_KEYWORDS: &[&str] = &["n_gpu_layers", "gpu_layers", "num_gpu_layers"];

/// Keywords of a GPU framework's calls that ask for a number of cards: vLLM's and TensorRT-LLM's
/// `LLM(…, tensor_parallel_size=2)`, SGLang's `Engine(tp_size=2, dp_size=2)`, LMDeploy's
/// `TurbomindEngineConfig(tp=2)`, DeepSpeed's `init_inference(mp_size=2)`.
/// A call of a framework (`FRAMEWORKS`) or of a serving engine (`ENGINES`) asks for the product
/// of those it gives. Lightning's `devices`/`gpus` are read apart (`LIGHTNING_CALLS`): a list
/// there is one of card indices.
pub const CARD_COUNT_KEYWORDS: &[&str] = &[
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "tp_size",
    "pp_size",
    "dp_size",
    "tp",
    "mp_size",
];

/// Serving engines and distributed runtimes whose calls take `CARD_COUNT_KEYWORDS`. They are no
/// `FRAMEWORKS`: importing one is not GPU code (SGLang's frontend talks to a server), a count of
/// cards asked of one is.
pub const ENGINES: &[&str] = &["sglang", "lmdeploy", "deepspeed", "tensorrt_llm"];

/// Keywords whose name says a number of GPUs, in any call: `DiffusionTestCase(num_gpus=2)`
/// describes a run on two cards whatever the callee is.
pub const GPU_COUNT_KEYWORDS: &[&str] = &[
    "num_gpus",
    "n_gpus",
    "ngpus",
    "num_gpu",
    "gpu_count",
    "gpus_per_node",
    "num_gpus_per_node",
];

/// Lightning's entry points that take `accelerator=` and `devices=` (`gpus=` before 2.0):
/// `Trainer(accelerator="gpu", devices=2)` trains on two cards, `devices=[1]` on card 1,
/// `devices=-1` on every visible one. Without `accelerator=` Lightning takes the GPUs there are.
pub const LIGHTNING_CALLS: &[&str] = &[
    "lightning.Trainer",
    "lightning.pytorch.Trainer",
    "pytorch_lightning.Trainer",
    "lightning.Fabric",
    "lightning.fabric.Fabric",
    "lightning_fabric.Fabric",
    "lightning.pytorch.cli.LightningCLI",
    "pytorch_lightning.cli.LightningCLI",
    "pytorch_lightning.utilities.cli.LightningCLI",
];

/// Of [`LIGHTNING_CALLS`], the command-line entry points: `LightningCLI(Model)` builds a
/// `Trainer` from `trainer_defaults` and the command line, and trains on every visible GPU
/// unless told otherwise.
pub const LIGHTNING_CLIS: &[&str] = &[
    "lightning.pytorch.cli.LightningCLI",
    "pytorch_lightning.cli.LightningCLI",
    "pytorch_lightning.utilities.cli.LightningCLI",
];

/// Calls of a package whose import takes no card that build a model and put it on a visible GPU
/// unasked: mmengine's `Runner` (`Runner.from_cfg(cfg)`, `RUNNERS.build(cfg)`) moves the model
/// to CUDA whenever a card is visible, so a training or test script that makes one is a GPU
/// program.
pub const TAKES_A_GPU_CALLS: &[&str] = &[
    "mmengine.runner.Runner",
    "mmengine.runner.Runner.from_cfg",
    "mmengine.Runner",
    "mmengine.Runner.from_cfg",
    "mmengine.registry.RUNNERS.build",
];

/// Modules that serve a model on GPUs when run (`python -m sglang.launch_server`), of frameworks
/// whose import alone takes no card.
pub const GPU_SERVER_MODULES: &[&str] = &["sglang.launch_server", "lmdeploy.serve"];

/// Functions that run a distributed launcher inside the program that calls them (an
/// in-process torchrun: torchtune's `tune run`): they start as many processes as the
/// program's own arguments say (`--nproc_per_node 4`), each wanting a card.
pub const IN_PROCESS_LAUNCHERS: &[&str] = &[
    "torch.distributed.run.run",
    "torch.distributed.run.main",
    "torch.distributed.launch.main",
    "torch.distributed.launcher.elastic_launch",
    "torch.distributed.launcher.api.elastic_launch",
    "torch.distributed.launcher.api.launch_agent",
    "torch.distributed.elastic.multiprocessing.start_processes",
    "torch.distributed.elastic.multiprocessing.api.start_processes",
    "accelerate.commands.launch.launch_command",
    "deepspeed.launcher.runner.main",
];

/// Calls that start a number of processes of the program's own code, each given its rank
/// (`torch.multiprocessing.spawn(fn, args, nprocs)`), with the position of that number among
/// their arguments and its keyword. Ranks that each take a card (`set_device(rank)`, an NCCL
/// group) need as many cards as the count says.
pub const RANK_SPAWN_CALLS: &[(&str, usize, &str)] = &[
    ("torch.multiprocessing.spawn", 2, "nprocs"),
    ("torch.multiprocessing.spawn.spawn", 2, "nprocs"),
    ("torch.multiprocessing.start_processes", 2, "nprocs"),
    ("torch.multiprocessing.spawn.start_processes", 2, "nprocs"),
];

/// Command-line options a distributed launcher gives each process it starts
/// (`torch.distributed.launch` passes `--local_rank=N`): a program that declares one is built
/// to run as one of several ranks.
pub const RANK_OPTIONS: &[&str] = &["--local_rank", "--local-rank"];

/// Variables that hand a process its rank among those on its node; a framework the program
/// runs picks its card from them (mmengine's `set_device(LOCAL_RANK)`).
pub const RANK_VARIABLES: &[&str] = &["LOCAL_RANK"];

/// Choices of a `--launcher` option (OpenMMLab's tools, `init_dist(args.launcher)`) that start
/// the program as several ranks, each on the card its rank names.
pub const DISTRIBUTED_LAUNCHERS: &[&str] = &["pytorch", "slurm", "mpi"];

/// Executables that start the command after their options as several processes, each a rank
/// of one job (`mpirun -np 4 python train.py`, `srun --ntasks=8 python train.py`,
/// `horovodrun -np 4 python train.py`), with the options that write that number, and what it
/// is when none is written: MPI starts one process per slot of the hosts, Slurm as many tasks
/// as the job's allocation (`#SBATCH --ntasks-per-node`).
pub const PROCESS_LAUNCHERS: &[(&str, &[&str], &str)] = &[
    (
        "mpirun",
        MPI_COUNT_OPTIONS,
        "one process per slot of its hosts",
    ),
    (
        "mpiexec",
        MPI_COUNT_OPTIONS,
        "one process per slot of its hosts",
    ),
    (
        "mpiexec.hydra",
        MPI_COUNT_OPTIONS,
        "one process per slot of its hosts",
    ),
    (
        "orterun",
        MPI_COUNT_OPTIONS,
        "one process per slot of its hosts",
    ),
    (
        "prterun",
        MPI_COUNT_OPTIONS,
        "one process per slot of its hosts",
    ),
    (
        "srun",
        &["-n", "--ntasks", "--ntasks-per-node"],
        "as many tasks as the job's allocation",
    ),
    (
        "horovodrun",
        &["-np", "--num-proc"],
        "the processes its hosts are given",
    ),
    (
        "aprun",
        &["-n", "-N", "--pes"],
        "the processes of the job's allocation",
    ),
];

/// The options of Open MPI's, MPICH's and Intel MPI's launchers that write how many processes
/// they start (`-ppn`: per node).
const MPI_COUNT_OPTIONS: &[&str] = &[
    "-np",
    "--np",
    "-n",
    "--n",
    "-c",
    "-ppn",
    "--ppn",
    "-npernode",
    "--npernode",
];

/// Modules and executables that run the script they are handed in their own one process
/// (`python -m pdb x.py`, `coverage run x.py`): its process, not a launcher's ranks.
pub const SINGLE_PROCESS_RUNNERS: &[&str] = &[
    "pdb",
    "ipdb",
    "pudb",
    "debugpy",
    "cProfile",
    "profile",
    "trace",
    "runpy",
    "unittest",
    "doctest",
    "coverage",
    "python3-coverage",
    "memory_profiler",
    "line_profiler",
    "kernprof",
    "scalene",
    "pyinstrument",
    "viztracer",
    "memray",
    "py-spy",
    "streamlit",
    "IPython",
    "ipython",
    "torch.utils.bottleneck",
    "nsys",
    "ncu",
    "time",
];

/// Modules and executables that read, check or copy a Python file without running it
/// (`python -m black x.py`, `pytest x.py`, whose tests are the index's sessions): they
/// start nothing they are handed.
pub const FILE_TOOLS: &[&str] = &[
    "black",
    "isort",
    "flake8",
    "pyflakes",
    "pycodestyle",
    "pydocstyle",
    "pylint",
    "mypy",
    "pyright",
    "ruff",
    "yapf",
    "autopep8",
    "autoflake",
    "docformatter",
    "codespell",
    "bandit",
    "vulture",
    "pytest",
    "py.test",
    "pre-commit",
    "pre_commit",
    "tox",
    "nox",
    "pip",
    "pip3",
    "py_compile",
    "compileall",
    "tabnanny",
    "pydoc",
    "pdoc",
    "sphinx",
    "sphinx-build",
    "nbqa",
    "cython",
    "nuitka",
    "PyInstaller",
    "pyinstaller",
    "twine",
    "build",
    "git",
    "cat",
    "less",
    "more",
    "head",
    "tail",
    "cp",
    "mv",
    "rm",
    "ln",
    "chmod",
    "touch",
    "vim",
    "vi",
    "nano",
    "emacs",
    "code",
    "wget",
    "curl",
    "scp",
    "rsync",
    "diff",
    "grep",
    "sed",
    "awk",
    "echo",
    "ls",
    "wc",
    "tar",
    "zip",
    "docker",
    "kubectl",
];

/// What starts a process group, by the last name a read of it ends with: `torch.distributed`'s
/// `init_process_group`, `deepspeed.init_distributed`, the frameworks' own starters (mmengine's
/// `init_dist`, ColossalAI's `launch_from_torch`, the DETR family's `init_distributed_mode`),
/// and what starts one when the process is launched as one of a group (accelerate's
/// `Accelerator()`, transformers' `TrainingArguments`, Lightning's `Trainer`, `Fabric`,
/// mmengine's `Runner` given a launcher). A process whose code reads none runs alone unless a
/// command starts it with a process count: `dist.is_initialized()` is false there.
pub const GROUP_STARTERS: &[&str] = &[
    "init_process_group",
    "init_distributed",
    "init_device_mesh",
    "initialize_model_parallel",
    "init_dist",
    "init_distributed_mode",
    "setup_distributed",
    "launch_from_torch",
    "launch_from_openmpi",
    "launch_from_slurm",
    "Runner",
    "Accelerator",
    "PartialState",
    "AcceleratorState",
    "TrainingArguments",
    "Trainer",
    "Fabric",
];

/// Decorators that run the function they decorate as the program when its module is
/// `__main__` (`python -m pkg.tool`), by module and name: fastcore's `@call_parse`, `begins`'
/// `@begin.start`, `@autocommand(__name__)`. An import only wraps the function.
pub const MAIN_DECORATORS: &[(&str, &str)] = &[
    ("fastcore.script", "call_parse"),
    ("begin", "start"),
    ("autocommand", "autocommand"),
];

/// Calls that run a function with the program's command line (`fire.Fire(main)`,
/// `typer.run(main)`, `tyro.cli(main)`), by module and name: a module that makes one as it runs
/// is a program, as one that calls `parser.parse_args()` is.
pub const COMMAND_LINE_CALLS: &[(&str, &str)] = &[
    ("fire", "Fire"),
    ("typer", "run"),
    ("tyro", "cli"),
    ("defopt", "run"),
    ("clize", "run"),
    ("jsonargparse", "CLI"),
    ("jsonargparse", "auto_cli"),
    ("plac", "call"),
    ("absl.app", "run"),
];

/// Calls that start a child process and take its env as `env=`.
pub const CHILD_ENV_CALLS: &[&str] = &[
    "subprocess.run",
    "subprocess.Popen",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "asyncio.create_subprocess_exec",
    "asyncio.create_subprocess_shell",
    "os.execve",
    "os.execvpe",
    "os.spawnve",
    "os.spawnvpe",
];

/// Calls that run a command line: a `VAR=value` prefix in it sets the child's env.
pub const SHELL_CALLS: &[&str] = &[
    "os.system",
    "os.popen",
    "subprocess.run",
    "subprocess.Popen",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "asyncio.create_subprocess_shell",
    "asyncio.create_subprocess_exec",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_agree() {
        let frameworks: Vec<&str> = gpu_frameworks().collect();
        let mut unique = frameworks.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            frameworks.len(),
            "a framework is listed twice"
        );
        for f in FRAMEWORKS {
            if let Unasked::Only(modules) = f.unasked {
                for m in modules {
                    assert!(
                        m.strip_prefix(f.module).is_some_and(|r| r.starts_with('.')),
                        "{m} is no submodule of {}",
                        f.module
                    );
                }
            }
        }
        // A device API of a module that is no framework would choose a card in a file the
        // tool does not take for GPU code: it would be remapped without a mask.
        for (call, _, _) in INDEX_CALLS {
            let top = call.split('.').next().unwrap();
            assert!(frameworks.contains(&top), "{call}: `{top}` is no framework");
        }
        assert!(gpu_by_default("numba.cuda.random") && !gpu_by_default("numba"));
        assert!(gpu_by_default("tensorflow.keras") && !gpu_by_default("tensorflowx"));
        // A device-free API is one of a framework that takes a GPU unasked.
        for api in DEVICE_FREE {
            assert!(
                gpu_by_default(api),
                "{api}: no framework that takes a GPU unasked"
            );
        }
        assert!(device_free("tensorflow.io.gfile.exists") && !device_free("tensorflow.io.gfilex"));
        assert!(!device_free("tensorflow.train") && !device_free("tensorflow.constant"));
    }
}
