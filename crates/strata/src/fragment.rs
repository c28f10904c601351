//! Big strings in fixed-size fragments. A string that a partial write (SETRANGE, APPEND, SETBIT,
//! BITFIELD) or BITOP would make longer than [`THRESHOLD`] bytes is stored as a metadata record of
//! encoding version 2 (`meta::STRING_FRAGMENTED`) whose body is `[version u64][len u64]`, and
//! `data` sub-keys `[fragment number u64 BE]` holding at most [`FRAGMENT_LEN`] bytes each; a missing
//! fragment, or the part past a short fragment's end, reads as zero bytes. So a one-bit or one-byte
//! write rewrites one fragment, a range read reads only the fragments of that range, a sparse
//! bitmap costs only the fragments it touches, and deleting or overwriting the string writes only
//! its metadata (the old fragments are orphans the compaction filter drops, as a collection's).
//! Two layers: pure arithmetic — which fragments a byte range touches ([`pieces`]), how the stored
//! fragments of a range read as bytes and runs of zeros ([`Walk`]) — tested on its own; then the
//! `Db` pieces the string, bit and HLL modules build on: the live string at a key in either layout
//! ([`StoredString`]), streaming reads of a range, and a [`FragmentWriter`] that stages fragment
//! edits and adds them to a write batch. Knows nothing of commands or replies.

use std::collections::BTreeMap;

use rocksdb::WriteBatch;

use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::keys;
use crate::meta::{self, KeyType, Meta, FLAG_RAW_STRING, STRING_FRAGMENTED};
use crate::storage::{IterOptions, CF_DATA};

/// Bytes per fragment: a one-bit write rewrites this much. 4 KB is RocksDB's block size, so a
/// fragment read is one block read, and the per-record overhead (key of ~20 bytes plus RocksDB's
/// own) stays under 1 % of the data (see docs/format.md for the measurements).
pub const FRAGMENT_LEN: usize = 4096;

/// Strings the partial writes grow past this many bytes are stored in fragments; shorter ones
/// stay inline in their metadata record (GET is one read). 64 KB: 16 fragments, below which
/// rewriting the whole record costs about what one fragment write costs (docs/format.md).
pub const THRESHOLD: u64 = 64 * 1024;

const F: u64 = FRAGMENT_LEN as u64;

// ----- pure arithmetic -----------------------------------------------------------------------

/// One fragment's share of a byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// The fragment's number (its first byte is at `number * FRAGMENT_LEN`).
    pub number: u64,
    /// Where the share starts inside the fragment.
    pub at: usize,
    /// Its length in bytes.
    pub len: usize,
    /// Where it starts inside the range.
    pub offset: u64,
}

/// The fragments the `len` bytes at `start` touch, in order (none for an empty range). The caller
/// keeps `start + len` within the maximum string length.
pub(crate) fn pieces(start: u64, len: u64) -> impl Iterator<Item = Piece> {
    let end = start.saturating_add(len);
    let numbers = if len == 0 {
        0..0
    } else {
        start / F..(end - 1) / F + 1
    };
    numbers.map(move |number| {
        let first = number * F;
        let (a, b) = (start.max(first), end.min(first + F));
        Piece {
            number,
            at: (a - first) as usize,
            len: (b - a) as usize,
            offset: a - start,
        }
    })
}

/// The fragment number as its sub-key.
pub(crate) fn sub_key(number: u64) -> [u8; 8] {
    number.to_be_bytes()
}

/// Part of a byte range, as a walk hands it out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Chunk<'a> {
    /// Stored bytes.
    Bytes(&'a [u8]),
    /// This many zero bytes (a missing fragment, or past a short fragment's end).
    Zeros(u64),
}

/// Turns the stored fragments of the byte range `pos..to`, fed in fragment order, into the
/// range's contents for a callback `f(offset, chunk) -> continue?`: each fragment's bytes within
/// the range, and a run of zeros for every gap, so the chunks cover the range exactly.
pub(crate) struct Walk {
    pos: u64,
    to: u64,
    stopped: bool,
}

