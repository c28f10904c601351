//! The stream commands: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID, XREAD, XREADGROUP,
//! XACK, XPENDING, XCLAIM, XAUTOCLAIM and the XGROUP and XINFO containers. Each handler parses its
//! arguments in Redis 7.0's order (so the same error wins), calls `strata::Db`'s stream API
//! (`strata::stream`), raises Redis's keyspace events and builds Redis's reply. XREAD and
//! XREADGROUP block through the server's machinery for blocked clients ([`Outcome::Block`]): a
//! blocked call is run again for the signalled key in [`BlockMode::Serve`], XREAD with its `$`
//! IDs replaced by the IDs they meant when it blocked. Knows no other family.

use std::time::{Duration, Instant};

use bytes::Bytes;
use strata::stream::{
    AddId, ClaimOptions, GroupRead, GroupStart, MaybeEntry, PendingEntry, PendingQuery,
    StreamEntry, StreamError, StreamId, Trim, TrimStrategy,
};
use strata_resp::{Frame, Protocol};

use crate::command::*;
use crate::cursor::{self, Args, Failure, Reply};
use crate::errors;
use crate::help;
use crate::notify;
use crate::{BlockMode, BlockRequest, Ctx, Outcome};

/// Entries a blocked XREAD / XREADGROUP without COUNT is served at most (Redis's
/// `XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_DEFAULT_COUNT: u64 = 1000;

/// The stream commands' rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "xadd",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | UPDATE, 1, 0, 1, 0)
            .notes("UPDATE instead of INSERT because of the optional trimming feature")],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xadd),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
            summary: "Appends a new entry to a stream",
            syntax: "key [NOMKSTREAM] [trim: <strategy: MAXLEN | MINID> [operator: = | ~] threshold:string [LIMIT count]] <id_or_auto: * | id:string> field:string value:string [field:string value:string ...]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "xrange",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xrange),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
            summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval",
            syntax: "key start:string end:string [COUNT count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xrevrange",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xrevrange),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
            summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
            syntax: "key end:string start:string [COUNT count]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xlen",
        arity: Arity::Exactly(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xlen),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Return the number of entries in a stream",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xdel",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | DELETE, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xdel),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
            summary: "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
            syntax: "key id:string [id:string ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xtrim",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | DELETE, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xtrim),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
            summary: "Trims the stream to (approximately if '~' is passed) a certain size",
            syntax: "key <strategy: MAXLEN | MINID> [operator: = | ~] threshold:string [LIMIT count]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "xsetid",
        arity: Arity::AtLeast(3),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | UPDATE, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xsetid),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "An internal command for replicating stream values",
            syntax: "key last-id:string [ENTRIESADDED entries_added:integer] [MAXDELETEDID max_deleted_entry_id:string]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xread",
        arity: Arity::AtLeast(4),
        flags: Flags(READONLY | BLOCKING | MOVABLEKEYS),
        keys: Keys::Custom(Range::NONE, read_keys),
        key_specs: &[KeySpec::keyword(RO | ACCESS, "STREAMS", 1, -1, 1, 2)],
        acl: Acl(acl::STREAM),
        handler: Handler::Outcome(xread),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
            summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
            syntax: "[COUNT count] [BLOCK milliseconds:integer] STREAMS key [key ...] id:string [id:string ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xreadgroup",
        arity: Arity::AtLeast(7),
        flags: Flags(WRITE | BLOCKING | MOVABLEKEYS),
        keys: Keys::Custom(Range::NONE, read_keys),
        key_specs: &[KeySpec::keyword(RO | ACCESS, "STREAMS", 4, -1, 1, 2)],
        acl: Acl(acl::STREAM),
        handler: Handler::Outcome(xreadgroup),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
            summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
            syntax: "GROUP group:string consumer:string [COUNT count] [BLOCK milliseconds:integer] [NOACK] STREAMS key [key ...] id:string [id:string ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xack",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | UPDATE, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xack),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1) for each message ID processed.",
            summary: "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
            syntax: "key group:string id:string [id:string ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xpending",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xpending),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
            summary: "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
            syntax: "key group:string [filters: [IDLE min-idle-time:integer] start:string end:string count [consumer:string]]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "xclaim",
        arity: Arity::AtLeast(6),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | UPDATE, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xclaim),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
            summary: "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
            syntax: "key group:string consumer:string min-idle-time:string id:string [id:string ...] [IDLE ms:integer] [TIME unix-time-milliseconds:unix-time] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id:string]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "xautoclaim",
        arity: Arity::AtLeast(6),
        flags: Flags(WRITE | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | DELETE, 1, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xautoclaim),
        docs: Docs {
            group: "stream",
            since: "6.2.0",
            complexity: "O(1) if COUNT is small.",
            summary: "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
            syntax: "key group:string consumer:string min-idle-time:string start:string [COUNT count] [JUSTID]",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "xgroup",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(xgroup),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "Depends on subcommand.",
            summary: "A container for consumer groups commands",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xgroup|create",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RW | INSERT, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xgroup_create),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Create a consumer group.",
            syntax: "key groupname:string <id: id:string | $> [MKSTREAM] [ENTRIESREAD entries_read:integer]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xgroup|setid",
        arity: Arity::AtLeast(5),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RW | UPDATE, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xgroup_setid),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Set a consumer group to an arbitrary last delivered ID value.",
            syntax: "key groupname:string <id: id:string | $> [ENTRIESREAD entries_read:integer]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xgroup|destroy",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RW | DELETE, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xgroup_destroy),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).",
            summary: "Destroy a consumer group.",
            syntax: "key groupname:string",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xgroup|createconsumer",
        arity: Arity::Exactly(5),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RW | INSERT, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xgroup_createconsumer),
        docs: Docs {
            group: "stream",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Create a consumer in a consumer group.",
            syntax: "key groupname:string consumername:string",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xgroup|delconsumer",
        arity: Arity::Exactly(5),
        flags: Flags(WRITE),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RW | DELETE, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xgroup_delconsumer),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Delete a consumer from a consumer group.",
            syntax: "key groupname:string consumername:string",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xgroup|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xgroup_help),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Show helpful text about the different subcommands",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xinfo",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(xinfo),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "Depends on subcommand.",
            summary: "A container for stream introspection commands",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xinfo|stream",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xinfo_stream),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Get information about a stream",
            syntax: "key [full: FULL [COUNT count]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xinfo|groups",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xinfo_groups),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "List the consumer groups of a stream",
            syntax: "key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "xinfo|consumers",
        arity: Arity::Exactly(4),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RO | ACCESS, 2, 0, 1, 0)],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xinfo_consumers),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "List the consumers in a consumer group",
            syntax: "key groupname:string",
            tips: &["nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "xinfo|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::STREAM),
        handler: Handler::Reply(xinfo_help),
        docs: Docs {
            group: "stream",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Show helpful text about the different subcommands",
            syntax: "",
            tips: &[],
        },
    },
];

