//! Strings: GET/SET and friends on `Db`. A string lives inline in its metadata record, so a read is
//! one RocksDB lookup and a write one batch; a big one that APPEND or SETRANGE grew past
//! `fragment::THRESHOLD` lives in fragments (`fragment.rs`), which those commands then edit one
//! fragment at a time. SET and the other whole-value writes store inline. Every write holds the
//! key's lock, so read-modify-write commands (INCR, APPEND, SET NX/GET/KEEPTTL) are atomic.

use std::sync::atomic::Ordering;

use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::fragment::{self, FragmentWriter, Layout, StoredString};
use crate::keys;
use crate::meta::{self, KeyType, Meta, FLAG_RAW_STRING};
use crate::num;
use crate::storage::{CF_EXPIRE, CF_META};

/// A string record read in place: its inline value, or the metadata of a fragmented one.
enum Read {
    Value(Vec<u8>),
    Fragmented(Meta),
}

/// When SET writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetCondition {
    /// Always (plain SET).
    #[default]
    Always,
    /// Only if the key does not exist (NX).
    IfAbsent,
    /// Only if the key exists (XX).
    IfPresent,
}

/// What happens to a key's time to live on a write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Expiry {
    /// The key does not expire (any previous TTL is cleared).
    #[default]
    Never,
    /// The key expires at this Unix time in milliseconds.
    At(u64),
    /// The previous TTL is kept (KEEPTTL).
    Keep,
}

/// Options of [`Db::set`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// NX / XX.
    pub condition: SetCondition,
    /// EX / PX / EXAT / PXAT / KEEPTTL.
    pub expiry: Expiry,
    /// Return the previous value (SET ... GET); fails with `WrongType` if it is not a string.
    pub get: bool,
}

/// What [`Db::set`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetOutcome {
    /// Whether the value was written (false when NX/XX prevented it).
    pub written: bool,
    /// The previous value, when `SetOptions::get` was asked.
    pub old: Option<Vec<u8>>,
}

/// How GETEX changes the TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetExpiry {
    /// Leave it.
    Unchanged,
    /// Remove it (PERSIST).
    Persist,
    /// Expire at this Unix time in ms.
    At(u64),
}

/// The result of LCS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lcs {
    /// The longest common subsequence.
    pub sequence: Vec<u8>,
    /// Matched ranges, from the end of the strings to the start, as Redis reports them:
    /// `((a_start, a_end), (b_start, b_end), len)`.
    pub matches: Vec<LcsMatch>,
}

/// One matched range of [`Lcs`]: `((a_start, a_end), (b_start, b_end), len)`.
pub type LcsMatch = ((u64, u64), (u64, u64), u64);

