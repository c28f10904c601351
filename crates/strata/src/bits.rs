//! Bitmaps: a string value read as bits, bit 0 being the most significant bit of its first byte,
//! as in Redis. Two layers. Pure functions over byte slices — set bits in a range, the first set
//! or clear bit of a range, BITOP, bit fields with Redis's overflow rules, and the arithmetic
//! that turns a command's (possibly negative) range into bits — tested on their own. Then the
//! `Db` methods GETBIT, SETBIT, BITCOUNT, BITPOS, BITOP and BITFIELD: reads of an inline string
//! look at the stored record in place (no copy), writes edit one copy of the record and store it
//! whole under the key's lock, keeping the TTL. A string these writes grow past
//! `fragment::THRESHOLD` is stored in fragments (`fragment.rs`): then a write reads and rewrites
//! only the fragments its bits are in, and a read only the fragments of its range. Knows
//! nothing of commands, arguments or replies.

use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::fragment::{self, Chunk, FragmentWriter, StoredString};
use crate::meta::{self, KeyType, Meta, FLAG_RAW_STRING, HEADER_LEN};
use crate::storage::CF_META;

/// The unit of a BITCOUNT or BITPOS range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BitUnit {
    /// Offsets count bytes (the default).
    #[default]
    Byte,
    /// Offsets count bits.
    Bit,
}

/// A BITCOUNT range: `start` and `end` inclusive, in `unit`s, negative ones counting from the
/// end of the string (-1 is the last), clamped to the string as Redis clamps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitRange {
    /// First offset.
    pub start: i64,
    /// Last offset.
    pub end: i64,
    /// Bytes or bits.
    pub unit: BitUnit,
}

/// A BITPOS range: like [`BitRange`], with an end that may be left out. Without an end the
/// search runs to the end of the string, and a clear bit is then found just past it (a string
/// reads as padded with zero bits); with one, a range without the bit answers -1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitposRange {
    /// First offset.
    pub start: i64,
    /// Last offset, if given.
    pub end: Option<i64>,
    /// Bytes or bits.
    pub unit: BitUnit,
}

/// A BITOP operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    /// Bitwise AND (a missing or shorter source reads as zero bytes).
    And,
    /// Bitwise OR.
    Or,
    /// Bitwise XOR.
    Xor,
    /// Bitwise NOT of the first source (Redis allows only one).
    Not,
}

/// What a BITFIELD write does when the result does not fit its type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Wraps around, modulo 2^bits (the default).
    #[default]
    Wrap,
    /// Saturates at the type's minimum or maximum.
    Sat,
    /// Writes nothing and answers nil.
    Fail,
}

/// A bit field's type: signed of 1 to 64 bits, or unsigned of 1 to 63 (a u64 could not be
/// answered as a RESP integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitfieldType {
    signed: bool,
    bits: u8,
}

impl BitfieldType {
    /// `i<bits>` or `u<bits>`; None for a width the type does not allow.
    pub fn new(signed: bool, bits: u8) -> Option<BitfieldType> {
        let max = if signed { 64 } else { 63 };
        (1..=max)
            .contains(&bits)
            .then_some(BitfieldType { signed, bits })
    }

    /// Whether the field is signed (two's complement).
    pub fn is_signed(self) -> bool {
        self.signed
    }

    /// Its width in bits.
    pub fn bits(self) -> u8 {
        self.bits
    }
}

/// What one BITFIELD operation does to its field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitfieldAction {
    /// Reads the field.
    Get,
    /// Stores `value`, answering the previous value.
    Set {
        /// The value to store.
        value: i64,
        /// When it does not fit.
        overflow: Overflow,
    },
    /// Adds `increment`, answering the new value.
    IncrBy {
        /// The amount to add (negative subtracts).
        increment: i64,
        /// When the sum does not fit.
        overflow: Overflow,
    },
}

/// One BITFIELD operation: a field of type `ty` at bit `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitfieldOp {
    /// The field's type.
    pub ty: BitfieldType,
    /// Its first bit.
    pub offset: u64,
    /// What is done to it.
    pub action: BitfieldAction,
}

impl BitfieldOp {
    /// The last bit a write reaches (None for a read).
    fn last_written_bit(&self) -> Option<u64> {
        match self.action {
            BitfieldAction::Get => None,
            _ => Some(self.offset + self.ty.bits as u64 - 1),
        }
    }
}

/// What [`Db::bitfield`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitfieldOutcome {
    /// One value per operation: GET's value, SET's previous value, INCRBY's new value; None
    /// for a write that OVERFLOW FAIL refused.
    pub values: Vec<Option<i64>>,
    /// Whether a write changed the string as Redis counts changes (a write that was not
    /// refused, on a string it created or grew, or that changed its field): it then raises
    /// `setbit`. A refused write may still have grown the string.
    pub changed: bool,
}

/// What [`Db::bitop`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitopOutcome {
    /// The length of the result, stored at the destination unless 0.
    pub len: u64,
    /// Whether an empty result deleted a destination that existed.
    pub deleted: bool,
}

// ----- pure functions over bytes -------------------------------------------------------------

/// The bit at `offset` of `bytes` (0 past the end).
pub fn bit_at(bytes: &[u8], offset: u64) -> u8 {
    match usize::try_from(offset >> 3).ok().and_then(|i| bytes.get(i)) {
        Some(b) => (b >> (7 - (offset & 7))) & 1,
        None => 0,
    }
}

/// The number of set bits in `bytes`.
pub fn popcount(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut n = 0u64;
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        n += u64::from_ne_bytes(b).count_ones() as u64;
    }
    n + words
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum::<u64>()
}

/// The set bits among bits `from..=to` of `bytes` (bits past the end are clear).
pub fn count_bits(bytes: &[u8], from: u64, to: u64) -> u64 {
    let total = bytes.len() as u64 * 8;
    if from > to || from >= total {
        return 0;
    }
    let to = to.min(total - 1);
    let (first, last) = ((from >> 3) as usize, (to >> 3) as usize);
    let head = 0xFFu8 >> (from & 7);
    let tail = 0xFFu8 << (7 - (to & 7));
    if first == last {
        return (bytes[first] & head & tail).count_ones() as u64;
    }
    (bytes[first] & head).count_ones() as u64
        + popcount(&bytes[first + 1..last])
        + (bytes[last] & tail).count_ones() as u64
}

