//! Writes held in memory over the database. A [`Layer`] keeps, per column family, the latest
//! point write of each key (a value or a deletion) and the key ranges deleted, kept disjoint; it
//! takes write batches in their RocksDB encoding, in order. Two writers keep layers: an atomic
//! scope (`pending.rs`) until it commits, and the write-back tier (`tier.rs`) until its
//! checkpoint reaches RocksDB. Reads go through a [`Stack`] of layers, top first: the first layer
//! that names a key (a point write, or a deleted range holding it) decides it, and the database
//! answers the rest. The merged iterator of `pending.rs` walks a stack over a RocksDB iterator
//! through a [`Walk`]: per layer, a cursor that copies a run of the layer's puts in the walk's
//! order at a time and serves steps from it until the layer is written to.
//! This module knows nothing of RocksDB beyond the write-batch operations of `pending.rs`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use foldhash::HashMap;
use std::ops::Bound;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::error::{Error, Result};
use crate::pending::{BatchOp, Pending};

/// What a layer says about one key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup<'a> {
    /// The layer holds this value.
    Value(&'a [u8]),
    /// The layer deleted the key (or a range holding it).
    Deleted,
    /// The layer did not touch the key: read the layers below, then the database.
    Untouched,
}

/// Whether a layer hides a lower entry from an iterator.
pub(crate) enum Mask {
    /// Not touched by the layer.
    Visible,
    /// Written or deleted by the layer (an iterator takes the layer's entry instead).
    Point,
    /// In a range the layer deleted: `from..to`.
    Range(Vec<u8>, Vec<u8>),
}

/// Bytes a point write is charged beyond its key and value (map node, vectors).
const ENTRY_OVERHEAD: usize = 64;

/// A point write: a put (`value` is `Some`) or a delete (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Point {
    pub(crate) value: Option<Vec<u8>>,
    /// A put its writer said is seldom read back by key (a stream entry, read by walks): when
    /// the tier retires the layer, it is not handed to the hot-record cache (`hot.rs`).
    pub(crate) cold: bool,
}

/// Point writes: a hash map from key to write, and beside it the *tail*, an ordered run of the
/// writes to keys that came past the end of everything the family held (every tail key is
/// greater than every map key). Writes and point reads of a key the map may hold cost one hash
/// lookup; the map's keys are kept in order for walks only when a walk needs them (a new map key
/// is queued for the order, its bytes shared, not copied). An ordered map was measured first:
/// with a million keys that share their first bytes (a large hash's fields), its lookups were a
/// quarter of a write's CPU. The hash is foldhash, seeded per process (the keys come from
/// clients): SipHash, the standard library's, was 5% of an LPUSH's CPU.
///
/// The tail is for appends: a stream's entries (IDs only grow), a list's pushes at a fresh
/// index (RPUSH at the back, LPUSH at the front while no map key lies above it). A key above
/// the tail's last goes on its end, a key below its first and above every map key on its front,
/// each with one or two comparisons and no hash: no probe that misses, no insert, nothing queued
/// for the order, nothing for a checkpoint to sort (the tail is already in order), and a walk
/// over the tail reads each value beside its key. A key inside the tail's span is found by a
/// binary search; a new one there is put in place when it is near an end (a few moves), and
/// otherwise the whole tail moves into the map first (each key moves at most once, so appends
/// that interleave with writes elsewhere cost at most what they did before). A read of a key
/// above every map key and outside the tail needs no hash lookup either.
#[derive(Default)]
pub(crate) struct Points {
    map: HashMap<Arc<[u8]>, Point>,
    /// The greatest key put in `map` since it was last cleared (removals leave it: it bounds
    /// the map's keys from above).
    map_max: Option<Arc<[u8]>>,
    order: Mutex<Order>,
    /// Writes to keys above every key of `map`, in key order.
    tail: VecDeque<(Box<[u8]>, Point)>,
}

/// How far from an end of the tail a new key inside its span may be put in place (entries
/// moved); further in, the tail moves into the map.
const TAIL_SHIFT: usize = 32;

/// The keys of [`Points`]' map in order, and those added since it was last brought up to date.
#[derive(Default)]
struct Order {
    sorted: BTreeSet<Arc<[u8]>>,
    added: Vec<Arc<[u8]>>,
}

impl Order {
    fn catch_up(&mut self) {
        if self.added.is_empty() {
            return;
        }
        self.added.sort_unstable();
        for k in self.added.drain(..) {
            self.sorted.insert(k);
        }
    }
}

/// Where a sort of keys takes each key's eight-byte *head*: the bytes after a prefix that a
/// sample of the keys shares (`skip`), big-endian, zero-padded past the key's end. For keys that
/// all begin with those `skip` bytes, comparing heads and then (on a tie) whole keys is the
/// keys' own order: the first byte where two keys differ is either among the heads' bytes, or
/// after them (equal heads). A key shorter than its head pads with zeros, and a key that ends
/// there is a prefix of every longer key with the same bytes, so it sorts first on the tie too.
/// The prefix is taken from a sample: a collection's fields or members share their first 21 or
/// more bytes (`keys::data_key`), metadata keys almost none.
#[derive(Clone, Copy)]
struct SortHead<'a> {
    prefix: &'a [u8],
}

impl<'a> SortHead<'a> {
    /// Heads from each key's first byte.
    const START: SortHead<'static> = SortHead { prefix: &[] };
    /// How many keys the shared prefix is taken from.
    const SAMPLE: usize = 16;

    /// The prefix shared by the first [`SortHead::SAMPLE`] of `keys`.
    fn of(mut keys: impl Iterator<Item = &'a [u8]>) -> SortHead<'a> {
        let Some(first) = keys.next() else {
            return SortHead::START;
        };
        let mut len = first.len();
        for k in keys.take(Self::SAMPLE - 1) {
            len = first[..len]
                .iter()
                .zip(k)
                .take_while(|(a, b)| a == b)
                .count();
        }
        SortHead {
            prefix: &first[..len],
        }
    }

    /// `key`'s head, `None` when it does not begin with the prefix.
    fn of_key(&self, key: &[u8]) -> Option<u64> {
        let rest = key.strip_prefix(self.prefix)?;
        let mut b = [0u8; 8];
        let n = rest.len().min(8);
        b[..n].copy_from_slice(&rest[..n]);
        Some(u64::from_be_bytes(b))
    }
}

/// What [`Points::take_run`] does with each key passed (and its value, `None` for a delete):
/// `Some(ended)` stops the run.
type Take<'a> = dyn FnMut(&[u8], Option<&[u8]>) -> Option<bool> + 'a;

/// Where a key of a [`Points`] would be.
#[derive(Clone, Copy)]
enum Side {
    /// At or after the tail's first key: in the tail or nowhere.
    Tail,
    /// Below the tail (or with no tail) and above every map key: nowhere.
    Above,
    /// Perhaps in the map.
    Map,
}

impl Points {
    fn side(&self, key: &[u8]) -> Side {
        if self.tail.front().is_some_and(|(f, _)| key >= &**f) {
            return Side::Tail;
        }
        match &self.map_max {
            Some(m) if key <= &**m => Side::Map,
            _ => Side::Above,
        }
    }

    /// The tail's entry of `key` (at or after the tail's first key).
    fn tail_find(&self, key: &[u8]) -> Option<usize> {
        if self.tail.back().is_some_and(|(b, _)| key > &**b) {
            return None;
        }
        self.tail.binary_search_by(|(k, _)| (**k).cmp(key)).ok()
    }

    fn get(&self, key: &[u8]) -> Option<&Point> {
        match self.side(key) {
            Side::Tail => self.tail_find(key).map(|i| &self.tail[i].1),
            Side::Above => None,
            Side::Map => self.map.get(key),
        }
    }

    fn get_mut(&mut self, key: &[u8]) -> Option<&mut Point> {
        self.get_mut_at(self.side(key), key)
    }

    /// [`Points::get_mut`] of a key whose side is known.
    fn get_mut_at(&mut self, side: Side, key: &[u8]) -> Option<&mut Point> {
        match side {
            Side::Tail => self.tail_find(key).map(|i| &mut self.tail[i].1),
            Side::Above => None,
            Side::Map => self.map.get_mut(key),
        }
    }

    /// Adds a write to `key`, which the points do not hold.
    #[cfg(test)]
    fn insert(&mut self, key: &[u8], point: Point) {
        self.insert_at(self.side(key), key, point)
    }

    /// [`Points::insert`] of a key whose side is known (nothing changed the points since it
    /// was found).
    fn insert_at(&mut self, side: Side, key: &[u8], point: Point) {
        match side {
            Side::Tail => {
                if self.tail.back().is_some_and(|(b, _)| key > &**b) {
                    self.tail.push_back((key.into(), point));
                    return;
                }
                let at = self.tail.partition_point(|(k, _)| &**k < key);
                if at.min(self.tail.len() - at) <= TAIL_SHIFT {
                    self.tail.insert(at, (key.into(), point));
                    return;
                }
                self.spill();
                self.map_insert(key, point);
            }
            Side::Above if self.tail.is_empty() => self.tail.push_back((key.into(), point)),
            Side::Above => self.tail.push_front((key.into(), point)),
            Side::Map => self.map_insert(key, point),
        }
    }

