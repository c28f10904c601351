//! The server's shared state: the open database, the configuration (behind an `RwLock`, with the
//! settings the connection loop needs mirrored in atomics and a generation counter so connections
//! never lock per command), the client registry, statistics, the background save, the periodic
//! cron (coarse clock, ops/sec sampling, idle-client sweep) and the shutdown signal. [`ClientApi`]
//! implements `strata_commands::ServerApi` for one connection on top of it. No socket I/O here.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use strata_commands::{ChannelKind, KillFilter, ServerApi, Session, Subscriptions};
use strata_resp::{DecoderLimits, Frame};

use crate::config::{AppendFsync, Config};
use crate::log::{self, notice, warning};
use crate::registry::{ClientEntry, Registry};

/// Per-thread slice of the hot counters, on its own cache line so worker threads never contend.
#[repr(align(128))]
#[derive(Default)]
struct StatShard {
    commands: AtomicU64,
    net_in: AtomicU64,
    net_out: AtomicU64,
}

const STAT_SHARDS: usize = 16;

thread_local! {
    static SHARD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % STAT_SHARDS
    };
}

/// Server-wide counters reported by INFO stats. The per-command ones are sharded by thread and
/// added to once per read batch; INFO sums the shards.
#[derive(Default)]
pub struct ServerStats {
    shards: [StatShard; STAT_SHARDS],
    /// Connections accepted (including rejected ones).
    pub connections_received: AtomicU64,
    /// Connections refused because of maxclients.
    pub rejected_connections: AtomicU64,
}

impl ServerStats {
    /// Adds one read batch: commands executed, bytes read, bytes written.
    #[inline]
    pub fn add_batch(&self, commands: u64, input: u64, output: u64) {
        let shard = &self.shards[SHARD.with(|s| *s)];
        shard.commands.fetch_add(commands, Ordering::Relaxed);
        shard.net_in.fetch_add(input, Ordering::Relaxed);
        shard.net_out.fetch_add(output, Ordering::Relaxed);
    }

    fn sum(&self, f: impl Fn(&StatShard) -> &AtomicU64) -> u64 {
        self.shards
            .iter()
            .map(|s| f(s).load(Ordering::Relaxed))
            .sum()
    }

    /// total_commands_processed.
    pub fn commands_processed(&self) -> u64 {
        self.sum(|s| &s.commands)
    }

    /// total_net_input_bytes.
    pub fn net_input_bytes(&self) -> u64 {
        self.sum(|s| &s.net_in)
    }

    /// total_net_output_bytes.
    pub fn net_output_bytes(&self) -> u64 {
        self.sum(|s| &s.net_out)
    }

    fn reset(&self) {
        for s in &self.shards {
            for c in [&s.commands, &s.net_in, &s.net_out] {
                c.store(0, Ordering::Relaxed);
            }
        }
        self.connections_received.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
    }
}

/// Number of ops/sec samples averaged, as Redis's `STATS_METRIC_SAMPLES`.
const OPS_SAMPLES: usize = 16;

#[derive(Default)]
struct OpsSampler {
    last_ms: u64,
    last_count: u64,
    samples: [u64; OPS_SAMPLES],
    next: usize,
}

/// Settings the connection loop reads, mirrored from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct LiveSettings {
    /// Decoder limits (proto-max-bulk-len).
    pub limits: DecoderLimits,
    /// client-query-buffer-limit.
    pub query_buffer_limit: usize,
    /// client-output-buffer-limit of normal clients: hard bytes, soft bytes, soft seconds.
    pub output_limit: [u64; 3],
}

/// Everything the server shares between connections.
pub struct Server {
    /// The open data directory (database 0 selected).
    pub db: strata::Db,
    config: RwLock<Config>,
    /// Bumped after every successful CONFIG SET; connections refresh their cached settings when it changes.
    config_gen: AtomicU64,
    live: RwLock<LiveSettings>,
    maxclients: AtomicU64,
    timeout_secs: AtomicU64,
    /// The `requirepass` last given to the default user (it changes the user only when it
    /// changes itself, so ACL SETUSER default survives other CONFIG SETs).
    requirepass: RwLock<Option<Vec<u8>>>,
    /// The ACL users and the ACL LOG.
    pub acl: Arc<strata_commands::acl::Users>,
    /// The connected clients.
    pub registry: Registry,
    /// Clients blocked in BLPOP and the like.
    pub blocking: crate::blocking::Blocking,
    /// Keys watched by WATCH.
    pub watches: Arc<strata_commands::watch::Watches>,
    /// CLIENT TRACKING: the tracking clients and the keys they read.
    pub tracking: Arc<strata_commands::tracking::Tracking>,
    /// Lua scripts loaded by EVAL and SCRIPT LOAD.
    pub scripts: Arc<strata_commands::scripting::ScriptCache>,
    /// FUNCTION libraries, loaded from the data directory at start-up.
    pub functions: Arc<strata_commands::scripting::functions::FunctionRegistry>,
    /// Pub/sub subscriptions and message delivery.
    pub pubsub: crate::pubsub::Broker,
    /// Role, attached replicas, the link to the leader.
    pub replication: crate::replication::Replication,
    /// The TLS contexts in force.
    pub tls: crate::tls::Tls,
    /// The Prometheus metrics endpoint's sockets.
    pub metrics: crate::listener::Rebindable,
    /// The TLS port's sockets.
    pub tls_listeners: crate::listener::Rebindable,
    /// The enabled keyspace-event classes (`strata_commands::notify` bits; 0 = off).
    notify_flags: std::sync::atomic::AtomicU32,
    /// INFO stats counters.
    pub stats: ServerStats,
    /// INFO commandstats and errorstats (connections add theirs once per read batch).
    pub command_stats: strata_commands::command_stats::CommandStats,
    /// SLOWLOG.
    pub slowlog: strata_commands::slowlog::SlowLog,
    /// LATENCY's events.
    pub latency: strata_commands::latency::LatencyMonitor,
    /// The clients in MONITOR mode.
    pub monitors: crate::monitor::Monitors,
    /// CLIENT PAUSE.
    pub pause: crate::pause::Pause,
    /// Syncs the log for connections under `appendfsync always` (group commit).
    pub wal_sync: Arc<crate::wal_sync::WalSync>,
    clock_ms: AtomicU64,
    /// When the server started (monotonic).
    pub started: Instant,
    /// INFO run_id: 40 hex digits, new each start.
    pub run_id: String,
    /// The configuration file given on the command line (absolute).
    pub config_file: Option<PathBuf>,
    /// The TCP port.
    pub port: u16,
    ops: Mutex<OpsSampler>,
    ops_per_sec: AtomicU64,
    mem_peak: AtomicU64,
    /// Memory in use once the data directory was open (MEMORY STATS `startup.allocated`).
    pub mem_startup: u64,
    bgsave_running: AtomicBool,
    /// Whether writes were refused for lack of disk space at the last cron check (for logging).
    disk_full_seen: AtomicBool,
    /// RocksDB's cumulative write-stall time at the last sample (ms).
    stall_ms_seen: AtomicU64,
    bgsave_ok: AtomicBool,
    lastsave: AtomicU64,
    shutdown_tx: tokio::sync::watch::Sender<bool>,
}

