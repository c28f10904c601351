//! The `struct` library as Redis bundles it (Roberto Ierusalimschy's struct 0.2 with Redis's
//! bounds checks): `pack`, `unpack` and `size` convert between Lua values and binary records
//! described by a format string. Letters: `>` and `<` (byte order; native is little-endian),
//! `!n` (maximum alignment, 8 without n), `b B h H l L T i I` (signed lowercase, unsigned
//! uppercase; `i` and `I` take an optional size up to 32 bytes), `f d`, `s` (zero-terminated
//! string), `cN` (fixed-size string; `c0` takes its length from the string when packing and from
//! the previous value when unpacking), `x` (a zero byte) and spaces. The sizes and the
//! arithmetic are those of the C library on x86-64, overflows included.

use mlua::{Lua, MultiValue, Table, Value};

use super::{c_double_to_i64, function, Args};

const MAX_INT_SIZE: i64 = 32;
const MAX_ALIGN: i64 = 8;

pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        function(lua, |lua, args: MultiValue| {
            let mut args = Args::new(lua, args);
            args.bytes(1)?;
            // The C function pushes a nil after its arguments: a missing argument right after
            // the last one is "nil" in errors, the ones after it "no value".
            args.values.push(Value::Nil);
            pack(&args)
        })?,
    )?;
    t.raw_set(
        "unpack",
        function(lua, |lua, args: MultiValue| unpack(&Args::new(lua, args)))?,
    )?;
    t.raw_set(
        "size",
        function(lua, |lua, args: MultiValue| size(&Args::new(lua, args)))?,
    )?;
    Ok(t)
}

/// Byte order and maximum alignment.
struct Header {
    big_endian: bool,
    align: i64,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            big_endian: false,
            align: 1,
        }
    }
}

/// A format string being read; it ends at its end or at a NUL byte.
struct Format {
    bytes: Vec<u8>,
    pos: usize,
}

impl Format {
    fn next(&mut self) -> Option<u8> {
        let c = *self.bytes.get(self.pos).filter(|&&c| c != 0)?;
        self.pos += 1;
        Some(c)
    }

    /// A decimal number here, or `default` when there is none.
    fn number(&mut self, args: &Args, default: i64) -> mlua::Result<i64> {
        let digit = |f: &Self| f.bytes.get(f.pos).copied().filter(u8::is_ascii_digit);
        if digit(self).is_none() {
            return Ok(default);
        }
        let mut a: i64 = 0;
        while let Some(d) = digit(self) {
            let d = i64::from(d - b'0');
            if a > i64::from(i32::MAX) / 10 || a * 10 > i64::from(i32::MAX) - d {
                return Err(args.error("integral size overflow"));
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a)
    }

    /// The size of option `opt` (0 for options without one), reading its number if it has one.
    fn option_size(&mut self, args: &Args, opt: u8) -> mlua::Result<i64> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'f' => 4,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'c' => self.number(args, 1)?,
            b'i' | b'I' => {
                let size = self.number(args, 4)?;
                if size > MAX_INT_SIZE {
                    return Err(args.error(format_args!(
                        "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                size
            }
            _ => 0,
        })
    }

    /// Applies a control option (space, `>`, `<`, `!n`); anything else is an invalid option.
    fn control(&mut self, args: &Args, opt: u8, h: &mut Header) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.big_endian = true,
            b'<' => h.big_endian = false,
            b'!' => {
                let a = self.number(args, MAX_ALIGN)?;
                if a <= 0 || a & (a - 1) != 0 {
                    return Err(args.error(format_args!("alignment {a} is not a power of 2")));
                }
                h.align = a;
            }
            _ => {
                return Err(args.arg_error(
                    1,
                    format_args!("invalid format option '{}'", char::from(opt)),
                ))
            }
        }
        Ok(())
    }
}

/// The padding before an item of `size` bytes at offset `len`, computed as the C library does
/// (in `size_t`, returned as an `int`).
fn padding(len: u64, h: &Header, opt: u8, size: i64) -> i64 {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = (size.min(h.align)) as u64;
    let mask = size.wrapping_sub(1);
    i64::from((size.wrapping_sub(len & mask) & mask) as i32)
}

/// C's conversion of a double to an unsigned 64-bit integer on x86-64.
fn c_double_to_u64(n: f64) -> u64 {
    if n < 9_223_372_036_854_775_808.0 {
        c_double_to_i64(n) as u64
    } else if n < 18_446_744_073_709_551_616.0 {
        n as u64
    } else {
        0
    }
}

