"""The crash-safety harness shared by ``test_crash.py`` and ``test_power_loss.py`` (a few
cycles in CI) and ``bench/crash.py`` (long runs): writer threads run a mixed workload over every
data type, the server is killed with SIGKILL at a random moment (or suffers a simulated power
cut, ``powerloss.py``), restarted, and every writer's keys are checked against its model of what
was acknowledged.

Each writer owns its keys (prefix ``c<writer>:``), so its model is exact. A command is recorded
in the model only after its reply arrived; the one command in flight when the server died may or
may not have been applied, but never partly. Multi-key and multi-member commands (MSET, MSETNX,
DEL of several keys, HSET/SADD/ZADD/RPUSH of several members) and transactions (MULTI ... EXEC
of 2-4 writes over several types) write the same generation value everywhere, so a half-applied
one shows up as a mismatch.

With ``appendfsync always`` a writer's whole key space must equal its model, or its model with
the command in flight applied: nothing acknowledged may be lost. With ``everysec`` (and ``no``)
it may equal the state after any acknowledged prefix of the cycle, so a loss is a suffix in time
per writer, and across writers no write sent after another writer's lost write was acknowledged
may have survived (the log is one sequence: no holes). The report gives, per cycle, how long
before the crash the oldest lost acknowledged write was acknowledged: the loss window. A kill -9
is a process crash, and Strata hands every write to the OS before replying, so only a power cut
loses anything.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from harness import ConnectionClosed, RespConn, RespError, Server, encode_command
from powerloss import Dropped, PowerLoss

EVERYSEC_WINDOW = 1.5  # seconds of acknowledged writes everysec may lose to a kill -9 (Redis: "about one second")

# Key names per writer; the type of each name is fixed (kind letter first).
STRINGS = [f"s{i}" for i in range(4)]
COUNTERS = [f"n{i}" for i in range(2)]
GROUP = ["g0", "g1", "g2"]  # MSET all three with one value
NXGROUP = ["x0", "x1", "x2"]  # MSETNX / multi-key DEL
HASHES = ["h0", "h1"]
LISTS = ["l0", "l1"]
SETS = ["S0", "S1"]
ZSETS = ["z0", "z1"]
ALL_NAMES = STRINGS + COUNTERS + GROUP + NXGROUP + HASHES + LISTS + SETS + ZSETS


def copy_model(m: dict) -> dict:
    out = {}
    for k, (kind, value, ttl) in m.items():
        if kind in ("hash", "zset"):
            value = dict(value)
        elif kind == "list":
            value = list(value)
        elif kind == "set":
            value = set(value)
        out[k] = (kind, value, ttl)
    return out


@dataclass
class Op:
    cmd: tuple  # one command, or for a transaction a tuple of commands sent as MULTI ... EXEC
    apply: callable  # model -> None (mutates)
    multi: bool = False


TRANSACTION_SHARE = 0.08  # of all operations


def transaction_op(rng: random.Random, model: dict, key, gen: str) -> Op | None:
    """Now and then (None otherwise) a MULTI ... EXEC of 2-4 random writes over several types;
    it must survive a crash whole or not at all, like a multi-key command."""
    if rng.random() >= TRANSACTION_SHARE:
        return None
    ops = [make_op(rng, model, key, f"{gen}.t{i}") for i in range(rng.randint(2, 4))]

    def a(m):
        for op in ops:
            op.apply(m)
    return Op(tuple(op.cmd for op in ops), a, multi=True)


def make_op(rng: random.Random, model: dict, key, gen: str) -> Op:
    """A random write over this writer's keys; ``key(name)`` gives the full key name."""
    r = rng.random()

    def set_str(name, v):
        def a(m):
            m[name] = ("string", v, False)
        return a

    if r < 0.14:
        n = rng.choice(STRINGS)
        return Op(("SET", key(n), gen), set_str(n, gen.encode()))
    if r < 0.20:
        n = rng.choice(STRINGS)

        def a(m):
            old = m.get(n)
            if old is None:
                m[n] = ("string", gen.encode(), False)
            else:
                m[n] = ("string", old[1] + gen.encode(), old[2])
        return Op(("APPEND", key(n), gen), a)
    if r < 0.28:
        n = rng.choice(COUNTERS)

        def a(m):
            old = m.get(n)
            v = int(old[1]) + 1 if old else 1
            m[n] = ("string", str(v).encode(), old[2] if old else False)
        return Op(("INCR", key(n)), a)
    if r < 0.40:  # multi-key atomic write
        def a(m):
            for n in GROUP:
                m[n] = ("string", gen.encode(), False)
        return Op(("MSET", *[x for n in GROUP for x in (key(n), gen)]), a)
    if r < 0.46:
        def a(m):
            if not any(n in m for n in NXGROUP):
                for n in NXGROUP:
                    m[n] = ("string", gen.encode(), False)
        return Op(("MSETNX", *[x for n in NXGROUP for x in (key(n), gen)]), a)
    if r < 0.50:
        def a(m):
            for n in NXGROUP:
                m.pop(n, None)
        return Op(("DEL", *[key(n) for n in NXGROUP]), a)
    if r < 0.60:
        n = rng.choice(HASHES)
        fields = rng.sample(["fa", "fb", "fc", "fd"], rng.randint(1, 4))

        def a(m):
            old = m.get(n)
            h = old[1] if old else {}
            for f in fields:
                h[f.encode()] = gen.encode()
            m[n] = ("hash", h, old[2] if old else False)
        return Op(("HSET", key(n), *[x for f in fields for x in (f, gen)]), a)
    if r < 0.64:
        n = rng.choice(HASHES)
        fields = rng.sample(["fa", "fb", "fc", "fd"], 2)

        def a(m):
            old = m.get(n)
            if old:
                for f in fields:
                    old[1].pop(f.encode(), None)
                if not old[1]:
                    del m[n]
        return Op(("HDEL", key(n), *fields), a)
    if r < 0.72:
        n = rng.choice(LISTS)
        items = [f"{gen}.{i}" for i in range(rng.randint(1, 3))]

        def a(m):
            old = m.get(n)
            lst = old[1] if old else []
            lst.extend(i.encode() for i in items)
            m[n] = ("list", lst, old[2] if old else False)
        # Lists stay short, so model copies stay cheap: a long one is popped instead.
        if n in model and len(model[n][1]) > 40:
            return Op(("LPOP", key(n), 3), _lpop(n, 3))
        return Op(("RPUSH", key(n), *items), a)
    if r < 0.76:
        n = rng.choice(LISTS)
        return Op(("LPOP", key(n), 2), _lpop(n, 2))
    if r < 0.84:
        n = rng.choice(SETS)
        members = rng.sample([f"m{i}" for i in range(12)], rng.randint(1, 4))

        def a(m):
            old = m.get(n)
            s = old[1] if old else set()
            s.update(x.encode() for x in members)
            m[n] = ("set", s, old[2] if old else False)
        return Op(("SADD", key(n), *members), a)
    if r < 0.87:
        n = rng.choice(SETS)
        members = rng.sample([f"m{i}" for i in range(12)], 3)

        def a(m):
            old = m.get(n)
            if old:
                old[1].difference_update(x.encode() for x in members)
                if not old[1]:
                    del m[n]
        return Op(("SREM", key(n), *members), a)
    if r < 0.93:
        n = rng.choice(ZSETS)
        members = rng.sample([f"e{i}" for i in range(10)], rng.randint(1, 3))
        score = rng.randint(-1000, 1000)

        def a(m):
            old = m.get(n)
            z = old[1] if old else {}
            for x in members:
                z[x.encode()] = score
            m[n] = ("zset", z, old[2] if old else False)
        return Op(("ZADD", key(n), *[x for e in members for x in (score, e)]), a)
    if r < 0.95:
        n = rng.choice(ZSETS)
        members = rng.sample([f"e{i}" for i in range(10)], 2)

        def a(m):
            old = m.get(n)
            if old:
                for x in members:
                    old[1].pop(x.encode(), None)
                if not old[1]:
                    del m[n]
        return Op(("ZREM", key(n), *members), a)
    if r < 0.98:
        n = rng.choice(ALL_NAMES)

        def a(m):
            if n in m:
                kind, v, _ = m[n]
                m[n] = (kind, v, True)
        return Op(("EXPIRE", key(n), 100000), a)
    n = rng.choice(ALL_NAMES)

    def a(m):
        if n in m:
            kind, v, _ = m[n]
            m[n] = (kind, v, False)
    return Op(("PERSIST", key(n)), a)


