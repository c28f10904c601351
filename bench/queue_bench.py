#!/usr/bin/env python3
"""Queue workload: producers LPUSH and consumers LPOP / BRPOP on a few hot lists, for minutes,
against Strata and Redis (AOF) one after the other, with throughput and latency per interval
(a minute by default), so that a server that slows down as a queue's tombstones pile up shows it.

python3 stdlib only. The load comes from a few worker processes (multiprocessing), each driving
several connections over raw sockets with pipelined batches; see bench/README.md, "Queue workload".
Servers are started and stopped as in bench.py (free loopback port, own temp dir, stopped by PID).
"""

import argparse
import datetime
import json
import math
import multiprocessing
import os
import platform
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench as B  # noqa: E402  (the harness next to this file: targets, RESP, /proc helpers)

# Latency histogram: bucket b holds latencies in [exp(b/K), exp((b+1)/K)) microseconds, i.e.
# about 1% wide; percentiles report the bucket's upper bound.
HIST_K = 1 / math.log(1.01)
ROLES = ("push", "pop", "bpop")


class ServerError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# RESP reply scanning (just enough to count replies and tell a hit from an empty pop).
# --------------------------------------------------------------------------------------------
HIT = "hit"


def parse_one(buf, pos):
    """(next position, value) of the reply at buf[pos:], or None if it is incomplete. Values:
    int for ':', HIT for a non-null bulk or array, None for a null bulk or array. An error reply
    raises ServerError."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        return None
    t = buf[pos]
    if t == 58:  # ':'
        return end + 2, int(buf[pos + 1:end])
    if t == 36:  # '$'
        n = int(buf[pos + 1:end])
        if n < 0:
            return end + 2, None
        stop = end + 4 + n
        return (stop, HIT) if len(buf) >= stop else None
    if t == 42:  # '*'
        n = int(buf[pos + 1:end])
        if n < 0:
            return end + 2, None
        p = end + 2
        for _ in range(n):
            r = parse_one(buf, p)
            if r is None:
                return None
            p = r[0]
        return p, HIT
    if t == 95:  # '_' (RESP3 null)
        return end + 2, None
    if t == 45:  # '-'
        raise ServerError(buf[pos + 1:end].decode(errors="replace"))
    raise ServerError(f"unexpected reply {buf[pos:pos + 40]!r}")


# --------------------------------------------------------------------------------------------
# Worker process: drives its share of the connections until told to stop.
# --------------------------------------------------------------------------------------------
class Conn:
    __slots__ = ("sock", "role", "cmds", "buf", "pos", "want", "got", "sent_at", "paused_until",
                 "max_reply", "empty")

    def __init__(self, port, role, cmds):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.role, self.cmds = role, cmds
        self.buf, self.pos, self.want, self.got = b"", 0, 0, 0
        self.sent_at, self.paused_until, self.max_reply, self.empty = 0.0, 0.0, 0, 0


def build_batches(role, lists, pipeline, value, pop_cmd, brpop_timeout, offset):
    """The pipelined batch of a connection, as bytes: its commands rotate over the hot lists."""
    cmds = []
    for i in range(pipeline):
        key = lists[(offset + i) % len(lists)]
        if role == "push":
            cmds.append(B.encode_command(b"LPUSH", key, value))
        elif role == "pop":
            cmds.append(B.encode_command(pop_cmd.upper(), key))
        else:
            cmds.append(B.encode_command(b"BRPOP", key, brpop_timeout))
    return b"".join(cmds)


def worker(spec, conns_spec, t0, t_end, stop, results):
    """Runs in a child process. conns_spec: [(role, offset)]. Sends back, through `results`,
    {"intervals": {idx: {role: [ops, empty, {bucket: count}]}}, "error": str or None}."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    value = b"v" * spec["data_size"]
    stats = {}
    error = None
    sel = selectors.DefaultSelector()
    conns = []
    try:
        for role, offset in conns_spec:
            c = Conn(spec["port"], role, build_batches(role, spec["lists"], spec["pipeline"], value,
                                                       spec["pop_cmd"], spec["brpop_timeout"],
                                                       offset))
            conns.append(c)
            sel.register(c.sock, selectors.EVENT_READ, c)
        pipeline, interval = spec["pipeline"], spec["interval"]
        max_backlog = spec["max_backlog"]
        while time.monotonic() < t0:
            time.sleep(0.001)
        stopping_since = None
        while True:
            now = time.monotonic()
            if stopping_since is None and (now >= t_end or stop.is_set()):
                stopping_since = now
            busy = False
            for c in conns:
                if c.want:
                    busy = True
                elif stopping_since is None and now >= c.paused_until:
                    c.sock.sendall(c.cmds)
                    c.sent_at, c.want, c.got, c.max_reply, c.empty = now, pipeline, 0, 0, 0
                    busy = True
            if stopping_since is not None and (not busy or now - stopping_since > 10):
                break
            for key, _ in sel.select(timeout=0.002):
                c = key.data
                chunk = c.sock.recv(1 << 18)
                if not chunk:
                    raise ServerError("connection closed by server")
                c.buf = c.buf[c.pos:] + chunk if c.pos else c.buf + chunk
                c.pos = 0
                while c.got < c.want:
                    r = parse_one(c.buf, c.pos)
                    if r is None:
                        break
                    c.pos, v = r
                    c.got += 1
                    if v is None:
                        c.empty += 1
                    elif c.role == "push" and v > c.max_reply:
                        c.max_reply = v
                if c.got < c.want:
                    continue
                done = time.monotonic()
                c.want = 0
                if done < t_end:
                    idx = int((done - t0) / interval)
                    per = stats.setdefault(idx, {})
                    s = per.get(c.role)
                    if s is None:
                        s = per[c.role] = [0, 0, {}]
                    s[0] += pipeline
                    s[1] += c.empty
                    us = max(1.0, (done - c.sent_at) * 1e6)
                    b = int(math.log(us) * HIST_K)
                    s[2][b] = s[2].get(b, 0) + pipeline  # every command waited for its batch
                if c.role == "push" and c.max_reply > max_backlog:
                    c.paused_until = done + 0.002  # back-pressure: let the consumers catch up
    except (OSError, ServerError, ValueError) as e:
        error = f"{type(e).__name__}: {e}"
    finally:
        for c in conns:
            try:
                c.sock.close()
            except OSError:
                pass
    results.put({"intervals": stats, "error": error})


