//! What replication needs from the data model, on both sides of the link. A leader reads its own
//! log from an offset on ([`Db::wal_read`], [`Db::wal_tail`]) and streams a consistent copy of
//! the whole directory ([`Db::sync_snapshot`]); a replica wipes and loads such a copy
//! ([`Db::load_begin`], [`Db::load_chunk`], [`Db::load_end`]) and applies the leader's log
//! batches ([`Db::apply_replicated`]) exactly as the leader wrote them, each together with the
//! record of how far it has got, so a restarted replica resumes where its data stops; while it
//! writes, it holds the key locks of the keys they write, as the leader's commands did. The log
//! is RocksDB's write-ahead log, offsets its sequence numbers; with the write-back tier it is
//! the tier's redo log, offsets the numbers the redo log gives its batches (the same batches,
//! the same encoding: a replica need not know which its leader has, nor use the same). Knows
//! nothing of sockets or the wire format.

use std::borrow::Cow;
use std::collections::HashMap;

use rocksdb::{IteratorMode, ReadOptions, WriteOptions};
use smallvec::SmallVec;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::keys::{split_data_key, split_expire_key, split_meta_key};
use crate::locks::{Guard, STRIPES};
use crate::pending::{decode_batch, BatchOp};
use crate::redo_tail::RedoTail;
use crate::storage::{
    CF_DATA, CF_EXPIRE, CF_META, CF_ZSCORE, DB_MAP_KEY, FORMAT_KEY, FORMAT_VERSION,
};
use crate::tier::OFFSET_KEY;
use crate::wal_tail::WalTail;

/// The column families in the order replication numbers them (the wire format names a family
/// by its index here, never by RocksDB's internal id, which may differ between two directories).
pub const FAMILIES: [&str; 5] = ["default", CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE];

/// A record's value as a run of replicated batches left it (`None`: deleted).
type Held<'a> = Option<Cow<'a, [u8]>>;

/// The lock stripes a replicated record needs (see `Db::lock_replicated`).
enum Touch<'a> {
    /// Those of this key: `(physical database, user key)`.
    Key(u8, &'a [u8]),
    /// None (a record of no key).
    Nothing,
    /// Every stripe.
    All,
}

/// The aux record (see [`Db::aux_get`]) a replica keeps its progress in.
pub const REPLICATION_STATE: &str = "replication";

/// One write batch of the log.
#[derive(Debug, Clone)]
pub struct WalBatch {
    /// The sequence number of its first operation.
    pub seq: u64,
    /// How many sequence numbers it uses.
    pub count: u64,
    /// RocksDB's own encoding of the batch (see `docs/replication.md`).
    pub data: Vec<u8>,
}

/// What [`Db::wal_read`] found.
#[derive(Debug)]
pub enum WalRead {
    /// The batches from the requested sequence number on, contiguous (possibly none yet).
    Batches(Vec<WalBatch>),
    /// The log no longer holds the requested sequence number (or never will: the directory is
    /// behind it): the reader needs a full copy.
    Gap,
}

/// A reader following the log from an offset on ([`Db::wal_tail`]): RocksDB's write-ahead log,
/// or the write-back tier's redo log. One sender loop serves both.
pub enum LogTail {
    /// RocksDB's log (see [`crate::wal_tail`]).
    Wal(WalTail),
    /// The write-back tier's redo log (see [`crate::redo_tail`]).
    Redo(RedoTail),
}

impl LogTail {
    /// The batches appended since the last read that are visible (`<= last`, the log's last
    /// offset), about `max_bytes` at most, contiguous from the requested offset.
    pub fn read(&mut self, last: u64, max_bytes: usize) -> Result<WalRead> {
        match self {
            LogTail::Wal(t) => t.read(last, max_bytes),
            LogTail::Redo(t) => t.read(max_bytes),
        }
    }

    /// The next offset it will hand out.
    pub fn next(&self) -> u64 {
        match self {
            LogTail::Wal(t) => t.next(),
            LogTail::Redo(t) => t.next(),
        }
    }
}

/// What [`Db::apply_replicated`] changed that the server keeps in memory beside the data.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    /// An aux record (`strata:aux:*`, e.g. the FUNCTION libraries) was written.
    pub aux_changed: bool,
    /// The keys written or deleted, as `(logical database, key)`, when asked for (clients
    /// blocked on them or WATCHing them). Keys of whole-database deletions are not listed.
    pub keys: Vec<(u32, Vec<u8>)>,
}