impl Server {
    /// Shared state for a server on `db` configured by `config`.
    pub fn new(db: strata::Db, config: Config) -> Server {
        let now = strata::now_ms();
        let (shutdown_tx, _) = tokio::sync::watch::channel(false);
        let replication = crate::replication::Replication::open(db.path(), db.last_seq());
        let server = Server {
            wal_sync: crate::wal_sync::WalSync::start(db.clone()),
            db,
            live: RwLock::new(live_settings(&config)),
            maxclients: AtomicU64::new(config.maxclients),
            timeout_secs: AtomicU64::new(config.timeout),
            requirepass: RwLock::new(config_password(&config)),
            acl: Arc::default(),
            port: config.port,
            config_file: config.config_file.clone(),
            config: RwLock::new(config),
            config_gen: AtomicU64::new(0),
            registry: Registry::default(),
            blocking: crate::blocking::Blocking::default(),
            watches: Arc::default(),
            tracking: Arc::default(),
            scripts: Arc::default(),
            functions: Arc::default(),
            pubsub: crate::pubsub::Broker::default(),
            replication,
            tls: Default::default(),
            metrics: Default::default(),
            tls_listeners: Default::default(),
            notify_flags: std::sync::atomic::AtomicU32::new(0),
            stats: ServerStats::default(),
            command_stats: Default::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            monitors: Default::default(),
            pause: Default::default(),
            clock_ms: AtomicU64::new(now),
            started: Instant::now(),
            run_id: random_hex40(),
            ops: Mutex::new(OpsSampler {
                last_ms: now,
                ..OpsSampler::default()
            }),
            ops_per_sec: AtomicU64::new(0),
            mem_peak: AtomicU64::new(0),
            mem_startup: crate::figures::process_rss(),
            bgsave_running: AtomicBool::new(false),
            disk_full_seen: AtomicBool::new(false),
            stall_ms_seen: AtomicU64::new(0),
            bgsave_ok: AtomicBool::new(true),
            lastsave: AtomicU64::new(now / 1000),
            shutdown_tx,
        };
        server.sample_memory();
        server
            .acl
            .set_default_password(config_password(&server.config()).as_deref());
        server.mirror_settings(&server.config());
        server.replication.refresh_gate(&server.config());
        server
    }

    /// Mirrors settings into the shared objects that read them without the configuration lock:
    /// keyspace events, the pubsub output-buffer limits, and the script cache's
    /// `busy-reply-threshold`.
    fn mirror_settings(&self, cfg: &Config) {
        self.db
            .set_stream_node_max_entries(cfg.stream_node_max_entries);
        self.scripts.set_busy_threshold_ms(cfg.busy_reply_threshold);
        self.slowlog
            .configure(cfg.slowlog_log_slower_than, cfg.slowlog_max_len);
        self.latency.set_threshold(cfg.latency_monitor_threshold);
        self.command_stats.set_tracking(cfg.latency_tracking);
        self.acl.set_pubsub_default(
            cfg.acl_pubsub_default == crate::config::AclPubsubDefault::AllChannels,
        );
        self.acl
            .set_log_max(usize::try_from(cfg.acllog_max_len).unwrap_or(usize::MAX));
        self.notify_flags.store(
            strata_commands::notify::published(cfg.notify_keyspace_events),
            Ordering::Relaxed,
        );
        let [hard, soft, soft_secs] = cfg.client_output_buffer_limit.pubsub;
        self.pubsub.set_limits(crate::pubsub::Limits {
            hard,
            soft,
            soft_secs,
        });
        self.tracking.set_max_keys(cfg.tracking_table_max_keys);
    }

