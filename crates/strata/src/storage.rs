//! The RocksDB wrapper: opening a data directory with Strata's column families and tuning, the
//! compaction filters that reclaim expired and orphaned records, the write path with its sync
//! policy, and the atomic scopes of `pending.rs` (a thread's writes held back and committed as one
//! batch; every read of that thread sees them). Everything that names a RocksDB type lives here
//! or in `pending.rs`; the rest of the crate sees `Storage`.

use std::cell::RefCell;
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use rocksdb::compaction_filter::{CompactionFilter, Decision};
use rocksdb::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor,
    DBCompressionType, DBRecoveryMode, DataBlockIndexType, MemtableFactory,
    Options as RocksOptions, ReadOptions, SliceTransform, WriteBatch, WriteOptions, DB,
};

use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::hot::{HotCache, HotFamily};
use crate::keys;
use crate::layer::{Lookup, Source, Stack};
use crate::meta;
use crate::pending::{self, BatchOp, IterBounds, Pending, StorageIter};
use crate::tier::{
    EngineLimits, Families, FileCompression, FileFamily, Found, Tier, TierView, OFFSET_KEY,
};

/// Column family holding one metadata record per user key.
pub const CF_META: &str = "meta";
/// Column family holding collection sub-keys (hash fields, set members, list items, zset members).
pub const CF_DATA: &str = "data";
/// Column family holding sorted-set entries ordered by score.
pub const CF_ZSCORE: &str = "zscore";
/// Column family indexing keys by expiry deadline.
pub const CF_EXPIRE: &str = "expire";
/// Key in the default column family holding the logical → physical database map (SWAPDB).
pub const DB_MAP_KEY: &[u8] = b"strata:dbmap";
/// Key in the default column family holding the on-disk format version.
pub const FORMAT_KEY: &[u8] = b"strata:format";
/// The on-disk format version this build writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Length of the prefix the `meta` family's prefix extractor takes (`[db][slot]`).
const META_PREFIX_LEN: usize = 3;

/// Bounds of an iteration over one column family ([`Storage::iter`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct IterOptions {
    /// Keys before this are not returned.
    pub lower: Option<Vec<u8>>,
    /// Keys at or after this are not returned.
    pub upper: Option<Vec<u8>>,
    /// Only keys sharing the seek target's `[db][slot]` prefix (`meta` only).
    pub prefix_same_as_start: bool,
}

/// An atomic scope open on this thread (see `pending.rs`).
struct OpenScope {
    /// The `Storage` it belongs to (its address).
    storage: usize,
    /// Scopes nest: only the outermost one commits.
    depth: u32,
    pending: Rc<RefCell<Pending>>,
}

thread_local! {
    /// The atomic scopes open on this thread, one per `Storage` at most.
    static SCOPES: RefCell<Vec<OpenScope>> = const { RefCell::new(Vec::new()) };
}

/// When writes reach stable storage, as Redis's `appendfsync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync the write-ahead log before acknowledging each write.
    Always,
    /// fsync the write-ahead log once a second in the background.
    EverySec,
    /// Leave flushing to the operating system.
    No,
}

impl SyncPolicy {
    fn to_u8(self) -> u8 {
        match self {
            SyncPolicy::Always => 0,
            SyncPolicy::EverySec => 1,
            SyncPolicy::No => 2,
        }
    }
    fn from_u8(v: u8) -> SyncPolicy {
        match v {
            0 => SyncPolicy::Always,
            1 => SyncPolicy::EverySec,
            _ => SyncPolicy::No,
        }
    }
}

/// Block compression for data files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// No compression.
    None,
    /// LZ4 (fast; the default).
    Lz4,
    /// Zstandard (smaller, a little slower).
    Zstd,
}

/// How the engine lays out and maintains data that does not fit in memory (docs/architecture.md,
/// "Cold data"). The defaults are Strata's earlier settings (RocksDB's values): `bench/cold.py`
/// has not shown yet that any knob helps. Every field is a server directive of that name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineTuning {
    /// Index and filter blocks split in partitions read on demand, their top level pinned in
    /// the block cache (a point read then needs no large index block in the cache).
    pub partitioned_index: bool,
    /// Index and filter blocks go to the block cache's high-priority pool, so data blocks are
    /// evicted first.
    pub index_high_priority: bool,
    /// The first this many levels (from level 0) are written without compression; the levels
    /// below them use the `compression` of the options and the last one zstd (with dynamic
    /// level sizes, "level 1" is the level level 0 compacts into).
    pub uncompressed_levels: u32,
    /// Bytes of samples zstd trains a dictionary from, per file of the last level (0: none).
    pub zstd_dictionary_bytes: u32,
    /// Flush and compaction writes are limited to a rate RocksDB tunes between a twentieth of
    /// this and this many bytes per second (0: no limit).
    pub compaction_rate_limit: u64,
    /// Flushes and compactions read and write with direct I/O (they then do not evict the
    /// pages reads use from the page cache).
    pub direct_io_background: bool,
    /// Reads of table files use direct I/O: the block cache is their only cache, and a read
    /// costs no page-cache insertion (nor, in a memory group, the reclaim of another page).
    pub direct_reads: bool,
    /// Flushes and compactions that may run at once.
    pub background_jobs: u32,
    /// Writes are slowed down once level 0 holds this many files.
    pub l0_slowdown_writes_trigger: u32,
    /// Writes stop once level 0 holds this many files.
    pub l0_stop_writes_trigger: u32,
    /// Values of at least this many bytes are stored in blob files, apart from the keys (0:
    /// never); the blob files' garbage is collected as compaction rewrites the oldest of them.
    pub blob_min_size: u64,
}

impl Default for EngineTuning {
    fn default() -> Self {
        EngineTuning {
            partitioned_index: false,
            index_high_priority: false,
            uncompressed_levels: 0,
            zstd_dictionary_bytes: 0,
            compaction_rate_limit: 0,
            direct_io_background: false,
            direct_reads: false,
            background_jobs: 2,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            blob_min_size: 0,
        }
    }
}

/// Storage tuning, a subset of [`crate::Options`].
#[derive(Clone, Debug)]
pub struct StorageOptions {
    /// Shared block cache size in bytes.
    pub block_cache_size: usize,
    /// Memtable size per column family in bytes.
    pub write_buffer_size: usize,
    /// Block compression.
    pub compression: Compression,
    /// Initial sync policy.
    pub sync: SyncPolicy,
    /// Collect WAL records in memory until [`Storage::flush_wal_buffer`] (see `Options`).
    pub batch_wal_writes: bool,
    /// Open without writing anything (see `Options::read_only`).
    pub read_only: bool,
    /// Create the directory when it does not exist (see `Options::create_if_missing`).
    pub create_if_missing: bool,
    /// Refuse writes while the data directory's filesystem has less free space (see `Options`).
    pub min_free_disk: u64,
    /// Seconds to keep obsolete log files for replicas (see `Options::wal_ttl_seconds`).
    pub wal_ttl_seconds: u64,
    /// Megabytes of obsolete log files to keep (see `Options::wal_size_limit_mb`).
    pub wal_size_limit_mb: u64,
    /// Bytes of recently written `meta` and `data` records kept in memory (see `hot.rs`); 0: none.
    pub hot_cache_size: usize,
    /// With `Some(limit)`, writes go to the write-back tier (`tier.rs`), which checkpoints them
    /// to RocksDB once it holds `limit` bytes; with `None`, straight to RocksDB.
    pub write_back: Option<usize>,
    /// Layout and background work for data larger than memory.
    pub tuning: EngineTuning,
}

/// An open data directory.
pub struct Storage {
    db: Arc<DB>,
    read_only: bool,
    sync: AtomicU8,
    batch_wal_writes: bool,
    /// Writes skip RocksDB's write-ahead log (a bulk load; see [`Storage::set_bulk_load`]).
    bulk_load: AtomicBool,
    writes: AtomicU64,
    /// The data directory, for free-space checks.
    path: PathBuf,
    /// Writes are refused while free space is below this (0: never checked).
    min_free_disk: u64,
    /// Whether free space was last found below `min_free_disk` (writes refused).
    disk_full: AtomicBool,
    /// Bytes of write batches applied since free space was last checked.
    written_since_check: AtomicU64,
    /// Column family ids as write batches encode them: meta, data, zscore, expire.
    cf_ids: [u32; 4],
    /// The memtable size the families were opened with.
    write_buffer_size: usize,
    /// Archived log files (RocksDB's, and the write-back tier's redo segments) beyond this many
    /// bytes are deleted, oldest first (0: none kept).
    wal_archive_limit: AtomicU64,
    /// Archived redo segments older than this many seconds are deleted (0: no age limit).
    redo_archive_ttl: u64,
    /// `write_count` when the log was last synced by [`Storage::sync_wal_through`].
    synced: AtomicU64,
    /// Held while syncing the log, so concurrent callers share one fsync (group commit).
    sync_lock: parking_lot::Mutex<()>,
    /// Recently written records of `meta` and of `data` (hash fields, set members, list items,
    /// zset scores), two families sharing one budget (see `hot.rs`). With the write-back tier,
    /// each checkpoint hands it the layer it retires.
    hot: Arc<HotCache>,
    /// Bumped before a checkpoint hands a retired layer to the hot-record cache and before the
    /// cache is emptied: a read that fills the cache with what it found in RocksDB
    /// ([`Storage::with_pinned`]) takes the entry back out when this moved while it read.
    cache_changes: Arc<AtomicU64>,
    /// The write-back tier, when writes go through one (or a redo log was found at open).
    tier: Option<Arc<Tier>>,
    /// The tier's checkpointer thread.
    checkpointer: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Every column family, by write-batch id and name (what a checkpoint writes and flushes).
    families: Families,
    /// Per physical database: a count of the committed writes that changed its `meta` records
    /// (see [`Storage::meta_generation`]).
    meta_generations: Box<[AtomicU64]>,
    /// Tests: microseconds a multi-key read waits between two keys (a writer's window).
    #[cfg(test)]
    read_pause_us: AtomicU64,
    /// Tests: milliseconds a point read waits between its RocksDB read and its cache fill.
    #[cfg(test)]
    fill_pause_ms: AtomicU64,
}

/// The physical databases a write batch changes the `meta` records of (a 256-bit set).
#[derive(Default)]
struct DbSet([u64; 4]);

impl DbSet {
    fn add(&mut self, phys: u8) {
        self.0[usize::from(phys >> 6)] |= 1 << (phys & 63);
    }
    fn add_all(&mut self) {
        self.0 = [u64::MAX; 4];
    }
    /// The physical databases in the set, in order.
    fn each(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(word, &bits)| {
            let mut left = bits;
            std::iter::from_fn(move || {
                let bit = (left != 0).then(|| left.trailing_zeros() as usize)?;
                left &= left - 1;
                Some(word * 64 + bit)
            })
        })
    }
}

/// Memtable size of each family during a bulk load ([`Storage::set_bulk_load`]), when the
/// configured one is smaller.
const BULK_WRITE_BUFFER_SIZE: usize = 64 << 20;

/// Write batches of at most this many records fill the hot-record cache; larger ones (bulk
/// loads, big MSETs and transactions) only invalidate it, so they do not flood it.
const HOT_BATCH_MAX: usize = 64;

/// An empty write batch with room for a typical command's records. RocksDB's own starts in a
/// 15-byte inline string and reallocates as each record is added: a few copies and allocations
/// per command (3% of LPUSH's CPU in a profile).
pub(crate) fn new_batch() -> WriteBatch {
    WriteBatch::with_capacity_bytes(BATCH_START_BYTES)
}

/// The bytes [`new_batch`] reserves: two records of a collection command with a short value.
const BATCH_START_BYTES: usize = 512;

