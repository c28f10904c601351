"""SLOWLOG, LATENCY, MONITOR, CLIENT PAUSE / UNPAUSE / UNBLOCK and INFO errorstats /
latencystats, against a real redis-server: the same commands on both, the same replies where
Redis's are deterministic (times, durations and client ports are compared by shape)."""

import re
import threading
import time

import pytest

from harness import RespError

DEFAULTS = {
    "slowlog-log-slower-than": "10000",
    "slowlog-max-len": "128",
    "latency-monitor-threshold": "0",
    "latency-tracking": "yes",
    "latency-tracking-info-percentiles": "50 99 99.9",
}

# A script that runs for about 200 ms (both servers accept it; DEBUG is off by default in Redis).
SLOW_SCRIPT = (
    "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] "
    "while true do local n = redis.call('TIME') "
    "if n[1] * 1000000 + n[2] - s > 200000 then break end end return 1"
)


@pytest.fixture
def servers(strata_server, redis_server):
    """The two shared servers; the settings these tests change are put back afterwards."""
    yield strata_server, redis_server
    for server in (strata_server, redis_server):
        with server.conn() as c:
            c.call("CLIENT", "UNPAUSE")
            for name, value in DEFAULTS.items():
                c.call("CONFIG", "SET", name, value)
            c.call("SLOWLOG", "RESET")
            c.call("LATENCY", "RESET")


def each(servers, fn):
    """Runs `fn(server)` on Strata and on Redis; returns both results."""
    return [fn(s) for s in servers]


def same(servers, fn):
    """Runs `fn(server)` on both and requires the same result."""
    s, r = each(servers, fn)
    assert s == r, f"strata: {s!r}\nredis:  {r!r}"
    return r


def addr_of(c):
    info = c.call("CLIENT", "INFO").decode()
    return re.search(r"addr=(\S+)", info).group(1)


# -- SLOWLOG -------------------------------------------------------------------------------


def slowlog_entries(c, count=-1):
    """SLOWLOG GET as (argv, peer, name) triples plus the ids, newest first."""
    got = c.call("SLOWLOG", "GET", count)
    for e in got:
        assert len(e) == 6
        assert isinstance(e[1], int) and abs(e[1] - time.time()) < 60
        assert isinstance(e[2], int) and e[2] >= 0
    return [e[0] for e in got], [(e[3], e[4], e[5]) for e in got]


def test_slowlog_entries_trim_long_commands_and_keep_address_and_name(servers):
    def run(server):
        c = server.conn()
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("SLOWLOG", "RESET")
        c.call("CLIENT", "SETNAME", "watcher")
        c.call("RPUSH", "list", *range(40))
        c.call("SET", "big", "x" * 200)
        c.call("SET", "bin", b"\x00\xff")
        ids, entries = slowlog_entries(c)
        me = addr_of(c).encode()
        assert all(peer == me for _, peer, _ in entries)
        assert ids == sorted(ids, reverse=True) and ids[0] - ids[-1] == len(ids) - 1
        return [(argv, name) for argv, _, name in entries]

    got = same(servers, run)
    rpush = got[2][0]
    assert len(rpush) == 32 and rpush[-1] == b"... (11 more arguments)"
    assert got[1][0][2] == b"x" * 128 + b"... (72 more bytes)"
    assert got[-1] == ([b"SLOWLOG", b"RESET"], b"")


def test_slowlog_len_reset_max_len_and_disabling(servers):
    def run(server):
        c = server.conn()
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("CONFIG", "SET", "slowlog-max-len", "3")
        c.call("SLOWLOG", "RESET")
        for i in range(5):
            c.call("SET", f"k{i}", i)
        out = [c.call("SLOWLOG", "LEN")]
        out.append(slowlog_entries(c, 2)[1])
        out.append(c.call("SLOWLOG", "GET", 0))
        out.append(c.call("SLOWLOG", "RESET"))
        out.append(c.call("SLOWLOG", "LEN"))  # the RESET itself is logged
        c.call("CONFIG", "SET", "slowlog-max-len", "0")
        out.append(c.call("SLOWLOG", "LEN"))
        c.call("CONFIG", "SET", "slowlog-max-len", "10")
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
        c.call("SLOWLOG", "RESET")
        c.call("SET", "a", "b")
        out.append(c.call("SLOWLOG", "LEN"))
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "100000000")
        c.call("SET", "a", "b")
        out.append(c.call("SLOWLOG", "LEN"))
        out.append(c.call("CONFIG", "GET", "slowlog-max-len"))
        out.append(c.call("CONFIG", "GET", "slowlog-log-slower-than"))
        return out

    got = same(servers, lambda s: _strip_peers(run(s)))
    assert got[0] == 3


