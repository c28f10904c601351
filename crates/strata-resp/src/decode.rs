use std::mem;

use bytes::{Buf, Bytes, BytesMut};

use crate::ProtocolError;

const INVALID_MULTIBULK_LENGTH: &str = "Protocol error: invalid multibulk length";
const INVALID_BULK_LENGTH: &str = "Protocol error: invalid bulk length";
const UNBALANCED_QUOTES: &str = "Protocol error: unbalanced quotes in request";
const TOO_BIG_MBULK_COUNT: &str = "Protocol error: too big mbulk count string";
const TOO_BIG_BULK_COUNT: &str = "Protocol error: too big bulk count string";
const TOO_BIG_INLINE: &str = "Protocol error: too big inline request";

/// Arguments at least this long are split off the read buffer without copying; shorter ones
/// are copied so that a small argument kept around (a channel name, a client name) does not pin
/// a whole read buffer in memory. Same threshold as Redis's `PROTO_MBULK_BIG_ARG`.
const ZERO_COPY_MIN_LEN: usize = 32 * 1024;

/// Initial argv capacity is capped so an untrusted multibulk count never sizes an allocation.
const MAX_PREALLOCATED_ARGS: u64 = 1024;

/// Limits the [`RequestDecoder`] enforces, mirroring Redis's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecoderLimits {
    /// Largest accepted bulk string (`proto-max-bulk-len`); default 512 MiB.
    pub proto_max_bulk_len: u64,
    /// Longest inline request line, and longest `*<count>` / `$<len>` line, accepted while no
    /// line terminator has arrived (Redis's `PROTO_INLINE_MAX_SIZE`); default 64 KiB.
    pub max_inline_len: usize,
    /// Largest accepted multibulk argument count; default `i32::MAX`.
    pub max_multibulk_len: i64,
}

impl Default for DecoderLimits {
    fn default() -> Self {
        DecoderLimits {
            proto_max_bulk_len: 512 * 1024 * 1024,
            max_inline_len: 64 * 1024,
            max_multibulk_len: i32::MAX as i64,
        }
    }
}

/// Streaming decoder for client requests: RESP multibulk arrays of bulk strings
/// (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and inline commands (`GET k\r\n`, telnet style), with
/// Redis 7's exact validation and error texts.
///
/// The decoder is incremental: it removes the bytes it has parsed from the buffer and keeps its
/// progress (arguments read so far, the pending bulk length, how far it already searched for a
/// line end), so a request arriving in many small reads is never re-parsed from the start.
/// Always pass the same buffer, appending newly read bytes at its end. Untrusted lengths are
/// validated against [`DecoderLimits`] before anything is sized from them.
///
/// After an error the stream cannot be resynchronised: reply with
/// [`ProtocolError::to_frame`] and close the connection, as Redis does.
#[derive(Debug)]
pub struct RequestDecoder {
    limits: DecoderLimits,
    /// Arguments still to read in the current multibulk request; 0 between requests.
    multibulk_left: u64,
    /// Length of the argument being read, once its `$<len>` line has been parsed.
    bulk_len: Option<usize>,
    /// Arguments of the current multibulk request read so far.
    argv: Vec<Bytes>,
    /// Memory held by `argv`: argument bytes plus one `Bytes` handle each.
    argv_bytes: usize,
    /// Bytes at the front of the buffer already searched for a line terminator (without
    /// success), so the next search resumes there.
    scanned: usize,
}

enum Step {
    NeedMore,
    Continue,
    Done(Vec<Bytes>),
}

impl Default for RequestDecoder {
    fn default() -> Self {
        RequestDecoder::new(DecoderLimits::default())
    }
}

impl RequestDecoder {
    /// A decoder waiting for the start of a request.
    pub fn new(limits: DecoderLimits) -> Self {
        RequestDecoder {
            limits,
            multibulk_left: 0,
            bulk_len: None,
            argv: Vec::new(),
            argv_bytes: 0,
            scanned: 0,
        }
    }

    /// Replaces the limits (e.g. after `CONFIG SET proto-max-bulk-len`); they apply to the
    /// lengths parsed from now on.
    pub fn set_limits(&mut self, limits: DecoderLimits) {
        self.limits = limits;
    }

