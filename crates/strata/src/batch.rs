//! Atomic batches across keys: a [`Batch`] collects writes to any number of keys of one logical
//! database (strings, deletions, expiries, hash fields, set members, list items, sorted-set
//! members) and [`Db::apply`] commits them as one RocksDB write batch while holding the locks of
//! every key involved, so other writers and readers see all of them or none. Operations on the
//! same key see the batch's earlier operations (an in-memory overlay of what the batch wrote), with
//! the same semantics as the single-key methods. Knows nothing of commands.

use std::collections::HashMap;

use crate::collection::CollectionMeta;
use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::list::LIST_START;
use crate::meta::KeyType;
use crate::storage::{CF_DATA, CF_ZSCORE};
use crate::zset::{normalize, score_bytes, score_from_value, zscore_sub};

/// One write of a [`Batch`].
#[derive(Clone, Debug, PartialEq)]
enum Op {
    Set(Vec<u8>, Vec<u8>, u64),
    Del(Vec<u8>),
    ExpireAt(Vec<u8>, u64),
    HSet(Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>),
    SAdd(Vec<u8>, Vec<Vec<u8>>),
    RPush(Vec<u8>, Vec<Vec<u8>>),
    ZAdd(Vec<u8>, Vec<(f64, Vec<u8>)>),
}

impl Op {
    fn key(&self) -> &[u8] {
        match self {
            Op::Set(k, ..)
            | Op::Del(k)
            | Op::ExpireAt(k, _)
            | Op::HSet(k, _)
            | Op::SAdd(k, _)
            | Op::RPush(k, _)
            | Op::ZAdd(k, _) => k,
        }
    }
}

/// Writes to several keys, applied atomically by [`Db::apply`] in the order they were added.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let db = strata::Db::open(dir.path())?;
/// let mut batch = strata::Batch::new();
/// batch
///     .set(b"account:1", b"90")
///     .set(b"account:2", b"110")
///     .rpush(b"log", &[b"moved 10 from 1 to 2"])
///     .hset(b"meta", &[(b"last", b"transfer")]);
/// db.apply(&batch)?;
/// assert_eq!(db.get(b"account:2")?, Some(b"110".to_vec()));
/// assert_eq!(db.llen(b"log")?, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    ops: Vec<Op>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Number of operations added.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no operation was added.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// SET: stores a string (replacing a value of any type), without expiry.
    pub fn set(&mut self, key: &[u8], value: &[u8]) -> &mut Batch {
        self.ops.push(Op::Set(key.to_vec(), value.to_vec(), 0));
        self
    }

    /// SET with PXAT: stores a string that expires at Unix time `at_ms` (milliseconds).
    pub fn set_expiring(&mut self, key: &[u8], value: &[u8], at_ms: u64) -> &mut Batch {
        self.ops.push(Op::Set(key.to_vec(), value.to_vec(), at_ms));
        self
    }

    /// DEL: deletes the key if it exists.
    pub fn del(&mut self, key: &[u8]) -> &mut Batch {
        self.ops.push(Op::Del(key.to_vec()));
        self
    }

    /// PEXPIREAT: sets the key's expiry to Unix time `at_ms` (a time in the past deletes it);
    /// nothing happens if the key does not exist at that point of the batch.
    pub fn expire_at(&mut self, key: &[u8], at_ms: u64) -> &mut Batch {
        self.ops.push(Op::ExpireAt(key.to_vec(), at_ms.max(1)));
        self
    }

    /// PERSIST: removes the key's expiry.
    pub fn persist(&mut self, key: &[u8]) -> &mut Batch {
        self.ops.push(Op::ExpireAt(key.to_vec(), 0));
        self
    }

    /// HSET: sets fields of a hash (created if missing).
    pub fn hset(&mut self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> &mut Batch {
        let pairs = pairs.iter().map(|(f, v)| (f.to_vec(), v.to_vec()));
        self.ops.push(Op::HSet(key.to_vec(), pairs.collect()));
        self
    }

    /// SADD: adds members to a set (created if missing).
    pub fn sadd(&mut self, key: &[u8], members: &[&[u8]]) -> &mut Batch {
        let members = members.iter().map(|m| m.to_vec()).collect();
        self.ops.push(Op::SAdd(key.to_vec(), members));
        self
    }

    /// RPUSH: appends items to a list (created if missing).
    pub fn rpush(&mut self, key: &[u8], items: &[&[u8]]) -> &mut Batch {
        let items = items.iter().map(|m| m.to_vec()).collect();
        self.ops.push(Op::RPush(key.to_vec(), items));
        self
    }

    /// ZADD: adds members to a sorted set or updates their scores (created if missing). A NaN
    /// score makes [`Db::apply`] fail with [`Error::NotFloat`].
    pub fn zadd(&mut self, key: &[u8], members: &[(f64, &[u8])]) -> &mut Batch {
        let members = members.iter().map(|(s, m)| (*s, m.to_vec())).collect();
        self.ops.push(Op::ZAdd(key.to_vec(), members));
        self
    }
}

