"""strata-server loads a Redis `dump.rdb` (`dir`/`dbfilename`) found in a data directory without
Strata data, as redis-server would at start-up: keys, TTLs, databases and function libraries,
while clients get -LOADING; never into a directory that holds data; an interrupted load is done
again from emptied data."""

import shutil
import socket
import subprocess
import time

import pytest

from harness import Server, free_port, redis_is_strata
from test_dump import value_of
from test_rdb_import import fill

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="Strata's start-up load of an RDB file")


def redis_rdb(start_redis):
    """A dump.rdb written by redis-server, and every key in it (db, key) -> (value, pttl)."""
    redis_server = start_redis()
    r = redis_server.client()
    fill(r)
    r.delete("soon-gone")
    r.save()
    expected = {}
    for db in (0, 5):
        r.execute_command("SELECT", db)
        for key in r.keys("*"):
            expected[(db, key)] = (value_of(r, key), r.pttl(key))
    return redis_server.dir / "dump.rdb", expected


def assert_holds(client, expected):
    for (db, key), (want, ttl) in expected.items():
        client.execute_command("SELECT", db)
        assert value_of(client, key) == want, (db, key)
        got = client.pttl(key)
        assert got == ttl if ttl < 0 else ttl - 60_000 < got <= ttl, key
    for db in (0, 5):
        client.execute_command("SELECT", db)
        assert client.dbsize() == sum(1 for d, _ in expected if d == db)
    client.execute_command("SELECT", 0)


@pytest.mark.timeout(180)
def test_a_dump_rdb_in_a_fresh_directory_is_loaded_at_start(start_redis):
    rdb, expected = redis_rdb(start_redis)
    strata = Server("strata", {"dbfilename": "moved.rdb"})
    try:
        shutil.copy(rdb, strata.dir / "moved.rdb")
        c = strata.start().client()
        assert_holds(c, expected)
        assert c.execute_command("FCALL", "f", 0) == 1
        log = strata.log_path.read_text()
        assert "Loading RDB file" in log and "DB loaded from disk" in log, log
        assert not (strata.dir / "rdb-load-unfinished").exists()
        # The next start finds Strata data: the file is left alone.
        c.set("added", "1")
        strata.restart()
        assert strata.client().get("added") == b"1"
        assert "Not loading" in strata.log_path.read_text()
    finally:
        strata.cleanup()


@pytest.mark.timeout(120)
def test_a_directory_with_data_never_loads_the_file(start_redis):
    rdb, _ = redis_rdb(start_redis)
    strata = Server("strata")
    try:
        strata.start().client().set("mine", "1")
        strata.stop()
        shutil.copy(rdb, strata.dir / "dump.rdb")
        c = strata.start().client()
        assert c.keys("*") == [b"mine"]
        assert "already holds Strata data" in strata.log_path.read_text()
    finally:
        strata.cleanup()


@pytest.mark.timeout(180)
def test_an_interrupted_load_is_done_again_from_emptied_data(start_redis):
    rdb, expected = redis_rdb(start_redis)
    strata = Server("strata")
    try:
        shutil.copy(rdb, strata.dir / "dump.rdb")
        strata.start().client().set("stray", "1")
        strata.stop()
        # As a crash in the middle of the load leaves it: part of the data and the marker.
        (strata.dir / "rdb-load-unfinished").write_text("dump.rdb\n")
        c = strata.start().client()
        assert_holds(c, expected)
        assert c.get("stray") is None
        assert "did not finish" in strata.log_path.read_text()
    finally:
        strata.cleanup()


