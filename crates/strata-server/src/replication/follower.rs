//! The replica's side: one thread per REPLICAOF that connects to the leader, authenticates,
//! asks for a partial resync from where this directory's data stops (or a full copy), loads the
//! copy, then applies the leader's log batches in order, acknowledging as it goes, and
//! reconnects after any failure until REPLICAOF points elsewhere. Each applied batch is written
//! together with the progress record, so a restart resumes exactly where the data stops. Under
//! `tls-replication yes` the link is TLS (the leader's TLS port, see `socket`). A leader that
//! turns out to be a Redis (it sends an RDB file, not Strata's family map) is followed by
//! `from_redis` on the same connection.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;

use strata::replication::REPLICATION_STATE;
use strata_commands::ChannelKind;

use super::from_redis;
use super::socket;
use super::wire;
use crate::log::{notice, warning};
use crate::server::Server;

/// Batches already received are applied together, up to this many bytes per write.
const COALESCE_BYTES: usize = 4 << 20;

/// Not connected (ROLE's `connect`).
pub const CONNECT: u8 = 0;
/// Connecting and shaking hands (`connecting`).
pub const CONNECTING: u8 = 1;
/// Receiving the copy (`sync`).
pub const SYNC: u8 = 2;
/// Following the log (`connected`).
pub const CONNECTED: u8 = 3;

/// The link to this server's leader.
pub struct Link {
    /// The leader's host as REPLICAOF gave it.
    pub host: String,
    /// The leader's port.
    pub port: u16,
    /// CONNECT, CONNECTING, SYNC or CONNECTED.
    pub state: AtomicU8,
    stop: AtomicBool,
    socket: Mutex<Option<TcpStream>>,
    /// Held while a batch is applied, and by REPLICAOF while it stops the link: nothing of the
    /// old leader is applied once REPLICAOF has answered.
    apply_guard: Mutex<()>,
    /// The last sequence number of the leader applied here (0: none).
    pub applied: AtomicU64,
    /// The leader's replication id this data follows.
    pub leader_replid: Mutex<String>,
    /// The leader's last sequence number, from its heartbeat.
    pub leader_offset: AtomicU64,
    /// When anything last arrived from the leader (Unix ms).
    pub last_io_ms: AtomicU64,
    /// Since when the link is down (Unix ms; 0 while up).
    pub down_since_ms: AtomicU64,
    /// Whether a copy is being loaded now.
    pub loading: AtomicBool,
    /// When the current copy started and how many bytes of it have arrived.
    pub sync_started_ms: AtomicU64,
    /// Bytes of the current copy received so far.
    pub sync_bytes: AtomicU64,
    /// Bytes the current copy has in all, as Redis's `repl_transfer_size`: -1 until a Redis
    /// leader's `$<length>` line, its length then, 0 when it is not told (a `$EOF:` transfer,
    /// a Strata leader's copy).
    pub sync_total: AtomicI64,
    /// The leader is a Redis: `applied` and `leader_replid` are its offset and id.
    pub from_redis: AtomicBool,
    /// The database a Redis leader's commands go to (its last SELECT).
    pub stream_db: AtomicU32,
    /// Commands of a Redis leader's stream this server does not know (skipped, logged).
    pub skipped: AtomicU64,
    /// Commands of a Redis leader's stream that answered an error here.
    pub failed: AtomicU64,
    /// Why replication stopped at a command of a Redis leader's stream this server cannot
    /// apply: the link is not made again (it would stop at the same command) until the next
    /// REPLICAOF, so the data never silently diverges from the leader's.
    pub halted: parking_lot::Mutex<Option<String>>,
}

/// The progress record: `[1][leader replid, 40 bytes][last applied sequence number u64 LE]`.
pub fn encode_state(replid: &str, applied: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(49);
    v.push(1);
    v.extend_from_slice(&replid.as_bytes()[..replid.len().min(40)]);
    v.resize(41, b'0');
    v.extend_from_slice(&applied.to_le_bytes());
    v
}

