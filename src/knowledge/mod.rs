//! The GPU knowledge: which frameworks, crates and APIs select a card, as tables that the
//! languages' analyses and the prefilter read. Data only: this layer imports nothing of the crate.

/// Words that make a name (a command-line option, a parameter, a cargo feature) about a GPU
/// card: `--gpus`, `gpu_id`, `--cuda-device`. `device` also chooses between the CPU and a GPU,
/// and is added where that choice counts ([`DEVICE_WORDS`]).
pub const CARD_WORDS: &[&str] = &["gpu", "cuda"];

/// [`CARD_WORDS`] and `device`: a name that may choose a device (`--device`, `device_index`).
pub const DEVICE_WORDS: &[&str] = &["device", "gpu", "cuda"];

pub mod python;
pub mod rust;
