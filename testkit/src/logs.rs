//! Log lines captured in memory, for the tests that check what reaches the
//! logs (and what never may).

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// A shared buffer the captured lines are written into (no colour codes).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Captures this thread's events at the formatter's default level until
    /// the guard is dropped.
    pub fn capture(&self) -> DefaultGuard {
        let w = self.clone();
        tracing::subscriber::set_default(
            tracing_subscriber::fmt()
                .with_writer(move || w.clone())
                .with_ansi(false)
                .finish(),
        )
    }

    /// A subscriber writing every level, down to `TRACE`, into this buffer.
    pub fn subscriber_all(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let w = self.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || w.clone())
            .with_ansi(false)
            .finish()
    }

    /// Captures this thread's events at every level until the guard is dropped.
    pub fn capture_all(&self) -> DefaultGuard {
        tracing::subscriber::set_default(self.subscriber_all())
    }

    /// Everything captured so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}
