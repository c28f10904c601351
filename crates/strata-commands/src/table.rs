//! The command table: one row per command (and per subcommand of containers such as CONFIG), giving
//! its name, arity, flags, key positions, ACL categories, documentation and handler. Dispatch, arity
//! checks, COMMAND INFO/DOCS/COUNT/LIST/GETKEYS all read these rows and nothing else.

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;
use strata_resp::Frame;

use crate::Ctx;

/// A command handler: typed parsing of `argv` (argv[0] is the command name), one call into the data
/// model, one reply.
pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> Frame;

/// One command.
pub struct CommandSpec {
    /// Lowercase name; subcommands are written `container|sub`.
    pub name: &'static str,
    /// Redis arity: positive = exact argument count (name included), negative = at least -arity.
    pub arity: i32,
    /// Redis command flags (`write`, `readonly`, `fast`, `admin`, `noscript`, `no-auth`, ...).
    pub flags: &'static [&'static str],
    /// First key position (0 = no keys).
    pub first_key: i32,
    /// Last key position (-1 = last argument).
    pub last_key: i32,
    /// Step between keys.
    pub step: i32,
    /// ACL categories, without the `@`.
    pub acl: &'static [&'static str],
    /// Documentation group (`string`, `generic`, `connection`, `server`).
    pub group: &'static str,
    /// One-line summary for COMMAND DOCS.
    pub summary: &'static str,
    /// The argument grammar in the Redis documentation notation (see [`crate::syntax`]), the
    /// command name excluded; COMMAND DOCS derives its `arguments` from it.
    pub syntax: &'static str,
    /// Position of a count argument that the keys follow (`ZUNION numkeys key [key ...]`), in
    /// addition to any keys at `first_key..=last_key`; 0 = none. Such rows carry `movablekeys`.
    pub numkeys_at: i32,
    /// Redis version the command appeared in.
    pub since: &'static str,
    /// Time complexity for COMMAND DOCS.
    pub complexity: &'static str,
    /// The handler; for containers, the dispatcher to subcommands.
    pub handler: Handler,
}

