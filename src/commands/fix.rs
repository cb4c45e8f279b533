//! `gpu-homogenize fix`: rewrite, validate, write, journal (never under `--dry-run` or
//! `--diff`).

use super::present::{findings_text, machine};
use super::{absolute, exit_status, gpu_failed};
use crate::cli::{FixArgs, GlobalArgs};
use crate::outcome::FileStatus;
use crate::process::Mode;
use crate::report::progress::phase_lines;
use crate::report::text;
use crate::run::{engine, execute, setup};

pub fn run(args: FixArgs, global: &GlobalArgs) -> anyhow::Result<i32> {
    let setup = setup(&args.input)?;
    // `--diff` as ruff has it: print the diffs, write nothing.
    let dry_run = args.dry_run || args.diff;
    let mut engine = engine(&setup, &args.input, Mode::Fix { dry_run })?;
    engine.want_diff = dry_run;
    engine.write.backup_dir = match &args.backup_dir {
        Some(dir) => Some(backup_dir(&setup.root, &absolute(dir))?),
        None => None,
    };
    engine.write.break_hardlinks = args.break_hardlinks;
    let gpu = (!dry_run).then_some(&args.gpu);
    let (outcomes, summary) = execute(&setup, &engine, &args.input, gpu)?;
    let command = if dry_run { "fix --dry-run" } else { "fix" };
    // A dry run writes nothing, the journal included.
    if !args.no_journal && !dry_run {
        crate::journal::record(&setup.root, command, &outcomes, &summary);
    }
    let policy = &setup.config.policy;
    if let Some(doc) = machine(
        args.format,
        command,
        &setup.root,
        policy,
        &outcomes,
        &summary,
    ) {
        out!("{doc}");
    } else if args.diff {
        for diff in outcomes.iter().filter_map(|o| o.diff.as_ref()) {
            out!("{diff}");
        }
        err!("{}", text::errors(&outcomes));
        if !global.quiet {
            err!("{}", text::summary(command, &summary));
        }
    } else {
        if args.dry_run {
            for diff in outcomes.iter().filter_map(|o| o.diff.as_ref()) {
                out!("{diff}");
            }
        }
        out!(
            "{}",
            findings_text(&outcomes, args.statistics, true, global)
        );
        out!("{}", text::gpu_checks(&outcomes));
        err!("{}", text::errors(&outcomes));
        if !global.quiet {
            out!("{}", text::summary(command, &summary));
            out!("{}", phase_lines(&setup.config.phases, &outcomes));
        }
    }
    Ok(exit_status(&summary, |s| {
        if dry_run {
            s.count(FileStatus::WouldFix) + s.count(FileStatus::NonCompliant) > 0
        } else {
            s.count(FileStatus::NonCompliant) > 0 || s.cpu_failed > 0 || gpu_failed(s)
        }
    }))
}

/// The backup directory, refused when it would lose or expose the originals: the tree root
/// itself (a backup would be the file), or a symbolic link (the copies would land wherever it
/// points). Inside the tree it is left out of the walk, so a later `fix` never rewrites a backup.
fn backup_dir(root: &std::path::Path, dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        anyhow::bail!(
            "--backup-dir {}: is a symbolic link; name the directory itself",
            crate::outcome::escape(dir.as_os_str())
        );
    }
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    if same(dir, root) {
        anyhow::bail!(
            "--backup-dir {}: is the tree root; the backups would replace the files they keep",
            crate::outcome::escape(dir.as_os_str())
        );
    }
    Ok(dir.to_path_buf())
}