fn rocks_compression(c: Compression) -> DBCompressionType {
    match c {
        Compression::None => DBCompressionType::None,
        Compression::Lz4 => DBCompressionType::Lz4,
        Compression::Zstd => DBCompressionType::Zstd,
    }
}

/// The compression of the write-back tier's checkpoint files (A/B: STRATA_CHECKPOINT_COMPRESSION
/// = bottom, upper or by-level).
fn checkpoint_file_compression() -> FileCompression {
    match std::env::var("STRATA_CHECKPOINT_COMPRESSION").as_deref() {
        Ok("upper") => FileCompression::Upper,
        Ok("by-level") => FileCompression::ByLevel,
        _ => FileCompression::Bottom,
    }
}

/// The options of a `data` family checkpoint table file that overlaps no table file of the
/// family (`tier::FileFamily::alone`): 16 KiB blocks, or `STRATA_CHECKPOINT_BLOCK=<bytes>` read
/// at open (0: the family's own 4 KiB, for A/B runs). Measured (docs/architecture.md, "Streams
/// on the write path", seventh and eighth passes): 16 KiB blocks for every checkpoint file took
/// about 30% off the checkpointer's CPU per XADD and 16.0 → 11.1 table bytes per stream entry
/// (zstd's fixed cost per block), but HSET into one large hash cost ~35% more, its point reads
/// of fields decompressing 4× larger blocks from level-0 files. A file that overlaps nothing
/// goes to the last level instead (a stream's entries, whose IDs grow), so only such files
/// get them.
fn checkpoint_alone_file_options(opts: &StorageOptions, cache: &Cache) -> Option<RocksOptions> {
    let block = match std::env::var("STRATA_CHECKPOINT_BLOCK") {
        Ok(v) => v.parse::<usize>().ok(),
        Err(_) => Some(16 << 10),
    }
    .filter(|&b| b > 0)?;
    let (mut o, mut b) = cf_options(opts, cache, true);
    b.set_block_size(block);
    o.set_block_based_table_factory(&b);
    Some(o)
}

fn cf_options(
    opts: &StorageOptions,
    cache: &Cache,
    whole_key_bloom: bool,
) -> (RocksOptions, BlockBasedOptions) {
    let t = &opts.tuning;
    let mut o = RocksOptions::default();
    o.set_write_buffer_size(opts.write_buffer_size);
    o.set_max_write_buffer_number(3);
    let compression = rocks_compression(opts.compression);
    o.set_compression_type(compression);
    if t.uncompressed_levels > 0 {
        let per_level: Vec<_> = (0..LEVELS)
            .map(|l| {
                if l < t.uncompressed_levels {
                    DBCompressionType::None
                } else {
                    compression
                }
            })
            .collect();
        o.set_compression_per_level(&per_level);
    }
    if opts.compression != Compression::None {
        o.set_bottommost_compression_type(DBCompressionType::Zstd);
        if t.zstd_dictionary_bytes > 0 {
            let dict = i32::try_from(t.zstd_dictionary_bytes).unwrap_or(i32::MAX);
            // zstd's default level (3); the dictionary is trained from up to 100× its size.
            o.set_bottommost_compression_options(-14, 3, 0, dict, true);
            o.set_bottommost_zstd_max_train_bytes(dict.saturating_mul(100), true);
        }
    }
    o.set_level_compaction_dynamic_level_bytes(true);
    o.set_level_zero_slowdown_writes_trigger(clamp_i32(t.l0_slowdown_writes_trigger));
    o.set_level_zero_stop_writes_trigger(clamp_i32(t.l0_stop_writes_trigger));
    if t.blob_min_size > 0 {
        o.set_enable_blob_files(true);
        o.set_min_blob_size(t.blob_min_size);
        o.set_blob_compression_type(compression);
        // Compaction moves the live values out of the oldest quarter of the blob files, which
        // then hold only garbage and are deleted.
        o.set_enable_blob_gc(true);
        o.set_blob_gc_age_cutoff(0.25);
    }
    let mut b = BlockBasedOptions::default();
    b.set_block_cache(cache);
    b.set_cache_index_and_filter_blocks(true);
    b.set_pin_l0_filter_and_index_blocks_in_cache(true);
    b.set_cache_index_and_filter_blocks_with_high_priority(t.index_high_priority);
    if t.partitioned_index {
        b.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
        b.set_partition_filters(true);
        b.set_metadata_block_size(4096);
        b.set_pin_top_level_index_and_filter(true);
    }
    if whole_key_bloom {
        b.set_bloom_filter(10.0, false);
        b.set_whole_key_filtering(true);
        // Point lookups find their entry in a data block by hash instead of binary search.
        b.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
        b.set_data_block_hash_ratio(0.75);
        // A point lookup skips every memtable that cannot hold the key instead of walking its
        // skiplist (the main cost of GET on a busy server, per the profile in docs/architecture.md).
        o.set_memtable_prefix_bloom_ratio(0.05);
        o.set_memtable_whole_key_filtering(true);
    }
    b.set_format_version(5);
    (o, b)
}

/// The `zscore` family's level 0 is compacted at two files, not RocksDB's four. A range by
/// score (ZRANGEBYSCORE, GEOSEARCH) is an iterator over this family, and every level-0 file
/// overlaps every other (each checkpoint of a sorted set spans its whole score range), so each
/// `Seek` and `Next` merges one more file per level-0 file; three of them left a 1 M-member set
/// at 1.2-1.3x the CPU per ZRANGEBYSCORE and GEOSEARCH of the same set compacted
/// (docs/architecture.md, "Range reads of a sorted set, profiled"). Its files are keys only
/// (empty values), so the extra compaction is cheap next to `data`'s.
fn zscore_compaction(o: &mut RocksOptions) {
    o.set_level_zero_file_num_compaction_trigger(2);
}

/// The levels of the LSM tree (RocksDB's default `num_levels`).
const LEVELS: u32 = 7;

