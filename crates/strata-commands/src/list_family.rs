//! List commands (Redis's "list" group, without the blocking ones): pushes and pops at both ends,
//! indexing, ranges, LINSERT/LREM/LTRIM, LPOS, LMOVE/RPOPLPUSH and LMPOP. Each row of `COMMANDS`
//! names its handler below; handlers parse arguments in Redis's order (so the same error wins),
//! call `strata::Db`, and reply.

use bytes::Bytes;
use strata::ListEnd;
use strata_resp::Frame;

use crate::args::{self, db, is, reply, Parsed};
use crate::command::*;
use crate::errors::{self, err};
use crate::notify;
use crate::Ctx;

/// The list family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "lpush",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lpush),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            summary: "Adds elements at the head of a list, creating it if needed.",
            syntax: "key element [element ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "rpush",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(rpush),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            summary: "Adds elements at the tail of a list, creating it if needed.",
            syntax: "key element [element ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lpushx",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lpushx),
        docs: Docs {
            group: "list",
            since: "2.2.0",
            complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            summary: "Adds elements at the head of a list that already exists.",
            syntax: "key element [element ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "rpushx",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(rpushx),
        docs: Docs {
            group: "list",
            since: "2.2.0",
            complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
            summary: "Adds elements at the tail of a list that already exists.",
            syntax: "key element [element ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lpop",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lpop),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(N) where N is the number of elements returned",
            summary: "Takes elements off the head of a list.",
            syntax: "key [count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "rpop",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(rpop),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(N) where N is the number of elements returned",
            summary: "Takes elements off the tail of a list.",
            syntax: "key [count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "llen",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(llen),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Counts the elements of a list.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lindex",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lindex),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
            summary: "Gives the list element at a position.",
            syntax: "key index",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lrange",
        arity: Arity::Exactly(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lrange),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
            summary: "Gives the list elements between two positions.",
            syntax: "key start stop",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lset",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lset),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
            summary: "Replaces the list element at a position.",
            syntax: "key index element",
            tips: &[],
        },
    },
    CommandSpec {
        name: "linsert",
        arity: Arity::Exactly(5),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | INSERT, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(linsert),
        docs: Docs {
            group: "list",
            since: "2.2.0",
            complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
            summary: "Inserts an element before or after a reference element of a list.",
            syntax: "key <where: BEFORE | AFTER> pivot element",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lrem",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lrem),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
            summary: "Deletes occurrences of an element from a list.",
            syntax: "key count element",
            tips: &[],
        },
    },
    CommandSpec {
        name: "ltrim",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(ltrim),
        docs: Docs {
            group: "list",
            since: "1.0.0",
            complexity: "O(N) where N is the number of elements to be removed by the operation.",
            summary: "Cuts a list down to the elements between two positions.",
            syntax: "key start stop",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lpos",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lpos),
        docs: Docs {
            group: "list",
            since: "6.0.6",
            complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
            summary: "Finds the positions of an element in a list.",
            syntax: "key element [RANK rank] [COUNT num-matches] [MAXLEN len]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lmove",
        arity: Arity::Exactly(5),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
            KeySpec::range(RW | INSERT, 2, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lmove),
        docs: Docs {
            group: "list",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Takes an element from one end of a list and pushes it onto an end of another.",
            syntax: "source destination <wherefrom: LEFT | RIGHT> <whereto: LEFT | RIGHT>",
            tips: &[],
        },
    },
    CommandSpec {
        name: "rpoplpush",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
            KeySpec::range(RW | INSERT, 2, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(rpoplpush),
        docs: Docs {
            group: "list",
            since: "1.2.0",
            complexity: "O(1)",
            summary: "Moves the tail element of one list to the head of another.",
            syntax: "source destination",
            tips: &[],
        },
    },
    CommandSpec {
        name: "lmpop",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 1),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | DELETE, 1, 0, 1, 1),
        ],
        acl: Acl(acl::LIST),
        handler: plain!(lmpop),
        docs: Docs {
            group: "list",
            since: "7.0.0",
            complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
            summary: "Takes elements from one end of the first non-empty list among several keys.",
            syntax: "numkeys key [key ...] <where: LEFT | RIGHT> [COUNT count]",
            tips: &[],
        },
    },
];

