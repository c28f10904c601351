//! What a command *is*: one [`CommandSpec`] row with named, typed fields — name, [`Arity`],
//! [`Flags`] (a bit set printed in Redis 7.0's spelling, hidden flags marked), a key-position
//! rule ([`Keys`]), its explicit ACL categories ([`Acl`]; the rest follow from the flags as
//! Redis derives them), its [`Docs`] and its handler. COMMAND INFO/DOCS/GETKEYS, arity checks,
//! locking and ACL categories all read these rows. This module knows no family and no other
//! command module; the registry of every row is [`crate::registry`].
//!
//! ```ignore
//! CommandSpec {
//!     name: "get",
//!     arity: Arity::Exactly(2),
//!     flags: Flags(READONLY | FAST),
//!     keys: Keys::Range(Range::new(1, 1, 1)),
//!     acl: Acl(acl::STRING),
//!     handler: Handler::Reply(get),
//!     docs: Docs { group: "string", since: "1.0.0", complexity: "O(1)", summary: "...", syntax: "key" },
//! }
//! ```

use bytes::Bytes;
use strata_resp::Frame;

use crate::cursor::{into_frame, Failure, Reply};
use crate::outcome::Outcome;
use crate::Ctx;

/// A command handler: typed parsing of `argv` (argv[0] is the command name, read it with
/// [`crate::cursor::Args`]), one call into the data model, then what the connection does — or
/// the error reply, which `?` carries ([`crate::cursor::Failure`]).
#[derive(Clone, Copy)]
pub enum Handler {
    /// One reply: nearly every command.
    Reply(fn(&mut Ctx<'_>, &[Bytes]) -> Reply),
    /// A command that may do more than reply once ([`Outcome`]): block (BLPOP), answer several
    /// times (SUBSCRIBE), hand the connection over (PSYNC), close after its reply (QUIT), or
    /// stay silent (REPLCONF ACK).
    Outcome(fn(&mut Ctx<'_>, &[Bytes]) -> Result<Outcome, Failure>),
}

impl Handler {
    /// Runs the handler; a failure is its error reply.
    #[inline]
    pub fn call(self, ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Outcome {
        match self {
            Handler::Reply(f) => Outcome::Reply(into_frame(f(ctx, argv))),
            Handler::Outcome(f) => f(ctx, argv).unwrap_or_else(|e| Outcome::Reply(e.0)),
        }
    }
}

/// Finds the keys a [`Keys::Custom`] rule adds beyond its range: pushes `(database, argv
/// index)` pairs; `db` is the selected database.
pub type KeyFn = fn(argv: &[Bytes], db: u32, out: &mut Vec<(u32, usize)>);

/// Command flags, one bit each. The first ones are Redis's, listed in the order COMMAND INFO
/// prints them; the rest are hidden (Redis hides `may_replicate`, `sentinel`,
/// `only_sentinel`; the last ones are Strata's names for properties Redis keeps as name lists).
pub mod flag {
    pub const WRITE: u64 = 1;
    pub const READONLY: u64 = 1 << 1;
    pub const DENYOOM: u64 = 1 << 2;
    pub const MODULE: u64 = 1 << 3;
    pub const ADMIN: u64 = 1 << 4;
    pub const PUBSUB: u64 = 1 << 5;
    pub const NOSCRIPT: u64 = 1 << 6;
    pub const BLOCKING: u64 = 1 << 7;
    pub const LOADING: u64 = 1 << 8;
    pub const STALE: u64 = 1 << 9;
    pub const SKIP_MONITOR: u64 = 1 << 10;
    pub const SKIP_SLOWLOG: u64 = 1 << 11;
    pub const ASKING: u64 = 1 << 12;
    pub const FAST: u64 = 1 << 13;
    pub const NO_AUTH: u64 = 1 << 14;
    pub const NO_MANDATORY_KEYS: u64 = 1 << 15;
    pub const NO_ASYNC_LOADING: u64 = 1 << 16;
    pub const NO_MULTI: u64 = 1 << 17;
    pub const MOVABLEKEYS: u64 = 1 << 18;
    pub const ALLOW_BUSY: u64 = 1 << 19;
    /// Hidden: may cause replication without being a write (PUBLISH, EVAL, FCALL); a read-only
    /// script may not call it, and a script command holds its keys exclusively.
    pub const MAY_REPLICATE: u64 = 1 << 20;
    /// Hidden: also a Sentinel command.
    pub const SENTINEL: u64 = 1 << 21;
    /// Hidden: only a Sentinel command.
    pub const ONLY_SENTINEL: u64 = 1 << 22;
    /// Hidden (Strata): a RESP2 client in the subscribed state may run it.
    pub const WHEN_SUBSCRIBED: u64 = 1 << 23;
    /// Hidden (Strata): runs at once inside MULTI instead of being queued.
    pub const NOT_QUEUED: u64 = 1 << 24;
    /// Hidden (Strata): changes the selected database (followed through a transaction's queue).
    pub const SELECTS_DB: u64 = 1 << 25;
    /// Hidden (Strata): runs the transaction's queue (EXEC); refused, it discards the
    /// transaction and says why (Redis's `execCommandAbort`).
    pub const RUNS_QUEUE: u64 = 1 << 26;
    /// Hidden (Strata): looks its keys up without changing their access time (Redis's
    /// `LOOKUP_NOTOUCH`: EXISTS, TYPE, TTL, OBJECT...), or leaves that to the commands it runs
    /// (scripts). Every other command with keys counts as an access to them (OBJECT IDLETIME).
    pub const NO_TOUCH: u64 = 1 << 27;
    /// Hidden (Strata): holds its keys shared although it may write them, because it seldom
    /// does (PFCOUNT stores a stale cached cardinality). A handler run holding them shared that
    /// finds it must write asks for them exclusively instead ([`crate::Hold`]) and is run again
    /// holding them so.
    pub const SHARED_FIRST: u64 = 1 << 28;
    /// No flag.
    pub const NONE: u64 = 0;
}
pub use flag::*;

/// The names COMMAND INFO prints, in its order; the hidden flags are absent.
const FLAG_NAMES: &[(u64, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (MODULE, "module"),
    (ADMIN, "admin"),
    (PUBSUB, "pubsub"),
    (NOSCRIPT, "noscript"),
    (BLOCKING, "blocking"),
    (LOADING, "loading"),
    (STALE, "stale"),
    (SKIP_MONITOR, "skip_monitor"),
    (SKIP_SLOWLOG, "skip_slowlog"),
    (ASKING, "asking"),
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    (NO_MANDATORY_KEYS, "no_mandatory_keys"),
    (NO_ASYNC_LOADING, "no_async_loading"),
    (NO_MULTI, "no_multi"),
    (MOVABLEKEYS, "movablekeys"),
    (ALLOW_BUSY, "allow_busy"),
];

/// A command's flags (the `flag::*` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flags(pub u64);

impl Flags {
    /// No flag.
    pub const NONE: Flags = Flags(0);

    /// Whether every bit of `f` is set.
    #[inline]
    pub fn has(self, f: u64) -> bool {
        self.0 & f == f
    }

    /// Whether any bit of `f` is set.
    #[inline]
    pub fn any(self, f: u64) -> bool {
        self.0 & f != 0
    }

    /// The visible flag names, in COMMAND INFO's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        FLAG_NAMES
            .iter()
            .filter(move |(bit, _)| self.has(*bit))
            .map(|(_, name)| *name)
    }
}

/// ACL categories, one bit each, in the order Redis lists them.
pub mod acl {
    pub const KEYSPACE: u32 = 1;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const STRING: u32 = 1 << 7;
    pub const BITMAP: u32 = 1 << 8;
    pub const HYPERLOGLOG: u32 = 1 << 9;
    pub const GEO: u32 = 1 << 10;
    pub const STREAM: u32 = 1 << 11;
    pub const PUBSUB: u32 = 1 << 12;
    pub const ADMIN: u32 = 1 << 13;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
    pub const SCRIPTING: u32 = 1 << 20;
    pub const NONE: u32 = 0;

    /// Every category's name, in bit order.
    pub const NAMES: &[&str] = &[
        "keyspace",
        "read",
        "write",
        "set",
        "sortedset",
        "list",
        "hash",
        "string",
        "bitmap",
        "hyperloglog",
        "geo",
        "stream",
        "pubsub",
        "admin",
        "fast",
        "slow",
        "blocking",
        "dangerous",
        "connection",
        "transaction",
        "scripting",
    ];
}

/// ACL categories (the `acl::*` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acl(pub u32);

impl Acl {
    /// No explicit category.
    pub const NONE: Acl = Acl(0);

    /// Whether the set holds category `c` (an `acl::*` bit).
    pub fn has(self, c: u32) -> bool {
        self.0 & c != 0
    }

    /// The category names, in Redis's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        acl::NAMES
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, n)| *n)
    }

    /// The category whose name is `name` (without `@`, any case).
    pub fn by_name(name: &[u8]) -> Option<Acl> {
        acl::NAMES
            .iter()
            .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
            .map(|i| Acl(1 << i))
    }
}

/// Redis arity: the exact number of arguments (name included), or a minimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly this many.
    Exactly(u8),
    /// At least this many.
    AtLeast(u8),
}

impl Arity {
    /// Whether `argc` arguments (name included) satisfy it.
    #[inline]
    pub fn ok(self, argc: usize) -> bool {
        match self {
            Arity::Exactly(n) => argc == n as usize,
            Arity::AtLeast(n) => argc >= n as usize,
        }
    }

