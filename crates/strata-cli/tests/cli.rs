//! The `strata` binary as scripts use it: key commands on every type in text and JSON, exit
//! codes, export/import, backup/restore, stats, check, and a directory held by another process.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

type R = Result<(), Box<dyn std::error::Error>>;

fn strata(dir: &Path, args: &[&str]) -> Result<Output, Box<dyn std::error::Error>> {
    Ok(Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("-d")
        .arg(dir)
        .args(args)
        .output()?)
}

fn ok(dir: &Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let out = strata(dir, args)?;
    if out.status.code() != Some(0) {
        return Err(format!(
            "strata {args:?} exited {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(out.stdout)?)
}

fn json(dir: &Path, args: &[&str]) -> Result<Value, Box<dyn std::error::Error>> {
    let mut with = vec!["--json"];
    with.extend_from_slice(args);
    Ok(serde_json::from_str(&ok(dir, &with)?)?)
}

/// A directory with one key of each type, made by the tool itself.
fn populated() -> Result<(tempfile::TempDir, std::path::PathBuf), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let dir = root.path().join("data");
    let seed = strata::Db::open(&dir)?;
    drop(seed);
    ok(&dir, &["set", "s", "hello"])?;
    ok(&dir, &["set", "-t", "hash", "h", "f1", "v1", "f2", "v2"])?;
    ok(&dir, &["set", "-t", "list", "l", "a", "b", "c"])?;
    ok(&dir, &["set", "-t", "set", "st", "x", "y"])?;
    ok(
        &dir,
        &[
            "set", "-t", "zset", "--ttl", "100", "z", "1", "a", "2.5", "b",
        ],
    )?;
    ok(&dir, &["-n", "2", "set", "in2", "two"])?;
    Ok((root, dir))
}

#[test]
fn values_of_every_type_print_readably_and_as_json() -> R {
    let (_root, dir) = populated()?;
    assert_eq!(ok(&dir, &["get", "s"])?, "hello\n");
    assert_eq!(ok(&dir, &["get", "h"])?, "f1 = v1\nf2 = v2\n");
    assert_eq!(ok(&dir, &["get", "l"])?, "1) a\n2) b\n3) c\n");
    assert_eq!(ok(&dir, &["get", "z"])?, "a = 1\nb = 2.5\n");
    assert_eq!(ok(&dir, &["type", "st"])?, "set\n");
    assert_eq!(ok(&dir, &["-n", "2", "get", "in2"])?, "two\n");
    let z = json(&dir, &["get", "z"])?;
    assert_eq!(z["type"], "zset");
    assert_eq!(z["value"][1][0], "b");
    assert_eq!(z["value"][1][1], 2.5);
    assert!(z["ttl_ms"].as_u64().is_some_and(|t| t > 90_000));
    let h = json(&dir, &["get", "h"])?;
    assert_eq!(h["value"]["f2"], "v2");
    assert_eq!(
        json(&dir, &["get", "st"])?["value"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let ttl: i64 = ok(&dir, &["ttl", "z"])?.trim().parse()?;
    // Set to 100 s when the directory was populated; each run of the tool takes a moment.
    assert!((50..=100).contains(&ttl), "{ttl}");
    assert_eq!(ok(&dir, &["ttl", "s"])?, "-1\n");
    Ok(())
}

#[test]
fn keys_and_scan_filter_and_stream() -> R {
    let (_root, dir) = populated()?;
    let mut keys: Vec<String> = ok(&dir, &["keys"])?.lines().map(String::from).collect();
    keys.sort();
    assert_eq!(keys, ["h", "l", "s", "st", "z"]);
    assert_eq!(ok(&dir, &["keys", "s*"])?.lines().count(), 2);
    assert_eq!(ok(&dir, &["scan", "--type", "hash"])?, "h\thash\t-\t2\n");
    let lines = ok(&dir, &["--json", "scan", "--prefix", "s"])?;
    assert_eq!(lines.lines().count(), 2);
    for line in lines.lines() {
        let v: Value = serde_json::from_str(line)?;
        assert!(v["key"].as_str().is_some_and(|k| k.starts_with('s')));
    }
    assert_eq!(ok(&dir, &["scan", "--limit", "3"])?.lines().count(), 3);
    assert_eq!(
        ok(&dir, &["scan", "--from", "l", "--to", "t"])?
            .lines()
            .count(),
        3
    );
    Ok(())
}

#[test]
fn exit_codes_tell_scripts_what_happened() -> R {
    let (root, dir) = populated()?;
    let code = |args: &[&str]| -> Result<Option<i32>, Box<dyn std::error::Error>> {
        Ok(strata(&dir, args)?.status.code())
    };
    assert_eq!(code(&["get", "nope"])?, Some(1));
    assert_eq!(code(&["ttl", "nope"])?, Some(1));
    assert_eq!(code(&["del", "nope"])?, Some(1));
    assert_eq!(code(&["del", "s", "nope"])?, Some(0));
    assert_eq!(code(&["get", "s"])?, Some(1));
    assert_eq!(code(&["frobnicate"])?, Some(2));
    assert_eq!(
        code(&["set", "-t", "zset", "z", "notanumber", "m"])?,
        Some(2)
    );
    assert_eq!(code(&["-n", "99", "get", "x"])?, Some(2));
    let missing = strata(&root.path().join("nope"), &["get", "x"])?;
    assert_eq!(missing.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));
    assert!(!root.path().join("nope").exists());
    let foreign = root.path().join("foreign");
    std::fs::create_dir(&foreign)?;
    std::fs::write(foreign.join("notes.txt"), "not a database")?;
    let out = strata(&foreign, &["stats"])?;
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Strata data directory"));
    let no_dir = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("stats")
        .output()?;
    assert_eq!(no_dir.status.code(), Some(2));
    let help = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--help")
        .output()?;
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Exit codes"));
    Ok(())
}

#[test]
fn export_then_import_copies_every_key_and_refuses_damaged_dumps() -> R {
    let (root, dir) = populated()?;
    let file = root.path().join("all.dump");
    ok(&dir, &["export", file.to_str().ok_or("path")?])?;
    let copy = root.path().join("copy");
    let summary = json(&copy, &["import", file.to_str().ok_or("path")?])?;
    assert_eq!(summary["imported"], 6);
    for key in ["s", "h", "l", "st", "z"] {
        assert_eq!(ok(&copy, &["get", key])?, ok(&dir, &["get", key])?, "{key}");
    }
    assert_eq!(ok(&copy, &["-n", "2", "get", "in2"])?, "two\n");
    let ttl: i64 = ok(&copy, &["ttl", "z"])?.trim().parse()?;
    assert!(ttl > 90);
    let mut bytes = std::fs::read(&file)?;
    let at = bytes.len() / 2;
    bytes[at] ^= 0xFF;
    let bad = root.path().join("bad.dump");
    std::fs::write(&bad, bytes)?;
    let out = strata(
        &root.path().join("other"),
        &["import", bad.to_str().ok_or("path")?],
    )?;
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad dump file"));
    Ok(())
}

#[test]
fn backup_restore_stats_check_and_compact() -> R {
    let (root, dir) = populated()?;
    let backup = root.path().join("backup");
    ok(&dir, &["backup", backup.to_str().ok_or("path")?])?;
    let restored = root.path().join("restored");
    ok(&restored, &["restore", backup.to_str().ok_or("path")?])?;
    assert_eq!(ok(&restored, &["get", "h"])?, "f1 = v1\nf2 = v2\n");
    let again = strata(&restored, &["restore", backup.to_str().ok_or("path")?])?;
    assert_eq!(
        again.status.code(),
        Some(4),
        "restore over data needs --force"
    );
    ok(
        &restored,
        &["restore", "--force", backup.to_str().ok_or("path")?],
    )?;

    let stats = json(&dir, &["stats"])?;
    assert_eq!(stats["keys"], 6);
    assert_eq!(stats["databases"]["db0"]["list"]["size"], 3);
    assert_eq!(stats["databases"]["db0"]["zset"]["expiring"], 1);
    assert_eq!(stats["databases"]["db2"]["string"]["keys"], 1);
    assert!(stats["disk_bytes"].as_u64().is_some_and(|b| b > 0));
    assert!(ok(&dir, &["stats"])?.contains("compaction:"));

    let check = json(&dir, &["check"])?;
    assert_eq!(check["keys"], 6);
    assert_eq!(check["members"], 9);
    assert_eq!(check["unrepaired"], 0);
    ok(&dir, &["del", "h"])?;
    ok(&dir, &["compact"])?;
    assert_eq!(json(&dir, &["check"])?["orphan_records"], 0);
    Ok(())
}

#[test]
fn a_directory_in_use_is_read_read_only_backed_up_by_copy_and_refused_for_writes() -> R {
    let (_root, dir) = populated()?;
    let holder = strata::Db::open(&dir)?;
    holder.set(b"live", b"yes", Default::default())?;
    let out = strata(&dir, &["get", "live"])?;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "yes\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
    let write = strata(&dir, &["set", "k", "v"])?;
    assert_eq!(write.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&write.stderr).contains("in use by another process"));
    // A backup of a directory in use is a logical copy of a read-only view.
    let copy = _root.path().join("live-backup");
    let backup = strata(&dir, &["backup", copy.to_str().ok_or("path")?])?;
    assert_eq!(backup.status.code(), Some(0), "{backup:?}");
    let out = strata(&copy, &["get", "live"])?;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "yes\n");
    Ok(())
}