fn total_order() -> ReadOptions {
    let mut ro = ReadOptions::default();
    // `meta` hashes its memtable by prefix: a scan across prefixes must ask for total order.
    ro.set_total_order_seek(true);
    ro.fill_cache(false);
    ro
}

impl Db {
    /// The offset of the last write (the leader's replication offset): RocksDB's sequence
    /// number, or with the write-back tier the redo log's.
    pub fn last_seq(&self) -> u64 {
        self.storage().last_seq()
    }

    /// RocksDB's id of each family of [`FAMILIES`] in this directory, in that order.
    pub fn family_ids(&self) -> [u32; 5] {
        let [meta, data, zscore, expire] = self.storage().cf_ids();
        // The default family is always 0.
        [0, meta, data, zscore, expire]
    }

    /// The log's batches from sequence number `next` on, contiguous, about `max_bytes` at most
    /// (always at least one when there is one), and only batches already visible to readers.
    /// [`WalRead::Gap`] when the log does not reach back to `next` (its files were purged:
    /// retention is `Options::wal_ttl_seconds` / `wal_size_limit_mb`) or `next` is beyond the
    /// last write plus one. An `Err` may be transient (a log file moving to the archive).
    /// With the write-back tier the redo log is read instead (its archive is the retention).
    pub fn wal_read(&self, next: u64, max_bytes: usize) -> Result<WalRead> {
        if let Some(dir) = self.storage().redo_dir() {
            return match RedoTail::open(dir, next, self.last_seq())? {
                Some(mut tail) => tail.read(max_bytes),
                None => Ok(WalRead::Gap),
            };
        }
        let raw = self.storage().raw();
        let last = raw.latest_sequence_number();
        if next > last.saturating_add(1) || next == 0 {
            return Ok(WalRead::Gap);
        }
        if next > last {
            return Ok(WalRead::Batches(Vec::new()));
        }
        // The binding skips batches starting at or before the number it is given.
        let iter = raw.get_updates_since(next - 1)?;
        let mut out: Vec<WalBatch> = Vec::new();
        let mut want = next;
        let mut bytes = 0;
        for item in iter {
            let (seq, batch) = item?;
            if seq > last {
                break;
            }
            if seq != want {
                // The first batch must start exactly where the reader stopped.
                return Ok(if out.is_empty() && seq > want {
                    WalRead::Gap
                } else {
                    WalRead::Batches(out)
                });
            }
            let count = batch.len() as u64;
            let data = batch.data().to_vec();
            bytes += data.len();
            want = seq + count.max(1);
            out.push(WalBatch { seq, count, data });
            if bytes >= max_bytes {
                break;
            }
        }
        Ok(WalRead::Batches(out))
    }

    /// A reader that follows the log from offset `next` on, reading only what was appended
    /// since its last read (see [`crate::wal_tail`], [`crate::redo_tail`]).
    pub fn wal_tail(&self, next: u64) -> Result<LogTail> {
        match self.storage().redo_dir() {
            Some(dir) => match RedoTail::open(dir, next, self.last_seq())? {
                Some(tail) => Ok(LogTail::Redo(tail)),
                None => Err(Error::Corrupt(format!(
                    "the redo log no longer holds offset {next}"
                ))),
            },
            None => Ok(LogTail::Wal(WalTail::open(self.path(), next)?)),
        }
    }

