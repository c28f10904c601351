//! Blocking commands end to end (BLPOP, BRPOP, BLMOVE, BLMPOP, BZPOPMIN...): immediate answers,
//! wake-up by another client's write, timeouts, first-blocked-first-served order, chains through
//! BLMOVE, pipelining behind a blocked command, disconnects and CLIENT KILL while blocked.
//! Every wait is bounded: blocking commands use timeouts of a few seconds at most, and helpers
//! poll with deadlines.

mod common;

use std::io::Read;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{read_n, send, Server, TestResult};

type Pair = Option<(String, String)>;

fn blocked_clients(con: &mut redis::Connection) -> redis::RedisResult<i64> {
    let info: String = redis::cmd("INFO").arg("clients").query(con)?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(-1))
}

/// Waits (up to 5 s) until INFO reports `n` blocked clients.
fn wait_blocked(con: &mut redis::Connection, n: i64) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = blocked_clients(con)?;
        if now == n {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("blocked_clients stayed {now}, expected {n}").into());
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `cmd` on a fresh connection in a thread; the result comes back through the handle.
fn spawn_cmd<T: redis::FromRedisValue + Send + 'static>(
    server: &Server,
    cmd: redis::Cmd,
) -> redis::RedisResult<JoinHandle<redis::RedisResult<T>>> {
    let mut con = server.conn()?;
    con.set_read_timeout(Some(Duration::from_secs(10)))?;
    Ok(thread::spawn(move || cmd.query(&mut con)))
}

fn join<T>(h: JoinHandle<redis::RedisResult<T>>) -> Result<T, Box<dyn std::error::Error>> {
    Ok(h.join().map_err(|_| "client thread panicked")??)
}

fn blpop(key: &str, timeout: f64) -> redis::Cmd {
    let mut c = redis::cmd("BLPOP");
    c.arg(key).arg(timeout);
    c
}

#[test]
fn immediate_answers_when_data_is_there() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    redis::cmd("RPUSH")
        .arg("l")
        .arg(&["a", "b", "c"])
        .query::<()>(&mut con)?;
    let got: Pair = redis::cmd("BLPOP")
        .arg(&["missing", "l", "0"])
        .query(&mut con)?;
    assert_eq!(got, Some(("l".into(), "a".into())));
    let got: Pair = redis::cmd("BRPOP").arg(&["l", "0"]).query(&mut con)?;
    assert_eq!(got, Some(("l".into(), "c".into())));
    let got: Option<String> = redis::cmd("BLMOVE")
        .arg(&["l", "dst", "LEFT", "RIGHT", "0"])
        .query(&mut con)?;
    assert_eq!(got.as_deref(), Some("b"));
    let got: Option<String> = redis::cmd("BRPOPLPUSH")
        .arg(&["dst", "l", "0"])
        .query(&mut con)?;
    assert_eq!(got.as_deref(), Some("b"));
    let got: Option<(String, Vec<String>)> = redis::cmd("BLMPOP")
        .arg(&["0", "2", "nope", "l", "RIGHT", "COUNT", "5"])
        .query(&mut con)?;
    assert_eq!(got, Some(("l".into(), vec!["b".into()])));
    redis::cmd("ZADD")
        .arg(&["z", "1", "a", "2", "b", "3", "c"])
        .query::<()>(&mut con)?;
    let got: (String, String, f64) = redis::cmd("BZPOPMAX").arg(&["z", "0"]).query(&mut con)?;
    assert_eq!(got, ("z".into(), "c".into(), 3.0));
    let got: (String, Vec<(String, f64)>) = redis::cmd("BZMPOP")
        .arg(&["0", "1", "z", "MIN", "COUNT", "10"])
        .query(&mut con)?;
    assert_eq!(
        got,
        ("z".into(), vec![("a".into(), 1.0), ("b".into(), 2.0)])
    );
    assert_eq!(blocked_clients(&mut con)?, 0);
    Ok(())
}

#[test]
fn a_push_from_another_client_wakes_the_blocked_one() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let started = Instant::now();
    let waiter = spawn_cmd::<Pair>(&server, blpop("k", 5.0))?;
    wait_blocked(&mut con, 1)?;
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con)?;
    assert!(
        list.contains(" flags=b ") && list.contains(" cmd=blpop "),
        "{list}"
    );
    redis::cmd("RPUSH")
        .arg("k")
        .arg("v")
        .query::<()>(&mut con)?;
    assert_eq!(join(waiter)?, Some(("k".into(), "v".into())));
    assert!(started.elapsed() < Duration::from_secs(4));
    // The element went to the blocked client, not into the list.
    let len: i64 = redis::cmd("LLEN").arg("k").query(&mut con)?;
    assert_eq!(len, 0);
    assert_eq!(blocked_clients(&mut con)?, 0);
    Ok(())
}

