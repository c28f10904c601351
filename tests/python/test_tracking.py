"""Client-side caching (CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO) against a real Redis 7.0.

Most tests are scenarios: a few named connections to one server, a list of steps, each a command
sent on one connection. After every step each connection is synced with a PING, and everything
it received up to the PONG (the command's reply, the invalidation pushes, the pub/sub messages of
a REDIRECT client) is recorded; the same scenario runs on Strata and on redis-server and the two
transcripts must be byte-identical (client ids are replaced by the connections' names where a
reply shows one)."""

from __future__ import annotations

import time

import pytest
import redis

from harness import Push, RespConn, encode_command, parse_reply

PONGS = (b"+PONG\r\n", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")


class Clients:
    """Named raw connections to one server, for a scenario."""

    def __init__(self, server, names):
        self.conns: dict[str, RespConn] = {n: server.conn() for n in names}
        self.ids = {n: c.call("CLIENT", "ID") for n, c in self.conns.items()}
        self.in_multi: set[str] = set()

    def _args(self, cmd):
        """`{id:b}` in an argument stands for connection b's id."""
        out = []
        for a in cmd:
            if isinstance(a, str) and a.startswith("{id:"):
                a = str(self.ids[a[4:-1]])
            out.append(a)
        return out

    def _names(self, raw: bytes, *cmds) -> bytes:
        """Client ids where replies show them: HELLO's `id`, CLIENT GETREDIR and TRACKINGINFO,
        `tracking-redir-broken` pushes."""
        whole = any([c.upper() for c in cmd[:2] if isinstance(c, str)] in (
            ["CLIENT", "GETREDIR"], ["CLIENT", "TRACKINGINFO"]) for cmd in cmds)
        for n, i in self.ids.items():
            name = b"<%s>" % n.encode()
            if whole:
                raw = raw.replace(b":%d\r\n" % i, b":%s\r\n" % name)
            raw = raw.replace(b"$2\r\nid\r\n:%d\r\n" % i, b"$2\r\nid\r\n:%s\r\n" % name)
            raw = raw.replace(b"tracking-redir-broken\r\n:%d\r\n" % i,
                              b"tracking-redir-broken\r\n:%s\r\n" % name)
        return raw

    def _until_pong(self, c: RespConn) -> bytes:
        got = b""
        while True:
            raw = c.read_reply_raw()
            if raw in PONGS:
                return got
            got += raw

    def run(self, steps) -> list:
        """Runs the steps; the transcript: per step, what each connection received."""
        transcript = []
        for step in steps:
            if step[0] == "sleep":
                time.sleep(step[1])
                continue
            name, *cmd = step
            if isinstance(cmd[0], list):
                # Several commands sent together (CLIENT CACHING and the command it is for:
                # a PING between them would use the flag up).
                c = self.conns[name]
                c.send(b"".join(encode_command(*self._args(x)) for x in cmd) + encode_command("PING"))
                got = self._names(self._until_pong(c), *cmd)
                transcript.append((name, " ; ".join(" ".join(x) for x in cmd), got))
                self._sync(name, transcript)
                continue
            if cmd[0] in ("QUIT", "CLOSE"):
                c = self.conns.pop(name)
                if cmd[0] == "QUIT":
                    transcript.append((name, "QUIT", c.call_raw("QUIT")))
                c.close()
                time.sleep(0.05)
                continue
            c = self.conns[name]
            word = cmd[0].upper()
            if word == "MULTI" or name in self.in_multi and word not in ("EXEC", "DISCARD"):
                # Inside MULTI a PING would be queued: the reply alone.
                self.in_multi.add(name)
                c.send_command(*self._args(cmd))
                got = self._names(c.read_reply_raw(), cmd)
            else:
                self.in_multi.discard(name)
                c.send(encode_command(*self._args(cmd)) + encode_command("PING"))
                got = self._names(self._until_pong(c), cmd)
            transcript.append((name, " ".join(map(str, cmd)), got))
            self._sync(name, transcript)
        return transcript

    def _sync(self, name, transcript):
        """Records what the other connections received (up to a PING's answer)."""
        for other, oc in self.conns.items():
            if other != name:
                oc.send(encode_command("PING"))
                got = self._names(self._until_pong(oc))
                if got:
                    transcript.append((other, "(pushed)", got))


def differential(strata_server, redis_server, names, steps):
    """Runs the scenario on both servers; asserts identical transcripts and returns Strata's."""
    theirs = Clients(redis_server, names).run(steps)
    mine = Clients(strata_server, names).run(steps)
    for m, t in zip(mine, theirs):
        assert m == t, f"differs at step {t[:2]}\n  strata: {m[2]!r}\n  redis:  {t[2]!r}"
    assert len(mine) == len(theirs), f"strata: {mine[len(theirs):]!r}\nredis: {theirs[len(mine):]!r}"
    return mine


def pushed_to(transcript, name) -> bytes:
    """Everything connection `name` received outside its own commands' replies."""
    return b"".join(got for who, what, got in transcript if who == name and what == "(pushed)")


def inv3(*keys) -> bytes:
    """A RESP3 invalidation push."""
    body = b"".join(b"$%d\r\n%s\r\n" % (len(k), k.encode()) for k in keys)
    return b">2\r\n$10\r\ninvalidate\r\n*%d\r\n%s" % (len(keys), body)


def inv2(*keys) -> bytes:
    """A RESP2 invalidation message on __redis__:invalidate."""
    body = b"".join(b"$%d\r\n%s\r\n" % (len(k), k.encode()) for k in keys)
    return b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*%d\r\n%s" % (len(keys), body)


# ------------------------------------------------------------------------------------------------
# Default mode
# ------------------------------------------------------------------------------------------------


def test_default_mode_invalidates_keys_read_when_anyone_writes_them(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON"),
        ("w", "SET", "k1", "v"),
        ("a", "GET", "k1"),
        ("a", "GET", "missing"),
        ("w", "SET", "k1", "v2"),
        ("w", "SET", "k1", "v3"),  # not read again since: nothing
        ("a", "MGET", "k1", "missing", "other"),
        ("w", "MSET", "other", "1", "k1", "x"),
        ("w", "SET", "missing", "now"),
        ("a", "HSET", "h", "f", "1"),
        ("a", "HGET", "h", "f"),
        ("w", "HDEL", "h", "f"),
        ("a", "SELECT", "1"),
        ("a", "GET", "samename"),
        ("w", "SET", "samename", "db0"),  # keys are tracked by name, whatever the database
        ("a", "SELECT", "0"),
        ("a", "STRLEN", "k1"),
        ("a", "SET", "k1", "mine"),  # its own write: the invalidation follows the reply
        ("w", "INCR", "untracked"),
    ])
    assert pushed_to(t, "a").startswith(inv3("k1"))
    assert ("a", "SET k1 mine", b"+OK\r\n" + inv3("k1")) in t


