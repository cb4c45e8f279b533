//! The file-system layer: every byte the tool reads from or writes to the tree goes through
//! here. Confinement under the root without following links, the walk and its ignore files,
//! reading sources and the tree's other files within caps, compare-and-swap writes with
//! backups and temp records, the tool's state directory, and the run's shared resources.

pub mod confine;
pub mod panics;
pub mod platform;
pub mod resources;
pub mod source;
pub mod state;
pub mod tree_file;
pub mod walk;
pub mod write;
