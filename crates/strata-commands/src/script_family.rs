//! The scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT (LOAD, EXISTS, FLUSH,
//! KILL, HELP), FCALL, FCALL_RO and FUNCTION (LOAD, DELETE, LIST, FLUSH, DUMP, RESTORE, STATS,
//! KILL, HELP). They parse arguments and manage the script cache and the function registry
//! (which is saved in the data directory after every change); running a script belongs to
//! [`crate::scripting`].

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::is;
use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
use crate::help;
use crate::scripting::functions::RestorePolicy;
use crate::scripting::{self, Invocation, Target};
use crate::Ctx;

/// The scripting family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "eval",
        arity: Arity::AtLeast(3),
        flags: Flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | MAY_REPLICATE | NO_TOUCH),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(eval),
        docs: Docs {
            group: "scripting",
            since: "2.6.0",
            complexity: "Depends on the script that is executed.",
            summary: "Runs a Lua script on the server.",
            syntax: "script numkeys [key [key ...]] [arg [arg ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "evalsha",
        arity: Arity::AtLeast(3),
        flags: Flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | MAY_REPLICATE | NO_TOUCH),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(evalsha),
        docs: Docs {
            group: "scripting",
            since: "2.6.0",
            complexity: "Depends on the script that is executed.",
            summary: "Runs a cached Lua script, named by its SHA1.",
            syntax: "sha1 numkeys [key [key ...]] [arg [arg ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "eval_ro",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | NO_TOUCH),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(eval_ro),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "Depends on the script that is executed.",
            summary: "Runs a Lua script that may only read.",
            syntax: "script numkeys [key [key ...]] [arg [arg ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "evalsha_ro",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | NO_TOUCH),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(evalsha_ro),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "Depends on the script that is executed.",
            summary: "Runs a cached Lua script that may only read.",
            syntax: "sha1 numkeys [key [key ...]] [arg [arg ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "script",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(script),
        docs: Docs {
            group: "scripting",
            since: "2.6.0",
            complexity: "Depends on subcommand.",
            summary: "Groups the subcommands that manage the script cache.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "script|load",
        arity: Arity::Exactly(3),
        flags: Flags(NOSCRIPT | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(script_load),
        docs: Docs {
            group: "scripting",
            since: "2.6.0",
            complexity: "O(N) with N being the length in bytes of the script body.",
            summary: "Adds a script to the cache without running it.",
            syntax: "script",
            tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "script|exists",
        arity: Arity::AtLeast(3),
        flags: Flags(NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(script_exists),
        docs: Docs {
            group: "scripting",
            since: "2.6.0",
            complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
            summary: "Tells which of the given scripts are cached.",
            syntax: "sha1 [sha1 ...]",
            tips: &["request_policy:all_shards", "response_policy:agg_logical_and"],
        },
    },
    CommandSpec {
        name: "script|flush",
        arity: Arity::AtLeast(2),
        flags: Flags(NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(script_flush),
        docs: Docs {
            group: "scripting",
            since: "2.6.0",
            complexity: "O(N) with N being the number of scripts in cache",
            summary: "Empties the script cache.",
            syntax: "[flush-type: ASYNC | SYNC]",
            tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "script|kill",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | ALLOW_BUSY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(script_kill),
        docs: Docs {
            group: "scripting",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Stops the script that is running, if it has not written.",
            syntax: "",
            tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        },
    },
    CommandSpec {
        name: "script|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(script_help),
        docs: Docs {
            group: "scripting",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Lists the SCRIPT subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "fcall",
        arity: Arity::AtLeast(3),
        flags: Flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | MAY_REPLICATE | NO_TOUCH),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(fcall),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "Depends on the function that is executed.",
            summary: "Runs a function of a loaded library.",
            syntax: "function numkeys [key [key ...]] [arg [arg ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "fcall_ro",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | NO_TOUCH),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(fcall_ro),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "Depends on the function that is executed.",
            summary: "Runs a read-only function of a loaded library.",
            syntax: "function numkeys [key [key ...]] [arg [arg ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "function",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(function),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "Depends on subcommand.",
            summary: "Groups the subcommands that manage function libraries.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "function|load",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_load),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(1) (considering compilation time is redundant)",
            summary: "Loads a library of functions.",
            syntax: "[REPLACE] function-code",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "function|delete",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_delete),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(1)",
            summary: "Deletes a library and its functions.",
            syntax: "library-name",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "function|list",
        arity: Arity::AtLeast(2),
        flags: Flags(NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_list),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(N) where N is the number of functions",
            summary: "Describes the loaded libraries and their functions.",
            syntax: "[LIBRARYNAME library-name-pattern] [WITHCODE]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "function|flush",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_flush),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(N) where N is the number of functions deleted",
            summary: "Deletes every library.",
            syntax: "[flush-type: ASYNC | SYNC]",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "function|dump",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_dump),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(N) where N is the number of functions",
            summary: "Serializes every library into a payload for FUNCTION RESTORE.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "function|restore",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | NOSCRIPT),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_restore),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(N) where N is the number of functions on the payload",
            summary: "Loads the libraries of a FUNCTION DUMP payload.",
            syntax: "serialized-value [policy: FLUSH | APPEND | REPLACE]",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "function|stats",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | ALLOW_BUSY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_stats),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(1)",
            summary: "Tells which function runs now and how many libraries and functions exist.",
            syntax: "",
            tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        },
    },
    CommandSpec {
        name: "function|kill",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | ALLOW_BUSY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_kill),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(1)",
            summary: "Stops the function that is running, if it has not written.",
            syntax: "",
            tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        },
    },
    CommandSpec {
        name: "function|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::SCRIPTING),
        handler: Handler::Reply(function_help),
        docs: Docs {
            group: "scripting",
            since: "7.0.0",
            complexity: "O(1)",
            summary: "Lists the FUNCTION subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
];

/// Reads `numkeys key... arg...` off the cursor, `n` being the count already read: the keys
/// and the arguments.
fn split_keys<'a>(a: &mut Args<'a>, n: i64) -> Result<(&'a [Bytes], &'a [Bytes]), Failure> {
    if n < 0 {
        return Err(Failure::text(errors::NUMKEYS_NEGATIVE));
    }
    let rest = a.rest();
    if n as u64 > rest.len() as u64 {
        return Err(Failure::text(errors::NUMKEYS_TOO_MANY));
    }
    Ok(rest.split_at(n as usize))
}

