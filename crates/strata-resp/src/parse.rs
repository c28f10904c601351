use bytes::Bytes;

use crate::{Frame, ProtocolError};

/// Deepest aggregate nesting accepted, so hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 128;

/// Initial capacity cap for aggregates, so an untrusted element count never sizes an allocation.
const MAX_PREALLOCATED_ELEMENTS: usize = 1024;

/// Parses one complete RESP2 or RESP3 value (any reply type) from the start of `buf`.
///
/// Returns the frame and the number of bytes it occupied, or `Ok(None)` if `buf` does not yet
/// hold a complete value. Supported types: `+ - : $ *` (RESP2, including `$-1` → [`Frame::Null`]
/// and `*-1` → [`Frame::NullArray`]) and `_ , # = ( ! % ~ >` (RESP3; a blob error `!` becomes
/// [`Frame::Error`], a verbatim string `=` becomes [`Frame::Verbatim`] without its 3-letter
/// format prefix). Attributes (`|`) are parsed and skipped: the value they annotate is returned
/// and the consumed length covers both. Streamed (`?`-length) types are not supported.
///
/// This is a client-side parser (tests, replication); servers read requests with
/// [`crate::RequestDecoder`].
pub fn parse_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, ProtocolError> {
    let mut parser = Parser { buf, pos: 0 };
    match parser.frame(0) {
        Ok(frame) => Ok(Some((frame, parser.pos))),
        Err(Fail::Incomplete) => Ok(None),
        Err(Fail::Invalid(e)) => Err(e),
    }
}

enum Fail {
    Incomplete,
    Invalid(ProtocolError),
}

fn invalid(msg: impl Into<String>) -> Fail {
    Fail::Invalid(ProtocolError(msg.into()))
}

struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn frame(&mut self, depth: usize) -> Result<Frame, Fail> {
        if depth > MAX_DEPTH {
            return Err(invalid("Protocol error: reply nesting too deep"));
        }
        let kind = *self.buf.get(self.pos).ok_or(Fail::Incomplete)?;
        self.pos += 1;
        Ok(match kind {
            b'+' => Frame::Simple(Bytes::copy_from_slice(self.line()?)),
            b'-' => Frame::Error(Bytes::copy_from_slice(self.line()?)),
            b':' => Frame::Integer(self.integer()?),
            b'(' => {
                let digits = self.line()?;
                let body = digits.strip_prefix(b"-").unwrap_or(digits);
                if body.is_empty() || !body.iter().all(u8::is_ascii_digit) {
                    return Err(invalid("Protocol error: invalid big number"));
                }
                Frame::BigNumber(Bytes::copy_from_slice(digits))
            }
            b'$' => match self.length()? {
                None => Frame::Null,
                Some(len) => Frame::Bulk(Bytes::copy_from_slice(self.blob(len)?)),
            },
            b'!' => {
                let len = self.required_length()?;
                Frame::Error(Bytes::copy_from_slice(self.blob(len)?))
            }
            b'=' => {
                let len = self.required_length()?;
                let blob = self.blob(len)?;
                match blob.get(3) {
                    Some(b':') => Frame::Verbatim(Bytes::copy_from_slice(&blob[4..])),
                    _ => return Err(invalid("Protocol error: invalid verbatim string")),
                }
            }
            b'*' => match self.length()? {
                None => Frame::NullArray,
                Some(n) => Frame::Array(self.elements(n, depth)?),
            },
            b'~' => {
                let n = self.required_length()?;
                Frame::Set(self.elements(n, depth)?)
            }
            b'>' => {
                let n = self.required_length()?;
                Frame::Push(self.elements(n, depth)?)
            }
            b'%' => {
                let n = self.required_length()?;
                Frame::Map(self.pairs(n, depth)?)
            }
            b'|' => {
                let n = self.required_length()?;
                self.pairs(n, depth)?;
                self.frame(depth + 1)?
            }
            b'_' => {
                if !self.line()?.is_empty() {
                    return Err(invalid("Protocol error: invalid null"));
                }
                Frame::Null
            }
            b'#' => match self.line()? {
                b"t" => Frame::Boolean(true),
                b"f" => Frame::Boolean(false),
                _ => return Err(invalid("Protocol error: invalid boolean")),
            },
            b',' => Frame::Double(parse_double(self.line()?)?),
            other => {
                return Err(invalid(format!(
                    "Protocol error: unknown reply type '{}'",
                    char::from(other)
                )))
            }
        })
    }

    /// The bytes up to the next CRLF, which is consumed.
    fn line(&mut self) -> Result<&'a [u8], Fail> {
        let rest = &self.buf[self.pos..];
        let cr = rest
            .iter()
            .position(|&b| b == b'\r')
            .ok_or(Fail::Incomplete)?;
        match rest.get(cr + 1) {
            None => Err(Fail::Incomplete),
            Some(b'\n') => {
                self.pos += cr + 2;
                Ok(&rest[..cr])
            }
            Some(_) => Err(invalid("Protocol error: expected CRLF")),
        }
    }

    fn integer(&mut self) -> Result<i64, Fail> {
        let line = self.line()?;
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| invalid("Protocol error: invalid integer"))
    }

    /// A length line: `None` for -1 (null), otherwise a non-negative length.
    fn length(&mut self) -> Result<Option<usize>, Fail> {
        match self.integer()? {
            -1 => Ok(None),
            n => usize::try_from(n)
                .ok()
                .filter(|n| n.checked_add(2).is_some())
                .map(Some)
                .ok_or_else(|| invalid("Protocol error: invalid length")),
        }
    }

    fn required_length(&mut self) -> Result<usize, Fail> {
        self.length()?
            .ok_or_else(|| invalid("Protocol error: invalid length"))
    }

    /// `len` bytes followed by CRLF.
    fn blob(&mut self, len: usize) -> Result<&'a [u8], Fail> {
        let rest = &self.buf[self.pos..];
        let end = len + 2; // `length` guarantees no overflow.
        if rest.len() < end {
            return Err(Fail::Incomplete);
        }
        if &rest[len..end] != b"\r\n" {
            return Err(invalid("Protocol error: expected CRLF after bulk data"));
        }
        self.pos += end;
        Ok(&rest[..len])
    }

    fn elements(&mut self, n: usize, depth: usize) -> Result<Vec<Frame>, Fail> {
        let mut items = Vec::with_capacity(n.min(MAX_PREALLOCATED_ELEMENTS));
        for _ in 0..n {
            items.push(self.frame(depth + 1)?);
        }
        Ok(items)
    }

    fn pairs(&mut self, n: usize, depth: usize) -> Result<Vec<(Frame, Frame)>, Fail> {
        let mut pairs = Vec::with_capacity(n.min(MAX_PREALLOCATED_ELEMENTS));
        for _ in 0..n {
            let key = self.frame(depth + 1)?;
            let value = self.frame(depth + 1)?;
            pairs.push((key, value));
        }
        Ok(pairs)
    }
}

