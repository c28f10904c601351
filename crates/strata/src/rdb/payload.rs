//! The DUMP payload trailer (`createDumpPayload` / `verifyDumpPayload` of Redis 7.0): a value's
//! type byte and body, then the RDB version as 2 little-endian bytes (10 for Redis 7.0), then the
//! CRC-64 of everything before it as 8 little-endian bytes. Knows nothing of the value inside.

use crate::error::Result;

use super::crc64::crc64;
use super::encoding::bad;

/// The RDB version Redis 7.0 writes, and the newest this module accepts.
pub const RDB_VERSION: u16 = 10;

/// Appends the trailer to `value` (type byte and body), making it a DUMP payload.
pub fn seal(mut value: Vec<u8>) -> Vec<u8> {
    value.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &value);
    value.extend_from_slice(&crc.to_le_bytes());
    value
}

/// Checks a DUMP payload's version (at most [`RDB_VERSION`]) and checksum, and returns the value
/// it holds; [`crate::Error::BadRdb`] otherwise (Redis: "DUMP payload version or checksum are
/// wrong"). Redis decodes the value from the whole payload, trailer included (a value that runs
/// into the trailer's bytes is read, not refused): [`crate::Db::restore_payload`] does the same.
pub fn open(payload: &[u8]) -> Result<&[u8]> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(bad("payload shorter than its trailer"));
    };
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    if version > RDB_VERSION {
        return Err(bad("RDB version too new"));
    }
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&payload[body_len + 2..]);
    if crc64(0, &payload[..body_len + 2]) != u64::from_le_bytes(stored) {
        return Err(bad("checksum mismatch"));
    }
    Ok(&payload[..body_len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_payload_opens_and_a_sealed_one_matches_it() {
        // Redis 7.0.15: SET k hello; DUMP k.
        let redis = b"\x00\x05hello\x0a\x00cr\xdfve4 \x0a";
        assert_eq!(open(redis).ok(), Some(&b"\x00\x05hello"[..]));
        assert_eq!(seal(b"\x00\x05hello".to_vec()), redis.to_vec());
    }

    #[test]
    fn damaged_or_newer_payloads_are_refused() {
        let good = seal(b"\x00\x01x".to_vec());
        for cut in 0..good.len() {
            assert!(open(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = good.clone();
        flipped[1] ^= 1;
        assert!(open(&flipped).is_err());
        let mut newer = b"\x00\x01x".to_vec();
        newer.extend_from_slice(&11u16.to_le_bytes());
        let crc = crc64(0, &newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert!(open(&newer).is_err());
    }
}
