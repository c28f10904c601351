"""Every row of Strata's command table against a real Redis 7.0: COMMAND INFO (arity, flags,
first/last/step, ACL categories, key specifications) of each command and subcommand, COMMAND
GETKEYS for a call of each command, and COMMAND LIST FILTERBY ACLCAT."""

import pytest

from harness import RespConn, Server


def _names(server: Server) -> list[str]:
    """Every command and subcommand name the server lists (`container|sub` for subcommands)."""
    names = []
    for entry in server.conn().call("COMMAND"):
        names.append(entry[0].decode())
        names.extend(sub[0].decode() for sub in entry[9])
    return sorted(names)


@pytest.fixture(scope="module")
def strata_names(_shared_strata) -> list[str]:
    return _names(_shared_strata.get())


def _entry(conn: RespConn, name: str):
    """One COMMAND INFO entry without its list of subcommands (Strata has fewer of those;
    each is compared on its own)."""
    (entry,) = conn.call("COMMAND", "INFO", name)
    assert entry is not None, f"no COMMAND INFO for {name}"
    return {
        "arity": entry[1],
        "flags": list(entry[2]),
        "first/last/step": entry[3:6],
        "acl": list(entry[6]),
        "tips": list(entry[7]),
        "key specs": entry[8],
    }


def test_every_strata_command_is_a_redis_command(strata_names, redis_server):
    redis_names = set(_names(redis_server))
    assert [n for n in strata_names if n not in redis_names] == []


def test_command_info_of_every_row_matches_redis(strata_names, strata_server, redis_server):
    s, r = strata_server.conn(), redis_server.conn()
    wrong = {}
    for name in strata_names:
        mine, theirs = _entry(s, name), _entry(r, name)
        diff = {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]}
        if diff:
            wrong[name] = diff
    assert wrong == {}


def test_command_info_of_a_subcommand_matches_redis(both):
    both("COMMAND", "INFO", "config|get", "client|kill", "object|encoding", "nosuch|sub")


def test_hidden_flags_are_not_shown(strata_server):
    c = strata_server.conn()
    for name, shown in [("ping", [b"fast"]), ("auth", [b"noscript", b"loading", b"stale", b"fast",
                                                       b"no_auth", b"allow_busy"])]:
        (entry,) = c.call("COMMAND", "INFO", name)
        assert list(entry[2]) == shown


def _sample_call(entry) -> list[str] | None:
    """A call with the smallest argument count the arity allows, every argument a distinct
    word; None for commands whose keys depend on argument values (movablekeys)."""
    name, arity, flags = entry[0].decode(), entry[1], entry[2]
    if b"movablekeys" in flags:
        return None
    argc = arity if arity > 0 else -arity
    return [name] + [f"a{i}" for i in range(1, max(argc, 1))]


@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
def test_getkeys_of_every_fixed_key_command_matches_redis(strata_server, both, sub):
    calls = 0
    for entry in strata_server.conn().call("COMMAND"):
        argv = _sample_call(entry)
        if argv is None:
            continue
        both("COMMAND", sub, *argv)
        # One more argument, for commands whose keys run to the end (MGET, DEL, MSET...).
        if entry[1] < 0:
            both("COMMAND", sub, *argv, "extra")
        calls += 1
    assert calls > 150


@pytest.mark.parametrize("argv", [
    ["SORT", "k", "BY", "w_*", "STORE", "dst"],
    ["SORT", "k", "LIMIT", "0", "1", "STORE", "dst", "ALPHA"],
    ["SORT", "k"],
    ["SORT_RO", "k", "BY", "nosort"],
    ["EVAL", "return 1", "2", "a", "b", "c"],
    ["EVAL", "return 1", "0", "x"],
    ["EVALSHA", "abc", "1", "a"],
    ["EVAL_RO", "return 1", "1", "a"],
    ["FCALL", "f", "2", "a", "b"],
    ["FCALL_RO", "f", "1", "a"],
    ["BLMPOP", "0", "2", "a", "b", "LEFT"],
    ["BZMPOP", "0", "1", "a", "MIN"],
    ["MOVE", "k", "3"],
    ["COPY", "a", "b", "DB", "2"],
    ["ZUNIONSTORE", "d", "2", "a", "b"],
    ["EVAL", "return 1", "3", "a"],
    ["SET", "k", "v", "GET"],
    ["SET", "k", "v", "EX", "10"],
    ["LMOVE", "a", "b", "LEFT", "RIGHT"],
    ["RENAME", "a", "b"],
    ["DEL", "a", "b"],
    ["ZRANGESTORE", "d", "s", "0", "1"],
    ["OBJECT", "ENCODING", "k"],
])
@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
def test_getkeys_of_movable_key_commands_matches_redis(both, argv, sub):
    both("COMMAND", sub, *argv)


@pytest.mark.parametrize("container", ["COMMAND", "CONFIG", "OBJECT", "SCRIPT",
                                       "FUNCTION"])
def test_help_replies_match_redis(both, container):
    both(container, "HELP")


@pytest.mark.parametrize("category", ["string", "keyspace", "read", "write", "fast", "slow",
                                      "dangerous", "admin", "connection", "scripting", "pubsub",
                                      "blocking", "transaction", "list", "hash", "set",
                                      "sortedset", "nosuch"])
def test_command_list_filterby_aclcat_lists_the_rows_redis_would(strata_names, strata_server,
                                                                 redis_server, category):
    mine = set(strata_server.conn().call("COMMAND", "LIST", "FILTERBY", "ACLCAT", category))
    theirs = set(redis_server.conn().call("COMMAND", "LIST", "FILTERBY", "ACLCAT", category))
    assert mine == {n.encode() for n in strata_names} & theirs


def test_command_list_names_subcommands_too(strata_names, strata_server):
    assert sorted(n.decode() for n in strata_server.conn().call("COMMAND", "LIST")) == strata_names
