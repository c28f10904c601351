"""The storage engine's own signals (issue 16, docs/monitoring.md): INFO's stall time, pending
compaction bytes, level-0 files, block cache hits and compaction bytes, and the LATENCY event
`rocksdb-write-stall` when RocksDB holds writes back. A stall is forced with tiny memtables and
level-0 triggers of one and two files."""

import time

import pytest

from harness import redis_is_strata

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="Strata's own INFO fields")

FIELDS = ["strata_write_stall_micros", "strata_pending_compaction_bytes", "strata_l0_files",
          "strata_running_compactions", "strata_running_flushes", "strata_block_cache_hits",
          "strata_block_cache_misses", "strata_block_cache_hit_rate", "strata_compaction_read_bytes",
          "strata_compaction_written_bytes"]

# Writes straight to RocksDB with one background job, a flush every 64 KB and a stall from the
# first level-0 file on.
STALLING = {"memory-tier": "write-through", "write-buffer-size": "64kb", "background-jobs": "1",
            "l0-slowdown-writes-trigger": "1", "l0-stop-writes-trigger": "2", "hot-cache-size": "0"}


def info(c) -> dict:
    text = c.call("INFO", "stats").decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def write_until(c, done, deadline_s=60.0):
    """Pipelined 4 KB SETs until `done(info)` holds; returns the last INFO."""
    value = b"v" * 4096
    i = 0
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for _ in range(100):
            c.send_command("SET", f"key:{i}", value)
            i += 1
        for _ in range(100):
            c.read_reply()
        now = info(c)
        if done(now):
            return now
    pytest.fail(f"condition not reached in {deadline_s} s: {now}")


def test_info_stats_show_the_engine_signals(start_strata):
    c = start_strata().conn()
    fields = info(c)
    for name in FIELDS:
        assert name in fields, name
        float(fields[name])
    assert fields["strata_block_cache_hit_rate"] == "0.00" or 0 <= float(fields["strata_block_cache_hit_rate"]) <= 100


def test_forced_write_stall_shows_in_info_and_latency(start_strata):
    c = start_strata(**STALLING, **{"latency-monitor-threshold": "1"}).conn()
    got = write_until(c, lambda i: int(i["strata_write_stall_micros"]) >= 1000
                      and int(i["strata_compaction_written_bytes"]) > 0)
    assert int(got["strata_compaction_read_bytes"]) > 0
    # The once-a-second sample records the stalled milliseconds of that second.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        latest = {e[0]: e for e in c.call("LATENCY", "LATEST")}
        if b"rocksdb-write-stall" in latest:
            assert latest[b"rocksdb-write-stall"][2] >= 1
            return
        write_until(c, lambda i: True)
        time.sleep(0.3)
    pytest.fail("no rocksdb-write-stall latency event")


def test_block_cache_hits_count_reads_of_cached_blocks(start_strata):
    server = start_strata(**{"memory-tier": "write-through", "hot-cache-size": "0"})
    c = server.conn()
    for i in range(200):
        c.call("SET", f"k{i}", "x" * 100)
    server.restart()
    c = server.conn()
    for _ in range(3):
        for i in range(200):
            assert c.call("GET", f"k{i}") == b"x" * 100
    got = info(c)
    assert int(got["strata_block_cache_hits"]) > 0
    assert float(got["strata_block_cache_hit_rate"]) > 50


def test_info_memory_names_the_engine_and_allocator_memory(start_strata):
    """INFO memory shows where a write-heavy server's memory goes (bench/write_memory.py reads
    these): the block cache's contents and pinned part, and mimalloc's committed bytes."""
    server = start_strata(**{"block-cache-size": "8mb", "memory-tier": "write-through", "hot-cache-size": "0"})
    c = server.conn()
    for i in range(2000):
        c.call("SET", f"k{i}", "x" * 1000)
    server.restart()
    c = server.conn()
    for i in range(2000):
        c.call("GET", f"k{i}")
    text = c.call("INFO", "memory").decode()
    got = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    usage, pinned = int(got["strata_block_cache_usage"]), int(got["strata_block_cache_pinned"])
    assert 0 < usage <= int(got["strata_block_cache_size"]) + (1 << 20)
    assert 0 <= pinned <= usage
    assert int(got["strata_allocator_committed"]) > 0


def test_the_hot_cache_budget_is_a_quarter_of_memory_by_default_and_a_size_when_given(start_strata):
    """`hot-cache-size` defaults to 25% of the memory the server may use (physical memory, or a
    control group's lower limit): INFO memory shows the bytes it came to, CONFIG GET the
    percentage. A size given is taken as it is."""
    total = None
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
    server = start_strata()
    c = server.conn()
    assert c.call("CONFIG", "GET", "hot-cache-size") == [b"hot-cache-size", b"25%"]
    text = c.call("INFO", "memory").decode()
    got = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    budget = int(got["strata_hot_cache_size"])
    # A control group may lower the base, never raise it.
    assert 0 < budget <= total // 4
    server = start_strata(**{"hot-cache-size": "3mb"})
    text = server.conn().call("INFO", "memory").decode()
    got = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    assert int(got["strata_hot_cache_size"]) == 3 << 20