    /// Sends invalidation messages as Redis's `sendTrackingMessage`: to the tracking client, or
    /// to its REDIRECT client: a RESP3 connection gets a push (`invalidate` and the keys, or a
    /// null for every key), a RESP2 one subscribed to anything a message on
    /// `__redis__:invalidate`, anyone else nothing. When the REDIRECT client is gone, the
    /// tracking client is marked (`R`) and, in RESP3, gets `tracking-redir-broken`. The frames
    /// a client gets about its own keys are queued behind its reply in progress (see
    /// `connection.rs`), but for evictions from the table: Redis defers them the same way.
    pub fn deliver_tracking(&self, messages: Vec<strata_commands::tracking::Message>) {
        use crate::registry::tracking::BROKEN_REDIRECT;
        use strata_commands::tracking::{Payload, CHANNEL};
        if messages.is_empty() {
            return;
        }
        let [hard, soft, soft_secs] = self.live.read().output_limit;
        let normal = crate::pubsub::Limits {
            hard,
            soft,
            soft_secs,
        };
        let now = self.clock_ms();
        let resp3 = |c: &ClientEntry| c.resp.load(Ordering::Relaxed) >= 3;
        for m in messages {
            let Some(client) = self.registry.get(m.client) else {
                continue;
            };
            let (target, redirected) = match m.redirect {
                0 => (client, false),
                id => match self.registry.get(id) {
                    Some(r) => (r, true),
                    None => {
                        client.tracking.fetch_or(BROKEN_REDIRECT, Ordering::Relaxed);
                        if resp3(&client) {
                            let frame = Frame::Push(vec![
                                Frame::bulk("tracking-redir-broken"),
                                Frame::Integer(id as i64),
                            ]);
                            self.pubsub.push_invalidation(
                                &self.registry,
                                &client,
                                frame,
                                normal,
                                now,
                                true,
                            );
                        }
                        continue;
                    }
                },
            };
            let keys = match m.payload {
                Payload::Keys(keys) => Frame::Array(keys.into_iter().map(Frame::Bulk).collect()),
                Payload::All => Frame::Null,
            };
            let frame = if resp3(&target) {
                Frame::Push(vec![Frame::bulk("invalidate"), keys])
            } else if redirected && target.is_pubsub() {
                Frame::Push(vec![Frame::bulk("message"), Frame::bulk(CHANNEL), keys])
            } else {
                // RESP2 without a subscribed REDIRECT client: nowhere to send it.
                continue;
            };
            let after_reply = target.id == m.client && !m.evicted;
            self.pubsub
                .push_invalidation(&self.registry, &target, frame, normal, now, after_reply);
        }
    }

    /// Sends the BCAST invalidations due (one atomic load when there are none): after each
    /// batch of commands a connection ran, as Redis before each event-loop sleep.
    #[inline]
    pub fn send_broadcasts(&self) {
        if self.tracking.has_broadcasts() {
            self.deliver_tracking(self.tracking.take_broadcasts());
        }
    }

    /// A key was deleted because its time passed (the active expiry cycle, or a command that
    /// found it due while `expired` events are on): its keyspace event and its invalidation.
    pub fn key_expired(&self, db: u32, key: &[u8]) {
        self.notify(db, strata_commands::notify::EXPIRED, "expired", key);
        if self.tracking.is_active() {
            self.deliver_tracking(self.tracking.invalidate([key], None));
        }
    }

    /// The tracking work not tied to a command: the BCAST invalidations due (keys that expired)
    /// and the bound of the tracking table, which a CONFIG SET may have lowered (Redis does
    /// both from its event loop and cron).
    pub fn tracking_cron(&self) {
        self.send_broadcasts();
        if self.tracking.over_limit() {
            self.deliver_tracking(self.tracking.evict_over_limit());
        }
    }

    /// The enabled keyspace-event classes.
    #[inline]
    pub fn notify_flags(&self) -> u32 {
        self.notify_flags.load(Ordering::Relaxed)
    }

    /// Publishes keyspace event `event` of `class` on `key` of database `db`, on the channels
    /// the configuration enables (Redis's `notifyKeyspaceEvent`).
    pub fn notify(&self, db: u32, class: u32, event: &str, key: &[u8]) {
        use strata_commands::notify::{KEYEVENT, KEYSPACE};
        let flags = self.notify_flags();
        if flags & class == 0 || !self.pubsub.active() {
            return;
        }
        let now = self.clock_ms();
        if flags & KEYSPACE != 0 {
            let mut ch = Vec::with_capacity(20 + key.len());
            ch.extend_from_slice(format!("__keyspace@{db}__:").as_bytes());
            ch.extend_from_slice(key);
            let msg = Bytes::copy_from_slice(event.as_bytes());
            self.pubsub
                .publish(&self.registry, ChannelKind::Channel, &ch.into(), &msg, now);
        }
        if flags & KEYEVENT != 0 {
            let ch = Bytes::from(format!("__keyevent@{db}__:{event}"));
            let msg = Bytes::copy_from_slice(key);
            self.pubsub
                .publish(&self.registry, ChannelKind::Channel, &ch, &msg, now);
        }
    }

