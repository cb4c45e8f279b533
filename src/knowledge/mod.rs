//! The GPU knowledge: which frameworks, crates and APIs select a card, as tables that the
//! languages' analyses and the prefilter read. Data only: this layer imports nothing of the crate.

pub mod python;
pub mod rust;