fn clamp_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl Storage {
    /// Opens (creating if missing) the data directory at `path`.
    pub fn open(path: &Path, opts: &StorageOptions) -> Result<Storage> {
        if opts.create_if_missing && !opts.read_only {
            std::fs::create_dir_all(path)
                .map_err(|e| Error::Storage(format!("cannot create {}: {e}", path.display())))?;
        } else if !path.is_dir() {
            return Err(Error::Missing(path.display().to_string()));
        } else if !path.join("CURRENT").is_file() {
            return Err(Error::NotStrata(format!(
                "{} holds no database (no CURRENT file)",
                path.display()
            )));
        }
        let writable = opts.create_if_missing && !opts.read_only;
        // HyperClockCache: lock-free lookups (the LRU cache's mutexes were the top cost of GET).
        let cache = Cache::new_hyper_clock_cache(opts.block_cache_size, 0);
        let mut db_opts = RocksOptions::default();
        db_opts.create_if_missing(writable);
        db_opts.create_missing_column_families(writable);
        db_opts.set_max_background_jobs(clamp_i32(opts.tuning.background_jobs.max(1)));
        db_opts.set_use_direct_io_for_flush_and_compaction(opts.tuning.direct_io_background);
        db_opts.set_use_direct_reads(opts.tuning.direct_reads);
        if opts.tuning.compaction_rate_limit > 0 {
            let rate = i64::try_from(opts.tuning.compaction_rate_limit).unwrap_or(i64::MAX);
            // RocksDB's recommended refill period and fairness.
            db_opts.set_auto_tuned_ratelimiter(rate, 100_000, 10);
        }
        db_opts.set_manual_wal_flush(opts.batch_wal_writes);
        // Required by the hash-skiplist memtable of `meta`.
        db_opts.set_allow_concurrent_memtable_write(false);
        db_opts.set_bytes_per_sync(1 << 20);
        db_opts.set_keep_log_file_num(5);
        db_opts.set_max_total_wal_size(2 * opts.write_buffer_size as u64);
        // Obsolete log files move to `archive/` and stay there for replicas to read.
        db_opts.set_wal_ttl_seconds(opts.wal_ttl_seconds);
        db_opts.set_wal_size_limit_mb(opts.wal_size_limit_mb);
        // A power cut leaves the log's unsynced tail cut short, torn or zeroed (everysec, no).
        // Point-in-time recovery replays every intact record up to the first bad one and opens:
        // what survives is a prefix of the acknowledged writes. (Absolute consistency would
        // refuse to open; skipping bad records could replay later ones and leave holes.) It is
        // RocksDB's default, set here so it cannot change under us; docs/reliability.md.
        db_opts.set_wal_recovery_mode(DBRecoveryMode::PointInTime);
        // Counters only (no histograms or timers): the block cache's hits and misses for INFO
        // and the metrics endpoint (`info.rs`, `EngineGauges`).
        db_opts.enable_statistics();
        db_opts.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptHistogramOrTimers);

        // The data/zscore filters look up the metadata of the key a sub-key belongs to; they get the
        // database handle once it is open.
        let handle: Arc<OnceLock<Weak<DB>>> = Arc::new(OnceLock::new());

        let (mut meta_opts, meta_table) = cf_options(opts, &cache, true);
        meta_opts.set_block_based_table_factory(&meta_table);
        // Metadata keys start with [db][slot]: hash the memtable by that prefix, so a point read or
        // write searches a small per-slot skiplist instead of one skiplist of every key (the main
        // cost of SET and GET in profiles). Iterations over `meta` therefore go slot by slot.
        meta_opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(3));
        meta_opts.set_memtable_factory(MemtableFactory::HashSkipList {
            bucket_count: 1 << 18,
            // Tall enough that one slot holding millions of keys (a shared {hash tag}) still
            // searches in O(log n).
            height: 12,
            branching_factor: 4,
        });
        meta_opts.set_compaction_filter("strata-meta-expired", |_level, _key, value: &[u8]| {
            let expire = meta::expire_of(value);
            if expire != 0 && expire <= now_ms() {
                Decision::Remove
            } else {
                Decision::Keep
            }
        });

        // Hash fields, set members and zset scores are read by point lookups too (HGET, HINCRBY,
        // SISMEMBER, ZSCORE): same bloom filters and block hash index as `meta`.
        let (mut data_opts, data_table) = cf_options(opts, &cache, true);
        data_opts.set_block_based_table_factory(&data_table);
        let h = handle.clone();
        data_opts.set_compaction_filter_factory(OrphanFilters {
            handle: h,
            name: c"strata-data-orphans",
        });

        let (mut zscore_opts, zscore_table) = cf_options(opts, &cache, false);
        zscore_opts.set_block_based_table_factory(&zscore_table);
        zscore_compaction(&mut zscore_opts);
        let h = handle.clone();
        zscore_opts.set_compaction_filter_factory(OrphanFilters {
            handle: h,
            name: c"strata-zscore-orphans",
        });

        let (mut expire_opts, expire_table) = cf_options(opts, &cache, false);
        expire_opts.set_block_based_table_factory(&expire_table);

        // A checkpoint of the write-back tier builds table files with each family's options,
        // and the same with the upper levels' compression for the last level too.
        let file_options = [
            (&meta_opts, None),
            (&data_opts, checkpoint_alone_file_options(opts, &cache)),
            (&zscore_opts, None),
            (&expire_opts, None),
        ]
        .map(|(o, alone)| {
            let mut upper = o.clone();
            if opts.compression != Compression::None {
                upper.set_bottommost_compression_type(rocks_compression(opts.compression));
            }
            (o.clone(), upper, alone)
        });
        let cfs = vec![
            ColumnFamilyDescriptor::new(CF_META, meta_opts),
            ColumnFamilyDescriptor::new(CF_DATA, data_opts),
            ColumnFamilyDescriptor::new(CF_ZSCORE, zscore_opts),
            ColumnFamilyDescriptor::new(CF_EXPIRE, expire_opts),
        ];
        let opened = if opts.read_only {
            DB::open_cf_descriptors_read_only(&db_opts, path, cfs, false)
        } else {
            DB::open_cf_descriptors(&db_opts, path, cfs)
        };
        let db = Arc::new(opened.map_err(|e| open_error(path, e))?);
        let _ = handle.set(Arc::downgrade(&db));
        let cf_ids = learn_cf_ids(&db)?;
        let families: Families = std::iter::once((0, "default".to_string()))
            .chain(
                [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE]
                    .iter()
                    .zip(cf_ids)
                    .map(|(n, id)| (id, n.to_string())),
            )
            .collect();
        let tier = if opts.write_back.is_some() || Tier::has_log(path) {
            let limit = opts.write_back.unwrap_or(usize::MAX);
            // The redo log is the replication backlog when RocksDB's would be.
            let archive = opts.wal_ttl_seconds > 0 || opts.wal_size_limit_mb > 0;
            let tier = Tier::open(path, opts.read_only, limit, archive)?;
            let files = cf_ids.iter().copied().zip(file_options);
            let files = files.map(|(id, (bottom, upper, alone))| FileFamily {
                id,
                bottom,
                upper,
                alone,
            });
            tier.write_files_for(files.collect(), checkpoint_file_compression());
            tier.pace_against(EngineLimits {
                l0_slowdown: opts.tuning.l0_slowdown_writes_trigger.into(),
                l0_stop: opts.tuning.l0_stop_writes_trigger.into(),
                ..EngineLimits::default()
            });
            // Offsets never go back: on from the last checkpoint's offset (the record is
            // deleted whenever the directory is opened without the tier) or, in a directory
            // not used with the tier since, from RocksDB's own sequence number.
            let checkpointed = db
                .get(OFFSET_KEY)?
                .and_then(|v| v.as_slice().try_into().ok().map(u64::from_le_bytes));
            tier.offsets_after(checkpointed.unwrap_or_else(|| db.latest_sequence_number()));
            Some(Arc::new(tier))
        } else {
            None
        };
        let mut storage = Storage {
            db,
            read_only: opts.read_only,
            sync: AtomicU8::new(opts.sync.to_u8()),
            batch_wal_writes: opts.batch_wal_writes,
            bulk_load: AtomicBool::new(false),
            write_buffer_size: opts.write_buffer_size,
            writes: AtomicU64::new(0),
            path: path.to_path_buf(),
            min_free_disk: opts.min_free_disk,
            disk_full: AtomicBool::new(false),
            written_since_check: AtomicU64::new(0),
            cf_ids,
            wal_archive_limit: AtomicU64::new(opts.wal_size_limit_mb.saturating_mul(1 << 20)),
            redo_archive_ttl: opts.wal_ttl_seconds,
            synced: AtomicU64::new(0),
            sync_lock: parking_lot::Mutex::new(()),
            hot: Arc::new(HotCache::new(opts.hot_cache_size)),
            cache_changes: Arc::new(AtomicU64::new(0)),
            tier,
            checkpointer: parking_lot::Mutex::new(None),
            families,
            meta_generations: (0..256).map(|_| AtomicU64::new(0)).collect(),
            #[cfg(test)]
            read_pause_us: AtomicU64::new(0),
            #[cfg(test)]
            fill_pause_ms: AtomicU64::new(0),
        };
        storage.check_disk();
        storage.check_format(path, writable)?;
        storage.start_tier(opts.write_back.is_some())?;
        if storage.tier.is_none() && !storage.read_only && storage.db.get(OFFSET_KEY)?.is_some() {
            // Offsets are RocksDB's from now on: the tier's must not be taken up again.
            storage.db.delete(OFFSET_KEY)?;
        }
        Ok(storage)
    }

    /// Whether the hot-record cache's `meta` and `data` families are complete (`hot.rs`).
    pub(crate) fn hot_cache_complete(&self) -> [bool; 2] {
        [self.hot.family(0).complete(), self.hot.family(1).complete()]
    }

    /// Declares each family of the hot-record cache complete (`hot.rs`) when the write-back tier
    /// is on and RocksDB holds no record of the family: every record it gains from then on comes
    /// through a checkpoint, which hands it to the cache (or ends the completeness). A fresh
    /// directory, or one emptied by FLUSHALL, reads its misses from memory. Called once the
    /// checkpoints' retirement hands layers to the cache, before the first checkpoint.
    fn declare_empty_families_complete(&self) {
        if self.tier.is_none() || self.read_only || !self.hot.enabled() {
            return;
        }
        for id in [self.cf_ids[0], self.cf_ids[1]] {
            let Some(family) = self.hot(id) else {
                continue;
            };
            let name = if id == self.cf_ids[0] {
                CF_META
            } else {
                CF_DATA
            };
            let mut ro = ReadOptions::default();
            ro.set_total_order_seek(true);
            let mut it = self.db.raw_iterator_cf_opt(self.cf(name), ro);
            it.seek_to_first();
            if !it.valid() && it.status().is_ok() {
                family.declare_complete();
            }
        }
    }

    fn check_format(&self, path: &Path, may_create: bool) -> Result<()> {
        match self.db.get(FORMAT_KEY)? {
            None if !may_create => Err(Error::NotStrata(format!(
                "{} is a RocksDB database without Strata's format marker",
                path.display()
            ))),
            None => {
                self.db.put(FORMAT_KEY, [FORMAT_VERSION])?;
                // RocksDB's log buffer is written out by the writes that follow, and with the
                // write-back tier there are none: write it now, so that a crash, or the `strata`
                // tool opening the directory read-only, finds the marker.
                self.db.flush_wal(true)?;
                Ok(())
            }
            Some(v) if v.as_slice() == [FORMAT_VERSION] => Ok(()),
            Some(v) => Err(Error::Corrupt(format!(
                "data directory has on-disk format {v:?}; this build reads format {FORMAT_VERSION}"
            ))),
        }
    }

    /// Starts the write-back tier's checkpointer; or, when a redo log was found in a directory
    /// now opened without the tier, writes what it held to RocksDB and goes on without it.
    fn start_tier(&mut self, write_back: bool) -> Result<()> {
        let Some(tier) = self.tier.clone() else {
            return Ok(());
        };
        if self.read_only {
            return Ok(());
        }
        if !write_back {
            tier.checkpoint(&self.db, &self.families, |_| Ok(()))?;
            self.tier = None;
            // Replicas now follow RocksDB's log: the redo backlog serves nobody.
            let _ = std::fs::remove_dir_all(self.path.join("redo").join(crate::redo::ARCHIVE));
            return Ok(());
        }
        // Readers consult the tier before the hot-record cache, and writers leave the cache
        // alone: each retired layer's records go to the cache instead (`hot.rs`).
        let hot = self.hot.clone();
        let changes = self.cache_changes.clone();
        let cached = [self.cf_ids[0], self.cf_ids[1]];
        tier.on_retire(Box::new(move |layer| {
            changes.fetch_add(1, Ordering::SeqCst);
            hot.take_layer(layer, cached)
        }));
        // Before the checkpointer starts: a checkpoint's retirement may end it at once.
        self.declare_empty_families_complete();
        let handle = Tier::spawn_checkpointer(tier, self.db.clone(), self.families.clone())?;
        *self.checkpointer.lock() = Some(handle);
        Ok(())
    }

    /// How long a connection that owes the write-back tier's pace until `due`
    /// ([`crate::defer_write_pace`]) sleeps next; `None`: it may go on.
    pub fn write_pace_nap(&self, due: std::time::Instant) -> Option<Duration> {
        self.tier
            .as_ref()
            .and_then(|t| crate::tier::write_pace_nap(t, due))
    }

    /// Whether writes go through the write-back tier.
    pub fn write_back(&self) -> bool {
        self.tier.is_some()
    }

    /// Tells the write-back tier that the records at `keys` of family `cf` are garbage that no
    /// reader asks for again (a list's items outside its bounds, `list.rs`): its active layer
    /// forgets its puts of them, so they never reach RocksDB or the hot-record cache. Any older
    /// record of such a key (in the frozen layer, the cache or RocksDB) is garbage as well, so
    /// exposing it is harmless. Nothing inside an atomic scope (the scope's batch commits as a
    /// whole) or without the tier.
    pub(crate) fn drop_unread(&self, cf: &str, keys: &[Vec<u8>]) {
        if keys.is_empty() || self.pending().is_some() {
            return;
        }
        if let Some(tier) = &self.tier {
            tier.drop_puts(self.cf_id(cf), keys);
        }
    }

    /// The replication offset of the last write: the write-back tier's (`redo.rs`), or
    /// RocksDB's sequence number without it.
    pub(crate) fn last_seq(&self) -> u64 {
        match &self.tier {
            Some(t) => t.last_offset(),
            None => self.db.latest_sequence_number(),
        }
    }

    /// The write-back tier's redo log directory, when writes go through the tier.
    pub(crate) fn redo_dir(&self) -> Option<&Path> {
        self.tier.as_ref().and_then(|t| t.log_dir())
    }

    /// A RocksDB snapshot with the replication offset it holds every write through: with the
    /// write-back tier, taken right after a checkpoint (RocksDB then holds the tier's writes up
    /// to the checkpoint's offset, and none after it); without it, RocksDB's own. Without the
    /// tier `hold` runs around the moment the snapshot is taken; with it there is no need (only
    /// a checkpoint changes RocksDB, and none runs meanwhile).
    pub(crate) fn snapshot_at<G>(
        &self,
        hold: impl FnOnce() -> G,
    ) -> Result<(u64, rocksdb::SnapshotWithThreadMode<'_, DB>)> {
        match &self.tier {
            Some(t) => t.checkpoint(&self.db, &self.families, |offset| {
                Ok((offset, self.db.snapshot()))
            }),
            None => {
                let _held = hold();
                Ok((self.db.latest_sequence_number(), self.db.snapshot()))
            }
        }
    }

    /// Writes what the write-back tier holds to RocksDB (a no-op without the tier).
    pub(crate) fn checkpoint_tier(&self) -> Result<()> {
        match &self.tier {
            Some(t) => t.checkpoint(&self.db, &self.families, |_| Ok(())),
            None => Ok(()),
        }
    }

    /// Adds to `batch`, written straight to RocksDB, the write-back tier's current offset as
    /// the checkpointed one (a replica's loaded copy replaces the record a checkpoint wrote).
    pub(crate) fn note_tier_offset(&self, batch: &mut WriteBatch) {
        if let Some(t) = &self.tier {
            batch.put(OFFSET_KEY, t.last_offset().to_le_bytes());
        }
    }

    /// The write-back tier's figures, for INFO: bytes held (active, being checkpointed),
    /// checkpoints done, bytes they wrote, when the last ended (ms), records replayed at open.
    pub fn tier_figures(&self) -> Option<[u64; 6]> {
        let t = self.tier.as_ref()?;
        let (active, frozen) = t.dirty_bytes();
        Some([
            active as u64,
            frozen as u64,
            t.stats.checkpoints.load(Ordering::Relaxed),
            t.stats.checkpointed_bytes.load(Ordering::Relaxed),
            t.stats.last_checkpoint_ms.load(Ordering::Relaxed),
            t.stats.replayed_records.load(Ordering::Relaxed),
        ])
    }

    /// The write-back tier's writer pacing, for INFO: the rate writers are paced at now
    /// (bytes/s, 0: not paced), writes paced and their µs of waiting, writes stopped (the tier
    /// full) and their µs, how long the last checkpoint took (ms), and the part of the rate
    /// RocksDB's backlog sets (bytes/s, 0: RocksDB is not behind).
    pub fn tier_pace(&self) -> Option<[u64; 7]> {
        let s = &self.tier.as_ref()?.stats;
        let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        Some([
            get(&s.write_rate),
            get(&s.delayed_writes),
            get(&s.delayed_micros),
            get(&s.stopped_writes),
            get(&s.stopped_micros),
            get(&s.last_checkpoint_took_ms),
            get(&s.engine_write_rate),
        ])
    }

    /// Why the write-back tier's last checkpoint failed, while none has succeeded since.
    pub fn tier_failure(&self) -> Option<String> {
        self.tier.as_ref()?.last_failure()
    }

    /// The layers of writes not in RocksDB yet, newest first: this thread's open scope, then
    /// the write-back tier's.
    fn layers(&self, with_scope: bool) -> Stack {
        let mut stack = Stack::default();
        if with_scope {
            if let Some(p) = self.pending() {
                stack.push(Source::Scope(p));
            }
        }
        if let Some(t) = &self.tier {
            t.stack_onto(&mut stack);
        }
        stack
    }

    pub(crate) fn cf(&self, name: &str) -> &ColumnFamily {
        // The four families are created at open, so the handle always exists.
        match self.db.cf_handle(name) {
            Some(cf) => cf,
            None => unreachable!("column family {name} is created at open"),
        }
    }

    pub(crate) fn raw(&self) -> &DB {
        &self.db
    }

    /// Whether the directory was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A text property of family `cf` (e.g. `rocksdb.levelstats`), if the engine knows it.
    pub fn property_text(&self, cf: &str, name: &str) -> Option<String> {
        self.db.property_value_cf(self.cf(cf), name).ok().flatten()
    }

    /// A text property of the whole database (e.g. `rocksdb.dbstats`), if the engine knows it.
    pub fn db_property_text(&self, name: &str) -> Option<String> {
        self.db.property_value(name).ok().flatten()
    }

    /// An integer property of family `cf`, if the engine knows it.
    pub fn property_int(&self, cf: &str, name: &str) -> Option<u64> {
        self.db
            .property_int_value_cf(self.cf(cf), name)
            .ok()
            .flatten()
    }

    /// The current sync policy.
    pub fn sync_policy(&self) -> SyncPolicy {
        SyncPolicy::from_u8(self.sync.load(Ordering::Relaxed))
    }

    /// Changes the sync policy (CONFIG SET appendfsync).
    pub fn set_sync_policy(&self, policy: SyncPolicy) {
        self.sync.store(policy.to_u8(), Ordering::Relaxed);
    }

    /// Turns the bulk-load mode on or off: while on, writes skip the write-ahead log (with the
    /// write-back tier they still go through its redo log) and reach the disk only when the
    /// memtables are flushed ([`Storage::flush_all`]).
    pub fn set_bulk_load(&self, on: bool) {
        self.bulk_load.store(on, Ordering::Release);
        if self.read_only {
            return;
        }
        // Larger memtables while loading: fewer, larger level-0 files, so less flush and
        // compaction work for the same data (a 494 MiB RDB: 21% less CPU to import, 22% less
        // with the compaction that follows; peak RSS +75 MiB).
        let size = match on {
            true => self.write_buffer_size.max(BULK_WRITE_BUFFER_SIZE),
            false => self.write_buffer_size,
        }
        .to_string();
        for cf in [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE] {
            // Only a tuning: if RocksDB refused it, the load would run as before.
            let _ = self
                .db
                .set_options_cf(self.cf(cf), &[("write_buffer_size", size.as_str())]);
        }
    }

    /// Applies a batch atomically, honouring the sync policy. Refused with [`Error::DiskFull`]
    /// (nothing applied) while the disk is short of space.
    /// Inside an atomic scope of this thread the batch is only added to the scope (see
    /// [`Storage::begin_scope`]).
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_caching(batch, true)
    }

    /// [`Storage::write`] for a batch whose `data` records are written once and seldom read
    /// back by key (stream entries, read by walks): they are not copied into the hot-record
    /// cache, where they would only push out records that are read (any record the cache holds
    /// under one of their keys is forgotten instead). Its metadata records are cached as usual.
    /// Inside an atomic scope the batch joins the scope, whose commit caches as `write` does.
    pub(crate) fn write_cold(&self, batch: WriteBatch) -> Result<()> {
        self.write_caching(batch, false)
    }

    /// [`Storage::write`] of a batch of puts `(family, key, value)`, encoded here in RocksDB's
    /// write-batch format instead of through RocksDB's C interface: through the write-back tier
    /// (the server's default) the records never cross it, and are not decoded again either (an
    /// XADD: building the batch over the C interface and decoding it was 6.6% of the workers'
    /// CPU; a SET or an INCR about 2%). Without the tier the encoding becomes a RocksDB batch as
    /// it is.
    pub(crate) fn put(&self, puts: &[(&str, &[u8], &[u8])]) -> Result<()> {
        self.put_caching(puts, true)
    }

    /// [`Storage::put`] as [`Storage::write_cold`] writes: `data` records not cached.
    pub(crate) fn put_cold(&self, puts: &[(&str, &[u8], &[u8])]) -> Result<()> {
        self.put_caching(puts, false)
    }

    fn put_caching(&self, puts: &[(&str, &[u8], &[u8])], cache_data: bool) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        let size: usize = puts.iter().map(|(_, k, v)| 16 + k.len() + v.len()).sum();
        let mut data = Vec::with_capacity(12 + size);
        data.extend_from_slice(&[0; 8]);
        data.extend_from_slice(&(puts.len() as u32).to_le_bytes());
        let ops: smallvec::SmallVec<[BatchOp<'_>; 4]> = puts
            .iter()
            .map(|&(cf, key, value)| BatchOp::Put {
                cf: self.cf_id(cf),
                key,
                value,
            })
            .collect();
        for op in &ops {
            pending::encode_op(&mut data, op)?;
        }
        if let Some(p) = self.pending() {
            return p.borrow_mut().add(&data);
        }
        match &self.tier {
            Some(tier) => {
                self.guard_disk(data.len() as u64)?;
                self.write_back_now(tier, &data, &ops, cache_data)
            }
            None => self.write_now(WriteBatch::from_data(&data), cache_data),
        }
    }

    fn write_caching(&self, batch: WriteBatch, cache_data: bool) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if let Some(p) = self.pending() {
            return p.borrow_mut().add(batch.data());
        }
        self.write_now(batch, cache_data)
    }

    fn write_now(&self, batch: WriteBatch, cache_data: bool) -> Result<()> {
        self.guard_disk(batch.size_in_bytes() as u64)?;
        if let Some(tier) = &self.tier {
            let (_, ops) = pending::decode_batch(batch.data())?;
            return self.write_back_now(tier, batch.data(), &ops, cache_data);
        }
        let mut wo = WriteOptions::default();
        // With batched log writes, `always` syncs once per batch of commands instead
        // ([`Storage::flush_wal_buffer`], before their replies leave).
        wo.set_sync(self.sync_policy() == SyncPolicy::Always && !self.batch_wal_writes);
        if self.bulk_load.load(Ordering::Acquire) {
            wo.disable_wal(true);
            wo.set_sync(false);
        }
        let (_, ops) = pending::decode_batch(batch.data())?;
        let (small, changed) = self.forget_hot(&batch, &ops, cache_data);
        let remember = small.then(|| batch.data().to_vec());
        drop(ops);
        self.db.write_opt(batch, &wo)?;
        self.writes.fetch_add(1, Ordering::Release);
        // After the write is visible, so a count that read the old generation is never kept.
        self.bump_meta_generations(&changed);
        if let Some(data) = remember {
            self.remember_hot(&pending::decode_batch(&data)?.1, cache_data);
        }
        Ok(())
    }

    /// [`Storage::write_now`] through the write-back tier: logged and applied in memory; with
    /// unbatched log writes the record reaches the operating system (and with `always` the
    /// disk) before this returns, as RocksDB's own log would. The hot-record cache is not
    /// touched: readers consult the tier first, and the cache takes the records when a
    /// checkpoint retires the layer (`hot.rs`); without `cache_data`, not those of `data`.
    fn write_back_now(
        &self,
        tier: &Tier,
        data: &[u8],
        ops: &[BatchOp<'_>],
        cache_data: bool,
    ) -> Result<()> {
        let cold = (!cache_data).then_some(self.cf_ids[1]);
        tier.write(data, ops, cold)?;
        self.writes.fetch_add(1, Ordering::Release);
        self.bump_meta_generations(&self.meta_changes(ops));
        if !self.batch_wal_writes {
            match self.sync_policy() {
                SyncPolicy::Always => tier.sync()?,
                _ => tier.write_out()?,
            }
        }
        Ok(())
    }

    /// The physical databases whose metadata records `ops` change.
    fn meta_changes(&self, ops: &[BatchOp<'_>]) -> DbSet {
        let meta = self.cf_ids[0];
        let mut changed = DbSet::default();
        for op in ops {
            match *op {
                BatchOp::Put { cf, key, .. }
                | BatchOp::Delete { cf, key }
                | BatchOp::Patch { cf, key, .. } => {
                    if cf == meta {
                        changed.add(key.first().copied().unwrap_or(0));
                    }
                }
                BatchOp::DeleteRange { cf, .. } => {
                    if cf == meta {
                        changed.add_all();
                    }
                }
            }
        }
        changed
    }

    fn bump_meta_generations(&self, changed: &DbSet) {
        // The databases changed, not every database (a loop over all 256 was 6% of the
        // server's CPU under XADD at P=16).
        for phys in changed.each() {
            if let Some(generation) = self.meta_generations.get(phys) {
                generation.fetch_add(1, Ordering::Release);
            }
        }
    }

    /// How many committed writes changed the metadata records of physical database `phys`: a
    /// count of its keys made after reading generation `g` stays true while it reads `g`.
    pub(crate) fn meta_generation(&self, phys: u8) -> u64 {
        self.meta_generations[usize::from(phys)].load(Ordering::Acquire)
    }

    /// Whether this thread has an atomic scope open (its reads see writes not committed yet).
    pub(crate) fn in_scope(&self) -> bool {
        self.pending().is_some()
    }

    /// The hot-record cache of family `cf`, if it has one.
    fn hot(&self, cf: u32) -> Option<HotFamily<'_>> {
        if cf == self.cf_ids[0] {
            Some(self.hot.family(0))
        } else if cf == self.cf_ids[1] {
            Some(self.hot.family(1))
        } else {
            None
        }
    }

    /// Before `batch` is applied: forgets the cached records it deletes (every record of a
    /// family it deletes a range of), and those it writes when it is too large to be cached
    /// (or, without `cache_data`, those it writes to the `data` family).
    /// Returns whether the batch is small enough to fill the cache from once it is applied, and
    /// the physical databases whose metadata records it changes.
    fn forget_hot(
        &self,
        batch: &WriteBatch,
        ops: &[BatchOp<'_>],
        cache_data: bool,
    ) -> (bool, DbSet) {
        let hot = self.hot.enabled();
        // A batch with more records, or more bytes, than the cache could take is not copied
        // (a 512 MB string would otherwise be copied once more only to be found too large).
        let largest = self.hot.largest_entry();
        let small = hot
            && batch.len() <= HOT_BATCH_MAX
            && batch.size_in_bytes() <= largest.saturating_mul(HOT_BATCH_MAX);
        if hot {
            for op in ops {
                match *op {
                    BatchOp::Put { cf, key, .. } => {
                        if !small || (!cache_data && cf == self.cf_ids[1]) {
                            if let Some(c) = self.hot(cf) {
                                c.remove(key);
                            }
                        }
                    }
                    // A patch (only read from the redo log, never written through here) changes
                    // its record as a delete then a put would.
                    BatchOp::Delete { cf, key } | BatchOp::Patch { cf, key, .. } => {
                        if let Some(c) = self.hot(cf) {
                            c.remove(key);
                        }
                    }
                    BatchOp::DeleteRange { cf, .. } => {
                        if let Some(c) = self.hot(cf) {
                            c.clear();
                        }
                    }
                }
            }
        }
        (small, self.meta_changes(ops))
    }

    /// After a batch was applied: caches the records it wrote (see `hot.rs` for why this is
    /// safe: its writer holds the keys' locks), those of the `data` family only with
    /// `cache_data` (else [`Storage::forget_hot`] forgot them). The operations are replayed in order, as RocksDB
    /// applied them: a transaction may write a record and then delete it.
    fn remember_hot(&self, ops: &[BatchOp<'_>], cache_data: bool) {
        for op in ops {
            match *op {
                BatchOp::Put { cf, key, value } => {
                    if let Some(c) = self.hot(cf) {
                        if cache_data || cf != self.cf_ids[1] {
                            c.put(key, value);
                        }
                    }
                }
                BatchOp::Delete { cf, key } | BatchOp::Patch { cf, key, .. } => {
                    if let Some(c) = self.hot(cf) {
                        c.remove(key);
                    }
                }
                BatchOp::DeleteRange { cf, .. } => {
                    if let Some(c) = self.hot(cf) {
                        c.clear();
                    }
                }
            }
        }
    }

    /// Forgets every cached record (FLUSHDB, FLUSHALL, SWAPDB, a replica's full copy).
    pub(crate) fn forget_all(&self) {
        self.cache_changes.fetch_add(1, Ordering::SeqCst);
        self.hot.clear();
        let mut all = DbSet::default();
        all.add_all();
        self.bump_meta_generations(&all);
    }

    /// Opens an atomic scope on this thread (or enters the one already open, scopes nest): until
    /// the matching [`Storage::end_scope`], this thread's writes are held back, and its reads see
    /// them. Returns whether this is the outermost scope.
    pub(crate) fn begin_scope(&self) -> bool {
        let me = self.id();
        SCOPES.with(|s| {
            let mut scopes = s.borrow_mut();
            if let Some(open) = scopes.iter_mut().find(|o| o.storage == me) {
                open.depth += 1;
                return false;
            }
            scopes.push(OpenScope {
                storage: me,
                depth: 1,
                pending: Rc::new(RefCell::new(Pending::default())),
            });
            true
        })
    }

    /// Leaves the scope [`Storage::begin_scope`] opened. Leaving the outermost one writes
    /// everything written in it as one batch (one write-ahead-log record) when `commit`, and
    /// drops it otherwise. A failed commit writes nothing.
    pub(crate) fn end_scope(&self, commit: bool) -> Result<()> {
        let me = self.id();
        let finished = SCOPES.with(|s| {
            let mut scopes = s.borrow_mut();
            let at = scopes.iter().position(|o| o.storage == me)?;
            scopes[at].depth -= 1;
            if scopes[at].depth > 0 {
                return None;
            }
            Some(scopes.swap_remove(at).pending)
        });
        let Some(pending) = finished else {
            return Ok(());
        };
        // An iterator that outlives its scope keeps the Rc; it sees an empty scope from now on.
        let pending = std::mem::take(&mut *pending.borrow_mut());
        if !commit || pending.is_empty() {
            return Ok(());
        }
        self.write_now(WriteBatch::from_data(&pending.into_batch_data()), true)
    }

    fn id(&self) -> usize {
        self as *const Storage as usize
    }

    /// The writes of this thread's open scope, if one is open.
    fn pending(&self) -> Option<Rc<RefCell<Pending>>> {
        let me = self.id();
        SCOPES.with(|s| {
            let scopes = s.borrow();
            if scopes.is_empty() {
                return None;
            }
            scopes
                .iter()
                .find(|o| o.storage == me)
                .map(|o| o.pending.clone())
        })
    }

    /// The id write batches give column family `name`.
    pub(crate) fn cf_id(&self, name: &str) -> u32 {
        match name {
            CF_META => self.cf_ids[0],
            CF_DATA => self.cf_ids[1],
            CF_ZSCORE => self.cf_ids[2],
            CF_EXPIRE => self.cf_ids[3],
            _ => 0,
        }
    }

    /// Refuses a write of about `bytes` while free space is short. Free space is looked up again
    /// (one `statvfs`) whenever writes since the last look could have used an eighth of the
    /// margin, on every write while the disk is full (so the state clears as soon as space is
    /// freed), and for every write of at least an eighth of the margin, which is refused on
    /// its own if it would eat into the margin.
    fn guard_disk(&self, bytes: u64) -> Result<()> {
        if self.min_free_disk == 0 {
            return Ok(());
        }
        let since = self.written_since_check.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let full = if self.disk_full.load(Ordering::Relaxed) || since >= self.min_free_disk / 8 {
            self.check_disk()
        } else {
            false
        };
        if full {
            return Err(Error::DiskFull);
        }
        // A large write must leave the margin intact after it, or RocksDB's log could still run
        // out of space in the middle of it. Refused alone: smaller writes still fit.
        if bytes >= self.min_free_disk / 8 {
            let free = free_bytes(&self.path).unwrap_or(u64::MAX);
            if free < self.min_free_disk.saturating_add(bytes) {
                return Err(Error::DiskFull);
            }
        }
        Ok(())
    }

    /// Looks up the free space of the data directory's filesystem and returns whether writes are
    /// refused: when it is below `min_free_disk`, until it is back above one and a half times
    /// that (so the state does not flap while compactions come and go). RocksDB therefore
    /// never runs out of space while writing its log, an error it cannot recover from without
    /// reopening; flushes and compactions that still hit the limit are resumed by RocksDB
    /// itself once space is back.
    pub fn check_disk(&self) -> bool {
        if self.min_free_disk == 0 {
            return false;
        }
        self.written_since_check.store(0, Ordering::Relaxed);
        let was_full = self.disk_full.load(Ordering::Relaxed);
        let Some(free) = free_bytes(&self.path) else {
            return was_full;
        };
        let full = if was_full {
            free < self.min_free_disk.saturating_add(self.min_free_disk / 2)
        } else {
            free < self.min_free_disk
        };
        if full != was_full {
            self.disk_full.store(full, Ordering::Relaxed);
        }
        full
    }

    /// Whether writes are currently refused for lack of disk space (as of the last check).
    pub fn disk_full(&self) -> bool {
        self.disk_full.load(Ordering::Relaxed)
    }

    /// How many write batches have been applied since open (to tell whether a flush is due).
    pub fn write_count(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// Hands the buffered WAL records to the operating system (one write call for every record
    /// collected since the last flush). A no-op unless `batch_wal_writes` is on.
    pub fn flush_wal_buffer(&self) -> Result<()> {
        if self.batch_wal_writes && !self.read_only {
            match &self.tier {
                Some(t) => t.write_out()?,
                None => self.db.flush_wal(false)?,
            }
        }
        Ok(())
    }

    /// Makes the first `wanted` writes (by [`Storage::write_count`]) durable: writes the log
    /// buffer out and syncs it, unless a sync already covered them. With `batch_wal_writes` and
    /// `appendfsync always`, writes do not sync themselves: the server calls this (from one
    /// thread, for every connection waiting) before it acknowledges them.
    ///
    /// A group commit: callers that arrive while a sync is in progress wait for it and then
    /// find their writes covered (by it or by the next one, which one of them runs for all).
    pub fn sync_wal_through(&self, wanted: u64) -> Result<()> {
        if self.read_only || self.synced.load(Ordering::Acquire) >= wanted {
            return Ok(());
        }
        let _one_at_a_time = self.sync_lock.lock();
        if self.synced.load(Ordering::Acquire) >= wanted {
            return Ok(());
        }
        // Every write counted so far has its record in the log buffer: the sync covers them.
        let covered = self.writes.load(Ordering::Acquire);
        match &self.tier {
            Some(t) => t.sync()?,
            None => self.db.flush_wal(true)?,
        }
        self.synced.fetch_max(covered, Ordering::AcqRel);
        Ok(())
    }

    /// Column family ids as write batches encode them: meta, data, zscore, expire.
    pub(crate) fn cf_ids(&self) -> [u32; 4] {
        self.cf_ids
    }

    /// Changes the size limit of the archived log files (`repl-backlog-size` at runtime). A
    /// directory opened without an archive keeps none; RocksDB's own limit, enforced every ten
    /// minutes, stays the one it was opened with.
    pub fn set_wal_archive_limit(&self, bytes: u64) {
        if self.wal_archive_limit.load(Ordering::Relaxed) != 0 {
            self.wal_archive_limit
                .store(bytes.max(1), Ordering::Relaxed);
        }
    }

    /// Keeps the archived log files (`archive/`, kept for replicas) within the size limit by
    /// deleting the oldest. RocksDB enforces its own size limit only every ten minutes, long
    /// enough for a busy server to archive gigabytes; this runs every second. A reader that has
    /// a deleted file open keeps reading it; one that needed it gets a gap (a full copy).
    pub fn prune_wal_archive(&self) {
        let limit = self.wal_archive_limit.load(Ordering::Relaxed);
        if limit == 0 || self.read_only {
            return;
        }
        prune_archive(&self.path.join("archive"), limit, 0);
        if self.tier.is_some() {
            let redo = self.path.join("redo").join(crate::redo::ARCHIVE);
            prune_archive(&redo, limit, self.redo_archive_ttl);
        }
    }

    /// Reads one record of family `cf` (as this thread sees it: with its open scope's writes).
    pub fn get(&self, cf: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with_pinned(cf, key, <[u8]>::to_vec)
    }

    /// Reads one record of family `cf` and hands the pinned bytes to `f` without copying them.
    ///
    /// With the write-back tier, a record only RocksDB had is put into the hot-record cache
    /// (metadata and collection records), so the next reads of a key read often but written
    /// seldom (a hash's metadata under HINCRBY of its fields) are memory reads. That keeps
    /// `hot.rs`'s rule (an entry is the committed record of a key no layer names): the read
    /// found no layer naming the key, so RocksDB's record was the committed one, and any later
    /// write lands in a layer, which readers consult first and whose retirement replaces the
    /// entry. The one race is a checkpoint retiring a layer that wrote the key between this
    /// read's look at the layers and its fill: the fill then takes the entry out again
    /// ([`Storage::cache_changes`]). Without the tier, writers keep the cache themselves and
    /// reads leave it alone.
    pub fn with_pinned<T>(
        &self,
        cf: &str,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>> {
        let id = self.cf_id(cf);
        let changes = self.cache_changes.load(Ordering::SeqCst);
        if let Some(p) = self.pending() {
            match p.borrow().lookup(id, key) {
                Lookup::Value(v) => return Ok(Some(f(v))),
                Lookup::Deleted => return Ok(None),
                Lookup::Untouched => {}
            }
        }
        // The tier's layers before the hot-record cache (`hot.rs`). The closure runs at most
        // once; it goes to the tier and comes back if unused.
        let mut f = Some(f);
        if let Some(t) = &self.tier {
            match t.lookup(id, key, |v| f.take().map(|f| f(v))) {
                Found::Value(Some(v)) => return Ok(Some(v)),
                Found::Value(None) | Found::Deleted => return Ok(None),
                Found::Untouched => {}
            }
        }
        let Some(f) = f else {
            return Ok(None);
        };
        let hot = self.hot(id);
        let f = match hot {
            Some(c) => match c.with_or_back(key, f) {
                Ok(v) => return Ok(Some(v)),
                // No layer names the key and the complete family has no entry: no record.
                Err(_) if c.complete() => return Ok(None),
                Err(f) => f,
            },
            None => f,
        };
        let found = self.db.get_pinned_cf(self.cf(cf), key)?;
        if let (Some(v), Some(c), Some(_)) = (&found, hot, &self.tier) {
            #[cfg(test)]
            std::thread::sleep(Duration::from_millis(
                self.fill_pause_ms.load(Ordering::Relaxed),
            ));
            c.put(key, v);
            if self.cache_changes.load(Ordering::SeqCst) != changes {
                c.remove(key);
            }
        }
        Ok(found.map(|v| f(&v)))
    }

    /// Reads several records of family `cf`, in the order of `keys`: this thread's open scope
    /// first, then the hot-record cache, then one RocksDB multi-get for the rest.
    pub(crate) fn multi_get(&self, cf: &str, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(self.multi_get_counted(cf, keys)?.0)
    }

    /// [`Storage::multi_get`], also saying how many of the records only RocksDB could answer.
    pub(crate) fn multi_get_counted(
        &self,
        cf: &str,
        keys: &[Vec<u8>],
    ) -> Result<(Vec<Option<Vec<u8>>>, usize)> {
        let mut out: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        let (misses, moment) = self.read_known(cf, keys, |i, v| out[i] = v.map(<[u8]>::to_vec));
        if misses.is_empty() {
            return Ok((out, 0));
        }
        let handle = self.cf(cf);
        let found = self.db.multi_get_cf_opt(
            misses.iter().map(|&i| (handle, &keys[i])),
            &moment.read_options(),
        );
        for (&i, r) in misses.iter().zip(found) {
            out[i] = r?;
        }
        Ok((out, misses.len()))
    }

    /// Reads ahead: puts the committed records of family `cf` in `[lower, upper)` into the
    /// hot-record cache as one run (`hot.rs`), at most `max` of them and about `max_bytes`, from
    /// `lower` up (from `upper` down with `reverse`). A list pop that had to go to RocksDB calls this for the
    /// items next in line, so the following pops of a cold stretch of a list are memory reads
    /// (one bounded iterator per `max` items instead of a lookup per pop).
    ///
    /// The records come from RocksDB itself, not from this thread's open atomic scope: the
    /// cache holds committed records only. That is safe for the rule of `hot.rs` (an entry
    /// equals the committed record) only because the caller holds the lock of the key the
    /// records belong to, as every writer of them does (a scope holds its locks until it
    /// commits), so none of them can change between this read and the cache's fill.
    pub(crate) fn warm(
        &self,
        cf: &str,
        lower: Vec<u8>,
        upper: Vec<u8>,
        reverse: bool,
        max: usize,
        max_bytes: usize,
    ) -> Result<()> {
        let Some(cache) = self.hot(self.cf_id(cf)) else {
            return Ok(());
        };
        if !cache.enabled() || upper <= lower {
            return Ok(());
        }
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(lower.clone());
        ro.set_iterate_upper_bound(upper.clone());
        let raw = self.db.raw_iterator_cf_opt(self.cf(cf), ro);
        // Committed records: RocksDB's under the write-back tier's, never the open scope's.
        let bounds = IterBounds {
            lower: Some(lower.clone()),
            upper: Some(upper.clone()),
            prefix_len: None,
        };
        let mut it = StorageIter::new(raw, self.layers(false), self.cf_id(cf), bounds);
        if reverse {
            it.seek_for_prev(&upper);
        } else {
            it.seek(&lower);
        }
        let (mut n, mut bytes) = (0usize, 0usize);
        let mut run = cache.fill_run(reverse);
        while n < max && bytes < max_bytes && it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            if k >= upper.as_slice() {
                if !reverse {
                    break;
                }
                // SeekForPrev lands at or before its target; the bound itself is excluded.
                it.prev();
                continue;
            }
            if k < lower.as_slice() {
                break;
            }
            run.push(k, v);
            n += 1;
            bytes += k.len() + v.len();
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()?;
        run.finish();
        Ok(())
    }

    /// The hot-record cache of family `cf`, if it has one (a list pop asks whether a run of it
    /// holds the next item).
    pub(crate) fn hot_family(&self, cf: &str) -> Option<HotFamily<'_>> {
        self.hot(self.cf_id(cf))
    }

    /// Whether each of `keys` has a record in family `cf` (looked up as [`Storage::multi_get`]).
    pub(crate) fn multi_exists(&self, cf: &str, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        let mut out = vec![false; keys.len()];
        let (misses, moment) = self.read_known(cf, keys, |i, v| out[i] = v.is_some());
        if misses.is_empty() {
            return Ok(out);
        }
        // One key (SADD's member, HSET's field): a plain point read, which skips the multi-get's
        // setup (sorting, per-batch contexts); no snapshot is taken for one key.
        if let [k] = keys {
            out[0] = self
                .db
                .get_pinned_cf_opt(self.cf(cf), k, &moment.read_options())?
                .is_some();
            return Ok(out);
        }
        let wanted: Vec<&Vec<u8>> = misses.iter().map(|&i| &keys[i]).collect();
        let found =
            self.db
                .batched_multi_get_cf_opt(self.cf(cf), wanted, false, &moment.read_options());
        for (&i, r) in misses.iter().zip(found) {
            out[i] = r?.is_some();
        }
        Ok(out)
    }

    /// Calls `known(i, record)` for each of `keys` that this thread's open scope, the tier's
    /// layers or the hot-record cache answers; returns the indexes of the others, which only
    /// RocksDB knows, and the moment to read them at. All of it is one moment's state: the
    /// tier's layers are held still while they and the cache are read ([`Tier::with_view`]),
    /// and the rest is read from a RocksDB snapshot taken before they are let go (a checkpoint
    /// could write newer records there afterwards). So a multi-key read (MGET, EXISTS, a
    /// hash's HMGET) sees another client's transaction whole or not at all, also on a replica
    /// applying its leader's log, whose writer takes no key locks. Without the tier the cache
    /// answers single-key reads only (see below).
    fn read_known(
        &self,
        cf: &str,
        keys: &[Vec<u8>],
        mut known: impl FnMut(usize, Option<&[u8]>),
    ) -> (Vec<usize>, Moment<'_>) {
        let id = self.cf_id(cf);
        let pending = self.pending();
        let pending = pending.as_ref().map(|p| p.borrow());
        // Without the tier, a writer updates the cache record by record around its RocksDB
        // write: several keys are read from RocksDB alone (one multi-get is one moment).
        let hot = self
            .hot(id)
            .filter(|_| self.tier.is_some() || keys.len() == 1);
        let mut walk = |view: Option<&TierView<'_>>| {
            let mut misses = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                #[cfg(test)]
                if i > 0 {
                    std::thread::sleep(Duration::from_micros(
                        self.read_pause_us.load(Ordering::Relaxed),
                    ));
                }
                let mut found = pending
                    .as_ref()
                    .map_or(Lookup::Untouched, |p| p.lookup(id, k));
                if let (Lookup::Untouched, Some(view)) = (&found, view) {
                    found = view.lookup(id, k);
                }
                match found {
                    Lookup::Value(v) => known(i, Some(v)),
                    Lookup::Deleted => known(i, None),
                    // The tier's layers before the hot-record cache (`hot.rs`).
                    Lookup::Untouched => {
                        if hot.and_then(|c| c.with(k, |v| known(i, Some(v)))).is_none() {
                            misses.push(i);
                        }
                    }
                }
            }
            // Judged after the misses: a complete family has no record where it has no entry
            // and no layer names the key (`hot.rs`).
            if hot.is_some_and(|c| c.complete()) {
                misses.clear();
            }
            misses
        };
        match &self.tier {
            Some(t) if keys.len() > 1 => t.with_view(|view| {
                let misses = walk(Some(view));
                let moment = match misses.is_empty() {
                    true => Moment(None),
                    false => Moment(Some(self.db.snapshot())),
                };
                (misses, moment)
            }),
            Some(t) => t.with_view(|view| (walk(Some(view)), Moment(None))),
            None => (walk(None), Moment(None)),
        }
    }

    /// An iterator over family `cf` within `opts`' bounds, as this thread sees it (merged with
    /// its open scope's writes to that family).
    pub(crate) fn iter(&self, cf: &str, opts: IterOptions) -> StorageIter<'_> {
        let mut ro = ReadOptions::default();
        if let Some(lower) = &opts.lower {
            ro.set_iterate_lower_bound(lower.clone());
        }
        if let Some(upper) = &opts.upper {
            ro.set_iterate_upper_bound(upper.clone());
        }
        let prefix_len = (opts.prefix_same_as_start && cf == CF_META).then_some(META_PREFIX_LEN);
        if prefix_len.is_some() {
            ro.set_prefix_same_as_start(true);
        }
        let raw = self.db.raw_iterator_cf_opt(self.cf(cf), ro);
        let bounds = IterBounds {
            lower: opts.lower,
            upper: opts.upper,
            prefix_len,
        };
        StorageIter::new(raw, self.layers(true), self.cf_id(cf), bounds)
    }

    /// fsyncs the write-ahead log.
    pub fn sync_wal(&self) -> Result<()> {
        if let Some(t) = &self.tier {
            t.sync()?;
        }
        self.db.flush_wal(true)?;
        Ok(())
    }

    /// Flushes memtables to SST files and syncs the WAL (clean shutdown).
    pub fn flush_all(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        if let Some(t) = &self.tier {
            t.checkpoint(&self.db, &self.families, |_| Ok(()))?;
        }
        self.db.flush_wal(true)?;
        // The default family too: it holds the database map (SWAPDB), the function libraries
        // and the other aux records, which a full copy or an RDB import writes without the log.
        // Only families whose memtables hold something, without waiting for RocksDB's
        // write-stall conditions (`tier::flush_written`).
        crate::tier::flush_written(&self.db, &self.families)
    }

    /// Writes a consistent checkpoint (hard links where possible) into `dest`, which must not exist.
    pub fn checkpoint(&self, dest: &Path) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        let copy = || -> Result<()> {
            let cp = rocksdb::checkpoint::Checkpoint::new(&self.db)?;
            cp.create_checkpoint(dest)?;
            Ok(())
        };
        match &self.tier {
            // RocksDB as of one checkpoint: everything the tier took before it, nothing after.
            Some(t) => t.checkpoint(&self.db, &self.families, |_| copy()),
            None => copy(),
        }
    }

    /// Compacts every family fully (reclaims space of deleted and expired records now).
    pub fn compact_all(&self) {
        if self.read_only {
            return;
        }
        for cf in [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE] {
            self.db
                .compact_range_cf(self.cf(cf), None::<&[u8]>, None::<&[u8]>);
        }
    }

    /// Waits until no compaction is pending or running (tests of the compaction triggers).
    #[cfg(test)]
    pub(crate) fn wait_for_compactions(&self) -> Result<()> {
        self.db
            .wait_for_compact(&rocksdb::WaitForCompactOptions::default())?;
        Ok(())
    }

    /// An integer property of the engine (e.g. `rocksdb.estimate-num-keys`) summed over families.
    pub fn property_sum(&self, name: &str) -> u64 {
        [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE]
            .iter()
            .filter_map(|cf| {
                self.db
                    .property_int_value_cf(self.cf(cf), name)
                    .ok()
                    .flatten()
            })
            .sum()
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Some(t) = &self.tier {
            t.stop();
            if let Some(handle) = self.checkpointer.lock().take() {
                let _ = handle.join();
            }
            // Whatever the sync policy, records still in memory reach the operating system.
            let _ = t.write_out();
        }
        // Stop and wait for RocksDB's flushes and compactions while this handle still holds
        // the database. The `data`/`zscore` compaction filters upgrade a weak handle to look
        // up metadata: if one held the last strong handle when this one went, the compaction
        // thread would close the database itself and wait forever for its own compaction (a
        // process exiting then hangs joining RocksDB's threads). After this no filter runs,
        // so the database closes here.
        self.db.cancel_all_background_work(true);
    }
}

