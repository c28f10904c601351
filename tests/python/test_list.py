"""List commands (non-blocking), compared reply for reply with a real redis-server (``both``)."""

import random
import time

import pytest

from harness import RespError


def resp3(both):
    """Switch both connections to RESP3 (HELLO's own reply differs between servers)."""
    s, r = both.each("HELLO", "3")
    assert not isinstance(s, RespError) and not isinstance(r, RespError)


# --- pushes and pops --------------------------------------------------------------------------


def test_push_variants(both):
    both("LPUSH", "l", "a", "b", "c")
    both("RPUSH", "l", "x", "y")
    both("LRANGE", "l", "0", "-1")
    both("LPUSHX", "l", "front")
    both("RPUSHX", "l", "back", "back2")
    both("LRANGE", "l", "0", "-1")
    both("LPUSHX", "missing", "a")
    both("RPUSHX", "missing", "a")
    both("EXISTS", "missing")
    both("LLEN", "l")
    both("LLEN", "missing")
    both("RPUSH", "e", "")
    both("LRANGE", "e", "0", "-1")


@pytest.mark.parametrize("cmd", ["LPOP", "RPOP"])
def test_pops(both, cmd):
    both("RPUSH", "l", "a", "b", "c", "d", "e")
    both(cmd, "l")
    both(cmd, "l", "2")
    both(cmd, "l", "0")
    both(cmd, "l", "-1")
    both(cmd, "l", "x")
    both(cmd, "l", "1", "2")
    both(cmd, "l", "10")
    both("EXISTS", "l")
    both(cmd, "l")
    both(cmd, "l", "2")
    both(cmd, "l", "0")
    both(cmd, "missing", "x")


# --- LINDEX LSET LRANGE -----------------------------------------------------------------------


@pytest.mark.parametrize("i", ["0", "1", "-1", "-4", "3", "4", "-5", "x", "9223372036854775807",
                               "-9223372036854775808"])
def test_lindex_and_lset(both, i):
    both("RPUSH", "l", "a", "b", "c", "d")
    both("LINDEX", "l", i)
    both("LSET", "l", i, "NEW")
    both("LRANGE", "l", "0", "-1")
    both("LINDEX", "missing", i)
    both("LSET", "missing", i, "v")


@pytest.mark.parametrize("start,stop", [
    ("0", "-1"), ("1", "2"), ("-2", "-1"), ("-100", "100"), ("3", "1"), ("5", "10"), ("0", "0"),
    ("-1", "-1"), ("-9223372036854775808", "9223372036854775807"), ("x", "1"), ("0", "y"),
])
def test_lrange(both, start, stop):
    both("RPUSH", "l", "a", "b", "c", "d", "e")
    both("LRANGE", "l", start, stop)
    both("LRANGE", "missing", start, stop)


# --- LINSERT LREM LTRIM -----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["BEFORE", "AFTER", "before", "after", "middle"])
@pytest.mark.parametrize("pivot", ["a", "c", "e", "x"])
def test_linsert(both, where, pivot):
    both("RPUSH", "l", "a", "b", "c", "d", "e", "c")
    both("LINSERT", "l", where, pivot, "NEW")
    both("LRANGE", "l", "0", "-1")
    both("LINSERT", "missing", where, pivot, "NEW")
    both("EXISTS", "missing")


@pytest.mark.parametrize("count", ["0", "1", "2", "-1", "-2", "100", "-100", "x"])
def test_lrem(both, count):
    both("RPUSH", "l", "x", "a", "x", "b", "x", "c", "x", "x")
    both("LREM", "l", count, "x")
    both("LRANGE", "l", "0", "-1")
    both("LREM", "l", count, "nope")
    both("LREM", "missing", count, "x")


def test_lrem_can_empty_the_list(both):
    both("RPUSH", "l", "x", "x", "x")
    both("LREM", "l", "0", "x")
    both("EXISTS", "l")


