//! The directive table: every directive Strata accepts, one row each, with its name and
//! aliases, the kind of value it takes (with bounds), its default (written as `CONFIG SET`
//! would take it), who may change it at runtime, and where its value lives: a typed field of
//! [`Settings`] for the directives Strata acts on, or nowhere in particular for the Redis 7.0
//! directives that change nothing in Strata (they are accepted, validated, stored and reported
//! like Redis does; docs/differences.md lists them). A directive is spelled once, here.

use super::kinds::{Kind, Value, GB, MB};
use super::settings::{
    AclPubsubDefault, Allowed, AppendFsync, Compression, LogLevel, MemoryTier, Setting, Settings,
    TlsAuthClients,
};
use super::special::Special;

/// One row of the directive table.
pub(super) struct Directive {
    pub(super) name: &'static str,
    pub(super) aliases: &'static [&'static str],
    pub(super) kind: Kind,
    /// The default, as a `CONFIG SET` value.
    pub(super) default: &'static str,
    pub(super) access: Access,
    pub(super) home: Home,
}

/// Who may change a directive while the server runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// `CONFIG SET` may change it.
    Mutable,
    /// Only the config file and the command line set it.
    Immutable,
    /// Redis may change it at runtime but Strata can't: `CONFIG SET` to the current value is
    /// accepted (it changes nothing, as in Redis), any other value is refused as immutable.
    Fixed,
    /// `CONFIG SET` may change it only where `enable-protected-configs` allows (Redis's
    /// PROTECTED_CONFIG).
    Protected,
    /// Protected, and Strata can't change it at runtime even where that is allowed.
    ProtectedFixed,
    /// Mutable, but `CONFIG GET` only reports it when asked by its exact name.
    Hidden,
}

/// Where a directive's value lives.
#[derive(Clone, Copy)]
pub(super) enum Home {
    /// A typed field of [`Settings`].
    Field(Field),
    /// Nowhere in particular: the value is kept for `CONFIG GET`/`REWRITE` and changes nothing.
    Inert,
}

/// Reads and writes one field of [`Settings`] as a [`Value`].
#[derive(Clone, Copy)]
pub(super) struct Field {
    pub(super) get: fn(&Settings) -> Value,
    /// Returns false if the value is not of the field's type.
    pub(super) set: fn(&mut Settings, Value) -> bool,
}

/// Binds a row to the field of [`Settings`] with that name.
macro_rules! field {
    ($name:ident) => {
        Home::Field(Field {
            get: |s| Setting::to_value(&s.$name),
            set: |s, v| match Setting::from_value(v) {
                Some(x) => {
                    s.$name = x;
                    true
                }
                None => false,
            },
        })
    };
}

const INERT: Home = Home::Inert;

const fn row(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    default: &'static str,
    access: Access,
    home: Home,
) -> Directive {
    Directive {
        name,
        aliases,
        kind,
        default,
        access,
        home,
    }
}

const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;
const UINT_MAX: i64 = u32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
const ULLONG_MAX: u64 = u64::MAX;

const SUPERVISED: &[&str] = &["upstart", "systemd", "auto", "no"];
const SYSLOG_FACILITY: &[&str] = &[
    "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
];
const REPL_DISKLESS_LOAD: &[&str] = &["disabled", "on-empty-db", "swapdb"];
const MAXMEMORY_POLICY: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
const OOM_SCORE_ADJ: &[&str] = &["no", "yes", "relative", "absolute"];
const SANITIZE_DUMP_PAYLOAD: &[&str] = &["no", "yes", "clients"];
const CLUSTER_PREFERRED_ENDPOINT_TYPE: &[&str] = &["ip", "hostname", "unknown-endpoint"];
const PROPAGATION_ERROR_BEHAVIOR: &[&str] = &["ignore", "panic", "panic-on-replicas"];

