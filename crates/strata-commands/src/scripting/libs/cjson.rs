//! The `cjson` library as Redis bundles it (Lua CJSON 2.1.0): `encode` turns Lua values into
//! JSON text and `decode` parses JSON into Lua values, with the same number formatting, escaping,
//! array detection, error texts and configuration functions. JSON `null` is a NULL light
//! userdata, `cjson.null`. The settings live in each library instance (`cjson.new()` makes one
//! with the defaults), so a script that changes them changes them for later scripts too, as in
//! Redis.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use super::{as_number, c_double_to_i32, format_g, function, type_name, Args};

/// How deep encoding and decoding may nest whatever the settings say: deeper recursion could
/// exhaust the thread's stack.
const HARD_DEPTH_LIMIT: i32 = 1000;

#[derive(Clone)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    precision: i32,
    keep_buffer: bool,
    /// 0 "off" (error), 1 "on" (inf/nan), 2 "null".
    encode_invalid: i32,
    decode_invalid: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            keep_buffer: true,
            encode_invalid: 0,
            decode_invalid: true,
        }
    }
}

type Shared = Rc<RefCell<Config>>;

/// JSON null: a NULL light userdata.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// A new `cjson` table with default settings.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let cfg: Shared = Rc::new(RefCell::new(Config::default()));
    let t = lua.create_table()?;
    let c = cfg.clone();
    t.raw_set(
        "encode",
        function(lua, move |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            if args.len() != 1 {
                return Err(args.arg_error(1, "expected 1 argument"));
            }
            let cfg = c.borrow().clone();
            let mut out = Vec::new();
            let value = args.get(1).cloned().unwrap_or(Value::Nil);
            Encoder {
                args: &args,
                cfg: &cfg,
            }
            .value(&value, 0, &mut out)?;
            lua.create_string(&out)
        })?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "decode",
        function(lua, move |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            if args.len() != 1 {
                return Err(args.arg_error(1, "expected 1 argument"));
            }
            let data = args.bytes(1)?;
            let cfg = c.borrow().clone();
            decode(&args, &cfg, &data)
        })?,
    )?;
    let integer_setting =
        |min: i32, max: i32, field: fn(&mut Config) -> &mut i32| -> mlua::Result<mlua::Function> {
            let c = cfg.clone();
            function(lua, move |lua, args: MultiValue| {
                let args = Args::new(lua, args);
                check_count(&args, 1)?;
                let mut cfg = c.borrow_mut();
                integer_option(&args, 1, field(&mut cfg), min, max).map(Value::Integer)
            })
        };
    t.raw_set(
        "encode_max_depth",
        integer_setting(1, i32::MAX, |c| &mut c.encode_max_depth)?,
    )?;
    t.raw_set(
        "decode_max_depth",
        integer_setting(1, i32::MAX, |c| &mut c.decode_max_depth)?,
    )?;
    t.raw_set(
        "encode_number_precision",
        integer_setting(1, 14, |c| &mut c.precision)?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "encode_sparse_array",
        function(lua, move |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            check_count(&args, 3)?;
            let mut cfg = c.borrow_mut();
            let mut convert = i32::from(cfg.sparse_convert);
            let convert = enum_option(lua, &args, 1, &mut convert, &["off", "on"])?;
            cfg.sparse_convert = convert == Value::Boolean(true);
            let ratio = integer_option(&args, 2, &mut cfg.sparse_ratio, 0, i32::MAX)?;
            let safe = integer_option(&args, 3, &mut cfg.sparse_safe, 0, i32::MAX)?;
            Ok((convert, ratio, safe))
        })?,
    )?;
    let bool_setting = |field: fn(&mut Config) -> &mut bool| -> mlua::Result<mlua::Function> {
        let c = cfg.clone();
        function(lua, move |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            check_count(&args, 1)?;
            let mut cfg = c.borrow_mut();
            let slot = field(&mut cfg);
            let mut setting = i32::from(*slot);
            let result = enum_option(lua, &args, 1, &mut setting, &["off", "on"])?;
            *slot = setting != 0;
            Ok(result)
        })
    };
    t.raw_set("encode_keep_buffer", bool_setting(|c| &mut c.keep_buffer)?)?;
    t.raw_set(
        "decode_invalid_numbers",
        bool_setting(|c| &mut c.decode_invalid)?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "encode_invalid_numbers",
        function(lua, move |lua, args: MultiValue| {
            let args = Args::new(lua, args);
            check_count(&args, 1)?;
            let mut cfg = c.borrow_mut();
            enum_option(
                lua,
                &args,
                1,
                &mut cfg.encode_invalid,
                &["off", "on", "null"],
            )
        })?,
    )?;
    t.raw_set("new", function(lua, |lua, _: MultiValue| library(lua))?)?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// A configuration function takes at most `max` arguments.
