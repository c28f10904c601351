//! Strata's server configuration: the directives of a `redis.conf`-style file, command-line
//! overrides, and the runtime view behind `CONFIG GET`, `CONFIG SET` and `CONFIG REWRITE`.
//!
//! Every directive is one row of the `DIRECTIVES` table: its name and aliases, the kind of value
//! it takes (yes/no, bounded integer, memory size, enumeration, string, or a syntax of its own),
//! its default (written as `CONFIG SET` would take it) and whether `CONFIG SET` may change it
//! while the server runs. Parsing, validation, formatting and error texts follow Redis 7 so that
//! existing config files, tools and client libraries keep working. A handful of Redis directives
//! that mean nothing to Strata (`save`, `appendonly`, `maxmemory`, ...) are accepted, validated,
//! stored and reported, but otherwise ignored; Strata's own storage knobs (`block-cache-size`,
//! `write-buffer-size`, `compression`, `bgsave-dir`) sit alongside. Any other directive is an
//! error, as is `daemonize yes` (Strata always runs in the foreground).

// This is the server's configuration API; not every accessor is necessarily called yet.
#![allow(dead_code)]

use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use strata::glob::glob_match;

/// When `appendfsync` asks for the write-ahead log to be synced to disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendFsync {
    /// After every write.
    Always,
    /// About once a second.
    EverySec,
    /// Never explicitly; the operating system decides.
    No,
}

/// RocksDB block compression, from the `compression` directive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

/// The current value of every directive, plus the file they were read from.
#[derive(Clone)]
pub struct Config {
    /// One value per row of `DIRECTIVES`, in the same order.
    values: Vec<Value>,
    /// The configuration file given on the command line (made absolute, like Redis does), which
    /// `CONFIG REWRITE` updates; `None` when the server was started without one.
    pub config_file: Option<PathBuf>,
}

/// Identifies a directive; `Id::X as usize` is its row in [`DIRECTIVES`] (checked at compile
/// time below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Id {
    Port,
    Bind,
    Dir,
    Requirepass,
    Appendfsync,
    Databases,
    Maxclients,
    Timeout,
    Loglevel,
    Logfile,
    ProtoMaxBulkLen,
    ClientQueryBufferLimit,
    ClientOutputBufferLimit,
    Hz,
    TcpKeepalive,
    BusyReplyThreshold,
    NotifyKeyspaceEvents,
    BlockCacheSize,
    HotCacheSize,
    WriteBufferSize,
    MinFreeDisk,
    Compression,
    BgsaveDir,
    Daemonize,
    Save,
    Appendonly,
    ProtectedMode,
    TcpBacklog,
    Supervised,
    Pidfile,
    Dbfilename,
    Appendfilename,
    Maxmemory,
    MaxmemoryPolicy,
    AlwaysShowLogo,
    SetProcTitle,
    ReplicaReadOnly,
    IoThreads,
    ReplicaOf,
    Masterauth,
    Masteruser,
    ReplicaServeStaleData,
    ReplicaPriority,
    ReplicaAnnounced,
    MinReplicasToWrite,
    MinReplicasMaxLag,
    ReplTimeout,
    ReplBacklogSize,
    ReplBacklogTtl,
}

/// What a directive's value looks like and how it is checked.
#[derive(Clone, Copy)]
enum Kind {
    /// `yes` or `no` (any case).
    Bool,
    /// A plain decimal integer (no sign but `-`, no leading zeros), within bounds.
    Int { min: i64, max: i64 },
    /// Bytes, optionally with a unit: `k`/`m`/`g` are powers of 1000, `kb`/`mb`/`gb` powers of
    /// 1024, `b` is bytes; any case. Within bounds.
    Memory { min: u64, max: u64 },
    /// One of the listed names (any case).
    Enum(&'static [&'static str]),
    /// Free text, checked by the function.
    Str(fn(&str) -> Result<(), &'static str>),
    /// A syntax of its own.
    Special(Special),
}

#[derive(Clone, Copy)]
enum Special {
    /// Up to 16 addresses; takes several arguments.
    Bind,
    /// `seconds changes` pairs, or nothing; takes several arguments, and in a file every
    /// further `save` line adds to the first.
    Save,
    /// Event class letters, normalized like Redis (`KEA` reads back as `AKE`).
    KeyspaceEvents,
    /// yes/no, but only `no` is accepted.
    Daemonize,
    /// An integer 0..=2^31-1, then clamped to 1..=500 like Redis.
    Hz,
    /// `<class> <hard> <soft> <soft seconds>` groups; a value sets only the classes it names.
    OutputBufferLimit,
    /// `<host> <port>`, or nothing (a leader); kept as a two-element `Value::Bind`.
    ReplicaOf,
}

impl Kind {
    /// Whether the directive takes several arguments (Redis's MULTI_ARG_CONFIG).
    fn is_multi_arg(self) -> bool {
        matches!(
            self,
            Kind::Special(
                Special::Bind | Special::Save | Special::OutputBufferLimit | Special::ReplicaOf
            )
        )
    }
}

/// A directive's parsed value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    Bool(bool),
    Int(i64),
    Memory(u64),
    /// Index into the `Kind::Enum` names.
    Enum(usize),
    Str(String),
    Bind(Vec<String>),
    Save(Vec<(i64, i64)>),
    /// `[hard, soft, soft seconds]` per client class (normal, replica, pubsub); `None` for a
    /// class a parsed value does not name (filled from the current value when applied).
    OutputLimits([Option<[u64; 3]>; 3]),
}

/// Client classes of `client-output-buffer-limit`, in `CONFIG GET` order and spelling.
const OUTPUT_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

impl Value {
    /// Combines a newly parsed value with the directive's current one: an output buffer limit
    /// keeps the classes the new value does not name. Other values replace the old one.
    fn merged_onto(self, current: &Value) -> Value {
        match (self, current) {
            (Value::OutputLimits(mut new), Value::OutputLimits(old)) => {
                for (n, o) in new.iter_mut().zip(old) {
                    if n.is_none() {
                        *n = *o;
                    }
                }
                Value::OutputLimits(new)
            }
            (new, _) => new,
        }
    }
}

/// One row of the directive table.
struct Directive {
    id: Id,
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    /// The default, as a `CONFIG SET` value.
    default: &'static str,
    /// Whether `CONFIG SET` may change it at runtime.
    mutable: bool,
}

const fn row(
    id: Id,
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    default: &'static str,
    mutable: bool,
) -> Directive {
    Directive {
        id,
        name,
        aliases,
        kind,
        default,
        mutable,
    }
}

const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX: u64 = i64::MAX as u64;
const MB: u64 = 1024 * 1024;
const GB: u64 = 1024 * MB;

const APPENDFSYNC: &[&str] = &["everysec", "always", "no"];
const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning", "nothing"];
const COMPRESSIONS: &[&str] = &["none", "lz4", "zstd"];
const SUPERVISED: &[&str] = &["upstart", "systemd", "auto", "no"];
const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

use Kind::{Bool, Enum, Int, Memory, Special as Sp, Str};

/// Every directive Strata knows, in [`Id`] order.
#[rustfmt::skip]
const DIRECTIVES: &[Directive] = &[
    row(Id::Port, "port", &[], Int { min: 0, max: 65535 }, "6379", false),
    row(Id::Bind, "bind", &[], Sp(Special::Bind), "127.0.0.1", false),
    row(Id::Dir, "dir", &[], Str(non_empty), "./data", false),
    row(Id::Requirepass, "requirepass", &[], Str(any), "", true),
    row(Id::Appendfsync, "appendfsync", &[], Enum(APPENDFSYNC), "everysec", true),
    // At most 256: a key's database id is stored on disk as a single byte.
    row(Id::Databases, "databases", &[], Int { min: 1, max: 256 }, "16", false),
    row(Id::Maxclients, "maxclients", &[], Int { min: 1, max: u32::MAX as i64 }, "10000", true),
    row(Id::Timeout, "timeout", &[], Int { min: 0, max: INT_MAX }, "0", true),
    row(Id::Loglevel, "loglevel", &[], Enum(LOGLEVELS), "notice", true),
    row(Id::Logfile, "logfile", &[], Str(any), "", false),
    row(Id::ProtoMaxBulkLen, "proto-max-bulk-len", &[], Memory { min: MB, max: LONG_MAX }, "512mb", true),
    row(Id::ClientQueryBufferLimit, "client-query-buffer-limit", &[], Memory { min: MB, max: LONG_MAX }, "1gb", true),
    row(Id::ClientOutputBufferLimit, "client-output-buffer-limit", &[], Sp(Special::OutputBufferLimit), "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", true),
    row(Id::Hz, "hz", &[], Sp(Special::Hz), "10", true),
    row(Id::TcpKeepalive, "tcp-keepalive", &[], Int { min: 0, max: INT_MAX }, "300", true),
    row(Id::BusyReplyThreshold, "busy-reply-threshold", &["lua-time-limit"], Int { min: 0, max: i64::MAX }, "5000", true),
    row(Id::NotifyKeyspaceEvents, "notify-keyspace-events", &[], Sp(Special::KeyspaceEvents), "", true),
    // Strata's storage knobs. RocksDB clamps write buffers to 64kb..=64gb.
    row(Id::BlockCacheSize, "block-cache-size", &[], Memory { min: 0, max: LONG_MAX }, "256mb", false),
    row(Id::HotCacheSize, "hot-cache-size", &[], Memory { min: 0, max: LONG_MAX }, "256mb", false),
    row(Id::WriteBufferSize, "write-buffer-size", &[], Memory { min: 64 * 1024, max: 64 * GB }, "16mb", false),
    row(Id::MinFreeDisk, "min-free-disk", &[], Memory { min: 0, max: LONG_MAX }, "256mb", false),
    row(Id::Compression, "compression", &[], Enum(COMPRESSIONS), "lz4", false),
    row(Id::BgsaveDir, "bgsave-dir", &[], Str(non_empty), "backup", true),
    // Redis directives accepted for compatibility; their values are kept but have no effect.
    row(Id::Daemonize, "daemonize", &[], Sp(Special::Daemonize), "no", false),
    row(Id::Save, "save", &[], Sp(Special::Save), "3600 1 300 100 60 10000", true),
    row(Id::Appendonly, "appendonly", &[], Bool, "no", true),
    row(Id::ProtectedMode, "protected-mode", &[], Bool, "yes", true),
    row(Id::TcpBacklog, "tcp-backlog", &[], Int { min: 0, max: INT_MAX }, "511", false),
    row(Id::Supervised, "supervised", &[], Enum(SUPERVISED), "no", false),
    row(Id::Pidfile, "pidfile", &[], Str(any), "", false),
    row(Id::Dbfilename, "dbfilename", &[], Str(base_name_db), "dump.rdb", true),
    row(Id::Appendfilename, "appendfilename", &[], Str(base_name_aof), "appendonly.aof", false),
    row(Id::Maxmemory, "maxmemory", &[], Memory { min: 0, max: u64::MAX }, "0", true),
    row(Id::MaxmemoryPolicy, "maxmemory-policy", &[], Enum(MAXMEMORY_POLICIES), "noeviction", true),
    row(Id::AlwaysShowLogo, "always-show-logo", &[], Bool, "no", false),
    row(Id::SetProcTitle, "set-proc-title", &[], Bool, "yes", false),
    row(Id::ReplicaReadOnly, "replica-read-only", &["slave-read-only"], Bool, "yes", true),
    row(Id::IoThreads, "io-threads", &[], Int { min: 1, max: 128 }, "1", false),
    // Replication. REPLICAOF changes `replicaof` at runtime (so CONFIG REWRITE keeps the role).
    row(Id::ReplicaOf, "replicaof", &["slaveof"], Sp(Special::ReplicaOf), "", false),
    row(Id::Masterauth, "masterauth", &[], Str(any), "", true),
    row(Id::Masteruser, "masteruser", &[], Str(any), "", true),
    row(Id::ReplicaServeStaleData, "replica-serve-stale-data", &["slave-serve-stale-data"], Bool, "yes", true),
    row(Id::ReplicaPriority, "replica-priority", &["slave-priority"], Int { min: 0, max: INT_MAX }, "100", true),
    row(Id::ReplicaAnnounced, "replica-announced", &[], Bool, "yes", true),
    row(Id::MinReplicasToWrite, "min-replicas-to-write", &["min-slaves-to-write"], Int { min: 0, max: INT_MAX }, "0", true),
    row(Id::MinReplicasMaxLag, "min-replicas-max-lag", &["min-slaves-max-lag"], Int { min: 0, max: INT_MAX }, "10", true),
    row(Id::ReplTimeout, "repl-timeout", &[], Int { min: 1, max: INT_MAX }, "60", true),
    // Strata keeps its replication backlog as write-ahead-log files (see docs/replication.md):
    // the size and age bounds apply when the data directory opens.
    row(Id::ReplBacklogSize, "repl-backlog-size", &[], Memory { min: 16 * 1024, max: LONG_MAX }, "256mb", false),
    row(Id::ReplBacklogTtl, "repl-backlog-ttl", &[], Int { min: 0, max: INT_MAX }, "3600", false),
];

