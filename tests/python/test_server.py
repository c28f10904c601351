"""Server commands: COMMAND INFO CONFIG TIME LASTSAVE SAVE BGSAVE SHUTDOWN DEBUG."""

import os
import re
import time

import pytest

from harness import ConnectionClosed, RespError, Simple

# --- COMMAND ----------------------------------------------------------------------------------


def test_command_count_is_a_positive_integer_matching_command_list(strata_server):
    c = strata_server.conn()
    count = c.call("COMMAND", "COUNT")
    assert isinstance(count, int) and count > 20
    names = c.call("COMMAND", "LIST")
    assert isinstance(names, list) and len(set(names)) == len(names)
    # COMMAND LIST also names subcommands ("config|get"); COUNT counts only commands.
    assert len([n for n in names if b"|" not in n]) == count
    for name in (b"get", b"set", b"mset", b"ping", b"command", b"config", b"client", b"scan"):
        assert name in names, f"COMMAND LIST lacks {name}"
    assert all(n == n.lower() for n in names)


def test_command_list_filterby_pattern(strata_server):
    names = strata_server.conn().call("COMMAND", "LIST", "FILTERBY", "PATTERN", "get*")
    assert isinstance(names, list)
    assert {b"get", b"getdel", b"getex", b"getrange", b"getset"} <= set(names)
    assert all(n.startswith(b"get") for n in names)


def _info_fields(entry):
    """The 10-element COMMAND INFO entry, with flags and categories as sets.

    The "sentinel" flags (commands that also exist in Redis Sentinel mode) are left out: they
    say nothing about a server that has no Sentinel mode."""
    assert isinstance(entry, list) and len(entry) == 10, entry
    name, arity, flags, first, last, step, categories, tips, key_specs, subcommands = entry
    assert isinstance(tips, list) and isinstance(key_specs, list) and isinstance(subcommands, list)
    flags = {f for f in flags if not f.startswith(b"sentinel")}
    return name, arity, flags, first, last, step, set(categories)


@pytest.mark.parametrize("cmd", ["get", "set", "mset", "del", "incr", "expire", "ping", "exists",
                                 "getrange", "lcs", "copy", "rename"])
def test_command_info_matches_redis(strata_server, redis_server, cmd):
    s = strata_server.conn().call("COMMAND", "INFO", cmd)
    r = redis_server.conn().call("COMMAND", "INFO", cmd)
    assert isinstance(s, list) and len(s) == 1, s
    assert _info_fields(s[0]) == _info_fields(r[0])


def test_command_info_unknown_and_several(strata_server):
    reply = strata_server.conn().call("COMMAND", "INFO", "get", "nosuchcommand", "SET")
    assert isinstance(reply, list) and len(reply) == 3
    assert reply[0][0] == b"get" and reply[1] is None and reply[2][0] == b"set"


def test_command_info_key_specs_shape(strata_server):
    entry = strata_server.conn().call("COMMAND", "INFO", "get")[0]
    key_specs = entry[8]
    assert len(key_specs) == 1
    spec = dict(zip(key_specs[0][::2], key_specs[0][1::2]))
    assert {b"flags", b"begin_search", b"find_keys"} <= set(spec)


def test_command_docs_shape(strata_server):
    reply = strata_server.conn().call("COMMAND", "DOCS", "get", "set")
    assert isinstance(reply, list) and len(reply) == 4
    docs = dict(zip(reply[::2], reply[1::2]))
    assert set(docs) == {b"get", b"set"}
    for name, doc in docs.items():
        fields = dict(zip(doc[::2], doc[1::2]))
        assert {b"summary", b"since", b"group", b"complexity", b"arguments"} <= set(fields), fields
        assert fields[b"group"] == b"string"
        assert isinstance(fields[b"arguments"], list) and fields[b"arguments"]


def test_command_docs_in_resp3_is_a_map(strata_server):
    c = strata_server.conn()
    c.call("HELLO", "3")
    reply = c.call("COMMAND", "DOCS", "ping")
    assert isinstance(reply, dict) and b"ping" in reply
    assert isinstance(reply[b"ping"], dict) and b"summary" in reply[b"ping"]


def test_command_without_args_lists_all_commands(strata_server):
    c = strata_server.conn()
    reply = c.call("COMMAND")
    assert isinstance(reply, list) and len(reply) == c.call("COMMAND", "COUNT")
    assert all(isinstance(e, list) and len(e) == 10 for e in reply)