    /// Redis's number: positive for exact, negative for a minimum.
    pub fn redis(self) -> i64 {
        match self {
            Arity::Exactly(n) => n as i64,
            Arity::AtLeast(n) => -(n as i64),
        }
    }
}

/// Key specification flags (what a command does with a key), in the order COMMAND INFO
/// prints them.
pub mod key_flag {
    pub const RO: u16 = 1;
    pub const RW: u16 = 1 << 1;
    pub const OW: u16 = 1 << 2;
    pub const RM: u16 = 1 << 3;
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    pub const NOT_KEY: u16 = 1 << 8;
    pub const INCOMPLETE: u16 = 1 << 9;
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    /// The names, in bit order.
    pub const NAMES: &[&str] = &[
        "RO",
        "RW",
        "OW",
        "RM",
        "access",
        "update",
        "insert",
        "delete",
        "not_key",
        "incomplete",
        "variable_flags",
    ];

    /// The names of the bits of `flags`, in COMMAND INFO's order.
    pub fn names(flags: u16) -> impl Iterator<Item = &'static str> {
        NAMES
            .iter()
            .enumerate()
            .filter(move |(i, _)| flags & (1 << i) != 0)
            .map(|(_, n)| *n)
    }
}
pub use key_flag::{
    ACCESS, DELETE, INCOMPLETE, INSERT, NOT_KEY, OW, RM, RO, RW, UPDATE, VARIABLE_FLAGS,
};

