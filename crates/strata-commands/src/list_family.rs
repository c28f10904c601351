//! List commands (Redis's "list" group, without the blocking ones): pushes and pops at both ends,
//! indexing, ranges, LINSERT/LREM/LTRIM, LPOS, LMOVE/RPOPLPUSH and LMPOP. Each row of `COMMANDS`
//! names its handler below; handlers parse arguments in Redis's order (so the same error wins),
//! call `strata::Db`, and reply.

use bytes::Bytes;
use strata::ListEnd;
use strata_resp::Frame;

use crate::args::end_arg;
use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
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
        handler: Handler::Reply(lpush),
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
        handler: Handler::Reply(rpush),
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
        handler: Handler::Reply(lpushx),
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
        handler: Handler::Reply(rpushx),
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
        handler: Handler::Reply(lpop),
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
        handler: Handler::Reply(rpop),
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
        handler: Handler::Reply(llen),
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
        handler: Handler::Reply(lindex),
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
        handler: Handler::Reply(lrange),
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
        handler: Handler::Reply(lset),
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
        handler: Handler::Reply(linsert),
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
        handler: Handler::Reply(lrem),
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
        handler: Handler::Reply(ltrim),
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
        handler: Handler::Reply(lpos),
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
        handler: Handler::Reply(lmove),
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
        handler: Handler::Reply(rpoplpush),
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
        handler: Handler::Reply(lmpop),
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
fn positive(a: &[u8], msg: &str) -> Result<u64, Failure> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Failure::text(msg)),
    }
}

/// A long of at least 1; any failure replies `msg`.
fn at_least_one(a: &[u8], msg: &str) -> Result<u64, Failure> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 1 => Ok(n as u64),
        _ => Err(Failure::text(msg)),
    }
}

/// LEFT / RIGHT.
const ENDS: [(&str, ListEnd); 2] = [("LEFT", ListEnd::Left), ("RIGHT", ListEnd::Right)];

fn push_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], end: ListEnd, only_if_exists: bool) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let n = ctx
        .session
        .db
        .list_push(key, end, &a.rest_slices(), only_if_exists)?;
    if n > 0 {
        ctx.notify(notify::LIST, notify::list_event(end, true), key);
    }
    Ok(Frame::Integer(n as i64))
}

fn lpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    push_generic(ctx, argv, ListEnd::Left, false)
}

fn rpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    push_generic(ctx, argv, ListEnd::Right, false)
}

fn lpushx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    push_generic(ctx, argv, ListEnd::Left, true)
}

fn rpushx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    push_generic(ctx, argv, ListEnd::Right, true)
}

fn pop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], end: ListEnd) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    if a.remaining() > 1 {
        let name = if end == ListEnd::Left { "lpop" } else { "rpop" };
        return Err(Failure(errors::wrong_arity(name)));
    }
    let count = match a.is_done() {
        false => Some(positive(a.value()?, errors::OUT_OF_RANGE_MUST_BE_POSITIVE)?),
        true => None,
    };
    let items = ctx.session.db.list_pop(key, end, count.unwrap_or(1))?;
    if items.is_some() {
        ctx.notify(notify::LIST, notify::list_event(end, false), key);
        notify::del_if_gone(ctx, key);
    }
    Ok(match (items, count) {
        (None, Some(_)) => Frame::NullArray,
        (None, None) => Frame::Null,
        (Some(items), Some(_)) => Frame::bulk_array(items),
        (Some(items), None) => Frame::bulk_or_null(items.into_iter().next()),
    })
}

fn lpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    pop_generic(ctx, argv, ListEnd::Left)
}

fn rpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    pop_generic(ctx, argv, ListEnd::Right)
}

fn llen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::Integer(ctx.session.db.llen(key)? as i64))
}

fn lindex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    // Redis looks the key up (and checks its type) before it reads the index.
    if ctx.session.db.llen(key)? == 0 {
        return Ok(Frame::Null);
    }
    let index = a.int()?;
    Ok(Frame::bulk_or_null(ctx.session.db.lindex(key, index)?))
}

fn lrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, start, stop) = (a.key()?, a.int()?, a.int()?);
    Ok(Frame::bulk_array(ctx.session.db.lrange(key, start, stop)?))
}

fn lset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    if ctx.session.db.llen(key)? == 0 {
        return Err(Failure::text(errors::NO_SUCH_KEY));
    }
    let (index, value) = (a.int()?, a.value()?);
    if !ctx.session.db.lset(key, index, value)? {
        return Err(Failure::text(errors::INDEX_OUT_OF_RANGE));
    }
    ctx.notify(notify::LIST, "lset", key);
    Ok(Frame::ok())
}

fn linsert(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let before = a.word(&[("BEFORE", true), ("AFTER", false)])?;
    let (pivot, value) = (a.value()?, a.value()?);
    let n = ctx.session.db.linsert(key, before, pivot, value)?;
    if n > 0 {
        ctx.notify(notify::LIST, "linsert", key);
    }
    Ok(Frame::Integer(n))
}

fn lrem(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, count, value) = (a.key()?, a.int()?, a.value()?);
    let n = ctx.session.db.lrem(key, count, value)?;
    if n > 0 {
        ctx.notify(notify::LIST, "lrem", key);
        notify::del_if_gone(ctx, key);
    }
    Ok(Frame::Integer(n as i64))
}

fn ltrim(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, start, stop) = (a.key()?, a.int()?, a.int()?);
    let existed = notify::existed(ctx, notify::LIST, key);
    ctx.session.db.ltrim(key, start, stop)?;
    if existed {
        ctx.notify(notify::LIST, "ltrim", key);
        notify::del_if_gone(ctx, key);
    }
    Ok(Frame::ok())
}