    fn map_insert(&mut self, key: &[u8], point: Point) {
        let key: Arc<[u8]> = Arc::from(key);
        if self.map_max.as_deref().is_none_or(|m| &*key > m) {
            self.map_max = Some(key.clone());
        }
        self.order.get_mut().added.push(key.clone());
        self.map.insert(key, point);
    }

    /// Moves the tail into the map.
    fn spill(&mut self) {
        let tail = std::mem::take(&mut self.tail);
        for (k, p) in tail {
            self.map_insert(&k, p);
        }
    }

    /// Removes the write to `key` (held) unless it lies more than [`TAIL_SHIFT`] entries inside
    /// the tail; returns the bytes it frees. A map key leaves the key order too when it is
    /// among the last few queued for it or already sorted; otherwise it stays queued, walks
    /// pass over it (the map no longer holds it) until the order is next cleared, and its
    /// bytes stay charged.
    fn remove_put(&mut self, key: &[u8]) -> Option<usize> {
        match self.side(key) {
            Side::Tail => {
                let at = self.tail_find(key)?;
                if at.min(self.tail.len() - 1 - at) > TAIL_SHIFT {
                    return None;
                }
                let (k, p) = self.tail.remove(at)?;
                Some(charge(&k, p.value.as_deref()))
            }
            Side::Above => None,
            Side::Map => {
                let (k, p) = self.map.remove_entry(key)?;
                let order = self.order.get_mut();
                let queued = order.added.len();
                let recent = queued.saturating_sub(8);
                let left_order = match order.added[recent..].iter().rposition(|a| **a == *key) {
                    Some(at) => {
                        order.added.swap_remove(recent + at);
                        true
                    }
                    None => order.sorted.remove(key),
                };
                let freed = charge(&k, p.value.as_deref());
                Some(match left_order {
                    true => freed,
                    false => freed - k.len(),
                })
            }
        }
    }

    fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Forgets every point, keeping the map's table, the tail's and the order's queue for reuse.
    fn clear(&mut self) {
        self.map.clear();
        self.map_max = None;
        self.tail.clear();
        let order = self.order.get_mut();
        order.sorted = BTreeSet::new();
        order.added.clear();
    }

    fn is_empty(&self) -> bool {
        self.map.is_empty() && self.tail.is_empty()
    }

    /// How many points the tail holds (the rest are in the map).
    #[cfg(test)]
    fn tail_len(&self) -> usize {
        self.tail.len()
    }

    /// Removes every point in `from..to`; returns the bytes they were charged.
    fn remove_range(&mut self, from: &[u8], to: &[u8]) -> usize {
        let mut freed = 0;
        let lo = self.tail.partition_point(|(k, _)| &**k < from);
        let hi = self.tail.partition_point(|(k, _)| &**k < to);
        if lo < hi {
            for (k, p) in self.tail.drain(lo..hi) {
                freed += charge(&k, p.value.as_deref());
            }
        }
        if self.map.is_empty() {
            return freed;
        }
        let order = self.order.get_mut();
        order.catch_up();
        let inside: Vec<Arc<[u8]>> = order
            .sorted
            .range::<[u8], _>((Bound::Included(from), Bound::Excluded(to)))
            .cloned()
            .collect();
        for k in inside {
            order.sorted.remove(&k);
            if let Some(p) = self.map.remove(&k) {
                freed += charge(&k, p.value.as_deref());
            }
        }
        freed
    }

    /// The first put from `start` in the walk's direction that `ok` accepts, stopping at the
    /// first key `stop` rejects: a search of every point, sorted for the call (the reference
    /// the tests hold [`Walk`] to, which knows neither the key order nor the tail).
    #[cfg(test)]
    fn first_put(
        &self,
        start: Bound<&[u8]>,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut all: Vec<(&[u8], &Point)> = self.iter().collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        if !forward {
            all.reverse();
        }
        for (k, p) in all {
            if !admits(start, k, forward) {
                continue;
            }
            if stop(k) {
                return None;
            }
            match &p.value {
                Some(v) if ok(k) => return Some((k.to_vec(), v.clone())),
                _ => {}
            }
        }
        None
    }

    /// Copies into `run` the points (puts and deletes) from `start` in the walk's direction
    /// that `ok` accepts, in that order, up to `max` of them or about [`RUN_BYTES`] (at least
    /// one), stopping at the first key `stop` rejects; returns whether nothing the walk may
    /// read follows them (the layer holds no further such point, or `stop` ended the run). The
    /// map's part: one search of its key order and one hash lookup per key passed; the tail's:
    /// one binary search, and values read beside their keys. The map's keys all come before
    /// the tail's, so going forward the map is read first, backward the tail. Deletes are
    /// copied as keys alone: a walk passes over them, and the merged iterator asks the run
    /// whether the layer hides a key of the database ([`Walk::mask`]).
    fn take_run(
        &self,
        start: Bound<&[u8]>,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
        max: usize,
        run: &mut Run,
    ) -> bool {
        let mut take = |k: &[u8], v: Option<&[u8]>| -> Option<bool> {
            if stop(k) {
                return Some(true);
            }
            if !ok(k) {
                return None;
            }
            if run.entries.len() >= max || (!run.entries.is_empty() && run.bytes.len() >= RUN_BYTES)
            {
                return Some(false);
            }
            run.push(k, v);
            None
        };
        // Whether the map holds keys the walk reaches: none past `start` when it is at or
        // after the tail's first key.
        let map_reached = !self.map.is_empty()
            && (!forward
                || match (start, self.tail.front()) {
                    (Bound::Included(s) | Bound::Excluded(s), Some((f, _))) => s < &**f,
                    _ => true,
                });
        let ended = if forward {
            let mut ended = None;
            if map_reached {
                ended = self.map_run(start, true, &mut take);
            }
            if ended.is_none() {
                let first = self.tail.partition_point(|(k, _)| !admits(start, k, true));
                ended = self
                    .tail
                    .range(first..)
                    .find_map(|(k, p)| take(k, p.value.as_deref()));
            }
            ended
        } else {
            let end = self.tail.partition_point(|(k, _)| admits(start, k, false));
            let mut ended = self
                .tail
                .range(..end)
                .rev()
                .find_map(|(k, p)| take(k, p.value.as_deref()));
            if ended.is_none() && map_reached {
                ended = self.map_run(start, false, &mut take);
            }
            ended
        };
        ended.unwrap_or(true)
    }

    /// Feeds `take` the map's keys from `start` in the walk's direction, each with its value
    /// (`None` for a delete), until it returns `Some`, which is returned.
    fn map_run(&self, start: Bound<&[u8]>, forward: bool, take: &mut Take<'_>) -> Option<bool> {
        let mut order = self.order.lock();
        order.catch_up();
        let mut look = |k: &Arc<[u8]>| take(k, self.map.get(k).and_then(|p| p.value.as_deref()));
        if forward {
            let mut range = order.sorted.range::<[u8], _>((start, Bound::Unbounded));
            range.find_map(&mut look)
        } else {
            let range = order.sorted.range::<[u8], _>((Bound::Unbounded, start));
            range.rev().find_map(&mut look)
        }
    }

    /// Every point, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &Point)> {
        self.map
            .iter()
            .map(|(k, v)| (&**k, v))
            .chain(self.tail.iter().map(|(k, v)| (&**k, v)))
    }

    /// Every point, in key order. A checkpoint writes them so: RocksDB's memtable inserts a key
    /// next to the one before it in a few comparisons, where a key in hash order costs a
    /// search of the whole skiplist (a tenth of LPUSH's CPU in a profile). Only the map's
    /// points are sorted; the tail's follow them, already in order.
    ///
    /// The sort compares eight bytes of each key held beside it (see [`SortHead`]), so most
    /// comparisons read no key: a key's bytes are a cache miss away, and with the whole key
    /// compared each time the sort was 4% of the server's CPU under INCR at P=16 (1 M keys).
    pub(crate) fn sorted(&self) -> Vec<(&[u8], &Point)> {
        let head = SortHead::of(self.map.keys().map(|k| &**k));
        let mut outside = false;
        let mut keyed: Vec<(u64, &[u8], &Point)> = self
            .map
            .iter()
            .map(|(k, v)| {
                let h = head.of_key(k);
                outside |= h.is_none();
                (h.unwrap_or(0), &**k, v)
            })
            .collect();
        if outside {
            // A key outside the sample's shared prefix: the heads from each key's start.
            for e in &mut keyed {
                e.0 = SortHead::START.of_key(e.1).unwrap_or(0);
            }
        }
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        let mut all: Vec<(&[u8], &Point)> = Vec::with_capacity(keyed.len() + self.tail.len());
        all.extend(keyed.into_iter().map(|(_, k, v)| (k, v)));
        all.extend(self.tail.iter().map(|(k, v)| (&**k, v)));
        all
    }
}

