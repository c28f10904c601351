//! Bitmap commands: GETBIT, SETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO, on
//! string values (a bitmap is a string, as in Redis). Each row of `COMMANDS` names its handler
//! below; handlers read their arguments with the cursor ([`Args`]) in Redis's order — which for
//! BITCOUNT and BITPOS means the key is looked at before some arguments are, so a missing key
//! answers even to bad ones — call `strata::Db`, and reply. The bit arithmetic is the data
//! model's (`strata`'s `bits` module).

use bytes::Bytes;
use strata::{
    BitOp, BitRange, BitUnit, BitfieldAction, BitfieldOp, BitfieldType, BitposRange, KeyType,
    Overflow,
};
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{syntax, Args, Failure, Reply};
use crate::errors;
use crate::notify::{GENERIC, STRING};
use crate::Ctx;

/// The bitmap family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "getbit",
        arity: Arity::Exactly(3),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::BITMAP),
        handler: Handler::Reply(getbit),
        docs: Docs {
            group: "bitmap",
            since: "2.2.0",
            complexity: "O(1)",
            summary: "Gives the bit at an offset of a string.",
            syntax: "key offset",
            tips: &[],
        },
    },
    CommandSpec {
        name: "setbit",
        arity: Arity::Exactly(4),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE, 1, 0, 1, 0),
        ],
        acl: Acl(acl::BITMAP),
        handler: Handler::Reply(setbit),
        docs: Docs {
            group: "bitmap",
            since: "2.2.0",
            complexity: "O(1)",
            summary: "Sets or clears the bit at an offset of a string, growing it as needed.",
            syntax: "key offset value:integer",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bitcount",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::BITMAP),
        handler: Handler::Reply(bitcount),
        docs: Docs {
            group: "bitmap",
            since: "2.6.0",
            complexity: "O(N)",
            summary: "Counts the set bits of a string, or of a range of its bytes or bits.",
            syntax: "key [index: start end [index_unit: BYTE | BIT]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bitpos",
        arity: Arity::AtLeast(3),
        flags: Flags(READONLY),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::BITMAP),
        handler: Handler::Reply(bitpos),
        docs: Docs {
            group: "bitmap",
            since: "2.8.7",
            complexity: "O(N)",
            summary: "Finds the first set or clear bit of a string, or of a range of it.",
            syntax: "key bit:integer [index: start [end_index: end [index_unit: BYTE | BIT]]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bitop",
        arity: Arity::AtLeast(4),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(2, -1, 1)),
        key_specs: &[
            KeySpec::range(OW | UPDATE, 2, 0, 1, 0),
            KeySpec::range(RO | ACCESS, 3, -1, 1, 0),
        ],
        acl: Acl(acl::BITMAP),
        handler: Handler::Reply(bitop),
        docs: Docs {
            group: "bitmap",
            since: "2.6.0",
            complexity: "O(N)",
            summary: "Stores the bitwise AND, OR, XOR or NOT of strings at a key.",
            syntax: "operation destkey:key key [key ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bitfield",
        arity: Arity::AtLeast(2),
        flags: Flags(WRITE | DENYOOM),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1, 0, 1, 0)
                .notes("This command allows both access and modification of the key")
                .resolve(bitfield_key_flags),
        ],
        acl: Acl(acl::BITMAP),
        handler: Handler::Reply(bitfield),
        docs: Docs {
            group: "bitmap",
            since: "3.2.0",
            complexity: "O(1) for each subcommand specified",
            summary: "Reads, writes and increments integer fields of any width in a string.",
            syntax: "key [operation: GET encoding offset | <write: [OVERFLOW <WRAP | SAT | FAIL>] <write_operation: SET encoding offset value:integer | INCRBY encoding offset increment>> ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "bitfield_ro",
        arity: Arity::AtLeast(2),
        flags: Flags(READONLY | FAST),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(RO | ACCESS, 1, 0, 1, 0),
        ],
        acl: Acl(acl::BITMAP),
        handler: Handler::Reply(bitfield_ro),
        docs: Docs {
            group: "bitmap",
            since: "6.0.0",
            complexity: "O(1) for each subcommand specified",
            summary: "Reads integer fields of any width in a string (BITFIELD's GET only).",
            syntax: "key [GET encoding offset [GET encoding offset ...]]",
            tips: &[],
        },
    },
];

