//! Sorted sets and lists through the library's public API: every operation, Redis's edge cases,
//! a randomized comparison with simple in-memory models, and big keys (O(1) delete, space
//! reclaimed by compaction). Each test opens its own temporary directory.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use strata::{
    Aggregate, Db, Error, LexBound, LexRange, ListEnd, ScoreRange, SetOp, SetOptions, ZAddCompare,
    ZAddCondition, ZAddOptions, ZRangeBy, ZRangeSpec,
};

type R = Result<(), Box<dyn std::error::Error>>;

fn open() -> Result<(tempfile::TempDir, Db), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path())?;
    Ok((dir, db))
}

fn add(db: &Db, key: &[u8], pairs: &[(f64, &str)]) -> strata::Result<u64> {
    let pairs: Vec<(f64, &[u8])> = pairs.iter().map(|(s, m)| (*s, m.as_bytes())).collect();
    Ok(db.zadd(key, &pairs, ZAddOptions::default())?.added)
}

fn members(items: &[(Vec<u8>, f64)]) -> Vec<String> {
    items
        .iter()
        .map(|(m, _)| String::from_utf8_lossy(m).into_owned())
        .collect()
}

fn strs(items: &[Vec<u8>]) -> Vec<String> {
    items
        .iter()
        .map(|m| String::from_utf8_lossy(m).into_owned())
        .collect()
}

fn spec(by: ZRangeBy, rev: bool, limit: Option<(i64, i64)>) -> ZRangeSpec {
    ZRangeSpec { by, rev, limit }
}

// ----- sorted sets -----

#[test]
fn zadd_adds_updates_and_orders_by_score_then_member() -> R {
    let (_d, db) = open()?;
    assert_eq!(add(&db, b"z", &[(2.0, "b"), (1.0, "a"), (2.0, "aa")])?, 3);
    assert_eq!(add(&db, b"z", &[(0.5, "b"), (3.0, "c")])?, 1);
    assert_eq!(db.zcard(b"z")?, 4);
    let all = db.zrange(b"z", &ZRangeSpec::rank(0, -1))?;
    assert_eq!(members(&all), ["b", "a", "aa", "c"]);
    assert_eq!(all[0].1, 0.5);
    // Duplicates inside one call apply in order.
    let pairs: [(f64, &[u8]); 2] = [(5.0, b"d"), (6.0, b"d")];
    assert_eq!(db.zadd(b"z", &pairs, ZAddOptions::default())?.added, 1);
    assert_eq!(db.zscore(b"z", b"d")?, Some(6.0));
    Ok(())
}

#[test]
fn zadd_conditions_follow_redis() -> R {
    let (_d, db) = open()?;
    let o = |condition, compare, incr| ZAddOptions {
        condition,
        compare,
        incr,
    };
    // XX on a missing key creates nothing.
    let out = db.zadd(
        b"z",
        &[(1.0, &b"a"[..])],
        o(ZAddCondition::IfPresent, ZAddCompare::Any, false),
    )?;
    assert_eq!((out.added, db.exists(b"z")?), (0, false));
    add(&db, b"z", &[(5.0, "a")])?;
    let nx = db.zadd(
        b"z",
        &[(1.0, &b"a"[..]), (1.0, &b"b"[..])],
        o(ZAddCondition::IfAbsent, ZAddCompare::Any, false),
    )?;
    assert_eq!((nx.added, nx.updated), (1, 0));
    assert_eq!(db.zscore(b"z", b"a")?, Some(5.0));
    let gt = db.zadd(
        b"z",
        &[(4.0, &b"a"[..]), (2.0, &b"b"[..])],
        o(ZAddCondition::Always, ZAddCompare::Greater, false),
    )?;
    assert_eq!((gt.added, gt.updated), (0, 1));
    assert_eq!(db.zscore(b"z", b"a")?, Some(5.0));
    assert_eq!(db.zscore(b"z", b"b")?, Some(2.0));
    let lt = db.zadd(
        b"z",
        &[(4.0, &b"a"[..]), (9.0, &b"new"[..])],
        o(ZAddCondition::Always, ZAddCompare::Less, false),
    )?;
    assert_eq!((lt.added, lt.updated), (1, 1));
    // INCR returns the new score, or None when blocked.
    let inc = db.zadd(
        b"z",
        &[(1.5, &b"a"[..])],
        o(ZAddCondition::Always, ZAddCompare::Any, true),
    )?;
    assert_eq!(inc.score, Some(5.5));
    let blocked = db.zadd(
        b"z",
        &[(-1.0, &b"a"[..])],
        o(ZAddCondition::Always, ZAddCompare::Greater, true),
    )?;
    assert_eq!(blocked.score, None);
    let nx_inc = db.zadd(
        b"z",
        &[(1.0, &b"a"[..])],
        o(ZAddCondition::IfAbsent, ZAddCompare::Any, true),
    )?;
    assert_eq!(nx_inc.score, None);
    Ok(())
}

