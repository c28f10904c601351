//! Access control as Redis 7.0 does it: the users ([`Users`], shared by every connection; each
//! [`User`] a name and its [`Rules`]), the rule language of ACL SETUSER and of `user` lines
//! (`on`, `>pass`, `+@category`, `~pattern`, `%R~`, `&channel`, selectors `(...)`...), the way
//! ACL LIST / GETUSER describe a user back, the permission check run before every command
//! ([`check_command`]: commands, key patterns read through the rows' key specs, pub/sub
//! channels) and the ACL LOG. Permissions are per command row: a command's id is its index in
//! [`crate::registry::all`], and the categories are those the rows carry
//! ([`CommandSpec::acl_categories`], the same as COMMAND INFO shows). A user allowed everything
//! (`+@all ~* &*`, the default) is one atomic load away from running any command. Knows no
//! family; the ACL commands are `acl_family`'s.

use std::collections::BTreeMap;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use sha2::{Digest, Sha256};
use strata_resp::Frame;

use crate::command::{self, CommandSpec};
use crate::{errors, registry, Ctx};

/// Key pattern permission: the keys may be read (`%R~`).
pub const READ: u8 = 1;
/// Key pattern permission: the keys may be written (`%W~`).
pub const WRITE: u8 = 2;

/// Bits of a selector's command bitmap; the last one stands for commands added in the future
/// (set only by `+@all`, as Redis's reserved bit).
const BITS: usize = 1024;
const FUTURE: usize = BITS - 1;

/// One set of permissions: the root selector of a user, or one of its `(...)` selectors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    commands: [u64; BITS / 64],
    allcommands: bool,
    allkeys: bool,
    allchannels: bool,
    /// First arguments allowed for a command otherwise denied (`+select|0`), by command id.
    firstargs: Vec<(usize, Vec<String>)>,
    /// Key patterns with their `READ`/`WRITE` permissions, in the order given.
    keys: Vec<(Bytes, u8)>,
    /// Channel patterns, in the order given.
    channels: Vec<Bytes>,
}

/// Why a selector, or a user, refuses a command; the position is that of the argument refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// The command itself.
    Command,
    /// A key, at this argument.
    Key(usize),
    /// A channel, at this argument.
    Channel(usize),
}

impl Denied {
    /// Redis's ordering of reasons (`ACL_DENIED_CMD` < `_KEY` < `_CHANNEL`) and argument
    /// position: the most relevant of several selectors' refusals is the greatest.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(p) => (2, p),
            Denied::Channel(p) => (4, p),
        }
    }
}

/// Where a refused command was run, as ACL LOG says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// Why an ACL LOG entry was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Denied(Denied),
    Auth,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Denied(Denied::Command) => "command",
            Reason::Denied(Denied::Key(_)) => "key",
            Reason::Denied(Denied::Channel(_)) => "channel",
            Reason::Auth => "auth",
        }
    }

    fn same_kind(self, other: Reason) -> bool {
        self.name() == other.name()
    }
}

/// The id of a command row (its index among every row), as the bitmaps index commands.
pub fn command_id(spec: &CommandSpec) -> usize {
    static IDS: OnceLock<HashMap<usize, usize>> = OnceLock::new();
    let ids = IDS.get_or_init(|| {
        registry::all()
            .iter()
            .enumerate()
            .map(|(i, s)| (*s as *const CommandSpec as usize, i))
            .collect()
    });
    ids.get(&(spec as *const CommandSpec as usize))
        .copied()
        .unwrap_or(FUTURE)
}

/// The commands as Redis's command table nests them: each top-level row with the ids of its
/// subcommands.
fn command_tree() -> &'static [(usize, Vec<usize>)] {
    static TREE: OnceLock<Vec<(usize, Vec<usize>)>> = OnceLock::new();
    TREE.get_or_init(|| {
        registry::top_level()
            .map(|top| {
                let subs = registry::subcommands_of(top.name)
                    .into_iter()
                    .map(command_id)
                    .collect();
                (command_id(top), subs)
            })
            .collect()
    })
}

/// The ids of the subcommands of command `id` (none unless it is a container).
fn subcommand_ids(id: usize) -> &'static [usize] {
    static SUBS: OnceLock<HashMap<usize, usize>> = OnceLock::new();
    let tree = command_tree();
    let at = SUBS.get_or_init(|| {
        tree.iter()
            .enumerate()
            .map(|(i, (top, _))| (*top, i))
            .collect()
    });
    at.get(&id).map_or(&[], |&i| &tree[i].1[..])
}

fn spec_of(id: usize) -> Option<&'static CommandSpec> {
    registry::all().get(id).copied()
}

/// Why a rule was refused: Redis's `errno` for ACLSetUser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// ENOENT.
    Unknown,
    /// EINVAL.
    Syntax,
    /// EEXIST.
    AfterAllKeys,
    /// EISDIR.
    AfterAllChannels,
    /// ENODEV.
    NoSuchPassword,
    /// EBADMSG.
    BadHash,
    /// ECHILD.
    SubcommandFirstArg,
}

