//! The low-level pieces of Redis's RDB serialization (`rdb.c`): length prefixes (6, 14, 32 and
//! 64 bits), strings (raw, integer-encoded, LZF-compressed), and doubles (the old text form with
//! its NaN/±inf codes and the 8-byte binary form). [`Reader`] reads them from any `Read`
//! (a DUMP payload in memory or an RDB file), checking every length against what actually
//! arrives so a corrupt length cannot make it allocate more than the input holds; the `put_*`
//! functions append them to a `Vec`. Knows nothing of value types or keys.

use std::io::Read;

use crate::error::{Error, Result};

use super::crc64::crc64;
use super::lzf;

/// The malformed-input error of this module's callers.
pub fn bad(what: &str) -> Error {
    Error::BadRdb(what.to_string())
}

const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const ENCVAL: u8 = 3;
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Strings up to this size are read into a buffer of the announced size; longer ones grow with
/// the bytes that actually arrive.
const EAGER_LIMIT: usize = 1 << 20;

/// A length prefix: a length, or the code of a specially encoded string.
enum Len {
    Plain(u64),
    Encoded(u8),
}

/// Reads RDB primitives from `R`, optionally keeping the CRC-64 of every byte read.
pub struct Reader<R: Read> {
    inner: R,
    crc: Option<u64>,
    read: u64,
}

impl<R: Read> Reader<R> {
    /// A reader over `inner`, without checksum.
    pub fn new(inner: R) -> Reader<R> {
        Reader {
            inner,
            crc: None,
            read: 0,
        }
    }

    /// A reader over `inner` that keeps the CRC-64 of what it reads ([`Reader::crc`]).
    pub fn with_crc(inner: R) -> Reader<R> {
        Reader {
            inner,
            crc: Some(0),
            read: 0,
        }
    }

    /// The CRC-64 of every byte read so far (0 if the reader keeps none).
    pub fn crc(&self) -> u64 {
        self.crc.unwrap_or(0)
    }

    /// Bytes read so far.
    pub fn position(&self) -> u64 {
        self.read
    }

    fn note(&mut self, bytes: &[u8]) {
        self.read += bytes.len() as u64;
        if let Some(c) = self.crc.as_mut() {
            *c = crc64(*c, bytes);
        }
    }

    /// Fills `buf` exactly.
    pub fn exact(&mut self, buf: &mut [u8]) -> Result<()> {
        self.inner.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => bad("unexpected end of data"),
            _ => Error::Io(e.to_string()),
        })?;
        self.note(buf);
        Ok(())
    }

    /// Reads `n` bytes.
    pub fn bytes(&mut self, n: u64) -> Result<Vec<u8>> {
        let n = usize::try_from(n).map_err(|_| bad("length out of range"))?;
        if n <= EAGER_LIMIT {
            let mut v = vec![0u8; n];
            self.exact(&mut v)?;
            return Ok(v);
        }
        let mut v = Vec::new();
        (&mut self.inner)
            .take(n as u64)
            .read_to_end(&mut v)
            .map_err(|e| Error::Io(e.to_string()))?;
        if v.len() != n {
            return Err(bad("unexpected end of data"));
        }
        self.note(&v);
        Ok(v)
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8> {
        let mut b = [0u8; 1];
        self.exact(&mut b)?;
        Ok(b[0])
    }

    /// Reads a little-endian u32 (RESIZEDB-free fields such as the old expiry in seconds).
    pub fn u32_le(&mut self) -> Result<u32> {
        let mut b = [0u8; 4];
        self.exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian u64 (millisecond expiry, module ids).
    pub fn u64_le(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        self.exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn len_prefix(&mut self) -> Result<Len> {
        let first = self.u8()?;
        Ok(match first >> 6 {
            LEN_6BIT => Len::Plain(u64::from(first & 0x3f)),
            LEN_14BIT => Len::Plain((u64::from(first & 0x3f) << 8) | u64::from(self.u8()?)),
            ENCVAL => Len::Encoded(first & 0x3f),
            _ => match first {
                LEN_32BIT => {
                    let mut b = [0u8; 4];
                    self.exact(&mut b)?;
                    Len::Plain(u64::from(u32::from_be_bytes(b)))
                }
                LEN_64BIT => {
                    let mut b = [0u8; 8];
                    self.exact(&mut b)?;
                    Len::Plain(u64::from_be_bytes(b))
                }
                _ => return Err(bad("unknown length encoding")),
            },
        })
    }

    /// Reads a length (an encoded-string code where a length belongs is an error).
    pub fn length(&mut self) -> Result<u64> {
        match self.len_prefix()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(bad("encoded value where a length belongs")),
        }
    }

    /// Reads a string in any of its encodings (integers come back as their decimal text).
    pub fn string(&mut self) -> Result<Vec<u8>> {
        match self.len_prefix()? {
            Len::Plain(n) => self.bytes(n),
            Len::Encoded(ENC_INT8) => Ok((self.u8()? as i8).to_string().into_bytes()),
            Len::Encoded(ENC_INT16) => {
                let mut b = [0u8; 2];
                self.exact(&mut b)?;
                Ok(i16::from_le_bytes(b).to_string().into_bytes())
            }
            Len::Encoded(ENC_INT32) => {
                let mut b = [0u8; 4];
                self.exact(&mut b)?;
                Ok(i32::from_le_bytes(b).to_string().into_bytes())
            }
            Len::Encoded(ENC_LZF) => {
                let compressed = self.length()?;
                let plain = self.length()?;
                let plain = usize::try_from(plain).map_err(|_| bad("length out of range"))?;
                if plain == 0 {
                    return Err(bad("empty compressed string"));
                }
                let input = self.bytes(compressed)?;
                // LZF expands at most ~264 times (a 2-byte reference makes up to 264 bytes):
                // refuse an announced size the input cannot produce before allocating it.
                if plain / 264 > input.len() {
                    return Err(bad("compressed string too large for its input"));
                }
                lzf::decompress(&input, plain).ok_or_else(|| bad("invalid LZF data"))
            }
            Len::Encoded(_) => Err(bad("unknown string encoding")),
        }
    }

    /// Reads a double in the old text form (RDB_TYPE_ZSET scores): a length byte, 253/254/255
    /// for NaN/+inf/-inf, else that many bytes of decimal text.
    pub fn text_double(&mut self) -> Result<f64> {
        let n = self.u8()?;
        match n {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            _ => {
                let mut b = vec![0u8; usize::from(n)];
                self.exact(&mut b)?;
                std::str::from_utf8(&b)
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .ok_or_else(|| bad("invalid double"))
            }
        }
    }

    /// Reads a double in the binary form (RDB_TYPE_ZSET_2 scores): 8 bytes, little-endian IEEE.
    pub fn binary_double(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64_le()?))
    }
}