/// A layer's writes to one column family (none: [`Family::is_empty`]; a layer cleared for reuse
/// keeps its empty families).
#[derive(Default)]
pub(crate) struct Family {
    /// Point writes, latest per key.
    pub(crate) points: Points,
    /// Ranges deleted, `from` → `to` (`from..to`), kept disjoint: overlapping and touching
    /// ranges are merged, so a lookup is one search however many ranges a layer deletes. Point
    /// writes made after a range deletion are in `points` (those made before it are dropped).
    pub(crate) ranges: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Bumped by every write to the family (and by [`Layer::clear`]), before the write
    /// changes anything: a walk's [`Cursor`] serves the puts it copied out only while this
    /// stays what it was when it copied them. Shared, so that the cursor reads it without the
    /// layer's lock; only writers, holding the layer mutably, change it.
    changes: Arc<AtomicU64>,
}

impl Family {
    fn is_empty(&self) -> bool {
        self.points.is_empty() && self.ranges.is_empty()
    }

    fn changed(&mut self) {
        let n = self.changes.load(Ordering::Relaxed);
        self.changes.store(n.wrapping_add(1), Ordering::Release);
    }

    /// The deleted range holding `key`, as `(from, to)`.
    fn range_of(&self, key: &[u8]) -> Option<(&[u8], &[u8])> {
        if self.ranges.is_empty() {
            return None;
        }
        let (from, to) = self
            .ranges
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()?;
        (key < to.as_slice()).then_some((from.as_slice(), to.as_slice()))
    }

    /// Records the deletion of `from..to` (non-empty); returns the bytes it freed.
    fn delete_range(&mut self, from: &[u8], to: &[u8]) -> usize {
        let freed = if self.points.is_empty() {
            0
        } else {
            self.points.remove_range(from, to)
        };
        let (mut from, mut to) = (from.to_vec(), to.to_vec());
        // A range starting before `from` that reaches it joins in.
        if let Some((f, t)) = self
            .ranges
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(from.as_slice())))
            .next_back()
        {
            if t.as_slice() >= from.as_slice() {
                from = f.clone();
                to = to.max(t.clone());
            }
        }
        // So do those starting inside `from..=to`.
        let joined: Vec<Vec<u8>> = self
            .ranges
            .range::<[u8], _>((
                Bound::Included(from.as_slice()),
                Bound::Included(to.as_slice()),
            ))
            .map(|(f, _)| f.clone())
            .collect();
        for f in joined {
            if let Some(t) = self.ranges.remove(&f) {
                to = to.max(t);
            }
        }
        self.ranges.insert(from, to);
        freed
    }
}

/// Whether a buffer of `capacity` bytes may take a `len`-byte value in place: it holds it, and
/// is not so much larger that the bytes charged (the length) would hide its size.
pub(crate) fn fits(capacity: usize, len: usize) -> bool {
    capacity >= len && capacity <= len.saturating_mul(2).max(64)
}

fn charge(key: &[u8], value: Option<&[u8]>) -> usize {
    key.len() + value.map_or(0, <[u8]>::len) + ENTRY_OVERHEAD
}

/// A layer's families by column family id: a handful at most, so a scan of a short vector,
/// cheaper than hashing the id on every write.
#[derive(Default)]
struct ByFamily(Vec<(u32, Family)>);

impl ByFamily {
    fn get(&self, cf: u32) -> Option<&Family> {
        self.0.iter().find(|(id, _)| *id == cf).map(|(_, f)| f)
    }

    fn get_mut(&mut self, cf: u32) -> Option<&mut Family> {
        self.0.iter_mut().find(|(id, _)| *id == cf).map(|(_, f)| f)
    }

    fn get_or_default(&mut self, cf: u32) -> &mut Family {
        let at = match self.0.iter().position(|(id, _)| *id == cf) {
            Some(at) => at,
            None => {
                self.0.push((cf, Family::default()));
                self.0.len() - 1
            }
        };
        &mut self.0[at].1
    }
}

/// Writes to every column family, latest per key.
#[derive(Default)]
pub(crate) struct Layer {
    families: ByFamily,
    /// About how many bytes the layer holds.
    bytes: usize,
}

impl Layer {
    /// Takes in one write-batch operation (after every earlier one). A patch (`patch.rs`)
    /// changes the value the layer holds at its key, and is refused when the layer holds none
    /// (a log that patches a value it never held is damaged).
    pub(crate) fn apply(&mut self, op: &BatchOp<'_>) -> Result<()> {
        self.apply_marked(op, false)
    }

    /// [`Layer::apply`], with a put marked `cold` ([`Point::cold`]) when its writer says so.
    pub(crate) fn apply_marked(&mut self, op: &BatchOp<'_>, cold: bool) -> Result<()> {
        match *op {
            BatchOp::Put { cf, key, value } => self.point(cf, key, Some(value), cold),
            BatchOp::Delete { cf, key } => self.point(cf, key, None, false),
            BatchOp::Patch { cf, key, ranges } => {
                let held = self
                    .families
                    .get_mut(cf)
                    .and_then(|f| {
                        f.changed();
                        f.points.get_mut(key)
                    })
                    .and_then(|p| p.value.as_mut())
                    .ok_or_else(|| {
                        Error::Corrupt("redo log: a patch of a record it never wrote".into())
                    })?;
                let before = held.len();
                crate::patch::apply(held, &ranges);
                self.bytes = self.bytes.saturating_sub(before) + ranges.len;
            }
            BatchOp::DeleteRange { cf, from, to } => {
                if from < to {
                    let f = self.families.get_or_default(cf);
                    f.changed();
                    let freed = f.delete_range(from, to);
                    self.bytes = self.bytes.saturating_sub(freed) + from.len() + to.len();
                }
            }
        }
        Ok(())
    }

    fn point(&mut self, cf: u32, key: &[u8], value: Option<&[u8]>, cold: bool) {
        let f = self.families.get_or_default(cf);
        f.changed();
        let added = charge(key, value);
        // Replacing keeps the map's key, and the old value's memory when the new one fits in it.
        // Where the key would be is worked out once, for the lookup and for the insert.
        let side = f.points.side(key);
        match f.points.get_mut_at(side, key) {
            Some(old) => {
                self.bytes = self.bytes.saturating_sub(charge(key, old.value.as_deref())) + added;
                old.cold = cold;
                match (old.value.as_mut(), value) {
                    (Some(buf), Some(v)) if fits(buf.capacity(), v.len()) => {
                        buf.clear();
                        buf.extend_from_slice(v);
                    }
                    _ => old.value = value.map(<[u8]>::to_vec),
                }
            }
            None => {
                let value = value.map(<[u8]>::to_vec);
                f.points.insert_at(side, key, Point { value, cold });
                self.bytes += added;
            }
        }
    }

    /// Forgets the put of `key` in family `cf`, as if the layer had never written it (a
    /// delete stays); returns whether it did. For records their writer says are garbage no
    /// reader asks for (a popped list item, `list.rs`): a reader asking all the same would get
    /// the record below the layer. A put deep inside the tail stays (moving the tail's
    /// entries would cost more than the put's trip to RocksDB).
    pub(crate) fn drop_put(&mut self, cf: u32, key: &[u8]) -> bool {
        let Some(f) = self.families.get_mut(cf) else {
            return false;
        };
        if f.points.get(key).is_none_or(|p| p.value.is_none()) {
            return false;
        }
        f.changed();
        match f.points.remove_put(key) {
            Some(freed) => {
                self.bytes = self.bytes.saturating_sub(freed);
                true
            }
            None => false,
        }
    }

    /// Charges the layer for `count` records of `key_len`-byte keys that its writer made
    /// garbage without writing them (a list pop, `list.rs`), as many bytes as deletes of them
    /// would have been charged: the layer's size decides when a checkpoint runs, and so bounds
    /// the redo log a restart replays, which holds the pops' records all the same.
    pub(crate) fn charge_garbage(&mut self, count: usize, key_len: usize) {
        self.bytes += count * (key_len + ENTRY_OVERHEAD);
    }

    /// Whether the layer holds no write.
    pub(crate) fn is_empty(&self) -> bool {
        self.families.0.iter().all(|(_, f)| f.is_empty())
    }

    /// Forgets every write, keeping the memory of its maps: the write-back tier makes the layer
    /// a checkpoint retired its next active one, whose writes then fill tables already sized
    /// (growing a fresh one rehashed it and faulted in new pages: an eighth of an LPUSH's CPU
    /// in a profile).
    pub(crate) fn clear(&mut self) {
        for (_, f) in &mut self.families.0 {
            f.points.clear();
            f.ranges.clear();
            f.changed();
        }
        self.bytes = 0;
    }

    /// About how many bytes of memory the layer's writes take.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The families written, by column family id.
    pub(crate) fn families(&self) -> impl Iterator<Item = (u32, &Family)> {
        self.families.0.iter().map(|(cf, f)| (*cf, f))
    }