/// Deletes the oldest `NNN.log` files of the archive directory `dir` until they hold `limit`
/// bytes at most, and those older than `ttl` seconds (0: no age limit).
fn prune_archive(dir: &Path, limit: u64, ttl: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let max_age = Duration::from_secs(ttl);
    let mut files: Vec<(u64, u64, bool, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let number = name.to_str()?.strip_suffix(".log")?.parse::<u64>().ok()?;
            let meta = e.metadata().ok()?;
            let old = ttl > 0
                && meta
                    .modified()
                    .ok()
                    .and_then(|m| m.elapsed().ok())
                    .is_some_and(|age| age > max_age);
            Some((number, meta.len(), old, e.path()))
        })
        .collect();
    files.sort();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    for (_, size, old, path) in files {
        if total <= limit && !old {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= size;
        }
    }
}

/// The ids RocksDB's write batches give Strata's column families (meta, data, zscore,
/// expire), read off a batch that names each of them (nothing is written).
fn learn_cf_ids(db: &DB) -> Result<[u32; 4]> {
    let mut ids = [0u32; 4];
    for (slot, name) in [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE].iter().enumerate() {
        let cf = db
            .cf_handle(name)
            .ok_or_else(|| Error::Storage(format!("column family {name} missing after open")))?;
        let mut probe = crate::storage::new_batch();
        probe.put_cf(cf, b"", b"");
        match pending::decode_batch(probe.data())?.1.first() {
            Some(BatchOp::Put { cf, .. }) => ids[slot] = *cf,
            _ => {
                return Err(Error::Storage(
                    "cannot read a write batch's column family".into(),
                ))
            }
        }
    }
    Ok(ids)
}

