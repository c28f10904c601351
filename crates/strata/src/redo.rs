//! The write-back tier's redo log: every write batch the tier takes, appended in the order the
//! tier applied them, so that a restart rebuilds the writes that had not reached RocksDB yet.
//! The log is a directory (`redo/` in the data directory) of segment files numbered from 1;
//! each record is `[length: u32 LE][CRC-32 of the payload: u32 LE][payload]`, the payload a write
//! batch in RocksDB's encoding (the same bytes RocksDB's own log would hold, and the tier's
//! patch records, `patch.rs`; docs/format.md) whose header's sequence number is the batch's replication offset: the log numbers the
//! batches it takes, one number per record of the batch as RocksDB does, continuing across
//! restarts. Records are collected in memory ([`RedoLog::append`]) and handed to the operating
//! system in one write per batch of commands ([`RedoLog::write_out`]); [`RedoLog::sync`] makes
//! them durable. A checkpoint starts a new segment ([`RedoLog::rotate`]) and, once everything
//! before it is in RocksDB, deletes the older ones or, when the log is also the replication
//! backlog, moves them to `redo/archive/` ([`RedoLog::drop_through`]), where they are kept
//! within `repl-backlog-size` / `repl-backlog-ttl` and never replayed (`redo_tail.rs` reads
//! both places). Knows files, records and their offsets, nothing else of what a batch means.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// Bytes before a record's payload.
pub(crate) const RECORD_HEADER: usize = 8;
/// A record longer than this is taken for a torn or corrupt length.
const MAX_RECORD: usize = 1 << 31;
/// Where segments a checkpoint covered are kept for replicas (inside the log's directory).
pub(crate) const ARCHIVE: &str = "archive";

fn io(what: &str, e: std::io::Error) -> Error {
    Error::Storage(format!("redo log: {what}: {e}"))
}

/// The segment being appended to.
struct Segment {
    number: u64,
    /// Shared with a sync running outside the segment's lock ([`RedoLog::sync`]).
    file: Arc<File>,
}

/// An open redo log.
pub(crate) struct RedoLog {
    dir: PathBuf,
    /// Records appended and not written out yet.
    buf: Mutex<Vec<u8>>,
    /// The buffer last written out, emptied, to take appends after the next write-out: two
    /// buffers in turn instead of a new one (grown by copying, on fresh pages) per write-out.
    spare: Mutex<Vec<u8>>,
    /// The open segment. Held while the buffer is written out, so records reach the file in the
    /// order they were appended.
    segment: Mutex<Segment>,
    /// The next segment, made ahead of [`RedoLog::rotate`] so that creating it (and syncing
    /// the directory) happens outside the caller's lock.
    next: Mutex<Option<Segment>>,
    /// The segment [`RedoLog::rotate`] ended, until its records are synced: every sync syncs
    /// it first (held while syncing, so no caller returns before the sync is done).
    ended: Mutex<Option<Segment>>,
    /// The offset of the last record appended (changed under `buf`'s lock, so offsets follow
    /// the order of the records).
    last: AtomicU64,
    /// Whether [`RedoLog::drop_through`] keeps segments in `archive/` (the replication
    /// backlog) instead of deleting them.
    archive: bool,
    /// Makes [`RedoLog::sync`] this many milliseconds slower (tests of who waits for a sync).
    #[cfg(test)]
    slow_sync_ms: AtomicU64,
}

/// What replaying the log found.
pub(crate) struct Replayed {
    /// Records read, in order.
    pub records: usize,
    /// Bytes of the records read.
    pub bytes: u64,
    /// Whether a torn or corrupt record ended the replay early (the log was cut there).
    pub cut: bool,
    /// The offset of the last record read (0: none, or only records written before the log
    /// numbered them).
    pub last: u64,
}

pub(crate) fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:012}.log"))
}

/// The segment numbers in `dir`, oldest first.
pub(crate) fn segments(dir: &Path) -> Result<Vec<u64>> {
    let mut out: Vec<u64> = std::fs::read_dir(dir)
        .map_err(|e| io("cannot list", e))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".log")?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The largest write-out buffer kept for reuse.
const SPARE_MAX: usize = 8 << 20;

