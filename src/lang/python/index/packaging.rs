//! The packaging files of the tree, read as their build backends read them: the console and
//! GUI scripts they declare, and which packages each project ships. A module of a package its
//! project does not ship (`packages=["core"]` next to a `webui/` package, a `tests` package
//! `find_packages(exclude=…)` leaves out) is no module of an installable package. Only literal
//! values are read (a `setup.py` is parsed, never run); a setting that is not a literal ships
//! every package below the project, as before anything was known.

use rustc_hash::FxHashSet as HashSet;
use std::path::Path;

use ruff_python_ast::Expr;
use ruff_text_size::Ranged;

use super::{slash, under, PyFile};

/// The packaging files of the tree: the console/GUI scripts they declare, the directories of
/// installable projects and what each ships.
#[derive(Debug, Default)]
pub(super) struct Projects {
    /// (project directory, script name, target module, the object it calls: `run` of
    /// `pkg.cli:run`, empty when the target names a module only).
    pub(super) scripts: Vec<(String, String, String, String)>,
    /// Directories holding a `pyproject.toml`, `setup.py` or `setup.cfg` that makes a project.
    pub(super) dirs: Vec<String>,
    /// What the project of each of `dirs` ships, in the same order.
    shipping: Vec<Shipping>,
}

/// What one project ships, and the setting that says so.
#[derive(Debug, Clone)]
struct Shipping {
    select: Select,
    /// `package_dir`: (package, directory below the project); the `""` package is the folder
    /// every other package sits in (`{"": "src"}`).
    package_dir: Vec<(String, String)>,
    /// Top-level modules shipped (`py_modules`).
    modules: Vec<String>,
    /// The packaging file that says so (`setup.py`).
    file: std::borrow::Cow<'static, str>,
    /// The setting, as the outputs name it (`` `packages=find_packages()` ``).
    rule: String,
}

#[derive(Debug, Clone)]
enum Select {
    /// Every package below the project: a setting that is not a literal, or a backend whose
    /// discovery is not modelled.
    All,
    /// The packages named, each exactly (`packages=["pkg", "pkg.sub"]`).
    Named(Vec<String>),
    /// The packages found below `base` whose dotted name matches `include` and no `exclude`
    /// (fnmatch patterns, as `find_packages` reads them); `namespace`: folders without an
    /// `__init__.py` count too.
    Find {
        base: String,
        include: Vec<String>,
        exclude: Vec<String>,
        namespace: bool,
    },
    /// Whole top-level packages below `base` whose name matches a pattern (poetry's
    /// `packages = [{ include = "pkg", from = "src" }]`, hatch's wheel `packages`).
    Top { base: String, include: Vec<String> },
}

/// The folders setuptools' automatic discovery leaves out of a flat layout
/// (`setuptools.discovery.FlatLayoutPackageFinder.DEFAULT_EXCLUDE`).
const FLAT_EXCLUDE: &[&str] = &[
    "ci",
    "bin",
    "debian",
    "doc",
    "docs",
    "documentation",
    "manpages",
    "news",
    "newsfragments",
    "changelog",
    "test",
    "tests",
    "unit_test",
    "unit_tests",
    "example",
    "examples",
    "scripts",
    "tools",
    "util",
    "utils",
    "python",
    "build",
    "dist",
    "venv",
    "env",
    "requirements",
    "tasks",
    "fabfile",
    "site_scons",
    "benchmark",
    "benchmarks",
    "exercise",
    "exercises",
    "htmlcov",
    "[._]*",
];

