//! Server commands: databases (DBSIZE, FLUSHDB, FLUSHALL, SWAPDB), persistence (SAVE, BGSAVE, LASTSAVE,
//! SHUTDOWN), introspection (INFO, CONFIG, TIME, DEBUG SLEEP). Whatever concerns the whole
//! process is asked of the server through `ServerApi`.

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::is;
use crate::command::*;
use crate::cursor::{self, Args, Failure, Reply};
use crate::errors;
use crate::help;
use crate::{Ctx, Outcome};

/// The server family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "dbsize",
        arity: Arity::Exactly(1),
        flags: Flags(READONLY | FAST),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(dbsize),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(N) in Strata (O(1) in Redis)",
            summary: "Counts the keys in the selected database.",
            syntax: "",
            tips: &["request_policy:all_shards", "response_policy:agg_sum"],
        },
    },
    CommandSpec {
        name: "flushdb",
        arity: Arity::AtLeast(1),
        flags: Flags(WRITE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE | acl::DANGEROUS),
        handler: Handler::Reply(flushdb),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Deletes every key of the selected database.",
            syntax: "[async: ASYNC | SYNC]",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "flushall",
        arity: Arity::AtLeast(1),
        flags: Flags(WRITE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE | acl::DANGEROUS),
        handler: Handler::Reply(flushall),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Deletes every key of every database.",
            syntax: "[async: ASYNC | SYNC]",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "swapdb",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE | acl::DANGEROUS),
        handler: Handler::Reply(swapdb),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "O(1)",
            summary: "Exchanges the contents of two databases.",
            syntax: "index1 index2",
            tips: &[],
        },
    },
    CommandSpec {
        name: "time",
        arity: Arity::Exactly(1),
        flags: Flags(LOADING | STALE | FAST),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(time),
        docs: Docs {
            group: "server",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Gives the server clock as seconds and microseconds.",
            syntax: "",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "lastsave",
        arity: Arity::Exactly(1),
        flags: Flags(LOADING | STALE | FAST),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::ADMIN | acl::DANGEROUS),
        handler: Handler::Reply(lastsave),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Gives the Unix time of the most recent successful save.",
            syntax: "",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "bgsave",
        arity: Arity::AtLeast(1),
        flags: Flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(bgsave),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Starts saving the data to disk in the background.",
            syntax: "[SCHEDULE]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "save",
        arity: Arity::Exactly(1),
        flags: Flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(save),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(N) where N is the total number of keys in all databases",
            summary: "Synchronously save the dataset to disk",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "shutdown",
        arity: Arity::AtLeast(1),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(shutdown),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
            summary: "Stops the server after flushing its data.",
            syntax: "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "debug",
        arity: Arity::AtLeast(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(debug),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "Depends on subcommand.",
            summary: "Groups commands meant for debugging the server.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "info",
        arity: Arity::AtLeast(1),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::DANGEROUS),
        handler: Handler::Reply(info),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Reports server state and statistics, by section.",
            syntax: "[section [section ...]]",
            tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        },
    },
    CommandSpec {
        name: "config",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(config),
        docs: Docs {
            group: "server",
            since: "2.0.0",
            complexity: "Depends on subcommand.",
            summary: "Groups the subcommands that read and change the configuration.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "config|get",
        arity: Arity::AtLeast(3),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(config_get),
        docs: Docs {
            group: "server",
            since: "2.0.0",
            complexity: "O(N) when N is the number of configuration parameters provided",
            summary: "Gives the configuration parameters matching patterns, with their values.",
            syntax: "parameter [parameter ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "config|set",
        arity: Arity::AtLeast(4),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(config_set),
        docs: Docs {
            group: "server",
            since: "2.0.0",
            complexity: "O(N) when N is the number of configuration parameters provided",
            summary: "Changes configuration parameters while the server runs.",
            syntax: "parameter value [parameter value ...]",
            tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "config|resetstat",
        arity: Arity::Exactly(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(config_resetstat),
        docs: Docs {
            group: "server",
            since: "2.0.0",
            complexity: "O(1)",
            summary: "Zeroes the statistics that INFO reports.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "config|rewrite",
        arity: Arity::Exactly(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(config_rewrite),
        docs: Docs {
            group: "server",
            since: "2.8.0",
            complexity: "O(1)",
            summary: "Writes the running configuration back to the configuration file.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "config|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(config_help),
        docs: Docs {
            group: "server",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Lists the CONFIG subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
];

fn dbsize(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Integer(ctx.session.db.dbsize()? as i64))
}

/// FLUSHDB/FLUSHALL take at most one of ASYNC / SYNC.
fn flush_mode(argv: &[Bytes]) -> Result<(), Failure> {
    let mut a = Args::new(argv);
    if !a.is_done() {
        a.word(&[("ASYNC", ()), ("SYNC", ())])?;
    }
    a.finish()
}

fn flushdb(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    flush_mode(argv)?;
    crate::watch::touch_flushed(ctx, [ctx.session.db.index()]);
    ctx.session.db.flushdb()?;
    signal_flushed(ctx);
    Ok(Frame::ok())
}

fn flushall(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    flush_mode(argv)?;
    crate::watch::touch_flushed(ctx, 0..ctx.session.db.databases());
    ctx.session.db.flushall()?;
    signal_flushed(ctx);
    Ok(Frame::ok())
}

/// After FLUSHDB or FLUSHALL (Redis's `signalFlushedDb`): every tracking client is told that
/// every key changed (a null), and the tracking table is emptied, whichever database it was.
fn signal_flushed(ctx: &Ctx<'_>) {
    let messages = ctx.server.tracking().invalidate_all();
    if !messages.is_empty() {
        ctx.server.deliver_tracking(messages);
    }
}

/// A database index of SWAPDB: an integer in C `int` range, else the error `text`.
fn swapdb_index(a: &[u8], text: &str) -> Result<i64, Failure> {
    strata::num::parse_i64(a)
        .filter(|n| *n >= i32::MIN as i64 && *n <= i32::MAX as i64)
        .ok_or_else(|| Failure::text(text))
}

fn swapdb(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut args = Args::new(argv);
    let a = swapdb_index(args.value()?, errors::INVALID_FIRST_DB)?;
    let b = swapdb_index(args.value()?, errors::INVALID_SECOND_DB)?;
    args.finish()?;
    let n = ctx.session.db.databases() as i64;
    if a < 0 || b < 0 || a >= n || b >= n {
        return Err(Failure::text(errors::DB_INDEX));
    }
    crate::watch::touch_swapped(ctx, a as u32, b as u32);
    ctx.session.db.swapdb(a as u32, b as u32)?;
    Ok(Frame::ok())
}

fn time(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Frame::Array(vec![
        Frame::bulk(now.as_secs().to_string()),
        Frame::bulk(now.subsec_micros().to_string()),
    ]))
}

fn lastsave(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Integer(ctx.server.lastsave() as i64))
}

fn bgsave(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    if !a.is_done() {
        a.word(&[("SCHEDULE", ())])?;
    }
    a.finish()?;
    ctx.server.bgsave().map_err(Failure::text)?;
    Ok(Frame::simple("Background saving started"))
}

/// SAVE: writes the same checkpoint as BGSAVE, answering once it is on disk.
fn save(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.save().map_err(Failure::text)?;
    Ok(Frame::ok())
}

fn shutdown(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    let mut a = Args::new(argv);
    while !a.is_done() {
        if a.opt("ABORT") {
            return Err(Failure::text(errors::NO_SHUTDOWN_IN_PROGRESS));
        }
        a.word(&[("NOSAVE", ()), ("SAVE", ()), ("NOW", ()), ("FORCE", ())])?;
    }
    ctx.server.shutdown().map_err(Failure::text)?;
    // The server is going away; the connection closes without a reply, as in Redis.
    Ok(Outcome::Close)
}

fn debug(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let sub = a.value()?;
    if is(sub, "sleep") && a.remaining() == 1 {
        let secs = strata::num::parse_f64(a.value()?).unwrap_or(0.0).max(0.0);
        std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        return Ok(Frame::ok());
    }
    if is(sub, "help") {
        return Ok(help::reply(
            "DEBUG",
            &[
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        ));
    }
    Err(Failure::text(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(sub)
    )))
}

fn info(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let sections: Vec<String> = Args::new(argv)
        .rest()
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    Ok(Frame::Verbatim(
        ctx.server.info(ctx.session, &sections).into(),
    ))
}

fn config(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "config"))
}

fn config_get(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let patterns = Args::after_subcommand(argv).rest_slices();
    let found = ctx.server.config_get(&patterns);
    Ok(Frame::Map(
        found
            .into_iter()
            .map(|(k, v)| (Frame::bulk(k), Frame::bulk(v)))
            .collect(),
    ))
}

fn config_set(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    // A name without a value (the arity already asks for one pair).
    if !a.remaining().is_multiple_of(2) {
        return Err(cursor::syntax());
    }
    let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
    let mut pairs = Vec::with_capacity(a.remaining() / 2);
    while !a.is_done() {
        pairs.push((text(a.value()?), text(a.value()?)));
    }
    ctx.server.config_set(&pairs).map_err(Failure::text)?;
    Ok(Frame::ok())
}

fn config_resetstat(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.reset_stats();
    Ok(Frame::ok())
}

fn config_rewrite(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.config_rewrite().map_err(Failure::text)?;
    Ok(Frame::ok())
}

fn config_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn databases_are_counted_flushed_and_swapped() {
        let mut h = Harness::new();
        h.run(&["SET", "a", "1"]);
        assert_eq!(h.run(&["DBSIZE"]), Frame::Integer(1));
        assert_eq!(h.run(&["SWAPDB", "0", "1"]), Frame::ok());
        assert_eq!(h.run(&["DBSIZE"]), Frame::Integer(0));
        assert_eq!(h.error(&["SWAPDB", "x", "1"]), "ERR invalid first DB index");
        assert_eq!(
            h.error(&["SWAPDB", "0", "y"]),
            "ERR invalid second DB index"
        );
        assert_eq!(
            h.error(&["SWAPDB", "0", "4294967296"]),
            "ERR invalid second DB index"
        );
        assert_eq!(
            h.error(&["SWAPDB", "0", "-1"]),
            "ERR DB index is out of range"
        );
        assert_eq!(h.run(&["SWAPDB", "1", "0"]), Frame::ok());
        assert_eq!(h.error(&["FLUSHDB", "LATER"]), "ERR syntax error");
        assert_eq!(h.error(&["FLUSHALL", "SYNC", "ASYNC"]), "ERR syntax error");
        assert_eq!(h.run(&["FLUSHDB", "async"]), Frame::ok());
        assert_eq!(h.run(&["DBSIZE"]), Frame::Integer(0));
        h.run(&["SET", "a", "1"]);
        assert_eq!(h.run(&["FLUSHALL"]), Frame::ok());
        assert_eq!(h.run(&["DBSIZE"]), Frame::Integer(0));
    }

    #[test]
    fn persistence_and_shutdown_check_their_options() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["BGSAVE", "schedule"]),
            Frame::simple("Background saving started")
        );
        assert_eq!(h.error(&["BGSAVE", "now"]), "ERR syntax error");
        assert_eq!(
            h.error(&["SHUTDOWN", "NOSAVE", "ABORT"]),
            "ERR No shutdown in progress."
        );
        assert_eq!(h.error(&["SHUTDOWN", "LATER"]), "ERR syntax error");
        assert_eq!(h.run(&["LASTSAVE"]), Frame::Integer(0));
    }

    #[test]
    fn debug_and_config_read_their_subcommands() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["DEBUG", "SLEEP", "0"]), Frame::ok());
        assert_eq!(
            h.error(&["DEBUG", "SLEEP"]),
            "ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP."
        );
        assert_eq!(
            h.error(&["CONFIG", "SET", "a", "1", "b"]),
            "ERR syntax error"
        );
        assert_eq!(h.run(&["CONFIG", "SET", "a", "1"]), Frame::ok());
        assert_eq!(h.run(&["CONFIG", "GET", "*"]), Frame::Map(vec![]));
        assert_eq!(h.run(&["CONFIG", "RESETSTAT"]), Frame::ok());
        assert_eq!(h.run(&["CONFIG", "REWRITE"]), Frame::ok());
        match h.run(&["TIME"]) {
            Frame::Array(v) => assert_eq!(v.len(), 2),
            other => panic!("TIME answered {other:?}"),
        }
    }
}
