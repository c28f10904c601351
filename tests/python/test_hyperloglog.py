"""HyperLogLog (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST) compared with a real Redis 7.0: the
same commands go to both servers and the replies must be identical, and so must the bytes GET
returns afterwards (an HLL is a string holding Redis's exact representation: the HYLL header,
the sparse and dense encodings, the cached cardinality). Values copied with GET/SET from one
server to the other count the same."""

import random
import time

import pytest
import redis

from harness import RespConn

CORRUPT = "INVALIDOBJ Corrupted HLL object detected"
NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
DENSE_LEN = 16 + 12288


def _same_bytes(both, *keys):
    """GET of each key is byte-identical on both servers; returns Redis's values."""
    return [both("GET", k) for k in keys]


def _words(rng, n, prefix="e"):
    return [f"{prefix}{rng.getrandbits(48):x}" for _ in range(n)]


@pytest.fixture
def sparse_limit(both):
    """Restores hll-sparse-max-bytes on both shared servers after a test that changes it."""
    yield
    both.each("CONFIG", "SET", "hll-sparse-max-bytes", "3000")


# --- PFADD / PFCOUNT --------------------------------------------------------------------------


def test_pfadd_without_elements_creates_the_key(both):
    both("PFADD", "h")
    both("PFADD", "h")
    _same_bytes(both, "h")
    both("PFCOUNT", "h")
    _same_bytes(both, "h")
    both("STRLEN", "h")
    both("TYPE", "h")
    both("OBJECT", "ENCODING", "h")


def test_pfadd_reports_whether_a_register_changed_and_pfcount_writes_the_cache(both):
    both("PFADD", "h", "a", "b", "c")
    both("PFADD", "h", "a")
    both("PFADD", "h", "a", "d")
    _same_bytes(both, "h")  # cache invalid after PFADD
    both("PFCOUNT", "h")
    _same_bytes(both, "h")  # cache written by PFCOUNT
    both("PFCOUNT", "h")
    both("PFCOUNT", "nosuch")
    both("EXISTS", "nosuch")


