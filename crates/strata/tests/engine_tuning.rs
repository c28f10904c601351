//! The engine tuning for data larger than memory (`strata::EngineTuning`, docs/architecture.md
//! "Cold data"): every setting opens, writes and reads back the same data across a restart;
//! blob files hold large values and their garbage is collected; a forced write stall shows in
//! the engine's gauges.

use strata::{Db, EngineTuning, Options, SetOptions};

type R = Result<(), Box<dyn std::error::Error>>;

fn opts(tuning: EngineTuning) -> Options {
    Options {
        write_buffer_size: 256 << 10,
        tuning,
        // The tests must not depend on the free space of a shared disk.
        min_free_disk: 0,
        ..Options::default()
    }
}

/// `len` bytes that depend on `i` and do not compress (so blob files hold about that much).
fn value(i: u32, len: usize) -> Vec<u8> {
    let mut x = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn every_tuning_reads_back_what_it_wrote_across_a_restart() -> R {
    let tunings = [
        EngineTuning {
            partitioned_index: true,
            index_high_priority: true,
            ..EngineTuning::default()
        },
        EngineTuning {
            uncompressed_levels: 2,
            zstd_dictionary_bytes: 16 << 10,
            ..EngineTuning::default()
        },
        EngineTuning {
            compaction_rate_limit: 64 << 20,
            direct_io_background: true,
            background_jobs: 4,
            ..EngineTuning::default()
        },
        EngineTuning {
            blob_min_size: 512,
            ..EngineTuning::default()
        },
    ];
    for tuning in tunings {
        let dir = tempfile::tempdir()?;
        let db = Db::open_with(dir.path(), opts(tuning.clone()))?;
        for i in 0..3000u32 {
            db.set(
                format!("k{i}").as_bytes(),
                &value(i, 700),
                SetOptions::default(),
            )?;
        }
        db.hset(b"h", &[(b"f".as_slice(), b"v".as_slice())])?;
        db.flush()?;
        db.compact();
        drop(db);
        let db = Db::open_with(dir.path(), opts(tuning.clone()))?;
        for i in (0..3000u32).step_by(7) {
            assert_eq!(
                db.get(format!("k{i}").as_bytes())?,
                Some(value(i, 700)),
                "{tuning:?}"
            );
        }
        assert_eq!(db.hget(b"h", b"f")?, Some(b"v".to_vec()));
    }
    Ok(())
}

#[test]
fn blob_files_hold_large_values_and_their_garbage_is_collected() -> R {
    let dir = tempfile::tempdir()?;
    let tuning = EngineTuning {
        blob_min_size: 1024,
        ..EngineTuning::default()
    };
    let db = Db::open_with(dir.path(), opts(tuning))?;
    let write = |round: u32| -> R {
        for i in 0..500u32 {
            db.set(
                format!("k{i}").as_bytes(),
                &value(i + round, 4096),
                SetOptions::default(),
            )?;
        }
        db.flush()?;
        Ok(())
    };
    write(0)?;
    let first = db.engine_property("rocksdb.total-blob-file-size");
    assert!(
        first >= 500 * 4096 / 4,
        "values went to blob files: {first}"
    );
    // Every value replaced four times: the old blob files hold only garbage.
    for round in 1..=4 {
        write(round)?;
    }
    db.compact();
    db.compact();
    // Five rounds of values were written to blob files; about one round is live.
    let after = db.engine_property("rocksdb.total-blob-file-size");
    assert!(
        after < 2 * first,
        "garbage collected: one round made {first} bytes of blob files, five leave {after}"
    );
    for i in (0..500u32).step_by(13) {
        assert_eq!(
            db.get(format!("k{i}").as_bytes())?,
            Some(value(i + 4, 4096))
        );
    }
    Ok(())
}

#[test]
fn a_forced_write_stall_shows_in_the_engine_gauges() -> R {
    let dir = tempfile::tempdir()?;
    let tuning = EngineTuning {
        background_jobs: 1,
        l0_slowdown_writes_trigger: 1,
        l0_stop_writes_trigger: 2,
        ..EngineTuning::default()
    };
    let db = Db::open_with(
        dir.path(),
        Options {
            write_buffer_size: 64 << 10,
            tuning,
            min_free_disk: 0,
            ..Options::default()
        },
    )?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut i = 0u32;
    loop {
        for _ in 0..500 {
            db.set(
                format!("k{i}").as_bytes(),
                &value(i, 4096),
                SetOptions::default(),
            )?;
            i += 1;
        }
        let g = db.engine_gauges();
        if g.write_stall_micros > 0 && g.compaction_written_bytes > 0 {
            assert!(g.compaction_read_bytes > 0);
            return Ok(());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no stall after {i} writes: {g:?}"
        );
    }
}
