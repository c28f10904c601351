"""OBJECT IDLETIME: a key's idle time grows while nothing looks it up, and commands that look it
up (reads, writes, TOUCH) reset it, but EXISTS, TYPE, TTL and OBJECT do not, as in Redis."""

import time

import pytest


def idle(conn, key):
    return conn.call("OBJECT", "IDLETIME", key)


def test_idletime_of_a_missing_key_is_nil(both):
    both("OBJECT", "IDLETIME", "missing")


def test_a_new_key_has_not_been_idle(both):
    both("SET", "k", "v")
    both("RPUSH", "l", "a")
    for key in ("k", "l"):
        both("OBJECT", "IDLETIME", key)


def test_idletime_grows_through_exists_type_ttl_and_object(both):
    both("SET", "foo", "bar")
    both("HSET", "h", "f", "v")
    time.sleep(2.2)
    for key in ("foo", "h"):
        for cmd in (("TTL", key), ("PTTL", key), ("TYPE", key), ("EXISTS", key),
                    ("EXPIRETIME", key), ("OBJECT", "ENCODING", key)):
            both(*cmd)
        both.each("OBJECT", "IDLETIME", key)  # (the seconds may tick apart on the two servers)
    for conn in (both.strata, both.redis):
        assert idle(conn, "foo") >= 2
        assert idle(conn, "h") >= 2


@pytest.mark.parametrize(
    "access",
    [("TOUCH", "foo"), ("GET", "foo"), ("STRLEN", "foo"), ("APPEND", "foo", "x"), ("SET", "foo", "y"),
     ("GETRANGE", "foo", "0", "1"), ("LPUSH", "foo", "x"), ("RENAME", "foo", "foo")],
    ids=lambda a: a[0],
)
def test_a_lookup_resets_idletime(both, access):
    both("SET", "foo", "bar")
    time.sleep(2.2)
    both(*access)  # LPUSH on a string fails, but it looked the key up
    for conn in (both.strata, both.redis):
        assert idle(conn, "foo") < 2


def test_idletime_follows_the_key_to_its_database(both):
    both("SELECT", "2")
    both("SET", "a", "1")
    both("SET", "b", "1")
    time.sleep(2.2)
    both("GET", "a")
    both("SELECT", "0")
    both("SWAPDB", "0", "2")
    for conn in (both.strata, both.redis):
        assert idle(conn, "a") < 2
    # (Redis's clock is coarse right after a SWAPDB; Strata's is not.)
    assert idle(both.strata, "b") >= 2


def test_config_set_changes_repl_backlog_size_with_other_parameters(both):
    before = {name: both.strata.call("CONFIG", "GET", name)[1] for name in ("maxmemory", "repl-backlog-size", "save")}
    before_redis = {name: both.redis.call("CONFIG", "GET", name)[1] for name in before}
    try:
        both("CONFIG", "SET", "maxmemory", "10000001", "repl-backlog-size", "10000002", "save", "3000 5")
        for name in before:
            both("CONFIG", "GET", name)
        both("CONFIG", "SET", "repl-backlog-size", "16384")
        both("CONFIG", "GET", "repl-backlog-size")
    finally:
        for conn, values in ((both.strata, before), (both.redis, before_redis)):
            conn.call("CONFIG", "SET", *[x for kv in values.items() for x in kv])