def _lpop(n, count):
    def a(m):
        old = m.get(n)
        if old:
            del old[1][:count]
            if not old[1]:
                del m[n]
    return a


def read_state(conn: RespConn, key) -> dict:
    """The writer's key space as the server has it, in the model's form."""
    out = {}
    for n in ALL_NAMES:
        k = key(n)
        kind = conn.call("TYPE", k)
        if kind == b"none":
            continue
        kind = kind.decode()
        if kind == "string":
            v = conn.call("GET", k)
        elif kind == "hash":
            flat = conn.call("HGETALL", k)
            v = dict(zip(flat[::2], flat[1::2]))
        elif kind == "list":
            v = conn.call("LRANGE", k, 0, -1)
        elif kind == "set":
            v = set(conn.call("SMEMBERS", k))
        elif kind == "zset":
            flat = conn.call("ZRANGE", k, 0, -1, "WITHSCORES")
            v = {m: int(float(s)) for m, s in zip(flat[::2], flat[1::2])}
        else:
            raise AssertionError(f"{k}: unexpected type {kind}")
        ttl = conn.call("TTL", k)
        out[n] = (kind, v, ttl > 0)
    return out


def call_op(conn: RespConn, op: Op):
    """Sends ``op`` (a transaction as one pipelined MULTI ... EXEC); returns an error text or None."""
    if not op.multi:
        reply = conn.call(*op.cmd)
        return f"{op.cmd} answered {reply!r}" if isinstance(reply, RespError) else None
    conn.send(b"".join([encode_command("MULTI"), *(encode_command(*c) for c in op.cmd), encode_command("EXEC")]))
    replies = [conn.read_reply() for _ in range(len(op.cmd) + 2)]
    exec_reply = replies[-1]
    if (replies[0] != b"OK" or any(r != b"QUEUED" for r in replies[1:-1]) or not isinstance(exec_reply, list)
            or len(exec_reply) != len(op.cmd) or any(isinstance(r, RespError) for r in exec_reply)):
        return f"MULTI {op.cmd} EXEC answered {replies!r}"
    return None


