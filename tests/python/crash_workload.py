"""The crash-safety harness shared by ``test_crash.py`` (a few cycles in CI) and
``bench/crash.py`` (long runs): writer threads run a mixed workload over every data type, the
server is killed with SIGKILL at a random moment, restarted, and every writer's keys are
checked against its model of what was acknowledged.

Each writer owns its keys (prefix ``c<writer>:``), so its model is exact. A command is recorded
in the model only after its reply arrived; the one command in flight when the server died may or
may not have been applied, but never partly: after restart a writer's whole key space must equal
either its model or its model with that command applied. Multi-key and multi-member commands
(MSET, MSETNX, DEL of several keys, HSET/SADD/ZADD/RPUSH of several members) write the same
generation value everywhere, so a half-applied one shows up as a mismatch.

With ``appendfsync always`` nothing acknowledged may be lost. With ``everysec`` the harness
accepts the state after any acknowledged prefix of the last ``EVERYSEC_WINDOW`` seconds and
reports how much was lost (a kill -9 is a process crash: Strata hands every write to the OS
before replying, so in practice nothing is lost there either).

Transactions plug in at ``transaction_op`` (MULTI/EXEC is being built on another branch).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from harness import ConnectionClosed, RespConn, RespError, Server

EVERYSEC_WINDOW = 1.5  # seconds of acknowledged writes everysec may lose (Redis: "about one second")

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
    cmd: tuple
    apply: callable  # model -> None (mutates)
    reply_ok: callable = None  # reply -> bool (sanity check of the reply)


def transaction_op(rng: random.Random, model: dict, key, gen: str) -> Op | None:
    """Where MULTI/EXEC plugs in: return an Op whose ``cmd`` is a list of commands to send as
    MULTI ... EXEC, applying all of them to the model. None until transactions exist."""
    return None


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


@dataclass
class Writer:
    """One writer thread's keys, model, and recent history."""

    index: int
    seed: int
    window: float  # seconds of history kept (0: only the last acknowledged state)
    model: dict = field(default_factory=dict)
    history: list = field(default_factory=list)  # [(ack time, model copy)] newest last
    pending: Op | None = None
    acked: int = 0
    last_ack: float = 0.0
    error: str | None = None

    def key(self, name: str) -> str:
        return f"c{self.index}:{name}"

    def run(self, port: int, stop: threading.Event, gen_prefix: str):
        rng = random.Random(self.seed)
        self.seed = rng.randrange(1 << 62)  # next cycle continues the sequence
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
                reply = conn.call(*op.cmd)
                if isinstance(reply, RespError):
                    self.error = f"{op.cmd} answered {reply!r}"
                    return
                op.apply(self.model)
                self.pending = None
                self.acked += 1
                self.last_ack = time.monotonic()
                if self.window > 0:
                    self.history.append((self.last_ack, copy_model(self.model)))
                    cutoff = self.last_ack - self.window - 1.0
                    while self.history and self.history[0][0] < cutoff:
                        self.history.pop(0)
        except (ConnectionClosed, ConnectionError, OSError):
            pass  # the server was killed: the command in flight stays pending
        finally:
            conn.close()

    def verify(self, conn: RespConn, killed_at: float) -> float:
        """Checks the server's state after restart; returns the seconds of acknowledged writes
        lost (0.0 when the latest acknowledged state, or it plus the pending command, is there).
        Adopts what was found as the model for the next cycle."""
        actual = read_state(conn, self.key)
        candidates = [copy_model(self.model)]
        if self.pending is not None:
            after = copy_model(self.model)
            self.pending.apply(after)
            candidates.append(after)
        for c in candidates:
            if c == actual:
                self._adopt(actual)
                return 0.0
        if self.window > 0:
            for t, snap in reversed(self.history):
                if snap == actual:
                    lost = self.last_ack - t
                    self._adopt(actual)
                    return lost
            if actual == {} and self.history and self.history[0][0] > self.last_ack - self.window:
                self._adopt(actual)  # everything of this writer was in the window
                return self.last_ack - self.history[0][0]
        raise AssertionError(
            f"writer {self.index}: state after kill -9 matches no acknowledged prefix\n"
            f"  pending: {self.pending.cmd if self.pending else None}\n"
            f"  model:   {sorted(self.model.items())}\n  actual:  {sorted(actual.items())}")

    def _adopt(self, actual: dict):
        self.model = actual
        self.pending = None
        self.history = []


@dataclass
class CrashReport:
    cycles: int = 0
    acked_writes: int = 0
    max_lost_seconds: float = 0.0


def run_crash_cycles(server: Server, cycles: int, writers: int = 4, seed: int = 1,
                     min_run: float = 0.2, max_run: float = 1.0, log=None) -> CrashReport:
    """Runs ``cycles`` kill -9 / restart / verify rounds on a started ``server``."""
    everysec = server.directives.get("appendfsync", "everysec") != "always"
    rng = random.Random(seed)
    ws = [Writer(i, rng.randrange(1 << 62), EVERYSEC_WINDOW if everysec else 0.0) for i in range(writers)]
    report = CrashReport()
    for cycle in range(cycles):
        stop = threading.Event()
        threads = [threading.Thread(target=w.run, args=(server.port, stop, f"{cycle}"), daemon=True) for w in ws]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(min_run, max_run))
        server.kill9()
        killed_at = time.monotonic()
        stop.set()
        for t in threads:
            t.join(15)
        for w in ws:
            assert w.error is None, f"seed {seed} cycle {cycle}: {w.error}"
        server.start()  # the database must open after every crash
        with RespConn(server.port, timeout=30) as conn:
            for w in ws:
                try:
                    lost = w.verify(conn, killed_at)
                except AssertionError as e:
                    raise AssertionError(f"seed {seed} cycle {cycle}: {e}") from None
                report.max_lost_seconds = max(report.max_lost_seconds, lost)
        report.cycles += 1
        report.acked_writes = sum(w.acked for w in ws)
        if log:
            log(f"cycle {cycle + 1}/{cycles}: ok, {report.acked_writes} acknowledged writes so far, "
                f"max loss {report.max_lost_seconds:.3f}s")
    return report
