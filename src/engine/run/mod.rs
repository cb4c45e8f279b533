//! The run engine: set up a run (root, config), walk the tree, run the CPU stage with the
//! GPU slot behind it, count. It knows nothing of the commands that drive it.

mod config;
pub mod cpu;
pub mod gpu_slot;
pub mod progress;
pub mod shard;

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::engine::cache::Cache;
use crate::engine::process::{Engine, Mode};
use crate::fs::source::Prefilter;
use crate::fs::walk::{find_root, walk_tree, Entry, EntryKind};
use crate::lang::python::header::PythonHeader;
use crate::lang::python::Python;
use crate::lang::{FactStore, NoFacts};
use crate::model::lint::RuleFilter;
use crate::model::outcome::FileOutcome;
use crate::model::policy::{Config, Phases};
use crate::model::summary::Summary;
use config::{config_file_of, load_in, load_named};
use cpu::{install_signal_flag, run_cpu_stage};
use progress::Progress;

pub use gpu_slot::{GpuMode, GpuSettings};

/// Sources larger than this are reported, not read, unless the caller says otherwise.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 4 * 1024 * 1024;

/// What a run covers and how, as whoever drives it asks: the engine's own settings, which
/// the command line's options convert into (`cli::InputArgs::run_input`), never clap's types.
#[derive(Debug, Clone, Default)]
pub struct RunInput {
    /// Files and directories to process; none is the current directory, `-` is stdin.
    pub paths: Vec<PathBuf>,
    /// A config file named by the caller, instead of the one found at the root.
    pub config: Option<PathBuf>,
    /// Larger sources are reported, not read.
    pub max_file_size: u64,
    /// The path a source read from stdin is judged as.
    pub stdin_filename: Option<PathBuf>,
    /// Worker threads; none is one per core.
    pub jobs: Option<u16>,
    pub no_cache: bool,
    /// The cache's directory, instead of `.gpu-homogenize/cache/` in the tree (a CI cache).
    pub cache_dir: Option<PathBuf>,
    /// This run covers part `.0` of `.1` of the tree.
    pub shard: Option<(u32, u32)>,
    /// Rule selection over the config's.
    pub lint: crate::model::lint::LintSettings,
    pub unsafe_fixes: bool,
    /// Exclusions apply to paths named explicitly too.
    pub force_exclude: bool,
    pub baseline: Option<PathBuf>,
}

/// What every command that walks a tree sets up.
pub struct Setup {
    pub root: PathBuf,
    pub config: Config,
    pub paths: Vec<PathBuf>,
}

/// A directory named on the command line through a symbolic link (`"$PWD/"` where `$PWD` holds
/// one, a link to the project): the link is the user's own choice, resolved once here; below it
/// the walk never follows a link. Anything else is taken as given.
fn resolved_root(path: &std::path::Path) -> PathBuf {
    let text = path.as_os_str().to_string_lossy();
    let trimmed = text.trim_end_matches('/');
    let bare = if trimmed.is_empty() {
        path.to_path_buf()
    } else {
        PathBuf::from(trimmed)
    };
    let is_link = std::fs::symlink_metadata(&bare).is_ok_and(|m| m.file_type().is_symlink());
    let to_dir = std::fs::metadata(&bare).is_ok_and(|m| m.is_dir());
    if is_link && to_dir {
        if let Ok(real) = std::fs::canonicalize(&bare) {
            return real;
        }
    }
    path.to_path_buf()
}

/// The path a source read from stdin is judged as, when the command reads one: `-` as the only
/// path (or no path) with `--stdin-filename`, as ruff has it.
pub fn stdin_path(input: &RunInput) -> anyhow::Result<Option<PathBuf>> {
    let dash = input.paths.iter().any(|p| p.as_os_str() == "-");
    match (&input.stdin_filename, dash) {
        (Some(_), _) | (None, true) if input.paths.len() > usize::from(dash) => anyhow::bail!(
            "`-` (stdin) is the only path a command reading stdin takes; name the files, or pipe one source"
        ),
        (Some(name), _) => Ok(Some(name.clone())),
        (None, true) => anyhow::bail!(
            "reading a source from stdin (`-`) needs --stdin-filename PATH: the path it is judged as"
        ),
        (None, false) => Ok(None),
    }
}

