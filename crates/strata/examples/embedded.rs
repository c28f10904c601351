//! An embedded use of the strata library: a small leaderboard service that keeps players in
//! hashes, scores in a sorted set and an event log in a list, updates them atomically with a
//! `Batch`, lists players by prefix, and exports everything to a dump file.
//!
//! Run it with `cargo run --release -p strata --example embedded [DIR]` (default: a temporary
//! directory); run it twice on the same DIR to see the data persist.

use strata::{dump, Batch, Db, KeyFilter, ZRangeSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp;
    let dir = match std::env::args_os().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().join("data")
        }
    };
    let db = Db::open(&dir)?;

    for (name, points) in [("ann", 42.0), ("bob", 17.5), ("cyd", 99.0)] {
        let key = format!("player:{name}");
        let mut batch = Batch::new();
        batch
            .hset(key.as_bytes(), &[(b"name", name.as_bytes())])
            .zadd(b"scores", &[(points, key.as_bytes())])
            .rpush(b"events", &[format!("{name} scored {points}").as_bytes()]);
        db.apply(&batch)?; // all three keys change together, or none does
    }

    println!("players:");
    for info in db.iter(KeyFilter::new().prefix(b"player:")) {
        let info = info?;
        println!(
            "  {} ({} fields)",
            String::from_utf8_lossy(&info.key),
            info.size
        );
    }
    println!("top two:");
    let spec = ZRangeSpec {
        rev: true,
        ..ZRangeSpec::rank(0, 1)
    };
    for (member, score) in db.zrange(b"scores", &spec)? {
        println!("  {} {score}", String::from_utf8_lossy(&member));
    }
    println!("{} events logged", db.llen(b"events")?);

    let file = dir.with_extension("dump");
    let keys = dump::export(&db, std::fs::File::create(&file)?, |_| {})?;
    println!("exported {keys} keys to {}", file.display());
    Ok(())
}
