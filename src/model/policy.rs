//! The policy (what every GPU file must select) and the mission phases, from `gpu-homogenize.toml`.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

mod check;
mod located;

pub use check::{mask_entries, parse_bus_id, same_bus_id, Key, MaskEntry, Problem, DEVICE_ORDERS};

/// Whether a mask's first entry names a card by UUID or MIG id (CUDA reads a mask of one kind).
fn mask_by_uuid(mask: &str) -> bool {
    matches!(
        mask_entries(mask).first(),
        Some((_, Ok(MaskEntry::Uuid(_))))
    )
}

/// Name of the config file looked up at the tree root.
pub const CONFIG_FILE: &str = "gpu-homogenize.toml";

/// The Python project file whose `[tool.gpu-homogenize]` table is read when there is no
/// `gpu-homogenize.toml` beside it (as ruff prefers `ruff.toml` over `pyproject.toml`).
pub const PYPROJECT: &str = "pyproject.toml";

/// How a physical card is recognised through NVML. Every field that is set must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardSelector {
    /// Substring of the NVML device name, e.g. "RTX 3090".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_memory_gib: Option<f64>,
    /// PCI bus id as NVML prints it, e.g. "00000000:02:00.0" (compared leniently on the domain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

impl CardSelector {
    /// A short human name for the card, used in headers and messages.
    pub fn label(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        if let Some(uuid) = &self.uuid {
            return uuid.clone();
        }
        if let Some(bus) = &self.pci_bus_id {
            return format!("GPU {bus}");
        }
        "GPU".to_string()
    }
}

/// The `[policy]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    pub visible_devices: String,
    pub device_order: String,
    /// Empty means: leave `PYTORCH_CUDA_ALLOC_CONF` out of the header.
    pub alloc_conf: String,
    pub target: CardSelector,
    pub forbidden: Vec<CardSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python_template: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rust_template: Option<PathBuf>,
    pub leak_alert_mib: f64,
    pub leak_fail_mib: f64,
    /// Code runs under a scheduler that assigns cards (Slurm, Ray, Kubernetes): the header only
    /// sets the variables when they are unset (`os.environ.setdefault`).
    pub respect_scheduler: bool,
    /// Name of the validation function the template adds; derived from the target by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validate_function: Option<String>,
    /// Which files carry the header: the entry points of programs (the default), or every file
    /// with GPU code (a mission that asks for the header in each file).
    pub scope: Scope,
}

/// Where the header goes (`[policy] scope`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// CUDA reads the mask once per process: the header goes into the entry points whose
    /// program reaches GPU code; library modules get none, and are judged through the programs
    /// that import them.
    #[default]
    Programs,
    /// Every file with GPU code carries the header (the seed's mission).
    EveryGpuFile,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            visible_devices: "1".into(),
            device_order: "PCI_BUS_ID".into(),
            alloc_conf: "max_split_size_mb:1024".into(),
            target: CardSelector {
                name: Some("RTX 3090".into()),
                min_memory_gib: Some(20.0),
                ..CardSelector::default()
            },
            forbidden: vec![CardSelector {
                name: Some("RTX 5060 Ti".into()),
                ..CardSelector::default()
            }],
            python_template: None,
            rust_template: None,
            leak_alert_mib: 100.0,
            leak_fail_mib: 50.0,
            respect_scheduler: false,
            validate_function: None,
            scope: Scope::Programs,
        }
    }
}

impl Policy {
    /// The value the header gives each managed variable; `None` when the variable is left out.
    pub fn env_value(&self, var: EnvVar) -> Option<&str> {
        match var {
            EnvVar::VisibleDevices => Some(&self.visible_devices),
            EnvVar::DeviceOrder => Some(&self.device_order),
            EnvVar::AllocConf => (!self.alloc_conf.is_empty()).then_some(self.alloc_conf.as_str()),
        }
    }

