//! Replication commands: REPLICAOF/SLAVEOF, ROLE and WAIT for users; REPLCONF and PSYNC, which
//! a replica sends its leader to start the stream (the server then takes the connection over);
//! SYNC, the pre-2.8 protocol Strata does not speak. The replication itself belongs to the
//! server (`ServerApi::replicaof`, `role`, `wait_replicas`).

use bytes::Bytes;
use strata_resp::Frame;

use crate::args;
use crate::command::*;
use crate::errors::{self, err};
use crate::{Ctx, PsyncRequest};

/// The replication family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "replicaof",
        arity: Arity::Exactly(3),
        flags: Flags(ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: plain!(replicaof),
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
        handler: plain!(replicaof),
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
        handler: plain!(role),
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
        handler: plain!(wait),
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
        handler: plain!(replconf),
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
        handler: plain!(psync),
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
        handler: plain!(sync),
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

fn replicaof(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let leader = if argv[1].eq_ignore_ascii_case(b"no") && argv[2].eq_ignore_ascii_case(b"one") {
        None
    } else {
        match args::int(&argv[2]) {
            Ok(p) if (0..=65535).contains(&p) => {
                Some((String::from_utf8_lossy(&argv[1]).into_owned(), p as u16))
            }
            _ => return err(errors::INVALID_MASTER_PORT),
        }
    };
    match ctx.server.replicaof(leader) {
        Ok(text) => Frame::simple(text),
        Err(e) => err(e),
    }
}

fn role(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    ctx.server.role()
}

fn wait(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let Ok(n) = args::int(&argv[1]) else {
        return err(errors::NOT_INTEGER);
    };
    let Ok(timeout) = args::int(&argv[2]) else {
        return err(errors::NOT_INTEGER);
    };
    if timeout < 0 {
        return err(errors::TIMEOUT_NEGATIVE);
    }
    // Inside MULTI or a script there is no waiting: the count as it is now (Redis's rule).
    let (n, timeout) = if ctx.session.in_script || ctx.session.ready_keys.is_some() {
        (0, 0)
    } else {
        (n.max(0) as u64, timeout as u64)
    };
    match ctx.server.wait_replicas(n, timeout) {
        Ok(count) => Frame::Integer(count as i64),
        Err(e) => err(e),
    }
}

fn replconf(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len().is_multiple_of(2) {
        return err(errors::SYNTAX);
    }
    for pair in argv[1..].chunks(2) {
        let option = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
        match option.as_str() {
            "listening-port" => match args::int(&pair[1]) {
                Ok(p) if (0..=65535).contains(&p) => ctx.session.replica_port = p as u16,
                _ => return err(errors::NOT_INTEGER),
            },
            // Strata's replicas say `capa strata`; Redis's capabilities mean nothing here.
            "capa" | "ip-address" | "rdb-only" | "rdb-filter-only" => {}
            // Acknowledgements travel inside the replication stream; a client's gets no reply.
            "ack" | "getack" | "fack" => {
                ctx.session.suppress_reply = true;
                return Frame::ok();
            }
            _ => {
                return err(format!(
                    "ERR Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(&pair[0])
                ))
            }
        }
    }
    Frame::ok()
}

fn psync(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let offset = args::int(&argv[2]).unwrap_or(-1);
    ctx.session.psync = Some(PsyncRequest {
        replid: String::from_utf8_lossy(&argv[1]).into_owned(),
        offset,
        listening_port: ctx.session.replica_port,
    });
    // The server answers +FULLRESYNC / +CONTINUE itself when it takes the connection over.
    ctx.session.suppress_reply = true;
    Frame::ok()
}

fn sync(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    err(errors::SYNC_UNSUPPORTED)
}
