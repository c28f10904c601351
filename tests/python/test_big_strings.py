"""Big strings stored in fragments (docs/format.md, "string, encoding version 2"): every command that
reads or writes a string, on strings past the 64 KB threshold the partial writes (SETRANGE, APPEND,
SETBIT, BITFIELD, BITOP) store in 4 KB fragments, compared reply for reply with a real redis-server
(the ``both`` fixture); a seeded random model across a kill -9 (``appendfsync always``) and a graceful
restart; ``SETBIT k 4294967295 1`` read back whole (length and hash of GET's 512 MB reply) and the
disk it costs.

Reproduce a failure of the random tests with the printed seed: ``STRATA_BIG_SEED=<seed>``.
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
import time

from harness import RespError

SEED = int(os.environ.get("STRATA_BIG_SEED", str(int(time.time()))))

F = 4096
THRESHOLD = 64 * 1024


def _noise(rng: random.Random, n: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(n))


def _fragmented(both, rng: random.Random, key: str, n: int = THRESHOLD + 3 * F + 17):
    """Makes `key` a string of n bytes the partial writes store in fragments."""
    both("DEL", key)
    both("SETRANGE", key, 0, _noise(rng, n))
    assert both("STRLEN", key) == n


def test_reads_of_a_fragmented_string_match_redis(both):
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    _fragmented(both, rng, "big")
    n = both("STRLEN", "big")
    both("GET", "big")
    for start, end in [(0, -1), (F - 1, F), (F, F), (F + 1, 3 * F), (F - 1, F + 1), (-1, -1),
                       (-F - 1, -F + 1), (n - 2, n + 10), (n, n + 5), (5, 2), (-5, -10),
                       (0, 0), (THRESHOLD - 1, THRESHOLD + 1), (-100000000, 100000000)]:
        both("GETRANGE", "big", start, end)
        both("SUBSTR", "big", start, end)
    for off in [0, 7, 8 * F - 1, 8 * F, 8 * F + 1, 8 * n - 1, 8 * n, 8 * n + 100]:
        both("GETBIT", "big", off)
    both("BITCOUNT", "big")
    for rest in [(0, -1), (F - 1, F + 1), (-3, -1), (8 * F - 3, 8 * F + 3, "BIT"), (5, 2),
                 (-1, -3), (100, 100000000), (0, 8 * n - 1, "BIT"), (1, 2 * F, "BYTE")]:
        both("BITCOUNT", "big", *rest)
    for bit in (0, 1):
        for rest in [(), (F,), (F - 1, F + 1), (-1,), (0, -1, "BIT"), (8 * F - 1, 8 * F + 1, "BIT"),
                     (3, 2), (n - 1,), (n + 1,)]:
            both("BITPOS", "big", bit, *rest)
    both("BITFIELD_RO", "big", "GET", "u8", 8 * F - 4, "GET", "i64", 8 * F - 30, "GET", "u63", 8 * n - 10)
    both("BITFIELD", "big", "GET", "i17", 8 * THRESHOLD - 3)
    both("TYPE", "big")
    both("OBJECT", "ENCODING", "big")
    both("EXISTS", "big")
    both("LCS", "big", "small")
    both("SET", "small", _noise(rng, 12))
    both("LCS", "big", "small", "LEN")
    assert both("INCR", "big") == RespError(b"ERR value is not an integer or out of range")
    both("INCRBY", "big", 5)
    both("DECR", "big")
    both("DECRBY", "big", 5)
    both("INCRBYFLOAT", "big", 1.5)
    both("PFADD", "big", "a")
    both("PFCOUNT", "big")
    both("PFCOUNT", "big", "small")
    both("PFMERGE", "dst", "big")


def test_writes_at_fragment_boundaries_match_redis(both):
    rng = random.Random(SEED + 1)
    _fragmented(both, rng, "big")
    n = both("STRLEN", "big")
    for off, value in [(F - 1, b"ab"), (F, b"c"), (F + 1, b"d"), (3 * F - 2, _noise(rng, 2 * F + 5)),
                       (0, b"head"), (n - 1, b"tail!"), (n + 2 * F + 3, b"past a gap"),
                       (THRESHOLD, b"x"), (200000, b"far")]:
        both("SETRANGE", "big", off, value)
        both("STRLEN", "big")
        both("GETRANGE", "big", max(off - 3, 0), off + len(value) + 3)
    both("GET", "big")
    for _ in range(3):
        both("APPEND", "big", _noise(rng, rng.choice([1, 100, F, 3 * F + 1])))
    both("GET", "big")
    for off in [0, 8 * F - 1, 8 * F, 8 * F + 1, 8 * 300000, 8 * 300000 + 7]:
        both("SETBIT", "big", off, 1)
        both("SETBIT", "big", off, 1)
        both("SETBIT", "big", off, 0)
        both("GETBIT", "big", off)
    both("BITFIELD", "big", "SET", "u16", 8 * F - 8, 0xABCD, "INCRBY", "i64", 8 * F - 30, 12345,
         "OVERFLOW", "FAIL", "INCRBY", "u8", 8 * F, 300, "GET", "u16", 8 * F - 8)
    both("BITFIELD", "big", "SET", "i8", 8 * 400000, -3, "GET", "i8", 8 * 400000)
    both("STRLEN", "big")
    both("GET", "big")
    both("SETRANGE", "big", 1, "")
    both("APPEND", "big", "")


def test_strings_grow_past_the_threshold_from_inline(both):
    rng = random.Random(SEED + 2)
    # APPEND, SETRANGE, SETBIT and BITFIELD each take an inline string past the threshold.
    for key, grow in [("a", ("APPEND", "a", _noise(rng, 10000))),
                      ("s", ("SETRANGE", "s", THRESHOLD - 3, "overlap")),
                      ("b", ("SETBIT", "b", 8 * THRESHOLD + 5, 1)),
                      ("f", ("BITFIELD", "f", "SET", "u32", 8 * THRESHOLD - 16, 0xDEADBEEF))]:
        both("SET", key, _noise(rng, THRESHOLD - 4000))
        both("EXPIRE", key, 1000)
        both(*grow)
        both("GET", key)
        both("STRLEN", key)
        both("OBJECT", "ENCODING", key)
        assert 0 < both("TTL", key) <= 1000
    # A string SET whole past the threshold stays inline; a partial write converts it.
    both("SET", "w", _noise(rng, THRESHOLD * 2))
    both("SETRANGE", "w", 3, "in place")
    both("GET", "w")
    # New keys born past the threshold.
    both("SETRANGE", "n1", THRESHOLD * 3, "x")
    both("SETBIT", "n2", 8 * THRESHOLD * 3, 1)
    both("BITFIELD", "n3", "INCRBY", "u8", 8 * THRESHOLD * 2, 7)
    for k in ("n1", "n2", "n3"):
        both("GET", k)
        both("BITCOUNT", k)
        both("BITPOS", k, 1)
        both("BITPOS", k, 0, 10)


def test_whole_value_commands_on_fragmented_strings(both):
    rng = random.Random(SEED + 3)
    for cmd in [("GETSET", "big", "short"), ("SET", "big", "v", "GET"), ("GETDEL", "big"),
                ("GETEX", "big", "EX", 100), ("GETEX", "big", "PERSIST"), ("GETEX", "big")]:
        _fragmented(both, rng, "big")
        both(*cmd)
        both("GET", "big")
        both("STRLEN", "big")
    _fragmented(both, rng, "big")
    both("EXPIRE", "big", 100)
    both("GET", "big")
    both("PERSIST", "big")
    both("TTL", "big")
    both("GETRANGE", "big", F, 2 * F)
    # Overwrite with a short value, then grow again: the old fragments never show.
    both("SET", "big", "tiny")
    both("SETRANGE", "big", THRESHOLD + 10, "z")
    both("GET", "big")
    both("DEL", "big")
    both("SETBIT", "big", 8 * (THRESHOLD + 100), 1)
    both("GET", "big")
    both("MSET", "big", "m", "other", "o")
    both("MGET", "big", "other")
    _fragmented(both, rng, "big")
    both("MGET", "big", "nokey", "small")


def test_bitop_with_fragmented_sources_and_destination(both):
    rng = random.Random(SEED + 4)
    _fragmented(both, rng, "x")
    _fragmented(both, rng, "y", THRESHOLD + 5 * F)
    both("SET", "s", _noise(rng, 100))
    for op in ("AND", "OR", "XOR"):
        both("BITOP", op, "d", "x", "y", "s", "missing")
        both("GET", "d")
        both("BITCOUNT", "d")
    both("BITOP", "NOT", "d", "y")
    both("GET", "d")
    both("BITOP", "AND", "d", "s")  # a short result replaces a fragmented destination
    both("GET", "d")
    both("BITOP", "OR", "x", "x", "s")  # the destination is also a source
    both("GET", "x")


def test_copy_rename_move_and_sort_of_fragmented_strings(both):
    rng = random.Random(SEED + 5)
    _fragmented(both, rng, "big")
    both("EXPIRE", "big", 1000)
    both("COPY", "big", "c1")
    both("SETRANGE", "c1", 5, "copy only")
    both("GET", "big")
    both("GET", "c1")
    both("RENAME", "c1", "c2")
    both("EXISTS", "c1")
    both("GET", "c2")
    both("SETBIT", "c2", 8 * 500000, 1)
    both("GET", "c2")
    both("MOVE", "c2", 1)
    both("SELECT", 1)
    both("GET", "c2")
    both("SETRANGE", "c2", 70000, "in db 1")
    both("GETRANGE", "c2", 69990, 70020)
    both("COPY", "c2", "c3", "DB", 0)
    both("DEL", "c2")
    both("SELECT", 0)
    both("GET", "c3")
    both("RPUSH", "ids", 1, 2)
    both("SET", "w_1", 5)
    both("SET", "w_2", 3)
    _fragmented(both, rng, "data_1")
    _fragmented(both, rng, "data_2", THRESHOLD + 1)
    both("SORT", "ids", "BY", "w_*", "GET", "data_*", "GET", "#")
    both("SORT", "ids", "BY", "data_*", "ALPHA")


def test_dump_and_restore_of_fragmented_strings(both):
    rng = random.Random(SEED + 6)
    _fragmented(both, rng, "big")
    s_dump, r_dump = both.each("DUMP", "big")
    # Each server restores the other's payload.
    assert both.strata.call("RESTORE", "fromredis", 0, r_dump) == b"OK"
    assert both.redis.call("RESTORE", "fromredis", 0, s_dump) == b"OK"
    both("GET", "fromredis")
    both("SETRANGE", "fromredis", 3, "edited")
    both("GET", "fromredis")
    both("RESTORE", "fromredis", 0, r_dump, "REPLACE")
    both("GET", "fromredis")


def test_fragmented_strings_in_multi_exec_and_lua(both):
    rng = random.Random(SEED + 7)
    _fragmented(both, rng, "big")
    both("MULTI")
    both("SETRANGE", "big", F - 2, "spans")
    both("APPEND", "big", "more")
    both("SETBIT", "big", 8 * 200000, 1)
    both("GETRANGE", "big", F - 4, F + 4)
    both("BITCOUNT", "big", 0, 2 * F)
    both("STRLEN", "big")
    both("EXEC")
    both("GET", "big")
    script = ("redis.call('SETRANGE', KEYS[1], ARGV[1], 'lua') "
              "redis.call('SETBIT', KEYS[1], ARGV[2], 1) "
              "return {redis.call('STRLEN', KEYS[1]), redis.call('GETRANGE', KEYS[1], ARGV[1], ARGV[1] + 5),"
              " redis.call('BITCOUNT', KEYS[1])}")
    both("EVAL", script, 1, "big", THRESHOLD + 5, 8 * 300000 + 3)
    both("EVAL", script, 1, "newkey", THRESHOLD * 2, 8 * THRESHOLD)
    both("GET", "big")
    both("GET", "newkey")


def _model_command(rng: random.Random, keys: list[str]):
    k = rng.choice(keys)
    off = rng.choice([rng.randrange(3 * THRESHOLD), F * rng.randrange(1, 60) + rng.choice([-1, 0, 1]),
                      THRESHOLD + rng.choice([-1, 0, 1])])
    return rng.choice([
        lambda: ("SETRANGE", k, off, _noise(rng, rng.choice([1, 3, 100, F + 1]))),
        lambda: ("APPEND", k, _noise(rng, rng.choice([1, 50, 2 * F]))),
        lambda: ("SETBIT", k, 8 * off + rng.randrange(8), rng.randrange(2)),
        lambda: ("BITFIELD", k, "INCRBY", "i12", 8 * off + 3, rng.randint(-5000, 5000),
                 "GET", "u8", 8 * off),
        lambda: ("GETRANGE", k, off - 10, off + 10),
        lambda: ("GETRANGE", k, -off, -1),
        lambda: ("BITCOUNT", k, off, off + 3 * F),
        lambda: ("BITPOS", k, rng.randrange(2), off),
        lambda: ("GETBIT", k, 8 * off + 1),
        lambda: ("STRLEN", k),
        lambda: ("SET", k, _noise(rng, rng.choice([5, THRESHOLD + 10]))),
        lambda: ("COPY", k, rng.choice(keys), "REPLACE"),
        lambda: ("DEL", k),
        lambda: ("INCR", k),
        lambda: ("EXPIRE", k, 10000),
        lambda: ("PERSIST", k),
    ])()


def _run_model(rng, seed, s, ref, keys, steps):
    for step in range(steps):
        cmd = _model_command(rng, keys)
        sr, rr = s.call_raw(*cmd), ref.call_raw(*cmd)
        assert sr == rr, f"seed {seed} step {step}: {cmd[:3]}\n  strata: {sr[:200]!r}\n  redis: {rr[:200]!r}"


def _same_strings(s, ref, keys, seed, when):
    for k in keys:
        assert s.call_raw("TYPE", k) == ref.call_raw("TYPE", k), f"seed {seed}: {k} {when}"
        assert s.call_raw("GET", k) == ref.call_raw("GET", k), f"seed {seed}: {k} {when}"
        ttl = [min(c.call("TTL", k), 0) for c in (s, ref)]  # -2, -1, or 0 for "expires"
        assert ttl[0] == ttl[1], f"seed {seed}: {k} {when}"


def test_random_big_string_operations_survive_kill9_and_graceful_restart(start_strata, redis_server):
    seed = SEED + 8
    rng = random.Random(seed)
    print(f"model seed {seed}")
    strata = start_strata(appendfsync="always")
    ref = redis_server.conn()
    keys = ["m1", "m2", "m3"]
    for restart_kind in ("kill -9", "graceful"):
        s = strata.conn(timeout=60)
        _run_model(rng, seed, s, ref, keys, 300)
        strata.restart(kill=restart_kind == "kill -9")
        _same_strings(strata.conn(timeout=60), ref, keys, seed, f"after a {restart_kind} restart")


def _streamed_get(port: int, key: str) -> tuple[int, str]:
    """GET `key`, reading the reply in pieces: (length, sha256 of the value)."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key.encode()))
        buf = b""
        while b"\r\n" not in buf:
            buf += sock.recv(65536)
        header, rest = buf.split(b"\r\n", 1)
        assert header.startswith(b"$"), header
        n = int(header[1:])
        h = hashlib.sha256(rest[:n])
        remaining = n - min(len(rest), n)
        while remaining > 0:
            chunk = sock.recv(min(1 << 20, remaining))
            assert chunk, "connection closed mid-reply"
            h.update(chunk)
            remaining -= len(chunk)
        return n, h.hexdigest()


