"""The write-back memory tier (`memory-tier write-back`): writes applied in memory and logged to
Strata's redo log, checkpointed to RocksDB in the background. What a user sees must not change:
every write readable at once and after restarts (graceful or kill -9), iterations that see the
tier and RocksDB as one, and a directory that opens either way. Replication with the tier is in
test_replication_write_back.py. Crash safety under load is in test_crash.py, the random
differential sequences with restarts in test_model.py (both run with the tier too).
"""

from __future__ import annotations

import os
import time

import pytest

from harness import redis_is_strata

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="memory-tier is Strata's own directive")

TIER = {"memory_tier": "write-back", "memory_tier_dirty_size": "64kb"}


def persistence(c) -> dict:
    return c.info("persistence")


def fill(c, n: int, tag: str = "v"):
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set(f"s:{i}", f"{tag}{i}")
        p.hset(f"h:{i % 50}", f"f{i}", i)
        p.rpush(f"l:{i % 20}", i)
        p.zadd(f"z:{i % 30}", {f"m{i}": i})
        p.sadd(f"set:{i % 40}", i)
    p.execute()


def check(c, n: int, tag: str = "v"):
    assert c.dbsize() == n + 50 + 20 + 30 + 40
    assert [c.get(f"s:{i}") for i in range(n)] == [f"{tag}{i}".encode() for i in range(n)]
    for j in range(50):
        assert c.hgetall(f"h:{j}") == {f"f{i}".encode(): str(i).encode() for i in range(j, n, 50)}
    for j in range(20):
        assert c.lrange(f"l:{j}", 0, -1) == [str(i).encode() for i in range(j, n, 20)]
    for j in range(30):
        want = [(f"m{i}".encode(), float(i)) for i in range(j, n, 30)]
        assert c.zrange(f"z:{j}", 0, -1, withscores=True) == want
    for j in range(40):
        assert c.smembers(f"set:{j}") == {str(i).encode() for i in range(j, n, 40)}
    keys = set()
    cursor = 0
    while True:
        cursor, batch = c.scan(cursor, count=500)
        keys.update(batch)
        if cursor == 0:
            break
    assert len(keys) == c.dbsize()


def test_writes_are_read_back_through_the_tier_checkpoints_and_restarts(start_strata):
    server = start_strata(appendfsync="everysec", **TIER)
    c = server.client()
    info = persistence(c)
    assert info["strata_memory_tier"] == "write-back"
    fill(c, 3000)
    check(c, 3000)
    # A 64 KB dirty limit: the fill went through several checkpoints.
    assert persistence(c)["strata_tier_checkpoints"] >= 1
    server.restart(kill=True)
    c = server.client()
    check(c, 3000)
    # Overwrites and deletes land in the tier over records already in RocksDB.
    c.delete(*[f"s:{i}" for i in range(0, 3000, 3)])
    for i in range(0, 3000, 3):
        c.set(f"s:{i}", f"w{i}")
    fill_tag = {i: (f"w{i}" if i % 3 == 0 else f"v{i}") for i in range(3000)}
    assert [c.get(f"s:{i}").decode() for i in range(3000)] == [fill_tag[i] for i in range(3000)]
    server.restart()
    c = server.client()
    assert [c.get(f"s:{i}").decode() for i in range(3000)] == [fill_tag[i] for i in range(3000)]


def test_flushall_and_trims_hide_records_in_rocksdb_and_in_the_tier(start_strata):
    server = start_strata(appendfsync="always", **TIER)
    c = server.client()
    fill(c, 2000)
    # Long trims delete ranges of list items (a range deletion in the tier).
    for j in range(20):
        c.ltrim(f"l:{j}", 10, 19)
        assert c.lrange(f"l:{j}", 0, -1) == [str(i).encode() for i in range(j + 200, j + 400, 20)]
    c.flushall()
    assert c.dbsize() == 0
    assert c.scan(0, count=1000) == (0, [])
    c.set("after", "1")
    server.restart(kill=True)
    c = server.client()
    assert c.dbsize() == 1
    assert c.get("after") == b"1"
    assert c.get("s:1") is None


