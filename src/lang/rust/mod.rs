//! Rust support: parse with syn (byte ranges from proc-macro2 spans), the same pipeline,
//! edits and JSON as Python.

mod async_main;
mod detect;
mod doc_tests;
mod effective;
mod facts;
mod fix;
pub mod graph;
mod imports;
pub mod index_fns;
mod items;
pub mod krate;
pub mod manifest;
mod test_macros;
pub use crate::model::rules::rust as rules;

use std::path::Path;

use rayon::prelude::*;

use crate::base::edit::{apply, original_offset, Edit};
use crate::lang::template::{join_lines, render_sections, TemplateError};
use crate::lang::{self, FileInfo, LanguageSupport, SyntaxError};
use crate::model::finding::{line_column, Finding, Rule};
use crate::model::policy::{EnvVar, Policy};

pub use krate::{edition_of, CrateInfo, Manifests, Role};

/// The shipped template, neutral; `policy.rust_template` replaces it.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../../templates/rust_header.rs.tmpl");

/// The seed's template (`rust_template = "builtin:seed"`).
pub const SEED_TEMPLATE: &str = include_str!("../../../templates/seed/rust_header.rs.tmpl");

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
            Some(path) if path.as_os_str() == crate::lang::template::BUILTIN_SEED => {
                SEED_TEMPLATE.to_string()
            }
            Some(path) => crate::lang::template::read_template(root, path, "Rust")?,
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

    /// The env statements as they open `fn main`: after `{`, each on its own line, indented
    /// one `unit` deeper than the `fn` line (`base`), in an `unsafe` block from edition 2024 on
    /// (with the `// SAFETY:` line saying why the call is sound). `alloc: false` leaves out
    /// PYTORCH_CUDA_ALLOC_CONF for a program that does not link libtorch.
    pub fn main_env_text(
        &self,
        edition: u32,
        base: &str,
        unit: &str,
        nl: &str,
        opts: EnvText,
    ) -> String {
        let mut out = String::new();
        let outer = format!("{base}{unit}");
        let (inner, wrap) = if edition >= 2024 {
            (format!("{outer}{unit}"), true)
        } else {
            (outer.clone(), false)
        };
        if wrap {
            out.push_str(&format!("{nl}{outer}unsafe {{"));
            let (first, second) = (
                "// SAFETY: the first statements of `main`, before any thread starts:",
                "nothing reads or writes the environment concurrently.",
            );
            match opts.safety {
                Safety::Lines => {
                    out.push_str(&format!("{nl}{inner}{first}{nl}{inner}// {second}"));
                }
                Safety::OneLine => out.push_str(&format!("{nl}{inner}{first} {second}")),
                Safety::Omitted => {}
            }
        }
        for line in &self.main_env {
            if !opts.alloc && line.contains(EnvVar::AllocConf.name()) {
                continue;
            }
            let key = line
                .split_once("set_var(\"")
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(key, _)| key);
            match key {
                // A Slurm or Kubernetes mask (set before the process starts) wins.
                // As rustfmt lays it out (the earlier one-line form is still recognised).
                Some(key) if opts.respect == Respect::OneLine => out.push_str(&format!(
                    "{nl}{inner}if std::env::var_os(\"{key}\").is_none() {{ {line} }}"
                )),
                Some(key) if opts.respect == Respect::Block => out.push_str(&format!(
                    "{nl}{inner}if std::env::var_os(\"{key}\").is_none() {{{nl}{inner}{unit}{line}{nl}{inner}}}"
                )),
                _ => out.push_str(&format!("{nl}{inner}{line}")),
            }
        }
        if wrap {
            out.push_str(&format!("{nl}{outer}}}"));
        }
        out
    }
}

/// `respect_scheduler`'s form: each write guarded by `if std::env::var_os(K).is_none()`, as
/// rustfmt lays it out (`Block`) or on one line as the previous version wrote it; or unguarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Respect {
    No,
    Block,
    OneLine,
}

impl Respect {
    pub fn of(policy: &Policy) -> Respect {
        if policy.respect_scheduler {
            Respect::Block
        } else {
            Respect::No
        }
    }
}

/// The `// SAFETY:` comment of the edition-2024 `unsafe` block: as this version writes it
/// (under 100 columns), as the previous one did (one line), or none (the first versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Safety {
    Lines,
    OneLine,
    Omitted,
}

