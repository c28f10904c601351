//! String commands: GET, SET and its variants, counters, ranges, LCS (the bit commands on
//! strings are the bitmap family's). Each row of `COMMANDS` names its handler below; handlers
//! read their arguments with the cursor ([`Args`]), call `strata::Db`, and reply, `?` carrying
//! errors.

use bytes::Bytes;
use strata::{Expiry, GetExpiry, SetCondition, SetOptions};
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
use crate::notify::{GENERIC, STRING};
use crate::Ctx;

/// The string family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "get",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(get),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Gives the string stored at a key.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "set",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1, 0, 1, 0).notes("RW and ACCESS due to the optional `GET` argument").resolve(set_key_flags),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(set),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Stores a string at a key, with optional conditions and expiration.",
            syntax: "key value [condition: NX | XX] [GET] [expiration: EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "setnx",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(OW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(setnx),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Stores a string at a key only if the key is absent.",
            syntax: "key value",
            tips: &[],
        },
    },
    CommandSpec {
        name: "setex",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(setex),
        docs: Docs {
            group: "string",
            since: "2.0.0",
            complexity: "O(1)",
            summary: "Stores a string at a key with a time to live in seconds.",
            syntax: "key seconds value",
            tips: &[],
        },
    },
    CommandSpec {
        name: "psetex",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(psetex),
        docs: Docs {
            group: "string",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Stores a string at a key with a time to live in milliseconds.",
            syntax: "key milliseconds value",
            tips: &[],
        },
    },
    CommandSpec {
        name: "mget",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, -1, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(mget),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(N) where N is the number of keys to retrieve.",
            summary: "Gives the strings stored at several keys.",
            syntax: "key [key ...]",
            tips: &["request_policy:multi_shard"],
        },
    },
    CommandSpec {
        name: "mset",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, -1, 2)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, -1, 2, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(mset),
        docs: Docs {
            group: "string",
            since: "1.0.1",
            complexity: "O(N) where N is the number of keys to set.",
            summary: "Stores strings at several keys in one step.",
            syntax: "key value [key value ...]",
            tips: &["request_policy:multi_shard", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "msetnx",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, -1, 2)),
        key_specs: &[
            KeySpec::range(OW | INSERT, 1, -1, 2, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(msetnx),
        docs: Docs {
            group: "string",
            since: "1.0.1",
            complexity: "O(N) where N is the number of keys to set.",
            summary: "Stores strings at several keys only if none of them exists.",
            syntax: "key value [key value ...]",
            tips: &["request_policy:multi_shard", "response_policy:agg_min"],
        },
    },
    CommandSpec {
        name: "getset",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(getset),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Stores a new string at a key and gives back the previous one.",
            syntax: "key value",
            tips: &[],
        },
    },
    CommandSpec {
        name: "getdel",
        arity: Arity::Exactly(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(getdel),
        docs: Docs {
            group: "string",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Gives the string at a key and deletes the key.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "getex",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0).notes("RW and UPDATE because it changes the TTL"),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(getex),
        docs: Docs {
            group: "string",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Gives the string at a key and changes or drops its expiration.",
            syntax: "key [expiration: EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "append",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(append),
        docs: Docs {
            group: "string",
            since: "2.0.0",
            complexity: "O(1).",
            summary: "Adds bytes to the end of a string, creating it if needed.",
            syntax: "key value",
            tips: &[],
        },
    },
    CommandSpec {
        name: "strlen",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(strlen),
        docs: Docs {
            group: "string",
            since: "2.2.0",
            complexity: "O(1)",
            summary: "Gives the byte length of a string.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "incr",
        arity: Arity::Exactly(2),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(incr),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Adds one to the integer stored at a key.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "decr",
        arity: Arity::Exactly(2),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(decr),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Subtracts one from the integer stored at a key.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "incrby",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(incrby),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Adds an integer to the number stored at a key.",
            syntax: "key increment",
            tips: &[],
        },
    },
    CommandSpec {
        name: "decrby",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(decrby),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Subtracts an integer from the number stored at a key.",
            syntax: "key decrement",
            tips: &[],
        },
    },
    CommandSpec {
        name: "incrbyfloat",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(incrbyfloat),
        docs: Docs {
            group: "string",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Adds a floating-point amount to the number stored at a key.",
            syntax: "key increment:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "getrange",
        arity: Arity::Exactly(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(getrange),
        docs: Docs {
            group: "string",
            since: "2.4.0",
            complexity: "O(N) where N is the length of the returned string.",
            summary: "Gives a byte range of a string.",
            syntax: "key start end",
            tips: &[],
        },
    },
    CommandSpec {
        name: "substr",
        arity: Arity::Exactly(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(getrange),
        docs: Docs {
            group: "string",
            since: "1.0.0",
            complexity: "O(N) where N is the length of the returned string.",
            summary: "Gives a byte range of a string (older name of GETRANGE).",
            syntax: "key start end",
            tips: &[],
        },
    },
    CommandSpec {
        name: "setrange",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(setrange),
        docs: Docs {
            group: "string",
            since: "2.2.0",
            complexity: "O(1), not counting the time taken to copy the new string in place.",
            summary: "Overwrites part of a string starting at a byte offset.",
            syntax: "key offset value",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lcs",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 1, 1, 0),
        ],
        acl: Acl(acl::STRING),
        handler: Handler::Reply(lcs),
        docs: Docs {
            group: "string",
            since: "7.0.0",
            complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
            summary: "Finds the longest common subsequence of two strings.",
            syntax: "key1:key key2:key [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]",
            tips: &[],
        },
    },
];

/// SET's key: read too (RW, access) when GET is among the options, else only overwritten (as
/// Redis's setGetKeys says).
fn set_key_flags(argv: &[Bytes]) -> u16 {
    if argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        RW | ACCESS | UPDATE
    } else {
        OW | UPDATE
    }
}

fn get(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::bulk_or_null(ctx.session.db.get(key)?))
}

/// Which command's option grammar `set_options` follows.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Grammar {
    Set,
    GetEx,
}

