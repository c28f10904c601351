"""Replication between real servers on loopback ports: REPLICAOF with a full copy and partial
resyncs, every data type and database reaching the replica, read-only replicas, promotion, WAIT,
ROLE and INFO, crashes of either side, expiry following the leader, PUBLISH reaching replicas'
subscribers, and the min-replicas / stale-data gates.

The same tests run against real Redis in the self-check mode (STRATA_SERVER_IS_REDIS=1)."""

import threading
import time

import pytest
import redis

from harness import redis_is_strata


def wait_for(predicate, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (redis.ConnectionError, redis.ResponseError) as e:
            last = e
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def info(c, section="replication"):
    return c.info(section)


def link_up(replica):
    return info(replica).get("master_link_status") == "up"


def caught_up(leader, replica):
    """The replica is linked and has applied everything the leader has written."""
    if not link_up(replica):
        return False
    return info(replica)["slave_repl_offset"] >= info(leader)["master_repl_offset"]


def follow(replica, leader_server):
    replica.execute_command("REPLICAOF", "127.0.0.1", str(leader_server.port))


def snapshot(c, databases=(0, 1, 2, 3)):
    """Every key of the given databases: type, value and whether it has a TTL."""
    out = {}
    for db in databases:
        c.execute_command("SELECT", db)
        for key in c.scan_iter(count=500):
            kind = c.type(key)
            if kind == b"string":
                value = c.get(key)
            elif kind == b"hash":
                value = c.hgetall(key)
            elif kind == b"list":
                value = c.lrange(key, 0, -1)
            elif kind == b"set":
                value = sorted(c.smembers(key))
            elif kind == b"zset":
                value = c.zrange(key, 0, -1, withscores=True)
            else:
                value = None
            ttl = c.pttl(key)
            out[(db, key)] = (kind, value, ttl > 0)
    c.execute_command("SELECT", 0)
    return out


def mixed_workload(c, n=200, prefix="k"):
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}:s:{i}", f"v{i}" * (i % 5 + 1))
        if i % 4 == 0:
            p.hset(f"{prefix}:h:{i % 20}", f"f{i}", i)
        if i % 5 == 0:
            p.rpush(f"{prefix}:l:{i % 10}", f"item{i}")
        if i % 6 == 0:
            p.sadd(f"{prefix}:set:{i % 7}", f"m{i}")
        if i % 7 == 0:
            p.zadd(f"{prefix}:z:{i % 3}", {f"m{i}": i / 3})
        if i % 9 == 0:
            p.expire(f"{prefix}:s:{i}", 1000)
        if i % 11 == 0:
            p.delete(f"{prefix}:s:{i - 1}")
    p.execute()
    c.set(b"bin\x00\xff\r\n", bytes(range(256)))
    c.incrbyfloat(f"{prefix}:float", "1.5")
    c.execute_command("SELECT", 2)
    c.set(f"{prefix}:db2", "two")
    c.hset(f"{prefix}:db2h", mapping={"a": "1", "b": "2"})
    c.execute_command("SELECT", 0)
    # A transaction and a script.
    t = c.pipeline(transaction=True)
    t.incr(f"{prefix}:counter").lpush(f"{prefix}:tx", "a", "b").hincrby(f"{prefix}:h:0", "n", 5)
    t.execute()
    c.eval("redis.call('set', KEYS[1], ARGV[1]); return redis.call('zadd', KEYS[2], 1, 'x')",
           2, f"{prefix}:script", f"{prefix}:z:0", "from-script")
    c.execute_command("SWAPDB", 2, 3)


@pytest.fixture
def pair(start_strata):
    """A leader with data and an empty replica following it, caught up."""
    leader_server = start_strata()
    replica_server = start_strata()
    leader = leader_server.client()
    replica = replica_server.client()
    mixed_workload(leader)
    follow(replica, leader_server)
    wait_for(lambda: caught_up(leader, replica), what="the replica to catch up")
    return leader_server, replica_server, leader, replica


def test_replica_gets_every_type_database_and_ttl_by_full_copy_then_stream(pair):
    leader_server, replica_server, leader, replica = pair
    assert snapshot(replica) == snapshot(leader)
    # Later writes stream.
    mixed_workload(leader, n=100, prefix="later")
    leader.execute_command("FLUSHDB")  # db 0 emptied on both
    leader.set("after-flush", "x")
    wait_for(lambda: caught_up(leader, replica), what="the stream")
    assert snapshot(replica) == snapshot(leader)
    assert replica.get("after-flush") == b"x"
    assert info(leader, "stats")["sync_full"] == 1