impl Walk {
    /// A walk over bytes `from..to`.
    pub(crate) fn new(from: u64, to: u64) -> Walk {
        Walk {
            pos: from,
            to,
            stopped: from >= to,
        }
    }

    fn emit(&mut self, chunk: Chunk<'_>, n: u64, f: &mut impl FnMut(u64, Chunk<'_>) -> bool) {
        if !f(self.pos, chunk) {
            self.stopped = true;
        }
        self.pos += n;
        if self.pos >= self.to {
            self.stopped = true;
        }
    }

    /// Feeds fragment `number` holding `bytes` (anything past [`FRAGMENT_LEN`] ignored); false
    /// once the range is done or `f` asked to stop.
    pub(crate) fn fragment(
        &mut self,
        number: u64,
        bytes: &[u8],
        f: &mut impl FnMut(u64, Chunk<'_>) -> bool,
    ) -> bool {
        let first = number.saturating_mul(F);
        let bytes = &bytes[..bytes.len().min(FRAGMENT_LEN)];
        if !self.stopped && first > self.pos {
            let gap = first.min(self.to) - self.pos;
            self.emit(Chunk::Zeros(gap), gap, f);
        }
        let end = first + bytes.len() as u64;
        if !self.stopped && end > self.pos && first <= self.pos {
            let a = (self.pos - first) as usize;
            let b = (end.min(self.to) - first) as usize;
            self.emit(Chunk::Bytes(&bytes[a..b]), (b - a) as u64, f);
        }
        !self.stopped
    }

    /// Ends the walk: the rest of the range reads as zeros.
    pub(crate) fn finish(mut self, f: &mut impl FnMut(u64, Chunk<'_>) -> bool) {
        if !self.stopped {
            let rest = self.to - self.pos;
            self.emit(Chunk::Zeros(rest), rest, f);
        }
    }
}

// ----- strings in either layout --------------------------------------------------------------

/// Where a string's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// In the metadata record.
    Inline(Vec<u8>),
    /// In fragments of this version; `len` bytes long.
    Fragmented {
        /// The fragments' version.
        version: u64,
        /// The string's length.
        len: u64,
    },
}

/// A live string, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredString {
    /// Unix ms, 0 = none.
    pub expire_ms: u64,
    /// Flags (high nibble), e.g. `FLAG_RAW_STRING`.
    pub flags: u8,
    /// Its bytes.
    pub layout: Layout,
}

/// The version and length a fragmented string's record body begins with (Corrupt when it is
/// too short to hold them).
pub(crate) fn fragmented_header(body: &[u8]) -> Result<(u64, u64)> {
    let word = |at: usize| {
        body.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
    };
    match (word(0), word(8)) {
        (Some(version), Some(len)) => Ok((version, len)),
        _ => Err(Error::Corrupt(format!(
            "fragmented string metadata of {} bytes lacks version/len",
            body.len()
        ))),
    }
}

impl StoredString {
    /// The string of a decoded string record.
    pub(crate) fn from_meta(m: Meta) -> Result<StoredString> {
        let layout = if m.is_fragmented() {
            let (version, len) = fragmented_header(&m.body)?;
            Layout::Fragmented { version, len }
        } else {
            Layout::Inline(m.body)
        };
        Ok(StoredString {
            expire_ms: m.expire_ms,
            flags: m.flags,
            layout,
        })
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> u64 {
        match &self.layout {
            Layout::Inline(v) => v.len() as u64,
            Layout::Fragmented { len, .. } => *len,
        }
    }
}

/// The metadata body of a fragmented string.
fn fragmented_body(version: u64, len: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&version.to_be_bytes());
    b[8..].copy_from_slice(&len.to_be_bytes());
    b
}

impl Db {
    /// The live string at `key`; WrongType if the key holds another type.
    pub(crate) fn live_string(&self, key: &[u8]) -> Result<Option<StoredString>> {
        match self.live_meta_of(key, KeyType::String)? {
            Some(m) => Ok(Some(StoredString::from_meta(m)?)),
            None => Ok(None),
        }
    }

