//! SORT and SORT_RO on `Db`, with Redis 7.0's semantics: the elements of a list, set or sorted set
//! sorted numerically (or bytewise with ALPHA), optionally by the values of other keys (BY pattern,
//! `*` replaced by the element, `->field` reading a hash field, a pattern without `*` such as
//! `nosort` skipping the sort), cut by LIMIT, and projected through GET patterns (`#` is the
//! element itself). The result is returned, or stored at a destination as a list (STORE).
//!
//! The members are read with the type modules' own functions (`lrange`, `smembers`, `zrange`) and
//! the BY/GET lookups go through `get`/`hget`, so a pattern that names a missing key or a key of
//! another type reads as missing, as in Redis. A stored result is written as a fresh list version
//! in one batch under the destination's lock (the list layout is in `docs/format.md`). The sort
//! itself runs in memory over the whole collection, as Redis's does. Knows nothing of RESP.

use std::cmp::Ordering;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::meta::KeyType;
use crate::storage::CF_DATA;
use crate::zset::{ZRangeBy, ZRangeSpec};

/// Absolute index of a new list's first item (see `list.rs`).
const LIST_START: u64 = 1 << 63;

/// Options of [`Db::sort`] and [`Db::sort_store`], one field per SORT option.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortOptions {
    /// BY pattern: sort by the value of the key named by the pattern with its first `*` replaced by
    /// the element (`key*->field` reads a hash field). A pattern without `*` (`nosort`) keeps the
    /// collection's own order.
    pub by: Option<Vec<u8>>,
    /// GET patterns, in order: each element is replaced by the value of each pattern's key (`#`
    /// is the element itself); a missing key gives `None`.
    pub get: Vec<Vec<u8>>,
    /// LIMIT offset count: a negative offset counts as 0, a negative count means "to the end".
    pub limit: Option<(i64, i64)>,
    /// DESC.
    pub desc: bool,
    /// ALPHA: compare bytewise instead of as numbers.
    pub alpha: bool,
}

/// One element being sorted with its sort key.
struct Item {
    elem: Vec<u8>,
    score: f64,
    /// ALPHA with BY: the looked-up value (`None` sorts first).
    cmp: Option<Vec<u8>>,
}