/// The first bit equal to `bit` among bits `from..=to` of `bytes` (bits past the end are clear).
pub fn find_bit(bytes: &[u8], bit: bool, from: u64, to: u64) -> Option<u64> {
    let total = bytes.len() as u64 * 8;
    if from > to {
        return None;
    }
    if from >= total {
        return (!bit).then_some(from);
    }
    let past_end = to >= total;
    let to = to.min(total - 1);
    let (first, last) = ((from >> 3) as usize, (to >> 3) as usize);
    let head = 0xFFu8 >> (from & 7);
    let tail = 0xFFu8 << (7 - (to & 7));
    // A word holding no candidate: all zeros when looking for a one, all ones otherwise.
    let skip = if bit { 0 } else { u64::MAX };
    let mut i = first;
    while i <= last {
        if i > first && i + 8 <= last {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i..i + 8]);
            if u64::from_ne_bytes(w) == skip {
                i += 8;
                continue;
            }
        }
        let mut mask = 0xFF;
        if i == first {
            mask &= head;
        }
        if i == last {
            mask &= tail;
        }
        let candidates = if bit { bytes[i] } else { !bytes[i] } & mask;
        if candidates != 0 {
            return Some(i as u64 * 8 + candidates.leading_zeros() as u64);
        }
        i += 1;
    }
    (past_end && !bit).then_some(total)
}

/// Redis's range arithmetic: `start` and `end` (negative from the end of `total` units)
/// clamped to `0..total`, as a possibly empty inclusive pair.
fn clamp(start: i64, end: i64, total: i64) -> (i64, i64) {
    let start = (if start < 0 { total + start } else { start }).max(0);
    let end = (if end < 0 { total + end } else { end }).max(0);
    (start, end.min(total - 1))
}

/// The inclusive bit range `start..=end` in `unit`s stands for.
fn in_bits(start: i64, end: i64, unit: BitUnit) -> (u64, u64) {
    match unit {
        BitUnit::Bit => (start as u64, end as u64),
        BitUnit::Byte => (start as u64 * 8, end as u64 * 8 + 7),
    }
}

fn units(len: u64, unit: BitUnit) -> i64 {
    match unit {
        BitUnit::Bit => len as i64 * 8,
        BitUnit::Byte => len as i64,
    }
}

/// The inclusive bit range BITCOUNT counts in a string of `len` bytes (None: no bit).
fn bitcount_bits(len: u64, range: Option<BitRange>) -> Option<(u64, u64)> {
    let Some(r) = range else {
        return (len > 0).then(|| (0, len * 8 - 1));
    };
    // Redis answers 0 for two negative offsets in the wrong order before clamping them.
    if r.start < 0 && r.end < 0 && r.start > r.end {
        return None;
    }
    let (start, end) = clamp(r.start, r.end, units(len, r.unit));
    (start <= end).then(|| in_bits(start, end, r.unit))
}

/// BITCOUNT: the set bits of `bytes` in `range` (all of them without one).
pub fn bitcount(bytes: &[u8], range: Option<BitRange>) -> u64 {
    if range.is_none() {
        return popcount(bytes);
    }
    bitcount_bits(bytes.len() as u64, range).map_or(0, |(from, to)| count_bits(bytes, from, to))
}

/// The inclusive bit range BITPOS searches in a string of `len` bytes (None: none, -1).
fn bitpos_bits(len: u64, range: Option<BitposRange>) -> Option<(u64, u64)> {
    let r = range.unwrap_or(BitposRange {
        start: 0,
        end: None,
        unit: BitUnit::Byte,
    });
    let (start, end) = clamp(r.start, r.end.unwrap_or(i64::MAX), units(len, r.unit));
    (start <= end).then(|| in_bits(start, end, r.unit))
}

/// BITPOS's answer when the range `..=to` holds no bit equal to `bit`: without an end, a clear
/// bit is found just past the string.
fn bitpos_miss(bit: bool, range: Option<BitposRange>, to: u64) -> i64 {
    if bit || range.is_some_and(|r| r.end.is_some()) {
        -1
    } else {
        to as i64 + 1
    }
}

/// BITPOS: the position (in bits from the start of the string) of the first bit equal to `bit`
/// in `range` (the whole string without one), or -1. Without an end, a string with no clear
/// bit in range answers the first bit past its end.
pub fn bitpos(bytes: &[u8], bit: bool, range: Option<BitposRange>) -> i64 {
    let Some((from, to)) = bitpos_bits(bytes.len() as u64, range) else {
        return -1;
    };
    match find_bit(bytes, bit, from, to) {
        Some(p) => p as i64,
        None => bitpos_miss(bit, range, to),
    }
}

/// BITOP: the result of `op` over `sources` (missing ones given as empty), appended to `out`.
/// Shorter sources read as zero bytes; the result is as long as the longest. NOT applies to the
/// first source only.
pub fn bitop_into(op: BitOp, sources: &[&[u8]], out: &mut Vec<u8>) {
    let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    let Some((first, rest)) = sources.split_first() else {
        return;
    };
    let at = out.len();
    out.extend_from_slice(first);
    out.resize(at + len, 0);
    let res = &mut out[at..];
    if op == BitOp::Not {
        res.iter_mut().for_each(|b| *b = !*b);
        return;
    }
    for s in rest {
        let (head, tail) = res.split_at_mut(s.len());
        match op {
            BitOp::And => {
                head.iter_mut().zip(s.iter()).for_each(|(o, b)| *o &= b);
                tail.fill(0);
            }
            BitOp::Or => head.iter_mut().zip(s.iter()).for_each(|(o, b)| *o |= b),
            BitOp::Xor => head.iter_mut().zip(s.iter()).for_each(|(o, b)| *o ^= b),
            BitOp::Not => {}
        }
    }
}

/// The `bits`-bit unsigned integer at bit `offset` of `bytes`, most significant bit first (bits
/// past the end read as 0).
pub fn get_unsigned(bytes: &[u8], offset: u64, bits: u8) -> u64 {
    (0..bits as u64).fold(0, |v, j| (v << 1) | bit_at(bytes, offset + j) as u64)
}

/// The `bits`-bit two's complement integer at bit `offset` of `bytes`.
pub fn get_signed(bytes: &[u8], offset: u64, bits: u8) -> i64 {
    let v = get_unsigned(bytes, offset, bits);
    if bits < 64 && (v >> (bits - 1)) & 1 == 1 {
        (v | (u64::MAX << bits)) as i64
    } else {
        v as i64
    }
}

/// Stores the low `bits` bits of `value` at bit `offset` of `bytes`, most significant first
/// (bits past the end of `bytes` are dropped: the caller grows it first).
pub fn set_bits(bytes: &mut [u8], offset: u64, bits: u8, value: u64) {
    for j in 0..bits as u64 {
        let on = ((value >> (bits as u64 - 1 - j)) & 1) as u8;
        let at = offset + j;
        let shift = 7 - (at & 7);
        if let Some(b) = usize::try_from(at >> 3).ok().and_then(|i| bytes.get_mut(i)) {
            *b = (*b & !(1 << shift)) | (on << shift);
        }
    }
}

