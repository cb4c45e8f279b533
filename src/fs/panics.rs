//! A panic while one file is processed is that file's error (as ruff reports one): caught
//! around the file (in the CPU stage, and in the indexes' pass, which leaves the file out), its
//! message and place kept for the outcome, the default report on stderr held back for it; the
//! other files go on. A panic anywhere else is reported as before.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use crate::fs::walk::Entry;

thread_local! {
    /// Inside [`caught`] on this thread: a panic is kept here, not printed.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// `process(entry)`, or the panic it met: its message and where it was raised.
pub fn caught<T>(entry: &Entry, process: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    // Nested (the indexes built on demand from within a file): the outer catch goes on after.
    let outer = CATCHING.with(|c| c.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        test_panic(entry);
        process()
    }));
    CATCHING.with(|c| c.set(outer));
    result.map_err(|payload| {
        MESSAGE
            .with(|m| m.borrow_mut().take())
            .unwrap_or_else(|| message_of(payload.as_ref()))
    })
}

fn install_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(Cell::get) {
                return previous(info);
            }
            let place = info
                .location()
                .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
            let message = format!("{}{place}", message_of(info.payload()));
            MESSAGE.with(|m| *m.borrow_mut() = Some(message));
        }));
    });
}

fn message_of(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Tests make one file panic: in debug builds only, the file whose path under the root is
/// `GPU_HOMOGENIZE_TEST_PANIC`. A release build has no such hook, so no tree can set one off.
fn test_panic(entry: &Entry) {
    #[cfg(debug_assertions)]
    if std::env::var_os("GPU_HOMOGENIZE_TEST_PANIC").is_some_and(|rel| rel == *entry.rel) {
        panic!("test panic for {}", entry.rel);
    }
    #[cfg(not(debug_assertions))]
    let _ = entry;
}