@dataclass
class Step:
    """One acknowledged write of a cycle: when it was sent and acknowledged, and the writer's
    whole key space after it."""

    sent: float | None  # None: the state the cycle started from
    acked: float | None
    state: dict


@dataclass
class Verdict:
    """What survived of one writer's cycle.

    ``lost_age``: seconds between the crash and the acknowledgement of the oldest acknowledged
    write that is missing (0.0 when none is). ``oldest_lost_ack`` and ``newest_seen_sent`` are
    facts that hold however an ambiguous state (two prefixes with equal contents) is read: the
    acknowledgement time of a write that is certainly lost, and the send time of a write that is
    certainly there; ``run_crash_cycles`` checks them across writers."""

    lost_age: float = 0.0
    lost_writes: int = 0
    oldest_lost_ack: float | None = None
    newest_seen_sent: float | None = None


@dataclass
class Writer:
    """One writer thread's keys, model, and (when writes may be lost) this cycle's history."""

    index: int
    seed: int
    keep_history: bool  # False: only the last acknowledged state may be found after a crash
    model: dict = field(default_factory=dict)
    history: list = field(default_factory=list)  # [Step] oldest first; [0] is the cycle's start
    pending: Op | None = None
    pending_sent: float = 0.0
    acked: int = 0
    error: str | None = None

    def key(self, name: str) -> str:
        return f"c{self.index}:{name}"

    def run(self, port: int, stop: threading.Event, gen_prefix: str):
        rng = random.Random(self.seed)
        self.seed = rng.randrange(1 << 62)  # next cycle continues the sequence
        self.history = [Step(None, None, copy_model(self.model))] if self.keep_history else []
        try:
            conn = RespConn(port, timeout=10)
        except OSError:
            return
        i = 0
        try:
            while not stop.is_set():
                i += 1
                gen = f"{gen_prefix}.{self.index}.{i}"
                op = transaction_op(rng, self.model, self.key, gen) or make_op(rng, self.model, self.key, gen)
                self.pending = op
                self.pending_sent = time.monotonic()
                error = call_op(conn, op)
                if error:
                    self.error = error
                    return
                acked = time.monotonic()
                op.apply(self.model)
                self.pending = None
                self.acked += 1
                if self.keep_history:
                    self.history.append(Step(self.pending_sent, acked, copy_model(self.model)))
        except (ConnectionClosed, ConnectionError, OSError):
            pass  # the server was killed: the command in flight stays pending
        finally:
            conn.close()

    def verify(self, conn: RespConn, crashed_at: float) -> Verdict:
        """Checks the server's state after restart against what this writer was acknowledged,
        and adopts it as the model of the next cycle. Without history the state must be the last
        acknowledged one (or it plus the command in flight); with history it may be the state
        after any acknowledged prefix of this cycle."""
        actual = read_state(conn, self.key)
        try:
            if actual == self.model:
                return Verdict(newest_seen_sent=self._first_sent_of(actual))
            if self.pending is not None:
                after = copy_model(self.model)
                self.pending.apply(after)
                if actual == after:
                    return Verdict(newest_seen_sent=self.pending_sent)
            matches = [j for j, step in enumerate(self.history) if step.state == actual]
            if not matches:
                raise AssertionError(
                    f"writer {self.index}: state after the crash matches no acknowledged prefix\n"
                    f"  pending: {self.pending.cmd if self.pending else None}\n"
                    f"  model:   {sorted(self.model.items())}\n  actual:  {sorted(actual.items())}")
            # The latest matching prefix is the most favourable reading of what was lost.
            first_lost = self.history[max(matches) + 1]
            return Verdict(lost_age=crashed_at - first_lost.acked,
                           lost_writes=len(self.history) - 1 - max(matches),
                           oldest_lost_ack=first_lost.acked,
                           newest_seen_sent=self.history[min(matches)].sent)
        finally:
            self.model = actual
            self.pending = None
            self.history = []

    def _first_sent_of(self, state: dict) -> float | None:
        """Send time of the write that first produced ``state`` in the unbroken run of equal
        states at the end of the history (None: the cycle's start state, or no history)."""
        j = len(self.history) - 1
        if j < 0:
            return None
        while j > 0 and self.history[j - 1].state == state:
            j -= 1
        return self.history[j].sent


