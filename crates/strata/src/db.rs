//! The `Db` handle: opening a data directory, selecting one of its logical databases, and the shared
//! machinery every data-type module uses (reading live metadata, writing batches under key locks, the
//! logical → physical database map behind SWAPDB, and the housekeeping thread for active expiry and
//! the once-a-second WAL sync). Type-specific operations live in their own modules.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use rocksdb::WriteBatch;

use crate::error::{Error, Result};
use crate::keys;
use crate::locks::{Busy, KeyLocks};
use crate::meta::{self, KeyType, Meta};
use crate::storage::{
    Compression, EngineTuning, Storage, StorageOptions, SyncPolicy, CF_EXPIRE, CF_META, DB_MAP_KEY,
};

pub use crate::clock::now_ms;

/// How a data directory is opened.
#[derive(Clone, Debug)]
pub struct Options {
    /// Number of logical databases (1..=256), as Redis's `databases`.
    pub databases: u32,
    /// When writes reach stable storage.
    pub sync: SyncPolicy,
    /// Shared block cache size in bytes.
    pub block_cache_size: usize,
    /// Memtable size per column family in bytes.
    pub write_buffer_size: usize,
    /// Block compression.
    pub compression: Compression,
    /// Run the background cycle that deletes expired keys (on by default).
    pub active_expire: bool,
    /// Largest string a command may build (APPEND, SETRANGE), as Redis's `proto-max-bulk-len`.
    pub max_string_len: u64,
    /// Collect write-ahead-log records in memory until [`Db::flush_wal_buffer`] instead of
    /// writing them to the log file one write call each. A server calls it once per batch of
    /// pipelined commands, before it replies, so an acknowledged write has still reached the
    /// operating system; the housekeeping thread also flushes every 100 ms. With
    /// `SyncPolicy::Always`, writes then do not sync themselves either: a write is durable once
    /// a [`Db::sync_wal_through`] covering it returned (one fsync shared by every write before
    /// it), so call that before acknowledging. Off by default (then every `Always` write syncs
    /// before it returns).
    pub batch_wal_writes: bool,
    /// Bytes of recently written records (metadata, string values, collection fields) kept in
    /// memory, so reads of hot keys skip RocksDB
    /// (0, the default, disables the cache).
    pub hot_cache_size: usize,
    /// The write-back memory tier: with `Some(limit)`, writes are applied in memory and appended
    /// to Strata's own redo log (group-committed per the sync policy), and a background
    /// checkpoint writes them to RocksDB in large batches once the tier holds `limit` bytes (or
    /// a minute after the oldest); a restart replays the log. `None` (the default): every write
    /// goes to RocksDB and its log as it is made. A directory last opened with the tier is
    /// read correctly either way (its log is replayed at open).
    pub write_back: Option<usize>,
    /// Open without writing anything: reads work, every write fails with [`Error::ReadOnly`].
    /// Several read-only handles, and one read-only handle next to a running server, may share a
    /// directory; what they see is the directory as of the moment they opened it. Off by default.
    pub read_only: bool,
    /// Create the directory when it does not exist (on by default). When off, opening a missing
    /// directory fails with [`Error::Missing`] and a directory that is not Strata's with
    /// [`Error::NotStrata`], and nothing is written to either.
    pub create_if_missing: bool,
    /// Writes are refused with [`Error::DiskFull`] while the filesystem of the data directory
    /// has less free space than this (0 turns the check off), so RocksDB never runs out of space
    /// writing its log. Default 256 MiB (16 write buffers).
    pub min_free_disk: u64,
    /// Keep write-ahead-log files this many seconds after their data reached data files, so
    /// replicas that fell behind can catch up from the log (0, the default: keep none unless
    /// `wal_size_limit_mb` is set).
    pub wal_ttl_seconds: u64,
    /// Keep at most about this many megabytes of such log files (0, the default: no size bound,
    /// or none kept when `wal_ttl_seconds` is 0 too).
    pub wal_size_limit_mb: u64,
    /// The size past which a sparse HyperLogLog is converted to dense, as Redis's
    /// `hll-sparse-max-bytes` (default 3000).
    pub hll_sparse_max_bytes: u64,
    /// The engine's layout and background work for data larger than memory (index
    /// partitioning, per-level compression, compaction rate, level-0 triggers, blob files).
    pub tuning: EngineTuning,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            databases: 16,
            sync: SyncPolicy::EverySec,
            block_cache_size: 256 << 20,
            write_buffer_size: 16 << 20,
            compression: Compression::Lz4,
            active_expire: true,
            max_string_len: 512 << 20,
            batch_wal_writes: false,
            hot_cache_size: 0,
            write_back: None,
            read_only: false,
            create_if_missing: true,
            min_free_disk: 256 << 20,
            wal_ttl_seconds: 0,
            wal_size_limit_mb: 0,
            hll_sparse_max_bytes: crate::hll::DEFAULT_SPARSE_MAX_BYTES as u64,
            tuning: EngineTuning::default(),
        }
    }
}

