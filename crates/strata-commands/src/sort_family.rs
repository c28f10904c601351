//! SORT and SORT_RO: option parsing in Redis 7.0's order (so the same error wins), then one call to
//! `strata::Db::sort` or `sort_store`. SORT_RO is SORT without STORE (which it rejects as a syntax
//! error, as Redis does).

use bytes::Bytes;
use strata::SortOptions;
use strata_resp::Frame;

use crate::args::is;
use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
use crate::Ctx;

const COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";

/// The sort family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "sort",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | DENYOOM | MOVABLEKEYS),
        keys: Keys::Custom(Range::new(1, 1, 1), sort_store_key),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
            KeySpec::unknown(RO | ACCESS, "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
            KeySpec::unknown(OW | UPDATE, "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"),
        ],
        acl: Acl(acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS),
        handler: Handler::Reply(sort),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: COMPLEXITY,
            summary: "Sorts the elements of a list, set or sorted set, optionally by other keys' values, and returns or stores them.",
            syntax: "key [BY pattern] [offset_count: LIMIT offset count] [GET pattern [GET pattern ...]] [order: ASC | DESC] [sorting: ALPHA] [STORE destination]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sort_ro",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY | MOVABLEKEYS),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
            KeySpec::unknown(RO | ACCESS, "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
        ],
        acl: Acl(acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS),
        handler: Handler::Reply(sort_ro),
        docs: Docs {
            group: "generic",
            since: "7.0.0",
            complexity: COMPLEXITY,
            summary: "Returns the sorted elements of a list, set or sorted set: SORT without STORE.",
            syntax: "key [BY pattern] [offset_count: LIMIT offset count] [GET pattern [GET pattern ...]] [order: ASC | DESC] [sorting: ALPHA]",
            tips: &[],
        },
    },
];

/// SORT key ... STORE destination: the destination, found as Redis's `sortGetKeys` walks the
/// options (skipping the arguments of LIMIT, GET and BY); the last STORE wins, as in SORT.
fn sort_store_key(argv: &[Bytes], db: u32, out: &mut Vec<(u32, usize)>) {
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        if is(&argv[i], "limit") {
            i += 2;
        } else if is(&argv[i], "get") || is(&argv[i], "by") {
            i += 1;
        } else if is(&argv[i], "store") && i + 1 < argv.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    if let Some(i) = store {
        out.push((db, i));
    }
}

fn sort(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    sort_generic(ctx, argv, false)
}

fn sort_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    sort_generic(ctx, argv, true)
}

/// Redis's sortCommandGeneric: options in any order, the last BY/LIMIT/ASC|DESC wins, GETs
/// accumulate; an unknown word (or STORE in SORT_RO) is a syntax error. The STORE destination
/// is among the command's keys (see `sort_store_key`), so the dispatcher locks it, notes it for
/// `new` and wakes its BLPOP waiters.
fn sort_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], readonly: bool) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let mut opts = SortOptions::default();
    let mut store: Option<&[u8]> = None;
    while !a.is_done() {
        let left = a.remaining() - 1;
        if a.opt("ASC") {
            opts.desc = false;
        } else if a.opt("DESC") {
            opts.desc = true;
        } else if a.opt("ALPHA") {
            opts.alpha = true;
        } else if left >= 2 && a.opt("LIMIT") {
            opts.limit = Some((a.int()?, a.int()?));
        } else if !readonly && left >= 1 && a.opt("STORE") {
            store = Some(a.key()?);
        } else if left >= 1 && a.opt("BY") {
            let pattern = a.value()?;
            // A pattern reads keys the command does not name: ACL wants every key readable.
            if pattern.contains(&b'*') && !crate::acl::reads_every_key(ctx, argv) {
                return Err(Failure::text(errors::SORT_BY_DENIED));
            }
            opts.by = Some(pattern.to_vec());
        } else if left >= 1 && a.opt("GET") {
            if !crate::acl::reads_every_key(ctx, argv) {
                return Err(Failure::text(errors::SORT_GET_DENIED));
            }
            opts.get.push(a.value()?.to_vec());
        } else {
            return Err(syntax());
        }
    }
    let map = |e: strata::Error| match e {
        strata::Error::NotFloat => Failure::text(errors::SORT_SCORE_NOT_DOUBLE),
        e => e.into(),
    };
    let Some(dst) = store else {
        let values = ctx.session.db.sort(key, &opts).map_err(map)?;
        return Ok(Frame::Array(
            values.into_iter().map(Frame::bulk_or_null).collect(),
        ));
    };
    let existed = crate::notify::existed(ctx, crate::notify::GENERIC, dst);
    let n = ctx.session.db.sort_store(key, dst, &opts).map_err(map)?;
    crate::notify::stored(ctx, crate::notify::LIST, "sortstore", dst, n, existed);
    Ok(Frame::Integer(n as i64))
}

#[cfg(test)]
mod tests {
    use crate::errors;
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn sorts_numbers_words_and_stores() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "3", "1", "2"]);
        assert_eq!(
            h.run(&["SORT", "l", "DESC", "LIMIT", "0", "2"]),
            Frame::Array(vec![Frame::bulk("3"), Frame::bulk("2")])
        );
        assert_eq!(h.run(&["SORT", "l", "STORE", "d"]), Frame::Integer(3));
        assert_eq!(h.run(&["LLEN", "d"]), Frame::Integer(3));
        assert_eq!(h.error(&["SORT_RO", "l", "STORE", "d"]), errors::SYNTAX);
        // The last STORE is the destination, for the command and for its keys.
        assert_eq!(
            h.run(&["SORT", "l", "STORE", "x", "GET", "store", "STORE", "d2"]),
            Frame::Integer(3)
        );
        assert_eq!(h.run(&["EXISTS", "x", "d2"]), Frame::Integer(1));
        assert_eq!(
            h.run(&[
                "COMMAND", "GETKEYS", "SORT", "abc", "STORE", "invalid", "STORE", "bad", "STORE",
                "def"
            ]),
            Frame::Array(vec![Frame::bulk("abc"), Frame::bulk("def")])
        );
        assert_eq!(h.error(&["SORT", "l", "LIMIT", "0"]), errors::SYNTAX);
        h.run(&["RPUSH", "w", "b", "a"]);
        assert_eq!(h.error(&["SORT", "w"]), errors::SORT_SCORE_NOT_DOUBLE);
        assert_eq!(
            h.run(&["SORT", "w", "ALPHA"]),
            Frame::Array(vec![Frame::bulk("a"), Frame::bulk("b")])
        );
    }
}
