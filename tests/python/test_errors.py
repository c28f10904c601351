"""Generic error replies, byte for byte as redis sends them: arity, unknown commands, WRONGTYPE."""

import pytest

ARITY_ERRORS = [
    ["GET"], ["GET", "a", "b"], ["get"], ["Get", "a", "b"], ["SET", "k"], ["SET"], ["SETNX", "k"],
    ["SETEX", "k", "10"], ["PSETEX", "k"], ["MGET"], ["MSET"], ["MSET", "a"], ["MSET", "a", "1", "b"],
    ["MSETNX", "a", "1", "b"], ["GETSET", "k"], ["GETDEL"], ["GETEX"], ["APPEND", "k"], ["STRLEN"],
    ["INCR"], ["INCR", "a", "b"], ["DECR"], ["INCRBY", "k"], ["DECRBY", "k"], ["INCRBYFLOAT", "k"],
    ["GETRANGE", "k", "0"], ["SUBSTR", "k"], ["SETRANGE", "k", "0"], ["LCS", "a"], ["DEL"],
    ["UNLINK"], ["EXISTS"], ["TYPE"], ["TYPE", "a", "b"], ["EXPIRE", "k"], ["PEXPIRE", "k"],
    ["EXPIREAT", "k"], ["PEXPIREAT"], ["TTL"], ["PTTL", "a", "b"], ["EXPIRETIME"], ["PEXPIRETIME"],
    ["PERSIST"], ["RENAME", "a"], ["RENAMENX", "a"], ["COPY", "a"], ["MOVE", "a"], ["TOUCH"],
    ["KEYS"], ["KEYS", "a", "b"], ["SCAN"], ["RANDOMKEY", "x"], ["DBSIZE", "x"], ["SELECT"],
    ["SELECT", "1", "2"], ["SWAPDB", "0"], ["ECHO"], ["PING", "a", "b"], ["TIME", "x"],
    ["LASTSAVE", "x"], ["RESET", "x"], ["CONFIG", "GET"], ["CONFIG", "SET", "port"],
    ["CLIENT", "ID", "x"], ["CLIENT", "GETNAME", "x"], ["CLIENT", "SETNAME"], ["OBJECT", "ENCODING"],
    ["COMMAND", "COUNT", "x"], ["COMMAND", "GETKEYS"], ["DEBUG"],
]


@pytest.mark.parametrize("cmd", ARITY_ERRORS, ids=lambda c: " ".join(c) or "empty")
def test_wrong_number_of_arguments(both, cmd):
    both(*cmd)


@pytest.mark.parametrize("cmd", [
    ["FOO"],
    ["FOO", "a", "b"],
    ["foo", "a", "b", "c", "d", "e", "f"],
    ["NOSUCHCOMMAND", "with space", "x"],
    ["FOO", "a" * 200],
    ["FOO", ""],
    ["FOO", "it's"],
    ["GETT", "k"],
    ["CONFIG|GET", "port"],
])
def test_unknown_command(both, cmd):
    both(*cmd)
    both("PING")  # the connection stays usable


def test_unknown_command_keeps_case_and_truncates_long_args(both):
    both("FooBar", "x" * 300, "y")


def test_empty_command_name(both):
    both("")


@pytest.mark.parametrize("cmd", [
    ["GET", "l"], ["SET", "l", "v", "GET"], ["APPEND", "l", "x"], ["STRLEN", "l"], ["INCR", "l"],
    ["GETRANGE", "l", "0", "-1"], ["SETRANGE", "l", "0", "x"], ["GETDEL", "l"], ["GETEX", "l"],
    ["GETSET", "l", "x"], ["LCS", "l", "l"], ["INCRBYFLOAT", "l", "1"],
])
def test_wrongtype(both, cmd):
    both("RPUSH", "l", "a")
    both(*cmd)


def test_generic_commands_work_on_any_type(both):
    both("RPUSH", "l", "a", "b")
    both("TYPE", "l")
    both("EXISTS", "l")
    both("EXPIRE", "l", "100")
    both("TTL", "l")
    both("RENAME", "l", "l2")
    both("COPY", "l2", "l3")
    both("TYPE", "l3")
    both("OBJECT", "ENCODING", "l2")
    both("DEL", "l2", "l3")
    both("MGET", "l2")


def test_errors_do_not_poison_the_connection(both):
    both("INCR")
    both("FOO")
    both("SET", "k", "v", "NX", "XX")
    both("SET", "k", "v")
    both("GET", "k")
