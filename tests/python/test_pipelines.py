"""Pipelined commands (issue 15): a client's commands read in one batch may keep their key locks
from one command to the next (a fast command followed by more input lets its locks linger), and
these tests pin what that must never change: pipelines of several clients on the same keys, in
any order, all finish with every command applied once; a pipeline that ends in a blocking
command, a transaction or a script on the keys it just wrote answers as Redis does and is served
by other clients' writes; and nothing stays locked after the batch."""

import threading
import time

from harness import RespConn, encode_command


def _pipeline(conn: RespConn, commands) -> list:
    """Sends every command in one write (so the server reads them as one batch), then reads
    every reply."""
    conn.send(b"".join(encode_command(*c) for c in commands))
    return [conn.read_reply() for _ in commands]


def test_clients_pipelining_the_same_keys_in_opposite_orders_all_finish(strata_server):
    rounds, per_round, clients = 20, 200, 4
    errors = []

    def client(n):
        try:
            with RespConn(strata_server.port, timeout=20) as c:
                first, second = ("a", "b") if n % 2 == 0 else ("b", "a")
                for _ in range(rounds):
                    cmds = []
                    for i in range(per_round):
                        # Runs of commands on one key, then on the other: each run's locks
                        # linger into the next command of the batch.
                        cmds.append(("INCR", first if (i // 7) % 2 == 0 else second))
                        if i % 50 == 0:
                            cmds.append(("MSET", "m1", str(n), "m2", str(n)))
                    replies = _pipeline(c, cmds)
                    assert all(isinstance(r, int) or r == b"OK" for r in replies), replies[:5]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a pipelining client never got its replies"
    assert not errors, errors
    with RespConn(strata_server.port) as c:
        a, b = int(c.call("GET", "a")), int(c.call("GET", "b"))
        assert a + b == rounds * per_round * clients
        assert c.call("GET", "m1") == c.call("GET", "m2")


def test_a_pipeline_ending_in_a_blocking_pop_is_served_by_another_clients_push(strata_server):
    with RespConn(strata_server.port, timeout=20) as a, RespConn(strata_server.port) as b:
        cmds = [("RPUSH", "q", f"x{i}") for i in range(50)] + [("LPOP", "q")] * 50
        a.send(b"".join(encode_command(*c) for c in cmds + [("BLPOP", "q", "10")]))
        replies = [a.read_reply() for _ in cmds]
        assert replies[-1] == b"x49"
        # Once the BLPOP is blocked, the list's lock must be free for another client.
        deadline = time.monotonic() + 5
        while b"blocked_clients:1" not in b.call("INFO", "clients"):
            assert time.monotonic() < deadline, "the BLPOP never blocked"
            time.sleep(0.01)
        assert b.call("RPUSH", "q", "served") == 1
        assert a.read_reply() == [b"q", b"served"]
        # Other keys of the batch are free too.
        assert b.call("SET", "q2", "v") == b"OK"


def test_transactions_and_scripts_in_a_pipeline_on_the_keys_it_wrote_answer_as_redis(both):
    script = "return redis.call('INCR', KEYS[1]) + tonumber(redis.call('GET', KEYS[2]) or 0)"
    commands = [
        ("SET", "k", "1"),
        ("INCR", "k"),
        ("MULTI",),
        ("INCR", "k"),
        ("LPUSH", "l", "a"),
        ("EXEC",),
        ("INCR", "k"),
        ("EVAL", script, "2", "k", "other"),
        ("INCR", "k"),
        ("SET", "other", "5"),
        ("EVAL", script, "2", "k", "other"),
        ("GET", "k"),
        ("WATCH", "k"),
        ("INCR", "k"),
        ("MULTI",),
        ("INCR", "k"),
        ("EXEC",),
        ("LPUSH", "l", "b"),
        ("LRANGE", "l", "0", "-1"),
        ("SELECT", "1"),
        ("INCR", "k"),
        ("SELECT", "0"),
        ("GET", "k"),
        ("FLUSHALL",),
        ("INCR", "k"),
    ]
    both.raw(b"".join(encode_command(*c) for c in commands), replies=len(commands))


def test_nothing_stays_locked_after_a_pipeline_of_writes_to_one_key(strata_server):
    with RespConn(strata_server.port, timeout=20) as a, RespConn(strata_server.port, timeout=5) as b:
        replies = _pipeline(a, [("LPUSH", "hot", str(i)) for i in range(500)])
        assert replies[-1] == 500
        # Another client's write and read of the same key go through at once.
        assert b.call("LPUSH", "hot", "last") == 501
        assert b.call("LINDEX", "hot", "0") == b"last"
        # And so does a command that needs every key's lock.
        assert b.call("FLUSHDB") == b"OK"


def test_a_key_left_locked_by_an_idle_clients_last_command_is_free_for_others(strata_server):
    # A fast command's locks may stay with its worker thread after its batch, for the next
    # commands the thread runs; an idle thread lets them go. Each round, one client's INCR is
    # the last thing its worker runs; the other clients, on whichever worker, must get the key.
    with RespConn(strata_server.port, timeout=5) as a:
        others = [RespConn(strata_server.port, timeout=5) for _ in range(3)]
        try:
            for i in range(200):
                assert a.call("INCR", "idle-hot") == 1 + 4 * i
                for c in others:
                    c.send(encode_command("INCR", "idle-hot"))
                got = sorted(c.read_reply() for c in others)
                assert got == [2 + 4 * i, 3 + 4 * i, 4 + 4 * i]
        finally:
            for c in others:
                c.close()
