//! Operations on keys of any type: existence, deletion, TTLs, renaming, copying and moving between
//! databases, iteration (KEYS, SCAN, RANDOMKEY, DBSIZE) and whole-database operations (FLUSHDB,
//! FLUSHALL, SWAPDB). Type-specific reads and writes live in the type modules.

use std::collections::{HashMap, VecDeque};

use rocksdb::WriteBatch;

use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::glob::glob_match;
use crate::keys;
use crate::meta::{self, KeyType, Meta, HEADER_LEN};
use crate::num;
use crate::storage::{IterOptions, CF_DATA, CF_EXPIRE, CF_META, CF_ZSCORE};

/// A count of one database's live keys, true while its metadata generation is `generation`
/// (see `Storage::meta_generation`) and the clock is before `first_deadline`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyCount {
    generation: u64,
    keys: u64,
    expires: u64,
    /// The sum of the expiry deadlines (ms) of the keys that have one.
    deadline_sum: u128,
    /// The earliest of those deadlines (`u64::MAX`: none).
    first_deadline: u64,
}

/// The time to live of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// The key does not exist.
    Missing,
    /// The key exists and does not expire.
    Persistent,
    /// The key expires at this Unix time in milliseconds.
    ExpiresAt(u64),
}

/// Condition of EXPIRE and friends (Redis 7's NX/XX/GT/LT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExpireCondition {
    /// Always set.
    #[default]
    Always,
    /// Only if the key has no expiry.
    IfNone,
    /// Only if the key has an expiry.
    IfSome,
    /// Only if the new expiry is later (a key without expiry counts as infinitely late).
    IfGreater,
    /// Only if the new expiry is earlier.
    IfLess,
}

/// Where a cursor resumes: (logical db, collection key or None for SCAN, last position returned).
type CursorPosition = (u8, Option<Vec<u8>>, Vec<u8>);

/// Server-side cursors of SCAN and of the collection scans (HSCAN, SSCAN, ZSCAN): RocksDB iterates
/// in key order, so a cursor remembers the last key (or, for a collection, the last sub-key of
/// which key) a page returned. Clients see a number; the table maps it to the position. Bounded:
/// the oldest cursors are forgotten (a forgotten cursor restarts the iteration). One table serves
/// every kind of scan; a cursor only resumes the scan of the same database and collection key.
#[derive(Default)]
pub struct CursorTable {
    next_id: u64,
    positions: HashMap<u64, CursorPosition>,
    order: VecDeque<u64>,
}

const MAX_CURSORS: usize = 65536;

impl CursorTable {
    fn remember(&mut self, db: u8, last: Vec<u8>) -> u64 {
        self.remember_in(db, None, last)
    }

    fn position(&self, id: u64, db: u8) -> Option<Vec<u8>> {
        self.position_in(id, db, None)
    }

    /// Stores a position of a scan of collection `owner` (None: the keyspace) and returns its cursor.
    pub(crate) fn remember_in(&mut self, db: u8, owner: Option<&[u8]>, last: Vec<u8>) -> u64 {
        if self.next_id == 0 {
            // Start somewhere unpredictable so cursors of a previous run are unlikely to collide.
            self.next_id = (now_ms() % 1_000_000_007) * 7919 + 1;
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.positions
            .insert(id, (db, owner.map(|o| o.to_vec()), last));
        self.order.push_back(id);
        while self.order.len() > MAX_CURSORS {
            if let Some(old) = self.order.pop_front() {
                self.positions.remove(&old);
            }
        }
        id
    }

    /// The position of cursor `id` if it belongs to a scan of `owner` in database `db`.
    pub(crate) fn position_in(&self, id: u64, db: u8, owner: Option<&[u8]>) -> Option<Vec<u8>> {
        match self.positions.get(&id) {
            Some((d, o, k)) if *d == db && o.as_deref() == owner => Some(k.clone()),
            _ => None,
        }
    }
}

/// One page of a SCAN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanPage {
    /// The cursor to pass next; 0 when the iteration is complete.
    pub cursor: u64,
    /// The keys of this page.
    pub keys: Vec<Vec<u8>>,
}