/// EVAL and EVAL_RO: `script numkeys key... arg...`; the count is read before the script is
/// compiled.
fn run_body(ctx: &mut Ctx<'_>, argv: &[Bytes], ro_command: bool) -> Reply {
    let mut a = Args::new(argv);
    let body = a.value()?;
    let n = a.int()?;
    let (keys, args) = split_keys(&mut a, n)?;
    let (sha, shebang) = scripting::load_script(ctx, body)?;
    run_loaded(ctx, &sha, body, shebang, keys, args, ro_command)
}

/// EVALSHA and EVALSHA_RO: `sha1 numkeys key... arg...`.
fn run_cached(ctx: &mut Ctx<'_>, argv: &[Bytes], ro_command: bool) -> Reply {
    let mut a = Args::new(argv);
    let sha = a.value()?;
    let n = a.int()?;
    let (keys, args) = split_keys(&mut a, n)?;
    let cached = ctx
        .server
        .scripts()
        .get(sha)
        .ok_or_else(|| Failure::text(errors::NOSCRIPT))?;
    let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
    run_loaded(
        ctx,
        &sha,
        &cached.body,
        cached.shebang,
        keys,
        args,
        ro_command,
    )
}

/// Runs a cached script. Without a shebang the run is read-only only for EVAL_RO/EVALSHA_RO;
/// with one, `no-writes` makes it read-only and its absence refuses the *_RO commands.
fn run_loaded(
    ctx: &mut Ctx<'_>,
    sha: &str,
    body: &Bytes,
    shebang: Option<scripting::Shebang>,
    keys: &[Bytes],
    args: &[Bytes],
    ro_command: bool,
) -> Reply {
    let read_only = match shebang {
        None => ro_command,
        Some(s) if !s.no_writes => {
            refuse_writing_script(ctx, ro_command)?;
            false
        }
        Some(_) => true,
    };
    Ok(scripting::run_script(
        ctx,
        &Invocation {
            target: Target::Script {
                sha,
                body,
                skip: shebang.map_or(0, |s| s.len),
            },
            keys,
            args,
            read_only,
        },
    ))
}

