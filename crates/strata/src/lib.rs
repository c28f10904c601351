//! # strata
//!
//! Redis's data model on RocksDB, as an embeddable library (what bitcask is for Go programs, with
//! Redis's types): open a data directory with [`Db::open`], then call typed, synchronous methods
//! named after Redis commands (`get`, `set`, `hset`, `rpush`, `sadd`, `zadd`, `expire_at`, ...).
//! The Strata server is built on this same API, so the library has the server's semantics; it
//! knows nothing of RESP or the network.
//!
//! ## Guide
//!
//! - **Opening.** [`Db::open`] creates the directory if needed; [`Db::open_with`] takes
//!   [`Options`] (durability [`SyncPolicy`], cache sizes, `create_if_missing`, `read_only`). A
//!   directory another process has open fails with [`Error::Locked`], never with corruption;
//!   [`Db::open_read_only`] reads it anyway, as of the moment it opened.
//! - **Databases.** Like Redis, a directory has numbered logical databases; [`Db::select`] gives
//!   a handle on one. Handles are cheap to clone and safe to share between threads.
//! - **Types.** Strings (`get`, `set`, `incr_by`, ...) and bitmaps over them (`setbit`,
//!   `bitcount`, `bitpos`, `bitop`, `bitfield`), hashes (`hset`, `hget`, [`Db::hash_each`]),
//!   lists (`rpush`, `lrange`, [`Db::list_each`]), sets (`sadd`, `smembers`, [`Db::set_each`]),
//!   sorted sets (`zadd`, `zrange`, [`Db::zset_each`]), geo sets (sorted sets scored by
//!   [`geo::score`], searched with [`Db::geosearch`]), HyperLogLogs (`pfadd`, `pfcount`,
//!   `pfmerge`: strings holding Redis's exact bytes, see [`hll`]), and keys of any type (`del`, `ttl`,
//!   `expire_at`, `rename`, `key_type`). Errors are data-model errors ([`Error::WrongType`], ...).
//! - **Atomic batches.** A [`Batch`] collects writes to many keys; [`Db::apply`] commits them at
//!   once, with every key's lock held.
//! - **Iteration.** [`Db::iter`] streams the keys that pass a [`KeyFilter`] (prefix, range, glob
//!   pattern, type), a page at a time; the `*_each` methods stream one collection's members.
//! - **Moving data.** [`dump::export`] and [`dump::import`] write and read the portable dump
//!   format (documented byte by byte in `docs/format.md`); [`Db::checkpoint`] makes a consistent
//!   copy of the directory; [`Db::check`] verifies it; [`Db::compact`] reclaims space now.
//!
//! Each user key has one metadata record (type, expiry, and for strings the value itself);
//! collection members are versioned sub-keys, so deleting or overwriting a collection of any size
//! is O(1) and compaction reclaims the members later. The byte layout is in `docs/format.md`.
//! No RocksDB type appears in the public API.
//!
//! ```
//! use strata::{dump, Batch, Db, Error, Expiry, KeyFilter, SetOptions};
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path().join("app"))?;
//! db.set(b"session", b"token", SetOptions { expiry: Expiry::At(strata::now_ms() + 60_000), ..Default::default() })?;
//! assert!(matches!(db.ttl(b"session")?, strata::Ttl::ExpiresAt(_)));
//! assert_eq!(db.incr_by(b"visits", 1)?, 1);
//!
//! // Several keys, one atomic write.
//! let mut batch = Batch::new();
//! batch.hset(b"user:1", &[(b"name", b"ann")]).sadd(b"users", &[b"user:1"]);
//! db.apply(&batch)?;
//!
//! // Streaming iteration.
//! let users = db.iter(KeyFilter::new().prefix(b"user:")).count();
//! assert_eq!(users, 1);
//!
//! // A second writer is refused; a dump moves everything to another directory.
//! assert!(matches!(Db::open(dir.path().join("app")), Err(Error::Locked(_))));
//! let mut bytes = Vec::new();
//! dump::export(&db, &mut bytes, |_| {})?;
//! let copy = Db::open(dir.path().join("copy"))?;
//! dump::import(&copy, bytes.as_slice(), |_| {})?;
//! assert_eq!(copy.hget(b"user:1", b"name")?, Some(b"ann".to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod access;
mod batch;
mod bits;
mod bulk;
mod check;
mod clock;
mod collection;
mod db;
pub mod dump;
mod error;
mod expire;
mod fragment;
pub mod function_record;
#[doc(hidden)]
pub mod fuzzing;
pub mod geo;
pub mod glob;
mod hash;
pub mod hll;
mod hot;
mod info;
mod iter;
pub mod keys;
mod keyspace;
mod layer;
mod list;
mod locks;
mod members;
pub mod meta;
pub mod num;
mod patch;
mod pending;
mod pf;
mod prefetch;
pub mod rdb;
mod redo;
pub mod redo_tail;
pub mod replication;
mod set;
mod sort;
mod storage;
pub mod stream;
mod string;
mod tier;
pub mod wal_tail;
mod zset;

pub use batch::Batch;
pub use bits::{
    BitOp, BitRange, BitUnit, BitfieldAction, BitfieldOp, BitfieldOutcome, BitfieldType,
    BitopOutcome, BitposRange, Overflow,
};
pub use check::{CheckReport, Problem};
pub use db::{now_ms, Db, ExpiredHook, KeyScope, Options, Stats};
pub use error::{Error, Result};
pub use hash::HashScanPage;
pub use info::{EngineGauges, EngineInfo};
pub use iter::{KeyFilter, KeyInfo, Keys};
pub use keyspace::{ExpireCondition, ScanPage, Ttl};
pub use list::ListEnd;
pub use locks::Busy;
pub use meta::KeyType;
pub use pf::{HllDebug, HllDebugReply};
pub use set::SetScanPage;
pub use sort::SortOptions;
pub use storage::{Compression, EngineTuning, SyncPolicy};
pub use string::{lcs, Expiry, GetExpiry, Lcs, LcsMatch, SetCondition, SetOptions, SetOutcome};
pub use tier::defer_write_pace;
pub use zset::{
    Aggregate, LexBound, LexRange, ScoreRange, ScoredMember, SetOp, ZAddCompare, ZAddCondition,
    ZAddOptions, ZAddOutcome, ZRangeBy, ZRangeSpec, ZScanPage,
};
