//! Cargo.toml read as cargo reads it, through the `cargo_toml` crate: the workspace's
//! inherited fields applied (`edition.workspace = true`, `{ workspace = true }` dependencies,
//! `[lints] workspace = true`) and the targets cargo discovers by itself completed
//! (`src/main.rs`, `src/bin/*`, `examples/*`, `tests/*`, `benches/*`, with their `[[bin]]`,
//! `[[bench]] harness = false` … overrides). Nothing here interprets TOML by hand.

use std::path::{Path, PathBuf};

pub use cargo_toml::Manifest;
use cargo_toml::{Dependency, Edition, LintLevel, Product};

/// The manifest at `dir/Cargo.toml` (`dir` relative to the tree root `root`), completed;
/// `None` when there is none or it is not a manifest. A workspace member whose workspace
/// cannot be found keeps what its own file says. Every file is read, and every directory
/// listed, inside `root` without following a link (see [`Confined`]).
pub fn load(root: &Path, dir: &Path) -> Option<Manifest> {
    let rel = dir.join("Cargo.toml");
    let bytes = match crate::fs::tree_file::read(root, &rel, crate::fs::tree_file::SETTINGS_LIMIT) {
        Ok(bytes) => bytes?,
        Err(e) => {
            crate::fs::tree_file::warn_once(&format!("{e}; this package is not read"));
            return None;
        }
    };
    let mut manifest = Manifest::from_slice(&bytes).ok()?;
    let fs = Confined {
        root: crate::base::paths::absolute(root),
        dir: dir.to_path_buf(),
    };
    if manifest
        .complete_from_abstract_filesystem::<cargo_toml::Value, _>(&fs, None)
        .is_err()
    {
        manifest = Manifest::from_slice(&bytes).ok()?;
    }
    Some(manifest)
}

/// cargo_toml's view of the disk for one package at `dir` (relative to `root`): target
/// discovery lists directories of the package, and the workspace is looked for in its
/// ancestors up to the tree root, each through the confined reader (its own `Filesystem`
/// follows links and reads up to `/`).
struct Confined {
    root: PathBuf,
    dir: PathBuf,
}

impl cargo_toml::AbstractFilesystem for Confined {
    fn file_names_in(
        &self,
        rel_path: &str,
    ) -> std::io::Result<std::collections::HashSet<Box<str>>> {
        let dir = crate::fs::confine::RootDir::open(&self.root)?;
        let names = dir.list(&self.dir.join(rel_path))?;
        Ok(names
            .into_iter()
            .map(|n| n.to_string_lossy().into_owned().into_boxed_str())
            .collect())
    }

    fn parse_root_workspace(
        &self,
        hint: Option<&Path>,
    ) -> Result<(Manifest<cargo_toml::Value>, PathBuf), cargo_toml::Error> {
        let candidates: Vec<PathBuf> = match hint {
            Some(hint) => crate::fs::tree_file::below_root(&self.dir.join(hint))
                .into_iter()
                .collect(),
            None => self
                .dir
                .ancestors()
                .skip(1)
                .map(Path::to_path_buf)
                .collect(),
        };
        for dir in candidates {
            let rel = dir.join("Cargo.toml");
            let bytes = match crate::fs::tree_file::read(
                &self.root,
                &rel,
                crate::fs::tree_file::SETTINGS_LIMIT,
            ) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(e) => return Err(cargo_toml::Error::Io(std::io::Error::other(e))),
            };
            let Ok(manifest) = Manifest::<cargo_toml::Value>::from_slice_with_metadata(&bytes)
            else {
                continue;
            };
            if manifest.workspace.is_some() {
                return Ok((manifest, self.root.join(dir)));
            }
        }
        Err(cargo_toml::Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no workspace manifest in the tree",
        )))
    }
}

/// The edition, as a year (cargo's default, 2015, when none is given or it is not known).
pub fn edition(manifest: &Manifest) -> u32 {
    let edition = manifest
        .package
        .as_ref()
        .and_then(|p| p.edition.get().ok().copied())
        .unwrap_or(Edition::E2015);
    edition as u32
}

/// `[lints.rust] unsafe_code = "forbid" | "deny"`, the workspace's when inherited.
pub fn forbids_unsafe(manifest: &Manifest) -> bool {
    let Ok(groups) = manifest.lints.get() else {
        return false;
    };
    groups
        .get("rust")
        .and_then(|rust| rust.get("unsafe_code"))
        .is_some_and(|lint| matches!(lint.level, LintLevel::Deny | LintLevel::Forbid))
}

/// The package's name, `-` as `_` (as code names its library).
pub fn package_name(manifest: &Manifest) -> Option<String> {
    Some(manifest.package.as_ref()?.name.replace('-', "_"))
}

/// The build script (`build = "…"`, or the `build.rs` cargo finds).
pub fn build_script(manifest: &Manifest) -> PathBuf {
    match manifest.package.as_ref().and_then(|p| p.build.as_ref()) {
        Some(cargo_toml::OptionalFile::Path(p)) => p.clone(),
        _ => PathBuf::from("build.rs"),
    }
}

