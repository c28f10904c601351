//! The Lua libraries Redis bundles besides `bit`: `cjson`, `cmsgpack` and `struct`, each built
//! as a table of Rust functions. This module owns what they share: building the tables for a new
//! interpreter, and raising errors the way Lua's C libraries do (with the calling script's
//! position, "bad argument #N to 'f' (...)" texts, Lua's type names).

mod cjson;
mod cmsgpack;
mod structlib;

use std::ffi::c_int;

use mlua::{ffi, Function, IntoLuaMulti, Lua, MultiValue, Table, Value};

/// Sets `cjson`, `cmsgpack` and `struct` in `globals` (the sandbox makes them read-only
/// afterwards, as it does every library table).
pub(super) fn register(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    globals.raw_set("cjson", cjson::library(lua)?)?;
    globals.raw_set("cmsgpack", cmsgpack::library(lua)?)?;
    globals.raw_set("struct", structlib::library(lua)?)?;
    Ok(())
}

/// An error a library function raises as a Lua string, the way a C library does: `at_caller`
/// for `luaL_error`'s, which start with the position of the calling script code.
#[derive(Debug)]
struct Raised {
    text: String,
    at_caller: bool,
}

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Raised {}

/// `luaL_error`: the message, after the calling script code's position ("user_script:1: ").
fn error(msg: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::external(Raised {
        text: msg.to_string(),
        at_caller: true,
    })
}

/// An error the Lua core raises from inside a C function (no position), like "table index is
/// nil".
fn plain_error(msg: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::external(Raised {
        text: msg.to_string(),
        at_caller: false,
    })
}

/// `luaL_argerror`'s text: "bad argument #N to 'name' (msg)".
fn arg_error(n: usize, name: &str, msg: impl std::fmt::Display) -> mlua::Error {
    error(format_args!("bad argument #{n} to '{name}' ({msg})"))
}

fn raised(e: &mlua::Error) -> Option<&Raised> {
    match e {
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<Raised>(),
        mlua::Error::CallbackError { cause, .. } => raised(cause),
        _ => None,
    }
}

/// A library function. Its errors are raised as Lua strings, as the C libraries raise them (a
/// script's `pcall` gets the text, and the error reply names the script line that called the
/// function): the Rust function returns `true, results...` or `false, text, at_caller`, and a
/// small C function around it raises the text.
fn function<F, R>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, MultiValue) -> mlua::Result<R> + 'static,
    R: IntoLuaMulti,
{
    let inner = lua.create_function(move |lua, args: MultiValue| match f(lua, args) {
        Ok(results) => {
            let mut results = results.into_lua_multi(lua)?;
            results.push_front(Value::Boolean(true));
            Ok(results)
        }
        Err(e) => match raised(&e) {
            Some(r) => (false, r.text.as_str(), r.at_caller).into_lua_multi(lua),
            None => Err(e),
        },
    })?;
    // SAFETY: `exec_raw` pushes `inner`, and lua_pushcclosure pops it as the upvalue of the new
    // closure it leaves on the stack, which `exec_raw` returns.
    unsafe {
        lua.exec_raw::<Function>(inner, |state| {
            ffi::lua_pushcclosure(state, raise_errors, 1);
        })
    }
}

/// The C function around a library function (its upvalue 1): calls it with the arguments and
/// returns its results, or raises its error text.
unsafe extern "C-unwind" fn raise_errors(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with a valid state; the stack holds the arguments. No value with a
    // destructor lives in this frame when lua_error (or an error inside lua_call) jumps out.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, ffi::LUA_MULTRET);
        if ffi::lua_toboolean(state, 1) == 0 {
            let at_caller = ffi::lua_toboolean(state, 3) != 0;
            ffi::lua_settop(state, 2);
            if at_caller {
                // luaL_where(1): the position of the code that called this function, if it is
                // Lua code.
                ffi::luaL_where(state, 1);
                ffi::lua_insert(state, 2);
                ffi::lua_concat(state, 2);
            }
            ffi::lua_error(state);
        }
        ffi::lua_remove(state, 1);
        ffi::lua_gettop(state)
    }
}

/// The arguments of a library call, read the way the Lua C API checks them.
struct Args<'a> {
    lua: &'a Lua,
    values: Vec<Value>,
}

