"""Keyspace commands: DEL, EXISTS, TYPE, expiry, RENAME, COPY, MOVE, KEYS, SCAN, databases, OBJECT."""

import time

import pytest

from harness import RespError

# --- DEL UNLINK EXISTS TYPE TOUCH -------------------------------------------------------------


def test_del_and_unlink_count_removed_keys(both):
    both("MSET", "a", "1", "b", "2", "c", "3", "d", "4")
    both("DEL", "a", "b", "missing", "a")
    both("UNLINK", "c", "missing")
    both("DEL", "missing")
    both("EXISTS", "a", "b", "c", "d")


def test_exists_counts_repeated_keys(both):
    both("SET", "a", "1")
    both("EXISTS", "a", "a", "a", "missing")
    both("EXISTS", "missing")


def test_type(both):
    both("SET", "s", "v")
    both("SET", "n", "123")
    both("RPUSH", "l", "a")
    for key in ("s", "n", "l", "missing"):
        both("TYPE", key)


@pytest.mark.parametrize("create", [["SADD", "k", "a"], ["HSET", "k", "f", "v"], ["ZADD", "k", "1", "a"]])
def test_type_of_other_data_types(both, create):
    both(*create)
    both("TYPE", "k")


def test_touch_counts_existing_keys(both):
    both("MSET", "a", "1", "b", "2")
    both("TOUCH", "a", "b", "missing", "a")


# --- EXPIRE family ----------------------------------------------------------------------------


def test_ttl_and_pttl_of_missing_and_persistent_keys(both):
    both("TTL", "missing")
    both("PTTL", "missing")
    both("SET", "k", "v")
    both("TTL", "k")
    both("PTTL", "k")
    both("EXPIRETIME", "k")
    both("PEXPIRETIME", "k")
    both("EXPIRETIME", "missing")
    both("PEXPIRETIME", "missing")


def test_expire_and_pexpire_set_ttl(both):
    both("SET", "k", "v")
    both("EXPIRE", "k", "100")
    both("TTL", "k")
    both("PEXPIRE", "k", "200000")
    both("TTL", "k")
    both("EXPIRE", "missing", "100")
    both("PEXPIRE", "missing", "100")


def test_pttl_is_approximately_the_ttl(strata):
    strata.set("k", "v", px=50000)
    assert 49000 <= strata.pttl("k") <= 50000
    strata.expire("k", 100)
    assert 99000 <= strata.pttl("k") <= 100000
    assert strata.ttl("k") in (99, 100)


def test_expireat_and_pexpireat_set_absolute_time(both):
    at = int(time.time()) + 1000
    both("SET", "k", "v")
    both("EXPIREAT", "k", str(at))
    both("EXPIRETIME", "k")
    both("PEXPIRETIME", "k")
    both("PEXPIREAT", "k", str(at * 1000 + 123))
    both("PEXPIRETIME", "k")
    both("EXPIRETIME", "k")
    both("EXPIREAT", "missing", str(at))


def test_expire_in_the_past_deletes(both):
    both("MSET", "a", "1", "b", "2", "c", "3", "d", "4")
    both("EXPIRE", "a", "-1")
    both("PEXPIRE", "b", "0")
    both("EXPIREAT", "c", "1")
    both("PEXPIREAT", "d", "1")
    both("EXISTS", "a", "b", "c", "d")


def test_expire_nx_xx_gt_lt(both):
    both("SET", "k", "v")
    both("EXPIRE", "k", "100", "XX")  # no TTL yet: XX fails
    both("EXPIRE", "k", "100", "GT")  # no TTL counts as infinite: GT fails
    both("TTL", "k")
    both("EXPIRE", "k", "100", "LT")  # ... and LT succeeds
    both("TTL", "k")
    both("EXPIRE", "k", "200", "NX")
    both("EXPIRE", "k", "200", "XX")
    both("TTL", "k")
    both("EXPIRE", "k", "50", "GT")
    both("EXPIRE", "k", "300", "GT")
    both("TTL", "k")
    both("EXPIRE", "k", "400", "LT")
    both("EXPIRE", "k", "30", "LT")
    both("TTL", "k")
    both("PEXPIRE", "k", "1000000", "gt")
    both("TTL", "k")
    both("PERSIST", "k")
    both("EXPIRE", "k", "10", "NX")
    both("TTL", "k")
    both("EXPIRE", "k", "10", "NX", "NX")


