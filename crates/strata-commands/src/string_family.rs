//! String commands: GET, SET and its variants, counters, ranges, LCS. Each row of `COMMANDS` names
//! its handler below; handlers parse, call `strata::Db`, and reply.

use bytes::Bytes;
use strata::{Expiry, GetExpiry, SetCondition, SetOptions};
use strata_resp::Frame;

use crate::args::{self, db, is, reply, Parsed};
use crate::errors::{self, err};
use crate::notify::{GENERIC, STRING};
use crate::table::CommandSpec;
use crate::Ctx;

macro_rules! row {
    ($($row:tt)*) => { crate::table::command_row!("string"; $($row)*) };
}

/// The string family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!("get", 2, ["readonly", "fast"], 1, 1, 1, ["read", "string", "fast"], "1.0.0", "O(1)", "Gives the string stored at a key.", "key", get),
    row!("set", -3, ["write", "denyoom"], 1, 1, 1, ["write", "string", "slow"], "1.0.0", "O(1)", "Stores a string at a key, with optional conditions and expiration.", "key value [condition: NX | XX] [GET] [expiration: EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]", set),
    row!("setnx", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "1.0.0", "O(1)", "Stores a string at a key only if the key is absent.", "key value", setnx),
    row!("setex", 4, ["write", "denyoom"], 1, 1, 1, ["write", "string", "slow"], "2.0.0", "O(1)", "Stores a string at a key with a time to live in seconds.", "key seconds value", setex),
    row!("psetex", 4, ["write", "denyoom"], 1, 1, 1, ["write", "string", "slow"], "2.6.0", "O(1)", "Stores a string at a key with a time to live in milliseconds.", "key milliseconds value", psetex),
    row!("mget", -2, ["readonly", "fast"], 1, -1, 1, ["read", "string", "fast"], "1.0.0", "O(N) where N is the number of keys to retrieve.", "Gives the strings stored at several keys.", "key [key ...]", mget),
    row!("mset", -3, ["write", "denyoom"], 1, -1, 2, ["write", "string", "slow"], "1.0.1", "O(N) where N is the number of keys to set.", "Stores strings at several keys in one step.", "key value [key value ...]", mset),
    row!("msetnx", -3, ["write", "denyoom"], 1, -1, 2, ["write", "string", "slow"], "1.0.1", "O(N) where N is the number of keys to set.", "Stores strings at several keys only if none of them exists.", "key value [key value ...]", msetnx),
    row!("getset", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "1.0.0", "O(1)", "Stores a new string at a key and gives back the previous one.", "key value", getset),
    row!("getdel", 2, ["write", "fast"], 1, 1, 1, ["write", "string", "fast"], "6.2.0", "O(1)", "Gives the string at a key and deletes the key.", "key", getdel),
    row!("getex", -2, ["write", "fast"], 1, 1, 1, ["write", "string", "fast"], "6.2.0", "O(1)", "Gives the string at a key and changes or drops its expiration.", "key [expiration: EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]", getex),
    row!("append", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "2.0.0", "O(1).", "Adds bytes to the end of a string, creating it if needed.", "key value", append),
    row!("strlen", 2, ["readonly", "fast"], 1, 1, 1, ["read", "string", "fast"], "2.2.0", "O(1)", "Gives the byte length of a string.", "key", strlen),
    row!("incr", 2, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "1.0.0", "O(1)", "Adds one to the integer stored at a key.", "key", incr),
    row!("decr", 2, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "1.0.0", "O(1)", "Subtracts one from the integer stored at a key.", "key", decr),
    row!("incrby", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "1.0.0", "O(1)", "Adds an integer to the number stored at a key.", "key increment", incrby),
    row!("decrby", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "1.0.0", "O(1)", "Subtracts an integer from the number stored at a key.", "key decrement", decrby),
    row!("incrbyfloat", 3, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "string", "fast"], "2.6.0", "O(1)", "Adds a floating-point amount to the number stored at a key.", "key increment:double", incrbyfloat),
    row!("getrange", 4, ["readonly"], 1, 1, 1, ["read", "string", "slow"], "2.4.0", "O(N) where N is the length of the returned string.", "Gives a byte range of a string.", "key start end", getrange),
    row!("substr", 4, ["readonly"], 1, 1, 1, ["read", "string", "slow"], "1.0.0", "O(N) where N is the length of the returned string.", "Gives a byte range of a string (older name of GETRANGE).", "key start end", getrange),
    crate::table::command_row!("bitmap"; "getbit", 3, ["readonly", "fast"], 1, 1, 1, ["read", "bitmap", "fast"], "2.2.0", "O(1)", "Gives the bit at an offset of a string.", "key offset", getbit),
    crate::table::command_row!("bitmap"; "setbit", 4, ["write", "denyoom"], 1, 1, 1, ["write", "bitmap", "slow"], "2.2.0", "O(1)", "Sets or clears the bit at an offset of a string, growing it as needed.", "key offset value", setbit),
    row!("setrange", 4, ["write", "denyoom"], 1, 1, 1, ["write", "string", "slow"], "2.2.0", "O(1), not counting the time taken to copy the new string in place.", "Overwrites part of a string starting at a byte offset.", "key offset value", setrange),
    row!("lcs", -3, ["readonly"], 1, 2, 1, ["read", "string", "slow"], "7.0.0", "O(N*M) where N and M are the lengths of s1 and s2, respectively", "Finds the longest common subsequence of two strings.", "key1:key key2:key [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]", lcs),
];