/// BITFIELD's key: only read (RO, access) when every operation is a GET, else read and written,
/// as Redis's bitfieldGetKeys tells (which stops at the first write or unknown word).
fn bitfield_key_flags(argv: &[Bytes]) -> u16 {
    let mut i = 2;
    while i < argv.len() {
        let left = argv.len() - i - 1;
        let word = c_str(&argv[i]);
        if word.eq_ignore_ascii_case(b"get") && left >= 2 {
            i += 3;
        } else if word.eq_ignore_ascii_case(b"overflow") && left >= 1 {
            i += 2;
        } else {
            return RW | ACCESS | UPDATE;
        }
    }
    RO | ACCESS
}

/// An argument as C code that compares it with `strcasecmp` sees it: up to its first NUL byte.
fn c_str(a: &[u8]) -> &[u8] {
    a.iter().position(|&b| b == 0).map_or(a, |n| &a[..n])
}

/// The value `words` gives the argument (compared as `strcasecmp` does), if any.
fn c_word<T: Copy>(a: &[u8], words: &[(&str, T)]) -> Option<T> {
    let a = c_str(a);
    words
        .iter()
        .find(|(w, _)| a.eq_ignore_ascii_case(w.as_bytes()))
        .map(|(_, v)| *v)
}

/// BYTE, BIT.
const UNITS: [(&str, BitUnit); 2] = [("BYTE", BitUnit::Byte), ("BIT", BitUnit::Bit)];

/// A bit offset (Redis's getBitOffsetFromArgument): a non-negative integer addressing a bit
/// within proto-max-bulk-len bytes. With `width` (BITFIELD), `#N` stands for N times the width.
fn bit_offset(ctx: &Ctx<'_>, a: &[u8], width: Option<u8>) -> Result<u64, Failure> {
    let (digits, times) = match (a.split_first(), width) {
        (Some((&b'#', rest)), Some(w)) => (rest, w as i64),
        _ => (a, 1),
    };
    match strata::num::parse_i64(digits).map(|n| n.wrapping_mul(times)) {
        Some(n) if ctx.session.db.bit_offset_in_range(n) => Ok(n as u64),
        _ => Err(Failure::text(errors::BIT_OFFSET)),
    }
}

/// A reply for a key that may be missing, to arguments Redis reads only once the key is found
/// (BITCOUNT, BITPOS): `missing` when the key is absent, the arguments' error for a string,
/// WRONGTYPE for anything else.
fn after_lookup(ctx: &Ctx<'_>, key: &[u8], missing: i64, bad_args: Failure) -> Reply {
    match ctx.session.db.key_type(key)? {
        None => Ok(Frame::Integer(missing)),
        Some(KeyType::String) => Err(bad_args),
        Some(_) => Err(Failure::text(errors::WRONGTYPE)),
    }
}

fn getbit(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let offset = bit_offset(ctx, a.value()?, None)?;
    Ok(Frame::Integer(ctx.session.db.getbit(key, offset)? as i64))
}

fn setbit(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let offset = bit_offset(ctx, a.value()?, None)?;
    let on = match strata::num::parse_i64(a.value()?) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(Failure::text(errors::BIT_VALUE)),
    };
    let (old, changed) = ctx.session.db.setbit(key, offset, on)?;
    if changed {
        ctx.notify(STRING, "setbit", key);
    } else {
        ctx.session.unchanged.push(key.clone());
    }
    Ok(Frame::Integer(old as i64))
}

/// BITCOUNT's optional `start end [BYTE|BIT]`.
fn bitcount_range(a: &mut Args<'_>) -> Result<Option<BitRange>, Failure> {
    match a.remaining() {
        0 => return Ok(None),
        2 | 3 => {}
        _ => return Err(syntax()),
    }
    let (start, end) = (a.int()?, a.int()?);
    // Two negative offsets in the wrong order answer 0 before the unit is read.
    let answers_zero = start < 0 && end < 0 && start > end;
    let unit = if answers_zero || a.is_done() {
        BitUnit::Byte
    } else {
        c_word(a.value()?, &UNITS).ok_or_else(syntax)?
    };
    Ok(Some(BitRange { start, end, unit }))
}

