"""Hash commands, compared reply for reply with a real redis-server (the ``both`` fixture).

Redis lists a small hash (a listpack) in insertion order and Strata in field order, so replies
that list fields (HKEYS, HVALS, HGETALL, HSCAN, HRANDFIELD) are compared order-free.
"""

import random
import time

import pytest

from harness import RespError


def resp3(both):
    """Switch both connections to RESP3 (HELLO's own reply differs between servers)."""
    s, r = both.each("HELLO", "3")
    assert isinstance(s, dict) and isinstance(r, dict)


def _pairs(reply):
    """A flat [f, v, f, v...] list (or a RESP3 map) as a sorted list of pairs; errors as-is."""
    if isinstance(reply, dict):
        return sorted(reply.items())
    if isinstance(reply, list):
        return sorted(zip(reply[::2], reply[1::2]))
    return reply


def same_hash(both, key):
    """HGETALL of both servers hold the same pairs."""
    s, r = both.each("HGETALL", key)
    assert _pairs(s) == _pairs(r), f"HGETALL {key}\n  strata: {s!r}\n  redis:  {r!r}"
    return _pairs(r)


def scan_all(conn, cmd, key, *opts):
    """Every item a complete HSCAN/SSCAN iteration returns, and the number of calls it took."""
    cursor, items, calls = b"0", [], 0
    while True:
        reply = conn.call(cmd, key, cursor, *opts)
        if isinstance(reply, RespError):
            return reply, calls
        cursor, page = reply
        items += page
        calls += 1
        if cursor == b"0":
            return items, calls


# --- HSET HGET HMSET HSETNX HMGET --------------------------------------------------------------


def test_hset_counts_new_fields_and_hget_reads_them(both):
    both("HSET", "h", "a", "1", "b", "2")
    both("HSET", "h", "a", "10", "c", "3")
    both("HSET", "h", "d", "1", "d", "2")  # a field given twice counts once, last value wins
    both("HGET", "h", "a")
    both("HGET", "h", "d")
    both("HGET", "h", "missing")
    both("HGET", "missing", "a")
    both("HSET", "h", "", "empty field")
    both("HGET", "h", "")
    both("HSET", "h", "bin\x00\r\n", "v\x00")
    both("HGET", "h", "bin\x00\r\n")
    both("HLEN", "h")


@pytest.mark.parametrize("cmd", [
    ["HSET", "h"], ["HSET", "h", "f"], ["HSET", "h", "f", "v", "g"],
    ["HMSET", "h", "f"], ["HMSET", "h", "f", "v", "g"],
    ["HSETNX", "h", "f"], ["HGET", "h"], ["HMGET", "h"], ["HDEL", "h"], ["HLEN"],
    ["HSTRLEN", "h"], ["HEXISTS", "h"], ["HKEYS"], ["HVALS"], ["HGETALL"],
    ["HINCRBY", "h", "f"], ["HINCRBYFLOAT", "h", "f"], ["HRANDFIELD"], ["HSCAN", "h"],
])
def test_wrong_number_of_arguments(both, cmd):
    both(*cmd)


def test_hmset_replies_ok(both):
    both("HMSET", "h", "a", "1", "b", "2")
    both("HMSET", "h", "a", "3")
    both("HMGET", "h", "a", "b", "missing", "a")
    both("HMGET", "missing", "a", "b")


def test_hsetnx_only_sets_missing_fields(both):
    both("HSETNX", "h", "a", "1")
    both("HSETNX", "h", "a", "2")
    both("HGET", "h", "a")
    both("HSETNX", "h", "b", "3")
    both("HLEN", "h")


# --- HDEL HLEN HSTRLEN HEXISTS ------------------------------------------------------------------


def test_hdel_counts_existing_fields_and_empty_hash_disappears(both):
    both("HSET", "h", "a", "1", "b", "2", "c", "3")
    both("HDEL", "h", "a", "missing", "a")
    both("HLEN", "h")
    both("HDEL", "missing", "a")
    both("HDEL", "h", "b", "c")
    both("EXISTS", "h")
    both("HLEN", "h")
    both("TYPE", "h")


def test_hstrlen_and_hexists(both):
    both("HSET", "h", "a", "hello", "e", "")
    both("HSTRLEN", "h", "a")
    both("HSTRLEN", "h", "e")
    both("HSTRLEN", "h", "missing")
    both("HSTRLEN", "missing", "a")
    both("HEXISTS", "h", "a")
    both("HEXISTS", "h", "e")
    both("HEXISTS", "h", "missing")
    both("HEXISTS", "missing", "a")


