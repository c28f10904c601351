//! What the metrics endpoint serves: the figures redis_exporter users chart, under
//! redis_exporter's names where it has one (`redis_connected_clients`, `redis_commands_total`,
//! `redis_db_keys`...), then the storage engine's under `strata_rocksdb_` and the write-back
//! memory tier's under `strata_tier_`. Every figure is read from where INFO reads it
//! (`figures.rs`, the server's counters, `Replication::figures`); only the wording is here.

use std::sync::atomic::Ordering;

use super::exposition::{Exposition, Type};
use crate::figures;
use crate::server::Server;

use Type::{Counter, Gauge, Histogram, Summary};

/// Every series, as exposition text.
pub fn render(server: &Server) -> String {
    let mut e = Exposition::default();
    server_series(server, &mut e);
    client_series(server, &mut e);
    stats_series(server, &mut e);
    command_series(server, &mut e);
    keyspace_series(server, &mut e);
    replication_series(server, &mut e);
    memory_series(server, &mut e);
    e.finish()
}

fn server_series(server: &Server, e: &mut Exposition) {
    e.single(
        "redis_up",
        Gauge,
        "Whether the server answers (always 1 when scraped).",
        1u8,
    );
    let role = if server.replication.is_replica() {
        "slave"
    } else {
        "master"
    };
    e.family(
        "redis_instance_info",
        Gauge,
        "Information about the server, in labels (value 1).",
    );
    let port = server.port.to_string();
    e.sample(
        "redis_instance_info",
        &[
            ("redis_version", "7.0.15"),
            ("strata_version", env!("CARGO_PKG_VERSION")),
            ("redis_mode", "standalone"),
            ("role", role),
            ("run_id", &server.run_id),
            ("tcp_port", &port),
        ],
        1u8,
    );
    let uptime = server.started.elapsed().as_secs_f64();
    e.single(
        "redis_uptime_in_seconds",
        Gauge,
        "Seconds since the server started.",
        uptime.floor(),
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    e.single(
        "redis_start_time_seconds",
        Gauge,
        "When the server started, in Unix seconds.",
        (now - uptime).floor(),
    );
    let (sys, user) = figures::cpu_seconds(libc::RUSAGE_SELF);
    e.single(
        "redis_cpu_sys_seconds_total",
        Counter,
        "System CPU time of the server process.",
        sys,
    );
    e.single(
        "redis_cpu_user_seconds_total",
        Counter,
        "User CPU time of the server process.",
        user,
    );
}

fn client_series(server: &Server, e: &mut Exposition) {
    e.single(
        "redis_connected_clients",
        Gauge,
        "Client connections (replicas excluded).",
        server.registry.len() as f64,
    );
    e.single(
        "redis_blocked_clients",
        Gauge,
        "Clients blocked on keys (BLPOP...) or held by CLIENT PAUSE.",
        figures::blocked_clients(server) as f64,
    );
    e.single(
        "redis_tracking_clients",
        Gauge,
        "Clients with CLIENT TRACKING on.",
        server.tracking.clients() as f64,
    );
    e.single(
        "redis_config_maxclients",
        Gauge,
        "The maxclients setting.",
        server.maxclients() as f64,
    );
    e.single(
        "redis_pubsub_channels",
        Gauge,
        "Channels with at least one subscriber.",
        server
            .pubsub
            .numchannels(strata_commands::ChannelKind::Channel) as f64,
    );
    e.single(
        "redis_pubsub_patterns",
        Gauge,
        "Pattern subscriptions.",
        server.pubsub.numpat() as f64,
    );
}

fn stats_series(server: &Server, e: &mut Exposition) {
    let s = &server.stats;
    let d = server.db.stats();
    let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed) as f64;
    e.single(
        "redis_connections_received_total",
        Counter,
        "Connections accepted, refused ones included.",
        get(&s.connections_received),
    );
    e.single(
        "redis_rejected_connections_total",
        Counter,
        "Connections refused because of maxclients.",
        get(&s.rejected_connections),
    );
    e.single(
        "redis_commands_processed_total",
        Counter,
        "Commands run.",
        s.commands_processed() as f64,
    );
    e.single(
        "redis_instantaneous_ops_per_sec",
        Gauge,
        "Commands per second, averaged over the last 1.6 seconds.",
        server.ops_per_sec() as f64,
    );
    e.single(
        "redis_net_input_bytes_total",
        Counter,
        "Bytes read from clients.",
        s.net_input_bytes() as f64,
    );
    e.single(
        "redis_net_output_bytes_total",
        Counter,
        "Bytes written to clients.",
        s.net_output_bytes() as f64,
    );
    e.single(
        "redis_keyspace_hits_total",
        Counter,
        "Key lookups that found the key.",
        get(&d.keyspace_hits),
    );
    e.single(
        "redis_keyspace_misses_total",
        Counter,
        "Key lookups that did not find the key.",
        get(&d.keyspace_misses),
    );
    e.single(
        "redis_expired_keys_total",
        Counter,
        "Keys deleted because their time to live ended.",
        get(&d.expired_keys),
    );
    e.single(
        "redis_evicted_keys_total",
        Counter,
        "Keys evicted by maxmemory (always 0: Strata does not evict).",
        0u8,
    );
    e.single(
        "redis_last_save_timestamp_seconds",
        Gauge,
        "When the last SAVE or BGSAVE ended, in Unix seconds.",
        server.lastsave() as f64,
    );
    e.single(
        "redis_rdb_bgsave_in_progress",
        Gauge,
        "Whether a BGSAVE is running.",
        u8::from(server.bgsave_in_progress()),
    );
    e.single(
        "redis_rdb_last_bgsave_status",
        Gauge,
        "Whether the last BGSAVE succeeded.",
        u8::from(server.last_bgsave_ok()),
    );
}

