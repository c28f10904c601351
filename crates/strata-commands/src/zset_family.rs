//! Sorted-set commands (Redis's "sorted-set" group): ZADD, the ZRANGE family, pops, random
//! members, set algebra (ZUNION/ZINTER/ZDIFF and their STORE forms) and ZSCAN. Each row of
//! `COMMANDS` names its handler below; handlers parse arguments with Redis's exact rules (scores
//! as C's `strtod` reads them), call `strata::Db`, and reply. Scores are replied as doubles
//! (`%.17g` bulk strings in RESP2, `,` doubles in RESP3).

use bytes::Bytes;
use strata::num::{is_c_space, strtod};
use strata::{
    Aggregate, KeyType, LexBound, LexRange, ScoreRange, ScoredMember, SetOp, ZAddCompare,
    ZAddCondition, ZAddOptions, ZRangeBy, ZRangeSpec,
};
use strata_resp::{Frame, Protocol};

use crate::args::{self, db, is, reply, Parsed};
use crate::command::*;
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
        handler: plain!(zadd),
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
        handler: plain!(zincrby),
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
        handler: plain!(zrem),
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
        handler: plain!(zcard),
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
        handler: plain!(zscore),
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
        handler: plain!(zmscore),
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
        handler: plain!(zrank),
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
        handler: plain!(zrevrank),
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
        handler: plain!(zcount),
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
        handler: plain!(zlexcount),
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
        handler: plain!(zrange),
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
        handler: plain!(zrangestore),
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
        handler: plain!(zrevrange),
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
        handler: plain!(zrangebyscore),
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
        handler: plain!(zrevrangebyscore),
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
        handler: plain!(zrangebylex),
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
        handler: plain!(zrevrangebylex),
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
        handler: plain!(zremrangebyrank),
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
        handler: plain!(zremrangebyscore),
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
        handler: plain!(zremrangebylex),
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
        handler: plain!(zpopmin),
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
        handler: plain!(zpopmax),
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
        handler: plain!(zmpop),
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
        handler: plain!(zrandmember),
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
        handler: plain!(zunion),
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
        handler: plain!(zinter),
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
        handler: plain!(zdiff),
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
        handler: plain!(zunionstore),
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
        handler: plain!(zinterstore),
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
        handler: plain!(zdiffstore),
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
        handler: plain!(zintercard),
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
        handler: plain!(zscan),
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

/// A score, increment or weight the way Redis's `getDoubleFromObject` reads it: the whole
/// argument, no leading space, no overflow to infinity or underflow to zero, not NaN.
pub fn parse_double(a: &[u8]) -> Option<f64> {
    if a.is_empty() || is_c_space(a[0]) {
        return None;
    }
    let (v, n, erange) = strtod(a);
    if n != a.len() || v.is_nan() || (erange && (v.is_infinite() || v == 0.0)) {
        return None;
    }
    Some(v)
}

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

fn zadd(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let (mut nx, mut xx, mut ch, mut incr, mut gt, mut lt) =
            (false, false, false, false, false, false);
        let mut j = 2;
        while j < argv.len() {
            let a = &argv[j];
            if is(a, "nx") {
                nx = true;
            } else if is(a, "xx") {
                xx = true;
            } else if is(a, "ch") {
                ch = true;
            } else if is(a, "incr") {
                incr = true;
            } else if is(a, "gt") {
                gt = true;
            } else if is(a, "lt") {
                lt = true;
            } else {
                break;
            }
            j += 1;
        }
        let elements = argv.len() - j;
        if elements == 0 || elements & 1 == 1 {
            return Err(err(errors::SYNTAX));
        }
        if nx && xx {
            return Err(err(errors::ZADD_XX_AND_NX));
        }
        if nx && (gt || lt) || (gt && lt) {
            return Err(err(errors::ZADD_GT_LT_NX));
        }
        if incr && elements > 2 {
            return Err(err(errors::ZADD_INCR_PAIR));
        }
        let mut pairs = Vec::with_capacity(elements / 2);
        for pair in argv[j..].chunks_exact(2) {
            pairs.push((score_arg(&pair[0])?, &pair[1][..]));
        }
        let opts = ZAddOptions {
            condition: if nx {
                ZAddCondition::IfAbsent
            } else if xx {
                ZAddCondition::IfPresent
            } else {
                ZAddCondition::Always
            },
            compare: if gt {
                ZAddCompare::Greater
            } else if lt {
                ZAddCompare::Less
            } else {
                ZAddCompare::Any
            },
            incr,
        };
        let out = ctx
            .session
            .db
            .zadd(&argv[1], &pairs, opts)
            .map_err(nan_error)?;
        if out.added + out.updated > 0 {
            ctx.notify(notify::ZSET, if incr { "zincr" } else { "zadd" }, &argv[1]);
        }
        Ok(if incr {
            out.score.map_or(Frame::Null, Frame::Double)
        } else if ch {
            Frame::Integer((out.added + out.updated) as i64)
        } else {
            Frame::Integer(out.added as i64)
        })
    })())
}

