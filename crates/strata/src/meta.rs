//! The metadata record: the value stored under each user key in the `meta` column family. It says the
//! key's type, its expiry and (for collections) the version and length of its sub-keys; a string keeps
//! its value inline so GET is one read, unless it is a big string the partial-write commands grew,
//! stored in fragments (encoding version 2, `fragment.rs`). Byte layout is documented in
//! `docs/format.md`. Knows nothing of RocksDB.

use crate::error::{Error, Result};

/// Current encoding version of metadata records (byte 1). Readers refuse versions they don't know.
pub const ENCODING_VERSION: u8 = 1;

/// Encoding version of a string stored in fragments (`fragment.rs`): its body is
/// `[version u64][len u64]`, its bytes live in `data` sub-keys like a collection's members.
pub const STRING_FRAGMENTED: u8 = 2;

/// Flag (high nibble of byte 1) on a string whose value was modified in place (APPEND, SETRANGE):
/// Redis then reports OBJECT ENCODING `raw` whatever the value looks like.
pub const FLAG_RAW_STRING: u8 = 0x10;

/// Common header length: type (1) + encoding version and flags (1) + expire_ms (8).
pub const HEADER_LEN: usize = 10;

/// The type of a key. The numeric ids are part of the on-disk format and are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum KeyType {
    /// A binary-safe string (inline in the metadata).
    String = 1,
    /// A hash of field → value.
    Hash = 2,
    /// A list of values.
    List = 3,
    /// A set of members.
    Set = 4,
    /// A sorted set of member → score.
    ZSet = 5,
    /// A stream of entries ordered by ID, with consumer groups.
    Stream = 6,
}

impl KeyType {
    /// The id stored on disk.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The type for an on-disk id.
    pub fn from_id(id: u8) -> Option<KeyType> {
        Some(match id {
            1 => KeyType::String,
            2 => KeyType::Hash,
            3 => KeyType::List,
            4 => KeyType::Set,
            5 => KeyType::ZSet,
            6 => KeyType::Stream,
            _ => return None,
        })
    }

    /// The name Redis's TYPE command prints.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::String => "string",
            KeyType::Hash => "hash",
            KeyType::List => "list",
            KeyType::Set => "set",
            KeyType::ZSet => "zset",
            KeyType::Stream => "stream",
        }
    }

    /// Parses a TYPE name (as SCAN's TYPE option takes it), case-insensitively.
    pub fn from_name(name: &[u8]) -> Option<KeyType> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_slice() {
            b"string" => KeyType::String,
            b"hash" => KeyType::Hash,
            b"list" => KeyType::List,
            b"set" => KeyType::Set,
            b"zset" => KeyType::ZSet,
            b"stream" => KeyType::Stream,
            _ => return None,
        })
    }
}

/// A decoded metadata record.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// The key's type.
    pub kind: KeyType,
    /// Absolute expiry in Unix milliseconds; 0 means the key does not expire.
    pub expire_ms: u64,
    /// Flags (high nibble of byte 1), e.g. [`FLAG_RAW_STRING`].
    pub flags: u8,
    /// Encoding version (low nibble of byte 1): [`ENCODING_VERSION`], or [`STRING_FRAGMENTED`]
    /// for a string stored in fragments.
    pub encoding: u8,
    /// The type-specific body: the value of an inline string; `[version u64][len u64][...]` of a
    /// collection or of a fragmented string.
    pub body: Vec<u8>,
}

impl Meta {
    /// A string record.
    pub fn string(value: Vec<u8>, expire_ms: u64) -> Meta {
        Meta {
            kind: KeyType::String,
            expire_ms,
            flags: 0,
            encoding: ENCODING_VERSION,
            body: value,
        }
    }

    /// Encodes the record into its on-disk bytes.
    pub fn encode(&self) -> Vec<u8> {
        encode_flagged(self.kind, self.flags_byte(), self.expire_ms, &self.body)
    }

    /// Byte 1 as [`encode_flagged`] takes it: the flags, and the encoding version when it is not
    /// the default one.
    pub fn flags_byte(&self) -> u8 {
        (self.flags & 0xF0) | (self.encoding & 0x0F)
    }

    /// Whether this is a string stored in fragments.
    pub fn is_fragmented(&self) -> bool {
        self.kind == KeyType::String && self.encoding == STRING_FRAGMENTED
    }

    /// Whether `data` sub-keys of this record's version belong to it: a collection's, or a
    /// fragmented string's (what the compaction filter and the check tool keep).
    pub fn owns_sub_keys(&self) -> bool {
        self.kind != KeyType::String || self.is_fragmented()
    }

