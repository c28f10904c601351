//! Generic key commands (Redis's "generic" group): existence, deletion, TTLs, renaming, copying,
//! iteration and OBJECT. They work on keys of every type.

use bytes::Bytes;
use strata::{ExpireCondition, KeyType, Ttl};
use strata_resp::Frame;

use crate::args::{self, db, is, reply, Parsed};
use crate::errors::{self, err};
use crate::table::{dispatch_sub, CommandSpec};
use crate::Ctx;

macro_rules! row {
    ($($row:tt)*) => { crate::table::command_row!("generic"; $($row)*) };
}

/// The generic family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    row!("del", -2, ["write"], 1, -1, 1, ["keyspace", "write", "slow"], "1.0.0", "O(N) where N is the number of keys that will be removed.", "Removes keys, whatever their type.", "key [key ...]", del),
    row!("unlink", -2, ["write", "fast"], 1, -1, 1, ["keyspace", "write", "fast"], "4.0.0", "O(1) for each key removed regardless of its size.", "Removes keys, reclaiming their memory in the background.", "key [key ...]", del),
    row!("exists", -2, ["readonly", "fast"], 1, -1, 1, ["keyspace", "read", "fast"], "1.0.0", "O(N) where N is the number of keys to check.", "Counts how many of the given keys are present.", "key [key ...]", exists),
    row!("type", 2, ["readonly", "fast"], 1, 1, 1, ["keyspace", "read", "fast"], "1.0.0", "O(1)", "Names the data type of the value at a key.", "key", key_type),
    row!("expire", -3, ["write", "fast"], 1, 1, 1, ["keyspace", "write", "fast"], "1.0.0", "O(1)", "Gives a key a time to live, in seconds.", "key seconds [condition: NX | XX | GT | LT]", expire),
    row!("pexpire", -3, ["write", "fast"], 1, 1, 1, ["keyspace", "write", "fast"], "2.6.0", "O(1)", "Gives a key a time to live, in milliseconds.", "key milliseconds [condition: NX | XX | GT | LT]", pexpire),
    row!("expireat", -3, ["write", "fast"], 1, 1, 1, ["keyspace", "write", "fast"], "1.2.0", "O(1)", "Makes a key expire at a Unix time in seconds.", "key unix-time-seconds [condition: NX | XX | GT | LT]", expireat),
    row!("pexpireat", -3, ["write", "fast"], 1, 1, 1, ["keyspace", "write", "fast"], "2.6.0", "O(1)", "Makes a key expire at a Unix time in milliseconds.", "key unix-time-milliseconds [condition: NX | XX | GT | LT]", pexpireat),
    row!("ttl", 2, ["readonly", "fast"], 1, 1, 1, ["keyspace", "read", "fast"], "1.0.0", "O(1)", "Gives the seconds left before a key expires.", "key", ttl),
    row!("pttl", 2, ["readonly", "fast"], 1, 1, 1, ["keyspace", "read", "fast"], "2.6.0", "O(1)", "Gives the milliseconds left before a key expires.", "key", pttl),
    row!("expiretime", 2, ["readonly", "fast"], 1, 1, 1, ["keyspace", "read", "fast"], "7.0.0", "O(1)", "Gives the Unix time in seconds at which a key expires.", "key", expiretime),
    row!("pexpiretime", 2, ["readonly", "fast"], 1, 1, 1, ["keyspace", "read", "fast"], "7.0.0", "O(1)", "Gives the Unix time in milliseconds at which a key expires.", "key", pexpiretime),
    row!("persist", 2, ["write", "fast"], 1, 1, 1, ["keyspace", "write", "fast"], "2.2.0", "O(1)", "Makes a key permanent by dropping its expiration.", "key", persist),
    row!("rename", 3, ["write"], 1, 2, 1, ["keyspace", "write", "slow"], "1.0.0", "O(1)", "Gives a key a new name, replacing any key already called that.", "key newkey", rename),
    row!("renamenx", 3, ["write", "fast"], 1, 2, 1, ["keyspace", "write", "fast"], "1.0.0", "O(1)", "Gives a key a new name only if no key has that name yet.", "key newkey", renamenx),
    row!("copy", -3, ["write", "denyoom"], 1, 2, 1, ["keyspace", "write", "slow"], "6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.", "Duplicates the value of a key under another name.", "source destination [DB destination-db] [REPLACE]", copy),
    row!("move", 3, ["write", "fast"], 1, 1, 1, ["keyspace", "write", "fast"], "1.0.0", "O(1)", "Transfers a key to another database.", "key db", move_key),
    row!("touch", -2, ["readonly", "fast"], 1, -1, 1, ["keyspace", "read", "fast"], "3.2.1", "O(N) where N is the number of keys that will be touched.", "Marks keys as accessed and counts those that exist.", "key [key ...]", exists),
    row!("keys", 2, ["readonly"], 0, 0, 0, ["keyspace", "read", "slow", "dangerous"], "1.0.0", "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.", "Lists every key whose name matches a glob pattern.", "pattern", keys),
    row!("scan", -2, ["readonly"], 0, 0, 0, ["keyspace", "read", "slow"], "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Walks the key space a batch at a time with a cursor.", "cursor [MATCH pattern] [COUNT count] [TYPE type]", scan),
    row!("randomkey", 1, ["readonly"], 0, 0, 0, ["keyspace", "read", "slow"], "1.0.0", "O(1)", "Gives the name of a key picked at random.", "", randomkey),
    row!("object", -2, [], 0, 0, 0, ["slow"], "2.2.3", "Depends on subcommand.", "Groups the subcommands that inspect how a value is stored.", "", object),
    row!("object|encoding", 3, ["readonly"], 2, 2, 1, ["keyspace", "read", "slow"], "2.2.3", "O(1)", "Names the internal representation of a key's value.", "key", object_encoding),
    row!("object|freq", 3, ["readonly"], 2, 2, 1, ["keyspace", "read", "slow"], "4.0.0", "O(1)", "Gives the access-frequency counter of a key.", "key", object_freq),
    row!("object|idletime", 3, ["readonly"], 2, 2, 1, ["keyspace", "read", "slow"], "2.2.3", "O(1)", "Gives the seconds since a key was last read or written.", "key", object_idletime),
    row!("object|refcount", 3, ["readonly"], 2, 2, 1, ["keyspace", "read", "slow"], "2.2.3", "O(1)", "Gives the reference count of a key's value.", "key", object_refcount),
    crate::table::command_row!("server"; "memory", -2, [], 0, 0, 0, ["slow"], "4.0.0", "Depends on subcommand.", "Groups the subcommands that report memory use.", "", memory),
    crate::table::command_row!("server"; "memory|usage", -3, ["readonly"], 2, 2, 1, ["read", "slow"], "4.0.0", "O(N) where N is the number of samples.", "Estimates the bytes a key and its value take.", "key [SAMPLES count]", memory_usage),
    crate::table::command_row!("server"; "memory|help", 2, ["loading", "stale"], 0, 0, 0, ["slow"], "4.0.0", "O(1)", "Lists the MEMORY subcommands with a line on each.", "", memory_help),
    row!("object|help", 2, ["loading", "stale"], 0, 0, 0, ["keyspace", "slow"], "6.2.0", "O(1)", "Lists the OBJECT subcommands with a line on each.", "", object_help),
];

