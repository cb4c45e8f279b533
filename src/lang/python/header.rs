//! The standard Python header: the template (embedded, or the policy's override) rendered
//! with the policy's values.

use std::path::Path;

use ruff_python_ast::Stmt;

use super::style::{ProjectStyle, Quotes};
use crate::lang::template::{join_lines, render_sections, TemplateError};
use crate::model::policy::Policy;

/// The shipped template, neutral; `policy.python_template` replaces it.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../../templates/python_header.py.tmpl");

/// The seed's template (French, with the docstring marker), the mission's:
/// `python_template = "builtin:seed"`.
pub const SEED_TEMPLATE: &str = include_str!("../../../templates/seed/python_header.py.tmpl");

/// The rendered header, line by line (no line endings: the file's own are used).
#[derive(Debug, Clone)]
pub struct PythonHeader {
    /// The line the module docstring must contain.
    pub docstring_marker: String,
    /// The marker's template line cut at its placeholders: the fixed text a marker written
    /// under another policy (another card, another mask) still has, in order. Empty when the
    /// fixed text is too short to tell a marker from a line of the project's own.
    pub marker_shape: Vec<String>,
    /// The block that sets the environment (comments, env writes, prints).
    pub block: Vec<String>,
    /// The validation function added to files that use torch.
    pub validate_fn: Vec<String>,
    pub validate_fn_name: String,
    /// Modules the header block uses (`os`), imported with it when the file does not already.
    pub block_imports: Vec<String>,
    /// How the project's tools want the inserted lines (the default: as the template has them).
    pub style: ProjectStyle,
}

impl PythonHeader {
    /// Load the policy's template (relative paths are relative to `root`) or the default one.
    pub fn load(policy: &Policy, root: &Path) -> Result<PythonHeader, TemplateError> {
        match &policy.python_template {
            None => PythonHeader::render(DEFAULT_TEMPLATE, policy),
            Some(path) if path.as_os_str() == crate::lang::template::BUILTIN_SEED => {
                PythonHeader::render(SEED_TEMPLATE, policy)
            }
            Some(path) => {
                let text = crate::lang::template::read_template(root, path, "Python")?;
                PythonHeader::render(&text, policy)
            }
        }
    }

    pub fn render(template: &str, policy: &Policy) -> Result<PythonHeader, TemplateError> {
        let sections = render_sections(template, policy)?;
        let take = |name: &str| -> Result<Vec<String>, TemplateError> {
            let mut lines = sections
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, l)| l.clone())
                .ok_or_else(|| TemplateError::Invalid(format!("missing section `@@ {name}`")))?;
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
            Ok(lines)
        };
        let marker = take("docstring_marker")?;
        let mut block = take("header")?;
        if policy.respect_scheduler {
            block = block.iter().map(|l| setdefault_form(l)).collect();
        }
        let validate_fn = take("validate_function")?;
        let docstring_marker =
            match marker.as_slice() {
                // No marker: module docstrings are left as they are.
                [] => String::new(),
                [line] if !line.contains('"') && !line.contains('\'') && !line.contains('\\') => {
                    line.clone()
                }
                _ => return Err(TemplateError::Invalid(
                    "`@@ docstring_marker` must be empty or one line without quotes or backslashes"
                        .into(),
                )),
            };
        let marker_shape = if docstring_marker.is_empty() {
            Vec::new()
        } else {
            shape(&raw_section(template, "docstring_marker"))
        };
        let validate_fn_name = function_name(&validate_fn.join("\n"))?;
        check_block_parses(&block)?;
        let block_imports = ["os", "sys"]
            .iter()
            .filter(|m| block.iter().any(|l| uses_module(l, m)))
            .map(|m| m.to_string())
            .collect();
        Ok(PythonHeader {
            docstring_marker,
            marker_shape,
            block,
            validate_fn,
            validate_fn_name,
            block_imports,
            style: ProjectStyle::default(),
        })
    }

    /// The header as the project's tools want it (`style`, read from its config): quotes as
    /// its formatter writes them, comments within its linters' line length; the import order,
    /// blank lines, indentation and `noqa: E402` are kept for the planner.
    pub fn styled(mut self, style: &ProjectStyle) -> PythonHeader {
        self.style = *style;
        let (from, to) = match style.quotes {
            Quotes::Keep => return self.wrapped(style.max_line),
            Quotes::Single => ('"', '\''),
            Quotes::Double => ('\'', '"'),
        };
        self.block = requoted(&self.block.join("\n"), from, to)
            .lines()
            .map(str::to_string)
            .collect();
        let joined = join_lines(&self.validate_fn, "\n");
        self.validate_fn = requoted(&joined, from, to)
            .lines()
            .map(str::to_string)
            .collect();
        self.wrapped(style.max_line)
    }

    /// Comment lines longer than `max` split at spaces (E501 counts comments; no formatter
    /// wraps them).
    fn wrapped(mut self, max: Option<usize>) -> PythonHeader {
        let Some(max) = max else { return self };
        self.block = self
            .block
            .iter()
            .flat_map(|line| wrap_comment(line, max))
            .collect();
        self
    }

    /// The header block with the given line ending after every line.
    pub fn block_text(&self, newline: &str) -> String {
        join_lines(&self.block, newline)
    }

    pub fn validate_fn_text(&self, newline: &str) -> String {
        join_lines(&self.validate_fn, newline)
    }
}