    /// What the layer holds at `key` of family `cf`.
    pub(crate) fn lookup(&self, cf: u32, key: &[u8]) -> Lookup<'_> {
        let Some(f) = self.families.get(cf) else {
            return Lookup::Untouched;
        };
        match f.points.get(key).map(|p| p.value.as_deref()) {
            Some(Some(v)) => Lookup::Value(v),
            Some(None) => Lookup::Deleted,
            None if f.range_of(key).is_some() => Lookup::Deleted,
            None => Lookup::Untouched,
        }
    }

    /// The change count of family `cf` ([`Family::changes`]) and its value now (`None` while
    /// the layer has no such family).
    fn changes(&self, cf: u32) -> Option<(Arc<AtomicU64>, u64)> {
        let f = self.families.get(cf)?;
        Some((f.changes.clone(), f.changes.load(Ordering::Acquire)))
    }

    /// Whether the layer deleted a range of family `cf`.
    fn deletes_ranges(&self, cf: u32) -> bool {
        self.families.get(cf).is_some_and(|f| !f.ranges.is_empty())
    }

    /// Copies into `run` the points of family `cf` from `start` in the walk's direction
    /// ([`Points::take_run`]); returns whether nothing the walk may read follows them.
    #[allow(clippy::too_many_arguments)]
    fn take_run(
        &self,
        cf: u32,
        start: Bound<&[u8]>,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
        max: usize,
        run: &mut Run,
    ) -> bool {
        match self.families.get(cf) {
            Some(f) => f.points.take_run(start, forward, ok, stop, max, run),
            None => true,
        }
    }

    /// Whether the layer wrote anything to family `cf`.
    pub(crate) fn touches(&self, cf: u32) -> bool {
        self.families.get(cf).is_some_and(|f| !f.is_empty())
    }

    pub(crate) fn mask(&self, cf: u32, key: &[u8]) -> Mask {
        let Some(f) = self.families.get(cf) else {
            return Mask::Visible;
        };
        if f.points.contains_key(key) {
            return Mask::Point;
        }
        match f.range_of(key) {
            Some((from, to)) => Mask::Range(from.to_vec(), to.to_vec()),
            None => Mask::Visible,
        }
    }

    /// The first put of family `cf` from `start` in the walk's direction (forward: after it,
    /// in key order) that `ok` accepts, stopping at the first key `stop` rejects.
    #[cfg(test)]
    fn first_put(
        &self,
        cf: u32,
        start: Bound<&[u8]>,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        self.families
            .get(cf)?
            .points
            .first_put(start, forward, ok, stop)
    }
}

/// One layer of a [`Stack`], read live at each step.
#[derive(Clone)]
pub(crate) enum Source {
    /// This thread's open atomic scope.
    Scope(Rc<RefCell<Pending>>),
    /// A layer of the write-back tier (shared between threads).
    Shared(Arc<RwLock<Layer>>),
}

impl Source {
    fn with<T>(&self, f: impl FnOnce(&Layer) -> T) -> T {
        match self {
            Source::Scope(p) => f(p.borrow().layer()),
            Source::Shared(l) => f(&l.read()),
        }
    }
}

/// Layers over the database, top (newest) first.
#[derive(Clone, Default)]
pub(crate) struct Stack {
    sources: Vec<Source>,
}

impl Stack {
    pub(crate) fn push(&mut self, source: Source) {
        self.sources.push(source);
    }

    /// Keeps only the layers that wrote to family `cf`; `None` when none did.
    pub(crate) fn touching(mut self, cf: u32) -> Option<Stack> {
        self.sources.retain(|s| s.with(|l| l.touches(cf)));
        (!self.sources.is_empty()).then_some(self)
    }

    /// How the top layer naming `key` hides it (`Visible` when none does).
    #[cfg(test)]
    pub(crate) fn mask(&self, cf: u32, key: &[u8]) -> Mask {
        self.mask_above(self.sources.len(), cf, key)
    }

    #[cfg(test)]
    fn mask_above(&self, n: usize, cf: u32, key: &[u8]) -> Mask {
        for s in &self.sources[..n] {
            let m = s.with(|l| l.mask(cf, key));
            if !matches!(m, Mask::Visible) {
                return m;
            }
        }
        Mask::Visible
    }

    /// The first put visible through the stack after `from` that `ok` accepts, stopping at the
    /// first key `stop` rejects: each layer's next put that no layer above hides, the least.
    /// Each call searches every layer from the top of its key order and copies what it finds:
    /// the walk as it was before [`Walk`], kept as the reference its tests compare with.
    #[cfg(test)]
    pub(crate) fn put_after(
        &self,
        cf: u32,
        from: Bound<&[u8]>,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        self.next_put(cf, from, ok, stop, true)
    }

    /// As [`Stack::put_after`], going backward from `to`.
    #[cfg(test)]
    pub(crate) fn put_before(
        &self,
        cf: u32,
        to: Bound<&[u8]>,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        self.next_put(cf, to, ok, stop, false)
    }

    #[cfg(test)]
    fn next_put(
        &self,
        cf: u32,
        start: Bound<&[u8]>,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
        forward: bool,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut best: Option<(Vec<u8>, Vec<u8>)> = None;
        for (i, s) in self.sources.iter().enumerate() {
            let mut at: Bound<Vec<u8>> = owned(start);
            loop {
                let beyond = |k: &[u8]| {
                    stop(k)
                        || best
                            .as_ref()
                            .is_some_and(|(b, _)| if forward { k >= b } else { k <= b })
                };
                let found = s.with(|l| l.first_put(cf, borrowed(&at), forward, ok, &beyond));
                let Some((k, v)) = found else {
                    break;
                };
                match (self.mask_above(i, cf, &k), forward) {
                    (Mask::Visible, _) => {
                        best = Some((k, v));
                        break;
                    }
                    (Mask::Point, _) => at = Bound::Excluded(k),
                    (Mask::Range(_, to), true) => at = Bound::Included(to),
                    (Mask::Range(from, _), false) => at = Bound::Excluded(from),
                }
            }
        }
        best
    }
}

/// Bytes of keys and values a [`Cursor`] copies out of a layer in one run (beyond its first
/// put): a walk that reads one entry of large values does not copy many of them.
const RUN_BYTES: usize = 64 << 10;
/// Puts a cursor copies in its first run after a seek; each further run (the walk went past the
/// last) takes `RUN_GROWTH` times as many, up to `RUN_MAX`.
const RUN_FIRST: usize = 16;
const RUN_GROWTH: usize = 8;
const RUN_MAX: usize = 512;

/// Points copied out of a layer, in a walk's direction: keys and values back to back in one
/// buffer, reused from run to run. A delete is its key alone.
#[derive(Default)]
struct Run {
    bytes: Vec<u8>,
    /// Per point: where its key starts in `bytes`, its key's length, its value's length
    /// ([`DELETED`] for a delete).
    entries: Vec<(usize, usize, usize)>,
}

/// The value length [`Run`] notes for a delete.
const DELETED: usize = usize::MAX;

impl Run {
    fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }

    fn push(&mut self, key: &[u8], value: Option<&[u8]>) {
        let len = value.map_or(DELETED, <[u8]>::len);
        self.entries.push((self.bytes.len(), key.len(), len));
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value.unwrap_or_default());
    }

    fn is_put(&self, i: usize) -> bool {
        self.entries[i].2 != DELETED
    }

    /// The first entry from `i` on that is a put.
    fn put_from(&self, i: usize) -> Option<usize> {
        (i..self.len()).find(|&j| self.is_put(j))
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn key(&self, i: usize) -> &[u8] {
        let (at, k, _) = self.entries[i];
        &self.bytes[at..at + k]
    }

    fn value(&self, i: usize) -> &[u8] {
        match self.entries[i] {
            (_, _, DELETED) => &[],
            (at, k, v) => &self.bytes[at + k..at + k + v],
        }
    }
}

/// Whether `key` is on the walk's side of `start`: after it going forward, before it backward.
fn admits(start: Bound<&[u8]>, key: &[u8], forward: bool) -> bool {
    match (start, forward) {
        (Bound::Unbounded, _) => true,
        (Bound::Included(s), true) => key >= s,
        (Bound::Excluded(s), true) => key > s,
        (Bound::Included(s), false) => key <= s,
        (Bound::Excluded(s), false) => key < s,
    }
}

/// Whether every key `inner` admits, `outer` admits too (both bounds of one direction).
fn within(inner: Bound<&[u8]>, outer: Bound<&[u8]>, forward: bool) -> bool {
    let on_side = |a: &[u8], b: &[u8]| if forward { a >= b } else { a <= b };
    let past = |a: &[u8], b: &[u8]| if forward { a > b } else { a < b };
    match (inner, outer) {
        (_, Bound::Unbounded) => true,
        (Bound::Unbounded, _) => false,
        (Bound::Included(i), Bound::Included(o)) | (Bound::Excluded(i), Bound::Included(o)) => {
            on_side(i, o)
        }
        (Bound::Included(i), Bound::Excluded(o)) => past(i, o),
        (Bound::Excluded(i), Bound::Excluded(o)) => on_side(i, o),
    }
}

