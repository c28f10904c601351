//! Hash commands: HSET, HGET, HGETALL, HINCRBY, HRANDFIELD, HSCAN and the rest. Each row of
//! `COMMANDS` names its handler below; handlers parse, call `strata::Db`, and reply.

use bytes::Bytes;
use strata_resp::{Frame, Protocol};

use crate::args::{self, db, is, reply};
use crate::command::*;
use crate::errors::{self, err};
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
        handler: plain!(hset),
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
        handler: plain!(hsetnx),
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
        handler: plain!(hget),
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
        handler: plain!(hmget),
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
        handler: plain!(hmset),
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
        handler: plain!(hdel),
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
        handler: plain!(hlen),
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
        handler: plain!(hstrlen),
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
        handler: plain!(hexists),
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
        handler: plain!(hkeys),
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
        handler: plain!(hvals),
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
        handler: plain!(hgetall),
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
        handler: plain!(hincrby),
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
        handler: plain!(hincrbyfloat),
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
        handler: plain!(hrandfield),
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
        handler: plain!(hscan),
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

fn hrandfield(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        if argv.len() == 2 {
            return Ok(Frame::bulk_or_null(db(ctx
                .session
                .db
                .hrandfield(&argv[1]))?));
        }
        let count = args::random_count(&argv[2])?;
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

fn hscan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let cursor = scan::cursor(&argv[2])?;
        // A missing key answers an empty scan before the options are read (as Redis does).
        if db(ctx.session.db.hlen(&argv[1]))? == 0 {
            return Ok(scan::reply(0, Vec::new()));
        }
        let (pattern, count) = scan::options(argv)?;
        let page = db(ctx.session.db.hscan(&argv[1], cursor, pattern, count))?;
        let mut items = Vec::with_capacity(page.pairs.len() * 2);
        for (f, v) in page.pairs {
            items.push(Frame::bulk(f));
            items.push(Frame::bulk(v));
        }
        Ok(scan::reply(page.cursor, items))
    })())
}