/// XREAD / XREADGROUP keys as Redis's `xreadGetKeys` finds them: skip the options up to
/// `STREAMS`, then the first half of what follows.
fn read_keys(argv: &[Bytes], db: u32, out: &mut Vec<(u32, usize)>) {
    let mut i = 1;
    let mut streams = None;
    while i < argv.len() {
        let a = &argv[i];
        if a.eq_ignore_ascii_case(b"BLOCK") || a.eq_ignore_ascii_case(b"COUNT") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"GROUP") {
            i += 3;
        } else if a.eq_ignore_ascii_case(b"NOACK") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"STREAMS") {
            streams = Some(i);
            break;
        } else {
            break;
        }
    }
    let Some(at) = streams else {
        return;
    };
    let n = argv.len() - at - 1;
    if n == 0 || !n.is_multiple_of(2) {
        return;
    }
    out.extend((at + 1..at + 1 + n / 2).map(|i| (db, i)));
}

// ----- parsing -----

/// Redis's `string2ull`: a strict decimal first, else `strtoull`'s leniency (leading blanks and
/// a `+` sign).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = strata::num::parse_i64(s) {
        return u64::try_from(v).ok();
    }
    let t = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&s[s.len()..], |p| &s[p..]);
    let t = t.strip_prefix(b"+").unwrap_or(t);
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

fn invalid_id() -> Failure {
    Failure::text(errors::STREAM_INVALID_ID)
}

/// Redis's `streamGenericParseIDOrReply`: `-`, `+` (unless `strict`), `ms` (with `missing_seq`)
/// or `ms-seq`.
fn parse_id(a: &[u8], missing_seq: u64, strict: bool) -> Result<StreamId, Failure> {
    if a.len() > 127 {
        return Err(invalid_id());
    }
    // C stops at a NUL byte.
    let a = match a.iter().position(|&b| b == 0) {
        Some(n) => &a[..n],
        None => a,
    };
    if a == b"-" || a == b"+" {
        if strict {
            return Err(invalid_id());
        }
        return Ok(if a == b"-" {
            StreamId::MIN
        } else {
            StreamId::MAX
        });
    }
    match a.iter().position(|&b| b == b'-') {
        Some(dash) => {
            let ms = parse_u64(&a[..dash]).ok_or_else(invalid_id)?;
            let seq = parse_u64(&a[dash + 1..]).ok_or_else(invalid_id)?;
            Ok(StreamId::new(ms, seq))
        }
        None => Ok(StreamId::new(
            parse_u64(a).ok_or_else(invalid_id)?,
            missing_seq,
        )),
    }
}

fn strict_id(a: &[u8]) -> Result<StreamId, Failure> {
    parse_id(a, 0, true)
}

/// XADD's ID: `ms-seq`, `ms` or `ms-*` (strict).
fn parse_add_id(a: &[u8]) -> Result<AddId, Failure> {
    if a.len() > 127 || a == b"-" || a == b"+" {
        return Err(invalid_id());
    }
    if let Some(ms) = a.strip_suffix(b"-*") {
        if !ms.contains(&b'-') {
            return Ok(AddId::AutoSeq(parse_u64(ms).ok_or_else(invalid_id)?));
        }
    }
    Ok(AddId::Exact(strict_id(a)?))
}

/// The start of an interval: `(id` is exclusive (strict), else `-`, `+` or an ID.
fn interval_start(a: &[u8]) -> Result<StreamId, Failure> {
    if a.len() > 1 && a[0] == b'(' {
        let id = parse_id(&a[1..], 0, true)?;
        return id
            .next()
            .ok_or_else(|| Failure::text(errors::STREAM_BAD_START));
    }
    parse_id(a, 0, false)
}

/// The end of an interval (a bare `ms` means `ms-<max>`).
fn interval_end(a: &[u8]) -> Result<StreamId, Failure> {
    if a.len() > 1 && a[0] == b'(' {
        let id = parse_id(&a[1..], u64::MAX, true)?;
        return id
            .prev()
            .ok_or_else(|| Failure::text(errors::STREAM_BAD_END));
    }
    parse_id(a, u64::MAX, false)
}

fn int_or(a: &[u8], msg: &str) -> Result<i64, Failure> {
    strata::num::parse_i64(a).ok_or_else(|| Failure::text(msg))
}

fn int(a: &[u8]) -> Result<i64, Failure> {
    int_or(a, errors::NOT_INTEGER)
}

