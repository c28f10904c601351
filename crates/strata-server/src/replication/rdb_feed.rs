//! The leader's side of a replica that is not Strata (a redis-server replica, `redis-cli --rdb`
//! or `--replica`): after PSYNC (answered `+FULLRESYNC <id> <offset>`) or SYNC, a thread of its
//! own sends the data as a Redis 7.0 RDB file (`strata::rdb::save`), made from a checkpoint of
//! the directory opened read-only, so the server keeps serving while it is written and the file
//! is one moment's data. A replica that said `capa eof` gets it streamed as it is made, in the
//! EOF-marker form; any other gets it written to a file first to announce its length, with a
//! newline a second meanwhile (as Redis keeps a waiting replica's link alive). Then, unless the
//! replica asked for `rdb-only`, the link stays open carrying a PING every 10 seconds: the writes
//! that follow are not sent as commands (docs/differences.md). What the replica sends (REPLCONF
//! ACK) is read and ignored; such a replica is not listed in INFO replication or ROLE.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::rdb::save::{self, ReplInfo};
use strata_commands::PsyncRequest;

use super::socket::Socket;
use crate::log::{notice, warning};
use crate::server::{random_hex40, Server};

/// How often the link carries a PING once the file is sent (Redis's `repl-ping-replica-period`
/// default).
const PING_EVERY: Duration = Duration::from_secs(10);
/// How often a newline keeps the link alive while the file is being written.
const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);

/// A checkpoint of the data directory opened read-only, and the file made from it; both are
/// removed when it is dropped.
struct Copy {
    db: Option<strata::Db>,
    dir: PathBuf,
    file: PathBuf,
}

impl Copy {
    fn make(server: &Server) -> io::Result<Copy> {
        let parent = server.config().bgsave_path();
        std::fs::create_dir_all(&parent)?;
        let name = format!("sync-{}-{}", strata::now_ms(), &random_hex40()[..8]);
        let mut copy = Copy {
            db: None,
            dir: parent.join(&name),
            file: parent.join(format!("{name}.rdb")),
        };
        server.db.checkpoint(&copy.dir).map_err(io::Error::other)?;
        let opts = strata::Options {
            databases: server.db.databases(),
            read_only: true,
            create_if_missing: false,
            active_expire: false,
            block_cache_size: 8 << 20,
            ..strata::Options::default()
        };
        copy.db = Some(strata::Db::open_with(&copy.dir, opts).map_err(io::Error::other)?);
        Ok(copy)
    }

    fn db(&self) -> io::Result<&strata::Db> {
        self.db
            .as_ref()
            .ok_or_else(|| io::Error::other("the copy is not open"))
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        self.db.take();
        let _ = std::fs::remove_file(&self.file);
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            if e.kind() != io::ErrorKind::NotFound {
                warning!("Could not remove {}: {e}", self.dir.display());
            }
        }
    }
}

/// Takes over a connection that sent PSYNC or SYNC without `capa strata`: starts its thread.
pub fn serve(server: Arc<Server>, stream: Socket, ip: String, req: PsyncRequest) {
    let spawned = std::thread::Builder::new()
        .name("strata-rdb-sync".into())
        .spawn(move || {
            let name = format!("{ip}:{}", req.listening_port);
            match feed(&server, &stream, &req, &name) {
                Ok(()) => notice!("Connection with replica {name} (RDB) closed."),
                Err(e) => warning!("RDB synchronization with replica {name} ended: {e}"),
            }
            let _ = stream.shutdown();
        });
    if let Err(e) = spawned {
        warning!("Can't start a replication thread: {e}");
    }
}

