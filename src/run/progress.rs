//! Progress bars on stderr while a run goes on; hidden when stderr is not a terminal.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Per-phase progress bars on stderr; hidden when stderr is not a terminal.
pub struct Progress {
    _multi: MultiProgress,
    pub cpu: ProgressBar,
    pub gpu: ProgressBar,
}

impl Progress {
    pub fn new(files: usize, with_gpu: bool) -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template("{prefix:>4} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let cpu = multi.add(
            ProgressBar::new(files as u64)
                .with_style(style.clone())
                .with_prefix("CPU"),
        );
        let gpu = if with_gpu {
            multi.add(ProgressBar::new(0).with_style(style).with_prefix("GPU"))
        } else {
            ProgressBar::hidden()
        };
        Progress {
            _multi: multi,
            cpu,
            gpu,
        }
    }

    pub fn finish(&self) {
        self.cpu.finish_and_clear();
        self.gpu.finish_and_clear();
    }
}
