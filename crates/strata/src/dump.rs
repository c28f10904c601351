//! The portable dump format: a byte stream holding every live key of every logical database with
//! its type, expiry and members, to move data between Strata directories and versions
//! (`strata export` / `strata import`). [`DumpWriter`] and [`DumpReader`] are the format, byte for
//! byte as `docs/format.md` ("Dump files") describes it; [`export`] and [`import`] drive them over
//! a [`Db`], streaming both ways (one key's member at a time in memory). Knows nothing of files:
//! callers hand in any `Write` / `Read`.

use std::io::{Read, Write};

use crate::batch::Batch;
use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::iter::KeyFilter;
use crate::meta::KeyType;

/// The first bytes of every dump file.
pub const MAGIC: &[u8; 11] = b"STRATA-DUMP";
/// The dump format version this build writes (and the newest it reads).
pub const VERSION: u8 = 1;

const TAG_KEY: u8 = b'K';
const TAG_END: u8 = b'E';
const ELEMENT: u8 = 0x01;
const END_OF_KEY: u8 = 0x00;

/// Elements of one collection applied per import batch.
const IMPORT_CHUNK: usize = 1000;
/// Keys applied per import batch.
const IMPORT_KEYS_PER_BATCH: usize = 256;

/// CRC-32 (IEEE 802.3, as zlib and PNG) of the bytes fed so far.
#[derive(Clone, Copy, Debug)]
struct Crc32(u32);

const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC_TABLE: [u32; 256] = crc_table();

impl Crc32 {
    fn new() -> Crc32 {
        Crc32(0xFFFF_FFFF)
    }
    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = CRC_TABLE[((self.0 ^ b as u32) & 0xFF) as usize] ^ (self.0 >> 8);
        }
    }
    fn value(self) -> u32 {
        !self.0
    }
}

fn io(e: std::io::Error) -> Error {
    Error::Io(e.to_string())
}

fn bad(what: &str) -> Error {
    Error::BadDump(what.to_string())
}

/// The header of one key in a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyHeader {
    /// Logical database index.
    pub db: u8,
    /// The key's type.
    pub kind: KeyType,
    /// The key.
    pub key: Vec<u8>,
    /// Absolute expiry in Unix milliseconds, `None` if the key does not expire.
    pub expire_at: Option<u64>,
}

/// One element of a key's value in a dump.
#[derive(Clone, Debug, PartialEq)]
pub enum Element {
    /// A string's value (the only element of a string key).
    Value(Vec<u8>),
    /// A hash field and its value.
    Field(Vec<u8>, Vec<u8>),
    /// A list item (in order from head to tail) or a set member.
    Item(Vec<u8>),
    /// A sorted-set member and its score (in ascending order).
    Scored(Vec<u8>, f64),
    /// One record of a stream, as `docs/format.md` lays them out: first the metadata body
    /// (empty sub-key), then each `data` sub-key and its value, in key order.
    Record(Vec<u8>, Vec<u8>),
}

/// Writes a dump: the header at creation, then [`DumpWriter::key`], its elements and
/// [`DumpWriter::end_key`] per key, then [`DumpWriter::finish`] for the trailer.
pub struct DumpWriter<W: Write> {
    out: W,
    crc: Crc32,
    keys: u64,
    kind: Option<KeyType>,
}

impl<W: Write> DumpWriter<W> {
    /// Starts a dump on `out` by writing its header.
    pub fn new(out: W) -> Result<DumpWriter<W>> {
        let mut w = DumpWriter {
            out,
            crc: Crc32::new(),
            keys: 0,
            kind: None,
        };
        w.put(MAGIC)?;
        w.put(&[VERSION, 0])?;
        w.put(&now_ms().to_be_bytes())?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.crc.update(bytes);
        self.out.write_all(bytes).map_err(io)
    }