fn get(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.get(&argv[1]) {
        Ok(v) => Frame::bulk_or_null(v),
        Err(e) => errors::from_db(e),
    }
}

/// Which command's option grammar `parse_set_options` follows.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Grammar {
    Set,
    GetEx,
}

/// Options shared by SET and GETEX, as parsed (before the expire value is validated).
#[derive(Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// (unit is seconds, absolute, value)
    expire: Option<(bool, bool, &'a [u8])>,
}

/// Redis's parseExtendedStringArgumentsOrReply: the same conflicts are syntax errors.
fn parse_set_options(argv: &[Bytes], from: usize, grammar: Grammar) -> Parsed<StringOptions<'_>> {
    let mut o = StringOptions::default();
    let mut j = from;
    while j < argv.len() {
        let a = &argv[j][..];
        let next = argv.get(j + 1).map(|b| &b[..]);
        let has_expire = o.expire.is_some();
        let expire_kind = o.expire.map(|(s, abs, _)| (s, abs));
        if is(a, "nx") && !o.xx && grammar == Grammar::Set {
            o.nx = true;
        } else if is(a, "xx") && !o.nx && grammar == Grammar::Set {
            o.xx = true;
        } else if is(a, "get") && grammar == Grammar::Set {
            o.get = true;
        } else if is(a, "keepttl") && !o.persist && !has_expire && grammar == Grammar::Set {
            o.keepttl = true;
        } else if is(a, "persist") && grammar == Grammar::GetEx && !has_expire && !o.keepttl {
            o.persist = true;
        } else if let (Some(kind), Some(v)) = (expire_word(a), next) {
            // The same expire option may repeat (last wins); a different one conflicts.
            if o.keepttl || o.persist || expire_kind.is_some_and(|k| k != kind) {
                return Err(err(errors::SYNTAX));
            }
            o.expire = Some((kind.0, kind.1, v));
            j += 1;
        } else {
            return Err(err(errors::SYNTAX));
        }
        j += 1;
    }
    Ok(o)
}

/// EX → (seconds, relative), PX → (ms, relative), EXAT → (seconds, absolute), PXAT → (ms, absolute).
fn expire_word(a: &[u8]) -> Option<(bool, bool)> {
    if is(a, "ex") {
        Some((true, false))
    } else if is(a, "px") {
        Some((false, false))
    } else if is(a, "exat") {
        Some((true, true))
    } else if is(a, "pxat") {
        Some((false, true))
    } else {
        None
    }
}

/// Redis's getExpireMillisecondsOrReply: an integer > 0 that converts to an absolute time in ms
/// without overflow.
fn expire_ms(value: &[u8], seconds: bool, absolute: bool, cmd: &str) -> Parsed<u64> {
    let n = args::int(value)?;
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(errors::invalid_expire(cmd));
    }
    let mut ms = if seconds { n * 1000 } else { n };
    if !absolute {
        ms = ms
            .checked_add(strata::now_ms() as i64)
            .ok_or_else(|| errors::invalid_expire(cmd))?;
    }
    if ms <= 0 {
        return Err(errors::invalid_expire(cmd));
    }
    Ok(ms as u64)
}

fn set(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let o = parse_set_options(argv, 3, Grammar::Set)?;
        let expiry = match o.expire {
            Some((s, abs, v)) => Expiry::At(expire_ms(v, s, abs, "set")?),
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
        let out = db(ctx.session.db.set(
            &argv[1],
            &argv[2],
            SetOptions {
                condition,
                expiry,
                get: o.get,
            },
        ))?;
        if out.written {
            ctx.notify(STRING, "set", &argv[1]);
            if matches!(expiry, Expiry::At(_)) {
                ctx.notify(GENERIC, "expire", &argv[1]);
            }
        }
        Ok(if o.get {
            Frame::bulk_or_null(out.old)
        } else if out.written {
            Frame::ok()
        } else {
            Frame::Null
        })
    })())
}

