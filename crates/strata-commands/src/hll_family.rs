//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST. An HLL is a string holding
//! Redis's exact bytes (`strata::hll`); each handler reads its arguments with the cursor, calls
//! `strata::Db`, and replies as Redis 7.0's `hyperloglog.c` does, with its keyspace events
//! (`pfadd` for PFADD when it changed something and for PFMERGE; none for PFDEBUG).

use bytes::Bytes;
use strata::{HllDebug, HllDebugReply};
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{Args, Failure, Reply};
use crate::errors;
use crate::notify::STRING;
use crate::{Ctx, Hold};

/// The HyperLogLog family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "pfadd",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | DENYOOM | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[KeySpec::range(RW | INSERT, 1, 0, 1, 0)],
        acl: Acl(acl::HYPERLOGLOG),
        handler: Handler::Reply(pfadd),
        docs: Docs {
            group: "hyperloglog",
            since: "2.8.9",
            complexity: "O(1) to add every element.",
            summary: "Adds the specified elements to the specified HyperLogLog.",
            syntax: "key [element [element ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pfcount",
        arity: Arity::AtLeast(2),
        // Not a write, but counting one key stores the cardinality in its cache (and that
        // write replicates): `may_replicate`, so read-only scripts may not call it. The key is
        // held shared unless the cache must be stored (`shared_first`).
        flags: Flags(READONLY | MAY_REPLICATE | SHARED_FIRST),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[KeySpec::range(RW | ACCESS, 1, -1, 1, 0).notes(
            "RW because it may change the internal representation of the key, and propagate to replicas",
        )],
        acl: Acl(acl::HYPERLOGLOG),
        handler: Handler::Reply(pfcount),
        docs: Docs {
            group: "hyperloglog",
            since: "2.8.9",
            complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
            summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
            syntax: "key [key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pfmerge",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | INSERT, 1, 0, 1, 0),
            KeySpec::range(RO | ACCESS, 2, -1, 1, 0),
        ],
        acl: Acl(acl::HYPERLOGLOG),
        handler: Handler::Reply(pfmerge),
        docs: Docs {
            group: "hyperloglog",
            since: "2.8.9",
            complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
            summary: "Merge N different HyperLogLogs into a single one.",
            syntax: "destkey:key sourcekey:key [sourcekey:key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pfdebug",
        arity: Arity::Exactly(3),
        flags: Flags(WRITE | DENYOOM | ADMIN),
        keys: Keys::Range(Range::new(2, 2, 1)),
        key_specs: &[KeySpec::range(RW | ACCESS, 2, 0, 1, 0)],
        acl: Acl(acl::HYPERLOGLOG),
        handler: Handler::Reply(pfdebug),
        docs: Docs {
            group: "hyperloglog",
            since: "2.8.9",
            complexity: "N/A",
            summary: "Internal commands for debugging HyperLogLog values",
            syntax: "subcommand:string key",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pfselftest",
        arity: Arity::Exactly(1),
        flags: Flags(ADMIN),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl(acl::HYPERLOGLOG),
        handler: Handler::Reply(pfselftest),
        docs: Docs {
            group: "hyperloglog",
            since: "2.8.9",
            complexity: "N/A",
            summary: "An internal command for testing HyperLogLog values",
            syntax: "",
            tips: &[],
        },
    },
];

fn pfadd(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    // One element per call is the common case: the element list goes on the stack.
    let rest = a.rest();
    let mut few: [&[u8]; 4] = [&[]; 4];
    let many: Vec<&[u8]>;
    let elements: &[&[u8]] = if rest.len() <= few.len() {
        for (slot, e) in few.iter_mut().zip(rest) {
            *slot = e;
        }
        &few[..rest.len()]
    } else {
        many = rest.iter().map(|e| &e[..]).collect();
        &many
    };
    let updated = ctx.session.db.pfadd(key, elements)?;
    if updated {
        ctx.notify(STRING, "pfadd", key);
    } else {
        // A copy of the key's bytes, not a handle on the request's: cloning the decoder's
        // argument allocates its shared header and makes both handles' drops atomic.
        ctx.session.unchanged.push(Bytes::copy_from_slice(key));
    }
    Ok(Frame::Integer(updated as i64))
}

fn pfcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    // Holding its key shared, a count that needs no write answers; one that must store the
    // cache asks to run again holding the key exclusively.
    if let ([_, key], Hold::Shared) = (argv, ctx.session.hold) {
        return match ctx.session.db.pfcount_without_writing(key)? {
            Some(card) => Ok(Frame::Integer(card as i64)),
            None => {
                ctx.session.hold = Hold::WantsExclusive;
                Ok(Frame::Null)
            }
        };
    }
    let keys = Args::new(argv).rest_slices();
    let (card, refreshed) = ctx.session.db.pfcount_refreshing(&keys)?;
    if refreshed {
        // Redis signals the key modified when PFCOUNT rewrites its cache (a WATCH sees it).
        ctx.server.watches().touch(ctx.session.db.index(), &argv[1]);
    }
    Ok(Frame::Integer(card as i64))
}

