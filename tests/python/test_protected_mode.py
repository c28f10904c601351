"""Protected mode (Redis 7.0): while protected-mode is yes and the default user has no password,
a client whose address is not exactly 127.0.0.1 or ::1 gets Redis's -DENIED text and is closed.

A non-loopback client is made on any Linux machine by binding the client socket to 127.0.0.2
(Redis, like Strata, counts only 127.0.0.1 and ::1 as local); when the machine has a
non-loopback address, the server is also reached through it. Every case is compared with a
real redis-server byte for byte."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest

from harness import RespConn


def _from(source: str, port: int, host: str = "127.0.0.1", send: bytes = b"*1\r\n$4\r\nPING\r\n") -> bytes:
    """Connects from `source`, sends a PING, and returns everything until the server closes
    (or 2 seconds pass)."""
    s = socket.socket()
    s.settimeout(2)
    s.bind((source, 0))
    s.connect((host, port))
    out = b""
    try:
        time.sleep(0.1)
        s.sendall(send)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        pass
    finally:
        s.close()
    return out


def _denied(out: bytes) -> bool:
    return out.startswith(b"-DENIED Redis is running in protected mode")


def _both(start_strata, start_redis, **directives):
    return start_strata(**directives), start_redis(**directives)


def test_remote_client_gets_redis_denied_text_and_is_closed(start_strata, start_redis):
    strata, ref = _both(start_strata, start_redis)
    got, want = _from("127.0.0.2", strata.port), _from("127.0.0.2", ref.port)
    assert _denied(want)
    assert got == want
    assert got.endswith(b"connections from the outside.\r\n")
    assert strata.client().info("stats")["rejected_connections"] == 1


def test_loopback_client_is_served(start_strata):
    strata = start_strata()
    assert _from("127.0.0.1", strata.port) == b"+PONG\r\n"
    with RespConn(strata.port) as c:
        assert c.call("PING") == b"PONG"


def test_a_default_password_turns_protection_off(start_strata, start_redis):
    strata, ref = _both(start_strata, start_redis, requirepass="secret")
    got, want = _from("127.0.0.2", strata.port), _from("127.0.0.2", ref.port)
    assert got.startswith(b"-NOAUTH")
    assert got == want


def test_acl_password_on_the_default_user_turns_protection_off(start_strata, start_redis):
    strata, ref = _both(start_strata, start_redis)
    for server in (strata, ref):
        with RespConn(server.port) as c:
            assert c.call("ACL", "SETUSER", "default", "resetpass", ">pw") == b"OK"
    got, want = _from("127.0.0.2", strata.port), _from("127.0.0.2", ref.port)
    assert got.startswith(b"-NOAUTH")
    assert got == want
    for server in (strata, ref):
        with RespConn(server.port) as c:
            assert c.call("AUTH", "pw") == b"OK"
            assert c.call("ACL", "SETUSER", "default", "nopass") == b"OK"
    assert _denied(_from("127.0.0.2", strata.port))


def test_config_set_protected_mode_no_lets_remote_clients_in(start_strata, start_redis):
    strata, ref = _both(start_strata, start_redis)
    for server in (strata, ref):
        server.client().config_set("protected-mode", "no")
    got, want = _from("127.0.0.2", strata.port), _from("127.0.0.2", ref.port)
    assert got == want == b"+PONG\r\n"
    strata.client().config_set("protected-mode", "yes")
    assert _denied(_from("127.0.0.2", strata.port))


def test_protected_mode_off_at_start(start_strata):
    strata = start_strata(protected_mode="no")
    assert _from("127.0.0.2", strata.port) == b"+PONG\r\n"


def _non_loopback_address() -> str | None:
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for addr in out.split():
        if ":" not in addr and not addr.startswith("127."):
            return addr
    return None


def test_remote_client_on_a_real_interface_is_denied(start_strata, start_redis):
    addr = _non_loopback_address()
    if addr is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    bind = f"127.0.0.1 {addr}"
    strata, ref = _both(start_strata, start_redis, bind=bind)
    got = _from(addr, strata.port, host=addr)
    assert got == _from(addr, ref.port, host=addr)
    assert _denied(got)
    with RespConn(strata.port) as c:
        assert c.call("PING") == b"PONG"
