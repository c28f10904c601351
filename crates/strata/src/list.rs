//! Lists: LPUSH, LRANGE and the rest of Redis's (non-blocking) list family on `Db`.
//!
//! A list is a collection (see `collection.rs`) whose metadata carries `[head u64][tail u64]`
//! after its version and length: the items live at absolute indexes `head..tail`, each under the
//! `data` sub-key `index as u64 big-endian`. A new list starts at `head = tail = 2^63`, so it can
//! grow at both ends; pushes and pops at either end and LINDEX/LSET are single-key operations
//! (O(1)), LRANGE streams from an iterator. Changes in the middle (LINSERT, LREM) shift the items
//! on the shorter side, O(N). Every write holds the key's lock and commits one batch. This module
//! knows nothing of RESP.
//!
//! **The items are exactly `head..tail`.** Every reader is bounded by the metadata's bounds, so
//! an item leaving them (LPOP, RPOP, their blocking and LMPOP forms, LMOVE's source, LTRIM, the
//! end LREM closes) is not deleted: its record stays where it is as garbage, never read again,
//! and the write is the metadata alone. An index that comes back inside the bounds (a push
//! after a pop) is always written anew in the same batch as the metadata that takes it in. The
//! compaction filter (`storage.rs`, `OrphanFilter`) removes a list's records outside its
//! committed bounds; a popped item still in the write-back tier's active layer (pushed since
//! the last checkpoint: a queue's) is dropped from it at once (`Storage::drop_unread`), so it
//! never reaches RocksDB. See docs/format.md (list records) and docs/architecture.md.

use rocksdb::WriteBatch;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::meta::KeyType;
use crate::storage::CF_DATA;
use crate::zset::normalize_rank;

/// An end of a list: LEFT (the head, index 0) or RIGHT (the tail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListEnd {
    /// The head (LPUSH, LPOP).
    Left,
    /// The tail (RPUSH, RPOP).
    Right,
}

/// A key and the items popped from it (LMPOP).
type KeyedItems = (Vec<u8>, Vec<Vec<u8>>);

/// Items read by their keys, and those keys, in the same order ([`Db::list_points`]).
type Points = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Absolute index of the first item of a new list.
pub(crate) const LIST_START: u64 = 1 << 63;

/// At most this many items that left a list's bounds in one command are dropped from the
/// write-back tier's active layer (`Storage::drop_unread`); the rest of a larger span (a big
/// LTRIM) stays there as garbage and goes to RocksDB with the next checkpoint, for compaction.
const DROP_MAX: u64 = 64;

/// Pops of at most this many items read them by point lookups (see [`Db::list_points`]).
const POINT_READ_MAX: u64 = 16;

/// A pop whose items were not in the hot-record cache, or came from its hashed entries and
/// leave a long list whose next item no run of the cache holds, reads this many of the items
/// next in line into one run of the cache (at most [`READ_AHEAD_BYTES`] of them), so that
/// popping a stretch of a long list costs one bounded iterator per `READ_AHEAD` pops and reads
/// each item from an ordered vector instead of a hashed entry per pop.
const READ_AHEAD: u64 = 128;
const READ_AHEAD_BYTES: usize = 256 << 10;

fn idx(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

pub(crate) fn idx_of(sub: &[u8]) -> Option<u64> {
    let b: [u8; 8] = sub.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

/// A list's `(head, tail)` from its metadata's body (`[version][len][head][tail]`), if it
/// carries them and they agree with its length.
pub(crate) fn bounds_of(body: &[u8]) -> Option<(u64, u64)> {
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_be_bytes(body.get(at..at + 8)?.try_into().ok()?))
    };
    if body.len() != 32 {
        return None;
    }
    let (len, head, tail) = (word(8)?, word(16)?, word(24)?);
    (head <= tail && tail - head == len).then_some((head, tail))
}

/// A loaded list: its metadata and absolute bounds.
pub(crate) struct ListState {
    c: CollectionMeta,
    head: u64,
    tail: u64,
}

impl ListState {
    pub(crate) fn from_meta(c: CollectionMeta) -> Result<ListState> {
        let (head, tail) = if c.extra.is_empty() && c.len == 0 {
            (LIST_START, LIST_START)
        } else if c.extra.len() == 16 {
            let mut h = [0u8; 8];
            let mut t = [0u8; 8];
            h.copy_from_slice(&c.extra[..8]);
            t.copy_from_slice(&c.extra[8..16]);
            (u64::from_be_bytes(h), u64::from_be_bytes(t))
        } else {
            return Err(Error::Corrupt(format!(
                "list metadata with {} extra bytes",
                c.extra.len()
            )));
        };
        if tail < head || tail - head != c.len {
            return Err(Error::Corrupt(format!(
                "list bounds {head}..{tail} disagree with length {}",
                c.len
            )));
        }
        Ok(ListState { c, head, tail })
    }

    fn len(&self) -> u64 {
        self.tail - self.head
    }

    /// Writes the bounds back into the metadata.
    fn sync(&mut self) {
        self.c.len = self.tail - self.head;
        // In place: a loaded list's `extra` already holds 16 bytes, so a push or pop allocates
        // nothing here.
        self.c.extra.clear();
        self.c.extra.extend_from_slice(&self.head.to_be_bytes());
        self.c.extra.extend_from_slice(&self.tail.to_be_bytes());
    }

    /// Absolute index of a Redis index (negative counts from the tail), if in range.
    fn absolute(&self, index: i64) -> Option<u64> {
        let len = self.len() as i64;
        let i = if index < 0 {
            len.checked_add(index)?
        } else {
            index
        };
        if i < 0 || i >= len {
            None
        } else {
            Some(self.head + i as u64)
        }
    }
}

impl Db {
    fn list_load(&self, key: &[u8]) -> Result<Option<ListState>> {
        self.load_collection(key, KeyType::List)?
            .map(ListState::from_meta)
            .transpose()
    }

    fn list_load_or_new(&self, key: &[u8]) -> Result<ListState> {
        ListState::from_meta(self.load_or_new_collection(key, KeyType::List)?)
    }

    fn list_put(&self, batch: &mut WriteBatch, key: &[u8], l: &ListState, at: u64, value: &[u8]) {
        batch.put_cf(
            self.storage().cf(CF_DATA),
            self.sub_key(key, &l.c, &idx(at)),
            value,
        );
    }

