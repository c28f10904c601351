"""MIGRATE against real servers: every command form runs from a redis-server source and from a
Strata source (to a redis-server target, and Strata to Strata), and the replies must be the same
bytes, errors included (BUSYKEY, bad database, AUTH failures, unreachable and silent targets),
with the same keys moved, kept, or copied, and their TTLs."""

import socket
import threading
import time

import pytest

from harness import RespError, Server, redis_is_strata
from test_dump import CASES, value_of

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="compares Strata with Redis")


@pytest.fixture
def servers(start_strata, start_redis):
    """Sources (redis, strata) and targets (redis for each, a Strata target too)."""
    return {
        "redis": start_redis(),
        "strata": start_strata(),
        "target_for_redis": start_redis(),
        "target_for_strata": start_redis(),
        "strata_target": start_strata(),
    }


def both(servers, setup, *cmd, target="redis", password=None):
    """Runs `setup(source, target)` then MIGRATE `cmd` (with the target's port filled in for
    `{port}`) from both sources; returns the replies, Redis's first."""
    replies = []
    for src_name, tgt_name in (("redis", "target_for_redis"), ("strata", "target_for_strata")):
        src = servers[src_name]
        tgt = servers["strata_target"] if target == "strata" and src_name == "strata" else servers[tgt_name]
        s, t = src.conn(), tgt.conn()
        if password:
            t.call("AUTH", password)
        s.call("FLUSHALL")
        t.call("FLUSHALL")
        if setup:
            setup(s, t)
        args = [a.replace("{port}", str(tgt.port)) if isinstance(a, str) else a for a in cmd]
        replies.append((s.call("MIGRATE", *args), s, t))
    return replies


def same_reply(replies):
    (a, _, _), (b, _, _) = replies
    assert a == b, f"redis {a!r} strata {b!r}"
    return a


def test_a_key_moves_with_its_ttl(servers):
    def setup(s, t):
        s.call("SET", "k", "v")
        s.call("PEXPIRE", "k", 100_000)
    replies = both(servers, setup, "127.0.0.1", "{port}", "k", "0", "5000")
    assert same_reply(replies) == b"OK"
    for _, s, t in replies:
        assert s.call("EXISTS", "k") == 0
        assert t.call("GET", "k") == b"v"
        assert 90_000 < t.call("PTTL", "k") <= 100_000


@pytest.mark.parametrize("target", ["redis", "strata"])
def test_every_type_arrives_whole(servers, target):
    for name, make in CASES.items():
        src = servers["strata"].client()
        src.flushall()
        make(src)
        want = value_of(src, "k")
        port = servers["strata_target" if target == "strata" else "target_for_strata"].port
        tgt = (servers["strata_target"] if target == "strata" else servers["target_for_strata"]).client()
        tgt.flushall()
        assert src.execute_command("MIGRATE", "127.0.0.1", port, "k", 0, 5000) == b"OK"
        assert value_of(tgt, "k") == want, name
        assert src.exists("k") == 0


def test_missing_keys_answer_nokey(servers):
    assert same_reply(both(servers, None, "127.0.0.1", "{port}", "nope", "0", "1000")) == b"NOKEY"
    replies = both(servers, None, "127.0.0.1", "{port}", "", "0", "1000", "KEYS", "a", "b")
    assert same_reply(replies) == b"NOKEY"


def test_busykey_and_replace(servers):
    def setup(s, t):
        s.call("SET", "k", "new")
        t.call("SET", "k", "old")
    replies = both(servers, setup, "127.0.0.1", "{port}", "k", "0", "1000")
    err = same_reply(replies)
    assert isinstance(err, RespError) and err.message.startswith(b"ERR Target instance replied with error: BUSYKEY")
    for _, s, t in replies:
        assert s.call("GET", "k") == b"new" and t.call("GET", "k") == b"old"
    replies = both(servers, setup, "127.0.0.1", "{port}", "k", "0", "1000", "REPLACE")
    assert same_reply(replies) == b"OK"
    for _, s, t in replies:
        assert s.call("EXISTS", "k") == 0 and t.call("GET", "k") == b"new"