impl Db {
    /// SORT / SORT_RO without STORE: the sorted elements of the list, set or sorted set at `key`
    /// (empty when the key is missing), after LIMIT; with GET patterns, the looked-up values, one
    /// per pattern per element, `None` where a key is missing. Fails with [`Error::WrongType`] if
    /// the key holds a string or hash, and with [`Error::NotFloat`] when a numeric sort meets a
    /// value that is not a number (Redis's "One or more scores can't be converted into double").
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{SetOptions, SortOptions};
    /// let db = strata::Db::open(dir.path())?;
    /// db.rpush(b"ids", &[b"3", b"1", b"2"])?;
    /// for (id, w) in [("1", "30"), ("2", "10"), ("3", "20")] {
    ///     db.set(format!("weight_{id}").as_bytes(), w.as_bytes(), SetOptions::default())?;
    ///     db.hset(format!("user:{id}").as_bytes(), &[(b"name", format!("u{id}").as_bytes())])?;
    /// }
    /// let opts = SortOptions {
    ///     by: Some(b"weight_*".to_vec()),
    ///     get: vec![b"#".to_vec(), b"user:*->name".to_vec()],
    ///     desc: true,
    ///     ..Default::default()
    /// };
    /// let got: Vec<Option<Vec<u8>>> = db.sort(b"ids", &opts)?;
    /// let want: Vec<Option<Vec<u8>>> = ["1", "u1", "3", "u3", "2", "u2"]
    ///     .iter().map(|s| Some(s.as_bytes().to_vec())).collect();
    /// assert_eq!(got, want);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sort(&self, key: &[u8], opts: &SortOptions) -> Result<Vec<Option<Vec<u8>>>> {
        let elems = self.sort_elements(key, opts, false)?;
        if opts.get.is_empty() {
            return Ok(elems.into_iter().map(Some).collect());
        }
        let mut out = Vec::with_capacity(elems.len() * opts.get.len());
        for e in &elems {
            for p in &opts.get {
                out.push(self.sort_lookup(p, e)?);
            }
        }
        Ok(out)
    }

    /// SORT ... STORE `dst`: sorts as [`Db::sort`] and stores the result at `dst` as a list
    /// (replacing whatever `dst` held, TTL included; a missing GET value is stored as an empty
    /// string; an empty result deletes `dst`). Returns the number of items stored. A set sorted
    /// with a BY pattern without `*` is sorted bytewise, so the stored list is deterministic.
    pub fn sort_store(&self, key: &[u8], dst: &[u8], opts: &SortOptions) -> Result<u64> {
        let elems = self.sort_elements(key, opts, true)?;
        let mut values = Vec::with_capacity(elems.len() * opts.get.len().max(1));
        if opts.get.is_empty() {
            values = elems;
        } else {
            for e in &elems {
                for p in &opts.get {
                    values.push(self.sort_lookup(p, e)?.unwrap_or_default());
                }
            }
        }
        let _g = self.inner.locks.lock_one(self.index, dst);
        let n = values.len() as u64;
        if n == 0 {
            if self.live_raw(dst)?.is_some() {
                let mut batch = crate::storage::new_batch();
                self.delete_meta(&mut batch, self.phys(), dst);
                self.write(batch)?;
            }
            return Ok(0);
        }
        let mut extra = Vec::with_capacity(16);
        extra.extend_from_slice(&LIST_START.to_be_bytes());
        extra.extend_from_slice(&(LIST_START + n).to_be_bytes());
        let c = CollectionMeta {
            kind: KeyType::List,
            expire_ms: 0,
            version: self.next_version(),
            len: n,
            extra,
        };
        let mut batch = crate::storage::new_batch();
        let cf = self.storage().cf(CF_DATA);
        for (i, v) in values.iter().enumerate() {
            let at = LIST_START + i as u64;
            batch.put_cf(cf, self.sub_key(dst, &c, &at.to_be_bytes()), v);
        }
        self.put_collection(&mut batch, dst, &c);
        self.write(batch)?;
        Ok(n)
    }

    /// The elements of `key` selected and ordered by `opts` (LIMIT applied, GET not).
    fn sort_elements(&self, key: &[u8], opts: &SortOptions, store: bool) -> Result<Vec<Vec<u8>>> {
        let kind = match self.key_type(key)? {
            None => None,
            Some(k @ (KeyType::List | KeyType::Set | KeyType::ZSet)) => Some(k),
            Some(_) => return Err(Error::WrongType),
        };
        let mut by = opts.by.as_deref();
        let mut alpha = opts.alpha;
        let desc = opts.desc;
        let mut dontsort = by.is_some_and(|p| !cstr(p).contains(&b'*'));
        // A set has no order of its own: sort it when the result is stored.
        if dontsort && kind == Some(KeyType::Set) && store {
            dontsort = false;
            alpha = true;
            by = None;
        }
        let len = match kind {
            Some(KeyType::List) => self.llen(key)?,
            Some(KeyType::Set) => self.scard(key)?,
            Some(KeyType::ZSet) => self.zcard(key)?,
            _ => 0,
        } as i128;
        let (limit_start, limit_count) = opts.limit.unwrap_or((0, -1));
        let mut start: i128 = limit_start.max(0) as i128;
        let mut end: i128 = if limit_count < 0 {
            len - 1
        } else {
            start + limit_count as i128 - 1
        };
        if start >= len {
            start = len - 1;
            end = len - 2;
        }
        if end >= len {
            end = len - 1;
        }
        if end < start {
            return Ok(Vec::new());
        }
        // `start..=end` is a valid, non-empty range of `0..len` from here on.
        let ranged = |elems: Vec<Vec<u8>>| -> Vec<Vec<u8>> {
            elems
                .into_iter()
                .skip(start as usize)
                .take((end - start + 1) as usize)
                .collect()
        };
        let elems = match kind {
            Some(KeyType::List) if dontsort => {
                let (a, b) = if desc {
                    (len - 1 - end, len - 1 - start)
                } else {
                    (start, end)
                };
                let mut v = self.lrange(key, a as i64, b as i64)?;
                if desc {
                    v.reverse();
                }
                return Ok(v);
            }
            Some(KeyType::ZSet) if dontsort => {
                let spec = ZRangeSpec {
                    by: ZRangeBy::Rank(start as i64, end as i64),
                    rev: desc,
                    limit: None,
                };
                return Ok(self
                    .zrange(key, &spec)?
                    .into_iter()
                    .map(|(m, _)| m)
                    .collect());
            }
            Some(KeyType::List) => self.lrange(key, 0, -1)?,
            Some(KeyType::Set) => self.smembers(key)?,
            Some(KeyType::ZSet) => self
                .zrange(key, &ZRangeSpec::rank(0, -1))?
                .into_iter()
                .map(|(m, _)| m)
                .collect(),
            _ => Vec::new(),
        };
        if dontsort {
            // A set in its own (intset or bytewise) order; DESC does not apply.
            return Ok(ranged(elems));
        }
        let mut items = Vec::with_capacity(elems.len());
        let mut bad_score = false;
        for elem in elems {
            let mut item = Item {
                elem,
                score: 0.0,
                cmp: None,
            };
            let byval = match by {
                Some(p) => self.sort_lookup(p, &item.elem)?,
                None => None,
            };
            if alpha {
                item.cmp = byval;
            } else {
                let v = match (by, &byval) {
                    (Some(_), None) => None,
                    (Some(_), Some(v)) => Some(v.as_slice()),
                    (None, _) => Some(item.elem.as_slice()),
                };
                if let Some(v) = v {
                    match strtod_whole(v) {
                        Some(s) => item.score = s,
                        None => bad_score = true,
                    }
                }
            }
            items.push(item);
        }
        let by_pattern = by.is_some();
        items.sort_by(|a, b| {
            let c = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .filter(|o| *o != Ordering::Equal)
                    .unwrap_or_else(|| a.elem.cmp(&b.elem))
            } else if by_pattern {
                match (&a.cmp, &b.cmp) {
                    (Some(x), Some(y)) => collate(x, y, store),
                    (x, y) => x.is_some().cmp(&y.is_some()),
                }
            } else {
                collate(&a.elem, &b.elem, store)
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        });
        if bad_score {
            return Err(Error::NotFloat);
        }
        Ok(ranged(items.into_iter().map(|i| i.elem).collect()))
    }

    /// Redis's lookupKeyByPattern: the value named by `pattern` for element `subst` (`#` is the
    /// element; no `*` means nothing; `->field` after the `*` reads a hash field). A missing key,
    /// field, or a key of the wrong type reads as `None`.
    fn sort_lookup(&self, pattern: &[u8], subst: &[u8]) -> Result<Option<Vec<u8>>> {
        let c = cstr(pattern);
        if c == b"#" {
            return Ok(Some(subst.to_vec()));
        }
        let Some(star) = c.iter().position(|&b| b == b'*') else {
            return Ok(None);
        };
        // "->" after the star, followed by at least one byte: a hash field (the rest of the pattern).
        let field = c[star + 1..]
            .windows(2)
            .position(|w| w == b"->")
            .map(|i| star + 1 + i)
            .filter(|&f| f + 2 < c.len());
        let postfix_end = field.unwrap_or(pattern.len());
        let mut key = Vec::with_capacity(pattern.len() + subst.len());
        key.extend_from_slice(&pattern[..star]);
        key.extend_from_slice(subst);
        key.extend_from_slice(&pattern[star + 1..postfix_end]);
        let found = match field {
            Some(f) => self.hget(&key, &pattern[f + 2..]),
            None => self.get(&key),
        };
        match found {
            Err(Error::WrongType) => Ok(None),
            other => other,
        }
    }
}

