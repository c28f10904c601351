"""FUNCTION libraries and FCALL / FCALL_RO, compared byte for byte with a real redis-server, and
libraries surviving a restart of Strata."""

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
])
def test_function_load_errors_match_redis(lib, code):
    lib("FUNCTION", "LOAD", code)


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
