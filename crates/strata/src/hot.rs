//! The hot-record cache: records of the `meta` and `data` families written recently, kept in
//! memory so that reads of hot keys (GET, and the metadata and field reads of every collection
//! command and read-modify-write) are a hash lookup instead of a RocksDB read. Bounded by one byte
//! budget that the families share (FIFO eviction per shard), so a workload that writes only
//! strings has all of it, and one that writes collections splits it as it writes. Each family is
//! a namespace with an epoch: forgetting a whole family (a range deletion) bumps its epoch, which
//! hides its older entries at once until eviction reclaims them. Without the write-back tier,
//! `storage.rs` fills it with the records of each write batch once RocksDB has applied it, and
//! forgets a metadata record before the batch that changes it is applied, so an entry always
//! equals the committed record. With the tier, writes go to the tier's layers, which readers
//! consult first; writers leave the cache alone, and each layer's records come here when a
//! checkpoint retires the layer ([`HotCache::take_layer`]), so the cache holds the committed
//! record of every key no layer names. Without the tier, the rule needs every writer of a
//! record to hold the record's key lock (two writers of one key racing could otherwise install
//! their values in the opposite order of their writes): the data model does, and the only
//! writer that takes no key locks, a replica applying its leader's log, is the only writer on a
//! replica. Readers never fill it; the one read that does, a list pop reading the items next in
//! line ahead (`Storage::warm`), holds the list's lock like a writer and reads committed records
//! only. Knows nothing of RocksDB.

use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::layer::Layer;

const SHARDS: usize = 64;
/// How many families (namespaces) one cache can hold.
pub(crate) const FAMILIES: usize = 2;
/// Bookkeeping bytes charged per entry on top of key and value.
const ENTRY_OVERHEAD: usize = 64;

/// One cached record: key and value in one allocation, so a write costs one allocation.
struct Entry {
    /// `key ++ value`.
    bytes: Vec<u8>,
    key_len: u32,
    /// The family the record belongs to.
    family: u8,
    /// The family's epoch when the record was cached: an entry of an older epoch is forgotten.
    epoch: u32,
}

