//! The latency monitor, as Redis 7.0's `latency.c`: named events (`command`, `fast-command`,
//! `expire-cycle`, `aof-fsync-always`, Strata's `rocksdb-write-stall`...) each keep their last
//! 160 one-per-second samples of latencies at or above `latency-monitor-threshold` (ms; 0 =
//! off) and their all-time maximum. LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR read
//! them here; the per-command histograms of LATENCY HISTOGRAM live with the command statistics
//! ([`crate::command_stats`]). The dispatcher adds the command samples ([`note_command`]); the
//! server adds its own events. Knows no family.
//!
//! It also keeps the dispatcher's [`Stopwatch`], the clock every command is timed with (for
//! INFO commandstats, the histograms, the slow log and the monitor alike): two reads per
//! command, as Redis's `call()` makes, each a read of the processor's time-stamp counter
//! where the kernel itself keeps time with it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::command::{CommandSpec, FAST};
use crate::Ctx;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
const SAMPLES: usize = 160;
/// Columns of LATENCY GRAPH.
const GRAPH_COLS: usize = 80;

/// One event's history.
#[derive(Clone)]
struct Series {
    /// Where the next sample goes.
    idx: usize,
    /// The all-time maximum since the last reset.
    max: u64,
    /// `(unix seconds, ms)`; time 0 is an empty slot.
    samples: [(i64, u64); SAMPLES],
}

impl Series {
    fn new() -> Series {
        Series {
            idx: 0,
            max: 0,
            samples: [(0, 0); SAMPLES],
        }
    }

    /// The samples, oldest first.
    fn ordered(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        (0..SAMPLES)
            .map(move |j| self.samples[(self.idx + j) % SAMPLES])
            .filter(|s| s.0 != 0)
    }
}

/// The server's latency events.
pub struct LatencyMonitor {
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<String, Series>>,
}

impl Default for LatencyMonitor {
    /// A monitor with no events, off. Making the server's also calibrates the [`Stopwatch`]
    /// (a few milliseconds, once per process), so the first command does not wait for it.
    fn default() -> Self {
        Stopwatch::calibrate();
        LatencyMonitor {
            threshold_ms: AtomicU64::new(0),
            events: Mutex::default(),
        }
    }
}

/// Times one command, in microseconds, as `Instant::now()` and `elapsed()` would, at half
/// their cost: on x86-64, when the kernel's clock source is the time-stamp counter (so the
/// counter runs at a constant rate and agrees across cores), it reads the counter (a pair of
/// reads ~21 ns here, against ~44 ns for `Instant::now` + `elapsed` through the vDSO) and
/// converts ticks to time with a rate measured once against `Instant`. Anywhere else it is
/// `Instant`.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch(Start);

#[derive(Clone, Copy, Debug)]
enum Start {
    Ticks(u64),
    Instant(std::time::Instant),
}

/// Nanoseconds per tick of the time-stamp counter, as a 32.32 fixed-point number; 0 when the
/// counter is not to be used.
static NS_PER_TICK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

impl Stopwatch {
    /// Starts timing.
    #[inline]
    pub fn start() -> Stopwatch {
        match Self::calibrate() {
            0 => Stopwatch(Start::Instant(std::time::Instant::now())),
            _ => Stopwatch(Start::Ticks(ticks())),
        }
    }

    /// Whole microseconds since [`Stopwatch::start`].
    #[inline]
    pub fn elapsed_us(self) -> u64 {
        match self.0 {
            Start::Instant(t) => t.elapsed().as_micros() as u64,
            Start::Ticks(t0) => {
                let ticks = ticks().saturating_sub(t0);
                let scale = NS_PER_TICK.get().copied().unwrap_or(0);
                (((ticks as u128 * scale as u128) >> 32) as u64) / 1000
            }
        }
    }

    /// The counter's rate (measured at the first call: ~2 ms), or 0 when [`Instant`] is used.
    ///
    /// [`Instant`]: std::time::Instant
    pub fn calibrate() -> u64 {
        *NS_PER_TICK.get_or_init(measure_rate)
    }
}

/// The time-stamp counter (0 where there is none: never used then).
#[inline]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC exists on every x86-64 processor and reads a register, nothing else.
    #[allow(unused_unsafe)]
    return unsafe { std::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    return 0;
}

