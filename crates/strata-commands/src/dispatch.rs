//! The dispatcher: runs one command as a client sent it ([`execute`]: lookup, arity,
//! authentication, queue-time refusals — -BUSY while a script runs long included — MULTI
//! queueing, the ACL check of [`acl::check_command`]) or as a checked command ([`run`]:
//! the key locks, keyspace events, CLIENT TRACKING's remembered reads, and the WATCH touches and
//! tracking invalidations of the keys it changed around the handler, and blocked-client
//! wake-ups after it). Both return the command's [`Outcome`]. Finds rows in the
//! [`crate::registry`], and counts every command run or refused in the session's
//! [`crate::command_stats::LocalStats`]. Around each run, one call each hands the command to
//! [`crate::monitor`], [`crate::slowlog`] and [`crate::latency`] (with the duration the
//! statistics measured with [`latency::Stopwatch`]: no other clock read).

use bytes::Bytes;
use strata_resp::{Frame, Protocol};

use crate::command::{self, CommandSpec};
use crate::isolation;
use crate::outcome::Outcome;
use crate::{
    acl, errors, latency, monitor, notify, registry, scripting, slowlog, BlockMode, Ctx, Hold,
};

/// Runs one command as a client sent it: lookup, arity, authentication, then either queueing it
/// (inside MULTI) or [`run`]. Around it, as Redis around each command: the tracking table is
/// brought back under `tracking-table-max-keys` before, and CLIENT CACHING's flag expires after.
/// (The BCAST invalidations it causes are the caller's to send, once its batch of commands is
/// done, as Redis sends them once per event-loop round: see [`crate::tracking`].)
pub fn execute(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Outcome {
    let server = ctx.server;
    let tracking = server.tracking();
    if tracking.over_limit() {
        server.deliver_tracking(tracking.evict_over_limit());
    }
    let outcome = execute_command(ctx, argv);
    // CLIENT CACHING covers the next command, or the next transaction: CLIENT subcommands and
    // the commands queued in MULTI keep it, as Redis's resetClient does.
    if ctx.session.caching
        && ctx.session.multi.is_none()
        && !argv.first().is_some_and(|a| crate::args::is(a, "client"))
    {
        ctx.session.caching = false;
    }
    outcome
}

/// [`execute`] without the tracking work around it.
fn execute_command(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Outcome {
    if argv.is_empty() {
        return Outcome::Reply(Frame::Null);
    }
    // As in Redis, an unknown command is reported even before authentication. Inside MULTI,
    // every refusal here also dooms the transaction (EXECABORT).
    let Some(spec) = registry::lookup(&argv[0]).filter(|s| !s.name.contains('|')) else {
        return refuse(ctx, errors::unknown_command(argv));
    };
    if !ctx.session.authenticated && !spec.has(command::NO_AUTH) && ctx.server.acl().auth_required()
    {
        return refuse_command(ctx, spec, argv, errors::err(errors::NOAUTH));
    }
    if !spec.arity_ok(argv.len()) {
        return refuse_command(ctx, spec, argv, errors::wrong_arity(spec.name));
    }
    if ctx.session.multi.is_some() && spec.has(command::NO_MULTI) {
        return refuse_command(ctx, spec, argv, errors::err(errors::NOT_IN_MULTI));
    }
    if let Err(refused) = acl::check_command(ctx, spec, argv) {
        return refuse_command(ctx, spec, argv, refused);
    }
    if ctx.session.subscriptions.total() > 0
        && ctx.session.protocol == Protocol::Resp2
        && !spec.has(command::WHEN_SUBSCRIBED)
    {
        // Redis names a container's subcommand in full (`pubsub|numsub`).
        let name = subcommand(spec, argv).map_or(spec.name, |f| f.name);
        return refuse_command(
            ctx,
            spec,
            argv,
            errors::err(errors::only_pubsub_allowed(name)),
        );
    }
    // A container (CONFIG, FUNCTION...) is judged by the flags of its subcommand; an unknown
    // subcommand is not judged (Redis looks it up first: it gets `unknown subcommand` even
    // while loading, e.g. redis-py's CLIENT SETINFO on connecting).
    let container = registry::is_container(spec.name);
    let sub = container.then(|| subcommand_row(spec, argv)).flatten();
    let judged = match container {
        true => sub,
        false => Some(spec),
    };
    if let Some(refused) = judged.and_then(|j| ctx.server.refusal(j)) {
        return refuse_command(ctx, spec, argv, refused);
    }
    // While a script runs past busy-reply-threshold, only `allow-busy` commands are served
    // (SCRIPT KILL, FUNCTION KILL, SHUTDOWN, AUTH, MULTI/DISCARD...), inside MULTI too.
    if let Some(busy) = ctx.server.scripts().busy_error() {
        if !sub.unwrap_or(spec).has(command::ALLOW_BUSY) {
            return refuse_command(ctx, spec, argv, errors::err(busy));
        }
    }
    // A MONITOR client may not touch the keyspace (Redis treats it as a replica).
    if ctx.session.monitor
        && judged
            .unwrap_or(spec)
            .flags
            .any(command::READONLY | command::WRITE | command::MAY_REPLICATE)
    {
        return refuse_command(ctx, spec, argv, errors::err(errors::REPLICA_KEYSPACE));
    }
    if let Some(multi) = ctx.session.multi.as_mut() {
        if !spec.has(command::NOT_QUEUED) {
            multi.queue(argv);
            // CLIENT LIST shows a queued command as the client's last, as Redis does.
            ctx.server.note_command(ctx.session, spec.name);
            return Outcome::Reply(Frame::simple("QUEUED"));
        }
    }
    run_row(ctx, spec, Row { container, sub }, argv)
}

/// How long a script waits for the lock of a key it did not declare before going on without it.
/// Long enough for a command holding that key to finish (microseconds; a few ms if its thread
/// is preempted); short because the holder may be a multi-key reader waiting, in stripe order,
/// for a key this script holds: then nothing ends the wait but the patience, and both stall
/// for all of it (1 s here once held a test's scripts and MGETs to a few dozen in 2 s).
const SCRIPT_LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(5);

/// The subcommand row of a container's command (`CONFIG GET` for CONFIG), if `spec` is one.
fn subcommand(spec: &CommandSpec, argv: &[Bytes]) -> Option<&'static CommandSpec> {
    match registry::is_container(spec.name) {
        true => subcommand_row(spec, argv),
        false => None,
    }
}

/// [`subcommand`] for a `spec` known to be a container.
fn subcommand_row(spec: &CommandSpec, argv: &[Bytes]) -> Option<&'static CommandSpec> {
    argv.get(1)
        .and_then(|s| registry::lookup(&[spec.name.as_bytes(), b"|", s].concat()))
}