fn bitcount(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    match bitcount_range(&mut a) {
        Ok(range) => Ok(Frame::Integer(ctx.session.db.bitcount(key, range)? as i64)),
        Err(bad) => after_lookup(ctx, key, 0, bad),
    }
}

/// BITPOS's optional `start [end [BYTE|BIT]]`, read in Redis's order: start, unit, end.
fn bitpos_range(a: &mut Args<'_>) -> Result<Option<BitposRange>, Failure> {
    let left = a.remaining();
    if left == 0 {
        return Ok(None);
    }
    if left > 3 {
        return Err(syntax());
    }
    let start = a.int()?;
    let end = a.value().ok();
    let unit = match a.value().ok() {
        Some(u) => c_word(u, &UNITS).ok_or_else(syntax)?,
        None => BitUnit::Byte,
    };
    let end = end.map(|e| crate::args::int(e)).transpose()?;
    Ok(Some(BitposRange { start, end, unit }))
}

fn bitpos(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let bit = match a.int()? {
        0 => false,
        1 => true,
        _ => return Err(Failure::text(errors::BIT_ARGUMENT)),
    };
    match bitpos_range(&mut a) {
        Ok(range) => Ok(Frame::Integer(ctx.session.db.bitpos(key, bit, range)?)),
        Err(bad) => after_lookup(ctx, key, if bit { -1 } else { 0 }, bad),
    }
}

/// AND, OR, XOR, NOT.
const BIT_OPS: [(&str, BitOp); 4] = [
    ("AND", BitOp::And),
    ("OR", BitOp::Or),
    ("XOR", BitOp::Xor),
    ("NOT", BitOp::Not),
];

fn bitop(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let op = c_word(a.value()?, &BIT_OPS).ok_or_else(syntax)?;
    let dest = a.key()?;
    let sources = a.rest();
    if op == BitOp::Not && sources.len() != 1 {
        return Err(Failure::text(errors::BITOP_NOT_ONE_KEY));
    }
    let keys: Vec<&[u8]> = sources.iter().map(|k| &k[..]).collect();
    let out = ctx.session.db.bitop(op, dest, &keys)?;
    if out.len > 0 {
        ctx.notify(STRING, "set", dest);
    } else if out.deleted {
        ctx.notify(GENERIC, "del", dest);
    } else {
        ctx.session.unchanged.push(dest.clone());
    }
    // Only the destination is written: WATCHes of the sources stay clean.
    for k in sources.iter().filter(|k| *k != dest) {
        ctx.session.unchanged.push(k.clone());
    }
    Ok(Frame::Integer(out.len as i64))
}

/// A BITFIELD type, `i1`..`i64` or `u1`..`u63` (its number read up to a NUL byte, as Redis's
/// `strlen` does).
fn bitfield_type(a: &[u8]) -> Result<BitfieldType, Failure> {
    let bad = || Failure::text(errors::BITFIELD_TYPE);
    let (signed, digits) = match a.split_first() {
        Some((&b'i', rest)) => (true, rest),
        Some((&b'u', rest)) => (false, rest),
        _ => return Err(bad()),
    };
    let bits = strata::num::parse_i64(c_str(digits)).ok_or_else(bad)?;
    u8::try_from(bits)
        .ok()
        .and_then(|b| BitfieldType::new(signed, b))
        .ok_or_else(bad)
}

/// WRAP, SAT, FAIL.
const OVERFLOWS: [(&str, Overflow); 3] = [
    ("WRAP", Overflow::Wrap),
    ("SAT", Overflow::Sat),
    ("FAIL", Overflow::Fail),
];

/// What a BITFIELD subcommand word starts.
#[derive(Clone, Copy)]
enum Sub {
    Get,
    Set,
    IncrBy,
    Overflow,
}

