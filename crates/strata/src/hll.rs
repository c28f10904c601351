//! HyperLogLog with Redis 7.0's exact representation (`hyperloglog.c`): the pure algorithm on a
//! string value's bytes, no storage. An HLL is an ordinary string:
//!
//! ```text
//! [ 'H' 'Y' 'L' 'L' ][ encoding u8: 0 dense, 1 sparse ][ 3 unused bytes ]
//! [ cached cardinality: u64 little-endian; bit 7 of its last byte set = not valid ][ registers ]
//! ```
//!
//! 16384 registers (P = 14) of 6 bits. **Dense**: 12288 bytes, register `i` at bit `6*i` counted
//! from the least significant bit of each byte (so a value may straddle two bytes). **Sparse**: a
//! run-length code of opcodes — `00xxxxxx` ZERO (1..64 zero registers), `01xxxxxx yyyyyyyy` XZERO
//! (1..16384 zero registers), `1vvvvvxx` VAL (1..4 registers of value 1..32). A new HLL is sparse;
//! it becomes dense when a register needs a value above 32 or when the sparse form would grow past
//! `hll-sparse-max-bytes`. Elements are hashed with MurmurHash64A (seed `0xadc83b19`); the
//! cardinality is Ertl's estimator with Redis's tau/sigma.
//!
//! A sparse body is valid when its opcodes cover exactly the 16384 registers; an opcode that
//! would run past them makes it corrupt, as in Redis 7.0.15 with the fix for CVE-2025-32023
//! (which Redis's 7.0 security releases carry).
//!
//! Every operation reproduces Redis's bytes, including how it edits a sparse value in place
//! (opcode splits, the merge of adjacent VAL opcodes, promotion points), so a value moved
//! between Strata and Redis with GET/SET counts the same and evolves the same. Malformed input is
//! refused with [`HllError`], never a panic.

/// Bytes of the header.
pub const HEADER_LEN: usize = 16;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Length of a dense HLL (header included).
pub const DENSE_LEN: usize = HEADER_LEN + (REGISTERS * BITS).div_ceil(8);
/// Redis's default `hll-sparse-max-bytes`.
pub const DEFAULT_SPARSE_MAX_BYTES: usize = 3000;

const P: usize = 14;
const Q: usize = 64 - P;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
/// 0.5 / ln 2 (Redis writes 0.721347520444481703680, the same double).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
const SEED: u32 = 0xadc8_3b19;

/// Why a value cannot be used as a HyperLogLog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HllError {
    /// The string is not a HyperLogLog at all (too short, wrong magic, unknown encoding, dense of
    /// the wrong length): Redis's `WRONGTYPE Key is not a valid HyperLogLog string value.`
    NotHll,
    /// The header is right but the sparse registers don't add up: Redis's
    /// `INVALIDOBJ Corrupted HLL object detected`.
    Corrupt,
}

/// An HLL's representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// 16384 packed 6-bit registers.
    Dense,
    /// Run-length opcodes.
    Sparse,
}

impl Encoding {
    /// The name PFDEBUG ENCODING answers.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// Checks that `v` is a HyperLogLog as Redis's `isHLLObjectOrReply` does (magic, encoding, dense
/// length; the sparse body is checked only when it is used).
pub fn validate(v: &[u8]) -> Result<Encoding, HllError> {
    if v.len() < HEADER_LEN || &v[..4] != b"HYLL" {
        return Err(HllError::NotHll);
    }
    match v[4] {
        DENSE if v.len() == DENSE_LEN => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(HllError::NotHll),
    }
}

/// A new, empty HLL as Redis creates it: sparse, one XZERO opcode, cached cardinality 0 (valid).
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + 2);
    v.extend_from_slice(b"HYLL");
    v.extend_from_slice(&[SPARSE, 0, 0, 0]);
    v.extend_from_slice(&[0; 8]);
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut v, n);
        left -= n;
    }
    v
}

