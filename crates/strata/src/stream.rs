//! Streams: XADD, XRANGE, consumer groups and the rest of Redis's stream type on `Db`.
//!
//! A stream is a collection (see `collection.rs`) whose metadata carries, after its version and
//! length, the last generated ID, the recorded first ID, the greatest deleted ID, the number of
//! entries ever added, the number of consumer groups, the position of Redis's radix-tree node
//! the next entry joins and the head node's number, entry count and last ID (for `~` trimming).
//! Everything else lives in `data` sub-keys of the stream's version, each starting with a
//! one-byte tag: entries by ID (`0x01 ms seq`, big-endian, so ID order is key order), groups
//! (`0x02 name`), consumers (`0x03`), the group's pending entries list (`0x04`) and each
//! consumer's own pending list (`0x05`); `docs/format.md` has the bytes. XADD writes the
//! metadata and one entry; XRANGE and XREAD seek to the start ID and read only what they return;
//! trimming decides node by node from the head node kept in the metadata, reading only the
//! entries of a partial node (`=`) and, when a node goes, the next head node's, and deletes a
//! long run with one range tombstone; DEL is the usual O(1) version drop. Every write holds the
//! key's lock and commits one batch. This module knows nothing of RESP: errors that Redis words
//! per command are [`StreamError`] values the command layer words.

use std::cmp::Ordering;
use std::fmt;

use rocksdb::WriteBatch;

use crate::collection::CollectionMeta;
use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::keys;
use crate::meta::{self, KeyType};
use crate::storage::{CF_DATA, CF_META};

mod image;
pub use image::{GroupImage, StreamBuilder, StreamImage};

/// Entries per radix-tree node in Redis (`stream-node-max-entries`, default): `~` trims whole
/// nodes.
pub const NODE_MAX_ENTRIES: u64 = 100;

const TAG_ENTRY: u8 = 1;
const TAG_GROUP: u8 = 2;
const TAG_CONSUMER: u8 = 3;
const TAG_PEL: u8 = 4;
const TAG_CONSUMER_PEL: u8 = 5;

/// Trims removing at least this many entries write one range tombstone instead of one
/// tombstone per entry. Fewer go one by one: `XADD ... MAXLEN = n` trims one entry per call, and
/// a range tombstone per call would pile up in the memtable, where every read must step over
/// them.
const RANGE_TRIM_MIN: usize = 32;

/// Bytes of the stream-specific part of the metadata (after version and length).
const EXTRA_LEN: usize = 16 * 3 + 8 * 4 + 8 * 2 + 16;

/// The same before the head node's fields were added: such a record is read with the head
/// node unknown ([`Head::count`] 0).
const OLD_EXTRA_LEN: usize = 16 * 3 + 8 * 4;

/// A stream entry ID: milliseconds and sequence number, ordered as Redis orders them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl StreamId {
    /// The smallest ID, `0-0`.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The greatest ID.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// `ms-seq`.
    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The next ID, `None` after [`StreamId::MAX`].
    pub fn next(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId::new(self.ms, self.seq + 1))
        } else if self.ms < u64::MAX {
            Some(StreamId::new(self.ms + 1, 0))
        } else {
            None
        }
    }

    /// The previous ID, `None` before [`StreamId::MIN`].
    pub fn prev(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId::new(self.ms, self.seq - 1))
        } else if self.ms > 0 {
            Some(StreamId::new(self.ms - 1, u64::MAX))
        } else {
            None
        }
    }

    /// Whether it is `0-0`.
    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// `ms-seq` as bytes, built without the formatting machinery (every XADD replies with one).
    pub fn text(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(41);
        push_decimal(&mut out, self.ms);
        out.push(b'-');
        push_decimal(&mut out, self.seq);
        out
    }

    fn bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Option<StreamId> {
        if b.len() < 16 {
            return None;
        }
        Some(StreamId::new(be64(&b[..8])?, be64(&b[8..16])?))
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn be64(b: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

fn be32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("stream {what}"))
}

/// Stream failures that Redis reports with texts of its own (worded by the command layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// XADD: the ID is not greater than the stream's last ID.
    IdTooSmall,
    /// XADD: the stream's last ID is the greatest possible.
    Exhausted,
    /// XSETID: the ID is smaller than the stream's last entry.
    SetIdTooSmall,
    /// XSETID: ENTRIESADDED is smaller than the stream's length.
    EntriesAddedTooSmall,
    /// XSETID: MAXDELETEDID is greater than the ID.
    MaxDeletedTooLarge,
    /// The key or the consumer group does not exist.
    NoGroup,
    /// XGROUP CREATE: the group exists.
    BusyGroup,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamError::IdTooSmall => "the ID is equal or smaller than the stream's top item",
            StreamError::Exhausted => "the stream has exhausted the last possible ID",
            StreamError::SetIdTooSmall => "the ID is smaller than the stream's top item",
            StreamError::EntriesAddedTooSmall => "entries_added is smaller than the stream length",
            StreamError::MaxDeletedTooLarge => "the ID is smaller than max_deleted_entry_id",
            StreamError::NoGroup => "no such key or consumer group",
            StreamError::BusyGroup => "consumer group name already exists",
        })
    }
}

fn serr(e: StreamError) -> Error {
    Error::Stream(e)
}

/// The ID an XADD asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddId {
    /// `*`: the time now (or one more than the last ID).
    Auto,
    /// `ms-*`: that millisecond, the next sequence number.
    AutoSeq(u64),
    /// `ms-seq`.
    Exact(StreamId),
}

/// How to trim (XADD's and XTRIM's MAXLEN / MINID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimStrategy {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries with a smaller ID.
    MinId(StreamId),
}

/// A trim request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trim {
    /// What to trim to.
    pub strategy: TrimStrategy,
    /// `~`: only whole nodes (of [`Db::stream_node_max_entries`] entries).
    pub approx: bool,
    /// At most this many entries removed (0: no limit).
    pub limit: u64,
}

/// One entry: its ID and its field/value pairs, flattened (`f1 v1 f2 v2 ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEntry {
    /// The entry's ID.
    pub id: StreamId,
    /// Fields and values, alternating.
    pub fields: Vec<Vec<u8>>,
}

/// What XADD did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Added {
    /// The new entry's ID.
    pub id: StreamId,
    /// Entries the trim removed.
    pub trimmed: u64,
}

/// A stream's metadata, as XINFO STREAM reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// Number of entries.
    pub length: u64,
    /// Number of radix-tree nodes Redis would hold (estimated).
    pub nodes: u64,
    /// Last generated ID.
    pub last_id: StreamId,
    /// Greatest ID ever deleted.
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// The recorded first ID.
    pub first_id: StreamId,
    /// Number of consumer groups.
    pub groups: u64,
}

/// A consumer group as XINFO GROUPS reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInfo {
    /// Its name.
    pub name: Vec<u8>,
    /// Number of consumers.
    pub consumers: u64,
    /// Pending entries.
    pub pending: u64,
    /// Last delivered ID.
    pub last_delivered: StreamId,
    /// Entries read (None: unknown).
    pub entries_read: Option<u64>,
    /// Lag (None: unknown). Negative when entries-read is past entries-added (an XSETID or
    /// XGROUP ... ENTRIESREAD set them so), as Redis reports it.
    pub lag: Option<i64>,
}

/// A consumer as XINFO CONSUMERS reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// Its name.
    pub name: Vec<u8>,
    /// Pending entries.
    pub pending: u64,
    /// Unix ms of its last attempted interaction.
    pub seen_ms: u64,
}

/// One pending entry (XPENDING's extended form, XINFO STREAM FULL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    /// The entry's ID.
    pub id: StreamId,
    /// Its consumer.
    pub consumer: Vec<u8>,
    /// Unix ms of its last delivery.
    pub delivery_ms: u64,
    /// Times delivered.
    pub deliveries: u64,
}

/// XPENDING's summary form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingSummary {
    /// Number of pending entries.
    pub count: u64,
    /// Smallest and greatest pending ID (when any).
    pub range: Option<(StreamId, StreamId)>,
    /// Consumers with pending entries and how many, by name.
    pub consumers: Vec<(Vec<u8>, u64)>,
}

/// XPENDING's extended form's filter.
#[derive(Clone, Copy, Debug)]
pub struct PendingQuery<'a> {
    /// Smallest ID.
    pub start: StreamId,
    /// Greatest ID.
    pub end: StreamId,
    /// At most this many.
    pub count: u64,
    /// Only entries idle at least this many ms.
    pub min_idle: Option<u64>,
    /// Only this consumer's.
    pub consumer: Option<&'a [u8]>,
}

/// Where XREADGROUP reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupRead {
    /// `>`: entries never delivered to the group.
    New,
    /// The consumer's own pending entries after this ID.
    History(StreamId),
}

/// An entry XREADGROUP's history or XCLAIM returns: deleted entries have no fields.
pub type MaybeEntry = (StreamId, Option<Vec<Vec<u8>>>);

/// XCLAIM's options.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaimOptions {
    /// Minimum idle time of the entries to claim.
    pub min_idle: u64,
    /// IDLE / TIME: the delivery time to set (Unix ms).
    pub delivery_ms: Option<u64>,
    /// RETRYCOUNT.
    pub retry_count: Option<u64>,
    /// FORCE: create pending entries for IDs not pending (that exist in the stream).
    pub force: bool,
    /// JUSTID: do not count a delivery, return IDs only.
    pub just_id: bool,
    /// LASTID: move the group's last ID forward to this.
    pub last_id: Option<StreamId>,
}

/// What XINFO STREAM reads: the counters, the first and the last entry.
pub type StreamSummary = (StreamInfo, Option<StreamEntry>, Option<StreamEntry>);

/// What XAUTOCLAIM returns: the next cursor, the claimed entries, the deleted IDs removed.
pub type AutoClaimed = (StreamId, Vec<MaybeEntry>, Vec<StreamId>);

/// Where XGROUP CREATE / SETID puts the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupStart {
    /// `$`: the stream's last ID.
    Last,
    /// This ID.
    Id(StreamId),
}

/// The head node: the Redis radix-tree node holding the stream's first entry, kept in the
/// metadata so that a trim decides whether it can go whole without reading an entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Head {
    /// Its number (as in each entry's value).
    node: u64,
    /// Its live entries; 0 when not known (an empty stream, a record written before these
    /// fields existed, or an XDEL that emptied the node): the next trim reads the head node
    /// from the entries.
    count: u64,
    /// Its last entry's ID.
    last: StreamId,
}

/// The metadata of a loaded stream.
#[derive(Clone, Debug)]
struct Stream {
    c: CollectionMeta,
    last: StreamId,
    first: StreamId,
    max_deleted: StreamId,
    entries_added: u64,
    groups: u64,
    node: u64,
    node_fill: u64,
    head: Head,
}

impl Stream {
    fn decode(mut c: CollectionMeta) -> Result<Stream> {
        let extra = std::mem::take(&mut c.extra);
        Stream::from_parts(c, &extra)
    }

