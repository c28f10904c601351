//! The read-only global environment scripts and functions run in, built to behave as Redis 7.0's
//! (whose patched Lua marks tables read-only): a script cannot create a global, change an
//! existing one, or change the library tables (`redis`, `string`, `cjson`, `bit`, ...) or the
//! metatables it can reach, by assignment, `rawset`, `setmetatable` or `table.insert` alike —
//! it gets "Attempt to modify a readonly table" — and reading an undefined global raises
//! "Script attempted to access nonexistent global variable". Binary chunks cannot be loaded,
//! and `pcall` turns error tables into their text and cannot catch SCRIPT KILL.
//!
//! Lua 5.1 has no read-only tables, so this module builds them from proxies: the globals table
//! itself is left empty (every global lives in a hidden table it reads through), and each
//! library table is replaced by an empty proxy reading through to it. The base functions that
//! would see through a proxy or write around it (`rawset`, `rawget`, `next`, `pairs`, `ipairs`,
//! `setmetatable`, `getmetatable`, `table.insert`/`remove`/`sort`) are wrapped to treat a proxy
//! as the table it stands for. This module depends on nothing but the interpreter.

use mlua::{Function, Lua, Table, Value};

/// What sealing leaves the interpreter's owner.
pub(super) struct Sealed {
    /// The table every global lives in (the globals table reads through to it): KEYS and ARGV
    /// are set here for each EVAL.
    pub hidden: Table,
}

/// The chunk name of the sandbox's own Lua code: error positions skip its frames, so an error
/// raised by a wrapper (`rawset(_G, ...)`) is reported at the script line that called it.
pub(super) const SANDBOX_CHUNK: &str = "=[strata sandbox]";

/// The sealing code: run once per interpreter, after every library is in the globals table.
const SEAL: &str = r#"
local newindex, nonexistent, error_value, killed = ...
local next, pairs, ipairs, rawget, rawset, setmetatable, getmetatable, type, error, pcall, xpcall, loadstring, load =
      next, pairs, ipairs, rawget, rawset, setmetatable, getmetatable, type, error, pcall, xpcall, loadstring, load
local tinsert, tremove, tsort = table.insert, table.remove, table.sort
local sbyte = string.byte
local G = _G
local READONLY = "Attempt to modify a readonly table"
local real = {}      -- proxy -> the table it stands for (the globals table -> the hidden one)
local readonly = {}  -- tables a script may not change
local shown = {}     -- metatable -> the read-only stand-in getmetatable returns

local function pass(...) return ... end
local function check(t) if readonly[t] then error(READONLY, 0) end end
local function proxy(t)
  local p = {}
  setmetatable(p, {__index = t, __newindex = newindex})
  real[p] = t
  readonly[p] = true
  return p
end

G.rawset = function(t, k, v) check(t) rawset(t, k, v) return t end
G.rawget = function(t, k) return pass(rawget(real[t] or t, k)) end
G.next = function(t, k) return pass(next(real[t] or t, k)) end
G.pairs = function(t)
  local r = real[t]
  if r then return next, r, nil end
  return pass(pairs(t))
end
G.ipairs = function(t) return pass(ipairs(real[t] or t)) end
G.setmetatable = function(t, m) check(t) return pass(setmetatable(t, m)) end
G.getmetatable = function(o)
  if real[o] and o ~= G then return nil end
  local m = getmetatable(o)
  return shown[m] or m
end
G.table.insert = function(t, ...) check(t) tinsert(t, ...) end
G.table.remove = function(t, ...) check(t) return pass(tremove(t, ...)) end
G.table.sort = function(t, ...) check(t) tsort(t, ...) end

-- Binary chunks are refused as Redis's Lua refuses them: parsed as text, failing on byte 27.
G.loadstring = function(s, name)
  if type(s) == "string" and sbyte(s, 1) == 27 then
    return pass(loadstring(" " .. s, name or s))
  end
  return pass(loadstring(s, name))