@pytest.mark.timeout(300)
def test_clients_get_loading_while_the_file_loads(start_redis):
    redis_server = start_redis(enable_debug_command="yes")
    r = redis_server.client()
    r.execute_command("DEBUG", "POPULATE", 600_000, "key", 100)
    r.save()
    strata = Server("strata")
    try:
        shutil.copy(redis_server.dir / "dump.rdb", strata.dir / "dump.rdb")
        strata.port = free_port()
        with open(strata.log_path, "ab") as log:
            strata.proc = subprocess.Popen(strata.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                           stderr=subprocess.STDOUT, cwd=strata.workdir,
                                           start_new_session=True)
        replies = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", strata.port), timeout=5) as s:
                    s.sendall(b"*2\r\n$3\r\nGET\r\n$5\r\nkey:1\r\n*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n")
                    time.sleep(0.05)
                    reply = s.recv(65536)
            except OSError:
                time.sleep(0.05)
                continue
            replies.append(reply)
            if not reply.startswith(b"-LOADING"):
                break
            time.sleep(0.05)
        loading = [x for x in replies if x.startswith(b"-LOADING")]
        assert loading, "never saw -LOADING (the load was too quick to see)"
        assert loading[0].startswith(b"-LOADING Redis is loading the dataset in memory\r\n")
        assert b"loading:1" in loading[0]
        assert replies[-1].startswith(b"$100\r\nvalue:1"), replies[-1][:100]
        assert strata.client().dbsize() == 600_000
    finally:
        strata.cleanup()


def info_while_loading(port, deadline):
    """INFO persistence of the server on `port`, polled until it says loading:1 (None if it
    never does before `deadline`), as a dict."""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n")
                time.sleep(0.05)
                reply = s.recv(65536).decode(errors="replace")
        except OSError:
            time.sleep(0.02)
            continue
        fields = dict(line.split(":", 1) for line in reply.splitlines() if ":" in line)
        if fields.get("loading") == "1":
            return fields
        time.sleep(0.02)
    return None


def spawn(server):
    server.port = free_port()
    with open(server.log_path, "ab") as log:
        server.proc = subprocess.Popen(server.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, cwd=server.workdir,
                                       start_new_session=True)


@pytest.mark.timeout(300)
def test_info_reports_loading_progress_as_redis_does(start_redis):
    redis_server = start_redis(enable_debug_command="yes")
    r = redis_server.client()
    r.execute_command("DEBUG", "POPULATE", 20_000, "key", 100)
    r.save()
    rdb = redis_server.dir / "dump.rdb"
    size = rdb.stat().st_size
    fields = {}
    for name in ("redis", "strata"):
        # key-load-delay (µs per key, a hidden test knob in both) makes the load last seconds;
        # redis-server answers while loading only between chunks of this many bytes.
        server = Server(name, {"key-load-delay": "300",
                               "loading-process-events-interval-bytes": "1024"})
        try:
            shutil.copy(rdb, server.dir / "dump.rdb")
            started = time.time()
            spawn(server)
            got = info_while_loading(server.port, time.monotonic() + 60)
            assert got is not None, f"{name} never reported loading:1"
            fields[name] = got
            assert got["async_loading"] == "0"
            assert started - 2 <= int(got["loading_start_time"]) <= time.time() + 1
            assert int(got["loading_total_bytes"]) == size
            # Redis reports the file's `used-mem` AUX field; Strata does not read it (0).
            assert int(got["loading_rdb_used_mem"]) >= 0 if name == "redis" else got["loading_rdb_used_mem"] == "0"
            loaded = int(got["loading_loaded_bytes"])
            assert 0 <= loaded <= size
            perc = float(got["loading_loaded_perc"])
            assert abs(perc - loaded * 100 / size) < 0.01, got
            assert int(got["loading_eta_seconds"]) >= 0
            deadline = time.monotonic() + 60
            while True:
                try:
                    info = server.client().info("persistence")
                    if info["loading"] == 0:
                        break
                except Exception:  # noqa: BLE001 - -LOADING from the client's own commands
                    pass
                assert time.monotonic() < deadline, "the load did not end"
                time.sleep(0.1)
            assert not any(k.startswith("loading_") for k in info), info
            assert server.client().dbsize() == 20_000
        finally:
            server.cleanup()
    loading_names = {n: [k for k in f if k.startswith("loading") or k == "async_loading"]
                     for n, f in fields.items()}
    assert loading_names["strata"] == loading_names["redis"], loading_names