/// Where a key specification starts looking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begin {
    /// At this argument.
    Index(u8),
    /// After the first argument that is `keyword` (any case), looking from argument `startfrom`
    /// towards the end (from the end backwards when negative), the last argument excluded.
    Keyword {
        keyword: &'static str,
        startfrom: i8,
    },
    /// Nowhere that can be told from the arguments' positions.
    Unknown,
}

/// How a key specification finds its keys from where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Find {
    /// Redis's `range`: up to `lastkey` (relative; negative counts from the end), every
    /// `keystep`, at most `limit` (0: no limit).
    Range { lastkey: i8, keystep: u8, limit: u8 },
    /// Redis's `keynum`: the count at `keynumidx`, the first key at `firstkey`, every `keystep`.
    Keynum {
        keynumidx: u8,
        firstkey: u8,
        keystep: u8,
    },
    /// Not describable.
    Unknown,
}

/// One Redis 7 key specification, as COMMAND INFO prints it (and Redis's own command table
/// holds it).
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    /// `key_flag::*` bits.
    pub flags: u16,
    /// Where the search begins.
    pub begin: Begin,
    /// How the keys are found.
    pub find: Find,
    /// Redis's note on the spec (empty: none).
    pub notes: &'static str,
    /// For a spec flagged `variable_flags`: the flags a given call really has (SET with or
    /// without GET), as the command's `getkeys_proc` tells them in Redis.
    pub resolve: Option<fn(&[Bytes]) -> u16>,
}

