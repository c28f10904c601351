"""Crash safety of streams and consumer groups: producers XADD and consumers XREADGROUP + XACK
while the server is killed with kill -9 (or loses power) under ``appendfsync always``; after
every restart no acknowledged XADD or XACK is lost and the group is consistent
(``stream_crash_workload.py`` has the checks).

``STRATA_STREAM_CRASH_CYCLES`` and ``STRATA_STREAM_CRASH_SEED`` change the run.
"""

from __future__ import annotations

import os

import pytest

from harness import redis_is_strata
from powerloss import PowerLoss, Unavailable
from stream_crash_workload import run_stream_crash_cycles

CYCLES = int(os.environ.get("STRATA_STREAM_CRASH_CYCLES", "5"))
SEED = int(os.environ.get("STRATA_STREAM_CRASH_SEED", "3"))


def _check(report, cycles):
    print(report.summary())
    assert report.cycles == cycles
    assert report.xadds > 20 * cycles
    assert report.acks > 5 * cycles


def test_kill_9_under_appendfsync_always_loses_no_acknowledged_xadd_or_xack(start_strata):
    server = start_strata(appendfsync="always")
    _check(run_stream_crash_cycles(server, cycles=CYCLES, seed=SEED), CYCLES)


@pytest.mark.skipif(redis_is_strata(), reason="memory-tier is Strata's own directive")
def test_kill_9_with_the_write_back_tier_loses_no_acknowledged_xadd_or_xack(start_strata):
    # A 64 KB dirty limit: checkpoints run all the time, so kills land inside them too.
    server = start_strata(appendfsync="always", memory_tier="write-back", memory_tier_dirty_size="64kb")
    cycles = max(2, CYCLES - 2)
    _check(run_stream_crash_cycles(server, cycles=cycles, seed=SEED + 1), cycles)


@pytest.mark.skipif(redis_is_strata(), reason="the simulation drops the tails of RocksDB's files")
def test_power_loss_under_appendfsync_always_loses_no_acknowledged_xadd_or_xack(start_strata):
    server = start_strata(appendfsync="always", write_buffer_size="128kb")
    try:
        power_loss = PowerLoss(server)
    except Unavailable as e:
        pytest.skip(str(e))
    cycles = max(2, CYCLES - 2)
    _check(run_stream_crash_cycles(server, cycles=cycles, seed=SEED + 2,
                                   min_run=0.5, max_run=2.0, power_loss=power_loss), cycles)
