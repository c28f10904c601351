//! The replica's side against a Redis leader (live migration from Redis): after Redis's
//! +FULLRESYNC, the RDB file (`$<len>`, or diskless `$EOF:<mark>`) is loaded from the socket as it
//! arrives, by the streaming loader (`strata::rdb::file`), into emptied data (its function
//! libraries too, compiled as the file's records come); then the leader's
//! command stream is applied as a Redis replica applies it, through the dispatcher as the
//! `master` client (flag `M` in CLIENT LIST, killed by CLIENT KILL TYPE master): SELECT, MULTI/EXEC
//! applied atomically, scripts as sent, no refusal of writes on a read-only replica.
//! REPLCONF GETACK is answered with the processed offset, and an ACK goes out every second, so
//! WAIT on the leader counts this server. A command this server cannot apply (unknown here,
//! or with a wrong number of arguments) stops replication before it: the link is closed and
//! not made again until the next REPLICAOF, the reason is logged and shown in INFO
//! (`slave_repl_halted`), and the data stays as of the command before it. A command that
//! answers an error is logged and counted (`slave_repl_failed_commands`), as Redis's replicas do.
//! The leader's id and the processed offset are kept in memory for +CONTINUE after a dropped
//! link, and on disk at a clean shutdown only (see `follower::encode_redis_state`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use strata::rdb::file;
use strata::replication::REPLICATION_STATE;
use strata_commands::command;
use strata_commands::script_family::FUNCTIONS_RECORD;
use strata_commands::scripting::functions::rdb_library_loader;
use strata_commands::{registry, run, BlockMode, Ctx, Outcome, Session};
use strata_resp::{Frame, RequestDecoder};

use super::follower::{self, Link, CONNECTED};
use super::{socket, wire};
use crate::log::{notice, warning};
use crate::registry::ClientEntry;
use crate::server::{ClientApi, Server};

/// How the leader answered PSYNC.
pub enum Resync {
    /// +FULLRESYNC: an RDB file follows, taken at `offset` of history `replid`.
    Full {
        /// The leader's replication id.
        replid: String,
        /// The leader's offset the file stands for.
        offset: u64,
    },
    /// +CONTINUE: the stream goes on from the offset asked for (under a new id, if given).
    Continue {
        /// The leader's id, when it changed (Redis's psync2 reply).
        replid: Option<String>,
    },
}

/// ACKs go out at least this often, as Redis's replicas send them from their cron.
const ACK_EVERY: Duration = Duration::from_secs(1);

/// Failed commands logged one by one; after that, one line per this many.
const LOG_SKIPPED: u64 = 20;

/// Follows a Redis leader on a connection whose handshake is done, until it fails or the link
/// stops. `control` is a handle on the same TCP socket (socket options and the registry).
pub fn follow(
    server: &Arc<Server>,
    link: &Arc<Link>,
    mut input: BufReader<socket::Link>,
    control: &TcpStream,
    resync: Resync,
) -> io::Result<()> {
    link.from_redis.store(true, Ordering::Release);
    match resync {
        Resync::Full { replid, offset } => load_rdb(server, link, &mut input, &replid, offset)?,
        Resync::Continue { replid } => {
            if let Some(id) = replid.filter(|id| id.len() == 40) {
                *link.leader_replid.lock() = id;
            }
            notice!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        }
    }
    let mut buf = BytesMut::from(input.buffer());
    let mut stream = input.into_inner();
    let entry = server
        .registry
        .register(
            control.peer_addr()?,
            control.local_addr()?,
            control.as_raw_fd(),
            strata::now_ms(),
            usize::MAX,
        )
        .ok_or_else(|| io::Error::other("can't register the master client"))?;
    entry.master.store(true, Ordering::Relaxed);
    let _registered = Registered {
        server,
        id: entry.id,
    };
    link.set_state(server, CONNECTED);
    notice!("MASTER <-> REPLICA sync: Finished with success");
    // Reads wake up every ACK_EVERY to send the ACK and check repl-timeout themselves.
    control.set_read_timeout(Some(ACK_EVERY))?;
    let timeout_ms = server.config().repl_timeout.max(1) * 1000;

    // The stream goes on in the database of the last SELECT processed (a transaction cut by
    // the dropped link is sent again: the offset stayed before its MULTI).
    let db = server
        .db
        .select(link.stream_db.load(Ordering::Acquire))
        .map_err(|e| io::Error::other(format!("the master's database: {e}")))?;
    let mut master = Master {
        server,
        link,
        entry: &entry,
        session: Session::new(entry.id, db, false),
        offset: link.applied.load(Ordering::Acquire),
    };
    master.session.block_mode = BlockMode::NoBlock;
    send_ack(&mut stream, master.offset)?;
    let mut last_ack = Instant::now();
    let mut last_io = Instant::now();
    let mut decoder = RequestDecoder::default();
    // Bytes of the command being decoded that the decoder already took from `buf`.
    let mut partial = 0u64;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        loop {
            let before = buf.len();
            let decoded = decoder
                .decode(&mut buf)
                .map_err(|e| wire::invalid(format!("protocol error from MASTER: {}", e.0)))?;
            partial += (before - buf.len()) as u64;
            let Some(argv) = decoded else {
                break;
            };
            let len = std::mem::take(&mut partial);
            master.process(&argv, len, &mut stream)?;
        }
        if entry.killed.load(Ordering::Acquire) {
            return Err(io::Error::other(
                "the master client was killed (CLIENT KILL)",
            ));
        }
        if last_ack.elapsed() >= ACK_EVERY {
            // What is applied: not the commands of a MULTI still open.
            send_ack(&mut stream, link.applied.load(Ordering::Acquire))?;
            last_ack = Instant::now();
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                last_io = Instant::now();
                let now = strata::now_ms();
                link.last_io_ms.store(now, Ordering::Relaxed);
                entry.last_interaction_ms.store(now, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                if last_io.elapsed().as_millis() as u64 > timeout_ms {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) => return Err(e),
        }
        if link.stopped() {
            return Ok(());
        }
    }
}

