//! The Python rules (GH0xx–GH3xx), one file per family: `env` (the header and the GPU
//! variables), `index` (device indices), `programs` (programs and their cards), `imports` (the
//! touchpoint map). A new rule is one entry in its family's file and one line in `ALL`.

mod env;
mod imports;
mod index;
mod programs;

pub use env::*;
pub use imports::*;
pub use index::*;
pub use programs::*;

use crate::model::finding::Rule;

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
    &MASK_FROM_OPTION,
    &ENV_CHECK_OWN_VALUE,
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
    &DEVICE_FROM_COMMAND_LINE,
    &MULTI_GPU_ASSUMPTION,
    &VALIDATION_NOT_CALLED,
    &MULTI_GPU_CARDS,
    &MULTI_GPU_PER_RANK,
    &PROGRAM_IN_LIBRARY,
    &PROGRAM_IN_LIBRARY_ENV,
    &LAUNCH_COUNT_UNKNOWN,
    &CUDA_BEFORE_PROGRAM,
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
