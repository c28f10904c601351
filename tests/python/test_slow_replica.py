"""A replica that stops reading (SIGSTOP) must not slow its leader down, and must catch up when it
runs again: without any new sync while the link survives, and with a partial resync (not a full
copy) when the leader dropped it after repl-timeout. Peers are known for falling into repeated full
syncs with a slow replica (docs: DESIGN.md); these tests pin down that Strata does not.

Every phase is bounded; each test takes 10-20 s.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

import pytest

from replication_helpers import all_strings, info, wait_for

KEYS = 5000
VALUE = b"v" * 1000
STOPPED_RATE = 15000  # writes/s at most while the replica is stopped


@dataclass
class WriteRun:
    writes: int
    seconds: float
    max_batch_s: float

    @property
    def rate(self) -> float:
        return self.writes / self.seconds


def write_for(client, seconds: float, tag: str, batch: int = 100, max_rate: float | None = None) -> WriteRun:
    """Pipelined SETs (batches of `batch`) over KEYS keys for `seconds`; every reply must be OK.
    With max_rate, sleeps between batches so as not to exceed it (writes/s)."""
    start = time.monotonic()
    writes, worst, n = 0, 0.0, 0
    while (elapsed := time.monotonic() - start) < seconds:
        if max_rate and writes > max_rate * elapsed:
            time.sleep(min(0.01, writes / max_rate - elapsed))
            continue
        pipe = client.pipeline(transaction=False)
        for i in range(batch):
            pipe.set(f"key:{(n * batch + i) % KEYS}", VALUE + f"{tag}:{n}".encode())
        t0 = time.monotonic()
        assert all(pipe.execute())
        worst = max(worst, time.monotonic() - t0)
        writes += batch
        n += 1
    return WriteRun(writes, time.monotonic() - start, worst)


def stats(server) -> tuple[int, int]:
    s = info(server, "stats")
    return s["sync_full"], s["sync_partial_ok"]


def wait_linked(leader, replica, timeout: float = 20):
    wait_for("the replica's link to be up",
             lambda: info(replica)["master_link_status"] == "up"
             and info(leader).get("slave0", {}).get("state") == "online", timeout)


def wait_same_data(leader, replica, timeout: float = 30):
    """The replica has caught up: same offset as the leader, then the same keys and values."""
    wait_for("the replica to reach the leader's offset",
             lambda: info(replica)["slave_repl_offset"] >= info(leader)["master_repl_offset"], timeout)
    wait_for("the replica to hold the leader's data",
             lambda: all_strings(replica) == all_strings(leader), 10)


@pytest.fixture
def stopped():
    """stopped(server): SIGSTOP it; SIGCONT is sent by .resume() or, at the latest, after the test."""
    paused = []

    class Pause:
        def __init__(self, server):
            self.pid = server.proc.pid
            os.kill(self.pid, signal.SIGSTOP)
            paused.append(self)
            self.running = False

        def resume(self):
            if not self.running:
                os.kill(self.pid, signal.SIGCONT)
                self.running = True

    yield Pause
    for p in paused:
        p.resume()


def test_a_stopped_replica_does_not_slow_the_leader_and_catches_up_without_a_new_sync(start_strata, stopped):
    leader = start_strata()
    replica = start_strata(replicaof=f"127.0.0.1 {leader.port}")
    wait_linked(leader, replica)
    before = stats(leader)
    c = leader.client()
    baseline = write_for(c, 2.0, "running")

    # Up to ~60 MB of writes while the replica reads nothing: far more than the socket buffers
    # hold, so the leader's stream to it is blocked most of the time; but less than the 256 MB
    # after which Redis (in the self-check) drops a replica whose output buffer keeps growing.
    pause = stopped(replica)
    paused = write_for(c, 4.0, "stopped", max_rate=STOPPED_RATE)
    t0 = time.monotonic()
    leader_info = info(leader)
    info_s = time.monotonic() - t0
    pause.resume()
    print(f"leader writes/s: {baseline.rate:,.0f} with the replica running, {paused.rate:,.0f} with it stopped "
          f"(slowest batch of 100: {baseline.max_batch_s * 1000:.0f} / {paused.max_batch_s * 1000:.0f} ms); "
          f"INFO took {info_s * 1000:.0f} ms; {paused.writes * len(VALUE) / 1e6:.0f} MB written while stopped")
    assert paused.max_batch_s < 1.5, "a write batch waited on the stopped replica"
    assert paused.rate > min(baseline.rate, STOPPED_RATE) / 2, "the leader slowed down while the replica was stopped"
    assert info_s < 1.0 and leader_info["connected_slaves"] == 1

    wait_same_data(leader, replica)
    after = stats(leader)
    print(f"leader sync_full/sync_partial_ok: {before} before, {after} after")
    assert after == before, "the link survived: no full copy and no resync were needed"


def test_a_replica_stopped_past_repl_timeout_is_dropped_and_resumes_with_a_partial_resync(start_strata, stopped):
    # repl-backlog-size: Redis (in the self-check) keeps 1 MB of history by default; Strata keeps
    # the write-ahead log back to this size.
    leader = start_strata(repl_timeout=2, repl_backlog_size=64 * 1024 * 1024)
    replica = start_strata(replicaof=f"127.0.0.1 {leader.port}")
    wait_linked(leader, replica)
    c = leader.client()
    write_for(c, 0.5, "before")
    wait_same_data(leader, replica)
    before = stats(leader)

    # Writes keep flowing while the leader gives up on the silent replica (repl-timeout 2 s).
    pause = stopped(replica)
    t0 = time.monotonic()
    paused = write_for(c, 2.0, "stopped", max_rate=5000)
    # Redis drops it 2-3 s after its last acknowledgement; Strata only once the socket has taken
    # no data for repl-timeout, 7-10 s after SIGSTOP here.
    wait_for("the leader to drop the stopped replica", lambda: info(leader)["connected_slaves"] == 0, 20)
    dropped_after = time.monotonic() - t0
    paused2 = write_for(c, 1.0, "dropped", max_rate=5000)
    assert max(paused.max_batch_s, paused2.max_batch_s) < 1.5, "a write batch waited on the stopped replica"
    pause.resume()

    wait_linked(leader, replica)
    wait_same_data(leader, replica)
    after = stats(leader)
    print(f"replica dropped {dropped_after:.1f}s after SIGSTOP; leader sync_full/sync_partial_ok: "
          f"{before} before, {after} after")
    assert after == (before[0], before[1] + 1), "the replica must resume from the log, not get a full copy"
