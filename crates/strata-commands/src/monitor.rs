//! MONITOR's feed: the line Redis 7.0's `replicationFeedMonitors` writes for every command it
//! runs (`+<unix s>.<µs> [<db> <ip:port>] "ARG" "ARG"...`, `[<db> lua]` for what a script runs,
//! arguments quoted as `sdscatrepr` quotes them, secrets redacted by [`crate::redact`]). Which
//! commands are fed is Redis's rule: after they run, unless flagged `admin` or `skip_monitor`;
//! the script commands (flagged `skip_monitor`) before they run, so the commands the script
//! calls follow them. Commands refused before running are not fed. The dispatcher calls
//! [`feed_before`] and [`feed_after`]; both cost one atomic load when nobody monitors. The
//! server keeps the monitoring clients and delivers the lines. Knows no family.

use bytes::Bytes;

use crate::command::{CommandSpec, ADMIN, SKIP_MONITOR};
use crate::Ctx;

/// Feeds a script command (`skip_monitor`) before it runs.
#[inline]
pub fn feed_before(ctx: &Ctx<'_>, spec: &CommandSpec, argv: &[Bytes]) {
    if spec.has(SKIP_MONITOR) && ctx.server.monitoring() {
        feed(ctx, spec, argv);
    }
}

/// Feeds a command that ran, unless it is `admin` or `skip_monitor`.
#[inline]
pub fn feed_after(ctx: &Ctx<'_>, spec: &CommandSpec, argv: &[Bytes]) {
    if !spec.flags.any(SKIP_MONITOR | ADMIN) && ctx.server.monitoring() {
        feed(ctx, spec, argv);
    }
}

fn feed(ctx: &Ctx<'_>, spec: &CommandSpec, argv: &[Bytes]) {
    let origin = if ctx.session.in_script {
        "lua".to_string()
    } else {
        ctx.server.peer_id()
    };
    let shown = crate::redact::shown(spec, argv);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.server.feed_monitors(line(
        now.as_secs(),
        now.subsec_micros(),
        ctx.session.db.index(),
        &origin,
        &shown,
    ));
}

/// One MONITOR line, without the leading `+` and the trailing CRLF (the reply is a simple
/// string).
pub fn line(secs: u64, micros: u32, db: u32, origin: &str, argv: &[Bytes]) -> String {
    let mut out = format!("{secs}.{micros:06} [{db} {origin}]");
    for a in argv {
        out.push(' ');
        strata_resp::repr_into(&mut out, a);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_quote_binary_bytes_as_redis() {
        let argv = [
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"v\x00\x01\xc3\xbf\"\\ \n\t"),
        ];
        assert_eq!(
            line(1700000000, 1234, 0, "127.0.0.1:5555", &argv),
            r#"1700000000.001234 [0 127.0.0.1:5555] "SET" "k" "v\x00\x01\xc3\xbf\"\\ \n\t""#
        );
        assert_eq!(line(1, 0, 3, "lua", &[]), "1.000000 [3 lua]");
    }
}
