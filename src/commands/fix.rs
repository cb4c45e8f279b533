//! `gpu-homogenize fix`: rewrite, validate, write, journal (never under `--dry-run` or
//! `--diff`).

use super::present::{findings_text, machine, streamed, streams, Ending};
use super::{absolute, exit_status, gpu_failed};
use std::path::{Path, PathBuf};

use crate::cli::{FixArgs, GlobalArgs, OutputFormat};
use crate::engine::process::Mode;
use crate::engine::run::{engine, execute, execute_stdin, execute_streaming, setup, stdin_path};
use crate::model::outcome::FileStatus;
use crate::report::progress::phase_lines;
use crate::report::text;

pub fn run(args: FixArgs, global: &GlobalArgs) -> anyhow::Result<i32> {
    super::present::refuse_unhonoured(
        args.format,
        &[
            (args.statistics, "--statistics"),
            (args.diff, "--diff"),
            (args.show_fixes, "--show-fixes"),
        ],
    )?;
    let input = args.input.run_input();
    let gpu = args.gpu.settings();
    let setup = setup(&input)?;
    if let Some(name) = stdin_path(&input)? {
        return stdin(&args, global, &setup, &name);
    }
    // `--diff` as ruff has it: print the diffs, write nothing.
    let dry_run = args.dry_run || args.diff;
    let mut engine = engine(&setup, &input, Mode::Fix { dry_run })?;
    engine.want_diff = dry_run;
    engine.write.backup_dir = match &args.backup_dir {
        Some(dir) => Some(backup_dir(&setup.root, dir)?),
        None => None,
    };
    engine.write.break_hardlinks = args.break_hardlinks;
    let gpu = (!dry_run).then_some(&gpu);
    let command = if dry_run { "fix --dry-run" } else { "fix" };
    // A dry run writes nothing, the journal included.
    let journal = (!args.no_journal && !dry_run).then_some(command);
    let left = |s: &crate::model::summary::Summary| {
        if dry_run {
            s.files_fixed + s.count(FileStatus::NonCompliant) > 0
        } else {
            s.count(FileStatus::NonCompliant) > 0 || s.cpu_failed > 0 || gpu_failed(s)
        }
    };
    let policy = &setup.config.policy;
    let text = args.format == OutputFormat::Text;
    let sharded = args.input.shard.is_some();
    if !(dry_run && text) && streams(args.format, args.statistics, args.show_fixes, sharded) {
        let ending = Ending {
            command,
            after_fix: true,
            phases: Some(&setup.config.phases),
        };
        let summary = streamed(args.format, ending, global, &setup.root, policy, |sink| {
            execute_streaming(&setup, &engine, &input, gpu, journal, sink)
        })?;
        return Ok(exit_status(&summary, left));
    }
    let (outcomes, summary) = if dry_run && text {
        // The diffs come first: each printed as its file finishes, and let go.
        let mut outcomes = Vec::new();
        let summary =
            execute_streaming(&setup, &engine, &input, gpu, journal, &mut |mut outcome| {
                let diff = outcome.diff.take().unwrap_or_default();
                outcomes.push(outcome);
                crate::base::escape::source_lines(&diff).into_owned()
            })?;
        (outcomes, summary)
    } else {
        execute(&setup, &engine, &input, gpu, journal)?
    };
    if machine(
        args.format,
        command,
        &setup.root,
        policy,
        &outcomes,
        &summary,
    )? {
        // Printed: the machine formats carry everything.
    } else if args.diff {
        if args.show_fixes {
            err!("{}", text::fixes(&outcomes, command));
        }
        err!("{}", text::errors(&outcomes));
        if !global.quiet {
            err!("{}", text::summary(command, &summary));
            err!("{}", text::held_fixes(&outcomes));
        }
    } else {
        // A dry run lists every finding, `[*]` on those it would fix; a real run, what is left.
        out!(
            "{}",
            findings_text(&outcomes, args.statistics, !args.dry_run, global)
        );
        if args.show_fixes {
            out!("{}", text::fixes(&outcomes, command));
        }
        out!("{}", text::gpu_checks(&outcomes));
        err!("{}", text::errors(&outcomes));
        if !global.quiet {
            out!("{}", text::summary(command, &summary));
            out!("{}", text::held_fixes(&outcomes));
            out!("{}", phase_lines(&setup.config.phases, &outcomes));
        }
    }
    Ok(exit_status(&summary, left))
}

