//! Strata's server configuration: the directives of a `redis.conf`-style file, command-line
//! overrides, and the runtime view behind `CONFIG GET`, `CONFIG SET` and `CONFIG REWRITE`.
//!
//! Every directive is one row of the table in `table.rs`: its name and aliases, the kind of
//! value it takes (`kinds.rs`, or a syntax of its own in `special.rs`), its default, who may
//! change it at runtime, and the typed field of [`Settings`] it fills. The server reads settings
//! as plain fields (`config.appendfsync`). Every Redis 7.0 directive is accepted with Redis's
//! validation and error texts; those that change nothing in Strata (`save`, `maxmemory`,
//! `hash-max-listpack-entries`, ...) are stored and reported only (docs/differences.md lists
//! them). Strata's own storage knobs (`block-cache-size`, `write-buffer-size`, `compression`,
//! `bgsave-dir`) sit alongside. Any other directive is an error, as is `daemonize yes` (Strata
//! always runs in the foreground). Reading and rewriting the file is `file.rs`'s.

mod file;
pub(crate) use file::os_error_text;
mod kinds;
mod settings;
mod special;
mod table;
#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Deref;
use std::path::PathBuf;

use strata::glob::glob_match;

use kinds::{Kind, Value};
use settings::Allowed;
pub use settings::{
    AclPubsubDefault, AppendFsync, Compression, MemoryTier, Settings, TlsAuthClients,
};
use table::{lookup, Access, Home, DIRECTIVES};

/// The current value of every directive, plus the file they were read from. Derefs to the
/// [`Settings`] Strata acts on.
#[derive(Clone)]
pub struct Config {
    settings: Settings,
    /// The values of the rows that have no field (Redis directives that change nothing in
    /// Strata), by row; `None` for rows with a field.
    inert: Vec<Option<Value>>,
    /// The configuration file given on the command line (made absolute, like Redis does), which
    /// `CONFIG REWRITE` updates; `None` when the server was started without one.
    pub config_file: Option<PathBuf>,
    /// The `user <name> <rules...>` lines of the configuration, in order: the ACL users
    /// created at start-up.
    pub users: Vec<Vec<String>>,
}

impl Deref for Config {
    type Target = Settings;

    fn deref(&self) -> &Settings {
        &self.settings
    }
}

impl Default for Config {
    /// Every directive at its default; no config file.
    fn default() -> Config {
        let mut config = Config {
            settings: Settings::default(),
            inert: vec![None; DIRECTIVES.len()],
            config_file: None,
            users: Vec::new(),
        };
        for (row, d) in DIRECTIVES.iter().enumerate() {
            let value = d
                .kind
                .parse(&split_set_value(d.kind, d.default))
                .expect("built-in defaults are valid (checked by tests)");
            config.set_value(row, value);
        }
        config
    }
}

impl fmt::Debug for Config {
    /// Lists every directive as `CONFIG GET` shows it, with the passwords redacted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Config");
        for (row, d) in DIRECTIVES.iter().enumerate() {
            let shown = self.show(row);
            if matches!(
                d.name,
                "requirepass" | "masterauth" | "tls-key-file-pass" | "tls-client-key-file-pass"
            ) && !shown.is_empty()
            {
                out.field(d.name, &"<redacted>");
            } else {
                out.field(d.name, &shown);
            }
        }
        out.field("config_file", &self.config_file).finish()
    }
}

impl Config {
    /// A row's current value.
    fn value(&self, row: usize) -> Value {
        match DIRECTIVES[row].home {
            Home::Field(field) => (field.get)(&self.settings),
            Home::Inert => self.inert[row].clone().unwrap_or(Value::Bool(false)),
        }
    }

    /// Sets a row's value (already parsed and merged).
    fn set_value(&mut self, row: usize, value: Value) {
        match DIRECTIVES[row].home {
            Home::Field(field) => {
                // A value of another type is a table error, caught by the defaults test.
                let _ = (field.set)(&mut self.settings, value);
            }
            Home::Inert => self.inert[row] = Some(value),
        }
    }

