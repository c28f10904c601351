//! COMMAND and its subcommands: what the command table says about itself (COMMAND INFO, DOCS,
//! COUNT, LIST, GETKEYS), read from the rows of [`crate::table`] and nothing else.

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::is;
use crate::command::*;
use crate::errors::{self, err};
use crate::keys_family::help_reply;
use crate::table::{self, dispatch_sub};
use crate::Ctx;

/// The COMMAND family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "command",
        arity: Arity::AtLeast(1),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: command,
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(N) where N is the total number of Redis commands",
            summary: "Describes every command the server knows.",
            syntax: "",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|count",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: command_count,
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Gives the number of commands the server knows.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "command|info",
        arity: Arity::AtLeast(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: command_info,
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(N) where N is the number of commands to look up",
            summary: "Describes the given commands, or all of them.",
            syntax: "[command-name [command-name ...]]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|docs",
        arity: Arity::AtLeast(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: command_docs,
        docs: Docs {
            group: "server",
            since: "7.0.0",
            complexity: "O(N) where N is the number of commands to look up",
            summary: "Gives the documentation of the given commands, or of all of them.",
            syntax: "[command-name [command-name ...]]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|list",
        arity: Arity::AtLeast(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: command_list,
        docs: Docs {
            group: "server",
            since: "7.0.0",
            complexity: "O(N) where N is the total number of Redis commands",
            summary: "Lists command names, optionally filtered.",
            syntax: "[filterby: FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|getkeys",
        arity: Arity::AtLeast(4),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: command_getkeys,
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(N) where N is the number of arguments to the command",
            summary: "Picks out the key arguments of a full command line.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "command|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: command_help,
        docs: Docs {
            group: "server",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Lists the COMMAND subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
];

fn command(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() == 1 {
        return Frame::Array(table::top_level().map(table::info).collect());
    }
    dispatch_sub(ctx, argv, "command")
}

fn command_count(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::Integer(table::top_level().count() as i64)
}

fn command_info(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() == 2 {
        return Frame::Array(table::top_level().map(table::info).collect());
    }
    Frame::Array(
        argv[2..]
            .iter()
            .map(|n| table::lookup(n).map(table::info).unwrap_or(Frame::Null))
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
        let mut d = table::docs(s);
        if let (Some(v), Some(k)) = (d.pop(), d.pop()) {
            pairs.push((k, v));
        }
    }
    Frame::Map(pairs)
}

fn command_list(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    // As Redis 7.0 lists them: subcommands too, as `container|sub`.
    let all = table::all().iter().copied();
    if argv.len() == 2 {
        return Frame::Array(all.map(|c| Frame::bulk(c.name)).collect());
    }
    if argv.len() != 5 || !is(&argv[2], "filterby") {
        return err(errors::SYNTAX);
    }
    let value = &argv[4];
    let keep: Box<dyn Fn(&CommandSpec) -> bool> = if is(&argv[3], "aclcat") {
        let cat = Acl::by_name(value).map_or(0, |a| a.0);
        Box::new(move |c| c.acl_categories().has(cat))
    } else if is(&argv[3], "pattern") {
        let p = value.clone();
        Box::new(move |c| strata::glob::glob_match(&p, c.name.as_bytes(), true))
    } else if is(&argv[3], "module") {
        Box::new(|_| false)
    } else {
        return err(errors::SYNTAX);
    };
    Frame::Array(
        all.filter(|c| keep(c))
            .map(|c| Frame::bulk(c.name))
            .collect(),
    )
}

fn command_getkeys(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let target = &argv[2..];
    // A container's subcommand is looked up as Redis's lookupCommand does.
    let spec = table::lookup(&target[0]).and_then(|c| match target.get(1) {
        Some(sub) if !table::subcommands_of(c.name).is_empty() => {
            table::lookup(&[c.name.as_bytes(), b"|", sub].concat())
        }
        _ => Some(c),
    });
    let Some(spec) = spec else {
        return err(errors::GETKEYS_INVALID_COMMAND);
    };
    // Shard channels sit in key positions (SPUBLISH) but are no keys.
    if !spec.key_specs.iter().any(|k| k.flags & NOT_KEY == 0) {
        return err(errors::GETKEYS_NO_KEYS);
    }
    if !spec.arity_ok(target.len()) {
        return err(errors::GETKEYS_BAD_ARITY);
    }
    let pos = match spec.key_positions(target) {
        Some(pos) if !pos.is_empty() => pos,
        // EVAL with a count past the end, or of 0: no keys rather than an error.
        _ if spec.has(NO_MANDATORY_KEYS) => Vec::new(),
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
