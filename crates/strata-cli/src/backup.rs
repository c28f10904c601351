//! `backup`, `restore` and `compact`: whole-directory operations. A backup of a directory nobody
//! uses is a RocksDB checkpoint (consistent, hard links where the file system allows). A backup of
//! a directory a running server holds is a logical copy: the directory is opened read-only (a
//! fixed, consistent view as of that moment) and every key is streamed through the dump format
//! into a new directory, with the server-level records (FUNCTION libraries). Restore copies a
//! backup into place after checking that it opens as a Strata directory.

use std::path::Path;

use crate::exit::{Failure, Outcome, DIRECTORY, OTHER};
use crate::open::{open, Access};
use crate::progress;

/// `backup DEST`.
pub fn backup(dir: &Path, databases: u32, dest: &Path) -> Outcome {
    if dest.exists() {
        return Err(Failure::new(
            OTHER,
            format!(
                "{} already exists; a backup needs a new directory",
                dest.display()
            ),
        ));
    }
    let db = match open(dir, databases, Access::Write) {
        Ok(db) => db,
        Err(f) if f.code == DIRECTORY && f.message.contains("in use") => {
            return backup_live(dir, databases, dest)
        }
        Err(f) => return Err(f),
    };
    let bar = progress::spinner("writing checkpoint");
    db.checkpoint(dest)?;
    bar.finish_and_clear();
    eprintln!("backup written to {}", dest.display());
    Ok(())
}

/// Server-level records copied by a live backup (see `docs/format.md`).
const AUX_RECORDS: &[&str] = &["functions"];

/// `backup DEST` of a directory a running server holds: a read-only view streamed key by key
/// into a new directory.
fn backup_live(dir: &Path, databases: u32, dest: &Path) -> Outcome {
    let source = open(dir, databases, Access::Read)?;
    let target = open(dest, databases, Access::Create)?;
    let bar = progress::spinner("copying keys from the running server's directory");
    let (reader, writer) = std::io::pipe()?;
    let keys = std::thread::scope(|scope| -> Result<u64, Failure> {
        let exporter = scope.spawn(|| {
            let out = std::io::BufWriter::new(writer);
            strata::dump::export(&source, out, |_| ())
        });
        let summary = strata::dump::import(&target, std::io::BufReader::new(reader), |n| {
            bar.set_message(format!("{n} keys copied"))
        });
        let exported = exporter
            .join()
            .map_err(|_| Failure::new(OTHER, "the export thread failed".to_string()))??;
        summary?;
        Ok(exported)
    })?;
    for name in AUX_RECORDS {
        if let Some(value) = source.aux_get(name)? {
            target.aux_put(name, &value)?;
        }
    }
    bar.finish_and_clear();
    eprintln!(
        "backup of {keys} keys written to {} (a copy of the running server's data as of the start \
         of the backup)",
        dest.display()
    );
    Ok(())
}

/// `restore SRC [--force]`: makes `dir` a copy of backup `src`.
pub fn restore(dir: &Path, databases: u32, src: &Path, force: bool) -> Outcome {
    // The backup must be a Strata directory; opening it read-only proves it and writes nothing.
    drop(
        strata::Db::open_with(
            src,
            strata::Options {
                databases,
                read_only: true,
                create_if_missing: false,
                ..strata::Options::default()
            },
        )
        .map_err(|e| Failure::new(DIRECTORY, format!("backup {}: {e}", src.display())))?,
    );
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if occupied {
        if !force {
            return Err(Failure::new(
                OTHER,
                format!(
                    "{} already holds data; add --force to replace it with the backup",
                    dir.display()
                ),
            ));
        }
        // Nobody may be using it: opening it for writing takes its lock.
        drop(open(dir, databases, Access::Write)?);
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let total = crate::stats::dir_bytes(src);
    let bar = progress::bytes(total, "restoring");
    copy_dir(src, dir, &bar)?;
    bar.finish_and_clear();
    eprintln!("restored {} into {}", src.display(), dir.display());
    Ok(())
}

fn copy_dir(src: &Path, dst: &Path, bar: &indicatif::ProgressBar) -> Outcome {
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&to)?;
            copy_dir(&entry.path(), &to, bar)?;
        } else if entry.file_name() != "LOCK" {
            let n = std::fs::copy(entry.path(), &to)?;
            bar.inc(n);
        }
    }
    Ok(())
}

/// `compact`.
pub fn compact(db: &strata::Db) -> Outcome {
    let before = db.engine_info().disk_bytes;
    let bar = progress::spinner("compacting");
    db.flush()?;
    db.compact();
    bar.finish_and_clear();
    let after = db.engine_info().disk_bytes;
    eprintln!("compacted: {before} bytes on disk before, {after} after");
    Ok(())
}
