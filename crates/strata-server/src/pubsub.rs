//! The pub/sub broker: who is subscribed to which channel, pattern and shard channel, and the
//! delivery of messages (PUBLISH, SPUBLISH, keyspace notifications) to their subscribers.
//!
//! Each connection has an outbox (an unbounded tokio channel of frames, created with its
//! registry entry) that its connection loop drains into the socket while it waits for input;
//! CLIENT TRACKING's invalidations travel the same way ([`Broker::push_invalidation`]).
//! The broker counts the bytes queued per client and applies the `pubsub` class of
//! `client-output-buffer-limit` as Redis does: a client over the hard limit, or over the soft
//! limit for longer than the soft seconds, is closed at once, so a slow subscriber never makes
//! the server's memory grow without bound. The maps are behind one `RwLock` (publishing only
//! reads them); an atomic count of subscriptions lets PUBLISH and keyspace events return at
//! once when nobody listens. Knows nothing of commands or storage; no socket I/O.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use strata::glob::glob_match;
use strata_commands::{ChannelKind, Subscriptions};
use strata_resp::Frame;
use tokio::sync::mpsc;

use crate::log::warning;
use crate::registry::{ClientEntry, Registry};

/// A frame queued for a connection.
#[derive(Debug)]
pub struct Pushed {
    /// The frame.
    pub frame: Frame,
    /// An invalidation a tracking client gets about its own keys (CLIENT TRACKING): it never
    /// goes ahead of the reply of a command that was running when it came, which may hold the
    /// value it invalidates (pub/sub messages that come during a command go before its reply,
    /// as in Redis).
    pub invalidation: bool,
}

/// A connection's queue of pushed messages, and the bytes in it.
pub struct Outbox {
    tx: mpsc::UnboundedSender<Pushed>,
    /// Bytes queued and not yet written (an estimate of their encoded size).
    queued: AtomicUsize,
    /// When the queue went over the soft limit (Unix ms; 0 = it is not over it).
    soft_since_ms: AtomicU64,
}

impl Outbox {
    /// A new outbox and the receiver its connection drains.
    pub fn new() -> (Outbox, mpsc::UnboundedReceiver<Pushed>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox = Outbox {
            tx,
            queued: AtomicUsize::new(0),
            soft_since_ms: AtomicU64::new(0),
        };
        (outbox, rx)
    }

    /// Bytes queued now (CLIENT LIST `omem`).
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Queues a frame for the connection to write (MONITOR lines), outside the pub/sub
    /// output-buffer limits.
    pub fn push(&self, frame: Frame) {
        let size = frame_size(&frame);
        self.queued.fetch_add(size, Ordering::Relaxed);
        let pushed = Pushed {
            frame,
            invalidation: false,
        };
        if self.tx.send(pushed).is_err() {
            self.queued.fetch_sub(size, Ordering::Relaxed);
        }
    }

