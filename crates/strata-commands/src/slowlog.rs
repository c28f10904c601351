//! The slow log, as Redis 7.0's `slowlog.c`: commands that ran for at least
//! `slowlog-log-slower-than` microseconds (0 logs every command, a negative value none), newest
//! first, at most `slowlog-max-len` of them. An entry keeps its id, Unix time, duration, the
//! arguments as Redis trims them (at most 32, the last one then saying how many more there were;
//! strings cut at 128 bytes, saying how many more bytes there were; secrets redacted, see
//! [`crate::redact`]), and the client's address and name. The dispatcher calls [`note`] once per
//! command it ran; commands flagged `skip_slowlog` (EXEC) are never logged, the commands a
//! transaction or a script runs are. Knows no family.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use strata_resp::Frame;

use crate::command::{CommandSpec, SKIP_SLOWLOG};
use crate::Ctx;

/// Redis's `SLOWLOG_ENTRY_MAX_ARGC` and `SLOWLOG_ENTRY_MAX_STRING`.
const MAX_ARGC: usize = 32;
const MAX_STRING: usize = 128;

/// One logged command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    /// Unix seconds when it was logged.
    pub time: u64,
    /// How long it ran, in microseconds.
    pub duration: u64,
    /// Its arguments, trimmed.
    pub argv: Vec<Bytes>,
    /// The client's `ip:port`.
    pub peer: String,
    /// The client's name (empty: none).
    pub name: Bytes,
}

impl Entry {
    /// The entry as SLOWLOG GET shows it.
    pub fn to_frame(&self) -> Frame {
        Frame::Array(vec![
            Frame::Integer(self.id as i64),
            Frame::Integer(self.time as i64),
            Frame::Integer(self.duration as i64),
            Frame::Array(self.argv.iter().cloned().map(Frame::Bulk).collect()),
            Frame::bulk(self.peer.clone()),
            Frame::Bulk(self.name.clone()),
        ])
    }
}

/// The server's slow log.
pub struct SlowLog {
    slower_than: AtomicI64,
    max_len: AtomicU64,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<Entry>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            slower_than: AtomicI64::new(10_000),
            max_len: AtomicU64::new(128),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }
}

impl SlowLog {
    /// `slowlog-log-slower-than` (µs) and `slowlog-max-len`.
    pub fn configure(&self, slower_than: i64, max_len: u64) {
        self.slower_than.store(slower_than, Ordering::Relaxed);
        self.max_len.store(max_len, Ordering::Relaxed);
        self.trim(&mut self.lock());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn trim(&self, entries: &mut VecDeque<Entry>) {
        let max = self.max_len.load(Ordering::Relaxed);
        while entries.len() as u64 > max {
            entries.pop_back();
        }
    }

    /// Whether a command that ran `usec` µs is logged (one atomic load).
    #[inline]
    pub fn wants(&self, usec: u64) -> bool {
        let t = self.slower_than.load(Ordering::Relaxed);
        t >= 0 && usec >= t as u64
    }

    /// Logs a command (Redis's `slowlogCreateEntry`).
    pub fn push(&self, argv: &[Bytes], usec: u64, peer: String, name: Bytes) {
        let entry = Entry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            time: strata::now_ms() / 1000,
            duration: usec,
            argv: trimmed(argv),
            peer,
            name,
        };
        let mut entries = self.lock();
        entries.push_front(entry);
        self.trim(&mut entries);
    }

    /// SLOWLOG LEN.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SLOWLOG GET: the newest `count` entries (all of them for None).
    pub fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let entries = self.lock();
        let n = count.unwrap_or(entries.len());
        entries.iter().take(n).cloned().collect()
    }

    /// SLOWLOG RESET (ids keep counting, as in Redis).
    pub fn reset(&self) {
        self.lock().clear();
    }
}

/// The arguments as Redis keeps them in an entry.
fn trimmed(argv: &[Bytes]) -> Vec<Bytes> {
    let kept = argv.len().min(MAX_ARGC);
    (0..kept)
        .map(|j| {
            if kept != argv.len() && j == kept - 1 {
                Bytes::from(format!("... ({} more arguments)", argv.len() - kept + 1))
            } else if argv[j].len() > MAX_STRING {
                let mut s = argv[j][..MAX_STRING].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", argv[j].len() - MAX_STRING).as_bytes(),
                );
                Bytes::from(s)
            } else {
                argv[j].clone()
            }
        })
        .collect()
}

/// Logs one command the dispatcher ran (`spec`: its row, a container's subcommand row for a
/// subcommand) if it was slow enough. A command run by a script is logged with Redis's address
/// for its script client, `?:0`, and no name.
#[inline]
pub fn note(ctx: &Ctx<'_>, spec: &CommandSpec, argv: &[Bytes], usec: u64) {
    let log = ctx.server.slowlog();
    if !log.wants(usec) || spec.has(SKIP_SLOWLOG) {
        return;
    }
    let (peer, name) = if ctx.session.in_script {
        ("?:0".to_string(), Bytes::new())
    } else {
        (
            ctx.server.peer_id(),
            ctx.session.name.clone().unwrap_or_default(),
        )
    };
    let shown = crate::redact::shown(spec, argv);
    log.push(&shown, usec, peer, name);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(n: usize) -> Vec<Bytes> {
        (0..n).map(|i| Bytes::from(i.to_string())).collect()
    }

    #[test]
    fn long_commands_keep_31_arguments_and_say_how_many_more() {
        let t = trimmed(&args(40));
        assert_eq!(t.len(), 32);
        assert_eq!(t[30], Bytes::from("30"));
        assert_eq!(t[31], Bytes::from("... (9 more arguments)"));
        assert_eq!(trimmed(&args(32)).len(), 32);
        assert_eq!(trimmed(&args(32))[31], Bytes::from("31"));
    }

    #[test]
    fn long_strings_are_cut_at_128_bytes() {
        let t = trimmed(&[Bytes::from(vec![b'a'; 200])]);
        assert_eq!(t[0].len(), 128 + "... (72 more bytes)".len());
        assert!(t[0].ends_with(b"a... (72 more bytes)"));
    }

    #[test]
    fn the_log_keeps_the_newest_entries_up_to_its_length() {
        let log = SlowLog::default();
        log.configure(0, 2);
        assert!(log.wants(0));
        for i in 0..3 {
            log.push(&args(i + 1), 5, "1.2.3.4:5".into(), Bytes::new());
        }
        let got = log.newest(None);
        assert_eq!(got.iter().map(|e| e.id).collect::<Vec<_>>(), [2, 1]);
        log.configure(-1, 2);
        assert!(!log.wants(1_000_000));
        log.configure(0, 0);
        assert!(log.is_empty());
        log.reset();
        assert_eq!(log.newest(Some(5)).len(), 0);
    }
}