fn eval(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    run_body(ctx, argv, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    run_body(ctx, argv, true)
}

fn evalsha(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    run_cached(ctx, argv, false)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    run_cached(ctx, argv, true)
}

fn script(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "script"))
}

fn script_load(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let body = a.value()?;
    a.finish()?;
    let (sha, _) = scripting::load_script(ctx, body)?;
    Ok(Frame::bulk(sha))
}

fn script_exists(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let cache = ctx.server.scripts();
    Ok(Frame::Array(
        Args::after_subcommand(argv)
            .rest()
            .iter()
            .map(|sha| Frame::Integer(cache.get(sha).is_some() as i64))
            .collect(),
    ))
}

/// Whether the arguments after a FLUSH subcommand are none or one of ASYNC / SYNC.
fn is_flush_mode(rest: &[Bytes]) -> bool {
    match rest {
        [] => true,
        [mode] => is(mode, "async") || is(mode, "sync"),
        _ => false,
    }
}

fn script_flush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    if !is_flush_mode(Args::after_subcommand(argv).rest()) {
        return Err(Failure::text(errors::SCRIPT_FLUSH_MODE));
    }
    ctx.server.scripts().flush();
    Ok(Frame::ok())
}

fn script_kill(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    kill(ctx, false)
}

fn function_kill(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    kill(ctx, true)
}

/// SCRIPT KILL (`function` false) and FUNCTION KILL: each stops only its own kind; meeting only
/// the other kind, it answers the BUSY text that names the right command.
fn kill(ctx: &mut Ctx<'_>, function: bool) -> Reply {
    let text = match ctx.server.scripts().kill(function) {
        scripting::KillOutcome::Killed => return Ok(Frame::ok()),
        scripting::KillOutcome::NotBusy => errors::NOTBUSY,
        scripting::KillOutcome::Unkillable => errors::UNKILLABLE,
        scripting::KillOutcome::OtherKind if function => errors::BUSY_SCRIPT,
        scripting::KillOutcome::OtherKind => errors::BUSY_FUNCTION,
    };
    Err(Failure::text(text))
}

fn script_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
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
    ))
}

/// The checks Redis makes before starting a script or function whose flags allow writes: it is
/// refused as a write command would be (-NOREPLICAS, -READONLY), then refused to the `*_RO`
/// commands.
fn refuse_writing_script(ctx: &Ctx<'_>, ro_command: bool) -> Result<(), Failure> {
    if let Some(refused) = ctx.server.script_write_refusal() {
        return Err(Failure(refused));
    }
    if ro_command {
        return Err(Failure::text(errors::FCALL_RO_WRITE));
    }
    Ok(())
}

/// FCALL and FCALL_RO: `function numkeys key... arg...`; an unreadable count is Redis's "Bad
/// number of keys".
fn run_function(ctx: &mut Ctx<'_>, argv: &[Bytes], read_only: bool) -> Reply {
    let mut a = Args::new(argv);
    let name = a.value()?;
    let n = a
        .int()
        .map_err(|_| Failure::text(errors::FCALL_BAD_NUMKEYS))?;
    let (keys, args) = split_keys(&mut a, n)?;
    let name = String::from_utf8_lossy(name).into_owned();
    let info = ctx
        .server
        .functions()
        .find(&name)
        .ok_or_else(|| Failure::text(errors::FUNCTION_NOT_FOUND))?;
    if !info.read_only() {
        refuse_writing_script(ctx, read_only)?;
    }
    Ok(scripting::run_script(
        ctx,
        &Invocation {
            target: Target::Function {
                name: &name,
                command: argv,
            },
            keys,
            args,
            read_only: read_only || info.read_only(),
        },
    ))
}

fn fcall(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    run_function(ctx, argv, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    run_function(ctx, argv, true)
}

fn function(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "function"))
}

/// Saves the libraries in the data directory, so they survive a restart.
fn persist_functions(ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let dump = ctx.server.functions().dump();
    ctx.session.db.aux_put(FUNCTIONS_RECORD, &dump)?;
    Ok(())
}

/// The name of the data directory record that holds the function libraries.
pub const FUNCTIONS_RECORD: &str = strata::function_record::RECORD;

