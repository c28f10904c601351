//! The command registry, at the top of the crate: every family's rows (and nothing below
//! imports it), looked up by name, and COMMAND — INFO, DOCS, COUNT, LIST, GETKEYS — the
//! registry describing itself. The rows themselves are typed in [`crate::command`]; the
//! dispatcher ([`crate::dispatch`]) finds them here.

use std::sync::OnceLock;

use bytes::Bytes;
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{self, Args, Failure, Reply};
use crate::errors;
use crate::help;
use crate::Ctx;

/// The COMMAND INFO entry for `spec`.
pub fn info(spec: &CommandSpec) -> Frame {
    let subs: Vec<Frame> = subcommands_of(spec.name).into_iter().map(info).collect();
    let range = spec.keys.range();
    Frame::Array(vec![
        Frame::bulk(spec.name),
        Frame::Integer(spec.arity.redis()),
        Frame::Set(spec.flags.names().map(Frame::simple).collect()),
        Frame::Integer(range.first as i64),
        Frame::Integer(range.last as i64),
        Frame::Integer(range.step as i64),
        Frame::Set(
            spec.acl_categories()
                .names()
                .map(|c| Frame::simple(format!("@{c}")))
                .collect(),
        ),
        Frame::Array(spec.docs.tips.iter().map(|t| Frame::bulk(*t)).collect()),
        Frame::Array(key_specs(spec)),
        Frame::Array(subs),
    ])
}

/// The row's key specifications as COMMAND INFO prints them.
pub fn key_specs(spec: &CommandSpec) -> Vec<Frame> {
    spec.key_specs.iter().map(key_spec).collect()
}

/// The COMMAND DOCS entry for `spec` (name, then a map).
pub fn docs(spec: &CommandSpec) -> Vec<Frame> {
    let d = &spec.docs;
    let mut fields = vec![
        (Frame::bulk("summary"), Frame::bulk(d.summary)),
        (Frame::bulk("since"), Frame::bulk(d.since)),
        (Frame::bulk("group"), Frame::bulk(d.group)),
        (Frame::bulk("complexity"), Frame::bulk(d.complexity)),
    ];
    let arguments = crate::syntax::arguments(d.syntax, spec.key_specs.len());
    if !arguments.is_empty() {
        fields.push((Frame::bulk("arguments"), Frame::Array(arguments)));
    }
    let subs = subcommands_of(spec.name);
    if !subs.is_empty() {
        let mut m = Vec::new();
        for s in subs {
            let mut d = docs(s);
            let v = d.pop().unwrap_or(Frame::Map(vec![]));
            let k = d.pop().unwrap_or(Frame::bulk(s.name));
            m.push((k, v));
        }
        fields.push((Frame::bulk("subcommands"), Frame::Map(m)));
    }
    vec![Frame::bulk(spec.name), Frame::Map(fields)]
}

/// One key specification: its notes (when any), flags, begin_search and find_keys.
fn key_spec(ks: &KeySpec) -> Frame {
    let map = |pairs: Vec<(&str, i64)>| {
        Frame::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (Frame::bulk(k.to_string()), Frame::Integer(v)))
                .collect(),
        )
    };
    let typed = |kind: &str, spec: Frame| {
        Frame::Map(vec![
            (Frame::bulk("type"), Frame::bulk(kind.to_string())),
            (Frame::bulk("spec"), spec),
        ])
    };
    let begin = match ks.begin {
        Begin::Index(i) => typed("index", map(vec![("index", i as i64)])),
        Begin::Keyword { keyword, startfrom } => typed(
            "keyword",
            Frame::Map(vec![
                (Frame::bulk("keyword"), Frame::bulk(keyword)),
                (Frame::bulk("startfrom"), Frame::Integer(startfrom as i64)),
            ]),
        ),
        Begin::Unknown => typed("unknown", map(vec![])),
    };
    let find = match ks.find {
        Find::Range {
            lastkey,
            keystep,
            limit,
        } => typed(
            "range",
            map(vec![
                ("lastkey", lastkey as i64),
                ("keystep", keystep as i64),
                ("limit", limit as i64),
            ]),
        ),
        Find::Keynum {
            keynumidx,
            firstkey,
            keystep,
        } => typed(
            "keynum",
            map(vec![
                ("keynumidx", keynumidx as i64),
                ("firstkey", firstkey as i64),
                ("keystep", keystep as i64),
            ]),
        ),
        Find::Unknown => typed("unknown", map(vec![])),
    };
    let mut fields = Vec::with_capacity(4);
    if !ks.notes.is_empty() {
        fields.push((Frame::bulk("notes"), Frame::bulk(ks.notes)));
    }
    fields.push((
        Frame::bulk("flags"),
        Frame::Set(ks.flag_names().map(Frame::simple).collect()),
    ));
    fields.push((Frame::bulk("begin_search"), begin));
    fields.push((Frame::bulk("find_keys"), find));
    Frame::Map(fields)
}

