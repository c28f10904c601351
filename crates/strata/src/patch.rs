//! Byte-range patches of a record, the redo log's short form of a put that changes a few bytes
//! of a value the log already holds whole (a register of a dense HyperLogLog, a bit of a bitmap
//! fragment, bytes appended to a string's last fragment). A patch names a record (column family
//! and key), the length of its new value, and the byte ranges where the new value differs from
//! the one before it; applying it to the value before gives the new one. [`diff`] finds the
//! ranges, [`encode`] writes a patch record (docs/format.md, "Redo log"), [`Ranges`] reads its
//! ranges back (checking them), [`apply`] rebuilds the value. The write-back tier logs one in
//! place of a put when its memory layer holds the value before (`tier.rs`); replay and a
//! replica apply it to the value they hold. Knows bytes, nothing of what a record means.

use smallvec::SmallVec;

use crate::error::{Error, Result};

/// The byte ranges `(from, to)` of a patch, in order and disjoint (most patches have a few).
pub(crate) type PatchRanges = SmallVec<[(usize, usize); 8]>;

/// The record tag of a patch: Strata's own, beyond RocksDB's record types (which end at 0x7F),
/// so RocksDB never gives it a meaning and a reader that does not know it refuses the batch.
pub(crate) const TAG_CF_PATCH: u8 = 0x80;

/// Values shorter than this are logged whole (a patch would save too little to pay the lookup
/// of the value before and the diff). A stream's metadata record, 138 bytes rewritten by every
/// XADD with a few counters changed, is the shortest record this is for: logged whole it was
/// ~150 of the 355 bytes an XADD wrote to the redo log, as a patch ~25.
pub(crate) const MIN_VALUE: usize = 128;
/// Values shorter than this are compared a word at a time and their ranges kept to the byte
/// ([`diff_fine`]): a short record changes in a few counters, each a byte or two, and a
/// range's header costs two bytes. Longer ones are compared a chunk at a time.
const FINE_BELOW: usize = 512;
/// In a fine diff, two changed ranges this close are logged as one (merging over a gap of up
/// to two bytes costs what a second range's header costs).
const FINE_GAP: usize = 2;
/// What a range's header costs in a fine diff's budget (its offset and length: one varint byte
/// each below 128, the offset two bytes up to [`FINE_BELOW`]).
const FINE_RANGE_COST: usize = 2;
/// Bytes compared at a time while looking for changes.
const CHUNK: usize = 32;
/// Two changed ranges this close are logged as one (a range costs a few bytes of header).
const GAP: usize = 8;
/// A patch has at most this many ranges, and its ranges at most this share of the new value
/// (in eighths): beyond that the put is logged whole.
const MAX_RANGES: usize = 64;
const MAX_SHARE_EIGHTHS: usize = 4;

fn damaged(what: &str) -> Error {
    Error::Corrupt(format!("redo log: damaged patch record: {what}"))
}

/// The ranges `(from, to)` of `new` that differ from `old` (bytes past `old`'s end included),
/// in order and disjoint; `None` when a patch would not pay: the value is short, or changed in
/// too many places or too many bytes.
pub(crate) fn diff(old: &[u8], new: &[u8]) -> Option<PatchRanges> {
    if new.len() < MIN_VALUE || old.len() < MIN_VALUE {
        return None;
    }
    if new.len() < FINE_BELOW {
        return diff_fine(old, new);
    }
    let budget = new.len() / 8 * MAX_SHARE_EIGHTHS;
    let common = old.len().min(new.len());
    let mut ranges = PatchRanges::new();
    let mut changed = 0usize;
    // Adds `from..to` (merged with the last range when close to it); false past the limits.
    let push = |ranges: &mut PatchRanges, changed: &mut usize, from: usize, to: usize| {
        match ranges.last_mut() {
            Some(last) if from <= last.1 + GAP => {
                *changed += to - last.1;
                last.1 = to;
            }
            _ => {
                *changed += to - from;
                ranges.push((from, to));
            }
        }
        ranges.len() <= MAX_RANGES && *changed <= budget
    };
    let mut at = 0;
    while at < common {
        let end = (at + CHUNK).min(common);
        if same(old, new, at, end) {
            at = end;
            continue;
        }
        let from = at + (at..end).position(|i| old[i] != new[i])?;
        // The run of differing chunks, then back to its last differing byte. A run longer
        // than what is left of the budget ends the search (a value rewritten whole is found
        // out after comparing half of it at most).
        let mut to = end;
        while to < common {
            let next = (to + CHUNK).min(common);
            if same(old, new, to, next) {
                break;
            }
            if changed + (next - from) > budget {
                return None;
            }
            to = next;
        }
        at = to;
        while to > from && old[to - 1] == new[to - 1] {
            to -= 1;
        }
        if !push(&mut ranges, &mut changed, from, to) {
            return None;
        }
    }
    if new.len() > common && !push(&mut ranges, &mut changed, common, new.len()) {
        return None;
    }
    Some(ranges)
}

