//! Streams in Redis's RDB encoding (`rdbSaveObject` / `rdbLoadObject` of Redis 7.0 for
//! `RDB_TYPE_STREAM_LISTPACKS_2`, 19, and the older `RDB_TYPE_STREAM_LISTPACKS`, 15): the entries
//! as a radix tree of listpack nodes, each keyed by its master ID (16 bytes, big-endian) and laid
//! out as `t_stream.c` does (a master entry of count, deleted count and field names, then each
//! entry as flags, ID deltas, fields or just values when they are the master's, and its
//! element count); then the length, last ID, first ID, greatest deleted ID and entries-added
//! counter (19 only); then the consumer groups with their last delivered ID, entries-read
//! counter (19 only), pending entries (raw ID, delivery time, delivery count) and consumers
//! (name, seen time, raw IDs of the pending entries they own). [`read_stream`] decodes one,
//! checking every count and cross-reference (damage is [`crate::Error::BadRdb`]), handing the
//! entries out one node at a time; [`write_stream`] encodes one the way Redis 7.0 does, one
//! listpack per Strata node. Knows nothing of TTLs or payload trailers.

use std::collections::HashMap;
use std::io::Read;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::stream::{GroupImage, PendingEntry, StreamId, StreamImage};

use super::compact::{listpack_each, Listpack};
use super::encoding::{bad, put_len, put_string, Reader};
use super::value::types::{STREAM_LISTPACKS, STREAM_LISTPACKS_2};
use super::value::Staged;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

/// A node's listpack is cut when its values pass this many bytes (Redis refuses listpacks of
/// 1 GiB; its own nodes stay far smaller).
const NODE_MAX_BYTES: usize = 256 << 20;

/// What [`read_stream`] hands out, in order: a node (with its entry count in Redis's sense,
/// live and deleted ones), then that node's live entries (fields and values, flattened).
pub enum Part<'a> {
    /// A new node.
    Node(u64),
    /// An entry of the current node.
    Entry(StreamId, &'a [Vec<u8>]),
}

fn id_from_raw(b: &[u8]) -> Result<StreamId> {
    if b.len() != 16 {
        return Err(bad("a stream ID of the wrong size"));
    }
    let mut ms = [0u8; 8];
    let mut seq = [0u8; 8];
    ms.copy_from_slice(&b[..8]);
    seq.copy_from_slice(&b[8..]);
    Ok(StreamId::new(
        u64::from_be_bytes(ms),
        u64::from_be_bytes(seq),
    ))
}

fn id_raw(id: StreamId) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&id.ms.to_be_bytes());
    b[8..].copy_from_slice(&id.seq.to_be_bytes());
    b
}

fn read_id<R: Read>(r: &mut Reader<R>) -> Result<StreamId> {
    Ok(StreamId::new(r.length()?, r.length()?))
}

fn read_raw_id<R: Read>(r: &mut Reader<R>) -> Result<StreamId> {
    let mut b = [0u8; 16];
    r.exact(&mut b)?;
    id_from_raw(&b)
}

/// Walks the elements of one node's listpack.
struct Elements<'a> {
    items: std::slice::Iter<'a, Vec<u8>>,
}

impl<'a> Elements<'a> {
    fn next(&mut self) -> Result<&'a Vec<u8>> {
        self.items
            .next()
            .ok_or_else(|| bad("stream listpack ends inside an entry"))
    }

    fn int(&mut self) -> Result<i64> {
        std::str::from_utf8(self.next()?)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("stream listpack: an integer expected"))
    }

    fn count(&mut self) -> Result<u64> {
        u64::try_from(self.int()?).map_err(|_| bad("stream listpack: a negative count"))
    }
}