/// Counters the server reports in INFO.
#[derive(Default, Debug)]
pub struct Stats {
    /// Keys deleted because they expired (lazily or by the active cycle).
    pub expired_keys: AtomicU64,
    /// Lookups that found a live key.
    pub keyspace_hits: AtomicU64,
    /// Lookups that found nothing.
    pub keyspace_misses: AtomicU64,
}

pub(crate) struct Inner {
    pub(crate) storage: Storage,
    pub(crate) locks: KeyLocks,
    /// logical database index → physical id used in keys.
    db_map: RwLock<[u8; 256]>,
    pub(crate) databases: u32,
    pub(crate) max_string_len: AtomicU64,
    /// `hll-sparse-max-bytes` (see [`Db::set_hll_sparse_max_bytes`]).
    pub(crate) hll_sparse_max_bytes: AtomicU64,
    /// `stream-node-max-entries` (see [`Db::set_stream_node_max_entries`]).
    pub(crate) stream_node_max_entries: AtomicU64,
    /// The directory follows a leader's log (see [`Db::set_follower`]).
    follower: AtomicBool,
    pub(crate) stats: Stats,
    pub(crate) cursors: Mutex<crate::keyspace::CursorTable>,
    /// When each key was last accessed (OBJECT IDLETIME).
    pub(crate) access: crate::access::AccessClock,
    /// The last key count of each physical database (see `keyspace.rs`).
    pub(crate) key_counts: Mutex<HashMap<u8, crate::keyspace::KeyCount>>,
    version_counter: AtomicU64,
    path: PathBuf,
    stop: AtomicBool,
    /// Whether the housekeeping thread runs the active expiry cycle (see `Db::set_active_expire`).
    pub(crate) active_expire: AtomicBool,
    /// The slowest active expiry cycle since the server last sampled it (LATENCY's
    /// `expire-cycle`), in ms.
    pub(crate) slowest_expire_cycle_ms: AtomicU64,
    /// The active expiry cycle is held back (CLIENT PAUSE, see `Db::hold_expiry`).
    pub(crate) expiry_held: AtomicBool,
    /// Called for every key the active expiry cycle deletes (see [`Db::on_expired`]).
    pub(crate) expired_hook: RwLock<Option<ExpiredHook>>,
}

/// A function told about each expired key: logical database and key.
pub type ExpiredHook = Arc<dyn Fn(u32, &[u8]) + Send + Sync>;

/// A handle on one logical database of an open data directory. Cloning is cheap; all clones share
/// the directory. Operations are synchronous and thread-safe.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let db = strata::Db::open(dir.path())?;
/// db.set(b"greeting", b"hello", strata::SetOptions::default())?;
/// assert_eq!(db.get(b"greeting")?, Some(b"hello".to_vec()));
/// let other = db.select(1)?;
/// assert_eq!(other.get(b"greeting")?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Db {
    pub(crate) inner: Arc<Inner>,
    pub(crate) index: u8,
}

/// Key locks held by [`Db::hold`] until dropped.
pub struct KeyScope<'a>(crate::locks::Scope<'a>);

impl KeyScope<'_> {
    /// Ends the scope but leaves its key locks held by this thread until its next acquisition
    /// of key locks, which takes them over if they cover its keys (in a mode at least as
    /// strong) and releases them first otherwise, or until [`Db::release_lingering`]. For a
    /// server thread running commands: consecutive commands on one key, of one client or
    /// several, take its lock once. The thread must call [`Db::end_batch`] at the end of each
    /// batch of commands and [`Db::release_lingering`] before it sleeps or runs anything that
    /// may wait.
    pub fn linger(self) {
        self.0.linger()
    }
}

