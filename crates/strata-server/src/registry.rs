//! The client registry: one [`ClientEntry`] per open connection, holding what CLIENT LIST / CLIENT
//! INFO show (address, name, database, protocol, last command, buffer sizes, idle time) and the
//! means to close a connection from elsewhere (CLIENT KILL, the idle-timeout sweep). Connections
//! update their own entry with relaxed atomic stores once per read batch; readers (CLIENT LIST, INFO)
//! take the registry lock. This module does no socket I/O beyond `shutdown(2)` on a killed
//! connection's descriptor, and knows nothing of commands or storage.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use strata_commands::KillFilter;

/// The bits of [`ClientEntry::tracking`].
pub mod tracking {
    /// CLIENT TRACKING is on (flag `t`).
    pub const ON: u8 = 1;
    /// The REDIRECT client went away (flag `R`).
    pub const BROKEN_REDIRECT: u8 = 1 << 1;
    /// BCAST mode (flag `B`).
    pub const BCAST: u8 = 1 << 2;
}

/// A command name kept inline (command names are short ASCII; longer ones are cut).
pub struct CmdName {
    buf: [u8; 40],
    len: u8,
}

impl Default for CmdName {
    fn default() -> Self {
        let mut c = CmdName {
            buf: [0; 40],
            len: 0,
        };
        c.set("NULL");
        c
    }
}

impl CmdName {
    /// Replaces the name.
    #[inline]
    pub fn set(&mut self, name: &str) {
        let n = name.len().min(self.buf.len());
        self.buf[..n].copy_from_slice(&name.as_bytes()[..n]);
        self.len = n as u8;
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or("?")
    }
}

/// What the registry knows about one connection.
pub struct ClientEntry {
    /// CLIENT ID.
    pub id: u64,
    /// Peer `ip:port`.
    pub addr: String,
    /// Local `ip:port`.
    pub laddr: String,
    /// The socket's file descriptor.
    pub fd: i32,
    /// Connection time, Unix ms.
    pub created_ms: u64,
    /// Last time the client sent something, Unix ms (coarse clock).
    pub last_interaction_ms: AtomicU64,
    /// Selected database.
    pub db: AtomicU32,
    /// Protocol version (2 or 3).
    pub resp: AtomicU8,
    /// CLIENT SETNAME.
    pub name: Mutex<Option<Bytes>>,
    /// The ACL user the client is authenticated as (CLIENT LIST `user`, CLIENT KILL USER).
    pub user: Mutex<Bytes>,
    /// Name of the last command run (`NULL` before the first).
    pub cmd: Mutex<CmdName>,
    /// Unparsed bytes in the query buffer after the last batch.
    pub qbuf: AtomicUsize,
    /// Free space of the query buffer after the last batch.
    pub qbuf_free: AtomicUsize,
    /// Bytes held by the connection's buffers.
    pub buf_mem: AtomicUsize,
    /// Capacity of the reply buffer (CLIENT LIST `rbs`).
    pub rbs: AtomicUsize,
    /// Largest batch of replies held in it since it was last shrunk (CLIENT LIST `rbp`).
    pub rbp: AtomicUsize,
    /// Commands queued in an open MULTI, -1 outside one (CLIENT LIST `multi`, flag `x`).
    pub multi: AtomicI64,
    /// Memory of the commands queued in it (CLIENT LIST `multi-mem`).
    pub multi_mem: AtomicUsize,
    /// CLIENT NO-EVICT (flag `e`).
    pub no_evict: AtomicBool,
    /// In MONITOR mode (flag `O`).
    pub monitor: AtomicBool,
    /// The link to a Redis leader applying its stream (flag `M`, type `master`).
    pub master: AtomicBool,
    /// Set by CLIENT KILL (or the timeout sweep): the connection must close.
    pub killed: AtomicBool,
    /// Set by CLIENT KILL of the calling client itself: close once its reply is written.
    pub close_after_reply: AtomicBool,
    /// Waiting in a blocking command (BLPOP...): CLIENT LIST shows `flags=b`, and the idle
    /// timeout does not apply (as in Redis).
    pub blocked: AtomicBool,
    /// Pushed messages (pub/sub) waiting for the connection to write them.
    pub outbox: crate::pubsub::Outbox,
    /// The receiving end of `outbox`, taken by the connection when it starts.
    pub inbox: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<crate::pubsub::Pushed>>>,
    /// CLIENT TRACKING state shown by CLIENT LIST: `tracking::*` bits (flags `t`, `R`, `B`).
    pub tracking: AtomicU8,
    /// The REDIRECT client of a tracking client (0: none), -1 when tracking is off (`redir`).
    pub redir: AtomicI64,
    /// Channels, patterns and shard channels subscribed to (CLIENT LIST `sub`, `psub`, `ssub`).
    pub sub: AtomicUsize,
    pub psub: AtomicUsize,
    pub ssub: AtomicUsize,
}

