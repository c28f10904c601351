#!/usr/bin/env python3
"""Memory under writes (issue 16): the server's anonymous memory while full-speed 1 KB SETs go
in, inside a memory cgroup, with where it is. See bench/README.md, "Memory under writes".

    bench/write_memory.py --cgroup-mb 256 --seconds 600            # the 10-minute survival run
    bench/write_memory.py --cgroup-mb 256 --seconds 90 --env MIMALLOC_PURGE_DELAY=0

The server starts on an empty directory under --scratch inside a cgroup-v1 memory group of
--cgroup-mb (page cache included), sized as bench/cold.py sizes it (--memory-args, extra
arguments with --args). strata-loadgen then sends SETs of --value-size random bytes over
--write-conns pipelined connections as fast as the server takes them, to random keys among
--keys (a fresh directory: new keys first, overwrites later). Every --interval seconds one row:
SET/s, the process's anonymous memory (and the part in transparent huge pages), the group's
usage and page cache, and the server's own accounts from INFO (write-back tier layers, RocksDB
memtables, table readers, block cache usage and pinned part, mimalloc's committed bytes), then
what is left (anonymous minus everything named). The run ends early if the server dies (the
group's OOM killer: the kernel log's line is quoted).

--trace MS starts the server with STRATA_TIER_TRACE=MS: its log then has a line, stamped with the
time, for every checkpoint (with its phases), redo log sync, layer swap or write stopped at the
memory bound that took MS or longer, and for every change of the engine's pace; after the run
each interval with a stretch over 100 ms without a SET is printed with the lines of its time.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import free_port  # noqa: E402
from cold import Cgroup, Server, num, strata_argv, target_dir, log  # noqa: E402

MB = 2**20


def proc_kb(pid, name, field):
    """A `Field:  N kB` line of /proc/<pid>/<name>, in bytes (0 when absent)."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def anon_by_mapping(pid):
    """Resident anonymous MB by kind of mapping, from /proc/<pid>/smaps: `glibc` the C library's
    malloc (its main heap, `[heap]`, and its other arenas: mappings inside one 64 MB-aligned
    region, the arenas' reservation), `mimalloc` mimalloc's arena reservations (mappings of 256 MB
    or more), `stacks` and `other`. A heuristic on the layout of glibc 2.36 and mimalloc 2."""
    out = {"glibc": 0.0, "mimalloc": 0.0, "stacks": 0.0, "other": 0.0}
    kind = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                if line[0] in "0123456789abcdef" and "-" in line.split()[0]:
                    parts = line.split()
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    name = parts[5] if len(parts) > 5 else ""
                    size = hi - lo
                    if name == "[heap]":
                        kind = "glibc"
                    elif name.startswith("[stack"):
                        kind = "stacks"
                    elif name:
                        kind = None  # a file: not anonymous memory
                    elif size >= 256 * MB:
                        kind = "mimalloc"
                    elif size <= 64 * MB and lo >> 26 == (hi - 1) >> 26 and size != 8 * MB + 4096:
                        kind = "glibc"
                    elif size in (8 * MB, 8 * MB + 4096, 2 * MB, 2 * MB + 4096):
                        kind = "stacks"
                    else:
                        kind = "other"
                elif kind and line.startswith("Anonymous:"):
                    out[kind] += int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


def cgroup_stat(cg):
    out = {}
    if not cg.path:
        return out
    try:
        with open(os.path.join(cg.path, "memory.stat")) as f:
            for line in f:
                k, v = line.split()
                out[k] = int(v)
    except OSError:
        pass
    return out


# The server's own accounts of its memory (INFO), by the names the rows print.
NAMED = [("tier", ("strata_tier_dirty_bytes", "strata_tier_checkpointing_bytes")),
         ("memtab", ("strata_memtables",)),
         ("readers", ("strata_table_readers",)),
         ("bcache", ("strata_block_cache_usage",))]

HEADER = (f"{'t':>5} {'SET/s':>7} {'gap':>6} {'p99.9':>6} {'max':>6} {'pace':>5} {'ckpt':>5} | {'anon':>5} {'thp':>4} {'group':>5} {'cache':>5} | "
          + " ".join(f"{n:>7}" for n, _ in NAMED) + f" {'pinned':>6} {'mi':>5} | {'rest':>5} | {'glibc':>5} {'mimal':>5} {'stack':>5} {'other':>5}")


