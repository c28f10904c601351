//! # strata
//!
//! Redis's data model on RocksDB, as an embeddable library: open a data directory with
//! [`Db::open`], then call typed, synchronous methods named after Redis commands (`get`, `set`,
//! `incr_by`, `expire_at`, `scan`, ...). The Strata server is built on this same API; the library
//! knows nothing of RESP or the network.
//!
//! Each user key has one metadata record (type, expiry, and for strings the value itself); collection
//! members are versioned sub-keys, so deleting or overwriting a collection of any size is O(1) and
//! compaction reclaims the members later. The byte layout is in `docs/format.md`.
//!
//! ```
//! use strata::{Db, SetOptions, Expiry};
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path())?;
//! db.set(b"session", b"token", SetOptions { expiry: Expiry::At(strata::now_ms() + 60_000), ..Default::default() })?;
//! assert!(matches!(db.ttl(b"session")?, strata::Ttl::ExpiresAt(_)));
//! assert_eq!(db.incr_by(b"visits", 1)?, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod collection;
mod db;
mod error;
mod expire;
#[doc(hidden)]
pub mod fuzzing;
pub mod glob;
mod hash;
mod hot;
pub mod keys;
mod keyspace;
mod list;
mod locks;
mod members;
pub mod meta;
pub mod num;
mod set;
mod sort;
mod storage;
mod string;
mod zset;

pub use db::{now_ms, Db, Options, Stats};
pub use error::{Error, Result};
pub use hash::HashScanPage;
pub use keyspace::{ExpireCondition, ScanPage, Ttl};
pub use list::ListEnd;
pub use meta::KeyType;
pub use set::SetScanPage;
pub use sort::SortOptions;
pub use storage::{Compression, SyncPolicy};
pub use string::{lcs, Expiry, GetExpiry, Lcs, LcsMatch, SetCondition, SetOptions, SetOutcome};
pub use zset::{
    Aggregate, LexBound, LexRange, ScoreRange, ScoredMember, SetOp, ZAddCompare, ZAddCondition,
    ZAddOptions, ZAddOutcome, ZRangeBy, ZRangeSpec, ZScanPage,
};
