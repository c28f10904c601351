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

and prints requests per second and the Strata/Redis ratio of each.

Usage: bench/geo.py [--points N] [--strata PATH]   (default: $CARGO_TARGET_DIR or ./target)
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import socket
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


def bench(port: int, args: list[str]) -> float:
    r = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-q", *args],
                       capture_output=True, text=True)
    m = re.findall(r"([\d.]+) requests per second", r.stdout)
    if not m:
        raise RuntimeError(r.stdout + r.stderr)
    return float(m[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=1_000_000)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..",
                                                             "target"))
    p.add_argument("--strata", default=os.path.join(target, "release", "strata-server"))
    opts = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="geo-bench-")
    servers = {}
    procs = []
    try:
        for name in ["redis-aof", "strata"]:
            port, d = free_port(), os.path.join(tmp, name)
            os.makedirs(d)
            if name == "strata":
                cmd = [opts.strata, "--bind", "127.0.0.1", "--port", str(port), "--dir", d,
                       "--appendfsync", "everysec"]
            else:
                cmd = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", d,
                       "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            wait_ready(port)
            servers[name] = port
        for name, port in servers.items():
            secs = load(port, opts.points)
            n = subprocess.run(["redis-cli", "-p", str(port), "ZCARD", "geo"], capture_output=True,
                               text=True).stdout.strip()
            print(f"{name}: loaded {n} points in {secs:.1f} s", flush=True)
        time.sleep(2)
        rows = [
            ("GEOSEARCH 1 km", ["-c", "50", "-n", "20000", "GEOSEARCH", "geo", "FROMLONLAT",
                                "13.36", "38.11", "BYRADIUS", "1", "km"]),
        ]
        for depth in (1, 16):
            rows.append((f"GEOADD P{depth}", ["-c", "50", "-n", "200000", "-P", str(depth), "-r",
                                              "1000000", "GEOADD", "geoadd", "13.__rand_int__",
                                              "38.__rand_int__", "m:__rand_int__"]))
        print(f"{'workload':<16} {'redis-aof rps':>14} {'strata rps':>12} {'ratio':>7}")
        for label, args in rows:
            rps = {name: bench(port, args) for name, port in servers.items()}
            print(f"{label:<16} {rps['redis-aof']:>14.0f} {rps['strata']:>12.0f} "
                  f"{rps['strata'] / rps['redis-aof']:>7.2f}", flush=True)
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