fn check_count(args: &Args, max: usize) -> mlua::Result<()> {
    if args.len() > max {
        Err(args.arg_error(max + 1, "found too many arguments"))
    } else {
        Ok(())
    }
}

/// Sets `*setting` from argument `n` unless it is nil (an integer in `min..=max`); returns the
/// setting.
fn integer_option(
    args: &Args,
    n: usize,
    setting: &mut i32,
    min: i32,
    max: i32,
) -> mlua::Result<i64> {
    if !args.is_nil(n) {
        // The C library stores luaL_checkinteger's result in an int.
        let value = args.integer(n)? as i32;
        if value < min || value > max {
            return Err(args.arg_error(1, format_args!("expected integer between {min} and {max}")));
        }
        *setting = value;
    }
    Ok(i64::from(*setting))
}

/// Sets `*setting` from argument `n` unless it is nil: a boolean (0 or 1), or the index of one
/// of `options`; returns the setting as a boolean when it is 0 or 1, else as its option name.
fn enum_option(
    lua: &Lua,
    args: &Args,
    n: usize,
    setting: &mut i32,
    options: &[&str],
) -> mlua::Result<Value> {
    match args.get(n) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = i32::from(*b),
        Some(_) => {
            let name = args.bytes(n)?;
            match options.iter().position(|o| o.as_bytes() == name.as_slice()) {
                Some(i) => *setting = i as i32,
                None => {
                    return Err(args.arg_error(
                        n,
                        format_args!("invalid option '{}'", String::from_utf8_lossy(&name)),
                    ))
                }
            }
        }
    }
    Ok(match *setting {
        0 => Value::Boolean(false),
        1 => Value::Boolean(true),
        i => Value::String(lua.create_string(options.get(i as usize).copied().unwrap_or(""))?),
    })
}

struct Encoder<'a, 'b> {
    args: &'a Args<'b>,
    cfg: &'a Config,
}

impl Encoder<'_, '_> {
    fn exception(&self, v: &Value, reason: &str) -> mlua::Error {
        self.args
            .error(format_args!("Cannot serialise {}: {reason}", type_name(v)))
    }

    fn value(&self, v: &Value, depth: i32, out: &mut Vec<u8>) -> mlua::Result<()> {
        match v {
            Value::String(s) => append_string(&s.as_bytes(), out),
            Value::Integer(_) | Value::Number(_) => self.number(v, out)?,
            Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Nil => out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
            Value::Table(t) => {
                let depth = depth + 1;
                if depth > self.cfg.encode_max_depth || depth > HARD_DEPTH_LIMIT {
                    return Err(self.args.error(format_args!(
                        "Cannot serialise, excessive nesting ({depth})"
                    )));
                }
                let len = self.array_length(v, t)?;
                if len > 0 {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: Value = t.raw_get(i)?;
                        self.value(&item, depth, out)?;
                    }
                    out.push(b']');
                } else {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.pairs::<Value, Value>() {
                        let (key, item) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &key {
                            Value::Integer(_) | Value::Number(_) => {
                                out.push(b'"');
                                self.number(&key, out)?;
                                out.extend_from_slice(b"\":");
                            }
                            Value::String(s) => {
                                append_string(&s.as_bytes(), out);
                                out.push(b':');
                            }
                            _ => {
                                return Err(
                                    self.exception(&key, "table key must be a number or string")
                                )
                            }
                        }
                        self.value(&item, depth, out)?;
                    }
                    out.push(b'}');
                }
            }
            _ => return Err(self.exception(v, "type not supported")),
        }
        Ok(())
    }

    /// The length of the array a table encodes as, or -1 (or 0) when it encodes as an object.
    fn array_length(&self, v: &Value, t: &Table) -> mlua::Result<i32> {
        let mut max: i32 = 0;
        let mut items: i64 = 0;
        for pair in t.pairs::<Value, Value>() {
            let (key, _) = pair?;
            match as_number(&key) {
                Some(k) if k.floor() == k && k >= 1.0 => {
                    // The C library keeps the maximum in an int.
                    if k > f64::from(max) {
                        max = c_double_to_i32(k);
                    }
                    items += 1;
                }
                _ => return Ok(-1),
            }
        }
        let cfg = self.cfg;
        if cfg.sparse_ratio > 0
            && i64::from(max) > items * i64::from(cfg.sparse_ratio)
            && max > cfg.sparse_safe
        {
            if !cfg.sparse_convert {
                return Err(self.exception(v, "excessively sparse array"));
            }
            return Ok(-1);
        }
        Ok(max)
    }

    fn number(&self, v: &Value, out: &mut Vec<u8>) -> mlua::Result<()> {
        let n = as_number(v).unwrap_or(0.0);
        if !n.is_finite() {
            match self.cfg.encode_invalid {
                0 => return Err(self.exception(v, "must not be NaN or Inf")),
                1 => {
                    let text: &[u8] = if n.is_nan() {
                        b"nan"
                    } else if n < 0.0 {
                        b"-inf"
                    } else {
                        b"inf"
                    };
                    out.extend_from_slice(text);
                }
                _ => out.extend_from_slice(b"null"),
            }
            return Ok(());
        }
        out.extend_from_slice(format_g(n, self.cfg.precision as usize).as_bytes());
        Ok(())
    }
}

