//! SORT through the library's public API (`Db::sort`, `Db::sort_store`): numeric and ALPHA order,
//! LIMIT, BY (string keys, hash fields, `nosort`), GET, STORE, and the errors. The byte-exact
//! comparison with Redis is in tests/python/test_sort.py.

use strata::{Db, Error, SetOptions, SortOptions, ZAddOptions};

type R = Result<(), Box<dyn std::error::Error>>;

fn open() -> Result<(tempfile::TempDir, Db), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path())?;
    Ok((dir, db))
}

fn strs(v: &[Option<Vec<u8>>]) -> Vec<String> {
    v.iter()
        .map(|x| match x {
            Some(b) => String::from_utf8_lossy(b).into_owned(),
            None => "<nil>".into(),
        })
        .collect()
}

fn sorted(db: &Db, key: &str, opts: &SortOptions) -> strata::Result<Vec<String>> {
    Ok(strs(&db.sort(key.as_bytes(), opts)?))
}

fn set(db: &Db, k: &str, v: &str) -> strata::Result<()> {
    db.set(k.as_bytes(), v.as_bytes(), SetOptions::default())
        .map(|_| ())
}

#[test]
fn numeric_alpha_desc_and_limit() -> R {
    let (_d, db) = open()?;
    db.rpush(b"l", &[b"10", b"2", b"-1", b"1.5", b"1", b"01"])?;
    let o = SortOptions::default();
    assert_eq!(sorted(&db, "l", &o)?, ["-1", "01", "1", "1.5", "2", "10"]);
    let desc = SortOptions {
        desc: true,
        ..Default::default()
    };
    assert_eq!(
        sorted(&db, "l", &desc)?,
        ["10", "2", "1.5", "1", "01", "-1"]
    );
    let alpha = SortOptions {
        alpha: true,
        ..Default::default()
    };
    assert_eq!(
        sorted(&db, "l", &alpha)?,
        ["-1", "01", "1", "1.5", "10", "2"]
    );
    let limited = SortOptions {
        limit: Some((1, 2)),
        ..Default::default()
    };
    assert_eq!(sorted(&db, "l", &limited)?, ["01", "1"]);
    let past_end = SortOptions {
        limit: Some((6, 1)),
        ..Default::default()
    };
    assert!(sorted(&db, "l", &past_end)?.is_empty());
    let negative = SortOptions {
        limit: Some((-3, -1)),
        ..Default::default()
    };
    assert_eq!(sorted(&db, "l", &negative)?.len(), 6);
    assert!(sorted(&db, "missing", &o)?.is_empty());
    Ok(())
}

#[test]
fn sets_and_sorted_sets() -> R {
    let (_d, db) = open()?;
    db.sadd(b"s", &[b"3", b"20", b"1"])?;
    assert_eq!(sorted(&db, "s", &SortOptions::default())?, ["1", "3", "20"]);
    db.zadd(
        b"z",
        &[(1.0, &b"c"[..]), (2.0, &b"a"[..]), (3.0, &b"b"[..])],
        ZAddOptions::default(),
    )?;
    let alpha = SortOptions {
        alpha: true,
        ..Default::default()
    };
    assert_eq!(sorted(&db, "z", &alpha)?, ["a", "b", "c"]);
    // BY nosort keeps the score order, reversed by DESC, cut by LIMIT.
    let nosort = SortOptions {
        by: Some(b"nosort".to_vec()),
        desc: true,
        limit: Some((0, 2)),
        ..Default::default()
    };
    assert_eq!(sorted(&db, "z", &nosort)?, ["b", "a"]);
    Ok(())
}

#[test]
fn by_and_get_patterns() -> R {
    let (_d, db) = open()?;
    db.rpush(b"ids", &[b"1", b"2", b"3"])?;
    set(&db, "w_1", "30")?;
    set(&db, "w_2", "10")?;
    // w_3 is missing: it weighs 0.
    db.hset(b"u_1", &[(b"name", b"ann")])?;
    db.hset(b"u_2", &[(b"name", b"bob")])?;
    let by = SortOptions {
        by: Some(b"w_*".to_vec()),
        get: vec![b"#".to_vec(), b"u_*->name".to_vec(), b"nostar".to_vec()],
        ..Default::default()
    };
    assert_eq!(
        sorted(&db, "ids", &by)?,
        ["3", "<nil>", "<nil>", "2", "bob", "<nil>", "1", "ann", "<nil>"]
    );
    let by_field = SortOptions {
        by: Some(b"u_*->name".to_vec()),
        alpha: true,
        desc: true,
        ..Default::default()
    };
    assert_eq!(sorted(&db, "ids", &by_field)?, ["2", "1", "3"]);
    // A key of the wrong type reads as missing.
    db.del(&[b"w_2"])?;
    db.rpush(b"w_2", &[b"x"])?;
    assert_eq!(
        sorted(&db, "ids", &SortOptions { get: vec![], ..by })?,
        ["2", "3", "1"]
    );
    Ok(())
}

#[test]
fn store_writes_a_list_and_empty_deletes() -> R {
    let (_d, db) = open()?;
    db.rpush(b"l", &[b"b", b"c", b"a"])?;
    db.hset(b"dst", &[(b"f", b"v")])?;
    let alpha = SortOptions {
        alpha: true,
        get: vec![b"#".to_vec(), b"v_*".to_vec()],
        ..Default::default()
    };
    set(&db, "v_a", "A")?;
    assert_eq!(db.sort_store(b"l", b"dst", &alpha)?, 6);
    assert_eq!(
        db.lrange(b"dst", 0, -1)?,
        [&b"a"[..], b"A", b"b", b"", b"c", b""]
    );
    assert_eq!(db.llen(b"dst")?, 6);
    // The stored list is an ordinary list.
    assert_eq!(db.lpush(b"dst", &[b"z"])?, 7);
    let none = SortOptions {
        limit: Some((10, 1)),
        alpha: true,
        ..Default::default()
    };
    assert_eq!(db.sort_store(b"l", b"dst", &none)?, 0);
    assert!(!db.exists(b"dst")?);
    // A set stored without sorting is sorted ALPHA.
    db.sadd(b"s", &[b"pear", b"10", b"fig"])?;
    let nosort = SortOptions {
        by: Some(b"nosort".to_vec()),
        ..Default::default()
    };
    assert_eq!(db.sort_store(b"s", b"dst", &nosort)?, 3);
    assert_eq!(db.lrange(b"dst", 0, -1)?, [&b"10"[..], b"fig", b"pear"]);
    Ok(())
}

#[test]
fn errors() -> R {
    let (_d, db) = open()?;
    set(&db, "str", "1")?;
    assert_eq!(
        db.sort(b"str", &SortOptions::default()),
        Err(Error::WrongType)
    );
    db.rpush(b"l", &[b"1", b"one"])?;
    assert_eq!(db.sort(b"l", &SortOptions::default()), Err(Error::NotFloat));
    set(&db, "dst", "kept")?;
    assert_eq!(
        db.sort_store(b"l", b"dst", &SortOptions::default()),
        Err(Error::NotFloat)
    );
    assert_eq!(db.get(b"dst")?, Some(b"kept".to_vec()));
    // Not sorting, or sorting ALPHA, needs no numbers.
    let nosort = SortOptions {
        by: Some(b"x".to_vec()),
        ..Default::default()
    };
    assert_eq!(sorted(&db, "l", &nosort)?, ["1", "one"]);
    Ok(())
}
