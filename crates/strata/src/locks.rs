//! Striped key locks: every read-modify-write of a key holds the stripe its key hashes to, so two
//! commands on one key never interleave, while commands on other keys run in parallel. Commands that
//! change a whole database (FLUSHDB, SWAPDB) hold every stripe.
//!
//! A caller can also *hold* stripes for longer than one operation (a [`Scope`]): a transaction or
//! script takes the stripes of every key it will touch, in one ordered acquisition, and the
//! operations it runs meanwhile find their stripes already held by their own thread and skip them.
//! A scope may hold stripes shared (readers: a multi-key read sees no half-applied transaction)
//! or exclusively. The record of what a thread holds is thread-local, so scopes must be entered
//! and left on one thread without yielding in between (the server runs commands synchronously).

use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

const STRIPES: usize = 1024;
const WORDS: usize = STRIPES / 64;

thread_local! {
    /// Bit `i` set: this thread holds stripe `i` through a [`Scope`].
    static HELD: RefCell<[u64; WORDS]> = const { RefCell::new([0; WORDS]) };
}

fn is_held(i: usize) -> bool {
    HELD.with(|h| h.borrow()[i / 64] & (1 << (i % 64)) != 0)
}

fn set_held(indices: &[usize], on: bool) {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        for &i in indices {
            if on {
                h[i / 64] |= 1 << (i % 64);
            } else {
                h[i / 64] &= !(1 << (i % 64));
            }
        }
    })
}

/// A fixed array of reader-writer locks indexed by key hash.
pub struct KeyLocks {
    stripes: Vec<RwLock<()>>,
}

enum Held<'a> {
    Exclusive(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
    Shared(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
}

/// Held stripes; dropping it releases them.
pub struct Guard<'a> {
    _held: Vec<Held<'a>>,
}

/// Stripes held across several operations by this thread (see the module documentation);
/// dropping it releases them.
pub struct Scope<'a> {
    indices: Vec<usize>,
    _guard: Guard<'a>,
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        // Forget the stripes before the guard (a field, dropped after this) releases them.
        set_held(&self.indices, false);
    }
}

impl KeyLocks {
    /// A new set of stripes.
    pub fn new() -> KeyLocks {
        KeyLocks {
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
        }
    }

    fn stripe(db: u8, key: &[u8]) -> usize {
        let mut h = DefaultHasher::new();
        db.hash(&mut h);
        key.hash(&mut h);
        (h.finish() as usize) % STRIPES
    }

    // A poisoned stripe only means another thread panicked while holding it; the protected data
    // lives in RocksDB, so carry on.
    fn write(&self, i: usize) -> Held<'_> {
        Held::Exclusive(
            self.stripes[i]
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    fn read(&self, i: usize) -> Held<'_> {
        Held::Shared(
            self.stripes[i]
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// The stripes of `keys` that this thread does not hold yet, sorted and without repeats:
    /// acquiring in stripe order means no two callers deadlock.
    fn wanted<'k>(keys: impl IntoIterator<Item = (u8, &'k [u8])>) -> Vec<usize> {
        let mut idx: Vec<usize> = keys
            .into_iter()
            .map(|(db, k)| Self::stripe(db, k))
            .filter(|&i| !is_held(i))
            .collect();
        idx.sort_unstable();
        idx.dedup();
        idx
    }