#[test]
fn wrong_type_writes_keep_the_client_blocked_until_its_type_arrives() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let waiter = spawn_cmd::<Pair>(&server, {
        let mut c = redis::cmd("BLPOP");
        c.arg(&["a", "b", "5"]);
        c
    })?;
    wait_blocked(&mut con, 1)?;
    // A sorted set at `a` does not serve a BLPOP (Redis 7.0 keeps it blocked)...
    redis::cmd("ZADD")
        .arg(&["a", "1", "m"])
        .query::<()>(&mut con)?;
    thread::sleep(Duration::from_millis(50));
    assert_eq!(blocked_clients(&mut con)?, 1);
    // ...a list at `b` does, even though `a` comes first and is of the wrong type.
    redis::cmd("LPUSH").arg(&["b", "x"]).query::<()>(&mut con)?;
    assert_eq!(join(waiter)?, Some(("b".into(), "x".into())));
    Ok(())
}

#[test]
fn timeouts_reply_null_and_validate_like_redis() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let started = Instant::now();
    let got: Pair = blpop("k", 0.1).query(&mut con)?;
    let took = started.elapsed();
    assert_eq!(got, None);
    assert!(
        took >= Duration::from_millis(95) && took < Duration::from_secs(2),
        "{took:?}"
    );
    let mut raw = server.raw()?;
    send(
        &mut raw,
        b"BLMOVE a b LEFT LEFT 0.05\r\nBZPOPMIN z 0.05\r\n",
    )?;
    assert_eq!(read_n(&mut raw, 10)?, b"*-1\r\n*-1\r\n");
    send(&mut raw, b"HELLO 3\r\n")?;
    let mut buf = [0u8; 4096];
    let _ = raw.read(&mut buf)?;
    send(&mut raw, b"BRPOP k 0.05\r\n")?;
    assert_eq!(read_n(&mut raw, 3)?, b"_\r\n");
    for (arg, msg) in [
        ("-1", "-ERR timeout is negative\r\n"),
        ("abc", "-ERR timeout is not a float or out of range\r\n"),
        ("inf", "-ERR timeout is negative\r\n"),
    ] {
        send(&mut raw, format!("BLPOP k {arg}\r\n").as_bytes())?;
        assert_eq!(read_n(&mut raw, msg.len())?, msg.as_bytes(), "{arg}");
    }
    assert_eq!(blocked_clients(&mut con)?, 0);
    Ok(())
}

#[test]
fn first_blocked_is_first_served() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let first = spawn_cmd::<Pair>(&server, blpop("k", 5.0))?;
    wait_blocked(&mut con, 1)?;
    let second = spawn_cmd::<Pair>(&server, blpop("k", 5.0))?;
    wait_blocked(&mut con, 2)?;
    let third = spawn_cmd::<Pair>(&server, blpop("k", 5.0))?;
    wait_blocked(&mut con, 3)?;
    // One push of two elements serves the first two, in order, before it replies.
    let n: i64 = redis::cmd("RPUSH").arg(&["k", "1", "2"]).query(&mut con)?;
    assert_eq!(n, 2);
    assert_eq!(blocked_clients(&mut con)?, 1);
    let left: i64 = redis::cmd("LLEN").arg("k").query(&mut con)?;
    assert_eq!(left, 0);
    assert_eq!(join(first)?, Some(("k".into(), "1".into())));
    assert_eq!(join(second)?, Some(("k".into(), "2".into())));
    redis::cmd("RPUSH").arg(&["k", "3"]).query::<()>(&mut con)?;
    assert_eq!(join(third)?, Some(("k".into(), "3".into())));
    Ok(())
}

#[test]
fn blmove_chains_wake_the_next_client() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let mover = spawn_cmd::<Option<String>>(&server, {
        let mut c = redis::cmd("BLMOVE");
        c.arg(&["a", "b", "LEFT", "RIGHT", "5"]);
        c
    })?;
    wait_blocked(&mut con, 1)?;
    let mover2 = spawn_cmd::<Option<String>>(&server, {
        let mut c = redis::cmd("BRPOPLPUSH");
        c.arg(&["b", "c", "5"]);
        c
    })?;
    wait_blocked(&mut con, 2)?;
    let popper = spawn_cmd::<Option<(String, Vec<String>)>>(&server, {
        let mut c = redis::cmd("BLMPOP");
        c.arg(&["5", "1", "c", "LEFT", "COUNT", "2"]);
        c
    })?;
    wait_blocked(&mut con, 3)?;
    redis::cmd("LPUSH").arg(&["a", "x"]).query::<()>(&mut con)?;
    assert_eq!(join(mover)?.as_deref(), Some("x"));
    assert_eq!(join(mover2)?.as_deref(), Some("x"));
    assert_eq!(join(popper)?, Some(("c".into(), vec!["x".into()])));
    let exists: i64 = redis::cmd("EXISTS").arg(&["a", "b", "c"]).query(&mut con)?;
    assert_eq!(exists, 0);
    Ok(())
}

