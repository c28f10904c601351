//! Figures about the storage engine and the directory on disk, in plain numbers (no RocksDB types):
//! file sizes per level, memtables, pending compaction work, disk use, and the gauges a monitor
//! polls (block cache, table readers, write stalls, running background jobs). `strata stats`,
//! the server's INFO and its metrics endpoint read them; the keyspace figures come from
//! iteration (`iter.rs`).

use std::path::Path;

use crate::db::Db;
use crate::storage::{Storage, CF_DATA, CF_EXPIRE, CF_META, CF_ZSCORE};

/// Engine figures, summed over Strata's column families.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineInfo {
    /// Bytes in table (SST) files.
    pub sst_bytes: u64,
    /// Bytes held by memtables (written, not yet flushed to table files).
    pub memtable_bytes: u64,
    /// The engine's estimate of the bytes of live data.
    pub live_data_bytes: u64,
    /// The engine's estimate of the number of records (all families; not the number of keys).
    pub estimated_records: u64,
    /// Bytes the engine estimates compaction still has to rewrite.
    pub pending_compaction_bytes: u64,
    /// Compactions running now.
    pub running_compactions: u64,
    /// Whether at least one compaction is due.
    pub compaction_pending: bool,
    /// Number of table files at each level (0 = newest).
    pub files_per_level: Vec<u64>,
    /// Bytes of every file in the data directory (tables, logs, metadata).
    pub disk_bytes: u64,
}

/// The engine's gauges and counters a monitor polls: cheap to read (properties and counters
/// only, no walk of the directory). INFO's `strata_*` memory fields and the metrics endpoint's
/// `strata_rocksdb_*` series both come from here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineGauges {
    /// The shared block cache's capacity, in bytes.
    pub block_cache_capacity: u64,
    /// Bytes the block cache holds now (data, index and filter blocks).
    pub block_cache_usage: u64,
    /// Bytes of the block cache pinned by readers (not evictable now).
    pub block_cache_pinned: u64,
    /// Block cache lookups that found the block, since the directory was opened.
    pub block_cache_hits: u64,
    /// Block cache lookups that had to read the block from a file.
    pub block_cache_misses: u64,
    /// Bytes held by memtables (active and immutable, not yet flushed), every family.
    pub memtable_bytes: u64,
    /// Memory of table readers not charged to the block cache (per-file index/filter metadata).
    pub table_readers_bytes: u64,
    /// Bytes compaction estimates it still has to rewrite.
    pub pending_compaction_bytes: u64,
    /// Microseconds writes were held back (delayed or stopped) since the directory was opened.
    pub write_stall_micros: u64,
    /// Bytes of the table files the current version uses.
    pub live_sst_bytes: u64,
    /// Bytes of every table file, including those kept only for snapshots or checkpoints.
    pub total_sst_bytes: u64,
    /// Table files at level 0 (many of them slow reads and, past a limit, stall writes).
    pub l0_files: u64,
    /// Compactions running now.
    pub running_compactions: u64,
    /// Memtable flushes running now.
    pub running_flushes: u64,
    /// Bytes compactions read from table files since the directory was opened.
    pub compaction_read_bytes: u64,
    /// Bytes compactions wrote to table files since the directory was opened.
    pub compaction_written_bytes: u64,
    /// Whether the hot-record cache's `meta` and `data` families are complete: a miss of the
    /// tier's layers and the cache is then answered without RocksDB (`hot.rs`).
    pub hot_cache_complete: [bool; 2],
}

const FAMILIES: [&str; 4] = [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE];
const LEVELS: usize = 7;

/// An integer property of the engine, added up over the data's column families.
fn sum_over_families(s: &Storage, name: &str) -> u64 {
    FAMILIES
        .iter()
        .filter_map(|cf| s.property_int(cf, name))
        .sum()
}

impl Db {
    /// Engine and disk figures for the whole directory.
    pub fn engine_info(&self) -> EngineInfo {
        let s = self.storage();
        let sum = |name: &str| sum_over_families(s, name);
        let files_per_level = (0..LEVELS)
            .map(|l| {
                FAMILIES
                    .iter()
                    .filter_map(|cf| s.property_text(cf, &format!("rocksdb.num-files-at-level{l}")))
                    .filter_map(|v| v.trim().parse::<u64>().ok())
                    .sum()
            })
            .collect();
        EngineInfo {
            sst_bytes: sum("rocksdb.total-sst-files-size"),
            memtable_bytes: sum("rocksdb.cur-size-all-mem-tables"),
            live_data_bytes: sum("rocksdb.estimate-live-data-size"),
            estimated_records: sum("rocksdb.estimate-num-keys"),
            pending_compaction_bytes: sum("rocksdb.estimate-pending-compaction-bytes"),
            running_compactions: s
                .property_int(CF_META, "rocksdb.num-running-compactions")
                .unwrap_or(0),
            compaction_pending: sum("rocksdb.compaction-pending") > 0,
            files_per_level,
            disk_bytes: dir_size(self.path()),
        }
    }
}

