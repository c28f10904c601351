//! Behaviour of the embeddable library through its public API: strings, keys, expiry, databases,
//! restart. Each test opens its own temporary directory.

use std::thread::sleep;
use std::time::Duration;

use strata::{Db, Error, ExpireCondition, Expiry, GetExpiry, SetCondition, SetOptions, Ttl};

type R = Result<(), Box<dyn std::error::Error>>;

fn open() -> Result<(tempfile::TempDir, Db), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path())?;
    Ok((dir, db))
}

#[test]
fn values_are_binary_safe() -> R {
    let (_d, db) = open()?;
    let key = b"k\0\r\n\xff";
    let value = b"\0\x01\x02\r\n";
    db.set(key, value, SetOptions::default())?;
    assert_eq!(db.get(key)?, Some(value.to_vec()));
    assert_eq!(db.get(b"k")?, None);
    Ok(())
}

#[test]
fn set_conditions_and_get_option() -> R {
    let (_d, db) = open()?;
    let xx = SetOptions {
        condition: SetCondition::IfPresent,
        ..Default::default()
    };
    assert!(!db.set(b"a", b"1", xx)?.written);
    assert_eq!(db.get(b"a")?, None);
    db.set(b"a", b"1", SetOptions::default())?;
    let get = SetOptions {
        get: true,
        ..Default::default()
    };
    let out = db.set(b"a", b"2", get)?;
    assert_eq!(out.old, Some(b"1".to_vec()));
    assert_eq!(db.get(b"a")?, Some(b"2".to_vec()));
    Ok(())
}

#[test]
fn keepttl_keeps_and_plain_set_clears_the_ttl() -> R {
    let (_d, db) = open()?;
    let at = strata::now_ms() + 100_000;
    db.set(
        b"k",
        b"v",
        SetOptions {
            expiry: Expiry::At(at),
            ..Default::default()
        },
    )?;
    db.set(
        b"k",
        b"w",
        SetOptions {
            expiry: Expiry::Keep,
            ..Default::default()
        },
    )?;
    assert_eq!(db.ttl(b"k")?, Ttl::ExpiresAt(at));
    db.set(b"k", b"x", SetOptions::default())?;
    assert_eq!(db.ttl(b"k")?, Ttl::Persistent);
    assert_eq!(db.ttl(b"nope")?, Ttl::Missing);
    Ok(())
}

#[test]
fn counters_refuse_non_integers_and_overflow() -> R {
    let (_d, db) = open()?;
    db.set(b"s", b"abc", SetOptions::default())?;
    assert_eq!(db.incr_by(b"s", 1), Err(Error::NotInteger));
    db.set(b"n", b"9223372036854775806", SetOptions::default())?;
    assert_eq!(db.incr_by(b"n", 1)?, i64::MAX);
    assert_eq!(db.incr_by(b"n", 1), Err(Error::Overflow));
    assert_eq!(db.incr_by_float(b"f", 10.5)?, b"10.5".to_vec());
    assert_eq!(db.incr_by_float(b"f", 0.1)?, b"10.6".to_vec());
    Ok(())
}

#[test]
fn ranges_follow_redis_index_rules() -> R {
    let (_d, db) = open()?;
    db.set(b"s", b"This is a string", SetOptions::default())?;
    assert_eq!(db.getrange(b"s", 0, 3)?, b"This".to_vec());
    assert_eq!(db.getrange(b"s", -3, -1)?, b"ing".to_vec());
    assert_eq!(db.getrange(b"s", 0, -1)?, b"This is a string".to_vec());
    assert_eq!(db.getrange(b"s", 10, 100)?, b"string".to_vec());
    assert_eq!(db.getrange(b"s", -1, -5)?, Vec::<u8>::new());
    assert_eq!(db.setrange(b"p", 5, b"x")?, 6);
    assert_eq!(db.get(b"p")?, Some(b"\0\0\0\0\0x".to_vec()));
    assert_eq!(db.append(b"p", b"yz")?, 8);
    Ok(())
}

