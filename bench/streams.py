#!/usr/bin/env python3
"""Stream figures of issue 13, Strata side by side with Redis in one run: XADD at -P 1 and -P 16,
XREADGROUP + XACK consumer throughput, and XRANGE of 100 entries from a big stream.

    bench/streams.py                      # 3 rounds, a 10 M-entry stream for XRANGE
    bench/streams.py --big 1000000 --rounds 1 --requests 50000   # a quick look

Two servers, each on a free port with its own temp dir: `redis-aof` (redis-server --appendonly
yes --appendfsync everysec) and `strata` (strata-server --appendfsync everysec). Every row runs
on both in turn, round after round, and the table gives medians over the rounds of:

- ops/s (the XRANGE and XADD rows from redis-benchmark, 50 connections; the consumer row from
  one client connection that pipelines each XACK with the next XREADGROUP ... COUNT 100, counted
  in entries consumed and acknowledged per second),
- server CPU µs per op: utime + stime of the server process (all threads, /proc/<pid>/stat)
  and cutime + cstime of its children it reaped (Redis's AOF rewrite children) over the run,
  divided by the ops. On a shared, noisy machine this is the steadier figure;
- each as a ratio strata / redis-aof (ops/s > 1: Strata faster; CPU < 1: Strata cheaper).

The XRANGE stream (`big`) is filled before the first round with explicit IDs 1-0 ... N-0 over a
pipelined connection; XRANGE starts at a random ID (`XRANGE big __rand_int__ + COUNT 100`,
-r N). A fill that takes longer than --fill-limit seconds on a server stops there: the figures
then say how many entries that stream has (the other server is filled to the same count).
Two more XADD rows users run: `xaddmany` (`XADD s:__rand_int__ * f v`, 100,000 streams) and
`xaddtrim` (`XADD s MAXLEN ~ 1000 * f v`), both at -P 1. `--strata-b BINARY` adds a second Strata
(`strata-b`, that binary) to every row, for interleaved A/B runs of two builds; its ratios are
printed too.

RSS while a large stream is appended: `bench/rss.py --stream` (see bench/README.md).
"""

import argparse
import csv
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

from harness import Server, encode_command  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
PAYLOAD = "x" * 100


