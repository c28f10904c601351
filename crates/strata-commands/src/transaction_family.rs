//! Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH. While a connection is in MULTI,
//! [`crate::execute`] queues its commands (answering `+QUEUED`) after the checks Redis makes at
//! queue time; an error there marks the transaction so EXEC answers `-EXECABORT`. EXEC holds the
//! locks of every key the queued commands and the watched keys name (every lock when a command
//! empties or swaps whole databases), checks WATCH, then runs the commands one after another in
//! one atomic scope of the storage (`strata::Db::atomically`): their writes reach the disk as one
//! write batch, so a crash or power cut keeps the whole transaction or none of it, as Redis's
//! AOF does. Other connections see all of the transaction or none of it, and transactions on
//! disjoint keys run in parallel.

use bytes::Bytes;
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{Args, Failure, Reply};
use crate::errors;
use crate::isolation::{self, Targets};
use crate::registry as table;
use crate::watch::{WatchedKey, Watching};
use crate::{BlockMode, Ctx, Multi, Outcome};

/// The transaction family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "multi",
        arity: Arity::Exactly(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::TRANSACTION),
        handler: Handler::Reply(multi),
        docs: Docs {
            group: "transactions",
            since: "1.2.0",
            complexity: "O(1)",
            summary: "Starts a transaction: later commands are queued until EXEC.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "exec",
        arity: Arity::Exactly(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | NOT_QUEUED | RUNS_QUEUE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::TRANSACTION),
        handler: Handler::Outcome(exec),
        docs: Docs {
            group: "transactions",
            since: "1.2.0",
            complexity: "Depends on commands in the transaction",
            summary: "Runs the queued commands of the transaction atomically.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "discard",
        arity: Arity::Exactly(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::TRANSACTION),
        handler: Handler::Reply(discard),
        docs: Docs {
            group: "transactions",
            since: "2.0.0",
            complexity: "O(N), when N is the number of queued commands",
            summary: "Drops the queued commands of the transaction.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "watch",
        arity: Arity::AtLeast(2),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED | NO_TOUCH),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[KeySpec::range(RO, 1, -1, 1, 0)],
        acl: Acl(acl::TRANSACTION),
        handler: Handler::Reply(watch),
        docs: Docs {
            group: "transactions",
            since: "2.2.0",
            complexity: "O(1) for every key.",
            summary: "Makes the next EXEC fail if any of these keys changes first.",
            syntax: "key [key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "unwatch",
        arity: Arity::Exactly(1),
        flags: Flags(NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::TRANSACTION),
        handler: Handler::Reply(unwatch),
        docs: Docs {
            group: "transactions",
            since: "2.2.0",
            complexity: "O(1)",
            summary: "Forgets every watched key.",
            syntax: "",
            tips: &[],
        },
    },
];

fn multi(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    if ctx.session.multi.is_some() {
        return Err(Failure::text(errors::MULTI_NESTED));
    }
    ctx.session.multi = Some(Multi::default());
    Ok(Frame::ok())
}

fn discard(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    if ctx.session.multi.take().is_none() {
        return Err(Failure::text(errors::DISCARD_WITHOUT_MULTI));
    }
    ctx.session.watching = None;
    Ok(Frame::ok())
}

fn watch(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    if ctx.session.multi.is_some() {
        return Err(Failure::text(errors::WATCH_INSIDE_MULTI));
    }
    let db = ctx.session.db.index();
    let watching = ctx
        .session
        .watching
        .get_or_insert_with(|| Watching::new(ctx.server.watches().clone()));
    for key in Args::new(argv).rest() {
        let existed = ctx.session.db.exists(key)?;
        watching.add(WatchedKey {
            db,
            key: key.clone(),
            existed,
        });
    }
    Ok(Frame::ok())
}

fn unwatch(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.session.watching = None;
    Ok(Frame::ok())
}

fn exec(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Result<Outcome, Failure> {
    let Some(multi) = ctx.session.multi.take() else {
        return Err(Failure::text(errors::EXEC_WITHOUT_MULTI));
    };
    // Watched keys are forgotten whatever happens next, as Redis does.
    let watching = ctx.session.watching.take();
    if multi.failed {
        return Err(Failure::text(errors::EXECABORT));
    }
    let db = ctx.session.db.clone();
    // A key held by a busy script discards the transaction, as Redis's -BUSY for EXEC does.
    let scope = hold_transaction(&db, &multi.queue, watching.as_ref()).map_err(|busy| {
        Failure::text(errors::exec_abort_because(crate::scripting::busy_text(
            busy,
        )))
    })?;
    if let Some(w) = &watching {
        if watch_broken(&db, w)? {
            return Ok(Outcome::Reply(Frame::NullArray));
        }
    }
    drop(watching);
    // Blocking commands answer at once inside a transaction, as a timeout would.
    let mode = std::mem::replace(&mut ctx.session.block_mode, BlockMode::NoBlock);
    ctx.session.ready_keys = Some(Vec::new());
    // A queued command answering several times (SUBSCRIBE a b) sends the replies before its
    // last one ahead of EXEC's array.
    let mut before = Vec::new();
    let (replies, committed) = db.atomically(|| {
        multi
            .queue
            .iter()
            .map(|argv| match table::lookup(&argv[0]) {
                // The rules may have changed since the command was queued.
                Some(spec) => match crate::acl::check_at_exec(ctx, spec, argv) {
                    Err(refused) => refused,
                    Ok(()) => match crate::run(ctx, spec, argv) {
                        Outcome::Replies(first, last) => {
                            before.extend(first);
                            last
                        }
                        outcome => outcome.into_reply(),
                    },
                },
                None => errors::unknown_command(argv),
            })
            .collect()
    });
    ctx.session.block_mode = mode;
    drop(scope);
    for (d, key) in ctx.session.ready_keys.take().unwrap_or_default() {
        ctx.server.key_ready(d, &key);
    }
    // An error here means nothing of the transaction was written (the disk is full, say).
    committed?;
    Ok(match before.is_empty() {
        true => Outcome::Reply(Frame::Array(replies)),
        false => Outcome::Replies(before, Frame::Array(replies)),
    })
}

/// Takes the locks of every key the queued commands and the watched keys name, following SELECT
/// through the queue; gives up when a busy script holds one of them.
fn hold_transaction<'d>(
    db: &'d strata::Db,
    queue: &[Vec<Bytes>],
    watching: Option<&Watching>,
) -> Result<strata::KeyScope<'d>, strata::Busy> {
    let mut keys: Vec<(u32, &[u8])> = watching
        .map(|w| w.keys().iter().map(|k| (k.db, &k.key[..])).collect())
        .unwrap_or_default();
    let mut selected = db.index();
    for argv in queue {
        let Some(spec) = table::lookup(&argv[0]) else {
            continue;
        };
        if spec.has(SELECTS_DB) {
            if let Some(n) = argv.get(1).and_then(|a| isolation::db_index(a)) {
                if n < db.databases() {
                    selected = n;
                }
            }
            continue;
        }
        match isolation::targets(spec, argv, selected) {
            Targets::All => return db.hold_all_unless_busy(),
            Targets::Keys(k) => keys.extend(k.into_iter().map(|(d, i)| (d, &argv[i][..]))),
        }
    }
    db.hold_unless_busy(keys, true)
}

