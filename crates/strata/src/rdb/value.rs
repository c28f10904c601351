//! Redis's RDB value encodings (`rdbLoadObject` / `rdbSaveObject` of Redis 7.0): the type byte and
//! the body of one value. [`read_value`] decodes every encoding Redis 7.0 reads for the types
//! Strata has — strings; lists as quicklist v2 (listpacks), quicklist (ziplists), ziplist or
//! plain; sets as intset or plain; hashes as listpack, ziplist, zipmap or plain; sorted sets as
//! listpack, ziplist, ZSET_2 or ZSET — handing out one [`Element`] at a time, so a consumer never
//! needs the whole collection at once (a compact blob is read whole: Redis bounds them). Every
//! length is checked; damage is [`Error::BadRdb`], never a panic. [`write_value`] encodes a key
//! the way Redis 7.0 does by default: listpacks for small hashes and sorted sets (at most 128
//! entries of at most 64 bytes), quicklist v2 of listpacks for lists, plain encodings otherwise
//! (sets always plain), streams as [`super::stream`] writes them, streaming a large value
//! through [`Staged`]; it is the one encoder of DUMP, RDB files and SYNC. Streams are decoded by
//! [`super::stream::read_stream`]; modules are not handled. Knows nothing of TTLs or payload
//! trailers.

use std::io::Read;

use crate::db::Db;
use crate::dump::Element;
use crate::error::{Error, Result};
use crate::meta::KeyType;

use super::compact::{intset_each, listpack_each, ziplist_each, zipmap_each, Listpack};
use super::encoding::{bad, put_binary_double, put_len, put_string, Reader};
use super::stream::write_stream;

/// RDB value type bytes (`rdb.h`).
pub mod types {
    #![allow(missing_docs)]
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
}
use types::*;

/// Quicklist v2 node containers.
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// Redis 7.0's defaults for `hash-max-listpack-*` and `zset-max-listpack-*`.
const LISTPACK_MAX_ENTRIES: usize = 128;
const LISTPACK_MAX_VALUE: usize = 64;
/// Redis 7.0's default `list-max-listpack-size` (-2: 8 KiB per node).
const LIST_NODE_BYTES: usize = 8 * 1024;

/// Whether `t` is a value type byte [`read_value`] reads (streams, 15 and 19, have their own
/// reader: [`is_stream_type`], [`super::stream::read_stream`]).
pub fn is_value_type(t: u8) -> bool {
    matches!(t, 0..=5 | 9..=14 | 16..=18)
}

/// Whether `t` is a stream's type byte.
pub fn is_stream_type(t: u8) -> bool {
    matches!(t, STREAM_LISTPACKS | STREAM_LISTPACKS_2)
}

/// The key type a value type byte stands for (`None` for module values and unknown bytes).
pub fn key_type_of(t: u8) -> Option<KeyType> {
    Some(match t {
        STRING => KeyType::String,
        LIST | LIST_ZIPLIST | LIST_QUICKLIST | LIST_QUICKLIST_2 => KeyType::List,
        SET | SET_INTSET => KeyType::Set,
        ZSET | ZSET_2 | ZSET_ZIPLIST | ZSET_LISTPACK => KeyType::ZSet,
        HASH | HASH_ZIPMAP | HASH_ZIPLIST | HASH_LISTPACK => KeyType::Hash,
        STREAM_LISTPACKS | STREAM_LISTPACKS_2 => KeyType::Stream,
        _ => return None,
    })
}

/// Receives decoded elements.
pub type Sink<'a> = &'a mut dyn FnMut(Element) -> Result<()>;

/// A score as stored in a ziplist or listpack (decimal text, `inf`, `-inf`).
fn parse_score(s: &[u8]) -> Result<f64> {
    let v: f64 = std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| bad("invalid score"))?;
    if v.is_nan() {
        return Err(bad("NaN score"));
    }
    Ok(v)
}

/// Pairs up the strings of a compact blob (field/value, member/score) into elements.
struct Pairs<'s, 'a> {
    pending: Option<Vec<u8>>,
    scored: bool,
    sink: &'s mut Sink<'a>,
}

impl Pairs<'_, '_> {
    fn push(&mut self, s: Vec<u8>) -> Result<()> {
        match self.pending.take() {
            None => {
                self.pending = Some(s);
                Ok(())
            }
            Some(first) if self.scored => (self.sink)(Element::Scored(first, parse_score(&s)?)),
            Some(first) => (self.sink)(Element::Field(first, s)),
        }
    }

