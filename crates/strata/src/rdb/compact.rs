//! Redis's compact blobs, as found inside RDB values: ziplists (`ziplist.c`), listpacks
//! (`listpack.c`), intsets (`intset.c`) and zipmaps (`zipmap.c`). Each reader walks one blob held
//! in memory and hands its entries, in order, to a callback as bytes (integers as their decimal
//! text, as Redis returns them), checking every entry header and length against the blob and the
//! blob's own header (byte count, entry count, terminator), so a damaged blob is an error and
//! never a read past its end. [`Listpack`] builds listpacks for the encoder. Knows nothing of
//! keys or value types.

use crate::error::Result;

use super::encoding::bad;

type Sink<'a> = &'a mut dyn FnMut(Vec<u8>) -> Result<()>;

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Sign-extends the low `bits` bits of `v`.
fn signed(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

fn take(blob: &[u8], at: usize, n: usize) -> Result<&[u8]> {
    at.checked_add(n)
        .and_then(|end| blob.get(at..end))
        .ok_or_else(|| bad("compact entry past the end of its blob"))
}

/// Walks a ziplist, handing each entry to `f`; returns the number of entries.
pub fn ziplist_each(blob: &[u8], f: Sink<'_>) -> Result<u64> {
    const HEADER: usize = 10;
    if blob.len() < HEADER + 1 {
        return Err(bad("ziplist too short"));
    }
    let total = le(&blob[0..4]) as usize;
    let tail = le(&blob[4..8]) as usize;
    let count = le(&blob[8..10]);
    if total != blob.len() || tail >= total || blob[total - 1] != 0xff {
        return Err(bad("ziplist header does not match its size"));
    }
    let mut at = HEADER;
    let mut n = 0u64;
    let mut prev_len = 0usize;
    while blob[at] != 0xff {
        let start = at;
        // The previous entry's length: 1 byte, or 0xfe and 4 bytes.
        let stored_prev = if blob[at] < 0xfe {
            at += 1;
            usize::from(blob[at - 1])
        } else if blob[at] == 0xfe {
            let v = le(take(blob, at + 1, 4)?) as usize;
            at += 5;
            v
        } else {
            return Err(bad("invalid ziplist prevlen"));
        };
        if stored_prev != prev_len {
            return Err(bad("ziplist prevlen does not match"));
        }
        let enc = *blob
            .get(at)
            .ok_or_else(|| bad("ziplist entry past the end"))?;
        let value = match enc >> 6 {
            0 => {
                let len = usize::from(enc & 0x3f);
                at += 1;
                take(blob, at, len).map(|s| (s.to_vec(), len))?
            }
            1 => {
                let b = take(blob, at, 2)?;
                let len = (usize::from(b[0] & 0x3f) << 8) | usize::from(b[1]);
                at += 2;
                take(blob, at, len).map(|s| (s.to_vec(), len))?
            }
            2 => {
                if enc != 0x80 {
                    return Err(bad("invalid ziplist string encoding"));
                }
                let b = take(blob, at + 1, 4)?;
                let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
                at += 5;
                take(blob, at, len).map(|s| (s.to_vec(), len))?
            }
            _ => {
                at += 1;
                let (v, width) = match enc {
                    0xc0 => (signed(le(take(blob, at, 2)?), 16), 2),
                    0xd0 => (signed(le(take(blob, at, 4)?), 32), 4),
                    0xe0 => (le(take(blob, at, 8)?) as i64, 8),
                    0xf0 => (signed(le(take(blob, at, 3)?), 24), 3),
                    0xfe => (signed(le(take(blob, at, 1)?), 8), 1),
                    0xf1..=0xfd => (i64::from(enc & 0x0f) - 1, 0),
                    _ => return Err(bad("invalid ziplist integer encoding")),
                };
                (v.to_string().into_bytes(), width)
            }
        };
        at += value.1;
        if at >= total {
            return Err(bad("ziplist entry past the end"));
        }
        prev_len = at - start;
        n += 1;
        f(value.0)?;
    }
    if at != total - 1 {
        return Err(bad("ziplist ends before its size"));
    }
    if count != 0xffff && count != n {
        return Err(bad("ziplist entry count does not match"));
    }
    Ok(n)
}

/// The size of a listpack entry's back-length field for an entry of `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Walks a listpack, handing each entry to `f`; returns the number of entries.
pub fn listpack_each(blob: &[u8], f: Sink<'_>) -> Result<u64> {
    const HEADER: usize = 6;
    if blob.len() < HEADER + 1 {
        return Err(bad("listpack too short"));
    }
    let total = le(&blob[0..4]) as usize;
    let count = le(&blob[4..6]);
    if total != blob.len() || blob[total - 1] != 0xff {
        return Err(bad("listpack header does not match its size"));
    }
    let mut at = HEADER;
    let mut n = 0u64;
    while blob[at] != 0xff {
        let start = at;
        let enc = blob[at];
        let value: Vec<u8> = if enc & 0x80 == 0 {
            at += 1;
            u64::from(enc & 0x7f).to_string().into_bytes()
        } else if enc & 0xc0 == 0x80 {
            let len = usize::from(enc & 0x3f);
            at += 1;
            let s = take(blob, at, len)?.to_vec();
            at += len;
            s
        } else if enc & 0xe0 == 0xc0 {
            let b = take(blob, at, 2)?;
            let v = (u64::from(b[0] & 0x1f) << 8) | u64::from(b[1]);
            at += 2;
            signed(v, 13).to_string().into_bytes()
        } else if enc & 0xf0 == 0xe0 {
            let b = take(blob, at, 2)?;
            let len = (usize::from(b[0] & 0x0f) << 8) | usize::from(b[1]);
            at += 2;
            let s = take(blob, at, len)?.to_vec();
            at += len;
            s
        } else {
            at += 1;
            match enc {
                0xf0 => {
                    let len = le(take(blob, at, 4)?) as usize;
                    at += 4;
                    let s = take(blob, at, len)?.to_vec();
                    at += len;
                    s
                }
                0xf1..=0xf4 => {
                    let width = [2usize, 3, 4, 8][usize::from(enc - 0xf1)];
                    let v = le(take(blob, at, width)?);
                    at += width;
                    signed(v, 8 * width as u32).to_string().into_bytes()
                }
                _ => return Err(bad("invalid listpack encoding")),
            }
        };
        let entry_len = at - start;
        let back = backlen_size(entry_len);
        take(blob, at, back)?;
        at += back;
        if at >= total {
            return Err(bad("listpack entry past the end"));
        }
        n += 1;
        f(value)?;
    }
    if at != total - 1 {
        return Err(bad("listpack ends before its size"));
    }
    if count != 0xffff && count != n {
        return Err(bad("listpack entry count does not match"));
    }
    Ok(n)
}

/// Walks an intset, handing each member to `f`; returns the number of members.
pub fn intset_each(blob: &[u8], f: Sink<'_>) -> Result<u64> {
    if blob.len() < 8 {
        return Err(bad("intset too short"));
    }
    let width = le(&blob[0..4]) as usize;
    let count = le(&blob[4..8]) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err(bad("invalid intset encoding"));
    }
    if count.checked_mul(width).and_then(|b| b.checked_add(8)) != Some(blob.len()) {
        return Err(bad("intset size does not match its count"));
    }
    for i in 0..count {
        let v = le(&blob[8 + i * width..8 + (i + 1) * width]);
        f(signed(v, 8 * width as u32).to_string().into_bytes())?;
    }
    Ok(count as u64)
}

