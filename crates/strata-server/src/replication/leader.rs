//! The leader's side of one replica: after PSYNC, a thread of its own answers `+FULLRESYNC`
//! (and streams a consistent copy of the data) or `+CONTINUE`, then sends every later
//! log batch (RocksDB's write-ahead log, or the write-back tier's redo log), PUBLISHed messages
//! and a heartbeat a second; a second thread reads the
//! replica's acknowledgements. The log on disk is the backlog: a slow replica costs the leader
//! no memory (only the published messages queue, bounded), a stalled one is dropped after
//! `repl-timeout`, and one that fell behind what the log keeps gets a full copy next time.

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use strata::replication::{LogTail, WalRead};
use strata_commands::{ChannelKind, PsyncRequest};

use super::socket::Socket;
use super::wire;
use crate::log::{self, notice, warning};
use crate::server::Server;

/// Bytes of published messages a replica may have queued before it is dropped.
const PUBLISH_QUEUE_LIMIT: usize = 64 << 20;
/// A copy frame is sent once it holds this much.
const COPY_CHUNK: usize = 1 << 20;
/// Log batches read per round.
const WAL_READ_BYTES: usize = 16 << 20;

/// A PUBLISH waiting to be sent: kind tag, channel, message.
type Published = (u8, Bytes, Bytes);

/// Where an attached replica is (INFO's `state=`).
pub const WAIT_BGSAVE: u8 = 0;
/// Receiving the copy.
pub const SEND_BULK: u8 = 1;
/// Following the log.
pub const ONLINE: u8 = 2;

/// One replica attached to this server.
pub struct Attached {
    /// The replica's address as this server sees it.
    pub ip: String,
    /// The port it listens on (REPLCONF listening-port).
    pub port: u16,
    /// WAIT_BGSAVE, SEND_BULK or ONLINE.
    pub state: AtomicU8,
    /// The last sequence number it acknowledged.
    pub ack: AtomicU64,
    /// When it last acknowledged (Unix ms).
    pub last_ack_ms: AtomicU64,
    /// Set to end the stream (the replica went away, or this server drops it).
    pub closed: AtomicBool,
    publishes: Mutex<(VecDeque<Published>, usize)>,
    socket: Socket,
}

impl Attached {
    /// INFO's name of the state.
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Ordering::Relaxed) {
            WAIT_BGSAVE => "wait_bgsave",
            SEND_BULK => "send_bulk",
            _ => "online",
        }
    }

    /// Ends the stream now (its threads see the closed socket).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _ = self.socket.shutdown();
    }

    /// Queues a PUBLISH for the replica; drops the replica when it has too much queued.
    pub fn queue_publish(&self, kind: ChannelKind, channel: &Bytes, message: &Bytes) {
        let tag = match kind {
            ChannelKind::Shard => 2,
            _ => 0,
        };
        let mut q = self.publishes.lock();
        q.1 += channel.len() + message.len();
        if q.1 > PUBLISH_QUEUE_LIMIT {
            drop(q);
            warning!(
                "Replica {}:{} closed: too many published messages queued",
                self.ip,
                self.port
            );
            self.close();
            return;
        }
        q.0.push_back((tag, channel.clone(), message.clone()));
    }

    fn take_publishes(&self) -> VecDeque<Published> {
        let mut q = self.publishes.lock();
        q.1 = 0;
        std::mem::take(&mut q.0)
    }
}

/// Takes over a connection that sent PSYNC: registers the replica and starts its threads.
pub fn attach(server: Arc<Server>, stream: Socket, ip: String, req: PsyncRequest) {
    let Ok(socket) = stream.try_clone() else {
        return;
    };
    let timeout = Duration::from_secs(server.config().repl_timeout.max(1));
    let _ = stream.make_blocking(timeout);
    let replica = Arc::new(Attached {
        ip,
        port: req.listening_port,
        state: AtomicU8::new(WAIT_BGSAVE),
        ack: AtomicU64::new(0),
        last_ack_ms: AtomicU64::new(strata::now_ms()),
        closed: AtomicBool::new(false),
        publishes: Mutex::new((VecDeque::new(), 0)),
        socket,
    });
    server.replication.add_attached(replica.clone());
    let spawned = std::thread::Builder::new()
        .name("strata-repl-send".into())
        .spawn(move || {
            let name = format!("{}:{}", replica.ip, replica.port);
            match feed(&server, &replica, stream, &req) {
                Ok(()) => notice!("Connection with replica {name} lost."),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    warning!("Disconnecting timedout replica {name}: it took nothing within repl-timeout")
                }
                Err(e) => warning!("Connection with replica {name} lost: {e}"),
            }
            replica.close();
            server.replication.remove_attached(&replica);
        });
    if let Err(e) = spawned {
        warning!("Can't start a replication thread: {e}");
    }
}