impl Db {
    /// Remembers the last sub-key a collection scan (HSCAN/SSCAN/ZSCAN) of `key` returned and
    /// returns the cursor number to give the client.
    pub(crate) fn scan_cursor_remember(&self, key: &[u8], last_sub: Vec<u8>) -> u64 {
        let mut table = match self.inner.cursors.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        table.remember_in(self.index, Some(key), last_sub)
    }

    /// The last sub-key returned under collection-scan `cursor` of `key`; None if the cursor is
    /// unknown, forgotten or of another scan (the scan then starts over).
    pub(crate) fn scan_cursor_position(&self, cursor: u64, key: &[u8]) -> Option<Vec<u8>> {
        let table = match self.inner.cursors.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        table.position_in(cursor, self.index, Some(key))
    }

    /// Walks the live keys of this database in storage order starting after `after` (or from the
    /// beginning), calling `f(key, type, expire_ms)` until it returns false. Returns the last key
    /// visited. The `meta` family is hashed by `[db][slot]` prefix (see storage.rs), so the walk
    /// seeks slot by slot, each within its prefix.
    pub(crate) fn walk(
        &self,
        after: Option<&[u8]>,
        mut f: impl FnMut(&[u8], KeyType, u64) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        self.walk_raw(after, |k, t, exp, _| f(k, t, exp))
    }

    /// Like [`Db::walk`], also handing `f` the raw metadata record (`f(key, type, expire_ms, raw)`).
    pub(crate) fn walk_raw(
        &self,
        after: Option<&[u8]>,
        mut f: impl FnMut(&[u8], KeyType, u64, &[u8]) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let phys = self.phys();
        let s = self.storage();
        let ro = IterOptions {
            prefix_same_as_start: true,
            ..IterOptions::default()
        };
        let mut it = s.iter(CF_META, ro);
        let now = now_ms();
        let mut last = None;
        let first_slot = after.map(keys::slot).unwrap_or(0);
        for slot in first_slot..keys::SLOTS {
            let prefix = [phys, (slot >> 8) as u8, slot as u8];
            match after {
                Some(k) if slot == first_slot => {
                    let raw = keys::meta_key(phys, k);
                    it.seek(&raw);
                    if it.valid() && it.key() == Some(raw.as_slice()) {
                        it.next();
                    }
                }
                _ => it.seek(prefix),
            }
            while it.valid() {
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                if !k.starts_with(&prefix) {
                    break;
                }
                let user = &k[3..];
                last = Some(user.to_vec());
                if let Ok((kind, exp)) = meta::decode_header(v) {
                    if (exp == 0 || exp > now) && !f(user, kind, exp, v) {
                        it.status()?;
                        return Ok(last);
                    }
                }
                it.next();
            }
            it.status()?;
        }
        Ok(last)
    }

    /// EXISTS for one key.
    pub fn exists(&self, key: &[u8]) -> Result<bool> {
        Ok(self.live_raw(key)?.is_some())
    }

    /// TYPE: the type of a key, `None` if missing.
    pub fn key_type(&self, key: &[u8]) -> Result<Option<KeyType>> {
        match self.live_raw(key)? {
            Some(raw) => Ok(Some(meta::decode_header(&raw)?.0)),
            None => Ok(None),
        }
    }

    /// DEL / UNLINK: deletes the keys, returns how many existed. O(1) per key whatever its size:
    /// a collection's members are reclaimed later by compaction.
    pub fn del(&self, keys: &[&[u8]]) -> Result<u64> {
        let _g = self.inner.locks.lock(keys.iter().map(|k| (self.index, *k)));
        let mut batch = crate::storage::new_batch();
        let mut n = 0;
        let mut seen = std::collections::HashSet::new();
        for k in keys {
            if seen.insert(*k) && self.live_raw(k)?.is_some() {
                self.delete_meta(&mut batch, self.phys(), k);
                n += 1;
            }
        }
        if n > 0 {
            self.write(batch)?;
        }
        Ok(n)
    }

