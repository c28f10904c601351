//! Pub/sub and keyspace notifications end to end with the `redis` crate: subscribe, publish,
//! patterns, keyspace events, and cleanup after a subscriber leaves. Every wait is bounded by a
//! read timeout.

mod common;

use std::time::Duration;

use common::{Server, TestResult};

#[test]
fn subscribers_receive_published_messages() -> TestResult {
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path(), &[])?;
    let mut sub_con = server.conn()?;
    sub_con.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut pubsub = sub_con.as_pubsub();
    pubsub.subscribe("news")?;
    pubsub.psubscribe("ne*")?;
    let mut con = server.conn()?;
    let receivers: i64 = redis::cmd("PUBLISH")
        .arg("news")
        .arg("hello")
        .query(&mut con)?;
    assert_eq!(receivers, 2);
    let m = pubsub.get_message()?;
    assert_eq!(m.get_channel_name(), "news");
    assert_eq!(m.get_payload::<String>()?, "hello");
    assert!(!m.from_pattern());
    let p = pubsub.get_message()?;
    assert_eq!(p.get_pattern::<String>()?, "ne*");
    assert_eq!(p.get_payload::<String>()?, "hello");
    Ok(())
}

#[test]
fn keyspace_events_reach_a_subscriber() -> TestResult {
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path(), &["--notify-keyspace-events", "KEA"])?;
    let mut sub_con = server.conn()?;
    sub_con.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut pubsub = sub_con.as_pubsub();
    pubsub.psubscribe("__keyspace@0__:*")?;
    let mut con = server.conn()?;
    redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("EX")
        .arg(100)
        .query::<()>(&mut con)?;
    redis::cmd("LPUSH")
        .arg("l")
        .arg("a")
        .query::<()>(&mut con)?;
    redis::cmd("LPOP").arg("l").query::<()>(&mut con)?;
    let mut got = Vec::new();
    for _ in 0..5 {
        let m = pubsub.get_message()?;
        got.push(format!(
            "{} {}",
            m.get_channel_name(),
            m.get_payload::<String>()?
        ));
    }
    assert_eq!(
        got,
        [
            "__keyspace@0__:k set",
            "__keyspace@0__:k expire",
            "__keyspace@0__:l lpush",
            "__keyspace@0__:l lpop",
            "__keyspace@0__:l del"
        ]
    );
    Ok(())
}

#[test]
fn a_departed_subscriber_no_longer_counts() -> TestResult {
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path(), &[])?;
    let mut con = server.conn()?;
    {
        let mut sub_con = server.conn()?;
        let mut pubsub = sub_con.as_pubsub();
        pubsub.subscribe("c")?;
        let n: i64 = redis::cmd("PUBLISH").arg("c").arg("x").query(&mut con)?;
        assert_eq!(n, 1);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let n: i64 = redis::cmd("PUBLISH").arg("c").arg("x").query(&mut con)?;
        if n == 0 {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err("the closed subscriber still receives messages".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