/// Turns an engine error at open into a data-model error that names the directory.
fn open_error(path: &Path, e: rocksdb::Error) -> Error {
    let text = e.into_string();
    if text.contains("LOCK") || text.contains("lock file") {
        Error::Locked(format!(
            "data directory {} is in use by another process (a running strata-server?): {text}",
            path.display()
        ))
    } else if text.contains("Column famil") || text.contains("column famil") {
        Error::NotStrata(format!(
            "{} is a RocksDB database without Strata's column families ({text})",
            path.display()
        ))
    } else {
        Error::Storage(format!("cannot open {}: {text}", path.display()))
    }
}

/// Free bytes available to unprivileged users on the filesystem holding `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized, writable struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The compaction filter of the `data` and `zscore` families: drops a record when the metadata
/// it belongs to is gone, expired, an inline string (not a collection or a fragmented string),
/// or of another version, and a list's item whose index lies outside the list's `head..tail`
/// (an item popped or trimmed: `list.rs` writes only the metadata, see below). One is made per
/// compaction ([`OrphanFilters`]), and a compaction meets a collection's records one after
/// another, so it keeps its decision for the last collection met (key and version) for that
/// collection's next records instead of reading the metadata again for each: a metadata read
/// per record was a quarter of the server's CPU while a million small hashes compacted. A
/// reused `Remove` is final (a version is never made again); a reused `Keep` at worst leaves an
/// orphan to a later compaction, and reads never see one (they check the version).
///
/// Why dropping a list's records outside the bounds it reads is safe: the bounds are read from
/// RocksDB after the compaction's input files were fixed, and an index only comes back inside a
/// list's bounds in a batch that writes its item too (a push, LINSERT or LREM moving items,
/// LSET inside the bounds): without the write-back tier that batch is one RocksDB write, and a
/// checkpoint writes a layer's metadata before its other records. So an item record in the
/// input whose index the bounds read leave out was garbage when they were read, and if the
/// index has come back since, its new record is newer than the input (a later write or an
/// ingested file): dropping the old one hides nothing. A dropped record becomes a deletion
/// below which older versions of its key stay hidden, and those are garbage too. A reused
/// decision is bounds read during this compaction, so the same holds for it.
struct OrphanFilter {
    handle: Arc<OnceLock<Weak<DB>>>,
    name: &'static CStr,
    /// The last collection decided for (its data key up to the version) and what goes.
    last: Option<(Vec<u8>, Owner)>,
}