impl ClientEntry {
    /// Marks the connection as killed and wakes its reader by shutting the socket down.
    ///
    /// Must be called with the registry locked, on a registered entry, which is then removed: a
    /// connection deregisters itself before its socket is closed, so a registered entry's
    /// descriptor is still its own, and a removed entry is never shut down again.
    fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        // SAFETY: shutdown(2) on a descriptor the connection still owns (see above); it only
        // changes the socket's state and never frees anything.
        unsafe {
            libc::shutdown(self.fd, libc::SHUT_RDWR);
        }
    }

    /// Records the subscription counts (set by the broker).
    pub fn set_subscriptions(&self, s: strata_commands::Subscriptions) {
        self.sub.store(s.channels, Ordering::Relaxed);
        self.psub.store(s.patterns, Ordering::Relaxed);
        self.ssub.store(s.shard, Ordering::Relaxed);
    }

    /// Records a session's open transaction: CLIENT LIST `multi` (the commands queued, -1
    /// outside MULTI) and `multi-mem`.
    pub fn set_multi(&self, session: &strata_commands::Session) {
        let (count, mem) = session
            .multi
            .as_ref()
            .map_or((-1, 0), |m| (m.queue.len() as i64, m.argv_mem));
        self.multi.store(count, Ordering::Relaxed);
        self.multi_mem.store(mem, Ordering::Relaxed);
    }

    /// Whether the client is subscribed to anything (Redis's `CLIENT_PUBSUB`, type `pubsub`).
    pub fn is_pubsub(&self) -> bool {
        self.sub.load(Ordering::Relaxed)
            + self.psub.load(Ordering::Relaxed)
            + self.ssub.load(Ordering::Relaxed)
            > 0
    }

    /// Whether the client is of CLIENT LIST / CLIENT KILL type `kind` (normal, pubsub, or
    /// master: the link to a Redis leader; Strata's replicas are not in the registry).
    fn is_type(&self, kind: &str) -> bool {
        let master = self.master.load(Ordering::Relaxed);
        if kind.eq_ignore_ascii_case("master") {
            master
        } else if master {
            false
        } else if kind.eq_ignore_ascii_case("normal") {
            !self.is_pubsub()
        } else if kind.eq_ignore_ascii_case("pubsub") {
            self.is_pubsub()
        } else {
            false
        }
    }

    /// Records the name of the command being run (a copy into a fixed buffer: no allocation).
    #[inline]
    pub fn set_cmd(&self, name: &str) {
        self.cmd.lock().set(name);
    }

    /// CLIENT LIST `flags`, in Redis 7.0's order (`N` when none applies).
    fn flags(&self) -> String {
        let mut f = String::with_capacity(4);
        if self.master.load(Ordering::Relaxed) {
            f.push('M');
        }
        if self.monitor.load(Ordering::Relaxed) {
            f.push('O');
        }
        if self.is_pubsub() {
            f.push('P');
        }
        if self.multi.load(Ordering::Relaxed) >= 0 {
            f.push('x');
        }
        if self.blocked.load(Ordering::Relaxed) {
            f.push('b');
        }
        let t = self.tracking.load(Ordering::Relaxed);
        for (bit, letter) in [
            (tracking::ON, 't'),
            (tracking::BROKEN_REDIRECT, 'R'),
            (tracking::BCAST, 'B'),
        ] {
            if t & bit != 0 {
                f.push(letter);
            }
        }
        if self.close_after_reply.load(Ordering::Relaxed) {
            f.push('c');
        }
        if self.no_evict.load(Ordering::Relaxed) {
            f.push('e');
        }
        if f.is_empty() {
            f.push('N');
        }
        f
    }

    /// The CLIENT LIST line of this client (without the trailing newline), with Redis 7.0's
    /// fields in its order.
    /// CLIENT LIST's `tot-mem`: the connection's buffers, its queued output and its entry.
    pub fn total_memory(&self) -> usize {
        self.buf_mem.load(Ordering::Relaxed)
            + self.outbox.queued()
            + std::mem::size_of::<ClientEntry>()
    }

    pub fn line(&self, now_ms: u64) -> String {
        let name = self
            .name
            .lock()
            .as_ref()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let cmd = self.cmd.lock().as_str().to_owned();
        let user = String::from_utf8_lossy(&self.user.lock()).into_owned();
        let age = now_ms.saturating_sub(self.created_ms) / 1000;
        let idle = now_ms.saturating_sub(self.last_interaction_ms.load(Ordering::Relaxed)) / 1000;
        let mut s = String::with_capacity(300);
        let _ = write!(
            s,
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} \
             multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem={} rbs={} rbp={} obl=0 oll=0 omem={} \
             tot-mem={} events=r cmd={} user={} redir={} resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            name,
            age,
            idle,
            self.flags(),
            self.db.load(Ordering::Relaxed),
            self.sub.load(Ordering::Relaxed),
            self.psub.load(Ordering::Relaxed),
            self.ssub.load(Ordering::Relaxed),
            self.multi.load(Ordering::Relaxed),
            self.qbuf.load(Ordering::Relaxed),
            self.qbuf_free.load(Ordering::Relaxed),
            self.multi_mem.load(Ordering::Relaxed),
            self.rbs.load(Ordering::Relaxed),
            self.rbp.load(Ordering::Relaxed),
            self.outbox.queued(),
            self.total_memory(),
            cmd,
            user,
            self.redir.load(Ordering::Relaxed),
            self.resp.load(Ordering::Relaxed),
        );
        s
    }
}

