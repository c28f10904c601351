//! The write-back tier (`memory-tier write-back`): write batches are applied to an in-memory
//! [`Layer`] and appended to the redo log (`redo.rs`) instead of being written to RocksDB one by
//! one; a checkpoint later writes what the layer holds to RocksDB (sorted table files it moves
//! in, and small batches with RocksDB's own log off), flushes the memtables those batches went
//! to, and deletes the redo segments it covered. Hot records rewritten many times between
//! checkpoints reach RocksDB once.
//!
//! Two layers at most: `active`, which writes go to, and `frozen`, the one a checkpoint is
//! writing out (readers see both, `active` first, until the checkpoint has flushed). A write
//! appends its record to the log and applies it to `active` under `active`'s lock, so the log's
//! order is the order in which the layer took the writes; a checkpoint swaps the layers and ends
//! the log segment under the lock of the pair, so a segment never holds a record of a later
//! layer. Restart replays the log into `active`. While a checkpoint runs, writers are paced
//! ([`paced_rate`]): the rate they may fill `active` at falls as it approaches the dirty limit,
//! so that it reaches the limit about when the checkpoint is expected to end (from the pace of
//! the checkpoints before it), as RocksDB's delayed write rate slows its writers before it
//! stops them. They are paced as well while RocksDB itself is behind ([`engine_rate`]: level 0's
//! files against the slowdown and stop triggers, the compaction backlog against its limits),
//! since a checkpoint's table files go into RocksDB past its own write stall: so the engine's
//! backpressure reaches writers as a rate, as RocksDB's would reach its own writers, and not as
//! one long checkpoint. A connection's writes are paced after its command instead of inside it
//! ([`defer_write_pace`]): the write is taken at once and the connection, not the worker
//! thread, waits its turn before its next command, its replies so far sent first. Writers stop
//! while `active` holds the dirty limit and a checkpoint is still
//! running (a checkpoint far slower than expected), or twice the limit before the
//! checkpointer swaps it out (the two layers hold about twice the limit, three times at
//! worst), and get an error instead while the last checkpoint failed (a full or failing disk:
//! memory must not grow without bound, and no writer may wait forever). The log numbers the
//! batches (replication offsets, `redo.rs`); a checkpoint records in RocksDB, with the layer it writes,
//! the offset RocksDB then holds everything through ([`OFFSET_KEY`]), so offsets go on from
//! there after a restart and a copy of RocksDB taken right after a checkpoint is a snapshot as
//! of a known offset (a replica's full copy). Owns the layers and the checkpointer thread;
//! `storage.rs` decides when a read or a write goes through here.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use rocksdb::{IngestExternalFileOptions, Options, SstFileWriter, WriteBatch, WriteOptions, DB};

use crate::error::{Error, Result};
use crate::layer::{Layer, Lookup, Source, Stack};
use crate::patch;
use crate::pending::{self, BatchOp};
use crate::prefetch::prefetch;
use crate::redo::RedoLog;

/// A checkpoint runs at least this often while the tier holds writes, so that a restart
/// replays at most this much time of writes even when they are few.
const MAX_DIRTY_AGE: Duration = Duration::from_secs(60);
/// How many records ahead a checkpoint's loop over a layer starts loading a record's key and
/// point (its value half as far ahead, once the point that names it has come in).
const PREFETCH_AHEAD: usize = 16;
/// Bytes of records per RocksDB write batch a checkpoint writes.
const CHECKPOINT_BATCH: usize = 4 << 20;
/// Writers are paced only once the active layer holds this fraction of the dirty limit while a
/// checkpoint runs (below it the write path stays as it was: pacing from a quarter of the limit
/// slowed full-speed SETs that never reached the limit, and cost 25% more CPU per SET).
const PACE_FROM: f64 = 0.5;
/// The shortest time left a checkpoint is assumed to need ([`paced_rate`]).
const MIN_HORIZON: Duration = Duration::from_millis(10);
/// A writer admitted at most this early (a burst of this much time at the rate is allowed; a
/// writer ahead by more naps until it is half this far ahead, so naps are few and not short).
const PACE_SLACK: Duration = Duration::from_millis(5);
/// A paced writer sleeps at most this long before it looks at the rate again.
const PACE_NAP: Duration = Duration::from_millis(10);
/// RocksDB's delayed write rate steps (`SetupDelay`, db/column_family.cc): slower by this much
/// each time the engine's backlog grows while writes are delayed, by [`ENGINE_NEAR_STOP`] near
/// the stop, faster by [`ENGINE_FASTER`] each time it shrinks.
const ENGINE_SLOWER: f64 = 0.8;
const ENGINE_NEAR_STOP: f64 = 0.6;
const ENGINE_FASTER: f64 = 1.0 / ENGINE_SLOWER;
/// The slowest the engine paces writers at (RocksDB's `kMinWriteRate`, 16 KB/s).
const ENGINE_MIN_RATE: f64 = 16.0 * 1024.0;
/// Events slower than this go to the server's log (a checkpoint and its phases, a sync of the
/// redo log, a write stopped at the memory bound), unless `STRATA_TIER_TRACE=<ms>` sets
/// another threshold ([`trace_slow`]).
const SLOW: Duration = Duration::from_secs(1);

/// The `default` family's record of the offset a checkpoint wrote RocksDB through (u64 LE;
/// docs/format.md).
pub(crate) const OFFSET_KEY: &[u8] = b"strata:redo-offset";

/// RocksDB's write-stall limits (each data family's; `EngineTuning`), which writers are paced
/// against ([`engine_rate`]). Pending compaction bytes have RocksDB's default limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EngineLimits {
    /// Level-0 files at which RocksDB slows its writers, and at which it stops them.
    pub l0_slowdown: u64,
    pub l0_stop: u64,
    /// Bytes compaction is behind at which RocksDB slows its writers, and stops them (0: no
    /// limit).
    pub pending_soft: u64,
    pub pending_hard: u64,
}

impl Default for EngineLimits {
    /// RocksDB's defaults.
    fn default() -> Self {
        EngineLimits {
            l0_slowdown: 20,
            l0_stop: 36,
            pending_soft: 64 << 30,
            pending_hard: 256 << 30,
        }
    }
}

/// RocksDB's backlog as its write controller sees it: the most level-0 files and the most
/// pending compaction bytes of any family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EngineSignals {
    pub l0_files: u64,
    pub pending_bytes: u64,
}

/// The engine's part of the pacing ([`Tier::sample_engine`]).
#[derive(Default)]
struct EnginePace {
    /// The rate writers are paced at for RocksDB's sake (`None`: not).
    rate: Option<f64>,
    /// The signals that rate was set from.
    last: EngineSignals,
    /// The fastest the engine lets writers go while it is behind: the rate writers filled the
    /// layers at when it fell behind.
    ceiling: f64,
}

