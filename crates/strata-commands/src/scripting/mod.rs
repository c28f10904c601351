//! Lua 5.1 scripting (EVAL, EVALSHA and their read-only forms): the shared script cache, one
//! sandboxed Lua interpreter per worker thread, and the `redis` API a script calls. A script runs
//! atomically: it holds the locks of its declared KEYS for its whole run (and takes the locks of
//! any other key it reaches as it goes, patiently, without ever waiting while it could deadlock),
//! so scripts on disjoint keys run in parallel on different threads, where Redis runs one at a
//! time. Interpreters compile a script the first time they meet it and keep the function.
//!
//! A script may start with a shebang line, `#!lua flags=no-writes,allow-oom`, as in Redis 7: the
//! flags are read once when the script enters the cache, the line is skipped when compiling (its
//! line feed kept, so line numbers count it), and `no-writes` makes the run read-only.
//!
//! A script still running after `busy-reply-threshold` declares itself busy on the key locks it
//! holds (`strata::Db::declare_busy`), so a client already waiting for one of those keys gets
//! `-BUSY` as soon as the threshold passes, and joins the count [`ScriptCache::busy_error`]
//! reads: while it is above zero the dispatcher answers `-BUSY` to every command without the
//! `allow-busy` flag, as Redis does.

mod convert;
pub mod functions;
mod libs;
mod sandbox;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use strata_resp::Frame;

use crate::errors::{self, err};
use crate::registry as table;
use crate::{BlockMode, Ctx};

/// The scripts loaded by EVAL and SCRIPT LOAD, by SHA1, shared by every connection.
pub struct ScriptCache {
    bodies: RwLock<HashMap<String, CachedScript>>,
    /// Bumped by SCRIPT FLUSH: interpreters drop their compiled functions when it changes.
    generation: AtomicU64,
    /// The scripts and functions running right now, for SCRIPT KILL / FUNCTION KILL.
    running: Mutex<Vec<Arc<Running>>>,
    /// `busy-reply-threshold` in milliseconds: a script running longer turns away the clients
    /// that need its keys with -BUSY.
    busy_threshold_ms: AtomicU64,
    /// How many of the running scripts and functions are past the threshold.
    busy_now: Arc<BusyGauge>,
}

/// Scripts (`[0]`) and functions (`[1]`) running past `busy-reply-threshold` right now: while
/// any does, the dispatcher turns away every command without the `allow-busy` flag.
#[derive(Default)]
struct BusyGauge([AtomicU32; 2]);

/// Redis's default `busy-reply-threshold`.
const DEFAULT_BUSY_THRESHOLD_MS: u64 = 5000;

impl Default for ScriptCache {
    fn default() -> Self {
        ScriptCache {
            bodies: RwLock::default(),
            generation: AtomicU64::new(0),
            running: Mutex::default(),
            busy_threshold_ms: AtomicU64::new(DEFAULT_BUSY_THRESHOLD_MS),
            busy_now: Arc::default(),
        }
    }
}

/// A script in the cache: its source and what its shebang line declares.
#[derive(Clone, Debug)]
pub struct CachedScript {
    /// The source, shebang line included.
    pub body: Bytes,
    /// None: no shebang line (Redis's compatibility mode, where the run is read-only only for
    /// EVAL_RO / EVALSHA_RO).
    pub shebang: Option<Shebang>,
}

/// What an EVAL script's `#!lua flags=...` line declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shebang {
    /// Bytes of the line before its line feed: skipped when compiling.
    pub len: usize,
    /// `no-writes`: the script never writes, so it may run as EVAL_RO and its writes fail.
    pub no_writes: bool,
}

/// The flags a script's shebang or a function's `flags` table may name, in Redis's order (FUNCTION
/// LIST lists them so). Only `no-writes` changes anything in Strata: `allow-oom` (no `maxmemory`
/// limit is enforced), `allow-stale` (no replication) and `no-cluster` /
/// `allow-cross-slot-keys` (no cluster mode) are accepted and remembered.
pub const SCRIPT_FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// Reads the shebang line of an EVAL script as Redis's `evalExtractShebangFlags` does: Ok(None)
/// when the script does not start with `#!`; Err carries the error text.
pub fn parse_shebang(body: &[u8]) -> Result<Option<Shebang>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    // Redis looks for the line feed with strchr, which stops at a NUL byte.
    let text = body.split(|&b| b == 0).next().unwrap_or_default();
    let Some(len) = text.iter().position(|&b| b == b'\n') else {
        return Err(errors::SHEBANG_INVALID.into());
    };
    let parts = match strata_resp::split_inline_args(&body[..len]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err(errors::SHEBANG_INVALID_ENGINE.into()),
    };
    if &parts[0][..] != b"#!lua" {
        return Err(errors::shebang_unexpected_engine(&String::from_utf8_lossy(
            &parts[0],
        )));
    }
    let mut no_writes = false;
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(errors::shebang_unknown_option(&String::from_utf8_lossy(
                part,
            )));
        };
        // Like sdssplitlen: nothing at all is no flag, but an empty item is an unknown one.
        if list.is_empty() {
            continue;
        }
        for flag in list.split(|&b| b == b',') {
            if !SCRIPT_FLAGS.iter().any(|f| f.as_bytes() == flag) {
                return Err(errors::shebang_unexpected_flag(&String::from_utf8_lossy(
                    flag,
                )));
            }
            no_writes |= flag == b"no-writes";
        }
    }
    Ok(Some(Shebang { len, no_writes }))
}

/// Adds the script `body` to the cache unless it is there: its shebang is read and it is
/// compiled in this thread's interpreter first, and a script that fails either is not cached
/// (Redis's EVAL and SCRIPT LOAD). Returns its SHA1 and shebang.
pub fn load_script(ctx: &Ctx<'_>, body: &Bytes) -> Result<(String, Option<Shebang>), Frame> {
    let cache = ctx.server.scripts();
    let sha = sha1_hex(body);
    if let Some(cached) = cache.get(sha.as_bytes()) {
        return Ok((sha, cached.shebang));
    }
    let shebang = parse_shebang(body).map_err(err)?;
    let generation = cache.generation.load(Ordering::Acquire);
    with_vm(generation, |vm| {
        vm.script(&sha, body, shebang.map_or(0, |s| s.len))
            .map(|_| ())
    })??;
    cache.insert(
        sha.clone(),
        CachedScript {
            body: body.clone(),
            shebang,
        },
    );
    Ok((sha, shebang))
}

