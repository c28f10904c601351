//! Replication: this server's role (a leader, or a replica following one), the replicas attached
//! to it, what INFO replication, ROLE and WAIT report, and the gate that refuses commands the
//! current state does not allow (-LOADING, -MASTERDOWN, -READONLY, -NOREPLICAS). Offsets are the
//! leader's RocksDB sequence numbers, or its redo log's offsets with the write-back tier
//! (`Db::last_seq`); the stream and its rules are in `docs/replication.md`.
//! The two sides of a link live in `leader` and `follower`, the framing in `wire`; a replica that
//! is not Strata gets an RDB file from `rdb_feed`. A leader that is a Redis is followed by
//! `from_redis` (live migration).

mod follower;
mod from_redis;
mod leader;
mod rdb_feed;
mod socket;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use strata_commands::command::{self, CommandSpec};
use strata_commands::errors;
use strata_commands::{ChannelKind, PsyncRequest};
use strata_resp::Frame;

use crate::config::Config;
use crate::log::notice;
use crate::server::Server;

use leader::attach;

const ZERO_ID: &str = "0000000000000000000000000000000000000000";

// Bits of the gate.
const LOADING: u8 = 1;
const MASTERDOWN: u8 = 2;
const READONLY: u8 = 4;
const NOREPLICAS: u8 = 8;

/// Replication state shared by the whole server.
pub struct Replication {
    /// Names this directory's own history of sequence numbers: replicas of this server may
    /// resume only within the same id. New after a crash, a full copy and a promotion.
    own_replid: Mutex<String>,
    /// The file keeping `own_replid` across clean restarts.
    id_file: PathBuf,
    /// The link to the leader while this server is a replica.
    link: Mutex<Option<Arc<follower::Link>>>,
    /// Replicas attached to this server.
    attached: Mutex<Vec<Arc<leader::Attached>>>,
    attached_count: AtomicUsize,
    /// INFO stats.
    pub sync_full: AtomicU64,
    /// Partial resyncs accepted.
    pub sync_partial_ok: AtomicU64,
    /// Partial resyncs refused (a full copy was sent instead).
    pub sync_partial_err: AtomicU64,
    gate: AtomicU8,
    good_replicas: AtomicU64,
    /// An RDB file is being loaded at start-up (`crate::rdb_at_start`): `-LOADING` as while a
    /// leader's copy loads.
    loading_file: AtomicBool,
    /// The start-up load's progress: when it began (Unix s), the file's size, bytes read.
    file_load: [AtomicU64; 3],
    /// A Redis leader's id and offset saved at the last clean shutdown, with this directory's
    /// last sequence number when they were read: the first link resumes from them if nothing
    /// was written since (see [`Replication::load_redis_resume`]).
    redis_resume: Mutex<Option<(follower::RedisPosition, u64)>>,
}

impl Replication {
    /// The state of a server on data directory `dir` whose last offset is `offset`. The
    /// replication id survives only a clean shutdown (see [`Replication::mark_clean_shutdown`]):
    /// after a crash the last writes may not be on disk although a replica has them, so the
    /// history must not be resumed. Nor when the offset went back since (the directory was
    /// last used with the other log: the write-back tier's, or RocksDB's), as the same offsets
    /// would then name other writes.
    pub fn open(dir: &Path, offset: u64) -> Replication {
        let id_file = dir.join("replication-id");
        let saved = std::fs::read_to_string(&id_file).ok().and_then(|text| {
            let mut words = text.split_whitespace();
            let (id, clean, then) = (words.next(), words.next(), words.next());
            let went_back = then
                .and_then(|t| t.parse::<u64>().ok())
                .is_some_and(|then| offset < then);
            match (id, clean) {
                (Some(id), Some("clean")) if id.len() == 40 && !went_back => Some(id.to_string()),
                _ => None,
            }
        });
        let id = saved.unwrap_or_else(crate::server::random_hex40);
        let repl = Replication {
            own_replid: Mutex::new(id),
            id_file,
            link: Mutex::new(None),
            attached: Mutex::new(Vec::new()),
            attached_count: AtomicUsize::new(0),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            gate: AtomicU8::new(0),
            good_replicas: AtomicU64::new(0),
            loading_file: AtomicBool::new(false),
            file_load: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            redis_resume: Mutex::new(None),
        };
        repl.save_id(None);
        repl
    }

