//! Redis's conversion rules between RESP replies and Lua values, in both directions: what
//! `redis.call` hands a script (RESP2 or, after `redis.setresp(3)`, RESP3 shapes), and what a
//! script's return value becomes as a reply.

use bytes::Bytes;
use mlua::{Lua, Table, Value};
use strata_resp::Frame;

/// A command reply as the script sees it.
pub fn frame_to_lua(lua: &Lua, frame: &Frame, resp3: bool) -> mlua::Result<Value> {
    Ok(match frame {
        Frame::Simple(s) => single(lua, "ok", Value::String(lua.create_string(s)?))?,
        Frame::Error(e) => single(lua, "err", Value::String(lua.create_string(e)?))?,
        Frame::Integer(n) => Value::Integer(*n),
        Frame::Bulk(b) => Value::String(lua.create_string(b)?),
        Frame::Null | Frame::NullArray => {
            if resp3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Frame::Array(items) | Frame::Push(items) => array(lua, items, resp3)?,
        Frame::Set(items) => {
            if resp3 {
                let set = lua.create_table()?;
                for item in items {
                    set.raw_set(frame_to_lua(lua, item, resp3)?, true)?;
                }
                single(lua, "set", Value::Table(set))?
            } else {
                array(lua, items, resp3)?
            }
        }
        Frame::Map(pairs) => {
            if resp3 {
                let map = lua.create_table()?;
                for (k, v) in pairs {
                    map.raw_set(frame_to_lua(lua, k, resp3)?, frame_to_lua(lua, v, resp3)?)?;
                }
                single(lua, "map", Value::Table(map))?
            } else {
                let flat: Vec<Frame> = pairs
                    .iter()
                    .flat_map(|(k, v)| [k.clone(), v.clone()])
                    .collect();
                array(lua, &flat, resp3)?
            }
        }
        Frame::Double(d) => {
            if resp3 {
                single(lua, "double", Value::Number(*d))?
            } else {
                Value::String(lua.create_string(strata_resp::format_double(*d))?)
            }
        }
        Frame::Boolean(b) => {
            if resp3 {
                Value::Boolean(*b)
            } else {
                Value::Integer(*b as i64)
            }
        }
        Frame::Verbatim(t) => {
            if resp3 {
                let v = lua.create_table()?;
                v.raw_set("format", "txt")?;
                v.raw_set("string", lua.create_string(t)?)?;
                single(lua, "verbatim_string", Value::Table(v))?
            } else {
                Value::String(lua.create_string(t)?)
            }
        }
        Frame::BigNumber(n) => {
            if resp3 {
                single(lua, "big_number", Value::String(lua.create_string(n)?))?
            } else {
                Value::String(lua.create_string(n)?)
            }
        }
    })
}

fn single(lua: &Lua, field: &str, value: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(field, value)?;
    Ok(Value::Table(t))
}

fn array(lua: &Lua, items: &[Frame], resp3: bool) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_seti(i + 1, frame_to_lua(lua, item, resp3)?)?;
    }
    Ok(Value::Table(t))
}

/// A script's value as a reply.
pub fn lua_to_frame(value: &Value) -> Frame {
    match value {
        Value::Nil => Frame::Null,
        Value::Boolean(true) => Frame::Integer(1),
        Value::Boolean(false) => Frame::Null,
        Value::Integer(n) => Frame::Integer(*n),
        Value::Number(n) => Frame::Integer(lua_number_to_integer(*n)),
        Value::String(s) => Frame::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Table(t) => table_to_frame(t),
        _ => Frame::Null,
    }
}

/// C's conversion of a double to `long long`, as Redis does it: truncation, and the "integer
/// indefinite" value for anything out of range.
fn lua_number_to_integer(n: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

fn string_field(t: &Table, name: &str) -> Option<Bytes> {
    match t.raw_get::<Value>(name) {
        Ok(Value::String(s)) => Some(Bytes::copy_from_slice(&s.as_bytes())),
        _ => None,
    }
}

fn table_to_frame(t: &Table) -> Frame {
    if let Some(e) = string_field(t, "err") {
        return Frame::Error(trim_newlines(e));
    }
    if let Some(s) = string_field(t, "ok") {
        return Frame::Simple(trim_newlines(s));
    }
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        return Frame::Double(d);
    }
    if let Ok(Value::Integer(d)) = t.raw_get::<Value>("double") {
        return Frame::Double(d as f64);
    }
    if let Some(n) = string_field(t, "big_number") {
        return Frame::BigNumber(n);
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let pairs = m
            .pairs::<Value, Value>()
            .filter_map(|p| p.ok())
            .map(|(k, v)| (lua_to_frame(&k), lua_to_frame(&v)))
            .collect();
        return Frame::Map(pairs);
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let members = s
            .pairs::<Value, Value>()
            .filter_map(|p| p.ok())
            .map(|(k, _)| lua_to_frame(&k))
            .collect();
        return Frame::Set(members);
    }
    // An array: elements 1, 2, ... up to the first nil.
    let mut items = Vec::new();
    let mut i = 1;
    while let Ok(v) = t.raw_get::<Value>(i) {
        if v.is_nil() {
            break;
        }
        items.push(lua_to_frame(&v));
        i += 1;
    }
    Frame::Array(items)
}

/// Error and status texts cannot hold line breaks on the wire: Redis replaces them with spaces.
fn trim_newlines(b: Bytes) -> Bytes {
    if b.iter().any(|&c| c == b'\r' || c == b'\n') {
        Bytes::from(
            b.iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
                .collect::<Vec<u8>>(),
        )
    } else {
        b
    }
}
