//! Consistency check of a data directory (`strata check`): every metadata record must decode,
//! every collection's member count must agree with its metadata, a sorted set's two indexes must
//! agree, and every member record must belong to a live collection (those that do not are
//! orphans, harmless, reclaimed by compaction; so are a list's item records outside its
//! `head..tail`, which pops and trims leave behind). With `repair`, what can be fixed without guessing
//! is fixed: undecodable records are deleted, counts are rewritten from what is stored, empty
//! collections are deleted, a sorted set's score index is rebuilt from its members. A fragmented
//! string's fragments must lie within its length (repair cuts or deletes those that do not).

use std::collections::HashSet;

use rocksdb::{ReadOptions, WriteBatch};

use crate::collection::CollectionMeta;
use crate::db::{now_ms, Db};
use crate::error::Result;
use crate::keys;
use crate::keyspace::prefix_successor;
use crate::meta::{KeyType, Meta};
use crate::storage::{CF_DATA, CF_META, CF_ZSCORE};
use crate::zset::{score_from_value, zscore_sub};

/// One inconsistency [`Db::check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Logical database of the key.
    pub db: u32,
    /// The key (empty for a record whose key does not decode).
    pub key: Vec<u8>,
    /// What is wrong.
    pub what: String,
    /// Whether `repair` fixed it.
    pub repaired: bool,
}

/// The result of [`Db::check`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Live keys checked.
    pub keys: u64,
    /// Collection members checked.
    pub members: u64,
    /// Keys expired but not yet deleted (they read as missing; not a problem).
    pub expired: u64,
    /// Member records of deleted or replaced collections, and list items outside their list's
    /// bounds (popped or trimmed), waiting for compaction (not a problem).
    pub orphan_records: u64,
    /// Inconsistencies found.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// Problems that were found and not repaired.
    pub fn unrepaired(&self) -> usize {
        self.problems.iter().filter(|p| !p.repaired).count()
    }
}

