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
//!
//! A holder that runs for long (a script past the server's `busy-reply-threshold`) may *declare
//! itself busy* with a tag of its choosing: the stripes it holds are marked, and acquisitions made
//! with the `*_unless_busy` methods give up on a marked stripe with [`Busy`] instead of waiting,
//! including those already waiting when the mark appears (they wake every [`BUSY_POLL`] to look).
//! The mark is cleared when the holder ends it or releases the stripe. Uncontended acquisitions
//! never look at the marks: the fast path is one compare-and-swap per stripe, as before.
//!
//! A server thread may let a command's stripes *linger* ([`Scope::linger`]): they stay held by
//! the thread after the command, and the next acquisition on the thread takes them over when
//! they cover what it wants (in a mode at least as strong), or releases them first otherwise,
//! so a thread never waits while lingering stripes are held. They belong to the thread, not to
//! the command or its client: the next command the thread runs, for the same client or
//! another, takes them over. The thread releases them when they have been kept past the end of
//! its batches for [`LINGER_FOR`] ([`KeyLocks::end_batch`]), before it parks, and before it
//! runs anything that may wait ([`KeyLocks::release_lingering`]). A hot key's commands then
//! take its stripe once per that span on a worker, where each took it and handed it back and
//! forth with the other worker's connections.

use std::cell::{Cell, RefCell};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use smallvec::SmallVec;

/// How many stripes there are.
pub(crate) const STRIPES: usize = 1024;
const WORDS: usize = STRIPES / 64;

/// Stripe indices, and held stripes: a command names a few keys, which then need no
/// allocation (two allocations and frees per command were 2-3% of a PFCOUNT's CPU at P=16).
type Stripes = SmallVec<[usize; 4]>;
type Helds<'a> = SmallVec<[Held<'a>; 4]>;

/// How often a waiter for a contended stripe looks whether its holder has declared itself busy.
pub const BUSY_POLL: Duration = Duration::from_millis(10);