fn zincrby(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let by = score_arg(&argv[2])?;
        let s = ctx
            .session
            .db
            .zincrby(&argv[1], by, &argv[3])
            .map_err(nan_error)?;
        if by != 0.0 {
            ctx.notify(notify::ZSET, "zincr", &argv[1]);
        }
        Ok(Frame::Double(s))
    })())
}

fn zrem(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.zrem(&argv[1], &args::slices(&argv[2..])) {
        Ok(n) => {
            if n > 0 {
                ctx.notify(notify::ZSET, "zrem", &argv[1]);
                notify::del_if_gone(ctx, &argv[1]);
            }
            Frame::Integer(n as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn zcard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.zcard(&argv[1]) {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

fn zscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.zscore(&argv[1], &argv[2]) {
        Ok(s) => s.map_or(Frame::Null, Frame::Double),
        Err(e) => errors::from_db(e),
    }
}

fn zmscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.zmscore(&argv[1], &args::slices(&argv[2..])) {
        Ok(v) => Frame::Array(
            v.into_iter()
                .map(|s| s.map_or(Frame::Null, Frame::Double))
                .collect(),
        ),
        Err(e) => errors::from_db(e),
    }
}

fn rank_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], rev: bool) -> Frame {
    match ctx.session.db.zrank(&argv[1], &argv[2], rev) {
        Ok(r) => r.map_or(Frame::Null, |r| Frame::Integer(r as i64)),
        Err(e) => errors::from_db(e),
    }
}

fn zrank(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    rank_generic(ctx, argv, false)
}

fn zrevrank(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    rank_generic(ctx, argv, true)
}

fn zcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let range = score_range(&argv[2], &argv[3])?;
        Ok(Frame::Integer(
            db(ctx.session.db.zcount(&argv[1], &range))? as i64
        ))
    })())
}

fn zlexcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let range = lex_range(&argv[2], &argv[3])?;
        Ok(Frame::Integer(
            db(ctx.session.db.zlexcount(&argv[1], &range))? as i64,
        ))
    })())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeKind {
    Rank,
    Score,
    Lex,
}

/// Redis's zrangeGenericCommand: `first` is the index of the source key (1, or 2 for
/// ZRANGESTORE); `kind`/`rev` are fixed by the legacy commands and chosen by options otherwise.
fn zrange_generic(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    first: usize,
    store: bool,
    kind: Option<RangeKind>,
    rev: Option<bool>,
) -> Frame {
    reply((|| {
        let (mut kind, mut rev) = (kind, rev);
        let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
        let mut j = first + 3;
        while j < argv.len() {
            let left = argv.len() - j - 1;
            let a = &argv[j];
            if !store && is(a, "withscores") {
                withscores = true;
            } else if is(a, "limit") && left >= 2 {
                offset = args::int(&argv[j + 1])?;
                limit = args::int(&argv[j + 2])?;
                j += 2;
            } else if rev.is_none() && is(a, "rev") {
                rev = Some(true);
            } else if kind.is_none() && is(a, "bylex") {
                kind = Some(RangeKind::Lex);
            } else if kind.is_none() && is(a, "byscore") {
                kind = Some(RangeKind::Score);
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 1;
        }
        let kind = kind.unwrap_or(RangeKind::Rank);
        let rev = rev.unwrap_or(false);
        if limit != -1 && kind == RangeKind::Rank {
            return Err(err(errors::LIMIT_NEEDS_BYSCORE_OR_BYLEX));
        }
        if withscores && kind == RangeKind::Lex {
            return Err(err(errors::WITHSCORES_WITH_BYLEX));
        }
        let (mut lo, mut hi) = (&argv[first + 1][..], &argv[first + 2][..]);
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
        if store {
            let existed = notify::existed(ctx, notify::GENERIC, &argv[1]);
            let n = db(ctx.session.db.zrangestore(&argv[1], &argv[2], &spec))?;
            notify::stored(
                ctx,
                notify::ZSET,
                "zrangestore",
                &argv[1],
                n as u64,
                existed,
            );
            return Ok(Frame::Integer(n as i64));
        }
        let items = db(ctx.session.db.zrange(&argv[first], &spec))?;
        Ok(scored_reply(items, withscores, resp3(ctx)))
    })())
}

fn zrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zrange_generic(ctx, argv, 1, false, None, None)
}

fn zrangestore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zrange_generic(ctx, argv, 2, true, None, None)
}

fn zrevrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zrange_generic(ctx, argv, 1, false, Some(RangeKind::Rank), Some(true))
}