    /// Whether the policy's mask names its cards by UUID or MIG id: `CUDA_DEVICE_ORDER` then
    /// changes nothing about which card is selected.
    pub fn mask_by_uuid(&self) -> bool {
        mask_by_uuid(&self.visible_devices)
    }

    /// What a `CUDA_VISIBLE_DEVICES` value written in a file selects, when it names cards by
    /// UUID or MIG id (an index mask's card depends on the order, said elsewhere): each entry as
    /// the policy's cards are named (CUDA takes a UUID prefix), `None` for an index mask.
    pub fn mask_selects(&self, mask: &str) -> Option<String> {
        if !mask_by_uuid(mask) {
            return None;
        }
        let mut parts = Vec::new();
        for (_, entry) in mask_entries(mask) {
            let part = match entry {
                Ok(MaskEntry::Uuid(id)) if id.starts_with("MIG-") => {
                    "a MIG instance, listed by `doctor`".to_string()
                }
                Ok(MaskEntry::Uuid(id)) => {
                    let names = |c: &CardSelector| {
                        c.uuid.as_deref().is_some_and(|u| {
                            u.to_ascii_lowercase().starts_with(&id.to_ascii_lowercase())
                        })
                    };
                    if names(&self.target) {
                        format!("the {} by UUID", self.target.label())
                    } else if let Some(bad) = self.forbidden.iter().find(|c| names(c)) {
                        format!("the forbidden {} by UUID", bad.label())
                    } else {
                        "a card the policy names by no UUID".to_string()
                    }
                }
                Ok(MaskEntry::Index(i)) => format!("card {i} in CUDA's order"),
                Err(_) => break,
            };
            parts.push(part);
        }
        Some(format!(
            "{}, whatever `CUDA_DEVICE_ORDER` says",
            parts.join(", then ")
        ))
    }

    /// The device index the target card gets once `CUDA_VISIBLE_DEVICES` is applied.
    pub fn masked_index(&self) -> u64 {
        0
    }

    /// How many devices the mask leaves visible.
    pub fn visible_count(&self) -> usize {
        self.visible_devices
            .split(',')
            .filter(|e| !e.trim().is_empty())
            .count()
    }

    /// What an index written for the unmasked machine becomes under the mask: an index the
    /// mask lists moves to its position in the list; one below the visible count that the mask
    /// does not list keeps its number; anything else selects no device.
    pub fn remap_index(&self, index: u64) -> Remap {
        let entries: Vec<&str> = self.visible_devices.split(',').map(str::trim).collect();
        if let Some(pos) = entries
            .iter()
            .position(|e| e.parse::<u64>().ok() == Some(index))
        {
            return if pos as u64 == index {
                Remap::Keep
            } else {
                Remap::To(pos as u64)
            };
        }
        if (index as usize) < self.visible_count() {
            Remap::Keep
        } else {
            Remap::Invalid
        }
    }

    /// The name of the validation function the template defines.
    pub fn validate_function_name(&self) -> String {
        if let Some(name) = &self.validate_function {
            return name.clone();
        }
        let slug: String = self
            .target
            .label()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        let slug = if slug.is_empty() {
            "gpu".to_string()
        } else {
            slug
        };
        format!("validate_{slug}_mandatory")
    }
}

/// What a device index becomes once the mask is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remap {
    Keep,
    To(u64),
    /// No visible device has that index.
    Invalid,
}

/// The environment variables the header owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EnvVar {
    VisibleDevices,
    DeviceOrder,
    AllocConf,
}

impl EnvVar {
    pub const ALL: [EnvVar; 3] = [
        EnvVar::VisibleDevices,
        EnvVar::DeviceOrder,
        EnvVar::AllocConf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EnvVar::VisibleDevices => "CUDA_VISIBLE_DEVICES",
            EnvVar::DeviceOrder => "CUDA_DEVICE_ORDER",
            EnvVar::AllocConf => "PYTORCH_CUDA_ALLOC_CONF",
        }
    }

    pub fn from_name(name: &str) -> Option<EnvVar> {
        EnvVar::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// One `[[phase]]` of the mission.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    pub name: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub globs: Vec<String>,
}

