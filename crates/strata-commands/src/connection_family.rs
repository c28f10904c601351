//! Connection commands: PING, ECHO, SELECT, QUIT, RESET, HELLO, AUTH and CLIENT. They change the
//! session; the client registry behind CLIENT LIST/KILL belongs to the server (`ServerApi`).

use bytes::Bytes;
use strata_resp::{Frame, Protocol};

use crate::args::{self, is, reply};
use crate::command::*;
use crate::errors::{self, err};
use crate::help;
use crate::{Ctx, KillFilter, ReplyMode};

/// The connection family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "ping",
        arity: Arity::AtLeast(1),
        flags: Flags(FAST | SENTINEL | WHEN_SUBSCRIBED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(ping),
        docs: Docs {
            group: "connection",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Checks that the server answers, echoing a message when one is given.",
            syntax: "[message]",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "echo",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE | FAST),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(echo),
        docs: Docs {
            group: "connection",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Replies with its argument unchanged.",
            syntax: "message",
            tips: &[],
        },
    },
    CommandSpec {
        name: "select",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE | FAST | SELECTS_DB),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(select),
        docs: Docs {
            group: "connection",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Switches the connection to another numbered database.",
            syntax: "index",
            tips: &[],
        },
    },
    CommandSpec {
        name: "quit",
        arity: Arity::AtLeast(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | WHEN_SUBSCRIBED | NOT_QUEUED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(quit),
        docs: Docs {
            group: "connection",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Asks the server to close this connection.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "reset",
        arity: Arity::Exactly(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | WHEN_SUBSCRIBED | NOT_QUEUED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(reset),
        docs: Docs {
            group: "connection",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Returns the connection to its initial state.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hello",
        arity: Arity::AtLeast(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(hello),
        docs: Docs {
            group: "connection",
            since: "6.0.0",
            complexity: "O(1)",
            summary: "Negotiates the protocol version and optionally authenticates and names the connection.",
            syntax: "[arguments: protover [AUTH username password] [SETNAME clientname]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "auth",
        arity: Arity::AtLeast(2),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(auth),
        docs: Docs {
            group: "connection",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Logs the connection in with a password, or a user name and password.",
            syntax: "[username] password",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client",
        arity: Arity::AtLeast(2),
        flags: Flags(SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: plain!(client),
        docs: Docs {
            group: "connection",
            since: "2.4.0",
            complexity: "O(1)",
            summary: "Groups the subcommands that inspect and control client connections.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|id",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_id),
        docs: Docs {
            group: "connection",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Gives the numeric ID of this connection.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|setname",
        arity: Arity::Exactly(3),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_setname),
        docs: Docs {
            group: "connection",
            since: "2.6.9",
            complexity: "O(1)",
            summary: "Gives this connection a name.",
            syntax: "connection-name",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|getname",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_getname),
        docs: Docs {
            group: "connection",
            since: "2.6.9",
            complexity: "O(1)",
            summary: "Gives the name of this connection, if it has one.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|list",
        arity: Arity::AtLeast(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_list),
        docs: Docs {
            group: "connection",
            since: "2.4.0",
            complexity: "O(1)",
            summary: "Describes the connected clients, one line each.",
            syntax: "[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [id: ID client-id [client-id ...]]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "client|info",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_info),
        docs: Docs {
            group: "connection",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Describes this connection in one line.",
            syntax: "",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "client|kill",
        arity: Arity::AtLeast(3),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_kill),
        docs: Docs {
            group: "connection",
            since: "2.4.0",
            complexity: "O(1)",
            summary: "Closes the client connections that match a filter.",
            syntax: "<filter: ip:port | <new-format: [ID client-id] | [normal_master_slave_pubsub: TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB>] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME yes/no]>>",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|reply",
        arity: Arity::Exactly(3),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_reply),
        docs: Docs {
            group: "connection",
            since: "3.2.0",
            complexity: "O(1)",
            summary: "Turns the server's replies to this connection on or off, or skips the next one.",
            syntax: "<ON | OFF | SKIP>",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|no-evict",
        arity: Arity::Exactly(3),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_no_evict),
        docs: Docs {
            group: "connection",
            since: "7.0.0",
            complexity: "O(1)",
            summary: "Exempts this connection from client eviction, or stops exempting it.",
            syntax: "<enabled: ON | OFF>",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: plain!(client_help),
        docs: Docs {
            group: "connection",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Lists the CLIENT subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
];

fn ping(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if ctx.session.subscriptions.total() > 0 && ctx.session.protocol == Protocol::Resp2 {
        // In the RESP2 subscribed state PING answers in the shape of a message.
        return match argv.len() {
            1 | 2 => Frame::Array(vec![
                Frame::bulk("pong"),
                Frame::Bulk(argv.get(1).cloned().unwrap_or_default()),
            ]),
            _ => errors::wrong_arity("ping"),
        };
    }
    match argv.len() {
        1 => Frame::simple("PONG"),
        2 => Frame::bulk(argv[1].clone()),
        _ => errors::wrong_arity("ping"),
    }
}

fn echo(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    Frame::bulk(argv[1].clone())
}

fn select(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let n = strata::num::parse_i64(&argv[1])
            .filter(|n| *n >= i32::MIN as i64 && *n <= i32::MAX as i64)
            .ok_or_else(|| err(errors::NOT_INTEGER))?;
        if n < 0 || n >= ctx.session.db.databases() as i64 {
            return Err(err(errors::DB_INDEX));
        }
        ctx.session.db = args::db(ctx.session.db.select(n as u32))?;
        ctx.server.client_update(ctx.session);
        Ok(Frame::ok())
    })())
}

fn quit(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    ctx.session.close_after_reply = true;
    Frame::ok()
}

fn reset(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    ctx.unsubscribe_all();
    let s = &mut *ctx.session;
    if let Ok(db0) = s.db.select(0) {
        s.db = db0;
    }
    s.protocol = Protocol::Resp2;
    s.name = None;
    s.reply_mode = ReplyMode::On;
    // CLIENT NO-EVICT survives RESET in Redis 7.0 (clearClientConnectionState keeps it).
    s.multi = None;
    s.watching = None;
    s.authenticated = ctx.server.requirepass().is_none();
    ctx.server.client_update(ctx.session);
    Frame::simple("RESET")
}

/// Checks a password against `requirepass` for user `user` (only `default` exists).
fn check_auth(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> Result<(), Frame> {
    let ok = user == b"default"
        && match ctx.server.requirepass() {
            Some(p) => p.as_slice() == pass,
            None => true,
        };
    if ok {
        ctx.session.authenticated = true;
        Ok(())
    } else {
        Err(err(errors::WRONGPASS))
    }
}

fn auth(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match argv.len() {
        2 => {
            if ctx.server.requirepass().is_none() {
                return err(errors::AUTH_NOT_CONFIGURED);
            }
            match check_auth(ctx, b"default", &argv[1]) {
                Ok(()) => Frame::ok(),
                Err(e) => e,
            }
        }
        3 => match check_auth(ctx, &argv[1], &argv[2]) {
            Ok(()) => Frame::ok(),
            Err(e) => e,
        },
        _ => err(errors::SYNTAX),
    }
}

/// Redis's validateClientName.
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn hello(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let mut version = None;
        let mut j = 1;
        if argv.len() >= 2 {
            let v = strata::num::parse_i64(&argv[1])
                .ok_or_else(|| err(errors::PROTOCOL_VERSION_NOT_INTEGER))?;
            if !(2..=3).contains(&v) {
                return Err(err(errors::NOPROTO));
            }
            version = Protocol::from_version(v);
            j = 2;
        }
        let (mut creds, mut name) = (None, None);
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            if is(&argv[j], "auth") && more >= 2 {
                creds = Some((argv[j + 1].clone(), argv[j + 2].clone()));
                j += 2;
            } else if is(&argv[j], "setname") && more >= 1 {
                if !valid_client_name(&argv[j + 1]) {
                    return Err(err(errors::CLIENT_NAME_SPACES));
                }
                name = Some(argv[j + 1].clone());
                j += 1;
            } else {
                return Err(err(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(&argv[j])
                )));
            }
            j += 1;
        }
        if let Some((user, pass)) = creds {
            check_auth(ctx, &user, &pass)?;
        }
        if !ctx.session.authenticated {
            return Err(err(errors::HELLO_NOAUTH));
        }
        if let Some(n) = name {
            ctx.session.name = if n.is_empty() { None } else { Some(n) };
        }
        if let Some(v) = version {
            ctx.session.protocol = v;
        }
        ctx.server.client_update(ctx.session);
        Ok(Frame::Map(vec![
            (Frame::bulk("server"), Frame::bulk("redis")),
            (Frame::bulk("version"), Frame::bulk(crate::REDIS_VERSION)),
            (
                Frame::bulk("proto"),
                Frame::Integer(ctx.session.protocol.version()),
            ),
            (Frame::bulk("id"), Frame::Integer(ctx.session.id as i64)),
            (Frame::bulk("mode"), Frame::bulk("standalone")),
            (Frame::bulk("role"), Frame::bulk("master")),
            (Frame::bulk("modules"), Frame::Array(vec![])),
        ]))
    })())
}

fn client(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    dispatch_sub(ctx, argv, COMMANDS, "client")
}

fn client_id(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::Integer(ctx.session.id as i64)
}

fn client_setname(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if !valid_client_name(&argv[2]) {
        return err(errors::CLIENT_NAME_SPACES);
    }
    ctx.session.name = if argv[2].is_empty() {
        None
    } else {
        Some(argv[2].clone())
    };
    ctx.server.client_update(ctx.session);
    Frame::ok()
}

fn client_getname(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::bulk_or_null(ctx.session.name.clone())
}

fn client_list(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let mut kind = None;
        let mut ids: Option<Vec<u64>> = None;
        if argv.len() == 4 && is(&argv[2], "type") {
            let t = String::from_utf8_lossy(&argv[3]).to_ascii_lowercase();
            if !["normal", "master", "replica", "slave", "pubsub"].contains(&t.as_str()) {
                return Err(err(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(&argv[3])
                )));
            }
            kind = Some(t);
        } else if argv.len() > 3 && is(&argv[2], "id") {
            let mut v = Vec::new();
            for a in &argv[3..] {
                match strata::num::parse_i64(a) {
                    Some(n) if n > 0 => v.push(n as u64),
                    _ => return Err(err(errors::INVALID_CLIENT_ID)),
                }
            }
            ids = Some(v);
        } else if argv.len() != 2 {
            return Err(err(errors::SYNTAX));
        }
        let text = ctx.server.client_list(ids.as_deref(), kind.as_deref());
        Ok(Frame::Verbatim(text.into()))
    })())
}

fn client_info(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::Verbatim(ctx.server.client_info(ctx.session).into())
}

fn client_kill(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let mut f = KillFilter {
            skip_me: true,
            ..Default::default()
        };
        if argv.len() == 3 {
            // Old form: CLIENT KILL addr:port; replies OK or an error.
            f.addr = Some(String::from_utf8_lossy(&argv[2]).into_owned());
            f.skip_me = false;
            return Ok(if ctx.server.client_kill(&f, ctx.session.id) > 0 {
                Frame::ok()
            } else {
                err(errors::NO_SUCH_CLIENT)
            });
        }
        let mut j = 2;
        while j < argv.len() {
            let Some(v) = argv.get(j + 1) else {
                return Err(err(errors::SYNTAX));
            };
            let value = String::from_utf8_lossy(v).into_owned();
            if is(&argv[j], "id") {
                match strata::num::parse_i64(v) {
                    Some(n) if n > 0 => f.id = Some(n as u64),
                    _ => return Err(err(errors::INVALID_CLIENT_ID)),
                }
            } else if is(&argv[j], "addr") {
                f.addr = Some(value);
            } else if is(&argv[j], "laddr") {
                f.laddr = Some(value);
            } else if is(&argv[j], "type") {
                let t = value.to_ascii_lowercase();
                if !["normal", "master", "replica", "slave", "pubsub"].contains(&t.as_str()) {
                    return Err(err(format!("ERR Unknown client type '{value}'")));
                }
                f.kind = Some(t);
            } else if is(&argv[j], "user") {
                if value != "default" {
                    return Err(err(format!("ERR No such user '{value}'")));
                }
            } else if is(&argv[j], "skipme") {
                if is(v, "yes") {
                    f.skip_me = true;
                } else if is(v, "no") {
                    f.skip_me = false;
                } else {
                    return Err(err(errors::SYNTAX));
                }
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 2;
        }
        Ok(Frame::Integer(
            ctx.server.client_kill(&f, ctx.session.id) as i64
        ))
    })())
}

fn client_reply(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if is(&argv[2], "on") {
        ctx.session.reply_mode = ReplyMode::On;
        Frame::ok()
    } else if is(&argv[2], "off") {
        ctx.session.reply_mode = ReplyMode::Off;
        Frame::ok()
    } else if is(&argv[2], "skip") {
        ctx.session.reply_mode = ReplyMode::Skip;
        Frame::ok()
    } else {
        err(errors::SYNTAX)
    }
}

fn client_no_evict(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if is(&argv[2], "on") {
        ctx.session.no_evict = true;
    } else if is(&argv[2], "off") {
        ctx.session.no_evict = false;
    } else {
        return err(errors::SYNTAX);
    }
    ctx.server.client_update(ctx.session);
    Frame::ok()
}

fn client_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help::reply(
        "CLIENT",
        &[
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "    * ID <client-id>",
            "      Kill connections by client id.",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
        ],
    )
}
