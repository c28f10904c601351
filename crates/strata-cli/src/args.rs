//! Command-line arguments: the `clap` definitions of `strata`'s global options and subcommands,
//! and the help text that documents exit codes. Parsing only; nothing here opens a directory.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Exit codes, as `strata --help` prints them.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  not found (get/ttl/type of a missing key, del that deleted nothing), or check found problems it did not repair
  2  usage error (bad arguments)
  3  data directory missing, not a Strata directory, or in use by another process (for writes)
  4  any other failure (I/O error, corrupt data, bad dump file)";

/// `strata`: look into, change, export, import, back up, check and compact a Strata data
/// directory without a server.
#[derive(Parser, Debug)]
#[command(name = "strata", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// The data directory (the server's --dir).
    #[arg(short = 'd', long = "dir", value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,

    /// Logical database for key commands.
    #[arg(short = 'n', long = "db", default_value_t = 0, global = true)]
    pub db: u32,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Number of logical databases of the directory (the server's `databases`).
    #[arg(long, default_value_t = 16, global = true)]
    pub databases: u32,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The type `set` writes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// `set KEY VALUE`
    String,
    /// `set --type hash KEY FIELD VALUE [FIELD VALUE ...]`
    Hash,
    /// `set --type list KEY ITEM [ITEM ...]` (head first)
    List,
    /// `set --type set KEY MEMBER [MEMBER ...]`
    Set,
    /// `set --type zset KEY SCORE MEMBER [SCORE MEMBER ...]`
    Zset,
}

/// The format `export` writes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Strata's portable dump (docs/format.md): every type, streams with their groups.
    Strata,
    /// A Redis 7.0 RDB file (version 10) that redis-server loads.
    Rdb,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print a key's value, whatever its type.
    Get {
        /// The key.
        key: OsString,
    },
    /// Store a value, replacing the key whatever it held.
    Set {
        /// Type of the value.
        #[arg(short = 't', long = "type", value_enum, default_value_t = ValueType::String)]
        kind: ValueType,
        /// Expire after this many seconds.
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u64>,
        /// The key.
        key: OsString,
        /// The value (for collections: its elements).
        #[arg(required = true)]
        values: Vec<OsString>,
    },
    /// Delete keys; prints how many existed.
    Del {
        /// The keys.
        #[arg(required = true)]
        keys: Vec<OsString>,
    },
    /// Print a key's remaining time to live in seconds (-1: no expiry).
    Ttl {
        /// The key.
        key: OsString,
    },
    /// Print a key's type.
    Type {
        /// The key.
        key: OsString,
    },
    /// List the keys matching a glob pattern (default `*`), one per line.
    Keys {
        /// Redis glob pattern.
        pattern: Option<OsString>,
    },
    /// List keys with their type, TTL and size, filtered.
    Scan {
        /// Only keys starting with this prefix.
        #[arg(long)]
        prefix: Option<OsString>,
        /// Only keys matching this glob pattern.
        #[arg(long = "match")]
        pattern: Option<OsString>,
        /// Only keys of this type.
        #[arg(short = 't', long = "type", value_enum)]
        kind: Option<ValueType>,
        /// Only keys >= this (bytewise).
        #[arg(long)]
        from: Option<OsString>,
        /// Only keys < this (bytewise).
        #[arg(long)]
        to: Option<OsString>,
        /// Stop after this many keys.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Write every key of every database to a portable dump file, or with `--format rdb` to a
    /// Redis 7.0 RDB file (`-` for stdout).
    Export {
        /// The file's format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Strata)]
        format: ExportFormat,
        /// The file to write.
        file: PathBuf,
    },
    /// Load a dump file or a Redis RDB file (`-` for stdin) into the directory, creating it if
    /// missing; keys of the same name are replaced.
    Import {
        /// The dump file or RDB file (recognised by its REDIS signature) to read.
        file: PathBuf,
    },
    /// Write a consistent copy of the directory to DEST (which must not exist).
    Backup {
        /// Where the copy goes.
        dest: PathBuf,
    },
    /// Replace the directory with a backup made by `backup` (or the server's BGSAVE).
    Restore {
        /// The backup directory.
        src: PathBuf,
        /// Replace a directory that already holds data.
        #[arg(long)]
        force: bool,
    },
    /// Print keys per type and database, sizes, disk use and compaction state.
    Stats,
    /// Verify every record; exit 1 if problems remain.
    Check {
        /// Fix what is safe to fix (counts, empty collections, undecodable records).
        #[arg(long)]
        repair: bool,
    },
    /// Compact the whole directory now, reclaiming the space of deleted and expired data.
    Compact,
}

impl Command {
    /// Whether the command only reads (and may therefore fall back to a read-only open).
    pub fn reads_only(&self) -> bool {
        match self {
            Command::Get { .. }
            | Command::Ttl { .. }
            | Command::Type { .. }
            | Command::Keys { .. }
            | Command::Scan { .. }
            | Command::Export { .. }
            | Command::Stats => true,
            Command::Check { repair } => !repair,
            _ => false,
        }
    }
}

/// Bytes of a command-line argument (keys and values are binary-safe on Unix).
pub fn bytes(arg: &OsString) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    arg.as_os_str().as_bytes().to_vec()
}