fn function_load(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    // Every argument before the code is an option; REPLACE is the only one.
    let (code, options) = Args::after_subcommand(argv)
        .rest()
        .split_last()
        .ok_or_else(syntax)?;
    let mut replace = false;
    for flag in options {
        if !is(flag, "replace") {
            return Err(Failure::text(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(flag)
            )));
        }
        replace = true;
    }
    let name = ctx
        .server
        .functions()
        .load(code, replace)
        .map_err(Failure::text)?;
    persist_functions(ctx)?;
    Ok(Frame::bulk(name))
}

fn function_delete(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let name = String::from_utf8_lossy(a.value()?);
    a.finish()?;
    ctx.server
        .functions()
        .delete(&name)
        .map_err(Failure::text)?;
    persist_functions(ctx)?;
    Ok(Frame::ok())
}

fn function_flush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let rest = Args::after_subcommand(argv).rest();
    if rest.len() > 1 {
        return Err(Failure(errors::unknown_subcommand_or_arity(
            "function", &argv[1],
        )));
    }
    if !is_flush_mode(rest) {
        return Err(Failure::text(errors::FUNCTION_FLUSH_MODE));
    }
    ctx.server.functions().flush();
    persist_functions(ctx)?;
    Ok(Frame::ok())
}

fn function_list(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut a = Args::after_subcommand(argv);
    while !a.is_done() {
        let arg = a.value()?;
        if is(arg, "withcode") && !with_code {
            with_code = true;
        } else if is(arg, "libraryname") && pattern.is_none() {
            if a.is_done() {
                return Err(Failure::text("ERR library name argument was not given"));
            }
            pattern = Some(a.value()?);
        } else {
            return Err(Failure::text(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(arg)
            )));
        }
    }
    let libs = ctx.server.functions().libraries();
    let entries = libs
        .iter()
        .filter(|l| pattern.is_none_or(|p| strata::glob::glob_match(p, l.name.as_bytes(), false)))
        .map(|l| {
            let functions = l
                .functions
                .iter()
                .map(|f| {
                    Frame::Map(vec![
                        (Frame::bulk("name"), Frame::bulk(f.name.clone())),
                        (
                            Frame::bulk("description"),
                            f.description
                                .clone()
                                .map(Frame::bulk)
                                .unwrap_or(Frame::Null),
                        ),
                        (
                            Frame::bulk("flags"),
                            Frame::Set(f.flags.iter().map(|x| Frame::simple(x.clone())).collect()),
                        ),
                    ])
                })
                .collect();
            let mut fields = vec![
                (Frame::bulk("library_name"), Frame::bulk(l.name.clone())),
                (Frame::bulk("engine"), Frame::bulk("LUA")),
                (Frame::bulk("functions"), Frame::Array(functions)),
            ];
            if with_code {
                fields.push((Frame::bulk("library_code"), Frame::bulk(l.code.clone())));
            }
            Frame::Map(fields)
        })
        .collect();
    Ok(Frame::Array(entries))
}

fn function_dump(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::bulk(ctx.server.functions().dump()))
}

fn function_restore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let payload = a.value()?;
    let policy = match a.rest() {
        [] => RestorePolicy::Append,
        [p] if is(p, "flush") => RestorePolicy::Flush,
        [p] if is(p, "append") => RestorePolicy::Append,
        [p] if is(p, "replace") => RestorePolicy::Replace,
        [_] => return Err(Failure::text(errors::RESTORE_POLICY)),
        _ => {
            return Err(Failure(errors::unknown_subcommand_or_arity(
                "function", &argv[1],
            )))
        }
    };
    ctx.server
        .functions()
        .restore(payload, policy)
        .map_err(Failure::text)?;
    persist_functions(ctx)?;
    Ok(Frame::ok())
}