    /// The limits in force.
    pub fn limits(&self) -> DecoderLimits {
        self.limits
    }

    /// Memory held by the arguments of the request being read (already taken out of the
    /// buffer), so a server can count them with the buffer against its query buffer limit: a
    /// request of many large arguments otherwise grows without the buffer ever growing.
    pub fn pending_bytes(&self) -> usize {
        self.argv_bytes
    }

    /// Whether part of a request has been consumed from the buffer but the request is not
    /// complete yet.
    pub fn is_mid_request(&self) -> bool {
        self.multibulk_left > 0
    }

    /// Decodes the next complete request from `buf` and returns its arguments.
    ///
    /// Returns `Ok(None)` when more input is needed (incomplete input is never an error); the
    /// bytes parsed so far are removed from `buf` and remembered. Requests with no arguments
    /// (an empty or blank inline line, `*0`, `*-1`) are skipped, as Redis does. Call again
    /// until it returns `Ok(None)` to drain a pipeline.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        // What has been parsed is only counted in `pos` and taken out of `buf` once, on the
        // way out: one `advance` per request instead of three per argument.
        let mut pos = 0;
        let result = self.decode_at(buf, &mut pos);
        if pos > 0 {
            buf.advance(pos);
            self.scanned = self.scanned.saturating_sub(pos);
        }
        if result.is_err() {
            self.reset();
        }
        result
    }

    /// [`RequestDecoder::decode`] of `buf` from `pos` on, moving `pos` past what it parses
    /// (`buf` itself only changes when a big argument is split off it). `self.scanned` counts
    /// from the start of `buf`.
    fn decode_at(
        &mut self,
        buf: &mut BytesMut,
        pos: &mut usize,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            let step = if self.multibulk_left > 0 {
                self.read_multibulk_args(buf, pos)?
            } else {
                match buf.get(*pos) {
                    None => return Ok(None),
                    Some(b'*') => self.read_multibulk_count(buf, pos)?,
                    Some(_) => self.read_inline(buf, pos)?,
                }
            };
            match step {
                Step::NeedMore => return Ok(None),
                Step::Continue => continue,
                Step::Done(argv) => return Ok(Some(argv)),
            }
        }
    }

    fn reset(&mut self) {
        self.multibulk_left = 0;
        self.bulk_len = None;
        self.argv = Vec::new();
        self.argv_bytes = 0;
        self.scanned = 0;
    }

    /// Position in `buf` of the first `needle` at or after `from`, resuming where the last
    /// failed search stopped.
    fn find(&mut self, buf: &[u8], from: usize, needle: u8) -> Option<usize> {
        let start = self.scanned.max(from).min(buf.len());
        match buf[start..].iter().position(|&b| b == needle) {
            Some(i) => Some(start + i),
            None => {
                self.scanned = buf.len();
                None
            }
        }
    }

    /// Finds the `\r` ending the `*<count>` or `$<len>` line that starts at `from`, once the
    /// byte after it (assumed to be `\n`, as Redis does) has arrived too. Errors with `too_big`
    /// when no `\r` is found in more than `max_inline_len` bytes.
    fn find_count_line(
        &mut self,
        buf: &[u8],
        from: usize,
        too_big: &str,
    ) -> Result<Option<usize>, ProtocolError> {
        match self.find(buf, from, b'\r') {
            None if buf.len() - from > self.limits.max_inline_len => {
                Err(ProtocolError::new(too_big))
            }
            None => Ok(None),
            Some(cr) if cr + 2 > buf.len() => {
                self.scanned = cr;
                Ok(None)
            }
            Some(cr) => Ok(Some(cr)),
        }
    }

    fn read_multibulk_count(
        &mut self,
        buf: &BytesMut,
        pos: &mut usize,
    ) -> Result<Step, ProtocolError> {
        let Some(cr) = self.find_count_line(buf, *pos, TOO_BIG_MBULK_COUNT)? else {
            return Ok(Step::NeedMore);
        };
        let count = parse_int(&buf[*pos + 1..cr])
            .filter(|&n| n <= self.limits.max_multibulk_len)
            .ok_or_else(|| ProtocolError::new(INVALID_MULTIBULK_LENGTH))?;
        *pos = cr + 2;
        if count <= 0 {
            return Ok(Step::Continue);
        }
        let count = count.unsigned_abs();
        self.multibulk_left = count;
        self.argv = Vec::with_capacity(count.min(MAX_PREALLOCATED_ARGS) as usize);
        Ok(Step::Continue)
    }

    fn read_multibulk_args(
        &mut self,
        buf: &mut BytesMut,
        pos: &mut usize,
    ) -> Result<Step, ProtocolError> {
        while self.multibulk_left > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let Some(cr) = self.find_count_line(buf, *pos, TOO_BIG_BULK_COUNT)? else {
                        return Ok(Step::NeedMore);
                    };
                    if buf[*pos] != b'$' {
                        return Err(ProtocolError::new(format!(
                            "Protocol error: expected '$', got '{}'",
                            printable(buf[*pos])
                        )));
                    }
                    let len = self
                        .parse_bulk_len(&buf[*pos + 1..cr])
                        .ok_or_else(|| ProtocolError::new(INVALID_BULK_LENGTH))?;
                    *pos = cr + 2;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // parse_bulk_len guarantees `len + 2` does not overflow. The two bytes after the
            // data are skipped without checking them, like Redis.
            if buf.len() - *pos < len + 2 {
                return Ok(Step::NeedMore);
            }
            let arg = if len >= ZERO_COPY_MIN_LEN {
                buf.advance(*pos);
                self.scanned = 0;
                *pos = 2;
                buf.split_to(len).freeze()
            } else {
                let start = *pos;
                *pos += len + 2;
                Bytes::copy_from_slice(&buf[start..start + len])
            };
            self.argv_bytes += arg.len() + mem::size_of::<Bytes>();
            self.argv.push(arg);
            self.bulk_len = None;
            self.multibulk_left -= 1;
        }
        self.argv_bytes = 0;
        Ok(Step::Done(mem::take(&mut self.argv)))
    }

    fn parse_bulk_len(&self, digits: &[u8]) -> Option<usize> {
        let len = u64::try_from(parse_int(digits)?).ok()?;
        if len > self.limits.proto_max_bulk_len {
            return None;
        }
        let len = usize::try_from(len).ok()?;
        len.checked_add(2)?;
        Some(len)
    }

    fn read_inline(&mut self, buf: &BytesMut, pos: &mut usize) -> Result<Step, ProtocolError> {
        let Some(nl) = self.find(buf, *pos, b'\n') else {
            if buf.len() - *pos > self.limits.max_inline_len {
                return Err(ProtocolError::new(TOO_BIG_INLINE));
            }
            return Ok(Step::NeedMore);
        };
        let end = if nl > *pos && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        let args = split_inline_args(&buf[*pos..end])
            .ok_or_else(|| ProtocolError::new(UNBALANCED_QUOTES))?;
        *pos = nl + 1;
        if args.is_empty() {
            Ok(Step::Continue)
        } else {
            Ok(Step::Done(args))
        }
    }
}

