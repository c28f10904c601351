//! The scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (LOAD, EXISTS, FLUSH,
//! KILL, HELP). They parse arguments and manage the script cache; running a script belongs to
//! [`crate::scripting`].

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::{self, is};
use crate::errors::{self, err};
use crate::keys_family::help_reply;
use crate::scripting::{self, Invocation};
use crate::table::{dispatch_sub, CommandSpec};
use crate::Ctx;

macro_rules! row {
    ($name:expr, $arity:expr, [$($flag:expr),*], $numkeys_at:expr, $since:expr, $complexity:expr, $summary:expr, $syntax:expr, $handler:expr) => {
        crate::table::command_row!("scripting"; $name, $arity, [$($flag),*], 0, 0, 0, ["slow", "scripting"], $since, $complexity, $summary, $syntax, $handler, numkeys_at = $numkeys_at)
    };
}

/// The scripting family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!("eval", -3, ["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], 2, "2.6.0", "Depends on the script that is executed.", "Runs a Lua script on the server.", "script numkeys [key [key ...]] [arg [arg ...]]", eval),
    row!("evalsha", -3, ["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], 2, "2.6.0", "Depends on the script that is executed.", "Runs a cached Lua script, named by its SHA1.", "sha1 numkeys [key [key ...]] [arg [arg ...]]", evalsha),
    row!("eval_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], 2, "7.0.0", "Depends on the script that is executed.", "Runs a Lua script that may only read.", "script numkeys [key [key ...]] [arg [arg ...]]", eval_ro),
    row!("evalsha_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], 2, "7.0.0", "Depends on the script that is executed.", "Runs a cached Lua script that may only read.", "sha1 numkeys [key [key ...]] [arg [arg ...]]", evalsha_ro),
    row!("script", -2, [], 0, "2.6.0", "Depends on subcommand.", "Groups the subcommands that manage the script cache.", "", script),
    row!("script|load", 3, ["noscript", "stale"], 0, "2.6.0", "O(N) with N being the length in bytes of the script body.", "Adds a script to the cache without running it.", "script", script_load),
    row!("script|exists", -3, ["noscript"], 0, "2.6.0", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).", "Tells which of the given scripts are cached.", "sha1 [sha1 ...]", script_exists),
    row!("script|flush", -2, ["noscript"], 0, "2.6.0", "O(N) with N being the number of scripts in cache", "Empties the script cache.", "[flush-type: ASYNC | SYNC]", script_flush),
    row!("script|kill", 2, ["noscript", "allow_busy"], 0, "2.6.0", "O(1)", "Stops the script that is running, if it has not written.", "", script_kill),
    row!("script|help", 2, ["loading", "stale"], 0, "5.0.0", "O(1)", "Lists the SCRIPT subcommands with a line on each.", "", script_help),
];

/// Splits `numkeys key... arg...` (at argv[2]) into keys and arguments.
fn keys_and_args(argv: &[Bytes]) -> Result<(&[Bytes], &[Bytes]), Frame> {
    let n = args::int(&argv[2])?;
    if n < 0 {
        return Err(err(errors::NUMKEYS_NEGATIVE));
    }
    if n as u64 > (argv.len() - 3) as u64 {
        return Err(err(errors::NUMKEYS_TOO_MANY));
    }
    let rest = &argv[3..];
    Ok(rest.split_at(n as usize))
}

fn run_body(ctx: &mut Ctx<'_>, argv: &[Bytes], read_only: bool) -> Frame {
    let (keys, args) = match keys_and_args(argv) {
        Ok(split) => split,
        Err(e) => return e,
    };
    let body = &argv[1];
    let sha = ctx.server.scripts().load(body);
    scripting::run_script(
        ctx,
        &Invocation {
            sha: &sha,
            body,
            keys,
            args,
            read_only,
        },
    )
}

fn run_cached(ctx: &mut Ctx<'_>, argv: &[Bytes], read_only: bool) -> Frame {
    let (keys, args) = match keys_and_args(argv) {
        Ok(split) => split,
        Err(e) => return e,
    };
    let Some(body) = ctx.server.scripts().get(&argv[1]) else {
        return err(errors::NOSCRIPT);
    };
    let sha = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
    scripting::run_script(
        ctx,
        &Invocation {
            sha: &sha,
            body: &body,
            keys,
            args,
            read_only,
        },
    )
}

fn eval(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    run_body(ctx, argv, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    run_body(ctx, argv, true)
}

fn evalsha(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    run_cached(ctx, argv, false)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    run_cached(ctx, argv, true)
}

fn script(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    dispatch_sub(ctx, argv, "script")
}

fn script_load(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    Frame::bulk(ctx.server.scripts().load(&argv[2]))
}

fn script_exists(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let cache = ctx.server.scripts();
    Frame::Array(
        argv[2..]
            .iter()
            .map(|sha| Frame::Integer(cache.get(sha).is_some() as i64))
            .collect(),
    )
}

fn script_flush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match argv.get(2) {
        None => {}
        Some(a) if argv.len() == 3 && (is(a, "async") || is(a, "sync")) => {}
        Some(_) => return err(errors::SCRIPT_FLUSH_MODE),
    }
    ctx.server.scripts().flush();
    Frame::ok()
}

fn script_kill(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    // Scripts run to completion on their worker thread; none is ever "busy" for others.
    err(errors::NOTBUSY)
}

fn script_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help_reply(
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    )
}
