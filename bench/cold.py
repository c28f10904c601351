#!/usr/bin/env python3
"""Cold data: GET latency and throughput on a data set several times larger than the server's
memory, alone and beside a write load (issue 16). See bench/README.md, "Cold data".

One command:

    bench/cold.py                      # 2 M x 1 KB keys in a 512 MB memory cgroup (~10 min)
    bench/cold.py --full               # the issue's size: 4 M x 1 KB in a 1 GB cgroup
    bench/cold.py --config base= --config part="--partitioned-index yes" --rounds 3
    bench/cold.py --config w2=STRATA_WORKERS=2 --config w8=STRATA_WORKERS=8

For each configuration (a name and extra strata-server arguments, after any leading upper-case
VAR=value words, which go to the server's environment) the harness loads --keys
random values of --value-size bytes into its own data directory under --scratch, waits until
compaction is idle, stops the server, drops the directory's pages from the page cache and starts
the server again inside a memory cgroup (so page cache counts against the limit: the OS cannot
hold the data set). Then each phase runs strata-loadgen (crates/strata-bench): closed-loop GET
clients alone, and beside SETs at a fixed rate or at full speed. Every --interval seconds it
prints the GET and SET figures beside RocksDB's own (stall time, pending compaction bytes, L0
files, block cache hit rate, compaction bytes) from INFO, and per phase the server's CPU, the
bytes it read from the disk (/proc/<pid>/io) and its threads' context switches per GET. Rounds
interleave the configurations (each round starting one later) and the summary quotes medians
over rounds. fio measures what the disk itself does (4 KB random
reads, direct I/O, the same queue depth), and --rdb adds Redis's RDB size for the same data.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench import RespConn, BenchError, free_port, fill_products  # noqa: E402

CGROUP_ROOT = "/sys/fs/cgroup/memory"


def log(msg):
    print(f"[cold {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")


# --------------------------------------------------------------------------------------------
# The memory cgroup (v1) the server runs in.
# --------------------------------------------------------------------------------------------
class Cgroup:
    def __init__(self, limit_bytes):
        self.path = None
        if limit_bytes <= 0 or not os.access(CGROUP_ROOT, os.W_OK):
            return
        path = os.path.join(CGROUP_ROOT, f"strata-cold-{os.getpid()}")
        try:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
                f.write(str(limit_bytes))
            self.path = path
        except OSError as e:
            log(f"cannot set up a memory cgroup ({e}); running without one")

    def enter(self):
        """Runs in the child before exec: the server is in the group from its first page."""
        if self.path:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def usage(self):
        if not self.path:
            return 0
        try:
            with open(os.path.join(self.path, "memory.usage_in_bytes")) as f:
                return int(f.read())
        except OSError:
            return 0

    def remove(self):
        if self.path:
            try:
                os.rmdir(self.path)
            except OSError:
                pass


def drop_pages(path):
    """Evicts the files under `path` from the page cache (only them: POSIX_FADV_DONTNEED)."""
    for root, _, files in os.walk(path):
        for name in files:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fdatasync(fd)  # dirty pages are not dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def dir_bytes(path, tables_only=False):
    """Bytes of the files under `path`; with `tables_only`, of the table and blob files only
    (not the logs kept for replicas, `repl-backlog-size`)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            if tables_only and not name.endswith((".sst", ".blob")):
                continue
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