def _strip_peers(out):
    """Replaces client addresses (which differ between the servers) in SLOWLOG output."""
    def fix(x):
        if isinstance(x, tuple):
            return tuple(fix(v) for v in x)
        if isinstance(x, list):
            return [fix(v) for v in x]
        if isinstance(x, bytes) and re.fullmatch(rb"127\.0\.0\.1:\d+", x):
            return b"<peer>"
        return x
    return fix(out)


def test_slowlog_logs_what_transactions_and_scripts_run_but_not_exec(servers):
    def run(server):
        c = server.conn()
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("SLOWLOG", "RESET")
        c.call("MULTI")
        c.call("SET", "a", "1")
        c.call("GET", "a")
        c.call("EXEC")
        c.call("EVAL", "redis.call('set', 'b', '2') return 1", "0")
        me = addr_of(c).encode()
        _, entries = slowlog_entries(c)
        return [(argv, b"<me>" if peer == me else peer, name) for argv, peer, name in entries]

    got = same(servers, run)
    argvs = [e[0] for e in got]
    assert [b"EXEC"] not in argvs
    assert ([b"set", b"b", b"2"], b"?:0", b"") in got


def test_slowlog_redacts_passwords(servers):
    def run(server):
        c = server.conn()
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("SLOWLOG", "RESET")
        c.call("AUTH", "secret")
        c.call("AUTH", "someone", "secret")
        c.call("CONFIG", "SET", "masterauth", "hidden", "maxclients", "10000")
        c.call("CONFIG", "SET", "masterauth", "")
        return [e[0] for e in slowlog_entries(c)[1]]

    got = same(servers, run)
    assert [b"AUTH", b"(redacted)"] in got
    assert [b"CONFIG", b"SET", b"masterauth", b"(redacted)", b"maxclients", b"10000"] in got


@pytest.mark.parametrize("cmd", [
    ["SLOWLOG", "GET", "-2"], ["SLOWLOG", "GET", "x"], ["SLOWLOG", "GET", "1", "2"],
    ["SLOWLOG", "LEN", "x"], ["SLOWLOG", "RESET", "x"], ["SLOWLOG", "FOO"], ["SLOWLOG", "HELP"],
    ["SLOWLOG"], ["LATENCY"], ["LATENCY", "HELP"], ["LATENCY", "FOO"], ["LATENCY", "LATEST", "x"],
    ["LATENCY", "HISTORY"], ["LATENCY", "GRAPH", "no-such-event"],
    ["LATENCY", "HISTORY", "no-such-event"], ["LATENCY", "RESET", "no-such-event"],
    ["LATENCY", "HISTOGRAM", "no-such-command"],
    ["CLIENT", "PAUSE", "10", "SOMETIMES"], ["CLIENT", "PAUSE", "x"], ["CLIENT", "PAUSE", "-1"],
    ["CLIENT", "PAUSE", "10", "WRITE", "x"], ["CLIENT", "PAUSE"], ["CLIENT", "UNPAUSE", "x"],
    ["CLIENT", "UNBLOCK", "1", "MAYBE"], ["CLIENT", "UNBLOCK", "x"], ["CLIENT", "UNBLOCK", "999999"],
    ["CLIENT", "UNBLOCK", "1", "TIMEOUT", "x"], ["CLIENT", "SETINFO", "LIB-NAME", "x"],
], ids=lambda c: " ".join(c))
def test_introspection_replies_match_redis(both, cmd):
    both(*cmd)


# -- LATENCY -------------------------------------------------------------------------------


