"""Live migration: a Strata replica following a real Redis 7.0 leader (REPLICAOF <redis> <port>).

Each test starts its own redis-server leader on a free port in a temp dir and a Strata replica of
it, then compares the two data sets key by key (type-aware reads, TTLs within a margin) once
Strata's processed offset has reached the leader's master_repl_offset. A fake leader written
here checks the protocol details Redis can't be made to produce (a command Strata doesn't know,
the exact GETACK offset).
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
import redis

from harness import redis_is_strata
from replication_helpers import info, wait_for

pytestmark = pytest.mark.skipif(redis_is_strata(), reason="Strata-specific: a Strata replica of a Redis leader")

DATABASES = (0, 1, 2, 5)
SYNC_TIMEOUT = 60


def snapshot(server, dbs=DATABASES) -> dict:
    """Every key of `dbs` with its type, value and TTL (ms, -1 without, rounded to seconds)."""
    out = {}
    for db in dbs:
        with server.client(db=db) as c:
            for key in sorted(c.scan_iter(count=1000)):
                kind = c.type(key)
                if kind == b"string":
                    value = c.get(key)
                elif kind == b"hash":
                    value = sorted(c.hgetall(key).items())
                elif kind == b"list":
                    value = c.lrange(key, 0, -1)
                elif kind == b"set":
                    value = sorted(c.smembers(key))
                elif kind == b"zset":
                    value = c.zrange(key, 0, -1, withscores=True)
                elif kind == b"none":
                    continue
                else:
                    value = c.dump(key)
                ttl = c.pttl(key)
                out[(db, key)] = (kind, value, -1 if ttl < 0 else round(ttl / 2000))
    return out


def assert_same_data(redis_leader, strata, dbs=DATABASES):
    theirs, ours = snapshot(redis_leader, dbs), snapshot(strata, dbs)
    missing = sorted(set(theirs) - set(ours))[:10]
    extra = sorted(set(ours) - set(theirs))[:10]
    assert not missing and not extra, f"keys only in Redis: {missing}; only in Strata: {extra}"
    for k in theirs:
        t, o = theirs[k], ours[k]
        assert t[:2] == o[:2], f"{k}: Redis {t[:2]!r:.300} Strata {o[:2]!r:.300}"
        assert abs(t[2] - o[2]) <= 1 if t[2] >= 0 else o[2] == -1, f"{k} TTL: Redis {t[2]} Strata {o[2]}"
    return len(theirs)


def caught_up(redis_leader, strata) -> bool:
    leader = info(redis_leader)["master_repl_offset"]
    mine = info(strata)
    return mine.get("master_link_status") == "up" and mine.get("slave_repl_offset") == leader


def wait_caught_up(redis_leader, strata, timeout=SYNC_TIMEOUT):
    wait_for("the Strata replica to reach the Redis leader's offset",
             lambda: caught_up(redis_leader, strata), timeout,
             on_timeout=lambda: strata.log_tail(30))


def replica_of(start_strata, leader, **directives):
    strata = start_strata(replicaof=f"127.0.0.1 {leader.port}", **directives)
    wait_caught_up(leader, strata)
    return strata


def fill_every_type(server, n=300):
    """Strings, hashes, lists, sets and zsets in their small and large encodings, with TTLs,
    a bitmap and a HyperLogLog, in several databases."""
    for db in DATABASES:
        with server.client(db=db) as c:
            fill_db(c, db, n)


def fill_db(c, db, n):
    if True:
        p = c.pipeline(transaction=False)
        p.set("s:int", 12345)
        p.set("s:raw", "hello world")
        p.set("s:big", b"x" * 300_000)
        p.set("s:ttl", "soon", ex=500)
        p.set("s:pttl", "later", px=900_000)
        p.hset("h:small", mapping={"a": 1, "b": "two"})
        p.hset("h:big", mapping={f"f{i}": f"v{i}" * 3 for i in range(n)})
        p.hset("h:bigvalue", mapping={"v": "y" * 100})
        p.rpush("l:small", 1, "two", 3)
        p.rpush("l:big", *[f"item{i}" for i in range(n)])
        p.sadd("set:int", *range(50))
        p.sadd("set:small", "a", "b", "c")
        p.sadd("set:big", *[f"m{i}" for i in range(n)])
        p.zadd("z:small", {"a": 1, "b": 2.5, "c": -3})
        p.zadd("z:big", {f"m{i}": i / 7 for i in range(n)})
        p.setbit("bits", 1000, 1)
        p.pfadd("hll", *[f"e{i}" for i in range(100)])
        p.expire("h:big", 1000)
        p.expire("z:small", 2000)
        p.set(f"only-in-{db}", db)
        p.execute()


@pytest.fixture
def leader(start_redis, tmp_path):
    return start_redis(**{"repl-diskless-sync": "no", "repl-diskless-sync-delay": "0"})


def test_full_sync_copies_every_type_in_every_database(leader, start_strata):
    fill_every_type(leader)
    strata = replica_of(start_strata, leader)
    assert assert_same_data(leader, strata) > 60
    r = info(strata)
    assert r["role"] == "slave" and r["master_port"] == leader.port
    assert r["master_replid"] == info(leader)["master_replid"]
    with strata.client() as s:
        role = s.execute_command("ROLE")
        assert role[:4] == [b"slave", b"127.0.0.1", leader.port, b"connected"]
        assert role[4] == info(leader)["master_repl_offset"]
        assert b"flags=M" in s.execute_command("CLIENT", "LIST", "TYPE", "master")
        with pytest.raises(Exception, match="read only replica"):
            s.set("k", "v")
    assert info(leader)["connected_slaves"] == 1


def test_diskless_sync_with_eof_mark(start_redis, start_strata):
    leader = start_redis(**{"repl-diskless-sync": "yes", "repl-diskless-sync-delay": "0"})
    fill_every_type(leader)
    strata = replica_of(start_strata, leader)
    assert assert_same_data(leader, strata) > 60
    assert "EOF" in leader.log_path.read_text() or "diskless" in leader.log_path.read_text().lower()


def test_existing_data_is_replaced_by_the_leaders(leader, start_strata):
    strata = start_strata()
    with strata.client() as s:
        s.set("stale", "gone after the sync")
    with strata.client(db=3) as s:
        s.set("stale3", "x")
    with leader.client() as c:
        c.set("fresh", "1")
    with strata.client() as s:
        assert s.execute_command("REPLICAOF", "127.0.0.1", leader.port) == b"OK"
    wait_caught_up(leader, strata)
    assert assert_same_data(leader, strata, dbs=range(16)) == 1


def lua_and_transactions(c):
    c.set("counter", 10)
    p = c.pipeline(transaction=True)
    p.incr("counter")
    p.lpush("tx:list", "a", "b")
    p.hset("tx:hash", "f", "v")
    p.zadd("tx:z", {"m": 3})
    p.execute()
    c.eval("redis.call('set', KEYS[1], ARGV[1]); redis.call('incrby', KEYS[2], 5); "
           "redis.call('sadd', KEYS[3], 'x', 'y'); return 1", 3, "lua:s", "counter", "lua:set", "val")
    sha = c.script_load("redis.call('rpush', KEYS[1], ARGV[1]); return redis.call('llen', KEYS[1])")
    c.evalsha(sha, 1, "lua:list", "one")
    c.evalsha(sha, 1, "lua:list", "two")
    c.execute_command("FUNCTION", "LOAD",
                      "#!lua name=mig\nredis.register_function('bump', function(keys, args) "
                      "return redis.call('incrby', keys[1], args[1]) end)")
    c.execute_command("FCALL", "bump", 1, "fn:counter", 7)


def test_the_command_stream_after_the_sync(leader, start_strata):
    fill_every_type(leader)
    strata = replica_of(start_strata, leader)
    with leader.client() as c:
        c.set("a", 1)
        c.incrbyfloat("f", "1.5")
        c.append("a", "xyz")
        c.hset("h:small", "c", 3)
        c.hdel("h:big", "f1", "f2")
        c.lpush("l:small", "z")
        c.ltrim("l:big", 10, -10)
        c.lmove("l:small", "l:dest", "LEFT", "RIGHT")
        c.srem("set:big", "m1")
        c.smove("set:small", "set:other", "a")
        c.zincrby("z:big", 10, "m5")
        c.zpopmin("z:small")
        c.set("ex", "v", ex=300)
        c.getex("s:raw", ex=600)
        c.persist("s:pttl")
        c.expireat("h:small", int(time.time()) + 800)
        c.execute_command("SET", "kept", "v", "KEEPTTL")
        c.rename("s:int", "s:renamed")
        c.copy("s:raw", "s:copy")
        c.setrange("a", 1, "Q")
        c.execute_command("BITFIELD", "bf", "SET", "u8", 0, 200)
        c.pfadd("hll", "new")
        c.spop("set:int", 3)
        c.delete("z:big")
        lua_and_transactions(c)
        with leader.client(db=2) as c2:
            c2.set("db2:new", "x")
            c2.flushdb()
            c2.set("db2:after-flush", "y")
        with leader.client(db=5) as c5:
            c5.lpush("db5:list", 1)
        # Keys that expire on the leader reach the replica as DEL/UNLINK.
        for i in range(20):
            c.set(f"short{i}", i, px=50)
        time.sleep(0.3)
        for i in range(20):
            c.get(f"short{i}")
    wait_caught_up(leader, strata)
    assert assert_same_data(leader, strata) > 60
    with strata.client() as s:
        assert s.get("fn:counter") == b"7"
        assert s.get("counter") == b"16"
        assert s.lrange("lua:list", 0, -1) == [b"one", b"two"]
        assert s.exists(*[f"short{i}" for i in range(20)]) == 0
    r = info(strata)
    assert r["slave_repl_skipped_commands"] == 0, strata.log_tail(20)


def test_wait_on_the_leader_counts_the_strata_replica(leader, start_strata):
    strata = replica_of(start_strata, leader)
    with leader.client() as c:
        for i in range(50):
            c.set(f"k{i}", i)
        started = time.monotonic()
        assert c.execute_command("WAIT", 1, 5000) == 1
        assert time.monotonic() - started < 4
        # The ACK every second keeps the replica's lag at 0 or 1 on the leader.
        lag = wait_for("an ACK", lambda: info(leader).get("slave0"), 10)
        assert lag["offset"] == info(leader)["master_repl_offset"] or lag["lag"] <= 1
    assert info(strata)["slave_repl_offset"] == info(leader)["master_repl_offset"]


def test_a_dropped_link_resumes_with_a_partial_resync(leader, start_strata):
    fill_every_type(leader)
    strata = replica_of(start_strata, leader)
    before = info(leader, "stats")
    for round in range(3):
        # The stream's last SELECT was database 5: Redis does not send it again after +CONTINUE.
        with leader.client(db=5) as c5:
            c5.set("before-the-drop", round)
        wait_caught_up(leader, strata)
        with strata.client() as s:
            assert s.execute_command("CLIENT", "KILL", "TYPE", "master") == 1
        with leader.client(db=5) as c5:
            c5.incr("after-the-drop")
        with leader.client() as c:
            for i in range(100):
                c.set(f"r{round}:{i}", i)
            c.hset("h:small", f"round{round}", 1)
        wait_caught_up(leader, strata)
    after = info(leader, "stats")
    assert after["sync_full"] == before["sync_full"]
    assert after["sync_partial_ok"] >= before["sync_partial_ok"] + 3
    assert assert_same_data(leader, strata) > 60


def test_a_restarted_strata_replica_continues_where_it_stopped(leader, start_strata):
    fill_every_type(leader)
    strata = replica_of(start_strata, leader)
    with leader.client(db=2) as c2:
        c2.set("last-write-in-db-2", 1)
    wait_caught_up(leader, strata)
    full = info(leader, "stats")["sync_full"]
    strata.stop()
    with leader.client(db=2) as c2:
        c2.rpush("while-away-in-db-2", 1)
    with leader.client() as c:
        for i in range(200):
            c.rpush("while-away", i)
    strata.start()
    wait_caught_up(leader, strata)
    stats = info(leader, "stats")
    assert stats["sync_full"] == full, "a clean restart continues with PSYNC <replid> <offset>"
    assert stats["sync_partial_ok"] >= 1
    assert assert_same_data(leader, strata) > 60
    # After a crash the offset is not trusted: a full copy.
    strata.kill9()
    with leader.client() as c:
        c.incr("after-crash")
    strata.start()
    wait_caught_up(leader, strata)
    assert info(leader, "stats")["sync_full"] == full + 1
    assert assert_same_data(leader, strata) > 60


def test_a_restarted_redis_leader_is_followed_again(leader, start_strata):
    fill_every_type(leader)
    strata = replica_of(start_strata, leader)
    replid = info(leader)["master_replid"]
    with leader.client() as c:
        with pytest.raises(redis.exceptions.ConnectionError):
            c.execute_command("SHUTDOWN", "SAVE")
    leader.wait_exit()
    leader.start(new_port=False)
    # Redis 7.0 keeps its replication id and offset in the RDB saved at shutdown (it shows a
    # new id, the old one as master_replid2): the Strata replica continues with a partial resync.
    assert info(leader)["master_replid2"] == replid
    with leader.client() as c:
        c.set("after-restart", "1")
    wait_for("a partial resync", lambda: info(leader, "stats")["sync_partial_ok"] == 1, SYNC_TIMEOUT)
    wait_caught_up(leader, strata)
    assert info(leader, "stats")["sync_full"] == 0
    assert assert_same_data(leader, strata) > 60


def test_auth_with_masterauth_and_masteruser(start_redis, start_strata):
    leader = start_redis(requirepass="s3cret")
    with leader.client(password="s3cret") as c:
        c.set("secret", "data")
        c.execute_command("ACL", "SETUSER", "repl", "on", ">replpass", "+@all", "~*", "&*")
    strata = start_strata(replicaof=f"127.0.0.1 {leader.port}", masterauth="s3cret")
    wait_for("the link", lambda: info(strata)["master_link_status"] == "up", SYNC_TIMEOUT)
    with strata.client() as s:
        assert s.get("secret") == b"data"
    strata2 = start_strata(replicaof=f"127.0.0.1 {leader.port}", masteruser="repl", masterauth="replpass")
    wait_for("the link", lambda: info(strata2)["master_link_status"] == "up", SYNC_TIMEOUT)
    with strata2.client() as s:
        assert s.get("secret") == b"data"
    bad = start_strata(replicaof=f"127.0.0.1 {leader.port}", masterauth="wrong")
    time.sleep(1.5)
    assert info(bad)["master_link_status"] == "down"
    assert "AUTH" in bad.log_path.read_text()


def test_replicaof_no_one_promotes_with_the_data(leader, start_strata):
    fill_every_type(leader)
    strata = replica_of(start_strata, leader)
    expected = snapshot(leader)
    with strata.client() as s:
        assert s.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        assert s.execute_command("ROLE")[0] == b"master"
    with leader.client() as c:
        c.set("after-cutover", "not copied")
    time.sleep(0.5)
    ours = snapshot(strata)
    assert set(ours) == set(expected)
    with strata.client() as s:
        assert s.set("new", "write") is True
        assert s.get("after-cutover") is None
    assert info(leader)["connected_slaves"] == 0


def test_under_a_steady_write_load_the_replica_ends_identical(leader, start_strata):
    strata = replica_of(start_strata, leader)
    stop = threading.Event()

    def load(worker):
        with leader.client() as c:
            i = 0
            while not stop.is_set():
                p = c.pipeline(transaction=worker % 2 == 0)
                p.set(f"w{worker}:s{i % 500}", i)
                p.hincrby(f"w{worker}:h", f"f{i % 50}", 1)
                p.rpush(f"w{worker}:l", i)
                p.ltrim(f"w{worker}:l", -100, -1)
                p.zadd(f"w{worker}:z", {f"m{i % 300}": i})
                p.sadd(f"w{worker}:set", i % 200)
                p.execute()
                c.eval("redis.call('incr', KEYS[1]) return 1", 1, f"w{worker}:lua")
                i += 1

    threads = [threading.Thread(target=load, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    time.sleep(2)
    with strata.client() as s:
        s.execute_command("CLIENT", "KILL", "TYPE", "master")
    time.sleep(2)
    stop.set()
    for t in threads:
        t.join()
    wait_caught_up(leader, strata)
    assert assert_same_data(leader, strata, dbs=(0,)) > 10


# -- a fake leader, for what a real Redis can't be made to send --------------------------------

def tiny_rdb() -> bytes:
    """An RDB file with one string key `k` = `v`, without checksum."""
    return b"REDIS0010" + b"\xfe\x00" + b"\x00\x01k\x01v" + b"\xff" + b"\x00" * 8


def cmd(*args) -> bytes:
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_an_unknown_command_is_skipped_and_getack_reports_the_offset(start_strata):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    strata = start_strata(replicaof=f"127.0.0.1 {port}")
    listener.settimeout(10)
    conn, _ = listener.accept()
    conn.settimeout(10)
    f = conn.makefile("rb")

    def read_command():
        n = int(f.readline()[1:])
        args = []
        for _ in range(n):
            size = int(f.readline()[1:])
            args.append(f.read(size + 2)[:-2])
        return args

    replid = "a" * 40
    try:
        while True:
            args = read_command()
            name = args[0].upper()
            if name == b"PSYNC":
                assert args[1:] == [b"?", b"-1"]
                break
            conn.sendall(b"+PONG\r\n" if name == b"PING" else b"+OK\r\n")
        rdb = tiny_rdb()
        conn.sendall(b"+FULLRESYNC %s 1000\r\n\n\n$%d\r\n%s" % (replid.encode(), len(rdb), rdb))
        stream = cmd("SELECT", 0) + cmd("NOSUCHCOMMAND", "x") + cmd("SET", "after", "1") + cmd("PING")
        conn.sendall(stream)
        getack = cmd("REPLCONF", "GETACK", "*")
        conn.sendall(getack)
        # ACKs: the first after the sync (1000), then the one answering GETACK.
        expected = 1000 + len(stream)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            args = read_command()
            assert args[:2] == [b"REPLCONF", b"ACK"]
            if int(args[2]) == expected:
                break
        else:
            pytest.fail("no ACK with the offset before GETACK")
        # The periodic ACK then includes the GETACK itself.
        while True:
            args = read_command()
            if int(args[2]) == expected + len(getack):
                break
        with strata.client() as s:
            assert s.get("k") == b"v"
            assert s.get("after") == b"1"
            r = s.info("replication")
            assert r["slave_repl_skipped_commands"] == 1
            assert r["slave_repl_offset"] == expected + len(getack)
            assert r["master_replid"] == replid
        assert "NOSUCHCOMMAND" in strata.log_path.read_text()
    finally:
        conn.close()
        listener.close()
