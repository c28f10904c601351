"""FUNCTION libraries and FCALL / FCALL_RO, compared byte for byte with a real redis-server, and
libraries surviving a restart of Strata."""

import time

import pytest

LIB = """#!lua name=mylib
redis.register_function('echo_arg', function(keys, args) return args[1] end)
redis.register_function{function_name='reader', callback=function(keys, args)
  return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}
redis.register_function('boom', function(keys, args) return redis.call('incr', 's') end)
redis.register_function('boom2', function(keys, args) error('x') end)
redis.register_function('shape', function(keys, args) return {keys[1], args[1], #keys, #args} end)
redis.register_function{function_name='sneaky', callback=function(keys, args)
  return redis.call('set', 'x', '1') end, flags={'no-writes'}}
redis.register_function('globals', function(keys, args) return KEYS end)
redis.register_function('writer', function(keys, args) return redis.call('set', keys[1], args[1]) end)
"""


@pytest.fixture
def lib(both):
    both("FUNCTION", "FLUSH")
    both("SET", "s", "abc")
    both("FUNCTION", "LOAD", LIB)
    yield both
    both("FUNCTION", "FLUSH")


@pytest.mark.parametrize("cmd", [
    ("FCALL", "echo_arg", "0", "hello"),
    ("FCALL", "reader", "1", "s"),
    ("FCALL_RO", "reader", "1", "s"),
    ("FCALL", "boom", "0"),
    ("FCALL", "boom2", "0"),
    ("FCALL", "shape", "1", "a", "b"),
    ("FCALL", "sneaky", "0"),
    ("FCALL_RO", "sneaky", "0"),
    ("FCALL_RO", "echo_arg", "0", "x"),
    ("FCALL", "globals", "0"),
    ("FCALL", "nosuch", "0"),
    ("FCALL", "echo_arg", "-1"),
    ("FCALL", "echo_arg", "3", "a"),
    ("FCALL", "writer", "1", "k", "v"),
])
def test_fcall_matches_redis(lib, cmd):
    lib(*cmd)


@pytest.mark.parametrize("code", [
    "return 1",
    "#!lua",
    "#!lua name=x foo=bar",
    "#!py name=x",
    "#!lua name=bad-name\nredis.register_function('a', function() end)",
    "#!lua name=bad\nredis.call('ping')",
    "#!lua name=empty\nlocal a = 1",
    "#!lua name=u\nredis.register_function{function_name='z', callback=function() end, flags={'bogus'}}",
    "#!lua name=u\nredis.register_function('a')",
    "#!lua name=u\nx = (",
    "#!lua name=dup\nredis.register_function('echo_arg', function() return 1 end)",
    "#!lua name=mylib\nredis.register_function('other', function() return 1 end)",
    # The metadata line, split like a config line.
    "#!lua name=nn",
    "#!lua\nredis.register_function('a', function() return 1 end)",
    "#!lua name=\nlocal x = 1",
    "#!lua name=aa name=bb\nredis.register_function('a', function() return 1 end)",
    "#!lua NAME=aa name=bb\nredis.register_function('a', function() return 1 end)",
    "#!lua engine=lua name=cc\nredis.register_function('a', function() return 1 end)",
    "#!luac name=x\nredis.register_function('a', function() return 1 end)",
    "#!py name=bad-name\nredis.register_function('a', function() return 1 end)",
    "#!LUA name=up\nredis.register_function('up_f', function() return 1 end)",
    "#!lua  NAME=sp2  \nredis.register_function('sp_f', function() return 1 end)",
    '#!lua "name=q"\nredis.register_function(\'q_f\', function() return 1 end)',
    '#!lua "name=q\nredis.register_function(\'q_f\', function() return 1 end)',
    "#! lua name=x\nredis.register_function('a', function() return 1 end)",
    "#!lua name=nul\x00\nredis.register_function('a', function() return 1 end)",
    "#!lua name=ln\n\nerror('where')",
    # redis.register_function's arguments.
    "#!lua name=u\nredis.register_function()",
    "#!lua name=u\nredis.register_function('a', function() end, 3)",
    "#!lua name=u\nredis.register_function(5, function() return 1 end)",
    "#!lua name=u\nredis.register_function({}, function() return 1 end)",
    "#!lua name=u\nredis.register_function('a', 'b')",
    "#!lua name=u\nredis.register_function('x')",
    "#!lua name=u\nredis.register_function{callback=function() return 1 end}",
    "#!lua name=u\nredis.register_function{function_name='f'}",
    "#!lua name=u\nredis.register_function{function_name={}, callback=function() return 1 end}",
    "#!lua name=u\nredis.register_function{function_name='f', callback='x'}",
    "#!lua name=u\nredis.register_function{function_name='f', callback=function() return 1 end, bogus=1}",
    "#!lua name=u\nredis.register_function{function_name='f', callback=function() return 1 end, flags='no-writes'}",
    "#!lua name=u\nredis.register_function{function_name='f', callback=function() return 1 end, flags={1}}",
    "#!lua name=u\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'No-Writes'}}",
    "#!lua name=u\nredis.register_function{function_name='f', callback=function() return 1 end, description={}}",
    "#!lua name=u\nredis.register_function{function_name='f', callback=function() return 1 end, [true]=1}",
    "#!lua name=u\nredis.register_function{function_name='f', callback=function() return 1 end, 'extra'}",
    "#!lua name=u\nredis.register_function{function_name='bad-name', callback=function() return 1 end}",
    # The top-level code of a library sees only `redis` (register_function, log, versions).
    "#!lua name=g\nlocal s = string\nredis.register_function('a', function() return 1 end)",
    "#!lua name=g\nx = 1\nredis.register_function('a', function() return 1 end)",
    "#!lua name=g\nredis.foo = 1\nredis.register_function('a', function() return 1 end)",
    "#!lua name=g\nlocal r = redis.setresp\nredis.register_function('a', function() return 1 end)",
    "#!lua name=g\nredis.log(redis.LOG_NOTICE, 'hi')\nredis.register_function('a', function() return 1 end)",
    "#!lua name=g\nlocal v = redis.REDIS_VERSION .. redis.REDIS_VERSION_NUM\nredis.register_function('a', function() return 1 end)",
])
def test_function_load_errors_match_redis(lib, code):
    lib("FUNCTION", "LOAD", code)


