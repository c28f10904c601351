//! Directives with a syntax of their own (Redis's "special configs" and the enumerations that
//! take several words): how each is read, shown by `CONFIG GET` and written by `CONFIG
//! REWRITE`. Error texts are Redis 7.0's, except where Strata refuses what Redis allows (an
//! empty `bind`, `daemonize yes`), which is said in the text.

use super::kinds::{
    enum_name, format_memory, one_of, parse_bool, parse_int, parse_memory, repr, show_plain, Value,
    NOT_AN_INTEGER,
};

/// A syntax of its own.
#[derive(Clone, Copy)]
pub(super) enum Special {
    /// Up to 16 addresses; takes several arguments.
    Bind,
    /// `seconds changes` pairs, or nothing; takes several arguments, and in a file every
    /// further `save` line adds to the first.
    Save,
    /// Event class letters (`KEA` reads back as `AKE`), kept as the bits of
    /// `strata_commands::notify`.
    KeyspaceEvents,
    /// yes/no, but only `no` is accepted.
    Daemonize,
    /// yes/no, but only `no` is accepted, as by a Redis built without active defragmentation.
    ActiveDefrag,
    /// An integer 0..=2^31-1, then clamped to 1..=500 like Redis.
    Hz,
    /// `<class> <hard> <soft> <soft seconds>` groups; a value sets only the classes it names.
    OutputBufferLimit,
    /// `<host> <port>`, or nothing (or `no one`): a leader.
    ReplicaOf,
    /// Three integers in -2000..=2000.
    OomScoreAdjValues,
    /// Percentiles in 0..=100, or nothing.
    Percentiles,
    /// `default`, or some of `save`/`nosave`/`now`/`force` (Redis's bit-flag enumeration).
    ShutdownOnSignal,
}

/// Client classes of `client-output-buffer-limit`, in `CONFIG GET` order and spelling.
const OUTPUT_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// The words of `shutdown-on-sigint`/`shutdown-on-sigterm` and their bits, in Redis's order.
const SHUTDOWN_FLAGS: [(&str, i128); 5] = [
    ("default", 0),
    ("save", 1),
    ("nosave", 2),
    ("now", 4),
    ("force", 8),
];

impl Special {
    /// Whether the directive takes several arguments (Redis's MULTI_ARG_CONFIG).
    pub(super) fn is_multi_arg(self) -> bool {
        !matches!(
            self,
            Special::KeyspaceEvents | Special::Daemonize | Special::ActiveDefrag | Special::Hz
        )
    }
}

