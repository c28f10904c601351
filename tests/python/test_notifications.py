"""Keyspace notifications (notify-keyspace-events) compared with a real Redis 7: the same
command script runs on both servers while a subscriber listens to every keyspace and keyevent
channel; the sequences of messages it receives must be identical."""

import time

import pytest

from harness import RespConn

EVERYTHING = "__key*@*__:*"


def _events(server, script, flags="KEA", settle=0.0):
    """Runs ``script`` (a list of commands) on ``server`` with notify-keyspace-events ``flags``
    and returns the (pattern-less) messages a subscriber to every key channel received, in
    order, ending with the commands' last event."""
    admin = server.conn()
    admin.call("CONFIG", "SET", "notify-keyspace-events", flags)
    try:
        sub = RespConn(server.port)
        sub.call("PSUBSCRIBE", EVERYTHING)
        sub.call("SUBSCRIBE", "done")
        for cmd in script:
            if cmd[0] == "SLEEP":
                time.sleep(cmd[1])
            else:
                admin.call(*cmd)
        if settle:
            time.sleep(settle)
        admin.call("PUBLISH", "done", "x")
        got = []
        while True:
            msg = sub.read_reply()
            if msg[0] == b"message" and msg[1] == b"done":
                break
            got.append((msg[2], msg[3]))
        sub.close()
        return got
    finally:
        admin.call("CONFIG", "SET", "notify-keyspace-events", "")


def _same(strata_server, redis_server, script, flags="KEA", settle=0.0):
    got = _events(strata_server, script, flags, settle)
    want = _events(redis_server, script, flags, settle)
    assert got == want
    return got


