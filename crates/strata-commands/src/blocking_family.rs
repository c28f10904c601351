//! The blocking list and sorted-set commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN,
//! BZPOPMAX and BZMPOP. Each handler parses its arguments in Redis's order (so the same error
//! wins), then answers at once when a key has something to serve. When none has, what happens
//! depends on [`Session::block_mode`](crate::Session): a client's own command returns
//! [`Outcome::Block`] (the connection waits for a signal on one of the keys or the deadline, then
//! runs the same command again in [`BlockMode::Serve`]);
//! without blocking (MULTI, scripts) it answers as a timeout would. The waiting itself, the FIFO
//! order of blocked clients and the timeout reply belong to the server.

use std::time::{Duration, Instant};

use bytes::Bytes;
use strata::ListEnd;
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{self, Args, Failure};
use crate::errors;
use crate::notify;
use crate::{BlockMode, BlockRequest, Ctx, Outcome};

/// What a blocking handler returns: a reply, or a wait.
type Served = Result<Outcome, Failure>;

/// The blocking commands' rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "blpop",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | NOSCRIPT | BLOCKING),
        keys: Keys::Range(Range::new(1, -2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, -2, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: Handler::Outcome(blpop),
        docs: Docs {
            group: "list",
            since: "2.0.0",
            complexity: "O(N) where N is the number of provided keys.",
            summary: "Takes the head element of the first non-empty list, waiting for one if all are empty.",
            syntax: "key [key ...] timeout:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "brpop",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | NOSCRIPT | BLOCKING),
        keys: Keys::Range(Range::new(1, -2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, -2, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: Handler::Outcome(brpop),
        docs: Docs {
            group: "list",
            since: "2.0.0",
            complexity: "O(N) where N is the number of provided keys.",
            summary: "Takes the tail element of the first non-empty list, waiting for one if all are empty.",
            syntax: "key [key ...] timeout:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "brpoplpush",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
            KeySpec::range(RW | INSERT, 2, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: Handler::Outcome(brpoplpush),
        docs: Docs {
            group: "list",
            since: "2.2.0",
            complexity: "O(1)",
            summary: "Moves the tail element of one list to the head of another, waiting for one if the source is empty.",
            syntax: "source destination timeout:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "blmove",
        arity: Arity::Exactly(6),
        flags: Flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
            KeySpec::range(RW | INSERT, 2, 0, 1, 0),
        ],
        acl: Acl(acl::LIST),
        handler: Handler::Outcome(blmove),
        docs: Docs {
            group: "list",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Moves an element between the ends of two lists, waiting for one if the source is empty.",
            syntax: "source destination <wherefrom: LEFT | RIGHT> <whereto: LEFT | RIGHT> timeout:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "blmpop",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE | BLOCKING | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | DELETE, 2, 0, 1, 1),
        ],
        acl: Acl(acl::LIST),
        handler: Handler::Outcome(blmpop),
        docs: Docs {
            group: "list",
            since: "7.0.0",
            complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
            summary: "Takes elements from one end of the first non-empty list, waiting for one if all are empty.",
            syntax: "timeout:double numkeys key [key ...] <where: LEFT | RIGHT> [COUNT count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bzpopmin",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | NOSCRIPT | BLOCKING | FAST),
        keys: Keys::Range(Range::new(1, -2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, -2, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Outcome(bzpopmin),
        docs: Docs {
            group: "sorted-set",
            since: "5.0.0",
            complexity: "O(log(N)) with N being the number of elements in the sorted set.",
            summary: "Takes the lowest-scored member of the first non-empty sorted set, waiting for one if all are empty.",
            syntax: "key [key ...] timeout:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bzpopmax",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | NOSCRIPT | BLOCKING | FAST),
        keys: Keys::Range(Range::new(1, -2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, -2, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Outcome(bzpopmax),
        docs: Docs {
            group: "sorted-set",
            since: "5.0.0",
            complexity: "O(log(N)) with N being the number of elements in the sorted set.",
            summary: "Takes the highest-scored member of the first non-empty sorted set, waiting for one if all are empty.",
            syntax: "key [key ...] timeout:double",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bzmpop",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE | BLOCKING | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 2),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | DELETE, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Outcome(bzmpop),
        docs: Docs {
            group: "sorted-set",
            since: "7.0.0",
            complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
            summary: "Takes the lowest- or highest-scored members of the first non-empty sorted set, waiting if all are empty.",
            syntax: "timeout:double numkeys key [key ...] <where: MIN | MAX> [COUNT count]",
            tips: &[],
        },
    },
];

/// Error for a timeout that is below zero once converted to milliseconds.
pub const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";

/// Redis's `MAX_LONG_DOUBLE_CHARS`: longer arguments are not read as numbers.
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

/// A blocking timeout in seconds, read as Redis 7.0's `getTimeoutFromObjectOrReply` reads it:
/// C's `strtold` over the whole argument (no leading space, no NaN), times 1000, rounded up to
/// whole milliseconds. Returns the milliseconds, 0 meaning "forever". Values past the range of
/// a 64-bit millisecond count (including infinities) are negative, as C's conversion makes them.
pub fn timeout_ms(a: &[u8]) -> Result<u64, Failure> {
    let not_float = || Failure::text(errors::TIMEOUT_NOT_FLOAT);
    if a.is_empty() || a.len() >= MAX_LONG_DOUBLE_CHARS {
        return Err(not_float());
    }
    if matches!(a[0], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return Err(not_float());
    }
    // C stops at a NUL byte: what follows it is invisible to strtold's caller.
    let s = match a.iter().position(|&b| b == 0) {
        Some(n) => &a[..n],
        None => a,
    };
    let (mut v, n, erange) = strata::num::strtod(s);
    if n != s.len() || v.is_nan() {
        return Err(not_float());
    }
    if erange && v == 0.0 {
        // Below f64's range but within a long double's: a tiny value of that sign.
        v = if s.starts_with(b"-") {
            -f64::MIN_POSITIVE
        } else {
            f64::MIN_POSITIVE
        };
    }
    let ms = (v * 1000.0).ceil();
    // 2^63: C's conversion of anything outside i64 yields i64::MIN on the platforms Redis runs on.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let tval = if ms.is_finite() && (-LIMIT..LIMIT).contains(&ms) {
        ms as i64
    } else {
        i64::MIN
    };
    if tval < 0 {
        return Err(Failure::text(TIMEOUT_NEGATIVE));
    }
    Ok(tval as u64)
}

/// The deadline for a timeout argument: `None` waits forever.
fn deadline(a: &[u8]) -> Result<Option<Instant>, Failure> {
    let ms = timeout_ms(a)?;
    Ok(match ms {
        0 => None,
        ms => Instant::now().checked_add(Duration::from_millis(ms)),
    })
}

/// The keys to look at: all of them, or when re-run for a signalled key, only that one (Redis
/// serves a blocked client from the key that became ready).
fn keys_to_check<'a>(ctx: &Ctx<'_>, keys: &'a [Bytes]) -> Vec<&'a [u8]> {
    if let BlockMode::Serve(ready) = &ctx.session.block_mode {
        if let Some(k) = keys.iter().find(|k| *k == ready) {
            return vec![&k[..]];
        }
    }
    keys.iter().map(|k| &k[..]).collect()
}

/// Nothing to serve: wait or, when blocking is not allowed, reply `immediate` (what Redis
/// answers inside MULTI). `other_type`: the signalled key held another type (see [`looked_up`]).
fn nothing_to_serve(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    deadline: Option<Instant>,
    immediate: Frame,
    other_type: bool,
) -> Outcome {
    if ctx.session.block_mode == BlockMode::NoBlock {
        return Outcome::Reply(immediate);
    }
    Outcome::Block(BlockRequest {
        db: ctx.session.db.index(),
        keys: keys.to_vec(),
        deadline,
        other_type,
        rerun: None,
    })
}

/// The reply `reply` makes of what was found, or (nothing found) a wait on `keys`, see
/// [`nothing_to_serve`].
fn serve_or_wait<T>(
    ctx: &mut Ctx<'_>,
    found: Lookup<T>,
    keys: &[Bytes],
    deadline: Option<Instant>,
    immediate: Frame,
    reply: impl FnOnce(&Ctx<'_>, T) -> Frame,
) -> Outcome {
    match found {
        Lookup::Found(v) => Outcome::Reply(reply(ctx, v)),
        Lookup::Empty { other_type } => {
            nothing_to_serve(ctx, keys, deadline, immediate, other_type)
        }
    }
}

/// What the storage found for a blocking command.
enum Lookup<T> {
    /// Something to serve.
    Found(T),
    /// Nothing; `other_type` when a signalled key holds another type.
    Empty { other_type: bool },
}

/// The storage's answer for the keys a blocking command looked at. While a blocked client is
/// served (see [`BlockMode::Serve`]), a signalled key holding another type leaves it waiting, as
/// Redis serves list waiters only from lists and sorted-set waiters only from sorted sets (the
/// server then tries the key's next waiter). Otherwise errors are replies as usual.
fn looked_up<T>(ctx: &Ctx<'_>, r: strata::Result<Option<T>>) -> Result<Lookup<T>, Failure> {
    match r {
        Err(strata::Error::WrongType) if matches!(ctx.session.block_mode, BlockMode::Serve(_)) => {
            Ok(Lookup::Empty { other_type: true })
        }
        r => Ok(match r? {
            Some(found) => Lookup::Found(found),
            None => Lookup::Empty { other_type: false },
        }),
    }
}

/// A long of at least 1 (`getRangeLongFromObjectOrReply(1, LONG_MAX)`); any failure replies `msg`.
fn at_least_one(a: &[u8], msg: &str) -> Result<u64, Failure> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 1 => Ok(n as u64),
        _ => Err(Failure::text(msg)),
    }
}

/// The `numkeys key... <where> [COUNT count]` tail of BLMPOP/BZMPOP, `a` standing at
/// `numkeys`: the keys, the `where` argument, the count (1 by default).
fn mpop_args<'a>(
    argv: &'a [Bytes],
    a: &mut Args<'a>,
) -> Result<(&'a [Bytes], &'a Bytes, u64), Failure> {
    let numkeys = at_least_one(a.value()?, errors::NUMKEYS_NOT_POSITIVE)?;
    let n = match usize::try_from(numkeys) {
        Ok(n) if n < a.remaining() => n,
        _ => return Err(cursor::syntax()),
    };
    let first = argv.len() - a.remaining();
    for _ in 0..n {
        a.key()?;
    }
    let where_arg = a.value()?;
    let mut count = None;
    while !a.is_done() {
        // COUNT once, and with a value (checked after `where`).
        if count.is_none() && a.remaining() > 1 && a.opt("COUNT") {
            count = Some(at_least_one(a.value()?, errors::COUNT_NOT_POSITIVE)?);
        } else {
            return Err(cursor::syntax());
        }
    }
    Ok((&argv[first..first + n], where_arg, count.unwrap_or(1)))
}

// ----- lists -----

/// BLPOP/BRPOP: `key [key ...] timeout`.
fn bpop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], end: ListEnd) -> Served {
    let (keys, timeout) = keys_then_timeout(argv)?;
    let deadline = deadline(timeout)?;
    let check = keys_to_check(ctx, keys);
    let popped = looked_up(ctx, ctx.session.db.lmpop(&check, end, 1))?;
    Ok(serve_or_wait(
        ctx,
        popped,
        keys,
        deadline,
        Frame::NullArray,
        |ctx, (key, items)| {
            Frame::Array(vec![
                popped_list(ctx, &key, end),
                Frame::bulk_or_null(items.into_iter().next()),
            ])
        },
    ))
}

/// The `key [key ...] timeout` arguments of BLPOP/BRPOP/BZPOPMIN/BZPOPMAX.
fn keys_then_timeout(argv: &[Bytes]) -> Result<(&[Bytes], &Bytes), Failure> {
    let rest = Args::new(argv).rest();
    let (timeout, keys) = rest.split_last().ok_or_else(cursor::syntax)?;
    Ok((keys, timeout))
}

/// Raises the events of a pop from list `key` (and `del` if it is gone); returns the key's
/// reply frame.
fn popped_list(ctx: &Ctx<'_>, key: &[u8], end: ListEnd) -> Frame {
    ctx.notify(notify::LIST, notify::list_event(end, false), key);
    notify::del_if_gone(ctx, key);
    Frame::bulk_from_slice(key)
}

/// As [`popped_list`] for a sorted set (`zpopmin` / `zpopmax`).
fn popped_zset(ctx: &Ctx<'_>, key: &[u8], max: bool) -> Frame {
    ctx.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
    notify::del_if_gone(ctx, key);
    Frame::bulk_from_slice(key)
}

fn blpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    bpop_generic(ctx, argv, ListEnd::Left)
}

fn brpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    bpop_generic(ctx, argv, ListEnd::Right)
}

/// BLMOVE/BRPOPLPUSH once their ends are known: `source destination`, then `timeout`.
fn blmove_generic(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    from: ListEnd,
    to: ListEnd,
    timeout: &[u8],
) -> Served {
    let deadline = deadline(timeout)?;
    let mut a = Args::new(argv);
    let (source, destination) = (a.key()?, a.key()?);
    let moved = ctx.session.db.lmove(source, destination, from, to);
    // A source holding another type leaves a served client blocked; a destination holding
    // another type is the client's answer (the element stays in the source), as in Redis.
    let source_is_list = || {
        matches!(
            ctx.session.db.key_type(source),
            Ok(Some(strata::KeyType::List))
        )
    };
    let moved = match moved {
        Err(strata::Error::WrongType) if source_is_list() => {
            return Err(Failure::text(errors::WRONGTYPE))
        }
        moved => looked_up(ctx, moved)?,
    };
    // Inside MULTI Redis answers a null bulk here, unlike the other blocking commands.
    Ok(serve_or_wait(
        ctx,
        moved,
        &argv[1..2],
        deadline,
        Frame::Null,
        |ctx, v| {
            let v = Some(v);
            notify::list_moved(ctx, argv, &v, from, to);
            Frame::bulk_or_null(v)
        },
    ))
}

/// LEFT / RIGHT.
const ENDS: &[(&str, ListEnd)] = &[("LEFT", ListEnd::Left), ("RIGHT", ListEnd::Right)];

fn blmove(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    let mut a = Args::new(argv);
    a.key()?;
    a.key()?;
    let (from, to) = (a.word(ENDS)?, a.word(ENDS)?);
    let timeout = a.value()?;
    a.finish()?;
    blmove_generic(ctx, argv, from, to, timeout)
}

fn brpoplpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    let mut a = Args::new(argv);
    a.key()?;
    a.key()?;
    let timeout = a.value()?;
    a.finish()?;
    blmove_generic(ctx, argv, ListEnd::Right, ListEnd::Left, timeout)
}

fn blmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    let mut a = Args::new(argv);
    let timeout = a.value()?;
    let (keys, where_arg, count) = mpop_args(argv, &mut a)?;
    let end = cursor::word_of(where_arg, ENDS)?;
    let deadline = deadline(timeout)?;
    let check = keys_to_check(ctx, keys);
    let popped = looked_up(ctx, ctx.session.db.lmpop(&check, end, count))?;
    Ok(serve_or_wait(
        ctx,
        popped,
        keys,
        deadline,
        Frame::NullArray,
        |ctx, (key, items)| {
            Frame::Array(vec![popped_list(ctx, &key, end), Frame::bulk_array(items)])
        },
    ))
}

// ----- sorted sets -----

/// BZPOPMIN/BZPOPMAX: `key [key ...] timeout`.
fn bzpop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], max: bool) -> Served {
    let (keys, timeout) = keys_then_timeout(argv)?;
    let deadline = deadline(timeout)?;
    let check = keys_to_check(ctx, keys);
    let popped = looked_up(ctx, ctx.session.db.zmpop(&check, max, 1))?;
    Ok(serve_or_wait(
        ctx,
        popped,
        keys,
        deadline,
        Frame::NullArray,
        |ctx, (key, items)| {
            let mut out = vec![popped_zset(ctx, &key, max)];
            if let Some((member, score)) = items.into_iter().next() {
                out.push(Frame::bulk(member));
                out.push(Frame::Double(score));
            }
            Frame::Array(out)
        },
    ))
}