/// ALPHA order: Redis compares with `strcoll` (the C locale's byte order, up to the first NUL)
/// when replying, and bytewise over the whole value when storing.
fn collate(a: &[u8], b: &[u8], store: bool) -> Ordering {
    if store {
        a.cmp(b)
    } else {
        cstr(a).cmp(cstr(b))
    }
}

/// The part of `b` a C string function sees: up to the first NUL.
fn cstr(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(i) => &b[..i],
        None => b,
    }
}

/// C's `strtod` as SORT uses it: the whole (NUL-terminated) input must convert, without overflow
/// or underflow, to a number that is not NaN. Leading whitespace, hex floats and `inf` are
/// accepted; the empty string is 0.
fn strtod_whole(input: &[u8]) -> Option<f64> {
    let s = cstr(input);
    if s.is_empty() {
        return Some(0.0);
    }
    let (v, used, range_error) = crate::num::strtod(s);
    (used == s.len() && !range_error && !v.is_nan()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::strtod_whole;

    #[test]
    fn strtod_like_c() {
        assert_eq!(strtod_whole(b""), Some(0.0));
        assert_eq!(strtod_whole(b" 12"), Some(12.0));
        assert_eq!(strtod_whole(b"12 "), None);
        assert_eq!(strtod_whole(b"  "), None);
        assert_eq!(strtod_whole(b"-1.5e3"), Some(-1500.0));
        assert_eq!(strtod_whole(b"1e"), None);
        assert_eq!(strtod_whole(b".5"), Some(0.5));
        assert_eq!(strtod_whole(b"5."), Some(5.0));
        assert_eq!(strtod_whole(b"."), None);
        assert_eq!(strtod_whole(b"0x1A"), Some(26.0));
        assert_eq!(strtod_whole(b"0x1p4"), Some(16.0));
        assert_eq!(strtod_whole(b"0x"), None);
        assert_eq!(strtod_whole(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(strtod_whole(b"Infinity"), Some(f64::INFINITY));
        assert_eq!(strtod_whole(b"infin"), None);
        assert_eq!(strtod_whole(b"nan"), None);
        assert_eq!(strtod_whole(b"1e400"), None);
        assert_eq!(strtod_whole(b"1e-400"), None);
        assert_eq!(strtod_whole(b"0e-400"), Some(0.0));
        assert_eq!(strtod_whole(b"3\0junk"), Some(3.0));
        assert_eq!(strtod_whole(b"abc"), None);
    }
}
