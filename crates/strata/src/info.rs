//! Figures about the storage engine and the directory on disk, in plain numbers (no RocksDB types):
//! file sizes per level, memtables, pending compaction work, disk use. `strata stats` and the
//! server's INFO read them; the keyspace figures come from iteration (`iter.rs`).

use std::path::Path;

use crate::db::Db;
use crate::storage::{CF_DATA, CF_EXPIRE, CF_META, CF_ZSCORE};

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

const FAMILIES: [&str; 4] = [CF_META, CF_DATA, CF_ZSCORE, CF_EXPIRE];
const LEVELS: usize = 7;

impl Db {
    /// Engine and disk figures for the whole directory.
    pub fn engine_info(&self) -> EngineInfo {
        let s = self.storage();
        let sum = |name: &str| -> u64 {
            FAMILIES
                .iter()
                .filter_map(|cf| s.property_int(cf, name))
                .sum()
        };
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
}