thread_local! {
    /// Whether this thread's writes leave their pace to be waited out after the command that
    /// made them ([`defer_write_pace`]), and the moment the pace they were taken at ends.
    static DEFERRED: Cell<bool> = const { Cell::new(false) };
    static OWED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// This thread's buffer for a batch re-encoded with patches ([`Tier::write`]), kept
    /// between writes: every XADD patches its stream's metadata, and an allocation per write
    /// would cost about what the patch saves in the log's write.
    static PATCHED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The largest [`PATCHED`] buffer kept for the next write.
const PATCHED_KEEP: usize = 64 << 10;

/// Runs `f` (a client's command) with the write-back tier's pace deferred: a write `f` makes
/// while writers are paced is taken at once, its turn at the rate booked as if it had waited,
/// and the moment that turn comes is returned (the latest of `f`'s writes; `None` when none had
/// to wait). The caller waits until then ([`write_pace_nap`]) before it runs the client's next
/// command, without holding its thread: a server connection sends its replies so far and
/// parks, so the worker serves its other connections meanwhile, and a client pipelining 64
/// SETs sees them answered at the pace one by one instead of all at once after the last.
/// (A paced write used to sleep inside the command, holding the worker, the command's key
/// locks and every reply of the batch.) Writes made outside such a scope (replication, the
/// expiry cycle, tests) wait inside, as before. The memory bound ([`Tier::is_full`]) is not
/// deferred: a write that finds the tier full waits for room in any case.
pub fn defer_write_pace<T>(f: impl FnOnce() -> T) -> (T, Option<Instant>) {
    /// Restores the outer scope's state also when `f` unwinds (a panicking command's debt is
    /// dropped with it, not left to the thread's next command).
    struct Scope {
        deferred: bool,
        owed: Option<Instant>,
    }
    impl Drop for Scope {
        fn drop(&mut self) {
            DEFERRED.with(|d| d.set(self.deferred));
            OWED.with(|o| o.set(self.owed));
        }
    }
    let scope = Scope {
        deferred: DEFERRED.with(|d| d.replace(true)),
        owed: OWED.with(Cell::take),
    };
    let out = f();
    let owed = OWED.with(Cell::get);
    drop(scope);
    (out, owed)
}

/// How long a connection that owes the pace until `due` ([`defer_write_pace`]) sleeps next:
/// `None` once `due` has come or writers are no longer paced (a checkpoint that ends, or
/// RocksDB that caught up, lets every waiting connection go at once), else the time left, at
/// most [`PACE_NAP`] so that the pace is looked at again.
pub(crate) fn write_pace_nap(tier: &Tier, due: Instant) -> Option<Duration> {
    let left = due.checked_duration_since(Instant::now())?;
    if left.is_zero() || tier.rate_now().is_none() {
        return None;
    }
    Some(left.min(PACE_NAP))
}

/// The threshold for the server log's lines on slow events, and whether lines carry the time
/// (`STRATA_TIER_TRACE=<ms>`: lines from that many milliseconds up, each stamped with the Unix
/// time in ms, to line up the stalls a client saw with what the tier did; bench/write_memory.py
/// `--trace`).
fn slow_threshold() -> (Duration, bool) {
    static TRACE: OnceLock<Option<u64>> = OnceLock::new();
    let trace = TRACE.get_or_init(|| {
        std::env::var("STRATA_TIER_TRACE")
            .ok()
            .and_then(|v| v.trim().parse().ok())
    });
    match trace {
        Some(ms) => (Duration::from_millis(*ms), true),
        None => (SLOW, false),
    }
}

/// Writes `line` to the server's log (stamped with the time when tracing).
fn log_line(line: &str) {
    match slow_threshold().1 {
        true => eprintln!("strata: [{}] {line}", crate::clock::now_ms()),
        false => eprintln!("strata: {line}"),
    }
}

/// Logs `what` if it `took` longer than the threshold ([`slow_threshold`]).
pub(crate) fn trace_slow(what: &str, took: Duration) {
    if took >= slow_threshold().0 {
        log_line(&format!("{what} took {} ms", took.as_millis()));
    }
}

/// The two layers.
struct Layers {
    active: Arc<RwLock<Layer>>,
    frozen: Option<Arc<RwLock<Layer>>>,
}

/// Figures for INFO.
#[derive(Default)]
pub(crate) struct TierStats {
    pub checkpoints: AtomicU64,
    pub checkpointed_bytes: AtomicU64,
    pub last_checkpoint_ms: AtomicU64,
    pub replayed_records: AtomicU64,
    /// How long the last checkpoint took (from the swap to its end), ms.
    pub last_checkpoint_took_ms: AtomicU64,
    /// Writes that waited for the pace, and the microseconds they waited in all.
    pub delayed_writes: AtomicU64,
    pub delayed_micros: AtomicU64,
    /// Writes that found the tier full (stopped, not paced), and the microseconds they waited.
    pub stopped_writes: AtomicU64,
    pub stopped_micros: AtomicU64,
    /// The rate writers were last paced at (bytes/s), 0 while they are not paced.
    pub write_rate: AtomicU64,
    /// The rate RocksDB's backlog paces writers at ([`engine_rate`], bytes/s), 0 while it is
    /// not behind.
    pub engine_write_rate: AtomicU64,
}

/// The writer pacing's state ([`Tier::pace`]).
struct Pace {
    /// Seconds a checkpoint took per byte of its layer (an average over the last ones, most
    /// weight on the latest); `None` until one of at least half the dirty limit has ended.
    secs_per_byte: Option<f64>,
    /// When the running checkpoint swapped the layers, and the bytes of the layer it writes.
    running: Option<(Instant, usize)>,
    /// The moment by which the writes admitted so far have used up the rate.
    next_free: Instant,
    /// The rate (bytes/s) writers filled the last full layer at, from its first write to its
    /// swap.
    incoming: Option<f64>,
}

/// The rate (bytes/s) at which writers may add to an active layer holding `active` of `limit`
/// bytes while a checkpoint runs that has run for `elapsed` and is `expected` (from the ones
/// before it) to take: the room left over the time the checkpoint is assumed to need still,
/// `(limit - active) / left`. `left` is what remains of `expected`, but never less than
/// `elapsed` (nor [`MIN_HORIZON`]): checkpoint times have a long tail (on a disk compaction
/// keeps busy, one took 10× the one before), and one already late is assumed to need as long
/// again. So the layer nears the limit as the checkpoint nears its expected end, and past it
/// the room halves each time the checkpoint's age doubles: writers slow down more and more (a
/// write of `w` bytes waits about `w × elapsed² / (room × t0)`, `room` being what was left at
/// age `t0`), where writers stopped at the limit waited for the rest of the checkpoint. Not
/// paced (`None`) below [`PACE_FROM`] of the limit; at the limit writers stop
/// ([`Tier::is_full`]). While no checkpoint has shown its pace yet (`expected` is `None`: the
/// first one), the checkpoint is assumed to need as long again as it has run, from the moment
/// the layer passes [`PACE_FROM`]: writers that fill the layer fast enough to pass it are
/// paced from its own age (the room halves each time the age doubles), where they used to go
/// on to the limit and stop there for the rest of the first checkpoint (0.2-0.6 s without a
/// SET in every 10-minute run of bench/write_memory.py).
pub(crate) fn paced_rate(
    active: usize,
    limit: usize,
    expected: Option<Duration>,
    elapsed: Duration,
) -> Option<f64> {
    if (active as f64) < PACE_FROM * limit as f64 || active >= limit {
        return None;
    }
    let left = match expected {
        Some(expected) => expected.saturating_sub(elapsed).max(elapsed),
        None => elapsed,
    }
    .max(MIN_HORIZON);
    Some((limit - active) as f64 / left.as_secs_f64())
}

/// The rate (bytes/s) writers are paced at while RocksDB is behind, from its signals `now`, the
/// rate set from the last ones (`was`: the rate and those signals; `None` while not paced) and
/// `ceiling`, the fastest it lets writers go: RocksDB's delayed write rate, which a checkpoint's
/// table files skip (ingestion does not wait on write stalls), applied to the tier's writers
/// instead. Not paced (`None`) while level 0 holds fewer files than the slowdown trigger and
/// compaction is behind by less than the soft limit. Once paced, the rate starts at
/// [`ENGINE_SLOWER`] of `ceiling`; each time the backlog has grown since the last signals (more
/// level-0 files, or as many and more pending bytes) it is slowed by that much again, by
/// [`ENGINE_NEAR_STOP`] within two files of the stop trigger (or past three quarters of the way
/// from the soft to the hard limit); each time it has shrunk it is sped up by [`ENGINE_FASTER`],
/// up to `ceiling`; unchanged signals leave it as it is (a sample of the same state is not news).
/// Never below [`ENGINE_MIN_RATE`]: writers are slowed, never stopped, by the engine (they still
/// stop at the tier's memory bound, [`Tier::is_full`]).
pub(crate) fn engine_rate(
    was: Option<(f64, EngineSignals)>,
    now: EngineSignals,
    limits: &EngineLimits,
    ceiling: f64,
) -> Option<f64> {
    let soft = limits.pending_soft;
    let pending_over = soft > 0 && now.pending_bytes >= soft;
    if now.l0_files < limits.l0_slowdown && !pending_over {
        return None;
    }
    let near_stop = now.l0_files + 2 >= limits.l0_stop
        || (pending_over
            && limits.pending_hard > soft
            && now.pending_bytes - soft > (limits.pending_hard - soft) / 4 * 3);
    let slower = match near_stop {
        true => ENGINE_NEAR_STOP,
        false => ENGINE_SLOWER,
    };
    let rate = match was {
        None => ceiling * slower,
        Some((rate, before)) => match now
            .l0_files
            .cmp(&before.l0_files)
            .then(now.pending_bytes.cmp(&before.pending_bytes))
        {
            std::cmp::Ordering::Greater => rate * slower,
            std::cmp::Ordering::Less => (rate * ENGINE_FASTER).min(ceiling),
            std::cmp::Ordering::Equal => rate,
        },
    };
    Some(rate.max(ENGINE_MIN_RATE))
}

/// The write-back tier of one data directory.
pub(crate) struct Tier {
    layers: RwLock<Layers>,
    log: Option<RedoLog>,
    /// A checkpoint starts once `active` holds this many bytes.
    dirty_limit: usize,
    /// Held for the whole of a checkpoint (one at a time; a backup holds it to see RocksDB as of
    /// one checkpoint).
    checkpointing: Mutex<()>,
    /// How fast writers may go while a checkpoint runs.
    pace: Mutex<Pace>,
    /// How fast writers may go while RocksDB is behind (set by the checkpointer thread), and
    /// that rate as writers read it (`f64` bits; 0: not paced).
    engine: Mutex<EnginePace>,
    engine_rate: AtomicU64,
    /// RocksDB's write-stall limits ([`Tier::pace_against`]; RocksDB's defaults until set).
    engine_limits: OnceLock<EngineLimits>,
    /// When `active` took its first write since the last swap (`None`: empty).
    dirty_since: Mutex<Option<Instant>>,
    /// Mirrors of what writers check before every write, so that they read two atomics instead
    /// of taking four locks that the other workers' writes take too: whether `dirty_since` is
    /// set (set and cleared under `layers`: writers read and set it holding `layers` shared, a
    /// swap clears it holding `layers` exclusively), the active layer's bytes after the last
    /// write (stored under the active layer's lock; 0 at a swap), and whether a frozen layer is
    /// held (set and cleared under `layers` exclusively).
    dirty: AtomicBool,
    active_bytes: AtomicUsize,
    frozen_held: AtomicBool,
    /// Wakes the checkpointer (`true`: a checkpoint is wanted now), and writers waiting for room.
    wake: Mutex<bool>,
    woken: Condvar,
    stop: AtomicBool,
    /// Whether a checkpointer thread runs (writers may wait for it to swap the layers).
    checkpointer_runs: AtomicBool,
    /// The last redo segment of the frozen layer and the offset of its last write, while its
    /// checkpoint has not ended (set again by a retry after a failure).
    failed: Mutex<Option<(u64, u64)>>,
    /// Why the last checkpoint failed, until one succeeds.
    last_failure: Mutex<Option<String>>,
    /// Makes checkpoints fail (tests of what writers see when the disk fails).
    #[cfg(test)]
    fail_checkpoints: AtomicBool,
    /// Makes checkpoints this many milliseconds slower (tests of what a slow disk does).
    #[cfg(test)]
    slow_checkpoints_ms: AtomicU64,
    pub(crate) stats: TierStats,
    /// When tracing ([`slow_threshold`]): microseconds from `opened` to the last write taken,
    /// to log a stretch in which the tier took none.
    last_write_us: AtomicU64,
    opened: Instant,
    /// The last layer a checkpoint retired, emptied, to become the next active one.
    spare: Mutex<Option<Layer>>,
    /// Told of each layer a checkpoint wrote to RocksDB, before readers stop seeing it.
    retire: OnceLock<Retire>,
    /// The data directory: a checkpoint writes its table files there before RocksDB takes them.
    dir: PathBuf,
    /// The families whose points a checkpoint hands RocksDB as table files, with their options.
    files: OnceLock<(FileFamilies, FileCompression)>,
}

/// What a checkpoint does with a layer RocksDB now holds, while readers still see the layer
/// (the storage hands its records to the hot-record cache, which readers consult after the
/// tier: so a reader that misses the layer finds the cache already up to date).
pub(crate) type Retire = Box<dyn Fn(&Layer) + Send + Sync>;

/// Families a checkpoint writes as table files.
pub(crate) type FileFamilies = Vec<FileFamily>;

/// A family a checkpoint writes as table files, with the options of its files.
pub(crate) struct FileFamily {
    /// The family's id in write batches.
    pub id: u32,
    /// The family's options: RocksDB's table file writer compresses with the last level's
    /// compression (zstd), since an ingested file may land there.
    pub bottom: Options,
    /// The same with the upper levels' compression (LZ4) for the last level too.
    pub upper: Options,
    /// For a file that overlaps no table file of the family, if set: RocksDB moves such a
    /// file to the last level, where nothing reads it as a level-0 file (a stream's entries,
    /// whose keys grow), so larger blocks cost no point read more and save zstd's fixed cost
    /// per block.
    pub alone: Option<Options>,
}

/// Which compression a checkpoint's table files get ([`FileFamily`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileCompression {
    /// The last level's, whatever level the file lands in.
    Bottom,
    /// The upper levels', whatever level the file lands in.
    Upper,
    /// The last level's for a file no table file of its family overlaps (RocksDB moves it to
    /// the last level), the upper levels' for the others (they land in level 0).
    ByLevel,
}

/// The column families a checkpoint writes: (id in write batches, name).
pub(crate) type Families = Vec<(u32, String)>;

