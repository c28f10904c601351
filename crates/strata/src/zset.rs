//! Sorted sets: ZADD, ZRANGE and the rest of Redis's sorted-set family on `Db`.
//!
//! A sorted set is a collection (see `collection.rs`) with two sub-keys per member, written together
//! in one batch: in the `data` family `member → score` (8-byte big-endian IEEE-754 bits) for point
//! lookups (ZSCORE, ZADD's old-score check), and in the `zscore` family `[order-preserving score
//! 8][member]` with an empty value, so RocksDB's key order is Redis's `(score, member)` order and
//! ranges by score or rank stream from an iterator. Lexicographic ranges walk the `data` family,
//! which is in member order (equal to Redis's order when all scores are equal, the case Redis
//! documents). ZCARD is the metadata's length. Every write holds the key's lock and commits one
//! batch, so each command is atomic. This module knows nothing of RESP.

use std::collections::{HashMap, HashSet};

use rocksdb::WriteBatch;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::keys::{decode_score, encode_score};
use crate::meta::KeyType;
use crate::storage::{CF_DATA, CF_ZSCORE};

/// A member and its score.
pub type ScoredMember = (Vec<u8>, f64);

/// ZADD's NX / XX.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZAddCondition {
    /// Add new members and update existing ones.
    #[default]
    Always,
    /// NX: only add new members.
    IfAbsent,
    /// XX: only update existing members.
    IfPresent,
}

/// ZADD's GT / LT: when an existing member's score may change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZAddCompare {
    /// Any new score.
    #[default]
    Any,
    /// GT: only a greater score.
    Greater,
    /// LT: only a lower score.
    Less,
}

/// Options of [`Db::zadd`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZAddOptions {
    /// NX / XX.
    pub condition: ZAddCondition,
    /// GT / LT.
    pub compare: ZAddCompare,
    /// INCR: the score is an increment (one pair only; the new score is returned).
    pub incr: bool,
}

/// What [`Db::zadd`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ZAddOutcome {
    /// Members added.
    pub added: u64,
    /// Existing members whose score changed.
    pub updated: u64,
    /// With INCR: the member's new score, `None` when NX/XX/GT/LT prevented the change.
    pub score: Option<f64>,
}

/// A score interval with open or closed ends (`(1.5` is exclusive in Redis syntax).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    /// Lower end.
    pub min: f64,
    /// Whether `min` itself is excluded.
    pub min_exclusive: bool,
    /// Upper end.
    pub max: f64,
    /// Whether `max` itself is excluded.
    pub max_exclusive: bool,
}

impl ScoreRange {
    /// `[min, max]`.
    pub fn inclusive(min: f64, max: f64) -> ScoreRange {
        ScoreRange {
            min,
            min_exclusive: false,
            max,
            max_exclusive: false,
        }
    }

    /// `-inf .. +inf`.
    pub fn all() -> ScoreRange {
        ScoreRange::inclusive(f64::NEG_INFINITY, f64::INFINITY)
    }

    /// Whether `v` is at or above the lower end.
    pub fn gte_min(&self, v: f64) -> bool {
        if self.min_exclusive {
            v > self.min
        } else {
            v >= self.min
        }
    }

    /// Whether `v` is at or below the upper end.
    pub fn lte_max(&self, v: f64) -> bool {
        if self.max_exclusive {
            v < self.max
        } else {
            v <= self.max
        }
    }

    /// Whether `v` is inside the range.
    pub fn contains(&self, v: f64) -> bool {
        self.gte_min(v) && self.lte_max(v)
    }

    /// Whether no score can be inside the range.
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.min_exclusive || self.max_exclusive))
    }
}

/// One end of a lexicographic range (`-`, `+`, `[member`, `(member` in Redis syntax).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    NegInf,
    /// `+`: above every member.
    PosInf,
    /// `[m`: m included.
    Inclusive(Vec<u8>),
    /// `(m`: m excluded.
    Exclusive(Vec<u8>),
}

/// A lexicographic member interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexRange {
    /// Lower end.
    pub min: LexBound,
    /// Upper end.
    pub max: LexBound,
}

impl LexRange {
    /// `-` .. `+`.
    pub fn all() -> LexRange {
        LexRange {
            min: LexBound::NegInf,
            max: LexBound::PosInf,
        }
    }

    /// Whether `m` is at or above the lower end.
    pub fn gte_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Inclusive(b) => m >= b.as_slice(),
            LexBound::Exclusive(b) => m > b.as_slice(),
        }
    }

    /// Whether `m` is at or below the upper end.
    pub fn lte_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::PosInf => true,
            LexBound::NegInf => false,
            LexBound::Inclusive(b) => m <= b.as_slice(),
            LexBound::Exclusive(b) => m < b.as_slice(),
        }
    }

    /// Whether `m` is inside the range.
    pub fn contains(&self, m: &[u8]) -> bool {
        self.gte_min(m) && self.lte_max(m)
    }
}

/// What ZRANGE selects by.
#[derive(Clone, Debug, PartialEq)]
pub enum ZRangeBy {
    /// Ranks `start..=stop` (negative counts from the end), in the direction of the range.
    Rank(i64, i64),
    /// Scores within a range (BYSCORE).
    Score(ScoreRange),
    /// Members within a lexicographic range (BYLEX).
    Lex(LexRange),
}

/// A ZRANGE request.
#[derive(Clone, Debug, PartialEq)]
pub struct ZRangeSpec {
    /// Rank, score or lex.
    pub by: ZRangeBy,
    /// REV: from the highest score down (a score/lex range is still given as min, max).
    pub rev: bool,
    /// LIMIT offset count (score and lex ranges only): a negative offset selects nothing, a
    /// negative count means all.
    pub limit: Option<(i64, i64)>,
}