def test_noloop_skips_the_clients_own_writes(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON", "NOLOOP"),
        ("a", "MGET", "other1", "loop", "other2"),
        ("w", "SET", "other1", "1"),
        ("a", "SET", "loop", "1"),
        ("w", "SET", "other2", "1"),
        ("w", "SET", "loop", "again"),  # forgotten after the first write, its own
    ])
    assert pushed_to(t, "a") == inv3("other1") + inv3("other2")


def test_write_commands_invalidate_what_they_change_not_what_they_read(strata_server, redis_server):
    differential(strata_server, redis_server, ["a", "w"], [
        ("w", "SADD", "s1", "a", "b"),
        ("w", "SADD", "s2", "b", "c"),
        ("w", "SET", "src", "v"),
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON"),
        ("a", "SCARD", "s1"),
        ("a", "SISMEMBER", "s2", "b"),
        ("a", "GET", "src"),
        ("a", "EXISTS", "dst", "copy"),
        ("w", "SUNIONSTORE", "dst", "s1", "s2"),
        ("w", "COPY", "src", "copy"),
        ("w", "LPUSH", "l", "x"),
        ("a", "LRANGE", "l", "0", "-1"),
        ("w", "LMOVE", "l", "l2", "LEFT", "RIGHT"),
        ("a", "GET", "r1"),
        ("w", "SET", "r1", "x"),
        ("a", "GET", "r1"),
        ("w", "RENAME", "r1", "r2"),
    ])


