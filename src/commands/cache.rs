//! `gpu-homogenize cache clean`: remove the content cache of a tree, as `ruff clean` does.

use std::path::PathBuf;

use crate::cli::{CacheAction, CacheArgs};
use crate::fs::walk::find_root;
use crate::model::outcome::display_path;

pub fn run(args: CacheArgs) -> anyhow::Result<i32> {
    let CacheAction::Clean { paths } = args.action;
    let paths = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths
    };
    let root = find_root(&paths)?;
    let removed = crate::engine::cache::clean(&root).map_err(|e| {
        anyhow::anyhow!(
            "{}: cannot remove the cache: {e}",
            display_path(&root.join(crate::engine::cache::CACHE_DIR))
        )
    })?;
    out!(
        "removed {removed} file(s) of the cache at {}\n",
        display_path(&root.join(crate::engine::cache::CACHE_DIR))
    );
    Ok(super::EXIT_OK)
}