    /// Streams a consistent copy of the whole directory: takes every key lock for an instant to
    /// pin a snapshot between writes (so no transaction or script is half in it), calls `start`
    /// with its offset, then `record` with `(family index in FAMILIES, key, value)` for every
    /// record, family by family, while writers go on. Returns the offset. With the write-back
    /// tier the snapshot is taken right after a checkpoint, as of the checkpoint's offset (each
    /// transaction or script is one batch, and a checkpoint's cut falls between batches).
    pub fn sync_snapshot<E: From<Error>>(
        &self,
        start: impl FnOnce(u64) -> std::result::Result<(), E>,
        mut record: impl FnMut(usize, &[u8], &[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<u64, E> {
        let raw = self.storage().raw();
        let (seq, snapshot) = self.storage().snapshot_at(|| self.hold_all())?;
        start(seq)?;
        for (index, name) in FAMILIES.iter().enumerate() {
            let mut ro = total_order();
            ro.set_snapshot(&snapshot);
            let cf = self.storage().cf(name);
            for item in raw.iterator_cf_opt(cf, ro, IteratorMode::Start) {
                let (k, v) = item.map_err(Error::from)?;
                // The leader's own checkpoint offset is not the replica's.
                if index == 0 && &*k == OFFSET_KEY {
                    continue;
                }
                record(index, &k, &v)?;
            }
        }
        Ok(seq)
    }

    /// Starts loading a leader's copy: deletes every record of every family (the progress record
    /// too, so a crash in the middle of the load means a full copy again). Synced. With the
    /// write-back tier, what it holds is checkpointed first (the copy goes to RocksDB).
    pub fn load_begin(&self) -> Result<()> {
        let _all = self.inner.locks.lock_all();
        let s = self.storage();
        s.checkpoint_tier()?;
        let raw = s.raw();
        let mut batch = crate::storage::new_batch();
        for name in FAMILIES {
            let cf = s.cf(name);
            let mut it = raw.raw_iterator_cf_opt(cf, total_order());
            it.seek_to_first();
            let Some(first) = it.key().map(<[u8]>::to_vec) else {
                continue;
            };
            it.seek_to_last();
            let Some(last) = it.key().map(<[u8]>::to_vec) else {
                continue;
            };
            it.status()?;
            batch.delete_range_cf(cf, first, last.clone());
            batch.delete_cf(cf, last);
        }
        s.forget_all();
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        raw.write_opt(batch, &wo)?;
        Ok(())
    }

    /// Writes records of a leader's copy (family index in [`FAMILIES`], key, value) without the
    /// log: [`Db::load_end`] flushes them to data files.
    pub fn load_chunk<'a>(
        &self,
        records: impl IntoIterator<Item = (usize, &'a [u8], &'a [u8])>,
    ) -> Result<()> {
        let s = self.storage();
        let mut batch = crate::storage::new_batch();
        for (index, key, value) in records {
            let name = FAMILIES
                .get(index)
                .ok_or_else(|| Error::Corrupt(format!("replicated record of family {index}")))?;
            batch.put_cf(s.cf(name), key, value);
        }
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        s.raw().write_opt(batch, &wo)?;
        Ok(())
    }

    /// Finishes a load: flushes what was loaded to data files, checks the copy's format, takes
    /// its database map and records `state` as the replica's progress (synced).
    pub fn load_end(&self, state: &[u8]) -> Result<()> {
        let s = self.storage();
        s.flush_all()?;
        match s.get("default", FORMAT_KEY)? {
            Some(v) if v.as_slice() == [FORMAT_VERSION] => {}
            other => {
                return Err(Error::Corrupt(format!(
                    "the leader's copy has on-disk format {other:?}; this build reads format {FORMAT_VERSION}"
                )))
            }
        }
        self.reload_db_map()?;
        s.forget_all();
        let mut batch = crate::storage::new_batch();
        batch.put(aux_key(REPLICATION_STATE), state);
        s.note_tier_offset(&mut batch);
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        s.raw().write_opt(batch, &wo)?;
        Ok(())
    }

    /// Applies the leader's log batches `batches` (`leader_ids`: the leader's
    /// [`Db::family_ids`]) as one atomic write together with the progress record `state`, with
    /// this directory's sync policy, and brings what the server caches in memory up to date.
    pub fn apply_replicated(
        &self,
        leader_ids: &[u32; 5],
        batches: &[&[u8]],
        state: &[u8],
        collect_keys: bool,
    ) -> Result<Applied> {
        let s = self.storage();
        let family = |id: u32| -> Result<&rocksdb::ColumnFamily> {
            let index = leader_ids
                .iter()
                .position(|&x| x == id)
                .ok_or_else(|| Error::Corrupt(format!("replicated write to family id {id}")))?;
            Ok(s.cf(FAMILIES[index]))
        };
        let meta_id = leader_ids[1];
        let mut applied = Applied::default();
        let mut map_changed = false;
        let mut batch = crate::storage::new_batch();
        let decoded = batches
            .iter()
            .map(|data| decode_batch(data).map(|(_, ops)| ops))
            .collect::<Result<Vec<_>>>()?;
        // With patches among them: the values these batches put, for the patches after them (a
        // patch changes the value before it: put earlier in these batches, or held already).
        let track = decoded
            .iter()
            .flatten()
            .any(|op| matches!(op, BatchOp::Patch { .. }));
        let mut put: HashMap<(u32, &[u8]), Held<'_>> = HashMap::new();
        let mut deleted: Vec<(u32, &[u8], &[u8])> = Vec::new();
        for op in decoded.iter().flatten() {
            match *op {
                BatchOp::Put { cf, key, value } => {
                    self.note_replicated(cf, key, &mut applied, &mut map_changed);
                    if collect_keys && cf == meta_id {
                        self.note_key(key, &mut applied);
                    }
                    batch.put_cf(family(cf)?, key, value);
                    if track {
                        put.insert((cf, key), Some(Cow::Borrowed(value)));
                    }
                }
                BatchOp::Delete { cf, key } => {
                    self.note_replicated(cf, key, &mut applied, &mut map_changed);
                    if collect_keys && cf == meta_id {
                        self.note_key(key, &mut applied);
                    }
                    batch.delete_cf(family(cf)?, key);
                    if track {
                        put.insert((cf, key), None);
                    }
                }
                BatchOp::DeleteRange { cf, from, to } => {
                    batch.delete_range_cf(family(cf)?, from, to);
                    put.retain(|&(c, k), _| c != cf || k < from || k >= to);
                    deleted.push((cf, from, to));
                }
                BatchOp::Patch {
                    cf,
                    key,
                    ref ranges,
                } => {
                    self.note_replicated(cf, key, &mut applied, &mut map_changed);
                    if collect_keys && cf == meta_id {
                        self.note_key(key, &mut applied);
                    }
                    let name =
                        FAMILIES[leader_ids.iter().position(|&x| x == cf).ok_or_else(|| {
                            Error::Corrupt(format!("replicated patch of family id {cf}"))
                        })?];
                    let before = match put.remove(&(cf, key)) {
                        Some(held) => held.map(Cow::into_owned),
                        None if deleted
                            .iter()
                            .any(|&(c, f, t)| c == cf && key >= f && key < t) =>
                        {
                            None
                        }
                        None => s.get(name, key)?,
                    };
                    let mut value = before.ok_or_else(|| {
                        Error::Corrupt("replicated patch of a record this replica lacks".into())
                    })?;
                    crate::patch::apply(&mut value, ranges);
                    batch.put_cf(family(cf)?, key, &value);
                    put.insert((cf, key), Some(Cow::Owned(value)));
                }
            }
        }
        batch.put(aux_key(REPLICATION_STATE), state);
        {
            // The write is atomic in itself (one RocksDB or tier write; the hot-record cache
            // follows it: `Storage::write`), but a reader walking a key's records, or reading
            // several keys one after another, would see it land between two steps. Readers
            // hold their keys' stripes shared, as on the leader, so holding the written keys'
            // stripes exclusively across the write (and the database map's reload) means a
            // reader sees each command, transaction or script whole or not at all.
            let _held = self.lock_replicated(leader_ids, &decoded);
            s.write(batch)?;
            if map_changed {
                self.reload_db_map()?;
            }
        }
        Ok(applied)
    }

    /// Takes, in one ordered acquisition, the key lock stripes (exclusive) of every key the
    /// replicated batches `decoded` write, keyed as the data model keys them (logical database,
    /// user key); every stripe when one of them swaps databases, deletes a range reaching past
    /// one key (FLUSHDB, FLUSHALL), writes a record naming no key it can tell, or writes to
    /// more keys than half the stripes.
    fn lock_replicated(&self, leader_ids: &[u32; 5], decoded: &[Vec<BatchOp<'_>>]) -> Guard<'_> {
        // Physical database → logical, read once (the map cannot change under this write:
        // only a replicated SWAPDB changes it, and that takes every stripe).
        let map = self.db_map();
        let map = &map[..(self.inner.databases as usize).min(map.len())];
        // A collection's records come in a row: its key is listed (and hashed) once, not once
        // per record. A few keys (a leader writing at a modest rate) need no allocation.
        let mut keys: SmallVec<[(u8, &[u8]); 8]> = SmallVec::new();
        let mut last: Option<(u8, &[u8])> = None;
        for op in decoded.iter().flatten() {
            match touched(leader_ids, op) {
                Touch::All => return self.inner.locks.lock_all(),
                Touch::Key(phys, key) if last != Some((phys, key)) => {
                    last = Some((phys, key));
                    // A physical database no logical one maps to is out of every reader's reach.
                    if let Some(db) = map.iter().position(|&p| p == phys) {
                        keys.push((db as u8, key));
                    }
                }
                _ => {}
            }
        }
        // A run of writes to more keys than half the stripes (the follower coalesces a busy
        // leader's batches) takes them all: it would hold most of them anyway, and one pass
        // over the stripes costs less than hashing and sorting that many keys.
        if keys.len() > STRIPES / 2 {
            return self.inner.locks.lock_all();
        }
        self.inner.locks.lock(keys)
    }

    fn note_key(&self, meta_key: &[u8], applied: &mut Applied) {
        if let Some((phys, user_key)) = crate::keys::split_meta_key(meta_key) {
            if let Some(db) = self.logical_of(phys) {
                applied.keys.push((u32::from(db), user_key.to_vec()));
            }
        }
    }

    fn note_replicated(&self, cf: u32, key: &[u8], applied: &mut Applied, map_changed: &mut bool) {
        if cf == 0 {
            if key == DB_MAP_KEY {
                *map_changed = true;
            } else if key.starts_with(b"strata:aux:") && key != b"strata:aux:replication" {
                applied.aux_changed = true;
            }
        }
    }

    /// Holds the background expiry cycle back, or lets it run again (CLIENT PAUSE: Redis
    /// expires nothing while clients are paused). Independent of [`Db::set_active_expire`].
    pub fn hold_expiry(&self, held: bool) {
        self.inner
            .expiry_held
            .store(held, std::sync::atomic::Ordering::Relaxed);
    }

    /// Turns the background expiry cycle on or off (a replica leaves expiry to its leader).
    pub fn set_active_expire(&self, on: bool) {
        self.inner
            .active_expire
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The stripes replicated record `op` needs (`leader_ids`: the leader's family ids).
fn touched<'a>(leader_ids: &[u32; 5], op: &BatchOp<'a>) -> Touch<'a> {
    let (cf, key) = match *op {
        BatchOp::Put { cf, key, .. }
        | BatchOp::Delete { cf, key }
        | BatchOp::Patch { cf, key, .. } => (cf, key),
        BatchOp::DeleteRange { cf, from, to } => {
            return match leader_ids.iter().position(|&x| x == cf) {
                // A range inside one collection (LTRIM, XTRIM...): its key alone.
                Some(2 | 3) => match (split_data_key(from), split_data_key(to)) {
                    (Some((d, k, ..)), Some((e, l, ..))) if d == e && k == l => Touch::Key(d, k),
                    _ => Touch::All,
                },
                _ => Touch::All,
            };
        }
    };
    match leader_ids.iter().position(|&x| x == cf) {
        Some(0) if key == DB_MAP_KEY => Touch::All,
        // Aux records, the format marker: no key.
        Some(0) => Touch::Nothing,
        Some(1) => split_meta_key(key).map_or(Touch::All, |(d, k)| Touch::Key(d, k)),
        Some(2 | 3) => split_data_key(key).map_or(Touch::All, |(d, k, ..)| Touch::Key(d, k)),
        Some(4) => split_expire_key(key).map_or(Touch::All, |(_, d, k)| Touch::Key(d, k)),
        _ => Touch::All,
    }
}

fn aux_key(name: &str) -> Vec<u8> {
    format!("strata:aux:{name}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SetOptions;

    /// The keys whose stripes a replica applying one batch takes (repeats in a row once), or
    /// `None` for every stripe.
    type Stripes = Option<Vec<(u8, Vec<u8>)>>;

    /// [`Stripes`] per batch of the leader's log from `from` on.
    fn stripes_of(leader: &Db, from: u64) -> Vec<Stripes> {
        let WalRead::Batches(batches) = leader.wal_read(from, usize::MAX).unwrap() else {
            panic!("the log holds every write since {from}");
        };
        let ids = leader.family_ids();
        batches
            .iter()
            .map(|b| {
                let (_, ops) = decode_batch(&b.data).unwrap();
                let mut keys = Vec::new();
                for op in &ops {
                    match touched(&ids, op) {
                        Touch::All => return None,
                        Touch::Key(db, key) => keys.push((db, key.to_vec())),
                        Touch::Nothing => {}
                    }
                }
                keys.dedup();
                Some(keys)
            })
            .collect()
    }

    #[test]
    fn a_replicated_write_locks_the_keys_it_names_and_every_key_for_swapdb_or_a_flush() {
        let a = tempfile::tempdir().unwrap();
        let leader = Db::open(a.path()).unwrap();
        let from = leader.last_seq() + 1;
        leader.hset(b"h", &[(b"f", b"1"), (b"g", b"2")]).unwrap();
        let (_, committed) = leader.atomically(|| {
            leader.set(b"x", b"1", SetOptions::default()).unwrap();
            leader.sadd(b"s", &[b"m"]).unwrap();
        });
        committed.unwrap();
        leader.select(3).unwrap().rpush(b"l", &[b"a"]).unwrap();
        leader.swapdb(3, 4).unwrap();
        leader.flushdb().unwrap();
        let hash = Some(vec![(0, b"h".to_vec())]);
        let both = Some(vec![(0, b"x".to_vec()), (0, b"s".to_vec())]);
        let list = Some(vec![(3, b"l".to_vec())]);
        assert_eq!(
            stripes_of(&leader, from),
            vec![hash, both, list, None, None]
        );
    }

    #[test]
    fn a_replica_applying_the_leaders_log_ends_with_the_leaders_data() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let leader = Db::open(a.path()).unwrap();
        let replica = Db::open(b.path()).unwrap();
        let mut copied = 0;
        let seq = leader
            .sync_snapshot::<Error>(
                |_| Ok(()),
                |_, _, _| {
                    copied += 1;
                    Ok(())
                },
            )
            .unwrap();
        assert!(copied >= 1, "the format marker is part of the copy");
        leader.set(b"s", b"v", SetOptions::default()).unwrap();
        leader.hset(b"h", &[(b"f", b"1")]).unwrap();
        leader.rpush(b"l", &[b"a", b"b"]).unwrap();
        leader.select(3).unwrap().sadd(b"set", &[b"m"]).unwrap();
        leader.swapdb(3, 4).unwrap();
        leader.del(&[b"s"]).unwrap();
        leader.flushdb().unwrap();
        leader
            .set(b"after", b"flush", SetOptions::default())
            .unwrap();
        let WalRead::Batches(batches) = leader.wal_read(seq + 1, usize::MAX).unwrap() else {
            panic!("the log holds every write since the snapshot");
        };
        assert!(batches.len() >= 8);
        let ids = leader.family_ids();
        let mut touched = Vec::new();
        for b in &batches {
            let applied = replica
                .apply_replicated(&ids, &[&b.data], b"state", true)
                .unwrap();
            touched.extend(applied.keys);
        }
        assert_eq!(replica.get(b"after").unwrap(), Some(b"flush".to_vec()));
        assert!(touched.contains(&(0, b"h".to_vec())) && touched.contains(&(0, b"after".to_vec())));
        assert_eq!(
            replica.hget(b"h", b"f").unwrap(),
            None,
            "FLUSHDB replicated"
        );
        let four = replica.select(4).unwrap();
        assert_eq!(four.smembers(b"set").unwrap(), vec![b"m".to_vec()]);
        assert_eq!(
            replica.aux_get(REPLICATION_STATE).unwrap(),
            Some(b"state".to_vec())
        );
        let next = batches.last().map(|b| b.seq + b.count).unwrap();
        assert_eq!(next, leader.last_seq() + 1);
        assert!(matches!(leader.wal_read(next, 1).unwrap(), WalRead::Batches(v) if v.is_empty()));
        assert!(matches!(
            leader.wal_read(next + 5, 1).unwrap(),
            WalRead::Gap
        ));
    }

    #[test]
    fn archived_log_files_are_kept_within_the_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_with(
            dir.path(),
            crate::Options {
                write_buffer_size: 64 << 10,
                wal_ttl_seconds: 3600,
                wal_size_limit_mb: 1,
                ..crate::Options::default()
            },
        )
        .unwrap();
        let archive = dir.path().join("archive");
        let size = || -> u64 {
            std::fs::read_dir(&archive)
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| e.metadata().ok())
                        .map(|m| m.len())
                        .sum()
                })
                .unwrap_or(0)
        };
        for i in 0..4000 {
            db.set(
                format!("k{i}").as_bytes(),
                &[b'v'; 1000],
                SetOptions::default(),
            )
            .unwrap();
        }
        db.flush().unwrap();
        assert!(
            size() > 1 << 20,
            "the workload archived more than the limit: {}",
            size()
        );
        db.storage().prune_wal_archive();
        assert!(size() <= 1 << 20, "pruned to the limit: {}", size());
        assert!(size() > 0, "the newest archived files stay");
    }

    #[test]
    fn a_loaded_copy_replaces_everything_the_replica_had() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let leader = Db::open(a.path()).unwrap();
        let replica = Db::open(b.path()).unwrap();
        leader.hset(b"h", &[(b"f", b"1"), (b"g", b"2")]).unwrap();
        let mut batch = crate::Batch::new();
        batch.zadd(b"z", &[(1.5, b"m")]);
        leader.apply(&batch).unwrap();
        replica.set(b"stale", b"x", SetOptions::default()).unwrap();
        let mut records = Vec::new();
        leader
            .sync_snapshot::<Error>(
                |_| Ok(()),
                |cf, k, v| {
                    records.push((cf, k.to_vec(), v.to_vec()));
                    Ok(())
                },
            )
            .unwrap();
        replica.load_begin().unwrap();
        replica
            .load_chunk(records.iter().map(|(c, k, v)| (*c, &k[..], &v[..])))
            .unwrap();
        replica.load_end(b"progress").unwrap();
        assert_eq!(replica.get(b"stale").unwrap(), None);
        assert_eq!(replica.hlen(b"h").unwrap(), 2);
        assert_eq!(replica.zscore(b"z", b"m").unwrap(), Some(1.5));
        assert_eq!(
            replica.aux_get(REPLICATION_STATE).unwrap(),
            Some(b"progress".to_vec())
        );
    }

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn tier_options(dirty: usize) -> crate::Options {
        crate::Options {
            write_back: Some(dirty),
            wal_ttl_seconds: 3600,
            wal_size_limit_mb: 64,
            ..crate::Options::default()
        }
    }

