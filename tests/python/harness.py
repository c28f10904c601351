"""Test harness: free ports, server processes, and a small exact RESP client.

Nothing here is a pytest fixture; conftest.py builds the fixtures on top of it, and tests may
import it directly (``from harness import RespConn, RespError``).
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 20.0  # seconds for a server to answer PING
STOP_GRACE = 8.0  # seconds between SIGTERM and SIGKILL


def strata_binary() -> str:
    """$STRATA_SERVER, else ${CARGO_TARGET_DIR:-<repo>/target}/release/strata-server."""
    if os.environ.get("STRATA_SERVER"):
        return os.path.abspath(os.environ["STRATA_SERVER"])
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    return str((REPO / target).resolve() / "release" / "strata-server")  # relative: to the repo


def redis_is_strata() -> bool:
    """STRATA_SERVER_IS_REDIS=1: self-check mode, where "strata" is a real redis-server."""
    return os.environ.get("STRATA_SERVER_IS_REDIS") == "1"


_handed_out: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (and that we haven't handed out yet)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("no free port found")


def directive_args(directives: dict | None) -> list[str]:
    """{"appendfsync": "always", "max_clients": 5} -> ["--appendfsync", "always", "--max-clients", "5"]"""
    args: list[str] = []
    for name, value in (directives or {}).items():
        args += ["--" + name.replace("_", "-"), str(value)]
    return args


# ---------------------------------------------------------------------------------------------
# RESP client
# ---------------------------------------------------------------------------------------------


class RespError(Exception):
    """An error reply. ``message`` is the exact text after '-' (bytes), e.g. b"ERR syntax error"."""

    def __init__(self, message: bytes):
        super().__init__(message)
        self.message = message

    def __eq__(self, other):
        return isinstance(other, RespError) and other.message == self.message

    def __hash__(self):
        return hash(self.message)

    def __repr__(self):
        return f"RespError({self.message!r})"


class Simple(bytes):
    """A simple-string reply (+OK), kept apart from bulk strings."""

    def __repr__(self):
        return f"Simple({bytes(self)!r})"


class Verbatim(bytes):
    """A RESP3 verbatim string; ``fmt`` is its 3-letter format (b"txt")."""

    fmt = b""


class Push(list):
    """A RESP3 push message."""


class Incomplete(Exception):
    pass


class ConnectionClosed(Exception):
    pass


def encode_command(*args) -> bytes:
    """RESP array of bulk strings. str is UTF-8, numbers become their decimal text."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, (int, float)):
            a = str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


