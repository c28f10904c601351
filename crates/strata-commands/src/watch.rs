//! WATCH bookkeeping: which connections watch which keys, and the "dirty" flag of each watching
//! connection. The server owns one [`Watches`] registry; [`crate::execute`] touches the keys of
//! every successful write while anyone watches (one atomic load otherwise), FLUSHDB, FLUSHALL and
//! SWAPDB touch the watched keys they change, and EXEC reads the flag. A connection's own
//! [`Watching`] state removes its entries from the registry when dropped (UNWATCH, EXEC,
//! DISCARD, RESET, disconnect).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use crate::Ctx;

/// Database → key → the dirty flags of the connections watching it.
type WatchMap = HashMap<u32, HashMap<Bytes, Vec<Arc<AtomicBool>>>>;

/// Every watched key of every connection.
#[derive(Default)]
pub struct Watches {
    keys: Mutex<WatchMap>,
    /// Number of (connection, key) entries: zero makes [`Watches::touch`] one atomic load.
    entries: AtomicUsize,
}

impl Watches {
    /// An empty registry.
    pub fn new() -> Watches {
        Watches::default()
    }

    /// Whether any connection watches anything.
    pub fn is_active(&self) -> bool {
        self.entries.load(Ordering::Acquire) > 0
    }

    fn map(&self) -> MutexGuard<'_, WatchMap> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add(&self, db: u32, key: Bytes, flag: &Arc<AtomicBool>) {
        let mut map = self.map();
        let watchers = map.entry(db).or_default().entry(key).or_default();
        if !watchers.iter().any(|f| Arc::ptr_eq(f, flag)) {
            watchers.push(flag.clone());
            self.entries.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn remove(&self, db: u32, key: &[u8], flag: &Arc<AtomicBool>) {
        let mut map = self.map();
        let Some(keys) = map.get_mut(&db) else { return };
        let Some(watchers) = keys.get_mut(key) else {
            return;
        };
        let before = watchers.len();
        watchers.retain(|f| !Arc::ptr_eq(f, flag));
        self.entries
            .fetch_sub(before - watchers.len(), Ordering::AcqRel);
        if watchers.is_empty() {
            keys.remove(key);
            if keys.is_empty() {
                map.remove(&db);
            }
        }
    }

    /// Marks every connection watching `key` of `db` dirty: its next EXEC fails.
    pub fn touch(&self, db: u32, key: &[u8]) {
        if !self.is_active() {
            return;
        }
        if let Some(watchers) = self.map().get(&db).and_then(|keys| keys.get(key)) {
            for f in watchers {
                f.store(true, Ordering::Release);
            }
        }
    }

    /// The watched keys of database `db` (for FLUSHDB, FLUSHALL and SWAPDB, which touch those
    /// that exist).
    pub fn watched_in(&self, db: u32) -> Vec<Bytes> {
        if !self.is_active() {
            return Vec::new();
        }
        self.map()
            .get(&db)
            .map(|keys| keys.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// One watched key of a connection.
#[derive(Clone, Debug)]
pub struct WatchedKey {
    /// The database it was watched in.
    pub db: u32,
    /// The key.
    pub key: Bytes,
    /// Whether it existed (and had not expired) when WATCH ran: if it is gone at EXEC time, it
    /// was deleted or expired meanwhile, and EXEC fails.
    pub existed: bool,
}

/// A connection's watched keys and its dirty flag.
pub struct Watching {
    registry: Arc<Watches>,
    dirty: Arc<AtomicBool>,
    keys: Vec<WatchedKey>,
}

impl Watching {
    /// Nothing watched yet, registering in `registry`.
    pub fn new(registry: Arc<Watches>) -> Watching {
        Watching {
            registry,
            dirty: Arc::new(AtomicBool::new(false)),
            keys: Vec::new(),
        }
    }

    /// Watches one more key (watching a key twice is one watch).
    pub fn add(&mut self, key: WatchedKey) {
        if self.keys.iter().any(|k| k.db == key.db && k.key == key.key) {
            return;
        }
        self.registry.add(key.db, key.key.clone(), &self.dirty);
        self.keys.push(key);
    }

    /// Whether a watched key was written since it was watched.
    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    /// The watched keys.
    pub fn keys(&self) -> &[WatchedKey] {
        &self.keys
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        for k in &self.keys {
            self.registry.remove(k.db, &k.key, &self.dirty);
        }
    }
}

/// Before FLUSHDB or FLUSHALL empties databases `dbs`: touches their watched keys that exist,
/// as Redis does (a watched key that is missing, or only expired, stays untouched).
pub fn touch_flushed(ctx: &Ctx<'_>, dbs: impl IntoIterator<Item = u32>) {
    for d in dbs {
        touch_existing(ctx, d, &[d]);
    }
}

/// Before SWAPDB exchanges databases `a` and `b`: touches the watched keys of either that exist
/// in either (a watched key that is missing in both stays untouched).
pub fn touch_swapped(ctx: &Ctx<'_>, a: u32, b: u32) {
    touch_existing(ctx, a, &[a, b]);
    if a != b {
        touch_existing(ctx, b, &[a, b]);
    }
}

/// Touches the keys watched in database `db` that exist in any of `check`.
fn touch_existing(ctx: &Ctx<'_>, db: u32, check: &[u32]) {
    let watches = ctx.server.watches();
    if !watches.is_active() {
        return;
    }
    let watched = watches.watched_in(db);
    if watched.is_empty() {
        return;
    }
    let handles: Vec<strata::Db> = check
        .iter()
        .filter_map(|&d| ctx.session.db.select(d).ok())
        .collect();
    for key in watched {
        // An unreadable key counts as existing: a spurious EXEC failure is safe, a missed one not.
        if handles.iter().any(|h| h.exists(&key).unwrap_or(true)) {
            watches.touch(db, &key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touch_dirties_every_watcher_of_the_key_and_only_them() {
        let reg = Arc::new(Watches::new());
        let mut a = Watching::new(reg.clone());
        let mut b = Watching::new(reg.clone());
        let k = |db, key: &'static str| WatchedKey {
            db,
            key: Bytes::from(key),
            existed: false,
        };
        a.add(k(0, "x"));
        b.add(k(0, "x"));
        b.add(k(1, "y"));
        reg.touch(1, b"x");
        assert!(!a.is_dirty() && !b.is_dirty());
        reg.touch(0, b"x");
        assert!(a.is_dirty() && b.is_dirty());
        drop(a);
        drop(b);
        assert!(!reg.is_active());
        assert!(reg.watched_in(0).is_empty());
    }
}
