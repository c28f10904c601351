#!/usr/bin/env python3
"""Strata vs Redis throughput/latency harness (python3 stdlib only).

Starts Strata and two real redis-server instances (no persistence; AOF everysec, or with
--fsync always both Strata and Redis-AOF with appendfsync always), each on a free loopback port
with its own temp dir, runs the same redis-benchmark workloads against all of them in one run
(targets interleaved per workload so machine noise hits all of them), and prints ops/s,
p50/p99/p99.9 latency, the server's CPU seconds per million operations (/proc/<pid>/stat) and the
Strata/Redis throughput and CPU ratios.

Normally started through bench/run.sh (which builds strata-server first). See bench/README.md.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


# --------------------------------------------------------------------------------------------
# Workloads.  One row per figure.  Each row is either a redis-benchmark built-in test
# (`test="set"` -> `redis-benchmark -t set`) or an explicit command line (`command=[...]`,
# appended after the options; `__rand_int__` is replaced by redis-benchmark with a random
# 12-digit number in [0, keyspace) because we always pass -r).
#
#   needs    fills the data set must have before the row runs (see FILLS below), once per
#            target, e.g. "string_keys" = every key:NNNNNNNNNNNN in the keyspace holds a value.
#   setup    commands sent once per target (over a plain RESP connection) before the row runs,
#            e.g. SCRIPT LOAD for an EVALSHA row.
#   default  part of the default run (--workloads not given).
#   scale    multiplies -n (--requests / --pipelined-requests) so that slow commands (MSET
#            writes 10 keys per op) still finish in a few seconds.
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    name: str
    test: str = None
    command: list = None
    needs: tuple = ()
    setup: tuple = ()
    default: bool = True
    scale: float = 1.0
    note: str = ""
    clients: int = None  # overrides -c for this row (the inventory scenario uses 128)

    def bench_args(self):
        if self.test:
            return ["-t", self.test]
        return list(self.command)


WORKLOADS = [
    Workload("set", test="set", note="SET key:__rand_int__ <d bytes>"),
    Workload("get", test="get", needs=("string_keys",),
             note="GET key:__rand_int__ (keyspace pre-filled, so every GET hits)"),
    Workload("incr", test="incr", note="INCR counter:__rand_int__"),
    Workload("mset", test="mset", scale=0.1,
             note="MSET of 10 key:__rand_int__ <d bytes> (1 op = 1 MSET)"),
    # Collections (issue 3): run with --workloads collections (or name the rows).
    Workload("hset", test="hset", default=False, note="HSET myhash element:__rand_int__ <d bytes>"),
    Workload("hget", command=["HGET", "myhash", "element:__rand_int__"], needs=("hash_fields",),
             default=False, note="HGET myhash element:__rand_int__ (pre-filled)"),
    Workload("hincrby", command=["HINCRBY", "counters", "field:__rand_int__", "1"], default=False,
             note="HINCRBY counters field:__rand_int__ 1"),
    Workload("lpush", test="lpush", default=False, note="LPUSH mylist <d bytes>"),
    Workload("rpush", test="rpush", default=False, note="RPUSH mylist <d bytes>"),
    Workload("lpop", test="lpop", needs=("list_items",), default=False,
             note="LPOP mylist (list pre-filled)"),
    Workload("rpop", test="rpop", needs=("list_items",), default=False,
             note="RPOP mylist (list pre-filled)"),
    Workload("lrange_100", test="lrange_100", needs=("list_600",), default=False, scale=0.25,
             note="LRANGE mylist 0 99"),
    Workload("sadd", test="sadd", default=False, note="SADD myset element:__rand_int__"),
    Workload("spop", test="spop", needs=("set_members",), default=False,
             note="SPOP myset (set pre-filled)"),
    Workload("zadd", test="zadd", default=False, note="ZADD myzset 0 element:__rand_int__"),
    Workload("zrange", command=["ZRANGE", "myzset", "0", "9", "WITHSCORES"], needs=("zset_members",),
             default=False, note="ZRANGE myzset 0 9 WITHSCORES (zset pre-filled)"),
    # HyperLogLog (issue 12): redis-benchmark has no PF test.
    Workload("pfadd", command=["PFADD", "hll", "__rand_int__"], default=False,
             note="PFADD hll __rand_int__ (one HLL, sparse then dense)"),
    Workload("pfcount", command=["PFCOUNT", "hllc"], default=False,
             setup=(("PFADD", "hllc", *[f"e{i}" for i in range(5000)]),),
             note="PFCOUNT hllc (a dense HLL of 5000 elements; the cache is valid after the first)"),
    # The inventory scenario: 1,000,000 hashes product:<n> {name, description, price, quantity},
    # then HINCRBY product:<random> quantity 1 from 128 connections.
    Workload("inventory", command=["HINCRBY", "product:__rand_int__", "quantity", "1"],
             needs=("products",), default=False, clients=128,
             note="HINCRBY product:__rand_int__ quantity 1, 128 connections, 1M product hashes"),
    # Bitmaps (issue 12). redis-benchmark writes __rand_int__ as 12 zero-padded digits, which no
    # bit offset may be (Redis answers "ERR bit offset is not an integer or out of range"), so a
    # random offset in one bitmap goes through a one-line script (see SETBIT_LUA below).
    Workload("setbit_keys", command=["SETBIT", "bit:__rand_int__", "7", "1"], default=False,
             note="SETBIT bit:__rand_int__ 7 1 (many one-byte bitmaps)"),
    Workload("bitcount", command=["BITCOUNT", "bm"], needs=("bitmap",), default=False,
             note="BITCOUNT bm (bm pre-filled: -r bits, one in 8 set)"),
]
# The stock-adjustment script of issue 4, loaded with SCRIPT LOAD and run with EVALSHA on random
# product:<n> hashes from 32 connections: one row takes a unit (-1), the other puts one back (+1).
STOCK_LUA = """local stock = tonumber(redis.call('HGET', KEYS[1], 'quantity'))
local q = tonumber(ARGV[1])
if not stock then return {err = 'Product not found'} end
if (stock + q) < 0 then return -1 else return redis.call('HINCRBY', KEYS[1], 'quantity', q) end
"""
STOCK_SHA = hashlib.sha1(STOCK_LUA.encode()).hexdigest()
for _name, _q in (("stock", "-1"), ("stock_restock", "1")):
    WORKLOADS.append(Workload(_name, command=["EVALSHA", STOCK_SHA, "1", "product:__rand_int__", _q],
                              setup=(("SCRIPT", "LOAD", STOCK_LUA),), needs=("products",),
                              default=False, clients=32,
                              note=f"EVALSHA stock-adjustment script, product:__rand_int__ {_q}, "
                                   "32 connections, 1M product hashes"))
# SETBIT bm <random offset below -r> 1, the offset read from __rand_int__ by a script.
SETBIT_LUA = "return redis.call('SETBIT', KEYS[1], tonumber(ARGV[1]), 1)"
SETBIT_SHA = hashlib.sha1(SETBIT_LUA.encode()).hexdigest()
WORKLOADS.append(Workload("setbit", command=["EVALSHA", SETBIT_SHA, "1", "bm", "__rand_int__"],
                          setup=(("SCRIPT", "LOAD", SETBIT_LUA),), default=False,
                          # Strata rewrites the whole bitmap (-r/8 bytes) per SETBIT: keep the
                          # bytes written to a few GB.
                          scale=0.02,
                          note="SETBIT bm <__rand_int__> 1 in one bitmap of -r bits, "
                               "through EVALSHA of a one-line script"))
# GETBIT bm <random offset below -r>, through a script for the same reason (bm pre-filled).
GETBIT_LUA = "return redis.call('GETBIT', KEYS[1], tonumber(ARGV[1]))"
GETBIT_SHA = hashlib.sha1(GETBIT_LUA.encode()).hexdigest()
WORKLOADS.append(Workload("getbit", command=["EVALSHA", GETBIT_SHA, "1", "bm", "__rand_int__"],
                          setup=(("SCRIPT", "LOAD", GETBIT_LUA),), needs=("bitmap",),
                          default=False,
                          note="GETBIT bm <__rand_int__> (bm pre-filled: -r bits, one in 8 set), "
                               "through EVALSHA of a one-line script"))
# Point writes to one big (fragmented in Strata: longer than 64 KB) string: APPEND of 100 bytes,
# and SETRANGE of 8 bytes at a random offset below -r (through a script, as for SETBIT above).
WORKLOADS.append(Workload("append_big", command=["APPEND", "bigstr", "a" * 100],
                          needs=("big_string",), default=False, scale=0.2,
                          note="APPEND bigstr <100 bytes> (bigstr pre-filled: -r bytes)"))
SETRANGE_LUA = "return redis.call('SETRANGE', KEYS[1], tonumber(ARGV[1]), ARGV[2])"
SETRANGE_SHA = hashlib.sha1(SETRANGE_LUA.encode()).hexdigest()
WORKLOADS.append(Workload("setrange_big",
                          command=["EVALSHA", SETRANGE_SHA, "1", "bigstr", "__rand_int__", "8bytes!!"],
                          setup=(("SCRIPT", "LOAD", SETRANGE_LUA),), needs=("big_string",),
                          default=False,
                          note="SETRANGE bigstr <__rand_int__> <8 bytes> (bigstr pre-filled: -r "
                               "bytes), through EVALSHA of a one-line script"))
BITMAP_WORKLOADS = ["setbit_keys", "setbit", "getbit", "bitcount"]
BIG_STRING_WORKLOADS = ["append_big", "setrange_big"]
SCRIPT_WORKLOADS = ["stock", "stock_restock"]
HLL_WORKLOADS = ["pfadd", "pfcount"]
COLLECTION_WORKLOADS = ["hset", "hget", "hincrby", "lpush", "rpush", "lpop", "rpop", "lrange_100",
                        "sadd", "spop", "zadd", "zrange", "inventory"]
# The rows of issue 15's table, plus the inventory and both stock-script rows.
# The queue rows (issue 15): pushes and pops at both ends of one long list.
LIST_WORKLOADS = ["lpush", "rpush", "lpop", "rpop"]
ISSUE15_WORKLOADS = ["set", "get", "incr", "lpush", "rpush", "lpop", "sadd", "hset", "zadd",
                     "lrange_100", "mset", "inventory", "stock", "stock_restock"]
WORKLOADS_BY_NAME = {w.name: w for w in WORKLOADS}


# --------------------------------------------------------------------------------------------
# Targets.
# --------------------------------------------------------------------------------------------
# --targets names these; --fsync always renames the persisted ones (redis-aof-always,
# strata-always), so that a table never leaves in doubt which fsync policy a row ran with.
TARGET_ORDER = ["redis-nopersist", "redis-aof", "strata"]
FSYNC_POLICIES = ["everysec", "always"]
RATIO_KEYS = ["strata_vs_redis_aof", "strata_vs_redis_nopersist", "cpu_strata_vs_redis_aof"]


def target_name(base, fsync):
    """redis-aof + always -> redis-aof-always; everysec keeps the plain names."""
    if base == "redis-nopersist" or fsync == "everysec":
        return base
    return f"{base}-{fsync}"


def baselines(strata_name):
    """(baseline target, ratio key) pairs for a strata[-<fsync>] target."""
    suffix = strata_name[len("strata"):]
    return [("redis-aof" + suffix, "strata_vs_redis_aof"),
            ("redis-nopersist", "strata_vs_redis_nopersist")]


class BenchError(Exception):
    pass


class Interrupted(BaseException):
    pass


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------------
# Minimal RESP client (PING, INFO, setup commands, fills).
# --------------------------------------------------------------------------------------------
def encode_command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RespConn:
    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise BenchError("connection closed by server")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def read_reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode(errors="replace")
        if t == b"-":
            return BenchError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read_reply() for _ in range(n)]
        raise BenchError(f"unexpected RESP reply: {line[:80]!r}")

    def call(self, *args):
        self.sock.sendall(encode_command(*args))
        return self.read_reply()


def ping(port, timeout=1.0):
    try:
        c = RespConn(port, timeout=timeout)
    except OSError:
        return False
    try:
        return c.call("PING") == "PONG"
    except (OSError, BenchError, ValueError):
        return False
    finally:
        c.close()


def server_info(port):
    """A few INFO server fields, best effort (Strata may not implement all of INFO)."""
    try:
        c = RespConn(port, timeout=2.0)
        try:
            r = c.call("INFO", "server")
        finally:
            c.close()
    except (OSError, BenchError, ValueError):
        return {}
    if not isinstance(r, bytes):
        return {}
    out = {}
    for line in r.decode(errors="replace").splitlines():
        k, _, v = line.partition(":")
        if k.endswith("_version") or k in ("os", "multiplexing_api", "arch_bits"):
            out[k] = v.strip()
    return out


# --------------------------------------------------------------------------------------------
# Fills: deterministic pre-population of a target, named in Workload.needs.
# --------------------------------------------------------------------------------------------
def fill_string_keys(port, cfg, deadline):
    """SET key:%012d (the key redis-benchmark's GET/SET use) for every i in [0, keyspace)."""
    value = b"x" * cfg.data_size
    head = b"*3\r\n$3\r\nSET\r\n$16\r\n"
    tail = b"\r\n$%d\r\n%s\r\n" % (len(value), value)
    batch = 2000
    conn = RespConn(port, timeout=60.0)
    try:
        for start in range(0, cfg.keyspace, batch):
            if time.monotonic() > deadline:
                raise BenchError("fill timed out")
            end = min(start + batch, cfg.keyspace)
            conn.sock.sendall(b"".join(head + b"key:%012d" % i + tail for i in range(start, end)))
            want = end - start
            # SET replies are single lines (+OK / -ERR ...): count lines, then check them.
            while conn.buf.count(b"\r\n") < want:
                conn._fill()
            if conn.buf != b"+OK\r\n" * want:
                bad = [ln for ln in conn.buf.split(b"\r\n") if ln and ln != b"+OK"]
                raise BenchError(f"fill: unexpected reply {bad[0][:200]!r}")
            conn.buf = b""
    finally:
        conn.close()
    return cfg.keyspace


def _pipelined_fill(port, commands, deadline, batch=1000):
    """Sends RESP-encoded `commands` (an iterable of bytes) in pipelined batches, checking that
    no reply is an error."""
    conn = RespConn(port, timeout=60.0)
    sent = 0
    try:
        chunk = []
        def flush():
            conn.sock.sendall(b"".join(chunk))
            want = len(chunk)
            got = 0
            while got < want:
                while b"\r\n" not in conn.buf:
                    conn._fill()
                line, conn.buf = conn.buf.split(b"\r\n", 1)
                if line.startswith(b"-"):
                    raise BenchError(f"fill: unexpected reply {line[:200]!r}")
                got += 1
            chunk.clear()
        for cmd in commands:
            chunk.append(cmd)
            sent += 1
            if len(chunk) >= batch:
                if time.monotonic() > deadline:
                    raise BenchError("fill timed out")
                flush()
        if chunk:
            flush()
    finally:
        conn.close()
    return sent


def fill_hash_fields(port, cfg, deadline):
    """HSET myhash element:%012d <value> for every i in [0, keyspace)."""
    value = b"x" * cfg.data_size
    return _pipelined_fill(port, (encode_command(b"HSET", b"myhash", b"element:%012d" % i, value)
                                  for i in range(cfg.keyspace)), deadline)


def fill_list(count):
    def fill(port, cfg, deadline):
        value = b"x" * cfg.data_size
        return _pipelined_fill(port, (encode_command(b"RPUSH", b"mylist", *([value] * 100))
                                      for _ in range(max(1, count // 100))), deadline)
    return fill


def fill_set_members(port, cfg, deadline):
    return _pipelined_fill(port, (encode_command(b"SADD", b"myset", b"element:%012d" % i)
                                  for i in range(cfg.keyspace)), deadline)


def fill_zset_members(port, cfg, deadline):
    return _pipelined_fill(port, (encode_command(b"ZADD", b"myzset", str(i % 1000), b"element:%012d" % i)
                                  for i in range(min(cfg.keyspace, 100_000))), deadline)


def fill_products(port, cfg, deadline):
    """1,000,000 (or keyspace) hashes product:%012d with name, description (50 random
    characters), price and quantity, the inventory scenario of issue 3."""
    import random
    rng = random.Random(42)
    letters = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
    def commands():
        for i in range(cfg.keyspace):
            desc = bytes(rng.choice(letters) for _ in range(50))
            yield encode_command(b"HSET", b"product:%012d" % i, b"name", b"product %d" % i,
                                 b"description", desc, b"price", b"%d.99" % (i % 1000),
                                 b"quantity", b"1000")
    return _pipelined_fill(port, commands(), deadline)


def fill_bitmap(port, cfg, deadline):
    """bm: a bitmap of keyspace bits, one in 8 set (the bytes SETBIT bm i 1 for every 8th i
    would leave, in one SET)."""
    return _pipelined_fill(port, [encode_command(b"SET", b"bm", b"\x01" * (cfg.keyspace // 8))],
                           deadline)


def fill_big_string(port, cfg, deadline):
    """bigstr: a string of keyspace bytes (in Strata, fragments)."""
    return _pipelined_fill(port, [encode_command(b"SET", b"bigstr", b"s" * cfg.keyspace)],
                           deadline)


FILLS = {
    "string_keys": fill_string_keys,
    "hash_fields": fill_hash_fields,
    "list_items": fill_list(1_000_000),
    "list_600": fill_list(600),
    "set_members": fill_set_members,
    "zset_members": fill_zset_members,
    "products": fill_products,
    "bitmap": fill_bitmap,
    "big_string": fill_big_string,
}


# --------------------------------------------------------------------------------------------
# redis-benchmark output parsing (verified against redis-benchmark 7.0.15, see --self-test).
# --------------------------------------------------------------------------------------------
_PCT_LINE = re.compile(r"^\s*([\d.]+)% <= ([\d.]+) milliseconds \(cumulative count (\d+)\)", re.M)
_THROUGHPUT = re.compile(r"throughput summary:\s*([\d.]+)\s+requests per second")
_LATSUM = re.compile(r"latency summary \(msec\):\s*\n\s*([a-z0-9. \t]+?)\s*\n\s*([\d. \t]+?)\s*(?:\n|$)")
_COMPLETED = re.compile(r"(\d+) requests completed in ([\d.]+) seconds")
_ERRLINE = re.compile(r"^(Error from server:.*|Could not connect.*|.*[Ee]rror.*)$", re.M)


def parse_benchmark_output(text):
    """Parse one redis-benchmark (non -q, single test) run.

    Returns dict with ops_per_sec, avg/min/p50/p95/p99/max (ms, from the Summary), p999 (ms,
    from the "Latency by percentile distribution" section: the first line at or above 99.9%,
    i.e. a slight upper bound), requests. Raises BenchError if the run did not complete.
    """
    text = text.replace("\r", "\n")
    m = _THROUGHPUT.search(text)
    if not m:
        errs = [e.strip() for e in _ERRLINE.findall(text) if e.strip()]
        msg = errs[0] if errs else (text.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"redis-benchmark did not finish: {msg[:300]}")
    res = {"ops_per_sec": float(m.group(1))}
    m = _LATSUM.search(text)
    if not m:
        raise BenchError("no latency summary in redis-benchmark output")
    names, vals = m.group(1).split(), m.group(2).split()
    if len(names) != len(vals):
        raise BenchError(f"latency summary mismatch: {names} / {vals}")
    for n, v in zip(names, vals):
        res[n + "_ms"] = float(v)
    sect = text.split("Latency by percentile distribution:", 1)
    if len(sect) != 2:
        raise BenchError("no 'Latency by percentile distribution' section")
    sect = sect[1].split("Cumulative distribution of latencies:", 1)[0]
    dist = [(float(p), float(ms), int(c)) for p, ms, c in _PCT_LINE.findall(sect)]
    if not dist:
        raise BenchError("empty latency distribution")
    res["p999_ms"] = next((ms for p, ms, _ in dist if p >= 99.9), dist[-1][1])
    m = _COMPLETED.search(text)
    if m:
        res["requests"] = int(m.group(1))
    errs = [ln.strip() for ln in text.splitlines() if ln.startswith("Error from server")]
    if errs:
        res["server_errors"] = errs[:3]
    return res


# --------------------------------------------------------------------------------------------
# Processes.
# --------------------------------------------------------------------------------------------
def kill_proc(proc, grace=10.0):
    """SIGTERM by PID, wait, then SIGKILL the process group we created for it."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    except ProcessLookupError:
        return
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # start_new_session=True: pgid == pid
        except (ProcessLookupError, PermissionError):
            proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log(f"WARNING: pid {proc.pid} did not exit after SIGKILL")
    # Also reap stray children in the group (e.g. a redis AOF-rewrite fork).
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def proc_cpu_seconds(pid):
    """CPU seconds the process has used so far: utime + stime of all its threads, plus cutime +
    cstime of children it has reaped (a Redis AOF-rewrite fork), from /proc/<pid>/stat. None if
    the process is gone or /proc is not there."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # Field 2 (comm) is in parentheses and may hold spaces: split after the last ')'.
    fields = stat[stat.rfind(b")") + 2:].split()
    # fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14-17.
    try:
        ticks = sum(int(x) for x in fields[11:15])
    except (ValueError, IndexError):
        return None
    return ticks / CLOCK_TICKS


def proc_rss_bytes(pid):
    """VmRSS of the process (bytes), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class Target:
    name: str
    argv_prefix: list          # command without the per-instance flags
    extra: list                # flags appended after bind/port/dir
    template: bool = False     # argv_prefix contains {port}/{dir} placeholders
    port: int = 0
    root: str = ""
    proc: object = None
    log_path: str = ""
    argv: list = field(default_factory=list)
    dead: str = ""             # reason, once the server is found dead
    filled: set = field(default_factory=set)
    info: dict = field(default_factory=dict)

    def start(self, tmp_root, start_timeout):
        self.root = tempfile.mkdtemp(prefix=f"strata-bench-{self.name}-", dir=tmp_root)
        data = os.path.join(self.root, "data")
        os.mkdir(data)
        self.log_path = os.path.join(self.root, "server.log")
        for attempt in range(3):  # free_port() is racy; retry on an early exit
            self.port = free_port()
            if self.template:
                self.argv = [a.format(port=self.port, dir=data) for a in self.argv_prefix]
            else:
                self.argv = self.argv_prefix + ["--bind", "127.0.0.1", "--port", str(self.port),
                                                "--dir", data] + self.extra
            log(f"starting {self.name}: {shlex.join(self.argv)}")
            with open(self.log_path, "ab") as lf:
                self.proc = subprocess.Popen(self.argv, stdout=lf, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, cwd=self.root,
                                             start_new_session=True)
            deadline = time.monotonic() + start_timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                if ping(self.port):
                    self.info = server_info(self.port)
                    log(f"{self.name} up: pid {self.proc.pid}, port {self.port}")
                    return
                time.sleep(0.05)
            if self.proc.poll() is None:
                kill_proc(self.proc)
                raise BenchError(f"{self.name} did not answer PING within {start_timeout}s "
                                 f"(log {self.log_path}):\n{tail(self.log_path)}")
            log(f"{self.name} exited with code {self.proc.returncode} before answering PING")
            if "in use" not in tail(self.log_path, 5).lower():
                break  # not a lost race for the port: retrying will not help
        raise BenchError(f"{self.name} failed to start: {shlex.join(self.argv)}\n"
                         f"last log lines ({self.log_path}):\n{tail(self.log_path)}")

    def alive(self):
        if self.dead:
            return False
        if self.proc is None or self.proc.poll() is not None:
            code = self.proc.returncode if self.proc else None
            self.dead = f"server exited (code {code})"
            log(f"{self.name}: {self.dead}; last log lines:\n{tail(self.log_path)}")
            return False
        return True

    def stop(self, keep_tmp):
        if self.proc is not None:
            kill_proc(self.proc)
        if self.root and not keep_tmp:
            shutil.rmtree(self.root, ignore_errors=True)
        elif self.root:
            log(f"kept {self.name} temp dir {self.root}")


def default_strata_bin():
    if os.environ.get("STRATA_SERVER"):
        return os.environ["STRATA_SERVER"]
    target_dir = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    if not os.path.isabs(target_dir):
        target_dir = os.path.join(REPO, target_dir)
    return os.path.join(target_dir, "release", "strata-server")


def make_targets(args):
    """Every target this run can start, by name: redis-nopersist, and redis-aof[-<fsync>] and
    strata[-<fsync>] for each --fsync policy."""
    out = {}
    rs = args.redis_server
    out["redis-nopersist"] = Target("redis-nopersist", [rs], ["--save", "", "--appendonly", "no"])
    strata_cmd = args.strata_cmd or os.environ.get("STRATA_CMD")
    for fsync in args.fsync:
        aof = target_name("redis-aof", fsync)
        out[aof] = Target(aof, [rs], ["--save", "", "--appendonly", "yes", "--appendfsync", fsync])
        name = target_name("strata", fsync)
        if strata_cmd:
            argv = shlex.split(strata_cmd)
            tmpl = any("{port}" in a for a in argv)
            out[name] = Target(name, [a.replace("{fsync}", fsync) for a in argv],
                               [] if tmpl else ["--appendfsync", fsync], template=tmpl)
        else:
            out[name] = Target(name, [args.strata_bin], ["--appendfsync", fsync])
    return out


# --------------------------------------------------------------------------------------------
# Running.
# --------------------------------------------------------------------------------------------
def requests_for(cfg, wl, pipeline):
    n = cfg.requests if pipeline <= 1 else cfg.pipelined_requests
    return max(1, int(n * wl.scale))


def run_benchmark(cfg, target, wl, pipeline, scratch):
    n = requests_for(cfg, wl, pipeline)
    argv = [cfg.redis_benchmark, "-h", "127.0.0.1", "-p", str(target.port),
            "-c", str(wl.clients or cfg.clients), "-n", str(n), "-d", str(cfg.data_size),
            "-r", str(cfg.keyspace), "-P", str(pipeline)] + wl.bench_args()
    out_path = os.path.join(scratch, "rb.out")
    cpu0 = proc_cpu_seconds(target.proc.pid)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        cfg.live_procs.append(proc)
        try:
            reason = None
            deadline = t0 + cfg.run_timeout
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    reason = f"timed out after {cfg.run_timeout}s"
                    break
                if not target.alive():  # redis-benchmark busy-loops if the server goes away
                    reason = target.dead
                    break
                time.sleep(0.05)
        finally:
            kill_proc(proc, grace=2)
            cfg.live_procs.remove(proc)
    elapsed = time.monotonic() - t0
    cpu1 = proc_cpu_seconds(target.proc.pid)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out_path, errors="replace") as f:
        text = f.read()
    rec = {"workload": wl.name, "pipeline": pipeline, "target": target.name,
           "requests": n, "wall_s": round(elapsed, 3), "argv": argv}
    if reason:
        rec["error"] = reason
        return rec
    try:
        rec.update(parse_benchmark_output(text))
        if proc.returncode != 0:
            rec["error"] = f"redis-benchmark exit code {proc.returncode}"
    except BenchError as e:
        rec["error"] = f"{e} (exit code {proc.returncode})"
    # Server CPU over the run (all threads), per million operations: on a machine where client
    # and server share the cores, this is what decides throughput in the end.
    if cpu0 is not None and cpu1 is not None:
        rec["server_cpu_s"] = round(cpu1 - cpu0, 3)
        rec["server_cores"] = round((cpu1 - cpu0) / elapsed, 3) if elapsed > 0 else None
        done = rec.get("requests") or n
        rec["cpu_s_per_mop"] = round((cpu1 - cpu0) / (done / 1e6), 3) if done else None
    rec["client_cpu_s"] = round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 3)
    return rec


def prepare_target(cfg, target, wl):
    """Run the row's fills (once per target) and setup commands; True if anything was filled."""
    filled = False
    for need in wl.needs:
        if need in target.filled:
            continue
        log(f"{target.name}: fill '{need}' (keyspace {cfg.keyspace}, {cfg.data_size}-byte values)")
        t0 = time.monotonic()
        n = FILLS[need](target.port, cfg, t0 + cfg.run_timeout)
        dt = time.monotonic() - t0
        log(f"{target.name}: fill '{need}' done: {n} keys in {dt:.1f}s ({n / dt:,.0f} keys/s)")
        cfg.fills.append({"target": target.name, "fill": need, "keys": n, "seconds": round(dt, 3)})
        target.filled.add(need)
        filled = True
    for cmd in wl.setup:
        c = RespConn(target.port, timeout=30.0)
        try:
            r = c.call(*cmd)
        finally:
            c.close()
        if isinstance(r, BenchError):
            raise BenchError(f"{target.name}: setup {cmd[:2]} failed: {r}")
    return filled


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def pick_median(recs):
    """The run with the median ops/s (its latencies come with it); the CPU column is the median
    of the runs' CPU per operation, taken on its own."""
    ok = [r for r in recs if "error" not in r]
    if not ok:
        return recs[-1]
    ok.sort(key=lambda r: r["ops_per_sec"])
    best = dict(ok[(len(ok) - 1) // 2])
    if len(recs) > 1:
        best["repeats_ops_per_sec"] = [r.get("ops_per_sec") for r in recs]
        cpus = [r["cpu_s_per_mop"] for r in ok if r.get("cpu_s_per_mop") is not None]
        best["repeats_cpu_s_per_mop"] = [r.get("cpu_s_per_mop") for r in recs]
        if cpus:
            best["cpu_s_per_mop"] = round(median(cpus), 3)
    return best


def add_ratios(row):
    """Puts strata/aof, strata/nopersist (ops/s) and the strata/aof CPU-per-op ratio on each
    strata[-<fsync>] record of `row` (target name -> median record)."""
    for name, strata in row.items():
        if not name.startswith("strata") or "error" in strata:
            continue
        for base, key in baselines(name):
            b = row.get(base)
            if b is None or "error" in b:
                continue
            if b["ops_per_sec"] > 0:
                strata[key] = strata["ops_per_sec"] / b["ops_per_sec"]
            if key == "strata_vs_redis_aof" and strata.get("cpu_s_per_mop") is not None \
                    and b.get("cpu_s_per_mop"):
                strata["cpu_strata_vs_redis_aof"] = strata["cpu_s_per_mop"] / b["cpu_s_per_mop"]


def run_all(cfg, targets):
    results = cfg.results  # shared so an interrupted run can still print what it has
    scratch = tempfile.mkdtemp(prefix="strata-bench-rb-", dir=cfg.tmp_root)
    cfg.cleanup_dirs.append(scratch)
    for wl in cfg.workloads:
        for pipeline in cfg.pipelines:
            filled = False
            for t in targets:  # fill every target before any of them is measured
                if t.alive():
                    try:
                        filled |= prepare_target(cfg, t, wl)
                    except (BenchError, OSError) as e:
                        t.dead = f"prepare failed: {e}"
                        log(f"{t.name}: {t.dead}")
            if filled and cfg.settle:
                log(f"settling {cfg.settle}s after fill")
                time.sleep(cfg.settle)
            per_target = {t.name: [] for t in targets}
            for rep in range(cfg.repeat):
                for t in targets:  # interleaved: every target runs before the next row/repeat
                    if not t.alive():
                        per_target[t.name].append({"workload": wl.name, "pipeline": pipeline,
                                                   "target": t.name, "error": t.dead})
                        continue
                    rec = run_benchmark(cfg, t, wl, pipeline, scratch)
                    per_target[t.name].append(rec)
                    if "error" in rec:
                        log(f"{wl.name:6} P={pipeline:<3} {t.name:16} ERROR: {rec['error']}")
                    else:
                        log(f"{wl.name:6} P={pipeline:<3} {t.name:16} {rec['ops_per_sec']:>12,.0f} ops/s"
                            f"  p50 {rec['p50_ms']:.3f}  p99 {rec['p99_ms']:.3f}"
                            f"  p99.9 {rec['p999_ms']:.3f} ms")
            row = {t.name: pick_median(per_target[t.name]) for t in targets}
            add_ratios(row)
            results.extend(row[t.name] for t in targets)
    return results


# --------------------------------------------------------------------------------------------
# Output.
# --------------------------------------------------------------------------------------------
COLUMNS = ["workload", "P", "target", "ops/s", "p50 ms", "p99 ms", "p99.9 ms",
           "CPU s/Mop", "strata/aof", "strata/nopersist", "CPU strata/aof"]
RIGHT = {3, 4, 5, 6, 7, 8, 9, 10}      # right-aligned columns
RATIO_CELLS = (8, 9, 10)               # bold for strata rows in markdown


def table_rows(results):
    rows = []
    for r in results:
        if "error" in r:
            cells = [r["workload"], str(r["pipeline"]), r["target"], "ERROR"] + \
                [""] * (len(COLUMNS) - 4) + [r["error"]]
        else:
            ratio = lambda k: f"{r[k]:.2f}x" if k in r else ""  # noqa: E731
            cpu = r.get("cpu_s_per_mop")
            cells = [r["workload"], str(r["pipeline"]), r["target"], f"{r['ops_per_sec']:,.0f}",
                     f"{r['p50_ms']:.3f}", f"{r['p99_ms']:.3f}", f"{r['p999_ms']:.3f}",
                     "" if cpu is None else f"{cpu:.2f}",
                     ratio("strata_vs_redis_aof"), ratio("strata_vs_redis_nopersist"),
                     ratio("cpu_strata_vs_redis_aof"), ""]
        rows.append(cells)
    return rows


def settings_line(cfg):
    return (f"redis-benchmark -c {cfg.clients} -d {cfg.data_size} -r {cfg.keyspace}, "
            f"-n {cfg.requests} (P=1) / {cfg.pipelined_requests} (P>1) x workload scale, "
            f"repeat {cfg.repeat}, fsync {','.join(cfg.fsync)}; "
            f"{os.cpu_count()} CPUs, load {cfg.load_before} -> {cfg.load_after}; {cfg.started}")


def print_text_table(cfg, results, out):
    rows = table_rows(results)
    cols = COLUMNS + ["note"]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
              for i, c in enumerate(cols)]
    right = RIGHT
    fmt = lambda cells: "  ".join(  # noqa: E731
        c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
    ).rstrip()
    print(f"\n# {settings_line(cfg)}", file=out)
    print(fmt(cols), file=out)
    print(fmt(["-" * w for w in widths]), file=out)
    prev = None
    for r, res in zip(rows, results):
        key = (res["workload"], res["pipeline"])
        if prev is not None and key != prev:
            print("", file=out)
        prev = key
        print(fmt(r), file=out)
    print("\nstrata/aof = Strata ops/s / Redis-AOF ops/s (same fsync policy); >1.00x means Strata "
          "is faster. CPU s/Mop = server CPU seconds (all threads, /proc/<pid>/stat) per million "
          "operations; CPU strata/aof < 1.00x means Strata spends less CPU per operation. "
          "Compare ratios within one run; absolute numbers vary with machine load.", file=out)


def print_markdown_table(cfg, results, out):
    rows = table_rows(results)
    print(f"_{settings_line(cfg)}_\n", file=out)
    print("| " + " | ".join(COLUMNS + ["note"]) + " |", file=out)
    print("|" + "|".join(["---", "--:", "---"] + ["--:"] * (len(COLUMNS) - 3) + ["---"]) + "|",
          file=out)
    for r in rows:
        cells = list(r)
        if cells[2].startswith("strata") and cells[3] != "ERROR":
            for i in RATIO_CELLS:
                cells[i] = f"**{cells[i]}**" if cells[i] else ""
        print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |", file=out)
    print_markdown_summary(results, out)


def print_markdown_summary(results, out):
    """One line per (workload, P, fsync policy): Strata next to Redis-AOF, the figures issue 15
    asks for (throughput ratio, p99 and p99.9 of both, CPU per operation of both)."""
    by_key = {(r["workload"], r["pipeline"], r["target"]): r for r in results}
    lines = []
    for r in results:
        if not r["target"].startswith("strata"):
            continue
        aof_name = baselines(r["target"])[0][0]
        a = by_key.get((r["workload"], r["pipeline"], aof_name))
        if a is None:
            continue
        fsync = r["target"][len("strata-"):] or "everysec"

        def both(key, fmt):
            vals = []
            for x in (r, a):
                v = None if "error" in x else x.get(key)
                vals.append("-" if v is None else fmt.format(v))
            return " / ".join(vals)
        ratio = r.get("strata_vs_redis_aof")
        cpu_ratio = r.get("cpu_strata_vs_redis_aof")
        lines.append([r["workload"], str(r["pipeline"]), fsync,
                      "-" if ratio is None else f"**{ratio:.2f}x**",
                      both("ops_per_sec", "{:,.0f}"), both("p99_ms", "{:.2f}"),
                      both("p999_ms", "{:.2f}"), both("cpu_s_per_mop", "{:.2f}"),
                      "-" if cpu_ratio is None else f"**{cpu_ratio:.2f}x**"])
    if not lines:
        return
    print("\nStrata / Redis-AOF side by side (cells: strata / redis-aof):\n", file=out)
    print("| workload | P | fsync | ops/s ratio | ops/s | p99 ms | p99.9 ms | CPU s/Mop "
          "| CPU ratio |", file=out)
    print("|---|--:|---|--:|--:|--:|--:|--:|--:|", file=out)
    for cells in lines:
        print("| " + " | ".join(cells) + " |", file=out)


def tool_version(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


def write_json(cfg, targets, results, path):
    doc = {
        "started": cfg.started,
        "host": {"hostname": platform.node(), "cpus": os.cpu_count(),
                 "platform": platform.platform(),
                 "loadavg_before": cfg.load_before, "loadavg_after": cfg.load_after},
        "settings": {"fsync": cfg.fsync, "clients": cfg.clients, "data_size": cfg.data_size, "keyspace": cfg.keyspace,
                     "requests": cfg.requests, "pipelined_requests": cfg.pipelined_requests,
                     "pipelines": cfg.pipelines, "repeat": cfg.repeat,
                     "workloads": [{"name": w.name, "bench_args": w.bench_args(),
                                    "scale": w.scale, "needs": list(w.needs)}
                                   for w in cfg.workloads]},
        "tools": {"redis-benchmark": tool_version([cfg.redis_benchmark, "--version"]),
                  "redis-server": tool_version([cfg.redis_server, "--version"])},
        "targets": {t.name: {"argv": t.argv, "info": t.info, "dead": t.dead or None}
                    for t in targets},
        "fills": cfg.fills,
        "results": results,
        "ratios": [{"workload": r["workload"], "pipeline": r["pipeline"], "target": r["target"],
                    **{k: r.get(k) for k in RATIO_KEYS}}
                   for r in results if r["target"].startswith("strata")],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    log(f"wrote {path}")


# --------------------------------------------------------------------------------------------
# Self-test of the parser against captured redis-benchmark 7.0.15 output.
# --------------------------------------------------------------------------------------------
def self_test():
    td = os.path.join(HERE, "testdata")

    def load(name):
        with open(os.path.join(td, name), errors="replace") as f:
            return f.read()

    r = parse_benchmark_output(load("redis-benchmark-7.0.15-set-P1.txt"))
    assert r["ops_per_sec"] == 98231.83, r
    assert (r["avg_ms"], r["min_ms"], r["p50_ms"], r["p95_ms"], r["p99_ms"], r["max_ms"]) == \
        (0.374, 0.088, 0.351, 0.679, 0.919, 6.439), r
    assert r["p999_ms"] == 3.751, r          # "99.902% <= 3.751 milliseconds"
    assert r["requests"] == 100000, r
    r = parse_benchmark_output(load("redis-benchmark-7.0.15-mset-P16.txt"))
    assert r["ops_per_sec"] == 23304.59 and r["p99_ms"] == 172.927, r
    assert r["p50_ms"] <= r["p99_ms"] <= r["p999_ms"] <= r["max_ms"], r
    try:
        parse_benchmark_output(load("redis-benchmark-7.0.15-error.txt"))
        raise AssertionError("error output parsed as success")
    except BenchError as e:
        assert "unknown command" in str(e), e
    print("self-test OK")


# --------------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/run.sh",
        description="Benchmark Strata against redis-server (no persistence, AOF everysec) "
                    "with redis-benchmark, all in one run.")
    p.add_argument("--workloads", default=None,
                   help="comma list of workloads (default: %s; all: %s)" % (
                       ",".join(w.name for w in WORKLOADS if w.default),
                       ",".join(WORKLOADS_BY_NAME)))
    p.add_argument("--targets", default=",".join(TARGET_ORDER),
                   help="comma list of targets, run in this order (default: %(default)s)")
    p.add_argument("--fsync", default="everysec",
                   help="appendfsync policy of redis-aof and strata: everysec (default), always, "
                        "or everysec,always for both in one run; the always targets are named "
                        "redis-aof-always and strata-always")
    p.add_argument("--pipelines", default="1,16", help="comma list of -P values (default: 1,16)")
    p.add_argument("--clients", "-c", type=int, default=50, help="-c (default 50)")
    p.add_argument("--data-size", "-d", type=int, default=128, help="-d value bytes (default 128)")
    p.add_argument("--keyspace", "-r", type=int, default=None, help="-r (default 1000000)")
    p.add_argument("--requests", "-n", type=int, default=None,
                   help="-n for P=1 (default 200000; --quick 50000); times the workload's scale")
    p.add_argument("--pipelined-requests", type=int, default=None,
                   help="-n for P>1 (default 5 x --requests, i.e. 1000000)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs per (workload, pipeline, target), interleaved; report the median")
    p.add_argument("--quick", action="store_true",
                   help="small runs (-n 50000/250000, -r 100000): whole run well under a minute")
    p.add_argument("--json", metavar="FILE", help="also write results as JSON")
    p.add_argument("--markdown", action="store_true",
                   help="print the table as markdown (for issue notes) instead of plain text")
    p.add_argument("--no-fill", action="store_true",
                   help="skip deterministic pre-population (GET then hits only keys SET wrote)")
    p.add_argument("--settle", type=float, default=2.0,
                   help="seconds to wait after the first fill (default 2)")
    p.add_argument("--run-timeout", type=float, default=None,
                   help="seconds per redis-benchmark run / fill (default 300; --quick 60)")
    p.add_argument("--start-timeout", type=float, default=30.0,
                   help="seconds for a server to answer PING (default 30)")
    p.add_argument("--tmp-root", default=None, help="parent dir for temp dirs (default $TMPDIR)")
    p.add_argument("--keep-tmp", action="store_true", help="keep server temp dirs (debugging)")
    p.add_argument("--strata-bin", default=None,
                   help="strata-server binary (default $STRATA_SERVER or "
                        "${CARGO_TARGET_DIR:-<repo>/target}/release/strata-server)")
    p.add_argument("--redis-server", default=os.environ.get("REDIS_SERVER", "redis-server"))
    p.add_argument("--redis-benchmark", default=os.environ.get("REDIS_BENCHMARK", "redis-benchmark"))
    p.add_argument("--no-build", action="store_true", help="(run.sh) don't cargo build first")
    p.add_argument("--list-workloads", action="store_true", help="list workloads and exit")
    p.add_argument("--self-test", action="store_true", help="test the output parser and exit")
    # Hidden: replace the Strata command, e.g. to self-test the harness with redis-server.
    # Without {port}/{dir} placeholders, "--bind 127.0.0.1 --port P --dir D --appendfsync
    # everysec" is appended. Also read from $STRATA_CMD.
    p.add_argument("--strata-cmd", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.quick:
        a.requests = a.requests or 50000
        a.pipelined_requests = a.pipelined_requests or 250000
        a.keyspace = a.keyspace or 100000
        a.run_timeout = a.run_timeout or 60.0
    a.requests = a.requests or 200000
    a.pipelined_requests = a.pipelined_requests or 5 * a.requests
    a.keyspace = a.keyspace or 1000000
    a.run_timeout = a.run_timeout or 300.0
    a.strata_bin = a.strata_bin or default_strata_bin()

    names = [w.strip() for w in (a.workloads or "").split(",") if w.strip()] if a.workloads \
        else [w.name for w in WORKLOADS if w.default]
    # "collections", "scripts" and "bitmaps" name the issue-3, issue-4 and issue-12 rows as groups.
    groups = {"collections": COLLECTION_WORKLOADS, "scripts": SCRIPT_WORKLOADS,
              "bitmaps": BITMAP_WORKLOADS, "hll": HLL_WORKLOADS, "big_strings": BIG_STRING_WORKLOADS,
              "issue15": ISSUE15_WORKLOADS, "lists": LIST_WORKLOADS}
    names = [n for w in names for n in groups.get(w, [w])]
    unknown = [n for n in names if n not in WORKLOADS_BY_NAME]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; known: {', '.join(WORKLOADS_BY_NAME)}")
    a.workloads = [WORKLOADS_BY_NAME[n] for n in names]
    a.fsync = [f.strip() for f in a.fsync.split(",") if f.strip()]
    if not a.fsync or any(f not in FSYNC_POLICIES for f in a.fsync):
        p.error(f"--fsync takes {' or '.join(FSYNC_POLICIES)} (or both, comma separated)")
    bases = [t.strip() for t in a.targets.split(",") if t.strip()]
    bad = [t for t in bases if t not in TARGET_ORDER]
    if bad or not bases:
        p.error(f"unknown target(s) {bad}; known: {', '.join(TARGET_ORDER)}")
    # Expand per fsync policy: redis-nopersist once, then redis-aof/strata for each policy.
    a.targets = []
    for fsync in a.fsync:
        for t in bases:
            name = target_name(t, fsync)
            if name not in a.targets:
                a.targets.append(name)
    try:
        a.pipelines = [int(x) for x in a.pipelines.split(",") if x.strip()]
    except ValueError:
        p.error("--pipelines must be a comma list of integers")
    if a.no_fill:
        a.workloads = [Workload(**{**w.__dict__, "needs": ()}) for w in a.workloads]
    a.live_procs, a.cleanup_dirs, a.fills, a.results = [], [], [], []
    a.started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return a


def _raise_interrupt(signum, _frame):
    raise Interrupted(f"signal {signum}")


def main(argv):
    cfg = parse_args(argv)
    if cfg.self_test:
        self_test()
        return 0
    if cfg.list_workloads:
        for w in WORKLOADS:
            how = f"-t {w.test}" if w.test else shlex.join(w.command)
            print(f"{w.name:12} {'default' if w.default else '':8} {how:28} "
                  f"-n x{w.scale:<4g} {w.note}")
        return 0

    for tool in (cfg.redis_benchmark, cfg.redis_server):
        if not shutil.which(tool):
            log(f"ERROR: {tool} not found on PATH")
            return 2
    all_targets = make_targets(cfg)
    if any(t.startswith("strata") for t in cfg.targets) and not (cfg.strata_cmd or os.environ.get("STRATA_CMD")):
        b = cfg.strata_bin
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            log(f"ERROR: Strata server binary not found (or not executable): {b}\n"
                f"  build it with `cargo build --release --workspace --bins` (bench/run.sh does "
                f"this unless --no-build), or set STRATA_SERVER=/path/to/strata-server, or "
                f"leave Strata out with --targets redis-nopersist,redis-aof")
            return 2
    targets = [all_targets[n] for n in cfg.targets]

    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    cfg.load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rc = 0

    def report(partial):
        cfg.load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        if partial:
            if not cfg.results:
                log("no complete rows to report")
                return
            log("partial results follow (complete rows only)")
        if cfg.markdown:
            print_markdown_table(cfg, cfg.results, sys.stdout)
        else:
            print_text_table(cfg, cfg.results, sys.stdout)
        sys.stdout.flush()
        if cfg.json:
            write_json(cfg, targets, cfg.results, cfg.json)

    try:
        for t in targets:
            t.start(cfg.tmp_root, cfg.start_timeout)
        run_all(cfg, targets)
        report(partial=False)
        if any("error" in r for r in cfg.results):
            rc = 1
    except BenchError as e:
        log(f"ERROR: {e}")
        rc = 2
    except (KeyboardInterrupt, Interrupted) as e:
        log(f"interrupted ({str(e) or 'SIGINT'}); stopping servers")
        rc = 130
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            report(partial=True)
        except Exception as e2:  # never let reporting skip the cleanup below
            log(f"could not print partial results: {e2}")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # finish cleanup even on a second ^C
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for p in list(cfg.live_procs):
            kill_proc(p, grace=2)
        for t in targets:
            t.stop(cfg.keep_tmp)
        for d in cfg.cleanup_dirs:
            shutil.rmtree(d, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
