#!/usr/bin/env python3
"""Resource bounds: load N GB into strata-server configured with small caches and report its
peak RSS against the configured budget (not run in CI; docs/reliability.md has figures).

    bench/rss.py                 # 20 GB (long: hours on a small machine)
    bench/rss.py --gb 2          # a quicker figure
    bench/rss.py --gb 2 --value-size 4096 --block-cache 64mb --write-buffer 16mb --hot-cache 32mb
    bench/rss.py --gb 20 --stream --value-size 1024 --connections 4 --tmp /big/disk
    bench/rss.py --gb 20 --stream --value-size 1024 --rate-mb 8
                                 # the same at a capped pace (a machine shared with others)
                                 # XADD big * v <value> into one stream instead of SET keys

The budget is block cache + hot cache + 4 column families x 3 memtables x write buffer + 3 x the
write-back tier's dirty limit (`memory-tier-dirty-size`: an active and a frozen layer, a third
at worst while a checkpoint lags); the rest of RSS (RocksDB's table readers, index/filter blocks of open files, allocator slack, the
binary) is reported as overhead. Values are random (incompressible) so the data set really is
N GB on disk. Uses $STRATA_SERVER, else ${CARGO_TARGET_DIR:-target}/release/strata-server;
the data dir is a temp dir under --tmp (default /tmp), removed afterwards unless --keep (and on
SIGTERM or Ctrl-C). On a shared disk, loading stops early, and the figures say so, when the
filesystem's free space falls below --min-free-gb (default 10).
"""

import argparse
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

from harness import Incomplete, Server, encode_command, parse_reply  # noqa: E402