impl ZRangeSpec {
    /// Ranks `start..=stop` in ascending order.
    pub fn rank(start: i64, stop: i64) -> ZRangeSpec {
        ZRangeSpec {
            by: ZRangeBy::Rank(start, stop),
            rev: false,
            limit: None,
        }
    }
}

/// ZUNION / ZINTER / ZDIFF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    /// Members in any input.
    Union,
    /// Members in every input.
    Inter,
    /// Members of the first input in no other.
    Diff,
}

/// AGGREGATE: how scores of a member in several inputs combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Aggregate {
    /// Sum (`+inf + -inf` counts as 0, as in Redis).
    #[default]
    Sum,
    /// Smallest.
    Min,
    /// Largest.
    Max,
}

/// One page of ZSCAN.
#[derive(Clone, Debug, PartialEq)]
pub struct ZScanPage {
    /// The cursor to pass next; 0 when the iteration is complete.
    pub cursor: u64,
    /// Members and scores of this page.
    pub items: Vec<ScoredMember>,
    /// Whether the sorted set is small enough that Redis would keep it in its compact (listpack)
    /// encoding; Redis then returns everything in one page and prints integral scores as integers.
    pub compact: bool,
}

/// The largest negative ZRANDMEMBER count served (the reply is built in memory; Redis has no
/// limit and runs out of memory instead).
pub(crate) const MAX_RANDOM_REPEATS: u64 = 1 << 27;

/// Redis's `zset-max-listpack-entries` / `zset-max-listpack-value` defaults.
pub(crate) const LISTPACK_MAX_ENTRIES: u64 = 128;
pub(crate) const LISTPACK_MAX_VALUE: usize = 64;

/// The `data` value of a score: its IEEE-754 bits, big-endian.
pub(crate) fn score_bytes(score: f64) -> [u8; 8] {
    score.to_bits().to_be_bytes()
}

pub(crate) fn score_from_value(v: &[u8]) -> Result<f64> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| Error::Corrupt(format!("zset score of {} bytes", v.len())))?;
    Ok(f64::from_bits(u64::from_be_bytes(b)))
}

/// The `zscore` sub-key of a member: `[order-preserving score][member]`.
pub(crate) fn zscore_sub(score: f64, member: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + member.len());
    out.extend_from_slice(&encode_score(score));
    out.extend_from_slice(member);
    out
}

/// Splits a `zscore` sub-key into `(score, member)`.
pub(crate) fn split_zscore_sub(sub: &[u8]) -> Option<(f64, &[u8])> {
    if sub.len() < 8 {
        return None;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&sub[..8]);
    Some((decode_score(b), &sub[8..]))
}

/// The 8 bytes following an encoded score (the first possible key of a greater score).
fn score_successor(score: f64) -> [u8; 8] {
    let v = u64::from_be_bytes(encode_score(score));
    v.saturating_add(1).to_be_bytes()
}

/// Scores are stored without the sign of zero (Redis's compact encoding prints `-0` as `0`).
pub(crate) fn normalize(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// A small non-cryptographic random generator (xorshift64*), seeded per call from the process's
/// hash randomness and the clock.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new() -> Rng {
        use std::collections::hash_map::RandomState;
        use std::hash::{BuildHasher, Hasher};
        use std::sync::atomic::{AtomicU64, Ordering};
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let mut h = RandomState::new().build_hasher();
        h.write_u64(crate::db::now_ms());
        h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
        Rng(h.finish() | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// Normalizes Redis rank arguments against a length: `Some((start, end))` inclusive, or `None`
/// for an empty range.
pub(crate) fn normalize_rank(start: i64, stop: i64, len: u64) -> Option<(u64, u64)> {
    let len = len as i64;
    let mut start = if start < 0 {
        len.saturating_add(start)
    } else {
        start
    };
    let mut end = if stop < 0 {
        len.saturating_add(stop)
    } else {
        stop
    };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as u64, end as u64))
}

/// Pending changes of one command to one sorted set, committed as one batch.
struct ZWriter<'a> {
    db: &'a Db,
    key: &'a [u8],
    c: CollectionMeta,
    batch: WriteBatch,
    /// Members changed by this command so far (None = removed), so later steps of the same
    /// command see earlier ones.
    pending: HashMap<Vec<u8>, Option<f64>>,
    dirty: bool,
}

impl<'a> ZWriter<'a> {
    fn new(db: &'a Db, key: &'a [u8], c: CollectionMeta) -> ZWriter<'a> {
        ZWriter {
            db,
            key,
            c,
            batch: crate::storage::new_batch(),
            pending: HashMap::new(),
            dirty: false,
        }
    }

    fn score(&self, member: &[u8]) -> Result<Option<f64>> {
        if let Some(p) = self.pending.get(member) {
            return Ok(*p);
        }
        if self.c.len == 0 {
            return Ok(None);
        }
        match self.db.get_sub(CF_DATA, self.key, &self.c, member)? {
            Some(v) => Ok(Some(score_from_value(&v)?)),
            None => Ok(None),
        }
    }

    /// Sets `member`'s score; `old` is its current score (None if absent).
    fn put(&mut self, member: &[u8], old: Option<f64>, score: f64) {
        let s = self.db.storage();
        let score = normalize(score);
        if let Some(old) = old {
            self.batch.delete_cf(
                s.cf(CF_ZSCORE),
                self.db.sub_key(self.key, &self.c, &zscore_sub(old, member)),
            );
        } else {
            self.c.len += 1;
        }
        self.batch.put_cf(
            s.cf(CF_DATA),
            self.db.sub_key(self.key, &self.c, member),
            score_bytes(score),
        );
        self.batch.put_cf(
            s.cf(CF_ZSCORE),
            self.db
                .sub_key(self.key, &self.c, &zscore_sub(score, member)),
            [],
        );
        self.pending.insert(member.to_vec(), Some(score));
        self.dirty = true;
    }

    fn remove(&mut self, member: &[u8], score: f64) {
        let s = self.db.storage();
        self.batch
            .delete_cf(s.cf(CF_DATA), self.db.sub_key(self.key, &self.c, member));
        self.batch.delete_cf(
            s.cf(CF_ZSCORE),
            self.db
                .sub_key(self.key, &self.c, &zscore_sub(score, member)),
        );
        self.c.len = self.c.len.saturating_sub(1);
        self.pending.insert(member.to_vec(), None);
        self.dirty = true;
    }

    fn commit(mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        self.db.put_collection(&mut self.batch, self.key, &self.c);
        self.db.write(self.batch)
    }
}