#[test]
fn expired_keys_read_as_missing_and_leave_the_keyspace() -> R {
    let (_d, db) = open()?;
    for i in 0..50 {
        db.set(
            format!("k{i}").as_bytes(),
            b"v",
            SetOptions {
                expiry: Expiry::At(strata::now_ms() + 50),
                ..Default::default()
            },
        )?;
    }
    db.set(b"stays", b"v", SetOptions::default())?;
    assert_eq!(db.dbsize()?, 51);
    sleep(Duration::from_millis(400));
    assert_eq!(db.get(b"k1")?, None);
    assert_eq!(db.dbsize()?, 1);
    assert_eq!(db.keys(b"*")?, vec![b"stays".to_vec()]);
    // The active cycle deleted them (counted), without anyone touching the keys.
    assert!(
        db.stats()
            .expired_keys
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 49
    );
    Ok(())
}

#[test]
fn expire_conditions_follow_redis7() -> R {
    let (_d, db) = open()?;
    db.set(b"k", b"v", SetOptions::default())?;
    let later = strata::now_ms() as i64 + 100_000;
    assert!(!db.expire_at(b"k", later, &[ExpireCondition::IfSome])?);
    assert!(!db.expire_at(b"k", later, &[ExpireCondition::IfGreater])?);
    assert!(db.expire_at(b"k", later, &[ExpireCondition::IfLess])?);
    assert!(!db.expire_at(b"k", later + 1, &[ExpireCondition::IfNone])?);
    assert!(db.expire_at(b"k", later + 1, &[ExpireCondition::IfGreater])?);
    assert!(db.persist(b"k")?);
    assert!(!db.persist(b"k")?);
    // A deadline in the past deletes the key.
    assert!(db.expire_at(b"k", 1, &[])?);
    assert!(!db.exists(b"k")?);
    Ok(())
}

#[test]
fn getex_changes_and_removes_the_ttl() -> R {
    let (_d, db) = open()?;
    db.set(b"k", b"v", SetOptions::default())?;
    let at = strata::now_ms() + 50_000;
    assert_eq!(db.getex(b"k", GetExpiry::At(at))?, Some(b"v".to_vec()));
    assert_eq!(db.ttl(b"k")?, Ttl::ExpiresAt(at));
    db.getex(b"k", GetExpiry::Persist)?;
    assert_eq!(db.ttl(b"k")?, Ttl::Persistent);
    Ok(())
}

#[test]
fn databases_are_separate_and_swap() -> R {
    let (_d, db) = open()?;
    let db1 = db.select(1)?;
    db.set(b"k", b"zero", SetOptions::default())?;
    db1.set(b"k", b"one", SetOptions::default())?;
    db.swapdb(0, 1)?;
    assert_eq!(db.get(b"k")?, Some(b"one".to_vec()));
    assert_eq!(db1.get(b"k")?, Some(b"zero".to_vec()));
    db.flushdb()?;
    assert_eq!(db.get(b"k")?, None);
    assert_eq!(db1.get(b"k")?, Some(b"zero".to_vec()));
    assert_eq!(db.select(16).err(), Some(Error::DbIndexOutOfRange));
    Ok(())
}

#[test]
fn rename_copy_move_keep_ttl() -> R {
    let (_d, db) = open()?;
    let at = strata::now_ms() + 60_000;
    db.set(
        b"a",
        b"v",
        SetOptions {
            expiry: Expiry::At(at),
            ..Default::default()
        },
    )?;
    assert!(db.rename(b"a", b"b", false)?);
    assert_eq!(db.ttl(b"b")?, Ttl::ExpiresAt(at));
    assert_eq!(db.rename(b"a", b"c", false), Err(Error::NoSuchKey));
    assert!(db.copy(b"b", 0, b"c", false)?);
    assert!(!db.copy(b"b", 0, b"c", false)?);
    assert!(db.move_to(b"c", 3)?);
    assert_eq!(db.select(3)?.get(b"c")?, Some(b"v".to_vec()));
    assert!(!db.exists(b"c")?);
    Ok(())
}

