//! Set commands: SADD, SMEMBERS, SPOP, SMOVE, the SINTER/SUNION/SDIFF algebra and SSCAN. Each
//! row of `COMMANDS` names its handler below; handlers parse, call `strata::Db`, and reply.

use bytes::Bytes;
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
use crate::notify;
use crate::scan;
use crate::Ctx;

/// The set family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "sadd",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sadd),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            summary: "Puts members into a set, creating it if needed.",
            syntax: "key member [member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "srem",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(srem),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N) where N is the number of members to be removed.",
            summary: "Takes members out of a set.",
            syntax: "key member [member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sismember",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sismember),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Tells whether a value belongs to a set.",
            syntax: "key member",
            tips: &[],
        },
    },
    CommandSpec {
        name: "smismember",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(smismember),
        docs: Docs {
            group: "set",
            since: "6.2.0",
            complexity: "O(N) where N is the number of elements being checked for membership",
            summary: "Tells, for each of several values, whether it belongs to a set.",
            syntax: "key member [member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "scard",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(scard),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Counts the members of a set.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "smembers",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(smembers),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N) where N is the set cardinality.",
            summary: "Gives every member of a set.",
            syntax: "key",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "srandmember",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(srandmember),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
            summary: "Picks one or more members of a set at random, leaving them in place.",
            syntax: "key [count]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "spop",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(spop),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
            summary: "Removes and gives back random members of a set.",
            syntax: "key [count]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "smove",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
            KeySpec::range(RW | INSERT, 2, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(smove),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Transfers a member from one set to another.",
            syntax: "source destination member",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sinter",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, -1, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sinter),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
            summary: "Gives the members common to all the given sets.",
            syntax: "key [key ...]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "sintercard",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 1),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 1, 0, 1, 1),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sintercard),
        docs: Docs {
            group: "set",
            since: "7.0.0",
            complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
            summary: "Counts the members common to all the given sets.",
            syntax: "numkeys key [key ...] [LIMIT limit:integer]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sinterstore",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
            KeySpec::range(RO | ACCESS, 2, -1, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sinterstore),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
            summary: "Saves the intersection of sets under a destination key.",
            syntax: "destination key [key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sunion",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, -1, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sunion),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N) where N is the total number of elements in all given sets.",
            summary: "Gives the members found in any of the given sets.",
            syntax: "key [key ...]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "sunionstore",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
            KeySpec::range(RO | ACCESS, 2, -1, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sunionstore),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N) where N is the total number of elements in all given sets.",
            summary: "Saves the union of sets under a destination key.",
            syntax: "destination key [key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sdiff",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, -1, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sdiff),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N) where N is the total number of elements in all given sets.",
            summary: "Gives the members of the first set that no other given set has.",
            syntax: "key [key ...]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "sdiffstore",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
            KeySpec::range(RO | ACCESS, 2, -1, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sdiffstore),
        docs: Docs {
            group: "set",
            since: "1.0.0",
            complexity: "O(N) where N is the total number of elements in all given sets.",
            summary: "Saves the difference of sets under a destination key.",
            syntax: "destination key [key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sscan",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SET),
        handler: Handler::Reply(sscan),
        docs: Docs {
            group: "set",
            since: "2.8.0",
            complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
            summary: "Walks the members of a set a batch at a time with a cursor.",
            syntax: "key cursor [MATCH pattern] [COUNT count]",
            tips: &["nondeterministic_output"],
        },
    },
];

fn members_set(members: Vec<Vec<u8>>) -> Frame {
    Frame::Set(members.into_iter().map(Frame::bulk).collect())
}

fn members_array(members: Vec<Vec<u8>>) -> Frame {
    Frame::Array(members.into_iter().map(Frame::bulk).collect())
}

fn sadd(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let n = ctx.session.db.sadd(key, &a.rest_slices())?;
    if n > 0 {
        ctx.notify(notify::SET, "sadd", key);
    }
    Ok(Frame::Integer(n as i64))
}

fn srem(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let n = ctx.session.db.srem(key, &a.rest_slices())?;
    if n > 0 {
        ctx.notify(notify::SET, "srem", key);
        notify::del_if_gone(ctx, key);
    }
    Ok(Frame::Integer(n as i64))
}