#[test]
fn zincrby_refuses_nan_and_changes_nothing() -> R {
    let (_d, db) = open()?;
    assert_eq!(db.zincrby(b"z", 2.5, b"m")?, 2.5);
    assert_eq!(db.zincrby(b"z", f64::INFINITY, b"m")?, f64::INFINITY);
    assert_eq!(
        db.zincrby(b"z", f64::NEG_INFINITY, b"m"),
        Err(Error::NanOrInfinity)
    );
    assert_eq!(db.zscore(b"z", b"m")?, Some(f64::INFINITY));
    assert_eq!(db.zincrby(b"z", -0.0, b"zero")?, 0.0);
    assert!(db
        .zscore(b"z", b"zero")?
        .is_some_and(|s| s.is_sign_positive()));
    Ok(())
}

#[test]
fn zrem_removes_and_the_last_member_deletes_the_key() -> R {
    let (_d, db) = open()?;
    add(&db, b"z", &[(1.0, "a"), (2.0, "b")])?;
    assert_eq!(db.zrem(b"z", &[b"a", b"a", b"x"])?, 1);
    assert_eq!(db.zrem(b"z", &[b"b"])?, 1);
    assert!(!db.exists(b"z")?);
    assert_eq!(db.zrem(b"missing", &[b"b"])?, 0);
    Ok(())
}

#[test]
fn wrong_types_are_refused() -> R {
    let (_d, db) = open()?;
    db.set(b"s", b"v", SetOptions::default())?;
    assert_eq!(add(&db, b"s", &[(1.0, "a")]), Err(Error::WrongType));
    assert_eq!(db.zscore(b"s", b"a"), Err(Error::WrongType));
    assert_eq!(
        db.zrange(b"s", &ZRangeSpec::rank(0, -1)),
        Err(Error::WrongType)
    );
    assert_eq!(db.lpush(b"s", &[b"a"]), Err(Error::WrongType));
    assert_eq!(db.lrange(b"s", 0, -1), Err(Error::WrongType));
    db.rpush(b"l", &[b"a"])?;
    assert_eq!(db.zcard(b"l"), Err(Error::WrongType));
    add(&db, b"z", &[(1.0, "a")])?;
    assert_eq!(db.llen(b"z"), Err(Error::WrongType));
    assert_eq!(
        db.lmove(b"l", b"z", ListEnd::Left, ListEnd::Left),
        Err(Error::WrongType)
    );
    assert_eq!(db.llen(b"l")?, 1, "a failed LMOVE changes nothing");
    Ok(())
}

#[test]
fn ranks_count_from_both_ends() -> R {
    let (_d, db) = open()?;
    add(&db, b"z", &[(1.0, "a"), (2.0, "b"), (3.0, "c"), (4.0, "d")])?;
    assert_eq!(db.zrank(b"z", b"c", false)?, Some(2));
    assert_eq!(db.zrank(b"z", b"c", true)?, Some(1));
    assert_eq!(db.zrank(b"z", b"x", false)?, None);
    let r = |a, b, rev| -> strata::Result<Vec<String>> {
        Ok(members(
            &db.zrange(b"z", &spec(ZRangeBy::Rank(a, b), rev, None))?,
        ))
    };
    assert_eq!(r(1, 2, false)?, ["b", "c"]);
    assert_eq!(r(-2, -1, false)?, ["c", "d"]);
    assert_eq!(r(0, 0, true)?, ["d"]);
    assert_eq!(r(1, -1, true)?, ["c", "b", "a"]);
    assert_eq!(r(-100, 100, false)?, ["a", "b", "c", "d"]);
    assert!(r(3, 1, false)?.is_empty());
    assert!(r(4, 10, false)?.is_empty());
    Ok(())
}

