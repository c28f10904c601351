//! Shared machinery of the collection types (hash, list, set, zset): their metadata
//! (`[version u64][len u64][extra]` after the common header) and streaming iteration over the
//! sub-keys of one version. Each type module builds its commands from these pieces.

use std::ops::Range;

use rocksdb::WriteBatch;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::keys;
use crate::keyspace::prefix_successor;
use crate::meta::{KeyType, Meta};
use crate::storage::IterOptions;

/// The decoded metadata of a collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CollectionMeta {
    /// Hash, list, set or zset.
    pub kind: KeyType,
    /// Unix ms, 0 = none.
    pub expire_ms: u64,
    /// Version of the sub-keys.
    pub version: u64,
    /// Number of members.
    pub len: u64,
    /// Type-specific trailing bytes (a list's head and tail).
    pub extra: Vec<u8>,
}

impl CollectionMeta {
    pub(crate) fn from_meta(m: Meta) -> Result<CollectionMeta> {
        let (Some(version), Some(len)) = (m.version(), m.collection_len()) else {
            return Err(Error::Corrupt(format!(
                "{} metadata of {} bytes lacks version/len",
                m.kind.name(),
                m.body.len()
            )));
        };
        Ok(CollectionMeta {
            kind: m.kind,
            expire_ms: m.expire_ms,
            version,
            len,
            extra: m.body[16..].to_vec(),
        })
    }

    pub(crate) fn body(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(16 + self.extra.len());
        b.extend_from_slice(&self.version.to_be_bytes());
        b.extend_from_slice(&self.len.to_be_bytes());
        b.extend_from_slice(&self.extra);
        b
    }
}

impl Db {
    /// The live collection of type `kind` at `key`; `WrongType` if the key holds another type.
    pub(crate) fn load_collection(
        &self,
        key: &[u8],
        kind: KeyType,
    ) -> Result<Option<CollectionMeta>> {
        // Decoded where the record lies (no copy of the raw record first).
        match self.with_live_record(key, Meta::decode)?.transpose()? {
            Some(m) if m.kind != kind => Err(Error::WrongType),
            Some(m) => Ok(Some(CollectionMeta::from_meta(m)?)),
            None => Ok(None),
        }
    }

    /// The existing collection, or a fresh empty one with a new version.
    pub(crate) fn load_or_new_collection(
        &self,
        key: &[u8],
        kind: KeyType,
    ) -> Result<CollectionMeta> {
        Ok(match self.load_collection(key, kind)? {
            Some(c) => c,
            None => CollectionMeta {
                kind,
                expire_ms: 0,
                version: self.next_version(),
                len: 0,
                extra: Vec::new(),
            },
        })
    }

    /// Adds the metadata write of `c` to `batch`; an empty collection deletes the key instead (Redis
    /// never keeps empty collections).
    pub(crate) fn put_collection(&self, batch: &mut WriteBatch, key: &[u8], c: &CollectionMeta) {
        if c.len == 0 {
            self.delete_meta(batch, self.phys(), key);
        } else {
            self.put_meta_raw(batch, self.phys(), key, c.kind, c.expire_ms, &c.body());
        }
    }

    /// The `data` key of sub-key `sub` of collection `c` at `key`.
    pub(crate) fn sub_key(&self, key: &[u8], c: &CollectionMeta, sub: &[u8]) -> Vec<u8> {
        keys::data_key(self.phys(), key, c.version, sub)
    }

    /// Reads one sub-key's value from family `cf` ("data" or "zscore").
    pub(crate) fn get_sub(
        &self,
        cf: &str,
        key: &[u8],
        c: &CollectionMeta,
        sub: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.storage().get(cf, &self.sub_key(key, c, sub))
    }

    /// Streams the sub-keys of collection `c` in family `cf` in key order, starting at the first
    /// sub-key `>= from` (or the beginning), calling `f(sub_key, value)` until it returns false.
    /// Holds only one entry in memory at a time.
    pub(crate) fn for_each_sub(
        &self,
        cf: &str,
        key: &[u8],
        c: &CollectionMeta,
        from: Option<&[u8]>,
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.walk_sub(cf, key, c, from, false, f)
    }

    /// Like [`Db::for_each_sub`] but from the last sub-key `<= from` (or the end) backwards.
    pub(crate) fn for_each_sub_rev(
        &self,
        cf: &str,
        key: &[u8],
        c: &CollectionMeta,
        from: Option<&[u8]>,
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.walk_sub(cf, key, c, from, true, f)
    }

    /// Streams the sub-keys of collection `c` in family `cf` that lie in `subs` (`lower..upper`),
    /// in key order (or backwards with `reverse`), calling `f(sub_key, value)` until it returns
    /// false.
    /// Both ends bound the iterator, so RocksDB never steps over deleted entries outside the
    /// range (the tombstones a queue leaves at its ends, which a prefix-bounded walk that runs
    /// past the last live sub-key would visit one by one).
    pub(crate) fn for_each_sub_between(
        &self,
        cf: &str,
        key: &[u8],
        c: &CollectionMeta,
        subs: Range<&[u8]>,
        reverse: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let prefix = keys::data_prefix(self.phys(), key, c.version);
        let lower = [&prefix[..], subs.start].concat();
        let upper = [&prefix[..], subs.end].concat();
        if upper <= lower {
            return Ok(());
        }
        let ro = IterOptions {
            lower: Some(lower.clone()),
            upper: Some(upper.clone()),
            ..IterOptions::default()
        };
        let mut it = self.storage().iter(cf, ro);
        if reverse {
            it.seek_for_prev(&upper);
        } else {
            it.seek(&lower);
        }
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            if k >= upper.as_slice() {
                if !reverse {
                    break;
                }
                // SeekForPrev lands at or before its target; the bound itself is excluded.
                it.prev();
                continue;
            }
            if k < lower.as_slice() || !f(&k[prefix.len()..], v) {
                break;
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()?;
        Ok(())
    }

    /// One iterator over the collection's sub-key range, bounded on the side it walks towards.
    pub(crate) fn walk_sub(
        &self,
        cf: &str,
        key: &[u8],
        c: &CollectionMeta,
        from: Option<&[u8]>,
        reverse: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let prefix = keys::data_prefix(self.phys(), key, c.version);
        let s = self.storage();
        let mut ro = IterOptions::default();
        if reverse {
            ro.lower = Some(prefix.clone());
        } else {
            ro.upper = Some(prefix_successor(&prefix));
        }
        let mut it = s.iter(cf, ro);
        let start = match from {
            Some(sub) => [&prefix[..], sub].concat(),
            None if reverse => prefix_successor(&prefix),
            None => prefix.clone(),
        };
        if reverse {
            it.seek_for_prev(&start);
        } else {
            it.seek(&start);
        }
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            if !k.starts_with(&prefix) || !f(&k[prefix.len()..], v) {
                break;
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()?;
        Ok(())
    }
}