fn sismember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, member) = (a.key()?, a.value()?);
    Ok(Frame::Integer(ctx.session.db.sismember(key, member)? as i64))
}

fn smismember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let found = ctx.session.db.smismember(key, &a.rest_slices())?;
    Ok(Frame::Array(
        found
            .into_iter()
            .map(|b| Frame::Integer(b as i64))
            .collect(),
    ))
}

fn scard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::Integer(ctx.session.db.scard(key)? as i64))
}

fn smembers(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(members_set(ctx.session.db.smembers(key)?))
}

fn srandmember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    if a.is_done() {
        return Ok(Frame::bulk_or_null(ctx.session.db.srandmember(key)?));
    }
    if a.remaining() > 1 {
        return Err(syntax());
    }
    let count = crate::args::random_count(a.value()?)?;
    Ok(members_array(ctx.session.db.srandmember_count(key, count)?))
}

fn spop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    if a.is_done() {
        let v = ctx.session.db.spop(key)?;
        if v.is_some() {
            ctx.notify(notify::SET, "spop", key);
            notify::del_if_gone(ctx, key);
        }
        return Ok(Frame::bulk_or_null(v));
    }
    if a.remaining() > 1 {
        return Err(syntax());
    }
    let count = match strata::num::parse_i64(a.value()?) {
        Some(n) if n >= 0 => n as u64,
        _ => return Err(Failure::text(errors::OUT_OF_RANGE_MUST_BE_POSITIVE)),
    };
    let popped = ctx.session.db.spop_count(key, count)?;
    if !popped.is_empty() {
        ctx.notify(notify::SET, "spop", key);
        notify::del_if_gone(ctx, key);
    }
    Ok(members_set(popped))
}

fn smove(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (src, dst, member) = (a.key()?, a.key()?, a.value()?);
    let already = src != dst && matches!(ctx.session.db.sismember(dst, member), Ok(true));
    let moved = ctx.session.db.smove(src, dst, member)?;
    // Only the keys SMOVE changed count as written for WATCH.
    if !moved || src == dst {
        ctx.session.unchanged.extend([src.clone(), dst.clone()]);
    } else if already {
        ctx.session.unchanged.push(dst.clone());
    }
    if moved && src != dst {
        ctx.notify(notify::SET, "srem", src);
        notify::del_if_gone(ctx, src);
        if !already {
            ctx.notify(notify::SET, "sadd", dst);
        }
    }
    Ok(Frame::Integer(moved as i64))
}

fn sinter(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let keys = Args::new(argv).rest_slices();
    Ok(members_set(ctx.session.db.sinter(&keys)?))
}

fn sunion(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let keys = Args::new(argv).rest_slices();
    Ok(members_set(ctx.session.db.sunion(&keys)?))
}

fn sdiff(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let keys = Args::new(argv).rest_slices();
    Ok(members_set(ctx.session.db.sdiff(&keys)?))
}

/// Which set operation a `*STORE` command stores.
#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// SINTERSTORE / SUNIONSTORE / SDIFFSTORE destination key [key ...].
fn store(ctx: &mut Ctx<'_>, argv: &[Bytes], op: Op, event: &str) -> Reply {
    let mut a = Args::new(argv);
    let dst = a.key()?;
    let keys = a.rest_slices();
    let existed = notify::existed(ctx, notify::GENERIC, dst);
    let db = &ctx.session.db;
    let n = match op {
        Op::Inter => db.sinterstore(dst, &keys)?,
        Op::Union => db.sunionstore(dst, &keys)?,
        Op::Diff => db.sdiffstore(dst, &keys)?,
    };
    notify::stored(ctx, notify::SET, event, dst, n, existed);
    Ok(Frame::Integer(n as i64))
}

fn sinterstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    store(ctx, argv, Op::Inter, "sinterstore")
}

fn sunionstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    store(ctx, argv, Op::Union, "sunionstore")
}

