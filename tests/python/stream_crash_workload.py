"""The crash-safety harness for streams and consumer groups, shared by ``test_stream_crash.py``:
producers XADD and consumers XREADGROUP + XACK through a consumer group while the server is
killed with SIGKILL (or suffers a simulated power cut, ``powerloss.py``) at random moments;
after every restart the streams and groups are checked against what the clients were told.

With ``appendfsync always`` nothing acknowledged may be lost, so after each restart:

- every XADD whose reply arrived is in its stream, with that ID and its fields; the only other
  entries are the XADDs in flight at the crash (at most one per producer);
- no ID ever delivered by ``XREADGROUP ... >`` is delivered by ``>`` again (an applied but
  unanswered read leaves its entries pending, to be read back from the history);
- every XACK whose reply arrived stays acknowledged (its IDs are not in XPENDING), and every
  entry delivered to a consumer and not acknowledged is pending for that consumer, unless its
  XACK was in flight;
- the group is consistent with itself: XPENDING's summary, its extended form and XINFO
  CONSUMERS count the same entries; no pending ID is past the group's last-delivered-id, which
  is at or past every delivered ID and not past the stream's last entry; entries-read counts
  the entries up to last-delivered-id and lag the ones after it (no entry is ever deleted here,
  so Redis keeps both exact).

Each consumer starts a cycle by reading its own pending entries back (``XREADGROUP ... 0``) and
acknowledging them, so entries left pending by a crash are drained, and history reads are
exercised across restarts.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from harness import ConnectionClosed, RespConn, RespError, Server
from powerloss import PowerLoss

STREAMS = ["sq0", "sq1"]
GROUP = "g"


def _id_key(entry_id: bytes) -> tuple[int, int]:
    ms, seq = entry_id.split(b"-")
    return int(ms), int(seq)


@dataclass
class Producer:
    """XADDs with fields naming the producer and a sequence number (and some padding)."""

    index: int
    seed: int
    acked: dict = field(default_factory=lambda: {s: {} for s in STREAMS})  # stream -> {id: fields}
    pending: tuple | None = None  # (stream, fields) of the XADD in flight
    count: int = 0
    error: str | None = None

    def run(self, port: int, stop: threading.Event):
        rng = random.Random(self.seed)
        self.seed = rng.randrange(1 << 62)
        try:
            conn = RespConn(port, timeout=10)
        except OSError:
            return
        try:
            while not stop.is_set():
                self.count += 1
                s = rng.choice(STREAMS)
                fields = [b"p", str(self.index).encode(), b"n", str(self.count).encode()]
                if rng.random() < 0.3:
                    fields += [b"pad", b"x" * rng.randint(0, 300)]
                self.pending = (s, fields)
                reply = conn.call("XADD", s, "*", *fields)
                if not isinstance(reply, bytes):
                    self.error = f"XADD {s} answered {reply!r}"
                    return
                self.acked[s][bytes(reply)] = fields
                self.pending = None
        except (ConnectionClosed, ConnectionError, OSError):
            pass  # killed: the XADD in flight stays pending
        finally:
            conn.close()


@dataclass
class Consumer:
    """Reads new entries through the group and acknowledges most of them."""

    name: str
    seed: int
    seen_new: set  # (stream, id) delivered by `>`, all consumers, all cycles (shared)
    seen_lock: threading.Lock
    unacked: dict = field(default_factory=lambda: {s: set() for s in STREAMS})  # delivered, not acked
    acked: dict = field(default_factory=lambda: {s: set() for s in STREAMS})
    reading: bool = False  # an XREADGROUP is in flight
    pending_ack: tuple | None = None  # (stream, ids) of the XACK in flight
    deliveries: int = 0
    acks: int = 0
    error: str | None = None

    def _ack(self, conn: RespConn, s: str, ids: list) -> bool:
        self.pending_ack = (s, set(ids))
        n = conn.call("XACK", s, GROUP, *ids)
        if n != len(ids):
            self.error = f"{self.name}: XACK {s} of {len(ids)} entries pending for it answered {n!r}"
            return False
        self.acked[s].update(ids)
        self.unacked[s].difference_update(ids)
        self.acks += len(ids)
        self.pending_ack = None
        return True

    def run(self, port: int, stop: threading.Event):
        rng = random.Random(self.seed)
        self.seed = rng.randrange(1 << 62)
        try:
            conn = RespConn(port, timeout=10)
        except OSError:
            return
        try:
            # First what a crash left pending for this consumer: its history.
            for s in STREAMS:
                reply = conn.call("XREADGROUP", "GROUP", GROUP, self.name, "STREAMS", s, "0")
                ids = [bytes(e[0]) for e in reply[0][1]] if reply else []
                if set(ids) != self.unacked[s]:
                    self.error = (f"{self.name}: history of {s} is {sorted(ids, key=_id_key)}, "
                                  f"expected {sorted(self.unacked[s], key=_id_key)}")
                    return
                if ids and not self._ack(conn, s, ids):
                    return
            while not stop.is_set():
                self.reading = True
                reply = conn.call("XREADGROUP", "GROUP", GROUP, self.name, "COUNT", rng.randint(1, 8),
                                  "BLOCK", 50, "STREAMS", *STREAMS, *[">"] * len(STREAMS))
                if isinstance(reply, RespError):
                    self.error = f"{self.name}: XREADGROUP answered {reply!r}"
                    return
                got = {bytes(k).decode(): [bytes(e[0]) for e in entries] for k, entries in (reply or [])}
                with self.seen_lock:
                    for s, ids in got.items():
                        again = [i for i in ids if (s, i) in self.seen_new]
                        if again:
                            self.error = f"{self.name}: {s} {again} delivered by '>' a second time"
                            return
                        self.seen_new.update((s, i) for i in ids)
                for s, ids in got.items():
                    self.unacked[s].update(ids)
                    self.deliveries += len(ids)
                self.reading = False
                for s in STREAMS:
                    ids = sorted(self.unacked[s], key=_id_key)
                    if ids and rng.random() < 0.8:
                        if not self._ack(conn, s, rng.sample(ids, rng.randint(1, len(ids)))):
                            return
        except (ConnectionClosed, ConnectionError, OSError):
            pass  # killed: the read or the XACK in flight stays pending
        finally:
            conn.close()


@dataclass
class StreamCrashReport:
    cycles: int = 0
    xadds: int = 0
    deliveries: int = 0
    acks: int = 0
    in_flight_applied: int = 0  # XADDs in flight at a crash found applied

    def summary(self) -> str:
        return (f"{self.cycles} cycles, {self.xadds} acknowledged XADDs, {self.deliveries} deliveries, "
                f"{self.acks} acknowledged XACKs, {self.in_flight_applied} in-flight XADDs applied")


def verify(conn: RespConn, producers: list, consumers: list, where: str) -> int:
    """Checks every stream and its group after a restart (see the module text); adopts what
    was in flight into the clients' records. Returns how many in-flight XADDs were applied."""
    applied = 0
    for s in STREAMS:
        entries = {bytes(e[0]): [bytes(x) for x in e[1]] for e in conn.call("XRANGE", s, "-", "+")}
        for p in producers:
            for entry_id, fields in p.acked[s].items():
                assert entries.get(entry_id) == fields, (
                    f"{where}: acknowledged XADD {s} {entry_id} {fields} lost (found {entries.get(entry_id)})")
        known = set().union(*(p.acked[s].keys() for p in producers))
        for entry_id in set(entries) - known:
            owner = [p for p in producers if p.pending == (s, entries[entry_id])]
            assert owner, f"{where}: {s} has {entry_id} {entries[entry_id]} that no producer sent"
            owner[0].acked[s][entry_id] = entries[entry_id]
            owner[0].pending = None
            applied += 1

        pel = {bytes(row[0]): bytes(row[1]).decode()
               for row in conn.call("XPENDING", s, GROUP, "-", "+", 1 << 30)}
        for c in consumers:
            in_flight_ack = c.pending_ack[1] if c.pending_ack and c.pending_ack[0] == s else set()
            undone = c.acked[s] & pel.keys()
            assert not undone, f"{where}: acknowledged XACK of {s} {sorted(undone)} undone (pending again)"
            missing = {i for i in c.unacked[s] - in_flight_ack if pel.get(i) != c.name}
            assert not missing, f"{where}: {s} {sorted(missing)} delivered to {c.name}, not acked, not pending"
        for entry_id, owner in pel.items():
            c = next((c for c in consumers if c.name == owner), None)
            assert c is not None, f"{where}: {s} {entry_id} pending for unknown consumer {owner}"
            explained = (entry_id in c.unacked[s] or c.reading
                         or (c.pending_ack and c.pending_ack[0] == s and entry_id in c.pending_ack[1]))
            assert explained, f"{where}: {s} {entry_id} pending for {owner}, which never got it"
            assert entry_id in entries, f"{where}: {s} {entry_id} pending but not in the stream"

        (info,) = [dict(zip(g[::2], g[1::2])) for g in conn.call("XINFO", "GROUPS", s)]
        last = _id_key(bytes(info[b"last-delivered-id"]))
        ids = sorted((_id_key(i) for i in entries))
        delivered = [_id_key(i) for c in consumers for i in c.unacked[s] | c.acked[s]]
        assert all(_id_key(i) <= last for i in pel), f"{where}: {s} pending past last-delivered-id {last}"
        assert all(d <= last for d in delivered), f"{where}: {s} delivered past last-delivered-id {last}"
        assert not ids or last <= ids[-1], f"{where}: {s} last-delivered-id {last} past the last entry"
        read = sum(1 for i in ids if i <= last)
        assert info[b"entries-read"] == read, f"{where}: {s} entries-read {info[b'entries-read']}, expected {read}"
        assert info[b"lag"] == len(ids) - read, f"{where}: {s} lag {info[b'lag']}, expected {len(ids) - read}"
        assert info[b"pending"] == len(pel), f"{where}: {s} XINFO GROUPS pending {info[b'pending']} != {len(pel)}"
        summary = conn.call("XPENDING", s, GROUP)
        assert summary[0] == len(pel), f"{where}: {s} XPENDING summary {summary[0]} != {len(pel)}"
        per = {}
        for owner in pel.values():
            per[owner] = per.get(owner, 0) + 1
        if pel:
            assert (_id_key(summary[1]), _id_key(summary[2])) == (min(map(_id_key, pel)), max(map(_id_key, pel)))
            assert {bytes(r[0]).decode(): int(r[1]) for r in summary[3]} == per, f"{where}: {s} {summary!r}"
        for row in conn.call("XINFO", "CONSUMERS", s, GROUP):
            row = dict(zip(row[::2], row[1::2]))
            name = bytes(row[b"name"]).decode()
            assert row[b"pending"] == per.get(name, 0), f"{where}: {s} XINFO CONSUMERS {name} {row!r}"

        # The next cycle starts from what the server has.
        for c in consumers:
            c.unacked[s] = {i for i, owner in pel.items() if owner == c.name}
            c.acked[s] -= c.unacked[s]
    for c in consumers:
        c.reading, c.pending_ack = False, None
    for p in producers:
        p.pending = None
    return applied