impl Entry {
    fn is(&self, family: u8, epoch: u32, key: &[u8]) -> bool {
        self.family == family && self.epoch == epoch && self.key() == key
    }
    fn key(&self) -> &[u8] {
        &self.bytes[..self.key_len as usize]
    }
    fn value(&self) -> &[u8] {
        &self.bytes[self.key_len as usize..]
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

/// A sharded map from a record's family and key to its value.
pub(crate) struct HotCache {
    shards: Vec<Mutex<Shard>>,
    shard_budget: usize,
    /// Each family's current epoch.
    epochs: [AtomicU32; FAMILIES],
}

/// One family's view of a [`HotCache`].
#[derive(Clone, Copy)]
pub(crate) struct HotFamily<'a> {
    cache: &'a HotCache,
    family: u8,
}

/// The key's hash: foldhash, seeded once per process (keys come from clients), whose low bits
/// (shard) and whole (map key) are both well mixed. FNV-1a, one byte at a time, was measured
/// first: it was most of a cache lookup's 5% of a script's CPU.
pub(crate) fn hash_key(family: u8, key: &[u8]) -> u64 {
    static SEED: std::sync::LazyLock<foldhash::fast::RandomState> =
        std::sync::LazyLock::new(Default::default);
    SEED.hash_one((family, key))
}

impl HotCache {
    /// A cache of about `budget` bytes; 0 disables it.
    pub(crate) fn new(budget: usize) -> HotCache {
        HotCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_budget: budget / SHARDS,
            epochs: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    /// The view of family `family` (below [`FAMILIES`]).
    pub(crate) fn family(&self, family: usize) -> HotFamily<'_> {
        debug_assert!(family < FAMILIES);
        HotFamily {
            cache: self,
            family: family as u8,
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

    /// Takes the records of a layer the write-back tier has just written to RocksDB, while
    /// readers still see the layer (`tier.rs`, [`crate::tier::Retire`]): for each family of
    /// `families` (its column family id at the family's index), a deleted range forgets the
    /// family, and then each point is cached (a put) or forgotten (a delete, or a put marked
    /// cold). With the tier, writers do not touch the cache and readers consult it after the
    /// tier's layers, so an entry is the committed record of its key whenever no layer names the
    /// key; this keeps that true for the layer's keys before the layer goes.
    pub(crate) fn take_layer(&self, layer: &Layer, families: [u32; FAMILIES]) {
        if !self.enabled() {
            return;
        }
        for (cf, fam) in layer.families() {
            let Some(index) = families.iter().position(|&id| id == cf) else {
                continue;
            };
            let cache = self.family(index);
            if !fam.ranges.is_empty() {
                cache.clear();
            }
            for (key, point) in fam.points.iter() {
                match &point.value {
                    Some(v) if !point.cold => cache.put(key, v),
                    _ => cache.remove(key),
                }
            }
        }
    }

    /// Forgets everything (FLUSHDB, FLUSHALL, a replica's full copy).
    pub(crate) fn clear(&self) {
        for s in &self.shards {
            let mut shard = s.lock();
            *shard = Shard::default();
        }
    }
}

impl HotFamily<'_> {
    pub(crate) fn enabled(&self) -> bool {
        self.cache.enabled()
    }

    fn epoch(&self) -> u32 {
        self.cache.epochs[self.family as usize].load(Ordering::Acquire)
    }

    /// `f` applied to the cached value of `key`, if it is cached (`f` runs under the shard's
    /// lock: keep it short).
    pub(crate) fn with<T>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        self.with_or_back(key, f).ok()
    }

