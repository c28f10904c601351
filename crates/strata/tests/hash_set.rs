//! Behaviour of hashes and sets through the library's public API: exact lengths, WRONGTYPE,
//! increments, random picks, scans, set algebra, OBJECT ENCODING, and big keys (O(1) delete,
//! space reclaimed by compaction). Each test opens its own temporary directory.

use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};

use strata::{Db, Error, SetOptions};

type R = Result<(), Box<dyn std::error::Error>>;

fn open() -> Result<(tempfile::TempDir, Db), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path())?;
    Ok((dir, db))
}

fn v(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

// ----- hashes -----

#[test]
fn hset_counts_only_new_fields_and_keeps_len_exact() -> R {
    let (_d, db) = open()?;
    assert_eq!(
        db.hset(b"h", &[(b"a", b"1"), (b"b", b"2"), (b"a", b"3")])?,
        2
    );
    assert_eq!(db.hget(b"h", b"a")?, Some(v("3")));
    assert_eq!(db.hset(b"h", &[(b"a", b"4"), (b"c", b"5")])?, 1);
    assert_eq!(db.hlen(b"h")?, 3);
    assert!(!db.hsetnx(b"h", b"a", b"x")?);
    assert!(db.hsetnx(b"h", b"d", b"x")?);
    assert_eq!(db.hlen(b"h")?, 4);
    assert_eq!(db.hget(b"h", b"a")?, Some(v("4")));
    assert_eq!(db.hstrlen(b"h", b"d")?, 1);
    assert_eq!(db.hstrlen(b"h", b"nope")?, 0);
    assert!(db.hexists(b"h", b"c")?);
    assert!(!db.hexists(b"h", b"zz")?);
    assert_eq!(
        db.hmget(b"h", &[b"a", b"zz", b"c"])?,
        vec![Some(v("4")), None, Some(v("5"))]
    );
    assert_eq!(db.hmget(b"missing", &[b"a"])?, vec![None]);
    Ok(())
}

#[test]
fn hdel_counts_each_field_once_and_removes_the_empty_hash() -> R {
    let (_d, db) = open()?;
    db.hset(b"h", &[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])?;
    assert_eq!(db.hdel(b"h", &[b"a", b"nope", b"a"])?, 1);
    assert_eq!(db.hlen(b"h")?, 2);
    assert_eq!(db.hdel(b"h", &[b"b", b"c"])?, 2);
    assert!(!db.exists(b"h")?);
    assert_eq!(db.hlen(b"h")?, 0);
    assert_eq!(db.hdel(b"h", &[b"a"])?, 0);
    // A re-created hash does not see the old fields.
    db.hset(b"h", &[(b"x", b"1")])?;
    assert_eq!(db.hgetall(b"h")?, vec![(v("x"), v("1"))]);
    Ok(())
}

#[test]
fn hgetall_hkeys_hvals_stream_in_field_order() -> R {
    let (_d, db) = open()?;
    db.hset(b"h", &[(b"b", b"2"), (b"a", b"1"), (b"", b"empty")])?;
    assert_eq!(db.hkeys(b"h")?, vec![v(""), v("a"), v("b")]);
    assert_eq!(db.hvals(b"h")?, vec![v("empty"), v("1"), v("2")]);
    assert_eq!(db.hgetall(b"h")?.len(), 3);
    assert!(db.hgetall(b"missing")?.is_empty());
    Ok(())
}

#[test]
fn hash_commands_refuse_other_types() -> R {
    let (_d, db) = open()?;
    db.set(b"s", b"x", SetOptions::default())?;
    db.sadd(b"set", &[b"m"])?;
    for key in [&b"s"[..], b"set"] {
        assert_eq!(db.hset(key, &[(b"f", b"v")]), Err(Error::WrongType));
        assert_eq!(db.hget(key, b"f"), Err(Error::WrongType));
        assert_eq!(db.hlen(key), Err(Error::WrongType));
        assert_eq!(db.hgetall(key), Err(Error::WrongType));
        assert_eq!(db.hincr_by(key, b"f", 1), Err(Error::WrongType));
        assert_eq!(db.hrandfield(key), Err(Error::WrongType));
        assert!(matches!(db.hscan(key, 0, None, 10), Err(Error::WrongType)));
    }
    assert_eq!(db.get(b"s")?, Some(v("x")));
    Ok(())
}

#[test]
fn hincrby_and_hincrbyfloat_follow_redis_rules() -> R {
    let (_d, db) = open()?;
    assert_eq!(db.hincr_by(b"h", b"n", 5)?, 5);
    assert_eq!(db.hincr_by(b"h", b"n", -7)?, -2);
    assert_eq!(db.hlen(b"h")?, 1);
    db.hset(
        b"h",
        &[
            (b"s", b"abc"),
            (b"max", b"9223372036854775807"),
            (b"f", b"1.5"),
        ],
    )?;
    assert_eq!(db.hincr_by(b"h", b"s", 1), Err(Error::NotInteger));
    assert_eq!(db.hincr_by(b"h", b"f", 1), Err(Error::NotInteger));
    assert_eq!(db.hincr_by(b"h", b"max", 1), Err(Error::Overflow));
    assert_eq!(db.hincr_by_float(b"h", b"f", 0.1)?, v("1.6"));
    assert_eq!(db.hincr_by_float(b"h", b"s", 1.0), Err(Error::NotFloat));
    assert_eq!(db.hincr_by_float(b"h", b"new", 10.5)?, v("10.5"));
    assert_eq!(
        db.hincr_by_float(b"h", b"new", f64::INFINITY),
        Err(Error::NanOrInfinity)
    );
    assert_eq!(db.hget(b"h", b"new")?, Some(v("10.5")));
    assert_eq!(db.hlen(b"h")?, 5);
    Ok(())
}

#[test]
fn hrandfield_counts_follow_redis_semantics() -> R {
    let (_d, db) = open()?;
    assert_eq!(db.hrandfield(b"h")?, None);
    assert!(db.hrandfield_count(b"h", 5)?.is_empty());
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..50)
        .map(|i| (v(&format!("f{i}")), v(&format!("v{i}"))))
        .collect();
    let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, x)| (&f[..], &x[..])).collect();
    db.hset(b"h", &refs)?;
    let one = db.hrandfield(b"h")?.unwrap();
    assert!(pairs.iter().any(|(f, _)| *f == one));
    let some = db.hrandfield_count(b"h", 10)?;
    assert_eq!(some.len(), 10);
    assert_eq!(
        some.iter().map(|(f, _)| f).collect::<HashSet<_>>().len(),
        10
    );
    for (f, x) in &some {
        assert_eq!(db.hget(b"h", f)?.as_ref(), Some(x));
    }
    assert_eq!(db.hrandfield_count(b"h", 100)?.len(), 50);
    assert_eq!(db.hrandfield_count(b"h", -200)?.len(), 200);
    assert!(db.hrandfield_count(b"h", 0)?.is_empty());
    Ok(())
}

