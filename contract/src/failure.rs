//! Which suite, and which backend, a failed assertion belongs to: the panic
//! message says what rule broke, this says where (several backends run the
//! same suite in one test binary).

/// Prints `<suite> contract failed for <uri>` if dropped while the thread
/// panics, after the panic's own message.
pub(crate) struct NamedOnFailure {
    suite: &'static str,
    uri: String,
}

impl NamedOnFailure {
    pub(crate) fn new(suite: &'static str, uri: &str) -> Self {
        Self {
            suite,
            uri: uri.to_owned(),
        }
    }
}

impl Drop for NamedOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "{} contract failed for {} (the rule it broke is above)",
                self.suite, self.uri
            );
        }
    }
}