    fn put_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let mut len = [0u8; 10];
        let n = encode_varint(bytes.len() as u64, &mut len);
        self.put(&len[..n])?;
        self.put(bytes)
    }

    /// Starts a key.
    pub fn key(&mut self, h: &KeyHeader) -> Result<()> {
        if self.kind.is_some() {
            return Err(bad("key started before the previous one ended"));
        }
        self.put(&[TAG_KEY, h.db, h.kind.id()])?;
        self.put(&h.expire_at.unwrap_or(0).to_be_bytes())?;
        self.put_bytes(&h.key)?;
        self.kind = Some(h.kind);
        Ok(())
    }

    /// Writes one element of the current key; its variant must fit the key's type.
    pub fn element(&mut self, e: &Element) -> Result<()> {
        let fits = matches!(
            (self.kind, e),
            (Some(KeyType::String), Element::Value(_))
                | (Some(KeyType::Hash), Element::Field(..))
                | (Some(KeyType::List | KeyType::Set), Element::Item(_))
                | (Some(KeyType::ZSet), Element::Scored(..))
                | (Some(KeyType::Stream), Element::Record(..))
        );
        if !fits {
            return Err(bad("element does not fit the key's type"));
        }
        self.put(&[ELEMENT])?;
        match e {
            Element::Value(v) | Element::Item(v) => self.put_bytes(v),
            Element::Field(f, v) | Element::Record(f, v) => {
                self.put_bytes(f)?;
                self.put_bytes(v)
            }
            Element::Scored(m, s) => {
                self.put(&s.to_bits().to_be_bytes())?;
                self.put_bytes(m)
            }
        }
    }

    /// Ends the current key.
    pub fn end_key(&mut self) -> Result<()> {
        if self.kind.take().is_none() {
            return Err(bad("end of key without a key"));
        }
        self.keys += 1;
        self.put(&[END_OF_KEY])
    }

    /// Writes the trailer (key count and checksum), flushes, and returns the output and the
    /// number of keys written.
    pub fn finish(mut self) -> Result<(W, u64)> {
        self.put(&[TAG_END])?;
        let keys = self.keys;
        self.put(&keys.to_be_bytes())?;
        let crc = self.crc.value();
        self.out.write_all(&crc.to_be_bytes()).map_err(io)?;
        self.out.flush().map_err(io)?;
        Ok((self.out, keys))
    }
}

/// What [`DumpReader::next`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A new key starts; its elements follow.
    Key(KeyHeader),
    /// An element of the current key.
    Element(Element),
    /// The current key has no more elements.
    EndKey,
    /// The trailer was read and the key count and checksum agree; nothing follows.
    End {
        /// Number of keys in the dump.
        keys: u64,
    },
}

/// Reads a dump written by [`DumpWriter`], checking its header, structure, key count and checksum.
pub struct DumpReader<R: Read> {
    input: R,
    crc: Crc32,
    keys: u64,
    kind: Option<KeyType>,
    done: bool,
    /// When the dump was written (Unix ms, from the header).
    pub created_ms: u64,
}

impl<R: Read> DumpReader<R> {
    /// Reads and checks the header.
    pub fn new(input: R) -> Result<DumpReader<R>> {
        let mut r = DumpReader {
            input,
            crc: Crc32::new(),
            keys: 0,
            kind: None,
            done: false,
            created_ms: 0,
        };
        let mut magic = [0u8; 11];
        r.get(&mut magic)
            .map_err(|_| bad("file too short to be a Strata dump"))?;
        if &magic != MAGIC {
            return Err(bad("not a Strata dump (bad magic bytes)"));
        }
        let mut v = [0u8; 2];
        r.get(&mut v)?;
        if v[0] == 0 || v[0] > VERSION {
            return Err(bad(&format!(
                "dump format version {} is newer than this build reads ({VERSION})",
                v[0]
            )));
        }
        let mut t = [0u8; 8];
        r.get(&mut t)?;
        r.created_ms = u64::from_be_bytes(t);
        Ok(r)
    }

    fn get(&mut self, buf: &mut [u8]) -> Result<()> {
        self.input.read_exact(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                bad("dump ends early (truncated file?)")
            } else {
                io(e)
            }
        })?;
        self.crc.update(buf);
        Ok(())
    }

    fn byte(&mut self) -> Result<u8> {
        let mut b = [0u8; 1];
        self.get(&mut b)?;
        Ok(b[0])
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        self.get(&mut b)?;
        Ok(u64::from_be_bytes(b))
    }

    fn bytes(&mut self) -> Result<Vec<u8>> {
        let mut len = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(bad("length varint overflows 64 bits"));
            }
            len |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        // Read through `take` so a lying length cannot allocate more than the file holds.
        let mut out = Vec::new();
        let got = (&mut self.input)
            .take(len)
            .read_to_end(&mut out)
            .map_err(io)?;
        if got as u64 != len {
            return Err(bad("dump ends inside a value (truncated file?)"));
        }
        self.crc.update(&out);
        Ok(out)
    }

    /// The next event, `None` after [`Event::End`].
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Event>> {
        if self.done {
            return Ok(None);
        }
        if let Some(kind) = self.kind {
            return match self.byte()? {
                END_OF_KEY => {
                    self.kind = None;
                    self.keys += 1;
                    Ok(Some(Event::EndKey))
                }
                ELEMENT => {
                    let e = match kind {
                        KeyType::String => Element::Value(self.bytes()?),
                        KeyType::Hash => Element::Field(self.bytes()?, self.bytes()?),
                        KeyType::List | KeyType::Set => Element::Item(self.bytes()?),
                        KeyType::ZSet => {
                            let score = f64::from_bits(self.u64()?);
                            Element::Scored(self.bytes()?, score)
                        }
                        KeyType::Stream => Element::Record(self.bytes()?, self.bytes()?),
                    };
                    Ok(Some(Event::Element(e)))
                }
                other => Err(bad(&format!("unexpected byte {other:#04x} inside a key"))),
            };
        }
        match self.byte()? {
            TAG_KEY => {
                let db = self.byte()?;
                let id = self.byte()?;
                let kind = KeyType::from_id(id)
                    .ok_or_else(|| bad(&format!("unknown type id {id} in dump")))?;
                let expire = self.u64()?;
                let key = self.bytes()?;
                self.kind = Some(kind);
                Ok(Some(Event::Key(KeyHeader {
                    db,
                    kind,
                    key,
                    expire_at: (expire != 0).then_some(expire),
                })))
            }
            TAG_END => {
                let keys = self.u64()?;
                let expected = self.crc.value();
                let mut c = [0u8; 4];
                self.input
                    .read_exact(&mut c)
                    .map_err(|_| bad("dump ends inside its trailer"))?;
                if u32::from_be_bytes(c) != expected {
                    return Err(bad("checksum mismatch: the dump is damaged"));
                }
                if keys != self.keys {
                    return Err(bad(&format!(
                        "trailer counts {keys} keys but the dump holds {}",
                        self.keys
                    )));
                }
                self.done = true;
                Ok(Some(Event::End { keys }))
            }
            other => Err(bad(&format!("unexpected record tag {other:#04x}"))),
        }
    }
}