    fn finish(self, n: u64) -> Result<u64> {
        if self.pending.is_some() {
            return Err(bad("odd number of entries in a paired encoding"));
        }
        Ok(n / 2)
    }
}

/// Reads the body of a value of type `t` from `r`, handing its elements to `sink` (a string's
/// single value, a list's items from head to tail, a set's members, a hash's fields, a sorted
/// set's members). Returns the key type. An empty collection is an error, as in Redis.
pub fn read_value<R: Read>(t: u8, r: &mut Reader<R>, sink: Sink<'_>) -> Result<KeyType> {
    let kind = key_type_of(t).ok_or_else(|| match t {
        MODULE | MODULE_2 => bad("module values are not supported"),
        _ => bad("unknown value type"),
    })?;
    let count: u64 = match t {
        STRING => {
            sink(Element::Value(r.string()?))?;
            1
        }
        LIST | SET => {
            let n = r.length()?;
            for _ in 0..n {
                sink(Element::Item(r.string()?))?;
            }
            n
        }
        ZSET | ZSET_2 => {
            let n = r.length()?;
            for _ in 0..n {
                let member = r.string()?;
                let score = if t == ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                if score.is_nan() {
                    return Err(bad("NaN score"));
                }
                sink(Element::Scored(member, score))?;
            }
            n
        }
        HASH => {
            let n = r.length()?;
            for _ in 0..n {
                let field = r.string()?;
                let value = r.string()?;
                sink(Element::Field(field, value))?;
            }
            n
        }
        LIST_QUICKLIST | LIST_QUICKLIST_2 => {
            let nodes = r.length()?;
            let mut n = 0;
            for _ in 0..nodes {
                let container = if t == LIST_QUICKLIST_2 {
                    r.length()?
                } else {
                    CONTAINER_PACKED
                };
                let blob = r.string()?;
                n += match container {
                    CONTAINER_PLAIN => {
                        sink(Element::Item(blob))?;
                        1
                    }
                    CONTAINER_PACKED if t == LIST_QUICKLIST_2 => {
                        listpack_each(&blob, &mut |v| sink(Element::Item(v)))?
                    }
                    CONTAINER_PACKED => ziplist_each(&blob, &mut |v| sink(Element::Item(v)))?,
                    _ => return Err(bad("unknown quicklist container")),
                };
            }
            n
        }
        LIST_ZIPLIST => {
            let blob = r.string()?;
            ziplist_each(&blob, &mut |v| sink(Element::Item(v)))?
        }
        SET_INTSET => {
            let blob = r.string()?;
            intset_each(&blob, &mut |v| sink(Element::Item(v)))?
        }
        HASH_ZIPMAP | HASH_ZIPLIST | HASH_LISTPACK | ZSET_ZIPLIST | ZSET_LISTPACK => {
            let blob = r.string()?;
            let mut sink = sink;
            let mut pairs = Pairs {
                pending: None,
                scored: matches!(t, ZSET_ZIPLIST | ZSET_LISTPACK),
                sink: &mut sink,
            };
            let mut push = |v| pairs.push(v);
            let n = match t {
                HASH_ZIPMAP => zipmap_each(&blob, &mut push)?,
                HASH_LISTPACK | ZSET_LISTPACK => listpack_each(&blob, &mut push)?,
                _ => ziplist_each(&blob, &mut push)?,
            };
            pairs.finish(n)?
        }
        _ => return Err(bad("streams are read by rdb::stream")),
    };
    if count == 0 {
        return Err(bad("empty collection"));
    }
    Ok(kind)
}

/// The text Redis gives a score inside a listpack (`d2string`): an integer when it is one,
/// otherwise a shortest round-trip form; `inf` / `-inf`.
fn score_text(s: f64) -> String {
    if s.is_infinite() {
        return if s > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if s == s.trunc() && s.abs() < (1u64 << 53) as f64 {
        return format!("{}", s as i64);
    }
    format!("{s:e}")
}

/// Staged bytes spill to the sink once they reach this size (after a whole element).
const SPILL_AT: usize = 64 * 1024;

/// Receives the bytes a [`Staged`] value spills.
pub type Spill<'a> = &'a mut dyn FnMut(&[u8]) -> Result<()>;

/// Where [`write_value`] puts an encoded value: bytes collect in [`Staged::buf`]; with a sink,
/// they spill into it whenever the buffer passes 64 KiB after a whole element, so a value of any
/// size costs that much memory. Nothing spills before the value's first element, so a key that
/// turns out to have vanished can still be dropped with what was staged before it.
pub struct Staged<'a> {
    /// The bytes not handed to the sink yet.
    pub buf: Vec<u8>,
    sink: Option<Spill<'a>>,
    spilled: bool,
    failed: Option<Error>,
}