#[test]
fn score_ranges_honour_open_ends_infinities_and_limits() -> R {
    let (_d, db) = open()?;
    add(
        &db,
        b"z",
        &[
            (f64::NEG_INFINITY, "ninf"),
            (1.0, "a"),
            (2.0, "b"),
            (2.0, "c"),
            (3.0, "d"),
            (f64::INFINITY, "inf"),
        ],
    )?;
    let sr = |min, min_exclusive, max, max_exclusive| ScoreRange {
        min,
        min_exclusive,
        max,
        max_exclusive,
    };
    let q = |r: ScoreRange, rev, limit| -> strata::Result<Vec<String>> {
        Ok(members(
            &db.zrange(b"z", &spec(ZRangeBy::Score(r), rev, limit))?,
        ))
    };
    assert_eq!(q(sr(1.0, true, 3.0, false), false, None)?, ["b", "c", "d"]);
    assert_eq!(q(sr(1.0, false, 3.0, true), true, None)?, ["c", "b", "a"]);
    assert_eq!(q(ScoreRange::all(), false, Some((1, 2)))?, ["a", "b"]);
    assert_eq!(q(ScoreRange::all(), true, Some((0, 2)))?, ["inf", "d"]);
    assert_eq!(
        q(ScoreRange::all(), false, Some((-1, 2)))?,
        Vec::<String>::new()
    );
    assert_eq!(q(ScoreRange::all(), false, Some((4, -1)))?, ["d", "inf"]);
    assert_eq!(
        q(sr(2.0, true, 2.0, false), false, None)?,
        Vec::<String>::new()
    );
    assert_eq!(
        q(sr(3.0, false, 1.0, false), false, None)?,
        Vec::<String>::new()
    );
    assert_eq!(db.zcount(b"z", &ScoreRange::inclusive(2.0, 2.0))?, 2);
    assert_eq!(db.zcount(b"z", &ScoreRange::all())?, 6);
    Ok(())
}

#[test]
fn lex_ranges_walk_members_in_byte_order() -> R {
    let (_d, db) = open()?;
    add(
        &db,
        b"z",
        &[(0.0, "a"), (0.0, "b"), (0.0, "c"), (0.0, "d"), (0.0, "")],
    )?;
    let lr = |min, max| LexRange { min, max };
    let inc = |s: &str| LexBound::Inclusive(s.as_bytes().to_vec());
    let exc = |s: &str| LexBound::Exclusive(s.as_bytes().to_vec());
    let q = |r: LexRange, rev, limit| -> strata::Result<Vec<String>> {
        Ok(members(
            &db.zrange(b"z", &spec(ZRangeBy::Lex(r), rev, limit))?,
        ))
    };
    assert_eq!(q(lr(inc("b"), exc("d")), false, None)?, ["b", "c"]);
    assert_eq!(
        q(lr(exc("a"), LexBound::PosInf), true, None)?,
        ["d", "c", "b"]
    );
    assert_eq!(q(LexRange::all(), false, Some((1, 2)))?, ["a", "b"]);
    assert_eq!(
        q(lr(LexBound::PosInf, LexBound::NegInf), false, None)?,
        Vec::<String>::new()
    );
    assert_eq!(db.zlexcount(b"z", &LexRange::all())?, 5);
    assert_eq!(db.zlexcount(b"z", &lr(inc(""), inc("a")))?, 2);
    assert_eq!(
        db.zremrange(b"z", &ZRangeBy::Lex(lr(exc("a"), inc("c"))))?,
        2
    );
    assert_eq!(
        members(&db.zrange(b"z", &ZRangeSpec::rank(0, -1))?),
        ["", "a", "d"]
    );
    Ok(())
}

#[test]
fn zremrange_by_rank_and_score() -> R {
    let (_d, db) = open()?;
    add(
        &db,
        b"z",
        &[(1.0, "a"), (2.0, "b"), (3.0, "c"), (4.0, "d"), (5.0, "e")],
    )?;
    assert_eq!(db.zremrange(b"z", &ZRangeBy::Rank(0, 1))?, 2);
    assert_eq!(
        db.zremrange(b"z", &ZRangeBy::Score(ScoreRange::inclusive(5.0, 5.0)))?,
        1
    );
    assert_eq!(
        members(&db.zrange(b"z", &ZRangeSpec::rank(0, -1))?),
        ["c", "d"]
    );
    assert_eq!(db.zremrange(b"z", &ZRangeBy::Rank(0, -1))?, 2);
    assert!(!db.exists(b"z")?);
    Ok(())
}

#[test]
fn pops_take_from_either_end_across_keys() -> R {
    let (_d, db) = open()?;
    add(&db, b"z", &[(1.0, "a"), (2.0, "b"), (3.0, "c")])?;
    assert_eq!(db.zpop(b"z", false, 1)?, vec![(b"a".to_vec(), 1.0)]);
    assert_eq!(members(&db.zpop(b"z", true, 5)?), ["c", "b"]);
    assert!(!db.exists(b"z")?);
    add(&db, b"z2", &[(1.0, "x")])?;
    let got = db.zmpop(&[b"missing", b"z2"], false, 10)?;
    assert_eq!(got, Some((b"z2".to_vec(), vec![(b"x".to_vec(), 1.0)])));
    assert_eq!(db.zmpop(&[b"missing"], false, 1)?, None);
    Ok(())
}

