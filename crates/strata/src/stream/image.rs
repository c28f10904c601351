//! A whole stream as a serializer sees it (Redis's RDB encoding in `rdb::stream`): reading one
//! out — [`Db::stream_image`] for the counters, groups, consumers and pending entries,
//! [`Db::stream_each_in_node`] for the entries with the node each belongs to — and writing one in
//! from its parts with a [`StreamBuilder`] (entries first, in ID order, then the counters and
//! groups, as the RDB encoding orders them). The builder checks what the stream's own records
//! need to stay true (IDs ascending and not past the last ID, the length, unique groups and
//! consumers, each pending entry owned by one consumer of its group) and derives every count it
//! stores from the parts themselves. Neither side holds the key's lock: callers hold it or have
//! the directory to themselves.

use std::collections::{HashMap, HashSet};

use rocksdb::WriteBatch;

use super::{
    consumer_pel_sub, consumer_sub, decode_entry, encode_entry, entry_node, entry_sub,
    group_scoped, group_sub, pel_sub, Consumer, Group, Nack, PendingEntry, Stream, StreamId,
    TAG_CONSUMER, TAG_GROUP, TAG_PEL,
};
use crate::db::Db;
use crate::error::{Error, Result};
use crate::meta::KeyType;

/// A consumer group with its consumers and pending entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupImage {
    /// The group's name.
    pub name: Vec<u8>,
    /// The last ID delivered to the group.
    pub last_delivered: StreamId,
    /// The group's entries-read counter (`None`: unknown, Redis's -1).
    pub entries_read: Option<u64>,
    /// The pending entries in ID order, each with its owner, delivery time and count.
    pub pending: Vec<PendingEntry>,
    /// The consumers in name order with their seen time (Unix ms).
    pub consumers: Vec<(Vec<u8>, u64)>,
}

/// Everything of a stream but its entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamImage {
    /// Entries in the stream.
    pub length: u64,
    /// The last ID ever generated.
    pub last_id: StreamId,
    /// The first entry's ID as recorded (`0-0` when empty).
    pub first_id: StreamId,
    /// The greatest ID ever deleted.
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// The consumer groups in name order.
    pub groups: Vec<GroupImage>,
}

/// The error of a builder given parts that do not make a stream.
fn invalid(what: &str) -> Error {
    Error::BadRdb(format!("stream: {what}"))
}

impl Db {
    /// The counters and consumer groups of the stream at `key` (`None` if there is none).
    pub fn stream_image(&self, key: &[u8]) -> Result<Option<StreamImage>> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(None);
        };
        let mut groups = Vec::new();
        self.stream_walk(key, &s, &[TAG_GROUP], &[TAG_GROUP], false, |name, v| {
            let g = Group::decode(v)?;
            groups.push(GroupImage {
                name: name.to_vec(),
                last_delivered: g.last,
                entries_read: g.entries_read,
                ..GroupImage::default()
            });
            Ok(true)
        })?;
        for g in &mut groups {
            let prefix = group_scoped(TAG_PEL, &g.name);
            let pending = &mut g.pending;
            self.stream_walk(key, &s, &prefix, &prefix, false, |sub, v| {
                let id = StreamId::from_bytes(sub).ok_or_else(|| super::corrupt("pending key"))?;
                let n = Nack::decode(v)?;
                pending.push(PendingEntry {
                    id,
                    consumer: n.consumer,
                    delivery_ms: n.delivery_ms,
                    deliveries: n.deliveries,
                });
                Ok(true)
            })?;
            let prefix = group_scoped(TAG_CONSUMER, &g.name);
            let consumers = &mut g.consumers;
            self.stream_walk(key, &s, &prefix, &prefix, false, |name, v| {
                consumers.push((name.to_vec(), Consumer::decode(v)?.seen_ms));
                Ok(true)
            })?;
        }
        Ok(Some(StreamImage {
            length: s.c.len,
            last_id: s.last,
            first_id: s.first,
            max_deleted: s.max_deleted,
            entries_added: s.entries_added,
            groups,
        }))
    }

    /// The entries of the stream at `key` in ID order, each with the number of the node
    /// (Redis's radix-tree listpack) it belongs to, until `f` returns false.
    pub fn stream_each_in_node(
        &self,
        key: &[u8],
        mut f: impl FnMut(u64, StreamId, Vec<Vec<u8>>) -> bool,
    ) -> Result<()> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(());
        };
        self.stream_entries(key, &s, StreamId::MIN, StreamId::MAX, false, |id, v| {
            Ok(f(entry_node(v)?, id, decode_entry(v)?))
        })
    }

    /// A builder writing a new stream at `key` (replacing whatever is there) with expiry
    /// `expire_ms` (0: none).
    pub fn stream_builder(&self, key: &[u8], expire_ms: u64) -> StreamBuilder<'_> {
        let mut s = self.stream_new();
        s.c.expire_ms = expire_ms;
        StreamBuilder {
            db: self,
            key: key.to_vec(),
            s,
            batch: crate::storage::new_batch(),
            entries: 0,
            last_entry: None,
            fill: 0,
            spilled: false,
        }
    }
}

/// Writes a stream from its parts: [`StreamBuilder::node`] and [`StreamBuilder::entry`] for the
/// entries in ID order, then [`StreamBuilder::finish`] with the rest. Unless
/// [`StreamBuilder::spill`] is called, everything is written in one atomic batch at the end
/// (the old key replaced only then); a spilling builder writes as it goes (an RDB import).
pub struct StreamBuilder<'a> {
    db: &'a Db,
    key: Vec<u8>,
    s: Stream,
    batch: WriteBatch,
    entries: u64,
    last_entry: Option<StreamId>,
    fill: u64,
    spilled: bool,
}