/// What [`OrphanFilter`] decided for one collection's records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// Gone, expired or of another version: every record goes.
    Gone,
    /// Live: every record stays.
    Live,
    /// A live list: the records of the items at indexes `head..tail` stay, the rest go.
    List(u64, u64),
}

impl Owner {
    fn removes(self, sub: &[u8]) -> bool {
        match self {
            Owner::Gone => true,
            Owner::Live => false,
            Owner::List(head, tail) => {
                crate::list::idx_of(sub).is_some_and(|i| !(head..tail).contains(&i))
            }
        }
    }
}

impl CompactionFilter for OrphanFilter {
    fn filter(&mut self, _level: u32, key: &[u8], _value: &[u8]) -> Decision {
        let Some((dbi, user_key, version, sub)) = keys::split_data_key(key) else {
            return Decision::Keep;
        };
        let collection = &key[..key.len() - sub.len()];
        let owner = match &mut self.last {
            Some((c, owner)) if c == collection => *owner,
            last => {
                let owner = orphan_decision_read(&self.handle, dbi, user_key, version);
                let (c, o) = last.get_or_insert_with(|| (Vec::new(), Owner::Live));
                c.clear();
                c.extend_from_slice(collection);
                *o = owner;
                owner
            }
        };
        match owner.removes(sub) {
            true => Decision::Remove,
            false => Decision::Keep,
        }
    }