impl Projects {
    /// The projects of the tree's packaging files, and the packages installed in it (`installed`:
    /// the `*.dist-info` metadata files the walk found).
    pub(super) fn find(
        root: &Path,
        files: &[PyFile],
        installed: &[&std::path::PathBuf],
    ) -> Projects {
        let mut dirs: HashSet<String> = HashSet::default();
        for f in files {
            let mut dir = Path::new(&f.rel).parent();
            while let Some(d) = dir {
                if !dirs.insert(slash(d)) {
                    break;
                }
                dir = d.parent();
            }
        }
        let mut projects = Projects::default();
        let mut dirs: Vec<String> = dirs.into_iter().collect();
        dirs.sort();
        for dir in dirs {
            let read = |name: &str| {
                let rel = Path::new(&dir).join(name);
                crate::fs::tree_file::read_optional(root, &rel, "its packaging metadata")
            };
            let (pyproject, setup_cfg, setup_py) =
                (read("pyproject.toml"), read("setup.cfg"), read("setup.py"));
            let mut installable = setup_py.is_some();
            let mut scripts = Vec::new();
            let table = pyproject
                .as_deref()
                .map(|text| toml::from_str::<toml::Table>(text).unwrap_or_default());
            if let Some(table) = &table {
                let project = table.get("project");
                let poetry = table.get("tool").and_then(|t| t.get("poetry"));
                installable |= project.is_some() || poetry.is_some();
                for t in [
                    project.and_then(|p| p.get("scripts")),
                    project.and_then(|p| p.get("gui-scripts")),
                    poetry.and_then(|p| p.get("scripts")),
                ]
                .into_iter()
                .flatten()
                {
                    for (name, target) in t.as_table().into_iter().flatten() {
                        if let Some(target) = target.as_str() {
                            scripts.push((name.clone(), target.to_string()));
                        }
                    }
                }
            }
            if let Some(text) = &setup_cfg {
                installable |= text.contains("[metadata]") || text.contains("[options]");
                scripts.extend(setup_cfg_scripts(text));
            }
            let parsed_setup = setup_py
                .as_deref()
                .and_then(|text| ruff_python_parser::parse_module(text).ok());
            if let Some(parsed) = &parsed_setup {
                scripts.extend(setup_py_scripts(&parsed.syntax().body));
            }
            if installable {
                // setuptools takes a `src/` folder as the layout whatever it holds: its
                // packages may be namespace ones, with no `__init__.py`.
                let has_src = files.iter().any(|f| under(&f.rel, &join(&dir, "src")));
                let shipping = parsed_setup
                    .as_ref()
                    .and_then(|p| {
                        setup_py_shipping(setup_py.as_deref().unwrap_or(""), &p.syntax().body)
                    })
                    .or_else(|| setup_cfg.as_deref().and_then(setup_cfg_shipping))
                    .or_else(|| table.as_ref().and_then(pyproject_shipping))
                    .unwrap_or_else(|| automatic(table.as_ref(), has_src));
                // Settings the tool cannot read (`setup(**config)`, another backend) over a
                // `src/` layout: its packages are imported from `src/`, never as `src.pkg`.
                let mut shipping = shipping;
                let src_is_package = files
                    .iter()
                    .any(|f| f.rel == join(&join(&dir, "src"), "__init__.py"));
                if has_src
                    && !src_is_package
                    && shipping.package_dir.is_empty()
                    && matches!(shipping.select, Select::All)
                {
                    shipping.package_dir = vec![(String::new(), "src".into())];
                }
                projects.dirs.push(dir.clone());
                projects.shipping.push(shipping);
            }
            projects.add_scripts(&dir, scripts);
        }
        projects.installed(root, installed);
        projects
    }

    /// The console scripts a project at `dir` declares (`name`, `module:function`), by the
    /// module each runs.
    fn add_scripts(&mut self, dir: &str, scripts: impl IntoIterator<Item = (String, String)>) {
        for (name, target) in scripts {
            // `module:object [extras]`.
            let target = target.split('[').next().unwrap_or("");
            let (module, object) = target.split_once(':').unwrap_or((target, ""));
            let (module, object) = (module.trim().to_string(), object.trim().to_string());
            if !module.is_empty() {
                self.scripts.push((dir.to_string(), name, module, object));
            }
        }
    }

