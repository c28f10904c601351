//! Hash commands: HSET, HGET, HGETALL, HINCRBY, HRANDFIELD, HSCAN and the rest. Each row of
//! `COMMANDS` names its handler below; handlers read their arguments with the cursor ([`Args`]),
//! call `strata::Db`, and reply, `?` carrying errors.

use bytes::Bytes;
use strata_resp::{Frame, Protocol};

use crate::command::*;
use crate::cursor::{Args, Failure, Reply};
use crate::errors;
use crate::notify::HASH;
use crate::scan;
use crate::Ctx;

/// The hash family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "hset",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hset),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
            summary: "Stores one or more field-value pairs in a hash.",
            syntax: "key field value [field value ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hsetnx",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hsetnx),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(1)",
            summary: "Stores a field in a hash unless that field is already present.",
            syntax: "key field value",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hget",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hget),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(1)",
            summary: "Gives the value of one hash field.",
            syntax: "key field",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hmget",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hmget),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(N) where N is the number of fields being requested.",
            summary: "Gives the values of several hash fields.",
            syntax: "key field [field ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hmset",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hmset),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(N) where N is the number of fields being set.",
            summary: "Stores several field-value pairs in a hash (superseded by HSET).",
            syntax: "key field value [field value ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hdel",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hdel),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(N) where N is the number of fields to be removed.",
            summary: "Deletes fields from a hash.",
            syntax: "key field [field ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hlen",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hlen),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(1)",
            summary: "Counts the fields of a hash.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hstrlen",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hstrlen),
        docs: Docs {
            group: "hash",
            since: "3.2.0",
            complexity: "O(1)",
            summary: "Gives the byte length of a hash field's value.",
            syntax: "key field",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hexists",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hexists),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(1)",
            summary: "Tells whether a hash has a given field.",
            syntax: "key field",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hkeys",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hkeys),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(N) where N is the size of the hash.",
            summary: "Lists the field names of a hash.",
            syntax: "key",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "hvals",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hvals),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(N) where N is the size of the hash.",
            summary: "Lists the values of a hash.",
            syntax: "key",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "hgetall",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hgetall),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(N) where N is the size of the hash.",
            summary: "Gives every field and value of a hash.",
            syntax: "key",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "hincrby",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hincrby),
        docs: Docs {
            group: "hash",
            since: "2.0.0",
            complexity: "O(1)",
            summary: "Adds an integer to the number held in a hash field.",
            syntax: "key field increment",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hincrbyfloat",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hincrbyfloat),
        docs: Docs {
            group: "hash",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Adds a floating-point amount to the number held in a hash field.",
            syntax: "key field increment:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "hrandfield",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hrandfield),
        docs: Docs {
            group: "hash",
            since: "6.2.0",
            complexity: "O(N) where N is the number of fields returned",
            summary: "Picks one or more fields of a hash at random.",
            syntax: "key [options: count [WITHVALUES]]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "hscan",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::HASH),
        handler: Handler::Reply(hscan),
        docs: Docs {
            group: "hash",
            since: "2.8.0",
            complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
            summary: "Walks the fields of a hash a batch at a time with a cursor.",
            syntax: "key cursor [MATCH pattern] [COUNT count]",
            tips: &["nondeterministic_output"],
        },
    },
];

/// Field-value pairs.
type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The `(field, value)` pairs after the key: a wrong arity error for `cmd` when there are none
/// or a value is missing.
fn field_pairs<'a>(a: &mut Args<'a>, cmd: &str) -> Result<Pairs<'a>, Failure> {
    let rest = a.rest();
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(Failure(errors::wrong_arity(cmd)));
    }
    Ok(rest
        .chunks_exact(2)
        .map(|c| (&c[0][..], &c[1][..]))
        .collect())
}

/// The remaining arguments as byte slices (fields).
fn fields<'a>(a: &mut Args<'a>) -> Vec<&'a [u8]> {
    a.rest().iter().map(|f| &f[..]).collect()
}

fn hset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let pairs = field_pairs(&mut a, "hset")?;
    let n = ctx.session.db.hset(key, &pairs)?;
    ctx.notify(HASH, "hset", key);
    Ok(Frame::Integer(n as i64))
}

fn hmset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let pairs = field_pairs(&mut a, "hmset")?;
    ctx.session.db.hset(key, &pairs)?;
    ctx.notify(HASH, "hset", key);
    Ok(Frame::ok())
}

fn hsetnx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, field, value) = (a.key()?, a.value()?, a.value()?);
    let done = ctx.session.db.hsetnx(key, field, value)?;
    if done {
        ctx.notify(HASH, "hset", key);
    }
    Ok(Frame::Integer(done as i64))
}

fn hget(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, field) = (a.key()?, a.value()?);
    Ok(Frame::bulk_or_null(ctx.session.db.hget(key, field)?))
}

fn hmget(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let values = ctx.session.db.hmget(key, &fields(&mut a))?;
    Ok(Frame::Array(
        values.into_iter().map(Frame::bulk_or_null).collect(),
    ))
}

fn hdel(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let n = ctx.session.db.hdel(key, &fields(&mut a))?;
    if n > 0 {
        ctx.notify(HASH, "hdel", key);
        crate::notify::del_if_gone(ctx, key);
    }
    Ok(Frame::Integer(n as i64))
}

fn hlen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::Integer(ctx.session.db.hlen(key)? as i64))
}

fn hstrlen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, field) = (a.key()?, a.value()?);
    Ok(Frame::Integer(ctx.session.db.hstrlen(key, field)? as i64))
}

fn hexists(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, field) = (a.key()?, a.value()?);
    Ok(Frame::Integer(ctx.session.db.hexists(key, field)? as i64))
}

