"""Connection commands: PING ECHO QUIT RESET HELLO AUTH CLIENT."""

import re
import time

import pytest

from harness import Both, RespError, Simple, parse_reply

# --- PING ECHO QUIT ---------------------------------------------------------------------------


def test_ping_and_echo(both):
    both("PING")
    both("PING", "hello")
    both("ping", "")
    both("PING", "a", "b")
    both("ECHO", "hi there")
    both("ECHO", "")
    both("ECHO")
    both("ECHO", "a", "b")


def test_quit_replies_ok_and_closes(both):
    both("SET", "k", "v")
    both("QUIT")
    assert both.strata.is_closed(), "strata kept the connection open after QUIT"
    assert both.redis.is_closed()


# --- RESET ------------------------------------------------------------------------------------


def test_reset_restores_connection_defaults(both):
    both("SET", "k", "db0")
    both("SELECT", "3")
    both("CLIENT", "SETNAME", "someone")
    both.each("HELLO", "3")
    both("RESET")
    both("CLIENT", "GETNAME")
    both("GET", "k")  # back in db 0
    both("GET", "missing")  # and back to RESP2 ($-1, not _)


def test_reset_turns_client_reply_back_on(both):
    both.raw(b"CLIENT REPLY OFF\r\nRESET\r\n")  # only RESET answers
    both("PING")


# --- HELLO ------------------------------------------------------------------------------------

