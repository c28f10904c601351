"""MEMORY STATS, DOCTOR, MALLOC-STATS, PURGE and HELP against a real redis-server 7.0: the same
field names in the same order, the same reply types in RESP2 and RESP3 (maps, nested db.N
maps, integers and doubles), the same error texts; the figures are Strata's own (see
docs/differences.md), so values are checked for sense, not equality."""

from __future__ import annotations

import pytest

from harness import RespError, Verbatim


def _shape(reply):
    """Field names and value kinds of a MEMORY STATS reply (a dict in RESP3, a flat list in RESP2)."""
    items = list(reply.items()) if isinstance(reply, dict) else list(zip(reply[::2], reply[1::2]))
    out = []
    for k, v in items:
        if isinstance(v, (dict, list)):
            out.append((k, _shape(v)))
        else:
            out.append((k, type(v).__name__))
    return out


def _stats(server, proto: int, *setup):
    with server.conn() as c:
        c.call("FLUSHALL")
        for cmd in setup:
            c.call(*cmd)
        c.call("HELLO", str(proto))
        return c.call("MEMORY", "STATS")


@pytest.mark.parametrize("proto", [2, 3])
def test_memory_stats_has_redis_fields_order_and_types(strata_server, redis_server, proto):
    setup = [("SET", "a", "1"), ("SELECT", "2"), ("SET", "b", "1"), ("EXPIRE", "b", "100"), ("SELECT", "0")]
    ours = _stats(strata_server, proto, *setup)
    theirs = _stats(redis_server, proto, *setup)
    assert _shape(ours) == _shape(theirs)
    names = [k for k, _ in _shape(ours)]
    assert names[:3] == [b"peak.allocated", b"total.allocated", b"startup.allocated"]
    assert b"db.0" in names and b"db.2" in names and b"db.1" not in names


def test_memory_stats_figures_make_sense(strata):
    strata.flushall()
    for i in range(100):
        strata.set(f"k{i}", "v" * 100)
    stats = strata.execute_command("MEMORY", "STATS")
    s = dict(zip(stats[::2], stats[1::2]))
    assert s[b"keys.count"] == 100
    assert s[b"total.allocated"] > 0
    assert s[b"peak.allocated"] >= s[b"total.allocated"]
    assert s[b"startup.allocated"] > 0
    assert s[b"clients.normal"] > 0
    assert float(s[b"peak.percentage"]) <= 100.0


def test_memory_doctor_malloc_stats_purge_and_errors_match_redis(both):
    both("MEMORY", "PURGE")
    both("MEMORY", "MALLOC-STATS", "x")
    both("MEMORY", "PURGE", "x")
    both("MEMORY", "STATS", "x")
    both("MEMORY", "DOCTOR", "x")
    both("MEMORY", "NOPE")
    both("MEMORY", "HELP")


def test_memory_doctor_answers_in_redis_style(strata_server):
    with strata_server.conn() as c:
        report = c.call("MEMORY", "DOCTOR")
        assert isinstance(report, bytes)
        assert report.startswith((b"Hi Sam, this instance is empty", b"Hi Sam, I can't find any memory issue",
                                  b"Sam, I detected a few issues"))
        c.call("HELLO", "3")
        assert isinstance(c.call("MEMORY", "DOCTOR"), Verbatim)


def test_memory_malloc_stats_is_redis_text_for_a_non_jemalloc_build(strata):
    assert strata.execute_command("MEMORY", "MALLOC-STATS") == b"Stats not supported for the current allocator"