/// The whole life of one replica's stream.
fn feed(
    server: &Arc<Server>,
    replica: &Arc<Attached>,
    stream: Socket,
    req: &PsyncRequest,
) -> io::Result<()> {
    let db = &server.db;
    let repl = &server.replication;
    let timeout = Duration::from_secs(server.config().repl_timeout.max(1));
    let mut out = BufWriter::with_capacity(256 * 1024, stream.try_clone()?);
    if repl.is_loading() {
        out.write_all(b"-LOADING Strata is loading the dataset from its own leader\r\n")?;
        out.flush()?;
        return Ok(());
    }
    let own = repl.own_replid();
    let ids = db.family_ids();
    let ids_bytes: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
    // A partial resync needs the same history and the log still reaching back to the offset.
    let partial = req.replid == own
        && req.offset > 0
        && matches!(db.wal_read(req.offset as u64, 1), Ok(WalRead::Batches(_)));
    let mut next = if partial {
        repl.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
        notice!(
            "Partial resynchronization request from {}:{} accepted, continuing from offset {}.",
            replica.ip,
            replica.port,
            req.offset
        );
        out.write_all(format!("+CONTINUE {own}\r\n").as_bytes())?;
        wire::write_frame(&mut out, wire::FAMILY_IDS, &[&ids_bytes])?;
        req.offset as u64
    } else {
        if req.replid != "?" {
            repl.sync_partial_err.fetch_add(1, Ordering::Relaxed);
        }
        repl.sync_full.fetch_add(1, Ordering::Relaxed);
        notice!(
            "Replica {}:{} asks for synchronization: starting a full copy",
            replica.ip,
            replica.port
        );
        let started = Instant::now();
        let mut chunk = Vec::with_capacity(COPY_CHUNK + 4096);
        let mut count = 0u64;
        let cell = std::cell::RefCell::new(out);
        let seq = db
            .sync_snapshot::<Box<dyn std::error::Error + Send + Sync>>(
                |seq| {
                    cell.borrow_mut()
                        .write_all(format!("+FULLRESYNC {own} {seq}\r\n").as_bytes())?;
                    wire::write_frame(&mut *cell.borrow_mut(), wire::FAMILY_IDS, &[&ids_bytes])?;
                    replica.state.store(SEND_BULK, Ordering::Relaxed);
                    Ok(())
                },
                |family, key, value| {
                    if replica.closed.load(Ordering::Acquire) {
                        return Err("replica closed during the copy".into());
                    }
                    wire::push_record(&mut chunk, family, key, value);
                    count += 1;
                    if chunk.len() >= COPY_CHUNK {
                        wire::write_frame(&mut *cell.borrow_mut(), wire::COPY, &[&chunk])?;
                        chunk.clear();
                    }
                    Ok(())
                },
            )
            .map_err(io::Error::other)?;
        out = cell.into_inner();
        if !chunk.is_empty() {
            wire::write_frame(&mut out, wire::COPY, &[&chunk])?;
        }
        wire::write_frame(
            &mut out,
            wire::COPY_END,
            &[&seq.to_le_bytes(), &count.to_le_bytes()],
        )?;
        notice!(
            "Synchronization with replica {}:{} succeeded: {count} records in {:.1}s",
            replica.ip,
            replica.port,
            started.elapsed().as_secs_f64()
        );
        seq + 1
    };
    out.flush()?;
    replica.state.store(ONLINE, Ordering::Relaxed);
    replica.ack.store(next - 1, Ordering::Relaxed);
    replica
        .last_ack_ms
        .store(strata::now_ms(), Ordering::Relaxed);
    spawn_ack_reader(replica.clone(), stream)?;

    let mut last_beat = Instant::now();
    let mut failures = 0u32;
    let mut tail: Option<LogTail> = None;
    let mut tail_retry: Option<Instant> = None;
    while !replica.closed.load(Ordering::Acquire) {
        let mut sent = false;
        for (tag, channel, message) in replica.take_publishes() {
            let len = (channel.len() as u32).to_le_bytes();
            wire::write_frame(&mut out, wire::PUBLISH, &[&[tag], &len, &channel, &message])?;
            sent = true;
        }
        let read_started = Instant::now();
        let mut caught_up = true;
        // The log is followed with a LogTail (reads only what was appended); a fresh read
        // (RocksDB's own iterator, or a new redo reader) is the fallback when the tail cannot continue (it is retried a second later).
        if tail.is_none() && tail_retry.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            match db.wal_tail(next) {
                Ok(t) => tail = Some(t),
                Err(e) => {
                    log::verbose!("Following the log with fresh reads: {e}");
                    tail_retry = Some(Instant::now());
                }
            }
        }
        let mut read = match tail.as_mut().map(|t| t.read(db.last_seq(), WAL_READ_BYTES)) {
            Some(Ok(WalRead::Batches(b))) => Ok(WalRead::Batches(b)),
            Some(other) => {
                if let Err(e) = &other {
                    log::verbose!("Following the log with fresh reads: {e}");
                }
                tail = None;
                tail_retry = Some(Instant::now());
                db.wal_read(next, WAL_READ_BYTES)
            }
            None => db.wal_read(next, WAL_READ_BYTES),
        };
        let slow_read = tail.is_none();
        match &mut read {
            Ok(WalRead::Batches(batches)) => {
                failures = 0;
                caught_up = batches.iter().map(|b| b.data.len()).sum::<usize>() < WAL_READ_BYTES;
                for b in batches.iter() {
                    wire::write_frame(&mut out, wire::BATCH, &[&b.seq.to_le_bytes(), &b.data])?;
                    next = b.seq + b.count.max(1);
                    sent = true;
                }
            }
            Ok(WalRead::Gap) => {
                return Err(io::Error::other(format!(
                    "the log no longer holds offset {next} (repl-backlog-size / repl-backlog-ttl); it will get a full copy"
                )));
            }
            Err(e) => {
                // A log file moving to the archive can make one read fail; a lasting failure
                // ends the stream (the replica reconnects).
                failures += 1;
                if failures > 200 {
                    return Err(io::Error::other(format!("reading the log: {e}")));
                }
            }
        }
        if last_beat.elapsed() >= Duration::from_secs(1) {
            last_beat = Instant::now();
            let silent_ms =
                strata::now_ms().saturating_sub(replica.last_ack_ms.load(Ordering::Relaxed));
            if silent_ms > timeout.as_millis() as u64 {
                return Err(io::Error::other(
                    "timeout: no acknowledgement within repl-timeout",
                ));
            }
            wire::write_frame(&mut out, wire::HEARTBEAT, &[&db.last_seq().to_le_bytes()])?;
            sent = true;
        }
        if sent {
            out.flush()?;
        }
        if caught_up {
            // RocksDB's iterator finds an offset by reading its log file from the start, so
            // each of its reads costs time in proportion to the live log: then reading at most
            // a third of the time bounds that cost while batches pile up for the next read.
            let spent = read_started.elapsed();
            let pause = if slow_read { spent * 2 } else { Duration::ZERO };
            std::thread::sleep(pause.max(Duration::from_micros(500)));
        }
    }
    Ok(())
}

/// Reads the replica's acknowledgements until it goes away.
fn spawn_ack_reader(replica: Arc<Attached>, stream: Socket) -> io::Result<()> {
    std::thread::Builder::new()
        .name("strata-repl-ack".into())
        .spawn(move || {
            let mut input = io::BufReader::new(stream);
            while let Ok((kind, payload)) = wire::read_frame(&mut input) {
                if kind == wire::ACK {
                    if let Ok(offset) = wire::u64_at(&payload, 0) {
                        replica.ack.store(offset, Ordering::Release);
                        replica
                            .last_ack_ms
                            .store(strata::now_ms(), Ordering::Relaxed);
                    }
                }
            }
            replica.close();
        })?;
    Ok(())
}
