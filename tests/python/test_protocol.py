"""The wire protocol: inline commands, pipelining, binary safety, big values, RESP3, bad input."""

import socket
import time

import pytest

from harness import RespConn, encode_command

# --- inline commands --------------------------------------------------------------------------


def test_inline_commands(both):
    both.raw(b"PING\r\n")
    both.raw(b"SET k v\r\nGET k\r\n", replies=2)
    both.raw(b"ECHO   spaced   \r\n")
    both.raw(b"PING\n")  # a bare LF ends an inline command too
    both.raw(b"\r\n\r\nPING\r\n")  # empty lines are ignored


def test_inline_quoting(both):
    both.raw(b'SET k "hello world"\r\nGET k\r\n', replies=2)
    both.raw(b"SET k 'single quoted'\r\nGET k\r\n", replies=2)
    both.raw(b'SET k "tab\\there\\x41\\n\\"q\\""\r\nGET k\r\n', replies=2)
    both.raw(b'SET k ""\r\nSTRLEN k\r\n', replies=2)
    both.raw(b"SET k 'it\\'s'\r\nGET k\r\n", replies=2)


def test_inline_and_multibulk_mixed_in_one_write(both):
    both.raw(b"SET a 1\r\n" + encode_command("INCR", "a") + b"GET a\r\n", replies=3)


# --- pipelining -------------------------------------------------------------------------------


