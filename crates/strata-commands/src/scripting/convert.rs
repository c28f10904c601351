//! Redis's conversion rules between RESP replies and Lua values, in both directions: what
//! `redis.call` hands a script (RESP2 or, after `redis.setresp(3)`, RESP3 shapes), and what a
//! script's return value becomes as a reply.

use bytes::Bytes;
use mlua::{ffi, Lua, Value};
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
        Frame::HumanDouble(d) => {
            let text = strata_resp::format_human_double(*d);
            if resp3 {
                // Redis's script reads the number back from the text it printed.
                let (v, _, _) = strata::num::strtod(text.as_bytes());
                single(lua, "double", Value::Number(v))?
            } else {
                Value::String(lua.create_string(text)?)
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

/// The deepest nesting Redis's conversion reaches: it walks the Lua stack, and stops with
/// "reached lua stack limit" where that stack (LUAI_MAXCSTACK slots) would overflow.
const REACHED_STACK_LIMIT: &str = "ERR reached lua stack limit";

/// A script's value as a reply, converted as Redis's `luaReplyToRedisReply` does it, on the
/// interpreter's own stack: an element nested too deep (a table that contains itself, say)
/// becomes the error "reached lua stack limit" where Redis's does, and the walk is a loop, so
/// no nesting can exhaust the worker thread's stack. `resp3`: the script called
/// `redis.setresp(3)` (booleans are RESP3 booleans).
pub fn lua_to_frame(lua: &Lua, value: Value, resp3: bool) -> Frame {
    let mut walk = Walk {
        open: Vec::new(),
        result: None,
        resp3,
    };
    // The reply starts with two values on the stack, as Redis's does (its error handler and
    // the value), so the limit falls at the same depth.
    // SAFETY: `exec_raw` runs the closure in a protected call with the two values on the
    // stack; the walk keeps the stack balanced and owns nothing a Lua error could leak but the
    // partial reply, which lives in `walk`.
    let run = unsafe { lua.exec_raw::<()>((Value::Nil, value), |state| walk.run(state)) };
    match (run, walk.result) {
        (Ok(()), Some(frame)) => frame,
        (Err(e), _) => Frame::Error(Bytes::from(format!("ERR {e}"))),
        (Ok(()), None) => Frame::Null,
    }
}

/// A table being converted (it, and what it iterates, are on the Lua stack).
enum Open {
    /// An array: the table; `next` is the index to read next.
    Array { items: Vec<Frame>, next: i64 },
    /// `{map = M}`: the outer table, M, and during iteration M's key (and value).
    Map {
        pairs: Vec<(Frame, Frame)>,
        key: Option<Frame>,
    },
    /// `{set = S}`: the outer table, S, and during iteration S's key.
    Set { items: Vec<Frame> },
}

/// The next move in the innermost open table.
enum Step {
    /// Read this index of the array.
    Array(i64),
    /// Convert the value of the current entry (`value_next`), or move to the next entry.
    Map { value_next: bool },
    /// Move to the next member.
    Set,
}

struct Walk {
    open: Vec<Open>,
    result: Option<Frame>,
    resp3: bool,
}

impl Walk {
    /// Converts the value on the top of the stack, then every table it opens, in a loop.
    unsafe fn run(&mut self, state: *mut ffi::lua_State) {
        // SAFETY (whole function): `state` is the protected call's state; each step checks the
        // room it needs with lua_checkstack before pushing.
        unsafe {
            let mut done = self.convert_top(state);
            loop {
                if let Some(frame) = done.take() {
                    match self.open.last_mut() {
                        None => {
                            self.result = Some(frame);
                            return;
                        }
                        Some(Open::Array { items, .. }) | Some(Open::Set { items }) => {
                            items.push(frame)
                        }
                        Some(Open::Map { pairs, key }) => match key.take() {
                            None => *key = Some(frame),
                            Some(k) => pairs.push((k, frame)),
                        },
                    }
                }
                // Advance the innermost open table.
                let step = match self.open.last_mut() {
                    None => return,
                    Some(Open::Array { next, .. }) => {
                        *next += 1;
                        Step::Array(*next - 1)
                    }
                    Some(Open::Map { key, .. }) => Step::Map {
                        value_next: key.is_some(),
                    },
                    Some(Open::Set { .. }) => Step::Set,
                };
                done = match step {
                    Step::Array(j) => {
                        // Stack: ..., table.
                        ffi::lua_pushnumber(state, j as f64);
                        ffi::lua_rawget(state, -2);
                        if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
                            ffi::lua_pop(state, 2);
                            match self.open.pop() {
                                Some(Open::Array { items, .. }) => Some(Frame::Array(items)),
                                _ => None,
                            }
                        } else {
                            self.convert_top(state)
                        }
                    }
                    // Stack: ..., table, map, key, value: the value is next.
                    Step::Map { value_next: true } => self.convert_top(state),
                    Step::Map { value_next: false } => {
                        if ffi::lua_next(state, -2) == 0 {
                            ffi::lua_pop(state, 2);
                            match self.open.pop() {
                                Some(Open::Map { pairs, .. }) => Some(Frame::Map(pairs)),
                                _ => None,
                            }
                        } else {
                            // Stack: ..., table, map, key, value, key (a copy to convert).
                            ffi::lua_pushvalue(state, -2);
                            self.convert_top(state)
                        }
                    }
                    Step::Set => {
                        if ffi::lua_next(state, -2) == 0 {
                            ffi::lua_pop(state, 2);
                            match self.open.pop() {
                                Some(Open::Set { items }) => Some(Frame::Set(items)),
                                _ => None,
                            }
                        } else {
                            // Stack: ..., table, set, key, key (the value dropped).
                            ffi::lua_pop(state, 1);
                            ffi::lua_pushvalue(state, -1);
                            self.convert_top(state)
                        }
                    }
                };
            }
        }
    }

    /// Converts the value on the top of the stack: a finished frame (the value popped), or
    /// None when it is a table left open (then it stays on the stack, with what its iteration
    /// needs).
    unsafe fn convert_top(&mut self, state: *mut ffi::lua_State) -> Option<Frame> {
        // SAFETY (whole function): see `run`.
        unsafe {
            if ffi::lua_checkstack(state, 4) == 0 {
                ffi::lua_pop(state, 1);
                return Some(Frame::Error(Bytes::from_static(
                    REACHED_STACK_LIMIT.as_bytes(),
                )));
            }
            let frame = match ffi::lua_type(state, -1) {
                ffi::LUA_TSTRING => Frame::Bulk(Bytes::copy_from_slice(to_bytes(state, -1))),
                ffi::LUA_TBOOLEAN => {
                    let b = ffi::lua_toboolean(state, -1) != 0;
                    match (self.resp3, b) {
                        (true, b) => Frame::Boolean(b),
                        (false, true) => Frame::Integer(1),
                        (false, false) => Frame::Null,
                    }
                }
                ffi::LUA_TNUMBER => {
                    Frame::Integer(lua_number_to_integer(ffi::lua_tonumber(state, -1)))
                }
                ffi::LUA_TTABLE => return self.open_table(state),
                _ => Frame::Null,
            };
            ffi::lua_pop(state, 1);
            Some(frame)
        }
    }

    /// A table on the top of the stack: an error, status, double, big number or verbatim
    /// reply (popped), or a map, set or array left open.
    unsafe fn open_table(&mut self, state: *mut ffi::lua_State) -> Option<Frame> {
        // SAFETY (whole function): see `run`; `convert_top` made room for 4 values.
        unsafe {
            let field = |name: &std::ffi::CStr| {
                ffi::lua_pushstring(state, name.as_ptr());
                ffi::lua_rawget(state, -2);
                ffi::lua_type(state, -1)
            };
            if field(c"err") == ffi::LUA_TSTRING {
                let text = trim_newlines(Bytes::copy_from_slice(to_bytes(state, -1)));
                ffi::lua_pop(state, 2);
                return Some(Frame::Error(text));
            }
            ffi::lua_pop(state, 1);
            if field(c"ok") == ffi::LUA_TSTRING {
                let text = trim_newlines(Bytes::copy_from_slice(to_bytes(state, -1)));
                ffi::lua_pop(state, 2);
                return Some(Frame::Simple(text));
            }
            ffi::lua_pop(state, 1);
            if field(c"double") == ffi::LUA_TNUMBER {
                let d = ffi::lua_tonumber(state, -1);
                ffi::lua_pop(state, 2);
                return Some(Frame::Double(d));
            }
            ffi::lua_pop(state, 1);
            if field(c"big_number") == ffi::LUA_TSTRING {
                let text = trim_newlines(Bytes::copy_from_slice(to_bytes(state, -1)));
                ffi::lua_pop(state, 2);
                return Some(Frame::BigNumber(text));
            }
            ffi::lua_pop(state, 1);
            if field(c"verbatim_string") == ffi::LUA_TTABLE {
                ffi::lua_pushstring(state, c"format".as_ptr());
                ffi::lua_rawget(state, -2);
                if ffi::lua_type(state, -1) == ffi::LUA_TSTRING {
                    ffi::lua_pushstring(state, c"string".as_ptr());
                    ffi::lua_rawget(state, -3);
                    if ffi::lua_type(state, -1) == ffi::LUA_TSTRING {
                        let text = Bytes::copy_from_slice(to_bytes(state, -1));
                        ffi::lua_pop(state, 4);
                        return Some(Frame::Verbatim(text));
                    }
                    ffi::lua_pop(state, 1);
                }
                ffi::lua_pop(state, 1);
            }
            ffi::lua_pop(state, 1);
            if field(c"map") == ffi::LUA_TTABLE {
                ffi::lua_pushnil(state);
                self.open.push(Open::Map {
                    pairs: Vec::new(),
                    key: None,
                });
                return None;
            }
            ffi::lua_pop(state, 1);
            if field(c"set") == ffi::LUA_TTABLE {
                ffi::lua_pushnil(state);
                self.open.push(Open::Set { items: Vec::new() });
                return None;
            }
            ffi::lua_pop(state, 1);
            self.open.push(Open::Array {
                items: Vec::new(),
                next: 1,
            });
            None
        }
    }
}

/// The bytes of the string at `idx`.
unsafe fn to_bytes<'a>(state: *mut ffi::lua_State, idx: i32) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: the value at `idx` is a string (callers check), so lua_tolstring neither converts
    // nor fails, and the bytes live as long as the value stays on the stack.
    unsafe {
        let ptr = ffi::lua_tolstring(state, idx, &mut len);
        if ptr.is_null() {
            return &[];
        }
        std::slice::from_raw_parts(ptr as *const u8, len)
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
