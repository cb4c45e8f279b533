//! GPU imports: the touchpoint map, and imports that start the GPU stack for every importer.

use crate::model::finding::{FixSafety, Rule, Severity, Subject};

pub static GPU_IMPORT_TOP_LEVEL: Rule = Rule {
    code: "GH301",
    name: "gpu-import-top-level",
    severity: Severity::Info,
    summary:
        "a GPU framework is imported at module level: importing this module touches the GPU stack",
    why: "A map of where GPU frameworks are imported, for the coordinator.",
    example: "import torch",
    fix: FixSafety::None,
    fix_why: "Information only.",
    subject: Subject::Touchpoint,
    ..Rule::DEFAULT
};

pub static GPU_IMPORT_LAZY: Rule = Rule {
    code: "GH302",
    name: "gpu-import-lazy",
    severity: Severity::Info,
    summary: "a GPU framework is imported inside a function (lazy)",
    why: "A map of where GPU frameworks are imported, for the coordinator.",
    example: "import torch",
    fix: FixSafety::None,
    fix_why: "Information only.",
    subject: Subject::Touchpoint,
    ..Rule::DEFAULT
};

pub static GPU_IMPORT_IN_INIT: Rule = Rule {
    code: "GH303",
    name: "gpu-import-in-init",
    severity: Severity::Review,
    summary: "a package __init__.py starts the GPU stack at import: every importer of the package starts it",
    why: "A package __init__.py whose code at import uses a card or asks the driver for its cards (`torch.cuda.is_available()`), or that imports a framework that takes a GPU unasked, starts the GPU stack for every importer, before a header in a `__main__` block runs. Importing torch alone starts nothing: CUDA reads the env at its first use (that import is GH301, information).",
    example: "# pkg/__init__.py\nimport torch\n\nCUDA = torch.cuda.is_available()",
    fix: FixSafety::None,
    fix_why: "Display only: import it lazily.",
    ..Rule::DEFAULT
};