    /// Writes the id, with `Some(offset)` as cleanly shut down at that offset.
    fn save_id(&self, clean: Option<u64>) {
        let text = match clean {
            Some(offset) => format!("{} clean {offset}\n", self.own_replid()),
            None => format!("{} running\n", self.own_replid()),
        };
        let tmp = self.id_file.with_extension("tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &self.id_file);
        }
    }

    /// Records that the data is fully on disk, through `offset`: the next start keeps the
    /// replication id.
    pub fn mark_clean_shutdown(&self, offset: u64) {
        self.save_id(Some(offset));
    }

    /// Reads a Redis leader's position saved at a clean shutdown (start-up), and marks it used:
    /// once this server runs, its writes are no longer recorded with the offset, so after a
    /// crash the next link needs a full copy.
    pub fn load_redis_resume(&self, db: &strata::Db) {
        let Some(at) = db
            .aux_get(strata::replication::REPLICATION_STATE)
            .ok()
            .flatten()
            .and_then(|raw| follower::decode_redis_state(&raw))
        else {
            return;
        };
        let unclean = follower::encode_redis_state(&at, false);
        // Durable before anything else is written: a crash right after start must find the
        // position marked used (the record could otherwise wait in the log's buffer, and the
        // next start would resume from an offset its data no longer matches).
        let marked = db
            .aux_put(strata::replication::REPLICATION_STATE, &unclean)
            .and_then(|()| db.sync_wal_through(db.write_count()));
        if let Err(e) = marked {
            crate::log::warning!("Can't update the replication state: {e}");
            return;
        }
        *self.redis_resume.lock() = Some((at, db.last_seq()));
    }

    /// The Redis leader's id and offset to resume from, if the data is still what it was at
    /// start-up (`seq`: the directory's last sequence number now).
    fn take_redis_resume(&self, seq: u64) -> Option<follower::RedisPosition> {
        self.redis_resume
            .lock()
            .take()
            .filter(|&(_, then)| then == seq)
            .map(|(at, _)| at)
    }

    /// Before a clean shutdown: stops a Redis leader's link and records where its stream
    /// stopped, so the next start continues with PSYNC <id> <offset>.
    pub fn stop_for_shutdown(&self, db: &strata::Db) {
        let Some(link) = self.link() else {
            return;
        };
        link.stop();
        if !link.from_redis.load(Ordering::Acquire) || link.loading.load(Ordering::Acquire) {
            return;
        }
        let at = follower::RedisPosition {
            replid: link.leader_replid.lock().clone(),
            offset: link.applied.load(Ordering::Acquire),
            db: link.stream_db.load(Ordering::Acquire),
        };
        if at.replid.len() == 40 {
            let state = follower::encode_redis_state(&at, true);
            if let Err(e) = db.aux_put(strata::replication::REPLICATION_STATE, &state) {
                crate::log::warning!("Can't record the master's replication offset: {e}");
            }
        }
    }

    /// This directory's replication id.
    pub fn own_replid(&self) -> String {
        self.own_replid.lock().clone()
    }

    /// Starts a new history: a new id, and the replicas attached so far start over.
    pub fn new_history(&self) {
        *self.own_replid.lock() = crate::server::random_hex40();
        self.save_id(None);
        for r in self.attached_now() {
            r.close();
        }
    }

    fn link(&self) -> Option<Arc<follower::Link>> {
        self.link.lock().clone()
    }

    /// Whether this server is a replica.
    pub fn is_replica(&self) -> bool {
        self.link.lock().is_some()
    }

