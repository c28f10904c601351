"""Helpers for tests with leaders and replicas: bounded waits and whole-server reads."""

from __future__ import annotations

import time

import redis


def wait_for(what: str, predicate, timeout: float, interval: float = 0.1, on_timeout=None):
    """Poll predicate() until it returns a truthy value (returned); fail after timeout seconds.

    Exceptions from predicate (a connection refused while a server restarts) count as "not yet";
    the last one is shown if time runs out, with on_timeout()'s text (e.g. a sentinel's log)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except (redis.exceptions.RedisError, OSError) as e:
            last = e
        if time.monotonic() >= deadline:
            extra = f"\n{on_timeout()}" if on_timeout else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}{extra}")
        time.sleep(interval)


def info(server, section: str = "replication") -> dict:
    with server.client() as c:
        return c.info(section)


def role(server) -> list:
    with server.client() as c:
        return c.execute_command("ROLE")


def all_strings(server) -> dict[bytes, bytes]:
    """Every string key and its value (the tests write only strings)."""
    with server.client() as c:
        keys = sorted(c.scan_iter(count=1000))
        values = c.mget(keys) if keys else []
        return dict(zip(keys, values))
