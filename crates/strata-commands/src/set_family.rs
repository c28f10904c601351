//! Set commands: SADD, SMEMBERS, SPOP, SMOVE, the SINTER/SUNION/SDIFF algebra and SSCAN. Each
//! row of `COMMANDS` names its handler below; handlers parse, call `strata::Db`, and reply.

use bytes::Bytes;
use strata_resp::Frame;

use crate::args::{self, db, is, reply, Parsed};
use crate::command::*;
use crate::errors::{self, err};
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
        handler: plain!(sadd),
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
        handler: plain!(srem),
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
        handler: plain!(sismember),
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
        handler: plain!(smismember),
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
        handler: plain!(scard),
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
        handler: plain!(smembers),
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
        handler: plain!(srandmember),
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
        handler: plain!(spop),
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
        handler: plain!(smove),
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
        handler: plain!(sinter),
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
        handler: plain!(sintercard),
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
        handler: plain!(sinterstore),
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
        handler: plain!(sunion),
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
        handler: plain!(sunionstore),
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
        handler: plain!(sdiff),
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
        handler: plain!(sdiffstore),
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
        handler: plain!(sscan),
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
            let count = args::random_count(&argv[2])?;
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
    let already = argv[1] != argv[2]
        && ctx.notifies(notify::SET)
        && matches!(ctx.session.db.sismember(&argv[2], &argv[3]), Ok(true));
    match ctx.session.db.smove(&argv[1], &argv[2], &argv[3]) {
        Ok(b) => {
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
        let cursor = scan::cursor(&argv[2])?;
        // A missing key answers an empty scan before the options are read (as Redis does).
        if db(ctx.session.db.scard(&argv[1]))? == 0 {
            return Ok(scan::reply(0, Vec::new()));
        }
        let (pattern, count) = scan::options(argv)?;
        let page = db(ctx.session.db.sscan(&argv[1], cursor, pattern, count))?;
        Ok(scan::reply(
            page.cursor,
            page.members.into_iter().map(Frame::bulk).collect(),
        ))
    })())
}
