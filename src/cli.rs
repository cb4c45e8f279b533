//! Command-line definitions (clap derive). Parsing only: the commands live elsewhere.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "gpu-homogenize",
    version,
    about = "Make every file of a code base select its GPU the same way, and prove it",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub global: GlobalArgs,
}

/// Options every command takes, as ruff has them.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Print only findings and diffs: no summary, no progress (`-q`, as ruff).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// Colour in the output: `auto` when stdout is a terminal and NO_COLOR is unset.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Exit 0 even when findings are left (ruff's `--exit-zero`); errors still exit 2.
    #[arg(long, global = true)]
    pub exit_zero: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report GPU-selection code that breaks the policy, file by file, rule by rule.
    Scan(ScanArgs),
    /// Rewrite offending files to the standard header (atomically), then validate them.
    Fix(FixArgs),
    /// Validate files as they are (CPU invariants and GPU check); never rewrite.
    Check(CheckArgs),
    /// Per-phase progress report for the coordinator, from a fresh scan and the journal; with
    /// `--merge`, the JSON or SARIF of `--shard` jobs as one document.
    Report(ReportArgs),
    /// Show the GPUs the driver sees, their CUDA ordering, and what the policy selects.
    Doctor(DoctorArgs),
    /// Propose a gpu-homogenize.toml (policy and phases) from a scan of the tree.
    Init(InitArgs),
    /// Explain a rule: what it finds, why, an example, and how safe its fix is.
    Rule(RuleArgs),
    /// Write the current findings to a baseline file, so that `scan --baseline FILE` reports
    /// only new ones.
    Baseline(BaselineArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// The content cache (`.gpu-homogenize/cache/`): `cache clean` removes it.
    Cache(CacheArgs),
    /// Internal: the child that initialises CUDA with the environment of one file.
    #[command(name = "__probe", hide = true)]
    Probe(ProbeArgs),
    /// Internal: runs a `--gpu-cmd` and kills whatever it leaves behind.
    #[command(name = "__supervise", hide = true)]
    Supervise(SuperviseArgs),
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Remove the cache of the tree holding PATH (default: the current directory).
    Clean {
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    /// SARIF 2.1.0, URIs relative to the repository under %SRCROOT%.
    Sarif,
    /// GitHub Actions workflow annotations.
    Github,
    /// GitLab Code Quality report (`artifacts: reports: codequality:`).
    Gitlab,
}

/// What `doctor` can print: it has no findings, so no SARIF or GitHub annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DoctorFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
    Html,
    /// With `--merge` only: the shards' SARIF as one document.
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum GpuMode {
    /// Use the GPU when a driver is found; otherwise say so once and skip the GPU checks.
    #[default]
    Auto,
    /// Skip the GPU checks.
    Off,
    /// A missing driver is an error (exit 2).
    Require,
}

/// Options shared by every command that walks a tree.
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Files or directories to process (default: the current directory); `-` reads one source
    /// from stdin (with --stdin-filename).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Config file (default: gpu-homogenize.toml at the tree root).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Files larger than this many bytes are skipped with an error.
    #[arg(long, value_name = "BYTES", default_value_t = crate::engine::run::DEFAULT_MAX_FILE_SIZE)]
    pub max_file_size: u64,
    /// The path a source read from stdin (`-`) is judged as: its config, rules and phase.
    #[arg(long, value_name = "PATH")]
    pub stdin_filename: Option<PathBuf>,
    /// Worker threads for the CPU stage (default: one per core).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub jobs: Option<u16>,
    /// Read every file, and keep no cache (`.gpu-homogenize/cache/`) of this run.
    #[arg(long)]
    pub no_cache: bool,
    /// Keep the cache in DIR (below `DIR/gpu-homogenize/`) instead of the tree: a CI cache
    /// restored into a fresh checkout (`actions/cache`). Also `GPU_HOMOGENIZE_CACHE_DIR`.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache_dir: Option<PathBuf>,
    /// Check only shard I of N (1-based) of the files, chosen by a stable hash of each path: the
    /// jobs of a CI matrix split one tree (the project index still covers all of it).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(u32, u32)>,
    #[command(flatten)]
    pub lint: LintArgs,
}

