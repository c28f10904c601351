//! The blocking list and sorted-set commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN,
//! BZPOPMAX and BZMPOP. Each handler parses its arguments in Redis's order (so the same error
//! wins), then answers at once when a key has something to serve. When none has, what happens
//! depends on [`Session::block_mode`](crate::Session): a client's own command records a
//! [`BlockRequest`] in the session and returns a placeholder (the connection waits for a signal on
//! one of the keys or the deadline, then runs the same command again in [`BlockMode::Serve`]);
//! without blocking (MULTI, scripts) it answers as a timeout would. The waiting itself, the FIFO
//! order of blocked clients and the timeout reply belong to the server.

use std::time::{Duration, Instant};

use bytes::Bytes;
use strata::ListEnd;
use strata_resp::Frame;

use crate::args::{db, is, reply, Parsed};
use crate::command::*;
use crate::errors::{self, err};
use crate::notify;
use crate::{BlockMode, BlockRequest, Ctx};

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
        handler: plain!(blpop),
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
        handler: plain!(brpop),
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
        handler: plain!(brpoplpush),
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
        handler: plain!(blmove),
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
        handler: plain!(blmpop),
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
        handler: plain!(bzpopmin),
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
        handler: plain!(bzpopmax),
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
        handler: plain!(bzmpop),
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
pub fn timeout_ms(a: &[u8]) -> Parsed<u64> {
    let not_float = || err(errors::TIMEOUT_NOT_FLOAT);
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
        return Err(err(TIMEOUT_NEGATIVE));
    }
    Ok(tval as u64)
}

/// The deadline for a timeout argument: `None` waits forever.
fn deadline(a: &[u8]) -> Parsed<Option<Instant>> {
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

/// Nothing to serve: block (record the request, reply a placeholder) or, when blocking is not
/// allowed, reply `immediate` (what Redis answers inside MULTI).
fn nothing_to_serve(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    deadline: Option<Instant>,
    immediate: Frame,
) -> Frame {
    if ctx.session.block_mode == BlockMode::NoBlock {
        return immediate;
    }
    ctx.session.blocked = Some(BlockRequest {
        db: ctx.session.db.index(),
        keys: keys.to_vec(),
        deadline,
    });
    Frame::NullArray
}

/// The storage's answer for the keys a blocking command looked at. While a blocked client is
/// served (see [`BlockMode::Serve`]), a signalled key holding another type leaves it blocked, as
/// Redis serves list waiters only from lists and sorted-set waiters only from sorted sets: the
/// request is recorded again and the reply is the WRONGTYPE error, which tells the server to try
/// the key's next waiter. Otherwise errors are replies as usual.
fn looked_up<T>(
    ctx: &mut Ctx<'_>,
    r: strata::Result<T>,
    keys: &[Bytes],
    deadline: Option<Instant>,
) -> Parsed<T> {
    match r {
        Err(strata::Error::WrongType) if matches!(ctx.session.block_mode, BlockMode::Serve(_)) => {
            nothing_to_serve(ctx, keys, deadline, Frame::NullArray);
            Err(err(errors::WRONGTYPE))
        }
        r => db(r),
    }
}

/// A long of at least 1 (`getRangeLongFromObjectOrReply(1, LONG_MAX)`); any failure replies `msg`.
fn at_least_one(a: &[u8], msg: &str) -> Parsed<u64> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 1 => Ok(n as u64),
        _ => Err(err(msg)),
    }
}

/// The `numkeys key... <where> [COUNT count]` tail of BLMPOP/BZMPOP starting at `numkeys_idx`:
/// the keys, the `where` argument, the count (1 by default).
fn mpop_args(argv: &[Bytes], numkeys_idx: usize) -> Parsed<(&[Bytes], &Bytes, u64)> {
    let numkeys = at_least_one(&argv[numkeys_idx], errors::NUMKEYS_NOT_POSITIVE)?;
    let where_idx = match usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(numkeys_idx + 1))
    {
        Some(w) if w < argv.len() => w,
        _ => return Err(err(errors::SYNTAX)),
    };
    Ok((
        &argv[numkeys_idx + 1..where_idx],
        &argv[where_idx],
        mpop_count(argv, where_idx + 1)?,
    ))
}

/// The optional `COUNT count` from `start` on (checked after `where`).
fn mpop_count(argv: &[Bytes], start: usize) -> Parsed<u64> {
    let mut count = None;
    let mut j = start;
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
    Ok(count.unwrap_or(1))
}

// ----- lists -----

fn bpop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], end: ListEnd) -> Frame {
    reply((|| {
        let last = argv.len() - 1;
        let deadline = deadline(&argv[last])?;
        let keys = &argv[1..last];
        let check = keys_to_check(ctx, keys);
        let popped = ctx.session.db.lmpop(&check, end, 1);
        match looked_up(ctx, popped, keys, deadline)? {
            Some((key, items)) => Ok(Frame::Array(vec![
                popped_list(ctx, &key, end),
                Frame::bulk_or_null(items.into_iter().next()),
            ])),
            None => Ok(nothing_to_serve(ctx, keys, deadline, Frame::NullArray)),
        }
    })())
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

fn blpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    bpop_generic(ctx, argv, ListEnd::Left)
}

fn brpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    bpop_generic(ctx, argv, ListEnd::Right)
}