    /// Streams bytes `from..to` (cut at the string's end) of the string `s` at `key` to `f(offset,
    /// chunk) -> continue?`, reading only the fragments of that range.
    pub(crate) fn string_chunks(
        &self,
        key: &[u8],
        s: &StoredString,
        from: u64,
        to: u64,
        mut f: impl FnMut(u64, Chunk<'_>) -> bool,
    ) -> Result<()> {
        let to = to.min(s.len());
        if from >= to {
            return Ok(());
        }
        match &s.layout {
            Layout::Inline(v) => {
                f(from, Chunk::Bytes(&v[from as usize..to as usize]));
                Ok(())
            }
            Layout::Fragmented { version, .. } => self.walk_fragments(key, *version, from, to, f),
        }
    }

    /// [`Db::string_chunks`] over the fragments of `version`.
    fn walk_fragments(
        &self,
        key: &[u8],
        version: u64,
        from: u64,
        to: u64,
        mut f: impl FnMut(u64, Chunk<'_>) -> bool,
    ) -> Result<()> {
        let prefix = keys::data_prefix(self.phys(), key, version);
        let lower = [&prefix[..], &sub_key(from / F)].concat();
        let upper = [&prefix[..], &sub_key((to - 1) / F + 1)].concat();
        let ro = IterOptions {
            lower: Some(lower.clone()),
            upper: Some(upper),
            ..IterOptions::default()
        };
        let mut it = self.storage().iter(CF_DATA, ro);
        it.seek(&lower);
        let mut walk = Walk::new(from, to);
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            let Some(number) = k
                .strip_prefix(prefix.as_slice())
                .and_then(|s| <[u8; 8]>::try_from(s).ok())
                .map(u64::from_be_bytes)
            else {
                break;
            };
            if !walk.fragment(number, v, &mut f) {
                return it.status();
            }
            it.next();
        }
        it.status()?;
        walk.finish(&mut f);
        Ok(())
    }

    /// Bytes `from..to` (cut at the string's end) of the string `s` at `key`, as one vector.
    pub(crate) fn string_range(
        &self,
        key: &[u8],
        s: &StoredString,
        from: u64,
        to: u64,
    ) -> Result<Vec<u8>> {
        let to = to.min(s.len());
        if from >= to {
            return Ok(Vec::new());
        }
        if let Layout::Inline(v) = &s.layout {
            return Ok(v[from as usize..to as usize].to_vec());
        }
        let n = usize::try_from(to - from).map_err(|_| Error::StringTooLong)?;
        // Zeroed in one allocation: the gaps of a sparse string are pages never touched here.
        let mut out = vec![0u8; n];
        self.string_chunks(key, s, from, to, |at, chunk| {
            if let Chunk::Bytes(b) = chunk {
                let i = (at - from) as usize;
                out[i..i + b.len()].copy_from_slice(b);
            }
            true
        })?;
        Ok(out)
    }

    /// The whole value of the string `s` at `key`.
    pub(crate) fn string_value(&self, key: &[u8], s: StoredString) -> Result<Vec<u8>> {
        match s.layout {
            Layout::Inline(v) => Ok(v),
            Layout::Fragmented { len, .. } => self.string_range(key, &s, 0, len),
        }
    }

    /// The live string at `key` as a record with its value inline whatever its layout (a
    /// fragmented one's value put together); WrongType if the key holds another type.
    pub(crate) fn live_string_whole(&self, key: &[u8]) -> Result<Option<Meta>> {
        match self.live_meta_of(key, KeyType::String)? {
            Some(m) if m.is_fragmented() => {
                let (expire_ms, flags) = (m.expire_ms, m.flags);
                let body = self.string_body(key, m)?;
                Ok(Some(Meta {
                    flags,
                    ..Meta::string(body, expire_ms)
                }))
            }
            other => Ok(other),
        }
    }

    /// The value of a decoded string record of `key` in either layout.
    pub(crate) fn string_body(&self, key: &[u8], m: Meta) -> Result<Vec<u8>> {
        if m.is_fragmented() {
            self.string_value(key, StoredString::from_meta(m)?)
        } else {
            Ok(m.body)
        }
    }

    /// Adds the metadata write of the string `s` to `batch`, or the key's deletion when its
    /// expiry has passed.
    pub(crate) fn put_stored_string(&self, batch: &mut WriteBatch, key: &[u8], s: &StoredString) {
        let phys = self.phys();
        if s.expire_ms != 0 && s.expire_ms <= now_ms() {
            self.delete_meta(batch, phys, key);
            return;
        }
        match &s.layout {
            Layout::Inline(v) => {
                self.put_meta_flagged(batch, phys, key, KeyType::String, s.flags, s.expire_ms, v)
            }
            Layout::Fragmented { version, len } => self.put_meta_flagged(
                batch,
                phys,
                key,
                KeyType::String,
                s.flags | FLAG_RAW_STRING | STRING_FRAGMENTED,
                s.expire_ms,
                &fragmented_body(*version, *len),
            ),
        }
    }

    /// Adds to `batch` the string `value` at `key` stored whole: fragmented under a new version
    /// (all-zero fragments left out) when longer than [`THRESHOLD`], inline otherwise.
    pub(crate) fn put_string_value(
        &self,
        batch: &mut WriteBatch,
        key: &[u8],
        value: &[u8],
        flags: u8,
        expire_ms: u64,
    ) {
        let layout = if value.len() as u64 > THRESHOLD {
            let version = self.next_version();
            let s = self.storage();
            for (number, bytes) in value.chunks(FRAGMENT_LEN).enumerate() {
                if bytes.iter().any(|b| *b != 0) {
                    let k = keys::data_key(self.phys(), key, version, &sub_key(number as u64));
                    batch.put_cf(s.cf(CF_DATA), k, bytes);
                }
            }
            Layout::Fragmented {
                version,
                len: value.len() as u64,
            }
        } else {
            Layout::Inline(value.to_vec())
        };
        let s = StoredString {
            expire_ms,
            flags,
            layout,
        };
        self.put_stored_string(batch, key, &s);
    }
}

/// Edits of a fragmented string, staged in memory and added to a write batch at the end: the
/// fragments a write touches are read once (from the store, or staged) and written back once.
/// The caller holds the key's lock.
pub(crate) struct FragmentWriter {
    version: u64,
    /// Whether the version is new (nothing stored under it yet).
    fresh: bool,
    /// Fragment number → (bytes, changed).
    staged: BTreeMap<u64, (Vec<u8>, bool)>,
    len: u64,
    /// The metadata of the fragmented string edited (None: a new or converted one), to leave it
    /// as it is when an edit changes nothing in it.
    stored: Option<StoredString>,
}

impl FragmentWriter {
    /// A writer for the string `s` (None: a new string). An inline string is converted: it gets
    /// a new version and its bytes are staged as fragments.
    pub(crate) fn new(db: &Db, s: Option<&StoredString>) -> FragmentWriter {
        match s.map(|s| &s.layout) {
            Some(Layout::Fragmented { version, len }) => FragmentWriter {
                version: *version,
                fresh: false,
                staged: BTreeMap::new(),
                len: *len,
                stored: s.cloned(),
            },
            other => {
                let mut w = FragmentWriter {
                    version: db.next_version(),
                    fresh: true,
                    staged: BTreeMap::new(),
                    len: 0,
                    stored: None,
                };
                if let Some(Layout::Inline(v)) = other {
                    for (number, bytes) in v.chunks(FRAGMENT_LEN).enumerate() {
                        w.staged.insert(number as u64, (bytes.to_vec(), true));
                    }
                    w.len = v.len() as u64;
                }
                w
            }
        }
    }