fn setnx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let opts = SetOptions {
        condition: SetCondition::IfAbsent,
        ..Default::default()
    };
    match ctx.session.db.set(&argv[1], &argv[2], opts) {
        Ok(o) => {
            if o.written {
                ctx.notify(STRING, "set", &argv[1]);
            }
            Frame::Integer(o.written as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn set_with_ttl(ctx: &mut Ctx<'_>, argv: &[Bytes], seconds: bool, cmd: &str) -> Frame {
    reply((|| {
        let at = expire_ms(&argv[2], seconds, false, cmd)?;
        let opts = SetOptions {
            expiry: Expiry::At(at),
            ..Default::default()
        };
        db(ctx.session.db.set(&argv[1], &argv[3], opts))?;
        ctx.notify(STRING, "set", &argv[1]);
        ctx.notify(GENERIC, "expire", &argv[1]);
        Ok(Frame::ok())
    })())
}

fn setex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    set_with_ttl(ctx, argv, true, "setex")
}

fn psetex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    set_with_ttl(ctx, argv, false, "psetex")
}

fn mget(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.mget(&args::slices(&argv[1..])) {
        Ok(values) => Frame::Array(values.into_iter().map(Frame::bulk_or_null).collect()),
        Err(e) => errors::from_db(e),
    }
}

fn pairs(argv: &[Bytes]) -> Vec<(&[u8], &[u8])> {
    argv[1..]
        .chunks_exact(2)
        .map(|c| (&c[0][..], &c[1][..]))
        .collect()
}

fn mset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len().is_multiple_of(2) {
        return errors::wrong_arity("mset");
    }
    match ctx.session.db.mset(&pairs(argv)) {
        Ok(()) => {
            for (k, _) in pairs(argv) {
                ctx.notify(STRING, "set", k);
            }
            Frame::ok()
        }
        Err(e) => errors::from_db(e),
    }
}

fn msetnx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len().is_multiple_of(2) {
        return errors::wrong_arity("msetnx");
    }
    match ctx.session.db.msetnx(&pairs(argv)) {
        Ok(done) => {
            if done {
                for (k, _) in pairs(argv) {
                    ctx.notify(STRING, "set", k);
                }
            }
            Frame::Integer(done as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn getset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let opts = SetOptions {
        get: true,
        ..Default::default()
    };
    match ctx.session.db.set(&argv[1], &argv[2], opts) {
        Ok(o) => {
            ctx.notify(STRING, "set", &argv[1]);
            Frame::bulk_or_null(o.old)
        }
        Err(e) => errors::from_db(e),
    }
}

fn getdel(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.getdel(&argv[1]) {
        Ok(v) => {
            if v.is_some() {
                ctx.notify(GENERIC, "del", &argv[1]);
            }
            Frame::bulk_or_null(v)
        }
        Err(e) => errors::from_db(e),
    }
}

fn getex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let o = parse_set_options(argv, 2, Grammar::GetEx)?;
        let change = match o.expire {
            Some((s, abs, v)) => GetExpiry::At(expire_ms(v, s, abs, "getex")?),
            None if o.persist => GetExpiry::Persist,
            None => GetExpiry::Unchanged,
        };
        // PERSIST raises an event only when there was a TTL to remove.
        let had_ttl = matches!(change, GetExpiry::Persist)
            && ctx.notifies(GENERIC)
            && matches!(ctx.session.db.ttl(&argv[1]), Ok(strata::Ttl::ExpiresAt(_)));
        let v = db(ctx.session.db.getex(&argv[1], change))?;
        if v.is_some() {
            match change {
                GetExpiry::At(ms) if ms <= strata::now_ms() && o.expire.is_some_and(|e| e.1) => {
                    ctx.notify(GENERIC, "del", &argv[1])
                }
                GetExpiry::At(_) => ctx.notify(GENERIC, "expire", &argv[1]),
                GetExpiry::Persist if had_ttl => ctx.notify(GENERIC, "persist", &argv[1]),
                _ => {}
            }
        }
        Ok(Frame::bulk_or_null(v))
    })())
}