fn pfmerge(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let dest = a.key()?;
    let sources = a.rest_slices();
    ctx.session.db.pfmerge(dest, &sources)?;
    // Only the destination is signalled modified (WATCH), as in Redis.
    for src in &argv[2..] {
        if src != dest {
            ctx.session.unchanged.push(src.clone());
        }
    }
    // Redis raises `pfadd` for PFMERGE: in effect a mass add.
    ctx.notify(STRING, "pfadd", dest);
    Ok(Frame::simple("OK"))
}

fn pfdebug(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let sub = a.value()?;
    let key = a.key()?;
    let op = [
        ("GETREG", HllDebug::GetReg),
        ("DECODE", HllDebug::Decode),
        ("ENCODING", HllDebug::Encoding),
        ("TODENSE", HllDebug::ToDense),
    ]
    .iter()
    .find(|(w, _)| sub.eq_ignore_ascii_case(w.as_bytes()))
    .map(|(_, op)| *op);
    // Redis changes the value (GETREG and TODENSE of a sparse HLL) without signalling it.
    ctx.session.unchanged.push(key.clone());
    // The key is looked up and checked before the subcommand is: ENCODING only reads.
    let found = ctx
        .session
        .db
        .pfdebug(key, op.unwrap_or(HllDebug::Encoding))?;
    let Some(found) = found else {
        return Err(Failure::text(errors::PFDEBUG_NO_KEY));
    };
    if op.is_none() {
        return Err(Failure::text(errors::pfdebug_unknown(sub)));
    }
    Ok(match found {
        HllDebugReply::Registers(r) => {
            Frame::Array(r.into_iter().map(|v| Frame::Integer(v.into())).collect())
        }
        HllDebugReply::Decoded(Some(text)) => Frame::bulk(text),
        HllDebugReply::Decoded(None) => return Err(Failure::text(errors::PFDEBUG_NOT_SPARSE)),
        HllDebugReply::Encoding(e) => Frame::simple(e.name()),
        HllDebugReply::ToDense(converted) => Frame::Integer(converted as i64),
    })
}

