//! Loading a Redis RDB file found in a fresh data directory at start-up, as a Redis user expects
//! of `dir`/`dbfilename` (default `dump.rdb`): [`plan`] decides before the directory opens (only
//! a directory without Strata data, or one whose earlier load of the file was interrupted, gets
//! it), [`start`] loads it in a thread of its own while the server answers, every command
//! without Redis's `loading` flag getting `-LOADING` (the replication gate), then lets
//! replication start. The marker file
//! [`MARKER`] is written before the directory is first opened and removed once the loaded data
//! is flushed to disk, so an interrupted load (a crash, SHUTDOWN meanwhile) is redone from
//! emptied data at the next start instead of leaving part of the file. Nothing here parses
//! RDB: `strata::rdb::file` does.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_commands::scripting::functions::rdb_library_loader;

use crate::log::{notice, warning};
use crate::server::Server;

/// In the data directory while a load of the RDB file is unfinished.
pub const MARKER: &str = "rdb-load-unfinished";

/// A file to load at start-up.
pub struct Plan {
    /// The RDB file.
    pub path: PathBuf,
    /// An earlier load was interrupted: the data must be emptied first.
    pub again: bool,
}

/// Whether the RDB file `dbfilename` in `dir` is to be loaded (logging why not when the file is
/// there). Called before the directory is opened; writes the marker when the answer is yes.
pub fn plan(dir: &Path, dbfilename: &Path) -> Result<Option<Plan>, String> {
    let path = dir.join(dbfilename);
    let marker = dir.join(MARKER);
    let again = marker.exists();
    if !path.is_file() {
        if again {
            warning!(
                "An earlier load of {} did not finish and the file is gone: the data directory holds part of it (remove {} once it is dealt with)",
                path.display(),
                marker.display()
            );
        }
        return Ok(None);
    }
    if !again && dir.join("CURRENT").exists() {
        notice!(
            "Not loading {}: the data directory already holds Strata data (an RDB file is loaded only into a directory without any)",
            path.display()
        );
        return Ok(None);
    }
    if again {
        warning!(
            "The last load of {} did not finish: loading it again into emptied data",
            path.display()
        );
    } else {
        write_marker(&marker, dbfilename)
            .map_err(|e| format!("Can't write {}: {e}", marker.display()))?;
    }
    Ok(Some(Plan { path, again }))
}

/// Writes the marker and makes it durable before any data is.
fn write_marker(marker: &Path, dbfilename: &Path) -> std::io::Result<()> {
    std::fs::write(marker, format!("{}\n", dbfilename.display()))?;
    File::open(marker)?.sync_all()?;
    if let Some(dir) = marker.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Loads the planned file into the server's directory (its keys and function libraries) in a
/// thread of its own, then flushes it to disk, removes the marker and starts replication (a
/// `replicaof` of the configuration). Clients get `-LOADING` from now until it is done; a file
/// that fails to load ends the process, as redis-server exits when its RDB file doesn't load.
pub fn start(server: &Arc<Server>, plan: Plan) -> std::io::Result<()> {
    // Before `loading:1` shows, so INFO never shows a load without its start and size.
    let total = std::fs::metadata(&plan.path).map(|m| m.len()).unwrap_or(0);
    server.replication.file_load_started(total);
    server.replication.set_loading_file(true, &server.config());
    let s = server.clone();
    std::thread::Builder::new()
        .name("rdb-load".into())
        .spawn(move || {
            let loaded = load_file(&s, &plan);
            s.replication.set_loading_file(false, &s.config());
            if let Err(e) = loaded {
                warning!("{e}");
                warning!("Fatal error loading the DB, check server logs. Exiting.");
                std::process::exit(1);
            }
            crate::replication::start_from_config(&s);
        })?;
    Ok(())
}

/// `key-load-delay` after key number `keys`, as Redis's `debugDelay`: `usec` µs, or for a
/// negative `usec` 1 µs every -`usec` keys (Redis: with odds 1/-`usec`).
fn delay(usec: i64, keys: u64) {
    let usec = if usec < 0 {
        u64::from(keys.is_multiple_of(usec.unsigned_abs()))
    } else {
        usec.unsigned_abs()
    };
    if usec > 0 {
        std::thread::sleep(Duration::from_micros(usec));
    }
}

fn load_file(server: &Server, plan: &Plan) -> Result<(), String> {
    let started = Instant::now();
    let db = &server.db;
    let storage = |e: strata::Error| format!("Loading {}: {e}", plan.path.display());
    if plan.again {
        db.flushall().map_err(storage)?;
        server.functions.flush();
        db.aux_put(strata::function_record::RECORD, &server.functions.dump())
            .map_err(storage)?;
    }
    let file =
        File::open(&plan.path).map_err(|e| format!("Can't open {}: {e}", plan.path.display()))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    notice!(
        "Loading RDB file {} ({total} bytes) into the empty data directory",
        plan.path.display()
    );
    let key_load_delay = server.config().key_load_delay;
    let mut last_log = Instant::now();
    let progress = |bytes: u64, keys: u64| {
        server.replication.file_load_progress(bytes);
        delay(key_load_delay, keys);
        if last_log.elapsed() >= Duration::from_secs(5) {
            last_log = Instant::now();
            let perc = if total == 0 {
                100.0
            } else {
                bytes as f64 * 100.0 / total as f64
            };
            notice!("Loading RDB: {perc:.1}% ({bytes} bytes, {keys} keys)");
        }
    };
    let summary = strata::rdb::file::import(
        db,
        BufReader::with_capacity(1 << 20, file),
        rdb_library_loader(&server.functions, db, true),
        progress,
    )
    .map_err(storage)?;
    db.flush().map_err(storage)?;
    let marker = db.path().join(MARKER);
    std::fs::remove_file(&marker).map_err(|e| format!("Can't remove {}: {e}", marker.display()))?;
    notice!(
        "Done loading RDB, keys loaded: {}, keys expired: {}, function libraries: {}.",
        summary.keys,
        summary.expired,
        summary.functions
    );
    notice!(
        "DB loaded from disk: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