impl CommandSpec {
    /// Whether `argc` arguments (name included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        if self.arity >= 0 {
            argc == self.arity as usize
        } else {
            argc >= (-self.arity) as usize
        }
    }

    /// Whether the row has flag `f`.
    pub fn has_flag(&self, f: &str) -> bool {
        self.flags.contains(&f)
    }

    /// Whether the command takes any key argument.
    pub fn has_keys(&self) -> bool {
        self.first_key > 0 || self.numkeys_at > 0
    }

    /// The positions of the keys in `argv` (argv[0] is the command name): those at
    /// `first_key..=last_key`, then those counted by the argument at `numkeys_at`. None when that
    /// count is negative or runs past the end of `argv`. The count is read as C's `atoi` reads
    /// it, as Redis does.
    pub fn key_positions(&self, argv: &[Bytes]) -> Option<Vec<usize>> {
        let mut out = self.range_key_positions(argv.len());
        if self.numkeys_at > 0 {
            let at = self.numkeys_at as usize;
            let n = atoi(argv.get(at)?);
            if n < 0 || (n > 0 && (at as i64).saturating_add(n) >= argv.len() as i64) {
                return None;
            }
            out.extend(at + 1..=at + n as usize);
        }
        Some(out)
    }

    fn range_key_positions(&self, argc: usize) -> Vec<usize> {
        if self.first_key <= 0 || argc <= self.first_key as usize {
            return Vec::new();
        }
        let last = if self.last_key < 0 {
            argc as i64 + self.last_key as i64
        } else {
            self.last_key as i64
        };
        let step = self.step.max(1) as usize;
        let mut out = Vec::new();
        let mut i = self.first_key as usize;
        while (i as i64) <= last && i < argc {
            out.push(i);
            i += step;
        }
        out
    }

    /// The COMMAND INFO entry for this row.
    pub fn info(&self) -> Frame {
        let subs: Vec<Frame> = subcommands_of(self.name)
            .into_iter()
            .map(|s| s.info())
            .collect();
        Frame::Array(vec![
            Frame::bulk(self.name),
            Frame::Integer(self.arity as i64),
            Frame::Set(self.flags.iter().map(|f| Frame::simple(*f)).collect()),
            Frame::Integer(self.first_key as i64),
            Frame::Integer(self.last_key as i64),
            Frame::Integer(self.step as i64),
            Frame::Set(
                self.acl
                    .iter()
                    .map(|c| Frame::simple(format!("@{c}")))
                    .collect(),
            ),
            Frame::Array(vec![]),
            Frame::Array(self.key_specs()),
            Frame::Array(subs),
        ])
    }

    /// Redis 7 key specifications derived from the row's key positions: a range spec for the keys
    /// at fixed positions, a keynum spec for the keys counted by the `numkeys_at` argument.
    fn key_specs(&self) -> Vec<Frame> {
        let mut specs = Vec::new();
        if self.first_key > 0 && self.last_key > self.first_key {
            // A fixed number of keys (RENAME key newkey, LMOVE source destination): one spec per
            // key, as Redis describes them.
            for i in (self.first_key..=self.last_key).step_by(self.step.max(1) as usize) {
                specs.push(self.range_key_spec(i, 0));
            }
        } else if self.first_key > 0 {
            let last = if self.last_key < 0 {
                self.last_key as i64
            } else {
                (self.last_key - self.first_key) as i64
            };
            specs.push(self.range_key_spec(self.first_key, last));
        }
        if self.numkeys_at > 0 {
            // The counted keys are sources when a destination precedes them (ZUNIONSTORE), and
            // are popped from otherwise (LMPOP).
            let flags: &[&str] = if self.first_key > 0 || !self.has_flag("write") {
                &["RO", "ACCESS"]
            } else {
                &["RW", "ACCESS", "DELETE"]
            };
            specs.push(key_spec(
                flags,
                self.numkeys_at,
                "keynum",
                vec![("keynumidx", 0), ("firstkey", 1), ("keystep", 1)],
            ));
        }
        specs
    }

    /// A range spec starting at `index`; `last` as Redis's `lastkey` (relative, or negative).
    fn range_key_spec(&self, index: i32, last: i64) -> Frame {
        let flags: &[&str] = if self.has_flag("pubsub") {
            // Shard channels sit in key positions but are not keys.
            &["not_key"]
        } else if self.name == "del" || self.name == "unlink" {
            &["RM", "DELETE"]
        } else if self.numkeys_at > 0 && self.has_flag("write") {
            // The destination of ZUNIONSTORE and the like is overwritten.
            &["OW", "UPDATE"]
        } else if self.has_flag("write") {
            &["RW", "UPDATE"]
        } else {
            &["RO", "ACCESS"]
        };
        key_spec(
            flags,
            index,
            "range",
            vec![
                ("lastkey", last),
                ("keystep", self.step as i64),
                ("limit", 0),
            ],
        )
    }

    /// The COMMAND DOCS entry for this row (name, then a map).
    pub fn docs(&self) -> Vec<Frame> {
        let mut fields = vec![
            (Frame::bulk("summary"), Frame::bulk(self.summary)),
            (Frame::bulk("since"), Frame::bulk(self.since)),
            (Frame::bulk("group"), Frame::bulk(self.group)),
            (Frame::bulk("complexity"), Frame::bulk(self.complexity)),
        ];
        let arguments = crate::syntax::arguments(self.syntax, self.key_specs().len());
        if !arguments.is_empty() {
            fields.push((Frame::bulk("arguments"), Frame::Array(arguments)));
        }
        let subs = subcommands_of(self.name);
        if !subs.is_empty() {
            let mut m = Vec::new();
            for s in subs {
                let mut d = s.docs();
                let v = d.pop().unwrap_or(Frame::Map(vec![]));
                let k = d.pop().unwrap_or(Frame::bulk(s.name));
                m.push((k, v));
            }
            fields.push((Frame::bulk("subcommands"), Frame::Map(m)));
        }
        vec![Frame::bulk(self.name), Frame::Map(fields)]
    }
}

/// One Redis 7 key specification: flags, an index begin_search, and a find_keys of `kind` with
/// the given spec fields.
fn key_spec(flags: &[&'static str], index: i32, kind: &str, spec: Vec<(&str, i64)>) -> Frame {
    Frame::Map(vec![
        (
            Frame::bulk("flags"),
            Frame::Set(flags.iter().map(|f| Frame::simple(*f)).collect()),
        ),
        (
            Frame::bulk("begin_search"),
            Frame::Map(vec![
                (Frame::bulk("type"), Frame::bulk("index")),
                (
                    Frame::bulk("spec"),
                    Frame::Map(vec![(Frame::bulk("index"), Frame::Integer(index as i64))]),
                ),
            ]),
        ),
        (
            Frame::bulk("find_keys"),
            Frame::Map(vec![
                (Frame::bulk("type"), Frame::bulk(kind.to_string())),
                (
                    Frame::bulk("spec"),
                    Frame::Map(
                        spec.into_iter()
                            .map(|(k, v)| (Frame::bulk(k.to_string()), Frame::Integer(v)))
                            .collect(),
                    ),
                ),
            ]),
        ),
    ])
}

/// C's `atoi`: optional leading whitespace and sign, then digits up to the first non-digit; 0
/// when there are none.
fn atoi(s: &[u8]) -> i64 {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = i < s.len() && s[i] == b'-';
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        i += 1;
    }
    let mut n: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n.saturating_mul(10).saturating_add((s[i] - b'0') as i64);
        i += 1;
    }
    if neg {
        -n
    } else {
        n
    }
}