fn command_series(server: &Server, e: &mut Exposition) {
    let calls = server.command_stats.calls();
    e.family("redis_commands_total", Counter, "Calls per command.");
    for (name, t) in &calls {
        e.sample("redis_commands_total", &[("cmd", name)], t.calls as f64);
    }
    e.family(
        "redis_commands_duration_seconds_total",
        Counter,
        "Time spent running each command.",
    );
    for (name, t) in &calls {
        e.sample(
            "redis_commands_duration_seconds_total",
            &[("cmd", name)],
            t.usec as f64 / 1e6,
        );
    }
    e.family(
        "redis_commands_rejected_calls_total",
        Counter,
        "Calls refused before running (arity, ACL, -BUSY...), per command.",
    );
    for (name, t) in &calls {
        e.sample(
            "redis_commands_rejected_calls_total",
            &[("cmd", name)],
            t.rejected as f64,
        );
    }
    e.family(
        "redis_commands_failed_calls_total",
        Counter,
        "Calls that ran and answered an error, per command.",
    );
    for (name, t) in &calls {
        e.sample(
            "redis_commands_failed_calls_total",
            &[("cmd", name)],
            t.failed as f64,
        );
    }
    e.family(
        "redis_errors_total",
        Counter,
        "Error replies per error code.",
    );
    for (code, n) in server.command_stats.errors() {
        e.sample("redis_errors_total", &[("err", &code)], n as f64);
    }
    e.single(
        "redis_error_replies_total",
        Counter,
        "Error replies sent.",
        server.command_stats.error_replies() as f64,
    );
    // Latency: the per-command histograms INFO latencystats and LATENCY HISTOGRAM read.
    let usec: std::collections::HashMap<&str, u64> =
        calls.iter().map(|(n, t)| (*n, t.usec)).collect();
    let histograms: Vec<_> = server
        .command_stats
        .histogram_names()
        .into_iter()
        .filter_map(|n| Some((n, server.command_stats.histogram(n)?)))
        .collect();
    let percentiles: Vec<(String, f64)> = server
        .config()
        .latency_tracking_info_percentiles
        .iter()
        .filter_map(|p| Some((p.clone(), p.parse::<f64>().ok()?)))
        .collect();
    e.family(
        "redis_latency_percentiles_usec",
        Summary,
        "Latency percentiles per command (latency-tracking-info-percentiles), in microseconds.",
    );
    for (name, h) in &histograms {
        for (_, p) in &percentiles {
            let q = quantile(*p);
            e.sample(
                "redis_latency_percentiles_usec",
                &[("cmd", name), ("quantile", &q)],
                h.value_at_percentile(*p) as f64 / 1000.0,
            );
        }
        let sum = usec.get(name).copied().unwrap_or(0);
        e.sample(
            "redis_latency_percentiles_usec_sum",
            &[("cmd", name)],
            sum as f64,
        );
        e.sample(
            "redis_latency_percentiles_usec_count",
            &[("cmd", name)],
            h.total() as f64,
        );
    }
    e.family(
        "redis_commands_latencies_usec",
        Histogram,
        "Latency histogram per command (LATENCY HISTOGRAM's buckets), in microseconds.",
    );
    for (name, h) in &histograms {
        for (le, cumulative) in h.log_buckets() {
            let le = le.to_string();
            e.sample(
                "redis_commands_latencies_usec_bucket",
                &[("cmd", name), ("le", &le)],
                cumulative as f64,
            );
        }
        e.sample(
            "redis_commands_latencies_usec_bucket",
            &[("cmd", name), ("le", "+Inf")],
            h.total() as f64,
        );
        let sum = usec.get(name).copied().unwrap_or(0);
        e.sample(
            "redis_commands_latencies_usec_sum",
            &[("cmd", name)],
            sum as f64,
        );
        e.sample(
            "redis_commands_latencies_usec_count",
            &[("cmd", name)],
            h.total() as f64,
        );
    }
}

