"""Crash safety: kill -9 at random moments under a mixed write workload, restart, verify.

A few cycles per policy here; ``bench/crash.py --cycles N`` runs the same harness for as long as
you like (see docs/reliability.md). The harness itself is ``crash_workload.py``.
"""

from __future__ import annotations

import os

import pytest

from crash_workload import EVERYSEC_WINDOW, run_crash_cycles
from harness import redis_is_strata

CYCLES = int(os.environ.get("STRATA_CRASH_CYCLES", "8"))


def test_kill_9_with_appendfsync_always_loses_no_acknowledged_write_and_never_half_applies(start_strata):
    server = start_strata(appendfsync="always")
    report = run_crash_cycles(server, cycles=CYCLES, writers=4, seed=int(os.environ.get("STRATA_CRASH_SEED", "7")))
    print(f"always: {report.summary()}")
    assert report.cycles == CYCLES
    assert report.acked_writes > 100 * CYCLES
    assert report.max_lost_seconds == 0.0


@pytest.mark.skipif(redis_is_strata(), reason="write-buffer-size is Strata's own directive")
def test_kill_9_during_constant_memtable_flushes_and_compactions_loses_nothing(start_strata):
    # 128 KB write buffers: memtables flush every few hundred writes, so kills land in the middle
    # of flushes and compactions too.
    server = start_strata(appendfsync="always", write_buffer_size="128kb")
    report = run_crash_cycles(server, cycles=max(2, CYCLES // 2), writers=4,
                              seed=int(os.environ.get("STRATA_CRASH_SEED", "5")))
    print(f"always, small memtables: {report.summary()}")
    assert report.max_lost_seconds == 0.0


@pytest.mark.skipif(redis_is_strata(), reason="memory-tier is Strata's own directive")
def test_kill_9_with_the_write_back_tier_and_appendfsync_always_loses_no_acknowledged_write(start_strata):
    # A 64 KB dirty limit: checkpoints (the tier written to RocksDB without its log, memtables
    # flushed, redo segments deleted) run all the time, so kills land in every step of one.
    server = start_strata(appendfsync="always", memory_tier="write-back", memory_tier_dirty_size="64kb")
    report = run_crash_cycles(server, cycles=max(2, CYCLES // 2), writers=4,
                              seed=int(os.environ.get("STRATA_CRASH_SEED", "13")))
    print(f"always, write-back: {report.summary()}")
    assert report.acked_writes > 100 * max(2, CYCLES // 2)
    assert report.max_lost_seconds == 0.0


@pytest.mark.skipif(redis_is_strata(), reason="memory-tier is Strata's own directive")
def test_kill_9_with_the_write_back_tier_and_appendfsync_everysec_loses_at_most_about_a_second(start_strata):
    server = start_strata(appendfsync="everysec", memory_tier="write-back", memory_tier_dirty_size="64kb")
    report = run_crash_cycles(server, cycles=max(2, CYCLES // 4), writers=4,
                              seed=int(os.environ.get("STRATA_CRASH_SEED", "17")))
    print(f"everysec, write-back: {report.summary()}")
    assert report.max_lost_seconds <= EVERYSEC_WINDOW


def test_kill_9_with_appendfsync_everysec_loses_at_most_about_a_second(start_strata):
    server = start_strata(appendfsync="everysec")
    report = run_crash_cycles(server, cycles=max(2, CYCLES // 2), writers=4,
                              seed=int(os.environ.get("STRATA_CRASH_SEED", "11")))
    print(f"everysec: {report.summary()}")
    assert report.max_lost_seconds <= EVERYSEC_WINDOW