    /// `f` applied to the cached value of `key`, or `f` back if it is not cached, so that the
    /// caller can apply it to the value read elsewhere (`f` runs under the shard's lock).
    pub(crate) fn with_or_back<T, F: FnOnce(&[u8]) -> T>(&self, key: &[u8], f: F) -> Result<T, F> {
        if !self.enabled() {
            return Err(f);
        }
        let epoch = self.epoch();
        let h = hash_key(self.family, key);
        let shard = self.cache.shard(h);
        match shard.map.get(&h).filter(|e| e.is(self.family, epoch, key)) {
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
        let cache = self.cache;
        if !self.enabled() {
            return;
        }
        let Ok(key_len) = u32::try_from(key.len()) else {
            self.remove(key);
            return;
        };
        if key.len() + value.len() + ENTRY_OVERHEAD > cache.largest_entry() {
            self.remove(key);
            return;
        }
        let h = hash_key(self.family, key);
        let epoch = self.epoch();
        let mut shard = cache.shard(h);
        // A record rewritten (a collection's metadata, a counter) takes its entry's memory again.
        let reused = match shard.map.get_mut(&h) {
            Some(old)
                if old.is(self.family, epoch, key)
                    && crate::layer::fits(old.bytes.capacity(), key.len() + value.len()) =>
            {
                let before = old.charge();
                old.bytes.truncate(key.len());
                old.bytes.extend_from_slice(value);
                Some((before, old.charge()))
            }
            _ => None,
        };
        if let Some((before, after)) = reused {
            shard.bytes = shard.bytes - before + after;
            return;
        }
        let mut bytes = Vec::with_capacity(key.len() + value.len());
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        let entry = Entry {
            bytes,
            key_len,
            family: self.family,
            epoch,
        };
        shard.bytes += entry.charge();
        if let Some(old) = shard.map.insert(h, entry) {
            shard.bytes -= old.charge();
        } else {
            shard.order.push_back(h);
        }
        while shard.bytes > cache.shard_budget {
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
        let h = hash_key(self.family, key);
        let mut shard = self.cache.shard(h);
        // The slot may hold another key with the same hash: leave that one.
        if shard
            .map
            .get(&h)
            .is_some_and(|e| e.family == self.family && e.key() == key)
        {
            if let Some(old) = shard.map.remove(&h) {
                shard.bytes -= old.charge();
            }
        }
    }

    /// Forgets every record of this family (a range deletion in it): O(1), by a new epoch.
    pub(crate) fn clear(&self) {
        self.cache.epochs[self.family as usize].fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_its_budget() {
        let cache = HotCache::new(64 * 1024 * SHARDS);
        let c = cache.family(0);
        for i in 0..100_000u32 {
            c.put(&i.to_be_bytes(), &[7u8; 100]);
        }
        let total: usize = cache.shards.iter().map(|s| s.lock().bytes).sum();
        assert!(total <= 64 * 1024 * SHARDS, "{total}");
        assert!(
            c.get(&99_999u32.to_be_bytes()).is_some(),
            "newest entry kept"
        );
        assert!(c.get(&0u32.to_be_bytes()).is_none(), "oldest entry evicted");
    }

    #[test]
    fn removal_and_clear_forget_entries() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(0);
        c.put(b"a", b"1");
        assert_eq!(c.get(b"a"), Some(b"1".to_vec()));
        c.remove(b"a");
        assert_eq!(c.get(b"a"), None);
        c.put(b"b", b"2");
        cache.clear();
        assert_eq!(c.get(b"b"), None);
    }

    #[test]
    fn families_share_the_budget_but_not_their_keys() {
        let cache = HotCache::new(1 << 20);
        let (meta, data) = (cache.family(0), cache.family(1));
        meta.put(b"k", b"meta");
        data.put(b"k", b"data");
        assert_eq!(meta.get(b"k"), Some(b"meta".to_vec()));
        assert_eq!(data.get(b"k"), Some(b"data".to_vec()));
        data.remove(b"k");
        assert_eq!(meta.get(b"k"), Some(b"meta".to_vec()));
        assert_eq!(data.get(b"k"), None);
    }

    #[test]
    fn clearing_a_family_forgets_only_its_records_and_later_ones_are_seen() {
        let cache = HotCache::new(1 << 20);
        let (meta, data) = (cache.family(0), cache.family(1));
        meta.put(b"m", b"1");
        data.put(b"d", b"2");
        data.clear();
        assert_eq!(data.get(b"d"), None);
        assert_eq!(meta.get(b"m"), Some(b"1".to_vec()));
        data.put(b"d", b"3");
        assert_eq!(data.get(b"d"), Some(b"3".to_vec()));
    }

    #[test]
    fn one_family_may_use_the_whole_budget() {
        let cache = HotCache::new(64 * 1024 * SHARDS);
        let meta = cache.family(0);
        // About 0.9 of the budget in entries of one family: all of them stay.
        let n = 64 * 1024 * SHARDS * 9 / 10 / (4 + 100 + ENTRY_OVERHEAD);
        for i in 0..n as u32 {
            meta.put(&i.to_be_bytes(), &[7u8; 100]);
        }
        let kept = (0..n as u32)
            .filter(|i| meta.get(&i.to_be_bytes()).is_some())
            .count();
        assert!(kept * 10 >= n * 9, "{kept} of {n}");
    }

    #[test]
    fn a_record_too_large_to_cache_forgets_the_one_it_replaces() {
        let cache = HotCache::new(64 * 1024 * SHARDS);
        let c = cache.family(1);
        c.put(b"a", b"small");
        c.put(b"a", &vec![1u8; 64 * 1024]);
        assert_eq!(c.get(b"a"), None);
    }

    #[test]
    fn a_zero_budget_caches_nothing() {
        let cache = HotCache::new(0);
        let c = cache.family(0);
        c.put(b"a", b"1");
        assert_eq!(c.get(b"a"), None);
    }
}