/// Builds a [`CommandSpec`] row: `command_row!(group; name, arity, [flags], first, last, step,
/// [acl], since, complexity, summary, syntax, handler)`, optionally followed by
/// `, numkeys_at = N` for commands whose keys follow a count. Each family wraps it in a `row!`
/// macro that supplies its documentation group.
macro_rules! command_row {
    ($group:expr; $name:expr, $arity:expr, [$($flag:expr),*], $first:expr, $last:expr, $step:expr, [$($acl:expr),*], $since:expr, $complexity:expr, $summary:expr, $syntax:expr, $handler:expr $(, numkeys_at = $numkeys:expr)?) => {
        $crate::table::CommandSpec {
            name: $name,
            arity: $arity,
            flags: &[$($flag),*],
            first_key: $first,
            last_key: $last,
            step: $step,
            acl: &[$($acl),*],
            group: $group,
            summary: $summary,
            syntax: $syntax,
            numkeys_at: 0 $(+ $numkeys)?,
            since: $since,
            complexity: $complexity,
            handler: $handler,
        }
    };
}
pub(crate) use command_row;

/// Every row of every family.
pub fn all() -> &'static [&'static CommandSpec] {
    static ALL: OnceLock<Vec<&'static CommandSpec>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v: Vec<&'static CommandSpec> = Vec::new();
        for family in [
            crate::string_family::COMMANDS,
            crate::keys_family::COMMANDS,
            crate::server_family::COMMANDS,
            crate::connection_family::COMMANDS,
            crate::zset_family::COMMANDS,
            crate::list_family::COMMANDS,
            crate::hash_family::COMMANDS,
            crate::set_family::COMMANDS,
            crate::blocking_family::COMMANDS,
            crate::sort_family::COMMANDS,
            crate::transaction_family::COMMANDS,
            crate::script_family::COMMANDS,
            crate::pubsub_family::COMMANDS,
            crate::replication_family::COMMANDS,
        ] {
            v.extend(family.iter());
        }
        v
    })
}

fn index() -> &'static HashMap<&'static str, &'static CommandSpec> {
    static INDEX: OnceLock<HashMap<&'static str, &'static CommandSpec>> = OnceLock::new();
    INDEX.get_or_init(|| all().iter().map(|c| (c.name, *c)).collect())
}

/// Looks a command (or `container|sub`) up by name, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; 48];
    if name.len() > buf.len() {
        return None;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let s = std::str::from_utf8(lower).ok()?;
    index().get(s).copied()
}

/// The top-level commands (no subcommands).
pub fn top_level() -> impl Iterator<Item = &'static CommandSpec> {
    all().iter().copied().filter(|c| !c.name.contains('|'))
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

/// Dispatches a container command (CONFIG, CLIENT, OBJECT, COMMAND...) to its subcommand row,
/// checking the subcommand's arity.
pub fn dispatch_sub(ctx: &mut Ctx<'_>, argv: &[Bytes], container: &str) -> Frame {
    let sub = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
    match lookup(format!("{container}|{sub}").as_bytes()) {
        Some(spec) => {
            if !spec.arity_ok(argv.len()) {
                return crate::errors::wrong_arity(spec.name);
            }
            ctx.server.note_command(ctx.session, spec.name);
            (spec.handler)(ctx, argv)
        }
        None => crate::errors::unknown_subcommand(container, &argv[1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn every_syntax_parses() {
        for c in all() {
            if let Err(e) = crate::syntax::parse(c.syntax) {
                panic!("{}: bad syntax {:?}: {e}", c.name, c.syntax);
            }
        }
    }

    #[test]
    fn counted_keys_match_syntax_and_flags() {
        for c in all() {
            let args = crate::syntax::parse(c.syntax).unwrap();
            let pos = args.iter().position(|a| a.name == "numkeys");
            if c.numkeys_at > 0 {
                assert!(c.has_flag("movablekeys"), "{} lacks movablekeys", c.name);
                assert_eq!(pos.map(|p| p as i32 + 1), Some(c.numkeys_at), "{}", c.name);
            } else {
                assert_eq!(pos, None, "{} has numkeys but no numkeys_at", c.name);
            }
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
        assert_eq!(atoi(b" 12x"), 12);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"-3"), -3);
    }
}