/// An expire option: EX / PX (relative) or EXAT / PXAT (absolute), in seconds or ms.
#[derive(PartialEq, Eq, Clone, Copy)]
struct ExpireKind {
    seconds: bool,
    absolute: bool,
}

/// EX, PX, EXAT, PXAT.
const EXPIRE_WORDS: [(&str, ExpireKind); 4] = [
    (
        "EX",
        ExpireKind {
            seconds: true,
            absolute: false,
        },
    ),
    (
        "PX",
        ExpireKind {
            seconds: false,
            absolute: false,
        },
    ),
    (
        "EXAT",
        ExpireKind {
            seconds: true,
            absolute: true,
        },
    ),
    (
        "PXAT",
        ExpireKind {
            seconds: false,
            absolute: true,
        },
    ),
];

/// Options shared by SET and GETEX, as parsed (before the expire value is validated).
#[derive(Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// The expire option and its value.
    expire: Option<(ExpireKind, &'a [u8])>,
}

/// Redis's parseExtendedStringArgumentsOrReply over the rest of the arguments: the same
/// conflicts are syntax errors.
fn set_options<'a>(a: &mut Args<'a>, grammar: Grammar) -> Result<StringOptions<'a>, Failure> {
    let mut o = StringOptions::default();
    let set = grammar == Grammar::Set;
    while !a.is_done() {
        let has_expire = o.expire.is_some();
        if set && !o.xx && a.opt("NX") {
            o.nx = true;
        } else if set && !o.nx && a.opt("XX") {
            o.xx = true;
        } else if set && a.opt("GET") {
            o.get = true;
        } else if set && !o.persist && !has_expire && a.opt("KEEPTTL") {
            o.keepttl = true;
        } else if !set && !has_expire && !o.keepttl && a.opt("PERSIST") {
            o.persist = true;
        } else {
            let kind = a.word(&EXPIRE_WORDS)?;
            let value = a.value()?;
            // The same expire option may repeat (last wins); a different one conflicts.
            if o.keepttl || o.persist || o.expire.is_some_and(|(k, _)| k != kind) {
                return Err(syntax());
            }
            o.expire = Some((kind, value));
        }
    }
    Ok(o)
}

