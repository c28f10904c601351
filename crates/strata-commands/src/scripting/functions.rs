//! FUNCTION libraries: the registry of loaded libraries and their functions (shared by every
//! connection), validation of a library's code when it is loaded, and the byte format in which
//! libraries are persisted and dumped. Each worker thread's interpreter loads the libraries into
//! itself when the registry's generation changes (see `Vm` in the parent module).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};

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

const FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

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

/// Magic bytes that start a FUNCTION DUMP payload and the persisted record.
const MAGIC: &[u8; 8] = b"STRATAFN";

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
            .find(|f| f.name == name)
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

    /// Every library's code in the dump format (`docs/format.md`): `STRATAFN`, a version byte
    /// (1), a u32 count, then per library a u32 length and the code (integers big-endian), then
    /// a CRC-32 of everything before it.
    pub fn dump(&self) -> Vec<u8> {
        let libs = self.libraries();
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.push(1);
        out.extend_from_slice(&(libs.len() as u32).to_be_bytes());
        for l in &libs {
            out.extend_from_slice(&(l.code.len() as u32).to_be_bytes());
            out.extend_from_slice(&l.code);
        }
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
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
            .any(|other| other.functions.iter().any(|g| g.name == f.name));
        if taken {
            return Err(format!("ERR Function {} already exists", f.name));
        }
    }
    libs.insert(lib.name.clone(), Arc::new(lib));
    Ok(())
}

fn parse_dump(payload: &[u8]) -> Option<Vec<Bytes>> {
    let (body, crc) = payload.split_at_checked(payload.len().checked_sub(4)?)?;
    if crc32(body).to_be_bytes() != crc || !body.starts_with(MAGIC) || body.get(8) != Some(&1) {
        return None;
    }
    let mut rest = &body[9..];
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let count = u32::from_be_bytes(take(4)?.try_into().ok()?);
    let mut codes = Vec::new();
    for _ in 0..count {
        let len = u32::from_be_bytes(take(4)?.try_into().ok()?) as usize;
        codes.push(Bytes::copy_from_slice(take(len)?));
    }
    Some(codes)
}

/// CRC-32 (IEEE), bitwise: payloads are small.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

const NAME_RULE: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// The library name of already-validated code.
fn library_name_of(code: &[u8]) -> String {
    parse_shebang(code).map(|(n, _)| n).unwrap_or_default()
}

/// Reads `#!lua name=<name>`: the library name, and the code with that line blanked (so line
/// numbers in errors count it, as Redis's do).
fn parse_shebang(code: &[u8]) -> Result<(String, Vec<u8>), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    let line = String::from_utf8_lossy(&code[2..end]);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let invalid = || "ERR Invalid library metadata".to_string();
    if parts.next() != Some("lua") {
        return Err(invalid());
    }
    let mut name = None;
    for p in parts {
        match p.strip_prefix("name=") {
            Some(n) if name.is_none() => name = Some(n.to_string()),
            _ => return Err(invalid()),
        }
    }
    let name = name.ok_or_else(invalid)?;
    if !valid_name(&name) {
        return Err(NAME_RULE.into());
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

/// Runs a library's code in `lua` with a `redis` table that offers only `register_function`
/// (and logging), in an environment of its own whose other names resolve to `globals`; after
/// loading, the environment's `redis` becomes `full_redis`, so the registered functions call
/// the whole API when they run.
pub fn load_into(
    lua: &Lua,
    code: &[u8],
    globals: &Table,
    full_redis: Option<&Table>,
) -> Result<Registered, String> {
    let (_, body) = parse_shebang(code)?;
    let env = lua.create_table().map_err(|e| format!("ERR {e}"))?;
    let setup = || -> mlua::Result<(Table, Function)> {
        let meta = lua.create_table()?;
        meta.raw_set("__index", globals.clone())?;
        env.set_metatable(Some(meta))?;
        let api = lua.create_table()?;
        api.set_metatable(Some(super::protection(lua)?))?;
        for name in [
            "log",
            "LOG_DEBUG",
            "LOG_VERBOSE",
            "LOG_NOTICE",
            "LOG_WARNING",
        ] {
            if let Some(redis) = full_redis {
                api.raw_set(name, redis.raw_get::<Value>(name)?)?;
            }
        }
        let f = lua
            .load(&body[..])
            .set_name("@user_function")
            .set_environment(env.clone())
            .into_function()?;
        Ok((api, f))
    };
    let (api, chunk) =
        setup().map_err(|e| format!("ERR Error compiling function: {}", super::lua_message(&e)))?;
    let collected: std::cell::RefCell<Vec<(FunctionInfo, Function)>> = Default::default();
    let run = lua.scope(|scope| {
        let register = scope.create_function(|_, args: mlua::MultiValue| {
            let entry = register_args(args)
                .map_err(|text| mlua::Error::external(super::CallError(text)))?;
            let mut list = collected.borrow_mut();
            if list.iter().any(|(f, _)| f.name == entry.0.name) {
                return Err(mlua::Error::external(super::CallError(format!(
                    "ERR Function {} already exists",
                    entry.0.name
                ))));
            }
            list.push(entry);
            Ok(())
        })?;
        api.raw_set("register_function", register)?;
        env.raw_set("redis", api.clone())?;
        chunk.call::<()>(())
    });
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
    if let Some(redis) = full_redis {
        env.raw_set("redis", redis.clone())
            .map_err(|e| format!("ERR {e}"))?;
    }
    let (infos, callbacks) = collected.into_iter().unzip();
    Ok(Registered { infos, callbacks })
}

/// The arguments of redis.register_function: `(name, callback)` or a table with
/// `function_name`, `callback`, `flags`, `description`.
fn register_args(args: mlua::MultiValue) -> Result<(FunctionInfo, Function), String> {
    let args: Vec<Value> = args.into_iter().collect();
    let (name, callback, flags, description) = match args.as_slice() {
        [Value::String(n), Value::Function(f)] => (n.to_string_lossy(), f.clone(), vec![], None),
        [Value::Table(t)] => {
            let name = match t.raw_get::<Value>("function_name") {
                Ok(Value::String(s)) => s.to_string_lossy(),
                _ => return Err("ERR function_name argument given to redis.register_function must be a string".into()),
            };
            let callback = match t.raw_get::<Value>("callback") {
                Ok(Value::Function(f)) => f,
                _ => return Err("ERR callback argument given to redis.register_function must be a function".into()),
            };
            let mut flags = Vec::new();
            if let Ok(Value::Table(fl)) = t.raw_get::<Value>("flags") {
                for v in fl.sequence_values::<Value>() {
                    match v {
                        Ok(Value::String(s)) if FLAGS.contains(&s.to_string_lossy().as_str()) => {
                            flags.push(s.to_string_lossy())
                        }
                        _ => return Err("ERR unknown flag given".into()),
                    }
                }
            }
            let description = match t.raw_get::<Value>("description") {
                Ok(Value::String(s)) => Some(s.to_string_lossy()),
                _ => None,
            };
            (name, callback, flags, description)
        }
        [_] => return Err("ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into()),
        _ => return Err("ERR wrong number of arguments to redis.register_function".into()),
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

/// Validates a library by loading it into a throw-away interpreter.
fn compile_library(code: &Bytes) -> Result<Library, String> {
    let (name, _) = parse_shebang(code)?;
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )
    .map_err(|e| format!("ERR {e}"))?;
    let globals = lua.globals();
    let registered = load_into(&lua, code, &globals, None)?;
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