impl Db {
    /// Opens (or creates) the data directory at `path` with default options, database 0 selected.
    pub fn open(path: impl AsRef<Path>) -> Result<Db> {
        Db::open_with(path, Options::default())
    }

    /// Opens an existing data directory read-only, as [`Options::read_only`] describes: it works
    /// while a server (or another program) has the directory open for writing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let writer = strata::Db::open(dir.path())?;
    /// writer.set(b"k", b"v", Default::default())?;
    /// writer.flush()?;
    /// let reader = strata::Db::open_read_only(dir.path())?;
    /// assert_eq!(reader.get(b"k")?, Some(b"v".to_vec()));
    /// assert_eq!(reader.set(b"k", b"w", Default::default()), Err(strata::Error::ReadOnly));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Db> {
        Db::open_with(
            path,
            Options {
                read_only: true,
                create_if_missing: false,
                ..Options::default()
            },
        )
    }

    /// Opens (or creates) the data directory at `path`. A directory another process holds open
    /// for writing fails with [`Error::Locked`] (RocksDB's `LOCK` file), never with corruption.
    pub fn open_with(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        if opts.databases == 0 || opts.databases > 256 {
            return Err(Error::DbIndexOutOfRange);
        }
        let storage = Storage::open(
            path.as_ref(),
            &StorageOptions {
                block_cache_size: opts.block_cache_size,
                write_buffer_size: opts.write_buffer_size,
                compression: opts.compression,
                sync: opts.sync,
                batch_wal_writes: opts.batch_wal_writes,
                read_only: opts.read_only,
                create_if_missing: opts.create_if_missing,
                min_free_disk: opts.min_free_disk,
                wal_ttl_seconds: opts.wal_ttl_seconds,
                wal_size_limit_mb: opts.wal_size_limit_mb,
                hot_cache_size: opts.hot_cache_size,
                write_back: opts.write_back,
                tuning: opts.tuning.clone(),
            },
        )?;
        let map = load_db_map(&storage)?;
        // Versions must grow across restarts: start from the clock in microseconds, shifted to leave
        // room for a counter.
        let start = now_ms().saturating_mul(1000) << 8;
        let inner = Arc::new(Inner {
            storage,
            locks: KeyLocks::new(),
            db_map: RwLock::new(map),
            databases: opts.databases,
            max_string_len: AtomicU64::new(opts.max_string_len),
            hll_sparse_max_bytes: AtomicU64::new(opts.hll_sparse_max_bytes),
            stream_node_max_entries: AtomicU64::new(crate::stream::NODE_MAX_ENTRIES),
            follower: AtomicBool::new(false),
            stats: Stats::default(),
            cursors: Mutex::new(crate::keyspace::CursorTable::default()),
            key_counts: Mutex::new(HashMap::new()),
            access: crate::access::AccessClock::new(crate::access::now_secs()),
            version_counter: AtomicU64::new(start),
            path: path.as_ref().to_path_buf(),
            stop: AtomicBool::new(false),
            active_expire: AtomicBool::new(opts.active_expire),
            slowest_expire_cycle_ms: AtomicU64::new(0),
            expiry_held: AtomicBool::new(false),
            expired_hook: RwLock::new(None),
        });
        if !opts.read_only {
            spawn_housekeeping(Arc::downgrade(&inner));
        }
        Ok(Db { inner, index: 0 })
    }

    /// Registers `hook` to be called, on the housekeeping thread and under the key's lock, for
    /// every key the active expiry cycle deletes (a server publishes `expired` keyspace events
    /// from it). Replaces any earlier hook. Keys that merely read as missing because their time
    /// passed are reported when the cycle deletes them, within about 100 ms.
    pub fn on_expired(&self, hook: ExpiredHook) {
        *self
            .inner
            .expired_hook
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(hook);
    }

    /// A handle on logical database `index` of the same directory.
    pub fn select(&self, index: u32) -> Result<Db> {
        if index >= self.inner.databases {
            return Err(Error::DbIndexOutOfRange);
        }
        Ok(Db {
            inner: self.inner.clone(),
            index: index as u8,
        })
    }

    /// The logical database this handle addresses.
    pub fn index(&self) -> u32 {
        self.index as u32
    }

    /// Holds the key locks of `keys` (`(logical database, key)` pairs) until the returned
    /// [`KeyScope`] is dropped, so that a sequence of operations on this thread is atomic with
    /// respect to every other caller: writers of those keys wait, and (with `exclusive`) so do
    /// readers that take locks. Operations on this thread inside the scope skip the stripes it
    /// holds; scopes nest. The scope must be dropped on the thread that took it, and an
    /// operation on a key outside the scope may deadlock with another scope holder, so list
    /// every key up front.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// {
    ///     let _scope = db.hold([(0, &b"from"[..]), (0, &b"to"[..])], true);
    ///     db.incr_by(b"from", -5)?;
    ///     db.incr_by(b"to", 5)?;
    /// } // nobody saw one of the two changes without the other
    /// assert_eq!(db.get(b"to")?.as_deref(), Some(&b"5"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hold<'k>(
        &self,
        keys: impl IntoIterator<Item = (u32, &'k [u8])>,
        exclusive: bool,
    ) -> KeyScope<'_> {
        KeyScope(
            self.inner
                .locks
                .hold(keys.into_iter().map(|(db, k)| (db as u8, k)), exclusive),
        )
    }

    /// Releases the key locks this thread kept with [`KeyScope::linger`], if any.
    pub fn release_lingering(&self) {
        self.inner.locks.release_lingering()
    }

    /// A batch of this thread's commands ended: its lingering key locks are released once they
    /// have outlived a few batches, kept for the next batch otherwise.
    pub fn end_batch(&self) {
        self.inner.locks.end_batch()
    }

    /// Like [`Db::hold`], but gives up with [`Busy`] (holding nothing) instead of waiting for a
    /// key lock whose holder has declared itself busy ([`Db::declare_busy`]), also when it does
    /// so while this call waits. The server takes its locks this way, so a client never waits
    /// behind a script that runs past `busy-reply-threshold`.
    pub fn hold_unless_busy<'k>(
        &self,
        keys: impl IntoIterator<Item = (u32, &'k [u8])>,
        exclusive: bool,
    ) -> std::result::Result<KeyScope<'_>, Busy> {
        self.inner
            .locks
            .hold_unless_busy(keys.into_iter().map(|(db, k)| (db as u8, k)), exclusive)
            .map(KeyScope)
    }

    /// Like [`Db::hold`], for a thread that may already hold a scope and reaches keys it did not
    /// list up front: it never blocks while holding (which could deadlock); a key lock that stays
    /// taken for longer than `patience` is skipped. Returns the scope and whether every lock was
    /// taken, or [`Busy`] when a lock's holder has declared itself busy.
    pub fn hold_patiently<'k>(
        &self,
        keys: impl IntoIterator<Item = (u32, &'k [u8])>,
        exclusive: bool,
        patience: std::time::Duration,
    ) -> std::result::Result<(KeyScope<'_>, bool), Busy> {
        let (scope, complete) = self.inner.locks.hold_patiently(
            keys.into_iter().map(|(db, k)| (db as u8, k)),
            exclusive,
            patience,
        )?;
        Ok((KeyScope(scope), complete))
    }

    /// Runs `f` in an atomic scope: the writes it makes on this thread, through this handle or
    /// any other on the same directory, are held back and written as one RocksDB write batch
    /// (one write-ahead-log record, synced as the sync policy says) when it returns. A crash or
    /// a power cut therefore keeps all of them or none, and other threads see all of them or
    /// none; reads inside `f` see its own writes. Scopes nest: an inner one joins the outer,
    /// which commits. Returns `f`'s result and the commit's; when the commit fails (for example
    /// [`Error::DiskFull`]) none of `f`'s writes happened, whatever `f` returned. If `f` panics,
    /// its writes are dropped.
    ///
    /// Other threads read the last committed state meanwhile, so hold the locks of the keys `f`
    /// writes ([`Db::hold`]) around the scope, as a transaction does.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open(dir.path())?;
    /// let (total, committed) = db.atomically(|| -> strata::Result<i64> {
    ///     db.incr_by(b"a", 10)?;
    ///     db.incr_by(b"b", 20)?;
    ///     Ok(db.incr_by(b"a", 1)? + db.incr_by(b"b", 0)?) // sees its own writes
    /// });
    /// committed?;
    /// assert_eq!(total?, 31);
    /// assert_eq!(db.get(b"a")?.as_deref(), Some(&b"11"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn atomically<T>(&self, f: impl FnOnce() -> T) -> (T, Result<()>) {
        struct Open<'a>(&'a Storage, bool);
        impl Drop for Open<'_> {
            fn drop(&mut self) {
                if self.1 {
                    let _ = self.0.end_scope(false); // f panicked: drop its writes
                }
            }
        }
        let storage = &self.inner.storage;
        let outermost = storage.begin_scope();
        let mut open = Open(storage, true);
        let out = f();
        open.1 = false;
        let committed = storage.end_scope(true);
        if committed.is_err() && outermost {
            // SWAPDB changed the map in memory before its write was committed.
            if let Err(e) = self.reload_db_map() {
                return (out, Err(e));
            }
        }
        (out, committed)
    }

    /// Holds every key lock of every database exclusively until the scope is dropped (a
    /// transaction that empties or swaps whole databases).
    pub fn hold_all(&self) -> KeyScope<'_> {
        KeyScope(self.inner.locks.hold_all())
    }

    /// [`Db::hold_all`] that gives up with [`Busy`] as [`Db::hold_unless_busy`] does.
    pub fn hold_all_unless_busy(&self) -> std::result::Result<KeyScope<'_>, Busy> {
        self.inner.locks.hold_all_unless_busy().map(KeyScope)
    }

    /// Declares this thread a busy holder: the key locks it holds through scopes are marked with
    /// `tag` (not 0), so [`Db::hold_unless_busy`] callers wanting them get `Busy(tag)` at once,
    /// and so do those waiting for them now. Lasts until [`Db::end_busy`] or the scopes end.
    pub fn declare_busy(&self, tag: u8) {
        self.inner.locks.declare_busy(tag)
    }

    /// Ends [`Db::declare_busy`] for the key locks this thread holds.
    pub fn end_busy(&self) {
        self.inner.locks.end_busy()
    }

    /// Reads a server-level record kept beside the data (`strata:aux:<name>` in the default
    /// column family; the server keeps its FUNCTION libraries there).
    pub fn aux_get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.inner
            .storage
            .get("default", format!("strata:aux:{name}").as_bytes())
    }

    /// Writes a server-level record (see [`Db::aux_get`]) with the current sync policy.
    pub fn aux_put(&self, name: &str, value: &[u8]) -> Result<()> {
        let mut batch = crate::storage::new_batch();
        batch.put(format!("strata:aux:{name}").as_bytes(), value);
        self.inner.storage.write(batch)
    }

    /// Number of logical databases.
    pub fn databases(&self) -> u32 {
        self.inner.databases
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Whether the directory was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.inner.storage.is_read_only()
    }

    /// The current sync policy.
    pub fn sync_policy(&self) -> SyncPolicy {
        self.inner.storage.sync_policy()
    }

    /// Changes the sync policy at runtime.
    pub fn set_sync_policy(&self, policy: SyncPolicy) {
        self.inner.storage.set_sync_policy(policy)
    }

    /// Marks the directory as following a leader's log (a replica): operations that would write
    /// on their own accord (PFCOUNT storing the cardinality it computed in the HyperLogLog's
    /// cache) leave the data alone, so it changes only as the leader's stream says.
    pub fn set_follower(&self, on: bool) {
        self.inner.follower.store(on, Ordering::Relaxed)
    }

    /// Whether [`Db::set_follower`] is on.
    pub fn is_follower(&self) -> bool {
        self.inner.follower.load(Ordering::Relaxed)
    }

    /// Changes the largest string APPEND/SETRANGE may build.
    pub fn set_max_string_len(&self, len: u64) {
        self.inner.max_string_len.store(len, Ordering::Relaxed)
    }

    /// How many write batches have been applied since open; compare two readings to tell whether
    /// [`Db::flush_wal_buffer`] has anything to do.
    pub fn write_count(&self) -> u64 {
        self.inner.storage.write_count()
    }

    /// How long a client that owes the write-back tier's pace until `due` (from
    /// [`crate::defer_write_pace`] around its command) sleeps before its next command; `None`
    /// once it may go on (its turn came, or writers are no longer paced). Sleep and ask again.
    pub fn write_pace_nap(&self, due: std::time::Instant) -> Option<std::time::Duration> {
        self.inner.storage.write_pace_nap(due)
    }

    /// Whether writes are refused because free disk space is below `Options::min_free_disk`.
    pub fn disk_full(&self) -> bool {
        self.inner.storage.disk_full()
    }

    /// Whether writes go through the write-back memory tier (see `Options::write_back`).
    pub fn write_back(&self) -> bool {
        self.inner.storage.write_back()
    }

    /// The write-back tier's figures for INFO, if it is on: bytes held (taking writes, being
    /// checkpointed), checkpoints done, bytes they wrote, when the last ended (Unix ms), records
    /// replayed from the redo log at open.
    pub fn tier_figures(&self) -> Option<[u64; 6]> {
        self.inner.storage.tier_figures()
    }

    /// The write-back tier's writer pacing for INFO, if it is on: the rate writers are paced
    /// at now (bytes/s, 0: not paced), writes paced and their µs of waiting, writes stopped
    /// (the tier full) and their µs, how long the last checkpoint took (ms), and the part of
    /// the rate RocksDB's backlog sets (bytes/s, 0: RocksDB is not behind).
    pub fn tier_pace(&self) -> Option<[u64; 7]> {
        self.inner.storage.tier_pace()
    }

    /// Why the write-back tier's last checkpoint failed, while none has succeeded since
    /// (writes are refused meanwhile once the tier holds twice its dirty limit).
    pub fn tier_failure(&self) -> Option<String> {
        self.inner.storage.tier_failure()
    }

    /// Writes the buffered WAL records to the log file (see `Options::batch_wal_writes`).
    pub fn flush_wal_buffer(&self) -> Result<()> {
        self.inner.storage.flush_wal_buffer()
    }

    /// Makes the first `writes` writes (by [`Db::write_count`]) durable, syncing the log unless
    /// a sync already covered them (see `Options::batch_wal_writes`).
    pub fn sync_wal_through(&self, writes: u64) -> Result<()> {
        self.inner.storage.sync_wal_through(writes)
    }

    /// Changes how many bytes of archived write-ahead log are kept for replicas (Redis's
    /// `repl-backlog-size`; see `Options::wal_size_limit_mb`).
    pub fn set_wal_archive_limit(&self, bytes: u64) {
        self.inner.storage.set_wal_archive_limit(bytes)
    }

    /// Counters for INFO.
    pub fn stats(&self) -> &Stats {
        &self.inner.stats
    }

    /// Bulk-load mode (`strata import`): while on, writes skip the write-ahead log, which halves
    /// what a large load writes, and are durable only after [`Db::flush`]. A crash meanwhile
    /// loses what was not flushed, and the column families flush separately, so a key can be
    /// left partly written: only for a load that is simply run again after a crash (an import
    /// replaces the keys it writes). The memtables are larger meanwhile (64 MiB a family), which
    /// saves flush and compaction work.
    pub fn set_bulk_load(&self, on: bool) {
        self.inner.storage.set_bulk_load(on)
    }

    /// Syncs the WAL and flushes memtables: call before a clean shutdown.
    pub fn flush(&self) -> Result<()> {
        self.inner.storage.flush_all()
    }

    /// Writes a consistent snapshot of the whole directory to `dest` (which must not exist yet).
    pub fn checkpoint(&self, dest: impl AsRef<Path>) -> Result<()> {
        self.inner.storage.checkpoint(dest.as_ref())
    }

    /// Compacts all data now, reclaiming the space of deleted and expired records.
    pub fn compact(&self) {
        self.inner.storage.compact_all()
    }

    /// An approximate figure from the engine (e.g. `rocksdb.total-sst-files-size`), summed over families.
    pub fn engine_property(&self, name: &str) -> u64 {
        self.inner.storage.property_sum(name)
    }

    /// Stops the housekeeping thread; the directory closes when the last handle is dropped.
    pub fn shutdown(&self) {
        self.inner.stop.store(true, Ordering::Relaxed);
    }

    // ----- shared machinery for the type modules -----

    /// Physical id of this handle's logical database.
    pub(crate) fn phys(&self) -> u8 {
        self.phys_of(self.index)
    }

    pub(crate) fn phys_of(&self, logical: u8) -> u8 {
        match self.inner.db_map.read() {
            Ok(m) => m[logical as usize],
            Err(p) => p.into_inner()[logical as usize],
        }
    }

    /// The logical → physical database map as it stands.
    pub(crate) fn db_map(&self) -> [u8; 256] {
        match self.inner.db_map.read() {
            Ok(m) => *m,
            Err(p) => *p.into_inner(),
        }
    }

    /// The logical database currently mapped to physical id `phys`.
    pub(crate) fn logical_of(&self, phys: u8) -> Option<u8> {
        self.db_map()
            .iter()
            .take(self.inner.databases as usize)
            .position(|&p| p == phys)
            .map(|i| i as u8)
    }

    pub(crate) fn meta_key(&self, key: &[u8]) -> Vec<u8> {
        keys::meta_key(self.phys(), key)
    }

    /// A fresh collection version, unique for the life of the directory.
    pub(crate) fn next_version(&self) -> u64 {
        self.inner.version_counter.fetch_add(1, Ordering::Relaxed)
    }

    /// The live (not expired) metadata of `key`, raw. Expired keys read as missing.
    pub(crate) fn live_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let raw = self.inner.storage.get(CF_META, &self.meta_key(key))?;
        Ok(match raw {
            Some(r) => {
                let exp = meta::expire_of(&r);
                if exp != 0 && exp <= now_ms() {
                    None
                } else {
                    Some(r)
                }
            }
            None => None,
        })
    }

    /// `f` applied to the live (not expired) metadata record of `key` where it lies, without
    /// copying it; `None` when the key is missing or expired. `f` may run under a cache lock:
    /// keep it short. The clock is read only for a record with an expiry (as in
    /// [`Db::live_raw`]): most have none, and the read is a visible share of a point command.
    pub(crate) fn with_live_record<T>(
        &self,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>> {
        let found = self
            .inner
            .storage
            .with_pinned(CF_META, &self.meta_key(key), |r| {
                let exp = meta::expire_of(r);
                (exp == 0 || exp > now_ms()).then(|| f(r))
            })?;
        Ok(found.flatten())
    }

    /// The live metadata of `key`, decoded.
    pub(crate) fn live_meta(&self, key: &[u8]) -> Result<Option<Meta>> {
        self.live_raw(key)?.map(|r| Meta::decode(&r)).transpose()
    }

    /// Live metadata that must be of type `kind` (WRONGTYPE otherwise).
    pub(crate) fn live_meta_of(&self, key: &[u8], kind: KeyType) -> Result<Option<Meta>> {
        match self.live_meta(key)? {
            Some(m) if m.kind != kind => Err(Error::WrongType),
            other => Ok(other),
        }
    }

    pub(crate) fn count_lookup(&self, hit: bool) {
        let c = if hit {
            &self.inner.stats.keyspace_hits
        } else {
            &self.inner.stats.keyspace_misses
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds the writes that store `m` under `key` (metadata plus expiry index entry) to `batch`.
    pub(crate) fn put_meta(&self, batch: &mut WriteBatch, key: &[u8], m: &Meta) {
        self.put_meta_flagged(
            batch,
            self.phys(),
            key,
            m.kind,
            m.flags_byte(),
            m.expire_ms,
            &m.body,
        );
    }

    pub(crate) fn put_meta_raw(
        &self,
        batch: &mut WriteBatch,
        phys: u8,
        key: &[u8],
        kind: KeyType,
        expire_ms: u64,
        body: &[u8],
    ) {
        self.put_meta_flagged(batch, phys, key, kind, 0, expire_ms, body);
    }

    /// Like [`Db::put_meta_raw`] with flags (see `meta::FLAG_RAW_STRING`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn put_meta_flagged(
        &self,
        batch: &mut WriteBatch,
        phys: u8,
        key: &[u8],
        kind: KeyType,
        flags: u8,
        expire_ms: u64,
        body: &[u8],
    ) {
        let s = &self.inner.storage;
        let mk = keys::meta_key(phys, key);
        batch.put_cf(
            s.cf(CF_META),
            mk,
            meta::encode_flagged(kind, flags, expire_ms, body),
        );
        if expire_ms != 0 {
            batch.put_cf(s.cf(CF_EXPIRE), keys::expire_key(expire_ms, phys, key), []);
        }
    }

    /// Like [`Db::put_meta_flagged`] for a record already encoded (header included): the bit
    /// commands edit a string's record in place and store it without re-encoding it.
    pub(crate) fn put_meta_record(&self, batch: &mut WriteBatch, key: &[u8], record: &[u8]) {
        let s = &self.inner.storage;
        let phys = self.phys();
        batch.put_cf(s.cf(CF_META), keys::meta_key(phys, key), record);
        let expire_ms = meta::expire_of(record);
        if expire_ms != 0 {
            batch.put_cf(s.cf(CF_EXPIRE), keys::expire_key(expire_ms, phys, key), []);
        }
    }

    /// Adds the deletion of `key`'s metadata to `batch`. Sub-keys of collections are left for the
    /// compaction filter; the expiry index entry, if any, is dropped by the expiry cycle.
    pub(crate) fn delete_meta(&self, batch: &mut WriteBatch, phys: u8, key: &[u8]) {
        let s = &self.inner.storage;
        batch.delete_cf(s.cf(CF_META), keys::meta_key(phys, key));
    }

    pub(crate) fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.storage.write(batch)
    }

    pub(crate) fn storage(&self) -> &Storage {
        &self.inner.storage
    }

    /// Reads the database map again from disk (after a failed atomic commit, and on a replica
    /// after applying its leader's SWAPDB).
    pub(crate) fn reload_db_map(&self) -> Result<()> {
        let map = load_db_map(&self.inner.storage)?;
        *self.inner.db_map.write().unwrap_or_else(|p| p.into_inner()) = map;
        Ok(())
    }

    /// Swaps two logical databases (SWAPDB). The caller holds every key lock.
    pub(crate) fn swap_map(&self, a: u8, b: u8) -> Result<()> {
        let mut map = match self.inner.db_map.write() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        let mut next = *map;
        next.swap(a as usize, b as usize);
        let mut batch = crate::storage::new_batch();
        batch.put(DB_MAP_KEY, next);
        self.inner.storage.write(batch)?;
        *map = next;
        Ok(())
    }
}