impl RuleError {
    /// Redis's `ACLSetUserStringError`.
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::AfterAllKeys => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::AfterAllChannels => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// Redis's `ACLStringHasSpaces`: whitespace or NUL.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}

impl Selector {
    /// An empty selector: no command, no key; every channel when `acl-pubsub-default` is
    /// `allchannels`.
    pub fn new(allchannels: bool) -> Selector {
        Selector {
            commands: [0; BITS / 64],
            allcommands: false,
            allkeys: false,
            allchannels,
            firstargs: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn bit(&self, id: usize) -> bool {
        id < BITS && self.commands[id / 64] & (1 << (id % 64)) != 0
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if id >= BITS {
            return;
        }
        if on {
            self.commands[id / 64] |= 1 << (id % 64);
        } else {
            self.commands[id / 64] &= !(1 << (id % 64));
            self.allcommands = false;
        }
    }

    /// Redis's `ACLChangeSelectorPerm`: a command and, for a container, its subcommands.
    fn change(&mut self, id: usize, on: bool) {
        self.set_bit(id, on);
        self.firstargs.retain(|(c, _)| *c != id);
        for &sub in subcommand_ids(id) {
            self.set_bit(sub, on);
        }
    }

    fn set_category(&mut self, cat: u32, on: bool) {
        for (top, subs) in command_tree() {
            if spec_of(*top).is_some_and(|s| s.acl_categories().has(cat)) {
                self.change(*top, on);
            }
            for sub in subs {
                if spec_of(*sub).is_some_and(|s| s.acl_categories().has(cat)) {
                    self.change(*sub, on);
                }
            }
        }
    }

    fn all_commands(&mut self, on: bool) {
        self.commands = [if on { u64::MAX } else { 0 }; BITS / 64];
        self.allcommands = on;
        self.firstargs.clear();
    }

    /// Applies one selector rule (Redis's `ACLSetSelector`).
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if op.is_empty() {
            return Err(RuleError::Syntax);
        }
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("allkeys") || is("~*") {
            self.allkeys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.keys.clear();
        } else if is("allchannels") || is("&*") {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.all_commands(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            if self.allkeys {
                return Err(RuleError::AfterAllKeys);
            }
            let (mut flags, mut offset) = (0u8, 1usize);
            if op[0] == b'%' {
                loop {
                    match op.get(offset).map(u8::to_ascii_uppercase) {
                        Some(b'R') if flags & READ == 0 => flags |= READ,
                        Some(b'W') if flags & WRITE == 0 => flags |= WRITE,
                        Some(b'~') => {
                            offset += 1;
                            break;
                        }
                        None => break,
                        Some(_) => return Err(RuleError::Syntax),
                    }
                    offset += 1;
                }
            } else {
                flags = READ | WRITE;
            }
            let pattern = &op[offset.min(op.len())..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            // The same pattern again gains the new permissions (Redis matches patterns alone).
            match self.keys.iter_mut().find(|(p, _)| p == pattern) {
                Some((_, f)) => *f |= flags,
                None => self.keys.push((Bytes::copy_from_slice(pattern), flags)),
            }
            self.allkeys = false;
        } else if op[0] == b'&' {
            if self.allchannels {
                return Err(RuleError::AfterAllChannels);
            }
            if has_spaces(&op[1..]) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c[..] == op[1..]) {
                self.channels.push(Bytes::copy_from_slice(&op[1..]));
            }
            self.allchannels = false;
        } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
            self.allow_command(&op[1..])?;
        } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
            let spec = registry::lookup(&op[1..]).ok_or(RuleError::Unknown)?;
            self.change(command_id(spec), false);
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let cat = command::Acl::by_name(&op[2..]).ok_or(RuleError::Unknown)?;
            self.set_category(cat.0, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `+command`, `+container|sub` or `+command|first-arg`.
    fn allow_command(&mut self, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let spec = registry::lookup(name).ok_or(RuleError::Unknown)?;
            self.change(command_id(spec), true);
            return Ok(());
        };
        let (head, sub) = (&name[..bar], &name[bar + 1..]);
        let spec = registry::lookup(head).ok_or(RuleError::Unknown)?;
        if spec.name.contains('|') {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if registry::is_container(spec.name) {
            let sub = registry::lookup(name).ok_or(RuleError::Unknown)?;
            self.change(command_id(sub), true);
        } else {
            let id = command_id(spec);
            let sub = String::from_utf8_lossy(sub).into_owned();
            match self.firstargs.iter_mut().find(|(c, _)| *c == id) {
                Some((_, args)) => {
                    if !args.iter().any(|a| a.eq_ignore_ascii_case(&sub)) {
                        args.push(sub);
                    }
                }
                None => self.firstargs.push((id, vec![sub])),
            }
        }
        Ok(())
    }

    /// Whether the selector lets anything through: every command, key and channel.
    fn unrestricted(&self) -> bool {
        self.allcommands && self.allkeys && self.allchannels
    }

    /// Redis's `ACLSelectorCheckCmd`: `spec` is the row run (a subcommand's own row), `keys`
    /// the keys of the call with their key-spec flags.
    fn check(
        &self,
        spec: &CommandSpec,
        argv: &[Bytes],
        keys: &[(usize, u16)],
    ) -> Result<(), Denied> {
        let id = command_id(spec);
        if !self.allcommands && !spec.has(command::NO_AUTH) && !self.bit(id) {
            let idx = if spec.name.contains('|') { 2 } else { 1 };
            let allowed = argv.len() >= 2
                && self.firstargs.iter().any(|(c, args)| {
                    *c == id
                        && argv.get(idx).is_some_and(|a| {
                            args.iter().any(|s| s.as_bytes().eq_ignore_ascii_case(a))
                        })
                });
            if !allowed {
                return Err(Denied::Command);
            }
        }
        if !self.allkeys {
            for &(pos, flags) in keys {
                if !self.key_allowed(&argv[pos], access(flags)) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if !self.allchannels {
            if let Some((from, to, pattern)) = channel_args(spec, argv.len()) {
                for (pos, ch) in argv.iter().enumerate().take(to).skip(from) {
                    if !channel_allowed(&self.channels, ch, pattern) {
                        return Err(Denied::Channel(pos));
                    }
                }
            }
        }
        Ok(())
    }

    fn key_allowed(&self, key: &[u8], need: u8) -> bool {
        self.allkeys
            || self
                .keys
                .iter()
                .any(|(p, f)| f & need == need && strata::glob::glob_match(p, key, false))
    }
}

/// The permissions a key spec's flags need: reading for `access`, writing for `insert`,
/// `delete` and `update` (Redis's `ACLSelectorCheckKey`).
fn access(flags: u16) -> u8 {
    let mut need = 0;
    if flags & command::ACCESS != 0 {
        need |= READ;
    }
    if flags & (command::INSERT | command::DELETE | command::UPDATE) != 0 {
        need |= WRITE;
    }
    need
}

/// The channel arguments of a pub/sub command that ACL checks (`from..to`, and whether they
/// are patterns): those of SUBSCRIBE, SSUBSCRIBE, PSUBSCRIBE, PUBLISH and SPUBLISH, as
/// Redis's `commands_with_channels` (unsubscribing is always allowed).
fn channel_args(spec: &CommandSpec, argc: usize) -> Option<(usize, usize, bool)> {
    match spec.name {
        "subscribe" | "ssubscribe" => Some((1, argc, false)),
        "psubscribe" => Some((1, argc, true)),
        "publish" | "spublish" => Some((1, 2.min(argc), false)),
        _ => None,
    }
}

/// Redis's `ACLCheckChannelAgainstList`: a channel matches a pattern of the list; a pattern
/// (PSUBSCRIBE) must equal one literally.
fn channel_allowed(list: &[Bytes], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| {
        if is_pattern {
            p[..] == *channel
        } else {
            strata::glob::glob_match(p, channel, false)
        }
    })
}

/// The keys ACL checks in a call: positions with their key-spec flags (keys that are not
/// keys, as SPUBLISH's channel, excluded).
fn call_keys(spec: &CommandSpec, argv: &[Bytes]) -> Vec<(usize, u16)> {
    if !spec.keys.any() {
        return Vec::new();
    }
    spec.key_positions(argv)
        .unwrap_or_default()
        .into_iter()
        .filter(|&p| p < argv.len())
        .map(|p| (p, spec.key_flags(argv, p)))
        .filter(|&(_, f)| f & command::NOT_KEY == 0)
        .collect()
}

/// A user's rules: flags, passwords (SHA-256 hex) and selectors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    /// `on` (else `off`).
    pub enabled: bool,
    /// `nopass`.
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)), `skip-sanitize-payload` (Some(false)) or neither.
    pub sanitize: Option<bool>,
    /// Password hashes, in the order added.
    pub passwords: Vec<String>,
    /// The root selector.
    pub root: Selector,
    /// The `(...)` selectors.
    pub selectors: Vec<Selector>,
}

impl Rules {
    /// A new user's: off, no password, nothing allowed.
    pub fn new(allchannels: bool) -> Rules {
        Rules {
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            root: Selector::new(allchannels),
            selectors: Vec::new(),
        }
    }