/// Walks a zipmap (the hash encoding of RDB version < 4), handing fields and values in turn to
/// `f`; returns the number of strings handed (twice the number of fields).
pub fn zipmap_each(blob: &[u8], f: Sink<'_>) -> Result<u64> {
    if blob.len() < 2 {
        return Err(bad("zipmap too short"));
    }
    let mut at = 1;
    let mut n = 0u64;
    let len_at = |at: &mut usize| -> Result<usize> {
        let first = *blob.get(*at).ok_or_else(|| bad("zipmap past the end"))?;
        match first {
            0..=253 => {
                *at += 1;
                Ok(usize::from(first))
            }
            254 => {
                let v = le(take(blob, *at + 1, 4)?) as usize;
                *at += 5;
                Ok(v)
            }
            _ => Err(bad("zipmap ends inside an entry")),
        }
    };
    while *blob.get(at).ok_or_else(|| bad("zipmap without its end"))? != 0xff {
        let klen = len_at(&mut at)?;
        let field = take(blob, at, klen)?.to_vec();
        at += klen;
        let vlen = len_at(&mut at)?;
        let free = usize::from(*blob.get(at).ok_or_else(|| bad("zipmap past the end"))?);
        at += 1;
        let value = take(blob, at, vlen)?.to_vec();
        at = at + vlen + free;
        n += 2;
        f(field)?;
        f(value)?;
    }
    if at != blob.len() - 1 {
        return Err(bad("zipmap ends before its size"));
    }
    Ok(n)
}

/// Builds a listpack of strings and integers, as Redis's `lpAppend` encodes them.
#[derive(Default)]
pub struct Listpack {
    body: Vec<u8>,
    count: u64,
}

impl Listpack {
    /// An empty listpack.
    pub fn new() -> Listpack {
        Listpack::default()
    }

