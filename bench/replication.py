#!/usr/bin/env python3
"""Replication benchmark: Strata and Redis, each as a leader with up to two replicas, in one run
(python3 stdlib + redis-benchmark). See bench/README.md, "Replication (issue 5)".

Sections (--sections, default all three):

  throughput  leader SET throughput (redis-benchmark) with 0, 1 and 2 replicas attached, as a
              ratio to 0 replicas; after each run, how long the replicas took to catch up and
              whether any of them needed a new full copy.
  lag         replication lag under a steady SET load: a writer process sends batches of SETs at
              a fixed rate, each batch ending with SET lag:marker <n>, and records when the leader
              acknowledged marker n; a reader process polls GET lag:marker on the replica and
              records when n became visible. Lag = visible - acknowledged (p50/p99/max).
  fullsync    time for an empty replica to copy --fullsync-mb of data (REPLICAOF until INFO says
              master_link_status:up and the replica's DBSIZE equals the leader's).

Every server binds 127.0.0.1 on a free port in its own temp dir, and is stopped by PID and its
dir removed at the end (also after an error, Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import (BenchError, Interrupted, RespConn, Target, default_strata_bin,  # noqa: E402
                   encode_command, kill_proc, log, parse_benchmark_output, tail, tool_version)

SYSTEMS = ["redis", "strata"]
SECTIONS = ["throughput", "lag", "fullsync"]
GIB = 1 << 30
MIB = 1 << 20


# --------------------------------------------------------------------------------------------
# A leader and its replicas.
# --------------------------------------------------------------------------------------------
def call(port, *args, timeout=30.0):
    c = RespConn(port, timeout=timeout)
    try:
        r = c.call(*args)
    finally:
        c.close()
    if isinstance(r, BenchError):
        raise BenchError(f"port {port}: {' '.join(map(str, args))}: {r}")
    return r


def info(port, section="replication"):
    text = call(port, "INFO", section)
    out = {}
    for line in text.decode(errors="replace").splitlines():
        k, sep, v = line.partition(":")
        if sep and not k.startswith("#"):
            out[k] = v.strip()
    return out


def dbsize(port):
    return call(port, "DBSIZE")


def wait_until(what, predicate, timeout, interval=0.02):
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Cluster:
    """One system's leader and replicas (all started; replicas attached on demand)."""

    def __init__(self, system, cfg, replicas):
        self.system = system
        self.cfg = cfg
        if system == "strata":
            make = lambda name: Target(name, [cfg.strata_bin], ["--appendfsync", "everysec"])  # noqa: E731
        else:
            # Same durability as Strata (AOF, fsync every second). Full copies go straight to the
            # socket (Redis 7's default) without the default 5 s wait for more replicas.
            make = lambda name: Target(name, [cfg.redis_server], [  # noqa: E731
                "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                "--repl-diskless-sync-delay", "0"])
        self.leader = make(f"{system}-leader")
        self.replicas = [make(f"{system}-replica{i + 1}") for i in range(replicas)]
        self.attached = 0

    @property
    def targets(self):
        return [self.leader, *self.replicas]

    def start(self):
        for t in self.targets:
            t.start(self.cfg.tmp_root, self.cfg.start_timeout)
            self.cfg.started_targets.append(t)

    def check_alive(self):
        for t in self.targets:
            if not t.alive():
                raise BenchError(f"{t.name} died: {t.dead}\n{tail(t.log_path)}")

    def attach(self, n, flush=True):
        """Exactly the first n replicas follow the leader; all data emptied first (flush)."""
        for r in self.replicas:
            call(r.port, "REPLICAOF", "NO", "ONE")
        if flush:
            for t in self.targets:
                call(t.port, "FLUSHALL", timeout=300)
        for r in self.replicas[:n]:
            call(r.port, "REPLICAOF", "127.0.0.1", self.leader.port)
        self.attached = n
        self.wait_links_up(60)

    def wait_links_up(self, timeout):
        def up():
            self.check_alive()
            li = info(self.leader.port)
            online = sum(1 for k, v in li.items() if k.startswith("slave") and k[5:].isdigit()
                         and "state=online" in v)
            return online == self.attached and all(
                info(r.port).get("master_link_status") == "up" for r in self.replicas[:self.attached])
        wait_until(f"{self.system}: {self.attached} replica link(s) up", up, timeout)

    def caught_up(self):
        leader_offset = int(info(self.leader.port)["master_repl_offset"])
        return all(int(info(r.port).get("slave_repl_offset", -1)) >= leader_offset
                   for r in self.replicas[:self.attached])

    def wait_caught_up(self, timeout):
        t0 = time.monotonic()
        wait_until(f"{self.system}: replicas to catch up", lambda: self.check_alive() or self.caught_up(),
                   timeout, interval=0.01)
        return time.monotonic() - t0

    def sync_full(self):
        return int(info(self.leader.port, "stats")["sync_full"])

    def stop(self, keep_tmp):
        for t in self.targets:
            t.stop(keep_tmp)


# --------------------------------------------------------------------------------------------
# (a) Leader throughput with 0, 1, 2 replicas.
# --------------------------------------------------------------------------------------------
def run_redis_benchmark(cfg, port, pipeline, scratch):
    n = cfg.requests if pipeline <= 1 else cfg.pipelined_requests
    argv = [cfg.redis_benchmark, "-h", "127.0.0.1", "-p", str(port), "-c", str(cfg.clients),
            "-n", str(n), "-d", str(cfg.data_size), "-r", str(cfg.keyspace), "-P", str(pipeline),
            "-t", "set"]
    out_path = os.path.join(scratch, "rb.out")
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        cfg.live_procs.append(proc)
        try:
            proc.wait(cfg.run_timeout)
        except subprocess.TimeoutExpired:
            raise BenchError(f"redis-benchmark timed out after {cfg.run_timeout}s: {shlex.join(argv)}")
        finally:
            kill_proc(proc, grace=2)
            cfg.live_procs.remove(proc)
    with open(out_path, errors="replace") as f:
        rec = parse_benchmark_output(f.read())
    rec["argv"] = argv
    return rec


def section_throughput(cfg, clusters):
    scratch = tempfile.mkdtemp(prefix="strata-bench-repl-", dir=cfg.tmp_root)
    cfg.cleanup_dirs.append(scratch)
    rows = []
    for pipeline in cfg.pipelines:
        for attached in cfg.replica_counts:
            for rep in range(cfg.repeat):
                for c in clusters:  # interleaved, so machine noise hits both systems alike
                    c.attach(attached)
                    full_before = c.sync_full()
                    rec = run_redis_benchmark(cfg, c.leader.port, pipeline, scratch)
                    rec["catch_up_s"] = c.wait_caught_up(cfg.run_timeout)
                    rec["new_full_syncs"] = c.sync_full() - full_before
                    c.check_alive()
                    rec.update(system=c.system, pipeline=pipeline, replicas=attached, repeat=rep)
                    log(f"throughput {c.system:6} P={pipeline:<3} replicas={attached}: "
                        f"{rec['ops_per_sec']:>10,.0f} SET/s  p50 {rec['p50_ms']:.3f}  p99 {rec['p99_ms']:.3f} ms"
                        f"  caught up {rec['catch_up_s']:.2f}s later, new full syncs {rec['new_full_syncs']}")
                    rows.append(rec)
    # Median over repeats, then the ratio to the same system's 0-replica figure.
    out = []
    for c in clusters:
        for pipeline in cfg.pipelines:
            base = None
            for attached in cfg.replica_counts:
                recs = sorted((r for r in rows if (r["system"], r["pipeline"], r["replicas"])
                               == (c.system, pipeline, attached)), key=lambda r: r["ops_per_sec"])
                med = dict(recs[(len(recs) - 1) // 2])
                med["repeats_ops_per_sec"] = [r["ops_per_sec"] for r in recs]
                if attached == 0:
                    base = med["ops_per_sec"]
                med["vs_0_replicas"] = med["ops_per_sec"] / base if base else None
                out.append(med)
    cfg.results["throughput"] = out
    return out


# --------------------------------------------------------------------------------------------
# (b) Replication lag under a steady write rate.
# --------------------------------------------------------------------------------------------
def _lag_writer(port, rate, seconds, value_size, keyspace, tick, out):
    """Every `tick` s: rate*tick SETs of random keys, then SET lag:marker <n>; record (n, ack time)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        per_tick = max(1, round(rate * tick))
        value = os.urandom(value_size // 2).hex().encode()[:value_size].ljust(value_size, b"v")
        acks, late_ticks, buf = [], 0, b""
        start = time.monotonic()
        n = 0
        while True:
            due = start + n * tick
            now = time.monotonic()
            if due - now > 0:
                time.sleep(due - now)
            elif now - due > tick:
                late_ticks += 1
            if time.monotonic() - start >= seconds:
                break
            n += 1
            batch = [encode_command("SET", b"lag:%d" % ((n * per_tick + i) % keyspace), value)
                     for i in range(per_tick)]
            batch.append(encode_command("SET", "lag:marker", n))
            sock.sendall(b"".join(batch))
            want = per_tick + 1
            while buf.count(b"\r\n") < want:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    raise BenchError("leader closed the connection")
                buf += chunk
            acked = time.monotonic()
            if buf != b"+OK\r\n" * want:
                raise BenchError(f"unexpected reply: {buf[:200]!r}")
            buf = b""
            acks.append((n, acked))
        elapsed = time.monotonic() - start
        out.send({"acks": acks, "late_ticks": late_ticks, "writes": n * (per_tick + 1), "elapsed": elapsed})
    except Exception as e:  # reported by the parent
        out.send({"error": repr(e)})
    finally:
        out.close()


def _lag_reader(port, stop_at, poll, out):
    """GET lag:marker on the replica until stop_at (monotonic); record when each value first shows."""
    try:
        c = RespConn(port, timeout=30)
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        seen, last = [], 0
        while time.monotonic() < stop_at:
            v = c.call("GET", "lag:marker")
            now = time.monotonic()
            if isinstance(v, bytes) and int(v) != last:
                last = int(v)
                seen.append((last, now))
            if poll:
                time.sleep(poll)
        c.close()
        out.send({"seen": seen})
    except Exception as e:
        out.send({"error": repr(e)})
    finally:
        out.close()


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, max(0, int(round(p / 100 * len(sorted_values))) - 1))]


def section_lag(cfg, clusters):
    ctx = multiprocessing.get_context("fork")
    out = []
    for c in clusters:
        c.attach(min(cfg.lag_replicas, len(c.replicas)))
        replica = c.replicas[0]
        full_before = c.sync_full()
        wr, ww = ctx.Pipe(duplex=False)
        rr, rw = ctx.Pipe(duplex=False)
        stop_at = time.monotonic() + cfg.lag_seconds + 5  # the reader sees the last marker land
        reader = ctx.Process(target=_lag_reader, args=(replica.port, stop_at, cfg.lag_poll, rw), daemon=True)
        writer = ctx.Process(target=_lag_writer, args=(c.leader.port, cfg.lag_rate, cfg.lag_seconds,
                                                       cfg.data_size, cfg.keyspace, cfg.lag_tick, ww),
                             daemon=True)
        log(f"lag {c.system}: {cfg.lag_rate:,} SET/s for {cfg.lag_seconds}s "
            f"(batches every {cfg.lag_tick * 1000:.0f} ms), reading replica {replica.name}")
        reader.start()
        writer.start()
        ww.close()
        rw.close()
        try:
            w = wr.recv() if wr.poll(cfg.lag_seconds + 60) else {"error": "writer sent nothing"}
            r = rr.recv() if rr.poll(cfg.lag_seconds + 60) else {"error": "reader sent nothing"}
        finally:
            for p in (writer, reader):
                p.join(5)
                if p.is_alive():
                    p.kill()
                    p.join()
        c.check_alive()
        if "error" in w or "error" in r:
            raise BenchError(f"lag {c.system}: writer {w.get('error')} reader {r.get('error')}")
        seen = r["seen"]
        lags, unseen, j = [], 0, 0
        for n, acked in w["acks"]:  # both lists ascend; replication applies writes in order
            while j < len(seen) and seen[j][0] < n:
                j += 1
            if j == len(seen):
                unseen += 1
                continue
            lags.append(max(0.0, seen[j][1] - acked) * 1000)
        lags.sort()
        rec = {"system": c.system, "rate": cfg.lag_rate, "achieved_rate": w["writes"] / w["elapsed"],
               "late_ticks": w["late_ticks"], "markers": len(w["acks"]), "unseen": unseen,
               "p50_ms": percentile(lags, 50), "p99_ms": percentile(lags, 99),
               "max_ms": lags[-1] if lags else None, "new_full_syncs": c.sync_full() - full_before}
        log(f"lag {c.system}: p50 {rec['p50_ms']:.2f} ms  p99 {rec['p99_ms']:.2f} ms  max {rec['max_ms']:.2f} ms "
            f"({rec['markers']} markers, {unseen} never seen, {rec['achieved_rate']:,.0f} SET/s achieved)")
        out.append(rec)
    cfg.results["lag"] = out
    return out


# --------------------------------------------------------------------------------------------
# (c) Full copy of a large data set to an empty replica.
# --------------------------------------------------------------------------------------------
def load_data(port, total_bytes, value_size, deadline, batch=500):
    """SET fill:%012d <value_size bytes> until total_bytes of values are written; returns keys.
    Values are slices of a random buffer, so compression can't shrink them much."""
    noise = os.urandom(4 * MIB)
    keys = max(1, total_bytes // value_size)
    conn = RespConn(port, timeout=120)
    inflight = []  # number of commands per unacknowledged batch: 4 batches in flight
    try:
        def drain(count):
            while conn.buf.count(b"\r\n") < count:
                conn._fill()
            *lines, conn.buf = conn.buf.split(b"\r\n", count)
            bad = [ln for ln in lines if ln != b"+OK"]
            if bad:
                raise BenchError(f"load: unexpected reply {bad[0][:200]!r}")

        for start in range(0, keys, batch):
            if time.monotonic() > deadline:
                raise BenchError("load timed out")
            end = min(start + batch, keys)
            parts = []
            for i in range(start, end):
                off = (i * 7919) % (len(noise) - value_size)
                parts.append(encode_command("SET", b"fill:%012d" % i, noise[off:off + value_size]))
            conn.sock.sendall(b"".join(parts))
            inflight.append(end - start)
            if len(inflight) >= 4:
                drain(inflight.pop(0))
        while inflight:
            drain(inflight.pop(0))
    finally:
        conn.close()
    return keys


def dir_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def section_fullsync(cfg):
    out = []
    need = cfg.fullsync_mb * MIB * 5  # leader + replica + WAL/AOF/RDB transfer files, with margin
    for system in cfg.systems:
        free = shutil.disk_usage(cfg.tmp_root or tempfile.gettempdir()).free
        if free < need:
            msg = f"only {free / GIB:.1f} GiB free, need {need / GIB:.1f} GiB"
            log(f"fullsync {system}: skipped: {msg}")
            out.append({"system": system, "error": f"skipped: {msg}"})
            continue
        c = Cluster(system, cfg, 1)
        try:
            c.start()
            total = cfg.fullsync_mb * MIB
            log(f"fullsync {system}: loading {cfg.fullsync_mb} MiB ({total // cfg.fullsync_value_size:,} keys "
                f"x {cfg.fullsync_value_size} bytes) into the leader")
            t0 = time.monotonic()
            keys = load_data(c.leader.port, total, cfg.fullsync_value_size, t0 + cfg.run_timeout * 4)
            load_s = time.monotonic() - t0
            leader_keys = dbsize(c.leader.port)
            if leader_keys != keys:
                raise BenchError(f"fullsync {system}: leader has {leader_keys} keys, loaded {keys}")
            time.sleep(cfg.settle)
            leader_disk = dir_size(c.leader.root)
            log(f"fullsync {system}: loaded in {load_s:.1f}s; leader dir {leader_disk / MIB:,.0f} MiB; "
                f"REPLICAOF on the empty replica")
            t0 = time.monotonic()
            call(c.replicas[0].port, "REPLICAOF", "127.0.0.1", c.leader.port)
            c.attached = 1

            def done():
                c.check_alive()
                i = info(c.replicas[0].port)
                return i.get("master_link_status") == "up" and dbsize(c.replicas[0].port) == keys
            wait_until(f"{system}: full sync of {cfg.fullsync_mb} MiB", done, cfg.run_timeout * 4, interval=0.05)
            sync_s = time.monotonic() - t0
            rec = {"system": system, "mib": cfg.fullsync_mb, "keys": keys, "load_s": load_s,
                   "sync_s": sync_s, "mib_per_s": cfg.fullsync_mb / sync_s,
                   "leader_disk_mib": leader_disk / MIB, "replica_disk_mib": dir_size(c.replicas[0].root) / MIB}
            log(f"fullsync {system}: {sync_s:.1f}s ({rec['mib_per_s']:.0f} MiB/s); replica dir "
                f"{rec['replica_disk_mib']:,.0f} MiB")
            out.append(rec)
        finally:
            c.stop(cfg.keep_tmp)  # deletes the gigabytes at once
            cfg.started_targets[:] = [t for t in cfg.started_targets if t not in c.targets]
    cfg.results["fullsync"] = out
    return out


# --------------------------------------------------------------------------------------------
# Output.
# --------------------------------------------------------------------------------------------
def fmt(v, spec):
    return "" if v is None else format(v, spec)


def print_markdown(cfg, out):
    print(f"_{cfg.started}; {os.cpu_count()} CPUs, load {cfg.load_before} -> {cfg.load_after}; "
          f"Redis with AOF everysec, Strata with appendfsync everysec; all on 127.0.0.1 of this machine_\n",
          file=out)
    if "throughput" in cfg.results:
        print(f"**Leader SET throughput** (`redis-benchmark -t set -c {cfg.clients} -d {cfg.data_size} "
              f"-r {cfg.keyspace}`, -n {cfg.requests} at P=1, {cfg.pipelined_requests} at P>1; "
              f"median of {cfg.repeat})\n", file=out)
        print("| system | P | replicas | SET/s | p50 ms | p99 ms | vs 0 replicas | replicas caught up after | "
              "new full syncs |", file=out)
        print("|---|--:|--:|--:|--:|--:|--:|--:|--:|", file=out)
        for r in cfg.results["throughput"]:
            print(f"| {r['system']} | {r['pipeline']} | {r['replicas']} | {r['ops_per_sec']:,.0f} | "
                  f"{r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {fmt(r['vs_0_replicas'], '.2f')}x | "
                  f"{r['catch_up_s']:.2f} s | {r['new_full_syncs']} |", file=out)
        print(file=out)
    if "lag" in cfg.results:
        print(f"**Replication lag** (writer: {cfg.lag_rate:,} SET/s of {cfg.data_size}-byte values for "
              f"{cfg.lag_seconds} s, batches every {cfg.lag_tick * 1000:.0f} ms; reader polls the replica "
              f"every {cfg.lag_poll * 1000:.1f} ms; lag = seen on replica - acknowledged by leader)\n", file=out)
        print("| system | SET/s achieved | markers | never seen | lag p50 ms | lag p99 ms | lag max ms | "
              "new full syncs |", file=out)
        print("|---|--:|--:|--:|--:|--:|--:|--:|", file=out)
        for r in cfg.results["lag"]:
            print(f"| {r['system']} | {r['achieved_rate']:,.0f} | {r['markers']} | {r['unseen']} | "
                  f"{fmt(r['p50_ms'], '.2f')} | {fmt(r['p99_ms'], '.2f')} | {fmt(r['max_ms'], '.2f')} | "
                  f"{r['new_full_syncs']} |", file=out)
        print(file=out)
    if "fullsync" in cfg.results:
        print(f"**Full sync** of an empty replica ({cfg.fullsync_value_size}-byte incompressible values; "
              f"REPLICAOF until master_link_status:up and equal DBSIZE)\n", file=out)
        print("| system | data | keys | load into leader | leader dir | full sync | MiB/s | replica dir |",
              file=out)
        print("|---|--:|--:|--:|--:|--:|--:|--:|", file=out)
        for r in cfg.results["fullsync"]:
            if "error" in r:
                print(f"| {r['system']} | {r['error']} | | | | | | |", file=out)
                continue
            print(f"| {r['system']} | {r['mib']:,} MiB | {r['keys']:,} | {r['load_s']:.1f} s | "
                  f"{r['leader_disk_mib']:,.0f} MiB | {r['sync_s']:.1f} s | {r['mib_per_s']:.0f} | "
                  f"{r['replica_disk_mib']:,.0f} MiB |", file=out)
        print(file=out)


# --------------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/replication.py",
                                description="Replication benchmark: Strata and Redis leaders with "
                                            "0-2 replicas, lag, full sync. See bench/README.md.")
    p.add_argument("--sections", default=",".join(SECTIONS), help="comma list (default: %(default)s)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma list (default: %(default)s)")
    p.add_argument("--pipelines", default="1,16", help="-P values for the throughput section (default 1,16)")
    p.add_argument("--replica-counts", default="0,1,2", help="replicas attached (default 0,1,2)")
    p.add_argument("--clients", "-c", type=int, default=50)
    p.add_argument("--data-size", "-d", type=int, default=100, help="value bytes (default 100)")
    p.add_argument("--keyspace", "-r", type=int, default=1000000)
    p.add_argument("--requests", "-n", type=int, default=None, help="-n at P=1 (default 200000)")
    p.add_argument("--pipelined-requests", type=int, default=None, help="-n at P>1 (default 1000000)")
    p.add_argument("--repeat", type=int, default=1, help="runs per row, interleaved; the median is shown")
    p.add_argument("--lag-rate", type=int, default=10000, help="SET/s of the lag writer (default 10000)")
    p.add_argument("--lag-seconds", type=float, default=None, help="length of the lag run (default 20)")
    p.add_argument("--lag-tick", type=float, default=0.01, help="seconds between the writer's batches")
    p.add_argument("--lag-poll", type=float, default=0.0002, help="reader's sleep between GETs (s)")
    p.add_argument("--lag-replicas", type=int, default=1, help="replicas attached during the lag run")
    p.add_argument("--fullsync-mb", type=int, default=None, help="MiB of values to copy (default 1024)")
    p.add_argument("--fullsync-value-size", type=int, default=1000)
    p.add_argument("--quick", action="store_true",
                   help="-n 50000/250000, 5 s of lag, 100 MiB full sync: a couple of minutes")
    p.add_argument("--settle", type=float, default=2.0, help="seconds to wait after loading (default 2)")
    p.add_argument("--run-timeout", type=float, default=300.0, help="bound on each run (s)")
    p.add_argument("--start-timeout", type=float, default=30.0)
    p.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    p.add_argument("--tmp-root", default=None, help="parent dir for temp dirs (default $TMPDIR)")
    p.add_argument("--keep-tmp", action="store_true")
    p.add_argument("--strata-bin", default=None,
                   help="default $STRATA_SERVER or ${CARGO_TARGET_DIR:-<repo>/target}/release/strata-server")
    p.add_argument("--redis-server", default=os.environ.get("REDIS_SERVER", "redis-server"))
    p.add_argument("--redis-benchmark", default=os.environ.get("REDIS_BENCHMARK", "redis-benchmark"))
    a = p.parse_args(argv)
    a.sections = [s for s in a.sections.split(",") if s]
    a.systems = [s for s in a.systems.split(",") if s]
    bad = [s for s in a.sections if s not in SECTIONS] + [s for s in a.systems if s not in SYSTEMS]
    if bad:
        p.error(f"unknown section/system {bad}")
    a.pipelines = [int(x) for x in a.pipelines.split(",")]
    a.replica_counts = [int(x) for x in a.replica_counts.split(",")]
    if a.quick:
        a.requests = a.requests or 50000
        a.pipelined_requests = a.pipelined_requests or 250000
        a.lag_seconds = a.lag_seconds or 5
        a.fullsync_mb = a.fullsync_mb or 100
    a.requests = a.requests or 200000
    a.pipelined_requests = a.pipelined_requests or 5 * a.requests
    a.lag_seconds = a.lag_seconds or 20
    a.fullsync_mb = a.fullsync_mb or 1024
    a.strata_bin = a.strata_bin or default_strata_bin()
    a.live_procs, a.cleanup_dirs, a.started_targets, a.results = [], [], [], {}
    a.started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return a


def _raise_interrupt(signum, _frame):
    raise Interrupted(f"signal {signum}")


def main(argv):
    cfg = parse_args(argv)
    for tool in (cfg.redis_benchmark, cfg.redis_server):
        if not shutil.which(tool):
            log(f"ERROR: {tool} not found on PATH")
            return 2
    if "strata" in cfg.systems and not os.access(cfg.strata_bin, os.X_OK):
        log(f"ERROR: strata-server not found at {cfg.strata_bin}: build it with "
            "`cargo build --release --workspace --bins` or set STRATA_SERVER")
        return 2
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    cfg.load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rc = 0
    clusters = []
    try:
        if {"throughput", "lag"} & set(cfg.sections):
            clusters = [Cluster(s, cfg, max(cfg.replica_counts + [cfg.lag_replicas])) for s in cfg.systems]
            for c in clusters:
                c.start()
            if "throughput" in cfg.sections:
                section_throughput(cfg, clusters)
            if "lag" in cfg.sections:
                section_lag(cfg, clusters)
            for c in clusters:
                c.stop(cfg.keep_tmp)
            clusters = []
        if "fullsync" in cfg.sections:
            section_fullsync(cfg)
    except (BenchError, OSError) as e:
        log(f"ERROR: {e!r}" if isinstance(e, OSError) else f"ERROR: {e}")
        rc = 2
    except (KeyboardInterrupt, Interrupted) as e:
        log(f"interrupted ({str(e) or 'SIGINT'}); stopping servers")
        rc = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for p in list(cfg.live_procs):
            kill_proc(p, grace=2)
        for t in cfg.started_targets:
            t.stop(cfg.keep_tmp)
        for d in cfg.cleanup_dirs:
            shutil.rmtree(d, ignore_errors=True)
    cfg.load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print_markdown(cfg, sys.stdout)
    if cfg.json:
        doc = {"started": cfg.started, "argv": sys.argv, "cpus": os.cpu_count(),
               "loadavg_before": cfg.load_before, "loadavg_after": cfg.load_after,
               "tools": {"redis-server": tool_version([cfg.redis_server, "--version"]),
                         "redis-benchmark": tool_version([cfg.redis_benchmark, "--version"]),
                         "strata-server": cfg.strata_bin},
               "results": cfg.results}
        with open(cfg.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        log(f"wrote {cfg.json}")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