    /// The default user's: `on nopass ~* &* +@all`.
    pub fn everything() -> Rules {
        let mut r = Rules::new(true);
        r.enabled = true;
        r.nopass = true;
        r.root.all_commands(true);
        r.root.allkeys = true;
        r
    }

    /// Applies one rule (Redis's `ACLSetUser`); `allchannels` is `acl-pubsub-default`.
    pub fn apply(&mut self, op: &[u8], allchannels: bool) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Some(false);
        } else if is("sanitize-payload") {
            self.sanitize = Some(true);
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' {
                hash_password(&op[1..])
            } else {
                valid_hash(&op[1..])?
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' {
                hash_password(&op[1..])
            } else {
                valid_hash(&op[1..])?
            };
            let at = self
                .passwords
                .iter()
                .position(|p| *p == hash)
                .ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(allchannels);
            for word in split_args(&op[1..op.len() - 1]).ok_or(RuleError::Syntax)? {
                s.apply(&word)?;
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.clear();
        } else if is("reset") {
            self.nopass = false;
            self.passwords.clear();
            self.root.apply(b"resetkeys")?;
            self.root.apply(b"resetchannels")?;
            if allchannels {
                self.root.apply(b"allchannels")?;
            }
            self.enabled = false;
            self.sanitize = Some(true);
            self.selectors.clear();
            self.root.all_commands(false);
        } else {
            self.root.apply(op)?;
        }
        Ok(())
    }

    /// Whether every selector check would pass for any call.
    pub fn unrestricted(&self) -> bool {
        self.root.unrestricted()
    }

    /// Redis's `ACLCheckAllUserCommandPerm`: the first selector that allows the call wins; if
    /// none does, the most relevant refusal.
    pub fn check(&self, spec: &CommandSpec, argv: &[Bytes]) -> Result<(), Denied> {
        let mut keys = None;
        let mut worst: Option<Denied> = None;
        for s in std::iter::once(&self.root).chain(&self.selectors) {
            // The keys are worked out once, and only for a selector that looks at them.
            let keys: &[(usize, u16)] = match s.allkeys {
                true => &[],
                false => keys.get_or_insert_with(|| call_keys(spec, argv)),
            };
            match s.check(spec, argv, keys) {
                Ok(()) => return Ok(()),
                Err(d) => {
                    if worst.is_none_or(|w| d.rank() > w.rank()) {
                        worst = Some(d);
                    }
                }
            }
        }
        Err(worst.unwrap_or(Denied::Command))
    }

    /// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess`: whether a selector both allows the
    /// call and lets every key be read (`~*`, `%R~*` or `allkeys`).
    pub fn reads_every_key(&self, spec: &CommandSpec, argv: &[Bytes]) -> bool {
        let keys = call_keys(spec, argv);
        std::iter::once(&self.root).chain(&self.selectors).any(|s| {
            s.check(spec, argv, if s.allkeys { &[] } else { &keys })
                .is_ok()
                && (s.allkeys || s.keys.iter().any(|(p, f)| f & READ != 0 && &p[..] == b"*"))
        })
    }