@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
@pytest.mark.parametrize("args", [
    ["100", "NX", "XX"],
    ["100", "XX", "NX"],
    ["100", "GT", "LT"],
    ["100", "NX", "GT"],
    ["100", "FOO"],
    ["abc"],
    ["1.5"],
    ["9223372036854775807"],
    ["-9223372036854775808"],
])
def test_expire_errors(both, cmd, args):
    both("SET", "k", "v")
    both(cmd, "k", *args)
    both("TTL", "k")


def test_persist(both):
    both("SET", "k", "v", "EX", "100")
    both("PERSIST", "k")
    both("PERSIST", "k")
    both("PERSIST", "missing")
    both("TTL", "k")


def test_key_with_ttl_expires(strata):
    strata.set("k", "v")
    strata.pexpire("k", 150)
    assert strata.get("k") == b"v"
    deadline = time.monotonic() + 3
    while strata.get("k") is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert strata.get("k") is None
    assert strata.ttl("k") == -2


# --- RENAME RENAMENX --------------------------------------------------------------------------


def test_rename_moves_value_and_ttl(both):
    both("SET", "a", "1", "EX", "100")
    both("SET", "b", "2")
    both("RENAME", "a", "b")
    both("MGET", "a", "b")
    both("TTL", "b")
    both("RENAME", "b", "c")
    both("TTL", "c")


def test_rename_same_key_and_missing_key(both):
    both("RENAME", "missing", "x")
    both("RENAMENX", "missing", "x")
    both("SET", "a", "1")
    both("RENAME", "a", "a")
    both("RENAMENX", "a", "a")
    both("GET", "a")


def test_renamenx_only_when_target_absent(both):
    both("MSET", "a", "1", "b", "2")
    both("RENAMENX", "a", "b")
    both("RENAMENX", "a", "c")
    both("MGET", "a", "b", "c")


def test_rename_overwrites_other_type(both):
    both("SET", "a", "1")
    both("RPUSH", "l", "x")
    both("RENAME", "a", "l")
    both("TYPE", "l")
    both("GET", "l")


# --- COPY MOVE --------------------------------------------------------------------------------


def test_copy(both):
    both("SET", "a", "1", "EX", "100")
    both("COPY", "a", "b")
    both("GET", "b")
    both("TTL", "b")
    both("COPY", "a", "b")
    both("SET", "a", "2")
    both("COPY", "a", "b", "REPLACE")
    both("GET", "b")
    both("TTL", "b")
    both("COPY", "missing", "c")
    both("COPY", "a", "a")


def test_copy_to_other_db(both):
    both("SET", "a", "1")
    both("COPY", "a", "a", "DB", "1")
    both("COPY", "a", "a", "DB", "1")
    both("COPY", "a", "a", "DB", "1", "REPLACE")
    both("SELECT", "1")
    both("GET", "a")
    both("SELECT", "0")


@pytest.mark.parametrize("args", [["DB", "16"], ["DB", "-1"], ["DB", "abc"], ["FOO"], ["DB"]])
def test_copy_errors(both, args):
    both("SET", "a", "1")
    both("COPY", "a", "b", *args)
    both("EXISTS", "b")


def test_move(both):
    both("SET", "a", "1", "EX", "100")
    both("MOVE", "a", "1")
    both("EXISTS", "a")
    both("MOVE", "missing", "1")
    both("SET", "a", "2")
    both("MOVE", "a", "1")  # exists in the target db: not moved
    both("GET", "a")
    both("SELECT", "1")
    both("GET", "a")
    both("TTL", "a")
    both("MOVE", "a", "1")
    both("MOVE", "a", "16")
    both("MOVE", "a", "abc")