impl RedoLog {
    /// Opens the log in `dir` (creating it): calls `apply` with every intact record's payload,
    /// oldest first, and cuts the log at the first torn or corrupt record (what follows it is
    /// dropped: a prefix of the writes survives, as with RocksDB's point-in-time recovery).
    /// Appends then go to a new segment, numbered on from the last record read. A read-only
    /// open reads and changes nothing on disk. With `archive`, segments a checkpoint covered
    /// are kept in `archive/` (see [`RedoLog::drop_through`]).
    pub(crate) fn open(
        dir: &Path,
        read_only: bool,
        archive: bool,
        mut apply: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<(Option<RedoLog>, Replayed)> {
        if !read_only {
            std::fs::create_dir_all(dir).map_err(|e| io("cannot create", e))?;
        }
        let mut found = Replayed {
            records: 0,
            bytes: 0,
            cut: false,
            last: 0,
        };
        let numbers = if dir.is_dir() {
            segments(dir)?
        } else {
            Vec::new()
        };
        let mut last = 0;
        for &n in &numbers {
            last = n;
            let path = segment_path(dir, n);
            if found.cut {
                if !read_only {
                    std::fs::remove_file(&path).map_err(|e| io("cannot remove", e))?;
                }
                continue;
            }
            let mut data = Vec::new();
            File::open(&path)
                .and_then(|mut f| f.read_to_end(&mut data))
                .map_err(|e| io("cannot read", e))?;
            let mut at = 0;
            while at < data.len() {
                let Some(payload) = record_at(&data, at) else {
                    found.cut = true;
                    break;
                };
                apply(payload)?;
                if let Some((seq, count)) = offsets(payload) {
                    found.last = found.last.max(seq + count - 1);
                }
                found.records += 1;
                found.bytes += payload.len() as u64;
                at += RECORD_HEADER + payload.len();
            }
            if found.cut && !read_only {
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| io("cannot open", e))?;
                f.set_len(at as u64).map_err(|e| io("cannot cut", e))?;
                f.sync_all().map_err(|e| io("cannot sync", e))?;
            }
        }
        if read_only {
            return Ok((None, found));
        }
        let segment = Segment::create(dir, last + 1)?;
        let log = RedoLog {
            dir: dir.to_path_buf(),
            buf: Mutex::new(Vec::with_capacity(1 << 16)),
            spare: Mutex::new(Vec::with_capacity(1 << 16)),
            segment: Mutex::new(segment),
            next: Mutex::new(None),
            ended: Mutex::new(None),
            last: AtomicU64::new(found.last),
            archive,
            #[cfg(test)]
            slow_sync_ms: AtomicU64::new(0),
        };
        Ok((Some(log), found))
    }

