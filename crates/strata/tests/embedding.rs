//! The library as an embedding program uses it: atomic batches across keys, streaming iteration
//! by prefix/range/pattern, the dump format round trip, the consistency check, read-only opening
//! and the errors for a locked, missing or foreign directory.

use std::sync::Arc;

use strata::{dump, Batch, Db, Error, KeyFilter, KeyType, Options, Ttl};

type R = Result<(), Box<dyn std::error::Error>>;

fn open() -> Result<(tempfile::TempDir, Db), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path().join("data"))?;
    Ok((dir, db))
}

#[test]
fn batch_applies_writes_to_many_keys_together() -> R {
    let (_d, db) = open()?;
    db.set(b"old", b"x", Default::default())?;
    let mut b = Batch::new();
    b.set(b"s", b"1")
        .del(b"old")
        .hset(b"h", &[(b"a", b"1"), (b"b", b"2")])
        .hset(b"h", &[(b"a", b"3")])
        .sadd(b"set", &[b"m", b"n", b"m"])
        .rpush(b"l", &[b"x", b"y"])
        .rpush(b"l", &[b"z"])
        .zadd(b"z", &[(1.0, b"a"), (2.0, b"b")])
        .zadd(b"z", &[(5.0, b"a")])
        .set_expiring(b"tmp", b"t", strata::now_ms() + 60_000);
    assert_eq!(b.len(), 10);
    db.apply(&b)?;
    assert_eq!(db.get(b"s")?, Some(b"1".to_vec()));
    assert_eq!(db.get(b"old")?, None);
    assert_eq!(db.hlen(b"h")?, 2);
    assert_eq!(db.hget(b"h", b"a")?, Some(b"3".to_vec()));
    assert_eq!(db.scard(b"set")?, 2);
    assert_eq!(
        db.lrange(b"l", 0, -1)?,
        vec![b"x".to_vec(), b"y".to_vec(), b"z".to_vec()]
    );
    assert_eq!(db.zcard(b"z")?, 2);
    assert_eq!(db.zscore(b"z", b"a")?, Some(5.0));
    assert_eq!(db.zrank(b"z", b"a", false)?, Some(1));
    assert!(matches!(db.ttl(b"tmp")?, Ttl::ExpiresAt(_)));
    assert_eq!(db.check(false, |_| {})?.problems, vec![]);
    Ok(())
}

#[test]
fn batch_extends_existing_collections_and_keeps_their_ttl() -> R {
    let (_d, db) = open()?;
    db.rpush(b"l", &[b"a"])?;
    db.sadd(b"s", &[b"a"])?;
    db.expire_at(b"s", (strata::now_ms() + 60_000) as i64, &[])?;
    let mut b = Batch::new();
    b.rpush(b"l", &[b"b"]).sadd(b"s", &[b"a", b"b"]);
    db.apply(&b)?;
    assert_eq!(db.lrange(b"l", 0, -1)?, vec![b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(db.scard(b"s")?, 2);
    assert!(matches!(db.ttl(b"s")?, Ttl::ExpiresAt(_)));
    Ok(())
}

#[test]
fn failed_batch_writes_nothing() -> R {
    let (_d, db) = open()?;
    db.set(b"str", b"v", Default::default())?;
    let mut b = Batch::new();
    b.set(b"a", b"1").hset(b"str", &[(b"f", b"v")]);
    assert_eq!(db.apply(&b), Err(Error::WrongType));
    assert_eq!(db.get(b"a")?, None);
    let mut b = Batch::new();
    b.set(b"a", b"1").zadd(b"z", &[(f64::NAN, b"m")]);
    assert_eq!(db.apply(&b), Err(Error::NotFloat));
    assert_eq!(db.get(b"a")?, None);
    Ok(())
}

#[test]
fn batches_are_atomic_for_concurrent_readers() -> R {
    let (_d, db) = open()?;
    let db = Arc::new(db);
    let mut b = Batch::new();
    b.set(b"x", b"0").set(b"y", b"0");
    db.apply(&b)?;
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || -> Result<(), Error> {
            for i in 1..300u32 {
                let v = i.to_string();
                let mut b = Batch::new();
                b.set(b"x", v.as_bytes()).set(b"y", v.as_bytes());
                db.apply(&b)?;
            }
            Ok(())
        })
    };
    for _ in 0..300 {
        // MGET reads both keys at one sequence number.
        let v = db.mget(&[b"x", b"y"])?;
        assert_eq!(v[0], v[1]);
    }
    writer.join().map_err(|_| "writer panicked")??;
    Ok(())
}

