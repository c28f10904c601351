//! Printing: how keys, values, TTLs and reports look on stdout, as text for people (binary bytes
//! escaped the way redis-cli does) or as JSON for machines (`--json`; bytes that are not UTF-8
//! become `{"hex": "..."}`). Knows nothing of the directory.

use serde_json::{json, Value};

/// Bytes as text: printable UTF-8 as is, anything else quoted with `\xNN` escapes.
pub fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(|c| c.is_control()) && !s.is_empty() => s.to_string(),
        _ => {
            let mut out = String::from("\"");
            for &b in bytes {
                match b {
                    b'"' => out.push_str("\\\""),
                    b'\\' => out.push_str("\\\\"),
                    b'\n' => out.push_str("\\n"),
                    b'\r' => out.push_str("\\r"),
                    b'\t' => out.push_str("\\t"),
                    0x20..=0x7E => out.push(b as char),
                    _ => out.push_str(&format!("\\x{b:02x}")),
                }
            }
            out.push('"');
            out
        }
    }
}

/// Bytes as JSON: a string when UTF-8, otherwise `{"hex": "..."}`.
pub fn json_bytes(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(s) => Value::String(s.to_string()),
        Err(_) => json!({ "hex": bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() }),
    }
}

/// A score as Redis prints it (integers without a fraction, `inf`/`-inf`).
pub fn score(s: f64) -> String {
    if s.is_infinite() {
        if s > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if s == s.trunc() && s.abs() < 1e17 {
        format!("{}", s as i64)
    } else {
        format!("{s}")
    }
}

/// A score as JSON (infinities as the strings Redis uses).
pub fn json_score(s: f64) -> Value {
    if s.is_finite() {
        json!(s)
    } else {
        Value::String(score(s))
    }
}

/// Remaining time to live in milliseconds, from an absolute expiry (None: no expiry).
pub fn ttl_ms(expire_at: Option<u64>) -> Option<u64> {
    expire_at.map(|t| t.saturating_sub(strata::now_ms()))
}

/// The type name Redis prints.
pub fn type_name(kind: strata::KeyType) -> &'static str {
    kind.name()
}

/// Prints one JSON value on its own line.
pub fn print_json(v: &Value) {
    println!("{v}");
}