# --- HKEYS HVALS HGETALL ------------------------------------------------------------------------


def test_hkeys_hvals_hgetall(both):
    both("HSET", "h", "b", "2", "a", "1", "c", "3")
    both.unordered("HKEYS", "h")
    both.unordered("HVALS", "h")
    same_hash(both, "h")
    both("HKEYS", "missing")
    both("HVALS", "missing")
    both("HGETALL", "missing")


def test_hgetall_is_a_map_in_resp3(both):
    resp3(both)
    both("HSET", "h", "a", "1")
    both("HGETALL", "h")
    both("HGETALL", "missing")
    both("HSET", "h", "b", "2")
    same_hash(both, "h")


def test_single_field_replies_are_byte_identical(both):
    both("HSET", "h", "only", "value")
    both("HKEYS", "h")
    both("HVALS", "h")
    both("HGETALL", "h")
    both("HSCAN", "h", "0")
    both("HRANDFIELD", "h")
    both("HRANDFIELD", "h", "1", "WITHVALUES")
    both("HRANDFIELD", "h", "-3", "WITHVALUES")


# --- HINCRBY HINCRBYFLOAT -----------------------------------------------------------------------


def test_hincrby(both):
    both("HINCRBY", "h", "n", "5")
    both("HINCRBY", "h", "n", "-12")
    both("HGET", "h", "n")
    both("HSET", "h", "max", "9223372036854775807", "min", "-9223372036854775808")
    both("HINCRBY", "h", "max", "1")
    both("HINCRBY", "h", "min", "-1")
    both("HINCRBY", "h", "max", "0")
    both("HINCRBY", "h", "n", "x")
    both("HINCRBY", "h", "n", "1.5")
    both("HINCRBY", "h", "n", "9223372036854775808")


@pytest.mark.parametrize("value", ["abc", "1.5", " 1", "1 ", "", "12345678901234567890", "0x10", "+1", "01"])
def test_hincrby_refuses_non_integer_values(both, value):
    both("HSET", "h", "f", value)
    both("HINCRBY", "h", "f", "1")
    both("HGET", "h", "f")


def test_hincrbyfloat(both):
    both("HINCRBYFLOAT", "h", "f", "10.5")
    both("HINCRBYFLOAT", "h", "f", "0.1")
    both("HINCRBYFLOAT", "h", "k", "2.5")
    both("HINCRBYFLOAT", "h", "k", "-5")
    both("HINCRBYFLOAT", "h", "k", "5.0e3")
    both("HINCRBYFLOAT", "h", "g", "3.0e15")
    both("HINCRBYFLOAT", "h", "g", "-3.0e15")
    both("HINCRBYFLOAT", "h", "z", "-0")
    both("HSET", "h", "e", "1e10")
    both("HINCRBYFLOAT", "h", "e", "1")
    both("HGET", "h", "f")


@pytest.mark.parametrize("incr", ["x", "nan", "inf", "-inf", "+inf", "1e", " 1", ""])
def test_hincrbyfloat_refuses_bad_increments(both, incr):
    both("HSET", "h", "f", "1")
    both("HINCRBYFLOAT", "h", "f", incr)
    both("HGET", "h", "f")


@pytest.mark.parametrize("value", ["abc", " 1", "1 ", "", "nan", "0x"])
def test_hincrbyfloat_refuses_non_float_values(both, value):
    both("HSET", "h", "f", value)
    both("HINCRBYFLOAT", "h", "f", "1")


# --- WRONGTYPE ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", [
    ["HSET", "k", "f", "v"], ["HMSET", "k", "f", "v"], ["HSETNX", "k", "f", "v"], ["HGET", "k", "f"],
    ["HMGET", "k", "f"], ["HDEL", "k", "f"], ["HLEN", "k"], ["HSTRLEN", "k", "f"],
    ["HEXISTS", "k", "f"], ["HKEYS", "k"], ["HVALS", "k"], ["HGETALL", "k"],
    ["HINCRBY", "k", "f", "1"], ["HINCRBYFLOAT", "k", "f", "1"], ["HRANDFIELD", "k"],
    ["HRANDFIELD", "k", "0"], ["HRANDFIELD", "k", "2", "WITHVALUES"], ["HSCAN", "k", "0"],
    ["HSCAN", "k", "0", "BADOPTION"],
])
@pytest.mark.parametrize("other", [["SET", "k", "v"], ["SADD", "k", "m"], ["RPUSH", "k", "a"]])
def test_hash_commands_on_other_types_are_wrongtype(both, cmd, other):
    both(*other)
    both(*cmd)
    both("TYPE", "k")