fn lpos(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, element) = (a.key()?, a.value()?);
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0u64);
    while !a.is_done() {
        let has_value = a.remaining() >= 2;
        if has_value && a.opt("RANK") {
            rank = a.int()?;
            if rank == 0 {
                return Err(Failure::text(errors::LPOS_RANK_ZERO));
            }
        } else if has_value && a.opt("COUNT") {
            count = Some(positive(a.value()?, errors::LPOS_COUNT_NEGATIVE)?);
        } else if has_value && a.opt("MAXLEN") {
            maxlen = positive(a.value()?, errors::LPOS_MAXLEN_NEGATIVE)?;
        } else {
            return Err(syntax());
        }
    }
    let found = ctx
        .session
        .db
        .lpos(key, element, rank, count.unwrap_or(1), maxlen)?;
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
}

fn lmove(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (src, dst) = (a.key()?, a.key()?);
    let (from, to) = (a.word(&ENDS)?, a.word(&ENDS)?);
    let v = ctx.session.db.lmove(src, dst, from, to)?;
    notify::list_moved(ctx, argv, &v, from, to);
    Ok(Frame::bulk_or_null(v))
}

fn rpoplpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (src, dst) = (a.key()?, a.key()?);
    let v = ctx
        .session
        .db
        .lmove(src, dst, ListEnd::Right, ListEnd::Left)?;
    notify::list_moved(ctx, argv, &v, ListEnd::Right, ListEnd::Left);
    Ok(Frame::bulk_or_null(v))
}

fn lmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let numkeys = at_least_one(a.value()?, errors::NUMKEYS_NOT_POSITIVE)?;
    // The keys, then LEFT | RIGHT: at least one argument must follow them.
    if numkeys >= a.remaining() as u64 {
        return Err(syntax());
    }
    let keys: Vec<&[u8]> = (0..numkeys)
        .map(|_| a.key().map(|k| &k[..]))
        .collect::<Result<_, _>>()?;
    let end = end_arg(a.value()?)?;
    let mut count = None;
    while !a.is_done() {
        if count.is_some() || a.remaining() < 2 || !a.opt("COUNT") {
            return Err(syntax());
        }
        count = Some(at_least_one(a.value()?, errors::COUNT_NOT_POSITIVE)?);
    }
    match ctx.session.db.lmpop(&keys, end, count.unwrap_or(1))? {
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
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    fn bulks(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|i| Frame::bulk(i.to_string())).collect())
    }

    #[test]
    fn pushes_pops_and_ranges() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["RPUSH", "l", "a", "b", "c"]), Frame::Integer(3));
        assert_eq!(h.run(&["LPUSHX", "nokey", "a"]), Frame::Integer(0));
        assert_eq!(h.run(&["LRANGE", "l", "0", "-1"]), bulks(&["a", "b", "c"]));
        assert_eq!(h.run(&["LPOP", "l"]), Frame::bulk("a"));
        assert_eq!(h.run(&["RPOP", "l", "5"]), bulks(&["c", "b"]));
        assert_eq!(h.run(&["RPOP", "l", "1"]), Frame::NullArray);
        assert_eq!(
            h.error(&["LPOP", "l", "1", "2"]),
            "ERR wrong number of arguments for 'lpop' command"
        );
        assert_eq!(
            h.error(&["LPOP", "l", "-1"]),
            "ERR value is out of range, must be positive"
        );
    }

    #[test]
    fn positions_inserts_and_moves() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "a", "b", "a"]);
        assert_eq!(h.run(&["LPOS", "l", "a", "RANK", "-1"]), Frame::Integer(2));
        assert_eq!(
            h.error(&["LPOS", "l", "a", "RANK", "0"]),
            crate::errors::LPOS_RANK_ZERO
        );
        assert_eq!(h.error(&["LPOS", "l", "a", "COUNT"]), "ERR syntax error");
        assert_eq!(
            h.run(&["LINSERT", "l", "BEFORE", "b", "x"]),
            Frame::Integer(4)
        );
        assert_eq!(
            h.error(&["LINSERT", "l", "NEAR", "b", "x"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.run(&["LMOVE", "l", "m", "LEFT", "RIGHT"]),
            Frame::bulk("a")
        );
        assert_eq!(
            h.error(&["LMOVE", "l", "m", "UP", "RIGHT"]),
            "ERR syntax error"
        );
        assert_eq!(h.error(&["LSET", "nokey", "0", "v"]), "ERR no such key");
        assert_eq!(h.error(&["LSET", "l", "9", "v"]), "ERR index out of range");
    }

    #[test]
    fn lmpop_reads_its_count_of_keys() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "b", "1", "2"]);
        assert_eq!(
            h.run(&["LMPOP", "2", "a", "b", "LEFT", "COUNT", "5"]),
            Frame::Array(vec![Frame::bulk("b"), bulks(&["1", "2"])])
        );
        assert_eq!(
            h.error(&["LMPOP", "0", "a", "LEFT"]),
            "ERR numkeys should be greater than 0"
        );
        assert_eq!(h.error(&["LMPOP", "2", "a", "LEFT"]), "ERR syntax error");
        assert_eq!(
            h.error(&["LMPOP", "1", "a", "LEFT", "COUNT", "1", "COUNT", "1"]),
            "ERR syntax error"
        );
        assert_eq!(h.run(&["LMPOP", "1", "a", "RIGHT"]), Frame::NullArray);
    }
}
