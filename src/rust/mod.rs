//! Rust support: parse with syn (byte ranges from proc-macro2 spans), the same pipeline,
//! edits and JSON as Python.

mod detect;
mod edition;
mod facts;
mod fix;
pub mod rules;

use std::path::Path;

use crate::finding::{line_column, Rule};
use crate::lang::{self, FileInfo, LanguageSupport, SyntaxError};
use crate::policy::{EnvVar, Policy};
use crate::python::header::{join_lines, render_sections, TemplateError};

pub use edition::edition_of;

/// The shipped template; `policy.rust_template` replaces it.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../templates/rust_header.rs.tmpl");

/// The rendered Rust header: a comment block, and the env statements for `fn main`.
#[derive(Debug, Clone)]
pub struct RustHeader {
    pub comment: Vec<String>,
    pub main_env: Vec<String>,
}

impl RustHeader {
    pub fn load(policy: &Policy, root: &Path) -> Result<RustHeader, TemplateError> {
        let text = match &policy.rust_template {
            None => DEFAULT_TEMPLATE.to_string(),
            Some(path) => {
                std::fs::read_to_string(root.join(path)).map_err(|source| TemplateError::Read {
                    path: root.join(path).display().to_string(),
                    source,
                })?
            }
        };
        let sections = render_sections(&text, policy)?;
        let take = |name: &str| {
            sections
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, l)| l.clone())
                .ok_or_else(|| {
                    TemplateError::Invalid(format!("Rust template: missing section `@@ {name}`"))
                })
        };
        Ok(RustHeader {
            comment: take("header")?,
            main_env: take("main_env")?,
        })
    }

    pub fn comment_text(&self, nl: &str) -> String {
        join_lines(&self.comment, nl)
    }

    /// The env statements as they open `fn main`: after `{`, each on its own line, in an
    /// `unsafe` block from edition 2024 on.
    pub fn main_env_text(&self, edition: u32, indent: &str, nl: &str) -> String {
        let mut out = String::new();
        let (inner, wrap) = if edition >= 2024 {
            (format!("{indent}{indent}"), true)
        } else {
            (indent.to_string(), false)
        };
        if wrap {
            out.push_str(&format!("{nl}{indent}unsafe {{"));
        }
        for line in &self.main_env {
            out.push_str(&format!("{nl}{inner}{line}"));
        }
        if wrap {
            out.push_str(&format!("{nl}{indent}}}"));
        }
        out
    }
}

pub struct RustSupport {
    pub policy: Policy,
    pub header: RustHeader,
}

pub fn support(policy: &Policy, root: &Path) -> Result<Box<dyn LanguageSupport>, TemplateError> {
    let header = RustHeader::load(policy, root)?;
    Ok(Box::new(RustSupport {
        policy: policy.clone(),
        header,
    }))
}

pub fn rules() -> Vec<&'static Rule> {
    rules::ALL.to_vec()
}

/// A Rust file's analysis (nothing beyond the findings is needed to check a rewrite).
pub type Analysis = lang::FileAnalysis<()>;

/// syn skips a BOM and a shebang line; blank them out instead so offsets stay the file's.
fn masked(source: &str) -> String {
    let mut text = source.to_string();
    if text.starts_with('\u{feff}') {
        text.replace_range(0..3, "   ");
    }
    let body = text.trim_start_matches(' ');
    let start = text.len() - body.len();
    if body.starts_with("#!") && !body[2..].trim_start().starts_with('[') {
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        text.replace_range(start..end, &" ".repeat(end - start));
    }
    text
}

/// Parse a Rust file; byte offsets of the result are the file's own.
pub fn parse(source: &str) -> Result<syn::File, SyntaxError> {
    syn::parse_file(&masked(source)).map_err(|e| {
        let start = e.span().start();
        SyntaxError {
            line: start.line,
            column: start.column + 1,
            message: e.to_string(),
        }
    })
}

impl RustSupport {
    pub fn analyze_text(
        &self,
        path: &Path,
        source: &str,
        in_phase: bool,
    ) -> Result<Analysis, SyntaxError> {
        let file = parse(source)?;
        let facts = facts::collect(&file);
        proc_macro2::extra::invalidate_current_thread_spans();
        let edition = edition_of(path);
        let ctx = detect::Context {
            source,
            policy: &self.policy,
            header: &self.header,
            edition,
            newline: crate::python::newline_of(source),
            in_phase,
        };
        let (findings, edits) = detect::findings_and_edits(&facts, &ctx);
        let gpu_code = facts.uses_gpu_crate
            || !facts.env_writes.is_empty()
            || !facts.device_indices.is_empty()
            || !facts.nvml_indices.is_empty();
        Ok(Analysis {
            findings,
            gpu_code,
            in_scope: gpu_code || in_phase,
            edits,
            details: (),
        })
    }
}

impl LanguageSupport for RustSupport {
    fn analyze(
        &self,
        info: &FileInfo,
        source: &str,
    ) -> Result<Box<dyn lang::Analysis>, SyntaxError> {
        Ok(Box::new(self.analyze_text(
            info.path,
            source,
            info.in_phase,
        )?))
    }

    fn verify(
        &self,
        info: &FileInfo,
        _old: &str,
        new: &str,
        before: &dyn lang::Analysis,
    ) -> Vec<String> {
        let after = match self.analyze_text(info.path, new, info.in_phase) {
            Ok(after) => after,
            Err(e) => {
                return vec![format!(
                    "the rewrite does not parse ({e}); this is a bug, please report it"
                )]
            }
        };
        after
            .findings
            .iter()
            .filter(|f| f.is_violation())
            .filter(|f| {
                !before
                    .findings()
                    .iter()
                    .any(|b| b.rule.code == f.rule.code && !b.fixable)
            })
            .map(|f| {
                let (line, _) = line_column(new, f.range.start);
                format!(
                    "{} still present after the rewrite (line {line}): {}",
                    f.rule.code, f.message
                )
            })
            .collect()
    }

    fn gpu_skip_reason(&self, source: &str) -> Option<String> {
        let file = parse(source).ok()?;
        let has_main = file
            .items
            .iter()
            .any(|i| matches!(i, syn::Item::Fn(f) if f.sig.ident == "main"));
        (!has_main).then(|| {
            "a Rust library: the env is set by the main of the binary that links it".to_string()
        })
    }

    fn header_env(&self, source: &str) -> Vec<(String, String)> {
        let Ok(file) = parse(source) else {
            return Vec::new();
        };
        let facts = facts::collect(&file);
        proc_macro2::extra::invalidate_current_thread_spans();
        let mut env = Vec::new();
        for var in EnvVar::ALL {
            let value = facts
                .env_writes
                .iter()
                .filter(|w| w.var == var && w.in_main.is_some())
                .find_map(|w| w.value.clone());
            if let Some(value) = value {
                env.push((var.name().to_string(), value));
            }
        }
        env
    }
}
