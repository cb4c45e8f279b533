//! The edition of the crate a file belongs to, from the nearest Cargo.toml (workspace
//! inheritance included): `std::env::set_var` is `unsafe` from edition 2024 on.

use std::path::Path;

/// The edition, as a year; cargo's default when the manifest names none is 2015.
pub fn edition_of(file: &Path) -> u32 {
    let absolute = std::env::current_dir()
        .map(|d| d.join(file))
        .unwrap_or_else(|_| file.to_path_buf());
    for dir in absolute.ancestors().skip(1) {
        let Some(manifest) = read_manifest(&dir.join("Cargo.toml")) else {
            continue;
        };
        let Some(package) = manifest.get("package") else {
            continue;
        };
        return match package.get("edition") {
            Some(toml::Value::String(year)) => year.parse().unwrap_or(2015),
            Some(toml::Value::Table(t))
                if t.get("workspace").and_then(|v| v.as_bool()) == Some(true) =>
            {
                workspace_edition(dir).unwrap_or(2015)
            }
            _ => 2015,
        };
    }
    2021
}

fn workspace_edition(member: &Path) -> Option<u32> {
    member.ancestors().find_map(|dir| {
        let manifest = read_manifest(&dir.join("Cargo.toml"))?;
        let edition = manifest
            .get("workspace")?
            .get("package")?
            .get("edition")?
            .as_str()?;
        edition.parse().ok()
    })
}

fn read_manifest(path: &Path) -> Option<toml::Table> {
    std::fs::read_to_string(path).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_package_and_the_inherited_edition() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers=[\"a\",\"b\"]\n[workspace.package]\nedition = \"2024\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("a/src")).unwrap();
        std::fs::create_dir_all(root.join("b/src")).unwrap();
        std::fs::write(
            root.join("a/Cargo.toml"),
            "[package]\nname=\"a\"\nedition.workspace = true\n",
        )
        .unwrap();
        std::fs::write(
            root.join("b/Cargo.toml"),
            "[package]\nname=\"b\"\nedition = \"2021\"\n",
        )
        .unwrap();
        assert_eq!(edition_of(&root.join("a/src/main.rs")), 2024);
        assert_eq!(edition_of(&root.join("b/src/main.rs")), 2021);
    }
}
