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
//! replica. Without the tier readers never fill it, but a list pop reading the items next in
//! line ahead (`Storage::warm`), which holds the list's lock like a writer and reads committed
//! records only. With the tier, a point read that found its record only in RocksDB fills it too
//! (`Storage::with_pinned`): no layer named the key, so the record was the committed one, and a
//! fill that a checkpoint's retirement may have overtaken is taken back out.
//!
//! Beside the hashed entries the cache keeps a few **runs**: records whose keys are one prefix
//! followed by consecutive big-endian `u64` indexes (a list's items), read ahead in key order
//! by a list pop and kept as one ordered vector that the following pops read by index (one
//! prefix compare and a slice, no hash and no scattered entry per item). A run obeys the
//! entries' rule slot by slot: every `put` or `remove` of a key in its span (a write without
//! the tier, a checkpoint's [`HotCache::take_layer`] with it) forgets that slot, clearing a
//! family drops the family's runs, and clearing the cache drops them all, so a slot that is
//! still there equals the committed record whenever no layer names its key. Knows nothing of
//! RocksDB.
//!
//! **Garbage keys.** A list pop writes only the list's metadata (`list.rs`): the popped item's
//! record stays in RocksDB as garbage until compaction removes it, and so may its entry or run
//! slot here; nothing forgets them one by one any more (a checkpoint's `take_layer` no longer
//! meets a delete per popped item), and eviction reclaims their memory. The rule above then
//! holds for every key a reader may ask for: no reader asks for an item outside its list's
//! `head..tail` (every list read is bounded by them), and an index that comes back inside the
//! bounds is written anew in a layer, which readers consult first and whose retirement replaces
//! the entry and forgets the run slot as for any put. For garbage keys an entry may outlive
//! the record it copied (compaction removed it), or hold an older version than RocksDB's
//! (the tier's active layer dropped a popped item's put, `Storage::drop_unread`): both are
//! garbage, never read.
//!
//! A family may also be **complete**: its entries then hold every record the family has
//! outside the tier's layers, so a key that no layer names and no entry holds has no record, and
//! a read answers "absent" without asking RocksDB ([`HotFamily::complete`]). `storage.rs`
//! declares it when the tier is on and the family opened empty; it ends for good (until the
//! next open) as soon as a record may be left out: an eviction, a slot taken by a colliding key,
//! a put too large or marked cold, a forgotten key that still has a record, a range deletion
//! short of every key, a clear. Each of these clears the flag before the record leaves (under
//! the same shard lock a reader takes), so a reader that missed and then saw the flag set knows
//! the record was never there. Garbage keys (above) change nothing: their records are never read.

use parking_lot::{Mutex, MutexGuard};
use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use crate::layer::Layer;
use crate::prefetch::prefetch;

const SHARDS: usize = 64;
/// How many families (namespaces) one cache can hold.
pub(crate) const FAMILIES: usize = 2;
/// Bookkeeping bytes charged per entry on top of key and value.
const ENTRY_OVERHEAD: usize = 64;
/// How many runs the cache keeps at most (the oldest goes first). A run holds what one
/// read-ahead read (`list.rs`: 128 items, about 256 KiB at most), so runs take at most a few
/// MB beside the byte budget.
const RUNS: usize = 32;
/// How many of a retiring layer's points forget their run slots per lock of the runs.
const RUN_FORGET_CHUNK: usize = 256;
/// How many of a retiring layer's points are grouped by shard at a time ([`HotCache::take_layer`]).
const TAKE_WINDOW: usize = 16 * 1024;
/// How many points ahead [`HotCache::take_layer`] starts loading a point's key and value.
const PREFETCH_AHEAD: usize = 8;
/// How many of a retiring layer's points are cached or forgotten per lock of their shard.
const TAKE_CHUNK: usize = 64;
/// A retiring layer's point as [`HotCache::take_layer`] applies it: key hash, key, and the value
/// to cache (`None`: forget the key).
type Taken<'a> = (u64, &'a [u8], Option<&'a [u8]>);

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