@pytest.mark.parametrize("how", ["shutdown", "kill9"])
def test_a_full_copy_keeps_the_leaders_swapped_databases_across_a_restart(pair, how):
    # The pair's leader ran SWAPDB 2 3 before the copy: the map that says so is loaded without
    # the log, so it must reach the data files before the load is declared done.
    leader_server, replica_server, leader, replica = pair
    assert replica.execute_command("SELECT", 3) and replica.get("k:db2") == b"two"
    if how == "kill9":
        replica_server.kill9()
    else:
        replica_server.stop()
    replica_server.directives.pop("replicaof", None)
    replica_server.start()
    replica = replica_server.client()
    assert snapshot(replica) == snapshot(leader)


def test_replica_refuses_writes_but_serves_reads(pair):
    _, replica_server, leader, replica = pair
    with pytest.raises(redis.ResponseError, match="^You can't write against a read only replica.$"):
        replica.set("x", "1")
    with pytest.raises(redis.ResponseError, match="read only replica"):
        replica.eval("return redis.call('set', 'x', '1')", 0)
    # Inside MULTI the write is refused at queue time and EXEC aborts.
    with replica_server.conn() as raw:
        assert raw.call("MULTI") == b"OK"
        assert raw.call("GET", "k:s:1") == b"QUEUED"
        assert raw.call_raw("SET", "x", "1") == b"-READONLY You can't write against a read only replica.\r\n"
        assert raw.call_raw("EXEC").startswith(b"-EXECABORT")
    assert replica.get("k:s:1") == leader.get("k:s:1")
    assert replica.execute_command("ROLE")[0] == b"slave"


def test_role_and_info_describe_both_sides(pair):
    leader_server, replica_server, leader, replica = pair
    role = leader.execute_command("ROLE")
    assert role[0] == b"master"
    assert isinstance(role[1], int)
    assert role[2] == [[b"127.0.0.1", str(replica_server.port).encode(), str(role[2][0][2].decode()).encode()]]
    r = replica.execute_command("ROLE")
    assert r[:4] == [b"slave", b"127.0.0.1", leader_server.port, b"connected"]
    li, ri = info(leader), info(replica)
    assert li["role"] == "master" and li["connected_slaves"] == 1
    assert li["slave0"]["port"] == replica_server.port
    assert li["slave0"]["state"] == "online"
    assert ri["role"] == "slave" and ri["master_port"] == leader_server.port
    assert ri["master_link_status"] == "up"
    assert ri["master_replid"] == li["master_replid"]
    assert ri["slave_read_only"] == 1
    assert replica.execute_command("REPLICAOF", "127.0.0.1", str(leader_server.port)) == \
        b"OK Already connected to specified master"


def test_replicaof_arguments_are_checked_as_redis_does(strata):
    with pytest.raises(redis.ResponseError, match="^Invalid master port$"):
        strata.execute_command("REPLICAOF", "127.0.0.1", "70000")
    with pytest.raises(redis.ResponseError, match="^Invalid master port$"):
        strata.execute_command("SLAVEOF", "127.0.0.1", "abc")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        strata.execute_command("REPLICAOF", "127.0.0.1")
    assert strata.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
        strata.execute_command("WAIT", "1", "-1")
    assert strata.execute_command("WAIT", "0", "0") == 0
    with pytest.raises(redis.ResponseError, match="^Unrecognized REPLCONF option: foo$"):
        strata.execute_command("REPLCONF", "foo", "bar")


def test_wait_counts_replicas_that_have_the_writes(pair):
    _, _, leader, replica = pair
    leader.set("w", "1")
    assert leader.execute_command("WAIT", "1", "5000") == 1
    assert replica.get("w") == b"1"
    # Only one replica exists: asking for two waits for the timeout, then answers 1.
    started = time.monotonic()
    assert leader.execute_command("WAIT", "2", "300") == 1
    assert time.monotonic() - started >= 0.25
    with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica instances"):
        replica.execute_command("WAIT", "1", "10")


