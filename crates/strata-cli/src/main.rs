//! `strata`: the offline tool on a data directory (get/set/scan/export/import/backup/check). Not built
//! yet (see docs/differences.md); it says so instead of pretending to work.

fn main() {
    eprintln!(
        "strata: the offline data-directory tool is not implemented yet; use strata-server and redis-cli"
    );
    std::process::exit(2);
}