fn function_stats(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    let libs = ctx.server.functions().libraries();
    let functions: usize = libs.iter().map(|l| l.functions.len()).sum();
    let running = match ctx.server.scripts().running_function() {
        None => Frame::Null,
        Some((name, command, ms)) => Frame::Map(vec![
            (Frame::bulk("name"), Frame::bulk(name)),
            (
                Frame::bulk("command"),
                Frame::Array(command.into_iter().map(Frame::Bulk).collect()),
            ),
            (Frame::bulk("duration_ms"), Frame::Integer(ms as i64)),
        ]),
    };
    Ok(Frame::Map(vec![
        (Frame::bulk("running_script"), running),
        (
            Frame::bulk("engines"),
            Frame::Map(vec![(
                Frame::bulk("LUA"),
                Frame::Map(vec![
                    (
                        Frame::bulk("libraries_count"),
                        Frame::Integer(libs.len() as i64),
                    ),
                    (
                        Frame::bulk("functions_count"),
                        Frame::Integer(functions as i64),
                    ),
                ]),
            )]),
        ),
    ]))
}

fn function_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    const LIBRARY: &str = "#!lua name=lib\n\
        redis.register_function('echo', function(keys, args) return args[1] end)\n\
        redis.register_function{function_name='peek', callback=function(keys, args) return keys[1] end, flags={'no-writes'}}";

    #[test]
    fn numkeys_is_read_before_the_script_is_compiled_or_looked_up() {
        let mut h = Harness::new();
        let not_int = "ERR value is not an integer or out of range";
        let negative = "ERR Number of keys can't be negative";
        let too_many = "ERR Number of keys can't be greater than number of args";
        assert_eq!(h.error(&["EVAL", "return 1", "x"]), not_int);
        assert_eq!(h.error(&["EVAL", "return 1", "-1"]), negative);
        assert_eq!(h.error(&["EVAL", "return 1", "2", "a"]), too_many);
        assert_eq!(h.error(&["EVAL_RO", "syntax error(", "2"]), too_many);
        assert_eq!(h.error(&["EVALSHA", "ffff", "x"]), not_int);
        assert_eq!(h.error(&["EVALSHA_RO", "ffff", "-1"]), negative);
        assert_eq!(
            h.error(&["EVALSHA", "ffff", "0"]),
            "NOSCRIPT No matching script. Please use EVAL."
        );
        assert_eq!(
            h.error(&["FCALL", "nosuch", "x"]),
            "ERR Bad number of keys provided"
        );
        assert_eq!(h.error(&["FCALL_RO", "nosuch", "-1"]), negative);
        assert_eq!(h.error(&["FCALL", "nosuch", "1"]), too_many);
        assert_eq!(h.error(&["FCALL", "nosuch", "0"]), "ERR Function not found");
    }

    #[test]
    fn eval_splits_keys_from_arguments_and_evalsha_finds_the_cached_script() {
        let mut h = Harness::new();
        let body = "return {KEYS[1], ARGV[1], #KEYS, #ARGV}";
        let reply = Frame::Array(vec![
            Frame::bulk("k"),
            Frame::bulk("v"),
            Frame::Integer(1),
            Frame::Integer(2),
        ]);
        assert_eq!(h.run(&["EVAL", body, "1", "k", "v", "w"]), reply);
        let Frame::Bulk(sha) = h.run(&["SCRIPT", "LOAD", body]) else {
            panic!("SCRIPT LOAD answered no digest");
        };
        let sha = String::from_utf8_lossy(&sha).to_ascii_uppercase();
        assert_eq!(h.run(&["EVALSHA", &sha, "1", "k", "v", "w"]), reply);
        assert_eq!(
            h.error(&["EVAL_RO", "#!lua\nreturn 1", "0"]),
            "ERR Can not execute a script with write flag using *_ro command."
        );
        assert_eq!(
            h.run(&["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"]),
            Frame::Integer(1)
        );
    }

    #[test]
    fn script_subcommands_check_their_arguments() {
        let mut h = Harness::new();
        let Frame::Bulk(sha) = h.run(&["SCRIPT", "LOAD", "return 2"]) else {
            panic!("SCRIPT LOAD answered no digest");
        };
        let sha = String::from_utf8_lossy(&sha).into_owned();
        assert_eq!(
            h.run(&["SCRIPT", "EXISTS", &sha, "ffff"]),
            Frame::Array(vec![Frame::Integer(1), Frame::Integer(0)])
        );
        let flush_mode = "ERR SCRIPT FLUSH only support SYNC|ASYNC option";
        assert_eq!(h.error(&["SCRIPT", "FLUSH", "later"]), flush_mode);
        assert_eq!(h.error(&["SCRIPT", "FLUSH", "sync", "async"]), flush_mode);
        assert_eq!(h.run(&["SCRIPT", "flush", "ASYNC"]), Frame::ok());
        assert_eq!(
            h.run(&["SCRIPT", "EXISTS", &sha]),
            Frame::Array(vec![Frame::Integer(0)])
        );
        assert_eq!(
            h.error(&["SCRIPT", "KILL"]),
            "NOTBUSY No scripts in execution right now."
        );
        assert_eq!(
            h.error(&["SCRIPT", "LOAD"]),
            "ERR wrong number of arguments for 'script|load' command"
        );
        assert_eq!(
            h.error(&["SCRIPT", "NOPE"]),
            "ERR unknown subcommand 'NOPE'. Try SCRIPT HELP."
        );
        match h.run(&["SCRIPT", "HELP"]) {
            Frame::Array(lines) => assert_eq!(lines.len(), 17),
            other => panic!("SCRIPT HELP answered {other:?}"),
        }
    }

    #[test]
    fn function_subcommands_check_their_arguments_in_redis_order() {
        let mut h = Harness::new();
        assert_eq!(
            h.error(&["FUNCTION", "LOAD", "FORCE", LIBRARY]),
            "ERR Unknown option given: FORCE"
        );
        assert_eq!(h.run(&["FUNCTION", "LOAD", LIBRARY]), Frame::bulk("lib"));
        assert!(h
            .error(&["FUNCTION", "LOAD", LIBRARY])
            .contains("already exists"));
        assert_eq!(
            h.run(&["FUNCTION", "LOAD", "replace", LIBRARY]),
            Frame::bulk("lib")
        );
        assert_eq!(h.run(&["FCALL", "echo", "0", "hi"]), Frame::bulk("hi"));
        assert_eq!(h.run(&["FCALL_RO", "peek", "1", "k"]), Frame::bulk("k"));
        assert_eq!(
            h.error(&["FCALL_RO", "echo", "0", "hi"]),
            "ERR Can not execute a script with write flag using *_ro command."
        );
        assert_eq!(
            h.error(&["FUNCTION", "LIST", "LIBRARYNAME"]),
            "ERR library name argument was not given"
        );
        assert_eq!(
            h.error(&["FUNCTION", "LIST", "WITHCODE", "withcode"]),
            "ERR Unknown argument withcode"
        );
        match h.run(&["FUNCTION", "LIST", "LIBRARYNAME", "l*", "WITHCODE"]) {
            Frame::Array(libs) => assert_eq!(libs.len(), 1),
            other => panic!("FUNCTION LIST answered {other:?}"),
        }
        assert_eq!(
            h.run(&["FUNCTION", "LIST", "LIBRARYNAME", "x*"]),
            Frame::Array(vec![])
        );
        // The policy is checked before the payload is read.
        let policy =
            "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.";
        assert_eq!(h.error(&["FUNCTION", "RESTORE", "junk", "MERGE"]), policy);
        assert_eq!(
            h.error(&["FUNCTION", "RESTORE", "junk", "FLUSH", "X"]),
            "ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP."
        );
        assert_eq!(
            h.error(&["FUNCTION", "RESTORE", "junk", "replace"]),
            "ERR DUMP payload version or checksum are wrong"
        );
        assert!(matches!(h.run(&["FUNCTION", "DUMP"]), Frame::Bulk(_)));
        assert_eq!(
            h.error(&["FUNCTION", "FLUSH", "SYNC", "X"]),
            "ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP."
        );
        assert_eq!(
            h.error(&["FUNCTION", "FLUSH", "later"]),
            "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
        );
        assert_eq!(h.run(&["FUNCTION", "DELETE", "lib"]), Frame::ok());
        assert_eq!(
            h.error(&["FUNCTION", "DELETE", "lib"]),
            "ERR Library not found"
        );
        assert_eq!(h.run(&["FUNCTION", "FLUSH"]), Frame::ok());
        assert_eq!(h.error(&["FCALL", "echo", "0"]), "ERR Function not found");
        assert_eq!(
            h.error(&["FUNCTION", "KILL"]),
            "NOTBUSY No scripts in execution right now."
        );
        assert_eq!(
            h.error(&["FUNCTION", "NOPE"]),
            "ERR unknown subcommand 'NOPE'. Try FUNCTION HELP."
        );
    }
}