def sample(srv, cg):
    pid = srv.proc.pid
    try:
        info = srv.info("stats", "memory", "persistence")
    except Exception:  # the server is gone or too busy to answer: memory figures only
        info = {}
    st = cgroup_stat(cg)
    row = {
        "anon_mb": proc_kb(pid, "status", "RssAnon") / MB,
        "thp_mb": proc_kb(pid, "smaps_rollup", "AnonHugePages") / MB,
        "group_mb": cg.usage() / MB,
        "group_cache_mb": st.get("cache", 0) / MB,
        "pinned_mb": num(info, "strata_block_cache_pinned") / MB,
        "mi_committed_mb": num(info, "strata_allocator_committed") / MB,
        # The tier's writer pacing (absent on servers without it): the rate writers are paced
        # at (MB/s, 0: not paced), writes paced / stopped so far, the last checkpoint's length.
        "pace_mbps": num(info, "strata_tier_delayed_write_rate") / MB,
        "delayed_writes": num(info, "strata_tier_delayed_writes"),
        "stopped_writes": num(info, "strata_tier_stopped_writes"),
        "stopped_s": num(info, "strata_tier_stopped_write_micros") / 1e6,
        "checkpoint_ms": num(info, "strata_tier_last_checkpoint_took_ms"),
        "l0_files": num(info, "strata_l0_files"),
        "pending_compaction_mb": num(info, "strata_pending_compaction_bytes") / MB,
    }
    for k, v in anon_by_mapping(pid).items():
        row[k + "_mb"] = v
    named = 0.0
    for name, keys in NAMED:
        v = sum(num(info, k) for k in keys) / MB
        row[name + "_mb"] = v
        named += v
    row["rest_mb"] = row["anon_mb"] - named
    return row