fn append(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.append(&argv[1], &argv[2]) {
        Ok(n) => {
            ctx.notify(STRING, "append", &argv[1]);
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn strlen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.strlen(&argv[1]) {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

fn incr_reply(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> Frame {
    match ctx.session.db.incr_by(key, delta) {
        Ok(n) => {
            ctx.notify(STRING, "incrby", key);
            Frame::Integer(n)
        }
        Err(e) => errors::from_db(e),
    }
}

fn incr(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    incr_reply(ctx, &argv[1], 1)
}

fn decr(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    incr_reply(ctx, &argv[1], -1)
}

fn incrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match args::int(&argv[2]) {
        Ok(d) => incr_reply(ctx, &argv[1], d),
        Err(e) => e,
    }
}

fn decrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match args::int(&argv[2]) {
        Ok(i64::MIN) => err(errors::DECREMENT_OVERFLOW),
        Ok(d) => incr_reply(ctx, &argv[1], -d),
        Err(e) => e,
    }
}

fn incrbyfloat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let delta = args::float(&argv[2])?;
        let v = db(ctx.session.db.incr_by_float(&argv[1], delta))?;
        ctx.notify(STRING, "incrbyfloat", &argv[1]);
        Ok(Frame::bulk(v))
    })())
}

fn getrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let start = args::int(&argv[2])?;
        let end = args::int(&argv[3])?;
        Ok(Frame::bulk(db(ctx
            .session
            .db
            .getrange(&argv[1], start, end))?))
    })())
}

fn setrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let offset = args::int(&argv[2])?;
        if offset < 0 {
            return Err(err(errors::OFFSET_OUT_OF_RANGE));
        }
        let n = db(ctx.session.db.setrange(&argv[1], offset as u64, &argv[3]))?;
        if !argv[3].is_empty() {
            ctx.notify(STRING, "setrange", &argv[1]);
        }
        Ok(Frame::Integer(n as i64))
    })())
}

/// A GETBIT/SETBIT offset: a non-negative integer addressing a bit within proto-max-bulk-len.
fn bit_offset(ctx: &Ctx<'_>, a: &[u8]) -> Parsed<u64> {
    match strata::num::parse_i64(a) {
        Some(n) if ctx.session.db.bit_offset_in_range(n) => Ok(n as u64),
        _ => Err(err(errors::BIT_OFFSET)),
    }
}

fn getbit(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let offset = bit_offset(ctx, &argv[2])?;
        Ok(Frame::Integer(
            db(ctx.session.db.getbit(&argv[1], offset))? as i64
        ))
    })())
}

fn setbit(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let offset = bit_offset(ctx, &argv[2])?;
        let on = match strata::num::parse_i64(&argv[3]) {
            Some(0) => false,
            Some(1) => true,
            _ => return Err(err(errors::BIT_VALUE)),
        };
        let (old, changed) = db(ctx.session.db.setbit(&argv[1], offset, on))?;
        if changed {
            ctx.notify(STRING, "setbit", &argv[1]);
        } else {
            ctx.session.unchanged.push(argv[1].clone());
        }
        Ok(Frame::Integer(old as i64))
    })())
}

/// Largest transient LCS table (bytes) we agree to build.
const LCS_TABLE_LIMIT: u64 = 512 << 20;

fn lcs(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (mut len, mut idx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
        let mut j = 3;
        while j < argv.len() {
            let a = &argv[j][..];
            if is(a, "idx") {
                idx = true;
            } else if is(a, "len") {
                len = true;
            } else if is(a, "withmatchlen") {
                withmatchlen = true;
            } else if is(a, "minmatchlen") && j + 1 < argv.len() {
                minmatchlen = args::int(&argv[j + 1])?.max(0);
                j += 1;
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 1;
        }
        let fetch = |k: &[u8]| match ctx.session.db.get(k) {
            Ok(v) => Ok(v.unwrap_or_default()),
            Err(strata::Error::WrongType) => Err(err(errors::LCS_NOT_STRINGS)),
            Err(e) => Err(errors::from_db(e)),
        };
        let a = fetch(&argv[1])?;
        let b = fetch(&argv[2])?;
        if len && idx {
            return Err(err(errors::LCS_LEN_AND_IDX));
        }
        let r = strata::lcs(&a, &b, minmatchlen as u64, LCS_TABLE_LIMIT)
            .map_err(|_| err(errors::LCS_TOO_BIG))?;
        if idx {
            let matches = r
                .matches
                .iter()
                .map(|&((a0, a1), (b0, b1), l)| {
                    let mut m = vec![
                        Frame::Array(vec![Frame::Integer(a0 as i64), Frame::Integer(a1 as i64)]),
                        Frame::Array(vec![Frame::Integer(b0 as i64), Frame::Integer(b1 as i64)]),
                    ];
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
        } else if len {
            Ok(Frame::Integer(r.sequence.len() as i64))
        } else {
            Ok(Frame::bulk(r.sequence))
        }
    })())
}
