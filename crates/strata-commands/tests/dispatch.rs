//! The command layer without a network: dispatch, arity, errors and replies, driven through
//! `execute` with a stand-in server.

use bytes::Bytes;
use strata_commands::testing::NoServer;
use strata_commands::{execute, Ctx, Frame, Session};

struct Harness {
    _dir: tempfile::TempDir,
    session: Session,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = strata::Db::open(dir.path()).expect("open");
        Harness {
            _dir: dir,
            session: Session::new(1, db, false),
        }
    }

    fn run(&mut self, args: &[&str]) -> Frame {
        let argv: Vec<Bytes> = args
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        let mut ctx = Ctx {
            session: &mut self.session,
            server: &NoServer::default(),
        };
        execute(&mut ctx, &argv).into_reply()
    }
}

fn error(text: &str) -> Frame {
    Frame::Error(Bytes::copy_from_slice(text.as_bytes()))
}

#[test]
fn unknown_commands_and_wrong_arity_use_redis_text() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["foo", "a", "b"]),
        error("ERR unknown command 'foo', with args beginning with: 'a' 'b' ")
    );
    assert_eq!(
        h.run(&["GET"]),
        error("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        h.run(&["config", "get"]),
        error("ERR wrong number of arguments for 'config|get' command")
    );
    assert_eq!(
        h.run(&["config", "nope"]),
        error("ERR unknown subcommand 'nope'. Try CONFIG HELP.")
    );
}

#[test]
fn set_options_conflict_as_in_redis() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["set", "k", "v", "nx", "xx"]),
        error("ERR syntax error")
    );
    assert_eq!(
        h.run(&["set", "k", "v", "ex", "1", "px", "1"]),
        error("ERR syntax error")
    );
    assert_eq!(
        h.run(&["set", "k", "v", "keepttl", "ex", "1"]),
        error("ERR syntax error")
    );
    assert_eq!(
        h.run(&["set", "k", "v", "ex", "0"]),
        error("ERR invalid expire time in 'set' command")
    );
    assert_eq!(
        h.run(&["set", "k", "v", "ex", "abc"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        h.run(&["set", "k", "v", "ex", "100", "ex", "200"]),
        Frame::ok()
    );
    assert_eq!(h.run(&["set", "k", "w", "nx"]), Frame::Null);
    assert_eq!(h.run(&["set", "k", "w", "get"]), Frame::bulk("v"));
}

#[test]
fn counters_reply_with_integers_and_redis_errors() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["incr", "n"]), Frame::Integer(1));
    assert_eq!(h.run(&["incrby", "n", "41"]), Frame::Integer(42));
    assert_eq!(h.run(&["decrby", "n", "2"]), Frame::Integer(40));
    assert_eq!(
        h.run(&["decrby", "n", "-9223372036854775808"]),
        error("ERR decrement would overflow")
    );
    assert_eq!(
        h.run(&["incrby", "n", "x"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(h.run(&["incrbyfloat", "f", "3.0e3"]), Frame::bulk("3000"));
}

#[test]
fn command_getkeys_reads_the_table() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["command", "getkeys", "mset", "a", "1", "b", "2"]),
        Frame::Array(vec![Frame::bulk("a"), Frame::bulk("b")])
    );
    assert_eq!(
        h.run(&["command", "getkeys", "ping", "x"]),
        error("ERR The command has no key arguments")
    );
    assert_eq!(
        h.run(&["command", "getkeys", "get", "a", "b"]),
        error("ERR Invalid number of arguments specified for command")
    );
}

#[test]
fn expire_options_are_validated() {
    let mut h = Harness::new();
    h.run(&["set", "k", "v"]);
    assert_eq!(
        h.run(&["expire", "k", "10", "nx", "xx"]),
        error("ERR NX and XX, GT or LT options at the same time are not compatible")
    );
    assert_eq!(
        h.run(&["expire", "k", "10", "gt", "lt"]),
        error("ERR GT and LT options at the same time are not compatible")
    );
    assert_eq!(
        h.run(&["expire", "k", "10", "foo"]),
        error("ERR Unsupported option foo")
    );
    assert_eq!(h.run(&["expire", "k", "10", "xx"]), Frame::Integer(0));
    assert_eq!(h.run(&["expire", "k", "10"]), Frame::Integer(1));
    assert_eq!(h.run(&["ttl", "k"]), Frame::Integer(10));
}