def parse_reply(buf, pos: int = 0):
    """Parse one RESP2/RESP3 reply from buf[pos:]; return (value, end). Raises Incomplete."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        raise Incomplete
    kind = buf[pos : pos + 1]
    line = bytes(buf[pos + 1 : nl])
    pos = nl + 2
    if kind == b"+":
        return Simple(line), pos
    if kind == b"-":
        return RespError(line), pos
    if kind in (b":", b"("):
        return int(line), pos
    if kind in (b"$", b"=", b"!"):
        n = int(line)
        if n < 0:
            return None, pos
        if len(buf) < pos + n + 2:
            raise Incomplete
        data = bytes(buf[pos : pos + n])
        if buf[pos + n : pos + n + 2] != b"\r\n":
            raise ValueError(f"bulk string not terminated by CRLF at {pos + n}")
        pos += n + 2
        if kind == b"!":
            return RespError(data), pos
        if kind == b"=":
            v = Verbatim(data[4:])
            v.fmt = data[:3]
            return v, pos
        return data, pos
    if kind in (b"*", b"~", b">"):
        n = int(line)
        if n < 0:
            return None, pos
        items = []
        for _ in range(n):
            item, pos = parse_reply(buf, pos)
            items.append(item)
        return (Push(items) if kind == b">" else items), pos
    if kind == b"%":
        d = {}
        for _ in range(int(line)):
            k, pos = parse_reply(buf, pos)
            v, pos = parse_reply(buf, pos)
            d[tuple(k) if isinstance(k, list) else k] = v
        return d, pos
    if kind == b"|":  # attribute: skip it, return the value it annotates
        for _ in range(2 * int(line)):
            _, pos = parse_reply(buf, pos)
        return parse_reply(buf, pos)
    if kind == b"_":
        return None, pos
    if kind == b",":
        return float(line), pos
    if kind == b"#":
        return line == b"t", pos
    raise ValueError(f"not a RESP reply: type byte {kind!r} in {bytes(buf[pos - 2 - len(line) - 1 : pos])!r}")


class RespConn:
    """A plain socket that speaks RESP and keeps every reply's exact bytes.

    ``call`` returns error replies as RespError values instead of raising, so tests can compare
    and assert on them like any other reply.
    """

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0):
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = bytearray()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data: bytes):
        self.sock.sendall(data)

    def send_command(self, *args):
        self.send(encode_command(*args))

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionClosed(f"connection closed; unparsed bytes: {bytes(self.buf[:200])!r}")
        self.buf += chunk

    def read_reply_raw(self) -> bytes:
        """The exact bytes of the next complete reply."""
        while True:
            try:
                _, end = parse_reply(self.buf)
                break
            except Incomplete:
                self._fill()
        raw = bytes(self.buf[:end])
        del self.buf[:end]
        return raw

    def read_reply(self):
        return parse_reply(self.read_reply_raw())[0]

    def call_raw(self, *args) -> bytes:
        self.send_command(*args)
        return self.read_reply_raw()

    def call(self, *args):
        self.send_command(*args)
        return self.read_reply()

    def read_until_closed(self, timeout: float = 5.0) -> bytes:
        """Everything the server sends until it closes the connection (fails after timeout)."""
        deadline = time.monotonic() + timeout
        out = bytes(self.buf)
        self.buf.clear()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"server did not close the connection within {timeout}s; got {out[:300]!r}")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                return out
            if not chunk:
                return out
            out += chunk

    def read_available(self, wait: float = 0.3) -> bytes:
        """Whatever arrives within ``wait`` seconds (b"" if nothing); doesn't require a close."""
        out = bytes(self.buf)
        self.buf.clear()
        deadline = time.monotonic() + wait
        while (remaining := deadline - time.monotonic()) > 0:
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
        self.sock.settimeout(self.timeout)
        return out

    def is_closed(self, wait: float = 2.0) -> bool:
        """True if the server closed this connection within ``wait`` seconds."""
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(1, socket.MSG_PEEK) == b""
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
        finally:
            self.sock.settimeout(self.timeout)


# ---------------------------------------------------------------------------------------------
# Server processes
# ---------------------------------------------------------------------------------------------


class ServerDied(Exception):
    pass


# When strata-server can't start at all (not built, crashes at startup, never listens), every
# test would pay for its own failed start. After MAX_START_FAILURES failures in a row, further
# starts fail at once with the first failure's message. Any successful start resets this.
MAX_START_FAILURES = 3
_start_failures: list[str] = []

# Every Server ever made, so that none outlives the test process even if a fixture's teardown
# never ran (servers run in their own session, so they'd survive us otherwise).
_all_servers: "weakref.WeakSet[Server]" = weakref.WeakSet()


@atexit.register
def _kill_leftover_servers():
    for server in list(_all_servers):
        server.kill9()
        shutil.rmtree(server.workdir, ignore_errors=True)


class Client(redis.Redis):
    """redis.Redis (decode_responses=False) that also knows the server it talks to."""

    server: "Server"

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def dir(self) -> Path:
        return self.server.dir