/// What the env block holds besides the mask and the order.
#[derive(Debug, Clone, Copy)]
pub struct EnvText {
    /// PYTORCH_CUDA_ALLOC_CONF: only libtorch reads it.
    pub alloc: bool,
    /// The `// SAFETY:` comment of the edition-2024 `unsafe` block.
    pub safety: Safety,
    /// `respect_scheduler`: each variable is set only when the launcher left it unset.
    pub respect: Respect,
}

pub struct RustSupport {
    pub policy: Policy,
    pub header: RustHeader,
    /// Each Cargo.toml is read once per run.
    pub manifests: Manifests,
    /// The tree's packages and programs (`prepare`).
    pub index: std::sync::OnceLock<graph::RustIndex>,
}

pub fn support(policy: &Policy, root: &Path) -> Result<Box<dyn LanguageSupport>, TemplateError> {
    let header = RustHeader::load(policy, root)?;
    Ok(Box::new(RustSupport {
        policy: policy.clone(),
        header,
        manifests: Manifests::within(root),
        index: std::sync::OnceLock::new(),
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
        // The line by the one line model (syn's own counts only `\n`).
        let (line, column) = line_column(source, e.span().byte_range().start);
        let message = e.to_string();
        // proc-macro2's lexer error names no cause; it stops where the token stream breaks.
        let message = if message == "cannot parse string into token stream" {
            "the tokens cannot be read from here: an unclosed delimiter or an unterminated literal or comment".to_string()
        } else {
            message
        };
        SyntaxError {
            line,
            column,
            message,
        }
    })
}

fn facts_of(source: &str) -> Result<facts::Facts, SyntaxError> {
    facts_with(source, &[], facts::HandedOn::default())
}

/// The facts, with the tree's functions that take a device index (calls to them are indices).
fn facts_with(
    source: &str,
    callable: &[index_fns::IndexFn],
    handed: facts::HandedOn,
) -> Result<facts::Facts, SyntaxError> {
    let file = parse(source)?;
    let facts = facts::collect(&file, callable, handed);
    proc_macro2::extra::invalidate_current_thread_spans();
    Ok(facts)
}

/// How far the analysis goes with a fix: none, or planned and proven on its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    None,
    Prove,
}

impl RustSupport {
    fn krate(&self, path: &Path) -> CrateInfo {
        CrateInfo::of_with(path, &self.manifests)
    }

    pub fn analyze_text(
        &self,
        path: &Path,
        source: &str,
        in_phase: bool,
    ) -> Result<Analysis, SyntaxError> {
        self.analyze_with(&self.krate(path), None, source, in_phase, Plan::Prove)
    }

    fn role(&self, rel: &str) -> Option<&graph::FileRole> {
        self.index.get().and_then(|i| i.role(rel))
    }

    fn callable(&self, rel: &str) -> &[index_fns::IndexFn] {
        self.index.get().map_or(&[], |i| i.callable(rel))
    }

    fn index_fields(&self, rel: &str) -> &[(String, String)] {
        self.index.get().map_or(&[], |i| i.index_fields(rel))
    }

    fn analyze_with(
        &self,
        krate: &CrateInfo,
        at: Option<&str>,
        source: &str,
        in_phase: bool,
        plan: Plan,
    ) -> Result<Analysis, SyntaxError> {
        self.analyze_in(self.index.get(), krate, at, source, in_phase, plan)
    }