/// The counter's rate against `Instant` over ~2 ms (32.32 fixed-point ns per tick), or 0
/// when the kernel does not keep time with the counter (then it may drift, stop, or differ
/// between cores) or this is not x86-64.
fn measure_rate() -> u64 {
    if !cfg!(target_arch = "x86_64") {
        return 0;
    }
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    if source.map_or(true, |s| s.trim() != "tsc") {
        return 0;
    }
    let (t0, c0) = paired_reading();
    while t0.elapsed() < std::time::Duration::from_millis(2) {
        std::hint::spin_loop();
    }
    let (t1, c1) = paired_reading();
    let ns = t1.duration_since(t0).as_nanos();
    match c1.checked_sub(c0) {
        Some(t) if t > 0 => ((ns << 32) / t as u128).min(u64::MAX as u128) as u64,
        _ => 0,
    }
}

/// An `Instant` and a counter reading taken together: of a few tries, the one whose two
/// `Instant`s around the counter are closest (a thread preempted between them would skew
/// the rate), with the counter's time put halfway between them.
fn paired_reading() -> (std::time::Instant, u64) {
    let mut best: Option<(std::time::Duration, std::time::Instant, u64)> = None;
    for _ in 0..8 {
        let before = std::time::Instant::now();
        let c = ticks();
        let after = std::time::Instant::now();
        let gap = after.duration_since(before);
        if best.is_none_or(|(g, _, _)| gap < g) {
            best = Some((gap, before + gap / 2, c));
        }
    }
    best.map_or_else(|| (std::time::Instant::now(), ticks()), |(_, t, c)| (t, c))
}

fn now_secs() -> i64 {
    (strata::now_ms() / 1000) as i64
}

