//! Sorted-set commands (Redis's "sorted-set" group): ZADD, the ZRANGE family, pops, random
//! members, set algebra (ZUNION/ZINTER/ZDIFF and their STORE forms) and ZSCAN. Each row of
//! `COMMANDS` names its handler below; handlers read their arguments with the cursor ([`Args`])
//! and Redis's exact rules (scores as C's `strtod` reads them), call `strata::Db`, and reply,
//! `?` carrying errors. Scores are replied as doubles
//! (`%.17g` bulk strings in RESP2, `,` doubles in RESP3).

use bytes::Bytes;
use strata::num::strtod;
use strata::{
    Aggregate, KeyType, LexBound, LexRange, ScoreRange, ScoredMember, SetOp, ZAddCompare,
    ZAddCondition, ZAddOptions, ZRangeBy, ZRangeSpec,
};
use strata_resp::{Frame, Protocol};

use crate::args::{self, parse_double, Parsed};
use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors::{self, err};
use crate::notify;
use crate::scan;
use crate::Ctx;

/// The sorted-set family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "zadd",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zadd),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
            summary: "Puts members with scores into a sorted set, or updates their scores.",
            syntax: "key [condition: NX | XX] [comparison: GT | LT] [change: CH] [increment: INCR] score member [score member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zincrby",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zincrby),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(log(N)) where N is the number of elements in the sorted set.",
            summary: "Adds an amount to the score of a sorted-set member.",
            syntax: "key increment member",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrem",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrem),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
            summary: "Takes members out of a sorted set.",
            syntax: "key member [member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zcard",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zcard),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(1)",
            summary: "Counts the members of a sorted set.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zscore",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zscore),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(1)",
            summary: "Gives the score of a sorted-set member.",
            syntax: "key member",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zmscore",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zmscore),
        docs: Docs {
            group: "sorted-set",
            since: "6.2.0",
            complexity: "O(N) where N is the number of members being requested.",
            summary: "Gives the scores of several sorted-set members.",
            syntax: "key member [member ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrank",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrank),
        docs: Docs {
            group: "sorted-set",
            since: "2.0.0",
            complexity: "O(log(N))",
            summary: "Gives the position of a member in a sorted set, lowest score first.",
            syntax: "key member",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrevrank",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrevrank),
        docs: Docs {
            group: "sorted-set",
            since: "2.0.0",
            complexity: "O(log(N))",
            summary: "Gives the position of a member in a sorted set, highest score first.",
            syntax: "key member",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zcount",
        arity: Arity::Exactly(4),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zcount),
        docs: Docs {
            group: "sorted-set",
            since: "2.0.0",
            complexity: "O(log(N)) with N being the number of elements in the sorted set.",
            summary: "Counts the sorted-set members whose scores fall in a range.",
            syntax: "key min max",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zlexcount",
        arity: Arity::Exactly(4),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zlexcount),
        docs: Docs {
            group: "sorted-set",
            since: "2.8.9",
            complexity: "O(log(N)) with N being the number of elements in the sorted set.",
            summary: "Counts the sorted-set members that fall in a lexicographic range.",
            syntax: "key min:string max:string",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrange",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrange),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
            summary: "Gives sorted-set members by position, score or lexicographic range.",
            syntax: "key start:string stop:string [sortby: BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrangestore",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
            KeySpec::range(RO | ACCESS, 2, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrangestore),
        docs: Docs {
            group: "sorted-set",
            since: "6.2.0",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
            summary: "Saves a range of a sorted set under a destination key.",
            syntax: "dst:key src:key min:string max:string [sortby: BYSCORE | BYLEX] [REV] [LIMIT offset count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrevrange",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrevrange),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
            summary: "Gives sorted-set members by position, highest score first.",
            syntax: "key start stop [WITHSCORES]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrangebyscore",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrangebyscore),
        docs: Docs {
            group: "sorted-set",
            since: "1.0.5",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
            summary: "Gives sorted-set members whose scores fall in a range.",
            syntax: "key min max [WITHSCORES] [LIMIT offset count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrevrangebyscore",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrevrangebyscore),
        docs: Docs {
            group: "sorted-set",
            since: "2.2.0",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
            summary: "Gives sorted-set members whose scores fall in a range, highest first.",
            syntax: "key max min [WITHSCORES] [LIMIT offset count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrangebylex",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrangebylex),
        docs: Docs {
            group: "sorted-set",
            since: "2.8.9",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
            summary: "Gives sorted-set members in a lexicographic range.",
            syntax: "key min:string max:string [LIMIT offset count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrevrangebylex",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrevrangebylex),
        docs: Docs {
            group: "sorted-set",
            since: "2.8.9",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
            summary: "Gives sorted-set members in a lexicographic range, in reverse order.",
            syntax: "key max:string min:string [LIMIT offset count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zremrangebyrank",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zremrangebyrank),
        docs: Docs {
            group: "sorted-set",
            since: "2.0.0",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
            summary: "Deletes the sorted-set members between two positions.",
            syntax: "key start stop",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zremrangebyscore",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zremrangebyscore),
        docs: Docs {
            group: "sorted-set",
            since: "1.2.0",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
            summary: "Deletes the sorted-set members whose scores fall in a range.",
            syntax: "key min max",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zremrangebylex",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zremrangebylex),
        docs: Docs {
            group: "sorted-set",
            since: "2.8.9",
            complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
            summary: "Deletes the sorted-set members in a lexicographic range.",
            syntax: "key min:string max:string",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zpopmin",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zpopmin),
        docs: Docs {
            group: "sorted-set",
            since: "5.0.0",
            complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
            summary: "Removes and gives back the lowest-scored members of a sorted set.",
            syntax: "key [count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zpopmax",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zpopmax),
        docs: Docs {
            group: "sorted-set",
            since: "5.0.0",
            complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
            summary: "Removes and gives back the highest-scored members of a sorted set.",
            syntax: "key [count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zmpop",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 1),
        key_specs: &[
            KeySpec::keynum(RW | ACCESS | DELETE, 1, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zmpop),
        docs: Docs {
            group: "sorted-set",
            since: "7.0.0",
            complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
            summary: "Removes and gives back the lowest- or highest-scored members of the first non-empty sorted set among several keys.",
            syntax: "numkeys key [key ...] <where: MIN | MAX> [COUNT count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zrandmember",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zrandmember),
        docs: Docs {
            group: "sorted-set",
            since: "6.2.0",
            complexity: "O(N) where N is the number of elements returned",
            summary: "Picks one or more members of a sorted set at random.",
            syntax: "key [options: count [WITHSCORES]]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "zunion",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 1),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 1, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zunion),
        docs: Docs {
            group: "sorted-set",
            since: "6.2.0",
            complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
            summary: "Gives the union of sorted sets, combining the scores.",
            syntax: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [aggregate: AGGREGATE <SUM | MIN | MAX>] [WITHSCORES]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zinter",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 1),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 1, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zinter),
        docs: Docs {
            group: "sorted-set",
            since: "6.2.0",
            complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
            summary: "Gives the intersection of sorted sets, combining the scores.",
            syntax: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [aggregate: AGGREGATE <SUM | MIN | MAX>] [WITHSCORES]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zdiff",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 1),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 1, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zdiff),
        docs: Docs {
            group: "sorted-set",
            since: "6.2.0",
            complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
            summary: "Gives the members of the first sorted set that no other given set has.",
            syntax: "numkeys key [key ...] [WITHSCORES]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zunionstore",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | DENYOOM | MOVABLEKEYS),
        keys: Keys::Counted(Range::new(1, 1, 1), 2),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zunionstore),
        docs: Docs {
            group: "sorted-set",
            since: "2.0.0",
            complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
            summary: "Saves the union of sorted sets under a destination key.",
            syntax: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [aggregate: AGGREGATE <SUM | MIN | MAX>]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zinterstore",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | DENYOOM | MOVABLEKEYS),
        keys: Keys::Counted(Range::new(1, 1, 1), 2),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zinterstore),
        docs: Docs {
            group: "sorted-set",
            since: "2.0.0",
            complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
            summary: "Saves the intersection of sorted sets under a destination key.",
            syntax: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [aggregate: AGGREGATE <SUM | MIN | MAX>]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zdiffstore",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | DENYOOM | MOVABLEKEYS),
        keys: Keys::Counted(Range::new(1, 1, 1), 2),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
            KeySpec::keynum(RO | ACCESS, 2, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zdiffstore),
        docs: Docs {
            group: "sorted-set",
            since: "6.2.0",
            complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
            summary: "Saves the difference of sorted sets under a destination key.",
            syntax: "destination numkeys key [key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zintercard",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | MOVABLEKEYS),
        keys: Keys::Counted(Range::NONE, 1),
        key_specs: &[
            KeySpec::keynum(RO | ACCESS, 1, 0, 1, 1),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zintercard),
        docs: Docs {
            group: "sorted-set",
            since: "7.0.0",
            complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
            summary: "Counts the members common to all the given sorted sets.",
            syntax: "numkeys key [key ...] [LIMIT limit:integer]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "zscan",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::SORTEDSET),
        handler: Handler::Reply(zscan),
        docs: Docs {
            group: "sorted-set",
            since: "2.8.0",
            complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
            summary: "Walks the members and scores of a sorted set a batch at a time with a cursor.",
            syntax: "key cursor [MATCH pattern] [COUNT count]",
            tips: &["nondeterministic_output"],
        },
    },
];

fn score_arg(a: &[u8]) -> Parsed<f64> {
    parse_double(a).ok_or_else(|| err(errors::NOT_FLOAT))
}

/// One end of a score range (`1.5`, `(1.5`, `-inf`, ...), as `zslParseRange` reads it.
fn score_bound(a: &[u8]) -> Option<(f64, bool)> {
    let (body, exclusive) = match a.first() {
        Some(b'(') => (&a[1..], true),
        _ => (a, false),
    };
    let (v, n, _) = strtod(body);
    // C stops at a NUL byte: what follows it is invisible to strtod's caller.
    if (n != body.len() && body[n] != 0) || v.is_nan() {
        return None;
    }
    Some((v, exclusive))
}

fn score_range(min: &[u8], max: &[u8]) -> Parsed<ScoreRange> {
    match (score_bound(min), score_bound(max)) {
        (Some((min, min_exclusive)), Some((max, max_exclusive))) => Ok(ScoreRange {
            min,
            min_exclusive,
            max,
            max_exclusive,
        }),
        _ => Err(err(errors::MIN_MAX_NOT_FLOAT)),
    }
}

fn lex_bound(a: &[u8]) -> Option<LexBound> {
    match a.first() {
        Some(b'+') if a.len() == 1 || a[1] == 0 => Some(LexBound::PosInf),
        Some(b'-') if a.len() == 1 || a[1] == 0 => Some(LexBound::NegInf),
        Some(b'(') => Some(LexBound::Exclusive(a[1..].to_vec())),
        Some(b'[') => Some(LexBound::Inclusive(a[1..].to_vec())),
        _ => None,
    }
}

fn lex_range(min: &[u8], max: &[u8]) -> Parsed<LexRange> {
    match (lex_bound(min), lex_bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(err(errors::MIN_MAX_NOT_LEX)),
    }
}

/// A "positive long" argument (`getPositiveLongFromObjectOrReply`): any failure replies `msg`.
fn positive(a: &[u8], msg: &str) -> Parsed<i64> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(err(msg)),
    }
}

/// A long in `min..=max` (`getRangeLongFromObjectOrReply` with a message): any failure replies `msg`.
fn long_at_least_one(a: &[u8], msg: &str) -> Parsed<i64> {
    match strata::num::parse_i64(a) {
        Some(n) if n >= 1 => Ok(n),
        _ => Err(err(msg)),
    }
}

// ----- replies -----

fn resp3(ctx: &Ctx<'_>) -> bool {
    ctx.session.protocol == Protocol::Resp3
}

/// Members (and scores): RESP2 a flat array, RESP3 with scores an array of pairs.
fn scored_reply(items: Vec<ScoredMember>, withscores: bool, nested: bool) -> Frame {
    if !withscores {
        return Frame::Array(items.into_iter().map(|(m, _)| Frame::bulk(m)).collect());
    }
    if nested {
        Frame::Array(
            items
                .into_iter()
                .map(|(m, s)| Frame::Array(vec![Frame::bulk(m), Frame::Double(s)]))
                .collect(),
        )
    } else {
        let mut out = Vec::with_capacity(items.len() * 2);
        for (m, s) in items {
            out.push(Frame::bulk(m));
            out.push(Frame::Double(s));
        }
        Frame::Array(out)
    }
}

fn nan_error(e: strata::Error) -> Frame {
    match e {
        strata::Error::NanOrInfinity => err(errors::SCORE_NAN),
        e => errors::from_db(e),
    }
}

/// A score as Redis's compact (listpack) encoding stores it (`d2string`): integral values within
/// ±2^62 as integers, the rest as `%.17g`.
pub fn d2string(v: f64) -> String {
    const LIMIT: f64 = (i64::MAX / 2) as f64;
    if v.is_finite() && (-LIMIT..=LIMIT).contains(&v) && v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        strata_resp::format_double(v)
    }
}

// ----- handlers -----

/// ZADD's flags, before the score-member pairs.
#[derive(Default)]
struct ZAddFlags {
    nx: bool,
    xx: bool,
    ch: bool,
    incr: bool,
    gt: bool,
    lt: bool,
}

fn zadd(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let mut f = ZAddFlags::default();
    loop {
        let flag = if a.opt("NX") {
            &mut f.nx
        } else if a.opt("XX") {
            &mut f.xx
        } else if a.opt("CH") {
            &mut f.ch
        } else if a.opt("INCR") {
            &mut f.incr
        } else if a.opt("GT") {
            &mut f.gt
        } else if a.opt("LT") {
            &mut f.lt
        } else {
            break;
        };
        *flag = true;
    }
    let elements = a.rest();
    if elements.is_empty() || elements.len() & 1 == 1 {
        return Err(syntax());
    }
    if f.nx && f.xx {
        return Err(Failure::text(errors::ZADD_XX_AND_NX));
    }
    if f.nx && (f.gt || f.lt) || (f.gt && f.lt) {
        return Err(Failure::text(errors::ZADD_GT_LT_NX));
    }
    if f.incr && elements.len() > 2 {
        return Err(Failure::text(errors::ZADD_INCR_PAIR));
    }
    let mut pairs = Vec::with_capacity(elements.len() / 2);
    for pair in elements.chunks_exact(2) {
        pairs.push((score_arg(&pair[0])?, &pair[1][..]));
    }
    let opts = ZAddOptions {
        condition: if f.nx {
            ZAddCondition::IfAbsent
        } else if f.xx {
            ZAddCondition::IfPresent
        } else {
            ZAddCondition::Always
        },
        compare: if f.gt {
            ZAddCompare::Greater
        } else if f.lt {
            ZAddCompare::Less
        } else {
            ZAddCompare::Any
        },
        incr: f.incr,
    };
    let out = ctx.session.db.zadd(key, &pairs, opts).map_err(nan_error)?;
    if out.added + out.updated > 0 {
        ctx.notify(notify::ZSET, if f.incr { "zincr" } else { "zadd" }, key);
    }
    Ok(if f.incr {
        out.score.map_or(Frame::Null, Frame::Double)
    } else if f.ch {
        Frame::Integer((out.added + out.updated) as i64)
    } else {
        Frame::Integer(out.added as i64)
    })
}

fn zincrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let by = score_arg(a.value()?)?;
    let member = a.value()?;
    let s = ctx.session.db.zincrby(key, by, member).map_err(nan_error)?;
    if by != 0.0 {
        ctx.notify(notify::ZSET, "zincr", key);
    }
    Ok(Frame::Double(s))
}

fn zrem(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let n = ctx.session.db.zrem(key, &a.rest_slices())?;
    if n > 0 {
        ctx.notify(notify::ZSET, "zrem", key);
        notify::del_if_gone(ctx, key);
    }
    Ok(Frame::Integer(n as i64))
}

fn zcard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::Integer(ctx.session.db.zcard(key)? as i64))
}

fn zscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, member) = (a.key()?, a.value()?);
    Ok(ctx
        .session
        .db
        .zscore(key, member)?
        .map_or(Frame::Null, Frame::Double))
}

