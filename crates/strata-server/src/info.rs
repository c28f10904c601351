//! The INFO command's text: Redis 7's sections and field names (server, clients, memory,
//! persistence, stats, replication, cpu, modules, errorstats, cluster, keyspace, plus the
//! commandstats and the empty latencystats of `INFO all`), filled from the server's state, the storage engine and
//! the operating system (`uname`; the shared figures come from `figures.rs`). Only reads; changes nothing.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use crate::figures;
use crate::server::Server;

/// The sections `INFO` / `INFO default` prints, in Redis's order.
const DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// The sections of `INFO all` (`everything` adds nothing more here: there are no modules).
const ALL: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// The INFO text for `sections` (lowercase names or `default` / `all` / `everything`; empty means
/// default). Unknown section names are ignored, as Redis does.
pub fn render(server: &Server, sections: &[String]) -> String {
    let wanted: Vec<&str> = if sections.is_empty() {
        DEFAULT.to_vec()
    } else {
        let mut set = std::collections::HashSet::new();
        for s in sections {
            match s.as_str() {
                "default" => set.extend(DEFAULT.iter().copied()),
                "all" | "everything" => set.extend(ALL.iter().copied()),
                other => {
                    set.insert(other);
                }
            }
        }
        ALL.iter().copied().filter(|s| set.contains(s)).collect()
    };
    let mut out = String::with_capacity(4096);
    for (i, section) in wanted.iter().enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        match *section {
            "server" => server_section(server, &mut out),
            "clients" => clients_section(server, &mut out),
            "memory" => memory_section(server, &mut out),
            "persistence" => persistence_section(server, &mut out),
            "stats" => stats_section(server, &mut out),
            "replication" => server.replication.info(server, &mut out),
            "cpu" => cpu_section(&mut out),
            "modules" => out.push_str("# Modules\r\n"),
            "commandstats" => commandstats_section(server, &mut out),
            "errorstats" => errorstats_section(server, &mut out),
            "latencystats" => latencystats_section(server, &mut out),
            "cluster" => out.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
            "keyspace" => keyspace_section(server, &mut out),
            _ => {}
        }
    }
    out
}

macro_rules! field {
    ($out:expr, $name:expr, $($arg:tt)*) => {{
        let _ = write!($out, "{}:", $name);
        let _ = write!($out, $($arg)*);
        $out.push_str("\r\n");
    }};
}

fn server_section(server: &Server, out: &mut String) {
    let cfg = server.config();
    let hz = cfg.hz;
    drop(cfg);
    let uptime = server.started.elapsed().as_secs();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let executable = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let config_file = server
        .config_file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    out.push_str("# Server\r\n");
    field!(out, "redis_version", "7.0.15");
    field!(out, "strata_version", "{}", env!("CARGO_PKG_VERSION"));
    field!(out, "redis_git_sha1", "00000000");
    field!(out, "redis_git_dirty", "0");
    field!(out, "redis_build_id", "0");
    field!(out, "redis_mode", "standalone");
    field!(out, "os", "{}", os_name());
    field!(out, "arch_bits", "{}", usize::BITS);
    field!(out, "monotonic_clock", "POSIX clock_gettime");
    field!(out, "multiplexing_api", "epoll");
    field!(out, "atomicvar_api", "c11-builtin");
    field!(out, "gcc_version", "0.0.0");
    field!(out, "process_id", "{}", std::process::id());
    field!(out, "process_supervised", "no");
    field!(out, "run_id", "{}", server.run_id);
    field!(out, "tcp_port", "{}", server.port);
    field!(out, "server_time_usec", "{now_us}");
    field!(out, "uptime_in_seconds", "{uptime}");
    field!(out, "uptime_in_days", "{}", uptime / 86400);
    field!(out, "hz", "{hz}");
    field!(out, "configured_hz", "{hz}");
    field!(out, "lru_clock", "{}", (now_us / 1_000_000) & 0xFF_FFFF);
    field!(out, "executable", "{executable}");
    field!(out, "config_file", "{config_file}");
    field!(out, "io_threads_active", "0");
}

