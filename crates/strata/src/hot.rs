//! The hot-record cache: records of the `meta` and `data` families written recently, kept in
//! memory so that reads of hot keys (GET, and the metadata and field reads of every collection
//! command and read-modify-write) are a hash lookup instead of a RocksDB read. Bounded by a byte
//! budget (FIFO eviction per shard). `storage.rs` fills it with the records of each write batch
//! once RocksDB has applied it, and forgets a metadata record before the batch that changes it
//! is applied, so an entry always equals the committed record. That rule needs every writer of a
//! record to hold the record's key lock (two writers of one key racing could otherwise install
//! their values in the opposite order of their writes): the data model does, and the only
//! writer that takes no key locks, a replica applying its leader's log, is the only writer on a
//! replica. Readers never fill it; the one read that does, a list pop reading the items next in
//! line ahead (`Storage::warm`), holds the list's lock like a writer and reads committed records
//! only. Knows nothing of RocksDB.

use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

const SHARDS: usize = 64;
/// Bookkeeping bytes charged per entry on top of key and value.
const ENTRY_OVERHEAD: usize = 64;

/// One cached record: key and value in one allocation, so a write costs one allocation.
struct Entry {
    /// `key ++ value`.
    bytes: Vec<u8>,
    key_len: usize,
}

impl Entry {
    fn key(&self) -> &[u8] {
        &self.bytes[..self.key_len]
    }
    fn value(&self) -> &[u8] {
        &self.bytes[self.key_len..]
    }
    fn charge(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// The map is keyed by the key's 64-bit hash (already well mixed), so it needs no second hash.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

#[derive(Default)]
struct Shard {
    /// key hash → entry. Two keys with the same 64-bit hash share a slot: the later one wins and
    /// `get` compares the stored key, so a collision only costs a miss.
    map: HashMap<u64, Entry, BuildHasherDefault<IdentityHasher>>,
    /// Insertion order (key hashes) for eviction; may hold hashes already removed or re-inserted.
    order: VecDeque<u64>,
    bytes: usize,
}

/// A sharded map from a record's key to its value.
pub(crate) struct HotCache {
    shards: Vec<Mutex<Shard>>,
    shard_budget: usize,
}

/// FNV-1a over the key, finished with a multiply-xorshift so the low bits (shard) and the whole
/// (map key) are both well mixed. Cheap for short keys, which is what the hot path sees.
fn hash_key(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

impl HotCache {
    /// A cache of about `budget` bytes; 0 disables it.
    pub(crate) fn new(budget: usize) -> HotCache {
        HotCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_budget: budget / SHARDS,
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.shard_budget > 0
    }

    /// The largest entry (key, value and bookkeeping) the cache takes.
    pub(crate) fn largest_entry(&self) -> usize {
        self.shard_budget / 4
    }

    fn shard(&self, hash: u64) -> MutexGuard<'_, Shard> {
        self.shards[(hash as usize) % SHARDS].lock()
    }

    /// `f` applied to the cached value of `key`, if it is cached (`f` runs under the shard's
    /// lock: keep it short).
    pub(crate) fn with<T>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        if !self.enabled() {
            return None;
        }
        let h = hash_key(key);
        let shard = self.shard(h);
        shard
            .map
            .get(&h)
            .filter(|e| e.key() == key)
            .map(|e| f(e.value()))
    }

    /// `f` applied to the cached value of `key`, or `f` back if it is not cached, so that the
    /// caller can apply it to the value read elsewhere (`f` runs under the shard's lock).
    pub(crate) fn with_or_back<T, F: FnOnce(&[u8]) -> T>(&self, key: &[u8], f: F) -> Result<T, F> {
        if !self.enabled() {
            return Err(f);
        }
        let h = hash_key(key);
        let shard = self.shard(h);
        match shard.map.get(&h).filter(|e| e.key() == key) {
            Some(e) => Ok(f(e.value())),
            None => Err(f),
        }
    }

    /// The cached value of `key`.
    #[cfg(test)]
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.with(key, <[u8]>::to_vec)
    }

    /// Caches a record just written (the write succeeded and its writer holds the key's lock).
    /// A record too large to cache replaces nothing: the entry it supersedes is forgotten.
    pub(crate) fn put(&self, key: &[u8], value: &[u8]) {
        if !self.enabled() {
            return;
        }
        if key.len() + value.len() + ENTRY_OVERHEAD > self.largest_entry() {
            self.remove(key);
            return;
        }
        let mut bytes = Vec::with_capacity(key.len() + value.len());
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        let entry = Entry {
            bytes,
            key_len: key.len(),
        };
        let h = hash_key(key);
        let mut shard = self.shard(h);
        shard.bytes += entry.charge();
        if let Some(old) = shard.map.insert(h, entry) {
            shard.bytes -= old.charge();
        } else {
            shard.order.push_back(h);
        }
        while shard.bytes > self.shard_budget {
            let Some(victim) = shard.order.pop_front() else {
                break;
            };
            if let Some(old) = shard.map.remove(&victim) {
                shard.bytes -= old.charge();
            }
        }
        // Hashes removed by invalidation stay in `order`; rebuild it before it outgrows the map.
        if shard.order.len() > 2 * shard.map.len() + 1024 {
            let live: VecDeque<u64> = shard.map.keys().copied().collect();
            shard.order = live;
        }
    }

    /// Forgets a key (its record is about to change or has been deleted).
    pub(crate) fn remove(&self, key: &[u8]) {
        if !self.enabled() {
            return;
        }
        let h = hash_key(key);
        let mut shard = self.shard(h);
        if let Some(old) = shard.map.remove(&h) {
            shard.bytes -= old.charge();
        }
    }

    /// Forgets everything (FLUSHDB, FLUSHALL, range deletions, a replica's full copy).
    pub(crate) fn clear(&self) {
        for s in &self.shards {
            let mut shard = s.lock();
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
            c.put(&i.to_be_bytes(), &[7u8; 100]);
        }
        let total: usize = c.shards.iter().map(|s| s.lock().bytes).sum();
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
        c.put(b"a", b"1");
        assert_eq!(c.get(b"a"), Some(b"1".to_vec()));
        c.remove(b"a");
        assert_eq!(c.get(b"a"), None);
        c.put(b"b", b"2");
        c.clear();
        assert_eq!(c.get(b"b"), None);
    }

    #[test]
    fn a_record_too_large_to_cache_forgets_the_one_it_replaces() {
        let c = HotCache::new(64 * 1024 * SHARDS);
        c.put(b"a", b"small");
        c.put(b"a", &vec![1u8; 64 * 1024]);
        assert_eq!(c.get(b"a"), None);
    }

    #[test]
    fn a_zero_budget_caches_nothing() {
        let c = HotCache::new(0);
        c.put(b"a", b"1");
        assert_eq!(c.get(b"a"), None);
    }
}
