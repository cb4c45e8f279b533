//! What the nearest Cargo.toml says about a file: the crate's edition (`std::env::set_var` is
//! `unsafe` from 2024 on), whether the file is a binary's entry point, the build script or a
//! module, and whether the crate's lints forbid unsafe code.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// The Cargo.toml files read so far, parsed (`None`: absent or not TOML). One run reads each
/// manifest once, however many files of its crate it analyses.
#[derive(Debug, Default)]
pub struct Manifests(Mutex<HashMap<PathBuf, Option<Arc<toml::Table>>>>);

impl Manifests {
    fn get(&self, dir: &Path) -> Option<Arc<toml::Table>> {
        let known = self.lock().get(dir).cloned();
        if let Some(known) = known {
            return known;
        }
        let read = read_manifest(&dir.join("Cargo.toml")).map(Arc::new);
        self.lock().insert(dir.to_path_buf(), read.clone());
        read
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Option<Arc<toml::Table>>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl CrateInfo {
    /// What the nearest Cargo.toml says about `file`, reading it afresh.
    pub fn of(file: &Path) -> CrateInfo {
        CrateInfo::of_with(file, &Manifests::default())
    }

    /// The same, with the manifests read so far.
    pub fn of_with(file: &Path, manifests: &Manifests) -> CrateInfo {
        let absolute = std::env::current_dir()
            .map(|d| d.join(file))
            .unwrap_or_else(|_| file.to_path_buf());
        for dir in absolute.ancestors().skip(1) {
            let Some(manifest) = manifests.get(dir) else {
                continue;
            };
            let Some(package) = manifest.get("package") else {
                continue;
            };
            let rel = absolute
                .strip_prefix(dir)
                .unwrap_or(&absolute)
                .to_path_buf();
            return CrateInfo {
                edition: package_edition(package, dir, manifests),
                role: role(&rel, &manifest),
                lints_forbid_unsafe: lints_forbid_unsafe(&manifest, dir, manifests),
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
pub fn edition_of(file: &Path) -> u32 {
    CrateInfo::of(file).edition
}

fn package_edition(package: &toml::Value, dir: &Path, manifests: &Manifests) -> u32 {
    match package.get("edition") {
        Some(toml::Value::String(year)) => year.parse().unwrap_or(2015),
        Some(toml::Value::Table(t)) if is_inherited(t) => {
            workspace_value(dir, &["package", "edition"], manifests)
                .and_then(|v| v.as_str().and_then(|s| s.parse().ok()))
                .unwrap_or(2015)
        }
        _ => 2015,
    }
}

fn is_inherited(t: &toml::Table) -> bool {
    t.get("workspace").and_then(|v| v.as_bool()) == Some(true)
}

/// `[workspace.<path>]` of the nearest workspace manifest above `member`.
fn workspace_value(member: &Path, path: &[&str], manifests: &Manifests) -> Option<toml::Value> {
    member.ancestors().find_map(|dir| {
        let manifest = manifests.get(dir)?;
        let mut value = manifest.get("workspace")?;
        for key in path {
            value = value.get(key)?;
        }
        Some(value.clone())
    })
}

fn role(rel: &Path, manifest: &toml::Table) -> Role {
    let package = manifest.get("package");
    let build = package
        .and_then(|p| p.get("build"))
        .and_then(|b| b.as_str())
        .unwrap_or("build.rs");
    if rel == Path::new(build) {
        return Role::BuildScript;
    }
    let declared = |table: &str, harness_off_only: bool| {
        targets(manifest, table).any(|t| {
            let path = t.get("path").and_then(|p| p.as_str()).map(PathBuf::from);
            let harness = t.get("harness").and_then(|h| h.as_bool()).unwrap_or(true);
            path.as_deref() == Some(rel) && !(harness_off_only && harness)
        })
    };
    if declared("bin", false) || declared("example", false) || declared("bench", true) {
        return Role::Entry;
    }
    let parts: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
    let auto_entry = match parts.as_slice() {
        ["src", "main.rs"] => true,
        ["src", "bin", f] | ["examples", f] => f.ends_with(".rs"),
        ["src", "bin", _, "main.rs"] | ["examples", _, "main.rs"] => true,
        ["benches", f] if f.ends_with(".rs") => bench_without_harness(manifest, &f[..f.len() - 3]),
        ["benches", name, "main.rs"] => bench_without_harness(manifest, name),
        _ => false,
    };
    if auto_entry {
        Role::Entry
    } else {
        Role::Module
    }
}

fn targets<'a>(manifest: &'a toml::Table, table: &str) -> impl Iterator<Item = &'a toml::Value> {
    manifest
        .get(table)
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
}

/// A bench is a plain binary only when its `[[bench]]` says `harness = false`.
fn bench_without_harness(manifest: &toml::Table, name: &str) -> bool {
    targets(manifest, "bench").any(|t| {
        t.get("name").and_then(|n| n.as_str()) == Some(name)
            && t.get("harness").and_then(|h| h.as_bool()) == Some(false)
    })
}

fn lints_forbid_unsafe(manifest: &toml::Table, dir: &Path, manifests: &Manifests) -> bool {
    let lints = match manifest.get("lints") {
        Some(toml::Value::Table(t)) if is_inherited(t) => {
            workspace_value(dir, &["lints"], manifests)
        }
        other => other.cloned(),
    };
    let level = lints
        .as_ref()
        .and_then(|l| l.get("rust"))
        .and_then(|r| r.get("unsafe_code"))
        .and_then(|v| match v {
            toml::Value::String(s) => Some(s.clone()),
            toml::Value::Table(t) => t.get("level").and_then(|l| l.as_str()).map(str::to_string),
            _ => None,
        });
    matches!(level.as_deref(), Some("forbid" | "deny"))
}

/// Whether `[dependencies]` or a `[target.….dependencies]` names a GPU crate (by its
/// package name, or `package = …` when renamed).
fn gpu_dependency(manifest: &toml::Table) -> bool {
    let gpu = |table: Option<&toml::Value>| {
        table.and_then(|t| t.as_table()).is_some_and(|deps| {
            deps.iter().any(|(name, spec)| {
                let package = spec.get("package").and_then(|p| p.as_str()).unwrap_or(name);
                crate::rust::facts::GPU_CRATES.contains(&package.replace('-', "_").as_str())
            })
        })
    };
    let targets = manifest.get("target").and_then(|t| t.as_table());
    gpu(manifest.get("dependencies"))
        || targets.is_some_and(|t| t.values().any(|cfg| gpu(cfg.get("dependencies"))))
}

fn read_manifest(path: &Path) -> Option<toml::Table> {
    std::fs::read_to_string(path).ok()?.parse().ok()
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
        assert_eq!(edition_of(&root.join("a/src/main.rs")), 2024);
        assert_eq!(edition_of(&root.join("b/src/main.rs")), 2021);
        assert!(CrateInfo::of(&root.join("a/src/main.rs")).lints_forbid_unsafe);
        assert!(CrateInfo::of(&root.join("b/src/main.rs")).gpu_dependency);
        assert!(!CrateInfo::of(&root.join("a/src/main.rs")).gpu_dependency);
        assert!(!CrateInfo::of(&root.join("b/src/main.rs")).lints_forbid_unsafe);
    }

    #[test]
    fn entry_points_follow_cargo_target_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "Cargo.toml", "[package]\nname=\"p\"\n[[bench]]\nname=\"raw\"\nharness=false\n[[bin]]\nname=\"t\"\npath=\"tools/t.rs\"\n");
        let role = |rel: &str| CrateInfo::of(&root.join(rel)).role;
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
            CrateInfo::of(Path::new("/nonexistent-gh/x.rs")).role,
            Role::Standalone
        );
    }
}