fn keyspace_series(server: &Server, e: &mut Exposition) {
    let dbs = figures::keyspace(server);
    let label = |d: &figures::DbFigures| format!("db{}", d.db);
    e.family(
        "redis_db_keys",
        Gauge,
        "Keys per database (databases holding keys).",
    );
    for d in &dbs {
        e.sample("redis_db_keys", &[("db", &label(d))], d.keys as f64);
    }
    e.family(
        "redis_db_keys_expiring",
        Gauge,
        "Keys with a time to live, per database.",
    );
    for d in &dbs {
        e.sample(
            "redis_db_keys_expiring",
            &[("db", &label(d))],
            d.expires as f64,
        );
    }
    e.family(
        "redis_db_avg_ttl_seconds",
        Gauge,
        "Average time to live of the keys that have one, per database.",
    );
    for d in &dbs {
        e.sample(
            "redis_db_avg_ttl_seconds",
            &[("db", &label(d))],
            d.avg_ttl_ms as f64 / 1000.0,
        );
    }
}

fn replication_series(server: &Server, e: &mut Exposition) {
    let f = server.replication.figures(server);
    e.single(
        "redis_connected_slaves",
        Gauge,
        "Replicas attached to this server.",
        f.replicas.len() as f64,
    );
    e.single(
        "redis_master_repl_offset",
        Gauge,
        "The replication offset (the last write's sequence number, or the last applied on a replica).",
        f.offset as f64,
    );
    e.single(
        "redis_replication_backlog_bytes",
        Gauge,
        "The repl-backlog-size setting: bytes of archived log kept for replicas.",
        server.config().repl_backlog_size as f64,
    );
    // One gauge per attached replica, labelled as redis_exporter labels them.
    let per_replica =
        |e: &mut Exposition, name: &str, help: &str, value: &dyn Fn(u64, u64) -> f64| {
            e.family(name, Gauge, help);
            for r in &f.replicas {
                let port = r.port.to_string();
                let labels = [
                    ("slave_ip", r.ip.as_str()),
                    ("slave_port", port.as_str()),
                    ("slave_state", r.state),
                ];
                e.sample(name, &labels, value(r.offset, r.lag_seconds));
            }
        };
    per_replica(
        e,
        "redis_connected_slave_offset_bytes",
        "The offset each attached replica last acknowledged.",
        &|offset, _| offset as f64,
    );
    per_replica(
        e,
        "redis_connected_slave_lag_seconds",
        "Seconds since each attached replica last acknowledged.",
        &|_, lag| lag as f64,
    );
    per_replica(
        e,
        "strata_connected_slave_lag_offset",
        "How far each attached replica's acknowledged offset is behind this server's (in offsets: sequence numbers).",
        &|offset, _| f.offset.saturating_sub(offset) as f64,
    );
    if let Some(l) = &f.leader {
        e.single(
            "redis_master_link_up",
            Gauge,
            "Whether this replica's link to its leader is up.",
            u8::from(l.up),
        );
        e.single(
            "redis_slave_repl_offset",
            Gauge,
            "The leader's offset this replica has applied.",
            f.offset as f64,
        );
        e.single(
            "redis_master_last_io_seconds_ago",
            Gauge,
            "Seconds since anything arrived from the leader (-1: nothing yet).",
            l.last_io_seconds_ago.map_or(-1.0, |s| s as f64),
        );
        e.single(
            "redis_master_sync_in_progress",
            Gauge,
            "Whether a full copy from the leader is being loaded.",
            u8::from(l.loading),
        );
        e.single(
            "strata_master_lag_offset",
            Gauge,
            "How far this replica is behind the leader's last heartbeat (in offsets).",
            l.leader_offset.saturating_sub(f.offset) as f64,
        );
    }
}

