//! The Rust rule catalogue (GH5xx), in one place.

use crate::finding::Rule;
use crate::rule;

rule!(
    HEADER_MISSING,
    "GH501",
    "rust-header-missing",
    Violation,
    "GPU code without the standard GPU comment header"
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
rule!(ENV_IN_ASYNC_MAIN, "GH504", "rust-env-in-async-main", Review,
    "GPU env set in (or missing from) an async main, where runtime threads already run: set it before the runtime starts");
rule!(DEVICE_INDEX, "GH511", "rust-device-index", Violation,
    "a device constructor selects an index that does not exist once CUDA_VISIBLE_DEVICES is applied");
rule!(NVML_INDEX, "GH521", "rust-nvml-index", Review,
    "an NVML index is a physical PCI-order index that CUDA_VISIBLE_DEVICES does not remap: select by UUID or PCI bus id");

/// Every Rust rule, in code order.
pub static ALL: &[&Rule] = &[
    &HEADER_MISSING,
    &MAIN_ENV_MISSING,
    &ENV_WRITE,
    &ENV_IN_ASYNC_MAIN,
    &DEVICE_INDEX,
    &NVML_INDEX,
];
