//! Python support: parse with ruff's parser, collect facts, apply the rules, plan fixes.

mod detect;
mod facts;
mod fix;
pub mod header;
pub mod rules;
mod semantic;
mod verify;

use crate::finding::{line_column, Finding};
use crate::lang::{self, FileInfo, LanguageSupport, SyntaxError};
use crate::policy::{EnvVar, Policy};
pub use facts::Facts;
use header::PythonHeader;
pub use semantic::GPU_FRAMEWORKS;

/// What the caller knows about the file besides its text.
pub struct FileContext<'a> {
    pub policy: &'a Policy,
    pub header: &'a PythonHeader,
    /// Declared in a mission phase: in scope whatever the rules see.
    pub in_phase: bool,
    pub is_init: bool,
}

/// Python for the pipeline: the policy and the rendered header, shared by every file.
pub struct Python {
    pub policy: Policy,
    pub header: PythonHeader,
}

impl Python {
    fn context<'a>(&'a self, info: &FileInfo) -> FileContext<'a> {
        FileContext {
            policy: &self.policy,
            header: &self.header,
            in_phase: info.in_phase,
            is_init: info.path.file_name().is_some_and(|n| n == "__init__.py"),
        }
    }
}

impl LanguageSupport for Python {
    fn analyze(
        &self,
        info: &FileInfo,
        source: &str,
    ) -> Result<Box<dyn lang::Analysis>, SyntaxError> {
        Ok(Box::new(analyze(source, &self.context(info))?))
    }

    fn verify(
        &self,
        info: &FileInfo,
        old: &str,
        new: &str,
        before: &dyn lang::Analysis,
    ) -> Vec<String> {
        match before.as_any().downcast_ref::<Analysis>() {
            Some(before) => verify(old, new, before, &self.context(info)),
            None => vec!["internal error: not a Python analysis".into()],
        }
    }

    fn header_env(&self, source: &str) -> Vec<(String, String)> {
        header_env(source, &self.policy)
    }
}

/// A Python file's analysis; its facts let `verify` compare a rewrite with the original.
pub type Analysis = lang::FileAnalysis<Facts>;

/// The line ending the file uses (its first one), so inserted text matches it.
pub fn newline_of(source: &str) -> &'static str {
    match source.find('\n') {
        Some(i) if i > 0 && source.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

pub fn analyze(source: &str, ctx: &FileContext) -> Result<Analysis, SyntaxError> {
    let parsed = ruff_python_parser::parse_module(source).map_err(|e| {
        let (line, column) = line_column(source, e.location.start().to_usize());
        SyntaxError {
            line,
            column,
            message: e.error.to_string(),
        }
    })?;
    let body = &parsed.syntax().body;
    let newline = newline_of(source);
    let block = detect::locate_header(source, ctx.header, newline);
    let facts = facts::collect(source, body, ctx.policy, block.clone());
    let site = block.map(|range| detect::HeaderSite {
        valid: detect::header_is_placed(&facts, &range),
        range,
    });
    let gpu_code = !facts.gpu_imports.is_empty()
        || !facts.env_writes.is_empty()
        || !facts.device_indices.is_empty();
    let rule_ctx = detect::RuleContext {
        policy: ctx.policy,
        header: ctx.header,
        site,
        in_scope: gpu_code || ctx.in_phase,
        is_init: ctx.is_init,
    };
    let findings = detect::findings(&facts, &rule_ctx);
    let edits = if findings.iter().any(Finding::is_violation) {
        fix::plan(&fix::FixInput {
            source,
            facts: &facts,
            findings: &findings,
            ctx: &rule_ctx,
            newline,
        })
    } else {
        Vec::new()
    };
    Ok(Analysis {
        findings,
        gpu_code,
        in_scope: rule_ctx.in_scope,
        edits,
        details: facts,
    })
}

/// Check a rewrite: it must parse and keep every invariant. Returns the problems found.
pub fn verify(old: &str, new: &str, before: &Analysis, ctx: &FileContext) -> Vec<String> {
    match analyze(new, ctx) {
        Err(e) => vec![format!(
            "the rewrite does not parse ({e}); this is a bug, please report it"
        )],
        Ok(after) => verify::invariants(old, new, before, &after),
    }
}

/// The env a file's header sets, read from its text: what the GPU check runs the file with.
pub fn header_env(source: &str, policy: &Policy) -> Vec<(String, String)> {
    let Ok(parsed) = ruff_python_parser::parse_module(source) else {
        return Vec::new();
    };
    let facts = facts::collect(source, &parsed.syntax().body, policy, None);
    let mut env: Vec<(String, String)> = Vec::new();
    for var in EnvVar::ALL {
        let value = facts
            .env_writes
            .iter()
            .filter(|w| w.module_level && w.var == var)
            .find_map(|w| w.value.clone());
        if let Some(value) = value {
            env.push((var.name().to_string(), value));
        }
    }
    env
}