/// [`diff`] of a short value: compared eight bytes at a time, each differing word giving the
/// range from its first to its last differing byte, ranges [`FINE_GAP`] apart merged. `None`
/// when the ranges with their headers would take more than half the new value.
fn diff_fine(old: &[u8], new: &[u8]) -> Option<PatchRanges> {
    let budget = new.len() / 2;
    let common = old.len().min(new.len());
    let mut ranges = PatchRanges::new();
    let mut cost = 0usize;
    // Adds `from..to` (merged with the last range when close to it); false past the budget.
    let mut add = |from: usize, to: usize| {
        match ranges.last_mut() {
            Some(last) if from <= last.1 + FINE_GAP => {
                cost += to - last.1;
                last.1 = to;
            }
            _ => {
                cost += to - from + FINE_RANGE_COST;
                ranges.push((from, to));
            }
        }
        cost <= budget
    };
    let mut at = 0;
    while at + 8 <= common {
        let (Some(a), Some(b)) = (old[at..].first_chunk::<8>(), new[at..].first_chunk::<8>())
        else {
            break;
        };
        let x = u64::from_be_bytes(*a) ^ u64::from_be_bytes(*b);
        if x != 0 {
            // Big-endian: leading zero bits are the equal bytes at the word's start.
            let from = at + (x.leading_zeros() / 8) as usize;
            let to = at + 8 - (x.trailing_zeros() / 8) as usize;
            if !add(from, to) {
                return None;
            }
        }
        at += 8;
    }
    for i in at..common {
        if old[i] != new[i] && !add(i, i + 1) {
            return None;
        }
    }
    if new.len() > common && !add(common, new.len()) {
        return None;
    }
    Some(ranges)
}

/// Whether `old[at..end]` and `new[at..end]` are equal (a whole chunk compared as an array,
/// which the compiler turns into a few vector compares instead of a call to `memcmp`).
fn same(old: &[u8], new: &[u8], at: usize, end: usize) -> bool {
    let (a, b) = (&old[at..end], &new[at..end]);
    match (a.first_chunk::<CHUNK>(), b.first_chunk::<CHUNK>()) {
        (Some(x), Some(y)) if a.len() == CHUNK => x == y,
        _ => a == b,
    }
}

fn varint32(out: &mut Vec<u8>, mut v: u32) {
    // Built on the stack and appended at once, instead of a push per byte.
    let mut buf = [0u8; 5];
    let mut n = 0;
    while v >= 0x80 && n < 4 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    out.extend_from_slice(&buf[..=n]);
}

