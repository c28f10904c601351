//! `stats`: keys per type and logical database with their sizes (string bytes, collection
//! members) and expiries, from one streaming pass over the keyspace, plus the engine's figures
//! (table files per level, memtables, pending compaction) and the directory's disk use.

use std::path::Path;

use serde_json::{json, Map, Value};
use strata::{KeyFilter, KeyType};

use crate::exit::Outcome;
use crate::progress;
use crate::render::{print_json, type_name};

const TYPES: [KeyType; 6] = [
    KeyType::String,
    KeyType::Hash,
    KeyType::List,
    KeyType::Set,
    KeyType::ZSet,
    KeyType::Stream,
];

/// Per-type figures of one database.
#[derive(Default, Clone, Copy)]
struct TypeStats {
    keys: u64,
    /// String bytes or collection members.
    size: u64,
    expiring: u64,
}

fn slot(kind: KeyType) -> usize {
    TYPES.iter().position(|t| *t == kind).unwrap_or(0)
}

/// Total size of the files under `path`.
pub fn dir_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// `stats`.
pub fn stats(db: &strata::Db, as_json: bool) -> Outcome {
    let bar = progress::counter("keys counted");
    let mut per_db: Vec<(u32, [TypeStats; 6])> = Vec::new();
    let mut seen = 0u64;
    for index in 0..db.databases() {
        let d = db.select(index)?;
        let mut t = [TypeStats::default(); 6];
        for info in d.iter(KeyFilter::new()) {
            let info = info?;
            let s = &mut t[slot(info.kind)];
            s.keys += 1;
            s.size += info.size;
            s.expiring += u64::from(info.expire_at.is_some());
            seen += 1;
            if seen.is_multiple_of(4096) {
                bar.set_position(seen);
            }
        }
        if t.iter().any(|s| s.keys > 0) {
            per_db.push((index, t));
        }
    }
    bar.finish_and_clear();
    let e = db.engine_info();
    if as_json {
        let dbs: Map<String, Value> = per_db
            .iter()
            .map(|(i, t)| {
                let types: Map<String, Value> = TYPES
                    .iter()
                    .zip(t.iter())
                    .filter(|(_, s)| s.keys > 0)
                    .map(|(k, s)| {
                        let v = json!({"keys": s.keys, "size": s.size, "expiring": s.expiring});
                        (type_name(*k).to_string(), v)
                    })
                    .collect();
                (format!("db{i}"), Value::Object(types))
            })
            .collect();
        print_json(&json!({
            "keys": seen,
            "databases": dbs,
            "disk_bytes": e.disk_bytes,
            "sst_bytes": e.sst_bytes,
            "memtable_bytes": e.memtable_bytes,
            "live_data_bytes": e.live_data_bytes,
            "pending_compaction_bytes": e.pending_compaction_bytes,
            "running_compactions": e.running_compactions,
            "compaction_pending": e.compaction_pending,
            "files_per_level": e.files_per_level,
            "read_only": db.is_read_only(),
        }));
        return Ok(());
    }
    println!("keys: {seen}");
    for (i, t) in &per_db {
        println!("db{i}:");
        for (k, s) in TYPES.iter().zip(t.iter()).filter(|(_, s)| s.keys > 0) {
            let unit = if *k == KeyType::String {
                "bytes"
            } else {
                "members"
            };
            println!(
                "  {:<7} {:>10} keys {:>12} {unit:<7} {:>8} expiring",
                type_name(*k),
                s.keys,
                s.size,
                s.expiring
            );
        }
    }
    println!(
        "disk: {} bytes (tables {} bytes, memtables {} bytes, live data ~{} bytes)",
        e.disk_bytes, e.sst_bytes, e.memtable_bytes, e.live_data_bytes
    );
    println!(
        "compaction: {} pending bytes, {} running, {}; table files per level {:?}",
        e.pending_compaction_bytes,
        e.running_compactions,
        if e.compaction_pending { "due" } else { "idle" },
        e.files_per_level
    );
    Ok(())
}