/// The whole config file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub policy: Policy,
    #[serde(default, rename = "phase")]
    pub phases: Vec<PhaseSpec>,
    /// Which rules run where: ruff's `select`, `ignore`, `exclude`, `per-file-ignores`.
    #[serde(default)]
    pub lint: crate::model::lint::LintSettings,
    /// Apply unsafe fixes too, as `--unsafe-fixes` (ruff's top-level `unsafe-fixes`).
    #[serde(default, rename = "unsafe-fixes")]
    pub unsafe_fixes: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "{}: cannot read config: {why}",
        crate::model::outcome::display_path(path)
    )]
    Read { path: PathBuf, why: String },
    #[error(
        "{}: invalid config: {message}",
        crate::model::outcome::display_path(path)
    )]
    Parse { path: PathBuf, message: String },
}

/// `pyproject.toml` as far as this tool reads it: its `[tool.gpu-homogenize]` table, read from
/// the text itself so that an error in it has a line, as the standalone file's do.
#[derive(Deserialize)]
struct Pyproject {
    #[serde(default)]
    tool: Option<PyprojectTool>,
}

#[derive(Deserialize)]
struct PyprojectTool {
    #[serde(default, rename = "gpu-homogenize")]
    gpu_homogenize: Option<Config>,
}

impl Config {
    /// The config in `text`, read from `path` (a `pyproject.toml` by its name); its policy's
    /// values are checked here, so a typo stops the run before any file is read.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let parse_error = |message: String| ConfigError::Parse {
            path: path.to_path_buf(),
            message,
        };
        let toml_error = |e: toml::de::Error| parse_error(toml_message(&e, text));
        let pyproject = path.file_name().is_some_and(|n| n == PYPROJECT);
        let config: Config = if pyproject {
            let file: Pyproject = toml::from_str(text).map_err(toml_error)?;
            file.tool.and_then(|t| t.gpu_homogenize).unwrap_or_default()
        } else {
            toml::from_str(text).map_err(toml_error)?
        };
        config.check_glob_budget().map_err(parse_error)?;
        config
            .lint
            .validate()
            .map_err(|m| parse_error(format!("[lint]: {}", bounded(&m, MESSAGE_CHARS))))?;
        for phase in &config.phases {
            for glob in &phase.globs {
                Glob::new(glob).map_err(|e| {
                    parse_error(format!(
                        "phase `{}`: bad glob `{}`: {}",
                        excerpt(&phase.name),
                        excerpt(glob),
                        excerpt(&e.kind().to_string())
                    ))
                })?;
            }
        }
        let problems = config.policy.problems();
        if !problems.is_empty() {
            let prefix: &[&'static str] = if pyproject {
                &["tool", "gpu-homogenize", "policy"]
            } else {
                &["policy"]
            };
            return Err(parse_error(policy_message(text, prefix, &problems)));
        }
        Ok(config)
    }
}