/// Every row of every family.
pub fn all() -> &'static [&'static CommandSpec] {
    static ALL: OnceLock<Vec<&'static CommandSpec>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v: Vec<&'static CommandSpec> = Vec::new();
        for family in [
            crate::string_family::COMMANDS,
            crate::bitmap_family::COMMANDS,
            crate::keys_family::COMMANDS,
            crate::server_family::COMMANDS,
            crate::acl_family::COMMANDS,
            COMMANDS,
            crate::connection_family::COMMANDS,
            crate::zset_family::COMMANDS,
            crate::geo_family::COMMANDS,
            crate::list_family::COMMANDS,
            crate::hash_family::COMMANDS,
            crate::set_family::COMMANDS,
            crate::blocking_family::COMMANDS,
            crate::sort_family::COMMANDS,
            crate::hll_family::COMMANDS,
            crate::stream_family::COMMANDS,
            crate::transaction_family::COMMANDS,
            crate::script_family::COMMANDS,
            crate::pubsub_family::COMMANDS,
            crate::replication_family::COMMANDS,
            crate::introspection_family::COMMANDS,
        ] {
            v.extend(family.iter());
        }
        v
    })
}

/// The rows by name: an open-addressing table (linear probing, at most half full) hashed with
/// FNV-1a over the name's lowercased bytes, so that a client's spelling (`get`, `GET`) is
/// hashed as it comes and compared once, without a lowercased copy of it.
struct NameTable {
    slots: Box<[Option<&'static CommandSpec>]>,
    mask: usize,
}

/// FNV-1a of `name` lowercased (ASCII): every command looks its name up (SipHash, the std
/// default, was a visible share of a pipelined GET's CPU) and the names are our own rows'.
#[inline]
fn name_hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= b.to_ascii_lowercase() as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl NameTable {
    fn new(rows: &[&'static CommandSpec]) -> NameTable {
        let size = (rows.len() * 2).next_power_of_two().max(16);
        let mask = size - 1;
        let mut slots: Box<[Option<&CommandSpec>]> = vec![None; size].into_boxed_slice();
        for &row in rows {
            let mut i = name_hash(row.name.as_bytes()) as usize & mask;
            while let Some(other) = slots[i] {
                if other.name == row.name {
                    break;
                }
                i = (i + 1) & mask;
            }
            // A later row of the same name replaces an earlier one, as a map collected from
            // the rows would (names are unique: see `every_row_is_found_by_its_name`).
            slots[i] = Some(row);
        }
        NameTable { slots, mask }
    }

    #[inline]
    fn get(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        let mut i = name_hash(name) as usize & self.mask;
        loop {
            let row = self.slots[i]?;
            if row.name.len() == name.len() && row.name.as_bytes().eq_ignore_ascii_case(name) {
                return Some(row);
            }
            i = (i + 1) & self.mask;
        }
    }
}

fn index() -> &'static NameTable {
    static INDEX: OnceLock<NameTable> = OnceLock::new();
    INDEX.get_or_init(|| NameTable::new(all()))
}

/// Looks a command (or `container|sub`) up by name, case-insensitively.
#[inline]
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    index().get(name)
}