# --------------------------------------------------------------------------------------------
# Figures.
# --------------------------------------------------------------------------------------------
def merge_hist(dst, src):
    for b, n in src.items():
        dst[b] = dst.get(b, 0) + n


def percentile_ms(hist, q):
    total = sum(hist.values())
    if not total:
        return None
    need = max(1, math.ceil(q * total / 100.0 - 1e-9))  # rank of the q-th percentile
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= need:
            return math.exp((b + 1) / HIST_K) / 1000.0
    return math.exp((max(hist) + 1) / HIST_K) / 1000.0


def dir_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def backlog(port, lists):
    try:
        c = B.RespConn(port, timeout=5.0)
    except OSError:
        return None
    try:
        total = 0
        for k in lists:
            n = c.call("LLEN", k)
            if not isinstance(n, int):
                return None
            total += n
        return total
    except (OSError, B.BenchError, ValueError):
        return None
    finally:
        c.close()


def prefill(port, lists, per_list, data_size, deadline):
    if per_list <= 0:
        return 0
    value = b"v" * data_size
    cmds = (B.encode_command(b"RPUSH", k, *([value] * min(100, per_list - i)))
            for k in lists for i in range(0, per_list, 100))
    B._pipelined_fill(port, cmds, deadline, batch=50)
    return per_list * len(lists)


