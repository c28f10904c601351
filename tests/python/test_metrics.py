"""The Prometheus metrics endpoint (`metrics-port`): the real binary is scraped over HTTP and the
text is parsed with prometheus_client's own parser, so what Prometheus would read is what is
checked. Values must follow what the test does (commands per command, keys per database,
clients, replication offsets with a replica); CONFIG SET metrics-port re-listens; other paths
get 404; and hostile clients (garbage, huge heads, half-open connections) leave both the server
and the endpoint serving."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness import free_port, redis_is_strata
from replication_helpers import wait_for

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="a Strata endpoint (redis-server has none)")


def scrape(port: int) -> dict:
    """{(sample name, frozenset of labels): value} of one scrape, and the families' types under
    ("__type__", family name)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        out[("__type__", family.name)] = family.type
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(m: dict, name: str, **labels) -> float | None:
    return m.get((name, frozenset(labels.items())))


@pytest.fixture
def served(start_strata):
    port = free_port()
    server = start_strata(**{"metrics-port": str(port)})
    return server, port


def test_families_are_typed_and_counters_end_in_total(served):
    _, port = served
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
    assert types["redis_commands_total"] == "counter"
    assert types["redis_connected_clients"] == "gauge"
    assert types["redis_commands_latencies_usec"] == "histogram"
    for name, kind in types.items():
        if kind == "counter":
            assert name.endswith("_total"), name
    m = scrape(port)
    assert m[("__type__", "redis_commands")] == "counter"
    assert value(m, "redis_up") == 1
    for name in ("strata_rocksdb_block_cache_capacity_bytes", "strata_rocksdb_memtable_bytes",
                 "strata_rocksdb_pending_compaction_bytes", "strata_rocksdb_write_stall_seconds_total",
                 "strata_rocksdb_live_sst_bytes", "strata_rocksdb_l0_files",
                 "strata_rocksdb_block_cache_hits_total", "strata_rocksdb_table_readers_bytes",
                 "redis_memory_used_bytes", "redis_uptime_in_seconds", "strata_tier_write_back"):
        assert value(m, name) is not None, name


def test_commands_are_counted_per_command(served):
    server, port = served
    c = server.client()
    for i in range(7):
        c.set(f"k{i}", "v")
    for i in range(3):
        c.get(f"k{i}")
    c.get("missing")
    m = scrape(port)
    assert value(m, "redis_commands_total", cmd="set") == 7
    assert value(m, "redis_commands_total", cmd="get") == 4
    assert value(m, "redis_commands_duration_seconds_total", cmd="set") > 0
    assert value(m, "redis_keyspace_hits_total") >= 3
    assert value(m, "redis_keyspace_misses_total") >= 1
    assert value(m, "redis_commands_latencies_usec_count", cmd="set") == 7
    assert value(m, "redis_commands_latencies_usec_bucket", cmd="set", le="+Inf") == 7
    assert value(m, "redis_latency_percentiles_usec", cmd="set", quantile="0.99") > 0
    with pytest.raises(Exception):
        c.execute_command("INCR", "k0", "extra")
    m = scrape(port)
    assert value(m, "redis_errors_total", err="ERR") >= 1
    assert value(m, "redis_net_input_bytes_total") > 0


def test_keys_and_clients_follow_the_data(served):
    server, port = served
    c = server.client()
    c.set("a", 1)
    c.set("b", 1, ex=100)
    c3 = server.client(db=3)
    c3.set("x", 1)
    m = scrape(port)
    assert value(m, "redis_db_keys", db="db0") == 2
    assert value(m, "redis_db_keys_expiring", db="db0") == 1
    assert value(m, "redis_db_keys", db="db3") == 1
    assert value(m, "redis_db_keys", db="db1") is None
    before = value(m, "redis_connected_clients")
    extra = [server.client() for _ in range(3)]
    for e in extra:
        e.ping()
    assert value(scrape(port), "redis_connected_clients") == before + 3
    for e in extra:
        e.close()
    wait_for("the clients to be gone", lambda: value(scrape(port), "redis_connected_clients") == before, 5)
    c.delete("a")
    assert value(scrape(port), "redis_db_keys", db="db0") == 1


