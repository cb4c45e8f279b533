//! What the nearest Cargo.toml says about a file: the crate's edition (`std::env::set_var` is
//! `unsafe` from 2024 on), whether the file is a binary's entry point, the build script or a
//! module, and whether the crate's lints forbid unsafe code.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::manifest::{self, Manifest};

/// The part a file plays in its crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The root of a binary target: `src/main.rs`, `src/bin/*.rs`, `examples/*.rs`, a
    /// `benches/*.rs` with `harness = false`, or a `[[bin]]`/`[[example]]` path.
    Entry,
    /// `build.rs`: runs at build time, never on the GPU.
    BuildScript,
    /// Any other file of a package: a library module, a test, a bench with a harness.
    Module,
    /// No Cargo.toml above it: a lone file compiled with rustc (its `fn main` is the entry).
    Standalone,
}

#[derive(Debug, Clone)]
pub struct CrateInfo {
    pub edition: u32,
    pub role: Role,
    /// `[lints.rust] unsafe_code = "forbid" | "deny"` (or inherited from the workspace).
    pub lints_forbid_unsafe: bool,
    /// The package depends on a GPU crate (`[dependencies]`, target-specific ones included).
    pub gpu_dependency: bool,
}

/// The Cargo.toml files read so far, completed (see [`super::manifest`]; `None`: absent or
/// not a manifest). One run reads each manifest once, however many files of its crate it
/// analyses. Only the tree's manifests are read: none above its root.
#[derive(Debug)]
pub struct Manifests {
    root: PathBuf,
    read: Mutex<HashMap<PathBuf, Option<Arc<Manifest>>>>,
}

impl Manifests {
    /// The manifests of the tree at `root`.
    pub fn within(root: &Path) -> Manifests {
        Manifests {
            root: crate::base::paths::absolute(root),
            read: Mutex::default(),
        }
    }

    fn get(&self, dir: &Path) -> Option<Arc<Manifest>> {
        let known = self.lock().get(dir).cloned();
        if let Some(known) = known {
            return known;
        }
        let rel = dir.strip_prefix(&self.root).ok()?;
        let read = manifest::load(&self.root, rel).map(Arc::new);
        self.lock().insert(dir.to_path_buf(), read.clone());
        read
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Option<Arc<Manifest>>>> {
        self.read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl CrateInfo {
    /// What the nearest Cargo.toml of the tree at `root` says about `file`, reading it afresh.
    pub fn of(root: &Path, file: &Path) -> CrateInfo {
        CrateInfo::of_with(file, &Manifests::within(root))
    }

    /// The same, with the manifests read so far.
    pub fn of_with(file: &Path, manifests: &Manifests) -> CrateInfo {
        let absolute = std::env::current_dir()
            .map(|d| d.join(file))
            .unwrap_or_else(|_| file.to_path_buf());
        for dir in absolute
            .ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(&manifests.root))
        {
            let Some(manifest) = manifests.get(dir) else {
                continue;
            };
            if manifest.package.is_none() {
                continue;
            }
            let rel = absolute
                .strip_prefix(dir)
                .unwrap_or(&absolute)
                .to_path_buf();
            return CrateInfo {
                edition: manifest::edition(&manifest),
                role: role(&rel, &manifest),
                lints_forbid_unsafe: manifest::forbids_unsafe(&manifest),
                gpu_dependency: gpu_dependency(&manifest),
            };
        }
        CrateInfo {
            edition: 2021,
            role: Role::Standalone,
            lints_forbid_unsafe: false,
            gpu_dependency: false,
        }
    }
}

/// The edition, as a year; cargo's default when the manifest names none is 2015.
pub fn edition_of(root: &Path, file: &Path) -> u32 {
    CrateInfo::of(root, file).edition
}

/// A program's root (binary, example, bench without harness), the build script, or a module.
fn role(rel: &Path, manifest: &Manifest) -> Role {
    if rel == manifest::build_script(manifest) {
        Role::BuildScript
    } else if manifest::program_roots(manifest).iter().any(|p| p == rel) {
        Role::Entry
    } else {
        Role::Module
    }
}

/// Whether `[dependencies]` or a `[target.….dependencies]` names a GPU crate (by its
/// package name, or `package = …` when renamed).
fn gpu_dependency(manifest: &Manifest) -> bool {
    let gpu = |(name, dep): (&String, &cargo_toml::Dependency)| {
        let package = dep.package().unwrap_or(name);
        crate::knowledge::rust::is_gpu_crate(&package.replace('-', "_"))
    };
    manifest.dependencies.iter().any(gpu)
        || manifest
            .target
            .values()
            .any(|t| t.dependencies.iter().any(gpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn reads_the_package_and_the_inherited_edition() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "Cargo.toml", "[workspace]\nmembers=[\"a\",\"b\"]\n[workspace.package]\nedition = \"2024\"\n[workspace.lints.rust]\nunsafe_code = \"forbid\"\n");
        write(
            root,
            "a/Cargo.toml",
            "[package]\nname=\"a\"\nedition.workspace = true\n[lints]\nworkspace = true\n",
        );
        write(
            root,
            "b/Cargo.toml",
            "[package]\nname=\"b\"\nedition = \"2021\"\n[target.'cfg(unix)'.dependencies]\ncandle = { package = \"candle-core\", version = \"0.9\" }\n",
        );
        assert_eq!(edition_of(root, &root.join("a/src/main.rs")), 2024);
        assert_eq!(edition_of(root, &root.join("b/src/main.rs")), 2021);
        assert!(CrateInfo::of(root, &root.join("a/src/main.rs")).lints_forbid_unsafe);
        assert!(CrateInfo::of(root, &root.join("b/src/main.rs")).gpu_dependency);
        assert!(!CrateInfo::of(root, &root.join("a/src/main.rs")).gpu_dependency);
        assert!(!CrateInfo::of(root, &root.join("b/src/main.rs")).lints_forbid_unsafe);
    }

    #[test]
    fn entry_points_follow_cargo_target_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "Cargo.toml", "[package]\nname=\"p\"\n[[bench]]\nname=\"raw\"\nharness=false\n[[bin]]\nname=\"t\"\npath=\"tools/t.rs\"\n");
        // Cargo discovers targets from the files that are there.
        for rel in [
            "src/main.rs",
            "src/bin/a.rs",
            "src/bin/b/main.rs",
            "src/bin/b/util.rs",
            "examples/e.rs",
            "benches/raw.rs",
            "benches/crit.rs",
            "tools/t.rs",
            "src/lib.rs",
            "src/cuda.rs",
            "tests/t.rs",
            "build.rs",
        ] {
            write(root, rel, "fn main() {}\n");
        }
        let role = |rel: &str| CrateInfo::of(root, &root.join(rel)).role;
        for entry in [
            "src/main.rs",
            "src/bin/a.rs",
            "src/bin/b/main.rs",
            "examples/e.rs",
            "benches/raw.rs",
            "tools/t.rs",
        ] {
            assert_eq!(role(entry), Role::Entry, "{entry}");
        }
        for module in [
            "src/lib.rs",
            "src/cuda.rs",
            "benches/crit.rs",
            "tests/t.rs",
            "src/bin/b/util.rs",
        ] {
            assert_eq!(role(module), Role::Module, "{module}");
        }
        assert_eq!(role("build.rs"), Role::BuildScript);
        assert_eq!(
            CrateInfo::of(
                Path::new("/nonexistent-gh"),
                Path::new("/nonexistent-gh/x.rs")
            )
            .role,
            Role::Standalone
        );
    }
}