    /// Whether a copy from the leader, or an RDB file at start-up, is being loaded.
    pub fn is_loading(&self) -> bool {
        self.loading_file.load(Ordering::Acquire)
            || self
                .link()
                .is_some_and(|l| l.loading.load(Ordering::Acquire))
    }

    /// Where the load under way stands (the start-up RDB file's, or a copy from the leader):
    /// `None` when nothing loads.
    pub fn loading_progress(&self) -> Option<LoadingProgress> {
        if self.loading_file.load(Ordering::Acquire) {
            let [start, total, loaded] = &self.file_load;
            return Some(LoadingProgress {
                start_time: start.load(Ordering::Acquire),
                total_bytes: total.load(Ordering::Acquire),
                loaded_bytes: loaded.load(Ordering::Acquire),
            });
        }
        let link = self.link()?;
        link.loading
            .load(Ordering::Acquire)
            .then(|| LoadingProgress {
                start_time: link.sync_started_ms.load(Ordering::Acquire) / 1000,
                total_bytes: u64::try_from(link.sync_total.load(Ordering::Acquire)).unwrap_or(0),
                loaded_bytes: link.sync_bytes.load(Ordering::Acquire),
            })
    }

    /// Records the start of the start-up load of a file of `total` bytes.
    pub fn file_load_started(&self, total: u64) {
        let [start, size, loaded] = &self.file_load;
        start.store(strata::now_ms() / 1000, Ordering::Release);
        size.store(total, Ordering::Release);
        loaded.store(0, Ordering::Release);
    }

    /// Records the bytes of the start-up file read so far.
    pub fn file_load_progress(&self, bytes: u64) {
        self.file_load[2].store(bytes, Ordering::Release);
    }

    /// Marks the start-up load of an RDB file begun or ended, and recomputes the gate.
    pub fn set_loading_file(&self, on: bool, cfg: &Config) {
        self.loading_file.store(on, Ordering::Release);
        self.refresh_gate(cfg);
    }

    fn attached_now(&self) -> Vec<Arc<leader::Attached>> {
        self.attached.lock().clone()
    }

    fn add_attached(&self, r: Arc<leader::Attached>) {
        let mut list = self.attached.lock();
        list.push(r);
        self.attached_count.store(list.len(), Ordering::Release);
    }

    fn remove_attached(&self, r: &Arc<leader::Attached>) {
        let mut list = self.attached.lock();
        list.retain(|x| !Arc::ptr_eq(x, r));
        self.attached_count.store(list.len(), Ordering::Release);
    }

    /// Hands a PUBLISH to every attached replica.
    pub fn propagate_publish(&self, kind: ChannelKind, channel: &Bytes, message: &Bytes) {
        if self.attached_count.load(Ordering::Acquire) == 0 {
            return;
        }
        for r in self.attached_now() {
            if r.state.load(Ordering::Relaxed) == leader::ONLINE {
                r.queue_publish(kind, channel, message);
            }
        }
    }

    /// Recomputes the gate from the role, the link and `cfg`.
    pub fn refresh_gate(&self, cfg: &Config) {
        let mut gate = 0;
        if self.loading_file.load(Ordering::Acquire) {
            gate |= LOADING;
        }
        match self.link() {
            Some(link) => {
                if link.loading.load(Ordering::Acquire) {
                    gate |= LOADING;
                }
                if !link.is_up() && !cfg.replica_serve_stale_data {
                    gate |= MASTERDOWN;
                }
                if cfg.replica_read_only {
                    gate |= READONLY;
                }
            }
            None => {
                let (min, max_lag) = (cfg.min_replicas_to_write, cfg.min_replicas_max_lag);
                let good = self.count_good(max_lag);
                self.good_replicas.store(good, Ordering::Relaxed);
                if min > 0 && max_lag > 0 && good < min {
                    gate |= NOREPLICAS;
                }
            }
        }
        self.gate.store(gate, Ordering::Release);
    }