fn zrangebyscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zrange_generic(ctx, argv, 1, false, Some(RangeKind::Score), Some(false))
}

fn zrevrangebyscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zrange_generic(ctx, argv, 1, false, Some(RangeKind::Score), Some(true))
}

fn zrangebylex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zrange_generic(ctx, argv, 1, false, Some(RangeKind::Lex), Some(false))
}

fn zrevrangebylex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zrange_generic(ctx, argv, 1, false, Some(RangeKind::Lex), Some(true))
}

fn zremrange_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: RangeKind) -> Frame {
    reply((|| {
        let by = match kind {
            RangeKind::Rank => ZRangeBy::Rank(args::int(&argv[2])?, args::int(&argv[3])?),
            RangeKind::Score => ZRangeBy::Score(score_range(&argv[2], &argv[3])?),
            RangeKind::Lex => ZRangeBy::Lex(lex_range(&argv[2], &argv[3])?),
        };
        let n = db(ctx.session.db.zremrange(&argv[1], &by))?;
        if n > 0 && ctx.notifies(notify::ZSET | notify::GENERIC) {
            let event = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
            ctx.notify(notify::ZSET, &event, &argv[1]);
            notify::del_if_gone(ctx, &argv[1]);
        }
        Ok(Frame::Integer(n as i64))
    })())
}

fn zremrangebyrank(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zremrange_generic(ctx, argv, RangeKind::Rank)
}

fn zremrangebyscore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zremrange_generic(ctx, argv, RangeKind::Score)
}

fn zremrangebylex(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    zremrange_generic(ctx, argv, RangeKind::Lex)
}

fn pop_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], max: bool) -> Frame {
    reply((|| {
        if argv.len() > 3 {
            return Err(err(errors::SYNTAX));
        }
        let count = match argv.get(2) {
            Some(a) => Some(positive(a, errors::OUT_OF_RANGE_MUST_BE_POSITIVE)? as u64),
            None => None,
        };
        let items = db(ctx.session.db.zpop(&argv[1], max, count.unwrap_or(1)))?;
        if !items.is_empty() {
            ctx.notify(
                notify::ZSET,
                if max { "zpopmax" } else { "zpopmin" },
                &argv[1],
            );
            notify::del_if_gone(ctx, &argv[1]);
        }
        let nested = resp3(ctx) && count.is_some();
        Ok(scored_reply(items, true, nested))
    })())
}

fn zpopmin(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    pop_generic(ctx, argv, false)
}

fn zpopmax(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    pop_generic(ctx, argv, true)
}

fn zmpop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let numkeys = long_at_least_one(&argv[1], errors::NUMKEYS_NOT_POSITIVE)? as u64;
        let where_idx = match usize::try_from(numkeys).ok().and_then(|n| n.checked_add(2)) {
            Some(w) if w < argv.len() => w,
            _ => return Err(err(errors::SYNTAX)),
        };
        let max = if is(&argv[where_idx], "min") {
            false
        } else if is(&argv[where_idx], "max") {
            true
        } else {
            return Err(err(errors::SYNTAX));
        };
        let mut count = None;
        let mut j = where_idx + 1;
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            if count.is_none() && is(&argv[j], "count") && more > 0 {
                j += 1;
                count = Some(long_at_least_one(&argv[j], errors::COUNT_NOT_POSITIVE)? as u64);
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 1;
        }
        let keys = args::slices(&argv[2..where_idx]);
        match db(ctx.session.db.zmpop(&keys, max, count.unwrap_or(1)))? {
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
    })())
}

fn zrandmember(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        if argv.len() < 3 {
            let items = db(ctx.session.db.zrandmember(&argv[1], 1))?;
            return Ok(Frame::bulk_or_null(
                items.into_iter().next().map(|(m, _)| m),
            ));
        }
        let count = args::int(&argv[2])?;
        if count == i64::MIN {
            return Err(errors::value_out_of_range_between(-i64::MAX, i64::MAX));
        }
        if argv.len() > 4 || (argv.len() == 4 && !is(&argv[3], "withscores")) {
            return Err(err(errors::SYNTAX));
        }
        let withscores = argv.len() == 4;
        if withscores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
            return Err(err(errors::VALUE_OUT_OF_RANGE));
        }
        let items = db(ctx.session.db.zrandmember(&argv[1], count))?;
        Ok(scored_reply(items, withscores, resp3(ctx)))
    })())
}