impl KeySpec {
    /// Keys from index `index` up to `lastkey`, every `keystep`.
    pub const fn range(flags: u16, index: u8, lastkey: i8, keystep: u8, limit: u8) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Index(index),
            find: Find::Range {
                lastkey,
                keystep,
                limit,
            },
            notes: "",
            resolve: None,
        }
    }

    /// Keys counted by an argument, from index `index`.
    pub const fn keynum(
        flags: u16,
        index: u8,
        keynumidx: u8,
        firstkey: u8,
        keystep: u8,
    ) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Index(index),
            find: Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            },
            notes: "",
            resolve: None,
        }
    }

    /// Keys found after a keyword (GEORADIUS's `STORE key`), from argument `startfrom`.
    pub const fn keyword(
        flags: u16,
        keyword: &'static str,
        startfrom: i8,
        lastkey: i8,
        keystep: u8,
        limit: u8,
    ) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Keyword { keyword, startfrom },
            find: Find::Range {
                lastkey,
                keystep,
                limit,
            },
            notes: "",
            resolve: None,
        }
    }

    /// Keys that cannot be found from argument positions (SORT's BY, GET and STORE).
    pub const fn unknown(flags: u16, notes: &'static str) -> KeySpec {
        KeySpec {
            flags,
            begin: Begin::Unknown,
            find: Find::Unknown,
            notes,
            resolve: None,
        }
    }

    /// The same spec, whose flags vary with the call as `resolve` says.
    pub const fn resolve(self, resolve: fn(&[Bytes]) -> u16) -> KeySpec {
        KeySpec {
            resolve: Some(resolve),
            ..self
        }
    }

    /// Whether argument `pos` of `argv` is one of this spec's keys.
    pub fn covers(&self, argv: &[Bytes], pos: usize) -> bool {
        let Some(start) = self.start(argv) else {
            return false;
        };
        match self.find {
            Find::Range {
                lastkey, keystep, ..
            } => {
                let last = if lastkey < 0 {
                    argv.len() as i64 + lastkey as i64
                } else {
                    (start + lastkey as usize) as i64
                };
                pos >= start
                    && (pos as i64) <= last
                    && (pos - start).is_multiple_of(keystep.max(1) as usize)
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let n = argv
                    .get(start + keynumidx as usize)
                    .map_or(0, |a| strata::num::atoi(a).max(0) as usize);
                let first = start + firstkey as usize;
                pos >= first
                    && pos < first + n * keystep.max(1) as usize
                    && (pos - first).is_multiple_of(keystep.max(1) as usize)
            }
            Find::Unknown => false,
        }
    }

    /// Where the search for keys starts in `argv` (Redis's `getKeysUsingKeySpecs`): the index,
    /// or the argument after the keyword; None when the keyword is absent or the spec unknown.
    pub fn start(&self, argv: &[Bytes]) -> Option<usize> {
        match self.begin {
            Begin::Index(i) => Some(i as usize),
            Begin::Keyword { keyword, startfrom } => {
                let argc = argv.len() as i64;
                let (from, end) = if startfrom > 0 {
                    (startfrom as i64, argc - 1)
                } else {
                    (argc + startfrom as i64, 0)
                };
                let mut i = from;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                        return Some(i as usize + 1);
                    }
                    i += if from <= end { 1 } else { -1 };
                }
                None
            }
            Begin::Unknown => None,
        }
    }

    /// The same spec with Redis's note.
    pub const fn notes(self, notes: &'static str) -> KeySpec {
        KeySpec { notes, ..self }
    }

    /// The flag names, in COMMAND INFO's order.
    pub fn flag_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        key_flag::names(self.flags)
    }
}

/// Keys at fixed positions, as Redis's legacy `first`, `last`, `step` (first 0: none; a
/// negative last counts from the end: -1 is the last argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub first: u8,
    pub last: i8,
    pub step: u8,
}

impl Range {
    /// No keys.
    pub const NONE: Range = Range {
        first: 0,
        last: 0,
        step: 0,
    };

    /// Keys from `first` to `last` (negative: from the end), every `step`.
    pub const fn new(first: u8, last: i8, step: u8) -> Range {
        Range { first, last, step }
    }

    /// The positions of the keys in an `argc`-argument call.
    fn positions(self, argc: usize) -> impl Iterator<Item = usize> {
        let last = match (self.first, self.last) {
            (0, _) => -1,
            (_, l) if l < 0 => argc as i64 + l as i64,
            (_, l) => l as i64,
        };
        let end = (last + 1).clamp(0, argc as i64) as usize;
        (self.first as usize..end).step_by(self.step.max(1) as usize)
    }
}

/// Where a command's keys are.
#[derive(Clone, Copy)]
pub enum Keys {
    /// No keys.
    None,
    /// At fixed positions.
    Range(Range),
    /// At fixed positions (possibly none), then as many as the argument at this position says,
    /// right after it (`ZUNIONSTORE dst numkeys key...`, `EVAL script numkeys key...`). The
    /// count is read as C's `atoi` reads it, as Redis does.
    Counted(Range, u8),
    /// At fixed positions (reported by COMMAND INFO), plus those a function finds: MOVE's key in
    /// the other database, COPY ... DB's destination, SORT ... STORE's destination.
    Custom(Range, KeyFn),
}