    fn count_good(&self, max_lag_secs: u64) -> u64 {
        let now = strata::now_ms();
        self.attached_now()
            .iter()
            .filter(|r| {
                r.state.load(Ordering::Relaxed) == leader::ONLINE
                    && now.saturating_sub(r.last_ack_ms.load(Ordering::Relaxed))
                        <= max_lag_secs * 1000
            })
            .count() as u64
    }

    /// The refusal for `spec` in the current state, in Redis's order of checks.
    #[inline]
    pub fn refusal(&self, spec: &CommandSpec) -> Option<Frame> {
        let gate = self.gate.load(Ordering::Relaxed);
        if gate == 0 {
            return None;
        }
        let write = spec.has(command::WRITE);
        let text = if gate & NOREPLICAS != 0 && write {
            errors::NOREPLICAS
        } else if gate & READONLY != 0 && write {
            errors::READONLY_REPLICA
        } else if gate & MASTERDOWN != 0 && !spec.has(command::STALE) {
            errors::MASTERDOWN
        } else if gate & LOADING != 0 && !spec.has(command::LOADING) {
            errors::LOADING
        } else {
            return None;
        };
        Some(errors::err(text))
    }

    /// Why a script that may write (one whose flags lack `no-writes`) may not start now: Redis
    /// counts such a script a write command, refused as one (without enough good replicas for
    /// `min-replicas-to-write`, or on a read-only replica).
    pub fn script_write_refusal(&self) -> Option<Frame> {
        let gate = self.gate.load(Ordering::Relaxed);
        if gate & NOREPLICAS != 0 {
            Some(errors::err(errors::NOREPLICAS))
        } else if gate & READONLY != 0 {
            Some(errors::err(errors::READONLY_REPLICA))
        } else {
            None
        }
    }

