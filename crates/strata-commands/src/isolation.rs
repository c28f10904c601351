//! Which keys a command will touch, so that [`crate::execute`] (one command) and EXEC (a whole
//! transaction) can hold their locks for the duration: readers hold them shared and so never see
//! a half-applied transaction; writers hold them exclusively, so WATCH touches and blocked-client
//! wake-ups happen before anyone else can look. The row's key rule gives the keys (its custom
//! functions add MOVE's, COPY ... DB's and SORT ... STORE's); a write without keys (FLUSHDB,
//! FLUSHALL, SWAPDB) needs every lock.

use bytes::Bytes;

use crate::command::{CommandSpec, MAY_REPLICATE, SHARED_FIRST, WRITE};

/// The keys a command touches.
pub enum Targets {
    /// `(database, argv index of the key)` pairs.
    Keys(Vec<(u32, usize)>),
    /// Whole databases: every lock.
    All,
}

/// The keys `argv` (a call of `spec`, run with database `db` selected) touches.
pub fn targets(spec: &CommandSpec, argv: &[Bytes], db: u32) -> Targets {
    let mut keys = Vec::new();
    match targets_into(spec, argv, db, &mut keys) {
        true => Targets::All,
        false => Targets::Keys(keys),
    }
}

/// [`targets`] into a list the caller keeps (cleared first: the dispatcher reuses one per
/// session, so a command's keys cost no allocation); true for a whole-database write, which
/// needs every lock (the list is then empty).
pub fn targets_into(
    spec: &CommandSpec,
    argv: &[Bytes],
    db: u32,
    keys: &mut Vec<(u32, usize)>,
) -> bool {
    keys.clear();
    if spec.has(WRITE) && !spec.keys.any() {
        return true;
    }
    spec.targets(argv, db, keys);
    false
}

/// Whether a command's keys are held exclusively: writers, and scripts that may write, but
/// not a command that writes seldom and asks for them exclusively when it must
/// ([`SHARED_FIRST`]: PFCOUNT).
pub fn exclusive(spec: &CommandSpec) -> bool {
    spec.flags.any(WRITE | MAY_REPLICATE) && !spec.has(SHARED_FIRST)
}

pub use crate::command::db_index;
