//! The ACL command and its subcommands: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT,
//! GENPASS, DRYRUN, LOG, LOAD, SAVE, HELP. The users, their rules and the log are
//! [`crate::acl`]'s; reading and writing the ACL file is the server's (`ServerApi`).

use bytes::Bytes;
use strata_resp::Frame;

use crate::acl::{self, Denied};
use crate::command::*;
use crate::cursor::{Args, Failure, Reply};
use crate::{errors, help, registry, Ctx, KillFilter};

/// A subcommand row of ACL: `noscript loading stale` (plus `admin` for those that read or
/// change users), arity, handler and docs.
const fn sub(
    name: &'static str,
    arity: Arity,
    admin: bool,
    handler: fn(&mut Ctx<'_>, &[Bytes]) -> Reply,
    complexity: &'static str,
    summary: &'static str,
    syntax: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags: Flags(if admin {
            ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL
        } else {
            NOSCRIPT | LOADING | STALE | SENTINEL
        }),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(handler),
        docs: Docs {
            group: "server",
            since: "6.0.0",
            complexity,
            summary,
            syntax,
            tips: &[],
        },
    }
}

/// The ACL family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "acl",
        arity: Arity::AtLeast(2),
        flags: Flags(SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(acl_container),
        docs: Docs {
            group: "server",
            since: "6.0.0",
            complexity: "Depends on subcommand.",
            summary: "A container for Access List Control commands.",
            syntax: "",
            tips: &[],
        },
    },
    sub(
        "acl|cat",
        Arity::AtLeast(2),
        false,
        acl_cat,
        "O(1) since the categories and commands are a fixed set.",
        "Lists the ACL categories, or the commands inside a category.",
        "[categoryname]",
    ),
    sub(
        "acl|deluser",
        Arity::AtLeast(3),
        true,
        acl_deluser,
        "O(1) amortized time considering the typical user.",
        "Deletes ACL users, and terminates their connections.",
        "username [username ...]",
    ),
    CommandSpec {
        docs: Docs {
            group: "server",
            since: "7.0.0",
            complexity: "O(1).",
            summary:
                "Simulates the execution of a command by a user, without executing the command.",
            syntax: "username command [arg [arg ...]]",
            tips: &[],
        },
        ..sub(
            "acl|dryrun",
            Arity::AtLeast(4),
            true,
            acl_dryrun,
            "",
            "",
            "",
        )
    },
    sub(
        "acl|genpass",
        Arity::AtLeast(2),
        false,
        acl_genpass,
        "O(1)",
        "Generates a pseudorandom, secure password that can be used to identify ACL users.",
        "[bits:integer]",
    ),
    sub(
        "acl|getuser",
        Arity::Exactly(3),
        true,
        acl_getuser,
        "O(N). Where N is the number of password, command and pattern rules that the user has.",
        "Lists the ACL rules of a user.",
        "username",
    ),
    CommandSpec {
        flags: Flags(LOADING | STALE | SENTINEL),
        ..sub(
            "acl|help",
            Arity::Exactly(2),
            false,
            acl_help,
            "O(1)",
            "Returns helpful text about the different subcommands.",
            "",
        )
    },
    sub(
        "acl|list",
        Arity::Exactly(2),
        true,
        acl_list,
        "O(N). Where N is the number of configured users.",
        "Dumps the effective rules in ACL file format.",
        "",
    ),
    sub(
        "acl|load",
        Arity::Exactly(2),
        true,
        acl_load,
        "O(N). Where N is the number of configured users.",
        "Reloads the rules from the configured ACL file.",
        "",
    ),
    sub(
        "acl|log",
        Arity::AtLeast(2),
        true,
        acl_log,
        "O(N) with N being the number of entries shown.",
        "Lists recent security events generated due to ACL rules.",
        "[operation: count | RESET]",
    ),
    sub(
        "acl|save",
        Arity::Exactly(2),
        true,
        acl_save,
        "O(N). Where N is the number of configured users.",
        "Saves the effective ACL rules in the configured ACL file.",
        "",
    ),
    sub(
        "acl|setuser",
        Arity::AtLeast(3),
        true,
        acl_setuser,
        "O(N). Where N is the number of rules provided.",
        "Creates and modifies an ACL user and its rules.",
        "username [rule [rule ...]]",
    ),
    sub(
        "acl|users",
        Arity::Exactly(2),
        true,
        acl_users,
        "O(N). Where N is the number of configured users.",
        "Lists all ACL users.",
        "",
    ),
    sub(
        "acl|whoami",
        Arity::Exactly(2),
        false,
        acl_whoami,
        "O(1)",
        "Returns the authenticated username of the current connection.",
        "",
    ),
];