#[test]
fn zrandmember_counts_follow_redis() -> R {
    let (_d, db) = open()?;
    let names: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    let pairs: Vec<(f64, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, m)| (i as f64, m.as_str()))
        .collect();
    add(&db, b"z", &pairs)?;
    let distinct = db.zrandmember(b"z", 5)?;
    assert_eq!(distinct.len(), 5);
    let mut seen: Vec<_> = members(&distinct);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5);
    assert_eq!(db.zrandmember(b"z", 100)?.len(), 20);
    assert_eq!(db.zrandmember(b"z", -50)?.len(), 50);
    for (m, s) in db.zrandmember(b"z", -50)? {
        assert_eq!(db.zscore(b"z", &m)?, Some(s));
    }
    assert!(db.zrandmember(b"z", 0)?.is_empty());
    assert!(db.zrandmember(b"missing", 3)?.is_empty());
    Ok(())
}

#[test]
fn set_algebra_weights_and_aggregates() -> R {
    let (_d, db) = open()?;
    add(&db, b"a", &[(1.0, "x"), (2.0, "y"), (3.0, "z")])?;
    add(&db, b"b", &[(10.0, "y"), (20.0, "z"), (f64::INFINITY, "w")])?;
    let u = db.zsetop(SetOp::Union, &[b"a", b"b"], None, Aggregate::Sum)?;
    assert_eq!(
        u,
        vec![
            (b"x".to_vec(), 1.0),
            (b"y".to_vec(), 12.0),
            (b"z".to_vec(), 23.0),
            (b"w".to_vec(), f64::INFINITY)
        ]
    );
    let i = db.zsetop(
        SetOp::Inter,
        &[b"a", b"b"],
        Some(&[2.0, 1.0]),
        Aggregate::Max,
    )?;
    assert_eq!(i, vec![(b"y".to_vec(), 10.0), (b"z".to_vec(), 20.0)]);
    let m = db.zsetop(SetOp::Inter, &[b"a", b"b"], None, Aggregate::Min)?;
    assert_eq!(m, vec![(b"y".to_vec(), 2.0), (b"z".to_vec(), 3.0)]);
    let d = db.zsetop(SetOp::Diff, &[b"a", b"b", b"missing"], None, Aggregate::Sum)?;
    assert_eq!(d, vec![(b"x".to_vec(), 1.0)]);
    // inf * 0 is NaN, which counts as 0.
    let w = db.zsetop(SetOp::Union, &[b"b"], Some(&[0.0]), Aggregate::Sum)?;
    assert!(w.iter().all(|(_, s)| *s == 0.0));
    assert_eq!(db.zintercard(&[b"a", b"b"], 0)?, 2);
    assert_eq!(db.zintercard(&[b"a", b"b"], 1)?, 1);
    assert_eq!(
        db.zsetop_store(SetOp::Union, b"dst", &[b"a", b"b"], None, Aggregate::Sum)?,
        4
    );
    assert_eq!(db.zscore(b"dst", b"z")?, Some(23.0));
    assert_eq!(
        db.zsetop_store(
            SetOp::Inter,
            b"dst",
            &[b"a", b"missing"],
            None,
            Aggregate::Sum
        )?,
        0
    );
    assert!(!db.exists(b"dst")?);
    db.set(b"s", b"v", SetOptions::default())?;
    assert_eq!(
        db.zsetop(SetOp::Union, &[b"a", b"s"], None, Aggregate::Sum),
        Err(Error::WrongType)
    );
    Ok(())
}

#[test]
fn zrangestore_replaces_any_destination() -> R {
    let (_d, db) = open()?;
    add(&db, b"src", &[(1.0, "a"), (2.0, "b"), (3.0, "c")])?;
    db.set(b"dst", b"string", SetOptions::default())?;
    assert_eq!(db.zrangestore(b"dst", b"src", &ZRangeSpec::rank(1, -1))?, 2);
    assert_eq!(
        members(&db.zrange(b"dst", &ZRangeSpec::rank(0, -1))?),
        ["b", "c"]
    );
    assert_eq!(db.zrangestore(b"dst", b"src", &ZRangeSpec::rank(5, 6))?, 0);
    assert!(!db.exists(b"dst")?);
    // In place.
    assert_eq!(db.zrangestore(b"src", b"src", &ZRangeSpec::rank(0, 0))?, 1);
    assert_eq!(db.zcard(b"src")?, 1);
    Ok(())
}

