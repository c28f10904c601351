#!/usr/bin/env python3
"""Geo benchmark, Strata beside Redis (issue 12): GEOSEARCH of 1 km among N points, and GEOADD
at pipeline depths 1 and 16.

Starts a redis-server with `--appendonly yes --appendfsync everysec` and a strata-server with
`--appendfsync everysec`, each on a free loopback port in its own temp dir; loads the same N
points (default 1,000,000, uniform over a 1°x1° square around Palermo, so a 1 km circle holds
about 300 of them) into both with pipelined GEOADDs (`redis-cli --pipe`); then runs, on each in
turn,

    redis-benchmark -c 50 -n 20000 GEOSEARCH geo FROMLONLAT 13.36 38.11 BYRADIUS 1 km
    redis-benchmark -c 50 -n 200000 -P {1,16} -r 1000000 GEOADD geoadd 13.__rand_int__ 38.__rand_int__ m:__rand_int__

and the range reads of a sorted set (issue 12; not in the default rows), on the same 1 M-member
set and on `lex`, 200,000 members of score 0 loaded only for the `zrangebylex` row:

    redis-benchmark -c 50 -n 40000 ZRANGEBYSCORE geo 3479088262404569 +inf LIMIT 0 100
    redis-benchmark -c 50 -n 40000 ZRANGE geo 0 99
    redis-benchmark -c 50 -n 40000 ZRANGEBYLEX lex [m0100000 + LIMIT 0 100

and prints requests per second, the server's CPU time per request (utime + stime of
/proc/<pid>/stat over the run) and the Strata/Redis ratios of each. With `--repeat N` the rows
run N rounds, interleaved (each round runs every row on both servers), and the medians are
printed. `--strata-b PATH` adds a second Strata build, loaded alike and run beside the first in
every round (interleaved A/B; the servers' order is reversed every other round); `--rows` picks
rows (geosearch, geoadd1, geoadd16, zrangebyscore, zrange100, zrangebylex). `--settle S` waits S
seconds after loading, so a Strata's write-back tier has checkpointed the set to RocksDB (every
60 s) before the first round.

Usage: bench/geo.py [--points N] [--repeat N] [--strata PATH] [--strata-b PATH] [--rows ...]
       (default binary: $CARGO_TARGET_DIR or ./target, release)
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port: int, timeout: float = 60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True, text=True)
        if r.stdout.strip() == "PONG":
            return
        time.sleep(0.2)
    raise RuntimeError(f"server on port {port} did not start")


def resp(*args: str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def load(port: int, points: int, seed: int = 12):
    """Pipelined GEOADDs of `points` points, 500 per command."""
    rng = random.Random(seed)
    chunks = []
    for start in range(0, points, 500):
        args = ["GEOADD", "geo"]
        for i in range(start, min(points, start + 500)):
            args += [f"{rng.uniform(12.86, 13.86):.6f}", f"{rng.uniform(37.61, 38.61):.6f}",
                     f"p{i}"]
        chunks.append(resp(*args))
    t = time.time()
    r = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=b"".join(chunks),
                       capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode() + r.stdout.decode())
    return time.time() - t


def load_lex(port: int, members: int = 200_000):
    """Pipelined ZADDs of `members` members of score 0 into `lex`, 500 per command."""
    chunks = []
    for start in range(0, members, 500):
        args = ["ZADD", "lex"]
        for i in range(start, min(members, start + 500)):
            args += ["0", f"m{i:07d}"]
        chunks.append(resp(*args))
    r = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=b"".join(chunks),
                       capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode() + r.stdout.decode())


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(port: int, pid: int, args: list[str]) -> tuple[float, float]:
    """Requests per second and the server's CPU microseconds per request."""
    n = int(args[args.index("-n") + 1])
    cpu0 = cpu_seconds(pid)
    r = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-q", *args],
                       capture_output=True, text=True)
    cpu = (cpu_seconds(pid) - cpu0) / n * 1e6
    m = re.findall(r"([\d.]+) requests per second", r.stdout)
    if not m:
        raise RuntimeError(r.stdout + r.stderr)
    return float(m[-1]), cpu


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--tmp-root", default=None)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..",
                                                             "target"))
    p.add_argument("--strata", default=os.path.join(target, "release", "strata-server"))
    p.add_argument("--strata-b", default=None,
                   help="a second strata-server build run beside the first in every round "
                        "(interleaved A/B; reported as strata-b)")
    p.add_argument("--rows", default="geosearch,geoadd1,geoadd16",
                   help="rows to run: geosearch, geoadd1, geoadd16, zrangebyscore, zrange100, "
                        "zrangebylex")
    p.add_argument("--settle", type=float, default=2.0,
                   help="seconds to wait after loading before the first round")
    opts = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="geo-bench-", dir=opts.tmp_root)
    servers = {}
    procs = []
    try:
        names = ["redis-aof", "strata"] + (["strata-b"] if opts.strata_b else [])
        for name in names:
            port, d = free_port(), os.path.join(tmp, name)
            os.makedirs(d)
            if name.startswith("strata"):
                binary = opts.strata_b if name == "strata-b" else opts.strata
                cmd = [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", d,
                       "--appendfsync", "everysec"]
            else:
                cmd = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", d,
                       "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            wait_ready(port)
            servers[name] = (port, procs[-1].pid)
        for name, (port, _) in servers.items():
            secs = load(port, opts.points)
            n = subprocess.run(["redis-cli", "-p", str(port), "ZCARD", "geo"], capture_output=True,
                               text=True).stdout.strip()
            print(f"{name}: loaded {n} points in {secs:.1f} s", flush=True)
            if "zrangebylex" in opts.rows:
                load_lex(port)
        time.sleep(opts.settle)
        rows = [
            ("GEOSEARCH 1 km", ["-c", "50", "-n", "20000", "GEOSEARCH", "geo", "FROMLONLAT",
                                "13.36", "38.11", "BYRADIUS", "1", "km"]),
        ] if "geosearch" in opts.rows else []
        ranges = {
            "zrangebyscore": ("ZRANGEBYSCORE 100", ["ZRANGEBYSCORE", "geo", "3479088262404569",
                                                    "+inf", "LIMIT", "0", "100"]),
            "zrange100": ("ZRANGE 0 99", ["ZRANGE", "geo", "0", "99"]),
            "zrangebylex": ("ZRANGEBYLEX 100", ["ZRANGEBYLEX", "lex", "[m0100000", "+", "LIMIT",
                                                "0", "100"]),
        }
        for row, (label, command) in ranges.items():
            if row in opts.rows.split(","):
                rows.append((label, ["-c", "50", "-n", "40000", *command]))
        for depth in (1, 16):
            if f"geoadd{depth}" not in opts.rows:
                continue
            rows.append((f"GEOADD P{depth}", ["-c", "50", "-n", "200000", "-P", str(depth), "-r",
                                              "1000000", "GEOADD", "geoadd", "13.__rand_int__",
                                              "38.__rand_int__", "m:__rand_int__"]))
        runs = {(label, name): [] for label, _ in rows for name in servers}
        for r in range(opts.repeat):
            for label, args in rows:
                # The order of the servers is reversed every other round.
                order = list(servers.items())
                for name, (port, pid) in (order if r % 2 == 0 else order[::-1]):
                    runs[(label, name)].append(bench(port, pid, args))
        print(f"medians of {opts.repeat}; load {os.getloadavg()[0]:.1f}")
        print(f"{'workload':<16} {'redis-aof rps':>14} {'strata rps':>12} {'ratio':>7} "
              f"{'CPU us/op redis':>16} {'strata':>7} {'ratio':>6}")
        for label, _ in rows:
            for name in names[1:]:
                (rr, rc), (sr, sc) = ([statistics.median(x[i] for x in runs[(label, n)])
                                       for i in (0, 1)] for n in ("redis-aof", name))
                cpus = " ".join(f"{x[1]:.1f}" for x in runs[(label, name)])
                print(f"{label:<16} {rr:>14.0f} {sr:>12.0f} {sr / rr:>7.2f} {rc:>16.2f} "
                      f"{sc:>7.2f} {sc / rc:>6.2f}  {name} [CPU {cpus}]", flush=True)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