    /// The stream of a metadata record as stored (header included), read in place: `None` when
    /// the key has expired, `WrongType` when it holds another type. A command's load of its
    /// stream is this one read of the record, with no copy of it.
    fn from_record(raw: &[u8]) -> Result<Option<Stream>> {
        let expire = meta::expire_of(raw);
        if expire != 0 && expire <= now_ms() {
            return Ok(None);
        }
        let (kind, expire_ms) = meta::decode_header(raw)?;
        if kind != KeyType::Stream {
            return Err(Error::WrongType);
        }
        let body = &raw[meta::HEADER_LEN..];
        let (Some(version), Some(len)) = (be64(body), body.get(8..).and_then(be64)) else {
            return Err(corrupt("metadata lacks version/len"));
        };
        let c = CollectionMeta {
            kind,
            expire_ms,
            version,
            len,
            extra: Vec::new(),
        };
        Stream::from_parts(c, &body[16..]).map(Some)
    }

    /// The stream of collection metadata `c` whose stream-specific bytes are `e` (the fields
    /// are the truth from here on: `c.extra` is brought up to date by [`Stream::sync`]).
    fn from_parts(c: CollectionMeta, e: &[u8]) -> Result<Stream> {
        if e.len() != EXTRA_LEN && e.len() != OLD_EXTRA_LEN {
            return Err(corrupt("metadata of the wrong size"));
        }
        let id = |at: usize| StreamId::from_bytes(&e[at..]).ok_or_else(|| corrupt("id"));
        let n = |at: usize| be64(&e[at..]).ok_or_else(|| corrupt("counter"));
        let head = if e.len() == EXTRA_LEN {
            Head {
                node: n(80)?,
                count: n(88)?,
                last: id(96)?,
            }
        } else {
            Head::default()
        };
        Ok(Stream {
            head,
            last: id(0)?,
            first: id(16)?,
            max_deleted: id(32)?,
            entries_added: n(48)?,
            groups: n(56)?,
            node: n(64)?,
            node_fill: n(72)?,
            c,
        })
    }

    fn sync(&mut self) {
        let mut e = Vec::with_capacity(EXTRA_LEN);
        self.put_extra(&mut e);
        self.c.extra = e;
    }

    fn put_extra(&self, e: &mut Vec<u8>) {
        e.extend_from_slice(&self.last.bytes());
        e.extend_from_slice(&self.first.bytes());
        e.extend_from_slice(&self.max_deleted.bytes());
        for n in [
            self.entries_added,
            self.groups,
            self.node,
            self.node_fill,
            self.head.node,
            self.head.count,
        ] {
            e.extend_from_slice(&n.to_be_bytes());
        }
        e.extend_from_slice(&self.head.last.bytes());
    }

    /// The metadata body (`[version][len]` and the stream's fields), as exported.
    fn body(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(16 + EXTRA_LEN);
        b.extend_from_slice(&self.c.version.to_be_bytes());
        b.extend_from_slice(&self.c.len.to_be_bytes());
        self.put_extra(&mut b);
        b
    }

    /// The whole metadata record as stored (`meta::encode_parts` of the body), built in one
    /// allocation.
    fn record(&self) -> Vec<u8> {
        let mut r = Vec::with_capacity(meta::HEADER_LEN + 16 + EXTRA_LEN);
        r.push(KeyType::Stream.id());
        r.push(meta::ENCODING_VERSION);
        r.extend_from_slice(&self.c.expire_ms.to_be_bytes());
        r.extend_from_slice(&self.c.version.to_be_bytes());
        r.extend_from_slice(&self.c.len.to_be_bytes());
        self.put_extra(&mut r);
        r
    }

    /// Redis's `streamRangeHasTombstones(s, start, NULL)`.
    fn has_tombstones_from(&self, start: StreamId) -> bool {
        if self.c.len == 0 || self.max_deleted.is_zero() || self.first > self.max_deleted {
            return false;
        }
        start <= self.max_deleted
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the entries-read counter of `id`.
    fn distance(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.c.len == 0 && id <= self.last {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last) {
            Ordering::Equal => return Some(self.entries_added),
            Ordering::Greater => return None,
            Ordering::Less => {}
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first {
            match id.cmp(&self.first) {
                Ordering::Less => return Some(self.entries_added - self.c.len),
                Ordering::Equal => return Some(self.entries_added - self.c.len + 1),
                Ordering::Greater => {}
            }
        }
        None
    }

    /// A group's lag as XINFO reports it (Redis's `streamReplyWithCGLag`).
    fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        // Redis subtracts in `long long`: a group may have read more than was added.
        let lag = |read: u64| (self.entries_added as i64).wrapping_sub(read as i64);
        if let Some(read) = g.entries_read {
            if !self.has_tombstones_from(g.last) {
                return Some(lag(read));
            }
        }
        self.distance(g.last).map(lag)
    }
}

/// A consumer group record.
#[derive(Clone, Debug)]
struct Group {
    last: StreamId,
    entries_read: Option<u64>,
    pel: u64,
    consumers: u64,
}

impl Group {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        v.extend_from_slice(&self.last.bytes());
        let read = self.entries_read.map_or(-1i64, |r| r as i64);
        v.extend_from_slice(&read.to_be_bytes());
        v.extend_from_slice(&self.pel.to_be_bytes());
        v.extend_from_slice(&self.consumers.to_be_bytes());
        v
    }

    fn decode(v: &[u8]) -> Result<Group> {
        let bad = || corrupt("group record");
        let read = be64(v.get(16..).ok_or_else(bad)?).ok_or_else(bad)? as i64;
        Ok(Group {
            last: StreamId::from_bytes(v).ok_or_else(bad)?,
            entries_read: (read >= 0).then_some(read as u64),
            pel: be64(v.get(24..).ok_or_else(bad)?).ok_or_else(bad)?,
            consumers: be64(v.get(32..).ok_or_else(bad)?).ok_or_else(bad)?,
        })
    }
}

/// A consumer record.
#[derive(Clone, Debug)]
struct Consumer {
    seen_ms: u64,
    pel: u64,
}

impl Consumer {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16);
        v.extend_from_slice(&self.seen_ms.to_be_bytes());
        v.extend_from_slice(&self.pel.to_be_bytes());
        v
    }

    fn decode(v: &[u8]) -> Result<Consumer> {
        let bad = || corrupt("consumer record");
        Ok(Consumer {
            seen_ms: be64(v).ok_or_else(bad)?,
            pel: be64(v.get(8..).ok_or_else(bad)?).ok_or_else(bad)?,
        })
    }
}

/// A pending-entry record (value of a `0x04` sub-key).
#[derive(Clone, Debug)]
struct Nack {
    delivery_ms: u64,
    deliveries: u64,
    consumer: Vec<u8>,
}

impl Nack {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16 + self.consumer.len());
        v.extend_from_slice(&self.delivery_ms.to_be_bytes());
        v.extend_from_slice(&self.deliveries.to_be_bytes());
        v.extend_from_slice(&self.consumer);
        v
    }

    fn decode(v: &[u8]) -> Result<Nack> {
        let bad = || corrupt("pending entry");
        Ok(Nack {
            delivery_ms: be64(v).ok_or_else(bad)?,
            deliveries: be64(v.get(8..).ok_or_else(bad)?).ok_or_else(bad)?,
            consumer: v.get(16..).ok_or_else(bad)?.to_vec(),
        })
    }
}

fn entry_sub(id: StreamId) -> [u8; 17] {
    let mut s = [TAG_ENTRY; 17];
    s[1..].copy_from_slice(&id.bytes());
    s
}

fn group_sub(group: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(1 + group.len());
    s.push(TAG_GROUP);
    s.extend_from_slice(group);
    s
}

/// `[tag][group len u32][group]`: the prefix of a group's consumers or pending entries.
fn group_scoped(tag: u8, group: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(5 + group.len());
    s.push(tag);
    s.extend_from_slice(&(group.len() as u32).to_be_bytes());
    s.extend_from_slice(group);
    s
}

fn consumer_sub(group: &[u8], consumer: &[u8]) -> Vec<u8> {
    let mut s = group_scoped(TAG_CONSUMER, group);
    s.extend_from_slice(consumer);
    s
}

fn pel_sub(group: &[u8], id: StreamId) -> Vec<u8> {
    let mut s = group_scoped(TAG_PEL, group);
    s.extend_from_slice(&id.bytes());
    s
}

fn consumer_pel_prefix(group: &[u8], consumer: &[u8]) -> Vec<u8> {
    let mut s = group_scoped(TAG_CONSUMER_PEL, group);
    s.extend_from_slice(&(consumer.len() as u32).to_be_bytes());
    s.extend_from_slice(consumer);
    s
}

fn consumer_pel_sub(group: &[u8], consumer: &[u8], id: StreamId) -> Vec<u8> {
    let mut s = consumer_pel_prefix(group, consumer);
    s.extend_from_slice(&id.bytes());
    s
}

/// The value of an entry sub-key: `[node u64][n u32]([len u32][bytes])*n`.
fn encode_entry(node: u64, fields: &[&[u8]]) -> Vec<u8> {
    let size: usize = fields.iter().map(|f| f.len() + 4).sum();
    let mut v = Vec::with_capacity(12 + size);
    v.extend_from_slice(&node.to_be_bytes());
    v.extend_from_slice(&(fields.len() as u32).to_be_bytes());
    for f in fields {
        v.extend_from_slice(&(f.len() as u32).to_be_bytes());
        v.extend_from_slice(f);
    }
    v
}

fn entry_node(v: &[u8]) -> Result<u64> {
    be64(v).ok_or_else(|| corrupt("entry"))
}

fn decode_entry(v: &[u8]) -> Result<Vec<Vec<u8>>> {
    let bad = || corrupt("entry");
    let n = be32(v.get(8..).ok_or_else(bad)?).ok_or_else(bad)? as usize;
    let mut out = Vec::with_capacity(n.min(1024));
    let mut at = 12;
    for _ in 0..n {
        let len = be32(v.get(at..).ok_or_else(bad)?).ok_or_else(bad)? as usize;
        at += 4;
        out.push(v.get(at..at + len).ok_or_else(bad)?.to_vec());
        at += len;
    }
    Ok(out)
}

