//! CLIENT PAUSE: the pause in force (none, WRITE or ALL, and until when) and the wait of a
//! connection whose next command it holds back (`strata_commands::pause::holds` judges which).
//! A held client shows as blocked (CLIENT LIST flag `b`, INFO `blocked_clients`) until
//! CLIENT UNPAUSE or the end of the pause, as Redis's postponed clients do. Checking for a
//! pause costs one atomic load per command. No socket I/O here.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// No pause.
const OFF: u8 = 0;
/// CLIENT PAUSE ... WRITE.
const WRITE: u8 = 1;
/// CLIENT PAUSE ... ALL (the stricter kind, as Redis orders them).
const ALL: u8 = 2;

/// The server's pause.
#[derive(Default)]
pub struct Pause {
    kind: AtomicU8,
    /// Unix ms when the pause ends.
    end_ms: AtomicU64,
    /// Clients held right now.
    held: AtomicUsize,
    ended: Notify,
}

/// What a held connection waits for.
pub enum Held {
    /// The pause is over (or no longer holds this command): run it.
    Released,
}

impl Pause {
    /// Whether a pause may be in force (one atomic load).
    #[inline]
    pub fn active(&self) -> bool {
        self.kind.load(Ordering::Relaxed) != OFF
    }

    /// The kind in force now: None when there is no pause (an expired one is ended here),
    /// `Some(true)` for WRITE, `Some(false)` for ALL.
    pub fn current(&self, now_ms: u64) -> Option<bool> {
        let kind = self.kind.load(Ordering::Acquire);
        if kind == OFF {
            return None;
        }
        if now_ms >= self.end_ms.load(Ordering::Acquire) {
            self.unpause();
            return None;
        }
        Some(kind == WRITE)
    }

    /// CLIENT PAUSE: a pause in force is extended (the later end, the stricter kind).
    pub fn pause(&self, end_ms: u64, write_only: bool) {
        let kind = if write_only { WRITE } else { ALL };
        if self.kind.load(Ordering::Acquire) == OFF {
            self.end_ms.store(end_ms, Ordering::Release);
        } else {
            self.end_ms.fetch_max(end_ms, Ordering::AcqRel);
        }
        self.kind.fetch_max(kind, Ordering::AcqRel);
        // A pause made stricter or longer holds more: waiting clients look again.
        self.ended.notify_waiters();
    }

    /// CLIENT UNPAUSE (and the end of a pause).
    pub fn unpause(&self) {
        self.kind.store(OFF, Ordering::Release);
        self.ended.notify_waiters();
    }

    /// Clients held now (INFO blocked_clients counts them).
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Waits until the pause may have ended (unpaused, changed, or its end time reached).
    pub async fn wait(&self, now_ms: u64) -> Held {
        let end = self.end_ms.load(Ordering::Acquire);
        let notified = self.ended.notified();
        let left = Duration::from_millis(end.saturating_sub(now_ms).max(1));
        self.held.fetch_add(1, Ordering::Relaxed);
        let _ = tokio::time::timeout(left.min(Duration::from_millis(100)), notified).await;
        self.held.fetch_sub(1, Ordering::Relaxed);
        Held::Released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_extend_and_end() {
        let p = Pause::default();
        assert_eq!(p.current(0), None);
        p.pause(100, true);
        assert_eq!(p.current(50), Some(true));
        p.pause(80, false);
        assert_eq!(p.current(90), Some(false));
        assert_eq!(p.current(100), None);
        assert!(!p.active());
        p.pause(100, true);
        p.unpause();
        assert_eq!(p.current(0), None);
    }
}