HELLO_KEYS = {b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"}


def test_hello_3_switches_to_resp3_and_returns_a_map(strata_server):
    c = strata_server.conn()
    c.send_command("HELLO", "3")
    raw = c.read_reply_raw()
    assert raw.startswith(b"%"), f"HELLO 3 should answer with a RESP3 map: {raw[:100]!r}"
    reply = parse_reply(raw)[0]
    assert set(reply) == HELLO_KEYS
    assert reply[b"proto"] == 3
    assert isinstance(reply[b"id"], int)
    assert reply[b"mode"] == b"standalone" and reply[b"role"] == b"master"
    assert reply[b"modules"] == []
    assert isinstance(reply[b"version"], bytes) and re.fullmatch(rb"\d+\.\d+\.\d+.*", reply[b"version"])
    assert reply[b"id"] == c.call("CLIENT", "ID")


def test_hello_2_returns_a_flat_array(strata_server):
    c = strata_server.conn()
    reply = c.call("HELLO", "2")
    assert isinstance(reply, list) and len(reply) == 14
    as_map = dict(zip(reply[::2], reply[1::2]))
    assert set(as_map) == HELLO_KEYS
    assert as_map[b"proto"] == 2
    assert c.call_raw("GET", "missing") == b"$-1\r\n"


def test_hello_without_version_keeps_protocol(strata_server):
    c = strata_server.conn()
    reply = c.call("HELLO")
    assert isinstance(reply, list) and dict(zip(reply[::2], reply[1::2]))[b"proto"] == 2


def test_resp3_null_and_map_replies(both):
    both.each("HELLO", "3")
    both("GET", "missing")  # _\r\n
    both("SET", "k", "v")
    both("GET", "k")
    both("MGET", "k", "missing")
    both("CONFIG", "GET", "databases")  # a map in RESP3
    both("EXISTS", "k")
    both("INCRBYFLOAT", "f", "1.5")
    both("LCS", "k", "k", "IDX")  # a map in RESP3
    both("GET", "k", "extra")


def test_hello_3_setname_sets_client_name(both):
    s, r = both.each("HELLO", "3", "SETNAME", "myconn")
    assert isinstance(s, dict), s
    both("CLIENT", "GETNAME")


@pytest.mark.parametrize("args", [
    ["4"], ["1"], ["0"], ["abc"], ["3", "FOO"], ["3", "AUTH", "default"], ["3", "SETNAME"],
    ["3", "SETNAME", "a b"],
])
def test_hello_errors(both, args):
    both("HELLO", *args)
    both("GET", "missing")  # still RESP2


# --- AUTH -------------------------------------------------------------------------------------


def test_auth_without_requirepass_errors(both):
    both("AUTH", "x")
    both("AUTH", "default", "x")
    both("AUTH", "a", "b", "c")
    both("AUTH")


@pytest.fixture
def auth_both(start_strata, start_redis):
    """A Strata and a reference redis both started with --requirepass secret."""
    s = start_strata(requirepass="secret")
    r = start_redis(requirepass="secret")
    return Both(s.conn(), r.conn()), s, r


def test_requirepass_commands_before_auth_are_noauth(auth_both):
    both, _, _ = auth_both
    both("GET", "k")
    both("SET", "k", "v")
    both("PING")
    both("SELECT", "1")
    both("HELLO", "3")
    both("FOO", "bar")


def test_requirepass_wrong_password_then_right(auth_both):
    both, _, _ = auth_both
    both("AUTH", "wrong")
    both("AUTH", "default", "wrong")
    both("AUTH", "nobody", "secret")
    both("GET", "k")
    both("AUTH", "secret")
    both("SET", "k", "v")
    both("GET", "k")
    both("AUTH", "wrong")  # a failed re-AUTH keeps the session authenticated in redis
    both("GET", "k")


def test_auth_with_username_default(auth_both):
    both, _, _ = auth_both
    both("AUTH", "default", "secret")
    both("PING")


def test_hello_with_auth(auth_both):
    both, s, _ = auth_both
    both("HELLO", "3", "AUTH", "default", "wrong")
    both("GET", "k")
    c = s.conn()
    reply = c.call("HELLO", "3", "AUTH", "default", "secret")
    assert isinstance(reply, dict) and reply[b"proto"] == 3, reply
    assert c.call_raw("GET", "k") == b"_\r\n"


def test_auth_through_redis_py(start_strata):
    s = start_strata(requirepass="secret")
    assert s.client(password="secret").ping() is True


# --- CLIENT -----------------------------------------------------------------------------------


def test_client_id_is_unique_per_connection(strata_server):
    a, b = strata_server.conn(), strata_server.conn()
    ida, idb = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
    assert isinstance(ida, int) and isinstance(idb, int)
    assert ida != idb
    assert a.call("CLIENT", "ID") == ida


def test_client_setname_getname(both):
    both("CLIENT", "GETNAME")
    both("CLIENT", "SETNAME", "worker-1")
    both("CLIENT", "GETNAME")
    both("CLIENT", "SETNAME", "a b")
    both("CLIENT", "SETNAME", "a\nb")
    both("CLIENT", "GETNAME")
    both("CLIENT", "SETNAME", "")
    both("CLIENT", "GETNAME")
    both("CLIENT", "SETNAME")
    both("CLIENT", "GETNAME", "x")


def _fields(line: bytes) -> dict:
    return dict(f.split(b"=", 1) for f in line.split(b" ") if b"=" in f)


def test_client_list_has_a_line_per_connection(strata_server):
    a, b = strata_server.conn(), strata_server.conn()
    a.call("CLIENT", "SETNAME", "conn-a")
    b.call("SELECT", "4")
    listing = a.call("CLIENT", "LIST")
    assert isinstance(listing, bytes) and listing.endswith(b"\n")
    lines = [_fields(line) for line in listing.rstrip(b"\n").split(b"\n")]
    by_id = {int(f[b"id"]): f for f in lines}
    ida, idb = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
    assert ida in by_id and idb in by_id
    for f in by_id.values():
        for field in (b"id", b"addr", b"laddr", b"fd", b"name", b"age", b"idle", b"flags", b"db", b"cmd"):
            assert field in f, f"CLIENT LIST line lacks {field}: {f}"
        assert re.fullmatch(rb"127\.0\.0\.1:\d+", f[b"addr"])
    assert by_id[ida][b"name"] == b"conn-a"
    assert by_id[ida][b"cmd"] == b"client|list"
    assert by_id[idb][b"db"] == b"4"
    assert by_id[ida][b"laddr"] == b"127.0.0.1:%d" % strata_server.port


def test_client_list_id_filter(strata_server):
    a, b = strata_server.conn(), strata_server.conn()
    idb = b.call("CLIENT", "ID")
    listing = a.call("CLIENT", "LIST", "ID", str(idb))
    lines = listing.rstrip(b"\n").split(b"\n")
    assert len(lines) == 1 and _fields(lines[0])[b"id"] == str(idb).encode()


def test_client_info_describes_this_connection(strata_server):
    c = strata_server.conn()
    c.call("CLIENT", "SETNAME", "me")
    info = c.call("CLIENT", "INFO")
    assert isinstance(info, bytes) and info.endswith(b"\n") and info.count(b"\n") == 1
    f = _fields(info)
    assert int(f[b"id"]) == c.call("CLIENT", "ID")
    assert f[b"name"] == b"me"
    assert f[b"db"] == b"0"
    assert f[b"cmd"] == b"client|info"


# Fields whose values do not depend on timing, addresses or memory layout.
STABLE_FIELDS = (b"name", b"flags", b"db", b"sub", b"psub", b"ssub", b"multi", b"qbuf", b"multi-mem",
                 b"obl", b"oll", b"omem", b"events", b"cmd", b"user", b"redir", b"resp")


def _names_and_stable(line: bytes):
    line = line.rstrip(b"\n")
    f = _fields(line)
    names = [p.split(b"=", 1)[0] for p in line.rstrip(b"\n").split(b" ")]
    return names, {k: f[k] for k in STABLE_FIELDS}


def test_client_list_and_info_fields_are_redis_7s_in_its_order(strata_server, redis_server):
    got = []
    for server in (strata_server, redis_server):
        c = server.conn()
        own_list = c.call("CLIENT", "LIST", "ID", str(c.call("CLIENT", "ID")))
        got.append((_names_and_stable(own_list), _names_and_stable(c.call("CLIENT", "INFO"))))
    assert got[0] == got[1]
    names, stable = got[0][1]  # CLIENT INFO's: its request is 26 bytes
    assert names[:3] == [b"id", b"addr", b"laddr"] and names[-1] == b"resp"
    assert stable[b"qbuf"] == b"26" and stable[b"flags"] == b"N" and stable[b"multi"] == b"-1"


def _query_buffer(watcher, name: bytes) -> tuple[int, int]:
    """(qbuf, qbuf-free) of the client named `name`, as CLIENT LIST shows it."""
    for line in watcher.call("CLIENT", "LIST").rstrip(b"\n").split(b"\n"):
        f = _fields(line)
        if f[b"name"] == name:
            return int(f[b"qbuf"]), int(f[b"qbuf-free"])
    raise AssertionError(f"no client named {name!r}")


@pytest.mark.parametrize("server", ["strata", "redis"])
def test_query_buffer_is_sized_for_reads_shrunk_after_big_requests_and_freed_when_idle(
        request, server):
    srv = request.getfixturevalue("strata_server" if server == "strata" else "redis_server")
    watcher, c = srv.conn(), srv.conn()
    c.call("CLIENT", "SETNAME", "qb")
    # Room for one 16 KiB read, and not much more.
    qbuf, free = _query_buffer(watcher, b"qb")
    assert 16384 <= qbuf + free < 32768, (qbuf, free)
    # A big request leaves room for another like it...
    c.call("SET", "x", "A" * 400_000)
    qbuf, free = _query_buffer(watcher, b"qb")
    big = qbuf + free
    assert big > 32768, (qbuf, free)
    # ...until small requests show it is no longer needed: it shrinks, but not to nothing.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        c.call("SET", "x", "A" * 100)
        qbuf, free = _query_buffer(watcher, b"qb")
        if qbuf + free < big:
            break
        time.sleep(0.01)
    assert 0 < qbuf + free < big, (qbuf, free, big)
    # A client idle for more than 2 seconds gives its buffer back (Redis's cron sometimes leaves
    # a 128-byte stub: nothing of the read-sized buffer remains either way).
    deadline = time.monotonic() + 8
    while (left := _query_buffer(watcher, b"qb"))[0] != 0 or left[1] >= 1024:
        assert time.monotonic() < deadline, left
        time.sleep(0.1)
    assert c.call("GET", "x") == b"A" * 100


def test_client_list_shows_an_open_transaction_and_no_evict(strata_server, redis_server):
    got = []
    for server in (strata_server, redis_server):
        c, watcher = server.conn(), server.conn()
        c.call("CLIENT", "NO-EVICT", "ON")
        c.call("MULTI")
        c.call("SET", "a", "1")
        c.call("GET", "a")
        line = watcher.call("CLIENT", "LIST", "ID", str(_client_id(watcher, c)))
        got.append(_names_and_stable(line)[1])
        c.call("DISCARD")
    assert got[0] == got[1]
    assert got[0][b"flags"] == b"xe" and got[0][b"multi"] == b"2"


def _client_id(watcher, c) -> int:
    """The id of connection ``c`` as the server sees it (found by its local port)."""
    port = c.sock.getsockname()[1]
    for line in watcher.call("CLIENT", "LIST").rstrip(b"\n").split(b"\n"):
        f = _fields(line)
        if f[b"addr"].endswith(b":%d" % port):
            return int(f[b"id"])
    raise AssertionError("connection not listed")


def test_reset_clears_every_piece_of_client_state(strata_server, redis_server):
    got = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("HELLO", "3", "SETNAME", "someone")
        c.call("SELECT", "5")
        c.call("CLIENT", "NO-EVICT", "ON")
        c.call("WATCH", "w")
        c.call("SUBSCRIBE", "ch")
        c.call("PSUBSCRIBE", "p*")
        c.call("SSUBSCRIBE", "s")
        c.call("MULTI")
        c.call("SET", "k", "v")
        after = [c.call_raw("RESET"), c.call_raw("GET", "missing"), c.call_raw("EXEC")]
        got.append((after, _names_and_stable(c.call("CLIENT", "INFO"))[1]))
        assert server.conn().call("PUBSUB", "NUMSUB", "ch") == [b"ch", 0]
    assert got[0] == got[1]
    stable = got[0][1]
    # CLIENT NO-EVICT is the one setting RESET keeps in Redis 7.0.
    assert (stable[b"flags"], stable[b"db"], stable[b"name"], stable[b"resp"]) == (b"e", b"0", b"", b"2")


def test_client_kill_by_id_closes_that_connection(strata_server):
    killer, victim = strata_server.conn(), strata_server.conn()
    victim_id = victim.call("CLIENT", "ID")
    assert killer.call("CLIENT", "KILL", "ID", str(victim_id)) == 1
    assert victim.is_closed(), "killed connection is still open"
    assert killer.call("CLIENT", "KILL", "ID", str(victim_id)) == 0
    assert killer.call("PING") == b"PONG"


def test_client_kill_by_addr(strata_server):
    killer, victim = strata_server.conn(), strata_server.conn()
    addr = _fields(victim.call("CLIENT", "INFO"))[b"addr"]
    assert killer.call("CLIENT", "KILL", addr) == Simple(b"OK")  # old form
    assert victim.is_closed()
    victim2 = strata_server.conn()
    addr2 = _fields(victim2.call("CLIENT", "INFO"))[b"addr"]
    assert killer.call("CLIENT", "KILL", "ADDR", addr2) == 1  # new form counts
    assert victim2.is_closed()


def test_client_kill_errors(both):
    both("CLIENT", "KILL", "ID", "999999")
    both("CLIENT", "KILL", "1.2.3.4:5")
    both("CLIENT", "KILL", "ADDR", "1.2.3.4:5")
    both("CLIENT", "KILL", "ID", "abc")
    both("CLIENT", "KILL", "FOO", "bar")


def test_client_reply_off_on_skip(both):
    both.raw(b"CLIENT REPLY OFF\r\nSET a 1\r\nGET a\r\nCLIENT REPLY ON\r\n")  # one +OK, from ON
    both("GET", "a")
    both.raw(b"CLIENT REPLY SKIP\r\nSET b 2\r\nGET b\r\n")  # only GET b answers
    both("CLIENT", "REPLY", "FOO")
    both("CLIENT", "REPLY")


def test_client_no_evict(both):
    both("CLIENT", "NO-EVICT", "on")
    both("CLIENT", "NO-EVICT", "off")
    both("CLIENT", "NO-EVICT", "maybe")
    both("CLIENT", "NO-EVICT")


def test_client_unknown_subcommand(both):
    both("CLIENT", "FOO")
    both("CLIENT")


def test_client_setname_visible_in_redis_py(strata):
    assert strata.client_setname("py") is True
    assert strata.client_getname() in (b"py", "py")  # redis-py decodes this one itself
    assert isinstance(strata.client_id(), int)


def test_error_values_are_resp_errors(strata_server):
    reply = strata_server.conn().call("CLIENT", "SETNAME", "a b")
    assert isinstance(reply, RespError) and reply.message.startswith(b"ERR ")
