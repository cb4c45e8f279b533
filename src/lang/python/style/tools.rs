//! The settings of the tools that read their config from the directory they run in (the
//! project root): isort (`.isort.cfg`, `[tool.isort]`, setup.cfg / tox.ini `[isort]`), black
//! (`[tool.black]`), flake8 (`.flake8`, setup.cfg / tox.ini `[flake8]`) and the hooks of
//! `.pre-commit-config.yaml`.

use std::collections::HashMap;
use std::path::Path;

/// One tool's options, keys with `_` for `-` (isort and flake8 accept both).
pub type Options = HashMap<String, String>;

/// The project's root-level gates.
#[derive(Debug, Default)]
pub struct RootTools {
    pub isort: Option<Options>,
    pub black: Option<Options>,
    pub flake8: Option<Options>,
    /// Hook ids of the pre-commit config (`black`, `ruff-format`, `flake8`, …).
    pub hooks: Vec<String>,
    /// The black the project runs, when it runs one.
    pub black_release: Option<super::black::BlackRelease>,
}

impl RootTools {
    pub fn read(root: &Path) -> RootTools {
        let pyproject = read_toml(root, "pyproject.toml");
        let tool = |name: &str| {
            let table = pyproject.as_ref()?.get("tool")?.get(name)?.as_table()?;
            Some(
                table
                    .iter()
                    .map(|(k, v)| (k.replace('-', "_"), scalar(v)))
                    .collect::<Options>(),
            )
        };
        // isort's own order: the first of these files with an isort section.
        let isort = ini_section(root, ".isort.cfg", &["settings", "isort"])
            .or_else(|| tool("isort"))
            .or_else(|| ini_section(root, "setup.cfg", &["isort", "tool:isort"]))
            .or_else(|| ini_section(root, "tox.ini", &["isort", "tool:isort"]));
        let flake8 = ini_section(root, ".flake8", &["flake8"])
            .or_else(|| ini_section(root, "setup.cfg", &["flake8", "pycodestyle"]))
            .or_else(|| ini_section(root, "tox.ini", &["flake8", "pycodestyle"]));
        let pre_commit = read(root, ".pre-commit-config.yaml");
        let hooks: Vec<String> = pre_commit
            .as_deref()
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let id = l
                    .trim()
                    .trim_start_matches("- ")
                    .trim()
                    .strip_prefix("id:")?;
                Some(id.trim().trim_matches(['"', '\'']).to_string())
            })
            .collect();
        let black = tool("black");
        let configured = black.is_some() || hooks.iter().any(|h| h == "black");
        let black_release =
            super::black::release(root, pyproject.as_ref(), pre_commit.as_deref(), configured);
        RootTools {
            isort,
            black,
            flake8,
            hooks,
            black_release,
        }
    }

    pub fn hook(&self, id: &str) -> bool {
        self.hooks.iter().any(|h| h == id)
    }

    /// flake8 (or pycodestyle) is a gate: configured, or a pre-commit hook.
    pub fn flake8_gated(&self) -> bool {
        self.flake8.is_some() || self.hook("flake8") || self.hook("pycodestyle")
    }
}

/// A settings file of the root, through the confined reader (a link or a FIFO is named in a
/// warning and read as absent).
fn read(root: &Path, name: &str) -> Option<String> {
    crate::fs::tree_file::read_optional(root, Path::new(name), "its settings")
}

fn read_toml(root: &Path, name: &str) -> Option<toml::Table> {
    read(root, name)?.parse().ok()
}

/// A TOML value as an INI file would hold it.
fn scalar(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The first of `sections` that `path` has, as options.
fn ini_section(root: &Path, name: &str, sections: &[&str]) -> Option<Options> {
    let text = read(root, name)?;
    let option = ini::ParseOption {
        enabled_quote: false,
        enabled_escape: false,
        enabled_indented_mutiline_value: true,
        ..ini::ParseOption::default()
    };
    let ini = ini::Ini::load_from_str_opt(&text, option).ok()?;
    sections.iter().find_map(|name| {
        let section = ini.section(Some(*name))?;
        Some(
            section
                .iter()
                .map(|(k, v)| (k.trim().replace('-', "_"), v.trim().to_string()))
                .collect(),
        )
    })
}

/// An INI or TOML boolean as isort and flake8 read it.
pub fn truthy(value: Option<&String>) -> bool {
    value.is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isort_flake8_black_and_hooks_are_read_where_the_tools_look() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("setup.cfg"),
            "[metadata]\nname = x\n\n[isort]\nforce-sort-within-sections = True\n\n[flake8]\nmax-line-length = 100\nextend-ignore =\n    E203,\n    W503\n",
        )
        .unwrap();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.black]\nskip-string-normalization = true\nline-length = 100\n",
        )
        .unwrap();
        std::fs::write(
            root.join(".pre-commit-config.yaml"),
            "repos:\n  - repo: https://github.com/psf/black\n    hooks:\n      - id: black\n",
        )
        .unwrap();
        let tools = RootTools::read(root);
        let isort = tools.isort.unwrap();
        assert!(truthy(isort.get("force_sort_within_sections")));
        assert_eq!(tools.flake8.unwrap()["max_line_length"], "100");
        let black = tools.black.unwrap();
        assert!(truthy(black.get("skip_string_normalization")));
        assert_eq!(black["line_length"], "100");
        assert!(tools.hooks.iter().any(|h| h == "black"));
    }
}
