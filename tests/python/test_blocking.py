"""Blocking list and sorted-set commands (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN,
BZPOPMAX, BZMPOP), compared reply for reply with a real redis-server: immediate answers, argument
and timeout errors, timeout replies (RESP2 and RESP3), wake-ups by other clients, the order in
which blocked clients are served, and BLMOVE chains. Every blocking call uses a short timeout."""

import time

import pytest

from harness import RespError


def resp3(both):
    s, r = both.each("HELLO", "3")
    assert not isinstance(s, RespError) and not isinstance(r, RespError)


class Pair:
    """One extra raw connection to each server, for a client that blocks."""

    def __init__(self, strata_server, redis_server):
        self.strata = strata_server.conn()
        self.redis = redis_server.conn()

    def send(self, *cmd):
        self.strata.send_command(*cmd)
        self.redis.send_command(*cmd)

    def reply(self):
        """Both replies (bytes), which must be equal."""
        s, r = self.strata.read_reply_raw(), self.redis.read_reply_raw()
        assert s == r, f"blocked reply differs\n  strata: {s!r}\n  redis:  {r!r}"
        return r

    def nothing_yet(self, wait=0.1):
        assert self.strata.read_available(wait) == b""
        assert self.redis.read_available(wait) == b""

    def close(self):
        self.strata.close()
        self.redis.close()


@pytest.fixture
def pair_factory(strata_server, redis_server):
    made = []

    def make():
        p = Pair(strata_server, redis_server)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def blocked_clients(conn) -> int:
    info = conn.call("INFO", "clients").decode()
    for line in info.splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    raise AssertionError(info)


def wait_blocked(both, n, limit=5.0):
    """Waits until each server reports ``n`` blocked clients."""
    deadline = time.monotonic() + limit
    for conn in (both.strata, both.redis):
        while blocked_clients(conn) != n:
            assert time.monotonic() < deadline, f"blocked_clients never reached {n}"
            time.sleep(0.005)


# --- immediate answers ------------------------------------------------------------------------


@pytest.mark.parametrize("proto", [2, 3])
def test_immediate_list_answers(both, proto):
    if proto == 3:
        resp3(both)
    both("RPUSH", "l", "a", "b", "c", "d", "e", "f")
    both("BLPOP", "missing", "l", "0")
    both("BRPOP", "l", "missing", "0")
    both("BLMOVE", "l", "dst", "LEFT", "RIGHT", "0")
    both("BLMOVE", "l", "l", "RIGHT", "LEFT", "0")
    both("BRPOPLPUSH", "l", "dst", "0")
    both("LRANGE", "dst", "0", "-1")
    both("BLMPOP", "0", "2", "missing", "l", "LEFT")
    both("BLMPOP", "0", "1", "l", "RIGHT", "COUNT", "10")
    both("EXISTS", "l")
    both("BLPOP", "dst", "dst", "1")
    both("LRANGE", "dst", "0", "-1")


@pytest.mark.parametrize("proto", [2, 3])
def test_immediate_zset_answers(both, proto):
    if proto == 3:
        resp3(both)
    both("ZADD", "z", "1", "a", "2.5", "b", "3", "c", "4", "d", "inf", "e")
    both("BZPOPMIN", "missing", "z", "0")
    both("BZPOPMAX", "z", "0")
    both("BZMPOP", "0", "2", "missing", "z", "MIN")
    both("BZMPOP", "0", "1", "z", "MAX", "COUNT", "10")
    both("EXISTS", "z")


def test_wrong_type_answers(both):
    both("SET", "s", "x")
    both("RPUSH", "l", "a", "b", "c")
    both("ZADD", "z", "1", "a")
    both("BLPOP", "s", "0")
    both("BLPOP", "missing", "s", "l", "0")
    both("BLPOP", "l", "s", "0")
    both("BRPOP", "z", "0")
    both("BLMOVE", "s", "l", "LEFT", "LEFT", "0")
    both("BLMOVE", "l", "s", "LEFT", "LEFT", "0")
    both("BRPOPLPUSH", "z", "l", "0")
    both("BLMPOP", "0", "2", "missing", "s", "LEFT")
    both("BZPOPMIN", "l", "0")
    both("BZPOPMAX", "missing", "s", "z", "0")
    both("BZMPOP", "0", "1", "s", "MIN")


