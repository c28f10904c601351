"""Power loss: kill -9 at random moments under a mixed write workload (transactions included),
then drop every byte the server had not fsynced (``powerloss.py``), restart, verify.

Unlike a plain kill -9, this loses what sat in the page cache, which is what ``appendfsync`` is
about: with ``always`` no acknowledged write may be lost; with ``everysec`` only the writes of
about the last second, as a suffix in time with no holes; with either, MSET and MULTI/EXEC are
all or nothing and the database opens. A few cycles here; ``bench/crash.py --power-loss`` runs
as many as you like (docs/reliability.md has figures).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from crash_workload import run_crash_cycles
from harness import redis_is_strata
from powerloss import PowerLoss, Unavailable, arm, drop_unsynced, shim_env

CYCLES = int(os.environ.get("STRATA_POWER_LOSS_CYCLES", "6"))
SEED = int(os.environ.get("STRATA_POWER_LOSS_SEED", "17"))
# One second between WAL syncs, plus tolerance: the housekeeping thread's 100 ms tick, and the
# sync that is in flight at the cut (it counts only once it returned; on a busy shared disk an
# fsync can take hundreds of milliseconds).
EVERYSEC_BOUND = 2.0

pytestmark = pytest.mark.skipif(
    redis_is_strata(), reason="the simulation drops the tails of RocksDB's files; Redis's AOF has others")


# Both write paths: RocksDB's own log, and the write-back tier's redo log (`redo/`), which
# replaces it for every write when the tier is on.
TIERS = ["write-through", "write-back"]


@pytest.fixture(params=TIERS)
def memory_tier(request) -> str:
    return request.param


@pytest.fixture
def power_loss_server(start_strata, memory_tier):
    def start(**directives):
        server = start_strata(memory_tier=memory_tier, **directives)
        try:
            return server, PowerLoss(server)
        except Unavailable as e:
            pytest.skip(str(e))
    return start


def test_power_loss_shim_keeps_synced_bytes_and_drops_the_rest(tmp_path):
    """The simulation itself: what was fsynced or fdatasynced stays, the rest goes, and a file
    never synced since the start disappears, while one that was there at the start stays."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "000001.log").write_bytes(b"o" * 10)  # from an earlier life: durable
    log = tmp_path / "synced.log"
    try:
        env = {**os.environ, **shim_env(data, log)}
    except Unavailable as e:
        pytest.skip(str(e))
    arm(data, log)
    writer = textwrap.dedent(f"""
        import os
        d = {str(data)!r}
        old = os.open(d + "/000001.log", os.O_WRONLY | os.O_APPEND)
        os.write(old, b"x" * 5)                      # never synced
        wal = os.open(d + "/000002.log", os.O_WRONLY | os.O_CREAT)
        os.write(wal, b"a" * 100); os.fsync(wal)
        os.write(wal, b"b" * 50); os.fdatasync(wal)
        os.write(wal, b"c" * 7)                      # after the last sync
        sst = os.open(d + "/000003.sst", os.O_WRONLY | os.O_CREAT)
        os.write(sst, b"s" * 30)                     # never synced
        other = os.open(d + "/LOG", os.O_WRONLY | os.O_CREAT)
        os.write(other, b"l" * 3)                    # not a file a power cut drops here
    """)
    subprocess.run([sys.executable, "-c", writer], env=env, check=True, timeout=30)
    dropped = drop_unsynced(data, log)
    assert (data / "000001.log").read_bytes() == b"o" * 10
    assert (data / "000002.log").read_bytes() == b"a" * 100 + b"b" * 50
    assert not (data / "000003.sst").exists()
    assert (data / "LOG").read_bytes() == b"l" * 3
    assert (dropped.bytes, dropped.truncated, dropped.deleted) == (5 + 7 + 30, 2, 1)


def test_power_loss_with_appendfsync_always_loses_no_acknowledged_write(power_loss_server):
    server, power_loss = power_loss_server(appendfsync="always")
    report = run_crash_cycles(server, cycles=max(2, CYCLES * 2 // 3), writers=4, seed=SEED,
                              min_run=0.5, max_run=2.0, power_loss=power_loss)
    print(f"always: {report.summary()}")
    assert report.acked_writes > 50 * report.cycles
    assert report.lost_writes == 0 and report.max_lost_seconds == 0.0


def test_power_loss_during_constant_memtable_flushes_loses_no_acknowledged_write(power_loss_server,
                                                                                 memory_tier):
    # 128 KB write buffers: the log switches files and memtables flush to table files every few
    # hundred writes, so cuts land among unsynced table files and closed logs too. With the
    # write-back tier, a 64 KB dirty limit makes it checkpoint (write its layer to RocksDB, flush,
    # move to a new redo segment and delete the old) every few hundred writes as well.
    tier = {"memory_tier_dirty_size": "64kb"} if memory_tier == "write-back" else {}
    server, power_loss = power_loss_server(appendfsync="always", write_buffer_size="128kb", **tier)
    report = run_crash_cycles(server, cycles=max(2, CYCLES * 2 // 3), writers=4, seed=SEED + 1,
                              min_run=0.5, max_run=2.0, power_loss=power_loss)
    print(f"always, small memtables: {report.summary()}")
    assert report.lost_writes == 0 and report.max_lost_seconds == 0.0


def test_power_loss_with_appendfsync_everysec_loses_only_about_the_last_second(power_loss_server):
    server, power_loss = power_loss_server(appendfsync="everysec")
    # Kills 1-3 s into the load, so every phase of the once-a-second sync is hit.
    report = run_crash_cycles(server, cycles=CYCLES, writers=4, seed=SEED + 2,
                              min_run=1.0, max_run=3.0, power_loss=power_loss)
    print(f"everysec: {report.summary()}")
    # The simulation really bites: unsynced bytes were dropped and acknowledged writes lost ...
    assert report.dropped.bytes > 0
    assert report.cycles_with_loss > 0
    # ... but only those of about the last second (suffixes without holes: run_crash_cycles
    # checks that for every writer and across writers).
    assert report.max_lost_seconds <= EVERYSEC_BOUND, report.summary()


def test_power_loss_with_torn_and_zeroed_log_tails_recovers_a_prefix(start_strata, memory_tier):
    # A disk may have written back part of the unsynced tail: the log then ends in a torn
    # record, or in zeros where its length got ahead of its data. Recovery must open and keep
    # an acknowledged prefix (with no holes), whatever is left.
    server = start_strata(appendfsync="everysec", memory_tier=memory_tier)
    try:
        power_loss = PowerLoss(server, torn_tails=True, seed=SEED)
    except Unavailable as e:
        pytest.skip(str(e))
    report = run_crash_cycles(server, cycles=max(2, CYCLES * 2 // 3), writers=4, seed=SEED + 3,
                              min_run=0.5, max_run=2.5, power_loss=power_loss)
    print(f"everysec, torn tails: {report.summary()}")
    assert report.dropped.truncated > 0
    assert report.max_lost_seconds <= EVERYSEC_BOUND, report.summary()