fn del(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    if ctx.notifies(crate::notify::GENERIC) {
        // One key at a time, so each deleted key raises its own `del`.
        let mut n = 0;
        for k in &argv[1..] {
            match ctx.session.db.del(&[&k[..]]) {
                Ok(d) => {
                    if d > 0 {
                        ctx.notify(crate::notify::GENERIC, "del", k);
                    }
                    n += d;
                }
                Err(e) => return errors::from_db(e),
            }
        }
        return Frame::Integer(n as i64);
    }
    match ctx.session.db.del(&args::slices(&argv[1..])) {
        Ok(n) => Frame::Integer(n as i64),
        Err(e) => errors::from_db(e),
    }
}

fn exists(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let mut n = 0;
        for k in &argv[1..] {
            n += db(ctx.session.db.exists(k))? as i64;
        }
        Ok(Frame::Integer(n))
    })())
}

fn key_type(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.key_type(&argv[1]) {
        Ok(t) => Frame::simple(t.map(KeyType::name).unwrap_or("none")),
        Err(e) => errors::from_db(e),
    }
}

/// Redis's parseExtendedExpireArgumentsOrReply.
fn expire_conditions(argv: &[Bytes]) -> Parsed<Vec<ExpireCondition>> {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for a in &argv[3..] {
        if is(a, "nx") {
            nx = true;
        } else if is(a, "xx") {
            xx = true;
        } else if is(a, "gt") {
            gt = true;
        } else if is(a, "lt") {
            lt = true;
        } else {
            return Err(err(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(a)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(err(errors::NX_XX_GT_LT));
    }
    if gt && lt {
        return Err(err(errors::GT_AND_LT));
    }
    let mut conds = Vec::new();
    for (on, c) in [
        (nx, ExpireCondition::IfNone),
        (xx, ExpireCondition::IfSome),
        (gt, ExpireCondition::IfGreater),
        (lt, ExpireCondition::IfLess),
    ] {
        if on {
            conds.push(c);
        }
    }
    Ok(conds)
}

fn expire_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], seconds: bool, absolute: bool) -> Frame {
    let cmd = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
    reply((|| {
        let conds = expire_conditions(argv)?;
        let mut when = args::int(&argv[2])?;
        if seconds {
            if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
                return Err(errors::invalid_expire(&cmd));
            }
            when *= 1000;
        }
        if !absolute {
            when = when
                .checked_add(strata::now_ms() as i64)
                .ok_or_else(|| errors::invalid_expire(&cmd))?;
        }
        let changed = db(ctx.session.db.expire_at(&argv[1], when, &conds))?;
        if changed {
            let past = when <= strata::now_ms() as i64;
            let event = if past { "del" } else { "expire" };
            ctx.notify(crate::notify::GENERIC, event, &argv[1]);
        }
        Ok(Frame::Integer(changed as i64))
    })())
}

