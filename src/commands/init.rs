//! `gpu-homogenize init`: propose a `gpu-homogenize.toml` from a scan — the policy's values and
//! the phases (library modules and entry-point scripts first, test files second), with the
//! counts, for the coordinator to edit.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use super::EXIT_OK;
use crate::cli::InitArgs;
use crate::engine::process::Mode;
use crate::engine::run::{engine, execute, setup};
use crate::model::outcome::{FileOutcome, FileStatus};
use crate::model::policy::{PhaseSpec, Policy, CONFIG_FILE};

pub fn run(args: InitArgs) -> anyhow::Result<i32> {
    let input = args.input.run_input();
    let setup = setup(&input)?;
    // The plan `fix` would make under the proposed phases, proved, never written (no journal, no
    // GPU): a file in a phase must carry the header, which a module both run and imported cannot
    // (GH013 after the rewrite). Such a file is left out of the phases, and the plan checked again:
    // what is still refused is named, with why.
    let mut setup = setup;
    let dry_run = |setup: &crate::engine::run::Setup| -> anyhow::Result<Vec<FileOutcome>> {
        // Unsafe fixes as the config or `init --unsafe-fixes` say: the fixes `fix` will make.
        let engine = engine(setup, &input, Mode::Fix { dry_run: true })?;
        Ok(execute(setup, &engine, &input, None, None)?.0)
    };
    let outcomes = dry_run(&setup)?;
    let mut left_out: Vec<(String, String)> = Vec::new();
    setup.config.phases = phase_specs(&setup.root, &outcomes, &[]);
    let refused: Vec<(String, String)> = dry_run(&setup)?
        .iter()
        .filter(|o| o.fix_refused().is_some())
        .map(|o| (o.path.clone(), refusal(o)))
        .collect();
    let mut still: Vec<(String, String)> = Vec::new();
    if !refused.is_empty() {
        let out: Vec<&str> = refused.iter().map(|(p, _)| p.as_str()).collect();
        setup.config.phases = phase_specs(&setup.root, &outcomes, &out);
        let again = dry_run(&setup)?;
        for (path, why) in refused {
            match again
                .iter()
                .find(|o| o.path == path && o.fix_refused().is_some())
            {
                Some(o) => still.push((path, refusal(o))),
                None => left_out.push((path, why)),
            }
        }
    }
    let (policy, machine) = from_machine(&setup.config.policy);
    let mut text = render_in(
        &setup.root,
        &policy,
        &setup.config.phases,
        &outcomes,
        &left_out,
        &still,
    )?;
    for (path, why) in &left_out {
        err!(
            "{}: left out of the phases: in a phase `fix` cannot rewrite it ({}); in none it can\n",
            crate::base::escape::printable(path),
            crate::base::escape::printable(why)
        );
    }
    for (path, why) in &still {
        err!(
            "{}: `fix` cannot rewrite it under this config ({}): edit it by hand\n",
            crate::base::escape::printable(path),
            crate::base::escape::printable(why)
        );
    }
    text = with_machine_note(&text, &machine);
    if args.stdout {
        out!("{text}");
        return Ok(EXIT_OK);
    }
    let target = setup.root.join(CONFIG_FILE);
    if args.force {
        // Replaced as every output is: never through a link planted in the tree.
        let written = crate::fs::write::write_output(&setup.root, &target, text.as_bytes());
        crate::engine::leftovers::forget_own(&setup.root);
        written.map_err(|e| anyhow::anyhow!("cannot write the proposal: {e}"))?;
    } else {
        // O_EXCL: never replaces a config, never follows a symlink.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .with_context(|| {
                format!(
                    "{}: cannot write the proposal (it exists? edit it, or use --force or --stdout)",
                    crate::model::outcome::display_path(&target)
                )
            })?;
        file.write_all(text.as_bytes()).with_context(|| {
            format!(
                "{}: cannot write the proposal",
                crate::model::outcome::display_path(&target)
            )
        })?;
    }
    err!(
        "wrote {}: the policy and the phases proposed from this scan; edit it, then run `gpu-homogenize scan`\n",
        target.display()
    );
    Ok(EXIT_OK)
}

/// What the machine says about the cards, for the proposal's comments.
enum Machine {
    /// The cards NVML lists (PCI order), and the one proposed as the target.
    Cards(Vec<crate::engine::gpu::nvml::Card>, usize),
    /// No driver: why.
    NoDriver(String),
}

