//! Set commands: SADD, SMEMBERS, SPOP, SMOVE, the SINTER/SUNION/SDIFF algebra and SSCAN. Each
//! row of `COMMANDS` names its handler below; handlers parse, call `strata::Db`, and reply.

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::{self, db, is, reply, Parsed};
use crate::errors::{self, err};
use crate::hash_family::{random_count, scan_options, scan_reply};
use crate::notify;
use crate::table::CommandSpec;
use crate::Ctx;

macro_rules! row {
    ($($row:tt)*) => { crate::table::command_row!("set"; $($row)*) };
}

/// The set family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!("sadd", -3, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "set", "fast"], "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", "Puts members into a set, creating it if needed.", "key member [member ...]", sadd),
    row!("srem", -3, ["write", "fast"], 1, 1, 1, ["write", "set", "fast"], "1.0.0", "O(N) where N is the number of members to be removed.", "Takes members out of a set.", "key member [member ...]", srem),
    row!("sismember", 3, ["readonly", "fast"], 1, 1, 1, ["read", "set", "fast"], "1.0.0", "O(1)", "Tells whether a value belongs to a set.", "key member", sismember),
    row!("smismember", -3, ["readonly", "fast"], 1, 1, 1, ["read", "set", "fast"], "6.2.0", "O(N) where N is the number of elements being checked for membership", "Tells, for each of several values, whether it belongs to a set.", "key member [member ...]", smismember),
    row!("scard", 2, ["readonly", "fast"], 1, 1, 1, ["read", "set", "fast"], "1.0.0", "O(1)", "Counts the members of a set.", "key", scard),
    row!("smembers", 2, ["readonly"], 1, 1, 1, ["read", "set", "slow"], "1.0.0", "O(N) where N is the set cardinality.", "Gives every member of a set.", "key", smembers),
    row!("srandmember", -2, ["readonly"], 1, 1, 1, ["read", "set", "slow"], "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.", "Picks one or more members of a set at random, leaving them in place.", "key [count]", srandmember),
    row!("spop", -2, ["write", "fast"], 1, 1, 1, ["write", "set", "fast"], "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.", "Removes and gives back random members of a set.", "key [count]", spop),
    row!("smove", 4, ["write", "fast"], 1, 2, 1, ["write", "set", "fast"], "1.0.0", "O(1)", "Transfers a member from one set to another.", "source destination member", smove),
    row!("sinter", -2, ["readonly"], 1, -1, 1, ["read", "set", "slow"], "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Gives the members common to all the given sets.", "key [key ...]", sinter),
    row!("sintercard", -3, ["readonly", "movablekeys"], 0, 0, 0, ["read", "set", "slow"], "7.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Counts the members common to all the given sets.", "numkeys key [key ...] [LIMIT limit:integer]", sintercard, numkeys_at = 1),
    row!("sinterstore", -3, ["write", "denyoom"], 1, -1, 1, ["write", "set", "slow"], "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Saves the intersection of sets under a destination key.", "destination key [key ...]", sinterstore),
    row!("sunion", -2, ["readonly"], 1, -1, 1, ["read", "set", "slow"], "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Gives the members found in any of the given sets.", "key [key ...]", sunion),
    row!("sunionstore", -3, ["write", "denyoom"], 1, -1, 1, ["write", "set", "slow"], "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Saves the union of sets under a destination key.", "destination key [key ...]", sunionstore),
    row!("sdiff", -2, ["readonly"], 1, -1, 1, ["read", "set", "slow"], "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Gives the members of the first set that no other given set has.", "key [key ...]", sdiff),
    row!("sdiffstore", -3, ["write", "denyoom"], 1, -1, 1, ["write", "set", "slow"], "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Saves the difference of sets under a destination key.", "destination key [key ...]", sdiffstore),
    row!("sscan", -3, ["readonly"], 1, 1, 1, ["read", "set", "slow"], "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..", "Walks the members of a set a batch at a time with a cursor.", "key cursor [MATCH pattern] [COUNT count]", sscan),
];

fn members_set(members: Vec<Vec<u8>>) -> Frame {
    Frame::Set(members.into_iter().map(Frame::bulk).collect())
}

fn members_array(members: Vec<Vec<u8>>) -> Frame {
    Frame::Array(members.into_iter().map(Frame::bulk).collect())
}