# --------------------------------------------------------------------------------------------
# A server process.
# --------------------------------------------------------------------------------------------
class Server:
    def __init__(self, argv, port, log_path, cgroup=None, env=None):
        self.port = port
        self.log_path = log_path
        logf = open(log_path, "ab")
        pre = cgroup.enter if cgroup and cgroup.path else None
        self.proc = subprocess.Popen(argv, stdout=logf, stderr=logf, preexec_fn=pre,
                                     env=dict(os.environ, **env) if env else None)
        logf.close()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"server exited ({self.proc.returncode}); see {log_path}")
            try:
                c = RespConn(port, timeout=1.0)
                if c.call("PING") == "PONG":
                    c.close()
                    return
                c.close()
            except (OSError, BenchError):
                pass
            time.sleep(0.2)
        raise BenchError(f"server did not answer PING in 120 s; see {log_path}")

    def call(self, *args, timeout=600.0):
        c = RespConn(self.port, timeout=timeout)
        try:
            r = c.call(*args)
        finally:
            c.close()
        if isinstance(r, BenchError):
            raise r
        return r

    def info(self, *sections):
        # Not keyspace: it would count the keys.
        text = self.call("INFO", *(sections or ("stats", "memory")))
        out = {}
        for line in (text.decode() if isinstance(text, bytes) else text).splitlines():
            k, sep, v = line.partition(":")
            if sep:
                out[k] = v.strip()
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def num(info, key):
    try:
        return float(info.get(key, 0))
    except ValueError:
        return 0.0