/// Redis's getExpireMillisecondsOrReply: an integer > 0 that converts to an absolute time in ms
/// without overflow.
fn expire_ms(value: &[u8], kind: ExpireKind, cmd: &str) -> Result<u64, Failure> {
    let invalid = || Failure(errors::invalid_expire(cmd));
    let n = crate::args::int(value)?;
    if n <= 0 || (kind.seconds && n > i64::MAX / 1000) {
        return Err(invalid());
    }
    let mut ms = if kind.seconds { n * 1000 } else { n };
    if !kind.absolute {
        ms = ms
            .checked_add(strata::now_ms() as i64)
            .ok_or_else(invalid)?;
    }
    if ms <= 0 {
        return Err(invalid());
    }
    Ok(ms as u64)
}

fn set(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, value) = (a.key()?, a.value()?);
    let o = set_options(&mut a, Grammar::Set)?;
    let expiry = match o.expire {
        Some((kind, v)) => Expiry::At(expire_ms(v, kind, "set")?),
        None if o.keepttl => Expiry::Keep,
        None => Expiry::Never,
    };
    let condition = if o.nx {
        SetCondition::IfAbsent
    } else if o.xx {
        SetCondition::IfPresent
    } else {
        SetCondition::Always
    };
    let get = o.get;
    let out = ctx.session.db.set(
        key,
        value,
        SetOptions {
            condition,
            expiry,
            get,
        },
    )?;
    if out.written {
        ctx.notify(STRING, "set", key);
        if matches!(expiry, Expiry::At(_)) {
            ctx.notify(GENERIC, "expire", key);
        }
    }
    Ok(if get {
        Frame::bulk_or_null(out.old)
    } else if out.written {
        Frame::ok()
    } else {
        Frame::Null
    })
}

fn setnx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, value) = (a.key()?, a.value()?);
    let opts = SetOptions {
        condition: SetCondition::IfAbsent,
        ..Default::default()
    };
    let out = ctx.session.db.set(key, value, opts)?;
    if out.written {
        ctx.notify(STRING, "set", key);
    }
    Ok(Frame::Integer(out.written as i64))
}

/// SETEX / PSETEX key ttl value.
fn set_with_ttl(ctx: &mut Ctx<'_>, argv: &[Bytes], seconds: bool, cmd: &str) -> Reply {
    let mut a = Args::new(argv);
    let (key, ttl, value) = (a.key()?, a.value()?, a.value()?);
    let kind = ExpireKind {
        seconds,
        absolute: false,
    };
    let opts = SetOptions {
        expiry: Expiry::At(expire_ms(ttl, kind, cmd)?),
        ..Default::default()
    };
    ctx.session.db.set(key, value, opts)?;
    ctx.notify(STRING, "set", key);
    ctx.notify(GENERIC, "expire", key);
    Ok(Frame::ok())
}

fn setex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    set_with_ttl(ctx, argv, true, "setex")
}

fn psetex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    set_with_ttl(ctx, argv, false, "psetex")
}

fn mget(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let keys: Vec<&[u8]> = Args::new(argv).rest().iter().map(|k| &k[..]).collect();
    let values = ctx.session.db.mget(&keys)?;
    Ok(Frame::Array(
        values.into_iter().map(Frame::bulk_or_null).collect(),
    ))
}

/// Key-value pairs.
type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The key-value pairs of MSET / MSETNX (a wrong arity error when one lacks its value).
fn pairs<'a>(argv: &'a [Bytes], cmd: &str) -> Result<Pairs<'a>, Failure> {
    let rest = Args::new(argv).rest();
    if !rest.len().is_multiple_of(2) {
        return Err(Failure(errors::wrong_arity(cmd)));
    }
    Ok(rest
        .chunks_exact(2)
        .map(|c| (&c[0][..], &c[1][..]))
        .collect())
}

fn mset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let pairs = pairs(argv, "mset")?;
    ctx.session.db.mset(&pairs)?;
    for (k, _) in pairs {
        ctx.notify(STRING, "set", k);
    }
    Ok(Frame::ok())
}

fn msetnx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let pairs = pairs(argv, "msetnx")?;
    let done = ctx.session.db.msetnx(&pairs)?;
    if done {
        for (k, _) in pairs {
            ctx.notify(STRING, "set", k);
        }
    }
    Ok(Frame::Integer(done as i64))
}