/// The tag a busy EVAL script marks its key locks with (see `strata::Db::declare_busy`).
const BUSY_TAG_SCRIPT: u8 = 1;
/// The tag of a busy function.
const BUSY_TAG_FUNCTION: u8 = 2;

/// The -BUSY error for a command that needs a key a busy script holds: Redis's text names the
/// kill command of what holds it.
pub fn busy_text(b: strata::Busy) -> &'static str {
    if b.0 == BUSY_TAG_FUNCTION {
        errors::BUSY_FUNCTION
    } else {
        errors::BUSY_SCRIPT
    }
}

/// [`busy_text`] as a reply.
pub fn busy_reply(b: strata::Busy) -> Frame {
    err(busy_text(b))
}

/// A script or function being run.
pub struct Running {
    /// Set by SCRIPT KILL: the interpreter raises an error at its next check.
    kill: AtomicBool,
    /// The script ran a write command: it may no longer be killed (its effects would be half
    /// applied).
    wrote: AtomicBool,
    started: std::time::Instant,
    /// When (in microseconds of run time) to try handing the worker thread off next.
    next_hand_off_us: AtomicU64,
    /// A function (FCALL) rather than an EVAL script.
    function: bool,
    /// A function's name and FCALL command, for FUNCTION STATS.
    call: Option<(String, Vec<Bytes>)>,
    /// Run time (microseconds) after which the script declares itself busy.
    busy_after_us: u64,
    /// It has declared itself busy (only its own thread reads and writes this).
    busy: AtomicBool,
    /// The database whose key locks it holds.
    db: strata::Db,
    /// The server's count of busy scripts, which this one joins past the threshold.
    gauge: Arc<BusyGauge>,
}

impl Running {
    /// Called from the interpreter's periodic check: past the threshold, marks the key locks
    /// this thread holds as busy.
    fn check_busy(&self, elapsed_us: u64) {
        if elapsed_us >= self.busy_after_us && !self.busy.swap(true, Ordering::Relaxed) {
            let tag = if self.function {
                BUSY_TAG_FUNCTION
            } else {
                BUSY_TAG_SCRIPT
            };
            self.db.declare_busy(tag);
            self.gauge.0[usize::from(self.function)].fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The script is over: it leaves the busy count if it had joined it.
    fn end_busy(&self) {
        if self.busy.load(Ordering::Relaxed) {
            self.db.end_busy();
            self.gauge.0[usize::from(self.function)].fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A script still running after this long hands its worker thread's other connections to
/// another thread (tokio's `block_in_place`), so a long script never stalls clients that do not
/// wait for its keys. Later attempts follow at 4x the previous delay.
const HAND_OFF_AFTER_US: u64 = 2_000;

/// Gives this worker thread's runtime duties to another thread: `block_in_place` starts one, and
/// the short sleep lets it take them over before this thread could reclaim them (it keeps
/// running the script without them). Tried again later if the handover did not happen.
fn hand_off_worker() {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        tokio::task::block_in_place(|| std::thread::sleep(std::time::Duration::from_micros(500)));
    }
}

/// What SCRIPT KILL / FUNCTION KILL found.
pub enum KillOutcome {
    /// A script will stop at its next check.
    Killed,
    /// Nothing runs.
    NotBusy,
    /// The running script has written: it must finish.
    Unkillable,
    /// Only scripts of the other kind run (SCRIPT KILL while a function runs, FUNCTION KILL
    /// while an EVAL script runs).
    OtherKind,
}

impl ScriptCache {
    /// An empty cache.
    pub fn new() -> ScriptCache {
        ScriptCache::default()
    }

    /// Adds a script under its SHA1 (lowercase hex); see [`load_script`].
    fn insert(&self, sha: String, script: CachedScript) {
        self.bodies
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(sha)
            .or_insert(script);
    }

    /// The script with this SHA1 (any case).
    pub fn get(&self, sha: &[u8]) -> Option<CachedScript> {
        let sha = std::str::from_utf8(sha).ok()?.to_ascii_lowercase();
        self.bodies
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&sha)
            .cloned()
    }

    /// SCRIPT FLUSH.
    pub fn flush(&self) {
        self.bodies
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// `busy-reply-threshold` changed (CONFIG SET, start-up): applies to scripts started later.
    pub fn set_busy_threshold_ms(&self, ms: u64) {
        self.busy_threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// The -BUSY error every command without the `allow-busy` flag gets now, if a script or
    /// function has run past `busy-reply-threshold` (as Redis, naming the kill command of what
    /// runs: an EVAL script first). One atomic load when none has.
    #[inline]
    pub fn busy_error(&self) -> Option<&'static str> {
        let [scripts, functions] = &self.busy_now.0;
        if scripts.load(Ordering::Acquire) > 0 {
            Some(errors::BUSY_SCRIPT)
        } else if functions.load(Ordering::Acquire) > 0 {
            Some(errors::BUSY_FUNCTION)
        } else {
            None
        }
    }

    /// SCRIPT KILL (`function` false) / FUNCTION KILL (`function` true): stops the running
    /// scripts of that kind that have not written. As in Redis, a script that has written
    /// answers UNKILLABLE before the kind is looked at.
    pub fn kill(&self, function: bool) -> KillOutcome {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if running.is_empty() {
            return KillOutcome::NotBusy;
        }
        let killable: Vec<&Arc<Running>> = running
            .iter()
            .filter(|r| r.function == function && !r.wrote.load(Ordering::Acquire))
            .collect();
        if killable.is_empty() {
            return if running.iter().any(|r| r.wrote.load(Ordering::Acquire)) {
                KillOutcome::Unkillable
            } else {
                KillOutcome::OtherKind
            };
        }
        for r in killable {
            r.kill.store(true, Ordering::Release);
        }
        KillOutcome::Killed
    }

    /// FUNCTION STATS' `running_script`: the name, command and run time (ms) of the function
    /// that has run longest, if one runs.
    pub fn running_function(&self) -> Option<(String, Vec<Bytes>, u64)> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.iter().find_map(|r| {
            let (name, command) = r.call.clone()?;
            Some((name, command, r.started.elapsed().as_millis() as u64))
        })
    }

    fn start(&self, call: Option<(String, Vec<Bytes>)>, db: strata::Db) -> Arc<Running> {
        let threshold_ms = self.busy_threshold_ms.load(Ordering::Relaxed);
        let r = Arc::new(Running {
            kill: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            started: std::time::Instant::now(),
            next_hand_off_us: AtomicU64::new(HAND_OFF_AFTER_US),
            function: call.is_some(),
            call,
            busy_after_us: threshold_ms.saturating_mul(1000),
            busy: AtomicBool::new(false),
            db,
            gauge: self.busy_now.clone(),
        });
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(r.clone());
        r
    }

    fn finish(&self, r: &Arc<Running>) {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|x| !Arc::ptr_eq(x, r));
    }

    /// Number of cached scripts and their total size in bytes (INFO memory).
    pub fn usage(&self) -> (usize, usize) {
        let bodies = self.bodies.read().unwrap_or_else(|p| p.into_inner());
        (bodies.len(), bodies.values().map(|s| s.body.len()).sum())
    }
}

/// SHA1 of `data` in lowercase hex (redis.sha1hex, script names).
pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// What to run.
pub enum Target<'a> {
    /// An EVAL script: its SHA1 (lowercase hex) and source.
    Script {
        /// The SHA1.
        sha: &'a str,
        /// The source.
        body: &'a Bytes,
        /// Bytes of its shebang line (0 without one), skipped when compiling.
        skip: usize,
    },
    /// A function of a loaded library (FCALL).
    Function {
        /// Its name.
        name: &'a str,
        /// The FCALL / FCALL_RO command as the client sent it (FUNCTION STATS shows it).
        command: &'a [Bytes],
    },
}

/// One script or function invocation.
pub struct Invocation<'a> {
    /// The script or function.
    pub target: Target<'a>,
    /// KEYS.
    pub keys: &'a [Bytes],
    /// ARGV.
    pub args: &'a [Bytes],
    /// EVAL_RO / EVALSHA_RO: write commands are refused.
    pub read_only: bool,
}