/// The whole life of one RDB replica's link.
fn feed(server: &Arc<Server>, stream: &Socket, req: &PsyncRequest, name: &str) -> io::Result<()> {
    let timeout = Duration::from_secs(server.config().repl_timeout.max(1));
    stream.make_blocking(timeout)?;
    let repl = &server.replication;
    let mut out = BufWriter::with_capacity(256 * 1024, stream.try_clone()?);
    if repl.is_loading() {
        out.write_all(b"-LOADING Strata is loading the dataset from its own leader\r\n")?;
        return out.flush();
    }
    repl.sync_full.fetch_add(1, Ordering::Relaxed);
    let info = ReplInfo {
        replid: repl.own_replid(),
        offset: server.db.last_seq(),
    };
    notice!(
        "Replica {name} asks for synchronization: sending an RDB file ({})",
        if req.capa.eof {
            "streamed"
        } else {
            "written first"
        }
    );
    if !req.sync {
        out.write_all(format!("+FULLRESYNC {} {}\r\n", info.replid, info.offset).as_bytes())?;
        out.flush()?;
    }
    let started = Instant::now();
    let copy = Copy::make(server)?;
    let saved = if req.capa.eof {
        let mark = random_hex40();
        out.write_all(format!("$EOF:{mark}\r\n").as_bytes())?;
        let saved = save::export(copy.db()?, &mut out, Some(&info), |_, _| {})
            .map_err(io::Error::other)?
            .1;
        out.write_all(mark.as_bytes())?;
        out.flush()?;
        saved
    } else {
        let saved = write_file(&copy, stream, &info)?;
        out.write_all(format!("${}\r\n", saved.bytes).as_bytes())?;
        let copied = io::copy(&mut File::open(&copy.file)?, &mut out)?;
        if copied != saved.bytes {
            return Err(io::Error::other("the RDB file changed while it was sent"));
        }
        out.flush()?;
        saved
    };
    drop(copy);
    notice!(
        "Synchronization with replica {name} succeeded: {} keys, {} bytes of RDB in {:.1}s",
        saved.keys,
        saved.bytes,
        started.elapsed().as_secs_f64()
    );
    if req.capa.rdb_only {
        return Ok(());
    }
    stay_connected(stream, out)
}

/// Writes the RDB file of `copy` to its file, sending a newline a second meanwhile.
fn write_file(copy: &Copy, stream: &Socket, info: &ReplInfo) -> io::Result<save::RdbSaved> {
    let done = Arc::new(AtomicBool::new(false));
    let keepalive = {
        let (done, mut link) = (done.clone(), stream.try_clone()?);
        std::thread::Builder::new()
            .name("strata-rdb-keepalive".into())
            .spawn(move || {
                let mut last = Instant::now();
                while !done.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(50));
                    if last.elapsed() >= KEEPALIVE_EVERY {
                        last = Instant::now();
                        if link.write_all(b"\n").is_err() {
                            return;
                        }
                    }
                }
            })?
    };
    let written = File::create(&copy.file).and_then(|f| {
        let out = BufWriter::with_capacity(1 << 20, f);
        let (out, saved) =
            save::export(copy.db()?, out, Some(info), |_, _| {}).map_err(io::Error::other)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(saved)
    });
    done.store(true, Ordering::Release);
    let _ = keepalive.join();
    written
}

/// After the file: a PING every 10 seconds until the replica goes away; what it sends is read
/// and dropped.
fn stay_connected(stream: &Socket, mut out: BufWriter<Socket>) -> io::Result<()> {
    let gone = Arc::new(AtomicBool::new(false));
    {
        let (gone, input) = (gone.clone(), stream.try_clone()?);
        std::thread::Builder::new()
            .name("strata-rdb-drain".into())
            .spawn(move || {
                let mut input = BufReader::new(input);
                let mut buf = [0u8; 4096];
                while matches!(input.read(&mut buf), Ok(n) if n > 0) {}
                gone.store(true, Ordering::Release);
            })?;
    }
    let mut last = Instant::now();
    while !gone.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(100));
        if last.elapsed() >= PING_EVERY {
            last = Instant::now();
            out.write_all(b"*1\r\n$4\r\nPING\r\n")?;
            out.flush()?;
        }
    }
    Ok(())
}