impl Db {
    /// `stream-node-max-entries`: how many entries a node takes before the next starts (0: no
    /// limit).
    pub fn stream_node_max_entries(&self) -> u64 {
        self.inner
            .stream_node_max_entries
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Changes `stream-node-max-entries` (default 100); streams' existing nodes keep their size.
    pub fn set_stream_node_max_entries(&self, n: u64) {
        self.inner
            .stream_node_max_entries
            .store(n, std::sync::atomic::Ordering::Relaxed)
    }

    fn stream_load(&self, key: &[u8]) -> Result<Option<Stream>> {
        self.stream_load_at(&self.meta_key(key))
    }

    /// [`Db::stream_load`] of the metadata key `meta_key` (of `self.meta_key(key)`).
    fn stream_load_at(&self, meta_key: &[u8]) -> Result<Option<Stream>> {
        let found = self
            .storage()
            .with_pinned(CF_META, meta_key, Stream::from_record)?;
        Ok(found.transpose()?.flatten())
    }

    fn stream_new(&self) -> Stream {
        let mut s = Stream {
            c: CollectionMeta {
                kind: KeyType::Stream,
                expire_ms: 0,
                version: self.next_version(),
                len: 0,
                extra: Vec::new(),
            },
            last: StreamId::MIN,
            first: StreamId::MIN,
            max_deleted: StreamId::MIN,
            entries_added: 0,
            groups: 0,
            node: 0,
            node_fill: 0,
            head: Head::default(),
        };
        s.sync();
        s
    }

    /// Writes the stream's metadata (an empty stream stays: streams outlive their entries).
    fn stream_commit(&self, mut batch: WriteBatch, key: &[u8], s: &Stream) -> Result<()> {
        self.put_meta_record(&mut batch, key, &s.record());
        self.write(batch)
    }

    fn put_sub(&self, batch: &mut WriteBatch, key: &[u8], s: &Stream, sub: &[u8], v: &[u8]) {
        batch.put_cf(self.storage().cf(CF_DATA), self.sub_key(key, &s.c, sub), v);
    }

    fn del_sub(&self, batch: &mut WriteBatch, key: &[u8], s: &Stream, sub: &[u8]) {
        batch.delete_cf(self.storage().cf(CF_DATA), self.sub_key(key, &s.c, sub));
    }

    /// Visits the sub-keys starting with `prefix` from `from` (inclusive) forward, or backward
    /// from `from` when `rev`, until `f` returns false.
    fn stream_walk(
        &self,
        key: &[u8],
        s: &Stream,
        prefix: &[u8],
        from: &[u8],
        rev: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let mut err = None;
        let mut visit = |sub: &[u8], v: &[u8]| {
            if !sub.starts_with(prefix) {
                return false;
            }
            match f(&sub[prefix.len()..], v) {
                Ok(go) => go,
                Err(e) => {
                    err = Some(e);
                    false
                }
            }
        };
        if rev {
            self.for_each_sub_rev(CF_DATA, key, &s.c, Some(from), &mut visit)?;
        } else {
            self.for_each_sub(CF_DATA, key, &s.c, Some(from), &mut visit)?;
        }
        err.map_or(Ok(()), Err)
    }

    /// Entries with IDs in `start..=end`, forward (or backward with `rev`), calling `f` until it
    /// returns false.
    fn stream_entries(
        &self,
        key: &[u8],
        s: &Stream,
        start: StreamId,
        end: StreamId,
        rev: bool,
        mut f: impl FnMut(StreamId, &[u8]) -> Result<bool>,
    ) -> Result<()> {
        if start > end {
            return Ok(());
        }
        let from = entry_sub(if rev { end } else { start });
        self.stream_walk(key, s, &[TAG_ENTRY], &from, rev, |sub, v| {
            let id = StreamId::from_bytes(sub).ok_or_else(|| corrupt("entry key"))?;
            if id < start || id > end {
                return Ok(false);
            }
            f(id, v)
        })
    }

    /// The first (or last, `last`) entry's ID.
    fn stream_edge(&self, key: &[u8], s: &Stream, last: bool) -> Result<Option<StreamId>> {
        let mut found = None;
        self.stream_entries(key, s, StreamId::MIN, StreamId::MAX, last, |id, _| {
            found = Some(id);
            Ok(false)
        })?;
        Ok(found)
    }

    fn stream_entry(&self, key: &[u8], s: &Stream, id: StreamId) -> Result<Option<Vec<Vec<u8>>>> {
        match self.get_sub(CF_DATA, key, &s.c, &entry_sub(id))? {
            Some(v) => Ok(Some(decode_entry(&v)?)),
            None => Ok(None),
        }
    }

    /// XADD: appends an entry with `fields` (field/value pairs, flattened) under `id`, then
    /// trims. `None` when the key is missing and `nomkstream` is set.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::stream::{AddId, StreamId};
    /// let db = strata::Db::open(dir.path())?;
    /// let added = db.xadd(b"events", AddId::Exact(StreamId::new(5, 1)), &[b"k", b"v"], false, None)?;
    /// assert_eq!(added.map(|a| a.id), Some(StreamId::new(5, 1)));
    /// assert_eq!(db.xlen(b"events")?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn xadd(
        &self,
        key: &[u8],
        id: AddId,
        fields: &[&[u8]],
        nomkstream: bool,
        trim: Option<Trim>,
    ) -> Result<Option<Added>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let meta_key = self.meta_key(key);
        let mut s = match self.stream_load_at(&meta_key)? {
            Some(s) => s,
            None if nomkstream => return Ok(None),
            None => self.stream_new(),
        };
        if s.last == StreamId::MAX {
            return Err(serr(StreamError::Exhausted));
        }
        let new_id = match id {
            AddId::Auto => {
                let now = now_ms();
                if now > s.last.ms {
                    StreamId::new(now, 0)
                } else {
                    s.last.next().ok_or(serr(StreamError::Exhausted))?
                }
            }
            AddId::AutoSeq(ms) => {
                if ms == s.last.ms {
                    if s.last.seq == u64::MAX {
                        return Err(serr(StreamError::IdTooSmall));
                    }
                    StreamId::new(ms, s.last.seq + 1)
                } else {
                    StreamId::new(ms, 0)
                }
            }
            AddId::Exact(id) => id,
        };
        if new_id <= s.last {
            return Err(serr(StreamError::IdTooSmall));
        }
        let node_max = self.stream_node_max_entries();
        if s.c.len == 0 || (node_max > 0 && s.node_fill >= node_max) {
            s.node += 1;
            s.node_fill = 0;
        }
        s.node_fill += 1;
        if s.c.len == 0 {
            s.head = Head {
                node: s.node,
                count: 1,
                last: new_id,
            };
        } else if s.head.count > 0 && s.head.node == s.node {
            s.head.count += 1;
            s.head.last = new_id;
        }
        let entry = encode_entry(s.node, fields);
        // The metadata key starts with the physical database: no second read of the map.
        let entry_key = keys::data_key(meta_key[0], key, s.c.version, &entry_sub(new_id));
        if s.c.len == 0 {
            s.first = new_id;
        }
        s.c.len += 1;
        s.last = new_id;
        s.entries_added += 1;
        if trim.is_none() && s.c.expire_ms == 0 {
            // Two puts, the entry and the metadata (the common XADD): encoded without a RocksDB
            // batch. Entries are read back by walks, seldom by key: the hot-record cache takes
            // only the metadata, which the next XADD reads.
            let record = s.record();
            self.storage()
                .put_cold(&[(CF_DATA, &entry_key, &entry), (CF_META, &meta_key, &record)])?;
            return Ok(Some(Added {
                id: new_id,
                trimmed: 0,
            }));
        }
        // Sized once for both records (RocksDB's batch grows by copying otherwise): its header,
        // and per record a tag, a family id and two lengths (varints of at most 5 bytes each).
        let record_len = meta::HEADER_LEN + 16 + EXTRA_LEN;
        let mut batch = WriteBatch::with_capacity_bytes(
            12 + 2 * 12 + entry_key.len() + entry.len() + meta_key.len() + record_len,
        );
        batch.put_cf(self.storage().cf(CF_DATA), &entry_key, &entry);
        let trimmed = match trim {
            Some(t) => self.stream_trim(&mut batch, key, &mut s, t, Some(new_id))?,
            None => 0,
        };
        if s.c.expire_ms == 0 {
            batch.put_cf(self.storage().cf(CF_META), &meta_key, s.record());
        } else {
            self.put_meta_record(&mut batch, key, &s.record());
        }
        // Entries are read back by walks, seldom by key: the hot-record cache takes only the
        // metadata, which the next XADD reads.
        self.storage().write_cold(batch)?;
        Ok(Some(Added {
            id: new_id,
            trimmed,
        }))
    }

    /// Removes entries from the head as `t` says (Redis's `streamTrim`); `pending` is an entry
    /// added to `batch` but not yet readable (already counted in `s`). Returns how many were
    /// removed.
    ///
    /// Decisions go node by node from the head, as Redis's do, using the head node kept in the
    /// metadata ([`Head`]): whether it can go whole needs no read, so `XADD ... MAXLEN ~ n`
    /// reads nothing until a node goes, then one node (the next head's). Only a partial node
    /// (`=` trims) is read entry by entry. What goes is always a prefix of the stream.
    fn stream_trim(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        s: &mut Stream,
        t: Trim,
        pending: Option<StreamId>,
    ) -> Result<u64> {
        // Nothing to remove: no read.
        match t.strategy {
            TrimStrategy::MaxLen(max) if s.c.len <= max => return Ok(0),
            TrimStrategy::MinId(min) if s.c.len == 0 || s.first >= min => return Ok(0),
            _ => {}
        }
        if s.head.count == 0 {
            // Not known (an older record, or an XDEL emptied the head node): read it once.
            let (head, first) = self.stream_head_from(key, s, s.first, pending)?;
            s.head = head;
            s.first = first.ok_or_else(|| corrupt("entries fewer than its length"))?;
        }
        let old_first = s.first;
        let mut removed = 0u64;
        // The greatest ID removed: every entry up to it goes.
        let mut upto: Option<StreamId> = None;
        loop {
            if let TrimStrategy::MaxLen(max) = t.strategy {
                if s.c.len <= max {
                    break;
                }
            }
            let entries = s.head.count;
            if entries == 0 || (t.limit != 0 && removed + entries > t.limit) {
                break;
            }
            let whole = match t.strategy {
                TrimStrategy::MaxLen(max) => s.c.len - entries >= max,
                TrimStrategy::MinId(min) => s.head.last < min,
            };
            if whole {
                removed += entries;
                s.c.len -= entries;
                upto = Some(s.head.last);
                if s.c.len == 0 {
                    s.head = Head::default();
                    s.first = StreamId::MIN;
                    break;
                }
                let from = s
                    .head
                    .last
                    .next()
                    .ok_or_else(|| corrupt("entry past the last ID"))?;
                let (head, first) = self.stream_head_from(key, s, from, pending)?;
                s.head = head;
                s.first = first.ok_or_else(|| corrupt("entries fewer than its length"))?;
                continue;
            }
            if t.approx {
                break;
            }
            // Part of the head node goes, entry by entry; it never empties (it would have gone
            // whole), so the entry the walk stops at is the new first.
            let len = s.c.len;
            let go = |id: StreamId, gone: u64| match t.strategy {
                TrimStrategy::MaxLen(max) => len - gone > max,
                TrimStrategy::MinId(min) => id < min,
            };
            let mut gone = 0u64;
            let mut next = None;
            self.stream_entries(key, s, s.first, s.head.last, false, |id, _| {
                if !go(id, gone) {
                    next = Some(id);
                    return Ok(false);
                }
                gone += 1;
                upto = Some(id);
                Ok(true)
            })?;
            if next.is_none() {
                next = pending.filter(|&p| p <= s.head.last && !go(p, gone));
            }
            let next = next.ok_or_else(|| corrupt("head node shorter than its count"))?;
            removed += gone;
            s.c.len -= gone;
            s.head.count -= gone;
            s.first = next;
            break;
        }
        let Some(upto) = upto else {
            return Ok(0);
        };
        if removed >= RANGE_TRIM_MIN as u64 {
            // One range tombstone covers the head (and the entry XADD put in this batch, when
            // it goes too).
            let end = upto
                .next()
                .map_or_else(|| vec![TAG_ENTRY + 1], |id| entry_sub(id).to_vec());
            batch.delete_range_cf(
                self.storage().cf(CF_DATA),
                self.sub_key(key, &s.c, &entry_sub(StreamId::MIN)),
                self.sub_key(key, &s.c, &end),
            );
        } else {
            let mut doomed = Vec::with_capacity(removed as usize);
            self.stream_entries(key, s, old_first, upto, false, |id, _| {
                doomed.push(id);
                Ok(true)
            })?;
            doomed.extend(pending.filter(|&p| p <= upto));
            for id in doomed {
                self.del_sub(batch, key, s, &entry_sub(id));
            }
        }
        Ok(removed)
    }

    /// The node of the first entry at or after `from`, and that entry's ID (`None` when there
    /// is none), reading that node's entries and one more (`pending`, an entry in the batch
    /// being built, counts as the stream's last).
    fn stream_head_from(
        &self,
        key: &[u8],
        s: &Stream,
        from: StreamId,
        pending: Option<StreamId>,
    ) -> Result<(Head, Option<StreamId>)> {
        let mut head = Head::default();
        let mut first = None;
        let mut ended = true;
        self.stream_entries(key, s, from, StreamId::MAX, false, |id, v| {
            let node = entry_node(v)?;
            if first.is_none() {
                first = Some(id);
                head = Head {
                    node,
                    count: 1,
                    last: id,
                };
            } else if node == head.node {
                head.count += 1;
                head.last = id;
            } else {
                ended = false;
                return Ok(false);
            }
            Ok(true)
        })?;
        if let Some(p) = pending.filter(|&p| ended && p >= from) {
            if first.is_none() {
                first = Some(p);
                head = Head {
                    node: s.node,
                    count: 1,
                    last: p,
                };
            } else if head.node == s.node {
                head.count += 1;
                head.last = p;
            }
        }
        Ok((head, first))
    }

    /// XTRIM: trims as `t` says; returns how many entries were removed (0 if the key is missing).
    pub fn xtrim(&self, key: &[u8], t: Trim) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut s) = self.stream_load(key)? else {
            return Ok(0);
        };
        let mut batch = crate::storage::new_batch();
        let n = self.stream_trim(&mut batch, key, &mut s, t, None)?;
        if n > 0 {
            self.stream_commit(batch, key, &s)?;
        }
        Ok(n)
    }

    /// XLEN: the number of entries (0 if the key is missing).
    pub fn xlen(&self, key: &[u8]) -> Result<u64> {
        Ok(self.stream_load(key)?.map_or(0, |s| s.c.len))
    }

    /// Whether `key` holds a stream (WRONGTYPE if it holds another type).
    pub fn stream_exists(&self, key: &[u8]) -> Result<bool> {
        Ok(self.stream_load(key)?.is_some())
    }

    /// The last generated ID of the stream (`None` if missing): what XREAD's `$` means.
    pub fn stream_last_id(&self, key: &[u8]) -> Result<Option<StreamId>> {
        Ok(self.stream_load(key)?.map(|s| s.last))
    }

    /// XRANGE / XREVRANGE: the entries with IDs in `start..=end` (at most `count`), in ID order
    /// or reversed.
    pub fn xrange(
        &self,
        key: &[u8],
        start: StreamId,
        end: StreamId,
        count: Option<u64>,
        rev: bool,
    ) -> Result<Vec<StreamEntry>> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(Vec::new());
        };
        let limit = count.unwrap_or(u64::MAX);
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.stream_entries(key, &s, start, end, rev, |id, v| {
            out.push(StreamEntry {
                id,
                fields: decode_entry(v)?,
            });
            Ok((out.len() as u64) < limit)
        })?;
        Ok(out)
    }

    /// XDEL: deletes the entries with these IDs; returns how many existed.
    pub fn xdel(&self, key: &[u8], ids: &[StreamId]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut s) = self.stream_load(key)? else {
            return Ok(0);
        };
        let mut batch = crate::storage::new_batch();
        let mut deleted = 0u64;
        let mut seen: Vec<StreamId> = Vec::new();
        let mut first_gone = false;
        for &id in ids {
            if seen.contains(&id) {
                continue;
            }
            if self.get_sub(CF_DATA, key, &s.c, &entry_sub(id))?.is_none() {
                continue;
            }
            seen.push(id);
            self.del_sub(&mut batch, key, &s, &entry_sub(id));
            deleted += 1;
            if id > s.max_deleted {
                s.max_deleted = id;
            }
            if id == s.first {
                first_gone = true;
            }
            if s.head.count > 0 && id == s.head.last {
                // The head node's last entry: not known any more, read again by the next trim.
                s.head.count = 0;
            } else if s.head.count > 0 && id < s.head.last {
                // One fewer in the head node (0: emptied, read again by the next trim).
                s.head.count -= 1;
            }
        }
        if deleted == 0 {
            return Ok(0);
        }
        s.c.len -= deleted;
        if s.c.len == 0 {
            s.first = StreamId::MIN;
            s.head = Head::default();
        } else if first_gone {
            let mut next = None;
            self.stream_entries(key, &s, s.first, StreamId::MAX, false, |id, _| {
                if seen.contains(&id) {
                    return Ok(true);
                }
                next = Some(id);
                Ok(false)
            })?;
            s.first = next.unwrap_or_default();
        }
        self.stream_commit(batch, key, &s)?;
        Ok(deleted)
    }

    /// XSETID: sets the last ID (and optionally entries-added and the max deleted ID).
    /// [`Error::NoSuchKey`] when the key is missing.
    pub fn xsetid(
        &self,
        key: &[u8],
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) -> Result<()> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut s) = self.stream_load(key)? else {
            return Err(Error::NoSuchKey);
        };
        if s.c.len > 0 {
            let top = self.stream_edge(key, &s, true)?.unwrap_or_default();
            if id < top {
                return Err(serr(StreamError::SetIdTooSmall));
            }
            if let Some(added) = entries_added {
                if s.c.len > added {
                    return Err(serr(StreamError::EntriesAddedTooSmall));
                }
            }
        }
        s.last = id;
        if let Some(added) = entries_added {
            s.entries_added = added;
        }
        if let Some(md) = max_deleted {
            s.max_deleted = md;
        }
        self.stream_commit(crate::storage::new_batch(), key, &s)
    }

    /// XINFO STREAM: the stream's counters (`None` if missing) and its first and last entries.
    pub fn xinfo_stream(&self, key: &[u8]) -> Result<Option<StreamSummary>> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(None);
        };
        let edge = |last: bool| -> Result<Option<StreamEntry>> {
            let mut e = self.xrange(key, StreamId::MIN, StreamId::MAX, Some(1), last)?;
            Ok(e.pop())
        };
        let (first, last) = (edge(false)?, edge(true)?);
        let nodes = match (&first, &last) {
            (Some(_), Some(_)) => {
                let node_of = |id: StreamId| -> Result<u64> {
                    match self.get_sub(CF_DATA, key, &s.c, &entry_sub(id))? {
                        Some(v) => entry_node(&v),
                        None => Ok(0),
                    }
                };
                let a = node_of(first.as_ref().map_or(StreamId::MIN, |e| e.id))?;
                let b = node_of(last.as_ref().map_or(StreamId::MIN, |e| e.id))?;
                b.saturating_sub(a) + 1
            }
            _ => 0,
        };
        Ok(Some((
            StreamInfo {
                length: s.c.len,
                nodes,
                last_id: s.last,
                max_deleted: s.max_deleted,
                entries_added: s.entries_added,
                first_id: s.first,
                groups: s.groups,
            },
            first,
            last,
        )))
    }

    // ----- consumer groups -----

    fn group_load(&self, key: &[u8], s: &Stream, group: &[u8]) -> Result<Option<Group>> {
        match self.get_sub(CF_DATA, key, &s.c, &group_sub(group))? {
            Some(v) => Ok(Some(Group::decode(&v)?)),
            None => Ok(None),
        }
    }

    /// The stream and the group, or [`StreamError::NoGroup`].
    fn stream_and_group(&self, key: &[u8], group: &[u8]) -> Result<(Stream, Group)> {
        let Some(s) = self.stream_load(key)? else {
            return Err(serr(StreamError::NoGroup));
        };
        let Some(g) = self.group_load(key, &s, group)? else {
            return Err(serr(StreamError::NoGroup));
        };
        Ok((s, g))
    }

    fn consumer_load(
        &self,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        name: &[u8],
    ) -> Result<Option<Consumer>> {
        match self.get_sub(CF_DATA, key, &s.c, &consumer_sub(group, name))? {
            Some(v) => Ok(Some(Consumer::decode(&v)?)),
            None => Ok(None),
        }
    }

    /// Whether `group` of the stream at `key` has a consumer `name`.
    pub fn stream_has_consumer(&self, key: &[u8], group: &[u8], name: &[u8]) -> Result<bool> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(false);
        };
        if self.group_load(key, &s, group)?.is_none() {
            return Ok(false);
        }
        Ok(self.consumer_load(key, &s, group, name)?.is_some())
    }

    /// Whether the stream at `key` has the group (false when the key is missing).
    pub fn stream_has_group(&self, key: &[u8], group: &[u8]) -> Result<bool> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(false);
        };
        Ok(self.group_load(key, &s, group)?.is_some())
    }

    /// XGROUP CREATE: creates `group` starting after `start`. With `mkstream` a missing key
    /// becomes an empty stream; without, a missing key is [`Error::NoSuchKey`].
    pub fn xgroup_create(
        &self,
        key: &[u8],
        group: &[u8],
        start: GroupStart,
        mkstream: bool,
        entries_read: Option<u64>,
    ) -> Result<()> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let mut s = match self.stream_load(key)? {
            Some(s) => s,
            None if mkstream => self.stream_new(),
            None => return Err(Error::NoSuchKey),
        };
        if self.group_load(key, &s, group)?.is_some() {
            return Err(serr(StreamError::BusyGroup));
        }
        let last = match start {
            GroupStart::Last => s.last,
            GroupStart::Id(id) => id,
        };
        let g = Group {
            last,
            entries_read,
            pel: 0,
            consumers: 0,
        };
        let mut batch = crate::storage::new_batch();
        self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
        s.groups += 1;
        self.stream_commit(batch, key, &s)
    }

    /// XGROUP SETID.
    pub fn xgroup_setid(
        &self,
        key: &[u8],
        group: &[u8],
        start: GroupStart,
        entries_read: Option<u64>,
    ) -> Result<()> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (s, mut g) = self.stream_and_group(key, group)?;
        g.last = match start {
            GroupStart::Last => s.last,
            GroupStart::Id(id) => id,
        };
        g.entries_read = entries_read;
        let mut batch = crate::storage::new_batch();
        self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
        self.write(batch)
    }

    /// XGROUP DESTROY: whether the group existed. A missing key is [`Error::NoSuchKey`].
    pub fn xgroup_destroy(&self, key: &[u8], group: &[u8]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let Some(mut s) = self.stream_load(key)? else {
            return Err(Error::NoSuchKey);
        };
        if self.group_load(key, &s, group)?.is_none() {
            return Ok(false);
        }
        let mut batch = crate::storage::new_batch();
        self.del_sub(&mut batch, key, &s, &group_sub(group));
        let cf = self.storage().cf(CF_DATA);
        for tag in [TAG_CONSUMER, TAG_PEL, TAG_CONSUMER_PEL] {
            let p = group_scoped(tag, group);
            let from = self.sub_key(key, &s.c, &p);
            let to = crate::keyspace::prefix_successor(&from);
            batch.delete_range_cf(cf, from, to);
        }
        s.groups -= 1;
        self.stream_commit(batch, key, &s)?;
        Ok(true)
    }

    /// XGROUP CREATECONSUMER: whether the consumer was created.
    pub fn xgroup_createconsumer(&self, key: &[u8], group: &[u8], name: &[u8]) -> Result<bool> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (s, mut g) = self.stream_and_group(key, group)?;
        if self.consumer_load(key, &s, group, name)?.is_some() {
            return Ok(false);
        }
        let mut batch = crate::storage::new_batch();
        self.consumer_create(&mut batch, key, &s, group, &mut g, name);
        self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
        self.write(batch)?;
        Ok(true)
    }

    fn consumer_create(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        g: &mut Group,
        name: &[u8],
    ) -> Consumer {
        let c = Consumer {
            seen_ms: now_ms(),
            pel: 0,
        };
        self.put_sub(batch, key, s, &consumer_sub(group, name), &c.encode());
        g.consumers += 1;
        c
    }

    /// XGROUP DELCONSUMER: the number of pending entries the consumer had (0 if it did not
    /// exist); they leave the group's pending list.
    pub fn xgroup_delconsumer(&self, key: &[u8], group: &[u8], name: &[u8]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (s, mut g) = self.stream_and_group(key, group)?;
        let Some(c) = self.consumer_load(key, &s, group, name)? else {
            return Ok(0);
        };
        let mut batch = crate::storage::new_batch();
        let prefix = consumer_pel_prefix(group, name);
        let mut n = 0u64;
        self.stream_walk(key, &s, &prefix, &prefix, false, |sub, _| {
            let id = StreamId::from_bytes(sub).ok_or_else(|| corrupt("pending key"))?;
            self.del_sub(&mut batch, key, &s, &pel_sub(group, id));
            self.del_sub(&mut batch, key, &s, &consumer_pel_sub(group, name, id));
            n += 1;
            Ok(true)
        })?;
        let _ = c;
        self.del_sub(&mut batch, key, &s, &consumer_sub(group, name));
        g.consumers -= 1;
        g.pel -= n.min(g.pel);
        self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
        self.write(batch)?;
        Ok(n)
    }

    /// Records (or moves) a pending entry to `consumer`; adjusts the counters of the consumers
    /// and group. `prev` is the entry's current record, if pending.
    #[allow(clippy::too_many_arguments)]
    fn nack_put(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        g: &mut Group,
        consumers: &mut Vec<(Vec<u8>, Consumer)>,
        id: StreamId,
        prev: Option<&Nack>,
        nack: &Nack,
    ) -> Result<()> {
        match prev {
            Some(p) if p.consumer == nack.consumer => {}
            Some(p) => {
                self.del_sub(batch, key, s, &consumer_pel_sub(group, &p.consumer, id));
                if let Some(c) = self.consumer_cached(key, s, group, consumers, &p.consumer)? {
                    c.pel = c.pel.saturating_sub(1);
                }
                self.put_sub(
                    batch,
                    key,
                    s,
                    &consumer_pel_sub(group, &nack.consumer, id),
                    &[],
                );
                if let Some(c) = self.consumer_cached(key, s, group, consumers, &nack.consumer)? {
                    c.pel += 1;
                }
            }
            None => {
                self.put_sub(
                    batch,
                    key,
                    s,
                    &consumer_pel_sub(group, &nack.consumer, id),
                    &[],
                );
                if let Some(c) = self.consumer_cached(key, s, group, consumers, &nack.consumer)? {
                    c.pel += 1;
                }
                g.pel += 1;
            }
        }
        self.put_sub(batch, key, s, &pel_sub(group, id), &nack.encode());
        Ok(())
    }

    /// Removes a pending entry.
    #[allow(clippy::too_many_arguments)]
    fn nack_del(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        g: &mut Group,
        consumers: &mut Vec<(Vec<u8>, Consumer)>,
        id: StreamId,
        nack: &Nack,
    ) -> Result<()> {
        self.del_sub(batch, key, s, &pel_sub(group, id));
        self.del_sub(batch, key, s, &consumer_pel_sub(group, &nack.consumer, id));
        if let Some(c) = self.consumer_cached(key, s, group, consumers, &nack.consumer)? {
            c.pel = c.pel.saturating_sub(1);
        }
        g.pel = g.pel.saturating_sub(1);
        Ok(())
    }

    /// A consumer record from the batch's working set, loaded on first use.
    fn consumer_cached<'c>(
        &self,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        consumers: &'c mut Vec<(Vec<u8>, Consumer)>,
        name: &[u8],
    ) -> Result<Option<&'c mut Consumer>> {
        if let Some(i) = consumers.iter().position(|(n, _)| n == name) {
            return Ok(Some(&mut consumers[i].1));
        }
        match self.consumer_load(key, s, group, name)? {
            Some(c) => {
                consumers.push((name.to_vec(), c));
                Ok(consumers.last_mut().map(|(_, c)| c))
            }
            None => Ok(None),
        }
    }

    fn consumers_store(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        consumers: &[(Vec<u8>, Consumer)],
    ) {
        for (name, c) in consumers {
            self.put_sub(batch, key, s, &consumer_sub(group, name), &c.encode());
        }
    }

    fn nack_load(
        &self,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        id: StreamId,
    ) -> Result<Option<Nack>> {
        match self.get_sub(CF_DATA, key, &s.c, &pel_sub(group, id))? {
            Some(v) => Ok(Some(Nack::decode(&v)?)),
            None => Ok(None),
        }
    }

    /// The IDs in `from..=to` pending in `group`, in order, found by one walk bounded to
    /// them. Entries past the group's last delivered ID are pending only after an XGROUP SETID
    /// moved it back or an XCLAIM ... FORCE claimed them, so this is usually empty: one walk
    /// instead of a lookup per entry XREADGROUP delivers (each a miss that went down to
    /// RocksDB).
    fn pending_between(
        &self,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        from: StreamId,
        to: StreamId,
    ) -> Result<Vec<StreamId>> {
        let lower = pel_sub(group, from);
        // Every sub-key of the list is its prefix and 16 bytes of ID: `to`'s and a zero byte
        // sorts after `to`'s and before the next ID's.
        let mut upper = pel_sub(group, to);
        upper.push(0);
        let at = lower.len() - 16;
        let mut ids = Vec::new();
        let mut bad = false;
        self.for_each_sub_between(
            CF_DATA,
            key,
            &s.c,
            &lower[..]..&upper[..],
            false,
            |sub, _| {
                match sub.get(at..).and_then(StreamId::from_bytes) {
                    Some(id) => ids.push(id),
                    None => bad = true,
                }
                !bad
            },
        )?;
        if bad {
            return Err(corrupt("pending key"));
        }
        Ok(ids)
    }

    /// Makes sure the consumer exists (creating it), updating its seen time.
    #[allow(clippy::too_many_arguments)]
    fn consumer_touch(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        s: &Stream,
        group: &[u8],
        g: &mut Group,
        consumers: &mut Vec<(Vec<u8>, Consumer)>,
        name: &[u8],
    ) -> Result<()> {
        match self.consumer_cached(key, s, group, consumers, name)? {
            Some(c) => c.seen_ms = now_ms(),
            None => {
                let c = self.consumer_create(batch, key, s, group, g, name);
                consumers.push((name.to_vec(), c));
            }
        }
        Ok(())
    }

    /// XREADGROUP for one stream: reads for `consumer` of `group` (created if needed) from
    /// `from`, at most `count` entries (0: no limit). New entries become pending unless `noack`.
    #[allow(clippy::too_many_arguments)]
    pub fn xreadgroup(
        &self,
        key: &[u8],
        group: &[u8],
        consumer: &[u8],
        from: GroupRead,
        count: u64,
        noack: bool,
    ) -> Result<Vec<MaybeEntry>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (s, mut g) = self.stream_and_group(key, group)?;
        let mut batch = crate::storage::new_batch();
        let mut consumers = Vec::new();
        let limit = if count == 0 { u64::MAX } else { count };
        let mut out: Vec<MaybeEntry> = Vec::new();
        match from {
            GroupRead::New => {
                let now = now_ms();
                let mut read = Vec::new();
                if let Some(start) = g.last.next() {
                    self.stream_entries(key, &s, start, StreamId::MAX, false, |id, v| {
                        read.push((id, decode_entry(v)?));
                        Ok((read.len() as u64) < limit)
                    })?;
                }
                if read.is_empty() {
                    // Nothing new: Redis neither serves nor creates the consumer.
                    return Ok(out);
                }
                self.consumer_touch(&mut batch, key, &s, group, &mut g, &mut consumers, consumer)?;
                let pending = match (read.first(), read.last()) {
                    (Some((first, _)), Some((last, _))) if !noack => {
                        self.pending_between(key, &s, group, *first, *last)?
                    }
                    _ => Vec::new(),
                };
                for (id, fields) in read {
                    if id > g.last {
                        if g.entries_read.is_some() && !s.has_tombstones_from(id) {
                            g.entries_read = g.entries_read.map(|r| r + 1);
                        } else if s.entries_added != 0 {
                            g.entries_read = s.distance(id);
                        }
                        g.last = id;
                    }
                    if !noack {
                        let prev = match pending.binary_search(&id) {
                            Ok(_) => self.nack_load(key, &s, group, id)?,
                            Err(_) => None,
                        };
                        let nack = Nack {
                            delivery_ms: now,
                            deliveries: 1,
                            consumer: consumer.to_vec(),
                        };
                        self.nack_put(
                            &mut batch,
                            key,
                            &s,
                            group,
                            &mut g,
                            &mut consumers,
                            id,
                            prev.as_ref(),
                            &nack,
                        )?;
                    }
                    out.push((id, Some(fields)));
                }
            }
            GroupRead::History(after) => {
                self.consumer_touch(&mut batch, key, &s, group, &mut g, &mut consumers, consumer)?;
                let start = after.next().unwrap_or(StreamId::MAX);
                let prefix = consumer_pel_prefix(group, consumer);
                let from = [&prefix[..], &start.bytes()].concat();
                let mut ids = Vec::new();
                self.stream_walk(key, &s, &prefix, &from, false, |sub, _| {
                    ids.push(StreamId::from_bytes(sub).ok_or_else(|| corrupt("pending key"))?);
                    Ok((ids.len() as u64) < limit)
                })?;
                let now = now_ms();
                for id in ids {
                    let fields = self.stream_entry(key, &s, id)?;
                    let nack = match fields {
                        Some(_) => self.nack_load(key, &s, group, id)?,
                        None => None,
                    };
                    if let Some(mut nack) = nack {
                        nack.delivery_ms = now;
                        nack.deliveries += 1;
                        self.put_sub(&mut batch, key, &s, &pel_sub(group, id), &nack.encode());
                    }
                    out.push((id, fields));
                }
            }
        }
        self.consumers_store(&mut batch, key, &s, group, &consumers);
        self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
        // The stream's own metadata does not change: only the group's records are written.
        self.write(batch)?;
        Ok(out)
    }

    /// XACK: acknowledges these IDs; returns how many were pending. A missing key or group
    /// acknowledges nothing.
    pub fn xack(&self, key: &[u8], group: &[u8], ids: &[StreamId]) -> Result<u64> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (s, mut g) = match self.stream_and_group(key, group) {
            Ok(sg) => sg,
            Err(Error::Stream(StreamError::NoGroup)) => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut batch = crate::storage::new_batch();
        let mut consumers = Vec::new();
        let mut acked = 0u64;
        // An ID named twice is acknowledged once.
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let subs: Vec<Vec<u8>> = ids
            .iter()
            .map(|&id| self.sub_key(key, &s.c, &pel_sub(group, id)))
            .collect();
        let found = self.storage().multi_get(CF_DATA, &subs)?;
        for (&id, record) in ids.iter().zip(found) {
            if let Some(record) = record {
                let nack = Nack::decode(&record)?;
                self.nack_del(
                    &mut batch,
                    key,
                    &s,
                    group,
                    &mut g,
                    &mut consumers,
                    id,
                    &nack,
                )?;
                acked += 1;
            }
        }
        if acked > 0 {
            self.consumers_store(&mut batch, key, &s, group, &consumers);
            self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
            self.write(batch)?;
        }
        Ok(acked)
    }

    /// XPENDING summary form.
    pub fn xpending_summary(&self, key: &[u8], group: &[u8]) -> Result<PendingSummary> {
        let (s, g) = self.stream_and_group(key, group)?;
        if g.pel == 0 {
            return Ok(PendingSummary {
                count: 0,
                range: None,
                consumers: Vec::new(),
            });
        }
        let prefix = group_scoped(TAG_PEL, group);
        let edge = |rev: bool| -> Result<StreamId> {
            let mut found = StreamId::MIN;
            let from = if rev {
                [&prefix[..], &StreamId::MAX.bytes()].concat()
            } else {
                prefix.clone()
            };
            self.stream_walk(key, &s, &prefix, &from, rev, |sub, _| {
                found = StreamId::from_bytes(sub).ok_or_else(|| corrupt("pending key"))?;
                Ok(false)
            })?;
            Ok(found)
        };
        let range = (edge(false)?, edge(true)?);
        let cprefix = group_scoped(TAG_CONSUMER, group);
        let mut consumers = Vec::new();
        self.stream_walk(key, &s, &cprefix, &cprefix, false, |name, v| {
            let c = Consumer::decode(v)?;
            if c.pel > 0 {
                consumers.push((name.to_vec(), c.pel));
            }
            Ok(true)
        })?;
        Ok(PendingSummary {
            count: g.pel,
            range: Some(range),
            consumers,
        })
    }

    /// XPENDING extended form.
    pub fn xpending(
        &self,
        key: &[u8],
        group: &[u8],
        q: PendingQuery<'_>,
    ) -> Result<Vec<PendingEntry>> {
        let (s, _g) = self.stream_and_group(key, group)?;
        let mut out = Vec::new();
        if q.count == 0 || q.start > q.end {
            return Ok(out);
        }
        let now = now_ms();
        let mut keep = |id: StreamId, nack: Nack| -> bool {
            if id > q.end {
                return false;
            }
            let idle = now.saturating_sub(nack.delivery_ms);
            if q.min_idle.is_none_or(|m| idle >= m) {
                out.push(PendingEntry {
                    id,
                    consumer: nack.consumer,
                    delivery_ms: nack.delivery_ms,
                    deliveries: nack.deliveries,
                });
            }
            (out.len() as u64) < q.count
        };
        match q.consumer {
            Some(name) => {
                let prefix = consumer_pel_prefix(group, name);
                let from = [&prefix[..], &q.start.bytes()].concat();
                self.stream_walk(key, &s, &prefix, &from, false, |sub, _| {
                    let id = StreamId::from_bytes(sub).ok_or_else(|| corrupt("pending key"))?;
                    match self.nack_load(key, &s, group, id)? {
                        Some(n) => Ok(keep(id, n)),
                        None => Ok(true),
                    }
                })?;
            }
            None => {
                let prefix = group_scoped(TAG_PEL, group);
                let from = [&prefix[..], &q.start.bytes()].concat();
                self.stream_walk(key, &s, &prefix, &from, false, |sub, v| {
                    let id = StreamId::from_bytes(sub).ok_or_else(|| corrupt("pending key"))?;
                    Ok(keep(id, Nack::decode(v)?))
                })?;
            }
        }
        Ok(out)
    }

    /// XCLAIM: gives the pending entries `ids` idle at least `o.min_idle` ms to `consumer`.
    pub fn xclaim(
        &self,
        key: &[u8],
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        o: ClaimOptions,
    ) -> Result<Vec<MaybeEntry>> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (s, mut g) = self.stream_and_group(key, group)?;
        let mut batch = crate::storage::new_batch();
        let mut consumers = Vec::new();
        let mut group_dirty = false;
        if let Some(last) = o.last_id {
            if last > g.last {
                g.last = last;
                group_dirty = true;
            }
        }
        let now = now_ms();
        let mut out = Vec::new();
        let mut touched = false;
        // The pending entries this call wrote or removed, newest last: an ID named twice sees
        // what its first claim did (the batch is not readable before it commits).
        let mut written: Vec<(StreamId, Option<Nack>)> = Vec::new();
        for &id in ids {
            let prev = match written.iter().rev().find(|(w, _)| *w == id) {
                Some((_, n)) => n.clone(),
                None => self.nack_load(key, &s, group, id)?,
            };
            let fields = self.stream_entry(key, &s, id)?;
            if fields.is_none() {
                // Deleted from the stream: it leaves the pending list.
                if let Some(p) = &prev {
                    self.nack_del(&mut batch, key, &s, group, &mut g, &mut consumers, id, p)?;
                    written.push((id, None));
                    group_dirty = true;
                }
                continue;
            }
            // FORCE makes a pending entry of an ID that is not (Redis's fresh NACK: delivered
            // now, once, to nobody).
            let (base, forced) = match prev {
                Some(p) => (p, false),
                None if o.force => (
                    Nack {
                        delivery_ms: now,
                        deliveries: 1,
                        consumer: Vec::new(),
                    },
                    true,
                ),
                None => continue,
            };
            if o.min_idle > 0 && now.saturating_sub(base.delivery_ms) < o.min_idle {
                continue;
            }
            if !touched {
                self.consumer_touch(&mut batch, key, &s, group, &mut g, &mut consumers, consumer)?;
                touched = true;
                group_dirty = true;
            }
            let mut nack = Nack {
                delivery_ms: o.delivery_ms.unwrap_or(now),
                deliveries: base.deliveries,
                consumer: consumer.to_vec(),
            };
            if let Some(rc) = o.retry_count {
                nack.deliveries = rc;
            } else if !o.just_id {
                nack.deliveries += 1;
            }
            let prev = (!forced).then_some(&base);
            self.nack_put(
                &mut batch,
                key,
                &s,
                group,
                &mut g,
                &mut consumers,
                id,
                prev,
                &nack,
            )?;
            written.push((id, Some(nack)));
            out.push((id, if o.just_id { None } else { fields }));
        }
        if group_dirty || !out.is_empty() {
            self.consumers_store(&mut batch, key, &s, group, &consumers);
            self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
            self.stream_commit(batch, key, &s)?;
        }
        Ok(out)
    }

    /// XAUTOCLAIM: claims up to `count` pending entries idle at least `min_idle` ms, from
    /// `start`, for `consumer`. Returns the next start (0-0 when done), the claimed entries and
    /// the IDs of pending entries that no longer exist (removed from the pending list).
    #[allow(clippy::too_many_arguments)]
    pub fn xautoclaim(
        &self,
        key: &[u8],
        group: &[u8],
        consumer: &[u8],
        min_idle: u64,
        start: StreamId,
        count: u64,
        just_id: bool,
    ) -> Result<AutoClaimed> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (s, mut g) = self.stream_and_group(key, group)?;
        let mut batch = crate::storage::new_batch();
        let mut consumers = Vec::new();
        let now = now_ms();
        let mut attempts = count.saturating_mul(10);
        let mut left = count;
        let mut claimed = Vec::new();
        let mut deleted = Vec::new();
        let prefix = group_scoped(TAG_PEL, group);
        let from = [&prefix[..], &start.bytes()].concat();
        let mut pending: Vec<(StreamId, Nack)> = Vec::new();
        let mut next = StreamId::MIN;
        // Read one more than the attempts allow, to tell the next cursor.
        self.stream_walk(key, &s, &prefix, &from, false, |sub, v| {
            let id = StreamId::from_bytes(sub).ok_or_else(|| corrupt("pending key"))?;
            pending.push((id, Nack::decode(v)?));
            Ok((pending.len() as u64) <= attempts)
        })?;
        let mut it = pending.into_iter();
        let mut touched = false;
        while attempts > 0 && left > 0 {
            let Some((id, nack)) = it.next() else {
                break;
            };
            attempts -= 1;
            let fields = self.stream_entry(key, &s, id)?;
            if fields.is_none() {
                self.nack_del(
                    &mut batch,
                    key,
                    &s,
                    group,
                    &mut g,
                    &mut consumers,
                    id,
                    &nack,
                )?;
                deleted.push(id);
                left -= 1;
                continue;
            }
            if min_idle > 0 && now.saturating_sub(nack.delivery_ms) < min_idle {
                continue;
            }
            if !touched {
                self.consumer_touch(&mut batch, key, &s, group, &mut g, &mut consumers, consumer)?;
                touched = true;
            }
            let new = Nack {
                delivery_ms: now,
                deliveries: nack.deliveries + u64::from(!just_id),
                consumer: consumer.to_vec(),
            };
            self.nack_put(
                &mut batch,
                key,
                &s,
                group,
                &mut g,
                &mut consumers,
                id,
                Some(&nack),
                &new,
            )?;
            claimed.push((id, if just_id { None } else { fields }));
            left -= 1;
        }
        if let Some((id, _)) = it.next() {
            next = id;
        }
        self.consumers_store(&mut batch, key, &s, group, &consumers);
        self.put_sub(&mut batch, key, &s, &group_sub(group), &g.encode());
        self.stream_commit(batch, key, &s)?;
        Ok((next, claimed, deleted))
    }

    /// XINFO GROUPS.
    pub fn xinfo_groups(&self, key: &[u8]) -> Result<Option<Vec<GroupInfo>>> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        self.stream_walk(key, &s, &[TAG_GROUP], &[TAG_GROUP], false, |name, v| {
            let g = Group::decode(v)?;
            out.push(GroupInfo {
                name: name.to_vec(),
                consumers: g.consumers,
                pending: g.pel,
                last_delivered: g.last,
                entries_read: g.entries_read,
                lag: s.lag(&g),
            });
            Ok(true)
        })?;
        Ok(Some(out))
    }

    /// XINFO CONSUMERS.
    pub fn xinfo_consumers(&self, key: &[u8], group: &[u8]) -> Result<Vec<ConsumerInfo>> {
        let (s, _g) = self.stream_and_group(key, group)?;
        let prefix = group_scoped(TAG_CONSUMER, group);
        let mut out = Vec::new();
        self.stream_walk(key, &s, &prefix, &prefix, false, |name, v| {
            let c = Consumer::decode(v)?;
            out.push(ConsumerInfo {
                name: name.to_vec(),
                pending: c.pel,
                seen_ms: c.seen_ms,
            });
            Ok(true)
        })?;
        Ok(out)
    }

    /// The pending entries of a consumer (XINFO STREAM FULL), at most `count` (0: all).
    pub fn stream_consumer_pending(
        &self,
        key: &[u8],
        group: &[u8],
        consumer: &[u8],
        count: u64,
    ) -> Result<Vec<PendingEntry>> {
        self.xpending(
            key,
            group,
            PendingQuery {
                start: StreamId::MIN,
                end: StreamId::MAX,
                count: if count == 0 { u64::MAX } else { count },
                min_idle: None,
                consumer: Some(consumer),
            },
        )
    }

    /// Every record of the stream at `key` (export): first its metadata body under an empty
    /// sub-key, then each sub-key and value in key order.
    pub fn stream_records(&self, key: &[u8], mut f: impl FnMut(&[u8], &[u8])) -> Result<()> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(());
        };
        f(&[], &s.body());
        self.for_each_sub(CF_DATA, key, &s.c, None, |sub, v| {
            f(sub, v);
            true
        })
    }

    /// Writes records read by [`Db::stream_records`] (import). The chunk with `first` set
    /// replaces the key with a new stream of that metadata (given a fresh version); later chunks
    /// add sub-keys to it.
    pub fn stream_restore_records(
        &self,
        key: &[u8],
        expire_ms: u64,
        first: bool,
        records: &[(&[u8], &[u8])],
    ) -> Result<()> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let mut batch = crate::storage::new_batch();
        let mut records = records.iter();
        let s = if first {
            let Some((sub, body)) = records.next().filter(|(sub, _)| sub.is_empty()) else {
                return Err(Error::BadDump(
                    "a stream's first record is not its metadata".into(),
                ));
            };
            let mut body = body.to_vec();
            if body.len() < 16 {
                return Err(Error::BadDump("stream metadata too short".into()));
            }
            let _ = sub;
            body[..8].copy_from_slice(&self.next_version().to_be_bytes());
            let m = crate::meta::Meta {
                kind: KeyType::Stream,
                expire_ms,
                flags: 0,
                encoding: crate::meta::ENCODING_VERSION,
                body,
            };
            let s = Stream::decode(CollectionMeta::from_meta(m)?)
                .map_err(|e| Error::BadDump(e.to_string()))?;
            self.put_meta_record(&mut batch, key, &s.record());
            s
        } else {
            self.stream_load(key)?
                .ok_or_else(|| Error::BadDump("stream records without their stream".into()))?
        };
        for (sub, v) in records {
            if sub.is_empty() {
                return Err(Error::BadDump("a stream has two metadata records".into()));
            }
            self.put_sub(&mut batch, key, &s, sub, v);
        }
        self.write(batch)
    }

    /// Streams the entries of the stream at `key` in ID order (export).
    pub fn stream_each(&self, key: &[u8], mut f: impl FnMut(&StreamEntry)) -> Result<()> {
        let Some(s) = self.stream_load(key)? else {
            return Ok(());
        };
        self.stream_entries(key, &s, StreamId::MIN, StreamId::MAX, false, |id, v| {
            f(&StreamEntry {
                id,
                fields: decode_entry(v)?,
            });
            Ok(true)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        (dir, db)
    }

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    #[test]
    fn entries_come_back_in_id_order_within_the_range_asked() -> Result<()> {
        let (_d, db) = db();
        for i in 1..=5 {
            db.xadd(b"s", AddId::Exact(id(i, 0)), &[b"f", b"v"], false, None)?;
        }
        let r = db.xrange(b"s", id(2, 0), id(4, 0), None, false)?;
        assert_eq!(r.iter().map(|e| e.id.ms).collect::<Vec<_>>(), [2, 3, 4]);
        let r = db.xrange(b"s", StreamId::MIN, StreamId::MAX, Some(2), true)?;
        assert_eq!(r.iter().map(|e| e.id.ms).collect::<Vec<_>>(), [5, 4]);
        assert_eq!(r[0].fields, vec![b"f".to_vec(), b"v".to_vec()]);
        Ok(())
    }

    #[test]
    fn xadd_after_swapdb_writes_its_entries_beside_its_metadata() -> Result<()> {
        // XADD builds the entry's key from the metadata key's database byte: after SWAPDB both
        // must name the same physical database, or the entries would land in the other one.
        let (_d, db) = db();
        let one = db.select(1)?;
        db.xadd(b"s", AddId::Exact(id(1, 0)), &[b"f", b"zero"], false, None)?;
        one.xadd(b"s", AddId::Exact(id(7, 0)), &[b"f", b"one"], false, None)?;
        db.swapdb(0, 1)?;
        db.xadd(b"s", AddId::Exact(id(8, 0)), &[b"f", b"one"], false, None)?;
        one.xadd(b"s", AddId::Exact(id(2, 0)), &[b"f", b"zero"], false, None)?;
        let ids = |d: &Db| -> Result<Vec<u64>> {
            let all = d.xrange(b"s", StreamId::MIN, StreamId::MAX, None, false)?;
            Ok(all.iter().map(|e| e.id.ms).collect())
        };
        assert_eq!(ids(&db)?, [7, 8]);
        assert_eq!(ids(&one)?, [1, 2]);
        assert_eq!((db.xlen(b"s")?, one.xlen(b"s")?), (2, 2));
        Ok(())
    }

    #[test]
    fn ids_must_grow() -> Result<()> {
        let (_d, db) = db();
        db.xadd(b"s", AddId::Exact(id(5, 5)), &[b"f", b"v"], false, None)?;
        let e = db.xadd(b"s", AddId::Exact(id(5, 5)), &[b"f", b"v"], false, None);
        assert_eq!(e, Err(Error::Stream(StreamError::IdTooSmall)));
        let a = db.xadd(b"s", AddId::AutoSeq(5), &[b"f", b"v"], false, None)?;
        assert_eq!(a.map(|a| a.id), Some(id(5, 6)));
        Ok(())
    }

    #[test]
    fn maxlen_trims_exactly_or_by_whole_nodes() -> Result<()> {
        let (_d, db) = db();
        for i in 1..=250 {
            db.xadd(b"s", AddId::Exact(id(i, 0)), &[b"f", b"v"], false, None)?;
        }
        let approx = Trim {
            strategy: TrimStrategy::MaxLen(120),
            approx: true,
            limit: 0,
        };
        assert_eq!(db.xtrim(b"s", approx)?, 100);
        assert_eq!(db.xlen(b"s")?, 150);
        let exact = Trim {
            strategy: TrimStrategy::MaxLen(10),
            approx: false,
            limit: 0,
        };
        assert_eq!(db.xtrim(b"s", exact)?, 140);
        let r = db.xrange(b"s", StreamId::MIN, StreamId::MAX, None, false)?;
        assert_eq!(r.first().map(|e| e.id), Some(id(241, 0)));
        Ok(())
    }

    #[test]
    fn xadd_with_a_trim_keeps_the_stream_at_its_bound_call_after_call() -> Result<()> {
        let (_d, db) = db();
        let approx = |max| Trim {
            strategy: TrimStrategy::MaxLen(max),
            approx: true,
            limit: 10_000,
        };
        let exact = |max| Trim {
            strategy: TrimStrategy::MaxLen(max),
            approx: false,
            limit: 0,
        };
        // `~ 150`: a node of 100 goes only once 100 can go and 150 stay (at 250 and 350).
        for i in 1..=400 {
            let a = db.xadd(
                b"s",
                AddId::Exact(id(i, 0)),
                &[b"f", b"v"],
                false,
                Some(approx(150)),
            )?;
            let trimmed = a.map_or(0, |a| a.trimmed);
            assert_eq!(
                trimmed,
                if i == 250 || i == 350 { 100 } else { 0 },
                "entry {i}"
            );
        }
        assert_eq!(db.xlen(b"s")?, 200);
        // `= 120` after that: the head goes entry by entry, a partial node included.
        for i in 401..=410 {
            let a = db.xadd(
                b"s",
                AddId::Exact(id(i, 0)),
                &[b"f", b"v"],
                false,
                Some(exact(120)),
            )?;
            assert_eq!(a.map(|a| a.trimmed), Some(if i == 401 { 81 } else { 1 }));
        }
        let r = db.xrange(b"s", StreamId::MIN, StreamId::MAX, None, false)?;
        assert_eq!(r.len(), 120);
        assert_eq!(r.first().map(|e| e.id), Some(id(291, 0)));
        let minid = Trim {
            strategy: TrimStrategy::MinId(id(300, 0)),
            approx: false,
            limit: 0,
        };
        assert_eq!(db.xtrim(b"s", minid)?, 9);
        assert_eq!(db.xtrim(b"s", minid)?, 0);
        assert_eq!(db.xlen(b"s")?, 111);
        Ok(())
    }

    /// The head node kept in the metadata, and the one read from the entries.
    fn head_kept_and_read(db: &Db, key: &[u8]) -> Result<(Head, Head)> {
        let s = db.stream_load(key)?.ok_or(Error::NoSuchKey)?;
        let (read, _) = db.stream_head_from(key, &s, s.first, None)?;
        Ok((s.head, read))
    }

    /// A stream as Redis's `streamTrim` sees it: (ID's ms, node) in ID order.
    struct Model {
        entries: Vec<(u64, u64)>,
        node: u64,
        fill: u64,
    }

    impl Model {
        fn add(&mut self, ms: u64, node_max: u64) {
            if self.entries.is_empty() || self.fill >= node_max {
                self.node += 1;
                self.fill = 0;
            }
            self.fill += 1;
            self.entries.push((ms, self.node));
        }

        fn trim(&mut self, t: Trim) -> u64 {
            let mut deleted = 0;
            loop {
                let len = self.entries.len() as u64;
                if len == 0 || matches!(t.strategy, TrimStrategy::MaxLen(max) if len <= max) {
                    break;
                }
                let node = self.entries[0].1;
                let n = self.entries.iter().take_while(|e| e.1 == node).count();
                if t.limit != 0 && deleted + n as u64 > t.limit {
                    break;
                }
                let whole = match t.strategy {
                    TrimStrategy::MaxLen(max) => len - n as u64 >= max,
                    TrimStrategy::MinId(min) => id(self.entries[n - 1].0, 0) < min,
                };
                if whole {
                    self.entries.drain(..n);
                    deleted += n as u64;
                    continue;
                }
                if !t.approx {
                    while let Some(&(ms, _)) = self.entries.first() {
                        let go = match t.strategy {
                            TrimStrategy::MaxLen(max) => self.entries.len() as u64 > max,
                            TrimStrategy::MinId(min) => id(ms, 0) < min,
                        };
                        if !go {
                            break;
                        }
                        self.entries.remove(0);
                        deleted += 1;
                    }
                }
                break;
            }
            deleted
        }
    }

    #[test]
    fn trims_decide_from_the_head_node_in_the_metadata_as_redis_decides_from_its_nodes(
    ) -> Result<()> {
        let (_d, db) = db();
        let node_max = 7;
        db.set_stream_node_max_entries(node_max);
        let mut model = Model {
            entries: Vec::new(),
            node: 0,
            fill: 0,
        };
        // A fixed pseudo-random sequence (no time, no seed from outside).
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut ms = 0;
        for step in 0..3000 {
            let len = model.entries.len() as u64;
            let first = model.entries.first().map_or(0, |e| e.0);
            let strategy = if next(3) == 0 {
                TrimStrategy::MinId(id(first + next(len + 5), 0))
            } else {
                TrimStrategy::MaxLen(next(40))
            };
            let approx = next(2) == 0;
            let trim = Trim {
                strategy,
                approx,
                limit: if approx && next(3) == 0 { next(30) } else { 0 },
            };
            match next(10) {
                0..=5 => {
                    ms += 1;
                    let t = (next(3) != 0).then_some(trim);
                    let added = db.xadd(b"s", AddId::Exact(id(ms, 0)), &[b"f", b"v"], false, t)?;
                    model.add(ms, node_max);
                    let want = t.map_or(0, |t| model.trim(t));
                    assert_eq!(
                        added.map(|a| a.trimmed),
                        Some(want),
                        "step {step}: XADD {t:?}"
                    );
                }
                6 | 7 if len > 0 => {
                    // XDEL of the first entry or of one at random.
                    let at = if next(2) == 0 { 0 } else { next(len) as usize };
                    let (gone, _) = model.entries.remove(at);
                    assert_eq!(db.xdel(b"s", &[id(gone, 0)])?, 1, "step {step}");
                }
                _ => {
                    let want = model.trim(trim);
                    assert_eq!(db.xtrim(b"s", trim)?, want, "step {step}: XTRIM {trim:?}");
                }
            }
            let got: Vec<u64> = db
                .xrange(b"s", StreamId::MIN, StreamId::MAX, None, false)?
                .iter()
                .map(|e| e.id.ms)
                .collect();
            let want: Vec<u64> = model.entries.iter().map(|e| e.0).collect();
            assert_eq!(got, want, "step {step}");
            let (kept, read) = head_kept_and_read(&db, b"s")?;
            if kept.count > 0 {
                assert_eq!(kept, read, "step {step}");
            }
            let s = db.stream_load(b"s")?.ok_or(Error::NoSuchKey)?;
            assert_eq!(
                s.first,
                id(want.first().copied().unwrap_or(0), 0),
                "step {step}"
            );
        }
        Ok(())
    }

    #[test]
    fn a_stream_record_without_the_head_node_fields_still_trims_by_whole_nodes() -> Result<()> {
        let (_d, db) = db();
        for i in 1..=250 {
            db.xadd(b"s", AddId::Exact(id(i, 0)), &[b"f", b"v"], false, None)?;
        }
        // The record as Strata wrote it before the head node's fields: 80 bytes after
        // `[version][len]`.
        let s = db.stream_load(b"s")?.ok_or(Error::NoSuchKey)?;
        let record = s.record();
        let mut batch = crate::storage::new_batch();
        db.put_meta_record(&mut batch, b"s", &record[..record.len() - 32]);
        db.write(batch)?;
        let old = db.stream_load(b"s")?.ok_or(Error::NoSuchKey)?;
        assert_eq!(old.head, Head::default());
        assert_eq!(db.xlen(b"s")?, 250);
        let approx = |max| Trim {
            strategy: TrimStrategy::MaxLen(max),
            approx: true,
            limit: 0,
        };
        let added = db.xadd(
            b"s",
            AddId::Exact(id(251, 0)),
            &[b"f", b"v"],
            false,
            Some(approx(120)),
        )?;
        assert_eq!(added.map(|a| a.trimmed), Some(100));
        let new = db.stream_load(b"s")?.ok_or(Error::NoSuchKey)?;
        let expected = Head {
            node: 2,
            count: 100,
            last: id(200, 0),
        };
        assert_eq!(new.head, expected);
        assert_eq!(new.first, id(101, 0));
        assert_eq!(db.xtrim(b"s", approx(20))?, 100);
        assert_eq!(db.xlen(b"s")?, 51);
        Ok(())
    }

    #[test]
    fn the_head_node_in_the_metadata_survives_a_restart() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        {
            let db = Db::open(dir.path())?;
            for i in 1..=250 {
                db.xadd(b"s", AddId::Exact(id(i, 0)), &[b"f", b"v"], false, None)?;
            }
            db.shutdown();
        }
        let db = Db::open(dir.path())?;
        let (kept, read) = head_kept_and_read(&db, b"s")?;
        let expected = Head {
            node: 1,
            count: 100,
            last: id(100, 0),
        };
        assert_eq!((kept, read), (expected, expected));
        let approx = Trim {
            strategy: TrimStrategy::MaxLen(120),
            approx: true,
            limit: 0,
        };
        assert_eq!(db.xtrim(b"s", approx)?, 100);
        db.shutdown();
        drop(db);
        let db = Db::open(dir.path())?;
        let (kept, _) = head_kept_and_read(&db, b"s")?;
        assert_eq!(
            kept,
            Head {
                node: 2,
                count: 100,
                last: id(200, 0)
            }
        );
        assert_eq!(db.xtrim(b"s", approx)?, 0);
        assert_eq!(db.xlen(b"s")?, 150);
        Ok(())
    }

    /// Bytes in the redo log's segments of the data directory `dir`.
    fn redo_bytes(dir: &std::path::Path) -> Result<u64> {
        let mut n = 0;
        let io = |e: std::io::Error| Error::Io(e.to_string());
        for e in std::fs::read_dir(dir.join("redo")).map_err(io)? {
            let e = e.map_err(io)?;
            if e.file_type().map_err(io)?.is_file() {
                n += e.metadata().map_err(io)?.len();
            }
        }
        Ok(n)
    }

    #[test]
    fn xadd_logs_the_metadata_as_a_patch_and_a_restart_replays_it_across_a_checkpoint() -> Result<()>
    {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let open = || {
            let opts = crate::db::Options {
                write_back: Some(1 << 30),
                ..Default::default()
            };
            Db::open_with(dir.path(), opts)
        };
        let payload = [b'x'; 100];
        let add = |db: &Db, i: u64| -> Result<StreamId> {
            let n = format!("{:012}", i * 7919);
            let fields: [&[u8]; 4] = [b"f", n.as_bytes(), b"payload", &payload];
            let added = db.xadd(b"s", AddId::Auto, &fields, false, None)?;
            added.map(|a| a.id).ok_or_else(|| corrupt("no entry added"))
        };
        let db = open()?;
        for i in 0..300 {
            add(&db, i)?;
        }
        // What the active layer held goes to RocksDB: the next XADD finds no metadata in the
        // layer to patch, logs it whole, and the ones after patch that.
        db.storage().checkpoint_tier()?;
        let before = redo_bytes(dir.path())?;
        let mut last = StreamId::MIN;
        for i in 300..1300 {
            last = add(&db, i)?;
        }
        let per_xadd = (redo_bytes(dir.path())? - before) / 1000;
        // Whole, the 138-byte metadata record made it ~355 bytes (the entry ~190).
        assert!(per_xadd < 260, "{per_xadd} bytes of redo log per XADD");
        let record = db
            .stream_load(b"s")?
            .ok_or_else(|| corrupt("no stream"))?
            .record();
        // A crash: the log is replayed at the next open (dropping a database does not
        // checkpoint it).
        drop(db);
        let db = open()?;
        let replayed = db.stream_load(b"s")?.ok_or_else(|| corrupt("no stream"))?;
        assert_eq!(replayed.record(), record);
        assert_eq!(db.xlen(b"s")?, 1300);
        assert_eq!(db.stream_last_id(b"s")?, Some(last));
        let next = add(&db, 1300)?;
        assert!(next > last);
        assert_eq!(db.xrange(b"s", last, StreamId::MAX, None, false)?.len(), 2);
        Ok(())
    }

    #[test]
    fn groups_deliver_new_entries_once_and_track_pending() -> Result<()> {
        let (_d, db) = db();
        for i in 1..=3 {
            db.xadd(b"s", AddId::Exact(id(i, 0)), &[b"f", b"v"], false, None)?;
        }
        db.xgroup_create(b"s", b"g", GroupStart::Id(StreamId::MIN), false, None)?;
        let r = db.xreadgroup(b"s", b"g", b"alice", GroupRead::New, 2, false)?;
        assert_eq!(r.len(), 2);
        let r = db.xreadgroup(b"s", b"g", b"bob", GroupRead::New, 0, false)?;
        assert_eq!(r.iter().map(|e| e.0).collect::<Vec<_>>(), [id(3, 0)]);
        let p = db.xpending_summary(b"s", b"g")?;
        assert_eq!(p.count, 3);
        assert_eq!(
            p.consumers,
            vec![(b"alice".to_vec(), 2), (b"bob".to_vec(), 1)]
        );
        assert_eq!(db.xack(b"s", b"g", &[id(1, 0), id(9, 9)])?, 1);
        let h = db.xreadgroup(
            b"s",
            b"g",
            b"alice",
            GroupRead::History(StreamId::MIN),
            0,
            false,
        )?;
        assert_eq!(h.iter().map(|e| e.0).collect::<Vec<_>>(), [id(2, 0)]);
        Ok(())
    }

    #[test]
    fn xclaim_of_an_id_named_twice_moves_it_once() -> Result<()> {
        let (_d, db) = db();
        for i in 1..=2 {
            db.xadd(b"s", AddId::Exact(id(i, 0)), &[b"f", b"v"], false, None)?;
        }
        db.xgroup_create(b"s", b"g", GroupStart::Id(StreamId::MIN), false, None)?;
        db.xreadgroup(b"s", b"g", b"alice", GroupRead::New, 1, false)?;
        // 1-0 pending for alice, 2-0 not pending (FORCE makes it so): each named twice.
        let o = ClaimOptions {
            force: true,
            ..ClaimOptions::default()
        };
        let ids = [id(1, 0), id(1, 0), id(2, 0), id(2, 0)];
        let got = db.xclaim(b"s", b"g", b"bob", &ids, o)?;
        assert_eq!(got.len(), 4);
        let p = db.xpending_summary(b"s", b"g")?;
        assert_eq!(p.count, 2);
        assert_eq!(p.consumers, vec![(b"bob".to_vec(), 2)]);
        Ok(())
    }

    #[test]
    fn new_entries_already_pending_move_to_the_reader() -> Result<()> {
        let (_d, db) = db();
        for i in 1..=5 {
            db.xadd(b"s", AddId::Exact(id(i, 0)), &[b"f", b"v"], false, None)?;
        }
        db.xgroup_create(b"s", b"g", GroupStart::Id(StreamId::MIN), false, None)?;
        // 1-0 and 2-0 pending for alice; 4-0 for carol, past the group's last ID (FORCE).
        db.xreadgroup(b"s", b"g", b"alice", GroupRead::New, 2, false)?;
        let force = ClaimOptions {
            force: true,
            ..ClaimOptions::default()
        };
        db.xclaim(b"s", b"g", b"carol", &[id(4, 0)], force)?;
        db.xgroup_setid(b"s", b"g", GroupStart::Id(StreamId::MIN), None)?;
        let r = db.xreadgroup(b"s", b"g", b"bob", GroupRead::New, 4, false)?;
        assert_eq!(r.len(), 4);
        let p = db.xpending_summary(b"s", b"g")?;
        assert_eq!(p.count, 4);
        assert_eq!(p.consumers, vec![(b"bob".to_vec(), 4)]);
        assert_eq!(p.range, Some((id(1, 0), id(4, 0))));
        // An ID named twice is acknowledged once.
        assert_eq!(db.xack(b"s", b"g", &[id(4, 0), id(1, 0), id(4, 0)])?, 2);
        assert_eq!(db.xpending_summary(b"s", b"g")?.count, 2);
        Ok(())
    }
}
