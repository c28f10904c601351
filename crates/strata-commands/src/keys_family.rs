//! Generic key commands (Redis's "generic" group): existence, deletion, TTLs, renaming, copying,
//! iteration and OBJECT. They work on keys of every type.

use bytes::Bytes;
use strata::rdb::Restored;
use strata::{ExpireCondition, KeyType, Ttl};
use strata_resp::Frame;

use crate::args::is;
use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
use crate::help;
use crate::scan;
use crate::Ctx;

/// The generic family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "del",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RM | DELETE, 1, -1, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(del),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(N) where N is the number of keys that will be removed.",
            summary: "Removes keys, whatever their type.",
            syntax: "key [key ...]",
            tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        },
    },
    CommandSpec {
        name: "unlink",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RM | DELETE, 1, -1, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(del),
        docs: Docs {
            group: "generic",
            since: "4.0.0",
            complexity: "O(1) for each key removed regardless of its size.",
            summary: "Removes keys, reclaiming their memory in the background.",
            syntax: "key [key ...]",
            tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        },
    },
    CommandSpec {
        name: "exists",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY | FAST | NO_TOUCH),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, -1, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(exists),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(N) where N is the number of keys to check.",
            summary: "Counts how many of the given keys are present.",
            syntax: "key [key ...]",
            tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        },
    },
    CommandSpec {
        name: "type",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST | NO_TOUCH),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(key_type),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Names the data type of the value at a key.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "expire",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(expire),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Gives a key a time to live, in seconds.",
            syntax: "key seconds [condition: NX | XX | GT | LT]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pexpire",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(pexpire),
        docs: Docs {
            group: "generic",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Gives a key a time to live, in milliseconds.",
            syntax: "key milliseconds [condition: NX | XX | GT | LT]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "expireat",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(expireat),
        docs: Docs {
            group: "generic",
            since: "1.2.0",
            complexity: "O(1)",
            summary: "Makes a key expire at a Unix time in seconds.",
            syntax: "key unix-time-seconds [condition: NX | XX | GT | LT]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pexpireat",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(pexpireat),
        docs: Docs {
            group: "generic",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Makes a key expire at a Unix time in milliseconds.",
            syntax: "key unix-time-milliseconds [condition: NX | XX | GT | LT]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "ttl",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST | NO_TOUCH),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(ttl),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Gives the seconds left before a key expires.",
            syntax: "key",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "pttl",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST | NO_TOUCH),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(pttl),
        docs: Docs {
            group: "generic",
            since: "2.6.0",
            complexity: "O(1)",
            summary: "Gives the milliseconds left before a key expires.",
            syntax: "key",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "expiretime",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST | NO_TOUCH),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(expiretime),
        docs: Docs {
            group: "generic",
            since: "7.0.0",
            complexity: "O(1)",
            summary: "Gives the Unix time in seconds at which a key expires.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pexpiretime",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST | NO_TOUCH),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(pexpiretime),
        docs: Docs {
            group: "generic",
            since: "7.0.0",
            complexity: "O(1)",
            summary: "Gives the Unix time in milliseconds at which a key expires.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "persist",
        arity: Arity::Exactly(2),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(persist),
        docs: Docs {
            group: "generic",
            since: "2.2.0",
            complexity: "O(1)",
            summary: "Makes a key permanent by dropping its expiration.",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "rename",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
            KeySpec::range(OW | UPDATE, 2, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(rename),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Gives a key a new name, replacing any key already called that.",
            syntax: "key newkey",
            tips: &[],
        },
    },
    CommandSpec {
        name: "renamenx",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 2, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 1, 0, 1, 0),
            KeySpec::range(OW | INSERT, 2, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(renamenx),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Gives a key a new name only if no key has that name yet.",
            syntax: "key newkey",
            tips: &[],
        },
    },
    CommandSpec {
        name: "copy",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Custom(Range::new(1, 2, 1), copy_keys),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
            KeySpec::range(OW | UPDATE, 2, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(copy),
        docs: Docs {
            group: "generic",
            since: "6.2.0",
            complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
            summary: "Duplicates the value of a key under another name.",
            syntax: "source destination [DB destination-db] [REPLACE]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "dump",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(dump),
        docs: Docs {
            group: "generic",
            since: "2.6.0",
            complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
            summary: "Return a serialized version of the value stored at the specified key.",
            syntax: "key",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "migrate",
        arity: Arity::AtLeast(6),
        flags: Flags(WRITE | MOVABLEKEYS),
        keys: Keys::Custom(Range::new(3, 3, 1), migrate_keys),
        key_specs: &[
            KeySpec::range(RW | ACCESS | DELETE, 3, 0, 1, 0),
            KeySpec::keyword(RW | ACCESS | DELETE | INCOMPLETE, "KEYS", -2, -1, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE | acl::DANGEROUS),
        handler: Handler::Reply(migrate),
        docs: Docs {
            group: "generic",
            since: "2.6.0",
            complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
            summary: "Atomically transfer a key from a Redis instance to another one.",
            syntax: "host port:integer <key_or_empty_string: key | \"\"> destination-db:integer timeout:integer [COPY] [REPLACE] [authentication: AUTH password | AUTH2 username password] [KEYS key [key ...]]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "restore",
        arity: Arity::AtLeast(4),
        // NO_TOUCH: the handler sets the key's access time itself (IDLETIME).
        flags: Flags(WRITE | DENYOOM | NO_TOUCH),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE | acl::DANGEROUS),
        handler: Handler::Reply(restore),
        docs: Docs {
            group: "generic",
            since: "2.6.0",
            complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
            summary: "Create a key using the provided serialized value, previously obtained using DUMP.",
            syntax: "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "move",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Custom(Range::new(1, 1, 1), move_keys),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(move_key),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Transfers a key to another database.",
            syntax: "key db",
            tips: &[],
        },
    },
    CommandSpec {
        name: "touch",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RO, 1, -1, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(exists),
        docs: Docs {
            group: "generic",
            since: "3.2.1",
            complexity: "O(N) where N is the number of keys that will be touched.",
            summary: "Marks keys as accessed and counts those that exist.",
            syntax: "key [key ...]",
            tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        },
    },
    CommandSpec {
        name: "keys",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE | acl::DANGEROUS),
        handler: Handler::Reply(keys),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
            summary: "Lists every key whose name matches a glob pattern.",
            syntax: "pattern",
            tips: &["request_policy:all_shards", "nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "scan",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(scan),
        docs: Docs {
            group: "generic",
            since: "2.8.0",
            complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
            summary: "Walks the key space a batch at a time with a cursor.",
            syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]",
            tips: &["nondeterministic_output", "request_policy:special"],
        },
    },
    CommandSpec {
        name: "randomkey",
        arity: Arity::Exactly(1),
        flags: Flags(READONLY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(randomkey),
        docs: Docs {
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "Gives the name of a key picked at random.",
            syntax: "",
            tips: &["request_policy:all_shards", "nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "object",
        arity: Arity::AtLeast(2),
        flags: Flags(NO_TOUCH),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(object),
        docs: Docs {
            group: "generic",
            since: "2.2.3",
            complexity: "Depends on subcommand.",
            summary: "Groups the subcommands that inspect how a value is stored.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "object|encoding",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | NO_TOUCH),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[
            KeySpec::range(RO, 2, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(object_encoding),
        docs: Docs {
            group: "generic",
            since: "2.2.3",
            complexity: "O(1)",
            summary: "Names the internal representation of a key's value.",
            syntax: "key",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "object|freq",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | NO_TOUCH),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[
            KeySpec::range(RO, 2, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(object_freq),
        docs: Docs {
            group: "generic",
            since: "4.0.0",
            complexity: "O(1)",
            summary: "Gives the access-frequency counter of a key.",
            syntax: "key",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "object|idletime",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | NO_TOUCH),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[
            KeySpec::range(RO, 2, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(object_idletime),
        docs: Docs {
            group: "generic",
            since: "2.2.3",
            complexity: "O(1)",
            summary: "Gives the seconds since a key was last read or written.",
            syntax: "key",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "object|refcount",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | NO_TOUCH),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[
            KeySpec::range(RO, 2, 0, 1, 0),
        ],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(object_refcount),
        docs: Docs {
            group: "generic",
            since: "2.2.3",
            complexity: "O(1)",
            summary: "Gives the reference count of a key's value.",
            syntax: "key",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "object|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::KEYSPACE),
        handler: Handler::Reply(object_help),
        docs: Docs {
            group: "generic",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Lists the OBJECT subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "memory",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(memory),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "Depends on subcommand.",
            summary: "Groups the subcommands that report memory use.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "memory|usage",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY | NO_TOUCH),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[
            KeySpec::range(RO, 2, 0, 1, 0),
        ],
        acl: Acl::NONE,
        handler: Handler::Reply(memory_usage),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "O(N) where N is the number of samples.",
            summary: "Estimates the bytes a key and its value take.",
            syntax: "key [SAMPLES count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "memory|stats",
        arity: Arity::Exactly(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(memory_stats),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "O(1)",
            summary: "Show memory usage details",
            syntax: "",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_shards",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "memory|doctor",
        arity: Arity::Exactly(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(memory_doctor),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "O(1)",
            summary: "Outputs memory problems report",
            syntax: "",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_shards",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "memory|malloc-stats",
        arity: Arity::Exactly(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(memory_malloc_stats),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "Depends on how much memory is allocated, could be slow",
            summary: "Show allocator internal stats",
            syntax: "",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_shards",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "memory|purge",
        arity: Arity::Exactly(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(memory_purge),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "Depends on how much memory is allocated, could be slow",
            summary: "Ask the allocator to release memory",
            syntax: "",
            tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "memory|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(memory_help),
        docs: Docs {
            group: "server",
            since: "4.0.0",
            complexity: "O(1)",
            summary: "Lists the MEMORY subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
];

/// MOVE key db: the key in the other database too (for its locks).
fn move_keys(argv: &[Bytes], _db: u32, out: &mut Vec<(u32, usize)>) {
    if let Some(other) = argv.get(2).and_then(|a| db_index(a)) {
        out.push((other, 1));
    }
}

/// COPY source destination [DB index]: the destination may be in another database.
fn copy_keys(argv: &[Bytes], _db: u32, out: &mut Vec<(u32, usize)>) {
    if let Some(i) = (3..argv.len().saturating_sub(1)).find(|&i| is(&argv[i], "db")) {
        if let Some(other) = db_index(&argv[i + 1]) {
            out.push((other, 2));
        }
    }
}

fn del(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let keys = Args::new(argv).rest_slices();
    if !ctx.notifies(crate::notify::GENERIC) {
        return Ok(Frame::Integer(ctx.session.db.del(&keys)? as i64));
    }
    // One key at a time, so each deleted key raises its own `del`.
    let mut n = 0;
    for k in keys {
        let d = ctx.session.db.del(&[k])?;
        if d > 0 {
            ctx.notify(crate::notify::GENERIC, "del", k);
        }
        n += d;
    }
    Ok(Frame::Integer(n as i64))
}

fn exists(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut n = 0;
    for k in Args::new(argv).rest() {
        n += ctx.session.db.exists(k)? as i64;
    }
    Ok(Frame::Integer(n))
}

fn key_type(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    let t = ctx.session.db.key_type(key)?;
    Ok(Frame::simple(t.map(KeyType::name).unwrap_or("none")))
}

/// Redis's parseExtendedExpireArgumentsOrReply over the rest of the arguments.
fn expire_conditions(a: &mut Args<'_>) -> Result<Vec<ExpireCondition>, Failure> {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    while !a.is_done() {
        if a.opt("NX") {
            nx = true;
        } else if a.opt("XX") {
            xx = true;
        } else if a.opt("GT") {
            gt = true;
        } else if a.opt("LT") {
            lt = true;
        } else {
            let word = String::from_utf8_lossy(a.value()?);
            return Err(Failure::text(format!("ERR Unsupported option {word}")));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Failure::text(errors::NX_XX_GT_LT));
    }
    if gt && lt {
        return Err(Failure::text(errors::GT_AND_LT));
    }
    let mut conds = Vec::new();
    for (on, c) in [
        (nx, ExpireCondition::IfNone),
        (xx, ExpireCondition::IfSome),
        (gt, ExpireCondition::IfGreater),
        (lt, ExpireCondition::IfLess),
    ] {
        if on {
            conds.push(c);
        }
    }
    Ok(conds)
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX | XX | GT | LT]; `cmd` names the command
/// in its error text.
fn expire_generic(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    seconds: bool,
    absolute: bool,
    cmd: &str,
) -> Reply {
    let invalid = || Failure(errors::invalid_expire(cmd));
    let mut a = Args::new(argv);
    let (key, when) = (a.key()?, a.value()?);
    let conds = expire_conditions(&mut a)?;
    let mut when = crate::args::int(when)?;
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(invalid());
        }
        when *= 1000;
    }
    if !absolute {
        when = when
            .checked_add(strata::now_ms() as i64)
            .ok_or_else(invalid)?;
    }
    let changed = ctx.session.db.expire_at(key, when, &conds)?;
    if changed {
        let past = when <= strata::now_ms() as i64;
        let event = if past { "del" } else { "expire" };
        ctx.notify(crate::notify::GENERIC, event, key);
    }
    Ok(Frame::Integer(changed as i64))
}

fn expire(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    expire_generic(ctx, argv, true, false, "expire")
}

fn pexpire(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    expire_generic(ctx, argv, false, false, "pexpire")
}

fn expireat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    expire_generic(ctx, argv, true, true, "expireat")
}

fn pexpireat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    expire_generic(ctx, argv, false, true, "pexpireat")
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME share Redis's ttlGenericCommand.
fn ttl_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], ms: bool, absolute: bool) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::Integer(match ctx.session.db.ttl(key)? {
        Ttl::Missing => -2,
        Ttl::Persistent => -1,
        Ttl::ExpiresAt(at) => {
            let t = if absolute {
                at as i64
            } else {
                (at as i64 - strata::now_ms() as i64).max(0)
            };
            if ms {
                t
            } else if absolute {
                t / 1000
            } else {
                (t + 500) / 1000
            }
        }
    }))
}

fn ttl(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    ttl_generic(ctx, argv, false, false)
}

fn pttl(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    ttl_generic(ctx, argv, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    ttl_generic(ctx, argv, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    ttl_generic(ctx, argv, true, true)
}

fn persist(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    let removed = ctx.session.db.persist(key)?;
    if removed {
        ctx.notify(crate::notify::GENERIC, "persist", key);
    }
    Ok(Frame::Integer(removed as i64))
}

fn rename(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (src, dst) = (a.key()?, a.key()?);
    ctx.session.db.rename(src, dst, false)?;
    notify_rename(ctx, src, dst);
    Ok(Frame::ok())
}

fn renamenx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (src, dst) = (a.key()?, a.key()?);
    let done = ctx.session.db.rename(src, dst, true)?;
    if done {
        notify_rename(ctx, src, dst);
    }
    Ok(Frame::Integer(done as i64))
}

/// `rename_from` on the source, `rename_to` on the destination (none for a key renamed to
/// itself, as in Redis).
fn notify_rename(ctx: &Ctx<'_>, src: &[u8], dst: &[u8]) {
    if src != dst {
        // Redis re-adds the destination (raising `new`) before it reports the rename.
        crate::notify::new_key_always(ctx, ctx.session.db.index(), dst);
        ctx.notify(crate::notify::GENERIC, "rename_from", src);
        ctx.notify(crate::notify::GENERIC, "rename_to", dst);
    }
}

/// A database number in range for this server (`ERR DB index is out of range`).
fn database(ctx: &Ctx<'_>, n: i64) -> Result<u32, Failure> {
    if n < 0 || n >= ctx.session.db.databases() as i64 {
        return Err(Failure::text(errors::DB_INDEX));
    }
    Ok(n as u32)
}

fn copy(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (src, dst) = (a.key()?, a.key()?);
    let session_db = ctx.session.db.index();
    let mut dst_db = session_db;
    let mut replace = false;
    while !a.is_done() {
        if a.opt("REPLACE") {
            replace = true;
        } else if a.remaining() >= 2 && a.opt("DB") {
            dst_db = database(ctx, a.int()?)?;
        } else {
            return Err(syntax());
        }
    }
    if dst_db == session_db && src == dst {
        return Err(Failure::text(errors::SAME_OBJECT));
    }
    let done = ctx.session.db.copy(src, dst_db, dst, replace)?;
    if done {
        crate::notify::new_key_always(ctx, dst_db, dst);
        ctx.notify_in(dst_db, crate::notify::GENERIC, "copy_to", dst);
    }
    Ok(Frame::Integer(done as i64))
}

/// DUMP key: the value in Redis 7.0's serialization (see `strata::rdb`), nil for a missing key.
fn dump(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    let payload = ctx.session.db.dump_payload(key)?;
    Ok(Frame::bulk_or_null(payload.map(Bytes::from)))
}

/// MIGRATE's keys beyond index 3: those after KEYS (when the key argument is empty).
fn migrate_keys(argv: &[Bytes], db: u32, out: &mut Vec<(u32, usize)>) {
    if !argv.get(3).is_some_and(|k| k.is_empty()) {
        return;
    }
    if let Some(at) = (6..argv.len()).find(|&i| is(&argv[i], "keys")) {
        out.extend((at + 1..argv.len()).map(|i| (db, i)));
    }
}

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
/// [AUTH2 username password] [KEYS key ...], as Redis 7.0 runs it: DUMP of every key found
/// (with its remaining TTL) sent as RESTORE commands after SELECT (and AUTH) over one
/// connection ([`crate::migration`]), one reply line read per command; keys the target took are
/// deleted here unless COPY. A timeout of 0 or less is 1000 ms. A connection that fails before
/// any reply is tried once more, unless it timed out.
fn migrate(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    use crate::migration::{push_command, Link, LinkError};
    let mut a = Args::new(argv);
    let (host, port, key, db_arg, timeout_arg) =
        (a.value()?, a.value()?, a.value()?, a.value()?, a.value()?);
    let (mut copy, mut replace) = (false, false);
    let (mut user, mut password): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let mut keys: Vec<&[u8]> = vec![key];
    while !a.is_done() {
        if a.opt("COPY") {
            copy = true;
        } else if a.opt("REPLACE") {
            replace = true;
        } else if a.opt("AUTH") {
            if a.is_done() {
                return Err(syntax());
            }
            password = Some(a.value()?);
        } else if a.opt("AUTH2") {
            if a.remaining() < 2 {
                return Err(syntax());
            }
            user = Some(a.value()?);
            password = Some(a.value()?);
        } else if a.opt("KEYS") {
            if !key.is_empty() {
                return Err(Failure::text(errors::MIGRATE_KEYS_WITH_KEY));
            }
            keys = a.rest_slices();
            break;
        } else {
            return Err(syntax());
        }
    }
    let timeout = crate::args::int(timeout_arg)?;
    let dbid = crate::args::int(db_arg)?;
    let timeout =
        std::time::Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let db = ctx.session.db.clone();
    let mut found: Vec<&[u8]> = Vec::new();
    for k in keys {
        if db.exists(k)? {
            found.push(k);
        }
    }
    if found.is_empty() {
        return Ok(Frame::simple("NOKEY"));
    }
    // The request: AUTH, SELECT (every time: no connection is kept), one RESTORE per key still
    // alive.
    let mut request = Vec::new();
    if let Some(pass) = password {
        match user {
            Some(u) => push_command(&mut request, &[b"AUTH", u, pass]),
            None => push_command(&mut request, &[b"AUTH", pass]),
        }
    }
    push_command(&mut request, &[b"SELECT", dbid.to_string().as_bytes()]);
    let now = strata::now_ms();
    let mut sent: Vec<&[u8]> = Vec::new();
    for k in found {
        let ttl = match db.ttl(k)? {
            Ttl::Missing => continue,
            Ttl::Persistent => 0,
            Ttl::ExpiresAt(at) if at < now => continue,
            Ttl::ExpiresAt(at) => (at - now).max(1),
        };
        let Some(payload) = db.dump_payload(k)? else {
            continue;
        };
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", k, ttl.as_bytes(), &payload];
        if replace {
            args.push(b"REPLACE");
        }
        push_command(&mut request, &args);
        sent.push(k);
    }
    let expected = usize::from(password.is_some()) + 1;
    // Each attempt: the replies read (AUTH, SELECT, then one per key) and how it ended.
    let attempt = || -> (Vec<Vec<u8>>, Option<LinkError>) {
        let mut replies = Vec::new();
        let mut link = match Link::connect(host, port, timeout) {
            Ok(l) => l,
            Err(e) => return (replies, Some(e)),
        };
        if let Err(e) = link.send(&request) {
            return (replies, Some(e));
        }
        for _ in 0..expected + sent.len() {
            match link.line() {
                Ok(line) => replies.push(line),
                Err(e) => return (replies, Some(e)),
            }
        }
        (replies, None)
    };
    let (replies, failure) = crate::migration::blocking(|| {
        let (replies, failure) = attempt();
        let retry = match failure {
            Some(LinkError::Write { timed_out }) => !timed_out,
            Some(LinkError::Read { timed_out }) => !timed_out && replies.len() <= expected,
            _ => false,
        };
        if retry {
            attempt()
        } else {
            (replies, failure)
        }
    });
    if failure == Some(LinkError::Connect) {
        return Err(Failure::text(errors::MIGRATE_CONNECT));
    }
    if let Some(LinkError::Write { .. }) = failure {
        return Err(Failure::text(errors::MIGRATE_WRITING));
    }
    // AUTH's or SELECT's error wins over the keys' own.
    let head_error = replies
        .iter()
        .take(expected)
        .find(|r| r.first() == Some(&b'-'))
        .cloned();
    let mut target_error: Option<Vec<u8>> = None;
    let mut deleted: Vec<&[u8]> = Vec::new();
    for (k, reply) in sent.iter().zip(replies.iter().skip(expected)) {
        if head_error.is_some() || reply.first() == Some(&b'-') {
            if target_error.is_none() {
                target_error = Some(head_error.clone().unwrap_or_else(|| reply.clone()));
            }
        } else if !copy {
            deleted.push(k);
        }
    }
    for k in &deleted {
        if db.del(&[*k])? > 0 {
            ctx.notify(crate::notify::GENERIC, "del", k);
        }
    }
    if let Some(e) = target_error {
        let mut text = errors::MIGRATE_TARGET_ERROR.as_bytes().to_vec();
        text.extend_from_slice(&e[1..]);
        return Err(Failure::text(String::from_utf8_lossy(&text).into_owned()));
    }
    if failure.is_some() {
        return Err(Failure::text(errors::MIGRATE_READING));
    }
    Ok(Frame::ok())
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checked in Redis's order
/// (options, existing key, TTL, trailer, value). FREQ is accepted and ignored: Strata keeps no
/// LFU counters, as Redis ignores it under an LRU policy.
fn restore(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, ttl, payload) = (a.key()?, a.value()?, a.value()?);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    while !a.is_done() {
        if a.opt("REPLACE") {
            replace = true;
        } else if a.opt("ABSTTL") {
            absttl = true;
        } else if a.remaining() >= 2 && freq.is_none() && a.opt("IDLETIME") {
            let n = a.int()?;
            if n < 0 {
                return Err(Failure::text(errors::INVALID_IDLETIME));
            }
            idle = Some(n);
        } else if a.remaining() >= 2 && idle.is_none() && a.opt("FREQ") {
            let n = a.int()?;
            if !(0..=255).contains(&n) {
                return Err(Failure::text(errors::INVALID_FREQ));
            }
            freq = Some(n);
        } else {
            return Err(syntax());
        }
    }
    let db = &ctx.session.db;
    if !replace && db.exists(key)? {
        return Err(Failure::text(errors::BUSYKEY));
    }
    let ttl = crate::args::int(ttl)?;
    if ttl < 0 {
        return Err(Failure::text(errors::INVALID_TTL));
    }
    strata::rdb::payload::open(payload).map_err(|_| Failure::text(errors::DUMP_PAYLOAD))?;
    let expire_at = match ttl {
        0 => None,
        t if absttl => Some(t as u64),
        t => Some((t as u64).saturating_add(strata::now_ms())),
    };
    let opts = strata::rdb::RestoreOptions { replace, expire_at };
    match db.restore_payload(key, payload, opts)? {
        Restored::Busy => Err(Failure::text(errors::BUSYKEY)),
        Restored::Expired { deleted } => {
            if deleted {
                ctx.notify(crate::notify::GENERIC, "del", key);
            }
            Ok(Frame::ok())
        }
        Restored::Written(_) => {
            match idle {
                Some(secs) => db.set_idle_time(key, secs as u64),
                None => db.note_access(db.index(), key),
            }
            ctx.notify(crate::notify::GENERIC, "restore", key);
            Ok(Frame::ok())
        }
    }
}

fn move_key(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let (key, n) = (a.key()?, a.int()?);
    if n < i32::MIN as i64 || n > i32::MAX as i64 {
        return Err(Failure::text(errors::NOT_INTEGER));
    }
    let to = database(ctx, n)?;
    let src = ctx.session.db.index();
    if to == src {
        return Err(Failure::text(errors::SAME_OBJECT));
    }
    let done = ctx.session.db.move_to(key, to)?;
    if done {
        crate::notify::new_key_always(ctx, to, key);
        ctx.notify_in(src, crate::notify::GENERIC, "move_from", key);
        ctx.notify_in(to, crate::notify::GENERIC, "move_to", key);
    }
    Ok(Frame::Integer(done as i64))
}

fn keys(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let pattern = Args::new(argv).value()?;
    Ok(Frame::bulk_array(ctx.session.db.keys(pattern)?))
}

/// Parses a SCAN cursor: an unsigned 64-bit decimal ("ERR invalid cursor" otherwise).
pub fn parse_cursor(a: &[u8]) -> Result<u64, Failure> {
    std::str::from_utf8(a)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Failure::text(errors::INVALID_CURSOR))
}

fn scan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let cursor = parse_cursor(Args::new(argv).value()?)?;
    let o = scan::scan_options(argv, 2, true)?;
    let kind = match o.type_name.map(KeyType::from_name) {
        None => None,
        Some(Some(k)) => Some(k),
        // An unknown TYPE name matches nothing (as in Redis 7.0); the cursor still moves.
        Some(None) => {
            let page = ctx.session.db.scan(cursor, o.pattern, o.count, None)?;
            return Ok(scan::reply(page.cursor, Vec::new()));
        }
    };
    let page = ctx.session.db.scan(cursor, o.pattern, o.count, kind)?;
    Ok(scan::reply(
        page.cursor,
        page.keys.into_iter().map(Frame::bulk).collect(),
    ))
}

fn randomkey(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::bulk_or_null(ctx.session.db.random_key()?))
}

fn object(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "object"))
}

fn object_encoding(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::after_subcommand(argv).key()?;
    let encoding = ctx.session.db.object_encoding(key)?;
    Ok(Frame::bulk_or_null(
        encoding.map(|s| Bytes::from_static(s.as_bytes())),
    ))
}

fn object_freq(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::after_subcommand(argv).key()?;
    if !ctx.session.db.exists(key)? {
        return Ok(Frame::Null);
    }
    Err(Failure::text(errors::LFU_NOT_SELECTED))
}

fn object_idletime(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::after_subcommand(argv).key()?;
    Ok(match ctx.session.db.idle_time(key)? {
        None => Frame::Null,
        Some(secs) => Frame::Integer(secs.min(i64::MAX as u64) as i64),
    })
}

fn object_refcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::after_subcommand(argv).key()?;
    Ok(match ctx.session.db.exists(key)? {
        false => Frame::Null,
        true => Frame::Integer(1),
    })
}

fn object_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    ))
}

fn memory(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "memory"))
}

/// MEMORY USAGE key [SAMPLES count]: an estimate (see docs/differences.md); SAMPLES 0 samples
/// every member.
fn memory_usage(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::after_subcommand(argv);
    let key = a.key()?;
    let mut samples = 5u64;
    while !a.is_done() {
        if a.remaining() < 2 || !a.opt("SAMPLES") {
            return Err(syntax());
        }
        let n = a.int()?;
        if n < 0 {
            return Err(syntax());
        }
        samples = n as u64;
    }
    Ok(match ctx.session.db.memory_usage(key, samples)? {
        Some(n) => Frame::Integer(n.min(i64::MAX as u64) as i64),
        None => Frame::Null,
    })
}

/// MEMORY STATS: Redis 7.0's fields in its order, with Strata's figures (docs/differences.md).
fn memory_stats(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    use crate::memory_overhead::Figure;
    let m = ctx.server.memory_overhead();
    let int = |n: u64| Frame::Integer(n.min(i64::MAX as u64) as i64);
    let name = |s: &str| Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()));
    let mut fields: Vec<(Frame, Frame)> = vec![
        (name("peak.allocated"), int(m.peak_allocated)),
        (name("total.allocated"), int(m.total_allocated)),
        (name("startup.allocated"), int(m.startup_allocated)),
        (name("replication.backlog"), int(m.repl_backlog)),
        (name("clients.slaves"), int(m.clients_slaves)),
        (name("clients.normal"), int(m.clients_normal)),
        (name("cluster.links"), int(0)),
        (name("aof.buffer"), int(0)),
        (name("lua.caches"), int(m.lua_caches)),
        (name("functions.caches"), int(m.functions_caches)),
    ];
    for d in &m.dbs {
        let tables = vec![
            (name("overhead.hashtable.main"), int(d.hashtable_main)),
            (name("overhead.hashtable.expires"), int(d.hashtable_expires)),
            (name("overhead.hashtable.slot-to-keys"), int(0)),
        ];
        fields.push((name(&format!("db.{}", d.db)), Frame::Map(tables)));
    }
    let a = m.allocator();
    fields.extend([
        (name("overhead.total"), int(m.overhead_total())),
        (name("keys.count"), int(m.keys())),
        (name("keys.bytes-per-key"), int(m.bytes_per_key())),
        (name("dataset.bytes"), Frame::Integer(m.dataset())),
        (
            name("dataset.percentage"),
            Frame::Double(m.dataset_percentage()),
        ),
        (name("peak.percentage"), Frame::Double(m.peak_percentage())),
        (name("allocator.allocated"), int(a.allocated)),
        (name("allocator.active"), int(a.active)),
        (name("allocator.resident"), int(a.resident)),
    ]);
    for (field, figure) in m.fragmentation() {
        let value = match figure {
            Figure::Bytes(n) => Frame::Integer(n),
            Figure::Ratio(r) => Frame::Double(r),
        };
        fields.push((name(field), value));
    }
    Ok(Frame::Map(fields))
}