    /// Packages installed in the tree (a vendored `site-packages`, an unpacked wheel): each
    /// `NAME.dist-info` ships the top-level packages and modules its `top_level.txt` names (else
    /// those its `RECORD` lists), from the folder it sits in, and declares the console scripts
    /// of its `entry_points.txt`. What an installer put there is a library, as the same package
    /// built from its sources is.
    fn installed(&mut self, root: &Path, metadata: &[&std::path::PathBuf]) {
        let mut by_dist: std::collections::BTreeMap<&Path, Vec<&std::path::PathBuf>> =
            Default::default();
        for path in metadata {
            if let Some(dist) = path.parent() {
                by_dist.entry(dist).or_default().push(path);
            }
        }
        for (dist, files) in by_dist {
            let dir = slash(dist.parent().unwrap_or(Path::new("")));
            let read = |name: &str| {
                files
                    .iter()
                    .find(|p| p.file_name().is_some_and(|n| n == name))
                    .and_then(|p| {
                        crate::fs::tree_file::read_optional(
                            root,
                            p,
                            "its installed-package metadata",
                        )
                    })
            };
            let mut tops: Vec<String> = match read("top_level.txt") {
                Some(text) => text.lines().map(|l| l.trim().to_string()).collect(),
                None => read("RECORD")
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|line| {
                        let path = line.split(',').next()?.trim();
                        let (top, rest) = path.split_once('/').unwrap_or(("", path));
                        if top.is_empty() {
                            // A top-level module (`six.py`).
                            return rest.strip_suffix(".py").map(str::to_string);
                        }
                        let skip = top.ends_with(".dist-info")
                            || top.ends_with(".data")
                            || top == ".."
                            || top == "__pycache__";
                        (!skip).then(|| top.to_string())
                    })
                    .collect(),
            };
            tops.retain(|t| !t.is_empty() && !t.contains(['/', '\\']));
            tops.sort();
            tops.dedup();
            if tops.is_empty() {
                continue;
            }
            let name = dist
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            self.dirs.push(dir.clone());
            self.shipping.push(Shipping {
                select: Select::Top {
                    base: String::new(),
                    include: tops.clone(),
                },
                package_dir: Vec::new(),
                modules: tops,
                file: name.into(),
                rule: "installed in the tree".into(),
            });
            if let Some(text) = read("entry_points.txt") {
                for section in ["console_scripts", "gui_scripts"] {
                    self.add_scripts(&dir, ini_section(&text, section));
                }
            }
        }
    }

    /// Why `f` is a module of an installable package (the project's file and the setting that
    /// ships its package), or `None` when it is not: no project above it ships a package
    /// holding it. The nearest project is asked first; a project vendored inside another's
    /// package (a copied repository with its own `setup.py`) is shipped by the outer one too.
    pub(super) fn installable(&self, f: &PyFile) -> Option<String> {
        let mut above: Vec<(usize, &String)> = self
            .dirs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.is_empty() || under(&f.rel, d))
            .collect();
        above.sort_by_key(|(_, d)| std::cmp::Reverse(d.len()));
        above.into_iter().find_map(|(k, dir)| self.ships(k, dir, f))
    }

    /// Why project `k` (at `dir`) ships `f`, if it does.
    fn ships(&self, k: usize, dir: &str, f: &PyFile) -> Option<String> {
        let shipping = &self.shipping[k];
        let inner = if dir.is_empty() {
            f.rel.as_str()
        } else {
            &f.rel[dir.len() + 1..]
        };
        let (package, stem) = shipping.package_of(inner)?;
        let project = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let shipped = match &shipping.select {
            _ if package.is_empty() => shipping.modules.contains(&stem),
            Select::All => f.in_package,
            Select::Named(names) => names.contains(&package),
            Select::Find {
                base,
                include,
                exclude,
                namespace,
            } => {
                // A package's `__init__.py` chain reaches up to `where`; a namespace find takes
                // any folder below it.
                let complete = f.in_package && f.source_root == join(dir, base);
                let below = base.is_empty() || under(inner, base);
                (complete || *namespace && below)
                    && fnmatch_any(include, &package)
                    && !fnmatch_any(exclude, &package)
            }
            Select::Top { base, include } => {
                let top = package.split('.').next().unwrap_or("");
                (base.is_empty() || under(inner, base)) && fnmatch_any(include, top)
            }
        };
        let what = if package.is_empty() {
            format!("its module `{stem}`")
        } else {
            format!("its package `{package}`")
        };
        shipped.then(|| {
            format!(
                "{what} is shipped by `{project}{}` ({})",
                shipping.file, shipping.rule
            )
        })
    }
}

