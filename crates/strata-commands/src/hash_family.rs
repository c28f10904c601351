//! Hash commands: HSET, HGET, HGETALL, HINCRBY, HRANDFIELD, HSCAN and the rest. Each row of
//! `COMMANDS` names its handler below; handlers parse, call `strata::Db`, and reply.

use bytes::Bytes;
use strata_resp::{Frame, Protocol};

use crate::args::{self, db, is, reply, Parsed};
use crate::errors::{self, err};
use crate::notify::HASH;
use crate::table::CommandSpec;
use crate::Ctx;

macro_rules! row {
    ($($row:tt)*) => { crate::table::command_row!("hash"; $($row)*) };
}

/// The hash family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!("hset", -4, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "hash", "fast"], "2.0.0", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.", "Stores one or more field-value pairs in a hash.", "key field value [field value ...]", hset),
    row!("hsetnx", 4, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "hash", "fast"], "2.0.0", "O(1)", "Stores a field in a hash unless that field is already present.", "key field value", hsetnx),
    row!("hget", 3, ["readonly", "fast"], 1, 1, 1, ["read", "hash", "fast"], "2.0.0", "O(1)", "Gives the value of one hash field.", "key field", hget),
    row!("hmget", -3, ["readonly", "fast"], 1, 1, 1, ["read", "hash", "fast"], "2.0.0", "O(N) where N is the number of fields being requested.", "Gives the values of several hash fields.", "key field [field ...]", hmget),
    row!("hmset", -4, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "hash", "fast"], "2.0.0", "O(N) where N is the number of fields being set.", "Stores several field-value pairs in a hash (superseded by HSET).", "key field value [field value ...]", hmset),
    row!("hdel", -3, ["write", "fast"], 1, 1, 1, ["write", "hash", "fast"], "2.0.0", "O(N) where N is the number of fields to be removed.", "Deletes fields from a hash.", "key field [field ...]", hdel),
    row!("hlen", 2, ["readonly", "fast"], 1, 1, 1, ["read", "hash", "fast"], "2.0.0", "O(1)", "Counts the fields of a hash.", "key", hlen),
    row!("hstrlen", 3, ["readonly", "fast"], 1, 1, 1, ["read", "hash", "fast"], "3.2.0", "O(1)", "Gives the byte length of a hash field's value.", "key field", hstrlen),
    row!("hexists", 3, ["readonly", "fast"], 1, 1, 1, ["read", "hash", "fast"], "2.0.0", "O(1)", "Tells whether a hash has a given field.", "key field", hexists),
    row!("hkeys", 2, ["readonly"], 1, 1, 1, ["read", "hash", "slow"], "2.0.0", "O(N) where N is the size of the hash.", "Lists the field names of a hash.", "key", hkeys),
    row!("hvals", 2, ["readonly"], 1, 1, 1, ["read", "hash", "slow"], "2.0.0", "O(N) where N is the size of the hash.", "Lists the values of a hash.", "key", hvals),
    row!("hgetall", 2, ["readonly"], 1, 1, 1, ["read", "hash", "slow"], "2.0.0", "O(N) where N is the size of the hash.", "Gives every field and value of a hash.", "key", hgetall),
    row!("hincrby", 4, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "hash", "fast"], "2.0.0", "O(1)", "Adds an integer to the number held in a hash field.", "key field increment", hincrby),
    row!("hincrbyfloat", 4, ["write", "denyoom", "fast"], 1, 1, 1, ["write", "hash", "fast"], "2.6.0", "O(1)", "Adds a floating-point amount to the number held in a hash field.", "key field increment:double", hincrbyfloat),
    row!("hrandfield", -2, ["readonly"], 1, 1, 1, ["read", "hash", "slow"], "6.2.0", "O(N) where N is the number of fields returned", "Picks one or more fields of a hash at random.", "key [options: count [WITHVALUES]]", hrandfield),
    row!("hscan", -3, ["readonly"], 1, 1, 1, ["read", "hash", "slow"], "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..", "Walks the fields of a hash a batch at a time with a cursor.", "key cursor [MATCH pattern] [COUNT count]", hscan),
];

/// `(field, value)` pairs of argv[2..]; None when a value is missing.
fn field_pairs(argv: &[Bytes]) -> Option<Vec<(&[u8], &[u8])>> {
    let rest = &argv[2..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return None;
    }
    Some(
        rest.chunks_exact(2)
            .map(|c| (&c[0][..], &c[1][..]))
            .collect(),
    )
}