impl Tier {
    /// Opens the tier of the data directory at `dir`: replays its redo log (`dir/redo`) into
    /// the active layer. A read-only tier takes no writes. With `archive`, the log keeps the
    /// segments checkpoints covered, for replicas (`redo.rs`).
    pub(crate) fn open(
        dir: &Path,
        read_only: bool,
        dirty_limit: usize,
        archive: bool,
    ) -> Result<Tier> {
        let mut active = Layer::default();
        let (log, replayed) = RedoLog::open(&dir.join("redo"), read_only, archive, |payload| {
            let (_, ops) = pending::decode_batch(payload)?;
            for op in &ops {
                active.apply(op)?;
            }
            Ok(())
        })?;
        let dirty = !active.is_empty();
        let active_bytes = active.bytes();
        let tier = Tier {
            layers: RwLock::new(Layers {
                active: Arc::new(RwLock::new(active)),
                frozen: None,
            }),
            log,
            dirty_limit: dirty_limit.max(64 << 10),
            checkpointing: Mutex::new(()),
            pace: Mutex::new(Pace {
                secs_per_byte: None,
                running: None,
                next_free: Instant::now(),
                incoming: None,
            }),
            engine: Mutex::new(EnginePace::default()),
            engine_rate: AtomicU64::new(0),
            engine_limits: OnceLock::new(),
            dirty_since: Mutex::new(dirty.then(Instant::now)),
            dirty: AtomicBool::new(dirty),
            active_bytes: AtomicUsize::new(active_bytes),
            frozen_held: AtomicBool::new(false),
            wake: Mutex::new(dirty),
            woken: Condvar::new(),
            stop: AtomicBool::new(false),
            checkpointer_runs: AtomicBool::new(false),
            failed: Mutex::new(None),
            last_failure: Mutex::new(None),
            #[cfg(test)]
            fail_checkpoints: AtomicBool::new(false),
            #[cfg(test)]
            slow_checkpoints_ms: AtomicU64::new(0),
            stats: TierStats::default(),
            last_write_us: AtomicU64::new(0),
            opened: Instant::now(),
            spare: Mutex::new(None),
            retire: OnceLock::new(),
            dir: dir.to_path_buf(),
            files: OnceLock::new(),
        };
        tier.stats
            .replayed_records
            .store(replayed.records as u64, Ordering::Relaxed);
        Ok(tier)
    }

    /// Whether a redo log with records exists in the data directory at `dir` (a directory last
    /// opened with the write-back tier, whose log must be replayed whatever the tier is now).
    pub(crate) fn has_log(dir: &Path) -> bool {
        let redo = dir.join("redo");
        crate::redo::segments(&redo).is_ok_and(|numbers| {
            numbers.into_iter().any(|n| {
                std::fs::metadata(crate::redo::segment_path(&redo, n)).is_ok_and(|m| m.len() > 0)
            })
        })
    }

    /// The offset of the last write taken (0 for a read-only tier).
    pub(crate) fn last_offset(&self) -> u64 {
        self.log.as_ref().map_or(0, RedoLog::last_offset)
    }

    /// Numbers the writes taken from now on after `offset` at least.
    pub(crate) fn offsets_after(&self, offset: u64) {
        if let Some(log) = &self.log {
            log.offsets_after(offset);
        }
    }

    /// The redo log's directory (`None` for a read-only tier).
    pub(crate) fn log_dir(&self) -> Option<&Path> {
        self.log.as_ref().map(RedoLog::dir)
    }