SCRIPTS = {
    "strings": [
        ("SET", "s", "1"), ("SET", "s", "2", "EX", "100"), ("SET", "s", "3", "NX"),
        ("SET", "s", "4", "XX", "KEEPTTL"), ("SETNX", "s2", "x"), ("SETNX", "s2", "y"),
        ("SETEX", "s3", "10", "v"), ("PSETEX", "s3", "10000", "v"), ("GETSET", "s", "5"),
        ("APPEND", "s", "x"), ("APPEND", "new", "x"), ("INCR", "n"), ("DECR", "n"),
        ("INCRBY", "n", "5"), ("DECRBY", "n", "2"), ("INCRBYFLOAT", "f", "1.5"),
        ("SETRANGE", "s", "1", "zz"), ("SETRANGE", "s", "1", ""), ("SETRANGE", "nope", "0", ""),
        ("MSET", "a", "1", "b", "2"), ("MSETNX", "a", "1", "c", "2"), ("MSETNX", "c", "1", "d", "2"),
        ("GETDEL", "a"), ("GETDEL", "a"), ("GETEX", "b", "EX", "100"), ("GETEX", "b", "PERSIST"),
        ("GETEX", "b", "PERSIST"), ("GETEX", "b", "PXAT", "1"), ("GET", "s"), ("INCR", "s"),
    ],
    "geo": [
        ("GEOADD", "g", "1", "1", "a", "2", "2", "b"), ("GEOADD", "g", "1", "1", "a"),
        ("GEOADD", "g", "CH", "1.5", "1", "a"), ("GEOADD", "g", "XX", "1", "1", "new"),
        ("GEORADIUS", "g", "1", "1", "500", "km", "STORE", "d"),
        ("GEORADIUS", "g", "1", "1", "500", "km"),
        ("GEOSEARCHSTORE", "d2", "g", "FROMMEMBER", "a", "BYRADIUS", "1000", "km", "STOREDIST"),
        ("GEOSEARCHSTORE", "d2", "g", "FROMLONLAT", "100", "1", "BYRADIUS", "1", "m"),
        ("GEORADIUSBYMEMBER", "g", "a", "1", "km", "STOREDIST", "d3"),
        ("GEORADIUS", "g", "100", "1", "1", "km", "STORE", "d"),
        ("GEOSEARCH", "g", "FROMMEMBER", "a", "BYRADIUS", "1", "km"), ("ZREM", "g", "a", "b"),
    ],
    "bits": [
        ("SETBIT", "b", "3", "1"), ("SETBIT", "b", "3", "1"), ("SETBIT", "b", "3", "0"),
        ("SETBIT", "b", "100", "0"), ("SETBIT", "b", "1", "0"), ("GETBIT", "b", "3"),
        ("BITFIELD", "b", "GET", "u8", "0"), ("BITFIELD", "b", "SET", "u8", "0", "0"),
        ("BITFIELD", "b", "SET", "u8", "0", "7"), ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "9", "9"),
        ("BITFIELD", "f", "INCRBY", "u2", "0", "0"), ("BITFIELD_RO", "b", "GET", "u8", "0"),
        ("BITCOUNT", "b"), ("BITPOS", "b", "1"), ("BITOP", "OR", "d", "b", "nokey"),
        ("BITOP", "AND", "d", "b", "nokey"), ("BITOP", "AND", "d", "nokey"), ("BITOP", "NOT", "b", "b"),
    ],
    "generic": [
        ("SET", "a", "1"), ("SET", "b", "2"), ("SET", "c", "3"), ("DEL", "a", "b", "zz"),
        ("UNLINK", "c", "c"), ("SET", "k", "v"), ("EXPIRE", "k", "100"), ("PEXPIRE", "k", "100000"),
        ("EXPIRE", "k", "100", "NX"), ("PERSIST", "k"), ("PERSIST", "k"), ("EXPIREAT", "k", "1"),
        ("SET", "k", "v"), ("RENAME", "k", "k2"), ("RENAME", "k2", "k2"), ("SET", "k", "w"),
        ("RENAMENX", "k", "k2"), ("RENAMENX", "k", "k3"), ("COPY", "k3", "k4"),
        ("COPY", "k3", "k4", "DB", "1"), ("MOVE", "k4", "2"), ("EXPIRE", "missing", "10"),
        ("PEXPIREAT", "k3", "1"),
    ],
    "lists": [
        ("LPUSH", "l", "a", "b"), ("RPUSH", "l", "c"), ("LPUSHX", "l", "d"), ("RPUSHX", "nol", "x"),
        ("LINSERT", "l", "BEFORE", "a", "z"), ("LINSERT", "l", "BEFORE", "nothere", "z"),
        ("LSET", "l", "0", "q"), ("LREM", "l", "0", "z"), ("LREM", "l", "0", "nothere"),
        ("LTRIM", "l", "0", "2"), ("LTRIM", "nol", "0", "1"), ("LPOP", "l"), ("RPOP", "l", "1"),
        ("RPUSH", "src", "1", "2"), ("LMOVE", "src", "dst", "LEFT", "RIGHT"),
        ("RPOPLPUSH", "src", "dst"), ("LMPOP", "2", "nol", "dst", "LEFT", "COUNT", "5"),
        ("RPUSH", "b", "1"), ("BLPOP", "b", "0"), ("RPUSH", "b", "1", "2"),
        ("BLMOVE", "b", "b2", "RIGHT", "LEFT", "0"), ("BRPOPLPUSH", "b", "b2", "0"),
        ("BLMPOP", "0", "1", "b2", "RIGHT"), ("LTRIM", "l", "5", "6"),
    ],
    "hashes": [
        ("HSET", "h", "a", "1", "b", "2"), ("HSET", "h", "a", "1"), ("HMSET", "h", "c", "3"),
        ("HSETNX", "h", "a", "x"), ("HSETNX", "h", "d", "x"), ("HINCRBY", "h", "n", "2"),
        ("HINCRBYFLOAT", "h", "f", "1.5"), ("HDEL", "h", "zz"), ("HDEL", "h", "a", "b"),
        ("HDEL", "h", "c", "d", "n", "f"), ("HGET", "h", "a"),
    ],
    "sets": [
        ("SADD", "s", "a", "b", "c"), ("SADD", "s", "a"), ("SREM", "s", "zz"), ("SREM", "s", "a"),
        ("SMOVE", "s", "t", "b"), ("SMOVE", "s", "t", "c"), ("SMOVE", "t", "t", "b"),
        ("SADD", "u", "1", "2", "3"), ("SPOP", "u"), ("SPOP", "u", "1"), ("SPOP", "u", "5"),
        ("SADD", "x", "1", "2"), ("SADD", "y", "2", "3"), ("SINTERSTORE", "d", "x", "y"),
        ("SUNIONSTORE", "d", "x", "y"), ("SDIFFSTORE", "d", "x", "x"), ("SDIFFSTORE", "d", "x", "x"),
        ("SINTERSTORE", "e", "x", "nope"), ("SADD", "f", "1"), ("SADD", "g", "1"),
        ("SMOVE", "f", "g", "1"), ("SMOVE", "g", "f", "9"),
    ],
    "zsets": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"), ("ZADD", "z", "1", "a"), ("ZADD", "z", "INCR", "5", "a"),
        ("ZINCRBY", "z", "1", "b"), ("ZREM", "z", "nope"), ("ZREM", "z", "a"),
        ("ZADD", "z", "4", "d", "5", "e", "6", "f"), ("ZREMRANGEBYRANK", "z", "0", "0"),
        ("ZREMRANGEBYSCORE", "z", "5", "5"), ("ZREMRANGEBYLEX", "z", "-", "+"),
        ("ZADD", "p", "1", "a", "2", "b", "3", "c"), ("ZPOPMIN", "p"), ("ZPOPMAX", "p", "1"),
        ("BZPOPMIN", "p", "0"), ("ZADD", "q", "1", "a", "2", "b"), ("ZMPOP", "1", "q", "MIN", "COUNT", "1"),
        ("BZMPOP", "0", "1", "q", "MAX"), ("ZADD", "x", "1", "a", "2", "b"), ("ZADD", "y", "2", "b"),
        ("ZUNIONSTORE", "d", "2", "x", "y"), ("ZINTERSTORE", "d", "2", "x", "y"),
        ("ZDIFFSTORE", "d", "1", "x"), ("ZDIFFSTORE", "d", "2", "x", "x"), ("ZDIFFSTORE", "d", "2", "x", "x"),
        ("ZRANGESTORE", "d", "x", "0", "-1"), ("ZRANGESTORE", "d", "x", "5", "6"), ("ZADD", "x", "XX", "1", "nope"),
    ],
    "sort": [
        ("RPUSH", "l", "3", "1", "2"), ("SORT", "l", "STORE", "dst"), ("SORT", "empty", "STORE", "dst"),
        ("SORT", "empty", "STORE", "dst"),
    ],
}