    /// Called by the connection for the bytes of frames it has taken out.
    pub fn taken(&self, bytes: usize) {
        self.queued.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// The estimated encoded size of a pushed frame (what the output-buffer limit counts).
pub fn frame_size(f: &Frame) -> usize {
    match f {
        Frame::Push(items) | Frame::Array(items) => {
            16 + items.iter().map(frame_size).sum::<usize>()
        }
        Frame::Bulk(b) | Frame::Simple(b) => b.len() + 16,
        _ => 16,
    }
}

/// The `pubsub` class of `client-output-buffer-limit` (bytes, bytes, seconds; 0 = no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

type Subscribers = BTreeMap<u64, Arc<ClientEntry>>;

#[derive(Default)]
struct ClientSubs {
    channels: BTreeSet<Bytes>,
    patterns: BTreeSet<Bytes>,
    shard: BTreeSet<Bytes>,
}

impl ClientSubs {
    fn set(&mut self, kind: ChannelKind) -> &mut BTreeSet<Bytes> {
        match kind {
            ChannelKind::Channel => &mut self.channels,
            ChannelKind::Pattern => &mut self.patterns,
            ChannelKind::Shard => &mut self.shard,
        }
    }

    fn counts(&self) -> Subscriptions {
        Subscriptions {
            channels: self.channels.len(),
            patterns: self.patterns.len(),
            shard: self.shard.len(),
        }
    }
}

#[derive(Default)]
struct Inner {
    channels: HashMap<Bytes, Subscribers>,
    patterns: HashMap<Bytes, Subscribers>,
    shard: HashMap<Bytes, Subscribers>,
    clients: HashMap<u64, ClientSubs>,
}

impl Inner {
    fn map(&mut self, kind: ChannelKind) -> &mut HashMap<Bytes, Subscribers> {
        match kind {
            ChannelKind::Channel => &mut self.channels,
            ChannelKind::Pattern => &mut self.patterns,
            ChannelKind::Shard => &mut self.shard,
        }
    }

    fn map_ref(&self, kind: ChannelKind) -> &HashMap<Bytes, Subscribers> {
        match kind {
            ChannelKind::Channel => &self.channels,
            ChannelKind::Pattern => &self.patterns,
            ChannelKind::Shard => &self.shard,
        }
    }
}

/// The server-wide subscription tables.
#[derive(Default)]
pub struct Broker {
    inner: RwLock<Inner>,
    /// Subscriptions of all clients together (the lock-free "is anyone listening" check).
    total: AtomicUsize,
    hard: AtomicU64,
    soft: AtomicU64,
    soft_secs: AtomicU64,
}

impl Broker {
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read()
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write()
    }

    /// Sets the `pubsub` output-buffer limits (from the configuration).
    pub fn set_limits(&self, l: Limits) {
        self.hard.store(l.hard, Ordering::Relaxed);
        self.soft.store(l.soft, Ordering::Relaxed);
        self.soft_secs.store(l.soft_secs, Ordering::Relaxed);
    }

    /// Whether anybody is subscribed to anything.
    #[inline]
    pub fn active(&self) -> bool {
        self.total.load(Ordering::Relaxed) > 0
    }

    /// Subscribes `client` to `name`; returns its counts afterwards.
    pub fn subscribe(
        &self,
        client: &Arc<ClientEntry>,
        kind: ChannelKind,
        name: &Bytes,
    ) -> Subscriptions {
        let mut inner = self.write();
        let subs = inner.clients.entry(client.id).or_default();
        let added = subs.set(kind).insert(name.clone());
        let counts = subs.counts();
        if added {
            inner
                .map(kind)
                .entry(name.clone())
                .or_default()
                .insert(client.id, client.clone());
            self.total.fetch_add(1, Ordering::Relaxed);
        }
        client.set_subscriptions(counts);
        counts
    }

    /// Unsubscribes `client` from `name`; returns its counts afterwards.
    pub fn unsubscribe(
        &self,
        client: &ClientEntry,
        kind: ChannelKind,
        name: &Bytes,
    ) -> Subscriptions {
        let mut inner = self.write();
        let Some(subs) = inner.clients.get_mut(&client.id) else {
            return Subscriptions::default();
        };
        let removed = subs.set(kind).remove(name);
        let counts = subs.counts();
        if counts.total() == 0 {
            inner.clients.remove(&client.id);
        }
        if removed {
            let map = inner.map(kind);
            if let Some(s) = map.get_mut(name) {
                s.remove(&client.id);
                if s.is_empty() {
                    map.remove(name);
                }
            }
            self.total.fetch_sub(1, Ordering::Relaxed);
        }
        client.set_subscriptions(counts);
        counts
    }

    /// What `client` is subscribed to of `kind`.
    pub fn subscribed(&self, client: u64, kind: ChannelKind) -> Vec<Bytes> {
        let mut inner = self.write();
        match inner.clients.get_mut(&client) {
            Some(s) => s.set(kind).iter().cloned().collect(),
            None => Vec::new(),
        }
    }

    /// Drops every subscription of a client that went away.
    pub fn remove_client(&self, client: u64) {
        if !self.active() {
            return;
        }
        let mut inner = self.write();
        let Some(subs) = inner.clients.remove(&client) else {
            return;
        };
        for (kind, set) in [
            (ChannelKind::Channel, subs.channels),
            (ChannelKind::Pattern, subs.patterns),
            (ChannelKind::Shard, subs.shard),
        ] {
            let map = inner.map(kind);
            for name in set {
                if let Some(s) = map.get_mut(&name) {
                    s.remove(&client);
                    if s.is_empty() {
                        map.remove(&name);
                    }
                }
                self.total.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// PUBLISH / SPUBLISH: delivers `message` on `channel` to its subscribers (and for
    /// channels, to the subscribers of matching patterns); returns how many received it.
    /// Subscribers that overrun their output-buffer limit are closed.
    pub fn publish(
        &self,
        registry: &Registry,
        kind: ChannelKind,
        channel: &Bytes,
        message: &Bytes,
        now_ms: u64,
    ) -> usize {
        if !self.active() {
            return 0;
        }
        let limits = Limits {
            hard: self.hard.load(Ordering::Relaxed),
            soft: self.soft.load(Ordering::Relaxed),
            soft_secs: self.soft_secs.load(Ordering::Relaxed),
        };
        let mut over = Vec::new();
        let mut receivers = 0;
        {
            let inner = self.read();
            let (tag, map) = match kind {
                ChannelKind::Shard => ("smessage", &inner.shard),
                _ => ("message", &inner.channels),
            };
            if let Some(subs) = map.get(channel) {
                let frame = Frame::Push(vec![
                    Frame::bulk(tag),
                    Frame::Bulk(channel.clone()),
                    Frame::Bulk(message.clone()),
                ]);
                for c in subs.values() {
                    receivers += 1;
                    deliver(c, message_of(frame.clone()), limits, now_ms, &mut over);
                }
            }
            if kind == ChannelKind::Channel {
                for (pattern, subs) in &inner.patterns {
                    if !glob_match(pattern, channel, false) {
                        continue;
                    }
                    let frame = Frame::Push(vec![
                        Frame::bulk("pmessage"),
                        Frame::Bulk(pattern.clone()),
                        Frame::Bulk(channel.clone()),
                        Frame::Bulk(message.clone()),
                    ]);
                    for c in subs.values() {
                        receivers += 1;
                        deliver(c, message_of(frame.clone()), limits, now_ms, &mut over);
                    }
                }
            }
        }
        close_over_limit(registry, over, now_ms);
        receivers
    }

    /// Queues an invalidation (CLIENT TRACKING) for `client`, under the output-buffer limits of
    /// its class: `pubsub` when it is subscribed to anything, else `normal` (given). A client
    /// over them is closed, so one that never reads cannot make the server's memory grow.
    /// `after_reply`: it must not go ahead of the reply of a command the client is running.
    #[allow(clippy::too_many_arguments)]
    pub fn push_invalidation(
        &self,
        registry: &Registry,
        client: &Arc<ClientEntry>,
        frame: Frame,
        normal: Limits,
        now_ms: u64,
        after_reply: bool,
    ) {
        let limits = if client.is_pubsub() {
            Limits {
                hard: self.hard.load(Ordering::Relaxed),
                soft: self.soft.load(Ordering::Relaxed),
                soft_secs: self.soft_secs.load(Ordering::Relaxed),
            }
        } else {
            normal
        };
        let mut over = Vec::new();
        let pushed = Pushed {
            frame,
            invalidation: after_reply,
        };
        deliver(client, pushed, limits, now_ms, &mut over);
        close_over_limit(registry, over, now_ms);
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS.
    pub fn channels(&self, kind: ChannelKind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let inner = self.read();
        let mut out: Vec<Bytes> = inner
            .map_ref(kind)
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect();
        out.sort();
        out
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB for one channel.
    pub fn numsub(&self, kind: ChannelKind, channel: &[u8]) -> usize {
        self.read()
            .map_ref(kind)
            .get(channel)
            .map_or(0, |s| s.len())
    }

    /// PUBSUB NUMPAT; INFO `pubsub_patterns`.
    pub fn numpat(&self) -> usize {
        self.read().patterns.len()
    }

    /// INFO `pubsub_channels` (and `pubsubshard_channels` for `Shard`).
    pub fn numchannels(&self, kind: ChannelKind) -> usize {
        self.read().map_ref(kind).len()
    }
}

/// A pub/sub message to queue.
fn message_of(frame: Frame) -> Pushed {
    Pushed {
        frame,
        invalidation: false,
    }
}

/// Closes the clients found over their output-buffer limits, and logs each.
fn close_over_limit(registry: &Registry, over: Vec<Arc<ClientEntry>>, now_ms: u64) {
    for c in over {
        if registry.kill_entry(&c) {
            warning!(
                "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
                c.line(now_ms)
            );
        }
    }
}

/// Queues `pushed` for `client` and checks its output-buffer limits; a client over them is
/// added to `over`.
fn deliver(
    client: &Arc<ClientEntry>,
    pushed: Pushed,
    limits: Limits,
    now_ms: u64,
    over: &mut Vec<Arc<ClientEntry>>,
) {
    if client.killed.load(Ordering::Relaxed) {
        return;
    }
    let outbox = &client.outbox;
    let size = frame_size(&pushed.frame);
    let used = (outbox.queued.fetch_add(size, Ordering::Relaxed) + size) as u64;
    if outbox.tx.send(pushed).is_err() {
        outbox.queued.fetch_sub(size, Ordering::Relaxed);
        return;
    }
    let hard = limits.hard > 0 && used >= limits.hard;
    let mut soft = false;
    if limits.soft > 0 && used >= limits.soft {
        let since = outbox.soft_since_ms.load(Ordering::Relaxed);
        if since == 0 {
            outbox.soft_since_ms.store(now_ms.max(1), Ordering::Relaxed);
        } else if now_ms.saturating_sub(since) > limits.soft_secs * 1000 {
            soft = true;
        }
    } else {
        outbox.soft_since_ms.store(0, Ordering::Relaxed);
    }
    if hard || soft {
        over.push(client.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(r: &Registry, port: u16) -> Arc<ClientEntry> {
        let peer = format!("127.0.0.1:{port}").parse().expect("address");
        let local = "127.0.0.1:6379".parse().expect("address");
        r.register(peer, local, -1, 0, 100).expect("registered")
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn publish_reaches_channel_and_pattern_subscribers() {
        let (reg, broker) = (Registry::default(), Broker::default());
        let a = client(&reg, 1);
        let mut inbox = a.inbox.lock().take().expect("inbox");
        assert_eq!(
            broker.publish(&reg, ChannelKind::Channel, &b("x"), &b("m"), 0),
            0
        );
        broker.subscribe(&a, ChannelKind::Channel, &b("news"));
        let counts = broker.subscribe(&a, ChannelKind::Pattern, &b("n*"));
        assert_eq!(counts.channels + counts.patterns, 2);
        assert_eq!(
            broker.publish(&reg, ChannelKind::Channel, &b("news"), &b("hi"), 0),
            2
        );
        assert!(
            matches!(inbox.try_recv(), Ok(Pushed { frame: Frame::Push(v), .. }) if v.len() == 3)
        );
        assert!(
            matches!(inbox.try_recv(), Ok(Pushed { frame: Frame::Push(v), .. }) if v.len() == 4)
        );
        assert!(a.outbox.queued() > 0);
        // Shard channels are a namespace of their own.
        assert_eq!(
            broker.publish(&reg, ChannelKind::Shard, &b("news"), &b("hi"), 0),
            0
        );
    }

    #[test]
    fn unsubscribing_and_leaving_clean_up_the_tables() {
        let (reg, broker) = (Registry::default(), Broker::default());
        let a = client(&reg, 1);
        let c = client(&reg, 2);
        broker.subscribe(&a, ChannelKind::Channel, &b("x"));
        broker.subscribe(&c, ChannelKind::Channel, &b("x"));
        broker.subscribe(&c, ChannelKind::Shard, &b("s"));
        assert_eq!(broker.numsub(ChannelKind::Channel, b"x"), 2);
        let left = broker.unsubscribe(&a, ChannelKind::Channel, &b("x"));
        assert_eq!(left.total(), 0);
        assert!(!a.is_pubsub());
        broker.remove_client(c.id);
        assert_eq!(broker.numsub(ChannelKind::Channel, b"x"), 0);
        assert!(broker.channels(ChannelKind::Shard, None).is_empty());
        assert!(!broker.active());
    }

    #[test]
    fn a_subscriber_over_the_hard_limit_is_closed() {
        let (reg, broker) = (Registry::default(), Broker::default());
        broker.set_limits(Limits {
            hard: 1000,
            soft: 0,
            soft_secs: 0,
        });
        let a = client(&reg, 1);
        broker.subscribe(&a, ChannelKind::Channel, &b("x"));
        let big = Bytes::from(vec![b'z'; 600]);
        broker.publish(&reg, ChannelKind::Channel, &b("x"), &big, 0);
        assert!(!a.killed.load(Ordering::Relaxed));
        broker.publish(&reg, ChannelKind::Channel, &b("x"), &big, 0);
        assert!(a.killed.load(Ordering::Relaxed));
        assert_eq!(reg.len(), 0);
        // A closed subscriber is not queued to any more.
        let before = a.outbox.queued();
        broker.publish(&reg, ChannelKind::Channel, &b("x"), &big, 0);
        assert_eq!(a.outbox.queued(), before);
    }

    #[test]
    fn the_soft_limit_needs_its_seconds() {
        let (reg, broker) = (Registry::default(), Broker::default());
        broker.set_limits(Limits {
            hard: 0,
            soft: 100,
            soft_secs: 2,
        });
        let a = client(&reg, 1);
        broker.subscribe(&a, ChannelKind::Channel, &b("x"));
        let m = Bytes::from(vec![b'z'; 200]);
        broker.publish(&reg, ChannelKind::Channel, &b("x"), &m, 10_000);
        broker.publish(&reg, ChannelKind::Channel, &b("x"), &m, 11_000);
        assert!(!a.killed.load(Ordering::Relaxed));
        broker.publish(&reg, ChannelKind::Channel, &b("x"), &m, 12_001);
        assert!(a.killed.load(Ordering::Relaxed));
    }
}