thread_local! {
    /// Bit `i` set: this thread holds stripe `i` through a [`Scope`].
    static HELD: RefCell<[u64; WORDS]> = const { RefCell::new([0; WORDS]) };
    /// Bit `i` set: a [`Scope`] of this thread gave up stripe `i` ([`KeyLocks::hold_patiently`]
    /// ran out of patience): the thread goes on without it and never waits for it.
    static PASSED: RefCell<[u64; WORDS]> = const { RefCell::new([0; WORDS]) };
    /// This thread has declared the stripes it holds busy ([`KeyLocks::declare_busy`]).
    static MARKED: Cell<bool> = const { Cell::new(false) };
    /// Stripes still held after their scope ended ([`Scope::linger`]).
    static LINGER: RefCell<Option<Lingering>> = const { RefCell::new(None) };
    /// When this thread's lingering stripes were first kept past the end of a batch.
    static LINGER_SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// How long a thread's lingering stripes may stay held past the end of the batch that took them
/// (released at the end of the first batch after that, or when the thread parks).
const LINGER_FOR: Duration = Duration::from_micros(500);

/// Stripes a scope left held for the thread's next acquisition ([`Scope::linger`]). Their bits
/// stay set in `HELD`; their guards were forgotten, and [`KeyLocks::release_stripes`] unlocks
/// them.
struct Lingering {
    /// The address of the [`KeyLocks`] they belong to (compared, never dereferenced).
    owner: usize,
    stripes: Stripes,
    exclusive: bool,
}

fn is_held(i: usize) -> bool {
    HELD.with(|h| h.borrow()[i / 64] & (1 << (i % 64)) != 0)
}

/// Whether this thread holds stripe `i`, or gave it up: either way it does not wait for it.
fn is_mine(i: usize) -> bool {
    is_held(i) || PASSED.with(|h| h.borrow()[i / 64] & (1 << (i % 64)) != 0)
}

fn set_bits(
    set: &'static std::thread::LocalKey<RefCell<[u64; WORDS]>>,
    indices: &[usize],
    on: bool,
) {
    set.with(|h| {
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

fn set_held(indices: &[usize], on: bool) {
    set_bits(&HELD, indices, on);
}

/// The stripes this thread holds through scopes.
fn held_stripes() -> Vec<usize> {
    HELD.with(|h| {
        let h = h.borrow();
        (0..STRIPES)
            .filter(|&i| h[i / 64] & (1 << (i % 64)) != 0)
            .collect()
    })
}

/// An acquisition gave up because a stripe it needs is held by a holder that declared itself busy
/// ([`KeyLocks::declare_busy`]); the number is the tag that holder gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busy(pub u8);

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a key lock is held by a busy holder (tag {})", self.0)
    }
}

impl std::error::Error for Busy {}

/// A fixed array of reader-writer locks indexed by key hash.
pub struct KeyLocks {
    stripes: Vec<RwLock<()>>,
    /// Per stripe: 0, or the tag of the busy holder that holds it.
    busy: Vec<AtomicU8>,
}

enum Held<'a> {
    Exclusive(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
    Shared(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
}

/// Held stripes; dropping it releases them.
pub struct Guard<'a> {
    _held: Helds<'a>,
}

/// Stripes held across several operations by this thread (see the module documentation);
/// dropping it releases them.
pub struct Scope<'a> {
    locks: &'a KeyLocks,
    /// The stripes `_guard` holds.
    indices: Stripes,
    /// Whether `_guard` holds them exclusively.
    exclusive: bool,
    /// Lingering stripes this scope took over (held without guards; see [`Lingering`]), and
    /// whether exclusively.
    adopted: Option<(Stripes, bool)>,
    /// Stripes given up ([`KeyLocks::hold_patiently`]): not held, not waited for.
    passed: Stripes,
    _guard: Guard<'a>,
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        // Clear busy marks and forget the stripes before the guard (a field, dropped after this)
        // releases them, so the next holder's waiters never see a stale mark.
        let adopted = self.adopted.take();
        if MARKED.with(Cell::get) {
            let lingered = adopted.iter().flat_map(|(a, _)| a.iter());
            for &i in self.indices.iter().chain(lingered) {
                self.locks.busy[i].store(0, Ordering::Release);
            }
        }
        set_held(&self.indices, false);
        set_bits(&PASSED, &self.passed, false);
        if let Some((stripes, exclusive)) = adopted {
            self.locks.release_stripes(&stripes, exclusive);
        }
    }
}

impl Scope<'_> {
    /// Ends the scope but leaves its stripes held by this thread, for the thread's next
    /// acquisition to take over or release (see the module documentation). A scope that gave
    /// stripes up, holds stripes marked busy, or holds nothing is simply dropped. The caller
    /// must call [`KeyLocks::end_batch`] at the end of each batch of work, and
    /// [`KeyLocks::release_lingering`] before this thread sleeps or runs anything that may
    /// wait, and before the key locks are dropped.
    pub fn linger(mut self) {
        let mixed = !self.indices.is_empty()
            && self
                .adopted
                .as_ref()
                .is_some_and(|(_, x)| *x != self.exclusive);
        let busy = MARKED.with(Cell::get);
        let lingering = LINGER.with(|l| l.borrow().is_some());
        let empty = self.indices.is_empty() && self.adopted.is_none();
        if mixed || busy || lingering || empty || !self.passed.is_empty() {
            return;
        }
        if self.adopted.is_none() {
            // Freshly taken: kept past batch ends from the next one on.
            LINGER_SINCE.with(|t| t.set(None));
        }
        let (mut stripes, exclusive) = self
            .adopted
            .take()
            .unwrap_or((Stripes::new(), self.exclusive));
        stripes.extend(std::mem::take(&mut self.indices));
        for held in std::mem::take(&mut self._guard._held) {
            // Released by `release_stripes` (force-unlocked in the same mode).
            std::mem::forget(held);
        }
        let owner = self.locks as *const KeyLocks as usize;
        LINGER.with(|l| {
            *l.borrow_mut() = Some(Lingering {
                owner,
                stripes,
                exclusive,
            })
        });
    }
}