/// An error a `redis.call` raises: the reply's text, to become the script's error reply.
#[derive(Debug)]
struct CallError(String);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CallError {}

thread_local! {
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
    /// The script this thread runs now (the interpreter's hook checks its kill flag).
    static CURRENT: RefCell<Option<Arc<Running>>> = const { RefCell::new(None) };
}

/// How often (in Lua VM instructions) a running script checks whether it was killed or runs long.
const KILL_CHECK_INSTRUCTIONS: u32 = 10_000;

/// Runs a script for the connection: holds its declared keys, runs it in this thread's
/// interpreter, converts its result.
pub fn run_script(ctx: &mut Ctx<'_>, inv: &Invocation<'_>) -> Frame {
    let db = ctx.session.db.clone();
    let index = db.index();
    // A read-only run cannot write its keys: holding them shared lets readers in.
    let keys = inv.keys.iter().map(|k| (index, &k[..]));
    let scope = match db.hold_unless_busy(keys, !inv.read_only) {
        Ok(scope) => scope,
        Err(busy) => return busy_reply(busy),
    };
    // Blocked clients are woken once the script is over (unless an EXEC around it does that).
    let outermost = ctx.session.ready_keys.is_none();
    if outermost {
        ctx.session.ready_keys = Some(Vec::new());
    }
    let mode = std::mem::replace(&mut ctx.session.block_mode, BlockMode::NoBlock);
    let was_in_script = std::mem::replace(&mut ctx.session.in_script, true);
    let generation = ctx.server.scripts().generation.load(Ordering::Acquire);
    let registry = ctx.server.functions().clone();
    let cache = ctx.server.scripts().clone();
    let call = match inv.target {
        Target::Function { name, command } => Some((name.to_string(), command.to_vec())),
        Target::Script { .. } => None,
    };
    let running = cache.start(call, db.clone());
    let outer = CURRENT.with(|c| c.replace(Some(running.clone())));
    // The script's writes reach the disk, and replicas, as one write batch: all or nothing
    // (see `exec`).
    let (reply, committed) = db.atomically(|| {
        with_vm(generation, |vm| {
            vm.refresh_functions(&registry);
            vm.run(ctx, inv)
        })
        .unwrap_or_else(|e| e)
    });
    let reply = match committed {
        Ok(()) => reply,
        Err(e) => crate::errors::from_db(e),
    };
    CURRENT.with(|c| *c.borrow_mut() = outer);
    // A SELECT inside the script changed the script's database, not its caller's.
    if ctx.session.db.index() != index {
        ctx.session.db = db.clone();
        ctx.server.client_update(ctx.session);
    }
    running.end_busy();
    cache.finish(&running);
    ctx.session.in_script = was_in_script;
    ctx.session.block_mode = mode;
    drop(scope);
    if outermost {
        for (d, key) in ctx.session.ready_keys.take().unwrap_or_default() {
            ctx.server.key_ready(d, &key);
        }
    }
    reply
}

/// Runs `f` with this thread's interpreter, made anew when SCRIPT FLUSH moved the generation.
fn with_vm<R>(generation: u64, f: impl FnOnce(&mut Vm) -> R) -> Result<R, Frame> {
    VM.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|vm| vm.generation != generation) {
            match Vm::new(generation) {
                Ok(vm) => *slot = Some(vm),
                Err(e) => return Err(err(format!("ERR could not start the Lua interpreter: {e}"))),
            }
        }
        match slot.as_mut() {
            Some(vm) => Ok(f(vm)),
            None => Err(err("ERR could not start the Lua interpreter")),
        }
    })
}

