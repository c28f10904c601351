//! Replication commands: REPLICAOF/SLAVEOF, ROLE and WAIT for users; REPLCONF and PSYNC, which
//! a replica sends its leader to start the stream, and SYNC, the pre-2.8 form `redis-cli --rdb`
//! still sends (the server then takes the connection over: Strata's own stream for a replica
//! that said `capa strata`, an RDB file for any other). The replication itself belongs to the
//! server (`ServerApi::replicaof`, `role`, `wait_replicas`).

use bytes::Bytes;
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{self, Args, Failure, Reply};
use crate::errors;
use crate::{Ctx, Outcome, PsyncRequest, ReplicaCapa};

/// The replication family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "replicaof",
        arity: Arity::Exactly(3),
        flags: Flags(ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(replicaof),
        docs: Docs {
            group: "server",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Makes this server a replica of another, or a leader again (NO ONE).",
            syntax: "<host port | NO ONE>",
            tips: &[],
        },
    },
    CommandSpec {
        name: "slaveof",
        arity: Arity::Exactly(3),
        flags: Flags(ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(replicaof),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Makes this server a replica of another, or a leader again (NO ONE).",
            syntax: "<host port | NO ONE>",
            tips: &[],
        },
    },
    CommandSpec {
        name: "role",
        arity: Arity::Exactly(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::ADMIN | acl::DANGEROUS),
        handler: Handler::Reply(role),
        docs: Docs {
            group: "server",
            since: "2.8.12",
            complexity: "O(1)",
            summary: "Returns the replication role of this server.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "wait",
        arity: Arity::Exactly(3),
        flags: Flags(NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(wait),
        docs: Docs {
            group: "server",
            since: "3.0.0",
            complexity: "O(1)",
            summary:
                "Waits until the writes so far reach this many replicas, or the timeout passes.",
            syntax: "numreplicas timeout",
            tips: &["request_policy:all_shards", "response_policy:agg_min"],
        },
    },
    CommandSpec {
        name: "replconf",
        arity: Arity::AtLeast(1),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(replconf),
        docs: Docs {
            group: "server",
            since: "3.0.0",
            complexity: "O(1)",
            summary: "An internal command for configuring the replication stream.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "psync",
        arity: Arity::AtLeast(3),
        flags: Flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(psync),
        docs: Docs {
            group: "server",
            since: "2.8.0",
            complexity: "O(1)",
            summary: "An internal command used in replication.",
            syntax: "replicationid offset",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sync",
        arity: Arity::Exactly(1),
        flags: Flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(sync),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "An internal command used in replication.",
            syntax: "",
            tips: &[],
        },
    },
];

/// A port number 0..=65535, else the error `text`.
fn port(a: &[u8], text: &str) -> Result<u16, Failure> {
    strata::num::parse_i64(a)
        .and_then(|p| u16::try_from(p).ok())
        .ok_or_else(|| Failure::text(text))
}

fn replicaof(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (host, port_arg) = (a.value()?, a.value()?);
    a.finish()?;
    let leader = if host.eq_ignore_ascii_case(b"no") && port_arg.eq_ignore_ascii_case(b"one") {
        None
    } else {
        let p = port(port_arg, errors::INVALID_MASTER_PORT)?;
        Some((String::from_utf8_lossy(host).into_owned(), p))
    };
    let text = ctx.server.replicaof(leader).map_err(Failure::text)?;
    Ok(Frame::simple(text))
}

fn role(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(ctx.server.role())
}

fn wait(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (n, timeout) = (a.int()?, a.int()?);
    a.finish()?;
    if timeout < 0 {
        return Err(Failure::text(errors::TIMEOUT_NEGATIVE));
    }
    // Inside MULTI or a script there is no waiting: the count as it is now (Redis's rule).
    let (n, timeout) = if ctx.session.in_script || ctx.session.ready_keys.is_some() {
        (0, 0)
    } else {
        (n.max(0) as u64, timeout as u64)
    };
    let count = ctx
        .server
        .wait_replicas(n, timeout)
        .map_err(Failure::text)?;
    Ok(Frame::Integer(count as i64))
}

fn replconf(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    let mut a = Args::new(argv);
    // Options come in pairs.
    if !a.remaining().is_multiple_of(2) {
        return Err(cursor::syntax());
    }
    while !a.is_done() {
        let (name, value) = (a.value()?, a.value()?);
        let option = String::from_utf8_lossy(name).to_ascii_lowercase();
        match option.as_str() {
            "listening-port" => ctx.session.replica_port = port(value, errors::NOT_INTEGER)?,
            // Strata's replicas say `capa strata`; Redis's say `capa eof` (and `psync2`, which
            // changes nothing here).
            "capa" => {
                if value.eq_ignore_ascii_case(b"strata") {
                    ctx.session.replica_capa.strata = true;
                } else if value.eq_ignore_ascii_case(b"eof") {
                    ctx.session.replica_capa.eof = true;
                }
            }
            "rdb-only" => ctx.session.replica_capa.rdb_only = value.as_ref() == b"1",
            "ip-address" | "rdb-filter-only" => {}
            // Acknowledgements travel inside the replication stream; a client's gets no reply.
            "ack" | "getack" | "fack" => return Ok(Outcome::Silent),
            _ => {
                return Err(Failure::text(format!(
                    "ERR Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(name)
                )))
            }
        }
    }
    Ok(Outcome::Reply(Frame::ok()))
}

fn psync(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    let mut a = Args::new(argv);
    let (replid, offset) = (a.value()?, a.value()?);
    a.finish()?;
    // The server answers +FULLRESYNC / +CONTINUE itself when it takes the connection over.
    Ok(Outcome::Handover(PsyncRequest {
        replid: String::from_utf8_lossy(replid).into_owned(),
        offset: strata::num::parse_i64(offset).unwrap_or(-1),
        listening_port: ctx.session.replica_port,
        capa: ctx.session.replica_capa,
        sync: false,
    }))
}

/// SYNC: a full copy as an RDB file, without the `+FULLRESYNC` line (what `redis-cli --rdb`
/// and `redis-cli --replica` send). A Strata replica never sends it.
fn sync(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Result<Outcome, Failure> {
    Ok(Outcome::Handover(PsyncRequest {
        replid: "?".into(),
        offset: -1,
        listening_port: ctx.session.replica_port,
        capa: ReplicaCapa {
            strata: false,
            ..ctx.session.replica_capa
        },
        sync: true,
    }))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::{Frame, Outcome, PsyncRequest, ReplicaCapa};

    #[test]
    fn replicaof_and_wait_check_their_numbers() {
        let mut h = Harness::new();
        assert_eq!(
            h.error(&["REPLICAOF", "host", "65536"]),
            "ERR Invalid master port"
        );
        assert_eq!(
            h.error(&["SLAVEOF", "host", "-1"]),
            "ERR Invalid master port"
        );
        // The stand-in server has no replication: its refusal is the reply.
        assert_eq!(
            h.error(&["REPLICAOF", "no", "one"]),
            "ERR replication is not available here"
        );
        assert_eq!(
            h.error(&["WAIT", "x", "0"]),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(h.error(&["WAIT", "1", "-1"]), "ERR timeout is negative");
        assert_eq!(h.run(&["WAIT", "1", "0"]), Frame::Integer(0));
        match h.run(&["ROLE"]) {
            Frame::Array(v) => assert_eq!(v.first(), Some(&Frame::bulk("master"))),
            other => panic!("ROLE answered {other:?}"),
        }
    }

    #[test]
    fn replconf_reads_option_pairs() {
        let mut h = Harness::new();
        assert_eq!(h.error(&["REPLCONF", "capa"]), "ERR syntax error");
        assert_eq!(
            h.run(&["REPLCONF", "listening-port", "7000", "capa", "strata"]),
            Frame::ok()
        );
        assert_eq!(
            h.error(&["REPLCONF", "listening-port", "70000"]),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            h.error(&["REPLCONF", "capa", "x", "bogus", "y"]),
            "ERR Unrecognized REPLCONF option: bogus"
        );
        assert_eq!(
            h.run(&["REPLCONF", "capa", "eof", "capa", "psync2", "rdb-only", "1"]),
            Frame::ok()
        );
        match h.outcome(&["SYNC"]) {
            Outcome::Handover(req) => {
                assert!(req.sync && req.capa.eof && req.capa.rdb_only && !req.capa.strata)
            }
            other => panic!("SYNC gave {other:?}"),
        }
    }

    #[test]
    fn replica_acknowledgements_get_no_reply_and_psync_hands_the_connection_over() {
        let mut h = Harness::new();
        assert_eq!(h.outcome(&["REPLCONF", "ACK", "100"]), Outcome::Silent);
        h.run(&["REPLCONF", "listening-port", "7001", "capa", "strata"]);
        assert_eq!(
            h.outcome(&["PSYNC", "?", "-1"]),
            Outcome::Handover(PsyncRequest {
                replid: "?".into(),
                offset: -1,
                listening_port: 7001,
                capa: ReplicaCapa {
                    strata: true,
                    ..ReplicaCapa::default()
                },
                sync: false,
            })
        );
    }
}