fn memory_series(server: &Server, e: &mut Exposition) {
    let m = figures::memory(server);
    e.single(
        "redis_memory_used_bytes",
        Gauge,
        "Memory used by the server (its resident set size: see docs/monitoring.md).",
        m.rss as f64,
    );
    e.single(
        "redis_memory_used_rss_bytes",
        Gauge,
        "Resident set size of the server process.",
        m.rss as f64,
    );
    e.single(
        "redis_memory_used_peak_bytes",
        Gauge,
        "The highest memory use seen.",
        m.peak as f64,
    );
    e.single(
        "redis_memory_max_bytes",
        Gauge,
        "The maxmemory setting (0: no limit; Strata does not evict).",
        0u8,
    );
    e.single(
        "redis_total_system_memory_bytes",
        Gauge,
        "The machine's memory.",
        m.total_system as f64,
    );
    e.single(
        "redis_memory_used_scripts_bytes",
        Gauge,
        "Bytes of cached EVAL scripts and FUNCTION libraries' code.",
        (m.scripts_bytes + m.functions_bytes) as f64,
    );
    e.single(
        "strata_allocator_committed_bytes",
        Gauge,
        "Bytes the allocator (mimalloc) has committed from the system.",
        m.allocator_committed as f64,
    );
    let g = &m.engine;
    let rocks: [(&str, Type, &str, f64); 17] = [
        (
            "strata_rocksdb_block_cache_capacity_bytes",
            Gauge,
            "The block cache's capacity (block-cache-size).",
            g.block_cache_capacity as f64,
        ),
        (
            "strata_rocksdb_block_cache_usage_bytes",
            Gauge,
            "Bytes in the block cache (data, index and filter blocks).",
            g.block_cache_usage as f64,
        ),
        (
            "strata_rocksdb_block_cache_pinned_bytes",
            Gauge,
            "Bytes of the block cache pinned by readers.",
            g.block_cache_pinned as f64,
        ),
        (
            "strata_rocksdb_block_cache_hits_total",
            Counter,
            "Block cache lookups that found the block.",
            g.block_cache_hits as f64,
        ),
        (
            "strata_rocksdb_block_cache_misses_total",
            Counter,
            "Block cache lookups that read the block from a file.",
            g.block_cache_misses as f64,
        ),
        (
            "strata_rocksdb_memtable_bytes",
            Gauge,
            "Bytes in memtables (written, not yet flushed), all column families.",
            g.memtable_bytes as f64,
        ),
        (
            "strata_rocksdb_table_readers_bytes",
            Gauge,
            "Memory of table readers (index and filter metadata) not charged to the block cache.",
            g.table_readers_bytes as f64,
        ),
        (
            "strata_rocksdb_pending_compaction_bytes",
            Gauge,
            "Bytes compaction estimates it still has to rewrite.",
            g.pending_compaction_bytes as f64,
        ),
        (
            "strata_rocksdb_write_stall_seconds_total",
            Counter,
            "Time writes were delayed or stopped by RocksDB (write stalls).",
            g.write_stall_micros as f64 / 1e6,
        ),
        (
            "strata_rocksdb_live_sst_bytes",
            Gauge,
            "Bytes of the table files the current version uses.",
            g.live_sst_bytes as f64,
        ),
        (
            "strata_rocksdb_total_sst_bytes",
            Gauge,
            "Bytes of all table files (also those kept for snapshots and checkpoints).",
            g.total_sst_bytes as f64,
        ),
        (
            "strata_rocksdb_l0_files",
            Gauge,
            "Table files at level 0.",
            g.l0_files as f64,
        ),
        (
            "strata_rocksdb_compaction_read_bytes_total",
            Counter,
            "Bytes compactions read from table files.",
            g.compaction_read_bytes as f64,
        ),
        (
            "strata_rocksdb_compaction_written_bytes_total",
            Counter,
            "Bytes compactions wrote to table files.",
            g.compaction_written_bytes as f64,
        ),
        (
            "strata_rocksdb_running_compactions",
            Gauge,
            "Compactions running now.",
            g.running_compactions as f64,
        ),
        (
            "strata_rocksdb_running_flushes",
            Gauge,
            "Memtable flushes running now.",
            g.running_flushes as f64,
        ),
        (
            "strata_rocksdb_block_cache_configured_bytes",
            Gauge,
            "The block-cache-size setting.",
            server.config().block_cache_size as f64,
        ),
    ];
    for (name, kind, help, value) in rocks {
        e.single(name, kind, help, value);
    }
    tier_series(server, e);
}

