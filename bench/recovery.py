#!/usr/bin/env python3
"""Crash-recovery benchmark for strata-server (python3 stdlib only).

Checks the requirement "after a kill -9 with 10 million keys on disk, the server answers PING
within a second":

  1. start strata-server on a free loopback port in a temp dir with --appendfsync everysec;
  2. load --keys N string keys (default 10,000,000) with large pipelined MSET batches over raw
     sockets (--batch keys per MSET, --inflight MSETs in flight per connection, --conns
     connections);
  3. wait for the once-a-second WAL sync, then kill -9 the server (by PID);
  4. restart it on the same directory and measure, from the moment the process is spawned,
     the time to the first +PONG and the time to the first successful GET of a random loaded
     key (its value is checked), then a few more random GETs;
  5. stop the server (by PID) and remove the temp dir, also on error or Ctrl-C.

Every phase is bounded: loading stops after --max-load-seconds (the figures then say how many
keys were loaded), each start after --start-timeout. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

KEY_FMT = "key:%012d"  # fixed width: 16 bytes
KEY_LEN = 16


def log(msg: str) -> None:
    print(f"[recovery] {msg}", file=sys.stderr, flush=True)


def strata_binary(explicit: str | None) -> str:
    if explicit:
        return os.path.abspath(explicit)
    if os.environ.get("STRATA_SERVER"):
        return os.path.abspath(os.environ["STRATA_SERVER"])
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    return os.path.join(os.path.abspath(os.path.join(REPO, target)), "release", "strata-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def value_of(i: int, size: int) -> bytes:
    v = b"v%d:" % i
    return (v * (size // len(v) + 1))[:size]


class Server:
    """One strata-server process; stopped by PID."""

    def __init__(self, binary: str, port: int, data: str, logfile: str):
        self.binary, self.port, self.data, self.logfile = binary, port, data, logfile
        self.proc: subprocess.Popen | None = None
        self.spawned_at = 0.0

    def spawn(self) -> None:
        args = [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self.data,
                "--appendfsync", "everysec"]
        out = open(self.logfile, "ab")
        self.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        out.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self, grace: float = 10.0) -> None:
        if not self.alive():
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def log_tail(self, n: int = 20) -> str:
        try:
            with open(self.logfile, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""


def read_reply(sock: socket.socket, buf: bytearray) -> bytes:
    """Reads one simple/error/integer/bulk reply (enough for PING/GET); returns it raw."""
    while True:
        end = buf.find(b"\r\n")
        if end >= 0:
            if buf[:1] == b"$":
                n = int(buf[1:end])
                total = end + 2 + (n + 2 if n >= 0 else 0)
                if len(buf) >= total:
                    out = bytes(buf[:total])
                    del buf[:total]
                    return out
            else:
                out = bytes(buf[:end + 2])
                del buf[:end + 2]
                return out
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk


def command(*args: bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def wait_pong(server: Server, deadline: float) -> float:
    """Polls until the server answers PING; returns seconds since spawn."""
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"server exited with {server.proc.returncode}:\n{server.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=2) as s:
                s.sendall(command(b"PING"))
                if read_reply(s, bytearray()) == b"+PONG\r\n":
                    return time.monotonic() - server.spawned_at
        except OSError:
            pass
        time.sleep(0.002)
    raise TimeoutError(f"no PONG before the deadline:\n{server.log_tail()}")


class Loader:
    """Loads keys [lo, hi) over one connection: MSETs of `batch` keys, `inflight` in flight."""

    def __init__(self, port: int, lo: int, hi: int, batch: int, inflight: int, value_size: int,
                 stop_at: float):
        self.port, self.lo, self.hi = port, lo, hi
        self.batch, self.inflight, self.value_size, self.stop_at = batch, inflight, value_size, stop_at
        self.done = 0  # keys acknowledged
        self.error: str | None = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def encode(self, start: int, n: int) -> bytes:
        vs = self.value_size
        head = b"*%d\r\n$4\r\nMSET\r\n" % (1 + 2 * n)
        parts = [head]
        for i in range(start, start + n):
            parts.append(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (KEY_LEN, (KEY_FMT % i).encode(), vs,
                                                           value_of(i, vs)))
        return b"".join(parts)

    def run(self) -> None:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=120) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                buf = bytearray()
                pending: list[int] = []  # key counts of the MSETs in flight
                nxt = self.lo
                while nxt < self.hi or pending:
                    while nxt < self.hi and len(pending) < self.inflight and time.monotonic() < self.stop_at:
                        n = min(self.batch, self.hi - nxt)
                        s.sendall(self.encode(nxt, n))
                        pending.append(n)
                        nxt += n
                    if not pending:
                        break  # out of time
                    reply = read_reply(s, buf)
                    if reply != b"+OK\r\n":
                        self.error = reply.decode(errors="replace").strip()
                        return
                    self.done += pending.pop(0)
                self.hi = nxt  # keys actually sent (all acknowledged)
        except Exception as e:  # reported by the caller
            self.error = repr(e)


def load(port: int, n: int, args) -> tuple[int, float, list[tuple[int, int]]]:
    """Loads up to n keys; returns (keys loaded, seconds, loaded ranges)."""
    t0 = time.monotonic()
    stop_at = t0 + args.max_load_seconds
    per = (n + args.conns - 1) // args.conns
    loaders = [Loader(port, lo, min(lo + per, n), args.batch, args.inflight, args.value_size, stop_at)
               for lo in range(0, n, per)]
    for ld in loaders:
        ld.thread.start()
    last = t0
    while any(ld.thread.is_alive() for ld in loaders):
        time.sleep(0.5)
        now = time.monotonic()
        if now - last >= args.progress:
            last = now
            done = sum(ld.done for ld in loaders)
            log(f"loaded {done:,} keys in {now - t0:.0f}s ({done / (now - t0):,.0f} keys/s)")
    for ld in loaders:
        ld.thread.join()
        if ld.error:
            raise RuntimeError(f"load failed: {ld.error}")
    elapsed = time.monotonic() - t0
    return sum(ld.done for ld in loaders), elapsed, [(ld.lo, ld.lo + ld.done) for ld in loaders]


def dir_size(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def pick_key(ranges: list[tuple[int, int]], rng: random.Random) -> int:
    lo, hi = rng.choice([r for r in ranges if r[1] > r[0]])
    return rng.randrange(lo, hi)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=10_000_000, help="keys to load (default 10,000,000)")
    p.add_argument("--batch", type=int, default=1000, help="keys per MSET (default 1000)")
    p.add_argument("--inflight", type=int, default=8, help="MSETs in flight per connection (default 8)")
    p.add_argument("--conns", type=int, default=2, help="loading connections (default 2)")
    p.add_argument("--value-size", type=int, default=16, help="value bytes (default 16)")
    p.add_argument("--max-load-seconds", type=float, default=900,
                   help="stop loading after this long and measure with what was loaded (default 900)")
    p.add_argument("--settle", type=float, default=1.5,
                   help="seconds between the last acknowledged MSET and kill -9 (default 1.5: "
                        "one everysec WAL sync)")
    p.add_argument("--start-timeout", type=float, default=120, help="bound on each start (default 120s)")
    p.add_argument("--gets", type=int, default=100, help="random GETs checked after the first (default 100)")
    p.add_argument("--progress", type=float, default=15, help="progress line every N seconds")
    p.add_argument("--server", help="strata-server binary (default $STRATA_SERVER or "
                                    "${CARGO_TARGET_DIR:-target}/release/strata-server)")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--keep-tmp", action="store_true", help="keep the temp dir")
    args = p.parse_args()
    if args.keys <= 0 or args.batch <= 0 or args.inflight <= 0 or args.conns <= 0:
        p.error("--keys, --batch, --inflight and --conns must be positive")

    binary = strata_binary(args.server)
    if not os.path.exists(binary):
        log(f"strata-server not found at {binary}; build it (cargo build --release --workspace --bins)")
        return 2

    tmp = tempfile.mkdtemp(prefix="strata-recovery-")
    data = os.path.join(tmp, "data")
    port = free_port()
    servers: list[Server] = []

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    rng = random.Random(1234)
    figures: dict = {"binary": binary, "requested_keys": args.keys, "batch": args.batch,
                     "inflight": args.inflight, "conns": args.conns, "value_size": args.value_size}
    try:
        first = Server(binary, port, data, os.path.join(tmp, "server-1.log"))
        servers.append(first)
        first.spawn()
        figures["first_start_to_pong_s"] = wait_pong(first, time.monotonic() + args.start_timeout)
        log(f"server pid {first.proc.pid} on port {port}, data in {data}; loading {args.keys:,} keys")

        loaded, load_s, ranges = load(port, args.keys, args)
        figures.update(loaded_keys=loaded, load_seconds=load_s, load_keys_per_s=loaded / load_s)
        log(f"loaded {loaded:,} keys in {load_s:.1f}s ({loaded / load_s:,.0f} keys/s)")
        if loaded == 0:
            raise RuntimeError("no keys loaded")
        time.sleep(args.settle)
        figures["dir_bytes_at_kill"] = dir_size(data)
        first.kill9()
        log(f"kill -9 {first.proc.pid} (exit {first.proc.returncode}); "
            f"data dir {figures['dir_bytes_at_kill'] / 2**20:,.0f} MiB")

        second = Server(binary, port, data, os.path.join(tmp, "server-2.log"))
        servers.append(second)
        second.spawn()
        deadline = second.spawned_at + args.start_timeout
        figures["restart_to_pong_s"] = wait_pong(second, deadline)

        # First successful GET of a random loaded key, timed from the spawn too.
        probe = pick_key(ranges, rng)
        want = b"$%d\r\n%s\r\n" % (args.value_size, value_of(probe, args.value_size))
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            buf = bytearray()
            s.sendall(command(b"GET", (KEY_FMT % probe).encode()))
            got = read_reply(s, buf)
            figures["restart_to_first_get_s"] = time.monotonic() - second.spawned_at
            if got != want:
                raise RuntimeError(f"GET {KEY_FMT % probe} after restart returned {got!r}, want {want!r}")
            # More random keys (and the last key of each range: the tail of the WAL).
            probes = [pick_key(ranges, rng) for _ in range(args.gets)] + [hi - 1 for lo, hi in ranges if hi > lo]
            lat = []
            for k in probes:
                t = time.monotonic()
                s.sendall(command(b"GET", (KEY_FMT % k).encode()))
                got = read_reply(s, buf)
                lat.append(time.monotonic() - t)
                want = b"$%d\r\n%s\r\n" % (args.value_size, value_of(k, args.value_size))
                if got != want:
                    raise RuntimeError(f"GET {KEY_FMT % k} after restart returned {got!r}")
            lat.sort()
            figures["checked_gets"] = len(probes) + 1
            figures["get_p50_ms"] = lat[len(lat) // 2] * 1000
            figures["get_max_ms"] = lat[-1] * 1000
        figures["pong_within_1s"] = figures["restart_to_pong_s"] < 1.0

        print(f"keys loaded            {loaded:,} (requested {args.keys:,})")
        print(f"load                   {load_s:.1f} s, {loaded / load_s:,.0f} keys/s "
              f"(MSET x{args.batch}, {args.inflight} in flight x {args.conns} conns)")
        print(f"data dir at kill -9    {figures['dir_bytes_at_kill'] / 2**20:,.0f} MiB")
        print(f"restart -> first PONG  {figures['restart_to_pong_s'] * 1000:.0f} ms")
        print(f"restart -> first GET   {figures['restart_to_first_get_s'] * 1000:.0f} ms "
              f"(random loaded key, value checked)")
        print(f"random GETs checked    {figures['checked_gets']} (p50 {figures['get_p50_ms']:.2f} ms, "
              f"max {figures['get_max_ms']:.2f} ms)")
        print(f"PING within 1 s        {'yes' if figures['pong_within_1s'] else 'NO'}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=2)
        return 0 if figures["pong_within_1s"] else 1
    except (Exception, KeyboardInterrupt) as e:
        log(f"failed: {e}")
        for s in servers:
            tail = s.log_tail()
            if tail:
                log(f"log of {s.logfile}:\n{tail}")
        return 1
    finally:
        for s in servers:
            try:
                s.stop()
            except Exception as e:  # keep cleaning up
                log(f"stopping pid {s.proc.pid if s.proc else '?'}: {e}")
        if args.keep_tmp:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