def oom_line(pid):
    """The kernel's OOM-kill line for `pid`, if dmesg can be read."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln for ln in out.splitlines() if f"pid={pid}" in ln or f"process {pid}" in ln]
    return lines[-1] if lines else None


def slow_checkpoints(path, over_ms=1000):
    """The server log's lines for checkpoints of `over_ms` or longer (the server logs those over
    1 s, or over --trace's threshold: `write-back checkpoint of N MB took T ms: <phase> T ms,
    ...`): how many, the median and the longest length (ms), and the longest line's phases
    (where its time went)."""
    took = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if "write-back checkpoint of" in line and " took " in line:
                    ms = int(line.split(" took ")[1].split()[0])
                    if ms >= over_ms:
                        took.append((ms, line.split(": ", 2)[-1].strip()))
    except (OSError, ValueError, IndexError):
        pass
    if not took:
        return f"no checkpoint of {over_ms} ms or more"
    took.sort()
    longest = took[-1]
    return (f"{len(took)} checkpoints of {over_ms} ms or more, median {took[len(took) // 2][0]} ms, longest "
            f"{longest[0]} ms ({longest[1]})")


def traced_stalls(rows, path, interval):
    """Each interval with a stretch over 100 ms without a SET, with the server log's stamped
    lines (--trace) from its time (and half a second either side)."""
    stamped = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"strata: \[(\d+)\] (.*)", line.strip())
                if m:
                    stamped.append((int(m.group(1)) / 1000.0, m.group(2)))
    except OSError:
        pass
    out = []
    for r in rows:
        if r["gap_ms"] <= 100:
            continue
        lo, hi = r["wall"] - interval - 0.5, r["wall"] + 0.5
        out.append(f"  t={r['t']:.0f} s: stretch {r['gap_ms']:.0f} ms, pace {r['pace_mbps']:.1f} MB/s, "
                   f"L0 {r['l0_files']:.0f}")
        out += [f"      {w - r['wall']:+6.2f} s  {text}" for w, text in stamped if lo <= w <= hi]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cgroup-mb", type=int, default=256)
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--interval", type=float, default=5)
    p.add_argument("--keys", type=int, default=2_000_000, help="key space of the SETs")
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--write-conns", type=int, default=4)
    p.add_argument("--memory-args", default=None, help="default: as bench/cold.py sizes the server")
    p.add_argument("--args", default="", help="more strata-server arguments")
    p.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server (repeatable)")
    p.add_argument("--scratch", default="/work/scratch/write_memory")
    p.add_argument("--json", help="write every row here")
    p.add_argument("--trace", type=int, default=None, metavar="MS",
                   help="server log lines for tier events of MS or longer, matched to the stalls")
    args = p.parse_args()
    if args.trace is not None:
        args.env.append(f"STRATA_TIER_TRACE={args.trace}")
    if args.memory_args is None:
        mb = max(args.cgroup_mb, 128)
        args.memory_args = (f"--block-cache-size {mb // 8}mb --hot-cache-size {mb // 32}mb "
                            f"--memory-tier-dirty-size {mb // 16}mb --write-buffer-size {mb // 32}mb")
    tgt = target_dir()
    server = os.environ.get("STRATA_SERVER") or os.path.join(tgt, "release", "strata-server")
    loadgen = os.path.join(tgt, "release", "strata-loadgen")
    data = os.path.join(args.scratch, f"data-{os.getpid()}")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    port = free_port()
    argv = strata_argv(server, port, data, shlex.split(args.memory_args) + shlex.split(args.args))
    for kv in args.env:
        k, _, v = kv.partition("=")
        os.environ[k] = v
    cg = Cgroup(args.cgroup_mb * MB)
    log(f"group {cg.path}: {args.cgroup_mb} MB; server {' '.join(argv)}")
    server_log = os.path.join(args.scratch, f"server-{os.getpid()}.log")
    srv = Server(argv, port, server_log, cg)
    pid = srv.proc.pid
    lg = subprocess.Popen([loadgen, "run", "--addr", f"127.0.0.1:{port}", "--keys", str(args.keys),
                           "--value-size", str(args.value_size), "--clients", "0", "--write-rate", "max",
                           "--write-conns", str(args.write_conns), "--new-keys", "0",
                           "--seconds", str(args.seconds), "--interval", str(args.interval)],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    rows, peak, died, total = [], {}, None, {}
    print(HEADER, flush=True)
    try:
        for line in lg.stdout:
            rec = json.loads(line)
            if rec.get("total"):
                total = rec
                continue
            if srv.proc.poll() is not None:
                died = oom_line(pid) or f"exit status {srv.proc.returncode}"
                break
            r = sample(srv, cg)
            r["t"], r["sets"], r["wall"] = rec["t"], rec["set"]["ops_per_sec"], time.time()
            # The longest stretch in the interval with no SET completed on any connection, and
            # the latency of the pipelined SETs (each SET counted with its batch's round trip).
            r["gap_ms"] = rec.get("set_gap_ms", 0.0)
            r["p999_ms"], r["max_ms"] = rec["set"]["p999_ms"], rec["set"]["max_ms"]
            rows.append(r)
            for k, v in r.items():
                peak[k] = max(peak.get(k, v), v)
            print(f"{r['t']:5.0f} {r['sets']:7.0f} {r['gap_ms']:6.0f} {r['p999_ms']:6.0f} {r['max_ms']:6.0f}"
                  f" {r['pace_mbps']:5.1f} {r['checkpoint_ms']:5.0f} | {r['anon_mb']:5.0f} {r['thp_mb']:4.0f} {r['group_mb']:5.0f}"
                  f" {r['group_cache_mb']:5.0f} | " + " ".join(f"{r[n + '_mb']:7.1f}" for n, _ in NAMED)
                  + f" {r['pinned_mb']:6.1f} {r['mi_committed_mb']:5.0f} | {r['rest_mb']:5.0f} | {r['glibc_mb']:5.0f}"
                  f" {r['mimalloc_mb']:5.0f} {r['stacks_mb']:5.0f} {r['other_mb']:5.0f}", flush=True)
    finally:
        if lg.poll() is None:
            lg.terminate()
            lg.wait()
        if srv.proc.poll() is not None and died is None:
            died = oom_line(pid) or f"exit status {srv.proc.returncode}"
        stopping = time.time()
        srv.stop()
        # A clean shutdown checkpoints the tier and flushes RocksDB's memtables: with compaction
        # behind, a flush that waits for write-stall conditions made it take seconds.
        shutdown_s = time.time() - stopping
        cg.remove()
        shutil.rmtree(data, ignore_errors=True)
    st = cgroup_stat(cg) if cg.path else {}
    print(f"peaks: anon {peak.get('anon_mb', 0):.0f} MB, group {peak.get('group_mb', 0):.0f} MB, "
          f"rest {peak.get('rest_mb', 0):.0f} MB; "
          + (f"SERVER DIED: {died}" if died else f"survived {rows[-1]['t'] if rows else 0:.0f} s; "
                                                 f"shutdown (SIGTERM to exit) took {shutdown_s:.2f} s"), flush=True)
    if rows:
        sets = sorted(r["sets"] for r in rows)
        last = rows[-1]
        tset = total.get("set", {})
        print(f"writes: mean {sum(sets) / len(sets):.0f} SET/s, per-interval min {sets[0]:.0f} / median "
              f"{sets[len(sets) // 2]:.0f} / max {sets[-1]:.0f}; {sum(1 for v in sets if v == 0)} of {len(sets)} "
              f"intervals with no SET; longest stretch with no SET completed "
              f"{total.get('set_gap_ms', max(r['gap_ms'] for r in rows)):.0f} ms; "
              f"intervals with a stretch over 100 ms: {sum(1 for r in rows if r['gap_ms'] > 100)}; "
              f"SET latency (per pipelined batch) p99.9 {tset.get('p999_ms', 0):.0f} ms, max {tset.get('max_ms', 0):.0f} ms; "
              f"tier: {last['delayed_writes']:.0f} writes paced, {last['stopped_writes']:.0f} stopped "
              f"({last['stopped_s']:.1f} s in all); L0 files at most {peak.get('l0_files', 0):.0f}, pending compaction "
              f"at most {peak.get('pending_compaction_mb', 0):.0f} MB", flush=True)
        print(f"checkpoints: {slow_checkpoints(server_log)} (server log {server_log})", flush=True)
        if args.trace is not None and args.trace < 1000:
            print(f"checkpoints: {slow_checkpoints(server_log, args.trace)}", flush=True)
        if args.trace is not None:
            print("stretches over 100 ms without a SET, with the server's traced events:", flush=True)
            for line in traced_stalls(rows, server_log, args.interval):
                print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv, "rows": rows, "peak": peak, "died": died, "stat": st, "total": total},
                      f, indent=1)
    return 1 if died else 0


if __name__ == "__main__":
    sys.exit(main())