fn encode_varint(mut v: u64, out: &mut [u8; 10]) -> usize {
    let mut n = 0;
    loop {
        let b = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out[n] = b;
            return n + 1;
        }
        out[n] = b | 0x80;
        n += 1;
    }
}

/// Writes every live key of every logical database of `db` to `out` as a dump, calling
/// `progress(keys written so far)` after each key. Returns the number of keys written.
pub fn export<W: Write>(db: &Db, out: W, mut progress: impl FnMut(u64)) -> Result<u64> {
    let mut w = DumpWriter::new(out)?;
    for index in 0..db.databases() {
        let d = db.select(index)?;
        for info in d.iter(KeyFilter::new()) {
            let info = info?;
            let header = KeyHeader {
                db: index as u8,
                kind: info.kind,
                key: info.key,
                expire_at: info.expire_at,
            };
            write_key(&d, &mut w, &header)?;
            progress(w.keys);
        }
    }
    Ok(w.finish()?.1)
}

/// Writes one key (header, elements, end) read from `d`. A key that expired or vanished between
/// listing and reading is written empty-handed and skipped on import.
fn write_key<W: Write>(d: &Db, w: &mut DumpWriter<W>, h: &KeyHeader) -> Result<()> {
    w.key(h)?;
    let mut err = None;
    let mut emit = |w: &mut DumpWriter<W>, e: Element| {
        if err.is_none() {
            if let Err(e) = w.element(&e) {
                err = Some(e);
            }
        }
    };
    match h.kind {
        KeyType::String => {
            if let Some(v) = d.get(&h.key)? {
                emit(w, Element::Value(v));
            }
        }
        KeyType::Hash => d.hash_each(&h.key, |f, v| {
            emit(w, Element::Field(f.to_vec(), v.to_vec()))
        })?,
        KeyType::List => d.list_each(&h.key, |v| emit(w, Element::Item(v.to_vec())))?,
        KeyType::Set => d.set_each(&h.key, |v| emit(w, Element::Item(v.to_vec())))?,
        KeyType::ZSet => d.zset_each(&h.key, |m, s| emit(w, Element::Scored(m.to_vec(), s)))?,
        KeyType::Stream => d.stream_records(&h.key, |sub, v| {
            emit(w, Element::Record(sub.to_vec(), v.to_vec()))
        })?,
    }
    if let Some(e) = err {
        return Err(e);
    }
    w.end_key()
}

/// What [`import`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Keys written.
    pub keys: u64,
    /// Keys skipped because their expiry had passed (or they had no elements).
    pub skipped: u64,
}