    fn name(&self) -> &CStr {
        self.name
    }
}

/// Makes an [`OrphanFilter`] for each compaction of a family.
struct OrphanFilters {
    handle: Arc<OnceLock<Weak<DB>>>,
    name: &'static CStr,
}

impl CompactionFilterFactory for OrphanFilters {
    type Filter = OrphanFilter;

    fn create(&mut self, _context: CompactionFilterContext) -> OrphanFilter {
        OrphanFilter {
            handle: self.handle.clone(),
            name: self.name,
            last: None,
        }
    }

    fn name(&self) -> &CStr {
        self.name
    }
}

/// [`OrphanFilter`]'s decision for one collection, from its metadata in RocksDB.
fn orphan_decision_read(
    handle: &OnceLock<Weak<DB>>,
    dbi: u8,
    user_key: &[u8],
    version: u64,
) -> Owner {
    let Some(db) = handle.get().and_then(Weak::upgrade) else {
        return Owner::Live;
    };
    let Some(cf) = db.cf_handle(CF_META) else {
        return Owner::Live;
    };
    let decision = match db.get_pinned_cf(cf, keys::meta_key(dbi, user_key)) {
        Ok(None) => Owner::Gone,
        Ok(Some(raw)) => match meta::Meta::decode(&raw) {
            Ok(m) if m.is_expired(now_ms()) => Owner::Gone,
            Ok(m) if m.version() != Some(version) || !m.owns_sub_keys() => Owner::Gone,
            Ok(m) if m.kind == meta::KeyType::List => match crate::list::bounds_of(&m.body) {
                Some((head, tail)) => Owner::List(head, tail),
                None => Owner::Live,
            },
            _ => Owner::Live,
        },
        Err(_) => Owner::Live,
    };
    decision
}

/// Small storage options for unit tests: 8 MB block cache, 4 MB write buffers, 1 MB hot cache,
/// no compression, no syncs, no write-back tier.
#[cfg(test)]
pub(crate) fn test_options() -> StorageOptions {
    StorageOptions {
        block_cache_size: 8 << 20,
        write_buffer_size: 4 << 20,
        compression: Compression::None,
        sync: SyncPolicy::No,
        batch_wal_writes: false,
        read_only: false,
        create_if_missing: true,
        min_free_disk: 0,
        wal_ttl_seconds: 0,
        wal_size_limit_mb: 0,
        hot_cache_size: 1 << 20,
        write_back: None,
        tuning: Default::default(),
    }
}

/// The moment a multi-key read reads RocksDB at ([`Storage::read_known`]): a snapshot, or now.
struct Moment<'a>(Option<rocksdb::SnapshotWithThreadMode<'a, DB>>);

impl Moment<'_> {
    fn read_options(&self) -> ReadOptions {
        let mut ro = ReadOptions::default();
        if let Some(snapshot) = &self.0 {
            ro.set_snapshot(snapshot);
        }
        ro
    }
}

#[cfg(test)]
mod tests {
    use super::{new_batch, test_options, Storage, StorageOptions, CF_DATA, CF_META};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    /// A list's records outside `head..tail` go and those inside stay; records that are not
    /// 8-byte indexes stay; a gone collection's records all go and a live one's all stay.
    #[test]
    fn the_orphan_filter_drops_a_lists_records_outside_its_bounds_only() {
        use super::Owner;
        let at = |i: u64| i.to_be_bytes();
        let list = Owner::List(10, 20);
        assert!(list.removes(&at(9)));
        assert!(!list.removes(&at(10)));
        assert!(!list.removes(&at(19)));
        assert!(list.removes(&at(20)));
        assert!(list.removes(&at(u64::MAX)));
        assert!(!list.removes(b"short"));
        assert!(Owner::List(5, 5).removes(&at(5)));
        assert!(Owner::Gone.removes(&at(15)));
        assert!(!Owner::Live.removes(&at(9)));
    }

    /// What the hot-record cache holds at `key` of family `cf`.
    fn cached(s: &Storage, cf: &str, key: &[u8]) -> Option<Vec<u8>> {
        s.hot(s.cf_id(cf))?.with(key, <[u8]>::to_vec)
    }

    /// Opens `dir` with the write-back tier, as the server does by default.
    fn open_tiered(dir: &std::path::Path) -> crate::error::Result<Storage> {
        let opts = StorageOptions {
            write_back: Some(1 << 20),
            ..test_options()
        };
        Storage::open(dir, &opts)
    }

    fn put_meta(s: &Storage, key: &[u8], value: &[u8]) -> crate::error::Result<()> {
        let mut b = new_batch();
        b.put_cf(s.cf(CF_META), key, value);
        s.write(b)
    }

    fn complete(s: &Storage, cf: &str) -> bool {
        s.hot(s.cf_id(cf)).is_some_and(|c| c.complete())
    }

    /// A fresh directory under the tier: every record the families gain passes through a
    /// checkpoint into the cache, so a miss of the layers and the cache is a miss, answered
    /// without RocksDB (a record put behind the cache's back, which only a test can do, is
    /// not seen), until a record is left out of the cache; then RocksDB is read again.
    #[test]
    fn a_fresh_directory_answers_misses_without_rocksdb_until_a_record_is_left_out() -> R {
        let dir = tempfile::tempdir()?;
        let s = open_tiered(dir.path())?;
        assert!(complete(&s, CF_META) && complete(&s, CF_DATA));
        s.raw().put_cf(s.cf(CF_META), b"behind", b"x")?;
        assert_eq!(s.get(CF_META, b"behind")?, None);
        let keys = [b"behind".to_vec(), b"a".to_vec()];
        assert_eq!(s.multi_get(CF_META, &keys)?, vec![None, None]);
        assert_eq!(s.multi_exists(CF_META, &keys)?, vec![false, false]);

        put_meta(&s, b"a", b"1")?;
        assert_eq!(s.get(CF_META, b"a")?, Some(b"1".to_vec()), "from the layer");
        s.checkpoint_tier()?;
        assert!(
            complete(&s, CF_META),
            "a checkpoint hands its records to the cache"
        );
        assert_eq!(s.get(CF_META, b"a")?, Some(b"1".to_vec()), "from the cache");
        assert_eq!(s.multi_exists(CF_META, &keys)?, vec![false, true]);

        // Forgetting a key that still has a record ends it: RocksDB answers again.
        s.hot(s.cf_id(CF_META)).ok_or("no cache")?.remove(b"a");
        assert!(!complete(&s, CF_META));
        assert!(complete(&s, CF_DATA), "per family");
        assert_eq!(s.get(CF_META, b"a")?, Some(b"1".to_vec()));
        assert_eq!(s.get(CF_META, b"behind")?, Some(b"x".to_vec()));
        assert_eq!(s.multi_exists(CF_META, &keys)?, vec![true, true]);
        Ok(())
    }

