//! Bit access to string values (GETBIT, SETBIT): a string read as a bitmap whose bit 0 is the most
//! significant bit of its first byte, as in Redis. Reads and writes whole string records through
//! the string module's writer; knows nothing of commands or replies.

use std::sync::atomic::Ordering;

use crate::db::Db;
use crate::error::Result;
use crate::meta::{KeyType, FLAG_RAW_STRING};

impl Db {
    /// Whether `offset` addresses a bit of a string no longer than the maximum string length
    /// (proto-max-bulk-len), as Redis's getBitOffsetFromArgument requires.
    pub fn bit_offset_in_range(&self, offset: i64) -> bool {
        offset >= 0 && ((offset as u64) >> 3) < self.inner.max_string_len.load(Ordering::Relaxed)
    }

    /// GETBIT: the bit at `offset` of the string at `key` (0 past its end or when it is missing).
    pub fn getbit(&self, key: &[u8], offset: u64) -> Result<u8> {
        Ok(match self.live_meta_of(key, KeyType::String)? {
            Some(m) => bit_at(&m.body, offset),
            None => 0,
        })
    }

    /// SETBIT: sets the bit at `offset` of the string at `key` to `on`, growing (or creating) the
    /// string with zero bytes as needed; the TTL is kept. Returns the previous bit and whether the
    /// value changed (Redis signals the write only then). The caller checks the offset with
    /// [`Db::bit_offset_in_range`].
    pub fn setbit(&self, key: &[u8], offset: u64, on: bool) -> Result<(u8, bool)> {
        let _g = self.inner.locks.lock_one(self.index, key);
        let (mut body, expire, mut changed) = match self.live_meta_of(key, KeyType::String)? {
            Some(m) => (m.body, m.expire_ms, false),
            None => (Vec::new(), 0, true),
        };
        let byte = usize::try_from(offset >> 3).map_err(|_| crate::Error::StringTooLong)?;
        if body.len() <= byte {
            body.resize(byte + 1, 0);
            changed = true;
        }
        let old = bit_at(&body, offset);
        if old != on as u8 {
            body[byte] ^= 0x80 >> (offset & 7);
            changed = true;
        }
        if changed {
            self.write_string_flagged(key, &body, FLAG_RAW_STRING, expire)?;
        }
        Ok((old, changed))
    }
}

/// The bit at `offset` of `bytes` (0 past the end).
fn bit_at(bytes: &[u8], offset: u64) -> u8 {
    match usize::try_from(offset >> 3).ok().and_then(|i| bytes.get(i)) {
        Some(b) => (b >> (7 - (offset & 7))) & 1,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::bit_at;

    #[test]
    fn bit_zero_is_the_high_bit_of_the_first_byte() {
        assert_eq!(bit_at(b"\x80", 0), 1);
        assert_eq!(bit_at(b"\x80", 1), 0);
        assert_eq!(bit_at(b"\x00\x01", 15), 1);
        assert_eq!(bit_at(b"\x00\x01", 16), 0);
        assert_eq!(bit_at(b"", u64::MAX), 0);
    }
}
