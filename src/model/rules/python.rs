//! The Python rule catalogue: every rule, its stable code and what it means, in one place.

use crate::model::finding::Rule;
use crate::rule;

rule!(
    HEADER_MISSING,
    "GH001",
    "header-missing",
    Violation,
    "GPU code without the standard GPU header"
);
rule!(
    HEADER_INCOMPLETE,
    "GH002",
    "header-incomplete",
    Violation,
    "GPU env variables set by hand instead of the complete standard header"
);
rule!(ENV_AFTER_GPU_IMPORT, "GH005", "env-after-gpu-import", Violation,
    "a GPU env variable is written after a GPU framework was imported: CUDA may already be initialised");
rule!(
    ENV_WRITE_IN_FUNCTION,
    "GH006",
    "env-write-in-function",
    Violation,
    "a function overrides a GPU env variable with a value that contradicts the policy",
    edits = OwnOutsideHeader
);
rule!(
    ENV_WRITE_IN_LIBRARY,
    "GH013",
    "env-write-in-library",
    Violation,
    "a library module writes a GPU env variable when imported: it overrides its importers' env",
    edits = OwnOutsideHeader
);
rule!(
    IDLE_DEVICE_OPTION,
    "GH014",
    "idle-device-option",
    Review,
    "a command-line option that names a device selects nothing: never read, or only printed"
);
rule!(
    CHILD_PROCESS_CARD,
    "GH016",
    "child-process-card",
    Violation,
    "a child process is given a CUDA_VISIBLE_DEVICES that names a card the policy does not allow"
);
rule!(
    FUTURE_IMPORT_LATE,
    "GH015",
    "future-import-late",
    Violation,
    "a `from __future__` import below other statements (a header put above it): CPython refuses the file",
    edits = Own
);
rule!(
    DELIBERATE_CPU_MASK,
    "GH010",
    "deliberate-cpu-mask",
    Review,
    "CUDA_VISIBLE_DEVICES is set to hide every GPU on purpose (CPU only): never rewritten"
);
rule!(
    CHILD_ENV,
    "GH011",
    "child-process-env",
    Review,
    "a child process is started with GPU env variables that contradict the policy"
);
rule!(
    AMD_MASK,
    "GH012",
    "amd-mask-mismatch",
    Review,
    "HIP_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES is set to a value that contradicts the policy"
);
rule!(
    DEVICE_STRING_INDEX,
    "GH101",
    "device-string-index",
    Violation,
    "a device string selects an index that does not exist once CUDA_VISIBLE_DEVICES is applied",
    edits = Own
);
rule!(DEVICE_CALL_INDEX, "GH102", "device-call-index", Violation,
    "a device-selecting call uses an index that does not exist once CUDA_VISIBLE_DEVICES is applied",
    edits = Own
);
rule!(DEVICE_KEYWORD_INDEX, "GH103", "device-keyword-index", Violation,
    "a device-index keyword, parameter or option selects an index that does not exist after masking",
    edits = Own
);
rule!(
    DEVICE_MAP_INDEX,
    "GH104",
    "device-map-index",
    Violation,
    "a GPU index table or variable holds an index that does not exist after masking",
    edits = Own
);
rule!(
    DEVICE_INDEX_INVALID,
    "GH105",
    "device-index-invalid",
    Violation,
    "a device index selects no device at all once CUDA_VISIBLE_DEVICES is applied",
    edits = Own
);
rule!(
    DEVICE_INDEX_SHARED,
    "GH106",
    "device-index-shared",
    Review,
    "a device index flows through a name that is also used for something else: rewrite by hand",
    edits = Own
);
rule!(
    NVML_INDEX,
    "GH109",
    "nvml-index",
    Violation,
    "a card chosen by NVML index: NVML numbers cards by PCI bus and ignores CUDA_VISIBLE_DEVICES",
    edits = Own
);
rule!(
    NVML_CUDA_INDEX,
    "GH110",
    "nvml-cuda-index",
    Review,
    "a CUDA device number given to NVML: once the mask renumbers cards, NVML reads another card",
    edits = Own
);
rule!(
    DEVICE_FROM_CONFIG,
    "GH111",
    "device-from-config",
    Review,
    "a device argument takes its value from a configuration file the tool does not read",
    edits = Own
);
rule!(
    MULTI_GPU_ASSUMPTION,
    "GH201",
    "multi-gpu-assumption",
    Info,
    "code adapts to the visible GPUs (or uses no more than the policy allows): under the header it sees the policy's cards"
);
rule!(
    VALIDATION_NOT_CALLED,
    "GH202",
    "validation-not-called",
    Info,
    "the validation call is not added: the file starts worker processes after it"
);
rule!(MULTI_GPU_CARDS, "GH203", "multi-gpu-cards", Violation,
    "code needs more GPUs than the policy allows (literal indices, a device list, a multi-card mask): it would fail with an invalid device ordinal");