def test_argument_errors_come_before_wrongtype(both):
    both("SET", "k", "v")
    both("HINCRBY", "k", "f", "x")
    both("HINCRBYFLOAT", "k", "f", "x")
    both("HINCRBYFLOAT", "k", "f", "inf")
    both("HRANDFIELD", "k", "x")
    both("HRANDFIELD", "k", "1", "foo")
    both("HSCAN", "k", "x")


# --- HRANDFIELD (random: compare shapes, not values) --------------------------------------------


def test_hrandfield_errors_and_empty_cases(both):
    both("HSET", "h", "a", "1", "b", "2", "c", "3")
    for cmd in [
        ["HRANDFIELD", "missing"], ["HRANDFIELD", "missing", "5"], ["HRANDFIELD", "missing", "-5"],
        ["HRANDFIELD", "missing", "5", "WITHVALUES"], ["HRANDFIELD", "h", "0"],
        ["HRANDFIELD", "h", "0", "WITHVALUES"], ["HRANDFIELD", "h", "1", "WITHVALUE"],
        ["HRANDFIELD", "h", "1", "WITHVALUES", "x"], ["HRANDFIELD", "h", "x"],
        ["HRANDFIELD", "h", "x", "y"], ["HRANDFIELD", "h", "-9223372036854775808"],
        ["HRANDFIELD", "missing", "-4611686018427387904", "WITHVALUES"],
        ["HRANDFIELD", "missing", "4611686018427387904", "WITHVALUES"],
        ["HRANDFIELD", "missing", "-4611686018427387903", "WITHVALUES"],
        ["HRANDFIELD", "h", "1.5"],
    ]:
        both(*cmd)


def test_hrandfield_whole_hash_matches_redis_unordered(both):
    both("HSET", "h", "a", "1", "b", "2", "c", "3")
    both.unordered("HRANDFIELD", "h", "3")
    both.unordered("HRANDFIELD", "h", "10")
    s, r = both.each("HRANDFIELD", "h", "10", "WITHVALUES")
    assert _pairs(s) == _pairs(r)


def test_hrandfield_returns_fields_of_the_hash(strata):
    fields = {f"f{i}".encode(): f"v{i}".encode() for i in range(50)}
    strata.hset("h", mapping=fields)
    assert strata.hrandfield("h") in fields
    distinct = strata.hrandfield("h", 20)
    assert len(distinct) == 20 and len(set(distinct)) == 20 and set(distinct) <= set(fields)
    repeats = strata.hrandfield("h", -200)
    assert len(repeats) == 200 and set(repeats) <= set(fields)
    pairs = strata.hrandfield("h", -30, withvalues=True)
    assert len(pairs) == 60
    for f, v in zip(pairs[::2], pairs[1::2]):
        assert fields[f] == v
    seen = {strata.hrandfield("h") for _ in range(400)}
    assert len(seen) > 40


def test_hrandfield_on_a_big_hash_spreads_over_it(strata):
    pipe = strata.pipeline(transaction=False)
    for start in range(0, 20_000, 1000):
        pipe.hset("h", mapping={f"user:{i}": i for i in range(start, start + 1000)})
    pipe.execute()
    seen = {strata.hrandfield("h") for _ in range(300)}
    assert len(seen) > 150
    distinct = strata.hrandfield("h", 100)
    assert len(set(distinct)) == 100


def test_hrandfield_with_values_is_pairs_in_resp3(strata_server):
    with strata_server.conn() as c:
        c.call("HELLO", "3")
        c.call("HSET", "h", "a", "1", "b", "2")
        reply = c.call("HRANDFIELD", "h", "-5", "WITHVALUES")
        assert len(reply) == 5
        for pair in reply:
            assert pair in ([b"a", b"1"], [b"b", b"2"])
        assert c.call("HRANDFIELD", "h", "1", "WITHVALUES")[0] in ([b"a", b"1"], [b"b", b"2"])


def test_hrandfield_resp3_shapes_match_redis(both):
    resp3(both)
    both("HSET", "h", "a", "1")
    both("HRANDFIELD", "h", "2", "WITHVALUES")
    both("HRANDFIELD", "h", "-2", "WITHVALUES")
    both("HRANDFIELD", "missing", "2", "WITHVALUES")
    both("HRANDFIELD", "missing")


