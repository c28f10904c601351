//! `Db::atomically`: the writes of a scope reach RocksDB as one write batch when it ends (what
//! makes MULTI/EXEC and scripts all-or-nothing across a crash), the scope reads its own writes
//! through every read path, other threads see none of them before the commit, and a scope that
//! fails to commit or panics leaves nothing behind. Each test opens its own temporary directory.

use std::sync::Arc;

use strata::{Db, Error, Options, SetOptions};

type R = Result<(), Box<dyn std::error::Error>>;

fn open() -> Result<(tempfile::TempDir, Db), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path())?;
    Ok((dir, db))
}

#[test]
fn atomic_scope_reaches_rocksdb_as_one_write_when_it_ends() -> R {
    let (_d, db) = open()?;
    let before = db.write_count();
    let (inner, committed) = db.atomically(|| -> strata::Result<u64> {
        db.set(b"s", b"1", SetOptions::default())?;
        db.hset(b"h", &[(b"f", b"v")])?;
        db.rpush(b"l", &[b"a", b"b"])?;
        db.sadd(b"S", &[b"m"])?;
        db.del(&[b"s"])?;
        Ok(db.write_count())
    });
    committed?;
    assert_eq!(
        inner?, before,
        "nothing was written while the scope was open"
    );
    assert_eq!(
        db.write_count(),
        before + 1,
        "one write batch for the whole scope"
    );
    Ok(())
}