/// A walk's place in one layer of its stack: a run of the layer's puts from where the walk
/// stands, in its direction and within its bounds, copied out with one search of the layer's
/// key order, and served step by step from there while the family's change count
/// ([`Family::changes`]) is the one it was copied at (read without the layer's lock). Any
/// write to the family since (another thread's to the tier's active layer, the thread's own
/// to its scope) makes the next step copy a fresh run from where it stands, so every step
/// reads what a search of the live layer would (the layers are read live at each step); a
/// layer nobody writes while the walk goes on (a frozen one, a scope while its thread walks,
/// the active one between writes) is searched and locked once per run instead of once per
/// step.
struct Cursor {
    run: Run,
    /// Whether `run` holds a run (not before the first step, nor after a seek).
    taken: bool,
    /// The family's change count, and its value when `run` was copied.
    counter: Option<Arc<AtomicU64>>,
    changes: u64,
    forward: bool,
    /// Where the run starts: it holds every point (put or delete) this bound admits (that the
    /// walk's `ok` accepts, before its `stop`), up to its last one.
    from: Bound<Vec<u8>>,
    /// Whether nothing the walk may read follows the run's last point.
    complete: bool,
    /// Whether the layer had deleted ranges of the family when the run was copied (the run
    /// then cannot say alone whether the layer hides a key).
    ranges: bool,
    /// The entry the last step stopped at.
    at: usize,
    /// How many puts the next run takes.
    want: usize,
}

impl Default for Cursor {
    fn default() -> Cursor {
        Cursor {
            run: Run::default(),
            taken: false,
            counter: None,
            changes: 0,
            forward: true,
            from: Bound::Unbounded,
            complete: false,
            ranges: false,
            at: 0,
            want: RUN_FIRST,
        }
    }
}

impl Cursor {
    /// Forgets the run (a seek: the walk's bounds may change).
    fn reset(&mut self) {
        self.taken = false;
        self.want = RUN_FIRST;
    }

    /// Whether the run holds what a search from `start` needs, as of when it was copied.
    fn covers(&self, start: Bound<&[u8]>, forward: bool) -> bool {
        self.taken
            && self.forward == forward
            && within(start, borrowed(&self.from), forward)
            && (self.complete
                || self
                    .run
                    .len()
                    .checked_sub(1)
                    .is_some_and(|last| admits(start, self.run.key(last), forward)))
    }

    /// How the layer hides `key` (a key the walk's `ok` accepts), if the run can tell: it is
    /// current, holds every point from its start to past `key` in the walk's direction, and
    /// the layer had no deleted range. A point of the run at `key` hides it; none, nothing
    /// does. One binary search of the run, no lock, no hash.
    fn mask(&self, key: &[u8]) -> Option<Mask> {
        if !self.taken || self.ranges || !admits(borrowed(&self.from), key, self.forward) {
            return None;
        }
        let n = self.run.len();
        let before = |i: usize| {
            let k = self.run.key(i);
            if self.forward {
                k < key
            } else {
                k > key
            }
        };
        // The first entry at `key` or past it.
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == n && !self.complete {
            return None;
        }
        if !self.current() {
            return None;
        }
        Some(if lo < n && self.run.key(lo) == key {
            Mask::Point
        } else {
            Mask::Visible
        })
    }