# One value of each collection type (and encoding), with the command that reads it back whole.
COLLECTIONS = [
    (("RPUSH", "k", "a", "b", "c"), ("LRANGE", "k", "0", "-1")),
    (("SADD", "k", "3", "1", "2"), ("SMEMBERS", "k")),
    (("SADD", "k", "x", "y", "z"), ("SORT", "k", "ALPHA")),
    (("ZADD", "k", "1", "a", "2.5", "b", "-3", "c"), ("ZRANGE", "k", "0", "-1", "WITHSCORES")),
    (("HSET", "k", "f", "v", "g", "w"), ("HGETALL", "k")),
]


@pytest.mark.parametrize("create, read", COLLECTIONS, ids=lambda c: c[0])
def test_copy_of_every_type_to_another_db_is_independent_and_keeps_its_ttl(both, create, read):
    both(*create)
    both("PEXPIRE", "k", "100000")
    both("COPY", "k", "k", "DB", "3")
    both("DEL", "k")  # the copy does not share the original's members
    both("SELECT", "3")
    both(*read)
    both("TYPE", "k")
    both("OBJECT", "ENCODING", "k")
    assert 99_000 < both.strata.call("PTTL", "k") <= 100_000
    both("COPY", "k", "k", "DB", "0")
    both("SELECT", "0")
    both(*read)
    both("DBSIZE")


@pytest.mark.parametrize("create, read", COLLECTIONS, ids=lambda c: c[0])
def test_move_of_every_type_to_another_db_takes_members_and_ttl(both, create, read):
    both(*create)
    both("EXPIRE", "k", "100")
    both("MOVE", "k", "5")
    both("EXISTS", "k")
    both(*create)
    both("MOVE", "k", "5")  # the target db has the key now: not moved
    both("PERSIST", "k")
    both("SELECT", "5")
    both(*read)
    both("TTL", "k")
    both("MOVE", "k", "0")
    both("SELECT", "0")
    both(*read)
    both("DBSIZE")


# --- MEMORY USAGE -----------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    [], ["SAMPLES"], ["SAMPLES", "-1"], ["SAMPLES", "x"], ["FOO"], ["SAMPLES", "1", "FOO"],
])
def test_memory_usage_argument_errors(both, args):
    both("SET", "s", "v")
    both("MEMORY", "USAGE", *(["s"] + args if args else []))


def test_memory_usage_of_a_missing_key_is_null(both):
    both("MEMORY", "USAGE", "missing")
    both("MEMORY", "USAGE", "missing", "SAMPLES", "0")
    both("MEMORY", "NOSUCH")


def test_memory_usage_estimate_grows_with_the_value(strata):
    strata.set("small", "x")
    strata.set("big", "x" * 10_000)
    assert 0 < strata.memory_usage("small") < strata.memory_usage("big")
    strata.rpush("list", *range(10))
    strata.hset("hash", mapping={f"f{i}": "v" * 100 for i in range(100)})
    for key in ("list", "hash"):
        sampled = strata.memory_usage(key)
        full = strata.memory_usage(key, samples=0)
        assert sampled > 0 and full > 0, key
    assert strata.memory_usage("hash", samples=0) > 100 * 100


# --- KEYS -------------------------------------------------------------------------------------

KEY_NAMES = ["hello", "hallo", "hxllo", "hllo", "heeeello", "hbllo", "hcllo", "h[ae]llo", "h*llo",
             "h?llo", "a\\b", "foo", "foobar", "bar", "", "key:1", "key:2", "key:10", "KEY:3"]


@pytest.mark.parametrize("pattern", [
    "*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-c]llo", "h[c-a]llo", "h\\[ae\\]llo",
    "h\\*llo", "h\\?llo", "foo*", "*bar", "key:?", "key:*", "KEY:*", "nomatch*", "a\\\\b", "[",
    "h[", "*[", "key:[0-9]", "key:[!0-9]", "?", "",
])
def test_keys_glob_patterns(both, pattern):
    for i, name in enumerate(KEY_NAMES):
        both("SET", name, str(i))
    both.unordered("KEYS", pattern)