fn sadd(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.sadd(&argv[1], &args::slices(&argv[2..])) {
        Ok(n) => {
            if n > 0 {
                ctx.notify(notify::SET, "sadd", &argv[1]);
            }
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn srem(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.srem(&argv[1], &args::slices(&argv[2..])) {
        Ok(n) => {
            if n > 0 {
                ctx.notify(notify::SET, "srem", &argv[1]);
                notify::del_if_gone(ctx, &argv[1]);
            }
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn sismember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.sismember(&argv[1], &argv[2]) {
        Ok(b) => Frame::Integer(b as i64),
        Err(e) => errors::from_db(e),
    }
}

fn smismember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx
        .session
        .db
        .smismember(&argv[1], &args::slices(&argv[2..]))
    {
        Ok(v) => Frame::Array(v.into_iter().map(|b| Frame::Integer(b as i64)).collect()),
        Err(e) => errors::from_db(e),
    }
}

fn scard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.scard(&argv[1]) {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

fn smembers(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.smembers(&argv[1]) {
        Ok(m) => members_set(m),
        Err(e) => errors::from_db(e),
    }
}

fn srandmember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| match argv.len() {
        2 => Ok(Frame::bulk_or_null(db(ctx
            .session
            .db
            .srandmember(&argv[1]))?)),
        3 => {
            let count = random_count(&argv[2])?;
            Ok(members_array(db(ctx
                .session
                .db
                .srandmember_count(&argv[1], count))?))
        }
        _ => Err(err(errors::SYNTAX)),
    })())
}

fn spop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| match argv.len() {
        2 => {
            let v = db(ctx.session.db.spop(&argv[1]))?;
            if v.is_some() {
                ctx.notify(notify::SET, "spop", &argv[1]);
                notify::del_if_gone(ctx, &argv[1]);
            }
            Ok(Frame::bulk_or_null(v))
        }
        3 => {
            let count = match strata::num::parse_i64(&argv[2]) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(err(errors::OUT_OF_RANGE_MUST_BE_POSITIVE)),
            };
            let popped = db(ctx.session.db.spop_count(&argv[1], count))?;
            if !popped.is_empty() {
                ctx.notify(notify::SET, "spop", &argv[1]);
                notify::del_if_gone(ctx, &argv[1]);
            }
            Ok(members_set(popped))
        }
        _ => Err(err(errors::SYNTAX)),
    })())
}

fn smove(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let already =
        argv[1] != argv[2] && matches!(ctx.session.db.sismember(&argv[2], &argv[3]), Ok(true));
    match ctx.session.db.smove(&argv[1], &argv[2], &argv[3]) {
        Ok(b) => {
            // Only the keys SMOVE changed count as written for WATCH.
            if !b || argv[1] == argv[2] {
                ctx.session
                    .unchanged
                    .extend([argv[1].clone(), argv[2].clone()]);
            } else if already {
                ctx.session.unchanged.push(argv[2].clone());
            }
            if b && argv[1] != argv[2] {
                ctx.notify(notify::SET, "srem", &argv[1]);
                notify::del_if_gone(ctx, &argv[1]);
                if !already {
                    ctx.notify(notify::SET, "sadd", &argv[2]);
                }
            }
            Frame::Integer(b as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn sinter(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.sinter(&args::slices(&argv[1..])) {
        Ok(m) => members_set(m),
        Err(e) => errors::from_db(e),
    }
}

fn sunion(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.sunion(&args::slices(&argv[1..])) {
        Ok(m) => members_set(m),
        Err(e) => errors::from_db(e),
    }
}

fn sdiff(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.sdiff(&args::slices(&argv[1..])) {
        Ok(m) => members_set(m),
        Err(e) => errors::from_db(e),
    }
}

fn sinterstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let existed = notify::existed(ctx, notify::GENERIC, &argv[1]);
    match ctx
        .session
        .db
        .sinterstore(&argv[1], &args::slices(&argv[2..]))
    {
        Ok(n) => {
            notify::stored(ctx, notify::SET, "sinterstore", &argv[1], n, existed);
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn sunionstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let existed = notify::existed(ctx, notify::GENERIC, &argv[1]);
    match ctx
        .session
        .db
        .sunionstore(&argv[1], &args::slices(&argv[2..]))
    {
        Ok(n) => {
            notify::stored(ctx, notify::SET, "sunionstore", &argv[1], n, existed);
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn sdiffstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let existed = notify::existed(ctx, notify::GENERIC, &argv[1]);
    match ctx
        .session
        .db
        .sdiffstore(&argv[1], &args::slices(&argv[2..]))
    {
        Ok(n) => {
            notify::stored(ctx, notify::SET, "sdiffstore", &argv[1], n, existed);
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit], parsed as Redis's sinterCardCommand does.
fn sintercard_args(argv: &[Bytes]) -> Parsed<(Vec<&[u8]>, u64)> {
    let numkeys = match strata::num::parse_i64(&argv[1]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(err(errors::NUMKEYS_NOT_POSITIVE)),
    };
    if numkeys > (argv.len() - 2) as u64 {
        return Err(err(errors::NUMKEYS_GREATER_THAN_ARGS));
    }
    let first_option = 2 + numkeys as usize;
    let mut limit = 0u64;
    let mut j = first_option;
    while j < argv.len() {
        if is(&argv[j], "limit") && j + 1 < argv.len() {
            limit = match strata::num::parse_i64(&argv[j + 1]) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(err(errors::LIMIT_NEGATIVE)),
            };
            j += 2;
        } else {
            return Err(err(errors::SYNTAX));
        }
    }
    Ok((args::slices(&argv[2..first_option]), limit))
}

fn sintercard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (keys, limit) = sintercard_args(argv)?;
        Ok(Frame::Integer(
            db(ctx.session.db.sintercard(&keys, limit))? as i64
        ))
    })())
}

fn sscan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let cursor = crate::zset_family::scan_cursor(&argv[2])?;
        // A missing key answers an empty scan before the options are read (as Redis does).
        if db(ctx.session.db.scard(&argv[1]))? == 0 {
            return Ok(scan_reply(0, Vec::new()));
        }
        let (pattern, count) = scan_options(argv)?;
        let page = db(ctx.session.db.sscan(&argv[1], cursor, pattern, count))?;
        Ok(scan_reply(
            page.cursor,
            page.members.into_iter().map(Frame::bulk).collect(),
        ))
    })())
}
