//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE,
//! PUBLISH, SPUBLISH and PUBSUB. Handlers parse, ask the server's broker through `ServerApi`,
//! and build Redis's acknowledgements (push frames: `>` in RESP3, arrays in RESP2). A command
//! that acknowledges several channels answers one frame per channel, as
//! [`Outcome::Replies`]. Delivery of messages is the server's business.

use bytes::Bytes;

use crate::command::*;
use crate::cursor::{Args, Failure, Reply};
use crate::{ChannelKind, Ctx, Frame, Outcome, Subscriptions};

/// The pub/sub family's rows.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "subscribe",
        arity: Arity::AtLeast(2),
        flags: Flags(PUBSUB | NOSCRIPT | LOADING | STALE | SENTINEL | WHEN_SUBSCRIBED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(subscribe),
        docs: Docs {
            group: "pubsub",
            since: "2.0.0",
            complexity: "O(N) where N is the number of channels to subscribe to.",
            summary: "Listen for messages published to the given channels",
            syntax: "channel [channel ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "unsubscribe",
        arity: Arity::AtLeast(1),
        flags: Flags(PUBSUB | NOSCRIPT | LOADING | STALE | SENTINEL | WHEN_SUBSCRIBED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(unsubscribe),
        docs: Docs {
            group: "pubsub",
            since: "2.0.0",
            complexity: "O(N) where N is the number of clients already subscribed to a channel.",
            summary: "Stop listening for messages posted to the given channels",
            syntax: "[channel [channel ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "psubscribe",
        arity: Arity::AtLeast(2),
        flags: Flags(PUBSUB | NOSCRIPT | LOADING | STALE | SENTINEL | WHEN_SUBSCRIBED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(psubscribe),
        docs: Docs {
            group: "pubsub",
            since: "2.0.0",
            complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
            summary: "Listen for messages published to channels matching the given patterns",
            syntax: "pattern [pattern ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "punsubscribe",
        arity: Arity::AtLeast(1),
        flags: Flags(PUBSUB | NOSCRIPT | LOADING | STALE | SENTINEL | WHEN_SUBSCRIBED),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Outcome(punsubscribe),
        docs: Docs {
            group: "pubsub",
            since: "2.0.0",
            complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
            summary: "Stop listening for messages posted to channels matching the given patterns",
            syntax: "[pattern [pattern ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "ssubscribe",
        arity: Arity::AtLeast(2),
        flags: Flags(PUBSUB | NOSCRIPT | LOADING | STALE | WHEN_SUBSCRIBED),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(NOT_KEY, 1, -1, 1, 0),
        ],
        acl: Acl::NONE,
        handler: Handler::Outcome(ssubscribe),
        docs: Docs {
            group: "pubsub",
            since: "7.0.0",
            complexity: "O(N) where N is the number of shard channels to subscribe to.",
            summary: "Listen for messages published to the given shard channels",
            syntax: "shardchannel [shardchannel ...]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "sunsubscribe",
        arity: Arity::AtLeast(1),
        flags: Flags(PUBSUB | NOSCRIPT | LOADING | STALE | WHEN_SUBSCRIBED),
        keys: Keys::Range(Range::new(1, -1, 1)),
        key_specs: &[
            KeySpec::range(NOT_KEY, 1, -1, 1, 0),
        ],
        acl: Acl::NONE,
        handler: Handler::Outcome(sunsubscribe),
        docs: Docs {
            group: "pubsub",
            since: "7.0.0",
            complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
            summary: "Stop listening for messages posted to the given shard channels",
            syntax: "[shardchannel [shardchannel ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "publish",
        arity: Arity::Exactly(3),
        flags: Flags(PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE | SENTINEL),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(publish),
        docs: Docs {
            group: "pubsub",
            since: "2.0.0",
            complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
            summary: "Post a message to a channel",
            syntax: "channel message",
            tips: &[],
        },
    },
    CommandSpec {
        name: "spublish",
        arity: Arity::Exactly(3),
        flags: Flags(PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE),
        keys: Keys::Range(Range::new(1, 1, 1)),
        key_specs: &[
            KeySpec::range(NOT_KEY, 1, 0, 1, 0),
        ],
        acl: Acl::NONE,
        handler: Handler::Reply(spublish),
        docs: Docs {
            group: "pubsub",
            since: "7.0.0",
            complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
            summary: "Post a message to a shard channel",
            syntax: "shardchannel message",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pubsub",
        arity: Arity::AtLeast(2),
        flags: Flags::NONE,
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(pubsub),
        docs: Docs {
            group: "pubsub",
            since: "2.8.0",
            complexity: "Depends on subcommand.",
            summary: "A container for Pub/Sub commands",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pubsub|channels",
        arity: Arity::AtLeast(2),
        flags: Flags(PUBSUB | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(pubsub_channels),
        docs: Docs {
            group: "pubsub",
            since: "2.8.0",
            complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
            summary: "List active channels",
            syntax: "[pattern]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pubsub|numsub",
        arity: Arity::AtLeast(2),
        flags: Flags(PUBSUB | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(pubsub_numsub),
        docs: Docs {
            group: "pubsub",
            since: "2.8.0",
            complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
            summary: "Get the count of subscribers for channels",
            syntax: "[channel [channel ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pubsub|numpat",
        arity: Arity::Exactly(2),
        flags: Flags(PUBSUB | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(pubsub_numpat),
        docs: Docs {
            group: "pubsub",
            since: "2.8.0",
            complexity: "O(1)",
            summary: "Get the count of unique patterns pattern subscriptions",
            syntax: "",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pubsub|shardchannels",
        arity: Arity::AtLeast(2),
        flags: Flags(PUBSUB | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(pubsub_shardchannels),
        docs: Docs {
            group: "pubsub",
            since: "7.0.0",
            complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
            summary: "List active shard channels",
            syntax: "[pattern]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pubsub|shardnumsub",
        arity: Arity::AtLeast(2),
        flags: Flags(PUBSUB | LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(pubsub_shardnumsub),
        docs: Docs {
            group: "pubsub",
            since: "7.0.0",
            complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
            summary: "Get the count of subscribers for shard channels",
            syntax: "[shardchannel [shardchannel ...]]",
            tips: &[],
        },
    },
    CommandSpec {
        name: "pubsub|help",
        arity: Arity::Exactly(2),
        flags: Flags(LOADING | STALE),
        keys: Keys::None,
        key_specs: &[],
        acl: Acl::NONE,
        handler: Handler::Reply(pubsub_help),
        docs: Docs {
            group: "pubsub",
            since: "6.2.0",
            complexity: "O(1)",
            summary: "Show helpful text about the different subcommands",
            syntax: "",
            tips: &[],
        },
    },
];

/// The acknowledgement `[kind, name, count]`; `name` None is a nil (UNSUBSCRIBE of nothing).
fn ack(kind: &'static str, name: Option<Bytes>, count: usize) -> Frame {
    Frame::Push(vec![
        Frame::bulk(kind),
        name.map_or(Frame::Null, Frame::Bulk),
        Frame::Integer(count as i64),
    ])
}

/// The count an acknowledgement reports: channels and patterns together, shard channels alone.
fn count_of(kind: ChannelKind, subs: Subscriptions) -> usize {
    match kind {
        ChannelKind::Shard => subs.shard,
        _ => subs.channels + subs.patterns,
    }
}

/// Answers the acknowledgements, one reply each.
fn replies(mut acks: Vec<Frame>) -> Outcome {
    let last = acks.pop().unwrap_or(Frame::Null);
    Outcome::Replies(acks, last)
}

fn subscribe_to(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    kind: ChannelKind,
    name: &'static str,
) -> Result<Outcome, Failure> {
    let channels = Args::new(argv).rest();
    let mut acks = Vec::with_capacity(channels.len());
    for ch in channels {
        let subs = ctx.server.subscribe(kind, ch);
        ctx.session.subscriptions = subs;
        acks.push(ack(name, Some(ch.clone()), count_of(kind, subs)));
    }
    Ok(replies(acks))
}

fn unsubscribe_from(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    kind: ChannelKind,
    name: &'static str,
) -> Result<Outcome, Failure> {
    let mut a = Args::new(argv);
    let targets: Vec<Bytes> = if a.is_done() {
        ctx.server.subscribed(kind)
    } else {
        a.rest().to_vec()
    };
    if targets.is_empty() {
        let none = ack(name, None, count_of(kind, ctx.session.subscriptions));
        return Ok(Outcome::Reply(none));
    }
    let mut acks = Vec::with_capacity(targets.len());
    for ch in targets {
        let subs = ctx.server.unsubscribe(kind, &ch);
        ctx.session.subscriptions = subs;
        acks.push(ack(name, Some(ch), count_of(kind, subs)));
    }
    Ok(replies(acks))
}

fn subscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    subscribe_to(ctx, argv, ChannelKind::Channel, "subscribe")
}

fn psubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    subscribe_to(ctx, argv, ChannelKind::Pattern, "psubscribe")
}

fn ssubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    subscribe_to(ctx, argv, ChannelKind::Shard, "ssubscribe")
}

fn unsubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    unsubscribe_from(ctx, argv, ChannelKind::Channel, "unsubscribe")
}

fn punsubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    unsubscribe_from(ctx, argv, ChannelKind::Pattern, "punsubscribe")
}

fn sunsubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Outcome, Failure> {
    unsubscribe_from(ctx, argv, ChannelKind::Shard, "sunsubscribe")
}

/// PUBLISH and SPUBLISH: `channel message`, answered with how many received it.
fn publish_to(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: ChannelKind) -> Reply {
    let mut a = Args::new(argv);
    let (channel, message) = (a.value()?, a.value()?);
    a.finish()?;
    Ok(Frame::Integer(
        ctx.server.publish(kind, channel, message) as i64
    ))
}

fn publish(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    publish_to(ctx, argv, ChannelKind::Channel)
}

fn spublish(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    publish_to(ctx, argv, ChannelKind::Shard)
}

fn pubsub(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    Ok(dispatch_sub(ctx, argv, COMMANDS, "pubsub"))
}

/// PUBSUB CHANNELS and SHARDCHANNELS: `[pattern]`.
fn channels(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: ChannelKind) -> Reply {
    let mut a = Args::after_subcommand(argv);
    if a.remaining() > 1 {
        return Err(Failure(crate::errors::unknown_subcommand_or_arity(
            "pubsub", &argv[1],
        )));
    }
    let pattern = if a.is_done() {
        None
    } else {
        Some(&a.value()?[..])
    };
    Ok(Frame::bulk_array(ctx.server.pubsub_channels(kind, pattern)))
}

fn pubsub_channels(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    channels(ctx, argv, ChannelKind::Channel)
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    channels(ctx, argv, ChannelKind::Shard)
}

/// PUBSUB NUMSUB and SHARDNUMSUB: `[channel ...]`, each with its subscriber count.
fn numsub(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: ChannelKind) -> Reply {
    let channels = Args::after_subcommand(argv).rest();
    let mut out = Vec::with_capacity(channels.len() * 2);
    for ch in channels {
        out.push(Frame::Bulk(ch.clone()));
        out.push(Frame::Integer(ctx.server.pubsub_numsub(kind, ch) as i64));
    }
    Ok(Frame::Array(out))
}

fn pubsub_numsub(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    numsub(ctx, argv, ChannelKind::Channel)
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Reply {
    numsub(ctx, argv, ChannelKind::Shard)
}

fn pubsub_numpat(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Integer(ctx.server.pubsub_numpat() as i64))
}

fn pubsub_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Reply {
    Ok(Frame::Array(
        [
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP",
            "    Prints this help.",
        ]
        .into_iter()
        .map(Frame::simple)
        .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use crate::testing::Harness;
    use crate::Frame;

    fn ack(kind: &str, name: Option<&str>, count: i64) -> Frame {
        Frame::Push(vec![
            Frame::bulk(kind.to_string()),
            name.map_or(Frame::Null, |n| Frame::bulk(n.to_string())),
            Frame::Integer(count),
        ])
    }

    #[test]
    fn subscribing_acknowledges_each_channel() {
        let mut h = Harness::new();
        // The stand-in server keeps no subscriptions: the count stays 0, the last ack is the reply.
        assert_eq!(
            h.outcome(&["SUBSCRIBE", "a", "b"]),
            crate::Outcome::Replies(
                vec![ack("subscribe", Some("a"), 0)],
                ack("subscribe", Some("b"), 0)
            )
        );
        assert_eq!(
            h.run(&["PSUBSCRIBE", "p*"]),
            ack("psubscribe", Some("p*"), 0)
        );
        assert_eq!(h.run(&["SSUBSCRIBE", "s"]), ack("ssubscribe", Some("s"), 0));
        assert_eq!(h.run(&["UNSUBSCRIBE"]), ack("unsubscribe", None, 0));
        assert_eq!(
            h.run(&["PUNSUBSCRIBE", "q"]),
            ack("punsubscribe", Some("q"), 0)
        );
        assert_eq!(h.run(&["SUNSUBSCRIBE"]), ack("sunsubscribe", None, 0));
    }

    #[test]
    fn publish_and_pubsub_introspection_read_their_arguments() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["PUBLISH", "c", "m"]), Frame::Integer(0));
        assert_eq!(h.run(&["SPUBLISH", "c", "m"]), Frame::Integer(0));
        assert_eq!(
            h.error(&["PUBLISH", "c"]),
            "ERR wrong number of arguments for 'publish' command"
        );
        assert_eq!(h.run(&["PUBSUB", "CHANNELS"]), Frame::Array(vec![]));
        assert_eq!(
            h.run(&["PUBSUB", "SHARDCHANNELS", "x*"]),
            Frame::Array(vec![])
        );
        assert_eq!(
            h.error(&["PUBSUB", "channels", "a", "b"]),
            "ERR unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP."
        );
        assert_eq!(
            h.run(&["PUBSUB", "NUMSUB", "a", "b"]),
            Frame::Array(vec![
                Frame::bulk("a"),
                Frame::Integer(0),
                Frame::bulk("b"),
                Frame::Integer(0)
            ])
        );
        assert_eq!(h.run(&["PUBSUB", "NUMPAT"]), Frame::Integer(0));
        assert_eq!(
            h.error(&["PUBSUB", "NOPE"]),
            "ERR unknown subcommand 'NOPE'. Try PUBSUB HELP."
        );
    }
}
