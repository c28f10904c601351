//! Following the write-ahead log as it grows, for a leader's replication stream. RocksDB's own
//! log iterator finds a sequence number by reading the log file from its beginning, so asking it
//! again for every new write costs time in proportion to the live log; a [`WalTail`] keeps its
//! place instead (file and byte offset) and reads only what was appended since. It reads
//! RocksDB's log format (32 KiB blocks of CRC-checked records, fragmented across blocks; the
//! record payload is a write batch), accepts only what it understands, and reports anything
//! else as an error, after which the caller goes back to RocksDB's iterator.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::replication::{WalBatch, WalRead};

const BLOCK: u64 = 32 * 1024;
const HEADER: usize = 7;
const RECYCLABLE_HEADER: usize = 11;

/// A reader that follows the log from one sequence number on.
pub struct WalTail {
    dir: PathBuf,
    file: Option<(u64, File)>,
    /// Where the next record starts in `file`.
    pos: u64,
    /// The next sequence number to hand out.
    next: u64,
}

fn corrupt(what: impl Into<String>) -> Error {
    Error::Corrupt(format!("write-ahead log: {}", what.into()))
}

/// The log files (`NNNNNN.log`) in the directory and its `archive/`, by number.
fn log_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out = Vec::new();
    for d in [dir.to_path_buf(), dir.join("archive")] {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(num) = name
                .strip_suffix(".log")
                .and_then(|n| n.parse::<u64>().ok())
            {
                out.push((num, e.path()));
            }
        }
    }
    out.sort();
    out.dedup_by_key(|(n, _)| *n);
    out
}

/// One physical read of a log file: the complete logical records from `pos` on, each with the
/// offset just past it. Stops quietly at the first incomplete or not yet written record.
fn read_records(file: &File, number: u64, pos: u64, max: usize) -> Result<Vec<(Vec<u8>, u64)>> {
    let len = file.metadata().map_err(|e| corrupt(e.to_string()))?.len();
    if len <= pos {
        return Ok(Vec::new());
    }
    let available = (len - pos) as usize;
    let mut window = available.min(max.max(1 << 20));
    loop {
        let out = parse_window(file, number, pos, window)?;
        // A record larger than the window: read more.
        if out.is_empty() && window < available {
            window = available.min(window.saturating_mul(4));
            continue;
        }
        return Ok(out);
    }
}

fn parse_window(file: &File, number: u64, pos: u64, window: usize) -> Result<Vec<(Vec<u8>, u64)>> {
    let mut buf = vec![0u8; window];
    let got = file
        .read_at(&mut buf, pos)
        .map_err(|e| corrupt(e.to_string()))?;
    buf.truncate(got);
    let mut out = Vec::new();
    let mut at = 0usize; // offset in buf
    let mut record: Vec<u8> = Vec::new();
    let mut in_fragments = false;
    loop {
        let abs = pos + at as u64;
        let left_in_block = (BLOCK - abs % BLOCK) as usize;
        if left_in_block < HEADER {
            // The block's trailer is zero padding.
            if at + left_in_block > buf.len() {
                break;
            }
            at += left_in_block;
            continue;
        }
        if at + HEADER > buf.len() {
            break;
        }
        let h = &buf[at..at + HEADER];
        let stored_crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let length = u16::from_le_bytes([h[4], h[5]]) as usize;
        let kind = h[6];
        if kind == 0 && length == 0 {
            // Space not written yet.
            break;
        }
        let header = if (5..=8).contains(&kind) || kind == 11 {
            RECYCLABLE_HEADER
        } else {
            HEADER
        };
        if at + header + length > buf.len() {
            break;
        }
        if header + length > left_in_block {
            return Err(corrupt("record crosses a block"));
        }
        let crc_input = &buf[at + 6..at + header + length];
        if unmask(stored_crc) != crc32c(crc_input) {
            // Possibly a record still being written: stop here and look again later.
            break;
        }
        if header == RECYCLABLE_HEADER {
            let log = u32::from_le_bytes([buf[at + 7], buf[at + 8], buf[at + 9], buf[at + 10]]);
            if u64::from(log) != number & 0xffff_ffff {
                break; // the rest of a recycled file
            }
        }
        let payload = &buf[at + header..at + header + length];
        at += header + length;
        match kind {
            1 | 5 => {
                if in_fragments {
                    return Err(corrupt("full record inside a fragmented one"));
                }
                out.push((payload.to_vec(), pos + at as u64));
            }
            2 | 6 => {
                record.clear();
                record.extend_from_slice(payload);
                in_fragments = true;
            }
            3 | 7 => {
                if !in_fragments {
                    return Err(corrupt("middle fragment without a first"));
                }
                record.extend_from_slice(payload);
            }
            4 | 8 => {
                if !in_fragments {
                    return Err(corrupt("last fragment without a first"));
                }
                record.extend_from_slice(payload);
                in_fragments = false;
                out.push((std::mem::take(&mut record), pos + at as u64));
            }
            // Timestamp-size records, and records RocksDB marks as safe to ignore.
            10 | 11 => {}
            k if k & 0x80 != 0 => {}
            other => return Err(corrupt(format!("record type {other}"))),
        }
    }
    Ok(out)
}

/// The first sequence number and count of an encoded write batch.
fn batch_header(data: &[u8]) -> Result<(u64, u64)> {
    if data.len() < 12 {
        return Err(corrupt("write batch shorter than its header"));
    }
    let seq = u64::from_le_bytes(data[0..8].try_into().map_err(|_| corrupt("header"))?);
    let count = u32::from_le_bytes(data[8..12].try_into().map_err(|_| corrupt("header"))?);
    Ok((seq, u64::from(count)))
}

