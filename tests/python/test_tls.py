"""TLS (tls-port and the tls-* directives): redis-py and redis-cli over TLS, mutual TLS with
tls-auth-clients yes / optional, the plain and TLS ports together (and TLS alone with port 0),
CONFIG SET reloading the certificate (and keeping the old one when the new file is bad, with
Redis's reply), replication over TLS, and hostile input on the TLS port that must leave the
server serving both ports.

Certificates are made for the session with the openssl command-line tool: a CA, a server
certificate and a client certificate signed by it, a second server certificate (for reloads),
and an unrelated CA with a client certificate of its own."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import redis

from harness import Server, free_port, redis_is_strata
from replication_helpers import wait_for

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl tool")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d: Path, name: str):
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "3", "-subj", f"/CN={name}",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)


def _leaf(d: Path, name: str, ca: str, cn: str):
    """A certificate for `cn` signed by `ca`, usable by a server and by a client (no EKU)."""
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
    (d / f"{name}.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "3", "-extfile", f"{name}.ext", cwd=d)


class Certs:
    def __init__(self, d: Path):
        self.dir = d
        _ca(d, "ca")
        _ca(d, "otherca")
        _leaf(d, "server", "ca", "strata-server")
        _leaf(d, "server2", "ca", "strata-reloaded")
        _leaf(d, "client", "ca", "strata-client")
        _leaf(d, "stranger", "otherca", "stranger")

    def path(self, name: str) -> str:
        return str(self.dir / name)

    def der(self, name: str) -> bytes:
        return ssl.PEM_cert_to_DER_cert((self.dir / f"{name}.crt").read_text())


@pytest.fixture(scope="module")
def certs():
    d = Path(tempfile.mkdtemp(prefix="strata-tls-certs-"))
    try:
        yield Certs(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def tls_directives(certs: Certs, auth: str = "no", **extra) -> dict:
    return {"tls_port": free_port(), "tls_cert_file": certs.path("server.crt"),
            "tls_key_file": certs.path("server.key"), "tls_ca_cert_file": certs.path("ca.crt"),
            "tls_auth_clients": auth, **extra}


def tls_client(server: Server, certs: Certs, cert: str | None = None, **kw) -> redis.Redis:
    args = dict(host="127.0.0.1", port=int(server.directives["tls_port"]), ssl=True,
                ssl_ca_certs=certs.path("ca.crt"), ssl_cert_reqs="required", socket_timeout=10)
    if cert:
        args.update(ssl_certfile=certs.path(f"{cert}.crt"), ssl_keyfile=certs.path(f"{cert}.key"))
    args.update(kw)
    return redis.Redis(**args)


def peer_cert(port: int, certs: Certs) -> bytes:
    ctx = ssl.create_default_context(cafile=certs.path("ca.crt"))
    ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw) as s:
            return s.getpeercert(binary_form=True)


def test_redis_py_over_tls_sets_gets_pipelines_and_pubsub(start_strata, certs):
    server = start_strata(**tls_directives(certs))
    c = tls_client(server, certs)
    assert c.set("k", "v") is True
    assert c.get("k") == b"v"
    big = os.urandom(300_000)
    c.set("big", big)
    assert c.get("big") == big
    pipe = c.pipeline(transaction=False)
    for i in range(500):
        pipe.set(f"p{i}", i)
        pipe.incr(f"p{i}")
    replies = pipe.execute()
    assert replies[1::2] == [i + 1 for i in range(500)]
    sub = tls_client(server, certs).pubsub()
    sub.subscribe("news")
    wait_for("subscribe ack", lambda: sub.get_message(timeout=1.0), 10)
    assert c.publish("news", "hello") == 1
    msg = wait_for("message", lambda: sub.get_message(timeout=1.0), 10)
    assert msg["data"] == b"hello"
    sub.close()


def test_plain_and_tls_ports_serve_the_same_data(start_strata, certs):
    server = start_strata(**tls_directives(certs))
    plain = server.client()
    tls = tls_client(server, certs)
    plain.set("from-plain", "1")
    tls.set("from-tls", "2")
    assert tls.get("from-plain") == b"1"
    assert plain.get("from-tls") == b"2"
    assert plain.config_get("tls-port")["tls-port"] == str(server.directives["tls_port"])


def test_redis_cli_over_tls_with_and_without_a_client_certificate(start_strata, certs):
    if shutil.which("redis-cli") is None:
        pytest.skip("needs redis-cli")
    server = start_strata(**tls_directives(certs, auth="yes"))
    port = str(server.directives["tls_port"])
    base = ["redis-cli", "-h", "127.0.0.1", "-p", port, "--tls", "--cacert", certs.path("ca.crt")]
    mutual = base + ["--cert", certs.path("client.crt"), "--key", certs.path("client.key")]
    out = subprocess.run(mutual + ["SET", "cli", "yes"], capture_output=True, text=True, timeout=20)
    assert out.stdout.strip() == "OK", out
    out = subprocess.run(mutual + ["GET", "cli"], capture_output=True, text=True, timeout=20)
    assert out.stdout.strip() == "yes"
    out = subprocess.run(base + ["PING"], capture_output=True, text=True, timeout=20)
    assert "PONG" not in out.stdout
    assert server.client().ping()


def _refused(make_client) -> bool:
    try:
        make_client().ping()
    except (redis.ConnectionError, ssl.SSLError, OSError):
        return True
    return False


def test_mutual_tls_refuses_clients_without_a_certificate_or_from_another_ca(start_strata, certs):
    server = start_strata(**tls_directives(certs, auth="yes"))
    assert tls_client(server, certs, cert="client").ping()
    assert _refused(lambda: tls_client(server, certs))
    assert _refused(lambda: tls_client(server, certs, cert="stranger"))
    # Still serving after the refusals.
    assert tls_client(server, certs, cert="client").ping()


def test_optional_client_auth_takes_no_certificate_but_refuses_a_bad_one(start_strata, certs):
    server = start_strata(**tls_directives(certs, auth="optional"))
    assert tls_client(server, certs).ping()
    assert tls_client(server, certs, cert="client").ping()
    assert _refused(lambda: tls_client(server, certs, cert="stranger"))


def test_tls_auth_clients_changes_at_runtime_for_new_connections(start_strata, certs):
    server = start_strata(**tls_directives(certs, auth="no"))
    assert tls_client(server, certs).ping()
    server.client().config_set("tls-auth-clients", "yes")
    assert _refused(lambda: tls_client(server, certs))
    assert tls_client(server, certs, cert="client").ping()


def test_config_set_tls_cert_file_serves_the_new_certificate_to_new_connections(start_strata, certs):
    server = start_strata(**tls_directives(certs))
    port = int(server.directives["tls_port"])
    old = tls_client(server, certs)
    old.set("k", "v")
    assert peer_cert(port, certs) == certs.der("server")
    plain = server.client()
    assert plain.execute_command("CONFIG", "SET", "tls-cert-file", certs.path("server2.crt"),
                                 "tls-key-file", certs.path("server2.key")) == b"OK"
    assert peer_cert(port, certs) == certs.der("server2")
    assert old.get("k") == b"v"  # connections made before keep working
    assert tls_client(server, certs).get("k") == b"v"


def test_a_bad_certificate_file_is_refused_like_redis_and_the_old_context_stays(start_strata, certs):
    server = start_strata(**tls_directives(certs))
    port = int(server.directives["tls_port"])
    plain = server.client()
    with pytest.raises(redis.ResponseError) as e:
        plain.config_set("tls-cert-file", "/nonexistent/cert.pem")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                            "Unable to update TLS configuration. Check server logs.")
    assert plain.config_get("tls-cert-file")["tls-cert-file"] == certs.path("server.crt")
    # A key that does not belong to the certificate is refused too.
    with pytest.raises(redis.ResponseError):
        plain.config_set("tls-key-file", certs.path("client.key"))
    with pytest.raises(redis.ResponseError):
        plain.config_set("tls-protocols", "TLSv1.2 SSLv3")
    assert peer_cert(port, certs) == certs.der("server")
    assert tls_client(server, certs).ping()


def test_config_set_error_text_matches_redis(start_redis, certs):
    try:
        ref = start_redis(**tls_directives(certs))
    except Exception:
        pytest.skip("this redis-server is built without TLS")
    with pytest.raises(redis.ResponseError) as e:
        ref.client().config_set("tls-cert-file", "/nonexistent/cert.pem")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                            "Unable to update TLS configuration. Check server logs.")


def test_tls_protocols_and_ciphersuites_are_applied(start_strata, certs):
    server = start_strata(**tls_directives(certs, tls_protocols="TLSv1.2",
                                           tls_ciphers="ECDHE-ECDSA-AES128-GCM-SHA256"))
    port = int(server.directives["tls_port"])
    ctx = ssl.create_default_context(cafile=certs.path("ca.crt"))
    ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw) as s:
            assert s.version() == "TLSv1.2"
            assert s.cipher()[0] == "ECDHE-ECDSA-AES128-GCM-SHA256"
    ctx13 = ssl.create_default_context(cafile=certs.path("ca.crt"))
    ctx13.check_hostname = False
    ctx13.minimum_version = ssl.TLSVersion.TLSv1_3
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with pytest.raises(ssl.SSLError):
            ctx13.wrap_socket(raw)
    assert server.client().config_get("tls-protocols")["tls-protocols"] == "TLSv1.2"


@pytest.mark.parametrize("missing, message", [
    ("tls_cert_file", "No tls-cert-file configured!"),
    ("tls_ca_cert_file", "Either tls-ca-cert-file or tls-ca-cert-dir must be specified"),
])
def test_tls_that_cannot_be_configured_stops_the_start_like_redis(certs, missing, message):
    if redis_is_strata():
        pytest.skip("reads Strata's log")
    directives = tls_directives(certs, auth="yes")
    del directives[missing]
    server = Server("strata", directives)
    try:
        with pytest.raises(Exception):
            server.start()
        log = server.log_path.read_text()
        assert message in log
        assert "Failed to configure TLS. Check logs for more info." in log
    finally:
        server.cleanup()


def test_port_0_serves_tls_only(certs, tmp_path):
    tls_port = free_port()
    d = tls_directives(certs)
    d["tls_port"] = tls_port
    argv = [*Server("strata").argv()[:1], "--port", "0", "--bind", "127.0.0.1", "--dir", str(tmp_path)]
    for k, v in d.items():
        argv += ["--" + k.replace("_", "-"), str(v)]
    with open(tmp_path / "log", "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        c = redis.Redis(host="127.0.0.1", port=tls_port, ssl=True, ssl_ca_certs=certs.path("ca.crt"),
                        socket_timeout=5)
        wait_for("the TLS port", c.ping, 20)
        assert c.config_get("port")["port"] == "0"
    finally:
        proc.terminate()
        proc.wait(10)


def test_replication_over_tls_delivers_the_data(start_strata, certs):
    leader = start_strata(**tls_directives(certs, auth="yes", tls_replication="yes"))
    replica = start_strata(**tls_directives(certs, auth="yes", tls_replication="yes"))
    lc = tls_client(leader, certs, cert="client")
    lc.set("before", "1")
    rc = replica.client()
    rc.execute_command("REPLICAOF", "127.0.0.1", str(leader.directives["tls_port"]))
    wait_for("the link", lambda: rc.info("replication").get("master_link_status") == "up", 30)
    for i in range(200):
        lc.set(f"k{i}", i)
    wait_for("the writes", lambda: rc.get("k199") == b"199", 30)
    assert rc.get("before") == b"1"
    slaves = leader.client().info("replication")
    assert slaves["connected_slaves"] == 1
    # The replica announces its TLS port, as Redis does under tls-replication.
    assert slaves["slave0"]["port"] == int(replica.directives["tls_port"])


def test_replica_without_tls_replication_cannot_follow_a_tls_port(start_strata, certs):
    leader = start_strata(**tls_directives(certs, auth="yes"))
    replica = start_strata()
    rc = replica.client()
    rc.execute_command("REPLICAOF", "127.0.0.1", str(leader.directives["tls_port"]))
    time.sleep(2)
    assert rc.info("replication").get("master_link_status") == "down"
    assert leader.client().ping()


def _client_hello_prefix() -> bytes:
    """The first bytes of a real ClientHello (a TLS record header and part of the message)."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    return hello[: len(hello) // 2]