/// All open connections, by id.
#[derive(Default)]
pub struct Registry {
    clients: Mutex<BTreeMap<u64, Arc<ClientEntry>>>,
    next_id: AtomicU64,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<ClientEntry>>> {
        self.clients.lock()
    }

    /// Registers a new connection unless `max` clients are already connected (then `None`).
    pub fn register(
        &self,
        peer: SocketAddr,
        local: SocketAddr,
        fd: i32,
        now_ms: u64,
        max: usize,
    ) -> Option<Arc<ClientEntry>> {
        let mut clients = self.lock();
        if clients.len() >= max {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let (outbox, inbox) = crate::pubsub::Outbox::new();
        let entry = Arc::new(ClientEntry {
            id,
            addr: peer.to_string(),
            laddr: local.to_string(),
            fd,
            created_ms: now_ms,
            last_interaction_ms: AtomicU64::new(now_ms),
            db: AtomicU32::new(0),
            resp: AtomicU8::new(2),
            name: Mutex::new(None),
            user: Mutex::new(Bytes::from_static(b"default")),
            cmd: Mutex::new(CmdName::default()),
            qbuf: AtomicUsize::new(0),
            qbuf_free: AtomicUsize::new(0),
            buf_mem: AtomicUsize::new(0),
            rbs: AtomicUsize::new(0),
            rbp: AtomicUsize::new(0),
            multi: AtomicI64::new(-1),
            multi_mem: AtomicUsize::new(0),
            no_evict: AtomicBool::new(false),
            monitor: AtomicBool::new(false),
            master: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            close_after_reply: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            outbox,
            inbox: Mutex::new(Some(inbox)),
            tracking: AtomicU8::new(0),
            redir: AtomicI64::new(-1),
            sub: AtomicUsize::new(0),
            psub: AtomicUsize::new(0),
            ssub: AtomicUsize::new(0),
        });
        clients.insert(id, entry.clone());
        Some(entry)
    }

    /// The entry of client `id`, if it is connected.
    pub fn get(&self, id: u64) -> Option<Arc<ClientEntry>> {
        self.lock().get(&id).cloned()
    }

    /// The ids of the subscribed clients authenticated as ACL user `user`.
    pub fn subscribers_of_user(&self, user: &[u8]) -> Vec<u64> {
        self.lock()
            .values()
            .filter(|e| e.is_pubsub() && e.user.lock()[..] == *user)
            .map(|e| e.id)
            .collect()
    }

    /// Removes a connection; call before its socket is closed.
    pub fn deregister(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// The memory of every client's buffers (the sum of CLIENT LIST's `tot-mem`).
    pub fn memory(&self) -> u64 {
        self.lock().values().map(|c| c.total_memory() as u64).sum()
    }

    /// CLIENT LIST text: one line per client (in id order), each ending in `\n`.
    pub fn list(&self, ids: Option<&[u64]>, kind: Option<&str>, now_ms: u64) -> String {
        let entries: Vec<Arc<ClientEntry>> = {
            let clients = self.lock();
            match ids {
                Some(ids) => ids
                    .iter()
                    .filter_map(|id| clients.get(id).cloned())
                    .collect(),
                None => clients.values().cloned().collect(),
            }
        };
        let entries = entries
            .into_iter()
            .filter(|e| kind.is_none_or(|k| e.is_type(k)))
            .collect::<Vec<_>>();
        let mut out = String::with_capacity(entries.len() * 300);
        for e in entries {
            out.push_str(&e.line(now_ms));
            out.push('\n');
        }
        out
    }

    /// CLIENT KILL with filters; returns how many clients were killed. The caller (`self_id`) is
    /// skipped when `filter.skip_me`; if it matches otherwise it is closed after its reply.
    pub fn kill(&self, filter: &KillFilter, self_id: u64) -> usize {
        let mut clients = self.lock();
        let mut n = 0;
        let mut gone = Vec::new();
        for e in clients.values() {
            if filter.kind.as_deref().is_some_and(|k| !e.is_type(k))
                || filter.id.is_some_and(|id| id != e.id)
                || filter.addr.as_deref().is_some_and(|a| a != e.addr)
                || filter.laddr.as_deref().is_some_and(|a| a != e.laddr)
                || filter.user.as_ref().is_some_and(|u| *u != *e.user.lock())
            {
                continue;
            }
            if e.id == self_id {
                if filter.skip_me {
                    continue;
                }
                e.close_after_reply.store(true, Ordering::Release);
            } else {
                e.kill();
                gone.push(e.id);
            }
            n += 1;
        }
        // A killed client leaves the list at once, as in Redis (its task finishes on its own).
        for id in gone {
            clients.remove(&id);
        }
        n
    }

    /// Closes one client (an output-buffer limit overrun); false when it was already gone.
    pub fn kill_entry(&self, entry: &ClientEntry) -> bool {
        let mut clients = self.lock();
        if clients.remove(&entry.id).is_some() {
            entry.kill();
            true
        } else {
            false
        }
    }

    /// Kills every client idle for more than `timeout_ms`; returns how many.
    pub fn kill_idle(&self, timeout_ms: u64, now_ms: u64) -> usize {
        let mut clients = self.lock();
        let before = clients.len();
        clients.retain(|_, e| {
            let last = e.last_interaction_ms.load(Ordering::Relaxed);
            // Blocked and subscribed clients wait legitimately, as in Redis.
            let idle = now_ms.saturating_sub(last) > timeout_ms
                && !e.blocked.load(Ordering::Relaxed)
                && !e.master.load(Ordering::Relaxed)
                && !e.is_pubsub();
            if idle {
                e.kill();
            }
            !idle
        });
        before - clients.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("address")
    }

    #[test]
    fn register_refuses_over_max() {
        let r = Registry::default();
        let a = r.register(addr("127.0.0.1:1000"), addr("127.0.0.1:6379"), -1, 0, 1);
        assert!(a.is_some());
        assert!(r
            .register(addr("127.0.0.1:1001"), addr("127.0.0.1:6379"), -1, 0, 1)
            .is_none());
        r.deregister(a.map(|e| e.id).unwrap_or(0));
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn list_line_has_redis_fields() {
        let r = Registry::default();
        let e = r
            .register(addr("127.0.0.1:1000"), addr("127.0.0.1:6379"), 7, 5_000, 10)
            .expect("registered");
        *e.name.lock() = Some(Bytes::from_static(b"worker"));
        e.set_cmd("get");
        let line = r.list(None, None, 9_000);
        assert!(line.starts_with(
            "id=1 addr=127.0.0.1:1000 laddr=127.0.0.1:6379 fd=7 name=worker age=4 idle=4 flags=N db=0"
        ));
        assert!(
            line.contains(" cmd=get user=default redir=-1 resp=2\n"),
            "{line}"
        );
        assert!(
            line.contains(" ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem="),
            "{line}"
        );
        e.multi.store(2, Ordering::Relaxed);
        e.no_evict.store(true, Ordering::Relaxed);
        assert!(r.list(None, None, 9_000).contains(" flags=xe db=0 "));
        assert_eq!(r.list(None, Some("pubsub"), 0), "");
        assert_eq!(r.list(Some(&[2]), None, 0), "");
    }

    #[test]
    fn kill_skips_the_caller_unless_asked() {
        let r = Registry::default();
        let e = r
            .register(addr("127.0.0.1:1000"), addr("127.0.0.1:6379"), -1, 0, 10)
            .expect("registered");
        let by_id = KillFilter {
            id: Some(e.id),
            skip_me: true,
            ..KillFilter::default()
        };
        assert_eq!(r.kill(&by_id, e.id), 0);
        let me_too = KillFilter {
            skip_me: false,
            ..by_id
        };
        assert_eq!(r.kill(&me_too, e.id), 1);
        assert!(e.close_after_reply.load(Ordering::Relaxed));
    }
}