fn clients_section(server: &Server, out: &mut String) {
    out.push_str("# Clients\r\n");
    field!(out, "connected_clients", "{}", server.registry.len());
    field!(out, "cluster_connections", "0");
    field!(out, "maxclients", "{}", server.maxclients());
    field!(out, "client_recent_max_input_buffer", "0");
    field!(out, "client_recent_max_output_buffer", "0");
    field!(
        out,
        "blocked_clients",
        "{}",
        figures::blocked_clients(server)
    );
    field!(out, "tracking_clients", "{}", server.tracking.clients());
    field!(
        out,
        "clients_in_timeout_table",
        "{}",
        server.blocking.with_timeout()
    );
}

fn memory_section(server: &Server, out: &mut String) {
    let m = figures::memory(server);
    let (rss, peak, total) = (m.rss, m.peak, m.total_system);
    let block_cache = server.config().block_cache_size;
    let hot_cache = server.config().hot_cache_bytes(crate::host_memory::limit());
    out.push_str("# Memory\r\n");
    field!(out, "used_memory", "{rss}");
    field!(out, "used_memory_human", "{}", human_bytes(rss));
    field!(out, "used_memory_rss", "{rss}");
    field!(out, "used_memory_rss_human", "{}", human_bytes(rss));
    field!(out, "used_memory_peak", "{peak}");
    field!(out, "used_memory_peak_human", "{}", human_bytes(peak));
    field!(
        out,
        "used_memory_peak_perc",
        "{:.2}%",
        if peak > 0 {
            rss as f64 * 100.0 / peak as f64
        } else {
            100.0
        }
    );
    field!(out, "total_system_memory", "{total}");
    field!(out, "total_system_memory_human", "{}", human_bytes(total));
    // Script memory: the bodies in the script cache and the libraries' code (the interpreters
    // belong to the worker threads and are not measured).
    field!(out, "used_memory_lua", "0");
    field!(out, "used_memory_vm_eval", "0");
    field!(out, "used_memory_lua_human", "0B");
    field!(out, "used_memory_scripts_eval", "{}", m.scripts_bytes);
    field!(out, "number_of_cached_scripts", "{}", m.scripts);
    field!(out, "number_of_functions", "{}", m.functions);
    field!(out, "number_of_libraries", "{}", m.libraries);
    field!(out, "used_memory_vm_functions", "0");
    field!(out, "used_memory_vm_total", "0");
    field!(out, "used_memory_vm_total_human", "0B");
    field!(out, "used_memory_functions", "{}", m.functions_bytes);
    let script_memory = m.scripts_bytes + m.functions_bytes;
    field!(out, "used_memory_scripts", "{script_memory}");
    field!(
        out,
        "used_memory_scripts_human",
        "{}",
        human_bytes(script_memory)
    );
    field!(out, "maxmemory", "0");
    field!(out, "maxmemory_human", "0B");
    field!(out, "maxmemory_policy", "noeviction");
    field!(out, "mem_fragmentation_ratio", "1.00");
    // The global allocator (main.rs).
    field!(out, "mem_allocator", "mimalloc");
    field!(out, "strata_block_cache_size", "{block_cache}");
    // The hot-record cache's budget (`hot-cache-size`, a percentage resolved at start).
    field!(out, "strata_hot_cache_size", "{hot_cache}");
    field!(out, "strata_sst_size", "{}", m.engine.total_sst_bytes);
    // Where the memory goes (docs/reliability.md, "Resource bounds"): memtables of every column
    // family, and table readers (per-file metadata not charged to the block cache).
    field!(out, "strata_memtables", "{}", m.engine.memtable_bytes);
    field!(
        out,
        "strata_table_readers",
        "{}",
        m.engine.table_readers_bytes
    );
    // The block cache's contents (index, filter and data blocks) and the part of them pinned
    // (level-0 files' index and filter blocks, blocks in use), which may exceed its capacity.
    field!(
        out,
        "strata_block_cache_usage",
        "{}",
        m.engine.block_cache_usage
    );
    field!(
        out,
        "strata_block_cache_pinned",
        "{}",
        m.engine.block_cache_pinned
    );
    // What the Rust side's allocator has committed (the write-back tier, the hot-record cache,
    // connections); RocksDB allocates with the C library's malloc, outside this figure.
    field!(
        out,
        "strata_allocator_committed",
        "{}",
        m.allocator_committed
    );
}

