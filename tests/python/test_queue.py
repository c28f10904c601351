"""Lists used as queues (issue 15): long lists pushed and popped at both ends, across restarts and
kill -9, and the commands that change items in place while pops read the items next in line ahead
into the hot-record cache. Replies are compared with a real redis-server (``both``) where one
server is enough; durability tests run private Strata servers against a model (a deque)."""

from collections import deque

import pytest


def _items(prefix, n):
    return [f"{prefix}:{i}:".encode() + b"v" * (i % 37) for i in range(n)]


def _push_in_chunks(push, key, items, chunk=100):
    """Pushes in commands of `chunk` items: a write batch that large skips the hot-record cache,
    so the pops below read these items from RocksDB (and read ahead)."""
    for at in range(0, len(items), chunk):
        push(key, *items[at:at + chunk])


# --- against Redis ---------------------------------------------------------------------------


def test_long_list_popped_from_both_ends_matches_redis(both):
    _push_in_chunks(lambda k, *v: both("RPUSH", k, *v), "q", _items("r", 1000))
    _push_in_chunks(lambda k, *v: both("LPUSH", k, *v), "q", _items("l", 500))
    for round_ in range(40):
        both("LPOP", "q")
        both("RPOP", "q")
        both("LPOP", "q", str(round_ % 5 + 1))
        both("RPOP", "q", "3")
    both("LLEN", "q")
    both("LINDEX", "q", "0")
    both("LINDEX", "q", "-1")
    both("LRANGE", "q", "0", "-1")
    both("LRANGE", "q", "-7", "-1")
    both("LRANGE", "q", "0", "6")


def test_items_changed_in_place_after_a_read_ahead_pop_the_new_values(both):
    _push_in_chunks(lambda k, *v: both("RPUSH", k, *v), "q", _items("x", 600))
    both("LPOP", "q")  # read from disk: the next items are read ahead into the cache
    both("RPOP", "q")
    both("LSET", "q", "0", "set-head")
    both("LSET", "q", "3", "set-3")
    both("LSET", "q", "-1", "set-tail")
    both("LSET", "q", "-4", "set-tail-3")
    both("LINSERT", "q", "BEFORE", b"x:10:" + b"v" * 10, "inserted")
    both("LREM", "q", "1", b"x:20:" + b"v" * 20)
    both("LREM", "q", "-1", b"x:590:" + b"v" * (590 % 37))
    for _ in range(30):
        both("LPOP", "q")
        both("RPOP", "q")
    both("LRANGE", "q", "0", "-1")


def test_ltrim_and_big_pops_after_a_read_ahead(both):
    _push_in_chunks(lambda k, *v: both("RPUSH", k, *v), "q", _items("t", 1000))
    both("LPOP", "q")
    both("RPOP", "q")
    both("LTRIM", "q", "5", "-6")
    both("LPOP", "q", "100")  # a range deletion: the whole data cache is forgotten
    both("RPOP", "q", "100")
    for _ in range(20):
        both("LPOP", "q")
        both("RPOP", "q")
    both("LRANGE", "q", "0", "-1")


def test_transaction_pushes_and_pops_at_a_read_ahead_end(both):
    _push_in_chunks(lambda k, *v: both("RPUSH", k, *v), "q", _items("m", 400))
    both("LPOP", "q")
    both("MULTI")
    both("LPUSH", "q", "new-head")
    both("LPOP", "q")
    both("LPOP", "q")
    both("LSET", "q", "0", "in-multi")
    both("RPOP", "q")
    both("EXEC")
    for _ in range(10):
        both("LPOP", "q")
        both("RPOP", "q")
    both("LRANGE", "q", "0", "-1")


def test_scripted_pops_see_their_own_writes(both):
    _push_in_chunks(lambda k, *v: both("RPUSH", k, *v), "q", _items("s", 300))
    both("LPOP", "q")
    script = ("redis.call('LSET', KEYS[1], 0, 'from-script') "
              "local a = redis.call('LPOP', KEYS[1]) "
              "redis.call('RPUSH', KEYS[1], 'tail-from-script') "
              "local b = redis.call('RPOP', KEYS[1]) "
              "return {a, b, redis.call('LPOP', KEYS[1]), redis.call('LINDEX', KEYS[1], 0)}")
    both("EVAL", script, "1", "q")
    both("LRANGE", "q", "0", "9")
    both("LRANGE", "q", "-10", "-1")


def test_lmove_rotation_through_a_long_list(both):
    _push_in_chunks(lambda k, *v: both("RPUSH", k, *v), "q", _items("o", 500))
    for i in range(200):
        both("LMOVE", "q", "q" if i % 3 else "other", "LEFT", "RIGHT")
        both("RPOPLPUSH", "q", "q")
    both("LRANGE", "q", "0", "-1")
    both("LRANGE", "other", "0", "-1")


def test_reverse_walks_after_many_pops(both):
    """LPOS with a negative rank walks from the tail towards the head; after many pops at the
    head the walk must stop at the head, not run through the popped items' tombstones."""
    _push_in_chunks(lambda k, *v: both("RPUSH", k, *v), "q", [b"a", b"b"] * 600)
    for _ in range(300):
        both("LPOP", "q")
        both("RPOP", "q")
    both("LPOS", "q", "a", "RANK", "-1")
    both("LPOS", "q", "a", "RANK", "-2", "COUNT", "0")
    both("LPOS", "q", "zzz", "RANK", "-1")
    both("LPOS", "q", "b", "COUNT", "0")
    both("LRANGE", "q", "0", "-1")


# --- durability (private servers, a model) ---------------------------------------------------


def _pop_both_ends(c, model, rounds):
    for i in range(rounds):
        if i % 2:
            assert c.lpop("q") == model.popleft()
        else:
            assert c.rpop("q") == model.pop()
        if i % 7 == 0:
            n = 1 + i % 4
            want = [model.popleft() for _ in range(min(n, len(model)))]
            assert c.lpop("q", n) == (want or None)


def _check(c, model):
    assert c.llen("q") == len(model)
    assert c.lrange("q", 0, -1) == list(model)
    if model:
        assert c.lindex("q", 0) == model[0]
        assert c.lindex("q", -1) == model[-1]


@pytest.mark.parametrize("cache", ["256mb", "0"])
def test_long_list_popped_from_both_ends_survives_restarts(start_strata, cache):
    s = start_strata(**{"hot-cache-size": cache})
    c = s.client()
    model = deque()
    items = _items("d", 3000)
    _push_in_chunks(c.rpush, "q", items)
    model.extend(items)
    for restart in range(3):
        _pop_both_ends(c, model, 300)
        fresh = _items(f"after{restart}", 150)
        c.lpush("q", *fresh[:75])
        model.extendleft(fresh[:75])
        for v in fresh[75:]:
            c.rpush("q", v)
            model.append(v)
        s.restart()
        c = s.client()
        _check(c, model)
    _pop_both_ends(c, model, 200)
    _check(c, model)


def test_acknowledged_pops_survive_kill_9(start_strata):
    """appendfsync always: a pop acknowledged before a kill -9 stays popped, and every item not
    popped is still there, in order."""
    s = start_strata(appendfsync="always")
    c = s.client()
    model = deque()
    items = _items("k", 2000)
    _push_in_chunks(c.rpush, "q", items)
    model.extend(items)
    for crash in range(3):
        _pop_both_ends(c, model, 250)
        c.lpush("q", f"crash{crash}")
        model.appendleft(f"crash{crash}".encode())
        s.kill9()
        s.start()
        c = s.client()
        _check(c, model)
    while model:
        assert c.rpop("q") == model.pop()
    assert c.exists("q") == 0