def test_resp2_redirect_sends_messages_on_the_invalidate_channel(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "r", "w"], [
        ("r", "SUBSCRIBE", "__redis__:invalidate"),
        ("a", "CLIENT", "TRACKING", "ON", "REDIRECT", "{id:r}"),
        ("a", "CLIENT", "GETREDIR"),
        ("w", "SET", "a{t}", "1"),
        ("w", "SET", "b{t}", "1"),
        ("a", "GET", "a{t}"),
        ("a", "INCR", "b{t}"),  # not read: nothing
        ("a", "INCR", "a{t}"),  # its own write, but redirected
        ("a", "GET", "k"),
        ("w", "FLUSHALL"),  # every key: a null
        ("a", "GET", "k"),
        ("w", "FLUSHDB"),
    ])
    assert pushed_to(t, "r").startswith(inv2("a{t}"))
    assert b"__redis__:invalidate\r\n$-1\r\n" in pushed_to(t, "r")


def test_resp3_redirect_and_a_redirect_client_that_goes_away(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "r", "w"], [
        ("r", "HELLO", "3"),
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON", "REDIRECT", "{id:r}"),
        ("a", "GET", "k"),
        ("w", "SET", "k", "1"),
        ("a", "GET", "k"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("r", "QUIT"),
        ("w", "SET", "k", "2"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", "CLIENT", "GETREDIR"),
    ])
    assert pushed_to(t, "r") == inv3("k")
    assert b">2\r\n$21\r\ntracking-redir-broken\r\n:<r>\r\n" in pushed_to(t, "a")


def test_resp2_client_without_redirect_gets_nothing(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "CLIENT", "TRACKING", "ON"),
        ("a", "GET", "k"),
        ("w", "SET", "k", "1"),
        ("a", "HELLO", "3"),
        ("a", "GET", "k"),  # tracked again, now with a protocol to say it in
        ("w", "SET", "k", "2"),
    ])
    assert pushed_to(t, "a") == inv3("k")


def test_invalidations_follow_the_reply_of_a_transaction(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON"),
        ("a", "MSET", "a{t}", "1", "b{t}", "2"),
        ("a", "GET", "a{t}"),
        ("a", "MULTI"),
        ("a", "INCR", "a{t}"),
        ("a", "GET", "b{t}"),  # read inside MULTI: tracked
        ("a", "EXEC"),
        ("w", "SET", "b{t}", "3"),
        ("a", "GET", "f"),
        ("a", "MULTI"),
        ("a", "FLUSHDB"),
        ("a", "EXEC"),
    ])
    assert ("a", "EXEC", b"*2\r\n:2\r\n$1\r\n2\r\n" + inv3("a{t}")) in t
    assert ("a", "EXEC", b"*1\r\n+OK\r\n>2\r\n$10\r\ninvalidate\r\n_\r\n") in t