#[test]
fn atomic_scope_reads_its_own_writes_through_every_read_path() -> R {
    let (_d, db) = open()?;
    db.set(b"old", b"x", SetOptions::default())?;
    db.rpush(b"list", &[b"1", b"2", b"3", b"4"])?;
    db.hset(b"hash", &[(b"a", b"1"), (b"b", b"2")])?;
    let (checked, committed) = db.atomically(|| -> strata::Result<()> {
        assert_eq!(db.incr_by(b"n", 5)?, 5);
        assert_eq!(db.incr_by(b"n", 1)?, 6);
        db.ltrim(b"list", 1, 2)?;
        db.rpush(b"list", &[b"5"])?;
        assert_eq!(
            db.lrange(b"list", 0, -1)?,
            vec![b"2".to_vec(), b"3".to_vec(), b"5".to_vec()]
        );
        db.hdel(b"hash", &[b"a"])?;
        db.hset(b"hash", &[(b"c", b"3")])?;
        let mut fields = db.hgetall(b"hash")?;
        fields.sort();
        assert_eq!(
            fields,
            vec![
                (b"b".to_vec(), b"2".to_vec()),
                (b"c".to_vec(), b"3".to_vec())
            ]
        );
        db.sadd(b"set", &[b"x", b"y"])?;
        db.srem(b"set", &[b"x"])?;
        assert_eq!(db.smembers(b"set")?, vec![b"y".to_vec()]);
        assert!(db.rename(b"old", b"new", false)?);
        assert_eq!(db.get(b"new")?.as_deref(), Some(&b"x"[..]));
        assert_eq!(db.mget(&[b"old", b"new"])?, vec![None, Some(b"x".to_vec())]);
        let mut keys = db.keys(b"*")?;
        keys.sort();
        let want: Vec<Vec<u8>> = ["hash", "list", "n", "new", "set"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        assert_eq!(keys, want);
        assert_eq!(db.dbsize()?, 5);
        // A whole-database deletion, then writes after it, in the same scope.
        db.flushdb()?;
        assert_eq!(db.dbsize()?, 0);
        db.set(b"after", b"flush", SetOptions::default())?;
        assert_eq!(db.keys(b"*")?, vec![b"after".to_vec()]);
        Ok(())
    });
    committed?;
    checked?;
    assert_eq!(db.keys(b"*")?, vec![b"after".to_vec()]);
    assert_eq!(db.get(b"after")?.as_deref(), Some(&b"flush"[..]));
    assert_eq!(db.lrange(b"list", 0, -1)?, Vec::<Vec<u8>>::new());
    Ok(())
}

#[test]
fn other_threads_see_none_of_an_atomic_scope_until_it_commits() -> R {
    let (_d, db) = open()?;
    db.set(b"a", b"0", SetOptions::default())?;
    let db = Arc::new(db);
    let (seen, committed) =
        db.atomically(|| -> Result<_, Box<dyn std::error::Error + Send + Sync>> {
            db.set(b"a", b"1", SetOptions::default())?;
            db.set(b"b", b"1", SetOptions::default())?;
            let other = Arc::clone(&db);
            let seen =
                std::thread::spawn(move || (other.get(b"a"), other.get(b"b"), other.keys(b"*")))
                    .join()
                    .map_err(|_| "reader thread panicked")?;
            Ok(seen)
        });
    committed?;
    let (a, b, keys) = seen.map_err(|e| e.to_string())?;
    assert_eq!(
        (a?, b?, keys?),
        (Some(b"0".to_vec()), None, vec![b"a".to_vec()])
    );
    assert_eq!(db.get(b"b")?.as_deref(), Some(&b"1"[..]));
    Ok(())
}

#[test]
fn nested_atomic_scopes_commit_once_with_the_outermost() -> R {
    let (_d, db) = open()?;
    let before = db.write_count();
    let (_, committed) = db.atomically(|| {
        let (_, inner) = db.atomically(|| db.set(b"inner", b"1", SetOptions::default()));
        assert_eq!(inner, Ok(()));
        assert_eq!(db.write_count(), before, "the inner scope does not commit");
        db.select(1)
            .and_then(|one| one.set(b"other-db", b"1", SetOptions::default()))
    });
    committed?;
    assert_eq!(db.write_count(), before + 1);
    assert_eq!(db.select(1)?.get(b"other-db")?.as_deref(), Some(&b"1"[..]));
    Ok(())
}

#[test]
fn failed_commit_writes_nothing_and_leaves_no_stale_state() -> R {
    let dir = tempfile::tempdir()?;
    {
        let db = Db::open(dir.path())?;
        db.set(b"k", b"old", SetOptions::default())?;
        db.select(1)?.set(b"k", b"db1", SetOptions::default())?;
    }
    // Every write is refused for lack of disk space, so the commit fails.
    let db = Db::open_with(
        dir.path(),
        Options {
            min_free_disk: u64::MAX / 4,
            hot_cache_size: 1 << 20,
            ..Options::default()
        },
    )?;
    let (inside, committed) = db.atomically(|| -> strata::Result<Option<Vec<u8>>> {
        db.set(b"k", b"new", SetOptions::default())?;
        db.swapdb(0, 1)?;
        db.select(1)?.get(b"k")
    });
    assert_eq!(
        inside?.as_deref(),
        Some(&b"new"[..]),
        "the scope saw its writes"
    );
    assert_eq!(committed, Err(Error::DiskFull));
    // Neither the value (nor a cached copy of it) nor the swapped database map survived.
    assert_eq!(db.get(b"k")?.as_deref(), Some(&b"old"[..]));
    assert_eq!(db.select(1)?.get(b"k")?.as_deref(), Some(&b"db1"[..]));
    Ok(())
}

#[test]
fn panicking_atomic_scope_drops_its_writes() -> R {
    let (_d, db) = open()?;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        db.atomically(|| {
            let _ = db.set(b"k", b"v", SetOptions::default());
            panic!("script failed");
        })
    }));
    assert!(caught.is_err());
    assert_eq!(db.get(b"k")?, None);
    // The thread's next scope starts empty and commits normally.
    let (_, committed) = db.atomically(|| db.set(b"k2", b"v", SetOptions::default()));
    committed?;
    assert_eq!(db.keys(b"*")?, vec![b"k2".to_vec()]);
    Ok(())
}