fn pfselftest(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    let max = usize::try_from(ctx.session.db.hll_sparse_max_bytes()).unwrap_or(usize::MAX);
    match strata::hll::self_test(max, strata::now_ms()) {
        Ok(()) => Ok(Frame::simple("OK")),
        Err(text) => Err(Failure::text(format!("ERR {text}"))),
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use strata_resp::Frame;

    fn int(n: i64) -> Frame {
        Frame::Integer(n)
    }

    fn bytes(h: &mut Harness, key: &str) -> Vec<u8> {
        match h.run(&["GET", key]) {
            Frame::Bulk(b) => b.to_vec(),
            other => panic!("GET {key}: {other:?}"),
        }
    }

    #[test]
    fn pfadd_pfcount_and_the_bytes_get_returns() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["PFADD", "h"]), int(1));
        assert_eq!(h.run(&["PFADD", "h"]), int(0));
        assert_eq!(
            bytes(&mut h, "h"),
            b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff".to_vec()
        );
        assert_eq!(h.run(&["PFADD", "h", "a", "b", "c"]), int(1));
        assert_eq!(h.run(&["PFADD", "h", "a"]), int(0));
        assert_eq!(h.run(&["PFCOUNT", "h"]), int(3));
        assert_eq!(&bytes(&mut h, "h")[8..16], &[3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(h.run(&["PFCOUNT", "h", "nosuch"]), int(3));
        assert_eq!(h.run(&["PFCOUNT", "nosuch"]), int(0));
        assert_eq!(
            h.run(&["STRLEN", "h"]),
            int(bytes(&mut h, "h").len() as i64)
        );
    }

    #[test]
    fn pfmerge_and_pfdebug() {
        let mut h = Harness::new();
        h.run(&["PFADD", "a", "x", "y"]);
        h.run(&["PFADD", "b", "y", "z"]);
        assert_eq!(h.run(&["PFMERGE", "m", "a", "b"]), Frame::simple("OK"));
        assert_eq!(h.run(&["PFCOUNT", "m"]), int(3));
        assert_eq!(
            h.run(&["PFDEBUG", "ENCODING", "m"]),
            Frame::simple("sparse")
        );
        assert_eq!(h.run(&["PFDEBUG", "todense", "m"]), int(1));
        assert_eq!(h.run(&["PFDEBUG", "TODENSE", "m"]), int(0));
        assert_eq!(h.run(&["PFDEBUG", "ENCODING", "m"]), Frame::simple("dense"));
        assert_eq!(
            h.error(&["PFDEBUG", "DECODE", "m"]),
            "ERR HLL encoding is not sparse"
        );
        match h.run(&["PFDEBUG", "GETREG", "m"]) {
            Frame::Array(r) => assert_eq!(r.len(), 16384),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            h.error(&["PFDEBUG", "GETREG", "nosuch"]),
            "ERR The specified key does not exist"
        );
        assert_eq!(
            h.error(&["PFDEBUG", "what", "m"]),
            "ERR Unknown PFDEBUG subcommand 'what'"
        );
        assert_eq!(
            h.error(&["PFDEBUG", "what", "nosuch"]),
            "ERR The specified key does not exist"
        );
    }

    #[test]
    fn wrong_types_and_corrupted_values() {
        let mut h = Harness::new();
        h.run(&["SET", "s", "hello"]);
        h.run(&["LPUSH", "l", "x"]);
        let not_hll = "WRONGTYPE Key is not a valid HyperLogLog string value.";
        assert_eq!(h.error(&["PFADD", "s", "a"]), not_hll);
        assert_eq!(h.error(&["PFCOUNT", "s"]), not_hll);
        assert_eq!(h.error(&["PFMERGE", "d", "s"]), not_hll);
        assert_eq!(h.error(&["PFDEBUG", "ENCODING", "s"]), not_hll);
        assert!(h
            .error(&["PFADD", "l", "a"])
            .starts_with("WRONGTYPE Operation"));
        assert!(h
            .error(&["PFCOUNT", "h", "l"])
            .starts_with("WRONGTYPE Operation"));
        // A sparse HLL whose opcodes cover too few registers, with a valid cache of 0: PFCOUNT
        // of the key alone trusts the cache, as Redis does; everything else reads registers.
        h.run(&["SET", "c", "HYLL\u{1}\0\0\0\0\0\0\0\0\0\0\0\u{7f}\u{10}"]);
        let corrupt = "INVALIDOBJ Corrupted HLL object detected";
        assert_eq!(h.run(&["PFCOUNT", "c"]), int(0));
        // "a" lands in register 12711, which the opcodes reach: the add works (and invalidates
        // the cache).
        assert_eq!(h.run(&["PFADD", "c", "a"]), int(1));
        assert_eq!(h.error(&["PFCOUNT", "c"]), corrupt);
        assert_eq!(h.error(&["PFCOUNT", "c", "c"]), corrupt);
        assert_eq!(h.error(&["PFMERGE", "d", "c"]), corrupt);
        assert_eq!(h.error(&["PFDEBUG", "TODENSE", "c"]), corrupt);
    }

    #[test]
    fn pfcount_of_a_valid_cache_runs_while_another_holds_the_key_shared() {
        let mut h = Harness::new();
        h.run(&["PFADD", "h", "a", "b"]);
        // Stores the cache (run again holding the key exclusively).
        assert_eq!(h.run(&["PFCOUNT", "h"]), int(2));
        assert_eq!(&bytes(&mut h, "h")[8..16], &[2, 0, 0, 0, 0, 0, 0, 0]);
        let db = h.db().clone();
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let scope = db.hold_unless_busy([(0, &b"h"[..])], false);
            let _ = held_tx.send(());
            // A PFCOUNT that took the key exclusively would wait for this scope, which ends
            // when the count is done or, failing that, after a minute.
            let counted_meanwhile = done_rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .is_ok();
            drop(scope);
            counted_meanwhile
        });
        assert_eq!(held_rx.recv(), Ok(()));
        assert_eq!(h.run(&["PFCOUNT", "h"]), int(2));
        let _ = done_tx.send(());
        assert_eq!(
            reader.join().ok(),
            Some(true),
            "PFCOUNT waited for a reader"
        );
    }

    #[test]
    fn pf_commands_work_in_multi_exec() {
        let mut h = Harness::new();
        h.run(&["MULTI"]);
        h.run(&["PFADD", "h", "a", "b"]);
        h.run(&["PFCOUNT", "h"]);
        h.run(&["PFMERGE", "m", "h"]);
        h.run(&["PFCOUNT", "m"]);
        assert_eq!(
            h.run(&["EXEC"]),
            Frame::Array(vec![int(1), int(2), Frame::simple("OK"), int(2)])
        );
        assert_eq!(h.run(&["PFCOUNT", "h", "m"]), int(2));
        // The transaction's PFCOUNTs stored the caches, as Redis's do.
        assert_eq!(&bytes(&mut h, "h")[8..16], &[2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes(&mut h, "m")[8..16], &[2, 0, 0, 0, 0, 0, 0, 0]);
    }
}
