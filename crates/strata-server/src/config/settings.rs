//! The typed settings Strata acts on: one field per directive that changes something in the
//! server, filled from the directive table (`table.rs`, which binds each row to its field and
//! holds its default and bounds). Reading a setting is plain field access
//! (`config.appendfsync`, `config.maxclients`). Directives Redis has but that change nothing in
//! Strata have no field here. This module knows nothing of parsing or files.

use std::path::PathBuf;

use super::kinds::Value;

/// Conversion between a field's type and a directive's parsed [`Value`].
pub(super) trait Setting: Sized {
    fn to_value(&self) -> Value;
    /// `None` when the value is not of the field's kind (a table error, caught by tests).
    fn from_value(value: Value) -> Option<Self>;
}

impl Setting for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
}

macro_rules! number_setting {
    ($($t:ty),*) => {$(
        impl Setting for $t {
            fn to_value(&self) -> Value {
                Value::Num((*self).into())
            }
            fn from_value(value: Value) -> Option<Self> {
                match value {
                    Value::Num(n) => n.try_into().ok(),
                    _ => None,
                }
            }
        }
    )*};
}
number_setting!(u16, u32, u64, i64);

impl Setting for PathBuf {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string_lossy().into_owned())
    }
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::Text(text) => Some(PathBuf::from(text)),
            _ => None,
        }
    }
}

/// Text where empty means unset (Redis's EMPTY_STRING_IS_NULL).
impl Setting for Option<String> {
    fn to_value(&self) -> Value {
        Value::Text(self.clone().unwrap_or_default())
    }
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::Text(text) => Some(Some(text).filter(|t| !t.is_empty())),
            _ => None,
        }
    }
}

impl Setting for Option<PathBuf> {
    fn to_value(&self) -> Value {
        Value::Text(
            self.as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
    }
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::Text(text) => Some(Some(text).filter(|t| !t.is_empty()).map(PathBuf::from)),
            _ => None,
        }
    }
}

impl Setting for Vec<String> {
    fn to_value(&self) -> Value {
        Value::List(self.clone())
    }
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::List(words) => Some(words),
            _ => None,
        }
    }
}

/// A leader's host and port, or none.
impl Setting for Option<(String, u16)> {
    fn to_value(&self) -> Value {
        Value::List(match self {
            Some((host, port)) => vec![host.clone(), port.to_string()],
            None => Vec::new(),
        })
    }
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::List(words) => match words.as_slice() {
                [] => Some(None),
                [host, port] => Some(Some((host.clone(), port.parse().ok()?))),
                _ => None,
            },
            _ => None,
        }
    }
}

/// `client-output-buffer-limit`: `[hard bytes, soft bytes, soft seconds]` per client class, 0
/// meaning no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputBufferLimits {
    pub normal: [u64; 3],
    pub replica: [u64; 3],
    pub pubsub: [u64; 3],
}

impl Setting for OutputBufferLimits {
    fn to_value(&self) -> Value {
        Value::OutputLimits([Some(self.normal), Some(self.replica), Some(self.pubsub)])
    }
    fn from_value(value: Value) -> Option<Self> {
        match value {
            Value::OutputLimits([Some(normal), Some(replica), Some(pubsub)]) => {
                Some(OutputBufferLimits {
                    normal,
                    replica,
                    pubsub,
                })
            }
            _ => None,
        }
    }
}

/// An enumeration whose variants are spelled as the directive's values.
macro_rules! choices {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($(#[$vmeta])* $variant,)+ }

        impl $name {
            /// The values, in the order Redis lists them in errors.
            pub(super) const NAMES: &'static [&'static str] = &[$($text,)+];

            /// The value's name.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                [$($name::$variant,)+][0]
            }
        }

        impl Setting for $name {
            fn to_value(&self) -> Value {
                Value::Text(self.name().to_string())
            }
            fn from_value(value: Value) -> Option<Self> {
                match value {
                    Value::Text(text) => [$($name::$variant,)+].into_iter().find(|c| c.name() == text),
                    _ => None,
                }
            }
        }
    };
}

choices! {
    /// When `appendfsync` asks for the write-ahead log to be synced to disk.
    pub enum AppendFsync {
        /// About once a second.
        EverySec = "everysec",
        /// After every write.
        Always = "always",
        /// Never explicitly; the operating system decides.
        No = "no",
    }
}