def run_target(cfg, target):
    """Starts `target`, runs the queue load for cfg.minutes and returns its record."""
    target.start(cfg.tmp_root, cfg.start_timeout)
    rec = {"target": target.name, "argv": target.argv, "info": target.info}
    procs = []
    ctx = multiprocessing.get_context("fork")
    stop, results = ctx.Event(), ctx.Queue()
    try:
        t_fill = time.monotonic()
        n = prefill(target.port, cfg.lists, cfg.prefill, cfg.data_size, t_fill + 300)
        rec["prefill"] = {"items": n, "seconds": round(time.monotonic() - t_fill, 3)}
        time.sleep(cfg.settle)
        spec = {"port": target.port, "lists": cfg.lists, "pipeline": cfg.pipeline,
                "data_size": cfg.data_size, "pop_cmd": cfg.pop, "brpop_timeout": cfg.brpop_timeout,
                "interval": cfg.interval, "max_backlog": cfg.max_backlog}
        roles = ["push"] * cfg.producers + ["bpop"] * cfg.blocking + ["pop"] * (cfg.consumers - cfg.blocking)
        shares = [[] for _ in range(cfg.procs)]
        for i, role in enumerate(roles):
            shares[i % cfg.procs].append((role, i))
        duration = cfg.minutes * 60.0
        t0 = time.monotonic() + 1.0  # workers connect, then all start at t0
        t_end = t0 + duration
        for share in shares:
            if share:
                p = ctx.Process(target=worker, args=(spec, share, t0, t_end, stop, results),
                                daemon=True)
                p.start()
                procs.append(p)
        pid = target.proc.pid
        samples = []

        def sample(k):
            samples.append({"interval": k, "t": round(time.monotonic() - t0, 3),
                            "server_cpu_s": B.proc_cpu_seconds(pid),
                            "client_cpu_s": sum(B.proc_cpu_seconds(p.pid) or 0 for p in procs),
                            "rss_bytes": B.proc_rss_bytes(pid),
                            "dir_bytes": dir_bytes(os.path.join(target.root, "data")),
                            "backlog": backlog(target.port, cfg.lists)})
        while time.monotonic() < t0:
            time.sleep(0.01)
        sample(0)
        n_int = math.ceil(duration / cfg.interval - 1e-9)
        for k in range(1, n_int + 1):
            until = min(t0 + k * cfg.interval, t_end)
            while time.monotonic() < until:
                if not target.alive() or not any(p.is_alive() for p in procs):
                    break
                time.sleep(min(0.2, max(0.0, until - time.monotonic())))
            if not target.alive():
                rec["error"] = target.dead
                break
            sample(k)
            B.log(f"{target.name}: interval {k}/{n_int} done, backlog {samples[-1]['backlog']}")
            if not any(p.is_alive() for p in procs):
                break
        stop.set()
        parts = []
        for _ in procs:
            try:
                parts.append(results.get(timeout=30))
            except Exception:  # queue.Empty; a worker died without reporting
                parts.append({"intervals": {}, "error": "worker sent no results"})
        errors = [p["error"] for p in parts if p["error"]]
        if errors:
            rec["error"] = "; ".join(sorted(set(errors)))[:500]
        rec["intervals"] = summarize(cfg, parts, samples)
        rec["total"] = summarize_total(cfg, parts, samples)
        return rec
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=15)
            if p.is_alive():
                p.kill()  # by PID; our own child
                p.join(timeout=5)
        target.stop(cfg.keep_tmp)