fn zmscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let scores = ctx.session.db.zmscore(key, &a.rest_slices())?;
    Ok(Frame::Array(
        scores
            .into_iter()
            .map(|s| s.map_or(Frame::Null, Frame::Double))
            .collect(),
    ))
}

fn rank_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], rev: bool) -> Reply {
    let mut a = Args::new(argv);
    let (key, member) = (a.key()?, a.value()?);
    Ok(ctx
        .session
        .db
        .zrank(key, member, rev)?
        .map_or(Frame::Null, |r| Frame::Integer(r as i64)))
}

fn zrank(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    rank_generic(ctx, argv, false)
}

fn zrevrank(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    rank_generic(ctx, argv, true)
}

fn zcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let range = score_range(a.value()?, a.value()?)?;
    Ok(Frame::Integer(ctx.session.db.zcount(key, &range)? as i64))
}

fn zlexcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let range = lex_range(a.value()?, a.value()?)?;
    Ok(Frame::Integer(ctx.session.db.zlexcount(key, &range)? as i64))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeKind {
    Rank,
    Score,
    Lex,
}

/// Redis's zrangeGenericCommand (ZRANGESTORE when `store`: a destination key first);
/// `kind`/`rev` are fixed by the legacy commands and chosen by options otherwise.
fn zrange_generic(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    store: bool,
    kind: Option<RangeKind>,
    rev: Option<bool>,
) -> Reply {
    let mut a = Args::new(argv);
    let dst = if store { Some(a.key()?) } else { None };
    let (src, lo, hi) = (a.key()?, a.value()?, a.value()?);
    let (mut kind, mut rev) = (kind, rev);
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    while !a.is_done() {
        let left = a.remaining() - 1;
        if !store && a.opt("WITHSCORES") {
            withscores = true;
        } else if left >= 2 && a.opt("LIMIT") {
            offset = a.int()?;
            limit = a.int()?;
        } else if rev.is_none() && a.opt("REV") {
            rev = Some(true);
        } else if kind.is_none() && a.opt("BYLEX") {
            kind = Some(RangeKind::Lex);
        } else if kind.is_none() && a.opt("BYSCORE") {
            kind = Some(RangeKind::Score);
        } else {
            return Err(syntax());
        }
    }
    let kind = kind.unwrap_or(RangeKind::Rank);
    let rev = rev.unwrap_or(false);
    if limit != -1 && kind == RangeKind::Rank {
        return Err(Failure::text(errors::LIMIT_NEEDS_BYSCORE_OR_BYLEX));
    }
    if withscores && kind == RangeKind::Lex {
        return Err(Failure::text(errors::WITHSCORES_WITH_BYLEX));
    }
    let (mut lo, mut hi) = (&lo[..], &hi[..]);
    if rev && kind != RangeKind::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let by = match kind {
        RangeKind::Rank => ZRangeBy::Rank(args::int(lo)?, args::int(hi)?),
        RangeKind::Score => ZRangeBy::Score(score_range(lo, hi)?),
        RangeKind::Lex => ZRangeBy::Lex(lex_range(lo, hi)?),
    };
    let spec = ZRangeSpec {
        by,
        rev,
        limit: if kind == RangeKind::Rank {
            None
        } else {
            Some((offset, limit))
        },
    };
    if let Some(dst) = dst {
        let existed = notify::existed(ctx, notify::GENERIC, dst);
        let n = ctx.session.db.zrangestore(dst, src, &spec)?;
        notify::stored(ctx, notify::ZSET, "zrangestore", dst, n as u64, existed);
        return Ok(Frame::Integer(n as i64));
    }
    let items = ctx.session.db.zrange(src, &spec)?;
    Ok(scored_reply(items, withscores, resp3(ctx)))
}

