//! Which arguments of a command are secrets that the slow log and MONITOR show as
//! `(redacted)`, as Redis's `redactClientCommandArgument` calls mark them: AUTH's password (and
//! user), HELLO's `AUTH user password`, the values of CONFIG SET's sensitive directives
//! (`requirepass`, `masterauth`, `masteruser`), every argument of ACL SETUSER after the
//! user name's position, and MIGRATE's `AUTH password` / `AUTH2 user password`. Knows no family; reads only command names and arguments.

use std::borrow::Cow;

use bytes::Bytes;

use crate::args::is;
use crate::command::CommandSpec;

/// What Redis puts in place of a secret.
const REDACTED: &str = "(redacted)";

/// The directives whose CONFIG SET value is a secret (Redis's `SENSITIVE_CONFIG`).
const SENSITIVE: &[&str] = &["requirepass", "masterauth", "masteruser"];

/// `argv` with its secrets replaced (borrowed unchanged when it has none). `spec` is the row
/// that ran (a container's subcommand row for a subcommand).
pub fn shown<'a>(spec: &CommandSpec, argv: &'a [Bytes]) -> Cow<'a, [Bytes]> {
    let mut hide: Vec<usize> = Vec::new();
    match spec.name {
        "auth" if argv.len() <= 3 => hide.extend(1..argv.len()),
        "hello" => {
            let mut j = 2;
            while j < argv.len() {
                let more = argv.len() - 1 - j;
                if is(&argv[j], "auth") && more >= 2 {
                    hide.extend([j + 1, j + 2]);
                    j += 3;
                } else {
                    j += if is(&argv[j], "setname") { 2 } else { 1 };
                }
            }
        }
        "config|set" => {
            let mut j = 2;
            while j + 1 < argv.len() {
                if SENSITIVE.iter().any(|s| is(&argv[j], s)) {
                    hide.push(j + 1);
                }
                j += 2;
            }
        }
        "acl|setuser" => hide.extend(2..argv.len()),
        "migrate" => {
            // The options up to KEYS, as MIGRATE parses them.
            let mut j = 6;
            while j < argv.len() {
                let more = argv.len() - 1 - j;
                if is(&argv[j], "auth") && more >= 1 {
                    hide.push(j + 1);
                    j += 2;
                } else if is(&argv[j], "auth2") && more >= 2 {
                    hide.extend([j + 1, j + 2]);
                    j += 3;
                } else if is(&argv[j], "keys") {
                    break;
                } else {
                    j += 1;
                }
            }
        }
        _ => {}
    }
    if hide.is_empty() {
        return Cow::Borrowed(argv);
    }
    let mut out = argv.to_vec();
    for j in hide {
        out[j] = Bytes::from_static(REDACTED.as_bytes());
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;

    fn show(words: &[&str], row: &str) -> Vec<String> {
        let argv: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
        let spec = registry::lookup(row.as_bytes()).expect("row");
        shown(spec, &argv)
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn passwords_are_redacted_and_the_rest_kept() {
        assert_eq!(show(&["AUTH", "pw"], "auth"), ["AUTH", "(redacted)"]);
        assert_eq!(
            show(&["HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"], "hello"),
            [
                "HELLO",
                "3",
                "AUTH",
                "(redacted)",
                "(redacted)",
                "SETNAME",
                "n"
            ]
        );
        assert_eq!(
            show(
                &["CONFIG", "SET", "maxclients", "5", "requirepass", "x"],
                "config|set"
            ),
            [
                "CONFIG",
                "SET",
                "maxclients",
                "5",
                "requirepass",
                "(redacted)"
            ]
        );
        assert_eq!(show(&["GET", "k"], "get"), ["GET", "k"]);
    }
}