    /// Appends `s`, as an integer when Redis would store it as one.
    pub fn push(&mut self, s: &[u8]) {
        let start = self.body.len();
        match lp_integer(s) {
            Some(v) if (0..=127).contains(&v) => self.body.push(v as u8),
            Some(v) if (-4096..=4095).contains(&v) => {
                let u = (v as u64) & 0x1fff;
                self.body.push(0xc0 | (u >> 8) as u8);
                self.body.push(u as u8);
            }
            Some(v) => {
                let (tag, width) = if i16::try_from(v).is_ok() {
                    (0xf1, 2)
                } else if (-(1 << 23)..(1 << 23)).contains(&v) {
                    (0xf2, 3)
                } else if i32::try_from(v).is_ok() {
                    (0xf3, 4)
                } else {
                    (0xf4, 8)
                };
                self.body.push(tag);
                self.body.extend_from_slice(&v.to_le_bytes()[..width]);
            }
            None => {
                let len = s.len();
                if len < 64 {
                    self.body.push(0x80 | len as u8);
                } else if len < 4096 {
                    self.body.push(0xe0 | (len >> 8) as u8);
                    self.body.push(len as u8);
                } else {
                    self.body.push(0xf0);
                    self.body.extend_from_slice(&(len as u32).to_le_bytes());
                }
                self.body.extend_from_slice(s);
            }
        }
        let l = self.body.len() - start;
        // The back length: 7 bits a byte, most significant first, high bit set on all but the
        // first byte written (which is the last one read backwards).
        let size = backlen_size(l);
        for i in (0..size).rev() {
            let b = ((l >> (7 * i)) & 0x7f) as u8;
            self.body.push(if i == size - 1 { b } else { b | 0x80 });
        }
        self.count += 1;
    }

    /// The listpack's bytes.
    pub fn finish(self) -> Vec<u8> {
        let total = 6 + self.body.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(0xffff) as u16).to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(0xff);
        out
    }
}

/// The integer Redis's `lpStringToInt64` sees in `s`: decimal text without sign oddities or
/// leading zeros, at most 20 bytes.
fn lp_integer(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let v: i64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (v.to_string().as_bytes() == s).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(walk: fn(&[u8], Sink<'_>) -> Result<u64>, blob: &[u8]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        walk(blob, &mut |v| {
            out.push(String::from_utf8_lossy(&v).into_owned());
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn listpacks_round_trip_every_encoding() {
        let values = [
            "0",
            "127",
            "128",
            "-1",
            "-4096",
            "4095",
            "4096",
            "-32768",
            "40000",
            "8388607",
            "-8388608",
            "2147483647",
            "2147483648",
            "-9223372036854775808",
            "",
            "a",
            "007",
            "+5",
        ];
        let long = "x".repeat(100);
        let longer = "y".repeat(5000);
        let mut lp = Listpack::new();
        let mut want: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        want.push(long);
        want.push(longer);
        for v in &want {
            lp.push(v.as_bytes());
        }
        let blob = lp.finish();
        assert_eq!(entries(listpack_each, &blob).ok(), Some(want));
    }

    #[test]
    fn damaged_blobs_are_errors() {
        let mut lp = Listpack::new();
        lp.push(b"hello");
        lp.push(b"12");
        let blob = lp.finish();
        for cut in 0..blob.len() {
            assert!(
                entries(listpack_each, &blob[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut wrong_count = blob.clone();
        wrong_count[4] = 3;
        assert!(entries(listpack_each, &wrong_count).is_err());
        assert!(entries(ziplist_each, &blob).is_err());
        assert!(entries(intset_each, &[2, 0, 0, 0, 2, 0, 0, 0, 1]).is_err());
    }

    #[test]
    fn ziplists_decode_strings_and_integers() {
        // A ziplist of "ab", 12 (immediate), 300 (int16) as Redis 6 writes it.
        let mut body = Vec::new();
        body.extend_from_slice(&[0, 0x02, b'a', b'b']);
        body.extend_from_slice(&[4, 0xfd]);
        body.extend_from_slice(&[2, 0xc0, 0x2c, 0x01]);
        let total = 10 + body.len() + 1;
        let mut blob = Vec::new();
        blob.extend_from_slice(&(total as u32).to_le_bytes());
        blob.extend_from_slice(&((10 + 6) as u32).to_le_bytes());
        blob.extend_from_slice(&3u16.to_le_bytes());
        blob.extend_from_slice(&body);
        blob.push(0xff);
        let got = entries(ziplist_each, &blob).ok();
        assert_eq!(got, Some(vec!["ab".into(), "12".into(), "300".into()]));
    }

    #[test]
    fn intsets_and_zipmaps_decode() {
        let mut blob = vec![2, 0, 0, 0, 2, 0, 0, 0];
        blob.extend_from_slice(&(-5i16).to_le_bytes());
        blob.extend_from_slice(&7i16.to_le_bytes());
        assert_eq!(
            entries(intset_each, &blob).ok(),
            Some(vec!["-5".into(), "7".into()])
        );
        let zipmap = [1, 1, b'f', 2, 1, b'v', b'w', 0, 0xff];
        assert_eq!(
            entries(zipmap_each, &zipmap).ok(),
            Some(vec!["f".into(), "vw".into()])
        );
    }
}