/// Rule selection and file exclusion, with ruff's names; on top of the config's `[lint]`.
#[derive(Debug, Clone, Default, Args)]
pub struct LintArgs {
    /// Rule codes or prefixes to enable (replaces the config's `select`), e.g. GH1,GH001.
    #[arg(long, value_delimiter = ',', value_name = "RULE_CODE")]
    pub select: Option<Vec<String>>,
    /// Rule codes or prefixes to enable on top of `select`.
    #[arg(long, value_delimiter = ',', value_name = "RULE_CODE")]
    pub extend_select: Vec<String>,
    /// Rule codes or prefixes to disable.
    #[arg(long, value_delimiter = ',', value_name = "RULE_CODE")]
    pub ignore: Vec<String>,
    /// Globs of files and directories to leave out (replaces the config's `exclude`).
    #[arg(long, value_delimiter = ',', value_name = "FILE_PATTERN")]
    pub exclude: Vec<String>,
    /// Globs to leave out on top of `exclude`.
    #[arg(long, value_delimiter = ',', value_name = "FILE_PATTERN")]
    pub extend_exclude: Vec<String>,
    /// Rules to disable in the files a glob matches: GLOB:CODE[,CODE…] (repeatable).
    #[arg(long, value_name = "GLOB:CODES", value_parser = parse_per_file)]
    pub per_file_ignores: Vec<(String, Vec<String>)>,
    /// Include fixes that may not retain the original intent of the code (as ruff).
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Apply `exclude` to paths given by name too (for pre-commit, which names every file).
    #[arg(long)]
    pub force_exclude: bool,
    /// Report only findings that are not in this baseline (see `gpu-homogenize baseline`).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
}

impl LintArgs {
    pub fn settings(&self) -> crate::model::lint::LintSettings {
        let mut per_file = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (glob, codes) in &self.per_file_ignores {
            per_file
                .entry(glob.clone())
                .or_default()
                .extend(codes.iter().cloned());
        }
        crate::model::lint::LintSettings {
            select: self.select.clone(),
            extend_select: self.extend_select.clone(),
            ignore: self.ignore.clone(),
            exclude: self.exclude.clone(),
            extend_exclude: self.extend_exclude.clone(),
            per_file_ignores: per_file,
        }
    }
}

impl InputArgs {
    /// The options as the run engine takes them.
    pub fn run_input(&self) -> crate::engine::run::RunInput {
        crate::engine::run::RunInput {
            paths: self.paths.clone(),
            config: self.config.clone(),
            max_file_size: self.max_file_size,
            stdin_filename: self.stdin_filename.clone(),
            jobs: self.jobs,
            no_cache: self.no_cache,
            cache_dir: self.cache_dir.clone().or_else(|| {
                std::env::var_os("GPU_HOMOGENIZE_CACHE_DIR")
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
            }),
            shard: self.shard,
            lint: self.lint.settings(),
            unsafe_fixes: self.lint.unsafe_fixes,
            force_exclude: self.lint.force_exclude,
            baseline: self.lint.baseline.clone(),
        }
    }
}

fn parse_shard(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("`{text}` is not I/N with 1 <= I <= N (e.g. 2/4)");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

fn parse_per_file(text: &str) -> Result<(String, Vec<String>), String> {
    let (glob, codes) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("`{text}` is not GLOB:CODE[,CODE…]"))?;
    let codes: Vec<String> = codes
        .split(',')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    if glob.is_empty() || codes.is_empty() {
        return Err(format!("`{text}` is not GLOB:CODE[,CODE…]"));
    }
    Ok((glob.to_string(), codes))
}

/// Options of the GPU stage.
#[derive(Debug, Clone, Args)]
pub struct GpuArgs {
    /// Whether the GPU check runs.
    #[arg(long, value_enum, default_value_t = GpuMode::Auto)]
    pub gpu: GpuMode,
    /// Also run the file itself in the GPU slot, e.g. 'python3 {file}'.
    #[arg(long, value_name = "CMD")]
    pub gpu_cmd: Option<String>,
    /// MiB the probe allocates and frees on device 0.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub probe_mib: u64,
    /// Seconds a probe (or --gpu-cmd) may run before it is killed.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = parse_timeout)]
    pub gpu_timeout: f64,
}

/// Longest `--gpu-timeout`: a week. Anything longer is a mistake, not a timeout.
pub const MAX_GPU_TIMEOUT: f64 = 7.0 * 24.0 * 3600.0;

impl GpuArgs {
    /// The options as the GPU slot takes them.
    pub fn settings(&self) -> crate::engine::run::GpuSettings {
        use crate::engine::run::GpuMode as Mode;
        crate::engine::run::GpuSettings {
            mode: match self.gpu {
                GpuMode::Auto => Mode::Auto,
                GpuMode::Off => Mode::Off,
                GpuMode::Require => Mode::Require,
            },
            check: crate::engine::gpu::CheckSettings {
                probe_mib: self.probe_mib,
                timeout_secs: self.gpu_timeout,
                gpu_cmd: self.gpu_cmd.clone(),
            },
        }
    }
}