    /// Appends one record (to memory; [`RedoLog::write_out`] hands it to the file), numbering
    /// it: its header's sequence number becomes the next offset, and the batch's record count
    /// (at least 1) offsets are used.
    pub(crate) fn append(&self, payload: &[u8]) {
        let mut buf = self.buf.lock();
        buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        let Some((_, rest)) = payload.split_first_chunk::<8>() else {
            // Not a write batch (too short for its header): written as it is, unnumbered.
            buf.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
            buf.extend_from_slice(payload);
            return;
        };
        let first = self.last.load(Ordering::Relaxed) + 1;
        let count = rest
            .first_chunk::<4>()
            .map_or(0, |c| u32::from_le_bytes(*c));
        let seq = first.to_le_bytes();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&seq);
        crc.update(rest);
        buf.extend_from_slice(&crc.finalize().to_le_bytes());
        buf.extend_from_slice(&seq);
        buf.extend_from_slice(rest);
        self.last
            .store(first + u64::from(count.max(1)) - 1, Ordering::Relaxed);
    }

    /// The offset of the last record appended (the tier's replication offset).
    pub(crate) fn last_offset(&self) -> u64 {
        let _order = self.buf.lock();
        self.last.load(Ordering::Relaxed)
    }

    /// Numbers the records appended from now on after `offset` at least (at open: offsets
    /// never go back, whatever the log itself still holds).
    pub(crate) fn offsets_after(&self, offset: u64) {
        let _order = self.buf.lock();
        self.last.fetch_max(offset, Ordering::Relaxed);
    }

    /// The directory of the log.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Hands every record appended so far to the operating system (one write).
    pub(crate) fn write_out(&self) -> Result<()> {
        let started = std::time::Instant::now();
        let seg = self.segment.lock();
        let written = self.write_out_locked(&seg);
        drop(seg);
        crate::tier::trace_slow("redo log write-out", started.elapsed());
        written
    }

    fn write_out_locked(&self, seg: &Segment) -> Result<()> {
        let data = {
            let mut buf = self.buf.lock();
            if buf.is_empty() {
                return Ok(());
            }
            let next = std::mem::take(&mut *self.spare.lock());
            std::mem::replace(&mut *buf, next)
        };
        let written = (&*seg.file)
            .write_all(&data)
            .map_err(|e| io("cannot write", e));
        // Kept for the next turn unless a burst made it much larger than usual.
        let mut data = data;
        if data.capacity() <= SPARE_MAX {
            data.clear();
            *self.spare.lock() = data;
        }
        written
    }

    /// Writes out and syncs every record appended so far. The sync itself runs without the
    /// segment's lock: writers handing their records to the operating system (before their
    /// replies leave) do not wait for it. Under compaction's disk load one sync took 0.7 s, and
    /// holding the lock through it held every connection's replies as long (issue 16: writes
    /// that stopped for 100-700 ms with the tier neither full nor paced). A sync covers every
    /// record written to the file before it starts, so what this call wrote out is durable
    /// when it returns, whatever others write meanwhile; a rotation meanwhile leaves the
    /// ended segment to the next [`RedoLog::sync_ended`] too.
    pub(crate) fn sync(&self) -> Result<()> {
        self.sync_ended()?;
        let file = {
            let seg = self.segment.lock();
            self.write_out_locked(&seg)?;
            seg.file.clone()
        };
        #[cfg(test)]
        std::thread::sleep(std::time::Duration::from_millis(
            self.slow_sync_ms.load(Ordering::Relaxed),
        ));
        let started = std::time::Instant::now();
        let synced = file.sync_data().map_err(|e| io("cannot sync", e));
        crate::tier::trace_slow("redo log sync", started.elapsed());
        synced
    }

    /// Syncs the segment the last [`RedoLog::rotate`] ended, if not done yet.
    pub(crate) fn sync_ended(&self) -> Result<()> {
        let mut ended = self.ended.lock();
        if let Some(seg) = ended.as_ref() {
            seg.file.sync_data().map_err(|e| io("cannot sync", e))?;
            *ended = None;
        }
        Ok(())
    }

    /// Creates the segment [`RedoLog::rotate`] will start (a no-op if it exists).
    pub(crate) fn prepare_next(&self) -> Result<()> {
        let number = self.segment.lock().number + 1;
        let mut next = self.next.lock();
        if next.as_ref().is_none_or(|n| n.number != number) {
            *next = Some(Segment::create(&self.dir, number)?);
        }
        Ok(())
    }

    /// Ends the current segment (its records written out, not yet synced: the next
    /// [`RedoLog::sync`] or [`RedoLog::sync_ended`] does it) and starts the next; returns the
    /// number of the one ended. The caller holds off appends while this runs, so every record
    /// appended before the call is in the ended segment or an older one.
    pub(crate) fn rotate(&self) -> Result<u64> {
        // An earlier ended segment not synced yet is synced first (one pending at a time).
        self.sync_ended()?;
        let mut seg = self.segment.lock();
        self.write_out_locked(&seg)?;
        let number = seg.number + 1;
        let next = match self.next.lock().take() {
            Some(n) if n.number == number => n,
            _ => Segment::create(&self.dir, number)?,
        };
        let ended = std::mem::replace(&mut *seg, next);
        let n = ended.number;
        *self.ended.lock() = Some(ended);
        Ok(n)
    }

    /// Retires the segments numbered `through` and below (their writes are in RocksDB): moves
    /// them to `archive/` when the log keeps a backlog for replicas, deletes them otherwise.
    /// Either way a restart no longer replays them.
    pub(crate) fn drop_through(&self, through: u64) -> Result<()> {
        let archive = self.dir.join(ARCHIVE);
        if self.archive {
            std::fs::create_dir_all(&archive).map_err(|e| io("cannot create the archive", e))?;
        }
        for n in segments(&self.dir)? {
            if n <= through {
                let path = segment_path(&self.dir, n);
                if self.archive {
                    std::fs::rename(&path, segment_path(&archive, n))
                        .map_err(|e| io("cannot archive", e))?;
                } else {
                    std::fs::remove_file(path).map_err(|e| io("cannot remove", e))?;
                }
            }
        }
        if self.archive {
            // The moves must survive a power cut before RocksDB's copy is relied on alone.
            File::open(&self.dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io("cannot sync the directory", e))?;
        }
        Ok(())
    }
}