def run_stream_crash_cycles(server: Server, cycles: int, producers: int = 3, consumers: int = 2,
                            seed: int = 1, min_run: float = 0.3, max_run: float = 1.5, log=None,
                            power_loss: PowerLoss | None = None) -> StreamCrashReport:
    """Runs ``cycles`` crash / restart / verify rounds on a started ``server`` (kill -9, or a
    simulated power cut when ``power_loss`` is given)."""
    rng = random.Random(seed)
    with RespConn(server.port) as conn:
        for s in STREAMS:
            assert conn.call("XGROUP", "CREATE", s, GROUP, "$", "MKSTREAM") == b"OK"
    ps = [Producer(i, rng.randrange(1 << 62)) for i in range(producers)]
    seen, lock = set(), threading.Lock()
    cs = [Consumer(f"c{i}", rng.randrange(1 << 62), seen, lock) for i in range(consumers)]
    report = StreamCrashReport()
    for cycle in range(cycles):
        stop = threading.Event()
        threads = [threading.Thread(target=w.run, args=(server.port, stop), daemon=True) for w in ps + cs]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(min_run, max_run))
        if power_loss is not None:
            power_loss.crash()
        else:
            server.kill9()
        stop.set()
        for t in threads:
            t.join(15)
        where = f"seed {seed} cycle {cycle}"
        for w in ps + cs:
            assert w.error is None, f"{where}: {w.error}"
        if power_loss is not None:
            power_loss.arm()
        server.start()
        with RespConn(server.port, timeout=30) as conn:
            report.in_flight_applied += verify(conn, ps, cs, where)
        report.cycles += 1
        report.xadds = sum(len(p.acked[s]) for p in ps for s in STREAMS)
        report.deliveries = sum(c.deliveries for c in cs)
        report.acks = sum(c.acks for c in cs)
        if log:
            log(f"cycle {cycle + 1}/{cycles}: ok; {report.summary()}")
    return report
