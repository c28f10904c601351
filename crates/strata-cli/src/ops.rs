//! The key commands: `get`, `set`, `del`, `ttl`, `type`, `keys` and `scan`, on one logical
//! database, for every type. Values are read through the library's streaming methods and printed
//! by `render`; `set` writes through one atomic `strata::Batch`.

use std::io::{BufWriter, Write};

use serde_json::{json, Map, Value};
use strata::{Batch, Db, KeyFilter, KeyType, Ttl};

use crate::args::{bytes, ValueType};
use crate::exit::{Failure, Outcome, USAGE};
use crate::render::{json_bytes, json_score, print_json, score, text, ttl_ms, type_name};

/// Where listings go: buffered stdout; a closed pipe (`strata keys | head`) ends the listing quietly.
pub struct Out {
    w: BufWriter<std::io::StdoutLock<'static>>,
    closed: bool,
}

impl Out {
    /// Buffered stdout.
    pub fn new() -> Out {
        Out {
            w: BufWriter::new(std::io::stdout().lock()),
            closed: false,
        }
    }

    /// Writes one line; false once the reader has gone away.
    pub fn line(&mut self, s: &str) -> Result<bool, Failure> {
        if self.closed {
            return Ok(false);
        }
        match writeln!(self.w, "{s}") {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Flushes (a closed pipe is not an error).
    pub fn finish(mut self) -> Outcome {
        match self.w.flush() {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
            _ => Ok(()),
        }
    }
}

fn missing(key: &[u8]) -> Failure {
    Failure::not_found(format!("{}: no such key", text(key)))
}

/// `get KEY`: the value of any type.
pub fn get(db: &Db, key: &[u8], as_json: bool) -> Outcome {
    let Some(kind) = db.key_type(key)? else {
        if as_json {
            print_json(&Value::Null);
        }
        return Err(missing(key));
    };
    let expire_at = match db.ttl(key)? {
        Ttl::ExpiresAt(t) => Some(t),
        _ => None,
    };
    if as_json {
        let value = match kind {
            KeyType::String => json_bytes(&db.get(key)?.unwrap_or_default()),
            KeyType::Hash => {
                let mut m = Map::new();
                db.hash_each(key, |f, v| {
                    m.insert(text(f), json_bytes(v));
                })?;
                Value::Object(m)
            }
            KeyType::List => {
                let mut items = Vec::new();
                db.list_each(key, |v| items.push(json_bytes(v)))?;
                Value::Array(items)
            }
            KeyType::Set => {
                let mut items = Vec::new();
                db.set_each(key, |v| items.push(json_bytes(v)))?;
                Value::Array(items)
            }
            KeyType::ZSet => {
                let mut items = Vec::new();
                db.zset_each(key, |m, s| {
                    items.push(json!([json_bytes(m), json_score(s)]))
                })?;
                Value::Array(items)
            }
            KeyType::Stream => {
                let mut items = Vec::new();
                db.stream_each(key, |e| {
                    let fields: Vec<Value> = e.fields.iter().map(|f| json_bytes(f)).collect();
                    items.push(json!([e.id.to_string(), fields]))
                })?;
                Value::Array(items)
            }
        };
        print_json(&json!({
            "key": json_bytes(key),
            "type": type_name(kind),
            "ttl_ms": ttl_ms(expire_at),
            "value": value,
        }));
        return Ok(());
    }
    let mut out = Out::new();
    let mut err = None;
    let mut emit = |s: String| {
        if err.is_none() {
            if let Err(e) = out.line(&s) {
                err = Some(e);
            }
        }
    };
    match kind {
        KeyType::String => emit(text(&db.get(key)?.unwrap_or_default())),
        KeyType::Hash => db.hash_each(key, |f, v| emit(format!("{} = {}", text(f), text(v))))?,
        KeyType::List => {
            let mut i = 0u64;
            db.list_each(key, |v| {
                i += 1;
                emit(format!("{i}) {}", text(v)))
            })?
        }
        KeyType::Set => db.set_each(key, |v| emit(text(v)))?,
        KeyType::ZSet => db.zset_each(key, |m, s| emit(format!("{} = {}", text(m), score(s))))?,
        KeyType::Stream => db.stream_each(key, |e| {
            let fields: Vec<String> = e.fields.iter().map(|f| text(f)).collect();
            emit(format!("{} {}", e.id, fields.join(" ")))
        })?,
    }
    if let Some(e) = err {
        return Err(e);
    }
    out.finish()
}

/// `set [--type T] [--ttl S] KEY VALUE...`: replaces the key atomically.
pub fn set(db: &Db, kind: ValueType, ttl: Option<u64>, key: &[u8], values: &[Vec<u8>]) -> Outcome {
    let usage = |m: &str| Err(Failure::new(USAGE, m.to_string()));
    let mut batch = Batch::new();
    batch.del(key);
    let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
    match kind {
        ValueType::String => {
            if refs.len() != 1 {
                return usage("set of a string takes exactly one value");
            }
            batch.set(key, refs[0]);
        }
        ValueType::Hash => {
            if !refs.len().is_multiple_of(2) {
                return usage("set --type hash takes FIELD VALUE pairs");
            }
            let pairs: Vec<(&[u8], &[u8])> = refs.chunks(2).map(|p| (p[0], p[1])).collect();
            batch.hset(key, &pairs);
        }
        ValueType::List => {
            batch.rpush(key, &refs);
        }
        ValueType::Set => {
            batch.sadd(key, &refs);
        }
        ValueType::Zset => {
            if !refs.len().is_multiple_of(2) {
                return usage("set --type zset takes SCORE MEMBER pairs");
            }
            let mut pairs = Vec::new();
            for p in refs.chunks(2) {
                let s = std::str::from_utf8(p[0])
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|s| !s.is_nan());
                let Some(s) = s else {
                    return usage(&format!("score {} is not a number", text(p[0])));
                };
                pairs.push((s, p[1]));
            }
            batch.zadd(key, &pairs);
        }
    }
    if let Some(secs) = ttl {
        if secs == 0 {
            return usage("--ttl must be at least 1 second");
        }
        batch.expire_at(
            key,
            strata::now_ms().saturating_add(secs.saturating_mul(1000)),
        );
    }
    db.apply(&batch)?;
    db.flush()?;
    Ok(())
}

/// `del KEY...`: prints how many existed; exit 1 when none did.
pub fn del(db: &Db, keys: &[Vec<u8>], as_json: bool) -> Outcome {
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let n = db.del(&refs)?;
    db.flush()?;
    if as_json {
        print_json(&json!({ "deleted": n }));
    } else {
        println!("{n}");
    }
    if n == 0 {
        return Err(Failure::not_found("no such key"));
    }
    Ok(())
}

/// `ttl KEY`: seconds left (-1 no expiry, -2 missing, as Redis's TTL).
pub fn ttl(db: &Db, key: &[u8], as_json: bool) -> Outcome {
    let t = db.ttl(key)?;
    let (secs, ms, at) = match t {
        Ttl::Missing => (-2i64, None, None),
        Ttl::Persistent => (-1, None, None),
        Ttl::ExpiresAt(at) => {
            let ms = at.saturating_sub(strata::now_ms());
            (ms.div_ceil(1000) as i64, Some(ms), Some(at))
        }
    };
    if as_json {
        print_json(&json!({ "ttl": secs, "ttl_ms": ms, "expire_at_ms": at }));
    } else {
        println!("{secs}");
    }
    if t == Ttl::Missing {
        return Err(missing(key));
    }
    Ok(())
}

/// `type KEY`.
pub fn key_type(db: &Db, key: &[u8], as_json: bool) -> Outcome {
    let kind = db.key_type(key)?;
    let name = kind.map_or("none", type_name);
    if as_json {
        print_json(&json!({ "type": name }));
    } else {
        println!("{name}");
    }
    match kind {
        Some(_) => Ok(()),
        None => Err(missing(key)),
    }
}

/// The library's type for a `--type` argument.
pub fn key_type_of(v: ValueType) -> KeyType {
    match v {
        ValueType::String => KeyType::String,
        ValueType::Hash => KeyType::Hash,
        ValueType::List => KeyType::List,
        ValueType::Set => KeyType::Set,
        ValueType::Zset => KeyType::ZSet,
    }
}

/// `keys [PATTERN]` and `scan [filters]`: streams matching keys; with `detail`, each line (or
/// JSON object) also says type, TTL and size.
pub fn list(
    db: &Db,
    filter: KeyFilter,
    limit: Option<u64>,
    detail: bool,
    as_json: bool,
) -> Outcome {
    let mut out = Out::new();
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    for info in db.iter(filter).take(limit) {
        let info = info?;
        let line = match (as_json, detail) {
            (true, true) => json!({
                "key": json_bytes(&info.key),
                "type": type_name(info.kind),
                "ttl_ms": ttl_ms(info.expire_at),
                "size": info.size,
            })
            .to_string(),
            (true, false) => json_bytes(&info.key).to_string(),
            (false, true) => {
                let ttl = ttl_ms(info.expire_at).map_or("-".to_string(), |ms| format!("{ms}ms"));
                format!(
                    "{}\t{}\t{}\t{}",
                    text(&info.key),
                    type_name(info.kind),
                    ttl,
                    info.size
                )
            }
            (false, false) => text(&info.key),
        };
        if !out.line(&line)? {
            break;
        }
    }
    out.finish()
}

/// Bytes of optional arguments.
pub fn opt_bytes(arg: &Option<std::ffi::OsString>) -> Option<Vec<u8>> {
    arg.as_ref().map(bytes)
}