/// What the dispatcher knows of a command's row beyond the row itself, worked out once per
/// command: whether it is a container, and its subcommand's row when it is one.
#[derive(Clone, Copy)]
struct Row {
    container: bool,
    sub: Option<&'static CommandSpec>,
}

/// The name INFO commandstats counts a command under: a subcommand's full `container|sub`.
fn stat_name(spec: &'static CommandSpec, argv: &[Bytes]) -> &'static str {
    subcommand(spec, argv).map_or(spec.name, |s| s.name)
}

/// A queue-time refusal: inside MULTI it marks the transaction failed.
fn refuse(ctx: &mut Ctx<'_>, reply: Frame) -> Outcome {
    if let Some(multi) = ctx.session.multi.as_mut() {
        multi.failed = true;
    }
    ctx.session.stats.error(&reply);
    Outcome::Reply(reply)
}

/// [`refuse`] for a command whose row is known (counted in its `rejected_calls`). A refused EXEC
/// discards the transaction (and forgets the watched keys) and says why, as Redis's
/// `execCommandAbort`.
fn refuse_command(
    ctx: &mut Ctx<'_>,
    spec: &'static CommandSpec,
    argv: &[Bytes],
    reply: Frame,
) -> Outcome {
    let reply = if spec.has(command::RUNS_QUEUE) {
        ctx.session.multi = None;
        ctx.session.watching = None;
        match reply {
            Frame::Error(text) => errors::err(errors::exec_abort_because(
                String::from_utf8_lossy(&text).trim_start_matches('-'),
            )),
            other => other,
        }
    } else {
        if let Some(multi) = ctx.session.multi.as_mut() {
            multi.failed = true;
        }
        reply
    };
    ctx.session.stats.rejected(stat_name(spec, argv), &reply);
    Outcome::Reply(reply)
}

/// Runs one checked command (a client's own, or one of a transaction's queue): holds the locks
/// of the keys it names (shared for reads, exclusive for writes; see [`isolation`]) while the
/// handler runs and WATCHed keys are touched, then wakes clients blocked on the written keys
/// (after a transaction: once EXEC has released its locks, see [`Session::ready_keys`]).
/// The command's keys are worked out once, from its row ([`CommandSpec::targets`]), and that
/// one list serves the locks, lazy expiry, key-miss and new-key events, tracking, WATCH and the
/// wake-ups.
///
/// [`Session::ready_keys`]: crate::Session::ready_keys
pub fn run(ctx: &mut Ctx<'_>, spec: &'static CommandSpec, argv: &[Bytes]) -> Outcome {
    let container = registry::is_container(spec.name);
    let sub = container.then(|| subcommand_row(spec, argv)).flatten();
    run_row(ctx, spec, Row { container, sub }, argv)
}

/// [`run`] with the row's subcommand already looked up.
fn run_row(ctx: &mut Ctx<'_>, spec: &'static CommandSpec, row: Row, argv: &[Bytes]) -> Outcome {
    // The row the statistics, the slow log and MONITOR judge: a subcommand's own. A container
    // called with an unknown subcommand is refused in Redis before it runs: neither is fed.
    let real = row.sub.unwrap_or(spec);
    let observed = !(row.container && row.sub.is_none());
    if observed {
        monitor::feed_before(ctx, real, argv);
    }
    let started = latency::Stopwatch::start();
    let outcome = run_locked(ctx, spec, row.sub, argv);
    // A command that blocked is counted when it is served, as in Redis.
    if !matches!(outcome, Outcome::Block(_)) {
        let usec = started.elapsed_us();
        let failed = !outcome.succeeded();
        ctx.session.stats.ran(real.name, usec, failed);
        if observed {
            slowlog::note(ctx, real, argv, usec);
        }
        latency::note_command(ctx, real, usec);
        // A script's own calls are not error replies to the client: its reply is.
        if !ctx.session.in_script {
            if let Outcome::Reply(reply)
            | Outcome::ReplyThenClose(reply)
            | Outcome::Replies(_, reply) = &outcome
            {
                ctx.session.stats.error(reply);
            }
        }
    }
    // A blocked command was fed when it blocked; serving it later is not fed again.
    if observed && !matches!(ctx.session.block_mode, BlockMode::Serve(_)) {
        monitor::feed_after(ctx, real, argv);
    }
    outcome
}

/// [`run`] without the statistics: works the command's keys out into the session's list
/// ([`crate::Session::targets`], taken for the command and given back after it, so that a
/// command's keys allocate nothing) and runs it holding them.
fn run_locked(
    ctx: &mut Ctx<'_>,
    spec: &'static CommandSpec,
    sub: Option<&'static CommandSpec>,
    argv: &[Bytes],
) -> Outcome {
    // Only a client's own fast command lingers (not a command of its transaction or script).
    let linger = std::mem::take(&mut ctx.session.linger);
    // Locks kept from this thread's earlier commands are not held through one that may take
    // long or wait (DEBUG SLEEP, SAVE...): it lets them go first.
    if !spec.has(command::FAST) {
        ctx.session.db.release_lingering();
    }
    ctx.server.note_command(ctx.session, spec.name);
    // A container's subcommand that writes keys (XGROUP CREATE...) locks, touches and signals
    // them as a command of its own would; the other containers' rows have no keys (OBJECT is
    // looked up without events, as in Redis).
    let keyed = sub
        .filter(|sub| sub.has(command::WRITE) && sub.keys.any())
        .unwrap_or(spec);
    let mut targets = std::mem::take(&mut ctx.session.targets);
    // Whole-database writes (FLUSHDB, FLUSHALL, SWAPDB) need every stripe.
    let all = isolation::targets_into(keyed, argv, ctx.session.db.index(), &mut targets);
    let outcome = run_held(ctx, spec, keyed, argv, &targets, all, linger);
    // A command run inside this one (EXEC's queue, a script's calls) took the empty list left
    // meanwhile and gave back one of its own: this one takes its place again.
    ctx.session.targets = targets;
    outcome
}

/// [`run_locked`] once the keys are known: `targets` (or every stripe when `all`).
fn run_held(
    ctx: &mut Ctx<'_>,
    spec: &'static CommandSpec,
    keyed: &'static CommandSpec,
    argv: &[Bytes],
    targets: &[(u32, usize)],
    all: bool,
    linger: bool,
) -> Outcome {
    let write = keyed.has(command::WRITE);
    // The access clocks the command will touch after it runs start loading now (each is a cache
    // miss that the command's own work then hides).
    let touches = !spec.has(command::NO_TOUCH);
    if touches {
        for &(d, i) in targets {
            ctx.session.db.prefetch_access(d, &argv[i]);
        }
    }
    // The handle the scope borrows (an Arc clone), taken only when there is something to lock.
    let db = (all || !targets.is_empty()).then(|| ctx.session.db.clone());
    let exclusive = isolation::exclusive(keyed);
    let in_script = ctx.session.in_script;
    let hold = |exclusive| hold_keys(db.as_ref(), in_script, all, argv, targets, exclusive);
    let (mut scope, complete) = match hold(exclusive) {
        Ok(held) => held,
        Err(busy) => return Outcome::Reply(scripting::busy_reply(busy)),
    };
    // Keyspace events found around the command (one atomic load when they are off), under the
    // command's locks. Lazy expiry locks each key itself: not when a lock is missing, where
    // that could wait while holding others.
    let events = ctx.server.notify_flags();
    if events & notify::EXPIRED != 0 && complete {
        notify::expire_due_keys(ctx, argv, targets);
    }
    if events & notify::KEY_MISS != 0 && spec.has(command::READONLY) {
        notify::key_misses(ctx, argv, targets);
    }
    let track_new = events & notify::NEW != 0 && write;
    if track_new {
        notify::note_absent_keys(ctx, argv, targets);
    }
    // A tracking client's reads are remembered before the command reads, under its locks, so
    // a write that lands after the read is sure to find the client in the table.
    let script = ctx.session.tracking.is_some() && remember_reads(ctx, spec, argv, targets);
    ctx.session.hold = if exclusive {
        Hold::Exclusive
    } else {
        Hold::Shared
    };
    let mut outcome = spec.handler.call(ctx, argv);
    if ctx.session.hold == Hold::WantsExclusive {
        // A `shared_first` command found it must write (PFCOUNT storing a stale cache): it
        // wrote and answered nothing; it runs again holding its keys exclusively. Nothing is
        // held meanwhile, so another command may run in between, as if it had come first.
        drop(scope.take());
        ctx.session.hold = Hold::Exclusive;
        outcome = match hold(true) {
            Ok((held, _)) => {
                scope = held;
                spec.handler.call(ctx, argv)
            }
            Err(busy) => Outcome::Reply(scripting::busy_reply(busy)),
        };
    }
    ctx.session.hold = Hold::Exclusive;
    if script {
        ctx.session.script_keys = None;
    }
    // Looking keys up counts as an access to them (OBJECT IDLETIME), hits or misses alike.
    if touches {
        for &(d, i) in targets {
            ctx.session.db.note_access(d, &argv[i]);
        }
    }
    if track_new {
        notify::clear_absent_keys();
    }
    let wrote = write && outcome.succeeded();
    if wrote {
        signal_modified_keys(ctx, keyed, argv, targets);
    }
    ctx.session.unchanged.clear();
    // A fast command followed by more of the client's commands keeps its key locks for them
    // (see `strata::KeyScope::linger`): pipelined commands on one key take its lock once.
    match scope {
        Some(scope) if linger && !all && !in_script && spec.has(command::FAST) => scope.linger(),
        scope => drop(scope),
    }
    // Wake clients blocked on the keys this write may have filled (LPUSH, ZADD, LMOVE's
    // destination, RENAME, a served BLMOVE's push...). Spurious signals only cost a re-check.
    if wrote && ctx.server.has_blocked_clients() {
        if all {
            // SWAPDB (and FLUSHALL...) may have filled any key: every blocked key is re-checked.
            signal_ready(ctx, ctx.server.blocked_keys());
        } else {
            let keys = targets.iter().map(|&(d, i)| (d, argv[i].clone()));
            signal_ready(ctx, keys);
        }
    }
    outcome
}

/// Holds the locks of a command's keys (`targets`, indices into `argv`; every stripe when `all`;
/// nothing without `db`), exclusively or shared, and whether every one was taken. A key held by
/// a script running past busy-reply-threshold is not waited for: [`strata::Busy`].
fn hold_keys<'d>(
    db: Option<&'d strata::Db>,
    in_script: bool,
    all: bool,
    argv: &[Bytes],
    targets: &[(u32, usize)],
    exclusive: bool,
) -> Result<(Option<strata::KeyScope<'d>>, bool), strata::Busy> {
    let keys = targets.iter().map(|&(d, i)| (d, &argv[i][..]));
    match (db, in_script) {
        (None, _) => Ok((None, true)),
        (Some(db), false) if all => db.hold_all_unless_busy().map(|s| (Some(s), true)),
        // Inside a script, the library takes every stripe itself (waiting is safe: a script
        // that wants a stripe this one holds gives up on it after its patience).
        (Some(_), true) if all => Ok((None, true)),
        (Some(db), false) => db
            .hold_unless_busy(keys, exclusive)
            .map(|s| (Some(s), true)),
        // A script may already hold other keys: waiting here could deadlock.
        (Some(db), true) => db
            .hold_patiently(keys, exclusive, SCRIPT_LOCK_PATIENCE)
            .map(|(s, complete)| (Some(s), complete)),
    }
}

