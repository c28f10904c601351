//! Replication commands: REPLICAOF/SLAVEOF, ROLE and WAIT for users; REPLCONF and PSYNC, which
//! a replica sends its leader to start the stream (the server then takes the connection over);
//! SYNC, the pre-2.8 protocol Strata does not speak. The replication itself belongs to the
//! server (`ServerApi::replicaof`, `role`, `wait_replicas`).

use bytes::Bytes;
use strata_resp::Frame;

use crate::args;
use crate::errors::{self, err};
use crate::table::CommandSpec;
use crate::{Ctx, PsyncRequest};

macro_rules! row {
    ($name:expr, $arity:expr, [$($flag:expr),*], [$($acl:expr),*], $since:expr, $complexity:expr, $summary:expr, $syntax:expr, $handler:expr) => {
        crate::table::command_row!("server"; $name, $arity, [$($flag),*], 0, 0, 0, [$($acl),*], $since, $complexity, $summary, $syntax, $handler)
    };
}

/// The replication family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!(
        "replicaof",
        3,
        ["admin", "noscript", "stale", "no_async_loading"],
        ["admin", "slow", "dangerous"],
        "5.0.0",
        "O(1)",
        "Makes this server a replica of another, or a leader again (NO ONE).",
        "<host port | NO ONE>",
        replicaof
    ),
    row!(
        "slaveof",
        3,
        ["admin", "noscript", "stale", "no_async_loading"],
        ["admin", "slow", "dangerous"],
        "1.0.0",
        "O(1)",
        "Makes this server a replica of another, or a leader again (NO ONE).",
        "<host port | NO ONE>",
        replicaof
    ),
    row!(
        "role",
        1,
        ["noscript", "loading", "stale", "fast"],
        ["admin", "fast", "dangerous"],
        "2.8.12",
        "O(1)",
        "Returns the replication role of this server.",
        "",
        role
    ),
    row!(
        "wait",
        3,
        ["noscript"],
        ["slow", "connection"],
        "3.0.0",
        "O(1)",
        "Waits until the writes so far reach this many replicas, or the timeout passes.",
        "numreplicas timeout",
        wait
    ),
    row!(
        "replconf",
        -1,
        ["admin", "noscript", "loading", "stale", "allow_busy"],
        ["admin", "slow", "dangerous"],
        "3.0.0",
        "O(1)",
        "An internal command for configuring the replication stream.",
        "",
        replconf
    ),
    row!(
        "psync",
        -3,
        ["admin", "noscript", "no_async_loading", "no_multi"],
        ["admin", "slow", "dangerous"],
        "2.8.0",
        "O(1)",
        "An internal command used in replication.",
        "replicationid offset",
        psync
    ),
    row!(
        "sync",
        1,
        ["admin", "noscript", "no_async_loading", "no_multi"],
        ["admin", "slow", "dangerous"],
        "1.0.0",
        "O(1)",
        "An internal command used in replication.",
        "",
        sync
    ),
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
