//! Loading a Redis RDB file (versions 1 to 10, as Redis 7.0 writes them) into a [`Db`], streaming:
//! the header, AUX fields (read and ignored), SELECTDB, RESIZEDB, EXPIRETIME / EXPIRETIME_MS,
//! IDLE / FREQ (ignored), function libraries (handed to the caller, who compiles and keeps them:
//! this crate has no scripting engine), keys, and the CRC-64 at the end, checked when the file has
//! one. Keys whose expiry has passed are
//! dropped; databases are kept. Memory is bounded by one compact blob (a listpack, an intset...)
//! plus [`CHUNK`] elements: a large collection is written in several batches, so it is not
//! atomic, and neither is the import (a failure leaves the keys loaded so far). Streams load
//! through [`super::stream::read_stream`], their entries written [`CHUNK`] at a time too; module
//! values are refused with an error naming the key.

use std::io::Read;

use crate::batch::Batch;
use crate::bulk::BulkWriter;
use crate::db::{now_ms, Db};
use crate::dump::Element;
use crate::error::{Error, Result};
use crate::meta::KeyType;

use super::encoding::{bad, Reader};
use super::stream::{read_stream, Part};
use super::value::{is_stream_type, is_value_type, key_type_of, read_value};

/// Elements of one collection applied per batch.
pub const CHUNK: usize = 1000;
/// Keys applied per batch.
const KEYS_PER_BATCH: usize = 256;

pub(super) const OP_FUNCTION2: u8 = 245;
const OP_FUNCTION: u8 = 246;
const OP_MODULE_AUX: u8 = 247;
pub(super) const OP_IDLE: u8 = 248;
pub(super) const OP_FREQ: u8 = 249;
pub(super) const OP_AUX: u8 = 250;
pub(super) const OP_RESIZEDB: u8 = 251;
pub(super) const OP_EXPIRETIME_MS: u8 = 252;
const OP_EXPIRETIME: u8 = 253;
pub(super) const OP_SELECTDB: u8 = 254;
pub(super) const OP_EOF: u8 = 255;

/// The newest RDB version this module reads (Redis 7.0's).
pub const MAX_VERSION: u32 = 10;

/// What [`import`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RdbSummary {
    /// The file's RDB version.
    pub version: u32,
    /// Keys written.
    pub keys: u64,
    /// Keys dropped because their expiry had passed.
    pub expired: u64,
    /// Function libraries handed to the caller.
    pub functions: u64,
    /// Whether the file carried a checksum (and it matched).
    pub checksum_verified: bool,
}

/// The key being loaded and the writes not applied yet.
struct Loader {
    db: Db,
    batch: Batch,
    keys_in_batch: usize,
    key: Vec<u8>,
    kind: KeyType,
    chunk: Vec<Element>,
    /// Whether part of the current key was already applied (so later chunks must not delete it).
    started: bool,
    /// The current key expired: its elements are read and dropped.
    dropping: bool,
    /// The current key's expiry (0: none).
    expire_ms: u64,
    /// Set while the database being loaded held no live key when the load reached it: keys
    /// are then written blind, without the reads of [`Db::apply`].
    bulk: Option<BulkWriter>,
}

impl Loader {
    fn push(&mut self, e: Element) -> Result<()> {
        if self.dropping {
            return Ok(());
        }
        if let Some(w) = &mut self.bulk {
            return match e {
                Element::Value(v) => w.string(&self.key, &v, self.expire_ms),
                Element::Item(v) if self.kind == KeyType::List => w.item(&v),
                Element::Item(v) => w.member(&v),
                Element::Field(f, v) => w.field(&f, &v),
                Element::Scored(m, s) => w.scored(&m, s),
                Element::Record(..) => Err(bad("a stream record in a value")),
            };
        }
        self.chunk.push(e);
        if self.chunk.len() >= CHUNK {
            self.stage_chunk();
            self.apply()?;
        }
        Ok(())
    }