/// MurmurHash2, 64-bit version (MurmurHash64A), endian-neutral as Redis modified it.
pub fn murmur64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= u64::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the length of its `000...1` pattern (1..=51), as
/// Redis's `hllPatLen`.
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// The cached cardinality, when the cache is valid.
pub fn cached(v: &[u8]) -> Option<u64> {
    let card: [u8; 8] = v.get(8..16)?.try_into().ok()?;
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

/// Stores `card` as the cached cardinality (valid).
pub fn set_cached(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality not valid.
pub fn invalidate_cache(v: &mut [u8]) {
    v[15] |= 0x80;
}

// ----- dense registers -----

/// Register `i` of dense registers `r` (a byte past the end reads as 0, as the string's
/// terminating zero does in Redis).
#[inline]
fn dense_get(r: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(r[byte]);
    let b1 = u16::from(r.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) as u8) & REGISTER_MAX
}

#[inline]
fn dense_put(r: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u16::from(val & REGISTER_MAX);
    let max = u16::from(REGISTER_MAX);
    r[byte] &= !((max << fb) as u8);
    r[byte] |= (v << fb) as u8;
    if let Some(next) = r.get_mut(byte + 1) {
        *next &= !((max >> (8 - fb)) as u8);
        *next |= (v >> (8 - fb)) as u8;
    }
}

/// Raises dense register `i` to `count`; whether it changed (`hllDenseSet`).
#[inline]
fn dense_set(r: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(r, i) {
        dense_put(r, i, count);
        true
    } else {
        false
    }
}

// ----- sparse opcodes -----

#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}
#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}
#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}
#[inline]
fn zero_len(b: u8) -> usize {
    usize::from(b & 0x3f) + 1
}
#[inline]
fn xzero_len(b0: u8, b1: u8) -> usize {
    ((usize::from(b0 & 0x3f) << 8) | usize::from(b1)) + 1
}
#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}
#[inline]
fn val_len(b: u8) -> usize {
    usize::from(b & 0x3) + 1
}
#[inline]
fn val_op(val: u8, len: usize) -> u8 {
    ((val - 1) << 2 | (len as u8 - 1)) | 0x80
}
#[inline]
fn zero_op(len: usize) -> u8 {
    (len - 1) as u8
}
fn xzero_ops(len: usize) -> [u8; 2] {
    let l = len - 1;
    [((l >> 8) as u8) | 0x40, (l & 0xff) as u8]
}
fn push_xzero(v: &mut Vec<u8>, len: usize) {
    v.extend_from_slice(&xzero_ops(len));
}

/// One decoded sparse opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    /// `n` zero registers (ZERO or XZERO).
    Zero {
        /// How many.
        len: usize,
        /// Whether it was the two-byte XZERO.
        long: bool,
    },
    /// `len` registers of value `value`.
    Val {
        /// The registers' value (1..=32).
        value: u8,
        /// How many (1..=4).
        len: usize,
    },
}

impl Opcode {
    /// How many registers it covers.
    pub fn span(self) -> usize {
        match self {
            Opcode::Zero { len, .. } | Opcode::Val { len, .. } => len,
        }
    }
}

/// The opcodes of a sparse body (after the header); an XZERO cut short by the end reads its
/// missing byte as 0, as Redis does.
pub fn opcodes(body: &[u8]) -> impl Iterator<Item = Opcode> + '_ {
    let mut p = 0;
    std::iter::from_fn(move || {
        let b = *body.get(p)?;
        Some(if is_zero(b) {
            p += 1;
            Opcode::Zero {
                len: zero_len(b),
                long: false,
            }
        } else if is_xzero(b) {
            let len = xzero_len(b, body.get(p + 1).copied().unwrap_or(0));
            p += 2;
            Opcode::Zero { len, long: true }
        } else {
            p += 1;
            Opcode::Val {
                value: val_value(b),
                len: val_len(b),
            }
        })
    })
}

/// PFDEBUG DECODE's text for a sparse HLL: `z:N`, `Z:N` and `v:VALUE,LEN` separated by spaces.
pub fn decode_sparse(v: &[u8]) -> String {
    let mut out = String::new();
    for op in opcodes(&v[HEADER_LEN.min(v.len())..]) {
        if !out.is_empty() {
            out.push(' ');
        }
        match op {
            Opcode::Zero { len, long: false } => out.push_str(&format!("z:{len}")),
            Opcode::Zero { len, long: true } => out.push_str(&format!("Z:{len}")),
            Opcode::Val { value, len } => out.push_str(&format!("v:{value},{len}")),
        }
    }
    out
}