/// What XADD / XTRIM options said.
struct AddOrTrim {
    trim: Option<Trim>,
    nomkstream: bool,
    /// Argument index of the ID (XADD), or `argv.len()` when none was met.
    id_at: usize,
    id: Option<AddId>,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`.
fn parse_add_or_trim(argv: &[Bytes], xadd: bool, node_max: u64) -> Result<AddOrTrim, Failure> {
    let mut strategy: Option<TrimStrategy> = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut nomkstream = false;
    let mut id = None;
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = &argv[i][..];
        if xadd && opt == b"*" {
            id = Some(AddId::Auto);
            break;
        } else if (opt.eq_ignore_ascii_case(b"MAXLEN") || opt.eq_ignore_ascii_case(b"MINID"))
            && more > 0
        {
            if strategy.is_some() {
                return Err(Failure::text(errors::STREAM_MAXLEN_AND_MINID));
            }
            approx = false;
            let next = &argv[i + 1][..];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let arg = &argv[i + 1];
            if opt.eq_ignore_ascii_case(b"MAXLEN") {
                let n = int(arg)?;
                if n < 0 {
                    return Err(Failure::text(errors::STREAM_MAXLEN_NEGATIVE));
                }
                strategy = Some(TrimStrategy::MaxLen(n as u64));
            } else {
                strategy = Some(TrimStrategy::MinId(strict_id(arg)?));
            }
            i += 2;
        } else if opt.eq_ignore_ascii_case(b"LIMIT") && more > 0 {
            let n = int(&argv[i + 1])?;
            if n < 0 {
                return Err(Failure::text(errors::STREAM_LIMIT_NEGATIVE));
            }
            limit = Some(n);
            i += 2;
        } else if xadd && opt.eq_ignore_ascii_case(b"NOMKSTREAM") {
            nomkstream = true;
            i += 1;
        } else if xadd {
            id = Some(parse_add_id(opt)?);
            break;
        } else {
            return Err(cursor::syntax());
        }
    }
    if limit.is_some_and(|l| l != 0) && strategy.is_none() {
        return Err(Failure::text(errors::STREAM_LIMIT_WITHOUT_STRATEGY));
    }
    if !xadd && strategy.is_none() {
        return Err(Failure::text(errors::STREAM_XTRIM_WITHOUT_STRATEGY));
    }
    if limit.is_some() && !approx {
        return Err(Failure::text(errors::STREAM_LIMIT_WITHOUT_APPROX));
    }
    // Redis's default LIMIT for `~`: 100 nodes (10000 when nodes are unbounded, at most 1000000).
    let limit = match limit {
        Some(l) => l as u64,
        None if approx => match 100u64.saturating_mul(node_max) {
            0 => 10_000,
            l => l.min(1_000_000),
        },
        None => 0,
    };
    Ok(AddOrTrim {
        trim: strategy.map(|strategy| Trim {
            strategy,
            approx,
            limit,
        }),
        nomkstream,
        id_at: i,
        id,
    })
}

/// The stream errors that read the same in every command.
fn stream_failure(e: strata::Error) -> Failure {
    match e {
        strata::Error::Stream(StreamError::IdTooSmall) => {
            Failure::text(errors::STREAM_ID_TOO_SMALL)
        }
        strata::Error::Stream(StreamError::Exhausted) => Failure::text(errors::STREAM_EXHAUSTED),
        strata::Error::Stream(StreamError::SetIdTooSmall) => {
            Failure::text(errors::XSETID_TOO_SMALL)
        }
        strata::Error::Stream(StreamError::EntriesAddedTooSmall) => {
            Failure::text(errors::XSETID_ENTRIES_ADDED_SMALL)
        }
        strata::Error::Stream(StreamError::MaxDeletedTooLarge) => {
            Failure::text(errors::XSETID_MAX_DELETED)
        }
        strata::Error::Stream(StreamError::BusyGroup) => Failure::text(errors::BUSYGROUP),
        e => e.into(),
    }
}

/// Maps [`StreamError::NoGroup`] to `msg`, other errors as usual.
fn or_nogroup(e: strata::Error, msg: impl FnOnce() -> String) -> Failure {
    match e {
        strata::Error::Stream(StreamError::NoGroup) => Failure::text(msg()),
        e => stream_failure(e),
    }
}

/// Records that the command left `key` modified only in ways Redis does not signal (a group's
/// state, not the entries): WATCH does not see it, as Redis calls `signalModifiedKey` only from
/// XADD, XDEL, XTRIM and XGROUP CREATE ... MKSTREAM.
fn unsignalled(ctx: &mut Ctx<'_>, key: &Bytes) {
    ctx.session.unchanged.push(key.clone());
}

// ----- replies -----

fn id_frame(id: StreamId) -> Frame {
    Frame::bulk(id.text())
}

fn fields_frame(fields: Vec<Vec<u8>>) -> Frame {
    Frame::bulk_array(fields)
}

fn entry_frame(e: StreamEntry) -> Frame {
    Frame::Array(vec![id_frame(e.id), fields_frame(e.fields)])
}

fn maybe_entry_frame((id, fields): MaybeEntry) -> Frame {
    Frame::Array(vec![
        id_frame(id),
        fields.map_or(Frame::NullArray, fields_frame),
    ])
}

fn entries_frame(entries: Vec<StreamEntry>) -> Frame {
    Frame::Array(entries.into_iter().map(entry_frame).collect())
}

fn map(ctx: &Ctx<'_>, pairs: Vec<(&str, Frame)>) -> Frame {
    let pairs = pairs
        .into_iter()
        .map(|(k, v)| (Frame::bulk(k.to_string()), v));
    if ctx.session.protocol == Protocol::Resp3 {
        Frame::Map(pairs.collect())
    } else {
        Frame::Array(pairs.flat_map(|(k, v)| [k, v]).collect())
    }
}

/// XREAD / XREADGROUP's reply: per stream, its key and entries (a map in RESP3).
fn per_stream(ctx: &Ctx<'_>, served: Vec<(Bytes, Frame)>) -> Frame {
    if ctx.session.protocol == Protocol::Resp3 {
        Frame::Map(
            served
                .into_iter()
                .map(|(k, v)| (Frame::Bulk(k), v))
                .collect(),
        )
    } else {
        Frame::Array(
            served
                .into_iter()
                .map(|(k, v)| Frame::Array(vec![Frame::Bulk(k), v]))
                .collect(),
        )
    }
}

fn opt_int(v: Option<u64>) -> Frame {
    v.map_or(Frame::Null, |n| Frame::Integer(n as i64))
}

// ----- commands -----

fn xadd(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let p = parse_add_or_trim(argv, true, ctx.session.db.stream_node_max_entries())?;
    let fields_at = p.id_at + 1;
    if argv.len() < fields_at + 2 || (argv.len() - fields_at) % 2 == 1 {
        return Err(Failure(errors::wrong_arity("xadd")));
    }
    let Some(id) = p.id else {
        return Err(Failure(errors::wrong_arity("xadd")));
    };
    if id == AddId::Exact(StreamId::MIN) {
        return Err(Failure::text(errors::STREAM_ID_ZERO));
    }
    let key = &argv[1];
    let fields: Vec<&[u8]> = argv[fields_at..].iter().map(|a| &a[..]).collect();
    let added = ctx
        .session
        .db
        .xadd(key, id, &fields, p.nomkstream, p.trim)
        .map_err(stream_failure)?;
    let Some(added) = added else {
        return Ok(Frame::Null);
    };
    ctx.notify(notify::STREAM, "xadd", key);
    if added.trimmed > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
    Ok(id_frame(added.id))
}

fn range_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], rev: bool) -> Reply {
    let (start_arg, end_arg) = if rev {
        (&argv[3], &argv[2])
    } else {
        (&argv[2], &argv[3])
    };
    let start = interval_start(start_arg)?;
    let end = interval_end(end_arg)?;
    let mut count: Option<u64> = None;
    let mut j = 4;
    while j < argv.len() {
        if argv[j].eq_ignore_ascii_case(b"COUNT") && j + 1 < argv.len() {
            count = Some(int(&argv[j + 1])?.max(0) as u64);
            j += 2;
        } else {
            return Err(cursor::syntax());
        }
    }
    let key = &argv[1];
    if count == Some(0) {
        // Redis answers a null array, after checking the type.
        ctx.session.db.xlen(key)?;
        return Ok(Frame::NullArray);
    }
    let (lo, hi) = (start, end);
    Ok(entries_frame(
        ctx.session.db.xrange(key, lo, hi, count, rev)?,
    ))
}

fn xrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    range_generic(ctx, argv, false)
}

fn xrevrange(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    range_generic(ctx, argv, true)
}

fn xlen(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = Args::new(argv).key()?;
    Ok(Frame::Integer(ctx.session.db.xlen(key)? as i64))
}

fn xdel(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = &argv[1];
    if !ctx.session.db.stream_exists(key)? {
        return Ok(Frame::Integer(0));
    }
    let ids = argv[2..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let n = ctx.session.db.xdel(key, &ids)?;
    if n > 0 {
        ctx.notify(notify::STREAM, "xdel", key);
    } else {
        unsignalled(ctx, key);
    }
    Ok(Frame::Integer(n as i64))
}

fn xtrim(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let p = parse_add_or_trim(argv, false, ctx.session.db.stream_node_max_entries())?;
    let Some(trim) = p.trim else {
        return Err(Failure::text(errors::STREAM_XTRIM_WITHOUT_STRATEGY));
    };
    let key = &argv[1];
    let n = ctx.session.db.xtrim(key, trim)?;
    if n > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
    } else {
        unsignalled(ctx, key);
    }
    Ok(Frame::Integer(n as i64))
}

fn xsetid(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = &argv[1];
    let id = strict_id(&argv[2])?;
    let mut entries_added = None;
    let mut max_deleted = None;
    let mut i = 3;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        if argv[i].eq_ignore_ascii_case(b"ENTRIESADDED") && more > 0 {
            let n = int(&argv[i + 1])?;
            if n < 0 {
                return Err(Failure::text(errors::XSETID_ENTRIES_ADDED_NEGATIVE));
            }
            entries_added = Some(n as u64);
        } else if argv[i].eq_ignore_ascii_case(b"MAXDELETEDID") && more > 0 {
            let md = strict_id(&argv[i + 1])?;
            if id < md {
                return Err(Failure::text(errors::XSETID_MAX_DELETED));
            }
            max_deleted = Some(md);
        } else {
            return Err(cursor::syntax());
        }
        i += 2;
    }
    let max_deleted = max_deleted.filter(|md| !md.is_zero());
    ctx.session
        .db
        .xsetid(key, id, entries_added, max_deleted)
        .map_err(stream_failure)?;
    ctx.notify(notify::STREAM, "xsetid", key);
    unsignalled(ctx, key);
    Ok(Frame::ok())
}

// ----- XREAD / XREADGROUP -----

/// What XREAD / XREADGROUP's options said.
struct ReadArgs<'a> {
    block: Option<u64>,
    count: u64,
    group: Option<(&'a Bytes, &'a Bytes)>,
    noack: bool,
    keys: &'a [Bytes],
    ids: &'a [Bytes],
}

fn parse_read<'a>(
    ctx: &Ctx<'_>,
    argv: &'a [Bytes],
    group_cmd: bool,
) -> Result<ReadArgs<'a>, Failure> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        keys: &[],
        ids: &[],
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let o = &argv[i][..];
        if o.eq_ignore_ascii_case(b"BLOCK") && more > 0 {
            if ctx.session.in_script {
                return Err(Failure::text(errors::stream_block_in_script(&argv[0])));
            }
            i += 1;
            let ms = int_or(&argv[i], errors::TIMEOUT_NOT_INTEGER)?;
            if ms < 0 {
                return Err(Failure::text(errors::TIMEOUT_NEGATIVE));
            }
            r.block = Some(ms as u64);
        } else if o.eq_ignore_ascii_case(b"COUNT") && more > 0 {
            i += 1;
            r.count = int(&argv[i])?.max(0) as u64;
        } else if o.eq_ignore_ascii_case(b"STREAMS") && more > 0 {
            let n = argv.len() - (i + 1);
            if !n.is_multiple_of(2) {
                return Err(Failure::text(errors::STREAM_UNBALANCED));
            }
            streams_at = Some(i + 1);
            break;
        } else if o.eq_ignore_ascii_case(b"GROUP") && more >= 2 {
            if !group_cmd {
                return Err(Failure::text(errors::STREAM_GROUP_ONLY_XREADGROUP));
            }
            r.group = Some((&argv[i + 1], &argv[i + 2]));
            i += 2;
        } else if o.eq_ignore_ascii_case(b"NOACK") {
            if !group_cmd {
                return Err(Failure::text(errors::STREAM_NOACK_ONLY_XREADGROUP));
            }
            r.noack = true;
        } else {
            return Err(cursor::syntax());
        }
        i += 1;
    }
    let Some(at) = streams_at else {
        return Err(cursor::syntax());
    };
    if group_cmd && r.group.is_none() {
        return Err(Failure::text(errors::STREAM_MISSING_GROUP));
    }
    let n = (argv.len() - at) / 2;
    r.keys = &argv[at..at + n];
    r.ids = &argv[at + n..];
    Ok(r)
}

fn block_deadline(ms: u64) -> Option<Instant> {
    match ms {
        0 => None,
        ms => Instant::now().checked_add(Duration::from_millis(ms)),
    }
}

/// Nothing served: wait (with `rerun` as the command to run again), or answer a null array.
fn wait_or_nothing(
    ctx: &Ctx<'_>,
    keys: &[Bytes],
    block: Option<u64>,
    rerun: Option<Vec<Bytes>>,
) -> Outcome {
    let Some(ms) = block else {
        return Outcome::Reply(Frame::NullArray);
    };
    if ctx.session.block_mode == BlockMode::NoBlock {
        return Outcome::Reply(Frame::NullArray);
    }
    Outcome::Block(BlockRequest {
        db: ctx.session.db.index(),
        keys: keys.to_vec(),
        deadline: block_deadline(ms),
        // A served reader that finds nothing leaves the key to the next waiter: readers do not
        // consume what they read, and group readers may read other groups.
        other_type: matches!(ctx.session.block_mode, BlockMode::Serve(_)),
        rerun,
    })
}

fn xread(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    let r = parse_read(ctx, argv, false)?;
    let db = &ctx.session.db;
    let serving = match &ctx.session.block_mode {
        BlockMode::Serve(k) => Some(k.clone()),
        _ => None,
    };
    // Resolve the IDs in order, as Redis does (type errors and bad IDs in argument order).
    let mut ids = Vec::with_capacity(r.keys.len());
    let mut rewritten = false;
    for (key, id) in r.keys.iter().zip(r.ids) {
        // Run again after a signal, a key that now holds another type keeps the reader waiting.
        let last = match db.stream_last_id(key) {
            Err(strata::Error::WrongType) if serving.is_some() => None,
            found => found?,
        };
        if &id[..] == b"$" {
            ids.push(last.unwrap_or(StreamId::MIN));
            rewritten = true;
        } else if &id[..] == b">" {
            return Err(Failure::text(errors::STREAM_GT_ONLY_XREADGROUP));
        } else {
            ids.push(strict_id(id)?);
        }
    }
    let count = match (r.count, &serving) {
        (0, Some(_)) => BLOCKED_DEFAULT_COUNT,
        (n, _) => n,
    };
    let mut served = Vec::new();
    for (key, &after) in r.keys.iter().zip(&ids) {
        if serving.as_ref().is_some_and(|k| k != key) {
            continue;
        }
        let entries = match (db.stream_last_id(key), after.next()) {
            (Ok(Some(last)), Some(start)) if last > after => db.xrange(
                key,
                start,
                StreamId::MAX,
                (count > 0).then_some(count),
                false,
            )?,
            (Err(strata::Error::WrongType), _) if serving.is_some() => continue,
            (Err(e), _) => return Err(e.into()),
            _ => continue,
        };
        // Only entries are served (an XDEL can leave the last ID past the last entry).
        if entries.is_empty() {
            continue;
        }
        served.push((key.clone(), entries_frame(entries)));
    }
    if !served.is_empty() {
        return Ok(Outcome::Reply(per_stream(ctx, served)));
    }
    let rerun = rewritten.then(|| {
        let mut v = argv.to_vec();
        let at = argv.len() - ids.len();
        for (i, id) in ids.iter().enumerate() {
            v[at + i] = Bytes::from(id.to_string());
        }
        v
    });
    Ok(wait_or_nothing(ctx, r.keys, r.block, rerun))
}

fn nogroup_read(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

fn xreadgroup(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    let r = parse_read(ctx, argv, true)?;
    let Some((group, consumer)) = r.group else {
        return Err(Failure::text(errors::STREAM_MISSING_GROUP));
    };
    let serving = match &ctx.session.block_mode {
        BlockMode::Serve(k) => Some(k.clone()),
        _ => None,
    };
    let db = ctx.session.db.clone();
    if let Some(k) = &serving {
        // Run again for a signalled key: only that stream, and Redis's errors for a stream or
        // group that went away while waiting.
        let gone = match db.stream_has_group(k, group) {
            Ok(true) => None,
            Ok(false) if db.stream_exists(k).unwrap_or(false) => Some(errors::STREAM_GROUP_GONE),
            Ok(false) | Err(strata::Error::WrongType) => Some(errors::STREAM_KEY_GONE),
            Err(e) => return Err(e.into()),
        };
        if let Some(msg) = gone {
            return Ok(Outcome::Reply(errors::err(msg)));
        }
        let count = if r.count == 0 {
            BLOCKED_DEFAULT_COUNT
        } else {
            r.count
        };
        let existed = db.stream_has_consumer(k, group, consumer)?;
        let got = db.xreadgroup(k, group, consumer, GroupRead::New, count, r.noack)?;
        if got.is_empty() {
            return Ok(wait_or_nothing(ctx, r.keys, r.block, None));
        }
        notify_created_consumer(ctx, k, group, consumer, existed)?;
        unsignalled(ctx, k);
        let frame = Frame::Array(got.into_iter().map(maybe_entry_frame).collect());
        return Ok(Outcome::Reply(per_stream(ctx, vec![(k.clone(), frame)])));
    }
    let mut reads = Vec::with_capacity(r.keys.len());
    for (key, id) in r.keys.iter().zip(r.ids) {
        if !db.stream_has_group(key, group)? {
            return Err(Failure::text(nogroup_read(key, group)));
        }
        let from = if &id[..] == b"$" {
            return Err(Failure::text(errors::STREAM_DOLLAR_IN_XREADGROUP));
        } else if &id[..] == b">" {
            GroupRead::New
        } else {
            GroupRead::History(strict_id(id)?)
        };
        reads.push(from);
    }
    for key in r.keys {
        unsignalled(ctx, key);
    }
    let mut served = Vec::new();
    for (key, from) in r.keys.iter().zip(reads) {
        let existed = db.stream_has_consumer(key, group, consumer)?;
        let got = db
            .xreadgroup(key, group, consumer, from, r.count, r.noack)
            .map_err(|e| or_nogroup(e, || nogroup_read(key, group)))?;
        notify_created_consumer(ctx, key, group, consumer, existed)?;
        if from == GroupRead::New && got.is_empty() {
            continue;
        }
        let frame = Frame::Array(got.into_iter().map(maybe_entry_frame).collect());
        served.push((key.clone(), frame));
    }
    if !served.is_empty() {
        return Ok(Outcome::Reply(per_stream(ctx, served)));
    }
    Ok(wait_or_nothing(ctx, r.keys, r.block, None))
}

/// A consumer that XREADGROUP, XCLAIM or XAUTOCLAIM created on the way raises
/// `xgroup-createconsumer`, as Redis's `streamCreateConsumer` does (`existed`: whether it was
/// there before the command).
fn notify_created_consumer(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    existed: bool,
) -> Result<(), Failure> {
    if !existed && ctx.session.db.stream_has_consumer(key, group, consumer)? {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    Ok(())
}

// ----- groups -----

fn xack(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let (key, group) = (&argv[1], &argv[2]);
    if !ctx.session.db.stream_has_group(key, group)? {
        return Ok(Frame::Integer(0));
    }
    let ids = argv[3..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let acked = ctx.session.db.xack(key, group, &ids)?;
    unsignalled(ctx, key);
    Ok(Frame::Integer(acked as i64))
}

fn nogroup(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

fn xpending(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let argc = argv.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(cursor::syntax());
    }
    let (key, group) = (&argv[1], &argv[2]);
    let mut query = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = None;
        if argv[3].eq_ignore_ascii_case(b"IDLE") {
            min_idle = Some(int(&argv[4])?);
            if argc < 8 {
                return Err(cursor::syntax());
            }
            at += 2;
        }
        let count = int(argv.get(at + 2).ok_or_else(cursor::syntax)?)?.max(0) as u64;
        let start = interval_start(&argv[at])?;
        let end = interval_end(argv.get(at + 1).ok_or_else(cursor::syntax)?)?;
        // Anything after the consumer is ignored, as Redis does.
        let consumer = argv.get(at + 3);
        query = Some((start, end, count, min_idle, consumer));
    }
    let db = &ctx.session.db;
    let Some((start, end, count, min_idle, consumer)) = query else {
        let s = db
            .xpending_summary(key, group)
            .map_err(|e| or_nogroup(e, || nogroup(key, group)))?;
        let Some((lo, hi)) = s.range else {
            return Ok(Frame::Array(vec![
                Frame::Integer(0),
                Frame::Null,
                Frame::Null,
                Frame::NullArray,
            ]));
        };
        let consumers = s
            .consumers
            .into_iter()
            .map(|(name, n)| Frame::Array(vec![Frame::bulk(name), Frame::bulk(n.to_string())]));
        return Ok(Frame::Array(vec![
            Frame::Integer(s.count as i64),
            id_frame(lo),
            id_frame(hi),
            Frame::Array(consumers.collect()),
        ]));
    };
    let entries = db
        .xpending(
            key,
            group,
            PendingQuery {
                start,
                end,
                count,
                min_idle: min_idle.filter(|&m| m != 0).map(|m| m.max(0) as u64),
                consumer: consumer.map(|c| &c[..]),
            },
        )
        .map_err(|e| or_nogroup(e, || nogroup(key, group)))?;
    let now = strata::now_ms();
    Ok(Frame::Array(
        entries
            .into_iter()
            .map(|p: PendingEntry| {
                Frame::Array(vec![
                    id_frame(p.id),
                    Frame::bulk(p.consumer),
                    Frame::Integer(now.saturating_sub(p.delivery_ms) as i64),
                    Frame::Integer(p.deliveries as i64),
                ])
            })
            .collect(),
    ))
}

fn xclaim(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let (key, group, consumer) = (&argv[1], &argv[2], &argv[3]);
    if !ctx.session.db.stream_has_group(key, group)? {
        return Err(Failure::text(nogroup(key, group)));
    }
    let min_idle = int_or(&argv[4], errors::XCLAIM_MIN_IDLE)?.max(0) as u64;
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match strict_id(&argv[j]) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = strata::now_ms() as i64;
    let mut o = ClaimOptions {
        min_idle,
        ..ClaimOptions::default()
    };
    let mut delivery: Option<i64> = None;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = &argv[j][..];
        if opt.eq_ignore_ascii_case(b"FORCE") {
            o.force = true;
        } else if opt.eq_ignore_ascii_case(b"JUSTID") {
            o.just_id = true;
        } else if opt.eq_ignore_ascii_case(b"IDLE") && more > 0 {
            j += 1;
            let idle = int_or(&argv[j], errors::XCLAIM_IDLE)?;
            delivery = Some(now.saturating_sub(idle));
        } else if opt.eq_ignore_ascii_case(b"TIME") && more > 0 {
            j += 1;
            delivery = Some(int_or(&argv[j], errors::XCLAIM_TIME)?);
        } else if opt.eq_ignore_ascii_case(b"RETRYCOUNT") && more > 0 {
            j += 1;
            let rc = int_or(&argv[j], errors::XCLAIM_RETRYCOUNT)?;
            o.retry_count = (rc >= 0).then_some(rc as u64);
        } else if opt.eq_ignore_ascii_case(b"LASTID") && more > 0 {
            j += 1;
            o.last_id = Some(strict_id(&argv[j])?);
        } else {
            return Err(Failure::text(errors::xclaim_unknown_option(opt)));
        }
        j += 1;
    }
    o.delivery_ms = Some(match delivery {
        Some(d) if d >= 0 && d <= now => d as u64,
        _ => now as u64,
    });
    let got = claim_for(ctx, key, group, consumer, |db| {
        db.xclaim(key, group, consumer, &ids, o)
    })?;
    Ok(claimed_frame(got, o.just_id))
}

/// What XCLAIM and XAUTOCLAIM share around their claim (`claim`, on the session's database):
/// -NOGROUP worded for both, the `xgroup-createconsumer` event when the claim created
/// `consumer`, and a group change that WATCH does not see.
fn claim_for<T>(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    group: &[u8],
    consumer: &[u8],
    claim: impl FnOnce(&strata::Db) -> strata::Result<T>,
) -> Result<T, Failure> {
    let existed = ctx.session.db.stream_has_consumer(key, group, consumer)?;
    let got = claim(&ctx.session.db).map_err(|e| or_nogroup(e, || nogroup(key, group)))?;
    notify_created_consumer(ctx, key, group, consumer, existed)?;
    unsignalled(ctx, key);
    Ok(got)
}

/// Claimed entries as XCLAIM and XAUTOCLAIM reply them: entries, or IDs alone with JUSTID.
fn claimed_frame(claimed: Vec<MaybeEntry>, just_id: bool) -> Frame {
    let frame = |e: MaybeEntry| {
        if just_id {
            id_frame(e.0)
        } else {
            maybe_entry_frame(e)
        }
    };
    Frame::Array(claimed.into_iter().map(frame).collect())
}

fn xautoclaim(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let (key, group, consumer) = (&argv[1], &argv[2], &argv[3]);
    let min_idle = int_or(&argv[4], errors::XAUTOCLAIM_MIN_IDLE)?.max(0) as u64;
    let start = interval_start(&argv[5])?;
    let mut count = 100u64;
    let mut just_id = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if argv[j].eq_ignore_ascii_case(b"COUNT") && more > 0 {
            let max = i64::MAX / 16;
            count = match strata::num::parse_i64(&argv[j + 1]) {
                Some(n) if (1..=max).contains(&n) => n as u64,
                _ => return Err(Failure::text(errors::XAUTOCLAIM_COUNT)),
            };
            j += 1;
        } else if argv[j].eq_ignore_ascii_case(b"JUSTID") {
            just_id = true;
        } else {
            return Err(cursor::syntax());
        }
        j += 1;
    }
    if !ctx.session.db.stream_has_group(key, group)? {
        return Err(Failure::text(nogroup(key, group)));
    }
    let (next, claimed, deleted) = claim_for(ctx, key, group, consumer, |db| {
        db.xautoclaim(key, group, consumer, min_idle, start, count, just_id)
    })?;
    Ok(Frame::Array(vec![
        id_frame(next),
        claimed_frame(claimed, just_id),
        Frame::Array(deleted.into_iter().map(id_frame).collect()),
    ]))
}

// ----- XGROUP -----

fn xgroup(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "xgroup"))
}

/// The options after `<id>` of CREATE (MKSTREAM, ENTRIESREAD) and SETID (ENTRIESREAD), then the
/// checks every XGROUP subcommand makes on its key and group, in Redis's order.
fn xgroup_prelude(
    ctx: &Ctx<'_>,
    argv: &[Bytes],
    create: bool,
    setid: bool,
    needs_group: bool,
) -> Result<(bool, Option<u64>), Failure> {
    let mut mkstream = false;
    let mut entries_read = None;
    let mut i = 5;
    while i < argv.len() {
        if create && argv[i].eq_ignore_ascii_case(b"MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if (create || setid)
            && argv[i].eq_ignore_ascii_case(b"ENTRIESREAD")
            && i + 1 < argv.len()
        {
            let n = int(&argv[i + 1])?;
            if n < -1 {
                return Err(Failure::text(errors::ENTRIESREAD_NEGATIVE));
            }
            entries_read = (n >= 0).then_some(n as u64);
            i += 2;
        } else {
            return Err(Failure(errors::unknown_subcommand_or_arity(
                "xgroup", &argv[1],
            )));
        }
    }
    let (key, group) = (&argv[2], &argv[3]);
    let exists = ctx.session.db.stream_exists(key)?;
    if !mkstream {
        if !exists {
            return Err(Failure::text(errors::XGROUP_NEEDS_KEY));
        }
        if needs_group && !ctx.session.db.stream_has_group(key, group)? {
            return Err(Failure::text(nogroup_for_key(key, group)));
        }
    }
    Ok((mkstream, entries_read))
}

fn nogroup_for_key(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    )
}

fn group_start(a: &[u8], strict: bool) -> Result<GroupStart, Failure> {
    if a == b"$" {
        return Ok(GroupStart::Last);
    }
    Ok(GroupStart::Id(parse_id(a, 0, strict)?))
}

fn xgroup_create(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let (mkstream, entries_read) = xgroup_prelude(ctx, argv, true, false, false)?;
    if argv.len() > 8 {
        return Err(Failure(errors::unknown_subcommand_or_arity(
            "xgroup", &argv[1],
        )));
    }
    let start = group_start(&argv[4], true)?;
    let (key, group) = (&argv[2], &argv[3]);
    let existed = ctx.session.db.stream_exists(key)?;
    ctx.session
        .db
        .xgroup_create(key, group, start, mkstream, entries_read)
        .map_err(stream_failure)?;
    if existed {
        unsignalled(ctx, key);
    }
    ctx.notify(notify::STREAM, "xgroup-create", key);
    Ok(Frame::ok())
}

fn xgroup_setid(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let (_, entries_read) = xgroup_prelude(ctx, argv, false, true, true)?;
    if argv.len() != 5 && argv.len() != 7 {
        return Err(Failure(errors::unknown_subcommand_or_arity(
            "xgroup", &argv[1],
        )));
    }
    let start = group_start(&argv[4], false)?;
    let (key, group) = (&argv[2], &argv[3]);
    ctx.session
        .db
        .xgroup_setid(key, group, start, entries_read)
        .map_err(|e| or_nogroup(e, || nogroup_for_key(key, group)))?;
    ctx.notify(notify::STREAM, "xgroup-setid", key);
    unsignalled(ctx, key);
    Ok(Frame::ok())
}

fn xgroup_destroy(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    xgroup_prelude(ctx, argv, false, false, false)?;
    let (key, group) = (&argv[2], &argv[3]);
    let gone = ctx.session.db.xgroup_destroy(key, group)?;
    if gone {
        ctx.notify(notify::STREAM, "xgroup-destroy", key);
    }
    unsignalled(ctx, key);
    Ok(Frame::Integer(i64::from(gone)))
}

fn xgroup_createconsumer(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    xgroup_prelude(ctx, argv, false, false, true)?;
    let (key, group, name) = (&argv[2], &argv[3], &argv[4]);
    let created = ctx
        .session
        .db
        .xgroup_createconsumer(key, group, name)
        .map_err(|e| or_nogroup(e, || nogroup_for_key(key, group)))?;
    if created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    unsignalled(ctx, key);
    Ok(Frame::Integer(i64::from(created)))
}

fn xgroup_delconsumer(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    xgroup_prelude(ctx, argv, false, false, true)?;
    let (key, group, name) = (&argv[2], &argv[3], &argv[4]);
    let existed = ctx
        .session
        .db
        .xinfo_consumers(key, group)
        .map_err(|e| or_nogroup(e, || nogroup_for_key(key, group)))?
        .iter()
        .any(|c| c.name == name[..]);
    let pending = ctx
        .session
        .db
        .xgroup_delconsumer(key, group, name)
        .map_err(|e| or_nogroup(e, || nogroup_for_key(key, group)))?;
    if existed {
        ctx.notify(notify::STREAM, "xgroup-delconsumer", key);
    }
    unsignalled(ctx, key);
    Ok(Frame::Integer(pending as i64))
}

fn xgroup_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    ))
}

// ----- XINFO -----

fn xinfo(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "xinfo"))
}

fn xinfo_stream(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = &argv[2];
    let db = ctx.session.db.clone();
    let Some((info, first, last)) = db.xinfo_stream(key)? else {
        return Err(Failure::text(errors::NO_SUCH_KEY));
    };
    let opts = &argv[3..];
    let full = !opts.is_empty();
    let mut count = 10u64;
    if full {
        let bad = || Failure(errors::unknown_subcommand_or_arity("xinfo", &argv[1]));
        if (opts.len() != 1 && opts.len() != 3) || !opts[0].eq_ignore_ascii_case(b"FULL") {
            return Err(bad());
        }
        if opts.len() == 3 {
            if !opts[1].eq_ignore_ascii_case(b"COUNT") {
                return Err(bad());
            }
            let n = int(&opts[2])?;
            count = if n < 0 { 10 } else { n as u64 };
        }
    }
    let mut pairs = vec![
        ("length", Frame::Integer(info.length as i64)),
        ("radix-tree-keys", Frame::Integer(info.nodes as i64)),
        ("radix-tree-nodes", Frame::Integer(radix_nodes(info.nodes))),
        ("last-generated-id", id_frame(info.last_id)),
        ("max-deleted-entry-id", id_frame(info.max_deleted)),
        ("entries-added", Frame::Integer(info.entries_added as i64)),
        ("recorded-first-entry-id", id_frame(info.first_id)),
    ];
    if !full {
        pairs.push(("groups", Frame::Integer(info.groups as i64)));
        pairs.push(("first-entry", first.map_or(Frame::Null, entry_frame)));
        pairs.push(("last-entry", last.map_or(Frame::Null, entry_frame)));
        return Ok(map(ctx, pairs));
    }
    let limit = (count > 0).then_some(count);
    let entries = db.xrange(key, StreamId::MIN, StreamId::MAX, limit, false)?;
    pairs.push(("entries", entries_frame(entries)));
    let mut groups = Vec::new();
    for g in db.xinfo_groups(key)?.unwrap_or_default() {
        let pel = db.xpending(
            key,
            &g.name,
            PendingQuery {
                start: StreamId::MIN,
                end: StreamId::MAX,
                count: if count == 0 { u64::MAX } else { count },
                min_idle: None,
                consumer: None,
            },
        )?;
        let pending = pel.into_iter().map(|p| {
            Frame::Array(vec![
                id_frame(p.id),
                Frame::bulk(p.consumer),
                Frame::Integer(p.delivery_ms as i64),
                Frame::Integer(p.deliveries as i64),
            ])
        });
        let mut consumers = Vec::new();
        for c in db.xinfo_consumers(key, &g.name)? {
            let own = db.stream_consumer_pending(key, &g.name, &c.name, count)?;
            let own = own.into_iter().map(|p| {
                Frame::Array(vec![
                    id_frame(p.id),
                    Frame::Integer(p.delivery_ms as i64),
                    Frame::Integer(p.deliveries as i64),
                ])
            });
            consumers.push(map(
                ctx,
                vec![
                    ("name", Frame::bulk(c.name)),
                    ("seen-time", Frame::Integer(c.seen_ms as i64)),
                    ("pel-count", Frame::Integer(c.pending as i64)),
                    ("pending", Frame::Array(own.collect())),
                ],
            ));
        }
        groups.push(map(
            ctx,
            vec![
                ("name", Frame::bulk(g.name)),
                ("last-delivered-id", id_frame(g.last_delivered)),
                ("entries-read", opt_int(g.entries_read)),
                ("lag", g.lag.map_or(Frame::Null, Frame::Integer)),
                ("pel-count", Frame::Integer(g.pending as i64)),
                ("pending", Frame::Array(pending.collect())),
                ("consumers", Frame::Array(consumers)),
            ],
        ));
    }
    pairs.push(("groups", Frame::Array(groups)));
    Ok(map(ctx, pairs))
}

/// Redis's radix tree's node count for a stream of `keys` nodes can't be reproduced from disk
/// (it depends on the shape of the keys); this is its value for the common small cases.
fn radix_nodes(keys: u64) -> i64 {
    if keys == 0 {
        1
    } else {
        keys as i64 + 1
    }
}

fn xinfo_groups(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let key = &argv[2];
    let Some(groups) = ctx.session.db.xinfo_groups(key)? else {
        return Err(Failure::text(errors::NO_SUCH_KEY));
    };
    Ok(Frame::Array(
        groups
            .into_iter()
            .map(|g| {
                map(
                    ctx,
                    vec![
                        ("name", Frame::bulk(g.name)),
                        ("consumers", Frame::Integer(g.consumers as i64)),
                        ("pending", Frame::Integer(g.pending as i64)),
                        ("last-delivered-id", id_frame(g.last_delivered)),
                        ("entries-read", opt_int(g.entries_read)),
                        ("lag", g.lag.map_or(Frame::Null, Frame::Integer)),
                    ],
                )
            })
            .collect(),
    ))
}

fn xinfo_consumers(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let (key, group) = (&argv[2], &argv[3]);
    if !ctx.session.db.stream_exists(key)? {
        return Err(Failure::text(errors::NO_SUCH_KEY));
    }
    let consumers = ctx
        .session
        .db
        .xinfo_consumers(key, group)
        .map_err(|e| or_nogroup(e, || nogroup_for_key(key, group)))?;
    let now = strata::now_ms();
    Ok(Frame::Array(
        consumers
            .into_iter()
            .map(|c| {
                map(
                    ctx,
                    vec![
                        ("name", Frame::bulk(c.name)),
                        ("pending", Frame::Integer(c.pending as i64)),
                        ("idle", Frame::Integer(now.saturating_sub(c.seen_ms) as i64)),
                    ],
                )
            })
            .collect(),
    ))
}

fn xinfo_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_reads_them() {
        assert_eq!(parse_id(b"5", 7, false).ok(), Some(StreamId::new(5, 7)));
        assert_eq!(parse_id(b"5-3", 7, false).ok(), Some(StreamId::new(5, 3)));
        assert_eq!(parse_id(b"-", 0, false).ok(), Some(StreamId::MIN));
        assert!(parse_id(b"-", 0, true).is_err());
        assert!(parse_id(b"5-x", 0, false).is_err());
        assert!(parse_id(b"-1", 0, false).is_err());
        assert_eq!(parse_add_id(b"7-*").ok(), Some(AddId::AutoSeq(7)));
        assert!(interval_start(b"(18446744073709551615-18446744073709551615").is_err());
    }

    #[test]
    fn xadd_then_xrange_round_trips() {
        let mut h = crate::testing::Harness::new();
        assert_eq!(h.run(&["XADD", "s", "1-1", "f", "v"]), Frame::bulk("1-1"));
        assert_eq!(
            h.error(&["XADD", "s", "1-1", "f", "v"]),
            "ERR The ID specified in XADD is equal or smaller than the target stream top item"
        );
        assert_eq!(
            h.run(&["XRANGE", "s", "-", "+"]),
            Frame::Array(vec![Frame::Array(vec![
                Frame::bulk("1-1"),
                Frame::Array(vec![Frame::bulk("f"), Frame::bulk("v")])
            ])])
        );
        assert_eq!(h.run(&["XLEN", "s"]), Frame::Integer(1));
    }

    #[test]
    fn xread_keys_follow_streams() {
        let argv: Vec<Bytes> = ["XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "0"]
            .iter()
            .map(|s| Bytes::from(s.to_string()))
            .collect();
        let mut out = Vec::new();
        read_keys(&argv, 0, &mut out);
        assert_eq!(out, vec![(0, 4), (0, 5)]);
    }
}