def split_config(text):
    """`NAME="ENV=VALUE ... --directive value ..."`: leading upper-case `VAR=value` words are
    the server's environment (e.g. STRATA_WORKERS=8), the rest its arguments."""
    words, env = shlex.split(text), {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        k, _, v = words.pop(0).partition("=")
        env[k] = v
    return words, env


def strata_argv(bin_path, port, data_dir, extra):
    return [bin_path, "--bind", "127.0.0.1", "--port", str(port), "--dir", data_dir,
            "--appendfsync", "everysec"] + extra


def wait_compaction_idle(server, timeout):
    """Waits until RocksDB has no compaction due or running (what a fresh load leaves)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        i = server.info()
        if num(i, "strata_pending_compaction_bytes") == 0 and num(i, "strata_running_compactions") == 0 \
                and num(i, "strata_running_flushes") == 0:
            return True
        time.sleep(2)
    log("compaction still busy after the wait; measuring anyway")
    return False


# --------------------------------------------------------------------------------------------
# Load and measure.
# --------------------------------------------------------------------------------------------
def loadgen(args, *rest):
    return [args.loadgen, *rest]


def load(args, port):
    out = subprocess.run(loadgen(args, "load", "--addr", f"127.0.0.1:{port}", "--keys", str(args.keys),
                                 "--value-size", str(args.value_size), "--conns", "4", "--pipeline", "64"),
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def parse_phase(name):
    """`reads`, `reads+20000` (SET/s), `reads+max`."""
    if name == "reads":
        return "0"
    if name.startswith("reads+"):
        return name.split("+", 1)[1]
    raise SystemExit(f"unknown phase {name!r} (reads, reads+<SET/s>, reads+max)")


ENGINE = ["strata_write_stall_micros", "strata_pending_compaction_bytes", "strata_l0_files",
          "strata_block_cache_hits", "strata_block_cache_misses", "strata_compaction_read_bytes",
          "strata_compaction_written_bytes"]


def cpu_seconds(pid):
    """User plus system CPU seconds of process `pid`, all its threads (/proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def read_bytes(pid):
    """Bytes process `pid` made the block layer fetch (/proc/<pid>/io `read_bytes`: page-cache
    misses and direct reads, not page-cache hits)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def context_switches(pid):
    """Voluntary plus involuntary context switches of all of process `pid`'s threads."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
        except (OSError, ValueError):
            pass
    return total


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_phase(args, server, cgroup, dist, phase):
    """Runs one phase; returns its per-interval rows and the whole-phase figures (with the
    server's CPU µs per GET and per operation, GETs and SETs, over the phase)."""
    if args.warmup > 0:
        subprocess.run(loadgen(args, "run", "--addr", f"127.0.0.1:{server.port}", "--keys", str(args.keys),
                               "--clients", str(args.clients), "--dist", dist, "--seconds", str(args.warmup),
                               "--interval", str(args.warmup)), check=True, capture_output=True)
    argv = loadgen(args, "run", "--addr", f"127.0.0.1:{server.port}", "--keys", str(args.keys),
                   "--value-size", str(args.value_size), "--clients", str(args.clients), "--dist", dist,
                   "--seconds", str(args.seconds), "--interval", str(args.interval),
                   "--write-rate", parse_phase(phase), "--new-keys", str(args.new_keys))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    pid = server.proc.pid
    cpu0, load0, io0, cs0 = cpu_seconds(pid), loadavg(), read_bytes(pid), context_switches(pid)
    before = server.info()
    rows, total = [], None
    for line in proc.stdout:
        rec = json.loads(line)
        if rec.get("total"):
            total = rec
            continue
        now = server.info()
        d = {k: num(now, k) - num(before, k) for k in ENGINE}
        lookups = d["strata_block_cache_hits"] + d["strata_block_cache_misses"]
        rec["engine"] = {
            "stall_ms": d["strata_write_stall_micros"] / 1000,
            "pending_compaction_mb": num(now, "strata_pending_compaction_bytes") / 2**20,
            "l0_files": num(now, "strata_l0_files"),
            "cache_hit_pct": 100.0 * d["strata_block_cache_hits"] / lookups if lookups else 0.0,
            "compaction_read_mb": d["strata_compaction_read_bytes"] / 2**20,
            "compaction_written_mb": d["strata_compaction_written_bytes"] / 2**20,
            "cgroup_mb": cgroup.usage() / 2**20,
            "rss_mb": num(now, "used_memory_rss") / 2**20,
        }
        before = now
        rows.append(rec)
        print_row(rec)
    proc.wait()
    if proc.returncode != 0 or total is None:
        raise BenchError(f"strata-loadgen failed ({proc.returncode})")
    cpu = cpu_seconds(pid) - cpu0
    io, cs = read_bytes(pid) - io0, context_switches(pid) - cs0
    gets, sets = total["get"]["ops"], total["set"]["ops"]
    # With SETs beside them these also hold the writes' share (compaction's reads, the
    # checkpointer's switches): compare them between configurations of the same phase.
    total["disk_kb_per_get"] = io / 1024 / gets if gets else 0.0
    total["switches_per_get"] = cs / gets if gets else 0.0
    total["server_cpu_s"] = cpu
    total["cpu_us_per_get"] = 1e6 * cpu / gets if gets else 0.0
    total["cpu_us_per_op"] = 1e6 * cpu / (gets + sets) if gets + sets else 0.0
    total["loadavg"] = (load0 + loadavg()) / 2
    return rows, total


HEADER = (f"{'t':>5} {'GET/s':>7} {'p50':>6} {'p99':>6} {'p99.9':>6} {'max':>6} | {'SET/s':>6} {'p99':>6}"
          f" {'max':>6} | {'stall':>6} {'pendMB':>7} {'L0':>3} {'hit%':>5} {'cR MB':>6} {'cW MB':>6} {'memMB':>6}")


def print_row(r):
    g, s, e = r["get"], r["set"], r["engine"]
    print(f"{r['t']:5.0f} {g['ops_per_sec']:7.0f} {g['p50_ms']:6.2f} {g['p99_ms']:6.2f} {g['p999_ms']:6.2f}"
          f" {g['max_ms']:6.1f} | {s['ops_per_sec']:6.0f} {s['p99_ms']:6.2f} {s['max_ms']:6.1f} |"
          f" {e['stall_ms']:6.0f} {e['pending_compaction_mb']:7.0f} {e['l0_files']:3.0f} {e['cache_hit_pct']:5.1f}"
          f" {e['compaction_read_mb']:6.0f} {e['compaction_written_mb']:6.0f} {e['cgroup_mb']:6.0f}", flush=True)


def fio(args):
    """4 KB random reads with direct I/O at the clients' queue depth, on a file as large as the
    data set (at most 4 GB) in the same directory."""
    if not shutil.which("fio"):
        log("fio not installed (scripts/setup.sh installs it); skipping the disk's figure")
        return None
    path = os.path.join(args.scratch, "fio.dat")
    size = min(args.keys * args.value_size, 4 << 30)
    try:
        out = subprocess.run(["fio", "--name=cold", f"--filename={path}", f"--size={size}", "--rw=randread",
                              "--bs=4k", "--direct=1", "--ioengine=libaio", f"--iodepth={args.clients}",
                              f"--runtime={args.fio_seconds}", "--time_based", "--output-format=json"],
                             check=True, capture_output=True, text=True)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    job = json.loads(out.stdout)["jobs"][0]["read"]
    pct = job["clat_ns"]["percentile"]
    return {"iops": job["iops"], "p50_ms": pct["50.000000"] / 1e6, "p99_ms": pct["99.000000"] / 1e6,
            "p999_ms": pct["99.900000"] / 1e6, "max_ms": job["clat_ns"]["max"] / 1e6, "iodepth": args.clients}


def rdb_size(args, fill):
    """Redis's RDB size for the same data: the same loader into redis-server, then SAVE."""
    d = os.path.join(args.scratch, "redis")
    os.makedirs(d, exist_ok=True)
    port = free_port()
    srv = Server(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", d, "--save", "",
                  "--appendonly", "no"], port, os.path.join(args.scratch, "redis.log"))
    try:
        fill(port)
        srv.call("SAVE")
        return os.path.getsize(os.path.join(d, "dump.rdb"))
    finally:
        srv.stop()
        shutil.rmtree(d, ignore_errors=True)


def products_bytes(args, extra):
    """Disk bytes per key of the inventory product hashes, Strata and Redis's RDB."""
    n = args.products
    cfg = argparse.Namespace(keyspace=n)

    def fill(port):
        fill_products(port, cfg, time.monotonic() + 3600)

    d = os.path.join(args.scratch, "products")
    shutil.rmtree(d, ignore_errors=True)
    port = free_port()
    srv = Server(strata_argv(args.server, port, d, extra), port, os.path.join(args.scratch, "products.log"))
    try:
        fill(port)
    finally:
        srv.stop()
    # Reopen once so the write-back tier's checkpoint and the flush are in table files, then
    # let compaction settle.
    srv = Server(strata_argv(args.server, port, d, extra), port, os.path.join(args.scratch, "products.log"))
    try:
        wait_compaction_idle(srv, 600)
    finally:
        srv.stop()
    strata = dir_bytes(d, tables_only=True)
    shutil.rmtree(d, ignore_errors=True)
    rdb = rdb_size(args, fill)
    return {"keys": n, "strata_bytes": strata, "rdb_bytes": rdb,
            "strata_per_key": strata / n, "rdb_per_key": rdb / n}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=2_000_000)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--cgroup-mb", type=int, default=512, help="memory cgroup limit (0: none)")
    p.add_argument("--full", action="store_true", help="the issue's size: 4 M keys, 1 GB cgroup")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--interval", type=float, default=10)
    p.add_argument("--warmup", type=float, default=5, help="seconds of GETs before each phase, not counted")
    p.add_argument("--dist", default="uniform", help="comma list: uniform,zipf")
    p.add_argument("--phases", default="reads,reads+20000", help="comma list: reads, reads+<SET/s>, reads+max")
    p.add_argument("--new-keys", type=float, default=0.2, help="fraction of SETs that add a key")
    p.add_argument("--config", action="append", default=[],
                   help="NAME=\"strata-server args\" (repeatable; default one config 'default')")
    p.add_argument("--memory-args", default=None,
                   help="server arguments sizing its caches to the cgroup (default: block cache 1/8, "
                        "write-back tier 1/16, hot cache and write buffers 1/32 of the limit)")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--fio-seconds", type=int, default=20)
    p.add_argument("--no-fio", action="store_true")
    p.add_argument("--rdb", action="store_true", help="also load the same keys into Redis and SAVE")
    p.add_argument("--products", type=int, default=0, help="also measure N inventory product hashes")
    p.add_argument("--bytes-only", action="store_true", help="only the disk bytes per key (--rdb/--products)")
    p.add_argument("--scratch", default="/work/scratch/cold")
    p.add_argument("--keep", action="store_true", help="keep the data sets")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--json", help="write every figure here")
    args = p.parse_args()
    if args.full:
        args.keys, args.cgroup_mb = 4_000_000, 1024
    limit = args.cgroup_mb << 20
    if args.memory_args is None:
        mb = max(args.cgroup_mb, 128)
        # The write-back tier holds up to twice its dirty size; RocksDB's memtables up to three
        # write buffers per family written; the rest (50-80 MB measured under full-speed SETs
        # in a 256 MB group: allocator slack, RocksDB's table builders and compaction buffers,
        # the runtime; bench/write_memory.py) is not configurable.
        args.memory_args = (f"--block-cache-size {mb // 8}mb --hot-cache-size {mb // 32}mb "
                            f"--memory-tier-dirty-size {mb // 16}mb --write-buffer-size {mb // 32}mb")
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--workspace", "--bins"], cwd=REPO, check=True)
    args.server = os.environ.get("STRATA_SERVER") or os.path.join(target_dir(), "release", "strata-server")
    args.loadgen = os.path.join(target_dir(), "release", "strata-loadgen")
    configs = []
    for c in args.config or ["default="]:
        name, _, extra = c.partition("=")
        words, env = split_config(extra)
        configs.append((name, shlex.split(args.memory_args) + words, env))
    os.makedirs(args.scratch, exist_ok=True)
    result = {"argv": sys.argv, "keys": args.keys, "value_size": args.value_size, "cgroup_mb": args.cgroup_mb,
              "clients": args.clients, "configs": {n: {"args": a, "env": e} for n, a, e in configs}, "runs": []}
    cgroup = Cgroup(limit)
    if cgroup.path:
        log(f"memory cgroup {cgroup.path}: {args.cgroup_mb} MB (page cache included)")
    else:
        log("NO memory cgroup: the page cache may hold the data set; figures are not cold")
    try:
        if not args.bytes_only:
            measure(args, configs, cgroup, result)
            if not args.no_fio:
                result["fio"] = f = fio(args)
                if f:
                    print(f"fio 4k randread direct iodepth={args.clients}: {f['iops']:.0f} IOPS, "
                          f"p50 {f['p50_ms']:.2f} ms, p99 {f['p99_ms']:.2f} ms, p99.9 {f['p999_ms']:.2f} ms")
        if args.rdb:
            def fill(port):
                subprocess.run(loadgen(args, "load", "--addr", f"127.0.0.1:{port}", "--keys", str(args.keys),
                                       "--value-size", str(args.value_size)), check=True, capture_output=True)
            rdb = rdb_size(args, fill)
            result["rdb_bytes"] = rdb
            print(f"Redis RDB for the same {args.keys} keys: {rdb / 2**20:.0f} MB, {rdb / args.keys:.0f} B/key")
        if args.products:
            result["products"] = pr = products_bytes(args, configs[0][1])
            print(f"inventory products ({pr['keys']} hashes): Strata {pr['strata_per_key']:.0f} B/key, "
                  f"RDB {pr['rdb_per_key']:.0f} B/key")
        summarize(args, result)
    finally:
        cgroup.remove()
        if not args.keep:
            for name, _, _ in configs:
                shutil.rmtree(os.path.join(args.scratch, name), ignore_errors=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)