/// Converts a sparse HLL to dense in place (a no-op for a dense one), keeping the header (magic,
/// unused bytes and cached cardinality) as Redis's `hllSparseToDense` does. A sparse body that
/// does not cover exactly the 16384 registers is [`HllError::Corrupt`] (and `v` is unchanged).
pub fn to_dense(v: &mut Vec<u8>) -> Result<(), HllError> {
    if v[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..HEADER_LEN].copy_from_slice(&v[..HEADER_LEN]);
    dense[4] = DENSE;
    let regs = &mut dense[HEADER_LEN..];
    let mut idx = 0usize;
    for op in opcodes(&v[HEADER_LEN..]) {
        let len = op.span();
        if idx + len > REGISTERS {
            return Err(HllError::Corrupt);
        }
        if let Opcode::Val { value, .. } = op {
            for i in idx..idx + len {
                dense_put(regs, i, value);
            }
        }
        idx += len;
    }
    if idx != REGISTERS {
        return Err(HllError::Corrupt);
    }
    *v = dense;
    Ok(())
}

/// Raises register `index` of the HLL `v` to `count` when it is lower, as Redis's
/// `hllSparseSet` (sparse) or `hllDenseSet` (dense): a sparse value is edited in place the way
/// Redis edits it and promoted to dense when `count` exceeds 32 or the edit would make it longer
/// than `sparse_max` bytes. Whether the register changed; [`HllError::Corrupt`] when the sparse
/// opcodes do not reach `index` or cannot be promoted.
pub fn set_register(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, HllError> {
    if count == 0 {
        return Ok(false);
    }
    if v[4] == DENSE {
        return Ok(dense_set(&mut v[HEADER_LEN..], index, count));
    }
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Work as Redis does on its string buffer: room for the longest split, and the terminating
    // zero byte at `end` (an XZERO cut short by the end reads it).
    let mut end = v.len();
    v.resize(end + 8, 0);
    let result = sparse_set_in(v, &mut end, index, count, sparse_max);
    v.truncate(end);
    match result {
        SparseSet::Done(changed) => Ok(changed),
        SparseSet::Promote => promote(v, index, count),
        SparseSet::Corrupt => Err(HllError::Corrupt),
    }
}

enum SparseSet {
    Done(bool),
    Promote,
    Corrupt,
}

fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    to_dense(v)?;
    // A register that forced the promotion is lower than `count` (Redis asserts it).
    Ok(dense_set(&mut v[HEADER_LEN..], index, count))
}