impl Db {
    /// Checks every record of every logical database, calling `progress(keys checked)` now and
    /// then; with `repair`, fixes what is safe to fix (see the module docs) while holding every key
    /// lock. Fails only when the storage itself fails.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// db.hset(b"h", &[(b"a", b"1")])?;
    /// let report = db.check(false, |_| {})?;
    /// assert_eq!((report.keys, report.members, report.problems.len()), (1, 1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self, repair: bool, mut progress: impl FnMut(u64)) -> Result<CheckReport> {
        let _g = repair.then(|| self.inner.locks.lock_all());
        let mut report = CheckReport::default();
        let now = now_ms();
        for index in 0..self.databases() {
            let d = self.select(index)?;
            let phys = d.phys();
            let s = self.storage();
            let mut ro = ReadOptions::default();
            ro.set_prefix_same_as_start(true);
            let mut it = s.raw().raw_iterator_cf_opt(s.cf(CF_META), ro);
            for slot in 0..keys::SLOTS {
                let prefix = [phys, (slot >> 8) as u8, slot as u8];
                it.seek(prefix);
                while it.valid() {
                    let (Some(k), Some(v)) = (it.key(), it.value()) else {
                        break;
                    };
                    if !k.starts_with(&prefix) {
                        break;
                    }
                    let (k, v) = (k.to_vec(), v.to_vec());
                    d.check_key(&k[3..], &v, now, repair, &mut report)?;
                    if report.keys.is_multiple_of(1024) {
                        progress(report.keys);
                    }
                    it.next();
                }
                it.status()?;
            }
        }
        self.count_orphans(repair, &mut report)?;
        progress(report.keys);
        Ok(report)
    }

    /// The fragments of a fragmented string `c` (its `len` is the string's length): each under
    /// an 8-byte fragment number, at most `FRAGMENT_LEN` bytes, none holding bytes past the
    /// string's end (they would show when it grows). Returns how many fragments there are, how
    /// many break those rules, and the batch that deletes or cuts them.
    fn check_fragments(&self, key: &[u8], c: &CollectionMeta) -> Result<(u64, u64, WriteBatch)> {
        const F: u64 = crate::fragment::FRAGMENT_LEN as u64;
        let mut fix = crate::storage::new_batch();
        let (mut found, mut bad) = (0u64, 0u64);
        let cf = self.storage().cf(CF_DATA);
        self.for_each_sub(CF_DATA, key, c, None, |sub, v| {
            found += 1;
            let start = <[u8; 8]>::try_from(sub)
                .ok()
                .map(|b| u64::from_be_bytes(b).saturating_mul(F));
            let keep = match start {
                Some(at) if at < c.len => (c.len - at).min(F) as usize,
                _ => 0,
            };
            if v.len() > keep {
                bad += 1;
                let k = self.sub_key(key, c, sub);
                if keep == 0 {
                    fix.delete_cf(cf, k);
                } else {
                    fix.put_cf(cf, k, &v[..keep]);
                }
            }
            true
        })?;
        Ok((found, bad, fix))
    }

    fn check_key(
        &self,
        key: &[u8],
        raw: &[u8],
        now: u64,
        repair: bool,
        report: &mut CheckReport,
    ) -> Result<()> {
        let mut problem = |what: String, fix: Option<WriteBatch>| -> Result<()> {
            let repaired = match fix {
                Some(b) if repair => {
                    self.write(b)?;
                    true
                }
                _ => false,
            };
            report.problems.push(Problem {
                db: self.index(),
                key: key.to_vec(),
                what,
                repaired,
            });
            Ok(())
        };
        let delete = || {
            let mut b = crate::storage::new_batch();
            self.delete_meta(&mut b, self.phys(), key);
            b
        };
        let m = match Meta::decode(raw) {
            Ok(m) => m,
            Err(e) => return problem(format!("metadata does not decode: {e}"), Some(delete())),
        };
        if m.is_expired(now) {
            report.expired += 1;
            return Ok(());
        }
        report.keys += 1;
        if m.kind == KeyType::String && !m.is_fragmented() {
            return Ok(());
        }
        let mut c = match CollectionMeta::from_meta(m) {
            Ok(c) => c,
            Err(e) => return problem(e.to_string(), Some(delete())),
        };
        if c.kind == KeyType::String {
            let (found, bad, fix) = self.check_fragments(key, &c)?;
            if bad > 0 {
                let what = format!("{bad} string fragments outside the string or too long");
                problem(what, Some(fix))?;
            }
            report.members += found;
            return Ok(());
        }
        let mut found = 0u64;
        let mut garbage = 0u64;
        let mut bad_members = Vec::new();
        let list_bounds = list_bounds(&c);
        let is_stream = c.kind == KeyType::Stream;
        self.for_each_sub(CF_DATA, key, &c, None, |sub, v| {
            // A stream's length counts its entries (tag 1), not its groups and pending lists.
            if is_stream && sub.first() != Some(&1) {
                return true;
            }
            // A list's records outside its bounds are popped or trimmed items: garbage that
            // no read sees and compaction removes (`list.rs`), counted with the orphans.
            if c.kind == KeyType::List
                && !matches!((list_bounds, <[u8; 8]>::try_from(sub)),
                    (Some((h, t)), Ok(b)) if (h..t).contains(&u64::from_be_bytes(b)))
            {
                garbage += 1;
                return true;
            }
            found += 1;
            if c.kind == KeyType::ZSet && v.len() != 8 {
                bad_members.push(sub.to_vec());
            }
            true
        })?;
        report.members += found;
        report.orphan_records += garbage;
        if c.kind == KeyType::List && list_bounds.is_none() {
            return problem("list metadata without valid bounds".into(), None);
        }
        if !bad_members.is_empty() {
            let what = "sorted-set members whose score is not 8 bytes";
            let mut b = crate::storage::new_batch();
            for sub in &bad_members {
                b.delete_cf(self.storage().cf(CF_DATA), self.sub_key(key, &c, sub));
            }
            found -= bad_members.len() as u64;
            // A score that is not 8 bytes cannot be read: dropping it changes nothing a reader
            // could see.
            problem(format!("{} {what}", bad_members.len()), Some(b))?;
        }
        if c.kind == KeyType::ZSet {
            let mut indexed = 0u64;
            self.for_each_sub(CF_ZSCORE, key, &c, None, |_, _| {
                indexed += 1;
                true
            })?;
            if indexed != found {
                let fix = self.rebuild_zscore(key, &c)?;
                problem(
                    format!("score index has {indexed} entries for {found} members"),
                    Some(fix),
                )?;
            }
        }
        let is_list = c.kind == KeyType::List;
        if found != c.len {
            let what = format!("metadata says {} members, found {found}", c.len);
            if is_stream {
                // An empty stream is a stream; its counters cannot be rebuilt from the count.
                problem(what, None)?;
            } else if found == 0 {
                problem(what, Some(delete()))?;
            } else if is_list {
                // A list's bounds define its items; a count that disagrees cannot be fixed by
                // rewriting the count alone.
                problem(what, None)?;
            } else {
                c.len = found;
                let mut b = crate::storage::new_batch();
                self.put_collection(&mut b, key, &c);
                problem(what, Some(b))?;
            }
        }
        Ok(())
    }

    /// A batch that replaces the `zscore` entries of sorted set `c` with ones built from its
    /// `data` records.
    fn rebuild_zscore(&self, key: &[u8], c: &CollectionMeta) -> Result<WriteBatch> {
        let s = self.storage();
        let mut b = crate::storage::new_batch();
        let prefix = keys::data_prefix(self.phys(), key, c.version);
        b.delete_range_cf(s.cf(CF_ZSCORE), &prefix, &prefix_successor(&prefix));
        let mut err = None;
        self.for_each_sub(CF_DATA, key, c, None, |m, v| match score_from_value(v) {
            Ok(score) => {
                b.put_cf(
                    s.cf(CF_ZSCORE),
                    self.sub_key(key, c, &zscore_sub(score, m)),
                    [],
                );
                true
            }
            Err(e) => {
                err = Some(e);
                false
            }
        })?;
        match err {
            Some(e) => Err(e),
            None => Ok(b),
        }
    }

    /// Counts member records that belong to no live collection; with `repair`, deletes records
    /// whose key does not decode.
    fn count_orphans(&self, repair: bool, report: &mut CheckReport) -> Result<()> {
        let s = self.storage();
        let now = now_ms();
        let live_phys: HashSet<u8> = (0..self.databases())
            .map(|i| self.phys_of(i as u8))
            .collect();
        for cf in [CF_DATA, CF_ZSCORE] {
            let mut it = s.raw().raw_iterator_cf(s.cf(cf));
            it.seek_to_first();
            let mut last: Option<(Vec<u8>, bool)> = None;
            let mut fix = crate::storage::new_batch();
            while it.valid() {
                let Some(k) = it.key() else { break };
                match keys::split_data_key(k) {
                    None => {
                        report.problems.push(Problem {
                            db: 0,
                            key: Vec::new(),
                            what: format!(
                                "{cf} record with an undecodable key ({} bytes)",
                                k.len()
                            ),
                            repaired: repair,
                        });
                        fix.delete_cf(s.cf(cf), k);
                    }
                    Some((phys, user, version, sub)) => {
                        let owner_len = k.len() - sub.len();
                        let owner = &k[..owner_len];
                        let alive = match &last {
                            Some((o, alive)) if o.as_slice() == owner => *alive,
                            _ => {
                                let alive = live_phys.contains(&phys)
                                    && match s.get(CF_META, &keys::meta_key(phys, user))? {
                                        Some(raw) => match Meta::decode(&raw) {
                                            Ok(m) => {
                                                !m.is_expired(now)
                                                    && m.owns_sub_keys()
                                                    && m.version() == Some(version)
                                            }
                                            Err(_) => false,
                                        },
                                        None => false,
                                    };
                                last = Some((owner.to_vec(), alive));
                                alive
                            }
                        };
                        if !alive {
                            report.orphan_records += 1;
                        }
                    }
                }
                it.next();
            }
            it.status()?;
            if repair && !fix.is_empty() {
                self.write(fix)?;
            }
        }
        Ok(())
    }
}