def measure(args, configs, cgroup, result):
    loaded = {}
    for rnd in range(args.rounds):
        # Each round starts one configuration later, so none always runs first (a busy minute
        # on the shared machine, or the previous round's compaction, falls on each in turn).
        k = rnd % len(configs)
        for name, extra, env in configs[k:] + configs[:k]:
            d = os.path.join(args.scratch, name)
            logp = os.path.join(args.scratch, f"{name}.log")
            if name not in loaded:
                shutil.rmtree(d, ignore_errors=True)
                port = free_port()
                log(f"[{name}] loading {args.keys} x {args.value_size} B")
                srv = Server(strata_argv(args.server, port, d, extra), port, logp, cgroup, env)
                try:
                    rate = load(args, port)
                    log(f"[{name}] loaded at {rate['sets_per_sec']:.0f} SET/s; waiting for compaction")
                    wait_compaction_idle(srv, 900)
                finally:
                    srv.stop()
                loaded[name] = dir_bytes(d, tables_only=True)
                log(f"[{name}] {dir_bytes(d) / 2**20:.0f} MB on disk, of which tables "
                    f"{loaded[name] / 2**20:.0f} MB: {loaded[name] / args.keys:.0f} B/key")
            for dist in args.dist.split(","):
                for phase in args.phases.split(","):
                    drop_pages(d)
                    port = free_port()
                    srv = Server(strata_argv(args.server, port, d, extra), port, logp, cgroup, env)
                    try:
                        print(f"\n== round {rnd + 1} config {name} dist {dist} phase {phase}\n{HEADER}", flush=True)
                        rows, total = run_phase(args, srv, cgroup, dist, phase)
                    finally:
                        srv.stop()
                    result["runs"].append({"round": rnd + 1, "config": name, "dist": dist, "phase": phase,
                                           "intervals": rows, "total": total,
                                           "disk_bytes_after_load": loaded[name]})


