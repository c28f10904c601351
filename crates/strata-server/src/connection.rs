//! One client connection: read into a buffer, decode every complete request in it, execute them
//! in order on this worker (commands call synchronous RocksDB: that is the design), append the
//! encoded replies to one output buffer and write it with one call. This is the hot path: no lock
//! and no shared-counter update per command; settings are cached and refreshed when the server's
//! configuration generation changes; statistics are added once per read batch. Owns the socket;
//! knows nothing of command semantics beyond the `Session` flags (CLIENT REPLY, QUIT).
//!
//! A client that has ever subscribed (pub/sub) also drains its outbox: while waiting for input
//! it waits for pushed messages too and writes them as they come, and after each command it
//! moves the messages queued meanwhile ahead of that command's reply (as Redis's output buffer
//! orders them). Other clients never look at their outbox.

use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;
use strata_commands::{execute, Ctx, PsyncRequest, ReplyMode, Session};
use strata_resp::{encode, Frame, Protocol, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::blocking::{self, Woken};
use crate::log::{self, warning};
use crate::pubsub::frame_size;
use crate::registry::ClientEntry;
use crate::server::{ClientApi, Server};

/// Read buffer growth step (Redis reads 16 KiB at a time).
const READ_CHUNK: usize = 16 * 1024;
/// Replies are written early once this much has accumulated within one batch.
const WRITE_FLUSH: usize = 256 * 1024;
/// Buffers larger than this are released once empty, so an idle client holds little memory.
const SHRINK_ABOVE: usize = 1024 * 1024;

/// Serves one registered client until it disconnects, is killed, quits or misbehaves, then
/// removes it from the registry (before the socket is closed, see `registry`).
pub async fn run(server: Arc<Server>, mut stream: TcpStream, client: Arc<ClientEntry>) {
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
    }
}

/// Moves every frame queued in the outbox into `wbuf`, encoded in `protocol`; returns how many
/// queued bytes that accounted for (to hand back with `Outbox::taken` once written).
fn drain_outbox(
    inbox: &mut UnboundedReceiver<Frame>,
    protocol: Protocol,
    wbuf: &mut BytesMut,
) -> usize {
    let mut taken = 0;
    while let Ok(f) = inbox.try_recv() {
        taken += frame_size(&f);
        encode(&f, protocol, wbuf);
        if wbuf.len() >= WRITE_FLUSH {
            break;
        }
    }
    taken
}