def test_latency_events_of_a_slow_script(servers):
    def run(server):
        c = server.conn()
        c.call("CONFIG", "SET", "latency-monitor-threshold", "100")
        c.call("LATENCY", "RESET")
        c.call("EVAL", SLOW_SCRIPT, "0")
        latest = c.call("LATENCY", "LATEST")
        assert len(latest) == 1
        name, t, ms, worst = latest[0]
        assert abs(t - time.time()) < 60 and 200 <= ms < 2000 and worst == ms
        history = c.call("LATENCY", "HISTORY", "command")
        assert len(history) == 1 and history[0][1] == ms
        graph = c.call("LATENCY", "GRAPH", "command").decode()
        assert graph.startswith(f"command - high {ms} ms, low {ms} ms (all time high {ms} ms)\n" + "-" * 80)
        doctor = c.call("LATENCY", "DOCTOR").decode()
        assert "1. command: 1 latency spikes" in doctor
        out = [name, c.call("LATENCY", "RESET", "command", "other"), c.call("LATENCY", "LATEST"),
               c.call("LATENCY", "RESET")]
        c.call("CONFIG", "SET", "latency-monitor-threshold", "0")
        out.append(c.call("LATENCY", "DOCTOR"))
        return out

    got = same(servers, run)
    assert got[:4] == [b"command", 1, [], 0]


def test_latency_histogram_and_latencystats(servers):
    def run(server):
        c = server.conn()
        c.call("CONFIG", "RESETSTAT")
        for i in range(7):
            c.call("SET", "k", i)
        hist = c.call("LATENCY", "HISTOGRAM", "set", "config")
        assert hist[0] == b"set" and hist[1][:2] == [b"calls", 7] and hist[1][2] == b"histogram_usec"
        buckets = hist[1][3]
        counts = buckets[1::2]
        assert counts == sorted(counts) and counts[-1] == 7
        # The labels Redis 7.0.15 prints (read from it with DEBUG SLEEP up to 20 ms): the highest
        # value in the HDR bucket of 1024 ns * 2^k, in µs. Up to 1 s, a slow SET on a busy machine
        # still lands on one of them.
        labels = {1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816,
                  67633, 135266, 270532, 541065, 1082130}
        assert set(buckets[::2]) <= labels
        info = c.call("INFO", "latencystats").decode()
        line = re.search(r"latency_percentiles_usec_set:(.*)\r\n", info).group(1)
        assert re.fullmatch(r"p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}", line), line
        c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "0 100")
        info = c.call("INFO", "latencystats").decode()
        line = re.search(r"latency_percentiles_usec_set:(.*)\r\n", info).group(1)
        c.call("CONFIG", "SET", "latency-tracking", "no")
        c.call("CONFIG", "RESETSTAT")
        c.call("SET", "k", "v")
        off = c.call("LATENCY", "HISTOGRAM")
        return [hist[2:4] == [b"config|resetstat", hist[3]], re.sub(r"\d+\.\d+", "N", line), off]

    same(servers, run)


# -- MONITOR -------------------------------------------------------------------------------


LINE = re.compile(rb"\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] (.*)")


def monitor_lines(server, actions):
    """Starts a MONITOR connection, runs `actions(conn)` on another one, returns the lines the
    monitor saw as (db, origin, args) with this client's address shown as `me`."""
    m = server.conn()
    assert m.call("MONITOR") == b"OK"
    c = server.conn()
    me = addr_of(c).encode()
    actions(c)
    time.sleep(0.2)
    raw = m.read_available(0.5)
    out = []
    for line in raw.split(b"\r\n"):
        if not line:
            continue
        mt = LINE.fullmatch(line)
        assert mt, line
        assert abs(int(mt.group(1)) - time.time()) < 60
        origin = mt.group(4)
        out.append((int(mt.group(3)), b"me" if origin == me else origin, mt.group(5)))
    return m, [o for o in out if o[2] != b'"CLIENT" "INFO"']


