//! Sets: SADD and friends on `Db`. A set is a collection (metadata `[version][len]`) whose members
//! are `data` sub-keys with empty values, so SISMEMBER is one point read, SCARD is O(1) from the
//! metadata, and SMEMBERS streams the members in bytewise order. Because every set is stored
//! sorted, SUNION is a streaming k-way merge and SINTER/SDIFF stream one set and probe the others.
//! Every write holds the locks of the keys it touches and commits in one batch. Replies keep
//! Redis 7.0's order where that order is deterministic (a set of at most 512 integers is an
//! intset, listed in ascending numeric order). Nothing here knows of RESP.

use std::collections::HashSet;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::glob::glob_match;
use crate::keys;
use crate::keyspace::prefix_successor;
use crate::meta::KeyType;
use crate::num;
use crate::storage::{IterOptions, CF_DATA};

/// Redis 7.0's default `set-max-intset-entries`: up to this many integers a set is an intset.
pub(crate) const SET_MAX_INTSET_ENTRIES: u64 = 512;

/// One page of an SSCAN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetScanPage {
    /// The cursor to pass next; 0 when the iteration is complete.
    pub cursor: u64,
    /// The members of this page that matched the pattern.
    pub members: Vec<Vec<u8>>,
}

/// Orders members the way Redis 7.0 lists a set it holds as an intset (at most 512 members, all
/// integers): ascending numerically. Other sets are left as they are (Redis's own order for them
/// is its hash table's, which nothing can rely on). Returns whether it reordered.
pub(crate) fn intset_order(members: &mut [Vec<u8>]) -> bool {
    if members.len() as u64 > SET_MAX_INTSET_ENTRIES {
        return false;
    }
    let mut numbers = Vec::with_capacity(members.len());
    for m in members.iter() {
        match num::parse_i64(m) {
            Some(n) => numbers.push(n),
            None => return false,
        }
    }
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by_key(|&i| numbers[i]);
    let sorted: Vec<Vec<u8>> = order
        .iter()
        .map(|&i| std::mem::take(&mut members[i]))
        .collect();
    for (slot, m) in members.iter_mut().zip(sorted) {
        *slot = m;
    }
    true
}

/// A streaming cursor over the members of one set version.
struct MemberIter<'a> {
    it: crate::pending::StorageIter<'a>,
    skip: usize,
}

impl MemberIter<'_> {
    fn current(&self) -> Option<&[u8]> {
        if self.it.valid() {
            self.it.key().map(|k| &k[self.skip..])
        } else {
            None
        }
    }
}