# --- HSCAN ------------------------------------------------------------------------------------


def test_hscan_of_a_small_hash_is_one_page(both):
    both("HSET", "h", "a", "1", "b", "2", "", "3", "ab", "4")
    for opts in [[], ["COUNT", "1"], ["MATCH", "*"], ["MATCH", "a*"], ["MATCH", "*", "COUNT", "2"],
                 ["MATCH", "nomatch"], ["COUNT", "100", "MATCH", "?"]]:
        s, r = both.each("HSCAN", "h", "0", *opts)
        assert s[0] == r[0] == b"0"
        assert _pairs(s[1]) == _pairs(r[1]), opts


@pytest.mark.parametrize("opts", [
    ["COUNT", "0"], ["COUNT", "-1"], ["COUNT", "x"], ["COUNT"], ["MATCH"], ["TYPE", "string"],
    ["NOVALUES"], ["FOO", "bar"], ["COUNT", "1", "MATCH"],
])
def test_hscan_option_errors(both, opts):
    both("HSET", "h", "a", "1")
    both("HSCAN", "h", "0", *opts)


@pytest.mark.parametrize("cursor", ["x", "-1", "18446744073709551615", "18446744073709551616", "1.5", " 1", "+0", ""])
def test_hscan_cursor_parsing(both, cursor):
    both("HSET", "h", "a", "1")
    both("HSCAN", "h", cursor)
    both("HSCAN", "missing", cursor)


def test_hscan_of_a_missing_key_ignores_options(both):
    both("HSCAN", "missing", "0")
    both("HSCAN", "missing", "0", "BADOPTION")
    both("HSCAN", "missing", "0", "COUNT", "0")


def test_hscan_of_a_big_hash_visits_every_field_once(both):
    fields = {f"field:{i}": str(i) for i in range(1500)}
    flat = [x for kv in fields.items() for x in kv]
    both("HSET", "h", *flat)
    for opts in [[], ["COUNT", "100"], ["MATCH", "field:1*", "COUNT", "50"]]:
        s, calls = scan_all(both.strata, "HSCAN", "h", *opts)
        r, _ = scan_all(both.redis, "HSCAN", "h", *opts)
        sp, rp = _pairs(s), _pairs(r)
        assert len(set(sp)) == len(sp), "a field came back twice"
        assert sorted(set(sp)) == sorted(set(rp))
        assert calls > 1


def test_hscan_of_hash_with_long_values_pages(both):
    both("HSET", "h", *[x for i in range(30) for x in (f"f{i}", "x" * 100)])
    both("OBJECT", "ENCODING", "h")
    s, _ = scan_all(both.strata, "HSCAN", "h", "COUNT", "5")
    r, _ = scan_all(both.redis, "HSCAN", "h", "COUNT", "5")
    assert sorted(set(_pairs(s))) == sorted(set(_pairs(r)))


# --- OBJECT ENCODING, TYPE, SCAN TYPE ------------------------------------------------------------


def test_object_encoding_of_hashes(both):
    both("HSET", "small", "f", "v" * 64)
    both("OBJECT", "ENCODING", "small")
    both("HSET", "longvalue", "f", "v" * 65)
    both("OBJECT", "ENCODING", "longvalue")
    both("HSET", "longfield", "f" * 65, "v")
    both("OBJECT", "ENCODING", "longfield")
    both("HSET", "wide", *[x for i in range(512) for x in (f"f{i}", "v")])
    both("OBJECT", "ENCODING", "wide")
    both("HSET", "wide", "one-more", "v")
    both("OBJECT", "ENCODING", "wide")
    both("HSET", "num", "f", "1")
    both.each("HINCRBYFLOAT", "num", "f", "1e70")  # 71 digits (Redis's differ after the 17th)
    both("OBJECT", "ENCODING", "num")


def test_type_and_scan_type_see_hashes(both):
    both("HSET", "h", "f", "v")
    both("SET", "s", "v")
    both("TYPE", "h")
    both("SCAN", "0", "TYPE", "hash")


# --- expiry and persistence -------------------------------------------------------------------