#[test]
fn scan_visits_every_key_exactly_once() -> R {
    let (_d, db) = open()?;
    for i in 0..1000 {
        db.set(format!("key:{i}").as_bytes(), b"v", SetOptions::default())?;
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = 0;
    loop {
        let page = db.scan(cursor, Some(b"key:*"), 37, None)?;
        for k in page.keys {
            assert!(seen.insert(k), "key returned twice");
        }
        cursor = page.cursor;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
    assert!(db.random_key()?.is_some());
    Ok(())
}

#[test]
fn data_and_ttls_survive_reopen() -> R {
    let dir = tempfile::tempdir()?;
    let at = strata::now_ms() + 600_000;
    {
        let db = Db::open(dir.path())?;
        db.set(
            b"k",
            b"v",
            SetOptions {
                expiry: Expiry::At(at),
                ..Default::default()
            },
        )?;
        db.select(5)?.set(b"other", b"db5", SetOptions::default())?;
        db.swapdb(5, 6)?;
        db.shutdown();
    }
    sleep(Duration::from_millis(300));
    let db = Db::open(dir.path())?;
    assert_eq!(db.get(b"k")?, Some(b"v".to_vec()));
    assert_eq!(db.ttl(b"k")?, Ttl::ExpiresAt(at));
    assert_eq!(db.select(6)?.get(b"other")?, Some(b"db5".to_vec()));
    Ok(())
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() -> R {
    let (dir, _db) = open()?;
    match Db::open(dir.path()) {
        Err(Error::Locked(_)) | Err(Error::Storage(_)) => Ok(()),
        Err(e) => Err(format!("unexpected error {e}").into()),
        Ok(_) => Err("second open succeeded".into()),
    }
}

#[test]
fn expired_data_space_is_reclaimed_by_compaction() -> R {
    let dir = tempfile::tempdir()?;
    let db = Db::open_with(
        dir.path(),
        strata::Options {
            active_expire: false,
            ..Default::default()
        },
    )?;
    // Incompressible values, so the figures measure data rather than compression.
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..5000 {
        let value: Vec<u8> = (0..1000)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 56) as u8
            })
            .collect();
        db.set(
            format!("k{i}").as_bytes(),
            &value,
            SetOptions {
                expiry: Expiry::At(strata::now_ms() + 300),
                ..Default::default()
            },
        )?;
    }
    db.flush()?;
    let before = db.engine_property("rocksdb.total-sst-files-size");
    assert!(
        before > 1_000_000,
        "expected the values on disk, got {before} bytes"
    );
    sleep(Duration::from_millis(500));
    // No active expiry here: only the compaction filter can drop them.
    db.compact();
    let after = db.engine_property("rocksdb.total-sst-files-size");
    assert!(after < before / 10, "before {before} after {after}");
    assert_eq!(db.dbsize()?, 0);
    Ok(())
}

#[test]
fn hot_cache_never_serves_a_replaced_or_deleted_value() -> R {
    let dir = tempfile::tempdir()?;
    let db = Db::open_with(
        dir.path(),
        strata::Options {
            hot_cache_size: 1 << 20,
            ..Default::default()
        },
    )?;
    let plain = SetOptions::default();
    db.set(b"k", b"v1", plain)?;
    assert_eq!(db.get(b"k")?, Some(b"v1".to_vec()));
    db.append(b"k", b"+")?;
    assert_eq!(db.get(b"k")?, Some(b"v1+".to_vec()));
    db.setrange(b"k", 0, b"V")?;
    assert_eq!(db.get(b"k")?, Some(b"V1+".to_vec()));
    assert!(db.rename(b"k", b"k2", false)?);
    assert_eq!(db.get(b"k")?, None);
    assert_eq!(db.get(b"k2")?, Some(b"V1+".to_vec()));
    db.incr_by(b"n", 5)?;
    assert_eq!(db.get(b"n")?, Some(b"5".to_vec()));
    assert_eq!(
        db.hset(b"n", &[(&b"f"[..], &b"x"[..])]),
        Err(Error::WrongType)
    );
    db.del(&[b"n"])?;
    assert_eq!(db.get(b"n")?, None);
    db.hset(b"n", &[(&b"f"[..], &b"x"[..])])?;
    assert_eq!(db.get(b"n"), Err(Error::WrongType));
    db.mset(&[(&b"a"[..], &b"1"[..]), (&b"b"[..], &b"2"[..])])?;
    assert_eq!(db.get(b"b")?, Some(b"2".to_vec()));
    assert!(db.expire_at(b"b", 1, &[])?);
    assert_eq!(db.get(b"b")?, None);
    db.select(1)?.set(b"a", b"other", plain)?;
    db.swapdb(0, 1)?;
    assert_eq!(db.get(b"a")?, Some(b"other".to_vec()));
    db.flushdb()?;
    assert_eq!(db.get(b"a")?, None);
    assert_eq!(db.select(1)?.get(b"a")?, Some(b"1".to_vec()));
    db.select(1)?.flushall()?;
    assert_eq!(db.select(1)?.get(b"a")?, None);
    // A short TTL expires out of the cache too.
    db.set(
        b"t",
        b"v",
        SetOptions {
            expiry: Expiry::At(strata::now_ms() + 50),
            ..Default::default()
        },
    )?;
    assert_eq!(db.get(b"t")?, Some(b"v".to_vec()));
    sleep(Duration::from_millis(120));
    assert_eq!(db.get(b"t")?, None);
    Ok(())
}

