//! The Rust project index: the packages of the tree (their Cargo.toml: dependencies, features,
//! path and workspace dependencies), each target's module tree (`mod x;` from its root file),
//! and from them which binaries are GPU programs and which binaries run each library file.
//!
//! A binary is a GPU program when its package can reach CUDA — a dependency that is a CUDA
//! crate with its CUDA feature on (directly, through a package feature, or a crate of the tree
//! that has one) — and its code uses that crate (its own files, its package's library, a crate
//! of the tree). A binary whose own code chooses only CPU devices (`Device::Cpu`, burn's CPU
//! backends) and no CUDA one is a CPU program. Invariant, as for Python's index: it only reads,
//! and a file it does not know is judged on its own.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use syn::visit::{self, Visit};

use crate::lang::{FactKind, FactStore};
use crate::outcome::Language;
use crate::walk::{Entry, EntryKind};

/// How a registry crate reaches CUDA: always, or when one of these features is on.
#[derive(Debug, Clone, Copy)]
enum Cuda {
    Always,
    /// CUDA only where the code selects it (`Device::cuda_if_available()`, `Device::Cuda(0)`):
    /// tch builds CPU tensors by default.
    WhenSelected,
    Feature(&'static [&'static str]),
}

/// Feature names that mean CUDA whatever the crate (`mistralrs-core/cuda`, `whisper-rs-sys/cuda`).
const CUDA_FEATURES: &[&str] = &["cuda", "cudnn", "cublas", "flash-attn", "nccl", "tensorrt"];

/// CUDA crates and the wrappers that reach CUDA by default, one line per crate (names as Rust
/// sees them: `-` is `_`). A wrapper's line says which of its APIs picks the card.
const CUDA_CRATES: &[(&str, Cuda, &str)] = &[
    ("cudarc", Cuda::Always, "the CUDA driver API"),
    ("cust", Cuda::Always, "Rust-CUDA's `Device::get_device`"),
    ("rustacuda", Cuda::Always, "`Device::get_device`"),
    ("cubecl_cuda", Cuda::Always, "the CUDA runtime of CubeCL"),
    ("burn_cuda", Cuda::Always, "burn's `Cuda` backend"),
    (
        "tch",
        Cuda::WhenSelected,
        "libtorch (`Device::cuda_if_available()` picks CUDA device 0)",
    ),
    ("burn_tch", Cuda::WhenSelected, "burn's libtorch backend"),
    (
        "rust_bert",
        Cuda::Always,
        "tch: its pipelines default to `Device::cuda_if_available()`",
    ),
    (
        "candle_core",
        Cuda::Feature(&["cuda", "cudnn"]),
        "`Device::new_cuda`",
    ),
    (
        "candle_nn",
        Cuda::Feature(&["cuda", "cudnn"]),
        "candle with CUDA",
    ),
    (
        "candle_transformers",
        Cuda::Feature(&["cuda", "cudnn", "flash-attn"]),
        "candle with CUDA",
    ),
    (
        "burn",
        Cuda::Feature(&["cuda", "cuda-jit", "tch"]),
        "burn's `Cuda` (or `LibTorch`) backend",
    ),
    ("cubecl", Cuda::Feature(&["cuda"]), "CubeCL's CUDA runtime"),
    (
        "ort",
        Cuda::Feature(&["cuda", "tensorrt"]),
        "ONNX Runtime's CUDA execution provider",
    ),
    (
        "llama_cpp_2",
        Cuda::Feature(&["cuda", "cublas"]),
        "llama.cpp with CUDA (its default layer split uses every visible GPU)",
    ),
    (
        "llama_cpp",
        Cuda::Feature(&["cuda", "cublas"]),
        "llama.cpp with CUDA",
    ),
    (
        "whisper_rs",
        Cuda::Feature(&["cuda"]),
        "whisper.cpp with CUDA",
    ),
    (
        "mistralrs",
        Cuda::Feature(&["cuda", "cudnn", "flash-attn"]),
        "mistral.rs with CUDA",
    ),
    (
        "fastembed",
        Cuda::Feature(&["cuda"]),
        "ONNX Runtime with CUDA",
    ),
];

