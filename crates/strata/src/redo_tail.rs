//! Following the write-back tier's redo log as it grows, for a leader's replication stream (the
//! tier's counterpart of `wal_tail.rs`, which follows RocksDB's log). A [`RedoTail`] keeps its
//! place (segment and byte offset) and reads only what was appended since; segments live in
//! `redo/` until a checkpoint covers them and in `redo/archive/` after, and a move between the
//! two does not disturb a file already open. Each record's payload is a write batch whose header
//! carries its replication offset (`redo.rs`); records written before the log numbered them
//! (offset 0) are skipped. Reads files only: it never blocks the writers or the checkpointer.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::redo::{self, ARCHIVE, RECORD_HEADER};
use crate::replication::{WalBatch, WalRead};

/// A reader that follows the redo log from one offset on.
pub struct RedoTail {
    /// The log's directory (`<data dir>/redo`).
    dir: PathBuf,
    /// The segment being read, by number.
    file: (u64, File),
    /// Where the next record starts in `file`.
    pos: u64,
    /// The next offset to hand out.
    next: u64,
}

fn corrupt(what: impl Into<String>) -> Error {
    Error::Corrupt(format!("redo log: {}", what.into()))
}

/// The segments in `dir` and its archive, by number (a segment being moved may show up twice).
fn segment_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out = Vec::new();
    for d in [dir.join(ARCHIVE), dir.to_path_buf()] {
        for n in redo::segments(&d).unwrap_or_default() {
            out.push((n, redo::segment_path(&d, n)));
        }
    }
    out.sort();
    out.dedup_by_key(|(n, _)| *n);
    out
}

/// The whole, intact records of `file` from `pos` on, each with the offset just past it, about
/// `max` bytes (at least one record when there is one). Stops quietly at the first record not
/// completely written yet.
fn read_records(file: &File, pos: u64, max: usize) -> Result<Vec<(Vec<u8>, u64)>> {
    let len = file.metadata().map_err(|e| corrupt(e.to_string()))?.len();
    if len <= pos {
        return Ok(Vec::new());
    }
    let available = usize::try_from(len - pos).unwrap_or(usize::MAX);
    let mut window = available.min(max.max(1 << 20));
    loop {
        let mut buf = vec![0u8; window];
        let got = file
            .read_at(&mut buf, pos)
            .map_err(|e| corrupt(e.to_string()))?;
        buf.truncate(got);
        let mut out = Vec::new();
        let mut at = 0usize;
        while let Some(payload) = redo::record_at(&buf, at) {
            at += RECORD_HEADER + payload.len();
            out.push((payload.to_vec(), pos + at as u64));
        }
        // A record larger than the window: read more.
        if out.is_empty() && window < available {
            window = available.min(window.saturating_mul(4));
            continue;
        }
        return Ok(out);
    }
}

/// The offset of the first numbered record of a segment (`None`: none yet), and whether it has
/// any whole record (numbered or not).
fn first_offset(file: &File) -> Result<(Option<u64>, bool)> {
    let mut pos = 0;
    loop {
        let records = read_records(file, pos, 1 << 20)?;
        let Some((_, end)) = records.last() else {
            return Ok((None, pos > 0));
        };
        if let Some((seq, _)) = records.iter().find_map(|(p, _)| redo::offsets(p)) {
            return Ok((Some(seq), true));
        }
        pos = *end;
    }
}

fn open_file(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| corrupt(format!("{}: {e}", path.display())))
}