fn cached_db(dir: &std::path::Path) -> strata::Result<Db> {
    Db::open_with(
        dir,
        strata::Options {
            hot_cache_size: 1 << 20,
            ..Default::default()
        },
    )
}

#[test]
fn hot_cache_follows_collection_members_written_and_removed() -> R {
    let dir = tempfile::tempdir()?;
    let db = cached_db(dir.path())?;
    assert_eq!(db.sadd(b"s", &[b"m", b"n"])?, 2);
    assert_eq!(db.sadd(b"s", &[b"m"])?, 0, "member read from the cache");
    assert_eq!(db.srem(b"s", &[b"m"])?, 1);
    assert_eq!(db.sadd(b"s", &[b"m"])?, 1, "a removed member is not served");
    db.hset(b"h", &[(&b"f"[..], &b"1"[..])])?;
    assert_eq!(db.hincr_by(b"h", b"f", 2)?, 3);
    assert_eq!(db.hget(b"h", b"f")?, Some(b"3".to_vec()));
    db.del(&[b"h"])?;
    assert_eq!(db.hget(b"h", b"f")?, None);
    assert_eq!(db.hincr_by(b"h", b"f", 2)?, 2, "a deleted hash starts over");
    Ok(())
}

#[test]
fn hot_cache_replays_a_transaction_that_adds_then_removes() -> R {
    let dir = tempfile::tempdir()?;
    let db = cached_db(dir.path())?;
    db.sadd(b"keep", &[b"x"])?;
    // One batch that writes a member and then deletes it: the cache must end without it.
    let (added, committed) = db.atomically(|| -> strata::Result<u64> {
        let n = db.sadd(b"s", &[b"m", b"other"])?;
        db.srem(b"s", &[b"m"])?;
        Ok(n)
    });
    committed?;
    assert_eq!(added?, 2);
    assert!(!db.sismember(b"s", b"m")?);
    assert_eq!(
        db.sadd(b"s", &[b"m"])?,
        1,
        "the member the transaction removed is new again"
    );
    Ok(())
}

/// Dropping the last handle while RocksDB compacts `data` must close the directory. The
/// orphan-record compaction filter looks the database up through a weak handle; if it held the
/// last strong one when the owner let go, the compaction thread closed the database itself and
/// waited forever for its own compaction to end (the `strata export` hang at exit).
#[test]
fn dropping_the_database_during_a_compaction_closes_it() -> R {
    let dir = tempfile::tempdir()?;
    let opts = || strata::Options {
        write_buffer_size: 256 << 10,
        ..strata::Options::default()
    };
    for round in 0..4 {
        let db = Db::open_with(dir.path(), opts())?;
        // Enough L0 files of small records that a compaction starts and runs the filter over
        // each record for a while.
        for file in 0..6 {
            let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..20_000)
                .map(|i| (format!("f{round}-{file}-{i}").into_bytes(), b"v".to_vec()))
                .collect();
            let refs: Vec<(&[u8], &[u8])> = fields
                .iter()
                .map(|(f, v)| (f.as_slice(), v.as_slice()))
                .collect();
            db.hset(format!("h{file}").as_bytes(), &refs)?;
            db.flush()?;
        }
        drop(db);
        // A database left open by a wedged compaction thread keeps its lock: reopening fails.
        let again = Db::open_with(dir.path(), opts());
        assert!(again.is_ok(), "round {round}: {:?}", again.err());
    }
    Ok(())
}