impl Db {
    /// GET: the value of a string key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// assert_eq!(db.get(b"missing")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mk = self.meta_key(key);
        // Decode the header in place and copy the value out of the pinned slice (or the cached
        // record) once.
        let read = self.storage().with_pinned(
            crate::storage::CF_META,
            &mk,
            |raw| -> Result<Option<Read>> {
                let (kind, expire) = crate::meta::decode_header(raw)?;
                if expire != 0 && expire <= now_ms() {
                    return Ok(None);
                }
                if kind != KeyType::String {
                    return Err(Error::WrongType);
                }
                if fragment::is_fragmented_record(raw) {
                    return Ok(Some(Read::Fragmented(Meta::decode(raw)?)));
                }
                Ok(Some(Read::Value(raw[crate::meta::HEADER_LEN..].to_vec())))
            },
        )?;
        let value = match read.transpose()?.flatten() {
            None => None,
            Some(Read::Value(v)) => Some(v),
            Some(Read::Fragmented(m)) => Some(self.string_body(key, m)?),
        };
        self.count_lookup(value.is_some());
        Ok(value)
    }

    /// MGET: values of several keys; missing keys and keys of other types read as `None`.
    pub fn mget(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let s = self.storage();
        let phys = self.phys();
        let raw_keys: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| crate::keys::meta_key(phys, k))
            .collect();
        let now = now_ms();
        let mut out = Vec::with_capacity(keys.len());
        for (r, key) in s
            .multi_get(crate::storage::CF_META, &raw_keys)?
            .into_iter()
            .zip(keys)
        {
            let value = match r {
                Some(raw) => match Meta::decode(&raw) {
                    Ok(m) if m.kind == KeyType::String && !m.is_expired(now) => {
                        Some(self.string_body(key, m)?)
                    }
                    _ => None,
                },
                None => None,
            };
            self.count_lookup(value.is_some());
            out.push(value);
        }
        Ok(out)
    }

    /// SET with all of Redis's options.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{SetCondition, SetOptions};
    /// let db = strata::Db::open(dir.path())?;
    /// let nx = SetOptions { condition: SetCondition::IfAbsent, ..Default::default() };
    /// assert!(db.set(b"k", b"1", nx)?.written);
    /// assert!(!db.set(b"k", b"2", nx)?.written);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set(&self, key: &[u8], value: &[u8], opts: SetOptions) -> Result<SetOutcome> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let plain =
            opts.condition == SetCondition::Always && opts.expiry != Expiry::Keep && !opts.get;
        let old = if plain { None } else { self.live_meta(key)? };
        let mut outcome = SetOutcome {
            written: false,
            old: None,
        };
        if opts.get {
            match &old {
                Some(m) if m.kind != KeyType::String => return Err(Error::WrongType),
                Some(m) => outcome.old = Some(self.string_body(key, m.clone())?),
                None => {}
            }
        }
        let allowed = match opts.condition {
            SetCondition::Always => true,
            SetCondition::IfAbsent => old.is_none(),
            SetCondition::IfPresent => old.is_some(),
        };
        if !allowed {
            return Ok(outcome);
        }
        let expire_ms = match opts.expiry {
            Expiry::Never => 0,
            Expiry::At(t) => t,
            Expiry::Keep => old.as_ref().map(|m| m.expire_ms).unwrap_or(0),
        };
        self.write_string(key, value, expire_ms)?;
        outcome.written = true;
        Ok(outcome)
    }

    /// Writes a string record (or deletes the key if `expire_ms` is already past). Caller holds the
    /// lock. `flags` carries `meta::FLAG_RAW_STRING` for values modified in place.
    fn write_string(&self, key: &[u8], value: &[u8], expire_ms: u64) -> Result<()> {
        self.write_string_flagged(key, value, 0, expire_ms)
    }

    pub(crate) fn write_string_flagged(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u8,
        expire_ms: u64,
    ) -> Result<()> {
        let live = !(expire_ms != 0 && expire_ms <= now_ms());
        if !live {
            let mut batch = crate::storage::new_batch();
            self.delete_meta(&mut batch, self.phys(), key);
            return self.write(batch);
        }
        // The records `put_meta_flagged` would write, without a RocksDB batch.
        let phys = self.phys();
        let mk = keys::meta_key(phys, key);
        let record = meta::encode_flagged(KeyType::String, flags, expire_ms, value);
        let storage = self.storage();
        if expire_ms == 0 {
            return storage.put(&[(CF_META, &mk, &record)]);
        }
        let ek = keys::expire_key(expire_ms, phys, key);
        storage.put(&[(CF_META, &mk, &record), (CF_EXPIRE, &ek, &[])])
    }

    /// MSET: sets every pair atomically (no reader sees some of them without the others).
    pub fn mset(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let _g = self
            .inner
            .locks
            .lock(pairs.iter().map(|(k, _)| (self.index, *k)));
        self.mset_locked(pairs)
    }

    fn mset_locked(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut batch = crate::storage::new_batch();
        let phys = self.phys();
        for (k, v) in pairs {
            self.put_meta_raw(&mut batch, phys, k, KeyType::String, 0, v);
        }
        self.write(batch)
    }

    /// MSETNX: sets every pair only if none of the keys exists; returns whether it did.
    pub fn msetnx(&self, pairs: &[(&[u8], &[u8])]) -> Result<bool> {
        let _g = self
            .inner
            .locks
            .lock(pairs.iter().map(|(k, _)| (self.index, *k)));
        for (k, _) in pairs {
            if self.live_raw(k)?.is_some() {
                return Ok(false);
            }
        }
        self.mset_locked(pairs)?;
        Ok(true)
    }

    /// GETDEL: returns the value and deletes the key.
    pub fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(s) = self.live_string(key)? else {
            return Ok(None);
        };
        let value = self.string_value(key, s)?;
        let mut batch = crate::storage::new_batch();
        self.delete_meta(&mut batch, self.phys(), key);
        self.write(batch)?;
        Ok(Some(value))
    }

    /// GETEX: returns the value and optionally changes the TTL.
    pub fn getex(&self, key: &[u8], expiry: GetExpiry) -> Result<Option<Vec<u8>>> {
        if expiry == GetExpiry::Unchanged {
            return self.get(key);
        }
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut s) = self.live_string(key)? else {
            return Ok(None);
        };
        let value = self.string_value(key, s.clone())?;
        let expire_ms = match expiry {
            GetExpiry::At(t) => t,
            _ => 0,
        };
        if expire_ms != s.expire_ms {
            // Only the metadata changes: a fragmented string keeps its fragments.
            s.expire_ms = expire_ms;
            let mut batch = crate::storage::new_batch();
            self.put_stored_string(&mut batch, key, &s);
            self.write(batch)?;
        }
        Ok(Some(value))
    }

    /// APPEND: appends to the string (creating it), returns the new length.
    pub fn append(&self, key: &[u8], suffix: &[u8]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let existing = self.live_string(key)?;
        let len = existing.as_ref().map_or(0, StoredString::len);
        let new_len = len + suffix.len() as u64;
        if new_len > self.inner.max_string_len.load(Ordering::Relaxed) {
            return Err(Error::StringTooLong);
        }
        match existing {
            // As in Redis, appending to an existing string leaves it `raw`; a new key is encoded
            // afresh.
            None if new_len <= fragment::THRESHOLD => {
                self.write_string_flagged(key, suffix, 0, 0)?
            }
            Some(StoredString {
                layout: Layout::Inline(mut value),
                expire_ms,
                ..
            }) if new_len <= fragment::THRESHOLD => {
                value.extend_from_slice(suffix);
                self.write_string_flagged(key, &value, FLAG_RAW_STRING, expire_ms)?
            }
            existing => {
                let mut w = FragmentWriter::new(self, existing.as_ref());
                w.write(self, key, len, suffix)?;
                let expire_ms = existing.map_or(0, |s| s.expire_ms);
                let mut batch = crate::storage::new_batch();
                w.finish(self, &mut batch, key, FLAG_RAW_STRING, expire_ms);
                // Appending nothing to a fragmented string leaves nothing to write.
                if !batch.is_empty() {
                    self.write(batch)?;
                }
            }
        }
        Ok(new_len)
    }

    /// STRLEN: length of the string, 0 if missing.
    pub fn strlen(&self, key: &[u8]) -> Result<u64> {
        Ok(self.live_string(key)?.map_or(0, |s| s.len()))
    }

    /// INCRBY (and INCR/DECR/DECRBY): adds `delta` to the integer stored at `key`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// assert_eq!(db.incr_by(b"n", 5)?, 5);
    /// assert_eq!(db.incr_by(b"n", -7)?, -2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn incr_by(&self, key: &[u8], delta: i64) -> Result<i64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        // A fragmented string is longer than any number: not an integer, as in Redis.
        let (current, expire) = match self.with_inline_body(key, num::parse_i64)? {
            Some((Some(Some(n)), expire_ms)) => (n, expire_ms),
            Some(_) => return Err(Error::NotInteger),
            None => (0, 0),
        };
        let next = current.checked_add(delta).ok_or(Error::Overflow)?;
        self.write_string(key, next.to_string().as_bytes(), expire)?;
        Ok(next)
    }

    /// `f` applied to the body of the live string at `key` where it lies, without copying the
    /// record (an INCR read it twice into new vectors: the record, then its body), with the
    /// string's expiry: `None` when the key is missing or expired, `Some((None, _))` for a
    /// fragmented string (no body in the record); WRONGTYPE for another type.
    fn with_inline_body<T>(
        &self,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<(Option<T>, u64)>> {
        self.with_live_record(key, |raw| {
            let (kind, expire_ms) = meta::decode_header(raw)?;
            if kind != KeyType::String {
                return Err(Error::WrongType);
            }
            let body = raw.get(meta::HEADER_LEN..).unwrap_or_default();
            if raw[1] & 0x0F == meta::STRING_FRAGMENTED {
                // Refused as `StoredString::from_meta` refuses it.
                fragment::fragmented_header(body)?;
                return Ok((None, expire_ms));
            }
            Ok((Some(f(body)), expire_ms))
        })?
        .transpose()
    }

    /// INCRBYFLOAT: adds `delta` to the number stored at `key`; returns the new value as stored.
    pub fn incr_by_float(&self, key: &[u8], delta: f64) -> Result<Vec<u8>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (current, expire) = match self.live_string(key)? {
            Some(StoredString {
                layout: Layout::Inline(v),
                expire_ms,
                ..
            }) => (num::parse_f64(&v).ok_or(Error::NotFloat)?, expire_ms),
            Some(_) => return Err(Error::NotFloat),
            None => (0.0, 0),
        };
        let next = current + delta;
        if next.is_nan() || next.is_infinite() {
            return Err(Error::NanOrInfinity);
        }
        let text = num::format_incr_float(next).into_bytes();
        self.write_string(key, &text, expire)?;
        Ok(text)
    }

    /// GETRANGE: the substring between two inclusive offsets; negative offsets count from the end.
    pub fn getrange(&self, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>> {
        let Some(stored) = self.live_string(key)? else {
            return Ok(Vec::new());
        };
        let len = stored.len() as i64;
        if start < 0 && end < 0 && start > end {
            return Ok(Vec::new());
        }
        let mut s = if start < 0 { len + start } else { start };
        let mut e = if end < 0 { len + end } else { end };
        s = s.max(0);
        e = e.max(0);
        if e >= len {
            e = len - 1;
        }
        if s > e || len == 0 {
            return Ok(Vec::new());
        }
        self.string_range(key, &stored, s as u64, e as u64 + 1)
    }

    /// SETRANGE: overwrites part of the string at `offset`, zero-padding; returns the new length.
    pub fn setrange(&self, key: &[u8], offset: u64, value: &[u8]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let existing = self.live_string(key)?;
        if value.is_empty() {
            return Ok(existing.map_or(0, |s| s.len()));
        }
        let end = offset
            .checked_add(value.len() as u64)
            .ok_or(Error::StringTooLong)?;
        if end > self.inner.max_string_len.load(Ordering::Relaxed) {
            return Err(Error::StringTooLong);
        }
        let (mut body, expire) = match existing {
            None if end <= fragment::THRESHOLD => (Vec::new(), 0),
            Some(StoredString {
                layout: Layout::Inline(v),
                expire_ms,
                ..
            }) if end.max(v.len() as u64) <= fragment::THRESHOLD => (v, expire_ms),
            existing => {
                let mut w = FragmentWriter::new(self, existing.as_ref());
                w.write(self, key, offset, value)?;
                let len = w.len();
                let expire_ms = existing.map_or(0, |s| s.expire_ms);
                let mut batch = crate::storage::new_batch();
                w.finish(self, &mut batch, key, FLAG_RAW_STRING, expire_ms);
                self.write(batch)?;
                return Ok(len);
            }
        };
        if body.len() < end as usize {
            body.resize(end as usize, 0);
        }
        body[offset as usize..end as usize].copy_from_slice(value);
        self.write_string_flagged(key, &body, crate::meta::FLAG_RAW_STRING, expire)?;
        Ok(body.len() as u64)
    }

    /// LCS of the strings at two keys (missing keys are empty strings). `limit` bounds the transient
    /// table in bytes; beyond it the call fails with `StringTooLong`.
    pub fn lcs(&self, a: &[u8], b: &[u8], min_match_len: u64, limit: u64) -> Result<Lcs> {
        let a = self.get(a)?.unwrap_or_default();
        let b = self.get(b)?.unwrap_or_default();
        lcs(&a, &b, min_match_len, limit)
    }
}

