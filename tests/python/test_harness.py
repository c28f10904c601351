"""The test harness itself: the RESP parser and the differential helper (no server needed)."""

import pytest

from harness import Both, Incomplete, RespError, Simple, Verbatim, encode_command, parse_reply

SAMPLES = [
    (b"+OK\r\n", Simple(b"OK")),
    (b"-ERR syntax error\r\n", RespError(b"ERR syntax error")),
    (b":-42\r\n", -42),
    (b"$3\r\na\r\n\r\n", b"a\r\n"),
    (b"$-1\r\n", None),
    (b"*-1\r\n", None),
    (b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", [b"a", [1]]),
    (b"_\r\n", None),
    (b"%1\r\n$1\r\nk\r\n$1\r\nv\r\n", {b"k": b"v"}),
    (b",3.5\r\n", 3.5),
    (b",inf\r\n", float("inf")),
    (b"#t\r\n", True),
    (b"(12345678901234567890\r\n", 12345678901234567890),
    (b"~1\r\n$1\r\nx\r\n", [b"x"]),
    (b"!5\r\nERR x\r\n", RespError(b"ERR x")),
]


@pytest.mark.parametrize("raw,value", SAMPLES, ids=[repr(r) for r, _ in SAMPLES])
def test_parse_reply(raw, value):
    parsed, end = parse_reply(raw)
    assert end == len(raw)
    assert parsed == value and type(parsed) is type(value)


def test_parse_verbatim_string():
    parsed, _ = parse_reply(b"=8\r\ntxt:abcd\r\n")
    assert isinstance(parsed, Verbatim) and parsed == b"abcd" and parsed.fmt == b"txt"


@pytest.mark.parametrize("raw", [b"", b"+OK", b"$3\r\nab", b"*2\r\n:1\r\n", b"%1\r\n$1\r\nk\r\n"])
def test_parse_incomplete(raw):
    with pytest.raises(Incomplete):
        parse_reply(raw)


def test_encode_command():
    assert encode_command("SET", b"k\x00", 12) == b"*3\r\n$3\r\nSET\r\n$2\r\nk\x00\r\n$2\r\n12\r\n"


class _Canned:
    """Stands in for a RespConn that always answers with the same bytes."""

    def __init__(self, raw):
        self.raw = raw

    def call_raw(self, *args):
        return self.raw


def test_both_accepts_identical_replies_and_returns_them_parsed():
    assert Both(_Canned(b":1\r\n"), _Canned(b":1\r\n"))("EXISTS", "k") == 1


@pytest.mark.parametrize("strata,redis", [
    (b"+OK\r\n", b"$2\r\nOK\r\n"),  # same text, different type
    (b"-ERR x\r\n", b"-ERR y\r\n"),
    (b"-x\r\n", b"-ERR x\r\n"),  # an error prefix counts
    (b"$-1\r\n", b"*-1\r\n"),  # nil bulk vs nil array
])
def test_both_rejects_any_byte_difference(strata, redis):
    with pytest.raises(AssertionError, match="differs"):
        Both(_Canned(strata), _Canned(redis))("GET", "k")