impl Shard {
    /// Caches `key`'s record `value` (which [`HotFamily::fits`]) under its hash `h`, then evicts
    /// the oldest entries while the shard holds more than `budget` bytes. True when that left
    /// out another key's record (evicted, or its slot taken by this colliding key): the caller,
    /// still holding the shard, ends the completeness of the families (see the module docs).
    #[must_use]
    fn put(
        &mut self,
        h: u64,
        family: u8,
        epoch: u32,
        key: &[u8],
        value: &[u8],
        budget: usize,
    ) -> bool {
        // A record rewritten (a collection's metadata, a counter) takes its entry's memory again.
        let reused = match self.map.get_mut(&h) {
            Some(old)
                if old.is(family, epoch, key)
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
            self.bytes = self.bytes - before + after;
            return false;
        }
        let mut lost = false;
        let mut bytes = Vec::with_capacity(key.len() + value.len());
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        let entry = Entry {
            bytes,
            // `fits` bounds the key length.
            key_len: key.len() as u32,
            family,
            epoch,
        };
        self.bytes += entry.charge();
        if let Some(old) = self.map.insert(h, entry) {
            self.bytes -= old.charge();
            lost |= old.family != family || old.key() != key;
        } else {
            self.order.push_back(h);
        }
        while self.bytes > budget {
            let Some(victim) = self.order.pop_front() else {
                break;
            };
            if let Some(old) = self.map.remove(&victim) {
                self.bytes -= old.charge();
                lost = true;
            }
        }
        // Hashes removed by invalidation stay in `order`; rebuild it before it outgrows the map.
        if self.order.len() > 2 * self.map.len() + 1024 {
            let live: VecDeque<u64> = self.map.keys().copied().collect();
            self.order = live;
        }
        lost
    }

    /// Forgets the entry of `key` (hash `h`) in family `family`. The slot may hold another key
    /// with the same hash: that one stays.
    fn remove(&mut self, h: u64, family: u8, key: &[u8]) {
        if let Slot::Occupied(e) = self.map.entry(h) {
            if e.get().family == family && e.get().key() == key {
                let old = e.remove();
                self.bytes -= old.charge();
            }
        }
    }
}

/// Records of consecutive keys `prefix ++ index` (big-endian `u64`), `first..first + len`,
/// in index order, their values back to back in one buffer.
struct Run {
    family: u8,
    /// The family's epoch when the run was filled: a run of an older epoch is never read.
    epoch: u32,
    prefix: Box<[u8]>,
    first: u64,
    /// Filled from its last index down (a list's right end), else from its first up.
    reverse: bool,
    bytes: Vec<u8>,
    /// Per slot, its value's `start..end` in `bytes`; `None` once forgotten.
    slots: Vec<Option<(u32, u32)>>,
}

impl Run {
    /// The slot of `key` if it lies in the run's span (its value may have been forgotten).
    fn slot(&self, family: u8, prefix: &[u8], index: u64) -> Option<usize> {
        let i = index.checked_sub(self.first)?;
        (self.family == family && i < self.slots.len() as u64 && *self.prefix == *prefix)
            .then_some(i as usize)
    }

    fn value(&self, slot: usize) -> Option<&[u8]> {
        let (a, b) = self.slots[slot]?;
        Some(&self.bytes[a as usize..b as usize])
    }

    fn last(&self) -> u64 {
        self.first + self.slots.len() as u64 - 1
    }
}

/// A key split into its run prefix and index, if it is long enough to be one.
fn split(key: &[u8]) -> Option<(&[u8], u64)> {
    let at = key.len().checked_sub(8)?;
    let (prefix, index) = key.split_at(at);
    Some((prefix, u64::from_be_bytes(index.try_into().ok()?)))
}

#[derive(Default)]
struct Runs {
    /// Oldest first.
    runs: Vec<Run>,
}

impl Runs {
    /// Forgets the slot of `key` in every run of `family` that spans it.
    fn forget(&mut self, family: u8, key: &[u8]) {
        let Some((prefix, index)) = split(key) else {
            return;
        };
        for r in &mut self.runs {
            if let Some(i) = r.slot(family, prefix, index) {
                r.slots[i] = None;
            }
        }
    }
}

