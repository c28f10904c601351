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

    /// The positions of the keys in `argv`, per the row's key specification.
    pub fn key_positions(&self, argc: usize) -> Vec<usize> {
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

    /// Redis 7 key specifications derived from the row's key positions: one range spec.
    fn key_specs(&self) -> Vec<Frame> {
        if self.first_key <= 0 {
            return Vec::new();
        }
        let flags: &[&str] = if self.name == "del" || self.name == "unlink" {
            &["RM", "DELETE"]
        } else if self.has_flag("write") {
            &["RW", "UPDATE"]
        } else {
            &["RO", "ACCESS"]
        };
        let last = if self.last_key < 0 {
            self.last_key as i64
        } else {
            (self.last_key - self.first_key) as i64
        };
        vec![Frame::Map(vec![
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
                        Frame::Map(vec![(
                            Frame::bulk("index"),
                            Frame::Integer(self.first_key as i64),
                        )]),
                    ),
                ]),
            ),
            (
                Frame::bulk("find_keys"),
                Frame::Map(vec![
                    (Frame::bulk("type"), Frame::bulk("range")),
                    (
                        Frame::bulk("spec"),
                        Frame::Map(vec![
                            (Frame::bulk("lastkey"), Frame::Integer(last)),
                            (Frame::bulk("keystep"), Frame::Integer(self.step as i64)),
                            (Frame::bulk("limit"), Frame::Integer(0)),
                        ]),
                    ),
                ]),
            ),
        ])]
    }

    /// The COMMAND DOCS entry for this row (name, then a map).
    pub fn docs(&self) -> Vec<Frame> {
        let mut fields = vec![
            (Frame::bulk("summary"), Frame::bulk(self.summary)),
            (Frame::bulk("since"), Frame::bulk(self.since)),
            (Frame::bulk("group"), Frame::bulk(self.group)),
            (Frame::bulk("complexity"), Frame::bulk(self.complexity)),
        ];
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