pub fn setup(input: &RunInput) -> anyhow::Result<Setup> {
    let paths = if let Some(name) = stdin_path(input)? {
        vec![name]
    } else if input.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        input.paths.iter().map(|p| resolved_root(p)).collect()
    };
    let root = find_root(&paths)?;
    let mut config = match (&input.config, config_file_of(&root)) {
        (Some(named), _) => load_named(named)?,
        (None, Some(found)) => load_in(&root, found.strip_prefix(&root)?)?,
        (None, None) => Config::default(),
    };
    let cli = input.lint.clone();
    cli.validate()
        .map_err(|m| anyhow::anyhow!("command line: {m}"))?;
    config.lint = config.lint.with_overrides(&cli);
    Ok(Setup {
        root,
        config,
        paths,
    })
}

pub fn engine(setup: &Setup, input: &RunInput, mode: Mode) -> anyhow::Result<Engine> {
    // Styled per directory for the project's tools when the tree is prepared.
    let header = PythonHeader::load(&setup.config.policy, &setup.root)?;
    Ok(Engine {
        root: setup.root.clone(),
        phases: Phases::new(&setup.config.phases),
        python: Box::new(Python::new(setup.config.policy.clone(), header)),
        rust: crate::lang::rust::support(&setup.config.policy, &setup.root)?,
        prefilter: Prefilter::new(),
        mode,
        max_file_size: input.max_file_size,
        write: crate::fs::write::WriteOptions::default(),
        touchpoints: false,
        want_diff: false,
        lint: RuleFilter::new(&setup.config.lint),
        unsafe_fixes: input.unsafe_fixes || setup.config.unsafe_fixes,
        baseline: match &input.baseline {
            Some(path) => Some(crate::engine::baseline::Baseline::load(path)?),
            None => None,
        },
        keep_rewrite: false,
        repo_prefix: crate::model::outcome::repository_prefix(&setup.root),
        stop: Default::default(),
    })
}

/// One source read from stdin, judged as the file `name` of the tree (its config, its rules, its
/// role in the project index, which is built from the tree as it is on disk).
pub fn execute_stdin(
    setup: &Setup,
    engine: &Engine,
    input: &RunInput,
    name: &std::path::Path,
    bytes: Vec<u8>,
) -> anyhow::Result<(Vec<FileOutcome>, Summary)> {
    let outcomes = vec![process_stdin(setup, engine, input, name, bytes).outcome];
    let summary = Summary::of(&outcomes, None, false);
    Ok((outcomes, summary))
}

/// `check -`: the source read from stdin through the CPU stage, then its GPU check (the probe
/// with the env its header sets) as `--gpu` asks.
pub fn check_stdin(
    setup: &Setup,
    engine: &Engine,
    input: &RunInput,
    name: &std::path::Path,
    bytes: Vec<u8>,
    gpu: &GpuSettings,
) -> anyhow::Result<(Vec<FileOutcome>, Summary)> {
    let processed = process_stdin(setup, engine, input, name, bytes);
    let (outcome, gpu_summary) = gpu_slot::check_one(setup, processed, gpu)?;
    let outcomes = vec![outcome];
    let summary = Summary::of(&outcomes, gpu_summary, false);
    Ok((outcomes, summary))
}