def test_keys_skips_expired_and_other_dbs(both):
    both("MSET", "a", "1", "b", "2")
    both("SET", "gone", "x", "PX", "1")
    both("SELECT", "2")
    both("SET", "c", "3")
    both("SELECT", "0")
    time.sleep(0.05)
    both.unordered("KEYS", "*")


# --- SCAN -------------------------------------------------------------------------------------


def _scan_all(conn, *args, limit=10_000):
    """SCAN from cursor 0 until the cursor is 0 again; returns the list of keys seen."""
    cursor, seen = b"0", []
    for _ in range(limit):
        reply = conn.call("SCAN", cursor, *args)
        assert isinstance(reply, list) and len(reply) == 2, reply
        cursor, keys = reply
        assert isinstance(cursor, bytes) and cursor.isdigit(), cursor
        seen += keys
        if cursor == b"0":
            return seen
    raise AssertionError(f"SCAN {args} did not finish in {limit} calls")


def _fill_for_scan(both):
    """270 keys of two types; returns their names."""
    cmds = [("SET", f"user:{i}", str(i)) for i in range(150)]
    cmds += [("SET", f"item:{i}", str(i)) for i in range(100)]
    cmds += [("RPUSH", f"list:{i}", "x") for i in range(20)]
    for c in cmds:
        both(*c)
    return {c[1].encode() for c in cmds}


@pytest.mark.parametrize("args,expect", [
    ([], lambda k: True),
    (["COUNT", "7"], lambda k: True),
    (["COUNT", "1000"], lambda k: True),
    (["MATCH", "user:*"], lambda k: k.startswith(b"user:")),
    (["MATCH", "user:1?", "COUNT", "5"], lambda k: k.startswith(b"user:1") and len(k) == 7),
    (["TYPE", "list"], lambda k: k.startswith(b"list:")),
    (["TYPE", "string", "MATCH", "item:*"], lambda k: k.startswith(b"item:")),
    (["MATCH", "nomatch*"], lambda k: False),
])
def test_scan_visits_every_matching_key_once(both, args, expect):
    # Order and batching are the server's own; only the set of keys is specified (a key may
    # even come twice), so each side is checked against the expected set.
    names = _fill_for_scan(both)
    expected = {k for k in names if expect(k)}
    for side, conn in (("strata", both.strata), ("redis", both.redis)):
        seen = set(_scan_all(conn, *args))
        assert seen == expected, (f"SCAN {args} on {side}: missing {sorted(expected - seen)[:10]}, "
                                  f"unexpected {sorted(seen - expected)[:10]}")


def test_scan_empty_db(both):
    both("SCAN", "0")
    both("SCAN", "0", "MATCH", "*", "COUNT", "10")


@pytest.mark.parametrize("args", [
    ["abc"], ["0", "COUNT", "0"], ["0", "COUNT", "-1"], ["0", "COUNT", "x"], ["0", "FOO"],
    ["0", "MATCH"], ["18446744073709551616"],
])
def test_scan_errors(both, args):
    both("SET", "k", "v")
    both("SCAN", *args)


# --- RANDOMKEY DBSIZE FLUSHDB FLUSHALL --------------------------------------------------------


def test_randomkey(both, strata):
    both("RANDOMKEY")
    both("SET", "only", "1")
    both("RANDOMKEY")
    strata.mset({"a": 1, "b": 2, "c": 3})
    seen = {strata.randomkey() for _ in range(50)}
    assert seen <= {b"only", b"a", b"b", b"c"} and len(seen) >= 2


def test_dbsize_counts_current_db(both):
    both("DBSIZE")
    both("MSET", "a", "1", "b", "2")
    both("DBSIZE")
    both("SELECT", "1")
    both("DBSIZE")
    both("SET", "c", "3")
    both("DBSIZE")


def test_flushdb_only_empties_current_db(both):
    both("SET", "a", "1")
    both("SELECT", "1")
    both("SET", "b", "1")
    both("FLUSHDB")
    both("DBSIZE")
    both("SELECT", "0")
    both("DBSIZE")
    both("FLUSHDB", "ASYNC")
    both("DBSIZE")
    both("FLUSHDB", "SYNC")
    both("FLUSHDB", "FOO")


