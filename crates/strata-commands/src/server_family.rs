//! Server commands: databases (DBSIZE, FLUSHDB, FLUSHALL, SWAPDB), persistence (BGSAVE, LASTSAVE,
//! SHUTDOWN), introspection (INFO, CONFIG, COMMAND, TIME, DEBUG SLEEP). Whatever concerns the whole
//! process is asked of the server through `ServerApi`.

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::{db, is, reply};
use crate::errors::{self, err};
use crate::keys_family::help_reply;
use crate::table::{self, dispatch_sub, CommandSpec};
use crate::Ctx;

macro_rules! row {
    ($($row:tt)*) => { crate::table::command_row!("server"; $($row)*) };
}

/// The server family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!("dbsize", 1, ["readonly", "fast"], 0, 0, 0, ["keyspace", "read", "fast"], "1.0.0", "O(N) in Strata (O(1) in Redis)", "Counts the keys in the selected database.", "", dbsize),
    row!("flushdb", -1, ["write"], 0, 0, 0, ["keyspace", "write", "slow", "dangerous"], "1.0.0", "O(1)", "Deletes every key of the selected database.", "[async: ASYNC | SYNC]", flushdb),
    row!("flushall", -1, ["write"], 0, 0, 0, ["keyspace", "write", "slow", "dangerous"], "1.0.0", "O(1)", "Deletes every key of every database.", "[async: ASYNC | SYNC]", flushall),
    row!("swapdb", 3, ["write", "fast"], 0, 0, 0, ["keyspace", "write", "fast", "dangerous"], "4.0.0", "O(1)", "Exchanges the contents of two databases.", "index1 index2", swapdb),
    row!("time", 1, ["loading", "stale", "fast"], 0, 0, 0, ["fast"], "2.6.0", "O(1)", "Gives the server clock as seconds and microseconds.", "", time),
    row!("lastsave", 1, ["loading", "stale", "fast"], 0, 0, 0, ["admin", "fast", "dangerous"], "1.0.0", "O(1)", "Gives the Unix time of the most recent successful save.", "", lastsave),
    row!("bgsave", -1, ["admin", "noscript"], 0, 0, 0, ["admin", "slow", "dangerous"], "1.0.0", "O(1)", "Starts saving the data to disk in the background.", "[SCHEDULE]", bgsave),
    row!("shutdown", -1, ["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], 0, 0, 0, ["admin", "slow", "dangerous"], "1.0.0", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)", "Stops the server after flushing its data.", "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]", shutdown),
    row!("debug", -2, ["admin", "noscript", "loading", "stale"], 0, 0, 0, ["admin", "slow", "dangerous"], "1.0.0", "Depends on subcommand.", "Groups commands meant for debugging the server.", "", debug),
    row!("info", -1, ["loading", "stale", "sentinel"], 0, 0, 0, ["slow", "dangerous"], "1.0.0", "O(1)", "Reports server state and statistics, by section.", "[section [section ...]]", info),
    row!("config", -2, [], 0, 0, 0, ["slow"], "2.0.0", "Depends on subcommand.", "Groups the subcommands that read and change the configuration.", "", config),
    row!("config|get", -3, ["admin", "noscript", "loading", "stale"], 0, 0, 0, ["admin", "slow", "dangerous"], "2.0.0", "O(N) when N is the number of configuration parameters provided", "Gives the configuration parameters matching patterns, with their values.", "parameter [parameter ...]", config_get),
    row!("config|set", -4, ["admin", "noscript", "loading", "stale"], 0, 0, 0, ["admin", "slow", "dangerous"], "2.0.0", "O(N) when N is the number of configuration parameters provided", "Changes configuration parameters while the server runs.", "parameter value [parameter value ...]", config_set),
    row!("config|resetstat", 2, ["admin", "noscript", "loading", "stale"], 0, 0, 0, ["admin", "slow", "dangerous"], "2.0.0", "O(1)", "Zeroes the statistics that INFO reports.", "", config_resetstat),
    row!("config|rewrite", 2, ["admin", "noscript", "loading", "stale"], 0, 0, 0, ["admin", "slow", "dangerous"], "2.8.0", "O(1)", "Writes the running configuration back to the configuration file.", "", config_rewrite),
    row!("config|help", 2, ["loading", "stale"], 0, 0, 0, ["slow"], "5.0.0", "O(1)", "Lists the CONFIG subcommands with a line on each.", "", config_help),
    row!("command", -1, ["loading", "stale"], 0, 0, 0, ["slow", "connection"], "2.8.13", "O(N) where N is the total number of Redis commands", "Describes every command the server knows.", "", command),
    row!("command|count", 2, ["loading", "stale"], 0, 0, 0, ["slow", "connection"], "2.8.13", "O(1)", "Gives the number of commands the server knows.", "", command_count),
    row!("command|info", -2, ["loading", "stale"], 0, 0, 0, ["slow", "connection"], "2.8.13", "O(N) where N is the number of commands to look up", "Describes the given commands, or all of them.", "[command-name [command-name ...]]", command_info),
    row!("command|docs", -2, ["loading", "stale"], 0, 0, 0, ["slow", "connection"], "7.0.0", "O(N) where N is the number of commands to look up", "Gives the documentation of the given commands, or of all of them.", "[command-name [command-name ...]]", command_docs),
    row!("command|list", -2, ["loading", "stale"], 0, 0, 0, ["slow", "connection"], "7.0.0", "O(N) where N is the total number of Redis commands", "Lists command names, optionally filtered.", "[filterby: FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]", command_list),
    row!("command|getkeys", -4, ["loading", "stale"], 0, 0, 0, ["slow", "connection"], "2.8.13", "O(N) where N is the number of arguments to the command", "Picks out the key arguments of a full command line.", "", command_getkeys),
    row!("command|help", 2, ["loading", "stale"], 0, 0, 0, ["slow", "connection"], "5.0.0", "O(1)", "Lists the COMMAND subcommands with a line on each.", "", command_help),
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
    crate::transaction_family::touch_flushed(ctx, [ctx.session.db.index()]);
    match ctx.session.db.flushdb() {
        Ok(()) => Frame::ok(),
        Err(e) => errors::from_db(e),
    }
}

