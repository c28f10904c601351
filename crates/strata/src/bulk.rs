//! Blind writes for a bulk load into a database that held no live key when the load began (an RDB
//! import, the start-up dump.rdb, a full copy from a Redis leader): a [`BulkWriter`] encodes
//! each key's records straight into a large RocksDB write batch without reading anything back
//! (no metadata lookup, no member lookup, no key lock), which is what makes such a load fast.
//! The records are the ones [`Db::apply`] would write for the same key in an empty database. A
//! key written twice is replaced, as [`Db::apply`] would replace it (the old collection's
//! records become orphans of an unreferenced version, left to the compaction filter). A
//! collection naming one member twice is an error, as it is to Redis's RDB loader: with no read
//! to merge them its length would be wrong. Other writers must stay away during the load (the
//! callers hold the database in a loading state); a large collection reaches the disk in several
//! batches, each leaving a consistent key of the members so far.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::BuildHasher;

use rocksdb::WriteBatch;

use crate::collection::CollectionMeta;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::list::LIST_START;
use crate::meta::KeyType;
use crate::storage::{CF_DATA, CF_ZSCORE};
use crate::zset::{normalize, score_bytes, zscore_sub};

/// Bytes staged before the batch is written.
const BATCH_BYTES: usize = 16 << 20;
/// Member hashes remembered per collection to find a repeated member without a read; past this
/// many, each further member is looked up on disk instead (memory stays bounded).
const REMEMBERED_MEMBERS: usize = 1 << 22;

/// The collection being written.
struct Open {
    key: Vec<u8>,
    c: CollectionMeta,
    /// List index of the next item.
    tail: u64,
    /// Hashes of the members written so far (sets, hashes, sorted sets).
    seen: HashSet<u64>,
}

/// Writes keys into an empty database without reading it (see the module's text).
pub struct BulkWriter {
    db: Db,
    batch: WriteBatch,
    open: Option<Open>,
    hasher: RandomState,
}

impl BulkWriter {
    /// A writer into `db`'s logical database, which the caller has found empty
    /// ([`Db::has_live_keys`]).
    pub fn new(db: &Db) -> BulkWriter {
        BulkWriter {
            db: db.clone(),
            batch: crate::storage::new_batch(),
            open: None,
            hasher: RandomState::new(),
        }
    }

    /// A string `key` with expiry `expire_ms` (0: none), as SET writes it.
    pub fn string(&mut self, key: &[u8], value: &[u8], expire_ms: u64) -> Result<()> {
        let phys = self.db.phys();
        self.db.put_meta_flagged(
            &mut self.batch,
            phys,
            key,
            KeyType::String,
            0,
            expire_ms,
            value,
        );
        self.maybe_write()
    }

    /// Starts collection `key` of type `kind`; its members follow, then [`BulkWriter::end`].
    pub fn begin(&mut self, key: &[u8], kind: KeyType, expire_ms: u64) {
        let c = CollectionMeta {
            kind,
            expire_ms,
            version: self.db.next_version(),
            len: 0,
            extra: Vec::new(),
        };
        self.open = Some(Open {
            key: key.to_vec(),
            c,
            tail: LIST_START,
            seen: HashSet::new(),
        });
    }

    /// The open collection, which must be of type `kind`.
    fn open_of(open: &mut Option<Open>, kind: KeyType) -> Result<&mut Open> {
        match open {
            Some(o) if o.c.kind == kind => Ok(o),
            _ => Err(Error::WrongType),
        }
    }

    /// Refuses a member already written to the open collection.
    fn first_time(&mut self, member: &[u8]) -> Result<()> {
        let h = self.hasher.hash_one(member);
        let Some(o) = &mut self.open else {
            return Err(Error::WrongType);
        };
        if o.seen.len() < REMEMBERED_MEMBERS && o.seen.insert(h) {
            return Ok(());
        }
        // A hash seen before (most likely the same member), or too many to remember: ask the
        // disk, with everything staged written first.
        self.write_open()?;
        let Some(o) = &self.open else {
            return Err(Error::WrongType);
        };
        if self.db.get_sub(CF_DATA, &o.key, &o.c, member)?.is_some() {
            return Err(Error::BadRdb("duplicate member".into()));
        }
        Ok(())
    }

    /// RPUSH of one item to the open list.
    pub fn item(&mut self, item: &[u8]) -> Result<()> {
        let o = Self::open_of(&mut self.open, KeyType::List)?;
        if o.tail == u64::MAX {
            return Err(Error::Corrupt("list index space exhausted".into()));
        }
        let sub = self.db.sub_key(&o.key, &o.c, &o.tail.to_be_bytes());
        o.tail += 1;
        o.c.len += 1;
        self.batch.put_cf(self.db.storage().cf(CF_DATA), sub, item);
        self.maybe_write()
    }

    /// SADD of one member to the open set.
    pub fn member(&mut self, member: &[u8]) -> Result<()> {
        Self::open_of(&mut self.open, KeyType::Set)?;
        self.first_time(member)?;
        let o = Self::open_of(&mut self.open, KeyType::Set)?;
        o.c.len += 1;
        let sub = self.db.sub_key(&o.key, &o.c, member);
        self.batch.put_cf(self.db.storage().cf(CF_DATA), sub, []);
        self.maybe_write()
    }