@dataclass
class CrashReport:
    cycles: int = 0
    acked_writes: int = 0
    max_lost_seconds: float = 0.0  # the largest lost_age of any writer in any cycle
    loss_ages: list = field(default_factory=list)  # per cycle, the largest lost_age of its writers
    lost_writes: int = 0  # acknowledged writes lost, all cycles
    cycles_with_loss: int = 0
    dropped: Dropped = field(default_factory=Dropped)  # what the simulated power cuts threw away

    def percentile(self, p: float) -> float:
        """The p-th percentile (0-100) of loss_ages, nearest rank."""
        if not self.loss_ages:
            return 0.0
        ages = sorted(self.loss_ages)
        return ages[min(len(ages) - 1, max(0, round(p / 100 * len(ages) + 0.5) - 1))]

    def summary(self) -> str:
        text = (f"{self.cycles} cycles, {self.acked_writes} acknowledged writes, "
                f"{self.lost_writes} lost in {self.cycles_with_loss} cycles; loss window "
                f"p50 {self.percentile(50) * 1000:.0f} ms, p99 {self.percentile(99) * 1000:.0f} ms, "
                f"max {self.max_lost_seconds * 1000:.0f} ms")
        if self.dropped.truncated or self.dropped.deleted:
            text += (f"; unsynced bytes dropped {self.dropped.bytes} ({self.dropped.truncated} files cut, "
                     f"{self.dropped.deleted} deleted)")
        return text


