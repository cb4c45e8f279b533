//! Presenting a run: the text a person reads, the JSON a script reads, SARIF for code hosts.

pub mod json;
pub mod progress;
pub mod sarif;
pub mod summary;
pub mod text;
