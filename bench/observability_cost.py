#!/usr/bin/env python3
"""The cost of ACL checks and of MONITOR, in server CPU time per operation (python3 stdlib only).

For Strata and Redis 7.0 side by side (each on a free loopback port, its own temp dir; Redis
with AOF everysec, as Strata always logs), runs `redis-benchmark -c 50 -n N -d 128 -t set,get
-P P` for P in 1 and 16 under three set-ups, interleaved so machine noise hits all of them:

  default   the default user, no password
  acl       a user with a few rules (`~bench:* ~key:* &* +@all -@dangerous -flushall`), via --user
  monitor   the default user, with one `redis-cli monitor` watcher attached (output discarded)

and prints ops/s and the server's CPU µs per operation (utime+stime from /proc/<pid>/stat),
with each set-up's ratio to `default` of the same server and depth. Usage:

  bench/observability_cost.py [--strata PATH] [-n 200000] [--rounds 2]
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

CLK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True).stdout


def start(kind, binary):
    port, d = free_port(), tempfile.mkdtemp(prefix=f"obs-{kind}-")
    if kind == "redis":
        argv = ["redis-server", "--port", str(port), "--dir", d, "--save", "", "--appendonly", "yes",
                "--appendfsync", "everysec"]
    else:
        argv = [binary, "--port", str(port), "--dir", d, "--appendfsync", "everysec"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            if cli(port, "PING").strip() == "PONG":
                break
        except subprocess.CalledProcessError:
            pass
        time.sleep(0.05)
    cli(port, "ACL", "SETUSER", "bench", "on", ">pw", "~bench:*", "~key:*", "&*", "+@all", "-@dangerous",
        "-flushall")
    return p, port, d


def run(proc, port, setup, depth, n):
    extra = ["--user", "bench", "-a", "pw"] if setup == "acl" else []
    watcher = None
    if setup == "monitor":
        watcher = subprocess.Popen(["redis-cli", "-p", str(port), "monitor"], stdout=subprocess.DEVNULL)
        time.sleep(0.3)
    before = cpu_seconds(proc.pid)
    t0 = time.monotonic()
    argv = ["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(n), "-d", "128",
            "-t", "set,get", "-P", str(depth), "-q", *extra]
    for attempt in range(3):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode == 0:
            break
        print(f"redis-benchmark failed ({done.returncode}): {done.stderr.strip()[-200:]}; again",
              file=sys.stderr)
    out = done.stdout
    wall = time.monotonic() - t0
    cpu = cpu_seconds(proc.pid) - before
    if watcher:
        watcher.terminate()
        watcher.wait()
    rps = [float(line.split(":")[1].split()[0]) for line in out.replace("\r", "\n").splitlines()
           if "requests per second" in line]
    return {"rps": rps, "cpu_us_per_op": cpu * 1e6 / (2 * n), "wall": wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"),
                                                     "release", "strata-server"))
    ap.add_argument("-n", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    servers = {k: start(k, args.strata) for k in ("strata", "redis")}
    results = {}
    try:
        for _ in range(args.rounds):
            for depth in (1, 16):
                for setup in ("default", "acl", "monitor"):
                    for kind, (p, port, _) in servers.items():
                        r = run(p, port, setup, depth, args.n)
                        results.setdefault((kind, depth, setup), []).append(r)
    finally:
        for p, _, d in servers.values():
            p.terminate()
            p.wait()
            shutil.rmtree(d, ignore_errors=True)
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average at the end)")
    print(f"{'server':7} {'P':>3} {'setup':8} {'SET rps':>10} {'GET rps':>10} {'CPU us/op':>10} {'ratio':>6}")
    for kind in servers:
        for depth in (1, 16):
            base = min((r["cpu_us_per_op"] for r in results[(kind, depth, "default")]
                        if len(r["rps"]) == 2), default=float("nan"))
            for setup in ("default", "acl", "monitor"):
                rs = [r for r in results[(kind, depth, setup)] if len(r["rps"]) == 2]
                if not rs:
                    print(f"{kind:7} {depth:>3} {setup:8} (every run failed)")
                    continue
                best = min(r["cpu_us_per_op"] for r in rs)
                set_rps = max(r["rps"][0] for r in rs)
                get_rps = max(r["rps"][1] for r in rs)
                print(f"{kind:7} {depth:>3} {setup:8} {set_rps:>10.0f} {get_rps:>10.0f} {best:>10.2f} "
                      f"{best / base:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
