//! What an operator watches the server with: SLOWLOG (GET / LEN / RESET / HELP), LATENCY
//! (LATEST / HISTORY / RESET / GRAPH / DOCTOR / HISTOGRAM / HELP) and MONITOR. The slow log and
//! latency events live in [`crate::slowlog`] and [`crate::latency`], the per-command
//! histograms in [`crate::command_stats`], the monitoring clients in the server (`ServerApi`).

use bytes::Bytes;
use strata_resp::Frame;

use crate::command::*;
use crate::cursor::{Failure, Reply};
use crate::help;
use crate::registry;
use crate::{errors, BlockMode, Ctx, Outcome};

/// The introspection family's rows.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "slowlog",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(slowlog),
        docs: Docs {
            group: "server",
            since: "2.2.12",
            complexity: "Depends on subcommand.",
            summary: "Groups the subcommands that read and clear the slow log.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "slowlog|get",
        arity: Arity::AtLeast(2),
        flags: Flags(ADMIN | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(slowlog_get),
        docs: Docs {
            group: "server",
            since: "2.2.12",
            complexity: "O(N) where N is the number of entries returned",
            summary: "Lists the newest entries of the slow log.",
            syntax: "[count]",
            tips: &["request_policy:all_nodes", "nondeterministic_output"],
        },
    },
    CommandSpec {
        name: "slowlog|len",
        arity: Arity::Exactly(2),
        flags: Flags(ADMIN | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(slowlog_len),
        docs: Docs {
            group: "server",
            since: "2.2.12",
            complexity: "O(1)",
            summary: "Counts the entries of the slow log.",
            syntax: "",
            tips: &[
                "request_policy:all_nodes",
                "response_policy:agg_sum",
                "nondeterministic_output",
            ],
        },
    },
    CommandSpec {
        name: "slowlog|reset",
        arity: Arity::Exactly(2),
        flags: Flags(ADMIN | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(slowlog_reset),
        docs: Docs {
            group: "server",
            since: "2.2.12",
            complexity: "O(N) where N is the number of entries in the slowlog",
            summary: "Empties the slow log.",
            syntax: "",
            tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "slowlog|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(slowlog_help),
        docs: Docs {
            group: "server",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Lists the SLOWLOG subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "latency",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "Depends on subcommand.",
            summary: "Groups the subcommands of the latency monitor.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "latency|doctor",
        arity: Arity::Exactly(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency_doctor),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Describes the latency events seen, with advice.",
            syntax: "",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_nodes",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "latency|graph",
        arity: Arity::Exactly(3),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency_graph),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Draws the samples of one latency event as an ASCII graph.",
            syntax: "event",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_nodes",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "latency|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency_help),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Lists the LATENCY subcommands with a line on each.",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "latency|histogram",
        arity: Arity::AtLeast(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency_histogram),
        docs: Docs {
            group: "server",
            since: "7.0.0",
            complexity:
                "O(N) where N is the number of commands with latency information being retrieved.",
            summary: "Gives the cumulative latency distribution of some commands, or of all.",
            syntax: "[command [command ...]]",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_nodes",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "latency|history",
        arity: Arity::Exactly(3),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency_history),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Gives the timestamped samples of one latency event.",
            syntax: "event",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_nodes",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "latency|latest",
        arity: Arity::Exactly(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency_latest),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Gives the latest sample of every latency event.",
            syntax: "",
            tips: &[
                "nondeterministic_output",
                "request_policy:all_nodes",
                "response_policy:special",
            ],
        },
    },
    CommandSpec {
        name: "latency|reset",
        arity: Arity::AtLeast(2),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(latency_reset),
        docs: Docs {
            group: "server",
            since: "2.8.13",
            complexity: "O(1)",
            summary: "Forgets the samples of some latency events, or of all.",
            syntax: "[event [event ...]]",
            tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        },
    },
    CommandSpec {
        name: "monitor",
        arity: Arity::Exactly(1),
        flags: Flags(ADMIN | NOSCRIPT | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(monitor),
        docs: Docs {
            group: "server",
            since: "1.0.0",
            complexity: "",
            summary: "Streams every command the server runs to this connection.",
            syntax: "",
            tips: &[],
        },
    },
];

fn slowlog(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "slowlog"))
}

fn slowlog_get(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    if argv.len() > 3 {
        return Ok(errors::unknown_subcommand_or_arity("slowlog", &argv[1]));
    }
    let count = match argv.get(2) {
        None => Some(10),
        Some(a) => match strata::num::parse_i64(a) {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                return Err(Failure::text(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        },
    };
    let entries = ctx.server.slowlog().newest(count);
    Ok(Frame::Array(entries.iter().map(|e| e.to_frame()).collect()))
}

fn slowlog_len(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Integer(ctx.server.slowlog().len() as i64))
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    ctx.server.slowlog().reset();
    Ok(Frame::ok())
}

fn slowlog_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    ))
}

fn latency(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "latency"))
}