fn zrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zrange_generic(ctx, argv, false, None, None)
}

fn zrangestore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zrange_generic(ctx, argv, true, None, None)
}

fn zrevrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zrange_generic(ctx, argv, false, Some(RangeKind::Rank), Some(true))
}

fn zrangebyscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zrange_generic(ctx, argv, false, Some(RangeKind::Score), Some(false))
}

fn zrevrangebyscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zrange_generic(ctx, argv, false, Some(RangeKind::Score), Some(true))
}

fn zrangebylex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zrange_generic(ctx, argv, false, Some(RangeKind::Lex), Some(false))
}

fn zrevrangebylex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zrange_generic(ctx, argv, false, Some(RangeKind::Lex), Some(true))
}

/// ZREMRANGEBYRANK / BYSCORE / BYLEX key min max; `event` is the command's name.
fn zremrange_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: RangeKind, event: &str) -> Reply {
    let mut a = Args::new(argv);
    let (key, lo, hi) = (a.key()?, a.value()?, a.value()?);
    let by = match kind {
        RangeKind::Rank => ZRangeBy::Rank(args::int(lo)?, args::int(hi)?),
        RangeKind::Score => ZRangeBy::Score(score_range(lo, hi)?),
        RangeKind::Lex => ZRangeBy::Lex(lex_range(lo, hi)?),
    };
    let n = ctx.session.db.zremrange(key, &by)?;
    if n > 0 && ctx.notifies(notify::ZSET | notify::GENERIC) {
        ctx.notify(notify::ZSET, event, key);
        notify::del_if_gone(ctx, key);
    }
    Ok(Frame::Integer(n as i64))
}