    /// A directory whose families hold records opens incomplete: its records were never
    /// handed to this process's cache.
    #[test]
    fn a_directory_holding_records_opens_incomplete_and_reads_them_from_rocksdb() -> R {
        let dir = tempfile::tempdir()?;
        {
            let s = open_tiered(dir.path())?;
            put_meta(&s, b"a", b"1")?;
            s.checkpoint_tier()?;
        }
        let s = open_tiered(dir.path())?;
        assert!(!complete(&s, CF_META));
        assert!(complete(&s, CF_DATA), "the data family is still empty");
        assert_eq!(s.get(CF_META, b"a")?, Some(b"1".to_vec()));
        Ok(())
    }

    /// A deleted range of every key (FLUSHALL) leaves nothing behind, so the family stays
    /// complete; a smaller one (FLUSHDB) hides records the cache may have held for others' keys
    /// of the family, so it ends completeness.
    #[test]
    fn flushall_keeps_a_family_complete_and_a_smaller_deleted_range_ends_it() -> R {
        let dir = tempfile::tempdir()?;
        let s = open_tiered(dir.path())?;
        put_meta(&s, b"\x00a", b"1")?;
        put_meta(&s, b"\x01b", b"2")?;
        s.checkpoint_tier()?;
        let (from, to) = crate::keys::every_key();
        let mut b = new_batch();
        b.delete_range_cf(s.cf(CF_META), from, to);
        s.write(b)?;
        put_meta(&s, b"\x01c", b"3")?;
        s.checkpoint_tier()?;
        assert!(complete(&s, CF_META));
        assert_eq!(s.get(CF_META, b"\x00a")?, None);
        assert_eq!(s.get(CF_META, b"\x01c")?, Some(b"3".to_vec()));

        let mut b = new_batch();
        b.delete_range_cf(
            s.cf(CF_META),
            crate::keys::db_start(0),
            crate::keys::db_end(0),
        );
        s.write(b)?;
        s.checkpoint_tier()?;
        assert!(!complete(&s, CF_META));
        assert_eq!(
            s.get(CF_META, b"\x01c")?,
            Some(b"3".to_vec()),
            "read from RocksDB"
        );
        Ok(())
    }

    /// A checkpointed record the cache cannot take (too large, or a stream entry marked cold)
    /// ends its family's completeness, and is then read from RocksDB.
    #[test]
    fn a_record_the_cache_does_not_take_ends_completeness_and_is_read_from_rocksdb() -> R {
        let dir = tempfile::tempdir()?;
        let s = open_tiered(dir.path())?;
        let big = vec![7u8; 64 << 10];
        put_meta(&s, b"big", &big)?;
        s.checkpoint_tier()?;
        assert!(!complete(&s, CF_META));
        assert_eq!(s.get(CF_META, b"big")?, Some(big));

        assert!(complete(&s, CF_DATA));
        let mut b = new_batch();
        b.put_cf(s.cf(CF_DATA), b"entry", b"v");
        s.write_cold(b)?;
        s.checkpoint_tier()?;
        assert!(!complete(&s, CF_DATA));
        assert_eq!(s.get(CF_DATA, b"entry")?, Some(b"v".to_vec()));
        Ok(())
    }

    /// With the write-back tier, writers leave the hot-record cache alone and readers consult
    /// the tier's layers first; a checkpoint hands the layer it retires to the cache. So reads
    /// never see a cached record older than the layer's, and after a checkpoint the cache holds
    /// what the layer held: puts cached, deletes and deleted ranges forgotten, cold puts (stream
    /// entries) left out.
    #[test]
    fn a_multi_key_read_sees_a_write_batch_whole_while_writes_and_checkpoints_go_on() -> R {
        multi_key_reads_see_batches_whole(Some(1 << 20))
    }

    #[test]
    fn without_the_tier_a_multi_key_read_sees_a_write_batch_whole_too() -> R {
        multi_key_reads_see_batches_whole(None)
    }

    /// Reads of three keys beside a writer that sets all three to the same value in each batch
    /// (and, with the tier, checkpoints often): every read sees one batch's values.
    fn multi_key_reads_see_batches_whole(write_back: Option<usize>) -> R {
        let dir = tempfile::tempdir()?;
        let opts = StorageOptions {
            write_back,
            ..test_options()
        };
        let s = Arc::new(Storage::open(dir.path(), &opts)?);
        // Each read waits between its keys: without one moment's view, a write lands between.
        s.read_pause_us.store(200, Ordering::Relaxed);
        let keys = [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (s, stop) = (s.clone(), stop.clone());
            std::thread::spawn(move || -> crate::error::Result<u64> {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let mut b = new_batch();
                    for k in [&b"a"[..], b"b", b"c"] {
                        b.put_cf(s.cf(CF_META), k, n.to_string());
                    }
                    s.write(b)?;
                    // Records move from the layers to the hot-record cache and RocksDB.
                    if n.is_multiple_of(50) && s.tier.is_some() {
                        s.checkpoint_tier()?;
                    }
                }
                Ok(n)
            })
        };
        let mut reads = 0;
        while reads < 2000 {
            let got = s.multi_get(CF_META, &keys)?;
            assert!(got.iter().all(|v| *v == got[0]), "read {reads}: {got:?}");
            assert_eq!(s.multi_exists(CF_META, &keys)?.len(), 3);
            reads += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let written = writer.join().map_err(|_| "writer panicked")??;
        assert!(
            written > 100,
            "the writer ran alongside ({written} batches)"
        );
        Ok(())
    }

    #[test]
    fn with_the_tier_reads_see_the_layers_over_the_cache_and_checkpoints_refill_it() -> R {
        let dir = tempfile::tempdir()?;
        let opts = StorageOptions {
            write_back: Some(1 << 20),
            ..test_options()
        };
        let s = Storage::open(dir.path(), &opts)?;
        let put = |cf: &str, k: &[u8], v: &[u8]| {
            let mut b = new_batch();
            b.put_cf(s.cf(cf), k, v);
            s.write(b)
        };
        put(CF_META, b"a", b"1")?;
        put(CF_META, b"b", b"1")?;
        assert_eq!(
            cached(&s, CF_META, b"a"),
            None,
            "a write does not fill the cache"
        );
        s.checkpoint_tier()?;
        assert_eq!(cached(&s, CF_META, b"a"), Some(b"1".to_vec()));

        // The cache's record is older than the layer's: readers see the layer's.
        put(CF_META, b"a", b"2")?;
        assert_eq!(cached(&s, CF_META, b"a"), Some(b"1".to_vec()));
        assert_eq!(s.get(CF_META, b"a")?, Some(b"2".to_vec()));
        assert_eq!(
            s.multi_get(CF_META, &[b"a".to_vec(), b"b".to_vec()])?,
            vec![Some(b"2".to_vec()), Some(b"1".to_vec())]
        );
        let mut b = new_batch();
        b.delete_cf(s.cf(CF_META), b"b");
        s.write(b)?;
        assert_eq!(
            s.get(CF_META, b"b")?,
            None,
            "a delete in the layer hides the cache"
        );
        assert_eq!(s.multi_exists(CF_META, &[b"b".to_vec()])?, vec![false]);
        s.checkpoint_tier()?;
        assert_eq!(cached(&s, CF_META, b"a"), Some(b"2".to_vec()));
        assert_eq!(cached(&s, CF_META, b"b"), None);
        assert_eq!(s.get(CF_META, b"b")?, None);

        // A deleted range forgets the family's cached records; later puts are cached.
        put(CF_DATA, b"d1", b"x")?;
        s.checkpoint_tier()?;
        assert_eq!(cached(&s, CF_DATA, b"d1"), Some(b"x".to_vec()));
        let mut b = new_batch();
        b.delete_range_cf(s.cf(CF_DATA), b"d", b"e");
        b.put_cf(s.cf(CF_DATA), b"d2", b"y");
        s.write(b)?;
        assert_eq!(s.get(CF_DATA, b"d1")?, None);
        s.checkpoint_tier()?;
        assert_eq!(cached(&s, CF_DATA, b"d1"), None);
        assert_eq!(cached(&s, CF_DATA, b"d2"), Some(b"y".to_vec()));
        assert_eq!(s.get(CF_DATA, b"d1")?, None);

        // A cold put is read from the layer, then from RocksDB: a checkpoint does not hand it
        // to the cache; a point read that finds it in RocksDB caches it as any other record.
        let mut b = new_batch();
        b.put_cf(s.cf(CF_DATA), b"entry", b"e");
        s.write_cold(b)?;
        assert_eq!(s.get(CF_DATA, b"entry")?, Some(b"e".to_vec()));
        s.checkpoint_tier()?;
        assert_eq!(cached(&s, CF_DATA, b"entry"), None);
        assert_eq!(s.get(CF_DATA, b"entry")?, Some(b"e".to_vec()));
        assert_eq!(cached(&s, CF_DATA, b"entry"), Some(b"e".to_vec()));
        Ok(())
    }

    #[test]
    fn with_the_tier_a_point_read_caches_what_only_rocksdb_had_until_a_checkpoint_replaces_it() -> R
    {
        let dir = tempfile::tempdir()?;
        let opts = StorageOptions {
            write_back: Some(1 << 20),
            ..test_options()
        };
        let s = Arc::new(Storage::open(dir.path(), &opts)?);
        let put = |s: &Storage, k: &[u8], v: &[u8]| {
            let mut b = new_batch();
            b.put_cf(s.cf(CF_META), k, v);
            s.write(b)
        };
        put(&s, b"a", b"1")?;
        s.checkpoint_tier()?;
        s.forget_all();
        assert_eq!(cached(&s, CF_META, b"a"), None);
        assert_eq!(s.get(CF_META, b"a")?, Some(b"1".to_vec()));
        assert_eq!(cached(&s, CF_META, b"a"), Some(b"1".to_vec()), "filled");
        assert_eq!(s.get(CF_META, b"missing")?, None);
        assert_eq!(cached(&s, CF_META, b"missing"), None);

        // A later write is read from its layer, and its checkpoint replaces the entry.
        put(&s, b"a", b"2")?;
        assert_eq!(s.get(CF_META, b"a")?, Some(b"2".to_vec()));
        s.checkpoint_tier()?;
        assert_eq!(cached(&s, CF_META, b"a"), Some(b"2".to_vec()));

        // A read that found "2" in RocksDB and fills the cache only after another thread wrote
        // "3" and a checkpoint retired it must not leave "2" cached.
        s.forget_all();
        s.fill_pause_ms.store(300, Ordering::Relaxed);
        let reader = {
            let s = s.clone();
            std::thread::spawn(move || s.get(CF_META, b"a"))
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        s.fill_pause_ms.store(0, Ordering::Relaxed);
        put(&s, b"a", b"3")?;
        s.checkpoint_tier()?;
        let read = reader.join().map_err(|_| "reader panicked")??;
        assert_eq!(
            read,
            Some(b"2".to_vec()),
            "the read itself came before the write"
        );
        assert_ne!(
            cached(&s, CF_META, b"a"),
            Some(b"2".to_vec()),
            "stale entry left"
        );
        assert_eq!(s.get(CF_META, b"a")?, Some(b"3".to_vec()));
        Ok(())
    }
}