/// A list's `(head, tail)` from its metadata, if well formed.
fn list_bounds(c: &CollectionMeta) -> Option<(u64, u64)> {
    if c.kind != KeyType::List || c.extra.len() != 16 {
        return None;
    }
    let h = u64::from_be_bytes(c.extra[..8].try_into().ok()?);
    let t = u64::from_be_bytes(c.extra[8..].try_into().ok()?);
    (h <= t).then_some((h, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_counts_are_reported_then_repaired() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        db.sadd(b"s", &[b"a", b"b", b"c"])?;
        db.zadd(b"z", &[(1.0, b"m".as_slice())], Default::default())?;
        let mut c = db
            .load_collection(b"s", KeyType::Set)?
            .ok_or(crate::Error::NoSuchKey)?;
        c.len = 5;
        let mut b = crate::storage::new_batch();
        db.put_collection(&mut b, b"s", &c);
        // A zset member whose score index entry is missing.
        let z = db
            .load_collection(b"z", KeyType::ZSet)?
            .ok_or(crate::Error::NoSuchKey)?;
        b.delete_cf(
            db.storage().cf(CF_ZSCORE),
            db.sub_key(b"z", &z, &zscore_sub(1.0, b"m")),
        );
        db.write(b)?;
        let report = db.check(false, |_| {})?;
        assert_eq!(report.unrepaired(), 2, "{:?}", report.problems);
        let repaired = db.check(true, |_| {})?;
        assert_eq!(repaired.unrepaired(), 0);
        assert!(db.check(false, |_| {})?.problems.is_empty());
        assert_eq!(db.scard(b"s")?, 3);
        assert_eq!(db.zrank(b"m", b"m", false)?, None);
        assert_eq!(db.zrank(b"z", b"m", false)?, Some(0));
        Ok(())
    }
}
