//! The process env: the header, GPU variables written by hand, late or elsewhere, masks for children and other vendors.

use crate::model::finding::{FixSafety, Rule, RuleEdits, Severity, Subject};

pub static HEADER_MISSING: Rule = Rule {
    code: "GH001",
    name: "header-missing",
    severity: Severity::Violation,
    summary: "GPU code without the standard GPU header",
    why: "Without CUDA_DEVICE_ORDER=PCI_BUS_ID and CUDA_VISIBLE_DEVICES set before the first GPU import, CUDA numbers cards fastest-first and the process may land on the forbidden card.",
    example: "import torch\nmodel.to('cuda')",
    fix: FixSafety::SafeExcept("the validation call added to the `__main__` block raises when the target card is absent, so a run that used to fall back now stops"),
    fix_why: "Inserting the header after the prologue is the point of the tool and keeps every other byte. A test file that pytest runs with the other files of its suite, where no `conftest.py` holds the header, gets no copy of its own: the finding names the `conftest.py` to create, and the next `fix` puts the header there once (a test file whose fix renumbers a device keeps its own header beside the new index, and one that sets the variables itself is repaired where it does).",
    rewrite: "header inserted after the prologue",
    env: true,
    subject: Subject::Header,
    ..Rule::DEFAULT
};

pub static HEADER_INCOMPLETE: Rule = Rule {
    code: "GH002",
    name: "header-incomplete",
    severity: Severity::Violation,
    summary: "GPU env variables set by hand instead of the complete standard header",
    why: "A hand-written configuration that differs from the policy (a wrong mask, a missing variable, `setdefault` where the policy forces) selects the card inconsistently.",
    example: "os.environ['CUDA_VISIBLE_DEVICES'] = '0'\nimport torch",
    fix: FixSafety::SafeExcept("turning `os.environ.setdefault` into an assignment (when the policy does not respect a scheduler) overrides a mask that Slurm, Ray or Kubernetes set"),
    fix_why: "Replacing the block in place with the policy's header is safe otherwise.",
    rewrite: "the configuration replaced in place, or only the later changes removed",
    env: true,
    subject: Subject::Header,
    ..Rule::DEFAULT
};

pub static ENV_AFTER_GPU_IMPORT: Rule = Rule {
    code: "GH005",
    name: "env-after-gpu-import",
    severity: Severity::Violation,
    summary: "a GPU env variable is written after a GPU framework was imported: CUDA may already be initialised",
    why: "Once a GPU framework is imported CUDA may be initialised: a later write to CUDA_VISIBLE_DEVICES is silently ignored.",
    example: "import torch\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'",
    fix: FixSafety::Safe,
    fix_why: "The late write is taken out and the header set before the import, which is what the write meant.",
    rewrite: "change removed (the header sets the env before the imports)",
    env: true,
    ..Rule::DEFAULT
};

pub static ENV_WRITE_IN_FUNCTION: Rule = Rule {
    code: "GH006",
    name: "env-write-in-function",
    severity: Severity::Violation,
    summary: "a function overrides a GPU env variable with a value that contradicts the policy",
    why: "A function that overrides a GPU variable with another value than the policy's changes the card for whatever runs after it is called. A program whose process runs such code of another module gets this finding too: its header does not hold after the write, so it is left as written until the write is gone.",
    example: "def setup():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
    fix: FixSafety::Unsafe,
    fix_why: "Removing the write changes what the function does when it is called.",
    rewrite: "write removed when it disagrees with the policy (`pass` if a block empties), with the GPU comment banner directly above it and the prints that echo it",
    edits: RuleEdits::OwnOutsideHeader,
    env: true,
    ..Rule::DEFAULT
};

pub static DELIBERATE_CPU_MASK: Rule = Rule {
    code: "GH010",
    name: "deliberate-cpu-mask",
    severity: Severity::Review,
    summary: "CUDA_VISIBLE_DEVICES is set to hide every GPU on purpose (CPU only): never rewritten",
    why: "CUDA_VISIBLE_DEVICES='' (or -1) hides every card on purpose; the tool cannot know whether that is still meant.",
    example: "os.environ['CUDA_VISIBLE_DEVICES'] = ''",
    fix: FixSafety::None,
    fix_why: "Display only.",
    ..Rule::DEFAULT
};

pub static CHILD_ENV: Rule = Rule {
    code: "GH011",
    name: "child-process-env",
    severity: Severity::Review,
    summary: "a child process is started with GPU env variables that contradict the policy",
    why: "A child process started with another GPU mask runs on another card than the policy's.",
    example: "subprocess.run(cmd, env={'CUDA_VISIBLE_DEVICES': '0'})",
    fix: FixSafety::None,
    fix_why: "Display only: the child may need its own card.",
    ..Rule::DEFAULT
};

pub static AMD_MASK: Rule = Rule {
    code: "GH012",
    name: "amd-mask-mismatch",
    severity: Severity::Review,
    summary: "HIP_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES is set to a value that contradicts the policy",
    why: "HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES that contradict the policy's mask select another card on AMD stacks.",
    example: "os.environ['HIP_VISIBLE_DEVICES'] = '0'",
    fix: FixSafety::None,
    fix_why: "Display only.",
    ..Rule::DEFAULT
};