/// The top-level commands (no subcommands).
pub fn top_level() -> impl Iterator<Item = &'static CommandSpec> {
    all().iter().copied().filter(|c| !c.name.contains('|'))
}

/// Whether `name` is a container with subcommands (CONFIG, CLIENT...).
pub fn is_container(name: &str) -> bool {
    // Asked of every command: a table of (first byte, length) pairs answers almost every name
    // without a comparison; the few that pass are searched in the sorted list of containers.
    struct Containers {
        names: Vec<&'static str>,
        /// Bit `len` of `by_first[first byte]` is set when a container has that first byte
        /// and length (lengths past 63 share bit 63).
        by_first: [u64; 256],
    }
    fn shape(name: &str) -> (usize, u64) {
        let first = name.as_bytes().first().copied().unwrap_or(0) as usize;
        (first, 1u64 << name.len().min(63))
    }
    static CONTAINERS: OnceLock<Containers> = OnceLock::new();
    let c = CONTAINERS.get_or_init(|| {
        let mut names: Vec<&'static str> = all()
            .iter()
            .filter_map(|c| c.name.split_once('|').map(|(parent, _)| parent))
            .collect();
        names.sort_unstable();
        names.dedup();
        let mut by_first = [0u64; 256];
        for n in &names {
            let (first, bit) = shape(n);
            by_first[first] |= bit;
        }
        Containers { names, by_first }
    });
    let (first, bit) = shape(name);
    c.by_first[first] & bit != 0 && c.names.binary_search(&name).is_ok()
}

/// The subcommand rows of a container.
pub fn subcommands_of(container: &str) -> Vec<&'static CommandSpec> {
    all()
        .iter()
        .copied()
        .filter(|c| {
            c.name
                .split_once('|')
                .is_some_and(|(parent, _)| parent == container)
        })
        .collect()
}

/// The rows of COMMAND and its subcommands: the registry describing itself.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "command",
        arity: Arity::AtLeast(1),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(N) where N is the total number of Redis commands",
            summary: "Describes every command the server knows.",
            syntax: "",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|count",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command_count),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Gives the number of commands the server knows.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "command|info",
        arity: Arity::AtLeast(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command_info),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(N) where N is the number of commands to look up",
            summary: "Describes the given commands, or all of them.",
            syntax: "[command-name [command-name ...]]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|docs",
        arity: Arity::AtLeast(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command_docs),
        docs: Docs {
            group: "server",
            since: "7.0.0",
            complexity: "O(N) where N is the number of commands to look up",
            summary: "Gives the documentation of the given commands, or of all of them.",
            syntax: "[command-name [command-name ...]]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|list",
        arity: Arity::AtLeast(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command_list),
        docs: Docs {
            group: "server",
            since: "7.0.0",
            complexity: "O(N) where N is the total number of Redis commands",
            summary: "Lists command names, optionally filtered.",
            syntax: "[filterby: FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]",
            tips: &["nondeterministic_output_order"],
        },
    },
    CommandSpec {
        name: "command|getkeys",
        arity: Arity::AtLeast(4),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command_getkeys),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(N) where N is the number of arguments to the command",
            summary: "Picks out the key arguments of a full command line.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "command|getkeysandflags",
        arity: Arity::AtLeast(4),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command_getkeysandflags),
        docs: Docs {
            group: "server",
            since: "7.0.0",
            complexity: "O(N) where N is the number of arguments to the command",
            summary: "Picks out the key arguments of a full command line, with the flags of each.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "command|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::CONNECTION),
        handler: Handler::Reply(command_help),
        docs: Docs {
            group: "server",
            since: "5.0.0",
            complexity: "O(1)",
            summary: "Lists the COMMAND subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
];

fn command(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    if Args::new(argv).is_done() {
        return Ok(Frame::Array(top_level().map(info).collect()));
    }
    Ok(dispatch_sub(ctx, argv, COMMANDS, "command"))
}

fn command_count(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Integer(top_level().count() as i64))
}

