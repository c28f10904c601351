//! `export` and `import`: moving every key between directories through the portable dump format
//! (`strata::dump`, documented in docs/format.md). Both stream: export writes through a buffer to
//! a temporary file renamed into place when complete; import reads through a byte counter that
//! drives the progress bar.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::Path;

use indicatif::ProgressBar;
use serde_json::json;

use crate::exit::{Failure, Outcome, OTHER};
use crate::progress;
use crate::render::print_json;

/// `export FILE` (`-` for stdout).
pub fn export(db: &strata::Db, file: &Path, as_json: bool) -> Outcome {
    let bar = progress::counter("keys exported");
    let keys = if file == Path::new("-") {
        let out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        strata::dump::export(db, out, |n| bar.set_position(n))?
    } else {
        let tmp = file.with_extension("partial");
        let out = File::create(&tmp)
            .map_err(|e| Failure::new(OTHER, format!("cannot create {}: {e}", tmp.display())))?;
        let keys = strata::dump::export(db, BufWriter::with_capacity(1 << 20, out), |n| {
            bar.set_position(n)
        });
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
        if as_json {
            print_json(&json!({ "exported": keys, "file": file.display().to_string() }));
        } else {
            eprintln!("exported {keys} keys to {}", file.display());
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

/// `import FILE` (`-` for stdin).
pub fn import(db: &strata::Db, file: &Path, as_json: bool) -> Outcome {
    let summary = if file == Path::new("-") {
        let bar = progress::counter("bytes read");
        let input = Counting {
            inner: BufReader::with_capacity(1 << 20, std::io::stdin().lock()),
            bar: bar.clone(),
        };
        let s = strata::dump::import(db, input, |_| {});
        bar.finish_and_clear();
        s?
    } else {
        let f = File::open(file)
            .map_err(|e| Failure::new(OTHER, format!("cannot open {}: {e}", file.display())))?;
        let total = f.metadata().map(|m| m.len()).unwrap_or(0);
        let bar = progress::bytes(total, "importing");
        let input = Counting {
            inner: BufReader::with_capacity(1 << 20, f),
            bar: bar.clone(),
        };
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