impl Segment {
    fn create(dir: &Path, number: u64) -> Result<Segment> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(segment_path(dir, number))
            .map_err(|e| io("cannot create a segment", e))?;
        // The new file's name must survive a power cut as well as its records.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("cannot sync the directory", e))?;
        Ok(Segment {
            number,
            file: Arc::new(file),
        })
    }
}

/// The offset of a record's first write and how many it uses (at least 1), from its payload's
/// header; `None` for a record written before the log numbered them (offset 0).
pub(crate) fn offsets(payload: &[u8]) -> Option<(u64, u64)> {
    let seq = u64::from_le_bytes(payload.get(0..8)?.try_into().ok()?);
    let count = u32::from_le_bytes(payload.get(8..12)?.try_into().ok()?);
    (seq != 0).then_some((seq, u64::from(count.max(1))))
}

/// The payload of the record at `at`, if it is whole and its checksum matches.
pub(crate) fn record_at(data: &[u8], at: usize) -> Option<&[u8]> {
    let header = data.get(at..at.checked_add(RECORD_HEADER)?)?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    // Zeros where a record's length reached the disk before its data read as an empty record
    // whose checksum matches (the CRC of nothing is 0); the log never writes one (a payload is a
    // write batch, 12 bytes at least), so it ends the log like any torn record.
    if len == 0 || len > MAX_RECORD {
        return None;
    }
    let start = at + RECORD_HEADER;
    let payload = data.get(start..start.checked_add(len)?)?;
    (crc32fast::hash(payload) == crc).then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::RedoLog;
    use std::sync::atomic::Ordering;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn replay(
        dir: &std::path::Path,
    ) -> crate::error::Result<(Option<RedoLog>, Vec<Vec<u8>>, bool)> {
        let mut seen = Vec::new();
        let (log, found) = RedoLog::open(dir, false, false, |p| {
            seen.push(p.to_vec());
            Ok(())
        })?;
        Ok((log, seen, found.cut))
    }

    #[test]
    fn a_slow_sync_does_not_hold_writers_handing_records_to_the_os() -> R {
        let dir = tempfile::tempdir()?;
        let (log, _, _) = replay(dir.path())?;
        let log = Arc::new(log.ok_or("no log")?);
        log.slow_sync_ms.store(3_000, Ordering::Relaxed);
        log.append(b"synced");
        let syncing = log.clone();
        let sync = std::thread::spawn(move || syncing.sync());
        // The sync has written its record out and is in its (slowed) sync.
        while std::fs::metadata(crate::redo::segment_path(dir.path(), 1))?.len() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        let writer = log.clone();
        std::thread::spawn(move || {
            writer.append(b"later");
            let _ = tx.send(writer.write_out().map_err(|e| e.to_string()));
        });
        rx.recv_timeout(Duration::from_millis(1_500))
            .map_err(|_| "a write-out waited for another thread's sync")??;
        sync.join().map_err(|_| "the sync panicked")??;
        Ok(())
    }

    #[test]
    fn records_come_back_in_order_across_segments_and_dropped_segments_stay_gone() -> R {
        let dir = tempfile::tempdir()?;
        let (log, seen, _) = replay(dir.path())?;
        let log = log.ok_or("no log")?;
        assert!(seen.is_empty());
        log.append(b"one");
        log.append(b"two");
        log.write_out()?;
        log.prepare_next()?;
        let ended = log.rotate()?;
        log.sync_ended()?;
        log.append(b"three");
        log.sync()?;
        drop(log);
        let (log, seen, cut) = replay(dir.path())?;
        assert_eq!(
            seen,
            vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
        assert!(!cut);
        log.ok_or("no log")?.drop_through(ended)?;
        let (_, seen, _) = replay(dir.path())?;
        assert_eq!(seen, vec![b"three".to_vec()]);
        Ok(())
    }

    #[test]
    fn a_zeroed_tail_is_cut_like_a_torn_one() -> R {
        let dir = tempfile::tempdir()?;
        let (log, _, _) = replay(dir.path())?;
        let log = log.ok_or("no log")?;
        log.append(b"kept");
        log.sync()?;
        drop(log);
        // A power cut after the file's length grew but before its data was written: zeros.
        let seg = super::segments(dir.path())?
            .into_iter()
            .max()
            .ok_or("no segment")?;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(super::segment_path(dir.path(), seg))?;
        std::io::Write::write_all(&mut f, &[0u8; 64])?;
        drop(f);
        let (_, seen, cut) = replay(dir.path())?;
        assert!(cut);
        assert_eq!(seen, vec![b"kept".to_vec()]);
        Ok(())
    }

    #[test]
    fn a_torn_tail_is_cut_and_what_came_before_it_survives() -> R {
        let dir = tempfile::tempdir()?;
        let (log, _, _) = replay(dir.path())?;
        let log = log.ok_or("no log")?;
        log.append(b"kept");
        log.append(b"torn away");
        log.sync()?;
        drop(log);
        // Tear the last record: drop its last byte, as a power cut mid-write would.
        let seg = std::fs::read_dir(dir.path())?
            .flatten()
            .map(|e| e.path())
            .find(|p| std::fs::metadata(p).map(|m| m.len() > 0).unwrap_or(false))
            .ok_or("no segment")?;
        let len = std::fs::metadata(&seg)?.len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&seg)?
            .set_len(len - 1)?;
        let (log, seen, cut) = replay(dir.path())?;
        assert!(cut);
        assert_eq!(seen, vec![b"kept".to_vec()]);
        // The cut is permanent: appends after it replay after "kept".
        let log = log.ok_or("no log")?;
        log.append(b"later");
        log.sync()?;
        drop(log);
        let (_, seen, cut) = replay(dir.path())?;
        assert!(!cut);
        assert_eq!(seen, vec![b"kept".to_vec(), b"later".to_vec()]);
        Ok(())
    }

    #[test]
    fn a_flipped_byte_ends_the_replay_at_that_record() -> R {
        let dir = tempfile::tempdir()?;
        let (log, _, _) = replay(dir.path())?;
        let log = log.ok_or("no log")?;
        log.append(b"first");
        log.append(b"second");
        log.append(b"third");
        log.sync()?;
        drop(log);
        let seg = std::fs::read_dir(dir.path())?
            .flatten()
            .map(|e| e.path())
            .find(|p| std::fs::metadata(p).map(|m| m.len() > 0).unwrap_or(false))
            .ok_or("no segment")?;
        let mut bytes = std::fs::read(&seg)?;
        // The second record's payload starts after 8 + 5 + 8 bytes.
        bytes[8 + 5 + 8] ^= 0x20;
        std::fs::write(&seg, &bytes)?;
        let (_, seen, cut) = replay(dir.path())?;
        assert!(cut);
        assert_eq!(seen, vec![b"first".to_vec()]);
        Ok(())
    }

    #[test]
    fn batches_are_numbered_in_order_and_numbering_goes_on_after_a_reopen() -> R {
        let dir = tempfile::tempdir()?;
        let mut two = crate::storage::new_batch();
        two.put(b"a", b"1");
        two.put(b"b", b"2");
        let mut one = crate::storage::new_batch();
        one.delete(b"a");
        let (log, _, _) = replay(dir.path())?;
        let log = log.ok_or("no log")?;
        log.offsets_after(100);
        log.append(two.data());
        log.append(one.data());
        assert_eq!(
            log.last_offset(),
            103,
            "two offsets for the first batch, one for the next"
        );
        log.sync()?;
        drop(log);
        let (log, seen, _) = replay(dir.path())?;
        let numbers: Vec<_> = seen.iter().map(|p| super::offsets(p)).collect();
        assert_eq!(numbers, vec![Some((101, 2)), Some((103, 1))]);
        // The payload is the batch with its number: the records themselves are unchanged.
        assert_eq!(&seen[0][8..], &two.data()[8..]);
        let log = log.ok_or("no log")?;
        assert_eq!(log.last_offset(), 103);
        log.append(one.data());
        assert_eq!(log.last_offset(), 104);
        Ok(())
    }
}