fn acl_container(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "acl"))
}

fn acl_setuser(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let name = &argv[2];
    if acl::has_spaces(name) {
        return Err(Failure::text(errors::ACL_USERNAME_SPACES));
    }
    ctx.server
        .acl()
        .set_user(name, &argv[3..])
        .map_err(Failure::text)?;
    ctx.server.acl_user_changed(name);
    Ok(Frame::ok())
}

fn acl_deluser(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let names = &argv[2..];
    if names.iter().any(|n| &n[..] == b"default") {
        return Err(Failure::text(errors::ACL_DELETE_DEFAULT));
    }
    let users = ctx.server.acl().clone();
    let existing: Vec<Bytes> = names
        .iter()
        .filter(|n| users.get(n).is_some())
        .cloned()
        .collect();
    let deleted = users.delete(names);
    // The clients authenticated as a deleted user are disconnected (this one after its reply).
    for name in existing {
        let filter = KillFilter {
            user: Some(name),
            skip_me: false,
            ..KillFilter::default()
        };
        ctx.server.client_kill(&filter, ctx.session.id);
    }
    Ok(Frame::Integer(deleted as i64))
}

fn acl_getuser(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let Some(user) = ctx.server.acl().get(&argv[2]) else {
        return Ok(Frame::Null);
    };
    let r = user.rules();
    let mut fields = vec![
        (
            Frame::bulk("flags"),
            Frame::Set(r.flag_names().into_iter().map(Frame::bulk).collect()),
        ),
        (
            Frame::bulk("passwords"),
            Frame::Array(r.passwords.iter().map(|p| Frame::bulk(p.clone())).collect()),
        ),
    ];
    fields.extend(acl::selector_fields(&r.root));
    fields.push((
        Frame::bulk("selectors"),
        Frame::Array(
            r.selectors
                .iter()
                .map(|s| Frame::Map(acl::selector_fields(s)))
                .collect(),
        ),
    ));
    Ok(Frame::Map(fields))
}

fn acl_list(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Array(
        ctx.server
            .acl()
            .all()
            .iter()
            .map(|u| {
                Frame::bulk(format!(
                    "user {} {}",
                    String::from_utf8_lossy(u.name()),
                    u.rules().describe()
                ))
            })
            .collect(),
    ))
}

fn acl_users(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Array(
        ctx.server
            .acl()
            .all()
            .iter()
            .map(|u| Frame::Bulk(u.name().clone()))
            .collect(),
    ))
}

fn acl_whoami(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Bulk(ctx.session.user.name().clone()))
}

fn acl_load(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.acl_load().map_err(Failure::text)?;
    Ok(Frame::ok())
}

fn acl_save(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.acl_save().map_err(Failure::text)?;
    Ok(Frame::ok())
}

fn acl_cat(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    match argv.len() {
        2 => Ok(Frame::Array(
            crate::command::acl::NAMES
                .iter()
                .map(|n| Frame::bulk(*n))
                .collect(),
        )),
        3 => {
            let Some(cat) = crate::command::Acl::by_name(&argv[2]) else {
                let name = String::from_utf8_lossy(&argv[2]);
                let name: String = name.chars().take(128).collect();
                return Err(Failure::text(format!("ERR Unknown category '{name}'")));
            };
            Ok(Frame::Array(
                registry::all()
                    .iter()
                    .filter(|c| c.acl_categories().has(cat.0))
                    .map(|c| Frame::bulk(c.name))
                    .collect(),
            ))
        }
        _ => Err(Failure(errors::wrong_arity("acl|cat"))),
    }
}

/// Most bits ACL GENPASS makes.
const GENPASS_MAX_BITS: i64 = 4096;

fn acl_genpass(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let bits = if a.is_done() { 256 } else { a.int()? };
    a.finish()?;
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(Failure::text(errors::ACL_GENPASS_BITS));
    }
    let chars = ((bits + 3) / 4) as usize;
    Ok(Frame::bulk(random_hex(chars)))
}

/// `n` random hex digits from the operating system's generator.
fn random_hex(n: usize) -> String {
    use std::io::Read;
    let mut bytes = vec![0u8; n.div_ceil(2)];
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if filled.is_err() {
        // No /dev/urandom: a hash of the clock and a counter still varies per call.
        use std::hash::{BuildHasher, Hasher};
        for (i, b) in bytes.iter_mut().enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.write_u64(strata::now_ms());
            *b = h.finish() as u8;
        }
    }
    let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(n);
    hex
}