    /// Every batch of the leader's log from `next` on, read with a tail as the leader's sender
    /// does, applied to `replica`; returns the offset after the last.
    fn follow(leader: &Db, replica: &Db, next: u64) -> Result<u64> {
        let mut tail = leader.wal_tail(next)?;
        let ids = leader.family_ids();
        loop {
            match tail.read(leader.last_seq(), 1 << 16)? {
                WalRead::Batches(b) if b.is_empty() => return Ok(tail.next()),
                WalRead::Batches(b) => {
                    for batch in &b {
                        replica.apply_replicated(&ids, &[&batch.data], b"state", false)?;
                    }
                }
                WalRead::Gap => return Err(Error::Corrupt("gap".into())),
            }
        }
    }

    fn copy(leader: &Db, replica: &Db) -> Result<u64> {
        let mut records = Vec::new();
        let seq = leader.sync_snapshot::<Error>(
            |_| Ok(()),
            |cf, k, v| {
                records.push((cf, k.to_vec(), v.to_vec()));
                Ok(())
            },
        )?;
        assert!(
            !records.iter().any(|(cf, k, _)| *cf == 0 && k == OFFSET_KEY),
            "the leader's checkpoint offset stays home"
        );
        replica.load_begin()?;
        replica.load_chunk(records.iter().map(|(c, k, v)| (*c, &k[..], &v[..])))?;
        replica.load_end(b"copied")?;
        Ok(seq)
    }

