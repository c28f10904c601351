"""Replication with the write-back memory tier (`memory-tier write-back`): the leader's stream
comes from its redo log (and the segments checkpoints archived), a full copy is taken right
after a checkpoint, and a replica with the tier applies the leader's batches through its own
tier. A leader with the tier and a replica without it (or the reverse) follow each other too.
Small dirty limits (64kb) make checkpoints run all the time, so they happen while replicas are
behind. The generic replication tests (test_replication.py, test_slow_replica.py,
test_sentinel.py) also run with the tier through STRATA_SERVER_ARGS="--memory-tier write-back".
"""

from __future__ import annotations

import time

import pytest

from harness import redis_is_strata
from test_replication import caught_up, follow, info, mixed_workload, snapshot, wait_for

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="memory-tier is Strata's own directive")

TIER = {"memory_tier": "write-back", "memory_tier_dirty_size": "64kb"}
NO_TIER = {"memory_tier": "write-through"}


def checkpoints(c) -> int:
    return c.info("persistence")["strata_tier_checkpoints"]


def bulk(c, prefix: str, n: int = 3000, size: int = 200):
    """About n * size bytes of writes: dozens of 64kb checkpoints."""
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}:{i}", f"{i}:" + "x" * size)
        if i % 10 == 0:
            p.hset(f"{prefix}:h", f"f{i}", i)
    p.execute()


def test_full_copy_stream_and_wait_with_the_tier_on_both_sides(start_strata):
    leader_server = start_strata(**TIER)
    replica_server = start_strata(**TIER)
    leader, replica = leader_server.client(), replica_server.client()
    mixed_workload(leader)
    bulk(leader, "before")
    assert checkpoints(leader) > 0
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to load the copy")
    assert info(leader, "stats")["sync_full"] == 1
    mixed_workload(leader, prefix="after")
    bulk(leader, "after-bulk")
    assert leader.execute_command("WAIT", 1, 10000) == 1
    assert info(replica)["slave_repl_offset"] == info(leader)["master_repl_offset"]
    assert snapshot(replica) == snapshot(leader)
    assert checkpoints(replica) > 0, "the replica applied the stream through its own tier"
    assert leader.execute_command("ROLE")[1] == info(leader)["master_repl_offset"]


@pytest.mark.parametrize("leader_tier,replica_tier", [(TIER, NO_TIER), (NO_TIER, TIER)],
                         ids=["tier-leader", "tier-replica"])
def test_a_server_with_the_tier_and_one_without_follow_each_other(start_strata, leader_tier,
                                                                   replica_tier):
    leader_server = start_strata(**leader_tier)
    replica_server = start_strata(**replica_tier)
    leader, replica = leader_server.client(), replica_server.client()
    mixed_workload(leader)
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to catch up")
    bulk(leader, "stream")
    mixed_workload(leader, prefix="more")
    assert leader.execute_command("WAIT", 1, 10000) == 1
    assert snapshot(replica) == snapshot(leader)


def test_a_replica_behind_during_checkpoints_resumes_with_a_partial_resync(start_strata):
    leader_server = start_strata(**TIER)
    replica_server = start_strata(**TIER)
    leader, replica = leader_server.client(), replica_server.client()
    mixed_workload(leader)
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to catch up")
    stats = info(leader, "stats")
    replica_server.kill9()
    before = checkpoints(leader)
    # Checkpoints run in the background and a busy one absorbs everything written meanwhile, so
    # write in rounds, each after the previous round's checkpoint has happened.
    for round_ in range(5):
        at = checkpoints(leader)
        bulk(leader, f"while-down-{round_}", n=1200)
        wait_for(lambda: checkpoints(leader) > at, what="a checkpoint of the round's writes")
    mixed_workload(leader, prefix="while-down")
    assert checkpoints(leader) >= before + 5, "checkpoints archived what the replica lacks"
    replica_server.directives["replicaof"] = f"127.0.0.1 {leader_server.port}"
    replica_server.start()
    replica = replica_server.client()
    wait_for(lambda: caught_up(leader, replica), timeout=30, what="the restarted replica")
    assert snapshot(replica) == snapshot(leader)
    after = info(leader, "stats")
    assert after["sync_full"] == stats["sync_full"]
    assert after["sync_partial_ok"] == stats["sync_partial_ok"] + 1