fn persistence_section(server: &Server, out: &mut String) {
    let appendfsync = server.config().appendfsync.name();
    out.push_str("# Persistence\r\n");
    field!(
        out,
        "loading",
        "{}",
        u8::from(server.replication.is_loading())
    );
    field!(out, "async_loading", "0");
    field!(out, "current_cow_peak", "0");
    field!(out, "current_cow_size", "0");
    field!(out, "current_fork_perc", "0.00");
    field!(out, "current_save_keys_processed", "0");
    field!(out, "current_save_keys_total", "0");
    field!(out, "rdb_changes_since_last_save", "0");
    field!(
        out,
        "rdb_bgsave_in_progress",
        "{}",
        u8::from(server.bgsave_in_progress())
    );
    field!(out, "rdb_last_save_time", "{}", server.lastsave());
    field!(
        out,
        "rdb_last_bgsave_status",
        "{}",
        if server.last_bgsave_ok() { "ok" } else { "err" }
    );
    field!(out, "rdb_last_bgsave_time_sec", "-1");
    field!(out, "rdb_current_bgsave_time_sec", "-1");
    field!(out, "aof_enabled", "1");
    field!(out, "aof_rewrite_in_progress", "0");
    field!(out, "aof_rewrite_scheduled", "0");
    field!(out, "aof_last_rewrite_time_sec", "-1");
    field!(out, "aof_current_rewrite_time_sec", "-1");
    field!(out, "aof_last_bgrewrite_status", "ok");
    // Writes refused for lack of disk space (`min-free-disk`) are Redis's failed AOF writes.
    field!(
        out,
        "aof_last_write_status",
        "{}",
        if server.db.disk_full() || server.db.tier_failure().is_some() {
            "err"
        } else {
            "ok"
        }
    );
    if let Some(p) = server.replication.loading_progress() {
        let (perc, eta) = p.perc_and_eta(strata::now_ms() / 1000);
        field!(out, "loading_start_time", "{}", p.start_time);
        field!(out, "loading_total_bytes", "{}", p.total_bytes);
        field!(out, "loading_rdb_used_mem", "0");
        field!(out, "loading_loaded_bytes", "{}", p.loaded_bytes);
        field!(out, "loading_loaded_perc", "{perc:.2}");
        field!(out, "loading_eta_seconds", "{eta}");
    }
    field!(out, "strata_appendfsync", "{appendfsync}");
    let tier = server.db.tier_figures();
    let tier_name = if tier.is_some() {
        "write-back"
    } else {
        "write-through"
    };
    field!(out, "strata_memory_tier", "{tier_name}");
    if let Some([active, frozen, checkpoints, written, last_ms, replayed]) = tier {
        field!(out, "strata_tier_dirty_bytes", "{active}");
        field!(out, "strata_tier_checkpointing_bytes", "{frozen}");
        field!(out, "strata_tier_checkpoints", "{checkpoints}");
        field!(out, "strata_tier_checkpointed_bytes", "{written}");
        field!(
            out,
            "strata_tier_last_checkpoint_time",
            "{}",
            last_ms / 1000
        );
        field!(out, "strata_tier_replayed_records", "{replayed}");
        let status = match server.db.tier_failure() {
            Some(_) => "err",
            None => "ok",
        };
        field!(out, "strata_tier_last_checkpoint_status", "{status}");
    }
    if let Some([rate, delayed, delayed_us, stopped, stopped_us, took_ms, engine]) =
        server.db.tier_pace()
    {
        field!(out, "strata_tier_last_checkpoint_took_ms", "{took_ms}");
        field!(out, "strata_tier_delayed_write_rate", "{rate}");
        field!(out, "strata_tier_engine_write_rate", "{engine}");
        field!(out, "strata_tier_delayed_writes", "{delayed}");
        field!(out, "strata_tier_delayed_write_micros", "{delayed_us}");
        field!(out, "strata_tier_stopped_writes", "{stopped}");
        field!(out, "strata_tier_stopped_write_micros", "{stopped_us}");
    }
}