impl WalTail {
    /// A reader of the log in `dir` positioned at the batch that starts with `next`.
    pub fn open(dir: &Path, next: u64) -> Result<WalTail> {
        let mut tail = WalTail {
            dir: dir.to_path_buf(),
            file: None,
            pos: 0,
            next,
        };
        // The newest file whose first batch is at or before `next`.
        for (number, path) in log_files(dir).into_iter().rev() {
            let file = File::open(&path).map_err(|e| corrupt(e.to_string()))?;
            let first = read_records(&file, number, 0, 1 << 20)?;
            let Some((data, _)) = first.first() else {
                continue;
            };
            let (seq, _) = batch_header(data)?;
            if seq <= next {
                tail.file = Some((number, file));
                return Ok(tail);
            }
        }
        Err(corrupt(format!("no log file holds sequence number {next}")))
    }

    /// The batches from the current position on that are visible (`<= last`), about
    /// `max_bytes` at most, contiguous from the requested sequence number.
    pub fn read(&mut self, last: u64, max_bytes: usize) -> Result<WalRead> {
        let mut out: Vec<WalBatch> = Vec::new();
        let mut bytes = 0usize;
        loop {
            let Some((number, file)) = &self.file else {
                return Err(corrupt("no log file"));
            };
            let number = *number;
            let records = read_records(file, number, self.pos, max_bytes)?;
            let found_any = !records.is_empty();
            for (data, end) in records {
                let (seq, count) = batch_header(&data)?;
                if seq > last {
                    return Ok(WalRead::Batches(out));
                }
                if seq + count.max(1) <= self.next {
                    self.pos = end; // before the requested offset
                    continue;
                }
                if seq != self.next {
                    return if out.is_empty() && seq > self.next {
                        Ok(WalRead::Gap)
                    } else {
                        Err(corrupt(format!("batch at {seq}, expected {}", self.next)))
                    };
                }
                self.pos = end;
                self.next = seq + count.max(1);
                bytes += data.len();
                out.push(WalBatch { seq, count, data });
                if bytes >= max_bytes {
                    return Ok(WalRead::Batches(out));
                }
            }
            if found_any {
                continue;
            }
            // Nothing more in this file: move on once a newer file starts where this one ended.
            let newer = log_files(&self.dir).into_iter().find(|(n, _)| *n > number);
            let Some((n, path)) = newer else {
                return Ok(WalRead::Batches(out));
            };
            let file = File::open(&path).map_err(|e| corrupt(e.to_string()))?;
            let first = read_records(&file, n, 0, 1 << 20)?;
            match first.first() {
                Some((data, _)) if batch_header(data)?.0 == self.next => {
                    self.file = Some((n, file));
                    self.pos = 0;
                }
                Some((data, _)) if batch_header(data)?.0 < self.next => {
                    return Err(corrupt("log files out of order"));
                }
                // The newer file is empty, or this one may still get its last records.
                _ => return Ok(WalRead::Batches(out)),
            }
        }
    }

    /// The next sequence number it will hand out.
    pub fn next(&self) -> u64 {
        self.next
    }
}

fn unmask(masked: u32) -> u32 {
    let rot = masked.wrapping_sub(0xa282_ead8);
    rot.rotate_left(15)
}

/// CRC-32C (Castagnoli), as RocksDB checksums log records.
fn crc32c(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0x82f6_3b78 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        t
    });
    let mut crc = !0u32;
    for &b in data {
        crc = table[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Db, Options, SetOptions};

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn the_tail_follows_the_log_across_files_as_rocksdbs_iterator_does() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_with(
            dir.path(),
            Options {
                write_buffer_size: 64 << 10,
                wal_ttl_seconds: 3600,
                wal_size_limit_mb: 1024,
                ..Options::default()
            },
        )
        .unwrap();
        let start = db.last_seq() + 1;
        let mut tail = WalTail::open(dir.path(), start).unwrap();
        let mut got: Vec<WalBatch> = Vec::new();
        for round in 0..8 {
            for i in 0..200 {
                let value = vec![b'x'; 100 + (i % 7) * 900]; // some records span blocks
                db.set(
                    format!("k{round}:{i}").as_bytes(),
                    &value,
                    SetOptions::default(),
                )
                .unwrap();
            }
            db.hset(b"h", &[(format!("f{round}").as_bytes(), b"v")])
                .unwrap();
            loop {
                match tail.read(db.last_seq(), 1 << 20).unwrap() {
                    WalRead::Batches(b) if b.is_empty() => break,
                    WalRead::Batches(b) => got.extend(b),
                    WalRead::Gap => panic!("gap"),
                }
            }
        }
        // Small write buffers: the log moved through several files (some now archived).
        assert!(
            log_files(dir.path()).len() > 2,
            "{:?}",
            log_files(dir.path())
        );
        let WalRead::Batches(expected) = db.wal_read(start, usize::MAX).unwrap() else {
            panic!("rocksdb's iterator");
        };
        assert_eq!(got.len(), expected.len());
        for (a, b) in got.iter().zip(&expected) {
            assert_eq!((a.seq, a.count, &a.data), (b.seq, b.count, &b.data));
        }
        assert_eq!(tail.next(), db.last_seq() + 1);
        // Opening in the middle finds the same batches from there on.
        let mid = expected[expected.len() / 2].seq;
        let mut again = WalTail::open(dir.path(), mid).unwrap();
        let WalRead::Batches(rest) = again.read(db.last_seq(), usize::MAX).unwrap() else {
            panic!("read");
        };
        assert_eq!(rest.first().map(|b| b.seq), Some(mid));
    }
}