    /// Decodes on-disk bytes; a record that is too short or of an unknown type/version is `Corrupt`.
    pub fn decode(raw: &[u8]) -> Result<Meta> {
        let (kind, expire_ms) = decode_header(raw)?;
        Ok(Meta {
            kind,
            expire_ms,
            flags: raw[1] & 0xF0,
            encoding: raw[1] & 0x0F,
            body: raw[HEADER_LEN..].to_vec(),
        })
    }

    /// Whether the key is expired at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_ms != 0 && self.expire_ms <= now_ms
    }

    /// The collection version (first 8 body bytes) of a collection or fragmented string.
    pub fn version(&self) -> Option<u64> {
        read_u64(&self.body, 0)
    }

    /// The collection length (body bytes 8..16) of a non-string record.
    pub fn collection_len(&self) -> Option<u64> {
        read_u64(&self.body, 8)
    }
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let slice = bytes.get(at..at + 8)?;
    let mut b = [0u8; 8];
    b.copy_from_slice(slice);
    Some(u64::from_be_bytes(b))
}

/// Encodes a record from its parts without building a [`Meta`] first.
pub fn encode_parts(kind: KeyType, expire_ms: u64, body: &[u8]) -> Vec<u8> {
    encode_flagged(kind, 0, expire_ms, body)
}

/// Encodes a record with flags (high nibble of byte 1). The low nibble of `flags`, when not 0, is
/// the encoding version (a fragmented string's [`STRING_FRAGMENTED`]); 0 means the default one.
pub fn encode_flagged(kind: KeyType, flags: u8, expire_ms: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    let encoding = match flags & 0x0F {
        0 => ENCODING_VERSION,
        e => e,
    };
    out.push(kind.id());
    out.push(encoding | (flags & 0xF0));
    out.extend_from_slice(&expire_ms.to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Decodes just the header: `(type, expire_ms)`.
pub fn decode_header(raw: &[u8]) -> Result<(KeyType, u64)> {
    if raw.len() < HEADER_LEN {
        return Err(Error::Corrupt(format!(
            "metadata record of {} bytes is shorter than its header",
            raw.len()
        )));
    }
    let kind = KeyType::from_id(raw[0])
        .ok_or_else(|| Error::Corrupt(format!("unknown type id {}", raw[0])))?;
    let encoding = raw[1] & 0x0F;
    if encoding != ENCODING_VERSION && !(kind == KeyType::String && encoding == STRING_FRAGMENTED) {
        return Err(Error::Corrupt(format!(
            "unknown metadata encoding version {encoding} of a {}",
            kind.name()
        )));
    }
    let expire = read_u64(raw, 2).unwrap_or(0);
    Ok((kind, expire))
}

/// The encoding version of an encoded record (low nibble of byte 1; 0 when too short).
pub fn encoding_of(raw: &[u8]) -> u8 {
    raw.get(1).map_or(0, |b| b & 0x0F)
}

/// The expiry field of an encoded record (0 when none or undecodable).
pub fn expire_of(raw: &[u8]) -> u64 {
    read_u64(raw, 2).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_record_round_trips() {
        let m = Meta::string(b"hello\0world".to_vec(), 12345);
        let raw = m.encode();
        assert_eq!(raw[0], 1);
        assert_eq!(raw[1], ENCODING_VERSION);
        assert_eq!(Meta::decode(&raw).unwrap(), m);
        assert_eq!(expire_of(&raw), 12345);
    }

    #[test]
    fn truncated_or_unknown_records_are_corrupt_not_panics() {
        assert!(matches!(Meta::decode(b"\x01\x01"), Err(Error::Corrupt(_))));
        assert!(matches!(
            Meta::decode(&[99, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::Corrupt(_))
        ));
        assert!(matches!(
            Meta::decode(&[1, 77, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::Corrupt(_))
        ));
        // Encoding version 2 is a fragmented string's, and only a string's.
        assert!(matches!(
            Meta::decode(&[2, 2, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::Corrupt(_))
        ));
    }

    #[test]
    fn fragmented_string_record_keeps_its_encoding() {
        let mut body = 7u64.to_be_bytes().to_vec();
        body.extend_from_slice(&100_000u64.to_be_bytes());
        let raw = encode_flagged(
            KeyType::String,
            FLAG_RAW_STRING | STRING_FRAGMENTED,
            5,
            &body,
        );
        assert_eq!(raw[1], 0x12);
        let m = Meta::decode(&raw).unwrap();
        assert!(m.is_fragmented() && m.owns_sub_keys());
        assert_eq!((m.version(), m.collection_len()), (Some(7), Some(100_000)));
        assert_eq!(m.encode(), raw);
        assert!(!Meta::string(vec![1], 0).owns_sub_keys());
    }

    #[test]
    fn expiry_is_inclusive_of_the_deadline() {
        let m = Meta::string(vec![], 100);
        assert!(!m.is_expired(99));
        assert!(m.is_expired(100));
        assert!(!Meta::string(vec![], 0).is_expired(u64::MAX));
    }
}