/// The commands that run a script: a tracking client's script that reads remembers the keys it
/// declared (not those of the commands it calls), as in Redis.
const SCRIPT_RUNNERS: [&str; 6] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];

/// Redis's `trackingRememberKeys` for a command about to run for a tracking client: the keys
/// of a read-only command are remembered (unless the client is in BCAST mode, or OPTIN/OPTOUT
/// and CLIENT CACHING say not to); inside a script the script's declared keys are, at its first
/// read. True when `spec` is a script whose keys were put aside for that
/// ([`crate::Session::script_keys`], cleared when it ends).
fn remember_reads(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Bytes],
    targets: &[(u32, usize)],
) -> bool {
    let Some(mode) = ctx.session.tracking else {
        return false;
    };
    let caching = ctx.session.caching;
    if mode.bcast || (mode.optin && !caching) || (mode.optout && caching) {
        return false;
    }
    if SCRIPT_RUNNERS.contains(&spec.name) {
        if ctx.session.in_script {
            return false;
        }
        ctx.session.script_keys = Some(targets.iter().map(|&(_, i)| argv[i].clone()).collect());
        return true;
    }
    if !spec.has(command::READONLY) || spec.has(command::PUBSUB) {
        return false;
    }
    let tracking = ctx.server.tracking();
    if ctx.session.in_script {
        if let Some(keys) = ctx.session.script_keys.take() {
            tracking.remember(ctx.session.id, keys.iter().map(|k| &k[..]));
        }
    } else if !targets.is_empty() {
        tracking.remember(ctx.session.id, targets.iter().map(|&(_, i)| &argv[i][..]));
    }
    false
}

