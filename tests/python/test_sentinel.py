"""Redis Sentinel in front of Strata: a leader and two replicas watched by real Sentinel processes
(``redis-server --sentinel``, from Debian's redis-server package that scripts/setup.sh installs).

Sentinel knows nothing about Strata: it finds the replicas in the leader's INFO replication,
gossips with the other sentinels over the leader's and replicas' pub/sub (``__sentinel__:hello``),
and fails over with ``MULTI; SLAVEOF NO ONE; CONFIG REWRITE; CLIENT KILL TYPE normal; CLIENT KILL
TYPE pubsub; EXEC`` on the chosen replica and the same with ``SLAVEOF <new leader>`` on the others. So these tests check that Strata
answers all of that as Redis does, end to end.

Every wait is bounded (``wait_for``); each test takes 10-20 s here.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis
import redis.sentinel

from harness import free_port, redis_is_strata
from replication_helpers import all_strings, info, role, wait_for

MASTER_NAME = "mymaster"
DOWN_AFTER_MS = 1000  # how long the leader may not answer PING before Sentinel calls it down
FAILOVER_TIMEOUT_MS = 6000  # also the pace of a retried election (2x this)
FAILOVER_BOUND = 30.0  # seconds from kill -9 to a new leader that the sentinels agree on
SENTINEL_START_TIMEOUT = 10.0


class Sentinel:
    """One ``redis-server <conf> --sentinel`` process on 127.0.0.1, with its config (which
    Sentinel rewrites) and log in a temp dir. Stopped by PID."""

    def __init__(self, master_port: int, quorum: int):
        self.workdir = Path(tempfile.mkdtemp(prefix="sentinel-test-"))
        self.conf = self.workdir / "sentinel.conf"
        self.log_path = self.workdir / "sentinel.log"
        self.port = free_port()
        self.conf.write_text(
            f"port {self.port}\n"
            "bind 127.0.0.1\n"
            "daemonize no\n"
            f"dir {self.workdir}\n"
            f"logfile {self.log_path}\n"
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {quorum}\n"
            f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {MASTER_NAME} 2\n")
        self.proc = subprocess.Popen(["redis-server", str(self.conf), "--sentinel"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT, cwd=self.workdir, start_new_session=True)
        self.client = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True, socket_timeout=5)

        def answers():
            assert self.proc.poll() is None, f"sentinel exited with {self.proc.returncode}\n{self.log_tail()}"
            return self.client.ping()

        wait_for(f"sentinel on port {self.port} to answer PING", answers, SENTINEL_START_TIMEOUT,
                 on_timeout=self.log_tail)

    def master_addr(self) -> tuple[str, int] | None:
        addr = self.client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
        return (addr[0], int(addr[1])) if addr else None

    def replicas(self) -> list[dict]:
        """SENTINEL REPLICAS as a list of {field: value} dicts."""
        rows = self.client.execute_command("SENTINEL", "REPLICAS", MASTER_NAME)
        return [dict(zip(row[::2], row[1::2])) for row in rows]

    def healthy_replica_ports(self) -> set[int]:
        """Replicas Sentinel would pick in a failover: up, linked to their leader."""
        return {int(r["port"]) for r in self.replicas()
                if r["flags"] == "slave" and r["master-link-status"] == "ok"}

    def other_sentinels(self) -> int:
        row = self.client.execute_command("SENTINEL", "MASTER", MASTER_NAME)
        return int(dict(zip(row[::2], row[1::2]))["num-other-sentinels"])

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return f"(no sentinel log at {self.log_path})"
        return f"---- last {min(n, len(lines))} lines of sentinel {self.port} log ----\n" + "\n".join(lines[-n:])

    def stop(self):
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture
def start_sentinel():
    """start_sentinel(master_port, quorum) -> a started Sentinel; all stopped after the test."""
    started: list[Sentinel] = []

    def start(master_port: int, quorum: int) -> Sentinel:
        s = Sentinel(master_port, quorum)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def sentinel_logs(sentinels) -> str:
    return "\n".join(s.log_tail() for s in sentinels)


def write_batch(client, prefix: str, n: int = 200) -> dict[bytes, bytes]:
    data = {f"{prefix}:{i}".encode(): f"{prefix}-value-{i}".encode() for i in range(n)}
    pipe = client.pipeline(transaction=False)
    for k, v in data.items():
        pipe.set(k, v)
    assert all(pipe.execute())
    return data


def retrying(what: str, action, timeout: float = 15.0):
    """action() until it stops failing (a client whose connection the failover cut, or that
    still holds the old leader's address for a moment)."""
    return wait_for(what, lambda: action() or True, timeout, interval=0.2)


WRITE_BACK = {"memory_tier": "write-back", "memory_tier_dirty_size": "64kb"}


@pytest.mark.parametrize("sentinels,tier", [
    pytest.param(1, {}, id="one_sentinel"),
    pytest.param(3, {}, id="three_sentinels_quorum_2"),
    # Leader and replicas with the write-back tier: the stream comes from the redo log.
    pytest.param(1, WRITE_BACK, id="one_sentinel_write_back",
                 marks=pytest.mark.skipif(redis_is_strata(), reason="memory-tier is Strata's own")),
])
def test_sentinel_fails_over_to_a_replica_after_kill_9_of_the_leader(start_strata, start_sentinel, sentinels,
                                                                     tier):
    leader = start_strata(**tier)
    replicas = [start_strata(replicaof=f"127.0.0.1 {leader.port}", **tier) for _ in range(2)]
    quorum = 1 if sentinels == 1 else 2
    sents = [start_sentinel(leader.port, quorum) for _ in range(sentinels)]
    logs = lambda: sentinel_logs(sents)  # noqa: E731

    # Sentinel discovers the replicas from the leader's INFO replication, and the other
    # sentinels from their hello messages on the servers' pub/sub.
    replica_ports = {r.port for r in replicas}
    for s in sents:
        wait_for(f"sentinel {s.port} to see both replicas", lambda: s.healthy_replica_ports() == replica_ports,
                 20, on_timeout=logs)
        if sentinels > 1:
            wait_for(f"sentinel {s.port} to discover the other sentinels",
                     lambda: s.other_sentinels() == sentinels - 1, 20, on_timeout=logs)
        assert s.master_addr() == ("127.0.0.1", leader.port)

    # Data before the failover, through a client that asks Sentinel where the leader is.
    via_sentinel = redis.sentinel.Sentinel([("127.0.0.1", s.port) for s in sents], socket_timeout=5)
    app = via_sentinel.master_for(MASTER_NAME, socket_timeout=5)
    before = write_batch(app, "before")
    before[b"counter"] = str(app.incrby("counter", 41)).encode()
    with leader.client() as c:
        assert c.execute_command("WAIT", 2, 10000) == 2, "the replicas did not acknowledge the writes"

    killed_at = time.monotonic()
    leader.kill9()

    # A replica is promoted: every sentinel names it, and it says so itself.
    def agreed_new_leader():
        addrs = {s.master_addr() for s in sents}
        return len(addrs) == 1 and (addr := addrs.pop())[1] in replica_ports and addr

    new_addr = wait_for("the sentinels to agree on a new leader", agreed_new_leader, FAILOVER_BOUND,
                        interval=0.2, on_timeout=logs)
    failover_seconds = time.monotonic() - killed_at
    print(f"{sentinels} sentinel(s): new leader 127.0.0.1:{new_addr[1]} {failover_seconds:.1f}s after kill -9")
    new_leader = next(r for r in replicas if r.port == new_addr[1])
    other = next(r for r in replicas if r.port != new_addr[1])
    wait_for("the promoted replica to report ROLE master", lambda: role(new_leader)[0] == b"master", 10)

    # Everything acknowledged before the kill is on the new leader, and it takes writes.
    assert all_strings(new_leader) == before
    with new_leader.client() as c:
        assert c.set("after:direct", "1")
        assert c.incr("counter") == 42

    # The other replica is repointed at the new leader and receives its writes.
    wait_for("the other replica to follow the new leader",
             lambda: (i := info(other))["role"] == "slave" and i["master_port"] == new_leader.port
             and i["master_link_status"] == "up", FAILOVER_BOUND, on_timeout=logs)
    r = role(other)
    assert r[0] == b"slave" and r[2] == new_leader.port, r
    s = info(new_leader, "stats")
    print(f"the other replica resynced from the new leader: sync_full={s['sync_full']} "
          f"sync_partial_ok={s['sync_partial_ok']} (Redis continues with a partial resync)")
    with new_leader.client() as c:
        assert c.execute_command("WAIT", 1, 10000) == 1
    wait_for("the other replica to receive the writes made after the failover",
             lambda: all_strings(other) == all_strings(new_leader), 10)
    # Sentinel sees the repointed replica under the new leader (the dead one is listed as down).
    for s in sents:
        wait_for(f"sentinel {s.port} to list the other replica under the new leader",
                 lambda: other.port in s.healthy_replica_ports(), 20, on_timeout=logs)

    # The client that asks Sentinel keeps working: it finds the new leader by itself.
    retrying("the Sentinel-managed client to write", lambda: app.set("after:via-sentinel", "2"))
    assert app.get("after:via-sentinel") == b"2"
    with new_leader.client() as c:
        assert c.get("after:via-sentinel") == b"2"
    reader = via_sentinel.slave_for(MASTER_NAME, socket_timeout=5)

    def where_the_reader_reads():
        with other.client() as c:
            on_other = c.get("after:via-sentinel")
        return (f"reader connected to port {reader.info('server').get('tcp_port')}; "
                f"the other replica ({other.port}) holds {on_other!r}, {info(other)}; "
                f"new leader ({new_leader.port}): {info(new_leader)}\n{logs()}")

    wait_for("a Sentinel-chosen replica to serve the new write",
             lambda: reader.get("after:via-sentinel") == b"2", 20, on_timeout=where_the_reader_reads)
    app.close()
    reader.close()

    # The old leader comes back (its data diverged: it takes a write of its own first) and
    # follows the new one: it must get a full copy and end with exactly the new leader's data.
    leader.start()  # new port: no sentinel turns it into a replica behind our back
    with leader.client() as c:
        assert c.execute_command("ROLE")[0] == b"master"
        assert c.set("stale:only-on-the-old-leader", "x")
    full_syncs = info(new_leader, "stats")["sync_full"]
    with leader.client() as c:
        assert c.execute_command("REPLICAOF", "127.0.0.1", new_leader.port) == b"OK"
    wait_for("the old leader to finish its sync from the new leader",
             lambda: (i := info(leader))["master_link_status"] == "up" and i["master_sync_in_progress"] == 0, 20)
    wait_for("the old leader to hold exactly the new leader's data",
             lambda: all_strings(leader) == all_strings(new_leader), 10)
    assert b"stale:only-on-the-old-leader" not in all_strings(leader)
    assert info(new_leader, "stats")["sync_full"] == full_syncs + 1
    with leader.client() as c:
        with pytest.raises(redis.exceptions.ReadOnlyError):
            c.set("x", "y")
    for s in sents:
        wait_for(f"sentinel {s.port} to list the old leader as a replica of the new one",
                 lambda: leader.port in s.healthy_replica_ports(), 20, on_timeout=logs)


def test_replicaof_no_one_sent_to_a_leader_answers_ok_and_changes_nothing(start_strata):
    # Failover tools (and people) send it to a server that is already a leader, e.g. when they
    # retry a promotion; Redis answers +OK and carries on.
    server = start_strata()
    c = server.conn(timeout=3)
    try:
        assert c.call("SET", "k", "v") == b"OK"
        assert c.call("REPLICAOF", "NO", "ONE") == b"OK"
        assert c.call("SLAVEOF", "NO", "ONE") == b"OK"
        assert c.call("ROLE")[0] == b"master"
        assert c.call("GET", "k") == b"v"
    except TimeoutError:
        server.kill9()  # a deadlocked server would also make the fixture wait out SIGTERM
        raise
