"""CONFIG GET/SET/REWRITE of every Redis 7.0 parameter, compared with a real redis-server.

Strata accepts every parameter Redis 7.0 has, with Redis's validation, aliases and error texts,
even those that change nothing in Strata (docs/differences.md lists them). The parameter list
comes from the reference server itself (``CONFIG GET *``), so a parameter Strata forgot fails
here.
"""

import re

import pytest

from harness import RespError, redis_is_strata

# Parameters whose value legitimately differs between the two servers, with the reason.
DIFFERENT_BY_DESIGN = {
    "port", "bind",  # each server listens on its own port; Strata can't rebind at runtime
    "dir", "pidfile", "daemonize",  # per-process start-up settings
    "save",  # the reference runs with --save ''; Strata's default keeps Redis's save points
    "repl-backlog-size", "repl-backlog-ttl",  # Strata's backlog is its write-ahead log
    "enable-debug-command",  # the harness's self-check starts its stand-in with it
}

# Parameters a reference redis-server can't take in this test's environment (they open
# sockets, files or TLS contexts), so there is nothing to compare with.
ENVIRONMENT_BOUND = {
    "tls-port", "tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file",
    "tls-client-key-file", "tls-client-key-file-pass", "tls-dh-params-file", "tls-ca-cert-file",
    "tls-ca-cert-dir", "tls-protocols", "tls-ciphers", "tls-ciphersuites", "tls-cluster",
    "tls-replication", "tls-auth-clients", "tls-prefer-server-ciphers", "tls-session-caching",
    "tls-session-cache-size", "tls-session-cache-timeout",
    "requirepass",  # would lock this test's connections out
    "oom-score-adj", "oom-score-adj-values",  # writes /proc/self/oom_score_adj
}

# Values chosen where "the next value" would disturb the reference server.
VALUES = {
    "maxmemory": "1gb",
    "maxmemory-clients": "50%",
    "client-output-buffer-limit": "normal 1mb 512kb 10 slave 256mb 64mb 60 pubsub 32mb 8mb 60",
    "notify-keyspace-events": "KEA",
    "latency-tracking-info-percentiles": "50 99.5",
    "shutdown-on-sigint": "save now",
    "shutdown-on-sigterm": "nosave force",
    "proc-title-template": "{title} {port}",
    "timeout": "1000",
    "appendonly": "no",
    "slaveof": "no one",
    "replicaof": "no one",
    "proto-max-bulk-len": "1gb",
    "client-query-buffer-limit": "2gb",
}


def _pairs(reply) -> dict:
    assert isinstance(reply, list) and len(reply) % 2 == 0, reply
    return dict(zip(reply[::2], reply[1::2]))


def _other_value(conn, name: str, current: bytes) -> str:
    """A valid value different from ``current``, worked out from the kind of the value."""
    if name in VALUES:
        return VALUES[name]
    text = current.decode()
    if text in ("yes", "no"):
        return "no" if text == "yes" else "yes"
    if re.fullmatch(r"-?\d+", text):
        return str(int(text) + 1)
    # An enumeration: the error lists the choices.
    err = conn.call("CONFIG", "SET", name, "no-such-choice")
    if isinstance(err, RespError):
        m = re.search(r"must be one of the following: (.*)", err.message.decode())
        if m:
            choices = [c for c in m.group(1).split(", ") if c != text]
            return choices[0]
    return text + "x" if text else "abc"


@pytest.fixture
def pair(start_strata, start_redis):
    """A private Strata and a private reference redis-server (CONFIG SET changes them)."""
    return start_strata().conn(), start_redis().conn()


