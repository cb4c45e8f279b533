//! The touchpoint map: GPU programs and device constructors.

use crate::model::finding::{FixSafety, Rule, Severity, Subject};

pub static GPU_PROGRAM: Rule = Rule {
    code: "GH531",
    name: "rust-gpu-program",
    severity: Severity::Info,
    summary: "a binary that reaches CUDA, and through what (a touchpoint: `scan --touchpoints`)",
    why: "The GPU touchpoint map of a Rust tree: each binary that reaches CUDA (and through which crate), each device constructor.",
    example: "cargo run --bin server  # reaches CUDA through `candle_core` with its `cuda` feature",
    fix: FixSafety::None,
    fix_why: "Information only (`scan --touchpoints`).",
    subject: Subject::Touchpoint,
    ..Rule::DEFAULT
};

pub static DEVICE_CONSTRUCTOR: Rule = Rule {
    code: "GH532",
    name: "rust-device-constructor",
    severity: Severity::Info,
    summary: "a CUDA device is constructed here (a touchpoint: `scan --touchpoints`)",
    why: "The GPU touchpoint map of a Rust tree: each binary that reaches CUDA (and through which crate), each device constructor.",
    example: "cargo run --bin server  # reaches CUDA through `candle_core` with its `cuda` feature",
    fix: FixSafety::None,
    fix_why: "Information only (`scan --touchpoints`).",
    subject: Subject::Touchpoint,
    ..Rule::DEFAULT
};