/// `fix -`: the source read from stdin, fixed as the file `name` of the tree would be, printed
/// to stdout as ruff prints it (unchanged when there is nothing to fix or it cannot be fixed);
/// what is left goes to stderr. Nothing is written, the journal included.
fn stdin(
    args: &FixArgs,
    global: &GlobalArgs,
    setup: &crate::engine::run::Setup,
    name: &Path,
) -> anyhow::Result<i32> {
    let input = args.input.run_input();
    let mut engine = engine(setup, &input, Mode::Fix { dry_run: true })?;
    engine.want_diff = args.diff;
    engine.keep_rewrite = true;
    let source = super::read_stdin()?;
    let (outcomes, summary) = execute_stdin(setup, &engine, &input, name, source.clone())?;
    let policy = &setup.config.policy;
    let command = "fix --dry-run";
    if machine(
        args.format,
        command,
        &setup.root,
        policy,
        &outcomes,
        &summary,
    )? {
        // Printed: the machine formats carry everything.
    } else if args.diff {
        print_diffs(&outcomes)?;
    } else {
        let fixed = outcomes.iter().find_map(|o| o.rewritten.as_deref());
        let bytes = match fixed {
            // Written back in the encoding its cookie declares, as a file would be.
            Some(text) => crate::fs::source::codec::encode_declared(text)
                .unwrap_or_else(|_| text.as_bytes().to_vec()),
            None => source,
        };
        crate::base::output::write_bytes(&bytes)?;
    }
    if args.format == crate::cli::OutputFormat::Text {
        err!(
            "{}",
            findings_text(&outcomes, args.statistics, true, global)
        );
        err!("{}", text::errors(&outcomes));
        if args.show_fixes {
            // The source printed is the fixed one.
            err!("{}", text::fixes(&outcomes, "fix"));
        }
    }
    // `--diff`: 1 when there is a diff (as ruff); otherwise 1 when something is left.
    let any_diff = args.diff && outcomes.iter().any(|o| o.diff.is_some());
    let left = |s: &crate::model::summary::Summary| any_diff || s.violations > s.fixed;
    Ok(exit_status(&summary, left))
}

/// The backup directory, refused when it would lose or expose the originals or hide files of
/// the tree: the tree root itself (a backup would be the file), a path through a symbolic link or
/// a file of the tree, or a directory of the tree holding files of its own (marked as a backup
/// dir, they would be left out of every later walk). In the tree it is named by its path under
/// the root (written with no link followed) and left out of the walk, so a later `fix` never
/// rewrites a backup; outside it, it is the user's choice.
fn backup_dir(root: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let shown = || crate::model::outcome::display_path(dir);
    let lexical = lexical(&absolute(dir));
    if std::fs::symlink_metadata(&lexical).is_ok_and(|m| m.file_type().is_symlink()) {
        anyhow::bail!(
            "--backup-dir {}: is a symbolic link; name the directory itself",
            shown()
        );
    }
    // Outside the tree by name, but reached into it through a link the user typed: in it.
    let in_tree = match lexical.strip_prefix(root) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => match resolved(&lexical).strip_prefix(resolved(root)) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => return Ok(lexical),
        },
    };
    if in_tree.as_os_str().is_empty() {
        anyhow::bail!(
            "--backup-dir {}: is the tree root; the backups would replace the files they keep",
            shown()
        );
    }
    let mut at = root.to_path_buf();
    for name in in_tree.components() {
        at.push(name);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            break;
        };
        let what = if meta.file_type().is_symlink() {
            "a symbolic link"
        } else if !meta.is_dir() {
            "a file"
        } else {
            continue;
        };
        anyhow::bail!(
            "--backup-dir {}: goes through {}, {what} of the tree; name a directory of the tree, or one outside it",
            shown(),
            crate::model::outcome::display_path(&at)
        );
    }
    let marked = at.join(crate::fs::write::BACKUP_MARKER).exists();
    if !marked && std::fs::read_dir(&at).is_ok_and(|mut d| d.next().is_some()) {
        anyhow::bail!(
            "--backup-dir {}: a directory of the tree that holds files of its own (made a backup dir, they would never be checked again); name a new or empty directory, or one outside the tree",
            shown()
        );
    }
    Ok(root.join(in_tree))
}

/// `path` without `.` and `..` components, read as written (the current directory is real).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` with the links of its longest existing part resolved.
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, n| p.join(n));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The unified diff of every file that has one, in the outcomes' order.
fn print_diffs(outcomes: &[crate::model::outcome::FileOutcome]) -> anyhow::Result<()> {
    for diff in outcomes.iter().filter_map(|o| o.diff.as_ref()) {
        out!("{}", crate::base::escape::source_lines(diff));
    }
    Ok(())
}
