//! The library's error type. Variants name what went wrong in data-model terms (wrong type, not an
//! integer, ...); mapping them to Redis's reply text is the command layer's job, not this crate's.

use std::fmt;

/// Everything a [`crate::Db`] operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The key holds a value of another type than the operation needs.
    WrongType,
    /// The stored value (or an argument) is not an integer in range.
    NotInteger,
    /// The stored value is not a valid floating point number.
    NotFloat,
    /// The result of an increment would overflow a signed 64-bit integer.
    Overflow,
    /// An increment would produce NaN or infinity.
    NanOrInfinity,
    /// The key does not exist (for operations that need it, such as rename).
    NoSuchKey,
    /// A string value used as a HyperLogLog is not one (Redis: `WRONGTYPE Key is not a valid
    /// HyperLogLog string value.`).
    NotHll,
    /// A HyperLogLog's registers are corrupted (Redis: `INVALIDOBJ Corrupted HLL object
    /// detected`).
    CorruptHll,
    /// The database index is outside `0..databases`.
    DbIndexOutOfRange,
    /// A string would grow beyond the configured maximum size.
    StringTooLong,
    /// The data directory is locked by another process (the message names the directory).
    Locked(String),
    /// The data directory does not exist (and was not to be created).
    Missing(String),
    /// The directory exists but is not a Strata data directory.
    NotStrata(String),
    /// A write was attempted on a directory opened read-only.
    ReadOnly,
    /// Reading or writing a file other than the database failed (a dump, a backup).
    Io(String),
    /// A dump file is malformed, truncated or damaged.
    BadDump(String),
    /// A value in Redis's RDB serialization (a DUMP payload, an RDB file) is malformed: a length
    /// past the end, an unknown type or encoding, an empty collection, a bad checksum, ...
    BadRdb(String),
    /// A record read from disk does not decode.
    Corrupt(String),
    /// A write was refused because the data directory's disk is (nearly) full; nothing was
    /// written. Writes succeed again once space is freed.
    DiskFull,
    /// The storage engine failed (I/O error, disk full, ...).
    Storage(String),
    /// A stream operation failed in a way Redis words per command (see [`crate::stream`]).
    Stream(crate::stream::StreamError),
}

/// Short for `std::result::Result<T, strata::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::WrongType => f.write_str("key holds a value of another type"),
            Error::NotInteger => f.write_str("value is not an integer or out of range"),
            Error::NotFloat => f.write_str("value is not a valid float"),
            Error::Overflow => f.write_str("increment or decrement would overflow"),
            Error::NanOrInfinity => f.write_str("increment would produce NaN or Infinity"),
            Error::NoSuchKey => f.write_str("no such key"),
            Error::NotHll => f.write_str("key is not a valid HyperLogLog string value"),
            Error::CorruptHll => f.write_str("corrupted HyperLogLog value"),
            Error::DbIndexOutOfRange => f.write_str("DB index is out of range"),
            Error::StringTooLong => f.write_str("string exceeds maximum allowed size"),
            Error::Locked(m) => f.write_str(m),
            Error::Missing(p) => write!(f, "data directory {p} does not exist"),
            Error::NotStrata(m) => write!(f, "not a Strata data directory: {m}"),
            Error::ReadOnly => f.write_str("the data directory is open read-only"),
            Error::Io(m) => write!(f, "I/O error: {m}"),
            Error::BadDump(m) => write!(f, "bad dump file: {m}"),
            Error::BadRdb(m) => write!(f, "bad RDB data: {m}"),
            Error::Corrupt(m) => write!(f, "corrupt record: {m}"),
            Error::DiskFull => f.write_str("No space left on device"),
            Error::Storage(m) => write!(f, "storage error: {m}"),
            Error::Stream(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

// Lets the crate use `?` on engine calls. Hidden from the documentation: the public API names no
// RocksDB type, and programs never receive a `rocksdb::Error` to convert.
#[doc(hidden)]
impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Self {
        let text = e.into_string();
        if text.contains("lock") && text.contains("LOCK") {
            Error::Locked(text)
        } else {
            Error::Storage(text)
        }
    }
}
