"""Point writes to big values through the write-back tier (`memory-tier write-back`): a put that
changes a few bytes of a value the tier's memory layer holds is logged as a byte-range patch of
it (docs/format.md, "Redo log"). These tests check what users see: the values survive kill -9
with `appendfsync always`, a Strata replica receives them byte for byte, and the log grows by
the bytes changed rather than by the whole value each time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import redis_is_strata
from test_replication import caught_up, follow, snapshot, wait_for

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="memory-tier is Strata's own directive")

# A dirty limit no test reaches: every write stays in the layer and the log until restart.
TIER = {"memory_tier": "write-back", "memory_tier_dirty_size": "512mb"}
NO_TIER = {"memory_tier": "write-through"}

KEYS = ["small", "big", "hll:sparse", "hll:dense", "bits:small", "bits:big"]


def redo_bytes(server) -> int:
    """Bytes of the live redo segments (not the archive)."""
    return sum(p.stat().st_size for p in Path(server.dir, "redo").glob("*.log"))


def fill(c):
    """Values big enough to be patched: an inline string, a fragmented one (1 MB), a sparse
    and a dense HyperLogLog, a small and a fragmented bitmap."""
    c.set("small", b"s" * 8000)
    c.set("big", bytes(range(256)) * 4096)
    c.pfadd("hll:sparse", *[f"s{i}" for i in range(300)])
    c.pfadd("hll:dense", *[f"d{i}" for i in range(5000)])
    c.setbit("bits:small", 10_000, 1)
    c.setbit("bits:big", 4_000_000, 1)


def point_writes(c, rounds: int = 50):
    """Point writes of every kind the patch covers, in place and at the ends."""
    for i in range(rounds):
        c.setrange("small", (i * 97) % 8000, f"<{i}>")
        c.append("small", b"+" * 3)
        c.setrange("big", (i * 20011) % (1 << 20), f"[{i}]")
        c.append("big", b"tail%d" % i)
        c.pfadd("hll:sparse", f"more{i}")
        c.pfadd("hll:dense", f"more{i}")
        c.setbit("bits:small", (i * 131) % 10_000, i % 2)
        c.setbit("bits:big", (i * 77_777) % 4_000_000, 1)


def values(c):
    # PFCOUNT first: it stores the cardinality it computed in the HLL, which GET then shows.
    counts = {"count:sparse": c.pfcount("hll:sparse"), "count:dense": c.pfcount("hll:dense")}
    return counts | {k: c.get(k) for k in KEYS}


def replicated(c):
    """The bytes of every key and the counts (PFCOUNT after GET: a replica's PFCOUNT does not
    store the cardinality it computes, a leader's does, and replicates it later)."""
    raw = {k: c.get(k) for k in KEYS + ["new"]}
    return raw | {"count:sparse": c.pfcount("hll:sparse"), "count:dense": c.pfcount("hll:dense")}


def test_patched_point_writes_survive_kill9_with_appendfsync_always(start_strata):
    server = start_strata(appendfsync="always", **TIER)
    c = server.client()
    fill(c)
    assert c.execute_command("PFDEBUG", "ENCODING", "hll:sparse") == b"sparse"
    assert c.execute_command("PFDEBUG", "ENCODING", "hll:dense") == b"dense"
    # One whole-value write of each key first: the later ones patch it.
    point_writes(c, rounds=1)
    before = redo_bytes(server)
    point_writes(c, rounds=50)
    grown = redo_bytes(server) - before
    # Whole values would be 50 x (8 KB + 1 MB + 12 KB + 4 KB fragments ...) = over 50 MB.
    assert grown < 2_000_000, f"the log grew by {grown} bytes for 400 point writes"
    want = values(c)
    assert c.info("persistence")["strata_tier_checkpoints"] == 0, "all of it is in the log"
    server.restart(kill=True)
    c = server.client()
    assert values(c) == want
    # And the writes after the replay patch the replayed values.
    point_writes(c, rounds=5)
    want = values(c)
    server.restart(kill=True)
    assert values(server.client()) == want


def test_patched_writes_reach_rocksdb_at_a_checkpoint_and_survive_it(start_strata):
    server = start_strata(appendfsync="always", memory_tier="write-back",
                          memory_tier_dirty_size="64kb")
    c = server.client()
    fill(c)
    point_writes(c, rounds=30)
    want = values(c)
    assert c.info("persistence")["strata_tier_checkpoints"] > 0
    server.restart(kill=True)
    assert values(server.client()) == want


@pytest.mark.parametrize("replica_tier", [TIER, NO_TIER], ids=["tier-replica", "plain-replica"])
def test_a_strata_replica_receives_patched_writes_byte_for_byte(start_strata, replica_tier):
    leader_server = start_strata(**TIER)
    replica_server = start_strata(**replica_tier)
    leader, replica = leader_server.client(), replica_server.client()
    fill(leader)
    point_writes(leader, rounds=1)
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to load the copy")
    # Streamed: patches of values the replica got in its copy, and of values streamed to it.
    point_writes(leader, rounds=40)
    leader.set("new", b"n" * 5000)
    leader.setrange("new", 100, "patched")
    leader.append("new", "!")
    assert leader.execute_command("WAIT", 1, 10000) == 1, replica_server.log_tail(20)
    assert snapshot(replica) == snapshot(leader)
    assert replicated(replica) == replicated(leader)
    # A replica restarted after kill -9 follows again (a partial resync from its offset) and
    # still agrees.
    replica_server.restart(kill=True)
    replica = replica_server.client()
    follow(replica, leader_server)
    point_writes(leader, rounds=10)
    assert leader.execute_command("WAIT", 1, 10000) == 1
    wait_for(lambda: caught_up(leader, replica), what="the replica to resume")
    assert replicated(replica) == replicated(leader)


def stream_state(c, key="xs"):
    """What a user sees of a stream: its entries, and XINFO STREAM's counters."""
    info = c.execute_command("XINFO", "STREAM", key)
    fields = dict(zip(info[::2], info[1::2]))
    counters = {k: fields[k] for k in (b"length", b"last-generated-id", b"max-deleted-entry-id",
                                       b"entries-added", b"recorded-first-entry-id")}
    return counters, c.xrange(key)


@pytest.mark.parametrize("replica_tier", [TIER, NO_TIER], ids=["tier-replica", "plain-replica"])
def test_xadd_logs_the_stream_metadata_as_a_patch_and_a_replica_and_a_restart_agree(
        start_strata, replica_tier):
    leader_server = start_strata(appendfsync="always", **TIER)
    replica_server = start_strata(**replica_tier)
    leader, replica = leader_server.client(), replica_server.client()
    payload = b"p" * 100
    leader.xadd("xs", {"f": "0", "payload": payload})
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to load the copy")
    before = redo_bytes(leader_server)
    for i in range(1, 1001):
        leader.xadd("xs", {"f": str(i * 7919), "payload": payload})
    # Streamed, with explicit IDs and an XDEL (the metadata's deleted-ID and first-ID fields)
    # between patches.
    leader.xadd("xs", {"f": "x"}, id="99999999999999-5")
    leader.xdel("xs", leader.xrange("xs", count=1)[0][0])
    leader.xadd("xs", {"f": "y"})
    per_xadd = (redo_bytes(leader_server) - before) / 1002
    # Whole, the 138-byte metadata record made an XADD ~340 bytes of log here.
    assert per_xadd < 250, f"{per_xadd:.0f} bytes of redo log per XADD"
    assert leader.execute_command("WAIT", 1, 10000) == 1, replica_server.log_tail(20)
    want = stream_state(leader)
    assert want[0][b"length"] == 1002
    assert stream_state(replica) == want
    leader_server.restart(kill=True)
    leader = leader_server.client()
    assert stream_state(leader) == want
    # The first XADD after the replay logs the metadata whole, the next ones patch it.
    leader.xadd("xs", {"f": "after"})
    leader.xadd("xs", {"f": "after2"})
    want = stream_state(leader)
    leader_server.restart(kill=True)
    assert stream_state(leader_server.client()) == want
