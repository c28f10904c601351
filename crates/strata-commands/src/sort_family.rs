//! SORT and SORT_RO: option parsing in Redis 7.0's order (so the same error wins), then one call to
//! `strata::Db::sort` or `sort_store`. SORT_RO is SORT without STORE (which it rejects as a syntax
//! error, as Redis does).

use bytes::Bytes;
use strata::SortOptions;
use strata_resp::Frame;

use crate::args::{self, is, reply};
use crate::command::*;
use crate::errors::{self, err};
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
        handler: plain!(sort),
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
        handler: plain!(sort_ro),
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

/// SORT key ... STORE destination: the destination.
fn sort_store_key(argv: &[Bytes], db: u32, out: &mut Vec<(u32, usize)>) {
    if let Some(i) = (2..argv.len().saturating_sub(1)).find(|&i| is(&argv[i], "store")) {
        out.push((db, i + 1));
    }
}

fn sort(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    sort_generic(ctx, argv, false)
}

fn sort_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    sort_generic(ctx, argv, true)
}

/// Redis's sortCommandGeneric: options in any order, the last BY/LIMIT/ASC|DESC wins, GETs
/// accumulate; an unknown word (or STORE in SORT_RO) is a syntax error.
fn sort_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], readonly: bool) -> Frame {
    reply((|| {
        let mut opts = SortOptions::default();
        let mut store: Option<&[u8]> = None;
        let mut j = 2;
        while j < argv.len() {
            let a = &argv[j][..];
            let left = argv.len() - j - 1;
            if is(a, "asc") {
                opts.desc = false;
            } else if is(a, "desc") {
                opts.desc = true;
            } else if is(a, "alpha") {
                opts.alpha = true;
            } else if is(a, "limit") && left >= 2 {
                let start = args::int(&argv[j + 1])?;
                let count = args::int(&argv[j + 2])?;
                opts.limit = Some((start, count));
                j += 2;
            } else if !readonly && is(a, "store") && left >= 1 {
                store = Some(&argv[j + 1]);
                j += 1;
            } else if is(a, "by") && left >= 1 {
                opts.by = Some(argv[j + 1].to_vec());
                j += 1;
            } else if is(a, "get") && left >= 1 {
                opts.get.push(argv[j + 1].to_vec());
                j += 1;
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 1;
        }
        let map = |e: strata::Error| match e {
            strata::Error::NotFloat => err(errors::SORT_SCORE_NOT_DOUBLE),
            e => errors::from_db(e),
        };
        match store {
            None => {
                let values = ctx.session.db.sort(&argv[1], &opts).map_err(map)?;
                Ok(Frame::Array(
                    values.into_iter().map(Frame::bulk_or_null).collect(),
                ))
            }
            Some(dst) => {
                let existed = crate::notify::existed(ctx, crate::notify::GENERIC, dst);
                crate::notify::note_absent_key(ctx, dst);
                let n = ctx
                    .session
                    .db
                    .sort_store(&argv[1], dst, &opts)
                    .map_err(map)?;
                crate::notify::stored(ctx, crate::notify::LIST, "sortstore", dst, n, existed);
                // The destination is not at the row's key positions: wake its BLPOP waiters here.
                if n > 0 && ctx.server.has_blocked_clients() {
                    ctx.server.key_ready(ctx.session.db.index(), dst);
                }
                Ok(Frame::Integer(n as i64))
            }
        }
    })())
}
