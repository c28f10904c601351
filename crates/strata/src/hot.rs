//! The hot-string cache: string values written recently, kept in memory so that GET of hot data
//! is a hash lookup instead of a RocksDB read. Bounded by a byte budget (FIFO eviction per shard).
//! It is filled only by writers, after their write succeeded and while they hold the key's lock,
//! and every metadata write or delete removes the key's entry first (see `db.rs`), so an entry is
//! never older than what RocksDB holds. Readers never fill it (a reader could otherwise race a
//! writer and cache a value the writer just replaced). Knows nothing of RocksDB.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

const SHARDS: usize = 64;
/// Bookkeeping bytes charged per entry on top of key and value.
const ENTRY_OVERHEAD: usize = 64;

struct Entry {
    value: Vec<u8>,
    expire_ms: u64,
}

#[derive(Default)]
struct Shard {
    map: HashMap<Vec<u8>, Entry>,
    /// Insertion order for eviction; may hold keys already removed or re-inserted.
    order: VecDeque<Vec<u8>>,
    bytes: usize,
}

/// A sharded map from metadata key to (string value, expiry).
pub(crate) struct HotCache {
    shards: Vec<Mutex<Shard>>,
    shard_budget: usize,
}

fn charge(key: &[u8], value: &[u8]) -> usize {
    key.len() + value.len() + ENTRY_OVERHEAD
}

impl HotCache {
    /// A cache of about `budget` bytes; 0 disables it.
    pub(crate) fn new(budget: usize) -> HotCache {
        HotCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_budget: budget / SHARDS,
        }
    }

    fn enabled(&self) -> bool {
        self.shard_budget > 0
    }

    fn shard(&self, key: &[u8]) -> MutexGuard<'_, Shard> {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let i = (h.finish() as usize) % SHARDS;
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached `(value, expire_ms)` of a metadata key.
    pub(crate) fn get(&self, key: &[u8]) -> Option<(Vec<u8>, u64)> {
        if !self.enabled() {
            return None;
        }
        let shard = self.shard(key);
        shard.map.get(key).map(|e| (e.value.clone(), e.expire_ms))
    }

    /// Caches a value just written (caller holds the key's lock and the write succeeded).
    pub(crate) fn put(&self, key: &[u8], value: &[u8], expire_ms: u64) {
        let cost = charge(key, value);
        if !self.enabled() || cost > self.shard_budget / 4 {
            return;
        }
        let mut shard = self.shard(key);
        let entry = Entry {
            value: value.to_vec(),
            expire_ms,
        };
        if let Some(old) = shard.map.insert(key.to_vec(), entry) {
            shard.bytes -= charge(key, &old.value);
        }
        shard.bytes += cost;
        shard.order.push_back(key.to_vec());
        while shard.bytes > self.shard_budget {
            let Some(victim) = shard.order.pop_front() else {
                break;
            };
            if let Some(old) = shard.map.remove(&victim) {
                shard.bytes -= charge(&victim, &old.value);
            }
        }
        // Keys removed by invalidation stay in `order`; rebuild it before it outgrows the map.
        if shard.order.len() > 2 * shard.map.len() + 1024 {
            let live: Vec<Vec<u8>> = shard.map.keys().cloned().collect();
            shard.order = live.into();
        }
    }

    /// Forgets a key (its metadata is about to change).
    pub(crate) fn remove(&self, key: &[u8]) {
        if !self.enabled() {
            return;
        }
        let mut shard = self.shard(key);
        if let Some(old) = shard.map.remove(key) {
            shard.bytes -= charge(key, &old.value);
        }
    }

    /// Forgets everything (FLUSHDB, FLUSHALL).
    pub(crate) fn clear(&self) {
        for s in &self.shards {
            let mut shard = s.lock().unwrap_or_else(|p| p.into_inner());
            *shard = Shard::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_its_budget() {
        let c = HotCache::new(64 * 1024 * SHARDS);
        for i in 0..100_000u32 {
            c.put(&i.to_be_bytes(), &[7u8; 100], 0);
        }
        let total: usize = c
            .shards
            .iter()
            .map(|s| s.lock().map(|s| s.bytes).unwrap_or(0))
            .sum();
        assert!(total <= 64 * 1024 * SHARDS, "{total}");
        assert!(
            c.get(&99_999u32.to_be_bytes()).is_some(),
            "newest entry kept"
        );
        assert!(c.get(&0u32.to_be_bytes()).is_none(), "oldest entry evicted");
    }

    #[test]
    fn removal_and_clear_forget_entries() {
        let c = HotCache::new(1 << 20);
        c.put(b"a", b"1", 5);
        assert_eq!(c.get(b"a"), Some((b"1".to_vec(), 5)));
        c.remove(b"a");
        assert_eq!(c.get(b"a"), None);
        c.put(b"b", b"2", 0);
        c.clear();
        assert_eq!(c.get(b"b"), None);
    }

    #[test]
    fn a_zero_budget_caches_nothing() {
        let c = HotCache::new(0);
        c.put(b"a", b"1", 0);
        assert_eq!(c.get(b"a"), None);
    }
}
