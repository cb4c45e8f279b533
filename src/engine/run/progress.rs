//! Progress on stderr while a run goes on, one bar per mission phase (then "Other"), each with
//! its elapsed time, ETA and the file being processed; a GPU bar only while the GPU slot runs.
//! Hidden when stderr is not a terminal.

use std::collections::HashMap;
use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::fs::walk::Entry;
use crate::model::policy::{Phases, OTHER_PHASE};

const TEMPLATE: &str =
    "{prefix:>16} [{bar:30}] {pos}/{len} {elapsed_precise} ETA {eta_so_far} {wide_msg}";

/// How often a bar in a terminal is redrawn without a file finishing: the elapsed time and the
/// ETA move while one slow file is processed.
const TICK: std::time::Duration = std::time::Duration::from_millis(250);

/// The time left at the rate so far (elapsed / files done × files left): steady while a slow
/// file holds the bar, unlike indicatif's estimate of the last steps.
fn eta_so_far(elapsed: std::time::Duration, pos: u64, len: u64) -> String {
    if pos == 0 {
        return "--:--:--".into();
    }
    let left = elapsed.as_secs_f64() * len.saturating_sub(pos) as f64 / pos as f64;
    let s = left.round() as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "eta_so_far",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let len = state.len().unwrap_or(0);
                let _ = w.write_str(&eta_so_far(state.elapsed(), state.pos(), len));
            },
        )
}

/// The GPU bar while the CPU stage still queues checks: its total is not known yet, so neither
/// a bar nor an ETA (a growing total made the ETA read 00:00:00 throughout).
const GPU_QUEUEING: &str =
    "{prefix:>16} {pos} checked, {len} queued so far {elapsed_precise} {wide_msg}";

pub struct Progress {
    /// Drawn (stderr is a terminal): the bars tick; otherwise quiet, no thread.
    terminal: bool,
    multi: MultiProgress,
    style: ProgressStyle,
    /// Each entry's bar, by its index in the run.
    of_entry: Vec<ProgressBar>,
    phases: Vec<ProgressBar>,
    pub gpu: ProgressBar,
}

impl Progress {
    /// One bar per phase with files in this run, in the config's order, "Other" last.
    pub fn new(entries: &[Entry], phases: &Phases) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let style = style(TEMPLATE).progress_chars("=> ");
        let names: Vec<&str> = entries
            .iter()
            .map(|e| phases.phase_of(&e.rel).unwrap_or(OTHER_PHASE))
            .collect();
        let mut order: Vec<&str> = phases.names().collect();
        order.push(OTHER_PHASE);
        let mut bars: HashMap<&str, ProgressBar> = HashMap::new();
        let mut in_order = Vec::new();
        for name in order {
            let len = names.iter().filter(|n| **n == name).count();
            if len == 0 || bars.contains_key(name) {
                continue;
            }
            let bar = multi.add(
                ProgressBar::new(len as u64)
                    .with_style(style.clone())
                    .with_prefix(crate::base::escape::printable(name).into_owned()),
            );
            if terminal {
                bar.enable_steady_tick(TICK);
            }
            bars.insert(name, bar.clone());
            in_order.push(bar);
        }
        let of_entry = names
            .iter()
            .map(|n| bars.get(n).cloned().unwrap_or_else(ProgressBar::hidden))
            .collect();
        Progress {
            terminal,
            multi,
            style,
            of_entry,
            phases: in_order,
            gpu: ProgressBar::hidden(),
        }
    }

    /// A handle on the bars, for printing between their redraws (`suspend`) so that nothing
    /// printed is drawn over; it stays valid while `add_gpu` adds the GPU bar.
    pub fn bars(&self) -> MultiProgress {
        self.multi.clone()
    }

    /// The GPU bar, added once the slot is open (never when the GPU stage is off or absent).
    pub fn add_gpu(&mut self) {
        self.gpu = self.multi.add(
            ProgressBar::new(0)
                .with_style(style(GPU_QUEUEING))
                .with_prefix("GPU checks"),
        );
        if self.terminal {
            self.gpu.enable_steady_tick(TICK);
        }
    }

    /// The CPU stage is done: every GPU check is queued, so the GPU bar has its total and an
    /// ETA from here on.
    pub fn gpu_queue_known(&self) {
        self.gpu.set_style(self.style.clone());
    }

    pub fn started(&self, index: usize, rel: &str) {
        if let Some(bar) = self.of_entry.get(index) {
            bar.set_message(rel.to_string());
        }
    }

    pub fn done(&self, index: usize) {
        if let Some(bar) = self.of_entry.get(index) {
            bar.inc(1);
            // A phase whose files are all done stops its clock (and its tick).
            if Some(bar.position()) == bar.length() {
                bar.finish();
            }
        }
    }

    pub fn finish(&self) {
        for bar in &self.phases {
            bar.finish_and_clear();
        }
        self.gpu.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpu_bar_shows_no_eta_until_its_total_is_known() {
        assert!(ProgressStyle::with_template(GPU_QUEUEING).is_ok());
        assert!(!GPU_QUEUEING.contains("eta") && !GPU_QUEUEING.contains("{bar"));
        assert!(TEMPLATE.contains("{eta_so_far}"));
    }

    #[test]
    fn the_eta_is_the_rate_so_far() {
        let secs = std::time::Duration::from_secs;
        assert_eq!(eta_so_far(secs(10), 0, 20), "--:--:--");
        assert_eq!(eta_so_far(secs(10), 5, 20), "00:00:30");
        assert_eq!(eta_so_far(secs(3600), 1, 3), "02:00:00");
        assert_eq!(eta_so_far(secs(10), 20, 20), "00:00:00");
    }
}
