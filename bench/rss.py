#!/usr/bin/env python3
"""Resource bounds: load N GB into strata-server configured with small caches and report its
peak RSS against the configured budget (not run in CI; docs/reliability.md has figures).

    bench/rss.py                 # 20 GB (long: hours on a small machine)
    bench/rss.py --gb 2          # a quicker figure
    bench/rss.py --gb 2 --value-size 4096 --block-cache 64mb --write-buffer 16mb --hot-cache 32mb
    bench/rss.py --gb 4 --stream  # XADD big * v <value> into one stream instead of SET keys

The budget is block cache + hot cache + 4 column families x 3 memtables x write buffer; the
rest of RSS (RocksDB's table readers, index/filter blocks of open files, allocator slack, the
binary) is reported as overhead. Values are random (incompressible) so the data set really is
N GB on disk. Uses $STRATA_SERVER, else ${CARGO_TARGET_DIR:-target}/release/strata-server;
the data dir is a temp dir under --tmp (default /tmp), removed afterwards unless --keep (and on
SIGTERM or Ctrl-C). On a shared disk, loading stops early, and the figures say so, when the
filesystem's free space falls below --min-free-gb (default 10).
"""

import argparse
import os
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

from harness import Server, encode_command  # noqa: E402

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


def dir_bytes(path) -> int:
    """Bytes in the files of `path`; files compaction deletes while we look count as gone."""
    total = 0
    for name in os.listdir(path):
        try:
            total += os.path.getsize(os.path.join(path, name))
        except FileNotFoundError:
            pass
    return total


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
    ap.add_argument("--min-free-gb", type=float, default=10.0,
                    help="stop loading when the data dir's filesystem has less free space")
    args = ap.parse_args()
    # SIGTERM ends the run like Ctrl-C: the harness's exit handler kills the server and deletes
    # the data dir.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.tmp:
        os.environ["TMPDIR"] = args.tmp
    budget = size(args.block_cache) + size(args.hot_cache) + 4 * 3 * size(args.write_buffer)
    server = Server("strata", {"block_cache_size": args.block_cache, "write_buffer_size": args.write_buffer,
                               "hot_cache_size": args.hot_cache, "appendfsync": "everysec"})
    server.start()
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