    #[test]
    fn a_leader_with_the_write_back_tier_is_followed_by_replicas_with_and_without_it() -> R {
        let (a, b, c) = (
            tempfile::tempdir()?,
            tempfile::tempdir()?,
            tempfile::tempdir()?,
        );
        let leader = Db::open_with(a.path(), tier_options(64 << 10))?;
        let with_tier = Db::open_with(b.path(), tier_options(64 << 10))?;
        let without = Db::open(c.path())?;
        leader.set(b"before", b"copy", SetOptions::default())?;
        leader.hset(b"h", &[(b"f", b"1")])?;
        with_tier.set(b"stale", b"x", SetOptions::default())?;
        let seq = copy(&leader, &with_tier)?;
        assert_eq!(copy(&leader, &without)?, seq, "no write came between");
        assert_eq!(seq, leader.last_seq(), "the copy is as of the last write");
        assert_eq!(with_tier.get(b"stale")?, None);
        assert_eq!(with_tier.get(b"before")?, Some(b"copy".to_vec()));
        // Enough writes for several checkpoints (64 KB dirty limit) while the replicas follow.
        let value = vec![b'v'; 500];
        let mut next = (seq + 1, seq + 1);
        for round in 0..20 {
            for i in 0..100 {
                leader.set(
                    format!("k{round}:{i}").as_bytes(),
                    &value,
                    SetOptions::default(),
                )?;
            }
            leader.del(&[format!("k{round}:0").as_bytes()])?;
            leader.rpush(b"list", &[format!("{round}").as_bytes()])?;
            next = (
                follow(&leader, &with_tier, next.0)?,
                follow(&leader, &without, next.1)?,
            );
        }
        leader.flushdb()?;
        leader.set(b"after", b"flush", SetOptions::default())?;
        let end = follow(&leader, &with_tier, next.0)?;
        assert_eq!(end, follow(&leader, &without, next.1)?);
        assert_eq!(end, leader.last_seq() + 1);
        let checkpoints = leader.tier_figures().map_or(0, |f| f[2]);
        assert!(checkpoints >= 2, "checkpoints ran meanwhile: {checkpoints}");
        for replica in [&with_tier, &without] {
            assert_eq!(replica.get(b"after")?, Some(b"flush".to_vec()));
            assert_eq!(replica.get(b"k3:5")?, None, "FLUSHDB replicated");
            assert_eq!(replica.aux_get(REPLICATION_STATE)?, Some(b"state".to_vec()));
        }
        Ok(())
    }

