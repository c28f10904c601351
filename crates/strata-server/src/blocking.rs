//! Blocked clients (BLPOP, BLMOVE, BZPOPMIN...): who waits on which key, in arrival order, and
//! serving them when a key is signalled.
//!
//! A blocking command that finds nothing records a `BlockRequest` in its session; the connection
//! then calls [`wait`], which registers a waiter under each `(db, key)` and waits for its reply,
//! the deadline, or the client going away (it keeps reading the socket, buffering any pipelined
//! commands, which run after the reply as in Redis). Every successful write command signals its
//! keys through `ServerApi::key_ready` (see `strata_commands::execute`), which lands in
//! [`Blocking::signal`]: on the writer's own thread, before the writer's reply is sent, the
//! waiters of that key are served first-blocked-first-served by re-running their command for
//! that key (in `BlockMode::Serve`) with their own database and protocol, until one finds nothing.
//! The reply travels to the waiting connection over a oneshot channel. Writes made while serving
//! (a served BLMOVE's push) are queued and served in turn on the same thread, as Redis's
//! ready-keys list. A waiter being served is never served twice at once; a waiter whose deadline
//! passes meanwhile gets its reply (or the timeout) when that serving ends.
//!
//! As Redis's `updateStatsOnUnblock`, a blocked command counts in INFO commandstats when its
//! wait ends, not when it blocked: once when served (failed if it answered an error) or ended
//! by CLIENT UNBLOCK (always failed), and not at all when it timed out. The [`Ending`] carries
//! that to the waiting connection, which counts it before sending the reply.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::{Mutex, MutexGuard};
use strata_commands::{execute, BlockMode, BlockRequest, Ctx, Outcome, Session};
use strata_resp::{Frame, Protocol};
use tokio::io::AsyncReadExt;
use tokio::sync::oneshot;

use crate::registry::ClientEntry;
use crate::server::{ClientApi, Server};

/// One blocked client.
struct Waiter {
    client: Arc<ClientEntry>,
    db: u32,
    keys: Vec<Bytes>,
    argv: Arc<[Bytes]>,
    protocol: Protocol,
    has_deadline: bool,
    /// A thread is running the command for it right now.
    serving: bool,
    /// Its deadline passed (or it went away) while it was being served: reply the timeout if
    /// that serving finds nothing.
    expired: bool,
    reply: Option<oneshot::Sender<Ending>>,
}

/// How a wait ended: the reply, and the call to count (none for a timeout).
pub struct Ending {
    pub frame: Frame,
    pub call: Option<Call>,
}

/// A blocked command's call, counted when its wait ends.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// Microseconds the serving run took (0 for CLIENT UNBLOCK).
    pub usec: u64,
    /// It answered an error (or was ended by CLIENT UNBLOCK).
    pub failed: bool,
}