pub static ENV_WRITE_IN_LIBRARY: Rule = Rule {
    code: "GH013",
    name: "env-write-in-library",
    severity: Severity::Violation,
    summary: "a library module writes a GPU env variable when imported: it overrides its importers' env",
    why: "CUDA reads the mask once per process: a library module that writes it when imported overrides the env its importer chose (an application's own mask, a scheduler's). The header belongs in the programs' entry points; to put it in every GPU file instead, set `scope = \"every-gpu-file\"` in the policy.",
    example: "# mylib/model.py\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'",
    fix: FixSafety::Unsafe,
    fix_why: "Taking the write out leaves the programs of the tree on their entry points' header, but an importer outside the tree loses it.",
    rewrite: "the import-time write removed (with its GPU banner and echo prints) when programs of the tree carry the header",
    edits: RuleEdits::OwnOutsideHeader,
    ..Rule::DEFAULT
};

pub static IDLE_DEVICE_OPTION: Rule = Rule {
    code: "GH014",
    name: "idle-device-option",
    severity: Severity::Review,
    summary: "a command-line option that names a device selects nothing: never read, or only printed",
    why: "An option such as `--gpus` that once fed the mask (or never did anything) selects no card once the header decides it: users still pass it, and its echo (`print('Training on GPUs:', args.gpus)`) now lies.",
    example: "parser.add_argument('-g', '--gpus', default='0,1')\nprint('GPUs:', args.gpus)",
    fix: FixSafety::None,
    fix_why: "Display only: remove the option or make it choose among the policy's cards.",
    ..Rule::DEFAULT
};

pub static FUTURE_IMPORT_LATE: Rule = Rule {
    code: "GH015",
    name: "future-import-late",
    severity: Severity::Violation,
    summary: "a `from __future__` import below other statements (a header put above it): CPython refuses the file",
    why: "CPython accepts `from __future__` imports only at the top of a module, after its docstring: a header inserted above them by hand makes the whole file a SyntaxError.",
    example: "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nfrom __future__ import annotations",
    fix: FixSafety::Safe,
    fix_why: "The future imports move up, whole, to just after the docstring: they are compiler directives, and nothing runs before them either way.",
    rewrite: "the late `from __future__` imports moved up, after the docstring (a manual migration put a header above them; CPython refuses the file)",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static CHILD_PROCESS_CARD: Rule = Rule {
    code: "GH016",
    name: "child-process-card",
    severity: Severity::Violation,
    summary: "a child process is given a CUDA_VISIBLE_DEVICES that names a card the policy does not allow, or none",
    why: "A child process started with a mask naming another card runs on that card: the parent's header does not reach a child that is given its own CUDA_VISIBLE_DEVICES (its CUDA_DEVICE_ORDER is inherited, so the number is the card's PCI bus order). A child whose env leaves the mask out (`env.pop('CUDA_VISIBLE_DEVICES')`) sees every card.",
    example: "subprocess.run(cmd, env={**os.environ, 'CUDA_VISIBLE_DEVICES': '0'})\nos.system('CUDA_VISIBLE_DEVICES=0 python worker.py')\nenv = {k: v for k, v in os.environ.items() if k != 'CUDA_VISIBLE_DEVICES'}\nsubprocess.run(cmd, env=env)",
    fix: FixSafety::None,
    fix_why: "Not fixed: the command or env is the program's own choice; give the child the policy's mask or none.",
    ..Rule::DEFAULT
};

pub static MASK_FROM_OPTION: Rule = Rule {
    code: "GH017",
    name: "mask-from-option",
    severity: Severity::Violation,
    summary: "CUDA_VISIBLE_DEVICES is taken from a command-line option: whoever runs the program picks the card, the forbidden one included",
    why: "A mask read from `-g`/`--gpu` or `sys.argv` selects whatever card the command line names: a launcher, a web UI or a user that passes `-g 0` runs on the forbidden card, whatever else the file does (a `torch.distributed` launch included).",
    example: "parser.add_argument('-g', '--gpu', default='0')\nargs = parser.parse_args()\nos.environ['CUDA_VISIBLE_DEVICES'] = args.gpu",
    fix: FixSafety::SafeExcept("a write inside a function is taken out only with `--unsafe-fixes`, as GH006's"),
    fix_why: "Where the header replaces the file's configuration the write goes with it (the option then selects nothing, which GH014 reports); a file left as written (multi-GPU code, another violation the tool cannot fix) keeps it, reported.",
    rewrite: "the write replaced by the header (at import), or taken out (in a function, unsafe)",
    edits: RuleEdits::OwnOutsideHeader,
    env: true,
    ..Rule::DEFAULT
};

pub static ENV_CHECK_OWN_VALUE: Rule = Rule {
    code: "GH018",
    name: "env-check-own-value",
    severity: Severity::Violation,
    summary: "the program checks that a GPU variable holds the value it set itself, a value the header changes",
    why: "A file that sets CUDA_VISIBLE_DEVICES='1' and later checks `os.environ.get('CUDA_VISIBLE_DEVICES') != '1'` stops (or takes another branch) once the header sets the policy's value instead: the rewrite would break the program's own validation.",
    example: "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\nif os.environ.get('CUDA_VISIBLE_DEVICES') != '1':\n    raise RuntimeError('wrong mask')",
    fix: FixSafety::Safe,
    fix_why: "The compared literal becomes the policy's value, with the header that replaces the write: the check still holds exactly when the variable is what the file sets. Only a literal equal to the file's own write is changed; the text of messages is left as written.",
    rewrite: "the compared literal → the policy's value, with the header",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};