@pytest.mark.parametrize("start,stop", [
    ("0", "-1"), ("1", "2"), ("-2", "-1"), ("-100", "100"), ("3", "1"), ("5", "10"), ("0", "0"),
    ("1", "-2"), ("x", "1"),
])
def test_ltrim(both, start, stop):
    both("RPUSH", "l", "a", "b", "c", "d", "e")
    both("LTRIM", "l", start, stop)
    both("LRANGE", "l", "0", "-1")
    both("EXISTS", "l")
    both("LTRIM", "missing", start, stop)
    both("LPUSH", "l", "new")
    both("RPUSH", "l", "tail")
    both("LRANGE", "l", "0", "-1")


# --- LPOS -------------------------------------------------------------------------------------


@pytest.mark.parametrize("opts", [
    [], ["RANK", "1"], ["RANK", "2"], ["RANK", "-1"], ["RANK", "-3"], ["RANK", "9"], ["COUNT", "0"],
    ["COUNT", "2"], ["RANK", "-1", "COUNT", "2"], ["RANK", "2", "COUNT", "0"], ["MAXLEN", "3"],
    ["MAXLEN", "3", "COUNT", "0"], ["RANK", "-1", "MAXLEN", "2", "COUNT", "0"], ["RANK", "0"],
    ["RANK", "x"], ["COUNT", "-1"], ["COUNT", "x"], ["MAXLEN", "-1"], ["MAXLEN", "x"], ["COUNT"],
    ["FOO", "1"], ["RANK", "-9223372036854775808"], ["RANK", "-9223372036854775808", "COUNT", "2"],
    ["RANK", "9223372036854775807"], ["rank", "1", "count", "1", "maxlen", "0"],
])
def test_lpos(both, opts):
    both("RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c")
    both("LPOS", "l", "c", *opts)
    both("LPOS", "l", "nope", *opts)
    both("LPOS", "missing", "c", *opts)


# --- LMOVE RPOPLPUSH LMPOP --------------------------------------------------------------------