/// `hllSparseSet` on a buffer holding the value in `b[..*end]` with slack after it.
fn sparse_set_in(
    b: &mut [u8],
    end: &mut usize,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> SparseSet {
    // Step 1: find the opcode covering `index`.
    let sparse = HEADER_LEN;
    let mut p = sparse;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    while p < *end {
        let mut oplen = 1;
        if is_zero(b[p]) {
            span = zero_len(b[p]);
        } else if is_val(b[p]) {
            span = val_len(b[p]);
        } else {
            span = xzero_len(b[p], b[p + 1]);
            oplen = 2;
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= *end {
        return SparseSet::Corrupt;
    }
    let next = if is_xzero(b[p]) { p + 2 } else { p + 1 };
    let next = (next < *end).then_some(next);
    let op = b[p];
    let (zero, xzero, runlen) = if is_zero(op) {
        (true, false, zero_len(op))
    } else if is_xzero(op) {
        (false, true, xzero_len(op, b[p + 1]))
    } else {
        (false, false, val_len(op))
    };

    // Step 2: the trivial cases.
    let mut updated = false;
    if !zero && !xzero {
        if val_value(op) >= count {
            return SparseSet::Done(false);
        }
        if runlen == 1 {
            b[p] = val_op(count, 1);
            updated = true;
        }
    }
    if !updated && zero && runlen == 1 {
        b[p] = val_op(count, 1);
        updated = true;
    }

    if !updated {
        // General case: split the opcode into up to three (XZERO-VAL-XZERO at most 5 bytes).
        let mut seq = [0u8; 5];
        let mut n = 0;
        let last = first + span - 1;
        if zero || xzero {
            if index != first {
                push_zeros(&mut seq, &mut n, index - first);
            }
            seq[n] = val_op(count, 1);
            n += 1;
            if index != last {
                push_zeros(&mut seq, &mut n, last - index);
            }
        } else {
            let curval = val_value(op);
            if index != first {
                seq[n] = val_op(curval, index - first);
                n += 1;
            }
            seq[n] = val_op(count, 1);
            n += 1;
            if index != last {
                seq[n] = val_op(curval, last - index);
                n += 1;
            }
        }
        // Step 3: put the new sequence in place of the old opcode.
        let oldlen = if xzero { 2 } else { 1 };
        let delta = n as isize - oldlen as isize;
        if delta > 0 && (*end as isize + delta) as usize > sparse_max {
            return SparseSet::Promote;
        }
        if delta != 0 {
            if let Some(next) = next {
                let dst = (next as isize + delta) as usize;
                b.copy_within(next..*end, dst);
            }
        }
        b[p..p + n].copy_from_slice(&seq[..n]);
        *end = (*end as isize + delta) as usize;
        b[*end] = 0;
    }

    // Step 4: merge adjacent VAL opcodes of the same value, scanning up to 5 opcodes from the
    // one before the change.
    let mut p = prev.unwrap_or(sparse);
    let mut scan = 5;
    while p < *end && scan > 0 {
        scan -= 1;
        if is_xzero(b[p]) {
            p += 2;
            continue;
        } else if is_zero(b[p]) {
            p += 1;
            continue;
        }
        if p + 1 < *end && is_val(b[p + 1]) {
            let v1 = val_value(b[p]);
            let v2 = val_value(b[p + 1]);
            if v1 == v2 {
                let len = val_len(b[p]) + val_len(b[p + 1]);
                if len <= SPARSE_VAL_MAX_LEN {
                    b[p + 1] = val_op(v1, len);
                    b.copy_within(p + 1..=*end, p);
                    *end -= 1;
                    continue;
                }
            }
        }
        p += 1;
    }
    b[15] |= 0x80;
    SparseSet::Done(true)
}

/// Appends a run of `len` zero registers to `seq[..*n]`: ZERO up to 64, XZERO beyond.
fn push_zeros(seq: &mut [u8; 5], n: &mut usize, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        seq[*n..*n + 2].copy_from_slice(&xzero_ops(len));
        *n += 2;
    } else {
        seq[*n] = zero_op(len);
        *n += 1;
    }
}

/// Adds one element (`hllAdd`): whether a register changed.
pub fn add(v: &mut Vec<u8>, element: &[u8], sparse_max: usize) -> Result<bool, HllError> {
    let (index, count) = pattern(element);
    set_register(v, index, count, sparse_max)
}

/// Whether `v` is a dense HLL none of whose registers the element patterns (see [`pattern`])
/// would raise: adding those elements changes nothing. Reads `v` in place.
pub fn dense_unchanged_by(v: &[u8], patterns: &[(usize, u8)]) -> bool {
    validate(v) == Ok(Encoding::Dense)
        && patterns
            .iter()
            .all(|&(i, count)| count <= dense_get(&v[HEADER_LEN..], i))
}

/// Raises the registers of the dense HLL `v` (it passed [`validate`] as dense) to the element
/// patterns, in place, as [`add`] would: whether a register changed. The cached cardinality is
/// left for the caller to invalidate.
pub fn dense_add(v: &mut [u8], patterns: &[(usize, u8)]) -> bool {
    let regs = &mut v[HEADER_LEN..];
    patterns.iter().fold(false, |changed, &(i, count)| {
        dense_set(regs, i, count) | changed
    })
}

/// Merges the registers of `v` into `max` (`max[i] = MAX(max[i], v[i])`), as Redis's
/// `hllMerge`. `v` must have passed [`validate`]; a sparse body that doesn't cover the 16384
/// registers is [`HllError::Corrupt`].
pub fn merge_into(max: &mut [u8; REGISTERS], v: &[u8]) -> Result<(), HllError> {
    if v[4] == DENSE {
        let r = &v[HEADER_LEN..];
        for (i, m) in max.iter_mut().enumerate() {
            let val = dense_get(r, i);
            if val > *m {
                *m = val;
            }
        }
        return Ok(());
    }
    let mut i = 0usize;
    for op in opcodes(&v[HEADER_LEN..]) {
        let len = op.span();
        if i + len > REGISTERS {
            return Err(HllError::Corrupt);
        }
        if let Opcode::Val { value, .. } = op {
            for m in &mut max[i..i + len] {
                if value > *m {
                    *m = value;
                }
            }
        }
        i += len;
    }
    if i == REGISTERS {
        Ok(())
    } else {
        Err(HllError::Corrupt)
    }
}

/// The registers of a valid dense or sparse HLL, one byte each (PFDEBUG GETREG reads a dense
/// one).
pub fn registers(v: &[u8]) -> Result<Vec<u8>, HllError> {
    let mut max = [0u8; REGISTERS];
    merge_into(&mut max, v)?;
    Ok(max.to_vec())
}

/// Writes registers `max` (one byte each) into the HLL `v` as PFMERGE does: every non-zero
/// register is raised in order, so a sparse target may be promoted along the way.
pub fn raise_all(v: &mut Vec<u8>, max: &[u8; REGISTERS], sparse_max: usize) {
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // Redis ignores the result: the target was validated.
            let _ = set_register(v, i, m, sparse_max);
        }
    }
}

