"""Pub/sub (SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their unsubscribes, PUBLISH, SPUBLISH, PUBSUB)
compared byte for byte with a real Redis 7 where replies are deterministic, plus real-client
(redis-py) use, client bookkeeping, and the pubsub output-buffer limit that disconnects a slow
subscriber."""

import threading
import time

import pytest

from harness import Push, RespConn, encode_command, redis_is_strata


def _raw(both, *cmd, replies=1):
    return both.raw(encode_command(*cmd), replies=replies)


def test_subscribe_acknowledges_each_channel(both):
    _raw(both, "SUBSCRIBE", "a", "b", "a", replies=3)
    _raw(both, "PSUBSCRIBE", "n*", replies=1)
    _raw(both, "UNSUBSCRIBE", "a", "zz", replies=2)
    _raw(both, "PUNSUBSCRIBE", "n*", "x*", replies=2)
    _raw(both, "UNSUBSCRIBE", "b", replies=1)
    # Subscribed to nothing: one acknowledgement with a nil channel.
    _raw(both, "UNSUBSCRIBE", replies=1)
    _raw(both, "PUNSUBSCRIBE", replies=1)
    _raw(both, "SUNSUBSCRIBE", replies=1)
    both("PING")


def test_resp2_subscribed_state_allows_only_pubsub_commands(both):
    _raw(both, "SUBSCRIBE", "a", replies=1)
    both("GET", "k")
    both("SET", "k", "v")
    both("PUBLISH", "a", "x")
    both("PUBSUB", "NUMSUB", "a")
    both("PING")
    both("PING", "hello")
    both("NOSUCHCOMMAND")
    both("GET")
    _raw(both, "SSUBSCRIBE", "s", replies=1)
    _raw(both, "PSUBSCRIBE", "p*", replies=1)
    _raw(both, "SUNSUBSCRIBE", "s", replies=1)
    both("CONFIG", "GET", "port")
    both("RESET")
    both("GET", "k")


def test_publish_reaches_channel_and_pattern_subscribers(strata_server, redis_server):
    got = []
    for server in (strata_server, redis_server):
        sub = server.conn()
        sub.send_command("SUBSCRIBE", "news")
        sub.read_reply()
        sub.send_command("PSUBSCRIBE", "n*", "x*")
        sub.read_reply(), sub.read_reply()
        pub = server.conn()
        counts = [pub.call("PUBLISH", "news", "hello"), pub.call("PUBLISH", "nope", "1"),
                  pub.call("PUBLISH", "other", "2")]
        frames = [sub.read_reply_raw() for _ in range(3)]
        got.append((counts, frames))
    assert got[0] == got[1]
    assert got[0][0] == [2, 1, 0]


def test_shard_channels(both, strata_server, redis_server):
    got = []
    for server in (strata_server, redis_server):
        sub = server.conn()
        sub.send_command("SSUBSCRIBE", "s1", "s2")
        acks = [sub.read_reply_raw() for _ in range(2)]
        pub = server.conn()
        counts = [pub.call("SPUBLISH", "s1", "m"), pub.call("PUBLISH", "s1", "m"),
                  pub.call("PUBSUB", "SHARDCHANNELS"), pub.call("PUBSUB", "SHARDNUMSUB", "s1", "x"),
                  pub.call("PUBSUB", "SHARDCHANNELS", "*2")]
        got.append((acks, sorted(counts[2]), counts[:2] + counts[3:], sub.read_reply_raw()))
    assert got[0] == got[1]


def test_pubsub_introspection(both, strata_server, redis_server):
    subs = []
    for server in (strata_server, redis_server):
        for chans in (("a", "b"), ("b", "c")):
            c = server.conn()
            c.send_command("SUBSCRIBE", *chans)
            [c.read_reply() for _ in chans]
            subs.append(c)
        p = server.conn()
        p.send_command("PSUBSCRIBE", "p1", "p2")
        [p.read_reply() for _ in range(2)]
        subs.append(p)
    both.unordered("PUBSUB", "CHANNELS")
    both.unordered("PUBSUB", "CHANNELS", "[ab]")
    both("PUBSUB", "NUMSUB", "a", "b", "c", "d")
    both("PUBSUB", "NUMSUB")
    both("PUBSUB", "NUMPAT")
    both("PUBSUB", "CHANNELS", "a", "b")
    both("PUBSUB", "NUMPAT", "x")
    both("PUBSUB", "FOO")
    both("PUBSUB", "HELP")
    both("PUBLISH", "a")
    both("SUBSCRIBE")
    for c in subs:
        c.close()


def test_resp3_pushes_and_any_command_allowed(strata_server, redis_server):
    got = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("HELLO", "3")
        out = [c.call_raw("SUBSCRIBE", "ch")]
        c.send_command("PUBLISH", "ch", "self")
        out += [c.read_reply_raw(), c.read_reply_raw()]  # the message, then PUBLISH's reply
        out += [c.call_raw("SET", "k", "v"), c.call_raw("GET", "k"), c.call_raw("PING")]
        c.send_command("UNSUBSCRIBE")
        out.append(c.read_reply_raw())
        got.append(out)
        assert isinstance(parse_push(out[0]), Push)
    assert got[0] == got[1]
    assert got[0][1].startswith(b">3\r\n$7\r\nmessage")