/// The set operations of SINTER, SUNION and SDIFF (and their STORE and CARD forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Db {
    /// The live set at `key` for a read command (counted in the keyspace hit/miss statistics).
    fn read_set(&self, key: &[u8]) -> Result<Option<CollectionMeta>> {
        let r = self.load_collection(key, KeyType::Set);
        self.count_lookup(!matches!(r, Ok(None)));
        r
    }

    fn set_contains(&self, key: &[u8], c: &CollectionMeta, member: &[u8]) -> Result<bool> {
        Ok(self
            .storage()
            .with_pinned(CF_DATA, &self.sub_key(key, c, member), |_| ())?
            .is_some())
    }

    fn new_set(&self) -> CollectionMeta {
        CollectionMeta {
            kind: KeyType::Set,
            expire_ms: 0,
            version: self.next_version(),
            len: 0,
            extra: Vec::new(),
        }
    }

    /// SADD: adds the members, creating the set if needed; returns how many were new.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// assert_eq!(db.sadd(b"tags", &[b"red", b"blue", b"red"])?, 2);
    /// assert!(db.sismember(b"tags", b"blue")?);
    /// assert_eq!(db.scard(b"tags")?, 2);
    /// assert_eq!(db.smembers(b"tags")?, vec![b"blue".to_vec(), b"red".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sadd(&self, key: &[u8], members: &[&[u8]]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let mut c = self.load_or_new_collection(key, KeyType::Set)?;
        let (sub_keys, existed) = self.sub_keys_existing(key, &c, members)?;
        let mut batch = crate::storage::new_batch();
        let cf = self.storage().cf(CF_DATA);
        // One member (the usual SADD) cannot repeat: no set of those seen.
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut added = 0;
        for ((m, sub_key), existed) in members.iter().zip(&sub_keys).zip(existed) {
            if !existed && (members.len() == 1 || seen.insert(*m)) {
                batch.put_cf(cf, sub_key, []);
                added += 1;
            }
        }
        if added > 0 {
            c.len += added;
            self.put_collection(&mut batch, key, &c);
            self.write(batch)?;
        }
        Ok(added)
    }

    /// SREM: removes the members; returns how many were there. The key goes away with its last
    /// member.
    pub fn srem(&self, key: &[u8], members: &[&[u8]]) -> Result<u64> {
        self.remove_members(key, KeyType::Set, members)
    }

    /// SISMEMBER.
    pub fn sismember(&self, key: &[u8], member: &[u8]) -> Result<bool> {
        match self.read_set(key)? {
            Some(c) => self.set_contains(key, &c, member),
            None => Ok(false),
        }
    }

    /// SMISMEMBER: membership of each of `members`.
    pub fn smismember(&self, key: &[u8], members: &[&[u8]]) -> Result<Vec<bool>> {
        let Some(c) = self.read_set(key)? else {
            return Ok(vec![false; members.len()]);
        };
        self.subs_exist(key, &c, members)
    }

    /// SCARD: the number of members, O(1).
    pub fn scard(&self, key: &[u8]) -> Result<u64> {
        Ok(self.read_set(key)?.map_or(0, |c| c.len))
    }

    /// SMEMBERS: every member (in ascending numeric order for a small set of integers, as Redis
    /// lists an intset; otherwise bytewise).
    pub fn smembers(&self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        if let Some(c) = self.read_set(key)? {
            out.reserve(c.len.min(1 << 20) as usize);
            self.for_each_sub(CF_DATA, key, &c, None, |m, _| {
                out.push(m.to_vec());
                true
            })?;
        }
        intset_order(&mut out);
        Ok(out)
    }

    /// Streams the members of the set at `key` in bytewise order (nothing if missing), one member
    /// in memory at a time.
    pub fn set_each(&self, key: &[u8], mut f: impl FnMut(&[u8])) -> Result<()> {
        let Some(c) = self.read_set(key)? else {
            return Ok(());
        };
        self.for_each_sub(CF_DATA, key, &c, None, |m, _| {
            f(m);
            true
        })
    }

    /// SRANDMEMBER without a count: one random member, `None` when the key is missing.
    pub fn srandmember(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(c) = self.read_set(key)? else {
            return Ok(None);
        };
        Ok(self
            .random_entries(key, &c, 1, false)?
            .into_iter()
            .next()
            .map(|(m, _)| m))
    }

    /// SRANDMEMBER with a count: a positive `count` gives up to `count` distinct members (the
    /// whole set when `count` reaches its size), a negative one exactly `-count` members that may
    /// repeat. Empty when the key is missing. A negative count beyond 2^27 fails with
    /// [`Error::NotInteger`] (the reply would not fit in memory).
    pub fn srandmember_count(&self, key: &[u8], count: i64) -> Result<Vec<Vec<u8>>> {
        let Some(c) = self.read_set(key)? else {
            return Ok(Vec::new());
        };
        if count < 0 && count.unsigned_abs() > crate::zset::MAX_RANDOM_REPEATS {
            return Err(Error::NotInteger);
        }
        let mut out: Vec<Vec<u8>> = self
            .random_entries(key, &c, count.unsigned_abs(), count > 0)?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        if count > 0 && count as u64 >= c.len {
            intset_order(&mut out);
        }
        Ok(out)
    }

    /// SPOP without a count: removes and returns one random member.
    pub fn spop(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.spop_count(key, 1)?.pop())
    }

    /// SPOP with a count: removes and returns up to `count` distinct random members (all of
    /// them, deleting the key, when `count` reaches the set's size).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// db.sadd(b"s", &[b"a", b"b", b"c"])?;
    /// assert_eq!(db.spop_count(b"s", 2)?.len(), 2);
    /// assert_eq!(db.scard(b"s")?, 1);
    /// assert_eq!(db.spop_count(b"s", 5)?.len(), 1);
    /// assert!(!db.exists(b"s")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spop_count(&self, key: &[u8], count: u64) -> Result<Vec<Vec<u8>>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut c) = self.load_collection(key, KeyType::Set)? else {
            return Ok(Vec::new());
        };
        if count == 0 {
            return Ok(Vec::new());
        }
        let picked = self.random_entries(key, &c, count, true)?;
        let mut batch = crate::storage::new_batch();
        let cf = self.storage().cf(CF_DATA);
        let mut out = Vec::with_capacity(picked.len());
        for (m, _) in picked {
            batch.delete_cf(cf, self.sub_key(key, &c, &m));
            out.push(m);
        }
        let whole = count >= c.len;
        c.len = if whole {
            0
        } else {
            c.len.saturating_sub(out.len() as u64)
        };
        self.put_collection(&mut batch, key, &c);
        self.write(batch)?;
        if whole {
            intset_order(&mut out);
        }
        Ok(out)
    }

    /// SMOVE: moves `member` from set `src` to set `dst`; returns whether `src` had it. A missing
    /// `src` answers false whatever `dst` holds; otherwise both must be sets.
    pub fn smove(&self, src: &[u8], dst: &[u8], member: &[u8]) -> Result<bool> {
        let _g = self
            .inner
            .locks
            .lock([(self.index, src), (self.index, dst)]);
        let Some(mut from) = self.load_collection(src, KeyType::Set)? else {
            return Ok(false);
        };
        let to = self.load_collection(dst, KeyType::Set)?;
        if src == dst {
            return self.set_contains(src, &from, member);
        }
        if !self.set_contains(src, &from, member)? {
            return Ok(false);
        }
        let cf = self.storage().cf(CF_DATA);
        let mut batch = crate::storage::new_batch();
        batch.delete_cf(cf, self.sub_key(src, &from, member));
        from.len = from.len.saturating_sub(1);
        self.put_collection(&mut batch, src, &from);
        let mut to = match to {
            Some(c) => c,
            None => self.new_set(),
        };
        if to.len == 0 || !self.set_contains(dst, &to, member)? {
            batch.put_cf(cf, self.sub_key(dst, &to, member), []);
            to.len += 1;
            self.put_collection(&mut batch, dst, &to);
        }
        self.write(batch)?;
        Ok(true)
    }

    /// SINTER: the members common to all the sets (a missing key is an empty set, so the result
    /// is empty; every key must still hold a set or be missing).
    pub fn sinter(&self, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.setop_collect(Op::Inter, keys)
    }

    /// SINTERCARD: the size of the intersection, counting stops at `limit` (0 = no limit).
    pub fn sintercard(&self, keys: &[&[u8]], limit: u64) -> Result<u64> {
        let sources = self.set_sources(keys, true)?;
        let mut n = 0u64;
        self.setop_each(Op::Inter, keys, &sources, |_| {
            n += 1;
            limit == 0 || n < limit
        })?;
        Ok(n)
    }

    /// SUNION: the members of any of the sets.
    pub fn sunion(&self, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.setop_collect(Op::Union, keys)
    }

    /// SDIFF: the members of the first set that are in none of the others.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// db.sadd(b"a", &[b"x", b"y", b"z"])?;
    /// db.sadd(b"b", &[b"y"])?;
    /// assert_eq!(db.sdiff(&[b"a", b"b", b"missing"])?, vec![b"x".to_vec(), b"z".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sdiff(&self, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        self.setop_collect(Op::Diff, keys)
    }

    /// SINTERSTORE: stores the intersection at `dst` (replacing whatever it held, TTL included;
    /// an empty result deletes `dst`) and returns its size.
    pub fn sinterstore(&self, dst: &[u8], keys: &[&[u8]]) -> Result<u64> {
        self.setop_store(Op::Inter, dst, keys)
    }

    /// SUNIONSTORE: as [`Db::sinterstore`] for the union.
    pub fn sunionstore(&self, dst: &[u8], keys: &[&[u8]]) -> Result<u64> {
        self.setop_store(Op::Union, dst, keys)
    }

    /// SDIFFSTORE: as [`Db::sinterstore`] for the difference.
    pub fn sdiffstore(&self, dst: &[u8], keys: &[&[u8]]) -> Result<u64> {
        self.setop_store(Op::Diff, dst, keys)
    }

    /// SSCAN: a page of members after `cursor` that match the glob `pattern` (`None` matches
    /// all). A set Redis would keep as an intset (up to 512 integers) comes back whole in one
    /// page in numeric order, as Redis does; other sets in pages of about `count` members.
    pub fn sscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<SetScanPage> {
        let mut page = SetScanPage {
            cursor: 0,
            members: Vec::new(),
        };
        let Some(c) = self.read_set(key)? else {
            return Ok(page);
        };
        let matches = |m: &[u8]| pattern.is_none_or(|p| glob_match(p, m, false));
        if c.len <= SET_MAX_INTSET_ENTRIES {
            let mut all: Vec<Vec<u8>> = self
                .all_entries(key, &c)?
                .into_iter()
                .map(|(m, _)| m)
                .collect();
            if intset_order(&mut all) {
                page.members = all.into_iter().filter(|m| matches(m.as_slice())).collect();
                return Ok(page);
            }
        }
        page.cursor = self.scan_entries(key, &c, cursor, count, |m, _| {
            if matches(m) {
                page.members.push(m.to_vec());
            }
        })?;
        Ok(page)
    }

    /// OBJECT ENCODING of a set by Redis 7.0's default rules: `intset` for up to 512 members that
    /// are all integers, else `hashtable`. Reads at most 512 members.
    pub(crate) fn set_encoding(&self, key: &[u8]) -> Result<&'static str> {
        let Some(c) = self.load_collection(key, KeyType::Set)? else {
            return Ok("hashtable");
        };
        if c.len > SET_MAX_INTSET_ENTRIES {
            return Ok("hashtable");
        }
        let mut ints = true;
        self.for_each_sub(CF_DATA, key, &c, None, |m, _| {
            ints = num::parse_i64(m).is_some();
            ints
        })?;
        Ok(if ints { "intset" } else { "hashtable" })
    }

    // ----- set algebra -----

    /// The sets named by `keys` (None for a missing key). Every key is checked, so a key of
    /// another type fails with WRONGTYPE even after a missing one (as Redis 7 does).
    fn set_sources(&self, keys: &[&[u8]], read: bool) -> Result<Vec<Option<CollectionMeta>>> {
        keys.iter()
            .map(|k| {
                if read {
                    self.read_set(k)
                } else {
                    self.load_collection(k, KeyType::Set)
                }
            })
            .collect()
    }

    fn setop_collect(&self, op: Op, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        let sources = self.set_sources(keys, true)?;
        let mut out = Vec::new();
        self.setop_each(op, keys, &sources, |m| {
            out.push(m.to_vec());
            true
        })?;
        intset_order(&mut out);
        Ok(out)
    }

    fn setop_store(&self, op: Op, dst: &[u8], keys: &[&[u8]]) -> Result<u64> {
        let _g = self.inner.locks.lock(
            keys.iter()
                .map(|k| (self.index, *k))
                .chain(std::iter::once((self.index, dst))),
        );
        let sources = self.set_sources(keys, false)?;
        let mut out = self.new_set();
        let cf = self.storage().cf(CF_DATA);
        let mut batch = crate::storage::new_batch();
        self.setop_each(op, keys, &sources, |m| {
            batch.put_cf(cf, self.sub_key(dst, &out, m), []);
            out.len += 1;
            true
        })?;
        if out.len == 0 {
            if self.live_raw(dst)?.is_none() {
                return Ok(0);
            }
            // An empty result deletes the destination (and the batch holds no members).
            batch = crate::storage::new_batch();
        }
        self.put_collection(&mut batch, dst, &out);
        self.write(batch)?;
        Ok(out.len)
    }

    /// Streams the result of `op` over `sources` (sorted bytewise for unions and in the order of
    /// the set being probed otherwise), calling `f` until it returns false.
    fn setop_each(
        &self,
        op: Op,
        keys: &[&[u8]],
        sources: &[Option<CollectionMeta>],
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        match op {
            Op::Union => self.union_each(keys, sources, f),
            Op::Inter => {
                if sources.iter().any(|s| s.is_none()) {
                    return Ok(());
                }
                let mut order: Vec<usize> = (0..keys.len()).collect();
                order.sort_by_key(|&i| sources[i].as_ref().map_or(0, |c| c.len));
                let Some((&first, rest)) = order.split_first() else {
                    return Ok(());
                };
                self.probe_each(keys[first], sources[first].as_ref(), |m| {
                    for &i in rest {
                        if let Some(c) = &sources[i] {
                            if !self.set_contains(keys[i], c, m)? {
                                return Ok(true);
                            }
                        }
                    }
                    Ok(f(m))
                })
            }
            Op::Diff => {
                let Some(first) = sources.first() else {
                    return Ok(());
                };
                self.probe_each(keys[0], first.as_ref(), |m| {
                    for (i, s) in sources.iter().enumerate().skip(1) {
                        if let Some(c) = s {
                            if self.set_contains(keys[i], c, m)? {
                                return Ok(true);
                            }
                        }
                    }
                    Ok(f(m))
                })
            }
        }
    }

    /// Streams the members of one set (nothing if missing) through a fallible visitor.
    fn probe_each(
        &self,
        key: &[u8],
        c: Option<&CollectionMeta>,
        mut f: impl FnMut(&[u8]) -> Result<bool>,
    ) -> Result<()> {
        let Some(c) = c else {
            return Ok(());
        };
        let mut failure = None;
        self.for_each_sub(CF_DATA, key, c, None, |m, _| match f(m) {
            Ok(go_on) => go_on,
            Err(e) => {
                failure = Some(e);
                false
            }
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// The union as a k-way merge of the sets' sorted members: each member once, in bytewise
    /// order, with one entry per set in memory.
    fn union_each(
        &self,
        keys: &[&[u8]],
        sources: &[Option<CollectionMeta>],
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        let s = self.storage();
        let mut iters: Vec<MemberIter<'_>> = Vec::new();
        for (key, c) in keys.iter().zip(sources) {
            let Some(c) = c else { continue };
            let prefix = keys::data_prefix(self.phys(), key, c.version);
            let ro = IterOptions {
                upper: Some(prefix_successor(&prefix)),
                ..IterOptions::default()
            };
            let mut it = s.iter(CF_DATA, ro);
            it.seek(&prefix);
            iters.push(MemberIter {
                it,
                skip: prefix.len(),
            });
        }
        while let Some(min) = iters
            .iter()
            .filter_map(|i| i.current())
            .min()
            .map(<[u8]>::to_vec)
        {
            if !f(&min) {
                break;
            }
            for i in iters.iter_mut() {
                if i.current() == Some(min.as_slice()) {
                    i.it.next();
                }
            }
        }
        for i in &iters {
            i.it.status()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::db::{Db, Options};

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    /// A database with the write-back tier and a hot-record cache (as the server runs), or
    /// without either (every write goes to RocksDB).
    fn open(dir: &std::path::Path, tier: bool) -> crate::error::Result<Db> {
        Db::open_with(
            dir,
            Options {
                write_back: tier.then_some(1 << 20),
                hot_cache_size: if tier { 1 << 20 } else { 0 },
                ..Options::default()
            },
        )
    }

    /// SADD and SREM of one member (the point read of a single key, the data key built once and
    /// no set of members seen) count a member wherever it lies: in the tier's active layer, in
    /// the hot-record cache after a checkpoint handed it over, or only in RocksDB (without the
    /// tier, or after a reopen emptied the cache).
    #[test]
    fn sadd_and_srem_of_one_member_count_members_in_layers_cache_and_rocksdb() -> R {
        for tier in [true, false] {
            let dir = tempfile::tempdir()?;
            let db = open(dir.path(), tier)?;
            let members: Vec<Vec<u8>> = (0..300).map(|i| format!("m:{i}").into_bytes()).collect();
            for m in &members[..200] {
                assert_eq!(db.sadd(b"s", &[m.as_slice()])?, 1);
                assert_eq!(db.sadd(b"s", &[m.as_slice()])?, 0, "in the active layer");
            }
            if tier {
                db.storage().checkpoint_tier()?;
            }
            for m in &members[..200] {
                assert_eq!(db.sadd(b"s", &[m.as_slice()])?, 0, "after the checkpoint");
            }
            drop(db);
            let db = open(dir.path(), tier)?;
            for (i, m) in members.iter().enumerate() {
                let new = u64::from(i >= 200);
                assert_eq!(db.sadd(b"s", &[m.as_slice()])?, new, "after a reopen");
            }
            assert_eq!(db.scard(b"s")?, 300);
            for m in &members[..100] {
                assert_eq!(db.srem(b"s", &[m.as_slice()])?, 1);
                assert_eq!(db.srem(b"s", &[m.as_slice()])?, 0);
            }
            assert_eq!(db.scard(b"s")?, 200);
            assert!(!db.sismember(b"s", &members[0])?);
            assert!(db.sismember(b"s", &members[299])?);
        }
        Ok(())
    }

    /// Several members in one SADD or SREM still count a repeated member once, new or not.
    #[test]
    fn sadd_and_srem_of_several_members_count_a_repeated_member_once() -> R {
        let dir = tempfile::tempdir()?;
        let db = open(dir.path(), true)?;
        assert_eq!(db.sadd(b"s", &[b"a", b"b", b"a", b"b", b"c"])?, 3);
        assert_eq!(db.sadd(b"s", &[b"a", b"d", b"d"])?, 1);
        assert_eq!(db.scard(b"s")?, 4);
        assert_eq!(db.srem(b"s", &[b"a", b"a", b"x", b"d"])?, 2);
        assert_eq!(db.scard(b"s")?, 2);
        assert_eq!(db.srem(b"s", &[b"b", b"c", b"b"])?, 2);
        assert_eq!(db.scard(b"s")?, 0);
        assert!(!db.exists(b"s")?);
        Ok(())
    }
}
