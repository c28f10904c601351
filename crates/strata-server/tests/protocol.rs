//! The wire: replies to real clients, pipelining, QUIT, CLIENT REPLY, and what happens to a
//! connection that sends malformed or oversized input.

mod common;

use common::{closed_by_peer, read_n, send, Server, TestResult};

#[test]
fn set_then_get_returns_the_value() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    redis::cmd("SET")
        .arg("greeting")
        .arg("hello")
        .query::<()>(&mut con)?;
    let got: Option<String> = redis::cmd("GET").arg("greeting").query(&mut con)?;
    assert_eq!(got.as_deref(), Some("hello"));
    let missing: Option<String> = redis::cmd("GET").arg("nope").query(&mut con)?;
    assert_eq!(missing, None);
    Ok(())
}

#[test]
fn ten_thousand_pipelined_commands_are_answered_in_order() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let mut pipe = redis::pipe();
    for i in 0..5000 {
        pipe.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
    }
    for i in 0..5000 {
        pipe.cmd("GET").arg(format!("k{i}"));
    }
    let values: Vec<i64> = pipe.query(&mut con)?;
    assert_eq!(values, (0..5000).collect::<Vec<i64>>());
    Ok(())
}

#[test]
fn one_raw_write_with_many_inline_commands_gets_every_reply() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut s = server.raw()?;
    let request = "PING\r\n".repeat(3000);
    send(&mut s, request.as_bytes())?;
    let expected = "+PONG\r\n".repeat(3000);
    let got = read_n(&mut s, expected.len())?;
    assert_eq!(String::from_utf8_lossy(&got), expected);
    Ok(())
}

#[test]
fn protocol_error_closes_only_that_connection() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut good = server.conn()?;
    redis::cmd("SET").arg("k").arg("v").query::<()>(&mut good)?;

    let mut bad = server.raw()?;
    // A valid command first: its reply must still arrive before the error.
    send(&mut bad, b"PING\r\n*1\r\n$x\r\n")?;
    let expected = b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n";
    assert_eq!(read_n(&mut bad, expected.len())?, expected);
    assert!(closed_by_peer(&mut bad));

    let v: String = redis::cmd("GET").arg("k").query(&mut good)?;
    assert_eq!(v, "v");
    Ok(())
}

#[test]
fn bulk_longer_than_proto_max_bulk_len_is_refused() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut s = server.raw()?;
    send(&mut s, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999999999\r\n")?;
    let expected = b"-ERR Protocol error: invalid bulk length\r\n";
    assert_eq!(read_n(&mut s, expected.len())?, expected);
    assert!(closed_by_peer(&mut s));

    // A lowered limit applies to connections at once.
    let mut con = server.conn()?;
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("proto-max-bulk-len")
        .arg("1mb")
        .query::<()>(&mut con)?;
    let mut s = server.raw()?;
    send(&mut s, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")?;
    assert_eq!(read_n(&mut s, expected.len())?, expected);
    Ok(())
}

#[test]
fn quit_replies_ok_then_closes() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut s = server.raw()?;
    send(&mut s, b"QUIT\r\nPING\r\n")?;
    assert_eq!(read_n(&mut s, 5)?, b"+OK\r\n");
    assert!(closed_by_peer(&mut s));
    Ok(())
}

#[test]
fn client_reply_off_and_skip_suppress_replies() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut s = server.raw()?;
    send(
        &mut s,
        b"CLIENT REPLY OFF\r\nECHO a\r\nCLIENT REPLY ON\r\nCLIENT REPLY SKIP\r\nECHO b\r\nECHO c\r\n",
    )?;
    let expected = b"+OK\r\n$1\r\nc\r\n";
    assert_eq!(read_n(&mut s, expected.len())?, expected);
    Ok(())
}

#[test]
fn query_buffer_over_the_limit_closes_the_connection() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &["--client-query-buffer-limit", "1mb"])?;
    let mut s = server.raw()?;
    // The start of a 4 MB argument: the unparsed buffer grows past 1 MB.
    let mut req = b"*2\r\n$4\r\nECHO\r\n$4000000\r\n".to_vec();
    req.resize(req.len() + 2_000_000, b'x');
    // The server may close while we are still writing.
    let _ = send(&mut s, &req);
    assert!(closed_by_peer(&mut s));
    let mut con = server.conn()?;
    let pong: String = redis::cmd("PING").query(&mut con)?;
    assert_eq!(pong, "PONG");
    Ok(())
}

#[test]
fn large_values_round_trip() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let big = vec![b'z'; 20 << 20];
    let start = std::time::Instant::now();
    redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query::<()>(&mut con)?;
    let back: Vec<u8> = redis::cmd("GET").arg("big").query(&mut con)?;
    assert!(back == big);
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    Ok(())
}

#[test]
fn password_is_required_when_requirepass_is_set() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &["--requirepass", "s3cret"])?;
    let mut con = server.conn()?;
    let err = redis::cmd("GET")
        .arg("k")
        .query::<Option<String>>(&mut con)
        .err()
        .ok_or("GET without AUTH succeeded")?;
    assert_eq!(err.code(), Some("NOAUTH"));
    redis::cmd("AUTH").arg("s3cret").query::<()>(&mut con)?;
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut con)?;
    assert_eq!(v, None);
    // Removing the password lets new connections in without AUTH.
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("")
        .query::<()>(&mut con)?;
    let mut fresh = server.conn()?;
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut fresh)?;
    assert_eq!(v, None);
    Ok(())
}
