//! One client connection: read into a buffer, decode every complete request in it, execute them
//! in order on this worker (commands call synchronous RocksDB: that is the design), append the
//! encoded replies to one output buffer and write it with one call. This is the hot path: no lock
//! and no shared-counter update per command; settings are cached and refreshed when the server's
//! configuration generation changes; statistics are added once per read batch. Owns the socket;
//! knows nothing of command semantics beyond a command's [`Outcome`] and CLIENT REPLY.
//!
//! The state is a [`Conn`] whose steps read as the loop does: `read_more`, `run_batch` (each
//! request: `run_command`, `block` when it waits, `after_command`), `flush`.
//!
//! The query buffer is sized as Redis sizes it (see `shrink_buffers` and `wait_idle_input`):
//! room for one read, kept large after a large request until smaller ones follow, and released
//! while the client is idle.
//!
//! While waiting for input a connection also waits for pushed frames in its outbox (pub/sub
//! messages, MONITOR lines, CLIENT TRACKING invalidations) and writes them as they come. Once
//! it has received any (or subscribed, or turned tracking on), it also drains the outbox around
//! each command: what was queued before the command goes ahead of its reply; of what comes
//! while it runs, messages go ahead of the reply (as Redis's output buffer orders them) and
//! invalidations after it, since the reply may hold the value they invalidate (Redis, single
//! threaded, writes an invalidation for a client's own write after its reply too). Pushes
//! (messages, invalidations, subscription acknowledgements) are sent even under CLIENT REPLY
//! OFF/SKIP, as Redis 7.0 sends them.

use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use strata::SyncPolicy;
use strata_commands::outcome::Outcome;
use strata_commands::{execute, BlockRequest, Ctx, PsyncRequest, ReplyMode, Session};
use strata_resp::{encode, Frame, Protocol, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::blocking::{self, Woken};
use crate::log::{self, warning};
use crate::pubsub::{frame_size, Pushed};
use crate::registry::ClientEntry;
use crate::server::{ClientApi, LiveSettings, Server};
use crate::stream::ClientStream;

/// Read buffer growth step (Redis reads 16 KiB at a time).
const READ_CHUNK: usize = 16 * 1024;
/// Replies are written early once this much has accumulated within one batch.
const WRITE_FLUSH: usize = 256 * 1024;
/// Buffers larger than this are released once empty, so an idle client holds little memory.
const SHRINK_ABOVE: usize = 1024 * 1024;
/// A client that sent nothing for longer than this gives back its (empty) query buffer, as
/// Redis's client cron frees the query buffer of a client idle for more than 2 seconds.
const IDLE_RELEASE: std::time::Duration = std::time::Duration::from_secs(2);
/// A query buffer larger than this (Redis's `PROTO_RESIZE_THRESHOLD`) is trimmed when it is
/// more than twice the largest request seen since the last look, looked at every
/// [`PEAK_WINDOW_MS`] while the client is active.
const RESIZE_THRESHOLD: usize = 32 * 1024;
const PEAK_WINDOW_MS: u64 = 100;

/// Serves one registered client until it disconnects, is killed, quits or misbehaves, then
/// removes it from the registry (before the socket is closed, see `registry`).
pub async fn run(server: Arc<Server>, mut stream: ClientStream, client: Arc<ClientEntry>) {
    // Deregisters even if the task unwinds. Locals drop in reverse order, so the guard (declared
    // after the `stream` parameter) always runs before the socket is closed.
    let guard = Deregister {
        server: &server,
        id: client.id,
    };
    let handover = match serve(&server, &mut stream, &client).await {
        Ok(h) => h,
        Err(e) => {
            log::verbose!("Client id={} addr={} closed: {e}", client.id, client.addr);
            None
        }
    };
    drop(guard);
    match handover {
        Some(req) => {
            let ip = client
                .addr
                .rsplit_once(':')
                .map_or(client.addr.clone(), |(ip, _)| ip.to_string());
            crate::replication::take_over(server.clone(), stream, ip, req);
        }
        None => drop(stream),
    }
}

/// Removes a client from the registry when dropped.
struct Deregister<'a> {
    server: &'a Server,
    id: u64,
}