@pytest.mark.parametrize("family", sorted(SCRIPTS))
def test_events_match_redis(strata_server, redis_server, family):
    got = _same(strata_server, redis_server, SCRIPTS[family])
    assert got, "no events at all"


def test_only_enabled_classes_and_targets_are_published(strata_server, redis_server):
    script = [("SET", "k", "v"), ("LPUSH", "l", "a"), ("DEL", "k"), ("SADD", "s", "a")]
    assert _same(strata_server, redis_server, script, flags="El") == [
        (b"__keyevent@0__:lpush", b"l")]
    assert _same(strata_server, redis_server, script, flags="Kg") == [
        (b"__keyspace@0__:k", b"del")]
    assert _same(strata_server, redis_server, script, flags="A") == []


def test_key_miss_and_new_events(strata_server, redis_server):
    script = [("GET", "nope"), ("MGET", "a", "nope"), ("SET", "a", "1"), ("GET", "a"),
              ("HGET", "nope", "f"), ("LRANGE", "nope", "0", "1")]
    _same(strata_server, redis_server, script, flags="Km")


@pytest.mark.parametrize("family", sorted(SCRIPTS))
def test_new_events_match_redis(strata_server, redis_server, family):
    _same(strata_server, redis_server, SCRIPTS[family], flags="Kn")


def test_new_key_events(strata_server, redis_server):
    script = [("SET", "a", "1"), ("SET", "a", "2"), ("RENAME", "a", "b"), ("LPUSH", "l", "x"),
              ("RPOPLPUSH", "l", "m"), ("SADD", "s", "1"), ("SMOVE", "s", "t", "1"), ("INCR", "n"),
              ("ZUNIONSTORE", "z", "1", "t"), ("COPY", "b", "c"), ("HSET", "h", "f", "v"),
              ("APPEND", "ap", "x"), ("SETRANGE", "sr", "1", "x"), ("MSET", "m1", "1", "m2", "2"),
              ("GET", "nope"), ("SET", "d", "1"), ("COPY", "d", "c", "REPLACE"),
              ("COPY", "d", "e", "DB", "2"), ("MOVE", "d", "3"), ("SELECT", "3"), ("DEL", "d"),
              ("SELECT", "2"), ("DEL", "e"), ("SELECT", "0")]
    got = _same(strata_server, redis_server, script, flags="KEA" + "n")
    assert (b"__keyspace@0__:a", b"new") in got
    _same(strata_server, redis_server, script, flags="En")