    /// HSET of one field to the open hash.
    pub fn field(&mut self, field: &[u8], value: &[u8]) -> Result<()> {
        Self::open_of(&mut self.open, KeyType::Hash)?;
        self.first_time(field)?;
        let o = Self::open_of(&mut self.open, KeyType::Hash)?;
        o.c.len += 1;
        let sub = self.db.sub_key(&o.key, &o.c, field);
        self.batch.put_cf(self.db.storage().cf(CF_DATA), sub, value);
        self.maybe_write()
    }

    /// ZADD of one member to the open sorted set; a NaN score is [`Error::NotFloat`].
    pub fn scored(&mut self, member: &[u8], score: f64) -> Result<()> {
        if score.is_nan() {
            return Err(Error::NotFloat);
        }
        let score = normalize(score);
        Self::open_of(&mut self.open, KeyType::ZSet)?;
        self.first_time(member)?;
        let o = Self::open_of(&mut self.open, KeyType::ZSet)?;
        o.c.len += 1;
        let data = self.db.sub_key(&o.key, &o.c, member);
        let by_score = self.db.sub_key(&o.key, &o.c, &zscore_sub(score, member));
        let s = self.db.storage();
        self.batch.put_cf(s.cf(CF_DATA), data, score_bytes(score));
        self.batch.put_cf(s.cf(CF_ZSCORE), by_score, []);
        self.maybe_write()
    }

    /// Ends the open collection: its metadata is staged (none for an empty one, which Redis
    /// never keeps).
    pub fn end(&mut self) -> Result<()> {
        self.stage_open_meta();
        self.open = None;
        self.maybe_write()
    }

    /// Stages the open collection's metadata as it stands.
    fn stage_open_meta(&mut self) {
        let Some(o) = &mut self.open else {
            return;
        };
        if o.c.kind == KeyType::List {
            let mut extra = LIST_START.to_be_bytes().to_vec();
            extra.extend_from_slice(&o.tail.to_be_bytes());
            o.c.extra = extra;
        }
        if o.c.len > 0 {
            self.db.put_collection(&mut self.batch, &o.key, &o.c);
        }
    }

    /// Writes what is staged, the open collection's metadata included (so far).
    fn write_open(&mut self) -> Result<()> {
        self.stage_open_meta();
        let batch = std::mem::take(&mut self.batch);
        self.db.write(batch)
    }

    fn maybe_write(&mut self) -> Result<()> {
        if self.batch.size_in_bytes() >= BATCH_BYTES {
            self.write_open()?;
        }
        Ok(())
    }

    /// Writes everything staged; call after the last key (an open collection is written as far
    /// as it got).
    pub fn finish(&mut self) -> Result<()> {
        if self.batch.is_empty() && self.open.is_none() {
            return Ok(());
        }
        self.write_open()
    }
}

impl Db {
    /// Whether this logical database holds any live key (stops at the first).
    pub fn has_live_keys(&self) -> Result<bool> {
        let mut found = false;
        self.walk(None, |_, _, _| {
            found = true;
            false
        })?;
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = Db::open(dir.path()).expect("open");
        (dir, db)
    }

    #[test]
    fn bulk_written_keys_read_as_the_commands_would_write_them() -> Result<()> {
        let (_dir, db) = db();
        assert!(!db.has_live_keys()?);
        let mut w = BulkWriter::new(&db);
        w.string(b"s", b"v", 0)?;
        w.begin(b"l", KeyType::List, 0);
        for i in 0..3000 {
            w.item(format!("i{i}").as_bytes())?;
        }
        w.end()?;
        w.begin(b"h", KeyType::Hash, crate::db::now_ms() + 100_000);
        w.field(b"f", b"1")?;
        w.field(b"g", b"2")?;
        w.end()?;
        w.begin(b"z", KeyType::ZSet, 0);
        w.scored(b"a", 2.0)?;
        w.scored(b"b", -0.0)?;
        w.end()?;
        w.begin(b"e", KeyType::Set, 0);
        w.end()?;
        w.finish()?;
        assert!(db.has_live_keys()?);
        assert_eq!(db.get(b"s")?, Some(b"v".to_vec()));
        assert_eq!(db.llen(b"l")?, 3000);
        assert_eq!(db.lrange(b"l", -1, -1)?, vec![b"i2999".to_vec()]);
        db.rpush(b"l", &[b"more"])?;
        assert_eq!(db.lrange(b"l", 3000, 3000)?, vec![b"more".to_vec()]);
        assert_eq!(db.hget(b"h", b"g")?, Some(b"2".to_vec()));
        assert!(matches!(db.ttl(b"h")?, crate::Ttl::ExpiresAt(_)));
        assert_eq!(db.zscore(b"z", b"b")?, Some(0.0));
        assert_eq!(db.zcard(b"z")?, 2);
        assert!(!db.exists(b"e")?);
        assert_eq!(db.dbsize()?, 4);
        Ok(())
    }

    #[test]
    fn a_repeated_member_is_refused() -> Result<()> {
        let (_dir, db) = db();
        let mut w = BulkWriter::new(&db);
        w.begin(b"set", KeyType::Set, 0);
        w.member(b"a")?;
        w.member(b"b")?;
        assert!(matches!(w.member(b"a"), Err(Error::BadRdb(_))));
        let mut w = BulkWriter::new(&db);
        w.begin(b"h", KeyType::Hash, 0);
        w.field(b"f", b"1")?;
        assert!(matches!(w.field(b"f", b"2"), Err(Error::BadRdb(_))));
        assert!(matches!(w.item(b"x"), Err(Error::WrongType)));
        Ok(())
    }
}