/// MEMORY DOCTOR: Redis's report on the figures of MEMORY STATS.
fn memory_doctor(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    let report = ctx.server.memory_overhead().doctor();
    Ok(Frame::Verbatim(Bytes::from(report)))
}

/// MEMORY MALLOC-STATS: what Redis answers when it is not built with jemalloc.
fn memory_malloc_stats(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Bulk(Bytes::from_static(
        b"Stats not supported for the current allocator",
    )))
}

/// MEMORY PURGE: the allocator returns what it can; OK, as Redis without jemalloc.
fn memory_purge(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.memory_purge();
    Ok(Frame::ok())
}

fn memory_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use crate::errors;
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn memory_stats_lists_redis_fields_in_order() {
        let mut h = Harness::new();
        let Frame::Map(fields) = h.run(&["MEMORY", "STATS"]) else {
            panic!("MEMORY STATS is a map");
        };
        let names: Vec<String> = fields
            .iter()
            .map(|(k, _)| match k {
                Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "peak.allocated",
                "total.allocated",
                "startup.allocated",
                "replication.backlog",
                "clients.slaves",
                "clients.normal",
                "cluster.links",
                "aof.buffer",
                "lua.caches",
                "functions.caches",
                "overhead.total",
                "keys.count",
                "keys.bytes-per-key",
                "dataset.bytes",
                "dataset.percentage",
                "peak.percentage",
                "allocator.allocated",
                "allocator.active",
                "allocator.resident",
                "allocator-fragmentation.ratio",
                "allocator-fragmentation.bytes",
                "allocator-rss.ratio",
                "allocator-rss.bytes",
                "rss-overhead.ratio",
                "rss-overhead.bytes",
                "fragmentation",
                "fragmentation.bytes",
            ]
        );
        assert!(matches!(fields[14].1, Frame::Double(_)));
    }

    #[test]
    fn memory_malloc_stats_and_purge_answer_as_redis_without_jemalloc() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["MEMORY", "MALLOC-STATS"]),
            Frame::Bulk("Stats not supported for the current allocator".into())
        );
        assert_eq!(h.run(&["MEMORY", "PURGE"]), Frame::ok());
        assert!(matches!(h.run(&["MEMORY", "DOCTOR"]), Frame::Verbatim(_)));
    }

    #[test]
    fn expire_options_and_ttls() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["TTL", "k"]), Frame::Integer(-1));
        assert_eq!(h.run(&["TTL", "nokey"]), Frame::Integer(-2));
        assert_eq!(h.run(&["EXPIRE", "k", "100", "NX"]), Frame::Integer(1));
        assert_eq!(h.run(&["EXPIRE", "k", "50", "GT"]), Frame::Integer(0));
        assert_eq!(h.run(&["TTL", "k"]), Frame::Integer(100));
        assert_eq!(
            h.error(&["EXPIRE", "k", "1", "NX", "XX"]),
            errors::NX_XX_GT_LT
        );
        assert_eq!(
            h.error(&["EXPIRE", "k", "1", "GT", "LT"]),
            errors::GT_AND_LT
        );
        assert_eq!(
            h.error(&["EXPIRE", "k", "1", "SOON"]),
            "ERR Unsupported option SOON"
        );
        assert_eq!(
            h.error(&["EXPIRE", "k", "9223372036854775807"]),
            "ERR invalid expire time in 'expire' command"
        );
        assert_eq!(h.run(&["PERSIST", "k"]), Frame::Integer(1));
    }

    #[test]
    fn renames_copies_and_moves() {
        let mut h = Harness::new();
        h.run(&["SET", "a", "1"]);
        assert_eq!(h.run(&["COPY", "a", "b"]), Frame::Integer(1));
        assert_eq!(h.run(&["COPY", "a", "b"]), Frame::Integer(0));
        assert_eq!(h.run(&["COPY", "a", "b", "REPLACE"]), Frame::Integer(1));
        assert_eq!(h.error(&["COPY", "a", "a"]), errors::SAME_OBJECT);
        assert_eq!(h.error(&["COPY", "a", "b", "DB", "999"]), errors::DB_INDEX);
        assert_eq!(h.error(&["COPY", "a", "b", "DB"]), errors::SYNTAX);
        assert_eq!(h.run(&["MOVE", "a", "1"]), Frame::Integer(1));
        assert_eq!(h.error(&["MOVE", "b", "0"]), errors::SAME_OBJECT);
        assert_eq!(h.error(&["MOVE", "b", "x"]), errors::NOT_INTEGER);
        assert_eq!(h.run(&["RENAMENX", "b", "c"]), Frame::Integer(1));
        assert_eq!(h.error(&["RENAME", "nokey", "d"]), errors::NO_SUCH_KEY);
        assert_eq!(h.run(&["DEL", "c", "nokey"]), Frame::Integer(1));
        assert_eq!(h.run(&["EXISTS", "a", "c"]), Frame::Integer(0));
    }

    #[test]
    fn object_subcommands_and_scan() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "x"]);
        assert_eq!(h.run(&["TYPE", "l"]), Frame::simple("list"));
        assert_eq!(h.run(&["OBJECT", "REFCOUNT", "l"]), Frame::Integer(1));
        assert_eq!(h.run(&["OBJECT", "FREQ", "nokey"]), Frame::Null);
        assert_eq!(h.error(&["SCAN", "x"]), errors::INVALID_CURSOR);
        assert_eq!(
            h.run(&["SCAN", "0", "TYPE", "nosuchtype"]),
            Frame::Array(vec![Frame::bulk("0"), Frame::Array(vec![])])
        );
        assert_eq!(
            h.run(&["SCAN", "0", "TYPE", "list"]),
            Frame::Array(vec![Frame::bulk("0"), Frame::Array(vec![Frame::bulk("l")])])
        );
    }

    fn payload(h: &mut Harness, key: &str) -> Vec<u8> {
        match h.run(&["DUMP", key]) {
            Frame::Bulk(b) => b.to_vec(),
            other => panic!("DUMP {key} answered {other:?}"),
        }
    }

    #[test]
    fn dump_and_restore_round_trip_every_type() {
        let mut h = Harness::new();
        h.run(&["SET", "s", "12345"]);
        h.run(&["RPUSH", "l", "a", "1", "-300"]);
        h.run(&["SADD", "st", "x", "y"]);
        h.run(&["HSET", "hs", "f", "v"]);
        h.run(&["ZADD", "z", "1.5", "m", "-inf", "n"]);
        for (key, read) in [
            ("s", vec!["GET"]),
            ("l", vec!["LRANGE", "0", "-1"]),
            ("st", vec!["SMEMBERS"]),
            ("hs", vec!["HGETALL"]),
            ("z", vec!["ZRANGE", "0", "-1", "WITHSCORES"]),
        ] {
            let p = payload(&mut h, key);
            let copy = format!("{key}-copy");
            let reply = h.run_bytes(&[b"RESTORE", copy.as_bytes(), b"0", &p]);
            assert_eq!(reply, Frame::ok(), "{key}");
            let mut original = vec![read[0], key];
            original.extend(&read[1..]);
            let mut restored = vec![read[0], copy.as_str()];
            restored.extend(&read[1..]);
            assert_eq!(h.run(&original), h.run(&restored), "{key}");
        }
        assert_eq!(h.run(&["DUMP", "nokey"]), Frame::Null);
    }

    #[test]
    fn restore_checks_in_redis_order_and_keeps_the_old_value_on_failure() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "old"]);
        let good = payload(&mut h, "k");
        let restore = |h: &mut Harness, args: &[&[u8]]| {
            let mut argv: Vec<&[u8]> = vec![b"RESTORE"];
            argv.extend_from_slice(args);
            match h.run_bytes(&argv) {
                Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
                other if other == Frame::ok() => "OK".to_string(),
                other => format!("{other:?}"),
            }
        };
        assert_eq!(restore(&mut h, &[b"k", b"-1", b"junk"]), errors::BUSYKEY);
        assert_eq!(
            restore(&mut h, &[b"n", b"-1", b"junk"]),
            errors::INVALID_TTL
        );
        assert_eq!(
            restore(&mut h, &[b"n", b"0", b"junk"]),
            errors::DUMP_PAYLOAD
        );
        assert_eq!(
            restore(&mut h, &[b"n", b"0", &good, b"FREQ", b"256"]),
            errors::INVALID_FREQ
        );
        assert_eq!(
            restore(&mut h, &[b"n", b"0", &good, b"IDLETIME", b"-1"]),
            errors::INVALID_IDLETIME
        );
        assert_eq!(
            restore(
                &mut h,
                &[b"n", b"0", &good, b"IDLETIME", b"1", b"FREQ", b"1"]
            ),
            errors::SYNTAX
        );
        let empty_list = strata::rdb::payload::seal(vec![1, 0]);
        assert_eq!(
            restore(&mut h, &[b"k", b"0", &empty_list, b"REPLACE"]),
            errors::BAD_DATA_FORMAT
        );
        assert_eq!(h.run(&["GET", "k"]), Frame::bulk("old"));
        h.run(&["SET", "k", "new"]);
        assert_eq!(restore(&mut h, &[b"k", b"100000", &good, b"REPLACE"]), "OK");
        assert_eq!(h.run(&["GET", "k"]), Frame::bulk("old"));
        assert!(matches!(h.run(&["PTTL", "k"]), Frame::Integer(t) if t > 99_000));
    }
}