    /// The string's length with the edits so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    fn fragment(&mut self, db: &Db, key: &[u8], number: u64) -> Result<&mut (Vec<u8>, bool)> {
        if !self.staged.contains_key(&number) {
            let stored = if self.fresh {
                None
            } else {
                let k = keys::data_key(db.phys(), key, self.version, &sub_key(number));
                db.storage().get(CF_DATA, &k)?
            };
            let mut bytes = stored.unwrap_or_default();
            bytes.truncate(FRAGMENT_LEN);
            self.staged.insert(number, (bytes, false));
        }
        self.staged
            .get_mut(&number)
            .ok_or_else(|| Error::Corrupt("fragment vanished".into()))
    }

    /// The `n` bytes at `offset` (zeros past the end and in gaps).
    pub(crate) fn read(&mut self, db: &Db, key: &[u8], offset: u64, n: u64) -> Result<Vec<u8>> {
        let mut out = vec![0u8; n as usize];
        for p in pieces(offset, n) {
            let (bytes, _) = self.fragment(db, key, p.number)?;
            let have = bytes.len().saturating_sub(p.at).min(p.len);
            if have > 0 {
                let o = p.offset as usize;
                out[o..o + have].copy_from_slice(&bytes[p.at..p.at + have]);
            }
        }
        Ok(out)
    }