impl LatencyMonitor {
    /// `latency-monitor-threshold` (ms; 0 turns the monitor off).
    pub fn set_threshold(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// The threshold in ms (0: off).
    #[inline]
    pub fn threshold(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    /// Records `ms` for `event` if the monitor is on and it reaches the threshold (Redis's
    /// `latencyAddSampleIfNeeded`).
    #[inline]
    pub fn add_if_needed(&self, event: &str, ms: u64) {
        let t = self.threshold();
        if t != 0 && ms >= t {
            self.add(event, ms);
        }
    }

    /// Records a sample: one per second per event, the largest of that second.
    pub fn add(&self, event: &str, ms: u64) {
        let now = now_secs();
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let ts = events.entry(event.to_string()).or_insert_with(Series::new);
        ts.max = ts.max.max(ms);
        let prev = (ts.idx + SAMPLES - 1) % SAMPLES;
        if ts.samples[prev].0 == now {
            ts.samples[prev].1 = ts.samples[prev].1.max(ms);
            return;
        }
        ts.samples[ts.idx] = (now, ms);
        ts.idx = (ts.idx + 1) % SAMPLES;
    }

    /// LATENCY RESET: forgets `event` (any case), or every event; returns how many.
    pub fn reset(&self, event: Option<&[u8]>) -> usize {
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let before = events.len();
        match event {
            None => events.clear(),
            Some(e) => events.retain(|name, _| !name.as_bytes().eq_ignore_ascii_case(e)),
        }
        before - events.len()
    }

    /// LATENCY LATEST: `(event, time of the latest sample, its ms, all-time max)`.
    pub fn latest(&self) -> Vec<(String, i64, u64, u64)> {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        events
            .iter()
            .map(|(name, ts)| {
                let last = ts.samples[(ts.idx + SAMPLES - 1) % SAMPLES];
                (name.clone(), last.0, last.1, ts.max)
            })
            .collect()
    }

    /// LATENCY HISTORY: the samples of `event`, oldest first (empty if it has none).
    pub fn history(&self, event: &[u8]) -> Vec<(i64, u64)> {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        find(&events, event).map_or_else(Vec::new, |(_, ts)| ts.ordered().collect())
    }

    /// LATENCY GRAPH: the ASCII sparkline of `event`, None when it has no samples.
    pub fn graph(&self, event: &[u8]) -> Option<String> {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let (name, ts) = find(&events, event)?;
        let now = now_secs();
        let samples: Vec<(u64, String)> = ts
            .ordered()
            .map(|(t, ms)| (ms, age_label(now - t)))
            .collect();
        let max = samples.iter().map(|s| s.0).max().unwrap_or(0);
        let min = samples.iter().map(|s| s.0).min().unwrap_or(0);
        let mut out = format!(
            "{name} - high {max} ms, low {min} ms (all time high {} ms)\n",
            ts.max
        );
        out.push_str(&"-".repeat(GRAPH_COLS));
        out.push('\n');
        out.push_str(&sparkline(&samples, GRAPH_COLS, 4));
        Some(out)
    }

    /// The events with their samples (for LATENCY DOCTOR): name, samples (ms), all-time max,
    /// seconds since the oldest sample.
    fn analysis(&self) -> Vec<(String, Vec<u64>, u64, i64)> {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let now = now_secs();
        events
            .iter()
            .map(|(name, ts)| {
                let oldest = ts.ordered().map(|s| s.0).min().unwrap_or(now);
                (
                    name.clone(),
                    ts.ordered().map(|s| s.1).collect(),
                    ts.max,
                    now - oldest,
                )
            })
            .collect()
    }

    /// LATENCY DOCTOR's report, as Redis words it (`slowlog_us`: slowlog-log-slower-than;
    /// `fsync_always`: appendfsync is `always`; `hz`: the server's hz).
    pub fn doctor(&self, slowlog_us: i64, fsync_always: bool, hz: u32) -> String {
        let events = self.analysis();
        let threshold = self.threshold();
        if events.is_empty() && threshold == 0 {
            return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n".into();
        }
        let mut a = Advice::default();
        let mut out = String::new();
        for (n, (name, samples, max, period)) in events.iter().enumerate() {
            if n == 0 {
                out.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
            }
            let count = samples.len() as u64;
            let avg = samples.iter().sum::<u64>().checked_div(count).unwrap_or(0);
            let mad = samples
                .iter()
                .map(|&s| s.abs_diff(avg))
                .sum::<u64>()
                .checked_div(count)
                .unwrap_or(0);
            let period = if count > 0 { (*period).max(1) } else { 0 };
            out.push_str(&format!(
                "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
                n + 1,
                name,
                count,
                avg,
                mad,
                period as f64 / count as f64,
                max
            ));
            a.note(name, slowlog_us, threshold);
            out.push('\n');
        }
        a.report(
            &mut out,
            events.len(),
            slowlog_us,
            threshold,
            fsync_always,
            hz,
        );
        out
    }
}

/// The advice LATENCY DOCTOR gathers from the events it saw.
#[derive(Default)]
struct Advice {
    count: u32,
    slowlog_enabled: bool,
    slowlog_tuning: bool,
    slowlog_inspect: bool,
    scheduler: bool,
    local_disk: bool,
    ssd: bool,
    data_writeback: bool,
    disk_contention: bool,
    relax_fsync: bool,
    hz: bool,
    large_objects: bool,
}

impl Advice {
    fn note(&mut self, event: &str, slowlog_us: i64, threshold: u64) {
        match event {
            "command" => {
                if slowlog_us < 0 {
                    self.slowlog_enabled = true;
                    self.count += 1;
                } else if slowlog_us as u64 / 1000 > threshold {
                    self.slowlog_tuning = true;
                    self.count += 1;
                }
                self.slowlog_inspect = true;
                self.large_objects = true;
                self.count += 2;
            }
            "fast-command" => {
                self.scheduler = true;
                self.count += 1;
            }
            "aof-fsync-always" => {
                self.relax_fsync = true;
                self.count += 1;
            }
            "aof-write" | "rocksdb-write-stall" => {
                self.local_disk = true;
                self.disk_contention = true;
                self.ssd = true;
                self.data_writeback = true;
                self.count += 4;
            }
            "expire-cycle" => {
                self.hz = true;
                self.large_objects = true;
                self.count += 2;
            }
            _ => {}
        }
    }

    fn report(
        &self,
        out: &mut String,
        events: usize,
        slowlog_us: i64,
        threshold: u64,
        fsync_always: bool,
        hz: u32,
    ) {
        if events == 0 && self.count == 0 {
            out.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
            return;
        }
        if self.count == 0 {
            out.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
            return;
        }
        let _ = slowlog_us;
        out.push_str("\nI have a few advices for you:\n\n");
        if self.slowlog_enabled {
            out.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold * 1000));
        }
        if self.slowlog_tuning {
            out.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.\n", threshold * 1000));
        }
        if self.slowlog_inspect {
            out.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
        }
        if self.scheduler {
            out.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
        }
        if self.local_disk {
            out.push_str("- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n");
        }
        if self.ssd {
            out.push_str("- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log rewriting (resulting in smaller memory usage). With extremely high write load SSD disks can be a good option. However Redis should perform reasonably with high load using normal disks. Use this advice as a last resort.\n");
        }
        if self.data_writeback {
            out.push_str("- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that after a hard crash the AOF file will have a half-written command at the end and will require to be repaired before Redis restarts.\n");
        }
        if self.disk_contention {
            out.push_str("- Try to lower the disk contention. This is often caused by other disk intensive processes running in the same computer (including other Redis instances).\n");
        }
        if self.relax_fsync && fsync_always {
            out.push_str("- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n");
        }
        if self.hz && hz < 100 {
            out.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
        }
        if self.large_objects {
            out.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
        }
    }
}