def test_replication_offsets_with_a_replica(start_strata):
    leader_port, replica_port = free_port(), free_port()
    leader = start_strata(**{"metrics-port": str(leader_port)})
    replica = start_strata(**{"metrics-port": str(replica_port), "replicaof": f"127.0.0.1 {leader.port}"})
    lc = leader.client()
    for i in range(50):
        lc.set(f"k{i}", i)

    def caught_up():
        m = scrape(leader_port)
        slaves = [(k, v) for k, v in m.items() if k[0] == "redis_connected_slave_offset_bytes"]
        return (value(m, "redis_connected_slaves") == 1 and slaves
                and slaves[0][1] == value(m, "redis_master_repl_offset"))

    wait_for("the replica to acknowledge everything", caught_up, 20)
    m = scrape(leader_port)
    offset = value(m, "redis_master_repl_offset")
    assert offset > 0
    labels = dict(next(k[1] for k in m if k[0] == "redis_connected_slave_lag_seconds"))
    assert labels["slave_state"] == "online"
    r = scrape(replica_port)
    assert value(r, "redis_master_link_up") == 1
    assert value(r, "redis_slave_repl_offset") == offset
    assert dict(next(k[1] for k in r if k[0] == "redis_instance_info"))["role"] == "slave"
    assert value(r, "redis_db_keys", db="db0") == 50
    lc.set("one-more", 1)
    wait_for("the leader's offset to move", lambda: value(scrape(leader_port), "redis_master_repl_offset") > offset, 5)


def test_config_set_metrics_port_relistens(served):
    server, port = served
    c = server.client()
    assert c.config_get("metrics-port") == {"metrics-port": str(port)}
    new = free_port()
    assert c.config_set("metrics-port", new)
    assert value(scrape(new), "redis_up") == 1
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        scrape(port)
    # A port that can't be bound is refused and the endpoint stays where it was.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    with pytest.raises(Exception, match="Unable to listen on this port"):
        c.config_set("metrics-port", taken.getsockname()[1])
    taken.close()
    assert c.config_get("metrics-port") == {"metrics-port": str(new)}
    assert value(scrape(new), "redis_up") == 1
    assert c.config_set("metrics-port", 0)
    # Refused, or reset by the listener closing under a connection it had not accepted yet.
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        scrape(new)


def test_metrics_are_off_by_default(start_strata):
    server = start_strata()
    assert server.client().config_get("metrics-*") == {"metrics-port": "0", "metrics-bind": "127.0.0.1"}


def test_other_paths_get_404_and_other_methods_405(served):
    _, port = served
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
    assert e.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metricsx", timeout=5)
    assert e.value.code == 404
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=5)
    assert e.value.code == 405


def _raw(port: int, data: bytes, wait: float = 5.0) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk
    except OSError:
        return out
    finally:
        s.close()


def test_hostile_clients_leave_the_server_and_endpoint_serving(served):
    server, port = served
    # Half-open connections: connect and say nothing, or start a request and never finish it.
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
    half = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    for s in half:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    # The Redis port and the endpoint still answer while they hang.
    assert server.client().ping()
    assert value(scrape(port), "redis_up") == 1
    # Garbage and a huge head are answered with an error, not a crash.
    assert _raw(port, b"\x00\xff garbage \r\n\r\n").startswith(b"HTTP/1.1 400")
    assert _raw(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n").startswith(b"HTTP/1.1 431")
    assert _raw(port, b"\r\n\r\n").startswith(b"HTTP/1.1 400")
    # More connections than the endpoint keeps are closed at once, and it recovers.
    flood = []
    for _ in range(200):
        try:
            flood.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            break
    assert server.client().ping()
    for s in idle + half + flood:
        s.close()
    wait_for("the endpoint to serve again", lambda: value(scrape(port), "redis_up") == 1, 15)
    # A client that holds a connection past the read timeout is answered 408 and cut off.
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(15)
    start = time.monotonic()
    assert s.recv(100).startswith(b"HTTP/1.1 408")
    assert time.monotonic() - start < 12
    s.close()
    assert server.client().ping()
    assert value(scrape(port), "redis_up") == 1