fn hkeys(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    let mut out = Vec::new();
    ctx.session
        .db
        .hash_each(key, |f, _| out.push(Frame::bulk_from_slice(f)))?;
    Ok(Frame::Array(out))
}

fn hvals(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    let mut out = Vec::new();
    ctx.session
        .db
        .hash_each(key, |_, v| out.push(Frame::bulk_from_slice(v)))?;
    Ok(Frame::Array(out))
}

fn hgetall(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    let mut out = Vec::new();
    ctx.session.db.hash_each(key, |f, v| {
        out.push((Frame::bulk_from_slice(f), Frame::bulk_from_slice(v)))
    })?;
    Ok(Frame::Map(out))
}

/// Maps a data-model error of HINCRBY/HINCRBYFLOAT: the arguments were parsed already, so a
/// NotInteger/NotFloat is about the stored value.
fn hincr_error(e: strata::Error) -> Failure {
    match e {
        strata::Error::NotInteger => Failure::text(errors::HASH_NOT_INTEGER),
        strata::Error::NotFloat => Failure::text(errors::HASH_NOT_FLOAT),
        other => other.into(),
    }
}

fn hincrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, field, delta) = (a.key()?, a.value()?, a.int()?);
    let n = ctx
        .session
        .db
        .hincr_by(key, field, delta)
        .map_err(hincr_error)?;
    ctx.notify(HASH, "hincrby", key);
    Ok(Frame::Integer(n))
}

fn hincrbyfloat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, field, delta) = (a.key()?, a.value()?, a.float()?);
    if delta.is_infinite() {
        return Err(Failure::text(errors::VALUE_NAN_OR_INF));
    }
    let v = ctx
        .session
        .db
        .hincr_by_float(key, field, delta)
        .map_err(hincr_error)?;
    ctx.notify(HASH, "hincrbyfloat", key);
    Ok(Frame::bulk(v))
}

fn hrandfield(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    if a.is_done() {
        return Ok(Frame::bulk_or_null(ctx.session.db.hrandfield(key)?));
    }
    let count = crate::args::random_count(a.value()?)?;
    let withvalues = a.opt("WITHVALUES");
    a.finish()?;
    if withvalues && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(Failure::text(errors::VALUE_OUT_OF_RANGE));
    }
    let pairs = ctx.session.db.hrandfield_count(key, count)?;
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
}

fn hscan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let cursor = scan::cursor(a.value()?)?;
    // A missing key answers an empty scan before the options are read (as Redis does).
    if ctx.session.db.hlen(key)? == 0 {
        return Ok(scan::reply(0, Vec::new()));
    }
    let (pattern, count) = scan::options(argv)?;
    let page = ctx.session.db.hscan(key, cursor, pattern, count)?;
    let mut items = Vec::with_capacity(page.pairs.len() * 2);
    for (f, v) in page.pairs {
        items.push(Frame::bulk(f));
        items.push(Frame::bulk(v));
    }
    Ok(scan::reply(page.cursor, items))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn fields_are_set_read_and_deleted() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["HSET", "h", "a", "1", "b", "2"]), Frame::Integer(2));
        assert_eq!(
            h.error(&["HSET", "h", "a"]),
            "ERR wrong number of arguments for 'hset' command"
        );
        assert_eq!(h.run(&["HSETNX", "h", "a", "9"]), Frame::Integer(0));
        assert_eq!(h.run(&["HGET", "h", "a"]), Frame::bulk("1"));
        assert_eq!(
            h.run(&["HMGET", "h", "a", "zz"]),
            Frame::Array(vec![Frame::bulk("1"), Frame::Null])
        );
        assert_eq!(h.run(&["HLEN", "h"]), Frame::Integer(2));
        assert_eq!(h.run(&["HSTRLEN", "h", "b"]), Frame::Integer(1));
        assert_eq!(h.run(&["HDEL", "h", "a", "b", "c"]), Frame::Integer(2));
        assert_eq!(h.run(&["EXISTS", "h"]), Frame::Integer(0));
    }

    #[test]
    fn increments_name_the_stored_value_in_their_errors() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["HINCRBY", "h", "n", "3"]), Frame::Integer(3));
        assert_eq!(
            h.error(&["HINCRBY", "h", "n", "x"]),
            "ERR value is not an integer or out of range"
        );
        h.run(&["HSET", "h", "s", "abc"]);
        assert_eq!(
            h.error(&["HINCRBY", "h", "s", "1"]),
            "ERR hash value is not an integer"
        );
        assert_eq!(
            h.error(&["HINCRBYFLOAT", "h", "s", "1"]),
            "ERR hash value is not a float"
        );
        h.run(&["SET", "str", "x"]);
        assert_eq!(
            h.error(&["HGET", "str", "f"]),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
    }

    #[test]
    fn random_fields_and_scans_check_their_options() {
        let mut h = Harness::new();
        h.run(&["HSET", "h", "a", "1"]);
        assert_eq!(
            h.run(&["HRANDFIELD", "h", "1", "WITHVALUES"]),
            Frame::Array(vec![Frame::bulk("a"), Frame::bulk("1")])
        );
        assert_eq!(
            h.error(&["HRANDFIELD", "h", "1", "NOPE"]),
            "ERR syntax error"
        );
        assert_eq!(h.error(&["HSCAN", "h", "x"]), "ERR invalid cursor");
        assert_eq!(
            h.run(&["HSCAN", "nokey", "0", "COUNT", "0"]),
            Frame::Array(vec![Frame::bulk("0"), Frame::Array(vec![])])
        );
        assert_eq!(
            h.error(&["HSCAN", "h", "0", "COUNT", "0"]),
            "ERR syntax error"
        );
    }
}