thread_local! {
    /// How many reads this thread's hashed entries answered (not the runs).
    static HASHED_HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many reads the hashed entries answered on this thread so far: a list pop compares it
/// around its read to learn whether its items came from hashed entries (worth moving onto a
/// run) rather than from the tier's layers (recently pushed: a run would be shadowed by the
/// layer and forgotten at the next checkpoint) or a run.
pub(crate) fn hashed_hits() -> u64 {
    HASHED_HITS.with(|n| n.get())
}

/// A sharded map from a record's family and key to its value, and a few runs.
pub(crate) struct HotCache {
    shards: Vec<Mutex<Shard>>,
    shard_budget: usize,
    /// Each family's current epoch.
    epochs: [AtomicU32; FAMILIES],
    /// Whether each family is complete (see the module docs).
    complete: [AtomicBool; FAMILIES],
    runs: Mutex<Runs>,
    /// How many runs there are: every lookup, put and remove of a cache without runs skips
    /// their lock.
    run_count: AtomicUsize,
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

/// The shard of a key hash: bits 32 and up. A shard's map places an entry by the hash's low bits
/// (its home slot is `hash & mask`) and tags it with the top seven, so the shard must come from
/// neither: taken from the low bits, as it once was, every entry of a shard had the same low six
/// bits, so only one slot in 64 was ever a home, entries piled up behind those homes, and a
/// lookup walked several groups of slots (a cache miss each) before finding its key or a gap.
/// That probing was most of a lookup's cost: 12% of the server's CPU under HINCRBY over a
/// million hashes, and 7% in the checkpointer while LPOPs retired their items.
fn shard_of(hash: u64) -> usize {
    ((hash >> 32) as usize) % SHARDS
}

impl HotCache {
    /// A cache of about `budget` bytes; 0 disables it.
    pub(crate) fn new(budget: usize) -> HotCache {
        HotCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_budget: budget / SHARDS,
            epochs: std::array::from_fn(|_| AtomicU32::new(0)),
            complete: std::array::from_fn(|_| AtomicBool::new(false)),
            runs: Mutex::new(Runs::default()),
            run_count: AtomicUsize::new(0),
        }
    }

    /// The runs, if there are any.
    fn runs(&self) -> Option<MutexGuard<'_, Runs>> {
        (self.run_count.load(Ordering::Acquire) > 0).then(|| self.runs.lock())
    }

    /// Keeps only the runs `keep` says yes to.
    fn retain_runs(&self, mut keep: impl FnMut(&Run) -> bool) {
        let mut runs = self.runs.lock();
        runs.runs.retain(|r| keep(r));
        self.run_count.store(runs.runs.len(), Ordering::Release);
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
        self.shards[shard_of(hash)].lock()
    }

    /// Ends the completeness of family `family`: called before a record of it may leave.
    fn lose(&self, family: u8) {
        let flag = &self.complete[usize::from(family)];
        // Stored only while set: a put the cache declines (every stream entry at a checkpoint,
        // every write without the tier) then costs a read of a line no one writes.
        if flag.load(Ordering::SeqCst) {
            flag.store(false, Ordering::SeqCst);
        }
    }

    /// Ends the completeness of every family (an entry of any family was evicted).
    fn lose_all(&self) {
        for family in 0..FAMILIES {
            self.lose(family as u8);
        }
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
                // FLUSHALL leaves nothing behind: the family stays complete (empty, then the
                // layer's later points). Any other range may leave records the clear hides.
                if !fam
                    .ranges
                    .iter()
                    .all(|(from, to)| crate::keys::spans_every_key(from, to))
                {
                    self.lose(cache.family);
                }
                cache.forget_family();
            }
            // Every point of the layer forgets its slot in the runs (a put is cached as an
            // entry instead), under the runs' lock once per chunk of points, so that readers
            // of the runs wait for a chunk at most, not for the whole layer.
            if self.runs().is_some() {
                let mut points = fam.points.iter().peekable();
                while points.peek().is_some() {
                    let mut runs = self.runs.lock();
                    for (key, _) in points.by_ref().take(RUN_FORGET_CHUNK) {
                        runs.forget(index as u8, key);
                    }
                }
            }
            self.take_points(cache, fam.points.iter());
        }
    }

    /// Caches or forgets each of a retiring layer's points in family `cache`, a window of
    /// [`TAKE_WINDOW`] points at a time grouped by shard: each shard is locked once per
    /// [`TAKE_CHUNK`] of its points instead of once per point, and the probes of one chunk do
    /// not wait on each other's cache misses (a lock between them would).
    fn take_points<'a>(
        &self,
        cache: HotFamily<'_>,
        points: impl Iterator<Item = (&'a [u8], &'a crate::layer::Point)>,
    ) {
        let epoch = cache.epoch();
        let mut window: Vec<Taken<'_>> = Vec::with_capacity(TAKE_WINDOW);
        let mut next: Vec<(&[u8], &crate::layer::Point)> = Vec::with_capacity(TAKE_WINDOW);
        let mut points = points.peekable();
        while points.peek().is_some() {
            window.clear();
            next.clear();
            next.extend(points.by_ref().take(TAKE_WINDOW));
            for (i, &(key, point)) in next.iter().enumerate() {
                // Keys and values are scattered in memory: the loads of those ahead overlap.
                if let Some(&(k, p)) = next.get(i + PREFETCH_AHEAD) {
                    prefetch(k.as_ptr());
                    if let Some(v) = &p.value {
                        prefetch(v.as_ptr());
                    }
                }
                let value = match &point.value {
                    Some(v) if !point.cold && cache.fits(key, v) => Some(v.as_slice()),
                    // A record RocksDB now holds and the cache will not.
                    Some(_) => {
                        self.lose(cache.family);
                        None
                    }
                    None => None,
                };
                window.push((hash_key(cache.family, key), key, value));
            }
            window.sort_unstable_by_key(|&(h, _, _)| shard_of(h));
            for same in window.chunk_by(|a, b| shard_of(a.0) == shard_of(b.0)) {
                for chunk in same.chunks(TAKE_CHUNK) {
                    let mut shard = self.shard(chunk[0].0);
                    for &(h, key, value) in chunk {
                        match value {
                            Some(v) => {
                                if shard.put(h, cache.family, epoch, key, v, self.shard_budget) {
                                    self.lose_all();
                                }
                            }
                            None => shard.remove(h, cache.family, key),
                        }
                    }
                }
            }
        }
    }

    /// Forgets everything (FLUSHDB, FLUSHALL, a replica's full copy).
    pub(crate) fn clear(&self) {
        self.lose_all();
        self.retain_runs(|_| false);
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

    /// Whether the family is complete: a key that no layer names and no entry holds has no
    /// record (see the module docs). Read after the miss it judges.
    pub(crate) fn complete(&self) -> bool {
        self.cache.complete[usize::from(self.family)].load(Ordering::SeqCst)
    }

    /// Declares the family complete: the caller knows it has no record outside the tier's
    /// layers (it opened empty) and that every record it gains will pass through
    /// [`HotCache::take_layer`].
    pub(crate) fn declare_complete(&self) {
        if self.enabled() {
            self.cache.complete[usize::from(self.family)].store(true, Ordering::SeqCst);
        }
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
        if let (Some(runs), Some((prefix, index))) = (self.cache.runs(), split(key)) {
            for r in runs.runs.iter().rev() {
                if r.epoch != epoch {
                    continue;
                }
                if let Some(v) = r.slot(self.family, prefix, index).and_then(|i| r.value(i)) {
                    return Ok(f(v));
                }
            }
        }
        let h = hash_key(self.family, key);
        let shard = self.cache.shard(h);
        match shard.map.get(&h).filter(|e| e.is(self.family, epoch, key)) {
            Some(e) => {
                HASHED_HITS.with(|n| n.set(n.get().wrapping_add(1)));
                Ok(f(e.value()))
            }
            None => Err(f),
        }
    }

    /// The cached value of `key`.
    #[cfg(test)]
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.with(key, <[u8]>::to_vec)
    }

    /// Whether a run filled in the direction of `reverse` holds the record of `key` or lies
    /// ahead of it in that direction. A list pop asks it for the item after the ones it popped
    /// and reads ahead when not: so pops that walk through a list read ahead once per run, and
    /// pops at an end that pushes keep extending (a stack: LPUSH and LPOP) do not read ahead
    /// at every pop — their items are in the tier's layers, which answer before any run.
    pub(crate) fn run_ahead(&self, key: &[u8], reverse: bool) -> bool {
        self.any_run(key, |r, prefix, index| {
            r.family == self.family
                && r.reverse == reverse
                && match reverse {
                    false => r.last() >= index,
                    true => r.first <= index,
                }
                && *r.prefix == *prefix
        })
    }

    /// Whether a run holds the record of `key`.
    #[cfg(test)]
    pub(crate) fn run_holds(&self, key: &[u8]) -> bool {
        self.any_run(key, |r, prefix, index| {
            r.slot(self.family, prefix, index)
                .is_some_and(|i| r.slots[i].is_some())
        })
    }

    /// Whether a run of the current epoch meets `test` for `key` (split into its list prefix
    /// and index; false for a key that is no list item).
    fn any_run(&self, key: &[u8], test: impl Fn(&Run, &[u8], u64) -> bool) -> bool {
        let Some((prefix, index)) = split(key) else {
            return false;
        };
        let epoch = self.epoch();
        self.cache.runs().is_some_and(|runs| {
            runs.runs
                .iter()
                .any(|r| r.epoch == epoch && test(r, prefix, index))
        })
    }

    /// Starts filling a run with the committed records of consecutive keys, read in key order
    /// (in reverse order with `reverse`). The caller holds the lock of the key they belong to,
    /// as every writer of them does (see [`RunFill`]).
    pub(crate) fn fill_run(&self, reverse: bool) -> RunFill<'_> {
        RunFill {
            family: *self,
            epoch: self.epoch(),
            reverse,
            run: None,
        }
    }

    /// Caches a record just written (the write succeeded and its writer holds the key's lock).
    /// A record too large to cache replaces nothing: the entry it supersedes is forgotten.
    pub(crate) fn put(&self, key: &[u8], value: &[u8]) {
        if let Some(mut runs) = self.cache.runs() {
            runs.forget(self.family, key);
        }
        self.put_entry(key, value);
    }

    /// [`HotFamily::put`] of the hashed entry alone (the caller forgot the runs' slot).
    fn put_entry(&self, key: &[u8], value: &[u8]) {
        if !self.enabled() {
            return;
        }
        if !self.fits(key, value) {
            self.remove(key);
            return;
        }
        let h = hash_key(self.family, key);
        let epoch = self.epoch();
        let budget = self.cache.shard_budget;
        let mut shard = self.cache.shard(h);
        if shard.put(h, self.family, epoch, key, value, budget) {
            self.cache.lose_all();
        }
    }

    /// Whether a record may be cached: its key length fits an entry's `u32` and the whole
    /// entry is at most [`HotCache::largest_entry`].
    fn fits(&self, key: &[u8], value: &[u8]) -> bool {
        u32::try_from(key.len()).is_ok()
            && key.len() + value.len() + ENTRY_OVERHEAD <= self.cache.largest_entry()
    }

    /// Forgets a key (its record is about to change or has been deleted). The family is no
    /// longer complete: the key may still have a record.
    pub(crate) fn remove(&self, key: &[u8]) {
        self.cache.lose(self.family);
        if let Some(mut runs) = self.cache.runs() {
            runs.forget(self.family, key);
        }
        self.remove_entry(key);
    }

    /// [`HotFamily::remove`] of the hashed entry alone (the caller forgot the runs' slot).
    fn remove_entry(&self, key: &[u8]) {
        if !self.enabled() {
            return;
        }
        let h = hash_key(self.family, key);
        self.cache.shard(h).remove(h, self.family, key);
    }

    /// Forgets every record of this family (a range deletion in it): O(1) for the entries, by a
    /// new epoch; the family's runs are dropped. The family is no longer complete.
    pub(crate) fn clear(&self) {
        self.cache.lose(self.family);
        self.forget_family();
    }

    /// [`HotFamily::clear`] keeping the family's completeness: for a range deletion of every
    /// key, which leaves no record behind.
    fn forget_family(&self) {
        self.cache.epochs[self.family as usize].fetch_add(1, Ordering::AcqRel);
        if self.cache.runs().is_some() {
            self.cache.retain_runs(|r| r.family != self.family);
        }
    }
}

