"""Starting the server: command-line directives, config files, and clear failures."""

import re
import socket
import subprocess

import pytest

from harness import free_port, redis_is_strata, strata_binary


def _argv(*args):
    """The strata-server command line (redis-server in STRATA_SERVER_IS_REDIS=1 mode)."""
    return ["redis-server" if redis_is_strata() else strata_binary(), *args]


def _run_expecting_failure(args, tmp_path, timeout=15):
    """Start the server with args; it must exit by itself, non-zero. Returns its output."""
    try:
        proc = subprocess.run(_argv(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, cwd=tmp_path, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"server kept running with {args}; output: {e.output!r}")
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode != 0, f"exit code 0 for {args}; output:\n{out}"
    assert "panicked" not in out and "stack backtrace" not in out.lower() and "RUST_BACKTRACE" not in out, \
        f"a startup error should be a message, not a panic:\n{out}"
    return out


def _base(tmp_path, port=None):
    return ["--bind", "127.0.0.1", "--port", str(port or free_port()), "--dir", str(tmp_path)]


def test_unknown_directive_is_refused_and_named(tmp_path):
    out = _run_expecting_failure([*_base(tmp_path), "--no-such-directive", "1"], tmp_path)
    assert "no-such-directive" in out, out


def test_unknown_directive_in_config_file_is_refused_and_named(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("appendfsync everysec\nbogusdirective yes\n")
    out = _run_expecting_failure([str(conf), *_base(tmp_path)], tmp_path)
    assert "bogusdirective" in out, out


@pytest.mark.parametrize("name,value", [
    ("port", "notaport"),
    ("port", "70000"),
    ("appendfsync", "sometimes"),
    ("databases", "-3"),
    ("maxclients", "many"),
])
def test_bad_directive_value_is_refused_and_named(tmp_path, name, value):
    out = _run_expecting_failure([*_base(tmp_path), f"--{name}", value], tmp_path)
    assert name in out, out


def test_port_in_use_fails_clearly(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        out = _run_expecting_failure(_base(tmp_path, port), tmp_path)
    assert re.search(r"already in use", out, re.I), out
    assert str(port) in out, out


def test_missing_config_file_fails_clearly(tmp_path):
    missing = tmp_path / "nope.conf"
    out = _run_expecting_failure([str(missing), *_base(tmp_path)], tmp_path)
    assert "nope.conf" in out, out


def test_config_file_directives_apply_and_command_line_overrides(start_strata, tmp_path):
    file_port = free_port()
    conf = tmp_path / "strata.conf"
    conf.write_text(
        "# Strata test configuration\n"
        f"port {file_port}\n"
        "requirepass secret\n"
        "appendfsync always\n"
        "\n"
        "databases 4\n"
    )
    s = start_strata(config_file=str(conf))  # adds --port <another port> after the file
    assert s.port != file_port
    c = s.conn()
    assert c.call_raw("GET", "k") == b"-NOAUTH Authentication required.\r\n"
    assert c.call("AUTH", "secret") == b"OK"
    assert c.call("CONFIG", "GET", "appendfsync") == [b"appendfsync", b"always"]
    assert c.call("CONFIG", "GET", "port") == [b"port", str(s.port).encode()]
    assert c.call("CONFIG", "GET", "databases") == [b"databases", b"4"]
    assert c.call_raw("SELECT", "4") == b"-ERR DB index is out of range\r\n"
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", file_port)) != 0, "the config file's port should be overridden"


def test_directives_on_the_command_line_apply(start_strata):
    s = start_strata(appendfsync="always", databases="2")
    c = s.conn()
    assert c.call("CONFIG", "GET", "appendfsync") == [b"appendfsync", b"always"]
    assert c.call_raw("SELECT", "1") == b"+OK\r\n"
    assert c.call_raw("SELECT", "2") == b"-ERR DB index is out of range\r\n"


def test_sigterm_stops_the_server_cleanly(start_strata):
    s = start_strata()
    s.client().set("k", "v")
    assert s.stop() == 0, f"exit code after SIGTERM\n{s.log_tail()}"
    s.start()
    assert s.client().get("k") == b"v"


def test_server_log_has_no_panic_on_normal_run(start_strata):
    s = start_strata()
    c = s.conn()
    c.call("SET", "k", "v")
    c.call("FOO")
    s.stop()
    assert "panicked" not in s.log_path.read_text(errors="replace")


def test_two_servers_on_different_dirs_are_independent(start_strata):
    a, b = start_strata(), start_strata()
    a.client().set("k", "a")
    b.client().set("k", "b")
    assert a.client().get("k") == b"a" and b.client().get("k") == b"b"