    /// Moves the pending elements into the batch (the first chunk of a key replaces it).
    fn stage_chunk(&mut self) {
        let key = self.key.as_slice();
        if !self.started {
            self.batch.del(key);
            self.started = true;
        }
        let chunk = std::mem::take(&mut self.chunk);
        match self.kind {
            KeyType::String => {
                for e in &chunk {
                    if let Element::Value(v) = e {
                        self.batch.set(key, v);
                    }
                }
            }
            KeyType::List | KeyType::Set => {
                let items: Vec<&[u8]> = chunk
                    .iter()
                    .filter_map(|e| match e {
                        Element::Item(v) => Some(v.as_slice()),
                        _ => None,
                    })
                    .collect();
                if self.kind == KeyType::List {
                    self.batch.rpush(key, &items);
                } else {
                    self.batch.sadd(key, &items);
                }
            }
            KeyType::Hash => {
                let pairs: Vec<(&[u8], &[u8])> = chunk
                    .iter()
                    .filter_map(|e| match e {
                        Element::Field(f, v) => Some((f.as_slice(), v.as_slice())),
                        _ => None,
                    })
                    .collect();
                self.batch.hset(key, &pairs);
            }
            KeyType::ZSet => {
                let scored: Vec<(f64, &[u8])> = chunk
                    .iter()
                    .filter_map(|e| match e {
                        Element::Scored(m, s) => Some((*s, m.as_slice())),
                        _ => None,
                    })
                    .collect();
                self.batch.zadd(key, &scored);
            }
            KeyType::Stream => {}
        }
    }

    /// Starts key `key` of type `kind` (`dropping` it if its expiry `at` has passed).
    fn begin(&mut self, key: Vec<u8>, kind: KeyType, at: Option<u64>, now: u64) {
        self.key = key;
        self.kind = kind;
        self.started = false;
        self.dropping = at.is_some_and(|t| t <= now);
        self.expire_ms = at.unwrap_or(0);
        if let Some(w) = &mut self.bulk {
            if kind != KeyType::String && !self.dropping {
                w.begin(&self.key, kind, self.expire_ms);
            }
        }
    }

    /// Ends the current key (not dropped); returns whether a batch is due.
    fn end(&mut self) -> Result<bool> {
        if let Some(w) = &mut self.bulk {
            if self.kind != KeyType::String {
                w.end()?;
            }
            return Ok(false);
        }
        self.stage_chunk();
        if self.expire_ms != 0 {
            self.batch.expire_at(&self.key, self.expire_ms);
        }
        self.keys_in_batch += 1;
        Ok(self.keys_in_batch >= KEYS_PER_BATCH)
    }

    /// Moves to database `db`, writing blind if it holds no live key.
    fn select(&mut self, db: Db) -> Result<()> {
        self.apply()?;
        self.bulk = if db.has_live_keys()? {
            None
        } else {
            Some(BulkWriter::new(&db))
        };
        self.db = db;
        Ok(())
    }

    fn apply(&mut self) -> Result<()> {
        if let Some(w) = &mut self.bulk {
            return w.finish();
        }
        self.db.apply(&self.batch)?;
        self.batch = Batch::new();
        self.keys_in_batch = 0;
        Ok(())
    }
}

/// Names the key a decoding error is about.
fn in_key(key: &[u8], e: Error) -> Error {
    match e {
        Error::BadRdb(m) => Error::BadRdb(format!("key {:?}: {m}", String::from_utf8_lossy(key))),
        other => other,
    }
}

fn header<R: Read>(r: &mut Reader<R>) -> Result<u32> {
    let mut magic = [0u8; 9];
    r.exact(&mut magic)
        .map_err(|_| bad("not an RDB file (too short)"))?;
    if &magic[..5] != b"REDIS" {
        return Err(bad("not an RDB file (no REDIS signature)"));
    }
    let version = std::str::from_utf8(&magic[5..])
        .ok()
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| bad("not an RDB file (bad version)"))?;
    if !(1..=MAX_VERSION).contains(&version) {
        return Err(Error::BadRdb(format!(
            "RDB version {version} is not supported (at most {MAX_VERSION})"
        )));
    }
    Ok(version)
}

/// Reads a function library record: RDB_OPCODE_FUNCTION2's code as it is, or the form of
/// Redis 7.0's release candidates (RDB_OPCODE_FUNCTION: name, engine, optional description,
/// body) turned into code as Redis's `rdbFunctionLoad` does (`#!<engine> name=<name>` line, the
/// description dropped).
fn read_library<R: Read>(op: u8, r: &mut Reader<R>) -> Result<Vec<u8>> {
    if op == OP_FUNCTION2 {
        return r.string();
    }
    let name = r.string()?;
    let engine = r.string()?;
    if r.length()? != 0 {
        r.string()?;
    }
    let body = r.string()?;
    let mut code = b"#!".to_vec();
    code.extend_from_slice(&engine);
    code.extend_from_slice(b" name=");
    code.extend_from_slice(&name);
    code.push(b'\n');
    code.extend_from_slice(&body);
    Ok(code)
}

