//! Library throughput, in the shape of bitcask's published figures: get / put / hset / zadd of
//! 128-byte values from one thread, with a sync policy of `always` (fsync of the write-ahead log
//! before each write returns) and `no` (the operating system flushes). No criterion: a plain
//! timed loop, short by default. Run with `bench/lib.sh` or
//! `cargo bench -p strata --bench throughput` (`STRATA_BENCH_OPS=N` sets the no-sync op count;
//! sync runs do a tenth of it; `-- locks` prints only the cost of holding one key's lock).

use std::time::Instant;

use strata::{Db, Options, SyncPolicy};

type R = Result<(), Box<dyn std::error::Error>>;

fn rate(n: u64, t: Instant) -> f64 {
    n as f64 / t.elapsed().as_secs_f64()
}

fn key(i: u64) -> Vec<u8> {
    format!(
        "key:{:012}",
        i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 10_000_000_000
    )
    .into_bytes()
}

fn run(sync: SyncPolicy, ops: u64) -> R {
    let dir = tempfile::tempdir()?;
    let db = Db::open_with(
        dir.path(),
        Options {
            sync,
            ..Options::default()
        },
    )?;
    let value = [b'v'; 128];
    let name = match sync {
        SyncPolicy::Always => "sync",
        SyncPolicy::EverySec => "everysec",
        SyncPolicy::No => "no-sync",
    };

    let t = Instant::now();
    for i in 0..ops {
        db.set(&key(i), &value, Default::default())?;
    }
    let put = rate(ops, t);

    // Reads of the keys just written: random order over the whole set.
    let reads = ops * 4;
    let t = Instant::now();
    let mut found = 0u64;
    for i in 0..reads {
        found += u64::from(db.get(&key((i * 7919) % ops))?.is_some());
    }
    let get = rate(reads, t);
    if found != reads {
        return Err(format!("{found} of {reads} reads found their key").into());
    }

    let t = Instant::now();
    for i in 0..ops {
        let field = format!("f{}", i % 1000);
        db.hset(
            format!("h{}", i % 100).as_bytes(),
            &[(field.as_bytes(), &value[..])],
        )?;
    }
    let hset = rate(ops, t);

    let t = Instant::now();
    for i in 0..ops {
        let member = key(i);
        db.zadd(
            format!("z{}", i % 100).as_bytes(),
            &[(i as f64, member.as_slice())],
            Default::default(),
        )?;
    }
    let zadd = rate(ops, t);
    println!(
        "{name:<8} {ops:>8} ops   put {put:>10.0}/s   get {get:>10.0}/s   hset {hset:>10.0}/s   zadd {zadd:>10.0}/s"
    );
    Ok(())
}

/// The cost of what every server command does around its handler: hold the lock of one key
/// (exclusively and shared) and release it, with nobody else wanting it.
fn locks(ops: u64) -> R {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path())?;
    let keys: Vec<Vec<u8>> = (0..1024).map(key).collect();
    let mut per_op = [0.0; 2];
    for (slot, exclusive) in per_op.iter_mut().zip([true, false]) {
        let t = Instant::now();
        for i in 0..ops {
            let k = &keys[(i % 1024) as usize];
            std::hint::black_box(db.hold([(0, &k[..])], exclusive));
        }
        *slot = t.elapsed().as_nanos() as f64 / ops as f64;
    }
    println!(
        "key lock {ops:>8} ops   hold+release exclusive {:>6.1} ns   shared {:>6.1} ns",
        per_op[0], per_op[1]
    );
    Ok(())
}

fn main() -> R {
    // `cargo test --benches` runs bench targets with `--bench`-less args; keep that instant.
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return Ok(());
    }
    let ops: u64 = std::env::var("STRATA_BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    // `-- locks`: only the key-lock figure (quick to compare before and after a change).
    if std::env::args().any(|a| a == "locks") {
        return locks(ops * 100);
    }
    println!("strata library, one thread, 128-byte values");
    run(SyncPolicy::No, ops)?;
    run(SyncPolicy::Always, (ops / 10).max(100))?;
    locks(ops * 100)?;
    Ok(())
}