/// ZUNION/ZINTER/ZDIFF[STORE] and ZINTERCARD (Redis's zunionInterDiffGenericCommand).
fn setop_generic(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    op: SetOp,
    store: bool,
    card_only: bool,
) -> Frame {
    reply((|| {
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        let numkeys_idx = if store { 2 } else { 1 };
        let setnum = args::int(&argv[numkeys_idx])?;
        if setnum < 1 {
            return Err(errors::at_least_one_input_key(&name));
        }
        if setnum as u64 > (argv.len() - numkeys_idx - 1) as u64 {
            return Err(err(errors::SYNTAX));
        }
        let setnum = setnum as usize;
        let keys = args::slices(&argv[numkeys_idx + 1..numkeys_idx + 1 + setnum]);
        // Redis checks the input types before it reads the options.
        for k in &keys {
            match db(ctx.session.db.key_type(k))? {
                None | Some(KeyType::ZSet) | Some(KeyType::Set) => {}
                Some(_) => return Err(err(errors::WRONGTYPE)),
            }
        }
        let mut weights: Option<Vec<f64>> = None;
        let mut aggregate = Aggregate::Sum;
        let mut withscores = false;
        let mut limit = 0u64;
        let mut j = numkeys_idx + 1 + setnum;
        while j < argv.len() {
            let remaining = argv.len() - j;
            let a = &argv[j];
            if op != SetOp::Diff && !card_only && remaining > setnum && is(a, "weights") {
                j += 1;
                let mut w = Vec::with_capacity(setnum);
                for k in 0..setnum {
                    w.push(
                        parse_double(&argv[j + k]).ok_or_else(|| err(errors::WEIGHT_NOT_FLOAT))?,
                    );
                }
                weights = Some(w);
                j += setnum;
            } else if op != SetOp::Diff && !card_only && remaining >= 2 && is(a, "aggregate") {
                let v = &argv[j + 1];
                aggregate = if is(v, "sum") {
                    Aggregate::Sum
                } else if is(v, "min") {
                    Aggregate::Min
                } else if is(v, "max") {
                    Aggregate::Max
                } else {
                    return Err(err(errors::SYNTAX));
                };
                j += 2;
            } else if !store && !card_only && is(a, "withscores") {
                withscores = true;
                j += 1;
            } else if card_only && remaining >= 2 && is(a, "limit") {
                limit = positive(&argv[j + 1], errors::LIMIT_NEGATIVE)? as u64;
                j += 2;
            } else {
                return Err(err(errors::SYNTAX));
            }
        }
        let d = &ctx.session.db;
        if card_only {
            return Ok(Frame::Integer(db(d.zintercard(&keys, limit))? as i64));
        }
        if store {
            let existed = notify::existed(ctx, notify::GENERIC, &argv[1]);
            let n = db(d.zsetop_store(op, &argv[1], &keys, weights.as_deref(), aggregate))?;
            notify::stored(ctx, notify::ZSET, &name, &argv[1], n as u64, existed);
            return Ok(Frame::Integer(n as i64));
        }
        let items = db(d.zsetop(op, &keys, weights.as_deref(), aggregate))?;
        Ok(scored_reply(items, withscores, resp3(ctx)))
    })())
}

fn zunion(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    setop_generic(ctx, argv, SetOp::Union, false, false)
}

fn zinter(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    setop_generic(ctx, argv, SetOp::Inter, false, false)
}

fn zdiff(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    setop_generic(ctx, argv, SetOp::Diff, false, false)
}

fn zunionstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    setop_generic(ctx, argv, SetOp::Union, true, false)
}

fn zinterstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    setop_generic(ctx, argv, SetOp::Inter, true, false)
}

fn zdiffstore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    setop_generic(ctx, argv, SetOp::Diff, true, false)
}

fn zintercard(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    setop_generic(ctx, argv, SetOp::Inter, false, true)
}

fn zscan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let cursor = scan::cursor(&argv[2])?;
        // A missing key answers an empty scan before the options are read (as Redis does).
        if db(ctx.session.db.zcard(&argv[1]))? == 0 {
            return Ok(Frame::Array(vec![Frame::bulk("0"), Frame::Array(vec![])]));
        }
        let (pattern, count) = scan::options(argv)?;
        let page = db(ctx.session.db.zscan(&argv[1], cursor, pattern, count))?;
        let mut out = Vec::with_capacity(page.items.len() * 2);
        for (m, s) in page.items {
            out.push(Frame::bulk(m));
            out.push(Frame::bulk(if page.compact {
                d2string(s)
            } else {
                strata_resp::format_double(s)
            }));
        }
        Ok(Frame::Array(vec![
            Frame::bulk(page.cursor.to_string()),
            Frame::Array(out),
        ]))
    })())
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

    #[test]
    fn compact_scores_print_integers_within_2_pow_62() {
        assert_eq!(d2string(3.0), "3");
        assert_eq!(d2string(-4611686018427387904.0), "-4611686018427387904");
        assert_eq!(d2string(4611686018427388928.0), "4.6116860184273889e+18");
        assert_eq!(d2string(2.5), "2.5");
        assert_eq!(d2string(f64::INFINITY), "inf");
    }
}
