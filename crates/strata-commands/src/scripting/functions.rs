//! FUNCTION libraries: the registry of loaded libraries and their functions (shared by every
//! connection), validation of a library's code when it is loaded, and the byte format in which
//! libraries are persisted and dumped. Each worker thread's interpreter loads the libraries into
//! itself when the registry's generation changes (see `Vm` in the parent module).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use mlua::{Function, Lua, Table, Value};

use crate::errors;

/// One function of a library.
#[derive(Clone, Debug)]
pub struct FunctionInfo {
    /// Its name (what FCALL takes).
    pub name: String,
    /// The `description` given to register_function, if any.
    pub description: Option<String>,
    /// Its flags (`no-writes`, `allow-oom`, ...).
    pub flags: Vec<String>,
}

impl FunctionInfo {
    /// Whether FCALL_RO may call it.
    pub fn read_only(&self) -> bool {
        self.flags.iter().any(|f| f == "no-writes")
    }
}

/// A loaded library.
#[derive(Debug)]
pub struct Library {
    /// Its name, from the `#!lua name=...` line.
    pub name: String,
    /// Its code, as loaded.
    pub code: Bytes,
    /// The functions it registered.
    pub functions: Vec<FunctionInfo>,
}

/// The loaded libraries.
#[derive(Default)]
pub struct FunctionRegistry {
    libs: RwLock<BTreeMap<String, Arc<Library>>>,
    /// Bumped by every change: interpreters reload their functions when it moves.
    generation: AtomicU64,
}

/// RESTORE's policy for libraries that already exist.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    /// Delete every library first.
    Flush,
    /// Fail if a library (or function) exists.
    Append,
    /// Replace libraries of the same name.
    Replace,
}

impl FunctionRegistry {
    /// An empty registry.
    pub fn new() -> FunctionRegistry {
        FunctionRegistry::default()
    }