def test_pipeline_of_10000_commands(strata_server):
    n = 10_000
    c = strata_server.conn(timeout=60)
    payload = b"".join(encode_command("SET", f"key:{i}", f"value:{i}") for i in range(n // 2))
    payload += b"".join(encode_command("GET", f"key:{i}") for i in range(n // 2))
    c.send(payload)
    replies = [c.read_reply() for _ in range(n)]
    assert replies[: n // 2] == [b"OK"] * (n // 2)
    assert replies[n // 2:] == [f"value:{i}".encode() for i in range(n // 2)]
    assert c.call("DBSIZE") == n // 2


def test_pipeline_through_redis_py(strata):
    with strata.pipeline(transaction=False) as p:
        for i in range(1000):
            p.incr("counter")
        results = p.execute()
    assert results == list(range(1, 1001))


def test_replies_come_back_in_order_across_a_slow_reader(strata_server):
    c = strata_server.conn(timeout=60)
    value = b"v" * 1000
    c.call("SET", "big", value)
    c.send(encode_command("GET", "big") * 3000)  # ~3 MB of replies queued before we read
    time.sleep(0.5)
    for _ in range(3000):
        assert c.read_reply() == value
    assert c.call("PING") == b"PONG"


# --- binary safety and size -------------------------------------------------------------------

BINARY = [b"\x00", b"a\x00b", b"\r\n", b"\r\n\r\n$3\r\n", b"*1\r\n", b"\xff\xfe\x80", bytes(range(256))]


@pytest.mark.parametrize("data", BINARY, ids=range(len(BINARY)))
def test_binary_safe_keys_and_values(both, data):
    both("SET", data, data + b"!")
    both("GET", data)
    both("STRLEN", data)
    both("APPEND", data, data)
    both("GET", data)
    both("EXISTS", data)
    both.unordered("KEYS", "*")
    both("DEL", data)


def test_binary_through_redis_py(strata):
    key, value = b"k\x00\r\n", b"\x00\r\n\xff" * 100
    strata.set(key, value)
    assert strata.get(key) == value
    assert strata.keys() == [key]


def test_10_mb_value(strata_server):
    value = bytes(range(256)) * (10 * 1024 * 1024 // 256)
    c = strata_server.conn(timeout=60)
    assert c.call("SET", "big", value) == b"OK"
    assert c.call("STRLEN", "big") == len(value)
    assert c.call("GET", "big") == value
    assert c.call("GETRANGE", "big", "-3", "-1") == value[-3:]
    assert c.call("APPEND", "big", "x") == len(value) + 1


def test_empty_key_and_value(both):
    both("SET", "", "")
    both("GET", "")
    both("EXISTS", "")


# --- RESP3 ------------------------------------------------------------------------------------


def test_resp3_hello_is_a_map_and_null_is_underscore(strata_server):
    c = strata_server.conn()
    c.send_command("HELLO", "3")
    assert c.read_reply_raw().startswith(b"%7\r\n")
    assert c.call_raw("GET", "missing") == b"_\r\n"
    assert c.call_raw("MGET", "missing") == b"*1\r\n_\r\n"
    c.call("SET", "k", "v")
    assert c.call_raw("GET", "k") == b"$1\r\nv\r\n"
    assert c.call_raw("CONFIG", "GET", "databases") == b"%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n"


def test_resp3_through_redis_py(strata_server):
    r = strata_server.client(protocol=3)
    assert r.get("missing") is None
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"


# --- malformed input --------------------------------------------------------------------------

MALFORMED = {
    "star_not_a_number": b"*abc\r\n",
    "negative_bulk_length": b"*1\r\n$-5\r\n",
    "bulk_length_not_a_number": b"*1\r\n$abc\r\n",
    "simple_string_in_request": b"*1\r\n+x\r\n",
    "integer_in_request": b"*1\r\n:1\r\n",
    "unbalanced_double_quote": b'SET k "abc\r\n',
    "unbalanced_single_quote": b"SET k 'abc\r\n",
    "quote_not_followed_by_space": b'SET k "a"b\r\n',
    "huge_multibulk_length": b"*99999999999\r\n",
    "bulk_over_512mb": b"*2\r\n$4\r\nPING\r\n$536870913\r\n",
}


@pytest.mark.parametrize("data", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_request_gets_protocol_error_and_close(strata_server, redis_server, data):
    results = {}
    for name, server in (("strata", strata_server), ("redis", redis_server)):
        with RespConn(server.port, timeout=10) as c:
            c.send(data)
            results[name] = c.read_until_closed(timeout=5)
    assert results["strata"] == results["redis"], results
    assert results["redis"].startswith(b"-ERR Protocol error: ")
    # The server survives and other clients carry on.
    with RespConn(strata_server.port) as other:
        assert other.call("PING") == b"PONG"


def test_protocol_error_after_good_commands_answers_them_first(strata_server, redis_server):
    data = b"SET k v\r\nGET k\r\n*1\r\n+x\r\n"
    out = []
    for server in (strata_server, redis_server):
        with RespConn(server.port, timeout=10) as c:
            c.send(data)
            out.append(c.read_until_closed(timeout=5))
    assert out[0] == out[1]


def test_protocol_error_does_not_disturb_other_clients(strata_server):
    bystander = strata_server.conn()
    bystander.call("SET", "k", "v")
    for data in MALFORMED.values():
        with RespConn(strata_server.port, timeout=10) as bad:
            bad.send(data)
            bad.read_until_closed(timeout=5)
    assert bystander.call("GET", "k") == b"v"


def test_oversized_bulk_length_is_refused_at_once(strata_server, redis_server):
    for server in (strata_server, redis_server):
        with RespConn(server.port, timeout=10) as c:
            start = time.monotonic()
            c.send(b"*1\r\n$9999999999\r\n")  # no payload follows: the length alone is refused
            assert c.read_until_closed(timeout=3) == b"-ERR Protocol error: invalid bulk length\r\n"
            assert time.monotonic() - start < 2


def test_partial_command_waits_for_the_rest(both):
    both.strata.send(b"*2\r\n$4\r\nECHO\r\n$5\r\nhel")
    both.redis.send(b"*2\r\n$4\r\nECHO\r\n$5\r\nhel")
    assert both.strata.read_available(0.3) == b""
    both.raw(b"lo\r\n")


def test_command_split_into_single_bytes(strata_server):
    c = strata_server.conn()
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for byte in encode_command("SET", "k", "split"):
        c.send(bytes([byte]))
    assert c.read_reply() == b"OK"
    assert c.call("GET", "k") == b"split"


def test_many_connections_at_once(strata_server):
    conns = [strata_server.conn() for _ in range(100)]
    for i, c in enumerate(conns):
        c.send_command("SET", f"k{i}", str(i))
    assert all(c.read_reply() == b"OK" for c in conns)
    assert conns[0].call("DBSIZE") == 100