def test_a_directory_written_with_the_tier_opens_without_it_and_keeps_everything(start_strata):
    server = start_strata(appendfsync="always", memory_tier="write-back", memory_tier_dirty_size="256mb")
    c = server.client()
    fill(c, 1000)
    assert persistence(c)["strata_tier_dirty_bytes"] > 0
    server.kill9()
    redo = os.path.join(server.dir, "redo")
    assert any(os.path.getsize(os.path.join(redo, f)) > 0 for f in os.listdir(redo))
    # Without the tier: the redo log is replayed into RocksDB at open, then emptied.
    server.restart(memory_tier="write-through")
    c = server.client()
    assert persistence(c)["strata_memory_tier"] == "write-through"
    check(c, 1000)
    assert not any(os.path.getsize(os.path.join(redo, f)) > 0 for f in os.listdir(redo))
    server.restart(kill=True)
    check(server.client(), 1000)



def test_info_shows_how_the_tier_paces_and_stops_writers(start_strata):
    """Writers are paced while a checkpoint runs (issue 16) and stopped only at the dirty limit:
    INFO persistence shows the rate they are paced at now (0: not paced), how many writes were
    paced or stopped and for how long in all, and how long the last checkpoint took, like
    RocksDB's `actual-delayed-write-rate` and stall counters."""
    server = start_strata(appendfsync="everysec", **TIER)
    c = server.client()
    fields = ["strata_tier_delayed_write_rate", "strata_tier_engine_write_rate", "strata_tier_delayed_writes",
              "strata_tier_delayed_write_micros", "strata_tier_stopped_writes",
              "strata_tier_stopped_write_micros", "strata_tier_last_checkpoint_took_ms"]
    before = persistence(c)
    assert all(isinstance(before[f], int) and before[f] >= 0 for f in fields), before
    fill(c, 3000)
    after = persistence(c)
    assert after["strata_tier_checkpoints"] >= 1
    # Counters only grow; the rate is 0 whenever no checkpoint runs (and RocksDB's level 0 is
    # below its slowdown trigger, as it is after so few writes).
    for f in ["strata_tier_delayed_writes", "strata_tier_delayed_write_micros",
              "strata_tier_stopped_writes", "strata_tier_stopped_write_micros"]:
        assert after[f] >= before[f], f
    c.bgsave()
    deadline = time.monotonic() + 30
    while persistence(c)["strata_tier_checkpointing_bytes"] and time.monotonic() < deadline:
        time.sleep(0.05)
    idle = persistence(c)
    if idle["strata_tier_checkpointing_bytes"] == 0:
        assert idle["strata_tier_delayed_write_rate"] == 0
        assert idle["strata_tier_engine_write_rate"] == 0


def test_the_tier_is_off_shows_no_pacing_fields(start_strata):
    server = start_strata(memory_tier="write-through")
    assert "strata_tier_delayed_writes" not in persistence(server.client())


def hot_complete(c) -> dict:
    return c.info("stats")["strata_hot_cache_complete"]


def test_a_fresh_server_answers_misses_from_memory_until_its_cache_lets_a_record_go(start_strata):
    # A fresh directory: every record passes through a checkpoint into the hot-record cache, so
    # a key neither the tier nor the cache holds does not exist, and RocksDB is not asked.
    server = start_strata(appendfsync="everysec", **TIER)
    c = server.client()
    assert hot_complete(c) == {"meta": 1, "data": 1}
    fill(c, 3000)
    assert persistence(c)["strata_tier_checkpoints"] >= 1
    assert hot_complete(c) == {"meta": 1, "data": 1}
    check(c, 3000)
    assert c.get("missing") is None and c.exists("missing", "s:1") == 1
    assert c.hget("h:1", "missing") is None and c.sismember("set:1", "missing") == 0
    assert c.incr("s:new") == 1 and c.hset("h:1", "f1", "x") == 0 and c.sadd("set:1", "1") == 0
    c.delete("s:new")
    c.hset("h:1", "f1", 1)
    check(c, 3000)

    # A directory that already holds records opens with misses read from RocksDB.
    server.restart(kill=True)
    c = server.client()
    assert hot_complete(c) == {"meta": 0, "data": 0}
    check(c, 3000)

    # A cache too small for the records lets some go: from then on misses go to RocksDB, and
    # every record is still read back.
    c.flushall()
    server.restart(hot_cache_size="64kb")
    c = server.client()
    assert hot_complete(c) == {"meta": 1, "data": 1}, "FLUSHALL left the directory empty"
    fill(c, 3000)
    assert hot_complete(c) == {"meta": 0, "data": 0}
    check(c, 3000)
