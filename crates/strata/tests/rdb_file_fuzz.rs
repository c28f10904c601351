//! Seeded fuzzing of whole RDB files through `strata::rdb::file::import`, bounded for CI: a
//! valid file holding every type (small and large keys, TTLs, two databases) is cut, flipped,
//! spliced and repeated into damaged files, each imported into an empty database (the blind
//! bulk path) and into one already holding keys (the read-and-merge path). An import may refuse
//! its file, but must not panic, and whatever it leaves must pass `Db::check` (no collection
//! whose length disagrees with its members, no half-written metadata). `STRATA_FUZZ_ITERS` sets
//! the number of files (default 100,000; a 500th of it here, each file being an import and a
//! check of the whole database).

use strata::rdb::{file, save};
use strata::{Db, Result};

mod common;
use common::Rng;

fn iterations() -> usize {
    std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
        / 500
}

/// An RDB file (as Strata exports it) with every type, small and large, some with a TTL.
fn valid_file() -> Result<Vec<u8>> {
    let dir = tempfile::tempdir().map_err(|e| strata::Error::Io(e.to_string()))?;
    let db = Db::open(dir.path())?;
    let items: Vec<Vec<u8>> = (0..1500).map(|i| format!("m{i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = items.iter().map(|v| v.as_slice()).collect();
    db.set(b"s", b"string value", Default::default())?;
    db.set(b"n", b"12345", Default::default())?;
    db.rpush(b"small-list", &refs[..5])?;
    db.rpush(b"big-list", &refs)?;
    db.sadd(b"small-set", &refs[..4])?;
    db.sadd(b"int-set", &[b"1", b"2", b"300"])?;
    db.sadd(b"big-set", &refs)?;
    let pairs: Vec<(&[u8], &[u8])> = refs.iter().map(|m| (*m, *m)).collect();
    db.hset(b"small-hash", &pairs[..3])?;
    db.hset(b"big-hash", &pairs)?;
    let scored: Vec<(f64, &[u8])> = refs
        .iter()
        .enumerate()
        .map(|(i, m)| (i as f64 / 7.0, *m))
        .collect();
    db.zadd(b"small-zset", &scored[..6], Default::default())?;
    db.zadd(b"big-zset", &scored, Default::default())?;
    db.expire_at(b"small-hash", strata::now_ms() as i64 + 1_000_000, &[])?;
    db.expire_at(b"big-set", strata::now_ms() as i64 + 1_000_000, &[])?;
    db.select(2)?.set(b"two", b"2", Default::default())?;
    let (bytes, _) = save::export(&db, Vec::new(), None, |_, _| {})?;
    Ok(bytes)
}

fn damage(rng: &mut Rng, good: &[u8]) -> Vec<u8> {
    let mut v = good.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(v.len());
        match rng.below(5) {
            0 => v[at] ^= 1 << rng.below(8),
            1 => v[at] = rng.next() as u8,
            2 => v.truncate(at),
            // A stretch repeated: repeated members and keys.
            3 => {
                let len = 1 + rng.below(64);
                let end = (at + len).min(v.len());
                let copy = v[at..end].to_vec();
                let to = rng.below(v.len());
                v.splice(to..to, copy);
            }
            _ => {
                let len = 1 + rng.below(16);
                let end = (at + len).min(v.len());
                v.drain(at..end);
            }
        }
        if v.is_empty() {
            break;
        }
    }
    // Damage near the end is caught by the checksum alone: zero it half of the time, as a
    // file without a checksum has, so the decoders see the damage.
    if rng.below(2) == 0 && v.len() >= 8 {
        let n = v.len();
        v[n - 8..].fill(0);
    }
    v
}

fn import_and_check(db: &Db, bytes: &[u8]) -> Result<()> {
    let _ = file::import(db, bytes, |_| Ok(()), |_, _| {});
    let report = db.check(false, |_| {})?;
    assert!(
        report.problems.is_empty(),
        "an import left inconsistent data: {:?}",
        report.problems
    );
    Ok(())
}

#[test]
fn damaged_rdb_files_never_panic_or_leave_inconsistent_data() -> Result<()> {
    let good = valid_file()?;
    let dir = tempfile::tempdir().map_err(|e| strata::Error::Io(e.to_string()))?;
    let db = Db::open(dir.path())?;
    let mut rng = Rng(0x5EED_0017);
    for i in 0..iterations() {
        let bytes = damage(&mut rng, &good);
        db.flushall()?;
        if i % 2 == 1 {
            // Keys already there: the import goes through `Db::apply`.
            db.set(b"s", b"old", Default::default())?;
            db.sadd(b"big-set", &[b"old"])?;
        }
        import_and_check(&db, &bytes)?;
    }
    Ok(())
}

#[test]
fn a_key_repeated_in_a_file_is_replaced_whole() -> Result<()> {
    let good = valid_file()?;
    // The body once more before the end: every key of db 0 and db 2 appears twice.
    let head = 9;
    let eof = good.len() - 9;
    let mut twice = good[..eof].to_vec();
    // SELECTDB 0, after the AUX fields.
    let body_start = good[head..eof]
        .windows(2)
        .position(|w| w == [0xFE, 0x00])
        .map(|p| p + head)
        .unwrap_or(head);
    twice.extend_from_slice(&good[body_start..eof]);
    twice.push(0xFF);
    twice.extend_from_slice(&[0; 8]);
    let dir = tempfile::tempdir().map_err(|e| strata::Error::Io(e.to_string()))?;
    let db = Db::open(dir.path())?;
    let summary = file::import(&db, twice.as_slice(), |_| Ok(()), |_, _| {})?;
    assert_eq!(summary.keys, 24);
    assert_eq!(db.dbsize()?, 11);
    assert_eq!(db.scard(b"big-set")?, 1500);
    assert_eq!(db.llen(b"big-list")?, 1500);
    assert!(db.check(false, |_| {})?.problems.is_empty());
    Ok(())
}

#[test]
fn a_key_repeated_within_one_database_keeps_the_last_value() -> Result<()> {
    use strata::rdb::encoding::{put_len, put_string};
    let mut b = b"REDIS0010".to_vec();
    b.push(0xFE); // SELECTDB 0
    put_len(&mut b, 0);
    for items in [&[&b"a"[..], b"b", b"c"][..], &[b"z"]] {
        b.push(1); // a plain list
        put_string(&mut b, b"k");
        put_len(&mut b, items.len() as u64);
        for item in items {
            put_string(&mut b, item);
        }
    }
    b.push(0); // then a string of the same name
    put_string(&mut b, b"s");
    put_string(&mut b, b"x");
    b.push(2); // a plain set, replaced by a string
    put_string(&mut b, b"s2");
    put_len(&mut b, 1);
    put_string(&mut b, b"m");
    b.push(0);
    put_string(&mut b, b"s2");
    put_string(&mut b, b"y");
    b.push(0xFF);
    b.extend_from_slice(&[0; 8]);
    let dir = tempfile::tempdir().map_err(|e| strata::Error::Io(e.to_string()))?;
    let db = Db::open(dir.path())?;
    file::import(&db, b.as_slice(), |_| Ok(()), |_, _| {})?;
    assert_eq!(db.lrange(b"k", 0, -1)?, vec![b"z".to_vec()]);
    assert_eq!(db.get(b"s2")?, Some(b"y".to_vec()));
    assert_eq!(db.dbsize()?, 3);
    assert!(db.check(false, |_| {})?.problems.is_empty());
    Ok(())
}