def test_monitor_shows_commands_transactions_and_scripts_as_redis(servers):
    def actions(c):
        c.call("SET", "k", b"v\x00\x01\xc3\xbf\"\\ \n\t\x07\x08\r")
        c.call("SET", "n", 123)
        c.call("AUTH", "secret")
        c.call("HELLO", "2", "AUTH", "default", "pw")
        c.call("MULTI")
        c.call("SET", "a", "1")
        c.call("GET", "a")
        c.call("EXEC")
        c.call("EVAL", "redis.call('set', 'b', '2') redis.pcall('get', 'nope') return 1", "0")
        c.call("CONFIG", "GET", "maxclients")
        c.call("SLOWLOG", "LEN")
        c.call("GET")
        c.call("NOSUCH")
        c.call("CLIENT", "NOSUCH")
        c.call("SELECT", "3")
        c.call("GET", "x")
        c.call("SELECT", "0")
        c.call("MULTI")
        c.call("NOSUCH", "x")
        c.call("EXEC")  # EXECABORT: MULTI and EXEC are shown, as Redis closes the transaction
        c.call("FUNCTION", "LOAD", "REPLACE",
               "#!lua name=monlib\nredis.register_function('monf', function() return redis.call('set', 'f', 'v') end)")
        c.call("FCALL", "monf", "0")
        c.call("FUNCTION", "DELETE", "monlib")

    def run(server):
        m, lines = monitor_lines(server, actions)
        m.close()
        return lines

    lines = same(servers, run)
    assert lines[0] == (0, b"me", rb'"SET" "k" "v\x00\x01\xc3\xbf\"\\ \n\t\a\b\r"')
    assert (0, b"lua", b'"set" "b" "2"') in lines
    assert (0, b"me", b'"AUTH" "(redacted)"') in lines
    assert (0, b"lua", b'"set" "f" "v"') in lines
    assert lines[-6:-4] == [(0, b"me", b'"MULTI"'), (0, b"me", b'"EXEC"')]


def test_a_monitor_may_not_touch_the_keyspace_and_leaves_with_reset(servers):
    def run(server):
        m = server.conn()
        mid = m.call("CLIENT", "ID")
        out = [m.call("MONITOR"), m.call("GET", "k"), m.call("SET", "k", "v"), m.call("PUBLISH", "c", "m")]
        out.append(m.call("PING"))
        after = m.read_available(0.3)
        out.append(re.sub(rb"^\+\d+\.\d+ \[0 [^\]]+\] ", b"<line> ", after))
        flags = re.search(rb"flags=(\S+)", server.conn().call("CLIENT", "LIST", "ID", mid)).group(1)
        out.append(flags)
        out.append(m.call("RESET"))
        out.append(m.call("GET", "k"))
        return out

    got = same(servers, run)
    assert got[1] == RespError(b"ERR Replica can't interact with the keyspace")
    assert got[5] == b'<line> "PING"\r\n'


# -- CLIENT PAUSE / UNPAUSE / UNBLOCK ------------------------------------------------------


def answered(conn, wait=0.3):
    """Whether a reply arrived within `wait` seconds (it is left unread otherwise)."""
    data = conn.read_available(wait)
    conn.buf.extend(data)
    return bool(data)


def blocked_clients(server):
    info = server.conn().call("INFO", "clients").decode()
    return int(re.search(r"blocked_clients:(\d+)", info).group(1))


def test_client_pause_write_holds_writers_until_unpause(servers):
    def run(server):
        ctl, reader, writer, pub = server.conn(), server.conn(), server.conn(), server.conn()
        out = [ctl.call("CLIENT", "PAUSE", "100000", "WRITE")]
        out.append(reader.call("GET", "k"))
        out.append(reader.call("PING"))
        writer.send_command("SET", "k", "v")
        pub.send_command("PUBLISH", "ch", "m")
        out.append((answered(writer), answered(pub)))
        out.append(blocked_clients(server))
        out.append(reader.call("EVAL_RO", "return 1", "0"))
        out.append(ctl.call("CLIENT", "UNPAUSE"))
        out.append((writer.read_reply(), pub.read_reply()))
        out.append(reader.call("GET", "k"))
        return out

    got = same(servers, run)
    assert got[3] == (False, False) and got[4] == 2


