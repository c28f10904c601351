//! The framing of the replication stream after the PSYNC handshake (byte by byte in
//! `docs/replication.md`): every frame is a kind byte, a 4-byte big-endian payload length and the
//! payload. The leader sends the family map, the copy, log batches, published messages and
//! heartbeats; the replica sends acknowledgements. Knows nothing of what the frames mean.

use std::io::{self, Read, Write};

/// Leader → replica: RocksDB's id of each replicated family (5 × u32 LE), first frame of a sync.
pub const FAMILY_IDS: u8 = b'C';
/// Leader → replica: records of the copy, each `[family u8][klen u32 LE][key][vlen u32 LE][value]`.
pub const COPY: u8 = b'S';
/// Leader → replica: end of the copy: `[sequence number u64 LE][record count u64 LE]`.
pub const COPY_END: u8 = b'E';
/// Leader → replica: one log batch: `[first sequence number u64 LE][RocksDB batch encoding]`.
pub const BATCH: u8 = b'W';
/// Leader → replica: a PUBLISH: `[kind u8: 0 channel, 2 shard][channel len u32 LE][channel][message]`.
pub const PUBLISH: u8 = b'P';
/// Leader → replica: once a second: `[leader's last sequence number u64 LE]`.
pub const HEARTBEAT: u8 = b'H';
/// Replica → leader: `[last applied sequence number u64 LE]`.
pub const ACK: u8 = b'A';

/// The largest frame a reader accepts (a log batch holds at most a few values of
/// `proto-max-bulk-len`, 512 MB by default).
pub const MAX_FRAME: usize = 1536 << 20;

/// Writes one frame whose payload is the concatenation of `parts`.
pub fn write_frame(w: &mut impl Write, kind: u8, parts: &[&[u8]]) -> io::Result<()> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let len = u32::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "replication frame too large"))?;
    w.write_all(&[kind])?;
    w.write_all(&len.to_be_bytes())?;
    for p in parts {
        w.write_all(p)?;
    }
    Ok(())
}

/// Reads one frame: its kind and payload.
pub fn read_frame(r: &mut impl Read) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head)?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_FRAME {
        return Err(invalid(format!("replication frame of {len} bytes")));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok((head[0], payload))
}

/// An `InvalidData` error with `msg`.
pub fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Reads a little-endian u64 at `at` of `buf`.
pub fn u64_at(buf: &[u8], at: usize) -> io::Result<u64> {
    buf.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| invalid("short replication frame"))
}

/// Reads a little-endian u32 at `at` of `buf`.
pub fn u32_at(buf: &[u8], at: usize) -> io::Result<u32> {
    buf.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| invalid("short replication frame"))
}

/// Appends one copy record to a COPY payload.
pub fn push_record(buf: &mut Vec<u8>, family: usize, key: &[u8], value: &[u8]) {
    buf.push(family as u8);
    buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
    buf.extend_from_slice(key);
    buf.extend_from_slice(&(value.len() as u32).to_le_bytes());
    buf.extend_from_slice(value);
}

/// One record of the copy: family index, key, value.
pub type Record<'a> = (usize, &'a [u8], &'a [u8]);

/// The records of a COPY payload.
pub fn records(payload: &[u8]) -> io::Result<Vec<Record<'_>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < payload.len() {
        let family = payload[at] as usize;
        let klen = u32_at(payload, at + 1)? as usize;
        let key = payload
            .get(at + 5..at + 5 + klen)
            .ok_or_else(|| invalid("truncated copy record"))?;
        at += 5 + klen;
        let vlen = u32_at(payload, at)? as usize;
        let value = payload
            .get(at + 4..at + 4 + vlen)
            .ok_or_else(|| invalid("truncated copy record"))?;
        at += 4 + vlen;
        out.push((family, key, value));
    }
    Ok(out)
}

/// Reads one `\r\n`-terminated line byte by byte (handshake replies), at most 1 KiB.
pub fn read_line(r: &mut impl Read) -> io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        r.read_exact(&mut byte)?;
        if byte[0] == b'\n' {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
        line.push(byte[0]);
        if line.len() > 1024 {
            return Err(invalid("handshake line too long"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_copy_records_read_back_as_written() {
        let mut payload = Vec::new();
        push_record(&mut payload, 1, b"key", b"value");
        push_record(&mut payload, 4, b"", b"");
        let mut wire = Vec::new();
        write_frame(&mut wire, COPY, &[&payload]).unwrap();
        let (kind, got) = read_frame(&mut wire.as_slice()).unwrap();
        assert_eq!(kind, COPY);
        let recs = records(&got).unwrap();
        assert_eq!(
            recs,
            vec![(1, &b"key"[..], &b"value"[..]), (4, &b""[..], &b""[..])]
        );
        assert!(records(&got[..got.len() - 1]).is_err());
    }

    #[test]
    fn a_frame_claiming_more_than_the_limit_is_refused_before_allocating() {
        let mut wire = vec![BATCH];
        wire.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(read_frame(&mut wire.as_slice()).is_err());
    }
}
