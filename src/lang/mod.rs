//! What the pipeline needs from a language: analyse a file, verify a rewrite, read the env a
//! header sets. Python (ruff's parser) and Rust (syn) implement it.

pub mod add_noqa;
pub mod nesting;
pub mod python;
pub(crate) mod removal;
pub mod rust;
pub(crate) mod suppress;
pub mod template;

use std::any::Any;
use std::path::Path;

use crate::base::edit::Edit;
use crate::model::finding::Finding;

#[derive(Debug, thiserror::Error)]
#[error("syntax error at {line}:{column}: {message}")]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What the caller knows about a file besides its text.
pub struct FileInfo<'a> {
    /// The file on disk (Rust reads the edition from the nearest Cargo.toml).
    pub path: &'a Path,
    /// Relative to the tree root, `/`-separated (what the project index is keyed by).
    pub rel: &'a str,
    /// Declared in a mission phase: in scope whatever the rules see.
    pub in_phase: bool,
}

/// The result of analysing one file.
pub trait Analysis: Send {
    fn findings(&self) -> &[Finding];
    /// Imports a GPU framework, writes a GPU env variable, or selects a device.
    fn gpu_code(&self) -> bool;
    /// Must carry the header (GPU code, or declared in a phase).
    fn in_scope(&self) -> bool;
    /// The edits `fix` applies; empty when there is nothing to fix.
    fn edits(&self) -> &[Edit];
    fn as_any(&self) -> &dyn Any;
    /// For suppression and fix safety only (`suppress`): take findings or their fixes out.
    fn parts_mut(&mut self) -> (&mut Vec<Finding>, &mut Vec<Edit>);
    /// The plan's unsafe edits, moved into `edits` (`--unsafe-fixes`) or dropped; returns
    /// whether there were any.
    fn settle_unsafe_edits(&mut self, apply: bool) -> bool;

    fn is_compliant(&self) -> bool {
        !self.findings().iter().any(Finding::is_violation)
    }
}

pub trait LanguageSupport: Sync {
    fn analyze(&self, info: &FileInfo, source: &str) -> Result<Box<dyn Analysis>, SyntaxError>;
    /// `analyze` with every planned fix proven by analysing its result again, never by
    /// composition: the reference the tests compare `analyze` with.
    fn analyze_reanalysed(
        &self,
        info: &FileInfo,
        source: &str,
    ) -> Result<Box<dyn Analysis>, SyntaxError> {
        self.analyze(info, source)
    }
    /// Problems a rewrite left (empty when sound): it must parse and keep every invariant.
    fn verify(&self, info: &FileInfo, old: &str, new: &str, before: &dyn Analysis) -> Vec<String>;
    /// The env the file's header sets (what the GPU check runs it with).
    fn header_env(&self, source: &str) -> Vec<(String, String)>;
    /// Before the per-file pass: index what the language judges across files (the programs
    /// of the tree). `entries` is every file of the tree root; `store` keeps the facts read
    /// from each file between runs (the content cache).
    fn prepare(
        &self,
        _root: &Path,
        _entries: &[crate::fs::walk::Entry],
        _max_file_size: u64,
        _store: &dyn FactStore,
    ) {
    }
    /// Source files of another language this one's programs embed and run in-process
    /// (`include_str!("worker.py")` handed to pyo3): (embedded file, the file embedding it).
    fn hosted_sources(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// What another language's programs embed (see [`LanguageSupport::hosted_sources`]),
    /// told before `prepare`: such a file is not a program of its own.
    fn note_hosted(&self, _hosted: Vec<(String, String)>) {}
    /// The files of the tree that may hold commands starting programs (shell scripts,
    /// Makefiles, Dockerfiles, READMEs, CI workflows; root-relative), told before `prepare`.
    fn note_launch_files(&self, _files: &[std::path::PathBuf]) {}
    /// Everything besides the file's own bytes and the run's settings that its verdict reads
    /// (its role in the project index, the constants it imports, its crate): the content
    /// cache reuses a verdict only while this is unchanged.
    fn verdict_inputs(&self, _info: &FileInfo) -> String {
        String::new()
    }
    /// The settings the language judges with (policy, rendered header), for the cache's key.
    fn settings(&self) -> String {
        String::new()
    }
    /// The file starts a process that reaches GPU code elsewhere: it is analysed even when it
    /// holds no GPU word itself (the prefilter's shortcut does not apply).
    fn starts_gpu_program(&self, _rel: &str) -> bool {
        false
    }
    /// Why the file is a program or a library of the tree, for the outputs.
    fn evidence(&self, _rel: &str) -> Option<String> {
        None
    }
    /// Why this file gets no GPU check of its own, if it gets none.
    fn gpu_skip_reason(&self, _source: &str) -> Option<String> {
        None
    }
}

/// The analysis both languages return: findings and edits, plus what the language keeps
/// for checking a rewrite (`details`).
pub struct FileAnalysis<T> {
    pub findings: Vec<Finding>,
    pub gpu_code: bool,
    pub in_scope: bool,
    pub edits: Vec<Edit>,
    /// Edits of the file-level plan that only `--unsafe-fixes` applies (Python's validation
    /// call); not in `edits`.
    pub unsafe_edits: Vec<Edit>,
    pub details: T,
}

impl<T: Send + 'static> Analysis for FileAnalysis<T> {
    fn findings(&self) -> &[Finding] {
        &self.findings
    }
    fn gpu_code(&self) -> bool {
        self.gpu_code
    }
    fn in_scope(&self) -> bool {
        self.in_scope
    }
    fn edits(&self) -> &[Edit] {
        &self.edits
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn parts_mut(&mut self) -> (&mut Vec<Finding>, &mut Vec<Edit>) {
        (&mut self.findings, &mut self.edits)
    }
    fn settle_unsafe_edits(&mut self, apply: bool) -> bool {
        let unsafe_edits = std::mem::take(&mut self.unsafe_edits);
        let any = !unsafe_edits.is_empty();
        // Without the plan (a suppressed header) they have nothing to go with.
        if apply && !self.edits.is_empty() {
            self.edits.extend(unsafe_edits);
        }
        any && !self.edits.is_empty()
    }
}

/// Which index read the facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactKind {
    Python,
    Rust,
}

/// Facts an index read from a file, kept between runs: `load` gives them back only while the
/// file's bytes are those they were read from (`hash`: [`crate::fs::source::content_key`]).
pub trait FactStore: Sync {
    fn load(&self, entry: &crate::fs::walk::Entry, kind: FactKind) -> Option<String>;
    fn save(&self, entry: &crate::fs::walk::Entry, hash: u64, kind: FactKind, facts: String);
    /// It keeps what is saved: the facts are worth serialising.
    fn keeps(&self) -> bool {
        true
    }
}

/// No cache (`--no-cache`): every file is read.
pub struct NoFacts;

impl FactStore for NoFacts {
    fn load(&self, _: &crate::fs::walk::Entry, _: FactKind) -> Option<String> {
        None
    }
    fn save(&self, _: &crate::fs::walk::Entry, _: u64, _: FactKind, _: String) {}
    fn keeps(&self) -> bool {
        false
    }
}
