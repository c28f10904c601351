//! The client registry as users see it: CLIENT LIST / INFO / KILL, maxclients, idle timeout,
//! and the INFO sections built from it.

mod common;

use std::time::{Duration, Instant};

use common::{closed_by_peer, read_n, send, Server, TestResult};

fn client_id(con: &mut redis::Connection) -> redis::RedisResult<i64> {
    redis::cmd("CLIENT").arg("ID").query(con)
}

#[test]
fn client_list_shows_redis_fields_for_every_client() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut a = server.conn()?;
    wait_connected_clients(&mut a, 1)?;
    let mut b = server.conn()?;
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg("worker")
        .query::<()>(&mut b)?;
    redis::cmd("SELECT").arg(3).query::<()>(&mut b)?;
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut a)?;
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    let worker = lines
        .iter()
        .find(|l| l.contains(" name=worker "))
        .ok_or("named client missing")?;
    for field in [
        "id=",
        " addr=127.0.0.1:",
        " laddr=127.0.0.1:",
        " fd=",
        " age=",
        " idle=",
        " flags=N ",
        " db=3 ",
        " sub=0 psub=0 ssub=0 multi=-1 qbuf=",
        " qbuf-free=",
        " argv-mem=",
        " tot-mem=",
        " events=r cmd=select ",
        " user=default redir=-1 resp=2",
    ] {
        assert!(worker.contains(field), "{field} missing in {worker}");
    }
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut a)?;
    assert!(
        info.contains(&format!("id={} ", client_id(&mut a)?)),
        "{info}"
    );
    assert!(info.contains(" cmd=client|info "), "{info}");
    Ok(())
}

#[test]
fn client_kill_by_id_closes_an_idle_connection_promptly() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut victim = server.raw()?;
    send(&mut victim, b"CLIENT ID\r\n")?;
    let reply = read_n(&mut victim, 4)?;
    let text = String::from_utf8(reply)?;
    let id: i64 = text.trim_start_matches(':').trim().parse()?;

    let mut admin = server.conn()?;
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query(&mut admin)?;
    assert_eq!(killed, 1);
    let start = Instant::now();
    assert!(closed_by_peer(&mut victim));
    assert!(start.elapsed() < Duration::from_secs(5));

    // The killer itself is untouched (SKIPME yes by default). The readiness probe's connection
    // may still be listed for a moment after start.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin)?;
        if list.lines().count() == 1 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("more than the admin client listed: {list}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn client_kill_by_addr_and_skipme() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut me = server.raw()?;
    let mut admin = server.conn()?;
    // The readiness probe's connection may still be listed: the victim must be `me`.
    wait_connected_clients(&mut admin, 2)?;
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin)?;
    let admin_id = client_id(&mut admin)?;
    let victim_line = list
        .lines()
        .find(|l| !l.starts_with(&format!("id={admin_id} ")))
        .ok_or("victim missing")?;
    let addr = victim_line
        .split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .ok_or("no addr")?;
    // Old form: CLIENT KILL ip:port.
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg(addr)
        .query::<()>(&mut admin)?;
    assert!(closed_by_peer(&mut me));

    // SKIPME no kills the caller too, after its reply.
    let mut s = server.raw()?;
    send(&mut s, b"CLIENT KILL TYPE normal SKIPME no\r\n")?;
    assert_eq!(read_n(&mut s, 4)?, b":2\r\n");
    assert!(closed_by_peer(&mut s));
    Ok(())
}

/// Polls INFO until the server counts exactly `n` connected clients.
fn wait_connected_clients(con: &mut redis::Connection, n: usize) -> TestResult {
    let needle = format!("connected_clients:{n}\r\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO").arg("clients").query(con)?;
        if info.contains(&needle) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("never reached {needle:?}: {info}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn clients_over_maxclients_are_refused() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &["--maxclients", "2"])?;
    let mut a = server.conn()?;
    // The readiness probe's connection may still be counted for a moment after start.
    wait_connected_clients(&mut a, 1)?;
    let _b = server.conn()?;
    let mut third = server.raw()?;
    let expected = b"-ERR max number of clients reached\r\n";
    assert_eq!(read_n(&mut third, expected.len())?, expected);
    assert!(closed_by_peer(&mut third));
    let info: String = redis::cmd("INFO").arg("stats").query(&mut a)?;
    assert!(info.contains("rejected_connections:1\r\n"), "{info}");
    Ok(())
}

#[test]
fn idle_clients_are_closed_after_timeout() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &["--timeout", "1"])?;
    let mut idle = server.raw()?;
    send(&mut idle, b"PING\r\n")?;
    assert_eq!(read_n(&mut idle, 7)?, b"+PONG\r\n");
    let start = Instant::now();
    assert!(closed_by_peer(&mut idle));
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    Ok(())
}

#[test]
fn info_reports_redis_sections_and_keyspace() -> TestResult {
    let root = tempfile::tempdir()?;
    let server = Server::start(root.path(), &[])?;
    let mut con = server.conn()?;
    wait_connected_clients(&mut con, 1)?;
    redis::cmd("SET").arg("a").arg("1").query::<()>(&mut con)?;
    redis::cmd("SET")
        .arg("b")
        .arg("2")
        .arg("EX")
        .arg(100)
        .query::<()>(&mut con)?;
    let info: String = redis::cmd("INFO").query(&mut con)?;
    for needle in [
        "# Server\r\n",
        "redis_version:7.0.15\r\n",
        "strata_version:0.1.0\r\n",
        &format!("tcp_port:{}\r\n", server.port),
        "# Clients\r\nconnected_clients:1\r\n",
        "# Memory\r\n",
        "maxmemory_policy:noeviction\r\n",
        "# Persistence\r\nloading:0\r\n",
        "aof_enabled:1\r\n",
        "# Stats\r\n",
        "# Replication\r\nrole:master\r\n",
        "# CPU\r\nused_cpu_sys:",
        "# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=",
    ] {
        assert!(info.contains(needle), "{needle:?} missing in {info}");
    }
    let run_id = info
        .lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .ok_or("no run_id")?;
    assert_eq!(run_id.len(), 40);

    let only: String = redis::cmd("INFO")
        .arg("clients")
        .arg("CPU")
        .query(&mut con)?;
    assert!(only.starts_with("# Clients\r\n"), "{only}");
    assert!(only.contains("\r\n\r\n# CPU\r\n"), "{only}");
    assert!(!only.contains("# Server"), "{only}");
    let stats: String = redis::cmd("INFO").arg("stats").query(&mut con)?;
    let processed: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .ok_or("no total_commands_processed")?
        .parse()?;
    assert!(processed >= 4, "{stats}");
    Ok(())
}