impl Keys {
    /// The fixed-position part (Redis's legacy first/last/step).
    pub fn range(&self) -> Range {
        match *self {
            Keys::None => Range::NONE,
            Keys::Range(r) | Keys::Counted(r, _) | Keys::Custom(r, _) => r,
        }
    }

    /// Whether the command takes any key.
    pub fn any(&self) -> bool {
        !matches!(self, Keys::None)
    }
}

/// A command's documentation (COMMAND DOCS).
pub struct Docs {
    /// Documentation group (`string`, `generic`, `connection`, `server`...).
    pub group: &'static str,
    /// Redis version the command appeared in.
    pub since: &'static str,
    /// Time complexity.
    pub complexity: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// The argument grammar in the Redis documentation notation (see [`crate::syntax`]), the
    /// command name excluded; COMMAND DOCS derives its `arguments` from it.
    pub syntax: &'static str,
    /// Redis's command tips (COMMAND INFO): `nondeterministic_output`, `request_policy:...`.
    pub tips: &'static [&'static str],
}

/// One command (or one subcommand of a container such as CONFIG, named `container|sub`).
pub struct CommandSpec {
    /// Lowercase name.
    pub name: &'static str,
    /// How many arguments it takes.
    pub arity: Arity,
    /// Its flags.
    pub flags: Flags,
    /// Where its keys are.
    pub keys: Keys,
    /// Its key specifications, as Redis 7.0 describes the command's keys (COMMAND INFO).
    pub key_specs: &'static [KeySpec],
    /// Its explicit ACL categories; [`CommandSpec::acl_categories`] adds those its flags imply.
    pub acl: Acl,
    /// The handler; for containers, the dispatcher to subcommands.
    pub handler: Handler,
    /// Its documentation.
    pub docs: Docs,
}

impl CommandSpec {
    /// Whether `argc` arguments (name included) satisfy the arity.
    #[inline]
    pub fn arity_ok(&self, argc: usize) -> bool {
        self.arity.ok(argc)
    }

    /// Whether the row has every flag bit of `f`.
    #[inline]
    pub fn has(&self, f: u64) -> bool {
        self.flags.has(f)
    }

    /// The ACL categories as Redis's `setImplicitACLCategories` completes them: the row's own,
    /// plus @write, @read (not for scripting commands), @admin and @dangerous, @pubsub, @fast,
    /// @blocking from the flags, and @slow for whatever is not @fast.
    pub fn acl_categories(&self) -> Acl {
        let mut c = self.acl.0;
        let f = self.flags;
        if f.has(WRITE) {
            c |= acl::WRITE;
        }
        if f.has(READONLY) && c & acl::SCRIPTING == 0 {
            c |= acl::READ;
        }
        if f.has(ADMIN) {
            c |= acl::ADMIN | acl::DANGEROUS;
        }
        if f.has(PUBSUB) {
            c |= acl::PUBSUB;
        }
        if f.has(FAST) {
            c |= acl::FAST;
        }
        if f.has(BLOCKING) {
            c |= acl::BLOCKING;
        }
        if c & acl::FAST == 0 {
            c |= acl::SLOW;
        }
        Acl(c)
    }

