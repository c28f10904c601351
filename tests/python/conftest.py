"""Fixtures for Strata's acceptance tests.

The tests are written to the Redis spec: most send the same commands to Strata and to a real
redis-server and require byte-identical replies (the ``both`` fixture).

Fixtures
  strata        redis.Redis client (bytes replies) to a shared, emptied Strata server.
                ``strata.server`` is its harness.Server (``.port``, ``.dir``, ``.conn()`` for a raw
                RESP connection, ``.restart()``, ``.kill9()``); prefer ``start_strata`` for tests
                that restart, kill or reconfigure a server.
  strata_server the shared Strata's harness.Server itself (emptied), for raw connections.
  redis_ref     the same as ``strata`` for the shared reference redis-server
                (``--save '' --appendonly no``); ``redis_server`` is its Server.
  both          harness.Both over fresh raw connections (db 0, RESP2) to the two:
                ``both("SET", "k", "v")`` compares the exact reply bytes and returns the parsed
                reply; ``both.unordered(...)`` ignores array order; ``both.raw(b"...")`` sends
                raw bytes; ``both.each(...)`` sends without comparing.
  start_strata  factory: ``start_strata(appendfsync="always")`` starts a private Strata with
                extra ``--directive value`` pairs (config_file=... too); stopped after the test.
  start_redis   the same for a private reference redis-server.

Every test gets an empty server (FLUSHALL; a restart if that fails) and fresh connections; a
shared server that a test crashed is restarted and its log printed with that test's output.
Servers bind 127.0.0.1 on free ports, use temp dirs, and are stopped with SIGTERM (then SIGKILL).

Environment
  STRATA_SERVER            path of the strata-server binary (default:
                           ${CARGO_TARGET_DIR:-<repo>/target}/release/strata-server).
  STRATA_SERVER_IS_REDIS=1 self-check of the tests themselves: every "Strata" server is a real
                           redis-server (with --appendonly yes, so persistence tests apply), so
                           the whole suite must pass. Run it after changing a test:
                             STRATA_SERVER_IS_REDIS=1 .venv/bin/python -m pytest -q tests/python
  STRATA_SERVER_ARGS       extra arguments for every strata-server started (before each test's
                           own directives), e.g. "--memory-tier write-back" to run the suite
                           with the write-back tier.
"""

from __future__ import annotations

import signal
import sys

import pytest
import redis

from harness import Both, Server, ServerDied, redis_is_strata


class _Shared:
    """A server shared by many tests: started on first use, emptied before each test, and
    restarted (fresh) if a test killed it or if FLUSHALL doesn't work."""

    def __init__(self, kind: str):
        self.kind = kind
        self.server: Server | None = None

    def get(self) -> Server:
        if self.server is None:
            self.server = Server(self.kind)
        s = self.server
        if not s.running:
            if s.proc is not None:
                print(f"shared {self.kind} server had died; restarting\n{s.log_tail()}", file=sys.stderr)
            s.start()
        elif not s.reset():
            s.wipe()
        return s

    def close(self):
        if self.server is not None:
            self.server.cleanup()


@pytest.fixture(scope="session")
def _shared_strata():
    shared = _Shared("strata")
    yield shared
    shared.close()


@pytest.fixture(scope="session")
def _shared_redis():
    shared = _Shared("redis")
    yield shared
    shared.close()


def _report_death(server: Server, request):
    """After a test: if it crashed the server, show the server's log with the test's output."""
    code = server.proc.poll() if server.proc is not None else None
    if code not in (None, 0, -signal.SIGKILL, -signal.SIGTERM):
        print(f"{server.kind} server exited (code {server.proc.returncode}) during "
              f"{request.node.name}\n{server.log_tail()}", file=sys.stderr)


@pytest.fixture
def strata_server(_shared_strata, request) -> Server:
    """The shared Strata server's handle, emptied."""
    server = _shared_strata.get()
    yield server
    _report_death(server, request)


@pytest.fixture
def strata(strata_server):
    """redis.Redis client (decode_responses=False) to the shared, emptied Strata server."""
    return strata_server.client()


@pytest.fixture
def redis_server(_shared_redis, request) -> Server:
    server = _shared_redis.get()
    yield server
    _report_death(server, request)


@pytest.fixture
def redis_ref(redis_server):
    """redis.Redis client to the shared, emptied reference redis-server."""
    return redis_server.client()


@pytest.fixture
def both(strata_server, redis_server) -> Both:
    """Differential helper over fresh raw connections (db 0, RESP2) to Strata and redis."""
    return Both(strata_server.conn(), redis_server.conn())


def _factory(kind: str):
    servers: list[Server] = []

    def start(config_file: str | None = None, **directives) -> Server:
        server = Server(kind, directives, config_file=config_file)
        servers.append(server)
        return server.start()

    return start, servers


@pytest.fixture
def start_strata(request):
    """start_strata(config_file=None, **directives) -> a started private Strata Server."""
    start, servers = _factory("strata")
    yield start
    for s in servers:
        _report_death(s, request)
        s.cleanup()


@pytest.fixture
def start_redis():
    """start_redis(**directives) -> a started private reference redis-server."""
    start, servers = _factory("redis")
    yield start
    for s in servers:
        s.cleanup()


# A server that stops answering would make every remaining test wait for its socket timeout.
# After this many tests in a row fail on a timeout, the session stops (and reports it).
MAX_CONSECUTIVE_TIMEOUTS = 5
_timeouts_in_a_row = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    global _timeouts_in_a_row
    report = (yield).get_result()
    if report.when != "call":
        return
    timed_out = report.failed and call.excinfo is not None and (
        call.excinfo.errisinstance((TimeoutError, redis.exceptions.TimeoutError))
        or str(call.excinfo.value).startswith("Timeout"))  # pytest-timeout
    if timed_out:
        _timeouts_in_a_row += 1
        if _timeouts_in_a_row >= MAX_CONSECUTIVE_TIMEOUTS:
            item.session.shouldstop = (f"{_timeouts_in_a_row} tests in a row timed out waiting "
                                       "for the server; stopping")
    elif report.passed:
        _timeouts_in_a_row = 0


def pytest_report_header(config):
    from harness import strata_binary

    if redis_is_strata():
        return "strata: SELF-CHECK MODE, real redis-server stands in for strata-server"
    return f"strata: {strata_binary()}"


# ServerDied is re-exported for tests that expect startup failures.
__all__ = ["ServerDied"]