def test_command_getkeys(both):
    both("COMMAND", "GETKEYS", "SET", "k", "v")
    both("COMMAND", "GETKEYS", "GET", "k")
    both("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2")
    both("COMMAND", "GETKEYS", "DEL", "a", "b", "c")
    both("COMMAND", "GETKEYS", "EXPIRE", "k", "10")
    both("COMMAND", "GETKEYS", "RENAME", "a", "b")
    both("COMMAND", "GETKEYS", "PING", "x")
    both("COMMAND", "GETKEYS", "FOO", "x")
    both("COMMAND", "GETKEYS", "GET", "a", "b")
    both("COMMAND", "GETKEYS", "GET")
    both("COMMAND", "FOO")


# --- INFO -------------------------------------------------------------------------------------


def _parse_info(text: bytes) -> dict:
    out = {}
    for line in text.decode().split("\r\n"):
        if line and not line.startswith("#"):
            key, _, value = line.partition(":")
            out[key] = value
    return out


def test_info_has_the_standard_fields(strata_server):
    c = strata_server.conn()
    info = c.call("INFO")
    assert isinstance(info, bytes)
    fields = _parse_info(info)
    for name in ("redis_version", "tcp_port", "connected_clients", "used_memory", "aof_enabled",
                 "rdb_last_save_time", "total_commands_processed", "role"):
        assert name in fields, f"INFO lacks {name}"
    assert fields["tcp_port"] == str(strata_server.port)
    assert fields["role"] == "master"
    assert re.fullmatch(r"\d+\.\d+\.\d+", fields["redis_version"])
    for name in ("connected_clients", "used_memory", "rdb_last_save_time", "total_commands_processed"):
        assert fields[name].isdigit(), (name, fields[name])
    assert fields["aof_enabled"] in ("0", "1")
    for section in (b"# Server\r\n", b"# Clients\r\n", b"# Memory\r\n", b"# Persistence\r\n",
                    b"# Stats\r\n", b"# Replication\r\n", b"# Keyspace\r\n"):
        assert section in info, f"INFO lacks section {section}"


def test_info_lines_end_with_crlf(strata_server):
    info = strata_server.conn().call("INFO", "server")
    assert info.startswith(b"# Server\r\n")
    assert b"\n" not in info.replace(b"\r\n", b"")


def test_info_section_selects_only_that_section(strata_server):
    c = strata_server.conn()
    server = c.call("INFO", "server")
    assert b"redis_version:" in server and b"connected_clients:" not in server
    clients = c.call("INFO", "CLIENTS")
    assert b"connected_clients:" in clients and b"redis_version:" not in clients
    both_sections = c.call("INFO", "server", "clients")
    assert b"redis_version:" in both_sections and b"connected_clients:" in both_sections
    assert b"# Stats" not in both_sections
    assert c.call("INFO", "nosuchsection") == b""
    for everything in ("all", "everything", "default"):
        assert b"redis_version:" in c.call("INFO", everything)


def _stats_lines(info: bytes, prefix: str) -> dict:
    """`cmdstat_*` / `errorstat_*` lines of INFO, without the timings (they vary)."""
    out = {}
    for key, value in _parse_info(info).items():
        if key.startswith(prefix):
            fields = dict(f.split("=") for f in value.split(","))
            out[key] = {k: v for k, v in fields.items() if not k.startswith("usec")}
    return out


def commandstats_transcript(server):
    c = server.conn()
    c.call("CONFIG", "RESETSTAT")
    for cmd in (("SET", "k", "v"), ("GET", "k"), ("GET",), ("LPUSH", "k", "x"), ("NOSUCH",),
                ("CONFIG", "GET", "maxclients"), ("EXEC",), ("MULTI",), ("INCR", "k"), ("SET", "n"),
                ("EXEC",), ("EVAL", "return redis.call('incr', KEYS[1])", "1", "k")):
        c.call_raw(*cmd)
    info = c.call("INFO", "commandstats", "errorstats")
    default, everything = c.call("INFO"), c.call("INFO", "everything")
    stats = _parse_info(c.call("INFO", "stats"))
    return (_stats_lines(info, "cmdstat_"), _stats_lines(info, "errorstat_"),
            b"rejected_calls" in default, b"rejected_calls" in everything, stats["total_error_replies"])


def test_info_commandstats_and_errorstats_count_like_redis(start_strata, start_redis):
    got = commandstats_transcript(start_strata())
    assert got == commandstats_transcript(start_redis())
    cmdstats = got[0]
    assert cmdstats["cmdstat_get"] == {"calls": "1", "rejected_calls": "1", "failed_calls": "0"}
    assert cmdstats["cmdstat_exec"] == {"calls": "2", "rejected_calls": "0", "failed_calls": "2"}
    assert "cmdstat_config|get" in cmdstats