/// Whether `value + incr` overflows an unsigned field of `bits` bits: `Some(replacement)` when
/// it does (the wrapped sum, or the limit it saturates at; under FAIL the value is unused),
/// None when it fits. As Redis's checkUnsignedBitfieldOverflow, including its treatment of a
/// negative SET value as a huge one (SAT then stores the maximum).
pub fn unsigned_overflow(value: u64, incr: i64, bits: u8, overflow: Overflow) -> Option<u64> {
    let max = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let wrapped = value.wrapping_add(incr as u64) & max;
    if value > max || (incr > 0 && incr > max_incr) {
        Some(if overflow == Overflow::Sat {
            max
        } else {
            wrapped
        })
    } else if incr < 0 && incr < min_incr {
        Some(if overflow == Overflow::Sat {
            0
        } else {
            wrapped
        })
    } else {
        None
    }
}

/// Whether `value + incr` overflows a signed field of `bits` bits: `Some(replacement)` (the
/// wrapped sum, or the limit it saturates at) or None when it fits; as Redis's
/// checkSignedBitfieldOverflow, including its 64-bit `max - value`, which makes a SET of a value
/// within `max` of `i64::MIN` saturate at the maximum.
pub fn signed_overflow(value: i64, incr: i64, bits: u8, overflow: Overflow) -> Option<i64> {
    let max = if bits >= 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrapped = || {
        let sum = (value as u64).wrapping_add(incr as u64);
        if bits >= 64 {
            return sum as i64;
        }
        let high = u64::MAX << bits;
        if (sum >> (bits - 1)) & 1 == 1 {
            (sum | high) as i64
        } else {
            (sum & !high) as i64
        }
    };
    let wide = bits < 64;
    if value > max || (wide && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        Some(if overflow == Overflow::Sat {
            max
        } else {
            wrapped()
        })
    } else if value < min || (wide && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr)
    {
        Some(if overflow == Overflow::Sat {
            min
        } else {
            wrapped()
        })
    } else {
        None
    }
}

/// The value of the field `ty` at `offset` of `bytes`.
pub fn bitfield_get(bytes: &[u8], ty: BitfieldType, offset: u64) -> i64 {
    if ty.signed {
        get_signed(bytes, offset, ty.bits)
    } else {
        get_unsigned(bytes, offset, ty.bits) as i64
    }
}

/// Applies one BITFIELD SET or INCRBY to `bytes`, grown to hold the field: the value to answer
/// (None when OVERFLOW FAIL refused the write) and whether the field's value changed.
pub fn bitfield_write(
    bytes: &mut [u8],
    ty: BitfieldType,
    offset: u64,
    action: BitfieldAction,
) -> (Option<i64>, bool) {
    let (operand, incr, overflow) = match action {
        BitfieldAction::Get => return (Some(bitfield_get(bytes, ty, offset)), false),
        BitfieldAction::Set { value, overflow } => (value, false, overflow),
        BitfieldAction::IncrBy {
            increment,
            overflow,
        } => (increment, true, overflow),
    };
    let bits = ty.bits;
    // (old, new, answer, overflowed), in the field's own signedness.
    let (old, new, answer, overflowed) = if ty.signed {
        let old = get_signed(bytes, offset, bits);
        let (sum, delta) = if incr { (old, operand) } else { (operand, 0) };
        let fixed = signed_overflow(sum, delta, bits, overflow);
        let new = fixed.unwrap_or(sum.wrapping_add(delta));
        let answer = if incr { new } else { old };
        (old as u64, new as u64, answer, fixed.is_some())
    } else {
        let old = get_unsigned(bytes, offset, bits);
        let (sum, delta) = if incr {
            (old, operand)
        } else {
            (operand as u64, 0)
        };
        let fixed = unsigned_overflow(sum, delta, bits, overflow);
        let new = fixed.unwrap_or(sum.wrapping_add(delta as u64));
        let answer = if incr { new } else { old };
        (old, new, answer as i64, fixed.is_some())
    };
    if overflowed && overflow == Overflow::Fail {
        return (None, false);
    }
    set_bits(bytes, offset, bits, new);
    (Some(answer), old != new)
}

// ----- the data model ------------------------------------------------------------------------

