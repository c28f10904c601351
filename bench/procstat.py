"""Small helpers the A/B benchmark scripts share: a free loopback port, and a process's CPU
time from /proc (user + system, in clock ticks or seconds)."""

from __future__ import annotations

import os
import socket

TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid: int) -> int:
    """User + system CPU of process `pid` so far, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process `pid` so far, in seconds."""
    return cpu_ticks(pid) / TICKS