/// What the index says about one `.rs` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRole {
    /// The root of a binary target. `cuda`: how its program reaches CUDA (`None`: it does not);
    /// `cpu`: why it is a CPU program (its own code chooses only CPU devices, or it is built
    /// with a known CUDA crate whose CUDA feature is off).
    Program {
        cuda: Option<String>,
        cpu: Option<String>,
        /// It links libtorch (tch, burn's LibTorch, rust-bert): PYTORCH_CUDA_ALLOC_CONF means
        /// something to it.
        torch: bool,
        /// An integration test (`tests/*.rs`): libtest writes its `main`.
        test: bool,
    },
    /// A module of a library (or of a binary): the GPU programs of the tree that run it, with
    /// whether each one sets the env in its `main` (a sync main; an async main does not).
    /// `made_sync`: one of them masks only once `fix --unsafe-fixes` makes its async main
    /// sync, so remapping an index here is unsafe-tier too.
    Module {
        programs: Vec<(String, bool)>,
        made_sync: bool,
    },
}

#[derive(Debug, Default)]
pub struct RustIndex {
    files: HashMap<String, FileRole>,
}

impl FileRole {
    /// A module one of whose programs masks only once its async main is made sync.
    pub fn made_sync(&self) -> bool {
        matches!(
            self,
            FileRole::Module {
                made_sync: true,
                ..
            }
        )
    }
}

impl RustIndex {
    pub fn role(&self, rel: &str) -> Option<&FileRole> {
        self.files.get(rel)
    }

    pub fn build(
        root: &Path,
        entries: &[Entry],
        max_file_size: u64,
        store: &dyn FactStore,
    ) -> RustIndex {
        let rs: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.kind == EntryKind::Source(Language::Rust))
            .collect();
        if rs.is_empty() {
            return RustIndex::default();
        }
        let files: HashMap<String, RsFile> = rs
            .par_iter()
            .filter_map(|e| {
                // `null`: the file does not parse, and is left out.
                let cached = store
                    .load(e, FactKind::Rust)
                    .and_then(|text| serde_json::from_str::<Option<RsFile>>(&text).ok());
                let file = match cached {
                    Some(file) => file,
                    None => {
                        let (file, hash) = read(root, e, max_file_size)?;
                        if let Ok(text) = serde_json::to_string(&file) {
                            store.save(e, hash, FactKind::Rust, text);
                        }
                        file
                    }
                }?;
                Some((e.rel.clone(), file))
            })
            .collect();
        let packages = Packages::find(root, &rs);
        link(root, &files, &packages)
    }
}

/// One file, as the index sees it (kept by the content cache).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct RsFile {
    /// `mod x;` declarations: (name, `#[path]`, the inline modules around it).
    mods: Vec<(String, Option<String>, Vec<String>)>,
    /// First segments of every path and `use` (the crates it names).
    names: HashSet<String>,
    /// Chooses a CUDA device (`new_cuda`, `Device::Cuda`, `cuda_if_available`, a `Cuda`
    /// backend), or a CPU one.
    cuda: bool,
    cpu: bool,
    async_main: bool,
    /// An async main the fix makes sync (`--unsafe-fixes`): it masks once fixed.
    made_sync: bool,
    has_main: bool,
}

/// The facts of one file (`None` when it does not parse) and the hash of the bytes read;
/// `None` when it cannot be read.
fn read(root: &Path, entry: &Entry, limit: u64) -> Option<(Option<RsFile>, u64)> {
    let bytes = crate::source::read_under(root, &entry.rel_path, limit).ok()?;
    let hash = crate::source::content_key(&bytes);
    Some((parse(bytes), hash))
}