impl StreamBuilder<'_> {
    /// Starts a new node holding `fill` entries in Redis's count (live and deleted ones): the
    /// entries that follow belong to it.
    pub fn node(&mut self, fill: u64) {
        self.s.node += 1;
        self.fill = fill;
    }

    /// Adds an entry (after a [`StreamBuilder::node`]); IDs must ascend.
    pub fn entry(&mut self, id: StreamId, fields: &[Vec<u8>]) -> Result<()> {
        if self.s.node == 0 {
            return Err(invalid("an entry outside any node"));
        }
        if self.last_entry.is_some_and(|last| id <= last) {
            return Err(invalid("entry IDs out of order"));
        }
        if !fields.len().is_multiple_of(2) {
            return Err(invalid("an entry with an odd number of fields"));
        }
        let refs: Vec<&[u8]> = fields.iter().map(|f| f.as_slice()).collect();
        let (db, key, s) = (self.db, self.key.as_slice(), &self.s);
        db.put_sub(
            &mut self.batch,
            key,
            s,
            &entry_sub(id),
            &encode_entry(s.node, &refs),
        );
        let head = &mut self.s.head;
        if head.count == 0 || head.node == self.s.node {
            head.node = self.s.node;
            head.count += 1;
            head.last = id;
        }
        self.last_entry = Some(id);
        self.entries += 1;
        Ok(())
    }

    /// Entries staged and not written yet.
    pub fn staged(&self) -> usize {
        self.batch.len()
    }

    /// Writes what is staged now (the first time with the stream's metadata as it stands, so
    /// the entries belong to a key from the start). The stream is then built in several writes.
    pub fn spill(&mut self) -> Result<()> {
        if !self.spilled {
            self.commit_meta();
            self.spilled = true;
        }
        let batch = std::mem::take(&mut self.batch);
        self.db.write(batch)
    }

    fn commit_meta(&mut self) {
        self.s.sync();
        let (db, s) = (self.db, &self.s);
        db.put_meta_raw(
            &mut self.batch,
            db.phys(),
            &self.key,
            KeyType::Stream,
            s.c.expire_ms,
            &s.c.body(),
        );
    }

    /// Checks the counters and groups of `image` against the entries given and writes them:
    /// the stream is complete.
    pub fn finish(mut self, image: &StreamImage) -> Result<()> {
        if image.length != self.entries {
            return Err(invalid("length does not match the entries"));
        }
        if self.last_entry.is_some_and(|last| last > image.last_id) {
            return Err(invalid("an entry past the last ID"));
        }
        self.s.c.len = self.entries;
        self.s.last = image.last_id;
        self.s.first = image.first_id;
        self.s.max_deleted = image.max_deleted;
        self.s.entries_added = image.entries_added;
        self.s.groups = image.groups.len() as u64;
        self.s.node_fill = if self.entries == 0 { 0 } else { self.fill };
        if self.entries == 0 {
            self.s.node = 0;
            self.s.head = super::Head::default();
        }
        let mut names = HashSet::new();
        for g in &image.groups {
            if !names.insert(g.name.as_slice()) {
                return Err(invalid("two groups of one name"));
            }
            self.stage_group(g)?;
        }
        self.commit_meta();
        let batch = std::mem::take(&mut self.batch);
        self.db.write(batch)
    }

    fn stage_group(&mut self, g: &GroupImage) -> Result<()> {
        let (db, key, s) = (self.db, self.key.as_slice(), &self.s);
        let mut owned: Vec<u64> = vec![0; g.consumers.len()];
        let mut index = HashMap::new();
        for (i, (name, _)) in g.consumers.iter().enumerate() {
            if index.insert(name.as_slice(), i).is_some() {
                return Err(invalid("two consumers of one name"));
            }
        }
        let mut ids = HashSet::new();
        for p in &g.pending {
            if !ids.insert(p.id) {
                return Err(invalid("a pending entry listed twice"));
            }
            let Some(&at) = index.get(p.consumer.as_slice()) else {
                return Err(invalid("a pending entry without its consumer"));
            };
            owned[at] += 1;
            let nack = Nack {
                delivery_ms: p.delivery_ms,
                deliveries: p.deliveries,
                consumer: p.consumer.clone(),
            };
            db.put_sub(
                &mut self.batch,
                key,
                s,
                &pel_sub(&g.name, p.id),
                &nack.encode(),
            );
            db.put_sub(
                &mut self.batch,
                key,
                s,
                &consumer_pel_sub(&g.name, &p.consumer, p.id),
                &[],
            );
        }
        for ((name, seen_ms), pel) in g.consumers.iter().zip(owned) {
            let c = Consumer {
                seen_ms: *seen_ms,
                pel,
            };
            db.put_sub(
                &mut self.batch,
                key,
                s,
                &consumer_sub(&g.name, name),
                &c.encode(),
            );
        }
        let group = Group {
            last: g.last_delivered,
            entries_read: g.entries_read,
            pel: g.pending.len() as u64,
            consumers: g.consumers.len() as u64,
        };
        db.put_sub(
            &mut self.batch,
            key,
            s,
            &group_sub(&g.name),
            &group.encode(),
        );
        Ok(())
    }
}