/// Appends a length prefix.
pub fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push((LEN_14BIT << 6) | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u64::from(u32::MAX) {
        out.push(LEN_32BIT);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// The integer a string stands for when Redis would store it integer-encoded: it parses as a
/// 64-bit integer whose decimal text is exactly the string (Redis's `rdbTryIntegerEncoding`).
fn as_integer(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    let v: i64 = text.parse().ok()?;
    (v.to_string().as_bytes() == s).then_some(v)
}

/// Appends a string, integer-encoded when it is a small integer (as Redis writes `"123"`),
/// otherwise raw. Strata does not LZF-compress.
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(v) = as_integer(s) {
            if let Ok(v) = i8::try_from(v) {
                out.push((ENCVAL << 6) | ENC_INT8);
                out.push(v as u8);
                return;
            }
            if let Ok(v) = i16::try_from(v) {
                out.push((ENCVAL << 6) | ENC_INT16);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
            if let Ok(v) = i32::try_from(v) {
                out.push((ENCVAL << 6) | ENC_INT32);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends a double in the binary form.
pub fn put_binary_double(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_bits().to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_string(bytes: &[u8]) -> Result<Vec<u8>> {
        Reader::new(bytes).string()
    }

    #[test]
    fn lengths_round_trip_at_every_width() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_len(&mut out, n);
            assert_eq!(Reader::new(out.as_slice()).length().ok(), Some(n));
        }
    }

    #[test]
    fn integers_are_encoded_as_redis_does() {
        for (s, first) in [
            ("0", 0xc0u8),
            ("-128", 0xc0),
            ("300", 0xc1),
            ("-70000", 0xc2),
        ] {
            let mut out = Vec::new();
            put_string(&mut out, s.as_bytes());
            assert_eq!(out[0], first, "{s}");
            assert_eq!(read_string(&out).ok().as_deref(), Some(s.as_bytes()));
        }
        for s in ["007", "+1", "1 ", "99999999999", ""] {
            let mut out = Vec::new();
            put_string(&mut out, s.as_bytes());
            assert_eq!(usize::from(out[0]), s.len(), "{s} stays raw");
        }
    }

    #[test]
    fn a_length_past_the_end_is_an_error_not_an_allocation() {
        let mut input = vec![LEN_64BIT];
        input.extend_from_slice(&(1u64 << 62).to_be_bytes());
        assert!(matches!(read_string(&input), Err(Error::BadRdb(_))));
        let mut input = vec![LEN_32BIT];
        input.extend_from_slice(&u32::MAX.to_be_bytes());
        input.extend_from_slice(b"short");
        assert!(matches!(read_string(&input), Err(Error::BadRdb(_))));
    }

    #[test]
    fn compressed_strings_decode() {
        // ENC_LZF, compressed length 6, plain length 9, "abc" + back reference.
        let input = [0xc3, 6, 9, 2, b'a', b'b', b'c', 4 << 5, 2];
        assert_eq!(read_string(&input).ok().as_deref(), Some(&b"abcabcabc"[..]));
        let huge = [
            0xc3,
            6,
            0x80,
            0x7f,
            0xff,
            0xff,
            0xff,
            2,
            b'a',
            b'b',
            b'c',
            4 << 5,
            2,
        ];
        assert!(read_string(&huge).is_err());
    }

    #[test]
    fn text_doubles_with_special_codes() {
        let mut r = Reader::new(&[254u8, 255, 3, b'1', b'.', b'5', 2, b'x', b'y'][..]);
        assert_eq!(r.text_double().ok(), Some(f64::INFINITY));
        assert_eq!(r.text_double().ok(), Some(f64::NEG_INFINITY));
        assert_eq!(r.text_double().ok(), Some(1.5));
        assert!(r.text_double().is_err());
    }
}