fn command_info(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let names = Args::after_subcommand(argv).rest();
    if names.is_empty() {
        return Ok(Frame::Array(top_level().map(info).collect()));
    }
    Ok(Frame::Array(
        names
            .iter()
            .map(|n| lookup(n).map(info).unwrap_or(Frame::Null))
            .collect(),
    ))
}

fn command_docs(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let names = Args::after_subcommand(argv).rest();
    let specs: Vec<_> = if names.is_empty() {
        top_level().collect()
    } else {
        names.iter().filter_map(|n| lookup(n)).collect()
    };
    let mut pairs = Vec::new();
    for s in specs {
        let mut d = docs(s);
        if let (Some(v), Some(k)) = (d.pop(), d.pop()) {
            pairs.push((k, v));
        }
    }
    Ok(Frame::Map(pairs))
}

/// What COMMAND LIST FILTERBY filters by.
#[derive(Clone, Copy)]
enum Filter {
    AclCat,
    Pattern,
    Module,
}

fn command_list(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    // As Redis 7.0 lists them: subcommands too, as `container|sub`.
    let all = all().iter().copied();
    let mut a = Args::after_subcommand(argv);
    if a.is_done() {
        return Ok(Frame::Array(all.map(|c| Frame::bulk(c.name)).collect()));
    }
    if a.remaining() != 3 || !a.opt("FILTERBY") {
        return Err(cursor::syntax());
    }
    let filter = a.word(&[
        ("ACLCAT", Filter::AclCat),
        ("PATTERN", Filter::Pattern),
        ("MODULE", Filter::Module),
    ])?;
    let value = a.value()?;
    let keep: Box<dyn Fn(&CommandSpec) -> bool> = match filter {
        Filter::AclCat => {
            let cat = Acl::by_name(value).map_or(0, |a| a.0);
            Box::new(move |c| c.acl_categories().has(cat))
        }
        Filter::Pattern => {
            let p = value.clone();
            Box::new(move |c| strata::glob::glob_match(&p, c.name.as_bytes(), true))
        }
        Filter::Module => Box::new(|_| false),
    };
    Ok(Frame::Array(
        all.filter(|c| keep(c))
            .map(|c| Frame::bulk(c.name))
            .collect(),
    ))
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS: the command `target` (the arguments after the
/// subcommand) names, and its key positions in it, or the error Redis gives.
fn keys_of_call(target: &[Bytes]) -> Result<(&'static CommandSpec, Vec<usize>), Failure> {
    let name = target.first().ok_or_else(cursor::syntax)?;
    // A container's subcommand is looked up as Redis's lookupCommand does.
    let spec = lookup(name).and_then(|c| match target.get(1) {
        Some(sub) if !subcommands_of(c.name).is_empty() => {
            lookup(&[c.name.as_bytes(), b"|", sub].concat())
        }
        _ => Some(c),
    });
    let spec = spec.ok_or_else(|| Failure::text(errors::GETKEYS_INVALID_COMMAND))?;
    // Shard channels sit in key positions (SPUBLISH) but are no keys.
    if !spec.key_specs.iter().any(|k| k.flags & NOT_KEY == 0) {
        return Err(Failure::text(errors::GETKEYS_NO_KEYS));
    }
    if !spec.arity_ok(target.len()) {
        return Err(Failure::text(errors::GETKEYS_BAD_ARITY));
    }
    match spec.key_positions(target) {
        Some(pos) if !pos.is_empty() && !range_past_the_end(spec, target.len()) => Ok((spec, pos)),
        // EVAL with a count past the end, or of 0: no keys rather than an error.
        _ if spec.has(NO_MANDATORY_KEYS) => Ok((spec, Vec::new())),
        _ => Err(Failure::text(errors::GETKEYS_INVALID_ARGS)),
    }
}

/// Whether a range key specification of `spec` starts or ends past the `argc` arguments of a
/// call, which Redis's `getKeysUsingKeySpecs` takes for a syntax error (PFMERGE with only its
/// destination: the source keys would start at argument 2).
fn range_past_the_end(spec: &CommandSpec, argc: usize) -> bool {
    let argc = argc as i64;
    spec.key_specs.iter().any(|k| match (k.begin, k.find) {
        (Begin::Index(first), Find::Range { lastkey, limit, .. }) => {
            let (first, lastkey) = (i64::from(first), i64::from(lastkey));
            let last = if lastkey >= 0 {
                first + lastkey
            } else if limit == 0 {
                argc + lastkey
            } else {
                first + ((argc - first) / i64::from(limit) + lastkey)
            };
            first >= argc || last < first || last >= argc
        }
        _ => false,
    })
}

fn command_getkeys(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let target = Args::after_subcommand(argv).rest();
    let (_, pos) = keys_of_call(target)?;
    Ok(Frame::Array(
        pos.into_iter()
            .map(|i| Frame::bulk(target[i].clone()))
            .collect(),
    ))
}

fn command_getkeysandflags(_ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let target = Args::after_subcommand(argv).rest();
    let (spec, pos) = keys_of_call(target)?;
    Ok(Frame::Array(
        pos.into_iter()
            .map(|i| {
                let flags = key_flag::names(spec.key_flags(target, i)).map(Frame::simple);
                Frame::Array(vec![
                    Frame::bulk(target[i].clone()),
                    Frame::Set(flags.collect()),
                ])
            })
            .collect(),
    ))
}

fn command_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_found_by_its_name_in_any_case() {
        for &row in all() {
            let upper = row.name.to_ascii_uppercase();
            assert!(std::ptr::eq(lookup(row.name.as_bytes()).unwrap(), row));
            assert!(std::ptr::eq(lookup(upper.as_bytes()).unwrap(), row));
        }
        let names: std::collections::HashSet<_> = all().iter().map(|r| r.name).collect();
        assert_eq!(names.len(), all().len());
        for miss in [
            "",
            "gett",
            "ge",
            "config|",
            "|",
            "x".repeat(100).as_str(),
            "g\u{e9}t",
        ] {
            assert!(lookup(miss.as_bytes()).is_none(), "{miss}");
        }
        assert!(lookup(b"\xff\xfe").is_none());
    }
    use crate::command::{Keys, MOVABLEKEYS};

    #[test]
    fn containers_are_the_commands_with_subcommand_rows() {
        for c in [
            "config", "client", "object", "command", "memory", "script", "function", "pubsub",
        ] {
            assert!(is_container(c), "{c}");
        }
        for c in [
            "get",
            "set",
            "configs",
            "confi",
            "",
            "scripts",
            "client|list",
        ] {
            assert!(!is_container(c), "{c}");
        }
        for row in all() {
            let has_subs = all()
                .iter()
                .any(|r| r.name.split_once('|').is_some_and(|(p, _)| p == row.name));
            assert_eq!(is_container(row.name), has_subs, "{}", row.name);
        }
    }

    fn argv(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn every_syntax_parses() {
        for c in all() {
            if let Err(e) = crate::syntax::parse(c.docs.syntax) {
                panic!("{}: bad syntax {:?}: {e}", c.name, c.docs.syntax);
            }
        }
    }

    #[test]
    fn counted_keys_match_syntax_and_flags() {
        for c in all() {
            let args = crate::syntax::parse(c.docs.syntax).unwrap();
            let pos = args.iter().position(|a| a.name == "numkeys");
            if let Keys::Counted(_, at) = c.keys {
                assert!(c.has(MOVABLEKEYS), "{} lacks movablekeys", c.name);
                assert_eq!(pos.map(|p| p + 1), Some(at as usize), "{}", c.name);
            } else {
                assert_eq!(pos, None, "{} has numkeys but no counted keys", c.name);
            }
        }
    }

    /// The key rule (which finds keys) and the key specs (which COMMAND INFO prints) describe
    /// the same keys: a keynum spec where the count is, a range spec where the fixed keys start.
    #[test]
    fn key_rules_agree_with_key_specs() {
        for c in all() {
            let keynum = c.key_specs.iter().find_map(|k| match (k.begin, k.find) {
                (Begin::Index(i), Find::Keynum { .. }) => Some(i),
                _ => None,
            });
            let counted = match c.keys {
                Keys::Counted(_, at) => Some(at),
                _ => None,
            };
            assert_eq!(keynum, counted, "{}: keynum spec and counted rule", c.name);
            let first_range = c.key_specs.iter().find_map(|k| match (k.begin, k.find) {
                (Begin::Index(i), Find::Range { .. }) => Some(i),
                _ => None,
            });
            assert_eq!(
                first_range.unwrap_or(0),
                c.keys.range().first,
                "{}: first range spec and fixed keys",
                c.name
            );
            assert_eq!(c.keys.any(), !c.key_specs.is_empty(), "{}", c.name);
        }
    }

    #[test]
    fn key_positions_follow_the_count() {
        let zs = lookup(b"zunionstore").unwrap();
        let a = argv(&["zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"]);
        assert_eq!(zs.key_positions(&a), Some(vec![1, 3, 4]));
        let lm = lookup(b"lmpop").unwrap();
        assert_eq!(
            lm.key_positions(&argv(&["lmpop", "2", "a", "b", "LEFT"])),
            Some(vec![2, 3])
        );
        assert_eq!(
            lm.key_positions(&argv(&["lmpop", "5", "a", "b", "LEFT"])),
            None
        );
        assert_eq!(
            lm.key_positions(&argv(&["lmpop", "-1", "a", "b", "LEFT"])),
            None
        );
        assert_eq!(
            lm.key_positions(&argv(&["lmpop", "1.5", "a", "LEFT"])),
            Some(vec![2])
        );
        // A count past i64's range saturates and must not wrap into a huge range.
        assert_eq!(
            lm.key_positions(&argv(&["lmpop", "9223372036854775808", "a", "LEFT"])),
            None
        );
        let get = lookup(b"get").unwrap();
        assert_eq!(get.key_positions(&argv(&["get", "k"])), Some(vec![1]));
    }

    #[test]
    fn command_subcommands_read_their_arguments() {
        use crate::testing::Harness;
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["COMMAND", "GETKEYS", "SET", "k", "v"]),
            Frame::Array(vec![Frame::bulk("k")])
        );
        assert_eq!(
            h.error(&["COMMAND", "GETKEYS", "NOPE", "k"]),
            "ERR Invalid command specified"
        );
        assert_eq!(
            h.error(&["COMMAND", "GETKEYS", "GET", "a", "b"]),
            "ERR Invalid number of arguments specified for command"
        );
        assert_eq!(
            h.run(&[
                "COMMAND",
                "GETKEYSANDFLAGS",
                "LMOVE",
                "a",
                "b",
                "LEFT",
                "LEFT"
            ]),
            Frame::Array(vec![
                Frame::Array(vec![
                    Frame::bulk("a"),
                    Frame::Set(vec![
                        Frame::simple("RW"),
                        Frame::simple("access"),
                        Frame::simple("delete")
                    ])
                ]),
                Frame::Array(vec![
                    Frame::bulk("b"),
                    Frame::Set(vec![Frame::simple("RW"), Frame::simple("insert")])
                ]),
            ])
        );
        assert_eq!(
            h.run(&["COMMAND", "INFO", "nope"]),
            Frame::Array(vec![Frame::Null])
        );
        assert_eq!(h.run(&["COMMAND", "DOCS", "nope"]), Frame::Map(vec![]));
        assert_eq!(
            h.run(&["COMMAND", "LIST", "FILTERBY", "pattern", "hset*"]),
            Frame::Array(vec![Frame::bulk("hset"), Frame::bulk("hsetnx")])
        );
        assert_eq!(
            h.run(&["COMMAND", "LIST", "FILTERBY", "module", "x"]),
            Frame::Array(vec![])
        );
        assert_eq!(
            h.error(&["COMMAND", "LIST", "FILTERBY", "colour", "x"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["COMMAND", "LIST", "FILTERBY"]),
            "ERR syntax error"
        );
        match h.run(&["COMMAND", "COUNT"]) {
            Frame::Integer(n) => assert!(n > 100),
            other => panic!("COMMAND COUNT answered {other:?}"),
        }
    }
}
