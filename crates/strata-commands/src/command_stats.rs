//! Per-command call statistics and error-reply counts, as Redis keeps them for INFO
//! commandstats (`calls`, `usec`, `rejected_calls`, `failed_calls` per command, subcommands by
//! their full `container|sub` name), INFO errorstats (error replies by their first word), and
//! the per-command latency histograms of LATENCY HISTOGRAM and INFO latencystats (while
//! `latency-tracking` is on; see [`crate::histogram`]).
//!
//! The dispatcher counts into the session's [`LocalStats`], so running a command writes
//! nothing shared; the connection adds them to the server's [`CommandStats`] once per read
//! batch ([`CommandStats::absorb`]). Knows nothing of families or of the network.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use strata_resp::Frame;

use crate::histogram::Histogram;

/// Redis stops tracking new error codes past this many distinct ones (`ERROR_STATS_NUMBER`),
/// so a script raising made-up codes cannot grow the table without end.
const MAX_ERROR_CODES: usize = 128;

/// What one command has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTotals {
    /// Times it ran.
    pub calls: u64,
    /// Microseconds spent running it.
    pub usec: u64,
    /// Times it was refused before running (arity, authentication, -BUSY...).
    pub rejected: u64,
    /// Times it ran and answered an error.
    pub failed: u64,
}

impl CallTotals {
    fn add(&mut self, other: &CallTotals) {
        self.calls += other.calls;
        self.usec += other.usec;
        self.rejected += other.rejected;
        self.failed += other.failed;
    }
}

/// One connection's counts since they were last added to the server's.
///
/// Counting a command costs no hash and, almost always, no string comparison: its entry is
/// found by the address of its row's `&'static` name, first the entry the previous command
/// used (a pipelined batch is mostly one command), and its sample names the entry by index.
/// The server's tables are looked up once per distinct command per batch, in
/// [`CommandStats::absorb`].
#[derive(Debug, Default)]
pub struct LocalStats {
    /// By command name (a registry row's `&'static` name: few distinct ones per batch).
    calls: Vec<(&'static str, CallTotals)>,
    /// Error replies by code.
    errors: Vec<(String, u64)>,
    /// How long each command ran (µs), for the latency histograms, by index into `calls`.
    samples: Vec<(u32, u64)>,
    /// The index in `calls` of the last command counted.
    last: usize,
}

/// The same name: the same row's (one address), or equal text (a name not from a row).
#[inline]
fn same_name(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

impl LocalStats {
    #[inline]
    fn entry_index(&mut self, name: &'static str) -> usize {
        if let Some((n, _)) = self.calls.get(self.last) {
            if std::ptr::eq(*n, name) {
                return self.last;
            }
        }
        let i = match self.calls.iter().position(|(n, _)| same_name(n, name)) {
            Some(i) => i,
            None => {
                self.calls.push((name, CallTotals::default()));
                self.calls.len() - 1
            }
        };
        self.last = i;
        i
    }

    fn entry(&mut self, name: &'static str) -> &mut CallTotals {
        let i = self.entry_index(name);
        &mut self.calls[i].1
    }

    /// `name` ran for `usec` microseconds (`failed`: it answered an error).
    pub fn ran(&mut self, name: &'static str, usec: u64, failed: bool) {
        let i = self.entry_index(name);
        let t = &mut self.calls[i].1;
        t.calls += 1;
        t.usec += usec;
        t.failed += u64::from(failed);
        self.samples.push((i as u32, usec));
    }

    /// `name` was refused with `reply` before running.
    pub fn rejected(&mut self, name: &'static str, reply: &Frame) {
        self.entry(name).rejected += 1;
        self.error(reply);
    }

    /// Counts `reply` in errorstats if it is an error.
    pub fn error(&mut self, reply: &Frame) {
        let Frame::Error(text) = reply else {
            return;
        };
        let code = error_code(text);
        match self.errors.iter_mut().find(|(c, _)| c == code) {
            Some((_, n)) => *n += 1,
            None => self.errors.push((code.to_string(), 1)),
        }
    }

    /// Whether there is nothing to add.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.errors.is_empty() && self.samples.is_empty()
    }
}

/// The code an error reply is counted under: its first word, or `ERR` when no space comes
/// within its first 32 bytes (Redis's `afterErrorReply`).
fn error_code(text: &[u8]) -> &str {
    let head = &text[..text.len().min(32)];
    head.iter()
        .position(|&b| b == b' ')
        .and_then(|end| std::str::from_utf8(&text[..end]).ok())
        .unwrap_or("ERR")
}

/// The server's totals (INFO commandstats, errorstats, latencystats and
/// `total_error_replies`).
#[derive(Debug)]
pub struct CommandStats {
    calls: Mutex<HashMap<&'static str, CallTotals>>,
    errors: Mutex<BTreeMap<String, u64>>,
    error_replies: AtomicU64,
    /// `latency-tracking`.
    tracking: AtomicBool,
    histograms: Mutex<HashMap<&'static str, Histogram>>,
}

impl Default for CommandStats {
    fn default() -> Self {
        CommandStats {
            calls: Mutex::default(),
            errors: Mutex::default(),
            error_replies: AtomicU64::new(0),
            tracking: AtomicBool::new(true),
            histograms: Mutex::default(),
        }
    }
}

impl CommandStats {
    /// Adds a connection's counts and clears them.
    pub fn absorb(&self, local: &mut LocalStats) {
        if !local.samples.is_empty() {
            if self.tracking.load(Ordering::Relaxed) {
                let mut hs = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
                // One lookup per command of the batch, then its samples.
                for (i, (name, _)) in local.calls.iter().enumerate() {
                    let mut samples = local.samples.iter().filter(|s| s.0 as usize == i);
                    let Some(&(_, first)) = samples.next() else {
                        continue;
                    };
                    let h = hs.entry(name).or_default();
                    h.record(first.saturating_mul(1000));
                    for &(_, usec) in samples {
                        h.record(usec.saturating_mul(1000));
                    }
                }
            }
            local.samples.clear();
        }
        if !local.calls.is_empty() {
            let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            for (name, t) in local.calls.drain(..) {
                calls.entry(name).or_default().add(&t);
            }
            local.last = 0;
        }
        if !local.errors.is_empty() {
            let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
            for (code, n) in local.errors.drain(..) {
                self.error_replies.fetch_add(n, Ordering::Relaxed);
                if let Some(total) = errors.get_mut(&code) {
                    *total += n;
                } else if errors.len() < MAX_ERROR_CODES {
                    errors.insert(code, n);
                }
            }
        }
    }