    /// Whether no write reached the family since the run was copied.
    fn current(&self) -> bool {
        self.counter
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Acquire) == self.changes)
    }

    /// Copies a run of the layer's puts from `start`.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        source: &Source,
        cf: u32,
        start: Bound<&[u8]>,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
        want: usize,
    ) {
        self.from = owned(start);
        self.run.clear();
        let (counter, complete, ranges) = source.with(|l| {
            let counter = l.changes(cf);
            let complete = l.take_run(cf, start, forward, ok, stop, want, &mut self.run);
            (counter, complete, l.deletes_ranges(cf))
        });
        self.ranges = ranges;
        (self.counter, self.changes) = match counter {
            Some((c, n)) => (Some(c), n),
            None => (None, 0),
        };
        self.complete = complete;
        self.taken = true;
        self.forward = forward;
        self.at = 0;
    }

    /// The first entry of the run that `start` admits (the run is in the walk's order, so
    /// those it admits come last): one or two comparisons when the walk steps on from where it
    /// stopped, a binary search otherwise.
    fn position(&self, start: Bound<&[u8]>) -> usize {
        let n = self.run.len();
        let admitted = |i: usize| admits(start, self.run.key(i), self.forward);
        for i in [self.at, self.at + 1] {
            if i <= n && (i == n || admitted(i)) && (i == 0 || !admitted(i - 1)) {
                return i;
            }
        }
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if admitted(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// The layer's first put from `start` in the walk's direction that `ok` accepts, before
    /// the first key `stop` rejects and before `best` (a put of another layer the walk
    /// already found): the entry of the run holding it. `ok` and `stop` (the walk's bounds and
    /// its end in this direction) filter and end the runs copied, so they must be the same
    /// from one seek to the next.
    #[allow(clippy::too_many_arguments)]
    fn find(
        &mut self,
        source: &Source,
        cf: u32,
        start: Bound<&[u8]>,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
        best: Option<&[u8]>,
    ) -> Option<usize> {
        let covers = self.covers(start, forward);
        if !covers || !self.current() {
            // A run the layer's writes made stale takes about as many puts as the walk read
            // from it (at least the next two): a walk over a layer written at every step copies
            // little more than it reads.
            let want = if covers {
                (2 * (self.at + 1)).clamp(2, RUN_MAX)
            } else {
                self.want
            };
            self.take(source, cf, start, forward, ok, stop, want);
        }
        let mut i = self.position(start);
        loop {
            // Deletes are passed over.
            if let Some(p) = self.run.put_from(i) {
                self.at = p;
                let k = self.run.key(p);
                let beyond = best.is_some_and(|b| if forward { k >= b } else { k <= b });
                return (!beyond).then_some(p);
            }
            i = self.run.len();
            if self.complete || i == 0 {
                self.at = i;
                return None;
            }
            // Past the run's last point: the next run, longer, from there.
            self.want = (self.want * RUN_GROWTH).min(RUN_MAX);
            let last = Bound::Excluded(self.run.key(i - 1).to_vec());
            self.take(source, cf, borrowed(&last), forward, ok, stop, self.want);
            i = 0;
        }
    }
}

/// A walk over a [`Stack`]: the merged iterator's view of the layers, stepping from put to put
/// in either direction with a [`Cursor`] per layer. A step asks each layer for its next put
/// after the walk's place that no layer above hides, and takes the least (as
/// [`Stack::put_after`] does, with the same answers however the layers change between steps);
/// the put it found is lent from its layer's cursor, not copied again.
pub(crate) struct Walk {
    stack: Stack,
    cursors: Vec<Cursor>,
    /// The put the last step found: its layer's index and the entry of that layer's run.
    found: Option<(usize, usize)>,
    /// The found put's key, copied for the next step's start (kept for its memory).
    start: Vec<u8>,
}

impl Walk {
    pub(crate) fn new(stack: Stack) -> Walk {
        let cursors = stack.sources.iter().map(|_| Cursor::default()).collect();
        Walk {
            stack,
            cursors,
            found: None,
            start: Vec::new(),
        }
    }

    /// Forgets every cursor's run: the walk starts again (a seek), perhaps with other bounds.
    pub(crate) fn restart(&mut self) {
        self.cursors.iter_mut().for_each(Cursor::reset);
        self.found = None;
    }

    /// Forgets the put found last but keeps the cursors' runs: the walk starts again (a seek)
    /// within the same bounds, so a run that holds the new start serves it (a search that
    /// seeks forward from range to range, as GEOSEARCH does, copies each run once).
    pub(crate) fn reseek(&mut self) {
        self.found = None;
        self.cursors.iter_mut().for_each(|c| c.want = RUN_FIRST);
    }

    /// How the top layer naming `key` hides it (`Visible` when none does), for a key the
    /// walk's `ok` accepts (the bounds its runs were copied within). A layer whose cursor's
    /// run holds the key's place answers from the run ([`Cursor::mask`]): as the merged
    /// iterator steps through the database, each of its keys is usually within the runs the
    /// walk copied for the layers' own puts. Otherwise the layer is searched.
    pub(crate) fn mask(&self, cf: u32, key: &[u8]) -> Mask {
        mask_through(&self.stack, &self.cursors, self.cursors.len(), cf, key)
    }

    /// The put the last step found, as `(key, value)`.
    pub(crate) fn found(&self) -> Option<(&[u8], &[u8])> {
        let (layer, entry) = self.found?;
        let run = &self.cursors[layer].run;
        Some((run.key(entry), run.value(entry)))
    }

    /// Steps to the first put visible through the stack from `start` in the walk's direction
    /// that `ok` accepts, stopping at the first key `stop` rejects (the walk's end, the same
    /// from one [`Walk::restart`] to the next); [`Walk::found`] has it.
    pub(crate) fn step(
        &mut self,
        cf: u32,
        start: Bound<&[u8]>,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
    ) {
        let Walk {
            stack,
            cursors,
            found,
            ..
        } = self;
        *found = None;
        for i in 0..cursors.len() {
            let (above, rest) = cursors.split_at_mut(i);
            let Some(cursor) = rest.first_mut() else {
                break;
            };
            let best = found.map(|(l, e)| above[l].run.key(e));
            let source = &stack.sources[i];
            let mut skip: Option<Bound<Vec<u8>>> = None;
            loop {
                let at = skip.as_ref().map_or(start, borrowed);
                let Some(e) = cursor.find(source, cf, at, forward, ok, stop, best) else {
                    break;
                };
                if i == 0 {
                    *found = Some((i, e));
                    break;
                }
                match (
                    mask_through(stack, above, i, cf, cursor.run.key(e)),
                    forward,
                ) {
                    (Mask::Visible, _) => {
                        *found = Some((i, e));
                        break;
                    }
                    (Mask::Point, _) => skip = Some(Bound::Excluded(cursor.run.key(e).to_vec())),
                    (Mask::Range(_, to), true) => skip = Some(Bound::Included(to)),
                    (Mask::Range(from, _), false) => skip = Some(Bound::Excluded(from)),
                }
            }
        }
    }

    /// Steps on from the put found last ([`Walk::step`] from just after it); with none found,
    /// finds none.
    pub(crate) fn step_on(
        &mut self,
        cf: u32,
        forward: bool,
        ok: &dyn Fn(&[u8]) -> bool,
        stop: &dyn Fn(&[u8]) -> bool,
    ) {
        // One layer, unchanged since its run was copied, and the run goes on: the next put is
        // the run's next put (the run holds only points the walk accepts, in its order).
        if let ([cursor], Some((0, e))) = (&mut self.cursors[..], self.found) {
            if cursor.forward == forward && cursor.current() {
                if let Some(next) = cursor.run.put_from(e + 1) {
                    cursor.at = next;
                    self.found = Some((0, next));
                    return;
                }
            }
        }
        let mut start = std::mem::take(&mut self.start);
        start.clear();
        match self.found() {
            Some((k, _)) => start.extend_from_slice(k),
            None => return,
        }
        self.step(cf, Bound::Excluded(&start), forward, ok, stop);
        self.start = start;
    }
}

/// How the top one of the first `n` layers of `stack` naming `key` hides it (`Visible` when none
/// does), asking each layer's cursor (`cursors[i]` walks `stack`'s layer `i`) before the layer.
fn mask_through(stack: &Stack, cursors: &[Cursor], n: usize, cf: u32, key: &[u8]) -> Mask {
    for (i, s) in stack.sources[..n].iter().enumerate() {
        let m = match cursors.get(i).and_then(|c| c.mask(key)) {
            Some(m) => m,
            None => s.with(|l| l.mask(cf, key)),
        };
        if !matches!(m, Mask::Visible) {
            return m;
        }
    }
    Mask::Visible
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound;
    use std::sync::Arc;

    use parking_lot::RwLock;

    use super::{Layer, Source, Stack, Walk};
    use crate::pending::BatchOp;

    /// xorshift64*: deterministic test randomness.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
        }
        fn key(&mut self) -> Vec<u8> {
            let len = 1 + self.below(3) as usize;
            (0..len).map(|_| b'a' + self.below(5) as u8).collect()
        }
    }

    /// A checkpoint's points come out in key order whatever prefixes the keys share: keys of
    /// one collection (a long shared prefix), of many, keys that are prefixes of others, keys
    /// with zero bytes where a short key's head is padded, and a few keys outside the prefix a
    /// sample of the others shares.
    #[test]
    fn sorted_points_are_in_key_order_whatever_prefixes_the_keys_share() {
        let mut rng = Rng(0x0005_eed0_f50f);
        let shared = b"\x00\x12\x34\x00\x00\x00\x06myhash\x00\x00\x00\x00\x00\x00\x00\x01".to_vec();
        let cases: Vec<Vec<Vec<u8>>> = vec![
            // One collection: every key behind the same 21 bytes.
            (0..2000)
                .map(|_| [shared.clone(), rng.key()].concat())
                .collect(),
            // The same, with a few keys of other collections and short keys among them.
            (0..2000)
                .map(|i| match i % 500 {
                    0 => rng.key(),
                    1 => shared[..rng.below(shared.len() as u64) as usize].to_vec(),
                    _ => [shared.clone(), rng.key()].concat(),
                })
                .collect(),
            // Keys differing in their first bytes, zero bytes where heads pad.
            (0..2000)
                .map(|_| {
                    let len = rng.below(12) as usize;
                    (0..len)
                        .map(|_| [0u8, 1, b'a'][rng.below(3) as usize])
                        .collect()
                })
                .collect(),
        ];
        for (n, keys) in cases.into_iter().enumerate() {
            let mut points = super::Points::default();
            let mut model = BTreeMap::new();
            for (i, k) in keys.into_iter().enumerate() {
                let value = i.to_le_bytes().to_vec();
                match points.get_mut(&k) {
                    Some(p) => p.value = Some(value.clone()),
                    None => points.insert(
                        &k,
                        super::Point {
                            value: Some(value.clone()),
                            cold: false,
                        },
                    ),
                }
                model.insert(k, value);
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> = points
                .sorted()
                .into_iter()
                .map(|(k, p)| (k.to_vec(), p.value.clone().unwrap_or_default()))
                .collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
            assert_eq!(got, want, "case {n}");
        }
    }

    #[test]
    fn deleted_ranges_merge_when_they_overlap_or_touch() {
        let mut f = super::Family::default();
        let put = super::Point {
            value: Some(b"v".to_vec()),
            cold: false,
        };
        f.points.insert(b"c1", put);
        f.delete_range(b"b", b"d");
        f.delete_range(b"c", b"f");
        f.delete_range(b"a", b"b");
        f.delete_range(b"x", b"z");
        f.delete_range(b"e", b"e5");
        let ranges: Vec<(&[u8], &[u8])> = f
            .ranges
            .iter()
            .map(|(a, b)| (a.as_slice(), b.as_slice()))
            .collect();
        assert_eq!(ranges, vec![(&b"a"[..], &b"f"[..]), (&b"x"[..], &b"z"[..])]);
        assert!(
            f.points.iter().next().is_none(),
            "a point inside a deleted range is gone"
        );
        assert_eq!(f.range_of(b"a"), Some((&b"a"[..], &b"f"[..])));
        assert_eq!(f.range_of(b"e9"), Some((&b"a"[..], &b"f"[..])));
        assert_eq!(f.range_of(b"f"), None);
        assert_eq!(f.range_of(b"w"), None);
        assert_eq!(f.range_of(b"y"), Some((&b"x"[..], &b"z"[..])));
        assert_eq!(f.range_of(b"0"), None);
    }

    /// A layer cleared for reuse (the tier's next active layer) names no key, touches no family,
    /// walks nothing, and takes writes as a new one does.
    #[test]
    fn a_cleared_layer_holds_nothing_and_takes_writes_again() {
        let mut layer = Layer::default();
        let put = |k: &'static [u8], v: &'static [u8]| BatchOp::Put {
            cf: 1,
            key: k,
            value: v,
        };
        assert!(layer.apply(&put(b"a", b"1")).is_ok());
        let range = BatchOp::DeleteRange {
            cf: 2,
            from: b"m",
            to: b"n",
        };
        assert!(layer.apply(&range).is_ok());
        layer.clear();
        assert!(layer.is_empty());
        assert_eq!(layer.bytes(), 0);
        assert!(!layer.touches(1) && !layer.touches(2));
        assert_eq!(layer.lookup(1, b"a"), super::Lookup::Untouched);
        assert_eq!(layer.lookup(2, b"m1"), super::Lookup::Untouched);
        let all = |_: &[u8]| true;
        let none = |_: &[u8]| false;
        assert_eq!(
            layer.first_put(1, Bound::Unbounded, true, &all, &none),
            None
        );
        assert!(layer.apply(&put(b"b", b"2")).is_ok());
        assert!(!layer.is_empty());
        assert_eq!(layer.lookup(1, b"b"), super::Lookup::Value(b"2"));
        assert_eq!(layer.lookup(1, b"a"), super::Lookup::Untouched);
        let walked = layer.first_put(1, Bound::Unbounded, true, &all, &none);
        assert_eq!(walked, Some((b"b".to_vec(), b"2".to_vec())));
    }

    /// Applies random writes to a plain map (the model) and to the top of a stack of layers;
    /// every few steps a new layer is pushed on top. Then every key, and every walk in both
    /// directions, must read the same through the stack as in the model.
    #[test]
    fn a_stack_of_layers_reads_as_the_writes_applied_in_order() {
        for seed in 1..40u64 {
            let mut rng = Rng(seed * 7919);
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut layers: Vec<Arc<RwLock<Layer>>> = vec![Arc::default()];
            for step in 0..200 {
                if step % 50 == 49 {
                    layers.push(Arc::default());
                }
                let Some(top) = layers.last() else { return };
                let mut top = top.write();
                match rng.below(10) {
                    0 => {
                        let (a, b) = (rng.key(), rng.key());
                        let (from, to) = if a <= b { (a, b) } else { (b, a) };
                        let _ = top.apply(&BatchOp::DeleteRange {
                            cf: 1,
                            from: &from,
                            to: &to,
                        });
                        model.retain(|k, _| k < &from || k >= &to);
                    }
                    1..=3 => {
                        let k = rng.key();
                        let _ = top.apply(&BatchOp::Delete { cf: 1, key: &k });
                        model.remove(&k);
                    }
                    _ => {
                        let k = rng.key();
                        let v = format!("v{step}").into_bytes();
                        let _ = top.apply(&BatchOp::Put {
                            cf: 1,
                            key: &k,
                            value: &v,
                        });
                        model.insert(k, v);
                    }
                }
            }
            let mut stack = Stack::default();
            for l in layers.iter().rev() {
                stack.push(Source::Shared(l.clone()));
            }
            for _ in 0..100 {
                let k = rng.key();
                let only = |x: &[u8]| x == k.as_slice();
                let past = |x: &[u8]| x > k.as_slice();
                let got = stack.put_after(1, Bound::Included(&k), &only, &past);
                assert_eq!(
                    got.map(|(_, v)| v).as_ref(),
                    model.get(&k),
                    "seed {seed} key {k:?}"
                );
            }
            let all = |_: &[u8]| true;
            let none = |_: &[u8]| false;
            let mut walked = Vec::new();
            let mut at: Bound<Vec<u8>> = Bound::Unbounded;
            while let Some((k, v)) = stack.put_after(1, super::borrowed(&at), &all, &none) {
                at = Bound::Excluded(k.clone());
                walked.push((k, v));
            }
            let expect: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
            assert_eq!(walked, expect, "seed {seed} forward");
            let mut back = Vec::new();
            let mut at: Bound<Vec<u8>> = Bound::Unbounded;
            while let Some((k, v)) = stack.put_before(1, super::borrowed(&at), &all, &none) {
                at = Bound::Excluded(k.clone());
                back.push((k, v));
            }
            back.reverse();
            assert_eq!(back, expect, "seed {seed} backward");
        }
    }

    /// One random write to `layer`: a put (now and then of a value larger than a cursor's run
    /// holds), a delete, or a range deletion.
    /// A random put, delete or (with `ranges`) deleted range.
    fn random_write(rng: &mut Rng, layer: &RwLock<Layer>, step: usize, ranges: bool) {
        let mut layer = layer.write();
        let _ = match rng.below(10) {
            0 if ranges => {
                let (a, b) = (rng.key(), rng.key());
                let (from, to) = if a <= b { (a, b) } else { (b, a) };
                layer.apply(&BatchOp::DeleteRange {
                    cf: 1,
                    from: &from,
                    to: &to,
                })
            }
            0..=3 => layer.apply(&BatchOp::Delete {
                cf: 1,
                key: &rng.key(),
            }),
            _ => {
                let mut v = format!("v{step}").into_bytes();
                if rng.below(40) == 0 {
                    v.resize(super::RUN_BYTES + 10, b'x');
                }
                layer.apply(&BatchOp::Put {
                    cf: 1,
                    key: &rng.key(),
                    value: &v,
                })
            }
        };
    }

    /// A [`super::Mask`] as plain data, to compare.
    fn named(m: super::Mask) -> (u8, Vec<u8>, Vec<u8>) {
        match m {
            super::Mask::Visible => (0, Vec::new(), Vec::new()),
            super::Mask::Point => (1, Vec::new(), Vec::new()),
            super::Mask::Range(from, to) => (2, from, to),
        }
    }

    /// A walk (cursors over the layers' runs, as the merged iterator steps) and today's search
    /// of the live layers from the top of their key order must find the same put at every step
    /// in both directions, turning around and seeking again, within bounds, while random
    /// writes land in any layer between steps (another thread's in the tier's active layer, the
    /// thread's own in its scope), or none do for many steps (the cursors serve from their runs);
    /// and the walk must say what the layers say of whether they hide a key (answered from
    /// its runs where they hold the key's place).
    #[test]
    fn a_walk_finds_what_a_search_of_the_live_layers_finds_while_they_change() {
        for seed in 1..60u64 {
            let mut rng = Rng(seed * 104_729);
            let layers: Vec<Arc<RwLock<Layer>>> =
                (0..1 + rng.below(3)).map(|_| Arc::default()).collect();
            // Deleted ranges in half the seeds (a layer with one answers masks by a search).
            let ranges = seed % 2 == 0;
            for step in 0..150 {
                let at = rng.below(layers.len() as u64) as usize;
                random_write(&mut rng, &layers[at], step, ranges);
            }
            let mut stack = Stack::default();
            for l in &layers {
                stack.push(Source::Shared(l.clone()));
            }
            let mut walk = Walk::new(stack.clone());
            // Writes land often in some walks, never in others.
            let churn = rng.below(3);
            for walk_no in 0..20 {
                let lower = (rng.below(3) == 0).then(|| rng.key());
                let upper = (rng.below(3) == 0).then(|| rng.key());
                let ok = |k: &[u8]| {
                    lower.as_deref().is_none_or(|l| k >= l)
                        && upper.as_deref().is_none_or(|u| k < u)
                };
                let mut forward = rng.below(2) == 0;
                let ends = |k: &[u8], forward: bool| {
                    if forward {
                        upper.as_deref().is_some_and(|u| k >= u)
                    } else {
                        lower.as_deref().is_some_and(|l| k < l)
                    }
                };
                let first = rng.key();
                let start = if rng.below(4) == 0 {
                    Bound::Unbounded
                } else {
                    Bound::Included(first.as_slice())
                };
                walk.restart();
                walk.step(1, start, forward, &ok, &|k| ends(k, forward));
                let search = |from: Bound<&[u8]>, forward: bool| {
                    if forward {
                        stack.put_after(1, from, &ok, &|k| ends(k, true))
                    } else {
                        stack.put_before(1, from, &ok, &|k| ends(k, false))
                    }
                };
                let mut want = search(start, forward);
                for n in 0..40 {
                    let got = walk.found().map(|(k, v)| (k.to_vec(), v.to_vec()));
                    assert_eq!(got, want, "seed {seed} walk {walk_no} step {n}");
                    let Some((k, _)) = want else { break };
                    if churn > 0 && rng.below(churn * 2) == 0 {
                        let at = rng.below(layers.len() as u64) as usize;
                        random_write(&mut rng, &layers[at], 1000 + n, ranges);
                    }
                    // Whether the layers hide a key, as the merged iterator asks of each key of
                    // the database (after any write since the step): from the runs where they
                    // hold its place.
                    for _ in 0..4 {
                        let probe = rng.key();
                        if ok(&probe) {
                            assert_eq!(
                                named(walk.mask(1, &probe)),
                                named(stack.mask(1, &probe)),
                                "seed {seed} walk {walk_no} step {n} mask of {probe:?}"
                            );
                        }
                    }
                    if rng.below(6) == 0 {
                        // Turn around: the merged iterator searches from the current key.
                        forward = !forward;
                        walk.step(1, Bound::Excluded(&k), forward, &ok, &|x| ends(x, forward));
                    } else {
                        walk.step_on(1, forward, &ok, &|x| ends(x, forward));
                    }
                    want = search(Bound::Excluded(&k), forward);
                }
            }
        }
    }

    /// Keys past the end of everything a family holds go to its tail, in order, with no hash
    /// map entry: appends at the back (a stream's entries, RPUSH), at the front while above
    /// every map key (LPUSH), and a new key near an end of the tail's span; one far inside the
    /// span moves the tail into the map. Lookups, masks and the checkpoint's order see them all.
    #[test]
    fn appends_past_the_end_go_to_the_tail_not_the_hash_map() {
        let key = |n: u32| {
            let mut k = b"s".to_vec();
            k.extend_from_slice(&n.to_be_bytes());
            k
        };
        let put = |layer: &mut Layer, k: &[u8], v: &[u8]| {
            let op = BatchOp::Put {
                cf: 3,
                key: k,
                value: v,
            };
            assert!(layer.apply(&op).is_ok());
        };
        let mut layer = Layer::default();
        for n in 1000..2000 {
            put(&mut layer, &key(n), b"back");
        }
        for n in (900..1000).rev() {
            put(&mut layer, &key(n), b"front");
        }
        let points = |layer: &Layer| -> (usize, usize) {
            let f = layer.families.get(3).map(|f| &f.points);
            f.map_or((0, 0), |p| (p.map.len(), p.tail_len()))
        };
        assert_eq!(points(&layer), (0, 1100), "every append is in the tail");
        // An overwrite and a delete of appended keys stay in the tail.
        put(&mut layer, &key(1500), b"again");
        assert!(layer
            .apply(&BatchOp::Delete {
                cf: 3,
                key: &key(950)
            })
            .is_ok());
        assert_eq!(points(&layer), (0, 1100));
        assert_eq!(layer.lookup(3, &key(1500)), super::Lookup::Value(b"again"));
        assert_eq!(layer.lookup(3, &key(950)), super::Lookup::Deleted);
        assert_eq!(layer.lookup(3, &key(2000)), super::Lookup::Untouched);
        assert_eq!(layer.lookup(3, &key(899)), super::Lookup::Untouched);
        assert!(matches!(layer.mask(3, &key(950)), super::Mask::Point));
        // A new key inside the span near its end is put in place.
        let mut near = key(1998);
        near.push(0);
        put(&mut layer, &near, b"near");
        assert_eq!(points(&layer), (0, 1101));
        // One far inside moves the tail into the map; appends then start a new tail.
        let mut far = key(1200);
        far.push(0);
        put(&mut layer, &far, b"far");
        assert_eq!(points(&layer), (1102, 0));
        put(&mut layer, &key(5000), b"next");
        assert_eq!(points(&layer), (1102, 1));
        // Below every map key: the map, not the tail's front.
        put(&mut layer, &key(5), b"low");
        assert_eq!(points(&layer), (1103, 1));
        assert_eq!(layer.lookup(3, &near), super::Lookup::Value(b"near"));
        assert_eq!(layer.lookup(3, &key(5000)), super::Lookup::Value(b"next"));
        assert_eq!(layer.lookup(3, &key(1500)), super::Lookup::Value(b"again"));
        let f = layer.families.get(3).map(|f| f.points.sorted());
        let keys: Vec<&[u8]> = f.iter().flatten().map(|(k, _)| *k).collect();
        assert_eq!(keys.len(), 1104);
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "the checkpoint's order"
        );
    }

    /// A key of one of a few "collections" (a prefix byte), at an index.
    fn indexed(prefix: u8, n: u32) -> Vec<u8> {
        let mut k = vec![prefix];
        k.extend_from_slice(&n.to_be_bytes());
        k
    }

    /// Random appends at either end of a few collections (as streams and list pushes make),
    /// overwrites and deletes of appended keys, other puts and deletes, and range deletions,
    /// into a stack of layers; after every write a lookup and a mask, and now and then walks,
    /// must read as a plain map of the writes (the model). The top layer's points, in the
    /// checkpoint's order, must be its writes in key order.
    #[test]
    fn appends_overwrites_and_deletes_read_as_a_model_through_lookups_and_walks() {
        let mut tails_seen = 0;
        for seed in 1..50u64 {
            let mut rng = Rng(seed * 6_700_417);
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            // The top layer's own points: key -> value (`None`: a delete).
            let mut top_points: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
            let mut layers: Vec<Arc<RwLock<Layer>>> = vec![Arc::default()];
            let mut back = [1u32 << 20; 3];
            let mut front = [(1u32 << 20) - 1; 3];
            let mut appended: Vec<Vec<u8>> = Vec::new();
            for step in 0..400 {
                if step == 200 && rng.below(2) == 0 {
                    layers.push(Arc::default());
                    top_points.clear();
                }
                let Some(top) = layers.last().cloned() else {
                    return;
                };
                let v = format!("v{step}").into_bytes();
                let c = rng.below(3) as usize;
                let prefix = b"bdf"[c];
                let (key, value) = match rng.below(20) {
                    0..=6 => {
                        back[c] += 1;
                        (indexed(prefix, back[c]), Some(v))
                    }
                    7..=9 => {
                        front[c] -= 1;
                        (indexed(prefix, front[c]), Some(v))
                    }
                    10..=11 if !appended.is_empty() => {
                        let k = appended[rng.below(appended.len() as u64) as usize].clone();
                        (k, Some(v))
                    }
                    12..=13 if !appended.is_empty() => {
                        let k = appended[rng.below(appended.len() as u64) as usize].clone();
                        (k, None)
                    }
                    14 => {
                        let (a, b) = (rng.key(), rng.key());
                        let (from, to) = if a <= b { (a, b) } else { (b, a) };
                        let op = BatchOp::DeleteRange {
                            cf: 1,
                            from: &from,
                            to: &to,
                        };
                        assert!(top.write().apply(&op).is_ok());
                        model.retain(|k, _| k < &from || k >= &to);
                        top_points.retain(|k, _| k < &from || k >= &to);
                        continue;
                    }
                    15..=16 => (rng.key(), None),
                    _ => (rng.key(), Some(v)),
                };
                let op = match &value {
                    Some(v) => BatchOp::Put {
                        cf: 1,
                        key: &key,
                        value: v,
                    },
                    None => BatchOp::Delete { cf: 1, key: &key },
                };
                assert!(top.write().apply(&op).is_ok());
                match &value {
                    Some(v) => model.insert(key.clone(), v.clone()),
                    None => model.remove(&key),
                };
                top_points.insert(key.clone(), value);
                if key.len() == 5 {
                    appended.push(key);
                }
                // A lookup and a mask of a key written, and of one perhaps not.
                let probe = match rng.below(3) {
                    0 => rng.key(),
                    1 => indexed(prefix, back[c] + 1 - rng.below(4) as u32),
                    _ => indexed(prefix, front[c] + rng.below(4) as u32 - 1),
                };
                let mut stack = Stack::default();
                for l in layers.iter().rev() {
                    stack.push(Source::Shared(l.clone()));
                }
                let only = |x: &[u8]| x == probe.as_slice();
                let past = |x: &[u8]| x > probe.as_slice();
                let mut walk = Walk::new(stack.clone());
                walk.step(1, Bound::Included(&probe), true, &only, &past);
                let got = walk.found().map(|(_, v)| v.to_vec());
                assert_eq!(got.as_ref(), model.get(&probe), "seed {seed} step {step}");
                let top = top.read();
                let named = matches!(top.mask(1, &probe), super::Mask::Point);
                assert_eq!(
                    named,
                    top_points.contains_key(&probe),
                    "seed {seed} step {step}"
                );
                let want = match top_points.get(&probe) {
                    Some(Some(v)) => Some(super::Lookup::Value(v)),
                    Some(None) => Some(super::Lookup::Deleted),
                    None => None,
                };
                if let Some(want) = want {
                    assert_eq!(top.lookup(1, &probe), want, "seed {seed} step {step}");
                }
                drop(top);
                if step % 50 == 49 {
                    walk_both_ways(&stack, &model, seed);
                }
                if step % 10 == 5 {
                    walk_from(&stack, &model, &probe, rng.below(2) == 0, seed);
                }
            }
            let Some(top) = layers.last() else { return };
            let top = top.read();
            if let Some(f) = top.families.get(1) {
                tails_seen += usize::from(f.points.tail_len() > 0);
                let sorted: Vec<(Vec<u8>, Option<Vec<u8>>)> = f
                    .points
                    .sorted()
                    .into_iter()
                    .map(|(k, p)| (k.to_vec(), p.value.clone()))
                    .collect();
                let expect: Vec<(Vec<u8>, Option<Vec<u8>>)> = top_points.into_iter().collect();
                assert_eq!(sorted, expect, "seed {seed}: the checkpoint's points");
            }
        }
        assert!(tails_seen > 10, "the tail was used: {tails_seen} seeds");
    }

    /// Walks up to 20 puts through `stack` from `start` (included) in one direction, against
    /// `model`.
    fn walk_from(
        stack: &Stack,
        model: &BTreeMap<Vec<u8>, Vec<u8>>,
        start: &[u8],
        forward: bool,
        seed: u64,
    ) {
        let all = |_: &[u8]| true;
        let none = |_: &[u8]| false;
        let expect: Vec<(Vec<u8>, Vec<u8>)> = if forward {
            let range = model.range::<[u8], _>((Bound::Included(start), Bound::Unbounded));
            range
                .take(20)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        } else {
            let range = model.range::<[u8], _>((Bound::Unbounded, Bound::Included(start)));
            let back = range.rev().take(20);
            back.map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let mut walk = Walk::new(stack.clone());
        walk.step(1, Bound::Included(start), forward, &all, &none);
        let mut got = Vec::new();
        while let Some((k, v)) = walk.found() {
            got.push((k.to_vec(), v.to_vec()));
            if got.len() == 20 {
                break;
            }
            walk.step_on(1, forward, &all, &none);
        }
        assert_eq!(got, expect, "seed {seed} from {start:?} forward {forward}");
    }

    /// Walks every put through `stack` with a [`Walk`] both ways, against `model`.
    fn walk_both_ways(stack: &Stack, model: &BTreeMap<Vec<u8>, Vec<u8>>, seed: u64) {
        let all = |_: &[u8]| true;
        let none = |_: &[u8]| false;
        let expect: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
        for forward in [true, false] {
            let mut walk = Walk::new(stack.clone());
            walk.step(1, Bound::Unbounded, forward, &all, &none);
            let mut got = Vec::new();
            while let Some((k, v)) = walk.found() {
                got.push((k.to_vec(), v.to_vec()));
                walk.step_on(1, forward, &all, &none);
            }
            if !forward {
                got.reverse();
            }
            assert_eq!(got, expect, "seed {seed} forward {forward}");
        }
    }
}