/// `os.environ['K'] = 'V'  # note` → `os.environ.setdefault('K', 'V')  # note`, from the
/// statement's AST ranges: under a scheduler the mask it assigned wins.
fn setdefault_form(line: &str) -> String {
    let Ok(parsed) = ruff_python_parser::parse_module(line) else {
        return line.to_string();
    };
    let [Stmt::Assign(assign)] = parsed.syntax().body.as_slice() else {
        return line.to_string();
    };
    let [ruff_python_ast::Expr::Subscript(sub)] = assign.targets.as_slice() else {
        return line.to_string();
    };
    use ruff_text_size::Ranged;
    let text = |r: ruff_text_size::TextRange| &line[r.start().to_usize()..r.end().to_usize()];
    let end = assign.range().end().to_usize();
    format!(
        "{}.setdefault({}, {}){}",
        text(sub.value.range()),
        text(sub.slice.range()),
        text(assign.value.range()),
        &line[end..]
    )
}

/// `# words…` over `max` characters as several comment lines within it; a line that is code,
/// or a word longer than the limit, stays as it is.
fn wrap_comment(line: &str, max: usize) -> Vec<String> {
    let Some(text) = line.strip_prefix("# ") else {
        return vec![line.to_string()];
    };
    if line.chars().count() <= max {
        return vec![line.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut current = String::from("#");
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if current.len() > 1 && current.chars().count() + 1 + word.chars().count() > max {
            out.push(std::mem::replace(&mut current, String::from("#")));
        }
        current.push(' ');
        current.push_str(word);
    }
    out.push(current);
    out
}

/// Every single-line string literal of `source` (plain or f-string) quoted with `from` turned
/// to `to` when its text has no quote or backslash, from the parser's ranges; the rest stays as
/// written.
fn requoted(source: &str, from: char, to: char) -> String {
    use ruff_python_ast::visitor::{walk_expr, Visitor};
    use ruff_text_size::Ranged;
    struct Literals(Vec<std::ops::Range<usize>>);
    impl<'a> Visitor<'a> for Literals {
        fn visit_expr(&mut self, expr: &'a ruff_python_ast::Expr) {
            match expr {
                ruff_python_ast::Expr::StringLiteral(s) => self.0.extend(s.value.iter().map(|p| {
                    let r = p.range();
                    r.start().to_usize()..r.end().to_usize()
                })),
                ruff_python_ast::Expr::FString(f) => self.0.extend(f.value.iter().map(|p| {
                    let r = p.range();
                    r.start().to_usize()..r.end().to_usize()
                })),
                _ => {}
            }
            walk_expr(self, expr);
        }
    }
    // The block's lines use `os` unbound: parse them as a module all the same.
    let Ok(parsed) = ruff_python_parser::parse_module(source) else {
        return source.to_string();
    };
    let mut literals = Literals(Vec::new());
    for stmt in &parsed.syntax().body {
        literals.visit_stmt(stmt);
    }
    let mut out = source.to_string();
    for r in literals.0.iter().rev() {
        let text = &source[r.clone()];
        let prefix = text.find(from).unwrap_or(text.len());
        let body = &text[prefix..];
        let simple = body.len() >= 2
            && !body.starts_with(&from.to_string().repeat(3))
            && body.ends_with(from)
            && !body[1..body.len() - 1].contains(['\'', '"', '\\']);
        if simple && text[..prefix].chars().all(|c| c.is_ascii_alphabetic()) {
            out.replace_range(r.start + prefix..r.start + prefix + 1, &to.to_string());
            out.replace_range(r.end - 1..r.end, &to.to_string());
        }
    }
    out
}

/// The line refers to `module.` outside a comment.
fn uses_module(line: &str, module: &str) -> bool {
    let code = line.split('#').next().unwrap_or("");
    code.contains(&format!("{module}."))
}

fn function_name(source: &str) -> Result<String, TemplateError> {
    let parsed = ruff_python_parser::parse_module(source).map_err(|e| {
        TemplateError::Invalid(format!("`@@ validate_function` does not parse: {e}"))
    })?;
    match parsed.syntax().body.as_slice() {
        [Stmt::FunctionDef(def)] => Ok(def.name.as_str().to_string()),
        _ => Err(TemplateError::Invalid(
            "`@@ validate_function` must hold exactly one function definition".into(),
        )),
    }
}

fn check_block_parses(block: &[String]) -> Result<(), TemplateError> {
    let source = format!("import os\n{}", join_lines(block, "\n"));
    ruff_python_parser::parse_module(&source)
        .map(|_| ())
        .map_err(|e| TemplateError::Invalid(format!("`@@ header` does not parse: {e}")))
}

/// The first non-blank line of a template's section, as written (placeholders unrendered).
fn raw_section(template: &str, name: &str) -> String {
    let mut lines = template.lines();
    lines
        .by_ref()
        .find(|l| l.strip_prefix("@@ ").is_some_and(|n| n.trim() == name));
    lines
        .take_while(|l| !l.starts_with("@@ "))
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string()
}

/// A template line's fixed text between its `{{placeholders}}`, trimmed; empty when that text
/// (at least 12 characters, one run of them 6) is too little to recognise the line by.
fn shape(line: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = line.trim();
    while let Some(open) = rest.find("{{") {
        pieces.push(rest[..open].to_string());
        rest = rest[open..]
            .find("}}")
            .map_or("", |close| &rest[open + close + 2..]);
    }
    pieces.push(rest.to_string());
    let fixed: usize = pieces.iter().map(|p| p.trim().chars().count()).sum();
    let longest = pieces.iter().map(|p| p.trim().chars().count()).max();
    if fixed < 12 || longest < Some(6) {
        return Vec::new();
    }
    pieces
}

/// Where in `line` the template's marker line stands under some policy: from an occurrence
/// of the first fixed piece to the end of the last, with the others in order between them
/// (a one-line docstring holds the marker after its own text). When the first piece is empty
/// (the line opens with a placeholder) the marker is the whole trimmed line.
pub fn find_shape(line: &str, shape: &[String]) -> Option<std::ops::Range<usize>> {
    let (first, last) = (shape.first()?, shape.last()?);
    let lead = line.len() - line.trim_start().len();
    let trimmed = line.trim();
    let starts: Vec<usize> = if first.is_empty() {
        vec![lead]
    } else {
        line.match_indices(first.as_str())
            .map(|(at, _)| at)
            .collect()
    };
    for start in starts {
        let mut at = start + first.len();
        if shape.len() < 2 {
            return Some(start..at);
        }
        let middle = &shape[1..shape.len() - 1];
        let mut ok = true;
        for piece in middle {
            match line[at..].find(piece.as_str()) {
                Some(found) => at += found + piece.len(),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        let end = if last.is_empty() {
            lead + trimmed.len()
        } else {
            match line[at..].find(last.as_str()) {
                Some(found) => at + found + last.len(),
                None => continue,
            }
        };
        // Nothing but the policy's values between the pieces: no line break, no quote.
        if end >= at && !line[start..end].contains(['\n', '"', '\'']) {
            return Some(start..end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_template_is_neutral_and_the_seed_is_built_in() {
        let header = PythonHeader::render(DEFAULT_TEMPLATE, &Policy::default()).unwrap();
        let block = header.block_text("\n");
        assert!(block.contains("os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\""));
        assert!(block.contains("os.environ[\"CUDA_DEVICE_ORDER\"] = \"PCI_BUS_ID\""));
        assert!(block.contains("# GPU selection (gpu-homogenize): the RTX 3090 only.\n"));
        assert!(block.is_ascii(), "{block}");
        assert!(header
            .validate_fn
            .iter()
            .all(|l| l.is_ascii() && l.len() <= 79));
        assert!(block.lines().all(|l| l.len() <= 79), "{block}");
        assert_eq!(header.validate_fn_name, "validate_rtx3090_mandatory");
        assert_eq!(header.block_imports, vec!["os".to_string()]);
        assert_eq!(header.docstring_marker, "");
        let seed = PythonHeader::render(SEED_TEMPLATE, &Policy::default()).unwrap();
        assert!(seed
            .block_text("\n")
            .contains("os.environ['CUDA_VISIBLE_DEVICES'] = '1'  # RTX 3090 EXCLUSIVEMENT"));
        assert!(seed.docstring_marker.contains("RTX 3090 (CUDA:1)"));
    }

    #[test]
    fn a_project_formatted_with_single_quotes_gets_single_quotes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[tool.ruff.format]\nquote-style = \"single\"\n",
        )
        .unwrap();
        let style = crate::lang::python::style::StyleResolver::new(dir.path()).at(Path::new(""));
        let header = PythonHeader::render(DEFAULT_TEMPLATE, &Policy::default())
            .unwrap()
            .styled(&style);
        let block = header.block_text("\n");
        assert!(
            block.contains("os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"),
            "{block}"
        );
        let validator = header.validate_fn_text("\n");
        assert!(
            validator.contains("raise RuntimeError(f'CUDA_VISIBLE_DEVICES is {visible!r}')"),
            "{validator}"
        );
        assert!(validator.contains("\"\"\"Fail fast"), "{validator}");
    }

    #[test]
    fn a_black_project_gets_the_seed_in_double_quotes_and_long_comments_wrapped() {
        let style = ProjectStyle {
            quotes: Quotes::Double,
            max_line: Some(40),
            ..ProjectStyle::default()
        };
        let header = PythonHeader::render(SEED_TEMPLATE, &Policy::default())
            .unwrap()
            .styled(&style);
        let block = header.block_text("\n");
        assert!(
            block.contains("os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\""),
            "{block}"
        );
        let header = PythonHeader::render(DEFAULT_TEMPLATE, &Policy::default())
            .unwrap()
            .styled(&style);
        let block = header.block_text("\n");
        assert!(block
            .lines()
            .filter(|l| l.starts_with('#'))
            .all(|l| l.len() <= 40));
        assert!(
            block.contains("# GPU selection (gpu-homogenize): the\n# RTX 3090 only.\n"),
            "{block}"
        );
    }

    #[test]
    fn empty_alloc_conf_drops_its_line() {
        let policy = Policy {
            alloc_conf: String::new(),
            ..Policy::default()
        };
        let header = PythonHeader::render(DEFAULT_TEMPLATE, &policy).unwrap();
        assert!(!header.block_text("\n").contains("PYTORCH_CUDA_ALLOC_CONF"));
    }

    #[test]
    fn under_a_scheduler_the_header_only_defaults() {
        let policy = Policy {
            respect_scheduler: true,
            ..Policy::default()
        };
        let header = PythonHeader::render(DEFAULT_TEMPLATE, &policy).unwrap();
        let block = header.block_text("\n");
        assert!(block.contains("os.environ.setdefault(\"CUDA_VISIBLE_DEVICES\", \"1\")\n"));
        assert!(!block.contains("] = \""));
    }

    #[test]
    fn a_template_without_sections_is_refused() {
        let err = PythonHeader::render("import os\n", &Policy::default()).unwrap_err();
        assert!(err.to_string().contains("before the first"));
    }
}
