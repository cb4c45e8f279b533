//! The project's formatting and lint settings that decide how the inserted header is written:
//! read the way the tools read them (ruff's nearest config and its `extend` chain; isort,
//! black and flake8 from the root they run in; `.editorconfig`), reduced to what the header
//! needs: quotes, import order, blank lines, indentation, line length, `noqa: E402`.

mod black;
mod requirements;
pub(crate) use requirements::setup_calls;
mod ruff;
mod tools;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tools::{truthy, RootTools};

/// How the header's string literals are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Quotes {
    /// As the template writes them (no formatter normalises them).
    #[default]
    Keep,
    Single,
    Double,
}

/// The isort / ruff `I` options that move `import os` or the blank lines around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportOrder {
    /// `import x` and `from x import y` sorted together by module.
    pub force_sort_within_sections: bool,
    /// `from` imports before plain ones within a section.
    pub from_first: bool,
    /// Blank lines after an import block that code follows (`None`: the tools' automatic one).
    pub lines_after_imports: Option<usize>,
    /// Whose setting that is (`isort`, `ruff`), for a message.
    pub lines_after_imports_from: Option<&'static str>,
    /// Blank lines between the plain and the `from` imports of a section.
    pub lines_between_types: usize,
}

/// How the project's isort writes a `from` import longer than its line length, for the
/// settings this knows (no profile or `black`; `multi_line_output` 0 or 3; no `wrap_length`,
/// `force_grid_wrap`, `balanced_wrapping`, `force_single_line`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsortWrap {
    /// isort's `line_length` (79 unless set, 88 under the `black` profile); the comments on a
    /// line count.
    pub line_length: usize,
    /// `multi_line_output = 3` (VERTICAL_HANGING_INDENT), else 0 (GRID).
    pub vertical_hanging_indent: bool,
    pub include_trailing_comma: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indent {
    Tab,
    Spaces(usize),
}

