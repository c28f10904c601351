//! What the SCAN family shares: the cursor as C's `strtoul` reads it, the MATCH / COUNT / TYPE
//! options, and the `[cursor, [items...]]` reply. Knows no family.

use bytes::Bytes;
use strata::num::is_c_space;
use strata_resp::Frame;

use crate::args::{int, is, Parsed};
use crate::errors::{self, err};

/// A collection-scan cursor as C's `strtoul` reads it (Redis's `parseScanCursorOrReply`).
pub fn cursor(a: &[u8]) -> Parsed<u64> {
    let invalid = || err(errors::INVALID_CURSOR);
    if a.first().is_some_and(|b| is_c_space(*b)) {
        return Err(invalid());
    }
    let (neg, digits) = match a.first() {
        Some(b'-') => (true, &a[1..]),
        Some(b'+') => (false, &a[1..]),
        _ => (false, a),
    };
    if digits.is_empty() {
        // No conversion: valid (0) only for an empty argument.
        return if a.is_empty() { Ok(0) } else { Err(invalid()) };
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(invalid());
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((c - b'0') as u64))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// MATCH / COUNT (and, for SCAN, TYPE) options of the SCAN family.
pub struct ScanOptions<'a> {
    /// MATCH pattern; `None` for none or `*` (which matches everything, the empty key included:
    /// Redis skips matching for it).
    pub pattern: Option<&'a [u8]>,
    /// COUNT (default 10).
    pub count: usize,
    /// TYPE name as given (SCAN only).
    pub type_name: Option<&'a [u8]>,
}

/// Parses the options of SCAN (`allow_type`) or HSCAN/SSCAN/ZSCAN from `argv[from..]`.
pub fn scan_options(argv: &[Bytes], from: usize, allow_type: bool) -> Parsed<ScanOptions<'_>> {
    let mut o = ScanOptions {
        pattern: None,
        count: 10,
        type_name: None,
    };
    let mut j = from;
    while j < argv.len() {
        let Some(value) = argv.get(j + 1).map(|v| &v[..]) else {
            return Err(err(errors::SYNTAX));
        };
        if is(&argv[j], "count") {
            let n = int(value)?;
            if n < 1 {
                return Err(err(errors::SYNTAX));
            }
            o.count = n.min(1 << 30) as usize;
        } else if is(&argv[j], "match") {
            o.pattern = if value == b"*" { None } else { Some(value) };
        } else if allow_type && is(&argv[j], "type") {
            o.type_name = Some(value);
        } else {
            return Err(err(errors::SYNTAX));
        }
        j += 2;
    }
    Ok(o)
}

/// MATCH and COUNT of HSCAN/SSCAN (argv from index 3).
pub fn options(argv: &[Bytes]) -> Parsed<(Option<&[u8]>, usize)> {
    let o = scan_options(argv, 3, false)?;
    Ok((o.pattern, o.count))
}

/// The reply of a collection scan: `[cursor, [items...]]`.
pub fn reply(cursor: u64, items: Vec<Frame>) -> Frame {
    Frame::Array(vec![Frame::bulk(cursor.to_string()), Frame::Array(items)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_cursors_parse_like_strtoul() {
        assert_eq!(cursor(b"0"), Ok(0));
        assert_eq!(cursor(b"+7"), Ok(7));
        assert_eq!(cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(cursor(b""), Ok(0));
        assert!(cursor(b"18446744073709551616").is_err());
        assert!(cursor(b" 1").is_err());
        assert!(cursor(b"1x").is_err());
    }
}