const _: () = {
    assert!(DIRECTIVES.len() == Id::ReplBacklogTtl as usize + 1);
    let mut i = 0;
    while i < DIRECTIVES.len() {
        assert!(
            DIRECTIVES[i].id as usize == i,
            "DIRECTIVES must be in Id order"
        );
        i += 1;
    }
};

fn any(_: &str) -> Result<(), &'static str> {
    Ok(())
}

fn non_empty(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        Err("argument can't be empty")
    } else {
        Ok(())
    }
}

fn is_base_name(value: &str) -> bool {
    !value.contains(['/', '\\'])
}

fn base_name_db(value: &str) -> Result<(), &'static str> {
    if is_base_name(value) {
        Ok(())
    } else {
        Err("dbfilename can't be a path, just a filename")
    }
}

fn base_name_aof(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        Err("appendfilename can't be empty")
    } else if is_base_name(value) {
        Ok(())
    } else {
        Err("appendfilename can't be a path, just a filename")
    }
}

/// Finds a directive by name or alias, ignoring case. Returns its row and the matched spelling
/// as the table has it.
fn lookup(name: &str) -> Option<(usize, &'static str)> {
    DIRECTIVES.iter().enumerate().find_map(|(row, d)| {
        std::iter::once(d.name)
            .chain(d.aliases.iter().copied())
            .find(|spelling| spelling.eq_ignore_ascii_case(name))
            .map(|spelling| (row, spelling))
    })
}

/// Parses a whole decimal integer the way Redis's `string2ll` does: an optional `-`, no `+`, no
/// spaces, no leading zeros, no overflow.
fn parse_int(s: &str) -> Option<i64> {
    if s == "0" {
        return Some(0);
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    let mut bytes = digits.bytes();
    if !matches!(bytes.next(), Some(b'1'..=b'9')) || !bytes.all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses a memory size like Redis's `memtoull`: digits then an optional unit, where `k`, `m`,
/// `g` are powers of 1000 and `kb`, `mb`, `gb` powers of 1024 (any case). As in Redis, missing
/// digits count as 0. Overflow is an error.
fn parse_memory(s: &str) -> Option<u64> {
    let split = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => MB,
        "g" => 1000 * 1000 * 1000,
        "gb" => GB,
        _ => return None,
    };
    let number: u64 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    number.checked_mul(multiplier)
}

/// Formats bytes the way `CONFIG REWRITE` writes them: in gb, mb or kb when exact.
fn format_memory(bytes: u64) -> String {
    match bytes {
        0 => "0".to_string(),
        b if b % GB == 0 => format!("{}gb", b / GB),
        b if b % MB == 0 => format!("{}mb", b / MB),
        b if b % 1024 == 0 => format!("{}kb", b / 1024),
        b => b.to_string(),
    }
}

/// Keyspace event classes: letter and bit, in the order Redis prints them.
const EVENT_CLASSES: &[(char, u32)] = &[
    ('g', 1 << 2),
    ('$', 1 << 3),
    ('l', 1 << 4),
    ('s', 1 << 5),
    ('h', 1 << 6),
    ('z', 1 << 7),
    ('x', 1 << 8),
    ('e', 1 << 9),
    ('t', 1 << 10),
    ('d', 1 << 12),
    ('n', 1 << 13),
];
/// Flags printed after the classes (or after `A`).
const EVENT_TARGETS: &[(char, u32)] = &[('K', 1), ('E', 1 << 1), ('m', 1 << 11)];
/// What `A` stands for: every class but `m` and `n`.
const EVENTS_ALL: u32 = (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 9)
    | (1 << 10)
    | (1 << 12);

/// Normalizes a `notify-keyspace-events` value like Redis (`KEA` becomes `AKE`).
fn parse_keyspace_events(s: &str) -> Result<String, String> {
    let mut flags = 0;
    for c in s.chars() {
        flags |= match c {
            'A' => EVENTS_ALL,
            _ => EVENT_CLASSES
                .iter()
                .chain(EVENT_TARGETS)
                .find(|(letter, _)| *letter == c)
                .map(|(_, bit)| *bit)
                .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?,
        };
    }
    let mut out = String::new();
    if flags & EVENTS_ALL == EVENTS_ALL {
        out.push('A');
        flags &= !EVENTS_ALL;
    }
    for (letter, bit) in EVENT_CLASSES.iter().chain(EVENT_TARGETS) {
        if flags & bit != 0 {
            out.push(*letter);
        }
    }
    Ok(out)
}

/// Parses one `save` number like C's `strtoll` (leading blanks and a sign allowed; nothing at
/// all is 0), rejecting overflow.
fn parse_save_number(s: &str) -> Option<i64> {
    let s = s.trim_start_matches(is_c_space_char);
    if s.is_empty() {
        return Some(0);
    }
    s.parse().ok()
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_c_space_char(c: char) -> bool {
    u8::try_from(c).is_ok_and(is_c_space)
}

/// Parses and validates a directive's arguments (from a file line, or a `CONFIG SET` value
/// already split for multi-argument directives). Errors are Redis's texts.
fn parse_value(kind: Kind, args: &[String]) -> Result<Value, String> {
    let single = || match args {
        [arg] => Ok(arg.as_str()),
        _ => Err("wrong number of arguments".to_string()),
    };
    let between = |min: &dyn fmt::Display, max: &dyn fmt::Display| {
        format!("argument must be between {min} and {max} inclusive")
    };
    match kind {
        Kind::Bool => parse_bool(single()?).map(Value::Bool),
        Kind::Int { min, max } => {
            let n = parse_int(single()?)
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if (min..=max).contains(&n) {
                Ok(Value::Int(n))
            } else {
                Err(between(&min, &max))
            }
        }
        Kind::Memory { min, max } => {
            let n = parse_memory(single()?)
                .ok_or_else(|| "argument must be a memory value".to_string())?;
            if (min..=max).contains(&n) {
                Ok(Value::Memory(n))
            } else {
                Err(between(&min, &max))
            }
        }
        Kind::Enum(names) => {
            let arg = single()?;
            names
                .iter()
                .position(|name| name.eq_ignore_ascii_case(arg))
                .map(Value::Enum)
                .ok_or_else(|| {
                    format!(
                        "argument(s) must be one of the following: {}",
                        names.join(", ")
                    )
                })
        }
        Kind::Str(check) => {
            let arg = single()?;
            check(arg)?;
            Ok(Value::Str(arg.to_string()))
        }
        Kind::Special(Special::Bind) => {
            let mut addresses = args.to_vec();
            if addresses.len() > 16 {
                return Err("Too many bind addresses specified.".to_string());
            }
            if addresses.len() == 1 && addresses[0].is_empty() {
                addresses.clear();
            }
            if addresses.is_empty() {
                return Err(
                    "at least one address is needed, or Strata would not listen anywhere"
                        .to_string(),
                );
            }
            if addresses.iter().any(String::is_empty) {
                return Err("bind addresses can't be empty".to_string());
            }
            Ok(Value::Bind(addresses))
        }
        Kind::Special(Special::Save) => {
            let args = match args {
                [only] if only.is_empty() => &[],
                _ => args,
            };
            let invalid = || "Invalid save parameters".to_string();
            if args.len() % 2 != 0 {
                return Err(invalid());
            }
            args.chunks(2)
                .map(|pair| {
                    let seconds = parse_save_number(&pair[0]).filter(|&s| s >= 1);
                    let changes = parse_save_number(&pair[1]).filter(|&c| c >= 0);
                    seconds.zip(changes).ok_or_else(invalid)
                })
                .collect::<Result<_, _>>()
                .map(Value::Save)
        }
        Kind::Special(Special::KeyspaceEvents) => parse_keyspace_events(single()?).map(Value::Str),
        Kind::Special(Special::Daemonize) => {
            if parse_bool(single()?)? {
                Err("Strata can't daemonize: it always runs in the foreground \
                     (leave that to a service manager such as systemd)"
                    .to_string())
            } else {
                Ok(Value::Bool(false))
            }
        }
        Kind::Special(Special::OutputBufferLimit) => {
            // An empty value changes nothing (Redis accepts it).
            if !args.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".to_string());
            }
            let mut limits = [None; 3];
            for group in args.chunks(4) {
                let class = match group[0].to_ascii_lowercase().as_str() {
                    "normal" => 0,
                    "slave" | "replica" => 1,
                    "pubsub" => 2,
                    _ => {
                        return Err(
                            "Invalid client class specified in buffer limit configuration."
                                .to_string(),
                        )
                    }
                };
                let hard = parse_memory(&group[1]);
                let soft = parse_memory(&group[2]);
                let secs = parse_int(&group[3]).filter(|&s| s >= 0).map(|s| s as u64);
                let (Some(hard), Some(soft), Some(secs)) = (hard, soft, secs) else {
                    return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string());
                };
                limits[class] = Some([hard, soft, secs]);
            }
            Ok(Value::OutputLimits(limits))
        }
        Kind::Special(Special::ReplicaOf) => match args {
            [] => Ok(Value::Bind(Vec::new())),
            [only] if only.is_empty() => Ok(Value::Bind(Vec::new())),
            [host, port] => match parse_int(port) {
                Some(p) if (1..=65535).contains(&p) => {
                    Ok(Value::Bind(vec![host.clone(), p.to_string()]))
                }
                _ => Err("Invalid master port".to_string()),
            },
            _ => Err("wrong number of arguments".to_string()),
        },
        Kind::Special(Special::Hz) => {
            let n = parse_int(single()?)
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if (0..=INT_MAX).contains(&n) {
                Ok(Value::Int(n.clamp(1, 500)))
            } else {
                Err(between(&0, &INT_MAX))
            }
        }
    }
}