/// Where a Redis leader's stream stands: its history, the offset processed, and the database
/// its commands go to (Redis sends SELECT only when that changes, even across a +CONTINUE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisPosition {
    /// The leader's replication id.
    pub replid: String,
    /// The leader's offset processed.
    pub offset: u64,
    /// The database the stream's commands go to.
    pub db: u32,
}

/// The progress record of a Redis leader's stream: `[2][leader replid, 40 bytes][processed
/// offset u64 LE][stream database u32 LE][1: written at a clean shutdown]`. Only a clean one may
/// be resumed: while running, writes are not recorded with the offset.
pub fn encode_redis_state(at: &RedisPosition, clean: bool) -> Vec<u8> {
    let mut v = Vec::with_capacity(54);
    v.push(2);
    v.extend_from_slice(&at.replid.as_bytes()[..at.replid.len().min(40)]);
    v.resize(41, b'0');
    v.extend_from_slice(&at.offset.to_le_bytes());
    v.extend_from_slice(&at.db.to_le_bytes());
    v.push(u8::from(clean));
    v
}

/// Reads a clean progress record of a Redis leader's stream (see [`encode_redis_state`]).
pub fn decode_redis_state(raw: &[u8]) -> Option<RedisPosition> {
    if raw.len() != 54 || raw[0] != 2 || raw[53] != 1 {
        return None;
    }
    Some(RedisPosition {
        replid: std::str::from_utf8(&raw[1..41]).ok()?.to_string(),
        offset: u64::from_le_bytes(raw[41..49].try_into().ok()?),
        db: u32::from_le_bytes(raw[49..53].try_into().ok()?),
    })
}

/// Reads a progress record.
pub fn decode_state(raw: &[u8]) -> Option<(String, u64)> {
    if raw.len() != 49 || raw[0] != 1 {
        return None;
    }
    let id = std::str::from_utf8(&raw[1..41]).ok()?.to_string();
    let applied = u64::from_le_bytes(raw[41..49].try_into().ok()?);
    Some((id, applied))
}

impl Link {
    /// A link to `host:port`, resuming from the progress record of the data if there is one
    /// (a Strata leader's), or from where a Redis leader's stream stopped at the last clean
    /// shutdown if nothing was written since (see [`super::Replication::take_redis_resume`]).
    pub fn new(server: &Server, host: String, port: u16) -> Link {
        let redis = server.replication.take_redis_resume(server.db.last_seq());
        let from_redis = redis.is_some();
        let stream_db = redis.as_ref().map_or(0, |at| at.db);
        let (replid, applied) = redis
            .map(|at| (at.replid, at.offset))
            .or_else(|| {
                server
                    .db
                    .aux_get(REPLICATION_STATE)
                    .ok()
                    .flatten()
                    .and_then(|raw| decode_state(&raw))
            })
            .unwrap_or_else(|| ("?".to_string(), 0));
        Link {
            host,
            port,
            state: AtomicU8::new(CONNECT),
            stop: AtomicBool::new(false),
            socket: Mutex::new(None),
            apply_guard: Mutex::new(()),
            applied: AtomicU64::new(applied),
            leader_replid: Mutex::new(replid),
            leader_offset: AtomicU64::new(0),
            last_io_ms: AtomicU64::new(0),
            down_since_ms: AtomicU64::new(0),
            loading: AtomicBool::new(false),
            sync_started_ms: AtomicU64::new(0),
            sync_bytes: AtomicU64::new(0),
            sync_total: AtomicI64::new(-1),
            from_redis: AtomicBool::new(from_redis),
            stream_db: AtomicU32::new(stream_db),
            skipped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            halted: parking_lot::Mutex::new(None),
        }
    }

    /// Whether nothing more from the leader may be applied; a Redis leader's stream applies
    /// each command under the guard this returns.
    pub(super) fn guard(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        let guard = self.apply_guard.lock();
        (!self.stopped()).then_some(guard)
    }

    /// Whether the link is up and following the log.
    pub fn is_up(&self) -> bool {
        self.state.load(Ordering::Relaxed) == CONNECTED
    }