impl Db {
    /// Whether `offset` addresses a bit of a string no longer than the maximum string length
    /// (proto-max-bulk-len), as Redis's getBitOffsetFromArgument requires.
    pub fn bit_offset_in_range(&self, offset: i64) -> bool {
        offset >= 0
            && ((offset as u64) >> 3)
                < self
                    .inner
                    .max_string_len
                    .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `inline` applied to the value of the string at `key` where it is stored, without copying
    /// it, or `fragmented` to a string stored in fragments; None when the key is missing,
    /// WrongType when it is not a string. Counts a keyspace hit or miss, as Redis's lookups for
    /// reading do.
    fn with_string<T>(
        &self,
        key: &[u8],
        inline: impl FnOnce(&[u8]) -> T,
        fragmented: impl FnOnce(&StoredString) -> Result<T>,
    ) -> Result<Option<T>> {
        let mk = self.meta_key(key);
        let read = self.storage().with_pinned(
            CF_META,
            &mk,
            |raw| -> Result<Option<std::result::Result<T, Meta>>> {
                let (kind, expire) = meta::decode_header(raw)?;
                if expire != 0 && expire <= now_ms() {
                    return Ok(None);
                }
                if kind != KeyType::String {
                    return Err(Error::WrongType);
                }
                if fragment::is_fragmented_record(raw) {
                    return Ok(Some(Err(Meta::decode(raw)?)));
                }
                Ok(Some(Ok(inline(&raw[HEADER_LEN..]))))
            },
        )?;
        let value = match read.transpose()?.flatten() {
            None => None,
            Some(Ok(v)) => Some(v),
            Some(Err(m)) => Some(fragmented(&StoredString::from_meta(m)?)?),
        };
        self.count_lookup(value.is_some());
        Ok(value)
    }

    /// Whether `key` exists (read in place).
    fn is_live(&self, key: &[u8]) -> Result<bool> {
        let mk = self.meta_key(key);
        let expire = self.storage().with_pinned(CF_META, &mk, meta::expire_of)?;
        Ok(matches!(expire, Some(e) if e == 0 || e > now_ms()))
    }

    /// The string at `key` for a read-modify-write that needs it at least `len` bytes long. An
    /// inline string that stays within `fragment::THRESHOLD` comes as its stored record (header
    /// and value): the one copy the write edits, grown with zero bytes to `len` and flagged as
    /// modified in place (Redis then reports the `raw` encoding). A longer or fragmented one comes
    /// as a [`FragmentWriter`] (an inline one converted), grown to `len`. Both tell whether the
    /// string is new or grew. The caller holds the key's lock.
    fn string_for_update(&self, key: &[u8], len: u64) -> Result<Update> {
        self.string_for_update_from(self.live_raw(key)?, len)
    }

    /// [`Db::string_for_update`] of the live record `raw` already read (None: a missing key).
    fn string_for_update_from(&self, raw: Option<Vec<u8>>, len: u64) -> Result<Update> {
        let current = match &raw {
            Some(r) if meta::decode_header(r)?.0 != KeyType::String => {
                return Err(Error::WrongType)
            }
            Some(r) if fragment::is_fragmented_record(r) => None,
            Some(r) => Some((r.len() - HEADER_LEN) as u64),
            None => Some(0),
        };
        if let Some(current) = current.filter(|c| len.max(*c) <= fragment::THRESHOLD) {
            let (record, grown) = self.string_record_for_update(raw, len as usize)?;
            return Ok(Update::Inline {
                record,
                grown: grown || current < len,
            });
        }
        let stored = match raw {
            Some(r) => Some(StoredString::from_meta(Meta::decode(&r)?)?),
            None => None,
        };
        let mut writer = FragmentWriter::new(self, stored.as_ref());
        let grown = stored.is_none() || writer.len() < len;
        writer.grow(len);
        Ok(Update::Fragments {
            writer,
            grown,
            expire_ms: stored.map_or(0, |s| s.expire_ms),
        })
    }

    /// The inline record `raw` (None: a new string) grown with zero bytes to at least `len` bytes
    /// of value and flagged as modified in place, and whether it is new.
    fn string_record_for_update(
        &self,
        raw: Option<Vec<u8>>,
        len: usize,
    ) -> Result<(Vec<u8>, bool)> {
        let (mut record, grown) = match raw {
            Some(raw) => (raw, false),
            None => {
                // Zeroed in one allocation: pages only read on their way into the write batch
                // are never touched.
                let size = HEADER_LEN.checked_add(len).ok_or(Error::StringTooLong)?;
                let mut r = vec![0u8; size];
                r[..HEADER_LEN].copy_from_slice(&meta::encode_flagged(KeyType::String, 0, 0, &[]));
                (r, true)
            }
        };
        let want = HEADER_LEN.checked_add(len).ok_or(Error::StringTooLong)?;
        if record.len() < want {
            record.resize(want, 0);
        }
        record[1] |= FLAG_RAW_STRING;
        Ok((record, grown))
    }

    /// Stores a record made by [`Db::string_for_update`] (its TTL unchanged), giving up the
    /// record once the write batch holds its copy.
    fn put_string_record(&self, key: &[u8], record: Vec<u8>) -> Result<()> {
        let mut batch = crate::storage::new_batch();
        self.put_meta_record(&mut batch, key, &record);
        drop(record);
        self.write(batch)
    }

    /// Stores the edits of a [`FragmentWriter`] (the TTL given kept).
    fn put_fragments(&self, key: &[u8], writer: FragmentWriter, expire_ms: u64) -> Result<()> {
        let mut batch = crate::storage::new_batch();
        writer.finish(self, &mut batch, key, FLAG_RAW_STRING, expire_ms);
        self.write(batch)
    }

    /// The bytes of the fragmented string `s` at `key` holding bits `offset..offset + bits`, and
    /// the field's offset within them.
    fn field_bytes(
        &self,
        key: &[u8],
        s: &StoredString,
        offset: u64,
        bits: u8,
    ) -> Result<(Vec<u8>, u64)> {
        let first = offset >> 3;
        let last = (offset + bits as u64 - 1) >> 3;
        Ok((
            self.string_range(key, s, first, last + 1)?,
            offset - first * 8,
        ))
    }

    /// GETBIT: the bit at `offset` of the string at `key` (0 past its end or when it is missing).
    pub fn getbit(&self, key: &[u8], offset: u64) -> Result<u8> {
        Ok(self
            .with_string(
                key,
                |v| bit_at(v, offset),
                |s| {
                    let (b, at) = self.field_bytes(key, s, offset, 1)?;
                    Ok(bit_at(&b, at))
                },
            )?
            .unwrap_or(0))
    }

    /// SETBIT: sets the bit at `offset` of the string at `key` to `on`, growing (or creating) the
    /// string with zero bytes as needed; the TTL is kept. Returns the previous bit and whether the
    /// value changed (Redis signals the write only then). The caller checks the offset with
    /// [`Db::bit_offset_in_range`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// assert_eq!(db.setbit(b"b", 9, true)?, (0, true));
    /// assert_eq!(db.get(b"b")?, Some(vec![0x00, 0x40]));
    /// assert_eq!(db.getbit(b"b", 9)?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn setbit(&self, key: &[u8], offset: u64, on: bool) -> Result<(u8, bool)> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let byte = offset >> 3;
        let mask = 0x80 >> (offset & 7);
        // One lookup: a bit of an inline string that already has the value (a flag set again,
        // the common case of a bitmap of flags) is answered where the record lies, without
        // copying it; otherwise the record is copied there for the edit.
        let seen = self.with_live_record(key, |r| {
            let value = fragment::is_inline_string_record(r).then(|| &r[HEADER_LEN..]);
            match value {
                Some(v) if byte < v.len() as u64 && bit_at(v, offset) == on as u8 => None,
                _ => Some(r.to_vec()),
            }
        })?;
        let raw = match seen {
            Some(None) => return Ok((on as u8, false)),
            Some(Some(record)) => Some(record),
            None => None,
        };
        match self.string_for_update_from(raw, byte + 1)? {
            Update::Inline {
                mut record,
                grown: mut changed,
            } => {
                let value = &mut record[HEADER_LEN..];
                let old = bit_at(value, offset);
                if old != on as u8 {
                    value[byte as usize] ^= mask;
                    changed = true;
                }
                if changed {
                    self.put_string_record(key, record)?;
                }
                Ok((old, changed))
            }
            Update::Fragments {
                mut writer,
                grown: mut changed,
                expire_ms,
            } => {
                let current = writer.read(self, key, byte, 1)?[0];
                let old = bit_at(&[current], offset & 7);
                if old != on as u8 {
                    writer.write(self, key, byte, &[current ^ mask])?;
                    changed = true;
                }
                if changed {
                    self.put_fragments(key, writer, expire_ms)?;
                }
                Ok((old, changed))
            }
        }
    }

