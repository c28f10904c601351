//! The kinds of value a directive takes, and how each is read, checked, shown by `CONFIG GET`
//! and written by `CONFIG REWRITE`, with Redis 7.0's rules and error texts: yes/no, integers as
//! `string2ll` reads them, memory sizes with units as `memtoull` reads them, percentages,
//! octal numbers, enumerations and free text. Syntaxes of their own (`save`, `bind`, ...) are
//! `special.rs`'s; which directive has which kind is `table.rs`'s. Nothing here knows a
//! directive's name.

use std::fmt;

use super::special::{self, Special};

/// What a directive's value looks like and how it is checked.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// `yes` or `no` (any case).
    Bool,
    /// A plain decimal integer (no sign but `-`, no leading zeros), within bounds.
    Int { min: i64, max: i64 },
    /// Bytes, optionally with a unit: `k`/`m`/`g` are powers of 1000, `kb`/`mb`/`gb` powers of
    /// 1024, `b` is bytes; any case. Within bounds.
    Memory { min: u64, max: u64 },
    /// A memory size, or a percentage `N%` kept as `-N` (Redis's PERCENT_CONFIG): `min` is
    /// minus the highest percentage.
    Percent { min: i64, max: i64 },
    /// An octal number within bounds, shown in octal.
    Octal { min: i64, max: i64 },
    /// One of the listed names (any case).
    Enum(&'static [&'static str]),
    /// Free text, checked by the function.
    Str(fn(&str) -> Result<(), &'static str>),
    /// A syntax of its own.
    Special(Special),
}

/// A directive's parsed value.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value {
    Bool(bool),
    /// Integers, sizes, percentages (negative), octal numbers, and bit sets of specials.
    Num(i128),
    /// Free text, or an enumeration's name as the table spells it.
    Text(String),
    /// Several words: `bind`, `replicaof` (empty or host and port), ...
    List(Vec<String>),
    /// `save`: `(seconds, changes)` pairs.
    Save(Vec<(i64, i64)>),
    /// `[hard, soft, soft seconds]` per client class (normal, replica, pubsub); `None` for a
    /// class a parsed value does not name (filled from the current value when applied).
    OutputLimits([Option<[u64; 3]>; 3]),
}

impl Value {
    /// Combines a newly parsed value with the directive's current one: an output buffer limit
    /// keeps the classes the new value does not name. Other values replace the old one.
    pub(super) fn merged_onto(self, current: &Value) -> Value {
        match (self, current) {
            (Value::OutputLimits(mut new), Value::OutputLimits(old)) => {
                for (n, o) in new.iter_mut().zip(old) {
                    if n.is_none() {
                        *n = *o;
                    }
                }
                Value::OutputLimits(new)
            }
            (new, _) => new,
        }
    }
}

impl Kind {
    /// Whether the directive takes several arguments (Redis's MULTI_ARG_CONFIG).
    pub(super) fn is_multi_arg(self) -> bool {
        matches!(self, Kind::Special(s) if s.is_multi_arg())
    }

    /// Parses and validates a directive's arguments (from a file line, or a `CONFIG SET` value
    /// already split for multi-argument directives). Errors are Redis's texts.
    pub(super) fn parse(self, args: &[String]) -> Result<Value, String> {
        if let Kind::Special(special) = self {
            return special::parse(special, args);
        }
        let [arg] = args else {
            return Err("wrong number of arguments".to_string());
        };
        let arg = arg.as_str();
        match self {
            Kind::Bool => parse_bool(arg).map(Value::Bool),
            Kind::Int { min, max } => {
                let n = parse_int(arg).ok_or(NOT_AN_INTEGER)?;
                within(n.into(), min, max)
            }
            Kind::Memory { min, max } => {
                let n = parse_memory(arg).ok_or("argument must be a memory value")?;
                within(n.into(), min, max)
            }
            Kind::Percent { min, max } => {
                let n: i64 = match (parse_memory(arg), arg.strip_suffix('%')) {
                    // As in Redis, sizes past i64 wrap to negative values.
                    (Some(bytes), _) => bytes as i64,
                    (None, Some(percent)) => match parse_int(percent) {
                        Some(p) if p >= 0 && !percent.is_empty() => -p,
                        _ => return Err("argument must be a memory or percent value".into()),
                    },
                    (None, None) => return Err("argument must be a memory or percent value".into()),
                };
                if n < 0 {
                    if n < min {
                        return Err(format!(
                            "percentage argument must be less or equal to {}",
                            -i128::from(min)
                        ));
                    }
                    Ok(Value::Num(n.into()))
                } else {
                    within(n.into(), min, max)
                }
            }
            Kind::Octal { min, max } => {
                // C's strtoll reads nothing at all as 0.
                let n = if arg.is_empty() {
                    0
                } else {
                    i64::from_str_radix(arg, 8)
                        .map_err(|_| "argument couldn't be parsed as an octal number")?
                };
                if (min..=max).contains(&n) {
                    Ok(Value::Num(n.into()))
                } else {
                    Err(format!(
                        "argument must be between {min:o} and {max:o} inclusive"
                    ))
                }
            }
            Kind::Enum(names) => enum_name(names, arg)
                .map(|name| Value::Text(name.to_string()))
                .ok_or_else(|| one_of(names)),
            Kind::Str(check) => {
                check(arg)?;
                Ok(Value::Text(arg.to_string()))
            }
            Kind::Special(_) => unreachable!("handled above"),
        }
    }

