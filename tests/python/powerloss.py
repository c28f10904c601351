"""Power-loss simulation: a kill -9 that also loses what was never synced to disk.

A kill -9 loses only what the process still held; whatever it had handed to the kernel is in the
page cache and survives. A power cut (or a kernel crash) also loses every byte that was written
but not yet fsynced, which is the case ``appendfsync`` is about. This module simulates it:

- while the server runs, ``powerloss_shim.c`` (loaded with LD_PRELOAD) appends to a side log the
  length of every file under the data directory at the start of each successful
  fsync/fdatasync of it: those bytes are durable once the sync returns;
- ``crash`` kills the server with SIGKILL and then cuts every write-ahead log (``NNNNNN.log``, and
  the write-back tier's ``redo/NNNNNNNNNNNN.log``),
  MANIFEST and table file (``.sst``, ``.blob``) back to its last durable length, and deletes
  those created since the server started that were never synced. Files that were there when
  the server started count as durable at the length they had then (``arm`` records it).
- with ``torn_tails``, a write-ahead log's unsynced tail is not always dropped whole: as a real
  disk may have written back part of it, a cut keeps a random part of it (so the log ends in a
  torn record), or keeps a random part and turns the rest into zeros (a file whose length
  reached the disk before its data). The loss figures come from whole drops, the worst case.

Only the data of those append-only files is dropped. Files RocksDB replaces by rename (CURRENT,
OPTIONS) are written to a temporary name, synced and renamed, and are left alone; so are
directory entries (a real power cut could also undo a rename or an unlink that was never
followed by a directory fsync, which RocksDB does after each of them).

Needs Linux, glibc and a C compiler (the shim is compiled on first use into the temp dir);
``Unavailable`` says why when one is missing.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import Server

SHIM_SOURCE = Path(__file__).with_name("powerloss_shim.c")
# Files whose unsynced tail a power cut drops: append-only, never renamed.
DROPPABLE = re.compile(r"^(?:\d+\.(?:log|sst|blob)|MANIFEST-\d+)$")


class Unavailable(Exception):
    """The simulation cannot run here (not Linux, or no C compiler)."""


def shim_library() -> str:
    """The path of the compiled shim, built once per version of its source."""
    if not sys.platform.startswith("linux"):
        raise Unavailable("the power-loss shim needs Linux (/proc/self/fd, LD_PRELOAD)")
    source = SHIM_SOURCE.read_bytes()
    out = Path(tempfile.gettempdir()) / f"strata-powerloss-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if out.exists():
        return str(out)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise Unavailable("no C compiler (cc, gcc or clang) to build the power-loss shim")
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    try:
        subprocess.run([cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", str(tmp), str(SHIM_SOURCE), "-ldl"],
                       check=True, capture_output=True, timeout=120)
    except subprocess.CalledProcessError as e:
        raise Unavailable(f"building the power-loss shim failed:\n{e.stderr.decode(errors='replace')}") from None
    os.replace(tmp, out)
    return str(out)


@dataclass
class Dropped:
    """What one simulated power cut threw away."""

    bytes: int = 0  # unsynced bytes cut from the ends of files (deleted files included)
    truncated: int = 0  # files cut back to their last synced length
    deleted: int = 0  # files created since the start and never synced

    def add(self, other: "Dropped"):
        self.bytes += other.bytes
        self.truncated += other.truncated
        self.deleted += other.deleted


def read_durable(log_path: Path) -> dict[str, int]:
    """path -> longest length known durable, from the shim's log. A last line without its
    newline (the kill landed in the middle of writing it) is ignored."""
    try:
        text = log_path.read_bytes().decode(errors="surrogateescape")
    except FileNotFoundError:
        return {}
    durable: dict[str, int] = {}
    for line in text.split("\n")[:-1]:
        size, _, path = line.partition(" ")
        if size.isdigit() and path:
            durable[path] = max(durable.get(path, 0), int(size))
    return durable


# Directories under the data directory whose files a power cut may cut too: the write-back
# tier's redo log (``redo/NNNNNNNNNNNN.log``; its ``archive/`` holds segments synced before a
# checkpoint moved them there, so a power cut leaves them whole).
SUBDIRS = ("redo",)


def droppable(data_dir: Path) -> list[Path]:
    dirs = [data_dir] + [data_dir / d for d in SUBDIRS if (data_dir / d).is_dir()]
    return [p for d in dirs for p in d.iterdir() if DROPPABLE.match(p.name) and p.is_file()]


def arm(data_dir: Path, log_path: Path):
    """Starts a new life: the files in ``data_dir`` now are durable at their present length."""
    log_path.write_text("".join(f"{p.stat().st_size} {p}\n" for p in droppable(data_dir)))


def drop_unsynced(data_dir: Path, log_path: Path, torn: random.Random | None = None) -> Dropped:
    """What a power cut does to ``data_dir`` (its writer must be dead): every droppable file is
    cut back to its last durable length, and one with none is deleted. With ``torn`` (a random
    source), a log's unsynced tail may instead be kept in part, or in part and then zeros."""
    durable = read_durable(log_path)
    dropped = Dropped()
    for p in droppable(data_dir):
        size = p.stat().st_size
        keep = durable.get(str(p))
        if keep is None:
            p.unlink()
            dropped.deleted += 1
            dropped.bytes += size
        elif size > keep:
            how = torn.choice(["cut", "torn", "zeros"]) if torn and p.suffix == ".log" else "cut"
            if how != "cut":
                keep = torn.randint(keep, size)
            os.truncate(p, keep)
            if how == "zeros":
                with open(p, "r+b") as f:
                    f.seek(keep)
                    f.write(b"\0" * (size - keep))
            dropped.truncated += 1
            dropped.bytes += size - keep
    return dropped


def shim_env(data_dir: Path, log_path: Path) -> dict[str, str]:
    """The environment that makes a process record its syncs of files in ``data_dir``."""
    return {"LD_PRELOAD": shim_library(), "STRATA_POWERLOSS_LOG": str(log_path),
            "STRATA_POWERLOSS_DIR": str(data_dir)}


class PowerLoss:
    """Attaches the simulation to a ``harness.Server`` (restarting it if it runs).

    ``crash()`` is the simulated power cut; call ``arm()`` before every later ``server.start()``
    (``run_crash_cycles`` does both)."""

    def __init__(self, server: Server, torn_tails: bool = False, seed: int = 0):
        self.server = server
        self.torn = random.Random(seed) if torn_tails else None
        self.data_dir = Path(os.path.realpath(server.dir))
        self.log_path = server.workdir / "synced-lengths.log"
        server.env.update(shim_env(self.data_dir, self.log_path))
        self.total = Dropped()
        if server.running:
            server.stop()
        self.arm()
        server.start()

    def arm(self):
        """Before a start: the files there now are durable at their present length."""
        arm(self.data_dir, self.log_path)

    def crash(self) -> Dropped:
        """SIGKILL, then drop every byte that was not synced."""
        self.server.kill9()
        dropped = drop_unsynced(self.data_dir, self.log_path, self.torn)
        self.total.add(dropped)
        return dropped