choices! {
    /// The channels a new ACL user gets (`acl-pubsub-default`).
    pub enum AclPubsubDefault {
        AllChannels = "allchannels",
        ResetChannels = "resetchannels",
    }
}

choices! {
    /// How much the server logs (`loglevel`).
    pub enum LogLevel {
        Debug = "debug",
        Verbose = "verbose",
        Notice = "notice",
        Warning = "warning",
    }
}

choices! {
    /// Who may use a protected feature (`enable-protected-configs` and the like).
    pub enum Allowed {
        No = "no",
        Yes = "yes",
        /// Clients on the loopback interface (Strata does not tell them apart for CONFIG SET).
        Local = "local",
    }
}

choices! {
    /// Where writes go first, from the `memory-tier` directive (docs/architecture.md); the
    /// server's default is the write-back tier.
    pub enum MemoryTier {
        /// Straight to RocksDB and its log, one write batch per command.
        WriteThrough = "write-through",
        /// To the in-memory write-back tier and Strata's redo log; checkpointed to RocksDB.
        WriteBack = "write-back",
    }
}

choices! {
    /// Whether TLS clients must present a certificate (`tls-auth-clients`).
    pub enum TlsAuthClients {
        No = "no",
        Yes = "yes",
        /// A certificate is verified when the client presents one.
        Optional = "optional",
    }
}

choices! {
    /// RocksDB block compression, from the `compression` directive.
    pub enum Compression {
        None = "none",
        Lz4 = "lz4",
        Zstd = "zstd",
    }
}