fn tier_series(server: &Server, e: &mut Exposition) {
    let tier = server.db.tier_figures();
    e.single(
        "strata_tier_write_back",
        Gauge,
        "Whether the write-back memory tier is on (memory-tier write-back).",
        u8::from(tier.is_some()),
    );
    let Some([active, frozen, checkpoints, written, last_ms, replayed]) = tier else {
        return;
    };
    e.single(
        "strata_tier_dirty_bytes",
        Gauge,
        "Bytes of writes the tier holds that no checkpoint has started on.",
        active as f64,
    );
    e.single(
        "strata_tier_checkpointing_bytes",
        Gauge,
        "Bytes of writes the running checkpoint is writing to RocksDB.",
        frozen as f64,
    );
    e.single(
        "strata_tier_checkpoints_total",
        Counter,
        "Checkpoints completed.",
        checkpoints as f64,
    );
    e.single(
        "strata_tier_checkpointed_bytes_total",
        Counter,
        "Bytes the checkpoints wrote.",
        written as f64,
    );
    e.single(
        "strata_tier_last_checkpoint_timestamp_seconds",
        Gauge,
        "When the last checkpoint ended, in Unix seconds.",
        (last_ms / 1000) as f64,
    );
    e.single(
        "strata_tier_replayed_records",
        Gauge,
        "Redo log records replayed when the directory was opened.",
        replayed as f64,
    );
    e.single(
        "strata_tier_last_checkpoint_ok",
        Gauge,
        "Whether the last checkpoint succeeded.",
        u8::from(server.db.tier_failure().is_none()),
    );
}

/// A percentile as a quantile label, without float noise: 99.9 -> `0.999`.
fn quantile(percentile: f64) -> String {
    let s = format!("{:.6}", percentile / 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantile_labels_have_no_float_noise() {
        assert_eq!(super::quantile(99.9), "0.999");
        assert_eq!(super::quantile(50.0), "0.5");
        assert_eq!(super::quantile(100.0), "1");
    }
}