fn zremrangebyrank(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zremrange_generic(ctx, argv, RangeKind::Rank, "zremrangebyrank")
}

fn zremrangebyscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zremrange_generic(ctx, argv, RangeKind::Score, "zremrangebyscore")
}

fn zremrangebylex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    zremrange_generic(ctx, argv, RangeKind::Lex, "zremrangebylex")
}

fn pop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], max: bool) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    if a.remaining() > 1 {
        return Err(syntax());
    }
    let count = match a.is_done() {
        false => Some(positive(a.value()?, errors::OUT_OF_RANGE_MUST_BE_POSITIVE)? as u64),
        true => None,
    };
    let items = ctx.session.db.zpop(key, max, count.unwrap_or(1))?;
    if !items.is_empty() {
        let event = if max { "zpopmax" } else { "zpopmin" };
        ctx.notify(notify::ZSET, event, key);
        notify::del_if_gone(ctx, key);
    }
    let nested = resp3(ctx) && count.is_some();
    Ok(scored_reply(items, true, nested))
}

fn zpopmin(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    pop_generic(ctx, argv, false)
}

fn zpopmax(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    pop_generic(ctx, argv, true)
}

fn zmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let numkeys = long_at_least_one(a.value()?, errors::NUMKEYS_NOT_POSITIVE)? as u64;
    // The keys, then MIN | MAX: at least one argument must follow them.
    if numkeys >= a.remaining() as u64 {
        return Err(syntax());
    }
    let keys: Vec<&[u8]> = (0..numkeys)
        .map(|_| a.key().map(|k| &k[..]))
        .collect::<Result<_, _>>()?;
    let max = a.word(&[("MIN", false), ("MAX", true)])?;
    let mut count = None;
    while !a.is_done() {
        if count.is_some() || a.remaining() < 2 || !a.opt("COUNT") {
            return Err(syntax());
        }
        count = Some(long_at_least_one(a.value()?, errors::COUNT_NOT_POSITIVE)? as u64);
    }
    match ctx.session.db.zmpop(&keys, max, count.unwrap_or(1))? {
        None => Ok(Frame::NullArray),
        Some((key, items)) => {
            ctx.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, &key);
            notify::del_if_gone(ctx, &key);
            Ok(Frame::Array(vec![
                Frame::bulk(key),
                scored_reply(items, true, true),
            ]))
        }
    }
}

