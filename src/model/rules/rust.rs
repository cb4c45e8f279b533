//! The Rust rule catalogue (GH5xx), in one place.

use crate::model::finding::Rule;
use crate::rule;

rule!(
    HEADER_MISSING,
    "GH501",
    "rust-header-missing",
    Violation,
    "a GPU binary's entry point without the standard GPU comment header"
);
rule!(
    MAIN_ENV_MISSING,
    "GH502",
    "rust-main-env-missing",
    Violation,
    "fn main does not set the GPU env variables as its first statements"
);
rule!(ENV_WRITE, "GH503", "rust-env-write", Violation,
    "a GPU env variable is set outside the header of fn main, or with a value other than the policy's");
rule!(ENV_IN_ASYNC_MAIN, "GH504", "rust-env-in-async-main", Violation,
    "an async main cannot set the GPU env safely (runtime threads already run): for review, never fixed automatically");
rule!(ENV_UNSAFE_FORBIDDEN, "GH505", "rust-env-unsafe-forbidden", Violation,
    "edition 2024 and the crate forbids unsafe code: main cannot call set_var; set the env before the process starts");
rule!(
    ENV_REMOVE,
    "GH506",
    "rust-env-remove",
    Violation,
    "a GPU env variable is removed (std::env::remove_var)"
);
rule!(
    CHILD_ENV,
    "GH507",
    "rust-child-env",
    Violation,
    "a child process gets a GPU env variable other than the policy's (Command::env / envs / env_remove / env_clear)"
);
rule!(MACRO_MAIN, "GH508", "rust-macro-main", Review,
    "a GPU program whose `main` a macro generates (`criterion_main!`): the env cannot be inserted, for review");
rule!(DEVICE_INDEX, "GH511", "rust-device-index", Violation,
    "a device constructor selects an index that does not exist once CUDA_VISIBLE_DEVICES is applied");
rule!(DEVICE_PATTERN, "GH512", "rust-device-pattern", Violation,
    "a match pattern compares a device with an index that does not exist once CUDA_VISIBLE_DEVICES is applied: change it by hand");
rule!(
    MULTI_GPU,
    "GH513",
    "rust-multi-gpu",
    Review,
    "a function selects several device indices (or loops over them): multi-GPU by design, left as written for review"
);
rule!(DEVICE_INDEX_IN_LIBRARY, "GH514", "rust-device-index-in-library", Review,
    "a device index in a library that a program of the tree runs without setting the mask (or that none runs): what it selects is the caller's mask's choice");
rule!(
    GPU_PROGRAM,
    "GH531",
    "rust-gpu-program",
    Info,
    "a binary that reaches CUDA, and through what (a touchpoint: `scan --touchpoints`)"
);
rule!(
    DEVICE_CONSTRUCTOR,
    "GH532",
    "rust-device-constructor",
    Info,
    "a CUDA device is constructed here (a touchpoint: `scan --touchpoints`)"
);
rule!(NVML_INDEX, "GH521", "rust-nvml-index", Review,
    "an NVML index is a physical PCI-order index that CUDA_VISIBLE_DEVICES does not remap: select by UUID or PCI bus id");

/// Every Rust rule, in code order.
pub static ALL: &[&Rule] = &[
    &HEADER_MISSING,
    &MAIN_ENV_MISSING,
    &ENV_WRITE,
    &ENV_IN_ASYNC_MAIN,
    &ENV_UNSAFE_FORBIDDEN,
    &ENV_REMOVE,
    &CHILD_ENV,
    &MACRO_MAIN,
    &DEVICE_INDEX,
    &DEVICE_PATTERN,
    &MULTI_GPU,
    &DEVICE_INDEX_IN_LIBRARY,
    &NVML_INDEX,
    &GPU_PROGRAM,
    &DEVICE_CONSTRUCTOR,
];

/// Findings that say the process env is not the policy's: a fix that leaves one is withheld.
pub const ENV_RULES: &[&str] = &["GH502", "GH503", "GH504", "GH505", "GH506"];