def test_info_keyspace_counts_keys_and_expires(strata_server):
    c = strata_server.conn()
    assert b"db0:" not in c.call("INFO", "keyspace")  # empty dbs aren't listed
    c.call("SET", "a", "1")
    c.call("SET", "b", "2", "EX", "1000")
    c.call("SELECT", "3")
    c.call("SET", "c", "3")
    keyspace = c.call("INFO", "keyspace").decode()
    assert keyspace.startswith("# Keyspace\r\n")
    assert re.search(r"^db0:keys=2,expires=1,avg_ttl=\d+\r$", keyspace, re.M), keyspace
    assert re.search(r"^db3:keys=1,expires=0,avg_ttl=0\r$", keyspace, re.M), keyspace


def test_info_connected_clients_and_commands_processed(strata_server):
    import time

    c = strata_server.conn()
    # Connections of earlier tests may still be closing: wait until the count is steady.
    deadline = time.monotonic() + 5
    before = _parse_info(c.call("INFO"))
    while time.monotonic() < deadline:
        time.sleep(0.2)
        again = _parse_info(c.call("INFO"))
        if again["connected_clients"] == before["connected_clients"]:
            break
        before = again
    before = _parse_info(c.call("INFO"))
    others = [strata_server.conn() for _ in range(3)]
    for o in others:
        o.call("PING")
    after = _parse_info(c.call("INFO"))
    assert int(after["connected_clients"]) == int(before["connected_clients"]) + 3
    # The 3 PINGs and the first INFO have been answered, so they are counted.
    assert int(after["total_commands_processed"]) >= int(before["total_commands_processed"]) + 4


def test_info_through_redis_py(strata):
    info = strata.info()
    assert info["role"] == "master"
    assert "redis_version" in info
    strata.set("k", "v")
    assert strata.info("keyspace")["db0"]["keys"] == 1


# --- CONFIG -----------------------------------------------------------------------------------


def test_config_get_port_dir_databases(strata_server):
    c = strata_server.conn()
    assert c.call("CONFIG", "GET", "port") == [b"port", str(strata_server.port).encode()]
    name, value = c.call("CONFIG", "GET", "dir")
    assert name == b"dir"
    assert os.path.realpath(value.decode()) == os.path.realpath(strata_server.dir)
    assert c.call("CONFIG", "GET", "databases") == [b"databases", b"16"]
    assert c.call("CONFIG", "GET", "bind") == [b"bind", b"127.0.0.1"]


def test_config_get_patterns_and_several_names(strata_server):
    c = strata_server.conn()
    reply = c.call("CONFIG", "GET", "append*")
    assert isinstance(reply, list) and len(reply) % 2 == 0
    got = dict(zip(reply[::2], reply[1::2]))
    assert b"appendfsync" in got and b"appendonly" in got
    assert all(k.startswith(b"append") for k in got)
    reply = c.call("CONFIG", "GET", "port", "databases")
    assert dict(zip(reply[::2], reply[1::2])) == {b"port": str(strata_server.port).encode(), b"databases": b"16"}
    assert c.call("CONFIG", "GET", "nosuchparameter") == []
    everything = c.call("CONFIG", "GET", "*")
    assert len(everything) % 2 == 0 and len(everything) > 20


def test_config_set_then_get(start_strata):
    s = start_strata()
    c = s.conn()
    assert c.call("CONFIG", "SET", "appendfsync", "always") == b"OK"
    assert c.call("CONFIG", "GET", "appendfsync") == [b"appendfsync", b"always"]
    assert c.call("CONFIG", "SET", "appendfsync", "everysec") == b"OK"
    assert c.call("CONFIG", "GET", "appendfsync") == [b"appendfsync", b"everysec"]
    assert c.call("CONFIG", "SET", "requirepass", "pw") == b"OK"
    fresh = s.conn()  # new connections now need AUTH
    assert isinstance(fresh.call("GET", "k"), RespError)
    assert fresh.call("AUTH", "pw") == b"OK"


@pytest.mark.parametrize("args", [
    ["nosuch", "1"],
    ["appendfsync", "sometimes"],
    ["databases", "4"],
    ["appendfsync"],
    ["maxmemory", "lots"],
])
def test_config_set_errors(both, args):
    both("CONFIG", "SET", *args)


def test_config_misc_errors(both):
    both("CONFIG", "GET")
    both("CONFIG", "FOO")
    both("CONFIG")
    both("CONFIG", "REWRITE")  # no config file


