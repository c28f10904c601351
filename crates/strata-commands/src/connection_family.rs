//! Connection commands: PING, ECHO, SELECT, QUIT, RESET, HELLO, AUTH (against the ACL users
//! of [`crate::acl`]) and CLIENT (CLIENT TRACKING and CACHING against [`crate::tracking`]).
//! They change the session; the client registry behind CLIENT LIST/KILL belongs to the server
//! (`ServerApi`).

use bytes::Bytes;
use strata_resp::{Frame, Protocol};

use crate::args::is;
use crate::command::*;
use crate::cursor::{self, Args, Failure, Reply};
use crate::errors;
use crate::help;
use crate::{Ctx, KillFilter, Outcome, ReplyMode, TrackingMode};

/// The connection family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "ping",
        arity: Arity::AtLeast(1),
        flags: Flags(FAST | SENTINEL | WHEN_SUBSCRIBED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(ping),
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
        handler: Handler::Reply(echo),
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
        handler: Handler::Reply(select),
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
        handler: Handler::Outcome(quit),
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
        handler: Handler::Reply(reset),
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
        handler: Handler::Reply(hello),
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
        handler: Handler::Reply(auth),
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
        handler: Handler::Reply(client),
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
        handler: Handler::Reply(client_id),
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
        handler: Handler::Reply(client_setname),
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
        handler: Handler::Reply(client_getname),
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
        handler: Handler::Reply(client_list),
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
        handler: Handler::Reply(client_info),
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
        handler: Handler::Reply(client_kill),
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
        handler: Handler::Reply(client_reply),
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
        handler: Handler::Reply(client_no_evict),
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
        name: "client|pause",
        arity: Arity::AtLeast(3),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(client_pause),
        docs: Docs {
            group: "connection",
            since: "2.9.50",
            complexity: "O(1)",
            summary: "Holds back the commands of every client, or only writes, for a time.",
            syntax: "timeout [mode: WRITE | ALL]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|unpause",
        arity: Arity::Exactly(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(client_unpause),
        docs: Docs {
            group: "connection",
            since: "6.2.0",
            complexity: "O(N) Where N is the number of paused clients",
            summary: "Ends a CLIENT PAUSE, letting the held commands run.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|unblock",
        arity: Arity::AtLeast(3),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(client_unblock),
        docs: Docs {
            group: "connection",
            since: "5.0.0",
            complexity: "O(log N) where N is the number of client connections",
            summary: "Ends the wait of a client blocked in BLPOP, XREAD and the like.",
            syntax: "client-id [unblock-type: TIMEOUT | ERROR]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|tracking",
        arity: Arity::AtLeast(3),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(client_tracking),
        docs: Docs {
            group: "connection",
            since: "6.0.0",
            complexity: "O(1). Some options may introduce additional complexity.",
            summary: "Turns client-side caching on or off: the server tells this connection (or another) when keys it read change.",
            syntax: "<status: ON | OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|caching",
        arity: Arity::Exactly(3),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(client_caching),
        docs: Docs {
            group: "connection",
            since: "6.0.0",
            complexity: "O(1)",
            summary: "Says whether the keys of the next command are tracked, in OPTIN or OPTOUT tracking mode.",
            syntax: "<mode: YES | NO>",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|getredir",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(client_getredir),
        docs: Docs {
            group: "connection",
            since: "6.0.0",
            complexity: "O(1)",
            summary: "Gives the id of the client this connection's invalidations go to.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "client|trackinginfo",
        arity: Arity::Exactly(2),
        flags: Flags(NOSCRIPT | LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(client_trackinginfo),
        docs: Docs {
            group: "connection",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Describes this connection's client-side caching: its mode, redirection and prefixes.",
            syntax: "",
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
        handler: Handler::Reply(client_help),
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

/// ON / OFF, the switch of CLIENT NO-EVICT.
const ON_OFF: &[(&str, bool)] = &[("ON", true), ("OFF", false)];

/// The client types CLIENT LIST TYPE and CLIENT KILL TYPE accept.
const CLIENT_TYPES: &[&str] = &["normal", "master", "replica", "slave", "pubsub"];

fn ping(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let message = if a.is_done() { None } else { Some(a.value()?) };
    if !a.is_done() {
        return Err(Failure(errors::wrong_arity("ping")));
    }
    if ctx.session.subscriptions.total() > 0 && ctx.session.protocol == Protocol::Resp2 {
        // In the RESP2 subscribed state PING answers in the shape of a message.
        return Ok(Frame::Array(vec![
            Frame::bulk("pong"),
            Frame::Bulk(message.cloned().unwrap_or_default()),
        ]));
    }
    Ok(match message {
        None => Frame::simple("PONG"),
        Some(m) => Frame::bulk(m.clone()),
    })
}

fn echo(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let message = a.value()?;
    a.finish()?;
    Ok(Frame::bulk(message.clone()))
}

fn select(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let n = a.int()?;
    a.finish()?;
    if n < i32::MIN as i64 || n > i32::MAX as i64 {
        return Err(Failure::text(errors::NOT_INTEGER));
    }
    if n < 0 || n >= ctx.session.db.databases() as i64 {
        return Err(Failure::text(errors::DB_INDEX));
    }
    ctx.session.db = ctx.session.db.select(n as u32)?;
    ctx.server.client_update(ctx.session);
    Ok(Frame::ok())
}

fn quit(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Result<Outcome, Failure> {
    Ok(Outcome::ReplyThenClose(Frame::ok()))
}

fn reset(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
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
    s.user = ctx.server.acl().default_user().clone();
    s.authenticated = !ctx.server.acl().auth_required();
    if std::mem::take(&mut s.monitor) {
        ctx.server.stop_monitor();
    }
    stop_tracking(ctx);
    ctx.server.client_update(ctx.session);
    Ok(Frame::simple("RESET"))
}

/// Logs the connection in as `user` with `pass` (Redis's `ACLAuthenticateUser`); a failure
/// is written to the ACL LOG under `argv0` (AUTH or HELLO as sent).
fn check_auth(ctx: &mut Ctx<'_>, argv0: &Bytes, user: &Bytes, pass: &[u8]) -> Result<(), Failure> {
    match ctx.server.acl().authenticate(user, pass) {
        Some(u) => {
            ctx.session.user = u;
            ctx.session.authenticated = true;
            ctx.server.client_update(ctx.session);
            Ok(())
        }
        None => {
            crate::acl::log_auth_failure(ctx, argv0, user);
            Err(Failure::text(errors::WRONGPASS))
        }
    }
}

fn auth(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let first = a.value()?;
    match a.remaining() {
        0 => {
            if ctx.server.acl().default_user().rules().nopass {
                return Err(Failure::text(errors::AUTH_NOT_CONFIGURED));
            }
            check_auth(ctx, &argv[0], &Bytes::from_static(b"default"), first)?;
        }
        1 => {
            let pass = a.value()?;
            check_auth(ctx, &argv[0], first, pass)?;
        }
        _ => return Err(cursor::syntax()),
    }
    Ok(Frame::ok())
}

/// Redis's validateClientName.
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn hello(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let mut version = None;
    if !a.is_done() {
        let v = strata::num::parse_i64(a.value()?)
            .ok_or_else(|| Failure::text(errors::PROTOCOL_VERSION_NOT_INTEGER))?;
        if !(2..=3).contains(&v) {
            return Err(Failure::text(errors::NOPROTO));
        }
        version = Protocol::from_version(v);
    }
    let (mut creds, mut name) = (None, None);
    while !a.is_done() {
        let more = a.remaining() - 1;
        if more >= 2 && a.opt("AUTH") {
            creds = Some((a.value()?, a.value()?));
        } else if more >= 1 && a.opt("SETNAME") {
            let n = a.value()?;
            if !valid_client_name(n) {
                return Err(Failure::text(errors::CLIENT_NAME_SPACES));
            }
            name = Some(n.clone());
        } else {
            return Err(Failure::text(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(a.value()?)
            )));
        }
    }
    if let Some((user, pass)) = creds {
        check_auth(ctx, &argv[0], user, pass)?;
    }
    if !ctx.session.authenticated {
        return Err(Failure::text(errors::HELLO_NOAUTH));
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
}

fn client(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "client"))
}

fn client_id(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Integer(ctx.session.id as i64))
}

fn client_setname(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let name = a.value()?;
    a.finish()?;
    if !valid_client_name(name) {
        return Err(Failure::text(errors::CLIENT_NAME_SPACES));
    }
    ctx.session.name = if name.is_empty() {
        None
    } else {
        Some(name.clone())
    };
    ctx.server.client_update(ctx.session);
    Ok(Frame::ok())
}

fn client_getname(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::bulk_or_null(ctx.session.name.clone()))
}

/// A client type of CLIENT LIST/KILL TYPE, lowercased; `ERR Unknown client type '...'` when it
/// is none of Redis's.
fn client_type(a: &[u8]) -> Result<String, Failure> {
    let t = String::from_utf8_lossy(a).to_ascii_lowercase();
    if !CLIENT_TYPES.contains(&t.as_str()) {
        return Err(Failure::text(format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(a)
        )));
    }
    Ok(t)
}

/// A client id of CLIENT LIST ID / CLIENT KILL ID: a positive integer.
fn client_id_arg(a: &[u8]) -> Result<u64, Failure> {
    match strata::num::parse_i64(a) {
        Some(n) if n > 0 => Ok(n as u64),
        _ => Err(Failure::text(errors::INVALID_CLIENT_ID)),
    }
}

fn client_list(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let (mut kind, mut ids) = (None, None);
    if a.remaining() == 2 && a.opt("TYPE") {
        kind = Some(client_type(a.value()?)?);
    } else if a.remaining() > 1 && a.opt("ID") {
        ids = Some(
            a.rest()
                .iter()
                .map(|id| client_id_arg(id))
                .collect::<Result<Vec<u64>, Failure>>()?,
        );
    }
    a.finish()?;
    let text = ctx.server.client_list(ids.as_deref(), kind.as_deref());
    Ok(Frame::Verbatim(text.into()))
}

fn client_info(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Verbatim(ctx.server.client_info(ctx.session).into()))
}

fn client_kill(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let mut f = KillFilter {
        skip_me: true,
        ..Default::default()
    };
    if a.remaining() == 1 {
        // Old form: CLIENT KILL addr:port; replies OK or an error.
        f.addr = Some(String::from_utf8_lossy(a.value()?).into_owned());
        f.skip_me = false;
        if ctx.server.client_kill(&f, ctx.session.id) == 0 {
            return Err(Failure::text(errors::NO_SUCH_CLIENT));
        }
        return Ok(Frame::ok());
    }
    while !a.is_done() {
        let option = a.value()?;
        let v = a.value()?;
        let value = || String::from_utf8_lossy(v).into_owned();
        if is(option, "id") {
            f.id = Some(client_id_arg(v)?);
        } else if is(option, "addr") {
            f.addr = Some(value());
        } else if is(option, "laddr") {
            f.laddr = Some(value());
        } else if is(option, "type") {
            f.kind = Some(client_type(v)?);
        } else if is(option, "user") {
            if ctx.server.acl().get(v).is_none() {
                return Err(Failure::text(format!("ERR No such user '{}'", value())));
            }
            f.user = Some(v.clone());
        } else if is(option, "skipme") {
            f.skip_me = if is(v, "yes") {
                true
            } else if is(v, "no") {
                false
            } else {
                return Err(cursor::syntax());
            };
        } else {
            return Err(cursor::syntax());
        }
    }
    Ok(Frame::Integer(
        ctx.server.client_kill(&f, ctx.session.id) as i64
    ))
}

fn client_reply(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    ctx.session.reply_mode = a.word(&[
        ("ON", ReplyMode::On),
        ("OFF", ReplyMode::Off),
        ("SKIP", ReplyMode::Skip),
    ])?;
    a.finish()?;
    Ok(Frame::ok())
}

fn client_no_evict(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    ctx.session.no_evict = a.word(ON_OFF)?;
    a.finish()?;
    ctx.server.client_update(ctx.session);
    Ok(Frame::ok())
}

fn client_pause(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    if argv.len() > 4 {
        return Ok(errors::unknown_subcommand_or_arity("client", &argv[1]));
    }
    let mut write_only = false;
    if let Some(mode) = argv.get(3) {
        if is(mode, "write") {
            write_only = true;
        } else if !is(mode, "all") {
            return Err(Failure::text(errors::PAUSE_MODE));
        }
    }
    let ms = strata::num::parse_i64(&argv[2])
        .ok_or_else(|| Failure::text(errors::TIMEOUT_NOT_INTEGER))?;
    if ms < 0 {
        return Err(Failure::text(errors::TIMEOUT_NEGATIVE));
    }
    let end = if ms > 0 {
        strata::now_ms().saturating_add(ms as u64)
    } else {
        0
    };
    ctx.server.client_pause(end, write_only);
    Ok(Frame::ok())
}

fn client_unpause(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.client_unpause();
    Ok(Frame::ok())
}

fn client_unblock(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    if argv.len() > 4 {
        return Ok(errors::unknown_subcommand_or_arity("client", &argv[1]));
    }
    let mut error = false;
    if let Some(reason) = argv.get(3) {
        if is(reason, "error") {
            error = true;
        } else if !is(reason, "timeout") {
            return Err(Failure::text(errors::UNBLOCK_REASON));
        }
    }
    let id = strata::num::parse_i64(&argv[2]).ok_or_else(|| Failure::text(errors::NOT_INTEGER))?;
    let unblocked = id > 0 && ctx.server.client_unblock(id as u64, error);
    Ok(Frame::Integer(i64::from(unblocked)))
}

/// Turns tracking off for this connection (CLIENT TRACKING OFF, RESET).
fn stop_tracking(ctx: &mut Ctx<'_>) {
    if ctx.session.tracking.take().is_some() {
        ctx.server.tracking().disable(ctx.session.id);
        ctx.server.tracking_changed(ctx.session);
    }
    ctx.session.caching = false;
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP], with
/// Redis's checks in Redis's order.
fn client_tracking(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut mode = TrackingMode::default();
    let mut prefixes: Vec<Bytes> = Vec::new();
    let mut j = 3;
    while j < argv.len() {
        let (opt, more) = (&argv[j], j + 1 < argv.len());
        if is(opt, "redirect") && more {
            j += 1;
            if mode.redirect != 0 {
                return Err(Failure::text(errors::TRACKING_ONE_REDIRECT));
            }
            let id = strata::num::parse_i64(&argv[j])
                .ok_or_else(|| Failure::text(errors::NOT_INTEGER))?;
            // The client must exist now (it may still go away later).
            if id <= 0 || !ctx.server.client_exists(id as u64) {
                return Err(Failure::text(errors::TRACKING_NO_REDIRECT_CLIENT));
            }
            mode.redirect = id as u64;
        } else if is(opt, "bcast") {
            mode.bcast = true;
        } else if is(opt, "optin") {
            mode.optin = true;
        } else if is(opt, "optout") {
            mode.optout = true;
        } else if is(opt, "noloop") {
            mode.noloop = true;
        } else if is(opt, "prefix") && more {
            j += 1;
            prefixes.push(argv[j].clone());
        } else {
            return Err(cursor::syntax());
        }
        j += 1;
    }
    if is(&argv[2], "off") {
        stop_tracking(ctx);
        return Ok(Frame::ok());
    }
    if !is(&argv[2], "on") {
        return Err(cursor::syntax());
    }
    if !mode.bcast && !prefixes.is_empty() {
        return Err(Failure::text(errors::TRACKING_PREFIX_NEEDS_BCAST));
    }
    let now = ctx.session.tracking;
    if now.is_some_and(|m| m.bcast != mode.bcast) {
        return Err(Failure::text(errors::TRACKING_BCAST_SWITCH));
    }
    if mode.bcast && (mode.optin || mode.optout) {
        return Err(Failure::text(errors::TRACKING_OPT_WITH_BCAST));
    }
    if mode.optin && mode.optout {
        return Err(Failure::text(errors::TRACKING_OPTIN_AND_OPTOUT));
    }
    if now.is_some_and(|m| (mode.optin && m.optout) || (mode.optout && m.optin)) {
        return Err(Failure::text(errors::TRACKING_OPT_SWITCH));
    }
    let tracking = ctx.server.tracking();
    if mode.bcast {
        // Redis 7.0 also answers +OK after the error when the overlap is between two new
        // prefixes past the first (a double reply); Strata answers the error alone.
        if let Some(e) = tracking.prefix_collision(ctx.session.id, &prefixes) {
            return Err(Failure::text(e));
        }
    }
    tracking.enable(ctx.session.id, mode, &prefixes);
    ctx.session.tracking = Some(mode);
    // CLIENT CACHING's flag survives a change of options, as in Redis.
    ctx.server.tracking_changed(ctx.session);
    Ok(Frame::ok())
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked, in OPTIN (YES) or
/// OPTOUT (NO) mode.
fn client_caching(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let Some(mode) = ctx.session.tracking else {
        return Err(Failure::text(errors::CACHING_NOT_TRACKING));
    };
    if is(&argv[2], "yes") {
        if !mode.optin {
            return Err(Failure::text(errors::CACHING_YES_NEEDS_OPTIN));
        }
    } else if is(&argv[2], "no") {
        if !mode.optout {
            return Err(Failure::text(errors::CACHING_NO_NEEDS_OPTOUT));
        }
    } else {
        return Err(cursor::syntax());
    }
    ctx.session.caching = true;
    Ok(Frame::ok())
}

/// The REDIRECT client of a tracking connection (0: none), -1 when tracking is off.
fn redirect_of(ctx: &Ctx<'_>) -> i64 {
    ctx.session.tracking.map_or(-1, |m| m.redirect as i64)
}

fn client_getredir(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Integer(redirect_of(ctx)))
}

/// CLIENT TRACKINGINFO: `flags` (a set), `redirect` and `prefixes`, as Redis writes them.
fn client_trackinginfo(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    let mode = ctx.session.tracking;
    let caching = ctx.session.caching;
    let mut flags = vec![Frame::bulk(if mode.is_some() { "on" } else { "off" })];
    if let Some(m) = mode {
        let mut flag = |on: bool, name: &'static str| {
            if on {
                flags.push(Frame::bulk(name));
            }
        };
        flag(m.bcast, "bcast");
        flag(m.optin, "optin");
        flag(m.optin && caching, "caching-yes");
        flag(m.optout, "optout");
        flag(m.optout && caching, "caching-no");
        flag(m.noloop, "noloop");
        flag(ctx.server.tracking_redirect_broken(), "broken_redirect");
    }
    let prefixes = match mode {
        Some(m) if m.bcast => ctx.server.tracking().prefixes_of(ctx.session.id),
        _ => Vec::new(),
    };
    Ok(Frame::Map(vec![
        (Frame::bulk("flags"), Frame::Set(flags)),
        (Frame::bulk("redirect"), Frame::Integer(redirect_of(ctx))),
        (
            Frame::bulk("prefixes"),
            Frame::Array(prefixes.into_iter().map(Frame::Bulk).collect()),
        ),
    ]))
}

fn client_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "CLIENT",
        &[
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
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
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn quit_replies_then_closes() {
        let mut h = Harness::new();
        assert_eq!(
            h.outcome(&["QUIT"]),
            crate::Outcome::ReplyThenClose(Frame::ok())
        );
    }

    #[test]
    fn ping_and_echo_answer_their_argument() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["PING"]), Frame::simple("PONG"));
        assert_eq!(h.run(&["PING", "hi"]), Frame::bulk("hi"));
        assert_eq!(
            h.error(&["PING", "a", "b"]),
            "ERR wrong number of arguments for 'ping' command"
        );
        assert_eq!(h.run(&["ECHO", "x"]), Frame::bulk("x"));
    }

    #[test]
    fn select_checks_the_index() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["SELECT", "1"]), Frame::ok());
        assert_eq!(
            h.error(&["SELECT", "x"]),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            h.error(&["SELECT", "4294967296"]),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(h.error(&["SELECT", "-1"]), "ERR DB index is out of range");
    }

    #[test]
    fn auth_and_hello_read_their_options() {
        let mut h = Harness::new();
        assert_eq!(
            h.error(&["AUTH", "pw"]),
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
        );
        assert_eq!(h.run(&["AUTH", "default", "any"]), Frame::ok());
        assert_eq!(
            h.error(&["AUTH", "bob", "pw"]),
            "WRONGPASS invalid username-password pair or user is disabled."
        );
        assert_eq!(h.error(&["AUTH", "a", "b", "c"]), "ERR syntax error");
        assert_eq!(
            h.error(&["HELLO", "x"]),
            "ERR Protocol version is not an integer or out of range"
        );
        assert_eq!(
            h.error(&["HELLO", "4"]),
            "NOPROTO unsupported protocol version"
        );
        assert_eq!(
            h.error(&["HELLO", "3", "SETNAME"]),
            "ERR Syntax error in HELLO option 'SETNAME'"
        );
        match h.run(&["HELLO", "3", "SETNAME", "me"]) {
            Frame::Map(m) => assert!(m.contains(&(Frame::bulk("proto"), Frame::Integer(3)))),
            other => panic!("HELLO answered {other:?}"),
        }
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::bulk("me"));
    }

    #[test]
    fn tracking_remembers_reads_and_forgets_the_keys_writes_change() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["CLIENT", "TRACKING", "ON"]), Frame::ok());
        assert_eq!(h.run(&["CLIENT", "GETREDIR"]), Frame::Integer(0));
        h.run(&["GET", "a"]);
        h.run(&["SADD", "s", "x"]);
        h.run(&["SMEMBERS", "s"]);
        assert_eq!(h.tracking().total_keys(), 2);
        // SUNIONSTORE only reads its source: `s` stays tracked.
        h.run(&["SUNIONSTORE", "d", "s"]);
        assert_eq!(h.tracking().total_keys(), 2);
        h.run(&["SET", "a", "1"]);
        assert_eq!(h.tracking().total_keys(), 1);
        // OPTIN: nothing is tracked but after CLIENT CACHING YES, for one command.
        assert_eq!(h.run(&["CLIENT", "TRACKING", "OFF"]), Frame::ok());
        assert_eq!(h.run(&["CLIENT", "TRACKING", "ON", "OPTIN"]), Frame::ok());
        h.run(&["GET", "b"]);
        assert_eq!(h.tracking().total_keys(), 1);
        assert_eq!(h.run(&["CLIENT", "CACHING", "YES"]), Frame::ok());
        h.run(&["GET", "c"]);
        h.run(&["GET", "e"]);
        assert_eq!(h.tracking().total_keys(), 2);
        assert_eq!(h.run(&["RESET"]), Frame::simple("RESET"));
        assert_eq!(h.run(&["CLIENT", "GETREDIR"]), Frame::Integer(-1));
        assert_eq!(h.tracking().clients(), 0);
    }

    #[test]
    fn client_tracking_checks_its_options_in_redis_order() {
        let mut h = Harness::new();
        assert_eq!(
            h.error(&["CLIENT", "TRACKING", "on", "redirect", "5"]),
            "ERR The client ID you want redirect to does not exist"
        );
        assert_eq!(
            h.error(&["CLIENT", "TRACKING", "on", "prefix", "p"]),
            "ERR PREFIX option requires BCAST mode to be enabled"
        );
        assert_eq!(
            h.error(&["CLIENT", "TRACKING", "on", "optin", "optout"]),
            "ERR You can't specify both OPTIN mode and OPTOUT mode"
        );
        assert_eq!(
            h.error(&["CLIENT", "TRACKING", "off", "x"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["CLIENT", "CACHING", "yes"]),
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
        );
        assert_eq!(h.run(&["CLIENT", "TRACKING", "on", "bcast"]), Frame::ok());
        assert_eq!(
            h.error(&["CLIENT", "TRACKING", "on"]),
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
        );
        assert_eq!(
            h.error(&["CLIENT", "TRACKING", "on", "bcast", "prefix", "a"]),
            "ERR Prefix 'a' overlaps with an existing prefix ''. Prefixes for a single client must not overlap."
        );
    }

    #[test]
    fn client_subcommands_check_their_arguments() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["CLIENT", "SETNAME", "n1"]), Frame::ok());
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::bulk("n1"));
        assert_eq!(
            h.error(&["CLIENT", "SETNAME", "a b"]),
            "ERR Client names cannot contain spaces, newlines or special characters."
        );
        assert_eq!(h.run(&["CLIENT", "SETNAME", ""]), Frame::ok());
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::Null);
        assert_eq!(
            h.error(&["CLIENT", "LIST", "TYPE", "odd"]),
            "ERR Unknown client type 'odd'"
        );
        assert_eq!(
            h.error(&["CLIENT", "LIST", "ID", "1", "0"]),
            "ERR client-id should be greater than 0"
        );
        assert_eq!(h.error(&["CLIENT", "LIST", "TYPE"]), "ERR syntax error");
        assert_eq!(
            h.error(&["CLIENT", "KILL", "ID", "5", "TYPE"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["CLIENT", "KILL", "SKIPME", "maybe"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["CLIENT", "KILL", "USER", "bob"]),
            "ERR No such user 'bob'"
        );
        assert_eq!(
            h.error(&["CLIENT", "KILL", "1.2.3.4:5"]),
            "ERR No such client"
        );
        assert_eq!(h.run(&["CLIENT", "KILL", "ID", "7"]), Frame::Integer(0));
        assert_eq!(h.run(&["CLIENT", "NO-EVICT", "on"]), Frame::ok());
        assert_eq!(h.error(&["CLIENT", "NO-EVICT", "x"]), "ERR syntax error");
        assert_eq!(h.error(&["CLIENT", "REPLY", "x"]), "ERR syntax error");
    }
}
