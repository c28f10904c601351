"""SYNC / PSYNC from replicas that are not Strata: `redis-cli --rdb` against Strata writes an RDB
file that redis-server loads with every key; a raw SYNC (no `capa eof`) gets the `$<length>`
form, a raw PSYNC `+FULLRESYNC` first; a real redis-server started as Strata's replica loads the
copy and keeps its link up; the server answers other clients while a copy is being taken."""

import re
import socket
import subprocess
import time

import pytest

from harness import Server, redis_is_strata
from test_dump import CASES, value_of
from test_rdb_export import assert_same, load_in_redis, snapshot

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="Strata's RDB feed")


def fill(c):
    for i, (name, make) in enumerate(CASES.items()):
        make(c)
        c.rename("k", name)
        if i % 3 == 0:
            c.pexpire(name, 800_000)
    c.set(b"\xffbinary\x00", b"\x00")
    c.rpush("big", *[f"x{i}" for i in range(20_000)])
    c.execute_command("SELECT", 3)
    c.hset("h3", mapping={"a": "1", "b": "2"})
    c.execute_command("SELECT", 0)


def read_line(s: socket.socket) -> bytes:
    """One line, skipping the newlines a leader sends to keep a waiting link alive."""
    buf = b""
    while True:
        ch = s.recv(1)
        if not ch:
            raise ConnectionError("closed")
        if ch == b"\n":
            if buf.endswith(b"\r"):
                return buf[:-1]
            if buf:
                return buf
            continue
        buf += ch


def read_exact(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(min(1 << 20, n - len(out)))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return bytes(out)


@pytest.mark.timeout(120)
def test_redis_cli_rdb_writes_a_file_redis_loads(start_strata, tmp_path):
    strata = start_strata()
    c = strata.client()
    fill(c)
    expected = snapshot(c, [0, 3])
    out = tmp_path / "cli.rdb"
    run = subprocess.run(["redis-cli", "-p", str(strata.port), "--rdb", str(out)],
                         capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()
    assert b"Transfer finished with success" in run.stderr, run.stderr.decode()
    check = subprocess.run(["redis-check-rdb", str(out)], capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout.decode()
    redis = load_in_redis(out)
    try:
        assert_same(expected, redis.client())
    finally:
        redis.cleanup()
    assert c.ping()


@pytest.mark.timeout(60)
def test_sync_without_capa_eof_sends_the_length_first(start_strata, tmp_path):
    strata = start_strata()
    c = strata.client()
    fill(c)
    expected = snapshot(c, [0, 3])
    with socket.create_connection(("127.0.0.1", strata.port), timeout=20) as s:
        s.sendall(b"SYNC\r\n")
        head = read_line(s)
        assert re.fullmatch(rb"\$\d+", head), head
        body = read_exact(s, int(head[1:]))
    assert body.startswith(b"REDIS0010")
    rdb = tmp_path / "sync.rdb"
    rdb.write_bytes(body)
    redis = load_in_redis(rdb)
    try:
        assert_same(expected, redis.client())
    finally:
        redis.cleanup()


@pytest.mark.timeout(60)
def test_psync_answers_fullresync_then_the_eof_marked_file(start_strata):
    strata = start_strata()
    c = strata.client()
    c.set("k", "v")
    with socket.create_connection(("127.0.0.1", strata.port), timeout=20) as s:
        s.sendall(b"REPLCONF capa eof capa psync2\r\n")
        assert read_line(s) == b"+OK"
        s.sendall(b"PSYNC ? -1\r\n")
        full = read_line(s)
        assert re.fullmatch(rb"\+FULLRESYNC [0-9a-f]{40} \d+", full), full
        head = read_line(s)
        assert head.startswith(b"$EOF:") and len(head) == 45, head
        mark = head[5:]
        body = b""
        while not body.endswith(mark):
            chunk = s.recv(65536)
            assert chunk
            body += chunk
        assert body.startswith(b"REDIS0010")
        # The server keeps serving; the link stays open (PINGs only).
        assert c.set("after", "1")
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recv(1)


@pytest.mark.timeout(90)
def test_a_redis_server_replica_of_strata_loads_the_copy(start_strata):
    strata = start_strata()
    c = strata.client()
    fill(c)
    expected = snapshot(c, [0, 3])
    replica = Server("redis", {"replicaof": f"127.0.0.1 {strata.port}"})
    try:
        r = replica.start().client()
        deadline = time.time() + 30
        while time.time() < deadline:
            info = r.info("replication")
            if info.get("master_link_status") == "up":
                break
            time.sleep(0.2)
        assert info.get("master_link_status") == "up", info
        assert_same(expected, r)
        time.sleep(1.5)  # the link survives the replica's first acknowledgements
        assert r.info("replication").get("master_link_status") == "up"
    finally:
        replica.cleanup()
    assert c.ping()


@pytest.mark.timeout(60)
def test_the_server_answers_while_a_copy_waits_to_be_read(start_strata):
    strata = start_strata()
    c = strata.client()
    c.rpush("big", *[b"v" * 1000 for _ in range(20_000)])  # ~20 MB: more than socket buffers
    with socket.create_connection(("127.0.0.1", strata.port), timeout=20) as s:
        s.sendall(b"REPLCONF capa eof\r\nSYNC\r\n")
        assert read_line(s) == b"+OK"
        time.sleep(0.5)  # the feed blocks on the full socket; nobody reads it yet
        t = time.time()
        for i in range(50):
            assert c.set(f"k{i}", i)
        assert c.llen("big") == 20_000
        assert time.time() - t < 5