def check_no_holes(verdicts: list, where: str):
    """Across writers: no write that was sent after another writer's lost write was acknowledged
    may have survived. The log is one sequence, so a power cut keeps a prefix of it."""
    lost = [(v.oldest_lost_ack, i) for i, v in enumerate(verdicts) if v.oldest_lost_ack is not None]
    seen = [(v.newest_seen_sent, i) for i, v in enumerate(verdicts) if v.newest_seen_sent is not None]
    if not lost or not seen:
        return
    lost_ack, lost_writer = min(lost)
    seen_sent, seen_writer = max(seen)
    assert seen_sent <= lost_ack, (
        f"{where}: hole in the log: writer {seen_writer} has a write sent {seen_sent - lost_ack:.3f}s after "
        f"writer {lost_writer}'s lost write was acknowledged")


def run_crash_cycles(server: Server, cycles: int, writers: int = 4, seed: int = 1,
                     min_run: float = 0.2, max_run: float = 1.0, log=None,
                     power_loss: PowerLoss | None = None) -> CrashReport:
    """Runs ``cycles`` crash / restart / verify rounds on a started ``server``: kill -9, or a
    simulated power cut when ``power_loss`` is given (``PowerLoss(server)``)."""
    always = server.directives.get("appendfsync", "everysec") == "always"
    # Without a power cut every policy keeps what reached the OS; the history is kept anyway
    # for everysec and no, so a loss there is measured instead of only reported as a failure.
    rng = random.Random(seed)
    ws = [Writer(i, rng.randrange(1 << 62), keep_history=not always) for i in range(writers)]
    report = CrashReport()
    for cycle in range(cycles):
        stop = threading.Event()
        threads = [threading.Thread(target=w.run, args=(server.port, stop, f"{cycle}"), daemon=True) for w in ws]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(min_run, max_run))
        crashed_at = time.monotonic()
        if power_loss is not None:
            dropped = power_loss.crash()
            report.dropped.add(dropped)
        else:
            server.kill9()
        stop.set()
        for t in threads:
            t.join(15)
        for w in ws:
            assert w.error is None, f"seed {seed} cycle {cycle}: {w.error}"
        if power_loss is not None:
            power_loss.arm()
        server.start()  # the database must open after every crash
        where = f"seed {seed} cycle {cycle}"
        with RespConn(server.port, timeout=30) as conn:
            verdicts = []
            for w in ws:
                try:
                    verdicts.append(w.verify(conn, crashed_at))
                except AssertionError as e:
                    raise AssertionError(f"{where}: {e}") from None
        check_no_holes(verdicts, where)
        age = max(v.lost_age for v in verdicts)
        report.loss_ages.append(age)
        report.max_lost_seconds = max(report.max_lost_seconds, age)
        lost = sum(v.lost_writes for v in verdicts)
        report.lost_writes += lost
        report.cycles_with_loss += lost > 0
        report.cycles += 1
        report.acked_writes = sum(w.acked for w in ws)
        if log:
            log(f"cycle {cycle + 1}/{cycles}: ok, lost {lost} acknowledged writes (oldest "
                f"{age * 1000:.0f} ms before the crash); {report.summary()}")
    return report