def _row(cfg, per_role, seconds, s0, s1):
    """One interval's (or the whole run's) figures from merged worker stats and two samples."""
    hist_all = {}
    row = {"seconds": round(seconds, 3)}
    ops = 0
    for role in ROLES:
        n, empty, hist = per_role.get(role, (0, 0, {}))
        ops += n
        merge_hist(hist_all, hist)
        row[f"{role}_ops"] = n
        row[f"{role}_empty"] = empty
        row[f"{role}_p99_ms"] = percentile_ms(hist, 99)
        row[f"{role}_p999_ms"] = percentile_ms(hist, 99.9)
    row["ops"] = ops
    row["ops_per_sec"] = ops / seconds if seconds > 0 else None
    row["items_pushed_per_sec"] = row["push_ops"] / seconds if seconds > 0 else None
    popped = row["pop_ops"] - row["pop_empty"] + row["bpop_ops"] - row["bpop_empty"]
    row["items_popped_per_sec"] = popped / seconds if seconds > 0 else None
    for q, key in ((50, "p50_ms"), (99, "p99_ms"), (99.9, "p999_ms")):
        row[key] = percentile_ms(hist_all, q)
    if s0 and s1:
        if s0["server_cpu_s"] is not None and s1["server_cpu_s"] is not None:
            cpu = s1["server_cpu_s"] - s0["server_cpu_s"]
            row["server_cpu_s"] = round(cpu, 3)
            row["server_cores"] = round(cpu / seconds, 3) if seconds > 0 else None
            row["cpu_s_per_mop"] = round(cpu / (ops / 1e6), 3) if ops else None
        row["client_cores"] = round((s1["client_cpu_s"] - s0["client_cpu_s"]) / seconds, 3) \
            if seconds > 0 else None
        row["backlog_end"] = s1["backlog"]
        row["rss_bytes_end"] = s1["rss_bytes"]
        row["dir_bytes_end"] = s1["dir_bytes"]
    return row


def _merge_parts(parts, keep):
    per_role = {}
    for part in parts:
        for idx, roles in part["intervals"].items():
            if not keep(idx):
                continue
            for role, (n, empty, hist) in roles.items():
                acc = per_role.setdefault(role, [0, 0, {}])
                acc[0] += n
                acc[1] += empty
                merge_hist(acc[2], hist)
    return per_role


def summarize(cfg, parts, samples):
    by_k = {s["interval"]: s for s in samples}
    rows = []
    for k in range(1, len(samples)):
        s0, s1 = by_k.get(k - 1), by_k.get(k)
        seconds = min(cfg.interval, cfg.minutes * 60 - (k - 1) * cfg.interval)
        row = _row(cfg, _merge_parts(parts, lambda i, k=k: i == k - 1), seconds, s0, s1)
        row["interval"] = k
        rows.append(row)
    return rows


def summarize_total(cfg, parts, samples):
    seconds = min(cfg.minutes * 60, (len(samples) - 1) * cfg.interval)
    return _row(cfg, _merge_parts(parts, lambda i: True), seconds,
                samples[0] if samples else None, samples[-1] if len(samples) > 1 else None)


# --------------------------------------------------------------------------------------------
# Output.
# --------------------------------------------------------------------------------------------
COLS = ["target", "interval", "ops/s", "pushed/s", "popped/s", "empty pops", "p50 ms", "p99 ms",
        "p99.9 ms", "push p99.9", "pop p99.9", "bpop p99.9", "CPU s/Mop", "server cores",
        "client cores", "backlog", "RSS MiB", "dir MiB"]


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def interval_cells(target, label, r):
    mib = lambda b: None if b is None else b / 2**20  # noqa: E731
    return [target, label, fmt(r["ops_per_sec"], ",.0f"), fmt(r["items_pushed_per_sec"], ",.0f"),
            fmt(r["items_popped_per_sec"], ",.0f"), str(r["pop_empty"] + r["bpop_empty"]),
            fmt(r["p50_ms"], ".3f"), fmt(r["p99_ms"], ".3f"), fmt(r["p999_ms"], ".3f"),
            fmt(r["push_p999_ms"], ".3f"), fmt(r["pop_p999_ms"], ".3f"),
            fmt(r["bpop_p999_ms"], ".3f"), fmt(r.get("cpu_s_per_mop"), ".2f"),
            fmt(r.get("server_cores"), ".2f"), fmt(r.get("client_cores"), ".2f"),
            fmt(r.get("backlog_end"), ","), fmt(mib(r.get("rss_bytes_end")), ".0f"),
            fmt(mib(r.get("dir_bytes_end")), ".0f")]


