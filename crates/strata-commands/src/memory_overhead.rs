//! The figures behind MEMORY STATS and MEMORY DOCTOR: Redis 7.0's `redisMemOverhead` (what the
//! server uses at start-up, for clients, scripts and per database), the ratios Redis derives
//! from them, and the doctor's report. The server fills [`MemoryOverhead`] (`ServerApi::
//! memory_overhead`); MEMORY's handlers in `keys_family.rs` word the reply. Strata has no count of
//! live allocated bytes, so "allocated" is the process's resident set size throughout, and the
//! allocator fields follow Redis's rules for an allocator that reports nothing (a non-jemalloc
//! build); docs/differences.md says what each field means in Strata.

/// Memory figures, in bytes unless said otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryOverhead {
    /// The highest `total_allocated` seen.
    pub peak_allocated: u64,
    /// Memory in use now (INFO `used_memory`).
    pub total_allocated: u64,
    /// Memory in use once the server had started (data directory open, before any client).
    pub startup_allocated: u64,
    /// Memory the replication backlog takes (Strata's backlog is the log on disk: 0).
    pub repl_backlog: u64,
    /// Output buffers of attached replicas.
    pub clients_slaves: u64,
    /// Buffers of the other clients (the sum of CLIENT LIST's `tot-mem`).
    pub clients_normal: u64,
    /// Bytes of the EVAL script cache.
    pub lua_caches: u64,
    /// Bytes of the FUNCTION libraries.
    pub functions_caches: u64,
    /// The databases holding keys.
    pub dbs: Vec<DbOverhead>,
    /// The process's resident set size.
    pub process_rss: u64,
    /// Normal clients connected (for the doctor's per-client average).
    pub normal_clients: u64,
    /// Replicas attached.
    pub replicas: u64,
    /// Scripts in the EVAL cache.
    pub cached_scripts: u64,
}

/// One database's figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbOverhead {
    /// The database number.
    pub db: u32,
    /// Keys in it.
    pub keys: u64,
    /// Memory of its main key table (Strata keeps keys in RocksDB: 0).
    pub hashtable_main: u64,
    /// Memory of its expiry table (0, as above).
    pub hashtable_expires: u64,
}

/// What Redis's allocator figures come to when the allocator reports none: resident is the
/// process RSS (less scripts' interpreters, unmeasured here), active equals resident,
/// allocated equals the used memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocatorFigures {
    /// allocator.allocated.
    pub allocated: u64,
    /// allocator.active.
    pub active: u64,
    /// allocator.resident.
    pub resident: u64,
}

impl MemoryOverhead {
    /// overhead.total: start-up memory plus every overhead above.
    pub fn overhead_total(&self) -> u64 {
        self.startup_allocated
            + self.repl_backlog
            + self.clients_slaves
            + self.clients_normal
            + self.lua_caches
            + self.functions_caches
            + self
                .dbs
                .iter()
                .map(|d| d.hashtable_main + d.hashtable_expires)
                .sum::<u64>()
    }

    /// keys.count.
    pub fn keys(&self) -> u64 {
        self.dbs.iter().map(|d| d.keys).sum()
    }

    /// Memory used beyond the start-up memory (at least 1, as Redis).
    fn net_usage(&self) -> u64 {
        if self.total_allocated > self.startup_allocated {
            self.total_allocated - self.startup_allocated
        } else {
            1
        }
    }

    /// dataset.bytes: used memory less the overhead (negative when the overhead is larger, as
    /// Redis's unsigned difference read as signed).
    pub fn dataset(&self) -> i64 {
        self.total_allocated as i64 - self.overhead_total() as i64
    }

    /// keys.bytes-per-key.
    pub fn bytes_per_key(&self) -> u64 {
        match self.keys() {
            0 => 0,
            n => self.net_usage() / n,
        }
    }

    /// dataset.percentage (computed in single precision, as Redis).
    pub fn dataset_percentage(&self) -> f64 {
        (self.dataset() as f32 * 100.0 / self.net_usage() as f32) as f64
    }

    /// peak.percentage.
    pub fn peak_percentage(&self) -> f64 {
        ratio(
            self.total_allocated as f32 * 100.0,
            self.peak_allocated as f32,
        )
    }

    /// The allocator figures (see [`AllocatorFigures`]).
    pub fn allocator(&self) -> AllocatorFigures {
        let resident = self.process_rss;
        AllocatorFigures {
            allocated: self.total_allocated,
            active: resident,
            resident,
        }
    }

