#!/usr/bin/env python3
"""A replica's CPU per applied write: a leader under `redis-benchmark -t set,hset -P 16` (or -P N) and one
replica following it; the replica process's utime+stime (from /proc/<pid>/stat) over the writes
it applied, and (Strata) that of its replication link thread alone, which applies them. Interleaved rounds of each binary given (and Redis 7 as the yardstick), medians.

    bench/replica_apply_cpu.py --binary old=/path/a --binary new=/path/b [--rounds 3] [-n 200000] [-P 16]
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import redis

TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:  # pid may be "pid/task/tid"
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def link_thread(pid):
    """`pid/task/tid` of Strata's replication link thread (it applies the leader's writes)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            if f.read().startswith("strata-repl-lin"):
                return f"{pid}/task/{tid}"
    return None


def start(binary, workdir, port):
    d = os.path.join(workdir, str(port))
    os.makedirs(d)
    if binary == "redis":
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
               "--save", "", "--appendonly", "yes"]
    else:
        cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", d]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = redis.Redis(port=port)
    for _ in range(200):
        try:
            c.ping()
            return p, c
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError(f"{cmd} did not start")


def wait(pred, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out")


def one(binary, n, pipeline, workdir):
    lp, rp = free_port(), free_port()
    leader_p, leader = start(binary, workdir, lp)
    replica_p, replica = start(binary, workdir, rp)
    try:
        replica.execute_command("REPLICAOF", "127.0.0.1", str(lp))
        wait(lambda: replica.info("replication").get("master_link_status") == "up")
        before = cpu_seconds(replica_p.pid)
        link = link_thread(replica_p.pid)
        link_before = cpu_seconds(link) if link else 0.0
        subprocess.run(["redis-benchmark", "-p", str(lp), "-t", "set,hset", "-P", str(pipeline),
                        "-n", str(n), "-r", "100000", "-q"], check=True,
                       stdout=subprocess.DEVNULL)
        target = leader.info("replication")["master_repl_offset"]
        wait(lambda: replica.info("replication")["slave_repl_offset"] >= target)
        cpu = cpu_seconds(replica_p.pid) - before
        link_cpu = cpu_seconds(link) - link_before if link else float("nan")
        return cpu / (2 * n) * 1e6, link_cpu / (2 * n) * 1e6
    finally:
        for p in (replica_p, leader_p):
            p.terminate()
            p.wait(30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", action="append", default=[], help="name=path")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=200000)
    ap.add_argument("-P", type=int, default=16, help="redis-benchmark's pipeline depth")
    args = ap.parse_args()
    variants = [b.split("=", 1) for b in args.binary] + [["redis", "redis"]]
    results = {name: [] for name, _ in variants}
    instr = {name: [] for name, _ in variants}
    workdir = tempfile.mkdtemp(prefix="replica-apply-", dir=os.environ.get("TMPDIR"))
    try:
        for r in range(args.rounds):
            for name, binary in variants:
                us, ins = one(binary, args.n, args.P, workdir)
                results[name].append(us)
                instr[name].append(ins)
                print(f"round {r + 1} {name}: {us:.2f} µs CPU per applied write, {ins:.2f} µs of"
                      " it in the link thread", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    base = statistics.median(results["redis"])
    for name, xs in results.items():
        m = statistics.median(xs)
        i = statistics.median(instr[name])
        print(f"{name}: median {m:.2f} µs/write ({m / base:.2f}x Redis), link thread {i:.2f} µs;"
              f" {[round(x, 2) for x in xs]}, link {[round(x, 2) for x in instr[name]]}")


if __name__ == "__main__":
    main()