fn zrandmember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    if a.is_done() {
        let items = ctx.session.db.zrandmember(key, 1)?;
        return Ok(Frame::bulk_or_null(
            items.into_iter().next().map(|(m, _)| m),
        ));
    }
    let count = a.int()?;
    if count == i64::MIN {
        return Err(Failure(errors::value_out_of_range_between(
            -i64::MAX,
            i64::MAX,
        )));
    }
    let withscores = a.opt("WITHSCORES");
    a.finish()?;
    if withscores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(Failure::text(errors::VALUE_OUT_OF_RANGE));
    }
    let items = ctx.session.db.zrandmember(key, count)?;
    Ok(scored_reply(items, withscores, resp3(ctx)))
}

/// Which of ZUNION/ZINTER/ZDIFF[STORE] and ZINTERCARD a call is.
#[derive(Clone, Copy)]
struct SetCall {
    op: SetOp,
    /// A destination key comes first (the STORE forms).
    store: bool,
    /// ZINTERCARD.
    card_only: bool,
    /// The command's name, for its error text and event.
    name: &'static str,
}

/// ZUNION/ZINTER/ZDIFF[STORE] and ZINTERCARD (Redis's zunionInterDiffGenericCommand).
fn setop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], call: SetCall) -> Reply {
    let SetCall {
        op,
        store,
        card_only,
        name,
    } = call;
    let mut a = Args::new(argv);
    let dst = if store { Some(a.key()?) } else { None };
    let setnum = a.int()?;
    if setnum < 1 {
        return Err(Failure(errors::at_least_one_input_key(name)));
    }
    if setnum as u64 > a.remaining() as u64 {
        return Err(syntax());
    }
    let setnum = setnum as usize;
    let keys: Vec<&[u8]> = (0..setnum)
        .map(|_| a.key().map(|k| &k[..]))
        .collect::<Result<_, _>>()?;
    // Redis checks the input types before it reads the options.
    for k in &keys {
        match ctx.session.db.key_type(k)? {
            None | Some(KeyType::ZSet) | Some(KeyType::Set) => {}
            Some(_) => return Err(Failure::text(errors::WRONGTYPE)),
        }
    }
    let mut weights: Option<Vec<f64>> = None;
    let mut aggregate = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0u64;
    let algebra = op != SetOp::Diff && !card_only;
    while !a.is_done() {
        let remaining = a.remaining();
        if algebra && remaining > setnum && a.opt("WEIGHTS") {
            let mut w = Vec::with_capacity(setnum);
            for _ in 0..setnum {
                w.push(parse_double(a.value()?).ok_or_else(|| err(errors::WEIGHT_NOT_FLOAT))?);
            }
            weights = Some(w);
        } else if algebra && remaining >= 2 && a.opt("AGGREGATE") {
            aggregate = a.word(&[
                ("SUM", Aggregate::Sum),
                ("MIN", Aggregate::Min),
                ("MAX", Aggregate::Max),
            ])?;
        } else if !store && !card_only && a.opt("WITHSCORES") {
            withscores = true;
        } else if card_only && remaining >= 2 && a.opt("LIMIT") {
            limit = positive(a.value()?, errors::LIMIT_NEGATIVE)? as u64;
        } else {
            return Err(syntax());
        }
    }
    let d = &ctx.session.db;
    if card_only {
        return Ok(Frame::Integer(d.zintercard(&keys, limit)? as i64));
    }
    if let Some(dst) = dst {
        let existed = notify::existed(ctx, notify::GENERIC, dst);
        let n = ctx
            .session
            .db
            .zsetop_store(op, dst, &keys, weights.as_deref(), aggregate)?;
        notify::stored(ctx, notify::ZSET, name, dst, n, existed);
        return Ok(Frame::Integer(n as i64));
    }
    let items = d.zsetop(op, &keys, weights.as_deref(), aggregate)?;
    Ok(scored_reply(items, withscores, resp3(ctx)))
}