    /// Read access to the configuration.
    pub fn config(&self) -> RwLockReadGuard<'_, Config> {
        self.config.read()
    }

    fn config_mut(&self) -> RwLockWriteGuard<'_, Config> {
        self.config.write()
    }

    /// The configuration generation; changes after every successful CONFIG SET.
    #[inline]
    pub fn config_gen(&self) -> u64 {
        self.config_gen.load(Ordering::Acquire)
    }

    /// The settings connections cache.
    pub fn live_settings(&self) -> LiveSettings {
        *self.live.read()
    }

    /// The coarse clock (Unix ms), updated by the cron.
    #[inline]
    pub fn clock_ms(&self) -> u64 {
        self.clock_ms.load(Ordering::Relaxed)
    }

    /// maxclients.
    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Ordering::Relaxed) as usize
    }

    /// Whether protected mode refuses a client from `peer` (see `protected`).
    pub fn protected_refuses(&self, peer: SocketAddr) -> bool {
        crate::protected::refuses(
            self.config().protected_mode,
            self.acl.default_user().rules().nopass,
            peer.ip(),
        )
    }

    /// Whether new connections must AUTH (the default user has a password, or is off).
    pub fn needs_auth(&self) -> bool {
        self.acl.auth_required()
    }

    /// Creates the ACL users at start-up: the configuration's `user` lines, or the `aclfile`
    /// (Redis refuses both at once). The error is what Redis logs before exiting.
    pub fn load_users(&self) -> Result<(), String> {
        let cfg = self.config();
        if cfg.aclfile.is_some() && !cfg.users.is_empty() {
            return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
        }
        let lines: Vec<Vec<Bytes>> = cfg
            .users
            .iter()
            .map(|l| {
                l.iter()
                    .map(|w| Bytes::from(w.clone().into_bytes()))
                    .collect()
            })
            .collect();
        self.acl
            .load_configured(&lines)
            .map_err(|e| format!("{e}\nCritical error while loading ACLs. Exiting."))?;
        drop(cfg);
        if self.config().aclfile.is_some() {
            self.load_acl_file(0)
                .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        }
        Ok(())
    }

    /// ACL LOAD: the users of the `aclfile` replace the current ones, whose clients are
    /// disconnected (client `self_id`, the caller, once its reply is written).
    pub fn load_acl_file(&self, self_id: u64) -> Result<(), String> {
        let Some(file) = self.config().aclfile.clone() else {
            return Err(strata_commands::errors::ACL_NO_FILE.into());
        };
        let text = std::fs::read(&file).map_err(|e| {
            format!(
                "Error loading ACLs, opening file '{file}': {}",
                crate::config::os_error_text(&e)
            )
        })?;
        let fresh = self.acl.parse_file(&text, &file)?;
        for name in self.acl.replace_all(fresh) {
            let filter = KillFilter {
                user: Some(name),
                skip_me: false,
                ..KillFilter::default()
            };
            self.registry.kill(&filter, self_id);
        }
        Ok(())
    }

    /// After ACL SETUSER: the subscribed clients of `user` subscribed to a channel or pattern
    /// its new rules no longer allow are disconnected (Redis's `ACLKillPubsubClientsIfNeeded`);
    /// `self_id` (the caller) closes after its reply.
    pub fn kill_revoked_subscribers(&self, user: &[u8], self_id: u64) {
        let Some(u) = self.acl.get(user) else { return };
        let rules = u.rules();
        for id in self.registry.subscribers_of_user(user) {
            let revoked = [
                (ChannelKind::Channel, false),
                (ChannelKind::Shard, false),
                (ChannelKind::Pattern, true),
            ]
            .into_iter()
            .any(|(kind, pattern)| {
                self.pubsub
                    .subscribed(id, kind)
                    .iter()
                    .any(|ch| !rules.channel_allowed(ch, pattern))
            });
            if revoked {
                let filter = KillFilter {
                    id: Some(id),
                    skip_me: false,
                    ..KillFilter::default()
                };
                self.registry.kill(&filter, self_id);
            }
        }
    }

    /// ACL SAVE: writes every user to the `aclfile`, through a temporary file renamed over it.
    pub fn save_acl_file(&self) -> Result<(), String> {
        let Some(file) = self.config().aclfile.clone() else {
            return Err(strata_commands::errors::ACL_NO_FILE.into());
        };
        let temp = format!("{file}.tmp-{}-{}", std::process::id(), strata::now_ms());
        let written = std::fs::write(&temp, self.acl.file_text())
            .and_then(|()| std::fs::rename(&temp, &file));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            warning!("Writing ACL file for ACL SAVE: {e}");
            return Err(strata_commands::errors::ACL_SAVE_FAILED.into());
        }
        Ok(())
    }

    /// Whether a background save is running.
    pub fn bgsave_in_progress(&self) -> bool {
        self.bgsave_running.load(Ordering::Relaxed)
    }

    /// Whether the last background save succeeded.
    pub fn last_bgsave_ok(&self) -> bool {
        self.bgsave_ok.load(Ordering::Relaxed)
    }

    /// instantaneous_ops_per_sec.
    pub fn ops_per_sec(&self) -> u64 {
        self.ops_per_sec.load(Ordering::Relaxed)
    }

    /// Highest memory use seen.
    pub fn mem_peak(&self) -> u64 {
        self.mem_peak.load(Ordering::Relaxed)
    }

    /// Records the current memory use for used_memory_peak; returns it.
    pub fn sample_memory(&self) -> u64 {
        let rss = crate::figures::process_rss();
        self.mem_peak.fetch_max(rss, Ordering::Relaxed);
        rss
    }

    /// A receiver that sees `true` once shutdown has been requested.
    pub fn shutdown_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shutdown_tx.subscribe()
    }

    /// Asks the main task to stop the server.
    pub fn request_shutdown(&self) {
        self.shutdown_tx.send_replace(true);
    }

    /// Periodic work, called `hz` times a second: the coarse clock, ops/sec sampling; when
    /// `second_elapsed`, also the memory peak and the idle-client sweep.
    pub fn cron(&self, second_elapsed: bool) {
        let now = strata::now_ms();
        self.clock_ms.store(now, Ordering::Relaxed);
        {
            let mut s = self.ops.lock();
            let count = self.stats.commands_processed();
            let dt = now.saturating_sub(s.last_ms);
            if dt >= 100 {
                let ops = count.saturating_sub(s.last_count) * 1000 / dt;
                let i = s.next;
                s.samples[i] = ops;
                s.next = (i + 1) % OPS_SAMPLES;
                s.last_ms = now;
                s.last_count = count;
                let avg = s.samples.iter().sum::<u64>() / OPS_SAMPLES as u64;
                self.ops_per_sec.store(avg, Ordering::Relaxed);
            }
        }
        self.replication.cron(&self.config());
        self.tracking_cron();
        // CLIENT PAUSE holds the active expiry cycle back, as Redis's does.
        self.db.hold_expiry(self.pause.current(now).is_some());
        if second_elapsed {
            self.sample_memory();
            self.sample_latency_events();
            let full = self.db.disk_full();
            if self.disk_full_seen.swap(full, Ordering::Relaxed) != full {
                if full {
                    warning!("Free disk space is below min-free-disk: refusing writes (-MISCONF) until space is freed");
                } else {
                    notice!("Free disk space is back above min-free-disk: accepting writes again");
                }
            }
            let timeout = self.timeout_secs.load(Ordering::Relaxed);
            if timeout > 0 {
                let n = self.registry.kill_idle(timeout * 1000, now);
                if n > 0 {
                    log::verbose!("Closed {n} idle client(s) (timeout {timeout}s)");
                }
            }
        }
    }

    /// Adds the once-a-second latency samples: the slowest `appendfsync always` sync
    /// (`aof-fsync-always`), the slowest active expiry cycle (`expire-cycle`), and the time
    /// RocksDB held writes back during the last second (`rocksdb-write-stall`). Read even when
    /// the monitor is off, so a sample never covers more than a second.
    fn sample_latency_events(&self) {
        let fsync = self.wal_sync.take_slowest_ms();
        let expire = self.db.take_slowest_expire_cycle_ms();
        let stalled = self
            .db
            .write_stall_ms()
            .map(|total| total.saturating_sub(self.stall_ms_seen.swap(total, Ordering::Relaxed)));
        if self.latency.threshold() == 0 {
            return;
        }
        if self.db.sync_policy() == strata::SyncPolicy::Always {
            self.latency.add_if_needed("aof-fsync-always", fsync);
        }
        self.latency.add_if_needed("expire-cycle", expire);
        if let Some(ms) = stalled {
            self.latency.add_if_needed("rocksdb-write-stall", ms);
        }
    }

    /// Applies the live effects of the current configuration (after CONFIG SET).
    fn apply_config(&self) {
        let cfg = self.config();
        let settings = live_settings(&cfg);
        self.db.set_sync_policy(sync_policy(cfg.appendfsync));
        self.db
            .set_max_string_len(settings.limits.proto_max_bulk_len);
        self.db.set_hll_sparse_max_bytes(cfg.hll_sparse_max_bytes);
        self.db.set_wal_archive_limit(cfg.repl_backlog_size);
        *self.live.write() = settings;
        self.maxclients.store(cfg.maxclients, Ordering::Relaxed);
        self.timeout_secs.store(cfg.timeout, Ordering::Relaxed);
        let pass = config_password(&cfg);
        let mut last = self.requirepass.write();
        if *last != pass {
            self.acl.set_default_password(pass.as_deref());
            *last = pass;
        }
        drop(last);
        log::set_level(cfg.loglevel.name());
        self.mirror_settings(&cfg);
        self.replication.refresh_gate(&cfg);
        drop(cfg);
        self.config_gen.fetch_add(1, Ordering::Release);
    }

    /// `CONFIG SET`, all or nothing: a TLS file or parameter among the pairs rebuilds the TLS
    /// contexts (when TLS is on), and if that fails every value is restored, the old contexts
    /// stay, and the reply is Redis's. A new `tls-port` or metrics port is bound before
    /// anything changes, and replaces the old sockets only once everything succeeded.
    pub fn config_set(&self, pairs: &[(String, String)]) -> Result<(), String> {
        let mut cfg = self.config_mut();
        let before = cfg.clone();
        cfg.set_many(pairs)?;
        let refuse = |cfg: &mut Config, name: &str, why: &str| {
            *cfg = before.clone();
            Err(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
            ))
        };
        const NO_LISTEN: &str = "Unable to listen on this port. Check server logs.";
        const NO_TLS: &str = "Unable to update TLS configuration. Check server logs.";
        // A new metrics port or address is bound first: if it can't be, nothing changes.
        let metrics = match self.metrics.differs(&cfg.metrics_bind, cfg.metrics_port) {
            false => None,
            true => match crate::metrics::bind(&cfg.metrics_bind, cfg.metrics_port) {
                Ok(listeners) => Some(listeners),
                Err(e) => {
                    let name = pairs
                        .iter()
                        .map(|(n, _)| n.to_ascii_lowercase())
                        .find(|n| n.starts_with("metrics-"))
                        .unwrap_or_else(|| "metrics-port".to_string());
                    warning!("{e}");
                    return refuse(&mut cfg, &name, NO_LISTEN);
                }
            },
        };
        // A new tls-port (Redis's applyTLSPort): TLS is configured if it was not, then the
        // port is bound; either failing changes nothing.
        let tls_port = cfg.tls_port;
        let tls_socket = match self.tls_listeners.port() != tls_port {
            false => None,
            true => {
                if tls_port != 0 && self.tls.current().is_none() {
                    match crate::tls::configure(&cfg) {
                        Ok(contexts) => self.tls.install(contexts),
                        Err(e) => {
                            warning!("{e}");
                            return refuse(&mut cfg, "tls-port", NO_TLS);
                        }
                    }
                }
                match crate::listener::bind_entries(&cfg.bind, tls_port) {
                    Ok(listeners) if tls_port == 0 || !listeners.is_empty() => Some(listeners),
                    Ok(_) => return refuse(&mut cfg, "tls-port", NO_LISTEN),
                    Err(e) => {
                        warning!("{e}");
                        return refuse(&mut cfg, "tls-port", NO_LISTEN);
                    }
                }
            }
        };
        let tls_change = pairs.iter().find(|(n, _)| crate::tls::is_tls_parameter(n));
        if let Some((name, _)) = tls_change.filter(|_| crate::tls::wanted(&cfg)) {
            match crate::tls::configure(&cfg) {
                Ok(contexts) => self.tls.install(contexts),
                Err(e) => {
                    let name = name.to_ascii_lowercase();
                    warning!("{e}");
                    warning!("Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings.");
                    *cfg = before;
                    return Err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - Unable to update TLS configuration. Check server logs."));
                }
            }
        }
        if let Some(listeners) = metrics {
            self.metrics
                .install(&cfg.metrics_bind, cfg.metrics_port, listeners);
        }
        if let Some(listeners) = tls_socket {
            self.tls_listeners.install(&cfg.bind, tls_port, listeners);
        }
        drop(cfg);
        self.apply_config();
        Ok(())
    }

    /// Records the leader REPLICAOF set, for CONFIG GET/REWRITE.
    pub fn set_replicaof(&self, leader: Option<(&str, u16)>) {
        self.config_mut().set_replicaof(leader);
    }

    /// PUBLISH / SPUBLISH: delivers to this server's subscribers and hands the message to the
    /// attached replicas; returns how many subscribers here received it.
    pub fn publish(&self, kind: ChannelKind, channel: &Bytes, message: &Bytes) -> usize {
        self.replication.propagate_publish(kind, channel, message);
        self.pubsub
            .publish(&self.registry, kind, channel, message, self.clock_ms())
    }

    /// Loads the FUNCTION libraries saved in the data directory (at start-up, and on a replica
    /// after its leader changed them).
    pub fn reload_functions(&self) -> Result<(), String> {
        use strata_commands::scripting::functions::RestorePolicy;
        let record = strata_commands::script_family::FUNCTIONS_RECORD;
        match self.db.aux_get(record).map_err(|e| e.to_string())? {
            Some(saved) => self.functions.restore(&saved, RestorePolicy::Flush),
            None => {
                self.functions.flush();
                Ok(())
            }
        }
    }

    /// Zeroes the INFO stats counters (CONFIG RESETSTAT).
    pub fn reset_stats(&self) {
        self.stats.reset();
        self.command_stats.reset();
        let d = self.db.stats();
        for c in [&d.expired_keys, &d.keyspace_hits, &d.keyspace_misses] {
            c.store(0, Ordering::Relaxed);
        }
        let mut ops = self.ops.lock();
        *ops = OpsSampler {
            last_ms: strata::now_ms(),
            ..OpsSampler::default()
        };
        self.ops_per_sec.store(0, Ordering::Relaxed);
    }

    /// LASTSAVE: Unix seconds of the last successful save (the start time before any).
    pub fn lastsave(&self) -> u64 {
        self.lastsave.load(Ordering::Relaxed)
    }

    /// SAVE: writes the checkpoint BGSAVE would, in the calling thread (refused while a
    /// background save runs, as in Redis).
    pub fn save(&self) -> Result<(), String> {
        if self.bgsave_running.swap(true, Ordering::AcqRel) {
            return Err("ERR Background save already in progress".into());
        }
        let parent = self.config().bgsave_path();
        let saved = self.checkpoint_into(&parent);
        self.bgsave_running.store(false, Ordering::Release);
        match saved {
            Ok(dest) => {
                notice!("DB saved on disk ({})", dest.display());
                self.lastsave
                    .store(strata::now_ms() / 1000, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                warning!("Error saving DB on disk: {e}");
                Err("ERR".into())
            }
        }
    }

    /// BGSAVE: writes a checkpoint to `<dir>/<bgsave-dir>/checkpoint-<unix ms>` in a background
    /// thread, keeping the newest two checkpoints.
    pub fn bgsave(self: &std::sync::Arc<Self>) -> Result<(), String> {
        if self.bgsave_running.swap(true, Ordering::AcqRel) {
            return Err("ERR Background save already in progress".into());
        }
        let parent = self.config().bgsave_path();
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("strata-bgsave".into())
            .spawn(move || {
                let ok = match me.checkpoint_into(&parent) {
                    Ok(dest) => {
                        notice!(
                            "Background saving terminated with success ({})",
                            dest.display()
                        );
                        me.lastsave
                            .store(strata::now_ms() / 1000, Ordering::Relaxed);
                        true
                    }
                    Err(e) => {
                        warning!("Background saving error: {e}");
                        false
                    }
                };
                me.bgsave_ok.store(ok, Ordering::Relaxed);
                me.bgsave_running.store(false, Ordering::Release);
            });
        match spawned {
            Ok(_) => {
                notice!("Background saving started");
                Ok(())
            }
            Err(e) => {
                self.bgsave_running.store(false, Ordering::Release);
                Err(format!("ERR Can't start background save: {e}"))
            }
        }
    }

    fn checkpoint_into(&self, parent: &std::path::Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let mut ms = strata::now_ms();
        let mut dest = parent.join(format!("checkpoint-{ms}"));
        while dest.exists() {
            ms += 1;
            dest = parent.join(format!("checkpoint-{ms}"));
        }
        self.db.checkpoint(&dest).map_err(|e| e.to_string())?;
        prune_checkpoints(parent, 2);
        Ok(dest)
    }
}