/// The metatable that makes a table (the globals, the `redis` table of a library being loaded)
/// read-only, with Redis's errors for writes and for reads of names it does not have.
fn protection(lua: &Lua) -> mlua::Result<Table> {
    let protect = lua.create_table()?;
    protect.raw_set(
        "__index",
        lua.create_function(|lua, (_, name): (Value, Value)| -> mlua::Result<()> {
            let name = lua
                .coerce_string(name)?
                .map(|s| s.to_string_lossy())
                .unwrap_or_default();
            Err(mlua::Error::RuntimeError(format!(
                "{}Script attempted to access nonexistent global variable '{name}'",
                caller_position(lua)
            )))
        })?,
    )?;
    protect.raw_set(
        "__newindex",
        lua.create_function(|lua, _: MultiValue| -> mlua::Result<()> {
            Err(mlua::Error::RuntimeError(format!(
                "{}Attempt to modify a readonly table",
                caller_position(lua)
            )))
        })?,
    )?;
    Ok(protect)
}

/// REDIS_VERSION as a number: 0x00MMmmpp.
fn redis_version_num() -> i64 {
    crate::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0))
        .fold(0, |acc, p| (acc << 8) | p)
}

/// One worker thread's interpreter.
struct Vm {
    lua: Lua,
    generation: u64,
    functions: HashMap<String, Function>,
    /// FUNCTION libraries' callbacks by function name, as of `fn_generation`.
    fcalls: HashMap<String, (String, Function)>,
    fn_generation: Option<u64>,
    /// The table the (empty, read-only) globals table reads through to: KEYS and ARGV go here.
    hidden: Table,
    xpcall: Function,
    handler: Function,
    /// `bind(f, keys, args)`: a Lua closure calling `f(keys, args)`, for xpcall (which passes no
    /// arguments in Lua 5.1); being Lua, it keeps the error position of what `f` raises.
    bind: Function,
}

/// The code run once per interpreter after the Rust-side set-up: libraries Redis removes.
const SANDBOX: &str = r#"
loadfile = nil
dofile = nil
print = nil
getfenv = nil
setfenv = nil
newproxy = nil
module = nil
require = nil
package = nil
"#;

/// Most memory one interpreter may hold: past it, allocations fail with "not enough memory"
/// (Redis has no such limit; a script allocating without end grows it until the system kills
/// it).
const LUA_MEMORY_LIMIT: usize = 1 << 30;

/// Interpreter memory past which a finished script's garbage is collected at once.
const COLLECT_AFTER_BYTES: usize = 64 << 20;

/// What the interpreter's `redis.call`, `redis.pcall`, `redis.setresp` and
/// `redis.acl_check_cmd` act on while a script runs: its client, and its reply protocol.
struct RunState<'r, 'c> {
    ctx: RefCell<&'r mut Ctx<'c>>,
    resp3: Cell<bool>,
    read_only: bool,
}

thread_local! {
    /// The [`RunState`] of the script this thread runs (null: none), its lifetimes erased.
    static RUN: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// Publishes a [`RunState`] in [`RUN`] for as long as it lives (restoring what was there).
struct RunGuard {
    outer: *const (),
}

impl RunGuard {
    fn enter(state: &RunState<'_, '_>) -> RunGuard {
        let me = state as *const RunState<'_, '_> as *const ();
        RunGuard {
            outer: RUN.with(|r| r.replace(me)),
        }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        RUN.with(|r| r.set(self.outer));
    }
}

/// Runs `f` on the running script's [`RunState`]; an error when no script runs on this thread.
fn with_run<R>(f: impl FnOnce(&RunState<'_, '_>) -> mlua::Result<R>) -> mlua::Result<R> {
    let at = RUN.with(Cell::get);
    if at.is_null() {
        return Err(mlua::Error::external(CallError(
            errors::SCRIPT_NOT_RUNNING.into(),
        )));
    }
    // SAFETY: `at` was set by `RunGuard::enter` from a `RunState` that outlives the guard,
    // and the guard resets `RUN` before the state goes away; `f` is generic over the
    // lifetimes, so it cannot keep the reference beyond this call.
    let run = unsafe { &*(at as *const RunState<'_, '_>) };
    f(run)
}

/// A Lua interpreter with Redis's libraries (`cjson` and the like come later) and without the
/// functions Redis removes, its memory limited to [`LUA_MEMORY_LIMIT`].
fn new_interpreter() -> mlua::Result<Lua> {
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )?;
    lua.load(SANDBOX).set_name("@sandbox").exec()?;
    lua.set_memory_limit(LUA_MEMORY_LIMIT)?;
    Ok(lua)
}