impl<'a> Staged<'a> {
    /// Stages into `buf` only (a DUMP payload: the whole value stays in memory).
    pub fn in_memory(buf: Vec<u8>) -> Staged<'a> {
        Staged {
            buf,
            sink: None,
            spilled: false,
            failed: None,
        }
    }

    /// Stages into `buf`, spilling into `sink`.
    pub fn spilling(buf: Vec<u8>, sink: Spill<'a>) -> Staged<'a> {
        Staged {
            buf,
            sink: Some(sink),
            spilled: false,
            failed: None,
        }
    }

    /// Marks the end of an element: spills when the buffer is large.
    pub(super) fn element_done(&mut self) {
        if self.failed.is_some() || self.buf.len() < SPILL_AT {
            return;
        }
        if let Some(sink) = self.sink.as_mut() {
            match sink(&self.buf) {
                Ok(()) => {
                    self.buf.clear();
                    self.spilled = true;
                }
                Err(e) => self.failed = Some(e),
            }
        }
    }

    /// Whether an element callback should still write (no earlier sink failure).
    pub(super) fn ok(&self) -> bool {
        self.failed.is_none()
    }

    /// Ends a counted part of a value: the sink's failure if any, or an error when `seen`
    /// pieces were written where `announced` were.
    pub(super) fn check(&mut self, announced: u64, seen: u64) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if seen != announced {
            return Err(Error::Corrupt(format!(
                "a value announced {announced} parts but {seen} were read"
            )));
        }
        Ok(())
    }

    /// Ends a value whose elements were counted: `announced` was written as its length and
    /// `seen` elements followed. Drops the value (back to `mark`) if none came (the key vanished
    /// in between); a partial value is an error.
    fn close(&mut self, mark: usize, announced: u64, seen: u64) -> Result<bool> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if seen == 0 && !self.spilled {
            self.buf.truncate(mark);
            return Ok(false);
        }
        if seen == announced {
            return Ok(true);
        }
        Err(Error::Corrupt(format!(
            "a collection announced {announced} elements but {seen} were read"
        )))
    }
}

/// Whether a hash field, hash value or sorted-set member fits in a listpack.
fn small(s: &[u8]) -> bool {
    s.len() <= LISTPACK_MAX_VALUE
}

/// Where a list's quicklist node ends: the rule [`write_value`] cuts nodes by (at most 128
/// items and about 8 KiB each, as Redis 7.0's default `list-max-listpack-size -2`).
struct NodeCut {
    in_node: usize,
    bytes: usize,
}

impl NodeCut {
    /// Whether `item` starts a new node (the current one being non-empty and full); counts it.
    fn starts_node(&mut self, item: &[u8]) -> bool {
        let new = self.in_node > 0
            && (self.in_node >= LISTPACK_MAX_ENTRIES || self.bytes + item.len() > LIST_NODE_BYTES);
        if new {
            self.in_node = 0;
            self.bytes = 0;
        }
        self.in_node += 1;
        self.bytes += item.len() + 2;
        new
    }
}

/// Appends a listpack blob as an RDB string.
fn put_blob(out: &mut Vec<u8>, lp: Listpack) {
    let blob = lp.finish();
    put_len(out, blob.len() as u64);
    out.extend_from_slice(&blob);
}