/// Deletes all but the newest `keep` `checkpoint-<ms>` directories in `parent`.
fn prune_checkpoints(parent: &std::path::Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let ms = name.to_str()?.strip_prefix("checkpoint-")?.parse().ok()?;
            Some((ms, e.path()))
        })
        .collect();
    found.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
    for (_, path) in found.into_iter().skip(keep) {
        if let Err(e) = std::fs::remove_dir_all(&path) {
            warning!("Could not remove old checkpoint {}: {e}", path.display());
        }
    }
}

fn live_settings(cfg: &Config) -> LiveSettings {
    LiveSettings {
        limits: DecoderLimits {
            proto_max_bulk_len: cfg.proto_max_bulk_len,
            ..DecoderLimits::default()
        },
        query_buffer_limit: usize::try_from(cfg.client_query_buffer_limit).unwrap_or(usize::MAX),
        output_limit: cfg.client_output_buffer_limit.normal,
    }
}

/// `requirepass` as the default user's password: None (no password) when empty.
fn config_password(cfg: &Config) -> Option<Vec<u8>> {
    cfg.requirepass
        .clone()
        .filter(|p| !p.is_empty())
        .map(String::into_bytes)
}

/// The storage sync policy for an `appendfsync` setting.
pub fn sync_policy(a: AppendFsync) -> strata::SyncPolicy {
    match a {
        AppendFsync::Always => strata::SyncPolicy::Always,
        AppendFsync::EverySec => strata::SyncPolicy::EverySec,
        AppendFsync::No => strata::SyncPolicy::No,
    }
}