/// The estimated cardinality of the HLL `v` (`hllCount`), ignoring the cache. A sparse body
/// that doesn't cover exactly 16384 registers is [`HllError::Corrupt`].
pub fn count(v: &[u8]) -> Result<u64, HllError> {
    let mut histo = [0u32; 64];
    let body = &v[HEADER_LEN..];
    if v[4] == DENSE {
        for i in 0..REGISTERS {
            histo[usize::from(dense_get(body, i))] += 1;
        }
    } else {
        let mut idx = 0usize;
        for op in opcodes(body) {
            let len = op.span();
            if idx + len > REGISTERS {
                return Err(HllError::Corrupt);
            }
            let value = match op {
                Opcode::Zero { .. } => 0,
                Opcode::Val { value, .. } => value,
            };
            histo[usize::from(value)] += len as u32;
            idx += len;
        }
        if idx != REGISTERS {
            return Err(HllError::Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// The estimated cardinality of registers held one per byte (PFCOUNT of several keys).
pub fn count_registers(max: &[u8; REGISTERS]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in max.iter() {
        histo[usize::from(r & 63)] += 1;
    }
    estimate(&histo)
}

/// Ertl's estimator from the register histogram ("New cardinality estimation algorithms for
/// HyperLogLog sketches", arXiv:1702.01284), computed in the same order as Redis.
fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q + 1])) / m);
    for j in (1..=Q).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