def interval_label(cfg, k):
    a, b = (k - 1) * cfg.interval, min(k * cfg.interval, cfg.minutes * 60)
    if cfg.interval == 60:
        return f"min {k}"
    return f"{a:g}-{b:g}s"


def decay(rows, key):
    """last interval / first interval of `key` (None if either is missing)."""
    if len(rows) < 1:
        return None
    a, b = rows[0].get(key), rows[-1].get(key)
    return b / a if a and b is not None else None


def print_report(cfg, records, out):
    rows = []
    for rec in records:
        for r in rec.get("intervals", []):
            rows.append(interval_cells(rec["target"], interval_label(cfg, r["interval"]), r))
        if rec.get("total"):
            rows.append(interval_cells(rec["target"], "whole run", rec["total"]))
    print(f"\n_{settings_line(cfg)}_\n", file=out)
    if cfg.markdown:
        print("| " + " | ".join(COLS) + " |", file=out)
        print("|---|---|" + "--:|" * (len(COLS) - 2), file=out)
        for cells in rows:
            print("| " + " | ".join(cells) + " |", file=out)
    else:
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
                  for i, c in enumerate(COLS)]
        line = lambda cells: "  ".join(  # noqa: E731
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        print(line(COLS), file=out)
        print(line(["-" * w for w in widths]), file=out)
        for cells in rows:
            print(line(cells), file=out)
    print("", file=out)
    for rec in records:
        ivs = rec.get("intervals", [])
        d_ops, d_p999 = decay(ivs, "ops_per_sec"), decay(ivs, "p999_ms")
        print(f"{rec['target']}: last/first interval ops/s {fmt(d_ops, '.2f')}x, "
              f"p99.9 {fmt(d_p999, '.2f')}x" + (f"; ERROR: {rec['error']}" if rec.get("error") else ""),
              file=out)
    totals = {rec["target"]: rec.get("total") or {} for rec in records}
    for name, t in totals.items():
        if not name.startswith("strata"):
            continue
        aof = totals.get(B.baselines(name)[0][0])
        if aof and aof.get("ops_per_sec") and t.get("ops_per_sec"):
            cpu = t["cpu_s_per_mop"] / aof["cpu_s_per_mop"] \
                if t.get("cpu_s_per_mop") is not None and aof.get("cpu_s_per_mop") else None
            print(f"{name} / {B.baselines(name)[0][0]} whole run: ops/s "
                  f"{t['ops_per_sec'] / aof['ops_per_sec']:.2f}x, CPU per op {fmt(cpu, '.2f')}x, "
                  f"p99.9 {fmt(t['p999_ms'], '.2f')} vs {fmt(aof['p999_ms'], '.2f')} ms", file=out)
    print("\nLatency: per command, from sending its pipelined batch to the batch's last reply "
          "(BRPOP includes any wait for an item). 'empty pops' = LPOP nil + BRPOP timeouts.",
          file=out)


def settings_line(cfg):
    return (f"queue: {len(cfg.lists)} lists, {cfg.producers} LPUSH + {cfg.consumers - cfg.blocking} "
            f"{cfg.pop.upper()} + {cfg.blocking} BRPOP connections in {cfg.procs} processes, "
            f"-P {cfg.pipeline}, {cfg.data_size}-byte values, backlog cap {cfg.max_backlog}/list, "
            f"prefill {cfg.prefill}/list, {cfg.minutes:g} min per target, fsync {cfg.fsync}; "
            f"{os.cpu_count()} CPUs, load {cfg.load_before} -> {cfg.load_after}; {cfg.started}")


def self_test():
    """Reply scanner and histogram against hand-made inputs."""
    buf = (b":7\r\n$3\r\nabc\r\n$-1\r\n*2\r\n$1\r\nk\r\n$2\r\nvv\r\n*-1\r\n_\r\n"
           b"$5\r\nab")
    got, pos = [], 0
    while True:
        r = parse_one(buf, pos)
        if r is None:
            break
        pos, v = r
        got.append(v)
    assert got == [7, HIT, None, HIT, None, None], got
    assert buf[pos:] == b"$5\r\nab", buf[pos:]          # incomplete bulk left for the next recv
    assert parse_one(b"*2\r\n$1\r\nk\r\n", 0) is None  # incomplete array
    try:
        parse_one(b"-ERR wrong\r\n", 0)
        raise AssertionError("error reply not raised")
    except ServerError as e:
        assert str(e) == "ERR wrong", e
    hist = {}
    for us, n in ((100, 990), (1000, 9), (10000, 1)):
        b = int(math.log(us) * HIST_K)
        hist[b] = hist.get(b, 0) + n
    assert 0.1 <= percentile_ms(hist, 50) <= 0.102, percentile_ms(hist, 50)
    assert 1.0 <= percentile_ms(hist, 99.9) <= 1.011, percentile_ms(hist, 99.9)
    assert 10.0 <= percentile_ms(hist, 100) <= 10.11, percentile_ms(hist, 100)
    print("self-test OK")


# --------------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/queue_bench.py",
        description="Queue workload (LPUSH producers, LPOP/BRPOP consumers on hot lists) against "
                    "Strata and Redis, one after the other; figures per interval.")
    p.add_argument("--minutes", type=float, default=None, help="per target (default 10)")
    p.add_argument("--interval", type=float, default=None,
                   help="seconds per reported interval (default 60)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 minute per target in 15 s intervals")
    p.add_argument("--targets", default="redis-aof,strata",
                   help="comma list, run one after the other (default: %(default)s; "
                        "also redis-nopersist)")
    p.add_argument("--fsync", default="everysec", choices=B.FSYNC_POLICIES,
                   help="appendfsync of redis-aof and strata (default everysec); always names "
                        "the targets redis-aof-always and strata-always")
    p.add_argument("--lists", type=int, default=4, help="hot lists (default 4)")
    p.add_argument("--producers", type=int, default=8, help="LPUSH connections (default 8)")
    p.add_argument("--consumers", type=int, default=8,
                   help="consumer connections (default 8), --blocking of them BRPOP, the rest "
                        "--pop")
    p.add_argument("--blocking", type=int, default=None,
                   help="BRPOP connections among the consumers (default half)")
    p.add_argument("--pop", default="lpop", choices=["lpop", "rpop"],
                   help="non-blocking pop (default lpop; rpop makes every consumer FIFO)")
    p.add_argument("--brpop-timeout", default="0.1", help="BRPOP timeout, seconds (default 0.1)")
    p.add_argument("--pipeline", "-P", type=int, default=16, help="commands per batch (default 16)")
    p.add_argument("--data-size", "-d", type=int, default=128, help="value bytes (default 128)")
    p.add_argument("--max-backlog", type=int, default=10000,
                   help="a producer pauses 2 ms when LPUSH reports a list longer (default 10000)")
    p.add_argument("--prefill", type=int, default=5000, help="items per list before the run")
    p.add_argument("--procs", type=int, default=2, help="client processes (default 2)")
    p.add_argument("--settle", type=float, default=1.0, help="seconds after the prefill")
    p.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    p.add_argument("--markdown", action="store_true", help="table as markdown")
    p.add_argument("--start-timeout", type=float, default=30.0)
    p.add_argument("--tmp-root", default=None)
    p.add_argument("--keep-tmp", action="store_true")
    p.add_argument("--strata-bin", default=None,
                   help="default $STRATA_SERVER or ${CARGO_TARGET_DIR:-<repo>/target}/release/"
                        "strata-server")
    p.add_argument("--redis-server", default=os.environ.get("REDIS_SERVER", "redis-server"))
    p.add_argument("--strata-cmd", default=None, help=argparse.SUPPRESS)  # as in bench.py
    p.add_argument("--no-build", action="store_true", help="(run.sh) don't cargo build first")
    p.add_argument("--self-test", action="store_true", help="test the reply scanner and exit")
    a = p.parse_args(argv)
    if a.quick:
        a.minutes = a.minutes or 1.0
        a.interval = a.interval or 15.0
    a.minutes = a.minutes or 10.0
    a.interval = a.interval or 60.0
    if a.minutes <= 0 or a.interval <= 0:
        p.error("--minutes and --interval must be positive")
    if a.blocking is None:
        a.blocking = a.consumers // 2
    if not 0 <= a.blocking <= a.consumers or a.producers < 1 or a.consumers < 1 or a.lists < 1:
        p.error("need >= 1 producer, >= 1 consumer, >= 1 list and 0 <= --blocking <= --consumers")
    a.procs = max(1, min(a.procs, a.producers + a.consumers))
    a.lists = [f"queue:{{q}}:{i}" for i in range(a.lists)]
    bases = [t.strip() for t in a.targets.split(",") if t.strip()]
    if not bases or any(t not in B.TARGET_ORDER for t in bases):
        p.error(f"--targets: known {', '.join(B.TARGET_ORDER)}")
    a.targets = [B.target_name(t, a.fsync) for t in bases]
    a.strata_bin = a.strata_bin or B.default_strata_bin()
    a.started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return a


