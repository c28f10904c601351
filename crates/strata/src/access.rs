//! The access clock: when each key was last read or written, for OBJECT IDLETIME. It lives in
//! memory only: after a restart every key has been idle since the directory opened, as after a
//! Redis restart every key has been idle since the load. It is a fixed table of [`SLOTS`]
//! second-resolution times (4 MiB) indexed by a 64-bit hash of the key's physical database and
//! name: touching a key is one relaxed atomic store (none when the slot already holds this
//! second), with no lock and no allocation, because every keyed command touches its keys (a map
//! with a lock and eviction cost GET about a tenth of its CPU). Two keys that share a slot share a
//! clock, so a key may read as accessed more recently than it was (an underestimate of its idle
//! time, as with any bounded clock); a slot never touched reads as the time the clock started.
//! The server decides which commands count as an access (Redis's: every command that looks its
//! keys up, but EXISTS, TYPE, TTL, OBJECT...). Knows nothing of RocksDB.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::db::Db;
use crate::error::Result;
use crate::hot::hash_key;

/// How many clocks the table holds (a power of two).
pub(crate) const SLOTS: usize = 1 << 20;

/// When each key was last accessed (see the module docs).
pub(crate) struct AccessClock {
    /// Seconds since the Unix epoch; 0 for a slot never touched.
    times: Box<[AtomicU32]>,
    /// When the clock started (seconds).
    start: u32,
}

fn slot(phys: u8, key: &[u8]) -> usize {
    (hash_key(phys, key) as usize) & (SLOTS - 1)
}

impl AccessClock {
    /// A clock on which every key was last accessed at `now` (seconds).
    pub(crate) fn new(now: u32) -> AccessClock {
        AccessClock {
            times: (0..SLOTS).map(|_| AtomicU32::new(0)).collect(),
            start: now,
        }
    }

    /// Records an access to `key` of physical database `phys` at `now` (seconds).
    pub(crate) fn touch(&self, phys: u8, key: &[u8], now: u32) {
        let t = &self.times[slot(phys, key)];
        // A hot key touched many times a second dirties its cache line once a second.
        if t.load(Ordering::Relaxed) != now {
            t.store(now, Ordering::Relaxed);
        }
    }

    /// Starts loading the slot of `key` into the CPU's cache, so that the [`AccessClock::touch`]
    /// after the command finds it there: the table is too big to stay cached, and that one load
    /// (a cache and TLB miss) was 95% of the touch's cost, 8% of an INCR's CPU at P=16. Only a
    /// hint: nothing is read or written.
    pub(crate) fn prefetch(&self, phys: u8, key: &[u8]) {
        crate::prefetch::prefetch(&self.times[slot(phys, key)]);
    }

    /// Makes `key` of physical database `phys` read as last accessed at `at` (seconds).
    pub(crate) fn set(&self, phys: u8, key: &[u8], at: u32) {
        self.times[slot(phys, key)].store(at.max(1), Ordering::Relaxed);
    }

    /// When `key` of physical database `phys` was last accessed (seconds).
    pub(crate) fn last_access(&self, phys: u8, key: &[u8]) -> u32 {
        match self.times[slot(phys, key)].load(Ordering::Relaxed) {
            0 => self.start,
            t => t,
        }
    }
}

/// Now, in seconds, from the coarse clock: it is read on every keyed command, and a second's
/// resolution needs no hardware counter read.
pub(crate) fn now_secs() -> u32 {
    crate::clock::now_secs_coarse().min(u64::from(u32::MAX)) as u32
}

impl Db {
    /// Records an access to `key` of logical database `db` now (a command looked it up).
    pub fn note_access(&self, db: u32, key: &[u8]) {
        let Ok(logical) = u8::try_from(db) else {
            return;
        };
        if db < self.inner.databases {
            let phys = self.phys_of(logical);
            self.inner.access.touch(phys, key, now_secs());
        }
    }

    /// Starts loading the access clock of `key` of logical database `db` into the CPU's cache,
    /// ahead of the [`Db::note_access`] that follows the command (see [`AccessClock::prefetch`]).
    pub fn prefetch_access(&self, db: u32, key: &[u8]) {
        if let Ok(logical) = u8::try_from(db) {
            if db < self.inner.databases {
                self.inner.access.prefetch(self.phys_of(logical), key);
            }
        }
    }

    /// Makes `key` read as idle for `secs` seconds (RESTORE's IDLETIME).
    pub fn set_idle_time(&self, key: &[u8], secs: u64) {
        let secs = u32::try_from(secs).unwrap_or(u32::MAX);
        self.inner
            .access
            .set(self.phys(), key, now_secs().saturating_sub(secs));
    }

    /// OBJECT IDLETIME: seconds since `key` was last accessed, `None` if it does not exist.
    pub fn idle_time(&self, key: &[u8]) -> Result<Option<u64>> {
        if !self.exists(key)? {
            return Ok(None);
        }
        let last = self.inner.access.last_access(self.phys(), key);
        Ok(Some(u64::from(now_secs().saturating_sub(last))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_never_touched_is_idle_since_the_clock_started() {
        let clock = AccessClock::new(100);
        assert_eq!(clock.last_access(0, b"k"), 100);
        clock.touch(0, b"k", 150);
        assert_eq!(clock.last_access(0, b"k"), 150);
        assert_eq!(clock.last_access(1, b"k"), 100, "databases are apart");
    }

    #[test]
    fn the_latest_touch_wins() {
        let clock = AccessClock::new(0);
        clock.touch(3, b"k", 10);
        clock.touch(3, b"k", 12);
        clock.touch(3, b"k", 12);
        assert_eq!(clock.last_access(3, b"k"), 12);
    }
}
