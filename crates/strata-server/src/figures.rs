//! The figures INFO, MEMORY STATS and the metrics endpoint share, each computed in one place:
//! memory use (the process, the allocator, scripts, the engine), the keyspace per database,
//! blocked clients and CPU time. Callers format them; nothing here writes text or changes state.

use crate::server::Server;

/// Memory figures, in bytes.
pub struct MemoryFigures {
    /// The process's resident set size (INFO `used_memory` and `used_memory_rss`: Strata has no
    /// allocator-level count of live bytes).
    pub rss: u64,
    /// The highest `rss` seen.
    pub peak: u64,
    /// The machine's memory.
    pub total_system: u64,
    /// The allocator's (mimalloc's) committed bytes now.
    pub allocator_committed: u64,
    /// Scripts in the EVAL cache, and the bytes of their bodies.
    pub scripts: usize,
    /// Bytes of the cached script bodies.
    pub scripts_bytes: u64,
    /// FUNCTION libraries and functions, and the bytes of the libraries' code.
    pub libraries: usize,
    /// Functions in the libraries.
    pub functions: usize,
    /// Bytes of the libraries' code.
    pub functions_bytes: u64,
    /// The engine's memory and cache figures.
    pub engine: strata::EngineGauges,
}

/// Reads the memory figures (and records the peak).
pub fn memory(server: &Server) -> MemoryFigures {
    let rss = server.sample_memory();
    let (scripts, scripts_bytes) = server.scripts.usage();
    let libraries = server.functions.libraries();
    let committed = crate::allocator::committed();
    MemoryFigures {
        rss,
        peak: server.mem_peak().max(rss),
        total_system: total_system_memory(),
        allocator_committed: committed,
        scripts,
        scripts_bytes: scripts_bytes as u64,
        libraries: libraries.len(),
        functions: libraries.iter().map(|l| l.functions.len()).sum(),
        functions_bytes: libraries.iter().map(|l| l.code.len() as u64).sum(),
        engine: server.db.engine_gauges(),
    }
}

/// One database's keyspace figures.
pub struct DbFigures {
    /// The database number.
    pub db: u32,
    /// Live keys.
    pub keys: u64,
    /// Keys with a time to live.
    pub expires: u64,
    /// Their average time to live, in ms.
    pub avg_ttl_ms: u64,
}

/// The databases holding at least one key, in order (INFO keyspace's rule).
pub fn keyspace(server: &Server) -> Vec<DbFigures> {
    (0..server.db.databases())
        .filter_map(|i| {
            let (keys, expires, avg_ttl_ms) = server.db.select(i).ok()?.keyspace_info().ok()?;
            (keys > 0).then_some(DbFigures {
                db: i,
                keys,
                expires,
                avg_ttl_ms,
            })
        })
        .collect()
}

/// MEMORY STATS and MEMORY DOCTOR's figures (see `strata_commands::memory_overhead`).
pub fn memory_overhead(server: &Server) -> strata_commands::memory_overhead::MemoryOverhead {
    use strata_commands::memory_overhead::{DbOverhead, MemoryOverhead};
    let m = memory(server);
    let replicas = server.replication.figures(server).replicas.len() as u64;
    MemoryOverhead {
        peak_allocated: m.peak,
        total_allocated: m.rss,
        startup_allocated: server.mem_startup,
        repl_backlog: 0,
        clients_slaves: 0,
        clients_normal: server.registry.memory(),
        lua_caches: m.scripts_bytes,
        functions_caches: m.functions_bytes,
        dbs: keyspace(server)
            .into_iter()
            .map(|d| DbOverhead {
                db: d.db,
                keys: d.keys,
                hashtable_main: 0,
                hashtable_expires: 0,
            })
            .collect(),
        process_rss: m.rss,
        normal_clients: server.registry.len() as u64,
        replicas,
        cached_scripts: m.scripts as u64,
    }
}

/// Clients blocked on keys, plus those held by CLIENT PAUSE (INFO `blocked_clients`).
pub fn blocked_clients(server: &Server) -> usize {
    server.blocking.blocked_clients() + server.pause.held()
}

/// (system, user) CPU seconds of `who` (`libc::RUSAGE_SELF` or `RUSAGE_CHILDREN`).
pub fn cpu_seconds(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass; nothing else is touched.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_stime), secs(ru.ru_utime))
}

/// Resident set size of this process in bytes.
pub fn process_rss() -> u64 {
    let page = page_size();
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * page)
        .unwrap_or(0)
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

/// The machine's memory in bytes.
pub fn total_system_memory() -> u64 {
    // SAFETY: sysconf only reads system constants.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    if pages > 0 {
        pages as u64 * page_size()
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_figures_are_available() {
        assert!(process_rss() > 0);
        assert!(total_system_memory() > 0);
        let (_, user) = cpu_seconds(libc::RUSAGE_SELF);
        assert!(user >= 0.0);
    }
}