fn latency_latest(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    let latest = ctx.server.latency().latest();
    Ok(Frame::Array(
        latest
            .into_iter()
            .map(|(name, time, ms, max)| {
                Frame::Array(vec![
                    Frame::bulk(name),
                    Frame::Integer(time),
                    Frame::Integer(ms as i64),
                    Frame::Integer(max as i64),
                ])
            })
            .collect(),
    ))
}

fn latency_history(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let samples = ctx.server.latency().history(&argv[2]);
    Ok(Frame::Array(
        samples
            .into_iter()
            .map(|(t, ms)| Frame::Array(vec![Frame::Integer(t), Frame::Integer(ms as i64)]))
            .collect(),
    ))
}

fn latency_reset(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let monitor = ctx.server.latency();
    let n = if argv.len() == 2 {
        monitor.reset(None)
    } else {
        argv[2..].iter().map(|e| monitor.reset(Some(e))).sum()
    };
    Ok(Frame::Integer(n as i64))
}

fn latency_graph(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    match ctx.server.latency().graph(&argv[2]) {
        Some(graph) => Ok(Frame::Verbatim(graph.into())),
        None => Err(Failure::text(format!(
            "ERR No samples available for event '{}'",
            String::from_utf8_lossy(&argv[2])
        ))),
    }
}

fn latency_doctor(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    let get = |name: &str| {
        ctx.server
            .config_get(&[name.as_bytes()])
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .unwrap_or_default()
    };
    let slowlog_us = get("slowlog-log-slower-than").parse().unwrap_or(10_000);
    let always = get("appendfsync") == "always";
    let hz = get("hz").parse().unwrap_or(10);
    let report = ctx.server.latency().doctor(slowlog_us, always, hz);
    Ok(Frame::Verbatim(report.into()))
}

fn latency_histogram(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    let stats = ctx.server.command_stats();
    let mut names: Vec<&'static str> = Vec::new();
    if argv.len() == 2 {
        names = stats.histogram_names();
    } else {
        for a in &argv[2..] {
            let Some(spec) = registry::lookup(a) else {
                continue;
            };
            names.push(spec.name);
            if registry::is_container(spec.name) {
                let prefix = format!("{}|", spec.name);
                names.extend(
                    stats
                        .histogram_names()
                        .into_iter()
                        .filter(|n| n.starts_with(&prefix)),
                );
            }
        }
    }
    let mut out = Vec::new();
    for name in names {
        let Some(h) = stats.histogram(name) else {
            continue;
        };
        let buckets = h
            .log_buckets()
            .into_iter()
            .map(|(usec, n)| (Frame::Integer(usec as i64), Frame::Integer(n as i64)))
            .collect();
        out.push((
            Frame::bulk(name),
            Frame::Map(vec![
                (Frame::bulk("calls"), Frame::Integer(h.total() as i64)),
                (Frame::bulk("histogram_usec"), Frame::Map(buckets)),
            ]),
        ));
    }
    Ok(Frame::Map(out))
}

fn latency_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(help::reply(
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    ))
}

/// MONITOR: from now on the connection receives a line for every command the server runs, and
/// may no longer touch the keyspace. A second MONITOR is ignored (no reply), as in Redis.
fn monitor(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Result<Outcome, Failure> {
    if ctx.session.block_mode != BlockMode::Block {
        return Err(Failure::text(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    if ctx.session.monitor {
        return Ok(Outcome::Silent);
    }
    ctx.session.monitor = true;
    ctx.server.start_monitor();
    Ok(Outcome::Reply(Frame::ok()))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    #[test]
    fn slowlog_subcommands_check_their_arguments() {
        let mut h = Harness::new();
        assert_eq!(
            h.error(&["SLOWLOG", "GET", "-2"]),
            "ERR count should be greater than or equal to -1"
        );
        assert_eq!(
            h.error(&["SLOWLOG", "GET", "x"]),
            "ERR count should be greater than or equal to -1"
        );
        assert_eq!(
            h.error(&["SLOWLOG", "GET", "1", "2"]),
            "ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP."
        );
        assert_eq!(
            h.error(&["SLOWLOG", "LEN", "x"]),
            "ERR wrong number of arguments for 'slowlog|len' command"
        );
        assert_eq!(
            h.error(&["SLOWLOG", "FOO"]),
            "ERR unknown subcommand 'FOO'. Try SLOWLOG HELP."
        );
        assert_eq!(h.run(&["SLOWLOG", "RESET"]), Frame::ok());
    }

    #[test]
    fn latency_answers_with_no_samples() {
        let mut h = Harness::new();
        assert_eq!(
            h.error(&["LATENCY", "GRAPH", "nothing-here"]),
            "ERR No samples available for event 'nothing-here'"
        );
        assert_eq!(
            h.run(&["LATENCY", "HISTORY", "nothing-here"]),
            Frame::Array(vec![])
        );
        assert_eq!(
            h.error(&["LATENCY", "LATEST", "x"]),
            "ERR wrong number of arguments for 'latency|latest' command"
        );
        assert_eq!(
            h.run(&["LATENCY", "RESET", "nothing-here"]),
            Frame::Integer(0)
        );
    }
}