@pytest.mark.parametrize("size", [1, 10, 100, 500, 1000, 3000, 20000])
def test_random_sets_give_the_same_bytes_and_counts(both, size):
    rng = random.Random(size)
    words = _words(rng, size)
    # Repeats too: half the second pass is already in.
    words += rng.sample(words, size // 2)
    i = 0
    while i < len(words):
        n = rng.choice([1, 3, 17, 100])
        both("PFADD", "h", *words[i:i + n])
        i += n
        if rng.random() < 0.2:
            both("PFCOUNT", "h")
    both("PFCOUNT", "h")
    both("PFDEBUG", "ENCODING", "h")
    _same_bytes(both, "h")


def test_every_step_up_to_the_sparse_limit_and_past_it_is_identical(both):
    rng = random.Random(7)
    for w in _words(rng, 2500):
        both("PFADD", "h", w)
        _same_bytes(both, "h")
        if both("PFDEBUG", "ENCODING", "h") == b"dense":
            break
    else:
        pytest.fail("never promoted to dense")
    both("PFCOUNT", "h")
    assert len(_same_bytes(both, "h")[0]) == DENSE_LEN


def test_binary_and_long_elements(both):
    both("PFADD", "h", b"", b"\x00", b"\xff" * 9, b"x" * 1000, "\u00e9t\u00e9".encode())
    _same_bytes(both, "h")
    both("PFCOUNT", "h")


def test_pfadd_keeps_the_ttl(both):
    both("PFADD", "h", "a")
    both("EXPIRE", "h", "1000")
    both("PFADD", "h", "b", "c")
    both("TTL", "h")
    both("PFCOUNT", "h")
    both("TTL", "h")
    both("PFMERGE", "h", "h")
    both("TTL", "h")


def test_dense_pfadd_one_element_at_a_time_gives_redis_replies_bytes_and_ttl(both):
    # A dense HLL is edited in place, and an addition that raises no register reads it where it
    # lies: every reply, the bytes, the cached cardinality and the TTL stay Redis's.
    rng = random.Random(12)
    both("PFADD", "d", *_words(rng, 5000))
    assert both("PFDEBUG", "ENCODING", "d") == b"dense"
    both("PEXPIRE", "d", "1000000")
    for w in _words(rng, 2000) + ["e0", "e1"]:
        both("PFADD", "d", w)
    both("PFADD", "d", *_words(rng, 7))
    both("PFADD", "d", "e0", "e1", "e2")
    _same_bytes(both, "d")
    both("PFCOUNT", "d")
    both("PFCOUNT", "d")
    _same_bytes(both, "d")
    both("PFADD", "d", *_words(rng, 3))
    both("PFCOUNT", "d")
    assert both.strata.call("PTTL", "d") > 0
    assert both.strata.call("OBJECT", "ENCODING", "d") == both.redis.call("OBJECT", "ENCODING", "d")


def test_pfadd_to_a_dense_hll_in_multi_exec_is_seen_by_the_next_command(both):
    rng = random.Random(13)
    both("PFADD", "d", *_words(rng, 5000))
    both("MULTI")
    for w in _words(rng, 20):
        both("PFADD", "d", w)
    both("PFCOUNT", "d")
    both("GET", "d")
    both("EXEC")
    _same_bytes(both, "d")


def test_pfcount_of_several_keys_is_the_union_and_writes_nothing(both):
    rng = random.Random(3)
    a, b, c = _words(rng, 50), _words(rng, 2000), _words(rng, 10)
    both("PFADD", "a", *a)
    both("PFADD", "b", *b)
    both("PFADD", "c", *(c + a[:5]))
    before = _same_bytes(both, "a", "b", "c")
    both("PFCOUNT", "a", "b")
    both("PFCOUNT", "a", "c")
    both("PFCOUNT", "a", "b", "c", "nosuch")
    both("PFCOUNT", "a", "a")
    both("PFCOUNT", "nosuch", "nosuch2")
    assert _same_bytes(both, "a", "b", "c") == before
    both("EXISTS", "nosuch")


# --- PFMERGE ------------------------------------------------------------------------------------


def test_pfmerge_of_sparse_inputs_stays_sparse(both):
    both("PFADD", "a", "x", "y")
    both("PFADD", "b", "y", "z", "w")
    both("PFMERGE", "m", "a", "b")
    both("PFDEBUG", "ENCODING", "m")
    _same_bytes(both, "m")
    both("PFCOUNT", "m")
    both("PFMERGE", "m", "nosuch")
    _same_bytes(both, "m")
    both("PFMERGE", "only")
    _same_bytes(both, "only")


def test_pfmerge_of_sparse_into_dense_and_dense_into_sparse(both):
    rng = random.Random(11)
    both("PFADD", "dense", *_words(rng, 5000))
    both("PFADD", "sparse", *_words(rng, 40))
    both("PFADD", "sparse2", *_words(rng, 40))
    assert both("PFDEBUG", "ENCODING", "dense") == b"dense"
    assert both("PFDEBUG", "ENCODING", "sparse") == b"sparse"
    both("PFMERGE", "dense", "sparse")          # sparse into dense
    both("PFMERGE", "sparse", "dense")          # dense into sparse: the target becomes dense
    both("PFMERGE", "new", "sparse2", "dense")  # a new target with a dense input
    both("PFMERGE", "new2", "sparse2", "nosuch")
    _same_bytes(both, "dense", "sparse", "new", "new2")
    both("PFCOUNT", "dense")
    both("PFCOUNT", "sparse")
    both("PFCOUNT", "new")


def test_pfmerge_of_many_sparse_inputs_promotes_the_target_past_the_limit(both):
    rng = random.Random(5)
    keys = []
    for i in range(12):
        k = f"s{i}"
        both("PFADD", k, *_words(rng, 120))
        keys.append(k)
    assert both("PFDEBUG", "ENCODING", "s0") == b"sparse"
    both("PFMERGE", "m", *keys[:3])
    _same_bytes(both, "m")
    both("PFMERGE", "m", *keys)
    _same_bytes(both, "m")
    both("PFDEBUG", "ENCODING", "m")
    both("PFCOUNT", "m")


# --- PFDEBUG / PFSELFTEST ------------------------------------------------------------------------


def test_pfdebug_subcommands(both):
    rng = random.Random(9)
    both("PFADD", "h", *_words(rng, 30))
    both("PFDEBUG", "DECODE", "h")
    both("PFDEBUG", "encoding", "h")
    both("PFDEBUG", "GETREG", "h")  # converts to dense
    _same_bytes(both, "h")
    both("PFDEBUG", "ENCODING", "h")
    both("PFDEBUG", "DECODE", "h")
    both("PFDEBUG", "TODENSE", "h")
    both("PFADD", "s", "a")
    both("PFDEBUG", "todense", "s")
    _same_bytes(both, "s")
    both("PFDEBUG", "NOSUCH", "s")
    both("PFDEBUG", "NOSUCH", "missing")
    both("PFDEBUG", "GETREG", "missing")
    both("PFDEBUG", "GETREG")
    both("PFDEBUG", "GETREG", "a", "b")
    both("SET", "str", "x")
    both("PFDEBUG", "NOSUCH", "str")


def test_pfselftest_passes(both):
    both("PFSELFTEST")
    both("PFSELFTEST", "x")


# --- errors, types, corrupted values ------------------------------------------------------------


def test_wrong_types_and_values_that_are_not_hlls(both):
    both("LPUSH", "list", "x")
    both("SET", "short", "hello")
    both("SET", "magic", "HYLX" + "\x01" + "\x00" * 11 + "\x7f\xff")
    both("SET", "encoding", "HYLL" + "\x02" + "\x00" * 11 + "\x7f\xff")
    both("SET", "dense-len", "HYLL" + "\x00" * 12 + "\x00" * 100)
    both("SET", "int", "12345678901234567")
    for key in ["list", "short", "magic", "encoding", "dense-len", "int"]:
        both("PFADD", key, "a")
        both("PFCOUNT", key)
        both("PFCOUNT", "nosuch", key)
        both("PFMERGE", "dst", key)
        both("PFMERGE", key, "nosuch")
        both("PFDEBUG", "ENCODING", key)
    both("EXISTS", "dst")
    both("PFADD")
    both("PFCOUNT")
    both("PFMERGE")


def test_corrupted_sparse_and_dense_values(both):
    # Redis's own cases: a tail appended to a sparse HLL, and registers past 16384.
    both("PFADD", "h", "a", "b", "c")
    both("APPEND", "h", "hello")
    both("PFCOUNT", "h")
    both("PFCOUNT", "h", "h")
    both("PFMERGE", "m", "h")
    both("PFDEBUG", "TODENSE", "h")
    both("PFDEBUG", "GETREG", "h")
    both("PFDEBUG", "DECODE", "h")
    both("PFADD", "h", "x", "y", "z")
    _same_bytes(both, "h")
    # Too few registers: PFADD may still succeed where the opcodes reach, as in Redis.
    both("SET", "short", b"HYLL\x01" + b"\x00" * 11 + b"\x7f\x10")
    for w in ["a", "b", "c", "d", "e", "f", "g"]:
        both("PFADD", "short", w)
        _same_bytes(both, "short")
    both("PFCOUNT", "short")
    # A valid cache is trusted, whatever the registers say.
    both("SET", "cached", b"HYLL\x01" + b"\x00" * 3 + b"\x2a" + b"\x00" * 7 + b"\x7f")
    both("PFCOUNT", "cached")
    both("PFCOUNT", "cached", "cached")
    # A header with nothing after it.
    both("SET", "empty", b"HYLL\x01" + b"\x00" * 11)
    both("PFADD", "empty", "a")
    both("PFCOUNT", "empty")
    both("PFADD", "empty")
    _same_bytes(both, "empty")


def test_random_corruptions_behave_as_in_redis(both):
    rng = random.Random(2024)
    both("PFADD", "src", *_words(rng, 200))
    sparse = both("GET", "src")
    both("PFADD", "src2", *_words(rng, 5000))
    dense = both("GET", "src2")
    for i in range(300):
        base = bytearray(sparse if i % 3 else dense)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(16, len(base))
            base[at] ^= 1 << rng.randrange(8)
        if rng.random() < 0.3:
            del base[rng.randrange(16, len(base)):]
        if rng.random() < 0.2:
            base += bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.3:
            base[15] &= 0x7F  # a valid cache now and then
        key = f"c{i}"
        both("SET", key, bytes(base))
        both("PFCOUNT", key)
        both("PFDEBUG", "DECODE", key)
        both("PFADD", key, *_words(rng, rng.choice([1, 5, 30])))
        _same_bytes(both, key)
        both("PFCOUNT", key, "src")
        both("PFMERGE", f"m{i}", key, "src")
        both("PFDEBUG", "TODENSE", key)
        _same_bytes(both, key, f"m{i}")


# --- values moved between the servers -----------------------------------------------------------


@pytest.mark.parametrize("size", [5, 300, 10000])
def test_hlls_copied_with_get_and_set_count_the_same(strata, redis_ref, size):
    rng = random.Random(size)
    words = _words(rng, size)
    redis_ref.pfadd("from-redis", *words)
    strata.pfadd("from-strata", *words)
    strata.set("from-redis", redis_ref.get("from-redis"))
    redis_ref.set("from-strata", strata.get("from-strata"))
    for c in (strata, redis_ref):
        assert c.pfcount("from-redis") == c.pfcount("from-strata")
        assert c.pfcount("from-redis", "from-strata") == c.pfcount("from-redis")
    more = _words(rng, size)
    strata.pfadd("from-redis", *more)
    redis_ref.pfadd("from-redis", *more)
    assert strata.get("from-redis") == redis_ref.get("from-redis")
    assert strata.pfcount("from-redis") == redis_ref.pfcount("from-redis")


# --- CONFIG, transactions, scripts, WATCH, events -----------------------------------------------


@pytest.mark.parametrize("limit", ["0", "1", "30", "200", "10000"])
def test_config_set_hll_sparse_max_bytes(both, sparse_limit, limit):
    both("CONFIG", "SET", "hll-sparse-max-bytes", limit)
    both("CONFIG", "GET", "hll-sparse-max-bytes")
    rng = random.Random(int(limit))
    for _ in range(40):
        both("PFADD", "h", *_words(rng, 25))
        _same_bytes(both, "h")
    both("PFDEBUG", "ENCODING", "h")
    both("PFMERGE", "m", "h")
    _same_bytes(both, "m")


def test_config_set_hll_sparse_max_bytes_is_checked(both, sparse_limit):
    both("CONFIG", "SET", "hll-sparse-max-bytes", "-1")
    both("CONFIG", "SET", "hll-sparse-max-bytes", "1kb")
    both("CONFIG", "GET", "hll-sparse-max-bytes")


def test_in_multi_exec_and_lua(both):
    both("MULTI")
    both("PFADD", "h", "a", "b")
    both("PFCOUNT", "h")
    both("PFMERGE", "m", "h", "x")
    both("PFCOUNT", "m", "h")
    both("PFDEBUG", "ENCODING", "m")
    both("EXEC")
    _same_bytes(both, "h", "m")
    both("EVAL", "return redis.call('pfadd', KEYS[1], 'c', 'd')", "1", "h")
    both("EVAL", "return redis.call('pfcount', KEYS[1])", "1", "h")
    both("EVAL", "return redis.call('pfmerge', KEYS[1], KEYS[2])", "2", "m", "h")
    _same_bytes(both, "h", "m")
    # PFCOUNT may replicate: read-only scripts may not call it.
    both("EVAL_RO", "return redis.call('pfcount', KEYS[1])", "1", "h")
    both("EVAL", "#!lua flags=no-writes\nreturn redis.call('pfcount', KEYS[1])", "1", "h")
    both("EVAL", "return redis.pcall('pfadd', KEYS[1], 'z')", "1", "nolist")


def test_pfcounts_racing_pfadds_on_one_key_leave_the_bytes_redis_has(strata_server, redis_server):
    """Four clients each add 1,000 elements to one dense HLL, counting after every add (so most
    counts find the cache stale and store it, while the others add): no count may store a
    cardinality over registers it did not read. Afterwards the HLL is what Redis holds for the
    same elements, counted."""
    import threading

    elements = [[f"t{t}e{i}" for i in range(1000)] for t in range(4)]
    ref = redis_server.conn()
    ref.call("FLUSHALL")
    for part in elements:
        for e in part:
            ref.call("PFADD", "h", e)
    main = strata_server.conn()
    main.call("FLUSHALL")
    main.call("PFADD", "h", *[f"seed{i}" for i in range(2000)])
    ref.call("PFADD", "h", *[f"seed{i}" for i in range(2000)])
    failures = []

    def client(part):
        c = strata_server.conn()
        try:
            last = 0
            for e in part:
                c.call("PFADD", "h", e)
                n = c.call("PFCOUNT", "h")
                if n < last:
                    failures.append(f"count went down: {last} then {n}")
                last = n
        except Exception as exc:  # reported below, not lost in the thread
            failures.append(repr(exc))

    threads = [threading.Thread(target=client, args=(p,)) for p in elements]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert main.call("PFCOUNT", "h") == ref.call("PFCOUNT", "h")
    assert main.call("GET", "h") == ref.call("GET", "h")


def _watch_exec(server, *cmd):
    """WATCH h, let another client run cmd, then EXEC: None when the transaction aborted."""
    a, b = server.conn(), server.conn()
    a.call("WATCH", "h")
    b.call(*cmd)
    a.call("MULTI")
    a.call("PING")
    return a.call("EXEC")


@pytest.mark.parametrize("cmd", [("PFADD", "h", "a"), ("PFADD", "h", "new"), ("PFCOUNT", "h"),
                                 ("PFMERGE", "h", "h"), ("PFMERGE", "dst", "h"),
                                 ("PFDEBUG", "TODENSE", "h"), ("PFCOUNT", "h", "x")])
def test_watch_sees_what_redis_signals(strata_server, redis_server, cmd):
    results = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("FLUSHALL")
        c.call("PFADD", "h", "a")
        results.append(_watch_exec(server, *cmd))
    assert results[0] == results[1]


def _events(server, script):
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


def test_keyspace_events(strata_server, redis_server):
    script = [("PFADD", "h", "a"), ("PFADD", "h", "a"), ("PFADD", "h"), ("PFCOUNT", "h"),
              ("PFMERGE", "m", "h"), ("PFMERGE", "m"), ("PFDEBUG", "TODENSE", "h"),
              ("PFDEBUG", "GETREG", "m"), ("PFADD", "n"), ("SET", "s", "x"), ("PFADD", "s", "a")]
    got = _events(strata_server, script)
    assert got == _events(redis_server, script)
    assert (b"__keyevent@0__:pfadd", b"h") in got


def test_command_info_and_docs(both):
    for cmd in ["pfadd", "pfcount", "pfmerge", "pfdebug", "pfselftest"]:
        both("COMMAND", "INFO", cmd)
    both("COMMAND", "GETKEYS", "PFMERGE", "d", "a", "b")
    both("COMMAND", "GETKEYS", "PFMERGE", "d")  # no source: Redis calls the specs invalid
    both("COMMAND", "GETKEYS", "PFCOUNT", "a", "b")
    both("COMMAND", "GETKEYS", "PFDEBUG", "GETREG", "k")


# --- persistence and replication ----------------------------------------------------------------


def test_hll_survives_a_restart(start_strata):
    server = start_strata(appendfsync="always")
    c = server.client()
    c.pfadd("h", *[f"x{i}" for i in range(3000)])
    c.pfcount("h")
    value = c.get("h")
    server.restart(kill=True)
    c = server.client()
    assert c.get("h") == value
    assert c.pfcount("h") == int.from_bytes(value[8:16], "little")


def test_dense_pfadds_survive_kill_9_with_appendfsync_always(start_strata):
    server = start_strata(appendfsync="always")
    c = server.client()
    c.pfadd("h", *[f"x{i}" for i in range(5000)])
    for i in range(300):
        c.pfadd("h", f"y{i}")
    c.expire("h", 100000)
    c.pfadd("h", "z1", "z2")
    value = c.get("h")
    assert value[4] == 0 and value[15] & 0x80  # dense, cache invalidated by the last PFADD
    server.restart(kill=True)
    c = server.client()
    assert c.get("h") == value
    assert c.ttl("h") > 0
    c.pfcount("h")
    value = c.get("h")
    server.restart(kill=True)
    assert server.client().get("h") == value


def test_replica_receives_dense_pfadds_byte_for_byte(start_strata):
    leader_server, replica_server = start_strata(), start_strata()
    leader, replica = leader_server.client(), replica_server.client()
    replica.execute_command("REPLICAOF", "127.0.0.1", str(leader_server.port))
    _wait("the link", lambda: replica.info("replication").get("master_link_status") == "up")
    leader.pfadd("h", *[f"x{i}" for i in range(5000)])
    for i in range(300):
        leader.pfadd("h", f"y{i}")
    leader.pfcount("h")
    leader.pfadd("h", "z")
    _wait("the PFADDs", lambda: replica.get("h") == leader.get("h"))
    assert replica.pfcount("h") == leader.pfcount("h")


def _wait(what, predicate, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except redis.RedisError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_replica_follows_and_pfcount_on_a_replica_writes_nothing(start_strata):
    leader_server, replica_server = start_strata(), start_strata()
    leader, replica = leader_server.client(), replica_server.client()
    replica.execute_command("REPLICAOF", "127.0.0.1", str(leader_server.port))
    _wait("the link", lambda: replica.info("replication").get("master_link_status") == "up")
    leader.pfadd("h", *[f"x{i}" for i in range(100)])
    _wait("the PFADD", lambda: replica.get("h") == leader.get("h"))
    # The replica counts without writing its cache: its data changes only with the leader's.
    offset = replica.info("replication")["slave_repl_offset"]
    count = replica.pfcount("h")
    assert replica.get("h") == leader.get("h")
    assert replica.get("h")[15] & 0x80
    # The leader's PFCOUNT writes the cache, and that write replicates.
    assert leader.pfcount("h") == count
    _wait("the cache", lambda: replica.get("h") == leader.get("h"))
    assert replica.info("replication")["slave_repl_offset"] > offset
    leader.pfadd("h", *[f"y{i}" for i in range(5000)])
    leader.pfmerge("m", "h")
    _wait("the merge", lambda: replica.get("m") == leader.get("m"))
    assert replica.pfcount("m") == leader.pfcount("m")
    with pytest.raises(redis.ResponseError, match="read only replica"):
        replica.pfadd("h", "z")

