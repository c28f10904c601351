//! The access clock: when each key was last read or written, for OBJECT IDLETIME. It lives in
//! memory only: after a restart every key has been idle since the directory opened, as after a
//! Redis restart every key has been idle since the load. It is bounded: keys are remembered by a
//! 64-bit hash of their physical database and name (two keys sharing a hash share a clock), at
//! most [`CAPACITY`] of them; when a shard fills up, its older half is forgotten, and a key it
//! does not remember reads as idle since the newest time it forgot. The server decides which
//! commands count as an access (Redis's: every command that looks its keys up, but EXISTS, TYPE,
//! TTL, OBJECT...). Knows nothing of RocksDB.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use parking_lot::Mutex;

use crate::db::{now_ms, Db};
use crate::error::Result;
use crate::hot::{hash_key, IdentityHasher};

const SHARDS: usize = 64;
/// How many keys the clock remembers at most (about 16 bytes each).
pub(crate) const CAPACITY: usize = 1 << 19;

#[derive(Default)]
struct Shard {
    /// key hash → last access, in seconds since the Unix epoch.
    seen: HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>,
    /// The newest access time forgotten, or when the clock started.
    floor: u32,
}

/// When each key was last accessed (see the module docs).
pub(crate) struct AccessClock {
    shards: Vec<Mutex<Shard>>,
}

fn slot(phys: u8, key: &[u8]) -> (usize, u64) {
    let h = hash_key(phys, key);
    ((h as usize) % SHARDS, h)
}

impl AccessClock {
    /// A clock on which every key was last accessed at `now` (seconds).
    pub(crate) fn new(now: u32) -> AccessClock {
        AccessClock {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        seen: HashMap::default(),
                        floor: now,
                    })
                })
                .collect(),
        }
    }

    /// Records an access to `key` of physical database `phys` at `now` (seconds).
    pub(crate) fn touch(&self, phys: u8, key: &[u8], now: u32) {
        let (i, h) = slot(phys, key);
        let mut shard = self.shards[i].lock();
        if let Some(t) = shard.seen.get_mut(&h) {
            *t = now;
            return;
        }
        if shard.seen.len() >= CAPACITY / SHARDS {
            forget_older_half(&mut shard);
        }
        shard.seen.insert(h, now);
    }

    /// When `key` of physical database `phys` was last accessed (seconds).
    pub(crate) fn last_access(&self, phys: u8, key: &[u8]) -> u32 {
        let (i, h) = slot(phys, key);
        let shard = self.shards[i].lock();
        shard.seen.get(&h).copied().unwrap_or(shard.floor)
    }
}

pub(crate) fn now_secs() -> u32 {
    (now_ms() / 1000).min(u64::from(u32::MAX)) as u32
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

    /// OBJECT IDLETIME: seconds since `key` was last accessed, `None` if it does not exist.
    pub fn idle_time(&self, key: &[u8]) -> Result<Option<u64>> {
        if !self.exists(key)? {
            return Ok(None);
        }
        let last = self.inner.access.last_access(self.phys(), key);
        Ok(Some(u64::from(now_secs().saturating_sub(last))))
    }
}

/// Forgets the entries older than the middle of the shard's time span (at least one).
fn forget_older_half(shard: &mut Shard) {
    let (Some(&oldest), Some(&newest)) = (shard.seen.values().min(), shard.seen.values().max())
    else {
        return;
    };
    let cut = oldest + (newest - oldest) / 2;
    // Everything at or before `cut` goes (all of it when every entry has the same time).
    shard.seen.retain(|_, &mut t| t > cut);
    shard.floor = shard.floor.max(cut);
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
    fn a_full_shard_forgets_its_older_half_and_reads_it_at_the_newest_forgotten_time() {
        let mut shard = Shard::default();
        for t in 1..=10u32 {
            shard.seen.insert(u64::from(t), t);
        }
        forget_older_half(&mut shard);
        let mut left: Vec<u32> = shard.seen.values().copied().collect();
        left.sort_unstable();
        assert_eq!(left, vec![6, 7, 8, 9, 10]);
        assert_eq!(shard.floor, 5);
    }

    #[test]
    fn touching_a_full_shard_keeps_it_within_its_share() {
        let clock = AccessClock::new(0);
        for n in 0..(CAPACITY as u32 / 8) {
            clock.touch(0, &n.to_le_bytes(), n / 64);
        }
        let most = clock.shards.iter().map(|s| s.lock().seen.len()).max();
        assert!(most.unwrap_or(0) <= CAPACITY / SHARDS);
    }
}