/// Takes the master client out of the registry when the connection ends (before the caller
/// closes the socket, as the registry requires).
struct Registered<'a> {
    server: &'a Server,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.server.registry.deregister(self.id);
    }
}

/// The master client: the session the leader's commands run in, and the processed offset.
struct Master<'a> {
    server: &'a Arc<Server>,
    link: &'a Link,
    entry: &'a ClientEntry,
    session: Session,
    /// The leader's offset through the last command processed.
    offset: u64,
}

impl Master<'_> {
    /// Processes one command of the stream, `len` bytes of it.
    /// The offset moves on under the link's guard with the command's effect, so a stopped link
    /// (REPLICAOF, shutdown) records exactly what was applied.
    fn process(&mut self, argv: &[Bytes], len: u64, stream: &mut socket::Link) -> io::Result<()> {
        let link = self.link;
        let Some(_guard) = link.guard() else {
            return Err(io::Error::other("replication stopped"));
        };
        let name = &argv[0];
        if name.eq_ignore_ascii_case(b"replconf") {
            // GETACK is answered with the offset before it, as Redis's replicas do.
            if argv
                .get(1)
                .is_some_and(|a| a.eq_ignore_ascii_case(b"getack"))
            {
                send_ack(stream, self.offset)?;
            }
        } else if !name.eq_ignore_ascii_case(b"ping") {
            self.apply(argv)?;
        }
        self.offset += len;
        // Inside MULTI the transaction is not applied yet: the offset moves on at EXEC, as
        // Redis's replicas count it.
        if self.session.multi.is_none() {
            self.link.applied.store(self.offset, Ordering::Release);
            self.link
                .stream_db
                .store(self.session.db.index(), Ordering::Release);
        }
        Ok(())
    }

    /// Runs one command as the master client.
    fn apply(&mut self, argv: &[Bytes]) -> io::Result<()> {
        let Some(spec) = registry::lookup(&argv[0]).filter(|s| !s.name.contains('|')) else {
            return Err(self.halt(argv, "unknown command"));
        };
        if !spec.arity_ok(argv.len()) {
            return Err(self.halt(argv, "wrong number of arguments"));
        }
        if let Some(multi) = self.session.multi.as_mut() {
            if !spec.has(command::NOT_QUEUED) {
                multi.queue(argv);
                self.entry.set_multi(&self.session);
                return Ok(());
            }
        }
        let api = ClientApi {
            server: self.server,
            client: self.entry,
        };
        let session = &mut self.session;
        let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
            run(
                &mut Ctx {
                    session,
                    server: &api,
                },
                spec,
                argv,
            )
        }));
        self.entry
            .db
            .store(self.session.db.index(), Ordering::Relaxed);
        self.entry.set_multi(&self.session);
        if !self.session.stats.is_empty() {
            self.server.command_stats.absorb(&mut self.session.stats);
        }
        let error = match ran {
            Ok(Outcome::Reply(Frame::Error(e))) => String::from_utf8_lossy(&e).into_owned(),
            Ok(_) => return Ok(()),
            Err(_) => "internal error".to_string(),
        };
        let n = self.link.failed.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= LOG_SKIPPED || n.is_multiple_of(1000) {
            warning!(
                "== CRITICAL == This replica is sending an error to its master: '{error}' after processing the command '{}' (errors so far: {n})",
                spec.name
            );
        }
        Ok(())
    }

    /// A command this server cannot apply: replication stops before it (see the module docs).
    /// Returns the error that ends the link.
    fn halt(&self, argv: &[Bytes], why: &str) -> io::Error {
        self.link.skipped.fetch_add(1, Ordering::Relaxed);
        let reason = format!(
            "'{}' with {} arguments at offset {}: {why}",
            String::from_utf8_lossy(&argv[0]),
            argv.len() - 1,
            self.offset
        );
        warning!(
            "Replication from MASTER stopped: this server can't apply the command {reason}. The data stays as of the command before it; REPLICAOF starts again."
        );
        *self.link.halted.lock() = Some(reason);
        io::Error::other("replication stopped at a command this server can't apply")
    }
}

