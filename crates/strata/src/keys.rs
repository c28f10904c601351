//! Key layout: how a user key becomes RocksDB keys in each column family. Every on-disk key this crate
//! writes is built here, and `docs/format.md` describes the same bytes. Integers are big-endian so that
//! RocksDB's bytewise order is the logical order. Knows nothing of values (see `meta.rs`).

/// Number of Redis Cluster hash slots.
pub const SLOTS: u16 = 16384;

const fn crc16_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

static CRC16: [u16; 256] = crc16_table();

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16[((crc >> 8) as u8 ^ b) as usize]
    })
}

/// The cluster slot of a key, honouring `{hash tags}` exactly as Redis Cluster does.
pub fn slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) & (SLOTS - 1)
}

/// `meta` column family key: `[db u8][slot u16][user key]`.
pub fn meta_key(db: u8, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(3 + key.len());
    out.push(db);
    out.extend_from_slice(&slot(key).to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// Splits a `meta` key back into `(db, user key)`. `None` if it is too short to be one.
pub fn split_meta_key(raw: &[u8]) -> Option<(u8, &[u8])> {
    if raw.len() < 3 {
        return None;
    }
    Some((raw[0], &raw[3..]))
}

/// First `meta` key of a database: every key of database `db` is `>= db_start(db)` and `< db_end(db)`.
pub fn db_start(db: u8) -> Vec<u8> {
    vec![db]
}

/// The range FLUSHALL deletes from every family, `from..to`: every key there is (each begins
/// with its physical database's byte, and no key reaches twelve `0xFF` bytes).
pub fn every_key() -> (Vec<u8>, Vec<u8>) {
    (vec![0u8], vec![0xFFu8; 12])
}

/// Whether the range `from..to` holds every key of a family (see [`every_key`]).
pub(crate) fn spans_every_key(from: &[u8], to: &[u8]) -> bool {
    let (first, end) = every_key();
    from <= first.as_slice() && to >= end.as_slice()
}

/// The first key after database `db` in the `meta`, `data` and `zscore` families.
pub fn db_end(db: u8) -> Vec<u8> {
    if db == u8::MAX {
        vec![u8::MAX, u8::MAX, u8::MAX, u8::MAX]
    } else {
        vec![db + 1]
    }
}

/// Prefix shared by every `data` (and `zscore`) key of one version of a collection:
/// `[db u8][slot u16][key len u32][user key][version u64]`.
pub fn data_prefix(db: u8, key: &[u8], version: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(15 + key.len());
    out.push(db);
    out.extend_from_slice(&slot(key).to_be_bytes());
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&version.to_be_bytes());
    out
}

/// A `data` key: [`data_prefix`] followed by the sub-key (hash field, set member, list index, zset member).
pub fn data_key(db: u8, key: &[u8], version: u64, sub: &[u8]) -> Vec<u8> {
    // Sized for the whole key at once: every collection write builds one of these.
    let mut out = Vec::with_capacity(15 + key.len() + sub.len());
    out.push(db);
    out.extend_from_slice(&slot(key).to_be_bytes());
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(sub);
    out
}

/// The parts of a `data`/`zscore` key: `(db, user key, version, sub-key)`.
pub fn split_data_key(raw: &[u8]) -> Option<(u8, &[u8], u64, &[u8])> {
    if raw.len() < 7 {
        return None;
    }
    let len = u32::from_be_bytes([raw[3], raw[4], raw[5], raw[6]]) as usize;
    let key_end = 7usize.checked_add(len)?;
    let version_end = key_end.checked_add(8)?;
    if raw.len() < version_end {
        return None;
    }
    let mut v = [0u8; 8];
    v.copy_from_slice(&raw[key_end..version_end]);
    Some((
        raw[0],
        &raw[7..key_end],
        u64::from_be_bytes(v),
        &raw[version_end..],
    ))
}

/// `expire` column family key: `[expire_ms u64][db u8][slot u16][user key]`, an index of keys by
/// deadline that the active expiry cycle walks in time order. Entries may be stale; the cycle checks
/// them against the metadata.
pub fn expire_key(at_ms: u64, db: u8, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(11 + key.len());
    out.extend_from_slice(&at_ms.to_be_bytes());
    out.push(db);
    out.extend_from_slice(&slot(key).to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// Splits an `expire` key into `(deadline ms, db, user key)`.
pub fn split_expire_key(raw: &[u8]) -> Option<(u64, u8, &[u8])> {
    if raw.len() < 11 {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&raw[..8]);
    Some((u64::from_be_bytes(t), raw[8], &raw[11..]))
}

/// Order-preserving encoding of a double: bytewise order of the result equals numeric order
/// (-inf < ... < -0.0 = 0.0 < ... < +inf). Used by the `zscore` family.
pub fn encode_score(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    ordered.to_be_bytes()
}

/// Inverse of [`encode_score`].
pub fn decode_score(bytes: [u8; 8]) -> f64 {
    let ordered = u64::from_be_bytes(bytes);
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis_cluster() {
        // Values from CLUSTER KEYSLOT on a real Redis.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 16383);
        assert_eq!(slot(b"123456789"), 0x31C3 & 16383);
    }

    #[test]
    fn data_keys_split_back_into_their_parts() {
        let raw = data_key(3, b"my\0key", 42, b"field");
        assert_eq!(
            split_data_key(&raw),
            Some((3, &b"my\0key"[..], 42, &b"field"[..]))
        );
        assert!(raw.starts_with(&data_prefix(3, b"my\0key", 42)));
    }

    #[test]
    fn short_or_lying_data_keys_do_not_split() {
        assert_eq!(split_data_key(b"\x01\x00"), None);
        let mut raw = data_key(1, b"k", 1, b"");
        raw[6] = 200; // key length beyond the record
        assert_eq!(split_data_key(&raw), None);
    }

    #[test]
    fn expire_keys_sort_by_deadline() {
        let a = expire_key(1000, 9, b"zzz");
        let b = expire_key(2000, 0, b"aaa");
        assert!(a < b);
        assert_eq!(split_expire_key(&a), Some((1000, 9, &b"zzz"[..])));
    }

    #[test]
    fn score_encoding_preserves_order() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
        ];
        for w in values.windows(2) {
            assert!(
                encode_score(w[0]) <= encode_score(w[1]),
                "{} {}",
                w[0],
                w[1]
            );
        }
        for v in values {
            assert_eq!(
                decode_score(encode_score(v)),
                if v == 0.0 { 0.0 } else { v }
            );
        }
    }
}