    /// The analysis; with `plan`, also the edits of a fix, proven on their own result: a fix
    /// after which the process env would still not be the policy's is withheld, and the
    /// findings say why (masking indices without the env would select the forbidden card).
    fn analyze_in(
        &self,
        index: Option<&graph::RustIndex>,
        krate: &CrateInfo,
        at: Option<&str>,
        source: &str,
        in_phase: bool,
        plan: Plan,
    ) -> Result<Analysis, SyntaxError> {
        let role = at.and_then(|rel| index.and_then(|i| i.role(rel)));
        let callable = at.map_or(&[][..], |rel| index.map_or(&[], |i| i.callable(rel)));
        let handed = facts::HandedOn {
            fields: at.map_or(&[][..], |rel| index.map_or(&[], |i| i.index_fields(rel))),
            consts: at.map_or(&[][..], |rel| index.map_or(&[], |i| i.index_consts(rel))),
        };
        let mut facts = facts_with(source, callable, handed)?;
        // Ordinal-named struct fields (`device_indices: vec![1]`) are indices in GPU code: a
        // GPU program's, a module GPU programs run, or a lone file that uses a GPU crate.
        let gpu = match role {
            Some(graph::FileRole::Program { cuda, cpu, .. }) => {
                cpu.is_none() && (cuda.is_some() || !facts.sinks.is_empty())
            }
            Some(graph::FileRole::Module { programs, .. }) => !programs.is_empty(),
            None => facts.uses_gpu_crate || !facts.sinks.is_empty(),
        };
        facts.admit_index_fields(gpu);
        let ctx = detect::Context {
            source,
            policy: &self.policy,
            header: &self.header,
            krate,
            newline: crate::base::lines::newline_of(source),
            role,
        };
        let sites = detect::locate(&facts, &ctx);
        let kind = detect::binary(&facts, &ctx);
        let mut findings = detect::findings(&facts, &ctx, &sites);
        let mut edits = Vec::new();
        // A program that opens several cards by design (GH513) would lose all but one to the
        // mask: nothing of it is fixed, the findings say why.
        let own = findings
            .iter()
            .any(|f| f.rule.code == rules::MULTI_GPU.code);
        let elsewhere = at.map_or(&[][..], |rel| index.map_or(&[], |i| i.several_cards(rel)));
        if kind != detect::Binary::No && (own || !elsewhere.is_empty()) {
            let why = match elsewhere.first().filter(|_| !own) {
                Some(what) => format!(
                    "this program selects several devices ({what}, GH513), and the mask would leave it one card"
                ),
                None => "this program selects several devices (GH513), and the mask would leave it one card".to_string(),
            };
            withhold(&mut findings, &why);
        }
        // Code the loader runs before `main` may have started threads: an env block in `main`
        // could race them, and its SAFETY comment (edition 2024) would be false.
        let early = at.map_or(&[][..], |rel| index.map_or(&[], |i| i.before_main(rel)));
        if let (true, Some(what)) = (kind != detect::Binary::No, early.first()) {
            withhold(
                &mut findings,
                &format!("{what} runs before `main` and may start threads, which an env block in `main` could race: set the env before the process starts (a launcher script or the service's environment)"),
            );
        }
        if plan != Plan::None && findings.iter().any(|f| f.is_violation() && f.fixable) {
            let planned = fix::plan(&facts, &ctx, &sites, kind, &findings);
            match self.prove(index, krate, at, source, planned, in_phase) {
                Ok(planned) => edits = planned,
                Err(why) => withhold(&mut findings, &why),
            }
        }
        // In scope: a GPU binary's entry point, a file that constructs a device (a module that
        // builds `Device::new_cuda(0)` is GPU code, compliant or not), or one with findings.
        let chooses_cuda = at
            .is_some_and(|rel| index.is_some_and(|i| i.chooses_cuda(rel) && i.role(rel).is_some()));
        let in_scope = kind != detect::Binary::No
            || !findings.is_empty()
            || !facts.sinks.is_empty()
            || chooses_cuda;
        Ok(Analysis {
            findings,
            gpu_code: in_scope || facts.uses_gpu_crate,
            in_scope: in_scope || in_phase,
            edits,
            unsafe_edits: Vec::new(),
            details: (),
        })
    }

    fn prove(
        &self,
        index: Option<&graph::RustIndex>,
        krate: &CrateInfo,
        at: Option<&str>,
        source: &str,
        edits: Vec<Edit>,
        in_phase: bool,
    ) -> Result<Vec<Edit>, String> {
        let new = apply(source, &edits).map_err(|e| format!("the planned edits conflict ({e})"))?;
        let after = self
            .analyze_in(index, krate, at, &new, in_phase, Plan::None)
            .map_err(|e| format!("the rewrite would not parse ({e})"))?;
        let left = after.findings.iter().filter(|f| f.is_violation());
        let (env, other): (Vec<&Finding>, Vec<&Finding>) = left.partition(|f| f.rule.env);
        // Lines of the file as it is: the rewrite is never shown when it is withheld.
        let line = |f: &Finding| line_column(source, original_offset(&edits, f.range.start)).0;
        match (env.first(), other.first()) {
            (None, None) => Ok(edits),
            (Some(f), _) => Err(format!(
                "after the rewrite the env would still not be the policy's ({} on line {})",
                f.rule.code,
                line(f)
            )),
            // A file is rewritten only when the rewrite makes it compliant: never half-rewritten.
            (None, Some(f)) => Err(format!(
                "{} on line {} would be left, and a file is not half-rewritten",
                f.rule.code,
                line(f)
            )),
        }
    }
}