use Access::{Fixed, Hidden, Immutable, Mutable, Protected, ProtectedFixed};
use Kind::{Bool, Enum, Int, Memory, Octal, Percent, Special as Sp, Str};

/// Every directive Strata knows.
#[rustfmt::skip]
pub(super) const DIRECTIVES: &[Directive] = &[
    // Directives Strata acts on.
    row("port", &[], Int { min: 0, max: 65535 }, "6379", Fixed, field!(port)),
    row("bind", &[], Sp(Special::Bind), "127.0.0.1", Fixed, field!(bind)),
    row("dir", &[], Str(non_empty), "./data", ProtectedFixed, field!(dir)),
    row("requirepass", &[], Str(any), "", Mutable, field!(requirepass)),
    row("appendfsync", &[], Enum(AppendFsync::NAMES), "everysec", Mutable, field!(appendfsync)),
    // At most 256: a key's database id is stored on disk as a single byte.
    row("databases", &[], Int { min: 1, max: 256 }, "16", Immutable, field!(databases)),
    row("maxclients", &[], Int { min: 1, max: UINT_MAX }, "10000", Mutable, field!(maxclients)),
    row("timeout", &[], Int { min: 0, max: INT_MAX }, "0", Mutable, field!(timeout)),
    row("loglevel", &[], Enum(LogLevel::NAMES), "notice", Mutable, field!(loglevel)),
    row("logfile", &[], Str(any), "", Immutable, field!(logfile)),
    row("hll-sparse-max-bytes", &[], Memory { min: 0, max: LONG_MAX as u64 }, "3000", Mutable, field!(hll_sparse_max_bytes)),
    row("proto-max-bulk-len", &[], Memory { min: MB, max: LONG_MAX as u64 }, "512mb", Mutable, field!(proto_max_bulk_len)),
    row("client-query-buffer-limit", &[], Memory { min: MB, max: LONG_MAX as u64 }, "1gb", Mutable, field!(client_query_buffer_limit)),
    row("client-output-buffer-limit", &[], Sp(Special::OutputBufferLimit), "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", Mutable, field!(client_output_buffer_limit)),
    row("hz", &[], Sp(Special::Hz), "10", Mutable, field!(hz)),
    row("tcp-keepalive", &[], Int { min: 0, max: INT_MAX }, "300", Mutable, field!(tcp_keepalive)),
    row("busy-reply-threshold", &["lua-time-limit"], Int { min: 0, max: LONG_MAX }, "5000", Mutable, field!(busy_reply_threshold)),
    row("notify-keyspace-events", &[], Sp(Special::KeyspaceEvents), "", Mutable, field!(notify_keyspace_events)),
    // Strata's storage knobs. RocksDB clamps write buffers to 64kb..=64gb.
    row("block-cache-size", &[], Memory { min: 0, max: LONG_MAX as u64 }, "256mb", Fixed, field!(block_cache_size)),
    row("hot-cache-size", &[], Percent { min: -100, max: LONG_MAX }, "25%", Fixed, field!(hot_cache_size)),
    row("memory-tier", &[], Enum(MemoryTier::NAMES), "write-back", Fixed, field!(memory_tier)),
    row("memory-tier-dirty-size", &[], Memory { min: 64 * 1024, max: LONG_MAX as u64 }, "64mb", Fixed, field!(memory_tier_dirty_size)),
    row("write-buffer-size", &[], Memory { min: 64 * 1024, max: 64 * GB }, "16mb", Fixed, field!(write_buffer_size)),
    row("min-free-disk", &[], Memory { min: 0, max: LONG_MAX as u64 }, "256mb", Fixed, field!(min_free_disk)),
    row("compression", &[], Enum(Compression::NAMES), "lz4", Fixed, field!(compression)),
    // The engine's layout and background work for data larger than memory
    // (docs/architecture.md, "Cold data"); defaults from bench/cold.py.
    row("partitioned-index", &[], Bool, "no", Fixed, field!(partitioned_index)),
    row("index-high-priority", &[], Bool, "no", Fixed, field!(index_high_priority)),
    row("uncompressed-levels", &[], Int { min: 0, max: 7 }, "0", Fixed, field!(uncompressed_levels)),
    row("zstd-dictionary-size", &[], Memory { min: 0, max: GB }, "0", Fixed, field!(zstd_dictionary_size)),
    row("compaction-rate-limit", &[], Memory { min: 0, max: LONG_MAX as u64 }, "0", Fixed, field!(compaction_rate_limit)),
    row("direct-io-background", &[], Bool, "no", Fixed, field!(direct_io_background)),
    row("direct-io-reads", &[], Bool, "no", Fixed, field!(direct_io_reads)),
    row("background-jobs", &[], Int { min: 1, max: 256 }, "2", Fixed, field!(background_jobs)),
    row("l0-slowdown-writes-trigger", &[], Int { min: 1, max: 1024 }, "20", Fixed, field!(l0_slowdown_writes_trigger)),
    row("l0-stop-writes-trigger", &[], Int { min: 1, max: 1024 }, "36", Fixed, field!(l0_stop_writes_trigger)),
    row("blob-min-size", &[], Memory { min: 0, max: LONG_MAX as u64 }, "0", Fixed, field!(blob_min_size)),
    row("bgsave-dir", &[], Str(non_empty), "backup", Mutable, field!(bgsave_dir)),
    // The Prometheus metrics endpoint (docs/monitoring.md); a change at runtime re-listens.
    row("metrics-port", &[], Int { min: 0, max: 65535 }, "0", Mutable, field!(metrics_port)),
    row("metrics-bind", &[], Sp(Special::Bind), "127.0.0.1", Mutable, field!(metrics_bind)),
    // Replication. REPLICAOF changes `replicaof` at runtime (so CONFIG REWRITE keeps the role).
    row("replicaof", &["slaveof"], Sp(Special::ReplicaOf), "", Immutable, field!(replicaof)),
    row("masterauth", &[], Str(any), "", Mutable, field!(masterauth)),
    row("masteruser", &[], Str(any), "", Mutable, field!(masteruser)),
    row("replica-serve-stale-data", &["slave-serve-stale-data"], Bool, "yes", Mutable, field!(replica_serve_stale_data)),
    row("replica-read-only", &["slave-read-only"], Bool, "yes", Mutable, field!(replica_read_only)),
    row("replica-priority", &["slave-priority"], Int { min: 0, max: INT_MAX }, "100", Mutable, field!(replica_priority)),
    row("replica-announced", &[], Bool, "yes", Mutable, field!(replica_announced)),
    row("min-replicas-to-write", &["min-slaves-to-write"], Int { min: 0, max: INT_MAX }, "0", Mutable, field!(min_replicas_to_write)),
    row("min-replicas-max-lag", &["min-slaves-max-lag"], Int { min: 0, max: INT_MAX }, "10", Mutable, field!(min_replicas_max_lag)),
    row("repl-timeout", &[], Int { min: 1, max: INT_MAX }, "60", Mutable, field!(repl_timeout)),
    // Strata keeps its replication backlog as write-ahead-log files (see docs/replication.md):
    // the size and age bounds apply when the data directory opens.
    row("repl-backlog-size", &[], Memory { min: 16 * 1024, max: LONG_MAX as u64 }, "256mb", Mutable, field!(repl_backlog_size)),
    row("repl-backlog-ttl", &[], Int { min: 0, max: INT_MAX }, "3600", Fixed, field!(repl_backlog_ttl)),
    row("enable-protected-configs", &[], Enum(Allowed::NAMES), "no", Immutable, field!(enable_protected_configs)),
    // Redis 7.0 directives that change nothing in Strata, with Redis's kinds, bounds, defaults
    // and access (from Redis 7.0.15's config.c).
    row("rdbchecksum", &[], Bool, "yes", Immutable, INERT),
    row("daemonize", &[], Sp(Special::Daemonize), "no", Immutable, INERT),
    row("io-threads-do-reads", &[], Bool, "no", Immutable, INERT),
    row("always-show-logo", &[], Bool, "no", Immutable, INERT),
    row("protected-mode", &[], Bool, "yes", Mutable, field!(protected_mode)),
    row("rdbcompression", &[], Bool, "yes", Mutable, INERT),
    row("rdb-del-sync-files", &[], Bool, "no", Mutable, INERT),
    row("activerehashing", &[], Bool, "yes", Mutable, INERT),
    row("stop-writes-on-bgsave-error", &[], Bool, "yes", Mutable, INERT),
    row("set-proc-title", &[], Bool, "yes", Immutable, INERT),
    row("dynamic-hz", &[], Bool, "yes", Mutable, INERT),
    row("lazyfree-lazy-eviction", &[], Bool, "no", Mutable, INERT),
    row("lazyfree-lazy-expire", &[], Bool, "no", Mutable, INERT),
    row("lazyfree-lazy-server-del", &[], Bool, "no", Mutable, INERT),
    row("lazyfree-lazy-user-del", &[], Bool, "no", Mutable, INERT),
    row("lazyfree-lazy-user-flush", &[], Bool, "no", Mutable, INERT),
    row("repl-disable-tcp-nodelay", &[], Bool, "no", Mutable, INERT),
    row("repl-diskless-sync", &[], Bool, "yes", Mutable, INERT),
    row("aof-rewrite-incremental-fsync", &[], Bool, "yes", Mutable, INERT),
    row("no-appendfsync-on-rewrite", &[], Bool, "no", Mutable, INERT),
    row("cluster-require-full-coverage", &[], Bool, "yes", Mutable, INERT),
    row("rdb-save-incremental-fsync", &[], Bool, "yes", Mutable, INERT),
    row("aof-load-truncated", &[], Bool, "yes", Mutable, INERT),
    row("aof-use-rdb-preamble", &[], Bool, "yes", Mutable, INERT),
    row("aof-timestamp-enabled", &[], Bool, "no", Mutable, INERT),
    row("cluster-replica-no-failover", &["cluster-slave-no-failover"], Bool, "no", Mutable, INERT),
    row("replica-lazy-flush", &["slave-lazy-flush"], Bool, "no", Mutable, INERT),
    row("replica-ignore-maxmemory", &["slave-ignore-maxmemory"], Bool, "yes", Mutable, INERT),
    row("jemalloc-bg-thread", &[], Bool, "yes", Mutable, INERT),
    row("activedefrag", &[], Sp(Special::ActiveDefrag), "no", Mutable, INERT),
    row("syslog-enabled", &[], Bool, "no", Immutable, INERT),
    row("cluster-enabled", &[], Bool, "no", Immutable, INERT),
    row("appendonly", &[], Bool, "no", Mutable, INERT),
    row("cluster-allow-reads-when-down", &[], Bool, "no", Mutable, INERT),
    row("cluster-allow-pubsubshard-when-down", &[], Bool, "yes", Mutable, INERT),
    row("crash-log-enabled", &[], Bool, "yes", Mutable, INERT),
    row("crash-memcheck-enabled", &[], Bool, "yes", Mutable, INERT),
    row("use-exit-on-panic", &[], Bool, "no", Hidden, INERT),
    row("disable-thp", &[], Bool, "yes", Immutable, field!(disable_thp)),
    row("cluster-allow-replica-migration", &[], Bool, "yes", Mutable, INERT),
    row("latency-tracking", &[], Bool, "yes", Mutable, field!(latency_tracking)),
    row("aof-disable-auto-gc", &[], Bool, "no", Mutable, INERT),
    row("replica-ignore-disk-write-errors", &[], Bool, "no", Mutable, INERT),
    row("aclfile", &[], Str(any), "", Immutable, field!(aclfile)),
    row("unixsocket", &[], Str(any), "", Immutable, INERT),
    row("pidfile", &[], Str(any), "", Immutable, INERT),
    row("replica-announce-ip", &["slave-announce-ip"], Str(any), "", Mutable, INERT),
    row("cluster-announce-ip", &[], Str(any), "", Mutable, INERT),
    row("cluster-config-file", &[], Str(any), "nodes.conf", Immutable, INERT),
    row("cluster-announce-hostname", &[], Str(hostname), "", Mutable, INERT),
    row("syslog-ident", &[], Str(any), "redis", Immutable, INERT),
    row("dbfilename", &[], Str(base_name_db), "dump.rdb", Protected, field!(dbfilename)),
    row("appendfilename", &[], Str(base_name_aof), "appendonly.aof", Immutable, INERT),
    row("appenddirname", &[], Str(base_name_aof_dir), "appendonlydir", Immutable, INERT),
    row("server_cpulist", &[], Str(any), "", Immutable, INERT),
    row("bio_cpulist", &[], Str(any), "", Immutable, INERT),
    row("aof_rewrite_cpulist", &[], Str(any), "", Immutable, INERT),
    row("bgsave_cpulist", &[], Str(any), "", Immutable, INERT),
    row("ignore-warnings", &[], Str(any), "", Mutable, INERT),
    row("proc-title-template", &[], Str(proc_title_template), "{title} {listen-addr} {server-mode}", Mutable, INERT),
    row("bind-source-addr", &[], Str(any), "", Mutable, INERT),
    row("supervised", &[], Enum(SUPERVISED), "no", Immutable, INERT),
    row("syslog-facility", &[], Enum(SYSLOG_FACILITY), "local0", Immutable, INERT),
    row("repl-diskless-load", &[], Enum(REPL_DISKLESS_LOAD), "disabled", Mutable, INERT),
    row("maxmemory-policy", &[], Enum(MAXMEMORY_POLICY), "noeviction", Mutable, INERT),
    row("oom-score-adj", &[], Enum(OOM_SCORE_ADJ), "no", Mutable, INERT),
    row("acl-pubsub-default", &[], Enum(AclPubsubDefault::NAMES), "resetchannels", Mutable, field!(acl_pubsub_default)),
    row("sanitize-dump-payload", &[], Enum(SANITIZE_DUMP_PAYLOAD), "no", Mutable, INERT),

    row("enable-debug-command", &[], Enum(Allowed::NAMES), "no", Immutable, INERT),
    row("enable-module-command", &[], Enum(Allowed::NAMES), "no", Immutable, INERT),
    row("cluster-preferred-endpoint-type", &[], Enum(CLUSTER_PREFERRED_ENDPOINT_TYPE), "ip", Mutable, INERT),
    row("propagation-error-behavior", &[], Enum(PROPAGATION_ERROR_BEHAVIOR), "ignore", Mutable, INERT),
    row("shutdown-on-sigint", &[], Sp(Special::ShutdownOnSignal), "default", Mutable, INERT),
    row("shutdown-on-sigterm", &[], Sp(Special::ShutdownOnSignal), "default", Mutable, INERT),
    row("io-threads", &[], Int { min: 1, max: 128 }, "1", Immutable, INERT),
    row("auto-aof-rewrite-percentage", &[], Int { min: 0, max: INT_MAX }, "100", Mutable, INERT),
    row("cluster-replica-validity-factor", &["cluster-slave-validity-factor"], Int { min: 0, max: INT_MAX }, "10", Mutable, INERT),
    row("list-max-listpack-size", &["list-max-ziplist-size"], Int { min: INT_MIN, max: INT_MAX }, "-2", Mutable, INERT),
    row("cluster-migration-barrier", &[], Int { min: 0, max: INT_MAX }, "1", Mutable, INERT),
    row("active-defrag-cycle-min", &[], Int { min: 1, max: 99 }, "1", Mutable, INERT),
    row("active-defrag-cycle-max", &[], Int { min: 1, max: 99 }, "25", Mutable, INERT),
    row("active-defrag-threshold-lower", &[], Int { min: 0, max: 1000 }, "10", Mutable, INERT),
    row("active-defrag-threshold-upper", &[], Int { min: 0, max: 1000 }, "100", Mutable, INERT),
    row("lfu-log-factor", &[], Int { min: 0, max: INT_MAX }, "10", Mutable, INERT),
    row("lfu-decay-time", &[], Int { min: 0, max: INT_MAX }, "1", Mutable, INERT),
    row("repl-diskless-sync-delay", &[], Int { min: 0, max: INT_MAX }, "5", Mutable, INERT),
    row("maxmemory-samples", &[], Int { min: 1, max: INT_MAX }, "5", Mutable, INERT),
    row("maxmemory-eviction-tenacity", &[], Int { min: 0, max: 100 }, "10", Mutable, INERT),
    row("replica-announce-port", &["slave-announce-port"], Int { min: 0, max: 65535 }, "0", Mutable, INERT),
    row("tcp-backlog", &[], Int { min: 0, max: INT_MAX }, "511", Immutable, INERT),
    row("cluster-port", &[], Int { min: 0, max: 65535 }, "0", Immutable, INERT),
    row("cluster-announce-bus-port", &[], Int { min: 0, max: 65535 }, "0", Mutable, INERT),
    row("cluster-announce-port", &[], Int { min: 0, max: 65535 }, "0", Mutable, INERT),
    row("cluster-announce-tls-port", &[], Int { min: 0, max: 65535 }, "0", Mutable, INERT),
    row("repl-ping-replica-period", &["repl-ping-slave-period"], Int { min: 1, max: INT_MAX }, "10", Mutable, INERT),
    row("list-compress-depth", &[], Int { min: 0, max: INT_MAX }, "0", Mutable, INERT),
    row("rdb-key-save-delay", &[], Int { min: INT_MIN, max: INT_MAX }, "0", Hidden, INERT),
    row("key-load-delay", &[], Int { min: INT_MIN, max: INT_MAX }, "0", Hidden, field!(key_load_delay)),
    row("active-expire-effort", &[], Int { min: 1, max: 10 }, "1", Mutable, INERT),
    row("watchdog-period", &[], Int { min: 0, max: INT_MAX }, "0", Hidden, INERT),
    row("shutdown-timeout", &[], Int { min: 0, max: INT_MAX }, "10", Mutable, INERT),
    row("repl-diskless-sync-max-replicas", &[], Int { min: 0, max: INT_MAX }, "0", Mutable, INERT),
    row("unixsocketperm", &[], Octal { min: 0, max: 511 }, "0", Immutable, INERT),
    row("socket-mark-id", &[], Int { min: 0, max: UINT_MAX }, "0", Immutable, INERT),
    row("active-defrag-max-scan-fields", &[], Int { min: 1, max: LONG_MAX }, "1000", Mutable, INERT),
    row("slowlog-max-len", &[], Int { min: 0, max: LONG_MAX }, "128", Mutable, field!(slowlog_max_len)),
    row("acllog-max-len", &[], Int { min: 0, max: LONG_MAX }, "128", Mutable, field!(acllog_max_len)),
    row("cluster-node-timeout", &[], Int { min: 0, max: LONG_MAX }, "15000", Mutable, INERT),
    row("slowlog-log-slower-than", &[], Int { min: -1, max: LONG_MAX }, "10000", Mutable, field!(slowlog_log_slower_than)),
    row("latency-monitor-threshold", &[], Int { min: 0, max: LONG_MAX }, "0", Mutable, field!(latency_monitor_threshold)),
    row("stream-node-max-entries", &[], Int { min: 0, max: LONG_MAX }, "100", Mutable, field!(stream_node_max_entries)),
    row("maxmemory", &[], Memory { min: 0, max: ULLONG_MAX }, "0", Mutable, INERT),
    row("cluster-link-sendbuf-limit", &[], Memory { min: 0, max: ULLONG_MAX }, "0", Mutable, INERT),
    row("hash-max-listpack-entries", &["hash-max-ziplist-entries"], Int { min: 0, max: LONG_MAX }, "512", Mutable, INERT),
    row("set-max-intset-entries", &[], Int { min: 0, max: LONG_MAX }, "512", Mutable, INERT),
    row("zset-max-listpack-entries", &["zset-max-ziplist-entries"], Int { min: 0, max: LONG_MAX }, "128", Mutable, INERT),
    row("active-defrag-ignore-bytes", &[], Memory { min: 1, max: LONG_MAX as u64 }, "104857600", Mutable, INERT),
    row("hash-max-listpack-value", &["hash-max-ziplist-value"], Memory { min: 0, max: LONG_MAX as u64 }, "64", Mutable, INERT),
    row("stream-node-max-bytes", &[], Memory { min: 0, max: LONG_MAX as u64 }, "4096", Mutable, INERT),
    row("zset-max-listpack-value", &["zset-max-ziplist-value"], Memory { min: 0, max: LONG_MAX as u64 }, "64", Mutable, INERT),
    row("tracking-table-max-keys", &[], Int { min: 0, max: LONG_MAX }, "1000000", Mutable, field!(tracking_table_max_keys)),
    row("maxmemory-clients", &[], Percent { min: -100, max: LONG_MAX }, "0", Mutable, INERT),
    row("auto-aof-rewrite-min-size", &[], Memory { min: 0, max: LONG_MAX as u64 }, "67108864", Mutable, INERT),
    row("loading-process-events-interval-bytes", &[], Int { min: 1024, max: INT_MAX }, "2097152", Hidden, INERT),
    row("tls-port", &[], Int { min: 0, max: 65535 }, "0", Mutable, field!(tls_port)),
    row("tls-session-cache-size", &[], Int { min: 0, max: INT_MAX }, "20480", Mutable, field!(tls_session_cache_size)),
    row("tls-session-cache-timeout", &[], Int { min: 0, max: INT_MAX }, "300", Mutable, field!(tls_session_cache_timeout)),
    row("tls-cluster", &[], Bool, "no", Mutable, INERT),
    row("tls-replication", &[], Bool, "no", Mutable, field!(tls_replication)),
    row("tls-auth-clients", &[], Enum(TlsAuthClients::NAMES), "yes", Mutable, field!(tls_auth_clients)),
    row("tls-prefer-server-ciphers", &[], Bool, "no", Mutable, field!(tls_prefer_server_ciphers)),
    row("tls-session-caching", &[], Bool, "yes", Mutable, field!(tls_session_caching)),
    row("tls-cert-file", &[], Str(any), "", Mutable, field!(tls_cert_file)),
    row("tls-key-file", &[], Str(any), "", Mutable, field!(tls_key_file)),
    row("tls-key-file-pass", &[], Str(any), "", Mutable, field!(tls_key_file_pass)),
    row("tls-client-cert-file", &[], Str(any), "", Mutable, field!(tls_client_cert_file)),
    row("tls-client-key-file", &[], Str(any), "", Mutable, field!(tls_client_key_file)),
    row("tls-client-key-file-pass", &[], Str(any), "", Mutable, field!(tls_client_key_file_pass)),
    row("tls-dh-params-file", &[], Str(any), "", Mutable, field!(tls_dh_params_file)),
    row("tls-ca-cert-file", &[], Str(any), "", Mutable, field!(tls_ca_cert_file)),
    row("tls-ca-cert-dir", &[], Str(any), "", Mutable, field!(tls_ca_cert_dir)),
    row("tls-protocols", &[], Str(any), "", Mutable, field!(tls_protocols)),
    row("tls-ciphers", &[], Str(any), "", Mutable, field!(tls_ciphers)),
    row("tls-ciphersuites", &[], Str(any), "", Mutable, field!(tls_ciphersuites)),
    row("save", &[], Sp(Special::Save), "3600 1 300 100 60 10000", Mutable, INERT),
    row("oom-score-adj-values", &[], Sp(Special::OomScoreAdjValues), "0 200 800", Mutable, INERT),
    row("latency-tracking-info-percentiles", &[], Sp(Special::Percentiles), "50 99 99.9", Mutable, field!(latency_tracking_info_percentiles)),
];