/// Parses a special directive's arguments. Errors are Redis's texts.
pub(super) fn parse(special: Special, args: &[String]) -> Result<Value, String> {
    let single = || match args {
        [arg] => Ok(arg.as_str()),
        _ => Err("wrong number of arguments".to_string()),
    };
    // A single empty argument means "none" for the list-like directives, as in Redis.
    let words = match args {
        [only] if only.is_empty() => &[],
        _ => args,
    };
    match special {
        Special::Bind => {
            if args.len() > 16 {
                return Err("Too many bind addresses specified.".to_string());
            }
            if words.is_empty() {
                return Err(
                    "at least one address is needed, or Strata would not listen anywhere"
                        .to_string(),
                );
            }
            if words.iter().any(String::is_empty) {
                return Err("bind addresses can't be empty".to_string());
            }
            Ok(Value::List(words.to_vec()))
        }
        Special::Save => {
            let invalid = || "Invalid save parameters".to_string();
            if words.len() % 2 != 0 {
                return Err(invalid());
            }
            words
                .chunks(2)
                .map(|pair| {
                    let seconds = parse_c_integer(&pair[0]).filter(|&s| s >= 1);
                    let changes = parse_c_integer(&pair[1]).filter(|&c| c >= 0);
                    seconds.zip(changes).ok_or_else(invalid)
                })
                .collect::<Result<_, _>>()
                .map(Value::Save)
        }
        Special::KeyspaceEvents => strata_commands::notify::from_letters(single()?)
            .map(|bits| Value::Num(bits.into()))
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
        Special::Daemonize => {
            if parse_bool(single()?)? {
                Err("Strata can't daemonize: it always runs in the foreground \
                     (leave that to a service manager such as systemd)"
                    .to_string())
            } else {
                Ok(Value::Bool(false))
            }
        }
        Special::ActiveDefrag => {
            if parse_bool(single()?)? {
                Err("Active defragmentation cannot be enabled: it requires a Redis server \
                     compiled with a modified Jemalloc like the one shipped by default with the \
                     Redis source distribution"
                    .to_string())
            } else {
                Ok(Value::Bool(false))
            }
        }
        Special::Hz => {
            let n = parse_int(single()?).ok_or(NOT_AN_INTEGER)?;
            let max = i64::from(i32::MAX);
            if (0..=max).contains(&n) {
                Ok(Value::Num(n.clamp(1, 500).into()))
            } else {
                Err(format!("argument must be between 0 and {max} inclusive"))
            }
        }
        Special::OutputBufferLimit => {
            // An empty value changes nothing (Redis accepts it).
            if !args.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".to_string());
            }
            let mut limits = [None; 3];
            for group in args.chunks(4) {
                let class = match group[0].to_ascii_lowercase().as_str() {
                    "normal" => 0,
                    "slave" | "replica" => 1,
                    "pubsub" => 2,
                    _ => {
                        return Err(
                            "Invalid client class specified in buffer limit configuration."
                                .to_string(),
                        )
                    }
                };
                let hard = parse_memory(&group[1]);
                let soft = parse_memory(&group[2]);
                let secs = parse_int(&group[3]).and_then(|s| u64::try_from(s).ok());
                let (Some(hard), Some(soft), Some(secs)) = (hard, soft, secs) else {
                    return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string());
                };
                limits[class] = Some([hard, soft, secs]);
            }
            Ok(Value::OutputLimits(limits))
        }
        Special::ReplicaOf => match words {
            [] => Ok(Value::List(Vec::new())),
            [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
                Ok(Value::List(Vec::new()))
            }
            [host, port] => match parse_int(port) {
                Some(p) if (1..=65535).contains(&p) => {
                    Ok(Value::List(vec![host.clone(), p.to_string()]))
                }
                _ => Err("Invalid master port".to_string()),
            },
            _ => Err("wrong number of arguments".to_string()),
        },
        Special::OomScoreAdjValues => {
            if args.len() != 3 {
                return Err("wrong number of arguments".to_string());
            }
            args.iter()
                .map(|arg| {
                    parse_c_integer(arg)
                        .filter(|n| (-2000..=2000).contains(n))
                        .map(|n| n.to_string())
                        .ok_or_else(|| {
                            "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
                                .to_string()
                        })
                })
                .collect::<Result<_, _>>()
                .map(Value::List)
        }
        Special::Percentiles => words
            .iter()
            .map(|word| {
                let p = parse_double(word)
                    .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
                if (0.0..=100.0).contains(&p) {
                    Ok(format_double(p))
                } else {
                    Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
                }
            })
            .collect::<Result<_, _>>()
            .map(Value::List)
            .map_err(str::to_string),
        Special::ShutdownOnSignal => {
            let names = SHUTDOWN_FLAGS.map(|(name, _)| name);
            if args.is_empty() {
                return Err(one_of(&names));
            }
            let mut bits = 0;
            for arg in args {
                let name = enum_name(&["default", "save", "nosave", "now", "force"], arg)
                    .ok_or_else(|| one_of(&names))?;
                bits |= SHUTDOWN_FLAGS
                    .iter()
                    .find(|(flag, _)| *flag == name)
                    .map_or(0, |(_, bit)| *bit);
            }
            if bits & 3 == 3 {
                return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
            }
            Ok(Value::Num(bits))
        }
    }
}