    /// A row's value as `CONFIG GET` shows it.
    fn show(&self, row: usize) -> String {
        DIRECTIVES[row].kind.show(&self.value(row))
    }

    /// `CONFIG GET pattern [pattern ...]`: every directive name or alias matching one of the
    /// glob patterns (ignoring case; hidden directives only by exact name), with its value as
    /// Redis shows it, each name once (ignoring case), in order of first match. A pattern
    /// without `*`, `?` or `[` is looked up directly and answered under the name as given, as
    /// Redis does.
    pub fn get(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = Vec::new();
        let mut add = |name: String, row: usize| {
            if !found
                .iter()
                .any(|(seen, _)| seen.eq_ignore_ascii_case(&name))
            {
                found.push((name, self.show(row)));
            }
        };
        for pattern in patterns {
            if !pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
                let name = String::from_utf8_lossy(pattern);
                if let Some((row, _)) = lookup(&name) {
                    add(name.into_owned(), row);
                }
                continue;
            }
            for (row, d) in DIRECTIVES.iter().enumerate() {
                if d.access == Access::Hidden {
                    continue;
                }
                for spelling in d.spellings() {
                    if glob_match(pattern, spelling.as_bytes(), true) {
                        add(spelling.to_string(), row);
                    }
                }
            }
        }
        found
    }

    /// `CONFIG SET name value`. The error is Redis's reply text without the leading `-`.
    #[cfg(test)]
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.set_many(&[(name.to_string(), value.to_string())])
    }

    /// `CONFIG SET name value [name value ...]`, all or nothing. As in Redis, names are checked
    /// first (the first unknown, immutable, protected or repeated one is reported, under the
    /// name as given), then values in order (reported under the table's spelling).
    /// Multi-argument directives (`bind`, `save`) split their value on spaces.
    pub fn set_many(&mut self, pairs: &[(String, String)]) -> Result<(), String> {
        let failed = |name: &str, reason: &str| {
            format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
        };
        // `local` counts as allowed: Strata does not tell local clients apart here.
        let protected_allowed = self.enable_protected_configs != Allowed::No;
        let mut targets: Vec<(usize, &'static str)> = Vec::with_capacity(pairs.len());
        for (name, _) in pairs {
            let Some(target) = lookup(name) else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                ));
            };
            match DIRECTIVES[target.0].access {
                Access::Immutable => return Err(failed(name, "can't set immutable config")),
                Access::Protected | Access::ProtectedFixed if !protected_allowed => {
                    return Err(failed(name, "can't set protected config"))
                }
                Access::ProtectedFixed => return Err(failed(name, "can't set immutable config")),
                Access::Mutable | Access::Hidden | Access::Protected | Access::Fixed => {}
            }
            if targets.contains(&target) {
                return Err(failed(name, "duplicate parameter"));
            }
            targets.push(target);
        }
        let mut next = self.clone();
        for (&(row, spelling), (_, value)) in targets.iter().zip(pairs) {
            let kind = DIRECTIVES[row].kind;
            let current = next.value(row);
            let value = kind
                .parse(&split_set_value(kind, value))
                .map_err(|e| failed(spelling, &e))?
                .merged_onto(&current);
            if DIRECTIVES[row].access == Access::Fixed && value != current {
                return Err(failed(spelling, "can't set immutable config"));
            }
            next.set_value(row, value);
        }
        *self = next;
        Ok(())
    }

    /// Records the leader set by REPLICAOF (`None`: NO ONE), for CONFIG GET and CONFIG REWRITE.
    pub fn set_replicaof(&mut self, leader: Option<(&str, u16)>) {
        self.settings.replicaof = leader.map(|(host, port)| (host.to_string(), port));
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