@pytest.mark.parametrize("timeout", ["-1", "-0.5", "abc", "", " 1", "1 ", "1x", "nan", "inf",
                                     "-inf", "1e100", "9223372036854775807", "0x", "1e"])
def test_timeout_errors(both, timeout):
    for cmd in (("BLPOP", "k", timeout), ("BRPOP", "k", timeout), ("BZPOPMIN", "k", timeout),
                ("BZPOPMAX", "k", timeout), ("BRPOPLPUSH", "k", "d", timeout),
                ("BLMOVE", "k", "d", "LEFT", "RIGHT", timeout),
                ("BLMPOP", timeout, "1", "k", "LEFT"), ("BZMPOP", timeout, "1", "k", "MAX")):
        both(*cmd)


def test_argument_errors(both):
    both("BLPOP", "k")
    both("BRPOP")
    both("BLMOVE", "a", "b", "LEFT", "UP", "0")
    both("BLMOVE", "a", "b", "UP", "LEFT", "-1")
    both("BLMOVE", "a", "b", "LEFT", "RIGHT")
    both("BRPOPLPUSH", "a", "b")
    both("BZPOPMIN", "z")
    for cmd in ("BLMPOP", "BZMPOP"):
        where = "LEFT" if cmd == "BLMPOP" else "MIN"
        both(cmd, "0", "1", "k")
        both(cmd, "0", "0", "k", where)
        both(cmd, "0", "-1", "k", where)
        both(cmd, "0", "x", "k", where)
        both(cmd, "0", "2", "k", where)
        both(cmd, "0", "1", "k", "UP")
        both(cmd, "0", "1", "k", where, "COUNT")
        both(cmd, "0", "1", "k", where, "COUNT", "0")
        both(cmd, "0", "1", "k", where, "COUNT", "1", "COUNT", "2")
        both(cmd, "0", "1", "k", where, "EXTRA")
        both(cmd, "-1", "1", "k", where, "COUNT", "x")
        both(cmd, "x", "1", "k", where)


# --- timeouts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("proto", [2, 3])
def test_timeouts_reply_null(both, proto):
    if proto == 3:
        resp3(both)
    started = time.monotonic()
    for cmd in (("BLPOP", "a", "b", "0.05"), ("BRPOP", "a", "0.05"),
                ("BRPOPLPUSH", "a", "b", "0.05"), ("BLMOVE", "a", "b", "LEFT", "LEFT", "0.05"),
                ("BLMPOP", "0.05", "2", "a", "b", "LEFT"), ("BZPOPMIN", "z", "0.05"),
                ("BZPOPMAX", "z", "0.05"), ("BZMPOP", "0.05", "1", "z", "MIN", "COUNT", "2"),
                ("BLPOP", "a", "0.0001"), ("BLPOP", "a", "1e-5")):
        both(*cmd)
    assert time.monotonic() - started < 10


def test_timeout_replies_after_other_replies_in_a_pipeline(both):
    data = b"PING\r\nBLPOP k 0.05\r\nECHO after\r\n"
    both.raw(data, replies=3)


def test_a_blocked_client_answers_nothing_until_served(both, pair_factory):
    p = pair_factory()
    p.send("BLPOP", "k", "2")
    wait_blocked(both, 1)
    p.nothing_yet()
    both("LLEN", "k")
    both("RPUSH", "k", "v")
    assert p.reply() == b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n"
    both("LLEN", "k")


# --- wake-ups ---------------------------------------------------------------------------------