/// Finds a directive by name or alias, ignoring case. Returns its row and the matched spelling
/// as the table has it.
pub(super) fn lookup(name: &str) -> Option<(usize, &'static str)> {
    DIRECTIVES.iter().enumerate().find_map(|(row, d)| {
        d.spellings()
            .find(|spelling| spelling.eq_ignore_ascii_case(name))
            .map(|spelling| (row, spelling))
    })
}

impl Directive {
    /// The name, then the aliases.
    pub(super) fn spellings(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

/// Directives Redis reads only from config files and ignores (its `deprecated_configs`), with
/// their argument count.
pub(super) const DEPRECATED: &[(&str, usize)] = &[
    ("list-max-ziplist-entries", 1),
    ("list-max-ziplist-value", 1),
    ("lua-replicate-commands", 1),
];

fn any(_: &str) -> Result<(), &'static str> {
    Ok(())
}

fn non_empty(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        Err("argument can't be empty")
    } else {
        Ok(())
    }
}

fn is_base_name(value: &str) -> bool {
    !value.contains(['/', '\\'])
}

fn base_name_db(value: &str) -> Result<(), &'static str> {
    if is_base_name(value) {
        Ok(())
    } else {
        Err("dbfilename can't be a path, just a filename")
    }
}

fn base_name_aof(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        Err("appendfilename can't be empty")
    } else if is_base_name(value) {
        Ok(())
    } else {
        Err("appendfilename can't be a path, just a filename")
    }
}