/// Reads a dump from `input` into `db`, replacing keys of the same name, keeping expiries, and
/// calling `progress(keys read so far)` after each key. Keys are written in batches; each key
/// with up to 1000 elements is written atomically, a larger one in several batches.
pub fn import<R: Read>(db: &Db, input: R, mut progress: impl FnMut(u64)) -> Result<ImportSummary> {
    let mut r = DumpReader::new(input)?;
    let mut summary = ImportSummary::default();
    let mut target = db.clone();
    let mut batch = Batch::new();
    let mut keys_in_batch = 0usize;
    let mut current: Option<(KeyHeader, usize)> = None;
    let mut chunk: Vec<Element> = Vec::new();
    let now = now_ms();
    while let Some(event) = r.next()? {
        match event {
            Event::Key(h) => {
                if u32::from(h.db) >= db.databases() {
                    return Err(bad(&format!(
                        "dump has database {} but the directory has {} databases",
                        h.db,
                        db.databases()
                    )));
                }
                if h.db as u32 != target.index() {
                    target.apply(&batch)?;
                    batch = Batch::new();
                    keys_in_batch = 0;
                    target = db.select(h.db as u32)?;
                }
                current = Some((h, 0));
            }
            Event::Element(e) => {
                chunk.push(e);
                if chunk.len() >= IMPORT_CHUNK {
                    if let Some((h, written)) = current.as_mut() {
                        if h.kind == KeyType::Stream {
                            target.apply(&batch)?;
                            batch = Batch::new();
                            stage_stream(&target, h, &chunk, *written == 0, now)?;
                        } else {
                            stage(&mut batch, h, &chunk, *written == 0, now);
                        }
                        *written += chunk.len();
                    }
                    chunk.clear();
                    target.apply(&batch)?;
                    batch = Batch::new();
                    keys_in_batch = 0;
                }
            }
            Event::EndKey => {
                let Some((h, written)) = current.take() else {
                    return Err(bad("end of key without a key"));
                };
                let live = h.expire_at.is_none_or(|t| t > now);
                if written + chunk.len() == 0 || !live {
                    if written > 0 {
                        batch.del(&h.key);
                    }
                    summary.skipped += 1;
                } else if h.kind == KeyType::Stream {
                    target.apply(&batch)?;
                    batch = Batch::new();
                    keys_in_batch = 0;
                    stage_stream(&target, &h, &chunk, written == 0, now)?;
                    summary.keys += 1;
                } else {
                    stage(&mut batch, &h, &chunk, written == 0, now);
                    if let Some(t) = h.expire_at {
                        batch.expire_at(&h.key, t);
                    }
                    summary.keys += 1;
                }
                chunk.clear();
                keys_in_batch += 1;
                if keys_in_batch >= IMPORT_KEYS_PER_BATCH {
                    target.apply(&batch)?;
                    batch = Batch::new();
                    keys_in_batch = 0;
                }
                progress(summary.keys + summary.skipped);
            }
            Event::End { .. } => {}
        }
    }
    if current.is_some() {
        return Err(bad("dump ends inside a key"));
    }
    target.apply(&batch)?;
    Ok(summary)
}

/// Writes a chunk of a stream's records (the first chunk starts with its metadata).
fn stage_stream(db: &Db, h: &KeyHeader, elements: &[Element], first: bool, now: u64) -> Result<()> {
    if h.expire_at.is_some_and(|t| t <= now) {
        return Ok(());
    }
    let records: Vec<(&[u8], &[u8])> = elements
        .iter()
        .filter_map(|e| match e {
            Element::Record(sub, v) => Some((sub.as_slice(), v.as_slice())),
            _ => None,
        })
        .collect();
    db.stream_restore_records(&h.key, h.expire_at.unwrap_or(0), first, &records)
}

/// Adds the writes of `elements` of key `h` to `batch`; the first chunk of a key first deletes
/// whatever the key held.
fn stage(batch: &mut Batch, h: &KeyHeader, elements: &[Element], first: bool, now: u64) {
    if h.expire_at.is_some_and(|t| t <= now) {
        return;
    }
    if first {
        batch.del(&h.key);
    }
    let key = &h.key;
    let mut pairs: Vec<(&[u8], &[u8])> = Vec::new();
    let mut items: Vec<&[u8]> = Vec::new();
    let mut scored: Vec<(f64, &[u8])> = Vec::new();
    for e in elements {
        match e {
            Element::Value(v) => {
                batch.set(key, v);
            }
            Element::Field(f, v) => pairs.push((f.as_slice(), v.as_slice())),
            Element::Item(v) => items.push(v.as_slice()),
            Element::Scored(m, s) => scored.push((*s, m.as_slice())),
            Element::Record(..) => {}
        }
    }
    match h.kind {
        KeyType::Hash if !pairs.is_empty() => {
            batch.hset(key, &pairs);
        }
        KeyType::List if !items.is_empty() => {
            batch.rpush(key, &items);
        }
        KeyType::Set if !items.is_empty() => {
            batch.sadd(key, &items);
        }
        KeyType::ZSet if !scored.is_empty() => {
            batch.zadd(key, &scored);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        let mut c = Crc32::new();
        c.update(b"123456789");
        assert_eq!(c.value(), 0xCBF4_3926);
    }

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut buf = [0u8; 10];
            let n = encode_varint(v, &mut buf);
            let mut w = Vec::new();
            w.extend_from_slice(&buf[..n]);
            let mut decoded = 0u64;
            for (i, b) in w.iter().enumerate() {
                decoded |= u64::from(b & 0x7F) << (7 * i);
            }
            assert_eq!(decoded, v);
        }
    }
}
