"""Streams (XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID, XREAD, XREADGROUP, XACK, XPENDING,
XCLAIM, XAUTOCLAIM, XGROUP, XINFO) compared with a real Redis 7.0: the same commands go to both
servers and the replies must be identical. Where Redis's reply carries the time (idle times,
delivery times, `*` IDs) or its radix tree's shape (XINFO STREAM's radix-tree-keys/nodes), the
test masks that field and compares the rest. Blocking XREAD/XREADGROUP and restarts are here too."""

import threading
import time

import pytest

from harness import RespConn, RespError


def _fill(both, key="s", n=5, fields=("f", "v")):
    for i in range(1, n + 1):
        both("XADD", key, f"{i}-0", *fields)


def _pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


def _info_masked(conn, *cmd):
    """XINFO STREAM without the radix-tree figures (they depend on Redis's memory layout)."""
    reply = conn.call("XINFO", "STREAM", *cmd)
    if isinstance(reply, RespError):
        return reply
    d = _pairs(reply)
    d.pop(b"radix-tree-keys", None)
    d.pop(b"radix-tree-nodes", None)
    return d


def _full(conn, key, *args):
    """XINFO STREAM FULL without radix-tree figures, delivery and seen times."""
    d = _info_masked(conn, key, "FULL", *args)
    groups = []
    for g in d[b"groups"]:
        gd = _pairs(g)
        gd[b"pending"] = [[p[0], p[1], p[3]] for p in gd[b"pending"]]
        consumers = []
        for c in gd[b"consumers"]:
            cd = _pairs(c)
            cd.pop(b"seen-time")
            cd[b"pending"] = [[p[0], p[2]] for p in cd[b"pending"]]
            consumers.append(cd)
        gd[b"consumers"] = consumers
        groups.append(gd)
    d[b"groups"] = groups
    return d


def _full_same(both, key, *args):
    assert _full(both.strata, key, *args) == _full(both.redis, key, *args)


def _mask_times(reply, positions):
    """Each sub-array of `reply` with the items at `positions` replaced by a marker."""
    out = []
    for row in reply:
        row = list(row)
        for p in positions:
            row[p] = "<time>"
        out.append(row)
    return out


# --- XADD / XLEN / XRANGE / XREVRANGE ---------------------------------------------------------


def test_xadd_explicit_ids_and_xrange_return_the_same_entries(both):
    both("XADD", "s", "1-1", "a", "1", "b", "2")
    both("XADD", "s", "1-2", "c", "3")
    both("XADD", "s", "5", "d", "4")
    both("XADD", "s", "5-*", "e", "5")
    both("XADD", "s", "7-*", "e", "6")
    both("XLEN", "s")
    both("XRANGE", "s", "-", "+")
    both("XREVRANGE", "s", "+", "-")
    both("TYPE", "s")
    both("OBJECT", "ENCODING", "s")


def test_xadd_rejects_ids_that_do_not_grow(both):
    both("XADD", "s", "5-5", "f", "v")
    both("XADD", "s", "5-5", "f", "v")
    both("XADD", "s", "5-4", "f", "v")
    both("XADD", "s", "4", "f", "v")
    both("XADD", "s", "0-0", "f", "v")
    both("XADD", "new", "0-0", "f", "v")
    both("EXISTS", "new")
    both("XADD", "new", "0-*", "f", "v")
    both("XADD", "s", "18446744073709551615-18446744073709551615", "f", "v")
    both("XADD", "s", "*", "f", "v")
    both("XADD", "s", "18446744073709551615-*", "f", "v")


