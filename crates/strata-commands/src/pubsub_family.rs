//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE,
//! PUBLISH, SPUBLISH and PUBSUB. Handlers parse, ask the server's broker through `ServerApi`,
//! and build Redis's acknowledgements (push frames: `>` in RESP3, arrays in RESP2). A command
//! that acknowledges several channels answers one frame per channel: all but the last go to
//! `Session::extra_replies`. Delivery of messages is the server's business.

use bytes::Bytes;

use crate::table::CommandSpec;
use crate::{ChannelKind, Ctx, Frame, Subscriptions};

macro_rules! row {
    ($($row:tt)*) => { crate::table::command_row!("pubsub"; $($row)*) };
}

/// The pub/sub family's rows.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    row!("subscribe", -2, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "2.0.0", "O(N) where N is the number of channels to subscribe to.", "Listen for messages published to the given channels", "channel [channel ...]", subscribe),
    row!("unsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "2.0.0", "O(N) where N is the number of clients already subscribed to a channel.", "Stop listening for messages posted to the given channels", "[channel [channel ...]]", unsubscribe),
    row!("psubscribe", -2, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "2.0.0", "O(N) where N is the number of patterns the client is already subscribed to.", "Listen for messages published to channels matching the given patterns", "pattern [pattern ...]", psubscribe),
    row!("punsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "2.0.0", "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).", "Stop listening for messages posted to channels matching the given patterns", "[pattern [pattern ...]]", punsubscribe),
    row!("ssubscribe", -2, ["pubsub", "noscript", "loading", "stale"], 1, -1, 1, ["pubsub", "slow"], "7.0.0", "O(N) where N is the number of shard channels to subscribe to.", "Listen for messages published to the given shard channels", "shardchannel [shardchannel ...]", ssubscribe),
    row!("sunsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], 1, -1, 1, ["pubsub", "slow"], "7.0.0", "O(N) where N is the number of clients already subscribed to a shard channel.", "Stop listening for messages posted to the given shard channels", "[shardchannel [shardchannel ...]]", sunsubscribe),
    row!("publish", 3, ["pubsub", "loading", "stale", "fast"], 0, 0, 0, ["pubsub", "fast"], "2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", "Post a message to a channel", "channel message", publish),
    row!("spublish", 3, ["pubsub", "loading", "stale", "fast"], 1, 1, 1, ["pubsub", "fast"], "7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel.", "Post a message to a shard channel", "shardchannel message", spublish),
    row!("pubsub", -2, [], 0, 0, 0, ["slow"], "2.8.0", "Depends on subcommand.", "A container for Pub/Sub commands", "", pubsub),
    row!("pubsub|channels", -2, ["pubsub", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "2.8.0", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)", "List active channels", "[pattern]", pubsub_channels),
    row!("pubsub|numsub", -2, ["pubsub", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "2.8.0", "O(N) for the NUMSUB subcommand, where N is the number of requested channels", "Get the count of subscribers for channels", "[channel [channel ...]]", pubsub_numsub),
    row!("pubsub|numpat", 2, ["pubsub", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "2.8.0", "O(1)", "Get the count of unique patterns pattern subscriptions", "", pubsub_numpat),
    row!("pubsub|shardchannels", -2, ["pubsub", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "7.0.0", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).", "List active shard channels", "[pattern]", pubsub_shardchannels),
    row!("pubsub|shardnumsub", -2, ["pubsub", "loading", "stale"], 0, 0, 0, ["pubsub", "slow"], "7.0.0", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", "Get the count of subscribers for shard channels", "[shardchannel [shardchannel ...]]", pubsub_shardnumsub),
    row!("pubsub|help", 2, ["loading", "stale"], 0, 0, 0, ["slow"], "6.2.0", "O(1)", "Show helpful text about the different subcommands", "", pubsub_help),
];

/// Whether a RESP2 client in the subscribed state may run `name` (Redis 7.0's list).
pub fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "ssubscribe"
            | "psubscribe"
            | "unsubscribe"
            | "sunsubscribe"
            | "punsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

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

/// Answers the acknowledgements: all but the last as extra replies.
fn replies(ctx: &mut Ctx<'_>, mut acks: Vec<Frame>) -> Frame {
    let last = acks.pop().unwrap_or(Frame::Null);
    ctx.session.extra_replies.extend(acks);
    last
}

fn subscribe_to(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: ChannelKind, name: &'static str) -> Frame {
    let mut acks = Vec::with_capacity(argv.len() - 1);
    for ch in &argv[1..] {
        let subs = ctx.server.subscribe(kind, ch);
        ctx.session.subscriptions = subs;
        acks.push(ack(name, Some(ch.clone()), count_of(kind, subs)));
    }
    replies(ctx, acks)
}

fn unsubscribe_from(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    kind: ChannelKind,
    name: &'static str,
) -> Frame {
    let targets: Vec<Bytes> = if argv.len() > 1 {
        argv[1..].to_vec()
    } else {
        ctx.server.subscribed(kind)
    };
    if targets.is_empty() {
        return ack(name, None, count_of(kind, ctx.session.subscriptions));
    }
    let mut acks = Vec::with_capacity(targets.len());
    for ch in targets {
        let subs = ctx.server.unsubscribe(kind, &ch);
        ctx.session.subscriptions = subs;
        acks.push(ack(name, Some(ch), count_of(kind, subs)));
    }
    replies(ctx, acks)
}

fn subscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    subscribe_to(ctx, argv, ChannelKind::Channel, "subscribe")
}

fn psubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    subscribe_to(ctx, argv, ChannelKind::Pattern, "psubscribe")
}

fn ssubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    subscribe_to(ctx, argv, ChannelKind::Shard, "ssubscribe")
}

fn unsubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    unsubscribe_from(ctx, argv, ChannelKind::Channel, "unsubscribe")
}

fn punsubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    unsubscribe_from(ctx, argv, ChannelKind::Pattern, "punsubscribe")
}

fn sunsubscribe(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    unsubscribe_from(ctx, argv, ChannelKind::Shard, "sunsubscribe")
}

/// Leaves every subscription (RESET, and a connection that closes).
pub fn unsubscribe_all(ctx: &mut Ctx<'_>) {
    for kind in [
        ChannelKind::Channel,
        ChannelKind::Pattern,
        ChannelKind::Shard,
    ] {
        for ch in ctx.server.subscribed(kind) {
            ctx.session.subscriptions = ctx.server.unsubscribe(kind, &ch);
        }
    }
}

fn publish(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    Frame::Integer(ctx.server.publish(ChannelKind::Channel, &argv[1], &argv[2]) as i64)
}

fn spublish(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    Frame::Integer(ctx.server.publish(ChannelKind::Shard, &argv[1], &argv[2]) as i64)
}

fn pubsub(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    crate::table::dispatch_sub(ctx, argv, "pubsub")
}

fn channels(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: ChannelKind, name: &str) -> Frame {
    if argv.len() > 3 {
        return crate::errors::unknown_subcommand_or_arity(name, &argv[1]);
    }
    let pattern = argv.get(2).map(|p| p.as_ref());
    Frame::bulk_array(ctx.server.pubsub_channels(kind, pattern))
}

fn pubsub_channels(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    channels(ctx, argv, ChannelKind::Channel, "pubsub")
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    channels(ctx, argv, ChannelKind::Shard, "pubsub")
}

fn numsub(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: ChannelKind) -> Frame {
    let mut out = Vec::with_capacity((argv.len() - 2) * 2);
    for ch in &argv[2..] {
        out.push(Frame::Bulk(ch.clone()));
        out.push(Frame::Integer(ctx.server.pubsub_numsub(kind, ch) as i64));
    }
    Frame::Array(out)
}

fn pubsub_numsub(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    numsub(ctx, argv, ChannelKind::Channel)
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    numsub(ctx, argv, ChannelKind::Shard)
}

fn pubsub_numpat(ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::Integer(ctx.server.pubsub_numpat() as i64)
}

fn pubsub_help(_ctx: &mut Ctx<'_>, _argv: &[Bytes]) -> Frame {
    Frame::Array(
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
    )
}