/// The byte named in "expected '$', got 'X'". Redis writes the raw byte but turns line breaks
/// into spaces; bytes above 0x7f are shown as the Latin-1 character of the same value.
fn printable(b: u8) -> char {
    match b {
        b'\r' | b'\n' => ' ',
        _ => char::from(b),
    }
}

/// Parses a signed 64-bit decimal integer with Redis's strict `string2ll` rules: optional `-`,
/// no `+`, no leading zeros (except `0` itself), no `-0`, no spaces, at most 20 characters.
pub fn parse_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    if negative {
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    }
}

/// Appends `s` quoted as Redis's `sdscatrepr` does (MONITOR lines, CONFIG REWRITE, ...): a
/// double-quoted string with `\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b` escaped, other printable
/// ASCII as is, and every other byte as `\xHH`; `split_inline_args` reads it back unchanged.
pub fn repr_into(out: &mut String, s: &[u8]) {
    out.push('"');
    for &b in s {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
}

/// Strips the given bytes from both ends, as Redis's `sdstrim` (configuration and ACL file
/// lines).
pub fn trim<'a>(mut bytes: &'a [u8], strip: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = bytes {
        if !strip.contains(first) {
            break;
        }
        bytes = rest;
    }
    while let [rest @ .., last] = bytes {
        if !strip.contains(last) {
            break;
        }
        bytes = rest;
    }
    bytes
}