/// A run being filled ([`HotFamily::fill_run`]): records pushed in key order (reverse order
/// for a reverse fill) whose keys share a prefix and follow each other by index. A record that
/// does not continue the run is cached as a hashed entry instead. [`RunFill::finish`]
/// installs the run, replacing the family's runs of the same prefix whose spans it overlaps, and
/// the oldest run when there are too many. Safe for the cache's rule because the filler holds
/// the key's lock: no writer can change a record between its read and the install (a change
/// made before the read is in a layer, which readers consult first and which forgets the slot
/// when a checkpoint retires it); the fill takes the family's epoch before reading, so a clear
/// in between leaves the run unread.
pub(crate) struct RunFill<'a> {
    family: HotFamily<'a>,
    epoch: u32,
    reverse: bool,
    run: Option<Run>,
}

impl RunFill<'_> {
    /// Adds the next record.
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        if !self.family.enabled() {
            return;
        }
        let fits = |run: &Run, index: u64| -> bool {
            let Some((prefix, _)) = split(key) else {
                return false;
            };
            let next = match self.reverse {
                false => run.first.checked_add(run.slots.len() as u64),
                true => run.first.checked_sub(run.slots.len() as u64),
            };
            *run.prefix == *prefix && next == Some(index)
        };
        let (Some((prefix, index)), Ok(_)) = (split(key), u32::try_from(value.len())) else {
            self.family.put(key, value);
            return;
        };
        let run = self.run.get_or_insert_with(|| Run {
            family: self.family.family,
            epoch: self.epoch,
            prefix: prefix.into(),
            first: index,
            reverse: self.reverse,
            bytes: Vec::new(),
            slots: Vec::new(),
        });
        let start = run.bytes.len();
        match u32::try_from(start + value.len()) {
            Ok(end) if fits(run, index) => {
                run.bytes.extend_from_slice(value);
                run.slots.push(Some((start as u32, end)));
            }
            _ => self.family.put(key, value),
        }
    }

    /// Installs the run (nothing if no record was pushed).
    pub(crate) fn finish(self) {
        let Some(mut run) = self.run else {
            return;
        };
        if run.slots.is_empty() {
            return;
        }
        if self.reverse {
            run.slots.reverse();
            run.first -= run.slots.len() as u64 - 1;
        }
        let cache = self.family.cache;
        let mut runs = cache.runs.lock();
        runs.runs.retain(|r| {
            !(r.family == run.family
                && r.prefix == run.prefix
                && r.first <= run.last()
                && run.first <= r.last())
        });
        if runs.runs.len() >= RUNS {
            runs.runs.remove(0);
        }
        runs.runs.push(run);
        cache.run_count.store(runs.runs.len(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shards_keys_have_their_home_slots_all_over_its_map() {
        // The keys that land in shard 0: their hashes' low bits (where the map puts them) must
        // not all be the same, or every entry of the shard crowds into a few home slots.
        let low_bits: std::collections::HashSet<u64> = (0..20_000u32)
            .map(|i| hash_key(1, format!("key:{i}").as_bytes()))
            .filter(|&h| shard_of(h) == 0)
            .map(|h| h & 0xff)
            .collect();
        assert!(
            low_bits.len() > 128,
            "{} distinct low bytes",
            low_bits.len()
        );
    }

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

    /// Completeness ends with the first record the cache lets go: an eviction (of any
    /// family), a forgotten key, a put too large to take, a clear. Puts that fit keep it.
    #[test]
    fn a_complete_family_stays_complete_until_a_record_is_let_go() {
        let cache = HotCache::new(64 * 1024);
        let (meta, data) = (cache.family(0), cache.family(1));
        meta.declare_complete();
        data.declare_complete();
        meta.put(b"a", b"1");
        meta.put(b"a", b"2");
        assert!(meta.complete() && data.complete(), "puts that fit keep it");
        let mut i = 0u32;
        while meta.complete() && i < 100_000 {
            data.put(&i.to_be_bytes(), &[0u8; 100]);
            i += 1;
        }
        assert!(
            !meta.complete() && !data.complete(),
            "an eviction ends both"
        );
        assert!(
            i > 10,
            "evicted only once the budget was reached ({i} puts)"
        );

        let cache = HotCache::new(64 * 1024);
        let meta = cache.family(0);
        meta.declare_complete();
        meta.put(b"big", &vec![0u8; cache.largest_entry()]);
        assert!(!meta.complete(), "a put too large to take");

        let cache = HotCache::new(64 * 1024);
        let (meta, data) = (cache.family(0), cache.family(1));
        meta.declare_complete();
        data.declare_complete();
        data.clear();
        assert!(
            meta.complete() && !data.complete(),
            "a family's clear ends its own"
        );
        cache.clear();
        assert!(!meta.complete(), "the cache's clear ends all");

        let disabled = HotCache::new(0);
        disabled.family(0).declare_complete();
        assert!(
            !disabled.family(0).complete(),
            "a disabled cache is never complete"
        );
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

    fn item_key(i: u64) -> Vec<u8> {
        let mut k = b"list-prefix".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k
    }

    /// Fills a run of `family` with items `from..to` (read from `to - 1` down with `reverse`).
    fn fill(c: HotFamily<'_>, from: u64, to: u64, reverse: bool) {
        let mut run = c.fill_run(reverse);
        let order: Vec<u64> = match reverse {
            false => (from..to).collect(),
            true => (from..to).rev().collect(),
        };
        for i in order {
            run.push(&item_key(i), format!("v{i}").as_bytes());
        }
        run.finish();
    }

    #[test]
    fn a_run_serves_its_items_by_index_in_either_fill_order() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        fill(c, 100, 228, false);
        fill(c, 1000, 1128, true);
        for i in (100..228).chain(1000..1128) {
            assert_eq!(
                c.get(&item_key(i)),
                Some(format!("v{i}").into_bytes()),
                "{i}"
            );
            assert!(c.run_holds(&item_key(i)));
        }
        for i in [99, 228, 999, 1128] {
            assert_eq!(c.get(&item_key(i)), None, "{i}");
        }
        assert!(!cache.family(0).run_holds(&item_key(100)), "families apart");
    }

    #[test]
    fn a_run_lies_ahead_of_the_keys_before_it_in_its_direction_only() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        fill(c, 100, 228, false);
        fill(c, 1000, 1128, true);
        // Forward: ahead of everything up to its last index.
        assert!(c.run_ahead(&item_key(50), false));
        assert!(c.run_ahead(&item_key(227), false));
        assert!(!c.run_ahead(&item_key(228), false), "passed");
        // Reverse: ahead of everything down to its first index.
        assert!(c.run_ahead(&item_key(5000), true));
        assert!(c.run_ahead(&item_key(1000), true));
        assert!(!c.run_ahead(&item_key(999), true), "passed");
        assert!(!cache.family(0).run_ahead(&item_key(50), false));
        c.clear();
        assert!(!c.run_ahead(&item_key(50), false), "cleared");
    }

    #[test]
    fn reads_answered_by_hashed_entries_are_counted_and_those_of_runs_are_not() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        fill(c, 0, 4, false);
        c.put(b"entry", b"1");
        let before = hashed_hits();
        assert!(c.get(&item_key(2)).is_some());
        assert!(c.get(b"missing").is_none());
        assert_eq!(hashed_hits(), before);
        assert!(c.get(b"entry").is_some());
        assert_eq!(hashed_hits(), before + 1);
    }

    #[test]
    fn a_record_that_does_not_continue_the_run_becomes_an_entry() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        let mut run = c.fill_run(false);
        run.push(&item_key(5), b"five");
        run.push(&item_key(7), b"seven");
        run.push(b"short", b"other");
        run.finish();
        assert!(c.run_holds(&item_key(5)));
        assert!(!c.run_holds(&item_key(7)));
        assert_eq!(c.get(&item_key(7)), Some(b"seven".to_vec()));
        assert_eq!(c.get(b"short"), Some(b"other".to_vec()));
    }

    #[test]
    fn a_put_or_remove_in_a_runs_span_forgets_that_slot_only() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        fill(c, 0, 10, false);
        c.put(&item_key(3), b"new");
        c.remove(&item_key(4));
        assert_eq!(c.get(&item_key(3)), Some(b"new".to_vec()));
        assert_eq!(c.get(&item_key(4)), None);
        assert!(!c.run_holds(&item_key(3)));
        assert_eq!(c.get(&item_key(5)), Some(b"v5".to_vec()));
    }

    #[test]
    fn a_retired_layer_forgets_the_run_slots_it_names() -> crate::error::Result<()> {
        use crate::pending::BatchOp;
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        fill(c, 0, 10, false);
        let mut layer = Layer::default();
        let (k2, k6) = (item_key(2), item_key(6));
        layer.apply(&BatchOp::Put {
            cf: 7,
            key: &k2,
            value: b"set",
        })?;
        layer.apply(&BatchOp::Delete { cf: 7, key: &k6 })?;
        cache.take_layer(&layer, [5, 7]);
        assert_eq!(c.get(&k2), Some(b"set".to_vec()));
        assert_eq!(c.get(&k6), None);
        assert_eq!(c.get(&item_key(1)), Some(b"v1".to_vec()));
        Ok(())
    }

    #[test]
    fn a_retired_layer_larger_than_a_window_caches_its_puts_and_forgets_the_rest(
    ) -> crate::error::Result<()> {
        use crate::pending::BatchOp;
        let cache = HotCache::new(64 << 20);
        let c = cache.family(0);
        let n = TAKE_WINDOW * 2 + 77;
        let key = |i: usize| format!("k{i}").into_bytes();
        // Every key cached first, so that each kind of point has an entry to replace or forget.
        for i in 0..n {
            c.put(&key(i), b"old");
        }
        let big = vec![b'x'; cache.largest_entry()];
        let mut layer = Layer::default();
        for i in 0..n {
            let k = key(i);
            match i % 4 {
                0 => layer.apply(&BatchOp::Put {
                    cf: 5,
                    key: &k,
                    value: format!("v{i}").as_bytes(),
                })?,
                1 => layer.apply(&BatchOp::Delete { cf: 5, key: &k })?,
                2 => layer.apply_marked(
                    &BatchOp::Put {
                        cf: 5,
                        key: &k,
                        value: b"cold",
                    },
                    true,
                )?,
                _ => layer.apply(&BatchOp::Put {
                    cf: 5,
                    key: &k,
                    value: &big,
                })?,
            }
        }
        cache.take_layer(&layer, [5, 7]);
        for i in 0..n {
            let want = (i % 4 == 0).then(|| format!("v{i}").into_bytes());
            assert_eq!(c.get(&key(i)), want, "key {i}");
        }
        Ok(())
    }

    #[test]
    fn clearing_drops_runs_and_a_run_filled_before_a_clear_is_never_read() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        fill(c, 0, 10, false);
        cache.family(0).clear();
        assert_eq!(c.get(&item_key(1)), Some(b"v1".to_vec()), "other family");
        c.clear();
        assert_eq!(c.get(&item_key(1)), None);
        fill(c, 0, 10, false);
        cache.clear();
        assert_eq!(c.get(&item_key(1)), None);
        // A fill that a clear overtakes.
        let mut run = c.fill_run(false);
        run.push(&item_key(0), b"old");
        c.clear();
        run.finish();
        assert_eq!(c.get(&item_key(0)), None);
    }

    #[test]
    fn the_cache_keeps_a_bounded_number_of_runs() {
        let cache = HotCache::new(1 << 20);
        let c = cache.family(1);
        for r in 0..(RUNS as u64 + 5) {
            fill(c, r * 1000, r * 1000 + 4, false);
        }
        assert_eq!(cache.runs.lock().runs.len(), RUNS);
        assert!(!c.run_holds(&item_key(0)), "the oldest went");
        assert!(c.run_holds(&item_key((RUNS as u64 + 4) * 1000)));
    }

    #[test]
    fn a_zero_budget_caches_nothing() {
        let cache = HotCache::new(0);
        let c = cache.family(0);
        c.put(b"a", b"1");
        assert_eq!(c.get(b"a"), None);
    }
}