impl Shipping {
    /// The dotted package a project-relative path sits in (`""` for a top-level module) and
    /// the file's stem; `None` when it lies outside the folders the project's packages live in.
    fn package_of(&self, inner: &str) -> Option<(String, String)> {
        let (dirs, file) = inner.rsplit_once('/').unwrap_or(("", inner));
        let stem = file.strip_suffix(".py").unwrap_or(file).to_string();
        for (name, folder) in &self.package_dir {
            if name.is_empty() {
                continue;
            }
            if dirs == folder {
                return Some((name.clone(), stem));
            }
            if let Some(rest) = dirs.strip_prefix(&format!("{folder}/")) {
                return Some((format!("{name}.{}", rest.replace('/', ".")), stem));
            }
        }
        let base = self
            .package_dir
            .iter()
            .find(|(n, _)| n.is_empty())
            .map_or("", |(_, d)| d.as_str());
        let rest = if base.is_empty() {
            dirs
        } else if dirs == base {
            ""
        } else {
            dirs.strip_prefix(&format!("{base}/"))?
        };
        Some((rest.replace('/', "."), stem))
    }
}

fn join(dir: &str, sub: &str) -> String {
    let sub = sub.trim_start_matches("./").trim_end_matches('/');
    match (dir.is_empty(), sub.is_empty() || sub == ".") {
        (_, true) => dir.to_string(),
        (true, false) => sub.to_string(),
        (false, false) => format!("{dir}/{sub}"),
    }
}

/// `name` matches one of `patterns` as `fnmatch.fnmatchcase` matches (`*` crosses dots).
fn fnmatch_any(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| {
        globset::GlobBuilder::new(p)
            .literal_separator(false)
            .build()
            .is_ok_and(|g| g.compile_matcher().is_match(name))
    })
}

/// Without a setting: setuptools' automatic discovery (a `src/` layout, else the flat layout
/// less its usual folders); poetry's package named after the project; any other backend ships
/// what it ships (every package counted).
fn automatic(table: Option<&toml::Table>, has_src: bool) -> Shipping {
    let backend = table
        .and_then(|t| t.get("build-system"))
        .and_then(|b| b.get("build-backend"))
        .and_then(|b| b.as_str())
        .unwrap_or("setuptools.build_meta");
    let poetry = table
        .and_then(|t| t.get("tool"))
        .and_then(|t| t.get("poetry"));
    let name = table
        .and_then(|t| t.get("project").or(poetry))
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str());
    if let (Some(_), Some(name)) = (poetry, name) {
        let package = name.replace(['-', '.'], "_").to_ascii_lowercase();
        return Shipping {
            select: Select::Top {
                base: if has_src { "src".into() } else { String::new() },
                include: vec![package],
            },
            package_dir: Vec::new(),
            modules: Vec::new(),
            file: "pyproject.toml".into(),
            rule: "poetry's default: the package named after the project".into(),
        };
    }
    if !backend.starts_with("setuptools") {
        // Their packages sit in `src/` when the project has one (pdm, hatch, flit, maturin).
        return Shipping {
            select: Select::All,
            package_dir: if has_src {
                vec![(String::new(), "src".into())]
            } else {
                Vec::new()
            },
            modules: Vec::new(),
            file: "pyproject.toml".into(),
            rule: format!("build backend `{backend}`: every package counted"),
        };
    }
    let (base, exclude) = if has_src {
        ("src".to_string(), Vec::new())
    } else {
        let exclude = FLAT_EXCLUDE
            .iter()
            .flat_map(|e| [e.to_string(), format!("{e}.*")])
            .collect();
        (String::new(), exclude)
    };
    Shipping {
        select: Select::Find {
            base: base.clone(),
            include: vec!["*".into()],
            exclude,
            // setuptools' src-layout discovery is PEP 420's: a folder under `src/` with no
            // `__init__.py` ships too. A flat layout with several top-level folders is refused
            // by setuptools; only the packages with an `__init__.py` are counted there.
            namespace: has_src,
        },
        package_dir: if base.is_empty() {
            Vec::new()
        } else {
            vec![(String::new(), base)]
        },
        modules: Vec::new(),
        file: if table.is_some() {
            "pyproject.toml"
        } else {
            "setup.py"
        }
        .into(),
        rule: "setuptools' automatic discovery: no package is named".into(),
    }
}