/// BITFIELD's operations, every one read before any is run (an error anywhere fails the whole
/// command): `GET type offset`, `SET type offset value`, `INCRBY type offset increment`, and
/// `OVERFLOW WRAP|SAT|FAIL` for the writes that follow it.
fn bitfield_ops(ctx: &Ctx<'_>, a: &mut Args<'_>) -> Result<Vec<BitfieldOp>, Failure> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    while !a.is_done() {
        let word = a.value()?;
        let left = a.remaining();
        let sub = c_word(
            word,
            &[
                ("GET", Sub::Get),
                ("SET", Sub::Set),
                ("INCRBY", Sub::IncrBy),
                ("OVERFLOW", Sub::Overflow),
            ],
        );
        let sub = match sub {
            Some(Sub::Get) if left >= 2 => Sub::Get,
            Some(s @ (Sub::Set | Sub::IncrBy)) if left >= 3 => s,
            Some(Sub::Overflow) if left >= 1 => {
                overflow = c_word(a.value()?, &OVERFLOWS)
                    .ok_or_else(|| Failure::text(errors::BITFIELD_OVERFLOW))?;
                continue;
            }
            _ => return Err(syntax()),
        };
        let ty = bitfield_type(a.value()?)?;
        let offset = bit_offset(ctx, a.value()?, Some(ty.bits()))?;
        let action = match sub {
            Sub::Set => BitfieldAction::Set {
                value: a.int()?,
                overflow,
            },
            Sub::IncrBy => BitfieldAction::IncrBy {
                increment: a.int()?,
                overflow,
            },
            _ => BitfieldAction::Get,
        };
        ops.push(BitfieldOp { ty, offset, action });
    }
    Ok(ops)
}

/// Runs parsed BITFIELD operations: one integer (or nil, for a write OVERFLOW FAIL refused) per
/// operation; `setbit` when a write changed the string.
fn run_bitfield(ctx: &mut Ctx<'_>, key: &Bytes, ops: &[BitfieldOp]) -> Reply {
    let out = ctx.session.db.bitfield(key, ops)?;
    if out.changed {
        ctx.notify(STRING, "setbit", key);
    } else {
        // A write OVERFLOW FAIL refused still creates the key (Redis adds it first): `new`.
        crate::notify::new_key(ctx, ctx.session.db.index(), key);
        ctx.session.unchanged.push(key.clone());
    }
    Ok(Frame::Array(
        out.values
            .into_iter()
            .map(|v| v.map_or(Frame::Null, Frame::Integer))
            .collect(),
    ))
}

fn bitfield(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let ops = bitfield_ops(ctx, &mut a)?;
    run_bitfield(ctx, key, &ops)
}