def test_setbit_at_the_largest_offset_reads_back_like_redis(both, strata_server, redis_server):
    started = time.monotonic()
    both("SETBIT", "huge", 4294967295, 1)
    both("BITCOUNT", "huge")
    both("BITCOUNT", "huge", 1000, 1000 + (1 << 20))
    both("BITPOS", "huge", 1)
    both("BITPOS", "huge", 0)
    both("BITPOS", "huge", 1, -1, -1)
    both("GETRANGE", "huge", -10, -1)
    both("GETRANGE", "huge", 0, 5)
    both("STRLEN", "huge")
    assert _streamed_get(strata_server.port, "huge") == _streamed_get(redis_server.port, "huge")
    both("DEL", "huge")
    assert time.monotonic() - started < 120


def _dir_bytes(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_setbit_at_the_largest_offset_costs_little_disk(start_strata):
    server = start_strata()
    c = server.conn(timeout=60)
    c.call("SET", "warm", "up")
    server.restart()
    before = _dir_bytes(server.dir)
    c = server.conn(timeout=60)
    started = time.monotonic()
    assert c.call("SETBIT", "huge", 4294967295, 1) == 0
    assert time.monotonic() - started < 5.0
    server.restart()  # a graceful stop flushes what the write-ahead log held
    grown = _dir_bytes(server.dir) - before
    assert grown < 1 << 20, f"the data directory grew by {grown} bytes"
    c = server.conn(timeout=60)
    assert c.call("STRLEN", "huge") == 1 << 29
    assert c.call("BITPOS", "huge", 1) == 4294967295