rule!(MULTI_GPU_PER_RANK, "GH204", "multi-gpu-per-rank", Violation,
    "one process per GPU, each picking its card from its rank: a launcher starting more processes than the policy has cards breaks it");
rule!(
    GPU_IMPORT_TOP_LEVEL,
    "GH301",
    "gpu-import-top-level",
    Info,
    "a GPU framework is imported at module level: importing this module touches the GPU stack"
);
rule!(
    GPU_IMPORT_LAZY,
    "GH302",
    "gpu-import-lazy",
    Info,
    "a GPU framework is imported inside a function (lazy)"
);
rule!(
    DEVICE_INDEX_IN_LIBRARY,
    "GH107",
    "device-index-in-library",
    Review,
    "a device index in a library no program of the tree runs: its card depends on the caller's mask",
    edits = Own
);
rule!(
    DEVICE_LITERAL_UNTRACED,
    "GH108",
    "device-literal-untraced",
    Review,
    "a \"cuda:N\" the mask renumbers goes where the tool does not follow (an option, an attribute, an unknown call)",
    edits = Own
);
rule!(
    PROGRAM_IN_LIBRARY,
    "GH205",
    "program-in-library",
    Review,
    "a module that runs as a program is also imported as a library: it cannot carry the header"
);
rule!(GPU_IMPORT_IN_INIT, "GH303", "gpu-import-in-init", Review,
    "a GPU framework is imported by a package __init__.py: importing the package touches the GPU stack");

/// Every Python rule, in code order.
pub static ALL: &[&Rule] = &[
    &HEADER_MISSING,
    &HEADER_INCOMPLETE,
    &ENV_AFTER_GPU_IMPORT,
    &ENV_WRITE_IN_FUNCTION,
    &DELIBERATE_CPU_MASK,
    &CHILD_ENV,
    &AMD_MASK,
    &ENV_WRITE_IN_LIBRARY,
    &IDLE_DEVICE_OPTION,
    &FUTURE_IMPORT_LATE,
    &CHILD_PROCESS_CARD,
    &DEVICE_STRING_INDEX,
    &DEVICE_CALL_INDEX,
    &DEVICE_KEYWORD_INDEX,
    &DEVICE_MAP_INDEX,
    &DEVICE_INDEX_INVALID,
    &DEVICE_INDEX_SHARED,
    &DEVICE_INDEX_IN_LIBRARY,
    &DEVICE_LITERAL_UNTRACED,
    &NVML_INDEX,
    &NVML_CUDA_INDEX,
    &DEVICE_FROM_CONFIG,
    &MULTI_GPU_ASSUMPTION,
    &VALIDATION_NOT_CALLED,
    &MULTI_GPU_CARDS,
    &MULTI_GPU_PER_RANK,
    &PROGRAM_IN_LIBRARY,
    &GPU_IMPORT_TOP_LEVEL,
    &GPU_IMPORT_LAZY,
    &GPU_IMPORT_IN_INIT,
];

#[cfg(test)]
mod tests {
    #[test]
    fn codes_are_unique_and_sorted() {
        let codes: Vec<_> = super::ALL.iter().map(|r| r.code).collect();
        let mut sorted = codes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(codes, sorted);
    }
}