/// One input of ZUNION/ZINTER/ZDIFF: a sorted set, or a set whose members score 1.
struct Source {
    key: Vec<u8>,
    meta: Option<CollectionMeta>,
    is_set: bool,
    weight: f64,
}

impl Source {
    fn len(&self) -> u64 {
        self.meta.as_ref().map_or(0, |m| m.len)
    }
}

impl Db {
    /// ZADD: adds members or updates their scores, as Redis's ZADD with NX/XX/GT/LT/INCR.
    /// Pairs are applied in order. With `incr`, the single pair's score is an increment and the
    /// resulting score is returned; a NaN result fails with [`Error::NanOrInfinity`] and changes
    /// nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{ZAddOptions, ZRangeSpec};
    /// let db = strata::Db::open(dir.path())?;
    /// let out = db.zadd(b"board", &[(10.0, &b"ann"[..]), (7.5, &b"bob"[..])], ZAddOptions::default())?;
    /// assert_eq!(out.added, 2);
    /// assert_eq!(db.zscore(b"board", b"bob")?, Some(7.5));
    /// let top = db.zrange(b"board", &ZRangeSpec::rank(0, -1))?;
    /// assert_eq!(top, vec![(b"bob".to_vec(), 7.5), (b"ann".to_vec(), 10.0)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn zadd(
        &self,
        key: &[u8],
        pairs: &[(f64, &[u8])],
        opts: ZAddOptions,
    ) -> Result<ZAddOutcome> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let existing = self.load_collection(key, KeyType::ZSet)?;
        let mut out = ZAddOutcome::default();
        if existing.is_none() && opts.condition == ZAddCondition::IfPresent {
            return Ok(out);
        }
        let c = match existing {
            Some(c) => c,
            None => self.load_or_new_collection(key, KeyType::ZSet)?,
        };
        let mut w = ZWriter::new(self, key, c);
        let mut processed = false;
        let mut last = 0.0;
        for &(score, member) in pairs {
            let old = w.score(member)?;
            match old {
                Some(cur) => {
                    if opts.condition == ZAddCondition::IfAbsent {
                        continue;
                    }
                    let new = if opts.incr { cur + score } else { score };
                    if new.is_nan() {
                        return Err(Error::NanOrInfinity);
                    }
                    let blocked = match opts.compare {
                        ZAddCompare::Any => false,
                        ZAddCompare::Greater => new <= cur,
                        ZAddCompare::Less => new >= cur,
                    };
                    if blocked {
                        continue;
                    }
                    processed = true;
                    last = new;
                    if new != cur {
                        w.put(member, Some(cur), new);
                        out.updated += 1;
                    }
                }
                None => {
                    if opts.condition == ZAddCondition::IfPresent {
                        continue;
                    }
                    processed = true;
                    last = score;
                    w.put(member, None, score);
                    out.added += 1;
                }
            }
        }
        if opts.incr && processed {
            // The reply carries the computed score (Redis answers `-0` for an increment of -0 on
            // a new member, though it stores 0).
            out.score = Some(last);
        }
        w.commit()?;
        Ok(out)
    }

    /// ZINCRBY: adds `increment` to `member`'s score (a missing member starts at 0) and returns the
    /// new score; [`Error::NanOrInfinity`] if the result would be NaN (`+inf` plus `-inf`).
    pub fn zincrby(&self, key: &[u8], increment: f64, member: &[u8]) -> Result<f64> {
        let out = self.zadd(
            key,
            &[(increment, member)],
            ZAddOptions {
                incr: true,
                ..Default::default()
            },
        )?;
        Ok(out.score.unwrap_or(increment))
    }

    /// ZREM: removes members; returns how many existed. The key goes away with its last member.
    pub fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(0);
        };
        let mut w = ZWriter::new(self, key, c);
        let mut removed = 0;
        for m in members {
            if let Some(score) = w.score(m)? {
                w.remove(m, score);
                removed += 1;
            }
        }
        w.commit()?;
        Ok(removed)
    }

    /// Streams the members of the sorted set at `key` with their scores, in Redis's order (by
    /// score, then member), one member in memory at a time. Nothing if the key is missing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// db.zadd(b"z", &[(2.0, b"b".as_slice()), (1.0, b"a".as_slice())], Default::default())?;
    /// let mut seen = Vec::new();
    /// db.zset_each(b"z", |m, s| seen.push((m.to_vec(), s)))?;
    /// assert_eq!(seen, vec![(b"a".to_vec(), 1.0), (b"b".to_vec(), 2.0)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn zset_each(&self, key: &[u8], f: impl FnMut(&[u8], f64)) -> Result<()> {
        self.zset_walk(key, false, f)
    }

    /// Like [`Db::zset_each`], from the highest score down (as Redis saves a sorted set).
    pub fn zset_each_rev(&self, key: &[u8], f: impl FnMut(&[u8], f64)) -> Result<()> {
        self.zset_walk(key, true, f)
    }

    /// Every member with its score in score order (`rev`: highest first).
    fn zset_walk(&self, key: &[u8], rev: bool, mut f: impl FnMut(&[u8], f64)) -> Result<()> {
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(());
        };
        let mut bad = false;
        let visit = |sub: &[u8], _: &[u8]| match split_zscore_sub(sub) {
            Some((score, member)) => {
                f(member, score);
                true
            }
            None => {
                bad = true;
                false
            }
        };
        self.walk_sub(CF_ZSCORE, key, &c, None, rev, visit)?;
        if bad {
            return Err(Error::Corrupt(
                "zset score entry shorter than 8 bytes".into(),
            ));
        }
        Ok(())
    }

    /// ZCARD: the number of members, O(1).
    pub fn zcard(&self, key: &[u8]) -> Result<u64> {
        Ok(self
            .load_collection(key, KeyType::ZSet)?
            .map_or(0, |c| c.len))
    }

    /// ZSCORE: a member's score.
    pub fn zscore(&self, key: &[u8], member: &[u8]) -> Result<Option<f64>> {
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(None);
        };
        match self.get_sub(CF_DATA, key, &c, member)? {
            Some(v) => Ok(Some(score_from_value(&v)?)),
            None => Ok(None),
        }
    }

    /// ZMSCORE: the scores of several members (None for missing ones or a missing key).
    pub fn zmscore(&self, key: &[u8], members: &[&[u8]]) -> Result<Vec<Option<f64>>> {
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(vec![None; members.len()]);
        };
        let s = self.storage();
        let raw: Vec<Vec<u8>> = members.iter().map(|m| self.sub_key(key, &c, m)).collect();
        let mut out = Vec::with_capacity(members.len());
        for r in s.multi_get(CF_DATA, &raw)? {
            out.push(match r {
                Some(v) => Some(score_from_value(&v)?),
                None => None,
            });
        }
        Ok(out)
    }

    /// ZRANK / ZREVRANK: a member's 0-based position in ascending (or, with `rev`, descending)
    /// order. Counts members by iteration: O(rank) (see docs/differences.md).
    pub fn zrank(&self, key: &[u8], member: &[u8], rev: bool) -> Result<Option<u64>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(None);
        };
        let Some(v) = self.get_sub(CF_DATA, key, &c, member)? else {
            return Ok(None);
        };
        let target = zscore_sub(score_from_value(&v)?, member);
        let mut rank = 0u64;
        self.for_each_sub(CF_ZSCORE, key, &c, None, |sub, _| {
            if sub >= target.as_slice() {
                return false;
            }
            rank += 1;
            true
        })?;
        let rank = rank.min(c.len.saturating_sub(1));
        Ok(Some(if rev { c.len - 1 - rank } else { rank }))
    }

    /// ZCOUNT: the number of members with a score in `range` (O(members counted)).
    pub fn zcount(&self, key: &[u8], range: &ScoreRange) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(0);
        };
        let mut n = 0;
        self.zset_visit(key, &c, &ZRangeBy::Score(*range), false, |_, _| {
            n += 1;
            true
        })?;
        Ok(n)
    }

    /// ZLEXCOUNT: the number of members in a lexicographic range.
    pub fn zlexcount(&self, key: &[u8], range: &LexRange) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(0);
        };
        let mut n = 0;
        self.zset_visit(key, &c, &ZRangeBy::Lex(range.clone()), false, |_, _| {
            n += 1;
            true
        })?;
        Ok(n)
    }

    /// ZRANGE (and ZREVRANGE, ZRANGEBYSCORE, ZRANGEBYLEX, ...): members with their scores, in the
    /// order of the request. Streams from an iterator; rank ranges start from the nearer end.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{ScoreRange, ZAddOptions, ZRangeBy, ZRangeSpec};
    /// let db = strata::Db::open(dir.path())?;
    /// db.zadd(b"z", &[(1.0, &b"a"[..]), (2.0, &b"b"[..]), (3.0, &b"c"[..])], ZAddOptions::default())?;
    /// let spec = ZRangeSpec { by: ZRangeBy::Score(ScoreRange::inclusive(2.0, f64::INFINITY)), rev: true, limit: None };
    /// assert_eq!(db.zrange(b"z", &spec)?, vec![(b"c".to_vec(), 3.0), (b"b".to_vec(), 2.0)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn zrange(&self, key: &[u8], spec: &ZRangeSpec) -> Result<Vec<ScoredMember>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(Vec::new());
        };
        self.zset_range_of(key, &c, spec)
    }

    /// ZRANGESTORE: stores the result of a ZRANGE of `src` as the sorted set `dst` (replacing any
    /// value; an empty result deletes `dst`) and returns its size.
    pub fn zrangestore(&self, dst: &[u8], src: &[u8], spec: &ZRangeSpec) -> Result<u64> {
        let _g = self
            .inner
            .locks
            .lock([(self.index, dst), (self.index, src)]);
        let items = match self.load_collection(src, KeyType::ZSet)? {
            Some(c) => self.zset_range_of(src, &c, spec)?,
            None => Vec::new(),
        };
        self.zset_store(dst, &items)
    }

    /// ZREMRANGEBYRANK / ZREMRANGEBYSCORE / ZREMRANGEBYLEX: removes the members in the range and
    /// returns how many.
    pub fn zremrange(&self, key: &[u8], by: &ZRangeBy) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(0);
        };
        let spec = ZRangeSpec {
            by: by.clone(),
            rev: false,
            limit: None,
        };
        let items = self.zset_range_of(key, &c, &spec)?;
        let mut w = ZWriter::new(self, key, c);
        for (m, s) in &items {
            w.remove(m, *s);
        }
        w.commit()?;
        Ok(items.len() as u64)
    }

    /// ZPOPMIN / ZPOPMAX: removes and returns up to `count` members with the lowest (or, with
    /// `max`, highest) scores, in pop order.
    pub fn zpop(&self, key: &[u8], max: bool, count: u64) -> Result<Vec<ScoredMember>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        self.zset_pop_locked(key, max, count)
    }

    fn zset_pop_locked(&self, key: &[u8], max: bool, count: u64) -> Result<Vec<ScoredMember>> {
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(Vec::new());
        };
        let mut items = Vec::new();
        if count == 0 {
            return Ok(items);
        }
        self.zset_visit(key, &c, &ZRangeBy::Score(ScoreRange::all()), max, |m, s| {
            items.push((m.to_vec(), s));
            (items.len() as u64) < count
        })?;
        let mut w = ZWriter::new(self, key, c);
        for (m, s) in &items {
            w.remove(m, *s);
        }
        w.commit()?;
        Ok(items)
    }

    /// ZMPOP: pops up to `count` members from the first non-empty sorted set among `keys`;
    /// returns its key and the members, or `None` if all are empty. A key of another type met
    /// before a non-empty sorted set fails with `WrongType`.
    pub fn zmpop(
        &self,
        keys: &[&[u8]],
        max: bool,
        count: u64,
    ) -> Result<Option<(Vec<u8>, Vec<ScoredMember>)>> {
        let _g = self.inner.locks.lock(keys.iter().map(|k| (self.index, *k)));
        for k in keys {
            if self.load_collection(k, KeyType::ZSet)?.is_some() {
                let items = self.zset_pop_locked(k, max, count)?;
                return Ok(Some((k.to_vec(), items)));
            }
        }
        Ok(None)
    }

    /// ZRANDMEMBER with a count: a positive `count` returns up to `count` distinct members, a
    /// negative one exactly `-count` members that may repeat, in random order. Uniform; O(N) in
    /// the set's size because members are reached by position (see docs/differences.md). A
    /// negative count beyond 2^27 fails with [`Error::NotInteger`].
    pub fn zrandmember(&self, key: &[u8], count: i64) -> Result<Vec<ScoredMember>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(Vec::new());
        };
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut rng = Rng::new();
        let n = c.len;
        let all = ZRangeBy::Score(ScoreRange::all());
        if count > 0 && count as u64 >= n {
            let mut items = Vec::with_capacity(n as usize);
            self.zset_visit(key, &c, &all, false, |m, s| {
                items.push((m.to_vec(), s));
                true
            })?;
            rng.shuffle(&mut items);
            return Ok(items);
        }
        // The ranks to pick, sorted, with their multiplicity.
        let mut picks: Vec<u64> = if count > 0 {
            // Floyd's algorithm: `count` distinct ranks out of n.
            let k = count as u64;
            let mut chosen = HashSet::with_capacity(k as usize);
            for j in (n - k)..n {
                let t = rng.below(j + 1);
                if !chosen.insert(t) {
                    chosen.insert(j);
                }
            }
            chosen.into_iter().collect()
        } else {
            let k = count.unsigned_abs();
            if k > MAX_RANDOM_REPEATS {
                return Err(Error::NotInteger);
            }
            (0..k).map(|_| rng.below(n)).collect()
        };
        picks.sort_unstable();
        let mut items = Vec::with_capacity(picks.len());
        let mut rank = 0u64;
        let mut next = 0usize;
        self.zset_visit(key, &c, &all, false, |m, s| {
            while next < picks.len() && picks[next] == rank {
                items.push((m.to_vec(), s));
                next += 1;
            }
            rank += 1;
            next < picks.len()
        })?;
        rng.shuffle(&mut items);
        Ok(items)
    }

    /// ZUNION / ZINTER / ZDIFF: the combined members sorted by score, then member. Inputs may be
    /// sorted sets or sets (whose members score 1); missing keys are empty. `weights` (one per
    /// key) multiply each input's scores (a NaN product counts as 0).
    pub fn zsetop(
        &self,
        op: SetOp,
        keys: &[&[u8]],
        weights: Option<&[f64]>,
        aggregate: Aggregate,
    ) -> Result<Vec<ScoredMember>> {
        let sources = self.zset_sources(keys, weights)?;
        self.zset_combine(op, sources, aggregate, None)
    }

    /// ZUNIONSTORE / ZINTERSTORE / ZDIFFSTORE: stores the result of [`Db::zsetop`] as `dst`
    /// (replacing any value; an empty result deletes `dst`) and returns its size.
    pub fn zsetop_store(
        &self,
        op: SetOp,
        dst: &[u8],
        keys: &[&[u8]],
        weights: Option<&[f64]>,
        aggregate: Aggregate,
    ) -> Result<u64> {
        let _g = self.inner.locks.lock(
            keys.iter()
                .map(|k| (self.index, *k))
                .chain(std::iter::once((self.index, dst))),
        );
        let sources = self.zset_sources(keys, weights)?;
        let items = self.zset_combine(op, sources, aggregate, None)?;
        self.zset_store(dst, &items)
    }

    /// ZINTERCARD: the size of the intersection, counting stops at `limit` (0 = no limit).
    pub fn zintercard(&self, keys: &[&[u8]], limit: u64) -> Result<u64> {
        let sources = self.zset_sources(keys, None)?;
        Ok(self
            .zset_combine(SetOp::Inter, sources, Aggregate::Sum, Some(limit))?
            .len() as u64)
    }

    /// ZSCAN: a page of members (with scores) after `cursor` that match the glob `pattern`.
    /// Small sorted sets come back whole in one page (as Redis does for its compact encoding);
    /// larger ones in pages of about `count` members in member order.
    pub fn zscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<ZScanPage> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let mut page = ZScanPage {
            cursor: 0,
            items: Vec::new(),
            compact: true,
        };
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok(page);
        };
        let matches = |m: &[u8]| pattern.is_none_or(|p| crate::glob::glob_match(p, m, false));
        if c.len <= LISTPACK_MAX_ENTRIES {
            let mut long = false;
            self.zset_visit(
                key,
                &c,
                &ZRangeBy::Score(ScoreRange::all()),
                false,
                |m, s| {
                    long |= m.len() > LISTPACK_MAX_VALUE;
                    if matches(m) {
                        page.items.push((m.to_vec(), s));
                    }
                    true
                },
            )?;
            page.compact = !long;
            return Ok(page);
        }
        page.compact = false;
        let after = if cursor == 0 {
            None
        } else {
            self.scan_cursor_position(cursor, key)
        };
        let count = count.max(1);
        let mut visited = 0usize;
        let mut last: Option<Vec<u8>> = None;
        let mut finished = true;
        let mut first = true;
        let mut err = None;
        self.for_each_sub(CF_DATA, key, &c, after.as_deref(), |m, v| {
            if first {
                first = false;
                if after.as_deref() == Some(m) {
                    return true;
                }
            }
            if visited >= count {
                finished = false;
                return false;
            }
            visited += 1;
            last = Some(m.to_vec());
            if matches(m) {
                match score_from_value(v) {
                    Ok(s) => page.items.push((m.to_vec(), s)),
                    Err(e) => {
                        err = Some(e);
                        return false;
                    }
                }
            }
            true
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        if !finished {
            if let Some(last) = last {
                page.cursor = self.scan_cursor_remember(key, last);
            }
        }
        Ok(page)
    }

    // ----- internals -----

    /// OBJECT ENCODING of a sorted set by Redis's default size rules: `listpack` up to 128
    /// members of at most 64 bytes each, else `skiplist`. Reads at most 129 members.
    pub(crate) fn zset_encoding(&self, key: &[u8]) -> Result<&'static str> {
        let Some(c) = self.load_collection(key, KeyType::ZSet)? else {
            return Ok("skiplist");
        };
        if c.len > LISTPACK_MAX_ENTRIES {
            return Ok("skiplist");
        }
        let mut long = false;
        self.for_each_sub(CF_DATA, key, &c, None, |m, _| {
            long |= m.len() > LISTPACK_MAX_VALUE;
            !long
        })?;
        Ok(if long { "skiplist" } else { "listpack" })
    }

    /// Visits the members of a score or lex range (rank ranges are not accepted here) in
    /// ascending or, with `rev`, descending order, calling `f(member, score)` until it returns
    /// false.
    pub(crate) fn zset_visit(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        by: &ZRangeBy,
        rev: bool,
        mut f: impl FnMut(&[u8], f64) -> bool,
    ) -> Result<()> {
        let mut err = None;
        match by {
            ZRangeBy::Score(r) => {
                if r.is_empty() {
                    return Ok(());
                }
                if !rev {
                    let from = if r.min_exclusive {
                        score_successor(r.min)
                    } else {
                        encode_score(r.min)
                    };
                    self.for_each_sub(CF_ZSCORE, key, c, Some(&from[..]), |sub, _| {
                        let Some((s, m)) = split_zscore_sub(sub) else {
                            return true;
                        };
                        if !r.gte_min(s) {
                            return true;
                        }
                        if !r.lte_max(s) {
                            return false;
                        }
                        f(m, s)
                    })?;
                } else {
                    let from = if r.max_exclusive {
                        encode_score(r.max)
                    } else {
                        score_successor(r.max)
                    };
                    self.for_each_sub_rev(CF_ZSCORE, key, c, Some(&from[..]), |sub, _| {
                        let Some((s, m)) = split_zscore_sub(sub) else {
                            return true;
                        };
                        if !r.lte_max(s) {
                            return true;
                        }
                        if !r.gte_min(s) {
                            return false;
                        }
                        f(m, s)
                    })?;
                }
            }
            ZRangeBy::Lex(r) => {
                let mut visit = |m: &[u8], v: &[u8]| match score_from_value(v) {
                    Ok(s) => f(m, s),
                    Err(e) => {
                        err = Some(e);
                        false
                    }
                };
                if !rev {
                    let from: Option<&[u8]> = match &r.min {
                        LexBound::NegInf => None,
                        LexBound::PosInf => return Ok(()),
                        LexBound::Inclusive(b) | LexBound::Exclusive(b) => Some(b),
                    };
                    self.for_each_sub(CF_DATA, key, c, from, |m, v| {
                        if !r.gte_min(m) {
                            return true;
                        }
                        if !r.lte_max(m) {
                            return false;
                        }
                        visit(m, v)
                    })?;
                } else {
                    let from: Option<&[u8]> = match &r.max {
                        LexBound::PosInf => None,
                        LexBound::NegInf => return Ok(()),
                        LexBound::Inclusive(b) | LexBound::Exclusive(b) => Some(b),
                    };
                    self.for_each_sub_rev(CF_DATA, key, c, from, |m, v| {
                        if !r.lte_max(m) {
                            return true;
                        }
                        if !r.gte_min(m) {
                            return false;
                        }
                        visit(m, v)
                    })?;
                }
            }
            ZRangeBy::Rank(..) => {
                return Err(Error::Corrupt("rank range passed to zset_visit".into()));
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The result of a ZRANGE on an existing sorted set.
    fn zset_range_of(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        spec: &ZRangeSpec,
    ) -> Result<Vec<ScoredMember>> {
        match &spec.by {
            ZRangeBy::Rank(start, stop) => {
                let Some((start, end)) = normalize_rank(*start, *stop, c.len) else {
                    return Ok(Vec::new());
                };
                // Ascending ranks a..=b.
                let (a, b) = if spec.rev {
                    (c.len - 1 - end, c.len - 1 - start)
                } else {
                    (start, end)
                };
                let want = (b - a + 1) as usize;
                let all = ZRangeBy::Score(ScoreRange::all());
                let mut items = Vec::with_capacity(want.min(1 << 16));
                let from_front = a <= c.len - 1 - b;
                let mut skip = if from_front { a } else { c.len - 1 - b };
                self.zset_visit(key, c, &all, !from_front, |m, s| {
                    if skip > 0 {
                        skip -= 1;
                        return true;
                    }
                    items.push((m.to_vec(), s));
                    items.len() < want
                })?;
                // Collected ascending if from the front, descending otherwise.
                if from_front == spec.rev {
                    items.reverse();
                }
                Ok(items)
            }
            by => {
                let (offset, count) = spec.limit.unwrap_or((0, -1));
                if offset < 0 || count == 0 {
                    return Ok(Vec::new());
                }
                if offset > 0 && offset as u64 >= c.len {
                    return Ok(Vec::new());
                }
                let mut skip = offset as u64;
                let mut items = Vec::new();
                self.zset_visit(key, c, by, spec.rev, |m, s| {
                    if skip > 0 {
                        skip -= 1;
                        return true;
                    }
                    items.push((m.to_vec(), s));
                    count < 0 || (items.len() as i64) < count
                })?;
                Ok(items)
            }
        }
    }

    /// Writes `items` (sorted) as a new sorted set at `dst`, replacing any value. Caller holds
    /// `dst`'s lock.
    pub(crate) fn zset_store(&self, dst: &[u8], items: &[ScoredMember]) -> Result<u64> {
        let mut batch = crate::storage::new_batch();
        let c = CollectionMeta {
            kind: KeyType::ZSet,
            expire_ms: 0,
            version: self.next_version(),
            len: items.len() as u64,
            extra: Vec::new(),
        };
        if items.is_empty() {
            if self.live_raw(dst)?.is_none() {
                return Ok(0);
            }
            self.delete_meta(&mut batch, self.phys(), dst);
            self.write(batch)?;
            return Ok(0);
        }
        let s = self.storage();
        for (m, score) in items {
            let score = normalize(*score);
            batch.put_cf(s.cf(CF_DATA), self.sub_key(dst, &c, m), score_bytes(score));
            batch.put_cf(
                s.cf(CF_ZSCORE),
                self.sub_key(dst, &c, &zscore_sub(score, m)),
                [],
            );
        }
        self.put_collection(&mut batch, dst, &c);
        self.write(batch)?;
        Ok(c.len)
    }

    /// Loads the inputs of a set operation: each must be a sorted set, a set, or missing.
    fn zset_sources(&self, keys: &[&[u8]], weights: Option<&[f64]>) -> Result<Vec<Source>> {
        let mut out = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            let (meta, is_set) = match self.load_collection(k, KeyType::ZSet) {
                Ok(m) => (m, false),
                Err(Error::WrongType) => (self.load_collection(k, KeyType::Set)?, true),
                Err(e) => return Err(e),
            };
            out.push(Source {
                key: k.to_vec(),
                meta,
                is_set,
                weight: weights.and_then(|w| w.get(i).copied()).unwrap_or(1.0),
            });
        }
        Ok(out)
    }

    /// Streams the members of one input as `(member, weighted score)`.
    fn zset_source_each(&self, src: &Source, mut f: impl FnMut(&[u8], f64) -> bool) -> Result<()> {
        let Some(c) = &src.meta else {
            return Ok(());
        };
        let mut err = None;
        self.for_each_sub(CF_DATA, &src.key, c, None, |m, v| {
            let raw = if src.is_set {
                1.0
            } else {
                match score_from_value(v) {
                    Ok(s) => s,
                    Err(e) => {
                        err = Some(e);
                        return false;
                    }
                }
            };
            f(m, weighted(raw, src.weight))
        })?;
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A member's score in one input (1 for a set), unweighted, if present.
    fn zset_source_find(&self, src: &Source, member: &[u8]) -> Result<Option<f64>> {
        let Some(c) = &src.meta else {
            return Ok(None);
        };
        match self.get_sub(CF_DATA, &src.key, c, member)? {
            None => Ok(None),
            Some(_) if src.is_set => Ok(Some(1.0)),
            Some(v) => Ok(Some(score_from_value(&v)?)),
        }
    }

    fn zset_combine(
        &self,
        op: SetOp,
        mut sources: Vec<Source>,
        aggregate: Aggregate,
        card_limit: Option<u64>,
    ) -> Result<Vec<ScoredMember>> {
        if sources.is_empty() {
            return Ok(Vec::new());
        }
        let mut out: Vec<ScoredMember> = Vec::new();
        match op {
            SetOp::Inter => {
                // Smallest input first, as Redis does (its aggregation order follows).
                sources.sort_by_key(|s| s.len());
                if sources[0].len() == 0 {
                    return Ok(out);
                }
                let Some((first, rest)) = sources.split_first() else {
                    return Ok(out);
                };
                let mut err = None;
                self.zset_source_each(first, |m, s| {
                    let mut score = s;
                    for src in rest {
                        match self.zset_source_find(src, m) {
                            // Redis zeroes a NaN product only for the first input; later ones go
                            // to the aggregation as they are (SUM turns NaN into 0, MIN/MAX skip it).
                            Ok(Some(v)) => score = aggregate_into(score, v * src.weight, aggregate),
                            Ok(None) => return true,
                            Err(e) => {
                                err = Some(e);
                                return false;
                            }
                        }
                    }
                    out.push((m.to_vec(), score));
                    match card_limit {
                        Some(l) if l > 0 => (out.len() as u64) < l,
                        _ => true,
                    }
                })?;
                if let Some(e) = err {
                    return Err(e);
                }
            }
            SetOp::Union => {
                sources.sort_by_key(|s| s.len());
                let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
                for src in &sources {
                    self.zset_source_each(src, |m, s| {
                        match acc.get_mut(m) {
                            Some(cur) => *cur = aggregate_into(*cur, s, aggregate),
                            None => {
                                acc.insert(m.to_vec(), s);
                            }
                        }
                        true
                    })?;
                }
                out = acc.into_iter().collect();
            }
            SetOp::Diff => {
                let Some((first, rest)) = sources.split_first() else {
                    return Ok(out);
                };
                let mut err = None;
                self.zset_source_each(first, |m, s| {
                    for src in rest {
                        match self.zset_source_find(src, m) {
                            Ok(Some(_)) => return true,
                            Ok(None) => {}
                            Err(e) => {
                                err = Some(e);
                                return false;
                            }
                        }
                    }
                    out.push((m.to_vec(), s));
                    true
                })?;
                if let Some(e) = err {
                    return Err(e);
                }
            }
        }
        if card_limit.is_none() {
            // Redis's order: by score (-0 equals 0), then member. A -0 result stays -0 in the
            // reply, as in Redis; storing it writes 0.
            out.sort_by(|a, b| {
                a.1.partial_cmp(&b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            });
        }
        Ok(out)
    }
}

/// `score * weight`, with a NaN product (`inf * 0`) counting as 0, as in Redis.
fn weighted(score: f64, weight: f64) -> f64 {
    let v = score * weight;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

fn aggregate_into(cur: f64, v: f64, aggregate: Aggregate) -> f64 {
    match aggregate {
        Aggregate::Sum => {
            let s = cur + v;
            if s.is_nan() {
                0.0
            } else {
                s
            }
        }
        Aggregate::Min => {
            if v < cur {
                v
            } else {
                cur
            }
        }
        Aggregate::Max => {
            if v > cur {
                v
            } else {
                cur
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn level_zero_files(db: &Db) -> u64 {
        db.storage()
            .property_int(CF_ZSCORE, "rocksdb.num-files-at-level0")
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn the_score_family_compacts_its_level_zero_at_two_files() -> R {
        let dir = tempfile::tempdir()?;
        let db = Db::open(dir.path())?;
        // Each round rewrites every member at a new score, so each flush's file in `zscore`
        // spans the whole set and overlaps the others.
        for round in 0..3u32 {
            let members: Vec<Vec<u8>> = (0..200).map(|i| format!("m{i:03}").into_bytes()).collect();
            let items: Vec<(f64, &[u8])> = members
                .iter()
                .enumerate()
                .map(|(i, m)| (f64::from(round * 1000) + i as f64, &m[..]))
                .collect();
            db.zadd(b"z", &items, ZAddOptions::default())?;
            db.flush()?;
            db.storage().wait_for_compactions()?;
            assert!(
                level_zero_files(&db) < 2,
                "round {round}: {} level-0 files left in zscore",
                level_zero_files(&db)
            );
        }
        let all = ZRangeSpec {
            by: ZRangeBy::Score(ScoreRange::all()),
            rev: false,
            limit: None,
        };
        let got = db.zrange(b"z", &all)?;
        assert_eq!(got.len(), 200);
        assert_eq!(got[0], (b"m000".to_vec(), 2000.0));
        Ok(())
    }

    #[test]
    fn rank_normalization_follows_redis() {
        assert_eq!(normalize_rank(0, -1, 3), Some((0, 2)));
        assert_eq!(normalize_rank(-100, 100, 3), Some((0, 2)));
        assert_eq!(normalize_rank(2, 1, 3), None);
        assert_eq!(normalize_rank(3, 5, 3), None);
        assert_eq!(normalize_rank(0, -4, 3), None);
        assert_eq!(normalize_rank(0, 0, 0), None);
        assert_eq!(normalize_rank(i64::MIN, i64::MAX, 2), Some((0, 1)));
    }

    #[test]
    fn zscore_sub_keys_round_trip_and_sort() {
        let a = zscore_sub(-1.5, b"m");
        let b = zscore_sub(2.0, b"a");
        assert!(a < b);
        assert_eq!(split_zscore_sub(&a), Some((-1.5, &b"m"[..])));
        assert!(score_successor(1.0) > encode_score(1.0));
    }

    #[test]
    fn lex_ranges_compare_like_redis() {
        let r = LexRange {
            min: LexBound::Exclusive(b"a".to_vec()),
            max: LexBound::Inclusive(b"c".to_vec()),
        };
        assert!(!r.contains(b"a"));
        assert!(r.contains(b"b"));
        assert!(r.contains(b"c"));
        assert!(!r.contains(b"ca"));
        assert!(LexRange::all().contains(b""));
    }
}
