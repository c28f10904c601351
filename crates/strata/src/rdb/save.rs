//! Writing a whole RDB file (Redis 7.0's `rdbSaveRio`, RDB version 10) from a [`Db`], streaming:
//! the `REDIS0010` header, the AUX fields Redis writes (`redis-ver`, `redis-bits`, `ctime`,
//! `used-mem`, the replication fields when the file feeds a replica, `aof-base`), the FUNCTION
//! libraries kept in the directory (one RDB_OPCODE_FUNCTION2 record each, the code as loaded, as
//! Redis's `rdbSaveFunctions` writes them), then for each
//! database holding keys SELECTDB and RESIZEDB and its keys (EXPIRETIME_MS before a key with a
//! TTL, each value encoded by [`super::value::write_value`], the encoder DUMP uses), then EOF
//! and the CRC-64 of everything before it. Memory is bounded by one staged buffer (64 KiB plus
//! one element) whatever the data's size. The caller hands in a database nobody writes to
//! meanwhile (an exclusive or read-only open, or a checkpoint), so the file is one moment's
//! data. No LRU/LFU opcodes (Redis writes them only under an eviction policy that uses them).

use std::io::Write;

use crate::db::{now_ms, Db};
use crate::error::{Error, Result};
use crate::iter::KeyFilter;

use super::crc64::crc64;
use super::encoding::{put_len, put_string};
use super::file::{OP_AUX, OP_EOF, OP_EXPIRETIME_MS, OP_FUNCTION2, OP_RESIZEDB, OP_SELECTDB};
use super::payload::RDB_VERSION;
use super::value::{write_value, Staged};

/// The Redis version an RDB file names as its writer (`redis-ver`): the one Strata answers as.
pub const REDIS_VER: &str = "7.0.15";

/// The replication fields of a file sent to a replica (`repl-stream-db`, `repl-id`,
/// `repl-offset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplInfo {
    /// The replication id.
    pub replid: String,
    /// The offset the data is as of.
    pub offset: u64,
}

/// What [`export`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RdbSaved {
    /// Keys written.
    pub keys: u64,
    /// Of those, keys with a TTL.
    pub expires: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes to `W`, keeping the CRC-64 and the count of what went through.
struct Checksummed<W: Write> {
    out: W,
    crc: u64,
    bytes: u64,
}

impl<W: Write> Checksummed<W> {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.crc = crc64(self.crc, b);
        self.bytes += b.len() as u64;
        self.out.write_all(b).map_err(|e| Error::Io(e.to_string()))
    }
}

fn aux(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(OP_AUX);
    put_string(out, name.as_bytes());
    put_string(out, value);
}