fn len32(n: usize) -> u32 {
    // Values and keys are below RocksDB's 4 GiB slice limit: the batch holding them encoded
    // their lengths as 32-bit varints already.
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Appends the patch record that turns a value into `new` in family `cf` at `key`, `ranges`
/// from [`diff`]: the tag, the family, the key, the new length, the range count, then per range
/// its offset and its bytes.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    cf: u32,
    key: &[u8],
    new: &[u8],
    ranges: &[(usize, usize)],
) {
    let bytes: usize = ranges.iter().map(|&(from, to)| to - from + 10).sum();
    out.reserve(16 + key.len() + bytes);
    out.push(TAG_CF_PATCH);
    varint32(out, cf);
    varint32(out, len32(key.len()));
    out.extend_from_slice(key);
    varint32(out, len32(new.len()));
    varint32(out, len32(ranges.len()));
    for &(from, to) in ranges {
        varint32(out, len32(from));
        varint32(out, len32(to - from));
        out.extend_from_slice(&new[from..to]);
    }
}

/// The body of a patch record after its key: the new length and the ranges, checked when read
/// ([`Ranges::read`]): in order, disjoint, within the new length.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) struct Ranges<'a> {
    /// The length of the value the patch makes.
    pub len: usize,
    count: usize,
    /// The encoded ranges.
    body: &'a [u8],
}

fn read_varint(data: &[u8], at: &mut usize) -> Result<u32> {
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *data.get(*at).ok_or_else(|| damaged("truncated"))?;
        *at += 1;
        v |= u32::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(damaged("varint longer than 5 bytes"))
}

