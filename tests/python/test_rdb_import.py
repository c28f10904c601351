"""`strata -d DIR import dump.rdb`: a real redis-server writes an RDB file holding every type and
encoding (small and large keys, TTLs, several databases, a function library), the strata tool
loads it, and a Strata server on that directory holds every key with the same value and TTL."""

import os
import subprocess
import time

import pytest

from harness import Server, redis_is_strata, strata_binary
from test_dump import CASES, CONFIGS, value_of

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="imports into a Strata directory")


def strata_tool() -> str:
    return os.path.join(os.path.dirname(strata_binary()), "strata")


def fill(redis):
    """Every case of test_dump in db 0 (half of them with a TTL), some again in db 5, large keys
    (more elements than one import batch) and a key that expires before the import."""
    for i, (name, make) in enumerate(CASES.items()):
        make(redis)
        redis.rename("k", name)
        if i % 2:
            redis.pexpire(name, 900_000)
    redis.execute_command("SELECT", 5)
    redis.set("in-db5", "five")
    redis.hset("h5", mapping={"a": "1"})
    redis.execute_command("SELECT", 0)
    redis.rpush("huge-list", *[f"i{i}" for i in range(25_000)])
    redis.sadd("huge-set", *[f"s{i}" for i in range(25_000)])
    redis.hset("huge-hash", mapping={f"f{i}": f"v{i}" for i in range(25_000)})
    redis.zadd("huge-zset", {f"m{i}": i * 0.5 for i in range(25_000)})
    redis.expire("huge-zset", 800_000)
    redis.set("soon-gone", "x", px=300)
    redis.execute_command("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("config", ["defaults", "tiny_listpacks"])
def test_an_rdb_from_redis_imports_key_for_key(start_redis, config, tmp_path):
    redis_server = start_redis(**CONFIGS[config])
    redis = redis_server.client()
    fill(redis)
    redis.save()
    rdb = redis_server.dir / "dump.rdb"
    assert rdb.exists()
    expected = {}
    for db in (0, 5):
        redis.execute_command("SELECT", db)
        for key in redis.keys("*"):
            if key != b"soon-gone":
                expected[(db, key)] = (value_of(redis, key), redis.pttl(key))
    redis.execute_command("SELECT", 0)
    time.sleep(0.4)  # soon-gone's expiry passes before the import

    strata = Server("strata")
    try:
        run = subprocess.run([strata_tool(), "-d", str(strata.dir), "import", str(rdb)],
                             capture_output=True, timeout=150)
        assert run.returncode == 0, run.stderr.decode()
        assert b"checksum verified" in run.stderr, run.stderr.decode()
        assert b"1 already expired" in run.stderr, run.stderr.decode()
        client = strata.start().client()
        for (db, key), (want, ttl) in expected.items():
            client.execute_command("SELECT", db)
            assert value_of(client, key) == want, (db, key)
            got_ttl = client.pttl(key)
            if ttl < 0:
                assert got_ttl == ttl, key
            else:
                assert ttl - 30_000 < got_ttl <= ttl, key
        client.execute_command("SELECT", 0)
        assert client.dbsize() == sum(1 for db, _ in expected if db == 0)
        client.execute_command("SELECT", 5)
        assert client.dbsize() == 2
    finally:
        strata.cleanup()


def test_a_damaged_rdb_is_refused(start_redis, tmp_path):
    redis_server = start_redis()
    redis = redis_server.client()
    redis.rpush("l", *range(100))
    redis.save()
    data = bytearray((redis_server.dir / "dump.rdb").read_bytes())
    data[-20] ^= 0xFF  # inside the last key, before the checksum
    bad = tmp_path / "bad.rdb"
    bad.write_bytes(bytes(data))
    run = subprocess.run([strata_tool(), "-d", str(tmp_path / "dir"), "import", str(bad)],
                         capture_output=True, timeout=60)
    assert run.returncode != 0
    assert b"RDB" in run.stderr or b"checksum" in run.stderr, run.stderr.decode()