fn base_name_aof_dir(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        Err("appenddirname can't be empty")
    } else if is_base_name(value) {
        Ok(())
    } else {
        Err("appenddirname can't be a path, just a dirname")
    }
}

/// Redis's `isValidAnnouncedHostname`.
fn hostname(value: &str) -> Result<(), &'static str> {
    if value.len() >= 256 {
        Err("Hostnames must be less than 256 characters")
    } else if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        Err("Hostnames may only contain alphanumeric characters, hyphens or dots")
    } else {
        Ok(())
    }
}

/// Redis's `isValidProcTitleTemplate`: every `{variable}` is known, braces balance (`{{` is a
/// literal brace), and the title is not empty once expanded (with an empty title and no
/// cluster or sentinel mode).
fn proc_title_template(value: &str) -> Result<(), &'static str> {
    const INVALID: &str = "template format is invalid or contains unknown variables";
    let mut expanded = String::new();
    let mut rest = value;
    while let Some(open) = rest.find('{') {
        expanded.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if after.is_empty() {
            return Err(INVALID);
        }
        if let Some(literal) = after.strip_prefix('{') {
            expanded.push('{');
            rest = literal;
            continue;
        }
        let close = after.find('}').ok_or(INVALID)?;
        expanded.push_str(match &after[..close] {
            "title" | "server-mode" | "unixsocket" => "",
            "listen-addr" => "*:6379",
            "config-file" => "-",
            "port" | "tls-port" => "0",
            _ => return Err(INVALID),
        });
        rest = &after[close + 1..];
    }
    expanded.push_str(rest);
    if expanded.trim_matches(' ').is_empty() {
        Err(INVALID)
    } else {
        Ok(())
    }
}