    /// Writes `data` at `offset`, growing the string (with zero bytes) as needed.
    pub(crate) fn write(&mut self, db: &Db, key: &[u8], offset: u64, data: &[u8]) -> Result<()> {
        for p in pieces(offset, data.len() as u64) {
            let (bytes, changed) = self.fragment(db, key, p.number)?;
            if bytes.len() < p.at + p.len {
                bytes.resize(p.at + p.len, 0);
            }
            let o = p.offset as usize;
            bytes[p.at..p.at + p.len].copy_from_slice(&data[o..o + p.len]);
            *changed = true;
        }
        self.len = self.len.max(offset + data.len() as u64);
        Ok(())
    }

    /// Grows the string to at least `len` bytes (zero bytes: nothing is written but the length).
    pub(crate) fn grow(&mut self, len: u64) {
        self.len = self.len.max(len);
    }

    /// Adds the changed fragments and the metadata (with `expire_ms` and `flags`) to `batch`. An
    /// all-zero fragment is deleted (or never written), since a missing one reads the same. The
    /// metadata is left out when it would be written as it is stored (an edit within the
    /// string's length, its TTL and flags the same: SETBIT or SETRANGE into a big bitmap), which
    /// spares a record in the batch, the log and the memory tier on every such edit.
    pub(crate) fn finish(
        self,
        db: &Db,
        batch: &mut WriteBatch,
        key: &[u8],
        flags: u8,
        expire_ms: u64,
    ) {
        let s = db.storage();
        for (number, (bytes, changed)) in self.staged {
            if !changed {
                continue;
            }
            let k = keys::data_key(db.phys(), key, self.version, &sub_key(number));
            if bytes.iter().any(|b| *b != 0) {
                batch.put_cf(s.cf(CF_DATA), k, bytes);
            } else if !self.fresh {
                batch.delete_cf(s.cf(CF_DATA), k);
            }
        }
        let stored = StoredString {
            expire_ms,
            flags,
            layout: Layout::Fragmented {
                version: self.version,
                len: self.len,
            },
        };
        if let Some(before) = &self.stored {
            // The record's flags are the high nibble of its byte 1, the raw flag always among
            // them (see `Db::put_stored_string`).
            let same_flags = (flags | FLAG_RAW_STRING) & 0xF0 == before.flags;
            let live = expire_ms == 0 || expire_ms > now_ms();
            if same_flags && live && before.expire_ms == expire_ms && before.layout == stored.layout
            {
                return;
            }
        }
        db.put_stored_string(batch, key, &stored);
    }
}

/// Whether `code` names the fragmented layout (for readers of raw records).
pub(crate) fn is_fragmented_record(raw: &[u8]) -> bool {
    raw.first() == Some(&KeyType::String.id()) && meta::encoding_of(raw) == STRING_FRAGMENTED
}