fn expire(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    expire_generic(ctx, argv, true, false)
}

fn pexpire(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    expire_generic(ctx, argv, false, false)
}

fn expireat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    expire_generic(ctx, argv, true, true)
}

fn pexpireat(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    expire_generic(ctx, argv, false, true)
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME share Redis's ttlGenericCommand.
fn ttl_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], ms: bool, absolute: bool) -> Frame {
    match ctx.session.db.ttl(&argv[1]) {
        Ok(Ttl::Missing) => Frame::Integer(-2),
        Ok(Ttl::Persistent) => Frame::Integer(-1),
        Ok(Ttl::ExpiresAt(at)) => {
            let t = if absolute {
                at as i64
            } else {
                (at as i64 - strata::now_ms() as i64).max(0)
            };
            Frame::Integer(if ms {
                t
            } else if absolute {
                t / 1000
            } else {
                (t + 500) / 1000
            })
        }
        Err(e) => errors::from_db(e),
    }
}

fn ttl(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    ttl_generic(ctx, argv, false, false)
}

fn pttl(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    ttl_generic(ctx, argv, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    ttl_generic(ctx, argv, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    ttl_generic(ctx, argv, true, true)
}

fn persist(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.persist(&argv[1]) {
        Ok(b) => {
            if b {
                ctx.notify(crate::notify::GENERIC, "persist", &argv[1]);
            }
            Frame::Integer(b as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

fn rename(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.rename(&argv[1], &argv[2], false) {
        Ok(_) => {
            notify_rename(ctx, argv);
            Frame::ok()
        }
        Err(e) => errors::from_db(e),
    }
}

fn renamenx(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.rename(&argv[1], &argv[2], true) {
        Ok(b) => {
            if b {
                notify_rename(ctx, argv);
            }
            Frame::Integer(b as i64)
        }
        Err(e) => errors::from_db(e),
    }
}

/// `rename_from` on the source, `rename_to` on the destination (none for a key renamed to
/// itself, as in Redis).
fn notify_rename(ctx: &Ctx<'_>, argv: &[Bytes]) {
    if argv[1] != argv[2] {
        // Redis re-adds the destination (raising `new`) before it reports the rename.
        crate::notify::new_key_always(ctx, ctx.session.db.index(), &argv[2]);
        ctx.notify(crate::notify::GENERIC, "rename_from", &argv[1]);
        ctx.notify(crate::notify::GENERIC, "rename_to", &argv[2]);
    }
}

fn copy(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let session_db = ctx.session.db.index();
        let mut dst_db = session_db;
        let mut replace = false;
        let mut j = 3;
        while j < argv.len() {
            if is(&argv[j], "replace") {
                replace = true;
            } else if is(&argv[j], "db") && j + 1 < argv.len() {
                let n = args::int(&argv[j + 1])?;
                if n < 0 || n >= ctx.session.db.databases() as i64 {
                    return Err(err(errors::DB_INDEX));
                }
                dst_db = n as u32;
                j += 1;
            } else {
                return Err(err(errors::SYNTAX));
            }
            j += 1;
        }
        if dst_db == session_db && argv[1] == argv[2] {
            return Err(err(errors::SAME_OBJECT));
        }
        let done = db(ctx.session.db.copy(&argv[1], dst_db, &argv[2], replace))?;
        if done {
            crate::notify::new_key_always(ctx, dst_db, &argv[2]);
            ctx.notify_in(dst_db, crate::notify::GENERIC, "copy_to", &argv[2]);
        }
        Ok(Frame::Integer(done as i64))
    })())
}

fn move_key(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let n = args::int(&argv[2])?;
        if n < i32::MIN as i64 || n > i32::MAX as i64 {
            return Err(err(errors::NOT_INTEGER));
        }
        if n < 0 || n >= ctx.session.db.databases() as i64 {
            return Err(err(errors::DB_INDEX));
        }
        if n as u32 == ctx.session.db.index() {
            return Err(err(errors::SAME_OBJECT));
        }
        let done = db(ctx.session.db.move_to(&argv[1], n as u32))?;
        if done {
            let src = ctx.session.db.index();
            crate::notify::new_key_always(ctx, n as u32, &argv[1]);
            ctx.notify_in(src, crate::notify::GENERIC, "move_from", &argv[1]);
            ctx.notify_in(n as u32, crate::notify::GENERIC, "move_to", &argv[1]);
        }
        Ok(Frame::Integer(done as i64))
    })())
}