/// The roots of the targets that are programs of their own: binaries, examples, benches and
/// integration tests whose `main` is not libtest's (`harness = false`: a real `fn main`).
/// Paths relative to the package.
pub fn program_roots(manifest: &Manifest) -> Vec<PathBuf> {
    let path = |p: &Product| p.path.as_ref().map(PathBuf::from);
    manifest
        .bin
        .iter()
        .chain(&manifest.example)
        .filter_map(path)
        .chain(
            manifest
                .bench
                .iter()
                .chain(&manifest.test)
                .filter(|b| !b.harness)
                .filter_map(path),
        )
        .collect()
}

/// The binaries whose own `#[test]` functions `cargo test` runs (`test = true`, the default
/// for a `[[bin]]`), each in a program whose `main` libtest writes. Paths relative to the
/// package.
pub fn tested_bin_roots(manifest: &Manifest) -> Vec<PathBuf> {
    manifest
        .bin
        .iter()
        .filter(|b| b.test)
        .filter_map(|b| b.path.as_ref().map(PathBuf::from))
        .collect()
}

/// Integration tests and benches whose `main` libtest writes (`harness = true`, the
/// default). Paths relative to the package.
pub fn test_roots(manifest: &Manifest) -> Vec<PathBuf> {
    manifest
        .test
        .iter()
        .chain(&manifest.bench)
        .filter(|t| t.harness)
        .filter_map(|t| t.path.as_ref().map(PathBuf::from))
        .collect()
}

/// The library's name as code uses it and its root, relative to the package.
pub fn library(manifest: &Manifest) -> Option<(String, PathBuf)> {
    let lib = manifest.lib.as_ref()?;
    let name = lib
        .name
        .as_ref()
        .map(|n| n.replace('-', "_"))
        .or_else(|| package_name(manifest))?;
    let path = lib.path.as_deref().unwrap_or("src/lib.rs");
    Some((name, PathBuf::from(path)))
}

/// One dependency as code names it: the name in code (`-` as `_`), the package it is, its
/// path when it is a path dependency (as written or, inherited, the workspace's, joined),
/// and the features it turns on.
pub struct Dep {
    pub local: String,
    pub package: String,
    pub path: Option<PathBuf>,
    pub features: Vec<String>,
}

/// Every dependency of the package (normal, dev, and target-specific ones).
pub fn dependencies(manifest: &Manifest) -> Vec<Dep> {
    let targets = manifest
        .target
        .values()
        .flat_map(|t| t.dependencies.iter().chain(&t.dev_dependencies));
    manifest
        .dependencies
        .iter()
        .chain(&manifest.dev_dependencies)
        .chain(targets)
        .map(|(local, dep)| Dep {
            local: local.replace('-', "_"),
            package: dep.package().unwrap_or(local).replace('-', "_"),
            path: match dep {
                Dependency::Detailed(d) => d.path.as_ref().map(PathBuf::from),
                _ => None,
            },
            features: dep.req_features().to_vec(),
        })
        .collect()
}

/// The `[features]` table: each feature with what it turns on (`dep/feat`, `dep:x`, …).
pub fn features(manifest: &Manifest) -> impl Iterator<Item = (&String, &Vec<String>)> {
    manifest.features.iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_inherits_its_workspace_and_its_targets_are_discovered() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("Cargo.toml", "[workspace]\nmembers = [\"m\"]\n[workspace.package]\nedition = \"2024\"\n[workspace.dependencies]\neng = { path = \"eng\" }\n[workspace.lints.rust]\nunsafe_code = \"forbid\"\n");
        write("m/Cargo.toml", "[package]\nname = \"my-tool\"\nversion = \"0.1.0\"\nedition.workspace = true\n[dependencies]\neng.workspace = true\ncandle = { package = \"candle-core\", version = \"0.9\", features = [\"cuda\"] }\n[lints]\nworkspace = true\n[[bench]]\nname = \"b\"\nharness = false\n[[test]]\nname = \"h\"\nharness = false\n");
        write("m/src/main.rs", "fn main() {}\n");
        write("m/src/lib.rs", "\n");
        write("m/src/bin/other.rs", "fn main() {}\n");
        write("m/benches/b.rs", "fn main() {}\n");
        write("m/tests/t.rs", "\n");
        write("m/tests/h.rs", "fn main() {}\n");
        write("m/benches/c.rs", "#[bench]\nfn c() {}\n");
        let m = load(dir.path(), Path::new("m")).unwrap();
        assert_eq!(edition(&m), 2024);
        assert!(forbids_unsafe(&m));
        let mut roots = program_roots(&m);
        roots.sort();
        assert_eq!(
            roots,
            [
                "benches/b.rs",
                "src/bin/other.rs",
                "src/main.rs",
                "tests/h.rs"
            ]
            .map(PathBuf::from)
        );
        let mut tests = test_roots(&m);
        tests.sort();
        assert_eq!(tests, ["benches/c.rs", "tests/t.rs"].map(PathBuf::from));
        assert_eq!(
            library(&m),
            Some(("my_tool".to_string(), PathBuf::from("src/lib.rs")))
        );
        let deps = dependencies(&m);
        let candle = deps.iter().find(|d| d.local == "candle").unwrap();
        assert_eq!(
            (candle.package.as_str(), candle.features.as_slice()),
            ("candle_core", &["cuda".to_string()][..])
        );
        let eng = deps.iter().find(|d| d.local == "eng").unwrap();
        assert!(
            eng.path.as_ref().unwrap().ends_with("eng"),
            "{:?}",
            eng.path
        );
    }
}