#[test]
fn hscan_returns_small_hashes_whole_and_pages_big_ones() -> R {
    let (_d, db) = open()?;
    db.hset(b"small", &[(b"a", b"1"), (b"b", b"2"), (b"", b"3")])?;
    let page = db.hscan(b"small", 0, None, 1)?;
    assert_eq!(page.cursor, 0);
    assert_eq!(page.pairs.len(), 3);
    let page = db.hscan(b"small", 0, Some(b"a*"), 10)?;
    assert_eq!(page.pairs, vec![(v("a"), v("1"))]);

    let fields: Vec<Vec<u8>> = (0..1000).map(|i| v(&format!("field:{i}"))).collect();
    let refs: Vec<(&[u8], &[u8])> = fields.iter().map(|f| (&f[..], &b"x"[..])).collect();
    db.hset(b"big", &refs)?;
    let mut seen = BTreeSet::new();
    let mut cursor = 0;
    let mut pages = 0;
    loop {
        let page = db.hscan(b"big", cursor, None, 100)?;
        pages += 1;
        for (f, _) in page.pairs {
            assert!(seen.insert(f), "a field came back twice");
        }
        cursor = page.cursor;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
    assert!(pages >= 10);
    Ok(())
}

// ----- sets -----

#[test]
fn sadd_srem_keep_scard_exact() -> R {
    let (_d, db) = open()?;
    assert_eq!(db.sadd(b"s", &[b"a", b"b", b"a"])?, 2);
    assert_eq!(db.sadd(b"s", &[b"b", b"c"])?, 1);
    assert_eq!(db.scard(b"s")?, 3);
    assert_eq!(db.srem(b"s", &[b"a", b"a", b"zz"])?, 1);
    assert_eq!(db.scard(b"s")?, 2);
    assert_eq!(
        db.smismember(b"s", &[b"a", b"b", b"c"])?,
        vec![false, true, true]
    );
    assert_eq!(db.srem(b"s", &[b"b", b"c"])?, 2);
    assert!(!db.exists(b"s")?);
    assert_eq!(db.scard(b"s")?, 0);
    Ok(())
}

#[test]
fn small_integer_sets_list_in_numeric_order_like_an_intset() -> R {
    let (_d, db) = open()?;
    db.sadd(b"ints", &[b"10", b"-3", b"2", b"1"])?;
    assert_eq!(
        db.smembers(b"ints")?,
        vec![v("-3"), v("1"), v("2"), v("10")]
    );
    assert_eq!(db.object_encoding(b"ints")?, Some("intset"));
    db.sadd(b"ints", &[b"x"])?;
    assert_eq!(db.object_encoding(b"ints")?, Some("hashtable"));
    Ok(())
}

#[test]
fn set_commands_refuse_other_types() -> R {
    let (_d, db) = open()?;
    db.set(b"str", b"x", SetOptions::default())?;
    db.sadd(b"s", &[b"a"])?;
    assert_eq!(db.sadd(b"str", &[b"a"]), Err(Error::WrongType));
    assert_eq!(db.smembers(b"str"), Err(Error::WrongType));
    assert_eq!(db.sinter(&[b"missing", b"str"]), Err(Error::WrongType));
    assert_eq!(db.sunion(&[b"s", b"str"]), Err(Error::WrongType));
    assert_eq!(db.sdiff(&[b"missing", b"str"]), Err(Error::WrongType));
    assert_eq!(db.smove(b"s", b"str", b"a"), Err(Error::WrongType));
    // A missing source answers false before the destination's type is looked at.
    assert_eq!(db.smove(b"missing", b"str", b"a"), Ok(false));
    // STORE overwrites a destination of any type.
    assert_eq!(db.sunionstore(b"str", &[b"s"])?, 1);
    assert_eq!(db.key_type(b"str")?, Some(strata::KeyType::Set));
    Ok(())
}

#[test]
fn set_algebra_matches_a_model() -> R {
    let (_d, db) = open()?;
    let a: BTreeSet<Vec<u8>> = (0..300).map(|i| v(&format!("m{i}"))).collect();
    let b: BTreeSet<Vec<u8>> = (150..450).map(|i| v(&format!("m{i}"))).collect();
    let c: BTreeSet<Vec<u8>> = (0..450).step_by(3).map(|i| v(&format!("m{i}"))).collect();
    for (key, set) in [(&b"a"[..], &a), (b"b", &b), (b"c", &c)] {
        let refs: Vec<&[u8]> = set.iter().map(|m| &m[..]).collect();
        db.sadd(key, &refs)?;
    }
    let sorted = |x: Vec<Vec<u8>>| x.into_iter().collect::<BTreeSet<_>>();
    let inter: BTreeSet<_> = a
        .iter()
        .filter(|m| b.contains(*m) && c.contains(*m))
        .cloned()
        .collect();
    let union: BTreeSet<_> = a.iter().chain(&b).chain(&c).cloned().collect();
    let diff: BTreeSet<_> = a
        .iter()
        .filter(|m| !b.contains(*m) && !c.contains(*m))
        .cloned()
        .collect();
    assert_eq!(sorted(db.sinter(&[b"a", b"b", b"c"])?), inter);
    assert_eq!(sorted(db.sunion(&[b"a", b"b", b"c"])?), union);
    assert_eq!(sorted(db.sdiff(&[b"a", b"b", b"c"])?), diff);
    assert_eq!(db.sintercard(&[b"a", b"b", b"c"], 0)?, inter.len() as u64);
    assert_eq!(db.sintercard(&[b"a", b"b", b"c"], 7)?, 7);
    assert!(db.sinter(&[b"a", b"missing"])?.is_empty());
    assert_eq!(sorted(db.sunion(&[b"a", b"missing"])?), a);
    // STORE into one of the sources.
    assert_eq!(
        db.sinterstore(b"a", &[b"a", b"b", b"c"])?,
        inter.len() as u64
    );
    assert_eq!(sorted(db.smembers(b"a")?), inter);
    assert_eq!(db.scard(b"a")?, inter.len() as u64);
    assert_eq!(db.sdiffstore(b"d", &[b"b", b"b"])?, 0);
    assert!(!db.exists(b"d")?);
    Ok(())
}

#[test]
fn smove_moves_one_member_atomically() -> R {
    let (_d, db) = open()?;
    db.sadd(b"src", &[b"a", b"b"])?;
    db.sadd(b"dst", &[b"b"])?;
    assert!(db.smove(b"src", b"dst", b"a")?);
    assert!(!db.smove(b"src", b"dst", b"zz")?);
    assert!(db.smove(b"src", b"dst", b"b")?);
    assert!(!db.exists(b"src")?);
    assert_eq!(db.scard(b"dst")?, 2);
    assert!(db.smove(b"dst", b"dst", b"a")?);
    assert!(db.smove(b"dst", b"new", b"a")?);
    assert_eq!(db.smembers(b"new")?, vec![v("a")]);
    Ok(())
}

#[test]
fn spop_and_srandmember_pick_members_of_the_set() -> R {
    let (_d, db) = open()?;
    let members: Vec<Vec<u8>> = (0..5000).map(|i| v(&format!("member:{i:06}"))).collect();
    let refs: Vec<&[u8]> = members.iter().map(|m| &m[..]).collect();
    db.sadd(b"s", &refs)?;
    let all: HashSet<Vec<u8>> = members.iter().cloned().collect();
    // Few picks from a big set go through random seeks; they must still be distinct members.
    let picks = db.srandmember_count(b"s", 20)?;
    assert_eq!(picks.len(), 20);
    assert_eq!(picks.iter().collect::<HashSet<_>>().len(), 20);
    assert!(picks.iter().all(|m| all.contains(m)));
    let repeats = db.srandmember_count(b"s", -30)?;
    assert_eq!(repeats.len(), 30);
    assert!(repeats.iter().all(|m| all.contains(m)));
    // Many distinct picks.
    assert_eq!(
        db.srandmember_count(b"s", 3000)?
            .iter()
            .collect::<HashSet<_>>()
            .len(),
        3000
    );
    // Random picks spread over the set.
    let mut spread = HashSet::new();
    for _ in 0..200 {
        spread.insert(db.srandmember(b"s")?.unwrap());
    }
    assert!(
        spread.len() > 50,
        "only {} different members in 200 picks",
        spread.len()
    );

    let popped = db.spop_count(b"s", 100)?;
    assert_eq!(popped.iter().collect::<HashSet<_>>().len(), 100);
    assert_eq!(db.scard(b"s")?, 4900);
    for m in &popped {
        assert!(!db.sismember(b"s", m)?);
    }
    let one = db.spop(b"s")?.unwrap();
    assert!(!db.sismember(b"s", &one)?);
    assert_eq!(db.scard(b"s")?, 4899);
    let rest = db.spop_count(b"s", 10_000)?;
    assert_eq!(rest.len(), 4899);
    assert!(!db.exists(b"s")?);
    assert_eq!(db.spop(b"s")?, None);
    Ok(())
}

#[test]
fn sscan_visits_every_member_once() -> R {
    let (_d, db) = open()?;
    let members: Vec<Vec<u8>> = (0..2000).map(|i| v(&format!("m{i}"))).collect();
    let refs: Vec<&[u8]> = members.iter().map(|m| &m[..]).collect();
    db.sadd(b"s", &refs)?;
    let mut seen = HashSet::new();
    let mut cursor = 0;
    loop {
        let page = db.sscan(b"s", cursor, Some(b"m1*"), 77)?;
        for m in page.members {
            assert!(m.starts_with(b"m1"));
            assert!(seen.insert(m));
        }
        cursor = page.cursor;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(
        seen.len(),
        members.iter().filter(|m| m.starts_with(b"m1")).count()
    );
    // An intset comes back whole, in numeric order, whatever the count.
    db.sadd(b"ints", &[b"3", b"20", b"1"])?;
    let page = db.sscan(b"ints", 0, None, 1)?;
    assert_eq!(
        (page.cursor, page.members),
        (0, vec![v("1"), v("3"), v("20")])
    );
    Ok(())
}

#[test]
fn object_encoding_follows_redis_size_rules() -> R {
    let (_d, db) = open()?;
    db.hset(b"h", &[(b"f", &[b'x'; 64][..])])?;
    assert_eq!(db.object_encoding(b"h")?, Some("listpack"));
    db.hset(b"h", &[(b"g", &[b'x'; 65][..])])?;
    assert_eq!(db.object_encoding(b"h")?, Some("hashtable"));
    let fields: Vec<Vec<u8>> = (0..513).map(|i| v(&format!("{i}"))).collect();
    let pairs: Vec<(&[u8], &[u8])> = fields[..512].iter().map(|f| (&f[..], &b"v"[..])).collect();
    db.hset(b"wide", &pairs)?;
    assert_eq!(db.object_encoding(b"wide")?, Some("listpack"));
    db.hset(b"wide", &[(&fields[512][..], b"v")])?;
    assert_eq!(db.object_encoding(b"wide")?, Some("hashtable"));
    let members: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
    db.sadd(b"s", &members[..512])?;
    assert_eq!(db.object_encoding(b"s")?, Some("intset"));
    db.sadd(b"s", &members[512..])?;
    assert_eq!(db.object_encoding(b"s")?, Some("hashtable"));
    Ok(())
}

#[test]
fn collections_survive_a_restart() -> R {
    let dir = tempfile::tempdir()?;
    {
        let db = Db::open(dir.path())?;
        db.hset(b"h", &[(b"a", b"1")])?;
        db.sadd(b"s", &[b"x", b"y"])?;
        db.flush()?;
        db.shutdown();
    }
    let db = Db::open(dir.path())?;
    assert_eq!(db.hget(b"h", b"a")?, Some(v("1")));
    assert_eq!(db.scard(b"s")?, 2);
    Ok(())
}

// ----- big keys -----

#[test]
fn big_hash_and_set_delete_fast_and_compaction_reclaims_their_space() -> R {
    let (_d, db) = open()?;
    const N: usize = 200_000;
    let value = [b'v'; 32];
    for chunk in (0..N).collect::<Vec<_>>().chunks(10_000) {
        let fields: Vec<Vec<u8>> = chunk.iter().map(|i| v(&format!("field:{i:08}"))).collect();
        let pairs: Vec<(&[u8], &[u8])> = fields.iter().map(|f| (&f[..], &value[..])).collect();
        db.hset(b"bighash", &pairs)?;
        let members: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
        db.sadd(b"bigset", &members)?;
    }
    assert_eq!(db.hlen(b"bighash")?, N as u64);
    assert_eq!(db.scard(b"bigset")?, N as u64);
    db.flush()?;
    db.compact();
    let full = db.engine_property("rocksdb.total-sst-files-size");

    let started = Instant::now();
    assert_eq!(db.del(&[b"bighash", b"bigset"])?, 2);
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "DEL took {:?}",
        started.elapsed()
    );

    // Re-created keys start empty and count exactly.
    db.hset(b"bighash", &[(b"field:00000001", b"new")])?;
    db.sadd(b"bigset", &[b"a", b"b"])?;
    assert_eq!(db.hlen(b"bighash")?, 1);
    assert_eq!(db.scard(b"bigset")?, 2);
    assert_eq!(
        db.hgetall(b"bighash")?,
        vec![(v("field:00000001"), v("new"))]
    );

    db.flush()?;
    db.compact();
    let after = db.engine_property("rocksdb.total-sst-files-size");
    assert!(
        after * 10 < full,
        "SST bytes {full} before, {after} after compaction"
    );
    Ok(())
}

#[test]
fn compaction_drops_the_fields_of_deleted_small_hashes_and_keeps_their_neighbours_and_new_versions(
) -> R {
    let (_d, db) = open()?;
    drop_deleted_small_hashes_in_compaction(&db, false)
}

/// The same with the hot-record cache holding every hash's metadata (the server's default
/// budget caches what it reads), with writes going to RocksDB directly and through the
/// write-back tier: what the cache holds never keeps an orphan nor loses a live field.
#[test]
fn compaction_drops_deleted_small_hashes_whose_metadata_was_cached() -> R {
    for write_back in [None, Some(1 << 20)] {
        let dir = tempfile::tempdir()?;
        let db = Db::open_with(
            dir.path(),
            strata::Options {
                hot_cache_size: 64 << 20,
                write_back,
                ..strata::Options::default()
            },
        )?;
        drop_deleted_small_hashes_in_compaction(&db, true)?;
    }
    Ok(())
}

/// 3,000 small hashes; every other one deleted and every fourth re-created; then a compaction
/// must leave exactly the live fields and no orphan. With `read_first`, every hash is read
/// after each round of writes, so that its metadata is cached.
fn drop_deleted_small_hashes_in_compaction(db: &Db, read_first: bool) -> R {
    const N: usize = 3000;
    let fields = |i: usize, tag: &str| -> Vec<(Vec<u8>, Vec<u8>)> {
        ["name", "description", "price", "quantity"]
            .iter()
            .map(|f| (v(f), v(&format!("{tag}{i}"))))
            .collect()
    };
    let put = |i: usize, tag: &str| -> strata::Result<()> {
        let fs = fields(i, tag);
        let pairs: Vec<(&[u8], &[u8])> = fs.iter().map(|(f, x)| (&f[..], &x[..])).collect();
        db.hset(format!("product:{i:06}").as_bytes(), &pairs)?;
        Ok(())
    };
    let read_all = || -> strata::Result<()> {
        if read_first {
            for i in 0..N {
                db.hlen(format!("product:{i:06}").as_bytes())?;
            }
        }
        Ok(())
    };
    for i in 0..N {
        put(i, "old")?;
    }
    db.flush()?;
    read_all()?;
    // Every other hash deleted; every fourth re-created, so its old and new records lie side
    // by side in key order (the new version right after the old one).
    for i in (0..N).step_by(2) {
        db.del(&[format!("product:{i:06}").as_bytes()])?;
        if i % 4 == 0 {
            put(i, "new")?;
        }
    }
    db.flush()?;
    read_all()?;
    db.compact();
    for i in 0..N {
        let key = format!("product:{i:06}");
        let mut got = db.hgetall(key.as_bytes())?;
        got.sort();
        let mut want = match (i % 2, i % 4) {
            (1, _) => fields(i, "old"),
            (_, 0) => fields(i, "new"),
            _ => Vec::new(),
        };
        want.sort();
        assert_eq!(got, want, "{key}");
    }
    let report = db.check(false, |_| {})?;
    assert_eq!(report.orphan_records, 0, "compaction left orphans");
    assert_eq!(report.keys, (N / 2 + N / 4) as u64);
    Ok(())
}