/// The logical → physical database map as stored (identity when never swapped).
fn load_db_map(storage: &Storage) -> Result<[u8; 256]> {
    let mut map = [0u8; 256];
    for (i, slot) in map.iter_mut().enumerate() {
        *slot = i as u8;
    }
    if let Some(saved) = storage.get("default", DB_MAP_KEY)? {
        if saved.len() != 256 {
            return Err(Error::Corrupt("database map is not 256 bytes".into()));
        }
        map.copy_from_slice(&saved);
    }
    Ok(map)
}

fn spawn_housekeeping(inner: Weak<Inner>) {
    let spawned = std::thread::Builder::new()
        .name("strata-housekeeping".into())
        .spawn(move || {
            let mut last_sync = std::time::Instant::now();
            let mut flushed_at = 0;
            loop {
                std::thread::sleep(Duration::from_millis(100));
                let Some(inner) = inner.upgrade() else { return };
                if inner.stop.load(Ordering::Relaxed) {
                    return;
                }
                // Records buffered by writers that never flushed (background deletes, library
                // users) reach the log within 100 ms.
                let count = inner.storage.write_count();
                if count != flushed_at {
                    flushed_at = count;
                    let _ = inner.storage.flush_wal_buffer();
                }
                // Free space is looked up even when nobody writes, so the state is current.
                inner.storage.check_disk();
                if last_sync.elapsed() >= Duration::from_secs(1) {
                    last_sync = std::time::Instant::now();
                    if inner.storage.sync_policy() == SyncPolicy::EverySec {
                        // A failed sync is retried next second; writes themselves report errors.
                        let _ = inner.storage.sync_wal();
                    }
                    inner.storage.prune_wal_archive();
                }
                if inner.active_expire.load(Ordering::Relaxed)
                    && !inner.expiry_held.load(Ordering::Relaxed)
                {
                    let db = Db { inner, index: 0 };
                    let started = std::time::Instant::now();
                    let _ = crate::expire::active_cycle(&db, Duration::from_millis(25));
                    db.inner
                        .slowest_expire_cycle_ms
                        .fetch_max(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                }
            }
        });
    // Without the thread the database still works (lazy expiry); nothing to do on failure.
    drop(spawned);
}
