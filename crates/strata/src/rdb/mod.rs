//! Redis's RDB serialization, as DUMP/RESTORE payloads and RDB files use it (Redis 7.0, RDB
//! version 10): [`encoding`] reads and writes its primitives (lengths, strings, doubles),
//! [`compact`] walks the compact blobs inside values (ziplist, listpack, intset, zipmap),
//! [`value`] decodes and encodes whole values by type byte ([`stream`] those of streams),
//! [`payload`] is the DUMP trailer
//! (version and [`crc64`]), and `restore` applies them to a [`crate::Db`]
//! ([`crate::Db::dump_payload`], [`crate::Db::restore_payload`]); [`file`] loads a whole RDB
//! file and [`save`] writes one. Nothing here knows RESP or
//! command syntax; Strata's own export format is [`crate::dump`], not this.

pub mod compact;
pub mod crc64;
pub mod encoding;
pub mod file;
mod lzf;
pub mod payload;
mod restore;
pub mod save;
pub mod stream;
pub mod value;

pub use restore::{RestoreOptions, Restored};

/// A database in a fresh temporary directory, for this module's tests.
#[cfg(test)]
fn test_db() -> (tempfile::TempDir, crate::Db) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = crate::Db::open(dir.path()).expect("open");
    (dir, db)
}
