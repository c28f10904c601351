#!/usr/bin/env python3
"""Range reads over collections still in the write-back tier's active layer (issue 15): LRANGE,
ZRANGE, HGETALL, SMEMBERS and XRANGE of 100 entries, Strata side by side with Redis (AOF
everysec), and optionally a second Strata build for an interleaved A/B.

    bench/walks.py --strata-a OLD_BINARY --strata-b NEW_BINARY --rounds 3
    bench/walks.py --rows lrange,lrange_busy --pipelines 16

Each round refills every collection on every server (DEL, then the writes, pipelined) right
before its row runs, so the entries are in Strata's active layer (a checkpoint moves them to
RocksDB after at most 60 s; a row takes a few seconds), then runs `redis-benchmark -c 50` on it.
Figures per row: ops/s and server CPU µs per op (utime + stime of the server process over the
run, /proc/<pid>/stat), medians over the rounds, and each Strata's ratios to Redis in the same
rounds. The targets run in a rotating order from round to round.

`lrange_busy` is LRANGE while one more connection LPUSHes to another list as fast as it can
(`redis-benchmark -c 1 -P 1`): the layer changes between a walk's steps. `zrange10` (not in the
default rows) is bench.py's zrange row: ZRANGE 0 9 WITHSCORES of 100,000 members. Its CPU per op is the
server's CPU over the LRANGE ops, the writer's work included (its ops are printed too).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from procstat import TICKS, cpu_ticks, free_port
VALUE = "v" * 128


def log(msg):
    print(f"[walks {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Target:
    def __init__(self, name, argv, tmp):
        self.name = name
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"walks-{name}-", dir=tmp)
        argv = argv + ["--port", str(self.port), "--dir", self.dir]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if self.cli("PING").strip() == "PONG":
                return
            time.sleep(0.1)
        raise SystemExit(f"{name} did not start")

    def cli(self, *args, stdin=None):
        r = subprocess.run(["redis-cli", "-p", str(self.port), *args], input=stdin,
                           capture_output=True, text=True)
        return r.stdout

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        subprocess.run(["rm", "-rf", self.dir])


def fill_lines(row):
    """The commands that (re)fill a row's collection, one a line for redis-cli's pipe."""
    if row in ("lrange", "lrange_busy"):
        return ["DEL mylist"] + [f"RPUSH mylist {VALUE}{i}" for i in range(600)]
    if row == "zrange":
        return ["DEL myzset"] + [f"ZADD myzset {i} member:{i:06}" for i in range(600)]
    if row == "zrange10":
        # bench.py's zrange row: 100,000 members over 1,000 scores, the first 10 read.
        return ["DEL bigzset"] + [f"ZADD bigzset {i % 1000} element:{i:012}" for i in range(100000)]
    if row == "hgetall":
        return ["DEL myhash"] + [f"HSET myhash field:{i:06} {VALUE}" for i in range(100)]
    if row == "smembers":
        return ["DEL myset"] + [f"SADD myset member:{i:06}" for i in range(100)]
    if row == "xrange":
        return ["DEL mystream"] + [f"XADD mystream {i + 1}-0 f {VALUE}" for i in range(600)]
    raise SystemExit(f"unknown row {row}")


COMMANDS = {
    "lrange": ["LRANGE", "mylist", "0", "99"],
    "lrange_busy": ["LRANGE", "mylist", "0", "99"],
    "zrange": ["ZRANGE", "myzset", "0", "99", "WITHSCORES"],
    "zrange10": ["ZRANGE", "bigzset", "0", "9", "WITHSCORES"],
    "hgetall": ["HGETALL", "myhash"],
    "smembers": ["SMEMBERS", "myset"],
    "xrange": ["XRANGE", "mystream", "-", "+", "COUNT", "100"],
}


def run_row(t, row, pipeline, n):
    lines = fill_lines(row)
    if len(lines) > 1000:
        t.cli("--pipe", stdin="\r\n".join(lines) + "\r\n")
    else:
        t.cli(stdin="\n".join(lines) + "\n")
    writer = None
    if row == "lrange_busy":
        writer = subprocess.Popen(["redis-benchmark", "-p", str(t.port), "-c", "1", "-P", "1",
                                   "-n", "100000000", "-q", "LPUSH", "otherlist", VALUE],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    c0 = cpu_ticks(t.proc.pid)
    w0 = int(t.cli("LLEN", "otherlist").strip() or 0)
    t0 = time.time()
    out = subprocess.run(["redis-benchmark", "-p", str(t.port), "-c", "50", "-n", str(n),
                          "-P", str(pipeline), "-q", *COMMANDS[row]],
                         capture_output=True, text=True).stdout
    elapsed = time.time() - t0
    c1 = cpu_ticks(t.proc.pid)
    w1 = int(t.cli("LLEN", "otherlist").strip() or 0)
    if writer:
        writer.terminate()
        writer.wait()
        t.cli("DEL", "otherlist")
    cpu_us = (c1 - c0) / TICKS * 1e6 / n
    return {"ops": n / elapsed, "cpu_us": cpu_us, "writes": w1 - w0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata-a", required=True, help="Strata binary (the 'a' build)")
    ap.add_argument("--strata-b", help="a second Strata binary, for an A/B")
    ap.add_argument("--rows", default="lrange,zrange,hgetall,smembers,xrange,lrange_busy")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=20000, help="-n at P=1 (x5 at P>1)")
    ap.add_argument("--tmp-root", default=None)
    args = ap.parse_args()

    targets = [Target("redis-aof", ["redis-server", "--save", "", "--appendonly", "yes",
                                    "--appendfsync", "everysec", "--bind", "127.0.0.1"],
                      args.tmp_root)]
    targets.append(Target("strata-a", [args.strata_a, "--appendfsync", "everysec",
                                       "--bind", "127.0.0.1"], args.tmp_root))
    if args.strata_b:
        targets.append(Target("strata-b", [args.strata_b, "--appendfsync", "everysec",
                                           "--bind", "127.0.0.1"], args.tmp_root))
    try:
        results = {}
        load0 = os.getloadavg()
        for rnd in range(args.rounds):
            for row in args.rows.split(","):
                for p in [int(x) for x in args.pipelines.split(",")]:
                    n = args.requests * (5 if p > 1 else 1)
                    order = targets[rnd % len(targets):] + targets[:rnd % len(targets)]
                    for t in order:
                        r = run_row(t, row, p, n)
                        results.setdefault((row, p, t.name), []).append(r)
                        extra = f"  ({r['writes']} LPUSH alongside)" if row == "lrange_busy" else ""
                        log(f"round {rnd + 1} {row} P={p} {t.name}: {r['ops']:,.0f} ops/s "
                            f"{r['cpu_us']:.1f} us/op{extra}")
        load1 = os.getloadavg()
        print(f"\n# medians of {args.rounds} rounds; load {load0[0]:.1f} -> {load1[0]:.1f}; "
              f"-c 50; CPU = server µs per op")
        print(f"{'row':12} {'P':>3} {'target':10} {'ops/s':>9} {'CPU us/op':>10} "
              f"{'ops/redis':>10} {'CPU/redis':>10}  CPU per round")
        for row in args.rows.split(","):
            for p in [int(x) for x in args.pipelines.split(",")]:
                base = results[(row, p, "redis-aof")]
                for t in targets:
                    rs = results[(row, p, t.name)]
                    ops = statistics.median(r["ops"] for r in rs)
                    cpu = statistics.median(r["cpu_us"] for r in rs)
                    # Ratios within each round, then their median.
                    ro = statistics.median(r["ops"] / b["ops"] for r, b in zip(rs, base))
                    rc = statistics.median(r["cpu_us"] / b["cpu_us"] for r, b in zip(rs, base))
                    rounds = " / ".join(f"{r['cpu_us']:.1f}" for r in rs)
                    print(f"{row:12} {p:>3} {t.name:10} {ops:>9,.0f} {cpu:>10.1f} "
                          f"{ro:>9.2f}x {rc:>9.2f}x  {rounds}")
    finally:
        for t in targets:
            t.stop()


if __name__ == "__main__":
    main()