impl Vm {
    fn new(generation: u64) -> mlua::Result<Vm> {
        let lua = new_interpreter()?;
        let globals = lua.globals();
        let redis = lua.create_table()?;
        redis.raw_set(
            "sha1hex",
            lua.create_function(|lua, args: mlua::Variadic<Value>| match args.as_slice() {
                [v] => {
                    let s = lua.coerce_string(v.clone())?;
                    Ok(sha1_hex(
                        &s.map(|s| s.as_bytes().to_vec()).unwrap_or_default(),
                    ))
                }
                _ => Err(mlua::Error::external(CallError(
                    errors::SCRIPT_SHA1HEX_ARGS.into(),
                ))),
            })?,
        )?;
        redis.raw_set(
            "error_reply",
            lua.create_function(|lua, args: mlua::Variadic<Value>| {
                let t = lua.create_table()?;
                match args.as_slice() {
                    [Value::String(s)] => t.raw_set("err", error_text(&s.as_bytes()))?,
                    _ => t.raw_set("err", errors::SCRIPT_REPLY_ARGS)?,
                }
                Ok(t)
            })?,
        )?;
        redis.raw_set(
            "status_reply",
            lua.create_function(|lua, args: mlua::Variadic<Value>| {
                let t = lua.create_table()?;
                match args.as_slice() {
                    [Value::String(s)] => t.raw_set("ok", s)?,
                    _ => t.raw_set("err", errors::SCRIPT_REPLY_ARGS)?,
                }
                Ok(t)
            })?,
        )?;
        redis.raw_set("log", lua.create_function(|_, ()| Ok(()))?)?;
        redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
        redis.raw_set("debug", lua.create_function(|_, ()| Ok(()))?)?;
        redis.raw_set("REDIS_VERSION", crate::REDIS_VERSION)?;
        redis.raw_set("REDIS_VERSION_NUM", redis_version_num())?;
        redis.raw_set("set_repl", lua.create_function(|_, ()| Ok(()))?)?;
        redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
        for (name, value) in [
            ("LOG_DEBUG", 0),
            ("LOG_VERBOSE", 1),
            ("LOG_NOTICE", 2),
            ("LOG_WARNING", 3),
            ("REPL_NONE", 0),
            ("REPL_SLAVE", 1),
            ("REPL_REPLICA", 1),
            ("REPL_AOF", 2),
            ("REPL_ALL", 3),
        ] {
            redis.raw_set(name, value)?;
        }
        globals.raw_set("redis", redis.clone())?;
        globals.raw_set("bit", bit_library(&lua)?)?;
        // Made once per interpreter: they reach the running script's client through `RUN`.
        // redis.call and redis.pcall get their arguments packed in one table (see
        // `pack_arguments`), so thousands of them cost no interpreter references.
        for (name, raise) in [("call", true), ("pcall", false)] {
            let f = lua.create_function(move |lua, (args, n): (Table, i64)| {
                with_run(|run| {
                    redis_call(
                        lua,
                        &run.ctx,
                        run.resp3.get(),
                        run.read_only,
                        &args,
                        n,
                        raise,
                    )
                })
            })?;
            redis.raw_set(name, packing(&lua, f)?)?;
        }
        redis.raw_set(
            "setresp",
            lua.create_function(|_, v: Value| {
                with_run(|run| match v {
                    Value::Integer(n @ (2 | 3)) => {
                        run.resp3.set(n == 3);
                        Ok(())
                    }
                    _ => Err(mlua::Error::external(CallError(
                        "ERR RESP version must be 2 or 3.".into(),
                    ))),
                })
            })?,
        )?;
        redis.raw_set(
            "acl_check_cmd",
            lua.create_function(|_, args: mlua::Variadic<Value>| {
                with_run(|run| acl_check_cmd(&run.ctx.borrow(), &args))
            })?,
        )?;
        libs::register(&lua, &globals)?;
        let xpcall: Function = globals.raw_get("xpcall")?;
        let handler = lua.create_function(error_handler)?;
        let bind: Function = lua
            .load("local f, k, a = ...; return function() return f(k, a) end")
            .set_name(sandbox::SANDBOX_CHUNK)
            .into_function()?;
        // Globals and library tables are read-only, as in Redis.
        let protect = protection(&lua)?;
        let sealed = sandbox::seal(
            &lua,
            protect.raw_get("__newindex")?,
            protect.raw_get("__index")?,
            lua.create_function(sandbox::pcall_error_value)?,
            lua.create_function(|_, ()| {
                Ok(CURRENT.with(|c| {
                    c.borrow()
                        .as_ref()
                        .is_some_and(|r| r.kill.load(Ordering::Acquire))
                }))
            })?,
        )?;
        lua.set_global_hook(
            mlua::HookTriggers::new().every_nth_instruction(KILL_CHECK_INSTRUCTIONS),
            |_, _| {
                let Some(r) = CURRENT.with(|c| c.borrow().clone()) else {
                    return Ok(mlua::VmState::Continue);
                };
                let elapsed_us = r.started.elapsed().as_micros() as u64;
                let next = r.next_hand_off_us.load(Ordering::Relaxed);
                if elapsed_us >= next {
                    r.next_hand_off_us.store(next * 4, Ordering::Relaxed);
                    hand_off_worker();
                }
                r.check_busy(elapsed_us);
                if r.kill.load(Ordering::Acquire) {
                    Err(mlua::Error::RuntimeError(errors::SCRIPT_KILLED.into()))
                } else {
                    Ok(mlua::VmState::Continue)
                }
            },
        )?;
        Ok(Vm {
            lua,
            generation,
            functions: HashMap::new(),
            fcalls: HashMap::new(),
            fn_generation: None,
            hidden: sealed.hidden,
            xpcall,
            handler,
            bind,
        })
    }

    /// Loads the registry's libraries into this interpreter if they changed since last time.
    fn refresh_functions(&mut self, registry: &functions::FunctionRegistry) {
        let generation = registry.generation();
        if self.fn_generation == Some(generation) {
            return;
        }
        self.fcalls.clear();
        let globals = self.lua.globals();
        for lib in registry.libraries() {
            // Validated when loaded; a failure here would only lose that library's functions.
            if let Ok(reg) = functions::load_into(&self.lua, &lib.code, &globals) {
                for (info, f) in reg.infos.into_iter().zip(reg.callbacks) {
                    // Function names are case-insensitive, as in Redis.
                    self.fcalls
                        .insert(info.name.to_ascii_lowercase(), (info.name, f));
                }
            }
        }
        self.fn_generation = Some(generation);
    }

    /// The compiled script `sha` (compiling `body` after its first `skip` bytes, the shebang
    /// line, the first time).
    fn script(&mut self, sha: &str, body: &Bytes, skip: usize) -> Result<Function, Frame> {
        if let Some(f) = self.functions.get(sha) {
            return Ok(f.clone());
        }
        let f = self
            .lua
            .load(&body[skip..])
            .set_name("@user_script")
            .into_function()
            .map_err(|e| {
                err(format!(
                    "ERR Error compiling script (new function): {}",
                    lua_message(&e)
                ))
            })?;
        self.functions.insert(sha.to_string(), f.clone());
        Ok(f)
    }

