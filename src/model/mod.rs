//! The model layer: what a run is about, independent of any language or file system. Rules as
//! a type and their registry, findings, per-file outcomes and their counts, rule selection,
//! and the policy with its mission phases. It imports `base` and `knowledge` only.

pub mod finding;
pub(crate) mod lint;
pub mod outcome;
pub mod policy;
pub mod rules;
pub(crate) mod summary;