fn getset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, value) = (a.key()?, a.value()?);
    let opts = SetOptions {
        get: true,
        ..Default::default()
    };
    let out = ctx.session.db.set(key, value, opts)?;
    ctx.notify(STRING, "set", key);
    Ok(Frame::bulk_or_null(out.old))
}

fn getdel(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    let v = ctx.session.db.getdel(key)?;
    if v.is_some() {
        ctx.notify(GENERIC, "del", key);
    }
    Ok(Frame::bulk_or_null(v))
}

fn getex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let o = set_options(&mut a, Grammar::GetEx)?;
    let change = match o.expire {
        Some((kind, v)) => GetExpiry::At(expire_ms(v, kind, "getex")?),
        None if o.persist => GetExpiry::Persist,
        None => GetExpiry::Unchanged,
    };
    // PERSIST raises an event only when there was a TTL to remove.
    let had_ttl = matches!(change, GetExpiry::Persist)
        && ctx.notifies(GENERIC)
        && matches!(ctx.session.db.ttl(key), Ok(strata::Ttl::ExpiresAt(_)));
    let v = ctx.session.db.getex(key, change)?;
    if v.is_some() {
        let absolute = o.expire.is_some_and(|(k, _)| k.absolute);
        match change {
            GetExpiry::At(ms) if ms <= strata::now_ms() && absolute => {
                ctx.notify(GENERIC, "del", key)
            }
            GetExpiry::At(_) => ctx.notify(GENERIC, "expire", key),
            GetExpiry::Persist if had_ttl => ctx.notify(GENERIC, "persist", key),
            _ => {}
        }
    }
    Ok(Frame::bulk_or_null(v))
}

fn append(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, value) = (a.key()?, a.value()?);
    let n = ctx.session.db.append(key, value)?;
    ctx.notify(STRING, "append", key);
    Ok(Frame::Integer(n as i64))
}

fn strlen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::Integer(ctx.session.db.strlen(key)? as i64))
}

/// INCR and its variants: adds `delta` to the integer at `key`.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> Reply {
    let n = ctx.session.db.incr_by(key, delta)?;
    ctx.notify(STRING, "incrby", key);
    Ok(Frame::Integer(n))
}

fn incr(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    incr_by(ctx, key, 1)
}

fn decr(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    incr_by(ctx, key, -1)
}

fn incrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, delta) = (a.key()?, a.int()?);
    incr_by(ctx, key, delta)
}

fn decrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, delta) = (a.key()?, a.int()?);
    if delta == i64::MIN {
        return Err(Failure::text(errors::DECREMENT_OVERFLOW));
    }
    incr_by(ctx, key, -delta)
}

fn incrbyfloat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, delta) = (a.key()?, a.float()?);
    let v = ctx.session.db.incr_by_float(key, delta)?;
    ctx.notify(STRING, "incrbyfloat", key);
    Ok(Frame::bulk(v))
}

fn getrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, start, end) = (a.key()?, a.int()?, a.int()?);
    Ok(Frame::bulk(ctx.session.db.getrange(key, start, end)?))
}

fn setrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, offset) = (a.key()?, a.int()?);
    if offset < 0 {
        return Err(Failure::text(errors::OFFSET_OUT_OF_RANGE));
    }
    let value = a.value()?;
    let n = ctx.session.db.setrange(key, offset as u64, value)?;
    if !value.is_empty() {
        ctx.notify(STRING, "setrange", key);
    }
    Ok(Frame::Integer(n as i64))
}

/// Largest transient LCS table (bytes) we agree to build.
const LCS_TABLE_LIMIT: u64 = 512 << 20;

