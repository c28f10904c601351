//! Streaming iteration over the keys of one logical database: [`Db::iter`] with a [`KeyFilter`]
//! (prefix, byte range, glob pattern, type) yields [`KeyInfo`]s page by page, so memory stays
//! bounded whatever the size of the database. It is built on the keyspace walk of `keyspace.rs`
//! and knows nothing of commands; the members of one collection stream through the `*_each`
//! methods of the type modules.

use std::collections::VecDeque;

use crate::db::Db;
use crate::error::Result;
use crate::glob::glob_match;
use crate::meta::{KeyType, HEADER_LEN};

/// How many keys one refill of a [`Keys`] iterator visits.
const PAGE: usize = 512;

/// Which keys [`Db::iter`] returns. Every condition set must hold; the default returns every key.
///
/// ```
/// use strata::{KeyFilter, KeyType};
/// let f = KeyFilter::new().prefix(b"user:").kind(KeyType::Hash);
/// assert!(f.matches(b"user:1", KeyType::Hash));
/// assert!(!f.matches(b"user:1", KeyType::String));
/// assert!(KeyFilter::new().range(b"a", b"c").matches(b"b", KeyType::Set));
/// assert!(KeyFilter::new().pattern(b"user:*").matches(b"user:9", KeyType::Set));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyFilter {
    prefix: Option<Vec<u8>>,
    start: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
    pattern: Option<Vec<u8>>,
    kind: Option<KeyType>,
}

impl KeyFilter {
    /// A filter that accepts every key.
    pub fn new() -> KeyFilter {
        KeyFilter::default()
    }

    /// Only keys starting with `prefix`.
    pub fn prefix(mut self, prefix: &[u8]) -> KeyFilter {
        self.prefix = Some(prefix.to_vec());
        self
    }

    /// Only keys `k` with `start <= k < end`, compared bytewise.
    pub fn range(mut self, start: &[u8], end: &[u8]) -> KeyFilter {
        self.start = Some(start.to_vec());
        self.end = Some(end.to_vec());
        self
    }

    /// Only keys `k >= start`, compared bytewise.
    pub fn from(mut self, start: &[u8]) -> KeyFilter {
        self.start = Some(start.to_vec());
        self
    }

    /// Only keys matching the Redis glob `pattern` (as KEYS and SCAN MATCH).
    pub fn pattern(mut self, pattern: &[u8]) -> KeyFilter {
        self.pattern = Some(pattern.to_vec());
        self
    }

    /// Only keys of type `kind`.
    pub fn kind(mut self, kind: KeyType) -> KeyFilter {
        self.kind = Some(kind);
        self
    }

    /// Whether a key of type `kind` passes the filter.
    pub fn matches(&self, key: &[u8], kind: KeyType) -> bool {
        self.kind.is_none_or(|k| k == kind)
            && self.prefix.as_deref().is_none_or(|p| key.starts_with(p))
            && self.start.as_deref().is_none_or(|s| key >= s)
            && self.end.as_deref().is_none_or(|e| key < e)
            && self
                .pattern
                .as_deref()
                .is_none_or(|p| p == b"*" || glob_match(p, key, false))
    }
}

/// One key as [`Db::iter`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    /// The key.
    pub key: Vec<u8>,
    /// Its type.
    pub kind: KeyType,
    /// Absolute expiry in Unix milliseconds, `None` if the key does not expire.
    pub expire_at: Option<u64>,
    /// A string's length in bytes, a collection's number of members.
    pub size: u64,
}

/// The iterator [`Db::iter`] returns: yields live keys in storage order (by cluster hash slot,
/// then bytewise within a slot, not globally sorted), a page at a time. Keys written or deleted
/// while it runs may or may not be seen; a key present for the whole iteration is seen once.
pub struct Keys {
    db: Db,
    filter: KeyFilter,
    buf: VecDeque<KeyInfo>,
    after: Option<Vec<u8>>,
    done: bool,
}

impl Keys {
    fn refill(&mut self) -> Result<()> {
        let mut visited = 0usize;
        let mut stopped = false;
        let (filter, buf) = (&self.filter, &mut self.buf);
        let last = self
            .db
            .walk_raw(self.after.as_deref(), |k, kind, exp, raw| {
                visited += 1;
                if filter.matches(k, kind) {
                    buf.push_back(KeyInfo {
                        key: k.to_vec(),
                        kind,
                        expire_at: (exp != 0).then_some(exp),
                        size: size_of(kind, raw),
                    });
                }
                if visited >= PAGE {
                    stopped = true;
                    return false;
                }
                true
            })?;
        match (stopped, last) {
            (true, Some(last)) => self.after = Some(last),
            _ => self.done = true,
        }
        Ok(())
    }
}

/// A string's length or a collection's member count, from its raw metadata record.
fn size_of(kind: KeyType, raw: &[u8]) -> u64 {
    let body = raw.get(HEADER_LEN..).unwrap_or_default();
    let fragmented = crate::meta::encoding_of(raw) == crate::meta::STRING_FRAGMENTED;
    match kind {
        KeyType::String if !fragmented => body.len() as u64,
        _ => body
            .get(8..16)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, u64::from_be_bytes),
    }
}

impl Iterator for Keys {
    type Item = Result<KeyInfo>;

    fn next(&mut self) -> Option<Result<KeyInfo>> {
        loop {
            if let Some(k) = self.buf.pop_front() {
                return Some(Ok(k));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.refill() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

impl Db {
    /// Streams the live keys of this database that pass `filter` (see [`Keys`] for the order).
    pub fn iter(&self, filter: KeyFilter) -> Keys {
        Keys {
            db: self.clone(),
            filter,
            buf: VecDeque::new(),
            after: None,
            done: false,
        }
    }
}
