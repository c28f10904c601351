//! Server commands: databases (DBSIZE, FLUSHDB, FLUSHALL, SWAPDB), persistence (BGSAVE, LASTSAVE,
//! SHUTDOWN), introspection (INFO, CONFIG, TIME, DEBUG SLEEP). Whatever concerns the whole
//! process is asked of the server through `ServerApi`.

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::{db, is, reply};
use crate::command::*;
use crate::errors::{self, err};
use crate::help;
use crate::Ctx;

/// The server family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "dbsize",
        arity: Arity::Exactly(1),
        flags: Flags(READONLY | FAST),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE),
        handler: plain!(dbsize),
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
        handler: plain!(flushdb),
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
        handler: plain!(flushall),
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
        handler: plain!(swapdb),
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
        handler: plain!(time),
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
        handler: plain!(lastsave),
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
        handler: plain!(bgsave),
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
        name: "shutdown",
        arity: Arity::AtLeast(1),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: plain!(shutdown),
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
        handler: plain!(debug),
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
        handler: plain!(info),
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
        handler: plain!(config),
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
        handler: plain!(config_get),
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
        handler: plain!(config_set),
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
        handler: plain!(config_resetstat),
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
        handler: plain!(config_rewrite),
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
        handler: plain!(config_help),
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

fn dbsize(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    match ctx.session.db.dbsize() {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

/// FLUSHDB/FLUSHALL take at most one of ASYNC / SYNC.
fn flush_mode_ok(argv: &[Bytes]) -> bool {
    match argv.len() {
        1 => true,
        2 => is(&argv[1], "async") || is(&argv[1], "sync"),
        _ => false,
    }
}

fn flushdb(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if !flush_mode_ok(argv) {
        return err(errors::SYNTAX);
    }
    crate::watch::touch_flushed(ctx, [ctx.session.db.index()]);
    match ctx.session.db.flushdb() {
        Ok(()) => Frame::ok(),
        Err(e) => errors::from_db(e),
    }
}

fn flushall(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if !flush_mode_ok(argv) {
        return err(errors::SYNTAX);
    }
    crate::watch::touch_flushed(ctx, 0..ctx.session.db.databases());
    match ctx.session.db.flushall() {
        Ok(()) => Frame::ok(),
        Err(e) => errors::from_db(e),
    }
}

fn swapdb(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let parse = |a: &[u8], text: &str| {
            strata::num::parse_i64(a)
                .filter(|n| *n >= i32::MIN as i64 && *n <= i32::MAX as i64)
                .ok_or_else(|| err(text))
        };
        let a = parse(&argv[1], errors::INVALID_FIRST_DB)?;
        let b = parse(&argv[2], errors::INVALID_SECOND_DB)?;
        let n = ctx.session.db.databases() as i64;
        if a < 0 || b < 0 || a >= n || b >= n {
            return Err(err(errors::DB_INDEX));
        }
        crate::watch::touch_swapped(ctx, a as u32, b as u32);
        db(ctx.session.db.swapdb(a as u32, b as u32))?;
        Ok(Frame::ok())
    })())
}

fn time(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Frame::Array(vec![
        Frame::bulk(now.as_secs().to_string()),
        Frame::bulk(now.subsec_micros().to_string()),
    ])
}

fn lastsave(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::Integer(ctx.server.lastsave() as i64)
}

fn bgsave(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() > 2 || (argv.len() == 2 && !is(&argv[1], "schedule")) {
        return err(errors::SYNTAX);
    }
    match ctx.server.bgsave() {
        Ok(()) => Frame::simple("Background saving started"),
        Err(e) => err(e),
    }
}

fn shutdown(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    for a in &argv[1..] {
        if is(a, "abort") {
            return err(errors::NO_SHUTDOWN_IN_PROGRESS);
        }
        if !(is(a, "nosave") || is(a, "save") || is(a, "now") || is(a, "force")) {
            return err(errors::SYNTAX);
        }
    }
    match ctx.server.shutdown() {
        // The server is going away; the connection closes without a reply, as in Redis.
        Ok(()) => {
            ctx.session.reply_mode = crate::ReplyMode::Off;
            ctx.session.close_after_reply = true;
            Frame::Null
        }
        Err(e) => err(e),
    }
}

fn debug(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if is(&argv[1], "sleep") && argv.len() == 3 {
        let secs = strata::num::parse_f64(&argv[2]).unwrap_or(0.0).max(0.0);
        std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        return Frame::ok();
    }
    if is(&argv[1], "help") {
        return help::reply(
            "DEBUG",
            &[
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        );
    }
    err(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(&argv[1])
    ))
}

fn info(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let sections: Vec<String> = argv[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    Frame::Verbatim(ctx.server.info(ctx.session, &sections).into())
}

fn config(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    dispatch_sub(ctx, argv, COMMANDS, "config")
}

fn config_get(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let patterns: Vec<&[u8]> = argv[2..].iter().map(|p| &p[..]).collect();
    let found = ctx.server.config_get(&patterns);
    Frame::Map(
        found
            .into_iter()
            .map(|(k, v)| (Frame::bulk(k), Frame::bulk(v)))
            .collect(),
    )
}

fn config_set(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    // A name without a value (the arity already asks for one pair).
    if !argv.len().is_multiple_of(2) {
        return err(errors::SYNTAX);
    }
    let pairs: Vec<(String, String)> = argv[2..]
        .chunks_exact(2)
        .map(|p| {
            (
                String::from_utf8_lossy(&p[0]).into_owned(),
                String::from_utf8_lossy(&p[1]).into_owned(),
            )
        })
        .collect();
    match ctx.server.config_set(&pairs) {
        Ok(()) => Frame::ok(),
        Err(e) => err(e),
    }
}

fn config_resetstat(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    ctx.server.reset_stats();
    Frame::ok()
}

fn config_rewrite(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    match ctx.server.config_rewrite() {
        Ok(()) => Frame::ok(),
        Err(e) => err(e),
    }
}

fn config_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help::reply(
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
    )
}