@pytest.mark.parametrize("registration", [
    "{function_name='f', callback=function() return redis.call('set','x','1') end, flags={'allow-oom','no-writes'}}",
    "{function_name='f', callback=function() return 1 end, flags={}}",
    "{function_name='f', callback=function() return 1 end, flags={no_writes=true}}",
    "{function_name='f', callback=function() return 1 end, flags={'allow-stale','no-cluster','allow-cross-slot-keys'}}",
    "{function_name='f', callback=function() return redis.call('publish','c','m') end, flags={'no-writes'}}",
    "{FUNCTION_NAME='f', Callback=function() return 1 end, DESCRIPTION='d', Flags={'no-writes'}}",
    "{function_name=7, callback=function() return 1 end, description=5}",
    "(8, function() return 1 end)",
    # At run time a function sees the globals but may not create any.
    "('f', function() y = 1 return y end)",
    "('f', function() return zz end)",
    "('f', function() return {type(string), redis.register_function == nil, tostring(rawget(_G, 'redis') ~= nil)} end)",
])
def test_function_flags_and_named_arguments_match_redis(lib, registration):
    code = "#!lua name=flagged\nredis.register_function" + registration
    lib("FUNCTION", "LOAD", code)
    lib("FUNCTION", "LIST", "LIBRARYNAME", "flagged")
    for name in ("f", "7", "8"):
        lib("FCALL", name, "0")
        lib("FCALL_RO", name, "0")
    lib("FUNCTION", "DELETE", "flagged")


def _sorted_listing(reply):
    """FUNCTION LIST with each library's functions in name order (Redis's order is unspecified)."""
    out = []
    for lib in reply:
        fields = dict(zip(lib[0::2], lib[1::2]))
        fields[b"functions"] = sorted(fields[b"functions"], key=repr)
        out.append(fields)
    return out


