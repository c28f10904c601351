//! The process: command line, startup failures (port in use, bad directive, locked directory),
//! BGSAVE, SHUTDOWN and SIGTERM, and data surviving a restart.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::{run_to_exit, Server, TestResult};

#[test]
fn version_flag_prints_the_version_line() -> TestResult {
    for flag in ["--version", "-v"] {
        let out = run_to_exit(&[flag])?;
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8(out.stdout)?.trim_end(),
            "Strata server v=0.1.0 (Redis 7.0 compatible)"
        );
    }
    let help = run_to_exit(&["--help"])?;
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8(help.stdout)?.starts_with("Usage: strata-server"));
    Ok(())
}

#[test]
fn port_in_use_is_reported_in_one_line_and_exits_1() -> TestResult {
    let root = tempfile::tempdir()?;
    let holder = TcpListener::bind("127.0.0.1:0")?;
    let port = holder.local_addr()?.port().to_string();
    let dir = root.path().join("data");
    let dir = dir.to_str().ok_or("path")?;
    let out = run_to_exit(&["--port", &port, "--bind", "127.0.0.1", "--dir", dir])?;
    let stderr = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    Ok(())
}

#[test]
fn unknown_directive_exits_1_with_a_message() -> TestResult {
    let out = run_to_exit(&["--no-such-directive", "1"])?;
    let stderr = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no-such-directive"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    Ok(())
}

#[test]
fn second_server_on_the_same_directory_exits_1() -> TestResult {
    let root = tempfile::tempdir()?;
    let _first = Server::start(root.path(), &[])?;
    let port = common::free_port()?.to_string();
    let dir = root.path().join("data");
    let out = run_to_exit(&[
        "--port",
        &port,
        "--bind",
        "127.0.0.1",
        "--dir",
        dir.to_str().ok_or("path")?,
    ])?;
    let stderr = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("locked by another process"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    Ok(())
}

#[test]
fn data_survives_sigterm_and_restart() -> TestResult {
    let root = tempfile::tempdir()?;
    let mut server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    redis::cmd("SET")
        .arg("durable")
        .arg("yes")
        .query::<()>(&mut con)?;
    redis::cmd("SELECT").arg(2).query::<()>(&mut con)?;
    redis::cmd("SET")
        .arg("other-db")
        .arg("1")
        .query::<()>(&mut con)?;
    server.terminate()?;
    assert_eq!(server.wait_exit(Duration::from_secs(20))?, Some(0));
    assert!(server.log_text().contains("Received SIGTERM"));
    drop(server);

    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    let v: Option<String> = redis::cmd("GET").arg("durable").query(&mut con)?;
    assert_eq!(v.as_deref(), Some("yes"));
    redis::cmd("SELECT").arg(2).query::<()>(&mut con)?;
    let v: Option<String> = redis::cmd("GET").arg("other-db").query(&mut con)?;
    assert_eq!(v.as_deref(), Some("1"));
    Ok(())
}

#[test]
fn shutdown_command_flushes_and_exits_0() -> TestResult {
    let root = tempfile::tempdir()?;
    let mut server = Server::start(root.path(), &["--appendfsync", "no"])?;
    let mut con = server.conn()?;
    redis::cmd("SET").arg("k").arg("v").query::<()>(&mut con)?;
    // The connection closes without a reply.
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut con);
    assert_eq!(server.wait_exit(Duration::from_secs(20))?, Some(0));
    drop(server);
    let server = Server::start(root.path(), &[])?;
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut server.conn()?)?;
    assert_eq!(v.as_deref(), Some("v"));
    Ok(())
}

#[test]
fn bgsave_writes_a_checkpoint_and_updates_lastsave() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    redis::cmd("SET").arg("k").arg("v").query::<()>(&mut con)?;
    let before: i64 = redis::cmd("LASTSAVE").query(&mut con)?;
    assert!(before > 0);
    std::thread::sleep(Duration::from_millis(1100));
    for _ in 0..3 {
        let reply: String = redis::cmd("BGSAVE").query(&mut con)?;
        assert_eq!(reply, "Background saving started");
        // Wait for it to finish.
        for _ in 0..500 {
            let info: String = redis::cmd("INFO").arg("persistence").query(&mut con)?;
            if info.contains("rdb_bgsave_in_progress:0\r\n") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let after: i64 = redis::cmd("LASTSAVE").query(&mut con)?;
    assert!(after > before, "{after} <= {before}");
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut con)?;
    assert!(info.contains("rdb_last_bgsave_status:ok\r\n"), "{info}");

    // bgsave-dir defaults to "backup" inside dir.
    let checkpoints = std::fs::read_dir(server.dir.join("backup"))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("checkpoint-"))
        .count();
    assert_eq!(checkpoints, 2, "only the newest two checkpoints are kept");
    Ok(())
}
