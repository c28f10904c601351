#!/usr/bin/env python3
"""Interleaved A/B of XADD on fresh servers (issue 13): per-thread CPU µs per XADD (threads
grouped by name: the workers, the write-back tier's checkpointer ...), whole-process CPU, ops/s,
and with --redo the redo log's bytes per XADD (a dirty limit no run reaches, the log's growth
over the run).

    bench/xadd_threads.py --rounds 3 redis=redis main=<strata-server> new=<strata-server>
    bench/xadd_threads.py --redo main=<strata-server> new=<strata-server>

Each round runs `redis-benchmark -c 50 -r 1000000 XADD xs * f __rand_int__ payload <100 B>` at
-P 1 (--n1 requests) and -P 16 (--n16) against a fresh server of each LABEL=BINARY in turn
(`redis` for redis-server with appendonly yes, appendfsync everysec; Strata with appendfsync
everysec), then prints medians. Data directories go under $XADD_RUN_DIR (default
/tmp/xadd_threads) and are deleted after each run."""
import argparse
import collections
import csv
import os
import shutil
import socket
import statistics
import subprocess
import time

TICKS = os.sysconf("SC_CLK_TCK")
BASE = os.environ.get("XADD_RUN_DIR", "/tmp/xadd_threads")
PAYLOAD = "x" * 100

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def threads(pid):
    out = collections.Counter()
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        # group worker threads etc by name with digits stripped
        key = name.rstrip("0123456789-_ ")
        out[key] += int(fields[11]) + int(fields[12])
    return out

def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15])

def dir_bytes(d):
    n = 0
    if os.path.isdir(d):
        for e in os.scandir(d):
            if e.is_file():
                n += e.stat().st_size
    return n

def start(label, binary, extra):
    port = free_port()
    d = os.path.join(BASE, f"{label}-{port}")
    shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
    if binary == "redis":
        argv = ["/usr/bin/redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", d, "--save", "",
                "--appendonly", "yes", "--appendfsync", "everysec"]
    else:
        argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", d, "--appendfsync", "everysec", *extra]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
        except OSError:
            time.sleep(0.05)
    return p, port, d

def stop(p, d):
    p.terminate()
    try: p.wait(20)
    except subprocess.TimeoutExpired: p.kill(); p.wait()
    shutil.rmtree(d, ignore_errors=True)

def bench(port, n, pipeline):
    cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "50", "-n", str(n), "-P", str(pipeline),
           "-r", "1000000", "--csv", "XADD", "xs", "*", "f", "__rand_int__", "payload", PAYLOAD]
    done = subprocess.run(cmd, capture_output=True, text=True)
    rows = [r for r in csv.reader(done.stdout.splitlines()) if len(r) >= 2 and r[0] != "test"]
    if not rows:
        print(f"redis-benchmark failed: {done.stdout[-200:]!r} {done.stderr[-300:]!r}", flush=True)
        return None
    return float(rows[-1][1])

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", default="p1,p16")
    ap.add_argument("--n1", type=int, default=200000)
    ap.add_argument("--n16", type=int, default=1000000)
    ap.add_argument("--redo", action="store_true", help="only redo bytes per XADD (big dirty size)")
    ap.add_argument("bins", nargs="+")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bins]
    res = collections.defaultdict(list)
    if a.redo:
        for label, b in bins:
            if b == "redis": continue
            for pipeline, n in ((1, 50000), (16, 200000)):
                p, port, d = start(label, b, ["--memory-tier-dirty-size", "4gb"])
                bench(port, 1000, 1)
                r0 = dir_bytes(os.path.join(d, "redo"))
                bench(port, n, pipeline)
                time.sleep(1.5)
                r1 = dir_bytes(os.path.join(d, "redo"))
                print(f"{label} P{pipeline}: redo {(r1 - r0) / n:.1f} bytes per XADD ({n} XADDs)", flush=True)
                stop(p, d)
        return
    for rnd in range(a.rounds):
        for row in a.rows.split(","):
            pipeline, n = (1, a.n1) if row == "p1" else (16, a.n16)
            for label, b in bins:
                p, port, d = start(label, b, [])
                t0, c0 = threads(p.pid), proc_cpu(p.pid)
                rate = bench(port, n, pipeline)
                t1, c1 = threads(p.pid), proc_cpu(p.pid)
                if rate is None:
                    stop(p, d)
                    continue
                total = (c1 - c0) / TICKS * 1e6 / n
                per = {k: (t1[k] - t0.get(k, 0)) / TICKS * 1e6 / n for k in t1 if t1[k] - t0.get(k, 0) > 0}
                res[(row, label)].append((rate, total, per))
                top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:5])
                la = open("/proc/loadavg").read().split()[0]
                print(f"[{time.strftime('%H:%M:%S')} load {la}] r{rnd+1} {row} {label}: {rate:,.0f} ops/s, {total:.2f} µs/op ({top})", flush=True)
                stop(p, d)
    print("\nmedians")
    for row in a.rows.split(","):
        rr = res[(row, "redis")] if any(l == "redis" for l, _ in bins) else None
        rmed = statistics.median(x[0] for x in rr) if rr else None
        for label, _ in bins:
            r = res[(row, label)]
            ops = statistics.median(x[0] for x in r); cpu = statistics.median(x[1] for x in r)
            keys = set().union(*(x[2].keys() for x in r))
            per = {k: statistics.median(x[2].get(k, 0) for x in r) for k in keys}
            top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:5])
            ratio = f" {ops / rmed:.2f}x redis" if rmed else ""
            print(f"{row} {label:8} {ops:10,.0f} ops/s{ratio}  {cpu:.2f} µs/op  rounds {' '.join(f'{x[1]:.2f}' for x in r)}  ({top})")

main()