def test_xadd_argument_errors_match(both):
    both("XADD", "s", "*", "f")
    both("XADD", "s", "*", "f", "v", "g")
    both("XADD", "s", "abc", "f", "v")
    both("XADD", "s", "1-x", "f", "v")
    both("XADD", "s", "-", "f", "v")
    both("XADD", "s", "+", "f", "v")
    both("XADD", "s", "MAXLEN", "-1", "*", "f", "v")
    both("XADD", "s", "MAXLEN", "x", "*", "f", "v")
    both("XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v")
    both("XADD", "s", "LIMIT", "5", "*", "f", "v")
    both("XADD", "s", "MAXLEN", "1", "LIMIT", "5", "*", "f", "v")
    both("XADD", "s", "MAXLEN", "=", "1", "LIMIT", "5", "*", "f", "v")
    both("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "f", "v")
    both("XADD", "s", "NOMKSTREAM")
    both("XADD", "s")
    both("EXISTS", "s")
    both("SET", "str", "x")
    both("XADD", "str", "1-1", "f", "v")
    both("XLEN", "str")
    both("XRANGE", "str", "-", "+")


def test_xadd_auto_ids_grow_and_are_returned(both):
    s, r = both.each("XADD", "s", "*", "f", "v")
    for reply in (s, r):
        ms, seq = reply.split(b"-")
        assert abs(int(ms) - time.time() * 1000) < 5000 and seq == b"0"
    both.each("XADD", "s", "*", "f", "v")
    both("XLEN", "s")


def test_xadd_nomkstream_leaves_a_missing_key_missing(both):
    both("XADD", "s", "NOMKSTREAM", "1-1", "f", "v")
    both("EXISTS", "s")
    both("XADD", "s", "1-1", "f", "v")
    both("XADD", "s", "NOMKSTREAM", "2-1", "f", "v")
    both("XLEN", "s")


def test_xadd_maxlen_and_minid_trim_exactly(both):
    _fill(both, n=10)
    both("XADD", "s", "MAXLEN", "5", "11-0", "f", "v")
    both("XRANGE", "s", "-", "+")
    both("XADD", "s", "MAXLEN", "=", "3", "12-0", "f", "v")
    both("XRANGE", "s", "-", "+")
    both("XADD", "s", "MINID", "12", "13-0", "f", "v")
    both("XRANGE", "s", "-", "+")
    both("XADD", "s", "MAXLEN", "0", "14-0", "f", "v")
    both("XLEN", "s")
    _info_same(both, "s")


def test_xadd_approximate_maxlen_trims_whole_nodes(both):
    for i in range(1, 351):
        both.each("XADD", "s", f"{i}-0", "f", "v")
    both("XADD", "s", "MAXLEN", "~", "120", "351-0", "f", "v")
    both("XLEN", "s")
    both("XADD", "s", "MAXLEN", "~", "10", "LIMIT", "100", "352-0", "f", "v")
    both("XLEN", "s")
    both("XADD", "s", "MINID", "~", "290", "353-0", "f", "v")
    both("XLEN", "s")
    both("XRANGE", "s", "-", "+", "COUNT", "2")
    _info_same(both, "s")


def test_xrange_bounds_exclusive_ranges_and_count(both):
    _fill(both, n=6)
    both("XADD", "s", "6-1", "f", "v")
    both("XRANGE", "s", "2", "4")
    both("XRANGE", "s", "(2-0", "(4-0")
    both("XRANGE", "s", "(2", "+")
    both("XRANGE", "s", "6", "6")
    both("XRANGE", "s", "-", "+", "COUNT", "3")
    both("XRANGE", "s", "-", "+", "COUNT", "0")
    both("XRANGE", "s", "-", "+", "COUNT", "-1")
    both("XRANGE", "s", "-", "+", "COUNT")
    both("XRANGE", "s", "-", "+", "LIMIT", "1")
    both("XRANGE", "s", "5", "2")
    both("XRANGE", "s", "(-", "+")
    both("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+")
    both("XRANGE", "s", "-", "(0-0")
    both("XRANGE", "s", "x", "+")
    both("XREVRANGE", "s", "+", "-", "COUNT", "2")
    both("XREVRANGE", "s", "(5", "(2")
    both("XREVRANGE", "s", "4", "2")
    both("XRANGE", "nosuch", "-", "+")
    both("XREVRANGE", "nosuch", "+", "-")
    both("XLEN", "nosuch")


# --- XDEL / XTRIM / XSETID ----------------------------------------------------------------------


def _info_same(both, key, *opts):
    assert _info_masked(both.strata, key, *opts) == _info_masked(both.redis, key, *opts)


def test_xdel_removes_entries_and_records_the_max_deleted_id(both):
    _fill(both, n=5)
    both("XDEL", "s", "2-0", "4-0", "9-0", "2-0")
    both("XRANGE", "s", "-", "+")
    both("XDEL", "s", "1-0")
    _info_same(both, "s")
    both("XDEL", "s", "x")
    both("XDEL", "nosuch", "x")
    both("XDEL", "s", "3-0", "5-0")
    both("XLEN", "s")
    both("EXISTS", "s")
    _info_same(both, "s")


def test_xtrim_by_maxlen_and_minid(both):
    _fill(both, n=10)
    both("XTRIM", "s", "MAXLEN", "7")
    both("XTRIM", "s", "MINID", "6")
    both("XTRIM", "s", "MINID", "=", "7-0")
    both("XRANGE", "s", "-", "+")
    both("XTRIM", "s", "MAXLEN", "100")
    both("XTRIM", "nosuch", "MAXLEN", "1")
    both("XTRIM", "s")
    both("XTRIM", "s", "FOO", "1")
    both("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1")
    both("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "1")
    both("XTRIM", "s", "MAXLEN", "0")
    both("EXISTS", "s")
    _info_same(both, "s")


def test_xsetid_sets_last_id_entries_added_and_max_deleted(both):
    _fill(both, n=3)
    both("XSETID", "s", "2-0")
    both("XSETID", "s", "10-0", "ENTRIESADDED", "1")
    both("XSETID", "s", "10-0", "ENTRIESADDED", "-1")
    both("XSETID", "s", "10-0", "MAXDELETEDID", "11-0")
    both("XSETID", "s", "10-0", "ENTRIESADDED", "50", "MAXDELETEDID", "9-0")
    _info_same(both, "s")
    both("XADD", "s", "10-0", "f", "v")
    both("XADD", "s", "10-*", "f", "v")
    both("XSETID", "nosuch", "1-1")
    both("XSETID", "s", "x")
    both("XSETID", "s", "20-0", "FOO")
    both("XDEL", "s", "1-0", "2-0", "3-0", "10-1")
    both("XSETID", "s", "0-1")
    _info_same(both, "s")


# --- XREAD ---------------------------------------------------------------------------------------


def test_xread_returns_entries_after_each_id(both):
    _fill(both, "a", 3)
    _fill(both, "b", 2)
    both("XREAD", "STREAMS", "a", "b", "0", "1")
    both("XREAD", "COUNT", "1", "STREAMS", "a", "b", "0-0", "0")
    both("XREAD", "STREAMS", "a", "b", "3", "2")
    both("XREAD", "STREAMS", "a", "nosuch", "$", "0")
    both("XREAD", "STREAMS", "a")
    both("XREAD", "STREAMS", "a", "b", "0")
    both("XREAD", "COUNT", "x", "STREAMS", "a", "0")
    both("XREAD", "STREAMS", "a", ">")
    both("XREAD", "GROUP", "g", "c", "STREAMS", "a", "0")
    both("XREAD", "NOACK", "STREAMS", "a", "0")
    both("XREAD", "BLOCK", "-1", "STREAMS", "a", "0")
    both("XREAD", "BLOCK", "x", "STREAMS", "a", "0")
    both("XREAD", "FOO", "STREAMS", "a", "0")
    both("XREAD", "COUNT", "1")
    both("SET", "str", "x")
    both("XREAD", "STREAMS", "str", "0")
    both("XREAD", "STREAMS", "a", "x")


def test_xread_in_resp3_is_a_map(strata_server, redis_server):
    replies = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("HELLO", "3")
        c.call("XADD", "s", "1-1", "f", "v")
        replies.append((c.call("XREAD", "STREAMS", "s", "0"), c.call("XREAD", "STREAMS", "s", "9")))
    assert replies[0] == replies[1]


def test_xread_block_in_multi_answers_at_once(both):
    both("MULTI")
    both("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    both("EXEC")


def _blocked(server, *cmd):
    """Starts `cmd` on a new connection in a thread; returns (thread, result list)."""
    conn = server.conn()
    out = []

    def run():
        out.append(conn.call(*cmd))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def _wait_blocked(server, n):
    c = server.conn()
    for _ in range(500):
        info = c.call("INFO", "clients").decode()
        if f"blocked_clients:{n}" in info:
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {n} blocked clients:\n{info}")


def test_xread_block_with_dollar_wakes_on_the_next_xadd_only(strata_server, redis_server):
    results = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("XADD", "s", "1-0", "f", "old")
        t, out = _blocked(server, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        _wait_blocked(server, 1)
        c.call("XADD", "s", "2-0", "f", "new")
        t.join(5)
        results.append(out)
    assert results[0] == results[1] == [[[b"s", [[b"2-0", [b"f", b"new"]]]]]]


def test_xread_block_times_out_with_a_null(strata_server, redis_server):
    for server in (strata_server, redis_server):
        c = server.conn()
        start = time.time()
        assert c.call_raw("XREAD", "BLOCK", "100", "STREAMS", "s", "$") == b"*-1\r\n"
        assert time.time() - start >= 0.09


def test_many_blocked_readers_wake_on_xadds_from_clients_transactions_and_scripts(strata_server):
    streams = [f"s{i}" for i in range(8)]
    readers = []
    for i in range(200):
        key = streams[i % len(streams)]
        readers.append((key,) + _blocked(strata_server, "XREAD", "BLOCK", "20000", "STREAMS", key, "$"))
    _wait_blocked(strata_server, 200)
    c = strata_server.conn()
    c.call("XADD", "s0", "1-1", "by", "client")
    c.call("XADD", "s1", "1-1", "by", "client")
    c.call("MULTI")
    c.call("XADD", "s2", "1-1", "by", "multi")
    c.call("XADD", "s3", "1-1", "by", "multi")
    assert c.call("EXEC") == [b"1-1", b"1-1"]
    c.call("EVAL", "redis.call('XADD', KEYS[1], '*', 'by', 'script') return 1", 1, "s4")
    c.call("EVAL", "return redis.call('XADD', KEYS[1], '1-1', 'by', 'script')", 1, "s5")
    c.call("XADD", "s6", "1-1", "by", "client")
    c.call("XADD", "s7", "1-1", "by", "client")
    for key, t, out in readers:
        t.join(10)
        assert out, f"reader of {key} was not woken"
        [[got_key, entries]] = out[0]
        assert got_key == key.encode() and len(entries) == 1


def test_xread_block_is_refused_in_scripts(both):
    both("EVAL", "return redis.call('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$')", 0)
    both("EVAL", "return redis.call('xread', 'STREAMS', 's', '0')", 0)


# --- consumer groups ----------------------------------------------------------------------------


def test_xgroup_create_setid_destroy_and_consumers(both):
    both("XGROUP", "CREATE", "s", "g", "$")
    both("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    both("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    both("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "3")
    both("XGROUP", "CREATE", "s", "g3", "0", "ENTRIESREAD", "-2")
    both("XGROUP", "CREATE", "s", "g3", "x")
    both("XGROUP", "CREATE", "s", "g3", "0", "FOO")
    both("XGROUP", "SETID", "s", "g", "0")
    both("XGROUP", "SETID", "s", "nog", "0")
    both("XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "5")
    both("XGROUP", "SETID", "s", "g", "-")
    both("XGROUP", "CREATECONSUMER", "s", "g", "alice")
    both("XGROUP", "CREATECONSUMER", "s", "g", "alice")
    both("XGROUP", "CREATECONSUMER", "s", "nog", "alice")
    both("XGROUP", "DELCONSUMER", "s", "g", "alice")
    both("XGROUP", "DELCONSUMER", "s", "g", "alice")
    both("XGROUP", "DESTROY", "s", "g2")
    both("XGROUP", "DESTROY", "s", "g2")
    both("XGROUP", "DESTROY", "nosuch", "g2")
    both("XGROUP", "CREATE", "nosuch", "g", "$")
    both("XGROUP", "FOO", "s", "g")
    both("XGROUP", "HELP")
    both("XINFO", "HELP")
    both("XINFO", "GROUPS", "s")
    both("SET", "str", "x")
    both("XGROUP", "CREATE", "str", "g", "$", "MKSTREAM")


def test_xreadgroup_delivers_new_entries_and_history(both):
    _fill(both, n=5)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", "1-0")
    both("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", "0")
    both("XPENDING", "s", "g")
    both("XACK", "s", "g", "1-0", "3-0", "1-0", "99-0")
    both("XACK", "s", "g", "x")
    both("XACK", "s", "nog", "1-0")
    both("XPENDING", "s", "g")
    both("XDEL", "s", "2-0")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    _groups_same(both, "s")
    _consumers_same(both, "s", "g")


def test_xreadgroup_noack_and_errors(both):
    _fill(both, n=3)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")
    both("XPENDING", "s", "g")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$")
    both("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "nosuch", ">")
    both("XREADGROUP", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "x")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "s", ">")
    _groups_same(both, "s")


def _groups_same(both, key):
    assert both.strata.call("XINFO", "GROUPS", key) == both.redis.call("XINFO", "GROUPS", key)


def _consumers_same(both, key, group):
    """XINFO CONSUMERS without the idle times."""
    def masked(conn):
        reply = conn.call("XINFO", "CONSUMERS", key, group)
        if isinstance(reply, RespError):
            return reply
        return [{k: v for k, v in _pairs(c).items() if k != b"idle"} for c in reply]
    assert masked(both.strata) == masked(both.redis)


def test_lag_and_entries_read_follow_redis_7(both):
    _fill(both, n=5)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XGROUP", "CREATE", "s", "h", "$")
    both("XGROUP", "CREATE", "s", "i", "3-0")
    _groups_same(both, "s")
    both("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    _groups_same(both, "s")
    both("XDEL", "s", "4-0")
    _groups_same(both, "s")
    both("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    _groups_same(both, "s")
    both("XADD", "s", "6-0", "f", "v")
    both("XTRIM", "s", "MAXLEN", "2")
    _groups_same(both, "s")
    both("XGROUP", "SETID", "s", "h", "0", "ENTRIESREAD", "0")
    _groups_same(both, "s")
    _full_same(both, "s")


def test_xpending_extended_form(both):
    _fill(both, n=6)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")

    def ext(*args):
        s, r = both.each("XPENDING", "s", "g", *args)
        if isinstance(r, list) and isinstance(s, list):
            s, r = _mask_times(s, [2]), _mask_times(r, [2])
        assert s == r, (args, s, r)

    ext("-", "+", "10")
    ext("-", "+", "2")
    ext("(2", "+", "10", "bob")
    ext("-", "+", "10", "alice")
    ext("-", "+", "10", "nobody")
    ext("IDLE", "0", "-", "+", "10")
    ext("IDLE", "100000", "-", "+", "10")
    ext("-", "+", "-5")
    ext("-", "+")
    ext("IDLE", "10", "-", "+")
    ext("x", "+", "10")
    ext("-", "+", "x")
    ext("-", "+", "10", "alice", "extra")
    both("XPENDING", "s", "nog")
    both("XPENDING", "nosuch", "g")
    both("XPENDING", "s", "g", "-")


def test_xclaim_moves_pending_entries(both):
    _fill(both, n=5)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    both("XCLAIM", "s", "g", "bob", "0", "1-0", "2-0")
    both("XCLAIM", "s", "g", "bob", "0", "3-0", "JUSTID")
    both("XCLAIM", "s", "g", "bob", "3600000", "4-0")
    both("XCLAIM", "s", "g", "bob", "0", "4-0", "RETRYCOUNT", "7", "IDLE", "5000")
    both("XDEL", "s", "5-0")
    both("XCLAIM", "s", "g", "bob", "0", "5-0")
    both("XPENDING", "s", "g")
    both("XCLAIM", "s", "g", "carol", "0", "9-0", "FORCE")
    both("XADD", "s", "9-0", "f", "v")
    both("XCLAIM", "s", "g", "carol", "0", "9-0", "FORCE", "JUSTID")
    both("XCLAIM", "s", "g", "carol", "0", "1-0", "LASTID", "50-0", "TIME", "0")
    both("XCLAIM", "s", "g", "carol", "x", "1-0")
    both("XCLAIM", "s", "g", "carol", "0", "1-0", "IDLE", "x")
    both("XCLAIM", "s", "g", "carol", "0", "1-0", "FOO")
    both("XCLAIM", "s", "nog", "carol", "0", "1-0")
    both("XPENDING", "s", "g")
    _groups_same(both, "s")
    _consumers_same(both, "s", "g")
    s, r = both.each("XPENDING", "s", "g", "-", "+", "100")
    assert _mask_times(s, [2]) == _mask_times(r, [2])


def test_xautoclaim_claims_idle_entries_and_reports_deleted_ones(both):
    _fill(both, n=6)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    both("XDEL", "s", "2-0", "4-0")
    both("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "2")
    both("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "2", "JUSTID")
    both("XAUTOCLAIM", "s", "g", "bob", "0", "(3")
    both("XAUTOCLAIM", "s", "g", "bob", "3600000", "0")
    both("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "0")
    both("XAUTOCLAIM", "s", "g", "bob", "x", "0")
    both("XAUTOCLAIM", "s", "g", "bob", "0", "x")
    both("XAUTOCLAIM", "s", "g", "bob", "0", "0", "FOO")
    both("XAUTOCLAIM", "s", "nog", "bob", "0", "0")
    both("XPENDING", "s", "g")
    _consumers_same(both, "s", "g")


def test_xinfo_stream_and_full(both):
    both("XINFO", "STREAM", "nosuch")
    _fill(both, n=3)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    _info_same(both, "s")
    both("XINFO", "STREAM", "s", "FOO")
    both("XINFO", "STREAM", "s", "FULL", "COUNT")
    both("XINFO", "STREAM", "s", "FULL", "COUNT", "x")

    _full_same(both, "s")
    _full_same(both, "s", "COUNT", "1")
    both("XINFO", "CONSUMERS", "s", "nog")
    both("XINFO", "CONSUMERS", "nosuch", "g")
    both("XINFO", "GROUPS", "nosuch")
    both("XINFO", "FOO", "s")


def test_blocked_xreadgroup_is_served_new_entries_and_hears_of_a_destroyed_group(strata_server,
                                                                                 redis_server):
    results = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        t1, out1 = _blocked(server, "XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s", ">")
        _wait_blocked(server, 1)
        c.call("XADD", "s", "1-0", "f", "v")
        t1.join(5)
        t2, out2 = _blocked(server, "XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s", ">")
        _wait_blocked(server, 1)
        c.call("XGROUP", "DESTROY", "s", "g")
        t2.join(5)
        results.append((out1, out2, c.call("XPENDING", "s", "g")))
    assert results[0] == results[1]


def _stat_line(conn, section, prefix):
    lines = conn.call("INFO", section).decode().splitlines()
    return next((x for x in lines if x.startswith(prefix)), "")


def test_a_blocked_xreadgroup_ended_by_xgroup_destroy_counts_as_one_failed_call(strata_server, redis_server):
    # Redis counts a blocked command when its wait ends (updateStatsOnUnblock), not when it
    # blocks: once, failed, for the -NOGROUP a destroyed group answers. Redis's own suite
    # checks this right after the reply ("XGROUP DESTROY should unblock XREADGROUP with -NOGROUP").
    seen = []
    for server in (strata_server, redis_server):
        c = server.conn()
        for _ in range(60):
            c.call("CONFIG", "RESETSTAT")
            c.call("DEL", "s")
            c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
            reader = server.conn()
            reader.send_command("XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s", ">")
            _wait_blocked(server, 1)
            c.call("XGROUP", "DESTROY", "s", "g")
            reply = reader.read_reply()
            assert isinstance(reply, RespError) and reply.message.startswith(b"NOGROUP"), reply
            reader.close()
            got = (_stat_line(c, "errorstats", "errorstat_NOGROUP"),
                   _stat_line(c, "commandstats", "cmdstat_xreadgroup").split("usec")[0],
                   _stat_line(c, "commandstats", "cmdstat_xreadgroup").split(",")[-2:],
                   _stat_line(c, "stats", "total_error_replies"))
            assert got == ("errorstat_NOGROUP:count=1", "cmdstat_xreadgroup:calls=1,",
                           ["rejected_calls=0", "failed_calls=1"], "total_error_replies:1"), got
        seen.append(got)
    assert seen[0] == seen[1]


def test_xgroup_destroy_racing_a_blocking_xreadgroup_always_ends_it_with_nogroup(strata_server):
    # The destroy is sent on another connection at once, so it lands before the read, while it
    # registers, or after it blocked: whichever, the read answers -NOGROUP (at once, or when
    # woken) and never stays blocked.
    c = strata_server.conn()
    reader = strata_server.conn(timeout=5)
    for i in range(300):
        c.call("DEL", "s")
        c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        reader.send_command("XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s", ">")
        if i % 3:
            time.sleep(0.0005 * (i % 5))
        assert c.call("XGROUP", "DESTROY", "s", "g") == 1
        reply = reader.read_reply()
        assert isinstance(reply, RespError) and reply.message.startswith(b"NOGROUP"), (i, reply)
    assert "blocked_clients:0" in c.call("INFO", "clients").decode()


def _events(server, script):
    """The keyspace/keyevent messages `script` raises with notify-keyspace-events KEA."""
    admin = server.conn()
    admin.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    try:
        sub = RespConn(server.port)
        sub.call("PSUBSCRIBE", "__key*@*__:*")
        sub.call("SUBSCRIBE", "done")
        for cmd in script:
            admin.call(*cmd)
        admin.call("PUBLISH", "done", "x")
        got = []
        while True:
            msg = sub.read_reply()
            if msg[0] == b"message" and msg[1] == b"done":
                break
            got.append((msg[2], msg[3]))
        sub.close()
        return got
    finally:
        admin.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_keyspace_events_of_stream_commands(strata_server, redis_server):
    script = [
        ("XADD", "s", "1-0", "f", "v"), ("XADD", "s", "MAXLEN", "1", "2-0", "f", "v"),
        ("XDEL", "s", "2-0"), ("XDEL", "s", "2-0"), ("XADD", "s", "3-0", "f", "v"),
        ("XTRIM", "s", "MAXLEN", "0"), ("XTRIM", "s", "MAXLEN", "0"), ("XSETID", "s", "9-0"),
        ("XGROUP", "CREATE", "s", "g", "$"), ("XGROUP", "SETID", "s", "g", "0"),
        ("XGROUP", "CREATECONSUMER", "s", "g", "c"), ("XGROUP", "CREATECONSUMER", "s", "g", "c"),
        ("XGROUP", "DELCONSUMER", "s", "g", "c"), ("XGROUP", "DESTROY", "s", "g"),
        ("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"),
        ("XADD", "m", "NOMKSTREAM", "1-0", "f", "v"), ("DEL", "s"),
    ]
    assert _events(strata_server, script) == _events(redis_server, script)


def test_consumers_created_by_reads_and_claims_raise_createconsumer(strata_server, redis_server):
    script = [
        ("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"),
        # Nothing new to read: no consumer is created, no event.
        ("XREADGROUP", "GROUP", "g", "idle", "STREAMS", "q", ">"),
        ("XADD", "q", "1-0", "f", "v"),
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "q", ">"),
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "q", "0"),
        ("XREADGROUP", "GROUP", "g", "history", "STREAMS", "q", "0"),
        ("XCLAIM", "q", "g", "mike", "0", "1-0", "FORCE"),
        ("XCLAIM", "q", "g", "mike", "0", "1-0"),
        ("XAUTOCLAIM", "q", "g", "bob", "0", "0"),
        ("XAUTOCLAIM", "q", "g", "bob", "0", "0"),
        ("XGROUP", "DELCONSUMER", "q", "g", "lee"),
        ("XGROUP", "DELCONSUMER", "q", "g", "bob"),
    ]
    assert _events(strata_server, script) == _events(redis_server, script)


# --- generic commands on streams -------------------------------------------------------------


def test_generic_commands_handle_streams(both):
    _fill(both, n=3)
    both("XGROUP", "CREATE", "s", "g", "0")
    both("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    both("TYPE", "s")
    both("OBJECT", "ENCODING", "s")
    both("SCAN", "0", "TYPE", "stream")
    both("COPY", "s", "t")
    both("XRANGE", "t", "-", "+")
    _groups_same(both, "t")
    both("RENAME", "t", "u")
    both("XPENDING", "u", "g")
    both("EXPIRE", "u", "100")
    both("TTL", "u")
    both("DEL", "s")
    both("XLEN", "s")
    both("XADD", "s", "1-0", "f", "v")
    both("XINFO", "GROUPS", "s")


def test_streams_survive_a_restart(start_strata):
    server = start_strata()
    c = server.conn()
    for i in range(1, 101):
        c.call("XADD", "s", f"{i}-1", "n", str(i))
    c.call("XGROUP", "CREATE", "s", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "10", "STREAMS", "s", ">")
    c.call("XACK", "s", "g", "1-1", "2-1")
    c.call("XDEL", "s", "50-1")
    before = (c.call("XRANGE", "s", "-", "+"), c.call("XINFO", "GROUPS", "s"),
              c.call("XPENDING", "s", "g"), _info_masked(c, "s"))
    server.restart()
    c = server.conn()
    after = (c.call("XRANGE", "s", "-", "+"), c.call("XINFO", "GROUPS", "s"),
             c.call("XPENDING", "s", "g"), _info_masked(c, "s"))
    assert before == after
    assert c.call("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">") == [
        [b"s", [[b"11-1", [b"n", b"11"]]]]]


def test_blocked_xread_is_not_served_an_empty_reply_after_xdel(strata_server, redis_server):
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("XADD", "s", "666", "f", "v")
        c.call("XADD", "s", "667", "f", "v")
        c.call("XDEL", "s", "667")
        assert c.call_raw("XREAD", "BLOCK", "50", "STREAMS", "s", "666") == b"*-1\r\n"


def test_blocked_xread_waits_through_a_key_of_another_type(strata_server, redis_server):
    results = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("XADD", "s", "1-0", "f", "v")
        t, out = _blocked(server, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        _wait_blocked(server, 1)
        c.call("SET", "s", "x")
        c.call("DEL", "s")
        c.call("XADD", "s", "2-0", "f", "new")
        t.join(5)
        results.append(out)
    assert results[0] == results[1] == [[[b"s", [[b"2-0", [b"f", b"new"]]]]]]


def test_approximate_trims_follow_stream_node_max_entries(both):
    both("CONFIG", "SET", "stream-node-max-entries", "10")
    try:
        for i in range(1, 101):
            both.each("XADD", "s", f"{i}-0", "f", "v")
        both("XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "101-0", "f", "v")
        both("XLEN", "s")
        both("XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "102-0", "f", "v")
        both("XLEN", "s")
        both("XTRIM", "s", "MINID", "~", "80")
        both("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "5")
        both("XRANGE", "s", "-", "+", "COUNT", "1")
    finally:
        both.each("CONFIG", "SET", "stream-node-max-entries", "100")


def test_watch_sees_entry_changes_but_not_group_changes(both):
    """Redis signals a stream as modified for XADD, XDEL, XTRIM and XGROUP CREATE MKSTREAM
    only: group reads, acknowledgements and claims leave a WATCH intact."""
    _fill(both, n=3)
    both("XGROUP", "CREATE", "s", "g", "0")
    for cmd in [("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), ("XACK", "s", "g", "1-0"),
                ("XCLAIM", "s", "g", "d", "0", "2-0"), ("XAUTOCLAIM", "s", "g", "e", "0", "0"),
                ("XGROUP", "CREATECONSUMER", "s", "g", "f"), ("XGROUP", "SETID", "s", "g", "0"),
                ("XSETID", "s", "10-0"), ("XGROUP", "DELCONSUMER", "s", "g", "f"),
                ("XGROUP", "CREATE", "s", "h", "0"), ("XGROUP", "DESTROY", "s", "h"),
                ("XADD", "s", "20-0", "f", "v"), ("XDEL", "s", "99-0"), ("XDEL", "s", "20-0")]:
        both("WATCH", "s")
        both(*cmd)
        both("MULTI")
        both("PING")
        both("EXEC")