#[test]
fn iteration_streams_by_prefix_range_pattern_and_type() -> R {
    let (_d, db) = open()?;
    for i in 0..2000u32 {
        db.set(format!("user:{i:04}").as_bytes(), b"v", Default::default())?;
    }
    db.hset(b"user:h", &[(b"f", b"v")])?;
    db.set(b"other", b"v", Default::default())?;
    let count =
        |f: KeyFilter| -> Result<usize, Error> { db.iter(f).try_fold(0, |n, k| k.map(|_| n + 1)) };
    assert_eq!(count(KeyFilter::new())?, 2002);
    assert_eq!(count(KeyFilter::new().prefix(b"user:"))?, 2001);
    assert_eq!(
        count(KeyFilter::new().range(b"user:0100", b"user:0200"))?,
        100
    );
    assert_eq!(count(KeyFilter::new().pattern(b"user:1*"))?, 1000);
    assert_eq!(count(KeyFilter::new().kind(KeyType::Hash))?, 1);
    let h = db
        .iter(KeyFilter::new().kind(KeyType::Hash))
        .next()
        .ok_or("no hash")??;
    assert_eq!(
        (h.key.as_slice(), h.size, h.expire_at),
        (&b"user:h"[..], 1, None)
    );
    Ok(())
}

#[test]
fn dump_round_trip_keeps_every_type_database_and_ttl() -> R {
    let dir = tempfile::tempdir()?;
    let src = Db::open(dir.path().join("a"))?;
    src.set(b"s", b"\0bin\xff", Default::default())?;
    src.hset(b"h", &[(b"f", b"v")])?;
    src.rpush(b"l", &[b"1", b"2", b"3"])?;
    src.sadd(b"set", &[b"a", b"b"])?;
    src.zadd(
        b"z",
        &[(f64::NEG_INFINITY, b"lo".as_slice()), (2.5, b"mid")],
        Default::default(),
    )?;
    let big: Vec<Vec<u8>> = (0..2500u32).map(|i| i.to_string().into_bytes()).collect();
    let big_refs: Vec<&[u8]> = big.iter().map(|v| v.as_slice()).collect();
    src.rpush(b"big", &big_refs)?;
    let at = strata::now_ms() + 3_600_000;
    src.expire_at(b"h", at as i64, &[])?;
    src.select(3)?.set(b"in3", b"x", Default::default())?;
    let mut bytes = Vec::new();
    assert_eq!(dump::export(&src, &mut bytes, |_| {})?, 7);

    let dst = Db::open(dir.path().join("b"))?;
    dst.set(b"s", b"replaced", Default::default())?;
    let summary = dump::import(&dst, bytes.as_slice(), |_| {})?;
    assert_eq!(summary.keys, 7);
    assert_eq!(dst.get(b"s")?, Some(b"\0bin\xff".to_vec()));
    assert_eq!(dst.hget(b"h", b"f")?, Some(b"v".to_vec()));
    assert_eq!(dst.ttl(b"h")?, Ttl::ExpiresAt(at));
    assert_eq!(dst.lrange(b"l", 0, -1)?.len(), 3);
    assert_eq!(dst.lrange(b"big", 0, -1)?, big);
    assert_eq!(dst.smembers(b"set")?, vec![b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(dst.zscore(b"z", b"lo")?, Some(f64::NEG_INFINITY));
    assert_eq!(dst.select(3)?.get(b"in3")?, Some(b"x".to_vec()));
    assert_eq!(dst.check(false, |_| {})?.problems, vec![]);
    Ok(())
}

#[test]
fn dump_round_trip_keeps_streams_with_their_groups() -> R {
    use strata::stream::{AddId, GroupRead, GroupStart, StreamId};
    let dir = tempfile::tempdir()?;
    let src = Db::open(dir.path().join("a"))?;
    for i in 1..=2500u64 {
        let n = i.to_string();
        src.xadd(
            b"x",
            AddId::Exact(StreamId::new(i, 0)),
            &[b"n", n.as_bytes()],
            false,
            None,
        )?;
    }
    src.xgroup_create(b"x", b"g", GroupStart::Id(StreamId::MIN), false, None)?;
    src.xreadgroup(b"x", b"g", b"alice", GroupRead::New, 3, false)?;
    src.xdel(b"x", &[StreamId::new(2, 0)])?;
    let mut bytes = Vec::new();
    assert_eq!(dump::export(&src, &mut bytes, |_| {})?, 1);
    let dst = Db::open(dir.path().join("b"))?;
    dst.set(b"x", b"replaced", Default::default())?;
    assert_eq!(dump::import(&dst, bytes.as_slice(), |_| {})?.keys, 1);
    let all = |db: &Db| db.xrange(b"x", StreamId::MIN, StreamId::MAX, None, false);
    assert_eq!(all(&dst)?, all(&src)?);
    assert_eq!(dst.xinfo_stream(b"x")?, src.xinfo_stream(b"x")?);
    assert_eq!(dst.xinfo_groups(b"x")?, src.xinfo_groups(b"x")?);
    assert_eq!(
        dst.xpending_summary(b"x", b"g")?,
        src.xpending_summary(b"x", b"g")?
    );
    assert_eq!(dst.check(false, |_| {})?.problems, vec![]);
    Ok(())
}

#[test]
fn damaged_dumps_are_refused_with_a_reason() -> R {
    let (_d, db) = open()?;
    db.set(b"k", b"v", Default::default())?;
    let mut bytes = Vec::new();
    dump::export(&db, &mut bytes, |_| {})?;
    let mut flipped = bytes.clone();
    let at = flipped.len() - 20;
    flipped[at] ^= 0x55;
    assert!(matches!(
        dump::import(&db, flipped.as_slice(), |_| {}),
        Err(Error::BadDump(_))
    ));
    let truncated = &bytes[..bytes.len() - 6];
    assert!(matches!(
        dump::import(&db, truncated, |_| {}),
        Err(Error::BadDump(_))
    ));
    assert!(matches!(
        dump::import(&db, &b"PK\x03\x04zipfile"[..], |_| {}),
        Err(Error::BadDump(_))
    ));
    Ok(())
}

#[test]
fn second_open_of_a_directory_is_refused_as_locked() -> R {
    let (d, db) = open()?;
    match Db::open(d.path().join("data")) {
        Err(Error::Locked(m)) => assert!(m.contains("in use by another process"), "{m}"),
        other => panic!("expected Locked, got {:?}", other.map(|_| ())),
    }
    db.set(b"k", b"v", Default::default())?;
    db.flush()?;
    let ro = Db::open_read_only(d.path().join("data"))?;
    assert!(ro.is_read_only());
    assert_eq!(ro.get(b"k")?, Some(b"v".to_vec()));
    assert_eq!(ro.del(&[b"k"]), Err(Error::ReadOnly));
    Ok(())
}

#[test]
fn missing_and_foreign_directories_are_named_not_created() -> R {
    let d = tempfile::tempdir()?;
    let opts = Options {
        create_if_missing: false,
        ..Options::default()
    };
    let missing = d.path().join("nope");
    assert!(matches!(
        Db::open_with(&missing, opts.clone()),
        Err(Error::Missing(_))
    ));
    assert!(!missing.exists());
    std::fs::write(d.path().join("file.txt"), b"hello")?;
    assert!(matches!(
        Db::open_with(d.path(), opts),
        Err(Error::NotStrata(_))
    ));
    Ok(())
}

#[test]
fn check_counts_keys_members_and_orphans() -> R {
    let (_d, db) = open()?;
    db.sadd(b"s", &[b"a", b"b", b"c"])?;
    db.hset(b"h", &[(b"a", b"1")])?;
    db.del(&[b"h"])?;
    let clean = db.check(false, |_| {})?;
    assert_eq!((clean.keys, clean.members, clean.orphan_records), (1, 3, 1));
    assert!(clean.problems.is_empty());
    Ok(())
}