fn hset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let Some(pairs) = field_pairs(argv) else {
        return errors::wrong_arity("hset");
    };
    match ctx.session.db.hset(&argv[1], &pairs) {
        Ok(n) => {
            ctx.notify(HASH, "hset", &argv[1]);
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn hmset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let Some(pairs) = field_pairs(argv) else {
        return errors::wrong_arity("hmset");
    };
    match ctx.session.db.hset(&argv[1], &pairs) {
        Ok(_) => {
            ctx.notify(HASH, "hset", &argv[1]);
            Frame::ok()
        }
        Err(e) => errors::from_db(e),
    }
}

fn hsetnx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.hsetnx(&argv[1], &argv[2], &argv[3]) {
        Ok(done) => {
            if done {
                ctx.notify(HASH, "hset", &argv[1]);
            }
            Frame::Integer(done as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn hget(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.hget(&argv[1], &argv[2]) {
        Ok(v) => Frame::bulk_or_null(v),
        Err(e) => errors::from_db(e),
    }
}

fn hmget(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.hmget(&argv[1], &args::slices(&argv[2..])) {
        Ok(values) => Frame::Array(values.into_iter().map(Frame::bulk_or_null).collect()),
        Err(e) => errors::from_db(e),
    }
}

fn hdel(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.hdel(&argv[1], &args::slices(&argv[2..])) {
        Ok(n) => {
            if n > 0 {
                ctx.notify(HASH, "hdel", &argv[1]);
                crate::notify::del_if_gone(ctx, &argv[1]);
            }
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn hlen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.hlen(&argv[1]) {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

fn hstrlen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.hstrlen(&argv[1], &argv[2]) {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

fn hexists(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.hexists(&argv[1], &argv[2]) {
        Ok(b) => Frame::Integer(b as i64),
        Err(e) => errors::from_db(e),
    }
}

fn hkeys(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let mut out = Vec::new();
    match ctx
        .session
        .db
        .hash_each(&argv[1], |f, _| out.push(Frame::bulk_from_slice(f)))
    {
        Ok(()) => Frame::Array(out),
        Err(e) => errors::from_db(e),
    }
}

fn hvals(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let mut out = Vec::new();
    match ctx
        .session
        .db
        .hash_each(&argv[1], |_, v| out.push(Frame::bulk_from_slice(v)))
    {
        Ok(()) => Frame::Array(out),
        Err(e) => errors::from_db(e),
    }
}

fn hgetall(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let mut out = Vec::new();
    match ctx.session.db.hash_each(&argv[1], |f, v| {
        out.push((Frame::bulk_from_slice(f), Frame::bulk_from_slice(v)))
    }) {
        Ok(()) => Frame::Map(out),
        Err(e) => errors::from_db(e),
    }
}

/// Maps a data-model error of HINCRBY/HINCRBYFLOAT: the arguments were parsed already, so a
/// NotInteger/NotFloat is about the stored value.
fn hincr_error(e: strata::Error) -> Frame {
    match e {
        strata::Error::NotInteger => err(errors::HASH_NOT_INTEGER),
        strata::Error::NotFloat => err(errors::HASH_NOT_FLOAT),
        other => errors::from_db(other),
    }
}

fn hincrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let delta = args::int(&argv[3])?;
        let n = ctx
            .session
            .db
            .hincr_by(&argv[1], &argv[2], delta)
            .map_err(hincr_error)?;
        ctx.notify(HASH, "hincrby", &argv[1]);
        Ok(Frame::Integer(n))
    })())
}

fn hincrbyfloat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let delta = args::float(&argv[3])?;
        if delta.is_infinite() {
            return Err(err(errors::VALUE_NAN_OR_INF));
        }
        let v = ctx
            .session
            .db
            .hincr_by_float(&argv[1], &argv[2], delta)
            .map_err(hincr_error)?;
        ctx.notify(HASH, "hincrbyfloat", &argv[1]);
        Ok(Frame::bulk(v))
    })())
}

/// A random-count argument of HRANDFIELD/SRANDMEMBER: any integer but i64::MIN (Redis reads it
/// with the range -LONG_MAX..LONG_MAX).
pub(crate) fn random_count(a: &[u8]) -> Parsed<i64> {
    match args::int(a)? {
        i64::MIN => Err(errors::value_out_of_range_between(-i64::MAX, i64::MAX)),
        n => Ok(n),
    }
}

fn hrandfield(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        if argv.len() == 2 {
            return Ok(Frame::bulk_or_null(db(ctx
                .session
                .db
                .hrandfield(&argv[1]))?));
        }
        let count = random_count(&argv[2])?;
        let withvalues = match argv.len() {
            3 => false,
            4 if is(&argv[3], "withvalues") => true,
            _ => return Err(err(errors::SYNTAX)),
        };
        if withvalues && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
            return Err(err(errors::VALUE_OUT_OF_RANGE));
        }
        let pairs = db(ctx.session.db.hrandfield_count(&argv[1], count))?;
        Ok(if !withvalues {
            Frame::Array(pairs.into_iter().map(|(f, _)| Frame::bulk(f)).collect())
        } else if ctx.session.protocol == Protocol::Resp3 {
            Frame::Array(
                pairs
                    .into_iter()
                    .map(|(f, v)| Frame::Array(vec![Frame::bulk(f), Frame::bulk(v)]))
                    .collect(),
            )
        } else {
            let mut out = Vec::with_capacity(pairs.len() * 2);
            for (f, v) in pairs {
                out.push(Frame::bulk(f));
                out.push(Frame::bulk(v));
            }
            Frame::Array(out)
        })
    })())
}

/// MATCH and COUNT of HSCAN/SSCAN (argv from index 3).
pub(crate) fn scan_options(argv: &[Bytes]) -> Parsed<(Option<&[u8]>, usize)> {
    let o = args::scan_options(argv, 3, false)?;
    Ok((o.pattern, o.count))
}

/// The reply of a collection scan: `[cursor, [items...]]`.
pub(crate) fn scan_reply(cursor: u64, items: Vec<Frame>) -> Frame {
    Frame::Array(vec![Frame::bulk(cursor.to_string()), Frame::Array(items)])
}

fn hscan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let cursor = crate::zset_family::scan_cursor(&argv[2])?;
        // A missing key answers an empty scan before the options are read (as Redis does).
        if db(ctx.session.db.hlen(&argv[1]))? == 0 {
            return Ok(scan_reply(0, Vec::new()));
        }
        let (pattern, count) = scan_options(argv)?;
        let page = db(ctx.session.db.hscan(&argv[1], cursor, pattern, count))?;
        let mut items = Vec::with_capacity(page.pairs.len() * 2);
        for (f, v) in page.pairs {
            items.push(Frame::bulk(f));
            items.push(Frame::bulk(v));
        }
        Ok(scan_reply(page.cursor, items))
    })())
}