fn bitfield_ro(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let mut a = Args::new(argv);
    let key = a.key()?;
    let ops = bitfield_ops(ctx, &mut a)?;
    if ops.iter().any(|op| op.action != BitfieldAction::Get) {
        return Err(Failure::text(errors::BITFIELD_RO_GET_ONLY));
    }
    run_bitfield(ctx, key, &ops)
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    fn ints(values: &[i64]) -> Frame {
        Frame::Array(values.iter().map(|&v| Frame::Integer(v)).collect())
    }

    #[test]
    fn bitcount_and_bitpos_over_byte_and_bit_ranges() {
        let mut h = Harness::new();
        h.run(&["SET", "s", "foobar"]);
        assert_eq!(h.run(&["BITCOUNT", "s"]), Frame::Integer(26));
        assert_eq!(h.run(&["BITCOUNT", "s", "1", "1"]), Frame::Integer(6));
        assert_eq!(
            h.run(&["BITCOUNT", "s", "5", "30", "bit"]),
            Frame::Integer(17)
        );
        assert_eq!(
            h.run(&["BITCOUNT", "s", "-1", "-2", "nonsense"]),
            Frame::Integer(0)
        );
        assert_eq!(h.error(&["BITCOUNT", "s", "0"]), "ERR syntax error");
        assert_eq!(
            h.error(&["BITCOUNT", "s", "0", "1", "bits"]),
            "ERR syntax error"
        );
        assert_eq!(
            h.error(&["BITCOUNT", "s", "x", "1"]),
            "ERR value is not an integer or out of range"
        );
        // A missing key answers before its arguments are read.
        assert_eq!(h.run(&["BITCOUNT", "nokey", "x"]), Frame::Integer(0));
        assert_eq!(
            h.run(&["BITPOS", "nokey", "1", "x", "y", "z", "w"]),
            Frame::Integer(-1)
        );
        assert_eq!(h.run(&["BITPOS", "nokey", "0"]), Frame::Integer(0));
        assert_eq!(
            h.run(&["BITPOS", "s", "1", "2", "-1", "BIT"]),
            Frame::Integer(2)
        );
        assert_eq!(h.run(&["BITPOS", "s", "0", "-1"]), Frame::Integer(40));
        assert_eq!(
            h.error(&["BITPOS", "s", "2"]),
            "ERR The bit argument must be 1 or 0."
        );
        assert_eq!(
            h.error(&["BITPOS", "s", "1", "0", "x", "BOTH"]),
            "ERR syntax error"
        );
        h.run(&["RPUSH", "l", "a"]);
        assert_eq!(
            h.error(&["BITCOUNT", "l", "x"]),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
    }

    #[test]
    fn bitop_stores_or_deletes_the_destination() {
        let mut h = Harness::new();
        h.run(&["SET", "a", "\u{f}"]);
        h.run(&["SET", "d", "old"]);
        assert_eq!(
            h.run(&["BITOP", "or", "d", "a", "nokey"]),
            Frame::Integer(1)
        );
        assert_eq!(h.run(&["GET", "d"]), Frame::bulk("\u{f}"));
        assert_eq!(h.run(&["BITOP", "AND", "d", "nokey"]), Frame::Integer(0));
        assert_eq!(h.run(&["EXISTS", "d"]), Frame::Integer(0));
        assert_eq!(
            h.error(&["BITOP", "NOT", "d", "a", "a"]),
            "ERR BITOP NOT must be called with a single source key."
        );
        assert_eq!(h.error(&["BITOP", "NAND", "d", "a"]), "ERR syntax error");
    }

    #[test]
    fn bitfield_reads_writes_and_overflows() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&[
                "BITFIELD", "k", "SET", "u8", "#1", "255", "GET", "u8", "8", "INCRBY", "u8", "8",
                "1"
            ]),
            ints(&[0, 255, 0])
        );
        assert_eq!(
            h.run(&[
                "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "200", "OVERFLOW", "SAT",
                "INCRBY", "i8", "0", "200"
            ]),
            Frame::Array(vec![Frame::Null, Frame::Integer(127)])
        );
        assert_eq!(h.run(&["BITFIELD", "k"]), Frame::Array(vec![]));
        assert_eq!(
            h.error(&["BITFIELD", "k", "GET", "u64", "0"]),
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
        );
        assert_eq!(
            h.error(&["BITFIELD", "k", "OVERFLOW", "MAYBE"]),
            "ERR Invalid OVERFLOW type specified"
        );
        assert_eq!(h.error(&["BITFIELD", "k", "GET", "u8"]), "ERR syntax error");
        assert_eq!(
            h.error(&["BITFIELD", "k", "GET", "u8", "-1"]),
            "ERR bit offset is not an integer or out of range"
        );
        assert_eq!(h.run(&["BITFIELD_RO", "k", "GET", "i8", "0"]), ints(&[127]));
        assert_eq!(
            h.error(&["BITFIELD_RO", "k", "INCRBY", "i8", "0", "1"]),
            "ERR BITFIELD_RO only supports the GET subcommand"
        );
        assert_eq!(
            h.error(&["BITFIELD_RO", "k", "INCRBY", "i8", "0", "x"]),
            "ERR value is not an integer or out of range"
        );
    }

    #[test]
    fn bit_commands_run_inside_a_transaction() {
        let mut h = Harness::new();
        h.run(&["MULTI"]);
        h.run(&["SETBIT", "b", "7", "1"]);
        h.run(&["BITFIELD", "b", "INCRBY", "u4", "4", "3"]);
        h.run(&["BITCOUNT", "b"]);
        h.run(&["BITOP", "NOT", "c", "b"]);
        h.run(&["BITPOS", "c", "0"]);
        assert_eq!(
            h.run(&["EXEC"]),
            Frame::Array(vec![
                Frame::Integer(0),
                ints(&[4]),
                Frame::Integer(1),
                Frame::Integer(1),
                Frame::Integer(5),
            ])
        );
    }
}
