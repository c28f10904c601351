//! Opening the data directory for a command: never creating it by accident (only `import` may),
//! refusing foreign directories, and, for commands that only read, falling back to a read-only
//! open with a note on stderr when a running server holds the directory.

use std::path::Path;

use crate::exit::{Failure, DIRECTORY};

/// How a command wants the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Only reads: a read-only open is fine when the directory is in use.
    Read,
    /// Writes: needs the directory to itself.
    Write,
    /// Writes and may create the directory (import).
    Create,
}

/// Opens `dir` with `databases` logical databases for `access`.
pub fn open(dir: &Path, databases: u32, access: Access) -> Result<strata::Db, Failure> {
    let opts = strata::Options {
        databases,
        // The tool must not change data behind a read; expired keys read as missing anyway.
        active_expire: false,
        block_cache_size: 64 << 20,
        create_if_missing: access == Access::Create,
        ..strata::Options::default()
    };
    match strata::Db::open_with(dir, opts.clone()) {
        Ok(db) => Ok(db),
        Err(strata::Error::Locked(m)) if access == Access::Read => {
            let ro = strata::Options {
                read_only: true,
                ..opts
            };
            let db = strata::Db::open_with(dir, ro)?;
            eprintln!(
                "strata: note: {} is in use by another process; reading it read-only, as of now",
                dir.display()
            );
            drop(m);
            Ok(db)
        }
        Err(strata::Error::Locked(m)) => Err(Failure::new(
            DIRECTORY,
            format!("{m}; stop the server first (reads work while it runs)"),
        )),
        Err(e) => Err(e.into()),
    }
}