/// The string literals of a list, tuple or set; `None` when one is not a literal.
fn literal_strings(expr: &Expr) -> Option<Vec<String>> {
    let elts = match expr {
        Expr::List(l) => &l.elts,
        Expr::Tuple(t) => &t.elts,
        Expr::Set(s) => &s.elts,
        Expr::StringLiteral(s) => return Some(vec![s.value.to_str().to_string()]),
        _ => return None,
    };
    elts.iter()
        .map(|e| match e {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => None,
        })
        .collect()
}

/// What `setup(packages=…, package_dir=…, py_modules=…)` ships, from literals only; `None`
/// when the call names none of them (the next file decides), `Select::All` when one is not a
/// literal.
fn setup_py_shipping(text: &str, body: &[ruff_python_ast::Stmt]) -> Option<Shipping> {
    let call = crate::lang::python::style::setup_calls(body)
        .into_iter()
        .next()?;
    let keyword = |name: &str| {
        call.arguments
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
    };
    let packages = keyword("packages");
    let modules = keyword("py_modules");
    if packages.is_none() && modules.is_none() {
        // `setup(**config)`: what it ships is not written here.
        let splat = call.arguments.keywords.iter().any(|k| k.arg.is_none());
        return splat.then(|| Shipping {
            select: Select::All,
            package_dir: Vec::new(),
            modules: Vec::new(),
            file: "setup.py".into(),
            rule: "its `setup()` takes its settings from a dict: every package counted".into(),
        });
    }
    let shown = |k: &ruff_python_ast::Keyword| {
        let r = k.range();
        let src = &text[r.start().to_usize()..r.end().to_usize()];
        let one_line = src.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.chars().count() > 90 {
            format!("{}…", one_line.chars().take(89).collect::<String>())
        } else {
            one_line
        }
    };
    let mut rule = format!("`{}`", packages.or(modules).map(shown).unwrap_or_default());
    let package_dir = match keyword("package_dir").map(|k| &k.value) {
        None => Some(Vec::new()),
        Some(Expr::Dict(d)) => d
            .items
            .iter()
            .map(|item| match (&item.key, &item.value) {
                (Some(Expr::StringLiteral(k)), Expr::StringLiteral(v)) => Some((
                    k.value.to_str().to_string(),
                    v.value.to_str().trim_end_matches('/').to_string(),
                )),
                _ => None,
            })
            .collect(),
        Some(_) => None,
    };
    let modules = match modules.map(|k| literal_strings(&k.value)) {
        None => Some(Vec::new()),
        Some(found) => found,
    };
    let select = match packages.map(|k| &k.value) {
        None => Some(Select::Named(Vec::new())),
        Some(Expr::Call(c)) => find_call(c),
        Some(other) => literal_strings(other).map(Select::Named),
    };
    let (select, package_dir, modules) = match (select, package_dir, modules) {
        (Some(s), Some(d), Some(m)) => (s, d, m),
        _ => {
            rule.push_str(" is not a literal: every package counted");
            (Select::All, Vec::new(), Vec::new())
        }
    };
    Some(Shipping {
        select,
        package_dir,
        modules,
        file: "setup.py".into(),
        rule,
    })
}

/// `find_packages(where, include=…, exclude=…)` and `find_namespace_packages(…)` with literal
/// arguments (`setuptools.find_packages` too).
fn find_call(call: &ruff_python_ast::ExprCall) -> Option<Select> {
    let name = match call.func.as_ref() {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return None,
    };
    let namespace = match name {
        "find_packages" => false,
        "find_namespace_packages" => true,
        _ => return None,
    };
    let args = &call.arguments;
    let arg = |position: usize, keyword: &str| {
        args.keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == keyword))
            .map(|k| &k.value)
            .or_else(|| args.args.get(position))
    };
    let base = match arg(0, "where") {
        None => String::new(),
        Some(Expr::StringLiteral(s)) => s.value.to_str().trim_matches('/').to_string(),
        Some(_) => return None,
    };
    let include = match arg(2, "include") {
        None => vec!["*".to_string()],
        Some(e) => literal_strings(e)?,
    };
    let exclude = match arg(1, "exclude") {
        None => Vec::new(),
        Some(e) => literal_strings(e)?,
    };
    Some(Select::Find {
        base: if base == "." { String::new() } else { base },
        include,
        exclude,
        namespace,
    })
}