impl Drop for Deregister<'_> {
    fn drop(&mut self) {
        self.server.registry.deregister(self.id);
        self.server.pubsub.remove_client(self.id);
        self.server.monitors.remove(self.id);
        self.server.tracking.disable(self.id);
    }
}

/// Moves every frame queued in the outbox into `wbuf`, encoded in `protocol` (invalidations into
/// `held` instead, when given: they are to follow a reply); returns how many queued bytes that
/// accounted for (to hand back with `Outbox::taken` once written).
fn drain_outbox(
    inbox: &mut UnboundedReceiver<Pushed>,
    protocol: Protocol,
    wbuf: &mut BytesMut,
    mut held: Option<&mut Vec<Frame>>,
) -> usize {
    let mut taken = 0;
    while let Ok(p) = inbox.try_recv() {
        taken += frame_size(&p.frame);
        match held.as_deref_mut() {
            Some(later) if p.invalidation => later.push(p.frame),
            _ => encode(&p.frame, protocol, wbuf),
        }
        if wbuf.len() >= WRITE_FLUSH {
            break;
        }
    }
    taken
}

/// Writes a pushed frame that came while the connection waited for input, with any queued
/// behind it.
async fn write_pushed(
    stream: &mut ClientStream,
    wbuf: &mut BytesMut,
    inbox: &mut UnboundedReceiver<Pushed>,
    first: Pushed,
    protocol: Protocol,
    server: &Server,
    client: &ClientEntry,
) -> io::Result<()> {
    let mut taken = frame_size(&first.frame);
    encode(&first.frame, protocol, wbuf);
    taken += drain_outbox(inbox, protocol, wbuf, None);
    stream.send_all(wbuf).await?;
    server.stats.add_batch(0, 0, wbuf.len() as u64);
    wbuf.clear();
    client.outbox.taken(taken);
    if wbuf.capacity() > SHRINK_ABOVE {
        *wbuf = BytesMut::with_capacity(READ_CHUNK);
    }
    Ok(())
}