    /// Sets the KEYS and ARGV globals a script sees (`None`: clears them), in one protected
    /// call into the interpreter rather than one per table, string and field.
    fn set_keys_and_args(&self, lists: Option<(&[Bytes], &[Bytes])>) -> mlua::Result<()> {
        let named = [(c"KEYS", lists.map(|l| l.0)), (c"ARGV", lists.map(|l| l.1))];
        // SAFETY: `exec_raw` runs the closure in a protected call with `hidden` at index 1 and
        // LUA_MINSTACK free slots; each step pushes at most three values and pops them. A Lua
        // error (out of memory) leaves the closure, which owns nothing that needs dropping.
        unsafe {
            self.lua.exec_raw::<()>(self.hidden.clone(), |state| {
                for (name, items) in &named {
                    ffi::lua_pushstring(state, name.as_ptr());
                    match items {
                        Some(items) => {
                            ffi::lua_createtable(state, items.len() as std::ffi::c_int, 0);
                            for (i, item) in items.iter().enumerate() {
                                ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
                                ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
                            }
                        }
                        None => ffi::lua_pushnil(state),
                    }
                    ffi::lua_rawset(state, 1);
                }
            })
        }
    }

    fn run(&mut self, ctx: &mut Ctx<'_>, inv: &Invocation<'_>) -> Frame {
        let (f, name, is_function) = match inv.target {
            Target::Script { sha, body, skip } => match self.script(sha, body, skip) {
                Ok(f) => (f, sha.to_string(), false),
                Err(frame) => return frame,
            },
            Target::Function { name, .. } => match self.fcalls.get(&name.to_ascii_lowercase()) {
                Some((registered, f)) => (f.clone(), registered.clone(), true),
                None => return err(errors::FUNCTION_NOT_FOUND),
            },
        };
        let table = |items: &[Bytes]| -> mlua::Result<Table> {
            let t = self.lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_seti(i + 1, self.lua.create_string(item)?)?;
            }
            Ok(t)
        };
        // Scripts see KEYS and ARGV as globals; functions get them as their two arguments.
        let call_args = if is_function {
            match table(inv.keys).and_then(|k| Ok((k, table(inv.args)?))) {
                Ok(pair) => Some(pair),
                Err(e) => return err(format!("ERR {}", lua_message(&e))),
            }
        } else {
            if let Err(e) = self.set_keys_and_args(Some((inv.keys, inv.args))) {
                return err(format!("ERR {}", lua_message(&e)));
            }
            None
        };
        let state = RunState {
            ctx: RefCell::new(ctx),
            resp3: Cell::new(false),
            read_only: inv.read_only,
        };
        let outcome = {
            let _running = RunGuard::enter(&state);
            match &call_args {
                // Lua 5.1's xpcall passes no arguments: bind them in a closure first.
                Some((keys, args)) => self
                    .bind
                    .call::<Function>((f.clone(), keys.clone(), args.clone()))
                    .and_then(|bound| {
                        self.xpcall
                            .call::<MultiValue>((bound, self.handler.clone()))
                    }),
                None => self
                    .xpcall
                    .call::<MultiValue>((f.clone(), self.handler.clone())),
            }
        };
        let resp3 = state.resp3;
        // A script that left much garbage has it collected now, so the next one starts with the
        // interpreter's memory free.
        if self.lua.used_memory() > COLLECT_AFTER_BYTES {
            let _ = self.lua.gc_collect();
        }
        let values: Vec<Value> = match outcome {
            Ok(v) => v.into_iter().collect(),
            Err(e) => return err(format!("ERR {}", lua_message(&e))),
        };
        if !is_function {
            // KEYS and ARGV belong to this call only (functions must not see them).
            let _ = self.set_keys_and_args(None);
        }
        let ok = matches!(values.first(), Some(Value::Boolean(true)));
        let value = values.into_iter().nth(1).unwrap_or(Value::Nil);
        if ok {
            return convert::lua_to_frame(&self.lua, value, resp3.get());
        }
        // The handler's table: {err=..., source=..., line=...}. Without one the handler did
        // not run (Lua raises "not enough memory" past the memory limit without it) or failed.
        let t = match value {
            Value::Table(t) => t,
            Value::String(s) => return err(format!("ERR {}", s.to_string_lossy())),
            Value::Error(e) => return err(format!("ERR {}", lua_message(&e))),
            _ => return err("ERR Error running script"),
        };
        let msg: String = t.raw_get("err").unwrap_or_default();
        let source: String = t.raw_get("source").unwrap_or_else(|_| "?".into());
        let line: i64 = t.raw_get("line").unwrap_or(-1);
        err(format!("{msg} script: {name}, on {source}:{line}."))
    }
}

/// `inner` (a function of `(table, n)`) as a function of any number of arguments, which it
/// packs in a table: a callback given thousands of values (`redis.call(unpack(t))`) would
/// take one interpreter reference for each.
fn packing(lua: &Lua, inner: Function) -> mlua::Result<Function> {
    // SAFETY: `exec_raw` pushes `inner`; lua_pushcclosure pops it as the upvalue of the new
    // closure it leaves on the stack, which `exec_raw` returns.
    unsafe {
        lua.exec_raw::<Function>(inner, |state| {
            ffi::lua_pushcclosure(state, pack_arguments, 1);
        })
    }
}

/// The C function [`packing`] makes: calls its upvalue with a table of its arguments and their
/// count, and returns what that returns.
unsafe extern "C-unwind" fn pack_arguments(state: *mut ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua with a valid state; a C function always has LUA_MINSTACK free
    // slots above its arguments, and this pushes at most four values. Nothing with a
    // destructor lives in this frame if the call raises an error.
    unsafe {
        let n = ffi::lua_gettop(state);
        ffi::lua_createtable(state, n, 0);
        for i in 1..=n {
            ffi::lua_pushvalue(state, i);
            ffi::lua_rawseti(state, -2, i as ffi::lua_Integer);
        }
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, -2);
        ffi::lua_pushinteger(state, n as ffi::lua_Integer);
        ffi::lua_call(state, 2, ffi::LUA_MULTRET);
        ffi::lua_gettop(state) - n
    }
}