/// The longest common subsequence of two byte strings, with matched ranges as Redis reports them.
pub fn lcs(a: &[u8], b: &[u8], min_match_len: u64, limit: u64) -> Result<Lcs> {
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u128 + 1) * (blen as u128 + 1);
    if cells * 4 > limit as u128 || cells > usize::MAX as u128 / 4 {
        return Err(Error::StringTooLong);
    }
    let w = blen + 1;
    let mut t = vec![0u32; cells as usize];
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let total = t[alen * w + blen] as usize;
    let mut seq = vec![0u8; total];
    let mut idx = total;
    let (mut i, mut j) = (alen, blen);
    let none = alen as u64;
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (none, 0u64, 0u64, 0u64);
    let mut matches = Vec::new();
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            seq[idx - 1] = a[i - 1];
            if a_start == none {
                a_start = (i - 1) as u64;
                a_end = a_start;
                b_start = (j - 1) as u64;
                b_end = b_start;
            } else if a_start == i as u64 && b_start == j as u64 {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != none {
                emit = true;
            }
        }
        if emit {
            let len = a_end - a_start + 1;
            if min_match_len == 0 || len >= min_match_len {
                matches.push(((a_start, a_end), (b_start, b_end), len));
            }
            a_start = none;
        }
    }
    Ok(Lcs {
        sequence: seq,
        matches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcs_matches_redis_documentation_example() {
        let r = lcs(b"ohmytext", b"mynewtext", 0, u64::MAX).unwrap();
        assert_eq!(r.sequence, b"mytext");
        assert_eq!(r.matches, vec![((4, 7), (5, 8), 4), ((2, 3), (0, 1), 2)]);
        let r = lcs(b"ohmytext", b"mynewtext", 4, u64::MAX).unwrap();
        assert_eq!(r.matches, vec![((4, 7), (5, 8), 4)]);
    }

    #[test]
    fn lcs_refuses_tables_beyond_the_limit() {
        assert_eq!(lcs(b"abc", b"abc", 0, 10), Err(Error::StringTooLong));
    }
}