    /// Every command that ran or was refused, by name.
    pub fn calls(&self) -> Vec<(&'static str, CallTotals)> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = calls.iter().map(|(n, t)| (*n, *t)).collect();
        v.sort_unstable_by_key(|(n, _)| *n);
        v
    }

    /// Error replies by code, in code order.
    pub fn errors(&self) -> Vec<(String, u64)> {
        let errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        errors.iter().map(|(c, n)| (c.clone(), *n)).collect()
    }

    /// Error replies sent in all.
    pub fn error_replies(&self) -> u64 {
        self.error_replies.load(Ordering::Relaxed)
    }

    /// `latency-tracking`: whether commands are added to the latency histograms.
    pub fn set_tracking(&self, on: bool) {
        self.tracking.store(on, Ordering::Relaxed);
    }

    /// The commands that have a latency histogram, by name.
    pub fn histogram_names(&self) -> Vec<&'static str> {
        let hs = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = hs.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// A copy of the latency histogram of `name`.
    pub fn histogram(&self, name: &str) -> Option<Histogram> {
        let hs = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        hs.get(name).cloned()
    }

    /// INFO latencystats' lines (`latency_percentiles_usec_<cmd>:p50=1.003,...`), by name;
    /// `percentiles` as `latency-tracking-info-percentiles` lists them (already in Redis's
    /// shortest spelling).
    pub fn latencystats(&self, percentiles: &[(String, f64)]) -> String {
        let hs = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<_> = hs.keys().copied().collect();
        names.sort_unstable();
        let mut out = String::new();
        for name in names {
            let h = &hs[name];
            out.push_str("latency_percentiles_usec_");
            out.push_str(name);
            out.push(':');
            for (i, (label, p)) in percentiles.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let v = h.value_at_percentile(*p) as f64 / 1000.0;
                out.push_str(&format!("p{label}={v:.3}"));
            }
            out.push_str("\r\n");
        }
        out
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.histograms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.error_replies.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_rejections_and_errors_add_up_per_command() {
        let mut local = LocalStats::default();
        local.ran("get", 3, false);
        local.ran("get", 2, true);
        local.error(&Frame::error("WRONGTYPE Operation against a key"));
        local.rejected("set", &Frame::error("ERR wrong number of arguments"));
        local.error(&Frame::error("ERR unknown command 'foo'"));
        let server = CommandStats::default();
        server.absorb(&mut local);
        assert!(local.is_empty());
        assert_eq!(
            server.calls(),
            vec![
                (
                    "get",
                    CallTotals {
                        calls: 2,
                        usec: 5,
                        rejected: 0,
                        failed: 1
                    }
                ),
                (
                    "set",
                    CallTotals {
                        calls: 0,
                        usec: 0,
                        rejected: 1,
                        failed: 0
                    }
                ),
            ]
        );
        assert_eq!(
            server.errors(),
            vec![("ERR".to_string(), 2), ("WRONGTYPE".to_string(), 1)]
        );
        assert_eq!(server.error_replies(), 3);
        server.reset();
        assert!(server.calls().is_empty() && server.errors().is_empty());
    }

    #[test]
    fn interleaved_commands_keep_their_own_counts_and_histograms() {
        let mut local = LocalStats::default();
        // The same name from another address (not a row's) is the same command.
        let get_elsewhere: &'static str = String::from("get").leak();
        local.ran("get", 1, false);
        local.ran("set", 1000, false);
        local.ran(get_elsewhere, 2, false);
        local.ran("set", 2000, true);
        local.ran("get", 3, false);
        let server = CommandStats::default();
        server.absorb(&mut local);
        let calls = server.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].0, calls[0].1.calls, calls[0].1.usec),
            ("get", 3, 6)
        );
        assert_eq!(
            (
                calls[1].0,
                calls[1].1.calls,
                calls[1].1.usec,
                calls[1].1.failed
            ),
            ("set", 2, 3000, 1)
        );
        let get = server.histogram("get").unwrap();
        let set = server.histogram("set").unwrap();
        assert_eq!((get.total(), set.total()), (3, 2));
        assert!(get.value_at_percentile(100.0) < 4_000);
        assert!(set.value_at_percentile(0.0) >= 990_000);
        // The next batch starts afresh and adds to the same totals.
        local.ran("set", 5, false);
        server.absorb(&mut local);
        assert_eq!(server.calls()[1].1.calls, 3);
        assert_eq!(server.histogram("set").unwrap().total(), 3);
    }
}
