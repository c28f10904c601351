#!/usr/bin/env python3
"""Compression of the write-back tier's checkpoint files (issue 16): server CPU per write and
disk bytes per key for each choice, in interleaved rounds.

    bench/checkpoint_files.py [--rounds 3] [--keys 300000] [--entries 500000] [--products 100000]

A checkpoint writes each family's records as a table file that RocksDB moves in
(`IngestExternalFile`). RocksDB's table file writer compresses with the *last* level's
compression (zstd here), since an ingested file may land there; most land in level 0 (random
keys overlap the files before them) and are rewritten by compaction soon. The choices
(`STRATA_CHECKPOINT_COMPRESSION`, read at open): `bottom` (zstd, as before), `upper` (LZ4, the
upper levels'), `by-level` (zstd for a file no table file of its family overlaps, which RocksDB
moves to the last level, LZ4 for the others).

For each choice, every round, on a fresh server (--memory-tier-dirty-size 16mb, so a load is
many checkpoints) in a directory under --scratch:
- `set`: `strata-loadgen load` of --keys random 1 KB values (4 connections x 64 pipelined SETs);
- `xadd`: `redis-benchmark -P 16 -c 50 -n --entries XADD s * f <100 characters of text>` (one
  stream: its entries are in key order, so its files go to the last level);
- `products`: --products inventory product hashes (bench.py's fill_products: name, 50 random
  characters of description, price, quantity);
each followed by 3 s for the checkpoint it started. Server CPU (utime + stime, /proc/<pid>/stat)
over the load and the 3 s, per write. Then the server is restarted (the rest of the tier goes to
RocksDB), compaction is waited for, and the table files' bytes per key are read (not a full
compaction: that would rewrite every file with the last level's zstd whatever the choice).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import fill_products  # noqa: E402
from cold import Server, dir_bytes, num, strata_argv, target_dir, wait_compaction_idle  # noqa: E402
from procstat import cpu_seconds, free_port  # noqa: E402

TEXT = "the quick brown fox jumps over the lazy dog while the inventory service logs its orders"[:100]


def one(server, choice, workload, args):
    d = os.path.join(args.scratch, f"{choice}-{workload}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.environ["STRATA_CHECKPOINT_COMPRESSION"] = choice
    extra = ["--memory-tier-dirty-size", "16mb"]
    port = free_port()
    srv = Server(strata_argv(server, port, d, extra), port, os.path.join(args.scratch, "server.log"))
    try:
        pid = srv.proc.pid
        c0 = cpu_seconds(pid)
        if workload == "set":
            n = args.keys
            subprocess.run([os.path.join(target_dir(), "release", "strata-loadgen"), "load", "--addr",
                            f"127.0.0.1:{port}", "--keys", str(n), "--value-size", "1024"],
                           check=True, capture_output=True)
        elif workload == "xadd":
            n = args.entries
            subprocess.run(["redis-benchmark", "-p", str(port), "-c", "50", "-P", "16", "-n", str(n), "-q",
                            "XADD", "s", "*", "f", TEXT], check=True, capture_output=True)
        else:
            n = args.products
            fill_products(port, argparse.Namespace(keyspace=n), time.monotonic() + 3600)
        time.sleep(3)
        cpu_us = (cpu_seconds(pid) - c0) * 1e6 / n
    finally:
        srv.stop()
    srv = Server(strata_argv(server, port, d, extra), port, os.path.join(args.scratch, "server.log"))
    try:
        wait_compaction_idle(srv, 600)
        info = srv.info()
        levels = num(info, "strata_l0_files")
    finally:
        srv.stop()
    per_key = dir_bytes(d, tables_only=True) / n
    shutil.rmtree(d, ignore_errors=True)
    return cpu_us, per_key, levels


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--keys", type=int, default=300_000)
    p.add_argument("--entries", type=int, default=500_000)
    p.add_argument("--products", type=int, default=100_000)
    p.add_argument("--choices", default="bottom,upper,by-level")
    p.add_argument("--workloads", default="set,xadd,products")
    p.add_argument("--scratch", default="/work/scratch/checkpoint_files")
    args = p.parse_args()
    server = os.environ.get("STRATA_SERVER") or os.path.join(target_dir(), "release", "strata-server")
    choices = args.choices.split(",")
    workloads = args.workloads.split(",")
    got = {}
    for r in range(args.rounds):
        order = choices if r % 2 == 0 else choices[::-1]
        for w in workloads:
            for c in order:
                cpu, per_key, _ = one(server, c, w, args)
                got.setdefault((w, c), []).append((cpu, per_key))
                print(f"round {r + 1} {w:8} {c:8}: {cpu:6.2f} CPU us/write, {per_key:7.1f} B/key "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"\n{'workload':8} {'choice':8} | {'CPU us/write (median; rounds)':40} | B/key (median)")
    for w in workloads:
        for c in choices:
            v = got[(w, c)]
            cpus = [x for x, _ in v]
            print(f"{w:8} {c:8} | {statistics.median(cpus):6.2f} ({' / '.join(f'{x:.2f}' for x in cpus)})"
                  f"{'':10} | {statistics.median(b for _, b in v):7.1f}")
    shutil.rmtree(args.scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