impl KeyLocks {
    /// A new set of stripes.
    pub fn new() -> KeyLocks {
        KeyLocks {
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
            busy: (0..STRIPES).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    /// The stripe of `key` in database `db`: foldhash, seeded once per process (keys come from
    /// clients). SipHash (`DefaultHasher`) was 1% of a PFADD's CPU at P=16, computed twice per
    /// command (the command's hold, then the data model's lock finding it held).
    fn stripe(db: u8, key: &[u8]) -> usize {
        static SEED: std::sync::LazyLock<foldhash::fast::RandomState> =
            std::sync::LazyLock::new(Default::default);
        (SEED.hash_one((db, key)) as usize) % STRIPES
    }

    /// Stripe `i` if nobody holds it in a conflicting mode: the uncontended fast path.
    #[inline]
    fn try_take(&self, i: usize, exclusive: bool) -> Option<Held<'_>> {
        let s = &self.stripes[i];
        if exclusive {
            s.try_write().map(Held::Exclusive)
        } else {
            s.try_read().map(Held::Shared)
        }
    }

    /// Stripe `i`, waiting as long as it takes.
    #[inline]
    fn take(&self, i: usize, exclusive: bool) -> Held<'_> {
        match self.try_take(i, exclusive) {
            Some(h) => h,
            None => self.take_waiting(i, exclusive),
        }
    }