/// Serves the client; `Some` when it sent PSYNC and the socket is to become a replica's stream.
async fn serve(
    server: &Arc<Server>,
    stream: &mut TcpStream,
    client: &Arc<ClientEntry>,
) -> io::Result<Option<PsyncRequest>> {
    let api = ClientApi { server, client };
    let mut session = Session::new(client.id, server.db.clone(), server.needs_auth());
    let mut gen = server.config_gen();
    let mut settings = server.live_settings();
    let mut decoder = RequestDecoder::new(settings.limits);
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut wbuf = BytesMut::with_capacity(READ_CHUNK);
    client.qbuf_free.store(rbuf.capacity(), Ordering::Relaxed);
    client
        .buf_mem
        .store(rbuf.capacity() + wbuf.capacity(), Ordering::Relaxed);

    let mut wal_seen = server.db.write_count();
    let mut inbox = client
        .inbox
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    // Set once the client subscribes to anything: from then on the outbox is drained.
    let mut pubsub_mode = false;
    loop {
        if rbuf.capacity() - rbuf.len() < READ_CHUNK / 2 {
            rbuf.reserve(READ_CHUNK);
        }
        let mut n = match inbox.as_mut() {
            Some(inbox) if pubsub_mode => loop {
                tokio::select! {
                    biased;
                    r = stream.read_buf(&mut rbuf) => break r?,
                    Some(f) = inbox.recv() => {
                        let mut taken = frame_size(&f);
                        encode(&f, session.protocol, &mut wbuf);
                        taken += drain_outbox(inbox, session.protocol, &mut wbuf);
                        stream.write_all(&wbuf).await?;
                        server.stats.add_batch(0, 0, wbuf.len() as u64);
                        wbuf.clear();
                        client.outbox.taken(taken);
                        if wbuf.capacity() > SHRINK_ABOVE {
                            wbuf = BytesMut::with_capacity(READ_CHUNK);
                        }
                    }
                }
            },
            _ => stream.read_buf(&mut rbuf).await?,
        };
        if n == 0 || client.killed.load(Ordering::Acquire) {
            return Ok(None);
        }
        client
            .last_interaction_ms
            .store(server.clock_ms(), Ordering::Relaxed);
        let current = server.config_gen();
        if current != gen {
            gen = current;
            settings = server.live_settings();
            decoder.set_limits(settings.limits);
        }

        let mut commands = 0u64;
        let mut written = 0u64;
        let mut close = false;
        let mut handover = None;
        loop {
            match decoder.decode(&mut rbuf) {
                Ok(Some(argv)) => {
                    commands += 1;
                    let before = session.reply_mode;
                    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        execute(
                            &mut Ctx {
                                session: &mut session,
                                server: &api,
                            },
                            &argv,
                        )
                    }));
                    let Ok(mut reply) = outcome else {
                        warning!(
                            "Internal error running '{}' for client id={}; closing the connection",
                            String::from_utf8_lossy(&argv[0]),
                            client.id
                        );
                        encode(
                            &Frame::error("ERR internal error"),
                            session.protocol,
                            &mut wbuf,
                        );
                        close = true;
                        break;
                    };
                    if let Some(req) = session.blocked.take() {
                        // A blocking command found nothing: send the replies so far, then wait
                        // (no other command of this client runs meanwhile, as in Redis).
                        if !wbuf.is_empty() {
                            wal_to_os(server, &mut wal_seen);
                            if !send_replies(stream, &wbuf, settings.output_limit, client).await? {
                                return Ok(None);
                            }
                            written += wbuf.len() as u64;
                            wbuf.clear();
                        }
                        let mut read = 0;
                        let woken = blocking::wait(
                            server,
                            client,
                            &session,
                            &argv,
                            req,
                            stream,
                            &mut rbuf,
                            settings.query_buffer_limit,
                            &mut read,
                        )
                        .await;
                        n += read as usize;
                        client
                            .last_interaction_ms
                            .store(server.clock_ms(), Ordering::Relaxed);
                        match woken? {
                            Woken::Reply(frame) => reply = frame,
                            Woken::Gone => {
                                close = true;
                                break;
                            }
                        }
                    }
                    if !session.extra_replies.is_empty() {
                        for f in std::mem::take(&mut session.extra_replies) {
                            if session.reply_mode == ReplyMode::On {
                                encode(&f, session.protocol, &mut wbuf);
                            }
                        }
                    }
                    if session.subscriptions.total() > 0 {
                        pubsub_mode = true;
                    }
                    if pubsub_mode {
                        if let Some(inbox) = inbox.as_mut() {
                            // Messages this command published to ourselves (or that arrived
                            // meanwhile) go before its reply.
                            let taken = drain_outbox(inbox, session.protocol, &mut wbuf);
                            client.outbox.taken(taken);
                        }
                    }
                    if session.suppress_reply {
                        session.suppress_reply = false;
                        if let Some(req) = session.psync.take() {
                            // PSYNC: the connection becomes a replica's stream.
                            handover = Some(req);
                            close = true;
                            break;
                        }
                        continue;
                    }
                    match session.reply_mode {
                        ReplyMode::On => encode(&reply, session.protocol, &mut wbuf),
                        // The command after CLIENT REPLY SKIP: its reply is dropped, then replies resume.
                        ReplyMode::Skip if before == ReplyMode::Skip => {
                            session.reply_mode = ReplyMode::On
                        }
                        ReplyMode::Skip | ReplyMode::Off => {}
                    }
                    if session.close_after_reply || client.close_after_reply.load(Ordering::Relaxed)
                    {
                        close = true;
                        break;
                    }
                    if wbuf.len() >= WRITE_FLUSH {
                        wal_to_os(server, &mut wal_seen);
                        if !send_replies(stream, &wbuf, settings.output_limit, client).await? {
                            return Ok(None);
                        }
                        written += wbuf.len() as u64;
                        wbuf.clear();
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    log::verbose!("Closing client id={} addr={}: {e}", client.id, client.addr);
                    encode(&e.to_frame(), session.protocol, &mut wbuf);
                    close = true;
                    break;
                }
            }
        }
        // Counted before the replies go out, so a client that saw its reply also sees it in INFO.
        server
            .stats
            .add_batch(commands, n as u64, written + wbuf.len() as u64);
        // The batch's writes reach the OS (one write call for all of them) before any reply does.
        wal_to_os(server, &mut wal_seen);
        if !wbuf.is_empty() {
            if !send_replies(stream, &wbuf, settings.output_limit, client).await? {
                return Ok(None);
            }
            wbuf.clear();
        }

        if close {
            return Ok(handover);
        }
        // Arguments of a request still being read count too: they left the buffer but are
        // held until the request completes.
        let pending = rbuf.len() + decoder.pending_bytes();
        if pending > settings.query_buffer_limit {
            warning!(
                "Closing client that reached max query buffer length: id={} addr={} qbuf={}",
                client.id,
                client.addr,
                pending
            );
            return Ok(None);
        }
        if rbuf.is_empty() && rbuf.capacity() > SHRINK_ABOVE {
            rbuf = BytesMut::with_capacity(READ_CHUNK);
        }
        if wbuf.capacity() > SHRINK_ABOVE {
            wbuf = BytesMut::with_capacity(READ_CHUNK);
        }
        client.qbuf.store(rbuf.len(), Ordering::Relaxed);
        client
            .qbuf_free
            .store(rbuf.capacity() - rbuf.len(), Ordering::Relaxed);
        client
            .buf_mem
            .store(rbuf.capacity() + wbuf.capacity(), Ordering::Relaxed);
    }
}

/// Writes a batch of replies under `client-output-buffer-limit` (normal class: `[hard, soft,
/// soft seconds]`, 0 = none). A batch over the hard limit is not sent at all, and one over the
/// soft limit that the client has not taken within the soft seconds stops being sent; either
/// way the client is closed and logged (returns false). Strata reads no more requests from a
/// client while its replies are pending, so without limits a client that never reads holds one
/// batch at most.
async fn send_replies(
    stream: &mut TcpStream,
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
        stream.write_all(buf).await?;
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
    Ok(true)
}

/// Hands the write-ahead-log records buffered since this connection last looked to the operating
/// system, if anything was written meanwhile (by anyone). Called before replies leave, so an
/// acknowledged write survives a crash of the process.
fn wal_to_os(server: &Server, seen: &mut u64) {
    let now = server.db.write_count();
    if now != *seen {
        *seen = now;
        if let Err(e) = server.db.flush_wal_buffer() {
            warning!("Writing the write-ahead log failed: {e}");
        }
    }
}