impl RedoTail {
    /// A reader of the log in `dir` (`<data dir>/redo`) positioned at offset `next`, `last`
    /// being the log's last offset; `None` when the log no longer holds `next` (or `next` is
    /// beyond `last + 1`): the reader needs a full copy.
    pub fn open(dir: &Path, next: u64, last: u64) -> Result<Option<RedoTail>> {
        if next == 0 || next > last.saturating_add(1) {
            return Ok(None);
        }
        let files = segment_files(dir);
        // The newest segment starting at or before `next`; when none does, nothing after `next`
        // may have been written yet, and any segment is early enough (records before `next`
        // are skipped).
        for (number, path) in files.iter().rev() {
            let file = open_file(path)?;
            if first_offset(&file)?.0.is_some_and(|seq| seq <= next) {
                return Ok(Some(RedoTail::at(dir, *number, file, next)));
            }
        }
        if next <= last {
            return Ok(None);
        }
        let Some((number, path)) = files.first() else {
            return Err(corrupt("no segment"));
        };
        Ok(Some(RedoTail::at(dir, *number, open_file(path)?, next)))
    }

    fn at(dir: &Path, number: u64, file: File, next: u64) -> RedoTail {
        RedoTail {
            dir: dir.to_path_buf(),
            file: (number, file),
            pos: 0,
            next,
        }
    }

    /// The batches from the current position on, about `max_bytes` at most, contiguous from the
    /// requested offset. [`WalRead::Gap`] when the log skips the next offset (its segment was
    /// pruned from the archive, or a restart numbered on beyond it).
    pub fn read(&mut self, max_bytes: usize) -> Result<WalRead> {
        let mut out: Vec<WalBatch> = Vec::new();
        let mut bytes = 0usize;
        let mut rechecked = false;
        loop {
            let records = read_records(&self.file.1, self.pos, max_bytes)?;
            let found_any = !records.is_empty();
            for (data, end) in records {
                let Some((seq, count)) = redo::offsets(&data) else {
                    self.pos = end; // written before offsets existed
                    continue;
                };
                if seq + count <= self.next {
                    self.pos = end; // before the requested offset
                    continue;
                }
                if seq != self.next {
                    return if out.is_empty() {
                        Ok(WalRead::Gap)
                    } else {
                        Ok(WalRead::Batches(out))
                    };
                }
                self.pos = end;
                self.next = seq + count;
                bytes += data.len();
                // The batch header's record count, as RocksDB's log reader reports it.
                let count = data
                    .get(8..12)
                    .and_then(|c| c.try_into().ok())
                    .map_or(0, |c| u64::from(u32::from_le_bytes(c)));
                out.push(WalBatch { seq, count, data });
                if bytes >= max_bytes {
                    return Ok(WalRead::Batches(out));
                }
            }
            if found_any {
                continue;
            }
            // Nothing more in this segment: move on once a later one holds records from
            // `next` or before (this one then gets no more: a checkpoint ends a segment only
            // once all its records are written out).
            let number = self.file.0;
            let mut moved = false;
            for (n, path) in segment_files(&self.dir) {
                if n <= number {
                    continue;
                }
                let Ok(file) = File::open(&path) else {
                    // Moved to the archive meanwhile: look again next time.
                    return Ok(WalRead::Batches(out));
                };
                match first_offset(&file)? {
                    // Empty, or written before offsets existed: nothing to send there.
                    (None, true) => continue,
                    (None, false) if file.metadata().is_ok_and(|m| m.len() == 0) => continue,
                    // Its first record is being written.
                    (None, false) => return Ok(WalRead::Batches(out)),
                    (Some(seq), _) if seq <= self.next => {
                        self.file = (n, file);
                        self.pos = 0;
                        moved = true;
                        break;
                    }
                    (Some(_), _) if !rechecked => {
                        // This segment may have got its last records since it was read.
                        rechecked = true;
                        moved = true;
                        break;
                    }
                    (Some(_), _) => {
                        return Ok(if out.is_empty() {
                            WalRead::Gap
                        } else {
                            WalRead::Batches(out)
                        })
                    }
                }
            }
            if !moved {
                return Ok(WalRead::Batches(out));
            }
        }
    }

    /// The next offset it will hand out.
    pub fn next(&self) -> u64 {
        self.next
    }
}