fn is_integer_option(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

fn pack(args: &Args) -> mlua::Result<mlua::LuaString> {
    let mut fmt = Format {
        bytes: args.bytes(1)?,
        pos: 0,
    };
    let mut h = Header::default();
    let mut arg = 2;
    let mut total: u64 = 0;
    let mut out = Vec::new();
    while let Some(opt) = fmt.next() {
        let mut size = fmt.option_size(args, opt)?;
        let pad = padding(total, &h, opt, size);
        total = total.wrapping_add(pad as u64);
        out.resize(out.len() + pad.max(0) as usize, 0);
        match opt {
            _ if is_integer_option(opt) => {
                let n = args.number(arg)?;
                arg += 1;
                let mut value = if n < 0.0 {
                    c_double_to_i64(n) as u64
                } else {
                    c_double_to_u64(n)
                };
                let mut bytes = vec![0u8; size as usize];
                for b in bytes.iter_mut() {
                    *b = value as u8;
                    value >>= 8;
                }
                if h.big_endian {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = args.number(arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if h.big_endian {
                    f.to_be_bytes()
                } else {
                    f.to_le_bytes()
                });
            }
            b'd' => {
                let d = args.number(arg)?;
                arg += 1;
                out.extend_from_slice(&if h.big_endian {
                    d.to_be_bytes()
                } else {
                    d.to_le_bytes()
                });
            }
            b'c' | b's' => {
                let s = args.bytes(arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len() as i64;
                }
                let Some(part) = s.get(..size as usize) else {
                    return Err(args.arg_error(arg, "string too short"));
                };
                out.extend_from_slice(part);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => fmt.control(args, opt, &mut h)?,
        }
        total = total.wrapping_add(size as u64);
    }
    args.lua.create_string(&out)
}

/// An integer of `bytes.len()` bytes, as the C library builds it in 64 bits.
fn get_integer(bytes: &[u8], big_endian: bool, signed: bool) -> f64 {
    let fold = |acc: u64, &b: &u8| (acc << 8) | u64::from(b);
    let value = if big_endian {
        bytes.iter().fold(0, fold)
    } else {
        bytes.iter().rev().fold(0, fold)
    };
    if !signed {
        return value as f64;
    }
    let mask = u64::MAX.wrapping_shl((bytes.len() as i64 * 8 - 1) as u32);
    let value = if value & mask != 0 {
        value | mask
    } else {
        value
    };
    value as i64 as f64
}

fn unpack(args: &Args) -> mlua::Result<MultiValue> {
    let mut fmt = Format {
        bytes: args.bytes(1)?,
        pos: 0,
    };
    let data = args.bytes(2)?;
    let ld = data.len() as u64;
    let start = args.opt_integer(3, 1)? as u64;
    if start == 0 {
        return Err(args.arg_error(3, "offset must be 1 or greater"));
    }
    let mut pos = start - 1;
    let mut h = Header::default();
    let mut values: Vec<Value> = Vec::new();
    let too_short = || args.arg_error(2, "data string too short");
    let fits = |pos: u64, size: u64| size <= ld && pos <= ld - size;
    while let Some(opt) = fmt.next() {
        let mut size = fmt.option_size(args, opt)? as u64;
        pos = pos.wrapping_add(padding(pos, &h, opt, size as i64) as u64);
        if !fits(pos, size) {
            return Err(too_short());
        }
        // `fits` guarantees pos..pos + size is inside the data.
        let at = pos as usize;
        match opt {
            _ if is_integer_option(opt) => {
                let bytes = &data[at..at + size as usize];
                values.push(Value::Number(get_integer(
                    bytes,
                    h.big_endian,
                    opt.is_ascii_lowercase(),
                )));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[at..at + 4]);
                let f = if h.big_endian {
                    f32::from_be_bytes(b)
                } else {
                    f32::from_le_bytes(b)
                };
                values.push(Value::Number(f64::from(f)));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[at..at + 8]);
                let d = if h.big_endian {
                    f64::from_be_bytes(b)
                } else {
                    f64::from_le_bytes(b)
                };
                values.push(Value::Number(d));
            }
            b'c' => {
                if size == 0 {
                    let previous = values
                        .last()
                        .cloned()
                        .and_then(|v| args.lua.coerce_number(v).ok().flatten());
                    let Some(n) = previous else {
                        return Err(args.error("format 'c0' needs a previous size"));
                    };
                    values.pop();
                    size = c_double_to_u64(n);
                    if !fits(pos, size) {
                        return Err(too_short());
                    }
                }
                let s = args.lua.create_string(&data[at..at + size as usize])?;
                values.push(Value::String(s));
            }
            b's' => {
                let Some(len) = data[at..].iter().position(|&b| b == 0) else {
                    return Err(args.error("unfinished string in data"));
                };
                size = len as u64 + 1;
                let s = args.lua.create_string(&data[at..at + len])?;
                values.push(Value::String(s));
            }
            _ => fmt.control(args, opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    values.push(Value::Integer(pos.wrapping_add(1) as i64));
    Ok(MultiValue::from_iter(values))
}

fn size(args: &Args) -> mlua::Result<i64> {
    let mut fmt = Format {
        bytes: args.bytes(1)?,
        pos: 0,
    };
    let mut h = Header::default();
    let mut pos: u64 = 0;
    while let Some(opt) = fmt.next() {
        let size = fmt.option_size(args, opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size) as u64);
        if opt == b's' {
            return Err(args.arg_error(1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(args.arg_error(1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            fmt.control(args, opt, &mut h)?;
        }
        pos = pos.wrapping_add(size as u64);
    }
    Ok(pos as i64)
}
