"""ACL as Redis 7.0 does it, compared byte for byte with a real redis-server: every ACL SETUSER
rule form read back through GETUSER and LIST, DRYRUN, the ACL LOG, -NOPERM for commands, keys
and channels (at top level, inside MULTI, in scripts), AUTH and HELLO AUTH, requirepass as the
default user's password, aclfile SAVE/LOAD, users in the configuration file, and a replica
authenticating with masteruser.

The shared servers keep users between tests, so every test here starts from (and leaves) the
default state: only `default`, allowed everything without a password, and an empty log.
"""

from __future__ import annotations

import time

import pytest

from harness import Both, RespConn, RespError


def _clean(conn: RespConn):
    for name in conn.call("ACL", "USERS"):
        if name != b"default":
            conn.call("ACL", "DELUSER", name)
    conn.call("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
    conn.call("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
    conn.call("ACL", "LOG", "RESET")


@pytest.fixture
def acl(strata_server, redis_server):
    """Both, over fresh connections, with the ACL state reset before and after."""
    for server in (strata_server, redis_server):
        with server.conn() as c:
            _clean(c)
    yield Both(strata_server.conn(), redis_server.conn())
    for server in (strata_server, redis_server):
        with server.conn() as c:
            _clean(c)


def _norm(value):
    """Redis lists the single-command rules of a user in its hash table's order (random per
    process): sort each run of them, keep everything else (categories first, in order)."""
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if not isinstance(value, bytes):
        return value
    tokens = value.replace(b")", b" )").split(b" ")
    out, run = [], []
    for t in tokens + [b""]:
        if t[:1] in (b"+", b"-") and t[1:2] != b"@":
            run.append(t)
            continue
        out.extend(sorted(run))
        run = []
        out.append(t)
    return b" ".join(out[:-1])


def same_rules(b: Both, *cmd):
    """Runs `cmd` on both; the replies must be equal once the order of single-command rules is
    set aside (see _norm)."""
    s, r = b.strata.call(*cmd), b.redis.call(*cmd)
    assert _norm(s) == _norm(r), f"{cmd} differs\n  strata: {s!r}\n  redis:  {r!r}"
    return r


def logins(strata_server, redis_server, user: str, password: str) -> Both:
    """Fresh connections to both, authenticated as `user`."""
    b = Both(strata_server.conn(), redis_server.conn())
    assert b("AUTH", user, password) == b"OK"
    return b


RULE_FORMS = [
    ["on"],
    ["off"],
    ["nopass"],
    [">secret"],
    [">a", ">b", "<a"],
    ["#" + "a" * 64],
    ["#" + "a" * 64, "!" + "a" * 64],
    [">p", "resetpass"],
    ["sanitize-payload"],
    ["skip-sanitize-payload"],
    ["~*"],
    ["allkeys"],
    ["~foo:*", "~bar"],
    ["%R~read:*"],
    ["%W~write:*"],
    ["%RW~both:*"],
    ["%R~k", "%W~k"],
    ["~a", "resetkeys", "~b"],
    ["&*"],
    ["allchannels"],
    ["&news.*", "&chat"],
    ["&x", "resetchannels"],
    ["+@all"],
    ["allcommands"],
    ["-@all"],
    ["nocommands"],
    ["+get"],
    ["+@string"],
    ["+@hash", "-hdel"],
    ["+@all", "-@dangerous"],
    ["+@all", "-flushall"],
    ["-@all", "+@hash", "-@write"],
    ["+@all", "-@hash", "+hset"],
    ["+client|id"],
    ["+config|get"],
    ["+@all", "-config|set"],
    ["+select|0"],
    ["+select|0", "+select|1"],
    ["+@all", "-client"],
    ["(+get ~key1)"],
    ["(+set", "~key2)"],
    ["(+get ~a)", "(+set ~b)"],
    ["(+get ~a)", "clearselectors"],
    ["on", ">pw", "~*", "&*", "+@all", "reset"],
    ["", "on"],
]


@pytest.mark.parametrize("rules", RULE_FORMS, ids=lambda r: " ".join(r) or "empty")
def test_every_setuser_rule_form_reads_back_as_redis(acl, rules):
    assert acl("ACL", "SETUSER", "alice", *rules) == b"OK"
    same_rules(acl, "ACL", "GETUSER", "alice")
    same_rules(acl, "ACL", "LIST")
    acl("ACL", "USERS")


BAD_RULES = [
    ["+nosuchcommand"],
    ["-nosuchcommand"],
    ["+@nosuchcategory"],
    ["bogus"],
    ["#abc"],
    ["!" + "A" * 64],
    ["<notthere"],
    ["~*", "~foo"],
    ["&*", "&foo"],
    ["+config|get|x"],
    ["+select|"],
    ["(+get ~a"],
    ["(bogus)"],
    ["%X~k"],
    ["~a b"],
    ["(+get ~a) (+set ~b)"],
]


@pytest.mark.parametrize("rules", BAD_RULES, ids=lambda r: " ".join(r))
def test_invalid_rules_are_refused_with_redis_text_and_change_nothing(acl, rules):
    acl("ACL", "SETUSER", "bob", "on", "+get")
    acl("ACL", "SETUSER", "bob", ">pw", *rules)
    same_rules(acl, "ACL", "GETUSER", "bob")


def test_setuser_argument_errors(acl):
    acl("ACL", "SETUSER", "a b")
    acl("ACL", "SETUSER")
    acl("ACL", "GETUSER", "nobody")
    acl("ACL", "DELUSER", "default")
    acl("ACL", "SETUSER", "u1")
    acl("ACL", "SETUSER", "u2")
    acl("ACL", "DELUSER", "u1", "u2", "u3")
    acl("ACL", "USERS")
    acl("ACL", "NOSUCH")
    acl("ACL", "HELP")
    acl("ACL", "WHOAMI")
    acl("ACL", "CAT")
    acl("ACL", "CAT", "nosuch")
    acl("ACL", "GENPASS", "0")
    acl("ACL", "GENPASS", "4097")
    acl("ACL", "GENPASS", "x")
    acl("ACL", "LOG", "x")
    acl("ACL", "LOAD")
    acl("ACL", "SAVE")


def test_genpass_returns_hex_of_the_asked_length(acl):
    for bits, chars in [(None, 64), ("1", 1), ("5", 2), ("128", 32), ("4096", 1024)]:
        args = ["ACL", "GENPASS"] + ([bits] if bits else [])
        s, r = acl.each(*args)
        assert len(s) == len(r) == chars
        assert all(c in b"0123456789abcdef" for c in s)


def test_cat_lists_every_category_as_redis_for_the_commands_strata_has(acl):
    """The categories come from the command rows (as COMMAND INFO shows them): for every
    category, Strata lists exactly Redis's commands of it, less those Strata does not have."""
    acl("ACL", "CAT")
    have = set(acl.strata.call("COMMAND", "LIST"))
    for category in acl.redis.call("ACL", "CAT"):
        s, r = acl.each("ACL", "CAT", category)
        assert len(s) == len(set(s))
        assert set(s) == set(r) & have, (category, set(s) ^ (set(r) & have))


def test_noperm_for_commands_keys_and_channels(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@read", "+set", "+publish", "+subscribe",
        "+psubscribe", "+client|id", "%R~r:*", "%W~w:*", "~rw:*", "&news.*", "&chat")
    u = logins(strata_server, redis_server, "u", "pw")
    u("ACL", "WHOAMI")
    u("GET", "r:1")
    u("GET", "w:1")
    u("SET", "w:1", "v")
    u("SET", "r:1", "v")
    u("SET", "rw:1", "v")
    u("GET", "rw:1")
    u("DEL", "rw:1")
    u("MGET", "r:1", "rw:2", "other")
    u("CLIENT", "GETNAME")
    u("CONFIG", "GET", "port")
    u("FLUSHALL")
    u("PUBLISH", "news.sport", "hi")
    u("PUBLISH", "other", "hi")
    u("PUBLISH", "chat", "hi")
    u("SUBSCRIBE", "forbidden")
    u("PSUBSCRIBE", "news.*x")
    u("PSUBSCRIBE", "news.*")
    u("PUNSUBSCRIBE")


def test_acl_log_records_denials_and_auth_failures(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+get", "~k*", "&c")
    u = logins(strata_server, redis_server, "u", "pw")
    u("SET", "k", "v")
    u("SET", "k", "v")
    u("GET", "other")
    u("PUBLISH", "c", "m")
    u("AUTH", "u", "wrong")
    u("AUTH", "nobody", "x")
    s, r = acl.each("ACL", "LOG")
    assert len(s) == 5 and len(r) == 5

    def essence(entries):
        out = []
        for e in entries:
            d = dict(zip(e[::2], e[1::2]))
            out.append((d[b"count"], d[b"reason"], d[b"context"], d[b"object"], d[b"username"]))
            assert float(d[b"age-seconds"]) < 30
            assert b"id=" in d[b"client-info"]
        return out

    assert essence(s) == essence(r)
    s, r = acl.each("ACL", "LOG", "1")
    assert essence(s) == essence(r)
    acl("ACL", "LOG", "RESET")
    acl("ACL", "LOG")


def test_noperm_inside_multi_at_queue_time_and_at_exec(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@all", "-flushall", "~*")
    u = logins(strata_server, redis_server, "u", "pw")
    u("MULTI")
    u("SET", "k", "1")
    u("FLUSHALL")
    u("EXEC")
    u("MULTI")
    u("SET", "k", "1")
    u("GET", "k")
    # The rules change between queueing and EXEC.
    acl("ACL", "SETUSER", "u", "-get")
    u("EXEC")
    s, r = acl.each("ACL", "LOG")
    contexts = lambda entries: sorted(dict(zip(e[::2], e[1::2]))[b"context"] for e in entries)
    assert contexts(s) == contexts(r)


def test_noperm_in_scripts_and_functions(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@all", "-set", "~k*")
    u = logins(strata_server, redis_server, "u", "pw")
    u("EVAL", "return redis.call('get', KEYS[1])", "1", "k1")
    u("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k1")
    u("EVAL", "return redis.pcall('set', KEYS[1], 'v')", "1", "k1")
    u("EVAL", "return redis.call('get', 'other')", "0")
    u("EVAL", "return redis.pcall('get', 'other')", "0")
    acl("FUNCTION", "FLUSH")
    acl("FUNCTION", "LOAD", "#!lua name=acltest\n"
        "redis.register_function('setit', function(keys, args) return redis.call('set', keys[1], 'v') end)")
    u("FCALL", "setit", "1", "k1")
    s, r = acl.each("ACL", "LOG")
    ctx = lambda entries: [dict(zip(e[::2], e[1::2]))[b"context"] for e in entries]
    assert ctx(s) == ctx(r)
    acl("FUNCTION", "FLUSH")


def test_dryrun(acl):
    acl("ACL", "SETUSER", "u", "on", "nopass", "+get", "+publish", "%R~r*", "&ch")
    acl("ACL", "DRYRUN", "u", "get", "r1")
    acl("ACL", "DRYRUN", "u", "get", "x")
    acl("ACL", "DRYRUN", "u", "set", "r1", "v")
    acl("ACL", "DRYRUN", "u", "publish", "ch", "m")
    acl("ACL", "DRYRUN", "u", "publish", "other", "m")
    acl("ACL", "DRYRUN", "u", "get")
    acl("ACL", "DRYRUN", "u", "nosuch")
    acl("ACL", "DRYRUN", "nobody", "get", "x")
    acl("ACL", "DRYRUN", "u", "client", "id")
    acl("ACL", "DRYRUN", "u", "client", "nosuch")
    acl("ACL", "LOG")


def test_selectors_allow_what_any_selector_allows(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+get", "~a*", "(+set ~b*)", "(+get %R~c*)")
    u = logins(strata_server, redis_server, "u", "pw")
    u("GET", "a1")
    u("SET", "b1", "v")
    u("GET", "c1")
    u("SET", "a1", "v")
    u("GET", "b1")
    acl("ACL", "DRYRUN", "u", "set", "c1", "v")


def test_auth_and_hello_auth(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*")
    acl("ACL", "SETUSER", "off", "off", ">pw", "+@all", "~*")
    b = Both(strata_server.conn(), redis_server.conn())
    b("AUTH", "u", "bad")
    b("AUTH", "nobody", "pw")
    b("AUTH", "off", "pw")
    b("AUTH", "pw")
    b("AUTH", "u", "pw")
    b("ACL", "WHOAMI")
    b("AUTH", "a", "b", "c")
    b("HELLO", "2", "AUTH", "u", "bad")
    s_, r_ = b.each("HELLO", "2", "AUTH", "default", "whatever")
    assert s_[:6] == r_[:6]
    b("ACL", "WHOAMI")
    s = strata_server.conn()
    r = redis_server.conn()
    b = Both(s, r)
    s_, r_ = b.each("HELLO", "3", "AUTH", "u", "pw", "SETNAME", "x")
    assert s_[b"proto"] == r_[b"proto"] == 3
    b("ACL", "WHOAMI")
    b("CLIENT", "GETNAME")
    b("RESET")
    b("ACL", "WHOAMI")


def test_requirepass_is_the_default_users_password(acl, strata_server, redis_server):
    try:
        acl("CONFIG", "SET", "requirepass", "s3cret")
        acl("ACL", "GETUSER", "default")
        b = Both(strata_server.conn(), redis_server.conn())
        b("GET", "k")
        b("ACL", "WHOAMI")
        b("AUTH", "wrong")
        b("AUTH", "s3cret")
        b("GET", "k")
        b2 = Both(strata_server.conn(), redis_server.conn())
        b2("AUTH", "default", "s3cret")
        b2("CONFIG", "SET", "requirepass", "")
        acl("ACL", "GETUSER", "default")
        b3 = Both(strata_server.conn(), redis_server.conn())
        b3("GET", "k")
        b3("AUTH", "x")
    finally:
        for server in (strata_server, redis_server):
            with server.conn() as c:
                c.call("AUTH", "s3cret")
                c.call("CONFIG", "SET", "requirepass", "")


def test_deleting_a_user_disconnects_its_clients(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*")
    s = strata_server.conn()
    r = redis_server.conn()
    u = Both(s, r)
    u("AUTH", "u", "pw")
    u("PING")
    acl("ACL", "DELUSER", "u")
    assert s.is_closed() and r.is_closed()
    # A disabled user's connections stay (Redis 7.0 only refuses new logins).
    acl("ACL", "SETUSER", "v", "on", ">pw", "+@all", "~*")
    v = logins(strata_server, redis_server, "v", "pw")
    acl("ACL", "SETUSER", "v", "off")
    v("PING")
    acl("CLIENT", "KILL", "USER", "nobody")
    acl("CLIENT", "KILL", "USER", "v")


def test_acl_pubsub_default_sets_new_users_channels(acl):
    acl("CONFIG", "SET", "acl-pubsub-default", "allchannels")
    acl("ACL", "SETUSER", "p1")
    acl("ACL", "GETUSER", "p1")
    acl("ACL", "SETUSER", "p1", "reset")
    acl("ACL", "LIST")
    acl("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
    acl("ACL", "SETUSER", "p2")
    acl("ACL", "LIST")
    s, r = acl.each("CONFIG", "GET", "acl*")
    assert dict(zip(s[::2], s[1::2])) == dict(zip(r[::2], r[1::2]))


def test_acllog_max_len_bounds_the_log(acl, strata_server, redis_server):
    try:
        acl("CONFIG", "SET", "acllog-max-len", "2")
        acl("ACL", "SETUSER", "u", "on", ">pw", "~*")
        u = logins(strata_server, redis_server, "u", "pw")
        for cmd in ("GET", "TYPE", "STRLEN", "TTL"):
            u(cmd, "k")
        s, r = acl.each("ACL", "LOG")
        assert len(s) == len(r) == 2
    finally:
        acl("CONFIG", "SET", "acllog-max-len", "128")


def _aclfile_server(start, tmp_path, name):
    path = tmp_path / f"{name}.acl"
    path.write_text("user default on nopass ~* &* +@all\nuser bob on #" + "b" * 64 + " ~b* resetchannels -@all +get\n")
    return start(aclfile=str(path)), path


def test_aclfile_save_and_load_round_trip(start_strata, start_redis, tmp_path):
    s, sp = _aclfile_server(start_strata, tmp_path, "strata")
    r, rp = _aclfile_server(start_redis, tmp_path, "redis")
    b = Both(s.conn(), r.conn())
    b("ACL", "LIST")
    b("ACL", "SETUSER", "carol", "on", ">pw", "~c*", "&ch", "+@string", "(+get ~x)")
    b("ACL", "SAVE")
    assert sp.read_text() == rp.read_text()
    b("ACL", "SETUSER", "dave", "on")
    b("ACL", "LOAD")
    b("ACL", "LIST")
    # A broken file is refused whole, with Redis's error text (paths differ: compare the rest).
    for p in (sp, rp):
        p.write_text("user eve on +nosuch\nbad line\nuser eve on\n")
    se, re_ = b.each("ACL", "LOAD")
    assert str(se).replace(str(sp), "F") == str(re_).replace(str(rp), "F")
    b("ACL", "LIST")


def test_users_in_the_config_file(start_strata, start_redis, tmp_path):
    text = "user alice on >pw ~a* +@read\nuser default on nopass ~* &* +@all -flushall\n"
    sc = tmp_path / "s.conf"
    rc = tmp_path / "r.conf"
    sc.write_text(text)
    rc.write_text(text)
    s = start_strata(config_file=str(sc))
    r = start_redis(config_file=str(rc))
    b = Both(s.conn(), r.conn())
    b("ACL", "LIST")
    b("FLUSHALL")


def test_aclfile_and_config_users_together_are_refused(start_strata, tmp_path):
    from harness import ServerDied

    conf = tmp_path / "s.conf"
    acl_path = tmp_path / "users.acl"
    acl_path.write_text("user default on nopass ~* &* +@all\n")
    conf.write_text(f"user alice on\naclfile {acl_path}\n")
    with pytest.raises(ServerDied):
        start_strata(config_file=str(conf))


def test_replica_authenticates_with_masteruser(start_strata):
    leader = start_strata(requirepass="unused-by-replica")
    with leader.conn() as c:
        assert c.call("AUTH", "unused-by-replica") == b"OK"
        assert c.call("ACL", "SETUSER", "repl", "on", ">rpw", "+psync", "+replconf", "+ping", "+sync") == b"OK"
        assert c.call("SET", "k", "v") == b"OK"
    replica = start_strata(replicaof=f"127.0.0.1 {leader.port}", masteruser="repl", masterauth="rpw")
    deadline = time.time() + 20
    value = None
    while time.time() < deadline:
        with replica.conn() as c:
            value = c.call("GET", "k")
        if value == b"v":
            break
        time.sleep(0.2)
    assert value == b"v"


def test_scripts_can_ask_acl_check_cmd(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@all", "-set", "~k*")
    u = logins(strata_server, redis_server, "u", "pw")
    u("EVAL", "return redis.acl_check_cmd('get', 'k1')", "0")
    u("EVAL", "return redis.acl_check_cmd('get', 'x')", "0")
    u("EVAL", "return redis.acl_check_cmd('set', 'k1', 'v')", "0")
    u("EVAL", "return redis.acl_check_cmd('client', 'id')", "0")
    u("EVAL", "return redis.acl_check_cmd('nosuch')", "0")
    u("EVAL", "return redis.acl_check_cmd()", "0")


def test_subscribers_are_disconnected_when_their_channels_are_revoked(acl, strata_server, redis_server):
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*", "&news", "&sport")
    s, r = strata_server.conn(), redis_server.conn()
    u = Both(s, r)
    u("AUTH", "u", "pw")
    u("SUBSCRIBE", "news")
    # Still allowed: the subscriber stays.
    acl("ACL", "SETUSER", "u", "resetchannels", "&news")
    assert not s.is_closed(wait=0.5) and not r.is_closed(wait=0.5)
    acl("ACL", "SETUSER", "u", "resetchannels", "&sport")
    assert s.is_closed() and r.is_closed()


def test_acl_load_disconnects_the_clients_of_replaced_users(start_strata, start_redis, tmp_path):
    s, sp = _aclfile_server(start_strata, tmp_path, "strata")
    r, rp = _aclfile_server(start_redis, tmp_path, "redis")
    admin = Both(s.conn(), r.conn())
    admin("ACL", "SETUSER", "bob", ">pw")
    sc, rc = s.conn(), r.conn()
    bob = Both(sc, rc)
    bob("AUTH", "bob", "pw")
    admin("ACL", "LOAD")
    assert sc.is_closed() and rc.is_closed()
    # The default user's clients stay.
    admin("PING")


def test_empty_selector_words_are_syntax_errors(acl):
    acl("ACL", "SETUSER", "x", '(+get "")')
    acl("ACL", "SETUSER", "x", "()")
    same_rules(acl, "ACL", "GETUSER", "x")


def test_config_rewrite_writes_the_users(start_strata, tmp_path):
    conf = tmp_path / "s.conf"
    conf.write_text("user alice on >pw ~a* +get\n")
    s = start_strata(config_file=str(conf))
    with s.conn() as c:
        assert c.call("ACL", "SETUSER", "bob", "on", "nopass", "+@all", "~*") == b"OK"
        assert c.call("CONFIG", "REWRITE") == b"OK"
    lines = [line for line in conf.read_text().splitlines() if line.startswith("user ")]
    assert lines == [
        "user alice on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~a* resetchannels -@all +get",
        "user bob on nopass ~* resetchannels +@all",
        "user default on nopass ~* &* +@all",
    ]
    s.restart()
    with s.conn() as c:
        assert c.call("AUTH", "alice", "pw") == b"OK"
        assert c.call("GET", "a1") is None
        assert c.call("SET", "a1", "v") == RespError(
            b"NOPERM this user has no permissions to run the 'set' command")


def test_sort_by_and_get_need_every_key_readable(acl, strata_server, redis_server):
    acl("RPUSH", "l", "2", "1")
    acl("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~l")
    acl("ACL", "SETUSER", "r", "on", ">pw", "+@all", "%R~*", "~l")
    u = logins(strata_server, redis_server, "u", "pw")
    u("SORT", "l")
    u("SORT", "l", "BY", "nosort")
    u("SORT", "l", "BY", "w_*")
    u("SORT", "l", "GET", "#")
    u("SORT_RO", "l", "GET", "o_*")
    r = logins(strata_server, redis_server, "r", "pw")
    r("SORT", "l", "BY", "w_*", "GET", "#")
