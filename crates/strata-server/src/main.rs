//! `strata-server [config-file] [--directive value ...]`: the Strata server binary. This file owns
//! the process: command-line handling (`--version`, `--help`), configuration loading, logging
//! setup, opening the data directory, binding the listeners, the tokio runtime, the cron task,
//! and orderly shutdown on SIGTERM/SIGINT or SHUTDOWN (stop accepting, flush, exit 0). Everything
//! else lives in the modules below; this file holds no per-connection logic.

mod allocator;
mod blocking;
mod config;
mod connection;
mod figures;
mod host_memory;
mod info;
mod listener;
mod log;
mod metrics;
mod monitor;
mod pause;
mod protected;
mod pubsub;
mod rdb_at_start;
mod registry;
mod replication;
mod server;
mod stream;
mod tls;
mod wal_sync;

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::log::{notice, warning};
use crate::server::Server;

const VERSION_LINE: &str = concat!(
    "Strata server v=",
    env!("CARGO_PKG_VERSION"),
    " (Redis 7.0 compatible)"
);

const USAGE: &str = "Usage: strata-server [/path/to/strata.conf] [options]
       strata-server -v or --version
       strata-server -h or --help

Examples:
       strata-server (run the server with default config)
       strata-server /etc/strata/6379.conf
       strata-server --port 7777
       strata-server /etc/mystrata.conf --loglevel verbose

Every configuration directive can be given on the command line as --name value.";

fn main() {
    allocator::configure();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v" | "--version") => {
            println!("{VERSION_LINE}");
            return;
        }
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return;
        }
        _ => {}
    }
    let config = match Config::from_args(&args) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(1);
        }
    };
    std::process::exit(run(config));
}

/// Logs a fatal startup error (also to stderr when logging to a file) and returns exit code 1.
fn fatal(msg: &str) -> i32 {
    warning!("{msg}");
    if log::to_file() {
        eprintln!("{msg}");
    }
    1
}