class Server:
    """One server process on 127.0.0.1, its data dir, and its log.

    kind "strata" runs strata-server (or redis-server in STRATA_SERVER_IS_REDIS=1 mode);
    kind "redis" runs the real redis-server used as the reference.
    The data dir survives restarts; it and the log are removed by ``cleanup``.
    """

    def __init__(self, kind: str = "strata", directives: dict | None = None, config_file: str | None = None):
        assert kind in ("strata", "redis")
        self.kind = kind
        self.directives = dict(directives or {})
        self.config_file = config_file
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{kind}-test-"))
        self.dir = self.workdir / "data"
        self.dir.mkdir()
        self.log_path = self.workdir / "server.log"
        self.env: dict[str, str] = {}  # extra environment of the server process
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self._clients: list = []
        _all_servers.add(self)

    # -- process control --------------------------------------------------------------------

    def argv(self) -> list[str]:
        conf = [self.config_file] if self.config_file else []
        common = ["--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.dir)]
        if self.kind == "redis":
            # The reference: no persistence, like a scratch redis.
            return ["redis-server", *conf, *common, "--save", "", "--appendonly", "no",
                    *directive_args(self.directives)]
        if redis_is_strata():
            # Self-check: redis-server standing in for Strata, set up to persist the way Strata
            # always does (AOF, so restarts and kill -9 keep data) and to allow DEBUG.
            return ["redis-server", *conf, *common, "--save", "", "--appendonly", "yes",
                    "--enable-debug-command", "yes", *directive_args(self.directives)]
        binary = strata_binary()
        if not os.path.exists(binary):
            raise FileNotFoundError(
                f"strata-server not found at {binary}: build it with "
                "`cargo build --release -p strata-server` or set STRATA_SERVER")
        # STRATA_SERVER_ARGS: extra arguments for every Strata the tests start (e.g. to run the
        # whole suite with `--memory-tier write-back`); the test's own directives come after.
        extra = shlex.split(os.environ.get("STRATA_SERVER_ARGS", ""))
        return [binary, *conf, *common, *extra, *directive_args(self.directives)]

    def start(self, new_port: bool = True) -> "Server":
        """Start (or restart) on the same data dir; waits until PING is answered."""
        assert not self.running, "already running"
        if self.kind == "strata" and len(_start_failures) >= MAX_START_FAILURES:
            raise ServerDied(f"not trying again: strata-server failed to start {len(_start_failures)} "
                             f"times in a row; the first failure was:\n{_start_failures[0]}")
        try:
            try:
                self._start(new_port)
            except ServerDied as e:
                # free_port() can race with another process taking the port: retry once.
                if "in use" not in str(e).lower():
                    raise
                self._start(new_port=True)
        except (ServerDied, OSError) as e:
            if self.kind == "strata":
                _start_failures.append(str(e))
            raise
        if self.kind == "strata":
            _start_failures.clear()
        return self

    def _start(self, new_port: bool):
        if new_port or self.port is None:
            self.port = free_port()
        with open(self.log_path, "ab") as log:
            log.write(f"\n---- start {time.strftime('%H:%M:%S')} port {self.port} ----\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.workdir, start_new_session=True, env={**os.environ, **self.env} if self.env else None)
        self._wait_ready()

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerDied(f"{self.kind} server exited with code {self.proc.returncode} during "
                                 f"startup; argv {self.argv()}\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                    s.sendall(b"*1\r\n$4\r\nPING\r\n")
                    reply = s.recv(100)
                # Any reply but LOADING means it serves (-NOAUTH when requirepass is set).
                if reply and not reply.startswith(b"-LOADING"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.kill9()
        raise ServerDied(f"{self.kind} server did not answer PING within {START_TIMEOUT}s\n{self.log_tail()}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _close_clients(self):
        for c in self._clients:
            try:
                c.close()
            except Exception:
                pass
        self._clients.clear()

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after STOP_GRACE seconds. Returns the exit code."""
        self._close_clients()
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill9(self):
        """SIGKILL: the crash case. Nothing gets flushed."""
        self._close_clients()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self, kill: bool = False, **directives) -> "Server":
        """Stop (gracefully, or kill -9 with kill=True) and start again on the same dir.

        Extra directives given here replace or add to the server's directives."""
        self.kill9() if kill else self.stop()
        self.directives.update(directives)
        return self.start()

    def wait_exit(self, timeout: float = 10.0) -> int:
        """Wait for the process to exit by itself (e.g. after SHUTDOWN); returns the exit code."""
        return self.proc.wait(timeout)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, n: int = 60) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        return f"---- last {min(n, len(lines))} lines of {self.kind} log ----\n" + "\n".join(lines[-n:])

    # -- clients ----------------------------------------------------------------------------

    def client(self, **kwargs) -> Client:
        """A redis-py client (bytes replies). Closed when the server stops."""
        kwargs.setdefault("socket_timeout", 10)
        c = Client(host="127.0.0.1", port=self.port, decode_responses=False, **kwargs)
        c.server = self
        self._clients.append(c)
        return c

    def conn(self, timeout: float = 10.0) -> RespConn:
        """A raw RESP connection (see RespConn). Closed when the server stops."""
        c = RespConn(self.port, timeout=timeout)
        self._clients.append(c)
        return c

    def reset(self) -> bool:
        """Bring a shared server back to empty: FLUSHALL. Returns False if that didn't work."""
        self._close_clients()
        try:
            with RespConn(self.port, timeout=10) as c:
                return c.call("FLUSHALL") == b"OK"
        except (OSError, ConnectionClosed, ValueError):
            return False

    def wipe(self):
        """Stop, delete all data, start fresh (the fallback when FLUSHALL doesn't work)."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir()
        self.start()


# ---------------------------------------------------------------------------------------------
# Differential testing
# ---------------------------------------------------------------------------------------------


def _show(raw: bytes, limit: int = 400) -> str:
    return repr(raw[:limit]) + (f"... ({len(raw)} bytes)" if len(raw) > limit else "")


def _sort_key(v):
    return repr(v)


class Both:
    """Send the same thing to Strata and to the reference redis; the replies must be identical.

    ``both(*cmd)`` compares the exact reply bytes (type byte, error prefix and text, CRLFs)
    and returns the parsed reply. Errors are values here (RespError), never raised.
    """

    def __init__(self, strata: RespConn, redis_: RespConn):
        self.strata = strata
        self.redis = redis_

    def __call__(self, *cmd):
        s = self.strata.call_raw(*cmd)
        r = self.redis.call_raw(*cmd)
        assert s == r, f"reply to {_fmt(cmd)} differs\n  strata: {_show(s)}\n  redis:  {_show(r)}"
        return parse_reply(r)[0]

    def seq(self, *cmds):
        """Run several commands (tuples), comparing each reply; returns the list of replies."""
        return [self(*c) for c in cmds]

    def unordered(self, *cmd):
        """For array replies whose order is unspecified (KEYS): compare as sorted lists."""
        s = self.strata.call(*cmd)
        r = self.redis.call(*cmd)
        if isinstance(s, list) and isinstance(r, list):
            s, r = sorted(s, key=_sort_key), sorted(r, key=_sort_key)
        assert s == r, f"reply to {_fmt(cmd)} differs (order ignored)\n  strata: {s!r}\n  redis:  {r!r}"
        return r

    def each(self, *cmd):
        """Send to both without comparing (for setup steps); returns (strata_reply, redis_reply)."""
        return self.strata.call(*cmd), self.redis.call(*cmd)

    def raw(self, data: bytes, replies: int = 1) -> bytes:
        """Send raw bytes to both, read ``replies`` replies from each, compare the bytes."""
        self.strata.send(data)
        self.redis.send(data)
        s = b"".join(self.strata.read_reply_raw() for _ in range(replies))
        r = b"".join(self.redis.read_reply_raw() for _ in range(replies))
        assert s == r, f"replies to {_show(data, 200)} differ\n  strata: {_show(s)}\n  redis:  {_show(r)}"
        return r


def _fmt(cmd) -> str:
    return " ".join(repr(a) if isinstance(a, bytes) else str(a) for a in cmd)