    #[cold]
    fn take_waiting(&self, i: usize, exclusive: bool) -> Held<'_> {
        let s = &self.stripes[i];
        if exclusive {
            Held::Exclusive(s.write())
        } else {
            Held::Shared(s.read())
        }
    }

    /// Stripe `i`, waiting unless (or until) its holder declares itself busy.
    #[inline]
    fn take_unless_busy(&self, i: usize, exclusive: bool) -> Result<Held<'_>, Busy> {
        match self.try_take(i, exclusive) {
            Some(h) => Ok(h),
            None => self.wait_unless_busy(i, exclusive),
        }
    }

    #[cold]
    fn wait_unless_busy(&self, i: usize, exclusive: bool) -> Result<Held<'_>, Busy> {
        let s = &self.stripes[i];
        loop {
            let tag = self.busy[i].load(Ordering::Acquire);
            if tag != 0 {
                return Err(Busy(tag));
            }
            let got = if exclusive {
                s.try_write_for(BUSY_POLL).map(Held::Exclusive)
            } else {
                s.try_read_for(BUSY_POLL).map(Held::Shared)
            };
            if let Some(h) = got {
                return Ok(h);
            }
        }
    }

    /// `stripes` less those this thread holds, sorted and without repeats: acquiring in stripe
    /// order means no two callers deadlock.
    fn unheld(mut stripes: Stripes) -> Stripes {
        stripes.retain(|i| !is_mine(*i));
        stripes.sort_unstable();
        stripes.dedup();
        stripes
    }

    /// Before an acquisition of `want` (`exclusive` or shared) starts a scope: this thread's
    /// lingering stripes of this set, taken over when they hold every stripe of `want` in a mode
    /// at least as strong, released otherwise (so that the acquisition never waits while they
    /// are held). Lingering stripes of another set of locks are left alone.
    fn settle_linger(&self, want: &[usize], exclusive: bool) -> Option<(Stripes, bool)> {
        let lingering = self.take_linger()?;
        let covers = want.iter().all(|i| lingering.stripes.contains(i));
        if covers && (lingering.exclusive || !exclusive) {
            return Some((lingering.stripes, lingering.exclusive));
        }
        LINGER_SINCE.with(|t| t.set(None));
        self.release_stripes(&lingering.stripes, lingering.exclusive);
        None
    }

    /// A batch of this thread's work ended: its lingering stripes stay held for the thread's
    /// next batches until they have been held past batch ends for [`LINGER_FOR`], then are
    /// released (the thread releases them before it parks, too).
    pub fn end_batch(&self) {
        if LINGER.with(|l| l.borrow().is_none()) {
            return;
        }
        let now = Instant::now();
        let since = LINGER_SINCE.with(|t| *t.get().get_or_insert(now));
        match now.duration_since(since) >= LINGER_FOR {
            true => self.release_lingering(),
            false => LINGER_SINCE.with(|t| t.set(Some(since))),
        }
    }

    /// Releases this thread's lingering stripes of this set of locks, if it has any
    /// ([`Scope::linger`]).
    pub fn release_lingering(&self) {
        if let Some(lingering) = self.take_linger() {
            LINGER_SINCE.with(|t| t.set(None));
            self.release_stripes(&lingering.stripes, lingering.exclusive);
        }
    }

    /// This thread's lingering stripes of this set of locks, taken out of the record.
    fn take_linger(&self) -> Option<Lingering> {
        let owner = self as *const KeyLocks as usize;
        LINGER.with(|l| {
            let mut l = l.borrow_mut();
            match &*l {
                Some(g) if g.owner == owner => l.take(),
                _ => None,
            }
        })
    }

    /// Releases stripes held without guards (lingering, or taken over from a linger).
    fn release_stripes(&self, stripes: &[usize], exclusive: bool) {
        set_held(stripes, false);
        for &i in stripes {
            // SAFETY: this thread holds stripe `i` in this mode: its guard was forgotten by
            // `Scope::linger`, and only this call releases it (once: the record is gone).
            unsafe {
                if exclusive {
                    self.stripes[i].force_unlock_write();
                } else {
                    self.stripes[i].force_unlock_read();
                }
            }
        }
    }

    /// Starts a scope of the stripes of `keys`: lingering stripes are taken over or released
    /// ([`KeyLocks::settle_linger`]); returns those taken over and the stripes still to take.
    fn prepare<'k>(
        &self,
        keys: impl IntoIterator<Item = (u8, &'k [u8])>,
        exclusive: bool,
    ) -> (Option<(Stripes, bool)>, Stripes) {
        let all: Stripes = keys
            .into_iter()
            .map(|(db, k)| Self::stripe(db, k))
            .collect();
        let adopted = self.settle_linger(&all, exclusive);
        (adopted, Self::unheld(all))
    }

    fn acquire(&self, idx: &[usize], exclusive: bool) -> Guard<'_> {
        Guard {
            _held: idx.iter().map(|&i| self.take(i, exclusive)).collect(),
        }
    }

    /// Like `acquire`, but gives up (releasing what it took) on a stripe of a busy holder.
    fn acquire_unless_busy(&self, idx: &[usize], exclusive: bool) -> Result<Guard<'_>, Busy> {
        Ok(Guard {
            _held: idx
                .iter()
                .map(|&i| self.take_unless_busy(i, exclusive))
                .collect::<Result<_, _>>()?,
        })
    }

    fn scope<'a>(&'a self, indices: Stripes, exclusive: bool, guard: Guard<'a>) -> Scope<'a> {
        set_held(&indices, true);
        Scope {
            locks: self,
            indices,
            exclusive,
            adopted: None,
            passed: Stripes::new(),
            _guard: guard,
        }
    }

    /// Locks the stripes of all `(db, key)` pairs exclusively, except those this thread already
    /// holds through a [`Scope`].
    pub fn lock<'a, 'k>(&'a self, keys: impl IntoIterator<Item = (u8, &'k [u8])>) -> Guard<'a> {
        let all: Stripes = keys
            .into_iter()
            .map(|(db, k)| Self::stripe(db, k))
            .collect();
        let mut wanted = Self::unheld(all.clone());
        if !wanted.is_empty() && LINGER.with(|l| l.borrow().is_some()) {
            // Released first (a thread never waits holding them); they are then taken again.
            self.release_lingering();
            wanted = Self::unheld(all);
        }
        self.acquire(&wanted, true)
    }

    /// Locks one key exclusively (unless this thread holds its stripe already, as a command's
    /// data-model call finds the stripe its command holds: then nothing is allocated).
    pub fn lock_one(&self, db: u8, key: &[u8]) -> Guard<'_> {
        let i = Self::stripe(db, key);
        Guard {
            _held: match is_mine(i) {
                true => Helds::new(),
                false => {
                    self.release_lingering();
                    smallvec::smallvec![self.take(i, true)]
                }
            },
        }
    }

    /// Locks every stripe exclusively (whole-database operations), except those this thread holds.
    pub fn lock_all(&self) -> Guard<'_> {
        self.release_lingering();
        let idx: Stripes = (0..STRIPES).filter(|&i| !is_mine(i)).collect();
        self.acquire(&idx, true)
    }

    /// Holds the stripes of `keys` (shared or exclusively) until the scope is dropped; operations
    /// this thread runs meanwhile skip them. Stripes the thread already holds are left to their
    /// holder, so scopes nest. A shared scope must not be followed by writes to its keys on the
    /// same thread (a stripe cannot be upgraded). Waits as long as it takes.
    pub fn hold<'a, 'k>(
        &'a self,
        keys: impl IntoIterator<Item = (u8, &'k [u8])>,
        exclusive: bool,
    ) -> Scope<'a> {
        let (adopted, indices) = self.prepare(keys, exclusive);
        let guard = self.acquire(&indices, exclusive);
        let mut scope = self.scope(indices, exclusive, guard);
        scope.adopted = adopted;
        scope
    }

    /// Like [`KeyLocks::hold`], but gives up with [`Busy`] (holding nothing) when a stripe it
    /// needs is held by a busy holder, also when that holder declares itself busy while this
    /// call waits.
    pub fn hold_unless_busy<'a, 'k>(
        &'a self,
        keys: impl IntoIterator<Item = (u8, &'k [u8])>,
        exclusive: bool,
    ) -> Result<Scope<'a>, Busy> {
        let (adopted, indices) = self.prepare(keys, exclusive);
        let guard = match self.acquire_unless_busy(&indices, exclusive) {
            Ok(guard) => guard,
            Err(busy) => {
                if let Some((stripes, exclusive)) = adopted {
                    self.release_stripes(&stripes, exclusive);
                }
                return Err(busy);
            }
        };
        let mut scope = self.scope(indices, exclusive, guard);
        scope.adopted = adopted;
        Ok(scope)
    }

    /// Like [`KeyLocks::hold`], for a thread that may already hold other stripes (a script
    /// reaching a key it did not declare): it never waits while holding, which could deadlock,
    /// but retries each busy stripe for up to `patience`, then goes on without it: until the
    /// scope ends, this thread neither holds nor waits for a stripe it gave up (the data
    /// model's own lock of that key passes it by; waiting there deadlocked with a multi-key
    /// reader holding the key shared while it waited for a key the script holds). Returns the
    /// scope and whether every stripe was taken, or [`Busy`] (holding nothing) when a stripe's
    /// holder has declared itself busy.
    pub fn hold_patiently<'a, 'k>(
        &'a self,
        keys: impl IntoIterator<Item = (u8, &'k [u8])>,
        exclusive: bool,
        patience: Duration,
    ) -> Result<(Scope<'a>, bool), Busy> {
        let (adopted, wanted) = self.prepare(keys, exclusive);
        let deadline = Instant::now() + patience;
        let mut indices = Stripes::with_capacity(wanted.len());
        let mut held = Helds::with_capacity(wanted.len());
        let mut passed = Stripes::new();
        for i in wanted {
            let got = loop {
                let attempt = self.try_take(i, exclusive);
                if attempt.is_some() || Instant::now() >= deadline {
                    break attempt;
                }
                let tag = self.busy[i].load(Ordering::Acquire);
                if tag != 0 {
                    if let Some((stripes, exclusive)) = adopted {
                        self.release_stripes(&stripes, exclusive);
                    }
                    return Err(Busy(tag));
                }
                std::thread::sleep(Duration::from_micros(50));
            };
            match got {
                Some(g) => {
                    indices.push(i);
                    held.push(g);
                }
                None => passed.push(i),
            }
        }
        let complete = passed.is_empty();
        let mut scope = self.scope(indices, exclusive, Guard { _held: held });
        scope.adopted = adopted;
        set_bits(&PASSED, &passed, true);
        scope.passed = passed;
        Ok((scope, complete))
    }

    /// Holds every stripe exclusively until the scope is dropped.
    pub fn hold_all(&self) -> Scope<'_> {
        self.release_lingering();
        let indices: Stripes = (0..STRIPES).filter(|&i| !is_mine(i)).collect();
        let guard = self.acquire(&indices, true);
        self.scope(indices, true, guard)
    }

    /// Like [`KeyLocks::hold_all`], giving up with [`Busy`] as [`KeyLocks::hold_unless_busy`]
    /// does.
    pub fn hold_all_unless_busy(&self) -> Result<Scope<'_>, Busy> {
        self.release_lingering();
        let indices: Stripes = (0..STRIPES).filter(|&i| !is_mine(i)).collect();
        let guard = self.acquire_unless_busy(&indices, true)?;
        Ok(self.scope(indices, true, guard))
    }

    /// Marks every stripe this thread holds through scopes as held by a busy holder with `tag`
    /// (not 0): `*_unless_busy` acquisitions of them give up with `Busy(tag)`, and so do those
    /// waiting for them now. The marks last until [`KeyLocks::end_busy`] or until the scopes
    /// are dropped. Calling it again marks stripes taken since.
    pub fn declare_busy(&self, tag: u8) {
        MARKED.with(|m| m.set(true));
        for i in held_stripes() {
            self.busy[i].store(tag, Ordering::Release);
        }
    }

    /// Clears the busy marks of the stripes this thread holds.
    pub fn end_busy(&self) {
        if !MARKED.with(|m| m.replace(false)) {
            return;
        }
        for i in held_stripes() {
            self.busy[i].store(0, Ordering::Release);
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

    #[test]
    fn a_stripe_given_up_is_not_waited_for_by_the_data_models_lock() {
        let locks = Arc::new(KeyLocks::new());
        // A key on another stripe than "a" (stripes are seeded per process).
        let u = (0..)
            .map(|n| format!("u{n}").into_bytes())
            .find(|k| KeyLocks::stripe(0, k) != KeyLocks::stripe(0, b"a"))
            .expect("a key on another stripe");
        // This thread runs a script holding "a"; a reader holds `u` shared and waits for "a".
        let script = locks.hold([(0, &b"a"[..])], true);
        let (held_u, reader_done) = (std::sync::mpsc::channel(), std::sync::mpsc::channel());
        let reader = {
            let (locks, u) = (locks.clone(), u.clone());
            let (held_u, reader_done) = (held_u.0, reader_done.0);
            std::thread::spawn(move || {
                let u = locks.hold([(0, &u[..])], false);
                let _ = held_u.send(());
                let a = locks.hold([(0, &b"a"[..])], false);
                drop((a, u));
                let _ = reader_done.send(());
            })
        };
        held_u.1.recv().expect("the reader holds u");
        // The script reaches `u`, which it did not declare: it gives it up after its patience,
        // and its data-model call on `u` passes it by (it waited for ever before: a deadlock).
        let (undeclared, complete) = locks
            .hold_patiently([(0, &u[..])], true, Duration::from_millis(20))
            .expect("nobody is busy");
        assert!(!complete);
        assert!(is_mine(KeyLocks::stripe(0, &u)), "given up, not waited for");
        drop(locks.lock_one(0, &u));
        drop(undeclared);
        // Once the scope ends the stripe is waited for again, like any other.
        assert!(!is_mine(KeyLocks::stripe(0, &u)));
        drop(script);
        reader_done
            .1
            .recv_timeout(Duration::from_secs(10))
            .expect("the reader gets a");
        reader.join().expect("reader");
    }

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

    #[test]
    fn a_busy_holder_turns_away_waiters_and_only_on_its_own_keys() {
        let locks = Arc::new(KeyLocks::new());
        let scope = locks.hold([(0, &b"k"[..])], true);
        // A waiter that started before the holder declared itself busy.
        let l2 = locks.clone();
        let waiter = std::thread::spawn(move || {
            let started = Instant::now();
            let outcome = l2.hold_unless_busy([(0, &b"k"[..])], false).map(|_| ());
            (outcome, started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(30));
        locks.declare_busy(7);
        let (outcome, waited) = waiter.join().unwrap_or((Ok(()), Duration::ZERO));
        assert_eq!(outcome, Err(Busy(7)));
        assert!(waited < Duration::from_secs(2), "waited {waited:?}");
        // Newcomers are turned away at once; other keys are served.
        let l3 = locks.clone();
        let (same, other, patient) = std::thread::spawn(move || {
            let same = l3.hold_unless_busy([(0, &b"k"[..])], true).map(|_| ());
            let other = l3.hold_unless_busy([(0, &b"other"[..])], true).map(|_| ());
            let patient = l3
                .hold_patiently([(0, &b"k"[..])], true, Duration::from_secs(5))
                .map(|_| ());
            (same, other, patient)
        })
        .join()
        .unwrap_or((Ok(()), Err(Busy(0)), Ok(())));
        assert_eq!(same, Err(Busy(7)));
        assert_eq!(other, Ok(()));
        assert_eq!(patient, Err(Busy(7)));
        // Dropping the scope clears the mark: the key can be held again.
        drop(scope);
        locks.end_busy();
        let l4 = locks.clone();
        let again = std::thread::spawn(move || l4.hold_unless_busy([(0, &b"k"[..])], true).is_ok());
        assert!(again.join().unwrap_or(false));
    }

    #[test]
    fn ending_busy_clears_the_marks_but_keeps_the_stripes() {
        let locks = Arc::new(KeyLocks::new());
        let scope = locks.hold([(0, &b"k"[..])], true);
        locks.declare_busy(1);
        locks.end_busy();
        // Not busy any more: a waiter waits for the release instead of giving up.
        let l2 = locks.clone();
        let waiter =
            std::thread::spawn(move || l2.hold_unless_busy([(0, &b"k"[..])], true).is_ok());
        std::thread::sleep(Duration::from_millis(3 * BUSY_POLL.as_millis() as u64));
        drop(scope);
        assert!(waiter.join().unwrap_or(false));
    }

    /// Two keys on different stripes.
    fn two_stripes() -> (Vec<u8>, Vec<u8>) {
        let k = b"k".to_vec();
        let j = (0..)
            .map(|n| format!("j{n}").into_bytes())
            .find(|j| KeyLocks::stripe(0, j) != KeyLocks::stripe(0, &k))
            .expect("a key on another stripe");
        (k, j)
    }

    fn locked(locks: &KeyLocks, key: &[u8]) -> bool {
        locks.stripes[KeyLocks::stripe(0, key)].is_locked()
    }

    /// Runs `f` on another thread; `None` if it has not returned within two seconds (it waits
    /// for a lock nobody will release).
    fn within_2s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(2)).ok()
    }

    #[test]
    fn a_lingering_stripe_stays_held_until_released() {
        let locks = KeyLocks::new();
        locks.hold([(0, &b"k"[..])], true).linger();
        assert!(locks.stripes[KeyLocks::stripe(0, b"k")].is_locked_exclusive());
        assert!(
            is_held(KeyLocks::stripe(0, b"k")),
            "the thread still counts it as its own"
        );
        locks.release_lingering();
        assert!(!locked(&locks, b"k"));
        assert!(!is_held(KeyLocks::stripe(0, b"k")));
        locks.release_lingering();
        assert!(
            !locked(&locks, b"k"),
            "releasing twice releases nothing more"
        );
    }

    #[test]
    fn the_next_hold_of_the_same_keys_takes_the_lingering_stripes_over() {
        let done = within_2s(|| {
            let locks = KeyLocks::new();
            locks.hold([(0, &b"k"[..])], true).linger();
            // Taken over, not taken again (which would wait for this thread itself).
            let scope = locks.hold([(0, &b"k"[..])], false);
            assert!(locks.stripes[KeyLocks::stripe(0, b"k")].is_locked_exclusive());
            scope.linger();
            let scope = locks
                .hold_unless_busy([(0, &b"k"[..])], true)
                .expect("not busy");
            drop(scope);
            !locked(&locks, b"k")
        });
        assert_eq!(
            done,
            Some(true),
            "the second hold waited, or the drop did not release"
        );
    }

    #[test]
    fn a_hold_of_other_keys_releases_the_lingering_stripes_first() {
        let (k, j) = two_stripes();
        let done = within_2s(move || {
            let locks = KeyLocks::new();
            locks.hold([(0, &k[..])], true).linger();
            let scope = locks.hold([(0, &j[..])], true);
            let k_free = !locked(&locks, &k);
            drop(scope);
            // A shared linger, then an exclusive hold of the same key: released, taken again.
            locks.hold([(0, &k[..])], false).linger();
            let scope = locks.hold([(0, &k[..])], true);
            let k_exclusive = locks.stripes[KeyLocks::stripe(0, &k)].is_locked_exclusive();
            drop(scope);
            // The data model's own lock of another key, and FLUSHALL's, release it too.
            locks.hold([(0, &k[..])], true).linger();
            let one = locks.lock_one(0, &j);
            let k_free_for_one = !locked(&locks, &k);
            drop(one);
            locks.hold([(0, &k[..])], true).linger();
            let all = locks.hold_all();
            drop(all);
            (k_free, k_exclusive, k_free_for_one, !locked(&locks, &k))
        });
        assert_eq!(done, Some((true, true, true, true)));
    }

    #[test]
    fn lingering_stripes_outlive_batch_ends_until_kept_for_linger_for() {
        let done = within_2s(|| {
            let locks = KeyLocks::new();
            locks.hold([(0, &b"k"[..])], true).linger();
            locks.end_batch();
            let kept_after_one_batch = locked(&locks, b"k");
            // The next batch's command on the same key takes them over and lingers again.
            locks.hold([(0, &b"k"[..])], true).linger();
            std::thread::sleep(LINGER_FOR + Duration::from_millis(1));
            locks.end_batch();
            let released_once_due = !locked(&locks, b"k");
            // Released, the clock starts again with the next linger.
            locks.hold([(0, &b"k"[..])], true).linger();
            locks.end_batch();
            let kept_again = locked(&locks, b"k");
            locks.release_lingering();
            (kept_after_one_batch, released_once_due, kept_again)
        });
        assert_eq!(done, Some((true, true, true)));
    }

    #[test]
    fn another_thread_waits_for_a_lingering_stripe_until_it_is_released() {
        let locks = Arc::new(KeyLocks::new());
        locks.hold([(0, &b"k"[..])], true).linger();
        let (l2, got) = (locks.clone(), Arc::new(AtomicBool::new(false)));
        let got2 = got.clone();
        let waiter = std::thread::spawn(move || {
            let _scope = l2.hold([(0, &b"k"[..])], true);
            got2.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!got.load(Ordering::SeqCst), "the stripe was not held");
        locks.release_lingering();
        assert!(waiter.join().is_ok());
        assert!(got.load(Ordering::SeqCst));
    }
}