/// Loads the RDB file read from `input` into `db` (every database of the file into the database
/// of the same number), replacing keys of the same name; hands each function library's code to
/// `library` (an error stops the import, as a library Redis can't create fails its load); calls
/// `progress(bytes read, keys loaded)` after each key.
pub fn import<R: Read>(
    db: &Db,
    input: R,
    mut library: impl FnMut(Vec<u8>) -> Result<()>,
    mut progress: impl FnMut(u64, u64),
) -> Result<RdbSummary> {
    let mut r = Reader::with_crc(input);
    let version = header(&mut r)?;
    let mut summary = RdbSummary {
        version,
        ..RdbSummary::default()
    };
    let mut loader = Loader {
        db: db.select(0)?,
        batch: Batch::new(),
        keys_in_batch: 0,
        key: Vec::new(),
        kind: KeyType::String,
        chunk: Vec::new(),
        started: false,
        dropping: false,
        expire_ms: 0,
        bulk: None,
    };
    loader.select(db.select(0)?)?;
    let mut expire_at: Option<u64> = None;
    let now = now_ms();
    loop {
        let op = r.u8()?;
        match op {
            OP_EOF => break,
            OP_AUX => {
                r.string()?;
                r.string()?;
            }
            OP_RESIZEDB => {
                r.length()?;
                r.length()?;
            }
            OP_SELECTDB => {
                let index = r.length()?;
                if index >= u64::from(db.databases()) {
                    return Err(Error::BadRdb(format!(
                        "the file has database {index} but the directory has {} databases",
                        db.databases()
                    )));
                }
                loader.select(db.select(index as u32)?)?;
            }
            OP_EXPIRETIME => expire_at = Some(u64::from(r.u32_le()?) * 1000),
            OP_EXPIRETIME_MS => expire_at = Some(r.u64_le()?),
            OP_IDLE => {
                r.length()?;
            }
            OP_FREQ => {
                r.u8()?;
            }
            OP_FUNCTION2 | OP_FUNCTION => {
                library(read_library(op, &mut r)?)?;
                summary.functions += 1;
            }
            OP_MODULE_AUX => return Err(bad("module data is not supported")),
            t if is_stream_type(t) => {
                let key = r.string()?;
                let at = expire_at.take();
                let dropping = at.is_some_and(|t| t <= now);
                // Earlier keys first: the stream may spill writes of its own as it loads.
                loader.apply()?;
                let mut b = loader.db.stream_builder(&key, at.unwrap_or(0));
                let image = read_stream(t, &mut r, &mut |p| match p {
                    _ if dropping => Ok(()),
                    Part::Node(fill) => {
                        b.node(fill);
                        Ok(())
                    }
                    Part::Entry(id, fields) => {
                        b.entry(id, fields)?;
                        if b.staged() >= CHUNK {
                            b.spill()?;
                        }
                        Ok(())
                    }
                })
                .map_err(|e| in_key(&key, e))?;
                if dropping {
                    summary.expired += 1;
                } else {
                    b.finish(&image).map_err(|e| in_key(&key, e))?;
                    summary.keys += 1;
                }
                progress(r.position(), summary.keys + summary.expired);
            }
            t if is_value_type(t) => {
                let key = r.string()?;
                let kind = key_type_of(t).ok_or_else(|| bad("unknown value type"))?;
                // A key with an expiry of 0 or less never existed in the file's eyes either
                // way; Redis drops past expiries when loading as a primary.
                let at = expire_at.take();
                loader.begin(key, kind, at, now);
                let mut sink = |e| loader.push(e);
                read_value(t, &mut r, &mut sink).map_err(|e| match e {
                    Error::BadRdb(m) => Error::BadRdb(format!(
                        "key {:?}: {m}",
                        String::from_utf8_lossy(&loader.key)
                    )),
                    other => other,
                })?;
                if loader.dropping {
                    summary.expired += 1;
                } else {
                    summary.keys += 1;
                    if loader.end().map_err(|e| in_key(&loader.key, e))? {
                        loader.apply()?;
                    }
                }
                progress(r.position(), summary.keys + summary.expired);
            }
            t => return Err(Error::BadRdb(format!("unknown record type {t}"))),
        }
    }
    loader.apply()?;
    if version >= 5 {
        let computed = r.crc();
        let stored = r.u64_le()?;
        if stored != 0 {
            if stored != computed {
                return Err(bad("checksum mismatch at the end of the file"));
            }
            summary.checksum_verified = true;
        }
    }
    progress(r.position(), summary.keys + summary.expired);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::crc64::crc64;
    use crate::rdb::encoding::{put_len, put_string};

    fn rdb(body: &[u8], with_crc: bool) -> Vec<u8> {
        let mut out = b"REDIS0010".to_vec();
        out.extend_from_slice(body);
        out.push(OP_EOF);
        let crc = if with_crc { crc64(0, &out) } else { 0 };
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn body() -> Vec<u8> {
        let mut b = Vec::new();
        b.push(OP_AUX);
        put_string(&mut b, b"redis-ver");
        put_string(&mut b, b"7.0.15");
        b.push(OP_SELECTDB);
        put_len(&mut b, 2);
        b.push(OP_RESIZEDB);
        put_len(&mut b, 2);
        put_len(&mut b, 1);
        b.push(OP_EXPIRETIME_MS);
        b.extend_from_slice(&1000u64.to_le_bytes());
        b.push(0);
        put_string(&mut b, b"gone");
        put_string(&mut b, b"x");
        b.push(OP_EXPIRETIME_MS);
        b.extend_from_slice(&(now_ms() + 100_000).to_le_bytes());
        b.push(1); // a plain list
        put_string(&mut b, b"list");
        put_len(&mut b, 2);
        put_string(&mut b, b"a");
        put_string(&mut b, b"12");
        b
    }

    #[test]
    fn keys_land_in_their_database_and_expired_ones_are_dropped() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        let s = import(&db, rdb(&body(), true).as_slice(), |_| Ok(()), |_, _| {})?;
        assert_eq!((s.keys, s.expired, s.checksum_verified), (1, 1, true));
        let two = db.select(2)?;
        assert_eq!(
            two.lrange(b"list", 0, -1)?,
            vec![b"a".to_vec(), b"12".to_vec()]
        );
        assert!(matches!(two.ttl(b"list")?, crate::Ttl::ExpiresAt(_)));
        assert!(!two.exists(b"gone")?);
        let s = import(&db, rdb(&body(), false).as_slice(), |_| Ok(()), |_, _| {})?;
        assert!(
            !s.checksum_verified,
            "a zero checksum is not checked, as in Redis"
        );
        Ok(())
    }

    #[test]
    fn libraries_of_both_forms_reach_the_caller_as_code() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        let mut b = vec![OP_FUNCTION2];
        put_string(&mut b, b"#!lua name=new\nbody");
        // Redis 7.0-rc's form: name, engine, a description, body.
        b.push(OP_FUNCTION);
        put_string(&mut b, b"old");
        put_string(&mut b, b"LUA");
        put_len(&mut b, 1);
        put_string(&mut b, b"a description");
        put_string(&mut b, b"return 1");
        let mut got = Vec::new();
        let s = import(
            &db,
            rdb(&b, true).as_slice(),
            |code| {
                got.push(code);
                Ok(())
            },
            |_, _| {},
        )?;
        assert_eq!(s.functions, 2);
        assert_eq!(
            got,
            vec![
                b"#!lua name=new\nbody".to_vec(),
                b"#!LUA name=old\nreturn 1".to_vec()
            ]
        );
        let refused = import(
            &db,
            rdb(&b, true).as_slice(),
            |_| Err(Error::BadRdb("no".into())),
            |_, _| {},
        );
        assert!(
            refused.is_err(),
            "a library the caller refuses stops the import"
        );
        Ok(())
    }

    #[test]
    fn damage_is_an_error() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        let good = rdb(&body(), true);
        let mut flipped = good.clone();
        let at = good.len() - 12;
        flipped[at] ^= 0x01;
        assert!(import(&db, flipped.as_slice(), |_| Ok(()), |_, _| {}).is_err());
        for cut in 0..good.len() {
            assert!(
                import(&db, &good[..cut], |_| Ok(()), |_, _| {}).is_err(),
                "cut at {cut}"
            );
        }
        assert!(import(&db, &b"REDIS0011"[..], |_| Ok(()), |_, _| {}).is_err());
        Ok(())
    }
}