@pytest.mark.parametrize("push", [
    ("LPUSH", "k", "a", "b"),
    ("RPUSH", "k", "a", "b"),
    ("LMOVE", "pre", "k", "LEFT", "RIGHT"),
    ("RPOPLPUSH", "pre", "k"),
    ("RENAME", "pre", "k"),
])
@pytest.mark.parametrize("blocker", [
    ("BLPOP", "other", "k", "2"),
    ("BRPOP", "k", "2"),
    ("BLMOVE", "k", "dst", "RIGHT", "LEFT", "2"),
    ("BLMPOP", "2", "2", "other", "k", "LEFT", "COUNT", "5"),
])
def test_list_wakeups(both, pair_factory, push, blocker):
    if push[0] in ("LMOVE", "RPOPLPUSH", "RENAME"):
        both("RPUSH", "pre", "p1", "p2")
    p = pair_factory()
    p.send(*blocker)
    wait_blocked(both, 1)
    both(*push)
    p.reply()
    wait_blocked(both, 0)
    for key in ("k", "dst", "pre"):
        both("LRANGE", key, "0", "-1")


@pytest.mark.parametrize("blocker", [
    ("BRPOP", "k", "2"),
    ("BZPOPMIN", "k", "2"),
])
@pytest.mark.parametrize("in_multi", [False, True])
def test_swapdb_wakes_a_client_blocked_on_a_key_it_brings_into_place(both, pair_factory, blocker, in_multi):
    both("SELECT", "1")
    both("RPUSH" if blocker[0] == "BRPOP" else "ZADD", "k", *(["hello"] if blocker[0] == "BRPOP" else ["1", "hello"]))
    both("SELECT", "0")
    p = pair_factory()
    p.send("SELECT", "0")
    p.reply()
    p.send(*blocker)
    wait_blocked(both, 1)
    if in_multi:
        both("MULTI")
        both("SWAPDB", "1", "0")
        both("EXEC")
    else:
        both("SWAPDB", "1", "0")
    p.reply()
    wait_blocked(both, 0)
    both("EXISTS", "k")


@pytest.mark.parametrize("push", [
    ("ZADD", "z", "3", "c", "1", "a", "2", "b"),
    ("ZINCRBY", "z", "5", "m"),
    ("ZUNIONSTORE", "z", "1", "src"),
    ("ZRANGESTORE", "z", "src", "0", "-1"),
])
@pytest.mark.parametrize("blocker", [
    ("BZPOPMIN", "other", "z", "2"),
    ("BZPOPMAX", "z", "2"),
    ("BZMPOP", "2", "2", "other", "z", "MAX", "COUNT", "2"),
])
def test_zset_wakeups(both, pair_factory, push, blocker):
    both("ZADD", "src", "1", "x", "2", "y")
    p = pair_factory()
    p.send(*blocker)
    wait_blocked(both, 1)
    both(*push)
    p.reply()
    wait_blocked(both, 0)
    both("ZRANGE", "z", "0", "-1", "WITHSCORES")


def test_zset_wakeup_resp3(both, pair_factory):
    p = pair_factory()
    for c in (p.strata, p.redis):
        c.call("HELLO", "3")
    p.send("BZPOPMIN", "z", "2")
    wait_blocked(both, 1)
    both("ZADD", "z", "1.5", "a")
    p.reply()
    p.send("BZMPOP", "2", "1", "z", "MIN")
    wait_blocked(both, 1)
    both("ZADD", "z", "2", "b")
    p.reply()


def test_first_blocked_first_served(both, pair_factory):
    clients = [pair_factory() for _ in range(3)]
    for i, c in enumerate(clients):
        c.send("BLPOP", "k", "2")
        wait_blocked(both, i + 1)
    both("RPUSH", "k", "1", "2")
    assert clients[0].reply() == b"*2\r\n$1\r\nk\r\n$1\r\n1\r\n"
    assert clients[1].reply() == b"*2\r\n$1\r\nk\r\n$1\r\n2\r\n"
    both("LLEN", "k")
    clients[2].nothing_yet()
    both("LPUSH", "k", "3")
    assert clients[2].reply() == b"*2\r\n$1\r\nk\r\n$1\r\n3\r\n"