impl<'a> Ranges<'a> {
    /// Reads the new length and the ranges at `data[*at..]`, moving `at` past them.
    pub(crate) fn read(data: &'a [u8], at: &mut usize) -> Result<Ranges<'a>> {
        let len = read_varint(data, at)? as usize;
        let count = read_varint(data, at)? as usize;
        let start = *at;
        let mut end_of_last = 0usize;
        for _ in 0..count {
            let from = read_varint(data, at)? as usize;
            let n = read_varint(data, at)? as usize;
            let to = from.checked_add(n).ok_or_else(|| damaged("range"))?;
            if from < end_of_last || to > len || n == 0 {
                return Err(damaged("ranges out of order or past the value's end"));
            }
            end_of_last = to;
            *at = at
                .checked_add(n)
                .filter(|&e| e <= data.len())
                .ok_or_else(|| damaged("truncated range"))?;
        }
        Ok(Ranges {
            len,
            count,
            body: &data[start..*at],
        })
    }

    /// Each range: its offset in the new value and its bytes.
    fn each(&self) -> impl Iterator<Item = (usize, &'a [u8])> + 'a {
        let body = self.body;
        let mut at = 0usize;
        (0..self.count).map_while(move |_| {
            let from = read_varint(body, &mut at).ok()? as usize;
            let n = read_varint(body, &mut at).ok()? as usize;
            let bytes = body.get(at..at + n)?;
            at += n;
            Some((from, bytes))
        })
    }
}

/// Turns `value` (the value before) into the one the patch makes. Bytes past the old end that
/// no range covers would be zeros; [`diff`] always covers them.
pub(crate) fn apply(value: &mut Vec<u8>, ranges: &Ranges<'_>) {
    value.resize(ranges.len, 0);
    for (from, bytes) in ranges.each() {
        value[from..from + bytes.len()].copy_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::{apply, diff, encode, Ranges, TAG_CF_PATCH};

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    /// Encodes the patch from `old` to `new`, reads it back and applies it to `old`.
    fn round_trip(old: &[u8], new: &[u8]) -> std::result::Result<Option<usize>, String> {
        let Some(ranges) = diff(old, new) else {
            return Ok(None);
        };
        let mut out = Vec::new();
        encode(&mut out, 3, b"key", new, &ranges);
        assert_eq!(out[0], TAG_CF_PATCH);
        // tag, cf 3, key length 3, key
        let mut at = 1 + 1 + 1 + 3;
        let read = Ranges::read(&out, &mut at).map_err(|e| e.to_string())?;
        assert_eq!(at, out.len(), "the record is read to its end");
        let mut value = old.to_vec();
        apply(&mut value, &read);
        assert_eq!(value, new);
        Ok(Some(out.len()))
    }

    #[test]
    fn a_patch_rebuilds_the_new_value_from_the_old_one() -> R {
        let old: Vec<u8> = (0..12_304u32).map(|i| (i * 7 % 251) as u8).collect();
        // One register and the cached cardinality of a dense HyperLogLog.
        let mut hll = old.clone();
        hll[9] ^= 0x80;
        hll[6000] ^= 1;
        let size = round_trip(&old, &hll)?.ok_or("no patch")?;
        assert!(size < 40, "a two-byte change logged in {size} bytes");
        // An append to a fragment, a shrink, and a change at both ends.
        let mut appended = old.clone();
        appended.extend_from_slice(&[b'x'; 100]);
        assert!(round_trip(&old, &appended)?.is_some());
        assert!(round_trip(&old, &old[..4000])?.is_some());
        let mut ends = old.clone();
        ends[0] ^= 1;
        let last = ends.len() - 1;
        ends[last] ^= 1;
        assert!(round_trip(&old, &ends)?.is_some());
        // Nothing changed: a patch with no range.
        assert_eq!(diff(&old, &old).map(|r| r.to_vec()), Some(vec![]));
        assert!(round_trip(&old, &old)?.is_some());
        Ok(())
    }

    #[test]
    fn a_short_record_changed_in_a_few_counters_is_patched_to_the_byte() -> R {
        // A stream's metadata record (138 bytes) before and after an XADD: the length, the
        // last ID's sequence, entries-added and the node fill each go up by one.
        let old: Vec<u8> = (0..138u32).map(|i| (i * 13 % 7) as u8).collect();
        let mut new = old.clone();
        for at in [25, 41, 81, 105] {
            new[at] = new[at].wrapping_add(1);
        }
        let ranges = diff(&old, &new).ok_or("no patch")?;
        assert_eq!(
            ranges.to_vec(),
            vec![(25, 26), (41, 42), (81, 82), (105, 106)]
        );
        let size = round_trip(&old, &new)?.ok_or("no patch")?;
        assert!(
            size <= 24,
            "four one-byte changes of a short key's record in {size} bytes"
        );
        // A carry over two bytes and a change two bytes from it: one range.
        let mut carried = old.clone();
        carried[30] ^= 1;
        carried[31] ^= 1;
        carried[34] ^= 1;
        assert_eq!(
            diff(&old, &carried).map(|r| r.to_vec()),
            Some(vec![(30, 35)])
        );
        // Longer, shorter, and changed in the last bytes past the final whole word.
        let mut longer = old.clone();
        longer.extend_from_slice(b"0123456789");
        assert!(round_trip(&old, &longer)?.is_some());
        assert!(round_trip(&old, &old[..130])?.is_some());
        let mut last = old.clone();
        last[137] ^= 0xff;
        assert_eq!(
            diff(&old, &last).map(|r| r.to_vec()),
            Some(vec![(137, 138)])
        );
        assert!(round_trip(&old, &last)?.is_some());
        Ok(())
    }

    #[test]
    fn short_or_much_changed_values_are_logged_whole() {
        assert_eq!(diff(b"abc", b"abd"), None);
        // Below the shortest value patched: whole, however little changed.
        let mut short = vec![3u8; super::MIN_VALUE - 1];
        let before = short.clone();
        short[0] = 4;
        assert_eq!(diff(&before, &short), None);
        // A short value changed in every fifth byte: the ranges with their headers would
        // cost more than half of it.
        let plain = vec![0u8; 200];
        let mut spotted = plain.clone();
        for i in (0..200).step_by(5) {
            spotted[i] = 1;
        }
        assert_eq!(diff(&plain, &spotted), None);
        let old = vec![0u8; 4096];
        let rewritten = vec![1u8; 4096];
        assert_eq!(diff(&old, &rewritten), None);
        // Changes in more places than a patch holds.
        let mut scattered = old.clone();
        for i in (0..4096).step_by(40) {
            scattered[i] = 9;
        }
        assert_eq!(diff(&old, &scattered), None);
    }

    fn put(tier: &crate::tier::Tier, key: &[u8], value: &[u8]) -> crate::error::Result<()> {
        let mut batch = rocksdb::WriteBatch::default();
        batch.put(key, value);
        let (_, ops) = crate::pending::decode_batch(batch.data())?;
        tier.write(batch.data(), &ops, None)
    }

    fn held(tier: &crate::tier::Tier, key: &[u8]) -> Option<Vec<u8>> {
        match tier.lookup(0, key, <[u8]>::to_vec) {
            crate::tier::Found::Value(v) => Some(v),
            _ => None,
        }
    }

    fn log_bytes(dir: &std::path::Path) -> std::io::Result<u64> {
        let mut n = 0;
        for e in std::fs::read_dir(dir.join("redo"))? {
            let e = e?;
            if e.file_type()?.is_file() {
                n += e.metadata()?.len();
            }
        }
        Ok(n)
    }

    #[test]
    fn the_tier_logs_a_changed_value_as_a_patch_and_replays_it() -> R {
        let dir = tempfile::tempdir()?;
        let tier = crate::tier::Tier::open(dir.path(), false, 1 << 30, false)?;
        let mut value = vec![7u8; 12_304];
        put(&tier, b"hll", &value)?;
        tier.sync()?;
        let whole = log_bytes(dir.path())?;
        for i in 0..100 {
            value[16 + i * 100] = i as u8;
            put(&tier, b"hll", &value)?;
        }
        value.extend_from_slice(b"appended");
        put(&tier, b"hll", &value)?;
        tier.sync()?;
        let patched = log_bytes(dir.path())? - whole;
        assert!(patched < 101 * 64, "101 patches took {patched} bytes");
        assert_eq!(held(&tier, b"hll").as_ref(), Some(&value));
        drop(tier);
        let tier = crate::tier::Tier::open(dir.path(), false, 1 << 30, false)?;
        assert_eq!(held(&tier, b"hll"), Some(value), "replayed in order");
        Ok(())
    }

    #[test]
    fn a_log_patching_a_value_it_never_wrote_is_refused_at_open() -> R {
        let dir = tempfile::tempdir()?;
        let (log, _) =
            crate::redo::RedoLog::open(&dir.path().join("redo"), false, false, |_| Ok(()))?;
        let log = log.ok_or("no log")?;
        let new = vec![1u8; 1024];
        let mut payload = vec![0u8; 12];
        payload[8] = 1;
        encode(&mut payload, 0, b"missing", &new, &[(0, 1024)]);
        log.append(&payload);
        log.sync()?;
        drop(log);
        let opened = crate::tier::Tier::open(dir.path(), false, 1 << 30, false);
        let err = opened
            .err()
            .ok_or("a patch without its value was replayed")?;
        assert!(err.to_string().contains("patch"), "{err}");
        Ok(())
    }

    #[test]
    fn a_damaged_patch_is_refused() -> R {
        let old = vec![5u8; 2048];
        let mut new = old.clone();
        new[100] = 6;
        new[1500] = 7;
        let ranges = diff(&old, &new).ok_or("no patch")?;
        let mut out = Vec::new();
        encode(&mut out, 0, b"k", &new, &ranges);
        let body = 1 + 1 + 1 + 1;
        // Cut short anywhere: refused.
        for cut in body..out.len() {
            let mut at = body;
            assert!(Ranges::read(&out[..cut], &mut at).is_err(), "cut at {cut}");
        }
        // A range past the new length: refused.
        let mut past = Vec::new();
        for v in [10u32, 1, 5, 10] {
            super::varint32(&mut past, v);
        }
        past.extend_from_slice(&[1u8; 10]);
        assert!(Ranges::read(&past, &mut 0).is_err());
        // An empty range (never written): refused.
        assert!(Ranges::read(&[10, 1, 5, 0], &mut 0).is_err());
        // Ranges out of order: refused.
        let mut swapped = Vec::new();
        encode(&mut swapped, 0, b"k", &new, &[(1500, 1501), (100, 101)]);
        let mut at = body;
        assert!(Ranges::read(&swapped, &mut at).is_err());
        Ok(())
    }
}
