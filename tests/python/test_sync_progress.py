"""INFO replication's transfer figures on a Strata replica while a full copy loads
(`master_sync_total_bytes`, `_read_bytes`, `_left_bytes`, `_perc`, `_last_io_seconds_ago`), as
Redis 7.0 reports them: a leader played here sends a real redis-server's dump.rdb slowly (with
its length, and in the diskless `$EOF:` form), or a Strata leader's copy that stops halfway."""

import re
import socket
import struct
import time

import pytest

from harness import redis_is_strata
from replication_helpers import wait_for

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="a Strata replica of a leader played by the test")


class FakeLeader:
    """Accepts the replica's link and answers its handshake up to PSYNC."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.conn = None

    def accept(self):
        self.listener.settimeout(20)
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(20)
        f = self.conn.makefile("rb")
        while True:
            n = int(f.readline()[1:])
            args = []
            for _ in range(n):
                size = int(f.readline()[1:])
                args.append(f.read(size + 2)[:-2])
            name = args[0].upper()
            if name == b"PSYNC":
                return
            self.conn.sendall(b"+PONG\r\n" if name == b"PING" else b"+OK\r\n")

    def close(self):
        if self.conn:
            self.conn.close()
        self.listener.close()


def sync_figures(server) -> dict:
    """The master_sync_* lines of INFO replication, as text (exact formatting)."""
    with server.conn() as conn:
        text = conn.call("INFO", "replication").decode()
    return dict(re.findall(r"^(master_sync_(?!in_progress)\w+):(.*?)\r$", text, re.M))


@pytest.fixture
def redis_rdb(start_redis):
    r = start_redis(enable_debug_command="yes").client()
    r.execute_command("DEBUG", "POPULATE", 20_000, "key", 50)
    r.save()
    return (r.server.dir / "dump.rdb").read_bytes()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", ["length", "eof"])
def test_the_transfer_figures_of_a_redis_leaders_rdb(start_strata, redis_rdb, form):
    leader = FakeLeader()
    try:
        strata = start_strata(replicaof=f"127.0.0.1 {leader.port}")
        leader.accept()
        mark = b"m" * 40
        head = b"$%d\r\n" % len(redis_rdb) if form == "length" else b"$EOF:%s\r\n" % mark
        leader.conn.sendall(b"+FULLRESYNC %s 0\r\n\n" % (b"a" * 40) + head)
        c = strata.client()
        half = len(redis_rdb) // 2
        leader.conn.sendall(redis_rdb[:half])
        # The loader has read (nearly) everything sent: it waits for the rest.
        figures = wait_for("the first half to load",
                           lambda: (f := sync_figures(strata)) and int(f["master_sync_read_bytes"]) > half - 200 and f, 30)
        read = int(figures["master_sync_read_bytes"])
        assert read <= half
        total = len(redis_rdb) if form == "length" else 0
        assert figures["master_sync_total_bytes"] == str(total)
        assert figures["master_sync_left_bytes"] == str(total - read)
        perc = f"{read / total * 100:.2f}" if total else "0.00"
        assert figures["master_sync_perc"] == perc
        assert figures["master_sync_last_io_seconds_ago"] == "0"
        info = c.info("replication")
        assert info["master_sync_in_progress"] == 1
        time.sleep(2.2)
        assert int(sync_figures(strata)["master_sync_last_io_seconds_ago"]) >= 2
        leader.conn.sendall(redis_rdb[half:] + (mark if form == "eof" else b""))
        wait_for("the end of the sync", lambda: c.info("replication")["master_link_status"] == "up", 30)
        assert sync_figures(strata) == {}, "the figures are shown only while the copy loads"
        assert c.dbsize() == 20_000
    finally:
        leader.close()


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


@pytest.mark.timeout(60)
def test_the_transfer_figures_of_a_strata_leaders_copy(start_strata):
    leader = FakeLeader()
    try:
        strata = start_strata(replicaof=f"127.0.0.1 {leader.port}")
        leader.accept()
        ids = struct.pack("<5I", 0, 1, 2, 3, 4)
        leader.conn.sendall(b"+FULLRESYNC %s 5\r\n" % (b"b" * 40) + frame(b"C", ids)
                            + frame(b"S", b"") + frame(b"H", struct.pack("<Q", 5)))
        c = strata.client()
        # A Strata leader does not announce the size of its copy: Redis's figures for a
        # transfer of unknown size (as with `$EOF:`).
        figures = wait_for("the copy to start",
                           lambda: (f := sync_figures(strata)) and f["master_sync_read_bytes"] == "18" and f, 20)
        assert figures == {
            "master_sync_total_bytes": "0",
            "master_sync_read_bytes": "18",
            "master_sync_left_bytes": "-18",
            "master_sync_perc": "0.00",
            "master_sync_last_io_seconds_ago": "0",
        }
    finally:
        leader.close()