/// 40 random hex digits (INFO run_id).
pub(crate) fn random_hex40() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(40);
    let mut i = 0u64;
    while out.len() < 40 {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(strata::now_ms());
        h.write_u32(std::process::id());
        h.write_u64(i);
        out.push_str(&format!("{:016x}", h.finish()));
        i += 1;
    }
    out.truncate(40);
    out
}

/// The server as one connection sees it: forwards to [`Server`], and updates that connection's
/// registry entry directly (no lookup by id).
pub struct ClientApi<'a> {
    /// The shared server.
    pub server: &'a std::sync::Arc<Server>,
    /// This connection's registry entry.
    pub client: &'a ClientEntry,
}

impl ServerApi for ClientApi<'_> {
    fn requirepass(&self) -> Option<Vec<u8>> {
        self.server.requirepass.read().clone()
    }

    fn acl(&self) -> &Arc<strata_commands::acl::Users> {
        &self.server.acl
    }

    fn acl_load(&self) -> Result<(), String> {
        self.server
            .load_acl_file(self.client.id)
            .map_err(|e| match e.starts_with("ERR ") {
                true => e,
                false => format!("ERR {e}"),
            })
    }

    fn acl_save(&self) -> Result<(), String> {
        self.server.save_acl_file()
    }

    fn acl_user_changed(&self, user: &[u8]) {
        self.server.kill_revoked_subscribers(user, self.client.id)
    }

    fn config_get(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        self.server.config().get(patterns)
    }

    fn config_set(&self, pairs: &[(String, String)]) -> Result<(), String> {
        self.server.config_set(pairs)
    }

    fn config_rewrite(&self) -> Result<(), String> {
        // The users are written as `user` lines when they have no `aclfile` of their own.
        let users: Vec<Vec<String>> = self
            .server
            .acl
            .all()
            .iter()
            .map(|u| {
                vec![
                    String::from_utf8_lossy(u.name()).into_owned(),
                    u.rules().describe(),
                ]
            })
            .collect();
        let mut cfg = self.server.config_mut();
        if cfg.aclfile.is_none() {
            cfg.users = users;
        }
        drop(cfg);
        self.server.config().rewrite()
    }

    fn reset_stats(&self) {
        self.server.reset_stats()
    }

    fn info(&self, _session: &Session, sections: &[String]) -> String {
        crate::info::render(self.server, sections)
    }

    fn client_list(&self, ids: Option<&[u64]>, kind: Option<&str>) -> String {
        self.server.registry.list(ids, kind, strata::now_ms())
    }

    fn client_info(&self, session: &Session) -> String {
        self.client_update(session);
        let mut line = self.client.line(strata::now_ms());
        line.push('\n');
        line
    }

    fn client_update(&self, session: &Session) {
        let c = self.client;
        c.db.store(session.db.index(), Ordering::Relaxed);
        c.resp
            .store(session.protocol.version() as u8, Ordering::Relaxed);
        *c.name.lock() = session.name.clone();
        if *c.user.lock() != *session.user.name() {
            *c.user.lock() = session.user.name().clone();
        }
        c.no_evict.store(session.no_evict, Ordering::Relaxed);
        c.set_multi(session);
    }

    fn client_kill(&self, filter: &KillFilter, self_id: u64) -> usize {
        self.server.registry.kill(filter, self_id)
    }

    fn bgsave(&self) -> Result<(), String> {
        self.server.bgsave()
    }

    fn save(&self) -> Result<(), String> {
        self.server.save()
    }

    fn lastsave(&self) -> u64 {
        self.server.lastsave()
    }

    fn shutdown(&self) -> Result<(), String> {
        self.server.request_shutdown();
        Ok(())
    }

    #[inline]
    fn note_command(&self, _session: &Session, name: &str) {
        self.client.set_cmd(name);
    }

    fn key_ready(&self, db: u32, key: &[u8]) {
        self.server.blocking.signal(self.server, db, key);
    }

    fn blocked_keys(&self) -> Vec<(u32, Bytes)> {
        self.server.blocking.blocked_keys()
    }

    fn watches(&self) -> &Arc<strata_commands::watch::Watches> {
        &self.server.watches
    }

    fn tracking(&self) -> &Arc<strata_commands::tracking::Tracking> {
        &self.server.tracking
    }

    fn deliver_tracking(&self, messages: Vec<strata_commands::tracking::Message>) {
        self.server.deliver_tracking(messages)
    }

    fn client_exists(&self, id: u64) -> bool {
        self.server.registry.get(id).is_some()
    }

    fn tracking_redirect_broken(&self) -> bool {
        use crate::registry::tracking::BROKEN_REDIRECT;
        self.client.tracking.load(Ordering::Relaxed) & BROKEN_REDIRECT != 0
    }

    fn tracking_changed(&self, session: &Session) {
        use crate::registry::tracking::{BCAST, ON};
        let (bits, redir) = match session.tracking {
            Some(m) => (ON | if m.bcast { BCAST } else { 0 }, m.redirect as i64),
            None => (0, -1),
        };
        // Turning tracking on (again) or off clears `R`, as Redis's enableTracking does.
        self.client.tracking.store(bits, Ordering::Relaxed);
        self.client.redir.store(redir, Ordering::Relaxed);
    }

    fn scripts(&self) -> &Arc<strata_commands::scripting::ScriptCache> {
        &self.server.scripts
    }

    fn functions(&self) -> &Arc<strata_commands::scripting::functions::FunctionRegistry> {
        &self.server.functions
    }

    #[inline]
    fn has_blocked_clients(&self) -> bool {
        self.server.blocking.active()
    }

    fn subscribe(&self, kind: ChannelKind, name: &Bytes) -> Subscriptions {
        let client = self.server.registry.get(self.client.id);
        match client {
            Some(c) => self.server.pubsub.subscribe(&c, kind, name),
            None => Subscriptions::default(),
        }
    }

    fn unsubscribe(&self, kind: ChannelKind, name: &Bytes) -> Subscriptions {
        self.server.pubsub.unsubscribe(self.client, kind, name)
    }

    fn subscribed(&self, kind: ChannelKind) -> Vec<Bytes> {
        self.server.pubsub.subscribed(self.client.id, kind)
    }

    fn publish(&self, kind: ChannelKind, channel: &Bytes, message: &Bytes) -> usize {
        self.server.publish(kind, channel, message)
    }

    fn replicaof(&self, leader: Option<(String, u16)>) -> Result<&'static str, String> {
        crate::replication::Replication::replicaof(self.server, leader)
    }

    fn role(&self) -> Frame {
        self.server.replication.role(self.server)
    }

    fn wait_replicas(&self, numreplicas: u64, timeout_ms: u64) -> Result<u64, String> {
        self.server
            .replication
            .wait(self.server, numreplicas, timeout_ms)
    }

    #[inline]
    fn refusal(&self, spec: &strata_commands::command::CommandSpec) -> Option<Frame> {
        self.server.replication.refusal(spec)
    }

    /// The link to a Redis leader runs its scripts as sent, as Redis's master client does.
    fn script_write_refusal(&self) -> Option<Frame> {
        if self
            .client
            .master
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return None;
        }
        self.server.replication.script_write_refusal()
    }

    fn pubsub_channels(&self, kind: ChannelKind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.server.pubsub.channels(kind, pattern)
    }

    fn pubsub_numsub(&self, kind: ChannelKind, channel: &[u8]) -> usize {
        self.server.pubsub.numsub(kind, channel)
    }

    fn pubsub_numpat(&self) -> usize {
        self.server.pubsub.numpat()
    }

    #[inline]
    fn notify_flags(&self) -> u32 {
        self.server.notify_flags()
    }

    fn notify(&self, db: u32, class: u32, event: &str, key: &[u8]) {
        self.server.notify(db, class, event, key)
    }

    fn slowlog(&self) -> &strata_commands::slowlog::SlowLog {
        &self.server.slowlog
    }

    fn latency(&self) -> &strata_commands::latency::LatencyMonitor {
        &self.server.latency
    }

    fn memory_overhead(&self) -> strata_commands::memory_overhead::MemoryOverhead {
        crate::figures::memory_overhead(self.server)
    }

    fn memory_purge(&self) {
        crate::allocator::purge();
    }

    fn command_stats(&self) -> &strata_commands::command_stats::CommandStats {
        &self.server.command_stats
    }

    fn peer_id(&self) -> String {
        self.client.addr.clone()
    }

    #[inline]
    fn monitoring(&self) -> bool {
        self.server.monitors.active()
    }

    fn feed_monitors(&self, line: String) {
        self.server.monitors.feed(line)
    }

    fn start_monitor(&self) {
        if let Some(c) = self.server.registry.get(self.client.id) {
            self.server.monitors.add(c);
        }
    }

    fn stop_monitor(&self) {
        self.server.monitors.remove(self.client.id);
    }

    fn client_pause(&self, end_ms: u64, write_only: bool) {
        self.server.pause.pause(end_ms, write_only);
        self.server.db.hold_expiry(true);
    }

    fn client_unpause(&self) {
        self.server.pause.unpause();
        self.server.db.hold_expiry(false);
    }

    fn client_unblock(&self, id: u64, error: bool) -> bool {
        let reply = if error {
            Frame::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
        } else {
            Frame::NullArray
        };
        self.server.blocking.unblock(id, reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_is_40_hex_digits() {
        let id = random_hex40();
        assert_eq!(id.len(), 40);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn prune_keeps_the_newest_checkpoints() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        for ms in [100, 300, 200, 50] {
            std::fs::create_dir(dir.path().join(format!("checkpoint-{ms}")))?;
        }
        std::fs::create_dir(dir.path().join("other"))?;
        prune_checkpoints(dir.path(), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["checkpoint-200", "checkpoint-300", "other"]);
        Ok(())
    }
}