/// Waits for the next pushed frame (forever without an outbox).
async fn next_pushed(inbox: &mut Option<UnboundedReceiver<Pushed>>) -> Pushed {
    match inbox {
        Some(rx) => match rx.recv().await {
            Some(p) => p,
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

/// How a step of the connection ends.
enum Flow {
    /// Go on serving.
    Go,
    /// Close the connection (once the replies so far are sent).
    Close,
    /// The client sent PSYNC: its socket becomes a replica's stream.
    Handover(PsyncRequest),
}

/// What one read batch did, added to the server's statistics once per batch.
#[derive(Default)]
struct Batch {
    commands: u64,
    read: u64,
    written: u64,
}

/// One connection's state while it is served.
struct Conn<'a> {
    server: &'a Arc<Server>,
    client: &'a Arc<ClientEntry>,
    stream: &'a mut ClientStream,
    session: Session,
    decoder: RequestDecoder,
    /// The settings in force, refreshed when the configuration generation changes.
    settings: LiveSettings,
    config_gen: u64,
    /// Bytes read and not yet decoded.
    rbuf: BytesMut,
    /// Encoded replies not yet written.
    wbuf: BytesMut,
    /// The storage's write count when this connection last handed the log to the OS.
    wal_seen: u64,
    /// The receiving end of the client's outbox (pub/sub messages, MONITOR lines,
    /// invalidations).
    inbox: Option<UnboundedReceiver<Pushed>>,
    /// Set once the client subscribes to anything, monitors, turns tracking on or receives a
    /// push: from then on the outbox is drained around each command too.
    push_mode: bool,
    batch: Batch,
    /// The most input held at once (buffer plus a request's arguments taken out of it) since
    /// the query buffer's size was last looked at, and when that was (coarse clock, ms).
    qbuf_peak: usize,
    peak_since_ms: u64,
}

/// Serves the client; `Some` when it sent PSYNC and the socket is to become a replica's stream.
async fn serve(
    server: &Arc<Server>,
    stream: &mut ClientStream,
    client: &Arc<ClientEntry>,
) -> io::Result<Option<PsyncRequest>> {
    Conn::new(server, stream, client).serve().await
}

impl<'a> Conn<'a> {
    fn new(
        server: &'a Arc<Server>,
        stream: &'a mut ClientStream,
        client: &'a Arc<ClientEntry>,
    ) -> Self {
        let settings = server.live_settings();
        let conn = Conn {
            server,
            client,
            stream,
            session: Session {
                user: server.acl.default_user().clone(),
                ..Session::new(client.id, server.db.clone(), server.needs_auth())
            },
            decoder: RequestDecoder::new(settings.limits),
            settings,
            config_gen: server.config_gen(),
            rbuf: BytesMut::with_capacity(READ_CHUNK),
            wbuf: BytesMut::with_capacity(READ_CHUNK),
            wal_seen: server.db.write_count(),
            inbox: client.inbox.lock().take(),
            push_mode: false,
            batch: Batch::default(),
            qbuf_peak: 0,
            peak_since_ms: server.clock_ms(),
        };
        conn.publish_buffers();
        conn
    }

    /// Read, run the batch, flush, until the client goes away, is closed or hands over.
    async fn serve(mut self) -> io::Result<Option<PsyncRequest>> {
        loop {
            let n = self.read_more().await?;
            if n == 0 || self.client.killed.load(Ordering::Acquire) {
                return Ok(None);
            }
            self.batch = Batch {
                read: n as u64,
                ..Batch::default()
            };
            self.note_activity();
            self.refresh_settings();
            // While the batch runs, CLIENT LIST shows the whole batch as the query buffer.
            self.client.qbuf.store(self.rbuf.len(), Ordering::Relaxed);
            self.qbuf_peak = self
                .qbuf_peak
                .max(self.rbuf.len() + self.decoder.pending_bytes());
            let flow = self.run_batch().await?;
            self.server.send_broadcasts();
            if matches!(flow, Flow::Close) {
                // A closing client (QUIT) leaves the registry before its last replies go out, as
                // Redis frees it right after writing them: whoever sees the reply also sees the
                // client gone (CLIENT LIST, a REDIRECT to it now broken).
                self.server.registry.deregister(self.client.id);
            }
            if !self.flush().await? {
                return Ok(None);
            }
            match flow {
                Flow::Go => {}
                Flow::Close => return Ok(None),
                Flow::Handover(req) => return Ok(Some(req)),
            }
            if self.query_buffer_overflows() {
                return Ok(None);
            }
            self.shrink_buffers();
            self.make_room();
            self.publish_buffers();
        }
    }

    /// Keeps at least [`READ_CHUNK`] free in the query buffer for the next read (reclaiming
    /// the space of requests already consumed, which needs no allocation once it is empty).
    fn make_room(&mut self) {
        if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK {
            self.rbuf.reserve(READ_CHUNK);
        }
    }

    /// Waits until the socket is readable; when the client stays idle past [`IDLE_RELEASE`]
    /// with nothing pending, its query buffer is released meanwhile (the next read allocates
    /// a new one). The timer is armed only when input is not already waiting; a pushed frame
    /// that comes meanwhile is written and ends the wait. `Some(n)` when it read `n` bytes on
    /// the way (0 at end of stream). A TLS stream is read under the timer instead (its
    /// socket's readiness says nothing of bytes already decrypted; an abandoned read loses
    /// nothing, they stay in the TLS state).
    async fn wait_idle_input(&mut self) -> io::Result<Option<usize>> {
        if !self.rbuf.is_empty() || self.decoder.is_mid_request() {
            return Ok(None);
        }
        let (idle, pushed) = match self.stream.plain() {
            Some(tcp) => {
                match tcp.try_read_buf(&mut self.rbuf) {
                    Ok(n) => return Ok(Some(n)),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                tokio::select! {
                    biased;
                    waited = tokio::time::timeout(IDLE_RELEASE, tcp.readable()) => (waited.is_err(), None),
                    p = next_pushed(&mut self.inbox) => (false, Some(p)),
                }
            }
            None => {
                tokio::select! {
                    biased;
                    read = tokio::time::timeout(IDLE_RELEASE, self.stream.read_buf(&mut self.rbuf)) => {
                        match read {
                            Ok(read) => return read.map(Some),
                            Err(_) => (true, None),
                        }
                    }
                    p = next_pushed(&mut self.inbox) => (false, Some(p)),
                }
            }
        };
        if idle {
            self.rbuf = BytesMut::new();
            self.qbuf_peak = 0;
            self.publish_buffers();
        }
        if let (Some(p), Some(inbox)) = (pushed, self.inbox.as_mut()) {
            self.push_mode = true;
            let protocol = self.session.protocol;
            write_pushed(
                self.stream,
                &mut self.wbuf,
                inbox,
                p,
                protocol,
                self.server,
                self.client,
            )
            .await?;
        }
        Ok(None)
    }

    /// Waits for more input, writing pushed frames as they come; returns the bytes read, 0 at
    /// end of stream.
    async fn read_more(&mut self) -> io::Result<usize> {
        self.make_room();
        if let Some(n) = self.wait_idle_input().await? {
            return Ok(n);
        }
        self.make_room();
        let Conn {
            stream,
            rbuf,
            wbuf,
            inbox,
            session,
            server,
            client,
            push_mode,
            ..
        } = self;
        let Some(inbox) = inbox.as_mut() else {
            return stream.read_buf(rbuf).await;
        };
        loop {
            tokio::select! {
                biased;
                r = stream.read_buf(rbuf) => return r,
                Some(p) = inbox.recv() => {
                    *push_mode = true;
                    write_pushed(stream, wbuf, inbox, p, session.protocol, server, client).await?;
                }
            }
        }
    }

    /// Runs every complete request in the read buffer, in order. A fast command may keep its
    /// key locks for the thread's next commands (`Session::linger`); they are released before
    /// anything is awaited in the batch, and at the batch's end once kept for a while
    /// (`Db::end_batch`; the worker releases them before it parks).
    async fn run_batch(&mut self) -> io::Result<Flow> {
        let flow = self.run_requests().await;
        self.server.db.end_batch();
        flow
    }

    async fn run_requests(&mut self) -> io::Result<Flow> {
        loop {
            let argv = match self.decoder.decode(&mut self.rbuf) {
                Ok(Some(argv)) => argv,
                Ok(None) => return Ok(Flow::Go),
                Err(e) => {
                    log::verbose!(
                        "Closing client id={} addr={}: {e}",
                        self.client.id,
                        self.client.addr
                    );
                    encode(&e.to_frame(), self.session.protocol, &mut self.wbuf);
                    return Ok(Flow::Close);
                }
            };
            self.batch.commands += 1;
            if self.push_mode {
                // What came before this command goes ahead of its reply.
                if let Some(inbox) = self.inbox.as_mut() {
                    let taken = drain_outbox(inbox, self.session.protocol, &mut self.wbuf, None);
                    self.client.outbox.taken(taken);
                }
            }
            self.session.linger = true;
            let flow = self.run_command(&argv).await;
            self.session.linger = false;
            match flow? {
                Flow::Go => {}
                stop => return Ok(stop),
            }
            if self.wbuf.len() >= WRITE_FLUSH {
                self.server.db.release_lingering();
                if !self.send().await? {
                    return Ok(Flow::Close);
                }
            }
        }
    }

    /// Runs one request and does what its outcome asks.
    async fn run_command(&mut self, argv: &[Bytes]) -> io::Result<Flow> {
        let before = self.session.reply_mode;
        if self.server.pause.active() {
            self.server.db.release_lingering();
            if !self.hold_while_paused(argv).await? {
                return Ok(Flow::Close);
            }
        }
        let api = ClientApi {
            server: self.server,
            client: self.client,
        };
        let session = &mut self.session;
        let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
            strata::defer_write_pace(|| {
                execute(
                    &mut Ctx {
                        session,
                        server: &api,
                    },
                    argv,
                )
            })
        }));
        let Ok((outcome, paced_until)) = ran else {
            self.server.db.release_lingering();
            warning!(
                "Internal error running '{}' for client id={}; closing the connection",
                String::from_utf8_lossy(&argv[0]),
                self.client.id
            );
            encode(
                &Frame::error("ERR internal error"),
                self.session.protocol,
                &mut self.wbuf,
            );
            return Ok(Flow::Close);
        };
        let outcome = match outcome {
            Outcome::Block(req) => {
                self.server.db.release_lingering();
                match self.block(argv, req).await? {
                    Some(reply) => Outcome::Reply(reply),
                    None => return Ok(Flow::Close),
                }
            }
            outcome => outcome,
        };
        let flow = self.after_command(outcome, before);
        if let Some(due) = paced_until {
            if !self.wait_write_pace(due).await? {
                return Ok(Flow::Close);
            }
        }
        Ok(flow)
    }

    /// Waits out the write-back tier's pace the command's writes were taken at
    /// (`strata::defer_write_pace`; issue 16), parked: the replies so far go out first, then
    /// the connection sleeps while the worker serves its other connections, until its turn
    /// comes or writers are no longer paced. False when the client was closed meanwhile.
    async fn wait_write_pace(&mut self, due: std::time::Instant) -> io::Result<bool> {
        self.server.db.release_lingering();
        if !self.send().await? {
            return Ok(false);
        }
        while let Some(nap) = self.server.db.write_pace_nap(due) {
            tokio::time::sleep(nap).await;
        }
        Ok(true)
    }

    /// CLIENT PAUSE holds this request back (`strata_commands::pause::holds`): sends the
    /// replies so far, then waits, shown as blocked, until the pause ends or no longer holds it.
    /// False when the client was closed meanwhile.
    async fn hold_while_paused(&mut self, argv: &[Bytes]) -> io::Result<bool> {
        let mut sent = false;
        loop {
            let now = strata::now_ms();
            let Some(write_only) = self.server.pause.current(now) else {
                break;
            };
            let server = &self.server;
            let declared = |command: &str, arg: &[u8]| match command {
                "evalsha" => server
                    .scripts
                    .get(arg)
                    .and_then(|s| s.shebang.map(|sb| sb.no_writes)),
                _ => std::str::from_utf8(arg)
                    .ok()
                    .and_then(|name| server.functions.find(name))
                    .map(|f| f.read_only()),
            };
            if !strata_commands::pause::holds(&self.session, argv, write_only, &declared) {
                break;
            }
            if !sent {
                if !self.send().await? {
                    return Ok(false);
                }
                sent = true;
                self.client.blocked.store(true, Ordering::Relaxed);
                // CLIENT LIST shows the held command as the client's last, as Redis does.
                if let Some(spec) = strata_commands::registry::lookup(&argv[0]) {
                    self.client.set_cmd(spec.name);
                }
            }
            if self.client.killed.load(Ordering::Acquire) {
                self.client.blocked.store(false, Ordering::Relaxed);
                return Ok(false);
            }
            self.server.pause.wait(now).await;
        }
        if sent {
            self.client.blocked.store(false, Ordering::Relaxed);
        }
        Ok(true)
    }

    /// A blocking command found nothing: sends the replies so far, then waits (no other
    /// command of this client runs meanwhile, as in Redis). `None` when the client went away.
    async fn block(&mut self, argv: &[Bytes], req: BlockRequest) -> io::Result<Option<Frame>> {
        if !self.send().await? {
            return Ok(None);
        }
        let mut read = 0;
        let woken = blocking::wait(
            self.server,
            self.client,
            &self.session,
            argv,
            req,
            self.stream,
            &mut self.rbuf,
            self.settings.query_buffer_limit,
            &mut read,
        )
        .await;
        self.batch.read += read;
        self.note_activity();
        Ok(match woken? {
            Woken::Reply(ending) => {
                // Counted now, as Redis's updateStatsOnUnblock (see `blocking`); blocking
                // commands have no subcommands, so the row is the command's own.
                if let (Some(call), Some(spec)) =
                    (ending.call, strata_commands::registry::lookup(&argv[0]))
                {
                    self.session.stats.ran(spec.name, call.usec, call.failed);
                }
                // CLIENT UNBLOCK ... ERROR's reply counts in errorstats, as in Redis.
                self.session.stats.error(&ending.frame);
                Some(ending.frame)
            }
            Woken::Gone => None,
        })
    }

    /// Encodes what the command answered (after the pushed messages it caused) and says
    /// whether the connection goes on.
    fn after_command(&mut self, outcome: Outcome, before: ReplyMode) -> Flow {
        let (reply, close) = match outcome {
            Outcome::Reply(reply) => (Some(reply), false),
            Outcome::Replies(first, last) => {
                for f in first {
                    self.encode_reply(&f, before);
                }
                (Some(last), false)
            }
            Outcome::ReplyThenClose(reply) => (Some(reply), true),
            Outcome::Close => (None, true),
            Outcome::Silent | Outcome::Block(_) => (None, false),
            Outcome::Handover(req) => return Flow::Handover(req),
        };
        if self.session.subscriptions.total() > 0
            || self.session.monitor
            || self.session.tracking.is_some()
        {
            self.push_mode = true;
        }
        let mut invalidations = Vec::new();
        if self.push_mode && !self.session.monitor {
            if let Some(inbox) = self.inbox.as_mut() {
                // Messages this command published to ourselves (or that arrived meanwhile)
                // go before its reply; invalidations after it.
                let taken = drain_outbox(
                    inbox,
                    self.session.protocol,
                    &mut self.wbuf,
                    Some(&mut invalidations),
                );
                self.client.outbox.taken(taken);
            }
        }
        if let Some(reply) = reply {
            self.encode_reply(&reply, before);
            // The command after CLIENT REPLY SKIP: its reply is dropped, then replies resume.
            if self.session.reply_mode == ReplyMode::Skip && before == ReplyMode::Skip {
                self.session.reply_mode = ReplyMode::On;
            }
        }
        for f in &invalidations {
            encode(f, self.session.protocol, &mut self.wbuf);
        }
        if self.session.monitor {
            // A monitor's own command is fed after its reply, as Redis feeds it.
            if let Some(inbox) = self.inbox.as_mut() {
                let taken = drain_outbox(inbox, self.session.protocol, &mut self.wbuf, None);
                self.client.outbox.taken(taken);
            }
        }
        if close || self.client.close_after_reply.load(Ordering::Relaxed) {
            Flow::Close
        } else {
            Flow::Go
        }
    }

    /// Encodes one reply as CLIENT REPLY allows (`before`: the mode when the command began).
    /// Pushes (pub/sub acknowledgements) are sent even when replies are off, as Redis 7.0 does.
    fn encode_reply(&mut self, reply: &Frame, before: ReplyMode) {
        let send = match self.session.reply_mode {
            ReplyMode::On => true,
            ReplyMode::Skip if before != ReplyMode::Skip => false,
            ReplyMode::Skip | ReplyMode::Off => matches!(reply, Frame::Push(_)),
        };
        if send {
            encode(reply, self.session.protocol, &mut self.wbuf);
        }
    }

    /// Ends a batch: counts it, hands the log to the OS, sends the replies. False when the
    /// client was closed for its output buffer.
    async fn flush(&mut self) -> io::Result<bool> {
        // Counted before the replies go out, so a client that saw its reply also sees it in INFO.
        let b = &self.batch;
        self.server
            .stats
            .add_batch(b.commands, b.read, b.written + self.wbuf.len() as u64);
        if !self.session.stats.is_empty() {
            self.server.command_stats.absorb(&mut self.session.stats);
        }
        // Only this connection writes its peak: no read-modify-write needed.
        if self.wbuf.len() > self.client.rbp.load(Ordering::Relaxed) {
            self.client.rbp.store(self.wbuf.len(), Ordering::Relaxed);
        }
        self.send().await
    }

    /// Writes the replies encoded so far, after the writes they acknowledge reach the OS (one
    /// write call for all of them). False when the client was closed: for its output buffer, or
    /// because the log could not be written.
    async fn send(&mut self) -> io::Result<bool> {
        if self.server.db.write_count() != self.wal_seen {
            // Let the other connections this worker has ready run their batches first: their
            // records then reach the OS in the same write call as ours (as Redis writes its AOF
            // once per turn of its event loop), and theirs find nothing left to write.
            tokio::task::yield_now().await;
        }
        if !wal_to_os(self.server, &mut self.wal_seen) {
            // The replies would acknowledge writes that may not be in the log (or, under
            // `appendfsync always`, on disk): the client is closed without them.
            return Ok(false);
        }
        if self.server.db.sync_policy() == SyncPolicy::Always
            && !self.server.wal_sync.synced_through(self.wal_seen).await
        {
            return Ok(false);
        }
        if self.wbuf.is_empty() {
            return Ok(true);
        }
        if !send_replies(
            self.stream,
            &self.wbuf,
            self.settings.output_limit,
            self.client,
        )
        .await?
        {
            return Ok(false);
        }
        self.batch.written += self.wbuf.len() as u64;
        self.wbuf.clear();
        Ok(true)
    }

    /// Records that the client did something (CLIENT LIST `idle`, the idle timeout).
    fn note_activity(&self) {
        self.client
            .last_interaction_ms
            .store(self.server.clock_ms(), Ordering::Relaxed);
    }

    /// Picks up a configuration change (one atomic load when there is none).
    fn refresh_settings(&mut self) {
        let current = self.server.config_gen();
        if current != self.config_gen {
            self.config_gen = current;
            self.settings = self.server.live_settings();
            self.decoder.set_limits(self.settings.limits);
        }
    }

    /// Whether the unparsed input is over `client-query-buffer-limit` (then the client is
    /// closed and logged). Arguments of a request still being read count too: they left the
    /// buffer but are held until the request completes.
    fn query_buffer_overflows(&self) -> bool {
        let pending = self.rbuf.len() + self.decoder.pending_bytes();
        if pending <= self.settings.query_buffer_limit {
            return false;
        }
        warning!(
            "Closing client that reached max query buffer length: id={} addr={} qbuf={}",
            self.client.id,
            self.client.addr,
            pending
        );
        true
    }

    /// Releases buffers grown large once they are empty, so an idle client holds little memory,
    /// and sizes the query buffer as Redis's client cron does: a buffer that held a large
    /// request keeps room for another, until a look (every [`PEAK_WINDOW_MS`]) finds it more
    /// than twice the largest input held since the last look; it is then cut down to that.
    fn shrink_buffers(&mut self) {
        if self.rbuf.is_empty() && self.rbuf.capacity() > SHRINK_ABOVE {
            self.rbuf = BytesMut::with_capacity(READ_CHUNK);
        }
        let peak = self.qbuf_peak;
        if peak > RESIZE_THRESHOLD && peak <= SHRINK_ABOVE && self.rbuf.capacity() < peak {
            self.rbuf.reserve(peak - self.rbuf.len());
        }
        let now = self.server.clock_ms();
        if now.saturating_sub(self.peak_since_ms) >= PEAK_WINDOW_MS {
            let cap = self.rbuf.capacity();
            let len = self.rbuf.len();
            if cap - len > 4096 && cap > RESIZE_THRESHOLD && cap / 2 > peak {
                let mut smaller = BytesMut::with_capacity(len.max(peak));
                smaller.extend_from_slice(&self.rbuf);
                self.rbuf = smaller;
            }
            self.qbuf_peak = len + self.decoder.pending_bytes();
            self.peak_since_ms = now;
        }
        if self.wbuf.capacity() > SHRINK_ABOVE {
            self.wbuf = BytesMut::with_capacity(READ_CHUNK);
            self.client.rbp.store(0, Ordering::Relaxed);
        }
    }

    /// Shows the buffers' sizes and the transaction's length in CLIENT LIST (relaxed stores,
    /// once per batch).
    fn publish_buffers(&self) {
        let c = self.client;
        c.set_multi(&self.session);
        c.rbs.store(self.wbuf.capacity(), Ordering::Relaxed);
        c.qbuf.store(self.rbuf.len(), Ordering::Relaxed);
        c.qbuf_free
            .store(self.rbuf.capacity() - self.rbuf.len(), Ordering::Relaxed);
        c.buf_mem.store(
            self.rbuf.capacity() + self.wbuf.capacity(),
            Ordering::Relaxed,
        );
    }
}

