"""MULTI / EXEC / DISCARD / WATCH / UNWATCH, compared byte for byte with a real redis-server, and
a concurrency test showing that no reader ever sees part of a transaction."""

import threading
import time

import redis

from harness import Both


def other(strata_server, redis_server) -> Both:
    """A second client on both servers."""
    return Both(strata_server.conn(), redis_server.conn())


def test_multi_exec_queues_and_answers_each_command(both):
    both("RPUSH", "mylist", "a", "b", "c")
    both("MULTI")
    both("LRANGE", "mylist", "0", "-1")
    both("PING")
    both("INCR", "counter")
    both("EXEC")


def test_empty_transaction_answers_an_empty_array(both):
    both("MULTI")
    both("EXEC")


def test_discard_drops_the_queue(both):
    both("RPUSH", "mylist", "a", "b", "c")
    both("MULTI")
    both("DEL", "mylist")
    both("DISCARD")
    both("LRANGE", "mylist", "0", "-1")


def test_exec_and_discard_without_multi_are_errors(both):
    both("EXEC")
    both("DISCARD")


def test_nested_multi_is_refused_without_aborting(both):
    both("MULTI")
    both("MULTI")
    both("SET", "k", "v")
    both("EXEC")
    both("GET", "k")


def test_watch_inside_multi_is_refused(both):
    both("MULTI")
    both("WATCH", "x")
    both("EXEC")


def test_queue_time_errors_abort_the_whole_transaction(both):
    both("MULTI")
    both("SET", "foo1", "bar1")
    both("NON-EXISTING-COMMAND")
    both("SET", "foo2", "bar2")
    both("EXEC")
    both("EXISTS", "foo1", "foo2")
    # The client is out of MULTI afterwards.
    both("PING")


def test_wrong_arity_while_queueing_aborts(both):
    both("MULTI")
    both("SET", "a", "1")
    both("GET")
    both("EXEC")
    both("EXISTS", "a")


def test_runtime_errors_do_not_stop_the_rest(both):
    both("SET", "s", "text")
    both("MULTI")
    both("INCR", "s")
    both("LPUSH", "s", "x")
    both("SET", "t", "1")
    both("INCR", "t")
    both("EXEC")
    both("MGET", "s", "t")


def test_commands_that_alter_arguments(both):
    both("SADD", "myset", "a")
    both("MULTI")
    both("SPOP", "myset")
    both("EXEC")
    both("EXISTS", "myset")


def test_select_inside_multi_switches_for_the_following_commands(both):
    both("MULTI")
    both("SELECT", "3")
    both("SET", "in3", "x")
    both("SELECT", "0")
    both("GET", "in3")
    both("EXEC")
    both("SELECT", "3")
    both("GET", "in3")
    both("DEL", "in3")
    both("SELECT", "0")


def test_blocking_commands_do_not_block_inside_multi(both):
    both("MULTI")
    both("BLPOP", "empty", "0")
    both("BZPOPMIN", "empty", "0")
    both("EXEC")


def test_shutdown_inside_multi_is_refused_and_aborts_exec(both, strata_server):
    both("MULTI")
    both("SET", "foo", "bar")
    both("SHUTDOWN")
    both("SHUTDOWN", "NOSAVE")
    both("EXEC")
    both("GET", "foo")
    assert strata_server.running
    assert strata_server.client().ping()


def test_blocking_commands_inside_multi_answer_what_is_there(both):
    both("RPUSH", "l", "a")
    both("ZADD", "z", "1", "m")
    both("MULTI")
    both("BLPOP", "l", "0")
    both("BLPOP", "l", "0")
    both("BLMOVE", "empty", "dst", "LEFT", "RIGHT", "0")
    both("BRPOPLPUSH", "empty", "dst", "0")
    both("BLMPOP", "0", "1", "empty", "LEFT")
    both("BZPOPMAX", "z", "0")
    both("BZMPOP", "0", "1", "z", "MIN")
    both("EXEC")


