//! DUMP and RESTORE on a [`Db`]: [`Db::dump_payload`] serializes a key's value as Redis 7.0's DUMP
//! does, and [`Db::restore_payload`] writes a key from a payload's value, whole or not at all
//! (one atomic batch under the key's lock: the old value is replaced only once the new one has
//! decoded completely; a stream goes through a [`crate::stream::StreamBuilder`] the same way). The command layer parses arguments and words the replies.

use std::collections::HashSet;

use crate::batch::Batch;
use crate::db::{now_ms, Db};
use crate::dump::Element;
use crate::error::Result;
use crate::meta::KeyType;

use super::encoding::{bad, Reader};
use super::payload;
use super::stream::{read_stream, Part};
use super::value::{is_stream_type, read_value, write_value, Staged};

/// How [`Db::restore_payload`] writes its key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RestoreOptions {
    /// Replace an existing key (RESTORE's REPLACE) instead of refusing.
    pub replace: bool,
    /// Absolute expiry in Unix milliseconds; `None` for a key without TTL.
    pub expire_at: Option<u64>,
}

/// What [`Db::restore_payload`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restored {
    /// The key was written with a value of this type.
    Written(KeyType),
    /// The key exists and REPLACE was not given: nothing was written.
    Busy,
    /// The expiry had already passed: nothing was written; `deleted` says whether REPLACE
    /// deleted an existing key.
    Expired {
        /// An existing key was deleted.
        deleted: bool,
    },
}

/// Refuses a collection that names one member twice, as Redis does for its own encodings.
fn check_unique<'a>(members: impl Iterator<Item = &'a [u8]>) -> Result<()> {
    let mut seen = HashSet::new();
    for m in members {
        if !seen.insert(m) {
            return Err(bad("duplicate member"));
        }
    }
    Ok(())
}

/// Adds the writes of a decoded value to `batch` (after a deletion of the key).
fn stage(batch: &mut Batch, key: &[u8], kind: KeyType, elements: &[Element]) -> Result<()> {
    batch.del(key);
    match kind {
        KeyType::String => {
            if let Some(Element::Value(v)) = elements.first() {
                batch.set(key, v);
            }
        }
        KeyType::List | KeyType::Set => {
            let items: Vec<&[u8]> = elements
                .iter()
                .filter_map(|e| match e {
                    Element::Item(v) => Some(v.as_slice()),
                    _ => None,
                })
                .collect();
            if kind == KeyType::List {
                batch.rpush(key, &items);
            } else {
                check_unique(items.iter().copied())?;
                batch.sadd(key, &items);
            }
        }
        KeyType::Hash => {
            let pairs: Vec<(&[u8], &[u8])> = elements
                .iter()
                .filter_map(|e| match e {
                    Element::Field(f, v) => Some((f.as_slice(), v.as_slice())),
                    _ => None,
                })
                .collect();
            check_unique(pairs.iter().map(|p| p.0))?;
            batch.hset(key, &pairs);
        }
        KeyType::ZSet => {
            let scored: Vec<(f64, &[u8])> = elements
                .iter()
                .filter_map(|e| match e {
                    Element::Scored(m, s) => Some((*s, m.as_slice())),
                    _ => None,
                })
                .collect();
            check_unique(scored.iter().map(|p| p.1))?;
            batch.zadd(key, &scored);
        }
        KeyType::Stream => return Err(bad("streams are restored by restore_stream")),
    }
    Ok(())
}

impl Db {
    /// DUMP: `key`'s value serialized as Redis 7.0 does (type byte, body, RDB version 10,
    /// CRC-64), `None` if the key does not exist. The TTL is not part of it.
    pub fn dump_payload(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut out = Staged::in_memory(Vec::new());
        Ok(write_value(self, key, false, &mut out)?.map(|_| payload::seal(out.buf)))
    }