/// Writes a batch of replies under `client-output-buffer-limit` (normal class: `[hard, soft,
/// soft seconds]`, 0 = none). A batch over the hard limit is not sent at all, and one over the
/// soft limit that the client has not taken within the soft seconds stops being sent; either
/// way the client is closed and logged (returns false). Strata reads no more requests from a
/// client while its replies are pending, so without limits a client that never reads holds one
/// batch at most.
async fn send_replies(
    stream: &mut ClientStream,
    buf: &[u8],
    [hard, soft, soft_secs]: [u64; 3],
    client: &ClientEntry,
) -> io::Result<bool> {
    let over_limits = || {
        warning!(
            "Client id={} addr={} closed for overcoming of output buffer limits.",
            client.id,
            client.addr
        );
        Ok(false)
    };
    if hard > 0 && buf.len() as u64 > hard {
        return over_limits();
    }
    if soft == 0 || buf.len() as u64 <= soft {
        stream.send_all(buf).await?;
        return Ok(true);
    }
    // Strata stops reading while replies are pending, so what Redis would accumulate shows up
    // here as a batch the client does not take: it gets the soft seconds to take all of it.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(soft_secs);
    let mut sent = 0;
    while sent < buf.len() {
        match tokio::time::timeout_at(deadline, stream.write(&buf[sent..])).await {
            Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => sent += n,
            Ok(Err(e)) => return Err(e),
            Err(_) => return over_limits(),
        }
    }
    match tokio::time::timeout_at(deadline, stream.flush()).await {
        Ok(flushed) => flushed?,
        Err(_) => return over_limits(),
    }
    Ok(true)
}

/// Hands the write-ahead-log records buffered since this connection last looked to the operating
/// system, if anything was written meanwhile (by anyone). Called before replies leave, so an
/// acknowledged write survives a crash of the process (`appendfsync always` then waits for the
/// log to be synced through it, see `wal_sync.rs`). False if that failed.
fn wal_to_os(server: &Server, seen: &mut u64) -> bool {
    let now = server.db.write_count();
    if now != *seen {
        if let Err(e) = server.db.flush_wal_buffer() {
            warning!("Writing the write-ahead log failed: {e}");
            return false;
        }
        *seen = now;
    }
    true
}
