//! Hashes: HSET and friends on `Db`. A hash is a collection (metadata `[version][len]`) whose
//! fields are `data` sub-keys holding the field values, so HGET is one point read, HLEN is O(1)
//! from the metadata, and HGETALL/HKEYS/HVALS stream the fields in bytewise order. Every write
//! holds the key's lock, reads the fields it needs (to keep `len` exact) and commits everything
//! in one batch. Random picks and scans come from `members.rs`; nothing here knows of RESP.

use std::collections::HashSet;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::glob::glob_match;
use crate::meta::KeyType;
use crate::num;
use crate::storage::CF_DATA;

/// Redis 7.0's default `hash-max-listpack-entries`: up to this many fields a hash is a listpack.
pub(crate) const HASH_MAX_LISTPACK_ENTRIES: u64 = 512;
/// Redis 7.0's default `hash-max-listpack-value`: fields and values up to this many bytes.
pub(crate) const HASH_MAX_LISTPACK_VALUE: usize = 64;

/// One page of an HSCAN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashScanPage {
    /// The cursor to pass next; 0 when the iteration is complete.
    pub cursor: u64,
    /// The `(field, value)` pairs of this page whose field matched the pattern.
    pub pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Db {
    /// The live hash at `key` for a read command (counted in the keyspace hit/miss statistics).
    fn read_hash(&self, key: &[u8]) -> Result<Option<CollectionMeta>> {
        let r = self.load_collection(key, KeyType::Hash);
        self.count_lookup(!matches!(r, Ok(None)));
        r
    }

    /// HSET / HMSET: sets each `(field, value)` pair in order (a field given twice ends with its
    /// last value), creating the hash if needed. Returns how many fields are new.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// assert_eq!(db.hset(b"user:1", &[(b"name", b"ann"), (b"city", b"Oslo")])?, 2);
    /// assert_eq!(db.hset(b"user:1", &[(b"city", b"Bergen")])?, 0);
    /// assert_eq!(db.hget(b"user:1", b"city")?, Some(b"Bergen".to_vec()));
    /// assert_eq!(db.hlen(b"user:1")?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<u64> {
        if pairs.is_empty() {
            return Ok(0);
        }
        let _g = self.inner.locks.lock_one(self.index, key);
        let mut c = self.load_or_new_collection(key, KeyType::Hash)?;
        let fields: Vec<&[u8]> = pairs.iter().map(|(f, _)| *f).collect();
        let existed = self.subs_exist(key, &c, &fields)?;
        let mut batch = crate::storage::new_batch();
        let cf = self.storage().cf(CF_DATA);
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut added = 0;
        for ((field, value), existed) in pairs.iter().zip(existed) {
            if seen.insert(*field) && !existed {
                added += 1;
            }
            batch.put_cf(cf, self.sub_key(key, &c, field), value);
        }
        if added > 0 {
            c.len += added;
            self.put_collection(&mut batch, key, &c);
        }
        self.write(batch)?;
        Ok(added)
    }

    /// HSETNX: sets the field only if it does not exist yet; returns whether it did.
    pub fn hsetnx(&self, key: &[u8], field: &[u8], value: &[u8]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let mut c = self.load_or_new_collection(key, KeyType::Hash)?;
        if c.len > 0 && self.get_sub(CF_DATA, key, &c, field)?.is_some() {
            return Ok(false);
        }
        let mut batch = crate::storage::new_batch();
        batch.put_cf(
            self.storage().cf(CF_DATA),
            self.sub_key(key, &c, field),
            value,
        );
        c.len += 1;
        self.put_collection(&mut batch, key, &c);
        self.write(batch)?;
        Ok(true)
    }

    /// HGET: the value of one field, `None` when the field or the key is missing.
    pub fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.read_hash(key)? {
            Some(c) => self.get_sub(CF_DATA, key, &c, field),
            None => Ok(None),
        }
    }

    /// HMGET: the values of several fields, `None` for each missing one.
    pub fn hmget(&self, key: &[u8], fields: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let Some(c) = self.read_hash(key)? else {
            return Ok(vec![None; fields.len()]);
        };
        let sub_keys: Vec<Vec<u8>> = fields.iter().map(|f| self.sub_key(key, &c, f)).collect();
        self.storage().multi_get(CF_DATA, &sub_keys)
    }

    /// HDEL: removes the fields; returns how many existed. The key goes away with its last field.
    pub fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<u64> {
        self.remove_members(key, KeyType::Hash, fields)
    }

    /// HLEN: the number of fields, O(1).
    pub fn hlen(&self, key: &[u8]) -> Result<u64> {
        Ok(self.read_hash(key)?.map_or(0, |c| c.len))
    }

    /// HSTRLEN: the length of a field's value, 0 when missing.
    pub fn hstrlen(&self, key: &[u8], field: &[u8]) -> Result<u64> {
        Ok(self.hget(key, field)?.map_or(0, |v| v.len() as u64))
    }

    /// HEXISTS: whether the field exists.
    pub fn hexists(&self, key: &[u8], field: &[u8]) -> Result<bool> {
        Ok(self.hget(key, field)?.is_some())
    }

    /// HKEYS: every field, in bytewise order.
    pub fn hkeys(&self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        self.hash_each(key, |f, _| out.push(f.to_vec()))?;
        Ok(out)
    }

    /// HVALS: every value, in the bytewise order of their fields.
    pub fn hvals(&self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        self.hash_each(key, |_, v| out.push(v.to_vec()))?;
        Ok(out)
    }

    /// HGETALL: every `(field, value)` pair, in bytewise order of the fields.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// db.hset(b"h", &[(b"b", b"2"), (b"a", b"1")])?;
    /// assert_eq!(db.hgetall(b"h")?, vec![(b"a".to_vec(), b"1".to_vec()), (b"b".to_vec(), b"2".to_vec())]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hgetall(&self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        self.hash_each(key, |f, v| out.push((f.to_vec(), v.to_vec())))?;
        Ok(out)
    }

    /// Streams the fields of the hash at `key` (nothing if missing), one entry in memory at a time.
    pub fn hash_each(&self, key: &[u8], mut f: impl FnMut(&[u8], &[u8])) -> Result<()> {
        let Some(c) = self.read_hash(key)? else {
            return Ok(());
        };
        self.for_each_sub(CF_DATA, key, &c, None, |k, v| {
            f(k, v);
            true
        })
    }

    /// HINCRBY: adds `delta` to the integer in the field (a missing field counts as 0).
    /// [`Error::NotInteger`] when the stored value is not an integer, [`Error::Overflow`] when
    /// the result does not fit in 64 bits.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// assert_eq!(db.hincr_by(b"stats", b"hits", 5)?, 5);
    /// assert_eq!(db.hincr_by(b"stats", b"hits", -2)?, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hincr_by(&self, key: &[u8], field: &[u8], delta: i64) -> Result<i64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let c = self.load_or_new_collection(key, KeyType::Hash)?;
        let current = self.field_for_update(key, &c, field)?;
        let base = match &current {
            Some(v) => num::parse_i64(v).ok_or(Error::NotInteger)?,
            None => 0,
        };
        let next = base.checked_add(delta).ok_or(Error::Overflow)?;
        self.put_field(
            key,
            c,
            field,
            current.is_none(),
            next.to_string().as_bytes(),
        )?;
        Ok(next)
    }

    /// HINCRBYFLOAT: adds `delta` to the number in the field (a missing field counts as 0) and
    /// returns the new value as stored. [`Error::NotFloat`] when the stored value is not a
    /// number, [`Error::NanOrInfinity`] when the result would be NaN or infinite.
    pub fn hincr_by_float(&self, key: &[u8], field: &[u8], delta: f64) -> Result<Vec<u8>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let c = self.load_or_new_collection(key, KeyType::Hash)?;
        let current = self.field_for_update(key, &c, field)?;
        let base = match &current {
            Some(v) => num::parse_f64(v).ok_or(Error::NotFloat)?,
            None => 0.0,
        };
        let next = base + delta;
        if next.is_nan() || next.is_infinite() {
            return Err(Error::NanOrInfinity);
        }
        let text = num::format_incr_float(next).into_bytes();
        self.put_field(key, c, field, current.is_none(), &text)?;
        Ok(text)
    }

    fn field_for_update(
        &self,
        key: &[u8],
        c: &CollectionMeta,
        field: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        if c.len == 0 {
            return Ok(None);
        }
        self.get_sub(CF_DATA, key, c, field)
    }

    /// Writes one field (caller holds the lock); `new` says whether it adds to the length.
    fn put_field(
        &self,
        key: &[u8],
        mut c: CollectionMeta,
        field: &[u8],
        new: bool,
        value: &[u8],
    ) -> Result<()> {
        let mut batch = crate::storage::new_batch();
        batch.put_cf(
            self.storage().cf(CF_DATA),
            self.sub_key(key, &c, field),
            value,
        );
        if new {
            c.len += 1;
            self.put_collection(&mut batch, key, &c);
        }
        self.write(batch)
    }

    /// HRANDFIELD without a count: one random field, `None` when the key is missing.
    pub fn hrandfield(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(c) = self.read_hash(key)? else {
            return Ok(None);
        };
        Ok(self
            .random_entries(key, &c, 1, false)?
            .into_iter()
            .next()
            .map(|(f, _)| f))
    }

    /// HRANDFIELD with a count, as `(field, value)` pairs: a positive `count` gives up to `count`
    /// distinct fields (the whole hash when `count` reaches its size), a negative one exactly
    /// `-count` fields that may repeat. Empty when the key is missing. A negative count beyond
    /// 2^27 fails with [`Error::NotInteger`] (the reply would not fit in memory).
    pub fn hrandfield_count(&self, key: &[u8], count: i64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let Some(c) = self.read_hash(key)? else {
            return Ok(Vec::new());
        };
        if count < 0 && count.unsigned_abs() > crate::zset::MAX_RANDOM_REPEATS {
            return Err(Error::NotInteger);
        }
        self.random_entries(key, &c, count.unsigned_abs(), count > 0)
    }

    /// HSCAN: a page of `(field, value)` pairs after `cursor` whose field matches the glob
    /// `pattern` (`None` matches all). A hash Redis would keep as a listpack (up to 512 fields of
    /// at most 64 bytes) comes back whole in one page, as Redis does; larger ones in pages of
    /// about `count` fields in bytewise order.
    pub fn hscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<HashScanPage> {
        let mut page = HashScanPage {
            cursor: 0,
            pairs: Vec::new(),
        };
        let Some(c) = self.read_hash(key)? else {
            return Ok(page);
        };
        let matches = |f: &[u8]| pattern.is_none_or(|p| glob_match(p, f, false));
        if c.len <= HASH_MAX_LISTPACK_ENTRIES {
            let all = self.all_entries(key, &c)?;
            if is_listpack(&all) {
                page.pairs = all
                    .into_iter()
                    .filter(|(f, _)| matches(f.as_slice()))
                    .collect();
                return Ok(page);
            }
        }
        page.cursor = self.scan_entries(key, &c, cursor, count, |f, v| {
            if matches(f) {
                page.pairs.push((f.to_vec(), v.to_vec()));
            }
        })?;
        Ok(page)
    }

    /// OBJECT ENCODING of a hash by Redis 7.0's default rules: `listpack` up to 512 fields whose
    /// fields and values are at most 64 bytes, else `hashtable`. Reads at most 512 fields.
    pub(crate) fn hash_encoding(&self, key: &[u8]) -> Result<&'static str> {
        let Some(c) = self.load_collection(key, KeyType::Hash)? else {
            return Ok("hashtable");
        };
        if c.len > HASH_MAX_LISTPACK_ENTRIES {
            return Ok("hashtable");
        }
        let mut long = false;
        self.for_each_sub(CF_DATA, key, &c, None, |f, v| {
            long = f.len() > HASH_MAX_LISTPACK_VALUE || v.len() > HASH_MAX_LISTPACK_VALUE;
            !long
        })?;
        Ok(if long { "hashtable" } else { "listpack" })
    }
}

/// Whether Redis would hold these (at most 512) pairs as a listpack.
fn is_listpack(pairs: &[(Vec<u8>, Vec<u8>)]) -> bool {
    pairs.len() as u64 <= HASH_MAX_LISTPACK_ENTRIES
        && pairs
            .iter()
            .all(|(f, v)| f.len() <= HASH_MAX_LISTPACK_VALUE && v.len() <= HASH_MAX_LISTPACK_VALUE)
}