/// `redis.call` / `redis.pcall`: run a command as the script's connection, its `n` arguments
/// in `args[1..=n]`. Errors are raised (`call`) or returned as `{err=...}` (`pcall`).
fn redis_call(
    lua: &Lua,
    ctx: &RefCell<&mut Ctx<'_>>,
    resp3: bool,
    read_only: bool,
    args: &Table,
    n: i64,
    raise: bool,
) -> mlua::Result<Value> {
    let fail = |text: String| -> mlua::Result<Value> {
        if raise {
            Err(mlua::Error::external(CallError(text)))
        } else {
            let t = lua.create_table()?;
            t.raw_set("err", text)?;
            Ok(Value::Table(t))
        }
    };
    if n <= 0 {
        return fail(errors::SCRIPT_NO_ARGS.into());
    }
    let mut argv = Vec::with_capacity(n as usize);
    for i in 1..=n {
        // Numbers as Redis writes them ("%.17g"), not as Lua's tostring does.
        let bytes = match args.raw_get::<Value>(i)? {
            Value::String(s) => Bytes::copy_from_slice(&s.as_bytes()),
            Value::Integer(n) => Bytes::from(number_argument(n as f64)),
            Value::Number(x) => Bytes::from(number_argument(x)),
            _ => return fail(errors::SCRIPT_BAD_ARG.into()),
        };
        argv.push(bytes);
    }
    let Some(spec) = table::lookup(&argv[0]).filter(|s| !s.name.contains('|')) else {
        return fail(errors::SCRIPT_UNKNOWN_COMMAND.into());
    };
    if !spec.arity_ok(argv.len()) {
        return fail(errors::SCRIPT_WRONG_ARITY.into());
    }
    if spec.has(crate::command::NOSCRIPT) {
        return fail(errors::SCRIPT_NOT_ALLOWED.into());
    }
    if let Err(text) = crate::acl::check_in_script(&mut ctx.borrow_mut(), spec, &argv) {
        return fail(text);
    }
    // PUBLISH and SPUBLISH count as writes for read-only scripts (the may_replicate flag).
    if read_only
        && spec
            .flags
            .any(crate::command::WRITE | crate::command::MAY_REPLICATE)
    {
        return fail(errors::SCRIPT_WRITE_IN_RO.into());
    }
    if spec.has(crate::command::WRITE) {
        // A read-only replica (or a leader short of replicas) refuses the script's writes.
        if let Some(Frame::Error(e)) = ctx.borrow().server.refusal(spec) {
            return fail(error_text(&e));
        }
        CURRENT.with(|c| {
            if let Some(r) = c.borrow().as_ref() {
                r.wrote.store(true, Ordering::Release)
            }
        });
    }
    let frame = {
        let mut guard = ctx.borrow_mut();
        crate::run(&mut guard, spec, &argv).into_reply()
    };
    if let Frame::Error(e) = &frame {
        return fail(error_text(e));
    }
    convert::frame_to_lua(lua, &frame, resp3)
}

/// A Lua number as a command argument, as Redis writes it (`%.17g`): a whole number below
/// 2^53 (what scripts pass as counts and increments) is its decimal digits, written without
/// the general formatter.
fn number_argument(x: f64) -> String {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if x.fract() == 0.0 && x.abs() < EXACT && !(x == 0.0 && x.is_sign_negative()) {
        (x as i64).to_string()
    } else {
        libs::format_g(x, 17)
    }
}

/// `redis.acl_check_cmd(command, args...)`: whether the script's user may run the call.
fn acl_check_cmd(ctx: &Ctx<'_>, args: &[Value]) -> mlua::Result<bool> {
    let raise = |text: &str| Err(mlua::Error::external(CallError(text.to_string())));
    if args.is_empty() {
        return raise(errors::SCRIPT_NO_ARGS);
    }
    let mut argv = Vec::with_capacity(args.len());
    for v in args {
        argv.push(match v {
            Value::String(s) => Bytes::copy_from_slice(&s.as_bytes()),
            Value::Integer(n) => Bytes::from(number_argument(*n as f64)),
            Value::Number(x) => Bytes::from(number_argument(*x)),
            _ => return raise(errors::SCRIPT_BAD_ARG),
        });
    }
    let row = table::lookup(&argv[0])
        .filter(|s| !s.name.contains('|'))
        .and_then(
            |spec| match argv.len() >= 2 && crate::registry::is_container(spec.name) {
                true => table::lookup(&[spec.name.as_bytes(), b"|", &argv[1]].concat()),
                false => Some(spec),
            },
        );
    let Some(row) = row else {
        return raise(errors::SCRIPT_ACL_CHECK_INVALID);
    };
    let user = &ctx.session.user;
    Ok(user.unrestricted() || user.rules().check(row, &argv).is_ok())
}

/// An error text in the form scripts see it, "CODE message" (Redis's rule for command errors and
/// redis.error_reply): a leading '-' is dropped, and a text without a space gets the code "ERR".
fn error_text(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let rest = text.strip_prefix('-').unwrap_or(&text);
    if rest.contains(' ') {
        rest.to_string()
    } else {
        format!("ERR {rest}")
    }
}

/// The message handler xpcall runs on an error: builds `{err=..., source=..., line=...}` from
/// the error and the position of the script code that raised it.
fn error_handler(lua: &Lua, e: Value) -> mlua::Result<Table> {
    let msg = match &e {
        Value::Error(inner) if is_call_error(inner) => lua_message(inner),
        Value::Error(inner) => format!("ERR {}", lua_message(inner)),
        Value::Table(t) => match t.raw_get::<Value>("err")? {
            Value::String(s) => s.to_string_lossy(),
            v @ (Value::Integer(_) | Value::Number(_)) => lua
                .coerce_string(v)?
                .map(|s| s.to_string_lossy())
                .unwrap_or_default(),
            _ => "ERR unknown error".into(),
        },
        Value::String(s) => format!("ERR {}", s.to_string_lossy()),
        other => format!(
            "ERR {}",
            lua.coerce_string(other.clone())?
                .map(|s| s.to_string_lossy())
                .unwrap_or_else(|| other.type_name().to_string())
        ),
    };
    let t = lua.create_table()?;
    t.raw_set("err", msg)?;
    // Level 1 raised the error; when that is a C function (error(), redis.call, a metamethod),
    // the script code is the level above it.
    let at = |level| {
        lua.inspect_stack(level, |d| {
            let s = d.source();
            (s.what, s.source.map(|c| c.into_owned()), d.current_line())
        })
    };
    // The sandbox's wrappers and redis.call's argument packing are skipped too: the position is
    // the script's.
    let frame = (1..12).map(at).find(|f| match f {
        Some((what, source, _)) => *what != "C" && !sandbox::is_sandbox_frame(source.as_deref()),
        None => true,
    });
    let frame = frame.flatten();
    if let Some((_, Some(source), line)) = frame {
        t.raw_set("source", source)?;
        t.raw_set("line", line.map(|l| l as i64).unwrap_or(-1))?;
    }
    Ok(t)
}

