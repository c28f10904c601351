//! Atomic scopes: the writes a transaction or a script makes on one thread, held back and then
//! committed as one RocksDB write batch (one write-ahead-log record), so that a crash or a power
//! cut keeps all of them or none, and other threads see them all at once. While a scope is open,
//! [`Pending`] keeps its writes twice: as the concatenated records of the write batches the data
//! model built (what the commit writes), and as an index by column family and key (point writes
//! and range deletions: a [`Layer`]), through which every read of that thread goes first — point
//! reads in `storage.rs`, iterators through [`StorageIter`], which merges a stack of layers (the
//! scope's, and the write-back tier's) with a RocksDB iterator in both directions — so the scope
//! sees its own writes. `storage.rs` opens, reads and commits scopes; this module knows RocksDB's
//! write-batch encoding and iterators, and nothing of the data model.

use std::ops::Bound;

use rocksdb::DBRawIteratorWithThreadMode;

use crate::error::{Error, Result};
use crate::layer::{Layer, Lookup, Mask, Stack, Walk};
use crate::patch::{self, Ranges};

/// A RocksDB raw iterator over a plain `DB`.
pub(crate) type RawIter<'a> = DBRawIteratorWithThreadMode<'a, rocksdb::DB>;

/// Size of a write batch's header: sequence number (8 bytes), record count (4 bytes).
const HEADER: usize = 12;

// Record tags of RocksDB's write-batch encoding (db/dbformat.h, `ValueType`); the same bytes are
// the write-ahead log's records, so they never change meaning.
const TAG_DELETION: u8 = 0x0;
const TAG_VALUE: u8 = 0x1;
const TAG_LOG_DATA: u8 = 0x3;
const TAG_CF_DELETION: u8 = 0x4;
const TAG_CF_VALUE: u8 = 0x5;
const TAG_SINGLE_DELETION: u8 = 0x7;
const TAG_CF_SINGLE_DELETION: u8 = 0x8;
const TAG_NOOP: u8 = 0xD;
const TAG_CF_RANGE_DELETION: u8 = 0xE;
const TAG_RANGE_DELETION: u8 = 0xF;

/// One operation of a write batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BatchOp<'a> {
    /// `key` := `value` in column family `cf` (by id; the default family is 0).
    Put {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    /// `key` removed.
    Delete { cf: u32, key: &'a [u8] },
    /// Every key in `from..to` removed.
    DeleteRange {
        cf: u32,
        from: &'a [u8],
        to: &'a [u8],
    },
    /// `key`'s value changed in byte ranges (only in the write-back tier's redo log, which
    /// writes one in place of a put: `patch.rs`); applied to the value the reader holds.
    Patch {
        cf: u32,
        key: &'a [u8],
        ranges: Ranges<'a>,
    },
}

fn malformed(what: &str) -> Error {
    Error::Storage(format!("unexpected write batch encoding: {what}"))
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .data
            .get(self.at)
            .ok_or_else(|| malformed("truncated record"))?;
        self.at += 1;
        Ok(b)
    }

    fn varint32(&mut self) -> Result<u32> {
        let mut v: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            v |= ((b & 0x7f) as u32) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(malformed("varint longer than 5 bytes"))
    }

    fn slice(&mut self) -> Result<&'a [u8]> {
        let len = self.varint32()? as usize;
        let end = self
            .at
            .checked_add(len)
            .ok_or_else(|| malformed("length"))?;
        let s = self
            .data
            .get(self.at..end)
            .ok_or_else(|| malformed("truncated slice"))?;
        self.at = end;
        Ok(s)
    }
}

/// The record count and operations of a write batch's encoding (`WriteBatch::data`). Only what
/// Strata writes is understood: puts, deletes and range deletes (log data and no-ops are
/// skipped); anything else (merges, prepared transactions) is an error.
pub(crate) fn decode_batch(data: &[u8]) -> Result<(u32, Vec<BatchOp<'_>>)> {
    let Some(count) = data.get(8..HEADER) else {
        return Err(malformed("shorter than its header"));
    };
    let count = u32::from_le_bytes([count[0], count[1], count[2], count[3]]);
    let mut r = Reader { data, at: HEADER };
    let mut ops = Vec::with_capacity(count as usize);
    while r.at < data.len() {
        let tag = r.byte()?;
        let cf = match tag {
            TAG_CF_VALUE | TAG_CF_DELETION | TAG_CF_SINGLE_DELETION | TAG_CF_RANGE_DELETION => {
                r.varint32()?
            }
            _ => 0,
        };
        match tag {
            TAG_VALUE | TAG_CF_VALUE => {
                let key = r.slice()?;
                let value = r.slice()?;
                ops.push(BatchOp::Put { cf, key, value });
            }
            TAG_DELETION | TAG_CF_DELETION | TAG_SINGLE_DELETION | TAG_CF_SINGLE_DELETION => {
                ops.push(BatchOp::Delete {
                    cf,
                    key: r.slice()?,
                });
            }
            TAG_RANGE_DELETION | TAG_CF_RANGE_DELETION => {
                let from = r.slice()?;
                let to = r.slice()?;
                ops.push(BatchOp::DeleteRange { cf, from, to });
            }
            patch::TAG_CF_PATCH => {
                let cf = r.varint32()?;
                let key = r.slice()?;
                let ranges = Ranges::read(r.data, &mut r.at)?;
                ops.push(BatchOp::Patch { cf, key, ranges });
            }
            TAG_LOG_DATA => {
                r.slice()?;
            }
            TAG_NOOP => {}
            other => return Err(malformed(&format!("record type {other:#x}"))),
        }
    }
    Ok((count, ops))
}