fn parse(bytes: Vec<u8>) -> Option<RsFile> {
    let text = String::from_utf8(bytes).ok()?;
    // Too deep for syn's recursion: left to the per-file pass, which reports it.
    crate::nesting::check(Language::Rust, &text).ok()?;
    let file = syn::parse_file(&text).ok()?;
    let mut v = Reader::default();
    v.visit_file(&file);
    let main = super::facts::mains::choose(&file.items);
    v.file.has_main = main.is_some();
    // An async main whose runtime the fix rebuilds in a sync main (`--unsafe-fixes`) masks too.
    let convertible = |m: &super::facts::MainFn| {
        m.runtime
            .as_ref()
            .is_some_and(super::async_main::convertible)
    };
    v.file.async_main = main.as_ref().is_some_and(|m| m.is_async && !convertible(m));
    v.file.made_sync = main.as_ref().is_some_and(|m| m.is_async && convertible(m));
    proc_macro2::extra::invalidate_current_thread_spans();
    Some(v.file)
}

#[derive(Default)]
struct Reader {
    file: RsFile,
    inline: Vec<String>,
}

impl<'a> Visit<'a> for Reader {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        let path = m.attrs.iter().find_map(|a| {
            let syn::Meta::NameValue(nv) = &a.meta else {
                return None;
            };
            if !nv.path.is_ident("path") {
                return None;
            }
            match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            }
        });
        match &m.content {
            None => self
                .file
                .mods
                .push((m.ident.to_string(), path, self.inline.clone())),
            Some(_) => {
                self.inline.push(m.ident.to_string());
                visit::visit_item_mod(self, m);
                self.inline.pop();
            }
        }
    }

    fn visit_path(&mut self, p: &'a syn::Path) {
        if let Some(first) = p.segments.first() {
            self.file.names.insert(first.ident.to_string());
        }
        for s in &p.segments {
            let id = s.ident.to_string();
            match id.as_str() {
                "new_cuda"
                | "cuda_if_available"
                | "Cuda"
                | "CudaDevice"
                | "CudaContext"
                | "get_device"
                | "new_cuda_with_stream"
                | "LibTorch" => self.file.cuda = true,
                "Cpu" | "NdArray" | "Flex" | "NdArrayDevice" | "CpuDevice" => self.file.cpu = true,
                _ => {}
            }
        }
        visit::visit_path(self, p);
    }

    fn visit_use_tree(&mut self, t: &'a syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => {
                self.file.names.insert(p.ident.to_string());
            }
            syn::UseTree::Name(n) => {
                self.file.names.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) => {
                self.file.names.insert(r.ident.to_string());
            }
            _ => {}
        }
        // Only the first segment names a crate: do not descend into `a::b::{c}`.
        if let syn::UseTree::Group(g) = t {
            for item in &g.items {
                self.visit_use_tree(item);
            }
        }
    }

    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        // `Device::cuda_if_available()` is a path; `.cuda()` / `.to_device(Device::Cuda(0))`
        // are what tch programs write too.
        if m.method == "cuda" {
            self.file.cuda = true;
        }
        visit::visit_expr_method_call(self, m);
    }
}

/// A package of the tree: where it is and what it depends on.
#[derive(Debug)]
struct Package {
    /// Root-relative directory (`""` for the root).
    dir: String,
    /// The name code uses for its library (`[lib] name`, else the package name with `_`).
    lib_name: String,
    lib_root: Option<String>,
    /// Local dependency name → how it reaches CUDA (a registry crate, with its reason) or the
    /// package of the tree it is.
    deps: Vec<(String, Dep)>,
    /// Root-relative paths of its binary targets' root files, and whether each is an
    /// integration test.
    binaries: Vec<(String, bool)>,
}

#[derive(Debug, Clone)]
enum Dep {
    /// Reaches CUDA (why), whether through libtorch, and whether only where the code selects a
    /// CUDA device.
    Cuda(String, bool, bool),
    /// A known CUDA crate built without its CUDA feature.
    CudaOff(String),
    Tree(usize),
    Other,
}

#[derive(Debug, Default)]
struct Packages(Vec<Package>);