    /// BITCOUNT: the set bits of the string at `key` in `range` (all of them without one); 0
    /// for a missing key.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{BitRange, BitUnit};
    /// let db = strata::Db::open(dir.path())?;
    /// db.set(b"s", b"foobar", Default::default())?;
    /// assert_eq!(db.bitcount(b"s", None)?, 26);
    /// let bits = BitRange { start: 5, end: 30, unit: BitUnit::Bit };
    /// assert_eq!(db.bitcount(b"s", Some(bits))?, 17);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bitcount(&self, key: &[u8], range: Option<BitRange>) -> Result<u64> {
        let fragmented = |s: &StoredString| -> Result<u64> {
            let Some((from, to)) = bitcount_bits(s.len(), range) else {
                return Ok(0);
            };
            let mut n = 0;
            self.string_chunks(key, s, from >> 3, (to >> 3) + 1, |at, chunk| {
                if let Chunk::Bytes(b) = chunk {
                    let base = at * 8;
                    n += count_bits(b, from.saturating_sub(base), to - base);
                }
                true
            })?;
            Ok(n)
        };
        Ok(self
            .with_string(key, |v| bitcount(v, range), fragmented)?
            .unwrap_or(0))
    }

    /// BITPOS: the first bit equal to `bit` in `range` of the string at `key` (see
    /// [`BitposRange`]), or -1. A missing key reads as an endless run of clear bits.
    pub fn bitpos(&self, key: &[u8], bit: bool, range: Option<BitposRange>) -> Result<i64> {
        let fragmented = |s: &StoredString| -> Result<i64> {
            let Some((from, to)) = bitpos_bits(s.len(), range) else {
                return Ok(-1);
            };
            let mut found = None;
            self.string_chunks(key, s, from >> 3, (to >> 3) + 1, |at, chunk| {
                let base = at * 8;
                let lo = from.saturating_sub(base);
                found = match chunk {
                    Chunk::Bytes(b) => {
                        let hi = (to - base).min(b.len() as u64 * 8 - 1);
                        find_bit(b, bit, lo, hi).map(|p| base + p)
                    }
                    Chunk::Zeros(_) => (!bit).then_some(base + lo),
                };
                found.is_none()
            })?;
            Ok(found.map_or_else(|| bitpos_miss(bit, range, to), |p| p as i64))
        };
        Ok(self
            .with_string(key, |v| bitpos(v, bit, range), fragmented)?
            .unwrap_or(if bit { -1 } else { 0 }))
    }

    /// BITOP: stores `op` over the strings at `sources` (missing keys read as empty strings) at
    /// `dest`, replacing whatever it held and dropping its TTL; an empty result deletes `dest`
    /// instead. WrongType if a source is not a string (nothing is written).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::BitOp;
    /// let db = strata::Db::open(dir.path())?;
    /// db.set(b"a", b"\x0f\xf0", Default::default())?;
    /// db.set(b"b", b"\xff", Default::default())?;
    /// assert_eq!(db.bitop(BitOp::And, b"d", &[&b"a"[..], &b"b"[..]])?.len, 2);
    /// assert_eq!(db.get(b"d")?, Some(vec![0x0f, 0x00]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bitop(&self, op: BitOp, dest: &[u8], sources: &[&[u8]]) -> Result<BitopOutcome> {
        let keys = std::iter::once(dest).chain(sources.iter().copied());
        let _g = self.inner.locks.lock(keys.map(|k| (self.index, k)));
        // Each source as (bytes, where its value starts): a stored record, or a fragmented
        // string's value put together.
        let mut records = Vec::with_capacity(sources.len());
        for k in sources {
            let raw = self.live_raw(k)?;
            self.count_lookup(raw.is_some());
            records.push(match raw {
                Some(r) if meta::decode_header(&r)?.0 != KeyType::String => {
                    return Err(Error::WrongType)
                }
                Some(r) if fragment::is_fragmented_record(&r) => {
                    (self.string_body(k, Meta::decode(&r)?)?, 0)
                }
                Some(r) => (r, HEADER_LEN),
                None => (Vec::new(), 0),
            });
        }
        let values: Vec<&[u8]> = records.iter().map(|(r, at)| &r[*at..]).collect();
        let mut record = meta::encode_flagged(KeyType::String, FLAG_RAW_STRING, 0, &[]);
        bitop_into(op, &values, &mut record);
        drop(values);
        drop(records);
        let len = (record.len() - HEADER_LEN) as u64;
        if len > fragment::THRESHOLD {
            let mut batch = crate::storage::new_batch();
            self.put_string_value(&mut batch, dest, &record[HEADER_LEN..], FLAG_RAW_STRING, 0);
            drop(record);
            self.write(batch)?;
            return Ok(BitopOutcome {
                len,
                deleted: false,
            });
        }
        if len > 0 {
            self.put_string_record(dest, record)?;
            return Ok(BitopOutcome {
                len,
                deleted: false,
            });
        }
        let deleted = self.is_live(dest)?;
        if deleted {
            let mut batch = crate::storage::new_batch();
            self.delete_meta(&mut batch, self.phys(), dest);
            self.write(batch)?;
        }
        Ok(BitopOutcome { len: 0, deleted })
    }

    /// BITFIELD (and BITFIELD_RO): runs `ops` in order on the string at `key`. With a write
    /// among them, the string is first created or grown with zero bytes to hold every field
    /// written (even one OVERFLOW FAIL then refuses), and stored once at the end if anything
    /// changed, its TTL kept; with only reads nothing is written. The caller checks the offsets
    /// with [`Db::bit_offset_in_range`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{BitfieldAction, BitfieldOp, BitfieldType, Overflow};
    /// let db = strata::Db::open(dir.path())?;
    /// let u8_ = BitfieldType::new(false, 8).unwrap();
    /// let incr = |n| BitfieldOp { ty: u8_, offset: 0, action: BitfieldAction::IncrBy { increment: n, overflow: Overflow::Sat } };
    /// assert_eq!(db.bitfield(b"f", &[incr(200), incr(100)])?.values, [Some(200), Some(255)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bitfield(&self, key: &[u8], ops: &[BitfieldOp]) -> Result<BitfieldOutcome> {
        let Some(last_bit) = ops.iter().filter_map(BitfieldOp::last_written_bit).max() else {
            let inline = |v: &[u8]| {
                ops.iter()
                    .map(|op| Some(bitfield_get(v, op.ty, op.offset)))
                    .collect::<Vec<Option<i64>>>()
            };
            let fragmented = |s: &StoredString| -> Result<Vec<Option<i64>>> {
                ops.iter()
                    .map(|op| {
                        let (b, at) = self.field_bytes(key, s, op.offset, op.ty.bits)?;
                        Ok(Some(bitfield_get(&b, op.ty, at)))
                    })
                    .collect()
            };
            let values = match self.with_string(key, inline, fragmented)? {
                Some(values) => values,
                None => vec![Some(0); ops.len()],
            };
            return Ok(BitfieldOutcome {
                values,
                changed: false,
            });
        };
        let _g = self.inner.locks.lock_one(self.index, key);
        let update = self.string_for_update(key, (last_bit >> 3) + 1)?;
        let grown = match &update {
            Update::Inline { grown, .. } | Update::Fragments { grown, .. } => *grown,
        };
        let mut values = Vec::with_capacity(ops.len());
        let (mut changes, mut modified) = (0, grown);
        let mut count = |op: &BitfieldOp, answer: Option<i64>, changed: bool| {
            if op.action != BitfieldAction::Get && answer.is_some() && (grown || changed) {
                changes += 1;
            }
            modified |= changed;
            values.push(answer);
        };
        match update {
            Update::Inline { mut record, .. } => {
                let value = &mut record[HEADER_LEN..];
                for op in ops {
                    let (answer, changed) = bitfield_write(value, op.ty, op.offset, op.action);
                    count(op, answer, changed);
                }
                if modified {
                    self.put_string_record(key, record)?;
                }
            }
            Update::Fragments {
                mut writer,
                expire_ms,
                ..
            } => {
                for op in ops {
                    // Only the bytes holding the field are read and, if it changes, written.
                    let first = op.offset >> 3;
                    let last = (op.offset + op.ty.bits as u64 - 1) >> 3;
                    let mut field = writer.read(self, key, first, last - first + 1)?;
                    let at = op.offset - first * 8;
                    let (answer, changed) = bitfield_write(&mut field, op.ty, at, op.action);
                    if changed {
                        writer.write(self, key, first, &field)?;
                    }
                    count(op, answer, changed);
                }
                if modified {
                    self.put_fragments(key, writer, expire_ms)?;
                }
            }
        }
        Ok(BitfieldOutcome {
            values,
            changed: changes > 0,
        })
    }
}