/// The `[options]` of a setup.cfg: `packages = find:` (with `[options.packages.find]`) or a
/// list, `package_dir`, `py_modules`.
fn setup_cfg_shipping(text: &str) -> Option<Shipping> {
    let options = ini_section(text, "options");
    let get = |key: &str| {
        options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let (packages, modules) = (get("packages"), get("py_modules"));
    if packages.is_none() && modules.is_none() {
        return None;
    }
    let list = |v: &str| -> Vec<String> {
        v.split([',', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let package_dir: Vec<(String, String)> = get("package_dir")
        .map(|v| {
            v.split([',', '\n'])
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((
                        k.trim().to_string(),
                        v.trim().trim_end_matches('/').to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let select = match packages.as_deref().map(str::trim) {
        Some(find @ ("find:" | "find_namespace:")) => {
            let section = ini_section(text, "options.packages.find");
            let get = |key: &str| section.iter().find(|(k, _)| k == key).map(|(_, v)| list(v));
            Select::Find {
                base: get("where")
                    .and_then(|w| w.first().cloned())
                    .unwrap_or_default()
                    .trim_matches('/')
                    .trim_start_matches('.')
                    .to_string(),
                include: get("include").unwrap_or_else(|| vec!["*".into()]),
                exclude: get("exclude").unwrap_or_default(),
                namespace: find == "find_namespace:",
            }
        }
        Some(v) => Select::Named(list(v)),
        None => Select::Named(Vec::new()),
    };
    Some(Shipping {
        select,
        package_dir,
        modules: modules.as_deref().map(list).unwrap_or_default(),
        file: "setup.cfg".into(),
        rule: format!(
            "`packages = {}`",
            packages
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ),
    })
}

/// The keys of one `[section]` of an INI file, values joined over their continuation lines.
fn ini_section(text: &str, name: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            inside = trimmed.trim_start_matches('[').trim_end_matches(']').trim() == name;
            continue;
        }
        if !inside || trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = out.last_mut() {
                v.push('\n');
                v.push_str(trimmed);
            }
        } else if let Some((k, v)) = trimmed.split_once(['=', ':']) {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

/// `[tool.setuptools]` `packages` (a list, or `{find = {…}}`), `[tool.setuptools.packages.find]`,
/// `package-dir`, `py-modules`; poetry's `packages`; hatch's wheel `packages`.
fn pyproject_shipping(table: &toml::Table) -> Option<Shipping> {
    let tool = table.get("tool")?;
    let strings = |v: Option<&toml::Value>| -> Option<Vec<String>> {
        v?.as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    if let Some(st) = tool.get("setuptools") {
        let package_dir: Vec<(String, String)> = st
            .get("package-dir")
            .and_then(|d| d.as_table())
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.trim_end_matches('/').to_string())))
            .collect();
        let modules = strings(st.get("py-modules")).unwrap_or_default();
        let packages = st.get("packages");
        let select = match packages {
            Some(toml::Value::Array(_)) => Some((
                Select::Named(strings(packages)?),
                "`[tool.setuptools] packages`".to_string(),
            )),
            Some(toml::Value::Table(t)) => t.get("find").map(|find| {
                let base = strings(find.get("where"))
                    .and_then(|w| w.first().cloned())
                    .unwrap_or_default();
                (
                    Select::Find {
                        base: base.trim_matches('/').trim_start_matches('.').to_string(),
                        include: strings(find.get("include")).unwrap_or_else(|| vec!["*".into()]),
                        exclude: strings(find.get("exclude")).unwrap_or_default(),
                        namespace: find
                            .get("namespaces")
                            .and_then(|n| n.as_bool())
                            .unwrap_or(true),
                    },
                    "`[tool.setuptools.packages.find]`".to_string(),
                )
            }),
            _ => None,
        };
        let select = select.or_else(|| {
            (!modules.is_empty()).then(|| {
                (
                    Select::Named(Vec::new()),
                    "`[tool.setuptools] py-modules`".into(),
                )
            })
        });
        if let Some((select, rule)) = select {
            return Some(Shipping {
                select,
                package_dir,
                modules,
                file: "pyproject.toml".into(),
                rule,
            });
        }
    }
    if let Some(list) = tool
        .get("poetry")
        .and_then(|p| p.get("packages"))
        .and_then(|p| p.as_array())
    {
        // One entry per folder; the first `from` decides where the packages sit.
        let base = list
            .iter()
            .find_map(|p| p.get("from")?.as_str())
            .unwrap_or("")
            .trim_matches('/')
            .to_string();
        let include = list
            .iter()
            .filter_map(|p| p.get("include")?.as_str())
            .map(|s| s.trim_end_matches(".py").replace('/', "."))
            .collect();
        return Some(Shipping {
            select: Select::Top { base, include },
            package_dir: Vec::new(),
            modules: Vec::new(),
            file: "pyproject.toml".into(),
            rule: "`[tool.poetry] packages`".into(),
        });
    }
    let hatch = tool
        .get("hatch")
        .and_then(|h| h.get("build"))
        .and_then(|b| b.get("targets"))
        .and_then(|t| t.get("wheel"))
        .and_then(|w| w.get("packages"));
    if let Some(paths) = strings(hatch) {
        let (base, include): (Vec<String>, Vec<String>) = paths
            .iter()
            .map(|p| {
                let p = p.trim_matches('/');
                let (b, n) = p.rsplit_once('/').unwrap_or(("", p));
                (b.to_string(), n.to_string())
            })
            .unzip();
        return Some(Shipping {
            select: Select::Top {
                base: base.first().cloned().unwrap_or_default(),
                include,
            },
            package_dir: Vec::new(),
            modules: Vec::new(),
            file: "pyproject.toml".into(),
            rule: "`[tool.hatch.build.targets.wheel] packages`".into(),
        });
    }
    None
}

/// `name = module:function` lines of `[options.entry_points]` `console_scripts`/`gui_scripts`.
fn setup_cfg_scripts(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_section = false;
    let mut in_scripts = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            in_section = trimmed == "[options.entry_points]";
            in_scripts = false;
            continue;
        }
        if !in_section || trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        if !indented {
            let key = trimmed.split('=').next().unwrap_or("").trim();
            in_scripts = matches!(key, "console_scripts" | "gui_scripts");
            let rest = trimmed.split_once('=').map_or("", |(_, r)| r.trim());
            if in_scripts && !rest.is_empty() {
                out.extend(script_spec(rest));
            }
        } else if in_scripts {
            out.extend(script_spec(trimmed));
        }
    }
    out
}

/// `name = module:function` (the form both setup.cfg and setup.py use).
fn script_spec(spec: &str) -> Option<(String, String)> {
    let (name, target) = spec.split_once('=')?;
    let target = target.split('[').next().unwrap_or(target).trim();
    target
        .contains(':')
        .then(|| (name.trim().to_string(), target.to_string()))
}

/// The string literals of `setup(entry_points={"console_scripts": [...]})` in a setup.py.
fn setup_py_scripts(body: &[ruff_python_ast::Stmt]) -> Vec<(String, String)> {
    #[derive(Default)]
    struct Specs(Vec<(String, String)>);
    impl<'a> ruff_python_ast::visitor::Visitor<'a> for Specs {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Dict(d) = expr {
                for item in &d.items {
                    let key = match &item.key {
                        Some(Expr::StringLiteral(k)) => k.value.to_str(),
                        _ => continue,
                    };
                    if !matches!(key, "console_scripts" | "gui_scripts") {
                        continue;
                    }
                    let values: Vec<&Expr> = match &item.value {
                        Expr::List(l) => l.elts.iter().collect(),
                        Expr::Tuple(t) => t.elts.iter().collect(),
                        other => vec![other],
                    };
                    for v in values {
                        if let Expr::StringLiteral(s) = v {
                            self.0.extend(script_spec(s.value.to_str()));
                        }
                    }
                }
            }
            ruff_python_ast::visitor::walk_expr(self, expr);
        }
    }
    let mut specs = Specs::default();
    ruff_python_ast::visitor::Visitor::visit_body(&mut specs, body);
    specs.0
}
