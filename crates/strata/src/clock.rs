//! The wall clock, in Unix milliseconds: the lowest layer, below storage (which reads it for
//! compaction-time expiry) and everything above it.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