/// What the batch has made of one key so far.
enum Value {
    String {
        value: Vec<u8>,
        flags: u8,
        expire_ms: u64,
    },
    Collection(Staged),
}

/// A collection the batch writes to: its metadata and the members the batch has already decided
/// (`None`: absent). Members not in `members` are read from disk unless the collection is `fresh`.
struct Staged {
    c: CollectionMeta,
    fresh: bool,
    members: HashMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Staged {
    fn new(c: CollectionMeta, fresh: bool) -> Staged {
        Staged {
            c,
            fresh,
            members: HashMap::new(),
        }
    }

    /// The current `data` value of `sub` (score bytes for a zset, empty for a set).
    fn member(&self, db: &Db, key: &[u8], sub: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.members.get(sub) {
            Some(v) => Ok(v.clone()),
            None if self.fresh => Ok(None),
            None => db.get_sub(CF_DATA, key, &self.c, sub),
        }
    }

    fn list_bounds(&self) -> Result<(u64, u64)> {
        if self.c.extra.len() == 16 {
            let mut h = [0u8; 8];
            let mut t = [0u8; 8];
            h.copy_from_slice(&self.c.extra[..8]);
            t.copy_from_slice(&self.c.extra[8..]);
            Ok((u64::from_be_bytes(h), u64::from_be_bytes(t)))
        } else if self.c.len == 0 {
            Ok((LIST_START, LIST_START))
        } else {
            Err(Error::Corrupt("list metadata without bounds".into()))
        }
    }
}

impl Db {
    /// Applies every operation of `batch` atomically: one write to disk, with the locks of all its
    /// keys held, so concurrent commands see the batch whole or not at all. If an operation fails
    /// (a key of the wrong type, a NaN score), nothing is written and the error is returned.
    pub fn apply(&self, batch: &Batch) -> Result<()> {
        if batch.ops.is_empty() {
            return Ok(());
        }
        let _g = self
            .inner
            .locks
            .lock(batch.ops.iter().map(|op| (self.index, op.key())));
        let mut out = crate::storage::new_batch();
        // Keys in order of first touch, with what the batch made of them (None: deleted/missing).
        let mut order: Vec<&[u8]> = Vec::new();
        let mut state: HashMap<&[u8], Option<Value>> = HashMap::new();
        let now = now_ms();
        for op in &batch.ops {
            let key = op.key();
            if !state.contains_key(key) {
                state.insert(key, self.load_value(key)?);
                order.push(key);
            }
            let Some(slot) = state.get_mut(key) else {
                continue;
            };
            match op {
                Op::Set(_, value, at) => {
                    *slot = (*at == 0 || *at > now).then(|| Value::String {
                        value: value.clone(),
                        flags: 0,
                        expire_ms: *at,
                    });
                }
                Op::Del(_) => *slot = None,
                Op::ExpireAt(_, at) => {
                    if *at != 0 && *at <= now {
                        *slot = None;
                    } else {
                        match slot {
                            Some(Value::String { expire_ms, .. }) => *expire_ms = *at,
                            Some(Value::Collection(s)) => s.c.expire_ms = *at,
                            None => {}
                        }
                    }
                }
                Op::HSet(_, pairs) => {
                    let s = self.staged(slot, KeyType::Hash)?;
                    for (field, value) in pairs {
                        if s.member(self, key, field)?.is_none() {
                            s.c.len += 1;
                        }
                        out.put_cf(self.cf(CF_DATA), self.sub_key(key, &s.c, field), value);
                        s.members.insert(field.clone(), Some(Vec::new()));
                    }
                }
                Op::SAdd(_, members) => {
                    let s = self.staged(slot, KeyType::Set)?;
                    for m in members {
                        if s.member(self, key, m)?.is_none() {
                            s.c.len += 1;
                            out.put_cf(self.cf(CF_DATA), self.sub_key(key, &s.c, m), []);
                            s.members.insert(m.clone(), Some(Vec::new()));
                        }
                    }
                }
                Op::RPush(_, items) => {
                    let s = self.staged(slot, KeyType::List)?;
                    let (head, mut tail) = s.list_bounds()?;
                    for item in items {
                        if tail == u64::MAX {
                            return Err(Error::Corrupt("list index space exhausted".into()));
                        }
                        let sub = tail.to_be_bytes();
                        out.put_cf(self.cf(CF_DATA), self.sub_key(key, &s.c, &sub), item);
                        tail += 1;
                    }
                    s.c.len = tail - head;
                    let mut extra = head.to_be_bytes().to_vec();
                    extra.extend_from_slice(&tail.to_be_bytes());
                    s.c.extra = extra;
                }
                Op::ZAdd(_, members) => {
                    let s = self.staged(slot, KeyType::ZSet)?;
                    for (score, m) in members {
                        if score.is_nan() {
                            return Err(Error::NotFloat);
                        }
                        let score = normalize(*score);
                        match s.member(self, key, m)? {
                            Some(old) => {
                                let old = score_from_value(&old)?;
                                let sub = zscore_sub(old, m);
                                out.delete_cf(self.cf(CF_ZSCORE), self.sub_key(key, &s.c, &sub));
                            }
                            None => s.c.len += 1,
                        }
                        let bytes = score_bytes(score);
                        out.put_cf(self.cf(CF_DATA), self.sub_key(key, &s.c, m), bytes);
                        let sub = zscore_sub(score, m);
                        out.put_cf(self.cf(CF_ZSCORE), self.sub_key(key, &s.c, &sub), []);
                        s.members.insert(m.clone(), Some(bytes.to_vec()));
                    }
                }
            }
        }
        let phys = self.phys();
        for key in order {
            match state.remove(key).flatten() {
                None => self.delete_meta(&mut out, phys, key),
                Some(Value::String {
                    value,
                    flags,
                    expire_ms,
                }) => {
                    self.put_meta_flagged(
                        &mut out,
                        phys,
                        key,
                        KeyType::String,
                        flags,
                        expire_ms,
                        &value,
                    );
                }
                Some(Value::Collection(s)) => self.put_collection(&mut out, key, &s.c),
            }
        }
        self.write(out)
    }

    fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.storage().cf(name)
    }

    /// The live value of `key` as the batch's starting point.
    fn load_value(&self, key: &[u8]) -> Result<Option<Value>> {
        Ok(match self.live_meta(key)? {
            None => None,
            Some(m) if m.kind == KeyType::String => Some(Value::String {
                flags: m.flags,
                expire_ms: m.expire_ms,
                value: self.string_body(key, m)?,
            }),
            Some(m) => Some(Value::Collection(Staged::new(
                CollectionMeta::from_meta(m)?,
                false,
            ))),
        })
    }

    /// The staged collection of type `kind` in `slot`, created empty (with a new version) if the
    /// key is missing; `WrongType` if it holds another type.
    fn staged<'s>(&self, slot: &'s mut Option<Value>, kind: KeyType) -> Result<&'s mut Staged> {
        if slot.is_none() {
            let c = CollectionMeta {
                kind,
                expire_ms: 0,
                version: self.next_version(),
                len: 0,
                extra: Vec::new(),
            };
            *slot = Some(Value::Collection(Staged::new(c, true)));
        }
        match slot {
            Some(Value::Collection(s)) if s.c.kind == kind => Ok(s),
            _ => Err(Error::WrongType),
        }
    }
}