def cpu_ticks(pid: int) -> int:
    """The process's CPU ticks, its reaped children's included: Redis's AOF rewrites run in a
    forked child (Strata's checkpoints run on a thread of the server, counted either way)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime


def log(msg: str):
    print(f"[streams {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def benchmark(server: Server, args: list, n: int, pipeline: int, keyspace: int,
              latencies: list | None = None) -> float:
    """redis-benchmark's requests per second for one command line; its p50 and p99 latency
    (ms) are appended to `latencies` when given."""
    cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-c", "50", "-n", str(n),
           "-P", str(pipeline), "-r", str(keyspace), "--csv", "--precision", "3", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    out = done.stdout
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",...
    rows = [r for r in csv.reader(out.splitlines()) if len(r) >= 7 and r[0] != "test"]
    if not rows:
        raise RuntimeError(f"redis-benchmark said: {out[-300:]!r} {done.stderr[-300:]!r}")
    if latencies is not None:
        latencies.append((float(rows[-1][4]), float(rows[-1][6])))
    return float(rows[-1][1])


def fill_big(server: Server, n: int, deadline: float) -> int:
    """XADD big i-0 v <20 bytes> for i in 1..n, pipelined; stops at the deadline. Returns the
    number of entries added. A reader thread counts the replies (an ID is one bulk string: two
    CRLFs) while the batches go on being sent, at most `ahead` batches beyond the last one
    answered, so the server always has the next batch to read."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=120)
    batch, ahead = 10000, 4
    answered = [0, 0, None]  # CRLFs, bulk replies, the error that stopped the fill
    cond = threading.Condition()

    def read_replies():
        tail = b"\n"  # a line starting with "-" is an error reply
        try:
            while True:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    return
                buf = tail + chunk
                if buf.rfind(b"\r\n") < 0:
                    tail = buf
                    continue
                cut = buf.rfind(b"\r\n") + 2
                # A bulk reply is complete at its second CRLF: count CRLFs, a reply per two.
                done, tail = buf[:cut], buf[cut:]
                with cond:
                    answered[0] += done.count(b"\r\n")
                    answered[1] += done.count(b"$")
                    if b"\n-" in done:
                        answered[2] = done[done.index(b"\n-") + 1:][:200]
                    cond.notify_all()
                tail = done[-1:] + tail
        except OSError as e:
            with cond:
                answered[2] = e
                cond.notify_all()

    reader = threading.Thread(target=read_replies, daemon=True)
    reader.start()
    sent = 0
    try:
        while sent < n and time.monotonic() < deadline:
            upto = min(n, sent + batch)
            with cond:
                cond.wait_for(lambda: answered[2] is not None or answered[0] // 2 >= sent - ahead * batch)
                if answered[2] is not None:
                    break
            sock.sendall(b"".join(b"*5\r\n$4\r\nXADD\r\n$3\r\nbig\r\n$%d\r\n%d-0\r\n$1\r\nv\r\n$20\r\n%020d\r\n"
                                  % (len(b"%d-0" % i), i, i) for i in range(sent + 1, upto + 1)))
            sent = upto
        with cond:
            if not cond.wait_for(lambda: answered[2] is not None or answered[0] >= 2 * sent, timeout=600):
                raise RuntimeError("fill of big: replies missing")
        if answered[2] is not None or answered[1] != sent or answered[0] != 2 * sent:
            raise RuntimeError(f"fill of big: {answered[1]} IDs for {sent} XADDs ({answered[2]})")
    finally:
        sock.close()
    return sent


ENTRY_ID = re.compile(rb"\*2\r\n\$\d+\r\n(\d+-\d+)\r\n\*\d+\r\n")
PING = encode_command("PING")


def consume(server: Server, group: str, entries: int) -> int:
    """Reads `entries` entries of `xs` through a new group (COUNT 100 per read), acknowledging
    each batch pipelined with the next read. Returns the entries consumed.

    The client must not be the bottleneck on a loaded machine: each request is followed by a
    PING, so a reply is complete when the bytes end in +PONG, and the entry IDs are picked out
    of the raw reply with a pattern instead of parsing it."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=120)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def until_pong() -> bytes:
        buf = b""
        while not buf.endswith(b"+PONG\r\n"):
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("connection closed")
            buf += chunk
        return buf

    try:
        sock.sendall(encode_command("XGROUP", "CREATE", "xs", group, "0") + PING)
        if not until_pong().startswith(b"+OK"):
            raise RuntimeError("XGROUP CREATE failed")
        read = encode_command("XREADGROUP", "GROUP", group, "c", "COUNT", 100, "STREAMS", "xs", ">") + PING
        sock.sendall(read)
        got, ids = 0, []
        while True:
            buf = until_pong()
            if ids:
                acked = b":%d\r\n" % len(ids)
                if not buf.startswith(acked):
                    raise RuntimeError(f"XACK answered {buf[:40]!r}")
                buf = buf[len(acked):]
            ids = ENTRY_ID.findall(buf)
            got += len(ids)
            if not ids or got >= entries:
                break
            sock.sendall(encode_command("XACK", "xs", group, *ids) + read)
        if ids:
            sock.sendall(encode_command("XACK", "xs", group, *ids) + PING)
            until_pong()
        return got
    finally:
        sock.close()


def measure(server: Server, run) -> tuple[float, float]:
    """(ops/s, server CPU µs per op) of `run()`, which returns the ops it did and the rate
    redis-benchmark measured (None: ops over the wall time of the run)."""
    pid = server.proc.pid
    t0, c0 = time.monotonic(), cpu_ticks(pid)
    ops, rate = run()
    t1, c1 = time.monotonic(), cpu_ticks(pid)
    return rate or ops / (t1 - t0), (c1 - c0) / TICKS * 1e6 / ops


ROWS = ("xadd1", "xadd16", "xaddmany", "xaddtrim", "consume", "xrange")


class BinaryServer(Server):
    """A Strata server run from a given binary (the A/B runs' second build)."""

    def __init__(self, binary: str, directives: dict):
        super().__init__("strata", directives)
        self.binary = os.path.abspath(binary)

    def argv(self) -> list[str]:
        argv = super().argv()
        argv[0] = self.binary
        return argv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=100000, help="-n of the -P 1 rows")
    ap.add_argument("--pipelined-requests", type=int, default=500000, help="-n of the -P 16 row")
    ap.add_argument("--xrange-requests", type=int, default=30000)
    ap.add_argument("--consume", type=int, default=100000, help="entries the consumer row reads per round")
    ap.add_argument("--big", type=int, default=10_000_000, help="entries of the XRANGE stream")
    ap.add_argument("--fill-limit", type=float, default=900.0, help="seconds a server's fill of it may take")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"which rows, of {','.join(ROWS)}")
    ap.add_argument("--dir", help="where the servers' data directories go (default: $TMPDIR)")
    ap.add_argument("--strata-b", help="a second strata-server binary, run as `strata-b` beside `strata`")
    args = ap.parse_args()
    wanted = args.rows.split(",")
    if unknown := [r for r in wanted if r not in ROWS]:
        ap.error(f"unknown rows {unknown}")
    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        tempfile.tempdir = args.dir

    servers = {"redis-aof": Server("redis", {"appendonly": "yes", "appendfsync": "everysec"}),
               "strata": Server("strata", {"appendfsync": "everysec"})}
    if args.strata_b:
        servers["strata-b"] = BinaryServer(args.strata_b, {"appendfsync": "everysec"})
    results: dict = {}
    latencies: dict = {}
    try:
        for s in servers.values():
            s.start()
        # Strata first: if it cannot fill the whole stream in time, the others get as many.
        big = args.big if "xrange" in wanted else 0
        for name in [n for n in ("strata", "strata-b", "redis-aof") if n in servers] if big else ():
            t = time.monotonic()
            big = fill_big(servers[name], big, t + args.fill_limit)
            took = time.monotonic() - t
            log(f"{name}: filled big with {big} entries in {took:.0f}s ({big / took:,.0f} XADD/s)")
        if big < args.big and "xrange" in wanted:
            log(f"big has {big} entries, not {args.big}: the fill took more than {args.fill_limit:.0f}s")
        xadd = ["XADD", "xs", "*", "f", "__rand_int__", "payload", PAYLOAD]
        xrange = ["XRANGE", "big", "__rand_int__", "+", "COUNT", "100"]
        rows = [
            ("xadd1", "XADD P1", lambda s, _, lat: (args.requests, benchmark(s, xadd, args.requests, 1, 1000000))),
            ("xadd16", "XADD P16", lambda s, _, lat: (args.pipelined_requests,
                                                      benchmark(s, xadd, args.pipelined_requests, 16, 1000000))),
            ("xaddmany", "XADD P1, 100,000 streams",
             lambda s, _, lat: (args.requests, benchmark(s, ["XADD", "s:__rand_int__", "*", "f", "v"],
                                                         args.requests, 1, 100000))),
            ("xaddtrim", "XADD P1, MAXLEN ~ 1000",
             lambda s, _, lat: (args.requests, benchmark(s, ["XADD", "s", "MAXLEN", "~", "1000", "*", "f", "v"],
                                                         args.requests, 1, 100000))),
            ("consume", "XREADGROUP+XACK (entries)",
             lambda s, rnd, lat: (consume(s, f"g{rnd}", args.consume), None)),
            ("xrange", f"XRANGE 100 of {big}", lambda s, _, lat: (args.xrange_requests,
                                                                  benchmark(s, xrange, args.xrange_requests, 1,
                                                                            big, lat))),
        ]
        rows = [(row, run) for key, row, run in rows if key in wanted]
        for rnd in range(args.rounds):
            for row, run in rows:
                for name, s in servers.items():
                    lat = latencies.setdefault((row, name), [])
                    ops, cpu = measure(s, lambda: run(s, rnd, lat))
                    results.setdefault((row, name), []).append((ops, cpu))
                    p = f", p50 {lat[-1][0]:.3f} ms, p99 {lat[-1][1]:.3f} ms" if lat else ""
                    log(f"round {rnd + 1} {row} {name}: {ops:,.0f} ops/s, {cpu:.1f} CPU µs/op{p}")
        print(f"\nStreams, medians of {args.rounds} rounds (redis-aof: appendonly yes, appendfsync everysec;"
              f" strata: appendfsync everysec)")
        print(f"{'row':34} {'server':9} {'ops/s':>10} {'ratio':>6} {'CPU µs/op':>10} {'CPU ratio':>9}")
        for row, _ in rows:
            r = results[(row, "redis-aof")]
            ro, rc = statistics.median(x[0] for x in r), statistics.median(x[1] for x in r)
            print(f"{row:34} {'redis-aof':9} {ro:10,.0f} {'':6} {rc:10.1f}")
            for name in servers:
                if name == "redis-aof":
                    continue
                t = results[(row, name)]
                so, sc = statistics.median(x[0] for x in t), statistics.median(x[1] for x in t)
                print(f"{'':34} {name:9} {so:10,.0f} {so / ro:5.2f}x {sc:10.1f} {sc / rc:8.2f}x")
        for row, _ in rows:
            if latencies.get((row, "strata")):
                print(f"{row} latency (ms, 50 clients, medians of {args.rounds}): " + ", ".join(
                    f"{name} p50 {statistics.median(x[0] for x in latencies[(row, name)]):.3f}"
                    f" p99 {statistics.median(x[1] for x in latencies[(row, name)]):.3f}"
                    for name in servers))
    finally:
        for s in servers.values():
            s.cleanup()


if __name__ == "__main__":
    main()