def test_scripts_track_their_declared_keys_when_they_read(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON"),
        ("w", "MSET", "key1{t}", "1", "key2{t}", "1"),
        # A script that reads nothing tracks nothing.
        ("a", "EVAL", "redis.call('set', 'key3{t}', 'bar')", "2", "key1{t}", "key2{t}"),
        ("w", "MSET", "key2{t}", "2", "key1{t}", "2"),
        # A script that reads tracks its declared keys (not the key it read).
        ("a", "EVAL", "redis.call('get', 'key3{t}')", "2", "key1{t}", "key2{t}"),
        ("w", "MSET", "key2{t}", "2", "key1{t}", "2", "key3{t}", "x"),
        ("a", "EVAL_RO", "redis.call('ping')", "2", "key1{t}", "key2{t}"),
        ("w", "MSET", "key2{t}", "2", "key1{t}", "2"),
        ("a", "EVAL_RO", "redis.call('get', 'key1{t}')", "2", "key1{t}", "key2{t}"),
        # A script's writes invalidate like any write.
        ("w", "EVAL", "redis.call('set', KEYS[1], 'x') return redis.call('set', KEYS[2], 'y')",
         "2", "key1{t}", "key2{t}"),
    ])
    assert pushed_to(t, "a") == inv3("key2{t}") + inv3("key1{t}") + inv3("key1{t}") + inv3("key2{t}")


def test_functions_track_and_invalidate_like_scripts(strata_server, redis_server):
    lib = ("#!lua name=trk\n"
           "redis.register_function('rd', function(keys) return redis.call('get', keys[1]) end)\n"
           "redis.register_function{function_name='rdro', callback=function(keys) "
           "return redis.call('get', keys[1]) end, flags={'no-writes'}}\n"
           "redis.register_function('wr', function(keys) return redis.call('set', keys[1], 'f') end)")
    try:
        differential(strata_server, redis_server, ["a", "w"], [
            ("w", "FUNCTION", "LOAD", "REPLACE", lib),
            ("a", "HELLO", "3"),
            ("a", "CLIENT", "TRACKING", "ON"),
            ("a", "FCALL", "rd", "1", "f1"),
            ("a", "FCALL_RO", "rdro", "1", "f2"),
            ("w", "FCALL", "wr", "1", "f1"),
            ("w", "FCALL", "wr", "1", "f2"),
        ])
    finally:
        for s in (strata_server, redis_server):
            s.conn().call("FUNCTION", "FLUSH")


def test_script_writes_under_noloop_send_nothing_to_the_writer(strata_server, redis_server):
    differential(strata_server, redis_server, ["a"], [
        ("a", "CLIENT", "TRACKING", "ON", "NOLOOP"),
        ("a", "HELLO", "3"),
        ("a", "SET", "key1", "1"),
        ("a", "GET", "key1"),
        ("a", "EVAL", "return redis.call('set', 'key1', '2')", "1", "key1"),
        ("a", "GET", "key1"),
    ])


def test_expired_keys_are_invalidated(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON"),
        ("w", "SET", "gone", "v", "PX", "100"),
        ("w", "SET", "stays", "v"),
        ("a", "MGET", "gone", "stays"),
        ("sleep", 1.0),
        ("w", "PING"),
    ])
    assert pushed_to(t, "a") == inv3("gone")


# ------------------------------------------------------------------------------------------------
# BCAST
# ------------------------------------------------------------------------------------------------


def test_bcast_sends_every_matching_key_per_prefix(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "b:"),
        ("w", "MULTI"),
        ("w", "INCR", "a:1{t}"),
        ("w", "INCR", "a:2{t}"),
        ("w", "INCR", "b:1{t}"),
        ("w", "INCR", "c:1{t}"),
        ("w", "EXEC"),
        ("w", "MSET", "a:z", "1", "a:y", "2", "zz", "3"),
        ("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "c:"),  # adds a prefix
        ("w", "SET", "c:1234", "1"),
        ("a", "SET", "a:mine", "1"),  # its own write, after the reply
        ("a", "CLIENT", "TRACKINGINFO"),
        ("w", "SET", "bounce", "1", "PX", "100"),
        ("a", "CLIENT", "TRACKING", "OFF"),
        ("a", "CLIENT", "TRACKING", "ON", "BCAST"),  # the empty prefix: every key
        ("w", "SET", "bounce", "1", "PX", "100"),
        ("sleep", 1.0),
        ("w", "PING"),
    ])
    assert pushed_to(t, "a").startswith(inv3("a:1{t}", "a:2{t}") + inv3("b:1{t}") + inv3("a:y", "a:z"))
    assert inv3("bounce") + inv3("bounce") in pushed_to(t, "a")


