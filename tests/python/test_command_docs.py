"""COMMAND DOCS arguments and COMMAND INFO / GETKEYS for commands whose keys follow a count,
compared with a real Redis 7."""

import pytest

from harness import RespError


def _pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


def _shape(arg):
    """The parts of one COMMAND DOCS argument that Strata reproduces: name, type, token, flags,
    key_spec_index and the nested arguments (not `since`, which Strata does not track)."""
    a = _pairs(arg)
    return (
        a[b"name"],
        a[b"type"],
        a.get(b"token"),
        a.get(b"key_spec_index"),
        frozenset(a.get(b"flags", [])),
        tuple(_shape(x) for x in a.get(b"arguments", [])),
    )


def _arguments(server, cmd):
    reply = server.conn().call("COMMAND", "DOCS", cmd)
    docs = _pairs(reply)
    assert list(docs) == [cmd.encode()], reply
    return [_shape(a) for a in _pairs(docs[cmd.encode()]).get(b"arguments", [])]


@pytest.mark.parametrize("cmd", ["get", "set", "mset", "expire", "zadd", "hset", "lpos", "zrange",
                                 "zunionstore", "lmpop", "linsert", "lmove", "getex", "scan",
                                 "hello", "copy", "zrandmember", "flushall",
                                 "pfadd", "pfcount", "pfmerge", "pfdebug"])
def test_command_docs_arguments_match_redis(strata_server, redis_server, cmd):
    assert _arguments(strata_server, cmd) == _arguments(redis_server, cmd)


def test_command_docs_without_arguments_has_no_arguments_field(strata_server, redis_server):
    for server in (strata_server, redis_server):
        doc = _pairs(_pairs(server.conn().call("COMMAND", "DOCS", "dbsize"))[b"dbsize"])
        assert b"arguments" not in doc


def test_command_docs_arguments_in_resp3(strata_server):
    c = strata_server.conn()
    c.call("HELLO", "3")
    args = c.call("COMMAND", "DOCS", "set")[b"set"][b"arguments"]
    assert args[0] == {b"name": b"key", b"type": b"key", b"key_spec_index": 0}
    assert args[2][b"name"] == b"condition" and args[2][b"type"] == b"oneof"
    assert [bytes(f) for f in args[2][b"flags"]] == [b"optional"]


def _key_specs(server, cmd):
    entry = server.conn().call("COMMAND", "INFO", cmd)[0]
    specs = []
    for spec in entry[8]:
        s = _pairs(spec)
        begin, find = _pairs(s[b"begin_search"]), _pairs(s[b"find_keys"])
        specs.append((begin[b"type"], _pairs(begin[b"spec"]), find[b"type"], _pairs(find[b"spec"])))
    flags = set(entry[2]) - {b"sentinel"}
    return entry[1], flags, entry[3:6], specs


@pytest.mark.parametrize("cmd", ["zunionstore", "zinterstore", "zdiffstore", "zunion", "zinter",
                                 "zdiff", "zintercard", "zmpop", "lmpop", "sintercard"])
def test_counted_keys_command_info_matches_redis(strata_server, redis_server, cmd):
    assert _key_specs(strata_server, cmd) == _key_specs(redis_server, cmd)


@pytest.mark.parametrize("argv", [
    ["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
    ["ZINTERSTORE", "d", "1", "a"],
    ["ZDIFFSTORE", "d", "1", "a"],
    ["ZUNION", "2", "a", "b", "WITHSCORES"],
    ["ZUNION", "3", "a", "b"],
    ["ZUNION", "0", "a", "b"],
    ["ZUNION", "-1", "a", "b"],
    ["ZUNION", "x", "a", "b"],
    ["ZUNION", "1.0", "a"],
    ["ZINTER", "1", "a"],
    ["ZDIFF", "2", "a", "b"],
    ["ZINTERCARD", "1", "a", "LIMIT", "5"],
    ["ZMPOP", "2", "a", "b", "MIN", "COUNT", "3"],
    ["LMPOP", "2", "a", "b", "LEFT"],
    ["LMPOP", "5", "a", "b", "LEFT"],
    ["SINTERCARD", "2", "a", "b"],
    ["ZUNIONSTORE", "d", "0"],
])
def test_counted_keys_getkeys(both, argv):
    both("COMMAND", "GETKEYS", *argv)