#[test]
fn zscan_pages_large_sets_and_returns_small_ones_whole() -> R {
    let (_d, db) = open()?;
    add(&db, b"small", &[(1.0, "a"), (2.0, "b")])?;
    let page = db.zscan(b"small", 0, None, 1)?;
    assert_eq!((page.cursor, page.items.len(), page.compact), (0, 2, true));
    let pairs: Vec<(f64, String)> = (0..500).map(|i| (i as f64, format!("m{i:04}"))).collect();
    let refs: Vec<(f64, &[u8])> = pairs.iter().map(|(s, m)| (*s, m.as_bytes())).collect();
    db.zadd(b"big", &refs, ZAddOptions::default())?;
    let mut cursor = 0;
    let mut seen = Vec::new();
    loop {
        let page = db.zscan(b"big", cursor, Some(b"m00*"), 37)?;
        assert!(!page.compact);
        seen.extend(members(&page.items));
        cursor = page.cursor;
        if cursor == 0 {
            break;
        }
    }
    seen.sort();
    assert_eq!(seen.len(), 100);
    seen.dedup();
    assert_eq!(seen.len(), 100);
    Ok(())
}

#[test]
fn object_encoding_follows_redis_size_rules() -> R {
    let (_d, db) = open()?;
    add(&db, b"z", &[(1.0, "a")])?;
    assert_eq!(db.object_encoding(b"z")?, Some("listpack"));
    let long = "x".repeat(65);
    add(&db, b"z", &[(2.0, long.as_str())])?;
    assert_eq!(db.object_encoding(b"z")?, Some("skiplist"));
    let pairs: Vec<(f64, String)> = (0..129).map(|i| (i as f64, format!("{i}"))).collect();
    let refs: Vec<(f64, &[u8])> = pairs.iter().map(|(s, m)| (*s, m.as_bytes())).collect();
    db.zadd(b"z2", &refs, ZAddOptions::default())?;
    assert_eq!(db.object_encoding(b"z2")?, Some("skiplist"));
    db.rpush(b"l", &[b"a"])?;
    assert_eq!(db.object_encoding(b"l")?, Some("quicklist"));
    Ok(())
}

// ----- lists -----

#[test]
fn pushes_and_pops_at_both_ends() -> R {
    let (_d, db) = open()?;
    assert_eq!(db.lpush(b"l", &[b"a", b"b", b"c"])?, 3);
    assert_eq!(db.rpush(b"l", &[b"x"])?, 4);
    assert_eq!(strs(&db.lrange(b"l", 0, -1)?), ["c", "b", "a", "x"]);
    assert_eq!(db.list_push(b"nope", ListEnd::Left, &[b"a"], true)?, 0);
    assert!(!db.exists(b"nope")?);
    assert_eq!(
        db.list_pop(b"l", ListEnd::Left, 1)?,
        Some(vec![b"c".to_vec()])
    );
    assert_eq!(
        db.list_pop(b"l", ListEnd::Right, 2)?,
        Some(vec![b"x".to_vec(), b"a".to_vec()])
    );
    assert_eq!(db.list_pop(b"l", ListEnd::Right, 0)?, Some(vec![]));
    assert_eq!(
        db.list_pop(b"l", ListEnd::Right, 9)?,
        Some(vec![b"b".to_vec()])
    );
    assert!(!db.exists(b"l")?);
    assert_eq!(db.list_pop(b"l", ListEnd::Right, 1)?, None);
    Ok(())
}

#[test]
fn index_set_and_ranges_follow_redis_rules() -> R {
    let (_d, db) = open()?;
    db.rpush(b"l", &[b"a", b"b", b"c", b"d"])?;
    assert_eq!(db.lindex(b"l", 0)?, Some(b"a".to_vec()));
    assert_eq!(db.lindex(b"l", -1)?, Some(b"d".to_vec()));
    assert_eq!(db.lindex(b"l", 4)?, None);
    assert_eq!(db.lindex(b"l", -5)?, None);
    assert!(db.lset(b"l", -2, b"C")?);
    assert!(!db.lset(b"l", 10, b"x")?);
    assert_eq!(db.lset(b"missing", 0, b"x"), Err(Error::NoSuchKey));
    assert_eq!(strs(&db.lrange(b"l", 1, 2)?), ["b", "C"]);
    assert_eq!(strs(&db.lrange(b"l", -100, 100)?), ["a", "b", "C", "d"]);
    assert!(db.lrange(b"l", 3, 1)?.is_empty());
    assert_eq!(db.llen(b"l")?, 4);
    Ok(())
}

#[test]
fn linsert_shifts_the_shorter_side() -> R {
    let (_d, db) = open()?;
    db.rpush(b"l", &[b"a", b"b", b"c", b"d", b"e"])?;
    assert_eq!(db.linsert(b"l", true, b"b", b"X")?, 6);
    assert_eq!(db.linsert(b"l", false, b"d", b"Y")?, 7);
    assert_eq!(db.linsert(b"l", false, b"e", b"Z")?, 8);
    assert_eq!(db.linsert(b"l", true, b"a", b"W")?, 9);
    assert_eq!(
        strs(&db.lrange(b"l", 0, -1)?),
        ["W", "a", "X", "b", "c", "d", "Y", "e", "Z"]
    );
    assert_eq!(db.linsert(b"l", true, b"nope", b"Q")?, -1);
    assert_eq!(db.linsert(b"missing", true, b"a", b"Q")?, 0);
    Ok(())
}