    /// Takes one write batch (its encoding and decoded operations): logged, then applied. A put
    /// of a value the active layer holds the one before of is logged as a patch of it when that
    /// is much shorter (`patch.rs`): replay meets the value before first, in the same segment
    /// (the active layer and its segments start together).
    ///
    /// Puts to family `cold` (if any) are marked cold ([`crate::layer::Point::cold`]): the
    /// layer's retirement does not hand them to the hot-record cache.
    pub(crate) fn write(&self, data: &[u8], ops: &[BatchOp<'_>], cold: Option<u32>) -> Result<()> {
        let Some(log) = &self.log else {
            return Err(Error::ReadOnly);
        };
        self.pace(data.len());
        self.wait_for_room()?;
        let bytes = {
            let layers = self.layers.read();
            let mut active = layers.active.write();
            // The batch re-encoded with patches, from the first put logged as one.
            let mut patched: Option<Vec<u8>> = None;
            for (i, op) in ops.iter().enumerate() {
                if let BatchOp::Put { cf, key, value } = *op {
                    // A short value is logged whole: no lookup of the one before it.
                    let held = match value.len() >= patch::MIN_VALUE {
                        true => active.lookup(cf, key),
                        false => Lookup::Untouched,
                    };
                    if let Lookup::Value(old) = held {
                        if let Some(ranges) = patch::diff(old, value) {
                            let out = match &mut patched {
                                Some(out) => out,
                                None => {
                                    let mut out = PATCHED.with(|b| b.take());
                                    out.clear();
                                    // Room for the whole batch: the records before this
                                    // one are copied in whole, and it rarely grows.
                                    out.reserve(data.len());
                                    out.extend_from_slice(data.get(..12).unwrap_or_default());
                                    for before in &ops[..i] {
                                        pending::encode_op(&mut out, before)?;
                                    }
                                    patched.insert(out)
                                }
                            };
                            patch::encode(out, cf, key, value, &ranges);
                            active.apply_marked(op, cold == Some(cf))?;
                            continue;
                        }
                    }
                }
                if let Some(out) = &mut patched {
                    pending::encode_op(out, op)?;
                }
                let marked = matches!(*op, BatchOp::Put { cf, .. } if cold == Some(cf));
                active.apply_marked(op, marked)?;
            }
            log.append(patched.as_deref().unwrap_or(data));
            if let Some(out) = patched.filter(|out| out.capacity() <= PATCHED_KEEP) {
                PATCHED.with(|b| b.replace(out));
            }
            let bytes = active.bytes();
            self.active_bytes.store(bytes, Ordering::Relaxed);
            drop(active);
            // Under `layers` (shared): a swap, which clears it, cannot come in between.
            if !self.dirty.load(Ordering::Relaxed) {
                self.dirty_since.lock().get_or_insert_with(Instant::now);
                self.dirty.store(true, Ordering::Relaxed);
            }
            bytes
        };
        if bytes >= self.dirty_limit {
            self.request_checkpoint();
        }
        if slow_threshold().1 {
            let now = self.opened.elapsed().as_micros() as u64;
            let last = self.last_write_us.swap(now, Ordering::Relaxed);
            if last > 0 {
                trace_slow(
                    "a stretch without a write taken",
                    Duration::from_micros(now.saturating_sub(last)),
                );
            }
        }
        Ok(())
    }

    /// Waits while the active layer is at the limit and a checkpoint is running (the disk is
    /// behind the writes: writers slow to its pace instead of filling memory). Fails instead
    /// while the last checkpoint failed: the disk is not slow but failing, and a writer
    /// (holding its keys' locks) must not wait for it without end.
    fn wait_for_room(&self) -> Result<()> {
        let mut stopped: Option<Instant> = None;
        let outcome = loop {
            if !self.is_full() {
                break Ok(());
            }
            if let Some(why) = self.last_failure.lock().as_ref() {
                break Err(Error::Storage(format!(
                    "write-back tier: writes refused while checkpoints to RocksDB fail: {why}"
                )));
            }
            stopped.get_or_insert_with(Instant::now);
            let mut wake = self.wake.lock();
            self.woken.wait_for(&mut wake, Duration::from_millis(10));
        };
        if let Some(since) = stopped {
            let took = since.elapsed();
            self.stats.stopped_writes.fetch_add(1, Ordering::Relaxed);
            self.stats
                .stopped_micros
                .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
            trace_slow(
                "a write stopped at the write-back tier's memory bound",
                took,
            );
        }
        outcome
    }

    /// Waits, while a checkpoint runs, until a write of `bytes` fits the rate [`paced_rate`]
    /// gives: the writes admitted since the active layer passed [`PACE_FROM`] of the limit
    /// are spaced at that rate (a shared budget, like a token bucket without credit for idle
    /// time beyond [`PACE_SLACK`]). The rate is looked at again after each nap, so a
    /// checkpoint that ends lets every paced writer go at once. Nothing changes for what the
    /// write promises: it is logged and applied after the wait, as without one.
    fn pace(&self, bytes: usize) {
        let mut waited: Option<Instant> = None;
        let deferred = DEFERRED.with(Cell::get);
        while let Some(rate) = self.rate_now() {
            let now = Instant::now();
            let mut pace = self.pace.lock();
            let done = pace.next_free.max(now) + Duration::from_secs_f64(bytes as f64 / rate);
            if done <= now + PACE_SLACK {
                pace.next_free = done;
                break;
            }
            if deferred {
                // Taken now; the caller waits its turn after the command ([`defer_write_pace`]).
                pace.next_free = done;
                drop(pace);
                let due = done - PACE_SLACK / 2;
                if slow_threshold().1 {
                    trace_slow(
                        &format!("a write's pace at {:.2} MB/s", rate / 1048576.0),
                        due - now,
                    );
                }
                OWED.with(|o| o.set(Some(o.get().map_or(due, |d| d.max(due)))));
                self.stats.delayed_writes.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .delayed_micros
                    .fetch_add((due - now).as_micros() as u64, Ordering::Relaxed);
                return;
            }
            drop(pace);
            waited.get_or_insert(now);
            let mut wake = self.wake.lock();
            let nap = done - now - PACE_SLACK / 2;
            self.woken.wait_for(&mut wake, nap.min(PACE_NAP));
        }
        if let Some(since) = waited {
            self.stats.delayed_writes.fetch_add(1, Ordering::Relaxed);
            self.stats
                .delayed_micros
                .fetch_add(since.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
    }

    /// The rate writers are paced at now (bytes/s; `None`: not paced), also kept for INFO:
    /// [`paced_rate`] while a checkpoint runs (not after one failed); the checkpoints' own pace while the active layer
    /// is past the limit and the checkpointer has not swapped it out yet (at full speed the
    /// writers took it from the limit to twice it in that while, then stopped); and, whichever
    /// is slower, RocksDB's own pace while it is behind ([`engine_rate`]).
    fn rate_now(&self) -> Option<f64> {
        let active = self.active_bytes.load(Ordering::Relaxed);
        let running = self.frozen_held.load(Ordering::Relaxed);
        let engine = match self.engine_rate.load(Ordering::Relaxed) {
            0 => None,
            bits => Some(f64::from_bits(bits)),
        };
        // Most writes during a checkpoint find the active layer outside the band `paced_rate`
        // paces in: they take neither of the locks below.
        let in_band =
            (active as f64) >= PACE_FROM * self.dirty_limit as f64 && active < self.dirty_limit;
        if running && !in_band && engine.is_none() {
            return self.show_rate(None);
        }
        let memory = if (running || engine.is_some()) && self.last_failure.lock().is_some() {
            // The disk fails rather than lags: writers go on to the limit and get its error.
            return self.show_rate(None);
        } else if running {
            let pace = self.pace.lock();
            pace.running.and_then(|(since, frozen)| {
                let expected = pace
                    .secs_per_byte
                    .map(|spb| Duration::from_secs_f64(spb * frozen as f64));
                paced_rate(active, self.dirty_limit, expected, since.elapsed())
            })
        } else if active >= self.dirty_limit {
            self.pace.lock().secs_per_byte.map(|spb| 1.0 / spb)
        } else {
            None
        };
        self.show_rate(match (memory, engine) {
            (Some(memory), Some(engine)) => Some(memory.min(engine)),
            (memory, engine) => memory.or(engine),
        })
    }

    /// Keeps `rate` for INFO (`strata_tier_delayed_write_rate`) and returns it.
    fn show_rate(&self, rate: Option<f64>) -> Option<f64> {
        let shown = rate.map_or(0, |r| r as u64);
        if self.stats.write_rate.load(Ordering::Relaxed) != shown {
            self.stats.write_rate.store(shown, Ordering::Relaxed);
        }
        rate
    }

    /// Whether the active layer must stop growing: a checkpoint is writing the frozen layer out
    /// and the active one holds the dirty limit already, or the active one holds twice the
    /// limit and the checkpointer has not swapped it out yet (it makes the next log segment
    /// first, which a slow disk can make long). The two layers then hold about twice
    /// `memory-tier-dirty-size`, three times at worst, so the setting bounds the tier's memory.
    /// (Letting the active layer reach twice the limit while a checkpoint ran, and grow without
    /// bound between checkpoints, put a server sized for a 256 MB memory group past it under
    /// full-speed SETs; docs/architecture.md, "Cold data".)
    fn is_full(&self) -> bool {
        // Full only past the limit: below it (nearly every write) no lock is taken.
        if self.active_bytes.load(Ordering::Relaxed) < self.dirty_limit {
            return false;
        }
        let layers = self.layers.read();
        let active = layers.active.read().bytes();
        if layers.frozen.is_some() {
            return active >= self.dirty_limit;
        }
        active >= 2 * self.dirty_limit
            && self.checkpointer_runs.load(Ordering::Acquire)
            && !self.stop.load(Ordering::Acquire)
    }

    fn request_checkpoint(&self) {
        let mut wake = self.wake.lock();
        if !*wake {
            *wake = true;
            self.woken.notify_all();
        }
    }

    /// Forgets the active layer's puts of `keys` in family `cf` (their writer says they are
    /// garbage no reader asks for: [`crate::storage::Storage::drop_unread`]), and charges the
    /// layer for them as deletes of them would have been ([`Layer::charge_garbage`]): checkpoints
    /// come as often as when their writer wrote those deletes, so the redo log stays bounded
    /// by the dirty limit. The puts' redo records stay: a replay brings them back as garbage,
    /// which a checkpoint then writes.
    pub(crate) fn drop_puts(&self, cf: u32, keys: &[Vec<u8>]) {
        let bytes = {
            let layers = self.layers.read();
            let mut active = layers.active.write();
            for key in keys {
                active.drop_put(cf, key);
            }
            active.charge_garbage(keys.len(), keys.first().map_or(0, Vec::len));
            let bytes = active.bytes();
            self.active_bytes.store(bytes, Ordering::Relaxed);
            bytes
        };
        if bytes >= self.dirty_limit {
            self.request_checkpoint();
        }
    }

    /// What the tier holds at `key` of family `cf`, `f` seeing the value.
    pub(crate) fn lookup<T>(&self, cf: u32, key: &[u8], f: impl FnOnce(&[u8]) -> T) -> Found<T> {
        self.with_view(|view| match view.lookup(cf, key) {
            Lookup::Value(v) => Found::Value(f(v)),
            Lookup::Deleted => Found::Deleted,
            Lookup::Untouched => Found::Untouched,
        })
    }

    /// Runs `f` with a view of the layers that stays still while `f` runs: no write lands in
    /// them and no checkpoint swaps or retires one, so what `f` reads from the view, and from
    /// the hot-record cache and RocksDB for keys the view does not name, is one moment's state
    /// (a multi-key read sees a transaction whole or not at all). Writers wait for `f`, which
    /// must be short and must not touch the tier.
    pub(crate) fn with_view<T>(&self, f: impl FnOnce(&TierView<'_>) -> T) -> T {
        let layers = self.layers.read();
        let active = layers.active.read();
        let frozen = layers.frozen.as_ref().map(|l| l.read());
        f(&TierView {
            active: &active,
            frozen: frozen.as_deref(),
        })
    }

    /// Adds the tier's layers (newest first) to `stack`.
    pub(crate) fn stack_onto(&self, stack: &mut Stack) {
        let layers = self.layers.read();
        stack.push(Source::Shared(layers.active.clone()));
        if let Some(frozen) = &layers.frozen {
            stack.push(Source::Shared(frozen.clone()));
        }
    }

    /// Hands the log's buffered records to the operating system.
    pub(crate) fn write_out(&self) -> Result<()> {
        match &self.log {
            Some(log) => log.write_out(),
            None => Ok(()),
        }
    }

    /// Makes every write taken so far durable.
    pub(crate) fn sync(&self) -> Result<()> {
        match &self.log {
            Some(log) => log.sync(),
            None => Ok(()),
        }
    }

    /// Bytes the layers hold (active, frozen).
    pub(crate) fn dirty_bytes(&self) -> (usize, usize) {
        let layers = self.layers.read();
        let active = layers.active.read().bytes();
        let frozen = layers.frozen.as_ref().map_or(0, |f| f.read().bytes());
        (active, frozen)
    }

    /// Writes everything the tier holds to RocksDB and forgets it: swaps the layers, writes the
    /// frozen one out (deleted ranges first, then metadata, then the other families, so
    /// compaction never meets a collection's records before its metadata), flushes RocksDB's
    /// memtables (the writes skipped RocksDB's log), retires the log segments that held them.
    /// Then runs `then` while no other checkpoint can start, with the offset RocksDB now holds
    /// every write through (the last write before the swap: RocksDB is a snapshot as of it
    /// until the next checkpoint).
    pub(crate) fn checkpoint<T>(
        &self,
        db: &DB,
        families: &Families,
        then: impl FnOnce(u64) -> Result<T>,
    ) -> Result<T> {
        let _one = self.checkpointing.lock();
        let Some(log) = &self.log else {
            return then(0);
        };
        let outcome = self.write_back_layers(log, db, families);
        *self.last_failure.lock() = outcome.as_ref().err().map(|e| e.to_string());
        // Writers waiting for room go on (or, after a failure, get its error).
        {
            let _w = self.wake.lock();
            self.woken.notify_all();
        }
        then(outcome?)
    }

    /// The body of [`Tier::checkpoint`], without its lock and its `then`: the offset RocksDB
    /// holds every write through once it has returned.
    fn write_back_layers(&self, log: &RedoLog, db: &DB, families: &Families) -> Result<u64> {
        // The next segment is made before writers are held off.
        log.prepare_next()?;
        let swap = Instant::now();
        let (frozen, ended) = {
            let mut layers = self.layers.write();
            // A checkpoint that failed left its frozen layer (and its log segments): write that
            // one first, never swap a second layer over it.
            if let (Some(frozen), Some(ended)) = (layers.frozen.clone(), *self.failed.lock()) {
                // The retry's own time is what the pace learns from.
                let bytes = frozen.read().bytes();
                self.pace.lock().running = Some((Instant::now(), bytes));
                self.frozen_held.store(true, Ordering::Relaxed);
                (frozen, ended)
            } else if layers.active.read().is_empty() {
                // Writers append under `layers`' read lock: no write is half taken.
                let offset = log.last_offset();
                *self.dirty_since.lock() = None;
                self.dirty.store(false, Ordering::Relaxed);
                drop(layers);
                return Ok(offset);
            } else {
                let ended = log.rotate()?;
                let offset = log.last_offset();
                let next = self.spare.lock().take().unwrap_or_default();
                let frozen = std::mem::replace(&mut layers.active, Arc::new(RwLock::new(next)));
                let bytes = frozen.read().bytes();
                let filling = self.dirty_since.lock().take();
                {
                    let mut pace = self.pace.lock();
                    let now = Instant::now();
                    pace.running = Some((now, bytes));
                    // The rate writers filled a layer at, from a full one (a small one was
                    // written slowly or not for long: no sign of what writers can do).
                    let took = filling.map_or(0.0, |t| (now - t).as_secs_f64());
                    if bytes >= self.dirty_limit / 2 && took > 0.0 {
                        pace.incoming = Some(bytes as f64 / took);
                    }
                }
                layers.frozen = Some(frozen.clone());
                self.dirty.store(false, Ordering::Relaxed);
                self.active_bytes.store(0, Ordering::Relaxed);
                self.frozen_held.store(true, Ordering::Relaxed);
                (frozen, (ended, offset))
            }
        };
        trace_slow("the write-back tier's layer swap", swap.elapsed());
        let (ended, offset) = ended;
        // Until this checkpoint ends, a retry must start from this frozen layer.
        *self.failed.lock() = Some((ended, offset));
        // Writers go on; the records of the frozen layer reach the disk before anything
        // relies on them (a sync of the ended segment, also for `appendfsync always`: a sync
        // of the log syncs only the current segment).
        let mut phases = Phases::start();
        log.sync_ended()?;
        phases.mark("log sync");
        #[cfg(test)]
        std::thread::sleep(Duration::from_millis(
            self.slow_checkpoints_ms.load(Ordering::Acquire),
        ));
        #[cfg(test)]
        if self.fail_checkpoints.load(Ordering::Acquire) {
            return Err(Error::Storage("injected: No space left on device".into()));
        }
        let written = {
            let layer = frozen.read();
            let (files, how) = self
                .files
                .get()
                .map_or((&[][..], FileCompression::Bottom), |(f, how)| {
                    (f.as_slice(), *how)
                });
            write_layer(db, families, (files, how), &self.dir, &layer, offset)?
        };
        phases.mark("tables");
        // RocksDB holds the table files durably already; what went through memtables (with
        // RocksDB's log off) is durable once they are flushed, and only then may the log
        // segments go.
        flush_memtables(db, families, &written.memtables)?;
        phases.mark("flush");
        let written = written.bytes;
        log.drop_through(ended)?;
        phases.mark("log retire");
        if let Some(retire) = self.retire.get() {
            retire(&frozen.read());
        }
        phases.mark("cache");
        phases.report_if_slow(written);
        // Cleared before writers can go on: one taken after a failure sees the failure gone.
        *self.failed.lock() = None;
        *self.last_failure.lock() = None;
        {
            let mut layers = self.layers.write();
            layers.frozen = None;
            self.frozen_held.store(false, Ordering::Relaxed);
        }
        self.learn_pace();
        // Kept for reuse unless a reader still walks it (an iterator made before the swap).
        if let Ok(layer) = Arc::try_unwrap(frozen) {
            let mut layer = layer.into_inner();
            layer.clear();
            *self.spare.lock() = Some(layer);
        }
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.stats
            .checkpointed_bytes
            .fetch_add(written as u64, Ordering::Relaxed);
        self.stats
            .last_checkpoint_ms
            .store(crate::clock::now_ms(), Ordering::Relaxed);
        Ok(offset)
    }

    /// Takes the checkpoint that just ended into the pace expected of the next ones: its
    /// seconds per byte, weighted half against those before, when its layer held at least half
    /// the dirty limit (a small layer's time is mostly fixed costs: its rate would pace the
    /// next, full one too slowly).
    fn learn_pace(&self) {
        let mut pace = self.pace.lock();
        let Some((since, bytes)) = pace.running.take() else {
            return;
        };
        let took = since.elapsed();
        self.stats
            .last_checkpoint_took_ms
            .store(took.as_millis() as u64, Ordering::Relaxed);
        if bytes >= self.dirty_limit / 2 {
            let latest = took.as_secs_f64() / bytes as f64;
            pace.secs_per_byte = Some(pace.secs_per_byte.map_or(latest, |s| (s + latest) / 2.0));
        }
        self.stats.write_rate.store(0, Ordering::Relaxed);
    }

    /// Why the last checkpoint failed, while none has succeeded since.
    pub(crate) fn last_failure(&self) -> Option<String> {
        self.last_failure.lock().clone()
    }

    /// From now on, a checkpoint hands the points of these families to RocksDB as table files
    /// (sorted, built beside the database and moved in) instead of writing them through its
    /// memtables and flushing them: the flush builds the same file, after a skiplist insert per
    /// record. Set once, when the families' options are known.
    pub(crate) fn write_files_for(&self, families: FileFamilies, how: FileCompression) {
        let _ = self.files.set((families, how));
    }

    /// Paces writers against these limits of RocksDB's ([`engine_rate`]). Set once, when the
    /// families' options are known.
    pub(crate) fn pace_against(&self, limits: EngineLimits) {
        let _ = self.engine_limits.set(limits);
    }

    /// Reads RocksDB's backlog (level-0 files, pending compaction bytes) and sets the rate
    /// writers are paced at for it ([`engine_rate`]). Called by the checkpointer thread, after
    /// each checkpoint and at least once a second.
    pub(crate) fn sample_engine(&self, db: &DB, families: &Families) {
        let mut now = EngineSignals::default();
        for (_, name) in families {
            let Some(cf) = db.cf_handle(name) else {
                continue;
            };
            let get = |p: &str| db.property_int_value_cf(cf, p).ok().flatten().unwrap_or(0);
            now.l0_files = now.l0_files.max(get("rocksdb.num-files-at-level0"));
            now.pending_bytes = now
                .pending_bytes
                .max(get("rocksdb.estimate-pending-compaction-bytes"));
        }
        self.pace_for_engine(now);
    }

    /// Sets the rate writers are paced at for RocksDB's backlog `now` ([`engine_rate`]).
    fn pace_for_engine(&self, now: EngineSignals) {
        let limits = self.engine_limits.get().copied().unwrap_or_default();
        let mut engine = self.engine.lock();
        let was = engine.rate.map(|rate| (rate, engine.last));
        if was.is_none() {
            // Writers' own rate when RocksDB fell behind (a dirty limit a second before any
            // full layer was timed).
            engine.ceiling = self.pace.lock().incoming.unwrap_or(self.dirty_limit as f64);
        }
        engine.rate = engine_rate(was, now, &limits, engine.ceiling);
        if slow_threshold().1 && engine.rate != was.map(|(rate, _)| rate) {
            log_line(&format!(
                "engine pace {:.1} MB/s (level 0: {} files, compaction {} MB behind)",
                engine.rate.unwrap_or(0.0) / 1048576.0,
                now.l0_files,
                now.pending_bytes >> 20
            ));
        }
        engine.last = now;
        self.engine_rate
            .store(engine.rate.map_or(0, f64::to_bits), Ordering::Relaxed);
        self.stats
            .engine_write_rate
            .store(engine.rate.map_or(0, |r| r as u64), Ordering::Relaxed);
    }

    /// From now on, each checkpoint calls `retire` with the layer it wrote, after RocksDB holds
    /// it and before readers stop seeing it. Set once.
    pub(crate) fn on_retire(&self, retire: Retire) {
        let _ = self.retire.set(retire);
    }

    /// Starts the checkpointer thread: a checkpoint whenever one is requested (the active layer
    /// reached the dirty limit) or the oldest write waited [`MAX_DIRTY_AGE`].
    pub(crate) fn spawn_checkpointer(
        tier: Arc<Tier>,
        db: Arc<DB>,
        families: Families,
    ) -> Result<JoinHandle<()>> {
        tier.checkpointer_runs.store(true, Ordering::Release);
        if let Some(log) = &tier.log {
            log.prepare_next()?;
        }
        std::thread::Builder::new()
            .name("strata-checkpoint".into())
            .spawn(move || loop {
                {
                    let mut wake = tier.wake.lock();
                    if !*wake && !tier.stop.load(Ordering::Acquire) {
                        tier.woken.wait_for(&mut wake, Duration::from_secs(1));
                    }
                    *wake = false;
                }
                if tier.stop.load(Ordering::Acquire) {
                    return;
                }
                tier.sample_engine(&db, &families);
                let old = tier
                    .dirty_since
                    .lock()
                    .is_some_and(|t| t.elapsed() >= MAX_DIRTY_AGE);
                let full = tier.layers.read().active.read().bytes() >= tier.dirty_limit;
                let retry = tier.failed.lock().is_some();
                if !old && !full && !retry {
                    continue;
                }
                if let Err(e) = tier.checkpoint(&db, &families, |_| Ok(())) {
                    eprintln!("strata: write-back checkpoint failed (retrying in 1 s): {e}");
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
                // The checkpoint's table files are in level 0 now.
                tier.sample_engine(&db, &families);
                if let Some(log) = &tier.log {
                    // The next checkpoint's segment, made now: the swap then waits for nothing
                    // while writers fill the active layer past the limit.
                    if let Err(e) = log.prepare_next() {
                        eprintln!("strata: write-back tier: cannot make the next log segment: {e}");
                    }
                }
            })
            .map_err(|e| Error::Storage(format!("cannot start the checkpointer: {e}")))
    }

    /// Asks the checkpointer thread to end (it finishes a checkpoint it is running).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _w = self.wake.lock();
        self.woken.notify_all();
    }
}

/// Where a checkpoint's time went, for the log line a slow one leaves (the server's log, like
/// RocksDB's own LOG: what an operator reads when writers were slowed).
struct Phases {
    start: Instant,
    last: Instant,
    took: Vec<(&'static str, Duration)>,
}

impl Phases {
    fn start() -> Phases {
        let now = Instant::now();
        Phases {
            start: now,
            last: now,
            took: Vec::with_capacity(5),
        }
    }

    fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.took.push((name, now - self.last));
        self.last = now;
    }

    fn report_if_slow(&self, bytes: usize) {
        let all = self.start.elapsed();
        if all < slow_threshold().0 {
            return;
        }
        let parts: Vec<String> = self
            .took
            .iter()
            .map(|(name, d)| format!("{name} {} ms", d.as_millis()))
            .collect();
        log_line(&format!(
            "write-back checkpoint of {} MB took {} ms: {}",
            bytes >> 20,
            all.as_millis(),
            parts.join(", ")
        ));
    }
}

/// A tier's answer for one key ([`Tier::lookup`]).
pub(crate) enum Found<T> {
    Value(T),
    Deleted,
    Untouched,
}

/// The layers as [`Tier::with_view`] holds them still.
pub(crate) struct TierView<'a> {
    active: &'a Layer,
    frozen: Option<&'a Layer>,
}

impl TierView<'_> {
    /// What the layers hold at `key` of family `cf`, the newest first.
    pub(crate) fn lookup(&self, cf: u32, key: &[u8]) -> Lookup<'_> {
        for layer in std::iter::once(self.active).chain(self.frozen) {
            match layer.lookup(cf, key) {
                Lookup::Untouched => {}
                found => return found,
            }
        }
        Lookup::Untouched
    }
}

/// What [`write_layer`] wrote.
struct Written {
    /// Bytes of batches and table files.
    bytes: usize,
    /// The families it wrote batches to (with RocksDB's log off: not durable until their
    /// memtables are flushed). The families whose points went in as table files only are not
    /// among them.
    memtables: Vec<u32>,
}

/// Writes `layer` to RocksDB with its log off, and `offset` (the offset of the layer's last
/// write) at [`OFFSET_KEY`].
fn write_layer(
    db: &DB,
    families: &Families,
    (files, how): (&[FileFamily], FileCompression),
    dir: &Path,
    layer: &Layer,
    offset: u64,
) -> Result<Written> {
    let mut wo = WriteOptions::default();
    wo.disable_wal(true);
    let handle = |id: u32| {
        families
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, name)| db.cf_handle(name))
            .ok_or_else(|| Error::Storage(format!("write-back tier: no column family {id}")))
    };
    let mut batch = crate::storage::new_batch();
    let mut written = 0usize;
    let mut flush = |batch: &mut WriteBatch, force: bool| -> Result<()> {
        if !batch.is_empty() && (force || batch.size_in_bytes() >= CHECKPOINT_BATCH) {
            written += batch.size_in_bytes();
            db.write_opt(std::mem::take(batch), &wo)?;
        }
        Ok(())
    };
    let mut memtables = vec![0];
    for (cf, fam) in layer.families() {
        let h = handle(cf)?;
        for (from, to) in &fam.ranges {
            batch.delete_range_cf(h, from, to);
        }
        if !fam.ranges.is_empty() && !memtables.contains(&cf) {
            memtables.push(cf);
        }
    }
    flush(&mut batch, true)?;
    // Metadata first (the family named "meta"), then the rest.
    let mut order: Vec<(u32, &crate::layer::Family)> = layer.families().collect();
    order.sort_by_key(|(cf, _)| {
        let name = families
            .iter()
            .find(|(i, _)| i == cf)
            .map(|(_, n)| n.as_str());
        u8::from(name != Some(crate::storage::CF_META))
    });
    let mut ingested = 0;
    // RocksDB's table files, listed once (for FileCompression::ByLevel).
    let mut live: Option<Vec<rocksdb::LiveFile>> = None;
    for (cf, fam) in order {
        let h = handle(cf)?;
        let points = fam.points.sorted();
        if points.is_empty() {
            continue;
        }
        if let Some(file) = files.iter().find(|f| f.id == cf) {
            let name = families.iter().find(|(i, _)| *i == cf).map(|(_, n)| n);
            let mut alone = || {
                let live = live.get_or_insert_with(|| db.live_files().unwrap_or_default());
                !overlaps(live, name, &points)
            };
            let opts = match (how, &file.alone) {
                (FileCompression::Bottom | FileCompression::ByLevel, Some(o)) if alone() => o,
                (FileCompression::Bottom, _) => &file.bottom,
                (FileCompression::Upper, _) => &file.upper,
                (FileCompression::ByLevel, _) => match alone() {
                    true => &file.bottom,
                    false => &file.upper,
                },
            };
            let path = dir.join(format!("tier-checkpoint-{cf}.sst.tmp"));
            ingested += ingest(db, h, opts, &path, &points)?;
            continue;
        }
        if !memtables.contains(&cf) {
            memtables.push(cf);
        }
        for (k, v) in points {
            match &v.value {
                Some(v) => batch.put_cf(h, k, v),
                None => batch.delete_cf(h, k),
            }
            flush(&mut batch, false)?;
        }
        flush(&mut batch, true)?;
    }
    batch.put_cf(handle(0)?, OFFSET_KEY, offset.to_le_bytes());
    flush(&mut batch, true)?;
    Ok(Written {
        bytes: written + ingested,
        memtables,
    })
}