impl Packages {
    fn find(root: &Path, rs: &[&Entry]) -> Packages {
        // Every directory holding a Cargo.toml with a [package], found above the .rs files.
        let mut dirs: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        for e in rs {
            let mut dir = Path::new(&e.rel).parent();
            while let Some(d) = dir {
                let key = slash(d);
                if !seen.insert(key.clone()) {
                    break;
                }
                if root.join(d).join("Cargo.toml").is_file() {
                    dirs.push(key);
                }
                dir = d.parent();
            }
        }
        dirs.sort();
        let manifests: Vec<(String, toml::Table)> = dirs
            .into_iter()
            .filter_map(|d| {
                let text = std::fs::read_to_string(root.join(&d).join("Cargo.toml")).ok()?;
                Some((d, text.parse::<toml::Table>().ok()?))
            })
            .collect();
        let workspace_deps = |dir: &str| -> Option<&toml::Table> {
            manifests
                .iter()
                .filter(|(d, m)| {
                    (d.is_empty() || dir == d || dir.starts_with(&format!("{d}/")))
                        && m.get("workspace").is_some()
                })
                .max_by_key(|(d, _)| d.len())
                .and_then(|(_, m)| m.get("workspace")?.get("dependencies")?.as_table())
        };
        let names: Vec<(String, String)> = manifests
            .iter()
            .filter_map(|(d, m)| {
                let name = m.get("package")?.get("name")?.as_str()?;
                Some((name.replace('-', "_"), d.clone()))
            })
            .collect();
        let mut packages = Vec::new();
        for (dir, m) in &manifests {
            let Some(package) = m.get("package") else {
                continue;
            };
            let name = package
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or("")
                .replace('-', "_");
            let lib_name = m
                .get("lib")
                .and_then(|l| l.get("name"))
                .and_then(|n| n.as_str())
                .map(|n| n.replace('-', "_"))
                .unwrap_or(name.clone());
            let lib_path = m
                .get("lib")
                .and_then(|l| l.get("path"))
                .and_then(|p| p.as_str())
                .unwrap_or("src/lib.rs");
            let lib_root = join(dir, lib_path);
            let lib_root = root.join(&lib_root).is_file().then_some(lib_root);
            let features: Vec<String> = m
                .get("features")
                .and_then(|f| f.as_table())
                .map(|t| {
                    t.values()
                        .filter_map(|v| v.as_array())
                        .flatten()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let mut deps = Vec::new();
            let mut tables: Vec<&toml::Table> = ["dependencies", "dev-dependencies"]
                .iter()
                .filter_map(|t| m.get(*t).and_then(|d| d.as_table()))
                .collect();
            if let Some(targets) = m.get("target").and_then(|t| t.as_table()) {
                for cfg in targets.values() {
                    for t in ["dependencies", "dev-dependencies"] {
                        if let Some(d) = cfg.get(t).and_then(|d| d.as_table()) {
                            tables.push(d);
                        }
                    }
                }
            }
            for table in tables {
                for (local, spec) in table {
                    let inherited = spec.get("workspace").and_then(|w| w.as_bool()) == Some(true);
                    let ws = inherited
                        .then(|| workspace_deps(dir).and_then(|w| w.get(local)))
                        .flatten();
                    let get = |key: &str| spec.get(key).or_else(|| ws.and_then(|w| w.get(key)));
                    let package_name = get("package")
                        .and_then(|p| p.as_str())
                        .unwrap_or(local)
                        .replace('-', "_");
                    let local = local.replace('-', "_");
                    let path = get("path").and_then(|p| p.as_str()).map(|p| {
                        // A workspace dependency's path is the workspace root's.
                        let base = if spec.get("path").is_some() {
                            dir.clone()
                        } else {
                            workspace_dir(&manifests, dir)
                        };
                        normalize(&join(&base, p))
                    });
                    // Only a path dependency is a crate of the tree: a registry one is not,
                    // even when a package of the tree has its name (a vendored stub).
                    let tree = path
                        .as_ref()
                        .and_then(|p| names.iter().position(|(_, d)| d == p));
                    let mut on: Vec<String> = get("features")
                        .and_then(|f| f.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect();
                    // `cuda = ["candle-core/cuda"]`: a feature of the package turns it on.
                    for f in &features {
                        let raw = f.trim_start_matches("dep:");
                        if let Some((d, feat)) = raw.split_once('/') {
                            if d.trim_end_matches('?').replace('-', "_") == local {
                                on.push(feat.to_string());
                            }
                        }
                    }
                    let dep = match tree {
                        Some(i) => Dep::Tree(i),
                        None => match cuda_dep(&package_name, &on) {
                            Some((why, torch, selected)) => Dep::Cuda(why, torch, selected),
                            None if CUDA_CRATES.iter().any(|(n, _, _)| *n == package_name) => {
                                Dep::CudaOff(package_name.clone())
                            }
                            None => Dep::Other,
                        },
                    };
                    deps.push((local, dep));
                }
            }
            // A CUDA crate's own examples and tests use it (`cust`'s examples, a wrapper built
            // with its own `cuda` feature).
            let own_features: Vec<String> = m
                .get("features")
                .and_then(|f| f.as_table())
                .map(|t| t.keys().cloned().collect())
                .unwrap_or_default();
            let known = CUDA_CRATES.iter().any(|(n, _, _)| *n == name);
            if let Some((why, torch, selected)) =
                known.then(|| cuda_dep(&name, &own_features)).flatten()
            {
                deps.push((lib_name.clone(), Dep::Cuda(why, torch, selected)));
            }
            packages.push(Package {
                dir: dir.clone(),
                lib_name,
                lib_root,
                deps,
                binaries: Vec::new(),
            });
        }
        // `Dep::Tree` indices point into `names`: map them to `packages`.
        let index_of: HashMap<String, usize> = packages
            .iter()
            .enumerate()
            .map(|(i, p)| (p.dir.clone(), i))
            .collect();
        for p in &mut packages {
            for (_, dep) in &mut p.deps {
                if let Dep::Tree(i) = dep {
                    *dep = index_of
                        .get(&names[*i].1)
                        .map_or(Dep::Other, |&j| Dep::Tree(j));
                }
            }
        }
        // Binaries: the entry points Cargo's target rules find, and the integration tests.
        for e in rs {
            let Some(p) = packages
                .iter_mut()
                .filter(|p| p.dir.is_empty() || e.rel.starts_with(&format!("{}/", p.dir)))
                .max_by_key(|p| p.dir.len())
            else {
                continue;
            };
            let in_package = if p.dir.is_empty() {
                e.rel.as_str()
            } else {
                &e.rel[p.dir.len() + 1..]
            };
            let parts: Vec<&str> = in_package.split('/').collect();
            let test = matches!(parts.as_slice(), ["tests", f] if f.ends_with(".rs"))
                || matches!(parts.as_slice(), ["tests", _, "main.rs"]);
            let role = super::krate::CrateInfo::of(&root.join(&e.rel_path)).role;
            if role == super::krate::Role::Entry || test {
                p.binaries.push((e.rel.clone(), test));
            }
        }
        Packages(packages)
    }
}

/// How a registry dependency reaches CUDA, given the features turned on for it: why, whether
/// through libtorch, whether only where the code selects CUDA. A crate the table does not know
/// reaches CUDA when a feature named for it is on (`mistralrs-core/cuda`).
fn cuda_dep(package: &str, on: &[String]) -> Option<(String, bool, bool)> {
    let torch_crate = matches!(package, "tch" | "burn_tch" | "rust_bert");
    let Some((_, cuda, why)) = CUDA_CRATES.iter().find(|(n, _, _)| *n == package) else {
        return on
            .iter()
            .find(|f| CUDA_FEATURES.contains(&f.as_str()))
            .map(|f| (format!("`{package}` with its `{f}` feature"), false, false));
    };
    match cuda {
        Cuda::Always => Some((format!("`{package}`: {why}"), torch_crate, false)),
        Cuda::WhenSelected => Some((format!("`{package}`: {why}"), torch_crate, true)),
        Cuda::Feature(features) => on.iter().find(|f| features.contains(&f.as_str())).map(|f| {
            (
                format!("`{package}` with its `{f}` feature: {why}"),
                torch_crate || f == "tch",
                false,
            )
        }),
    }
}

fn workspace_dir(manifests: &[(String, toml::Table)], member: &str) -> String {
    manifests
        .iter()
        .filter(|(d, m)| {
            (d.is_empty() || member == d || member.starts_with(&format!("{d}/")))
                && m.get("workspace").is_some()
        })
        .max_by_key(|(d, _)| d.len())
        .map_or(String::new(), |(d, _)| d.clone())
}

fn join(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

/// `a/b/../c` → `a/c`, `./x` → `x`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn slash(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// The files of a target: its root and every module `mod x;` reaches.
fn module_tree(root: &str, files: &HashMap<String, RsFile>) -> Vec<String> {
    let mut out = vec![root.to_string()];
    let mut i = 0;
    while i < out.len() {
        let rel = out[i].clone();
        i += 1;
        let Some(file) = files.get(&rel) else {
            continue;
        };
        let path = PathBuf::from(&rel);
        let dir = path.parent().map(slash).unwrap_or_default();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let is_root = rel == root || stem == "mod" || stem == "lib" || stem == "main";
        let base = if is_root {
            dir.clone()
        } else {
            join(&dir, &stem)
        };
        for (name, attr, inline) in &file.mods {
            let candidates = match attr {
                Some(p) => vec![normalize(&join(&dir, p))],
                None => {
                    let base = inline.iter().fold(base.clone(), |b, m| join(&b, m));
                    vec![
                        join(&base, &format!("{name}.rs")),
                        join(&base, &format!("{name}/mod.rs")),
                    ]
                }
            };
            if let Some(found) = candidates.into_iter().find(|c| files.contains_key(c)) {
                if !out.contains(&found) {
                    out.push(found);
                }
            }
        }
    }
    out
}

fn link(_root: &Path, files: &HashMap<String, RsFile>, packages: &Packages) -> RustIndex {
    let packages = &packages.0;
    // The files of each package's library.
    let lib_files: Vec<Vec<String>> = packages
        .iter()
        .map(|p| {
            p.lib_root
                .as_ref()
                .map(|r| module_tree(r, files))
                .unwrap_or_default()
        })
        .collect();
    let names_of = |tree: &[String]| -> HashSet<&str> {
        tree.iter()
            .filter_map(|f| files.get(f))
            .flat_map(|f| f.names.iter().map(String::as_str))
            .collect()
    };
    // How each package's library reaches CUDA, through what its files name (memoised; a
    // cycle of path dependencies reaches nothing more).
    let mut lib_cuda: Vec<Option<Reached>> = vec![None; packages.len()];
    fn reach(
        i: usize,
        tree: &[String],
        packages: &[Package],
        lib_files: &[Vec<String>],
        files: &HashMap<String, RsFile>,
        memo: &mut Vec<Option<Reached>>,
        stack: &mut Vec<usize>,
    ) -> Reached {
        let named: HashSet<&str> = tree
            .iter()
            .filter_map(|f| files.get(f))
            .flat_map(|f| f.names.iter().map(String::as_str))
            .collect();
        for (local, dep) in &packages[i].deps {
            if !named.contains(local.as_str()) {
                continue;
            }
            match dep {
                // tch and the like: only where the code chooses a CUDA device.
                Dep::Cuda(why, torch, selected) => {
                    let chooses = tree.iter().filter_map(|f| files.get(f)).any(|f| f.cuda);
                    if !*selected || chooses {
                        return Some((why.clone(), *torch));
                    }
                }
                Dep::Tree(j) if !stack.contains(j) => {
                    let found = match &memo[*j] {
                        Some(known) => known.clone(),
                        None => {
                            stack.push(*j);
                            let r =
                                reach(*j, &lib_files[*j], packages, lib_files, files, memo, stack);
                            stack.pop();
                            memo[*j] = Some(r.clone());
                            r
                        }
                    };
                    if let Some((why, torch)) = found {
                        return Some((format!("`{local}` (a crate of this tree) → {why}"), torch));
                    }
                }
                _ => {}
            }
        }
        None
    }
    for i in 0..packages.len() {
        if lib_cuda[i].is_none() {
            let r = reach(
                i,
                &lib_files[i],
                packages,
                &lib_files,
                files,
                &mut lib_cuda,
                &mut vec![i],
            );
            lib_cuda[i] = Some(r);
        }
    }
    let mut roles: HashMap<String, FileRole> = HashMap::new();
    // Each binary: its own module tree, plus its package's library when it names it.
    let mut programs_of_package: Vec<Vec<(String, bool)>> = vec![Vec::new(); packages.len()];
    let mut program_files: Vec<(String, Vec<String>, bool)> = Vec::new();
    for (i, p) in packages.iter().enumerate() {
        for (bin, test) in &p.binaries {
            let tree = module_tree(bin, files);
            let named = names_of(&tree);
            let mut cuda = reach(
                i,
                &tree,
                packages,
                &lib_files,
                files,
                &mut lib_cuda.clone(),
                &mut vec![i],
            );
            if cuda.is_none() && named.contains(p.lib_name.as_str()) {
                cuda = lib_cuda[i].clone().flatten().map(|(why, torch)| {
                    (
                        format!("its package's library `{}` → {why}", p.lib_name),
                        torch,
                    )
                });
            }
            let own = tree.iter().filter_map(|f| files.get(f));
            let (mut any_cuda, mut any_cpu) = (false, false);
            for f in own {
                any_cuda |= f.cuda;
                any_cpu |= f.cpu;
            }
            // Chooses only CPU devices: a CPU program whatever it links; or names only CUDA
            // crates that are built without CUDA.
            let off = p.deps.iter().find_map(|(local, d)| match d {
                Dep::CudaOff(name) if named.contains(local.as_str()) => Some(name.clone()),
                _ => None,
            });
            let cpu = if any_cpu && !any_cuda {
                Some("its code chooses only CPU devices".to_string())
            } else if cuda.is_none() {
                off.map(|name| format!("`{name}` is built without its CUDA feature"))
            } else {
                None
            };
            let masks = !test && files.get(bin).is_some_and(|f| f.has_main && !f.async_main);
            let torch = cuda.as_ref().is_some_and(|(_, t)| *t);
            let cuda = cuda.map(|(why, _)| why);
            if cuda.is_some() && cpu.is_none() {
                // The libraries it runs: its package's (when it names it) and every crate of
                // the tree its package depends on.
                if named.contains(p.lib_name.as_str()) {
                    programs_of_package[i].push((bin.clone(), masks));
                }
                for (k, runs) in programs_of_package.iter_mut().enumerate() {
                    if k != i && depends_on(p, k, packages, &mut Vec::new()) {
                        runs.push((bin.clone(), masks));
                    }
                }
                program_files.push((bin.clone(), tree.clone(), masks));
            }
            roles.insert(
                bin.clone(),
                FileRole::Program {
                    cuda,
                    cpu,
                    torch,
                    test: *test,
                },
            );
        }
    }
    // Library files: the GPU programs of the tree that link the library.
    let made_sync = |bin: &str| files.get(bin).is_some_and(|f| f.made_sync);
    for (i, tree) in lib_files.iter().enumerate() {
        let mut programs = programs_of_package[i].clone();
        programs.sort();
        programs.dedup();
        let made_sync = programs.iter().any(|(p, _)| made_sync(p));
        for f in tree {
            roles.entry(f.clone()).or_insert(FileRole::Module {
                programs: programs.clone(),
                made_sync,
            });
        }
    }
    // Modules of a binary: that binary.
    for (bin, tree, masks) in program_files {
        for f in tree.iter().skip(1) {
            roles.entry(f.clone()).or_insert(FileRole::Module {
                programs: vec![(bin.clone(), masks)],
                made_sync: made_sync(&bin),
            });
        }
    }
    RustIndex { files: roles }
}

/// How a library or a program reaches CUDA (why), and whether through libtorch; `None`: it
/// does not.
type Reached = Option<(String, bool)>;

/// Whether package `q` depends on package `target`, directly or through crates of the tree.
fn depends_on(q: &Package, target: usize, packages: &[Package], seen: &mut Vec<usize>) -> bool {
    q.deps.iter().any(|(_, d)| match d {
        Dep::Tree(j) if *j == target => true,
        Dep::Tree(j) if !seen.contains(j) => {
            seen.push(*j);
            depends_on(&packages[*j], target, packages, seen)
        }
        _ => false,
    })
}