def test_blmove_chain(both, pair_factory):
    first, second, third = pair_factory(), pair_factory(), pair_factory()
    first.send("BLMOVE", "a", "b", "LEFT", "RIGHT", "2")
    wait_blocked(both, 1)
    second.send("BRPOPLPUSH", "b", "c", "2")
    wait_blocked(both, 2)
    third.send("BLPOP", "c", "2")
    wait_blocked(both, 3)
    both("RPUSH", "a", "x", "y")
    assert first.reply() == b"$1\r\nx\r\n"
    assert second.reply() == b"$1\r\nx\r\n"
    assert third.reply() == b"*2\r\n$1\r\nc\r\n$1\r\nx\r\n"
    for key in ("a", "b", "c"):
        both("LRANGE", key, "0", "-1")


def test_blocked_timeout_after_waiting(both, pair_factory):
    p = pair_factory()
    p.send("BLMOVE", "a", "b", "LEFT", "LEFT", "0.1")
    wait_blocked(both, 1)
    assert p.reply() == b"*-1\r\n"
    wait_blocked(both, 0)
    both("RPUSH", "a", "x")
    both("LRANGE", "a", "0", "-1")


def test_disconnected_waiter_is_forgotten(both, pair_factory):
    p = pair_factory()
    p.send("BLPOP", "k", "0")
    wait_blocked(both, 1)
    p.close()
    wait_blocked(both, 0)
    both("RPUSH", "k", "v")
    both("LLEN", "k")


@pytest.mark.parametrize("blocker", [
    ("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"),
    ("BRPOPLPUSH", "src", "dst", "0"),
])
def test_blocked_move_to_a_string_answers_wrongtype_and_keeps_the_element(both, pair_factory, blocker):
    both("SET", "dst", "a string")
    p = pair_factory()
    p.send(*blocker)
    wait_blocked(both, 1)
    both("RPUSH", "src", "x")
    assert p.reply().startswith(b"-WRONGTYPE")
    wait_blocked(both, 0)
    both("LRANGE", "src", "0", "-1")
    both("GET", "dst")


def test_blocked_move_to_a_string_lets_the_next_waiter_have_the_element(both, pair_factory):
    both("SET", "dst", "a string")
    first, second = pair_factory(), pair_factory()
    first.send("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
    wait_blocked(both, 1)
    second.send("BLPOP", "src", "0")
    wait_blocked(both, 2)
    both("RPUSH", "src", "x")
    assert first.reply().startswith(b"-WRONGTYPE")
    assert second.reply() == b"*2\r\n$3\r\nsrc\r\n$1\r\nx\r\n"
    both("EXISTS", "src")


def test_blocked_move_stays_blocked_while_its_source_holds_another_type(both, pair_factory):
    p = pair_factory()
    p.send("BLMOVE", "src", "dst", "LEFT", "RIGHT", "2")
    wait_blocked(both, 1)
    both("ZADD", "src", "1", "a")
    p.nothing_yet()
    wait_blocked(both, 1)
    both("DEL", "src")
    both("RPUSH", "src", "x")
    assert p.reply() == b"$1\r\nx\r\n"
    both("LRANGE", "dst", "0", "-1")


def test_swapdb_wakes_a_client_blocked_on_a_key_it_brings(both, pair_factory):
    both("SELECT", "1")
    both("RPUSH", "k", "hello")
    p = pair_factory()
    p.send("SELECT", "9")
    p.reply()
    p.send("BRPOP", "k", "2")
    wait_blocked(both, 1)
    both("SWAPDB", "1", "9")
    assert p.reply() == b"*2\r\n$1\r\nk\r\n$5\r\nhello\r\n"
    both("SELECT", "9")
    both("EXISTS", "k")
