#!/usr/bin/env python3
"""RDB import benchmark (issue 17): a dump.rdb made by redis-server, loaded by redis-server and
imported by `strata -d DIR import` in the same run (python3 stdlib). See bench/README.md,
"RDB import (issue 17)".

  make     fills a redis-server with --mb MiB of data and SAVEs it to <scratch>/dump.rdb: strings
           of --value-size random bytes (a fifth with a TTL an hour away), and collections of every
           type in their compact encodings (hashes of 10 fields, lists of 20 items, sets of 10
           integers and of 10 strings, sorted sets of 10 members) and large ones (1,000-5,000
           members), about a third of the bytes in collections.
  measure  loads the file into a fresh redis-server (time from its log's "DB loaded from disk")
           and imports it with `strata -d DIR import FILE` (wall time, peak RSS from getrusage),
           one after the other, --repeat times; prints MB/s and keys/s of each.

Everything lives under --scratch (default /work/scratch/rdbspeed); `measure --clean` removes the
imported directories as it goes. Servers bind 127.0.0.1 on free ports and are stopped by PID.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import REPO, BenchError, RespConn, encode_command, free_port, kill_proc, log  # noqa: E402

MIB = 1 << 20


def strata_cli_bin():
    target_dir = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    return os.environ.get("STRATA_CLI") or os.path.join(target_dir, "release", "strata")


def start_redis(dir_, port, extra=()):
    log_path = os.path.join(dir_, "redis.log")
    proc = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", dir_,
         "--save", "", "--appendonly", "no", "--logfile", log_path, *extra],
        start_new_session=True)
    return proc, log_path


def wait_loaded(port, proc, timeout=3600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError("redis-server exited")
        try:
            c = RespConn(port, timeout=5)
            r = c.call("PING")
            c.close()
            if r == "PONG":
                return
        except (OSError, BenchError):
            pass
        time.sleep(0.05)
    raise BenchError("redis-server did not finish loading")


class Pipe:
    """Pipelined writes, replies read and checked every `batch` commands."""

    def __init__(self, port, batch=2000):
        self.c = RespConn(port, timeout=120)
        self.batch = batch
        self.buf = []

    def send(self, *args):
        self.buf.append(encode_command(*args))
        if len(self.buf) >= self.batch:
            self.flush()

    def flush(self):
        if not self.buf:
            return
        self.c.sock.sendall(b"".join(self.buf))
        for _ in self.buf:
            r = self.c.read_reply()
            if isinstance(r, BenchError):
                raise r
        self.buf = []


def make(args):
    os.makedirs(args.scratch, exist_ok=True)
    port = free_port()
    proc, log_path = start_redis(args.scratch, port)
    rnd = random.Random(17)
    try:
        wait_loaded(port, proc)
        p = Pipe(port)
        target = args.mb * MIB
        vs = args.value_size
        written = 0
        n = 0

        def val(size):
            return rnd.randbytes(size // 2).hex().encode()

        # About 2/3 strings, 1/3 collections, interleaved in rounds so any prefix is a mix.
        while written < target:
            for _ in range(200):
                key = b"str:%d" % n
                if n % 5 == 0:
                    p.send("SET", key, val(vs), "EX", 3600)
                else:
                    p.send("SET", key, val(vs))
                written += vs + 20
                n += 1
            i = n // 200
            p.send("HSET", b"hash:%d" % i, *[x for f in range(10) for x in (b"f%d" % f, val(40))])
            p.send("RPUSH", b"list:%d" % i, *[val(20) for _ in range(20)])
            p.send("SADD", b"iset:%d" % i, *[rnd.randrange(1 << 40) for _ in range(10)])
            p.send("SADD", b"sset:%d" % i, *[val(16) for _ in range(10)])
            p.send("ZADD", b"zset:%d" % i, *[x for m in range(10) for x in (rnd.random() * 1000, val(16))])
            written += 10 * 50 + 20 * 30 + 10 * 20 + 10 * 30 + 10 * 40
            if i % 200 == 0:
                big = i // 200
                p.send("EXPIRE", b"zset:%d" % i, 7200)
                for chunk in range(5):
                    p.send("HSET", b"bighash:%d" % big, *[x for f in range(200) for x in (b"f%d:%d" % (chunk, f), val(40))])
                    p.send("RPUSH", b"biglist:%d" % big, *[val(40) for _ in range(1000)])
                    p.send("SADD", b"bigset:%d" % big, *[val(20) for _ in range(400)])
                    p.send("ZADD", b"bigzset:%d" % big, *[x for m in range(400) for x in (rnd.random(), val(20))])
                written += 1000 * 60 + 5000 * 40 + 2000 * 20 + 2000 * 30
            if n % 100000 == 0:
                log(f"make: {written / MIB:.0f} MiB")
        p.flush()
        c = RespConn(port, timeout=3600)
        r = c.call("SAVE")
        keys = c.call("DBSIZE")
        c.close()
        if r != "OK":
            raise BenchError(f"SAVE: {r}")
        path = os.path.join(args.scratch, "dump.rdb")
        log(f"make: {path}: {os.path.getsize(path) / MIB:.1f} MiB, {keys} keys")
    finally:
        kill_proc(proc)


def redis_load(rdb, scratch):
    d = os.path.join(scratch, "redis-load")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.link(rdb, os.path.join(d, "dump.rdb"))
    port = free_port()
    t0 = time.monotonic()
    proc, log_path = start_redis(d, port, ["--dbfilename", "dump.rdb"])
    try:
        wait_loaded(port, proc)
        wall = time.monotonic() - t0
        c = RespConn(port, timeout=60)
        keys = c.call("DBSIZE")
        rss = int(c.call("INFO", "memory").decode().split("used_memory_rss:")[1].split()[0])
        c.close()
        secs = None
        with open(log_path, errors="replace") as f:
            for line in f:
                if "DB loaded from disk:" in line:
                    secs = float(line.split("DB loaded from disk:")[1].split()[0])
    finally:
        kill_proc(proc)
        shutil.rmtree(d, ignore_errors=True)
    return {"seconds": secs if secs is not None else wall, "wall": wall, "keys": keys, "rss": rss}


def strata_import(rdb, scratch, cli, clean):
    d = os.path.join(scratch, "strata-import")
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.monotonic()
    with open(os.path.join(scratch, "import.out"), "wb") as out, \
            open(os.path.join(scratch, "import.err"), "wb") as err:
        proc = subprocess.Popen([cli, "-d", d, "--json", "import", rdb], stdout=out, stderr=err)
        # wait4: this child's own peak RSS and CPU (RUSAGE_CHILDREN would mix in redis-server's).
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise BenchError(f"strata import failed: {open(os.path.join(scratch, 'import.err')).read()[-2000:]}")
    with open(os.path.join(scratch, "import.out")) as f:
        stdout = f.read()
    summary = json.loads(stdout.strip().splitlines()[-1])
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
    if clean:
        shutil.rmtree(d, ignore_errors=True)
    return {"seconds": wall, "keys": summary["imported"] + summary["skipped_expired"],
            "peak_rss": usage.ru_maxrss * 1024, "cpu": usage.ru_utime + usage.ru_stime,
            "dir_bytes": size}


def measure(args):
    rdb = args.rdb or os.path.join(args.scratch, "dump.rdb")
    size = os.path.getsize(rdb)
    cli = strata_cli_bin()
    rows = []
    for run in range(args.repeat):
        r = redis_load(rdb, args.scratch)
        s = strata_import(rdb, args.scratch, cli, args.clean)
        for name, m in (("redis-server load", r), ("strata import", s)):
            m.update(system=name, run=run, mb_s=size / MIB / m["seconds"], keys_s=m["keys"] / m["seconds"])
            rows.append(m)
            log(f"{name}: {m['seconds']:.1f}s, {m['mb_s']:.1f} MiB/s, {m['keys_s']:.0f} keys/s")
    print(f"RDB file {rdb}: {size / MIB:.1f} MiB, {rows[0]['keys']} keys")
    print("| system | run | seconds | MiB/s | keys/s | peak RSS MiB | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for m in rows:
        rss = m.get("peak_rss", m.get("rss", 0)) / MIB
        cpu = f"{m['cpu']:.1f}" if "cpu" in m else "-"
        print(f"| {m['system']} | {m['run']} | {m['seconds']:.1f} | {m['mb_s']:.1f} | {m['keys_s']:.0f} | {rss:.0f} | {cpu} |")
    ratio = [s["seconds"] / r["seconds"] for r, s in zip(rows[0::2], rows[1::2])]
    print("strata/redis load time: " + ", ".join(f"{x:.2f}x" for x in ratio))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rdb_bytes": size, "rows": rows}, f, indent=1)


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench/rdb_import.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["make", "measure"])
    p.add_argument("--scratch", default="/work/scratch/rdbspeed")
    p.add_argument("--mb", type=int, default=500, help="MiB of data to make (default 500)")
    p.add_argument("--value-size", type=int, default=600, help="string value bytes (default 600)")
    p.add_argument("--rdb", help="file to measure (default <scratch>/dump.rdb)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--clean", action="store_true", help="remove Strata's directory after each import")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    make(args) if args.what == "make" else measure(args)


if __name__ == "__main__":
    main()