fn acl_log(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let mut count = 10;
    if !a.is_done() {
        if a.opt("RESET") {
            a.finish()?;
            ctx.server.acl().log_reset();
            return Ok(Frame::ok());
        }
        count = a.int()?.max(0);
    }
    a.finish()?;
    Ok(ctx.server.acl().log_reply(count as usize))
}

fn acl_dryrun(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let Some(user) = ctx.server.acl().get(&argv[2]) else {
        return Err(Failure::text(format!(
            "ERR User '{}' not found",
            String::from_utf8_lossy(&argv[2])
        )));
    };
    let call = &argv[3..];
    let found = registry::lookup(&call[0])
        .filter(|s| !s.name.contains('|'))
        .and_then(
            |spec| match registry::is_container(spec.name) && call.len() >= 2 {
                true => registry::lookup(&[spec.name.as_bytes(), b"|", &call[1]].concat()),
                false => Some(spec),
            },
        );
    let Some(row) = found else {
        return Err(Failure::text(format!(
            "ERR Command '{}' not found",
            String::from_utf8_lossy(&call[0])
        )));
    };
    if !row.arity_ok(call.len()) {
        return Err(Failure(errors::wrong_arity(row.name)));
    }
    Ok(match user.rules().check(row, call) {
        Ok(()) => Frame::ok(),
        Err(Denied::Command) => Frame::bulk(format!(
            "This user has no permissions to run the '{}' command",
            row.name
        )),
        Err(Denied::Key(p)) => Frame::bulk(format!(
            "This user has no permissions to access the '{}' key",
            String::from_utf8_lossy(&call[p])
        )),
        Err(Denied::Channel(p)) => Frame::bulk(format!(
            "This user has no permissions to access the '{}' channel",
            String::from_utf8_lossy(&call[p])
        )),
    })
}

fn acl_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn setuser_then_list_describes_the_user() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["ACL", "SETUSER", "bob", "on", ">pw", "~k*", "+get"]),
            Frame::ok()
        );
        assert_eq!(
            h.run(&["ACL", "USERS"]),
            Frame::Array(vec![Frame::bulk("bob"), Frame::bulk("default")])
        );
        assert_eq!(
            h.error(&["ACL", "SETUSER", "bob", "+nosuch"]),
            "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
        );
        assert_eq!(
            h.error(&["ACL", "DELUSER", "default"]),
            "ERR The 'default' user cannot be removed"
        );
        assert_eq!(h.run(&["ACL", "DELUSER", "bob", "x"]), Frame::Integer(1));
        assert_eq!(h.run(&["ACL", "WHOAMI"]), Frame::bulk("default"));
    }

    #[test]
    fn dryrun_says_why_a_command_is_refused() {
        let mut h = Harness::new();
        h.run(&["ACL", "SETUSER", "u", "on", "nopass", "+get", "~a*"]);
        assert_eq!(h.run(&["ACL", "DRYRUN", "u", "get", "a1"]), Frame::ok());
        assert_eq!(
            h.run(&["ACL", "DRYRUN", "u", "get", "b"]),
            Frame::bulk("This user has no permissions to access the 'b' key")
        );
        assert_eq!(
            h.run(&["ACL", "DRYRUN", "u", "set", "a", "b"]),
            Frame::bulk("This user has no permissions to run the 'set' command")
        );
        assert_eq!(
            h.error(&["ACL", "DRYRUN", "nobody", "get", "a"]),
            "ERR User 'nobody' not found"
        );
    }

    #[test]
    fn auth_as_a_user_restricts_the_connection() {
        let mut h = Harness::new();
        h.run(&["ACL", "SETUSER", "u", "on", ">pw", "+get", "+auth", "~a*"]);
        assert_eq!(h.run(&["AUTH", "u", "pw"]), Frame::ok());
        assert_eq!(
            h.error(&["SET", "a", "1"]),
            "NOPERM this user has no permissions to run the 'set' command"
        );
        assert_eq!(
            h.error(&["GET", "b"]),
            "NOPERM this user has no permissions to access one of the keys used as arguments"
        );
        assert_eq!(h.run(&["GET", "a"]), Frame::Null);
        assert_eq!(
            h.error(&["AUTH", "u", "bad"]),
            "WRONGPASS invalid username-password pair or user is disabled."
        );
    }
}