    /// Streams the items at absolute indexes `from..to` forward (or backward with `rev`), calling
    /// `f(absolute index, item)` until it returns false.
    fn list_span(
        &self,
        key: &[u8],
        l: &ListState,
        from: u64,
        to: u64,
        rev: bool,
        mut f: impl FnMut(u64, &[u8]) -> bool,
    ) -> Result<()> {
        if to <= from {
            return Ok(());
        }
        let mut err = None;
        let mut visit = |sub: &[u8], v: &[u8]| -> bool {
            let Some(i) = idx_of(sub) else {
                err = Some(Error::Corrupt("list sub-key is not 8 bytes".into()));
                return false;
            };
            if i < from || i >= to {
                return false;
            }
            f(i, v)
        };
        // Bounded at both ends of the span: past the list's ends lie the records of popped
        // items (garbage, see the module doc), which an iterator bounded only by the
        // collection's prefix would step over and return.
        self.for_each_sub_between(
            CF_DATA,
            key,
            &l.c,
            &idx(from)[..]..&idx(to)[..],
            rev,
            &mut visit,
        )?;
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Reads the `n` items at `end` (all inside the list's bounds, in pop order) by point
    /// lookups. A pop of a few items reads them this way rather than with an iterator: a point
    /// lookup costs a fraction of an iterator's creation and seek, and never steps over the
    /// garbage earlier pops left at the list's ends.
    ///
    /// The pops of a long list walk through it in order; so when RocksDB had to answer, or when
    /// hashed entries of the hot-record cache did (`hot::hashed_hits`), at least [`READ_AHEAD`]
    /// items remain and no run of the cache from this end holds the next one or lies ahead of
    /// it (`HotFamily::run_ahead`), the items next in line from the same `end` (after the
    /// popped ones) are read ahead into a run of the cache (`hot.rs`): the following pops find
    /// each item by an index into one vector instead of a hashed entry scattered in a table of
    /// a million. Items the tier's layers answer (pushed since the last checkpoint: a queue's)
    /// are not read ahead. The caller holds the list's lock, which `Storage::warm` requires.
    ///
    /// Returns the items and their keys (in the same order), which a pop hands on to
    /// [`Db::list_drop_keys`] instead of building them again.
    fn list_points(&self, key: &[u8], l: &ListState, end: ListEnd, n: u64) -> Result<Points> {
        let subs: Vec<Vec<u8>> = match end {
            ListEnd::Left => (l.head..l.head + n)
                .map(|i| self.sub_key(key, &l.c, &idx(i)))
                .collect(),
            ListEnd::Right => (l.tail - n..l.tail)
                .rev()
                .map(|i| self.sub_key(key, &l.c, &idx(i)))
                .collect(),
        };
        let hashed = crate::hot::hashed_hits();
        let (items, from_disk) = self.storage().multi_get_counted(CF_DATA, &subs)?;
        let from_entries = crate::hot::hashed_hits() != hashed;
        let items = items
            .into_iter()
            .map(|v| v.ok_or_else(|| Error::Corrupt("list item missing inside its bounds".into())))
            .collect::<Result<Vec<_>>>()?;
        let left = l.len() - n;
        let ahead = match end {
            ListEnd::Left => l.head + n,
            ListEnd::Right => (l.tail - n).wrapping_sub(1),
        };
        let no_run = || {
            self.storage().hot_family(CF_DATA).is_some_and(|c| {
                let next = self.sub_key(key, &l.c, &idx(ahead));
                c.enabled() && !c.run_ahead(&next, end == ListEnd::Right)
            })
        };
        if from_disk > 0 || (from_entries && left >= READ_AHEAD && no_run()) {
            let (from, to) = match end {
                ListEnd::Left => (
                    l.head + n,
                    (l.head + n).saturating_add(READ_AHEAD).min(l.tail),
                ),
                ListEnd::Right => (
                    (l.tail - n).saturating_sub(READ_AHEAD).max(l.head),
                    l.tail - n,
                ),
            };
            self.storage().warm(
                CF_DATA,
                self.sub_key(key, &l.c, &idx(from)),
                self.sub_key(key, &l.c, &idx(to)),
                end == ListEnd::Right,
                READ_AHEAD as usize,
                READ_AHEAD_BYTES,
            )?;
        }
        Ok((items, subs))
    }

    /// Reads the items at absolute indexes `from..to` in order.
    fn list_read(&self, key: &[u8], l: &ListState, from: u64, to: u64) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity((to.saturating_sub(from)).min(1 << 16) as usize);
        self.list_span(key, l, from, to, false, |_, v| {
            out.push(v.to_vec());
            true
        })?;
        Ok(out)
    }

    /// Commits the list's metadata (deleting the key when empty) with `batch`.
    fn list_commit(&self, mut batch: WriteBatch, key: &[u8], l: &mut ListState) -> Result<()> {
        l.sync();
        self.put_collection(&mut batch, key, &l.c);
        self.write(batch)
    }

    /// After a pop's commit: the records at `subs` (keys [`Db::list_points`] read, all now
    /// outside the list's bounds, at most [`POINT_READ_MAX`] <= [`DROP_MAX`] of them) are
    /// garbage; as [`Db::list_drop_garbage`], without building their keys again.
    fn list_drop_keys(&self, subs: &[Vec<u8>]) {
        if self.write_back() {
            self.storage().drop_unread(CF_DATA, subs);
        }
    }

    /// After a commit that moved the bounds of `l`: the items at absolute indexes `from..to`
    /// that are now outside them are garbage, so the write-back tier's active layer may forget
    /// its puts of them (those pushed since the last checkpoint) instead of taking them to
    /// RocksDB, and is charged for them as for their deletes (`Tier::drop_puts`). Indexes back
    /// inside the bounds (LMOVE rotating a list onto the index it popped) are kept. At most
    /// [`DROP_MAX`] of them.
    fn list_drop_garbage(&self, key: &[u8], l: &ListState, from: u64, to: u64) {
        if !self.write_back() || to <= from {
            return;
        }
        let to = to.min(from.saturating_add(DROP_MAX));
        let subs: Vec<Vec<u8>> = (from..to)
            .filter(|i| !(l.head..l.tail).contains(i))
            .map(|i| self.sub_key(key, &l.c, &idx(i)))
            .collect();
        self.storage().drop_unread(CF_DATA, &subs);
    }

    /// LPUSH / RPUSH / LPUSHX / RPUSHX: pushes `values` one by one at `end` and returns the new
    /// length. With `only_if_exists` (the X variants) a missing key stays missing and 0 is
    /// returned.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::ListEnd;
    /// let db = strata::Db::open(dir.path())?;
    /// assert_eq!(db.list_push(b"jobs", ListEnd::Right, &[b"a", b"b"], false)?, 2);
    /// assert_eq!(db.list_push(b"jobs", ListEnd::Left, &[b"z"], false)?, 3);
    /// assert_eq!(db.lrange(b"jobs", 0, -1)?, vec![b"z".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    /// assert_eq!(db.list_pop(b"jobs", ListEnd::Right, 1)?, Some(vec![b"b".to_vec()]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list_push(
        &self,
        key: &[u8],
        end: ListEnd,
        values: &[&[u8]],
        only_if_exists: bool,
    ) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let mut l = match self.list_load(key)? {
            Some(l) => l,
            None if only_if_exists => return Ok(0),
            None => self.list_load_or_new(key)?,
        };
        let mut batch = crate::storage::new_batch();
        self.list_push_into(&mut batch, key, &mut l, end, values)?;
        self.list_commit(batch, key, &mut l)?;
        Ok(l.len())
    }

    fn list_push_into(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        l: &mut ListState,
        end: ListEnd,
        values: &[&[u8]],
    ) -> Result<()> {
        for v in values {
            match end {
                ListEnd::Left => {
                    if l.head == 0 {
                        return Err(Error::Corrupt("list index space exhausted".into()));
                    }
                    l.head -= 1;
                    self.list_put(batch, key, l, l.head, v);
                }
                ListEnd::Right => {
                    if l.tail == u64::MAX {
                        return Err(Error::Corrupt("list index space exhausted".into()));
                    }
                    self.list_put(batch, key, l, l.tail, v);
                    l.tail += 1;
                }
            }
        }
        Ok(())
    }

    /// Streams the items of the list at `key` from head to tail (nothing if missing), one item in
    /// memory at a time.
    pub fn list_each(&self, key: &[u8], mut f: impl FnMut(&[u8])) -> Result<()> {
        let Some(l) = self.list_load(key)? else {
            return Ok(());
        };
        self.list_span(key, &l, l.head, l.tail, false, |_, v| {
            f(v);
            true
        })
    }

    /// LPUSH: pushes each value at the head; returns the new length.
    pub fn lpush(&self, key: &[u8], values: &[&[u8]]) -> Result<u64> {
        self.list_push(key, ListEnd::Left, values, false)
    }

    /// RPUSH: pushes each value at the tail; returns the new length.
    pub fn rpush(&self, key: &[u8], values: &[&[u8]]) -> Result<u64> {
        self.list_push(key, ListEnd::Right, values, false)
    }

    /// LPOP / RPOP: removes and returns up to `count` items from `end`; `None` if the key is
    /// missing. The key goes away with its last item.
    pub fn list_pop(&self, key: &[u8], end: ListEnd, count: u64) -> Result<Option<Vec<Vec<u8>>>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        self.list_pop_locked(key, end, count)
    }

    fn list_pop_locked(
        &self,
        key: &[u8],
        end: ListEnd,
        count: u64,
    ) -> Result<Option<Vec<Vec<u8>>>> {
        let Some(mut l) = self.list_load(key)? else {
            return Ok(None);
        };
        if count == 0 {
            return Ok(Some(Vec::new()));
        }
        let n = count.min(l.len());
        let batch = crate::storage::new_batch();
        let popped = match end {
            ListEnd::Left => (l.head, l.head + n),
            ListEnd::Right => (l.tail - n, l.tail),
        };
        // Only the metadata is written: the popped items' records become garbage (module doc).
        // A pop of a few items read them by their keys, which drop them from the layer after.
        let mut read_keys = None;
        let items = match end {
            ListEnd::Left => {
                let items = if n <= POINT_READ_MAX {
                    let (items, subs) = self.list_points(key, &l, end, n)?;
                    read_keys = Some(subs);
                    items
                } else {
                    self.list_read(key, &l, l.head, l.head + n)?
                };
                l.head += n;
                items
            }
            ListEnd::Right => {
                let items = if n <= POINT_READ_MAX {
                    let (items, subs) = self.list_points(key, &l, end, n)?;
                    read_keys = Some(subs);
                    items
                } else {
                    let mut items = Vec::with_capacity(n.min(1 << 16) as usize);
                    self.list_span(key, &l, l.tail - n, l.tail, true, |_, v| {
                        items.push(v.to_vec());
                        true
                    })?;
                    items
                };
                l.tail -= n;
                items
            }
        };
        self.list_commit(batch, key, &mut l)?;
        match read_keys {
            Some(subs) => self.list_drop_keys(&subs),
            None => self.list_drop_garbage(key, &l, popped.0, popped.1),
        }
        Ok(Some(items))
    }

    /// LLEN: the number of items, O(1).
    pub fn llen(&self, key: &[u8]) -> Result<u64> {
        Ok(self.list_load(key)?.map_or(0, |l| l.len()))
    }

    /// LINDEX: the item at `index` (negative counts from the tail), O(1).
    pub fn lindex(&self, key: &[u8], index: i64) -> Result<Option<Vec<u8>>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(l) = self.list_load(key)? else {
            return Ok(None);
        };
        match l.absolute(index) {
            Some(i) => self.get_sub(CF_DATA, key, &l.c, &idx(i)),
            None => Ok(None),
        }
    }

    /// LRANGE: the items from `start` to `stop` inclusive (negative indexes count from the tail).
    pub fn lrange(&self, key: &[u8], start: i64, stop: i64) -> Result<Vec<Vec<u8>>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(l) = self.list_load(key)? else {
            return Ok(Vec::new());
        };
        match normalize_rank(start, stop, l.len()) {
            Some((a, b)) => self.list_read(key, &l, l.head + a, l.head + b + 1),
            None => Ok(Vec::new()),
        }
    }

    /// LSET: replaces the item at `index`. [`Error::NoSuchKey`] if the key is missing; `false`
    /// (nothing written) if the index is out of range.
    pub fn lset(&self, key: &[u8], index: i64, value: &[u8]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut l) = self.list_load(key)? else {
            return Err(Error::NoSuchKey);
        };
        let Some(i) = l.absolute(index) else {
            return Ok(false);
        };
        let mut batch = crate::storage::new_batch();
        self.list_put(&mut batch, key, &l, i, value);
        self.list_commit(batch, key, &mut l)?;
        Ok(true)
    }

    /// LINSERT: inserts `value` before (or after) the first item equal to `pivot`. Returns the
    /// new length, -1 if the pivot is not found, 0 if the key is missing. Shifts the items on the
    /// shorter side of the pivot (O(N)).
    pub fn linsert(&self, key: &[u8], before: bool, pivot: &[u8], value: &[u8]) -> Result<i64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut l) = self.list_load(key)? else {
            return Ok(0);
        };
        let mut found = None;
        self.list_span(key, &l, l.head, l.tail, false, |i, v| {
            if v == pivot {
                found = Some(i);
                return false;
            }
            true
        })?;
        let Some(p) = found else {
            return Ok(-1);
        };
        // The new item goes in front of the item now at absolute index q.
        let q = if before { p } else { p + 1 };
        let mut batch = crate::storage::new_batch();
        if q - l.head <= l.tail - q && l.head > 0 {
            // Shift head..q one step towards the head.
            let mut moved = Vec::new();
            self.list_span(key, &l, l.head, q, false, |i, v| {
                moved.push((i - 1, v.to_vec()));
                true
            })?;
            for (i, v) in &moved {
                self.list_put(&mut batch, key, &l, *i, v);
            }
            self.list_put(&mut batch, key, &l, q - 1, value);
            l.head -= 1;
        } else {
            // Shift q..tail one step towards the tail.
            let mut moved = Vec::new();
            self.list_span(key, &l, q, l.tail, false, |i, v| {
                moved.push((i + 1, v.to_vec()));
                true
            })?;
            for (i, v) in &moved {
                self.list_put(&mut batch, key, &l, *i, v);
            }
            self.list_put(&mut batch, key, &l, q, value);
            l.tail += 1;
        }
        self.list_commit(batch, key, &mut l)?;
        Ok(l.len() as i64)
    }

    /// LREM: removes the first `count` items equal to `value` (from the tail if `count` is
    /// negative, all of them if 0); returns how many. The remaining items are shifted to close
    /// the gaps from the cheaper side (O(N)).
    pub fn lrem(&self, key: &[u8], count: i64, value: &[u8]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut l) = self.list_load(key)? else {
            return Ok(0);
        };
        let limit = count.unsigned_abs();
        let mut hits: Vec<u64> = Vec::new();
        self.list_span(key, &l, l.head, l.tail, count < 0, |i, v| {
            if v == value {
                hits.push(i);
                if limit != 0 && hits.len() as u64 >= limit {
                    return false;
                }
            }
            true
        })?;
        if hits.is_empty() {
            return Ok(0);
        }
        hits.sort_unstable();
        let k = hits.len() as u64;
        let (first, last) = (hits[0], hits[hits.len() - 1]);
        let mut batch = crate::storage::new_batch();
        let tail_side = l.tail - first <= last - l.head + 1;
        if tail_side {
            // Close the gaps by moving later items towards the head.
            let mut moves = Vec::new();
            let mut removed = 0usize;
            self.list_span(key, &l, first, l.tail, false, |i, v| {
                if removed < hits.len() && hits[removed] == i {
                    removed += 1;
                } else {
                    moves.push((i - removed as u64, v.to_vec()));
                }
                true
            })?;
            for (i, v) in &moves {
                self.list_put(&mut batch, key, &l, *i, v);
            }
            l.tail -= k;
        } else {
            // Close the gaps by moving earlier items towards the tail.
            let mut moves = Vec::new();
            let mut removed = 0usize;
            self.list_span(key, &l, l.head, last + 1, true, |i, v| {
                if removed < hits.len() && hits[hits.len() - 1 - removed] == i {
                    removed += 1;
                } else {
                    moves.push((i + removed as u64, v.to_vec()));
                }
                true
            })?;
            for (i, v) in &moves {
                self.list_put(&mut batch, key, &l, *i, v);
            }
            l.head += k;
        }
        // The `k` indexes the list's end moved past are garbage (module doc): only the moved
        // items and the metadata are written.
        let (from, to) = (l.head, l.tail);
        self.list_commit(batch, key, &mut l)?;
        if tail_side {
            self.list_drop_garbage(key, &l, to, to.saturating_add(k));
        } else {
            self.list_drop_garbage(key, &l, from.saturating_sub(k), from);
        }
        Ok(k)
    }

    /// LTRIM: keeps only the items from `start` to `stop` inclusive; an empty range deletes the
    /// key. The trimmed items are removed with range deletions (O(1) for any count).
    pub fn ltrim(&self, key: &[u8], start: i64, stop: i64) -> Result<()> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut l) = self.list_load(key)? else {
            return Ok(());
        };
        let batch = crate::storage::new_batch();
        let (head, tail) = (l.head, l.tail);
        match normalize_rank(start, stop, l.len()) {
            Some((a, b)) => {
                let (new_head, new_tail) = (l.head + a, l.head + b + 1);
                if new_head == l.head && new_tail == l.tail {
                    return Ok(());
                }
                // The trimmed items become garbage (module doc): only the metadata is written.
                l.head = new_head;
                l.tail = new_tail;
            }
            None => {
                // The whole list goes: its items become orphans of a deleted key.
                l.tail = l.head;
            }
        }
        self.list_commit(batch, key, &mut l)?;
        self.list_drop_garbage(key, &l, head, l.head.min(tail));
        self.list_drop_garbage(key, &l, l.tail.max(head), tail);
        Ok(())
    }

    /// LPOS: the 0-based positions of items equal to `value`. `rank` (non-zero) picks the first
    /// match to report (negative: searching from the tail), `count` how many to report (0 = all),
    /// `maxlen` how many items to compare at most (0 = all). O(N).
    pub fn lpos(
        &self,
        key: &[u8],
        value: &[u8],
        rank: i64,
        count: u64,
        maxlen: u64,
    ) -> Result<Vec<u64>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(l) = self.list_load(key)? else {
            return Ok(Vec::new());
        };
        let from_tail = rank < 0;
        // Redis negates the rank in a C long; i64::MIN stays negative and then matches anything.
        let rank = if from_tail { rank.wrapping_neg() } else { rank };
        let len = l.len();
        let mut out = Vec::new();
        let mut seen = 0u64;
        let mut matches: i64 = 0;
        self.list_span(key, &l, l.head, l.tail, from_tail, |i, v| {
            if maxlen != 0 && seen >= maxlen {
                return false;
            }
            seen += 1;
            if v == value {
                matches += 1;
                if matches >= rank {
                    let pos = i - l.head;
                    out.push(pos);
                    let reported = matches.wrapping_sub(rank).wrapping_add(1);
                    if count != 0 && reported >= count as i64 {
                        return false;
                    }
                }
            }
            true
        })?;
        debug_assert!(out.iter().all(|p| *p < len));
        Ok(out)
    }

    /// LMOVE (and RPOPLPUSH): pops an item from `from` of `src` and pushes it at `to` of `dst`,
    /// atomically; `None` if `src` is missing. `src` and `dst` may be the same list (rotation).
    pub fn lmove(
        &self,
        src: &[u8],
        dst: &[u8],
        from: ListEnd,
        to: ListEnd,
    ) -> Result<Option<Vec<u8>>> {
        let _g = self
            .inner
            .locks
            .lock([(self.index, src), (self.index, dst)]);
        let Some(mut s) = self.list_load(src)? else {
            return Ok(None);
        };
        let mut d = if src == dst {
            None
        } else {
            Some(match self.list_load(dst)? {
                Some(d) => d,
                None => self.list_load_or_new(dst)?,
            })
        };
        let at = match from {
            ListEnd::Left => s.head,
            ListEnd::Right => s.tail - 1,
        };
        let Some(item) = self.list_points(src, &s, from, 1)?.0.pop() else {
            return Err(Error::Corrupt("list item missing inside its bounds".into()));
        };
        let mut batch = crate::storage::new_batch();
        // The popped item's record becomes garbage (module doc), unless the push below takes
        // its index back (a one-item list rotated onto itself), which rewrites it.
        match from {
            ListEnd::Left => s.head += 1,
            ListEnd::Right => s.tail -= 1,
        }
        match d.as_mut() {
            None => {
                self.list_push_into(&mut batch, src, &mut s, to, &[&item])?;
            }
            Some(d) => {
                self.list_push_into(&mut batch, dst, d, to, &[&item])?;
                d.sync();
                self.put_collection(&mut batch, dst, &d.c);
            }
        }
        self.list_commit(batch, src, &mut s)?;
        self.list_drop_garbage(src, &s, at, at + 1);
        Ok(Some(item))
    }

    /// LMPOP: pops up to `count` items from `end` of the first non-empty list among `keys`;
    /// returns its key and the items, or `None` if all are missing. A key of another type met
    /// before a list fails with `WrongType`.
    pub fn lmpop(&self, keys: &[&[u8]], end: ListEnd, count: u64) -> Result<Option<KeyedItems>> {
        let _g = self.inner.locks.lock(keys.iter().map(|k| (self.index, *k)));
        for k in keys {
            if let Some(items) = self.list_pop_locked(k, end, count)? {
                return Ok(Some((k.to_vec(), items)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    //! Pops that read their items from a run of the hot-record cache (`hot.rs`): every change
    //! to an item in the run's span, with the write-back tier (before and after a checkpoint)
    //! and without it, is what the next pop returns.

    use super::*;
    use std::collections::VecDeque;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn open(tier: bool) -> Result<(tempfile::TempDir, Db)> {
        let dir = tempfile::tempdir().map_err(|e| Error::Corrupt(e.to_string()))?;
        let opts = crate::db::Options {
            hot_cache_size: 16 << 20,
            write_back: tier.then_some(4 << 20),
            sync: crate::storage::SyncPolicy::No,
            ..Default::default()
        };
        let db = Db::open_with(dir.path(), opts)?;
        Ok((dir, db))
    }

    /// Writes the tier's layer to RocksDB and hands it to the cache (nothing without the tier).
    fn checkpoint(db: &Db) -> Result<()> {
        if db.write_back() {
            db.storage().checkpoint_tier()?;
        }
        Ok(())
    }

    fn item(i: usize) -> Vec<u8> {
        format!("item-{i:05}").into_bytes()
    }

    /// A list of `n` items pushed, checkpointed (so they are committed and cached), and popped
    /// once from the left and once from the right, so that a run of each end holds the items
    /// next in line.
    fn list_with_runs(db: &Db, key: &[u8], n: usize) -> Result<VecDeque<Vec<u8>>> {
        let items: Vec<Vec<u8>> = (0..n).map(item).collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        db.rpush(key, &refs)?;
        checkpoint(db)?;
        let mut model: VecDeque<Vec<u8>> = items.into();
        assert_eq!(
            db.list_pop(key, ListEnd::Left, 1)?,
            Some(vec![model.pop_front().unwrap_or_default()])
        );
        assert_eq!(
            db.list_pop(key, ListEnd::Right, 1)?,
            Some(vec![model.pop_back().unwrap_or_default()])
        );
        Ok(model)
    }

    /// Whether a run of the cache holds the item at Redis index `index` of the list at `key`.
    fn run_holds(db: &Db, key: &[u8], index: i64) -> Result<bool> {
        let Some(l) = db.list_load(key)? else {
            return Ok(false);
        };
        let Some(at) = l.absolute(index) else {
            return Ok(false);
        };
        let sub = db.sub_key(key, &l.c, &idx(at));
        Ok(db
            .storage()
            .hot_family(CF_DATA)
            .is_some_and(|c| c.run_holds(&sub)))
    }

    fn pop_all(db: &Db, key: &[u8], end: ListEnd) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        while let Some(mut items) = db.list_pop(key, end, 1)? {
            out.append(&mut items);
        }
        Ok(out)
    }

    #[test]
    fn a_pop_of_a_long_list_reads_the_items_next_in_line_into_a_run() -> R {
        for tier in [true, false] {
            let (_dir, db) = open(tier)?;
            let model = list_with_runs(&db, b"q", 1000)?;
            assert!(run_holds(&db, b"q", 0)?, "tier {tier}: left run");
            assert!(run_holds(&db, b"q", -1)?, "tier {tier}: right run");
            assert!(
                !run_holds(&db, b"q", 500)?,
                "tier {tier}: the middle is not read ahead"
            );
            let got = pop_all(&db, b"q", ListEnd::Left)?;
            assert_eq!(got, Vec::from(model), "tier {tier}");
        }
        Ok(())
    }

    /// LSET, LINSERT, LREM and LTRIM inside a run's span: the next pops return the new items,
    /// whether or not a checkpoint (which forgets the run's changed slots) came in between.
    #[test]
    fn a_pop_after_a_change_in_the_read_ahead_span_returns_the_new_item() -> R {
        for tier in [true, false] {
            for checkpoint_between in [false, true] {
                let (_dir, db) = open(tier)?;
                let mut model = list_with_runs(&db, b"q", 1000)?;
                let ctx = format!("tier {tier}, checkpoint {checkpoint_between}");
                assert!(db.lset(b"q", 3, b"set-left")?);
                model[3] = b"set-left".to_vec();
                assert!(db.lset(b"q", -4, b"set-right")?);
                let last = model.len() - 4;
                model[last] = b"set-right".to_vec();
                // Before the 6th item: shifts the 6 items on the head's side.
                let pivot = model[6].clone();
                assert_eq!(
                    db.linsert(b"q", true, &pivot, b"inserted")?,
                    model.len() as i64 + 1
                );
                model.insert(6, b"inserted".to_vec());
                let gone = model[10].clone();
                assert_eq!(db.lrem(b"q", 1, &gone)?, 1);
                model.remove(10);
                let gone = model[model.len() - 8].clone();
                assert_eq!(db.lrem(b"q", -1, &gone)?, 1);
                model.remove(model.len() - 8);
                db.ltrim(b"q", 2, -3)?;
                model.drain(..2);
                model.truncate(model.len() - 2);
                if checkpoint_between {
                    checkpoint(&db)?;
                }
                let mut front = Vec::new();
                for _ in 0..20 {
                    front.extend(db.list_pop(b"q", ListEnd::Left, 1)?.unwrap_or_default());
                }
                let want: Vec<Vec<u8>> = model.drain(..20).collect();
                assert_eq!(front, want, "{ctx}: left");
                let mut back = Vec::new();
                for _ in 0..20 {
                    back.extend(db.list_pop(b"q", ListEnd::Right, 1)?.unwrap_or_default());
                }
                let want: Vec<Vec<u8>> = (0..20).filter_map(|_| model.pop_back()).collect();
                assert_eq!(back, want, "{ctx}: right");
            }
        }
        Ok(())
    }

    /// A list deleted and created again under the same name while a run holds its old items:
    /// pops return the new list's items (before and after a checkpoint), also after FLUSHALL.
    #[test]
    fn a_pop_after_del_and_re_create_returns_the_new_items() -> R {
        for tier in [true, false] {
            for checkpoint_between in [false, true] {
                let (_dir, db) = open(tier)?;
                list_with_runs(&db, b"q", 1000)?;
                db.del(&[b"q"])?;
                let fresh: Vec<Vec<u8>> =
                    (0..300).map(|i| format!("new-{i}").into_bytes()).collect();
                let refs: Vec<&[u8]> = fresh.iter().map(Vec::as_slice).collect();
                db.rpush(b"q", &refs)?;
                if checkpoint_between {
                    checkpoint(&db)?;
                }
                assert_eq!(pop_all(&db, b"q", ListEnd::Left)?, fresh);

                list_with_runs(&db, b"r", 1000)?;
                db.flushall()?;
                db.rpush(b"r", &refs)?;
                if checkpoint_between {
                    checkpoint(&db)?;
                }
                let mut want = fresh.clone();
                want.reverse();
                assert_eq!(pop_all(&db, b"r", ListEnd::Right)?, want);
            }
        }
        Ok(())
    }

    /// Pops from both ends of a long list, with pushes and checkpoints between them, until the
    /// ends meet: every pop returns what a model list does.
    #[test]
    fn pops_of_both_ends_across_checkpoints_until_they_meet_match_a_model() -> R {
        for tier in [true, false] {
            let (_dir, db) = open(tier)?;
            let mut model = list_with_runs(&db, b"q", 2000)?;
            let mut step = 0usize;
            while !model.is_empty() {
                step += 1;
                let end = if step.is_multiple_of(3) {
                    ListEnd::Right
                } else {
                    ListEnd::Left
                };
                let got = db.list_pop(b"q", end, 1)?.unwrap_or_default();
                let want = match end {
                    ListEnd::Left => model.pop_front(),
                    ListEnd::Right => model.pop_back(),
                };
                assert_eq!(
                    got,
                    want.into_iter().collect::<Vec<_>>(),
                    "tier {tier}, step {step}"
                );
                if step.is_multiple_of(97) {
                    checkpoint(&db)?;
                }
                if step.is_multiple_of(211) {
                    let v = format!("pushed-{step}").into_bytes();
                    db.lpush(b"q", &[&v])?;
                    model.push_front(v.clone());
                    db.rpush(b"q", &[&v])?;
                    model.push_back(v);
                }
            }
            assert_eq!(db.llen(b"q")?, 0);
        }
        Ok(())
    }

    /// The records of the list at `key` (version `version`) in RocksDB itself, below the
    /// tier: `(index, item)` in index order.
    fn rocksdb_items(db: &Db, key: &[u8], version: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let s = db.storage();
        let prefix = crate::keys::data_prefix(db.phys(), key, version);
        let mut it = s.raw().raw_iterator_cf(s.cf(CF_DATA));
        it.seek(&prefix);
        let mut out = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(&prefix) {
                break;
            }
            let i = idx_of(&k[prefix.len()..])
                .ok_or_else(|| Error::Corrupt("list sub-key is not 8 bytes".into()))?;
            out.push((i, v.to_vec()));
            it.next();
        }
        Ok(out)
    }

    fn version_of(db: &Db, key: &[u8]) -> Result<u64> {
        db.list_load(key)?
            .map(|l| l.c.version)
            .ok_or_else(|| Error::Corrupt("no such list".into()))
    }

    fn pushed(db: &Db, key: &[u8], n: usize) -> Result<VecDeque<Vec<u8>>> {
        let items: Vec<Vec<u8>> = (0..n).map(item).collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        db.rpush(key, &refs)?;
        Ok(items.into())
    }

    /// Every read of a list (LRANGE, LINDEX at each index and out of range, LPOS of each item
    /// ever pushed, LLEN, `list_each`, SORT) agrees with `model`.
    fn reads_match(db: &Db, key: &[u8], model: &VecDeque<Vec<u8>>, ever: usize, ctx: &str) -> R {
        let want: Vec<Vec<u8>> = model.iter().cloned().collect();
        assert_eq!(db.lrange(key, 0, -1)?, want, "{ctx}: lrange");
        assert_eq!(db.llen(key)?, want.len() as u64, "{ctx}: llen");
        let mut each = Vec::new();
        db.list_each(key, |v| each.push(v.to_vec()))?;
        assert_eq!(each, want, "{ctx}: list_each");
        for (i, v) in want.iter().enumerate() {
            assert_eq!(
                db.lindex(key, i as i64)?.as_ref(),
                Some(v),
                "{ctx}: lindex {i}"
            );
        }
        assert_eq!(
            db.lindex(key, want.len() as i64)?,
            None,
            "{ctx}: lindex past the tail"
        );
        assert_eq!(
            db.lindex(key, -(want.len() as i64) - 1)?,
            None,
            "{ctx}: lindex before the head"
        );
        for n in 0..ever {
            let v = item(n);
            let at = want.iter().position(|w| *w == v).map(|p| p as u64);
            assert_eq!(
                db.lpos(key, &v, 1, 1, 0)?.first().copied(),
                at,
                "{ctx}: lpos {n}"
            );
        }
        let opts = crate::SortOptions {
            alpha: true,
            ..Default::default()
        };
        let mut sorted = want.clone();
        sorted.sort();
        let got: Vec<Vec<u8>> = db.sort(key, &opts)?.into_iter().flatten().collect();
        assert_eq!(got, sorted, "{ctx}: sort");
        Ok(())
    }

    /// Pops from both ends, LTRIM and LREM at the ends leave the items' records behind as
    /// garbage: no read returns them, with or without the tier, before and after a checkpoint,
    /// a compaction and a reopen; and a push that takes a popped index back returns the new
    /// item.
    #[test]
    fn a_popped_item_is_never_read_again() -> R {
        for tier in [true, false] {
            for checkpoint_between in [false, true] {
                let ctx = format!("tier {tier}, checkpoint {checkpoint_between}");
                let dir = tempfile::tempdir()?;
                let opts = || crate::db::Options {
                    hot_cache_size: 16 << 20,
                    write_back: tier.then_some(4 << 20),
                    sync: crate::storage::SyncPolicy::No,
                    ..Default::default()
                };
                let db = Db::open_with(dir.path(), opts())?;
                let mut model = pushed(&db, b"q", 300)?;
                if checkpoint_between {
                    checkpoint(&db)?;
                }
                for _ in 0..40 {
                    assert_eq!(
                        db.list_pop(b"q", ListEnd::Left, 1)?,
                        Some(vec![model.pop_front().unwrap_or_default()])
                    );
                }
                let got = db.list_pop(b"q", ListEnd::Right, 30)?.unwrap_or_default();
                let want: Vec<Vec<u8>> = (0..30).filter_map(|_| model.pop_back()).collect();
                assert_eq!(got, want, "{ctx}: rpop 30");
                let moved = db.lmove(b"q", b"other", ListEnd::Left, ListEnd::Right)?;
                assert_eq!(moved, model.pop_front(), "{ctx}: lmove");
                let got = db.lmpop(&[&b"none"[..], &b"q"[..]], ListEnd::Left, 20)?;
                let want: Vec<Vec<u8>> = model.drain(..20).collect();
                assert_eq!(got, Some((b"q".to_vec(), want)), "{ctx}: lmpop");
                db.ltrim(b"q", 5, -6)?;
                model.drain(..5);
                model.truncate(model.len() - 5);
                let last = model.back().cloned().unwrap_or_default();
                assert_eq!(db.lrem(b"q", -1, &last)?, 1);
                model.pop_back();
                if checkpoint_between {
                    checkpoint(&db)?;
                }
                reads_match(&db, b"q", &model, 300, &format!("{ctx}: after pops"))?;
                // Pushes at both ends take popped indexes back.
                for n in 0..10 {
                    let v = format!("new-left-{n}").into_bytes();
                    db.lpush(b"q", &[&v])?;
                    model.push_front(v);
                    let v = format!("new-right-{n}").into_bytes();
                    db.rpush(b"q", &[&v])?;
                    model.push_back(v);
                }
                reads_match(&db, b"q", &model, 300, &format!("{ctx}: after pushes"))?;
                checkpoint(&db)?;
                db.compact();
                reads_match(
                    &db,
                    b"q",
                    &model,
                    300,
                    &format!("{ctx}: after a compaction"),
                )?;
                drop(db);
                let db = Db::open_with(dir.path(), opts())?;
                reads_match(&db, b"q", &model, 300, &format!("{ctx}: after a reopen"))?;
                let all = pop_all(&db, b"q", ListEnd::Right)?;
                let mut want: Vec<Vec<u8>> = model.into_iter().collect();
                want.reverse();
                assert_eq!(all, want, "{ctx}: popping the rest");
            }
        }
        Ok(())
    }

    /// A compaction removes the records of a list's items outside its bounds (the head and the
    /// tail moved, the garbage of an LTRIM) and keeps every item inside them; a deleted list's
    /// records all go.
    #[test]
    fn compaction_removes_the_items_outside_a_list_and_keeps_the_rest() -> R {
        for tier in [true, false] {
            let (_dir, db) = open(tier)?;
            let mut model = pushed(&db, b"q", 1000)?;
            pushed(&db, b"gone", 100)?;
            let gone = version_of(&db, b"gone")?;
            checkpoint(&db)?;
            db.compact();
            let version = version_of(&db, b"q")?;
            assert_eq!(
                rocksdb_items(&db, b"q", version)?.len(),
                1000,
                "tier {tier}"
            );
            for _ in 0..300 {
                db.list_pop(b"q", ListEnd::Left, 1)?;
                model.pop_front();
            }
            db.list_pop(b"q", ListEnd::Right, 200)?;
            model.truncate(model.len() - 200);
            db.ltrim(b"q", 10, -1)?;
            model.drain(..10);
            db.del(&[b"gone"])?;
            checkpoint(&db)?;
            assert_eq!(
                rocksdb_items(&db, b"q", version)?.len(),
                1000,
                "tier {tier}: the garbage stays until a compaction"
            );
            db.compact();
            let l = db.list_load(b"q")?.ok_or("no list")?;
            let left = rocksdb_items(&db, b"q", version)?;
            let want: Vec<(u64, Vec<u8>)> = (l.head..l.tail).zip(model.iter().cloned()).collect();
            assert_eq!(left, want, "tier {tier}");
            assert!(rocksdb_items(&db, b"gone", gone)?.is_empty(), "tier {tier}");
            assert_eq!(db.lrange(b"q", 0, -1)?, Vec::from(model), "tier {tier}");
            let report = db.check(false, |_| {})?;
            assert!(
                report.problems.is_empty(),
                "tier {tier}: {:?}",
                report.problems
            );
            assert_eq!(report.orphan_records, 0, "tier {tier}");
        }
        Ok(())
    }

    /// With the tier, an item pushed and popped between two checkpoints (a queue's) is dropped
    /// from the active layer and never written to RocksDB: neither as an item nor as a
    /// tombstone, so RocksDB holds only the items the checkpoint found inside the bounds.
    #[test]
    fn a_queue_item_pushed_and_popped_between_checkpoints_never_reaches_rocksdb() -> R {
        let (_dir, db) = open(true)?;
        let mut model = VecDeque::new();
        for n in 0..500 {
            let v = item(n);
            db.lpush(b"q", &[&v])?;
            model.push_front(v);
            if n % 3 != 0 {
                let got = db.list_pop(b"q", ListEnd::Right, 1)?;
                assert_eq!(got, model.pop_back().map(|v| vec![v]));
            }
            if n % 5 == 0 {
                let got = db.list_pop(b"q", ListEnd::Left, 1)?;
                assert_eq!(got, model.pop_front().map(|v| vec![v]));
            }
        }
        let version = version_of(&db, b"q")?;
        checkpoint(&db)?;
        let l = db.list_load(b"q")?.ok_or("no list")?;
        let stored = rocksdb_items(&db, b"q", version)?;
        let want: Vec<(u64, Vec<u8>)> = (l.head..l.tail).zip(model.iter().cloned()).collect();
        assert_eq!(stored, want);
        assert_eq!(db.lrange(b"q", 0, -1)?, Vec::from(model));
        Ok(())
    }

    /// LMOVE of a one-item list onto itself pops the item's index and pushes it back at the
    /// same index: the item stays, before and after a checkpoint and a compaction.
    #[test]
    fn lmove_of_a_one_item_list_onto_itself_keeps_its_item() -> R {
        for tier in [true, false] {
            let (_dir, db) = open(tier)?;
            db.rpush(b"q", &[b"only"])?;
            for (from, to) in [
                (ListEnd::Left, ListEnd::Left),
                (ListEnd::Right, ListEnd::Right),
                (ListEnd::Left, ListEnd::Right),
            ] {
                assert_eq!(db.lmove(b"q", b"q", from, to)?, Some(b"only".to_vec()));
                checkpoint(&db)?;
                db.compact();
                assert_eq!(
                    db.lrange(b"q", 0, -1)?,
                    vec![b"only".to_vec()],
                    "tier {tier}"
                );
            }
        }
        Ok(())
    }

    /// RENAME and COPY of a list with garbage at both ends copy its items only; MEMORY USAGE
    /// and `check` do not count the garbage (check counts it with the orphan records).
    #[test]
    fn rename_copy_memory_usage_and_check_see_only_the_items_inside_the_bounds() -> R {
        for tier in [true, false] {
            let (_dir, db) = open(tier)?;
            // 100 big items, 50 small ones, 50 big ones; the big ones are then popped.
            let big = vec![b'x'; 1000];
            let mut model = VecDeque::new();
            for n in 0..200 {
                let v = match n {
                    100..150 => item(n),
                    _ => big.clone(),
                };
                db.rpush(b"q", &[&v])?;
                model.push_back(v);
            }
            checkpoint(&db)?;
            db.list_pop(b"q", ListEnd::Left, 100)?;
            model.drain(..100);
            db.list_pop(b"q", ListEnd::Right, 50)?;
            model.truncate(50);
            checkpoint(&db)?;
            // 50 items of 10 bytes: a few KB, where sampling the garbage would say 50 KB.
            let usage = db.memory_usage(b"q", 5)?.ok_or("no list")?;
            assert!(usage < 5_000, "tier {tier}: {usage}");
            let report = db.check(false, |_| {})?;
            assert!(
                report.problems.is_empty(),
                "tier {tier}: {:?}",
                report.problems
            );
            assert_eq!(
                (report.members, report.orphan_records),
                (50, 150),
                "tier {tier}"
            );
            db.rename(b"q", b"r", false)?;
            assert!(db.copy(b"r", 0, b"c", false)?);
            checkpoint(&db)?;
            for key in [&b"r"[..], &b"c"[..]] {
                let version = version_of(&db, key)?;
                let stored: Vec<Vec<u8>> = rocksdb_items(&db, key, version)?
                    .into_iter()
                    .map(|(_, v)| v)
                    .collect();
                assert_eq!(stored, Vec::from(model.clone()), "tier {tier}");
                assert_eq!(
                    db.lrange(key, 0, -1)?,
                    Vec::from(model.clone()),
                    "tier {tier}"
                );
            }
        }
        Ok(())
    }

    /// Pops that write only the metadata still charge the tier's active layer as their deletes
    /// did, so checkpoints come as often and the redo log a restart replays stays bounded by
    /// the dirty limit: popped items that RocksDB holds, and queue items dropped from the layer.
    #[test]
    fn pops_charge_the_active_layer_as_their_deletes_did() -> R {
        let (_dir, db) = open(true)?;
        let active = |db: &Db| db.storage().tier_figures().map_or(0, |f| f[0]);
        pushed(&db, b"q", 1000)?;
        checkpoint(&db)?;
        let before = active(&db);
        for _ in 0..500 {
            db.list_pop(b"q", ListEnd::Left, 1)?;
        }
        let grown = active(&db) - before;
        assert!(
            grown >= 500 * 64,
            "{grown} bytes for 500 pops of checkpointed items"
        );
        checkpoint(&db)?;
        let before = active(&db);
        for n in 0..500 {
            db.lpush(b"r", &[&item(n)])?;
            db.list_pop(b"r", ListEnd::Right, 1)?;
        }
        let grown = active(&db) - before;
        assert!(grown >= 500 * 64, "{grown} bytes for 500 pushes and pops");
        Ok(())
    }

    /// Several queues pushed and popped in turn between two checkpoints, with walks (LRANGE)
    /// between the pops so the tier's layer keeps its keys in order: items the layer holds in
    /// its hash map and in its ordered tail are both dropped, walks never return a dropped
    /// item, and RocksDB ends up with each list's items inside its bounds only.
    #[test]
    fn queue_items_of_several_lists_are_dropped_from_the_layer_and_never_walked() -> R {
        let (_dir, db) = open(true)?;
        let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
        let mut models = vec![VecDeque::new(); keys.len()];
        for n in 0..600 {
            let k = n % keys.len();
            let v = item(n);
            if n % 2 == 0 {
                db.lpush(keys[k], &[&v])?;
                models[k].push_front(v);
            } else {
                db.rpush(keys[k], &[&v])?;
                models[k].push_back(v);
            }
            if n % 4 == 3 {
                let j = (n / 4) % keys.len();
                let end = if n % 8 == 3 {
                    ListEnd::Left
                } else {
                    ListEnd::Right
                };
                let want = match end {
                    ListEnd::Left => models[j].pop_front(),
                    ListEnd::Right => models[j].pop_back(),
                };
                assert_eq!(db.list_pop(keys[j], end, 1)?, want.map(|v| vec![v]));
                for (key, model) in keys.iter().zip(&models) {
                    assert_eq!(db.lrange(key, 0, -1)?, Vec::from(model.clone()));
                }
            }
        }
        let versions = keys
            .iter()
            .map(|k| version_of(&db, k))
            .collect::<Result<Vec<_>>>()?;
        checkpoint(&db)?;
        for ((key, model), version) in keys.iter().zip(&models).zip(versions) {
            let l = db.list_load(key)?.ok_or("no list")?;
            let want: Vec<(u64, Vec<u8>)> = (l.head..l.tail).zip(model.iter().cloned()).collect();
            assert_eq!(rocksdb_items(&db, key, version)?, want);
            assert_eq!(db.lrange(key, 0, -1)?, Vec::from(model.clone()));
        }
        Ok(())
    }
}