/// Whether EXEC must fail because of WATCH: a watched key was written, or it existed when
/// watched and is gone now (deleted or expired meanwhile).
fn watch_broken(db: &strata::Db, w: &Watching) -> strata::Result<bool> {
    if w.is_dirty() {
        return Ok(true);
    }
    for k in w.keys().iter().filter(|k| k.existed) {
        if !db.select(k.db)?.exists(&k.key)? {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn exec_runs_the_queue_and_discard_drops_it() {
        let mut h = Harness::new();
        assert_eq!(h.error(&["EXEC"]), "ERR EXEC without MULTI");
        assert_eq!(h.error(&["DISCARD"]), "ERR DISCARD without MULTI");
        assert_eq!(h.run(&["MULTI"]), Frame::ok());
        assert_eq!(h.error(&["MULTI"]), "ERR MULTI calls can not be nested");
        assert_eq!(
            h.error(&["WATCH", "k"]),
            "ERR WATCH inside MULTI is not allowed"
        );
        assert_eq!(h.run(&["SET", "k", "1"]), Frame::simple("QUEUED"));
        assert_eq!(h.run(&["INCR", "k"]), Frame::simple("QUEUED"));
        assert_eq!(
            h.run(&["EXEC"]),
            Frame::Array(vec![Frame::ok(), Frame::Integer(2)])
        );
        assert_eq!(h.run(&["MULTI"]), Frame::ok());
        assert_eq!(h.run(&["DEL", "k"]), Frame::simple("QUEUED"));
        assert_eq!(h.run(&["DISCARD"]), Frame::ok());
        assert_eq!(h.run(&["GET", "k"]), Frame::bulk("2"));
    }

    #[test]
    fn a_queueing_error_aborts_exec() {
        let mut h = Harness::new();
        h.run(&["MULTI"]);
        assert_eq!(
            h.error(&["GET"]),
            "ERR wrong number of arguments for 'get' command"
        );
        assert_eq!(
            h.error(&["EXEC"]),
            "EXECABORT Transaction discarded because of previous errors."
        );
    }

    #[test]
    fn a_watched_key_that_expires_breaks_exec() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["WATCH", "k", "other"]), Frame::ok());
        h.run(&["DEL", "k"]);
        h.run(&["MULTI"]);
        h.run(&["GET", "k"]);
        assert_eq!(h.run(&["EXEC"]), Frame::NullArray);
        assert_eq!(h.run(&["WATCH", "k"]), Frame::ok());
        assert_eq!(h.run(&["UNWATCH"]), Frame::ok());
        h.run(&["MULTI"]);
        h.run(&["GET", "k"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![Frame::Null]));
    }
}