fn bzpopmin(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    bzpop_generic(ctx, argv, false)
}

fn bzpopmax(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    bzpop_generic(ctx, argv, true)
}

fn bzmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Served {
    let mut a = Args::new(argv);
    let timeout = a.value()?;
    let (keys, where_arg, count) = mpop_args(argv, &mut a)?;
    let max = cursor::word_of(where_arg, &[("MIN", false), ("MAX", true)])?;
    let deadline = deadline(timeout)?;
    let check = keys_to_check(ctx, keys);
    let popped = looked_up(ctx, ctx.session.db.zmpop(&check, max, count))?;
    Ok(serve_or_wait(
        ctx,
        popped,
        keys,
        deadline,
        Frame::NullArray,
        |ctx, (key, items)| {
            let pairs = items
                .into_iter()
                .map(|(m, s)| Frame::Array(vec![Frame::bulk(m), Frame::Double(s)]));
            Frame::Array(vec![
                popped_zset(ctx, &key, max),
                Frame::Array(pairs.collect()),
            ])
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(a: &str) -> Result<u64, String> {
        timeout_ms(a.as_bytes()).map_err(|f| match f.0 {
            Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
            other => format!("{other:?}"),
        })
    }

    fn run(session: &mut crate::Session, args: &[&str]) -> Outcome {
        let argv: Vec<Bytes> = args
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        crate::execute(
            &mut Ctx {
                session,
                server: &crate::testing::NoServer::default(),
            },
            &argv,
        )
    }

    fn waits(outcome: Outcome) -> Result<BlockRequest, String> {
        match outcome {
            Outcome::Block(req) => Ok(req),
            other => Err(format!("answered {other:?} instead of waiting")),
        }
    }

    #[test]
    fn block_modes() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = crate::Session::new(1, strata::Db::open(dir.path())?, false);
        // Block: a request for the keys, with a deadline for a non-zero timeout.
        let req = waits(run(&mut s, &["BLPOP", "a", "b", "0"]))?;
        assert_eq!(req.keys, vec![Bytes::from("a"), Bytes::from("b")]);
        assert_eq!(req.deadline, None);
        let req = waits(run(&mut s, &["BZMPOP", "0.5", "1", "z", "MIN"]))?;
        assert_eq!(req.keys, vec![Bytes::from("z")]);
        assert!(req.deadline.is_some());
        // NoBlock: the timeout reply at once (a null bulk for BLMOVE, as Redis inside MULTI).
        s.block_mode = BlockMode::NoBlock;
        assert_eq!(
            run(&mut s, &["BRPOP", "a", "0"]),
            Outcome::Reply(Frame::NullArray)
        );
        assert_eq!(
            run(&mut s, &["BLMOVE", "a", "b", "LEFT", "LEFT", "0"]),
            Outcome::Reply(Frame::Null)
        );
        // Serve: only the signalled key is consulted.
        run(&mut s, &["RPUSH", "a", "x"]);
        run(&mut s, &["RPUSH", "b", "y"]);
        s.block_mode = BlockMode::Serve(Bytes::from("b"));
        assert_eq!(
            run(&mut s, &["BLPOP", "a", "b", "0"]),
            Outcome::Reply(Frame::Array(vec![Frame::bulk("b"), Frame::bulk("y")]))
        );
        let req = waits(run(&mut s, &["BLPOP", "a", "b", "0"]))?;
        assert!(!req.other_type);
        // A signalled key of another type: wait on, and say so (its next waiter may try it).
        run(&mut s, &["SET", "b", "string"]);
        let req = waits(run(&mut s, &["BLPOP", "a", "b", "0"]))?;
        assert!(req.other_type);
        Ok(())
    }

    #[test]
    fn timeouts_read_like_redis() {
        assert_eq!(ms("0"), Ok(0));
        assert_eq!(ms("1"), Ok(1000));
        assert_eq!(ms("0.1"), Ok(100));
        assert_eq!(ms("0.0001"), Ok(1));
        assert_eq!(ms("-0"), Ok(0));
        assert_eq!(ms("-0.0001"), Ok(0));
        assert_eq!(ms("0x10"), Ok(16000));
        assert_eq!(ms("1e-400"), Ok(1));
        let negative = Err(TIMEOUT_NEGATIVE.to_string());
        let not_float = Err(errors::TIMEOUT_NOT_FLOAT.to_string());
        assert_eq!(ms("-1"), negative);
        assert_eq!(ms("inf"), negative);
        assert_eq!(ms("-inf"), negative);
        assert_eq!(ms("1e100"), negative);
        assert_eq!(ms("9223372036854775807"), negative);
        for bad in ["", " 1", "1 ", "abc", "nan", "1.5x"] {
            assert_eq!(ms(bad), not_float, "{bad:?}");
        }
    }

    #[test]
    fn multi_pops_check_numkeys_where_and_count_in_redis_order() {
        let mut h = crate::testing::Harness::new();
        assert_eq!(
            h.error(&["BLMPOP", "0", "0", "a", "LEFT"]),
            "ERR numkeys should be greater than 0"
        );
        assert_eq!(
            h.error(&["BLMPOP", "0", "2", "a", "LEFT"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["BLMPOP", "x", "1", "a", "UP"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["BLMPOP", "x", "1", "a", "LEFT"]),
            "ERR timeout is not a float or out of range"
        );
        assert_eq!(
            h.error(&["BZMPOP", "0", "1", "z", "MIN", "COUNT", "0"]),
            "ERR count should be greater than 0"
        );
        assert_eq!(
            h.error(&["BZMPOP", "0", "1", "z", "MIN", "COUNT"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["BZMPOP", "0", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"]),
            "ERR syntax error"
        );
        h.run(&["ZADD", "z", "1", "a", "2", "b"]);
        assert_eq!(
            h.run(&["BZMPOP", "0", "1", "z", "max", "count", "5"]),
            Frame::Array(vec![
                Frame::bulk("z"),
                Frame::Array(vec![
                    Frame::Array(vec![Frame::bulk("b"), Frame::Double(2.0)]),
                    Frame::Array(vec![Frame::bulk("a"), Frame::Double(1.0)]),
                ])
            ])
        );
        h.run(&["RPUSH", "l", "x", "y"]);
        assert_eq!(
            h.run(&["BLMPOP", "0", "1", "l", "RIGHT"]),
            Frame::Array(vec![Frame::bulk("l"), Frame::Array(vec![Frame::bulk("y")])])
        );
    }

    #[test]
    fn moves_and_pops_serve_what_is_there() {
        let mut h = crate::testing::Harness::new();
        h.run(&["RPUSH", "src", "a", "b"]);
        assert_eq!(
            h.error(&["BLMOVE", "src", "dst", "UP", "LEFT", "0"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.run(&["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"]),
            Frame::bulk("a")
        );
        assert_eq!(h.run(&["BRPOPLPUSH", "src", "dst", "0"]), Frame::bulk("b"));
        assert_eq!(h.error(&["BRPOP", "dst", "-1"]), "ERR timeout is negative");
        // BRPOPLPUSH pushed "b" at the head of dst: its tail is still "a".
        assert_eq!(
            h.run(&["BRPOP", "nothing", "dst", "0"]),
            Frame::Array(vec![Frame::bulk("dst"), Frame::bulk("a")])
        );
        h.run(&["ZADD", "z", "1", "m"]);
        assert_eq!(
            h.run(&["BZPOPMIN", "z", "0"]),
            Frame::Array(vec![Frame::bulk("z"), Frame::bulk("m"), Frame::Double(1.0)])
        );
        h.run(&["SET", "s", "v"]);
        assert_eq!(
            h.error(&["BLPOP", "s", "0"]),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
    }
}