/// A non-negative long; any failure replies `msg` (Redis's getPositiveLongFromObjectOrReply).
fn positive(a: &[u8], msg: &str) -> Parsed<u64> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(err(msg)),
    }
}

/// A long of at least 1; any failure replies `msg`.
fn at_least_one(a: &[u8], msg: &str) -> Parsed<u64> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 1 => Ok(n as u64),
        _ => Err(err(msg)),
    }
}

fn push_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], end: ListEnd, only_if_exists: bool) -> Frame {
    match ctx
        .session
        .db
        .list_push(&argv[1], end, &args::slices(&argv[2..]), only_if_exists)
    {
        Ok(n) => {
            if n > 0 {
                ctx.notify(notify::LIST, notify::list_event(end, true), &argv[1]);
            }
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn lpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    push_generic(ctx, argv, ListEnd::Left, false)
}

fn rpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    push_generic(ctx, argv, ListEnd::Right, false)
}

fn lpushx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    push_generic(ctx, argv, ListEnd::Left, true)
}

fn rpushx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    push_generic(ctx, argv, ListEnd::Right, true)
}

fn pop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], end: ListEnd) -> Frame {
    reply((|| {
        if argv.len() > 3 {
            return Err(errors::wrong_arity(if end == ListEnd::Left {
                "lpop"
            } else {
                "rpop"
            }));
        }
        let count = match argv.get(2) {
            Some(a) => Some(positive(a, errors::OUT_OF_RANGE_MUST_BE_POSITIVE)?),
            None => None,
        };
        let items = db(ctx.session.db.list_pop(&argv[1], end, count.unwrap_or(1)))?;
        if items.is_some() {
            ctx.notify(notify::LIST, notify::list_event(end, false), &argv[1]);
            notify::del_if_gone(ctx, &argv[1]);
        }
        Ok(match (items, count) {
            (None, Some(_)) => Frame::NullArray,
            (None, None) => Frame::Null,
            (Some(items), Some(_)) => Frame::bulk_array(items),
            (Some(items), None) => Frame::bulk_or_null(items.into_iter().next()),
        })
    })())
}

fn lpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    pop_generic(ctx, argv, ListEnd::Left)
}

fn rpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    pop_generic(ctx, argv, ListEnd::Right)
}

fn llen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.llen(&argv[1]) {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

fn lindex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        // Redis looks the key up (and checks its type) before it reads the index.
        if db(ctx.session.db.llen(&argv[1]))? == 0 {
            return Ok(Frame::Null);
        }
        let index = args::int(&argv[2])?;
        Ok(Frame::bulk_or_null(db(ctx
            .session
            .db
            .lindex(&argv[1], index))?))
    })())
}

fn lrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (start, stop) = (args::int(&argv[2])?, args::int(&argv[3])?);
        Ok(Frame::bulk_array(db(ctx
            .session
            .db
            .lrange(&argv[1], start, stop))?))
    })())
}

fn lset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        if db(ctx.session.db.llen(&argv[1]))? == 0 {
            return Err(err(errors::NO_SUCH_KEY));
        }
        let index = args::int(&argv[2])?;
        if db(ctx.session.db.lset(&argv[1], index, &argv[3]))? {
            ctx.notify(notify::LIST, "lset", &argv[1]);
            Ok(Frame::ok())
        } else {
            Err(err(errors::INDEX_OUT_OF_RANGE))
        }
    })())
}

fn linsert(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let before = if is(&argv[2], "before") {
            true
        } else if is(&argv[2], "after") {
            false
        } else {
            return Err(err(errors::SYNTAX));
        };
        let n = db(ctx.session.db.linsert(&argv[1], before, &argv[3], &argv[4]))?;
        if n > 0 {
            ctx.notify(notify::LIST, "linsert", &argv[1]);
        }
        Ok(Frame::Integer(n))
    })())
}