/// Splits an inline request line into arguments exactly like Redis's `sdssplitargs`:
/// arguments are separated by whitespace; `"..."` supports the escapes `\n \r \t \b \a \\ \"`
/// and `\xHH`; `'...'` supports only `\'`; a closing quote must be followed by whitespace or
/// the end of the line. Returns `None` for unbalanced quotes. Like the C original, a NUL byte
/// ends the line.
pub fn split_inline_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    // The C code reads a NUL terminator past the end; `at` mimics that.
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_c_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        let mut done = false;
        while !done {
            let c = at(p);
            if in_double {
                if c == b'\\' && at(p + 1) == b'x' && is_hex(at(p + 2)) && is_hex(at(p + 3)) {
                    current.push(hex_value(at(p + 2)) * 16 + hex_value(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => current.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        args.push(Bytes::from(current));
    }
}

/// C's `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        b'A'..=b'F' => b - b'A' + 10,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoder() -> RequestDecoder {
        RequestDecoder::new(DecoderLimits::default())
    }

    fn args(items: &[&[u8]]) -> Vec<Bytes> {
        items.iter().map(|a| Bytes::copy_from_slice(a)).collect()
    }

    /// Decodes every complete request in `input` (fed at once).
    fn decode_all(input: &[u8]) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
        let mut dec = decoder();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(argv) = dec.decode(&mut buf)? {
            out.push(argv);
        }
        Ok(out)
    }

    fn decode_err(input: &[u8]) -> String {
        match decode_all(input) {
            Err(e) => e.to_string(),
            Ok(reqs) => panic!("expected an error, decoded {reqs:?}"),
        }
    }

    fn split(line: &str) -> Option<Vec<Bytes>> {
        split_inline_args(line.as_bytes())
    }

    #[test]
    fn multibulk_request_is_decoded_and_consumed() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n"[..]);
        let argv = dec.decode(&mut buf).expect("valid").expect("complete");
        assert_eq!(argv, args(&[b"SET", b"k", b"hello"]));
        assert!(buf.is_empty());
        assert_eq!(dec.decode(&mut buf), Ok(None));
    }

    #[test]
    fn empty_buffer_needs_more_input() {
        let mut buf = BytesMut::new();
        assert_eq!(decoder().decode(&mut buf), Ok(None));
    }

    #[test]
    fn bulk_strings_are_binary_safe() {
        let reqs = decode_all(b"*2\r\n$4\r\nECHO\r\n$6\r\na\r\n\0\xffb\r\n").expect("valid");
        assert_eq!(reqs, vec![args(&[b"ECHO", b"a\r\n\0\xffb"])]);
    }

    #[test]
    fn empty_bulk_string_is_an_empty_argument() {
        let reqs = decode_all(b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n").expect("valid");
        assert_eq!(reqs, vec![args(&[b"GET", b""])]);
    }

    #[test]
    fn request_fed_byte_by_byte_is_decoded_once_complete() {
        let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\n0123456789\r\nPING\r\n";
        let mut dec = decoder();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for &b in input.iter() {
            buf.extend_from_slice(&[b]);
            while let Some(argv) = dec.decode(&mut buf).expect("valid") {
                got.push(argv);
            }
        }
        assert_eq!(
            got,
            vec![args(&[b"SET", b"key", b"0123456789"]), args(&[b"PING"])]
        );
        assert!(buf.is_empty());
        assert!(!dec.is_mid_request());
    }

    #[test]
    fn bulk_split_across_reads_is_reassembled() {
        let value = vec![b'x'; 100_000];
        let mut input = b"*2\r\n$4\r\nECHO\r\n$100000\r\n".to_vec();
        input.extend_from_slice(&value);
        input.extend_from_slice(b"\r\n");
        let mut dec = decoder();
        let mut buf = BytesMut::new();
        let mut result = None;
        for chunk in input.chunks(1000) {
            assert!(result.is_none(), "decoded before the last chunk");
            buf.extend_from_slice(chunk);
            result = dec.decode(&mut buf).expect("valid");
        }
        let argv = result.expect("complete after last chunk");
        assert_eq!(argv.len(), 2);
        assert_eq!(argv[1].len(), 100_000);
        assert!(argv[1].iter().all(|&b| b == b'x'));
    }

    #[test]
    fn partial_request_progress_is_kept_not_reparsed() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhel"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(None));
        // Everything up to the pending bulk's data has been consumed and remembered.
        assert_eq!(&buf[..], b"hel");
        assert!(dec.is_mid_request());
        buf.extend_from_slice(b"lo\r\n");
        let argv = dec.decode(&mut buf).expect("valid").expect("complete");
        assert_eq!(argv, args(&[b"SET", b"k", b"hello"]));
        assert!(!dec.is_mid_request());
    }

    #[test]
    fn pipeline_of_many_requests_in_one_buffer_is_drained_in_order() {
        let mut input = Vec::new();
        for i in 0..1000 {
            let key = format!("key:{i}");
            input.extend_from_slice(
                format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes(),
            );
            input.extend_from_slice(format!("INCR {key}\r\n").as_bytes());
        }
        let reqs = decode_all(&input).expect("valid");
        assert_eq!(reqs.len(), 2000);
        for (i, pair) in reqs.chunks(2).enumerate() {
            let key = format!("key:{i}");
            assert_eq!(pair[0], args(&[b"GET", key.as_bytes()]));
            assert_eq!(pair[1], args(&[b"INCR", key.as_bytes()]));
        }
    }

    #[test]
    fn pipeline_fed_in_odd_sized_chunks_matches_single_feed() {
        let mut input = Vec::new();
        for i in 0..200 {
            let val = "v".repeat(i % 37);
            input.extend_from_slice(
                format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n{val}\r\n", val.len()).as_bytes(),
            );
            input.extend_from_slice(b"ping \"a b\"\r\n\r\n*0\r\n");
        }
        let expected = decode_all(&input).expect("valid");
        assert_eq!(expected.len(), 400);
        for chunk_len in [1, 2, 3, 7, 13, 64, 1000] {
            let mut dec = decoder();
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            for chunk in input.chunks(chunk_len) {
                buf.extend_from_slice(chunk);
                while let Some(argv) = dec.decode(&mut buf).expect("valid") {
                    got.push(argv);
                }
            }
            assert_eq!(got, expected, "chunk length {chunk_len}");
        }
    }

    #[test]
    fn pipelined_requests_take_exactly_their_bytes_and_a_partial_line_resumes() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(Some(args(&[b"PING"]))));
        assert_eq!(&buf[..], b"*2\r\n$4\r\nECHO\r\n$1");
        assert_eq!(dec.decode(&mut buf), Ok(None));
        // The count, ECHO and the unfinished `$1` line: only the line stays.
        assert_eq!(&buf[..], b"$1");
        buf.extend_from_slice(b"0");
        assert_eq!(dec.decode(&mut buf), Ok(None));
        assert_eq!(&buf[..], b"$10");
        buf.extend_from_slice(b"\r\n0123456789\r\nGET k\r\n");
        assert_eq!(
            dec.decode(&mut buf),
            Ok(Some(args(&[b"ECHO", b"0123456789"])))
        );
        assert_eq!(&buf[..], b"GET k\r\n");
        assert_eq!(dec.decode(&mut buf), Ok(Some(args(&[b"GET", b"k"]))));
        assert!(buf.is_empty());
    }

    #[test]
    fn large_arguments_are_split_off_without_copying() {
        let mut input = b"*1\r\n$40000\r\n".to_vec();
        input.resize(input.len() + 40_000, b'z');
        input.extend_from_slice(b"\r\n");
        let mut buf = BytesMut::from(&input[..]);
        let data_ptr = buf[b"*1\r\n$40000\r\n".len()..].as_ptr();
        let argv = decoder()
            .decode(&mut buf)
            .expect("valid")
            .expect("complete");
        assert_eq!(argv[0].as_ptr(), data_ptr);
    }

    #[test]
    fn empty_and_negative_multibulk_counts_are_skipped() {
        let reqs = decode_all(b"*0\r\n*-1\r\n*-5\r\n*1\r\n$4\r\nPING\r\n").expect("valid");
        assert_eq!(reqs, vec![args(&[b"PING"])]);
    }

    #[test]
    fn empty_inline_lines_are_skipped() {
        let reqs = decode_all(b"\r\n\n   \r\n\t\nPING\r\n").expect("valid");
        assert_eq!(reqs, vec![args(&[b"PING"])]);
        let mut buf = BytesMut::from(&b"\r\n\r\n"[..]);
        assert_eq!(decoder().decode(&mut buf), Ok(None));
        assert!(buf.is_empty());
    }

    #[test]
    fn inline_request_is_split_on_whitespace() {
        let reqs = decode_all(b"SET  key\tvalue \r\nGET key\n").expect("valid");
        assert_eq!(
            reqs,
            vec![args(&[b"SET", b"key", b"value"]), args(&[b"GET", b"key"])]
        );
    }

    #[test]
    fn inline_request_waits_for_newline() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"PING\r"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(None));
        assert_eq!(&buf[..], b"PING\r");
        buf.extend_from_slice(b"\n");
        assert_eq!(dec.decode(&mut buf), Ok(Some(args(&[b"PING"]))));
    }

    #[test]
    fn non_numeric_multibulk_count_is_invalid_multibulk_length() {
        assert_eq!(
            decode_err(b"*x\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            decode_err(b"*-0\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            decode_err(b"*+1\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            decode_err(b"*1 \r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            decode_err(b"*\r\n"),
            "Protocol error: invalid multibulk length"
        );
    }

    #[test]
    fn multibulk_count_over_limit_is_invalid_multibulk_length() {
        assert_eq!(
            decode_err(b"*2147483648\r\n"),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            decode_err(b"*99999999999999999999999\r\n"),
            "Protocol error: invalid multibulk length"
        );
        let mut dec = RequestDecoder::new(DecoderLimits {
            max_multibulk_len: 3,
            ..DecoderLimits::default()
        });
        let mut buf = BytesMut::from(&b"*4\r\n"[..]);
        assert_eq!(
            dec.decode(&mut buf).map_err(|e| e.to_string()),
            Err("Protocol error: invalid multibulk length".to_string())
        );
    }

    #[test]
    fn huge_multibulk_count_does_not_preallocate() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"*2147483647\r\n$1\r\na\r\n"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(None));
        assert!(dec.argv.capacity() <= MAX_PREALLOCATED_ARGS as usize);
        assert_eq!(dec.argv.len(), 1);
    }

    #[test]
    fn bad_bulk_length_is_invalid_bulk_length() {
        for input in [
            &b"*1\r\n$-1\r\n"[..],
            b"*1\r\n$abc\r\n",
            b"*1\r\n$\r\n",
            b"*1\r\n$01\r\n",
            b"*1\r\n$1.5\r\n",
        ] {
            assert_eq!(
                decode_err(input),
                "Protocol error: invalid bulk length",
                "{input:?}"
            );
        }
    }

    #[test]
    fn oversized_bulk_length_is_refused_before_allocation() {
        let mut dec = decoder();
        // No data follows: the length alone must be refused, not waited for.
        let mut buf = BytesMut::from(&b"*1\r\n$99999999999\r\n"[..]);
        assert_eq!(
            dec.decode(&mut buf).map_err(|e| e.to_string()),
            Err("Protocol error: invalid bulk length".to_string())
        );
        assert!(buf.capacity() < 1024);

        let mut dec = RequestDecoder::new(DecoderLimits {
            proto_max_bulk_len: 10,
            ..DecoderLimits::default()
        });
        let mut buf = BytesMut::from(&b"*1\r\n$10\r\n0123456789\r\n*1\r\n$11\r\n"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(Some(args(&[b"0123456789"]))));
        assert_eq!(
            dec.decode(&mut buf).map_err(|e| e.to_string()),
            Err("Protocol error: invalid bulk length".to_string())
        );
    }

    #[test]
    fn set_limits_applies_to_later_lengths() {
        let mut dec = decoder();
        dec.set_limits(DecoderLimits {
            proto_max_bulk_len: 2,
            ..DecoderLimits::default()
        });
        assert_eq!(dec.limits().proto_max_bulk_len, 2);
        let mut buf = BytesMut::from(&b"*1\r\n$3\r\nabc\r\n"[..]);
        assert_eq!(
            dec.decode(&mut buf).map_err(|e| e.to_string()),
            Err("Protocol error: invalid bulk length".to_string())
        );
    }

    #[test]
    fn non_dollar_argument_is_expected_dollar_error() {
        assert_eq!(
            decode_err(b"*1\r\n:1\r\n"),
            "Protocol error: expected '$', got ':'"
        );
        assert_eq!(
            decode_err(b"*2\r\n$1\r\na\r\nfoo\r\n"),
            "Protocol error: expected '$', got 'f'"
        );
        // An empty line: Redis shows the '\r' as a space.
        assert_eq!(
            decode_err(b"*1\r\n\r\n"),
            "Protocol error: expected '$', got ' '"
        );
    }

    #[test]
    fn expected_dollar_is_only_reported_once_the_line_is_complete() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"*1\r\nfoo"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(None));
    }

    #[test]
    fn unterminated_multibulk_count_over_64k_is_too_big_mbulk_count_string() {
        let mut input = b"*".to_vec();
        input.resize(input.len() + 64 * 1024, b'1');
        let mut dec = decoder();
        let mut buf = BytesMut::from(&input[..]);
        // Exactly 64 KiB + 1 bytes without '\r' is one too many.
        assert_eq!(
            dec.decode(&mut buf).map_err(|e| e.to_string()),
            Err("Protocol error: too big mbulk count string".to_string())
        );
        let mut buf = BytesMut::from(&input[..64 * 1024]);
        assert_eq!(decoder().decode(&mut buf), Ok(None));
    }

    #[test]
    fn unterminated_bulk_count_over_64k_is_too_big_bulk_count_string() {
        let mut input = b"*1\r\n$".to_vec();
        input.resize(input.len() + 70_000, b'1');
        assert_eq!(
            decode_err(&input),
            "Protocol error: too big bulk count string"
        );
    }

    #[test]
    fn inline_line_without_newline_over_64k_is_too_big_inline_request() {
        let input = vec![b'p'; 64 * 1024 + 1];
        assert_eq!(decode_err(&input), "Protocol error: too big inline request");
        let mut buf = BytesMut::from(&input[..64 * 1024]);
        assert_eq!(decoder().decode(&mut buf), Ok(None));
    }

    #[test]
    fn inline_line_longer_than_limit_is_accepted_when_complete() {
        // Like Redis, the limit applies only while no newline has arrived.
        let mut input = b"ECHO ".to_vec();
        input.resize(input.len() + 70_000, b'a');
        input.extend_from_slice(b"\r\n");
        let reqs = decode_all(&input).expect("valid");
        assert_eq!(reqs[0][1].len(), 70_000);
    }

    #[test]
    fn too_big_inline_limit_is_configurable() {
        let mut dec = RequestDecoder::new(DecoderLimits {
            max_inline_len: 8,
            ..DecoderLimits::default()
        });
        let mut buf = BytesMut::from(&b"PING PING"[..]);
        assert_eq!(
            dec.decode(&mut buf).map_err(|e| e.to_string()),
            Err("Protocol error: too big inline request".to_string())
        );
    }

    #[test]
    fn unbalanced_quotes_in_inline_request_is_an_error() {
        for input in [
            &b"\"foo\r\n"[..],
            b"set \"a\"b c\r\n",
            b"set 'a'b c\r\n",
            b"echo 'abc\r\n",
            b"echo \"abc\\\"\r\n",
        ] {
            assert_eq!(
                decode_err(input),
                "Protocol error: unbalanced quotes in request",
                "{input:?}"
            );
        }
    }

    #[test]
    fn decoder_recovers_a_clean_state_after_an_error() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"*2\r\n$1\r\na\r\n:"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(None));
        buf.extend_from_slice(b"1\r\n");
        assert!(dec.decode(&mut buf).is_err());
        assert!(!dec.is_mid_request());
        let mut fresh = BytesMut::from(&b"PING\r\n"[..]);
        assert_eq!(dec.decode(&mut fresh), Ok(Some(args(&[b"PING"]))));
    }

    #[test]
    fn bytes_after_bulk_data_are_skipped_unchecked_like_redis() {
        let reqs = decode_all(b"*2\r\n$3\r\nfoo\r\n$3\r\nbarXY").expect("valid");
        assert_eq!(reqs, vec![args(&[b"foo", b"bar"])]);
    }

    #[test]
    fn protocol_error_reply_is_err_prefixed() {
        let err = ProtocolError::new(INVALID_BULK_LENGTH);
        assert_eq!(
            crate::encode_to_vec(&err.to_frame(), crate::Protocol::Resp2),
            b"-ERR Protocol error: invalid bulk length\r\n"
        );
    }

    #[test]
    fn inline_double_quotes_support_escapes() {
        assert_eq!(
            split(r#"set "a b" "\n\r\t\b\a\\\"\x41\x4a\xff\q""#),
            Some(args(&[b"set", b"a b", b"\n\r\t\x08\x07\\\"AJ\xffq"]))
        );
        // An incomplete \x escape is a plain 'x'.
        assert_eq!(split(r#""\x4" "\xzz""#), Some(args(&[b"x4", b"xzz"])));
    }

    #[test]
    fn inline_single_quotes_only_escape_single_quote() {
        assert_eq!(
            split(r#"'it\'s' 'a\nb' 'x"y'"#),
            Some(args(&[b"it's", b"a\\nb", b"x\"y"]))
        );
    }

    #[test]
    fn inline_empty_quotes_are_empty_arguments() {
        assert_eq!(split(r#"set k """#), Some(args(&[b"set", b"k", b""])));
        assert_eq!(split("''"), Some(args(&[b""])));
    }

    #[test]
    fn inline_quote_inside_token_starts_quoted_section() {
        assert_eq!(split(r#"foo"bar baz""#), Some(args(&[b"foobar baz"])));
    }

    #[test]
    fn inline_closing_quote_must_be_followed_by_space_or_end() {
        assert_eq!(split(r#""a"b"#), None);
        assert_eq!(split("'a'b"), None);
        assert_eq!(split("\"a\"\tb"), Some(args(&[b"a", b"b"])));
        assert_eq!(split("\"a\"\x0bb"), Some(args(&[b"a", b"b"])));
    }

    #[test]
    fn inline_unterminated_quotes_are_unbalanced() {
        assert_eq!(split("\"abc"), None);
        assert_eq!(split("'abc"), None);
        assert_eq!(split("\"abc\\"), None);
    }

    #[test]
    fn inline_whitespace_rules_match_sdssplitargs() {
        assert_eq!(split("  a \t b  "), Some(args(&[b"a", b"b"])));
        assert_eq!(split("a\rb"), Some(args(&[b"a", b"b"])));
        // Vertical tab and form feed are skipped between tokens but do not end one.
        assert_eq!(split("\x0ba\x0bb"), Some(args(&[b"a\x0bb"])));
        assert_eq!(split(""), Some(vec![]));
        assert_eq!(split("   "), Some(vec![]));
    }

    #[test]
    fn inline_nul_byte_ends_the_line() {
        assert_eq!(split_inline_args(b"a b\0c d"), Some(args(&[b"a", b"b"])));
        assert_eq!(split_inline_args(b"\"a\0\""), None);
    }

    #[test]
    fn parse_int_follows_string2ll() {
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"123"), Some(123));
        assert_eq!(parse_int(b"-123"), Some(-123));
        assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999",
            b"100000000000000000000",
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn pending_bytes_count_the_arguments_of_an_unfinished_request() {
        let mut dec = decoder();
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n"[..]);
        assert_eq!(dec.decode(&mut buf), Ok(None));
        assert!(buf.is_empty());
        let handle = std::mem::size_of::<Bytes>();
        assert_eq!(dec.pending_bytes(), 3 + 5 + 2 * handle);
        buf.extend_from_slice(b"$1\r\nv\r\n");
        assert!(dec.decode(&mut buf).expect("valid").is_some());
        assert_eq!(dec.pending_bytes(), 0);
    }
}