fn run(config: Config) -> i32 {
    // Redis's `disable-thp` (default yes): before the runtime and RocksDB allocate.
    if config.disable_thp {
        allocator::disable_thp();
    }
    log::set_level(config.loglevel.name());
    if let Some(path) = &config.logfile {
        if let Err(e) = log::set_file(path) {
            eprintln!("Can't open the log file {}: {e}", path.display());
            return 1;
        }
    }
    notice!("oO0OoO0OoO0Oo Strata is starting oO0OoO0OoO0Oo");
    notice!(
        "Strata version={}, bits={}, pid={}, just started",
        env!("CARGO_PKG_VERSION"),
        usize::BITS,
        std::process::id()
    );
    match &config.config_file {
        Some(f) => notice!("Configuration loaded from {}", f.display()),
        None => notice!("No config file specified, using the default config."),
    }

    let dir = config.dir.clone();
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fatal(&format!(
            "Can't create the data directory {}: {}",
            dir.display(),
            listener::os_error_text(&e)
        ));
    }
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);

    let binds = match config
        .bind
        .iter()
        .map(|b| listener::parse_bind(b))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(b) => b,
        Err(e) => return fatal(&e),
    };
    let tls_contexts = match tls::wanted(&config) {
        true => match tls::configure(&config) {
            Ok(c) => Some(c),
            Err(e) => {
                warning!("{e}");
                return fatal("Failed to configure TLS. Check logs for more info.");
            }
        },
        false => None,
    };
    // Bind before opening the data directory, so a second server on the same port fails fast
    // with Redis's message and leaves the directory alone. Port 0 listens nowhere, as in Redis.
    let mut std_listeners = Vec::new();
    for (port, tls) in [(config.port, false), (config.tls_port, true)] {
        if port == 0 {
            continue;
        }
        match listener::bind_all(&binds, port) {
            Ok(ls) => std_listeners.extend(ls.into_iter().map(|l| (l, tls))),
            Err(e) => return fatal(&e),
        }
        if !std_listeners.iter().any(|(_, t)| *t == tls) {
            return fatal(&match tls {
                false => format!("Failed listening on port {port} (TCP), aborting."),
                true => format!("Failed listening on port {port} (TLS), aborting."),
            });
        }
    }
    if std_listeners.is_empty() {
        return fatal("Configured to not listen anywhere, exiting.");
    }
    let metrics_listeners = match metrics::bind(&config.metrics_bind, config.metrics_port) {
        Ok(l) => l,
        Err(e) => return fatal(&e),
    };
    if config.metrics_port != 0 && metrics_listeners.is_empty() {
        return fatal(&format!(
            "Failed listening on metrics port {} (HTTP), aborting.",
            config.metrics_port
        ));
    }

    let opts = strata::Options {
        databases: config.databases,
        sync: server::sync_policy(config.appendfsync),
        block_cache_size: usize::try_from(config.block_cache_size).unwrap_or(usize::MAX),
        write_buffer_size: usize::try_from(config.write_buffer_size).unwrap_or(usize::MAX),
        compression: match config.compression {
            config::Compression::None => strata::Compression::None,
            config::Compression::Lz4 => strata::Compression::Lz4,
            config::Compression::Zstd => strata::Compression::Zstd,
        },
        active_expire: true,
        max_string_len: config.proto_max_bulk_len,
        hll_sparse_max_bytes: config.hll_sparse_max_bytes,
        // Each connection flushes the WAL buffer once per batch of commands, before replying.
        batch_wal_writes: true,
        hot_cache_size: usize::try_from(config.hot_cache_bytes(host_memory::limit()))
            .unwrap_or(usize::MAX),
        write_back: (config.memory_tier == config::MemoryTier::WriteBack)
            .then(|| usize::try_from(config.memory_tier_dirty_size).unwrap_or(usize::MAX)),
        min_free_disk: config.min_free_disk,
        // The write-ahead log is the replication backlog.
        wal_size_limit_mb: config.repl_backlog_size.div_ceil(1 << 20),
        wal_ttl_seconds: config.repl_backlog_ttl,
        tuning: engine_tuning(&config),
        ..strata::Options::default()
    };
    // A Redis RDB file in a directory without Strata data is loaded once the server answers.
    let rdb_plan = match rdb_at_start::plan(&dir, &config.dbfilename) {
        Ok(p) => p,
        Err(e) => return fatal(&e),
    };
    let db = match strata::Db::open_with(&dir, opts) {
        Ok(db) => db,
        Err(strata::Error::Locked(_)) => {
            return fatal(&format!(
                "Can't open the data directory {}: it is locked by another process (is another strata-server using it?)",
                dir.display()
            ));
        }
        Err(e) => {
            return fatal(&format!(
                "Can't open the data directory {}: {e}",
                dir.display()
            ))
        }
    };
    adjust_open_files_limit(config.maxclients);
    notice!("Server initialized");

    // One worker per core (measured: one worker on this 2-core machine gave the same SET rate and
    // a third less GET throughput with redis-benchmark on the other core).
    let workers = std::env::var("STRATA_WORKERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        });
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("strata-worker")
        // Key locks a worker kept lingering between batches are released before it sleeps.
        .on_thread_park({
            let db = db.clone();
            move || db.release_lingering()
        })
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fatal(&format!("Can't start the runtime: {e}")),
    };

    let metrics_at = (config.metrics_bind.clone(), config.metrics_port);
    let tls_at = (config.bind.clone(), config.tls_port);
    let server = Arc::new(Server::new(db, config));
    server
        .metrics
        .install(&metrics_at.0, metrics_at.1, metrics_listeners);
    // The TLS port's sockets can be replaced by CONFIG SET tls-port.
    let (tls_listeners, std_listeners): (Vec<_>, Vec<_>) =
        std_listeners.into_iter().partition(|(_, tls)| *tls);
    server.tls_listeners.install(
        &tls_at.0,
        tls_at.1,
        tls_listeners.into_iter().map(|(l, _)| l).collect(),
    );
    if let Some(contexts) = tls_contexts {
        server.tls.install(contexts);
    }
    if let Err(e) = server.load_users() {
        return fatal(&e);
    }
    // Keys deleted by the active expiry cycle raise `expired` keyspace events and invalidate
    // the clients tracking them.
    let weak = Arc::downgrade(&server);
    server.db.on_expired(Arc::new(move |db, key| {
        if let Some(s) = weak.upgrade() {
            s.key_expired(db, key);
        }
    }));
    if let Err(e) = server.reload_functions() {
        return fatal(&format!("Can't load the function libraries: {e}"));
    }
    let count = server.functions.libraries().len();
    if count > 0 {
        notice!("Loaded {count} function libraries");
    }
    match rdb_plan {
        // The file loads while clients get -LOADING; a replica starts following its leader
        // after it (the leader's copy would replace it anyway, but not while it loads).
        Some(plan) => {
            if let Err(e) = rdb_at_start::start(&server, plan) {
                return fatal(&format!("Can't start loading the RDB file: {e}"));
            }
        }
        // A replica (`replicaof` in the configuration) starts following its leader.
        None => replication::start_from_config(&server),
    }
    runtime.block_on(serve(server, std_listeners))
}

async fn serve(server: Arc<Server>, std_listeners: Vec<(std::net::TcpListener, bool)>) -> i32 {
    // Before the first connection is accepted: a SIGTERM sent once the server answers must find
    // the handler (without it the process died at once, its unflushed log records lost).
    let signals = Signals::install();
    let mut accept_tasks = Vec::new();
    for (l, tls) in std_listeners {
        let local = l.local_addr().ok();
        match tokio::net::TcpListener::from_std(l) {
            Ok(l) => accept_tasks.push(tokio::spawn(listener::accept_loop(server.clone(), l, tls))),
            Err(e) => {
                return fatal(&format!(
                    "Could not register listening socket {local:?}: {e}"
                ))
            }
        }
    }
    let cron = tokio::spawn(cron_loop(server.clone()));
    let metrics = tokio::spawn(metrics::serve(server.clone()));
    let tls_server = server.clone();
    let tls = tokio::spawn(async move {
        let s = tls_server.clone();
        tls_server
            .tls_listeners
            .supervise(|l| tokio::spawn(listener::accept_loop(s.clone(), l, true)))
            .await
    });
    notice!("Ready to accept connections tcp");

    let reason = wait_for_shutdown(&server, signals).await;
    warning!("{reason}");
    for t in &accept_tasks {
        t.abort();
    }
    cron.abort();
    metrics.abort();
    tls.abort();
    finish(&server)
}