/// PFSELFTEST: checks register access and the estimator as Redis's self-test does (dense and
/// sparse agree, the error stays within six standard errors up to ten million elements, small
/// cardinalities stay sparse). The error text on failure.
pub fn self_test(sparse_max: usize, seed: u64) -> Result<(), String> {
    let mut rng = seed | 1;
    let mut next = move || {
        // xorshift64*
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    // Test 1: register access.
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..4].copy_from_slice(b"HYLL");
    let mut bytes = [0u8; REGISTERS];
    for _ in 0..100 {
        for (i, b) in bytes.iter_mut().enumerate() {
            let r = (next() & u64::from(REGISTER_MAX)) as u8;
            *b = r;
            dense_put(&mut dense[HEADER_LEN..], i, r);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense_get(&dense[HEADER_LEN..], i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    // Test 2: approximation error, dense and sparse side by side.
    dense[HEADER_LEN..].fill(0);
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let base = next();
    for j in 1..=10_000_000u64 {
        let ele = (j ^ base).to_le_bytes();
        let (index, c) = pattern(&ele);
        dense_set(&mut dense[HEADER_LEN..], index, c);
        set_register(&mut sparse, index, c, sparse_max).map_err(|_| "TESTFAILED sparse add")?;
        if j != checkpoint {
            continue;
        }
        if j < (sparse_max / 2) as u64 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let d = count(&dense).map_err(|_| "TESTFAILED dense count")?;
        let s = count(&sparse).map_err(|_| "TESTFAILED sparse count")?;
        if d != s {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - d as i64).unsigned_abs();
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds every element; whether any changed a register.
    fn add_all(v: &mut Vec<u8>, elements: impl IntoIterator<Item = Vec<u8>>, max: usize) -> bool {
        let mut any = false;
        for e in elements {
            any |= add(v, &e, max).unwrap();
        }
        any
    }

    fn elements(range: std::ops::Range<u32>) -> impl Iterator<Item = Vec<u8>> {
        range.map(|i| format!("ele:{i}").into_bytes())
    }

    /// A reference register array for the same elements.
    fn reference(elements: impl IntoIterator<Item = Vec<u8>>) -> [u8; REGISTERS] {
        let mut r = [0u8; REGISTERS];
        for e in elements {
            let (i, c) = pattern(&e);
            r[i] = r[i].max(c);
        }
        r
    }

    #[test]
    fn patterns_match_redis() {
        assert_eq!(murmur64a(b"", 0), 0);
        // Register and run length Redis 7.0 gives these elements (PFADD, then PFDEBUG DECODE):
        // short keys go through the tail only, long ones through the 8-byte loop too.
        assert_eq!(pattern(b"a"), (12711, 2));
        assert_eq!(pattern(b"b"), (15780, 1));
        assert_eq!(pattern(b"hello"), (9216, 1));
        assert_eq!(pattern(b"hello world, this is long"), (796, 1));
        assert_eq!(pattern(b"foo"), (7348, 5));
    }

    #[test]
    fn a_new_hll_is_one_xzero_with_a_valid_zero_cache() {
        let v = new_sparse();
        assert_eq!(
            v,
            b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff".to_vec()
        );
        assert_eq!(validate(&v), Ok(Encoding::Sparse));
        assert_eq!(cached(&v), Some(0));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(decode_sparse(&v), "Z:16384");
    }

    #[test]
    fn validation_follows_redis() {
        assert_eq!(validate(b"HYLL"), Err(HllError::NotHll));
        assert_eq!(
            validate(b"hyll\x01aaaaaaaaaaaaaaaaa"),
            Err(HllError::NotHll)
        );
        assert_eq!(
            validate(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"),
            Err(HllError::NotHll)
        );
        assert_eq!(
            validate(b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\0"),
            Err(HllError::NotHll)
        );
        let mut d = new_sparse();
        to_dense(&mut d).unwrap();
        assert_eq!(d.len(), DENSE_LEN);
        assert_eq!(validate(&d), Ok(Encoding::Dense));
        assert_eq!(
            validate(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0"),
            Ok(Encoding::Sparse)
        );
    }

    #[test]
    fn dense_registers_round_trip_without_touching_neighbours() {
        let mut r = vec![0u8; DENSE_LEN - HEADER_LEN];
        let expect: Vec<u8> = (0..REGISTERS).map(|i| ((i * 7 + 3) % 64) as u8).collect();
        for (i, &v) in expect.iter().enumerate() {
            dense_put(&mut r, i, v);
        }
        for (i, &e) in expect.iter().enumerate() {
            assert_eq!(dense_get(&r, i), e, "register {i}");
        }
        // The packing is Redis's: register 0 in the low 6 bits of byte 0, register 1 straddles.
        let mut r = vec![0u8; 3];
        dense_put(&mut r, 0, 0x3f);
        assert_eq!(r, [0x3f, 0, 0]);
        dense_put(&mut r, 1, 0x3f);
        assert_eq!(r, [0xff, 0x0f, 0]);
    }

    #[test]
    fn in_place_dense_additions_change_what_add_changes() {
        let mut d = new_sparse();
        to_dense(&mut d).unwrap();
        for i in 0..3000u32 {
            add(&mut d, format!("seed{i}").as_bytes(), 0).unwrap();
        }
        for round in 0..2000u32 {
            let elements: Vec<String> = (0..(round % 4)).map(|j| format!("e{round}-{j}")).collect();
            let patterns: Vec<(usize, u8)> =
                elements.iter().map(|e| pattern(e.as_bytes())).collect();
            let mut by_add = d.clone();
            let mut changed = false;
            for e in &elements {
                changed |= add(&mut by_add, e.as_bytes(), 0).unwrap();
            }
            assert_eq!(dense_unchanged_by(&d, &patterns), !changed, "round {round}");
            assert_eq!(dense_add(&mut d, &patterns), changed, "round {round}");
            assert_eq!(d, by_add, "round {round}");
        }
        assert!(!dense_unchanged_by(&new_sparse(), &[]));
    }

    #[test]
    fn sparse_and_dense_agree_and_match_a_reference() {
        for n in [0u32, 1, 10, 100, 1000, 5000] {
            let mut s = new_sparse();
            add_all(&mut s, elements(0..n), usize::MAX);
            let mut d = new_sparse();
            to_dense(&mut d).unwrap();
            add_all(&mut d, elements(0..n), 0);
            let expect = reference(elements(0..n));
            assert_eq!(registers(&s).unwrap(), expect.to_vec(), "sparse, {n}");
            assert_eq!(registers(&d).unwrap(), expect.to_vec(), "dense, {n}");
            assert_eq!(count(&s), count(&d));
            let c = count(&d).unwrap() as f64;
            assert!(
                (c - f64::from(n)).abs() <= f64::from(n) * 0.05 + 1.0,
                "{n}: {c}"
            );
            // The sparse form decodes to exactly 16384 registers and converts to the same dense.
            let total: usize = opcodes(&s[HEADER_LEN..])
                .map(|op| match op {
                    Opcode::Zero { len, .. } | Opcode::Val { len, .. } => len,
                })
                .sum();
            assert_eq!(total, REGISTERS);
            let mut s2 = s.clone();
            to_dense(&mut s2).unwrap();
            assert_eq!(&s2[HEADER_LEN..], &d[HEADER_LEN..]);
        }
    }

    #[test]
    fn sparse_is_promoted_past_the_size_limit() {
        let mut v = new_sparse();
        let mut promoted_at = None;
        for (i, e) in elements(0..5000).enumerate() {
            add(&mut v, &e, DEFAULT_SPARSE_MAX_BYTES).unwrap();
            if v[4] == DENSE {
                promoted_at = Some(i);
                break;
            }
            assert!(v.len() <= DEFAULT_SPARSE_MAX_BYTES);
        }
        assert!(promoted_at.is_some());
        assert_eq!(v.len(), DENSE_LEN);
        // With a limit of 0, the first split promotes.
        let mut v = new_sparse();
        add(&mut v, b"x", 0).unwrap();
        assert_eq!(validate(&v), Ok(Encoding::Dense));
    }

    #[test]
    fn a_register_above_32_promotes() {
        let mut v = new_sparse();
        assert_eq!(set_register(&mut v, 100, 33, 3000), Ok(true));
        assert_eq!(validate(&v), Ok(Encoding::Dense));
        assert_eq!(registers(&v).unwrap()[100], 33);
        assert_eq!(set_register(&mut v, 100, 20, 3000), Ok(false));
    }

    #[test]
    fn sparse_edits_split_and_merge_like_redis() {
        let mut v = new_sparse();
        assert_eq!(set_register(&mut v, 0, 2, 3000), Ok(true));
        assert_eq!(decode_sparse(&v), "v:2,1 Z:16383");
        assert_eq!(set_register(&mut v, 1, 2, 3000), Ok(true));
        assert_eq!(decode_sparse(&v), "v:2,2 Z:16382");
        assert_eq!(set_register(&mut v, 100, 5, 3000), Ok(true));
        assert_eq!(decode_sparse(&v), "v:2,2 Z:98 v:5,1 Z:16283");
        assert_eq!(set_register(&mut v, 3, 1, 3000), Ok(true));
        assert_eq!(decode_sparse(&v), "v:2,2 z:1 v:1,1 Z:96 v:5,1 Z:16283");
        assert_eq!(set_register(&mut v, 2, 2, 3000), Ok(true));
        assert_eq!(decode_sparse(&v), "v:2,3 v:1,1 Z:96 v:5,1 Z:16283");
        assert_eq!(set_register(&mut v, 2, 2, 3000), Ok(false));
        assert_eq!(set_register(&mut v, 16383, 7, 3000), Ok(true));
        assert!(decode_sparse(&v).ends_with("Z:16282 v:7,1"));
        assert_eq!(cached(&v), None);
    }

    #[test]
    fn merge_takes_the_maximum_of_each_register() {
        let mut a = new_sparse();
        add_all(&mut a, elements(0..300), 3000);
        let mut b = new_sparse();
        add_all(&mut b, elements(200..3000), 3000);
        assert_eq!(validate(&b), Ok(Encoding::Dense));
        let mut max = [0u8; REGISTERS];
        merge_into(&mut max, &a).unwrap();
        merge_into(&mut max, &b).unwrap();
        assert_eq!(max, reference(elements(0..3000)));
        let mut all = new_sparse();
        add_all(&mut all, elements(0..3000), 3000);
        assert_eq!(count_registers(&max), count(&all).unwrap());
        // PFMERGE into a sparse target promotes it along the way.
        let mut target = new_sparse();
        raise_all(&mut target, &max, 3000);
        assert_eq!(validate(&target), Ok(Encoding::Dense));
        assert_eq!(registers(&target).unwrap(), max.to_vec());
    }

    #[test]
    fn the_cache_is_little_endian_with_a_validity_bit() {
        let mut v = new_sparse();
        set_cached(&mut v, 0x0102_0304);
        assert_eq!(&v[8..16], &[4, 3, 2, 1, 0, 0, 0, 0]);
        assert_eq!(cached(&v), Some(0x0102_0304));
        invalidate_cache(&mut v);
        assert_eq!(v[15], 0x80);
        assert_eq!(cached(&v), None);
    }

    #[test]
    fn corrupted_sparse_bodies_are_refused() {
        // Too few registers.
        let short = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xf0".to_vec();
        assert_eq!(count(&short), Err(HllError::Corrupt));
        let mut max = [0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &short), Err(HllError::Corrupt));
        let mut d = short.clone();
        assert_eq!(to_dense(&mut d), Err(HllError::Corrupt));
        assert_eq!(d, short);
        // Too many registers.
        let long = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff\x80".to_vec();
        assert_eq!(count(&long), Err(HllError::Corrupt));
        assert_eq!(merge_into(&mut max, &long), Err(HllError::Corrupt));
        assert_eq!(to_dense(&mut long.clone()), Err(HllError::Corrupt));
        // Zero runs past the end are refused too (Redis's fix for CVE-2025-32023), however
        // many registers a later opcode would bring the total back to.
        let mut wrap = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        for _ in 0..262_145 {
            wrap.extend_from_slice(b"\x7f\xff");
        }
        assert_eq!(count(&wrap), Err(HllError::Corrupt));
        assert_eq!(merge_into(&mut max, &wrap), Err(HllError::Corrupt));
        // No registers at all: nothing to set.
        let mut empty = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        assert_eq!(add(&mut empty, b"a", 3000), Err(HllError::Corrupt));
    }

    #[test]
    fn random_byte_flips_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut sparse = new_sparse();
        add_all(&mut sparse, elements(0..200), 3000);
        let mut dense = new_sparse();
        add_all(&mut dense, elements(0..5000), 3000);
        for base in [sparse, dense] {
            for _ in 0..3000 {
                let mut v = base.clone();
                for _ in 0..1 + rnd() % 4 {
                    let at = HEADER_LEN + (rnd() as usize) % (v.len() - HEADER_LEN);
                    v[at] ^= 1 << (rnd() % 8);
                }
                match rnd() % 4 {
                    0 => v.truncate(HEADER_LEN + (rnd() as usize) % (v.len() - HEADER_LEN + 1)),
                    1 => v.extend((0..rnd() % 6).map(|_| rnd() as u8)),
                    _ => {}
                }
                if validate(&v).is_err() {
                    continue;
                }
                let _ = count(&v);
                let mut max = [0u8; REGISTERS];
                let _ = merge_into(&mut max, &v);
                let _ = decode_sparse(&v);
                let mut w = v.clone();
                for e in elements(0..20) {
                    if add(&mut w, &e, 3000).is_err() {
                        break;
                    }
                }
                let mut w = v.clone();
                let _ = to_dense(&mut w);
                let mut w = v.clone();
                raise_all(&mut w, &max, 3000);
                let _ = set_register(&mut v, (rnd() as usize) % REGISTERS, 40, 3000);
            }
        }
    }

    #[test]
    fn self_test_passes() {
        // The full self-test adds ten million elements: run it in release builds only.
        if cfg!(debug_assertions) {
            return;
        }
        assert_eq!(self_test(DEFAULT_SPARSE_MAX_BYTES, 42), Ok(()));
    }
}
