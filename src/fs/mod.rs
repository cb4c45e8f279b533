//! The file-system layer: every byte the tool reads from or writes to the tree goes through
//! here. Confinement under the root without following links, the walk and its ignore files,
//! reading sources and the tree's other files within caps, compare-and-swap writes with
//! backups and temp records, the tool's state directory, and the run's shared resources.

pub(crate) mod confine;
pub(crate) mod panics;
pub(crate) mod platform;
pub(crate) mod resources;
pub mod source;
pub(crate) mod state;
pub(crate) mod tree_file;
pub mod walk;
pub(crate) mod write;