fn process_stdin(
    setup: &Setup,
    engine: &Engine,
    input: &RunInput,
    name: &std::path::Path,
    bytes: Vec<u8>,
) -> crate::engine::process::Processed {
    let walked = walk_tree(
        std::slice::from_ref(&setup.root),
        &setup.root,
        jobs(input),
        &[],
        engine.lint.exclude_globs(),
        false,
    );
    let all = walked.entries;
    engine.python.note_launch_files(&walked.launch_files);
    let store = crate::lang::NoFacts;
    engine
        .rust
        .prepare(&setup.root, &all, engine.max_file_size, &store);
    engine.python.note_hosted(engine.rust.hosted_sources());
    engine
        .python
        .prepare(&setup.root, &all, engine.max_file_size, &store);
    let absolute = crate::fs::walk::absolute(name);
    let rel_path = crate::fs::walk::relative_path(&setup.root, &absolute);
    let entry = crate::fs::walk::Entry {
        path: name.to_path_buf(),
        rel: crate::fs::walk::relative_to(&setup.root, &absolute),
        rel_path,
        kind: crate::fs::walk::language_of(name).map_or(EntryKind::Unsupported, EntryKind::Source),
    };
    engine.process_source(&entry, bytes)
}

fn jobs(input: &RunInput) -> usize {
    input
        .jobs
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Walk, run the CPU stage (and the GPU slot when `gpu` is given), and count: the outcomes in
/// the walk's order. With `journal` (the command, as the journal names it), each file is
/// journalled once it is done, its GPU check included, and the run's totals at the end.
pub fn execute(
    setup: &Setup,
    engine: &Engine,
    input: &RunInput,
    gpu: Option<&GpuSettings>,
    journal: Option<&str>,
) -> anyhow::Result<(Vec<FileOutcome>, Summary)> {
    let mut outcomes = Vec::new();
    let summary = execute_streaming(setup, engine, input, gpu, journal, &mut |outcome| {
        outcomes.push(outcome);
        String::new()
    })?;
    Ok((outcomes, summary))
}

/// `execute`, each outcome handed to `sink` as soon as it and the files before it are done
/// (their GPU checks included), in the walk's order; what `sink` returns is printed on stdout
/// then. The run keeps the counts, not the outcomes.
pub fn execute_streaming(
    setup: &Setup,
    engine: &Engine,
    input: &RunInput,
    gpu: Option<&GpuSettings>,
    journal: Option<&str>,
    sink: &mut (dyn FnMut(FileOutcome) -> String + Send),
) -> anyhow::Result<Summary> {
    let mut journal = journal.map(|command| crate::journal::Writer::new(&setup.root, command));
    let summary = run(setup, engine, input, gpu, &mut |outcome| {
        if let Some(journal) = &mut journal {
            journal.file(&outcome);
        }
        sink(outcome)
    })?;
    if let Some(journal) = journal {
        journal.finish(&summary);
    }
    Ok(summary)
}

fn run(
    setup: &Setup,
    engine: &Engine,
    input: &RunInput,
    gpu: Option<&GpuSettings>,
    sink: &mut (dyn FnMut(FileOutcome) -> String + Send),
) -> anyhow::Result<Summary> {
    let cancelled = install_signal_flag();
    let exclude: Vec<PathBuf> = engine.write.backup_dir.iter().cloned().collect();
    let globs = engine.lint.exclude_globs();
    let found = walk_tree(
        &setup.paths,
        &setup.root,
        jobs(input),
        &exclude,
        globs,
        input.force_exclude,
    );
    if let Some(what) = found.exhausted {
        anyhow::bail!("{what} (the tree could not be listed whole; nothing was processed)");
    }
    let removing = engine.mode == Mode::Fix { dry_run: false };
    let backup_dir = engine.write.backup_dir.as_deref();
    crate::engine::leftovers::handle(&setup.root, &found.temp_files, removing, backup_dir);
    let entries = found.entries;
    let mut launch_files = found.launch_files;
    // Paths that yield nothing to read because of how they were named (symbolic links, never
    // followed) are not a pass.
    if !entries.is_empty() && entries.iter().all(|e| e.kind == EntryKind::Symlink) {
        anyhow::bail!(
            "nothing was checked: every path named is a symbolic link, never followed (name the file or directory it points to)"
        );
    }
    // The project index covers the whole root, whatever part of it is checked.
    let whole_root = setup
        .paths
        .iter()
        .any(|p| p.canonicalize().ok() == setup.root.canonicalize().ok());
    let root_walk = (!whole_root).then(|| {
        walk_tree(
            std::slice::from_ref(&setup.root),
            &setup.root,
            jobs(input),
            &exclude,
            engine.lint.exclude_globs(),
            false,
        )
    });
    if let Some(what) = root_walk.as_ref().and_then(|w| w.exhausted) {
        anyhow::bail!("{what} (the tree could not be listed whole; nothing was processed)");
    }
    let root_entries = root_walk.map(|w| {
        launch_files = w.launch_files;
        w.entries
    });
    engine.python.note_launch_files(&launch_files);
    let all = root_entries.as_deref().unwrap_or(&entries);
    // `--shard I/N`: this job's part of the files; the index still reads them all.
    let sharded: Option<Vec<Entry>> = input.shard.map(|(i, n)| {
        entries
            .iter()
            .filter(|e| in_shard(&e.rel, i, n))
            .cloned()
            .collect()
    });
    let checked: &[Entry] = sharded.as_deref().unwrap_or(&entries);
    // The indexes parse every file of the tree: on threads with the CPU stage's stack, so that a
    // deep (but allowed) file never overflows a default-sized one.
    let index_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs(input))
        .stack_size(cpu::WORKER_STACK)
        .build();
    let mut cache = (!input.no_cache).then(|| {
        Cache::open(
            &setup.root,
            input.cache_dir.as_deref().map_or_else(
                || crate::engine::cache::Place::in_tree(&setup.root),
                crate::engine::cache::Place::named,
            ),
            cache_settings(setup, engine, input),
            engine.max_file_size,
        )
    });
    if let Some(cache) = &mut cache {
        cache.watch(&launch_files);
    }
    // The tree as the indexes last saw it: they are built only if a file must be analysed.
    let index_deferred = cache.as_mut().is_some_and(|c| c.tree_unchanged(all));
    let store: &dyn FactStore = match &cache {
        Some(cache) => cache,
        None => &NoFacts,
    };
    // Rust first: the Python files its programs embed are not programs of their own.
    let prepare = || {
        engine
            .rust
            .prepare(&setup.root, all, engine.max_file_size, store);
        engine.python.note_hosted(engine.rust.hosted_sources());
        engine
            .python
            .prepare(&setup.root, all, engine.max_file_size, store);
    };
    let build_index = || match &index_pool {
        Ok(pool) => pool.install(prepare),
        Err(_) => prepare(),
    };
    if !index_deferred {
        build_index();
    }
    let cached: cpu::Cached = cache
        .as_ref()
        .map(|c| (c, &build_index as &(dyn Fn() + Sync)));
    let mut progress = Progress::new(checked, &engine.phases);
    let _forget_temps = ForgetTemps(removing.then(|| setup.root.clone()));
    let mut summary = Summary::default();
    let mut failed: Option<anyhow::Error> = None;
    // To a terminal, each file's text at once (between the progress bars' redraws); to a pipe
    // or a file, in blocks, as ripgrep writes.
    let to_terminal = std::io::stdout().is_terminal();
    let mut block = String::new();
    let bars = progress.bars();
    let mut emit = |outcome: FileOutcome| {
        summary.add(&outcome);
        let text = sink(outcome);
        if text.is_empty() || failed.is_some() {
            return;
        }
        let printed = if to_terminal {
            bars.suspend(|| crate::base::output::print(&text))
        } else {
            block.push_str(&text);
            if block.len() < BLOCK {
                return;
            }
            let printed = crate::base::output::print(&block);
            block.clear();
            printed
        };
        failed = printed.err();
    };
    let gpu_summary = match gpu {
        Some(args) => Some(gpu_slot::run(
            setup,
            engine,
            cached,
            checked,
            jobs(input),
            args,
            &mut progress,
            &cancelled,
            &mut |_, outcome| emit(outcome),
        )?),
        None => {
            run_cpu_stage(
                engine,
                cached,
                checked,
                jobs(input),
                &progress,
                &cancelled,
                &|_, _| {},
                &mut |_, outcome| emit(outcome),
            );
            None
        }
    };
    if failed.is_none() {
        failed = crate::base::output::print(&block).err();
    }
    progress.finish();
    // Open files or memory ran out: the run's error; nothing of it is cached.
    if let Some(stopped) = engine.stop.error() {
        anyhow::bail!(stopped);
    }
    if let Some(cache) = cache {
        cache.persist(all, &entries);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    summary.gpu = gpu_summary;
    summary.interrupted = cancelled.load(std::sync::atomic::Ordering::SeqCst);
    summary.shard = shard::of(setup, engine, input, &summary);
    Ok(summary)
}

/// What a streaming run writes at once to a pipe or a file.
const BLOCK: usize = 1 << 16;

/// Shard `i` of `n` (1-based) holds the paths whose hash is `i - 1` modulo `n`: stable across
/// runs, machines and the order of the walk.
pub fn in_shard(rel: &str, i: u32, n: u32) -> bool {
    crate::fs::source::content_key(rel.as_bytes()) % u64::from(n) == u64::from(i - 1)
}

/// Everything besides the files that a verdict depends on, for the content cache: the tool's
/// build, the command's mode and flags, the config, the headers as rendered, the baseline.
fn cache_settings(setup: &Setup, engine: &Engine, input: &RunInput) -> String {
    // In the tree, the binary's inode and device too: a cache file committed to a repository
    // (crafted to say "compliant") names a build no other machine has, so it is never read
    // there. In a directory the user names (`--cache-dir`, restored by their CI from its own
    // earlier runs), the build's bytes: valid for the same build in any checkout and on any
    // runner.
    let build = std::env::current_exe().ok().and_then(|exe| {
        if input.cache_dir.is_some() {
            std::fs::read(&exe)
                .ok()
                .map(|bytes| format!("{:016x}", crate::fs::source::content_key(&bytes)))
        } else {
            crate::fs::platform::build_identity(&exe)
                .ok()
                .map(|id| format!("{id:?}"))
        }
    });
    format!(
        "{} {build:?} diff={}\n{}",
        env!("CARGO_PKG_VERSION"),
        engine.want_diff,
        verdict_settings(setup, engine, input)
    )
}

/// The command's mode and flags, the config, the headers as rendered and the baseline's hash:
/// what a file's verdict depends on besides its bytes and the tool.
fn verdict_settings(setup: &Setup, engine: &Engine, input: &RunInput) -> String {
    let baseline = input.baseline.as_ref().map(|path| {
        crate::fs::tree_file::read_named(path, crate::fs::tree_file::BASELINE_LIMIT)
            .map(|text| crate::fs::source::content_key(text.as_bytes()))
            .ok()
    });
    format!(
        "{:?} touchpoints={} unsafe={} max={} baseline={baseline:?}\n{}\n{}\n{}",
        engine.mode,
        engine.touchpoints,
        engine.unsafe_fixes,
        engine.max_file_size,
        serde_json::to_string(&setup.config).unwrap_or_default(),
        engine.python.settings(),
        engine.rust.settings(),
    )
}

/// When a writing run ends (however it ends), its registry of temp files goes with it.
struct ForgetTemps(Option<std::path::PathBuf>);

impl Drop for ForgetTemps {
    fn drop(&mut self) {
        if let Some(root) = &self.0 {
            crate::engine::leftovers::forget_own(root);
        }
    }
}
