//! The integration tests, one binary: each module was its own `tests/<name>.rs` (one link of
//! the whole crate each); together they link once.

mod common;

mod bad_input;
mod cache;
mod completions;
mod config;
mod conventions;
mod counts;
mod ecosystem;
mod framework_uses;
mod gates;
mod gitlab;
mod gpu;
mod half_migrated;
mod hostile_output;
mod init;
mod launchers;
mod layout;
mod merge;
mod mission;
mod mutation;
mod one_plan;
mod projects;
mod proof;
mod python_rules;
mod ranks;
mod registries;
mod report;
mod resources;
mod rule_docs;
mod rules;
mod runtime;
mod rust_mission;
mod rust_programs;
mod safety;
mod streaming;