@pytest.mark.parametrize("wherefrom", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("whereto", ["LEFT", "right"])
def test_lmove(both, wherefrom, whereto):
    both("RPUSH", "src", "a", "b", "c")
    both("RPUSH", "dst", "x")
    both("LMOVE", "src", "dst", wherefrom, whereto)
    both("LMOVE", "src", "new", wherefrom, whereto)
    both("LMOVE", "src", "src", wherefrom, whereto)
    for k in ["src", "dst", "new"]:
        both("LRANGE", k, "0", "-1")
    both("LMOVE", "src", "dst", wherefrom, whereto)
    both("EXISTS", "src")
    both("LMOVE", "src", "dst", wherefrom, whereto)
    both("LMOVE", "dst", "dst", "UP", whereto)


def test_rotation_of_a_single_element_list(both):
    both("RPUSH", "l", "only")
    both("LMOVE", "l", "l", "LEFT", "RIGHT")
    both("RPOPLPUSH", "l", "l")
    both("LRANGE", "l", "0", "-1")


def test_rpoplpush(both):
    both("RPUSH", "src", "a", "b", "c")
    both("RPOPLPUSH", "src", "dst")
    both("RPOPLPUSH", "src", "src")
    both("LRANGE", "src", "0", "-1")
    both("LRANGE", "dst", "0", "-1")
    both("RPOPLPUSH", "missing", "dst")


@pytest.mark.parametrize("cmd", [
    ["LMPOP", "1", "l", "LEFT"], ["LMPOP", "1", "l", "RIGHT", "COUNT", "2"],
    ["LMPOP", "2", "missing", "l", "left", "count", "10"], ["LMPOP", "1", "missing", "LEFT"],
    ["LMPOP", "0", "l", "LEFT"], ["LMPOP", "-1", "l", "LEFT"], ["LMPOP", "x", "l", "LEFT"],
    ["LMPOP", "1", "l", "UP"], ["LMPOP", "2", "l", "LEFT"], ["LMPOP", "3", "l", "LEFT"],
    ["LMPOP", "1", "l", "LEFT", "COUNT", "0"], ["LMPOP", "1", "l", "LEFT", "COUNT", "x"],
    ["LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "1"], ["LMPOP", "1", "l", "LEFT", "COUNT"],
    ["LMPOP", "1", "l", "LEFT", "FOO"], ["LMPOP", "2", "l", "str", "LEFT"],
    ["LMPOP", "2", "missing", "str", "LEFT"], ["LMPOP", "9223372036854775807", "l", "LEFT"],
])
def test_lmpop(both, cmd):
    both("RPUSH", "l", "a", "b", "c")
    both("SET", "str", "v")
    both(*cmd)
    both("LRANGE", "l", "0", "-1")


# --- WRONGTYPE --------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", [
    ["LPUSH", "s", "a"], ["RPUSH", "s", "a"], ["LPUSHX", "s", "a"], ["RPUSHX", "s", "a"],
    ["LPOP", "s"], ["RPOP", "s", "0"], ["LLEN", "s"], ["LINDEX", "s", "0"], ["LINDEX", "s", "x"],
    ["LRANGE", "s", "0", "1"], ["LRANGE", "s", "x", "1"], ["LSET", "s", "0", "a"],
    ["LSET", "s", "x", "a"], ["LINSERT", "s", "BEFORE", "a", "b"], ["LINSERT", "s", "FOO", "a", "b"],
    ["LREM", "s", "0", "a"], ["LREM", "s", "x", "a"], ["LTRIM", "s", "0", "1"],
    ["LPOS", "s", "a"], ["LPOS", "s", "a", "RANK", "0"], ["LMOVE", "s", "l", "LEFT", "LEFT"],
    ["LMOVE", "l", "s", "LEFT", "LEFT"], ["RPOPLPUSH", "s", "l"], ["RPOPLPUSH", "l", "s"],
    ["LMPOP", "1", "s", "LEFT"], ["LMPOP", "2", "l", "s", "LEFT"], ["LMOVE", "missing", "s", "LEFT", "LEFT"],
])
@pytest.mark.parametrize("holder", [["SET", "s", "v"], ["ZADD", "s", "1", "v"]])
def test_wrongtype(both, cmd, holder):
    both(*holder)
    both("RPUSH", "l", "a", "b")
    both(*cmd)
    both("LRANGE", "l", "0", "-1")


# --- RESP3 ------------------------------------------------------------------------------------


def test_resp3_replies(both):
    resp3(both)
    both("RPUSH", "l", "a", "b", "c")
    both("LPOP", "missing")
    both("LPOP", "missing", "2")
    both("LPOP", "l", "2")
    both("LINDEX", "l", "5")
    both("LPOS", "l", "zz")
    both("LPOS", "l", "c", "COUNT", "0")
    both("LMPOP", "1", "missing", "LEFT")
    both("LMPOP", "1", "l", "LEFT")
    both("LMOVE", "missing", "l", "LEFT", "LEFT")


def test_object_encoding(both):
    both("RPUSH", "l", "a")
    both("OBJECT", "ENCODING", "l")
    both("RPUSH", "big", *[str(i) for i in range(200)])
    both("OBJECT", "ENCODING", "big")


