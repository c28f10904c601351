//! The execution context a handler works with: the connection's [`Session`] (selected
//! database, protocol, MULTI queue, WATCH, subscriptions...), the [`ServerApi`] through which
//! it asks the server for what lies outside this crate, and [`Ctx`], the two together. Knows
//! no family and not the registry.

use std::sync::Arc;

use bytes::Bytes;
use strata_resp::{Frame, Protocol};

use crate::command::CommandSpec;
use crate::command_stats::LocalStats;
use crate::notify;
use crate::scripting::{self, ScriptCache};
use crate::tracking::{Message, Tracking};
use crate::watch::{Watches, Watching};

pub use crate::tracking::Mode as TrackingMode;

/// What CLIENT REPLY set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    /// Replies are sent.
    On,
    /// No replies are sent.
    Off,
    /// The reply of the next command is skipped.
    Skip,
}

/// How the running command holds its keys' locks, for a command that holds them shared although
/// it may write them ([`crate::command::SHARED_FIRST`]: PFCOUNT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hold {
    /// Exclusively, or inside a transaction or script that holds them: the command may write.
    #[default]
    Exclusive,
    /// Shared: the command must not write them. One that finds it must sets
    /// [`Hold::WantsExclusive`] and returns without writing or answering; it is then run
    /// again holding them exclusively.
    Shared,
    /// Asked for by a handler run holding its keys shared.
    WantsExclusive,
}

/// Per-connection state that commands read and change.
pub struct Session {
    /// CLIENT ID.
    pub id: u64,
    /// The selected database.
    pub db: strata::Db,
    /// RESP2 or RESP3 (HELLO).
    pub protocol: Protocol,
    /// CLIENT SETNAME.
    pub name: Option<Bytes>,
    /// Whether AUTH succeeded (or no password is configured).
    pub authenticated: bool,
    /// The ACL user the connection runs as (`default` until AUTH says otherwise).
    pub user: Arc<crate::acl::User>,
    /// CLIENT REPLY.
    pub reply_mode: ReplyMode,
    /// CLIENT NO-EVICT.
    pub no_evict: bool,
    /// What a blocking command (BLPOP...) does when it finds nothing to serve.
    pub block_mode: BlockMode,
    /// MULTI: the transaction being queued.
    pub multi: Option<Multi>,
    /// WATCH: the watched keys and whether one of them was written.
    pub watching: Option<Watching>,
    /// While EXEC runs: keys its commands wrote that blocked clients may wait for. They are
    /// signalled once the transaction is over and its locks are released, as Redis serves
    /// blocked clients after the whole transaction.
    pub ready_keys: Option<Vec<(u32, Bytes)>>,
    /// A script is running for this connection: keys it did not declare are locked patiently
    /// (see `strata::Db::hold_patiently`).
    pub in_script: bool,
    /// Pub/sub subscription counts; in RESP2 a session with any is in the subscribed state.
    pub subscriptions: Subscriptions,
    /// REPLCONF listening-port: the port of the replica on this connection (0: not said).
    pub replica_port: u16,
    /// REPLCONF capa: what the replica on this connection said it understands.
    pub replica_capa: ReplicaCapa,
    /// Keys the running write command named but left unchanged (SMOVE of a member the
    /// destination already has): WATCH does not see them, as Redis signals only modified keys.
    pub unchanged: Vec<Bytes>,
    /// The dispatcher's list of the running command's keys (`(database, argv index)`), kept
    /// between commands so that working them out allocates nothing; a command run inside
    /// another (EXEC's queue, a script's calls) finds it taken and uses a list of its own.
    pub targets: Vec<(u32, usize)>,
    /// Commands run and errors answered since the connection last added them to the server's
    /// totals (INFO commandstats / errorstats).
    pub stats: LocalStats,
    /// MONITOR: the connection receives the monitor feed and may not touch the keyspace.
    pub monitor: bool,
    /// CLIENT TRACKING ON: the mode in force (`None`: tracking is off). The server's
    /// [`Tracking`] holds the same, for the clients that deliver invalidations.
    pub tracking: Option<TrackingMode>,
    /// CLIENT CACHING YES/NO: applies to the next command (or transaction) only.
    pub caching: bool,
    /// While a script runs for a tracking client: its declared keys, remembered (and taken
    /// from here) when it first runs a read-only command, as Redis tracks a script's keys.
    pub script_keys: Option<Vec<Bytes>>,
    /// How the running command holds its keys (see [`Hold`]; set around each handler).
    pub hold: Hold,
    /// Set by the connection before each of the client's commands: a fast command may leave its
    /// key locks held by the thread for the thread's next commands ([`strata::KeyScope::linger`];
    /// taken, so only the client's own command, not one it runs, sees it). The connection ends
    /// each batch with [`strata::Db::end_batch`] and releases them
    /// ([`strata::Db::release_lingering`]) before it waits for anything.
    pub linger: bool,
}