fn lcs(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (k1, k2) = (a.key()?, a.key()?);
    let (mut len, mut idx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    while !a.is_done() {
        if a.opt("IDX") {
            idx = true;
        } else if a.opt("LEN") {
            len = true;
        } else if a.opt("WITHMATCHLEN") {
            withmatchlen = true;
        } else if a.remaining() >= 2 && a.opt("MINMATCHLEN") {
            minmatchlen = a.int()?.max(0);
        } else {
            return Err(syntax());
        }
    }
    let fetch = |k: &[u8]| match ctx.session.db.get(k) {
        Ok(v) => Ok(v.unwrap_or_default()),
        Err(strata::Error::WrongType) => Err(Failure::text(errors::LCS_NOT_STRINGS)),
        Err(e) => Err(Failure::from(e)),
    };
    let (a, b) = (fetch(k1)?, fetch(k2)?);
    if len && idx {
        return Err(Failure::text(errors::LCS_LEN_AND_IDX));
    }
    let r = strata::lcs(&a, &b, minmatchlen as u64, LCS_TABLE_LIMIT)
        .map_err(|_| Failure::text(errors::LCS_TOO_BIG))?;
    if !idx {
        return Ok(if len {
            Frame::Integer(r.sequence.len() as i64)
        } else {
            Frame::bulk(r.sequence)
        });
    }
    let range = |(from, to): (u64, u64)| {
        Frame::Array(vec![Frame::Integer(from as i64), Frame::Integer(to as i64)])
    };
    let matches = r
        .matches
        .iter()
        .map(|&(in_a, in_b, l)| {
            let mut m = vec![range(in_a), range(in_b)];
            if withmatchlen {
                m.push(Frame::Integer(l as i64));
            }
            Frame::Array(m)
        })
        .collect();
    Ok(Frame::Map(vec![
        (Frame::bulk("matches"), Frame::Array(matches)),
        (Frame::bulk("len"), Frame::Integer(r.sequence.len() as i64)),
    ]))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn set_then_get_round_trips_and_options_conflict() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["SET", "k", "v"]), Frame::ok());
        assert_eq!(h.run(&["GET", "k"]), Frame::bulk("v"));
        assert_eq!(h.run(&["SET", "k", "w", "NX"]), Frame::Null);
        assert_eq!(h.run(&["SET", "k", "w", "XX", "GET"]), Frame::bulk("v"));
        assert_eq!(h.error(&["SET", "k", "v", "NX", "XX"]), "ERR syntax error");
        assert_eq!(
            h.error(&["SET", "k", "v", "EX", "1", "PX", "1"]),
            "ERR syntax error"
        );
        assert_eq!(h.error(&["SET", "k", "v", "EX"]), "ERR syntax error");
        assert_eq!(
            h.error(&["SET", "k", "v", "EX", "0"]),
            "ERR invalid expire time in 'set' command"
        );
        assert_eq!(
            h.run(&["SET", "k", "v", "EX", "100", "EX", "200"]),
            Frame::ok()
        );
    }

    #[test]
    fn counters_reply_integers_and_storage_errors_in_redis_text() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["INCRBY", "n", "5"]), Frame::Integer(5));
        assert_eq!(h.run(&["DECR", "n"]), Frame::Integer(4));
        assert_eq!(
            h.error(&["INCRBY", "n", "x"]),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            h.error(&["DECRBY", "n", "-9223372036854775808"]),
            "ERR decrement would overflow"
        );
        h.run(&["RPUSH", "l", "a"]);
        assert_eq!(
            h.error(&["INCR", "l"]),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
        assert_eq!(h.run(&["INCRBYFLOAT", "f", "1.5"]), Frame::bulk("1.5"));
    }

    #[test]
    fn ranges_and_multi_key_commands() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["MSET", "a", "hello", "b", "x"]), Frame::ok());
        assert_eq!(
            h.error(&["MSET", "a", "1", "b"]),
            "ERR wrong number of arguments for 'mset' command"
        );
        assert_eq!(h.run(&["GETRANGE", "a", "1", "-2"]), Frame::bulk("ell"));
        assert_eq!(
            h.error(&["SETRANGE", "a", "-1", "x"]),
            "ERR offset is out of range"
        );
        assert_eq!(h.run(&["SETRANGE", "a", "5", "!"]), Frame::Integer(6));
        assert_eq!(h.run(&["MSETNX", "a", "1", "c", "2"]), Frame::Integer(0));
        assert_eq!(
            h.run(&["MGET", "a", "c"]),
            Frame::Array(vec![Frame::bulk("hello!"), Frame::Null])
        );
        assert_eq!(h.run(&["LCS", "a", "b", "LEN"]), Frame::Integer(0));
        assert_eq!(
            h.error(&["LCS", "a", "b", "MINMATCHLEN"]),
            "ERR syntax error"
        );
    }
}