fn stats_section(server: &Server, out: &mut String) {
    let s = &server.stats;
    let d = server.db.stats();
    let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    out.push_str("# Stats\r\n");
    field!(
        out,
        "total_connections_received",
        "{}",
        get(&s.connections_received)
    );
    field!(
        out,
        "total_commands_processed",
        "{}",
        s.commands_processed()
    );
    field!(out, "instantaneous_ops_per_sec", "{}", server.ops_per_sec());
    field!(out, "total_net_input_bytes", "{}", s.net_input_bytes());
    field!(out, "total_net_output_bytes", "{}", s.net_output_bytes());
    field!(out, "instantaneous_input_kbps", "0.00");
    field!(out, "instantaneous_output_kbps", "0.00");
    field!(
        out,
        "rejected_connections",
        "{}",
        get(&s.rejected_connections)
    );
    let repl = &server.replication;
    field!(
        out,
        "sync_full",
        "{}",
        repl.sync_full.load(Ordering::Relaxed)
    );
    field!(
        out,
        "sync_partial_ok",
        "{}",
        repl.sync_partial_ok.load(Ordering::Relaxed)
    );
    field!(
        out,
        "sync_partial_err",
        "{}",
        repl.sync_partial_err.load(Ordering::Relaxed)
    );
    field!(out, "expired_keys", "{}", get(&d.expired_keys));
    field!(out, "expired_stale_perc", "0.00");
    field!(out, "expired_time_cap_reached_count", "0");
    field!(out, "evicted_keys", "0");
    field!(out, "keyspace_hits", "{}", get(&d.keyspace_hits));
    field!(out, "keyspace_misses", "{}", get(&d.keyspace_misses));
    let ps = &server.pubsub;
    use strata_commands::ChannelKind;
    field!(
        out,
        "pubsub_channels",
        "{}",
        ps.numchannels(ChannelKind::Channel)
    );
    field!(out, "pubsub_patterns", "{}", ps.numpat());
    field!(
        out,
        "pubsubshard_channels",
        "{}",
        ps.numchannels(ChannelKind::Shard)
    );
    field!(out, "latest_fork_usec", "0");
    field!(out, "total_forks", "0");
    field!(out, "migrate_cached_sockets", "0");
    field!(out, "total_active_defrag_time", "0");
    field!(
        out,
        "tracking_total_keys",
        "{}",
        server.tracking.total_keys()
    );
    field!(
        out,
        "tracking_total_items",
        "{}",
        server.tracking.total_items()
    );
    field!(
        out,
        "tracking_total_prefixes",
        "{}",
        server.tracking.total_prefixes()
    );
    field!(out, "unexpected_error_replies", "0");
    field!(
        out,
        "total_error_replies",
        "{}",
        server.command_stats.error_replies()
    );
    engine_fields(&server.db.engine_gauges(), out);
}