/// Writes every live key of every logical database of `db` to `out` as an RDB file, calling
/// `progress(keys written, bytes written)` after each key. Returns the output and what was
/// written.
pub fn export<W: Write>(
    db: &Db,
    out: W,
    repl: Option<&ReplInfo>,
    mut progress: impl FnMut(u64, u64),
) -> Result<(W, RdbSaved)> {
    let mut w = Checksummed {
        out,
        crc: 0,
        bytes: 0,
    };
    let mut head = format!("REDIS{RDB_VERSION:04}").into_bytes();
    aux(&mut head, "redis-ver", REDIS_VER.as_bytes());
    aux(&mut head, "redis-bits", b"64");
    aux(&mut head, "ctime", (now_ms() / 1000).to_string().as_bytes());
    aux(&mut head, "used-mem", b"0");
    if let Some(r) = repl {
        aux(&mut head, "repl-stream-db", b"0");
        aux(&mut head, "repl-id", r.replid.as_bytes());
        aux(&mut head, "repl-offset", r.offset.to_string().as_bytes());
    }
    aux(&mut head, "aof-base", b"0");
    for code in crate::function_record::saved(db)? {
        head.push(OP_FUNCTION2);
        put_string(&mut head, &code);
    }
    w.put(&head)?;
    let mut saved = RdbSaved::default();
    let mut scratch = Vec::new();
    for index in 0..db.databases() {
        let d = db.select(index)?;
        let (keys, expires, _) = d.keyspace_info()?;
        if keys == 0 {
            continue;
        }
        scratch.clear();
        scratch.push(OP_SELECTDB);
        put_len(&mut scratch, u64::from(index));
        scratch.push(OP_RESIZEDB);
        put_len(&mut scratch, keys);
        put_len(&mut scratch, expires);
        w.put(&scratch)?;
        for info in d.iter(KeyFilter::new()) {
            let info = info?;
            let mut buf = std::mem::take(&mut scratch);
            buf.clear();
            if let Some(at) = info.expire_at {
                buf.push(OP_EXPIRETIME_MS);
                buf.extend_from_slice(&at.to_le_bytes());
            }
            let mut sink = |b: &[u8]| w.put(b);
            let mut staged = Staged::spilling(buf, &mut sink);
            let written = write_value(&d, &info.key, true, &mut staged)?;
            let Staged { buf, .. } = staged;
            if written.is_some() {
                sink(&buf)?;
                saved.keys += 1;
                saved.expires += u64::from(info.expire_at.is_some());
            }
            scratch = buf;
            progress(saved.keys, w.bytes);
        }
    }
    w.put(&[OP_EOF])?;
    let crc = w.crc;
    w.out
        .write_all(&crc.to_le_bytes())
        .map_err(|e| Error::Io(e.to_string()))?;
    w.out.flush().map_err(|e| Error::Io(e.to_string()))?;
    saved.bytes = w.bytes + 8;
    progress(saved.keys, saved.bytes);
    Ok((w.out, saved))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::file;
    use crate::rdb::test_db as db;

    #[test]
    fn a_file_reads_back_key_for_key_with_ttls_and_databases() -> Result<()> {
        let (_a, src) = db();
        let items: Vec<Vec<u8>> = (0..5000)
            .map(|i| format!("item-{i:05}").into_bytes())
            .collect();
        let refs: Vec<&[u8]> = items.iter().map(|v| v.as_slice()).collect();
        src.rpush(b"list", &refs)?;
        src.sadd(b"set", &refs)?;
        let scored: Vec<(f64, &[u8])> = refs
            .iter()
            .enumerate()
            .map(|(i, m)| (i as f64, *m))
            .collect();
        src.zadd(b"zset", &scored, Default::default())?;
        let fat = vec![7u8; 200_000];
        src.rpush(b"fat", &[&fat[..], b"x", &fat[..]])?;
        src.hset(b"small", &[(&b"f"[..], &b"v"[..])])?;
        src.expire_at(b"small", now_ms() as i64 + 100_000, &[])?;
        src.select(3)?.set(b"three", b"3", Default::default())?;

        let mut bytes = Vec::new();
        let (_, saved) = export(&src, &mut bytes, None, |_, _| {})?;
        assert_eq!((saved.keys, saved.expires), (6, 1));
        assert_eq!(saved.bytes, bytes.len() as u64);
        assert!(bytes.starts_with(b"REDIS0010"));

        let (_b, dst) = db();
        let loaded = file::import(&dst, bytes.as_slice(), |_| Ok(()), |_, _| {})?;
        assert!(loaded.checksum_verified);
        assert_eq!(loaded.keys, 6);
        for key in [&b"list"[..], b"set", b"zset", b"fat", b"small"] {
            assert_eq!(dst.dump_payload(key)?, src.dump_payload(key)?, "{key:?}");
        }
        assert_eq!(dst.ttl(b"small")?, src.ttl(b"small")?);
        assert_eq!(dst.select(3)?.get(b"three")?, Some(b"3".to_vec()));
        Ok(())
    }

    #[test]
    fn function_libraries_travel_with_the_file() -> Result<()> {
        let (_a, src) = db();
        let codes: [&[u8]; 2] = [
            b"#!lua name=one\nredis.register_function('f1', function() return 1 end)",
            b"#!lua name=two\nredis.register_function('f2', function() return 2 end)",
        ];
        src.aux_put(
            crate::function_record::RECORD,
            &crate::function_record::encode(codes.iter().copied()),
        )?;
        let (bytes, _) = export(&src, Vec::new(), None, |_, _| {})?;
        let (_b, dst) = db();
        let mut got = Vec::new();
        let loaded = file::import(
            &dst,
            bytes.as_slice(),
            |code| {
                got.push(code);
                Ok(())
            },
            |_, _| {},
        )?;
        assert_eq!(loaded.functions, 2);
        assert_eq!(got, codes.map(|c| c.to_vec()));
        Ok(())
    }

    #[test]
    fn an_empty_directory_is_a_header_and_a_checksum() -> Result<()> {
        let (_a, src) = db();
        let (bytes, saved) = export(&src, Vec::new(), None, |_, _| {})?;
        assert_eq!(saved.keys, 0);
        assert_eq!(&bytes[bytes.len() - 9..bytes.len() - 8], &[OP_EOF]);
        let (_b, dst) = db();
        assert_eq!(
            file::import(&dst, bytes.as_slice(), |_| Ok(()), |_, _| {})?.keys,
            0
        );
        Ok(())
    }
}
