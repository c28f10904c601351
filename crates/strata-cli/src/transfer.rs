//! `export` and `import`: moving every key between directories through the portable dump format
//! (`strata::dump`, documented in docs/format.md), and to and from Redis RDB files
//! (`strata::rdb::save` writes them with `--format rdb`; `strata::rdb::file` reads them,
//! recognised by their `REDIS` signature). Both stream: export writes
//! through a buffer to a temporary file renamed into place when complete; import reads through a
//! byte counter that drives the progress bar.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use indicatif::ProgressBar;
use serde_json::json;

use strata_commands::scripting::functions::{rdb_library_loader, FunctionRegistry, RestorePolicy};

use crate::args::ExportFormat;
use crate::exit::{Failure, Outcome, OTHER};
use crate::progress;
use crate::render::print_json;

/// Writes the export in `format` to `out`, counting keys on `bar`; returns the keys written.
fn write_export(
    db: &strata::Db,
    format: ExportFormat,
    out: impl Write,
    bar: &ProgressBar,
) -> strata::Result<u64> {
    match format {
        ExportFormat::Strata => strata::dump::export(db, out, |n| bar.set_position(n)),
        ExportFormat::Rdb => {
            let (_, saved) = strata::rdb::save::export(db, out, None, |n, _| bar.set_position(n))?;
            Ok(saved.keys)
        }
    }
}

/// `export [--format strata|rdb] FILE` (`-` for stdout).
pub fn export(db: &strata::Db, format: ExportFormat, file: &Path, as_json: bool) -> Outcome {
    let bar = progress::counter("keys exported");
    let keys = if file == Path::new("-") {
        let out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        write_export(db, format, out, &bar)?
    } else {
        let tmp = file.with_extension("partial");
        let out = File::create(&tmp)
            .map_err(|e| Failure::new(OTHER, format!("cannot create {}: {e}", tmp.display())))?;
        let keys = write_export(db, format, BufWriter::with_capacity(1 << 20, out), &bar);
        let keys = match keys {
            Ok(k) => k,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e.into());
            }
        };
        std::fs::rename(&tmp, file)?;
        keys
    };
    bar.finish_and_clear();
    if file != Path::new("-") {
        let name = match format {
            ExportFormat::Strata => "dump",
            ExportFormat::Rdb => "rdb",
        };
        if as_json {
            print_json(
                &json!({ "exported": keys, "format": name, "file": file.display().to_string() }),
            );
        } else {
            eprintln!("exported {keys} keys to {} ({name})", file.display());
        }
    }
    Ok(())
}

/// Counts the bytes read through it into a progress bar.
struct Counting<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

/// Whether the buffered input starts with an RDB file's signature.
fn is_rdb(input: &mut impl BufRead) -> std::io::Result<bool> {
    Ok(input.fill_buf()?.starts_with(b"REDIS"))
}

/// Loads an RDB file (already opened, with its progress bar) and reports what it did. Its
/// function libraries join the directory's (compiled as FUNCTION LOAD REPLACE would: a library
/// of the same name is replaced).
fn import_rdb(db: &strata::Db, input: impl Read, bar: &ProgressBar, as_json: bool) -> Outcome {
    let started = std::time::Instant::now();
    let libraries = FunctionRegistry::new();
    if let Some(saved) = db.aux_get(strata::function_record::RECORD)? {
        libraries
            .restore(&saved, RestorePolicy::Flush)
            .map_err(|e| Failure::new(OTHER, format!("the directory's function libraries: {e}")))?;
    }
    // Without the write-ahead log, then flushed: an import interrupted by a crash is run again
    // (it replaces the keys it writes); one that fails keeps what it loaded before the error.
    db.set_bulk_load(true);
    let s = strata::rdb::file::import(
        db,
        input,
        rdb_library_loader(&libraries, db, true),
        |_, _| {},
    );
    bar.finish_and_clear();
    let flushed = db.flush();
    db.set_bulk_load(false);
    let s = s?;
    flushed?;
    let secs = started.elapsed().as_secs_f64();
    if as_json {
        print_json(&json!({
            "format": "rdb",
            "rdb_version": s.version,
            "imported": s.keys,
            "skipped_expired": s.expired,
            "functions": s.functions,
            "checksum_verified": s.checksum_verified,
            "seconds": secs,
        }));
    } else {
        eprintln!(
            "imported {} keys from an RDB file (version {}) in {secs:.1}s ({} already expired, skipped; checksum {})",
            s.keys,
            s.version,
            s.expired,
            if s.checksum_verified { "verified" } else { "absent" }
        );
        if s.functions > 0 {
            eprintln!("loaded {} function libraries", s.functions);
        }
    }
    Ok(())
}

/// `import FILE` (`-` for stdin): a Strata dump, or a Redis RDB file.
pub fn import(db: &strata::Db, file: &Path, as_json: bool) -> Outcome {
    let summary = if file == Path::new("-") {
        let bar = progress::counter("bytes read");
        let mut inner = BufReader::with_capacity(1 << 20, std::io::stdin().lock());
        let rdb = is_rdb(&mut inner)?;
        let input = Counting {
            inner,
            bar: bar.clone(),
        };
        if rdb {
            return import_rdb(db, input, &bar, as_json);
        }
        let s = strata::dump::import(db, input, |_| {});
        bar.finish_and_clear();
        s?
    } else {
        let f = File::open(file)
            .map_err(|e| Failure::new(OTHER, format!("cannot open {}: {e}", file.display())))?;
        let total = f.metadata().map(|m| m.len()).unwrap_or(0);
        let bar = progress::bytes(total, "importing");
        let mut inner = BufReader::with_capacity(1 << 20, f);
        let rdb = is_rdb(&mut inner)?;
        let input = Counting {
            inner,
            bar: bar.clone(),
        };
        if rdb {
            return import_rdb(db, input, &bar, as_json);
        }
        let s = strata::dump::import(db, input, |_| {});
        bar.finish_and_clear();
        s?
    };
    db.flush()?;
    if as_json {
        print_json(&json!({ "imported": summary.keys, "skipped_expired": summary.skipped }));
    } else {
        eprintln!(
            "imported {} keys ({} already expired, skipped)",
            summary.keys, summary.skipped
        );
    }
    Ok(())
}