def test_flushall_inside_multi(both):
    both("SET", "a", "1")
    both("MULTI")
    both("SET", "b", "2")
    both("FLUSHALL")
    both("SET", "c", "3")
    both("EXEC")
    both("KEYS", "*")


def test_exec_works_on_watched_keys_not_modified(both):
    both("WATCH", "x", "y", "z")
    both("WATCH", "k")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_exec_fails_when_a_watched_key_was_modified(both, strata_server, redis_server):
    both("SET", "x", "30")
    both("WATCH", "a", "b", "x", "k", "z")
    other(strata_server, redis_server)("SET", "x", "40")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("GET", "x")


def test_own_modification_of_a_watched_key_fails_exec(both):
    both("SET", "x", "30")
    both("WATCH", "x")
    both("SET", "x", "40")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_sort_store_touches_its_destination(both):
    both("LPUSH", "foo", "bar")
    both("WATCH", "foo")
    both("SORT", "emptylist", "STORE", "foo")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_expire_touches_a_watched_key(both):
    both("SET", "x", "foo")
    both("WATCH", "x")
    both("EXPIRE", "x", "10")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_a_watched_key_that_expires_fails_exec(both):
    both("SET", "x", "foo", "PX", "50")
    both("WATCH", "x")
    time.sleep(0.15)
    both("MULTI")
    both("PING")
    both("EXEC")


def test_watching_an_already_expired_key_does_not_fail_exec(both):
    both("SET", "x", "foo", "PX", "1")
    time.sleep(0.05)
    both("WATCH", "x")
    both("EXISTS", "x")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_keys_are_unwatched_after_exec_success_and_failure(both):
    both("SET", "x", "30")
    both("WATCH", "x")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("SET", "x", "40")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("WATCH", "x")
    both("SET", "x", "50")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("SET", "x", "60")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_unwatch_forgets_the_keys(both):
    both("UNWATCH")
    both("SET", "x", "30")
    both("WATCH", "x")
    both("SET", "x", "40")
    both("UNWATCH")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_discard_unwatches_and_clears_the_dirty_flag(both):
    both("WATCH", "x")
    both("SET", "x", "10")
    both("MULTI")
    both("DISCARD")
    both("SET", "x", "10")
    both("MULTI")
    both("INCR", "x")
    both("EXEC")


def test_flushall_and_flushdb_touch_only_existing_watched_keys(both):
    for flush in ("FLUSHALL", "FLUSHDB"):
        both("SET", "x", "30")
        both("WATCH", "x")
        both(flush)
        both("MULTI")
        both("PING")
        both("EXEC")
        both("DEL", "x")
        both("WATCH", "x")
        both(flush)
        both("MULTI")
        both("PING")
        both("EXEC")


def test_flushdb_does_not_touch_watched_stale_keys(both):
    both("SET", "x", "foo", "PX", "1")
    time.sleep(0.05)
    both("WATCH", "x")
    both("FLUSHDB")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_swapdb_touches_watched_keys_that_exist_in_either_database(both):
    both("FLUSHALL")
    both("SET", "x", "30")
    both("WATCH", "x")
    both("SWAPDB", "0", "1")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("FLUSHALL")
    both("SELECT", "1")
    both("SET", "x", "30")
    both("SELECT", "0")
    both("WATCH", "x")
    both("SWAPDB", "0", "1")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("FLUSHALL")
    both("WATCH", "nothing")
    both("SWAPDB", "0", "1")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("FLUSHALL")


def test_watch_remembers_the_database_of_a_key(both):
    both("SELECT", "5")
    both("SET", "x", "30")
    both("WATCH", "x")
    both("SELECT", "1")
    both("SET", "x", "10")
    both("SELECT", "5")
    both("MULTI")
    both("PING")
    both("EXEC")
    both("FLUSHALL")
    both("SELECT", "0")