    /// Whether `channel` (a pattern when `is_pattern`) is allowed by some selector.
    pub fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        std::iter::once(&self.root)
            .chain(&self.selectors)
            .any(|s| s.allchannels || channel_allowed(&s.channels, channel, is_pattern))
    }

    /// The flag names, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut out = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            out.push("nopass");
        }
        match self.sanitize {
            Some(false) => out.push("skip-sanitize-payload"),
            Some(true) => out.push("sanitize-payload"),
            None => {}
        }
        out
    }

    /// The rules as ACL LIST and the ACL file write them (Redis's `ACLDescribeUser`).
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for f in self.flag_names() {
            out.push_str(f);
            out.push(' ');
        }
        for p in &self.passwords {
            out.push('#');
            out.push_str(p);
            out.push(' ');
        }
        out.push_str(&describe_selector(&self.root));
        for s in &self.selectors {
            out.push_str(" (");
            out.push_str(&describe_selector(s));
            out.push(')');
        }
        out
    }
}

/// A `#hash` rule's hash, checked as Redis's `ACLCheckPasswordHash`.
fn valid_hash(h: &[u8]) -> Result<String, RuleError> {
    if h.len() != 64 || !h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(RuleError::BadHash);
    }
    Ok(String::from_utf8_lossy(h).into_owned())
}