    /// REPLICAOF / SLAVEOF.
    pub fn replicaof(
        server: &Arc<Server>,
        leader: Option<(String, u16)>,
    ) -> Result<&'static str, String> {
        let repl = &server.replication;
        let mut slot = repl.link.lock();
        match leader {
            None => {
                let old = slot.take();
                drop(slot);
                if let Some(old) = old {
                    old.stop();
                    repl.new_history();
                    server.db.set_active_expire(true);
                    server.db.set_follower(false);
                    notice!("MASTER MODE enabled (user request from REPLICAOF NO ONE)");
                }
                server.set_replicaof(None);
            }
            Some((host, port)) => {
                if let Some(old) = slot.as_ref() {
                    if old.host.eq_ignore_ascii_case(&host) && old.port == port {
                        return Ok("OK Already connected to specified master");
                    }
                    old.stop();
                }
                server.db.set_active_expire(false);
                server.db.set_follower(true);
                let link = Arc::new(follower::Link::new(server, host.clone(), port));
                *slot = Some(link.clone());
                drop(slot);
                // Replicas of this server follow whatever this server becomes.
                for r in repl.attached_now() {
                    r.close();
                }
                notice!("REPLICAOF {host}:{port} enabled (user request)");
                server.set_replicaof(Some((&host, port)));
                follower::spawn(server.clone(), link);
            }
        }
        repl.refresh_gate(&server.config());
        Ok("OK")
    }

    /// ROLE.
    pub fn role(&self, server: &Server) -> Frame {
        match self.link() {
            Some(link) => Frame::Array(vec![
                Frame::bulk("slave"),
                Frame::bulk(link.host.clone()),
                Frame::Integer(i64::from(link.port)),
                Frame::bulk(link.state_name()),
                Frame::Integer(if link.is_up() {
                    link.applied.load(Ordering::Acquire) as i64
                } else {
                    -1
                }),
            ]),
            None => Frame::Array(vec![
                Frame::bulk("master"),
                Frame::Integer(server.db.last_seq() as i64),
                Frame::Array(
                    self.attached_now()
                        .iter()
                        .filter(|r| r.state.load(Ordering::Relaxed) == leader::ONLINE)
                        .map(|r| {
                            Frame::Array(vec![
                                Frame::bulk(r.ip.clone()),
                                Frame::bulk(r.port.to_string()),
                                Frame::bulk(r.ack.load(Ordering::Relaxed).to_string()),
                            ])
                        })
                        .collect(),
                ),
            ]),
        }
    }

    /// WAIT: blocks this worker (other connections move to other workers) until `n` replicas
    /// acknowledged everything written so far, or `timeout_ms` (0: no limit) passes.
    pub fn wait(&self, server: &Server, n: u64, timeout_ms: u64) -> Result<u64, String> {
        if self.is_replica() {
            return Err(errors::WAIT_ON_REPLICA.to_string());
        }
        let target = server.db.last_seq();
        let acked = || {
            self.attached_now()
                .iter()
                .filter(|r| {
                    r.state.load(Ordering::Relaxed) == leader::ONLINE
                        && r.ack.load(Ordering::Acquire) >= target
                })
                .count() as u64
        };
        let count = acked();
        if count >= n {
            return Ok(count);
        }
        let deadline = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms));
        let wait = || loop {
            let count = acked();
            if count >= n || deadline.is_some_and(|d| Instant::now() >= d) {
                return count;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        Ok(match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        })
    }

    /// Periodic upkeep (from the server cron): the gate follows replicas' lag.
    pub fn cron(&self, cfg: &Config) {
        self.refresh_gate(cfg);
    }

    /// The replication figures INFO replication and the metrics endpoint report.
    pub fn figures(&self, server: &Server) -> ReplicationFigures {
        let now = strata::now_ms();
        let link = self.link();
        let (offset, replid) = match &link {
            Some(link) => {
                let id = link.leader_replid.lock().clone();
                let id = if id.len() == 40 {
                    id
                } else {
                    self.own_replid()
                };
                (link.applied.load(Ordering::Acquire), id)
            }
            None => (server.db.last_seq(), self.own_replid()),
        };
        let leader = link.map(|link| {
            let up = link.is_up();
            let last_io = link.last_io_ms.load(Ordering::Relaxed);
            let loading = link.loading.load(Ordering::Acquire);
            let since = link.down_since_ms.load(Ordering::Relaxed);
            LeaderFigures {
                host: link.host.clone(),
                port: link.port,
                up,
                leader_offset: link.leader_offset.load(Ordering::Relaxed),
                last_io_seconds_ago: (last_io != 0).then(|| now.saturating_sub(last_io) / 1000),
                loading,
                sync_read_bytes: link.sync_bytes.load(Ordering::Relaxed),
                sync_total_bytes: link.sync_total.load(Ordering::Relaxed),
                sync_last_io_seconds_ago: now
                    .saturating_sub(link.sync_started_ms.load(Ordering::Relaxed).max(last_io))
                    / 1000,
                down_seconds: (!up && since != 0 && last_io != 0)
                    .then(|| now.saturating_sub(since) / 1000),
                from_redis: link.from_redis.load(Ordering::Relaxed).then(|| {
                    (
                        link.skipped.load(Ordering::Relaxed),
                        link.failed.load(Ordering::Relaxed),
                    )
                }),
                halted: link.halted.lock().clone(),
            }
        });
        let replicas = self
            .attached_now()
            .iter()
            .map(|r| ReplicaFigures {
                ip: r.ip.clone(),
                port: r.port,
                state: r.state_name(),
                offset: r.ack.load(Ordering::Relaxed),
                lag_seconds: now.saturating_sub(r.last_ack_ms.load(Ordering::Relaxed)) / 1000,
            })
            .collect();
        ReplicationFigures {
            offset,
            replid,
            leader,
            replicas,
            good_replicas: self.good_replicas.load(Ordering::Relaxed),
        }
    }

    /// The INFO replication section.
    pub fn info(&self, server: &Server, out: &mut String) {
        use std::fmt::Write as _;
        let f = self.figures(server);
        let cfg = server.config();
        let offset = f.offset;
        let replid = &f.replid;
        out.push_str("# Replication\r\n");
        match &f.leader {
            Some(link) => {
                let _ = write!(
                    out,
                    "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\n",
                    link.host,
                    link.port,
                    if link.up { "up" } else { "down" }
                );
                let io_ago = link.last_io_seconds_ago.map_or(-1, |s| s as i64);
                let _ = write!(
                    out,
                    "master_last_io_seconds_ago:{io_ago}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{offset}\r\nslave_repl_offset:{offset}\r\n",
                    u8::from(link.loading)
                );
                if link.loading {
                    // Redis's arithmetic, signs included (a `$EOF:` transfer shows a total of 0
                    // and negative bytes left).
                    let total = link.sync_total_bytes;
                    let read = i64::try_from(link.sync_read_bytes).unwrap_or(i64::MAX);
                    let perc = if total != 0 {
                        read as f64 / total as f64 * 100.0
                    } else {
                        0.0
                    };
                    let _ = write!(
                        out,
                        "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{read}\r\nmaster_sync_left_bytes:{}\r\nmaster_sync_perc:{perc:.2}\r\nmaster_sync_last_io_seconds_ago:{}\r\n",
                        total - read,
                        link.sync_last_io_seconds_ago
                    );
                }
                if !link.up {
                    let secs = link.down_seconds.map_or(-1, |s| s as i64);
                    let _ = write!(out, "master_link_down_since_seconds:{secs}\r\n");
                }
                if let Some((skipped, failed)) = link.from_redis {
                    let _ = write!(
                        out,
                        "slave_repl_skipped_commands:{skipped}\r\nslave_repl_failed_commands:{failed}\r\nslave_repl_halted:{}\r\n",
                        link.halted.as_deref().unwrap_or("")
                    );
                }
                let _ = write!(
                    out,
                    "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
                    cfg.replica_priority,
                    u8::from(cfg.replica_read_only),
                    u8::from(cfg.replica_announced)
                );
            }
            None => out.push_str("role:master\r\n"),
        }
        let _ = write!(out, "connected_slaves:{}\r\n", f.replicas.len());
        let (min, max_lag) = (cfg.min_replicas_to_write, cfg.min_replicas_max_lag);
        if min > 0 && max_lag > 0 {
            let _ = write!(out, "min_slaves_good_slaves:{}\r\n", f.good_replicas);
        }
        for (i, r) in f.replicas.iter().enumerate() {
            let _ = write!(
                out,
                "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
                r.ip, r.port, r.state, r.offset, r.lag_seconds
            );
        }
        let backlog = cfg.repl_backlog_size;
        let _ = write!(
            out,
            "master_failover_state:no-failover\r\nmaster_replid:{replid}\r\nmaster_replid2:{ZERO_ID}\r\nmaster_repl_offset:{offset}\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:1\r\nrepl_backlog_size:{backlog}\r\nrepl_backlog_first_byte_offset:1\r\nrepl_backlog_histlen:{offset}\r\n"
        );
    }
}

