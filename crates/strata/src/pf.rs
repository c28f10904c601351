//! HyperLogLog commands on `Db` (PFADD, PFCOUNT, PFMERGE, PFDEBUG): read-modify-writes of string
//! values under the key lock, keeping the TTL, with the algorithm of [`crate::hll`]. An HLL is an
//! ordinary string holding Redis's exact bytes, so GET, SET, STRLEN and APPEND see them.

use std::sync::atomic::Ordering;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::fragment;
use crate::hll::{self, Encoding, HllError};
use crate::meta::{FLAG_RAW_STRING, HEADER_LEN};

/// Whether the metadata record `r` holds a string inline (an HLL is read and edited in place
/// only then).
fn inline_string(r: &[u8]) -> bool {
    fragment::is_inline_string_record(r)
}

impl From<HllError> for Error {
    fn from(e: HllError) -> Error {
        match e {
            HllError::NotHll => Error::NotHll,
            HllError::Corrupt => Error::CorruptHll,
        }
    }
}

/// A PFDEBUG operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HllDebug {
    /// GETREG: the 16384 registers (a sparse HLL is converted to dense first, and stays so).
    GetReg,
    /// DECODE: the sparse opcodes as text.
    Decode,
    /// ENCODING: dense or sparse.
    Encoding,
    /// TODENSE: converts a sparse HLL to dense.
    ToDense,
}

/// What a PFDEBUG operation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HllDebugReply {
    /// GETREG: one byte per register.
    Registers(Vec<u8>),
    /// DECODE: the opcodes (`z:N`, `Z:N`, `v:VALUE,LEN`), or `None` when the HLL is dense.
    Decoded(Option<String>),
    /// ENCODING.
    Encoding(Encoding),
    /// TODENSE: whether it converted.
    ToDense(bool),
}

impl Db {
    /// The size past which a sparse HyperLogLog is converted to dense (`hll-sparse-max-bytes`).
    pub fn hll_sparse_max_bytes(&self) -> u64 {
        self.inner.hll_sparse_max_bytes.load(Ordering::Relaxed)
    }

    /// Changes `hll-sparse-max-bytes` (default 3000).
    pub fn set_hll_sparse_max_bytes(&self, bytes: u64) {
        self.inner
            .hll_sparse_max_bytes
            .store(bytes, Ordering::Relaxed)
    }

    fn sparse_max(&self) -> usize {
        usize::try_from(self.hll_sparse_max_bytes()).unwrap_or(usize::MAX)
    }