impl<'a> Args<'a> {
    fn new(lua: &'a Lua, args: MultiValue) -> Self {
        Args {
            lua,
            values: args.into_iter().collect(),
        }
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    /// Argument `n` (1-based), None when absent.
    fn get(&self, n: usize) -> Option<&Value> {
        n.checked_sub(1).and_then(|i| self.values.get(i))
    }

    fn is_nil(&self, n: usize) -> bool {
        matches!(self.get(n), None | Some(Value::Nil))
    }

    fn type_error(&self, n: usize, expected: &str) -> mlua::Error {
        let got = self.get(n).map(type_name).unwrap_or("no value");
        self.arg_error(n, format_args!("{expected} expected, got {got}"))
    }

    /// `luaL_argerror`: names the function as its caller did (`?` when the caller is not Lua
    /// code, e.g. `pcall`), and counts a method call's arguments without `self`.
    fn arg_error(&self, n: usize, msg: impl std::fmt::Display) -> mlua::Error {
        // Level 0 is the Rust function, level 1 the C function around it the script called.
        let (name, method) = self
            .lua
            .inspect_stack(1, |d| {
                let names = d.names();
                (
                    names.name.map(|c| c.into_owned()),
                    names.name_what == Some("method"),
                )
            })
            .unwrap_or((None, false));
        let name = name.unwrap_or_else(|| "?".into());
        if method {
            if n <= 1 {
                return error(format_args!("calling '{name}' on bad self ({msg})"));
            }
            return arg_error(n - 1, &name, msg);
        }
        arg_error(n, &name, msg)
    }

    fn error(&self, msg: impl std::fmt::Display) -> mlua::Error {
        error(msg)
    }

    /// `luaL_checknumber`: a number, or a string that converts to one.
    fn number(&self, n: usize) -> mlua::Result<f64> {
        match self.get(n) {
            Some(Value::Integer(i)) => Ok(*i as f64),
            Some(Value::Number(f)) => Ok(*f),
            Some(v @ Value::String(_)) => match self.lua.coerce_number(v.clone()) {
                Ok(Some(f)) => Ok(f),
                _ => Err(self.type_error(n, "number")),
            },
            _ => Err(self.type_error(n, "number")),
        }
    }

    /// `luaL_checkinteger`: a number truncated to an integer.
    fn integer(&self, n: usize) -> mlua::Result<i64> {
        self.number(n).map(c_double_to_i64)
    }

    /// `luaL_optinteger`.
    fn opt_integer(&self, n: usize, default: i64) -> mlua::Result<i64> {
        if self.is_nil(n) {
            Ok(default)
        } else {
            self.integer(n)
        }
    }

    /// `luaL_checklstring`: a string, or a number converted to one.
    fn bytes(&self, n: usize) -> mlua::Result<Vec<u8>> {
        match self.get(n) {
            Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
            Some(v @ (Value::Integer(_) | Value::Number(_))) => {
                match self.lua.coerce_string(v.clone()) {
                    Ok(Some(s)) => Ok(s.as_bytes().to_vec()),
                    _ => Err(self.type_error(n, "string")),
                }
            }
            _ => Err(self.type_error(n, "string")),
        }
    }
}

/// Lua's name for a value's type.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::LightUserData(_) | Value::UserData(_) => "userdata",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// A Lua value as a number, if it is one.
fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(f) => Some(*f),
        _ => None,
    }
}

/// C's `(long long)d` on x86-64: truncation, and i64::MIN for NaN and out-of-range values.
fn c_double_to_i64(d: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// C's `(int)d` on x86-64: truncation, and i32::MIN for NaN and out-of-range values.
fn c_double_to_i32(d: f64) -> i32 {
    if d > -2_147_483_649.0 && d < 2_147_483_648.0 {
        d as i32
    } else {
        i32::MIN
    }
}

/// `%.{precision}g` as C's printf writes it (precision 1 to 17).
pub(super) fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mantissa = trim_fraction(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim_fraction(&format!("{x:.decimals$}")).to_string()
    }
}

/// Drops trailing zeros after a decimal point, and the point itself if nothing follows it.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn format_g_matches_printf() {
        assert_eq!(format_g(0.1, 14), "0.1");
        assert_eq!(format_g(1.0 / 3.0, 14), "0.33333333333333");
        assert_eq!(format_g(1e20, 14), "1e+20");
        assert_eq!(format_g(1e14, 14), "1e+14");
        assert_eq!(format_g(123456789012345.0, 14), "1.2345678901234e+14");
        assert_eq!(format_g(12345678901234.0, 14), "12345678901234");
        assert_eq!(format_g(1e-5, 14), "1e-05");
        assert_eq!(format_g(0.0001, 14), "0.0001");
        assert_eq!(format_g(-3.25, 14), "-3.25");
        assert_eq!(format_g(1.23456, 3), "1.23");
        assert_eq!(format_g(5e-324, 14), "4.9406564584125e-324");
        assert_eq!(format_g(100.0, 14), "100");
        assert_eq!(format_g(-0.0, 14), "-0");
    }
}
