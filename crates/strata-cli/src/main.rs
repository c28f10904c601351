//! `strata`: the command-line tool on a Strata data directory (in the spirit of bitcask's CLI):
//! read and write keys of any type, export/import portable dumps, back up and restore, report
//! statistics, check consistency and compact. This file dispatches parsed arguments (`args`) to
//! the module that owns each job and turns failures into exit codes (`exit`); see docs/cli.md.

mod args;
mod backup;
mod check;
mod exit;
mod open;
mod ops;
mod progress;
mod render;
mod stats;
mod transfer;

use clap::Parser;

use args::{bytes, Cli, Command};
use exit::{Failure, Outcome, USAGE};
use open::{open, Access};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors exit 2.
            let code = if e.use_stderr() { USAGE } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    if let Err(f) = run(&cli) {
        if !f.message.is_empty() {
            eprintln!("strata: {f}");
        }
        std::process::exit(f.code);
    }
}

fn run(cli: &Cli) -> Outcome {
    let Some(dir) = cli.dir.as_deref() else {
        return Err(Failure::new(
            USAGE,
            "no data directory given: use -d DIR (see strata --help)",
        ));
    };
    let (n, json) = (cli.databases, cli.json);
    match &cli.command {
        Command::Backup { dest } => return backup::backup(dir, n, dest),
        Command::Restore { src, force } => return backup::restore(dir, n, src, *force),
        _ => {}
    }
    let access = match &cli.command {
        Command::Import { .. } => Access::Create,
        c if c.reads_only() => Access::Read,
        _ => Access::Write,
    };
    let root = open(dir, n, access)?;
    let db = root.select(cli.db)?;
    match &cli.command {
        Command::Get { key } => ops::get(&db, &bytes(key), json),
        Command::Set {
            kind,
            ttl,
            key,
            values,
        } => {
            let values: Vec<Vec<u8>> = values.iter().map(bytes).collect();
            ops::set(&db, *kind, *ttl, &bytes(key), &values)
        }
        Command::Del { keys } => ops::del(&db, &keys.iter().map(bytes).collect::<Vec<_>>(), json),
        Command::Ttl { key } => ops::ttl(&db, &bytes(key), json),
        Command::Type { key } => ops::key_type(&db, &bytes(key), json),
        Command::Keys { pattern } => {
            let mut f = strata::KeyFilter::new();
            if let Some(p) = pattern {
                f = f.pattern(&bytes(p));
            }
            ops::list(&db, f, None, false, json)
        }
        Command::Scan {
            prefix,
            pattern,
            kind,
            from,
            to,
            limit,
        } => {
            let mut f = strata::KeyFilter::new();
            if let Some(p) = ops::opt_bytes(prefix) {
                f = f.prefix(&p);
            }
            if let Some(p) = ops::opt_bytes(pattern) {
                f = f.pattern(&p);
            }
            if let Some(k) = kind {
                f = f.kind(ops::key_type_of(*k));
            }
            match (ops::opt_bytes(from), ops::opt_bytes(to)) {
                (Some(a), Some(b)) => f = f.range(&a, &b),
                (Some(a), None) => f = f.from(&a),
                (None, Some(b)) => f = f.range(b"", &b),
                (None, None) => {}
            }
            ops::list(&db, f, *limit, true, json)
        }
        Command::Export { format, file } => transfer::export(&root, *format, file, json),
        Command::Import { file } => transfer::import(&root, file, json),
        Command::Stats => stats::stats(&root, json),
        Command::Check { repair } => check::check(&root, *repair, json),
        Command::Compact => backup::compact(&root),
        Command::Backup { .. } | Command::Restore { .. } => Ok(()),
    }
}