/// Whether the key at `argv[i]` is one `spec` only reads (a source of SUNIONSTORE, COPY or
/// SORT ... STORE): its key specification says RO and nothing that writes.
fn read_only_key(spec: &CommandSpec, argv: &[Bytes], i: usize) -> bool {
    use command::key_flag::{OW, RM, RO, RW};
    let flags = spec.key_flags(argv, i);
    flags & RO != 0 && flags & (RW | OW | RM) == 0
}

/// Redis's `signalModifiedKey` for the keys a successful write changed: WATCH is touched and
/// the clients tracking them are told (one atomic load each while nobody watches or tracks).
/// The changed keys are the command's, less those its key specifications only read and those
/// the handler reported unchanged ([`crate::Session::unchanged`]), in the command's order.
fn signal_modified_keys(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Bytes],
    targets: &[(u32, usize)],
) {
    let server = ctx.server;
    let (watches, tracking) = (server.watches(), server.tracking());
    let (watched, tracked) = (watches.is_active(), tracking.is_active());
    if !watched && !tracked {
        return;
    }
    let modified: Vec<(u32, &Bytes)> = targets
        .iter()
        .filter(|&&(_, i)| {
            !ctx.session.unchanged.contains(&argv[i]) && !read_only_key(spec, argv, i)
        })
        .map(|&(d, i)| (d, &argv[i]))
        .collect();
    if watched {
        for &(d, key) in &modified {
            watches.touch(d, key);
        }
    }
    if tracked {
        let messages =
            tracking.invalidate(modified.iter().map(|(_, k)| &k[..]), Some(ctx.session.id));
        if !messages.is_empty() {
            server.deliver_tracking(messages);
        }
    }
}

/// Signals keys that may have become non-empty, or within a transaction or script keeps them
/// for its end (see [`crate::Session::ready_keys`]).
fn signal_ready(ctx: &mut Ctx<'_>, keys: impl IntoIterator<Item = (u32, Bytes)>) {
    for (d, key) in keys {
        match ctx.session.ready_keys.as_mut() {
            Some(later) => later.push((d, key)),
            None => ctx.server.key_ready(d, &key),
        }
    }
}