/// A string ready for a read-modify-write ([`Db::string_for_update`]).
enum Update {
    /// Its whole record (header and value).
    Inline {
        /// The record.
        record: Vec<u8>,
        /// Whether the string is new or grew.
        grown: bool,
    },
    /// In fragments.
    Fragments {
        /// Its staged edits.
        writer: FragmentWriter,
        /// Whether the string is new or grew.
        grown: bool,
        /// Its TTL, kept.
        expire_ms: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_zero_is_the_high_bit_of_the_first_byte() {
        assert_eq!(bit_at(b"\x80", 0), 1);
        assert_eq!(bit_at(b"\x80", 1), 0);
        assert_eq!(bit_at(b"\x00\x01", 15), 1);
        assert_eq!(bit_at(b"\x00\x01", 16), 0);
        assert_eq!(bit_at(b"", u64::MAX), 0);
    }

    /// A small deterministic generator (xorshift), so the tests need no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            // Runs of 0x00 and 0xFF as well as noise, so the word-skipping paths are exercised.
            let style = self.below(3);
            (0..n)
                .map(|_| match style {
                    0 => self.next() as u8,
                    1 if self.below(50) == 0 => self.next() as u8,
                    1 => 0,
                    _ if self.below(50) == 0 => self.next() as u8,
                    _ => 0xFF,
                })
                .collect()
        }
    }

    fn naive_count(bytes: &[u8], from: u64, to: u64) -> u64 {
        (from..=to).map(|i| bit_at(bytes, i) as u64).sum()
    }

    fn naive_find(bytes: &[u8], bit: bool, from: u64, to: u64) -> Option<u64> {
        (from..=to).find(|&i| bit_at(bytes, i) == bit as u8)
    }

    #[test]
    fn popcount_counts_every_set_bit_whatever_the_alignment() {
        let mut rng = Rng(7);
        for n in 0..100 {
            let b = rng.bytes(n);
            let want: u64 = b.iter().map(|x| x.count_ones() as u64).sum();
            assert_eq!(popcount(&b), want);
            if n > 3 {
                assert_eq!(popcount(&b[3..]), want - popcount(&b[..3]));
            }
        }
    }

    #[test]
    fn count_bits_of_ranges_not_on_byte_boundaries() {
        assert_eq!(count_bits(b"\xff\xff", 3, 12), 10);
        assert_eq!(count_bits(b"\xff", 3, 3), 1);
        assert_eq!(count_bits(b"\x10", 3, 3), 1);
        assert_eq!(count_bits(b"\xff", 5, 4), 0);
        assert_eq!(count_bits(b"\xff", 6, 100), 2);
        assert_eq!(count_bits(b"", 0, 100), 0);
        let mut rng = Rng(11);
        for _ in 0..2000 {
            let n = rng.below(40) as usize;
            let b = rng.bytes(n);
            let total = b.len() as u64 * 8 + 10;
            let (x, y) = (rng.below(total), rng.below(total));
            assert_eq!(count_bits(&b, x, y), naive_count(&b, x, y), "{b:?} {x} {y}");
        }
    }

    #[test]
    fn find_bit_matches_a_bit_by_bit_search() {
        let mut rng = Rng(3);
        for _ in 0..3000 {
            let n = rng.below(60) as usize;
            let b = rng.bytes(n);
            let total = b.len() as u64 * 8 + 10;
            let (x, y) = (rng.below(total), rng.below(total));
            for bit in [false, true] {
                assert_eq!(
                    find_bit(&b, bit, x, y),
                    naive_find(&b, bit, x, y),
                    "{b:?} {bit} {x} {y}"
                );
            }
        }
    }

    fn byte_range(start: i64, end: i64) -> Option<BitRange> {
        Some(BitRange {
            start,
            end,
            unit: BitUnit::Byte,
        })
    }

    fn bit_range(start: i64, end: i64) -> Option<BitRange> {
        Some(BitRange {
            start,
            end,
            unit: BitUnit::Bit,
        })
    }

    #[test]
    fn bitcount_follows_redis_range_rules() {
        let s = b"foobar";
        assert_eq!(bitcount(s, None), 26);
        assert_eq!(bitcount(s, byte_range(0, 0)), 4);
        assert_eq!(bitcount(s, byte_range(1, 1)), 6);
        assert_eq!(bitcount(s, byte_range(1, 1)), 6);
        assert_eq!(bitcount(s, bit_range(5, 30)), 17);
        assert_eq!(bitcount(s, byte_range(-2, -1)), bitcount(b"ar", None));
        assert_eq!(bitcount(s, byte_range(-1, -2)), 0);
        assert_eq!(bitcount(s, byte_range(-100, 100)), 26);
        assert_eq!(bitcount(s, byte_range(4, 2)), 0);
        assert_eq!(bitcount(s, byte_range(10, 20)), 0);
        assert_eq!(
            bitcount(s, bit_range(-3, -1)),
            bitcount(b"\x72", bit_range(5, 7))
        );
        assert_eq!(bitcount(b"", bit_range(0, -1)), 0);
    }

    #[test]
    fn bitcount_bit_ranges_agree_with_counting_each_bit() {
        let mut rng = Rng(5);
        for _ in 0..3000 {
            let n = rng.below(20) as usize;
            let b = rng.bytes(n);
            let total = b.len() as i64 * 8;
            let (s, e) = (
                rng.below(2 * total as u64 + 20) as i64 - total - 10,
                rng.below(2 * total as u64 + 20) as i64 - total - 10,
            );
            let want = if s < 0 && e < 0 && s > e {
                0
            } else {
                let (s2, e2) = clamp(s, e, total);
                if s2 > e2 {
                    0
                } else {
                    naive_count(&b, s2 as u64, e2 as u64)
                }
            };
            assert_eq!(bitcount(&b, bit_range(s, e)), want, "{b:?} {s} {e}");
        }
    }

    fn pos(start: i64, end: Option<i64>, unit: BitUnit) -> Option<BitposRange> {
        Some(BitposRange { start, end, unit })
    }

    #[test]
    fn bitpos_without_an_end_finds_a_clear_bit_past_the_string() {
        assert_eq!(bitpos(b"\xff\xff", false, None), 16);
        assert_eq!(bitpos(b"\xff\xff", false, pos(1, None, BitUnit::Byte)), 16);
        assert_eq!(
            bitpos(b"\xff\xff", false, pos(1, Some(-1), BitUnit::Byte)),
            -1
        );
        assert_eq!(bitpos(b"\xff\xff", false, pos(3, None, BitUnit::Bit)), 16);
        assert_eq!(
            bitpos(b"\xff\xff", false, pos(3, Some(15), BitUnit::Bit)),
            -1
        );
        assert_eq!(bitpos(b"\x00\x00", true, None), -1);
        assert_eq!(bitpos(b"", false, None), -1);
        assert_eq!(bitpos(b"", true, None), -1);
        assert_eq!(bitpos(b"\xff\xf0", false, None), 12);
    }

    #[test]
    fn bitpos_with_negative_and_inverted_ranges() {
        let s = b"\x00\xff\xf0";
        assert_eq!(bitpos(s, true, pos(-2, None, BitUnit::Byte)), 8);
        assert_eq!(bitpos(s, false, pos(-1, Some(-1), BitUnit::Byte)), 20);
        assert_eq!(bitpos(s, true, pos(2, Some(1), BitUnit::Byte)), -1);
        assert_eq!(bitpos(s, false, pos(2, Some(1), BitUnit::Byte)), -1);
        assert_eq!(bitpos(s, true, pos(-1, Some(-2), BitUnit::Byte)), -1);
        // Both negative past the start clamp to byte 0 (BITCOUNT would answer 0).
        assert_eq!(bitpos(s, false, pos(-100, Some(-200), BitUnit::Byte)), 0);
        assert_eq!(bitpos(s, true, pos(-100, Some(-200), BitUnit::Byte)), -1);
        assert_eq!(bitpos(s, true, pos(-20, Some(-5), BitUnit::Bit)), 8);
        assert_eq!(bitpos(s, true, pos(7, Some(8), BitUnit::Bit)), 8);
        assert_eq!(bitpos(s, false, pos(9, Some(15), BitUnit::Bit)), -1);
        assert_eq!(bitpos(s, true, pos(100, None, BitUnit::Bit)), -1);
        assert_eq!(bitpos(s, false, pos(100, None, BitUnit::Bit)), -1);
    }

    #[test]
    fn bitop_pads_shorter_sources_with_zeros() {
        let run = |op, srcs: &[&[u8]]| {
            let mut out = vec![9];
            bitop_into(op, srcs, &mut out);
            out[1..].to_vec()
        };
        assert_eq!(run(BitOp::And, &[b"\xff\x0f", b"\x3c"]), b"\x3c\x00");
        assert_eq!(run(BitOp::Or, &[b"\x01", b"", b"\x00\x02"]), b"\x01\x02");
        assert_eq!(run(BitOp::Xor, &[b"\xff\xff", b"\x0f"]), b"\xf0\xff");
        assert_eq!(run(BitOp::Not, &[b"\x0f\x00"]), b"\xf0\xff");
        assert_eq!(run(BitOp::And, &[b"", b""]), b"");
        assert_eq!(run(BitOp::And, &[]), b"");
    }

    #[test]
    fn bitfields_round_trip_at_any_offset() {
        let mut rng = Rng(9);
        for _ in 0..2000 {
            let bits = 1 + rng.below(64) as u8;
            let offset = rng.below(40);
            let mut b = rng.bytes(14);
            let before = b.clone();
            let v = rng.next();
            set_bits(&mut b, offset, bits, v);
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            assert_eq!(get_unsigned(&b, offset, bits), v & mask);
            let signed = get_signed(&b, offset, bits);
            assert_eq!(signed as u64 & mask, v & mask);
            assert!(
                bits == 64 || (signed >= -(1i64 << (bits - 1)) && signed < (1i64 << (bits - 1)))
            );
            for i in 0..b.len() as u64 * 8 {
                if i < offset || i >= offset + bits as u64 {
                    assert_eq!(
                        bit_at(&b, i),
                        bit_at(&before, i),
                        "bit {i} outside the field"
                    );
                }
            }
        }
        assert_eq!(get_unsigned(b"\xff", 4, 8), 0xf0);
        assert_eq!(get_signed(b"\x80", 0, 1), -1);
    }

    /// What SET or INCRBY of a field should produce, computed in 128 bits: the stored value or
    /// None under FAIL. Unsigned SET of a negative value saturates at the maximum, as in Redis.
    fn model(ty: BitfieldType, old: i128, operand: i64, incr: bool, ow: Overflow) -> Option<i128> {
        let bits = ty.bits() as u32;
        let (min, max) = if ty.is_signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        let sum = if incr {
            old + operand as i128
        } else {
            operand as i128
        };
        if (min..=max).contains(&sum) {
            return Some(sum);
        }
        match ow {
            Overflow::Fail => None,
            Overflow::Sat if !ty.is_signed() && !incr && operand < 0 => Some(max),
            // Redis computes `max - value` in 64 bits first: for a SET value so negative that it
            // overflows, it sees an overflow upwards and saturates at the maximum too.
            Overflow::Sat
                if ty.is_signed() && !incr && max - operand as i128 > i64::MAX as i128 =>
            {
                Some(max)
            }
            Overflow::Sat => Some(if sum > max { max } else { min }),
            Overflow::Wrap => {
                let m = sum.rem_euclid(1i128 << bits);
                Some(if ty.is_signed() && m > max {
                    m - (1i128 << bits)
                } else {
                    m
                })
            }
        }
    }

    #[test]
    fn every_width_and_overflow_mode_at_the_boundaries() {
        let mut checked = 0;
        for signed in [true, false] {
            for bits in 1..=(if signed { 64u8 } else { 63 }) {
                let ty = BitfieldType::new(signed, bits).unwrap();
                let b = bits as u32;
                let (min, max) = if signed {
                    (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
                } else {
                    (0, (1i128 << b) - 1)
                };
                let olds = [min, min + 1, 0, max - 1, max, (min + max) / 2];
                let fit = |v: i128| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                let operands = [
                    0,
                    1,
                    -1,
                    2,
                    -2,
                    fit(max),
                    fit(max + 1),
                    fit(min),
                    fit(min - 1),
                    fit(max - min),
                    fit(min - max),
                    i64::MAX,
                    i64::MIN,
                    i64::MAX - 1,
                    i64::MIN + 1,
                ];
                for ow in [Overflow::Wrap, Overflow::Sat, Overflow::Fail] {
                    for &old in &olds {
                        if !(min..=max).contains(&old) {
                            continue;
                        }
                        for &operand in &operands {
                            for incr in [true, false] {
                                let mut bytes = vec![0xA5u8; 10];
                                set_bits(&mut bytes, 3, bits, old as u64);
                                let before = bytes.clone();
                                let action = if incr {
                                    BitfieldAction::IncrBy {
                                        increment: operand,
                                        overflow: ow,
                                    }
                                } else {
                                    BitfieldAction::Set {
                                        value: operand,
                                        overflow: ow,
                                    }
                                };
                                let (answer, changed) = bitfield_write(&mut bytes, ty, 3, action);
                                let stored = bitfield_get(&bytes, ty, 3) as i128;
                                let ctx = format!(
                                    "{ty:?} {ow:?} old {old} operand {operand} incr {incr}"
                                );
                                match model(ty, old, operand, incr, ow) {
                                    None => {
                                        assert_eq!(answer, None, "{ctx}");
                                        assert_eq!(bytes, before, "{ctx}");
                                    }
                                    Some(new) => {
                                        assert_eq!(stored, new, "{ctx}");
                                        let want = if incr { new } else { old };
                                        assert_eq!(answer.map(i128::from), Some(want), "{ctx}");
                                        assert_eq!(changed, new != old, "{ctx}");
                                    }
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 30_000, "{checked}");
    }

    #[test]
    fn bitfield_types_allow_i1_to_i64_and_u1_to_u63() {
        assert!(BitfieldType::new(true, 64).is_some());
        assert!(BitfieldType::new(false, 64).is_none());
        assert!(BitfieldType::new(false, 63).is_some());
        assert!(BitfieldType::new(true, 0).is_none());
        assert!(BitfieldType::new(true, 65).is_none());
    }

    #[test]
    fn db_bit_commands_edit_the_string_and_keep_its_ttl() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        let at = now_ms() + 100_000;
        db.set(
            b"k",
            b"\x0f",
            crate::SetOptions {
                expiry: crate::Expiry::At(at),
                ..Default::default()
            },
        )?;
        let u4 = BitfieldType::new(false, 4).ok_or(Error::StringTooLong)?;
        let set = BitfieldOp {
            ty: u4,
            offset: 12,
            action: BitfieldAction::Set {
                value: 9,
                overflow: Overflow::Wrap,
            },
        };
        let out = db.bitfield(b"k", &[set])?;
        assert_eq!(out.values, [Some(0)]);
        assert!(out.changed);
        assert_eq!(db.get(b"k")?, Some(vec![0x0f, 0x09]));
        assert_eq!(db.ttl(b"k")?, crate::Ttl::ExpiresAt(at));
        assert_eq!(db.bitcount(b"k", None)?, 6);
        assert_eq!(db.bitpos(b"k", true, None)?, 4);
        assert_eq!(db.bitpos(b"nokey", false, None)?, 0);
        assert_eq!(db.setbit(b"k", 0, true)?, (0, true));
        assert_eq!(db.setbit(b"k", 0, true)?, (1, false));
        assert_eq!(db.ttl(b"k")?, crate::Ttl::ExpiresAt(at));
        assert_eq!(db.bitop(BitOp::Not, b"n", &[&b"k"[..]])?.len, 2);
        assert_eq!(db.get(b"n")?, Some(vec![0x70, 0xf6]));
        let out = db.bitop(BitOp::And, b"n", &[&b"nokey"[..]])?;
        assert_eq!((out.len, out.deleted), (0, true));
        assert!(!db.exists(b"n")?);
        db.rpush(b"l", &[&b"x"[..]])?;
        assert!(matches!(db.bitcount(b"l", None), Err(Error::WrongType)));
        assert!(matches!(
            db.bitop(BitOp::Or, b"d", &[&b"k"[..], &b"l"[..]]),
            Err(Error::WrongType)
        ));
        assert!(!db.exists(b"d")?);
        // Only reads: nothing is created.
        let get = BitfieldOp {
            ty: u4,
            offset: 100,
            action: BitfieldAction::Get,
        };
        assert_eq!(db.bitfield(b"new", &[get])?.values, [Some(0)]);
        assert!(!db.exists(b"new")?);
        // A refused write still grows the string, as in Redis.
        let fail = BitfieldOp {
            ty: u4,
            offset: 20,
            action: BitfieldAction::IncrBy {
                increment: 100,
                overflow: Overflow::Fail,
            },
        };
        let out = db.bitfield(b"new", &[fail])?;
        assert_eq!((out.values, out.changed), (vec![None], false));
        assert_eq!(db.get(b"new")?, Some(vec![0, 0, 0]));
        Ok(())
    }

    #[test]
    fn setbit_of_a_bit_that_already_has_its_value_changes_nothing_but_a_clear_bit_past_the_end_grows(
    ) -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io(e.to_string()))?;
        let db = Db::open(dir.path())?;
        db.set(b"k", b"\x80", Default::default())?;
        // Set again, cleared again: answered without a write, the value untouched.
        assert_eq!(db.setbit(b"k", 0, true)?, (1, false));
        assert_eq!(db.setbit(b"k", 1, false)?, (0, false));
        assert_eq!(db.get(b"k")?, Some(vec![0x80]));
        // A clear bit past the end reads as 0 but still grows the string, as in Redis.
        assert_eq!(db.setbit(b"k", 15, false)?, (0, true));
        assert_eq!(db.get(b"k")?, Some(vec![0x80, 0x00]));
        // A missing key is created even by clearing a bit.
        assert_eq!(db.setbit(b"new", 3, false)?, (0, true));
        assert_eq!(db.get(b"new")?, Some(vec![0x00]));
        // Another type is refused, set or clear, before any bit is compared.
        db.rpush(b"l", &[&b"x"[..]])?;
        assert!(matches!(db.setbit(b"l", 0, false), Err(Error::WrongType)));
        assert!(matches!(db.setbit(b"l", 0, true), Err(Error::WrongType)));
        // A fragmented bitmap: the same answers.
        let far = 8 * (fragment::THRESHOLD + 10);
        assert_eq!(db.setbit(b"big", far, true)?, (0, true));
        assert_eq!(db.setbit(b"big", far, true)?, (1, false));
        assert_eq!(db.setbit(b"big", far - 1, false)?, (0, false));
        assert_eq!(db.bitcount(b"big", None)?, 1);
        // In a transaction's scope the bit written before is the one compared.
        let (inside, committed) = db.atomically(|| -> Result<_> {
            Ok((db.setbit(b"t", 5, true)?, db.setbit(b"t", 5, true)?))
        });
        committed?;
        assert_eq!(inside?, ((0, true), (1, false)));
        assert_eq!(db.get(b"t")?, Some(vec![0x04]));
        Ok(())
    }
}