@pytest.mark.parametrize("proto", ["2", "3"])
def test_pushes_reach_a_client_whose_replies_are_off(strata_server, redis_server, proto):
    got = []
    for server in (strata_server, redis_server):
        c, pub = server.conn(), server.conn()
        c.call("HELLO", proto)
        out = []
        c.send_command("CLIENT", "REPLY", "OFF")
        c.send_command("SUBSCRIBE", "ch", "other")
        out += [c.read_reply_raw(), c.read_reply_raw()]
        c.send_command("PSUBSCRIBE", "c*")
        out.append(c.read_reply_raw())
        out.append(pub.call_raw("PUBLISH", "ch", "hello"))
        out += [c.read_reply_raw(), c.read_reply_raw()]  # message, then pmessage
        c.send_command("UNSUBSCRIBE", "ch")
        out.append(c.read_reply_raw())
        c.send_command("PUNSUBSCRIBE")
        out.append(c.read_reply_raw())
        if proto == "3":
            # Ordinary replies stay off.
            c.send_command("PING")
        assert c.read_available(0.2) == b""
        got.append(out)
    assert got[0] == got[1]
    assert got[0][3] == b":2\r\n"


def test_client_reply_skip_still_lets_acknowledgements_through(strata_server, redis_server):
    got = []
    for server in (strata_server, redis_server):
        c = server.conn()
        c.call("HELLO", "3")
        c.send_command("CLIENT", "REPLY", "SKIP")
        c.send_command("SUBSCRIBE", "ch")
        first = c.read_reply_raw()
        got.append((first, c.call_raw("PING")))
    assert got[0] == got[1]
    assert got[0][0].startswith(b">3\r\n$9\r\nsubscribe")


def parse_push(raw):
    from harness import parse_reply
    return parse_reply(raw)[0]


def test_reset_leaves_every_subscription(strata_server):
    c = strata_server.conn()
    c.send_command("SUBSCRIBE", "a")
    c.read_reply()
    c.send_command("PSUBSCRIBE", "p*")
    c.read_reply()
    assert c.call("RESET") == b"RESET"
    other = strata_server.conn()
    assert other.call("PUBSUB", "NUMSUB", "a") == [b"a", 0]
    assert other.call("PUBSUB", "NUMPAT") == 0
    assert c.call("GET", "k") is None


def test_disconnected_subscriber_is_forgotten(strata_server):
    c = strata_server.conn()
    c.send_command("SUBSCRIBE", "gone")
    c.read_reply()
    other = strata_server.conn()
    assert other.call("PUBLISH", "gone", "x") == 1
    c.close()
    deadline = time.monotonic() + 5
    while other.call("PUBSUB", "NUMSUB", "gone") != [b"gone", 0]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert other.call("PUBLISH", "gone", "x") == 0


@pytest.mark.skipif(redis_is_strata(), reason="Strata's client bookkeeping")
def test_client_list_info_and_kill_by_type(strata_server):
    c = strata_server.conn()
    c.send_command("SUBSCRIBE", "a", "b")
    c.read_reply(), c.read_reply()
    c.send_command("PSUBSCRIBE", "p*")
    c.read_reply()
    c.send_command("SSUBSCRIBE", "s")
    c.read_reply()
    admin = strata_server.conn()
    lines = admin.call("CLIENT", "LIST", "TYPE", "pubsub").decode().splitlines()
    assert len(lines) == 1
    assert " flags=P " in lines[0] and " sub=2 psub=1 ssub=1 " in lines[0], lines[0]
    normal = admin.call("CLIENT", "LIST", "TYPE", "normal").decode()
    assert " sub=2 " not in normal
    info = admin.call("INFO", "stats").decode()
    assert "pubsub_channels:2\r\n" in info and "pubsub_patterns:1\r\n" in info
    assert "pubsubshard_channels:1\r\n" in info
    assert admin.call("CLIENT", "KILL", "TYPE", "pubsub") == 1
    assert c.is_closed()


def test_client_kill_type_pubsub_matches_redis(both, strata_server, redis_server):
    for server in (strata_server, redis_server):
        c = server.conn()
        c.send_command("SUBSCRIBE", "a")
        c.read_reply()
    both("CLIENT", "KILL", "TYPE", "pubsub")
    both("CLIENT", "KILL", "TYPE", "pubsub")


def test_output_buffer_limit_config_matches_redis(both):
    both("CONFIG", "GET", "client-output-buffer-limit")
    both("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb 5")
    both("CONFIG", "GET", "client-output-buffer-limit")
    both("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb")
    both("CONFIG", "SET", "client-output-buffer-limit", "foo 1 2 3")
    both("CONFIG", "SET", "client-output-buffer-limit", "pubsub x 2 3")
    both("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1 2 -1")
    both("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0 replica 1gb 512mb 30")
    both("CONFIG", "GET", "client-output-buffer-limit")
    both("CONFIG", "SET", "client-output-buffer-limit",
         "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")


