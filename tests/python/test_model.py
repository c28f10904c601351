"""Model-based tests: seeded random command sequences over every type, sent to Strata and to a
real redis-server (the model), every reply compared; Strata is restarted (gracefully or with
kill -9) between phases and its whole data set must then equal the model's.

Reproduce a failure with the printed seed: ``STRATA_MODEL_SEED=<seed> pytest -k model``.
Long runs: ``STRATA_MODEL_STEPS=200000 STRATA_MODEL_PHASES=50 pytest -k model -s``.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from harness import RespConn, RespError, parse_reply

STEPS = int(os.environ.get("STRATA_MODEL_STEPS", "3000"))
PHASES = int(os.environ.get("STRATA_MODEL_PHASES", "4"))
SEED = int(os.environ.get("STRATA_MODEL_SEED", str(int(time.time()))))

KEYS = ["k0", "k1", "k2", "k3", "k4", "{t}a", "{t}b", "{t}c"]
FIELDS = ["f0", "f1", "f2", "f3"]
MEMBERS = ["m0", "m1", "m2", "m3", "m4", "7", "11", "-3"]
VALUES = ["", "v", "hello", "12", "-7", "3.5", "x" * 70, "9223372036854775807"]
# A fixed deadline in the future, so EXPIREAT/EXPIRETIME replies are identical on both.
DEADLINE = int(time.time()) + 10 * 365 * 86400

# Commands whose array reply has no specified order (Strata lists hashes and sets in byte
# order; docs/differences.md): compared as multisets, HGETALL as a dict.
UNORDERED = {"SMEMBERS", "SINTER", "SUNION", "SDIFF", "HKEYS", "HVALS", "GEOSEARCH"}
# Places for GEOADD (longitude, latitude): a few close together, one far, the edges of the range.
PLACES = [(13.361389, 38.115556), (15.087269, 37.502669), (13.37, 38.12), (-122.27, 37.80),
          (0, 0), (-180, 85.05112878), (179.99, -85.05112878)]


def gen_command(rng: random.Random) -> tuple:
    k = rng.choice(KEYS)
    k2 = rng.choice(KEYS)
    f = rng.choice(FIELDS)
    m = rng.choice(MEMBERS)
    v = rng.choice(VALUES)
    n = rng.randint(-3, 5)
    score = rng.choice([-2, -1, 0, 1, 1.5, 2, 10, "-inf", "+inf"])
    choices = [
        # strings
        lambda: ("SET", k, v), lambda: ("SET", k, v, rng.choice(["NX", "XX", "KEEPTTL", "GET"])),
        lambda: ("GET", k), lambda: ("APPEND", k, v), lambda: ("INCR", k), lambda: ("INCRBY", k, n),
        lambda: ("DECR", k), lambda: ("STRLEN", k), lambda: ("GETRANGE", k, n, n + 2),
        lambda: ("SETRANGE", k, abs(n), v), lambda: ("MSET", k, v, k2, m), lambda: ("MGET", k, k2, "k9"),
        lambda: ("GETDEL", k), lambda: ("SETNX", k, v), lambda: ("MSETNX", k, v, k2, v),
        lambda: ("INCRBYFLOAT", k, "1.5"),
        # keyspace
        lambda: ("DEL", k, k2), lambda: ("EXISTS", k, k2), lambda: ("TYPE", k), lambda: ("RENAME", k, k2),
        lambda: ("RENAMENX", k, k2), lambda: ("EXPIREAT", k, DEADLINE + n), lambda: ("PERSIST", k),
        lambda: ("EXPIRETIME", k), lambda: ("COPY", k, k2), lambda: ("COPY", k, k2, "REPLACE"),
        lambda: ("DBSIZE",),
        # hashes
        lambda: ("HSET", k, f, v), lambda: ("HSET", k, f, v, rng.choice(FIELDS), m), lambda: ("HGET", k, f),
        lambda: ("HDEL", k, f, rng.choice(FIELDS)), lambda: ("HLEN", k), lambda: ("HEXISTS", k, f),
        lambda: ("HINCRBY", k, f, n), lambda: ("HMGET", k, f, "zz"), lambda: ("HGETALL", k),
        lambda: ("HKEYS", k), lambda: ("HSETNX", k, f, v), lambda: ("HSTRLEN", k, f),
        # lists
        lambda: ("LPUSH", k, v, m), lambda: ("RPUSH", k, m), lambda: ("LPOP", k), lambda: ("RPOP", k, abs(n)),
        lambda: ("LLEN", k), lambda: ("LRANGE", k, 0, -1), lambda: ("LRANGE", k, n, -n),
        lambda: ("LINDEX", k, n), lambda: ("LSET", k, n, v), lambda: ("LREM", k, n, m),
        lambda: ("LINSERT", k, rng.choice(["BEFORE", "AFTER"]), m, v), lambda: ("LTRIM", k, n, -abs(n) - 1),
        lambda: ("LPOS", k, m), lambda: ("RPOPLPUSH", k, k2),
        lambda: ("LMOVE", k, k2, rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"])),
        # sets
        lambda: ("SADD", k, m, rng.choice(MEMBERS)), lambda: ("SREM", k, m), lambda: ("SCARD", k),
        lambda: ("SISMEMBER", k, m), lambda: ("SMISMEMBER", k, m, "zz"), lambda: ("SMEMBERS", k),
        lambda: ("SINTER", k, k2), lambda: ("SUNION", k, k2), lambda: ("SDIFF", k, k2),
        lambda: ("SUNIONSTORE", k, k2, rng.choice(KEYS)), lambda: ("SINTERSTORE", k, k2, rng.choice(KEYS)),
        lambda: ("SMOVE", k, k2, m),
        # sorted sets
        lambda: ("ZADD", k, score, m), lambda: ("ZADD", k, rng.choice(["NX", "XX", "GT", "LT", "CH"]), score, m),
        lambda: ("ZADD", k, "INCR", score, m), lambda: ("ZREM", k, m), lambda: ("ZSCORE", k, m),
        lambda: ("ZINCRBY", k, n, m), lambda: ("ZCARD", k), lambda: ("ZRANGE", k, 0, -1, "WITHSCORES"),
        lambda: ("ZRANGEBYSCORE", k, "-inf", rng.choice(["1", "(2", "+inf"])), lambda: ("ZRANK", k, m),
        lambda: ("ZREVRANK", k, m), lambda: ("ZCOUNT", k, "-inf", "+inf"), lambda: ("ZPOPMIN", k),
        lambda: ("ZPOPMAX", k, abs(n)), lambda: ("ZUNIONSTORE", k, 2, k, k2),
        lambda: ("ZRANGESTORE", k2, k, 0, n),
        # more shapes: expiry at a fixed deadline, conditional pushes, ranges, set algebra
        lambda: ("SET", k, v, "EXAT", DEADLINE), lambda: ("GETEX", k, "EXAT", DEADLINE + 1),
        lambda: ("GETEX", k, "PERSIST"), lambda: ("LPUSHX", k, v), lambda: ("RPUSHX", k, m),
        lambda: ("LPOS", k, m, "RANK", rng.choice([1, -1, 2]), "COUNT", abs(n)),
        lambda: ("ZREMRANGEBYSCORE", k, "-inf", rng.choice(["0", "(1", "+inf"])),
        lambda: ("ZREMRANGEBYRANK", k, n, n + 1), lambda: ("ZMSCORE", k, m, "zz"),
        lambda: ("ZREVRANGE", k, 0, n, "WITHSCORES"), lambda: ("ZRANGE", k, n, -1, "REV"),
        lambda: ("ZUNION", 2, k, k2, "WITHSCORES"), lambda: ("ZINTER", 2, k, k2, "AGGREGATE", "MAX"),
        lambda: ("ZDIFFSTORE", k, 2, k2, rng.choice(KEYS)), lambda: ("SDIFFSTORE", k, k2, rng.choice(KEYS)),
        lambda: ("SINTERCARD", 2, k, k2), lambda: ("SORT", k), lambda: ("SORT", k, "ALPHA", "DESC", "LIMIT", 0, 3),
        lambda: ("HMSET", k, f, v), lambda: ("HVALS", k), lambda: ("STRLEN", k2), lambda: ("EXISTS", k),
        lambda: ("TYPE", k2),
        lambda: ("LRANGE", k2, -3, -1), lambda: ("LINDEX", k2, -1), lambda: ("SETRANGE", k, 3, m),
        lambda: ("MSETNX", "{t}a", v, "{t}b", m), lambda: ("RENAME", "{t}a", "{t}c"),
        # bitmaps and bit fields (small offsets: the strings stay short)
        lambda: ("SETBIT", k, rng.randint(0, 200), rng.randint(0, 1)), lambda: ("GETBIT", k, rng.randint(0, 220)),
        lambda: ("BITCOUNT", k), lambda: ("BITCOUNT", k, n, n + 3, rng.choice(["BYTE", "BIT"])),
        lambda: ("BITPOS", k, rng.randint(0, 1)), lambda: ("BITPOS", k, rng.randint(0, 1), n, -1, "BIT"),
        lambda: ("BITOP", rng.choice(["AND", "OR", "XOR"]), k, k2, rng.choice(KEYS)), lambda: ("BITOP", "NOT", k, k2),
        lambda: ("BITFIELD", k, "INCRBY", rng.choice(["i5", "u8", "i16"]), rng.randint(0, 100), n,
                 "GET", "u4", 0),
        lambda: ("BITFIELD", k, "OVERFLOW", rng.choice(["WRAP", "SAT", "FAIL"]), "SET", "i8", "#1", n * 40),
        lambda: ("BITFIELD_RO", k, "GET", "i12", rng.randint(0, 64)),
        # HyperLogLog
        lambda: ("PFADD", k, m, rng.choice(MEMBERS), v), lambda: ("PFADD", k), lambda: ("PFCOUNT", k),
        lambda: ("PFCOUNT", k, k2), lambda: ("PFMERGE", k, k2, rng.choice(KEYS)),
        # geo
        lambda: ("GEOADD", k, *rng.choice(PLACES), m),
        lambda: ("GEOADD", k, rng.choice(["NX", "XX", "CH"]), *rng.choice(PLACES), m, *rng.choice(PLACES), "m1"),
        lambda: ("GEODIST", k, m, rng.choice(MEMBERS), rng.choice(["m", "km", "mi"])),
        lambda: ("GEOPOS", k, m, "zz"), lambda: ("GEOHASH", k, m),
        lambda: ("GEOSEARCH", k, "FROMLONLAT", 13.36, 38.11, "BYRADIUS", rng.choice([10, 200, 20000]), "km",
                 "WITHDIST", "WITHCOORD"),
        lambda: ("GEOSEARCHSTORE", k2, k, "FROMMEMBER", m, "BYBOX", 400, 400, "km", "ASC", "STOREDIST"),
    ]
    return rng.choice(choices)()


def canonical(cmd: tuple, reply):
    name = cmd[0]
    if name in UNORDERED and isinstance(reply, list):
        return sorted(reply, key=repr)
    if name == "HGETALL" and isinstance(reply, list):
        return dict(zip(reply[::2], reply[1::2]))
    return reply


def _close_floats(a: bytes, b: bytes) -> bool:
    try:
        x, y = float(parse_reply(a)[0]), float(parse_reply(b)[0])
    except (TypeError, ValueError):
        return False
    return abs(x - y) <= 1e-15 * max(abs(x), abs(y))


def dump(conn: RespConn) -> dict:
    """The whole data set: {key: (type, contents, expiretime)}."""
    out = {}
    for k in conn.call("KEYS", "*"):
        kind = conn.call("TYPE", k)
        if kind == b"string":
            v = conn.call("GET", k)
        elif kind == b"hash":
            flat = conn.call("HGETALL", k)
            v = dict(zip(flat[::2], flat[1::2]))
        elif kind == b"list":
            v = conn.call("LRANGE", k, 0, -1)
        elif kind == b"set":
            v = sorted(conn.call("SMEMBERS", k))
        elif kind == b"zset":
            v = conn.call("ZRANGE", k, 0, -1, "WITHSCORES")
        else:
            v = kind
        out[k] = (kind, v, conn.call("EXPIRETIME", k))
    return out


@pytest.mark.parametrize("tier", [
    {},
    # The write-back tier with a tiny dirty limit: checkpoints run all through the sequence,
    # so reads meet records in the tier's two layers and in RocksDB at once.
    {"memory_tier": "write-back", "memory_tier_dirty_size": "64kb"},
], ids=["write-through", "write-back"])
def test_random_commands_match_redis_and_survive_restarts(start_strata, redis_server, tier):
    rng = random.Random(SEED)
    strata = start_strata(appendfsync="everysec", **tier)
    ref = redis_server.conn()
    print(f"model seed {SEED}, {PHASES} phases of {STEPS} steps")
    for phase in range(PHASES):
        s = strata.conn()
        for step in range(STEPS):
            cmd = gen_command(rng)
            sr = s.call_raw(*cmd)
            rr = ref.call_raw(*cmd)
            if sr != rr and cmd[0] == "INCRBYFLOAT" and _close_floats(sr, rr):
                # Redis computes in 80-bit long doubles (docs/differences.md): results with 17+
                # significant digits differ in the last ones. Take Redis's value and go on.
                s.call("SET", cmd[1], parse_reply(rr)[0], "KEEPTTL")
                continue
            if sr != rr:
                a, b = canonical(cmd, parse_reply(sr)[0]), canonical(cmd, parse_reply(rr)[0])
                assert a == b, (f"seed {SEED} phase {phase} step {step}: reply to {cmd} differs\n"
                                f"  strata: {sr[:300]!r}\n  redis:  {rr[:300]!r}")
        # Restart (alternately kill -9 and graceful); the data must equal the model's.
        strata.restart(kill=phase % 2 == 0)
        got, want = dump(strata.conn()), dump(ref)
        assert got == want, (f"seed {SEED}: after restart {phase} data differs\n"
                             f"  only in strata: { {k: got[k] for k in got if got.get(k) != want.get(k)} }\n"
                             f"  only in redis:  { {k: want[k] for k in want if got.get(k) != want.get(k)} }")
    assert not isinstance(ref.call("PING"), RespError)
