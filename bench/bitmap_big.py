#!/usr/bin/env python3
"""Huge sparse bitmap, Strata beside Redis (issue 12): SETBIT at a 1 GB offset, then BITCOUNT.

Starts a redis-server with `--appendonly yes --appendfsync everysec` and a strata-server with
`--appendfsync everysec`, both with `--proto-max-bulk-len 2gb` (a bit offset must stay below
8 x proto-max-bulk-len; the default 512 MB allows offsets up to 2^32-1), each on a free loopback
port in its own temp dir. Then, on each in turn (`--repeat` rounds, each on a fresh key), over
one connection:

    SETBIT big<round> <OFFSET> 1         OFFSET = 8 * 2^30 - 1 by default: the last bit of 1 GB
    BITCOUNT big<round>                  the whole string
    BITCOUNT big<round> -1 -1            its last byte
    GETBIT big<round> <OFFSET>
    SETBIT big<round> <OFFSET - 8> 1     a second point write into the same bitmap

and prints, per command, the median wall time (client side, one request at a time), and for
the first SETBIT the bytes the server wrote (`wchar` of /proc/<pid>/io: every write(2) it made,
WAL/AOF and table files included, measured over the command plus two seconds for the everysec
sync to run) and its resident memory afterwards. Redis holds the string in memory, so its SETBIT
allocates and zeroes 1 GB and its BITCOUNT reads 1 GB; Strata stores one 4 KB fragment
(docs/format.md, "Big strings").

Usage: bench/bitmap_big.py [--strata PATH] [--offset BITS] [--repeat N]
       (default binary: $CARGO_TARGET_DIR or ./target, release)
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conn:
    """A minimal RESP client: one request, one reply (integers, bulk strings, simple/errors)."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.buf = b""

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def call(self, *args):
        req = [b"*%d\r\n" % len(args)]
        for a in args:
            b = str(a).encode()
            req.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(req))
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b":":
            return int(rest)
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        raise RuntimeError(f"unexpected reply {line!r}")


def wait_ready(port: int, timeout: float = 60.0) -> Conn:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            c = Conn(port)
            if c.call("PING") == "PONG":
                return c
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server on port {port} did not start")


def proc_io(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def timed(conn: Conn, *args):
    t = time.perf_counter()
    reply = conn.call(*args)
    return reply, (time.perf_counter() - t) * 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..",
                                                             "target"))
    p.add_argument("--strata", default=os.path.join(target, "release", "strata-server"))
    p.add_argument("--offset", type=int, default=8 * 2**30 - 1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tmp-root", default=None)
    opts = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="bitmap-bench-", dir=opts.tmp_root)
    servers, procs = {}, []
    try:
        for name in ["redis-aof", "strata"]:
            port, d = free_port(), os.path.join(tmp, name)
            os.makedirs(d)
            if name == "strata":
                cmd = [opts.strata, "--bind", "127.0.0.1", "--port", str(port), "--dir", d,
                       "--appendfsync", "everysec", "--proto-max-bulk-len", "2gb"]
            else:
                cmd = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", d,
                       "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                       "--proto-max-bulk-len", "2gb"]
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(proc)
            servers[name] = (proc, wait_ready(port), d)
        off = opts.offset
        steps = [("SETBIT off 1", lambda k: ("SETBIT", k, off, 1)),
                 ("BITCOUNT", lambda k: ("BITCOUNT", k)),
                 ("BITCOUNT -1 -1", lambda k: ("BITCOUNT", k, -1, -1)),
                 ("GETBIT off", lambda k: ("GETBIT", k, off)),
                 ("SETBIT off-8 1", lambda k: ("SETBIT", k, off - 8, 1))]
        ms = {(n, s): [] for n in servers for s, _ in steps}
        written, rss, replies = {n: [] for n in servers}, {n: [] for n in servers}, {}
        for r in range(opts.repeat):
            for name, (proc, conn, _) in servers.items():
                key = f"big{r}"
                io0 = proc_io(proc.pid)["wchar"]
                for label, argv in steps:
                    reply, t = timed(conn, *argv(key))
                    ms[(name, label)].append(t)
                    replies.setdefault((name, label), reply)
                    if label.startswith("SETBIT off 1"):
                        time.sleep(2)  # the everysec sync of the log
                        written[name].append(proc_io(proc.pid)["wchar"] - io0)
                        rss[name].append(rss_mb(proc.pid))
                conn.call("DEL", key)
        print(f"bit offset {off} ({(off >> 3) / 2**20:.0f} MB), {opts.repeat} rounds, medians; "
              f"load {os.getloadavg()[0]:.1f}")
        print(f"{'command':<18} {'redis-aof ms':>13} {'strata ms':>11}   replies (redis / strata)")
        for label, _ in steps:
            a, b = (statistics.median(ms[(n, label)]) for n in servers)
            rep = " / ".join(str(replies[(n, label)]) for n in servers)
            print(f"{label:<18} {a:>13.3f} {b:>11.3f}   {rep}")
        for n in servers:
            print(f"{n}: first SETBIT wrote {statistics.median(written[n]) / 1024:.1f} KiB "
                  f"(wchar, + 2 s), RSS after it {statistics.median(rss[n]):.0f} MB; data dir "
                  f"{du_kib(servers[n][2]) / 1024:.1f} MiB at the end")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def du_kib(path: str) -> int:
    out = subprocess.run(["du", "-sk", path], capture_output=True, text=True).stdout
    return int(out.split()[0]) if out else 0


if __name__ == "__main__":
    sys.exit(main())