def test_bcast_noloop_and_redirect(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "r", "w"], [
        ("r", "SUBSCRIBE", "__redis__:invalidate"),
        ("a", "CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", "{id:r}", "NOLOOP"),
        ("w", "SET", "otherkey1", "1"),
        ("a", "SET", "loopkey", "1"),
        ("w", "SET", "otherkey2", "1"),
        ("a", "MSET", "x", "1", "y", "2"),
        ("w", "MSET", "x", "1", "y", "2"),
    ])
    assert pushed_to(t, "r") == inv2("otherkey1") + inv2("otherkey2") + inv2("x", "y")


def test_switching_to_bcast_drops_earlier_reads(strata_server, redis_server):
    differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON"),
        ("w", "SET", "key1", "1"),
        ("a", "GET", "key1"),
        ("a", "CLIENT", "TRACKING", "OFF"),
        ("a", "CLIENT", "TRACKING", "ON", "BCAST"),
        ("w", "INCR", "key1"),
    ])


# ------------------------------------------------------------------------------------------------
# OPTIN / OPTOUT
# ------------------------------------------------------------------------------------------------


def test_optin_tracks_only_after_caching_yes(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "w"], [
        ("a", "HELLO", "3"),
        ("a", "CLIENT", "TRACKING", "ON", "OPTIN"),
        ("a", "GET", "k1"),  # not tracked
        ("w", "SET", "k1", "1"),
        # CLIENT commands keep the flag; the next other command uses it up.
        ("a", ["CLIENT", "CACHING", "YES"], ["CLIENT", "TRACKINGINFO"], ["GET", "k2"], ["GET", "k3"],
         ["CLIENT", "TRACKINGINFO"]),
        ("w", "MSET", "k2", "1", "k3", "1"),
        # The flag covers the whole transaction.
        ("a", ["CLIENT", "CACHING", "YES"], ["MULTI"], ["GET", "m1"], ["GET", "m2"], ["EXEC"]),
        ("w", "MSET", "m1", "1", "m2", "1"),
        ("a", ["CLIENT", "CACHING", "YES"], ["ECHO", "x"], ["GET", "p1"]),
        ("w", "SET", "p1", "1"),
    ])
    assert pushed_to(t, "a") == inv3("k2") + inv3("m1") + inv3("m2")


