"""Durability: data and expiry survive restarts, kill -9 with appendfsync always loses nothing,
and expired keys are removed without being touched (active expiry)."""

import time

import pytest


def _fill(c, n=100):
    """n strings in db 0, some binary, one in db 7; returns {key: value} of db 0."""
    data = {f"key:{i}".encode(): f"value:{i}".encode() * (i % 7 + 1) for i in range(n)}
    data[b"bin\x00\r\n"] = bytes(range(256))
    data[b"int"] = b"12345"
    c.mset(data)
    c.execute_command("SELECT", "7")
    c.set("in-db-7", "seven")
    c.execute_command("SELECT", "0")
    return data


def _check(c, data):
    keys = list(data)
    assert c.mget(keys) == [data[k] for k in keys]
    assert c.dbsize() == len(data)
    c.execute_command("SELECT", "7")
    assert c.get("in-db-7") == b"seven"
    c.execute_command("SELECT", "0")


def test_data_survives_graceful_restart(start_strata):
    s = start_strata()
    data = _fill(s.client(single_connection_client=True))
    s.restart()
    _check(s.client(single_connection_client=True), data)


def test_data_survives_two_restarts_and_later_writes(start_strata):
    s = start_strata()
    c = s.client()
    data = _fill(c)
    s.restart()
    c = s.client()
    c.set("after", "restart")
    c.delete("key:1")
    data.pop(b"key:1")
    data[b"after"] = b"restart"
    s.restart()
    _check(s.client(single_connection_client=True), data)


def test_expiry_survives_restart(start_strata):
    s = start_strata()
    c = s.client()
    c.set("long", "v", ex=1000)
    c.set("short", "v", px=1500)
    c.set("forever", "v")
    at = int(time.time()) + 5000
    c.set("abs", "v")
    c.expireat("abs", at)
    s.restart()
    c = s.client()
    assert 990 <= c.ttl("long") <= 1000
    assert c.ttl("forever") == -1
    assert c.expiretime("abs") == at
    deadline = time.monotonic() + 5
    while c.exists("short") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert c.get("short") is None, "a key whose TTL ran out across the restart is still there"


def test_key_that_expired_while_down_is_gone_after_restart(start_strata):
    s = start_strata()
    c = s.client()
    c.set("soon", "v", px=300)
    c.set("stays", "v")
    s.stop()
    time.sleep(0.5)
    s.start()
    c = s.client()
    assert c.get("soon") is None
    assert c.keys("*") == [b"stays"]


def test_appendfsync_always_kill_9_loses_no_acknowledged_write(start_strata):
    s = start_strata(appendfsync="always")
    c = s.client()
    n = 2000
    with c.pipeline(transaction=False) as p:  # acknowledged in batches of 100
        for batch in range(0, n, 100):
            for i in range(batch, batch + 100):
                p.set(f"k{i}", f"v{i}")
            assert p.execute() == [True] * 100
    for i in range(50):  # and some acknowledged one by one, right before the crash
        assert c.incr("counter") == i + 1
    c.set("last", "write")
    s.kill9()
    s.start()
    c = s.client()
    values = c.mget([f"k{i}" for i in range(n)])
    missing = [i for i, v in enumerate(values) if v != f"v{i}".encode()]
    assert not missing, f"{len(missing)} acknowledged SETs lost after kill -9, e.g. k{missing[:5]}"
    assert c.get("counter") == b"50"
    assert c.get("last") == b"write"


def test_kill_9_then_restart_keeps_deletes_and_overwrites(start_strata):
    s = start_strata(appendfsync="always")
    c = s.client()
    c.mset({"a": "1", "b": "2", "c": "3"})
    c.delete("b")
    c.set("c", "33")
    c.expire("a", 1000)
    s.kill9()
    s.start()
    c = s.client()
    assert c.mget(["a", "b", "c"]) == [b"1", None, b"33"]
    assert 990 <= c.ttl("a") <= 1000


def _fill_expiring(c, n_tmp=200, n_keep=20, px=200):
    with c.pipeline(transaction=False) as p:
        for i in range(n_tmp):
            p.set(f"tmp:{i}", "x", px=px)
        for i in range(n_keep):
            p.set(f"keep:{i}", "y")
        p.execute()
    assert c.dbsize() == n_tmp + n_keep


def test_active_expiry_removes_untouched_keys(start_strata):
    s = start_strata()
    c = s.client()
    _fill_expiring(c)
    time.sleep(0.2)
    # Nothing reads the tmp keys (DBSIZE counts without looking at them): only the server's
    # own expiry cycle can remove them.
    deadline = time.monotonic() + 2.5
    while c.dbsize() != 20 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert c.dbsize() == 20, f"{c.dbsize() - 20} expired keys still counted 2.5 s after expiry"
    info = c.info("keyspace")["db0"]
    assert info["keys"] == 20 and info["expires"] == 0
    assert len(c.keys("*")) == 20
    assert len(set(c.scan_iter(count=50))) == 20


def test_expired_keys_are_invisible_to_keys_and_scan_at_once(start_strata):
    s = start_strata()
    c = s.client()
    _fill_expiring(c, px=100)
    time.sleep(0.15)
    assert sorted(c.keys("*")) == sorted(f"keep:{i}".encode() for i in range(20))
    assert len(set(c.scan_iter(count=1000))) == 20
    assert len(set(c.scan_iter(match="tmp:*"))) == 0