    /// TTL / PTTL / EXPIRETIME source: the key's expiry state.
    pub fn ttl(&self, key: &[u8]) -> Result<Ttl> {
        Ok(match self.live_raw(key)? {
            None => Ttl::Missing,
            Some(raw) => match meta::expire_of(&raw) {
                0 => Ttl::Persistent,
                t => Ttl::ExpiresAt(t),
            },
        })
    }

    /// EXPIRE family: sets the expiry to `at_ms` (Unix ms) if every condition in `conds` allows. A
    /// deadline already in the past deletes the key. Returns whether anything changed (Redis's 1/0).
    pub fn expire_at(&self, key: &[u8], at_ms: i64, conds: &[ExpireCondition]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut m) = self.live_meta(key)? else {
            return Ok(false);
        };
        let current = m.expire_ms;
        let allowed = conds.iter().all(|cond| match cond {
            ExpireCondition::Always => true,
            ExpireCondition::IfNone => current == 0,
            ExpireCondition::IfSome => current != 0,
            ExpireCondition::IfGreater => current != 0 && at_ms > current as i64,
            ExpireCondition::IfLess => current == 0 || at_ms < current as i64,
        });
        if !allowed {
            return Ok(false);
        }
        let mut batch = crate::storage::new_batch();
        if at_ms <= now_ms() as i64 {
            self.delete_meta(&mut batch, self.phys(), key);
        } else {
            m.expire_ms = at_ms as u64;
            self.put_meta(&mut batch, key, &m);
        }
        self.write(batch)?;
        Ok(true)
    }

    /// PERSIST: removes the expiry; returns whether there was one.
    pub fn persist(&self, key: &[u8]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut m) = self.live_meta(key)? else {
            return Ok(false);
        };
        if m.expire_ms == 0 {
            return Ok(false);
        }
        m.expire_ms = 0;
        let mut batch = crate::storage::new_batch();
        self.put_meta(&mut batch, key, &m);
        self.write(batch)?;
        Ok(true)
    }

    /// Writes a copy of `m` (of `src_key` in physical db `src_phys`) as `dst_key` in physical db
    /// `dst_phys`. Collections and fragmented strings get a new version and their sub-keys are
    /// copied.
    fn copy_value(
        &self,
        batch: &mut WriteBatch,
        src_phys: u8,
        src_key: &[u8],
        m: &Meta,
        dst_phys: u8,
        dst_key: &[u8],
    ) -> Result<()> {
        if !m.owns_sub_keys() {
            self.put_meta_flagged(
                batch,
                dst_phys,
                dst_key,
                m.kind,
                m.flags,
                m.expire_ms,
                &m.body,
            );
            return Ok(());
        }
        let old_version = m
            .version()
            .ok_or_else(|| Error::Corrupt("collection metadata without version".into()))?;
        let new_version = self.next_version();
        let mut body = m.body.clone();
        body[..8].copy_from_slice(&new_version.to_be_bytes());
        self.put_meta_flagged(
            batch,
            dst_phys,
            dst_key,
            m.kind,
            m.flags_byte(),
            m.expire_ms,
            &body,
        );
        let s = self.storage();
        for cf in [CF_DATA, CF_ZSCORE] {
            let prefix = keys::data_prefix(src_phys, src_key, old_version);
            let (from, upper) = list_span(&prefix, m).unwrap_or_else(|| {
                let upper = prefix_successor(&prefix);
                (prefix.clone(), upper)
            });
            let ro = IterOptions {
                upper: Some(upper),
                ..IterOptions::default()
            };
            let mut it = s.iter(cf, ro);
            it.seek(&from);
            while it.valid() {
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                if !k.starts_with(&prefix) {
                    break;
                }
                let sub = &k[prefix.len()..];
                batch.put_cf(
                    s.cf(cf),
                    keys::data_key(dst_phys, dst_key, new_version, sub),
                    v,
                );
                it.next();
            }
            it.status()?;
        }
        Ok(())
    }

    /// RENAME / RENAMENX: moves `src` to `dst` with its TTL. `NoSuchKey` if `src` is missing; with
    /// `only_if_absent`, returns false (and does nothing) when `dst` exists.
    pub fn rename(&self, src: &[u8], dst: &[u8], only_if_absent: bool) -> Result<bool> {
        let _g = self
            .inner
            .locks
            .lock([(self.index, src), (self.index, dst)]);
        let Some(m) = self.live_meta(src)? else {
            return Err(Error::NoSuchKey);
        };
        if src == dst {
            return Ok(!only_if_absent);
        }
        if only_if_absent && self.live_raw(dst)?.is_some() {
            return Ok(false);
        }
        let phys = self.phys();
        let mut batch = crate::storage::new_batch();
        self.copy_value(&mut batch, phys, src, &m, phys, dst)?;
        self.delete_meta(&mut batch, phys, src);
        self.write(batch)?;
        Ok(true)
    }

    /// COPY: copies `src` to `dst` in logical database `dst_db`; with `replace` an existing `dst` is
    /// overwritten, otherwise nothing happens and false is returned.
    pub fn copy(&self, src: &[u8], dst_db: u32, dst: &[u8], replace: bool) -> Result<bool> {
        let target = self.select(dst_db)?;
        let _g = self
            .inner
            .locks
            .lock([(self.index, src), (target.index, dst)]);
        let Some(m) = self.live_meta(src)? else {
            return Ok(false);
        };
        if !replace && target.live_raw(dst)?.is_some() {
            return Ok(false);
        }
        let mut batch = crate::storage::new_batch();
        self.copy_value(&mut batch, self.phys(), src, &m, target.phys(), dst)?;
        self.write(batch)?;
        Ok(true)
    }

    /// MOVE: moves `key` to logical database `dst_db` unless it exists there.
    pub fn move_to(&self, key: &[u8], dst_db: u32) -> Result<bool> {
        let target = self.select(dst_db)?;
        let _g = self
            .inner
            .locks
            .lock([(self.index, key), (target.index, key)]);
        let Some(m) = self.live_meta(key)? else {
            return Ok(false);
        };
        if target.live_raw(key)?.is_some() {
            return Ok(false);
        }
        let mut batch = crate::storage::new_batch();
        self.copy_value(&mut batch, self.phys(), key, &m, target.phys(), key)?;
        self.delete_meta(&mut batch, self.phys(), key);
        self.write(batch)?;
        Ok(true)
    }

    /// MEMORY USAGE: an estimate of the bytes `key` and its value take, `None` if the key is
    /// missing. A collection's size is extrapolated from its first `samples` members (0: all of
    /// them), as Redis samples its elements. Counts the logical bytes plus a fixed per-key and
    /// per-member overhead, not RocksDB's on-disk or cache footprint (see docs/differences.md).
    pub fn memory_usage(&self, key: &[u8], samples: u64) -> Result<Option<u64>> {
        const KEY_OVERHEAD: u64 = 40;
        const MEMBER_OVERHEAD: u64 = 16;
        let Some(m) = self.live_meta(key)? else {
            return Ok(None);
        };
        let base = KEY_OVERHEAD + key.len() as u64 + HEADER_LEN as u64;
        if m.is_fragmented() {
            // The value's bytes (the fragments a sparse string leaves out count too, as the
            // memory Redis would hold) and its metadata body.
            let len = m.collection_len().unwrap_or(0);
            return Ok(Some(base + m.body.len() as u64 + len));
        }
        if m.kind == KeyType::String {
            return Ok(Some(base + m.body.len() as u64));
        }
        let (Some(version), Some(len)) = (m.version(), m.collection_len()) else {
            return Err(Error::Corrupt("collection metadata without version".into()));
        };
        let limit = if samples == 0 { u64::MAX } else { samples };
        let prefix = keys::data_prefix(self.phys(), key, version);
        let (from, upper) = list_span(&prefix, &m).unwrap_or_else(|| {
            let upper = prefix_successor(&prefix);
            (prefix.clone(), upper)
        });
        let ro = IterOptions {
            upper: Some(upper),
            ..IterOptions::default()
        };
        let mut it = self.storage().iter(CF_DATA, ro);
        it.seek(&from);
        let (mut seen, mut bytes) = (0u64, 0u64);
        while seen < limit && it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            if !k.starts_with(&prefix) {
                break;
            }
            bytes += (k.len() - prefix.len() + v.len()) as u64 + MEMBER_OVERHEAD;
            seen += 1;
            it.next();
        }
        it.status()?;
        let members = if seen == 0 {
            0
        } else {
            (bytes as u128 * len as u128 / seen as u128).min(u64::MAX as u128) as u64
        };
        Ok(Some(base + m.body.len() as u64 + members))
    }

    /// KEYS: every live key matching the glob `pattern`.
    pub fn keys(&self, pattern: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let all = pattern == b"*";
        self.walk(None, |k, _, _| {
            if all || glob_match(pattern, k, false) {
                out.push(k.to_vec());
            }
            true
        })?;
        Ok(out)
    }

    /// SCAN: visits about `count` keys after `cursor`, returning those that match `pattern` and `kind`.
    pub fn scan(
        &self,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
        kind: Option<KeyType>,
    ) -> Result<ScanPage> {
        let after = if cursor == 0 {
            None
        } else {
            let table = match self.inner.cursors.lock() {
                Ok(t) => t,
                Err(p) => p.into_inner(),
            };
            table.position(cursor, self.index)
        };
        let mut found = Vec::new();
        let mut visited = 0usize;
        let count = count.max(1);
        let mut finished = true;
        let last = self.walk(after.as_deref(), |k, t, _| {
            visited += 1;
            if kind.is_none_or(|want| want == t) && pattern.is_none_or(|p| glob_match(p, k, false))
            {
                found.push(k.to_vec());
            }
            if visited >= count {
                finished = false;
                return false;
            }
            true
        })?;
        let next = match (finished, last) {
            (false, Some(last)) => {
                let mut table = match self.inner.cursors.lock() {
                    Ok(t) => t,
                    Err(p) => p.into_inner(),
                };
                table.remember(self.index, last)
            }
            _ => 0,
        };
        Ok(ScanPage {
            cursor: next,
            keys: found,
        })
    }

    /// RANDOMKEY: a random live key, `None` if the database is empty. Starts at a random slot and
    /// takes the first live key at or after it (wrapping around).
    pub fn random_key(&self) -> Result<Option<Vec<u8>>> {
        let start = (random_u64() % keys::SLOTS as u64) as u16;
        let phys = self.phys();
        let s = self.storage();
        let ro = IterOptions {
            prefix_same_as_start: true,
            ..IterOptions::default()
        };
        let mut it = s.iter(CF_META, ro);
        let now = now_ms();
        for step in 0..keys::SLOTS {
            let slot = (start + step) % keys::SLOTS;
            let prefix = [phys, (slot >> 8) as u8, slot as u8];
            it.seek(prefix);
            while it.valid() {
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                if !k.starts_with(&prefix) {
                    break;
                }
                let exp = meta::expire_of(v);
                if exp == 0 || exp > now {
                    return Ok(Some(k[3..].to_vec()));
                }
                it.next();
            }
            it.status()?;
        }
        Ok(None)
    }

    /// DBSIZE: the number of live keys. O(n) in the number of keys (see docs/differences.md).
    pub fn dbsize(&self) -> Result<u64> {
        Ok(self.key_count()?.keys)
    }

    /// Number of live keys and of those with an expiry, and the average remaining TTL in ms (INFO keyspace).
    pub fn keyspace_info(&self) -> Result<(u64, u64, u64)> {
        let c = self.key_count()?;
        let avg = match c.expires {
            0 => 0,
            n => (c.deadline_sum / u128::from(n)).saturating_sub(u128::from(now_ms())) as u64,
        };
        Ok((c.keys, c.expires, avg))
    }

    /// Counts the live keys, walking them only when the last count may be out of date: a write
    /// committed to this database's metadata since, or a counted key's deadline passed. (The
    /// first count after a change costs a walk; polling DBSIZE or INFO costs nothing.) Inside an
    /// atomic scope, whose uncommitted writes this thread sees, it always walks.
    fn key_count(&self) -> Result<KeyCount> {
        let phys = self.phys();
        let s = self.storage();
        let keep = !s.in_scope();
        let generation = s.meta_generation(phys);
        let counts = || {
            self.inner
                .key_counts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
        };
        if keep {
            if let Some(c) = counts().get(&phys) {
                if c.generation == generation && now_ms() < c.first_deadline {
                    return Ok(*c);
                }
            }
        }
        let mut c = KeyCount {
            generation,
            keys: 0,
            expires: 0,
            deadline_sum: 0,
            first_deadline: u64::MAX,
        };
        self.walk(None, |_, _, exp| {
            c.keys += 1;
            if exp != 0 {
                c.expires += 1;
                c.deadline_sum += u128::from(exp);
                c.first_deadline = c.first_deadline.min(exp);
            }
            true
        })?;
        if keep {
            counts().insert(phys, c);
        }
        Ok(c)
    }

    /// FLUSHDB: deletes every key of this database.
    pub fn flushdb(&self) -> Result<()> {
        let _g = self.inner.locks.lock_all();
        let phys = self.phys();
        let s = self.storage();
        let mut batch = crate::storage::new_batch();
        for cf in [CF_META, CF_DATA, CF_ZSCORE] {
            batch.delete_range_cf(s.cf(cf), keys::db_start(phys), keys::db_end(phys));
        }
        self.write(batch)
    }

    /// FLUSHALL: deletes every key of every database.
    pub fn flushall(&self) -> Result<()> {
        let _g = self.inner.locks.lock_all();
        let s = self.storage();
        let mut batch = crate::storage::new_batch();
        for cf in [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE] {
            let (from, to) = keys::every_key();
            batch.delete_range_cf(s.cf(cf), from, to);
        }
        self.write(batch)
    }

    /// SWAPDB: exchanges the contents of two logical databases, instantly.
    pub fn swapdb(&self, a: u32, b: u32) -> Result<()> {
        if a >= self.inner.databases || b >= self.inner.databases {
            return Err(Error::DbIndexOutOfRange);
        }
        let _g = self.inner.locks.lock_all();
        if a != b {
            self.swap_map(a as u8, b as u8)?;
        }
        Ok(())
    }

    /// OBJECT ENCODING: the encoding Redis would report for the value (by Redis's size rules).
    pub fn object_encoding(&self, key: &[u8]) -> Result<Option<&'static str>> {
        let Some(m) = self.live_meta(key)? else {
            return Ok(None);
        };
        Ok(Some(match m.kind {
            KeyType::String => {
                if m.flags & meta::FLAG_RAW_STRING != 0 || m.is_fragmented() {
                    "raw"
                } else if m.body.len() <= 20 && num::parse_i64(&m.body).is_some() {
                    "int"
                } else if m.body.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            KeyType::Hash => self.hash_encoding(key)?,
            KeyType::List => "quicklist",
            KeyType::Set => self.set_encoding(key)?,
            KeyType::ZSet => self.zset_encoding(key)?,
            KeyType::Stream => "stream",
        }))
    }
}

/// For a list's metadata `m` whose sub-keys start with `prefix`: the keys from its first item
/// to past its last (`prefix ++ head`, `prefix ++ tail`), so that a walk over its records reads
/// its items only and never the garbage outside its bounds (`list.rs`). `None` for other types.
fn list_span(prefix: &[u8], m: &Meta) -> Option<(Vec<u8>, Vec<u8>)> {
    if m.kind != KeyType::List {
        return None;
    }
    let (head, tail) = crate::list::bounds_of(&m.body)?;
    let at = |i: u64| [prefix, &i.to_be_bytes()[..]].concat();
    Some((at(head), at(tail)))
}

/// The smallest key greater than every key starting with `prefix`.
pub(crate) fn prefix_successor(prefix: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return out;
        }
    }
    vec![0xFF; prefix.len() + 1]
}

fn random_u64() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u64(now_ms());
    h.finish()
}
