//! Finding and reading the config of a tree (the model's `Config::parse` reads its text):
//! through the confined reader, as every file of the tree that is not a source.

use std::path::{Path, PathBuf};

use crate::model::policy::{Config, ConfigError, CONFIG_FILE, PYPROJECT};

/// The config of a tree root: `gpu-homogenize.toml` wins over `pyproject.toml`'s
/// `[tool.gpu-homogenize]`; `None` when the root has neither. A `gpu-homogenize.toml` of any
/// kind (a link, a FIFO) is the config, so that loading it refuses it by name rather than
/// falling back to another file.
pub fn config_file_of(root: &Path) -> Option<PathBuf> {
    let own = root.join(CONFIG_FILE);
    if std::fs::symlink_metadata(&own).is_ok() {
        return Some(own);
    }
    let text = crate::fs::tree_file::read_optional(root, Path::new(PYPROJECT), "its settings")?;
    let has_table = toml::from_str::<toml::Table>(&text)
        .ok()
        .and_then(|t| t.get("tool").and_then(|t| t.get("gpu-homogenize")).cloned())
        .is_some();
    has_table.then(|| root.join(PYPROJECT))
}

/// The config file `rel` of the tree at `root`, read through the confined reader.
pub fn load_in(root: &Path, rel: &Path) -> Result<Config, ConfigError> {
    let path = root.join(rel);
    let text = crate::fs::tree_file::read_text(root, rel, crate::fs::tree_file::SETTINGS_LIMIT)
        .map_err(|e| ConfigError::Read {
            path: path.clone(),
            why: e.why,
        })?
        .ok_or_else(|| ConfigError::Read {
            path: path.clone(),
            why: "no such file".to_string(),
        })?;
    Config::parse(&text, &path)
}

/// A config file the user named (`--config`): wherever it is, but a regular file within
/// the same size limit.
pub fn load_named(path: &Path) -> Result<Config, ConfigError> {
    let text = crate::fs::tree_file::read_named(path, crate::fs::tree_file::SETTINGS_LIMIT)
        .map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            why: e.why,
        })?;
    Config::parse(&text, path)
}