/// "user_script:LINE: " for the script code that called the running Rust function.
fn caller_position(lua: &Lua) -> String {
    lua.inspect_stack(1, |d| {
        let src = d.source().short_src.map(|c| c.into_owned());
        match (src, d.current_line()) {
            (Some(src), Some(line)) => format!("{src}:{line}: "),
            _ => String::new(),
        }
    })
    .unwrap_or_default()
}

/// Whether an interpreter error is a failed `redis.call` (its text is already a Redis error).
fn is_call_error(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::CallbackError { cause, .. } => is_call_error(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<CallError>().is_some(),
        _ => false,
    }
}

/// The text of an interpreter error, without mlua's decorations ("runtime error: ", tracebacks).
fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => lua_message(cause),
        mlua::Error::ExternalError(inner) => match inner.downcast_ref::<CallError>() {
            Some(CallError(text)) => text.clone(),
            None => format!("ERR {inner}"),
        },
        mlua::Error::RuntimeError(s) | mlua::Error::SyntaxError { message: s, .. } => s
            .split("\nstack traceback:")
            .next()
            .unwrap_or_default()
            .to_string(),
        other => other.to_string(),
    }
}

/// Lua BitOp's `bit` module, as Redis bundles it: 32-bit operations on numbers.
fn bit_library(lua: &Lua) -> mlua::Result<Table> {
    fn tobit(n: f64) -> i32 {
        // BitOp normalizes through a 2^52+2^51 bias: the low 32 bits of the rounded number.
        (n.round_ties_even() as i64) as i32
    }
    let bit = lua.create_table()?;
    let unary = |f: fn(i32) -> i32| lua.create_function(move |_, n: f64| Ok(f(tobit(n))));
    bit.raw_set("tobit", unary(|x| x)?)?;
    bit.raw_set("bnot", unary(|x| !x)?)?;
    bit.raw_set("bswap", unary(|x| x.swap_bytes())?)?;
    let fold = |f: fn(i32, i32) -> i32| {
        lua.create_function(move |_, args: mlua::Variadic<f64>| {
            Ok(args.iter().map(|&n| tobit(n)).reduce(f).unwrap_or(0))
        })
    };
    bit.raw_set("band", fold(|a, b| a & b)?)?;
    bit.raw_set("bor", fold(|a, b| a | b)?)?;
    bit.raw_set("bxor", fold(|a, b| a ^ b)?)?;
    let shift = |f: fn(i32, u32) -> i32| {
        lua.create_function(move |_, (x, n): (f64, f64)| Ok(f(tobit(x), (tobit(n) & 31) as u32)))
    };
    bit.raw_set("lshift", shift(|x, n| ((x as u32) << n) as i32)?)?;
    bit.raw_set("rshift", shift(|x, n| ((x as u32) >> n) as i32)?)?;
    bit.raw_set("arshift", shift(|x, n| x >> n)?)?;
    bit.raw_set("rol", shift(|x, n| (x as u32).rotate_left(n) as i32)?)?;
    bit.raw_set("ror", shift(|x, n| (x as u32).rotate_right(n) as i32)?)?;
    bit.raw_set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let x = tobit(x) as u32;
            let n = n.map(tobit).unwrap_or(8);
            let (digits, upper) = if n < 0 { (-n, true) } else { (n, false) };
            let digits = digits.clamp(1, 8) as usize;
            let s = format!("{x:08x}");
            let s = &s[8 - digits..];
            Ok(if upper {
                s.to_uppercase()
            } else {
                s.to_string()
            })
        })?,
    )?;
    Ok(bit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_arguments_are_written_as_redis_writes_them() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            42.0,
            1e15,
            -123_456_789.0,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            1e17,
            1e300,
            0.5,
            -3.25,
            1.0 / 3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(number_argument(x), libs::format_g(x, 17), "{x}");
        }
        assert_eq!(number_argument(-1.0), "-1");
        assert_eq!(number_argument(-0.0), "-0");
    }

    #[test]
    fn shebang_flags_and_errors_follow_redis() {
        assert_eq!(parse_shebang(b"return 1"), Ok(None));
        assert_eq!(
            parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1"),
            Ok(Some(Shebang {
                len: 31,
                no_writes: true
            }))
        );
        assert_eq!(
            parse_shebang(b"#!lua\nreturn 1"),
            Ok(Some(Shebang {
                len: 5,
                no_writes: false
            }))
        );
        let error = |body: &[u8]| parse_shebang(body).err().unwrap_or_default();
        assert_eq!(error(b"#!lua"), "ERR Invalid script shebang");
        assert_eq!(error(b"#!lua\0\nreturn 1"), "ERR Invalid script shebang");
        assert_eq!(
            error(b"#!lua \"flags\n"),
            "ERR Invalid engine in script shebang"
        );
        assert_eq!(
            error(b"#!LUA\n"),
            "ERR Unexpected engine in script shebang: #!LUA"
        );
        assert_eq!(
            error(b"#!lua flags=no-writes,\n"),
            "ERR Unexpected flag in script shebang: "
        );
        assert_eq!(
            error(b"#!lua name=x\n"),
            "ERR Unknown lua shebang option: name=x"
        );
    }
}