end
G.load = function(f, name)
  local reader, first = f, true
  if type(f) == "function" then
    reader = function()
      local piece = f()
      if first then
        first = false
        if type(piece) == "string" and sbyte(piece, 1) == 27 then piece = " " .. piece end
      end
      return piece
    end
  end
  return pass(load(reader, name))
end

-- Redis's pcall: an error table becomes its text, and a killed script stays killed.
local function caught(ok, ...)
  if ok then return true, ... end
  local e = ...
  if killed() then error(e, 0) end
  return false, error_value(e)
end
G.pcall = function(...) return caught(pcall(...)) end
local function caught_x(ok, ...)
  if not ok and killed() then error((...), 0) end
  return ok, ...
end
G.xpcall = function(f, h) return caught_x(xpcall(f, h)) end

-- Every global moves to the hidden table; tables are replaced by read-only proxies.
local hidden = {}
for k, v in pairs(G) do
  if type(v) == "table" and v ~= G then
    for k2, v2 in pairs(v) do
      if type(v2) == "table" then v[k2] = proxy(v2) end
    end
    v = proxy(v)
  end
  hidden[k] = v
end
for k in pairs(hidden) do G[k] = nil end
hidden._G = G
setmetatable(hidden, {__index = nonexistent})
setmetatable(G, {__index = hidden, __newindex = newindex})
real[G] = hidden
readonly[G] = true
-- What getmetatable(_G) shows: a read-only table holding only the two handlers.
shown[getmetatable(G)] = proxy({__index = nonexistent, __newindex = newindex})
-- Strings' metatable: method calls read through the string proxy; the metatable is read-only.
local smeta = getmetatable("")
smeta.__index = hidden.string
shown[smeta] = proxy(smeta)
return hidden
"#;

/// Seals the interpreter's globals (see the module comment). `newindex` and `nonexistent` raise
/// the two sandbox errors; `error_value` turns a caught error into what Redis's `pcall` returns;
/// `killed` tells whether the running script was killed.
pub(super) fn seal(
    lua: &Lua,
    newindex: Function,
    nonexistent: Function,
    error_value: Function,
    killed: Function,
) -> mlua::Result<Sealed> {
    let hidden: Table = lua.load(SEAL).set_name(SANDBOX_CHUNK).call((
        newindex,
        nonexistent,
        error_value,
        killed,
    ))?;
    Ok(Sealed { hidden })
}

/// A read-only stand-in for `t` in an interpreter that is not sealed (a library's `redis`
/// table while it loads): an empty table reading through to `t` and refusing writes.
pub(super) fn proxy(lua: &Lua, t: &Table, newindex: &Function) -> mlua::Result<Table> {
    let p = lua.create_table()?;
    p.set_metatable(Some(proxy_meta(lua, t, newindex)?))?;
    Ok(p)
}

/// The metatable of a proxy for `t`: reads go to `t`, writes to `newindex`.
pub(super) fn proxy_meta(lua: &Lua, t: &Table, newindex: &Function) -> mlua::Result<Table> {
    let meta = lua.create_table()?;
    meta.raw_set("__index", t.clone())?;
    meta.raw_set("__newindex", newindex.clone())?;
    Ok(meta)
}

/// Whether a stack frame (its `source`) belongs to the sandbox's wrappers (or is the marker
/// Lua leaves for a tail call, which the wrappers make).
pub(super) fn is_sandbox_frame(source: Option<&str>) -> bool {
    matches!(source, Some(SANDBOX_CHUNK | "=(tail call)"))
}

/// Reads `value` as the error `pcall` returns: an interpreter error becomes its text, a table
/// with a string (or number) `err` field becomes that field, anything else stays.
pub(super) fn pcall_error_value(lua: &Lua, value: Value) -> mlua::Result<Value> {
    match &value {
        Value::Error(e) => Ok(Value::String(lua.create_string(super::lua_message(e))?)),
        Value::Table(t) => match t.raw_get::<Value>("err")? {
            v @ (Value::String(_) | Value::Integer(_) | Value::Number(_)) => Ok(v),
            _ => Ok(value),
        },
        _ => Ok(value),
    }
}
