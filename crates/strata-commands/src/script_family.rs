//! The scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT (LOAD, EXISTS, FLUSH,
//! KILL, HELP), FCALL, FCALL_RO and FUNCTION (LOAD, DELETE, LIST, FLUSH, DUMP, RESTORE, STATS,
//! KILL, HELP). They parse arguments and manage the script cache and the function registry
//! (which is saved in the data directory after every change); running a script belongs to
//! [`crate::scripting`].

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::{self, is};
use crate::command::*;
use crate::errors::{self, err};
use crate::help;
use crate::scripting::functions::RestorePolicy;
use crate::scripting::{self, Invocation, Target};
use crate::Ctx;

/// The scripting family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "eval",
        arity: Arity::AtLeast(3),
        flags: Flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | MAY_REPLICATE),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: plain!(eval),
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
        flags: Flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | MAY_REPLICATE),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: plain!(evalsha),
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
        flags: Flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: plain!(eval_ro),
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
        flags: Flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: plain!(evalsha_ro),
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
        handler: plain!(script),
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
        handler: plain!(script_load),
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
        handler: plain!(script_exists),
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
        handler: plain!(script_flush),
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
        handler: plain!(script_kill),
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
        handler: plain!(script_help),
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
        flags: Flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS | MAY_REPLICATE),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: plain!(fcall),
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
        flags: Flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1).notes("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"),
        ],
        acl: Acl(acl::SCRIPTING),
        handler: plain!(fcall_ro),
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
        handler: plain!(function),
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
        handler: plain!(function_load),
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
        handler: plain!(function_delete),
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
        handler: plain!(function_list),
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
        handler: plain!(function_flush),
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
        handler: plain!(function_dump),
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
        handler: plain!(function_restore),
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
        handler: plain!(function_stats),
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
        handler: plain!(function_kill),
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
        handler: plain!(function_help),
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

/// Splits `numkeys key... arg...` (at argv[2]) into keys and arguments.
fn keys_and_args(argv: &[Bytes]) -> Result<(&[Bytes], &[Bytes]), Frame> {
    split_keys(argv, args::int(&argv[2])?)
}

/// [`keys_and_args`] for FCALL, whose unreadable numkeys is Redis's "Bad number of keys".
fn function_keys_and_args(argv: &[Bytes]) -> Result<(&[Bytes], &[Bytes]), Frame> {
    let n = args::int(&argv[2]).map_err(|_| err(errors::FCALL_BAD_NUMKEYS))?;
    split_keys(argv, n)
}

fn split_keys(argv: &[Bytes], n: i64) -> Result<(&[Bytes], &[Bytes]), Frame> {
    if n < 0 {
        return Err(err(errors::NUMKEYS_NEGATIVE));
    }
    if n as u64 > (argv.len() - 3) as u64 {
        return Err(err(errors::NUMKEYS_TOO_MANY));
    }
    let rest = &argv[3..];
    Ok(rest.split_at(n as usize))
}

fn run_body(ctx: &mut Ctx<'_>, argv: &[Bytes], ro_command: bool) -> Frame {
    let (keys, args) = match keys_and_args(argv) {
        Ok(split) => split,
        Err(e) => return e,
    };
    let body = &argv[1];
    let (sha, shebang) = match scripting::load_script(ctx, body) {
        Ok(loaded) => loaded,
        Err(e) => return e,
    };
    run_loaded(ctx, &sha, body, shebang, keys, args, ro_command)
}