def test_hash_ttl_is_kept_by_writes_and_hash_expires(both):
    both("HSET", "h", "a", "1")
    both("PEXPIRE", "h", "100000")
    both("HSET", "h", "b", "2")
    both("HDEL", "h", "a")
    both("HINCRBY", "h", "n", "1")
    s, r = both.each("TTL", "h")
    assert s == r == 100
    both("PEXPIRE", "h", "30")
    time.sleep(0.1)
    both("HGETALL", "h")
    both("HLEN", "h")
    both("HSET", "h", "c", "3")
    both("HGETALL", "h")
    both("TTL", "h")


def test_hash_survives_restart(start_strata):
    server = start_strata()
    c = server.client()
    c.hset("h", mapping={"a": "1", "b": "2"})
    server.restart()
    c = server.client()
    assert c.hgetall("h") == {b"a": b"1", b"b": b"2"}
    assert c.hlen("h") == 2


# --- seeded random sequence, every reply compared ---------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_command_sequence_matches_redis(both, seed):
    rng = random.Random(seed)
    keys = ["h1", "h2", "h3", "str"]
    both("SET", "str", "text")
    fields = [f"f{i}" for i in range(8)] + [""]
    values = ["0", "1", "-7", "12", "2.5", "abc", ""]

    def pairs(n):
        return [x for _ in range(n) for x in (rng.choice(fields), rng.choice(values))]

    for _ in range(400):
        k = rng.choice(keys)
        f = rng.choice(fields)
        op = rng.randrange(20)
        unordered = pairs_reply = False
        if op < 3:
            cmd = ["HSET", k, *pairs(rng.randint(1, 3))]
        elif op == 3:
            cmd = ["HMSET", k, *pairs(rng.randint(1, 2))]
        elif op == 4:
            cmd = ["HSETNX", k, f, rng.choice(values)]
        elif op == 5:
            cmd = ["HGET", k, f]
        elif op == 6:
            cmd = ["HMGET", k, *rng.sample(fields, rng.randint(1, 3))]
        elif op == 7:
            cmd = ["HDEL", k, *rng.sample(fields, rng.randint(1, 3))]
        elif op == 8:
            cmd = ["HLEN", k]
        elif op == 9:
            cmd = ["HSTRLEN", k, f]
        elif op == 10:
            cmd = ["HEXISTS", k, f]
        elif op == 11:
            cmd = ["HINCRBY", k, f, str(rng.randint(-5, 5))]
        elif op == 12:
            cmd = ["HINCRBYFLOAT", k, f, rng.choice(["0.5", "-1.25", "3", "1e3"])]
        elif op == 13:
            cmd, unordered = [rng.choice(["HKEYS", "HVALS"]), k], True
        elif op == 14:
            cmd, pairs_reply = ["HGETALL", k], True
        elif op == 15:
            cmd, unordered = ["HRANDFIELD", k, "100"], True
        elif op == 16:
            cmd = ["HRANDFIELD", k, "0"]
        elif op == 17:
            cmd = [rng.choice(["EXISTS", "TYPE"]), k]
        elif op == 18:
            cmd = ["DEL", k] if k != "str" and rng.random() < 0.3 else ["HLEN", k]
        else:
            cmd, pairs_reply = ["HSCAN", k, "0"], True
        if unordered:
            both.unordered(*cmd)
        elif pairs_reply:
            s, r = both.each(*cmd)
            if cmd[0] == "HSCAN" and isinstance(r, list):
                assert s[0] == r[0]
                s, r = s[1], r[1]
            assert _pairs(s) == _pairs(r), f"{cmd}\n  strata: {s!r}\n  redis:  {r!r}"
        else:
            both(*cmd)
    for k in keys:
        if k != "str":
            same_hash(both, k)
            both("HLEN", k)


# --- big keys ---------------------------------------------------------------------------------


def test_big_hash_delete_is_fast_and_recreated_key_starts_empty(strata):
    n = 200_000
    pipe = strata.pipeline(transaction=False)
    for start in range(0, n, 5_000):
        pipe.hset("big", mapping={f"field-{i}": i for i in range(start, start + 5_000)})
    pipe.execute()
    assert strata.hlen("big") == n
    assert strata.hget("big", "field-150000") == b"150000"
    t = time.monotonic()
    assert strata.delete("big") == 1
    assert time.monotonic() - t < 0.5
    assert strata.hlen("big") == 0
    assert strata.hget("big", "field-1") is None
    strata.hset("big", mapping={"field-1": "fresh", "other": "x"})
    assert strata.hlen("big") == 2
    assert strata.hgetall("big") == {b"field-1": b"fresh", b"other": b"x"}