impl RustSupport {
    /// Whether the program at `rel` ends its `main` with the policy's mask once `fix` (or
    /// `fix --unsafe-fixes`) ran: already compliant, or every env finding has a fix. A file
    /// that cannot be read or parsed is not.
    fn program_masks(
        &self,
        index: &graph::RustIndex,
        root: &Path,
        entries: &[crate::fs::walk::Entry],
        rel: &str,
        limit: u64,
    ) -> bool {
        let Some(entry) = entries.iter().find(|e| e.rel == rel) else {
            return false;
        };
        let Ok(bytes) = crate::fs::source::read_under(root, &entry.rel_path, limit) else {
            return false;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return false;
        };
        let krate = self.krate(&entry.path);
        let analysis = crate::fs::panics::caught(entry, || {
            self.analyze_in(Some(index), &krate, Some(rel), &text, false, Plan::Prove)
                .ok()
        });
        match analysis {
            Ok(Some(a)) => !a.findings.iter().any(|f| f.rule.env && !f.fixable),
            _ => false,
        }
    }
}

/// The fix cannot be made: every violation stays, marked not fixable, with the reason.
fn withhold(findings: &mut [Finding], why: &str) {
    for f in findings
        .iter_mut()
        .filter(|f| f.is_violation() && f.fixable)
    {
        f.fixable = false;
        f.edits.clear();
        f.add_help(&format!("not fixed automatically: {why}"));
    }
}

impl LanguageSupport for RustSupport {
    fn analyze(
        &self,
        info: &FileInfo,
        source: &str,
    ) -> Result<Box<dyn lang::Analysis>, SyntaxError> {
        Ok(Box::new(self.analyze_with(
            &self.krate(info.path),
            Some(info.rel),
            source,
            info.in_phase,
            Plan::Prove,
        )?))
    }

    fn verify(
        &self,
        info: &FileInfo,
        _old: &str,
        new: &str,
        before: &dyn lang::Analysis,
    ) -> Vec<String> {
        let krate = self.krate(info.path);
        let after = match self.analyze_with(&krate, Some(info.rel), new, info.in_phase, Plan::None)
        {
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

    fn prepare(
        &self,
        root: &Path,
        entries: &[crate::fs::walk::Entry],
        max_file_size: u64,
        store: &dyn crate::lang::FactStore,
    ) {
        let mut index = graph::RustIndex::build(root, entries, max_file_size, store);
        // A library's index is remapped only where every program running it is masked by
        // its own fix: the graph's word (a sync main that may call `set_var`) is checked
        // against each such program's plan (a program whose fix is withheld, one opening
        // several cards (GH513), sets no mask).
        let unmasked: Vec<String> = index
            .masking_programs()
            .into_par_iter()
            .filter(|rel| !self.program_masks(&index, root, entries, rel, max_file_size))
            .collect();
        index.unmask(&unmasked);
        let _ = self.index.set(index);
    }

    fn evidence(&self, rel: &str) -> Option<String> {
        self.role(rel).map(graph::FileRole::evidence)
    }

    fn hosted_sources(&self) -> Vec<(String, String)> {
        self.index.get().map_or(Vec::new(), |i| i.hosted().to_vec())
    }

    fn verdict_inputs(&self, info: &FileInfo) -> String {
        format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}",
            self.role(info.rel),
            self.krate(info.path),
            self.callable(info.rel),
            self.index_fields(info.rel),
            self.index.get().map(|i| i.index_consts(info.rel))
        )
    }

    fn settings(&self) -> String {
        format!("{:?}|{:?}", self.policy, self.header)
    }

    fn starts_gpu_program(&self, rel: &str) -> bool {
        let program = matches!(
            self.role(rel),
            Some(graph::FileRole::Program {
                cuda: Some(_),
                cpu: None,
                ..
            })
        );
        let unit_tests = self.role(rel).is_some_and(|r| r.unit_tests().is_some())
            || matches!(
                self.role(rel),
                Some(graph::FileRole::Module {
                    doc_tests: Some(_),
                    ..
                })
            );
        program || unit_tests || self.index.get().is_some_and(|i| i.carries_index(rel))
    }

    fn gpu_skip_reason(&self, source: &str) -> Option<String> {
        let facts = facts_of(source).ok()?;
        facts.main.is_none().then(|| {
            "a Rust library module: the env is set by the main of the binary that links it"
                .to_string()
        })
    }

    /// The env the chosen main ends with: what the GPU check probes.
    fn header_env(&self, source: &str) -> Vec<(String, String)> {
        let Ok(facts) = facts_of(source) else {
            return Vec::new();
        };
        let env = effective::at_end(&facts);
        EnvVar::ALL
            .into_iter()
            .filter_map(|var| {
                env.value(var)
                    .map(|v| (var.name().to_string(), v.to_string()))
            })
            .collect()
    }
}