/// What a replica told with REPLCONF capa / rdb-only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaCapa {
    /// `capa strata`: a Strata replica, which gets Strata's own stream (docs/replication.md);
    /// any other replica (redis-server, `redis-cli --rdb`) gets an RDB file.
    pub strata: bool,
    /// `capa eof`: the RDB may come in the EOF-marker form (`$EOF:<mark>`), streamed as it is
    /// made instead of written to a file first to announce its length.
    pub eof: bool,
    /// `rdb-only 1`: the replica wants the RDB file only; the link closes after it.
    pub rdb_only: bool,
}

/// A replica's PSYNC (or SYNC): the history it follows and the next offset it needs (`?` and -1
/// when it has none), plus what REPLCONF told about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PsyncRequest {
    /// The replication id the replica has, or `?`.
    pub replid: String,
    /// The first offset (sequence number) the replica lacks, or -1.
    pub offset: i64,
    /// REPLCONF listening-port.
    pub listening_port: u16,
    /// REPLCONF capa and rdb-only.
    pub capa: ReplicaCapa,
    /// The pre-2.8 SYNC: the RDB comes without a `+FULLRESYNC` line first.
    pub sync: bool,
}

/// How many channels, patterns and shard channels a session is subscribed to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Subscriptions {
    /// SUBSCRIBE.
    pub channels: usize,
    /// PSUBSCRIBE.
    pub patterns: usize,
    /// SSUBSCRIBE.
    pub shard: usize,
}

impl Subscriptions {
    /// All subscriptions together; non-zero means the subscribed state.
    pub fn total(&self) -> usize {
        self.channels + self.patterns + self.shard
    }
}

/// The three pub/sub namespaces: channels, patterns and shard channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// SUBSCRIBE / PUBLISH.
    Channel,
    /// PSUBSCRIBE (glob patterns over channels).
    Pattern,
    /// SSUBSCRIBE / SPUBLISH.
    Shard,
}

/// How a blocking command (BLPOP, BLMOVE, BZPOPMIN...) behaves when no key has anything to serve.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BlockMode {
    /// A client's own command: wait ([`crate::Outcome::Block`]).
    #[default]
    Block,
    /// Blocking is not allowed (inside MULTI/EXEC or a script, Redis's `CLIENT_DENY_BLOCKING`):
    /// answer at once as if the timeout had expired.
    NoBlock,
    /// The command is re-run for a blocked client because this key was signalled: only this key
    /// is consulted (Redis serves a blocked client from the key that became ready); finding
    /// nothing waits again.
    Serve(Bytes),
}

/// What a blocked command waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRequest {
    /// The database of the keys.
    pub db: u32,
    /// The keys, in the command's order.
    pub keys: Vec<Bytes>,
    /// When to give up and reply a null array; `None` waits forever (timeout 0).
    pub deadline: Option<std::time::Instant>,
    /// Re-run for a signalled key ([`BlockMode::Serve`]) that holds another type: the client
    /// waits on, and the key's next waiter may try it (Redis serves list waiters only from lists).
    pub other_type: bool,
    /// The command to run again when a key is signalled, if not the one that blocked (XREAD
    /// runs again with its `$` IDs replaced by the IDs they stood for when it blocked).
    pub rerun: Option<Vec<Bytes>>,
}

impl Session {
    /// A new session on database 0 of `db`, authenticated when no password is required.
    pub fn new(id: u64, db: strata::Db, needs_auth: bool) -> Session {
        Session {
            id,
            db,
            protocol: Protocol::Resp2,
            name: None,
            authenticated: !needs_auth,
            user: crate::acl::User::unlinked_default(),
            reply_mode: ReplyMode::On,
            no_evict: false,
            block_mode: BlockMode::Block,
            multi: None,
            watching: None,
            ready_keys: None,
            in_script: false,
            subscriptions: Subscriptions::default(),
            replica_port: 0,
            replica_capa: ReplicaCapa::default(),
            unchanged: Vec::new(),
            targets: Vec::new(),
            stats: LocalStats::default(),
            monitor: false,
            tracking: None,
            caching: false,
            script_keys: None,
            hold: Hold::Exclusive,
            linger: false,
        }
    }
}