UNITS = {"kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30}


def size(text: str) -> int:
    t = text.lower()
    for u, m in UNITS.items():
        if t.endswith(u):
            return int(float(t[: -len(u)]) * m)
    return int(t)


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def rss_parts_mb(pid: int) -> str:
    """RssAnon and RssFile of /proc/<pid>/status, in MB (what grows: heap or mapped files)."""
    parts = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:")):
                parts[line.split(":")[0][3:].lower()] = int(line.split()[1]) >> 10
    return " ".join(f"{k} {v}" for k, v in parts.items())


def info_memory(port: int) -> dict:
    """The engine's memory figures of INFO (memtables, table readers, the tier's layers), in bytes."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(encode_command("INFO", "all"))
        buf = b""
        while True:
            buf += s.recv(1 << 20)
            try:
                text = parse_reply(buf)[0].decode(errors="replace")
                break
            except Incomplete:
                continue
    want = ("strata_memtables", "strata_table_readers", "strata_tier_dirty_bytes",
            "strata_tier_checkpointing_bytes", "strata_l0_files")
    return {k: int(v) for k, v in (line.split(":", 1) for line in text.split("\r\n") if ":" in line)
            if k in want and v.strip().isdigit()}


def dir_bytes(path) -> int:
    """Bytes in the files of `path`; files compaction deletes while we look count as gone."""
    total = 0
    for name in os.listdir(path):
        try:
            total += os.path.getsize(os.path.join(path, name))
        except FileNotFoundError:
            pass
    return total


def du_bytes(path) -> int:
    """Bytes in the files under `path` (subdirectories included); vanished files count as gone."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except FileNotFoundError:
                pass
    return total


def pct(xs: list, p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def stream_writer(port, head, value, lo, hi, pipeline, done_count, stop_flag, errors, per_sec=0.0):
    """One writer process of `stream_run`: XADDs of entries lo..hi, `pipeline` at a time; at most
    `per_sec` entries a second when that is set (it sleeps while ahead of that pace)."""
    sock = socket.create_connection(("127.0.0.1", port))
    pool = os.urandom(1 << 22)
    began = time.monotonic()
    try:
        i = lo
        while i < hi and not stop_flag.value:
            if per_sec:
                ahead = (i - lo) / per_sec - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
            upto = min(hi, i + pipeline)
            # The entry's number, then a slice of a random pool at an offset of its own: one value
            # repeated would be compressed away within a block. (Slice once: `pool[at:][:rest]`
            # copied the pool's tail, up to 4 MB, per entry and held the writers to ~3 MB/s.)
            rest = len(value) - 12
            span = len(pool) - rest
            sock.sendall(b"".join(head + b"%012d" % j + pool[(j * 7919) % span:(j * 7919) % span + rest] + b"\r\n"
                                  for j in range(i, upto)))
            want, buf = 2 * (upto - i), b""  # an ID is a bulk string: two lines
            while buf.count(b"\r\n") < want:
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("connection closed")
                buf += chunk
            if buf.count(b"$") != upto - i or buf.startswith(b"-"):
                raise RuntimeError(f"error reply: {buf[:200]!r}")
            with done_count.get_lock():
                done_count.value += upto - i
            i = upto
    except Exception as e:  # noqa: BLE001 - reported as the reason loading stopped
        errors.put(f"writer failed: {e!r}")
        stop_flag.value = 1
    finally:
        sock.close()


def stream_run(args, server, budget: int) -> str | None:
    """Appends `args.gb` GB of `XADD big * v <value>` over `args.connections` connections (each
    pipelining `args.pipeline` commands), sampling RSS every second; prints RSS, MB/s and disk
    bytes every 10 s, then XRANGE latencies at the stream's start, middle and end. Returns why
    loading stopped early, if it did."""
    pid = server.proc.pid
    n = int(args.gb * (1 << 30)) // args.value_size
    value = os.urandom(args.value_size)
    head = b"*5\r\n$4\r\nXADD\r\n$3\r\nbig\r\n$1\r\n*\r\n$1\r\nv\r\n$%d\r\n" % args.value_size
    per_sec = args.rate_mb * (1 << 20) / args.value_size / args.connections if args.rate_mb else 0.0
    print(f"appending {args.gb} GB to one stream: {n} XADDs of {args.value_size} B over {args.connections} "
          f"connections, pipeline {args.pipeline}"
          + (f", at most {args.rate_mb} MB/s" if args.rate_mb else "") + f"; budget {budget >> 20} MB", flush=True)
    # Writers are processes (one client thread would be the bottleneck), each appending its
    # share of the entries; they count what was acknowledged in shared counters.
    done_count = multiprocessing.Value("q", 0)
    stop_flag = multiprocessing.Value("i", 0)
    errors = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=stream_writer, daemon=True,
                                     args=(server.port, head, value, k * n // args.connections,
                                           (k + 1) * n // args.connections, args.pipeline, done_count,
                                           stop_flag, errors, per_sec))
             for k in range(args.connections)]
    state = {"stop": None}
    start = time.monotonic()
    for p in procs:
        p.start()
    samples = []  # (seconds, entries done, RSS KB)
    last_print, last_done, last_t = start, 0, start
    while any(p.is_alive() for p in procs):
        time.sleep(1)
        now = time.monotonic()
        done = done_count.value
        rss = rss_kb(pid)
        samples.append((now - start, done, rss))
        if now - last_print >= 10:
            st = os.statvfs(server.dir)
            free = st.f_bavail * st.f_frsize
            if free < args.min_free_gb * (1 << 30) and not state["stop"]:
                state["stop"] = (f"free disk space fell to {free / (1 << 30):.1f} GB "
                                 f"(< --min-free-gb {args.min_free_gb})")
                stop_flag.value = 1
            mbs = (done - last_done) * args.value_size / (1 << 20) / (now - last_t)
            print(f"  {now - start:5.0f}s {done * args.value_size / (1 << 30):6.2f} GB  RSS {rss >> 10} MB "
                  f"(peak {max(x[2] for x in samples) >> 10})  {mbs:5.1f} MB/s  on disk "
                  f"{du_bytes(server.dir) >> 20} MB", flush=True)
            # Where the memory is: the process's heap and file pages, and the engine's own figures.
            try:
                engine = info_memory(server.port)
            except OSError:
                engine = {}
            print("         " + rss_parts_mb(pid) + "  " + " ".join(
                f"{k.removeprefix('strata_')} {v if k.endswith('files') else v >> 20}"
                for k, v in engine.items()), flush=True)
            last_print, last_done, last_t = now, done, now
    elapsed = time.monotonic() - start
    done = done_count.value
    if not errors.empty():
        state["stop"] = state["stop"] or errors.get()
    peak = max(x[2] for x in samples) if samples else rss_kb(pid)
    loaded = done * args.value_size / (1 << 30)
    if state["stop"]:
        print(f"STOPPED EARLY at {loaded:.2f} of {args.gb} GB: {state['stop']}")
    print(f"appended {loaded:.2f} GB ({done} entries) in {elapsed:.0f}s ({done / elapsed:,.0f} XADD/s, "
          f"{loaded * 1024 / elapsed:.1f} MB/s); on disk {du_bytes(server.dir) >> 20} MB")
    # Throughput per tenth of the run, and RSS's peak in each.
    tenth = max(1, len(samples) // 10)
    parts = []
    for k in range(0, len(samples), tenth):
        chunk = samples[k:k + tenth]
        before = samples[k - 1] if k else (0.0, 0, 0)
        secs = chunk[-1][0] - before[0]
        mbs = (chunk[-1][1] - before[1]) * args.value_size / (1 << 20) / max(secs, 1e-9)
        parts.append(f"{before[0]:.0f}-{chunk[-1][0]:.0f}s {mbs:.1f} MB/s peak RSS {max(x[2] for x in chunk) >> 10} MB")
    print("over time: " + "; ".join(parts))
    print(f"RSS: peak {peak >> 10} MB against the budget of {budget >> 20} MB (sampled every second)")
    # XRANGE of 100 entries at the start, the middle and the end.
    sock = socket.create_connection(("127.0.0.1", server.port))

    def call(*a) -> bytes:
        sock.sendall(encode_command(*a))
        buf = b""
        while True:
            buf += sock.recv(1 << 20)
            try:
                parse_reply(buf)
                return buf
            except Incomplete:
                continue

    first = parse_reply(call("XRANGE", "big", "-", "+", "COUNT", 1))[0][0][0].decode()
    last = parse_reply(call("XREVRANGE", "big", "+", "-", "COUNT", 1))[0][0][0].decode()
    f_ms, l_ms = int(first.split("-")[0]), int(last.split("-")[0])
    mid = parse_reply(call("XRANGE", "big", str((f_ms + l_ms) // 2), "+", "COUNT", 1))[0][0][0].decode()
    for name, at, rev in (("start", first, False), ("middle", mid, False), ("end", last, True)):
        times = []
        for _ in range(args.xrange_requests):
            t = time.perf_counter()
            reply = parse_reply(call("XREVRANGE", "big", at, "-", "COUNT", 100) if rev
                                else call("XRANGE", "big", at, "+", "COUNT", 100))[0]
            times.append((time.perf_counter() - t) * 1000)
            assert len(reply) == 100, len(reply)
        print(f"XRANGE 100 at the {name} ({at}): p50 {pct(times, 50):.2f} ms, p99 {pct(times, 99):.2f} ms "
              f"({args.xrange_requests} requests, one connection)")
    sock.close()
    return state["stop"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=20.0)
    ap.add_argument("--value-size", type=int, default=4096)
    ap.add_argument("--pipeline", type=int, default=64)
    ap.add_argument("--block-cache", default="64mb")
    ap.add_argument("--write-buffer", default="16mb")
    ap.add_argument("--hot-cache", default="32mb")
    ap.add_argument("--tmp", default=None, help="where the data dir goes")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--stream", action="store_true", help="append to one stream (XADD big * v <value>)")
    ap.add_argument("--dirty-size", default="64mb", help="memory-tier-dirty-size")
    ap.add_argument("--connections", type=int, default=4, help="--stream: connections appending at once")
    ap.add_argument("--rate-mb", type=float, default=0.0,
                    help="--stream: append at most this many MB/s in all (0: as fast as the server takes them)")
    ap.add_argument("--xrange-requests", type=int, default=200, help="--stream: XRANGEs timed at each place")
    ap.add_argument("--min-free-gb", type=float, default=10.0,
                    help="stop loading when the data dir's filesystem has less free space")
    args = ap.parse_args()
    # SIGTERM ends the run like Ctrl-C: the harness's exit handler kills the server and deletes
    # the data dir.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.tmp:
        os.environ["TMPDIR"] = args.tmp
    budget = (size(args.block_cache) + size(args.hot_cache) + 4 * 3 * size(args.write_buffer)
              + 3 * size(args.dirty_size))
    server = Server("strata", {"block_cache_size": args.block_cache, "write_buffer_size": args.write_buffer,
                               "hot_cache_size": args.hot_cache, "appendfsync": "everysec",
                               "memory_tier_dirty_size": args.dirty_size})
    server.start()
    if args.stream:
        print(f"block cache {args.block_cache}, hot cache {args.hot_cache}, 12 x {args.write_buffer} memtables, "
              f"3 x {args.dirty_size} tier", flush=True)
        try:
            stream_run(args, server, budget)
        finally:
            server.cleanup()
            shutil.rmtree(server.workdir, ignore_errors=True)
        return
    pid = server.proc.pid
    peak = [rss_kb(pid)]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_kb(pid))
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    total = int(args.gb * (1 << 30))
    n = total // args.value_size
    what = "stream entries" if args.stream else "keys"
    print(f"loading {args.gb} GB: {n} {what} of {args.value_size} B; budget {budget >> 20} MB "
          f"(block cache {args.block_cache} + hot cache {args.hot_cache} + 12 x {args.write_buffer} memtables)",
          flush=True)
    sock = socket.create_connection(("127.0.0.1", server.port))
    start = time.monotonic()
    value = os.urandom(args.value_size)
    last_report = start
    stopped_early = None
    i = 0
    while i < n:
        batch = min(args.pipeline, n - i)
        # Vary the value cheaply so blocks don't deduplicate: the key index in front.
        if args.stream:
            sock.sendall(b"".join(encode_command("XADD", "big", "*", "v", b"%012d" % (i + j) + value[12:])
                                  for j in range(batch)))
        else:
            sock.sendall(b"".join(encode_command("SET", b"key:%012d" % (i + j), b"%012d" % (i + j) + value[12:])
                                  for j in range(batch)))
        # A SET answers +OK (one line), an XADD its ID as a bulk string (two).
        lines = 2 * batch if args.stream else batch
        got = 0
        buf = b""
        while got < lines:
            buf += sock.recv(65536)
            got = buf.count(b"\r\n")
        if args.stream:
            assert buf.count(b"$") == batch and b"-" not in buf[:1], buf[:200]
        else:
            assert buf == b"+OK\r\n" * batch, buf[:200]
        i += batch
        now = time.monotonic()
        if now - last_report > 10:
            last_report = now
            st = os.statvfs(server.dir)
            free = st.f_bavail * st.f_frsize
            if free < args.min_free_gb * (1 << 30):
                stopped_early = f"free disk space fell to {free / (1 << 30):.1f} GB (< --min-free-gb {args.min_free_gb})"
                print(f"  stopping early: {stopped_early}", flush=True)
                break
            du = dir_bytes(server.dir)
            print(f"  {i * args.value_size / (1 << 30):.2f} GB in {now - start:.0f}s, RSS {rss_kb(pid) >> 10} MB, "
                  f"peak {peak[0] >> 10} MB, on disk {du >> 20} MB", flush=True)
    elapsed = time.monotonic() - start
    time.sleep(1)
    sock.sendall(encode_command("INFO", "memory"))
    time.sleep(0.2)
    info = sock.recv(1 << 16).decode(errors="replace")
    breakdown = {k: int(v) for k, v in (line.split(":", 1) for line in info.split("\r\n") if ":" in line)
                 if k in ("strata_memtables", "strata_table_readers") and v.strip().isdigit()}
    stop.set()
    final = rss_kb(pid)
    du = dir_bytes(server.dir)
    loaded = i * args.value_size / (1 << 30)
    if stopped_early:
        print(f"STOPPED EARLY at {loaded:.2f} of {args.gb} GB: {stopped_early}")
    print(f"loaded {loaded:.2f} GB ({i} {what}) in {elapsed:.0f}s ({i / elapsed:.0f} {'XADD' if args.stream else 'SET'}/s, "
          f"{loaded * 1024 / elapsed:.1f} MB/s); on disk {du >> 20} MB")
    print(f"RSS: peak {peak[0] >> 10} MB, final {final >> 10} MB; budget {budget >> 20} MB; "
          f"overhead over budget {(peak[0] * 1024 - budget) >> 20} MB")
    print("at the end: " + ", ".join(f"{k} {v >> 20} MB" for k, v in breakdown.items()))
    if args.keep:
        server.stop()
        print(f"data kept in {server.dir}")
    else:
        server.cleanup()
        shutil.rmtree(server.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
