//! The round trip the dump format exists for: a real `strata-server` writes every type (with
//! TTLs, in two databases) → it stops → `strata export` → `strata import` into a new directory →
//! a server on that directory answers the same. Also: reads work while the server runs.
//!
//! The server binary is `strata-server` next to the `strata` binary under test (the workspace
//! build puts both in `<target>/release`).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

type R = Result<(), Box<dyn std::error::Error>>;

fn server_binary() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let cli = Path::new(env!("CARGO_BIN_EXE_strata"));
    let server = cli.with_file_name("strata-server");
    if !server.is_file() {
        return Err(format!(
            "{} is missing: build the workspace first (cargo build --release --workspace)",
            server.display()
        )
        .into());
    }
    Ok(server)
}

/// A running server, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path) -> Result<Server, Box<dyn std::error::Error>> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new(server_binary()?)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--dir"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = server.child.try_wait()? {
                return Err(format!("strata-server exited early: {status}").into());
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err("strata-server did not start in 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn conn(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?.get_connection()
    }

    /// SHUTDOWN, then wait for the process to exit.
    fn stop(mut self) -> R {
        let mut c = self.conn()?;
        let _ = redis::cmd("SHUTDOWN").query::<()>(&mut c);
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                return Err("strata-server did not stop in 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn strata(dir: &Path, args: &[&str]) -> Result<Output, Box<dyn std::error::Error>> {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("-d")
        .arg(dir)
        .args(args)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "strata {args:?} failed ({:?}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(out)
}

/// What a server answers about the keys the test wrote, as comparable text.
fn answers(c: &mut redis::Connection) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let mut q = |args: &[&str]| -> Result<(), Box<dyn std::error::Error>> {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let v: redis::Value = cmd.query(c)?;
        out.push(format!("{args:?} -> {v:?}"));
        Ok(())
    };
    q(&["SELECT", "0"])?;
    q(&["GET", "str"])?;
    q(&["GET", "bin"])?;
    q(&["HGETALL", "hash"])?;
    q(&["LRANGE", "list", "0", "-1"])?;
    q(&["SMEMBERS", "set"])?;
    q(&["ZRANGE", "zset", "0", "-1", "WITHSCORES"])?;
    q(&["LLEN", "biglist"])?;
    q(&["LINDEX", "biglist", "1234"])?;
    q(&["SCARD", "bigset"])?;
    q(&["TYPE", "hash"])?;
    q(&["DBSIZE"])?;
    q(&["EXISTS", "gone"])?;
    q(&["SELECT", "5"])?;
    q(&["GET", "in5"])?;
    q(&["DBSIZE"])?;
    q(&["SELECT", "0"])?;
    let pttl: i64 = redis::cmd("PTTL").arg("hash").query(c)?;
    out.push(format!(
        "hash expires within 100 s: {}",
        pttl > 0 && pttl <= 100_000
    ));
    let ttl: i64 = redis::cmd("TTL").arg("str").query(c)?;
    out.push(format!("str ttl {ttl}"));
    Ok(out)
}

/// The first complete `checkpoint-*` directory under `parent` (waits up to 30 s).
fn wait_for_checkpoint(parent: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("checkpoint-")
                    && !name.ends_with(".tmp")
                    && e.path().join("CURRENT").is_file()
                {
                    return Ok(e.path());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("no checkpoint appeared under {}", parent.display()).into())
}

#[test]
fn server_data_survives_export_and_import_into_a_new_directory() -> R {
    let root = tempfile::tempdir()?;
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    let server = Server::start(&a)?;
    let mut c = server.conn()?;
    redis::cmd("SET")
        .arg("str")
        .arg("hello")
        .query::<()>(&mut c)?;
    redis::cmd("SET")
        .arg("bin")
        .arg(&b"\x00\xff\r\n"[..])
        .query::<()>(&mut c)?;
    redis::cmd("HSET")
        .arg(&["hash", "f1", "v1", "f2", "v2"])
        .query::<()>(&mut c)?;
    redis::cmd("EXPIRE")
        .arg("hash")
        .arg(100)
        .query::<()>(&mut c)?;
    redis::cmd("RPUSH")
        .arg(&["list", "a", "b", "a"])
        .query::<()>(&mut c)?;
    redis::cmd("SADD")
        .arg(&["set", "x", "y", "z"])
        .query::<()>(&mut c)?;
    redis::cmd("ZADD")
        .arg(&["zset", "1", "one", "-inf", "low", "2.5", "two"])
        .query::<()>(&mut c)?;
    let items: Vec<String> = (0..3000).map(|i| format!("item-{i}")).collect();
    redis::cmd("RPUSH")
        .arg("biglist")
        .arg(&items)
        .query::<()>(&mut c)?;
    redis::cmd("SADD")
        .arg("bigset")
        .arg(&items)
        .query::<()>(&mut c)?;
    redis::cmd("SET")
        .arg("gone")
        .arg("x")
        .arg("PX")
        .arg(1)
        .query::<()>(&mut c)?;
    redis::cmd("SELECT").arg(5).query::<()>(&mut c)?;
    redis::cmd("SET")
        .arg("in5")
        .arg("five")
        .query::<()>(&mut c)?;
    std::thread::sleep(Duration::from_millis(5));

    // Reads work while the server runs (read-only, with a note).
    let live = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("-d")
        .arg(&a)
        .args(["get", "str"])
        .output()?;
    assert_eq!(String::from_utf8_lossy(&live.stdout), "hello\n");

    // A live backup goes through the server's BGSAVE checkpoint, which `strata restore` takes.
    redis::cmd("BGSAVE").query::<()>(&mut c)?;
    let checkpoint = wait_for_checkpoint(&a.join("backup"))?;
    let restored = root.path().join("restored");
    strata(&restored, &["restore", checkpoint.to_str().ok_or("path")?])?;
    let got = strata(&restored, &["-n", "5", "get", "in5"])?;
    assert_eq!(String::from_utf8_lossy(&got.stdout), "five\n");

    // `strata backup` of the live directory: a logical copy that carries FUNCTION libraries too.
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=lib\nredis.register_function('hi', function() return 'hi' end)")
        .query::<()>(&mut c)?;
    let live_copy = root.path().join("live-copy");
    strata(&a, &["backup", live_copy.to_str().ok_or("path")?])?;

    let before = answers(&mut c)?;
    drop(c);
    server.stop()?;

    let copy_server = Server::start(&live_copy)?;
    let mut cc = copy_server.conn()?;
    let hi: String = redis::cmd("FCALL").arg("hi").arg(0).query(&mut cc)?;
    assert_eq!(hi, "hi");
    assert_eq!(answers(&mut cc)?, before);
    drop(cc);
    copy_server.stop()?;

    let dump = root.path().join("a.dump");
    strata(&a, &["export", dump.to_str().ok_or("path")?])?;
    strata(&b, &["import", dump.to_str().ok_or("path")?])?;
    let check = strata(&b, &["--json", "check"])?;
    let check: serde_json::Value = serde_json::from_slice(&check.stdout)?;
    assert_eq!(check["unrepaired"], 0);

    let server = Server::start(&b)?;
    let mut c = server.conn()?;
    let after = answers(&mut c)?;
    assert_eq!(before, after);
    drop(c);
    server.stop()?;
    Ok(())
}