@pytest.mark.parametrize("mode", [[], ["SYNC"], ["ASYNC"], ["sync"]])
def test_flushall_empties_every_db(both, mode):
    both("SET", "a", "1")
    both("SELECT", "5")
    both("SET", "b", "1")
    both("FLUSHALL", *mode)
    both("DBSIZE")
    both("SELECT", "0")
    both("DBSIZE")


def test_flushall_bad_option(both):
    both("FLUSHALL", "FOO")
    both("FLUSHALL", "SYNC", "ASYNC")


# --- SELECT SWAPDB ----------------------------------------------------------------------------


def test_select_isolates_databases(both):
    both("SET", "k", "db0")
    both("SELECT", "15")
    both("GET", "k")
    both("SET", "k", "db15")
    both("SELECT", "0")
    both("GET", "k")


@pytest.mark.parametrize("db", ["16", "-1", "abc", "1.5", "99999999999999999999"])
def test_select_out_of_range(both, db):
    both("SELECT", db)


def test_swapdb(both):
    both("SET", "k", "zero")
    both("SELECT", "1")
    both("SET", "k", "one")
    both("SET", "only1", "x")
    both("SWAPDB", "0", "1")
    both("GET", "k")
    both("DBSIZE")
    both("SELECT", "0")
    both("GET", "k")
    both("DBSIZE")
    both("SWAPDB", "0", "0")
    both("GET", "k")


@pytest.mark.parametrize("args", [["0", "16"], ["a", "1"], ["0", "b"], ["-1", "0"], ["0"]])
def test_swapdb_errors(both, args):
    both("SWAPDB", *args)


# --- OBJECT -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    "12345", "-12", "0", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "007", " 1", "1.5", "abc", "", "x" * 44, "x" * 45, "1" * 20, "1" * 21,
])
def test_object_encoding_of_strings(both, value):
    both("SET", "k", value)
    both("OBJECT", "ENCODING", "k")


def test_object_encoding_after_modification(both):
    both("SET", "k", "10")
    both("INCR", "k")
    both("OBJECT", "ENCODING", "k")
    both("SET", "a", "abc")
    both("APPEND", "a", "def")
    both("OBJECT", "ENCODING", "a")
    both("SET", "r", "abc")
    both("SETRANGE", "r", "1", "x")
    both("OBJECT", "ENCODING", "r")
    both("INCRBYFLOAT", "f", "1.5")
    both("OBJECT", "ENCODING", "f")
    both("OBJECT", "ENCODING", "missing")


def test_object_errors(both):
    both("SET", "k", "v")
    both("OBJECT", "FOO", "k")
    both("OBJECT", "ENCODING")
    both("OBJECT", "ENCODING", "k", "extra")
    both("OBJECT", "FREQ", "missing")
    both("OBJECT", "IDLETIME", "missing")
    both("OBJECT", "REFCOUNT", "missing")


def test_object_idletime_refcount_freq_shapes(strata_server):
    c = strata_server.conn()
    c.call("SET", "k", "v")
    idle = c.call("OBJECT", "IDLETIME", "k")
    assert isinstance(idle, int) and 0 <= idle <= 5
    refcount = c.call("OBJECT", "REFCOUNT", "k")
    assert isinstance(refcount, int) and refcount >= 1
    freq = c.call("OBJECT", "FREQ", "k")
    # Without an LFU maxmemory-policy redis refuses; with one it's an integer counter.
    assert isinstance(freq, int) or (isinstance(freq, RespError) and b"LFU" in freq.message), freq


def test_object_help_is_a_list_of_lines(strata_server):
    help_ = strata_server.conn().call("OBJECT", "HELP")
    assert isinstance(help_, list) and len(help_) > 4
    assert all(isinstance(line, bytes) for line in help_)
    assert help_[0].startswith(b"OBJECT <subcommand>")
    text = b"\n".join(help_)
    for sub in (b"ENCODING", b"FREQ", b"IDLETIME", b"REFCOUNT", b"HELP"):
        assert sub in text