def test_reads_and_whole_database_commands(strata_server, redis_server):
    script = [("SET", "k", "v"), ("EXISTS", "k", "nope"), ("TYPE", "nope"), ("TTL", "nope"),
              ("STRLEN", "nope"), ("SCARD", "nope"), ("ZSCORE", "nope", "m"), ("LINDEX", "nope", "0"),
              ("SINTER", "k2", "nope"), ("ZUNION", "2", "nope", "z"), ("SORT_RO", "nope"),
              ("LCS", "k", "nope"), ("TOUCH", "nope"), ("OBJECT", "ENCODING", "nope"),
              ("SWAPDB", "0", "1"), ("SWAPDB", "0", "1"), ("FLUSHDB",), ("SET", "k", "v"),
              ("FLUSHALL",), ("GETRANGE", "nope", "0", "1"), ("HGETALL", "nope")]
    _same(strata_server, redis_server, script, flags="KEAm")


def test_expired_event(strata_server, redis_server):
    script = [("SET", "t", "v", "PX", "50")]
    got = _same(strata_server, redis_server, script, flags="KEA", settle=0.5)
    assert (b"__keyevent@0__:expired", b"t") in got


def test_touching_an_expired_key_raises_expired_first(strata_server, redis_server):
    # Whether the expiry cycle or the touch deletes it, `expired` comes before the new value.
    script = [("SET", "t", "v", "PX", "30"), ("SLEEP", 0.06), ("SET", "t", "w"), ("GET", "t")]
    got = _same(strata_server, redis_server, script, flags="KEAm")
    assert got[-4:] == [(b"__keyspace@0__:t", b"expired"), (b"__keyevent@0__:expired", b"t"),
                        (b"__keyspace@0__:t", b"set"), (b"__keyevent@0__:set", b"t")]


def test_events_in_other_databases(strata_server, redis_server):
    script = [("SELECT", "3"), ("SET", "k", "v"), ("SELECT", "0")]
    assert _same(strata_server, redis_server, script) == [
        (b"__keyspace@3__:k", b"set"), (b"__keyevent@3__:set", b"k")]


def test_redis_py_keyspace_listener(strata):
    strata.config_set("notify-keyspace-events", "KEA")
    try:
        p = strata.pubsub()
        p.psubscribe("__keyevent@0__:*")
        assert p.get_message(timeout=2)["type"] == "psubscribe"
        strata.set("k", "v")
        strata.expire("k", 100)
        seen = []
        for _ in range(2):
            m = p.get_message(timeout=2)
            seen.append((m["channel"], m["data"]))
        assert seen == [(b"__keyevent@0__:set", b"k"), (b"__keyevent@0__:expire", b"k")]
        p.close()
    finally:
        strata.config_set("notify-keyspace-events", "")


def _served_events(server):
    admin = server.conn()
    admin.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    try:
        sub = RespConn(server.port)
        sub.call("PSUBSCRIBE", EVERYTHING)
        sub.call("SUBSCRIBE", "done")
        waiter = RespConn(server.port)
        waiter.send_command("BLMOVE", "src", "dst", "LEFT", "RIGHT", "5")
        deadline = time.monotonic() + 5
        while b"blocked_clients:1" not in admin.call("INFO", "clients"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        admin.call("RPUSH", "src", "a")
        assert waiter.read_reply() == b"a"
        admin.call("PUBLISH", "done", "x")
        got = []
        while (msg := sub.read_reply())[1] != b"done":
            got.append((msg[2], msg[3]))
        return got
    finally:
        admin.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_serving_a_blocked_client_raises_its_events_after_the_push(strata_server, redis_server):
    got = _served_events(strata_server)
    assert got == _served_events(redis_server)
    assert [m for c, m in got if c.startswith(b"__keyspace")] == [
        b"rpush", b"rpush", b"lpop", b"del"]