/// A special directive's value as `CONFIG GET` shows it.
pub(super) fn show(special: Special, value: &Value) -> String {
    match (special, value) {
        (Special::KeyspaceEvents, Value::Num(bits)) => {
            strata_commands::notify::to_letters(u32::try_from(*bits).unwrap_or(0))
        }
        (Special::ShutdownOnSignal, Value::Num(bits)) => shutdown_names(*bits),
        (_, Value::OutputLimits(limits)) => OUTPUT_CLASSES
            .iter()
            .zip(limits)
            .map(|(class, l)| {
                let [hard, soft, secs] = l.unwrap_or_default();
                format!("{class} {hard} {soft} {secs}")
            })
            .collect::<Vec<_>>()
            .join(" "),
        (_, value) => show_plain(value),
    }
}

/// A special directive's arguments as `CONFIG REWRITE` writes them, one entry per line.
pub(super) fn file_args(special: Special, value: &Value) -> Vec<String> {
    match (special, value) {
        // A leader has no `replicaof` line.
        (Special::ReplicaOf, Value::List(words)) if words.is_empty() => Vec::new(),
        (Special::Save, Value::Save(v)) if v.is_empty() => {
            vec!["\"\"".to_string()]
        }
        (Special::Percentiles, Value::List(v)) if v.is_empty() => vec!["\"\"".to_string()],
        (Special::Save, Value::Save(pairs)) => pairs
            .iter()
            .map(|(seconds, changes)| format!("{seconds} {changes}"))
            .collect(),
        (Special::Bind, Value::List(addresses)) => vec![addresses
            .iter()
            .map(|a| {
                let plain = a
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'');
                if plain {
                    a.clone()
                } else {
                    repr(a.as_bytes())
                }
            })
            .collect::<Vec<_>>()
            .join(" ")],
        (Special::KeyspaceEvents, _) => vec![repr(show(special, value).as_bytes())],
        (Special::OutputBufferLimit, Value::OutputLimits(limits)) => OUTPUT_CLASSES
            .iter()
            .zip(limits)
            .map(|(class, l)| {
                let [hard, soft, secs] = l.unwrap_or_default();
                let (hard, soft) = (format_memory(hard), format_memory(soft));
                format!("{class} {hard} {soft} {secs}")
            })
            .collect(),
        _ => vec![show(special, value)],
    }
}

/// Names of shutdown flag bits like Redis's `configEnumGetName` for bit flags.
fn shutdown_names(bits: i128) -> String {
    if let Some((name, _)) = SHUTDOWN_FLAGS.iter().find(|(_, b)| *b == bits) {
        return name.to_string();
    }
    let names: Vec<&str> = SHUTDOWN_FLAGS
        .iter()
        .filter(|(_, b)| *b != 0 && bits & b == *b)
        .map(|(name, _)| *name)
        .collect();
    if names.is_empty() {
        "unknown".to_string()
    } else {
        names.join(" ")
    }
}

/// Parses a number like C's `strtoll` with a check that nothing follows (leading blanks and a
/// sign allowed; nothing at all is 0), rejecting overflow.
fn parse_c_integer(s: &str) -> Option<i64> {
    let s = s.trim_start_matches(|c: char| u8::try_from(c).is_ok_and(strata::num::is_c_space));
    if s.is_empty() {
        return Some(0);
    }
    s.parse().ok()
}

/// Parses a double like Redis's `string2d`: no blanks around it, no NaN.
fn parse_double(s: &str) -> Option<f64> {
    if s.bytes().next().is_none_or(strata::num::is_c_space) {
        return None;
    }
    s.parse::<f64>().ok().filter(|d| !d.is_nan())
}

/// Formats a double like C's `%f` with trailing zeros (and a trailing dot) removed.
fn format_double(d: f64) -> String {
    let text = format!("{d:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