    /// RESTORE: writes `key` from `payload`, a DUMP payload whose trailer the caller has checked
    /// with [`super::payload::open`]; the value is read from the whole payload, as Redis reads
    /// it. The value is decoded completely before anything is written, then the old key (with
    /// REPLACE) and the new value with its expiry are written in one atomic batch. A malformed
    /// value is [`crate::Error::BadRdb`].
    pub fn restore_payload(
        &self,
        key: &[u8],
        payload: &[u8],
        opts: RestoreOptions,
    ) -> Result<Restored> {
        let _scope = self.hold([(self.index(), key)], true);
        if !opts.replace && self.exists(key)? {
            return Ok(Restored::Busy);
        }
        let mut r = Reader::new(payload);
        let t = r.u8()?;
        if is_stream_type(t) {
            return self.restore_stream(key, t, &mut r, opts);
        }
        let mut elements = Vec::new();
        let kind = read_value(t, &mut r, &mut |e| {
            elements.push(e);
            Ok(())
        })?;
        if opts.expire_at.is_some_and(|at| at <= now_ms()) {
            let deleted = opts.replace && self.del(&[key])? > 0;
            return Ok(Restored::Expired { deleted });
        }
        let mut batch = Batch::new();
        stage(&mut batch, key, kind, &elements)?;
        if let Some(at) = opts.expire_at {
            batch.expire_at(key, at);
        }
        self.apply(&batch)?;
        Ok(Restored::Written(kind))
    }

    /// RESTORE of a stream (type byte `t`): decoded whole into one batch, then the old key is
    /// replaced with it in one write.
    fn restore_stream(
        &self,
        key: &[u8],
        t: u8,
        r: &mut Reader<&[u8]>,
        opts: RestoreOptions,
    ) -> Result<Restored> {
        let mut b = self.stream_builder(key, opts.expire_at.unwrap_or(0));
        let image = read_stream(t, r, &mut |p| match p {
            Part::Node(fill) => {
                b.node(fill);
                Ok(())
            }
            Part::Entry(id, fields) => b.entry(id, fields),
        })?;
        if opts.expire_at.is_some_and(|at| at <= now_ms()) {
            let deleted = opts.replace && self.del(&[key])? > 0;
            return Ok(Restored::Expired { deleted });
        }
        b.finish(&image)?;
        Ok(Restored::Written(KeyType::Stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::payload;
    use crate::rdb::test_db as db;

    #[test]
    fn a_large_collection_round_trips_through_plain_encodings() -> Result<()> {
        let (_dir, db) = db();
        let members: Vec<Vec<u8>> = (0..1000).map(|i| format!("m{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = members.iter().map(|m| m.as_slice()).collect();
        db.rpush(b"l", &refs)?;
        let scored: Vec<(f64, &[u8])> = refs
            .iter()
            .enumerate()
            .map(|(i, m)| (i as f64 / 3.0, *m))
            .collect();
        db.zadd(b"z", &scored, Default::default())?;
        for key in [&b"l"[..], b"z"] {
            let p = db.dump_payload(key)?.expect("a payload");
            let value = payload::open(&p)?;
            assert!(!value.is_empty());
            let opts = RestoreOptions::default();
            assert!(matches!(
                db.restore_payload(b"copy", &p, opts)?,
                Restored::Written(_)
            ));
            assert_eq!(db.dump_payload(b"copy")?, Some(p));
            db.del(&[b"copy"])?;
        }
        Ok(())
    }

    #[test]
    fn a_payload_that_fails_to_decode_leaves_the_key_as_it_was() -> Result<()> {
        let (_dir, db) = db();
        db.rpush(b"k", &[b"keep"])?;
        // A hash of two fields whose second value is cut short.
        let bad = payload::seal(b"\x04\x02\x01f\x01v\x01g\x30w".to_vec());
        let opts = RestoreOptions {
            replace: true,
            expire_at: None,
        };
        assert!(matches!(
            db.restore_payload(b"k", &bad, opts),
            Err(crate::Error::BadRdb(_))
        ));
        assert_eq!(db.lrange(b"k", 0, -1)?, vec![b"keep".to_vec()]);
        let busy = db.restore_payload(
            b"k",
            &payload::seal(b"\x00\x01x".to_vec()),
            RestoreOptions::default(),
        )?;
        assert_eq!(busy, Restored::Busy);
        Ok(())
    }
}