fn parse_double(text: &[u8]) -> Result<f64, Fail> {
    match text {
        b"inf" | b"+inf" => Ok(f64::INFINITY),
        b"-inf" => Ok(f64::NEG_INFINITY),
        b"nan" | b"-nan" => Ok(f64::NAN),
        _ => std::str::from_utf8(text)
            .ok()
            .filter(|s| {
                s.bytes()
                    .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
            })
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or_else(|| invalid("Protocol error: invalid double")),
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::{encode, Protocol};

    fn parse_all(input: &[u8]) -> (Frame, usize) {
        parse_frame(input).expect("valid").expect("complete")
    }

    fn parse_one(input: &[u8]) -> Frame {
        let (frame, used) = parse_all(input);
        assert_eq!(used, input.len(), "consumed length for {input:?}");
        frame
    }

    fn parse_err(input: &[u8]) -> String {
        match parse_frame(input) {
            Err(e) => e.to_string(),
            Ok(other) => panic!("expected an error for {input:?}, got {other:?}"),
        }
    }

    fn sample_frames() -> Vec<Frame> {
        vec![
            Frame::ok(),
            Frame::error("ERR something bad"),
            Frame::Integer(-42),
            Frame::bulk("hello"),
            Frame::bulk(""),
            Frame::Null,
            Frame::Array(vec![]),
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Array(vec![Frame::bulk("nested"), Frame::Null]),
            ]),
            Frame::Map(vec![(Frame::bulk("k"), Frame::Double(2.5))]),
            Frame::Set(vec![Frame::bulk("a"), Frame::bulk("b")]),
            Frame::Double(0.1),
            Frame::Double(f64::NEG_INFINITY),
            Frame::Double(1e20),
            Frame::Boolean(true),
            Frame::Boolean(false),
            Frame::Verbatim(Bytes::from_static(b"some text")),
            Frame::BigNumber(Bytes::from_static(b"-123456789012345678901234567890")),
            Frame::Push(vec![
                Frame::bulk("message"),
                Frame::bulk("c"),
                Frame::bulk("m"),
            ]),
        ]
    }

    #[test]
    fn resp3_encoding_round_trips_through_parser() {
        for frame in sample_frames() {
            let mut out = BytesMut::new();
            encode(&frame, Protocol::Resp3, &mut out);
            assert_eq!(parse_one(&out), frame, "round trip of {frame:?}");
        }
    }

    #[test]
    fn every_strict_prefix_of_a_frame_is_incomplete() {
        for frame in sample_frames() {
            let mut out = BytesMut::new();
            encode(&frame, Protocol::Resp3, &mut out);
            for end in 0..out.len() {
                assert_eq!(
                    parse_frame(&out[..end]),
                    Ok(None),
                    "prefix of {frame:?} of length {end}"
                );
            }
        }
    }

    #[test]
    fn resp2_nulls_parse_to_distinct_null_frames() {
        assert_eq!(parse_one(b"$-1\r\n"), Frame::Null);
        assert_eq!(parse_one(b"*-1\r\n"), Frame::NullArray);
        assert_eq!(parse_one(b"_\r\n"), Frame::Null);
    }

    #[test]
    fn parsed_length_excludes_following_frames() {
        let (frame, used) = parse_all(b"+OK\r\n:1\r\n");
        assert_eq!(frame, Frame::ok());
        assert_eq!(used, 5);
    }

    #[test]
    fn blob_error_parses_as_error() {
        assert_eq!(
            parse_one(b"!21\r\nSYNTAX invalid syntax\r\n"),
            Frame::error("SYNTAX invalid syntax")
        );
    }

    #[test]
    fn verbatim_string_drops_format_prefix() {
        assert_eq!(
            parse_one(b"=15\r\ntxt:Some string\r\n"),
            Frame::Verbatim(Bytes::from_static(b"Some string"))
        );
        assert_eq!(
            parse_one(b"=7\r\nmkd:# a\r\n"),
            Frame::Verbatim(Bytes::from_static(b"# a"))
        );
        assert_eq!(
            parse_err(b"=2\r\nab\r\n"),
            "Protocol error: invalid verbatim string"
        );
    }

    #[test]
    fn attributes_are_skipped_and_counted() {
        let input =
            b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039123\r\n:9543892\r\n";
        let (frame, used) = parse_all(input);
        assert_eq!(
            frame,
            Frame::Array(vec![Frame::Integer(2039123), Frame::Integer(9543892)])
        );
        assert_eq!(used, input.len());
    }

    #[test]
    fn doubles_parse_special_values_and_exponents() {
        assert_eq!(parse_one(b",inf\r\n"), Frame::Double(f64::INFINITY));
        assert_eq!(parse_one(b",-inf\r\n"), Frame::Double(f64::NEG_INFINITY));
        assert!(matches!(parse_one(b",nan\r\n"), Frame::Double(d) if d.is_nan()));
        assert_eq!(parse_one(b",1e+20\r\n"), Frame::Double(1e20));
        assert_eq!(parse_one(b",-1.5\r\n"), Frame::Double(-1.5));
        assert_eq!(parse_err(b",abc\r\n"), "Protocol error: invalid double");
        assert_eq!(
            parse_err(b",infinity\r\n"),
            "Protocol error: invalid double"
        );
    }

    #[test]
    fn malformed_replies_are_errors() {
        assert_eq!(
            parse_err(b"?\r\n"),
            "Protocol error: unknown reply type '?'"
        );
        assert_eq!(parse_err(b":12a\r\n"), "Protocol error: invalid integer");
        assert_eq!(parse_err(b"$-2\r\n"), "Protocol error: invalid length");
        assert_eq!(parse_err(b"%-1\r\n"), "Protocol error: invalid length");
        assert_eq!(parse_err(b"#x\r\n"), "Protocol error: invalid boolean");
        assert_eq!(parse_err(b"_x\r\n"), "Protocol error: invalid null");
        assert_eq!(parse_err(b"(12x\r\n"), "Protocol error: invalid big number");
        assert_eq!(parse_err(b"+OK\rX"), "Protocol error: expected CRLF");
        assert_eq!(
            parse_err(b"$3\r\nfooXY"),
            "Protocol error: expected CRLF after bulk data"
        );
    }

    #[test]
    fn huge_declared_lengths_wait_for_data_without_allocating() {
        assert_eq!(parse_frame(b"$9223372036854775805\r\nabc"), Ok(None));
        assert_eq!(parse_frame(b"*9223372036854775807\r\n:1\r\n"), Ok(None));
    }

    #[test]
    fn deeply_nested_reply_is_refused_instead_of_overflowing_the_stack() {
        let input = b"*1\r\n".repeat(100_000);
        assert_eq!(parse_err(&input), "Protocol error: reply nesting too deep");
    }
}