/// The policy proposed from the cards of this machine (what `doctor` sees): the card with the
/// most memory is the target, selected by its place in PCI bus order and named with its PCI
/// bus id; every other card is forbidden. Without a driver, the cards stay to be filled in.
fn from_machine(policy: &Policy) -> (Policy, Machine) {
    let gpus = match crate::engine::gpu::nvml::Gpus::open() {
        Ok(gpus) if !gpus.cards.is_empty() => gpus,
        Ok(_) => {
            return (
                policy.clone(),
                Machine::NoDriver("NVML lists no card".into()),
            )
        }
        Err(e) => return (policy.clone(), Machine::NoDriver(e)),
    };
    let cards = gpus.cards.clone();
    let target = (0..cards.len())
        .max_by(|&a, &b| {
            cards[a]
                .memory_mib
                .total_cmp(&cards[b].memory_mib)
                .then(b.cmp(&a))
        })
        .unwrap_or(0);
    let selector = |c: &crate::engine::gpu::nvml::Card| crate::model::policy::CardSelector {
        name: Some(
            c.name
                .trim_start_matches("NVIDIA ")
                .trim_start_matches("GeForce ")
                .to_string(),
        ),
        min_memory_gib: None,
        pci_bus_id: Some(c.pci_bus_id.clone()),
        // The exact card of this machine (another machine's cards have other UUIDs: edit the
        // selectors to a name and memory for a policy shared between machines).
        uuid: Some(c.uuid.clone()).filter(|u| !u.is_empty()),
    };
    let proposed = Policy {
        visible_devices: target.to_string(),
        device_order: "PCI_BUS_ID".into(),
        target: selector(&cards[target]),
        forbidden: cards
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != target)
            .map(|(_, c)| selector(c))
            .collect(),
        ..policy.clone()
    };
    (proposed, Machine::Cards(cards, target))
}

/// The proposal with what the machine showed: the cards, or why there are none and what to fill
/// in (the cards are never guessed: without a driver the policy's cards are commented out).
fn with_machine_note(text: &str, machine: &Machine) -> String {
    let mut note = String::new();
    match machine {
        Machine::Cards(cards, target) => {
            let _ = writeln!(note, "# The cards of this machine (NVML, PCI bus order), as `gpu-homogenize doctor` shows them:");
            for (i, c) in cards.iter().enumerate() {
                let role = if i == *target {
                    "target (most memory)"
                } else {
                    "forbidden"
                };
                let _ = writeln!(
                    note,
                    "#   {i}: {} ({:.0} GiB, PCI {}, {}) -> {role}",
                    c.name,
                    c.memory_mib / 1024.0,
                    c.pci_bus_id,
                    c.uuid
                );
            }
            let _ = writeln!(
                note,
                "# Check the target and the forbidden cards before you scan."
            );
            format!("{note}{text}")
        }
        Machine::NoDriver(why) => {
            for line in [
                format!("# No GPU driver here ({why})."),
                "# The cards are left for you to fill in (run `gpu-homogenize doctor` on the GPU".into(),
                "# machine): `visible_devices` (the target's place in PCI bus order), `target` and".into(),
                "# `forbidden`, by name, pci_bus_id or uuid. Until then the built-in defaults apply.".into(),
            ] {
                let _ = writeln!(note, "{line}");
            }
            // The policy's card keys and tables, commented out: never cards this machine did
            // not show.
            let mut commented = String::new();
            let mut in_card_table = false;
            for l in text.lines() {
                if l.starts_with('[') {
                    in_card_table =
                        l.starts_with("[policy.target]") || l.starts_with("[[policy.forbidden]]");
                } else if l.trim().is_empty() {
                    in_card_table = false;
                }
                let key = l.split([' ', '=']).next().unwrap_or("");
                let card_key = matches!(key, "visible_devices" | "target" | "forbidden");
                if (in_card_table || card_key) && !l.trim().is_empty() {
                    let _ = writeln!(commented, "# {l}");
                } else {
                    let _ = writeln!(commented, "{l}");
                }
            }
            format!("{note}{commented}")
        }
    }
}

/// What a file with GPU code is, for the proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Library,
    EntryPoint,
    Test,
}

pub fn kind_of(rel: &str, text: &str) -> Kind {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let in_tests = rel
        .split('/')
        .rev()
        .skip(1)
        .any(|d| d == "tests" || d == "test");
    if name.starts_with("test_") || name.ends_with("_test.py") || in_tests {
        Kind::Test
    } else if text.lines().any(|l| l.starts_with("if __name__"))
        || rel.ends_with("src/main.rs")
        || rel.contains("src/bin/")
    {
        Kind::EntryPoint
    } else {
        Kind::Library
    }
}

#[derive(Serialize)]
struct PolicyTable<'a> {
    policy: &'a Policy,
}