fn blmove_generic(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    from: ListEnd,
    to: ListEnd,
    timeout: &[u8],
) -> Frame {
    reply((|| {
        let deadline = deadline(timeout)?;
        let moved = ctx.session.db.lmove(&argv[1], &argv[2], from, to);
        // A source holding another type leaves a served client blocked; a destination holding
        // another type is the client's answer (the element stays in the source), as in Redis.
        let source_is_list = || {
            matches!(
                ctx.session.db.key_type(&argv[1]),
                Ok(Some(strata::KeyType::List))
            )
        };
        let moved = match moved {
            Err(strata::Error::WrongType) if source_is_list() => {
                return Err(err(errors::WRONGTYPE))
            }
            moved => looked_up(ctx, moved, &argv[1..2], deadline)?,
        };
        match moved {
            Some(v) => {
                let v = Some(v);
                notify::list_moved(ctx, argv, &v, from, to);
                Ok(Frame::bulk_or_null(v))
            }
            // Inside MULTI Redis answers a null bulk here, unlike the other blocking commands.
            None => Ok(nothing_to_serve(ctx, &argv[1..2], deadline, Frame::Null)),
        }
    })())
}

fn blmove(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let ends =
        crate::args::end_arg(&argv[3]).and_then(|from| Ok((from, crate::args::end_arg(&argv[4])?)));
    match ends {
        Ok((from, to)) => blmove_generic(ctx, argv, from, to, &argv[5]),
        Err(e) => e,
    }
}

fn brpoplpush(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    blmove_generic(ctx, argv, ListEnd::Right, ListEnd::Left, &argv[3])
}

fn blmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (keys, where_arg, count) = mpop_args(argv, 2)?;
        let end = crate::args::end_arg(where_arg)?;
        let deadline = deadline(&argv[1])?;
        let check = keys_to_check(ctx, keys);
        let popped = ctx.session.db.lmpop(&check, end, count);
        match looked_up(ctx, popped, keys, deadline)? {
            Some((key, items)) => Ok(Frame::Array(vec![
                popped_list(ctx, &key, end),
                Frame::bulk_array(items),
            ])),
            None => Ok(nothing_to_serve(ctx, keys, deadline, Frame::NullArray)),
        }
    })())
}

// ----- sorted sets -----

fn bzpop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], max: bool) -> Frame {
    reply((|| {
        let last = argv.len() - 1;
        let deadline = deadline(&argv[last])?;
        let keys = &argv[1..last];
        let check = keys_to_check(ctx, keys);
        let popped = ctx.session.db.zmpop(&check, max, 1);
        match looked_up(ctx, popped, keys, deadline)? {
            Some((key, items)) => {
                let mut out = vec![popped_zset(ctx, &key, max)];
                if let Some((member, score)) = items.into_iter().next() {
                    out.push(Frame::bulk(member));
                    out.push(Frame::Double(score));
                }
                Ok(Frame::Array(out))
            }
            None => Ok(nothing_to_serve(ctx, keys, deadline, Frame::NullArray)),
        }
    })())
}

fn bzpopmin(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    bzpop_generic(ctx, argv, false)
}

fn bzpopmax(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    bzpop_generic(ctx, argv, true)
}

fn bzmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (keys, where_arg, count) = mpop_args(argv, 2)?;
        let max = if is(where_arg, "min") {
            false
        } else if is(where_arg, "max") {
            true
        } else {
            return Err(err(errors::SYNTAX));
        };
        let deadline = deadline(&argv[1])?;
        let check = keys_to_check(ctx, keys);
        let popped = ctx.session.db.zmpop(&check, max, count);
        match looked_up(ctx, popped, keys, deadline)? {
            Some((key, items)) => Ok(Frame::Array(vec![
                popped_zset(ctx, &key, max),
                Frame::Array(
                    items
                        .into_iter()
                        .map(|(m, s)| Frame::Array(vec![Frame::bulk(m), Frame::Double(s)]))
                        .collect(),
                ),
            ])),
            None => Ok(nothing_to_serve(ctx, keys, deadline, Frame::NullArray)),
        }
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(a: &str) -> Result<u64, String> {
        timeout_ms(a.as_bytes()).map_err(|f| match f {
            Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
            other => format!("{other:?}"),
        })
    }

    fn run(session: &mut crate::Session, args: &[&str]) -> Frame {
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

    #[test]
    fn block_modes() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut s = crate::Session::new(1, strata::Db::open(dir.path())?, false);
        // Block: a request for the keys, with a deadline for a non-zero timeout.
        run(&mut s, &["BLPOP", "a", "b", "0"]);
        let req = s.blocked.take().ok_or("not blocked")?;
        assert_eq!(req.keys, vec![Bytes::from("a"), Bytes::from("b")]);
        assert_eq!(req.deadline, None);
        run(&mut s, &["BZMPOP", "0.5", "1", "z", "MIN"]);
        let req = s.blocked.take().ok_or("not blocked")?;
        assert_eq!(req.keys, vec![Bytes::from("z")]);
        assert!(req.deadline.is_some());
        // NoBlock: the timeout reply at once (a null bulk for BLMOVE, as Redis inside MULTI).
        s.block_mode = BlockMode::NoBlock;
        assert_eq!(run(&mut s, &["BRPOP", "a", "0"]), Frame::NullArray);
        assert_eq!(
            run(&mut s, &["BLMOVE", "a", "b", "LEFT", "LEFT", "0"]),
            Frame::Null
        );
        assert!(s.blocked.is_none());
        // Serve: only the signalled key is consulted.
        run(&mut s, &["RPUSH", "a", "x"]);
        run(&mut s, &["RPUSH", "b", "y"]);
        s.block_mode = BlockMode::Serve(Bytes::from("b"));
        assert_eq!(
            run(&mut s, &["BLPOP", "a", "b", "0"]),
            Frame::Array(vec![Frame::bulk("b"), Frame::bulk("y")])
        );
        run(&mut s, &["BLPOP", "a", "b", "0"]);
        assert!(s.blocked.take().is_some());
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
}