/// What INFO replication and the metrics endpoint report about replication, read once.
pub struct ReplicationFigures {
    /// The replication offset: the last sequence number written here (a leader) or applied
    /// from the leader (a replica).
    pub offset: u64,
    /// The replication id the data follows.
    pub replid: String,
    /// The link to the leader, on a replica.
    pub leader: Option<LeaderFigures>,
    /// The replicas attached now.
    pub replicas: Vec<ReplicaFigures>,
    /// Replicas within `min-replicas-max-lag`, at the last check.
    pub good_replicas: u64,
}

/// A load under way, for INFO's `loading_*` fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadingProgress {
    /// When it began (Unix seconds).
    pub start_time: u64,
    /// Bytes in all (0: not known).
    pub total_bytes: u64,
    /// Bytes read so far.
    pub loaded_bytes: u64,
}

impl LoadingProgress {
    /// `loading_loaded_perc` and `loading_eta_seconds` at Unix second `now`, computed as Redis
    /// 7.0's `genRedisInfoString` does (Strata never knows `loading_rdb_used_mem`).
    pub fn perc_and_eta(&self, now: u64) -> (f64, u64) {
        let (perc, remaining) = if self.total_bytes > 0 {
            (
                self.loaded_bytes as f64 / self.total_bytes as f64 * 100.0,
                self.total_bytes.saturating_sub(self.loaded_bytes),
            )
        } else {
            (0.0, 1)
        };
        let elapsed = now.saturating_sub(self.start_time);
        let eta = if elapsed == 0 {
            1
        } else {
            let eta =
                u128::from(elapsed) * u128::from(remaining) / (u128::from(self.loaded_bytes) + 1);
            u64::try_from(eta).unwrap_or(u64::MAX)
        };
        (perc, eta)
    }
}

