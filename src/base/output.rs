//! The tool's own output on stdout and stderr. A closed pipe (`scan | head -1`) ends the
//! output quietly, as ripgrep does; any other write error (`> /dev/full`) is an error with
//! its reason, never a panic.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Write `text` to stdout; after a broken pipe, write nothing more.
pub fn print(text: &str) -> anyhow::Result<()> {
    write_bytes(text.as_bytes())
}

/// Write `bytes` to stdout as they are (a fixed source in its own encoding), as `print` does.
pub fn write_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) || bytes.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!("cannot write the output: {e}")),
    }
}

/// Write `text` to stderr; a closed stderr is ignored (there is nowhere left to say so).
pub fn eprint(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Stdout as a writer, with `write_bytes`'s handling of a closed pipe (wrap it in a
/// `BufWriter`: each write is flushed).
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_bytes(buf).map_err(std::io::Error::other)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