def main(argv):
    cfg = parse_args(argv)
    if cfg.self_test:
        self_test()
        return 0
    if not shutil.which(cfg.redis_server) and any(t.startswith("redis") for t in cfg.targets):
        B.log(f"ERROR: {cfg.redis_server} not found on PATH")
        return 2
    cfg.fsync = [cfg.fsync]  # make_targets takes a list
    all_targets = B.make_targets(cfg)
    cfg.fsync = cfg.fsync[0]
    if any(t.startswith("strata") for t in cfg.targets) and not \
            (cfg.strata_cmd or os.environ.get("STRATA_CMD")):
        if not (os.path.isfile(cfg.strata_bin) and os.access(cfg.strata_bin, os.X_OK)):
            B.log(f"ERROR: Strata server binary not found: {cfg.strata_bin} (set STRATA_SERVER)")
            return 2
    signal.signal(signal.SIGTERM, B._raise_interrupt)
    cfg.load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    records, rc = [], 0
    try:
        for name in cfg.targets:
            B.log(f"{name}: queue run, {cfg.minutes:g} min")
            rec = run_target(cfg, all_targets[name])
            records.append(rec)
            if rec.get("error"):
                B.log(f"{name}: ERROR {rec['error']}")
                rc = 1
    except B.BenchError as e:
        B.log(f"ERROR: {e}")
        rc = 2
    except (KeyboardInterrupt, B.Interrupted) as e:
        B.log(f"interrupted ({e or 'SIGINT'}); servers stopped")
        rc = 130
    cfg.load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if records:
        print_report(cfg, records, sys.stdout)
    if cfg.json:
        doc = {"started": cfg.started,
               "host": {"hostname": platform.node(), "cpus": os.cpu_count(),
                        "platform": platform.platform(), "loadavg_before": cfg.load_before,
                        "loadavg_after": cfg.load_after},
               "settings": {k: getattr(cfg, k) for k in (
                   "minutes", "interval", "fsync", "lists", "producers", "consumers", "blocking",
                   "pop", "brpop_timeout", "pipeline", "data_size", "max_backlog", "prefill",
                   "procs")},
               "results": records}
        with open(cfg.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        B.log(f"wrote {cfg.json}")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