/// The files of each proposed phase: the code (library modules and entry points) and the tests
/// that do not comply yet, each listed by name; `left_out` in none.
fn classify<'a>(
    root: &Path,
    outcomes: &'a [FileOutcome],
    left_out: &[&str],
) -> (Vec<(&'a str, Kind)>, Vec<&'a str>, usize) {
    let mut core: Vec<(&str, Kind)> = Vec::new();
    let mut tests: Vec<&str> = Vec::new();
    let mut compliant = 0;
    for o in outcomes {
        match o.status {
            FileStatus::NonCompliant
            | FileStatus::NeedsReview
            | FileStatus::Error
            | FileStatus::WouldFix => {}
            FileStatus::Compliant => {
                compliant += 1;
                continue;
            }
            _ => continue,
        }
        if left_out.contains(&o.path.as_str()) {
            continue;
        }
        // Only a regular file of the tree (an error's path may be a link or a FIFO).
        let text = crate::fs::tree_file::read_text(
            root,
            Path::new(&o.path),
            crate::fs::tree_file::SETTINGS_LIMIT,
        )
        .ok()
        .flatten()
        .unwrap_or_default();
        match kind_of(&o.path, &text) {
            Kind::Test => tests.push(&o.path),
            kind => core.push((&o.path, kind)),
        }
    }
    (core, tests, compliant)
}

const CORE: &str = "Core modules";
const TESTS: &str = "Test scripts";

/// The proposed phases as the engine reads them.
fn phase_specs(root: &Path, outcomes: &[FileOutcome], left_out: &[&str]) -> Vec<PhaseSpec> {
    let (core, tests, _) = classify(root, outcomes, left_out);
    let spec = |name: &str, files: Vec<String>| PhaseSpec {
        name: name.into(),
        files,
        ..PhaseSpec::default()
    };
    vec![
        spec(CORE, core.iter().map(|(p, _)| p.to_string()).collect()),
        spec(TESTS, tests.iter().map(|p| p.to_string()).collect()),
    ]
}

/// The proposed config: the policy, then one phase for the code and one for the tests, each
/// file that does not comply yet listed by name; the files left out, and why.
fn render_in(
    root: &Path,
    policy: &Policy,
    phases: &[PhaseSpec],
    outcomes: &[FileOutcome],
    left_out: &[(String, String)],
    still: &[(String, String)],
) -> anyhow::Result<String> {
    let compliant = outcomes
        .iter()
        .filter(|o| o.status == FileStatus::Compliant)
        .count();
    let files = |name: &str| {
        phases
            .iter()
            .find(|p| p.name == name)
            .map_or(&[][..], |p| &p.files[..])
    };
    let (core, tests) = (files(CORE), files(TESTS));
    let entry_point = |p: &str| {
        let text = crate::fs::tree_file::read_text(
            root,
            Path::new(p),
            crate::fs::tree_file::SETTINGS_LIMIT,
        )
        .ok()
        .flatten()
        .unwrap_or_default();
        kind_of(p, &text) == Kind::EntryPoint
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Proposed by `gpu-homogenize init` from a scan of {} file(s) with GPU code that do not\n\
         # comply yet ({compliant} more already comply and are left out). Edit the policy and the\n\
         # phases, then run `gpu-homogenize scan`.\n",
        core.len() + tests.len() + left_out.len()
    );
    for (path, why) in left_out {
        let _ = writeln!(
            out,
            "# Left out of the phases (in \"Other\"): {}: in a phase `fix` cannot rewrite it ({}).",
            crate::base::escape::printable(path),
            crate::base::escape::printable(why)
        );
    }
    for (path, why) in still {
        let _ = writeln!(
            out,
            "# `fix` cannot rewrite {} under this config ({}): edit it by hand.",
            crate::base::escape::printable(path),
            crate::base::escape::printable(why)
        );
    }
    if !(left_out.is_empty() && still.is_empty()) {
        out.push('\n');
    }
    out.push_str(&toml::to_string(&PolicyTable { policy })?);
    let entry = core.iter().filter(|p| entry_point(p)).count();
    phase(
        &mut out,
        CORE,
        &format!(
            "{} file(s): {} library module(s), {entry} entry-point script(s)",
            core.len(),
            core.len() - entry
        ),
        core.iter().map(|p| {
            let note = if entry_point(p) {
                "  # entry-point script"
            } else {
                ""
            };
            (p.as_str(), note)
        }),
    );
    phase(
        &mut out,
        TESTS,
        &format!("{} test file(s)", tests.len()),
        tests.iter().map(|p| (p.as_str(), "")),
    );
    Ok(out)
}

fn phase<'a>(
    out: &mut String,
    name: &str,
    summary: &str,
    files: impl Iterator<Item = (&'a str, &'a str)>,
) {
    let _ = writeln!(
        out,
        "\n# {summary}\n[[phase]]\nname = \"{name}\"\nfiles = ["
    );
    for (path, note) in files {
        let quoted = toml::Value::String(path.to_string()).to_string();
        let _ = writeln!(out, "    {quoted},{note}");
    }
    out.push_str("]\n");
}

/// Why `fix` refuses a file's plan, in a line: the rule still present, and the rule that says
/// what to do by hand (a module run and imported: GH205).
fn refusal(o: &FileOutcome) -> String {
    let why = o.fix_refused().unwrap_or_default();
    let first = why.split(": ").next().unwrap_or(why);
    let guide = o.findings.iter().find(|f| f.severity == "review");
    match guide {
        Some(f) => format!("{first}; see `gpu-homogenize rule {}`", f.rule),
        None => first.to_string(),
    }
}