fn flushall(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if !flush_mode_ok(argv) {
        return err(errors::SYNTAX);
    }
    crate::transaction_family::touch_flushed(ctx, 0..ctx.session.db.databases());
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
        crate::transaction_family::touch_swapped(ctx, a as u32, b as u32);
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
        return help_reply(
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
    dispatch_sub(ctx, argv, "config")
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
    help_reply(
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

fn command(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() == 1 {
        return Frame::Array(table::top_level().map(|c| c.info()).collect());
    }
    dispatch_sub(ctx, argv, "command")
}

fn command_count(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::Integer(table::top_level().count() as i64)
}

fn command_info(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() == 2 {
        return Frame::Array(table::top_level().map(|c| c.info()).collect());
    }
    Frame::Array(
        argv[2..]
            .iter()
            .map(|n| {
                table::lookup(n)
                    .map(|c| c.info())
                    .unwrap_or(Frame::NullArray)
            })
            .collect(),
    )
}

fn command_docs(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let specs: Vec<_> = if argv.len() == 2 {
        table::top_level().collect()
    } else {
        argv[2..].iter().filter_map(|n| table::lookup(n)).collect()
    };
    let mut pairs = Vec::new();
    for s in specs {
        let mut d = s.docs();
        if let (Some(v), Some(k)) = (d.pop(), d.pop()) {
            pairs.push((k, v));
        }
    }
    Frame::Map(pairs)
}

fn command_list(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let all = table::top_level();
    if argv.len() == 2 {
        return Frame::Array(all.map(|c| Frame::bulk(c.name)).collect());
    }
    if argv.len() != 5 || !is(&argv[2], "filterby") {
        return err(errors::SYNTAX);
    }
    let value = &argv[4];
    let keep: Box<dyn Fn(&CommandSpec) -> bool> = if is(&argv[3], "aclcat") {
        let cat = String::from_utf8_lossy(value).to_ascii_lowercase();
        Box::new(move |c| c.acl.contains(&cat.as_str()))
    } else if is(&argv[3], "pattern") {
        let p = value.clone();
        Box::new(move |c| strata::glob::glob_match(&p, c.name.as_bytes(), true))
    } else if is(&argv[3], "module") {
        Box::new(|_| false)
    } else {
        return err(errors::SYNTAX);
    };
    Frame::Array(
        table::top_level()
            .filter(|c| keep(c))
            .map(|c| Frame::bulk(c.name))
            .collect(),
    )
}

fn command_getkeys(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let target = &argv[2..];
    let Some(spec) = table::lookup(&target[0]) else {
        return err(errors::GETKEYS_INVALID_COMMAND);
    };
    if !spec.has_keys() {
        return err(errors::GETKEYS_NO_KEYS);
    }
    if !spec.arity_ok(target.len()) {
        return err(errors::GETKEYS_BAD_ARITY);
    }
    let pos = match spec.key_positions(target) {
        Some(pos) if !pos.is_empty() || spec.has_flag("no_mandatory_keys") => pos,
        _ => return err(errors::GETKEYS_INVALID_ARGS),
    };
    Frame::Array(
        pos.into_iter()
            .map(|i| Frame::bulk(target[i].clone()))
            .collect(),
    )
}

fn command_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help_reply(
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
        ],
    )
}