#[test]
fn lrem_removes_from_either_direction() -> R {
    let (_d, db) = open()?;
    let items: Vec<&[u8]> = vec![b"x", b"a", b"x", b"b", b"x", b"c", b"x"];
    db.rpush(b"l", &items)?;
    assert_eq!(db.lrem(b"l", 1, b"x")?, 1);
    assert_eq!(
        strs(&db.lrange(b"l", 0, -1)?),
        ["a", "x", "b", "x", "c", "x"]
    );
    assert_eq!(db.lrem(b"l", -2, b"x")?, 2);
    assert_eq!(strs(&db.lrange(b"l", 0, -1)?), ["a", "x", "b", "c"]);
    assert_eq!(db.lrem(b"l", 0, b"x")?, 1);
    assert_eq!(db.lrem(b"l", 0, b"nope")?, 0);
    assert_eq!(strs(&db.lrange(b"l", 0, -1)?), ["a", "b", "c"]);
    assert_eq!(
        db.lrem(b"l", 0, b"a")? + db.lrem(b"l", 0, b"b")? + db.lrem(b"l", 0, b"c")?,
        3
    );
    assert!(!db.exists(b"l")?);
    Ok(())
}

#[test]
fn ltrim_keeps_a_range_or_deletes_the_key() -> R {
    let (_d, db) = open()?;
    let items: Vec<Vec<u8>> = (0..200).map(|i| format!("{i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = items.iter().map(|v| v.as_slice()).collect();
    db.rpush(b"l", &refs)?;
    db.ltrim(b"l", 100, -3)?;
    assert_eq!(db.llen(b"l")?, 98);
    assert_eq!(db.lindex(b"l", 0)?, Some(b"100".to_vec()));
    assert_eq!(db.lindex(b"l", -1)?, Some(b"197".to_vec()));
    db.lpush(b"l", &[b"new"])?;
    assert_eq!(strs(&db.lrange(b"l", 0, 1)?), ["new", "100"]);
    db.ltrim(b"l", 5, 1)?;
    assert!(!db.exists(b"l")?);
    db.ltrim(b"missing", 0, 1)?;
    Ok(())
}

#[test]
fn lpos_rank_count_and_maxlen() -> R {
    let (_d, db) = open()?;
    db.rpush(b"l", &[b"a", b"b", b"c", b"1", b"2", b"3", b"c", b"c"])?;
    assert_eq!(db.lpos(b"l", b"c", 1, 1, 0)?, vec![2]);
    assert_eq!(db.lpos(b"l", b"c", 2, 1, 0)?, vec![6]);
    assert_eq!(db.lpos(b"l", b"c", -1, 1, 0)?, vec![7]);
    assert_eq!(db.lpos(b"l", b"c", 1, 0, 0)?, vec![2, 6, 7]);
    assert_eq!(db.lpos(b"l", b"c", -2, 0, 0)?, vec![6, 2]);
    assert_eq!(db.lpos(b"l", b"c", 1, 0, 3)?, vec![2]);
    assert!(db.lpos(b"l", b"c", 4, 0, 0)?.is_empty());
    assert!(db.lpos(b"missing", b"c", 1, 0, 0)?.is_empty());
    Ok(())
}

#[test]
fn lmove_moves_between_lists_and_rotates_one() -> R {
    let (_d, db) = open()?;
    db.rpush(b"src", &[b"a", b"b", b"c"])?;
    assert_eq!(
        db.lmove(b"src", b"dst", ListEnd::Right, ListEnd::Left)?,
        Some(b"c".to_vec())
    );
    assert_eq!(
        db.lmove(b"src", b"dst", ListEnd::Left, ListEnd::Right)?,
        Some(b"a".to_vec())
    );
    assert_eq!(strs(&db.lrange(b"dst", 0, -1)?), ["c", "a"]);
    assert_eq!(
        db.lmove(b"dst", b"dst", ListEnd::Left, ListEnd::Right)?,
        Some(b"c".to_vec())
    );
    assert_eq!(strs(&db.lrange(b"dst", 0, -1)?), ["a", "c"]);
    assert_eq!(
        db.lmove(b"src", b"src", ListEnd::Left, ListEnd::Left)?,
        Some(b"b".to_vec())
    );
    assert_eq!(
        db.lmove(b"src", b"dst", ListEnd::Left, ListEnd::Left)?,
        Some(b"b".to_vec())
    );
    assert!(!db.exists(b"src")?);
    assert_eq!(
        db.lmove(b"src", b"dst", ListEnd::Left, ListEnd::Left)?,
        None
    );
    assert_eq!(
        db.lmpop(&[b"src", b"dst"], ListEnd::Right, 2)?,
        Some((b"dst".to_vec(), vec![b"c".to_vec(), b"a".to_vec()]))
    );
    Ok(())
}

#[test]
fn lists_survive_reopen() -> R {
    let dir = tempfile::tempdir()?;
    {
        let db = Db::open(dir.path())?;
        db.rpush(b"l", &[b"a", b"b"])?;
        db.lpush(b"l", &[b"z"])?;
        add(&db, b"z", &[(1.5, "m")])?;
        db.flush()?;
        db.shutdown();
    }
    let db = Db::open(dir.path())?;
    assert_eq!(strs(&db.lrange(b"l", 0, -1)?), ["z", "a", "b"]);
    assert_eq!(db.zscore(b"z", b"m")?, Some(1.5));
    Ok(())
}

// ----- randomized comparison with in-memory models -----

struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn random_zset_operations_match_a_model() -> R {
    let (_d, db) = open()?;
    let mut rng = Lcg(7);
    let mut model: HashMap<Vec<u8>, f64> = HashMap::new();
    for step in 0..3000 {
        let m = format!("m{}", rng.next(40)).into_bytes();
        let score = (rng.next(21) as f64 - 10.0) / 2.0;
        match rng.next(6) {
            0 | 1 => {
                db.zadd(b"z", &[(score, &m[..])], ZAddOptions::default())?;
                model.insert(m, score);
            }
            2 => {
                let got = db.zincrby(b"z", score, &m)?;
                let e = model.entry(m).or_insert(0.0);
                *e += score;
                assert_eq!(got, *e);
            }
            3 => {
                let removed = db.zrem(b"z", &[&m])?;
                assert_eq!(removed, model.remove(&m).map_or(0, |_| 1));
            }
            4 => {
                let lo = (rng.next(21) as f64 - 10.0) / 2.0;
                let range = ScoreRange::inclusive(lo, lo + 2.0);
                let got = db.zrange(b"z", &spec(ZRangeBy::Score(range), false, None))?;
                let mut want: Vec<(Vec<u8>, f64)> = model
                    .iter()
                    .filter(|(_, s)| range.contains(**s))
                    .map(|(m, s)| (m.clone(), *s))
                    .collect();
                want.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
                assert_eq!(got, want, "step {step}");
            }
            _ => {
                assert_eq!(db.zcard(b"z")?, model.len() as u64);
                if let Some(s) = model.get(&m) {
                    let rank = model
                        .iter()
                        .filter(|(om, os)| (**os, om.as_slice()) < (*s, m.as_slice()))
                        .count();
                    assert_eq!(db.zrank(b"z", &m, false)?, Some(rank as u64));
                }
            }
        }
    }
    let all = db.zrange(b"z", &ZRangeSpec::rank(0, -1))?;
    let sorted: BTreeMap<Vec<u8>, f64> = model.into_iter().collect();
    assert_eq!(all.len(), sorted.len());
    for (m, s) in all {
        assert_eq!(sorted.get(&m), Some(&s));
    }
    Ok(())
}

#[test]
fn random_list_operations_match_a_model() -> R {
    let (_d, db) = open()?;
    let mut rng = Lcg(11);
    let mut model: VecDeque<Vec<u8>> = VecDeque::new();
    for step in 0..3000 {
        let v = format!("v{}", rng.next(8)).into_bytes();
        match rng.next(9) {
            0 => {
                db.lpush(b"l", &[&v])?;
                model.push_front(v);
            }
            1 => {
                db.rpush(b"l", &[&v])?;
                model.push_back(v);
            }
            2 => {
                let got = db.list_pop(b"l", ListEnd::Left, 1)?;
                let want = model.pop_front().map(|x| vec![x]);
                assert_eq!(got, want);
            }
            3 => {
                let got = db.list_pop(b"l", ListEnd::Right, 1)?;
                let want = model.pop_back();
                assert_eq!(got.and_then(|g| g.into_iter().next()), want);
            }
            4 => {
                let count = rng.next(5) as i64 - 2;
                let got = db.lrem(b"l", count, &v)?;
                let mut removed = 0u64;
                let limit = count.unsigned_abs();
                if count >= 0 {
                    let mut i = 0;
                    while i < model.len() {
                        if model[i] == v && (limit == 0 || removed < limit) {
                            model.remove(i);
                            removed += 1;
                        } else {
                            i += 1;
                        }
                    }
                } else {
                    let mut i = model.len();
                    while i > 0 {
                        i -= 1;
                        if model[i] == v && removed < limit {
                            model.remove(i);
                            removed += 1;
                        }
                    }
                }
                assert_eq!(got, removed, "step {step}");
            }
            5 => {
                let pivot = format!("v{}", rng.next(8)).into_bytes();
                let before = rng.next(2) == 0;
                let got = db.linsert(b"l", before, &pivot, &v)?;
                let want = match model.iter().position(|x| *x == pivot) {
                    Some(p) => {
                        model.insert(if before { p } else { p + 1 }, v);
                        model.len() as i64
                    }
                    None if model.is_empty() => 0,
                    None => -1,
                };
                assert_eq!(got, want, "step {step}");
            }
            6 => {
                if model.len() > 30 {
                    db.ltrim(b"l", 2, -3)?;
                    model.pop_front();
                    model.pop_front();
                    model.pop_back();
                    model.pop_back();
                }
            }
            7 => {
                let i = rng.next(model.len() as u64 + 2) as i64 - 1;
                let set = db.lset(b"l", i, &v);
                let idx = if i < 0 { model.len() as i64 + i } else { i };
                if model.is_empty() {
                    assert_eq!(set, Err(Error::NoSuchKey));
                } else if idx >= 0 && (idx as usize) < model.len() {
                    assert_eq!(set, Ok(true));
                    model[idx as usize] = v;
                } else {
                    assert_eq!(set, Ok(false));
                }
            }
            _ => {
                let got = db.lrange(b"l", 0, -1)?;
                assert_eq!(
                    got,
                    model.iter().cloned().collect::<Vec<_>>(),
                    "step {step}"
                );
            }
        }
        assert_eq!(db.llen(b"l")?, model.len() as u64, "step {step}");
    }
    Ok(())
}

// ----- big keys -----

#[test]
fn big_keys_delete_in_constant_time_and_compaction_reclaims_them() -> R {
    let dir = tempfile::tempdir()?;
    let db = Db::open_with(
        dir.path(),
        strata::Options {
            active_expire: false,
            ..Default::default()
        },
    )?;
    const N: usize = 200_000;
    let names: Vec<Vec<u8>> = (0..N)
        .map(|i| format!("member-{i:08}").into_bytes())
        .collect();
    for chunk in names.chunks(10_000) {
        let pairs: Vec<(f64, &[u8])> = chunk
            .iter()
            .enumerate()
            .map(|(i, m)| (i as f64, m.as_slice()))
            .collect();
        db.zadd(b"bigz", &pairs, ZAddOptions::default())?;
        let items: Vec<&[u8]> = chunk.iter().map(|m| m.as_slice()).collect();
        db.rpush(b"bigl", &items)?;
    }
    assert_eq!(db.zcard(b"bigz")?, N as u64);
    assert_eq!(db.llen(b"bigl")?, N as u64);
    assert_eq!(db.lindex(b"bigl", 123_456)?, Some(names[123_456].clone()));
    db.flush()?;
    db.compact();
    let before = db.engine_property("rocksdb.total-sst-files-size");
    assert!(
        before > 1_000_000,
        "expected the members on disk, got {before} bytes"
    );

    let t = Instant::now();
    assert_eq!(db.del(&[b"bigz", b"bigl"])?, 2);
    assert!(t.elapsed().as_millis() < 200, "DEL took {:?}", t.elapsed());

    // Re-created keys start empty.
    add(&db, b"bigz", &[(1.0, "fresh")])?;
    db.rpush(b"bigl", &[b"fresh"])?;
    assert_eq!(
        members(&db.zrange(b"bigz", &ZRangeSpec::rank(0, -1))?),
        ["fresh"]
    );
    assert_eq!(strs(&db.lrange(b"bigl", 0, -1)?), ["fresh"]);
    assert_eq!(db.zcount(b"bigz", &ScoreRange::all())?, 1);

    db.flush()?;
    db.compact();
    let after = db.engine_property("rocksdb.total-sst-files-size");
    assert!(after < before / 10, "before {before} after {after}");
    Ok(())
}

#[test]
fn big_list_trim_and_pops_are_cheap() -> R {
    let (_d, db) = open()?;
    let items: Vec<Vec<u8>> = (0..50_000).map(|i| format!("{i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = items.iter().map(|v| v.as_slice()).collect();
    db.rpush(b"l", &refs)?;
    let t = Instant::now();
    db.ltrim(b"l", 20_000, -20_001)?;
    assert_eq!(db.llen(b"l")?, 10_000);
    assert_eq!(db.lindex(b"l", 0)?, Some(b"20000".to_vec()));
    assert_eq!(
        db.list_pop(b"l", ListEnd::Left, 5_000)?.map(|v| v.len()),
        Some(5_000)
    );
    assert_eq!(db.lindex(b"l", 0)?, Some(b"25000".to_vec()));
    assert!(t.elapsed().as_secs() < 5);
    Ok(())
}