def test_a_leader_restarted_cleanly_is_resumed_from_its_archived_redo_log(start_strata):
    leader_server = start_strata(**TIER)
    replica_server = start_strata(**TIER)
    leader, replica = leader_server.client(), replica_server.client()
    mixed_workload(leader)
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to catch up")
    offset = info(leader)["master_repl_offset"]
    leader_server.stop()
    leader_server.start(new_port=False)
    leader = leader_server.client()
    assert info(leader)["master_repl_offset"] == offset, "offsets go on across a clean restart"
    bulk(leader, "after-restart")
    wait_for(lambda: caught_up(leader, replica), timeout=30, what="the replica after the restart")
    assert snapshot(replica) == snapshot(leader)
    stats = info(leader, "stats")  # counted since the restart
    assert stats["sync_full"] == 0
    assert stats["sync_partial_ok"] == 1


# ~4 MB through a 64kb dirty limit: some sixty checkpoints, each flushing RocksDB; on a busy
# machine that alone has taken two minutes.
@pytest.mark.timeout(240)
def test_a_replica_past_the_kept_backlog_gets_a_full_copy(start_strata):
    leader_server = start_strata(repl_backlog_size="16kb", **TIER)
    replica_server = start_strata(**TIER)
    leader, replica = leader_server.client(), replica_server.client()
    mixed_workload(leader)
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to catch up")
    replica_server.stop()
    bulk(leader, "gone", n=20000)
    # The housekeeping thread prunes the archive to repl-backlog-size within a second or two.
    wait_for(lambda: checkpoints(leader) > 3, what="checkpoints")
    time.sleep(2.5)
    replica_server.directives["replicaof"] = f"127.0.0.1 {leader_server.port}"
    replica_server.start()
    replica = replica_server.client()
    wait_for(lambda: caught_up(leader, replica), timeout=30, what="the replica's full copy")
    assert snapshot(replica) == snapshot(leader)
    assert info(leader, "stats")["sync_full"] == 2


def queue_workload(c, prefix: str, rounds: int = 40):
    """Pushes and pops at both ends of a few lists (LPOP, RPOP, LMPOP, LMOVE, RPOPLPUSH, LTRIM,
    LREM at an end), with items big enough for 64kb checkpoints to fall among them."""
    p = c.pipeline(transaction=False)
    for r in range(rounds):
        for i in range(4):
            k = f"{prefix}:q{i}"
            p.rpush(k, *[f"{r}:{j}:" + "x" * 100 for j in range(20)])
            p.lpush(k, *[f"{r}:front{j}" for j in range(5)])
            p.lpop(k, 7)
            p.rpop(k, 3)
            p.execute_command("LMPOP", 1, k, "RIGHT", "COUNT", 2)
            p.lmove(k, f"{prefix}:moved", "LEFT", "RIGHT")
            p.rpoplpush(k, k)
            if r % 5 == 4:
                p.ltrim(k, 2, -3)
                p.lrem(k, -1, f"{r}:19:" + "x" * 100)
    p.execute()


@pytest.mark.parametrize("leader_tier,replica_tier",
                         [(TIER, TIER), (TIER, NO_TIER), (NO_TIER, TIER)],
                         ids=["tier-both", "tier-leader", "tier-replica"])
def test_list_pops_replicate_and_no_popped_item_comes_back_on_either_side(start_strata,
                                                                         leader_tier,
                                                                         replica_tier):
    """A pop writes only the list's metadata (the popped item's record is garbage): the replica
    applies the leader's batches, full copy and stream, and both read the same lists, with no
    popped item at any index."""
    leader_server = start_strata(**leader_tier)
    replica_server = start_strata(**replica_tier)
    leader, replica = leader_server.client(), replica_server.client()
    queue_workload(leader, "before")
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to load the copy")
    queue_workload(leader, "after")
    queue_workload(leader, "before", rounds=10)
    assert leader.execute_command("WAIT", 1, 10000) == 1
    assert snapshot(replica) == snapshot(leader)
    for c in (leader, replica):
        for prefix in ("before", "after"):
            for i in range(4):
                k = f"{prefix}:q{i}"
                n = c.llen(k)
                assert n > 0
                assert c.lindex(k, n) is None and c.lindex(k, -n - 1) is None
                assert len(c.lrange(k, 0, -1)) == n
                assert c.lpos(k, "0:front0") is None, "popped by the first round's LPOP"