    /// The current generation.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every library, by name.
    pub fn libraries(&self) -> Vec<Arc<Library>> {
        self.libs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The function called `name`.
    pub fn find(&self, name: &str) -> Option<FunctionInfo> {
        self.libs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .flat_map(|l| l.functions.iter())
            .find(|f| f.name.eq_ignore_ascii_case(name))
            .cloned()
    }

    /// FUNCTION LOAD: validates `code`, adds (or with `replace`, replaces) its library; returns
    /// the library name. Err carries the full error text.
    pub fn load(&self, code: &Bytes, replace: bool) -> Result<String, String> {
        let lib = compile_library(code)?;
        let mut libs = self.libs.write().unwrap_or_else(|p| p.into_inner());
        install(&mut libs, lib, replace)?;
        let name = libs.keys().last().cloned();
        drop(libs);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(name.map(|_| library_name_of(code)).unwrap_or_default())
    }

    /// FUNCTION DELETE.
    pub fn delete(&self, name: &str) -> Result<(), String> {
        let mut libs = self.libs.write().unwrap_or_else(|p| p.into_inner());
        if libs.remove(name).is_none() {
            return Err("ERR Library not found".into());
        }
        drop(libs);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// FUNCTION FLUSH.
    pub fn flush(&self) {
        self.libs.write().unwrap_or_else(|p| p.into_inner()).clear();
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Every library's code in the dump format (`docs/format.md`, [`strata::function_record`]).
    pub fn dump(&self) -> Vec<u8> {
        let libs = self.libraries();
        strata::function_record::encode(libs.iter().map(|l| &l.code[..]))
    }

    /// FUNCTION RESTORE (and loading the persisted record at start-up): all libraries of the
    /// payload or none.
    pub fn restore(&self, payload: &[u8], policy: RestorePolicy) -> Result<(), String> {
        let codes = parse_dump(payload).ok_or("ERR DUMP payload version or checksum are wrong")?;
        let compiled = codes
            .iter()
            .map(compile_library)
            .collect::<Result<Vec<_>, _>>()?;
        let mut libs = self.libs.write().unwrap_or_else(|p| p.into_inner());
        let mut next = if policy == RestorePolicy::Flush {
            BTreeMap::new()
        } else {
            libs.clone()
        };
        for lib in compiled {
            if policy == RestorePolicy::Append && next.contains_key(&lib.name) {
                return Err(format!("ERR Library {} already exists", lib.name));
            }
            install(&mut next, lib, policy == RestorePolicy::Replace)?;
        }
        *libs = next;
        drop(libs);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// The library sink of `strata::rdb::file::import` for an RDB file's libraries (`strata import`,
/// a Redis leader's full copy, `dump.rdb` at start-up): each library is created as FUNCTION LOAD
/// (with `replace`, FUNCTION LOAD REPLACE) would create it, in `registry`, and the directory's
/// record is rewritten at once, so an interrupted load keeps whole libraries only. A library
/// that can't be created stops the load, as it fails Redis's (`Failed loading library, ...`).
pub fn rdb_library_loader<'a>(
    registry: &'a FunctionRegistry,
    db: &'a strata::Db,
    replace: bool,
) -> impl FnMut(Vec<u8>) -> strata::Result<()> + 'a {
    move |code| {
        registry.load(&Bytes::from(code), replace).map_err(|e| {
            let e = e.strip_prefix("ERR ").unwrap_or(&e);
            strata::Error::BadRdb(format!("Failed loading library, {e}"))
        })?;
        db.aux_put(strata::function_record::RECORD, &registry.dump())
    }
}

/// Adds `lib` to `libs`: its name must be new (or `replace`), its functions' names unused by
/// other libraries.
fn install(
    libs: &mut BTreeMap<String, Arc<Library>>,
    lib: Library,
    replace: bool,
) -> Result<(), String> {
    if libs.contains_key(&lib.name) && !replace {
        return Err(format!("ERR Library '{}' already exists", lib.name));
    }
    for f in &lib.functions {
        let taken = libs
            .values()
            .filter(|other| other.name != lib.name)
            .any(|other| {
                other
                    .functions
                    .iter()
                    .any(|g| g.name.eq_ignore_ascii_case(&f.name))
            });
        if taken {
            return Err(format!("ERR Function {} already exists", f.name));
        }
    }
    libs.insert(lib.name.clone(), Arc::new(lib));
    Ok(())
}

fn parse_dump(payload: &[u8]) -> Option<Vec<Bytes>> {
    let codes = strata::function_record::decode(payload)?;
    Some(codes.into_iter().map(Bytes::from).collect())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

const NAME_RULE: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// The library name of already-validated code.
fn library_name_of(code: &[u8]) -> String {
    parse_shebang(code).map(|(n, _)| n).unwrap_or_default()
}

/// Reads the metadata line `#!lua name=<name>` as Redis's `functionExtractLibMetaData` does (the
/// line split like a config line, `name=` in any case, the engine named in any case): the
/// library name, and the code after that line with its line feed (so line numbers in errors
/// count the line, as Redis's do).
fn parse_shebang(code: &[u8]) -> Result<(String, Vec<u8>), String> {
    if !code.starts_with(b"#!") {
        return Err(errors::LIBRARY_METADATA_MISSING.into());
    }
    // Redis looks for the line feed with strchr, which stops at a NUL byte.
    let text = code.split(|&b| b == 0).next().unwrap_or_default();
    let Some(end) = text.iter().position(|&b| b == b'\n') else {
        return Err(errors::LIBRARY_METADATA_INVALID.into());
    };
    let parts = match strata_resp::split_inline_args(&code[..end]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err(errors::LIBRARY_METADATA_INVALID.into()),
    };
    let mut name = None;
    for part in &parts[1..] {
        match part.get(..5) {
            Some(key) if key.eq_ignore_ascii_case(b"name=") => {
                if name.is_some() {
                    return Err(errors::LIBRARY_NAME_TWICE.into());
                }
                name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            }
            _ => {
                return Err(errors::library_metadata_value(&String::from_utf8_lossy(
                    part,
                )))
            }
        }
    }
    let name = name.ok_or(errors::LIBRARY_NAME_MISSING)?;
    if !valid_name(&name) {
        return Err(NAME_RULE.into());
    }
    let engine = parts[0].get(2..).unwrap_or_default();
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(errors::engine_not_found(&String::from_utf8_lossy(engine)));
    }
    Ok((name, code[end..].to_vec()))
}

/// What loading a library's code registered, as Lua functions of the interpreter it ran in.
pub struct Registered {
    /// Name, flags and description of each function.
    pub infos: Vec<FunctionInfo>,
    /// The callbacks, in the same order.
    pub callbacks: Vec<Function>,
}

/// Runs a library's code in `lua` with a read-only `redis` table that offers only
/// `register_function` (and logging), in an environment of its own where every other name is
/// undefined; once loaded, the environment reads through to `globals`, so the registered
/// functions see what scripts see (the whole `redis` API included). Neither the library's code
/// nor its functions may create globals.
pub fn load_into(lua: &Lua, code: &[u8], globals: &Table) -> Result<Registered, String> {
    let (_, body) = parse_shebang(code)?;
    let protect = super::protection(lua).map_err(|e| format!("ERR {e}"))?;
    let setup = || -> mlua::Result<(Table, Table, Function, Function)> {
        let newindex: Function = protect.raw_get("__newindex")?;
        let undefined = lua.create_table()?;
        undefined.raw_set("__index", protect.raw_get::<Function>("__index")?)?;
        let api = lua.create_table()?;
        api.set_metatable(Some(undefined.clone()))?;
        api.raw_set("log", lua.create_function(|_, ()| Ok(()))?)?;
        for (name, value) in [
            ("LOG_DEBUG", 0),
            ("LOG_VERBOSE", 1),
            ("LOG_NOTICE", 2),
            ("LOG_WARNING", 3),
        ] {
            api.raw_set(name, value)?;
        }
        api.raw_set("REDIS_VERSION", crate::REDIS_VERSION)?;
        api.raw_set("REDIS_VERSION_NUM", super::redis_version_num())?;
        // While loading: `redis` (read-only) and nothing else.
        let names = lua.create_table()?;
        names.set_metatable(Some(undefined))?;
        names.raw_set("redis", super::sandbox::proxy(lua, &api, &newindex)?)?;
        let env = lua.create_table()?;
        env.set_metatable(Some(super::sandbox::proxy_meta(lua, &names, &newindex)?))?;
        let f = lua
            .load(&body[..])
            .set_name("@user_function")
            .set_environment(env.clone())
            .into_function()?;
        Ok((env, api, f, newindex))
    };
    let (env, api, chunk, newindex) =
        setup().map_err(|e| format!("ERR Error compiling function: {}", super::lua_message(&e)))?;
    let collected: std::cell::RefCell<Vec<(FunctionInfo, Function)>> = Default::default();
    let run = lua.scope(|scope| {
        let register = scope.create_function(|lua, args: mlua::MultiValue| {
            let entry = register_args(lua, args)
                .map_err(|text| mlua::Error::external(super::CallError(text)))?;
            let mut list = collected.borrow_mut();
            if list.iter().any(|(f, _)| f.name == entry.0.name) {
                return Err(mlua::Error::external(super::CallError(
                    errors::FUNCTION_EXISTS_IN_LIBRARY.into(),
                )));
            }
            list.push(entry);
            Ok(())
        })?;
        api.raw_set("register_function", register)?;
        chunk.call::<()>(())
    });
    // Functions that keep the library's `redis` table may not register more.
    let late = lua
        .create_function(|_, ()| -> mlua::Result<()> {
            Err(mlua::Error::external(super::CallError(
                errors::REGISTER_AFTER_LOAD.into(),
            )))
        })
        .and_then(|f| api.raw_set("register_function", f));
    if let Err(e) = late {
        return Err(format!("ERR {e}"));
    }
    if let Err(e) = run {
        let msg = super::lua_message(&e);
        let msg = if super::is_call_error(&e) {
            msg
        } else {
            format!("ERR {msg}")
        };
        return Err(format!("ERR Error registering functions: {msg}"));
    }
    let collected = collected.into_inner();
    if collected.is_empty() {
        return Err("ERR No functions registered".into());
    }
    // From now on (the functions run), the other names resolve to the interpreter's globals.
    let runtime = || -> mlua::Result<()> {
        env.set_metatable(Some(super::sandbox::proxy_meta(lua, globals, &newindex)?))
    };
    runtime().map_err(|e| format!("ERR {e}"))?;
    let (infos, callbacks) = collected.into_iter().unzip();
    Ok(Registered { infos, callbacks })
}

/// A Lua string or number as text (Lua's `lua_isstring` / `lua_tostring`), as Redis reads
/// names and flags.
fn lua_text(lua: &Lua, v: &Value) -> Option<String> {
    match v {
        Value::String(_) | Value::Integer(_) | Value::Number(_) => lua
            .coerce_string(v.clone())
            .ok()
            .flatten()
            .map(|s| s.to_string_lossy()),
        _ => None,
    }
}

/// The arguments of redis.register_function: `(name, callback)` or a table with
/// `function_name`, `callback`, `flags`, `description` (keys in any case), checked in Redis's
/// order with its errors.
fn register_args(lua: &Lua, args: mlua::MultiValue) -> Result<(FunctionInfo, Function), String> {
    let args: Vec<Value> = args.into_iter().collect();
    let (name, callback, flags, description) = match args.as_slice() {
        [name, callback] => {
            let name = lua_text(lua, name).ok_or(errors::REGISTER_FIRST_ARG)?;
            let Value::Function(f) = callback else {
                return Err(errors::REGISTER_SECOND_ARG.into());
            };
            (name, f.clone(), Vec::new(), None)
        }
        [Value::Table(t)] => named_register_args(lua, t)?,
        [_] => return Err(errors::REGISTER_SINGLE_ARG.into()),
        _ => return Err(errors::REGISTER_ARG_COUNT.into()),
    };
    if !valid_name(&name) {
        return Err(NAME_RULE.into());
    }
    Ok((
        FunctionInfo {
            name,
            description,
            flags,
        },
        callback,
    ))
}

/// What redis.register_function's table form names.
type NamedArgs = (String, Function, Vec<String>, Option<String>);

/// The table form of redis.register_function, walked in table order like Redis's
/// `luaRegisterFunctionReadNamedArgs` (so the first bad entry met is the one reported).
fn named_register_args(lua: &Lua, t: &Table) -> Result<NamedArgs, String> {
    let (mut name, mut callback, mut flags, mut description) = (None, None, Vec::new(), None);
    for pair in t.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| format!("ERR {e}"))?;
        let key = lua_text(lua, &key).ok_or(errors::REGISTER_KEY_NOT_STRING)?;
        match key.to_ascii_lowercase().as_str() {
            "function_name" => {
                name = Some(lua_text(lua, &value).ok_or(errors::REGISTER_NAME_TYPE)?)
            }
            "description" => {
                description = Some(lua_text(lua, &value).ok_or(errors::REGISTER_DESCRIPTION_TYPE)?)
            }
            "callback" => match value {
                Value::Function(f) => callback = Some(f),
                _ => return Err(errors::REGISTER_CALLBACK_TYPE.into()),
            },
            "flags" => {
                let Value::Table(list) = value else {
                    return Err(errors::REGISTER_FLAGS_TYPE.into());
                };
                flags = read_flags(lua, &list).ok_or(errors::REGISTER_UNKNOWN_FLAG)?;
            }
            _ => return Err(errors::REGISTER_UNKNOWN_ARG.into()),
        }
    }
    let name = name.ok_or(errors::REGISTER_NO_NAME)?;
    let callback = callback.ok_or(errors::REGISTER_NO_CALLBACK)?;
    Ok((name, callback, flags, description))
}

/// The flags of a `flags` table (items 1, 2, ... up to the first nil, names in any case), in
/// Redis's order and spelling ([`super::SCRIPT_FLAGS`]); None if one is not a known flag.
fn read_flags(lua: &Lua, list: &Table) -> Option<Vec<String>> {
    let mut given = [false; super::SCRIPT_FLAGS.len()];
    for i in 1.. {
        let item: Value = list.raw_get(i).ok()?;
        if item == Value::Nil {
            break;
        }
        let text = lua_text(lua, &item)?;
        let at = super::SCRIPT_FLAGS
            .iter()
            .position(|f| f.eq_ignore_ascii_case(&text))?;
        given[at] = true;
    }
    Some(
        super::SCRIPT_FLAGS
            .iter()
            .zip(given)
            .filter(|(_, on)| *on)
            .map(|(f, _)| f.to_string())
            .collect(),
    )
}

/// How long a library's top-level code may run when it is loaded (Redis's 500 ms).
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// Validates a library by loading it into a throw-away interpreter, as sandboxed as the
/// workers' ones: its top-level code is stopped after [`LOAD_TIMEOUT`] with Redis's
/// "FUNCTION LOAD timeout", and its memory is limited as a script's is.
fn compile_library(code: &Bytes) -> Result<Library, String> {
    let (name, _) = parse_shebang(code)?;
    let lua = super::new_interpreter().map_err(|e| format!("ERR {e}"))?;
    let started = std::time::Instant::now();
    lua.set_global_hook(
        mlua::HookTriggers::new().every_nth_instruction(super::KILL_CHECK_INSTRUCTIONS),
        move |_, _| {
            if started.elapsed() > LOAD_TIMEOUT {
                Err(mlua::Error::RuntimeError(
                    errors::FUNCTION_LOAD_TIMEOUT.into(),
                ))
            } else {
                Ok(mlua::VmState::Continue)
            }
        },
    )
    .map_err(|e| format!("ERR {e}"))?;
    let globals = lua.globals();
    let registered = load_into(&lua, code, &globals)?;
    Ok(Library {
        name,
        code: code.clone(),
        functions: registered.infos,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_and_restore_round_trip_and_reject_damage() {
        let reg = FunctionRegistry::new();
        let code = Bytes::from_static(
            b"#!lua name=lib\nredis.register_function('f', function() return 1 end)",
        );
        assert_eq!(reg.load(&code, false), Ok("lib".to_string()));
        let dump = reg.dump();
        let other = FunctionRegistry::new();
        other
            .restore(&dump, RestorePolicy::Append)
            .unwrap_or_default();
        assert!(other.find("f").is_some());
        let mut bad = dump.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(other.restore(&bad, RestorePolicy::Replace).is_err());
        assert!(other.restore(&dump[..5], RestorePolicy::Replace).is_err());
    }
}