    /// The positions of the keys in `argv` (argv[0] is the command name), each once, in order:
    /// the fixed ones, then the counted ones (or those a custom rule finds). None when the count
    /// is negative or runs past the end of `argv`. (COMMAND GETKEYS; the dispatcher uses
    /// [`CommandSpec::targets`].)
    pub fn key_positions(&self, argv: &[Bytes]) -> Option<Vec<usize>> {
        if let Keys::Counted(_, at) = self.keys {
            counted(argv, at as usize)?;
        }
        let mut targets = Vec::new();
        self.targets(argv, 0, &mut targets);
        let mut out: Vec<usize> = Vec::with_capacity(targets.len());
        for (_, i) in targets {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        Some(out)
    }

    /// The key-spec flags (`key_flag::*`) of the key at `pos` in `argv` (COMMAND
    /// GETKEYSANDFLAGS): those of the spec that finds it, resolved for this call when they vary;
    /// a key only a custom rule finds (SORT ... STORE) takes the last spec that cannot be told
    /// from positions.
    pub fn key_flags(&self, argv: &[Bytes], pos: usize) -> u16 {
        let spec = self
            .key_specs
            .iter()
            .find(|k| k.covers(argv, pos))
            .or_else(|| {
                self.key_specs
                    .iter()
                    .rev()
                    .find(|k| k.begin == Begin::Unknown)
            });
        match spec {
            Some(KeySpec {
                resolve: Some(resolve),
                ..
            }) => resolve(argv),
            Some(k) => k.flags,
            None => 0,
        }
    }

    /// The keys `argv` (a call of this command, run with database `db` selected) touches, as
    /// `(database, argv index)` pairs, pushed onto `out`: the fixed ones and the counted ones in
    /// `db`, plus those a custom rule finds (MOVE's key in the other database). Worked out once
    /// per command by the dispatcher, which hands the list to locks, keyspace events, WATCH and
    /// blocked-client wake-ups. A malformed count yields no keys at all (the command fails).
    pub fn targets(&self, argv: &[Bytes], db: u32, out: &mut Vec<(u32, usize)>) {
        let counted_keys = match self.keys {
            Keys::Counted(_, at) => match counted(argv, at as usize) {
                Some(keys) => Some(keys),
                None => return,
            },
            _ => None,
        };
        out.extend(self.keys.range().positions(argv.len()).map(|i| (db, i)));
        if let Some(keys) = counted_keys {
            out.extend(keys.map(|i| (db, i)));
        }
        if let Keys::Custom(_, find) = self.keys {
            find(argv, db, out);
        }
    }
}

/// Dispatches a container command (CONFIG, CLIENT, OBJECT, COMMAND...) to its subcommand row
/// among `rows` (the container's family's rows), checking the subcommand's arity. A subcommand
/// answers with one reply (none blocks, hands over or closes).
pub fn dispatch_sub(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    rows: &'static [CommandSpec],
    container: &str,
) -> Frame {
    let sub = rows.iter().find(|r| {
        r.name
            .split_once('|')
            .is_some_and(|(c, s)| c == container && s.as_bytes().eq_ignore_ascii_case(&argv[1]))
    });
    match sub {
        Some(spec) => {
            if !spec.arity_ok(argv.len()) {
                return crate::errors::wrong_arity(spec.name);
            }
            ctx.server.note_command(ctx.session, spec.name);
            spec.handler.call(ctx, argv).into_reply()
        }
        None => crate::errors::unknown_subcommand(container, &argv[1]),
    }
}

/// The positions of the keys counted by `argv[at]`: None when the count is negative or runs
/// past the end.
fn counted(argv: &[Bytes], at: usize) -> Option<std::ops::RangeInclusive<usize>> {
    let n = strata::num::atoi(argv.get(at)?);
    if n < 0 || (n > 0 && (at as i64).saturating_add(n) >= argv.len() as i64) {
        return None;
    }
    #[allow(clippy::reversed_empty_ranges)]
    Some(if n == 0 {
        1..=0
    } else {
        at + 1..=at + n as usize
    })
}

/// A database number as SELECT, MOVE and COPY read it for their key rules (None if it cannot be
/// one).
pub fn db_index(arg: &[u8]) -> Option<u32> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_names_print_in_redis_spelling_and_hide_hidden_ones() {
        let f = Flags(NOSCRIPT | FAST | NO_AUTH | SENTINEL | MAY_REPLICATE | NOT_QUEUED);
        assert_eq!(
            f.names().collect::<Vec<_>>(),
            ["noscript", "fast", "no_auth"]
        );
    }

    #[test]
    fn ranges_count_from_either_end() {
        let all = |r: Range, argc| r.positions(argc).collect::<Vec<_>>();
        assert_eq!(all(Range::new(1, -1, 2), 5), [1, 3]);
        assert_eq!(all(Range::new(1, -2, 1), 4), [1, 2]);
        assert_eq!(all(Range::new(2, 2, 1), 3), [2]);
        assert_eq!(all(Range::new(2, 2, 1), 2), Vec::<usize>::new());
        assert_eq!(all(Range::NONE, 4), Vec::<usize>::new());
        assert_eq!(all(Range::new(1, -1, 1), 1), Vec::<usize>::new());
    }

    #[test]
    fn arity_reads_both_ways() {
        assert!(Arity::Exactly(2).ok(2) && !Arity::Exactly(2).ok(3));
        assert!(Arity::AtLeast(2).ok(5) && !Arity::AtLeast(2).ok(1));
        assert_eq!(Arity::AtLeast(3).redis(), -3);
    }
}