def test_copy_keeps_the_source_and_keys_moves_several(servers):
    def setup(s, t):
        for k in ("a", "b", "c"):
            s.call("RPUSH", k, k, k)
        t.call("SET", "b", "taken")
    replies = both(servers, setup, "127.0.0.1", "{port}", "", "0", "1000", "COPY", "KEYS", "a", "b", "c", "zz")
    err = same_reply(replies)
    assert isinstance(err, RespError)
    for _, s, t in replies:
        assert s.call("EXISTS", "a", "b", "c") == 3
        assert t.call("LRANGE", "a", 0, -1) == [b"a", b"a"] and t.call("GET", "b") == b"taken"
    replies = both(servers, setup, "127.0.0.1", "{port}", "", "0", "1000", "KEYS", "a", "b", "c")
    assert isinstance(same_reply(replies), RespError)
    for _, s, t in replies:
        # Keys the target took are deleted; the refused one stays.
        assert s.call("EXISTS", "a") == 0 and s.call("EXISTS", "c") == 0
        assert s.call("EXISTS", "b") == 1


def test_destination_database(servers):
    def setup(s, t):
        s.call("SET", "k", "v")
    replies = both(servers, setup, "127.0.0.1", "{port}", "k", "5", "1000")
    assert same_reply(replies) == b"OK"
    for _, _, t in replies:
        t.call("SELECT", 5)
        assert t.call("GET", "k") == b"v"
    assert isinstance(same_reply(both(servers, setup, "127.0.0.1", "{port}", "k", "99", "1000")), RespError)


@pytest.mark.parametrize("cmd", [
    ("127.0.0.1", "{port}", "k", "0", "1000", "AUTH"),
    ("127.0.0.1", "{port}", "k", "0", "1000", "AUTH2", "u"),
    ("127.0.0.1", "{port}", "k", "0", "1000", "BOGUS"),
    ("127.0.0.1", "{port}", "k", "0", "1000", "KEYS", "a"),
    ("127.0.0.1", "{port}", "k", "0", "x"),
    ("127.0.0.1", "{port}", "k", "x", "1000"),
    ("127.0.0.1", "{port}", "k", "0"),
])
def test_argument_errors_match(servers, cmd):
    def setup(s, t):
        s.call("SET", "k", "v")
    same_reply(both(servers, setup, *cmd))


def test_auth_on_the_target(servers):
    for name in ("target_for_redis", "target_for_strata"):
        c = servers[name].conn()
        c.call("ACL", "SETUSER", "u", "on", ">upw", "+@all", "~*")
        c.call("CONFIG", "SET", "requirepass", "pw")

    def setup(s, t):
        s.call("SET", "k", "v")

    try:
        # Without AUTH first: Redis keeps its connection (authenticated) for 10 s, Strata does not.
        for extra in ((), ("AUTH", "wrong"), ("AUTH2", "u", "x"), ("AUTH", "pw"), ("AUTH2", "u", "upw")):
            replies = both(servers, setup, "127.0.0.1", "{port}", "k", "0", "1000", *extra, password="pw")
            got = same_reply(replies)
            for _, s, t in replies:
                assert (s.call("EXISTS", "k") == 0) == (got == b"OK")
    finally:
        for name in ("target_for_redis", "target_for_strata"):
            c = servers[name].conn()
            c.call("AUTH", "pw")
            c.call("CONFIG", "SET", "requirepass", "")


def test_unreachable_and_silent_targets(servers):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    silent_port = silent.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: [accepted.append(silent.accept()) for _ in range(4)], daemon=True).start()
    try:
        for src in ("redis", "strata"):
            c = servers[src].conn()
            c.call("SET", "k", "v")
        got = {}
        for src in ("redis", "strata"):
            c = servers[src].conn()
            got[src] = c.call("MIGRATE", "127.0.0.1", str(closed_port), "k", "0", "500")
        assert got["redis"] == got["strata"]
        for src in ("redis", "strata"):
            c = servers[src].conn()
            t = time.time()
            got[src] = c.call("MIGRATE", "127.0.0.1", str(silent_port), "k", "0", "300")
            assert time.time() - t < 3, src
            assert c.call("EXISTS", "k") == 1
        assert got["redis"] == got["strata"], got
        assert got["strata"] == RespError(b"IOERR error or timeout reading to target instance")
    finally:
        silent.close()


def test_the_server_serves_others_while_migrate_waits(servers):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    src = servers["strata"]
    src.conn().call("SET", "k", "v")
    c = src.conn()
    c.send_command("MIGRATE", "127.0.0.1", str(silent.getsockname()[1]), "k", "0", "2000")
    time.sleep(0.3)
    other = src.conn()
    t = time.time()
    for i in range(20):
        assert other.call("SET", f"o{i}", "x") == b"OK"
    assert time.time() - t < 1.5
    assert isinstance(c.read_reply(), RespError)
    silent.close()