impl Ending {
    fn timeout() -> Ending {
        Ending {
            frame: Frame::NullArray,
            call: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    /// Waiter ids per `(db, key)`, first blocked first.
    queues: HashMap<(u32, Bytes), VecDeque<u64>>,
    waiters: HashMap<u64, Waiter>,
}

impl Inner {
    /// Removes a waiter from every queue; returns it.
    fn remove(&mut self, id: u64) -> Option<Waiter> {
        let w = self.waiters.remove(&id)?;
        for k in &w.keys {
            let qk = (w.db, k.clone());
            if let Some(q) = self.queues.get_mut(&qk) {
                q.retain(|x| *x != id);
                if q.is_empty() {
                    self.queues.remove(&qk);
                }
            }
        }
        Some(w)
    }
}

/// The server-wide table of blocked clients.
#[derive(Default)]
pub struct Blocking {
    inner: Mutex<Inner>,
    /// Number of registered waiters (the lock-free fast path of [`Blocking::active`]).
    count: AtomicUsize,
    next_id: AtomicU64,
}

thread_local! {
    /// Whether this thread is inside [`Blocking::signal`] (signals from commands run while
    /// serving are queued, not served recursively).
    static SERVING: Cell<bool> = const { Cell::new(false) };
    /// Keys signalled on this thread and not served yet.
    static PENDING: RefCell<VecDeque<(u32, Bytes)>> = const { RefCell::new(VecDeque::new()) };
}

/// Clears [`SERVING`] even if serving unwinds.
struct ServingGuard;

impl Drop for ServingGuard {
    fn drop(&mut self) {
        SERVING.with(|s| s.set(false));
        PENDING.with(|p| p.borrow_mut().clear());
    }
}

/// What one attempt to serve a waiter produced.
enum Attempt {
    /// A reply (and how long the run took, µs): the waiter is done.
    Served(Frame, u64),
    /// The key holds nothing for it (or the wrong type): it stays blocked.
    Nothing { wrong_type: bool },
}

impl Blocking {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock()
    }

    /// Whether any client is blocked. Sequentially consistent with [`Blocking::register`], so a
    /// writer that finds no waiter after its write is sure that a client registering later will
    /// see that write when it re-checks its keys.
    #[inline]
    pub fn active(&self) -> bool {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.count.load(Ordering::SeqCst) > 0
    }

    /// INFO blocked_clients.
    pub fn blocked_clients(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Every `(db, key)` a client is blocked on.
    pub fn blocked_keys(&self) -> Vec<(u32, Bytes)> {
        self.lock().queues.keys().cloned().collect()
    }

    /// INFO clients_in_timeout_table: blocked clients with a deadline.
    pub fn with_timeout(&self) -> usize {
        self.lock()
            .waiters
            .values()
            .filter(|w| w.has_deadline)
            .count()
    }

    fn register(
        &self,
        client: Arc<ClientEntry>,
        session: &Session,
        argv: &[Bytes],
        req: &BlockRequest,
        reply: oneshot::Sender<Ending>,
    ) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut keys: Vec<Bytes> = Vec::with_capacity(req.keys.len());
        for k in &req.keys {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        let mut inner = self.lock();
        for k in &keys {
            inner
                .queues
                .entry((req.db, k.clone()))
                .or_default()
                .push_back(id);
        }
        inner.waiters.insert(
            id,
            Waiter {
                client,
                db: req.db,
                keys,
                argv: req.rerun.as_deref().unwrap_or(argv).into(),
                protocol: session.protocol,
                has_deadline: req.deadline.is_some(),
                serving: false,
                expired: false,
                reply: Some(reply),
            },
        );
        self.count.fetch_add(1, Ordering::SeqCst);
        id
    }

    /// Removes a waiter that is not being served (true); one being served is marked expired
    /// instead, and will get its reply or the timeout when that ends (false).
    fn expire(&self, id: u64) -> bool {
        let mut inner = self.lock();
        match inner.waiters.get_mut(&id) {
            None => true,
            Some(w) if w.serving => {
                w.expired = true;
                false
            }
            Some(_) => {
                inner.remove(id);
                self.count.fetch_sub(1, Ordering::SeqCst);
                true
            }
        }
    }

    /// CLIENT UNBLOCK: ends the wait of client `client_id` with `reply` (the timeout's null
    /// array, or `-UNBLOCKED`). False when it is not blocked (or is being served right now).
    pub fn unblock(&self, client_id: u64, reply: Frame) -> bool {
        let mut inner = self.lock();
        let Some(id) = inner
            .waiters
            .iter()
            .find(|(_, w)| w.client.id == client_id && !w.serving)
            .map(|(id, _)| *id)
        else {
            return false;
        };
        let Some(mut w) = inner.remove(id) else {
            return false;
        };
        self.count.fetch_sub(1, Ordering::SeqCst);
        w.client.blocked.store(false, Ordering::Relaxed);
        if let Some(tx) = w.reply.take() {
            // Redis counts a command ended by CLIENT UNBLOCK as a failed call, either way.
            let call = Some(Call {
                usec: 0,
                failed: true,
            });
            let _ = tx.send(Ending { frame: reply, call });
        }
        true
    }

    /// Serves the clients blocked on `key` of database `db` (and, in turn, on any key that
    /// serving them writes). Cheap when nobody is blocked.
    pub fn signal(&self, server: &Arc<Server>, db: u32, key: &[u8]) {
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        if !self
            .lock()
            .queues
            .contains_key(&(db, Bytes::copy_from_slice(key)))
        {
            return;
        }
        PENDING.with(|p| p.borrow_mut().push_back((db, Bytes::copy_from_slice(key))));
        if SERVING.with(|s| s.replace(true)) {
            return;
        }
        let _guard = ServingGuard;
        while let Some((db, key)) = PENDING.with(|p| p.borrow_mut().pop_front()) {
            self.serve_key(server, db, &key);
        }
    }

    /// Serves the waiters of one key in order until one finds nothing there. Waiters that find
    /// the key of another type (a BLPOP waiter on a key that became a sorted set) are skipped
    /// and stay blocked, as in Redis 7.0. Each waiter is tried at most once per call.
    fn serve_key(&self, server: &Arc<Server>, db: u32, key: &Bytes) {
        let qk = (db, key.clone());
        let mut tried: Vec<u64> = Vec::new();
        loop {
            let job = {
                let mut inner = self.lock();
                let Some(q) = inner.queues.get(&qk) else {
                    return;
                };
                let Some(id) = q.iter().copied().find(|id| {
                    !tried.contains(id) && inner.waiters.get(id).is_some_and(|w| !w.serving)
                }) else {
                    return;
                };
                let Some(w) = inner.waiters.get_mut(&id) else {
                    return;
                };
                w.serving = true;
                (id, w.client.clone(), w.argv.clone(), w.protocol)
            };
            let (id, client, argv, protocol) = job;
            tried.push(id);
            let attempt = run_for(server, &client, db, protocol, key, &argv);
            let mut inner = self.lock();
            let Some(w) = inner.waiters.get_mut(&id) else {
                continue;
            };
            w.serving = false;
            let (ending, stop) = match attempt {
                Attempt::Served(frame, usec) => {
                    let failed = matches!(frame, Frame::Error(_));
                    let call = Some(Call { usec, failed });
                    (Some(Ending { frame, call }), false)
                }
                Attempt::Nothing { wrong_type } if w.expired => {
                    (Some(Ending::timeout()), !wrong_type)
                }
                Attempt::Nothing { wrong_type } => (None, !wrong_type),
            };
            if let Some(ending) = ending {
                if let Some(mut w) = inner.remove(id) {
                    self.count.fetch_sub(1, Ordering::SeqCst);
                    w.client.blocked.store(false, Ordering::Relaxed);
                    if let Some(tx) = w.reply.take() {
                        // A client that went away meanwhile drops its receiver: nothing to do.
                        let _ = tx.send(ending);
                    }
                }
            }
            if stop {
                return;
            }
        }
    }
}

/// Runs a blocked client's command again for `key`, as that client (database, protocol).
fn run_for(
    server: &Arc<Server>,
    client: &Arc<ClientEntry>,
    db: u32,
    protocol: Protocol,
    key: &Bytes,
    argv: &[Bytes],
) -> Attempt {
    let Ok(handle) = server.db.select(db) else {
        return Attempt::Nothing { wrong_type: false };
    };
    let mut session = Session::new(client.id, handle, false);
    session.protocol = protocol;
    session.block_mode = BlockMode::Serve(key.clone());
    let api = ClientApi { server, client };
    let started = std::time::Instant::now();
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        execute(
            &mut Ctx {
                session: &mut session,
                server: &api,
            },
            argv,
        )
    }));
    match outcome {
        // Waiting again: the key holds nothing for it, or holds another type. Any reply, a
        // WRONGTYPE about a BLMOVE's destination included, is its answer.
        Ok(Outcome::Block(req)) => Attempt::Nothing {
            wrong_type: req.other_type,
        },
        Ok(outcome) => Attempt::Served(outcome.into_reply(), micros_since(started)),
        Err(_) => Attempt::Served(Frame::error("ERR internal error"), micros_since(started)),
    }
}

