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

use crate::errors::{self, err};
use crate::isolation::{self, Targets};
use crate::table::{self, CommandSpec};
use crate::watch::{WatchedKey, Watching};
use crate::{BlockMode, Ctx};

macro_rules! row {
    ($name:expr, $arity:expr, [$($flag:expr),*], $first:expr, $last:expr, [$($acl:expr),*], $since:expr, $complexity:expr, $summary:expr, $syntax:expr, $handler:expr) => {
        crate::table::command_row!("transactions"; $name, $arity, [$($flag),*], $first, $last, 1, [$($acl),*], $since, $complexity, $summary, $syntax, $handler)
    };
}

/// The transaction family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!(
        "multi",
        1,
        ["noscript", "loading", "stale", "fast", "allow_busy"],
        0,
        0,
        ["fast", "transaction"],
        "1.2.0",
        "O(1)",
        "Starts a transaction: later commands are queued until EXEC.",
        "",
        multi
    ),
    row!(
        "exec",
        1,
        ["noscript", "loading", "stale", "skip_slowlog"],
        0,
        0,
        ["slow", "transaction"],
        "1.2.0",
        "Depends on commands in the transaction",
        "Runs the queued commands of the transaction atomically.",
        "",
        exec
    ),
    row!(
        "discard",
        1,
        ["noscript", "loading", "stale", "fast", "allow_busy"],
        0,
        0,
        ["fast", "transaction"],
        "2.0.0",
        "O(N), when N is the number of queued commands",
        "Drops the queued commands of the transaction.",
        "",
        discard
    ),
    row!(
        "watch",
        -2,
        ["noscript", "loading", "stale", "fast", "allow_busy"],
        1,
        -1,
        ["fast", "transaction"],
        "2.2.0",
        "O(1) for every key.",
        "Makes the next EXEC fail if any of these keys changes first.",
        "key [key ...]",
        watch
    ),
    row!(
        "unwatch",
        1,
        ["noscript", "loading", "stale", "fast", "allow_busy"],
        0,
        0,
        ["fast", "transaction"],
        "2.2.0",
        "O(1)",
        "Forgets every watched key.",
        "",
        unwatch
    ),
];

/// A connection's open transaction.
#[derive(Default)]
pub struct Multi {
    /// The queued commands, in order.
    pub queue: Vec<Vec<Bytes>>,
    /// A command failed the queue-time checks: EXEC answers EXECABORT.
    pub failed: bool,
    /// Memory the queued arguments take as Redis counts it (CLIENT LIST `multi-mem`): their
    /// lengths plus a pointer per argument.
    pub argv_mem: usize,
}

impl Multi {
    /// Queues a command.
    pub fn queue(&mut self, argv: &[Bytes]) {
        self.argv_mem +=
            argv.iter().map(|a| a.len()).sum::<usize>() + argv.len() * std::mem::size_of::<usize>();
        self.queue.push(argv.to_vec());
    }
}

/// The commands that run at once inside MULTI instead of being queued.
pub fn runs_inside_multi(spec: &CommandSpec) -> bool {
    matches!(
        spec.name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

fn multi(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    if ctx.session.multi.is_some() {
        return err(errors::MULTI_NESTED);
    }
    ctx.session.multi = Some(Multi::default());
    Frame::ok()
}

fn discard(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    if ctx.session.multi.take().is_none() {
        return err(errors::DISCARD_WITHOUT_MULTI);
    }
    ctx.session.watching = None;
    Frame::ok()
}

fn watch(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if ctx.session.multi.is_some() {
        return err(errors::WATCH_INSIDE_MULTI);
    }
    let db = ctx.session.db.index();
    let watching = ctx
        .session
        .watching
        .get_or_insert_with(|| Watching::new(ctx.server.watches().clone()));
    for key in &argv[1..] {
        let existed = match ctx.session.db.exists(key) {
            Ok(e) => e,
            Err(e) => return errors::from_db(e),
        };
        watching.add(WatchedKey {
            db,
            key: key.clone(),
            existed,
        });
    }
    Frame::ok()
}

fn unwatch(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    ctx.session.watching = None;
    Frame::ok()
}

fn exec(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    let Some(multi) = ctx.session.multi.take() else {
        return err(errors::EXEC_WITHOUT_MULTI);
    };
    // Watched keys are forgotten whatever happens next, as Redis does.
    let watching = ctx.session.watching.take();
    if multi.failed {
        return err(errors::EXECABORT);
    }
    let db = ctx.session.db.clone();
    // A key held by a busy script discards the transaction, as Redis's -BUSY for EXEC does.
    let scope = match hold_transaction(&db, &multi.queue, watching.as_ref()) {
        Ok(scope) => scope,
        Err(busy) => {
            return err(errors::exec_abort_because(crate::scripting::busy_text(
                busy,
            )))
        }
    };
    if let Some(w) = &watching {
        match watch_broken(&db, w) {
            Ok(false) => {}
            Ok(true) => return Frame::NullArray,
            Err(e) => return errors::from_db(e),
        }
    }
    drop(watching);
    // Blocking commands answer at once inside a transaction, as a timeout would.
    let mode = std::mem::replace(&mut ctx.session.block_mode, BlockMode::NoBlock);
    ctx.session.ready_keys = Some(Vec::new());
    let (replies, committed) = db.atomically(|| {
        multi
            .queue
            .iter()
            .map(|argv| match table::lookup(&argv[0]) {
                Some(spec) => crate::run(ctx, spec, argv),
                None => errors::unknown_command(argv),
            })
            .collect()
    });
    ctx.session.block_mode = mode;
    drop(scope);
    for (d, key) in ctx.session.ready_keys.take().unwrap_or_default() {
        ctx.server.key_ready(d, &key);
    }
    match committed {
        Ok(()) => Frame::Array(replies),
        // Nothing of the transaction was written (the disk is full, say).
        Err(e) => errors::from_db(e),
    }
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
        if spec.name == "select" {
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

/// Before FLUSHDB or FLUSHALL empties databases `dbs`: touches their watched keys that exist,
/// as Redis does (a watched key that is missing, or only expired, stays untouched).
pub fn touch_flushed(ctx: &Ctx<'_>, dbs: impl IntoIterator<Item = u32>) {
    for d in dbs {
        touch_existing(ctx, d, &[d]);
    }
}

/// Before SWAPDB exchanges databases `a` and `b`: touches the watched keys of either that exist
/// in either (a watched key that is missing in both stays untouched).
pub fn touch_swapped(ctx: &Ctx<'_>, a: u32, b: u32) {
    touch_existing(ctx, a, &[a, b]);
    if a != b {
        touch_existing(ctx, b, &[a, b]);
    }
}

/// Touches the keys watched in database `db` that exist in any of `check`.
fn touch_existing(ctx: &Ctx<'_>, db: u32, check: &[u32]) {
    let watches = ctx.server.watches();
    if !watches.is_active() {
        return;
    }
    let watched = watches.watched_in(db);
    if watched.is_empty() {
        return;
    }
    let handles: Vec<strata::Db> = check
        .iter()
        .filter_map(|&d| ctx.session.db.select(d).ok())
        .collect();
    for key in watched {
        // An unreadable key counts as existing: a spurious EXEC failure is safe, a missed one not.
        if handles.iter().any(|h| h.exists(&key).unwrap_or(true)) {
            watches.touch(db, &key);
        }
    }
}