    /// PFADD: adds `elements` to the HyperLogLog at `key`, creating it (even with no elements).
    /// Whether it was created or a register changed (Redis answers 1 and signals the write only
    /// then). A string that is not an HLL fails with [`Error::NotHll`], a corrupted one with
    /// [`Error::CorruptHll`] — after keeping what the elements before the failing one changed,
    /// as Redis keeps them in memory.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// assert!(db.pfadd(b"visitors", &[b"ann", b"bob", b"ann"])?);
    /// assert!(!db.pfadd(b"visitors", &[b"bob"])?);
    /// assert_eq!(db.pfcount(&[b"visitors"])?, 2);
    /// assert_eq!(&db.get(b"visitors")?.unwrap()[..4], b"HYLL");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pfadd(&self, key: &[u8], elements: &[&[u8]]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        // One element per call is the common case: its pattern goes on the stack.
        let mut few = [(0usize, 0u8); 8];
        let many: Vec<(usize, u8)>;
        let patterns: &[(usize, u8)] = if elements.len() <= few.len() {
            for (slot, e) in few.iter_mut().zip(elements) {
                *slot = hll::pattern(e);
            }
            &few[..elements.len()]
        } else {
            many = elements.iter().map(|e| hll::pattern(e)).collect();
            &many
        };
        // A dense HLL (12 KB) is the common case, and most additions to it raise no register:
        // those are answered from the record where it lies. One that raises a register copies
        // the record there (one lookup), edits the registers in place and stores the record as
        // it is, instead of decoding and re-encoding the value. Anything else (a sparse HLL, a
        // missing key, a value that is not an HLL) goes the general way below.
        let dense = self.with_live_record(key, |r| {
            if !inline_string(r) || hll::validate(&r[HEADER_LEN..]) != Ok(Encoding::Dense) {
                None
            } else if hll::dense_unchanged_by(&r[HEADER_LEN..], patterns) {
                Some(None)
            } else {
                Some(Some(r.to_vec()))
            }
        })?;
        match dense.flatten() {
            Some(None) => return Ok(false),
            Some(Some(mut record)) => {
                let value = &mut record[HEADER_LEN..];
                hll::dense_add(value, patterns);
                hll::invalidate_cache(value);
                record[1] |= FLAG_RAW_STRING;
                let mut batch = crate::storage::new_batch();
                self.put_meta_record(&mut batch, key, &record);
                drop(record);
                self.write(batch)?;
                return Ok(true);
            }
            None => {}
        }
        let (mut v, expire, created) = match self.live_string_whole(key)? {
            Some(m) => {
                hll::validate(&m.body)?;
                (m.body, m.expire_ms, false)
            }
            None => (hll::new_sparse(), 0, true),
        };
        let max = self.sparse_max();
        let mut updated = created;
        for e in elements {
            match hll::add(&mut v, e, max) {
                Ok(changed) => updated |= changed,
                Err(e) => {
                    if updated {
                        self.write_string_flagged(key, &v, FLAG_RAW_STRING, expire)?;
                    }
                    return Err(e.into());
                }
            }
        }
        if updated {
            hll::invalidate_cache(&mut v);
            self.write_string_flagged(key, &v, FLAG_RAW_STRING, expire)?;
        }
        Ok(updated)
    }

    /// PFCOUNT: the estimated number of distinct elements added to the HyperLogLog at `key`, or
    /// of the union of several without changing them. A missing key counts as empty. Counting
    /// one key stores the cardinality in its cache, as Redis does (see
    /// [`Db::pfcount_refreshing`]).
    pub fn pfcount(&self, keys: &[&[u8]]) -> Result<u64> {
        Ok(self.pfcount_refreshing(keys)?.0)
    }

    /// [`Db::pfcount`], and whether it wrote the refreshed cache of a single key (Redis then
    /// signals the key modified). Nothing is written on a directory that follows a leader
    /// ([`Db::set_follower`]) or is open read-only.
    pub fn pfcount_refreshing(&self, keys: &[&[u8]]) -> Result<(u64, bool)> {
        if let [key] = keys {
            return Ok(self.pfcount_one(key, true)?.unwrap_or_default());
        }
        let mut max = [0u8; hll::REGISTERS];
        for key in keys {
            let found = self.live_string_whole(key)?;
            self.count_lookup(found.is_some());
            if let Some(m) = found {
                hll::validate(&m.body)?;
                hll::merge_into(&mut max, &m.body)?;
            }
        }
        Ok((hll::count_registers(&max), false))
    }

    /// PFCOUNT of the one key `key` when that writes nothing: the cached cardinality when it is
    /// valid (read where the record lies), 0 for a missing key, and the count of an HLL whose
    /// cache is stale on a directory that follows a leader. `None` when the count must be
    /// stored in the cache, which [`Db::pfcount_refreshing`] does, locking the key: a caller
    /// that holds the key shared (so that it cannot change meanwhile) calls this first, and
    /// holds it exclusively for that only when it must.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// db.pfadd(b"visitors", &[b"ann", b"bob"])?;
    /// assert_eq!(db.pfcount_without_writing(b"visitors")?, None);
    /// assert_eq!(db.pfcount_refreshing(&[b"visitors"])?, (2, true));
    /// assert_eq!(db.pfcount_without_writing(b"visitors")?, Some(2));
    /// assert_eq!(db.pfcount_without_writing(b"nobody")?, Some(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pfcount_without_writing(&self, key: &[u8]) -> Result<Option<u64>> {
        Ok(self.pfcount_one(key, false)?.map(|(card, _)| card))
    }

    /// PFCOUNT of one key, and whether it stored the cache; with `write` false, `None` instead
    /// of storing it.
    fn pfcount_one(&self, key: &[u8], write: bool) -> Result<Option<(u64, bool)>> {
        // A valid cached cardinality is read where the record lies, without copying the HLL
        // and without a lock: one read of one record sees it whole.
        let cached = self.with_live_record(key, |r| {
            if !inline_string(r) {
                return None;
            }
            let v = &r[HEADER_LEN..];
            hll::validate(v).ok().and_then(|_| hll::cached(v))
        })?;
        if let Some(Some(card)) = cached {
            self.count_lookup(true);
            return Ok(Some((card, false)));
        }
        let _g = write.then(|| self.inner.locks.lock_one(self.index, key));
        let found = self.live_string_whole(key)?;
        let Some(m) = found else {
            self.count_lookup(false);
            return Ok(Some((0, false)));
        };
        let cached = hll::validate(&m.body).map(|_| hll::cached(&m.body));
        let follower = self.is_follower();
        if cached == Ok(None) && !write && !follower {
            // Counted by the call that stores the cache.
            return Ok(None);
        }
        self.count_lookup(true);
        if let Some(card) = cached? {
            return Ok(Some((card, false)));
        }
        let card = hll::count(&m.body)?;
        if follower {
            return Ok(Some((card, false)));
        }
        let mut v = m.body;
        hll::set_cached(&mut v, card);
        match self.write_string_flagged(key, &v, FLAG_RAW_STRING, m.expire_ms) {
            Ok(()) => Ok(Some((card, true))),
            Err(Error::ReadOnly) => Ok(Some((card, false))),
            Err(e) => Err(e),
        }
    }

    /// PFMERGE: stores at `dest` the union of `dest` and `sources` (missing keys count as
    /// empty), as Redis builds it: the target stays sparse unless an input is dense or the
    /// sparse form outgrows `hll-sparse-max-bytes`; its TTL is kept.
    pub fn pfmerge(&self, dest: &[u8], sources: &[&[u8]]) -> Result<()> {
        let all = || std::iter::once(dest).chain(sources.iter().copied());
        let _g = self.inner.locks.lock(all().map(|k| (self.index, k)));
        let mut max = [0u8; hll::REGISTERS];
        let mut use_dense = false;
        let mut target = None;
        for (j, key) in all().enumerate() {
            let Some(m) = self.live_string_whole(key)? else {
                continue;
            };
            if hll::validate(&m.body)? == Encoding::Dense {
                use_dense = true;
            }
            hll::merge_into(&mut max, &m.body)?;
            if j == 0 {
                target = Some(m);
            }
        }
        let (mut v, expire) = match target {
            Some(m) => (m.body, m.expire_ms),
            None => (hll::new_sparse(), 0),
        };
        if use_dense {
            hll::to_dense(&mut v)?;
        }
        hll::raise_all(&mut v, &max, self.sparse_max());
        hll::invalidate_cache(&mut v);
        self.write_string_flagged(dest, &v, FLAG_RAW_STRING, expire)
    }

    /// PFDEBUG: `None` when `key` does not exist. GETREG and TODENSE of a sparse HLL store it
    /// dense (its TTL kept).
    pub fn pfdebug(&self, key: &[u8], op: HllDebug) -> Result<Option<HllDebugReply>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(m) = self.live_string_whole(key)? else {
            return Ok(None);
        };
        let encoding = hll::validate(&m.body)?;
        let mut v = m.body;
        Ok(Some(match op {
            HllDebug::Encoding => HllDebugReply::Encoding(encoding),
            HllDebug::Decode => HllDebugReply::Decoded(
                (encoding == Encoding::Sparse).then(|| hll::decode_sparse(&v)),
            ),
            HllDebug::GetReg | HllDebug::ToDense => {
                let convert = encoding == Encoding::Sparse;
                if convert {
                    hll::to_dense(&mut v)?;
                    self.write_string_flagged(key, &v, FLAG_RAW_STRING, m.expire_ms)?;
                }
                if op == HllDebug::ToDense {
                    HllDebugReply::ToDense(convert)
                } else {
                    HllDebugReply::Registers(hll::registers(&v)?)
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::hll;
    use crate::{Db, Error, HllDebug, HllDebugReply, SetOptions};

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        (dir, db)
    }

    fn elements(range: std::ops::Range<u32>) -> Vec<Vec<u8>> {
        range.map(|i| format!("e{i}").into_bytes()).collect()
    }

    fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
        v.iter().map(|e| &e[..]).collect()
    }

    #[test]
    fn pfadd_creates_counts_and_caches() {
        let (_d, db) = db();
        assert!(db.pfadd(b"h", &[]).unwrap());
        assert!(!db.pfadd(b"h", &[]).unwrap());
        let v = db.get(b"h").unwrap().unwrap();
        assert_eq!(hll::cached(&v), None, "PFADD leaves the cache invalid");
        let e = elements(0..100);
        assert!(db.pfadd(b"h", &refs(&e)).unwrap());
        assert_eq!(db.pfcount_refreshing(&[b"h"]).unwrap(), (100, true));
        assert_eq!(db.pfcount_refreshing(&[b"h"]).unwrap(), (100, false));
        let v = db.get(b"h").unwrap().unwrap();
        assert_eq!(hll::cached(&v), Some(100));
        assert_eq!(db.pfcount(&[b"missing"]).unwrap(), 0);
    }

    #[test]
    fn pfcount_without_writing_leaves_a_stale_cache_to_the_writer() {
        let (_d, db) = db();
        db.pfadd(b"h", &[b"a", b"b"]).unwrap();
        let stale = db.get(b"h").unwrap();
        assert_eq!(db.pfcount_without_writing(b"h").unwrap(), None);
        assert_eq!(db.get(b"h").unwrap(), stale);
        db.set_follower(true);
        assert_eq!(db.pfcount_without_writing(b"h").unwrap(), Some(2));
        assert_eq!(db.get(b"h").unwrap(), stale);
        db.set_follower(false);
        assert_eq!(db.pfcount_refreshing(&[b"h"]).unwrap(), (2, true));
        assert_eq!(db.pfcount_without_writing(b"h").unwrap(), Some(2));
        db.set(b"s", b"not an hll", SetOptions::default()).unwrap();
        assert_eq!(db.pfcount_without_writing(b"s"), Err(Error::NotHll));
        db.rpush(b"l", &[b"x"]).unwrap();
        assert_eq!(db.pfcount_without_writing(b"l"), Err(Error::WrongType));
    }

    #[test]
    fn ttl_is_kept_and_types_are_checked() {
        let (_d, db) = db();
        let at = crate::now_ms() + 100_000;
        db.pfadd(b"h", &[b"a"]).unwrap();
        db.expire_at(b"h", at as i64, &[]).unwrap();
        db.pfadd(b"h", &[b"b", b"c"]).unwrap();
        db.pfcount(&[b"h"]).unwrap();
        db.pfmerge(b"h", &[b"other"]).unwrap();
        assert_eq!(db.ttl(b"h").unwrap(), crate::Ttl::ExpiresAt(at));
        db.set(b"s", b"not an hll", SetOptions::default()).unwrap();
        assert_eq!(db.pfadd(b"s", &[b"a"]), Err(Error::NotHll));
        assert_eq!(db.pfcount(&[b"s", b"h"]), Err(Error::NotHll));
        db.rpush(b"l", &[b"x"]).unwrap();
        assert_eq!(db.pfcount(&[b"l"]), Err(Error::WrongType));
        assert_eq!(db.pfmerge(b"d", &[b"l"]), Err(Error::WrongType));
    }

    #[test]
    fn pfmerge_unions_and_pfcount_of_several_keys_writes_nothing() {
        let (_d, db) = db();
        let a = elements(0..2000);
        let b = elements(1000..1500);
        db.pfadd(b"a", &refs(&a)).unwrap();
        db.pfadd(b"b", &refs(&b)).unwrap();
        let before = db.get(b"b").unwrap();
        let union = db.pfcount(&[b"a", b"b", b"nope"]).unwrap();
        assert_eq!(db.get(b"b").unwrap(), before);
        db.pfmerge(b"m", &[b"a", b"b"]).unwrap();
        assert_eq!(db.pfcount(&[b"m"]).unwrap(), union);
        assert_eq!(
            db.pfdebug(b"m", HllDebug::Encoding).unwrap(),
            Some(HllDebugReply::Encoding(hll::Encoding::Dense))
        );
        // Merging sparse inputs only keeps the target sparse.
        db.pfmerge(b"s", &[b"b"]).unwrap();
        assert_eq!(
            db.pfdebug(b"s", HllDebug::Encoding).unwrap(),
            Some(HllDebugReply::Encoding(hll::Encoding::Sparse))
        );
    }

    #[test]
    fn pfdebug_converts_and_reports() {
        let (_d, db) = db();
        assert_eq!(db.pfdebug(b"h", HllDebug::ToDense).unwrap(), None);
        db.pfadd(b"h", &[b"a"]).unwrap();
        assert_eq!(
            db.pfdebug(b"h", HllDebug::Decode).unwrap(),
            Some(HllDebugReply::Decoded(Some("Z:12711 v:2,1 Z:3672".into())))
        );
        assert_eq!(
            db.pfdebug(b"h", HllDebug::ToDense).unwrap(),
            Some(HllDebugReply::ToDense(true))
        );
        assert_eq!(db.get(b"h").unwrap().unwrap().len(), hll::DENSE_LEN);
        assert_eq!(
            db.pfdebug(b"h", HllDebug::ToDense).unwrap(),
            Some(HllDebugReply::ToDense(false))
        );
        assert_eq!(
            db.pfdebug(b"h", HllDebug::Decode).unwrap(),
            Some(HllDebugReply::Decoded(None))
        );
        let Some(HllDebugReply::Registers(r)) = db.pfdebug(b"h", HllDebug::GetReg).unwrap() else {
            panic!("no registers");
        };
        assert_eq!(r.len(), hll::REGISTERS);
        assert_eq!(r[12711], 2);
        assert_eq!(r.iter().filter(|&&x| x != 0).count(), 1);
    }

    #[test]
    fn sparse_limit_is_configurable() {
        let (_d, db) = db();
        db.set_hll_sparse_max_bytes(30);
        db.pfadd(b"h", &refs(&elements(0..10))).unwrap();
        assert_eq!(db.get(b"h").unwrap().unwrap().len(), hll::DENSE_LEN);
        db.set_hll_sparse_max_bytes(3000);
        db.pfadd(b"k", &refs(&elements(0..10))).unwrap();
        assert!(db.get(b"k").unwrap().unwrap().len() < 100);
    }

    #[test]
    fn a_follower_does_not_write_the_cache() {
        let (_d, db) = db();
        db.pfadd(b"h", &[b"a", b"b"]).unwrap();
        db.set_follower(true);
        assert_eq!(db.pfcount_refreshing(&[b"h"]).unwrap(), (2, false));
        assert_eq!(hll::cached(&db.get(b"h").unwrap().unwrap()), None);
        db.set_follower(false);
        assert_eq!(db.pfcount_refreshing(&[b"h"]).unwrap(), (2, true));
    }

    #[test]
    fn corrupted_values_are_refused() {
        let (_d, db) = db();
        let mut v = hll::new_sparse();
        v.truncate(17);
        v[15] |= 0x80;
        db.set(b"c", &v, SetOptions::default()).unwrap();
        assert_eq!(db.pfcount(&[b"c"]), Err(Error::CorruptHll));
        assert_eq!(db.pfcount(&[b"c", b"x"]), Err(Error::CorruptHll));
        assert_eq!(db.pfmerge(b"d", &[b"c"]), Err(Error::CorruptHll));
        assert_eq!(db.pfdebug(b"c", HllDebug::ToDense), Err(Error::CorruptHll));
        assert!(!db.exists(b"d").unwrap());
    }

    #[test]
    fn dense_pfadd_of_few_or_many_elements_stores_what_adding_one_by_one_gives() {
        let (_d, db) = db();
        let first = elements(0..3000);
        assert!(db.pfadd(b"h", &refs(&first)).unwrap());
        assert_eq!(
            db.pfdebug(b"h", HllDebug::Encoding).unwrap(),
            Some(HllDebugReply::Encoding(hll::Encoding::Dense))
        );
        let mut want = db.get(b"h").unwrap().unwrap();
        // 1 and 5 elements take the patterns on the stack, 40 on the heap; the last batch is
        // all elements already counted.
        for batch in [3000..3001, 3001..3006, 3006..3046, 0..40] {
            let e = elements(batch);
            let mut changed = false;
            for x in &e {
                changed |= hll::add(&mut want, x, 3000).unwrap();
            }
            if changed {
                hll::invalidate_cache(&mut want);
            }
            assert_eq!(db.pfadd(b"h", &refs(&e)).unwrap(), changed);
            assert_eq!(db.get(b"h").unwrap().unwrap(), want);
        }
    }
}