fn run_cached(ctx: &mut Ctx<'_>, argv: &[Bytes], ro_command: bool) -> Frame {
    let (keys, args) = match keys_and_args(argv) {
        Ok(split) => split,
        Err(e) => return e,
    };
    let Some(cached) = ctx.server.scripts().get(&argv[1]) else {
        return err(errors::NOSCRIPT);
    };
    let sha = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
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
) -> Frame {
    let read_only = match shebang {
        None => ro_command,
        Some(s) if ro_command && !s.no_writes => return err(errors::FCALL_RO_WRITE),
        Some(s) => ro_command || s.no_writes,
    };
    scripting::run_script(
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
    dispatch_sub(ctx, argv, COMMANDS, "script")
}

fn script_load(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match scripting::load_script(ctx, &argv[2]) {
        Ok((sha, _)) => Frame::bulk(sha),
        Err(e) => e,
    }
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

fn script_kill(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    kill(ctx, false)
}

fn function_kill(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    kill(ctx, true)
}

/// SCRIPT KILL (`function` false) and FUNCTION KILL: each stops only its own kind; meeting only
/// the other kind, it answers the BUSY text that names the right command.
fn kill(ctx: &mut Ctx<'_>, function: bool) -> Frame {
    match ctx.server.scripts().kill(function) {
        scripting::KillOutcome::Killed => Frame::ok(),
        scripting::KillOutcome::NotBusy => err(errors::NOTBUSY),
        scripting::KillOutcome::Unkillable => err(errors::UNKILLABLE),
        scripting::KillOutcome::OtherKind if function => err(errors::BUSY_SCRIPT),
        scripting::KillOutcome::OtherKind => err(errors::BUSY_FUNCTION),
    }
}

fn script_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help::reply(
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

fn run_function(ctx: &mut Ctx<'_>, argv: &[Bytes], read_only: bool) -> Frame {
    let (keys, args) = match function_keys_and_args(argv) {
        Ok(split) => split,
        Err(e) => return e,
    };
    let name = String::from_utf8_lossy(&argv[1]).into_owned();
    let Some(info) = ctx.server.functions().find(&name) else {
        return err(errors::FUNCTION_NOT_FOUND);
    };
    if read_only && !info.read_only() {
        return err(errors::FCALL_RO_WRITE);
    }
    scripting::run_script(
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
    )
}

fn fcall(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    run_function(ctx, argv, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    run_function(ctx, argv, true)
}

fn function(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    dispatch_sub(ctx, argv, COMMANDS, "function")
}

/// Saves the libraries in the data directory, so they survive a restart.
fn persist_functions(ctx: &mut Ctx<'_>) -> Result<(), Frame> {
    let dump = ctx.server.functions().dump();
    ctx.session
        .db
        .aux_put(FUNCTIONS_RECORD, &dump)
        .map_err(errors::from_db)
}

/// The name of the data directory record that holds the function libraries.
pub const FUNCTIONS_RECORD: &str = "functions";

fn function_load(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    // Every argument before the code is an option; REPLACE is the only one.
    let (code, options) = match argv[2..].split_last() {
        Some(split) => split,
        None => return err(errors::SYNTAX),
    };
    let mut replace = false;
    for flag in options {
        if !is(flag, "replace") {
            return err(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(flag)
            ));
        }
        replace = true;
    }
    match ctx.server.functions().load(code, replace) {
        Ok(name) => match persist_functions(ctx) {
            Ok(()) => Frame::bulk(name),
            Err(e) => e,
        },
        Err(text) => err(text),
    }
}

fn function_delete(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let name = String::from_utf8_lossy(&argv[2]);
    match ctx.server.functions().delete(&name) {
        Ok(()) => match persist_functions(ctx) {
            Ok(()) => Frame::ok(),
            Err(e) => e,
        },
        Err(text) => err(text),
    }
}

fn function_flush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() > 3 {
        return errors::unknown_subcommand_or_arity("function", &argv[1]);
    }
    match argv.get(2) {
        None => {}
        Some(a) if argv.len() == 3 && (is(a, "async") || is(a, "sync")) => {}
        Some(_) => return err(errors::FUNCTION_FLUSH_MODE),
    }
    ctx.server.functions().flush();
    match persist_functions(ctx) {
        Ok(()) => Frame::ok(),
        Err(e) => e,
    }
}

fn function_list(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < argv.len() {
        if is(&argv[i], "withcode") && !with_code {
            with_code = true;
        } else if is(&argv[i], "libraryname") && pattern.is_none() {
            let Some(p) = argv.get(i + 1) else {
                return err("ERR library name argument was not given");
            };
            pattern = Some(p);
            i += 1;
        } else {
            return err(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(&argv[i])
            ));
        }
        i += 1;
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
    Frame::Array(entries)
}

fn function_dump(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::bulk(ctx.server.functions().dump())
}

fn function_restore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() > 4 {
        return errors::unknown_subcommand_or_arity("function", &argv[1]);
    }
    let policy = match argv.get(3) {
        None => RestorePolicy::Append,
        Some(p) if argv.len() == 4 && is(p, "flush") => RestorePolicy::Flush,
        Some(p) if argv.len() == 4 && is(p, "append") => RestorePolicy::Append,
        Some(p) if argv.len() == 4 && is(p, "replace") => RestorePolicy::Replace,
        Some(_) => return err(errors::RESTORE_POLICY),
    };
    match ctx.server.functions().restore(&argv[2], policy) {
        Ok(()) => match persist_functions(ctx) {
            Ok(()) => Frame::ok(),
            Err(e) => e,
        },
        Err(text) => err(text),
    }
}

fn function_stats(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
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
    Frame::Map(vec![
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
    ])
}

fn function_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help::reply(
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
    )
}
