//! Which keys a command will touch, so that [`crate::execute`] (one command) and EXEC (a whole
//! transaction) can hold their locks for the duration: readers hold them shared and so never see
//! a half-applied transaction; writers hold them exclusively, so WATCH touches and blocked-client
//! wake-ups happen before anyone else can look. The command table's key positions give most
//! keys; the few commands that reach beyond them (MOVE, COPY ... DB, SORT ... STORE) are listed
//! here. A write without keys (FLUSHDB, FLUSHALL, SWAPDB) needs every lock.

use bytes::Bytes;

use crate::args::is;
use crate::table::CommandSpec;

/// The keys a command touches.
pub enum Targets {
    /// `(database, argv index of the key)` pairs.
    Keys(Vec<(u32, usize)>),
    /// Whole databases: every lock.
    All,
}

/// The keys `argv` (a call of `spec`, run with database `db` selected) touches.
pub fn targets(spec: &CommandSpec, argv: &[Bytes], db: u32) -> Targets {
    if spec.has_flag("write") && !spec.has_keys() {
        return Targets::All;
    }
    let mut keys: Vec<(u32, usize)> = spec
        .key_positions(argv)
        .unwrap_or_default()
        .into_iter()
        .map(|i| (db, i))
        .collect();
    match spec.name {
        // MOVE key db: the key in the other database too.
        "move" => {
            if let Some(other) = argv.get(2).and_then(|a| db_index(a)) {
                keys.push((other, 1));
            }
        }
        // COPY source destination [DB index]: the destination may be in another database.
        "copy" => {
            if let Some(i) = (3..argv.len().saturating_sub(1)).find(|&i| is(&argv[i], "db")) {
                if let Some(other) = db_index(&argv[i + 1]) {
                    keys.push((other, 2));
                }
            }
        }
        // SORT key ... STORE destination.
        "sort" => {
            if let Some(i) = (2..argv.len().saturating_sub(1)).find(|&i| is(&argv[i], "store")) {
                keys.push((db, i + 1));
            }
        }
        _ => {}
    }
    Targets::Keys(keys)
}

/// Whether a command's keys are held exclusively: writers, and scripts that may write.
pub fn exclusive(spec: &CommandSpec) -> bool {
    spec.has_flag("write") || matches!(spec.name, "eval" | "evalsha" | "fcall")
}

/// A database number as SELECT, MOVE and COPY read it (None if it cannot be one).
pub fn db_index(arg: &[u8]) -> Option<u32> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}
