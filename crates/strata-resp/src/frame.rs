use bytes::Bytes;

/// The protocol version a connection speaks, chosen with `HELLO`. It only affects how a
/// [`Frame`] is encoded; commands build the same frames for both versions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// RESP2, the default for new connections.
    #[default]
    Resp2,
    /// RESP3 (`HELLO 3`): adds nulls, maps, sets, doubles, booleans, verbatim strings, big
    /// numbers and pushes as distinct types.
    Resp3,
}

impl Protocol {
    /// The protocol for a `HELLO` version number (2 or 3), or `None` for any other number.
    pub fn from_version(version: i64) -> Option<Protocol> {
        match version {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => None,
        }
    }

    /// The version number `HELLO` reports: 2 or 3.
    pub fn version(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// One RESP value: a reply built by a command, or a value parsed by [`crate::parse_frame`].
///
/// Every variant can be written in both protocols; the RESP3-only types fall back to their
/// RESP2 equivalent (see each variant and [`crate::encode`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// Simple string: `+OK\r\n`.
    Simple(Bytes),
    /// Error reply: the full text without the leading `-` and the CRLF, including the error code,
    /// e.g. `ERR unknown command` or `WRONGTYPE Operation against a key ...`.
    Error(Bytes),
    /// Integer: `:42\r\n`.
    Integer(i64),
    /// Bulk string: `$3\r\nfoo\r\n`.
    Bulk(Bytes),
    /// Null bulk string. RESP2: `$-1\r\n`; RESP3: `_\r\n`.
    Null,
    /// Null array. RESP2: `*-1\r\n`; RESP3: `_\r\n`.
    NullArray,
    /// Array: `*<n>\r\n` followed by the elements.
    Array(Vec<Frame>),
    /// Map of key/value pairs. RESP2: a flat array of 2n elements; RESP3: `%<n>\r\n`.
    Map(Vec<(Frame, Frame)>),
    /// Set. RESP2: an array; RESP3: `~<n>\r\n`.
    Set(Vec<Frame>),
    /// Double. RESP2: a bulk string of [`crate::format_double`]; RESP3: `,<formatted>\r\n`
    /// (`,inf`, `,-inf`, `,nan` for the special values).
    Double(f64),
    /// Boolean. RESP2: `:1` / `:0`; RESP3: `#t` / `#f`.
    Boolean(bool),
    /// Verbatim text (the payload without its format prefix). RESP3: `=<len>\r\ntxt:<text>\r\n`;
    /// RESP2: a bulk string of the text.
    Verbatim(Bytes),
    /// Big number in decimal. RESP3: `(<digits>\r\n`; RESP2: a bulk string of the digits.
    BigNumber(Bytes),
    /// Out-of-band push message (pub/sub, invalidation). RESP3: `><n>\r\n`; RESP2: an array.
    Push(Vec<Frame>),
    /// Double in Redis's human-friendly form ([`crate::format_human_double`]: `%.17Lf`, trailing
    /// zeros removed), as GEOPOS prints coordinates. RESP2: a bulk string; RESP3: `,<text>\r\n`.
    HumanDouble(f64),
}

impl Frame {
    /// `+OK`.
    pub fn ok() -> Frame {
        Frame::Simple(Bytes::from_static(b"OK"))
    }

    /// `+QUEUED`, the reply to a command queued inside `MULTI`.
    pub fn queued() -> Frame {
        Frame::Simple(Bytes::from_static(b"QUEUED"))
    }

    /// A simple string.
    pub fn simple(s: impl Into<Bytes>) -> Frame {
        Frame::Simple(s.into())
    }

    /// An error reply from its full text (code included, no leading `-`), e.g.
    /// `Frame::error("ERR syntax error")`.
    pub fn error(msg: impl Into<Bytes>) -> Frame {
        Frame::Error(msg.into())
    }

    /// A bulk string. `Bytes`, `Vec<u8>`, `String` and static slices convert without copying.
    pub fn bulk(data: impl Into<Bytes>) -> Frame {
        Frame::Bulk(data.into())
    }

    /// A bulk string copied from a borrowed slice.
    pub fn bulk_from_slice(data: &[u8]) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(data))
    }

    /// A bulk string, or [`Frame::Null`] for `None`.
    pub fn bulk_or_null(data: Option<impl Into<Bytes>>) -> Frame {
        data.map_or(Frame::Null, |d| Frame::Bulk(d.into()))
    }

    /// An array of bulk strings.
    pub fn bulk_array<I, B>(items: I) -> Frame
    where
        I: IntoIterator<Item = B>,
        B: Into<Bytes>,
    {
        Frame::Array(items.into_iter().map(|b| Frame::Bulk(b.into())).collect())
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }
}

impl From<i64> for Frame {
    fn from(n: i64) -> Frame {
        Frame::Integer(n)
    }
}

impl From<bool> for Frame {
    fn from(b: bool) -> Frame {
        Frame::Boolean(b)
    }
}

impl From<f64> for Frame {
    fn from(d: f64) -> Frame {
        Frame::Double(d)
    }
}

impl From<Vec<Frame>> for Frame {
    fn from(items: Vec<Frame>) -> Frame {
        Frame::Array(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_build_expected_variants() {
        assert_eq!(Frame::ok(), Frame::Simple(Bytes::from_static(b"OK")));
        assert_eq!(
            Frame::queued(),
            Frame::Simple(Bytes::from_static(b"QUEUED"))
        );
        assert_eq!(
            Frame::error("ERR boom"),
            Frame::Error(Bytes::from_static(b"ERR boom"))
        );
        assert_eq!(
            Frame::error(format!("ERR {}", 1)),
            Frame::Error(Bytes::from_static(b"ERR 1"))
        );
        assert_eq!(
            Frame::bulk(vec![1u8, 2]),
            Frame::Bulk(Bytes::from(vec![1u8, 2]))
        );
        assert_eq!(
            Frame::bulk_from_slice(b"x"),
            Frame::Bulk(Bytes::from_static(b"x"))
        );
        assert_eq!(Frame::bulk_or_null(None::<Bytes>), Frame::Null);
        assert_eq!(
            Frame::bulk_or_null(Some("v")),
            Frame::Bulk(Bytes::from_static(b"v"))
        );
        assert_eq!(
            Frame::bulk_array(["a", "b"]),
            Frame::Array(vec![Frame::bulk("a"), Frame::bulk("b")])
        );
        assert_eq!(Frame::from(7), Frame::Integer(7));
        assert_eq!(Frame::from(true), Frame::Boolean(true));
        assert_eq!(Frame::from(1.5), Frame::Double(1.5));
        assert!(Frame::error("ERR x").is_error());
        assert!(!Frame::ok().is_error());
    }

    #[test]
    fn protocol_versions_round_trip() {
        assert_eq!(Protocol::default(), Protocol::Resp2);
        assert_eq!(Protocol::from_version(2), Some(Protocol::Resp2));
        assert_eq!(Protocol::from_version(3), Some(Protocol::Resp3));
        assert_eq!(Protocol::from_version(4), None);
        assert_eq!(Protocol::Resp3.version(), 3);
        assert_eq!(Protocol::Resp2.version(), 2);
    }
}