/// A JSON string literal for `s`: quotes, backslash, slash and control characters escaped,
/// other bytes (UTF-8 or not) copied.
fn append_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(what) => what,
        }
    }
}

fn decode(args: &Args, cfg: &Config, data: &[u8]) -> mlua::Result<Value> {
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(args.error("JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut p = Parser {
        args,
        cfg,
        data,
        pos: 0,
        depth: 0,
    };
    let (token, index) = p.next_token();
    let value = p.value(token, index)?;
    let (token, index) = p.next_token();
    if !matches!(token, Token::End) {
        return Err(p.parse_error("the end", &token, index));
    }
    Ok(value)
}

struct Parser<'a, 'b> {
    args: &'a Args<'b>,
    cfg: &'a Config,
    data: &'a [u8],
    pos: usize,
    depth: i32,
}

impl Parser<'_, '_> {
    /// The byte at `i`, or 0 past the end (the C library reads a NUL-terminated string).
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn parse_error(&self, expected: &str, token: &Token, index: usize) -> mlua::Error {
        self.args.error(format_args!(
            "Expected {expected} but found {} at character {}",
            token.name(),
            index + 1
        ))
    }

    /// The next token and the offset where it starts (for errors: where the error was found).
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\r' | b'\n') {
            self.pos += 1;
        }
        let start = self.pos;
        let ch = self.at(start);
        let single = match ch {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            0 => return (Token::End, start),
            _ => None,
        };
        if let Some(token) = single {
            self.pos += 1;
            return (token, start);
        }
        let rest = &self.data[start..];
        if ch == b'"' {
            return self.string_token();
        }
        if ch == b'-' || ch.is_ascii_digit() {
            if !self.cfg.decode_invalid && self.is_invalid_number() {
                return (Token::Error("invalid number"), start);
            }
            return self.number_token();
        }
        for (word, token) in [
            (&b"true"[..], Token::Bool(true)),
            (b"false", Token::Bool(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return (token, start);
            }
        }
        if self.cfg.decode_invalid && self.is_invalid_number() {
            return self.number_token();
        }
        (Token::Error("invalid token"), start)
    }

    /// Whether the number text here is one JSON forbids: a leading '+' or zero, hex, inf, nan.
    fn is_invalid_number(&self) -> bool {
        let mut i = self.pos;
        match self.at(i) {
            b'+' => return true,
            b'-' => i += 1,
            _ => {}
        }
        let ch = self.at(i);
        if ch == b'0' {
            let next = self.at(i + 1);
            return next | 0x20 == b'x' || next.is_ascii_digit();
        }
        if ch <= b'9' {
            return false;
        }
        let word = self.data.get(i..i + 3).unwrap_or_default();
        word.eq_ignore_ascii_case(b"inf") || word.eq_ignore_ascii_case(b"nan")
    }

    fn number_token(&mut self) -> (Token, usize) {
        let start = self.pos;
        let (value, used) = strtod(&self.data[start..]);
        if used == 0 {
            return (Token::Error("invalid number"), start);
        }
        self.pos += used;
        (Token::Num(value), start)
    }

    fn string_token(&mut self) -> (Token, usize) {
        let start = self.pos;
        self.pos += 1;
        let mut s = Vec::new();
        loop {
            let ch = self.at(self.pos);
            match ch {
                b'"' => break,
                0 => return (Token::Error("unexpected end of string"), self.pos),
                b'\\' => {
                    let translated = match self.at(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => match self.unicode_escape(&mut s) {
                            Some(len) => {
                                self.pos += len;
                                continue;
                            }
                            None => return (Token::Error("invalid unicode escape code"), self.pos),
                        },
                        _ => return (Token::Error("invalid escape code"), self.pos),
                    };
                    s.push(translated);
                    self.pos += 2;
                }
                _ => {
                    s.push(ch);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        (Token::Str(s), start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.data.get(at..at + 4)?;
        digits.iter().try_fold(0u32, |acc, &d| {
            char::from(d).to_digit(16).map(|v| acc * 16 + v)
        })
    }

    /// Decodes the `\uXXXX` escape (or surrogate pair) here into `out` as UTF-8; returns how
    /// many bytes of input it used.
    fn unicode_escape(&self, out: &mut Vec<u8>) -> Option<usize> {
        let first = self.hex4(self.pos + 2)?;
        let (code, len) = match first {
            0xDC00..=0xDFFF => return None,
            0xD800..=0xDBFF => {
                if self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                    return None;
                }
                let low = self.hex4(self.pos + 8)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                (0x10000 + ((first & 0x3FF) << 10) + (low & 0x3FF), 12)
            }
            c => (c, 6),
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(char::from_u32(code)?.encode_utf8(&mut buf).as_bytes());
        Some(len)
    }

    fn descend(&mut self) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > self.cfg.decode_max_depth || self.depth > HARD_DEPTH_LIMIT {
            return Err(self.args.error(format_args!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.pos
            )));
        }
        Ok(())
    }

    fn value(&mut self, token: Token, index: usize) -> mlua::Result<Value> {
        let lua = self.args.lua;
        Ok(match token {
            Token::Str(s) => Value::String(lua.create_string(&s)?),
            Token::Num(n) => Value::Number(n),
            Token::Bool(b) => Value::Boolean(b),
            Token::Null => null(),
            Token::ObjBegin => {
                self.descend()?;
                let t = lua.create_table()?;
                let (mut token, mut index) = self.next_token();
                if !matches!(token, Token::ObjEnd) {
                    loop {
                        let Token::Str(key) = token else {
                            return Err(self.parse_error("object key string", &token, index));
                        };
                        let (colon, at) = self.next_token();
                        if !matches!(colon, Token::Colon) {
                            return Err(self.parse_error("colon", &colon, at));
                        }
                        let (next, at) = self.next_token();
                        let item = self.value(next, at)?;
                        t.raw_set(lua.create_string(&key)?, item)?;
                        let (sep, at) = self.next_token();
                        match sep {
                            Token::ObjEnd => break,
                            Token::Comma => {}
                            other => {
                                return Err(self.parse_error("comma or object end", &other, at))
                            }
                        }
                        (token, index) = self.next_token();
                    }
                }
                self.depth -= 1;
                Value::Table(t)
            }
            Token::ArrBegin => {
                self.descend()?;
                let t = lua.create_table()?;
                let (mut token, mut index) = self.next_token();
                if !matches!(token, Token::ArrEnd) {
                    let mut i = 1;
                    loop {
                        let item = self.value(token, index)?;
                        t.raw_set(i, item)?;
                        i += 1;
                        let (sep, at) = self.next_token();
                        match sep {
                            Token::ArrEnd => break,
                            Token::Comma => {}
                            other => {
                                return Err(self.parse_error("comma or array end", &other, at))
                            }
                        }
                        (token, index) = self.next_token();
                    }
                }
                self.depth -= 1;
                Value::Table(t)
            }
            other => return Err(self.parse_error("value", &other, index)),
        })
    }
}

/// C's `strtod` on the start of `s` (a token, so no leading blanks): the number and how many
/// bytes it used (0: no number).
fn strtod(s: &[u8]) -> (f64, usize) {
    let (value, used, _range_error) = strata::num::strtod(s);
    (value, used)
}

#[cfg(test)]
mod tests {
    use super::strtod;

    #[test]
    fn strtod_reads_the_longest_number() {
        assert_eq!(strtod(b"1."), (1.0, 2));
        assert_eq!(strtod(b"1e"), (1.0, 1));
        assert_eq!(strtod(b"-2.5e2x"), (-250.0, 6));
        assert_eq!(strtod(b"0x1f"), (31.0, 4));
        assert_eq!(strtod(b"0x1p3"), (8.0, 5));
        assert_eq!(strtod(b"0x"), (0.0, 1));
        assert_eq!(strtod(b"-"), (0.0, 0));
        assert_eq!(strtod(b"Infinity"), (f64::INFINITY, 8));
        assert_eq!(strtod(b"1e400").0, f64::INFINITY);
        assert!(strtod(b"nan").0.is_nan());
    }
}
