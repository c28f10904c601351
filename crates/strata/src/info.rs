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