/// Decodes one node: `master` is its key, `blob` its listpack. Entries must come after `after`.
fn read_node(
    master: StreamId,
    blob: &[u8],
    after: &mut Option<StreamId>,
    sink: &mut dyn FnMut(Part<'_>) -> Result<()>,
) -> Result<()> {
    let mut items = Vec::new();
    listpack_each(blob, &mut |v| {
        items.push(v);
        Ok(())
    })?;
    if items.is_empty() {
        return Err(bad("empty listpack inside a stream"));
    }
    let mut e = Elements {
        items: items.iter(),
    };
    let live = e.count()?;
    let deleted = e.count()?;
    let master_fields = e.count()?;
    let mut names = Vec::new();
    for _ in 0..master_fields {
        names.push(e.next()?.clone());
    }
    if e.int()? != 0 {
        return Err(bad("stream master entry without its terminator"));
    }
    let total = live
        .checked_add(deleted)
        .ok_or_else(|| bad("stream node count out of range"))?;
    sink(Part::Node(total))?;
    let mut seen_live = 0u64;
    let mut fields: Vec<Vec<u8>> = Vec::new();
    for _ in 0..total {
        let flags = e.int()?;
        let ms = master.ms.wrapping_add(e.int()? as u64);
        let seq = master.seq.wrapping_add(e.int()? as u64);
        let id = StreamId::new(ms, seq);
        fields.clear();
        let expected = if flags & FLAG_SAMEFIELDS != 0 {
            for name in &names {
                fields.push(name.clone());
                fields.push(e.next()?.clone());
            }
            master_fields + 3
        } else {
            let n = e.count()?;
            for _ in 0..n {
                fields.push(e.next()?.clone());
                fields.push(e.next()?.clone());
            }
            n.checked_mul(2)
                .and_then(|v| v.checked_add(4))
                .ok_or_else(|| bad("stream entry field count out of range"))?
        };
        if e.count()? != expected {
            return Err(bad("stream entry element count does not match"));
        }
        if after.is_some_and(|a| id <= a) {
            return Err(bad("stream entry IDs out of order"));
        }
        *after = Some(id);
        if flags & FLAG_DELETED == 0 {
            seen_live += 1;
            sink(Part::Entry(id, &fields))?;
        }
    }
    if e.items.next().is_some() {
        return Err(bad("stream listpack has elements past its entries"));
    }
    if seen_live != live {
        return Err(bad("stream node count does not match its entries"));
    }
    Ok(())
}

/// Redis's `streamEstimateDistanceFromFirstEverEntry` for a stream loaded from type 15 (no
/// deletions recorded, entries added = length): a group's entries-read counter.
fn estimate_read(image: &StreamImage, id: StreamId) -> Option<u64> {
    if image.entries_added == 0 {
        return Some(0);
    }
    if image.length == 0 && id <= image.last_id {
        return Some(image.entries_added);
    }
    if id == image.last_id {
        return Some(image.entries_added);
    }
    if id > image.last_id {
        return None;
    }
    if id < image.first_id {
        return Some(image.entries_added - image.length);
    }
    if id == image.first_id {
        return Some(image.entries_added - image.length + 1);
    }
    None
}

/// Reads a stream value of type `t` (15 or 19) from `r`, handing its nodes and entries to
/// `sink`; returns everything else.
pub fn read_stream<R: Read>(
    t: u8,
    r: &mut Reader<R>,
    sink: &mut dyn FnMut(Part<'_>) -> Result<()>,
) -> Result<StreamImage> {
    if t != STREAM_LISTPACKS && t != STREAM_LISTPACKS_2 {
        return Err(bad("not a stream type"));
    }
    let nodes = r.length()?;
    let mut after = None;
    let mut first_entry = None;
    let mut last_master = None;
    for _ in 0..nodes {
        let master = id_from_raw(&r.string()?)?;
        if last_master.is_some_and(|m| master <= m) {
            return Err(bad("stream nodes out of order"));
        }
        last_master = Some(master);
        let blob = r.string()?;
        read_node(master, &blob, &mut after, &mut |p| {
            if let Part::Entry(id, _) = p {
                first_entry.get_or_insert(id);
            }
            sink(p)
        })?;
    }
    let length = r.length()?;
    let last_id = read_id(r)?;
    let mut image = StreamImage {
        length,
        last_id,
        ..StreamImage::default()
    };
    if t == STREAM_LISTPACKS_2 {
        image.first_id = read_id(r)?;
        image.max_deleted = read_id(r)?;
        image.entries_added = r.length()?;
    } else {
        image.first_id = first_entry.unwrap_or(StreamId::MIN);
        image.entries_added = length;
    }
    let groups = r.length()?;
    for _ in 0..groups {
        let name = r.string()?;
        let last_delivered = read_id(r)?;
        let entries_read = if t == STREAM_LISTPACKS_2 {
            i64::try_from(r.length()?).ok().map(|v| v as u64)
        } else {
            estimate_read(&image, last_delivered)
        };
        let mut pending: Vec<PendingEntry> = Vec::new();
        let mut at: HashMap<StreamId, usize> = HashMap::new();
        for _ in 0..r.length()? {
            let id = read_raw_id(r)?;
            let delivery_ms = r.u64_le()?;
            let deliveries = r.length()?;
            if at.insert(id, pending.len()).is_some() {
                return Err(bad("a pending entry listed twice"));
            }
            pending.push(PendingEntry {
                id,
                consumer: Vec::new(),
                delivery_ms,
                deliveries,
            });
        }
        let mut owned = vec![false; pending.len()];
        let mut consumers = Vec::new();
        for _ in 0..r.length()? {
            let cname = r.string()?;
            let seen = r.u64_le()?;
            for _ in 0..r.length()? {
                let id = read_raw_id(r)?;
                let Some(&i) = at.get(&id) else {
                    return Err(bad("a consumer's pending entry is not in its group's"));
                };
                if owned[i] {
                    return Err(bad("a pending entry owned twice"));
                }
                owned[i] = true;
                pending[i].consumer = cname.clone();
            }
            consumers.push((cname, seen));
        }
        if owned.iter().any(|o| !o) {
            return Err(bad("a pending entry without a consumer"));
        }
        image.groups.push(GroupImage {
            name,
            last_delivered,
            entries_read,
            pending,
            consumers,
        });
    }
    Ok(image)
}

/// Where a node's listpack ends: Strata's node number changes, or the values pass
/// [`NODE_MAX_BYTES`].
struct NodeCut {
    node: Option<u64>,
    bytes: usize,
}

impl NodeCut {
    fn starts_node(&mut self, node: u64, fields: &[Vec<u8>]) -> bool {
        let size: usize = fields.iter().map(|f| f.len()).sum();
        let new = self.node != Some(node) || self.bytes + size > NODE_MAX_BYTES;
        if new {
            self.node = Some(node);
            self.bytes = 0;
        }
        self.bytes += size;
        new
    }
}

/// Builds one node's listpack from its entries (the master entry from the first one).
fn node_blob(entries: &[(StreamId, Vec<Vec<u8>>)]) -> Vec<u8> {
    let mut lp = Listpack::new();
    let int = |lp: &mut Listpack, v: i64| lp.push(v.to_string().as_bytes());
    let Some((master, first)) = entries.first() else {
        return lp.finish();
    };
    let names: Vec<&[u8]> = first.iter().step_by(2).map(|f| f.as_slice()).collect();
    int(&mut lp, entries.len() as i64);
    int(&mut lp, 0);
    int(&mut lp, names.len() as i64);
    for n in &names {
        lp.push(n);
    }
    int(&mut lp, 0);
    for (id, fields) in entries {
        let same = fields.len() == names.len() * 2
            && fields.iter().step_by(2).zip(&names).all(|(f, n)| f == n);
        int(&mut lp, if same { FLAG_SAMEFIELDS } else { 0 });
        int(&mut lp, id.ms.wrapping_sub(master.ms) as i64);
        int(&mut lp, id.seq.wrapping_sub(master.seq) as i64);
        let pairs = (fields.len() / 2) as i64;
        if same {
            for v in fields.iter().skip(1).step_by(2) {
                lp.push(v);
            }
            int(&mut lp, pairs + 3);
        } else {
            int(&mut lp, pairs);
            for f in fields {
                lp.push(f);
            }
            int(&mut lp, pairs * 2 + 4);
        }
    }
    lp.finish()
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// Appends what follows a stream's nodes: its counters and groups, as type `t` (15 or 19)
/// lays them out.
fn put_tail(out: &mut Staged<'_>, image: &StreamImage, t: u8) {
    let v2 = t == STREAM_LISTPACKS_2;
    put_len(&mut out.buf, image.length);
    put_id(&mut out.buf, image.last_id);
    if v2 {
        put_id(&mut out.buf, image.first_id);
        put_id(&mut out.buf, image.max_deleted);
        put_len(&mut out.buf, image.entries_added);
    }
    put_len(&mut out.buf, image.groups.len() as u64);
    for g in &image.groups {
        put_string(&mut out.buf, &g.name);
        put_id(&mut out.buf, g.last_delivered);
        if v2 {
            put_len(&mut out.buf, g.entries_read.unwrap_or(u64::MAX));
        }
        put_len(&mut out.buf, g.pending.len() as u64);
        for p in &g.pending {
            out.buf.extend_from_slice(&id_raw(p.id));
            out.buf.extend_from_slice(&p.delivery_ms.to_le_bytes());
            put_len(&mut out.buf, p.deliveries);
        }
        put_len(&mut out.buf, g.consumers.len() as u64);
        let mut owned: HashMap<&[u8], Vec<StreamId>> = HashMap::new();
        for p in &g.pending {
            owned.entry(p.consumer.as_slice()).or_default().push(p.id);
        }
        for (name, seen) in &g.consumers {
            put_string(&mut out.buf, name);
            out.buf.extend_from_slice(&seen.to_le_bytes());
            let ids = owned.get(name.as_slice()).map_or(&[][..], |v| v.as_slice());
            put_len(&mut out.buf, ids.len() as u64);
            for id in ids {
                out.buf.extend_from_slice(&id_raw(*id));
            }
        }
        out.element_done();
    }
}

/// Appends the body of the stream at `key` (after its type byte) as Redis 7.0 writes type 19.
/// `false` if the key is gone (nothing written). The stream must not change meanwhile.
pub fn write_stream(db: &Db, key: &[u8], out: &mut Staged<'_>) -> Result<bool> {
    write_stream_as(db, key, out, STREAM_LISTPACKS_2)
}

fn write_stream_as(db: &Db, key: &[u8], out: &mut Staged<'_>, t: u8) -> Result<bool> {
    let Some(image) = db.stream_image(key)? else {
        return Ok(false);
    };
    let mut cut = NodeCut {
        node: None,
        bytes: 0,
    };
    let (mut nodes, mut entries) = (0u64, 0u64);
    db.stream_each_in_node(key, |node, _, fields| {
        nodes += u64::from(cut.starts_node(node, &fields));
        entries += 1;
        true
    })?;
    if entries != image.length {
        return Err(Error::Corrupt(format!(
            "a stream records {} entries but holds {entries}",
            image.length
        )));
    }
    put_len(&mut out.buf, nodes);
    let mut cut = NodeCut {
        node: None,
        bytes: 0,
    };
    let mut node: Vec<(StreamId, Vec<Vec<u8>>)> = Vec::new();
    let mut emitted = 0u64;
    let flush = |out: &mut Staged<'_>, node: &mut Vec<(StreamId, Vec<Vec<u8>>)>| {
        if let Some((master, _)) = node.first() {
            put_string(&mut out.buf, &id_raw(*master));
            let blob = node_blob(node);
            put_len(&mut out.buf, blob.len() as u64);
            out.buf.extend_from_slice(&blob);
            out.element_done();
        }
        node.clear();
    };
    db.stream_each_in_node(key, |n, id, fields| {
        if cut.starts_node(n, &fields) && !node.is_empty() {
            flush(out, &mut node);
            emitted += 1;
        }
        node.push((id, fields));
        out.ok()
    })?;
    if !node.is_empty() {
        flush(out, &mut node);
        emitted += 1;
    }
    out.check(nodes, emitted)?;
    put_tail(out, &image, t);
    out.check(0, 0)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::payload;
    use crate::rdb::test_db as db;
    use crate::rdb::RestoreOptions;
    use crate::stream::{AddId, GroupRead, GroupStart};

    /// 250 entries (several nodes, two field layouts), two deletions, two groups with pending
    /// entries of several consumers and a consumer owning none.
    fn fill(db: &Db) -> Result<()> {
        for i in 1..=250u64 {
            let (n, v) = (i.to_string(), format!("v{i}"));
            let fields: [&[u8]; 4] = if i % 7 == 0 {
                [b"other", v.as_bytes(), b"n", n.as_bytes()]
            } else {
                [b"a", v.as_bytes(), b"b", n.as_bytes()]
            };
            db.xadd(
                b"s",
                AddId::Exact(StreamId::new(i, i % 3)),
                &fields,
                false,
                None,
            )?;
        }
        db.xdel(b"s", &[StreamId::new(5, 2), StreamId::new(120, 0)])?;
        db.xgroup_create(b"s", b"g1", GroupStart::Id(StreamId::MIN), false, None)?;
        db.xgroup_create(
            b"s",
            b"g2",
            GroupStart::Id(StreamId::new(100, 0)),
            false,
            Some(90),
        )?;
        db.xreadgroup(b"s", b"g1", b"alice", GroupRead::New, 5, false)?;
        db.xreadgroup(b"s", b"g1", b"bob", GroupRead::New, 3, false)?;
        db.xreadgroup(b"s", b"g2", b"carol", GroupRead::New, 2, false)?;
        db.xgroup_createconsumer(b"s", b"g1", b"idle")?;
        Ok(())
    }

    /// An entry with its node: node number, ID, fields and values.
    type NodeEntry = (u64, StreamId, Vec<Vec<u8>>);

    fn entries(db: &Db, key: &[u8]) -> Result<Vec<NodeEntry>> {
        let mut out = Vec::new();
        db.stream_each_in_node(key, |n, id, f| {
            out.push((n, id, f));
            true
        })?;
        Ok(out)
    }

    fn restore(db: &Db, key: &[u8], value: Vec<u8>) -> Result<()> {
        let opts = RestoreOptions {
            replace: true,
            expire_at: None,
        };
        db.restore_payload(key, &payload::seal(value), opts)
            .map(|_| ())
    }

    #[test]
    fn a_stream_round_trips_with_its_nodes_groups_and_pending_entries() -> Result<()> {
        let (_d, db) = db();
        fill(&db)?;
        let p = db.dump_payload(b"s")?.expect("a payload");
        assert_eq!(p[0], STREAM_LISTPACKS_2);
        restore(&db, b"copy", payload::open(&p)?.to_vec())?;
        assert_eq!(db.stream_image(b"copy")?, db.stream_image(b"s")?);
        assert_eq!(entries(&db, b"copy")?, entries(&db, b"s")?);
        assert_eq!(db.dump_payload(b"copy")?, Some(p));
        // The copy goes on as the original does.
        for key in [&b"s"[..], b"copy"] {
            db.xadd(key, AddId::Auto, &[b"f", b"v"], false, None)?;
            db.xreadgroup(key, b"g1", b"dave", GroupRead::New, 0, false)?;
        }
        assert_eq!(db.stream_image(b"copy")?.map(|i| i.groups.len()), Some(2));
        assert_eq!(db.xlen(b"copy")?, db.xlen(b"s")?);
        Ok(())
    }

    #[test]
    fn an_emptied_stream_keeps_its_last_id_and_groups() -> Result<()> {
        let (_d, db) = db();
        db.xadd(
            b"e",
            AddId::Exact(StreamId::new(5, 5)),
            &[b"f", b"v"],
            false,
            None,
        )?;
        db.xdel(b"e", &[StreamId::new(5, 5)])?;
        db.xgroup_create(b"e", b"g", GroupStart::Last, false, None)?;
        let p = db.dump_payload(b"e")?.expect("a payload");
        restore(&db, b"copy", payload::open(&p)?.to_vec())?;
        assert_eq!(db.stream_image(b"copy")?, db.stream_image(b"e")?);
        assert_eq!(db.stream_last_id(b"copy")?, Some(StreamId::new(5, 5)));
        Ok(())
    }

    #[test]
    fn the_older_type_15_gets_the_counters_redis_derives() -> Result<()> {
        let (_d, db) = db();
        fill(&db)?;
        let mut out = Staged::in_memory(vec![STREAM_LISTPACKS]);
        assert!(write_stream_as(&db, b"s", &mut out, STREAM_LISTPACKS)?);
        restore(&db, b"old", out.buf)?;
        let old = db.stream_image(b"old")?.expect("restored");
        let new = db.stream_image(b"s")?.expect("there");
        assert_eq!(entries(&db, b"old")?, entries(&db, b"s")?);
        assert_eq!(old.entries_added, new.length);
        assert_eq!(old.max_deleted, StreamId::MIN);
        assert_eq!(old.first_id, StreamId::new(1, 1));
        // g1 delivered up to 9-0 (neither the first nor the last entry: unknown), g2 as well.
        assert_eq!(old.groups[0].entries_read, None);
        assert_eq!(old.groups[0].pending, new.groups[0].pending);
        Ok(())
    }

    #[test]
    fn damaged_stream_values_are_refused_and_leave_the_key() -> Result<()> {
        let (_d, db) = db();
        fill(&db)?;
        db.set(b"k", b"keep", Default::default())?;
        let p = db.dump_payload(b"s")?.expect("a payload");
        let value = payload::open(&p)?.to_vec();
        let mut refused = 0;
        let step = (value.len() / 300).max(1);
        for cut in (1..value.len()).step_by(step) {
            if restore(&db, b"k", value[..cut].to_vec()).is_err() {
                refused += 1;
                assert_eq!(db.get(b"k")?, Some(b"keep".to_vec()), "cut at {cut}");
            } else {
                db.set(b"k", b"keep", Default::default())?;
            }
        }
        assert!(refused > 250, "{refused}");
        let mut x = 0x2545_f491u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut v = value.clone();
            let at = (x as usize) % v.len();
            v[at] ^= 1 << ((x >> 32) % 8);
            match restore(&db, b"k", v) {
                Err(Error::BadRdb(_)) => assert_eq!(db.get(b"k")?, Some(b"keep".to_vec())),
                Err(e) => panic!("a damaged payload gave {e}"),
                Ok(()) => {
                    // Whatever restored is a whole stream that serializes again.
                    db.dump_payload(b"k")?;
                    db.set(b"k", b"keep", Default::default())?;
                }
            }
        }
        Ok(())
    }

    #[test]
    fn pending_entries_must_belong_to_one_consumer_of_their_group() {
        // No nodes; length 0, last 0-0, first 0-0, max deleted 0-0, added 0; one group "g" with
        // one pending entry 1-1 and no consumer owning it.
        let mut v = vec![STREAM_LISTPACKS_2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        put_string(&mut v, b"g");
        v.extend_from_slice(&[0, 0, 0, 1]);
        v.extend_from_slice(&id_raw(StreamId::new(1, 1)));
        v.extend_from_slice(&7u64.to_le_bytes());
        v.push(1);
        let consumer = |name: &[u8]| {
            let mut c = Vec::new();
            put_string(&mut c, name);
            c.extend_from_slice(&9u64.to_le_bytes());
            c.push(1);
            c.extend_from_slice(&id_raw(StreamId::new(1, 1)));
            c
        };
        let (_d, db) = db();
        let orphan = [&v[..], &[0]].concat();
        assert!(matches!(restore(&db, b"k", orphan), Err(Error::BadRdb(_))));
        let owned = [&v[..], &[1], &consumer(b"c")].concat();
        assert!(restore(&db, b"k", owned).is_ok());
        let twice = [&v[..], &[2], &consumer(b"c"), &consumer(b"d")].concat();
        assert!(matches!(restore(&db, b"k", twice), Err(Error::BadRdb(_))));
        let same_name = [&v[..], &[2], &consumer(b"c"), &consumer(b"c")].concat();
        assert!(matches!(
            restore(&db, b"k", same_name),
            Err(Error::BadRdb(_))
        ));
    }
}