impl Db {
    /// The gauges a monitor polls (see [`EngineGauges`]).
    pub fn engine_gauges(&self) -> EngineGauges {
        let s = self.storage();
        let sum = |name: &str| sum_over_families(s, name);
        // The block cache and the background jobs are shared: any one family reports them.
        let one = |name: &str| s.property_int(CF_META, name).unwrap_or(0);
        let tickers = s
            .db_property_text("rocksdb.options-statistics")
            .unwrap_or_default();
        let ticker = |name: &str| parse_ticker(&tickers, name).unwrap_or(0);
        EngineGauges {
            block_cache_capacity: one("rocksdb.block-cache-capacity"),
            block_cache_usage: one("rocksdb.block-cache-usage"),
            block_cache_pinned: one("rocksdb.block-cache-pinned-usage"),
            block_cache_hits: ticker("rocksdb.block.cache.hit"),
            block_cache_misses: ticker("rocksdb.block.cache.miss"),
            memtable_bytes: sum("rocksdb.cur-size-all-mem-tables"),
            table_readers_bytes: sum("rocksdb.estimate-table-readers-mem"),
            pending_compaction_bytes: sum("rocksdb.estimate-pending-compaction-bytes"),
            write_stall_micros: self.write_stall_ms().unwrap_or(0) * 1000,
            live_sst_bytes: sum("rocksdb.live-sst-files-size"),
            total_sst_bytes: sum("rocksdb.total-sst-files-size"),
            l0_files: FAMILIES
                .iter()
                .filter_map(|cf| s.property_text(cf, "rocksdb.num-files-at-level0"))
                .filter_map(|v| v.trim().parse::<u64>().ok())
                .sum(),
            running_compactions: one("rocksdb.num-running-compactions"),
            running_flushes: one("rocksdb.num-running-flushes"),
            compaction_read_bytes: ticker("rocksdb.compact.read.bytes"),
            compaction_written_bytes: ticker("rocksdb.compact.write.bytes"),
            hot_cache_complete: s.hot_cache_complete(),
        }
    }

    /// Milliseconds RocksDB has held writes back (write stalls: delayed or stopped writes) since
    /// the directory was opened, from the `Cumulative stall` line of `rocksdb.dbstats`; None if
    /// the engine does not report it.
    pub fn write_stall_ms(&self) -> Option<u64> {
        let text = self.storage().db_property_text("rocksdb.dbstats")?;
        parse_cumulative_stall(&text)
    }

    /// The slowest active expiry cycle since this was last asked, in ms (0 when none ran).
    pub fn take_slowest_expire_cycle_ms(&self) -> u64 {
        self.inner
            .slowest_expire_cycle_ms
            .swap(0, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Reads the `COUNT` of ticker `name` from the statistics text (`rocksdb.block.cache.hit COUNT : 12`).
fn parse_ticker(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.trim_start().strip_prefix("COUNT")?;
        rest.trim_start().strip_prefix(':')?.trim().parse().ok()
    })
}

/// Reads `Cumulative stall: HH:MM:SS.sss H:M:S, ...` as milliseconds.
fn parse_cumulative_stall(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Cumulative stall:"))?;
    let hms = line.split_whitespace().next()?;
    let mut parts = hms.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(((h * 3600.0 + m * 60.0 + s) * 1000.0) as u64)
}

/// Total size of the files under `path` (0 for what cannot be read).
pub(crate) fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn cumulative_stall_reads_as_milliseconds() {
        let text = "** DB Stats **\nUptime(secs): 1.0 total\nCumulative stall: 00:01:2.500 H:M:S, 0.0 percent\nInterval stall: 00:00:0.000 H:M:S, 0.0 percent\n";
        assert_eq!(super::parse_cumulative_stall(text), Some(62_500));
        assert_eq!(super::parse_cumulative_stall("nothing"), None);
    }

    #[test]
    fn ticker_counts_read_from_statistics_text() {
        let text = "rocksdb.block.cache.miss COUNT : 7\nrocksdb.block.cache.hit COUNT : 42\nrocksdb.block.cache.hit.x COUNT : 1\n";
        assert_eq!(
            super::parse_ticker(text, "rocksdb.block.cache.hit"),
            Some(42)
        );
        assert_eq!(
            super::parse_ticker(text, "rocksdb.block.cache.miss"),
            Some(7)
        );
        assert_eq!(super::parse_ticker(text, "rocksdb.stall.micros"), None);
    }
}