    fn acquire(&self, idx: &[usize], exclusive: bool) -> Guard<'_> {
        Guard {
            _held: idx
                .iter()
                .map(|&i| {
                    if exclusive {
                        self.write(i)
                    } else {
                        self.read(i)
                    }
                })
                .collect(),
        }
    }

    /// Locks the stripes of all `(db, key)` pairs exclusively, except those this thread already
    /// holds through a [`Scope`].
    pub fn lock<'a, 'k>(&'a self, keys: impl IntoIterator<Item = (u8, &'k [u8])>) -> Guard<'a> {
        self.acquire(&Self::wanted(keys), true)
    }

    /// Locks one key exclusively (unless this thread holds its stripe already).
    pub fn lock_one(&self, db: u8, key: &[u8]) -> Guard<'_> {
        self.lock([(db, key)])
    }

    /// Locks every stripe exclusively (whole-database operations), except those this thread holds.
    pub fn lock_all(&self) -> Guard<'_> {
        let idx: Vec<usize> = (0..STRIPES).filter(|&i| !is_held(i)).collect();
        self.acquire(&idx, true)
    }

    /// Holds the stripes of `keys` (shared or exclusively) until the scope is dropped; operations
    /// this thread runs meanwhile skip them. Stripes the thread already holds are left to their
    /// holder, so scopes nest. A shared scope must not be followed by writes to its keys on the
    /// same thread (a stripe cannot be upgraded).
    pub fn hold<'a, 'k>(
        &'a self,
        keys: impl IntoIterator<Item = (u8, &'k [u8])>,
        exclusive: bool,
    ) -> Scope<'a> {
        let indices = Self::wanted(keys);
        let guard = self.acquire(&indices, exclusive);
        set_held(&indices, true);
        Scope {
            indices,
            _guard: guard,
        }
    }

    /// Like [`KeyLocks::hold`], for a thread that may already hold other stripes (a script
    /// reaching a key it did not declare): it never waits while holding, which could deadlock,
    /// but retries each busy stripe for up to `patience`, then goes on without it. Returns the
    /// scope and whether every stripe was taken.
    pub fn hold_patiently<'a, 'k>(
        &'a self,
        keys: impl IntoIterator<Item = (u8, &'k [u8])>,
        exclusive: bool,
        patience: std::time::Duration,
    ) -> (Scope<'a>, bool) {
        let wanted = Self::wanted(keys);
        let deadline = std::time::Instant::now() + patience;
        let mut indices = Vec::with_capacity(wanted.len());
        let mut held = Vec::with_capacity(wanted.len());
        let mut complete = true;
        for i in wanted {
            let got = loop {
                let attempt = if exclusive {
                    match self.stripes[i].try_write() {
                        Ok(g) => Some(Held::Exclusive(g)),
                        Err(std::sync::TryLockError::Poisoned(p)) => {
                            Some(Held::Exclusive(p.into_inner()))
                        }
                        Err(std::sync::TryLockError::WouldBlock) => None,
                    }
                } else {
                    match self.stripes[i].try_read() {
                        Ok(g) => Some(Held::Shared(g)),
                        Err(std::sync::TryLockError::Poisoned(p)) => {
                            Some(Held::Shared(p.into_inner()))
                        }
                        Err(std::sync::TryLockError::WouldBlock) => None,
                    }
                };
                if attempt.is_some() || std::time::Instant::now() >= deadline {
                    break attempt;
                }
                std::thread::sleep(std::time::Duration::from_micros(50));
            };
            match got {
                Some(g) => {
                    indices.push(i);
                    held.push(g);
                }
                None => complete = false,
            }
        }
        set_held(&indices, true);
        (
            Scope {
                indices,
                _guard: Guard { _held: held },
            },
            complete,
        )
    }

    /// Holds every stripe exclusively until the scope is dropped.
    pub fn hold_all(&self) -> Scope<'_> {
        let indices: Vec<usize> = (0..STRIPES).filter(|&i| !is_held(i)).collect();
        let guard = self.acquire(&indices, true);
        set_held(&indices, true);
        Scope {
            indices,
            _guard: guard,
        }
    }
}

impl Default for KeyLocks {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn operations_inside_a_scope_skip_the_stripes_it_holds() {
        let locks = KeyLocks::new();
        let scope = locks.hold([(0, &b"a"[..]), (0, &b"b"[..])], true);
        // Would deadlock if the held stripes were taken again.
        drop(locks.lock([(0, &b"a"[..]), (0, &b"b"[..])]));
        drop(locks.lock_all());
        let inner = locks.hold([(0, &b"a"[..]), (1, &b"c"[..])], true);
        drop(inner);
        // The inner scope released only what it took itself: "a" is still held.
        assert!(is_held(KeyLocks::stripe(0, b"a")));
        drop(scope);
        assert!(!is_held(KeyLocks::stripe(0, b"a")));
        assert!(!is_held(KeyLocks::stripe(1, b"c")));
    }

    #[test]
    fn another_thread_waits_for_a_scope_to_end() {
        let locks = Arc::new(KeyLocks::new());
        let done = Arc::new(AtomicBool::new(false));
        let scope = locks.hold([(0, &b"k"[..])], true);
        let (l2, d2) = (locks.clone(), done.clone());
        let t = std::thread::spawn(move || {
            let _g = l2.lock_one(0, b"k");
            d2.load(Ordering::SeqCst)
        });
        std::thread::sleep(Duration::from_millis(50));
        done.store(true, Ordering::SeqCst);
        drop(scope);
        assert!(
            t.join().unwrap_or(false),
            "the other thread ran inside the scope"
        );
    }

    #[test]
    fn shared_scopes_admit_each_other() {
        let locks = Arc::new(KeyLocks::new());
        let _mine = locks.hold([(0, &b"k"[..])], false);
        let l2 = locks.clone();
        let t = std::thread::spawn(move || {
            let _theirs = l2.hold([(0, &b"k"[..])], false);
            true
        });
        assert!(t.join().unwrap_or(false));
    }
}