fn keys(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.keys(&argv[1]) {
        Ok(ks) => Frame::bulk_array(ks),
        Err(e) => errors::from_db(e),
    }
}

/// Parses a SCAN-family cursor: an unsigned 64-bit decimal ("ERR invalid cursor" otherwise).
pub fn parse_cursor(a: &[u8]) -> Parsed<u64> {
    std::str::from_utf8(a)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| err(errors::INVALID_CURSOR))
}

fn scan(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let cursor = parse_cursor(&argv[1])?;
        let o = args::scan_options(argv, 2, true)?;
        let kind = match o.type_name {
            Some(name) => match KeyType::from_name(name) {
                Some(k) => Some(k),
                // An unknown TYPE name matches nothing (as in Redis 7.0); the cursor still moves.
                None => {
                    let page = db(ctx.session.db.scan(cursor, o.pattern, o.count, None))?;
                    return Ok(Frame::Array(vec![
                        Frame::bulk(page.cursor.to_string()),
                        Frame::Array(vec![]),
                    ]));
                }
            },
            None => None,
        };
        let (pattern, count) = (o.pattern, o.count);
        let page = db(ctx.session.db.scan(cursor, pattern, count, kind))?;
        Ok(Frame::Array(vec![
            Frame::bulk(page.cursor.to_string()),
            Frame::bulk_array(page.keys),
        ]))
    })())
}

fn randomkey(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    match ctx.session.db.random_key() {
        Ok(k) => Frame::bulk_or_null(k),
        Err(e) => errors::from_db(e),
    }
}

fn object(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    dispatch_sub(ctx, argv, "object")
}

fn object_encoding(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.object_encoding(&argv[2]) {
        Ok(e) => Frame::bulk_or_null(e.map(|s| Bytes::from_static(s.as_bytes()))),
        Err(e) => errors::from_db(e),
    }
}

fn object_freq(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.exists(&argv[2]) {
        Ok(false) => Frame::Null,
        Ok(true) => err(errors::LFU_NOT_SELECTED),
        Err(e) => errors::from_db(e),
    }
}

fn object_idletime(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.exists(&argv[2]) {
        Ok(false) => Frame::Null,
        // Access times are not tracked on disk (see docs/differences.md).
        Ok(true) => Frame::Integer(0),
        Err(e) => errors::from_db(e),
    }
}

fn object_refcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    match ctx.session.db.exists(&argv[2]) {
        Ok(false) => Frame::Null,
        Ok(true) => Frame::Integer(1),
        Err(e) => errors::from_db(e),
    }
}

fn object_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help_reply(
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    )
}

fn memory(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    dispatch_sub(ctx, argv, "memory")
}

/// MEMORY USAGE key [SAMPLES count]: an estimate (see docs/differences.md); SAMPLES 0 samples
/// every member.
fn memory_usage(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    reply((|| {
        let mut samples = 5u64;
        let mut j = 3;
        while j < argv.len() {
            if is(&argv[j], "samples") && j + 1 < argv.len() {
                let n = args::int(&argv[j + 1])?;
                if n < 0 {
                    return Err(err(errors::SYNTAX));
                }
                samples = n as u64;
                j += 2;
            } else {
                return Err(err(errors::SYNTAX));
            }
        }
        Ok(match db(ctx.session.db.memory_usage(&argv[2], samples))? {
            Some(n) => Frame::Integer(n.min(i64::MAX as u64) as i64),
            None => Frame::Null,
        })
    })())
}

fn memory_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    help_reply(
        "MEMORY",
        &[
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    )
}

/// A HELP reply in Redis's shape: a header line, the given lines, and the trailing HELP line.
pub fn help_reply(container: &str, lines: &[&str]) -> Frame {
    let mut out = vec![Frame::simple(format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ))];
    out.extend(lines.iter().map(|l| Frame::simple(l.to_string())));
    out.push(Frame::simple("HELP"));
    out.push(Frame::simple("    Print this help."));
    Frame::Array(out)
}