def test_client_pause_write_lets_scripts_and_functions_that_declare_no_writes_run(servers):
    ro_script = "#!lua flags=no-writes\nreturn 'ro'"
    rw_script = "#!lua\nreturn 'rw'"
    library = ("#!lua name=pauselib\n"
               "redis.register_function{function_name='ro_f', callback=function() return 'ro' end, "
               "flags={'no-writes'}}\n"
               "redis.register_function('rw_f', function() return 'rw' end)")

    def run(server):
        ctl, c, held_sha, held_fn = server.conn(), server.conn(), server.conn(), server.conn()
        ro_sha = ctl.call("SCRIPT", "LOAD", ro_script)
        rw_sha = ctl.call("SCRIPT", "LOAD", rw_script)
        out = [ctl.call("FUNCTION", "LOAD", "REPLACE", library)]
        out.append(ctl.call("CLIENT", "PAUSE", "100000", "WRITE"))
        out.append(c.call("EVALSHA", ro_sha, "0"))
        out.append(c.call("FCALL", "ro_f", "0"))
        out.append(c.call("EVAL", ro_script, "0"))
        # A transaction of such scripts runs too.
        out.append([c.call("MULTI"), c.call("EVAL", ro_script, "0"), c.call("EVALSHA", ro_sha, "0")])
        out.append(c.call("EXEC"))
        held_sha.send_command("EVALSHA", rw_sha, "0")
        held_fn.send_command("FCALL", "rw_f", "0")
        out.append((answered(held_sha), answered(held_fn)))
        out.append(ctl.call("CLIENT", "UNPAUSE"))
        out.append((held_sha.read_reply(), held_fn.read_reply()))
        ctl.call("FUNCTION", "DELETE", "pauselib")
        return out

    got = same(servers, run)
    assert got[2:5] == [b"ro", b"ro", b"ro"] and got[6] == [b"ro", b"ro"]
    assert got[7] == (False, False)


def test_client_pause_all_holds_readers_and_ends_by_itself(servers):
    def run(server):
        ctl, reader = server.conn(), server.conn()
        out = [ctl.call("CLIENT", "PAUSE", "400", "ALL")]
        started = time.monotonic()
        out.append(reader.call("PING"))
        waited = time.monotonic() - started
        out.append(0.2 < waited < 3)
        # Under ALL even CLIENT UNPAUSE waits (as in Redis 7.0): this pause ends by itself.
        out.append(ctl.call("CLIENT", "PAUSE", "700"))
        reader.send_command("GET", "k")
        out.append(answered(reader))
        out.append(reader.read_reply())
        return out

    got = same(servers, run)
    assert got[2] is True and got[4] is False


def test_client_unblock_ends_a_blocking_command(servers):
    def run(server):
        ctl, waiter = server.conn(), server.conn()
        wid = waiter.call("CLIENT", "ID")
        out = [ctl.call("CLIENT", "UNBLOCK", wid)]
        waiter.send_command("BLPOP", "nolist", "0")
        time.sleep(0.2)
        out.append(ctl.call("CLIENT", "UNBLOCK", wid))
        out.append(waiter.read_reply_raw())
        waiter.send_command("XREAD", "BLOCK", "0", "STREAMS", "nostream", "$")
        time.sleep(0.2)
        out.append(ctl.call("CLIENT", "UNBLOCK", wid, "ERROR"))
        out.append(waiter.read_reply_raw())
        out.append(waiter.call("PING"))
        return out

    got = same(servers, run)
    assert got[:2] == [0, 1] and got[2] == b"*-1\r\n"
    assert got[4] == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"


# -- INFO errorstats -----------------------------------------------------------------------


def test_errorstats_and_failed_calls_count_as_redis(servers):
    def run(server):
        c = server.conn()
        c.call("CONFIG", "RESETSTAT")
        c.call("SET", "s", "v")
        c.call("LPUSH", "s", "x")
        c.call("GET")
        c.call("NOSUCH")
        c.call("INCR", "s")
        c.call("EVAL", "return redis.error_reply('MYERR custom')", "0")
        c.call("EVAL", "return redis.call('lpush', 's', 'x')", "0")
        info = c.call("INFO", "errorstats").decode()
        stats = c.call("INFO", "stats").decode()
        cmds = c.call("INFO", "commandstats").decode()
        picked = [l for l in cmds.split("\r\n") if l.startswith(("cmdstat_get:", "cmdstat_lpush:", "cmdstat_incr:"))]
        return (
            sorted(l for l in info.split("\r\n") if l.startswith("errorstat_")),
            re.search(r"total_error_replies:\d+", stats).group(0),
            [re.sub(r"usec=\d+,usec_per_call=[\d.]+", "", l) for l in sorted(picked)],
        )

    got = same(servers, run)
    assert "errorstat_WRONGTYPE:count=2" in got[0] and "errorstat_MYERR:count=1" in got[0]