fn micros_since(t: std::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Unregisters the waiter if the waiting future is dropped (server shutdown).
struct WaitGuard<'a> {
    blocking: &'a Blocking,
    client: &'a ClientEntry,
    id: u64,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        self.blocking.expire(self.id);
        self.client.blocked.store(false, Ordering::Relaxed);
    }
}

/// How a wait ended.
pub enum Woken {
    /// The reply to send, and the call to count.
    Reply(Ending),
    /// The client disconnected, was killed, or overflowed its query buffer while blocked.
    Gone,
}

/// Blocks the connection on `req` (its command `argv` found nothing): registers the waiter,
/// then waits for a reply, the deadline (a null-array reply) or the client going away, reading
/// and buffering whatever the client sends meanwhile into `rbuf` (`read` counts the bytes).
#[allow(clippy::too_many_arguments)]
pub async fn wait(
    server: &Arc<Server>,
    client: &Arc<ClientEntry>,
    session: &Session,
    argv: &[Bytes],
    req: BlockRequest,
    stream: &mut crate::stream::ClientStream,
    rbuf: &mut BytesMut,
    query_buffer_limit: usize,
    read: &mut u64,
) -> io::Result<Woken> {
    let blocking = &server.blocking;
    let (tx, mut rx) = oneshot::channel();
    client.blocked.store(true, Ordering::Relaxed);
    let id = blocking.register(client.clone(), session, argv, &req, tx);
    let _guard = WaitGuard {
        blocking,
        client,
        id,
    };
    // A write between this client's check and its registration signalled nobody: check again
    // now (serving earlier waiters of these keys first).
    for k in &req.keys {
        blocking.signal(server, req.db, k);
    }
    let deadline = req.deadline.map(tokio::time::Instant::from_std);
    let mut timed_out = false;
    loop {
        let sleep = async {
            match deadline {
                Some(d) if !timed_out => tokio::time::sleep_until(d).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            r = &mut rx => {
                return Ok(Woken::Reply(r.unwrap_or_else(|_| Ending::timeout())));
            }
            _ = sleep => {
                timed_out = true;
                if blocking.expire(id) {
                    // Served just now (the reply is already in the channel) or timed out.
                    return Ok(Woken::Reply(rx.try_recv().unwrap_or_else(|_| Ending::timeout())));
                }
                // Being served right now: its outcome arrives on `rx`.
            }
            n = stream.read_buf(rbuf) => {
                let gone = match n {
                    Ok(0) | Err(_) => true,
                    Ok(n) => {
                        *read += n as u64;
                        rbuf.len() > query_buffer_limit
                    }
                };
                if gone || client.killed.load(Ordering::Acquire) {
                    return Ok(Woken::Gone);
                }
                if rbuf.capacity() - rbuf.len() < 8 * 1024 {
                    rbuf.reserve(16 * 1024);
                }
            }
        }
    }
}