impl Indent {
    pub fn unit(self) -> String {
        match self {
            Indent::Tab => "\t".into(),
            Indent::Spaces(n) => " ".repeat(n),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProjectStyle {
    pub quotes: Quotes,
    pub imports: ImportOrder,
    /// The configured indentation (ruff format, `.editorconfig`); a file's own wins over it.
    pub indent: Option<Indent>,
    /// The longest line the project's linters accept (E501), when one checks it.
    pub max_line: Option<usize>,
    /// The project is gated by flake8/pycodestyle, whose E402 flags the imports after the
    /// header's writes (ruff exempts `os.environ[...] = …`): they get `# noqa: E402`.
    pub noqa_e402: bool,
    /// The black the project runs, when it runs one.
    pub black: Option<black::BlackRelease>,
    /// The line length of the formatter the project runs (black, ruff format), when it runs
    /// one: a longer line that can be split is split there.
    pub format_width: Option<usize>,
    /// How the project's isort wraps a long `from` import, when it runs isort with settings
    /// this knows.
    pub isort_wrap: Option<IsortWrap>,
}

impl ProjectStyle {
    /// Why no header can be written that both the project's formatter and its import sorter
    /// accept: the header is code right after an import block (`import os` at least), where
    /// black 26 puts one blank line and an import sorter set to two puts two. `None` when
    /// they agree.
    pub fn header_conflict(&self) -> Option<String> {
        let black = self.black.filter(|b| b.one_line_after_imports())?;
        let lines = self.imports.lines_after_imports.filter(|&n| n >= 2)?;
        let sorter = self.imports.lines_after_imports_from.unwrap_or("isort");
        Some(format!(
            "the header is code right after `import os`, where {} puts one blank line and {sorter}'s `lines_after_imports = {lines}` puts {lines}: no header passes both; set `lines_after_imports` to 1 (or drop it: one blank line before code, two before a def or class), or pin black below 26, then run fix again",
            black.shown()
        ))
    }
}

/// Settings by directory: the root-level tools read once, ruff's and `.editorconfig` per
/// directory (the nearest config wins).
pub struct StyleResolver {
    root: PathBuf,
    tools: RootTools,
    /// Each directory's own ruff config, and each `.editorconfig` read (by path relative to
    /// the root), once: the directories of a tree share their ancestors' files.
    ruff_configs: RefCell<HashMap<PathBuf, Option<toml::Table>>>,
    editorconfigs: RefCell<HashMap<PathBuf, Option<String>>>,
}

impl StyleResolver {
    pub fn new(root: &Path) -> StyleResolver {
        StyleResolver {
            root: root.to_path_buf(),
            tools: RootTools::read(root),
            ruff_configs: RefCell::default(),
            editorconfigs: RefCell::default(),
        }
    }

    /// The style of the files of `dir` (relative to the root, or absolute under it).
    pub fn at(&self, dir: &Path) -> ProjectStyle {
        let dir = self.root.join(dir);
        let ruff = ruff::settings_with(&self.root, &dir, &mut |d| {
            let mut configs = self.ruff_configs.borrow_mut();
            configs
                .entry(d.to_path_buf())
                .or_insert_with(|| ruff::own_config(&self.root, d))
                .clone()
        });
        let tools = &self.tools;
        ProjectStyle {
            quotes: quotes(ruff.as_ref(), tools),
            imports: import_order(ruff.as_ref(), tools),
            indent: indent(ruff.as_ref(), &self.root, &dir, &mut |rel| {
                let mut texts = self.editorconfigs.borrow_mut();
                texts
                    .entry(rel.to_path_buf())
                    .or_insert_with(|| {
                        crate::fs::tree_file::read_optional(&self.root, rel, "its settings")
                    })
                    .clone()
            }),
            max_line: max_line(ruff.as_ref(), tools),
            noqa_e402: tools.flake8_gated(),
            black: tools.black_release,
            format_width: format_width(ruff.as_ref(), tools),
            isort_wrap: isort_wrap(tools),
        }
    }
}

fn quotes(ruff: Option<&toml::Table>, tools: &RootTools) -> Quotes {
    let from_name = |name: &str| match name.trim() {
        "single" | "'" => Quotes::Single,
        "double" | "\"" => Quotes::Double,
        _ => Quotes::Keep,
    };
    if let Some(ruff) = ruff {
        if let Some(style) = ruff::get(ruff, &["format", "quote-style"]).and_then(|v| v.as_str()) {
            return from_name(style);
        }
        let inline = ruff::lint(ruff, &["flake8-quotes", "inline-quotes"]);
        if let Some(style) = inline.and_then(|v| v.as_str()) {
            return from_name(style);
        }
    }
    if let Some(style) = tools.flake8.as_ref().and_then(|o| o.get("inline_quotes")) {
        return from_name(style);
    }
    if let Some(black) = &tools.black {
        if truthy(black.get("skip_string_normalization")) {
            return Quotes::Keep;
        }
        return Quotes::Double;
    }
    let ruff_formats = ruff.is_some_and(|r| r.contains_key("format")) || tools.hook("ruff-format");
    if tools.hook("black") || ruff_formats {
        return Quotes::Double;
    }
    Quotes::Keep
}

fn import_order(ruff: Option<&toml::Table>, tools: &RootTools) -> ImportOrder {
    let mut order = ImportOrder::default();
    if let Some(isort) = &tools.isort {
        let profile = isort.get("profile").map(|p| p.trim_matches(['"', '\'']));
        let flag = |key: &str| truthy(isort.get(key));
        order.force_sort_within_sections = flag("force_sort_within_sections")
            || flag("force_alphabetical_sort")
            || matches!(profile, Some("google" | "plone"));
        order.from_first = flag("from_first");
        let number = |key: &str| isort.get(key).and_then(|v| v.parse::<i64>().ok());
        order.lines_after_imports = number("lines_after_imports")
            .or(matches!(profile, Some("plone" | "wemake")).then_some(2))
            .and_then(|n| usize::try_from(n).ok());
        order.lines_after_imports_from = order.lines_after_imports.map(|_| "isort");
        order.lines_between_types = number("lines_between_types")
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
    }
    if let Some(ruff) = ruff {
        let option = |key: &str| ruff::lint(ruff, &["isort", key]);
        if let Some(v) = option("force-sort-within-sections").and_then(|v| v.as_bool()) {
            order.force_sort_within_sections |= v;
        }
        if let Some(v) = option("from-first").and_then(|v| v.as_bool()) {
            order.from_first |= v;
        }
        if let Some(n) = option("lines-after-imports").and_then(|v| v.as_integer()) {
            order.lines_after_imports = usize::try_from(n).ok();
            order.lines_after_imports_from = order.lines_after_imports.map(|_| "ruff");
        }
        if let Some(n) = option("lines-between-types").and_then(|v| v.as_integer()) {
            order.lines_between_types = usize::try_from(n).unwrap_or(0);
        }
    }
    order
}

/// ruff format's `indent-style` / `indent-width` when set, else `.editorconfig`'s for a Python
/// file of `dir`.
/// `read`: a `.editorconfig` by its path relative to `root`, through the confined reader.
fn indent(
    ruff: Option<&toml::Table>,
    root: &Path,
    dir: &Path,
    read: &mut dyn FnMut(&Path) -> Option<String>,
) -> Option<Indent> {
    if let Some(ruff) = ruff {
        let style = ruff::get(ruff, &["format", "indent-style"]).and_then(|v| v.as_str());
        if style == Some("tab") {
            return Some(Indent::Tab);
        }
        let width = ruff::get(ruff, &["indent-width"]).and_then(|v| v.as_integer());
        if let Some(n) = width.and_then(|n| usize::try_from(n).ok()) {
            return Some(Indent::Spaces(n));
        }
    }
    use ec4rs::property::{IndentSize, IndentStyle};
    let props = editorconfig(root, &dir.join("__gpu_homogenize__.py"), read)?;
    match props.get::<IndentStyle>() {
        Ok(IndentStyle::Tabs) => Some(Indent::Tab),
        Ok(IndentStyle::Spaces) => match props.get::<IndentSize>() {
            Ok(IndentSize::Value(n)) if n > 0 => Some(Indent::Spaces(n)),
            _ => Some(Indent::Spaces(4)),
        },
        Err(_) => match props.get::<IndentSize>() {
            Ok(IndentSize::Value(n)) if n > 0 => Some(Indent::Spaces(n)),
            _ => None,
        },
    }
}

/// The `.editorconfig` properties of `file`, as `ec4rs::properties_of` finds them (the
/// nearest files last, up to one marked `root = true`), but only from the tree: each file
/// through the confined reader, none above the tree root.
fn editorconfig(
    root: &Path,
    file: &Path,
    read: &mut dyn FnMut(&Path) -> Option<String>,
) -> Option<ec4rs::Properties> {
    use ec4rs::PropertiesSource;
    let root = crate::base::paths::absolute(root);
    let file = crate::base::paths::absolute(file);
    let mut found = Vec::new();
    let mut at = file.parent();
    while let Some(dir) = at.filter(|d| d.starts_with(&root)) {
        let rel = dir.strip_prefix(&root).ok()?.join(".editorconfig");
        if let Some(text) = read(&rel) {
            let parser = ec4rs::ConfigParser::new_with_path(
                std::io::Cursor::new(text.into_bytes()),
                Some(root.join(&rel)),
            )
            .ok()?;
            let is_root = parser.is_root;
            found.push((dir.to_path_buf(), parser));
            if is_root {
                break;
            }
        }
        at = dir.parent();
    }
    let mut props = ec4rs::Properties::new();
    for (dir, mut parser) in found.into_iter().rev() {
        let target = file.strip_prefix(&dir).unwrap_or(&file);
        (&mut parser).apply_to(&mut props, target).ok()?;
    }
    Some(props)
}

/// isort's wrapping of a long `from` import, when the project runs isort (a config section or
/// a pre-commit hook) and every setting that changes it is one this knows.
fn isort_wrap(tools: &RootTools) -> Option<IsortWrap> {
    let empty = tools::Options::default();
    let isort = match &tools.isort {
        Some(options) => options,
        None if tools.hook("isort") => &empty,
        None => return None,
    };
    let value = |key: &str| isort.get(key).map(|v| v.trim().trim_matches(['"', '\'']));
    let black = match value("profile") {
        None | Some("") => false,
        Some("black") => true,
        Some(_) => return None,
    };
    let unknown = ["wrap_length", "force_grid_wrap"]
        .iter()
        .any(|k| value(k).is_some_and(|v| v != "0"))
        || ["balanced_wrapping", "force_single_line"]
            .iter()
            .any(|k| truthy(isort.get(*k)))
        || value("indent").is_some();
    if unknown {
        return None;
    }
    let line_length = match value("line_length") {
        Some(v) => v.parse().ok()?,
        None if black => 88,
        None => 79,
    };
    let vertical_hanging_indent = match value("multi_line_output") {
        None => black,
        Some("0" | "GRID") => false,
        Some("3" | "VERTICAL_HANGING_INDENT") => true,
        Some(_) => return None,
    };
    let include_trailing_comma = match isort.get("include_trailing_comma") {
        Some(_) => truthy(isort.get("include_trailing_comma")),
        None => black,
    };
    Some(IsortWrap {
        line_length,
        vertical_hanging_indent,
        include_trailing_comma,
    })
}

/// The line length of the project's formatter: black's `line-length` (88 unless set), or ruff
/// format's `line-length`.
fn format_width(ruff: Option<&toml::Table>, tools: &RootTools) -> Option<usize> {
    if tools.black.is_some() || tools.hook("black") {
        let set = tools
            .black
            .as_ref()
            .and_then(|b| b.get("line_length"))
            .and_then(|v| v.trim().parse().ok());
        return Some(set.unwrap_or(88));
    }
    let ruff_formats = ruff.is_some_and(|r| r.contains_key("format")) || tools.hook("ruff-format");
    ruff_formats.then(|| {
        ruff.and_then(|r| ruff::get(r, &["line-length"]))
            .and_then(|v| v.as_integer())
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(88)
    })
}

/// The tightest E501 limit among the linters that check it: flake8 (79 unless configured),
/// ruff when its selection holds E501 (`line-length`, or `lint.pycodestyle.max-line-length`).
fn max_line(ruff: Option<&toml::Table>, tools: &RootTools) -> Option<usize> {
    let mut limits = Vec::new();
    if tools.flake8_gated() {
        let configured = tools.flake8.as_ref().and_then(|o| {
            o.get("max_line_length")
                .and_then(|v| v.parse::<usize>().ok())
        });
        limits.push(configured.unwrap_or(79));
    }
    if let Some(ruff) = ruff {
        let selects_e501 = ["select", "extend-select"].iter().any(|key| {
            ruff::lint(ruff, &[key])
                .and_then(|v| v.as_array())
                .is_some_and(|codes| {
                    codes
                        .iter()
                        .filter_map(|c| c.as_str())
                        .any(|c| matches!(c, "E" | "E5" | "E50" | "E501" | "ALL"))
                })
        });
        let ignores_e501 = ruff::lint(ruff, &["ignore"])
            .and_then(|v| v.as_array())
            .is_some_and(|codes| {
                codes
                    .iter()
                    .any(|c| matches!(c.as_str(), Some("E501" | "E50" | "E5" | "E")))
            });
        if selects_e501 && !ignores_e501 {
            let length = ruff::lint(ruff, &["pycodestyle", "max-line-length"])
                .or_else(|| ruff::get(ruff, &["line-length"]))
                .and_then(|v| v.as_integer())
                .and_then(|n| usize::try_from(n).ok());
            limits.push(length.unwrap_or(88));
        }
    }
    limits.into_iter().min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style(files: &[(&str, &str)], dir: &str) -> ProjectStyle {
        let tmp = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = tmp.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        StyleResolver::new(tmp.path()).at(Path::new(dir))
    }

    #[test]
    fn no_config_keeps_the_template_as_it_is() {
        assert_eq!(style(&[], ""), ProjectStyle::default());
    }

    #[test]
    fn quotes_follow_ruff_then_flake8_quotes_then_black() {
        let ruff = ("ruff.toml", "[format]\nquote-style = \"single\"\n");
        assert_eq!(style(&[ruff], "").quotes, Quotes::Single);
        let q = (
            "ruff.toml",
            "[lint.flake8-quotes]\ninline-quotes = \"single\"\n",
        );
        assert_eq!(style(&[q], "").quotes, Quotes::Single);
        let flake8 = (".flake8", "[flake8]\ninline-quotes = '\n");
        assert_eq!(style(&[flake8], "").quotes, Quotes::Single);
        let black = ("pyproject.toml", "[tool.black]\nline-length = 100\n");
        assert_eq!(style(&[black], "").quotes, Quotes::Double);
        let skip = (
            "pyproject.toml",
            "[tool.black]\nskip-string-normalization = true\n",
        );
        assert_eq!(style(&[skip], "").quotes, Quotes::Keep);
    }

    #[test]
    fn a_subdirectory_with_its_own_ruff_config_gets_its_own_style() {
        let files = [
            ("ruff.toml", "[format]\nquote-style = \"double\"\n"),
            (
                "legacy/.ruff.toml",
                "extend = \"../ruff.toml\"\n[format]\nquote-style = \"single\"\n",
            ),
        ];
        assert_eq!(style(&files, "").quotes, Quotes::Double);
        assert_eq!(style(&files, "legacy/deep").quotes, Quotes::Single);
    }

    #[test]
    fn isort_wrapping_is_read_for_the_settings_it_knows() {
        let grid = (
            "setup.cfg",
            "[isort]\nline_length = 79\nmulti_line_output = 0\n",
        );
        assert_eq!(
            style(&[grid], "").isort_wrap,
            Some(IsortWrap {
                line_length: 79,
                vertical_hanging_indent: false,
                include_trailing_comma: false,
            })
        );
        let black = ("pyproject.toml", "[tool.isort]\nprofile = \"black\"\n");
        assert_eq!(
            style(&[black], "").isort_wrap,
            Some(IsortWrap {
                line_length: 88,
                vertical_hanging_indent: true,
                include_trailing_comma: true,
            })
        );
        // Another profile, or a setting that changes the wrapping: not written isort's way.
        let google = (".isort.cfg", "[settings]\nprofile = google\n");
        assert_eq!(style(&[google], "").isort_wrap, None);
        let balanced = (".isort.cfg", "[settings]\nbalanced_wrapping = true\n");
        assert_eq!(style(&[balanced], "").isort_wrap, None);
        // No isort: nothing to follow.
        assert_eq!(style(&[("setup.cfg", "[flake8]\n")], "").isort_wrap, None);
    }

    #[test]
    fn isort_profiles_and_options_set_the_import_order() {
        let google = (".isort.cfg", "[settings]\nprofile = google\n");
        assert!(style(&[google], "").imports.force_sort_within_sections);
        let lines = (
            "pyproject.toml",
            "[tool.isort]\nlines_after_imports = 2\nfrom_first = true\n",
        );
        let order = style(&[lines], "").imports;
        assert_eq!(order.lines_after_imports, Some(2));
        assert!(order.from_first);
        let ruff = (
            "pyproject.toml",
            "[tool.ruff.lint.isort]\nforce-sort-within-sections = true\nlines-between-types = 1\n",
        );
        let order = style(&[ruff], "").imports;
        assert!(order.force_sort_within_sections);
        assert_eq!(order.lines_between_types, 1);
    }

    #[test]
    fn editorconfig_tabs_and_line_limits() {
        let ec = (".editorconfig", "root = true\n[*.py]\nindent_style = tab\n");
        assert_eq!(style(&[ec], "pkg").indent, Some(Indent::Tab));
        let flake8 = ("setup.cfg", "[flake8]\nmax-line-length = 100\n");
        let ruff = (
            "ruff.toml",
            "line-length = 120\n[lint]\nselect = [\"E\", \"F\"]\n",
        );
        assert_eq!(style(&[flake8], "").max_line, Some(100));
        assert_eq!(style(&[ruff], "").max_line, Some(120));
        assert_eq!(style(&[flake8, ruff], "").max_line, Some(100));
        assert!(style(&[flake8], "").noqa_e402);
    }
}