def summarize(args, result):
    runs = result["runs"]
    if not runs:
        return
    fio_r = result.get("fio")
    print("\n## Summary (medians over rounds of the whole-phase figures; stall = worst interval)")
    print("| config | dist | phase | GET/s | p50 ms | p99 ms | p99.9 ms | max ms | p99.9/p50 | SET/s |"
          " stall ms (worst 10 s) | table B/key | vs fio | CPU µs/GET | CPU µs/op | disk KB/GET |"
          " switches/GET | load |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    keys = []
    for r in runs:
        k = (r["config"], r["dist"], r["phase"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = [r for r in runs if (r["config"], r["dist"], r["phase"]) == k]
        med = lambda f: statistics.median(f(r) for r in rs)  # noqa: E731
        gets = med(lambda r: r["total"]["get"]["ops_per_sec"])
        p50 = med(lambda r: r["total"]["get"]["p50_ms"])
        p999 = med(lambda r: r["total"]["get"]["p999_ms"])
        stall = max(max((i["engine"]["stall_ms"] for i in r["intervals"]), default=0) for r in rs)
        frac = f"{gets / fio_r['iops']:.0%}" if fio_r else "-"
        print(f"| {k[0]} | {k[1]} | {k[2]} | {gets:.0f} | {p50:.2f} | {med(lambda r: r['total']['get']['p99_ms']):.2f}"
              f" | {p999:.2f} | {med(lambda r: r['total']['get']['max_ms']):.1f} | {p999 / p50 if p50 else 0:.1f}"
              f" | {med(lambda r: r['total']['set']['ops_per_sec']):.0f} | {stall:.0f}"
              f" | {rs[0]['disk_bytes_after_load'] / args.keys:.0f} | {frac}"
              f" | {med(lambda r: r['total'].get('cpu_us_per_get', 0)):.0f}"
              f" | {med(lambda r: r['total'].get('cpu_us_per_op', 0)):.0f}"
              f" | {med(lambda r: r['total'].get('disk_kb_per_get', 0)):.1f}"
              f" | {med(lambda r: r['total'].get('switches_per_get', 0)):.2f}"
              f" | {med(lambda r: r['total'].get('loadavg', 0)):.1f} |")
    if len(args.config) > 1 and args.rounds > 1:
        print("\nPer-round GET/s and p99.9 (to judge noise):")
        for k in keys:
            rs = [r for r in runs if (r["config"], r["dist"], r["phase"]) == k]
            print(f"  {k}: " + ", ".join(f"{r['total']['get']['ops_per_sec']:.0f}/{r['total']['get']['p999_ms']:.1f}ms"
                                         f"/{r['total'].get('cpu_us_per_get', 0):.0f}us" for r in rs))


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        log(f"error: {e}")
        sys.exit(1)