fn send_ack(stream: &mut socket::Link, offset: u64) -> io::Result<()> {
    let offset = offset.to_string();
    stream.write_all(&follower::command(&[
        b"REPLCONF",
        b"ACK",
        offset.as_bytes(),
    ]))?;
    stream.flush()
}

/// Receives the leader's RDB file: empties the data (as Redis does before loading) and loads
/// the file from the socket as it arrives. The progress record says "not resumable" from here
/// until a clean shutdown.
fn load_rdb(
    server: &Arc<Server>,
    link: &Arc<Link>,
    input: &mut BufReader<socket::Link>,
    replid: &str,
    offset: u64,
) -> io::Result<()> {
    let started = follower::begin_copy(server, link, replid, offset);
    // Newlines while the leader prepares the file, then `$<len>` or `$EOF:<40-byte mark>`.
    let line = loop {
        let first = input
            .fill_buf()?
            .first()
            .copied()
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        link.last_io_ms.store(strata::now_ms(), Ordering::Relaxed);
        if first != b'\n' {
            break wire::read_line(input)?;
        }
        input.consume(1);
    };
    let Some(size) = line.strip_prefix('$') else {
        return Err(wire::invalid(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{line}'), are you sure the host and port are right?"
        )));
    };
    let storage = |e: strata::Error| io::Error::other(format!("loading the master's RDB: {e}"));
    let db = &server.db;
    db.aux_put(
        REPLICATION_STATE,
        &follower::encode_redis_state(
            &follower::RedisPosition {
                replid: replid.to_string(),
                offset,
                db: 0,
            },
            false,
        ),
    )
    .map_err(storage)?;
    notice!("MASTER <-> REPLICA sync: Flushing old data");
    db.flushall().map_err(storage)?;
    // The libraries go too, as Redis's emptyData takes them; the file brings the leader's.
    server.functions.flush();
    db.aux_put(FUNCTIONS_RECORD, &server.functions.dump())
        .map_err(storage)?;
    notice!("MASTER <-> REPLICA sync: Loading DB from the socket");
    let libraries = || rdb_library_loader(&server.functions, db, false);
    let progress = |bytes: u64, _keys: u64| {
        link.sync_bytes.store(bytes, Ordering::Relaxed);
        link.last_io_ms.store(strata::now_ms(), Ordering::Relaxed);
    };
    let summary = match size.strip_prefix("EOF:") {
        Some(mark) => {
            if mark.len() != 40 {
                return Err(wire::invalid(format!("bad EOF mark from MASTER: '{line}'")));
            }
            link.sync_total.store(0, Ordering::Relaxed);
            let summary = file::import(db, &mut *input, libraries(), progress).map_err(storage)?;
            let mut tail = [0u8; 40];
            input.read_exact(&mut tail)?;
            if tail != mark.as_bytes() {
                return Err(wire::invalid(
                    "the RDB from MASTER did not end with its EOF mark",
                ));
            }
            summary
        }
        None => {
            let len: u64 = size
                .parse()
                .map_err(|_| wire::invalid(format!("bad RDB length from MASTER: '{line}'")))?;
            link.sync_total
                .store(i64::try_from(len).unwrap_or(i64::MAX), Ordering::Relaxed);
            let mut body = (&mut *input).take(len);
            let summary = file::import(db, &mut body, libraries(), progress).map_err(storage)?;
            // Whatever follows the checksum within the announced length is not data.
            io::copy(&mut body, &mut io::sink())?;
            summary
        }
    };
    *link.leader_replid.lock() = replid.to_string();
    link.applied.store(offset, Ordering::Release);
    link.stream_db.store(0, Ordering::Release);
    link.loading.store(false, Ordering::Release);
    notice!(
        "MASTER <-> REPLICA sync: loaded {} keys ({} expired keys dropped) and {} function libraries in {:.1}s",
        summary.keys,
        summary.expired,
        summary.functions,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