    /// The fragmentation fields, in MEMORY STATS order: (name, ratio or bytes).
    pub fn fragmentation(&self) -> [(&'static str, Figure); 8] {
        let a = self.allocator();
        let diff = |x: u64, y: u64| Figure::Bytes(x as i64 - y as i64);
        [
            (
                "allocator-fragmentation.ratio",
                Figure::Ratio(ratio(a.active as f32, a.allocated as f32)),
            ),
            ("allocator-fragmentation.bytes", diff(a.active, a.allocated)),
            (
                "allocator-rss.ratio",
                Figure::Ratio(ratio(a.resident as f32, a.active as f32)),
            ),
            ("allocator-rss.bytes", diff(a.resident, a.active)),
            (
                "rss-overhead.ratio",
                Figure::Ratio(ratio(self.process_rss as f32, a.resident as f32)),
            ),
            ("rss-overhead.bytes", diff(self.process_rss, a.resident)),
            (
                "fragmentation",
                Figure::Ratio(ratio(self.process_rss as f32, self.total_allocated as f32)),
            ),
            (
                "fragmentation.bytes",
                diff(self.process_rss, self.total_allocated),
            ),
        ]
    }

    /// MEMORY DOCTOR's report: Redis's text for the instance these figures describe (an
    /// instance is "empty" when it uses less than 5 MB beyond its start-up memory).
    pub fn doctor(&self) -> String {
        const MB: u64 = 1 << 20;
        // Redis's test is on the used memory (its empty instance uses about 1 MB); Strata's
        // start-up memory (RocksDB's) is tens of MB, so the test is on the memory used beyond it.
        if self.total_allocated.saturating_sub(self.startup_allocated) < 5 * MB {
            return EMPTY.to_string();
        }
        let figure = |name: &str| {
            self.fragmentation()
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0.0, |(_, f)| f.as_f64())
        };
        let mut issues: Vec<&str> = Vec::new();
        if (self.peak_allocated as f32 / self.total_allocated as f32) > 1.5 {
            issues.push(BIG_PEAK);
        }
        if figure("fragmentation") > 1.4 && figure("fragmentation.bytes") > (10 * MB) as f64 {
            issues.push(HIGH_FRAG);
        }
        if figure("allocator-fragmentation.ratio") > 1.1
            && figure("allocator-fragmentation.bytes") > (10 * MB) as f64
        {
            issues.push(HIGH_ALLOC_FRAG);
        }
        if figure("allocator-rss.ratio") > 1.1 && figure("allocator-rss.bytes") > (10 * MB) as f64 {
            issues.push(HIGH_ALLOC_RSS);
        }
        if figure("rss-overhead.ratio") > 1.1 && figure("rss-overhead.bytes") > (10 * MB) as f64 {
            issues.push(HIGH_PROC_RSS);
        }
        if self.replicas > 0 && self.clients_slaves > 10 * MB {
            issues.push(BIG_SLAVE_BUF);
        }
        if self.clients_normal / self.normal_clients.max(1) > 200 * 1024 {
            issues.push(BIG_CLIENT_BUF);
        }
        if self.cached_scripts > 1000 {
            issues.push(MANY_SCRIPTS);
        }
        // Redis lists the buffers' issues replicas first, then clients.
        issues.sort_by_key(|i| ORDER.iter().position(|o| o == i));
        if issues.is_empty() {
            return NO_ISSUES.to_string();
        }
        let mut s = String::from(
            "Sam, I detected a few issues in this Redis instance memory implants:\n\n",
        );
        for issue in issues {
            s.push_str(issue);
        }
        s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
        s
    }
}

/// A MEMORY STATS value: bytes (an integer reply) or a ratio (a double reply).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    /// An integer reply.
    Bytes(i64),
    /// A double reply (a single-precision figure, as Redis computes it).
    Ratio(f64),
}

impl Figure {
    fn as_f64(self) -> f64 {
        match self {
            Figure::Bytes(n) => n as f64,
            Figure::Ratio(r) => r,
        }
    }
}

/// `x / y` in single precision, as Redis computes its ratios (a zero divisor gives what C's
/// float division gives).
fn ratio(x: f32, y: f32) -> f64 {
    (x / y) as f64
}

const EMPTY: &str = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n";
const NO_ISSUES: &str = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n";
const BIG_PEAK: &str = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n";
const HIGH_FRAG: &str = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"mimalloc\".\n\n";
const HIGH_ALLOC_FRAG: &str = " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n";
const HIGH_ALLOC_RSS: &str = " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n";
const HIGH_PROC_RSS: &str = " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n";
const BIG_SLAVE_BUF: &str = " * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.\n\n";
const BIG_CLIENT_BUF: &str = " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n";
const MANY_SCRIPTS: &str = " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n";

/// The order Redis writes the issues in.
const ORDER: [&str; 8] = [
    BIG_PEAK,
    HIGH_FRAG,
    HIGH_ALLOC_FRAG,
    HIGH_ALLOC_RSS,
    HIGH_PROC_RSS,
    BIG_SLAVE_BUF,
    BIG_CLIENT_BUF,
    MANY_SCRIPTS,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(total: u64) -> MemoryOverhead {
        MemoryOverhead {
            peak_allocated: total,
            total_allocated: total,
            startup_allocated: 1 << 20,
            process_rss: total,
            normal_clients: 1,
            ..MemoryOverhead::default()
        }
    }

    #[test]
    fn a_small_instance_gets_the_empty_sentence() {
        assert_eq!(instance(4 << 20).doctor(), EMPTY);
    }

    #[test]
    fn a_healthy_instance_gets_the_no_issue_sentence() {
        assert_eq!(instance(64 << 20).doctor(), NO_ISSUES);
    }

    #[test]
    fn issues_are_reported_in_redis_order() {
        let mut m = instance(64 << 20);
        m.peak_allocated = 200 << 20;
        m.cached_scripts = 1001;
        m.clients_normal = 1 << 20;
        let report = m.doctor();
        assert!(report.starts_with("Sam, I detected a few issues"));
        let peak = report.find("Peak memory").unwrap_or(usize::MAX);
        let clients = report.find("Big client buffers").unwrap_or(usize::MAX);
        let scripts = report.find("Many scripts").unwrap_or(usize::MAX);
        assert!(peak < clients && clients < scripts, "{report}");
        assert!(report.ends_with("I want to help you.\n"));
    }

    #[test]
    fn derived_figures_follow_redis_formulas() {
        let mut m = instance(11 << 20);
        m.dbs = vec![DbOverhead {
            db: 0,
            keys: 10,
            ..DbOverhead::default()
        }];
        assert_eq!(m.overhead_total(), 1 << 20);
        assert_eq!(m.dataset(), 10 << 20);
        assert_eq!(m.bytes_per_key(), 1 << 20);
        assert_eq!(m.dataset_percentage(), 100.0);
        assert_eq!(m.peak_percentage(), 100.0);
        assert_eq!(m.fragmentation()[6], ("fragmentation", Figure::Ratio(1.0)));
    }
}
