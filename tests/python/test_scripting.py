"""Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, compared byte for byte with a
real redis-server (conversions, errors and their positions, the sandbox, the redis API), and a
concurrency test showing scripts are atomic while they run in parallel."""

import hashlib
import socket
import threading
import time

import pytest

from harness import redis_is_strata

SCRIPTS = ["return redis.call('incr','s')","return redis.pcall('incr','s')","x = 1","return y","error('boom')","error({err='MYERR custom'})","return {err='bad thing'}","return redis.call('nosuch')","return redis.call('get')","return {1,2,3.7,'x',nil,4}","return redis.call('ping')","return true","return false","return 3.99","return {ok='fine'}","return redis.status_reply('X')","return redis.error_reply('E1 x')","return redis.error_reply('plain')","return redis.sha1hex('')","return os","return loadfile","return redis.call('eval','return 1',0)","return redis.call('blpop','l',0)",
"return redis.error_reply('plain').err","return {err='-X y'}","error({err='nocode'})","return {1,{2,{3}},'a'}","return redis.setresp(3)","redis.setresp(3); return redis.call('hgetall','h')","return {double=3.5}","return redis.call('hgetall','nokey')","return {map={a=1}}","local t = redis.call('ping'); return type(t)","return type(redis.call('get','nokey'))","return bit.band(7,3)","return 1e20","return -3.5","error('x', 0)","return redis.call()","return redis.call({})","return redis.call('set','a',3.5)","return redis.call('get','a')","return redis.call('set','a',true)","return ARGV[1] .. KEYS[1]","return #KEYS","return 'x' .. ","return redis.call('SET','a','b','NX')","return {ok=1}","redis.setresp(3); return redis.call('hget','h','nope')","redis.setresp(3); return {redis.call('exists','h') == 1}","return bit.tohex(255)","return bit.tohex(-1, -4)","return bit.lshift(1, 40)","return bit.bnot(0)","redis.setresp(4)","local a = 1\nlocal b = nil\nreturn b.x","return tostring(3.5)","return redis.call('get', 12)","return string.format('%d', 5)","return math.floor(3.7)","return table.concat({'a','b'}, ',')","return redis.call('SELECT', 1)","return redis.call('multi')","return unpack({1,2})","return loadstring","return getfenv", "return setmetatable({}, {})", "return rawget(_G, 'zz')", "return redis.call('hset', KEYS[1], 'q', 5)"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_replies_match_redis(both, script):
    both("SET", "s", "abc")
    both("HSET", "h", "a", "1")
    both("EVAL", script, "1", "k1", "a1")


@pytest.mark.parametrize("cmd", [
    ("EVAL", "return 1", "-1"),
    ("EVAL", "return 1", "2", "a"),
    ("EVAL", "return 1", "x"),
    ("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"),
    ("EVALSHA", "abc", "0"),
    ("SCRIPT", "FLUSH", "bad"),
    ("SCRIPT", "KILL"),
    ("EVAL_RO", "return redis.call('set','x','1')", "0"),
    ("EVAL_RO", "return redis.call('get','x')", "0"),
    ("EVAL", "return redis.call('eval_ro', 'return 1', '0')", "0"),
])
def test_script_command_errors_match_redis(both, cmd):
    both(*cmd)


# Redis 7 shebang lines: `#!lua` with optional `flags=...`, split like a config line.
SHEBANGS = [
    "#!lua flags=no-writes,allow-oom\nreturn 1",
    "#!lua\nreturn redis.call('set','a','1')",
    "#!lua flags=no-writes\nreturn redis.call('set','a','1')",
    "#!lua flags=no-writes\nreturn redis.call('get','a')",
    "#!lua flags=no-writes\nreturn redis.pcall('set','a','1')",
    "#!lua flags=no-writes\nreturn redis.call('flushall')",
    "#!lua flags=no-writes\nreturn redis.call('publish','c','m')",
    "#!lua flags=no-writes\nreturn redis.call('eval','return 1','0')",
    "#!lua flags=allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn redis.call('set','b','2')",
    "#!lua flags=no-writes flags=allow-oom\nreturn 1",
    "#!lua flags=\nreturn 1",
    "#!lua  flags=no-writes  \nreturn 1",
    "#!lua\tflags=no-writes\nreturn 1",
    '#!lua "flags=no-writes"\nreturn 1',
    '#!lua "flags=no-writes\nreturn 1',
    "#!lua\r\nreturn 1",
    "#!lua flags=bogus\nreturn 1",
    "#!lua flags=No-writes\nreturn 1",
    "#!lua flags=no-writes,\nreturn 1",
    "#!lua flags=,no-writes\nreturn 1",
    "#!lua name=x\nreturn 1",
    "#!lua Flags=no-writes\nreturn 1",
    "#!x\nreturn 1",
    "#!LUA\nreturn 1",
    "#!\nreturn 1",
    "#! lua\nreturn 1",
    "#!notlua flags=bogus\nreturn 1",
    "#!lua",
    "#!lua flags=no-writes",
    "#!lua\x00\nreturn 1",
    "#!lua\nreturn x +",
    "#!lua\nerror('e')",
    "#!lua\n\nerror('e')",
    "#!lua flags=no-writes\nreturn {KEYS[1], ARGV[1]}",
    "return 1 --[[\n#!lua\n]]",
    " #!lua\nreturn 1",
]


@pytest.mark.parametrize("script", SHEBANGS)
def test_shebang_scripts_match_redis(both, script):
    both("EVAL", script, "1", "k1", "a1")
    both("EVAL_RO", script, "1", "k1", "a1")
    # A script whose shebang or code is refused is not cached; SCRIPT LOAD checks the same way.
    both("SCRIPT", "EXISTS", hashlib.sha1(script.encode()).hexdigest())
    both("SCRIPT", "FLUSH")
    sha = both("SCRIPT", "LOAD", script)
    if isinstance(sha, bytes):
        both("EVALSHA", sha, "0")
        both("EVALSHA_RO", sha, "0")


@pytest.mark.parametrize("cmd", [
    ("EVAL_RO", "return redis.call('publish','c','m')", "0"),
    ("EVAL_RO", "return redis.call('spublish','c','m')", "0"),
    ("EVAL", "return redis.call('publish','c','m')", "0"),
])
def test_read_only_scripts_may_not_publish(both, cmd):
    both(*cmd)


def test_script_load_exists_evalsha_and_flush(both):
    both("SCRIPT", "FLUSH")
    sha = both("SCRIPT", "LOAD", "return {KEYS[1], ARGV[1]}")
    both("SCRIPT", "EXISTS", sha, "ffffffffffffffffffffffffffffffffffffffff")
    both("EVALSHA", sha, "1", "key", "arg")
    both("EVALSHA", sha.upper(), "1", "key", "arg")
    both("EVALSHA_RO", sha, "1", "key", "arg")
    # EVAL caches its script too.
    both("EVAL", "return 7", "0")
    assert both("SCRIPT", "EXISTS", hashlib.sha1(b"return 7").hexdigest()) == [1]
    both("SCRIPT", "FLUSH", "ASYNC")
    both("SCRIPT", "EXISTS", sha)
    both("EVALSHA", sha, "0")


def test_scripts_write_and_read_every_type(both):
    script = """
    redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
    redis.call('rpush', KEYS[1], 'a', 'b', 'c')
    redis.call('hset', KEYS[2], 'f', 'v', 'g', 'w')
    redis.call('sadd', KEYS[3], 'x')
    redis.call('zadd', KEYS[4], 1.5, 'm', 2, 'n')
    return {redis.call('lrange', KEYS[1], 0, -1), redis.call('hget', KEYS[2], 'g'),
            redis.call('smembers', KEYS[3]), redis.call('zrange', KEYS[4], 0, -1, 'WITHSCORES'),
            redis.call('type', KEYS[2])}
    """
    both("EVAL", script, "4", "l", "h", "s", "z")


def test_resp3_conversions_match_redis(both):
    both.each("HELLO", "3")
    both("HSET", "h", "a", "1")
    both("SADD", "st", "only")
    for script in ("redis.setresp(3); return redis.call('hgetall', 'h')",
                   "redis.setresp(3); return redis.call('smembers', 'st')",
                   "redis.setresp(3); return redis.call('get', 'nokey')",
                   "return {double=1.5}", "return {map={a=1}}", "return {set={x=true}}",
                   "return {big_number='123456789012345678901234567890'}"):
        both("EVAL", script, "0")


def test_script_inside_multi(both):
    both("MULTI")
    both("EVAL", "return redis.call('incr', KEYS[1])", "1", "n")
    both("EVAL", "return redis.call('incr', KEYS[1])", "1", "n")
    both("EXEC")


def test_stock_adjustment_script(both):
    script = """
    local stock = tonumber(redis.call('HGET', KEYS[1], 'quantity'))
    local q = tonumber(ARGV[1])
    if not stock then return {err = 'Product not found'} end
    if (stock + q) < 0 then return -1 else return redis.call('HINCRBY', KEYS[1], 'quantity', q) end
    """
    sha = both("SCRIPT", "LOAD", script)
    both("HSET", "product:1", "quantity", "2")
    for q in ("-1", "-1", "-1", "1", "5"):
        both("EVALSHA", sha, "1", "product:1", q)
    both("EVALSHA", sha, "1", "product:missing", "1")


def test_scripts_are_atomic_and_run_in_parallel(strata_server):
    """Scripts move units between keys (declared and undeclared); readers never see a sum other
    than the total, and no increment is lost."""
    setup = strata_server.client()
    setup.mset({"p:a": 1000, "p:b": 1000, "p:undeclared": 0})
    move = setup.register_script("""
        redis.call('decrby', KEYS[1], ARGV[1])
        redis.call('incrby', KEYS[2], ARGV[1])
        redis.call('incr', 'p:undeclared')
        return redis.call('decr', 'p:undeclared')
    """)
    stop = time.monotonic() + 2.0
    errors: list[str] = []
    counts = {"scripts": 0, "reads": 0}

    def writer(i):
        c = strata_server.client()
        while time.monotonic() < stop and not errors:
            keys = ["p:a", "p:b"] if i % 2 else ["p:b", "p:a"]
            move(keys=keys, args=[3], client=c)
            counts["scripts"] += 1
            i += 1

    def reader():
        c = strata_server.client()
        while time.monotonic() < stop and not errors:
            a, b, u = (int(v) for v in c.mget("p:a", "p:b", "p:undeclared"))
            if a + b != 2000:
                errors.append(f"saw a={a} b={b}")
            counts["reads"] += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    assert counts["scripts"] > 50 and counts["reads"] > 50, counts
    assert int(setup.get("p:a")) + int(setup.get("p:b")) == 2000
    assert setup.get("p:undeclared") == b"0"


# A script running longer than busy-reply-threshold (alias lua-time-limit) makes Redis answer
# -BUSY to every command but the few flagged allow-busy; Strata does the same.
BUSY_SCRIPT = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
BUSY_FUNCTION = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
UNKILLABLE = (b"-UNKILLABLE Sorry the script already executed write commands against the dataset. "
              b"You can either wait the script termination or kill the server in a hard way using the "
              b"SHUTDOWN NOSAVE command.\r\n")
SPIN = "while true do end"
BUSY_MS = 200  # the threshold the busy tests set; every wait below is bounded by a few seconds


def busy_server(start_strata):
    """A private server with a low busy-reply-threshold, set at run time through its alias."""
    server = start_strata()
    with server.conn() as c:
        assert c.call_raw("CONFIG", "SET", "lua-time-limit", str(BUSY_MS)) == b"+OK\r\n"
        assert c.call("CONFIG", "GET", "busy-reply-threshold") == [b"busy-reply-threshold", str(BUSY_MS).encode()]
    return server


def wait_until_busy(conn, *cmd, expect=BUSY_SCRIPT, timeout=5.0):
    """Sends cmd until it is answered -BUSY (the script has passed the threshold)."""
    deadline = time.monotonic() + timeout
    while (reply := conn.call_raw(*cmd)) != expect:
        assert time.monotonic() < deadline, f"never got -BUSY, last reply {reply!r}"
        time.sleep(0.02)


def kill_script(admin, runner, kill=("SCRIPT", "KILL")):
    assert admin.call_raw(*kill) == b"+OK\r\n"
    got = runner.read_reply_raw()
    assert got.startswith(b"-ERR Script killed by user with SCRIPT KILL... script: "), got


def test_a_client_needing_a_busy_scripts_key_gets_busy_until_script_kill(start_strata):
    server = busy_server(start_strata)
    try:
        runner, waiter, admin = server.conn(), server.conn(), server.conn()
        runner.send_command("EVAL", SPIN, "1", "k")
        # A client already waiting for the key when the threshold passes is answered then,
        # not when the script ends.
        time.sleep(0.05)
        started = time.monotonic()
        assert waiter.call_raw("GET", "k") == BUSY_SCRIPT
        assert time.monotonic() - started < 3
        # Newcomers get -BUSY at once; so do a write, another script on the key and FLUSHALL.
        for cmd in (("GET", "k"), ("SET", "k", "v"), ("EVAL", "return 1", "1", "k"), ("FLUSHALL",)):
            assert admin.call_raw(*cmd) == BUSY_SCRIPT, cmd
        # FUNCTION KILL does not stop an EVAL script; SCRIPT KILL does, and the key is usable.
        assert admin.call_raw("FUNCTION", "KILL") == BUSY_SCRIPT
        kill_script(admin, runner)
        assert admin.call_raw("SET", "k", "v") == b"+OK\r\n"
        assert runner.call_raw("GET", "k") == b"$1\r\nv\r\n"
        assert admin.call_raw("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    finally:
        server.kill9()


def test_a_transaction_meeting_a_busy_script_is_discarded(start_strata):
    server = busy_server(start_strata)
    try:
        runner, client, admin = server.conn(), server.conn(), server.conn()
        assert client.call_raw("MULTI") == b"+OK\r\n"
        assert client.call_raw("SET", "k", "v") == b"+QUEUED\r\n"
        runner.send_command("EVAL", SPIN, "1", "k")
        wait_until_busy(admin, "GET", "k")
        assert client.call_raw("EXEC") == (b"-EXECABORT Transaction discarded because of: "
                                           + BUSY_SCRIPT[1:])
        kill_script(admin, runner)
        assert client.call_raw("EXEC") == b"-ERR EXEC without MULTI\r\n"
        assert client.call_raw("GET", "k") == b"$-1\r\n"
    finally:
        server.kill9()


def test_a_busy_function_names_function_kill(start_strata):
    server = busy_server(start_strata)
    try:
        runner, admin = server.conn(), server.conn()
        assert admin.call_raw("FUNCTION", "LOAD", "#!lua name=spinlib\n"
                              "redis.register_function('spin', function() while true do end end)"
                              ) == b"$7\r\nspinlib\r\n"
        runner.send_command("FCALL", "spin", "1", "k")
        wait_until_busy(admin, "GET", "k", expect=BUSY_FUNCTION)
        stats = admin.call("FUNCTION", "STATS")
        assert stats[0] == b"running_script", stats
        running = stats[1]
        assert running[:4] == [b"name", b"spin", b"command", [b"FCALL", b"spin", b"1", b"k"]], running
        assert running[4] == b"duration_ms" and running[5] >= BUSY_MS, running
        assert admin.call_raw("SCRIPT", "KILL") == BUSY_FUNCTION
        assert admin.call_raw("FUNCTION", "KILL") == b"+OK\r\n"
        got = runner.read_reply_raw()
        assert got == b"-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n", got
        assert admin.call_raw("GET", "k") == b"$-1\r\n"
    finally:
        server.kill9()


def test_a_busy_script_that_wrote_is_unkillable_and_shutdown_nosave_stops_the_server(start_strata):
    server = busy_server(start_strata)
    try:
        runner, admin = server.conn(), server.conn()
        runner.send_command("EVAL", "redis.call('set', KEYS[1], 'x') " + SPIN, "1", "k")
        wait_until_busy(admin, "GET", "k")
        assert admin.call_raw("SCRIPT", "KILL") == UNKILLABLE
        assert admin.call_raw("FUNCTION", "KILL") == UNKILLABLE
        admin.send_command("SHUTDOWN", "NOSAVE")
        assert admin.read_until_closed() == b""
        server.wait_exit(10)
    finally:
        server.kill9()


# Strata-only: SCRIPT KILL works before the threshold (Redis answers NOTBUSY until then), and
# SIGTERM stops a server whose script is busy.
STRATA_ONLY_BUSY = pytest.mark.skipif(
    redis_is_strata(), reason="Strata's own behaviour around busy scripts")


@STRATA_ONLY_BUSY
def test_script_kill_stops_a_runaway_script_that_has_not_written(strata_server):
    runner, admin = strata_server.conn(), strata_server.conn()
    assert admin.call_raw("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    runner.send_command("EVAL", "while true do end", "0")
    deadline = time.monotonic() + 5
    while (reply := admin.call_raw("SCRIPT", "KILL")) != b"+OK\r\n":
        assert reply.startswith(b"-NOTBUSY"), reply
        assert time.monotonic() < deadline, "the script never showed up as running"
        time.sleep(0.01)
    got = runner.read_reply_raw()
    assert got.startswith(b"-ERR Script killed by user with SCRIPT KILL... script: "), got
    assert got.endswith(b", on @user_script:1.\r\n"), got
    # A script that wrote cannot be killed; it is left to finish (here: after a bounded loop).
    runner.send_command("EVAL", "redis.call('set', KEYS[1], 'v'); local i = 0; "
                        "while i < 30000000 do i = i + 1 end; return i", "1", "written")
    deadline = time.monotonic() + 5
    while (reply := admin.call_raw("SCRIPT", "KILL")).startswith(b"-NOTBUSY"):
        assert time.monotonic() < deadline, "the script never showed up as running"
        time.sleep(0.01)
    assert reply.startswith(b"-UNKILLABLE Sorry the script already executed write commands"), reply
    assert runner.read_reply_raw() == b":30000000\r\n"
    # The connection that ran the killed script is fine.
    assert runner.call("GET", "written") == b"v"


def busy_transcript(server):
    """What clients get while a script runs past the threshold, and once it is killed."""
    with server.conn() as c:
        assert c.call_raw("CONFIG", "SET", "lua-time-limit", str(BUSY_MS)) == b"+OK\r\n"
    spinner, other, tx = server.conn(), server.conn(), server.conn()
    got = [tx.call_raw("MULTI"), tx.call_raw("INCR", "n")]
    spinner.send_command("EVAL", SPIN, "0")
    wait_until_busy(other, "PING")
    # Every command without the allow-busy flag is turned away, whatever its keys; inside
    # MULTI too (the transaction is then doomed), and EXEC discards the transaction.
    for cmd in (("PING",), ("GET", "k"), ("SET", "k", "v"), ("CONFIG", "GET", "maxclients"),
                ("CLIENT", "SETNAME", "x"), ("EVAL", "return 1", "0"), ("INFO", "server"),
                ("WATCH", "k"), ("UNWATCH",), ("MULTI",), ("GET", "k"), ("DISCARD",)):
        got.append(other.call_raw(*cmd))
    got += [tx.call_raw("INCR", "n"), tx.call_raw("EXEC"), tx.call_raw("EXEC")]
    got.append(other.call_raw("SCRIPT", "KILL"))
    got.append(spinner.read_reply_raw())
    got += [other.call_raw("PING"), spinner.call_raw("GET", "n")]
    return got


def test_a_busy_script_turns_away_every_command_but_the_allowed_ones(start_strata, start_redis):
    strata, redis_ref = start_strata(), start_redis()
    try:
        got = busy_transcript(strata)
        assert got == busy_transcript(redis_ref)
        assert got[2] == BUSY_SCRIPT and got[-2] == b"+PONG\r\n", got
    finally:
        strata.kill9()
        redis_ref.kill9()


@STRATA_ONLY_BUSY
def test_sigterm_stops_the_server_while_a_script_is_busy(start_strata):
    server = busy_server(start_strata)
    try:
        spinner, other = server.conn(), server.conn()
        spinner.send_command("EVAL", SPIN, "1", "busy:key")
        wait_until_busy(other, "GET", "busy:key")
        # SIGTERM ends the server (exit code 0) although a script is still running.
        assert server.stop() == 0
    finally:
        server.kill9()


# ---- the Lua sandbox as Redis 7.0 has it -----------------------------------------------------

# Writes to globals and to library tables, by assignment or around it, and what a script may
# still read; binary chunks; the shapes pcall and error replies take.
SANDBOX_SCRIPTS = [
    "setmetatable(_G, {})", "local g = getmetatable(_G); g.__index = {}", "redis = 1", "_G = {}",
    "redis.call = 1", "cjson.encode = 1", "cmsgpack.pack = 1", "bit.lshift = 1", "struct.pack = 1",
    "string.x = 1", "math.x = 1", "table.x = 1", "redis.error_reply = 1", "rawset(_G, 'x', 1)",
    "rawset(string, 'x', 1)", "table.insert(redis, 1)", "table.insert(_G, 1)",
    "getmetatable('').__index = 1", "return getmetatable('').__index == string",
    "return type(getmetatable(_G))", "return type(getmetatable(string))", "return #string",
    "local n = 0 for k in pairs(string) do n = n + 1 end return n",
    "local n = 0 for k in pairs(cjson) do n = n + 1 end return n > 0",
    "return rawget(_G, 'redis') ~= nil", "return rawget(string, 'len') ~= nil",
    "return next(string) ~= nil", "return type(coroutine)", "return type(gcinfo)", "return _VERSION",
    "return debug", "return type(getfenv)", "return type(newproxy)", "print('x')", "dofile('x')",
    "loadfile('x')", "return loadstring(string.dump(function() return 1 end))",
    "local f, e = loadstring(string.dump(function() return 1 end)) return e",
    "return {load(function() return nil end)}", "local f = loadstring('return 1 + 1') return f()",
    "local f = loadstring('x = 1') return {pcall(f)}",
    "local f = loadstring('redis = nil') return {pcall(f)}",
    "return {pcall(function() error('x') end)}", "return {pcall(function() error({err='E x'}) end)}",
    "local ok, e = pcall(function() redis.call('nosuch') end) return {type(e), e}",
    "local ok, e = pcall(function() return foo end) return e",
    "return {pcall(function() local a = nil; return a.b end)}", "return {pcall(redis.call, 'get')}",
    "return {pcall(error)}", "return {xpcall(function() error('x') end, function(e) return 'h:' .. e end)}",
    "error({err=1})", "error(12)", "error()", "return {err=1}", "return redis.error_reply('My Error')",
    "return redis.error_reply()", "return redis.error_reply(12)", "return redis.status_reply()",
    "return redis.status_reply('x\\r\\ny')", "redis.sha1hex()",
    "local t = redis.pcall('nosuch') return t.err", "return redis.pcall('nosuch')",
    "local t = {3, 1, 2} table.sort(t) table.insert(t, 4) table.insert(t, 1, 0) "
    "return {table.remove(t), t}", "return select('#', table.remove({}))",
    "return ('abc'):upper()", "return coroutine.wrap(function() return 7 end)()",
    "return redis.call('set', 'fl', 0.1) and redis.call('get', 'fl')",
    "return redis.call('set', 'fl', 1e17) and redis.call('get', 'fl')",
    "redis.setresp(3) return {true, false}", "return {true, false}",
]


@pytest.mark.parametrize("script", SANDBOX_SCRIPTS)
def test_sandbox_refuses_changes_to_globals_and_libraries_like_redis(both, script):
    both("EVAL", script, "0")
    # Nothing a script tried leaks into the next one.
    both("EVAL", "return {type(redis.call), type(cjson.encode), type(string.len), rawget(_G, 'x')}", "0")


def test_select_inside_a_script_leaves_the_callers_database(both):
    both("SET", "k", "db0")
    both("EVAL", "redis.call('select', 1); redis.call('set', 'k', 'db1'); return redis.call('get', 'k')", "0")
    both("GET", "k")
    both("SELECT", "1")
    both("GET", "k")
    both("DEL", "k")


def test_thousands_of_arguments_reach_redis_call_like_redis(both):
    both("DEL", "l")
    for kind in ("i", "'x' .. i"):
        both("EVAL", f"local a = {{}} for i = 1, 7998 do a[i] = {kind} end "
                     "return redis.call('rpush', KEYS[1], unpack(a))", "1", "l")
    both("LLEN", "l")
    both("EVAL", "local a = {} for i = 1, 100000 do a[i] = 1 end return #{unpack(a)}", "0")


def _read_deep_reply(conn) -> bytes:
    """The whole reply to a script returning a table that contains itself (nested headers with
    Redis's "reached lua stack limit" error where its Lua stack ran out; too deep for a recursive
    parser): everything that arrives until the connection has been quiet for half a second."""
    data = b""
    deadline = time.monotonic() + 10
    conn.sock.settimeout(0.5)
    try:
        while time.monotonic() < deadline:
            try:
                chunk = conn.sock.recv(1 << 20)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
    finally:
        conn.sock.settimeout(conn.timeout)
    return data


@pytest.mark.parametrize("script", [
    "local a = {}; local b = {a}; a[1] = b; return a",
    "local a = {}; a[1] = a; a[2] = 'after'; return {a, 'last'}",
    "local a = {}; a.map = {x = a}; return a",
    "local a = {}; a.set = {}; a.set[a] = true; return a",
    "local a = {}; a.map = {}; a.map[a] = 1; return a",
])
def test_a_table_containing_itself_is_cut_at_the_lua_stack_limit_like_redis(strata_server, redis_server, script):
    replies = []
    for server in (strata_server, redis_server):
        with server.conn() as c:
            c.send_command("EVAL", script, "0")
            replies.append(_read_deep_reply(c))
            # The connection (and the server) go on.
            assert c.call_raw("PING") == b"+PONG\r\n"
    assert replies[0] == replies[1], (len(replies[0]), len(replies[1]))
    assert b"-ERR reached lua stack limit\r\n" in replies[0]


def test_functions_may_return_tables_containing_themselves(strata_server, redis_server):
    code = ("#!lua name=rec\nredis.register_function('rec', function() "
            "local a = {}; local b = {a}; a[1] = b; return a end)")
    replies = []
    for server in (strata_server, redis_server):
        with server.conn() as c:
            assert c.call_raw("FUNCTION", "LOAD", "REPLACE", code) == b"$3\r\nrec\r\n"
            c.send_command("FCALL", "rec", "0")
            replies.append(_read_deep_reply(c))
            assert c.call_raw("FUNCTION", "DELETE", "rec") == b"+OK\r\n"
    assert replies[0] == replies[1]
    assert replies[0].endswith(b"-ERR reached lua stack limit\r\n")


def test_script_kill_stops_a_script_that_catches_errors_with_pcall(strata_server, redis_server):
    """Redis's kill error cannot be caught: pcall hands it on, and the script ends."""
    for script in ("local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
                   "while 1 do xpcall(function() while 1 do end end, function(e) return e end) end"):
        replies = []
        for server in (strata_server, redis_server):
            runner, admin = server.conn(), server.conn()
            assert admin.call_raw("CONFIG", "SET", "busy-reply-threshold", "50") == b"+OK\r\n"
            runner.send_command("EVAL", script, "0")
            deadline = time.monotonic() + 5
            while (reply := admin.call_raw("SCRIPT", "KILL")) != b"+OK\r\n":
                assert reply.startswith(b"-NOTBUSY"), reply
                assert time.monotonic() < deadline, "the script never showed up as running"
                time.sleep(0.05)
            replies.append(runner.read_reply_raw())
            assert runner.call_raw("PING") == b"+PONG\r\n"
            assert admin.call_raw("CONFIG", "SET", "busy-reply-threshold", "5000") == b"+OK\r\n"
            runner.close()
            admin.close()
        assert replies[0] == replies[1]
        assert replies[0].startswith(b"-ERR Script killed by user with SCRIPT KILL..."), replies[0]


def noreplicas_transcript(server):
    c = server.conn()
    c.call_raw("SET", "x", "v")
    c.call_raw("CONFIG", "SET", "min-replicas-to-write", "1")
    return [c.call_raw(*cmd) for cmd in (
        ("EVAL", "#!lua flags=no-writes\nreturn redis.call('get','x')", "1", "x"),
        ("EVAL", "return redis.call('get','x')", "1", "x"),
        ("EVAL", "#!lua\nreturn redis.call('get','x')", "1", "x"),
        ("EVAL_RO", "#!lua\nreturn redis.call('get','x')", "1", "x"),
        ("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"),
        ("FCALL", "f", "0"))]


def test_scripts_that_may_write_are_refused_without_enough_good_replicas(start_strata, start_redis):
    # A script whose flags allow writes (a shebang without no-writes, any function without it)
    # is refused before it starts, as a write command would be; one without a shebang is not.
    got = noreplicas_transcript(start_strata())
    assert got == noreplicas_transcript(start_redis())
    assert got[2] == b"-NOREPLICAS Not enough good replicas to write.\r\n", got