/// The storage engine's own signals, beside the Stats: why a tail grew (write stalls, a
/// compaction backlog, level-0 files piling up, block cache misses) and what compaction costs.
fn engine_fields(g: &strata::EngineGauges, out: &mut String) {
    field!(out, "strata_write_stall_micros", "{}", g.write_stall_micros);
    field!(
        out,
        "strata_pending_compaction_bytes",
        "{}",
        g.pending_compaction_bytes
    );
    field!(out, "strata_l0_files", "{}", g.l0_files);
    field!(
        out,
        "strata_running_compactions",
        "{}",
        g.running_compactions
    );
    field!(out, "strata_running_flushes", "{}", g.running_flushes);
    field!(out, "strata_block_cache_hits", "{}", g.block_cache_hits);
    field!(out, "strata_block_cache_misses", "{}", g.block_cache_misses);
    let lookups = g.block_cache_hits + g.block_cache_misses;
    let rate = if lookups > 0 {
        g.block_cache_hits as f64 * 100.0 / lookups as f64
    } else {
        0.0
    };
    field!(out, "strata_block_cache_hit_rate", "{rate:.2}");
    field!(
        out,
        "strata_compaction_read_bytes",
        "{}",
        g.compaction_read_bytes
    );
    field!(
        out,
        "strata_compaction_written_bytes",
        "{}",
        g.compaction_written_bytes
    );
    // Whether a miss of each hot-record cache family is answered from memory (1) or read from
    // RocksDB (0): docs/architecture.md, "Misses answered from memory".
    let [meta, data] = g.hot_cache_complete.map(u8::from);
    field!(out, "strata_hot_cache_complete", "meta={meta},data={data}");
}

fn commandstats_section(server: &Server, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for (name, t) in server.command_stats.calls() {
        let per_call = if t.calls > 0 {
            t.usec as f64 / t.calls as f64
        } else {
            0.0
        };
        let _ = write!(
            out,
            "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
            t.calls, t.usec, t.rejected, t.failed
        );
    }
}

fn errorstats_section(server: &Server, out: &mut String) {
    out.push_str("# Errorstats\r\n");
    for (code, count) in server.command_stats.errors() {
        let _ = write!(out, "errorstat_{code}:count={count}\r\n");
    }
}

fn latencystats_section(server: &Server, out: &mut String) {
    out.push_str("# Latencystats\r\n");
    let percentiles: Vec<(String, f64)> = server
        .config()
        .latency_tracking_info_percentiles
        .iter()
        .filter_map(|p| Some((p.clone(), p.parse().ok()?)))
        .collect();
    out.push_str(&server.command_stats.latencystats(&percentiles));
}

fn cpu_section(out: &mut String) {
    let (sys, user) = figures::cpu_seconds(libc::RUSAGE_SELF);
    let (csys, cuser) = figures::cpu_seconds(libc::RUSAGE_CHILDREN);
    out.push_str("# CPU\r\n");
    field!(out, "used_cpu_sys", "{sys:.6}");
    field!(out, "used_cpu_user", "{user:.6}");
    field!(out, "used_cpu_sys_children", "{csys:.6}");
    field!(out, "used_cpu_user_children", "{cuser:.6}");
}

fn keyspace_section(server: &Server, out: &mut String) {
    out.push_str("# Keyspace\r\n");
    for d in figures::keyspace(server) {
        let _ = write!(
            out,
            "db{}:keys={},expires={},avg_ttl={}\r\n",
            d.db, d.keys, d.expires, d.avg_ttl_ms
        );
    }
}

/// `uname -srm`, as Redis's `os` field.
fn os_name() -> String {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated C strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return std::env::consts::OS.to_string();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

/// Redis's `bytesToHuman`: `512B`, `1.50K`, `2.00M`, `3.25G`.
pub fn human_bytes(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if n < 1024 {
        format!("{n}B")
    } else if f < K * K {
        format!("{:.2}K", f / K)
    } else if f < K * K * K {
        format!("{:.2}M", f / (K * K))
    } else if f < K * K * K * K {
        format!("{:.2}G", f / (K * K * K))
    } else {
        format!("{:.2}T", f / (K * K * K * K))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_matches_redis() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1023), "1023B");
        assert_eq!(human_bytes(1536), "1.50K");
        assert_eq!(human_bytes(2 << 20), "2.00M");
    }

    #[test]
    fn os_name_is_known() {
        assert!(!os_name().is_empty());
    }
}