def test_reset_leaves_multi_and_unwatches(both):
    both("SET", "x", "1")
    both("WATCH", "x")
    both("MULTI")
    both("SET", "y", "2")
    both("RESET")
    both("EXEC")
    both("EXISTS", "y")
    both("SET", "x", "2")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_resp3_aborted_exec_is_null(both):
    both.each("HELLO", "3")  # the replies differ only in the client id
    both("SET", "x", "1")
    both("WATCH", "x")
    both("SET", "x", "2")
    both("MULTI")
    both("PING")
    both("EXEC")


def test_redis_py_pipeline_transaction_with_watch(strata):
    strata.set("balance", 100)
    with strata.pipeline() as pipe:
        pipe.watch("balance")
        current = int(pipe.get("balance"))
        pipe.multi()
        pipe.set("balance", current - 30)
        pipe.incr("spent", 30)
        assert pipe.execute() == [True, 30]
    assert strata.get("balance") == b"70"
    with strata.pipeline() as pipe:
        pipe.watch("balance")
        strata.set("balance", 0)  # another client changes it
        pipe.multi()
        pipe.set("balance", 1)
        try:
            pipe.execute()
            raise AssertionError("EXEC should have failed")
        except redis.WatchError:
            pass
    assert strata.get("balance") == b"0"


def test_readers_never_see_half_a_transaction(strata_server):
    """Many writers move units between two keys in transactions; readers check the invariant
    (the sum stays constant) with MGET and with their own read-only transactions."""
    setup = strata_server.client()
    setup.mset({"acct:a": 1000, "acct:b": 1000, "acct:c": 1000})
    stop = time.monotonic() + 2.0
    errors: list[str] = []
    done = {"tx": 0, "reads": 0}

    def writer(seed: int):
        c = strata_server.client()
        i = seed
        while time.monotonic() < stop and not errors:
            src, dst = ("acct:a", "acct:b") if i % 2 else ("acct:b", "acct:a")
            p = c.pipeline(transaction=True)
            p.decrby(src, 7)
            p.incrby(dst, 7)
            p.incr("acct:c")
            p.decr("acct:c")
            p.execute()
            done["tx"] += 1
            i += 1

    def reader():
        c = strata_server.client()
        while time.monotonic() < stop and not errors:
            a, b, cc = (int(v) for v in c.mget("acct:a", "acct:b", "acct:c"))
            if a + b != 2000 or cc != 1000:
                errors.append(f"MGET saw a={a} b={b} c={cc}")
            p = c.pipeline(transaction=True)
            p.get("acct:a")
            p.get("acct:c")
            p.get("acct:b")
            a, cc, b = (int(v) for v in p.execute())
            if a + b != 2000 or cc != 1000:
                errors.append(f"read transaction saw a={a} b={b} c={cc}")
            done["reads"] += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    assert done["tx"] > 50 and done["reads"] > 50, done
    a, b = (int(v) for v in setup.mget("acct:a", "acct:b"))
    assert a + b == 2000


def test_a_blocked_client_is_served_after_the_whole_transaction(strata_server, redis_server):
    seen = []
    for server in (strata_server, redis_server):
        waiter, c = server.conn(), server.conn()
        c.call("DEL", "k")
        waiter.send_command("BLPOP", "k", "0")
        deadline = time.monotonic() + 5
        while b"blocked_clients:1\r\n" not in c.call("INFO", "clients"):
            assert time.monotonic() < deadline, "the waiter never blocked"
            time.sleep(0.01)
        replies = [c.call_raw(*cmd) for cmd in (("MULTI",), ("RPUSH", "k", "a"), ("RPUSH", "k", "b"),
                                                ("LLEN", "k"), ("EXEC",))]
        seen.append((replies, waiter.read_reply_raw(), c.call_raw("LRANGE", "k", "0", "-1")))
    assert seen[0] == seen[1]
