//! The clients in MONITOR mode and the delivery of the monitor feed to them: a line (formatted
//! by `strata_commands::monitor`) is pushed, as a simple string, into the outbox of every
//! monitoring client, which its connection writes as it writes pub/sub messages. Whether anyone
//! monitors is one atomic load, so the feed costs nothing when nobody does. No socket I/O here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use strata_resp::Frame;

use crate::registry::ClientEntry;

/// The monitoring clients.
#[derive(Default)]
pub struct Monitors {
    count: AtomicUsize,
    clients: Mutex<Vec<Arc<ClientEntry>>>,
}

impl Monitors {
    /// Whether any client monitors.
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Adds a client (MONITOR).
    pub fn add(&self, client: Arc<ClientEntry>) {
        let mut clients = self.clients.lock();
        if clients.iter().all(|c| c.id != client.id) {
            client
                .monitor
                .store(true, std::sync::atomic::Ordering::Relaxed);
            clients.push(client);
            self.count.store(clients.len(), Ordering::Relaxed);
        }
    }

    /// Removes a client (RESET, or the connection closing).
    pub fn remove(&self, id: u64) {
        if !self.active() {
            return;
        }
        let mut clients = self.clients.lock();
        clients.retain(|c| {
            if c.id == id {
                c.monitor.store(false, Ordering::Relaxed);
            }
            c.id != id
        });
        self.count.store(clients.len(), Ordering::Relaxed);
    }

    /// Sends one line to every monitoring client.
    pub fn feed(&self, line: String) {
        let frame = Frame::Simple(line.into());
        for c in self.clients.lock().iter() {
            c.outbox.push(frame.clone());
        }
    }
}