/// Whether the metadata record `raw` holds a string inline: its value is `raw[HEADER_LEN..]`,
/// to be read or edited where it lies.
pub(crate) fn is_inline_string_record(raw: &[u8]) -> bool {
    meta::decode_header(raw).is_ok_and(|(kind, _)| kind == KeyType::String)
        && !is_fragmented_record(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(from: u64, to: u64, frags: &[(u64, Vec<u8>)]) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut f = |at: u64, c: Chunk<'_>| {
            out.push((
                at,
                match c {
                    Chunk::Bytes(b) => format!("b{}", b.len()),
                    Chunk::Zeros(n) => format!("z{n}"),
                },
            ));
            true
        };
        let mut w = Walk::new(from, to);
        for (n, b) in frags {
            if !w.fragment(*n, b, &mut f) {
                return out;
            }
        }
        w.finish(&mut f);
        out
    }

    /// The range's bytes as a walk hands them out, flattened.
    fn flatten(from: u64, to: u64, frags: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut f = |at: u64, c: Chunk<'_>| {
            assert_eq!(at, from + out.len() as u64, "chunks are contiguous");
            match c {
                Chunk::Bytes(b) => out.extend_from_slice(b),
                Chunk::Zeros(n) => out.resize(out.len() + n as usize, 0),
            }
            true
        };
        let mut w = Walk::new(from, to);
        for (n, b) in frags {
            if !w.fragment(*n, b, &mut f) {
                break;
            }
        }
        w.finish(&mut f);
        out
    }

    #[test]
    fn pieces_split_ranges_at_fragment_boundaries() {
        let p: Vec<Piece> = pieces(F - 1, 2).collect();
        assert_eq!(
            p,
            vec![
                Piece {
                    number: 0,
                    at: FRAGMENT_LEN - 1,
                    len: 1,
                    offset: 0
                },
                Piece {
                    number: 1,
                    at: 0,
                    len: 1,
                    offset: 1
                }
            ]
        );
        assert_eq!(pieces(F, 1).next().map(|p| (p.number, p.at)), Some((1, 0)));
        assert_eq!(
            pieces(F + 1, 1).next().map(|p| (p.number, p.at)),
            Some((1, 1))
        );
        assert_eq!(pieces(F - 1, 1).count(), 1);
        assert_eq!(pieces(0, F).count(), 1);
        assert_eq!(pieces(0, F + 1).count(), 2);
        assert_eq!(pieces(5, 0).count(), 0);
        // A write spanning several fragments: the shares tile the range.
        let total: Vec<Piece> = pieces(100, 3 * F).collect();
        assert_eq!(total.len(), 4);
        assert_eq!(total.iter().map(|p| p.len as u64).sum::<u64>(), 3 * F);
        for w in total.windows(2) {
            assert_eq!(w[0].offset + w[0].len as u64, w[1].offset);
            assert_eq!(w[1].at, 0);
        }
        // Bit 2^32-1 is in the last byte of a 512 MB string: the last fragment's last byte.
        let last_byte = (u32::MAX as u64) >> 3;
        let p: Vec<Piece> = pieces(last_byte, 1).collect();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].number, (512 << 20) / F - 1);
        assert_eq!(p[0].at, FRAGMENT_LEN - 1);
    }

    #[test]
    fn a_sparse_gap_and_a_short_fragment_read_as_zeros() {
        let frags = vec![(0, vec![1u8; 10]), (3, vec![2u8; FRAGMENT_LEN])];
        let bytes = flatten(0, 4 * F, &frags);
        assert_eq!(bytes.len() as u64, 4 * F);
        assert!(bytes[..10].iter().all(|b| *b == 1));
        assert!(bytes[10..3 * FRAGMENT_LEN].iter().all(|b| *b == 0));
        assert!(bytes[3 * FRAGMENT_LEN..].iter().all(|b| *b == 2));
        assert_eq!(
            walk(5, 4 * F, &frags),
            vec![
                (5, "b5".into()),
                (10, format!("z{}", 3 * F - 10)),
                (3 * F, format!("b{F}"))
            ]
        );
        // A range inside a gap, and one past the last fragment.
        assert_eq!(walk(F, 2 * F, &[]), vec![(F, format!("z{F}"))]);
        assert_eq!(
            walk(F + 3, F + 4, &[(1, vec![9; 3])]),
            vec![(F + 3, "z1".into())]
        );
        assert_eq!(walk(4, 4, &frags), vec![]);
    }

    #[test]
    fn walks_cut_fragments_at_both_ends_of_the_range() {
        let frags: Vec<(u64, Vec<u8>)> = (0..3)
            .map(|n| (n, (0..FRAGMENT_LEN).map(|i| (i % 251) as u8 + 1).collect()))
            .collect();
        let whole = flatten(0, 3 * F, &frags);
        for (from, to) in [
            (F - 1, F + 1),
            (F, F + 1),
            (F + 1, 2 * F + 5),
            (0, 1),
            (1, 3 * F),
        ] {
            assert_eq!(
                flatten(from, to, &frags),
                whole[from as usize..to as usize],
                "{from}..{to}"
            );
        }
        // Stopping early stops the walk.
        let mut seen = 0;
        let mut w = Walk::new(0, 3 * F);
        let mut f = |_: u64, _: Chunk<'_>| {
            seen += 1;
            false
        };
        assert!(!w.fragment(0, &frags[0].1, &mut f));
        assert_eq!(seen, 1);
    }

    /// The model of a string: `v` with `data` written at `offset`.
    fn put(v: &mut Vec<u8>, offset: usize, data: &[u8]) {
        if v.len() < offset + data.len() {
            v.resize(offset + data.len(), 0);
        }
        v[offset..offset + data.len()].copy_from_slice(data);
    }

    fn stored_chunks(db: &Db, key: &[u8]) -> Result<usize> {
        let s = db.live_string(key)?.ok_or(Error::NoSuchKey)?;
        let mut n = 0;
        db.string_chunks(key, &s, 0, s.len(), |_, c| {
            n += matches!(c, Chunk::Bytes(_)) as usize;
            true
        })?;
        Ok(n)
    }

    #[test]
    fn db_partial_writes_past_the_threshold_edit_fragments() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        let mut model = Vec::new();
        db.set(b"k", b"inline", Default::default())?;
        put(&mut model, 0, b"inline");
        let t = THRESHOLD as usize;
        for (offset, data) in [
            (t - 2, &b"abcd"[..]),
            (FRAGMENT_LEN - 1, b"xy"),
            (FRAGMENT_LEN, b"z"),
            (FRAGMENT_LEN + 1, b"w"),
            (3 * FRAGMENT_LEN - 5, &[7u8; 2 * FRAGMENT_LEN + 9][..]),
            (t + 10 * FRAGMENT_LEN, b"past a gap"),
        ] {
            assert_eq!(db.setrange(b"k", offset as u64, data)?, {
                put(&mut model, offset, data);
                model.len() as u64
            });
            let m = db.live_meta(b"k")?.ok_or(Error::NoSuchKey)?;
            assert!(
                m.is_fragmented(),
                "past the threshold after SETRANGE at {offset}"
            );
        }
        let len = model.len();
        assert_eq!(db.append(b"k", b"tail")?, len as u64 + 4);
        put(&mut model, len, b"tail");
        // Byte F holds "z" (0x7A): its bit 5 (0x04) is clear.
        assert_eq!(
            db.setbit(b"k", 8 * (FRAGMENT_LEN as u64) + 5, true)?,
            (0, true)
        );
        model[FRAGMENT_LEN] |= 0x04;
        assert_eq!(db.get(b"k")?.as_deref(), Some(&model[..]));
        assert_eq!(db.strlen(b"k")?, model.len() as u64);
        for (a, b) in [
            (0i64, -1i64),
            (4095, 4097),
            (-20, -1),
            (t as i64 - 3, t as i64 + 3),
        ] {
            let want = {
                let n = model.len() as i64;
                let (a, b) = (if a < 0 { n + a } else { a }, if b < 0 { n + b } else { b });
                model[a as usize..=b as usize].to_vec()
            };
            assert_eq!(db.getrange(b"k", a, b)?, want, "{a}..{b}");
        }
        assert_eq!(db.bitcount(b"k", None)?, crate::bits::popcount(&model));
        assert_eq!(
            db.bitpos(b"k", true, None)?,
            crate::bits::bitpos(&model, true, None)
        );
        // The gap between the last SETRANGE and the earlier bytes is stored as nothing.
        assert!(stored_chunks(&db, b"k")? < model.len().div_ceil(FRAGMENT_LEN));
        // A copy is independent; an overwrite goes back inline.
        assert!(db.copy(b"k", 0, b"c", false)?);
        db.setrange(b"c", 0, b"C")?;
        assert_eq!(db.getrange(b"k", 0, 0)?, b"i");
        assert_eq!(db.getrange(b"c", 0, 0)?, b"C");
        db.set(b"k", b"small", Default::default())?;
        assert!(!db.live_meta(b"k")?.ok_or(Error::NoSuchKey)?.is_fragmented());
        assert_eq!(db.get(b"k")?, Some(b"small".to_vec()));
        assert_eq!(db.incr_by(b"c", 1), Err(Error::NotInteger));
        Ok(())
    }

    #[test]
    fn an_edit_within_a_fragmented_string_writes_its_fragment_but_not_its_metadata() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        db.setrange(b"k", THRESHOLD, b"x")?;
        let at = now_ms() + 100_000;
        db.expire_at(b"k", at as i64, &[])?;
        let live = |db: &Db| -> Result<StoredString> {
            StoredString::from_meta(db.live_meta(b"k")?.ok_or(Error::NoSuchKey)?)
        };
        let stored = live(&db)?;
        let batch_of = |offset: u64, data: &[u8], expire_ms: u64| -> Result<WriteBatch> {
            let mut w = FragmentWriter::new(&db, Some(&stored));
            w.write(&db, b"k", offset, data)?;
            let mut batch = crate::storage::new_batch();
            w.finish(&db, &mut batch, b"k", FLAG_RAW_STRING, expire_ms);
            Ok(batch)
        };
        // Within the length, same TTL: the fragment alone.
        assert_eq!(batch_of(5, b"y", at)?.len(), 1);
        // Growing the string, or another TTL: the fragment, the metadata and its expiry entry.
        assert_eq!(batch_of(THRESHOLD + 1, b"z", at)?.len(), 3);
        assert_eq!(batch_of(5, b"y", at + 1)?.len(), 3);
        // Through the commands: the edit is kept, and the length and TTL with it.
        db.setrange(b"k", 5, b"y")?;
        db.setbit(b"k", 7, true)?;
        assert_eq!(live(&db)?, stored);
        assert_eq!(db.getrange(b"k", 5, 5)?, b"y".to_vec());
        assert_eq!(db.getbit(b"k", 7)?, 1);
        assert_eq!(db.ttl(b"k")?, crate::Ttl::ExpiresAt(at));
        assert_eq!(db.append(b"k", b"")?, THRESHOLD + 1);
        drop(db);
        let db = Db::open(dir.path())?;
        assert_eq!(db.getrange(b"k", 5, 5)?, b"y".to_vec());
        assert_eq!(db.strlen(b"k")?, THRESHOLD + 1);
        Ok(())
    }

    #[test]
    fn db_setbit_at_the_last_bit_stores_one_fragment() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        assert_eq!(db.setbit(b"b", u32::MAX as u64, true)?, (0, true));
        assert_eq!(db.strlen(b"b")?, 1 << 29);
        assert_eq!(stored_chunks(&db, b"b")?, 1);
        assert_eq!(db.getbit(b"b", u32::MAX as u64)?, 1);
        assert_eq!(db.getbit(b"b", u32::MAX as u64 - 1)?, 0);
        assert_eq!(db.bitcount(b"b", None)?, 1);
        assert_eq!(db.bitpos(b"b", true, None)?, u32::MAX as i64);
        assert_eq!(db.bitpos(b"b", false, None)?, 0);
        assert_eq!(db.getrange(b"b", -2, -1)?, vec![0, 1]);
        // Clearing the bit deletes the fragment: nothing but zeros is left.
        assert_eq!(db.setbit(b"b", u32::MAX as u64, false)?, (1, true));
        assert_eq!(stored_chunks(&db, b"b")?, 0);
        assert_eq!(db.strlen(b"b")?, 1 << 29);
        assert_eq!(db.bitpos(b"b", true, None)?, -1);
        Ok(())
    }
}
