//! The `cmsgpack` library as Redis bundles it (lua-cmsgpack 0.4.0): `pack` encodes Lua values
//! as MessagePack with that library's choices (the smallest integer type for integral numbers,
//! float 32 when a number survives the round trip, else float 64; str 8/16/32 for strings;
//! sequences as arrays and other tables as maps; nil for anything else and for tables nested
//! deeper than 16), and `unpack`, `unpack_one` and `unpack_limit` decode a stream of values.

use mlua::{Lua, MultiValue, Table, Value};

use super::{as_number, c_double_to_i32, function, Args};

/// Tables nested deeper than this encode as nil (which also stops reference cycles).
const MAX_NESTING: usize = 16;

/// How deep decoding may nest before it gives up (deeper recursion could exhaust the stack).
const MAX_DECODE_NESTING: usize = 1000;

pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        function(lua, |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            if args.values.is_empty() {
                return Err(args.arg_error(0, "MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in &args.values {
                encode(v, 0, &mut out)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        function(lua, |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            unpack(&args, 0, 0)
        })?,
    )?;
    t.raw_set(
        "unpack_one",
        function(lua, |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            let offset = args.opt_integer(2, 0)? as i32;
            unpack(&args, 1, offset)
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        function(lua, |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            let limit = args.integer(2)? as i32;
            let offset = args.opt_integer(3, 0)? as i32;
            unpack(&args, limit, offset)
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

fn encode(v: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(_) | Value::Number(_) => encode_number(as_number(v).unwrap_or(0.0), out),
        Value::Table(t) if level < MAX_NESTING => encode_table(t, level, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_number(n: f64, out: &mut Vec<u8>) {
    let int_like = (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n)
        && (n as i64) as f64 == n;
    if int_like {
        encode_integer(n as i64, out);
    } else if f64::from(n as f32) == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_integer(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// A header for an array (`fix`, 16- and 32-bit markers) or a map of `n` entries.
fn encode_header(n: usize, fix: u8, marker16: u8, marker32: u8, out: &mut Vec<u8>) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(marker16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(marker32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Whether a table's keys are exactly 1..n (positive integral numbers, as many as the largest).
fn is_array(t: &Table) -> mlua::Result<bool> {
    let mut count: i64 = 0;
    let mut max: i64 = 0;
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair?;
        match as_number(&key) {
            Some(n) if n > 0.0 && f64::from(c_double_to_i32(n)) == n => {
                max = max.max(n as i64);
                count += 1;
            }
            _ => return Ok(false),
        }
    }
    Ok(max == count)
}

fn encode_table(t: &Table, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    if is_array(t)? {
        let len = t.raw_len();
        encode_header(len, 0x90, 0xdc, 0xdd, out);
        for i in 1..=len {
            let item: Value = t.raw_get(i)?;
            encode(&item, level + 1, out)?;
        }
    } else {
        // Counted first, then encoded pair by pair: holding every key and value at once would
        // take an interpreter reference for each.
        let mut count = 0;
        for pair in t.pairs::<Value, Value>() {
            pair?;
            count += 1;
        }
        encode_header(count, 0x80, 0xde, 0xdf, out);
        for pair in t.pairs::<Value, Value>() {
            let (key, item) = pair?;
            encode(&key, level + 1, out)?;
            encode(&item, level + 1, out)?;
        }
    }
    Ok(())
}

/// Decodes up to `limit` values from the input (argument 1) starting at byte `offset`; with
/// neither a limit nor an offset, all of them without the next offset in front.
fn unpack(args: &Args, limit: i32, offset: i32) -> mlua::Result<MultiValue> {
    let data = args.bytes(1)?;
    let decode_all = limit == 0 && offset == 0;
    let len = data.len();
    if offset < 0 || limit < 0 {
        // The C library reports the input length as the limit.
        return Err(args.error(format_args!(
            "Invalid request to unpack with offset of {offset} and limit of {len}."
        )));
    }
    let offset = offset as usize;
    if offset > len {
        return Err(args.error(format_args!(
            "Start offset {offset} greater than input length {len}."
        )));
    }
    let limit = if decode_all { i32::MAX } else { limit };
    let mut cur = Cursor {
        lua: args.lua,
        data: &data,
        pos: offset,
        depth: 0,
    };
    let mut values = Vec::new();
    let mut count = 0;
    while cur.pos < len && count < limit {
        match cur.value() {
            Ok(v) => values.push(v),
            Err(Failure::Eof) => return Err(args.error("Missing bytes in input.")),
            Err(Failure::BadFormat) => return Err(args.error("Bad data format in input.")),
            Err(Failure::Lua(e)) => return Err(e),
        }
        count += 1;
    }
    if !decode_all {
        let next = if cur.pos >= len { -1 } else { cur.pos as i64 };
        values.insert(0, Value::Integer(next));
    }
    Ok(MultiValue::from_iter(values))
}

enum Failure {
    Eof,
    BadFormat,
    Lua(mlua::Error),
}

impl From<mlua::Error> for Failure {
    fn from(e: mlua::Error) -> Self {
        Failure::Lua(e)
    }
}

struct Cursor<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Cursor<'_> {
    /// The next `n` bytes, consumed.
    fn take(&mut self, n: usize) -> Result<&[u8], Failure> {
        let end = self.pos.checked_add(n).ok_or(Failure::Eof)?;
        let bytes = self.data.get(self.pos..end).ok_or(Failure::Eof)?;
        self.pos = end;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> Result<u64, Failure> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn value(&mut self) -> Result<Value, Failure> {
        let marker = self.take(1)?[0];
        let number = |n: f64| Ok(Value::Number(n));
        match marker {
            0x00..=0x7f => number(f64::from(marker)),
            0x80..=0x8f => self.map(usize::from(marker & 0x0f)),
            0x90..=0x9f => self.array(usize::from(marker & 0x0f)),
            0xa0..=0xbf => self.string(usize::from(marker & 0x1f)),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Boolean(false)),
            0xc3 => Ok(Value::Boolean(true)),
            0xca => number(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => number(f64::from_bits(self.uint(8)?)),
            0xcc => number(self.uint(1)? as f64),
            0xcd => number(self.uint(2)? as f64),
            0xce => number(self.uint(4)? as f64),
            // The C library reads a uint 64 as a signed integer.
            0xcf => number(self.uint(8)? as i64 as f64),
            0xd0 => number(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => number(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => number(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => number(self.uint(8)? as i64 as f64),
            0xd9 => {
                let n = self.uint(1)? as usize;
                self.string(n)
            }
            0xda => {
                let n = self.uint(2)? as usize;
                self.string(n)
            }
            0xdb => {
                let n = self.uint(4)? as usize;
                self.string(n)
            }
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(n)
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(n)
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(n)
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(n)
            }
            0xe0..=0xff => number(f64::from(marker as i8)),
            _ => Err(Failure::BadFormat),
        }
    }

    fn string(&mut self, n: usize) -> Result<Value, Failure> {
        let lua = self.lua;
        let bytes = self.take(n)?;
        Ok(Value::String(lua.create_string(bytes)?))
    }

    fn descend(&mut self) -> Result<(), Failure> {
        self.depth += 1;
        if self.depth > MAX_DECODE_NESTING {
            return Err(Failure::Lua(super::error(
                "stack overflow (too many nested MessagePack structures)",
            )));
        }
        Ok(())
    }

    fn array(&mut self, n: usize) -> Result<Value, Failure> {
        self.descend()?;
        let t = self.lua.create_table()?;
        for i in 1..=n {
            let item = self.value()?;
            t.raw_set(i, item)?;
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }

    fn map(&mut self, n: usize) -> Result<Value, Failure> {
        self.descend()?;
        let t = self.lua.create_table()?;
        for _ in 0..n {
            let key = self.value()?;
            let item = self.value()?;
            match key {
                Value::Nil => return Err(Failure::Lua(super::plain_error("table index is nil"))),
                Value::Number(k) if k.is_nan() => {
                    return Err(Failure::Lua(super::plain_error("table index is NaN")))
                }
                key => t.raw_set(key, item)?,
            }
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }
}
