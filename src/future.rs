//! The boxed future the object-safe async traits (key providers, keyset stores) return.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (what the object-safe async traits return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
