//! `check [--repair]`: runs the library's consistency check (`strata::Db::check`) with a progress
//! bar and prints its report; exits 1 while problems remain unrepaired.

use serde_json::json;

use crate::exit::{Failure, Outcome};
use crate::progress;
use crate::render::{json_bytes, print_json, text};

/// `check`.
pub fn check(db: &strata::Db, repair: bool, as_json: bool) -> Outcome {
    let bar = progress::counter("keys checked");
    let report = db.check(repair, |n| bar.set_position(n))?;
    bar.finish_and_clear();
    if repair {
        db.flush()?;
    }
    if as_json {
        let problems: Vec<_> = report
            .problems
            .iter()
            .map(|p| json!({"db": p.db, "key": json_bytes(&p.key), "problem": p.what, "repaired": p.repaired}))
            .collect();
        print_json(&json!({
            "keys": report.keys,
            "members": report.members,
            "expired_not_yet_deleted": report.expired,
            "orphan_records": report.orphan_records,
            "problems": problems,
            "unrepaired": report.unrepaired(),
        }));
    } else {
        println!(
            "checked {} keys and {} members; {} expired keys awaiting deletion; {} orphan records awaiting compaction",
            report.keys, report.members, report.expired, report.orphan_records
        );
        for p in &report.problems {
            let state = if p.repaired {
                "repaired"
            } else {
                "NOT repaired"
            };
            println!("db{} {}: {} ({state})", p.db, text(&p.key), p.what);
        }
        if report.problems.is_empty() {
            println!("ok");
        }
    }
    match report.unrepaired() {
        0 => Ok(()),
        n => Err(Failure::not_found(format!(
            "{n} problem(s) found{}",
            if repair {
                " that cannot be repaired safely"
            } else {
                "; run check --repair to fix what is safe"
            }
        ))),
    }
}