fn parse_timeout(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= MAX_GPU_TIMEOUT) {
        return Err(format!(
            "must be more than 0 and at most {MAX_GPU_TIMEOUT} seconds (a week)"
        ));
    }
    Ok(secs)
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[arg(long, visible_alias = "output-format", value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Also list GPU touchpoints (imports at top level, lazy imports, imports in __init__.py).
    #[arg(long)]
    pub touchpoints: bool,
    /// Show counts for every rule with findings, instead of the findings.
    #[arg(long)]
    pub statistics: bool,
    /// List, file by file, the findings `gpu-homogenize fix` would fix (ruff's --show-fixes).
    #[arg(long)]
    pub show_fixes: bool,
    /// Also say why each Python file is a program or a library, and the chain of code by which
    /// a program reaches GPU code (JSON always has it, as `evidence`).
    #[arg(short, long)]
    pub verbose: bool,
    /// Suppress every current finding with a `noqa` comment and a reason (writes the files).
    #[arg(long, conflicts_with = "format")]
    pub add_noqa: bool,
}

#[derive(Debug, Args)]
pub struct BaselineArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Where to write it.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "gpu-homogenize-baseline.json"
    )]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct RuleArgs {
    /// A rule code, e.g. GH101.
    #[arg(value_name = "CODE", required_unless_present = "all")]
    pub code: Option<String>,
    /// List every rule with its fix safety.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct FixArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Show what would change as unified diffs and a summary; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Avoid writing any fixed files back; instead, output a diff for each changed file to
    /// stdout (as ruff's --diff).
    #[arg(long)]
    pub diff: bool,
    /// Keep a copy of every original here (same relative path) before rewriting it.
    #[arg(long, value_name = "DIR")]
    pub backup_dir: Option<PathBuf>,
    /// Rewrite files with several hard links too (the rewritten name gets its own copy;
    /// the other names keep the original).
    #[arg(long)]
    pub break_hardlinks: bool,
    #[arg(long, visible_alias = "output-format", value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Show counts for every rule left with findings, instead of the findings.
    #[arg(long)]
    pub statistics: bool,
    /// Do not append this run to .gpu-homogenize/journal.jsonl.
    #[arg(long)]
    pub no_journal: bool,
    /// List, file by file, the fixes applied (or, with --dry-run, that would be) as ruff's
    /// --show-fixes.
    #[arg(long)]
    pub show_fixes: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
    #[arg(long, visible_alias = "output-format", value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Do not append this run to .gpu-homogenize/journal.jsonl.
    #[arg(long)]
    pub no_journal: bool,
    /// Show counts for every rule with findings, instead of the findings.
    #[arg(long)]
    pub statistics: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Tree root (default: the current directory).
    pub root: Option<PathBuf>,
    /// md, json or html (default: md); with --merge, the shards' own format (json or sarif).
    #[arg(long, visible_alias = "output-format", value_enum)]
    pub format: Option<ReportFormat>,
    /// Merge the JSON or SARIF outputs of `scan`/`check --shard I/N` (every shard, once) into the
    /// document one unsharded run prints; exit as that run would.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 1..,
        conflicts_with_all = ["root", "config", "no_cache"]
    )]
    pub merge: Vec<PathBuf>,
    /// Journals of the same mission from other hosts (each host's
    /// `.gpu-homogenize/journal.jsonl`, collected by your scheduler or CI), merged with the
    /// tree's own: the GPU checks are kept per host.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub journal: Vec<PathBuf>,
    /// Write the report here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Read every file, and keep no cache (`.gpu-homogenize/cache/`) of this run.
    #[arg(long)]
    pub no_cache: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Replace an existing gpu-homogenize.toml.
    #[arg(long)]
    pub force: bool,
    /// Print the proposal instead of writing it.
    #[arg(long)]
    pub stdout: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(long, visible_alias = "output-format", value_enum, default_value_t = DoctorFormat::Text)]
    pub format: DoctorFormat,
}

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// The command and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// MiB to allocate and free on device 0.
    #[arg(long, default_value_t = 64)]
    pub mib: u64,
    /// Only list the visible devices in CUDA's order (no context, no allocation).
    #[arg(long)]
    pub list: bool,
    /// Hold the buffer this many milliseconds, then free it, instead of waiting for the
    /// parent's answer: a worker of a `--gpu-cmd` (tests, scripts/gpu/real-check.sh).
    #[arg(long, value_name = "MS")]
    pub hold_ms: Option<u64>,
}