def test_promoted_replica_keeps_data_and_accepts_writes_and_replicas(pair, start_strata):
    leader_server, replica_server, leader, replica = pair
    before = snapshot(leader)
    assert replica.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    assert replica.execute_command("ROLE")[0] == b"master"
    assert snapshot(replica) == before
    replica.set("new-leader-write", "1")
    # A replica of the promoted server, and the old leader's writes no longer arrive.
    leader.set("old-leader-write", "1")
    third_server = start_strata()
    third = third_server.client()
    follow(third, replica_server)
    wait_for(lambda: caught_up(replica, third), what="the new replica")
    assert third.get("new-leader-write") == b"1"
    assert replica.get("old-leader-write") is None
    assert snapshot(third) == snapshot(replica)


@pytest.mark.skipif(redis_is_strata(), reason="Redis 7 replicas lose their offset on kill -9 (no RDB "
                    "written) and need a full sync; Strata keeps it with the data")
def test_replica_restarted_after_kill9_resumes_with_a_partial_resync(pair):
    leader_server, replica_server, leader, replica = pair
    full_before = info(leader, "stats")["sync_full"]
    partial_before = info(leader, "stats")["sync_partial_ok"]
    replica_server.kill9()
    mixed_workload(leader, n=300, prefix="while-down")
    replica_server.directives["replicaof"] = f"127.0.0.1 {leader_server.port}"
    replica_server.start()
    replica = replica_server.client()
    wait_for(lambda: caught_up(leader, replica), what="the restarted replica")
    assert snapshot(replica) == snapshot(leader)
    stats = info(leader, "stats")
    assert stats["sync_full"] == full_before
    assert stats["sync_partial_ok"] == partial_before + 1


def test_leader_killed_mid_stream_then_restarted_is_followed_again_with_equal_data(pair):
    leader_server, replica_server, leader, replica = pair
    stop = threading.Event()
    errors = []

    def writer():
        c = redis.Redis(port=leader_server.port, socket_timeout=5)
        i = 0
        while not stop.is_set():
            try:
                c.set(f"stream:{i}", i)
                c.hincrby("stream:h", f"f{i % 50}", 1)
                i += 1
            except redis.ConnectionError:
                return
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
                return

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.5)
    leader_server.kill9()
    stop.set()
    t.join(10)
    assert not errors
    leader_server.start(new_port=False)
    leader = leader_server.client()
    leader.set("after-crash", "1")
    wait_for(lambda: caught_up(leader, replica), timeout=30, what="the replica after the crash")
    assert snapshot(replica) == snapshot(leader)


def test_full_copy_while_the_leader_keeps_taking_writes(start_strata):
    leader_server = start_strata()
    replica_server = start_strata()
    leader = leader_server.client()
    replica = replica_server.client()
    p = leader.pipeline(transaction=False)
    for i in range(20000):
        p.set(f"bulk:{i}", "x" * 100)
        if i % 2000 == 1999:
            p.execute()
    p.execute()
    stop = threading.Event()

    def writer():
        c = redis.Redis(port=leader_server.port)
        i = 0
        while not stop.is_set():
            c.incr("live-counter")
            c.rpush("live-list", i)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        follow(replica, leader_server)
        wait_for(lambda: link_up(replica), what="the copy")
        time.sleep(0.3)
    finally:
        stop.set()
        t.join(10)
    wait_for(lambda: caught_up(leader, replica), what="the stream after the copy")
    assert replica.dbsize() == leader.dbsize()
    assert info(leader, "stats")["sync_full"] == 1, "sustained writes forced no second full copy"
    assert replica.get("live-counter") == leader.get("live-counter")
    assert replica.lrange("live-list", 0, -1) == leader.lrange("live-list", 0, -1)


def test_expiry_follows_the_leader_and_expired_keys_read_as_missing(pair):
    _, _, leader, replica = pair
    leader.set("short", "1", px=300)
    leader.set("long", "1", ex=1000)
    wait_for(lambda: caught_up(leader, replica), what="the TTLs")
    assert replica.get("short") == b"1"
    assert 0 < replica.pttl("long") <= 1000 * 1000
    time.sleep(0.5)
    # Logically expired: missing on both, whether or not the leader has deleted it yet.
    assert replica.get("short") is None
    assert replica.exists("short") == 0
    wait_for(lambda: leader.dbsize() == replica.dbsize(), what="the leader's expiry to reach the replica")