/// Flushes the memtables of the families `ids` (of `families`) and waits for the flushes, with
/// `allow_write_stall`: RocksDB's manual flush otherwise first waits until one more level-0
/// file would not put the family at its slowdown trigger, before it even looks at the memtable
/// (`WaitUntilFlushWouldNotStallWrites`), and with compaction behind that wait was the whole
/// of checkpoints of 8-20 s. Letting the flush stall writes stalls only RocksDB's own writers,
/// which under the tier are the checkpointer's small batches (and the rare writes that bypass
/// the tier, which RocksDB would slow all the same); the tier's writers are paced from the same
/// signals instead ([`engine_rate`]). (The `rocksdb` crate does not expose the option: the C
/// API's `rocksdb_flushoptions_set_allow_write_stall`.)
fn flush_memtables(db: &DB, families: &Families, ids: &[u32]) -> Result<()> {
    use librocksdb_sys as ffi;
    use rocksdb::{AsColumnFamilyRef, AsRawPtr};

    /// The C API's flush options, destroyed on every way out.
    struct FlushOptions(*mut ffi::rocksdb_flushoptions_t);
    impl Drop for FlushOptions {
        fn drop(&mut self) {
            // SAFETY: made by `rocksdb_flushoptions_create`, destroyed once, here.
            unsafe { ffi::rocksdb_flushoptions_destroy(self.0) }
        }
    }
    // SAFETY: the C API's constructor and setters of a flush options object it owns.
    let opts = FlushOptions(unsafe { ffi::rocksdb_flushoptions_create() });
    if opts.0.is_null() {
        return Err(Error::Storage("cannot make RocksDB flush options".into()));
    }
    // SAFETY: `opts.0` is a live flush options object (checked non-null above).
    unsafe {
        ffi::rocksdb_flushoptions_set_wait(opts.0, 1);
        ffi::rocksdb_flushoptions_set_allow_write_stall(opts.0, 1);
    }
    for id in ids {
        let Some(cf) = families
            .iter()
            .find(|(i, _)| i == id)
            .and_then(|(_, name)| db.cf_handle(name))
        else {
            return Err(Error::Storage(format!(
                "write-back tier: no column family {id}"
            )));
        };
        let mut err: *mut std::ffi::c_char = std::ptr::null_mut();
        // SAFETY: `db` and `cf` outlive the call; `err` is set to a string RocksDB allocated,
        // or left null.
        unsafe { ffi::rocksdb_flush_cf(db.as_raw_ptr(), opts.0, cf.inner(), &mut err) };
        if !err.is_null() {
            // SAFETY: a NUL-terminated string from RocksDB, freed once with its allocator.
            let why = unsafe { std::ffi::CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned();
            unsafe { ffi::rocksdb_free(err.cast()) };
            return Err(Error::Storage(format!("flush of {id}: {why}")));
        }
    }
    Ok(())
}

/// Flushes, for a clean shutdown, the memtables of `families` that hold anything, with
/// `allow_write_stall` as a checkpoint's flush ([`flush_memtables`]), and leaves the others
/// alone. RocksDB's default manual flush first waits until one more level-0 file would not
/// stall writes, also for an empty memtable: at shutdown, with compaction behind, it waited
/// for every family in turn (one shutdown took 8.6 s), though under the write-back tier a
/// checkpoint has just flushed all that went through memtables and the other families hold
/// nothing. What is flushed here is what RocksDB's own writers left there (with its log on:
/// replayed at the next open anyway; or without it: a full copy, an RDB import), flushed so
/// that the next open finds it in table files.
pub(crate) fn flush_written(db: &DB, families: &Families) -> Result<()> {
    let holds = |name: &str| {
        let Some(cf) = db.cf_handle(name) else {
            return false;
        };
        [
            "rocksdb.num-entries-active-mem-table",
            "rocksdb.num-entries-imm-mem-tables",
            "rocksdb.num-immutable-mem-table",
        ]
        .iter()
        // A property RocksDB cannot give counts as something to flush.
        .any(|p| db.property_int_value_cf(cf, *p).ok().flatten() != Some(0))
    };
    let ids: Vec<u32> = families
        .iter()
        .filter(|(_, name)| holds(name))
        .map(|(id, _)| *id)
        .collect();
    flush_memtables(db, families, &ids)
}

/// Whether a table file of family `name` among `live` overlaps the key range of `points` (in
/// key order): RocksDB then places a file of `points` above that file's level, in level 0 if it
/// overlaps one there; without any, in the last level. (An unknown family, or a file without
/// keys, counts as overlapping: the upper levels' compression is the cheaper guess.)
fn overlaps(
    live: &[rocksdb::LiveFile],
    name: Option<&String>,
    points: &[(&[u8], &crate::layer::Point)],
) -> bool {
    let (Some(name), Some((first, _)), Some((last, _))) = (name, points.first(), points.last())
    else {
        return true;
    };
    live.iter()
        .filter(|f| &f.column_family_name == name)
        .any(|f| match (&f.start_key, &f.end_key) {
            (Some(lo), Some(hi)) => lo.as_slice() <= *last && *first <= hi.as_slice(),
            _ => true,
        })
}

/// Writes `points` (in key order) to a table file at `path` and moves it into family `cf`;
/// returns the file's size. RocksDB numbers the file's records after every write before it
/// (the deleted ranges this checkpoint wrote first among them), flushing a memtable the file
/// overlaps first.
fn ingest(
    db: &DB,
    cf: &rocksdb::ColumnFamily,
    opts: &Options,
    path: &Path,
    points: &[(&[u8], &crate::layer::Point)],
) -> Result<usize> {
    // RocksDB moves a file in by linking it under its new name, and removes this name only after
    // the ingestion: a crash in between leaves this name linked to a live table file, and
    // writing the next checkpoint's file through it overwrote that table (after a kill -9 its
    // index failed its checksum, tests/python/test_crash.py). Unlinking the name leaves the
    // table whole.
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::Io(format!("{}: {e}", path.display()))),
    }
    let mut file = SstFileWriter::create(opts);
    file.open(path)?;
    for (i, (k, v)) in points.iter().enumerate() {
        // The records are in key order, scattered in memory: a cache miss each for the key,
        // the point and the value, which the loads of the records ahead overlap.
        if let Some((k, p)) = points.get(i + PREFETCH_AHEAD) {
            prefetch(k.as_ptr());
            prefetch(*p);
        }
        if let Some(Some(v)) = points.get(i + PREFETCH_AHEAD / 2).map(|(_, p)| &p.value) {
            prefetch(v.as_ptr());
        }
        match &v.value {
            Some(v) => file.put(k, v)?,
            None => file.delete(k)?,
        }
    }
    file.finish()?;
    let size = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let mut how = IngestExternalFileOptions::default();
    how.set_move_files(true);
    db.ingest_external_file_cf_opts(cf, &how, vec![path])?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::{
        engine_rate, paced_rate, EngineLimits, EngineSignals, Families, Tier, ENGINE_MIN_RATE,
    };
    use crate::pending;
    use rocksdb::DB;
    use std::sync::atomic::Ordering;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn write(tier: &Tier, key: &[u8], value: &[u8]) -> crate::error::Result<()> {
        let mut batch = crate::storage::new_batch();
        batch.put(key, value);
        let (_, ops) = pending::decode_batch(batch.data())?;
        tier.write(batch.data(), &ops, None)
    }

    /// Writes distinct 1 KiB values until one is refused (`Some(index)`), at most `max`.
    fn write_until_refused(tier: &Tier, from: usize, max: usize) -> Option<(usize, String)> {
        (from..from + max).find_map(|i| {
            write(tier, format!("k{i}").as_bytes(), &[b'v'; 1024])
                .err()
                .map(|e| (i, e.to_string()))
        })
    }

    /// Database options that create the database and its column families.
    fn creating() -> rocksdb::Options {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts
    }

    #[test]
    fn a_slow_disk_holds_writers_at_twice_the_dirty_limit() -> R {
        let dir = tempfile::tempdir()?;
        let opts = creating();
        let db = Arc::new(DB::open_cf(&opts, dir.path().join("db"), ["default"])?);
        let families: Families = vec![(0, "default".to_string())];
        let limit = 64 << 10;
        let tier = Arc::new(Tier::open(dir.path(), false, limit, false)?);
        tier.slow_checkpoints_ms.store(100, Ordering::Release);
        let checkpointer = Tier::spawn_checkpointer(tier.clone(), db.clone(), families)?;

        // A writer at full speed for 1.5 s while a sampler watches the layers.
        let writer = tier.clone();
        let handle = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            let mut i = 0usize;
            while start.elapsed() < Duration::from_millis(1500) {
                write(&writer, format!("k{i}").as_bytes(), &[b'v'; 1024]).map(|_| i += 1)?;
            }
            Ok::<usize, crate::error::Error>(i)
        });
        let mut most = 0;
        while !handle.is_finished() {
            let (active, frozen) = tier.dirty_bytes();
            most = most.max(active + frozen);
            std::thread::sleep(Duration::from_millis(1));
        }
        let written = handle.join().map_err(|_| "writer panicked")??;
        assert!(
            tier.stats.checkpoints.load(Ordering::Relaxed) >= 2,
            "the writer waited for checkpoints, then went on"
        );
        assert!(written > 64, "{written} writes in 1.5 s");
        // The active layer stops at the limit while a checkpoint runs, at twice it before the
        // checkpointer swaps it out: three times the limit at worst (plus, per layer, the write
        // that crossed it), about twice in practice. It was four times, and more while the
        // checkpointer made its next log segment.
        assert!(
            most <= 3 * limit + 4096,
            "the layers held {most} bytes with a {limit}-byte limit"
        );
        tier.stop();
        checkpointer.join().map_err(|_| "checkpointer panicked")?;
        Ok(())
    }

    #[test]
    fn the_paced_rate_falls_as_the_active_layer_nears_the_limit() {
        let limit = 1000;
        let expected = Some(Duration::from_secs(4));
        let at = |active, elapsed_ms| {
            paced_rate(active, limit, expected, Duration::from_millis(elapsed_ms))
        };
        // Not paced below half the limit, nor at it (writers stop there instead).
        assert_eq!(at(499, 0), None);
        assert_eq!(at(1000, 0), None);
        assert_eq!(at(1500, 0), None);
        // The rate that reaches the limit as the checkpoint ends: 500 bytes in 4 s.
        assert_eq!(at(500, 0), Some(125.0));
        assert_eq!(at(500, 1000), Some(500.0 / 3.0));
        // It falls with the room left: the fuller the layer the slower ...
        let rates: Vec<f64> = (500..1000)
            .step_by(50)
            .filter_map(|a| at(a, 1000))
            .collect();
        assert_eq!(rates.len(), 10);
        assert!(rates.windows(2).all(|w| w[1] < w[0]), "{rates:?}");
        // ... but never to nothing before the limit.
        assert!(at(999, 0).is_some_and(|r| r > 0.0));
        // Past half its expected time a checkpoint is assumed to need as long again as it has
        // run: a late one slows writers more and more, and stops them only at the limit.
        assert_eq!(at(500, 3000), Some(500.0 / 3.0));
        assert_eq!(at(500, 8000), Some(500.0 / 8.0));
        assert_eq!(at(500, 60_000), Some(500.0 / 60.0));
    }

    #[test]
    fn the_first_checkpoint_paces_writers_from_its_own_age() {
        let limit = 1000;
        let at =
            |active, elapsed_ms| paced_rate(active, limit, None, Duration::from_millis(elapsed_ms));
        // Nothing learned yet: the checkpoint is assumed to need as long again as it has run,
        // so writers are paced from the band on (they used to go on to the limit and stop).
        assert_eq!(at(500, 1000), Some(500.0));
        assert_eq!(at(750, 1000), Some(250.0));
        // The room halves each time its age doubles; never nothing before the limit.
        assert_eq!(at(500, 2000), Some(250.0));
        assert_eq!(at(500, 4000), Some(125.0));
        assert!(at(999, 60_000).is_some_and(|r| r > 0.0));
        // Not paced below the band, nor at the limit (writers stop there).
        assert_eq!(at(499, 1000), None);
        assert_eq!(at(1000, 1000), None);
        // A checkpoint that has just begun is given the shortest horizon, not none.
        assert_eq!(at(500, 0), Some(500.0 / 0.010));
    }

    #[test]
    fn a_deferred_write_is_taken_at_once_and_its_pace_waited_out_after() -> R {
        let dir = tempfile::tempdir()?;
        let tier = Tier::open(dir.path(), false, 1 << 20, false)?;
        // RocksDB behind: writers paced at 0.8 MB/s (no layer timed yet).
        tier.pace_for_engine(EngineSignals {
            l0_files: 20,
            pending_bytes: 0,
        });
        let before = std::time::Instant::now();
        let (written, due) = super::defer_write_pace(|| -> crate::error::Result<()> {
            for i in 0..64 {
                write(&tier, format!("k{i}").as_bytes(), &[b'v'; 1024])?;
            }
            Ok(())
        });
        written?;
        // Every write was taken (none waited inside the command) ...
        assert!(tier.dirty_bytes().0 >= 64 * 1024);
        assert!(tier.stats.delayed_writes.load(Ordering::Relaxed) > 0);
        // ... and the pace is owed: 64 KB at 0.8 MB/s is 78 ms, less the burst allowed.
        let due = due.ok_or("no pace owed for 64 KB at 0.8 MB/s")?;
        assert!(
            due >= before + Duration::from_millis(70),
            "{:?}",
            due - before
        );
        // The debt is the caller's: a scope afterwards owes nothing of it.
        assert_eq!(super::defer_write_pace(|| ()).1, None);
        // The caller sleeps in naps of at most 10 ms while writers are paced ...
        let nap = super::write_pace_nap(&tier, due).ok_or("no nap while owing")?;
        assert!(nap <= Duration::from_millis(10));
        // ... and not at all once RocksDB has caught up (its turn has not come).
        tier.pace_for_engine(EngineSignals {
            l0_files: 2,
            pending_bytes: 0,
        });
        assert_eq!(super::write_pace_nap(&tier, due), None);
        // A command that paced a write and panicked leaves no debt to the thread's next one.
        tier.pace_for_engine(EngineSignals {
            l0_files: 20,
            pending_bytes: 0,
        });
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::defer_write_pace(|| {
                let paced = tier.stats.delayed_writes.load(Ordering::Relaxed);
                let _ = write(&tier, b"p", &[b'v'; 64 << 10]);
                assert!(tier.stats.delayed_writes.load(Ordering::Relaxed) > paced);
                panic!("the command failed");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(super::defer_write_pace(|| ()).1, None);
        Ok(())
    }

    #[test]
    fn a_shutdown_flush_does_not_wait_on_a_family_it_did_not_write() -> R {
        let dir = tempfile::tempdir()?;
        with_level_zero_held(dir.path(), |db| {
            // The default family was written without RocksDB's log (as a full copy writes its
            // aux records): the shutdown must flush it.
            let mut wo = rocksdb::WriteOptions::default();
            wo.disable_wal(true);
            db.put_opt(b"aux", b"1", &wo)?;
            let families: Families = vec![(0, "default".to_string()), (1, "data".to_string())];
            let (tx, rx) = mpsc::channel();
            let d = db.clone();
            std::thread::spawn(move || {
                let _ = tx.send(super::flush_written(&d, &families).map_err(|e| e.to_string()));
            });
            rx.recv_timeout(Duration::from_secs(60))
                .map_err(|_| "the shutdown flush waited 60 s for a family it did not write")??;
            let entries = |cf| {
                db.property_int_value_cf(cf, "rocksdb.num-entries-active-mem-table")
                    .ok()
                    .flatten()
            };
            let default = db.cf_handle("default").ok_or("no default family")?;
            assert_eq!(
                entries(default),
                Some(0),
                "the written family was not flushed"
            );
            assert_eq!(db.get(b"aux")?.as_deref(), Some(&b"1"[..]));
            Ok(())
        })
    }

    #[test]
    fn the_engine_rate_slows_as_level_0_nears_the_stop_and_recovers_as_it_drains() {
        let limits = EngineLimits::default(); // 20 and 36 files; 64 and 256 GB
        let ceiling = 10e6;
        let l0 = |files| EngineSignals {
            l0_files: files,
            pending_bytes: 1 << 30,
        };
        // RocksDB is not behind: not paced, whatever was before.
        assert_eq!(engine_rate(None, l0(19), &limits, ceiling), None);
        assert_eq!(
            engine_rate(Some((1e6, l0(25))), l0(19), &limits, ceiling),
            None
        );
        // At the slowdown trigger: paced, at 0.8 of the writers' own rate.
        let first = engine_rate(None, l0(20), &limits, ceiling);
        assert_eq!(first, Some(8e6));
        // Another level-0 file: slower by 0.8; the same signals again: as it was.
        let at =
            |rate, before, now| engine_rate(Some((rate, l0(before))), l0(now), &limits, ceiling);
        assert_eq!(at(8e6, 20, 21), Some(6.4e6));
        assert_eq!(at(8e6, 21, 21), Some(8e6));
        // Within two files of the stop (36): slower by 0.6 each time.
        assert_eq!(at(8e6, 33, 34), Some(4.8e6));
        assert_eq!(at(8e6, 35, 40), Some(4.8e6));
        // Level 0 drains: faster by 1.25, but never past the ceiling.
        assert_eq!(at(4e6, 30, 25), Some(5e6));
        assert_eq!(at(9e6, 30, 25), Some(ceiling));
        // As many files, more compaction behind: slower; less: faster.
        let pending = |bytes| EngineSignals {
            l0_files: 22,
            pending_bytes: bytes,
        };
        let grew = engine_rate(
            Some((8e6, pending(1 << 30))),
            pending(2 << 30),
            &limits,
            ceiling,
        );
        assert_eq!(grew, Some(6.4e6));
        let shrank = engine_rate(
            Some((8e6, pending(2 << 30))),
            pending(1 << 30),
            &limits,
            ceiling,
        );
        assert_eq!(shrank, Some(1e7));
        // Slowed again and again, never below RocksDB's minimum: slowed, not stopped.
        let mut rate = first;
        for files in 21..60 {
            rate = at(rate.unwrap_or(0.0), files - 1, files);
        }
        assert_eq!(rate, Some(ENGINE_MIN_RATE));
        // Compaction past the soft limit paces with few level-0 files; near the hard limit, by 0.6.
        let backlog = |gb: u64| EngineSignals {
            l0_files: 2,
            pending_bytes: gb << 30,
        };
        assert_eq!(engine_rate(None, backlog(63), &limits, ceiling), None);
        assert_eq!(engine_rate(None, backlog(64), &limits, ceiling), Some(8e6));
        assert_eq!(engine_rate(None, backlog(220), &limits, ceiling), Some(6e6));
    }

    #[test]
    fn writers_are_paced_while_rocksdb_is_behind_and_not_after() -> R {
        let dir = tempfile::tempdir()?;
        let tier = Tier::open(dir.path(), false, 1 << 20, false)?;
        let behind = EngineSignals {
            l0_files: 20,
            pending_bytes: 0,
        };
        // No checkpoint runs and the layer is far below its limit: only RocksDB's backlog
        // paces the writers (at 0.8 of a dirty limit per second: no layer was timed yet).
        tier.pace_for_engine(behind);
        assert_eq!(tier.rate_now(), Some(0.8 * (1 << 20) as f64));
        for i in 0..64 {
            write(&tier, format!("k{i}").as_bytes(), &[b'v'; 1024])?;
        }
        let delayed = tier.stats.delayed_writes.load(Ordering::Relaxed);
        assert!(delayed > 0, "64 KB at 0.8 MB/s went through unpaced");
        assert!(tier.stats.write_rate.load(Ordering::Relaxed) > 0);
        assert_eq!(
            tier.stats.engine_write_rate.load(Ordering::Relaxed),
            (0.8 * (1 << 20) as f64) as u64
        );
        // Level 0 drained below the slowdown trigger: writers go at full speed again.
        tier.pace_for_engine(EngineSignals {
            l0_files: 4,
            pending_bytes: 0,
        });
        assert_eq!(tier.rate_now(), None);
        assert_eq!(tier.stats.engine_write_rate.load(Ordering::Relaxed), 0);
        for i in 0..64 {
            write(&tier, format!("j{i}").as_bytes(), &[b'v'; 1024])?;
        }
        assert_eq!(tier.stats.delayed_writes.load(Ordering::Relaxed), delayed);
        Ok(())
    }

    #[test]
    fn a_checkpoint_does_not_wait_on_a_family_it_only_moved_table_files_into() -> R {
        let dir = tempfile::tempdir()?;
        with_level_zero_held(dir.path(), |db| {
            let data = db.cf_handle("data").ok_or("no data family")?;
            let id = family_id(data)?;
            let tier = Arc::new(Tier::open(dir.path(), false, 1 << 20, false)?);
            tier.write_files_for(
                vec![super::FileFamily {
                    id,
                    bottom: rocksdb::Options::default(),
                    upper: rocksdb::Options::default(),
                    alone: None,
                }],
                super::FileCompression::Bottom,
            );
            let mut batch = crate::storage::new_batch();
            batch.put_cf(data, b"c", b"new");
            let (_, ops) = pending::decode_batch(batch.data())?;
            tier.write(batch.data(), &ops, None)?;

            // The checkpoint on another thread: a wait fails the test instead of hanging it.
            let families: Families = vec![(0, "default".to_string()), (id, "data".to_string())];
            let (tx, rx) = mpsc::channel();
            let (t, d) = (tier.clone(), db.clone());
            std::thread::spawn(move || {
                let _ = tx.send(t.checkpoint(&d, &families, Ok).map_err(|e| e.to_string()));
            });
            let offset = rx
                .recv_timeout(Duration::from_secs(60))
                .map_err(|_| "the checkpoint waited 60 s for RocksDB's level 0")??;
            assert!(offset > 0);
            assert_eq!(db.get_cf(data, b"c")?.as_deref(), Some(&b"new"[..]));
            assert_eq!(tier.dirty_bytes(), (0, 0));
            Ok(())
        })
    }

    /// The id write batches give family `cf` (as the tier sees it in a decoded batch).
    fn family_id(cf: &impl rocksdb::AsColumnFamilyRef) -> Result<u32, Box<dyn std::error::Error>> {
        let mut probe = crate::storage::new_batch();
        probe.put_cf(cf, b"", b"");
        match pending::decode_batch(probe.data())?.1.first() {
            Some(pending::BatchOp::Put { cf, .. }) => Ok(*cf),
            _ => Err("no family id".into()),
        }
    }

    /// Runs `body` on a database under `dir` whose `data` family has two level-0 files over the
    /// same keys and a compaction of them that cannot end meanwhile (its filter waits): level 0
    /// stays at two files with writes slowed at three, so RocksDB's manual flush of `data`
    /// without `allow_write_stall` would wait for that compaction forever. The compaction is let
    /// go when `body` returns, or the database could not close.
    fn with_level_zero_held(dir: &std::path::Path, body: impl FnOnce(&Arc<DB>) -> R) -> R {
        use std::sync::atomic::AtomicBool;
        let opts = creating();
        let held = Arc::new(AtomicBool::new(true));
        let mut data_opts = rocksdb::Options::default();
        data_opts.set_level_zero_file_num_compaction_trigger(2);
        data_opts.set_level_zero_slowdown_writes_trigger(3);
        data_opts.set_level_zero_stop_writes_trigger(100);
        let hold = held.clone();
        data_opts.set_compaction_filter("held", move |_, _: &[u8], _: &[u8]| {
            while hold.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
            }
            rocksdb::CompactionDecision::Keep
        });
        let cfs = vec![
            rocksdb::ColumnFamilyDescriptor::new("default", rocksdb::Options::default()),
            rocksdb::ColumnFamilyDescriptor::new("data", data_opts),
        ];
        let db = Arc::new(DB::open_cf_descriptors(&opts, dir.join("db"), cfs)?);
        let outcome = (|| -> R {
            let data = db.cf_handle("data").ok_or("no data family")?;
            // Files that did not overlap would be moved down whole, without the filter.
            for _ in 0..2 {
                db.put_cf(data, b"a", b"old")?;
                db.put_cf(data, b"z", b"old")?;
                db.flush_cf(data)?;
            }
            body(&db)
        })();
        held.store(false, Ordering::Release);
        outcome
    }

    #[test]
    fn a_checkpoint_file_name_left_linked_to_a_live_table_by_a_crash_does_not_overwrite_it() -> R {
        let dir = tempfile::tempdir()?;
        let opts = creating();
        let path = dir.path().join("db");
        let db = DB::open_cf(&opts, &path, ["default", "data"])?;
        let data = db.cf_handle("data").ok_or("no data family")?;
        let id = family_id(data)?;
        let tier = Tier::open(dir.path(), false, 1 << 20, false)?;
        tier.write_files_for(
            vec![super::FileFamily {
                id,
                bottom: rocksdb::Options::default(),
                upper: rocksdb::Options::default(),
                alone: None,
            }],
            super::FileCompression::Bottom,
        );
        let families: Families = vec![(0, "default".to_string()), (id, "data".to_string())];
        let put = |k: &[u8], v: &[u8]| -> crate::error::Result<()> {
            let mut batch = crate::storage::new_batch();
            batch.put_cf(data, k, v);
            let (_, ops) = pending::decode_batch(batch.data())?;
            tier.write(batch.data(), &ops, None)
        };
        put(b"a", b"first")?;
        tier.checkpoint(&db, &families, |_| Ok(()))?;
        // As a crash after RocksDB linked the file in and before it removed the old name.
        let live = db.live_files()?;
        let table = live
            .iter()
            .find(|f| f.column_family_name == "data")
            .ok_or("no table file in data")?;
        let table = path.join(table.name.trim_start_matches('/'));
        let left = dir.path().join(format!("tier-checkpoint-{id}.sst.tmp"));
        std::fs::hard_link(&table, &left)?;
        put(b"b", b"second")?;
        tier.checkpoint(&db, &families, |_| Ok(()))?;
        drop(db);
        let db = DB::open_cf(&opts, &path, ["default", "data"])?;
        let data = db.cf_handle("data").ok_or("no data family")?;
        assert_eq!(db.get_cf(data, b"a")?.as_deref(), Some(&b"first"[..]));
        assert_eq!(db.get_cf(data, b"b")?.as_deref(), Some(&b"second"[..]));
        Ok(())
    }

    #[test]
    fn a_slow_checkpoint_slows_writers_before_it_stops_them() -> R {
        let dir = tempfile::tempdir()?;
        let opts = creating();
        let db = Arc::new(DB::open_cf(&opts, dir.path().join("db"), ["default"])?);
        let families: Families = vec![(0, "default".to_string())];
        let limit = 256 << 10;
        let tier = Arc::new(Tier::open(dir.path(), false, limit, false)?);
        tier.slow_checkpoints_ms.store(200, Ordering::Release);
        let checkpointer = Tier::spawn_checkpointer(tier.clone(), db.clone(), families)?;

        // A writer at full speed through six checkpoints: the first (nothing learned yet) paces
        // it from its own age; the next ones are expected to take as long as it, so it is paced
        // to reach the limit about as they end.
        let mut i = 0usize;
        while tier.stats.checkpoints.load(Ordering::Relaxed) < 6 {
            write(&tier, format!("k{i}").as_bytes(), &[b'v'; 1024])?;
            i += 1;
        }
        let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        let (delayed, stopped) = (
            get(&tier.stats.delayed_writes),
            get(&tier.stats.stopped_writes),
        );
        assert!(delayed > 50, "{delayed} writes paced in {i}");
        // The old tier stopped the writer once in every checkpoint after the first.
        assert!(
            stopped < 4,
            "{stopped} writes stopped at the limit, {delayed} paced, in 6 checkpoints"
        );
        assert!(tier.stats.last_checkpoint_took_ms.load(Ordering::Relaxed) >= 200);
        tier.stop();
        checkpointer.join().map_err(|_| "checkpointer panicked")?;
        Ok(())
    }

    #[test]
    fn writers_get_an_error_instead_of_waiting_forever_while_checkpoints_fail() -> R {
        let dir = tempfile::tempdir()?;
        let opts = creating();
        let db = Arc::new(DB::open_cf(&opts, dir.path().join("db"), ["default"])?);
        let families: Families = vec![(0, "default".to_string())];
        let tier = Arc::new(Tier::open(dir.path(), false, 64 << 10, false)?);
        tier.fail_checkpoints.store(true, Ordering::Release);
        let checkpointer = Tier::spawn_checkpointer(tier.clone(), db.clone(), families)?;

        // Run the writes on another thread: a hang fails the test instead of hanging it.
        let (tx, rx) = mpsc::channel();
        let writer = tier.clone();
        std::thread::spawn(move || {
            let _ = tx.send(write_until_refused(&writer, 0, 20_000));
        });
        let refused = rx.recv_timeout(Duration::from_secs(60))?;
        let (at, why) = refused.ok_or("20,000 writes were all taken while checkpoints failed")?;
        assert!(why.contains("No space left on device"), "{why}");
        assert!(tier.last_failure().is_some());
        // Memory stayed bounded: the layer taking writes stopped at the limit.
        let (active, frozen) = tier.dirty_bytes();
        assert!(
            active < (64 << 10) + 2048,
            "active layer {active} bytes after {at} writes"
        );
        assert!(
            frozen > 0,
            "the failed checkpoint's layer is kept for its retry"
        );

        // The disk recovers: a retry writes what was held, and writes are taken again.
        tier.fail_checkpoints.store(false, Ordering::Release);
        let mut taken = false;
        for _ in 0..300 {
            if write(&tier, b"after", b"recovered").is_ok() {
                taken = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(taken, "writes still refused 15 s after the disk recovered");
        assert!(tier.last_failure().is_none());
        // What the first writes put in the tier reached RocksDB.
        assert_eq!(db.get(b"k0")?.as_deref(), Some(&[b'v'; 1024][..]));

        tier.stop();
        checkpointer.join().map_err(|_| "checkpointer panicked")?;
        Ok(())
    }

    #[test]
    fn a_checkpoint_file_that_overlaps_no_table_file_is_built_with_the_alone_options() -> R {
        let dir = tempfile::tempdir()?;
        let opts = creating();
        let db = DB::open_cf(&opts, dir.path().join("db"), ["default", "data"])?;
        let data = db.cf_handle("data").ok_or("no data family")?;
        let id = family_id(data)?;
        // The family's own 4 KiB blocks, and 1 MiB blocks for a file that overlaps nothing.
        let mut alone = rocksdb::Options::default();
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_block_size(1 << 20);
        alone.set_block_based_table_factory(&table);
        let tier = Tier::open(dir.path(), false, 64 << 20, false)?;
        tier.write_files_for(
            vec![super::FileFamily {
                id,
                bottom: rocksdb::Options::default(),
                upper: rocksdb::Options::default(),
                alone: Some(alone),
            }],
            super::FileCompression::Bottom,
        );
        let families: Families = vec![(0, "default".to_string()), (id, "data".to_string())];
        let blocks = || -> std::result::Result<u64, Box<dyn std::error::Error>> {
            let props = db
                .property_value_cf(data, "rocksdb.aggregated-table-properties")?
                .ok_or("no table properties")?;
            let n = props
                .split(';')
                .find_map(|p| p.trim().strip_prefix("# data blocks="))
                .ok_or("no block count")?;
            Ok(n.trim().parse()?)
        };
        // 200 KB of values that do not compress: 50 blocks of 4 KiB, one of 1 MiB.
        let checkpoint_keys = |from: usize, to: usize| -> R {
            let mut batch = crate::storage::new_batch();
            for i in from..to {
                let value: Vec<u8> = (0..200)
                    .map(|j| (i * 31 + j * 7) as u8 ^ (j as u8))
                    .collect();
                batch.put_cf(data, format!("k{i:04}"), value);
            }
            let (_, ops) = pending::decode_batch(batch.data())?;
            tier.write(batch.data(), &ops, None)?;
            tier.checkpoint(&db, &families, |_| Ok(()))?;
            Ok(())
        };
        checkpoint_keys(0, 1000)?;
        let first = blocks()?;
        assert!(
            first <= 2,
            "a file over no other was built with {first} blocks"
        );
        // Over the same keys again: this file overlaps the first and keeps the family's blocks.
        checkpoint_keys(0, 1000)?;
        let second = blocks()? - first;
        assert!(
            second >= 20,
            "a file over another was built with {second} blocks"
        );
        assert_eq!(db.get_cf(data, b"k0999")?.map(|v| v.len()), Some(200));
        Ok(())
    }

    #[test]
    fn a_checkpoint_moves_sorted_table_files_in_after_the_ranges_it_deletes() -> R {
        let dir = tempfile::tempdir()?;
        let opts = creating();
        let db = DB::open_cf(&opts, dir.path().join("db"), ["default", "data"])?;
        let data = db.cf_handle("data").ok_or("no data family")?;
        let id = family_id(data)?;
        // Records RocksDB already holds, some of which the layer deletes by range.
        for k in [&b"a1"[..], b"b1", b"b2", b"c1"] {
            db.put_cf(data, k, b"old")?;
        }
        let tier = Tier::open(dir.path(), false, 1 << 20, false)?;
        tier.write_files_for(
            vec![super::FileFamily {
                id,
                bottom: rocksdb::Options::default(),
                upper: rocksdb::Options::default(),
                alone: None,
            }],
            super::FileCompression::ByLevel,
        );
        let families: Families = vec![(0, "default".to_string()), (id, "data".to_string())];
        let mut batch = crate::storage::new_batch();
        batch.put_cf(data, b"b1", b"before the range");
        batch.delete_range_cf(data, b"b", b"c");
        batch.put_cf(data, b"b2", b"after the range");
        // Written out of key order: the checkpoint sorts them.
        batch.put_cf(data, b"z9", b"new");
        batch.put_cf(data, b"d1", b"new");
        batch.delete_cf(data, b"a1");
        let (_, ops) = pending::decode_batch(batch.data())?;
        tier.write(batch.data(), &ops, None)?;
        tier.checkpoint(&db, &families, |_| Ok(()))?;
        let got = |k: &[u8]| db.get_cf(data, k);
        assert_eq!(got(b"a1")?, None, "a point deletion reached RocksDB");
        assert_eq!(got(b"b1")?, None, "the range deleted a put made before it");
        assert_eq!(got(b"b2")?.as_deref(), Some(&b"after the range"[..]));
        assert_eq!(
            got(b"c1")?.as_deref(),
            Some(&b"old"[..]),
            "outside the range"
        );
        assert_eq!(got(b"d1")?.as_deref(), Some(&b"new"[..]));
        assert_eq!(got(b"z9")?.as_deref(), Some(&b"new"[..]));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".sst.tmp"))
            .collect();
        assert!(leftovers.is_empty(), "the table file was moved, not copied");
        assert!(
            tier.dirty_bytes() == (0, 0),
            "the tier holds nothing after the checkpoint"
        );
        Ok(())
    }
}