/// CLIENT KILL filters.
#[derive(Clone, Debug, Default)]
pub struct KillFilter {
    /// `ip:port` of the client (old form or ADDR).
    pub addr: Option<String>,
    /// LADDR.
    pub laddr: Option<String>,
    /// ID.
    pub id: Option<u64>,
    /// TYPE normal|master|replica|pubsub.
    pub kind: Option<String>,
    /// SKIPME yes|no (default yes).
    pub skip_me: bool,
    /// USER: clients authenticated as this user.
    pub user: Option<Bytes>,
}

/// What handlers may ask of the server that runs them.
pub trait ServerApi: Send + Sync {
    /// The configured password, if any.
    fn requirepass(&self) -> Option<Vec<u8>>;
    /// CONFIG GET: the `(name, value)` pairs matching any of the patterns, each name once.
    fn config_get(&self, patterns: &[&[u8]]) -> Vec<(String, String)>;
    /// CONFIG SET: all pairs or none; Err carries the full error text.
    fn config_set(&self, pairs: &[(String, String)]) -> Result<(), String>;
    /// CONFIG REWRITE.
    fn config_rewrite(&self) -> Result<(), String>;
    /// CONFIG RESETSTAT.
    fn reset_stats(&self);
    /// INFO text for the given (lowercase) sections; empty = default sections.
    fn info(&self, session: &Session, sections: &[String]) -> String;
    /// CLIENT LIST lines (already filtered by ids / type when given).
    fn client_list(&self, ids: Option<&[u64]>, kind: Option<&str>) -> String;
    /// CLIENT INFO line of one client.
    fn client_info(&self, session: &Session) -> String;
    /// Publishes a session's visible state (name, db, protocol) to the registry.
    fn client_update(&self, session: &Session);
    /// CLIENT KILL: number of clients killed.
    fn client_kill(&self, filter: &KillFilter, self_id: u64) -> usize;
    /// BGSAVE: start a checkpoint in the background.
    fn bgsave(&self) -> Result<(), String>;
    /// SAVE: write a checkpoint now, returning once it is written.
    fn save(&self) -> Result<(), String>;
    /// LASTSAVE: Unix seconds of the last successful save.
    fn lastsave(&self) -> u64;
    /// SHUTDOWN: flush and stop the server. Err = reason it refused.
    fn shutdown(&self) -> Result<(), String>;
    /// The name of the command being executed right now, for the registry (`cmd=` in CLIENT LIST).
    fn note_command(&self, session: &Session, name: &str);
    /// Signals that `key` of database `db` may have become non-empty, so clients blocked on it
    /// (BLPOP, BZPOPMIN...) can be served. `execute` calls it for the keys of every successful
    /// write command while [`ServerApi::has_blocked_clients`] says so.
    fn key_ready(&self, _db: u32, _key: &[u8]) {}
    /// Every `(db, key)` some client is blocked on (a whole-database write such as SWAPDB may
    /// have filled any of them).
    fn blocked_keys(&self) -> Vec<(u32, Bytes)> {
        Vec::new()
    }
    /// The ACL users and log shared by every connection.
    fn acl(&self) -> &Arc<crate::acl::Users>;
    /// ACL LOAD: replaces the users by those of the `aclfile` and disconnects the clients of
    /// the users replaced; Err is the full error text.
    fn acl_load(&self) -> Result<(), String> {
        Err(crate::errors::ACL_NO_FILE.into())
    }
    /// After ACL SETUSER changed `user`: disconnects its subscribed clients whose channels the
    /// new rules no longer allow.
    fn acl_user_changed(&self, _user: &[u8]) {}
    /// ACL SAVE: writes the users to the `aclfile`; Err is the full error text.
    fn acl_save(&self) -> Result<(), String> {
        Err(crate::errors::ACL_NO_FILE.into())
    }
    /// The WATCH registry shared by every connection.
    fn watches(&self) -> &Arc<Watches>;
    /// The CLIENT TRACKING table shared by every connection.
    fn tracking(&self) -> &Arc<Tracking>;
    /// Sends invalidation messages (to each tracking client, or to its REDIRECT client), as
    /// Redis's `sendTrackingMessage`; they reach this client's socket after its reply.
    fn deliver_tracking(&self, _messages: Vec<Message>) {}
    /// Whether client `id` is connected (CLIENT TRACKING ... REDIRECT).
    fn client_exists(&self, _id: u64) -> bool {
        false
    }
    /// Whether this client's REDIRECT client went away while it tracked (CLIENT TRACKINGINFO
    /// `broken_redirect`, CLIENT LIST flag `R`).
    fn tracking_redirect_broken(&self) -> bool {
        false
    }
    /// Publishes a session's tracking mode to the registry after CLIENT TRACKING or RESET
    /// (CLIENT LIST flags `t` and `B`, `redir`), clearing `R`.
    fn tracking_changed(&self, _session: &Session) {}
    /// The Lua script cache shared by every connection.
    fn scripts(&self) -> &Arc<ScriptCache>;
    /// The FUNCTION libraries shared by every connection.
    fn functions(&self) -> &Arc<scripting::functions::FunctionRegistry>;
    /// Whether any client is blocked right now (one atomic load: `execute` asks it per write).
    fn has_blocked_clients(&self) -> bool {
        false
    }
    /// Subscribes this client to `name` (a channel, pattern or shard channel); subscribing
    /// twice is harmless. Returns the client's subscription counts afterwards.
    fn subscribe(&self, _kind: ChannelKind, _name: &Bytes) -> Subscriptions {
        Subscriptions::default()
    }
    /// Unsubscribes this client from `name` (nothing happens when it was not subscribed).
    /// Returns the client's subscription counts afterwards.
    fn unsubscribe(&self, _kind: ChannelKind, _name: &Bytes) -> Subscriptions {
        Subscriptions::default()
    }
    /// What this client is subscribed to of `kind`.
    fn subscribed(&self, _kind: ChannelKind) -> Vec<Bytes> {
        Vec::new()
    }
    /// PUBLISH (`Channel`) / SPUBLISH (`Shard`): delivers `message` to the subscribers of
    /// `channel` (and, for `Channel`, of every matching pattern); returns how many received it.
    fn publish(&self, _kind: ChannelKind, _channel: &Bytes, _message: &Bytes) -> usize {
        0
    }
    /// PUBSUB CHANNELS / SHARDCHANNELS: the active channels (with at least one subscriber),
    /// optionally only those matching a glob pattern.
    fn pubsub_channels(&self, _kind: ChannelKind, _pattern: Option<&[u8]>) -> Vec<Bytes> {
        Vec::new()
    }
    /// PUBSUB NUMSUB / SHARDNUMSUB: the number of subscribers of one channel.
    fn pubsub_numsub(&self, _kind: ChannelKind, _channel: &[u8]) -> usize {
        0
    }
    /// PUBSUB NUMPAT: the number of distinct patterns subscribed to.
    fn pubsub_numpat(&self) -> usize {
        0
    }
    /// REPLICAOF host port (`Some`) or NO ONE (`None`): the reply text (`OK`, or `OK Already
    /// connected to specified master`) or the error text.
    fn replicaof(&self, _leader: Option<(String, u16)>) -> Result<&'static str, String> {
        Err("ERR replication is not available here".into())
    }
    /// ROLE.
    fn role(&self) -> Frame {
        Frame::Array(vec![
            Frame::bulk("master"),
            Frame::Integer(0),
            Frame::Array(vec![]),
        ])
    }
    /// WAIT numreplicas timeout-ms (0 = no timeout): how many replicas acknowledged every write
    /// made so far, once `numreplicas` did or the time is up; the error text on a replica.
    fn wait_replicas(&self, _numreplicas: u64, _timeout_ms: u64) -> Result<u64, String> {
        Ok(0)
    }
    /// The refusal this server gives `spec` right now because of its replication state
    /// (-LOADING, -MASTERDOWN, -READONLY, -NOREPLICAS), if any. Called for every command, so
    /// it must be one atomic load when there is nothing to refuse.
    fn refusal(&self, _spec: &CommandSpec) -> Option<Frame> {
        None
    }
    /// Why a script or function declared able to write (flags without `no-writes`) may not
    /// start now (-NOREPLICAS, -READONLY on a read-only replica), if it may not.
    fn script_write_refusal(&self) -> Option<Frame> {
        None
    }
    /// The keyspace-event classes enabled now (`notify::*` bits; 0 when off). Called for every
    /// event a command could raise, so it must be one atomic load.
    fn notify_flags(&self) -> u32 {
        0
    }
    /// Publishes keyspace event `event` of `class` on `key` of database `db` (to
    /// `__keyspace@<db>__:<key>` and/or `__keyevent@<db>__:<event>`, as enabled).
    fn notify(&self, _db: u32, _class: u32, _event: &str, _key: &[u8]) {}
    /// The slow log (SLOWLOG; the dispatcher adds to it).
    fn slowlog(&self) -> &crate::slowlog::SlowLog {
        static LOG: std::sync::OnceLock<crate::slowlog::SlowLog> = std::sync::OnceLock::new();
        LOG.get_or_init(Default::default)
    }
    /// The latency monitor's events (LATENCY).
    fn latency(&self) -> &crate::latency::LatencyMonitor {
        static EVENTS: std::sync::OnceLock<crate::latency::LatencyMonitor> =
            std::sync::OnceLock::new();
        EVENTS.get_or_init(Default::default)
    }
    /// MEMORY STATS and MEMORY DOCTOR's figures.
    fn memory_overhead(&self) -> crate::memory_overhead::MemoryOverhead {
        crate::memory_overhead::MemoryOverhead::default()
    }
    /// MEMORY PURGE: asks the allocator to return free memory to the system.
    fn memory_purge(&self) {}
    /// The server's command statistics and latency histograms (LATENCY HISTOGRAM).
    fn command_stats(&self) -> &crate::command_stats::CommandStats {
        static STATS: std::sync::OnceLock<crate::command_stats::CommandStats> =
            std::sync::OnceLock::new();
        STATS.get_or_init(Default::default)
    }
    /// This client's `ip:port` (the slow log, MONITOR).
    fn peer_id(&self) -> String {
        "?:0".into()
    }
    /// Whether any client runs MONITOR (one atomic load: asked for every command).
    fn monitoring(&self) -> bool {
        false
    }
    /// Sends one MONITOR line (without `+` and CRLF) to every monitoring client.
    fn feed_monitors(&self, _line: String) {}
    /// MONITOR: this client joins the monitoring clients.
    fn start_monitor(&self) {}
    /// RESET of a monitoring client: it leaves them.
    fn stop_monitor(&self) {}
    /// CLIENT PAUSE: pauses clients (writes only when `write_only`) until Unix ms `end_ms`,
    /// extending a pause in force as Redis does (the later end, the stricter kind).
    fn client_pause(&self, _end_ms: u64, _write_only: bool) {}
    /// CLIENT UNPAUSE.
    fn client_unpause(&self) {}
    /// CLIENT UNBLOCK: ends the wait of client `id` if it is blocked (BLPOP, XREAD...), with the
    /// timeout's reply or, when `error`, `-UNBLOCKED`. Whether it was blocked.
    fn client_unblock(&self, _id: u64, _error: bool) -> bool {
        false
    }
}