def test_published_messages_reach_subscribers_on_replicas(pair):
    _, _, leader, replica = pair
    sub = replica.pubsub()
    sub.subscribe("news")
    wait_for(lambda: sub.get_message(timeout=0.1) is not None, what="the subscription")
    leader.publish("news", "hello")
    msg = wait_for(lambda: sub.get_message(timeout=0.1), what="the message on the replica")
    assert msg["data"] == b"hello"
    sub.close()


def test_functions_loaded_on_the_leader_run_on_the_replica(pair):
    _, _, leader, replica = pair
    leader.execute_command(
        "FUNCTION", "LOAD",
        "#!lua name=replib\nredis.register_function{function_name='rget', callback=function(k) "
        "return redis.call('get', k[1]) end, flags={'no-writes'}}")
    leader.set("fk", "fv")
    wait_for(lambda: caught_up(leader, replica), what="the library")
    assert replica.execute_command("FCALL_RO", "rget", 1, "fk") == b"fv"


def test_min_replicas_to_write_refuses_writes_without_enough_good_replicas(start_strata):
    s = start_strata(**{"min-replicas-to-write": "1", "min-replicas-max-lag": "10"})
    c = s.client()
    with pytest.raises(redis.ResponseError, match="^(NOREPLICAS )?Not enough good replicas to write.$"):
        c.set("x", "1")
    assert c.get("x") is None
    c.config_set("min-replicas-to-write", "0")
    assert c.set("x", "1")


def test_stale_replica_with_serve_stale_data_no_answers_masterdown(start_strata):
    leader_server = start_strata()
    replica_server = start_strata(**{"replica-serve-stale-data": "no"})
    replica = replica_server.client()
    leader_server.client().set("k", "v")
    follow(replica, leader_server)
    wait_for(lambda: link_up(replica), what="the link")
    assert replica.get("k") == b"v"
    leader_server.kill9()
    wait_for(lambda: not link_up(replica), what="the link to drop")
    with pytest.raises(redis.ResponseError, match="^(MASTERDOWN )?Link with MASTER is down and replica-serve-stale-data is set to 'no'.$"):
        replica.get("k")
    with pytest.raises(redis.ResponseError, match="MASTERDOWN"):
        replica.ping()  # PING is not a stale-allowed command in Redis either
    assert info(replica)["master_link_status"] == "down"


def test_replicaof_is_kept_by_config_rewrite(start_strata, tmp_path):
    conf = tmp_path / "strata.conf"
    conf.write_text("appendfsync everysec\n")
    leader_server = start_strata()
    replica_server = start_strata(config_file=str(conf))
    replica = replica_server.client()
    follow(replica, leader_server)
    assert replica.config_get("replicaof") == {"replicaof": f"127.0.0.1 {leader_server.port}"}
    replica.config_rewrite()
    assert f"replicaof 127.0.0.1 {leader_server.port}" in conf.read_text()
    wait_for(lambda: link_up(replica), what="the link")
    replica.execute_command("REPLICAOF", "NO", "ONE")
    replica.config_rewrite()
    assert "replicaof" not in conf.read_text()


def race(leader, replica, stop, readers, writers):
    """Runs the `readers` (each looping until `stop` is set) beside the `writers` (function,
    args) against the leader, until the writers are done and the replica has caught up."""
    reading = [threading.Thread(target=r) for r in readers]
    writing = [threading.Thread(target=f, args=a) for f, a in writers]
    for t in reading + writing:
        t.start()
    for t in writing:
        t.join(60)
    wait_for(lambda: caught_up(leader, replica), what="the writes")
    stop.set()
    for t in reading:
        t.join(10)


def test_replica_readers_never_see_half_a_transaction_or_script(pair):
    leader_server, _, leader, replica = pair
    leader.mset({"acct:a": 0, "acct:b": 0})
    stop = threading.Event()
    problems = []

    def transactions(n):
        c = redis.Redis(port=leader_server.port)
        script = c.register_script(
            "redis.call('incr', KEYS[1]); redis.call('incr', KEYS[2]); return 1")
        for i in range(n):
            if i % 2:
                t = c.pipeline(transaction=True)
                t.incr("acct:a").incr("acct:b")
                t.execute()
            else:
                script(keys=["acct:a", "acct:b"])

    def reader():
        while not stop.is_set():
            a, b = replica.mget("acct:a", "acct:b")
            if a != b:
                problems.append((a, b))

    race(leader, replica, stop, [reader], [(transactions, (300,))] * 3)
    assert problems == []
    assert replica.mget("acct:a", "acct:b") == [b"900", b"900"]