/// Each problem of a policy where it is written (the line, carets under the value), or with
/// its key when the value is a default; at most a few, then how many more.
fn policy_message(text: &str, prefix: &[&'static str], problems: &[Problem]) -> String {
    const SHOWN: usize = 5;
    let mut blocks: Vec<String> = problems
        .iter()
        .take(SHOWN)
        .map(|problem| {
            let Some(span) = located::span_of(text, prefix, &problem.key) else {
                return format!(
                    "{}: {}",
                    problem.dotted(),
                    bounded(&problem.message, MESSAGE_CHARS)
                );
            };
            // An entry of a string written without escapes is underlined on its own.
            let range = match (&problem.within, unescaped_string(&text[span.clone()])) {
                (Some(within), Some(value)) if within.end <= value.len() => {
                    let at = span.start + 1;
                    at + within.start..at + within.end.max(within.start + 1)
                }
                _ => span,
            };
            located::located(text, range, &problem.message)
        })
        .collect();
    if problems.len() > SHOWN {
        blocks.push(format!("and {} more", problems.len() - SHOWN));
    }
    blocks.join("\n")
}

/// The text between the quotes of a one-line string with no escape in it: then a byte of the
/// value is a byte of the file.
fn unescaped_string(quoted: &str) -> Option<&str> {
    let inner = quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .or_else(|| quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')))?;
    let plain = !inner.contains(['\\', '"', '\'', '\n', '\r']);
    plain.then_some(inner)
}

impl Config {
    /// Globs cost memory when compiled (a regex each, hundreds of bytes per `*`): together,
    /// the config's may hold at most [`GLOB_BUDGET`] bytes of pattern, so a crafted config
    /// cannot make the tool run out of memory. Real configs hold a few hundred.
    fn check_glob_budget(&self) -> Result<(), String> {
        let lint = &self.lint;
        let globs = lint
            .exclude
            .iter()
            .chain(&lint.extend_exclude)
            .chain(lint.per_file_ignores.keys())
            .chain(self.phases.iter().flat_map(|p| &p.globs));
        let (mut count, mut bytes) = (0usize, 0usize);
        for glob in globs {
            count += 1;
            bytes += glob.len();
        }
        if bytes > GLOB_BUDGET {
            return Err(format!(
                "its {count} globs (exclude, extend-exclude, per-file-ignores, phases) hold {bytes} bytes; at most {GLOB_BUDGET} are read"
            ));
        }
        Ok(())
    }
}

/// The most bytes of glob patterns a config may hold (see `Config::check_glob_budget`).
pub const GLOB_BUDGET: usize = 64 << 10;

/// A TOML error as the user can act on it: where (line and column), what, and at most a short
/// escaped excerpt of the line — never the whole line, which may be anything the tree holds.
fn toml_message(e: &toml::de::Error, text: &str) -> String {
    match e
        .span()
        .filter(|s| s.start <= text.len() && s.end <= text.len())
    {
        Some(span) => located::located(text, span, e.message()),
        None => bounded(e.message(), MESSAGE_CHARS),
    }
}

/// At most [`EXCERPT_CHARS`] characters of `text`, escaped for a terminal or a CI log.
pub fn excerpt(text: &str) -> String {
    bounded(text, EXCERPT_CHARS)
}

/// Text of the config as an error prints it: its hidden characters escaped.
fn printable_text(text: &str) -> String {
    crate::model::outcome::printable(text).into_owned()
}

fn bounded(text: &str, chars: usize) -> String {
    let mut cut: String = text.chars().take(chars).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    crate::model::outcome::printable(&cut).into_owned()
}

/// How much of a config line an error quotes.
pub const EXCERPT_CHARS: usize = 80;
/// How much of the parser's message (which may quote a value) an error shows.
const MESSAGE_CHARS: usize = 400;

/// Phases compiled for matching root-relative paths (always with `/` separators).
#[derive(Debug, Clone, Default)]
pub struct Phases {
    phases: Vec<(String, Vec<String>, GlobSet)>,
}

/// Name of the phase that collects the files no declared phase claims.
pub const OTHER_PHASE: &str = "Other";

impl Phases {
    pub fn new(specs: &[PhaseSpec]) -> Phases {
        let phases = specs
            .iter()
            .map(|spec| {
                let mut builder = GlobSetBuilder::new();
                for glob in &spec.globs {
                    if let Ok(g) = Glob::new(glob) {
                        builder.add(g);
                    }
                }
                let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
                let files = spec.files.iter().map(|f| normalize_rel(f)).collect();
                (spec.name.clone(), files, set)
            })
            .collect();
        Phases { phases }
    }

    /// The first declared phase that claims `rel` (a root-relative path), if any.
    pub fn phase_of(&self, rel: &str) -> Option<&str> {
        let rel = normalize_rel(rel);
        self.phases
            .iter()
            .find(|(_, files, globs)| files.contains(&rel) || globs.is_match(&rel))
            .map(|(name, _, _)| name.as_str())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.phases.iter().map(|(name, _, _)| name.as_str())
    }

    /// Files listed by name in some phase, root-relative.
    pub fn listed_files(&self) -> impl Iterator<Item = (&str, &str)> {
        self.phases
            .iter()
            .flat_map(|(name, files, _)| files.iter().map(move |f| (name.as_str(), f.as_str())))
    }
}

fn normalize_rel(path: &str) -> String {
    let path = path.replace('\\', "/");
    path.trim_start_matches("./").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_seed() {
        let p = Policy::default();
        assert_eq!(p.env_value(EnvVar::VisibleDevices), Some("1"));
        assert_eq!(p.env_value(EnvVar::DeviceOrder), Some("PCI_BUS_ID"));
        assert_eq!(
            p.env_value(EnvVar::AllocConf),
            Some("max_split_size_mb:1024")
        );
    }

    #[test]
    fn phases_match_files_then_globs() {
        let phases = Phases::new(&[
            PhaseSpec {
                name: "Core".into(),
                files: vec!["utils/gpu_manager.py".into()],
                globs: vec![],
            },
            PhaseSpec {
                name: "Tests".into(),
                files: vec![],
                globs: vec!["**/test_*.py".into()],
            },
        ]);
        assert_eq!(phases.phase_of("./utils/gpu_manager.py"), Some("Core"));
        assert_eq!(phases.phase_of("tests/test_cuda.py"), Some("Tests"));
        assert_eq!(phases.phase_of("test_cuda.py"), Some("Tests"));
        assert_eq!(phases.phase_of("other.py"), None);
    }

    /// A bounded fuzz of the config loader: valid configs with bytes flipped, cut, repeated
    /// and salted with control, bidi and `::` text never panic, and no error quotes more
    /// than a short excerpt of a line or passes an ESC or a newline-led workflow command.
    #[test]
    fn the_config_loader_never_panics_and_never_quotes_much() {
        let seeds = [
            "[policy]\nvisible_devices = \"1\"\ndevice_order = \"PCI_BUS_ID\"\n[[phase]]\nname = \"Core\"\nglobs = [\"src/**\"]\n",
            "[lint]\nselect = [\"GH1\"]\nexclude = [\"build/*\"]\n[lint.per-file-ignores]\n\"tests/*\" = [\"GH101\"]\n",
            "[tool.gpu-homogenize.policy]\nalloc_conf = \"\"\n[tool.ruff]\nline-length = 99\n",
        ];
        let salts: [&[u8]; 6] = [
            b"\x1b[31m",
            "\u{202e}".as_bytes(),
            b"\n::error::x\n",
            b"[[",
            b"\"",
            b"\xff",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for i in 0..3000 {
            let seed = seeds[i % seeds.len()].as_bytes();
            let mut bytes = seed.to_vec();
            for _ in 0..1 + next(4) {
                let at = next(bytes.len() + 1);
                match next(4) {
                    0 => {
                        let salt = salts[next(salts.len())];
                        bytes.splice(at..at, salt.iter().copied());
                    }
                    1 => bytes.truncate(at),
                    2 => {
                        let long = vec![b'x'; 300 + next(3000)];
                        bytes.splice(at..at, long);
                    }
                    _ => {
                        if let Some(b) = bytes.get_mut(at) {
                            *b ^= 1 << next(8);
                        }
                    }
                }
            }
            let text = String::from_utf8_lossy(&bytes);
            let name = if i % 3 == 2 { PYPROJECT } else { CONFIG_FILE };
            if let Err(e) = Config::parse(&text, Path::new(name)) {
                let message = e.to_string();
                assert!(!message.contains('\u{1b}'), "{message}");
                assert!(!message.contains('\u{202e}'), "{message}");
                assert!(!message.contains("\n::"), "{message}");
                for line in message.lines() {
                    assert!(line.chars().count() < 600, "{message}");
                }
            }
        }
    }
}
