//! Group commit for `appendfsync always`: one thread syncs the write-ahead log for every
//! connection that waits for it, so fifty clients writing at once share one fsync, as Redis's
//! clients share the fsync it does once per turn of its event loop. A connection that wrote
//! asks for the log to be synced through its last write ([`WalSync::synced_through`]) and awaits
//! the answer without holding its worker thread, which meanwhile runs other connections'
//! commands (whose writes the next sync then covers). Owns the sync thread; knows nothing of
//! connections or commands.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

use crate::log::warning;

/// What the sync thread has done: writes (by `Db::write_count`) made durable, and whether the
/// last sync failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Progress {
    synced: u64,
    failed: bool,
}

/// The handle connections wait on.
pub struct WalSync {
    /// The highest write count some connection waits for.
    wanted: Mutex<u64>,
    wake: Condvar,
    progress: watch::Sender<Progress>,
    /// The slowest sync since the server last sampled it (LATENCY's `aof-fsync-always`), ms.
    slowest_ms: std::sync::atomic::AtomicU64,
}

impl WalSync {
    /// Starts the sync thread for `db`.
    pub fn start(db: strata::Db) -> Arc<WalSync> {
        let (progress, _) = watch::channel(Progress::default());
        let sync = Arc::new(WalSync {
            wanted: Mutex::new(0),
            wake: Condvar::new(),
            progress,
            slowest_ms: Default::default(),
        });
        let worker = Arc::clone(&sync);
        let spawned = std::thread::Builder::new()
            .name("strata-wal-sync".into())
            .spawn(move || worker.run(&db));
        if let Err(e) = spawned {
            // Without the thread every wait would hang: fail loudly instead.
            panic!("cannot start the write-ahead-log sync thread: {e}");
        }
        sync
    }

    fn run(&self, db: &strata::Db) {
        loop {
            let target = {
                let mut wanted = self.wanted.lock();
                while *wanted <= self.progress.borrow().synced {
                    self.wake.wait(&mut wanted);
                }
                *wanted
            };
            // Everything written by now is covered, including writes after `target`.
            let covered = db.write_count().max(target);
            let started = std::time::Instant::now();
            let synced = db.sync_wal_through(covered);
            self.slowest_ms.fetch_max(
                started.elapsed().as_millis() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            let failed = match synced {
                Ok(()) => false,
                Err(e) => {
                    warning!("Syncing the write-ahead log failed: {e}");
                    true
                }
            };
            self.progress.send_modify(|p| {
                if !failed {
                    p.synced = p.synced.max(covered);
                }
                p.failed = failed;
            });
            if failed {
                // Do not spin on a failing disk; waiters were told.
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }

    /// The slowest sync since this was last asked, in ms (0 when none ran).
    pub fn take_slowest_ms(&self) -> u64 {
        self.slowest_ms
            .swap(0, std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until the first `writes` writes are on disk. False if a sync failed meanwhile (the
    /// writes may not be durable: the caller must not acknowledge them).
    pub async fn synced_through(&self, writes: u64) -> bool {
        let mut rx = self.progress.subscribe();
        if rx.borrow().synced >= writes {
            return true;
        }
        {
            let mut wanted = self.wanted.lock();
            if *wanted < writes {
                *wanted = writes;
                self.wake.notify_one();
            }
        }
        let outcome = rx.wait_for(|p| p.synced >= writes || p.failed).await;
        matches!(outcome, Ok(p) if p.synced >= writes)
    }
}
