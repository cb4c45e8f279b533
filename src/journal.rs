//! The run journal and the coordinator report: not wired yet.

use crate::app::Setup;
use crate::cli::ReportArgs;
use crate::outcome::FileOutcome;
use crate::report::summary::Summary;

pub fn record(_setup: &Setup, _command: &str, _outcomes: &[FileOutcome], _summary: &Summary) {}

pub fn report_command(_args: ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`report` is not available yet")
}