def test_redis_py_pubsub(strata):
    p = strata.pubsub()
    p.subscribe("chat")
    p.psubscribe("ch*")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    assert p.get_message(timeout=2)["type"] == "psubscribe"
    assert strata.publish("chat", "hi") == 2
    m1, m2 = p.get_message(timeout=2), p.get_message(timeout=2)
    assert (m1["type"], m1["channel"], m1["data"]) == ("message", b"chat", b"hi")
    assert (m2["type"], m2["pattern"], m2["channel"]) == ("pmessage", b"ch*", b"chat")
    assert strata.pubsub_numsub("chat") == [(b"chat", 1)]
    assert strata.pubsub_numpat() == 1
    p.unsubscribe()
    p.punsubscribe()
    p.close()


def test_redis_py_listener_thread_receives_everything(strata):
    p = strata.pubsub(ignore_subscribe_messages=True)
    got = []
    p.subscribe(**{"t": lambda m: got.append(m["data"])})
    worker = p.run_in_thread(sleep_time=0.01)
    try:
        deadline = time.monotonic() + 5
        while strata.pubsub_numsub("t") != [(b"t", 1)]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for i in range(200):
            strata.publish("t", str(i))
        while len(got) < 200:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert got == [str(i).encode() for i in range(200)]
    finally:
        worker.stop()
        worker.join(5)
        p.close()


def test_redis_py_resp3_pubsub(strata_server):
    import redis
    r = redis.Redis(port=strata_server.port, protocol=3)
    p = r.pubsub()
    p.subscribe("r3")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    assert r.publish("r3", "x") == 1
    m = p.get_message(timeout=2)
    assert (m["channel"], m["data"]) == (b"r3", b"x")
    p.close()
    r.close()


def _rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.mark.skipif(redis_is_strata(), reason="reads the Strata server's log and RSS")
def test_slow_subscriber_is_disconnected_at_the_hard_limit(start_strata):
    server = start_strata(**{"client-output-buffer-limit": "pubsub 1mb 0 0"})
    slow = RespConn(server.port)
    slow.sock.setsockopt(__import__("socket").SOL_SOCKET, __import__("socket").SO_RCVBUF, 4096)
    slow.send_command("SUBSCRIBE", "firehose")
    slow.read_reply()
    pub = server.conn()
    before = _rss_kb(server.proc.pid)
    payload = b"x" * 65536
    receivers = []
    deadline = time.monotonic() + 30
    # 64 MB offered to a client that never reads: it must be cut off, not buffered.
    for _ in range(1024):
        receivers.append(pub.call("PUBLISH", "firehose", payload))
        if receivers[-1] == 0:
            break
        assert time.monotonic() < deadline
    assert receivers[-1] == 0, "the slow subscriber was never disconnected"
    assert pub.call("PUBSUB", "NUMSUB", "firehose") == [b"firehose", 0]
    grown_mb = (_rss_kb(server.proc.pid) - before) / 1024
    assert grown_mb < 48, f"server RSS grew by {grown_mb:.0f} MB"
    assert "scheduled to be closed ASAP for overcoming of output buffer limits" in server.log_tail(200)
    slow.close()


@pytest.mark.skipif(redis_is_strata(), reason="timing of Strata's soft limit")
def test_slow_subscriber_is_disconnected_after_the_soft_limit_period(start_strata):
    server = start_strata(**{"client-output-buffer-limit": "pubsub 0 256kb 1"})
    slow = RespConn(server.port)
    slow.sock.setsockopt(__import__("socket").SOL_SOCKET, __import__("socket").SO_RCVBUF, 4096)
    slow.send_command("SUBSCRIBE", "trickle")
    slow.read_reply()
    pub = server.conn()
    payload = b"y" * 16384
    start = time.monotonic()
    while pub.call("PUBLISH", "trickle", payload) != 0:
        assert time.monotonic() - start < 20, "never disconnected"
        time.sleep(0.005)
    # Over the soft limit it is tolerated for the soft seconds, then closed.
    assert time.monotonic() - start >= 1.0
    slow.close()


def test_many_publishers_and_subscribers(strata_server):
    subs = []
    for _ in range(5):
        c = strata_server.conn()
        c.send_command("SUBSCRIBE", "fan")
        c.read_reply()
        subs.append(c)

    def publish(n):
        c = RespConn(strata_server.port)
        for i in range(100):
            assert c.call("PUBLISH", "fan", f"{n}:{i}") == 5
        c.close()

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for c in subs:
        msgs = [c.read_reply()[2] for _ in range(400)]
        for n in range(4):
            mine = [m for m in msgs if m.startswith(f"{n}:".encode())]
            assert mine == [f"{n}:{i}".encode() for i in range(100)]