    /// A value as `CONFIG GET` shows it.
    pub(super) fn show(self, value: &Value) -> String {
        match (self, value) {
            (Kind::Special(special), _) => special::show(special, value),
            (Kind::Percent { .. }, Value::Num(n)) if *n < 0 => format!("{}%", -n),
            (Kind::Octal { .. }, Value::Num(n)) => format!("{n:o}"),
            (_, value) => show_plain(value),
        }
    }

    /// The arguments `CONFIG REWRITE` writes after the name, one entry per line (several for
    /// `save` and `client-output-buffer-limit`, none to leave the directive out).
    pub(super) fn file_args(self, value: &Value) -> Vec<String> {
        match (self, value) {
            (Kind::Special(special), _) => special::file_args(special, value),
            (Kind::Memory { .. } | Kind::Percent { .. }, Value::Num(n)) if *n >= 0 => {
                vec![format_memory(u64::try_from(*n).unwrap_or(u64::MAX))]
            }
            (Kind::Str(_), Value::Text(text)) => vec![repr(text.as_bytes())],
            _ => vec![self.show(value)],
        }
    }
}

/// Values shown the same way whatever their kind.
pub(super) fn show_plain(value: &Value) -> String {
    match value {
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        Value::Num(n) => n.to_string(),
        Value::Text(text) => text.clone(),
        Value::List(words) => words.join(" "),
        Value::Save(pairs) => pairs
            .iter()
            .map(|(seconds, changes)| format!("{seconds} {changes}"))
            .collect::<Vec<_>>()
            .join(" "),
        Value::OutputLimits(_) => special::show(Special::OutputBufferLimit, value),
    }
}

pub(super) const NOT_AN_INTEGER: &str = "argument couldn't be parsed into an integer";

fn within(
    n: i128,
    min: impl Into<i128> + fmt::Display,
    max: impl Into<i128> + fmt::Display,
) -> Result<Value, String> {
    let message = format!("argument must be between {min} and {max} inclusive");
    if (min.into()..=max.into()).contains(&n) {
        Ok(Value::Num(n))
    } else {
        Err(message)
    }
}

/// Enumeration names that Redis reads as another name's value (and shows as that name).
const SYNONYMS: &[(&str, &str)] = &[("relative", "yes")];

/// The table's spelling of `arg` among `names` (any case), after synonyms.
pub(super) fn enum_name(names: &'static [&'static str], arg: &str) -> Option<&'static str> {
    let name = names.iter().find(|name| name.eq_ignore_ascii_case(arg))?;
    Some(
        SYNONYMS
            .iter()
            .find(|(synonym, _)| synonym == name)
            .map_or(name, |(_, canonical)| canonical),
    )
}

/// Redis's error for a value that is none of `names`.
pub(super) fn one_of(names: &[&str]) -> String {
    format!(
        "argument(s) must be one of the following: {}",
        names.join(", ")
    )
}

pub(super) fn parse_bool(arg: &str) -> Result<bool, String> {
    if arg.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if arg.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err("argument must be 'yes' or 'no'".to_string())
    }
}

/// Parses a whole decimal integer the way Redis's `string2ll` does: an optional `-`, no `+`, no
/// spaces, no leading zeros, no overflow.
pub(super) fn parse_int(s: &str) -> Option<i64> {
    if s == "0" {
        return Some(0);
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    let mut bytes = digits.bytes();
    if !matches!(bytes.next(), Some(b'1'..=b'9')) || !bytes.all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub(super) const MB: u64 = 1024 * 1024;
pub(super) const GB: u64 = 1024 * MB;

/// Parses a memory size like Redis's `memtoull`: digits then an optional unit, where `k`, `m`,
/// `g` are powers of 1000 and `kb`, `mb`, `gb` powers of 1024 (any case). As in Redis, missing
/// digits count as 0. Overflow is an error.
pub(super) fn parse_memory(s: &str) -> Option<u64> {
    let split = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => MB,
        "g" => 1000 * 1000 * 1000,
        "gb" => GB,
        _ => return None,
    };
    let number: u64 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    number.checked_mul(multiplier)
}

/// Formats bytes the way `CONFIG REWRITE` writes them: in gb, mb or kb when exact.
pub(super) fn format_memory(bytes: u64) -> String {
    match bytes {
        0 => "0".to_string(),
        b if b % GB == 0 => format!("{}gb", b / GB),
        b if b % MB == 0 => format!("{}mb", b / MB),
        b if b % 1024 == 0 => format!("{}kb", b / 1024),
        b => b.to_string(),
    }
}

/// Quotes bytes like Redis's `sdscatrepr`, so that the config lexer reads them back unchanged.
pub(super) fn repr(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    strata_resp::repr_into(&mut out, bytes);
    out
}