fn put_varint32(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_slice(out: &mut Vec<u8>, s: &[u8]) {
    put_varint32(out, u32::try_from(s.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(s);
}

/// Appends the record of `op` in the write-batch encoding (a single deletion is written as a
/// deletion: the same for every reader of Strata's batches). A patch is written by
/// `patch::encode`, from the value it makes, and is not accepted here.
pub(crate) fn encode_op(out: &mut Vec<u8>, op: &BatchOp<'_>) -> Result<()> {
    let tagged = |out: &mut Vec<u8>, plain: u8, with_cf: u8, cf: u32| {
        if cf == 0 {
            out.push(plain);
        } else {
            out.push(with_cf);
            put_varint32(out, cf);
        }
    };
    match *op {
        BatchOp::Put { cf, key, value } => {
            tagged(out, TAG_VALUE, TAG_CF_VALUE, cf);
            put_slice(out, key);
            put_slice(out, value);
        }
        BatchOp::Delete { cf, key } => {
            tagged(out, TAG_DELETION, TAG_CF_DELETION, cf);
            put_slice(out, key);
        }
        BatchOp::DeleteRange { cf, from, to } => {
            tagged(out, TAG_RANGE_DELETION, TAG_CF_RANGE_DELETION, cf);
            put_slice(out, from);
            put_slice(out, to);
        }
        BatchOp::Patch { .. } => return Err(malformed("a patch re-encoded")),
    }
    Ok(())
}

/// The writes of an open atomic scope.
#[derive(Default)]
pub(crate) struct Pending {
    layer: Layer,
    /// The records of every batch written in the scope, in order (after a header slot).
    records: Vec<u8>,
    count: u32,
}

impl Pending {
    /// Takes in a write batch's encoding: indexes its operations and keeps its records.
    pub(crate) fn add(&mut self, data: &[u8]) -> Result<()> {
        let (count, ops) = decode_batch(data)?;
        for op in &ops {
            self.layer.apply(op)?;
        }
        if self.records.is_empty() {
            self.records.resize(HEADER, 0);
        }
        self.records.extend_from_slice(&data[HEADER..]);
        self.count = self
            .count
            .checked_add(count)
            .ok_or_else(|| malformed("more than 2^32 records in one scope"))?;
        Ok(())
    }

    /// Whether nothing was written.
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoding of one write batch holding every write of the scope, in order.
    pub(crate) fn into_batch_data(mut self) -> Vec<u8> {
        if self.records.len() < HEADER {
            self.records.resize(HEADER, 0);
        }
        self.records[8..HEADER].copy_from_slice(&self.count.to_le_bytes());
        self.records
    }

    /// The scope's writes, indexed by family and key.
    pub(crate) fn layer(&self) -> &Layer {
        &self.layer
    }

    /// What the scope wrote at `key` of family `cf`.
    pub(crate) fn lookup(&self, cf: u32, key: &[u8]) -> Lookup<'_> {
        self.layer.lookup(cf, key)
    }
}

/// Bounds of an iteration, as RocksDB's read options give them.
#[derive(Clone, Debug, Default)]
pub(crate) struct IterBounds {
    /// Keys before this are not returned.
    pub lower: Option<Vec<u8>>,
    /// Keys at or after this are not returned.
    pub upper: Option<Vec<u8>>,
    /// Only keys sharing the first `n` bytes of the last seek target (RocksDB's
    /// `prefix_same_as_start` with a fixed-length prefix extractor of `n` bytes).
    pub prefix_len: Option<usize>,
}

/// Which side the merged iterator's current entry comes from.
#[derive(Clone, Copy)]
enum Current {
    None,
    Db,
    Layer,
}

/// What an iteration may return: its bounds, and the prefix of the last seek target.
struct Window {
    bounds: IterBounds,
    /// The prefix of the last seek target, when iterating in prefix mode.
    prefix: Option<Vec<u8>>,
}

impl Window {
    fn in_bounds(&self, k: &[u8]) -> bool {
        self.bounds.lower.as_deref().is_none_or(|l| k >= l)
            && self.bounds.upper.as_deref().is_none_or(|u| k < u)
            && self.prefix.as_deref().is_none_or(|p| k.starts_with(p))
    }

    /// Whether, going forward, `k` and everything after it are out of the iteration.
    fn past_end(&self, k: &[u8]) -> bool {
        self.bounds.upper.as_deref().is_some_and(|u| k >= u)
            || self
                .prefix
                .as_deref()
                .is_some_and(|p| k > p && !k.starts_with(p))
    }

    /// Whether, going backward, `k` and everything before it are out of the iteration.
    fn before_start(&self, k: &[u8]) -> bool {
        self.bounds.lower.as_deref().is_some_and(|l| k < l)
            || self.prefix.as_deref().is_some_and(|p| k < p)
    }

    /// Whether `k` and everything after it in the walk's direction are out of the iteration.
    fn ended(&self, k: &[u8], forward: bool) -> bool {
        if forward {
            self.past_end(k)
        } else {
            self.before_start(k)
        }
    }
}

/// A RocksDB iterator merged with the layers of writes over it.
struct Merge {
    /// The layers' side: its put found last is the layers' next entry in the iteration's
    /// direction (the current entry when `current` is `Layer`).
    walk: Walk,
    cf: u32,
    window: Window,
    forward: bool,
    current: Current,
}

impl Merge {
    fn in_bounds(&self, k: &[u8]) -> bool {
        self.window.in_bounds(k)
    }

    /// The layers' first put from `from` in the current direction.
    fn find_put(&mut self, from: Bound<&[u8]>) {
        let (window, forward) = (&self.window, self.forward);
        self.walk
            .step(self.cf, from, forward, &|k| window.in_bounds(k), &|k| {
                window.ended(k, forward)
            });
    }

    /// The layers' next put after the one they gave last, in the current direction.
    fn step_put(&mut self) {
        let (window, forward) = (&self.window, self.forward);
        self.walk
            .step_on(self.cf, forward, &|k| window.in_bounds(k), &|k| {
                window.ended(k, forward)
            });
    }

    /// Starts the walk over the layers again, after a seek (`target`: its prefix, in prefix
    /// mode; `None`: no prefix). Without a prefix the bounds stay, and so do the runs the walk
    /// copied ([`Walk::reseek`]).
    fn seek(&mut self, forward: bool, target: Option<&[u8]>) {
        self.forward = forward;
        if self.window.bounds.prefix_len.is_none() {
            self.walk.reseek();
            return;
        }
        self.window.prefix = match (self.window.bounds.prefix_len, target) {
            (Some(n), Some(t)) => Some(t[..n.min(t.len())].to_vec()),
            _ => None,
        };
        self.walk.restart();
    }

    /// Moves the database iterator off entries the layers hide, in the current direction (the
    /// layers' walk answers from the runs it copied when they hold the key's place: call after
    /// [`Merge::find_put`]).
    fn settle(&self, db: &mut RawIter<'_>) {
        loop {
            let mask = match db.key() {
                Some(k) if db.valid() && self.in_bounds(k) => self.walk.mask(self.cf, k),
                _ => return,
            };
            match (mask, self.forward) {
                (Mask::Visible, _) => return,
                (Mask::Point, true) => db.next(),
                (Mask::Point, false) => db.prev(),
                (Mask::Range(_, to), true) => db.seek(&to),
                (Mask::Range(from, _), false) => {
                    db.seek_for_prev(&from);
                    if db.valid() && db.key() == Some(from.as_slice()) {
                        db.prev();
                    }
                }
            }
        }
    }

    /// The database iterator's key, if it stands on an entry of this iteration.
    fn db_key<'i>(&self, db: &'i RawIter<'_>) -> Option<&'i [u8]> {
        db.key().filter(|k| db.valid() && self.in_bounds(k))
    }

    fn pick(&mut self, db: &RawIter<'_>) {
        let put = self.walk.found().map(|(k, _)| k);
        self.current = match (self.db_key(db), put) {
            (None, None) => Current::None,
            (Some(_), None) => Current::Db,
            (None, Some(_)) => Current::Layer,
            (Some(d), Some(p)) => {
                if (d < p) == self.forward {
                    Current::Db
                } else {
                    Current::Layer
                }
            }
        };
    }

    /// The current entry's key, copied (to turn around).
    fn current_key(&self, db: &RawIter<'_>) -> Option<Vec<u8>> {
        match self.current {
            Current::None => None,
            Current::Db => db.key().map(<[u8]>::to_vec),
            Current::Layer => self.walk.found().map(|(k, _)| k.to_vec()),
        }
    }
}

/// An iterator over one column family as this thread sees it: the database, overlaid with the
/// layers of writes not in it yet that wrote to that family when the iterator is made (the
/// thread's open scope, the write-back tier's; a plain RocksDB iterator when none did). The
/// subset of `DBRawIterator` that Strata uses. Unlike the database side, which is a snapshot,
/// the layers are read live at each step (through a [`Walk`], which copies a run of a layer's
/// puts at a time and copies again after any write to it), so code that iterates in a scope
/// collects its writes and writes after the walk (as it all does).
pub(crate) struct StorageIter<'a> {
    db: RawIter<'a>,
    merge: Option<Merge>,
}

impl<'a> StorageIter<'a> {
    pub(crate) fn new(
        db: RawIter<'a>,
        layers: Stack,
        cf: u32,
        bounds: IterBounds,
    ) -> StorageIter<'a> {
        let merge = layers.touching(cf).map(|layers| Merge {
            walk: Walk::new(layers),
            cf,
            window: Window {
                bounds,
                prefix: None,
            },
            forward: true,
            current: Current::None,
        });
        StorageIter { db, merge }
    }

    pub(crate) fn seek(&mut self, target: impl AsRef<[u8]>) {
        let target = target.as_ref();
        self.db.seek(target);
        if let Some(m) = &mut self.merge {
            m.seek(true, Some(target));
            m.find_put(Bound::Included(target));
            m.settle(&mut self.db);
            m.pick(&self.db);
        }
    }

    pub(crate) fn seek_for_prev(&mut self, target: impl AsRef<[u8]>) {
        let target = target.as_ref();
        self.db.seek_for_prev(target);
        if let Some(m) = &mut self.merge {
            m.seek(false, Some(target));
            m.find_put(Bound::Included(target));
            m.settle(&mut self.db);
            m.pick(&self.db);
        }
    }

    pub(crate) fn seek_to_first(&mut self) {
        self.db.seek_to_first();
        if let Some(m) = &mut self.merge {
            m.seek(true, None);
            m.find_put(Bound::Unbounded);
            m.settle(&mut self.db);
            m.pick(&self.db);
        }
    }

    pub(crate) fn next(&mut self) {
        let Some(m) = &mut self.merge else {
            return self.db.next();
        };
        match (m.current, m.forward) {
            (Current::None, _) => return,
            (Current::Db, true) => {
                self.db.next();
                m.settle(&mut self.db);
            }
            (Current::Layer, true) => m.step_put(),
            (_, false) => {
                // Turn around: everything after the current key, from both sides.
                let Some(at) = m.current_key(&self.db) else {
                    return;
                };
                m.forward = true;
                self.db.seek(&at);
                if self.db.valid() && self.db.key() == Some(at.as_slice()) {
                    self.db.next();
                }
                m.find_put(Bound::Excluded(&at));
                m.settle(&mut self.db);
            }
        }
        m.pick(&self.db);
    }

    pub(crate) fn prev(&mut self) {
        let Some(m) = &mut self.merge else {
            return self.db.prev();
        };
        match (m.current, m.forward) {
            (Current::None, _) => return,
            (Current::Db, false) => {
                self.db.prev();
                m.settle(&mut self.db);
            }
            (Current::Layer, false) => m.step_put(),
            (_, true) => {
                let Some(at) = m.current_key(&self.db) else {
                    return;
                };
                m.forward = false;
                self.db.seek_for_prev(&at);
                if self.db.valid() && self.db.key() == Some(at.as_slice()) {
                    self.db.prev();
                }
                m.find_put(Bound::Excluded(&at));
                m.settle(&mut self.db);
            }
        }
        m.pick(&self.db);
    }

    pub(crate) fn valid(&self) -> bool {
        match &self.merge {
            None => self.db.valid(),
            Some(m) => !matches!(m.current, Current::None),
        }
    }

    pub(crate) fn key(&self) -> Option<&[u8]> {
        match &self.merge {
            None => self.db.key(),
            Some(m) => match m.current {
                Current::None => None,
                Current::Db => self.db.key(),
                Current::Layer => m.walk.found().map(|(k, _)| k),
            },
        }
    }

    pub(crate) fn value(&self) -> Option<&[u8]> {
        match &self.merge {
            None => self.db.value(),
            Some(m) => match m.current {
                Current::None => None,
                Current::Db => self.db.value(),
                Current::Layer => m.walk.found().map(|(_, v)| v),
            },
        }
    }

    pub(crate) fn status(&self) -> Result<()> {
        self.db.status().map_err(Error::from)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound;

    use rocksdb::WriteBatch;

    use super::{decode_batch, BatchOp, Pending};
    use crate::storage::{IterOptions, Storage, StorageOptions, CF_DATA, CF_META};

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn open(dir: &std::path::Path) -> crate::error::Result<Storage> {
        Storage::open(dir, &crate::storage::test_options())
    }

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
            // Short keys over a small alphabet, so puts, deletes and ranges collide a lot.
            let len = 1 + self.below(3) as usize;
            (0..len).map(|_| b'a' + self.below(5) as u8).collect()
        }
    }

    #[test]
    fn decoded_batch_has_every_operation_in_order() -> R {
        let dir = tempfile::tempdir()?;
        let s = open(dir.path())?;
        let mut b = crate::storage::new_batch();
        b.put(b"d", b"default");
        b.put_cf(s.cf(CF_DATA), b"k", b"v");
        b.delete_cf(s.cf(CF_META), b"gone");
        b.put_log_data(b"ignored");
        b.delete_range_cf(s.cf(CF_DATA), b"a", b"c");
        b.delete(b"x");
        let (count, ops) = decode_batch(b.data())?;
        assert_eq!(count, 5);
        let data = s.cf_id(CF_DATA);
        let meta = s.cf_id(CF_META);
        assert_ne!(data, meta);
        assert_eq!(
            ops,
            vec![
                BatchOp::Put {
                    cf: 0,
                    key: b"d",
                    value: b"default"
                },
                BatchOp::Put {
                    cf: data,
                    key: b"k",
                    value: b"v"
                },
                BatchOp::Delete {
                    cf: meta,
                    key: b"gone"
                },
                BatchOp::DeleteRange {
                    cf: data,
                    from: b"a",
                    to: b"c"
                },
                BatchOp::Delete { cf: 0, key: b"x" },
            ]
        );
        assert!(decode_batch(&b.data()[..b.data().len() - 1]).is_err());
        assert!(decode_batch(&[0u8; 5]).is_err());
        Ok(())
    }

    #[test]
    fn pending_batches_concatenate_into_one_batch_with_every_record() -> R {
        let mut p = Pending::default();
        let mut one = crate::storage::new_batch();
        one.put(b"a", b"1");
        let mut two = crate::storage::new_batch();
        two.delete(b"a");
        two.put(b"b", b"2");
        p.add(one.data())?;
        p.add(two.data())?;
        let data = p.into_batch_data();
        let (count, ops) = decode_batch(&data)?;
        assert_eq!(count, 3);
        assert_eq!(
            ops,
            vec![
                BatchOp::Put {
                    cf: 0,
                    key: b"a",
                    value: b"1"
                },
                BatchOp::Delete { cf: 0, key: b"a" },
                BatchOp::Put {
                    cf: 0,
                    key: b"b",
                    value: b"2"
                },
            ]
        );
        assert_eq!(WriteBatch::from_data(&data).len(), 3);
        Ok(())
    }

    /// What an iteration within bounds must visit, from a model of the family's contents.
    struct Model<'m> {
        map: &'m BTreeMap<Vec<u8>, Vec<u8>>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    }

    impl Model<'_> {
        fn ok(&self, k: &[u8]) -> bool {
            self.lower.as_deref().is_none_or(|l| k >= l)
                && self.upper.as_deref().is_none_or(|u| k < u)
        }
        fn after(&self, from: Bound<&[u8]>) -> Option<Vec<u8>> {
            self.map
                .range::<[u8], _>((from, Bound::Unbounded))
                .map(|(k, _)| k.clone())
                .find(|k| self.ok(k))
        }
        fn before(&self, to: Bound<&[u8]>) -> Option<Vec<u8>> {
            self.map
                .range::<[u8], _>((Bound::Unbounded, to))
                .rev()
                .map(|(k, _)| k.clone())
                .find(|k| self.ok(k))
        }
    }

    /// Random writes (puts, deletes, range deletes) in an atomic scope over random committed
    /// data; random seeks and walks in both directions must see exactly what a model of
    /// "committed state, then the scope's writes in order" holds, before and after the commit.
    #[test]
    fn merged_iterator_walks_committed_data_overlaid_with_scope_writes_both_ways() -> R {
        let dir = tempfile::tempdir()?;
        let s = open(dir.path())?;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..40 {
            // Committed state.
            let mut model = random_committed(&s, &mut rng, 40, &format!("c{round}"))?;
            // The scope's writes, in several batches.
            assert!(s.begin_scope());
            for step in 0..1 + rng.below(8) {
                scope_batch(&s, &mut rng, &mut model, &format!("p{round}.{step}"))?;
            }
            check_walks(&s, &model, &mut rng, round)?;
            for k in model.keys() {
                assert_eq!(s.get(CF_DATA, k)?.as_ref(), model.get(k), "round {round}");
            }
            s.end_scope(true)?;
            check_walks(&s, &model, &mut rng, round)?;
        }
        Ok(())
    }

    /// Committed data: everything in `CF_DATA` deleted, then up to `n` random puts.
    fn random_committed(
        s: &Storage,
        rng: &mut Rng,
        n: u64,
        tag: &str,
    ) -> crate::error::Result<BTreeMap<Vec<u8>, Vec<u8>>> {
        let mut model = BTreeMap::new();
        let mut b = crate::storage::new_batch();
        b.delete_range_cf(s.cf(CF_DATA), &b""[..], &b"\xff\xff\xff\xff"[..]);
        for _ in 0..rng.below(n) {
            let (k, v) = (rng.key(), format!("{tag}.{}", rng.below(1000)));
            b.put_cf(s.cf(CF_DATA), &k, &v);
            model.insert(k, v.into_bytes());
        }
        s.write(b)?;
        Ok(model)
    }

    /// One batch of random writes (puts of `value`, deletes, deleted ranges), applied to
    /// `model` too.
    fn scope_batch(
        s: &Storage,
        rng: &mut Rng,
        model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
        value: &str,
    ) -> crate::error::Result<()> {
        let mut b = crate::storage::new_batch();
        for _ in 0..1 + rng.below(6) {
            match rng.below(10) {
                0..=4 => {
                    let k = rng.key();
                    b.put_cf(s.cf(CF_DATA), &k, value);
                    model.insert(k, value.as_bytes().to_vec());
                }
                5..=7 => {
                    let k = rng.key();
                    b.delete_cf(s.cf(CF_DATA), &k);
                    model.remove(&k);
                }
                _ => {
                    let (mut from, mut to) = (rng.key(), rng.key());
                    if from > to {
                        std::mem::swap(&mut from, &mut to);
                    }
                    b.delete_range_cf(s.cf(CF_DATA), &from, &to);
                    model.retain(|k, _| !(k >= &from && k < &to));
                }
            }
        }
        s.write(b)
    }

    /// One iterator seeking again and again, forward and back (as GEOSEARCH seeks from range to
    /// range), over committed data and a scope's puts, deletes and deleted ranges, with more of
    /// the scope's writes between seeks: each seek, and the steps after it, read the model. The
    /// runs a walk copied stay across a seek within the same bounds, and are copied again
    /// after a write; the database's keys are hidden by what the runs hold.
    #[test]
    fn an_iterator_seeking_again_reads_the_scope_over_the_database_as_written_between_seeks() -> R {
        let dir = tempfile::tempdir()?;
        let s = open(dir.path())?;
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..60 {
            let mut model = random_committed(&s, &mut rng, 60, &format!("c{round}"))?;
            assert!(s.begin_scope());
            for step in 0..1 + rng.below(4) {
                scope_batch(&s, &mut rng, &mut model, &format!("p{round}.{step}"))?;
            }
            let mut opts = IterOptions::default();
            if rng.below(3) == 0 {
                opts.lower = Some(rng.key());
            }
            if rng.below(3) == 0 {
                opts.upper = Some(rng.key());
            }
            let (lower, upper) = (opts.lower.clone(), opts.upper.clone());
            let mut it = s.iter(CF_DATA, opts);
            for seek in 0..15 {
                if rng.below(3) == 0 {
                    scope_batch(&s, &mut rng, &mut model, &format!("w{round}.{seek}"))?;
                }
                let m = Model {
                    map: &model,
                    lower: lower.clone(),
                    upper: upper.clone(),
                };
                let target = rng.key();
                let mut want = match rng.below(4) {
                    0 | 1 if m.ok(&target) => {
                        it.seek(&target);
                        m.after(Bound::Included(&target))
                    }
                    2 if m.ok(&target) => {
                        it.seek_for_prev(&target);
                        m.before(Bound::Included(&target))
                    }
                    _ => {
                        it.seek_to_first();
                        m.after(Bound::Unbounded)
                    }
                };
                for n in 0..8 {
                    let got = it.key().map(<[u8]>::to_vec);
                    assert_eq!(got, want, "round {round} seek {seek} step {n}");
                    let Some(at) = want.clone() else { break };
                    assert_eq!(it.value(), model.get(&at).map(Vec::as_slice));
                    if rng.below(4) != 0 {
                        it.next();
                        want = m.after(Bound::Excluded(&at));
                    } else {
                        it.prev();
                        want = m.before(Bound::Excluded(&at));
                    }
                }
            }
            it.status()?;
            drop(it);
            s.end_scope(false)?;
        }
        Ok(())
    }

    fn check_walks(
        s: &Storage,
        model: &BTreeMap<Vec<u8>, Vec<u8>>,
        rng: &mut Rng,
        round: u32,
    ) -> R {
        for walk in 0..30 {
            let mut opts = IterOptions::default();
            if rng.below(3) == 0 {
                opts.lower = Some(rng.key());
            }
            if rng.below(3) == 0 {
                opts.upper = Some(rng.key());
            }
            let m = Model {
                map: model,
                lower: opts.lower.clone(),
                upper: opts.upper.clone(),
            };
            let mut it = s.iter(CF_DATA, opts);
            let mut want: Option<Vec<u8>>;
            let start = rng.key();
            let mut trail = String::new();
            match rng.below(3) {
                0 if m.ok(&start) => {
                    it.seek(&start);
                    want = m.after(Bound::Included(&start));
                }
                1 if m.ok(&start) => {
                    it.seek_for_prev(&start);
                    want = m.before(Bound::Included(&start));
                }
                _ => {
                    it.seek_to_first();
                    want = m.after(Bound::Unbounded);
                }
            }
            for _ in 0..12 {
                let got = it.key().map(<[u8]>::to_vec);
                assert_eq!(
                    got, want,
                    "round {round} walk {walk} after {trail}: lower {:?} upper {:?}",
                    m.lower, m.upper
                );
                let Some(at) = want.clone() else { break };
                assert_eq!(it.value(), model.get(&at).map(Vec::as_slice));
                if rng.below(2) == 0 {
                    it.next();
                    trail.push('>');
                    want = m.after(Bound::Excluded(&at));
                } else {
                    it.prev();
                    trail.push('<');
                    want = m.before(Bound::Excluded(&at));
                }
            }
            it.status()?;
        }
        Ok(())
    }

    /// `meta` is iterated slot by slot in prefix mode: an iteration must keep to the seek
    /// target's 3-byte prefix on the scope's side too.
    #[test]
    fn merged_iterator_in_prefix_mode_keeps_to_the_seek_prefix() -> R {
        let dir = tempfile::tempdir()?;
        let s = open(dir.path())?;
        let mut b = crate::storage::new_batch();
        for k in [&b"\x00\x00\x01a"[..], b"\x00\x00\x01c", b"\x00\x00\x02a"] {
            b.put_cf(s.cf(CF_META), k, b"committed");
        }
        s.write(b)?;
        assert!(s.begin_scope());
        let mut b = crate::storage::new_batch();
        b.put_cf(s.cf(CF_META), b"\x00\x00\x01b", b"scope");
        b.delete_cf(s.cf(CF_META), b"\x00\x00\x01c");
        b.put_cf(s.cf(CF_META), b"\x00\x00\x02b", b"scope");
        b.put_cf(s.cf(CF_META), b"\x00\x00\x03a", b"scope");
        s.write(b)?;
        let opts = IterOptions {
            prefix_same_as_start: true,
            ..IterOptions::default()
        };
        let mut it = s.iter(CF_META, opts);
        let mut seen = Vec::new();
        for slot in 1u8..=3 {
            it.seek([0, 0, slot]);
            while it.valid() {
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                if !k.starts_with(&[0, 0, slot]) {
                    break;
                }
                seen.push((k.to_vec(), v.to_vec()));
                it.next();
            }
        }
        drop(it);
        let want: Vec<(Vec<u8>, Vec<u8>)> = [
            (&b"\x00\x00\x01a"[..], &b"committed"[..]),
            (b"\x00\x00\x01b", b"scope"),
            (b"\x00\x00\x02a", b"committed"),
            (b"\x00\x00\x02b", b"scope"),
            (b"\x00\x00\x03a", b"scope"),
        ]
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
        assert_eq!(seen, want);
        s.end_scope(false)?;
        assert_eq!(s.get(CF_META, b"\x00\x00\x01b")?, None);
        assert!(s.get(CF_META, b"\x00\x00\x01c")?.is_some());
        Ok(())
    }

    fn open_write_back(dir: &std::path::Path) -> crate::error::Result<Storage> {
        let opts = StorageOptions {
            write_back: Some(1 << 20),
            ..crate::storage::test_options()
        };
        Storage::open(dir, &opts)
    }

    fn put(s: &Storage, k: &[u8], v: &[u8]) -> crate::error::Result<()> {
        let mut b = crate::storage::new_batch();
        b.put_cf(s.cf(CF_DATA), k, v);
        s.write(b)
    }

    fn delete(s: &Storage, k: &[u8]) -> crate::error::Result<()> {
        let mut b = crate::storage::new_batch();
        b.delete_cf(s.cf(CF_DATA), k);
        s.write(b)
    }

    /// The entry an iterator stands on, copied.
    fn at(it: &super::StorageIter<'_>) -> Option<(Vec<u8>, Vec<u8>)> {
        Some((it.key()?.to_vec(), it.value()?.to_vec()))
    }

    fn pair(k: &[u8], v: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        Some((k.to_vec(), v.to_vec()))
    }

    /// The tier's active layer is read live at each step: a put ahead of an iterator walking
    /// it, made while it walks, is seen; a delete ahead hides its key; a value rewritten ahead
    /// is read as rewritten; a put behind is not walked back to.
    #[test]
    fn an_iterator_sees_writes_to_the_active_layer_made_ahead_of_it_while_it_walks() -> R {
        let dir = tempfile::tempdir()?;
        let s = open_write_back(dir.path())?;
        for k in [&b"b"[..], b"d", b"f", b"h", b"j"] {
            put(&s, k, b"1")?;
        }
        let mut it = s.iter(CF_DATA, IterOptions::default());
        it.seek(b"b");
        assert_eq!(at(&it), pair(b"b", b"1"));
        put(&s, b"c", b"2")?;
        put(&s, b"a", b"2")?;
        it.next();
        assert_eq!(at(&it), pair(b"c", b"2"), "a put made ahead while walking");
        delete(&s, b"d")?;
        put(&s, b"h", b"3")?;
        it.next();
        assert_eq!(
            at(&it),
            pair(b"f", b"1"),
            "a delete made ahead while walking"
        );
        it.next();
        assert_eq!(
            at(&it),
            pair(b"h", b"3"),
            "a value rewritten ahead while walking"
        );
        it.prev();
        it.prev();
        assert_eq!(at(&it), pair(b"c", b"2"));
        it.prev();
        it.prev();
        assert_eq!(
            at(&it),
            pair(b"a", b"2"),
            "turned around, the put made behind"
        );
        it.prev();
        assert_eq!(at(&it), None);
        Ok(())
    }

    /// An iterator keeps the layers it was made over: one made before a checkpoint walks the
    /// layer the checkpoint wrote out (the database side is a snapshot from before it) and
    /// reads every entry once, with its value; writes after the swap go to a new active layer
    /// the iterator does not see.
    #[test]
    fn an_iterator_made_before_a_checkpoint_reads_the_same_after_it() -> R {
        let dir = tempfile::tempdir()?;
        let s = open_write_back(dir.path())?;
        for i in 0..300u32 {
            put(
                &s,
                format!("k{i:03}").as_bytes(),
                format!("v{i}").as_bytes(),
            )?;
        }
        let mut it = s.iter(CF_DATA, IterOptions::default());
        it.seek_to_first();
        let mut seen = Vec::new();
        while seen.len() < 40 {
            seen.extend(at(&it));
            it.next();
        }
        s.checkpoint_tier()?;
        put(&s, b"k100", b"after")?;
        put(&s, b"k999", b"after")?;
        while it.valid() {
            seen.extend(at(&it));
            it.next();
        }
        it.status()?;
        drop(it);
        let want: Vec<(Vec<u8>, Vec<u8>)> = (0..300u32)
            .map(|i| {
                (
                    format!("k{i:03}").into_bytes(),
                    format!("v{i}").into_bytes(),
                )
            })
            .collect();
        assert_eq!(seen, want);
        assert_eq!(s.get(CF_DATA, b"k100")?, Some(b"after".to_vec()));
        Ok(())
    }

    /// In an atomic scope, an iterator sees the scope's own writes made between its steps, as
    /// well as the scope's writes and the tier's layer from before it was made.
    #[test]
    fn an_iterator_in_a_scope_sees_the_scopes_writes_made_between_its_steps() -> R {
        let dir = tempfile::tempdir()?;
        let s = open_write_back(dir.path())?;
        put(&s, b"a", b"tier")?;
        put(&s, b"e", b"tier")?;
        assert!(s.begin_scope());
        put(&s, b"c", b"scope")?;
        let mut it = s.iter(CF_DATA, IterOptions::default());
        it.seek_to_first();
        assert_eq!(at(&it), pair(b"a", b"tier"));
        put(&s, b"b", b"scope")?;
        delete(&s, b"c")?;
        put(&s, b"e", b"scope")?;
        it.next();
        assert_eq!(at(&it), pair(b"b", b"scope"));
        it.next();
        assert_eq!(at(&it), pair(b"e", b"scope"));
        put(&s, b"f", b"scope")?;
        it.next();
        assert_eq!(at(&it), pair(b"f", b"scope"));
        it.next();
        assert_eq!(at(&it), None);
        drop(it);
        s.end_scope(false)?;
        assert_eq!(s.get(CF_DATA, b"b")?, None);
        assert_eq!(s.get(CF_DATA, b"e")?, Some(b"tier".to_vec()));
        Ok(())
    }
}
