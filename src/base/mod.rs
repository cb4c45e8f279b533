//! The base layer: text and bytes as every other layer sees them. Lines (`\n`, `\r\n`, `\r`),
//! line and column of an offset, byte-range edits, escaping text from the tree for output, the
//! tool's own stdout, paths by name, and shards. It imports nothing of the crate above it.

pub mod edit;
pub(crate) mod escape;
pub(crate) mod line_index;
pub(crate) mod lines;
pub(crate) mod output;
pub(crate) mod paths;
pub(crate) mod shard;