def test_optout_tracks_all_but_after_caching_no(strata_server, redis_server):
    t = differential(strata_server, redis_server, ["a", "r", "w"], [
        ("r", "SUBSCRIBE", "__redis__:invalidate"),
        ("a", "CLIENT", "TRACKING", "ON", "OPTOUT", "REDIRECT", "{id:r}"),
        ("a", ["CLIENT", "CACHING", "NO"], ["GET", "k1"], ["GET", "k2"]),  # k1 alone is not tracked
        ("w", "MSET", "k1", "1", "k2", "1"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", ["CLIENT", "CACHING", "NO"], ["CLIENT", "TRACKINGINFO"]),
    ])
    assert pushed_to(t, "r") == inv2("k2")


# ------------------------------------------------------------------------------------------------
# Replies and errors
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("proto", ["2", "3"])
def test_client_tracking_replies_and_errors_match_redis(strata_server, redis_server, proto):
    differential(strata_server, redis_server, ["a", "b"], [
        ("a", "HELLO", proto),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", "CLIENT", "GETREDIR"),
        ("a", "CLIENT", "TRACKING"),
        ("a", "CLIENT", "TRACKING", "maybe"),
        ("a", "CLIENT", "TRACKING", "maybe", "bcast"),
        ("a", "CLIENT", "TRACKING", "on", "bogus"),
        ("a", "CLIENT", "TRACKING", "on", "redirect"),
        ("a", "CLIENT", "TRACKING", "on", "redirect", "abc"),
        ("a", "CLIENT", "TRACKING", "on", "redirect", "0"),
        ("a", "CLIENT", "TRACKING", "on", "redirect", "-5"),
        ("a", "CLIENT", "TRACKING", "on", "redirect", "999999"),
        ("a", "CLIENT", "TRACKING", "on", "redirect", "{id:b}", "redirect", "{id:b}"),
        ("a", "CLIENT", "TRACKING", "on", "prefix"),
        ("a", "CLIENT", "TRACKING", "on", "prefix", "p"),
        ("a", "CLIENT", "TRACKING", "on", "bcast", "optin"),
        ("a", "CLIENT", "TRACKING", "on", "optin", "optout"),
        ("a", "CLIENT", "TRACKING", "on", "bcast", "prefix", "FOOBAR", "prefix", "FOO"),
        ("a", "CLIENT", "TRACKING", "on", "bcast", "prefix", "FOO", "prefix", "FOOBAR"),
        ("a", "CLIENT", "TRACKING", "off", "prefix", "p"),
        ("a", "CLIENT", "TRACKING", "off", "bogus"),
        ("a", "CLIENT", "CACHING", "yes"),
        ("a", "CLIENT", "CACHING", "maybe"),
        ("a", "CLIENT", "CACHING"),
        ("a", "CLIENT", "GETREDIR", "x"),
        ("a", "CLIENT", "TRACKINGINFO", "x"),
        ("a", "CLIENT", "TRACKING", "on", "bcast", "prefix", "FOO", "prefix", "BAR"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", "CLIENT", "TRACKING", "on", "bcast", "prefix", "FO"),
        ("a", "CLIENT", "TRACKING", "on", "bcast", "prefix", "BARB"),
        ("a", "CLIENT", "TRACKING", "on"),
        ("a", "CLIENT", "TRACKING", "on", "bcast", "noloop", "redirect", "{id:b}"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", "CLIENT", "GETREDIR"),
        ("a", "CLIENT", "CACHING", "yes"),
        ("a", "CLIENT", "TRACKING", "off"),
        ("a", "CLIENT", "TRACKING", "on", "optin"),
        ("a", "CLIENT", "TRACKING", "on", "optout"),
        ("a", "CLIENT", "CACHING", "no"),
        ("a", "CLIENT", "CACHING", "yes"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", "CLIENT", "TRACKING", "on", "optin", "noloop"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", "CLIENT", "TRACKING", "off"),
        ("a", "CLIENT", "TRACKING", "on", "optout"),
        ("a", "CLIENT", "CACHING", "no"),
        ("a", "CLIENT", "TRACKINGINFO"),
        ("a", "CLIENT", "GETREDIR"),
        ("a", "RESET"),
        ("a", "CLIENT", "TRACKINGINFO"),
    ])


def test_command_rows_of_the_tracking_subcommands_match_redis(both):
    for sub in ("tracking", "caching", "getredir", "trackinginfo"):
        both("COMMAND", "INFO", f"client|{sub}")
    both("CLIENT", "HELP")


def test_client_list_shows_tracking_flags_and_redirect(strata_server, redis_server):
    def fields(server):
        a, b, r = server.conn(), server.conn(), server.conn()
        rid = r.call("CLIENT", "ID")
        a.call("HELLO", "3")
        a.call("CLIENT", "TRACKING", "ON", "REDIRECT", rid)
        b.call("CLIENT", "TRACKING", "ON", "BCAST")
        out = []
        for c in (a, b):
            line = c.call("CLIENT", "INFO").decode()
            kv = dict(f.split("=", 1) for f in line.split())
            out.append((kv["flags"], kv["redir"].replace(str(rid), "R")))
        r.call("QUIT")
        time.sleep(0.05)
        b.call("SET", "k", "1")  # b's own write: a's... nothing; track something for a first
        a.call("GET", "k")
        b.call("SET", "k", "2")
        a.read_available(0.2)
        kv = dict(f.split("=", 1) for f in a.call("CLIENT", "INFO").split(b"\n")[0].decode().split())
        out.append(kv["flags"])
        a.call("RESET")
        kv = dict(f.split("=", 1) for f in a.call("CLIENT", "INFO").decode().split())
        out.append((kv["flags"], kv["redir"]))
        return out

    mine = fields(strata_server)
    assert mine == fields(redis_server)
    assert mine == [("t", "R"), ("tB", "0"), "tR", ("N", "-1")]


# ------------------------------------------------------------------------------------------------
# The table's bound, INFO
# ------------------------------------------------------------------------------------------------


def test_the_table_is_bounded_by_tracking_table_max_keys(strata_server):
    a, w = strata_server.conn(), strata_server.conn()
    try:
        a.call("HELLO", "3")
        a.call("CLIENT", "TRACKING", "ON")
        a.call("MGET", *[f"key{i}" for i in range(250)])
        assert info(a)["tracking_total_keys"] == "250"
        assert w.call("CONFIG", "SET", "tracking-table-max-keys", "1") == b"OK"
        assert w.call("CONFIG", "GET", "tracking-table-max-keys") == [b"tracking-table-max-keys", b"1"]
        # Evicted keys are invalidated as if they had changed, 100 more per round (the cron's
        # rounds, or the client's own commands), until one key is left.
        got = set()
        while len(got) < 249:
            reply = a.read_reply()
            assert isinstance(reply, Push) and reply[0] == b"invalidate", reply
            got.update(reply[1])
        assert a.call("PING") == b"PONG"
        assert info(a)["tracking_total_keys"] == "1"
        remaining = {f"key{i}".encode() for i in range(250)} - got
        assert len(remaining) == 1
        w.call("SET", remaining.pop(), "x")
        assert a.read_reply()[0] == b"invalidate"
    finally:
        w.call("CONFIG", "SET", "tracking-table-max-keys", "1000000")


def info(c: RespConn) -> dict:
    text = c.call("INFO", "everything")
    if isinstance(text, bytes):
        text = text.decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def test_info_counts_tracking_clients_keys_items_and_prefixes(strata_server, redis_server):
    def counts(server):
        a, b, w = server.conn(), server.conn(), server.conn()
        a.call("HELLO", "3")
        a.call("CLIENT", "TRACKING", "ON")
        w.call("SET", "key1", "1")
        a.call("GET", "key1")
        a.call("GET", "key2")
        b.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "prefix:", "PREFIX", "other:")
        b.call("CLIENT", "TRACKING", "ON")  # a switch of BCAST mode is refused
        w.call("SET", "prefix:key1", "1")
        i = info(w)
        first = [i[k] for k in ("tracking_clients", "tracking_total_keys", "tracking_total_items",
                                 "tracking_total_prefixes")]
        a.call("CLIENT", "TRACKING", "OFF")  # its keys stay until invalidated, as in Redis
        b.close()
        time.sleep(0.1)
        i = info(w)
        second = [i[k] for k in ("tracking_clients", "tracking_total_keys", "tracking_total_items",
                                  "tracking_total_prefixes")]
        w.call("FLUSHALL", "ASYNC")
        third = info(w)["tracking_total_keys"]
        return first, second, third

    mine = counts(strata_server)
    assert mine == counts(redis_server)
    assert mine == (["2", "2", "2", "2"], ["0", "2", "2", "0"], "0")


# ------------------------------------------------------------------------------------------------
# Delivery
# ------------------------------------------------------------------------------------------------


def test_invalidations_are_pushed_to_an_idle_client_and_under_client_reply_off(strata_server):
    a, w = strata_server.conn(), strata_server.conn()
    a.call("HELLO", "3")
    a.call("CLIENT", "TRACKING", "ON")
    w.call("SET", "foo", "bar")
    a.call("GET", "foo")
    w.call("SET", "foo", "baz")
    assert a.read_reply_raw() == inv3("foo")  # without sending anything
    a.send_command("CLIENT", "REPLY", "OFF")
    assert a.read_available(0.2) == b""
    w.call("SET", "foo", "again")  # not read since the last invalidation: nothing
    a.send_command("GET", "foo")  # no reply, but tracked
    time.sleep(0.1)
    w.call("SET", "foo", "more")
    assert a.read_reply_raw() == inv3("foo")
    a.send_command("CLIENT", "REPLY", "ON")
    assert a.read_reply() == b"OK"


def test_a_redirect_client_in_resp3_need_not_subscribe(strata_server):
    a, r, w = strata_server.conn(), strata_server.conn(), strata_server.conn()
    r.call("HELLO", "3")
    rid = r.call("CLIENT", "ID")
    a.call("CLIENT", "TRACKING", "ON", "REDIRECT", rid)
    a.call("GET", "foo")
    w.call("SET", "foo", "bar")
    assert r.read_reply_raw() == inv3("foo")


def test_unblocked_blmove_gets_its_reply_before_the_invalidation(strata_server):
    a, w = strata_server.conn(), strata_server.conn()
    w.call("RPUSH", "list2{t}", "a")
    a.call("HELLO", "3")
    a.call("CLIENT", "TRACKING", "ON")
    a.call("LRANGE", "list2{t}", "0", "-1")
    a.send_command("BLMOVE", "list1{t}", "list2{t}", "LEFT", "LEFT", "0")
    deadline = time.monotonic() + 5
    while info(w)["blocked_clients"] != "1":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    w.call("RPUSH", "list1{t}", "foo")
    assert a.read_reply() == b"foo"
    assert a.read_reply_raw() == inv3("list2{t}")


def test_a_client_that_never_reads_is_closed_not_waited_for(start_strata):
    server = start_strata(**{"client-output-buffer-limit": "normal 1mb 0 0"})
    a, w = server.conn(), server.conn()
    a.call("HELLO", "3")
    a.call("CLIENT", "TRACKING", "ON", "BCAST")
    # a never reads: once the socket's buffers are full its invalidations pile up in the server
    # until it is closed for its output buffer; the writer is never held up.
    key = "k" * 1000
    started = time.monotonic()
    for batch in range(40):
        w.send(b"".join(encode_command("SET", f"{key}{batch}:{i}", "v") for i in range(500)))
        for _ in range(500):
            assert w.read_reply_raw() == b"+OK\r\n"
    assert time.monotonic() - started < 60
    received = a.read_until_closed(10.0)
    assert 0 < len(received) < 20_000 * 1000
    assert "overcoming of output buffer limits" in server.log_tail(200)


# ------------------------------------------------------------------------------------------------
# Real clients
# ------------------------------------------------------------------------------------------------


def test_redis_py_resp3_push_handler_sees_invalidations(strata_server):
    r = redis.Redis(port=strata_server.port, protocol=3, single_connection_client=True)
    w = strata_server.client()
    try:
        seen = []
        r.connection._parser.set_invalidation_push_handler(seen.append)
        r.client_tracking_on()
        w.set("cached", "1")
        assert r.get("cached") == b"1"
        w.set("cached", "2")
        time.sleep(0.1)
        assert r.ping()
        assert seen == [[b"invalidate", [b"cached"]]]
        r.flushall()
        assert r.ping()
        assert seen[-1] == [b"invalidate", None]
    finally:
        r.close()


def test_redis_py_resp2_pubsub_redirect(strata_server):
    r = redis.Redis(port=strata_server.port, single_connection_client=True)
    w = strata_server.client()
    p = w.pubsub()
    try:
        p.subscribe("__redis__:invalidate")
        assert p.get_message(timeout=2)["type"] == "subscribe"
        pid = next(c["id"] for c in w.client_list() if c["sub"] == "1")
        r.client_tracking_on(clientid=int(pid))
        r.get("k")
        w.set("k", "v")
        msg = p.get_message(timeout=2)
        assert msg["channel"] == b"__redis__:invalidate" and msg["data"] == [b"k"]
    finally:
        p.close()
        r.close()