def test_config_resetstat_zeroes_counters(strata_server):
    c = strata_server.conn()
    for _ in range(20):
        c.call("PING")
    assert c.call("CONFIG", "RESETSTAT") == b"OK"
    stats = _parse_info(c.call("INFO", "stats"))
    assert int(stats["total_commands_processed"]) <= 2


def test_config_rewrite_updates_the_config_file(start_strata, tmp_path):
    conf = tmp_path / "strata.conf"
    conf.write_text("# test config\nappendfsync everysec\n")
    s = start_strata(config_file=str(conf))
    c = s.conn()
    assert c.call("CONFIG", "SET", "appendfsync", "always") == b"OK"
    assert c.call("CONFIG", "REWRITE") == b"OK"
    text = conf.read_text()
    assert re.search(r"^appendfsync always$", text, re.M), text
    assert "appendfsync everysec" not in text


# --- TIME LASTSAVE BGSAVE DEBUG ---------------------------------------------------------------


def test_time(strata_server):
    reply = strata_server.conn().call("TIME")
    assert isinstance(reply, list) and len(reply) == 2
    secs, micros = reply
    assert secs.isdigit() and micros.isdigit()
    assert abs(int(secs) - time.time()) < 5
    assert 0 <= int(micros) < 1_000_000


def test_lastsave(strata_server):
    t = strata_server.conn().call("LASTSAVE")
    assert isinstance(t, int) and 0 < t <= time.time() + 2


def test_bgsave_starts_a_save_that_appears_in_the_dir(start_strata):
    s = start_strata()
    c = s.conn()
    c.call("SET", "k", "v")
    time.sleep(1.1)  # so that a new LASTSAVE is distinguishable from the startup one
    t0 = int(time.time())
    before = set(os.listdir(s.dir))
    assert c.call_raw("BGSAVE") == b"+Background saving started\r\n"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if c.call("LASTSAVE") >= t0 and set(os.listdir(s.dir)) - before:
            break
        time.sleep(0.1)
    assert c.call("LASTSAVE") >= t0, "LASTSAVE did not advance after BGSAVE"
    assert set(os.listdir(s.dir)) - before, f"BGSAVE left nothing new in {s.dir}: {sorted(before)}"
    persistence = _parse_info(c.call("INFO", "persistence"))
    assert persistence.get("rdb_last_bgsave_status") == "ok"


def test_save_writes_a_checkpoint_before_answering(start_strata):
    s = start_strata()
    c = s.conn()
    c.call("SET", "k", "v")
    time.sleep(1.1)  # so that the new LASTSAVE is distinguishable from the startup one
    t0 = int(time.time())
    before = set(os.listdir(s.dir))
    assert c.call_raw("SAVE") == b"+OK\r\n"
    # Answered once written: no waiting, unlike BGSAVE.
    assert c.call("LASTSAVE") >= t0
    assert set(os.listdir(s.dir)) - before, f"SAVE left nothing new in {s.dir}: {sorted(before)}"
    # As in Redis: not inside MULTI (the transaction is doomed), and no arguments.
    assert c.call_raw("MULTI") == b"+OK\r\n"
    assert c.call_raw("SAVE") == b"-ERR Command not allowed inside a transaction\r\n"
    assert c.call_raw("EXEC").startswith(b"-EXECABORT")
    assert c.call_raw("SAVE", "x") == b"-ERR wrong number of arguments for 'save' command\r\n"


def test_debug_sleep_0(strata_server):
    assert strata_server.conn().call_raw("DEBUG", "SLEEP", "0") == b"+OK\r\n"


# --- SHUTDOWN ---------------------------------------------------------------------------------


def test_shutdown_exits_cleanly_and_data_persists(start_strata):
    s = start_strata()
    c = s.conn()
    c.call("SET", "k", "v")
    c.call("SELECT", "2")
    c.call("SET", "k2", "v2")
    c.send_command("SHUTDOWN")
    with pytest.raises(ConnectionClosed):
        c.read_reply()  # no reply: the connection just closes
    assert s.wait_exit(15) == 0, s.log_tail()
    s.start()
    c = s.conn()
    assert c.call("GET", "k") == b"v"
    c.call("SELECT", "2")
    assert c.call("GET", "k2") == b"v2"


def test_shutdown_bad_option(both):
    both("SHUTDOWN", "FOO")
    both("PING")


def test_unknown_subcommand_errors(both):
    both("OBJECT", "FOO")
    both("COMMAND", "FOO", "bar")
    both("CONFIG", "FOO", "bar")
    both("CLIENT", "FOO", "bar")


def test_simple_ok_is_a_simple_string(strata_server):
    assert strata_server.conn().call("SET", "k", "v") == Simple(b"OK")
