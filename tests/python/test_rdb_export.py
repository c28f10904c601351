"""`strata -d DIR export --format rdb out.rdb`: a Strata directory holding every type (small and
large keys, binary keys, TTLs, several databases) is written as an RDB file that the real
redis-check-rdb accepts and the real redis-server 7.0 loads with every key, value and TTL."""

import shutil
import subprocess
import time

import pytest

from harness import Server, redis_is_strata
from test_dump import CASES, value_of
from test_rdb_import import strata_tool

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="exports a Strata directory")


def fill(c):
    """Every case of test_dump in db 0 (half of them with a TTL), binary keys, large collections
    (more than one spill of the writer, list items past a quicklist node) and keys in db 7."""
    for i, (name, make) in enumerate(CASES.items()):
        make(c)
        c.rename("k", name)
        if i % 2:
            c.pexpire(name, 900_000)
    c.set(b"\x00bin\xff\r\nkey", b"\x00\x01\x02")
    c.set(b"long-key-" + b"k" * 5000, "v")
    c.hset(b"h\xfe", mapping={b"\x00f": b"\xff" * 70})
    c.rpush("huge-list", *[f"i{i}" for i in range(30_000)])
    c.rpush("fat-list", *[bytes([i]) * 20_000 for i in range(40)])
    c.sadd("huge-set", *[f"s{i}" for i in range(30_000)])
    c.hset("huge-hash", mapping={f"f{i}": f"v{i}" for i in range(30_000)})
    c.zadd("huge-zset", {f"m{i}": i * 0.25 - 3000 for i in range(30_000)})
    c.zadd("inf-zset", {"a": float("inf"), "b": float("-inf"), "c": 0.1, "d": 1e300})
    c.expire("huge-zset", 800_000)
    c.execute_command("SELECT", 7)
    c.set("in-db7", "seven", px=600_000)
    c.rpush("l7", "x")
    c.execute_command("SELECT", 0)


def snapshot(c, dbs):
    out = {}
    for db in dbs:
        c.execute_command("SELECT", db)
        for key in c.keys("*"):
            out[(db, key)] = (value_of(c, key), c.pttl(key))
    c.execute_command("SELECT", 0)
    return out


def load_in_redis(rdb, name="loaded.rdb") -> Server:
    """A redis-server started on a copy of `rdb` (its --dir and --dbfilename)."""
    redis = Server("redis", {"dbfilename": name})
    shutil.copy(rdb, redis.dir / name)
    return redis.start()


def assert_same(expected, redis_client, slack_ms=60_000):
    got = snapshot(redis_client, sorted({db for db, _ in expected}))
    assert set(got) == set(expected)
    for k, (value, ttl) in expected.items():
        assert got[k][0] == value, k
        if ttl < 0:
            assert got[k][1] == ttl, k
        else:
            assert ttl - slack_ms < got[k][1] <= ttl, k


@pytest.mark.timeout(240)
def test_an_exported_rdb_loads_in_redis_key_for_key(start_strata, tmp_path):
    strata = start_strata()
    c = strata.client()
    fill(c)
    c.set("gone-soon", "x", px=200)
    time.sleep(0.3)
    expected = snapshot(c, [0, 7])
    assert (0, b"gone-soon") not in expected
    strata.stop()

    out = tmp_path / "out.rdb"
    run = subprocess.run([strata_tool(), "-d", str(strata.dir), "export", "--format", "rdb", str(out)],
                         capture_output=True, timeout=180)
    assert run.returncode == 0, run.stderr.decode()
    assert f"exported {len(expected)} keys".encode() in run.stderr, run.stderr.decode()
    assert out.read_bytes().startswith(b"REDIS0010")

    check = subprocess.run(["redis-check-rdb", str(out)], capture_output=True, timeout=120)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
    assert b"RDB looks OK" in check.stdout, check.stdout.decode()

    redis = load_in_redis(out)
    try:
        assert_same(expected, redis.client())
    finally:
        redis.cleanup()


def test_an_rdb_export_imports_back_into_strata(start_strata, tmp_path):
    strata = start_strata()
    c = strata.client()
    for name, make in CASES.items():
        make(c)
        c.rename("k", name)
    c.pexpire("list_big", 500_000)
    expected = snapshot(c, [0])
    strata.stop()
    out = tmp_path / "round.rdb"
    run = subprocess.run([strata_tool(), "-d", str(strata.dir), "export", "--format", "rdb", str(out)],
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    other = Server("strata")
    try:
        run = subprocess.run([strata_tool(), "-d", str(other.dir), "import", str(out)],
                             capture_output=True, timeout=120)
        assert run.returncode == 0, run.stderr.decode()
        assert b"checksum verified" in run.stderr
        assert_same(expected, other.start().client())
    finally:
        other.cleanup()


def test_an_empty_directory_exports_an_rdb_redis_loads(start_strata, tmp_path):
    strata = start_strata()
    strata.stop()
    out = tmp_path / "empty.rdb"
    run = subprocess.run([strata_tool(), "-d", str(strata.dir), "export", "--format", "rdb", str(out)],
                         capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()
    redis = load_in_redis(out)
    try:
        assert redis.client().dbsize() == 0
    finally:
        redis.cleanup()