def test_every_redis_parameter_can_be_set_and_read_back_as_redis_does(pair):
    strata, redis_ = pair
    names = sorted(_pairs(redis_.call("CONFIG", "GET", "*")))
    assert len(names) > 180
    compared = 0
    for raw in names:
        name = raw.decode()
        before = _pairs(redis_.call("CONFIG", "GET", name))[raw]
        got = strata.call("CONFIG", "GET", name)
        assert got and got[0] == raw, f"Strata doesn't know {name}: {got!r}"
        if name in ENVIRONMENT_BOUND:
            continue
        value = _other_value(redis_, name, before)
        r = redis_.call_raw("CONFIG", "SET", name, value)
        s = strata.call_raw("CONFIG", "SET", name, value)
        if name in DIFFERENT_BY_DESIGN:
            continue
        assert s == r, f"CONFIG SET {name} {value!r}: strata {s!r}, redis {r!r}"
        s_get = strata.call("CONFIG", "GET", name)
        r_get = redis_.call("CONFIG", "GET", name)
        assert s_get == r_get, f"CONFIG GET {name} after SET {value!r}"
        compared += 1
    assert compared > 150


@pytest.mark.parametrize("args", [
    # yes/no
    ["activerehashing", "maybe"],
    ["replica-lazy-flush", "1"],
    # integers: syntax and bounds, signed and unsigned
    ["list-compress-depth", "abc"],
    ["list-compress-depth", "-1"],
    ["list-max-ziplist-size", "+5"],
    ["active-defrag-cycle-max", "100"],
    ["zset-max-ziplist-entries", "-1"],
    ["hash-max-listpack-entries", "9223372036854775808"],
    ["slowlog-log-slower-than", "-2"],
    ["maxclients", "0"],
    # memory sizes
    ["hash-max-ziplist-value", "1xb"],
    ["zset-max-listpack-value", "-1"],
    ["proto-max-bulk-len", "1000"],
    ["maxmemory", "12.5mb"],
    # memory or percent
    ["maxmemory-clients", "200%"],
    ["maxmemory-clients", "x%"],
    # enumerations
    ["maxmemory-policy", "sometimes"],
    ["repl-diskless-load", "eventually"],
    ["oom-score-adj", "maybe"],
    ["shutdown-on-sigint", "save nosave"],
    ["shutdown-on-sigterm", "later"],
    # text with a check
    ["cluster-announce-hostname", "no spaces"],
    ["proc-title-template", "{nope}"],
    ["proc-title-template", "{title}"],
    # syntaxes of their own
    ["save", "100"],
    ["save", "0 5"],
    ["notify-keyspace-events", "KEq"],
    ["client-output-buffer-limit", "nobody 1 1 1"],
    ["client-output-buffer-limit", "normal 1 1"],
    ["oom-score-adj-values", "0 200"],
    ["oom-score-adj-values", "0 200 3000"],
    ["latency-tracking-info-percentiles", "50 101"],
    ["latency-tracking-info-percentiles", "fifty"],
    ["activedefrag", "yes"],
    ["hz", "-1"],
    # who may change what
    ["daemonize", "no"],
    ["io-threads", "2"],
    ["enable-debug-command", "yes"],
    ["dbfilename", "other.rdb"],
    ["dir", "/tmp"],
    ["appendfilename", "x.aof"],
    # names: unknown (as typed), aliases, duplicates, several pairs
    ["No-Such-Option", "1"],
    ["hash-max-ziplist-entries", "x"],
    ["HASH-MAX-ZIPLIST-ENTRIES", "x"],
    ["maxclients", "10", "MAXCLIENTS", "11"],
    ["hz", "10", "nosuch", "1", "tcp-backlog", "1"],
    ["tcp-backlog", "1", "nosuch", "1"],
    ["maxclients"],
    ["hz", "10", "maxclients"],
])
def test_config_set_errors_match_redis(both, args):
    both("CONFIG", "SET", *args)


@pytest.mark.skipif(redis_is_strata(), reason="Strata's own rule (Redis can change port)")
def test_settings_strata_fixes_at_start_up_accept_only_their_current_value(start_strata):
    s = start_strata()
    c = s.conn()
    assert c.call("CONFIG", "SET", "port", str(s.port), "bind", "127.0.0.1",
                  "compression", "lz4") == b"OK"
    for name, value in (("port", "1"), ("repl-backlog-ttl", "5"), ("compression", "zstd")):
        assert c.call("CONFIG", "SET", name, value) == RespError(
            f"ERR CONFIG SET failed (possibly related to argument '{name}') - "
            "can't set immutable config".encode())