# --- seeded random sequence, every reply compared ---------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_command_sequence_matches_redis(both, seed):
    rng = random.Random(seed)
    keys = ["l1", "l2", "l3"]
    values = [f"v{i}" for i in range(6)]

    def idx():
        return str(rng.randint(-7, 7))

    for _ in range(400):
        k = rng.choice(keys)
        v = rng.choice(values)
        op = rng.randrange(20)
        if op < 3:
            cmd = [rng.choice(["LPUSH", "RPUSH"]), k] + rng.sample(values, rng.randint(1, 3))
        elif op == 3:
            cmd = [rng.choice(["LPUSHX", "RPUSHX"]), k, v]
        elif op == 4:
            cmd = [rng.choice(["LPOP", "RPOP"]), k] + rng.choice([[], [str(rng.randint(0, 3))]])
        elif op == 5:
            cmd = ["LLEN", k]
        elif op == 6:
            cmd = ["LINDEX", k, idx()]
        elif op == 7:
            cmd = ["LRANGE", k, idx(), idx()]
        elif op == 8:
            cmd = ["LSET", k, idx(), v]
        elif op == 9:
            cmd = ["LINSERT", k, rng.choice(["BEFORE", "AFTER"]), rng.choice(values), v]
        elif op == 10:
            cmd = ["LREM", k, str(rng.randint(-2, 2)), v]
        elif op == 11:
            cmd = ["LTRIM", k, idx(), idx()] if rng.random() < 0.3 else ["LLEN", k]
        elif op == 12:
            opts = []
            if rng.random() < 0.5:
                opts += ["RANK", rng.choice(["1", "2", "-1", "-2"])]
            if rng.random() < 0.5:
                opts += ["COUNT", str(rng.randint(0, 3))]
            if rng.random() < 0.3:
                opts += ["MAXLEN", str(rng.randint(0, 5))]
            cmd = ["LPOS", k, v, *opts]
        elif op == 13:
            cmd = ["LMOVE", k, rng.choice(keys), rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"])]
        elif op == 14:
            cmd = ["RPOPLPUSH", k, rng.choice(keys)]
        elif op == 15:
            cmd = ["LMPOP", "2", k, rng.choice(keys), rng.choice(["LEFT", "RIGHT"]), "COUNT", str(rng.randint(1, 3))]
        else:
            cmd = ["LRANGE", k, "0", "-1"]
        both(*cmd)
    for k in keys:
        both("LRANGE", k, "0", "-1")


@pytest.mark.parametrize("seed", [1, 2])
def test_pops_of_long_lists_after_changes_near_their_ends_match_redis(both, seed):
    """Long lists (so pops read the items next in line ahead, into runs of the hot-record
    cache): LSET, LINSERT, LREM, LTRIM, DEL and re-creation near either end, SAVE (a checkpoint)
    now and then, and the pops after them return what Redis's do."""
    rng = random.Random(seed)
    keys = ["q1", "q2"]
    for k in keys:
        for start in range(0, 600, 100):
            both("RPUSH", k, *[f"{k}-{i}" for i in range(start, start + 100)])

    def near_end():
        i = rng.randint(0, 40)
        return str(i if rng.random() < 0.5 else -1 - i)

    for step in range(600):
        k = rng.choice(keys)
        op = rng.randrange(16)
        if op < 8:
            both(rng.choice(["LPOP", "RPOP"]), k)
        elif op == 8:
            both("LSET", k, near_end(), f"set-{step}")
        elif op == 9:
            pivot = both("LINDEX", k, near_end())
            if pivot is not None:
                both("LINSERT", k, rng.choice(["BEFORE", "AFTER"]), pivot, f"ins-{step}")
        elif op == 10:
            victim = both("LINDEX", k, near_end())
            if victim is not None:
                both("LREM", k, rng.choice(["1", "-1"]), victim)
        elif op == 11:
            both("LTRIM", k, str(rng.randint(0, 3)), str(-1 - rng.randint(0, 3)))
        elif op == 12 and rng.random() < 0.1:
            both("DEL", k)
            both("RPUSH", k, *[f"new-{step}-{i}" for i in range(300)])
        elif op == 13 and rng.random() < 0.2:
            both.each("SAVE")
        elif op == 14:
            both(rng.choice(["LPUSH", "RPUSH"]), k, f"push-{step}")
        else:
            both("LMPOP", "1", k, rng.choice(["LEFT", "RIGHT"]), "COUNT", str(rng.randint(1, 3)))
    for k in keys:
        both("LRANGE", k, "0", "-1")


@pytest.mark.parametrize("save_between", [False, True])
def test_popped_items_are_never_read_again_by_any_command_matches_redis(both, save_between):
    """A pop writes only the list's metadata, leaving the popped item's record behind as
    garbage: no command reads it again, before or after a checkpoint (SAVE), and pushes that
    take a popped index back return their new items. Every reply compared with redis-server."""
    for k in ("q", "r"):
        both("RPUSH", k, *[f"{k}-{i}" for i in range(200)])
    if save_between:
        both.each("SAVE")
    both("LPOP", "q", "30")
    both("RPOP", "q", "20")
    for _ in range(10):
        both("LPOP", "q")
        both("RPOP", "q")
    both("LMPOP", "1", "q", "LEFT", "COUNT", "5")
    both("BLPOP", "q", "0")
    both("BRPOP", "q", "0")
    both("LMOVE", "q", "r", "LEFT", "RIGHT")
    both("RPOPLPUSH", "q", "r")
    both("LTRIM", "q", "3", "-4")
    both("LREM", "q", "-1", "q-150")
    if save_between:
        both.each("SAVE")
    n = both("LLEN", "q")
    both("LRANGE", "q", "0", "-1")
    both("LRANGE", "q", "-1000", "1000")
    for i in (0, n - 1, n, -n, -n - 1, 1000, -1000):
        both("LINDEX", "q", str(i))
    for i in (0, 10, 29, 45, 170, 199):
        both("LPOS", "q", f"q-{i}")
        both("LPOS", "q", f"q-{i}", "RANK", "-1")
    both("SORT", "q", "ALPHA")
    both("SORT", "q", "BY", "nosort")
    both("LSET", "q", str(n), "x")
    both("LINSERT", "q", "BEFORE", "q-0", "x")
    both("LREM", "q", "0", "q-5")
    # Pushes take popped indexes back.
    both("LPUSH", "q", "new-left-1", "new-left-2")
    both("RPUSH", "q", "new-right-1", "new-right-2")
    both("LRANGE", "q", "0", "4")
    both("LRANGE", "q", "-4", "-1")
    both("RENAME", "q", "q2")
    both("COPY", "q2", "q3")
    if save_between:
        both.each("SAVE")
    for k in ("q2", "q3", "r"):
        both("LRANGE", k, "0", "-1")
        both("LLEN", k)
    for side in (both.strata, both.redis):
        side.call("RESTORE", "q4", "0", side.call("DUMP", "q2"))
    both("LRANGE", "q4", "0", "-1")
    while both("LPOP", "q2", "7") is not None:
        pass
    both("EXISTS", "q2")


# --- big keys ---------------------------------------------------------------------------------


def test_big_list_delete_is_fast_and_recreated_key_starts_empty(strata):
    n = 200_000
    pipe = strata.pipeline(transaction=False)
    for start in range(0, n, 10_000):
        pipe.rpush("big", *[f"item-{i}" for i in range(start, start + 10_000)])
    pipe.execute()
    assert strata.llen("big") == n
    assert strata.lindex("big", 150_000) == b"item-150000"
    assert strata.lrange("big", -2, -1) == [b"item-199998", b"item-199999"]
    t = time.monotonic()
    assert strata.delete("big") == 1
    assert time.monotonic() - t < 0.5
    assert strata.llen("big") == 0
    strata.rpush("big", "fresh")
    assert strata.lrange("big", 0, -1) == [b"fresh"]


def test_writes_keep_the_ttl(both):
    both("RPUSH", "l", "a", "b", "c")
    both("EXPIRE", "l", "100")
    both("LPUSH", "l", "x")
    both("LPOP", "l")
    both("LSET", "l", "0", "y")
    both("LINSERT", "l", "AFTER", "y", "z")
    both("LTRIM", "l", "0", "2")
    both("TTL", "l")
    both("RPUSH", "gone", "a")
    both("PEXPIRE", "gone", "1")
    time.sleep(0.01)
    both("LLEN", "gone")
    both("RPUSH", "gone", "b")
    both("LRANGE", "gone", "0", "-1")
    both("TTL", "gone")
