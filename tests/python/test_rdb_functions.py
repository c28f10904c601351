"""FUNCTION libraries in RDB files, both ways, against a real redis-server 7.0: a Redis dump.rdb
imported with `strata import` (as FUNCTION LOAD REPLACE would load each library), Strata's
`export --format rdb` and the RDB stream a Redis replica of Strata gets (the libraries written as
Redis's rdbSaveFunctions writes them), and a Strata replica of a Redis leader loading them from
the leader's RDB. "Same libraries" means the same FUNCTION LIST WITHCODE reply."""

import subprocess

import pytest

from harness import Server, redis_is_strata
from replication_helpers import wait_for
from test_rdb_export import load_in_redis
from test_rdb_import import strata_tool

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="moves libraries in and out of Strata")

LIB_A = """#!lua name=liba
local function add(keys, args) return redis.call('INCRBY', keys[1], args[1]) end
redis.register_function('add', add)
redis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end,
  flags={'no-writes'}, description='reads a key'}
"""
LIB_B = "#!lua name=libb\nredis.register_function('hello', function() return 'hi' end)"


def libraries(client):
    """FUNCTION LIST WITHCODE, by library name (each library's functions by name: their order
    is the order of a hash table in Redis)."""
    reply = client.execute_command("FUNCTION", "LIST", "WITHCODE")
    out = {}
    for lib in reply:
        fields = dict(zip(lib[::2], lib[1::2]))
        fields[b"functions"] = sorted(fields[b"functions"], key=lambda f: f[1])
        out[fields[b"library_name"]] = fields
    return out


def load_libraries(client):
    client.execute_command("FUNCTION", "LOAD", LIB_A)
    client.execute_command("FUNCTION", "LOAD", LIB_B)


def import_rdb(directory, rdb):
    run = subprocess.run([strata_tool(), "-d", str(directory), "import", str(rdb)],
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    return run.stderr.decode()


@pytest.mark.timeout(120)
def test_libraries_in_a_redis_rdb_import_and_fcall_works(start_redis):
    redis_server = start_redis()
    r = redis_server.client()
    load_libraries(r)
    r.set("n", 5)
    r.save()
    expected = libraries(r)

    strata = Server("strata")
    try:
        # The directory already has a library of the same name (replaced) and another (kept).
        s = strata.start().client()
        s.execute_command("FUNCTION", "LOAD", "#!lua name=liba\nredis.register_function('old', function() return 0 end)")
        s.execute_command("FUNCTION", "LOAD", "#!lua name=mine\nredis.register_function('mine', function() return 7 end)")
        strata.stop()
        log = import_rdb(strata.dir, redis_server.dir / "dump.rdb")
        assert "loaded 2 function libraries" in log, log
        s = strata.start().client()
        got = libraries(s)
        assert set(got) == {b"liba", b"libb", b"mine"}
        assert got[b"liba"] == expected[b"liba"]
        assert got[b"libb"] == expected[b"libb"]
        assert s.execute_command("FCALL", "add", 1, "n", 3) == 8
        assert s.execute_command("FCALL_RO", "peek", 1, "n") == b"8"
        assert s.execute_command("FCALL", "hello", 0) == b"hi"
        assert s.execute_command("FCALL", "mine", 0) == 7
    finally:
        strata.cleanup()


@pytest.mark.timeout(120)
def test_a_library_that_collides_stops_the_import(start_redis):
    redis_server = start_redis()
    r = redis_server.client()
    load_libraries(r)
    r.save()
    strata = Server("strata")
    try:
        s = strata.start().client()
        # Another library already has a function called `hello`: FUNCTION LOAD REPLACE of libb fails.
        s.execute_command("FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('hello', function() return 0 end)")
        strata.stop()
        run = subprocess.run([strata_tool(), "-d", str(strata.dir), "import",
                              str(redis_server.dir / "dump.rdb")], capture_output=True, timeout=120)
        assert run.returncode != 0
        assert b"Failed loading library, Function hello already exists" in run.stderr, run.stderr
        # The directory still starts: its libraries are whole ones.
        s = strata.start().client()
        assert b"other" in libraries(s)
    finally:
        strata.cleanup()


@pytest.mark.timeout(120)
def test_an_exported_rdb_gives_redis_the_same_libraries(start_strata, tmp_path):
    strata = start_strata()
    s = strata.client()
    load_libraries(s)
    s.set("n", 1)
    expected = libraries(s)
    strata.stop()
    out = tmp_path / "out.rdb"
    run = subprocess.run([strata_tool(), "-d", str(strata.dir), "export", "--format", "rdb", str(out)],
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    check = subprocess.run(["redis-check-rdb", str(out)], capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout.decode()
    redis_server = load_in_redis(out)
    try:
        r = redis_server.client()
        assert libraries(r) == expected
        assert r.execute_command("FCALL", "add", 1, "n", 2) == 3
    finally:
        redis_server.cleanup()


@pytest.mark.timeout(120)
def test_a_redis_replica_of_strata_gets_the_libraries(start_strata):
    strata = start_strata()
    s = strata.client()
    load_libraries(s)
    expected = libraries(s)
    replica = Server("redis", {"replicaof": f"127.0.0.1 {strata.port}"})
    try:
        r = replica.start().client()
        wait_for("the Redis replica's link", lambda: r.info("replication").get("master_link_status") == "up", 30)
        assert libraries(r) == expected
        assert r.execute_command("FCALL_RO", "peek", 1, "nothing") is None
    finally:
        replica.cleanup()


@pytest.mark.timeout(120)
def test_a_strata_replica_of_redis_loads_the_leaders_libraries(start_redis, start_strata):
    leader = start_redis()
    r = leader.client()
    load_libraries(r)
    r.set("n", 10)
    r.xadd("st", {"a": "1"}, id="1-1")
    expected = libraries(r)
    strata = start_strata()
    s = strata.client()
    # Libraries of the replica's own go, as a Redis replica's do at a full sync.
    s.execute_command("FUNCTION", "LOAD", "#!lua name=mine\nredis.register_function('mine', function() return 7 end)")
    s.execute_command("REPLICAOF", "127.0.0.1", leader.port)
    wait_for("the link", lambda: s.info("replication").get("master_link_status") == "up", 30)
    assert libraries(s) == expected
    assert s.execute_command("FCALL_RO", "peek", 1, "n") == b"10"
    assert s.xrange("st") == [(b"1-1", {b"a": b"1"})]
    # The libraries are kept in the directory: they survive a restart.
    strata.restart(replicaof=f"127.0.0.1 {leader.port}")
    s = strata.client()
    wait_for("the link again", lambda: s.info("replication").get("master_link_status") == "up", 30)
    assert libraries(s) == expected
    assert "function libraries" in strata.log_path.read_text()