#[test]
fn bzpopmin_is_woken_by_zadd() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let waiter = spawn_cmd::<Option<(String, String, f64)>>(&server, {
        let mut c = redis::cmd("BZPOPMIN");
        c.arg(&["z1", "z2", "5"]);
        c
    })?;
    wait_blocked(&mut con, 1)?;
    redis::cmd("ZADD")
        .arg(&["z2", "2", "b", "1.5", "a"])
        .query::<()>(&mut con)?;
    assert_eq!(join(waiter)?, Some(("z2".into(), "a".into(), 1.5)));
    let waiter = spawn_cmd::<Option<(String, Vec<(String, f64)>)>>(&server, {
        let mut c = redis::cmd("BZMPOP");
        c.arg(&["5", "1", "dst", "MAX", "COUNT", "5"]);
        c
    })?;
    wait_blocked(&mut con, 1)?;
    redis::cmd("ZUNIONSTORE")
        .arg(&["dst", "1", "z2"])
        .query::<()>(&mut con)?;
    assert_eq!(join(waiter)?, Some(("dst".into(), vec![("b".into(), 2.0)])));
    Ok(())
}

#[test]
fn pipelined_commands_wait_behind_a_blocked_one() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let mut raw = server.raw()?;
    send(&mut raw, b"PING\r\nBLPOP k 5\r\nPING\r\n")?;
    assert_eq!(read_n(&mut raw, 7)?, b"+PONG\r\n");
    wait_blocked(&mut con, 1)?;
    raw.set_read_timeout(Some(Duration::from_millis(150)))?;
    let mut buf = [0u8; 64];
    assert!(raw.read(&mut buf).is_err(), "replied while blocked");
    raw.set_read_timeout(Some(Duration::from_secs(5)))?;
    redis::cmd("RPUSH").arg(&["k", "v"]).query::<()>(&mut con)?;
    let want = b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n+PONG\r\n";
    assert_eq!(read_n(&mut raw, want.len())?, want);
    Ok(())
}

#[test]
fn a_disconnect_while_blocked_removes_the_waiter() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let mut raw = server.raw()?;
    send(&mut raw, b"BLPOP k 0\r\n")?;
    wait_blocked(&mut con, 1)?;
    drop(raw);
    wait_blocked(&mut con, 0)?;
    // Nobody is left to take the element.
    redis::cmd("RPUSH").arg(&["k", "v"]).query::<()>(&mut con)?;
    let len: i64 = redis::cmd("LLEN").arg("k").query(&mut con)?;
    assert_eq!(len, 1);
    Ok(())
}

#[test]
fn client_kill_closes_a_blocked_client() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let mut raw = server.raw()?;
    send(&mut raw, b"CLIENT ID\r\nBLPOP k 0\r\n")?;
    let reply = String::from_utf8(read_n(&mut raw, 4)?)?;
    let id: String = reply.trim_start_matches(':').trim().to_string();
    wait_blocked(&mut con, 1)?;
    let killed: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "ID", &id])
        .query(&mut con)?;
    assert_eq!(killed, 1);
    wait_blocked(&mut con, 0)?;
    assert!(common::closed_by_peer(&mut raw));
    Ok(())
}

#[test]
fn many_concurrent_pushes_and_pops_lose_nothing() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    const N: usize = 200;
    let mut waiters = Vec::new();
    for _ in 0..4 {
        let mut c = server.conn()?;
        c.set_read_timeout(Some(Duration::from_secs(10)))?;
        waiters.push(thread::spawn(move || -> redis::RedisResult<Vec<String>> {
            let mut got = Vec::new();
            for _ in 0..N / 4 {
                let r: Pair = blpop("q", 5.0).query(&mut c)?;
                got.extend(r.map(|(_, v)| v));
            }
            Ok(got)
        }));
    }
    let mut pushers = Vec::new();
    for p in 0..2 {
        let mut c = server.conn()?;
        pushers.push(thread::spawn(move || -> redis::RedisResult<()> {
            for i in 0..N / 2 {
                redis::cmd("RPUSH")
                    .arg("q")
                    .arg(format!("{p}-{i}"))
                    .query::<()>(&mut c)?;
            }
            Ok(())
        }));
    }
    for p in pushers {
        join(p)?;
    }
    let mut all = Vec::new();
    for w in waiters {
        all.extend(join(w)?);
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), N);
    Ok(())
}