def test_config_set_several_pairs_is_all_or_nothing(pair):
    strata, redis_ = pair
    for conn in (strata, redis_):
        assert conn.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru",
                         "zset-max-ziplist-entries", "7", "list-compress-depth", "x") != b"OK"
        got = _pairs(conn.call("CONFIG", "GET", "maxmemory-policy", "zset-max-listpack-entries",
                               "list-compress-depth"))
        assert got == {b"maxmemory-policy": b"noeviction", b"zset-max-listpack-entries": b"128",
                       b"list-compress-depth": b"0"}
        assert conn.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru",
                         "zset-max-ziplist-entries", "7", "hash-max-ziplist-value", "1kb") == b"OK"
    query = ("CONFIG", "GET", "maxmemory-policy", "zset-max-*", "hash-max-listpack-value")
    assert _pairs(strata.call(*query)) == _pairs(redis_.call(*query))
    assert _pairs(strata.call(*query))[b"hash-max-listpack-value"] == b"1024"


def test_config_get_several_patterns_reports_each_name_once(pair):
    strata, redis_ = pair
    for query in (
        ("CONFIG", "GET", "zset-max-*", "hash-max-ziplist-entries", "HASH-MAX-ZIPLIST-ENTRIES"),
        ("CONFIG", "GET", "PORT", "por*", "hz"),
        ("CONFIG", "GET", "*-ziplist-*", "list-*"),
        ("CONFIG", "GET", "*ignore*", "nosuch", "*read-only"),
        ("CONFIG", "GET", "rdb-key-save-delay", "rdb-*"),  # hidden: by exact name only
    ):
        s, r = _pairs(strata.call(*query)), _pairs(redis_.call(*query))
        s.pop(b"port", None), r.pop(b"port", None)
        s.pop(b"PORT", None), r.pop(b"PORT", None)
        assert s == r, query
        assert len(strata.call(*query)) == len(redis_.call(*query)) or b"port" in query[2:]


REWRITTEN = [
    ("zset-max-ziplist-entries", "7"),
    ("hash-max-listpack-value", "1kb"),
    ("list-compress-depth", "2"),
    ("list-max-ziplist-size", "-3"),
    ("maxmemory-clients", "10%"),
    ("maxmemory", "3gb"),
    ("latency-tracking-info-percentiles", "50 99.5"),
    ("shutdown-on-sigterm", "nosave now"),
    ("slowlog-max-len", "9"),
    ("lazyfree-lazy-user-del", "yes"),
    ("acl-pubsub-default", "allchannels"),
    ("replica-announce-ip", "a b"),
    ("notify-keyspace-events", "Kx"),
]


def _rewritten_lines(text: str) -> list[str]:
    names = {"zset-max-listpack-entries", "hash-max-listpack-value"} | {n for n, _ in REWRITTEN}
    return sorted(line for line in text.splitlines() if line.split(" ", 1)[0] in names)


def test_config_rewrite_keeps_every_kind_of_parameter(start_strata, start_redis, tmp_path):
    lines = {}
    for kind, start in (("strata", start_strata), ("redis", start_redis)):
        conf = tmp_path / f"{kind}.conf"
        conf.write_text("# rewrite test\nhash-max-ziplist-entries 100\n")
        server = start(config_file=str(conf))
        c = server.conn()
        for name, value in REWRITTEN:
            assert c.call("CONFIG", "SET", name, value) == b"OK", name
        expected = _pairs(c.call("CONFIG", "GET", *[n for n, _ in REWRITTEN],
                                 "hash-max-ziplist-entries"))
        assert c.call("CONFIG", "REWRITE") == b"OK"
        lines[kind] = _rewritten_lines(conf.read_text())
        server.restart()
        again = _pairs(server.conn().call("CONFIG", "GET", *[n for n, _ in REWRITTEN],
                                          "hash-max-ziplist-entries"))
        assert again == expected, kind
    assert lines["strata"] == lines["redis"]