    #[test]
    fn a_tier_leader_resumes_after_a_clean_restart_from_its_archived_segments() -> R {
        let dir = tempfile::tempdir()?;
        let replica_dir = tempfile::tempdir()?;
        let replica = Db::open_with(replica_dir.path(), tier_options(64 << 10))?;
        let (seq, behind) = {
            let leader = Db::open_with(dir.path(), tier_options(64 << 10))?;
            let seq = copy(&leader, &replica)?;
            for i in 0..300 {
                leader.set(
                    format!("k{i}").as_bytes(),
                    &[b'x'; 400],
                    SetOptions::default(),
                )?;
            }
            leader.flush()?;
            (seq, leader.last_seq())
        };
        assert!(
            std::fs::read_dir(dir.path().join("redo").join(crate::redo::ARCHIVE))?.count() > 1,
            "checkpoints archived their segments"
        );
        let leader = Db::open_with(dir.path(), tier_options(64 << 10))?;
        assert_eq!(
            leader.last_seq(),
            behind,
            "offsets go on where they stopped"
        );
        leader.set(b"later", b"1", SetOptions::default())?;
        assert!(matches!(leader.wal_read(seq + 1, 1)?, WalRead::Batches(b) if b.len() == 1));
        let end = follow(&leader, &replica, seq + 1)?;
        assert_eq!(end, leader.last_seq() + 1);
        assert_eq!(replica.get(b"k299")?, Some(vec![b'x'; 400]));
        assert_eq!(replica.get(b"later")?, Some(b"1".to_vec()));
        Ok(())
    }

    #[test]
    fn a_pruned_redo_archive_is_a_gap_not_a_silent_skip() -> R {
        let dir = tempfile::tempdir()?;
        let db = Db::open_with(dir.path(), tier_options(64 << 10))?;
        let start = db.last_seq() + 1;
        for i in 0..2000 {
            db.set(
                format!("k{i}").as_bytes(),
                &[b'x'; 1000],
                SetOptions::default(),
            )?;
        }
        db.flush()?;
        assert!(matches!(db.wal_read(start, 1)?, WalRead::Batches(b) if b.len() == 1));
        db.set_wal_archive_limit(1 << 20);
        db.storage().prune_wal_archive();
        assert!(matches!(db.wal_read(start, 1)?, WalRead::Gap));
        assert!(matches!(db.wal_read(db.last_seq() + 2, 1)?, WalRead::Gap));
        Ok(())
    }
}
