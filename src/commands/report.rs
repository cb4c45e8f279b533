//! `gpu-homogenize report`: scan the whole tree, read its journal, hand both to `report/`.

use anyhow::Context;

use super::EXIT_OK;
use crate::cli::{InputArgs, ReportArgs, ReportFormat};
use crate::journal::{now_rfc3339, Journal};
use crate::process::Mode;
use crate::report::coordinator::{self, build, Tree};
use crate::report::{html, markdown};
use crate::run::{engine, execute, setup};

/// `gpu-homogenize report`: scan the whole tree, read its journal, render.
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let input = InputArgs {
        paths: vec![args.root.clone().unwrap_or_else(|| ".".into())],
        config: args.config.clone(),
        // The CLI's default for scan, fix and check.
        max_file_size: 4 * 1024 * 1024,
        jobs: None,
        stdin_filename: None,
        no_cache: args.no_cache,
        shard: None,
        lint: Default::default(),
    };
    if let Some(root) = args.root.as_ref().filter(|r| !r.is_dir()) {
        // Otherwise the nearest existing ancestor, up to `/`, would be scanned instead.
        anyhow::bail!(
            "{}: not a directory; give the root of the tree",
            root.display()
        );
    }
    let mut setup = setup(&input)?;
    // A subdirectory names the tree; the report is always about all of it.
    setup.paths = vec![setup.root.clone()];
    let engine = engine(&setup, &input, Mode::Scan)?;
    let (outcomes, _) = execute(&setup, &engine, &input, None)?;
    let journal = Journal::read(&setup.root);
    for warning in &journal.warnings {
        eprintln!("warning: {warning}");
    }
    let tree = Tree {
        root: &setup.root,
        config: &setup.config,
    };
    let mut report = build(&tree, &outcomes, &journal, now_rfc3339());
    report.place_in_repository(&crate::outcome::repository_prefix(&setup.root));
    let text = match args.format {
        ReportFormat::Md => markdown::render(&report),
        ReportFormat::Json => coordinator::json(&report),
        ReportFormat::Html => html::render(&report),
    };
    match &args.out {
        // Never through a symbolic link planted where the report goes (it would overwrite
        // whatever the link points to).
        Some(path) => {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt;
            let shown = crate::outcome::escape(path.as_os_str());
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::ELOOP) => anyhow::anyhow!(
                        "{shown}: is a symbolic link; the report is never written through one"
                    ),
                    _ => anyhow::anyhow!("{shown}: cannot write the report: {e}"),
                })?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("{shown}: cannot write the report"))?;
        }
        None => print!("{text}"),
    }
    Ok(EXIT_OK)
}
