//! Point reads that must wait for the disk. A RocksDB read whose blocks are all in memory
//! (memtables, block cache) runs on the caller's thread; one that would read a table file is
//! handed to the disk-wait hook the server installs ([`set_disk_wait`]: with tokio, its
//! `block_in_place`, so the worker's other connections move to another thread while this one
//! waits). Without it a cold GET held one of the server's two workers for a whole disk read, and
//! at most two reads were in flight whatever the number of clients; the disk wants about twenty.
//! Owns the hook and the two-step read (memory first, then the disk); knows nothing of tokio.

use std::sync::OnceLock;

use rocksdb::{ColumnFamily, DBPinnableSlice, ErrorKind, ReadOptions, ReadTier, DB};

/// Runs a read that waits for the disk (the server's hook), or runs it in place (no hook: tools,
/// tests).
pub type DiskWait = fn(&mut dyn FnMut());

static HOOK: OnceLock<DiskWait> = OnceLock::new();

/// Installs the hook every disk-bound point read runs through (the first call wins).
pub fn set_disk_wait(hook: DiskWait) {
    let _ = HOOK.set(hook);
}

/// Reads `key` of `cf`: from memory on this thread when RocksDB can answer from its memtables
/// and block cache, else through the disk-wait hook.
pub(crate) fn get_pinned<'a>(
    db: &'a DB,
    cf: &ColumnFamily,
    key: &[u8],
) -> Result<Option<DBPinnableSlice<'a>>, rocksdb::Error> {
    let Some(hook) = HOOK.get() else {
        return db.get_pinned_cf(cf, key);
    };
    let mut memory_only = ReadOptions::default();
    memory_only.set_read_tier(ReadTier::BlockCache);
    match db.get_pinned_cf_opt(cf, key, &memory_only) {
        Err(e) if e.kind() == ErrorKind::Incomplete => {}
        done => return done,
    }
    let mut out = None;
    hook(&mut || out = Some(db.get_pinned_cf(cf, key)));
    out.unwrap_or_else(|| db.get_pinned_cf(cf, key))
}
