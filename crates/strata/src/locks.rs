//! Striped key locks: every read-modify-write of a key holds the stripe its key hashes to, so two
//! commands on one key never interleave, while commands on other keys run in parallel. Commands that
//! change a whole database (FLUSHDB, SWAPDB) hold every stripe.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

const STRIPES: usize = 1024;

/// A fixed array of mutexes indexed by key hash.
pub struct KeyLocks {
    stripes: Vec<Mutex<()>>,
}

/// Held stripes; dropping it releases them.
pub struct Guard<'a> {
    _held: Vec<MutexGuard<'a, ()>>,
}

impl KeyLocks {
    /// A new set of stripes.
    pub fn new() -> KeyLocks {
        KeyLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    fn stripe(db: u8, key: &[u8]) -> usize {
        let mut h = DefaultHasher::new();
        db.hash(&mut h);
        key.hash(&mut h);
        (h.finish() as usize) % STRIPES
    }

    fn lock_index(&self, i: usize) -> MutexGuard<'_, ()> {
        // A poisoned stripe only means another thread panicked while holding it; the protected data
        // lives in RocksDB, so carry on.
        self.stripes[i]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Locks the stripes of all `(db, key)` pairs, in stripe order so that no two callers deadlock.
    pub fn lock<'a, 'k>(&'a self, keys: impl IntoIterator<Item = (u8, &'k [u8])>) -> Guard<'a> {
        let mut idx: Vec<usize> = keys
            .into_iter()
            .map(|(db, k)| Self::stripe(db, k))
            .collect();
        idx.sort_unstable();
        idx.dedup();
        Guard {
            _held: idx.into_iter().map(|i| self.lock_index(i)).collect(),
        }
    }

    /// Locks one key.
    pub fn lock_one(&self, db: u8, key: &[u8]) -> Guard<'_> {
        Guard {
            _held: vec![self.lock_index(Self::stripe(db, key))],
        }
    }

    /// Locks every stripe (whole-database operations).
    pub fn lock_all(&self) -> Guard<'_> {
        Guard {
            _held: (0..STRIPES).map(|i| self.lock_index(i)).collect(),
        }
    }
}

impl Default for KeyLocks {
    fn default() -> Self {
        Self::new()
    }
}