fn find<'a>(events: &'a BTreeMap<String, Series>, event: &[u8]) -> Option<(&'a str, &'a Series)> {
    let name = std::str::from_utf8(event).ok()?;
    events.get_key_value(name).map(|(k, v)| (k.as_str(), v))
}

/// How long ago a sample was, as LATENCY GRAPH labels it.
fn age_label(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// Redis's `sparklineRender` with `SPARKLINE_FILL`: `rows` rows of `_o#` marks filled below
/// with `|`, a blank line, then each sample's label written downwards under its column; a
/// sequence longer than `columns` is drawn in several blocks.
fn sparkline(samples: &[(u64, String)], columns: usize, rows: usize) -> String {
    let mut out = String::new();
    let min = samples.iter().map(|s| s.0).min().unwrap_or(0);
    let max = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let mut j = 0;
    while j < samples.len() {
        if j != 0 {
            out.push('\n');
        }
        let part = &samples[j..samples.len().min(j + columns)];
        render_range(&mut out, part, min, max, rows);
        j += columns;
    }
    out
}

/// Redis's `sparklineRenderRange` for one block.
fn render_range(out: &mut String, part: &[(u64, String)], min: u64, max: u64, rows: usize) {
    const FILL: &[u8] = b"_o#";
    const MARGIN_TOP: usize = 1;
    let charset_len = FILL.len() as i64;
    let steps = charset_len * rows as i64;
    let relmax = if max == min { 1.0 } else { (max - min) as f64 };
    let mut row = 0usize;
    loop {
        let mut more = false;
        let mut chars = vec![b' '; part.len()];
        for (j, (value, label)) in part.iter().enumerate() {
            let relval = (*value - min) as f64;
            let step = (((relval * steps as f64) as i64) as f64 / relmax) as i64;
            let step = step.clamp(0, steps - 1);
            if row < rows {
                let idx = step - (rows as i64 - row as i64 - 1) * charset_len;
                more = true;
                if (0..charset_len).contains(&idx) {
                    chars[j] = FILL[idx as usize];
                } else if idx >= charset_len {
                    chars[j] = b'|';
                }
            } else {
                if row - rows < MARGIN_TOP {
                    more = true;
                    break;
                }
                let at = row - rows - MARGIN_TOP;
                if let Some(&c) = label.as_bytes().get(at) {
                    more = true;
                    chars[j] = c;
                }
            }
        }
        if !more {
            break;
        }
        row += 1;
        out.push_str(&String::from_utf8_lossy(&chars));
        out.push('\n');
    }
}

/// Adds the `command` / `fast-command` sample of one command that ran for `usec` µs (one atomic
/// load when the monitor is off).
#[inline]
pub fn note_command(ctx: &Ctx<'_>, spec: &CommandSpec, usec: u64) {
    let monitor = ctx.server.latency();
    if monitor.threshold() == 0 {
        return;
    }
    let event = if spec.has(FAST) {
        "fast-command"
    } else {
        "command"
    };
    monitor.add_if_needed(event, usec / 1000);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stopwatch_agrees_with_instant() {
        // `Instant`s bracket both ends of the stopwatch's span: its reading lies between the
        // shortest and the longest span they allow (a 1% error in the counter's rate would
        // put it 200 µs outside), however the thread was scheduled.
        let i0 = std::time::Instant::now();
        let watch = Stopwatch::start();
        let i1 = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let j0 = std::time::Instant::now();
        let ours = watch.elapsed_us();
        let j1 = std::time::Instant::now();
        let shortest = j0.duration_since(i1).as_micros() as u64;
        let longest = j1.duration_since(i0).as_micros() as u64;
        assert!(
            ours + 1 >= shortest && ours <= longest + 1,
            "{shortest} <= {ours} <= {longest}"
        );
    }

    #[test]
    fn samples_below_the_threshold_or_with_the_monitor_off_are_dropped() {
        let m = LatencyMonitor::default();
        m.add_if_needed("command", 500);
        assert!(m.latest().is_empty());
        m.set_threshold(100);
        m.add_if_needed("command", 50);
        m.add_if_needed("command", 200);
        m.add_if_needed("command", 150);
        let latest = m.latest();
        assert_eq!(latest.len(), 1);
        assert_eq!((latest[0].2, latest[0].3), (200, 200));
        assert_eq!(m.history(b"command").len(), 1);
        assert!(m
            .graph(b"command")
            .is_some_and(|g| g.starts_with("command - high 200 ms")));
        assert!(m.graph(b"nope").is_none());
        assert!(m
            .doctor(10000, false, 10)
            .contains("1. command: 1 latency spikes"));
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert_eq!(m.reset(None), 0);
    }
}