fn parse_bool(arg: &str) -> Result<bool, String> {
    if arg.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if arg.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err("argument must be 'yes' or 'no'".to_string())
    }
}

/// Splits a `CONFIG SET` value into arguments: multi-argument directives split on every single
/// space (so doubled spaces give empty arguments, as in Redis), others take it whole.
fn split_set_value(kind: Kind, value: &str) -> Vec<String> {
    if !kind.is_multi_arg() {
        vec![value.to_string()]
    } else if value.is_empty() {
        Vec::new()
    } else {
        value.split(' ').map(str::to_string).collect()
    }
}

/// Splits a config line into arguments like Redis's `sdssplitargs` (the same splitter inline
/// commands use): `None` for unbalanced quotes.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    strata_resp::split_inline_args(line).map(|args| args.into_iter().map(|a| a.to_vec()).collect())
}

/// Quotes bytes like Redis's `sdscatrepr`, so that [`split_args`] reads them back unchanged.
fn repr(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// Strips the given bytes from both ends.
fn trim<'a>(mut bytes: &'a [u8], strip: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = bytes {
        if !strip.contains(first) {
            break;
        }
        bytes = rest;
    }
    while let [rest @ .., last] = bytes {
        if !strip.contains(last) {
            break;
        }
        bytes = rest;
    }
    bytes
}

/// An I/O error's message without Rust's " (os error N)" suffix, like C's `strerror`.
fn os_error_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

/// The line `CONFIG REWRITE` adds before the directives it appends.
const REWRITE_SIGNATURE: &str = "# Generated by CONFIG REWRITE";

impl Default for Config {
    /// Every directive at its default; no config file.
    fn default() -> Config {
        let values = DIRECTIVES
            .iter()
            .map(|d| {
                parse_value(d.kind, &split_set_value(d.kind, d.default))
                    .expect("built-in defaults are valid (checked by tests)")
            })
            .collect();
        Config {
            values,
            config_file: None,
        }
    }
}

impl fmt::Debug for Config {
    /// Lists every directive as `CONFIG GET` shows it, with the password redacted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Config");
        for (row, d) in DIRECTIVES.iter().enumerate() {
            let shown = self.format_get(row);
            if d.id == Id::Requirepass && !shown.is_empty() {
                out.field(d.name, &"<redacted>");
            } else {
                out.field(d.name, &shown);
            }
        }
        out.field("config_file", &self.config_file).finish()
    }
}

impl Config {
    /// Builds the configuration from the server's arguments (without the program name), like
    /// `redis-server`: an optional first argument not starting with `-` names a config file,
    /// which is read first; then `--directive value [value...]` pairs override it. They are
    /// turned into config lines appended after the file's (`--port 7000` becomes
    /// `port "7000"`), so errors in them are reported the way Redis does, as lines following the
    /// file's. `--save` with no value means `save ""`. `--help`/`--version` are the caller's.
    ///
    /// The error is the complete multi-line message to print before exiting.
    pub fn from_args(args: &[String]) -> Result<Config, String> {
        let mut config = Config::default();
        let mut text = Vec::new();
        let mut file_lines = 0;
        let mut options = args;
        if let Some(first) = args.first().filter(|a| !a.starts_with('-')) {
            let path = std::path::absolute(first).unwrap_or_else(|_| PathBuf::from(first));
            text = fs::read(&path).map_err(|e| {
                format!(
                    "Fatal error, can't open config file '{}': {}",
                    path.display(),
                    os_error_text(&e)
                )
            })?;
            file_lines = text.iter().filter(|&&b| b == b'\n').count() + 1;
            config.config_file = Some(path);
            options = &args[1..];
        }
        text.push(b'\n');
        text.extend_from_slice(command_line_options(options).as_bytes());
        let file = config.config_file.clone();
        config.load(&text, file.as_deref().map(|path| (path, file_lines)))?;
        Ok(config)
    }

    /// Applies config-file text on top of the current values: one directive per line, `#`
    /// comments and blank lines skipped, arguments split and quoted like Redis (`"..."` with
    /// escapes, `'...'`). All or nothing: on error nothing changes and the error is the full
    /// Redis-style message naming the line.
    pub fn parse_file_text(&mut self, text: &str) -> Result<(), String> {
        self.load(text.as_bytes(), None)
    }