fn lrem(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let count = args::int(&argv[2])?;
        let n = db(ctx.session.db.lrem(&argv[1], count, &argv[3]))?;
        if n > 0 {
            ctx.notify(notify::LIST, "lrem", &argv[1]);
            notify::del_if_gone(ctx, &argv[1]);
        }
        Ok(Frame::Integer(n as i64))
    })())
}

fn ltrim(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (start, stop) = (args::int(&argv[2])?, args::int(&argv[3])?);
        let existed = notify::existed(ctx, notify::LIST, &argv[1]);
        db(ctx.session.db.ltrim(&argv[1], start, stop))?;
        if existed {
            ctx.notify(notify::LIST, "ltrim", &argv[1]);
            notify::del_if_gone(ctx, &argv[1]);
        }
        Ok(Frame::ok())
    })())
}

fn lpos(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (mut rank, mut count, mut maxlen) = (1i64, None, 0u64);
        let mut j = 3;
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            if is(&argv[j], "rank") && more > 0 {
                j += 1;
                rank = args::int(&argv[j])?;
                if rank == 0 {
                    return Err(err(errors::LPOS_RANK_ZERO));
                }
            } else if is(&argv[j], "count") && more > 0 {
                j += 1;
                count = Some(positive(&argv[j], errors::LPOS_COUNT_NEGATIVE)?);
            } else if is(&argv[j], "maxlen") && more > 0 {
                j += 1;
                maxlen = positive(&argv[j], errors::LPOS_MAXLEN_NEGATIVE)?;
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 1;
        }
        let found = db(ctx
            .session
            .db
            .lpos(&argv[1], &argv[2], rank, count.unwrap_or(1), maxlen))?;
        Ok(match count {
            Some(_) => Frame::Array(
                found
                    .into_iter()
                    .map(|p| Frame::Integer(p as i64))
                    .collect(),
            ),
            None => found
                .first()
                .map_or(Frame::Null, |p| Frame::Integer(*p as i64)),
        })
    })())
}

fn lmove(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let from = args::end_arg(&argv[3])?;
        let to = args::end_arg(&argv[4])?;
        let v = db(ctx.session.db.lmove(&argv[1], &argv[2], from, to))?;
        notify::list_moved(ctx, argv, &v, from, to);
        Ok(Frame::bulk_or_null(v))
    })())
}

fn rpoplpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx
        .session
        .db
        .lmove(&argv[1], &argv[2], ListEnd::Right, ListEnd::Left)
    {
        Ok(v) => {
            notify::list_moved(ctx, argv, &v, ListEnd::Right, ListEnd::Left);
            Frame::bulk_or_null(v)
        }
        Err(e) => errors::from_db(e),
    }
}

fn lmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let numkeys = at_least_one(&argv[1], errors::NUMKEYS_NOT_POSITIVE)?;
        let where_idx = match usize::try_from(numkeys).ok().and_then(|n| n.checked_add(2)) {
            Some(w) if w < argv.len() => w,
            _ => return Err(err(errors::SYNTAX)),
        };
        let end = args::end_arg(&argv[where_idx])?;
        let mut count = None;
        let mut j = where_idx + 1;
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            if count.is_none() && is(&argv[j], "count") && more > 0 {
                j += 1;
                count = Some(at_least_one(&argv[j], errors::COUNT_NOT_POSITIVE)?);
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 1;
        }
        let keys = args::slices(&argv[2..where_idx]);
        match db(ctx.session.db.lmpop(&keys, end, count.unwrap_or(1)))? {
            None => Ok(Frame::NullArray),
            Some((key, items)) => {
                ctx.notify(notify::LIST, notify::list_event(end, false), &key);
                notify::del_if_gone(ctx, &key);
                Ok(Frame::Array(vec![
                    Frame::bulk(key),
                    Frame::bulk_array(items),
                ]))
            }
        }
    })())
}