/// The settings Strata acts on. Each field is filled by one row of the directive table, which
/// names the directive, its default and its bounds.
#[derive(Clone, Default)]
pub struct Settings {
    /// `port`: the TCP port to listen on.
    pub port: u16,
    /// `bind`: the addresses to listen on (1 to 16), verbatim. Redis conventions apply if the
    /// server supports them: `*` is every IPv4 address, `::*` every IPv6 address, and a leading
    /// `-` marks an address whose absence isn't fatal.
    pub bind: Vec<String>,
    /// `dir`: where the data lives.
    pub dir: PathBuf,
    /// `requirepass`: the password clients must AUTH with, if any.
    pub requirepass: Option<String>,
    /// `appendfsync`: when writes are synced to disk.
    pub appendfsync: AppendFsync,
    /// `databases`: how many logical databases (1..=256).
    pub databases: u32,
    /// `maxclients`: the most simultaneous client connections.
    pub maxclients: u64,
    /// `timeout`: seconds of idleness after which a client is disconnected; 0 = never.
    pub timeout: u64,
    /// `loglevel`.
    pub loglevel: LogLevel,
    /// `logfile`: where to log; `None` means standard error.
    pub logfile: Option<PathBuf>,
    /// `hll-sparse-max-bytes`: the size past which a sparse HyperLogLog becomes dense.
    pub hll_sparse_max_bytes: u64,
    /// `stream-node-max-entries`: entries per stream node, the unit `~` trimming removes.
    pub stream_node_max_entries: u64,
    /// `proto-max-bulk-len`: the largest bulk string a client may send, in bytes.
    pub proto_max_bulk_len: u64,
    /// `client-query-buffer-limit`: the most unparsed input kept per client, in bytes.
    pub client_query_buffer_limit: u64,
    /// `client-output-buffer-limit`.
    pub client_output_buffer_limit: OutputBufferLimits,
    /// `hz`: background task frequency per second (1..=500).
    pub hz: u32,
    /// `tcp-keepalive`: seconds between TCP keepalive probes; 0 = off.
    pub tcp_keepalive: u64,
    /// `busy-reply-threshold` (alias `lua-time-limit`): milliseconds a script may run before
    /// other clients get BUSY replies.
    pub busy_reply_threshold: u64,
    /// `notify-keyspace-events`: the bits of `strata_commands::notify`.
    pub notify_keyspace_events: u32,
    /// `slowlog-log-slower-than`: µs a command must run to be logged (0: all, negative: none).
    pub slowlog_log_slower_than: i64,
    /// `key-load-delay`: µs to sleep after each key of a start-up RDB load (a test knob, as in
    /// Redis; negative -N: 1 µs with odds 1/N).
    pub key_load_delay: i64,
    /// `slowlog-max-len`: entries the slow log keeps.
    pub slowlog_max_len: u64,
    /// `latency-monitor-threshold`: ms an event must take to be sampled (0: off).
    pub latency_monitor_threshold: u64,
    /// `tracking-table-max-keys`: keys CLIENT TRACKING remembers at most (0: no bound).
    pub tracking_table_max_keys: u64,
    /// `latency-tracking`: per-command latency histograms on or off.
    pub latency_tracking: bool,
    /// `latency-tracking-info-percentiles`: the percentiles INFO latencystats prints.
    pub latency_tracking_info_percentiles: Vec<String>,
    /// `block-cache-size`: RocksDB's block cache, in bytes.
    pub block_cache_size: u64,
    /// `hot-cache-size`: bytes of recently written or read records (metadata, string values,
    /// collection fields) kept in memory for reads, 0 = off; a negative value is minus a
    /// percentage of the memory the process may use ([`Settings::hot_cache_bytes`];
    /// docs/architecture.md, "Hot-record cache").
    pub hot_cache_size: i64,
    /// `memory-tier`: where writes go first.
    pub memory_tier: MemoryTier,
    /// `memory-tier-dirty-size`: bytes the write-back tier holds before a checkpoint starts.
    pub memory_tier_dirty_size: u64,
    /// `write-buffer-size`: RocksDB's memtable size, in bytes.
    pub write_buffer_size: u64,
    /// `min-free-disk`: writes are refused (`-MISCONF`) while the data directory's filesystem
    /// has less free space than this; 0 turns the check off.
    pub min_free_disk: u64,
    /// `compression`: RocksDB's block compression.
    pub compression: Compression,
    /// `partitioned-index`: partitioned index and filter blocks, their top level pinned.
    pub partitioned_index: bool,
    /// `index-high-priority`: index and filter blocks in the block cache's high-priority pool.
    pub index_high_priority: bool,
    /// `uncompressed-levels`: levels, from level 0, written without compression.
    pub uncompressed_levels: u32,
    /// `zstd-dictionary-size`: bytes of the zstd dictionary of the last level (0: none).
    pub zstd_dictionary_size: u64,
    /// `compaction-rate-limit`: bytes per second flushes and compactions may write at most,
    /// auto-tuned below that (0: no limit).
    pub compaction_rate_limit: u64,
    /// `direct-io-background`: flushes and compactions use direct I/O.
    pub direct_io_background: bool,
    /// `direct-io-reads`: reads of table files use direct I/O (no page cache).
    pub direct_io_reads: bool,
    /// `background-jobs`: flushes and compactions that may run at once.
    pub background_jobs: u32,
    /// `l0-slowdown-writes-trigger`: level-0 files at which writes are slowed down.
    pub l0_slowdown_writes_trigger: u32,
    /// `l0-stop-writes-trigger`: level-0 files at which writes stop.
    pub l0_stop_writes_trigger: u32,
    /// `blob-min-size`: values at least this large go to blob files (0: never).
    pub blob_min_size: u64,
    /// `bgsave-dir`, relative to `dir` (see [`Settings::bgsave_path`]).
    pub bgsave_dir: PathBuf,
    /// `dbfilename`: the Redis RDB file in `dir` loaded at start-up into a directory without
    /// data (`crate::rdb_at_start`); Strata never writes it.
    pub dbfilename: PathBuf,
    /// `metrics-port`: the port of the Prometheus metrics endpoint; 0 = off.
    pub metrics_port: u16,
    /// `metrics-bind`: the addresses the metrics endpoint listens on (as `bind`).
    pub metrics_bind: Vec<String>,
    /// `replicaof`: the leader this server replicates, if any.
    pub replicaof: Option<(String, u16)>,
    /// `masterauth`: the password for the leader.
    pub masterauth: Option<String>,
    /// `masteruser`: the user for the leader.
    pub masteruser: Option<String>,
    /// `replica-serve-stale-data`.
    pub replica_serve_stale_data: bool,
    /// `replica-read-only`.
    pub replica_read_only: bool,
    /// `replica-priority`.
    pub replica_priority: u64,
    /// `replica-announced`.
    pub replica_announced: bool,
    /// `min-replicas-to-write`.
    pub min_replicas_to_write: u64,
    /// `min-replicas-max-lag`, in seconds.
    pub min_replicas_max_lag: u64,
    /// `repl-timeout`, in seconds (at least 1).
    pub repl_timeout: u64,
    /// `repl-backlog-size`: bytes of archived log (RocksDB's, or the write-back tier's redo log) kept for replicas.
    pub repl_backlog_size: u64,
    /// `repl-backlog-ttl`: seconds archived log (either) is kept.
    pub repl_backlog_ttl: u64,
    /// `enable-protected-configs`: whether CONFIG SET may change protected directives
    /// (`dbfilename`, `dir`).
    pub enable_protected_configs: Allowed,
    /// `aclfile`: where ACL LOAD and ACL SAVE read and write the users, if anywhere.
    pub aclfile: Option<String>,
    /// `acl-pubsub-default`: whether new users may use every channel.
    pub acl_pubsub_default: AclPubsubDefault,
    /// `acllog-max-len`: the most entries ACL LOG keeps.
    pub acllog_max_len: u64,
    /// `protected-mode`: refuse clients not on the loopback interface while the default user
    /// has no password.
    pub protected_mode: bool,
    /// `disable-thp`: transparent huge pages off for the process (`allocator::disable_thp`).
    pub disable_thp: bool,
    /// `tls-port`: the TLS port to listen on; 0 = none.
    pub tls_port: u16,
    /// `tls-replication`: a replica connects to its leader over TLS.
    pub tls_replication: bool,
    /// `tls-auth-clients`.
    pub tls_auth_clients: TlsAuthClients,
    /// `tls-prefer-server-ciphers`.
    pub tls_prefer_server_ciphers: bool,
    /// `tls-session-caching`.
    pub tls_session_caching: bool,
    /// `tls-session-cache-size`: sessions kept for resumption.
    pub tls_session_cache_size: u64,
    /// `tls-session-cache-timeout`, in seconds (accepted; rustls keeps no per-session expiry).
    pub tls_session_cache_timeout: u64,
    /// `tls-cert-file`: the server's certificate chain (PEM).
    pub tls_cert_file: Option<String>,
    /// `tls-key-file`: the server's private key (PEM).
    pub tls_key_file: Option<String>,
    /// `tls-key-file-pass`: the key's passphrase (encrypted keys are not supported).
    pub tls_key_file_pass: Option<String>,
    /// `tls-client-cert-file`: the certificate a replica presents to its leader.
    pub tls_client_cert_file: Option<String>,
    /// `tls-client-key-file`: its private key.
    pub tls_client_key_file: Option<String>,
    /// `tls-client-key-file-pass`.
    pub tls_client_key_file_pass: Option<String>,
    /// `tls-dh-params-file` (checked to exist; rustls uses no finite-field DH).
    pub tls_dh_params_file: Option<String>,
    /// `tls-ca-cert-file`: CA certificates (PEM) clients and leaders are verified against.
    pub tls_ca_cert_file: Option<String>,
    /// `tls-ca-cert-dir`: a directory of CA certificates (PEM).
    pub tls_ca_cert_dir: Option<String>,
    /// `tls-protocols`: e.g. "TLSv1.2 TLSv1.3".
    pub tls_protocols: Option<String>,
    /// `tls-ciphers`: TLS 1.2 cipher suites (OpenSSL names).
    pub tls_ciphers: Option<String>,
    /// `tls-ciphersuites`: TLS 1.3 cipher suites.
    pub tls_ciphersuites: Option<String>,
}

/// The hot-record cache's budget where a percentage cannot be taken (memory unknown).
const HOT_CACHE_FALLBACK: u64 = 256 << 20;

impl Settings {
    /// `hot-cache-size` in bytes: the size given, or its percentage of `memory` (what the process
    /// may use, `crate::host_memory::limit`), or 256 MB for a percentage of unknown memory.
    pub fn hot_cache_bytes(&self, memory: Option<u64>) -> u64 {
        match u64::try_from(self.hot_cache_size) {
            Ok(bytes) => bytes,
            Err(_) => memory.map_or(HOT_CACHE_FALLBACK, |m| {
                let percent = self.hot_cache_size.unsigned_abs().min(100);
                u64::try_from(u128::from(m) * u128::from(percent) / 100).unwrap_or(u64::MAX)
            }),
        }
    }

    /// `bgsave-dir`, resolved against `dir` (an absolute `bgsave-dir` stands on its own).
    pub fn bgsave_path(&self) -> PathBuf {
        self.dir.join(&self.bgsave_dir)
    }
}