fn sdiffstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    store(ctx, argv, Op::Diff, "sdiffstore")
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit], parsed as Redis's sinterCardCommand does.
fn sintercard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let numkeys = match strata::num::parse_i64(a.value()?) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(Failure::text(errors::NUMKEYS_NOT_POSITIVE)),
    };
    if numkeys > a.remaining() as u64 {
        return Err(Failure::text(errors::NUMKEYS_GREATER_THAN_ARGS));
    }
    let keys: Vec<&[u8]> = (0..numkeys)
        .map(|_| a.key().map(|k| &k[..]))
        .collect::<Result<_, _>>()?;
    let mut limit = 0u64;
    while !a.is_done() {
        if a.remaining() < 2 || !a.opt("LIMIT") {
            return Err(syntax());
        }
        limit = match strata::num::parse_i64(a.value()?) {
            Some(n) if n >= 0 => n as u64,
            _ => return Err(Failure::text(errors::LIMIT_NEGATIVE)),
        };
    }
    Ok(Frame::Integer(
        ctx.session.db.sintercard(&keys, limit)? as i64
    ))
}

fn sscan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let cursor = scan::cursor(a.value()?)?;
    // A missing key answers an empty scan before the options are read (as Redis does).
    if ctx.session.db.scard(key)? == 0 {
        return Ok(scan::reply(0, Vec::new()));
    }
    let (pattern, count) = scan::options(argv)?;
    let page = ctx.session.db.sscan(key, cursor, pattern, count)?;
    Ok(scan::reply(
        page.cursor,
        page.members.into_iter().map(Frame::bulk).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn members_are_added_tested_and_removed() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["SADD", "s", "a", "b", "a"]), Frame::Integer(2));
        assert_eq!(h.run(&["SISMEMBER", "s", "a"]), Frame::Integer(1));
        assert_eq!(
            h.run(&["SMISMEMBER", "s", "a", "z"]),
            Frame::Array(vec![Frame::Integer(1), Frame::Integer(0)])
        );
        assert_eq!(h.run(&["SCARD", "s"]), Frame::Integer(2));
        assert_eq!(h.run(&["SMOVE", "s", "t", "a"]), Frame::Integer(1));
        assert_eq!(h.run(&["SREM", "s", "b"]), Frame::Integer(1));
        assert_eq!(h.run(&["EXISTS", "s"]), Frame::Integer(0));
        h.run(&["SET", "str", "x"]);
        assert_eq!(
            h.error(&["SADD", "str", "a"]),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
    }

    #[test]
    fn pops_and_random_members_check_their_count() {
        let mut h = Harness::new();
        h.run(&["SADD", "s", "a"]);
        assert_eq!(
            h.error(&["SPOP", "s", "-1"]),
            "ERR value is out of range, must be positive"
        );
        assert_eq!(
            h.error(&["SRANDMEMBER", "s", "x"]),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            h.run(&["SRANDMEMBER", "s", "-2"]),
            Frame::Array(vec![Frame::bulk("a"), Frame::bulk("a")])
        );
        assert_eq!(h.error(&["SPOP", "s", "x", "y"]), "ERR syntax error");
        assert_eq!(h.error(&["SRANDMEMBER", "s", "x", "y"]), "ERR syntax error");
        assert_eq!(h.run(&["SPOP", "s"]), Frame::bulk("a"));
    }

    #[test]
    fn set_algebra_and_intersection_cardinality() {
        let mut h = Harness::new();
        h.run(&["SADD", "a", "1", "2", "3"]);
        h.run(&["SADD", "b", "2", "3", "4"]);
        assert_eq!(h.run(&["SINTERSTORE", "d", "a", "b"]), Frame::Integer(2));
        assert_eq!(h.run(&["SDIFFSTORE", "d", "a", "b"]), Frame::Integer(1));
        assert_eq!(h.run(&["SUNIONSTORE", "d", "a", "b"]), Frame::Integer(4));
        assert_eq!(
            h.run(&["SINTERCARD", "2", "a", "b", "LIMIT", "1"]),
            Frame::Integer(1)
        );
        assert_eq!(
            h.error(&["SINTERCARD", "0", "a"]),
            "ERR numkeys should be greater than 0"
        );
        assert_eq!(
            h.error(&["SINTERCARD", "3", "a", "b"]),
            "ERR Number of keys can't be greater than number of args"
        );
        assert_eq!(
            h.error(&["SINTERCARD", "1", "a", "LIMIT"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["SINTERCARD", "1", "a", "LIMIT", "-1"]),
            "ERR LIMIT can't be negative"
        );
    }
}