/// A [`SetCall`] that reads.
const fn reads(op: SetOp, name: &'static str) -> SetCall {
    SetCall {
        op,
        store: false,
        card_only: false,
        name,
    }
}

/// A [`SetCall`] that stores.
const fn stores(op: SetOp, name: &'static str) -> SetCall {
    SetCall {
        op,
        store: true,
        card_only: false,
        name,
    }
}

fn zunion(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    setop_generic(ctx, argv, reads(SetOp::Union, "zunion"))
}

fn zinter(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    setop_generic(ctx, argv, reads(SetOp::Inter, "zinter"))
}

fn zdiff(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    setop_generic(ctx, argv, reads(SetOp::Diff, "zdiff"))
}

fn zunionstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    setop_generic(ctx, argv, stores(SetOp::Union, "zunionstore"))
}

fn zinterstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    setop_generic(ctx, argv, stores(SetOp::Inter, "zinterstore"))
}

fn zdiffstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    setop_generic(ctx, argv, stores(SetOp::Diff, "zdiffstore"))
}

fn zintercard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let call = SetCall {
        card_only: true,
        ..reads(SetOp::Inter, "zintercard")
    };
    setop_generic(ctx, argv, call)
}

fn zscan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let cursor = scan::cursor(a.value()?)?;
    // A missing key answers an empty scan before the options are read (as Redis does).
    if ctx.session.db.zcard(key)? == 0 {
        return Ok(scan::reply(0, Vec::new()));
    }
    let (pattern, count) = scan::options(argv)?;
    let page = ctx.session.db.zscan(key, cursor, pattern, count)?;
    let mut out = Vec::with_capacity(page.items.len() * 2);
    for (m, s) in page.items {
        out.push(Frame::bulk(m));
        out.push(Frame::bulk(if page.compact {
            d2string(s)
        } else {
            strata_resp::format_double(s)
        }));
    }
    Ok(scan::reply(page.cursor, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_like_get_double_from_object() {
        assert_eq!(parse_double(b"0x10"), Some(16.0));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b".5"), Some(0.5));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"1e400",
            b"1e-400",
            b"nan",
            b"abc",
            b"1.5x",
        ] {
            assert_eq!(
                parse_double(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn score_bounds_accept_what_zsl_parse_range_accepts() {
        assert_eq!(score_bound(b"(1"), Some((1.0, true)));
        assert_eq!(score_bound(b""), Some((0.0, false)));
        assert_eq!(score_bound(b"("), Some((0.0, true)));
        assert_eq!(score_bound(b" 1"), Some((1.0, false)));
        assert_eq!(score_bound(b"1e400"), Some((f64::INFINITY, false)));
        assert_eq!(score_bound(b"  "), None);
        assert_eq!(score_bound(b"1 "), None);
        assert_eq!(score_bound(b"nan"), None);
    }

    use crate::testing::Harness;

    #[test]
    fn zadd_flags_conflict_as_in_redis() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["ZADD", "z", "1", "a", "2", "b"]), Frame::Integer(2));
        assert_eq!(
            h.run(&["ZADD", "z", "CH", "GT", "3", "a"]),
            Frame::Integer(1)
        );
        assert_eq!(
            h.error(&["ZADD", "z", "NX", "XX", "1", "a"]),
            errors::ZADD_XX_AND_NX
        );
        assert_eq!(
            h.error(&["ZADD", "z", "GT", "LT", "1", "a"]),
            errors::ZADD_GT_LT_NX
        );
        assert_eq!(
            h.error(&["ZADD", "z", "INCR", "1", "a", "2", "b"]),
            errors::ZADD_INCR_PAIR
        );
        assert_eq!(h.error(&["ZADD", "z", "NX", "1"]), errors::SYNTAX);
        assert_eq!(h.error(&["ZADD", "z", "x", "a"]), errors::NOT_FLOAT);
    }

    #[test]
    fn ranges_read_their_options() {
        let mut h = Harness::new();
        h.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
        assert_eq!(
            h.run(&["ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", "0", "1"]),
            Frame::Array(vec![Frame::bulk("b")])
        );
        assert_eq!(
            h.error(&["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"]),
            errors::LIMIT_NEEDS_BYSCORE_OR_BYLEX
        );
        assert_eq!(
            h.error(&["ZRANGE", "z", "[a", "[b", "BYLEX", "WITHSCORES"]),
            errors::WITHSCORES_WITH_BYLEX
        );
        assert_eq!(
            h.run(&["ZRANGESTORE", "d", "z", "0", "1"]),
            Frame::Integer(2)
        );
        assert_eq!(
            h.run(&["ZREMRANGEBYSCORE", "z", "-inf", "(2"]),
            Frame::Integer(1)
        );
        assert_eq!(
            h.error(&["ZCOUNT", "z", "x", "1"]),
            errors::MIN_MAX_NOT_FLOAT
        );
    }

    #[test]
    fn set_algebra_counts_its_keys() {
        let mut h = Harness::new();
        h.run(&["ZADD", "a", "1", "x", "2", "y"]);
        h.run(&["ZADD", "b", "10", "y"]);
        assert_eq!(
            h.run(&[
                "ZUNIONSTORE",
                "d",
                "2",
                "a",
                "b",
                "WEIGHTS",
                "1",
                "2",
                "AGGREGATE",
                "MAX"
            ]),
            Frame::Integer(2)
        );
        assert_eq!(h.run(&["ZSCORE", "d", "y"]), Frame::Double(20.0));
        assert_eq!(
            h.run(&["ZINTERCARD", "2", "a", "b", "LIMIT", "0"]),
            Frame::Integer(1)
        );
        assert_eq!(
            h.error(&["ZUNION", "0", "a"]),
            "ERR at least 1 input key is needed for 'zunion' command"
        );
        assert_eq!(h.error(&["ZUNION", "3", "a", "b"]), errors::SYNTAX);
        assert_eq!(
            h.error(&["ZINTER", "1", "a", "AGGREGATE", "AVG"]),
            errors::SYNTAX
        );
        assert_eq!(h.error(&["ZMPOP", "1", "a", "UP"]), errors::SYNTAX);
        assert_eq!(
            h.run(&["ZMPOP", "1", "a", "MIN"]),
            Frame::Array(vec![
                Frame::bulk("a"),
                Frame::Array(vec![Frame::Array(vec![
                    Frame::bulk("x"),
                    Frame::Double(1.0)
                ])])
            ])
        );
    }

    #[test]
    fn compact_scores_print_integers_within_2_pow_62() {
        assert_eq!(d2string(3.0), "3");
        assert_eq!(d2string(-4611686018427387904.0), "-4611686018427387904");
        assert_eq!(d2string(4611686018427388928.0), "4.6116860184273889e+18");
        assert_eq!(d2string(2.5), "2.5");
        assert_eq!(d2string(f64::INFINITY), "inf");
    }
}