    /// ROLE's name of the state.
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Ordering::Relaxed) {
            CONNECT => "connect",
            CONNECTING => "connecting",
            SYNC => "sync",
            _ => "connected",
        }
    }

    /// Stops the link: once this returns, nothing more from the leader is applied.
    pub fn stop(&self) {
        let _guard = self.apply_guard.lock();
        self.stop.store(true, Ordering::Release);
        if let Some(s) = self.socket.lock().take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub(super) fn set_state(&self, server: &Server, state: u8) {
        let was_up = self.is_up();
        self.state.store(state, Ordering::Relaxed);
        if state == CONNECTED {
            self.down_since_ms.store(0, Ordering::Relaxed);
        } else if was_up || self.down_since_ms.load(Ordering::Relaxed) == 0 {
            self.down_since_ms
                .store(strata::now_ms(), Ordering::Relaxed);
        }
        server.replication.refresh_gate(&server.config());
    }
}

/// Starts the link's thread.
pub fn spawn(server: Arc<Server>, link: Arc<Link>) {
    let spawned = std::thread::Builder::new()
        .name("strata-repl-link".into())
        .spawn(move || {
            link.down_since_ms
                .store(strata::now_ms(), Ordering::Relaxed);
            while !link.stopped() {
                notice!("Connecting to MASTER {}:{}", link.host, link.port);
                match follow(&server, &link) {
                    Ok(()) => {}
                    Err(e) if link.stopped() => {
                        let _ = e;
                    }
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => warning!(
                        "Connection with MASTER {}:{} lost: it closed the connection",
                        link.host,
                        link.port
                    ),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        warning!(
                        "Connection with MASTER {}:{} lost: nothing received within repl-timeout",
                        link.host,
                        link.port
                    )
                    }
                    Err(e) => warning!(
                        "Replication link with MASTER {}:{} failed: {e}",
                        link.host,
                        link.port
                    ),
                }
                if link.loading.swap(false, Ordering::AcqRel) {
                    server.replication.refresh_gate(&server.config());
                }
                link.set_state(&server, CONNECT);
                // The link's handle on the socket closes with the link (not at the next one).
                if let Some(s) = link.socket.lock().take() {
                    let _ = s.shutdown(std::net::Shutdown::Both);
                }
                if link.halted.lock().is_some() {
                    // Stopped at a command it cannot apply: no new link until REPLICAOF.
                    while !link.stopped() {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    break;
                }
                // Retry about once a second, as Redis does.
                for _ in 0..10 {
                    if link.stopped() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
    if let Err(e) = spawned {
        warning!("Can't start the replication thread: {e}");
    }
}

pub(super) fn command(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", parts.len()).into_bytes();
    for p in parts {
        out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Sends a handshake command and returns the reply line.
fn ask(input: &mut BufReader<socket::Link>, parts: &[&[u8]]) -> io::Result<String> {
    let link = input.get_mut();
    link.write_all(&command(parts))?;
    link.flush()?;
    wire::read_line(input)
}

/// One connection to the leader, from connect to failure.
fn follow(server: &Arc<Server>, link: &Arc<Link>) -> io::Result<()> {
    link.set_state(server, CONNECTING);
    let timeout = Duration::from_secs(server.config().repl_timeout.max(1));
    let addr = (link.host.as_str(), link.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::other("the leader's address does not resolve"))?;
    let tcp = TcpStream::connect_timeout(&addr, timeout.min(Duration::from_secs(10)))?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    // Kept by this connection for its socket options and the registry (a Redis leader's link).
    let control = tcp.try_clone()?;
    *link.socket.lock() = Some(tcp.try_clone()?);
    if link.stopped() {
        return Ok(());
    }
    let tls = server.config().tls_replication;
    let stream = if tls {
        let contexts = server
            .tls
            .current()
            .ok_or_else(|| io::Error::other("tls-replication is on but TLS is not configured"))?;
        socket::Link::Tls(Box::new(crate::tls::connect_leader(
            &contexts, &link.host, tcp,
        )?))
    } else {
        socket::Link::Tcp(tcp)
    };
    let mut input = BufReader::with_capacity(256 * 1024, stream);

    let pong = ask(&mut input, &[b"PING"])?;
    if pong.starts_with('-') && !pong.starts_with("-NOAUTH") && !pong.starts_with("-NOPERM") {
        return Err(io::Error::other(format!(
            "Error reply to PING from master: '{pong}'"
        )));
    }
    let (user, pass) = {
        let cfg = server.config();
        (cfg.masteruser.clone(), cfg.masterauth.clone())
    };
    if let Some(pass) = pass {
        let reply = match &user {
            Some(u) => ask(&mut input, &[b"AUTH", u.as_bytes(), pass.as_bytes()])?,
            None => ask(&mut input, &[b"AUTH", pass.as_bytes()])?,
        };
        if reply.starts_with('-') {
            return Err(io::Error::other(format!(
                "Unable to AUTH to MASTER: {reply}"
            )));
        }
    }
    // The port INFO on the leader shows: the TLS port when replicating over TLS, as Redis.
    let tls_port = server.config().tls_port;
    let port = match tls && tls_port != 0 {
        true => tls_port,
        false => server.port,
    }
    .to_string();
    let _ = ask(
        &mut input,
        &[b"REPLCONF", b"listening-port", port.as_bytes()],
    )?;
    // A Strata leader takes `capa strata`; a Redis leader ignores it and takes the others.
    let _ = ask(
        &mut input,
        &[
            b"REPLCONF",
            b"capa",
            b"eof",
            b"capa",
            b"psync2",
            b"capa",
            b"strata",
        ],
    )?;
    let (replid, offset) = {
        let id = link.leader_replid.lock().clone();
        let applied = link.applied.load(Ordering::Acquire);
        // A Redis leader's offsets start at 0; a Strata leader's applied sequence number 0
        // means nothing was copied yet.
        let from_redis = link.from_redis.load(Ordering::Acquire);
        if id == "?" || (applied == 0 && !from_redis) {
            ("?".to_string(), "-1".to_string())
        } else {
            (id, (applied + 1).to_string())
        }
    };
    let mut reply = ask(
        &mut input,
        &[b"PSYNC", replid.as_bytes(), offset.as_bytes()],
    )?;
    // A Redis leader keeps the link alive with newlines until it answers (a diskless sync
    // answers when its transfer starts).
    while reply.is_empty() {
        reply = wire::read_line(&mut input)?;
    }
    let words: Vec<&str> = reply.split(' ').collect();
    let full = match words.first().copied() {
        Some("+FULLRESYNC") if words.len() == 3 => true,
        Some("+CONTINUE") => false,
        _ => {
            return Err(io::Error::other(format!(
                "unexpected reply to PSYNC from master: '{reply}'"
            )))
        }
    };
    // A Strata leader sends its family map first; a Redis leader sends an RDB file after
    // +FULLRESYNC (newlines while it prepares it, then `$`), and continues only a Redis
    // history, as the id this server asked for names the leader it came from. The first byte
    // is looked at before framing is trusted with a length.
    let redis = match full {
        true => input.fill_buf()?.first() != Some(&wire::FAMILY_IDS),
        false => link.from_redis.load(Ordering::Acquire),
    };
    if redis {
        let resync = match full {
            true => from_redis::Resync::Full {
                replid: words[1].to_string(),
                offset: words[2]
                    .parse()
                    .map_err(|_| wire::invalid("bad FULLRESYNC offset"))?,
            },
            false => from_redis::Resync::Continue {
                replid: words.get(1).map(|s| s.to_string()),
            },
        };
        return from_redis::follow(server, link, input, &control, resync);
    }
    link.from_redis.store(false, Ordering::Release);
    let (_, ids_raw) = wire::read_frame(&mut input)?;
    if ids_raw.len() != 20 {
        return Err(wire::invalid("bad family map"));
    }
    let mut leader_ids = [0u32; 5];
    for (i, slot) in leader_ids.iter_mut().enumerate() {
        *slot = wire::u32_at(&ids_raw, i * 4)?;
    }
    link.last_io_ms.store(strata::now_ms(), Ordering::Relaxed);

    let leader_replid = if full {
        let id = words[1].to_string();
        let seq: u64 = words[2]
            .parse()
            .map_err(|_| wire::invalid("bad FULLRESYNC offset"))?;
        load_copy(server, link, &mut input, &id, seq)?;
        id
    } else {
        notice!("Successful partial resynchronization with master.");
        let id = words.get(1).map_or(replid.clone(), |s| s.to_string());
        *link.leader_replid.lock() = id.clone();
        id
    };
    link.set_state(server, CONNECTED);
    notice!("MASTER <-> REPLICA sync: Finished with success");
    send_ack(input.get_mut(), link)?;

    let mut received = link.applied.load(Ordering::Acquire);
    // Batches received and not yet applied (see COALESCE_BYTES).
    let mut ready: Vec<Vec<u8>> = Vec::new();
    let mut ready_bytes = 0usize;
    loop {
        let (kind, payload) = wire::read_frame(&mut input)?;
        link.last_io_ms.store(strata::now_ms(), Ordering::Relaxed);
        match kind {
            wire::BATCH => {
                let seq = wire::u64_at(&payload, 0)?;
                let count = u64::from(wire::u32_at(&payload[8..], 8)?).max(1);
                if seq != received + 1 {
                    return Err(wire::invalid(format!(
                        "log batch at offset {seq}, expected {}",
                        received + 1
                    )));
                }
                received = seq + count - 1;
                ready_bytes += payload.len();
                ready.push(payload);
            }
            wire::PUBLISH => {
                let tag = *payload
                    .first()
                    .ok_or_else(|| wire::invalid("empty PUBLISH"))?;
                let len = wire::u32_at(&payload, 1)? as usize;
                let channel = payload
                    .get(5..5 + len)
                    .ok_or_else(|| wire::invalid("truncated PUBLISH"))?;
                let message = &payload[5 + len..];
                let kind = if tag == 2 {
                    ChannelKind::Shard
                } else {
                    ChannelKind::Channel
                };
                server.publish(
                    kind,
                    &Bytes::copy_from_slice(channel),
                    &Bytes::copy_from_slice(message),
                );
            }
            wire::HEARTBEAT => {
                link.leader_offset
                    .store(wire::u64_at(&payload, 0)?, Ordering::Relaxed);
            }
            other => {
                return Err(wire::invalid(format!(
                    "unexpected replication frame {other:#x}"
                )))
            }
        }
        // Consecutive batches already received are applied as one write.
        if !ready.is_empty()
            && (kind != wire::BATCH || input.buffer().is_empty() || ready_bytes >= COALESCE_BYTES)
        {
            let state = encode_state(&leader_replid, received);
            let data: Vec<&[u8]> = ready.iter().map(|p| &p[8..]).collect();
            let applied = {
                let _guard = link.apply_guard.lock();
                if link.stopped() {
                    return Ok(());
                }
                let collect = server.blocking.active()
                    || server.watches.is_active()
                    || server.tracking.is_active();
                let applied = server
                    .db
                    .apply_replicated(&leader_ids, &data, &state, collect)
                    .map_err(|e| io::Error::other(format!("applying the leader's write: {e}")))?;
                link.applied.store(received, Ordering::Release);
                applied
            };
            ready.clear();
            ready_bytes = 0;
            // As on the leader: WATCH sees the write, clients blocked on the key re-check it,
            // clients tracking it are told.
            for (db, key) in &applied.keys {
                server.watches.touch(*db, key);
                server.blocking.signal(server, *db, key);
            }
            if server.tracking.is_active() {
                let keys = applied.keys.iter().map(|(_, k)| &k[..]);
                server.deliver_tracking(server.tracking.invalidate(keys, None));
                server.send_broadcasts();
            }
            if applied.aux_changed {
                if let Err(e) = server.reload_functions() {
                    warning!("Can't load the leader's function libraries: {e}");
                }
            }
        }
        // Acknowledge once everything received so far is applied.
        if input.buffer().is_empty() {
            send_ack(input.get_mut(), link)?;
        }
    }
}

fn send_ack(stream: &mut socket::Link, link: &Link) -> io::Result<()> {
    let applied = link.applied.load(Ordering::Acquire);
    let mut frame = Vec::with_capacity(13);
    wire::write_frame(&mut frame, wire::ACK, &[&applied.to_le_bytes()])?;
    stream.write_all(&frame)?;
    stream.flush()
}

/// The start of a full copy from either kind of leader: logs it, resets the progress figures,
/// ends this directory's own history (replicas of this server start over) and marks the link
/// loading. Returns when the copy started.
pub(super) fn begin_copy(server: &Server, link: &Link, replid: &str, offset: u64) -> Instant {
    notice!("Full resync from master: {replid}:{offset}");
    let started = Instant::now();
    link.sync_started_ms
        .store(strata::now_ms(), Ordering::Relaxed);
    link.sync_bytes.store(0, Ordering::Relaxed);
    link.sync_total.store(-1, Ordering::Relaxed);
    server.replication.new_history();
    link.loading.store(true, Ordering::Release);
    link.set_state(server, SYNC);
    started
}

/// Receives a full copy: wipes this directory, loads the records, and records the progress.
fn load_copy(
    server: &Arc<Server>,
    link: &Arc<Link>,
    input: &mut impl Read,
    replid: &str,
    seq: u64,
) -> io::Result<()> {
    let started = begin_copy(server, link, replid, seq);
    // A Strata leader streams its copy without telling its size, as a diskless Redis does.
    link.sync_total.store(0, Ordering::Relaxed);
    let db = &server.db;
    let storage = |e: strata::Error| io::Error::other(format!("loading the copy: {e}"));
    db.load_begin().map_err(storage)?;
    let mut records = 0u64;
    loop {
        let (kind, payload) = wire::read_frame(input)?;
        link.last_io_ms.store(strata::now_ms(), Ordering::Relaxed);
        link.sync_bytes
            .fetch_add(payload.len() as u64 + 5, Ordering::Relaxed);
        match kind {
            wire::COPY => {
                let recs = wire::records(&payload)?;
                records += recs.len() as u64;
                db.load_chunk(recs).map_err(storage)?;
            }
            wire::COPY_END => {
                let end_seq = wire::u64_at(&payload, 0)?;
                let count = wire::u64_at(&payload, 8)?;
                if end_seq != seq || count != records {
                    return Err(wire::invalid(format!(
                        "copy ended at {end_seq} with {count} records; received {records} for {seq}"
                    )));
                }
                break;
            }
            wire::PUBLISH | wire::HEARTBEAT => {}
            other => {
                return Err(wire::invalid(format!(
                    "unexpected frame {other:#x} in the copy"
                )))
            }
        }
    }
    db.load_end(&encode_state(replid, seq)).map_err(storage)?;
    *link.leader_replid.lock() = replid.to_string();
    link.applied.store(seq, Ordering::Release);
    if let Err(e) = server.reload_functions() {
        warning!("Can't load the leader's function libraries: {e}");
    }
    link.loading.store(false, Ordering::Release);
    notice!(
        "MASTER <-> REPLICA sync: loaded {records} records in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_record_reads_back() {
        let id = "a".repeat(40);
        let raw = encode_state(&id, 12345);
        assert_eq!(decode_state(&raw), Some((id, 12345)));
        assert_eq!(decode_state(&raw[..48]), None);
    }

    #[test]
    fn only_a_clean_redis_progress_record_reads_back() {
        let at = RedisPosition {
            replid: "b".repeat(40),
            offset: 777,
            db: 5,
        };
        let clean = encode_redis_state(&at, true);
        assert_eq!(decode_redis_state(&clean), Some(at.clone()));
        assert_eq!(decode_redis_state(&encode_redis_state(&at, false)), None);
        assert_eq!(
            decode_state(&clean),
            None,
            "not taken for a Strata leader's record"
        );
    }
}