    /// Applies config text. `file` names the config file and how many leading lines of `text`
    /// came from it, for error messages.
    fn load(&mut self, text: &[u8], file: Option<(&Path, usize)>) -> Result<(), String> {
        let mut next = self.clone();
        let mut save_seen = false;
        for (index, raw) in text.split(|&b| b == b'\n').enumerate() {
            let number = index + 1;
            let line = trim(raw, b" \t\r\n");
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let fail = |reason: &str| {
                let source = match file {
                    Some((path, lines)) if number <= lines => {
                        format!("the configuration file '{}'", path.display())
                    }
                    _ => "the configuration file".to_string(),
                };
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Strata) ***\n\
                     Reading {source}, at line {number}\n>>> '{}'\n{reason}",
                    String::from_utf8_lossy(line)
                )
            };
            let unbalanced = || fail("Unbalanced quotes in configuration line");
            let argv = split_args(line).ok_or_else(unbalanced)?;
            let Some((name, rest)) = argv.split_first() else {
                continue;
            };
            let Some((row, _)) = lookup(&String::from_utf8_lossy(name)) else {
                return Err(fail("Bad directive or wrong number of arguments"));
            };
            let kind = DIRECTIVES[row].kind;
            let args = match rest {
                [one] if kind.is_multi_arg() && !one.is_empty() => {
                    split_args(one).ok_or_else(unbalanced)?
                }
                _ if kind.is_multi_arg() || rest.len() == 1 => rest.to_vec(),
                _ => return Err(fail("wrong number of arguments")),
            };
            let args = args
                .into_iter()
                .map(String::from_utf8)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| fail("argument must be valid UTF-8"))?;
            let mut value = parse_value(kind, &args)
                .map_err(|e| fail(&e))?
                .merged_onto(&next.values[row]);
            if let (Value::Save(more), Value::Save(earlier)) = (&mut value, &next.values[row]) {
                // In a file the first `save` line replaces the default and later ones add to it.
                if save_seen {
                    more.splice(0..0, earlier.iter().copied());
                }
                save_seen = true;
            }
            next.values[row] = value;
        }
        *self = next;
        Ok(())
    }

    /// `CONFIG GET pattern`: every directive name or alias matching the glob `pattern` (ignoring
    /// case), with its value as Redis shows it (sizes in plain bytes, booleans as yes/no,
    /// lists space-separated), in table order. A pattern without `*`, `?` or `[` is looked up
    /// directly and answered under the name as given, as Redis does.
    pub fn get(&self, pattern: &[u8]) -> Vec<(String, String)> {
        if !pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            let name = String::from_utf8_lossy(pattern);
            return match lookup(&name) {
                Some((row, _)) => vec![(name.into_owned(), self.format_get(row))],
                None => Vec::new(),
            };
        }
        let mut found = Vec::new();
        for (row, d) in DIRECTIVES.iter().enumerate() {
            for spelling in std::iter::once(d.name).chain(d.aliases.iter().copied()) {
                if glob_match(pattern, spelling.as_bytes(), true) {
                    found.push((spelling.to_string(), self.format_get(row)));
                }
            }
        }
        found
    }

    /// `CONFIG GET pattern [pattern ...]`: the union of [`Config::get`] over the patterns, each
    /// name once (ignoring case), in order of first match.
    pub fn get_many(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = Vec::new();
        for pattern in patterns {
            for (name, value) in self.get(pattern) {
                if !found
                    .iter()
                    .any(|(seen, _)| seen.eq_ignore_ascii_case(&name))
                {
                    found.push((name, value));
                }
            }
        }
        found
    }

    /// `CONFIG SET name value`. The error is Redis's reply text without the leading `-`.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.set_many(&[(name.to_string(), value.to_string())])
    }

    /// `CONFIG SET name value [name value ...]`, all or nothing. As in Redis, names are checked
    /// first (the first unknown, immutable or repeated one is reported), then values in order.
    /// Multi-argument directives (`bind`, `save`) split their value on spaces.
    pub fn set_many(&mut self, pairs: &[(String, String)]) -> Result<(), String> {
        let failed = |name: &str, reason: &str| {
            format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
        };
        let mut targets: Vec<(usize, &'static str)> = Vec::with_capacity(pairs.len());
        for (name, _) in pairs {
            let Some(target) = lookup(name) else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                ));
            };
            if !DIRECTIVES[target.0].mutable {
                return Err(failed(name, "can't set immutable config"));
            }
            if targets.contains(&target) {
                return Err(failed(name, "duplicate parameter"));
            }
            targets.push(target);
        }
        let mut next = self.clone();
        for (&(row, spelling), (_, value)) in targets.iter().zip(pairs) {
            let kind = DIRECTIVES[row].kind;
            next.values[row] = parse_value(kind, &split_set_value(kind, value))
                .map_err(|e| failed(spelling, &e))?
                .merged_onto(&next.values[row]);
        }
        *self = next;
        Ok(())
    }

    /// `CONFIG REWRITE`: updates the config file in place. Comments, blank lines and lines it
    /// doesn't understand stay where they are; each directive's first line gets its current
    /// value (aliases are rewritten under the main name), its further lines are dropped, and
    /// directives that differ from their default but aren't in the file are appended after a
    /// `# Generated by CONFIG REWRITE` line. The file is replaced atomically. Errors are Redis's
    /// reply texts without the leading `-`.
    pub fn rewrite(&self) -> Result<(), String> {
        let Some(path) = &self.config_file else {
            return Err("ERR The server is running without a config file".to_string());
        };
        let failed = |e: &io::Error| format!("ERR Rewriting config file: {}", os_error_text(e));
        // Write through symlinks rather than replacing them.
        let target = fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let old = match fs::read(&target) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(failed(&e)),
        };
        write_atomically(&target, &self.rewritten(&old)).map_err(|e| failed(&e))
    }

    /// The new content of a config file whose old content is `old`.
    fn rewritten(&self, old: &[u8]) -> Vec<u8> {
        let mut lines: Vec<Option<Vec<u8>>> = old
            .split(|&b| b == b'\n')
            .map(|l| Some(l.to_vec()))
            .collect();
        if old.is_empty() || old.ends_with(b"\n") {
            lines.pop();
        }
        let mut has_signature = false;
        let mut at_lines: Vec<Vec<usize>> = vec![Vec::new(); DIRECTIVES.len()];
        for (index, line) in lines.iter().enumerate() {
            let line = trim(line.as_deref().unwrap_or_default(), b" \t\r\n");
            if line.is_empty() || line[0] == b'#' {
                has_signature |= line == REWRITE_SIGNATURE.as_bytes();
                continue;
            }
            let name = split_args(line).and_then(|argv| argv.into_iter().next());
            if let Some((row, _)) = name.and_then(|n| lookup(&String::from_utf8_lossy(&n))) {
                at_lines[row].push(index);
            }
        }
        let defaults = Config::default();
        // Lines to insert after a given old line, and lines for the end.
        let mut inserted: Vec<Vec<String>> = vec![Vec::new(); lines.len()];
        let mut appended = Vec::new();
        for (row, indexes) in at_lines.iter().enumerate() {
            if indexes.is_empty() && self.values[row] == defaults.values[row] {
                continue;
            }
            let mut reuse = indexes.iter();
            for new_line in self.file_lines(row) {
                match (reuse.next(), indexes.last()) {
                    (Some(&index), _) => lines[index] = Some(new_line.into_bytes()),
                    // More lines than before (`save`): keep them together.
                    (None, Some(&last)) => inserted[last].push(new_line),
                    (None, None) => appended.push(new_line),
                }
            }
            for &index in reuse {
                lines[index] = None;
            }
        }
        let mut out = Vec::new();
        let mut last_blank = true;
        for (line, extra) in lines.into_iter().zip(inserted) {
            for line in line
                .into_iter()
                .chain(extra.into_iter().map(String::into_bytes))
            {
                last_blank = trim(&line, b" \t\r").is_empty();
                out.extend_from_slice(&line);
                out.push(b'\n');
            }
        }
        if !appended.is_empty() && !has_signature {
            if !last_blank {
                out.push(b'\n');
            }
            out.extend_from_slice(REWRITE_SIGNATURE.as_bytes());
            out.push(b'\n');
        }
        for line in appended {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// A directive's value as `CONFIG GET` shows it.
    fn format_get(&self, row: usize) -> String {
        match &self.values[row] {
            Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Memory(n) => n.to_string(),
            Value::Enum(i) => self.enum_name_at(row, *i).to_string(),
            Value::Str(s) => s.clone(),
            Value::Bind(addresses) => addresses.join(" "),
            Value::Save(pairs) => pairs
                .iter()
                .map(|(seconds, changes)| format!("{seconds} {changes}"))
                .collect::<Vec<_>>()
                .join(" "),
            Value::OutputLimits(limits) => OUTPUT_CLASSES
                .iter()
                .zip(limits)
                .map(|(class, l)| {
                    let [hard, soft, secs] = l.unwrap_or_default();
                    format!("{class} {hard} {soft} {secs}")
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// A directive's line(s) as `CONFIG REWRITE` writes them.
    fn file_lines(&self, row: usize) -> Vec<String> {
        let name = DIRECTIVES[row].name;
        let args = match &self.values[row] {
            // A leader has no `replicaof` line.
            Value::Bind(addresses) if addresses.is_empty() => return Vec::new(),
            Value::Memory(n) => format_memory(*n),
            Value::Str(s) => repr(s.as_bytes()),
            Value::Bind(addresses) => addresses
                .iter()
                .map(|a| {
                    let plain = a
                        .bytes()
                        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'');
                    if plain {
                        a.clone()
                    } else {
                        repr(a.as_bytes())
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            Value::Save(pairs) if pairs.is_empty() => "\"\"".to_string(),
            Value::Save(pairs) => {
                return pairs
                    .iter()
                    .map(|(seconds, changes)| format!("{name} {seconds} {changes}"))
                    .collect()
            }
            Value::OutputLimits(limits) => {
                return OUTPUT_CLASSES
                    .iter()
                    .zip(limits)
                    .map(|(class, l)| {
                        let [hard, soft, secs] = l.unwrap_or_default();
                        let (hard, soft) = (format_memory(hard), format_memory(soft));
                        format!("{name} {class} {hard} {soft} {secs}")
                    })
                    .collect()
            }
            _ => self.format_get(row),
        };
        vec![format!("{name} {args}")]
    }

    fn enum_name_at(&self, row: usize, index: usize) -> &'static str {
        match DIRECTIVES[row].kind {
            Kind::Enum(names) => names.get(index).copied().unwrap_or_default(),
            _ => "",
        }
    }

    fn enum_name(&self, id: Id) -> &'static str {
        match self.values[id as usize] {
            Value::Enum(index) => self.enum_name_at(id as usize, index),
            _ => "",
        }
    }

    fn int(&self, id: Id) -> i64 {
        match self.values[id as usize] {
            Value::Int(n) => n,
            _ => 0,
        }
    }

    fn boolean(&self, id: Id) -> bool {
        matches!(self.values[id as usize], Value::Bool(true))
    }

    fn unsigned(&self, id: Id) -> u64 {
        u64::try_from(self.int(id)).unwrap_or(0)
    }

    fn memory(&self, id: Id) -> u64 {
        match self.values[id as usize] {
            Value::Memory(n) => n,
            _ => 0,
        }
    }

    fn string(&self, id: Id) -> &str {
        match &self.values[id as usize] {
            Value::Str(s) => s,
            _ => "",
        }
    }

    /// `port`: the TCP port to listen on.
    pub fn port(&self) -> u16 {
        u16::try_from(self.int(Id::Port)).unwrap_or(0)
    }

    /// `bind`: the addresses to listen on (1 to 16), verbatim. Redis conventions apply if the
    /// server supports them: `*` is every IPv4 address, `::*` every IPv6 address, and a leading
    /// `-` marks an address whose absence isn't fatal.
    pub fn bind(&self) -> Vec<String> {
        match &self.values[Id::Bind as usize] {
            Value::Bind(addresses) => addresses.clone(),
            _ => Vec::new(),
        }
    }

    /// `dir`: where the data lives.
    pub fn dir(&self) -> PathBuf {
        PathBuf::from(self.string(Id::Dir))
    }

    /// `requirepass`: the password clients must AUTH with, if any.
    pub fn requirepass(&self) -> Option<Vec<u8>> {
        Some(self.string(Id::Requirepass))
            .filter(|p| !p.is_empty())
            .map(|p| p.as_bytes().to_vec())
    }

    /// `appendfsync`: when writes are synced to disk.
    pub fn appendfsync(&self) -> AppendFsync {
        match self.enum_name(Id::Appendfsync) {
            "always" => AppendFsync::Always,
            "no" => AppendFsync::No,
            _ => AppendFsync::EverySec,
        }
    }

    /// `databases`: how many logical databases (1..=256).
    pub fn databases(&self) -> u32 {
        u32::try_from(self.int(Id::Databases)).unwrap_or(16)
    }

    /// `maxclients`: the most simultaneous client connections.
    pub fn maxclients(&self) -> u64 {
        self.unsigned(Id::Maxclients)
    }

    /// `timeout`: seconds of idleness after which a client is disconnected; 0 = never.
    pub fn timeout_secs(&self) -> u64 {
        self.unsigned(Id::Timeout)
    }

    /// `loglevel`: one of debug, verbose, notice, warning, nothing.
    pub fn loglevel(&self) -> &str {
        self.enum_name(Id::Loglevel)
    }

    /// `logfile`: where to log; `None` means standard error.
    pub fn logfile(&self) -> Option<PathBuf> {
        Some(self.string(Id::Logfile))
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    }

    /// `proto-max-bulk-len`: the largest bulk string a client may send, in bytes.
    pub fn proto_max_bulk_len(&self) -> u64 {
        self.memory(Id::ProtoMaxBulkLen)
    }

    /// `client-query-buffer-limit`: the most unparsed input kept per client, in bytes.
    pub fn client_query_buffer_limit(&self) -> u64 {
        self.memory(Id::ClientQueryBufferLimit)
    }

    /// `client-output-buffer-limit` of normal clients: `[hard, soft, soft seconds]`, bytes and
    /// seconds, 0 meaning no limit.
    pub fn output_buffer_limit_normal(&self) -> [u64; 3] {
        match &self.values[Id::ClientOutputBufferLimit as usize] {
            Value::OutputLimits([normal, ..]) => normal.unwrap_or_default(),
            _ => [0; 3],
        }
    }

    /// The `pubsub` class of `client-output-buffer-limit`: hard bytes, soft bytes, soft seconds.
    pub fn pubsub_output_limits(&self) -> [u64; 3] {
        match &self.values[Id::ClientOutputBufferLimit as usize] {
            Value::OutputLimits([_, _, pubsub]) => pubsub.unwrap_or_default(),
            _ => [0; 3],
        }
    }

    /// The keyspace-event bits of `notify-keyspace-events` (0 when nothing is published).
    pub fn notify_keyspace_flags(&self) -> u32 {
        strata_commands::notify::parse_flags(self.string(Id::NotifyKeyspaceEvents))
    }

    /// `hz`: background task frequency per second (1..=500).
    pub fn hz(&self) -> u32 {
        u32::try_from(self.int(Id::Hz)).unwrap_or(10)
    }

    /// `block-cache-size`: RocksDB's block cache, in bytes.
    pub fn block_cache_size(&self) -> u64 {
        self.memory(Id::BlockCacheSize)
    }

    /// `hot-cache-size`: bytes of recently written string values kept in memory for GET (0 = off).
    pub fn hot_cache_size(&self) -> u64 {
        self.memory(Id::HotCacheSize)
    }

    /// `write-buffer-size`: RocksDB's memtable size, in bytes.
    pub fn write_buffer_size(&self) -> u64 {
        self.memory(Id::WriteBufferSize)
    }

    /// `min-free-disk`: writes are refused (`-MISCONF`) while the data directory's filesystem has
    /// less free space than this; 0 turns the check off.
    pub fn min_free_disk(&self) -> u64 {
        self.memory(Id::MinFreeDisk)
    }

    /// `compression`: RocksDB's block compression.
    pub fn compression(&self) -> Compression {
        match self.enum_name(Id::Compression) {
            "none" => Compression::None,
            "zstd" => Compression::Zstd,
            _ => Compression::Lz4,
        }
    }

    /// `bgsave-dir`, resolved against `dir` (an absolute `bgsave-dir` stands on its own).
    pub fn bgsave_dir(&self) -> PathBuf {
        self.dir().join(self.string(Id::BgsaveDir))
    }

    /// `busy-reply-threshold` (alias `lua-time-limit`): milliseconds a script may run before
    /// other clients get BUSY replies.
    pub fn busy_reply_threshold_ms(&self) -> u64 {
        self.unsigned(Id::BusyReplyThreshold)
    }

    /// `replicaof`: the leader this server replicates, if any.
    pub fn replicaof(&self) -> Option<(String, u16)> {
        match &self.values[Id::ReplicaOf as usize] {
            Value::Bind(v) if v.len() == 2 => Some((v[0].clone(), v[1].parse().ok()?)),
            _ => None,
        }
    }

    /// Records the leader set by REPLICAOF (`None`: NO ONE), for CONFIG GET and CONFIG REWRITE.
    pub fn set_replicaof(&mut self, leader: Option<(&str, u16)>) {
        self.values[Id::ReplicaOf as usize] = Value::Bind(match leader {
            Some((host, port)) => vec![host.to_string(), port.to_string()],
            None => Vec::new(),
        });
    }

    /// `masterauth` and `masteruser`: credentials for the leader, if any.
    pub fn master_credentials(&self) -> (Option<String>, Option<String>) {
        let some = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
        (
            some(self.string(Id::Masteruser)),
            some(self.string(Id::Masterauth)),
        )
    }

    /// `replica-read-only`.
    pub fn replica_read_only(&self) -> bool {
        self.boolean(Id::ReplicaReadOnly)
    }

    /// `replica-serve-stale-data`.
    pub fn replica_serve_stale_data(&self) -> bool {
        self.boolean(Id::ReplicaServeStaleData)
    }

    /// `replica-priority`.
    pub fn replica_priority(&self) -> u64 {
        self.unsigned(Id::ReplicaPriority)
    }

    /// `replica-announced`.
    pub fn replica_announced(&self) -> bool {
        self.boolean(Id::ReplicaAnnounced)
    }

    /// `min-replicas-to-write` and `min-replicas-max-lag` (seconds).
    pub fn min_replicas(&self) -> (u64, u64) {
        (
            self.unsigned(Id::MinReplicasToWrite),
            self.unsigned(Id::MinReplicasMaxLag),
        )
    }

    /// `repl-timeout` in seconds.
    pub fn repl_timeout_secs(&self) -> u64 {
        self.unsigned(Id::ReplTimeout).max(1)
    }

    /// `repl-backlog-size` (bytes of write-ahead log kept for replicas) and `repl-backlog-ttl`
    /// (seconds).
    pub fn repl_backlog(&self) -> (u64, u64) {
        (
            self.memory(Id::ReplBacklogSize),
            self.unsigned(Id::ReplBacklogTtl),
        )
    }

    /// `notify-keyspace-events`, normalized like Redis (e.g. `AKE`); empty = off.
    pub fn notify_keyspace_events(&self) -> String {
        self.string(Id::NotifyKeyspaceEvents).to_string()
    }

    /// `tcp-keepalive`: seconds between TCP keepalive probes; 0 = off.
    pub fn tcp_keepalive(&self) -> u64 {
        self.unsigned(Id::TcpKeepalive)
    }
}

/// Turns `--name value...` arguments into config lines exactly as `redis-server` does: each
/// `--name` starts a line, the following arguments are quoted onto it. Right after a bare
/// `--name`, the next argument is its value even if it starts with `--`; `--save` directly
/// followed by another `--option` (or by nothing) means `save ""`.
fn command_line_options(args: &[String]) -> String {
    let mut options = String::new();
    let mut expecting_value = false;
    for (j, arg) in args.iter().enumerate() {
        if !expecting_value && arg.starts_with("--") {
            if !options.is_empty() {
                options.push('\n');
            }
            options.push_str(&arg[2..]);
            options.push(' ');
            // "--port 6380" as one argument carries its own value.
            let words = split_args(arg.as_bytes()).map_or(0, |words| words.len());
            expecting_value = words == 1;
            if expecting_value && arg.eq_ignore_ascii_case("--save") {
                match args.get(j + 1) {
                    Some(next) if next.starts_with("--") => {
                        options.push_str("\"\"");
                        expecting_value = false;
                    }
                    None => options.push_str("\"\""),
                    Some(_) => {}
                }
            }
        } else {
            options.push_str(&repr(arg.as_bytes()));
            options.push(' ');
            expecting_value = false;
        }
    }
    options
}

/// Replaces `target` with `content` via a synced temporary file in the same directory, keeping
/// the old file's permissions.
fn write_atomically(target: &Path, content: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map_or_else(|| "config".into(), |n| n.to_string_lossy());
    let temp = dir.join(format!(
        ".{name}.rewrite-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(content)?;
        if let Ok(meta) = fs::metadata(target) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        fs::rename(&temp, target)?;
        if let Ok(dir) = fs::File::open(dir) {
            // Best effort: persist the rename itself.
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// A fresh, empty directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(label: &str) -> TempDir {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let path = std::env::temp_dir().join(format!(
                "strata-config-test-{label}-{}-{nanos}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            fs::create_dir_all(&path).unwrap();
            TempDir(path)
        }

        fn file(&self, name: &str, content: &str) -> PathBuf {
            let path = self.0.join(name);
            fs::write(&path, content).unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn get1(config: &Config, name: &str) -> String {
        match config.get(name.as_bytes()).as_slice() {
            [(_, value)] => value.clone(),
            other => panic!("CONFIG GET {name} gave {other:?}"),
        }
    }

    fn file_error(text: &str) -> String {
        Config::default().parse_file_text(text).unwrap_err()
    }

    fn set_error(name: &str, value: &str) -> String {
        Config::default().set(name, value).unwrap_err()
    }

    #[test]
    fn defaults_are_as_documented() {
        let c = Config::default();
        assert_eq!(c.port(), 6379);
        assert_eq!(c.bind(), vec!["127.0.0.1".to_string()]);
        assert_eq!(c.dir(), PathBuf::from("./data"));
        assert_eq!(c.requirepass(), None);
        assert_eq!(c.appendfsync(), AppendFsync::EverySec);
        assert_eq!(c.databases(), 16);
        assert_eq!(c.maxclients(), 10000);
        assert_eq!(c.timeout_secs(), 0);
        assert_eq!(c.loglevel(), "notice");
        assert_eq!(c.logfile(), None);
        assert_eq!(c.proto_max_bulk_len(), 512 * 1024 * 1024);
        assert_eq!(c.client_query_buffer_limit(), 1024 * 1024 * 1024);
        assert_eq!(c.hz(), 10);
        assert_eq!(c.tcp_keepalive(), 300);
        assert_eq!(c.busy_reply_threshold_ms(), 5000);
        assert_eq!(c.notify_keyspace_events(), "");
        assert_eq!(c.block_cache_size(), 256 * 1024 * 1024);
        assert_eq!(c.write_buffer_size(), 16 * 1024 * 1024);
        assert_eq!(c.compression(), Compression::Lz4);
        assert_eq!(c.bgsave_dir(), PathBuf::from("./data/backup"));
        assert_eq!(c.config_file, None);
        assert_eq!(get1(&c, "save"), "3600 1 300 100 60 10000");
        assert_eq!(get1(&c, "daemonize"), "no");
        assert_eq!(get1(&c, "maxmemory-policy"), "noeviction");
    }

    #[test]
    fn every_directive_default_parses_and_names_are_unique_lowercase() {
        let mut seen = Vec::new();
        for d in DIRECTIVES {
            parse_value(d.kind, &split_set_value(d.kind, d.default))
                .unwrap_or_else(|e| panic!("default of {}: {e}", d.name));
            for spelling in std::iter::once(d.name).chain(d.aliases.iter().copied()) {
                assert_eq!(spelling, spelling.to_ascii_lowercase());
                assert!(!seen.contains(&spelling), "{spelling} twice");
                seen.push(spelling);
            }
        }
    }

    #[test]
    fn file_text_sets_values_with_comments_blank_lines_and_any_case() {
        let mut c = Config::default();
        c.parse_file_text(
            "# a comment\n\n   \t\nPORT 7000\r\n  bind 10.0.0.1 ::1  \nappendfsync ALWAYS\n\
             requirepass \"s3cret pass\"\nloglevel warning\nlogfile /var/log/strata.log\n\
             databases 4\ntimeout 30\nhz 20\ntcp-keepalive 60\ncompression zstd\n\
             block-cache-size 1gb\nwrite-buffer-size 32mb\nbgsave-dir /backups\n\
             maxclients 50\nnotify-keyspace-events Ex\nlua-time-limit 100\n",
        )
        .unwrap();
        assert_eq!(c.port(), 7000);
        assert_eq!(c.bind(), vec!["10.0.0.1".to_string(), "::1".to_string()]);
        assert_eq!(c.appendfsync(), AppendFsync::Always);
        assert_eq!(c.requirepass(), Some(b"s3cret pass".to_vec()));
        assert_eq!(c.loglevel(), "warning");
        assert_eq!(c.logfile(), Some(PathBuf::from("/var/log/strata.log")));
        assert_eq!(c.databases(), 4);
        assert_eq!(c.timeout_secs(), 30);
        assert_eq!(c.hz(), 20);
        assert_eq!(c.tcp_keepalive(), 60);
        assert_eq!(c.compression(), Compression::Zstd);
        assert_eq!(c.block_cache_size(), 1 << 30);
        assert_eq!(c.write_buffer_size(), 32 << 20);
        assert_eq!(c.bgsave_dir(), PathBuf::from("/backups"));
        assert_eq!(c.maxclients(), 50);
        assert_eq!(c.notify_keyspace_events(), "xE");
        assert_eq!(c.busy_reply_threshold_ms(), 100);
    }

    #[test]
    fn later_lines_override_earlier_ones() {
        let mut c = Config::default();
        c.parse_file_text("port 1\nport 2\nbind 1.1.1.1 2.2.2.2\nbind 3.3.3.3\n")
            .unwrap();
        assert_eq!(c.port(), 2);
        assert_eq!(c.bind(), vec!["3.3.3.3".to_string()]);
    }

    #[test]
    fn quoting_follows_redis_split_rules() {
        let split = |s: &str| {
            split_args(s.as_bytes()).map(|v| {
                v.into_iter()
                    .map(|a| String::from_utf8_lossy(&a).into_owned())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(split("a  b\tc"), Some(args(&["a", "b", "c"])));
        assert_eq!(split(r#"x "a b" 'c d'"#), Some(args(&["x", "a b", "c d"])));
        assert_eq!(split(r#""\n\t\"\\\x41\q""#), Some(args(&["\n\t\"\\Aq"])));
        assert_eq!(split(r"'it\'s' '\n'"), Some(args(&["it's", "\\n"])));
        assert_eq!(split(r#"foo"bar" """#), Some(args(&["foobar", ""])));
        assert_eq!(split(r#""unterminated"#), None);
        assert_eq!(split("'unterminated"), None);
        assert_eq!(split(r#""closed"x"#), None);
        assert_eq!(split(""), Some(vec![]));
        let mut c = Config::default();
        c.parse_file_text("requirepass 'a \"b\" c'\nlogfile \"\"\n")
            .unwrap();
        assert_eq!(c.requirepass(), Some(b"a \"b\" c".to_vec()));
        assert_eq!(c.logfile(), None);
    }

    #[test]
    fn repr_round_trips_through_split() {
        let tricky = "q\"uo\\te\n\t\r\x07\x08 é\u{1}";
        let quoted = repr(tricky.as_bytes());
        assert_eq!(quoted, r#""q\"uo\\te\n\t\r\a\b \xc3\xa9\x01""#);
        assert_eq!(
            split_args(quoted.as_bytes()),
            Some(vec![tricky.as_bytes().to_vec()])
        );
    }

    #[test]
    fn unknown_directive_is_reported_with_line_and_text() {
        assert_eq!(
            file_error("port 1\n# comment\n  foo bar  \n"),
            "\n*** FATAL CONFIG FILE ERROR (Strata) ***\nReading the configuration file, \
             at line 3\n>>> 'foo bar'\nBad directive or wrong number of arguments"
        );
    }

    #[test]
    fn file_errors_say_why() {
        let reason = |text: &str| {
            file_error(text)
                .lines()
                .last()
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(reason("port"), "wrong number of arguments");
        assert_eq!(reason("port 1 2"), "wrong number of arguments");
        assert_eq!(
            reason("port \"1"),
            "Unbalanced quotes in configuration line"
        );
        assert_eq!(
            reason("port abc"),
            "argument couldn't be parsed into an integer"
        );
        assert_eq!(
            reason("port 70000"),
            "argument must be between 0 and 65535 inclusive"
        );
        assert_eq!(reason("appendonly maybe"), "argument must be 'yes' or 'no'");
        assert_eq!(
            reason("appendfsync sometimes"),
            "argument(s) must be one of the following: everysec, always, no"
        );
        assert_eq!(
            reason("block-cache-size 1tb"),
            "argument must be a memory value"
        );
        assert_eq!(
            reason("requirepass \"\\xff\""),
            "argument must be valid UTF-8"
        );
        assert_eq!(
            reason("dbfilename a/b.rdb"),
            "dbfilename can't be a path, just a filename"
        );
        assert_eq!(
            reason("appendfilename \"\""),
            "appendfilename can't be empty"
        );
        assert_eq!(reason("dir \"\""), "argument can't be empty");
    }

    #[test]
    fn failed_file_text_changes_nothing() {
        let mut c = Config::default();
        assert!(c.parse_file_text("port 1\nfoo bar\n").is_err());
        assert_eq!(c.port(), 6379);
    }

    #[test]
    fn integers_are_strict_like_redis() {
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("-12"), Some(-12));
        assert_eq!(parse_int("9223372036854775807"), Some(i64::MAX));
        for bad in [
            "",
            "-",
            "-0",
            "007",
            "+5",
            " 5",
            "5 ",
            "1e3",
            "9223372036854775808",
            "0x10",
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
        let reason = "argument couldn't be parsed into an integer";
        assert!(set_error("timeout", "007").ends_with(reason));
        assert!(set_error("timeout", "-1").ends_with("between 0 and 2147483647 inclusive"));
    }

    #[test]
    fn memory_units_are_decimal_without_b_and_binary_with_b() {
        let cases = [
            ("123", 123),
            ("5b", 5),
            ("1k", 1000),
            ("1kb", 1024),
            ("1K", 1000),
            ("1KB", 1024),
            ("1m", 1_000_000),
            ("1mb", 1 << 20),
            ("1Mb", 1 << 20),
            ("2g", 2_000_000_000),
            ("2gb", 2 << 30),
            ("2GB", 2 << 30),
            ("", 0),
            ("18446744073709551615", u64::MAX),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse_memory(text), Some(bytes), "{text}");
        }
        for bad in [
            "1tb",
            "-1",
            "1.5mb",
            " 1mb",
            "1 mb",
            "0x10",
            "18446744073709551616",
            "99999999999gb",
        ] {
            assert_eq!(parse_memory(bad), None, "{bad}");
        }
        let mut c = Config::default();
        c.parse_file_text("block-cache-size 2GB").unwrap();
        assert_eq!(c.block_cache_size(), 2 << 30);
        assert_eq!(get1(&c, "block-cache-size"), "2147483648");
    }

    #[test]
    fn memory_bounds_are_enforced() {
        assert_eq!(
            set_error("proto-max-bulk-len", "1000"),
            "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - \
             argument must be between 1048576 and 9223372036854775807 inclusive"
        );
        assert!(set_error("client-query-buffer-limit", "1k").contains("between 1048576"));
        assert!(set_error("maxmemory", "lots").ends_with("argument must be a memory value"));
        let mut c = Config::default();
        c.set("proto-max-bulk-len", "1mb").unwrap();
        assert_eq!(c.proto_max_bulk_len(), 1 << 20);
    }

    #[test]
    fn databases_fit_in_one_byte() {
        let mut c = Config::default();
        c.parse_file_text("databases 256").unwrap();
        assert_eq!(c.databases(), 256);
        assert!(file_error("databases 257").ends_with("between 1 and 256 inclusive"));
        assert!(file_error("databases 0").ends_with("between 1 and 256 inclusive"));
    }

    #[test]
    fn maxclients_must_be_positive() {
        assert!(file_error("maxclients 0").ends_with("between 1 and 4294967295 inclusive"));
        assert!(file_error("maxclients 4294967296").ends_with("between 1 and 4294967295 inclusive"));
    }

    #[test]
    fn hz_is_clamped_like_redis() {
        let mut c = Config::default();
        c.set("hz", "1000").unwrap();
        assert_eq!(c.hz(), 500);
        c.set("hz", "0").unwrap();
        assert_eq!(c.hz(), 1);
        assert!(set_error("hz", "-1").ends_with("between 0 and 2147483647 inclusive"));
    }

    #[test]
    fn daemonize_yes_is_rejected_and_no_accepted() {
        let mut c = Config::default();
        c.parse_file_text("daemonize no").unwrap();
        let err = file_error("daemonize yes");
        assert!(err.contains(">>> 'daemonize yes'"));
        assert!(err.contains("foreground"), "{err}");
        assert!(file_error("daemonize maybe").ends_with("argument must be 'yes' or 'no'"));
        assert!(set_error("daemonize", "no").ends_with("can't set immutable config"));
    }

    #[test]
    fn ignored_redis_directives_are_stored_and_reported() {
        let mut c = Config::default();
        c.parse_file_text(
            "appendonly yes\nprotected-mode no\ntcp-backlog 128\nsupervised systemd\n\
             pidfile /run/x.pid\ndbfilename x.rdb\nappendfilename x.aof\nmaxmemory 1gb\n\
             maxmemory-policy allkeys-lru\nalways-show-logo yes\nset-proc-title no\n\
             slave-read-only no\nio-threads 4\nsave 900 1\n",
        )
        .unwrap();
        let expected = [
            ("appendonly", "yes"),
            ("protected-mode", "no"),
            ("tcp-backlog", "128"),
            ("supervised", "systemd"),
            ("pidfile", "/run/x.pid"),
            ("dbfilename", "x.rdb"),
            ("appendfilename", "x.aof"),
            ("maxmemory", "1073741824"),
            ("maxmemory-policy", "allkeys-lru"),
            ("always-show-logo", "yes"),
            ("set-proc-title", "no"),
            ("replica-read-only", "no"),
            ("io-threads", "4"),
            ("save", "900 1"),
        ];
        for (name, value) in expected {
            assert_eq!(get1(&c, name), value, "{name}");
        }
        assert!(file_error("io-threads 200").ends_with("between 1 and 128 inclusive"));
        assert!(file_error("supervised maybe")
            .ends_with("must be one of the following: upstart, systemd, auto, no"));
    }

    #[test]
    fn save_lines_accumulate_in_a_file_and_replace_on_set() {
        let mut c = Config::default();
        c.parse_file_text("save 900 1\nsave \"300 10\"\n").unwrap();
        assert_eq!(get1(&c, "save"), "900 1 300 10");
        c.parse_file_text("save \"\"\n").unwrap();
        assert_eq!(get1(&c, "save"), "");
        c.set("save", "100 5 200 6").unwrap();
        assert_eq!(get1(&c, "save"), "100 5 200 6");
        c.set("save", "").unwrap();
        assert_eq!(get1(&c, "save"), "");
        for bad in ["100", "100 x", "0 1", "100  5", "100 -1", " 100 5"] {
            assert!(
                set_error("save", bad).ends_with("Invalid save parameters"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bind_takes_up_to_sixteen_addresses() {
        let mut c = Config::default();
        c.parse_file_text("bind \"127.0.0.1 ::1\"").unwrap();
        assert_eq!(c.bind(), args(&["127.0.0.1", "::1"]));
        c.parse_file_text("bind * -::*").unwrap();
        assert_eq!(c.bind(), args(&["*", "-::*"]));
        let many = (1..=17)
            .map(|i| format!("10.0.0.{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(file_error(&format!("bind {many}")).ends_with("Too many bind addresses specified."));
        assert!(file_error("bind \"\"").ends_with("would not listen anywhere"));
        assert!(file_error("bind").ends_with("would not listen anywhere"));
        assert!(file_error("bind 1.2.3.4 \"\"").ends_with("bind addresses can't be empty"));
    }

    #[test]
    fn keyspace_events_are_normalized_like_redis() {
        let mut c = Config::default();
        c.set("notify-keyspace-events", "KEA").unwrap();
        assert_eq!(c.notify_keyspace_events(), "AKE");
        c.set("notify-keyspace-events", "Kxmn").unwrap();
        assert_eq!(c.notify_keyspace_events(), "xnKm");
        c.set("notify-keyspace-events", "g$lshzxetdE").unwrap();
        assert_eq!(c.notify_keyspace_events(), "AE");
        c.set("notify-keyspace-events", "").unwrap();
        assert_eq!(c.notify_keyspace_events(), "");
        assert_eq!(
            set_error("notify-keyspace-events", "Kq"),
            "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - \
             Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
        );
    }

    #[test]
    fn enums_are_case_insensitive_and_list_choices() {
        let mut c = Config::default();
        c.set("appendfsync", "NO").unwrap();
        assert_eq!(c.appendfsync(), AppendFsync::No);
        assert_eq!(get1(&c, "appendfsync"), "no");
        c.set("loglevel", "Nothing").unwrap();
        assert_eq!(c.loglevel(), "nothing");
        assert_eq!(
            set_error("loglevel", "loud"),
            "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) \
             must be one of the following: debug, verbose, notice, warning, nothing"
        );
        assert!(file_error("compression snappy")
            .ends_with("must be one of the following: none, lz4, zstd"));
        c.parse_file_text("compression none").unwrap();
        assert_eq!(c.compression(), Compression::None);
    }

    #[test]
    fn args_override_the_file() {
        let dir = TempDir::new("args");
        let path = dir.file("strata.conf", "port 7000\nloglevel debug\ntimeout 5\n");
        let c = Config::from_args(&args(&[
            path.to_str().unwrap(),
            "--port",
            "7001",
            "--save",
            "900",
            "1",
            "--timeout 9",
            "--requirepass",
            "--not-an-option",
        ]))
        .unwrap();
        assert_eq!(c.port(), 7001);
        assert_eq!(c.loglevel(), "debug");
        assert_eq!(get1(&c, "save"), "900 1");
        assert_eq!(c.timeout_secs(), 9);
        assert_eq!(c.requirepass(), Some(b"--not-an-option".to_vec()));
        assert_eq!(c.config_file.as_deref(), Some(path.as_path()));
    }

    #[test]
    fn args_alone_work_without_a_file() {
        let c = Config::from_args(&args(&["--bind", "0.0.0.0", "::", "--databases", "2"])).unwrap();
        assert_eq!(c.bind(), args(&["0.0.0.0", "::"]));
        assert_eq!(c.databases(), 2);
        assert_eq!(c.config_file, None);
        assert_eq!(Config::from_args(&[]).unwrap().port(), 6379);
    }

    #[test]
    fn bare_save_arg_means_no_save_points() {
        let c = Config::from_args(&args(&["--save", "--port", "1"])).unwrap();
        assert_eq!(get1(&c, "save"), "");
        assert_eq!(c.port(), 1);
        let c = Config::from_args(&args(&["--port", "1", "--save"])).unwrap();
        assert_eq!(get1(&c, "save"), "");
        let c = Config::from_args(&args(&["--save", ""])).unwrap();
        assert_eq!(get1(&c, "save"), "");
    }

    #[test]
    fn arg_errors_are_reported_as_lines_after_the_file_like_redis() {
        assert_eq!(
            Config::from_args(&args(&["--foo", "bar"])).unwrap_err(),
            "\n*** FATAL CONFIG FILE ERROR (Strata) ***\nReading the configuration file, \
             at line 2\n>>> 'foo \"bar\"'\nBad directive or wrong number of arguments"
        );
        let err = Config::from_args(&args(&["--requirepass", "--x", "--port", "abc"])).unwrap_err();
        assert!(
            err.ends_with(
                "at line 3\n>>> 'port \"abc\"'\nargument couldn't be parsed into an integer"
            ),
            "{err}"
        );
        let err = Config::from_args(&args(&["--port"])).unwrap_err();
        assert!(
            err.ends_with(">>> 'port'\nwrong number of arguments"),
            "{err}"
        );
        let err = Config::from_args(&args(&["--port", "1", "2"])).unwrap_err();
        assert!(
            err.ends_with(">>> 'port \"1\" \"2\"'\nwrong number of arguments"),
            "{err}"
        );
        let err = Config::from_args(&args(&["-x"])).unwrap_err();
        assert!(
            err.ends_with(">>> '\"-x\"'\nBad directive or wrong number of arguments"),
            "{err}"
        );

        let dir = TempDir::new("argline");
        let path = dir.file("s.conf", "port 1\n");
        let err = Config::from_args(&args(&[path.to_str().unwrap(), "--foo", "bar"])).unwrap_err();
        assert!(
            err.contains("Reading the configuration file, at line 3\n"),
            "{err}"
        );
    }

    #[test]
    fn file_errors_name_the_file() {
        let dir = TempDir::new("fileline");
        let path = dir.file("s.conf", "port 1\n\nport x\n");
        let err = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap_err();
        assert_eq!(
            err,
            format!(
                "\n*** FATAL CONFIG FILE ERROR (Strata) ***\nReading the configuration file \
                 '{}', at line 3\n>>> 'port x'\nargument couldn't be parsed into an integer",
                path.display()
            )
        );
    }

    #[test]
    fn missing_config_file_is_reported() {
        let dir = TempDir::new("missing");
        let path = dir.0.join("nope.conf");
        assert_eq!(
            Config::from_args(&args(&[path.to_str().unwrap()])).unwrap_err(),
            format!(
                "Fatal error, can't open config file '{}': No such file or directory",
                path.display()
            )
        );
    }

    #[test]
    fn output_buffer_limit_values_set_only_the_classes_they_name() -> Result<(), String> {
        let mut c = Config::from_args(&args(&[
            "--client-output-buffer-limit",
            "normal 1mb 512kb 10",
            "--client-output-buffer-limit",
            "pubsub 0 0 0",
        ]))?;
        assert_eq!(c.output_buffer_limit_normal(), [1 << 20, 512 << 10, 10]);
        c.set_many(&[(
            "client-output-buffer-limit".to_string(),
            "replica 1gb 0 0".to_string(),
        )])?;
        assert_eq!(
            c.get(b"client-output-buffer-limit")[0].1,
            "normal 1048576 524288 10 slave 1073741824 0 0 pubsub 0 0 0"
        );
        let row = Id::ClientOutputBufferLimit as usize;
        assert_eq!(
            c.file_lines(row),
            args(&[
                "client-output-buffer-limit normal 1mb 512kb 10",
                "client-output-buffer-limit slave 1gb 0 0",
                "client-output-buffer-limit pubsub 0 0 0",
            ])
        );
        Ok(())
    }

    #[test]
    fn config_get_matches_names_and_aliases_by_glob_ignoring_case() {
        let c = Config::default();
        assert_eq!(
            c.get(b"*limit*"),
            vec![
                (
                    "client-query-buffer-limit".to_string(),
                    "1073741824".to_string()
                ),
                (
                    "client-output-buffer-limit".to_string(),
                    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
                        .to_string()
                ),
                ("lua-time-limit".to_string(), "5000".to_string()),
            ]
        );
        let names: Vec<String> = c.get(b"*THRESHOLD").into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, args(&["busy-reply-threshold"]));
        let names: Vec<String> = c.get(b"*read-only").into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, args(&["replica-read-only", "slave-read-only"]));
        // Every name and every alias once.
        let aliases: usize = DIRECTIVES.iter().map(|d| d.aliases.len()).sum();
        assert_eq!(aliases, 7);
        assert_eq!(c.get(b"*").len(), DIRECTIVES.len() + aliases);
        assert_eq!(
            c.get(b"p?rt"),
            vec![("port".to_string(), "6379".to_string())]
        );
        assert!(c.get(b"nothing-like-this*").is_empty());
        assert_eq!(get1(&c, "protected-mode"), "yes");
        assert_eq!(get1(&c, "proto-max-bulk-len"), "536870912");
    }

    #[test]
    fn config_get_without_wildcards_echoes_the_name_as_given() {
        let c = Config::default();
        assert_eq!(
            c.get(b"MaxClients"),
            vec![("MaxClients".to_string(), "10000".to_string())]
        );
        assert_eq!(
            c.get(b"LUA-TIME-LIMIT"),
            vec![("LUA-TIME-LIMIT".to_string(), "5000".to_string())]
        );
        assert!(c.get(b"nope").is_empty());
        assert!(c.get(b"").is_empty());
    }

    #[test]
    fn config_get_many_reports_each_name_once() {
        let c = Config::default();
        let found = c.get_many(&[b"port", b"PORT", b"p?rt", b"hz"]);
        assert_eq!(
            found,
            vec![
                ("port".to_string(), "6379".to_string()),
                ("hz".to_string(), "10".to_string())
            ]
        );
    }

    #[test]
    fn config_set_changes_mutable_values_by_any_spelling() {
        let mut c = Config::default();
        c.set("MAXCLIENTS", "5").unwrap();
        assert_eq!(c.maxclients(), 5);
        c.set("lua-time-limit", "10").unwrap();
        assert_eq!(c.busy_reply_threshold_ms(), 10);
        assert_eq!(get1(&c, "busy-reply-threshold"), "10");
        c.set("requirepass", "pw").unwrap();
        assert_eq!(c.requirepass(), Some(b"pw".to_vec()));
        c.set("requirepass", "").unwrap();
        assert_eq!(c.requirepass(), None);
        c.set("bgsave-dir", "snapshots").unwrap();
        assert_eq!(c.bgsave_dir(), PathBuf::from("./data/snapshots"));
        c.set("protected-mode", "YES").unwrap();
        assert_eq!(get1(&c, "protected-mode"), "yes");
    }

    #[test]
    fn config_set_errors_match_redis() {
        assert_eq!(
            set_error("foo", "1"),
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        assert_eq!(
            set_error("maxclients", "abc"),
            "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument \
             couldn't be parsed into an integer"
        );
        // Value errors name the directive as spelled in the table, immutability as typed.
        assert_eq!(
            set_error("MaxClients", "abc"),
            "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument \
             couldn't be parsed into an integer"
        );
        assert!(set_error("Lua-Time-Limit", "x").contains("argument 'lua-time-limit'"));
        assert_eq!(
            set_error("port", "7000"),
            "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable \
             config"
        );
        assert!(set_error("PORT", "1").contains("argument 'PORT'"));
        for name in [
            "bind",
            "dir",
            "databases",
            "logfile",
            "block-cache-size",
            "compression",
        ] {
            assert!(
                set_error(name, "1").ends_with("can't set immutable config"),
                "{name}"
            );
        }
        assert_eq!(
            set_error("protected-mode", "maybe"),
            "ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument \
             must be 'yes' or 'no'"
        );
    }

    #[test]
    fn config_set_many_is_all_or_nothing() {
        let mut c = Config::default();
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        let err = c
            .set_many(&pairs(&[("maxclients", "5"), ("hz", "abc")]))
            .unwrap_err();
        assert!(err.contains("argument 'hz'"), "{err}");
        assert_eq!(c.maxclients(), 10000);
        c.set_many(&pairs(&[("maxclients", "5"), ("hz", "20")]))
            .unwrap();
        assert_eq!((c.maxclients(), c.hz()), (5, 20));
        // The first bad name wins, in order.
        let err = c
            .set_many(&pairs(&[
                ("maxclients", "6"),
                ("foo", "1"),
                ("databases", "3"),
            ]))
            .unwrap_err();
        assert_eq!(
            err,
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        let err = c
            .set_many(&pairs(&[("databases", "3"), ("foo", "1")]))
            .unwrap_err();
        assert!(
            err.ends_with("'databases') - can't set immutable config"),
            "{err}"
        );
        let err = c
            .set_many(&pairs(&[("maxclients", "6"), ("MAXCLIENTS", "7")]))
            .unwrap_err();
        assert_eq!(
            err,
            "ERR CONFIG SET failed (possibly related to argument 'MAXCLIENTS') - duplicate \
             parameter"
        );
        assert_eq!(c.maxclients(), 5);
        // Like Redis, a name and its alias are distinct parameters; the later one wins.
        c.set_many(&pairs(&[
            ("lua-time-limit", "1"),
            ("busy-reply-threshold", "2"),
        ]))
        .unwrap();
        assert_eq!(c.busy_reply_threshold_ms(), 2);
        c.set_many(&[]).unwrap();
    }

    #[test]
    fn debug_output_redacts_the_password() {
        let mut c = Config::default();
        c.set("requirepass", "hunter2").unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"));
        assert!(shown.contains("requirepass: \"<redacted>\""), "{shown}");
        assert!(shown.contains("port: \"6379\""), "{shown}");
    }

    #[test]
    fn rewrite_without_a_config_file_fails() {
        assert_eq!(
            Config::default().rewrite().unwrap_err(),
            "ERR The server is running without a config file"
        );
    }

    #[test]
    fn rewrite_updates_in_place_keeps_comments_and_round_trips() {
        let dir = TempDir::new("rewrite");
        let original = "# Strata test config\nport 7000\nmaxclients 10\n\n# scripts\n\
                        lua-time-limit 100\nmaxclients 20\n  # indented comment\n\
                        save 900 1\nsave 300 10\nlogfile \"\"\n";
        let path = dir.file("strata.conf", original);
        let mut c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
        assert_eq!(c.maxclients(), 20);
        c.set("maxclients", "77").unwrap();
        c.set("requirepass", "p\"q\\x y").unwrap();
        c.set("notify-keyspace-events", "KEA").unwrap();
        c.set("proto-max-bulk-len", "2mb").unwrap();
        c.set("loglevel", "warning").unwrap();
        c.set("save", "").unwrap();
        c.rewrite().unwrap();
        let written = fs::read_to_string(&path).unwrap();
        assert_eq!(
            written,
            "# Strata test config\nport 7000\nmaxclients 77\n\n# scripts\n\
             busy-reply-threshold 100\n  # indented comment\nsave \"\"\nlogfile \"\"\n\n\
             # Generated by CONFIG REWRITE\nrequirepass \"p\\\"q\\\\x y\"\nloglevel warning\n\
             proto-max-bulk-len 2mb\nnotify-keyspace-events \"AKE\"\n"
        );
        let reread = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
        assert_eq!(
            format!("{:?}", reread.get(b"*")),
            format!("{:?}", c.get(b"*"))
        );

        // A second rewrite reuses the lines and the signature.
        let mut c = reread;
        c.set("maxclients", "10000").unwrap();
        c.set("save", "60 5 120 6").unwrap();
        c.set("timeout", "3").unwrap();
        c.rewrite().unwrap();
        let written = fs::read_to_string(&path).unwrap();
        assert_eq!(written.matches(REWRITE_SIGNATURE).count(), 1);
        assert!(written.contains("\nmaxclients 10000\n"));
        assert!(written.contains("\nsave 60 5\nsave 120 6\nlogfile"));
        assert!(written.ends_with("\ntimeout 3\n"), "{written}");
        let reread = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
        assert_eq!(
            format!("{:?}", reread.get(b"*")),
            format!("{:?}", c.get(b"*"))
        );
    }

    #[test]
    fn rewrite_of_defaults_leaves_the_file_alone() {
        let dir = TempDir::new("noop");
        let original = "# only comments\n\n# here\n";
        let path = dir.file("strata.conf", original);
        let c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
        c.rewrite().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), original);
    }

    #[test]
    fn rewrite_keeps_lines_it_does_not_understand() {
        let dir = TempDir::new("unknown");
        let path = dir.file("strata.conf", "port 1\n");
        let mut c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
        // Edited behind the server's back.
        fs::write(&path, "include other.conf\nport 1\r\nbroken \"quote\n").unwrap();
        c.set("hz", "50").unwrap();
        c.rewrite().unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "include other.conf\nport 1\nbroken \"quote\n\n# Generated by CONFIG REWRITE\nhz 50\n"
        );
    }

    #[test]
    fn rewrite_creates_a_missing_file_and_formats_memory() {
        let dir = TempDir::new("create");
        let path = dir.file("strata.conf", "");
        let mut c = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap();
        fs::remove_file(&path).unwrap();
        c.set("maxmemory", "3000000").unwrap();
        c.set("proto-max-bulk-len", "3gb").unwrap();
        c.set("client-query-buffer-limit", "1025kb").unwrap();
        c.rewrite().unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "# Generated by CONFIG REWRITE\nproto-max-bulk-len 3gb\n\
             client-query-buffer-limit 1025kb\nmaxmemory 3000000\n"
        );
        assert_eq!(format_memory(0), "0");
        assert_eq!(format_memory(1023), "1023");
    }

    #[test]
    fn rewrite_reports_io_errors_like_redis() {
        let dir = TempDir::new("ioerr");
        let mut c = Config {
            config_file: Some(dir.0.join("no-such-dir").join("strata.conf")),
            ..Config::default()
        };
        c.set("hz", "11").unwrap();
        assert_eq!(
            c.rewrite().unwrap_err(),
            "ERR Rewriting config file: No such file or directory"
        );
    }
}
