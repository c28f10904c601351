#!/usr/bin/env python3
"""Strata following a real Redis leader (issue 17), next to a redis-server replica of the same
leader, in one run (python3 stdlib + redis-benchmark). See bench/README.md, "Following Redis
(issue 17)".

  fullsync  the leader holds --mb MiB of SETs (--value-size bytes each); an empty redis-server
            replica, then an empty Strata, run REPLICAOF; time until master_link_status:up and
            DBSIZE equals the leader's. Peak RSS of each replica (VmHWM) is reported too.
  lag       both replicas attached; redis-benchmark (-c --clients, -P 1, SET/HSET/LPUSH/SADD/ZADD
            round robin on a --keyspace) writes to the leader for --seconds; every --interval the
            leader's master_repl_offset is sampled against each replica's offset processed
            (slave_repl_offset in INFO replication on the replica): lag = leader - replica bytes,
            p50/p99/max, and the time each replica needs to catch up once the load stops.

Servers bind 127.0.0.1 on free ports under --scratch (default /work/scratch/rdbspeed) and are
stopped by PID; their directories are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import BenchError, Target, default_strata_bin, kill_proc, log  # noqa: E402
from replication import MIB, call, dbsize, dir_size, info, load_data, percentile, wait_until  # noqa: E402


def vm_hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def fullsync(args, leader, replicas, keys):
    out = []
    for r in replicas:
        t0 = time.monotonic()
        call(r.port, "REPLICAOF", "127.0.0.1", leader.port)

        def done():
            if not r.alive():
                raise BenchError(f"{r.name} died")
            return info(r.port).get("master_link_status") == "up" and dbsize(r.port) == keys
        wait_until(f"{r.name}: full sync", done, args.timeout, interval=0.05)
        secs = time.monotonic() - t0
        rec = {"replica": r.name, "mib": args.mb, "keys": keys, "seconds": secs,
               "mib_per_s": args.mb / secs, "peak_rss_mib": (vm_hwm(r.proc.pid) or 0) / MIB,
               "dir_mib": dir_size(r.root) / MIB}
        log(f"fullsync {r.name}: {secs:.1f}s ({rec['mib_per_s']:.0f} MiB/s), peak RSS "
            f"{rec['peak_rss_mib']:.0f} MiB")
        out.append(rec)
    return out


def lag(args, leader, replicas):
    samples = {r.name: [] for r in replicas}
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            lo = int(info(leader.port)["master_repl_offset"])
            for r in replicas:
                ro = int(info(r.port).get("slave_repl_offset", 0))
                samples[r.name].append(max(0, lo - ro))
            time.sleep(args.interval)

    scratch = os.path.join(args.scratch, "rb.out")
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(leader.port), "-c", str(args.clients),
            "-n", "100000000", "-d", str(args.data_size), "-r", str(args.keyspace), "-P", "1",
            "-t", "set,hset,lpush,sadd,zadd", "--threads", "1", "-l"]
    t = threading.Thread(target=sampler)
    start_offset = int(info(leader.port)["master_repl_offset"])
    with open(scratch, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        t.start()
        try:
            time.sleep(args.seconds)
        finally:
            kill_proc(proc, grace=2)
            stop.set()
            t.join()
    end_offset = int(info(leader.port)["master_repl_offset"])
    rate = (end_offset - start_offset) / args.seconds
    rows = []
    for r in replicas:
        t0 = time.monotonic()
        wait_until(f"{r.name}: catch up", lambda r=r: int(info(r.port).get("slave_repl_offset", 0))
                   >= end_offset, args.timeout, interval=0.01)
        catch_up = time.monotonic() - t0
        s = sorted(samples[r.name])
        rows.append({"replica": r.name, "samples": len(s), "p50_bytes": percentile(s, 50),
                     "p99_bytes": percentile(s, 99), "max_bytes": s[-1] if s else 0,
                     "leader_bytes_per_s": rate, "catch_up_s": catch_up})
        log(f"lag {r.name}: p50 {rows[-1]['p50_bytes']} B, p99 {rows[-1]['p99_bytes']} B, max "
            f"{rows[-1]['max_bytes']} B (leader stream {rate / MIB:.2f} MiB/s); caught up {catch_up:.2f}s after")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench/from_redis.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scratch", default="/work/scratch/rdbspeed")
    p.add_argument("--mb", type=int, default=1024, help="MiB the leader holds (default 1024)")
    p.add_argument("--value-size", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=20, help="length of the lag run (default 20)")
    p.add_argument("--interval", type=float, default=0.05, help="seconds between lag samples")
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--data-size", type=int, default=100)
    p.add_argument("--keyspace", type=int, default=100000)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--sections", default="fullsync,lag")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    os.makedirs(args.scratch, exist_ok=True)
    strata_bin = default_strata_bin()
    leader = Target("redis-leader", ["redis-server"], ["--save", "", "--appendonly", "no"])
    replicas = [Target("redis-replica", ["redis-server"], ["--save", "", "--appendonly", "no"]),
                Target("strata-replica", [strata_bin], ["--appendfsync", "everysec"])]
    started = []
    results = {}
    try:
        for t in [leader, *replicas]:
            t.start(args.scratch, 60)
            started.append(t)
        log(f"loading {args.mb} MiB into the leader")
        keys = load_data(leader.port, args.mb * MIB, args.value_size, time.monotonic() + args.timeout)
        sections = args.sections.split(",")
        if "fullsync" in sections:
            results["fullsync"] = fullsync(args, leader, replicas, keys)
        else:
            for r in replicas:
                call(r.port, "REPLICAOF", "127.0.0.1", leader.port)
            wait_until("links up", lambda: all(info(r.port).get("master_link_status") == "up"
                                               for r in replicas), args.timeout)
        if "lag" in sections:
            results["lag"] = lag(args, leader, replicas)
    finally:
        for t in started:
            t.stop(False)
    for row in results.get("fullsync", []):
        print(f"fullsync {row['replica']}: {row['mib']} MiB, {row['keys']} keys in {row['seconds']:.1f}s "
              f"({row['mib_per_s']:.0f} MiB/s), peak RSS {row['peak_rss_mib']:.0f} MiB")
    for row in results.get("lag", []):
        print(f"lag {row['replica']}: p50 {row['p50_bytes']} B, p99 {row['p99_bytes']} B, max {row['max_bytes']} B "
              f"at {row['leader_bytes_per_s'] / MIB:.2f} MiB/s of stream; caught up {row['catch_up_s']:.2f}s after")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
