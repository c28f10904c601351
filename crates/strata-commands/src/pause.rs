//! Which commands CLIENT PAUSE holds back, by Redis 7.0's rule (`processCommand`): under
//! `ALL` every command that would otherwise run or be queued, under `WRITE` those that may
//! write or replicate (`write` or `may_replicate`: SET, EVAL, PUBLISH..., and EXEC when its
//! queue holds one). Commands refused earlier (unknown, wrong arity, not authenticated...) are
//! refused rather than held, and a MONITOR client is never held (Redis exempts its replicas).
//! The server keeps the pause and holds the connection; this module only judges a request.
//! Knows no family.

use bytes::Bytes;
use strata_resp::Protocol;

use crate::command::{self, CommandSpec, MAY_REPLICATE, WRITE};
use crate::{registry, scripting, Session};

/// What a cached script or a function declares: `declared("evalsha", sha)` or
/// `declared("fcall", name)` is `Some(no_writes)` when the script has a `#!lua` line or the
/// function exists, `None` otherwise.
pub type Declared<'a> = &'a dyn Fn(&str, &[u8]) -> Option<bool>;

/// Whether CLIENT PAUSE (`write_only`: the WRITE kind) holds `argv` back for `session`.
pub fn holds(session: &Session, argv: &[Bytes], write_only: bool, declared: Declared<'_>) -> bool {
    let Some(spec) = argv
        .first()
        .and_then(|name| registry::lookup(name))
        .filter(|s| !s.name.contains('|'))
    else {
        return false;
    };
    if !spec.arity_ok(argv.len())
        || (!session.authenticated && !spec.has(command::NO_AUTH))
        || (session.multi.is_some() && spec.has(command::NO_MULTI))
        || session.monitor
        || (session.subscriptions.total() > 0
            && session.protocol == Protocol::Resp2
            && !spec.has(command::WHEN_SUBSCRIBED))
    {
        return false;
    }
    if !write_only {
        return true;
    }
    if spec.has(command::RUNS_QUEUE) {
        return session
            .multi
            .as_ref()
            .is_some_and(|m| m.queue.iter().any(|q| writes(q, declared)));
    }
    writes(argv, declared)
}

/// Whether a call may write or replicate. A script that declares its flags is judged by them
/// (Redis's `scriptFlagsToCmdFlags`): `no-writes` lets it run, any other declaration makes it
/// a write.
fn writes(argv: &[Bytes], declared: Declared<'_>) -> bool {
    let Some(spec) = argv.first().and_then(|name| registry::lookup(name)) else {
        return false;
    };
    if spec.name == "eval" {
        if let Ok(Some(shebang)) = argv
            .get(1)
            .map_or(Ok(None), |b| scripting::parse_shebang(b))
        {
            return !shebang.no_writes;
        }
    }
    if matches!(spec.name, "evalsha" | "fcall") {
        if let Some(no_writes) = argv.get(1).and_then(|a| declared(spec.name, a)) {
            return !no_writes;
        }
    }
    row(argv).is_some_and(|s| s.flags.any(WRITE | MAY_REPLICATE))
}

/// The row that judges a call: a container's subcommand row, or the command's own.
fn row(argv: &[Bytes]) -> Option<&'static CommandSpec> {
    let spec = registry::lookup(argv.first()?)?;
    if registry::is_container(spec.name) {
        if let Some(sub) = argv.get(1) {
            if let Some(s) = registry::lookup(&[spec.name.as_bytes(), b"|", sub].concat()) {
                return Some(s);
            }
        }
    }
    Some(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    #[allow(clippy::expect_used)]
    fn write_pauses_hold_writers_and_may_replicate_commands_only() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = strata::Db::open(dir.path()).expect("database");
        let s = Session::new(1, db, false);
        let none = &|_: &str, _: &[u8]| None;
        assert!(holds(&s, &argv(&["SET", "k", "v"]), true, none));
        assert!(holds(&s, &argv(&["PUBLISH", "c", "m"]), true, none));
        assert!(holds(&s, &argv(&["EVAL", "return 1", "0"]), true, none));
        assert!(!holds(&s, &argv(&["GET", "k"]), true, none));
        assert!(!holds(&s, &argv(&["EVAL_RO", "return 1", "0"]), true, none));
        assert!(!holds(
            &s,
            &argv(&["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]),
            true,
            none
        ));
        // EVALSHA and FCALL are judged by what the script or function declares, when known.
        let ro = &|_: &str, a: &[u8]| (a == b"ro").then_some(true);
        assert!(!holds(&s, &argv(&["EVALSHA", "ro", "0"]), true, ro));
        assert!(!holds(&s, &argv(&["FCALL", "ro", "0"]), true, ro));
        assert!(holds(&s, &argv(&["FCALL", "other", "0"]), true, ro));
        assert!(holds(&s, &argv(&["EVALSHA", "other", "0"]), true, ro));
        assert!(holds(
            &s,
            &argv(&["EVAL", "#!lua\nreturn 1", "0"]),
            true,
            none
        ));
        assert!(!holds(&s, &argv(&["CLIENT", "UNPAUSE"]), true, none));
        assert!(holds(&s, &argv(&["GET", "k"]), false, none));
        assert!(!holds(&s, &argv(&["GET"]), false, none));
        assert!(!holds(&s, &argv(&["NOSUCH"]), false, none));
    }
}
