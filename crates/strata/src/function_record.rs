//! The byte format of the FUNCTION libraries as the data directory keeps them (the record
//! `strata:aux:functions`, see docs/format.md) and as FUNCTION DUMP hands them out: `STRATAFN`,
//! a version byte (1), a big-endian u32 count, then per library a big-endian u32 length and the
//! library's code exactly as loaded, then a big-endian CRC-32 (IEEE) of everything before it.
//! Only the bytes live here: compiling a library (and so knowing its functions) belongs to the
//! server's scripting engine, which this crate must not depend on. The RDB reader and writer
//! (`crate::rdb`) move libraries between this record and Redis's function opcodes.

use crate::db::Db;
use crate::error::Result;

/// The name of the aux record (`strata:aux:<name>`) that holds the libraries.
pub const RECORD: &str = "functions";

/// Magic bytes that start the record.
const MAGIC: &[u8; 8] = b"STRATAFN";

/// The record holding `codes` (each a library's code).
pub fn encode<'a>(codes: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.push(1);
    out.extend_from_slice(&(codes.len() as u32).to_be_bytes());
    for code in codes {
        out.extend_from_slice(&(code.len() as u32).to_be_bytes());
        out.extend_from_slice(code);
    }
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// The libraries' code in a record, or None when it is damaged (checksum, magic, version,
/// lengths).
pub fn decode(payload: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (body, crc) = payload.split_at_checked(payload.len().checked_sub(4)?)?;
    if crc32(body).to_be_bytes() != crc || !body.starts_with(MAGIC) || body.get(8) != Some(&1) {
        return None;
    }
    let mut rest = &body[9..];
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let count = u32::from_be_bytes(take(4)?.try_into().ok()?);
    let mut codes = Vec::new();
    for _ in 0..count {
        let len = u32::from_be_bytes(take(4)?.try_into().ok()?) as usize;
        codes.push(take(len)?.to_vec());
    }
    Some(codes)
}

/// The libraries saved in `db`'s directory (none when there is no record); a damaged record is
/// an error.
pub fn saved(db: &Db) -> Result<Vec<Vec<u8>>> {
    match db.aux_get(RECORD)? {
        None => Ok(Vec::new()),
        Some(raw) => decode(&raw).ok_or_else(|| {
            crate::Error::Corrupt("the FUNCTION libraries record is damaged".into())
        }),
    }
}

/// CRC-32 (IEEE), bitwise: records are small.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_damage_is_refused() {
        let codes: [&[u8]; 2] = [b"#!lua name=a\nx", b""];
        let raw = encode(codes.iter().copied());
        assert_eq!(
            decode(&raw),
            Some(codes.iter().map(|c| c.to_vec()).collect())
        );
        for cut in 0..raw.len() {
            assert_eq!(decode(&raw[..cut]), None, "cut at {cut}");
        }
        let mut flipped = raw.clone();
        flipped[12] ^= 1;
        assert_eq!(decode(&flipped), None);
    }
}
