"""Disk full: Strata on a small dedicated filesystem (a tmpfs with a size limit).

Fill it, and check that writes get Redis's ``-MISCONF`` error, that reads keep working, that
nothing acknowledged is lost, and that the server recovers by itself once space is freed
(RocksDB's error handler resumes the database when its SstFileManager sees enough free space:
at least the configured write buffers, checked every 5 seconds).

Needs root (to mount a tmpfs); skipped, with the reason, only when mounting fails.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time

import pytest

from harness import RespError, redis_is_strata

MISCONF = b"MISCONF Errors writing to the AOF file: No space left on device"
FS_SIZE_MB = 48
FILLER_MB = 24
MIN_FREE_MB = 16
VALUE_SIZE = 64 * 1024


@pytest.fixture
def small_fs():
    """A FS_SIZE_MB tmpfs mounted on a temp dir; unmounted afterwards."""
    mnt = tempfile.mkdtemp(prefix="strata-diskfull-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE_MB}m", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(mnt)
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)
        os.rmdir(mnt)


def _fill(conn, prefix: str, limit: int = 100_000):
    """SET random values until a write fails; returns ({key: value} acknowledged, error)."""
    acked = {}
    for i in range(limit):
        key = f"{prefix}:{i}".encode()
        value = os.urandom(VALUE_SIZE)  # incompressible, so the disk really fills
        reply = conn.call("SET", key, value)
        if isinstance(reply, RespError):
            return acked, reply
        assert reply == b"OK"
        acked[key] = value
    raise AssertionError(f"the disk never filled after {limit} writes")


@pytest.mark.skipif(redis_is_strata(), reason="Redis needs --dir on the tmpfs and exits on AOF ENOSPC with appendfsync always")
def test_disk_full_refuses_writes_keeps_reads_and_recovers_when_space_is_freed(small_fs, start_strata):
    data_dir = os.path.join(small_fs, "data")
    os.mkdir(data_dir)
    filler = os.path.join(small_fs, "filler")
    with open(filler, "wb") as f:
        f.write(b"\0" * (FILLER_MB << 20))
    server = start_strata(appendfsync="always", write_buffer_size="1mb", hot_cache_size=0,
                          min_free_disk=f"{MIN_FREE_MB}mb")
    # The data dir lives on the tmpfs: restart the server there (the fixture made its own dir).
    server.stop()
    server.dir = type(server.dir)(data_dir)
    server.start()
    c = server.conn(timeout=30)

    acked, error = _fill(c, "fill")
    assert error.message == MISCONF, error
    assert len(acked) > 10

    # Every kind of write is refused the same way while the disk is full; reads keep working.
    for cmd in (("SET", "x", "1"), ("HSET", "h", "f", "v"), ("RPUSH", "l", "a"), ("DEL", "fill:0")):
        reply = c.call(*cmd)
        assert isinstance(reply, RespError) and reply.message.startswith(b"MISCONF"), (cmd, reply)
    # A transaction and a script are refused whole: their writes reach the disk as one batch.
    assert c.call("MULTI") == b"OK"
    assert c.call("SET", "tx", "1") == b"QUEUED"
    assert c.call("RPUSH", "txl", "a") == b"QUEUED"
    reply = c.call("EXEC")
    assert isinstance(reply, RespError) and reply.message.startswith(b"MISCONF"), reply
    reply = c.call("EVAL", "redis.call('SET', KEYS[1], '1') return redis.call('INCR', KEYS[2])", 2, "sx", "sn")
    assert isinstance(reply, RespError) and reply.message.startswith(b"MISCONF"), reply
    assert c.call("EXISTS", "tx", "txl", "sx", "sn") == 0
    for key in list(acked)[:: max(1, len(acked) // 50)]:
        assert c.call("GET", key) == acked[key]
    assert c.call("PING") == b"PONG"
    assert c.call("DBSIZE") == len(acked)
    assert b"aof_last_write_status:err" in c.call("INFO", "persistence")

    time.sleep(1.5)  # long enough for the server's once-a-second check to log the state
    assert c.call("GET", list(acked)[0]) == acked[list(acked)[0]]

    # Free the space: writes resume by themselves.
    os.unlink(filler)
    deadline = time.monotonic() + 30
    while True:
        reply = c.call("SET", "after", "space-freed")
        if reply == b"OK":
            break
        assert reply.message.startswith(b"MISCONF"), reply
        assert time.monotonic() < deadline, "writes still refused 30 s after space was freed"
        time.sleep(0.5)

    assert c.call("GET", "after") == b"space-freed"
    # A single write that would eat into the margin is refused on its own; small ones go on.
    # It eats half the margin: the free space moves by a few MB meanwhile (RocksDB deletes
    # obsolete log files; the server's own figure is from its once-a-second check).
    free = os.statvfs(small_fs).f_bavail * os.statvfs(small_fs).f_frsize
    huge = free - (MIN_FREE_MB << 20) + ((MIN_FREE_MB << 20) // 2)
    assert c.call("SET", "huge", os.urandom(huge)) == RespError(MISCONF)
    assert c.call("SET", "small", "ok") == b"OK"
    assert b"aof_last_write_status:ok" in c.call("INFO", "persistence")
    deadline = time.monotonic() + 5  # the server logs both transitions from its 1 s cron
    while "accepting writes again" not in server.log_path.read_text():
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.2)
    assert "refusing writes (-MISCONF)" in server.log_path.read_text()
    for key, value in acked.items():
        assert c.call("GET", key) == value, key

    # And everything survives a crash after the episode.
    server.kill9()
    server.start()
    c = server.conn(timeout=30)
    assert c.call("DBSIZE") == len(acked) + 2
    for key, value in acked.items():
        assert c.call("GET", key) == value, key
    assert c.call("GET", "after") == b"space-freed"