def test_replica_readers_never_see_half_of_one_command_applied_mid_walk(pair):
    # One HSET of many fields is one write on the leader; a replica's HGETALL walking the hash
    # must see all of it or none of it, never the fields before its cursor old and after it new.
    leader_server, replica_server, leader, replica = pair
    fields = [f"f{j:03}" for j in range(500)]
    leader.hset("h", mapping={f: 0 for f in fields})
    wait_for(lambda: caught_up(leader, replica), what="the hash")
    stop = threading.Event()
    problems = []

    def writer(n):
        c = redis.Redis(port=leader_server.port)
        for i in range(1, n + 1):
            c.hset("h", mapping={f: i for f in fields})

    def reader():
        c = redis.Redis(port=replica_server.port)
        while not stop.is_set():
            seen = c.hgetall("h")
            if len(seen) != len(fields) or len(set(seen.values())) != 1:
                problems.append(sorted(set(seen.values())))

    race(leader, replica, stop, [reader] * 3, [(writer, (500,))])
    assert problems == []
    assert set(replica.hgetall("h").values()) == {b"500"}


def test_replica_readers_never_see_half_of_a_transaction_or_script_across_two_walks(pair):
    # SDIFF walks s1 and probes s2 for each member, a MULTI/EXEC of two SMEMBERS walks both: a
    # MULTI/EXEC or a script moving both sets alike (one member in, one out), applied on the
    # replica between a walk and a probe or between the two walks, must not show up as a
    # difference.
    leader_server, replica_server, leader, replica = pair
    base = [f"base{j}" for j in range(5000)]
    leader.sadd("s1", *base)
    leader.sadd("s2", *base)
    wait_for(lambda: caught_up(leader, replica), what="the sets")
    stop = threading.Event()
    problems = []

    def transactions(n, offset):
        c = redis.Redis(port=leader_server.port)
        script = c.register_script(
            "for _, k in ipairs(KEYS) do redis.call('sadd', k, ARGV[1]) end "
            "for _, k in ipairs(KEYS) do redis.call('srem', k, ARGV[2]) end return 1")
        for i in range(offset, offset + n):
            if i % 2:
                t = c.pipeline(transaction=True)
                t.sadd("s1", f"m{i}").sadd("s2", f"m{i}")
                t.srem("s1", f"base{i}").srem("s2", f"base{i}")
                t.execute()
            else:
                script(keys=["s1", "s2"], args=[f"m{i}", f"base{i}"])

    def reader():
        c = redis.Redis(port=replica_server.port)
        while not stop.is_set():
            for a, b in (("s1", "s2"), ("s2", "s1")):
                diff = c.sdiff(a, b)
                if diff:
                    problems.append((a, b, sorted(diff)))
            # A transaction's two walks, one after the other, are one moment too.
            one, two = c.pipeline(transaction=True).smembers("s1").smembers("s2").execute()
            if one != two:
                problems.append(("MULTI", sorted(one ^ two)))

    race(leader, replica, stop, [reader] * 3, [(transactions, (250, k * 250)) for k in range(3)])
    assert problems == []
    assert replica.smembers("s1") == replica.smembers("s2") == set(leader.smembers("s1"))
    assert replica.scard("s1") == 5000


def test_replica_authenticates_with_masterauth(start_strata):
    leader_server = start_strata(requirepass="s3cret")
    replica_server = start_strata()
    leader = leader_server.client(password="s3cret")
    replica = replica_server.client()
    leader.set("guarded", "1")
    follow(replica, leader_server)
    time.sleep(1.0)
    assert info(replica)["master_link_status"] == "down", "no password: the leader refuses it"
    replica.config_set("masterauth", "s3cret")
    wait_for(lambda: replica.get("guarded") == b"1", what="the authenticated link")
    assert info(replica)["master_link_status"] == "up"


def test_watch_on_a_replica_sees_the_leaders_writes(pair):
    _, replica_server, leader, replica = pair
    with replica_server.conn() as raw:
        assert raw.call("WATCH", "k:s:1") == b"OK"
        leader.set("k:s:1", "changed")
        wait_for(lambda: caught_up(leader, replica), what="the write")
        assert raw.call("MULTI") == b"OK"
        assert raw.call("GET", "k:s:1") == b"QUEUED"
        assert raw.call("EXEC") is None