/// What a handler works with: the connection's session and the server.
pub struct Ctx<'a> {
    /// The connection's state.
    pub session: &'a mut Session,
    /// The server.
    pub server: &'a dyn ServerApi,
}

impl Ctx<'_> {
    /// Whether events of `class` are published now (to skip work done only for an event).
    #[inline]
    pub fn notifies(&self, class: u32) -> bool {
        self.server.notify_flags() & class != 0
    }

    /// Raises keyspace event `event` of `class` (a `notify::*` bit) on `key` of the selected
    /// database, as Redis's `notifyKeyspaceEvent`. A cheap no-op unless that class is enabled.
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.notify_in(self.session.db.index(), class, event, key);
    }

    /// Leaves every subscription (RESET, and a connection that closes).
    pub fn unsubscribe_all(&mut self) {
        for kind in [
            ChannelKind::Channel,
            ChannelKind::Pattern,
            ChannelKind::Shard,
        ] {
            for ch in self.server.subscribed(kind) {
                self.session.subscriptions = self.server.unsubscribe(kind, &ch);
            }
        }
    }

    /// [`Ctx::notify`] for a key of database `db` (MOVE, COPY ... DB).
    #[inline]
    pub fn notify_in(&self, db: u32, class: u32, event: &str, key: &[u8]) {
        let flags = self.server.notify_flags();
        if flags & notify::NEW != 0 {
            notify::new_key(self, db, key);
        }
        if flags & class != 0 {
            self.server.notify(db, class, event, key);
        }
    }
}

/// A connection's open transaction.
#[derive(Default)]
pub struct Multi {
    /// The queued commands, in order.
    pub queue: Vec<Vec<Bytes>>,
    /// A command failed the queue-time checks: EXEC answers EXECABORT.
    pub failed: bool,
    /// Memory the queued arguments take as Redis counts it (CLIENT LIST `multi-mem`): their
    /// lengths plus a pointer per argument.
    pub argv_mem: usize,
}

impl Multi {
    /// Queues a command.
    pub fn queue(&mut self, argv: &[Bytes]) {
        self.argv_mem +=
            argv.iter().map(|a| a.len()).sum::<usize>() + argv.len() * std::mem::size_of::<usize>();
        self.queue.push(argv.to_vec());
    }
}