def test_hostile_input_on_the_tls_port_leaves_both_ports_serving(start_strata, certs):
    server = start_strata(**tls_directives(certs))
    port = int(server.directives["tls_port"])
    half_hello = _client_hello_prefix()
    rnd = os.urandom(64 * 1024)
    # Garbage: random bytes, HTTP, RESP in clear, an enormous record length.
    for payload in (rnd, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"*1\r\n$4\r\nPING\r\n",
                    b"\x16\x03\x01\xff\xff" + rnd[:100], b"\x16\x03\x03\x00\x05hello" * 50):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            try:
                s.sendall(payload)
                s.recv(100)
            except OSError:
                pass
    # Hundreds of connections that stop mid-handshake, held open.
    stalled = []
    for i in range(300):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 3 == 0:
            s.sendall(half_hello)
        elif i % 3 == 1:
            s.sendall(b"\x16\x03")
        stalled.append(s)
    # Many threads slamming half handshakes and closing at once.
    def slam():
        for _ in range(30):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(half_hello)
            except OSError:
                pass
    threads = [threading.Thread(target=slam) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # While the stalled ones are still open, both ports serve at once.
    tls = tls_client(server, certs)
    assert tls.set("after", "ok")
    assert server.client().get("after") == b"ok"
    for s in stalled:
        s.close()
    assert tls_client(server, certs).get("after") == b"ok"
    assert server.client().ping()
    assert server.running


def test_stalled_handshakes_are_closed_after_the_handshake_timeout(start_strata, certs):
    if redis_is_strata():
        pytest.skip("Strata's handshake timeout")
    server = start_strata(**tls_directives(certs))
    port = int(server.directives["tls_port"])
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(_client_hello_prefix())
    start = time.monotonic()
    assert s.recv(100) == b""  # closed by the server
    assert 5 < time.monotonic() - start < 19
    s.close()


def test_config_set_tls_port_relistens_and_a_taken_port_changes_nothing(start_strata, certs):
    server = start_strata(**tls_directives(certs))
    old = int(server.directives["tls_port"])
    plain = server.client()
    plain.set("k", "v")
    new = free_port()
    assert plain.config_set("tls-port", new)
    server.directives["tls_port"] = new
    assert tls_client(server, certs).get("k") == b"v"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", old), timeout=2).close()
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    with pytest.raises(redis.ResponseError) as e:
        plain.config_set("tls-port", taken.getsockname()[1])
    taken.close()
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-port') - "
                            "Unable to listen on this port. Check server logs.")
    assert plain.config_get("tls-port")["tls-port"] == str(new)
    assert tls_client(server, certs).ping()
    assert plain.config_set("tls-port", 0)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", new), timeout=2).close()
    assert plain.ping()


def test_config_set_tls_port_on_a_server_started_without_tls(start_strata, certs):
    server = start_strata()
    plain = server.client()
    port = free_port()
    # Without a certificate TLS can't be configured: Redis's error, nothing changes.
    with pytest.raises(redis.ResponseError) as e:
        plain.config_set("tls-port", port)
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-port') - "
                            "Unable to update TLS configuration. Check server logs.")
    assert plain.config_get("tls-port")["tls-port"] == "0"
    assert plain.config_set("tls-cert-file", certs.path("server.crt"), "tls-key-file", certs.path("server.key"),
                            "tls-ca-cert-file", certs.path("ca.crt"), "tls-auth-clients", "no")
    assert plain.config_set("tls-port", port)
    server.directives["tls_port"] = port
    assert tls_client(server, certs).ping()