/// Raises the open-files limit so `maxclients` connections fit (plus room for the data files),
/// as Redis does; warns when the hard limit does not allow it.
/// The engine tuning the storage directives ask for (docs/architecture.md, "Cold data").
fn engine_tuning(config: &Config) -> strata::EngineTuning {
    strata::EngineTuning {
        partitioned_index: config.partitioned_index,
        index_high_priority: config.index_high_priority,
        uncompressed_levels: config.uncompressed_levels,
        zstd_dictionary_bytes: u32::try_from(config.zstd_dictionary_size).unwrap_or(u32::MAX),
        compaction_rate_limit: config.compaction_rate_limit,
        direct_io_background: config.direct_io_background,
        direct_reads: config.direct_io_reads,
        background_jobs: config.background_jobs,
        l0_slowdown_writes_trigger: config.l0_slowdown_writes_trigger,
        l0_stop_writes_trigger: config.l0_stop_writes_trigger,
        blob_min_size: config.blob_min_size,
    }
}

fn adjust_open_files_limit(maxclients: u64) {
    // RocksDB keeps its SST files open as well: leave generous room for them.
    const RESERVED: u64 = 1024;
    let wanted = maxclients.saturating_add(RESERVED);
    // SAFETY: getrlimit/setrlimit read and write the struct we pass, nothing else.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    if lim.rlim_cur as u64 >= wanted {
        return;
    }
    let target = if lim.rlim_max == libc::RLIM_INFINITY {
        wanted
    } else {
        wanted.min(lim.rlim_max as u64)
    };
    let raised = libc::rlimit {
        rlim_cur: target as libc::rlim_t,
        rlim_max: lim.rlim_max,
    };
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 && target >= wanted {
        return;
    }
    warning!(
        "You requested maxclients of {maxclients} requiring at least {wanted} max file descriptors; \
         the limit is {}. Raise it (ulimit -n) or lower maxclients.",
        if target > lim.rlim_cur as u64 { target } else { lim.rlim_cur as u64 }
    );
}

/// Runs the server cron `hz` times a second.
async fn cron_loop(server: Arc<Server>) {
    let mut last_second = std::time::Instant::now();
    loop {
        let hz = u64::from(server.config().hz.clamp(1, 500));
        tokio::time::sleep(Duration::from_millis(1000 / hz)).await;
        let second_elapsed = last_second.elapsed() >= Duration::from_secs(1);
        if second_elapsed {
            last_second = std::time::Instant::now();
        }
        server.cron(second_elapsed);
    }
}

/// The SIGTERM and SIGINT handlers (`None` if they could not be installed).
struct Signals(Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>);

impl Signals {
    fn install() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(t), Ok(i)) => Signals(Some((t, i))),
            _ => Signals(None),
        }
    }
}

/// Waits for SIGTERM, SIGINT or SHUTDOWN; returns what to log.
async fn wait_for_shutdown(server: &Server, signals: Signals) -> &'static str {
    let mut shutdown = server.shutdown_signal();
    let (mut term, mut int) = match signals.0 {
        Some(handlers) => handlers,
        None => {
            warning!("Can't install signal handlers; SHUTDOWN still works");
            let _ = shutdown.wait_for(|v| *v).await;
            return "User requested shutdown...";
        }
    };
    tokio::select! {
        _ = term.recv() => "Received SIGTERM scheduling shutdown...",
        _ = int.recv() => "Received SIGINT scheduling shutdown...",
        _ = shutdown.wait_for(|v| *v) => "User requested shutdown...",
    }
}

/// Flushes the database and returns the exit code. Background RocksDB threads are still running,
/// so the process ends with `_exit` after this (see `exit_now`).
fn finish(server: &Server) -> i32 {
    // Let a running BGSAVE complete (bounded), so its checkpoint is not left half written.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.bgsave_in_progress() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // A Redis leader's link stops here, its offset recorded with the data flushed below.
    server.replication.stop_for_shutdown(&server.db);
    server.db.shutdown();
    notice!("Flushing the database before exiting.");
    let code = match server.db.flush() {
        Ok(()) => {
            server.replication.mark_clean_shutdown(server.db.last_seq());
            notice!("Data flushed to disk.");
            0
        }
        Err(e) => {
            warning!("Error flushing the database on shutdown: {e}");
            1
        }
    };
    notice!("Strata is now ready to exit, bye bye...");
    exit_now(code)
}

/// Ends the process at once. The data is already durable (WAL synced and memtables flushed);
/// skipping C++ static destructors avoids racing RocksDB's background threads at exit.
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit only ends the process.
    unsafe { libc::_exit(code) }
}