/// Writes `key`'s value as Redis 7.0 would (see the module docs for the encodings chosen): its
/// type byte, then (with `named`, as in an RDB file) the key itself, then the body. A large
/// collection is read once to count its list nodes (lists) and once to write it, a member at a
/// time; at most 128 entries are held to choose a listpack. `None` if the key does not exist
/// (nothing is staged then). The key must not change meanwhile: callers hold its lock or read a
/// snapshot.
pub fn write_value(
    db: &Db,
    key: &[u8],
    named: bool,
    out: &mut Staged<'_>,
) -> Result<Option<KeyType>> {
    let Some(kind) = db.key_type(key)? else {
        return Ok(None);
    };
    let mark = out.buf.len();
    let head = |out: &mut Staged<'_>, t: u8| {
        out.buf.push(t);
        if named {
            put_string(&mut out.buf, key);
        }
    };
    let written = match kind {
        KeyType::String => match db.get(key)? {
            Some(v) => {
                head(out, STRING);
                put_string(&mut out.buf, &v);
                true
            }
            None => false,
        },
        KeyType::List => {
            let n = db.llen(key)?;
            let mut cut = NodeCut {
                in_node: 0,
                bytes: 0,
            };
            let mut nodes = 0u64;
            db.list_each(key, |v| {
                if cut.starts_node(v) || nodes == 0 {
                    nodes += 1;
                }
            })?;
            head(out, LIST_QUICKLIST_2);
            put_len(&mut out.buf, nodes);
            let mut cut = NodeCut {
                in_node: 0,
                bytes: 0,
            };
            let (mut lp, mut seen, mut emitted) = (Listpack::new(), 0u64, 0u64);
            let flush = |out: &mut Staged<'_>, lp: Listpack| {
                put_len(&mut out.buf, CONTAINER_PACKED);
                put_blob(&mut out.buf, lp);
                out.element_done();
            };
            db.list_each(key, |v| {
                if !out.ok() {
                    return;
                }
                if cut.starts_node(v) {
                    flush(out, std::mem::take(&mut lp));
                    emitted += 1;
                }
                lp.push(v);
                seen += 1;
            })?;
            if seen > 0 {
                flush(out, lp);
                emitted += 1;
            }
            out.close(mark, nodes, emitted)? && out.close(mark, n, seen)?
        }
        KeyType::Set => {
            let n = db.scard(key)?;
            head(out, SET);
            put_len(&mut out.buf, n);
            let mut seen = 0u64;
            db.set_each(key, |m| {
                if out.ok() {
                    put_string(&mut out.buf, m);
                    seen += 1;
                    out.element_done();
                }
            })?;
            out.close(mark, n, seen)?
        }
        KeyType::Hash => {
            let n = db.hlen(key)?;
            let mut seen = 0u64;
            if n as usize <= LISTPACK_MAX_ENTRIES {
                let mut pairs = Vec::new();
                db.hash_each(key, |f, v| pairs.push((f.to_vec(), v.to_vec())))?;
                seen = pairs.len() as u64;
                if pairs.iter().all(|(f, v)| small(f) && small(v)) {
                    head(out, HASH_LISTPACK);
                    let mut lp = Listpack::new();
                    for (f, v) in &pairs {
                        lp.push(f);
                        lp.push(v);
                    }
                    put_blob(&mut out.buf, lp);
                } else {
                    head(out, HASH);
                    put_len(&mut out.buf, n);
                    for (f, v) in &pairs {
                        put_string(&mut out.buf, f);
                        put_string(&mut out.buf, v);
                    }
                }
            } else {
                head(out, HASH);
                put_len(&mut out.buf, n);
                db.hash_each(key, |f, v| {
                    if out.ok() {
                        put_string(&mut out.buf, f);
                        put_string(&mut out.buf, v);
                        seen += 1;
                        out.element_done();
                    }
                })?;
            }
            out.close(mark, n, seen)?
        }
        KeyType::ZSet => {
            let n = db.zcard(key)?;
            let mut seen = 0u64;
            let mut scored = Vec::new();
            if n as usize <= LISTPACK_MAX_ENTRIES {
                db.zset_each(key, |m, s| scored.push((m.to_vec(), s)))?;
            }
            if n as usize <= LISTPACK_MAX_ENTRIES && scored.iter().all(|(m, _)| small(m)) {
                seen = scored.len() as u64;
                head(out, ZSET_LISTPACK);
                let mut lp = Listpack::new();
                for (m, s) in &scored {
                    lp.push(m);
                    lp.push(score_text(*s).as_bytes());
                }
                put_blob(&mut out.buf, lp);
            } else {
                // Highest score first, as Redis saves its skiplist from the tail.
                head(out, ZSET_2);
                put_len(&mut out.buf, n);
                db.zset_each_rev(key, |m, s| {
                    if out.ok() {
                        put_string(&mut out.buf, m);
                        put_binary_double(&mut out.buf, s);
                        seen += 1;
                        out.element_done();
                    }
                })?;
            }
            out.close(mark, n, seen)?
        }
        KeyType::Stream => {
            head(out, STREAM_LISTPACKS_2);
            let written = write_stream(db, key, out)?;
            if !written {
                out.buf.truncate(mark);
            }
            written
        }
    };
    Ok(written.then_some(kind))
}
