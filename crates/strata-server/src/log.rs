//! Redis-style log lines (`pid:M 05 Jun 2024 10:00:00.123 * message`) written to stderr or to the
//! configured `logfile`, filtered by `loglevel` (debug, verbose, notice, warning, nothing). The level
//! can change at runtime (CONFIG SET loglevel). This module knows nothing of the network or storage.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};

use parking_lot::Mutex;

/// Severity of a log line, in Redis's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Very detailed, for development.
    Debug = 0,
    /// Useful detail.
    Verbose = 1,
    /// What a production server reports.
    Notice = 2,
    /// Only important problems.
    Warning = 3,
}

impl Level {
    fn mark(self) -> char {
        match self {
            Level::Debug => '.',
            Level::Verbose => '-',
            Level::Notice => '*',
            Level::Warning => '#',
        }
    }
}

/// Threshold meaning "log nothing" (`loglevel nothing`).
const NOTHING: u8 = 4;

static THRESHOLD: AtomicU8 = AtomicU8::new(Level::Notice as u8);
static SINK: Mutex<Option<File>> = Mutex::new(None);

/// Sets the minimum level from a Redis `loglevel` name; unknown names leave it unchanged.
pub fn set_level(name: &str) {
    let v = match name.to_ascii_lowercase().as_str() {
        "debug" => Level::Debug as u8,
        "verbose" => Level::Verbose as u8,
        "notice" => Level::Notice as u8,
        "warning" => Level::Warning as u8,
        "nothing" => NOTHING,
        _ => return,
    };
    THRESHOLD.store(v, Ordering::Relaxed);
}

/// Sends log lines to `path` (appending) instead of stderr.
pub fn set_file(path: &Path) -> std::io::Result<()> {
    let f = OpenOptions::new().create(true).append(true).open(path)?;
    *SINK.lock() = Some(f);
    Ok(())
}

/// Whether lines go to a log file (rather than stderr).
pub fn to_file() -> bool {
    SINK.lock().is_some()
}

/// Whether a line of `level` would be written.
pub fn enabled(level: Level) -> bool {
    level as u8 >= THRESHOLD.load(Ordering::Relaxed)
}

/// Writes one line at `level`.
pub fn log(level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let line = format!(
        "{}:M {} {} {}\n",
        std::process::id(),
        timestamp(),
        level.mark(),
        msg
    );
    let mut sink = SINK.lock();
    match sink.as_mut() {
        Some(f) => {
            let _ = f.write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }
}

/// `05 Jun 2024 10:00:00.123` in local time, as Redis prints it.
fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: `tm` is plain data that localtime_r fills in; both pointers are valid for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    if !ok {
        return format!("{}", now.as_secs());
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        tm.tm_mday,
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis()
    )
}

/// Logs at notice level.
macro_rules! notice {
    ($($arg:tt)*) => { $crate::log::log($crate::log::Level::Notice, &format!($($arg)*)) };
}
/// Logs at warning level.
macro_rules! warning {
    ($($arg:tt)*) => { $crate::log::log($crate::log::Level::Warning, &format!($($arg)*)) };
}
/// Logs at verbose level (formatting only when enabled).
macro_rules! verbose {
    ($($arg:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Verbose) {
            $crate::log::log($crate::log::Level::Verbose, &format!($($arg)*))
        }
    };
}
pub(crate) use {notice, verbose, warning};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_set_the_threshold() {
        set_level("warning");
        assert!(!enabled(Level::Notice));
        assert!(enabled(Level::Warning));
        set_level("nothing");
        assert!(!enabled(Level::Warning));
        set_level("bogus");
        assert!(!enabled(Level::Warning));
        set_level("debug");
        assert!(enabled(Level::Debug));
        set_level("notice");
    }

    #[test]
    fn timestamp_looks_like_redis() {
        let t = timestamp();
        // "05 Jun 2024 10:00:00.123"
        assert_eq!(t.len(), 24, "{t}");
        assert_eq!(&t[2..3], " ");
        assert_eq!(&t[20..21], ".");
    }
}
