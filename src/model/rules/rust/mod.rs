//! The Rust rules (GH5xx), one file per family: `env` (the env in `fn main`), `index` (device
//! constructors and indices), `map` (the touchpoint map). A new rule is one entry in its
//! family's file and one line in `ALL`.

mod env;
mod index;
mod map;

pub use env::*;
pub use index::*;
pub use map::*;

use crate::model::finding::Rule;

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
    &MAIN_ATTRIBUTE,
    &DEVICE_INDEX,
    &DEVICE_PATTERN,
    &MULTI_GPU,
    &DEVICE_INDEX_IN_LIBRARY,
    &NVML_INDEX,
    &FOREIGN_DEVICE,
    &GPU_PROGRAM,
    &DEVICE_CONSTRUCTOR,
];