/// A password's SHA-256 as 64 lowercase hex digits (Redis's `ACLHashPassword`).
pub fn hash_password(pass: &[u8]) -> String {
    Sha256::digest(pass)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Splits a selector's inside into words as Redis's `sdssplitargs` (quotes honoured); None on
/// unbalanced quotes.
pub fn split_args(s: &[u8]) -> Option<Vec<Vec<u8>>> {
    strata_resp::split_inline_args(s).map(|args| args.into_iter().map(|a| a.to_vec()).collect())
}

/// A key pattern as a rule (`~p`, `%R~p`, `%W~p`).
fn pattern_rule(p: &[u8], flags: u8) -> String {
    let prefix = match flags {
        READ => "%R~",
        WRITE => "%W~",
        _ => "~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(p))
}

/// Redis's `ACLDescribeSelector`: keys, channels, then the command rules.
fn describe_selector(s: &Selector) -> String {
    let mut out = String::new();
    if s.allkeys {
        out.push_str("~* ");
    } else {
        for (p, f) in &s.keys {
            out.push_str(&pattern_rule(p, *f));
            out.push(' ');
        }
    }
    if s.allchannels {
        out.push_str("&* ");
    } else {
        out.push_str("resetchannels ");
        for c in &s.channels {
            out.push('&');
            out.push_str(&String::from_utf8_lossy(c));
            out.push(' ');
        }
    }
    out.push_str(&describe_commands(s));
    out
}

/// A selector's key patterns as GETUSER shows them.
fn describe_keys(s: &Selector) -> String {
    if s.allkeys {
        return "~*".into();
    }
    s.keys
        .iter()
        .map(|(p, f)| pattern_rule(p, *f))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A selector's channel patterns as GETUSER shows them.
fn describe_channels(s: &Selector) -> String {
    if s.allchannels {
        return "&*".into();
    }
    s.channels
        .iter()
        .map(|c| format!("&{}", String::from_utf8_lossy(c)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How many commands of category `cat` the bitmap allows and denies.
fn count_category(s: &Selector, cat: u32) -> (usize, usize) {
    let (mut on, mut off) = (0, 0);
    for (top, subs) in command_tree() {
        for id in std::iter::once(top).chain(subs) {
            if spec_of(*id).is_some_and(|c| c.acl_categories().has(cat)) {
                if s.bit(*id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
    }
    (on, off)
}

/// Redis's `ACLDescribeSelectorCommandRules`: `+@all` or `-@all`, then the categories that
/// fit the bitmap best, then the single commands left to match it exactly.
fn describe_commands(s: &Selector) -> String {
    let mut rules = String::new();
    let mut fake = Selector::new(false);
    let additive = !s.bit(FUTURE);
    if additive {
        rules.push_str("-@all ");
        fake.all_commands(false);
    } else {
        rules.push_str("+@all ");
        fake.all_commands(true);
    }
    let mut temp = Selector::new(false);
    temp.commands = s.commands;
    let mut applied = [false; command::acl::NAMES.len()];
    loop {
        let mut best = None;
        let (mut mindiff, mut maxsame) = (usize::MAX, 0);
        for (j, _) in command::acl::NAMES.iter().enumerate() {
            if applied[j] {
                continue;
            }
            let (on, off) = count_category(&temp, 1 << j);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                best = Some(j);
                mindiff = diff;
                maxsame = same;
            }
        }
        let Some(j) = best else { break };
        let name = command::acl::NAMES[j];
        fake.set_category(1 << j, additive);
        temp.set_category(1 << j, !additive);
        rules.push_str(if additive { "+@" } else { "-@" });
        rules.push_str(name);
        rules.push(' ');
        applied[j] = true;
    }
    for (top, subs) in command_tree() {
        describe_single(s, &mut fake, &mut rules, *top);
        for sub in subs {
            describe_single(s, &mut fake, &mut rules, *sub);
        }
        // First arguments follow the command, after its subcommands.
        if !s.bit(*top) {
            if let (Some(spec), Some((_, args))) =
                (spec_of(*top), s.firstargs.iter().find(|(c, _)| c == top))
            {
                for a in args {
                    rules.push_str(&format!("+{}|{} ", spec.name, a));
                }
            }
        }
    }
    rules.pop();
    rules
}

fn describe_single(s: &Selector, fake: &mut Selector, rules: &mut String, id: usize) {
    let (user, faked) = (s.bit(id), fake.bit(id));
    if user != faked {
        if let Some(spec) = spec_of(id) {
            rules.push(if user { '+' } else { '-' });
            rules.push_str(spec.name);
            rules.push(' ');
        }
        fake.change(id, user);
    }
}

/// One user: its name and its rules, which ACL SETUSER replaces as a whole. The connections
/// authenticated as the user hold it, and see new rules at their next command.
pub struct User {
    name: Bytes,
    rules: RwLock<Arc<Rules>>,
    unrestricted: AtomicBool,
}

impl User {
    fn new(name: Bytes, rules: Rules) -> User {
        User {
            name,
            unrestricted: AtomicBool::new(rules.unrestricted()),
            rules: RwLock::new(Arc::new(rules)),
        }
    }

    /// An unlinked user allowed everything (sessions start with one until the server gives
    /// them its `default` user).
    pub fn unlinked_default() -> Arc<User> {
        static DEFAULT: OnceLock<Arc<User>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                Arc::new(User::new(
                    Bytes::from_static(b"default"),
                    Rules::everything(),
                ))
            })
            .clone()
    }

    /// The user's name.
    pub fn name(&self) -> &Bytes {
        &self.name
    }

    /// The current rules.
    pub fn rules(&self) -> Arc<Rules> {
        self.rules.read().clone()
    }

    /// Whether the user may run anything: one atomic load, asked before every command.
    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Relaxed)
    }

    fn set_rules(&self, rules: Rules) {
        let free = rules.unrestricted();
        *self.rules.write() = Arc::new(rules);
        self.unrestricted.store(free, Ordering::Relaxed);
    }
}

/// One ACL LOG entry.
#[derive(Clone, Debug)]
pub struct LogEntry {
    count: u64,
    reason: Reason,
    context: Context,
    object: Bytes,
    username: Bytes,
    ctime_ms: u64,
    client_info: String,
}

/// Every user, the ACL LOG, and the settings they follow (`acl-pubsub-default`,
/// `acllog-max-len`).
pub struct Users {
    users: RwLock<BTreeMap<Bytes, Arc<User>>>,
    default: Arc<User>,
    log: Mutex<VecDeque<LogEntry>>,
    log_max: AtomicUsize,
    allchannels: AtomicBool,
}

impl Default for Users {
    fn default() -> Users {
        Users::new()
    }
}

impl Users {
    /// Only `default`, allowed everything without a password.
    pub fn new() -> Users {
        let default = Arc::new(User::new(
            Bytes::from_static(b"default"),
            Rules::everything(),
        ));
        let mut users = BTreeMap::new();
        users.insert(default.name.clone(), default.clone());
        Users {
            users: RwLock::new(users),
            default,
            log: Mutex::new(VecDeque::new()),
            log_max: AtomicUsize::new(128),
            allchannels: AtomicBool::new(false),
        }
    }

    /// The `default` user.
    pub fn default_user(&self) -> &Arc<User> {
        &self.default
    }

    /// `acl-pubsub-default`: whether new users get every channel.
    pub fn set_pubsub_default(&self, allchannels: bool) {
        self.allchannels.store(allchannels, Ordering::Relaxed);
    }

    /// `acllog-max-len`.
    pub fn set_log_max(&self, n: usize) {
        self.log_max.store(n, Ordering::Relaxed);
        let mut log = self.log.lock();
        log.truncate(n);
    }

    fn allchannels(&self) -> bool {
        self.allchannels.load(Ordering::Relaxed)
    }

    /// Redis's `authRequired` without the client: the default user needs a password or is off.
    pub fn auth_required(&self) -> bool {
        let r = self.default.rules();
        !r.nopass || !r.enabled
    }

    /// `requirepass`: the default user's only password, or `nopass` when empty.
    pub fn set_default_password(&self, pass: Option<&[u8]>) {
        let mut r = (*self.default.rules()).clone();
        r.nopass = false;
        r.passwords.clear();
        match pass {
            Some(p) => r.passwords.push(hash_password(p)),
            None => r.nopass = true,
        }
        self.default.set_rules(r);
    }

    /// A user by name.
    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, in name order.
    pub fn all(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// The user `name` authenticates as with `pass`, if the pair is valid (Redis's
    /// `ACLCheckUserCredentials`).
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let user = self.get(name)?;
        let r = user.rules();
        if !r.enabled {
            return None;
        }
        if r.nopass {
            return Some(user);
        }
        let hash = hash_password(pass);
        r.passwords
            .iter()
            .any(|p| constant_time_eq(p.as_bytes(), hash.as_bytes()))
            .then_some(user)
    }

    /// ACL SETUSER: applies every rule to a copy of the user (a new one when absent), and
    /// stores it only when all apply. The error is Redis's reply text.
    pub fn set_user(&self, name: &[u8], ops: &[Bytes]) -> Result<(), String> {
        let ops = merge_selectors(ops.iter().map(|o| o.to_vec()).collect()).map_err(|at| {
            format!("ERR Unmatched parenthesis in acl selector starting at '{at}'.")
        })?;
        let allchannels = self.allchannels();
        let mut users = self.users.write();
        let existing = users.get(name).cloned();
        let mut rules = match &existing {
            Some(u) => (*u.rules()).clone(),
            None => Rules::new(allchannels),
        };
        for op in &ops {
            rules.apply(op, allchannels).map_err(|e| {
                format!(
                    "ERR Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.text()
                )
            })?;
        }
        match existing {
            Some(u) => u.set_rules(rules),
            None => {
                let name = Bytes::copy_from_slice(name);
                users.insert(name.clone(), Arc::new(User::new(name, rules)));
            }
        }
        Ok(())
    }

    /// ACL DELUSER: removes the users; how many existed.
    pub fn delete(&self, names: &[Bytes]) -> usize {
        let mut users = self.users.write();
        names
            .iter()
            .filter(|n| users.remove(&n[..]).is_some())
            .count()
    }

    /// Replaces every user by `fresh` (ACL LOAD), keeping `default`'s handle: its rules
    /// become those of the `default` in `fresh`, or everything without a password when absent.
    /// Returns the names of the users replaced (their clients must be disconnected).
    pub fn replace_all(&self, fresh: Vec<(Bytes, Rules)>) -> Vec<Bytes> {
        let mut users = self.users.write();
        let gone: Vec<Bytes> = users
            .keys()
            .filter(|n| &n[..] != b"default")
            .cloned()
            .collect();
        users.clear();
        let mut default_rules = Rules::everything();
        for (name, rules) in fresh {
            if &name[..] == b"default" {
                default_rules = rules;
            } else {
                users.insert(name.clone(), Arc::new(User::new(name, rules)));
            }
        }
        self.default.set_rules(default_rules);
        users.insert(self.default.name.clone(), self.default.clone());
        gone
    }

    /// Creates the users of the configuration file's `user` lines at start-up (Redis's
    /// `ACLLoadConfiguredUsers`): `default` is reset, then given its rules. The error is the
    /// text Redis logs before exiting.
    pub fn load_configured(&self, lines: &[Vec<Bytes>]) -> Result<(), String> {
        let allchannels = self.allchannels();
        let mut seen: Vec<&Bytes> = Vec::new();
        for line in lines {
            let Some(name) = line.first() else { continue };
            if seen.contains(&name) {
                return Err(format!(
                    "Error in user declaration '{}': {}",
                    String::from_utf8_lossy(name),
                    "Duplicate user found. A user can only be defined once in config files"
                ));
            }
            seen.push(name);
            if has_spaces(name) {
                return Err("Spaces not allowed in ACL usernames".into());
            }
            let ops = merge_selectors(line[1..].iter().map(|o| o.to_vec()).collect())
                .map_err(|_| "Unmatched parenthesis in selector definition".to_string())?;
            let mut rules = match &name[..] {
                b"default" => (*self.default.rules()).clone(),
                _ => Rules::new(allchannels),
            };
            if &name[..] == b"default" {
                rules
                    .apply(b"reset", allchannels)
                    .map_err(|e| e.text().to_string())?;
            }
            for op in &ops {
                rules.apply(op, allchannels).map_err(|e| {
                    format!(
                        "Error loading ACL rule '{}' for the user named '{}': {}",
                        String::from_utf8_lossy(op),
                        String::from_utf8_lossy(name),
                        e.text()
                    )
                })?;
            }
            match self.get(name) {
                Some(u) => u.set_rules(rules),
                None => {
                    self.users
                        .write()
                        .insert(name.clone(), Arc::new(User::new(name.clone(), rules)));
                }
            }
        }
        Ok(())
    }

    /// Reads an ACL file's text into users, as Redis's `ACLLoadFromFile` (every line checked;
    /// the error lists every problem found, prefixed by `filename:line`).
    pub fn parse_file(&self, text: &[u8], filename: &str) -> Result<Vec<(Bytes, Rules)>, String> {
        let allchannels = self.allchannels();
        let mut errors = String::new();
        let mut out: Vec<(Bytes, Rules)> = Vec::new();
        for (i, line) in text.split(|&c| c == b'\n').enumerate() {
            let linenum = i + 1;
            let line = strata_resp::trim(line, b" \t\r\n");
            if line.is_empty() {
                continue;
            }
            let argv: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
            if argv[0] != b"user" || argv.len() < 2 {
                errors.push_str(&format!(
                    "{filename}:{linenum} should start with user keyword followed by the username. "
                ));
                continue;
            }
            let name = Bytes::copy_from_slice(argv[1]);
            if has_spaces(&name) {
                errors.push_str(&format!(
                    "'{filename}:{linenum}: username '{}' contains invalid characters. ",
                    String::from_utf8_lossy(&name)
                ));
                continue;
            }
            if out.iter().any(|(n, _)| *n == name) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{}' found on line {linenum}. ",
                    String::from_utf8_lossy(&name)
                ));
                continue;
            }
            let ops = match merge_selectors(argv[2..].iter().map(|o| o.to_vec()).collect()) {
                Ok(ops) => ops,
                Err(_) => {
                    errors.push_str(&format!(
                        "{filename}:{linenum}: Unmatched parenthesis in selector definition."
                    ));
                    Vec::new()
                }
            };
            let mut rules = Rules::new(allchannels);
            let mut syntax_error = false;
            for op in &ops {
                let op = strata_resp::trim(op, b"\t\r\n");
                if let Err(e) = rules.apply(op, allchannels) {
                    if e == RuleError::Unknown {
                        errors.push_str(&format!(
                            "{filename}:{linenum}: Error in applying operation '{}': {}. ",
                            String::from_utf8_lossy(op),
                            e.text()
                        ));
                    } else if !syntax_error {
                        errors.push_str(&format!("{filename}:{linenum}: {}. ", e.text()));
                        syntax_error = true;
                    }
                }
            }
            out.push((name, rules));
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            errors.push_str(
                "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
            );
            Err(errors)
        }
    }

    /// The ACL file text: one `user` line per user (Redis's `ACLSaveToFile`).
    pub fn file_text(&self) -> String {
        self.all()
            .iter()
            .map(|u| {
                format!(
                    "user {} {}\n",
                    String::from_utf8_lossy(&u.name),
                    u.rules().describe()
                )
            })
            .collect()
    }

    /// Adds an entry to the ACL LOG, or counts it in a similar recent one (Redis's
    /// `addACLLogEntry`: same reason, context, object and user within a minute).
    pub fn log(
        &self,
        reason: Reason,
        context: Context,
        object: Bytes,
        username: Bytes,
        client_info: String,
    ) {
        let now = strata::now_ms();
        let mut log = self.log.lock();
        let found = log.iter().take(10).position(|e| {
            e.reason.same_kind(reason)
                && e.context == context
                && e.ctime_ms.abs_diff(now) <= 60_000
                && e.object == object
                && e.username == username
        });
        if let Some(at) = found {
            if let Some(mut e) = log.remove(at) {
                e.count += 1;
                e.ctime_ms = now;
                e.client_info = client_info;
                log.push_front(e);
            }
            return;
        }
        log.push_front(LogEntry {
            count: 1,
            reason,
            context,
            object,
            username,
            ctime_ms: now,
            client_info,
        });
        let max = self.log_max.load(Ordering::Relaxed);
        log.truncate(max);
    }

    /// ACL LOG RESET.
    pub fn log_reset(&self) {
        self.log.lock().clear();
    }

    /// ACL LOG [count]: the newest entries first.
    pub fn log_reply(&self, count: usize) -> Frame {
        let now = strata::now_ms();
        let log = self.log.lock();
        Frame::Array(
            log.iter()
                .take(count)
                .map(|e| {
                    Frame::Map(vec![
                        (Frame::bulk("count"), Frame::Integer(e.count as i64)),
                        (Frame::bulk("reason"), Frame::bulk(e.reason.name())),
                        (Frame::bulk("context"), Frame::bulk(e.context.name())),
                        (Frame::bulk("object"), Frame::Bulk(e.object.clone())),
                        (Frame::bulk("username"), Frame::Bulk(e.username.clone())),
                        (
                            Frame::bulk("age-seconds"),
                            Frame::Double(now.saturating_sub(e.ctime_ms) as f64 / 1000.0),
                        ),
                        (
                            Frame::bulk("client-info"),
                            Frame::bulk(e.client_info.clone()),
                        ),
                    ])
                })
                .collect(),
        )
    }
}

/// Compares without stopping at the first difference (Redis's `time_independent_strcmp`).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Redis's `ACLMergeSelectorArguments`: a selector spread over several arguments (`(+get`
/// `~key)`) becomes one; Err carries the argument that opened an unclosed one.
pub fn merge_selectors(ops: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::with_capacity(ops.len());
    let mut open: Option<(Vec<u8>, String)> = None;
    for op in ops {
        if let Some((mut sel, at)) = open.take() {
            sel.push(b' ');
            sel.extend_from_slice(&op);
            if op.last() == Some(&b')') {
                out.push(sel);
            } else {
                open = Some((sel, at));
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            let at = String::from_utf8_lossy(&op).into_owned();
            open = Some((op, at));
            continue;
        }
        out.push(op);
    }
    match open {
        Some((_, at)) => Err(at),
        None => Ok(out),
    }
}

/// The row whose permission a call needs: a container's subcommand row (None when the
/// subcommand is unknown or its arity wrong: the command fails before ACL matters).
fn judged(spec: &'static CommandSpec, argv: &[Bytes]) -> Option<&'static CommandSpec> {
    if spec.name.contains('|') || !registry::is_container(spec.name) {
        return Some(spec);
    }
    let sub = argv.get(1)?;
    let row = registry::lookup(&[spec.name.as_bytes(), b"|", sub].concat())?;
    row.arity_ok(argv.len()).then_some(row)
}

/// Checks `argv` (a call of `spec`) against `user`'s rules: Ok, or the refusal with the row
/// judged (for its name).
pub fn check_user(
    user: &User,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Result<(), (Denied, &'static CommandSpec)> {
    if user.unrestricted() {
        return Ok(());
    }
    let Some(row) = judged(spec, argv) else {
        return Ok(());
    };
    user.rules().check(row, argv).map_err(|d| (d, row))
}

/// Logs a refusal in the ACL LOG, with the client's CLIENT INFO line.
fn log_denied(
    ctx: &mut Ctx<'_>,
    denied: Denied,
    row: &CommandSpec,
    argv: &[Bytes],
    context: Context,
) {
    let object = match denied {
        Denied::Command => Bytes::from_static(row.name.as_bytes()),
        Denied::Key(p) | Denied::Channel(p) => argv.get(p).cloned().unwrap_or_default(),
    };
    ctx.server.note_command(ctx.session, row.name);
    let info = client_info_line(ctx);
    let user = ctx.session.user.name().clone();
    ctx.server
        .acl()
        .log(Reason::Denied(denied), context, object, user, info);
}

/// This client's CLIENT INFO line, without its newline (ACL LOG's `client-info`).
pub fn client_info_line(ctx: &Ctx<'_>) -> String {
    ctx.server.client_info(ctx.session).trim_end().to_string()
}

/// The permission check before a client's command runs or is queued: Ok, or the `-NOPERM`
/// reply (the refusal logged in the ACL LOG). One atomic load for an unrestricted user.
#[inline]
pub fn check_command(
    ctx: &mut Ctx<'_>,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Result<(), Frame> {
    if ctx.session.user.unrestricted() {
        return Ok(());
    }
    check_slow(ctx, spec, argv)
}

/// Checks the connection's user against a call of `spec`: the refusal, logged in the ACL LOG
/// as made in `context`, with the row judged. Each caller words the refusal its own way.
fn refusal(
    ctx: &mut Ctx<'_>,
    spec: &'static CommandSpec,
    argv: &[Bytes],
    context: Context,
) -> Option<(Denied, &'static CommandSpec)> {
    if ctx.session.user.unrestricted() {
        return None;
    }
    let user = ctx.session.user.clone();
    let (denied, row) = check_user(&user, spec, argv).err()?;
    log_denied(ctx, denied, row, argv, context);
    Some((denied, row))
}

#[cold]
fn check_slow(ctx: &mut Ctx<'_>, spec: &'static CommandSpec, argv: &[Bytes]) -> Result<(), Frame> {
    let context = match ctx.session.multi.is_some() {
        true => Context::Multi,
        false => Context::Toplevel,
    };
    let Some((denied, row)) = refusal(ctx, spec, argv, context) else {
        return Ok(());
    };
    Err(errors::err(match denied {
        Denied::Command => errors::noperm_command(row.name),
        Denied::Key(_) => errors::NOPERM_KEY.to_string(),
        Denied::Channel(_) => errors::NOPERM_CHANNEL.to_string(),
    }))
}

/// The check EXEC makes again for each queued command (rules may have changed since it was
/// queued): the error reply in its place when refused.
pub fn check_at_exec(
    ctx: &mut Ctx<'_>,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Result<(), Frame> {
    let Some((denied, _)) = refusal(ctx, spec, argv, Context::Multi) else {
        return Ok(());
    };
    Err(errors::err(errors::noperm_at_exec(match denied {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    })))
}

/// Whether the connection's user may read any key with this call (SORT's BY and GET patterns
/// need it).
pub fn reads_every_key(ctx: &Ctx<'_>, argv: &[Bytes]) -> bool {
    let user = &ctx.session.user;
    if user.unrestricted() {
        return true;
    }
    registry::lookup(&argv[0]).is_some_and(|spec| user.rules().reads_every_key(spec, argv))
}

/// The check of `redis.call` / `redis.pcall`: the script's error text when refused.
pub fn check_in_script(
    ctx: &mut Ctx<'_>,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Result<(), String> {
    let Some((denied, _)) = refusal(ctx, spec, argv, Context::Lua) else {
        return Ok(());
    };
    Err(format!(
        "ERR The user executing the script {}",
        denial_text(denied)
    ))
}

/// Redis's `getAclErrorMessage`.
pub fn denial_text(d: Denied) -> &'static str {
    match d {
        Denied::Command => "can't run this command or subcommand",
        Denied::Key(_) => {
            "can't access at least one of the keys mentioned in the command arguments"
        }
        Denied::Channel(_) => "can't publish to the channel mentioned in the command",
    }
}

/// Logs a failed AUTH (or HELLO AUTH) of `username` in the ACL LOG.
pub fn log_auth_failure(ctx: &mut Ctx<'_>, argv0: &Bytes, username: &Bytes) {
    let context = match ctx.session.multi.is_some() {
        true => Context::Multi,
        false => Context::Toplevel,
    };
    let info = client_info_line(ctx);
    ctx.server
        .acl()
        .log(Reason::Auth, context, argv0.clone(), username.clone(), info);
}

/// GETUSER's description of one selector: commands, keys, channels.
pub fn selector_fields(s: &Selector) -> Vec<(Frame, Frame)> {
    vec![
        (Frame::bulk("commands"), Frame::bulk(describe_commands(s))),
        (Frame::bulk("keys"), Frame::bulk(describe_keys(s))),
        (Frame::bulk("channels"), Frame::bulk(describe_channels(s))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(ops: &[&str]) -> Rules {
        let mut r = Rules::new(false);
        for op in ops {
            r.apply(op.as_bytes(), false).expect("valid rule");
        }
        r
    }

    #[test]
    fn passwords_are_stored_as_sha256_hex() {
        assert_eq!(
            hash_password(b"foo"),
            "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
        );
        let r = rules(&[
            ">foo",
            "#2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
        ]);
        assert_eq!(r.passwords.len(), 1);
        assert_eq!(
            Rules::new(false).apply(b"#abc", false),
            Err(RuleError::BadHash)
        );
        assert_eq!(
            Rules::new(false).apply(b"<nope", false),
            Err(RuleError::NoSuchPassword)
        );
    }

    #[test]
    fn a_new_user_is_described_as_redis_lists_it() {
        assert_eq!(Rules::new(false).describe(), "off resetchannels -@all");
        assert_eq!(Rules::everything().describe(), "on nopass ~* &* +@all");
        let r = rules(&["on", "~k*", "%R~r*", "&ch", "+get"]);
        assert_eq!(r.describe(), "on ~k* %R~r* resetchannels &ch -@all +get");
    }

    #[test]
    fn categories_and_commands_check_as_redis() {
        let get = registry::lookup(b"get").expect("get");
        let set = registry::lookup(b"set").expect("set");
        let argv = |w: &[&str]| {
            w.iter()
                .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                .collect::<Vec<_>>()
        };
        let r = rules(&["+@read", "%R~r*", "%W~w*"]);
        assert_eq!(r.check(get, &argv(&["get", "r1"])), Ok(()));
        assert_eq!(r.check(get, &argv(&["get", "w1"])), Err(Denied::Key(1)));
        assert_eq!(
            r.check(set, &argv(&["set", "w1", "v"])),
            Err(Denied::Command)
        );
        let r = rules(&["-@all", "+select|0", "allkeys"]);
        let select = registry::lookup(b"select").expect("select");
        assert_eq!(r.check(select, &argv(&["select", "0"])), Ok(()));
        assert_eq!(
            r.check(select, &argv(&["select", "1"])),
            Err(Denied::Command)
        );
        assert_eq!(r.describe(), "off ~* resetchannels -@all +select|0");
    }

    #[test]
    fn selectors_are_merged_across_arguments() {
        let ops = vec![b"on".to_vec(), b"(+get".to_vec(), b"~a)".to_vec()];
        assert_eq!(
            merge_selectors(ops),
            Ok(vec![b"on".to_vec(), b"(+get ~a)".to_vec()])
        );
        assert_eq!(
            merge_selectors(vec![b"(+get".to_vec()]),
            Err("(+get".to_string())
        );
    }
}