/// A replica's view of its link to the leader.
pub struct LeaderFigures {
    /// The leader's host, as REPLICAOF gave it.
    pub host: String,
    /// The leader's port.
    pub port: u16,
    /// Whether the link is up.
    pub up: bool,
    /// The leader's offset, from its last heartbeat.
    pub leader_offset: u64,
    /// Seconds since anything arrived from the leader (None: nothing yet).
    pub last_io_seconds_ago: Option<u64>,
    /// Whether a copy is being loaded.
    pub loading: bool,
    /// Bytes of the copy read so far.
    pub sync_read_bytes: u64,
    /// Bytes of the copy in all: -1 before it is known, 0 when it is never told.
    pub sync_total_bytes: i64,
    /// Seconds since the copy last made progress.
    pub sync_last_io_seconds_ago: u64,
    /// Seconds the link has been down (None when up or never up).
    pub down_seconds: Option<u64>,
    /// With a Redis leader: the commands of its stream skipped (unknown here) and failed.
    pub from_redis: Option<(u64, u64)>,
    /// Why replication stopped at a command of a Redis leader it cannot apply.
    pub halted: Option<String>,
}

/// One attached replica, as a leader sees it.
pub struct ReplicaFigures {
    /// Its address.
    pub ip: String,
    /// Its listening port.
    pub port: u16,
    /// `wait_bgsave`, `send_bulk` or `online`.
    pub state: &'static str,
    /// The offset it last acknowledged.
    pub offset: u64,
    /// Seconds since its last acknowledgement.
    pub lag_seconds: u64,
}

/// Takes a connection that sent PSYNC or SYNC over (from the connection task): a plain socket
/// leaves tokio, a TLS one is relayed to a local socket (see `socket`); then Strata's own stream
/// (a replica that said `capa strata`) or an RDB file (any other).
pub fn take_over(
    server: Arc<Server>,
    stream: crate::stream::ClientStream,
    ip: String,
    req: PsyncRequest,
) {
    let socket = match stream {
        crate::stream::ClientStream::Plain(tcp) => tcp.into_std().map(socket::Socket::Tcp),
        crate::stream::ClientStream::Tls(tls) => socket::relay_tls(tls),
    };
    match socket {
        Ok(socket) if req.capa.strata => attach(server, socket, ip, req),
        Ok(socket) => rdb_feed::serve(server, socket, ip, req),
        Err(e) => crate::log::warning!("Can't hand a replica's connection over: {e}"),
    }
}

/// Starts following the leader named in the configuration (`replicaof` at start-up).
pub fn start_from_config(server: &Arc<Server>) {
    server.replication.load_redis_resume(&server.db);
    let configured = server.config().replicaof.clone();
    if let Some(leader) = configured {
        let _ = Replication::replicaof(server, Some(leader));
    }
}