def test_function_list_stats_delete_and_replace(lib):
    for args in (("FUNCTION", "LIST"), ("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "my*")):
        s, r = lib.each(*args)
        assert _sorted_listing(s) == _sorted_listing(r)
    lib("FUNCTION", "LIST", "LIBRARYNAME", "nomatch*")
    lib("FUNCTION", "LIST", "LIBRARYNAME")
    lib("FUNCTION", "STATS")
    lib("FUNCTION", "LOAD", "REPLACE", "#!lua name=mylib\nredis.register_function('only', function() return 2 end)")
    lib("FCALL", "only", "0")
    lib("FCALL", "echo_arg", "0", "gone")
    lib("FUNCTION", "DELETE", "nolib")
    lib("FUNCTION", "DELETE", "mylib")
    lib("FUNCTION", "LIST")
    lib("FUNCTION", "KILL")
    lib("FUNCTION", "RESTORE", "abc", "badpolicy")
    lib("FUNCTION", "RESTORE", "not a payload")
    lib("FUNCTION", "FLUSH", "bad")


def test_dump_and_restore_between_servers_of_one_kind(strata):
    strata.function_flush()
    strata.function_load(LIB)
    payload = strata.function_dump()
    strata.function_flush()
    assert strata.function_list() == []
    assert strata.function_restore(payload) in (True, b"OK")
    assert strata.fcall("echo_arg", 0, "back") == b"back"
    with pytest.raises(Exception, match="already exists"):
        strata.function_restore(payload, "APPEND")
    assert strata.function_restore(payload, "REPLACE") in (True, b"OK")
    strata.function_flush()


def test_libraries_survive_a_restart(start_strata):
    server = start_strata()
    c = server.client()
    c.function_load(LIB)
    server.restart()
    c = server.client()
    assert c.fcall("echo_arg", 0, "after restart") == b"after restart"
    assert len(c.function_list()) == 1
    c.function_flush()
    server.restart()
    assert server.client().function_list() == []


def test_function_load_of_a_library_that_never_returns_times_out_like_redis(strata_server, redis_server):
    """The library's top level runs at most 500 ms; the server goes on serving."""
    for code in ("#!lua name=loop\nlocal a = 1\nwhile 1 do a = a + 1 end",
                 "#!lua name=loop\nredis.register_function('f', function() return 1 end)\n"
                 "local t = {}\nwhile true do t[#t % 100 + 1] = {} end"):
        replies = []
        for server in (strata_server, redis_server):
            with server.conn() as c:
                started = time.monotonic()
                replies.append(c.call_raw("FUNCTION", "LOAD", code))
                took = time.monotonic() - started
                assert 0.4 < took < 5, (server.kind, took)
                assert c.call_raw("PING") == b"+PONG\r\n"
                assert c.call_raw("FUNCTION", "LIST") == b"*0\r\n"
        assert replies[0] == replies[1]
        assert replies[0] == b"-ERR Error registering functions: ERR FUNCTION LOAD timeout\r\n"


SANDBOXED_LIBRARIES = [
    "#!lua name=lib2\na = 1",
    "#!lua name=lib2\nredis.x = 1",
    "#!lua name=lib2\nredis.register_function = 1",
    "#!lua name=lib2\nredis.math.random()",
    "#!lua name=lib2\nredis.redis.call('ping')",
    "#!lua name=lib2\nreturn math.random()",
    "#!lua name=lib2\nrawset(redis, 'x', 1)",
    "#!lua name=lib2\nredis.register_function('f1', function() return 1 end)\n"
    "redis.register_function('f1', function() return 1 end)",
]


@pytest.mark.parametrize("code", SANDBOXED_LIBRARIES)
def test_library_code_is_sandboxed_like_redis(both, code):
    both("FUNCTION", "LOAD", code)
    both("FUNCTION", "LIST")


def test_functions_are_sandboxed_like_redis(both):
    both("FUNCTION", "FLUSH")
    both("FUNCTION", "LOAD", """#!lua name=lib1
local lib = redis
lib.register_function('f1', function() lib.redis = redis return {ok='OK'} end)
lib.register_function('f2', function() lib.register_function('f3', function() return 1 end) end)
lib.register_function('f4', function() redis.call = nil end)
lib.register_function('f5', function() x = 1 end)
lib.register_function('f6', function() return {pcall(function() return y end)} end)
lib.register_function('f7', function() return redis.call('ping') end)""")
    for name in ("f1", "F1", "f2", "f3", "f4", "f5", "f6", "f7"):
        both("FCALL", name, "0")
    both("FCALL", "f7", "bad")
    both("FUNCTION", "LOAD", "bad", "code")
    both("FUNCTION", "FLUSH", "SYNC", "extra")
    both("FUNCTION", "RESTORE", "a", "b", "c")
    both("FUNCTION", "FLUSH")
