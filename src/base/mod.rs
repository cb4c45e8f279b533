//! The base layer: text and bytes as every other layer sees them. Lines (`\n`, `\r\n`, `\r`),
//! line and column of an offset, byte-range edits, escaping text from the tree for output, the
//! tool's own stdout, paths by name, and shards. It imports nothing of the crate above it.

pub mod edit;
pub mod escape;
pub mod line_index;
pub mod lines;
pub mod output;
pub mod paths;
pub mod shard;
